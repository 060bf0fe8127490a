/*
 * Vectorised transcendental activations over contiguous float32 arrays:
 * out[i] = f(in[i]) for i < n, and the backward forms out[i] = g[i] *
 * f'(in[i]). Internal to the library; the activation kernels call them on
 * their unit-stride inner runs.
 *
 * Three paths compute every function: a portable scalar one (vmath.c, the
 * reference, and the only one in a -Dreference_kernels build or off
 * x86-64), one for AVX2 with FMA (vmath_avx2.c) and one for AVX-512F
 * (vmath_avx512.c). One algorithm, written once in vmath_body.h, is
 * compiled for each path, using only operations that IEEE 754 rounds
 * exactly the same way on every path (add, sub, mul, div, fused
 * multiply-add, compares, selects, integer bit operations): the three
 * paths give the same bits for every input (any NaN for a NaN result), and so
 * do contiguous and strided layouts and the reference build. The path is chosen
 * at run time (cpuid), once per call.
 *
 * Accuracy: the largest error over all 2**32 float32 inputs, in ULP of
 * the result (|y - f(x)| / ulp, with f(x) computed in double and ulp the
 * spacing of floats in the binade of |f(x)|, 2**-149 for subnormal
 * results), measured by tests/c/test_vmath_ulp.c on every path
 * (docs/VMATH.md has the table); normal results, then subnormal ones:
 *
 *   exp      0.61  0.76  overflow to +inf above 88.72284, gradual
 *                        underflow to +0 below -103.97
 *   tanh     0.71  0     odd (-0.0 stays -0.0), exactly +-1 beyond 9.01:
 *                        one of 32 polynomials of degree 5, no
 *                        exponential and no division
 *   sigmoid  2.41  0.76  1/(1+e^-x) for x >= 0, e^x/(1+e^x) otherwise,
 *                        with one division
 *   gelu     1.43  1.08  0.5*x*(1+erf(x/sqrt 2)), evaluated as x - K
 *                        (x >= 0) or -K (x < 0) with K = |x| *
 *                        erfc(|x|/sqrt 2)/2, so that it keeps its
 *                        relative accuracy where 1+erf cancels: K from
 *                        one of 32 polynomials for |x| <= 8, below -8
 *                        from e^(-x^2/2) times a polynomial in 1/x^2
 *                        (vectors without such lanes skip that part);
 *                        gelu(-0.0) = -0.0, gelu(-inf) = -0.0
 *   silu     3.40  1.31  x*sigmoid(x) with one division, silu(-0.0) =
 *                        -0.0, silu(-inf) = -0.0
 *   softplus 0.85  0.76  log1p(exp(-|x|)) + max(x, 0)
 *   elu      0.82  0     x if x > 0 else expm1(x); elu(-0.0) = -0.0
 *
 * Subnormal results round twice (at full precision, then to the
 * subnormal), hence their larger bounds; those of tanh and elu are their
 * subnormal inputs, returned exactly.
 *
 * Every function propagates NaN (a quiet NaN out for any NaN in; its
 * sign and payload are unspecified and may differ between paths), maps
 * the infinities to their limits, and takes subnormal inputs without
 * flushing them. The bounds above are what the exhaustive test enforces;
 * the fast test in `meson test` checks them on a sample.
 *
 * The backward forms compute f(x) with the same code as the forward and
 * then the same float expression as the activation kernels' per-element
 * gradient (exp: g*y; sigmoid: g*s*(1-s); tanh: g*(1-t*t); silu:
 * g*(s + x*s*(1-s)); softplus: g*s; elu: x > 0 ? g : g*e^x), so a
 * backward from x gives the same bits as one from the saved y. gelu's is
 * g*(Phi(x) + x*phi(x)) with Phi(x) + x*phi(x) evaluated as gelu is (1 - D
 * or D, D = Phi(-|x|) - |x| phi(x) from tables of its own), within
 * 2.25 ULP of max(|Phi(x) + x*phi(x)|, Phi(x)) over all 2**32 inputs
 * (1.48 for subnormal results): that derivative crosses zero at
 * x = -0.7518, where only that absolute accuracy is possible. tanh's
 * 1 - t*t cancels where |t| is near 1, so its error is in ULP of
 * max(1 - tanh(x)^2, tanh(x)^2), which is at least 1/2: within 1.51 over
 * all 2**32 inputs, an absolute error of 1.51 x 2**-24, and 1.51 ULP of
 * the result itself where |x| < 0.88.
 *
 * In place (out == in, or out == g or x for the backward forms) is
 * allowed; other overlaps are not. n may be 0. The functions touch no
 * global state, are thread-safe and never fail.
 */
