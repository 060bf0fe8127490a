/*
 * Activations and their backward forms (python-api.md §12.4 and §4.6),
 * Float32 in float; and the exact Int32 relu.
 *
 * As in elementwise.c, one function per direction holds the switch on the
 * op (act_f32, act_grad_f32) and the run helpers are forced inline into
 * one case per op, so every loop body is branch-free on the op.
 *
 * The transcendental activations (exp, sigmoid, tanh, gelu, silu,
 * softplus, elu) and their gradients from x come from vmath.h, whose
 * paths (scalar, AVX2, AVX-512, chosen at run time) give the same bits:
 * unit-stride runs call its array functions directly (through a buffer
 * when the output is streamed), strided runs gather up to SW_KSTAGE
 * elements into a buffer and scatter the results, and the reference
 * build calls its scalar form per element. So every layout and every
 * build computes the same values. Gradients from a saved y (exp, sigmoid,
 * tanh) are plain arithmetic on y, vectorised by the compiler.
 *
 * Vectoriser report (gcc 12, x86-64 baseline, -O2, -fopt-info-vec): the
 * contiguous chunk loops of RELU forward and backward and of the Int32
 * relu are "loop vectorized using 16 byte vectors". LEAKY_RELU stays
 * scalar: its select follows an ordered compare that may trap on NaN, and
 * gcc will not if-convert that under the default -ftrapping-math.
 */
#include <math.h>

#include "op/kernels/kcommon.h"
#include "op/kernels/vmath.h"
#include "strideweave/registry.h"

/*
 * The expressions of the gradients from y are written as vmath's
 * backward forms compute them; no contraction into fused steps, so both
 * give the same bits.
 */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

/* A kernel's name in messages: its operation's, from the registry. */
static const char *act_name(sw_kact op) {
    static const sw_op_id ids[SW_KACT_COUNT] = {
        [SW_KACT_EXP] = SW_OP_EXP,
        [SW_KACT_RELU] = SW_OP_RELU,
        [SW_KACT_SIGMOID] = SW_OP_SIGMOID,
        [SW_KACT_TANH] = SW_OP_TANH,
        [SW_KACT_GELU] = SW_OP_GELU,
        [SW_KACT_SILU] = SW_OP_SILU,
        [SW_KACT_SOFTPLUS] = SW_OP_SOFTPLUS,
        [SW_KACT_ELU] = SW_OP_ELU,
        [SW_KACT_LEAKY_RELU] = SW_OP_LEAKY_RELU};
    return (unsigned)op < SW_KACT_COUNT ? sw_op_info_get(ids[op])->name
                                        : "activation";
}

/* The vmath function of an op, or -1 for the piecewise-linear ones. */
static inline int act_vfn(sw_kact op) {
    switch (op) {
    case SW_KACT_EXP:
        return SW_VMATH_EXP;
    case SW_KACT_SIGMOID:
        return SW_VMATH_SIGMOID;
    case SW_KACT_TANH:
        return SW_VMATH_TANH;
    case SW_KACT_GELU:
        return SW_VMATH_GELU;
    case SW_KACT_SILU:
        return SW_VMATH_SILU;
    case SW_KACT_SOFTPLUS:
        return SW_VMATH_SOFTPLUS;
    case SW_KACT_ELU:
        return SW_VMATH_ELU;
    default:
        return -1;
    }
}

/* The one switch on the op for forward values. */
static inline float act_f32(sw_kact op, float x) {
    switch (op) {
    case SW_KACT_EXP:
    case SW_KACT_SIGMOID:
    case SW_KACT_TANH:
    case SW_KACT_GELU:
    case SW_KACT_SILU:
    case SW_KACT_SOFTPLUS:
    case SW_KACT_ELU:
        return sw_vmath_f32((sw_vmath_fn)act_vfn(op), x);
    case SW_KACT_RELU:
        return x > 0.0f ? x : 0.0f;
    case SW_KACT_LEAKY_RELU:
        return x >= 0.0f ? x : 0.01f * x;
    default:
        return 0.0f;
    }
}

/*
 * The one switch on the op for gradients: g * f'(x). y is f(x) when the
 * caller has it (has_y), which EXP, SIGMOID and TANH reuse.
 */
