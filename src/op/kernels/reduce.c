/*
 * The two-mode sum out[i] = sum_j x[i, j] and its backward broadcast.
 *
 * Float32: the output is described to the plan builder as broadcast over
 * j (its leaves followed by one stride-0 leaf of extent size(mode 1)), and
 * x is operand 0, so the plan walks x in its memory order. A run whose
 * output stride is 0 is a horizontal sum (j innermost: SW_KCHUNK lane
 * accumulators, then one add into out[i]); any other run is a vertical
 * accumulation out[i] += x[i, j] (i innermost). Either way the contiguous
 * case vectorises (gcc 12 -O2, -fopt-info-vec: both chunk loops "loop
 * vectorized using 16 byte vectors").
 *
 * Int32: every sum is accumulated exactly in int64 along j, one i at a
 * time (a plan over (out, mode 0) outside, a plan over mode 1 inside), so
 * the result does not depend on the order and a sum fails only if the
 * true value leaves the int32 range.
 *
 * Repeats (layout/plan.h): a mode along which x and the output both have
 * stride 0 adds the same value again and again. Both dtypes drop such
 * modes before walking and multiply by their extent instead, so summing
 * Shape(4,2**60):Stride(1,0) costs 4 visits: Float32 as float(repeat) *
 * (the sum over the kept modes), per run (exact when the repeat is a
 * power of two, otherwise one rounding more, and closer to the true value
 * than 2**60 float additions could be); Int32 exactly, with an overflow
 * check on the product.
 */
#include "op/kernels/kcommon.h"

static const char accumulation_msg[] = "CPU integer accumulation overflowed";

/* Leaves of the output broadcast over j: at most 62 kept leaves + 1. */
typedef struct bcast_leaves {
    int64_t ext[SW_PLAN_MAX_LEAVES];
    int64_t str[SW_PLAN_MAX_LEAVES];
    sw_plan_leaves leaves;
} bcast_leaves;

static void broadcast_leaves(const sw_layout *l, int64_t reps,
                             bcast_leaves *b) {
    sw_plan_leaves src = sw_plan_leaves_of(l);
    int32_t n = 0;
    for (int32_t j = 0; j < src.nleaf; ++j) {
        if (src.extent[j] == 1)
            continue;
        b->ext[n] = src.extent[j];
        b->str[n] = src.stride[j];
        n++;
    }
    b->ext[n] = reps;
    b->str[n] = 0;
    n++;
    b->leaves.nleaf = n;
    b->leaves.extent = b->ext;
    b->leaves.stride = b->str;
}

static sw_status check_two_mode(const char *kernel, const sw_karg *x,
                                const char *xn, const sw_karg *out,
                                const char *on) {
    if (sw_layout_rank(x->layout) != 2)
        return sw_fail(SW_EVALUE, "%s: %s must have two top-level modes",
                       kernel, xn);
    sw_plan_leaves m0 = sw_plan_leaves_mode(x->layout, 0);
    int64_t n0 = sw_plan_leaves_size(m0);
    int64_t no = sw_layout_size(out->layout);
    if (n0 != no)
        return sw_fail(SW_EVALUE,
                       "%s: %s has %lld elements but mode 0 of %s has %lld",
                       kernel, on, (long long)no, xn, (long long)n0);
    return SW_OK;
}

/* ------------------------------------------------------------ Float32 */

typedef struct sum_f32_ctx {
    float scale; /* the repeat count of the dropped modes */
} sum_f32_ctx;

