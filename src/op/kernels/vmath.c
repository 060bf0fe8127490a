/*
 * The scalar path of vmath.h (the portable reference) and the run-time
 * choice among the paths.
 *
 * The scalar vocabulary is plain C on float and int32 bits: fmaf for the
 * fused steps (one instruction where the CPU has FMA; the C library's
 * exact emulation elsewhere, slower but the same bits), integer lane
 * arithmetic on uint32_t so that wrap-around is defined, and memcpy for
 * reinterpretation. Contraction of a*b+c into a fused step is switched
 * off where the compiler would otherwise do it, so that the only fused
 * steps are the written ones and the bits match the vector paths.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "op/kernels/vmath.h"

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

#if defined(__GNUC__)
#define VM_INLINE __attribute__((always_inline)) inline
#else
#define VM_INLINE inline
#endif

#define VM_W 1
#define VM_NAME "scalar"

typedef float vf;
typedef int32_t vi;
typedef int vm;

static inline vf vf_set(float f) {
    return f;
}
static inline vi vi_set(int32_t i) {
    return i;
}
static inline vf vf_load(const float *p) {
    return *p;
}
static inline void vf_store(float *p, vf v) {
    *p = v;
}
static inline vf vf_add(vf a, vf b) {
    return a + b;
}
static inline vf vf_sub(vf a, vf b) {
    return a - b;
}
static inline vf vf_mul(vf a, vf b) {
    return a * b;
}
static inline vf vf_div(vf a, vf b) {
    return a / b;
}
static inline vf vf_fma(vf a, vf b, vf c) {
    return fmaf(a, b, c);
}
static inline vf vf_fnma(vf a, vf b, vf c) {
    return fmaf(-a, b, c);
}
static inline vf vf_max(vf a, vf b) {
    return a > b ? a : b;
}
static inline vf vf_min(vf a, vf b) {
    return a < b ? a : b;
}
static inline vi vf_bits(vf a) {
    uint32_t u;
    memcpy(&u, &a, sizeof u);
    return (int32_t)u;
}
static inline vf vi_as_f(vi a) {
    uint32_t u = (uint32_t)a;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
static inline vf vf_abs(vf a) {
    return vi_as_f((int32_t)((uint32_t)vf_bits(a) & 0x7fffffffu));
}
static inline vf vf_neg(vf a) {
    return vi_as_f((int32_t)((uint32_t)vf_bits(a) ^ 0x80000000u));
}
static inline vf vf_copysign(vf mag, vf sign) {
    return vi_as_f((int32_t)(((uint32_t)vf_bits(mag) & 0x7fffffffu) |
                             ((uint32_t)vf_bits(sign) & 0x80000000u)));
}
static inline vm vf_lt(vf a, vf b) {
    return isless(a, b);
}
static inline vm vf_gt(vf a, vf b) {
    return isgreater(a, b);
}
static inline vm vf_ge(vf a, vf b) {
    return isgreaterequal(a, b);
}
static inline vm vf_eq(vf a, vf b) {
    return a == b;
}
static inline vf vf_sel(vm m, vf a, vf b) {
    return m ? a : b;
}
static inline vi vi_add(vi a, vi b) {
    return (int32_t)((uint32_t)a + (uint32_t)b);
}
static inline vi vi_sub(vi a, vi b) {
    return (int32_t)((uint32_t)a - (uint32_t)b);
}
static inline vi vi_max(vi a, vi b) {
    return a > b ? a : b;
}
/* Arithmetic shift right by one, without relying on how >> treats sign. */
static inline vi vi_sra1(vi a) {
    uint32_t u = ((uint32_t)a >> 1) | ((uint32_t)a & 0x80000000u);
    return (int32_t)u;
}
static inline vi vi_sll23(vi a) {
    return (int32_t)((uint32_t)a << 23);
}
static inline vf vf_lookup32(const float *t, vi i) {
    return t[(uint32_t)i & 31u];
}
static inline int vm_any(vm m) {
    return m;
}
static inline vm vf_signbit(vf a) {
    return ((uint32_t)vf_bits(a) >> 31) != 0;
}
static inline vf vf_fms(vf a, vf b, vf c) {
    return fmaf(a, b, -c);
}
static inline vf vf_fnms(vf a, vf b, vf c) {
    return fmaf(-a, b, -c);
}

#include "op/kernels/vmath_body.h"

/* ------------------------------------------------------------ choice */

const sw_vmath_impl *sw_vmath_impl_get(sw_vmath_isa isa) {
    switch (isa) {
    case SW_VMATH_SCALAR:
        return &vm_impl;
    case SW_VMATH_AVX2:
        return sw_vmath_impl_avx2();
    case SW_VMATH_AVX512:
        return sw_vmath_impl_avx512();
    default:
        return NULL;
    }
}

