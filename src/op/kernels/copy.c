/*
 * Copy and convert between Float32, Int32 and Bool, fill, and the
 * helpers every kernel file shares (operand checks, iteration, Int32
 * staging for Float32 kernels).
 */
#include <string.h>

#include "base/pool.h"
#include "op/kernels/kcommon.h"

static const char int32_range_msg[] =
    "CPU Int32 operation result is out of int32 range";

/* ------------------------------------------------------------- shared */

sw_status sw_kcheck_same_size(const char *kernel, const sw_karg *a,
                              const char *an, const sw_karg *b,
                              const char *bn) {
    int64_t na = sw_layout_size(a->layout), nb = sw_layout_size(b->layout);
    if (na != nb)
        return sw_fail(SW_EVALUE, "%s: %s has %lld elements but %s has %lld",
                       kernel, an, (long long)na, bn, (long long)nb);
    return SW_OK;
}

sw_status sw_kbad_dtype(const char *kernel, const char *operand,
                        sw_dtype dtype) {
    return sw_fail(SW_ETYPE, "%s: %s has unsupported dtype %s", kernel, operand,
                   sw_dtype_name(dtype));
}

/* ------------------------------------------------------------ threads */

_Thread_local int64_t sw_kstream_walk;

typedef struct split_run {
    const sw_plan *plan;
    sw_plan_split split;
    void *const *base;
    const int64_t *elsize;
    sw_plan_loop loop;
    void *ctx;
} split_run;

static sw_status split_chunk(void *vctx, int64_t c, int32_t slot) {
    (void)slot;
    const split_run *r = vctx;
    sw_plan sub;
    sw_plan_chunk(r->plan, r->split, c, &sub);
    int64_t outer = sw_kstream_walk;
    sw_kstream_walk = r->plan->size;
    sw_status st = sw_plan_run(&sub, r->base, r->elsize, r->loop, r->ctx);
    sw_kstream_walk = outer;
    return st;
}

sw_status sw_krun_split(const sw_plan *plan, sw_plan_split s, void *const *base,
                        const int64_t *elsize, sw_plan_loop loop, void *ctx) {
    split_run r = {plan, s, base, elsize, loop, ctx};
    return sw_parallel_for(s.count, 0, split_chunk, &r);
}

/*
 * Non-zero if n elements of the given weight are enough work for threads.
 * A multiplication, not a division: every small operation asks.
 */
static inline int enough_work(int64_t n, int64_t weight) {
    int64_t w;
    return weight >= 1 && (!sw_mul_ok(n, weight, &w) || w >= SW_KPAR_MIN);
}

sw_status sw_kwalk(int32_t nops, const sw_plan_leaves *ops,
                   const int64_t *offsets, void *const *base,
                   const int64_t *elsize, unsigned flags, unsigned written,
                   int64_t weight, sw_plan_loop loop, void *ctx) {
    if (nops < 1 || nops > SW_PLAN_MAX_OPS ||
        !enough_work(sw_plan_leaves_size(ops[0]), weight) ||
        sw_pool_threads() < 2)
        return sw_plan_iterate(nops, ops, offsets, base, elsize, flags, loop,
                               ctx);
    sw_plan_reduced red;
    if (flags & SW_PLAN_SKIP_REPEATS) {
        sw_status st = sw_plan_drop_repeats(nops, ops, &red);
        if (st)
            return st;
        ops = red.ops;
    }
    sw_plan plan;
    sw_status st = sw_plan_build_leaves(nops, ops, offsets, &plan);
    if (st == SW_ENOTIMPL) {
        sw_clear_error();
        return sw_plan_run_leaves(nops, ops, offsets, base, elsize, loop, ctx);
    }
    if (st)
        return st;
    return sw_krun_plan(&plan, base, elsize, written, weight, loop, ctx);
}