#ifndef SW_OP_KERNELS_VMATH_H
#define SW_OP_KERNELS_VMATH_H

#include <stdint.h>

/* The functions, in the order of the tables below. */
typedef enum sw_vmath_fn {
    SW_VMATH_EXP = 0,
    SW_VMATH_TANH = 1,
    SW_VMATH_SIGMOID = 2,
    SW_VMATH_GELU = 3,
    SW_VMATH_SILU = 4,
    SW_VMATH_SOFTPLUS = 5,
    SW_VMATH_ELU = 6,
    SW_VMATH_COUNT = 7
} sw_vmath_fn;

/* The code paths; SCALAR is always available. */
typedef enum sw_vmath_isa {
    SW_VMATH_SCALAR = 0,
    SW_VMATH_AVX2 = 1,
    SW_VMATH_AVX512 = 2,
    SW_VMATH_ISA_COUNT = 3
} sw_vmath_isa;

typedef void (*sw_vmath_unary)(const float *x, float *o, int64_t n);
typedef void (*sw_vmath_binary)(const float *g, const float *x, float *o,
                                int64_t n);

/* One path's functions: fwd[fn](x, o, n) and grad[fn](g, x, o, n). */
typedef struct sw_vmath_impl {
    const char *name; /* "scalar", "avx2-fma" or "avx512" */
    sw_vmath_unary fwd[SW_VMATH_COUNT];
    sw_vmath_binary grad[SW_VMATH_COUNT];
} sw_vmath_impl;

/*
 * A path's table, or NULL when this build or this CPU does not have it
 * (the AVX paths exist only in x86-64 builds without reference kernels,
 * and run only where cpuid reports the ISA). Static storage; for tests
 * that compare the paths.
 */
const sw_vmath_impl *sw_vmath_impl_get(sw_vmath_isa isa);

/* The path the array functions below use: the widest one available. */
const sw_vmath_impl *sw_vmath_active(void);

/* The function's name ("exp", "tanh", ...), or "?" out of range. */
const char *sw_vmath_name(sw_vmath_fn fn);

/* One element through the scalar path: the same value as every path. */
float sw_vmath_f32(sw_vmath_fn fn, float x);
/* g * f'(x) for one element, the same value as every path's grad. */
float sw_vmath_grad1_f32(sw_vmath_fn fn, float g, float x);

/* The array forms, through sw_vmath_active(). */
void sw_vexp_f32(const float *x, float *o, int64_t n);
void sw_vtanh_f32(const float *x, float *o, int64_t n);
void sw_vsigmoid_f32(const float *x, float *o, int64_t n);
void sw_vgelu_f32(const float *x, float *o, int64_t n);
void sw_vsilu_f32(const float *x, float *o, int64_t n);
void sw_vsoftplus_f32(const float *x, float *o, int64_t n);
void sw_velu_f32(const float *x, float *o, int64_t n);

void sw_vexp_grad_f32(const float *g, const float *x, float *o, int64_t n);
void sw_vtanh_grad_f32(const float *g, const float *x, float *o, int64_t n);
void sw_vsigmoid_grad_f32(const float *g, const float *x, float *o, int64_t n);
void sw_vgelu_grad_f32(const float *g, const float *x, float *o, int64_t n);
void sw_vsilu_grad_f32(const float *g, const float *x, float *o, int64_t n);
void sw_vsoftplus_grad_f32(const float *g, const float *x, float *o, int64_t n);
void sw_velu_grad_f32(const float *g, const float *x, float *o, int64_t n);

/* Path tables of the per-ISA files; NULL where a file is compiled empty. */
const sw_vmath_impl *sw_vmath_impl_avx2(void);
const sw_vmath_impl *sw_vmath_impl_avx512(void);

#endif /* SW_OP_KERNELS_VMATH_H */