/* Operand 0 is x, operand 1 the broadcast output. */
static sw_status sum_f32_loop(int64_t n, void *const *ptr, const int64_t *step,
                              void *vctx) {
    float scale = ((const sum_f32_ctx *)vctx)->scale;
    const float *x = ptr[0];
    float *o = ptr[1];
    int64_t sx = step[0], so = step[1];
    if (scale != 1.0f && so != 0) {
        for (int64_t j = 0; j < n; ++j)
            o[j * so] += scale * x[j * sx];
        return SW_OK;
    }
    if (so == 0) {
        float acc = 0.0f;
        int64_t j = 0;
        if (SW_KERNELS_FAST && sx == 1) {
            float lane[SW_KCHUNK] = {0};
            for (; j + SW_KCHUNK <= n; j += SW_KCHUNK) {
                SW_IVDEP
                for (int t = 0; t < SW_KCHUNK; ++t)
                    lane[t] += x[j + t];
            }
            for (int t = 0; t < SW_KCHUNK; ++t)
                acc += lane[t];
        }
        for (; j < n; ++j)
            acc += x[j * sx];
        *o += scale * acc;
        return SW_OK;
    }
    if (SW_KERNELS_FAST && sx == 1 && so == 1) {
        int64_t j = 0;
        for (; j + SW_KCHUNK <= n; j += SW_KCHUNK) {
            SW_IVDEP
            for (int t = 0; t < SW_KCHUNK; ++t)
                o[j + t] += x[j + t];
        }
        for (; j < n; ++j)
            o[j] += x[j];
        return SW_OK;
    }
    for (int64_t j = 0; j < n; ++j)
        o[j * so] += x[j * sx];
    return SW_OK;
}

/* -------------------------------------------------------------- Int32 */

typedef struct sum_i32_ctx {
    sw_plan inner; /* the walk over mode 1 of x, if it has a plan */
    int have_inner;
    sw_plan_reduced mode1; /* mode 1 of x without its stride-0 modes */
    int64_t acc;
} sum_i32_ctx;

static sw_status acc_i32_loop(int64_t n, void *const *ptr, const int64_t *step,
                              void *vctx) {
    sum_i32_ctx *c = vctx;
    const int32_t *x = ptr[0];
    int64_t sx = step[0], acc = c->acc;
    for (int64_t j = 0; j < n; ++j)
        if (!sw_add_ok(acc, x[j * sx], &acc))
            return sw_fail(SW_EOVERFLOW, "%s", accumulation_msg);
    c->acc = acc;
    return SW_OK;
}

/* Operand 0 is the output, operand 1 is x walked along mode 0. */
static sw_status sum_i32_loop(int64_t n, void *const *ptr, const int64_t *step,
                              void *vctx) {
    sum_i32_ctx *c = vctx;
    int32_t *o = ptr[0];
    int64_t so = step[0], sx = step[1];
    static const int64_t elsize[1] = {4};
    static const int64_t zero[1] = {0};
    for (int64_t t = 0; t < n; ++t) {
        void *base[1] = {(int32_t *)ptr[1] + t * sx};
        c->acc = 0;
        sw_status st =
            c->have_inner
                ? sw_plan_run(&c->inner, base, elsize, acc_i32_loop, c)
                : sw_plan_run_leaves(1, c->mode1.ops, zero, base, elsize,
                                     acc_i32_loop, c);
        if (st)
            return st;
        if (!sw_mul_ok(c->acc, c->mode1.repeat, &c->acc) ||
            c->acc < INT32_MIN || c->acc > INT32_MAX)
            return sw_fail(SW_EOVERFLOW, "%s", accumulation_msg);
        o[t * so] = (int32_t)c->acc;
    }
    return SW_OK;
}

/* -------------------------------------------------------------- entry */