sw_status sw_krun_plan(const sw_plan *plan, void *const *base,
                       const int64_t *elsize, unsigned written, int64_t weight,
                       sw_plan_loop loop, void *ctx) {
    int split = enough_work(plan->size, weight) && sw_pool_threads() > 1;
    for (int32_t k = 0; split && k < plan->nops; ++k)
        if ((written >> k) & 1u)
            split = sw_plan_injective(plan, k, 0);
    sw_plan_split s = {0, plan->extent[0], 1};
    if (split)
        s = sw_plan_split_choose(plan, sw_kpar_target(plan->size, weight));
    if (s.count < 2)
        return sw_plan_run(plan, base, elsize, loop, ctx);
    return sw_krun_split(plan, s, base, elsize, loop, ctx);
}

/* ------------------------------------------------------------ iterate */

/*
 * Whether every operand has the first one's layout and it is compact: then
 * the operands line up element for element in memory order, one run of
 * unit steps, and no plan is needed (what most small operations are).
 */
static int one_compact_run(int32_t nops, const sw_karg *ops) {
    const sw_layout *l = ops[0].layout;
    int compact = 0;
    if (sw_layout_size(l) > SW_PLAN_CHUNK ||
        sw_layout_is_compact(l, &compact) != SW_OK || !compact) {
        sw_clear_error();
        return 0;
    }
    for (int32_t k = 1; k < nops; ++k)
        if (ops[k].layout != l && !sw_layout_equal(ops[k].layout, l))
            return 0;
    return 1;
}

sw_status sw_kiterate_w(int32_t nops, const sw_karg *ops, sw_plan_loop loop,
                        void *ctx, int64_t weight) {
    /* Large compact walks take the planned path, which can split them. */
    if (SW_KERNELS_FAST &&
        (!enough_work(sw_layout_size(ops[0].layout), weight) ||
         sw_pool_threads() < 2) &&
        one_compact_run(nops, ops)) {
        void *ptr[SW_PLAN_MAX_OPS];
        int64_t step[SW_PLAN_MAX_OPS];
        for (int32_t k = 0; k < nops; ++k) {
            ptr[k] =
                (char *)ops[k].data + ops[k].offset * sw_kelsize(ops[k].dtype);
            step[k] = 1;
        }
        /* As a planned walk does, an interrupt raised before it starts
         * stops it before its first run. */
        sw_status st = sw_check_interrupt();
        return st ? st : loop(sw_layout_size(ops[0].layout), ptr, step, ctx);
    }
    sw_plan_leaves leaves[SW_PLAN_MAX_OPS];
    int64_t offsets[SW_PLAN_MAX_OPS], elsize[SW_PLAN_MAX_OPS];
    void *base[SW_PLAN_MAX_OPS];
    for (int32_t k = 0; k < nops; ++k) {
        leaves[k] = sw_plan_leaves_of(ops[k].layout);
        offsets[k] = ops[k].offset;
        elsize[k] = sw_kelsize(ops[k].dtype);
        base[k] = ops[k].data;
    }
    /* Assignments to operand 0 only. */
    return sw_kwalk(nops, leaves, offsets, base, elsize, SW_PLAN_SKIP_REPEATS,
                    1u, weight, loop, ctx);
}

sw_status sw_kiterate(int32_t nops, const sw_karg *ops, sw_plan_loop loop,
                      void *ctx) {
    return sw_kiterate_w(nops, ops, loop, ctx, 1);
}

sw_status sw_kstage_loop(int64_t n, void *const *ptr, const int64_t *step,
                         void *stage) {
    const sw_kstage *sg = stage;
    float buf[SW_PLAN_MAX_OPS][SW_KSTAGE];
    void *p[SW_PLAN_MAX_OPS];
    int64_t s[SW_PLAN_MAX_OPS];
    for (int64_t j0 = 0; j0 < n; j0 += SW_KSTAGE) {
        int64_t m = n - j0 < SW_KSTAGE ? n - j0 : SW_KSTAGE;
        for (int32_t k = 0; k < sg->nops; ++k) {
            if (!sg->is_i32[k]) {
                p[k] = (float *)ptr[k] + j0 * step[k];
                s[k] = step[k];
                continue;
            }
            const int32_t *src = (const int32_t *)ptr[k] + j0 * step[k];
            for (int64_t j = 0; j < m; ++j)
                buf[k][j] = (float)src[j * step[k]];
            p[k] = buf[k];
            s[k] = 1;
        }
        sw_status st = sg->loop(m, p, s, sg->ctx);
        if (st)
            return st;
    }
    return SW_OK;
}