static inline float act_grad_f32(sw_kact op, float g, float x, float y,
                                 int has_y) {
    switch (op) {
    case SW_KACT_EXP:
        return has_y ? g * y : sw_vmath_grad1_f32(SW_VMATH_EXP, g, x);
    case SW_KACT_RELU:
        return x > 0.0f ? g : 0.0f;
    case SW_KACT_SIGMOID:
        return has_y ? g * y * (1.0f - y)
                     : sw_vmath_grad1_f32(SW_VMATH_SIGMOID, g, x);
    case SW_KACT_TANH:
        return has_y ? g * (1.0f - y * y)
                     : sw_vmath_grad1_f32(SW_VMATH_TANH, g, x);
    case SW_KACT_GELU:
    case SW_KACT_SILU:
    case SW_KACT_SOFTPLUS:
    case SW_KACT_ELU:
        return sw_vmath_grad1_f32((sw_vmath_fn)act_vfn(op), g, x);
    case SW_KACT_LEAKY_RELU:
        return x >= 0.0f ? g : 0.01f * g;
    default:
        return 0.0f;
    }
}

/* ------------------------------------------------------------ forward */

/* o[0..n) = f(x[0..n)) through vmath's array form of the op. */
static inline void act_vec(sw_kact op, const float *x, float *o, int64_t n) {
    switch (op) {
    case SW_KACT_EXP:
        sw_vexp_f32(x, o, n);
        break;
    case SW_KACT_SIGMOID:
        sw_vsigmoid_f32(x, o, n);
        break;
    case SW_KACT_TANH:
        sw_vtanh_f32(x, o, n);
        break;
    case SW_KACT_GELU:
        sw_vgelu_f32(x, o, n);
        break;
    case SW_KACT_SILU:
        sw_vsilu_f32(x, o, n);
        break;
    case SW_KACT_SOFTPLUS:
        sw_vsoftplus_f32(x, o, n);
        break;
    case SW_KACT_ELU:
        sw_velu_f32(x, o, n);
        break;
    default:
        break;
    }
}

/*
 * A run of an op with a vmath form: unit stride straight through (a
 * streamed output through a stack buffer of SW_KSTAGE results); other
 * strides gathered into the buffer and scattered back, which in place
 * reads every element before it is written.
 */
static SW_ALWAYS_INLINE void act_vrun(sw_kact op, int64_t n, float *o,
                                      int64_t so, const float *x, int64_t sx) {
    float r[SW_KSTAGE];
    if (so == 1 && sx == 1) {
        if (!sw_kstream_run(n, 2)) {
            act_vec(op, x, o, n);
            return;
        }
        int64_t j = sw_kstream_head(o, n);
        act_vec(op, x, o, j);
        for (; j + SW_KSTAGE <= n; j += SW_KSTAGE) {
            act_vec(op, x + j, r, SW_KSTAGE);
            for (int t = 0; t < SW_KSTAGE; t += SW_KCHUNK)
                sw_kstream_chunk(o + j + t, r + t);
        }
        sw_kstream_fence();
        act_vec(op, x + j, o + j, n - j);
        return;
    }
    for (int64_t j = 0; j < n; j += SW_KSTAGE) {
        int64_t m = n - j < SW_KSTAGE ? n - j : SW_KSTAGE;
        for (int64_t t = 0; t < m; ++t)
            r[t] = x[(j + t) * sx];
        act_vec(op, r, r, m);
        for (int64_t t = 0; t < m; ++t)
            o[(j + t) * so] = r[t];
    }
}

