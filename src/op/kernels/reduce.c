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
 * Threads (kcommon.h). A Float32 sum of at least SW_KPAR_MIN elements
 * always runs in chunks, whatever the thread count, so that its bits do
 * not depend on it. The plan's modes are output modes (the output has a
 * stride there) or summed modes (stride 0). Split along an output mode,
 * chunks own disjoint outputs and each output is summed exactly as in one
 * walk. Split along a summed mode, chunk c adds its part of every sum into
 * a partial of its own (compact, zeroed), and the output is then
 * out + P0 + P1 + ... in chunk order. Partials are allowed while all of
 * them together stay under a 16th of the elements summed; of the
 * admissible splits the outermost that gives SW_PLAN_SPLIT_MIN chunks
 * wins, as for every kernel. An output whose modes are not provably
 * injective sums in one walk, as before.
 *
 * Int32 sums are exact whatever the order, so they simply split the
 * outputs over the pool when there are enough of them.
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
#include <string.h>

#include "base/pool.h"
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

/*
 * The commonest vertical sum, a plan of two modes with x and the output
 * contiguous along the first and the output broadcast along the second
 * (a column-major matrix summed over its columns): out[i] += x[i, j] for
 * j in order. Walking it column by column (sum_f32_loop) loads and stores
 * the whole output once per column; here a block of outputs stays in
 * vector registers for all the columns, so each element of x costs one
 * load and one add. Every output still adds its terms in the same order
 * from the same start, so the bits are those of the column walk. The
 * AVX-512 build (chosen at run time) keeps 128 outputs in 8 registers,
 * the baseline one 32 in 8 SSE registers; 16 at a time, then one at a
 * time, finish the rows.
 */
#if SW_KERNELS_FAST && defined(__GNUC__) && defined(__x86_64__)
#define SUM_COLUMNS 1
typedef float sum_v16f __attribute__((vector_size(64)));

static SW_ALWAYS_INLINE void columns_block(int64_t ni, int64_t nj,
                                           const float *x, int64_t xj, float *o,
                                           const int k) {
    int64_t i = 0;
    for (; i + 16 * k <= ni; i += 16 * k) {
        sum_v16f acc[8];
        for (int q = 0; q < k; ++q)
            memcpy(&acc[q], o + i + 16 * q, sizeof acc[q]);
        for (int64_t j = 0; j < nj; ++j) {
            const float *c = x + i + j * xj;
            for (int q = 0; q < k; ++q) {
                sum_v16f v;
                memcpy(&v, c + 16 * q, sizeof v);
                acc[q] += v;
            }
        }
        for (int q = 0; q < k; ++q)
            memcpy(o + i + 16 * q, &acc[q], sizeof acc[q]);
    }
    for (; i + 16 <= ni; i += 16) {
        sum_v16f acc;
        memcpy(&acc, o + i, sizeof acc);
        for (int64_t j = 0; j < nj; ++j) {
            sum_v16f v;
            memcpy(&v, x + i + j * xj, sizeof v);
            acc += v;
        }
        memcpy(o + i, &acc, sizeof acc);
    }
    for (; i < ni; ++i) {
        float a = o[i];
        for (int64_t j = 0; j < nj; ++j)
            a += x[i + j * xj];
        o[i] = a;
    }
}

__attribute__((target("avx512f"))) static void
columns_wide(int64_t ni, int64_t nj, const float *x, int64_t xj, float *o) {
    columns_block(ni, nj, x, xj, o, 8);
}

static void columns_base(int64_t ni, int64_t nj, const float *x, int64_t xj,
                         float *o) {
    columns_block(ni, nj, x, xj, o, 2);
}
#else
#define SUM_COLUMNS 0
#endif

/* A Float32 sum plan walked: the column case above, or sum_f32_loop. */
static sw_status sum_run(const sw_plan *p, void *const *base, sum_f32_ctx *fc) {
    static const int64_t elsize[2] = {4, 4};
#if SUM_COLUMNS
    if (fc->scale == 1.0f && p->ndim == 2 && p->stride[0][0] == 1 &&
        p->stride[1][0] == 1 && p->stride[1][1] == 0 && p->extent[0] >= 16) {
        const float *x = (const float *)base[0] + p->offset[0];
        float *o = (float *)base[1] + p->offset[1];
        int wide = __builtin_cpu_supports("avx512f");
        /* Columns at a time, so that an interrupt is seen as often as in
         * a plan walk. */
        int64_t per = SW_INTERRUPT_EVERY / p->extent[0] + 1;
        for (int64_t j = 0; j < p->extent[1]; j += per) {
            sw_status st = sw_check_interrupt();
            if (st)
                return st;
            int64_t nj = p->extent[1] - j < per ? p->extent[1] - j : per;
            const float *xj = x + j * p->stride[0][1];
            if (wide)
                columns_wide(p->extent[0], nj, xj, p->stride[0][1], o);
            else
                columns_base(p->extent[0], nj, xj, p->stride[0][1], o);
        }
        return SW_OK;
    }
#endif
    return sw_plan_run(p, base, elsize, sum_f32_loop, fc);
}