sw_status sw_kiterate_f32_w(int32_t nops, const sw_karg *ops, sw_plan_loop loop,
                            void *ctx, int64_t weight) {
    sw_kstage sg = {loop, ctx, nops, {0}};
    int any = 0;
    for (int32_t k = 1; k < nops; ++k) {
        sg.is_i32[k] = ops[k].dtype == SW_DTYPE_INT32;
        any |= sg.is_i32[k];
    }
    if (!any)
        return sw_kiterate_w(nops, ops, loop, ctx, weight);
    return sw_kiterate_w(nops, ops, sw_kstage_loop, &sg, weight);
}

sw_status sw_kiterate_f32(int32_t nops, const sw_karg *ops, sw_plan_loop loop,
                          void *ctx) {
    return sw_kiterate_f32_w(nops, ops, loop, ctx, 1);
}

/* --------------------------------------------------------------- copy */

/* The dtype pairs, as one switchable value. */
static int copy_pair(sw_dtype dst, sw_dtype src) {
    return (int)dst * SW_DTYPE_COUNT + (int)src;
}

enum {
    F32_F32 = SW_DTYPE_FLOAT32 * SW_DTYPE_COUNT + SW_DTYPE_FLOAT32,
    F32_I32 = SW_DTYPE_FLOAT32 * SW_DTYPE_COUNT + SW_DTYPE_INT32,
    F32_B = SW_DTYPE_FLOAT32 * SW_DTYPE_COUNT + SW_DTYPE_BOOL,
    I32_F32 = SW_DTYPE_INT32 * SW_DTYPE_COUNT + SW_DTYPE_FLOAT32,
    I32_I32 = SW_DTYPE_INT32 * SW_DTYPE_COUNT + SW_DTYPE_INT32,
    I32_B = SW_DTYPE_INT32 * SW_DTYPE_COUNT + SW_DTYPE_BOOL,
    B_F32 = SW_DTYPE_BOOL * SW_DTYPE_COUNT + SW_DTYPE_FLOAT32,
    B_I32 = SW_DTYPE_BOOL * SW_DTYPE_COUNT + SW_DTYPE_INT32,
    B_B = SW_DTYPE_BOOL * SW_DTYPE_COUNT + SW_DTYPE_BOOL
};

typedef struct copy_ctx {
    int pair;
} copy_ctx;

/* Float to int32 truncates; NaN and out-of-range values are refused. */
static inline int f32_fits_i32(float x) {
    return x >= -2147483648.0f && x < 2147483648.0f;
}

static sw_status copy_loop(int64_t n, void *const *ptr, const int64_t *step,
                           void *vctx) {
    const copy_ctx *c = vctx;
    int64_t sd = step[0], ss = step[1];
    int contiguous = SW_KERNELS_FAST && sd == 1 && ss == 1;
    switch (c->pair) {
    case F32_F32:
    case I32_I32:
    case B_B: {
        /* Same dtype: bytes move unchanged (Bool bytes are 0 or 1). */
        int64_t es = c->pair == B_B ? 1 : 4;
        char *d = ptr[0];
        const char *s = ptr[1];
        if (contiguous) {
            memmove(d, s, (size_t)(n * es));
            break;
        }
        if (es == 4) {
            uint32_t *d4 = ptr[0];
            const uint32_t *s4 = ptr[1];
            for (int64_t j = 0; j < n; ++j)
                d4[j * sd] = s4[j * ss];
        } else {
            for (int64_t j = 0; j < n; ++j)
                d[j * sd] = s[j * ss];
        }
        break;
    }
    case F32_I32: {
        float *d = ptr[0];
        const int32_t *s = ptr[1];
        for (int64_t j = 0; j < n; ++j)
            d[j * sd] = (float)s[j * ss];
        break;
    }
    case F32_B: {
        float *d = ptr[0];
        const uint8_t *s = ptr[1];
        for (int64_t j = 0; j < n; ++j)
            d[j * sd] = s[j * ss] ? 1.0f : 0.0f;
        break;
    }
    case I32_F32: {
        int32_t *d = ptr[0];
        const float *s = ptr[1];
        for (int64_t j = 0; j < n; ++j) {
            float x = s[j * ss];
            if (!f32_fits_i32(x))
                return sw_fail(SW_EOVERFLOW, "%s", int32_range_msg);
            d[j * sd] = (int32_t)x;
        }
        break;
    }
    case I32_B: {
        int32_t *d = ptr[0];
        const uint8_t *s = ptr[1];
        for (int64_t j = 0; j < n; ++j)
            d[j * sd] = s[j * ss] ? 1 : 0;
        break;
    }
    case B_F32: {
        uint8_t *d = ptr[0];
        const float *s = ptr[1];
        for (int64_t j = 0; j < n; ++j)
            d[j * sd] = s[j * ss] != 0.0f; /* NaN != 0: true */
        break;
    }
    case B_I32: {
        uint8_t *d = ptr[0];
        const int32_t *s = ptr[1];
        for (int64_t j = 0; j < n; ++j)
            d[j * sd] = s[j * ss] != 0;
        break;
    }
    default:
        break;
    }
    return SW_OK;
}