static SW_ALWAYS_INLINE void act_run(sw_kact op, int64_t n, float *o,
                                     int64_t so, const float *x, int64_t sx) {
    if (SW_KERNELS_FAST && act_vfn(op) >= 0) {
        act_vrun(op, n, o, so, x, sx);
        return;
    }
    if (SW_KERNELS_FAST && so == 1 && sx == 1) {
        int64_t j = 0;
        if (sw_kstream_run(n, 2)) {
            for (int64_t h = sw_kstream_head(o, n); j < h; ++j)
                o[j] = act_f32(op, x[j]);
            for (; j + SW_KCHUNK <= n; j += SW_KCHUNK) {
                float r[SW_KCHUNK];
                SW_IVDEP
                for (int t = 0; t < SW_KCHUNK; ++t)
                    r[t] = act_f32(op, x[j + t]);
                sw_kstream_chunk(o + j, r);
            }
            sw_kstream_fence();
        }
        for (; j + SW_KCHUNK <= n; j += SW_KCHUNK) {
            SW_IVDEP
            for (int t = 0; t < SW_KCHUNK; ++t)
                o[j + t] = act_f32(op, x[j + t]);
        }
        for (; j < n; ++j)
            o[j] = act_f32(op, x[j]);
        return;
    }
    for (int64_t j = 0; j < n; ++j)
        o[j * so] = act_f32(op, x[j * sx]);
}

SW_KCLONES static sw_status act_loop(int64_t n, void *const *ptr,
                                     const int64_t *step, void *vctx) {
    sw_kact op = *(const sw_kact *)vctx;
    float *o = ptr[0];
    const float *x = ptr[1];
    int64_t so = step[0], sx = step[1];
    switch (op) {
    case SW_KACT_EXP:
        act_run(SW_KACT_EXP, n, o, so, x, sx);
        break;
    case SW_KACT_RELU:
        act_run(SW_KACT_RELU, n, o, so, x, sx);
        break;
    case SW_KACT_SIGMOID:
        act_run(SW_KACT_SIGMOID, n, o, so, x, sx);
        break;
    case SW_KACT_TANH:
        act_run(SW_KACT_TANH, n, o, so, x, sx);
        break;
    case SW_KACT_GELU:
        act_run(SW_KACT_GELU, n, o, so, x, sx);
        break;
    case SW_KACT_SILU:
        act_run(SW_KACT_SILU, n, o, so, x, sx);
        break;
    case SW_KACT_SOFTPLUS:
        act_run(SW_KACT_SOFTPLUS, n, o, so, x, sx);
        break;
    case SW_KACT_ELU:
        act_run(SW_KACT_ELU, n, o, so, x, sx);
        break;
    case SW_KACT_LEAKY_RELU:
        act_run(SW_KACT_LEAKY_RELU, n, o, so, x, sx);
        break;
    default:
        break;
    }
    return SW_OK;
}

/* max(0, x) exactly; INT32_MAX stays INT32_MAX. */
static sw_status relu_i32_loop(int64_t n, void *const *ptr, const int64_t *step,
                               void *vctx) {
    (void)vctx;
    int32_t *o = ptr[0];
    const int32_t *x = ptr[1];
    int64_t so = step[0], sx = step[1];
    if (SW_KERNELS_FAST && so == 1 && sx == 1) {
        int64_t j = 0;
        for (; j + SW_KCHUNK <= n; j += SW_KCHUNK) {
            SW_IVDEP
            for (int t = 0; t < SW_KCHUNK; ++t)
                o[j + t] = x[j + t] > 0 ? x[j + t] : 0;
        }
        for (; j < n; ++j)
            o[j] = x[j] > 0 ? x[j] : 0;
        return SW_OK;
    }
    for (int64_t j = 0; j < n; ++j)
        o[j * so] = x[j * sx] > 0 ? x[j * sx] : 0;
    return SW_OK;
}

/*
 * The work per element for the thread pool (kcommon.h): the relus are
 * memory-bound, the others compute a libm function per element.
 */
static int64_t act_weight(sw_kact op) {
    return op == SW_KACT_RELU || op == SW_KACT_LEAKY_RELU ? 1 : SW_KWEIGHT_MATH;
}