/* Adds the partials in chunk order: operand 0 the output, 1 partial 0. */
typedef struct combine_ctx {
    int64_t count; /* partials */
    int64_t pitch; /* elements from one partial to the next */
} combine_ctx;

static sw_status combine_loop(int64_t n, void *const *ptr, const int64_t *step,
                              void *vctx) {
    const combine_ctx *cc = vctx;
    float *o = ptr[0];
    const float *p = ptr[1];
    int64_t so = step[0], sp = step[1];
    /* Partial by partial, so every output adds them in the same order. */
    for (int64_t c = 0; c < cc->count; ++c) {
        const float *pc = p + c * cc->pitch;
        if (SW_KERNELS_FAST && so == 1 && sp == 1) {
            SW_IVDEP
            for (int64_t j = 0; j < n; ++j)
                o[j] += pc[j];
            continue;
        }
        for (int64_t j = 0; j < n; ++j)
            o[j * so] += pc[j * sp];
    }
    return SW_OK;
}

typedef struct sum_split {
    const sw_plan *plan; /* x is operand 0, the output operand 1 */
    sw_plan_split split;
    void *base[2];
    sum_f32_ctx *fc;
    float *partials; /* NULL when the split is along an output mode */
    int64_t nout;    /* outputs */
    int64_t pitch;   /* floats per partial: nout padded to cache lines */
    int64_t pstride[SW_PLAN_MAX_DIMS]; /* the output's modes in a partial */
} sum_split;

static sw_status sum_chunk(void *vctx, int64_t c, int32_t slot) {
    (void)slot;
    const sum_split *r = vctx;
    sw_plan sub;
    sw_plan_chunk(r->plan, r->split, c, &sub);
    if (!r->partials)
        return sum_run(&sub, r->base, r->fc);
    /* The split mode has output stride 0, so no chunk offset moves it. */
    for (int32_t d = 0; d < sub.ndim; ++d)
        sub.stride[1][d] = r->pstride[d];
    sub.offset[1] = 0;
    void *base[2] = {r->base[0], r->partials + c * r->pitch};
    return sum_run(&sub, base, r->fc);
}

/*
 * The split of a sum's plan (see the header comment), from the plan
 * alone; count 1 if none. *partial says whether it needs partials.
 */
static sw_plan_split sum_split_choose(const sw_plan *plan, int64_t nout,
                                      int *partial) {
    int64_t target = sw_kpar_target(plan->size, 1);
    sw_plan_split best = {0, plan->extent[0], 1};
    *partial = 0;
    for (int32_t d = plan->ndim - 1; d >= 0; --d) {
        sw_plan_split s = sw_plan_split_mode(plan, d, target);
        int summed = plan->stride[1][d] == 0;
        if (summed) {
            int64_t most = plan->size / 16 / nout;
            if (most < 2)
                continue;
            if (s.count > most)
                s = sw_plan_split_mode(plan, d, (plan->size + most - 1) / most);
        }
        if (s.count >= SW_PLAN_SPLIT_MIN) {
            *partial = summed;
            return s;
        }
        if (s.count > best.count) {
            best = s;
            *partial = summed;
        }
    }
    return best;
}

/*
 * Runs a chunked sum if the plan is large enough and its outputs provably
 * distinct; *done says whether it did (otherwise nothing was touched).
 */