sw_status sw_kernel_copy(sw_karg dst, sw_karg src) {
    if (sw_kelsize(dst.dtype) == 0)
        return sw_kbad_dtype("copy", "dst", dst.dtype);
    if (sw_kelsize(src.dtype) == 0)
        return sw_kbad_dtype("copy", "src", src.dtype);
    sw_status st = sw_kcheck_same_size("copy", &dst, "dst", &src, "src");
    if (st)
        return st;
    copy_ctx c = {copy_pair(dst.dtype, src.dtype)};
    sw_karg ops[2] = {dst, src};
    return sw_kiterate(2, ops, copy_loop, &c);
}

/* --------------------------------------------------------------- fill */

typedef struct fill_ctx {
    sw_dtype dtype;
    float f;
    int32_t i;
    uint8_t b;
} fill_ctx;

static sw_status fill_loop(int64_t n, void *const *ptr, const int64_t *step,
                           void *vctx) {
    const fill_ctx *c = vctx;
    int64_t sd = step[0];
    switch (c->dtype) {
    case SW_DTYPE_FLOAT32: {
        float *d = ptr[0], v = c->f;
        if (SW_KERNELS_FAST && sd == 1) {
            int64_t j = 0;
            for (; j + SW_KCHUNK <= n; j += SW_KCHUNK) {
                SW_IVDEP
                for (int t = 0; t < SW_KCHUNK; ++t)
                    d[j + t] = v;
            }
            for (; j < n; ++j)
                d[j] = v;
            break;
        }
        for (int64_t j = 0; j < n; ++j)
            d[j * sd] = v;
        break;
    }
    case SW_DTYPE_INT32: {
        int32_t *d = ptr[0], v = c->i;
        for (int64_t j = 0; j < n; ++j)
            d[j * sd] = v;
        break;
    }
    case SW_DTYPE_BOOL: {
        uint8_t *d = ptr[0], v = c->b;
        if (SW_KERNELS_FAST && sd == 1) {
            memset(d, v, (size_t)n);
            break;
        }
        for (int64_t j = 0; j < n; ++j)
            d[j * sd] = v;
        break;
    }
    default:
        break;
    }
    return SW_OK;
}

sw_status sw_kernel_fill(sw_karg dst, double value) {
    fill_ctx c = {dst.dtype, 0.0f, 0, 0};
    switch (dst.dtype) {
    case SW_DTYPE_FLOAT32:
        c.f = (float)value;
        break;
    case SW_DTYPE_INT32:
        if (!(value >= -2147483648.0 && value < 2147483648.0))
            return sw_fail(SW_EOVERFLOW, "%s", int32_range_msg);
        c.i = (int32_t)value;
        break;
    case SW_DTYPE_BOOL:
        c.b = value != 0.0;
        break;
    default:
        return sw_kbad_dtype("fill", "dst", dst.dtype);
    }
    return sw_kiterate(1, &dst, fill_loop, &c);
}