const sw_vmath_impl *sw_vmath_active(void) {
    const sw_vmath_impl *p = sw_vmath_impl_avx512();
    if (!p)
        p = sw_vmath_impl_avx2();
    return p ? p : &vm_impl;
}

const char *sw_vmath_name(sw_vmath_fn fn) {
    static const char *const names[SW_VMATH_COUNT] = {
        "exp", "tanh", "sigmoid", "gelu", "silu", "softplus", "elu"};
    return (unsigned)fn < SW_VMATH_COUNT ? names[fn] : "?";
}

float sw_vmath_f32(sw_vmath_fn fn, float x) {
    switch (fn) {
    case SW_VMATH_EXP:
        return vm_exp(x);
    case SW_VMATH_TANH:
        return vm_tanh(x);
    case SW_VMATH_SIGMOID:
        return vm_sigmoid(x);
    case SW_VMATH_GELU:
        return vm_gelu(x);
    case SW_VMATH_SILU:
        return vm_silu(x);
    case SW_VMATH_SOFTPLUS:
        return vm_softplus(x);
    case SW_VMATH_ELU:
        return vm_elu(x);
    default:
        return NAN;
    }
}

float sw_vmath_grad1_f32(sw_vmath_fn fn, float g, float x) {
    switch (fn) {
    case SW_VMATH_EXP:
        return vm_exp_grad(g, x);
    case SW_VMATH_TANH:
        return vm_tanh_grad(g, x);
    case SW_VMATH_SIGMOID:
        return vm_sigmoid_grad(g, x);
    case SW_VMATH_GELU:
        return vm_gelu_grad(g, x);
    case SW_VMATH_SILU:
        return vm_silu_grad(g, x);
    case SW_VMATH_SOFTPLUS:
        return vm_softplus_grad(g, x);
    case SW_VMATH_ELU:
        return vm_elu_grad(g, x);
    default:
        return NAN;
    }
}

/* ------------------------------------------------------- array forms */

void sw_vexp_f32(const float *x, float *o, int64_t n) {
    sw_vmath_active()->fwd[SW_VMATH_EXP](x, o, n);
}
void sw_vtanh_f32(const float *x, float *o, int64_t n) {
    sw_vmath_active()->fwd[SW_VMATH_TANH](x, o, n);
}
void sw_vsigmoid_f32(const float *x, float *o, int64_t n) {
    sw_vmath_active()->fwd[SW_VMATH_SIGMOID](x, o, n);
}
void sw_vgelu_f32(const float *x, float *o, int64_t n) {
    sw_vmath_active()->fwd[SW_VMATH_GELU](x, o, n);
}
void sw_vsilu_f32(const float *x, float *o, int64_t n) {
    sw_vmath_active()->fwd[SW_VMATH_SILU](x, o, n);
}
void sw_vsoftplus_f32(const float *x, float *o, int64_t n) {
    sw_vmath_active()->fwd[SW_VMATH_SOFTPLUS](x, o, n);
}
void sw_velu_f32(const float *x, float *o, int64_t n) {
    sw_vmath_active()->fwd[SW_VMATH_ELU](x, o, n);
}

void sw_vexp_grad_f32(const float *g, const float *x, float *o, int64_t n) {
    sw_vmath_active()->grad[SW_VMATH_EXP](g, x, o, n);
}
void sw_vtanh_grad_f32(const float *g, const float *x, float *o, int64_t n) {
    sw_vmath_active()->grad[SW_VMATH_TANH](g, x, o, n);
}
void sw_vsigmoid_grad_f32(const float *g, const float *x, float *o, int64_t n) {
    sw_vmath_active()->grad[SW_VMATH_SIGMOID](g, x, o, n);
}
void sw_vgelu_grad_f32(const float *g, const float *x, float *o, int64_t n) {
    sw_vmath_active()->grad[SW_VMATH_GELU](g, x, o, n);
}
void sw_vsilu_grad_f32(const float *g, const float *x, float *o, int64_t n) {
    sw_vmath_active()->grad[SW_VMATH_SILU](g, x, o, n);
}
void sw_vsoftplus_grad_f32(const float *g, const float *x, float *o,
                           int64_t n) {
    sw_vmath_active()->grad[SW_VMATH_SOFTPLUS](g, x, o, n);
}
void sw_velu_grad_f32(const float *g, const float *x, float *o, int64_t n) {
    sw_vmath_active()->grad[SW_VMATH_ELU](g, x, o, n);
}