static sw_status sum_f32_split(const sw_plan *plan, void *const *base,
                               sum_f32_ctx *fc, int *done) {
    *done = 0;
    if (plan->size < SW_KPAR_MIN || !sw_plan_injective(plan, 1, 1))
        return SW_OK;
    sum_split r;
    r.plan = plan;
    r.base[0] = base[0];
    r.base[1] = base[1];
    r.fc = fc;
    r.partials = NULL;
    r.nout = 1;
    for (int32_t d = 0; d < plan->ndim; ++d) {
        r.pstride[d] = plan->stride[1][d] ? r.nout : 0;
        if (plan->stride[1][d])
            r.nout *= plan->extent[d];
    }
    int partial;
    r.split = sum_split_choose(plan, r.nout, &partial);
    if (r.split.count < 2)
        return SW_OK;
    *done = 1;
    if (!partial)
        return sw_parallel_for(r.split.count, 0, sum_chunk, &r);
    /* Partials on cache lines of their own: chunks on different threads
     * add into neighbouring partials all the time. count * pitch is at
     * most about size / 16 + 16 * count elements: it fits size_t. */
    r.pitch = (r.nout + 15) / 16 * 16;
    r.partials =
        sw_alloc_aligned((size_t)(r.split.count * r.pitch) * sizeof(float), 1);
    if (!r.partials)
        return sw_oom();
    sw_status st = sw_parallel_for(r.split.count, 0, sum_chunk, &r);
    if (!st) {
        /* The output's modes alone, against partial 0. */
        sw_plan comb;
        comb.nops = 2;
        comb.ndim = 0;
        comb.size = r.nout;
        comb.offset[0] = plan->offset[1];
        comb.offset[1] = 0;
        for (int32_t d = 0; d < plan->ndim; ++d) {
            if (!plan->stride[1][d])
                continue;
            comb.extent[comb.ndim] = plan->extent[d];
            comb.stride[0][comb.ndim] = plan->stride[1][d];
            comb.stride[1][comb.ndim] = r.pstride[d];
            comb.ndim++;
        }
        if (comb.ndim == 0) {
            comb.extent[0] = 1;
            comb.stride[0][0] = comb.stride[1][0] = 0;
            comb.ndim = 1;
        }
        for (int32_t d = comb.ndim; d < SW_PLAN_MAX_DIMS; ++d) {
            comb.extent[d] = 1;
            comb.stride[0][d] = comb.stride[1][d] = 0;
        }
        for (int32_t k = 2; k < SW_PLAN_MAX_OPS; ++k) {
            comb.offset[k] = 0;
            for (int32_t d = 0; d < SW_PLAN_MAX_DIMS; ++d)
                comb.stride[k][d] = 0;
        }
        combine_ctx cc = {r.split.count, r.pitch};
        void *cbase[2] = {base[1], r.partials};
        static const int64_t elsize[2] = {4, 4};
        st = sw_krun_plan(&comb, cbase, elsize, 1u, r.split.count, combine_loop,
                          &cc);
    }
    sw_free_aligned(r.partials);
    return st;
}

/* -------------------------------------------------------------- Int32 */

/* Read-only during the walk, so chunks on several threads share it. */
typedef struct sum_i32_ctx {
    sw_plan inner; /* the walk over mode 1 of x, if it has a plan */
    int have_inner;
    sw_plan_reduced mode1; /* mode 1 of x without its stride-0 modes */
} sum_i32_ctx;

/* vctx is the int64_t accumulator of one sum. */
static sw_status acc_i32_loop(int64_t n, void *const *ptr, const int64_t *step,
                              void *vctx) {
    int64_t *accp = vctx;
    const int32_t *x = ptr[0];
    int64_t sx = step[0], acc = *accp;
    for (int64_t j = 0; j < n; ++j)
        if (!sw_add_ok(acc, x[j * sx], &acc))
            return sw_fail(SW_EOVERFLOW, "%s", accumulation_msg);
    *accp = acc;
    return SW_OK;
}

/* Operand 0 is the output, operand 1 is x walked along mode 0. */
static sw_status sum_i32_loop(int64_t n, void *const *ptr, const int64_t *step,
                              void *vctx) {
    const sum_i32_ctx *c = vctx;
    int32_t *o = ptr[0];
    int64_t so = step[0], sx = step[1];
    static const int64_t elsize[1] = {4};
    static const int64_t zero[1] = {0};
    for (int64_t t = 0; t < n; ++t) {
        void *base[1] = {(int32_t *)ptr[1] + t * sx};
        int64_t acc = 0;
        sw_status st =
            c->have_inner
                ? sw_plan_run(&c->inner, base, elsize, acc_i32_loop, &acc)
                : sw_plan_run_leaves(1, c->mode1.ops, zero, base, elsize,
                                     acc_i32_loop, &acc);
        if (st)
            return st;
        if (!sw_mul_ok(acc, c->mode1.repeat, &acc) || acc < INT32_MIN ||
            acc > INT32_MAX)
            return sw_fail(SW_EOVERFLOW, "%s", accumulation_msg);
        o[t * so] = (int32_t)acc;
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
        if (sw_plan_leaves_size(red.ops[0]) >= SW_KPAR_MIN) {
            sw_plan plan;
            st = sw_plan_build_leaves(2, red.ops, offsets, &plan);
            if (st == SW_OK) {
                int done;
                st = sum_f32_split(&plan, base, &fc, &done);
                if (st || done)
                    return st;
                return sum_run(&plan, base, &fc);
            }
            if (st != SW_ENOTIMPL)
                return st;
            sw_clear_error();
        }
        return sw_plan_iterate(2, red.ops, offsets, base, elsize, 0,
                               sum_f32_loop, &fc);
    }
    sum_i32_ctx c;
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
    /* Each visit assigns one output from a whole sum: idempotent, and
     * worth the elements of that sum. */
    return sw_kwalk(2, ops, offsets, base, elsize, SW_PLAN_SKIP_REPEATS, 1u,
                    sw_plan_leaves_size(c.mode1.ops[0]), sum_i32_loop, &c);
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
    return sw_kwalk(2, ops, offsets, base, elsize, SW_PLAN_SKIP_REPEATS, 1u, 1,
                    bcast_loop, NULL);
}