sw_status sw_kernel_reduce_sum(sw_karg out, sw_karg x) {
    sw_status st = check_two_mode("reduce", &x, "input", &out, "output");
    if (st)
        return st;
    if (out.dtype != x.dtype ||
        (x.dtype != SW_DTYPE_FLOAT32 && x.dtype != SW_DTYPE_INT32))
        return sw_fail(SW_ETYPE,
                       "reduce: input and output must both be Float32 or "
                       "both Int32, not %s and %s",
                       sw_dtype_name(x.dtype), sw_dtype_name(out.dtype));
    sw_plan_leaves m0 = sw_plan_leaves_mode(x.layout, 0);
    sw_plan_leaves m1 = sw_plan_leaves_mode(x.layout, 1);
    if (x.dtype == SW_DTYPE_FLOAT32) {
        st = sw_kernel_fill(out, 0.0);
        if (st)
            return st;
        bcast_leaves ob;
        broadcast_leaves(out.layout, sw_plan_leaves_size(m1), &ob);
        sw_plan_leaves ops[2] = {sw_plan_leaves_of(x.layout), ob.leaves};
        sw_plan_reduced red;
        st = sw_plan_drop_repeats(2, ops, &red);
        if (st)
            return st;
        sum_f32_ctx fc = {(float)red.repeat};
        int64_t offsets[2] = {x.offset, out.offset};
        void *base[2] = {x.data, out.data};
        int64_t elsize[2] = {4, 4};
        return sw_plan_iterate(2, red.ops, offsets, base, elsize, 0,
                               sum_f32_loop, &fc);
    }
    sum_i32_ctx c;
    c.acc = 0;
    if ((st = sw_plan_drop_repeats(1, &m1, &c.mode1)))
        return st;
    static const int64_t zero[1] = {0};
    c.have_inner =
        sw_plan_build_leaves(1, c.mode1.ops, zero, &c.inner) == SW_OK;
    if (!c.have_inner)
        sw_clear_error();
    sw_plan_leaves ops[2] = {sw_plan_leaves_of(out.layout), m0};
    int64_t offsets[2] = {out.offset, x.offset};
    void *base[2] = {out.data, x.data};
    int64_t elsize[2] = {4, 4};
    /* Each visit assigns one output from a whole sum: idempotent. */
    return sw_plan_iterate(2, ops, offsets, base, elsize, SW_PLAN_SKIP_REPEATS,
                           sum_i32_loop, &c);
}

/* ----------------------------------------------------------- backward */

/* Operand 0 is the output, operand 1 the gradient broadcast over j. */
static sw_status bcast_loop(int64_t n, void *const *ptr, const int64_t *step,
                            void *vctx) {
    (void)vctx;
    float *o = ptr[0];
    const float *g = ptr[1];
    int64_t so = step[0], sg = step[1];
    if (SW_KERNELS_FAST && so == 1 && (sg == 1 || sg == 0)) {
        int64_t j = 0;
        if (sg == 1) {
            for (; j + SW_KCHUNK <= n; j += SW_KCHUNK) {
                SW_IVDEP
                for (int t = 0; t < SW_KCHUNK; ++t)
                    o[j + t] = g[j + t];
            }
        } else {
            float v = g[0];
            for (; j + SW_KCHUNK <= n; j += SW_KCHUNK) {
                SW_IVDEP
                for (int t = 0; t < SW_KCHUNK; ++t)
                    o[j + t] = v;
            }
        }
        for (; j < n; ++j)
            o[j] = g[j * sg];
        return SW_OK;
    }
    for (int64_t j = 0; j < n; ++j)
        o[j * so] = g[j * sg];
    return SW_OK;
}

sw_status sw_kernel_reduce_sum_backward(sw_karg out, sw_karg g) {
    sw_status st =
        check_two_mode("reduce backward", &out, "output", &g, "gradient");
    if (st)
        return st;
    if (out.dtype != SW_DTYPE_FLOAT32)
        return sw_kbad_dtype("reduce backward", "output", out.dtype);
    if (g.dtype != SW_DTYPE_FLOAT32)
        return sw_kbad_dtype("reduce backward", "gradient", g.dtype);
    sw_plan_leaves m1 = sw_plan_leaves_mode(out.layout, 1);
    bcast_leaves gb;
    broadcast_leaves(g.layout, sw_plan_leaves_size(m1), &gb);
    sw_plan_leaves ops[2] = {sw_plan_leaves_of(out.layout), gb.leaves};
    int64_t offsets[2] = {out.offset, g.offset};
    void *base[2] = {out.data, g.data};
    int64_t elsize[2] = {4, 4};
    return sw_plan_iterate(2, ops, offsets, base, elsize, SW_PLAN_SKIP_REPEATS,
                           bcast_loop, NULL);
}