sw_status sw_kernel_activation(sw_kact op, sw_karg out, sw_karg x) {
    if ((unsigned)op >= SW_KACT_COUNT)
        return sw_fail(SW_EVALUE, "activation: unknown op %d", (int)op);
    const char *name = act_name(op);
    sw_status st = sw_kcheck_same_size(name, &out, "output", &x, "input");
    if (st)
        return st;
    sw_karg ops[2] = {out, x};
    switch (out.dtype) {
    case SW_DTYPE_FLOAT32:
        if (x.dtype != SW_DTYPE_FLOAT32 && x.dtype != SW_DTYPE_INT32)
            return sw_kbad_dtype(name, "input", x.dtype);
        return sw_kiterate_f32_w(2, ops, act_loop, &op, act_weight(op));
    case SW_DTYPE_INT32:
        if (op != SW_KACT_RELU)
            return sw_fail(SW_ETYPE,
                           "%s: no Int32 form (the result is "
                           "Float32)",
                           name);
        if (x.dtype != SW_DTYPE_INT32)
            return sw_kbad_dtype(name, "input", x.dtype);
        return sw_kiterate(2, ops, relu_i32_loop, NULL);
    default:
        return sw_kbad_dtype(name, "output", out.dtype);
    }
}

/* ----------------------------------------------------------- backward */

typedef struct grad_ctx {
    sw_kact op;
    int has_y;
} grad_ctx;

/* o[0..n) = g * f'(x) through vmath's backward form of the op. */
static inline void grad_vec(sw_kact op, const float *g, const float *x,
                            float *o, int64_t n) {
    switch (op) {
    case SW_KACT_EXP:
        sw_vexp_grad_f32(g, x, o, n);
        break;
    case SW_KACT_SIGMOID:
        sw_vsigmoid_grad_f32(g, x, o, n);
        break;
    case SW_KACT_TANH:
        sw_vtanh_grad_f32(g, x, o, n);
        break;
    case SW_KACT_GELU:
        sw_vgelu_grad_f32(g, x, o, n);
        break;
    case SW_KACT_SILU:
        sw_vsilu_grad_f32(g, x, o, n);
        break;
    case SW_KACT_SOFTPLUS:
        sw_vsoftplus_grad_f32(g, x, o, n);
        break;
    case SW_KACT_ELU:
        sw_velu_grad_f32(g, x, o, n);
        break;
    default:
        break;
    }
}

/* As act_vrun, for the gradient from x (g and x gathered together). */
static SW_ALWAYS_INLINE void grad_vrun(sw_kact op, int64_t n, float *o,
                                       int64_t so, const float *g, int64_t sg,
                                       const float *x, int64_t sx) {
    float rg[SW_KSTAGE], rx[SW_KSTAGE];
    if (so == 1 && sg == 1 && sx == 1) {
        if (!sw_kstream_run(n, 3)) {
            grad_vec(op, g, x, o, n);
            return;
        }
        int64_t j = sw_kstream_head(o, n);
        grad_vec(op, g, x, o, j);
        for (; j + SW_KSTAGE <= n; j += SW_KSTAGE) {
            grad_vec(op, g + j, x + j, rx, SW_KSTAGE);
            for (int t = 0; t < SW_KSTAGE; t += SW_KCHUNK)
                sw_kstream_chunk(o + j + t, rx + t);
        }
        sw_kstream_fence();
        grad_vec(op, g + j, x + j, o + j, n - j);
        return;
    }
    for (int64_t j = 0; j < n; j += SW_KSTAGE) {
        int64_t m = n - j < SW_KSTAGE ? n - j : SW_KSTAGE;
        for (int64_t t = 0; t < m; ++t) {
            rg[t] = g[(j + t) * sg];
            rx[t] = x[(j + t) * sx];
        }
        grad_vec(op, rg, rx, rx, m);
        for (int64_t t = 0; t < m; ++t)
            o[(j + t) * so] = rx[t];
    }
}

static SW_ALWAYS_INLINE void grad_run(sw_kact op, int has_y, int64_t n,
                                      float *o, int64_t so, const float *g,
                                      int64_t sg, const float *x, int64_t sx,
                                      const float *y, int64_t sy) {
    if (SW_KERNELS_FAST && !has_y && act_vfn(op) >= 0) {
        grad_vrun(op, n, o, so, g, sg, x, sx);
        return;
    }
    if (SW_KERNELS_FAST && so == 1 && sg == 1 && sx == 1 && sy == 1) {
        int64_t j = 0;
        if (sw_kstream_run(n, has_y ? 4 : 3)) {
            for (int64_t h = sw_kstream_head(o, n); j < h; ++j)
                o[j] = act_grad_f32(op, g[j], x[j], y[j], has_y);
            for (; j + SW_KCHUNK <= n; j += SW_KCHUNK) {
                float r[SW_KCHUNK];
                SW_IVDEP
                for (int t = 0; t < SW_KCHUNK; ++t)
                    r[t] =
                        act_grad_f32(op, g[j + t], x[j + t], y[j + t], has_y);
                sw_kstream_chunk(o + j, r);
            }
            sw_kstream_fence();
        }
        for (; j + SW_KCHUNK <= n; j += SW_KCHUNK) {
            SW_IVDEP
            for (int t = 0; t < SW_KCHUNK; ++t)
                o[j + t] =
                    act_grad_f32(op, g[j + t], x[j + t], y[j + t], has_y);
        }
        for (; j < n; ++j)
            o[j] = act_grad_f32(op, g[j], x[j], y[j], has_y);
        return;
    }
    for (int64_t j = 0; j < n; ++j)
        o[j * so] = act_grad_f32(op, g[j * sg], x[j * sx], y[j * sy], has_y);
}

SW_KCLONES static sw_status grad_loop(int64_t n, void *const *ptr,
                                      const int64_t *step, void *vctx) {
    const grad_ctx *c = vctx;
    int hy = c->has_y;
    float *o = ptr[0];
    const float *g = ptr[1], *x = ptr[2];
    const float *y = hy ? (const float *)ptr[3] : x;
    int64_t so = step[0], sg = step[1], sx = step[2], sy = hy ? step[3] : sx;
    switch (c->op) {
    case SW_KACT_EXP:
        grad_run(SW_KACT_EXP, hy, n, o, so, g, sg, x, sx, y, sy);
        break;
    case SW_KACT_RELU:
        grad_run(SW_KACT_RELU, hy, n, o, so, g, sg, x, sx, y, sy);
        break;
    case SW_KACT_SIGMOID:
        grad_run(SW_KACT_SIGMOID, hy, n, o, so, g, sg, x, sx, y, sy);
        break;
    case SW_KACT_TANH:
        grad_run(SW_KACT_TANH, hy, n, o, so, g, sg, x, sx, y, sy);
        break;
    case SW_KACT_GELU:
        grad_run(SW_KACT_GELU, hy, n, o, so, g, sg, x, sx, y, sy);
        break;
    case SW_KACT_SILU:
        grad_run(SW_KACT_SILU, hy, n, o, so, g, sg, x, sx, y, sy);
        break;
    case SW_KACT_SOFTPLUS:
        grad_run(SW_KACT_SOFTPLUS, hy, n, o, so, g, sg, x, sx, y, sy);
        break;
    case SW_KACT_ELU:
        grad_run(SW_KACT_ELU, hy, n, o, so, g, sg, x, sx, y, sy);
        break;
    case SW_KACT_LEAKY_RELU:
        grad_run(SW_KACT_LEAKY_RELU, hy, n, o, so, g, sg, x, sx, y, sy);
        break;
    default:
        break;
    }
    return SW_OK;
}

sw_status sw_kernel_activation_backward(sw_kact op, sw_karg out, sw_karg g,
                                        sw_karg x, const sw_karg *y) {
    if ((unsigned)op >= SW_KACT_COUNT)
        return sw_fail(SW_EVALUE, "activation backward: unknown op %d",
                       (int)op);
    const char *name = act_name(op);
    int use_y = y != NULL && (op == SW_KACT_EXP || op == SW_KACT_SIGMOID ||
                              op == SW_KACT_TANH);
    sw_karg ops[4] = {out, g, x, use_y ? *y : x};
    static const char *const names[4] = {"output", "gradient", "input",
                                         "result"};
    for (int32_t k = 0; k < 4; ++k) {
        if (ops[k].dtype != SW_DTYPE_FLOAT32)
            return sw_kbad_dtype(name, names[k], ops[k].dtype);
        if (k > 0) {
            sw_status st =
                sw_kcheck_same_size(name, &out, "output", &ops[k], names[k]);
            if (st)
                return st;
        }
    }
    grad_ctx c = {op, use_y};
    return sw_kiterate_w(use_y ? 4 : 3, ops, grad_loop, &c, act_weight(op));
}
