/*
 * Unit tests of the iteration plans (src/layout/plan.h) and the CPU
 * kernels (src/op/kernels/kernels.h).
 *
 * Plans: the worked examples of plan.h, each construction step on its own
 * (refinement, dropping extent-1 modes, reordering with its tie rules,
 * merging), the errors, and the @post over whole domains: for thousands of
 * random operand sets, the multiset of index tuples a walk visits (planned,
 * blocked, fallback) equals the tuples (offsets[k] + layouts[k](i))_k over
 * every logical i, computed with sw_layout_index.
 *
 * Kernels: every kernel against a reference computed here element by
 * element through sw_layout_index, on compact, strided, transposed,
 * hierarchical (tiled), offset and stride-0 (broadcast input) layouts,
 * on pairs without a common refinement, and on walks long enough for the
 * vectorised chunks, the Int32 staging pieces and the streaming stores.
 * Every output buffer starts as a sentinel, and the elements the output
 * layout does not reach must keep it. Arithmetic must match a float
 * reference exactly; activations match a double reference within rtol
 * 1e-5 / atol 1e-6; GEMM is checked against a double triple loop within
 * a bound proportional to K and sum |a*b|. Int32 overflow gives the
 * documented messages. The allocation counter must come back to its start
 * after each group, and GEMM must fail cleanly when its packing buffer
 * cannot be allocated. The same file passes with -Dreference_kernels=true.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layout/plan.h"
#include "op/kernels/kernels.h"
#include "strideweave/base.h"
#include "strideweave/layout.h"
#include "tap.h"

/* ------------------------------------------------------------ helpers */

static const char *S(sw_status st) {
    return sw_status_name(st);
}

static sw_layout *P(const char *text) {
    sw_layout *l = NULL;
    sw_status st = sw_layout_parse(text, &l);
    if (st != SW_OK) {
        ok(0, "parse '%s'", text);
        diag("status %s: %s", S(st), sw_errmsg());
        exit(1);
    }
    return l;
}

static int64_t IX(const sw_layout *l, int64_t i) {
    int64_t r = -1;
    if (sw_layout_index(l, i, &r) != SW_OK)
        return -1;
    return r;
}

static void leak_check(int64_t base, const char *what) {
    is_int(sw_debug_live_allocs(), base, "%s: no library allocation leaked",
           what);
}

/* A deterministic generator (xorshift64*), so failures reproduce. */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static uint64_t rnd(void) {
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ull;
}

static int64_t rnd_below(int64_t n) {
    return (int64_t)(rnd() % (uint64_t)n);
}

/* Floats in [-2, 2) with a few exact values mixed in. */
static float rnd_float(void) {
    int64_t r = rnd_below(64);
    if (r == 0)
        return 0.0f;
    if (r == 1)
        return 1.0f;
    if (r == 2)
        return -1.0f;
    return (float)((double)rnd_below(1 << 20) / (double)(1 << 18) - 2.0);
}

/*
 * A test operand: a layout, an offset and a buffer of offset + cosize +
 * SLACK elements. Inputs are filled with random values; outputs with a
 * sentinel that untouched elements must keep.
 */
#define SLACK 5
typedef struct opnd {
    sw_layout *l;
    int64_t off;
    sw_dtype dt;
    int64_t cap;
    void *data;
} opnd;

static const float SENT_F = -12345.5f;
static const int32_t SENT_I = -777777;

static opnd mk(const char *layout, int64_t off, sw_dtype dt, int output) {
    opnd o;
    o.l = P(layout);
    o.off = off;
    o.dt = dt;
    o.cap = off + sw_layout_cosize(o.l) + SLACK;
    size_t es = dt == SW_DTYPE_BOOL ? 1 : 4;
    o.data = malloc((size_t)o.cap * es);
    if (!o.data) {
        ok(0, "test allocation");
        exit(1);
    }
    for (int64_t i = 0; i < o.cap; ++i) {
        if (dt == SW_DTYPE_FLOAT32)
            ((float *)o.data)[i] = output ? SENT_F : rnd_float();
        else if (dt == SW_DTYPE_INT32)
            ((int32_t *)o.data)[i] =
                output ? SENT_I : (int32_t)rnd_below(2001) - 1000;
        else
            ((uint8_t *)o.data)[i] = output ? 7 : (uint8_t)rnd_below(2);
    }
    return o;
}

static void rm(opnd *o) {
    sw_layout_unref(o->l);
    free(o->data);
    o->l = NULL;
    o->data = NULL;
}

static sw_karg K(const opnd *o) {
    sw_karg a = {o->data, o->dt, o->off, o->l};
    return a;
}

static int64_t size_of(const opnd *o) {
    return sw_layout_size(o->l);
}

/* The physical position of logical element i. */
static int64_t pos(const opnd *o, int64_t i) {
    return o->off + IX(o->l, i);
}

static float getf(const opnd *o, int64_t i) {
    int64_t p = pos(o, i);
    if (o->dt == SW_DTYPE_FLOAT32)
        return ((float *)o->data)[p];
    if (o->dt == SW_DTYPE_INT32)
        return (float)((int32_t *)o->data)[p];
    return (float)((uint8_t *)o->data)[p];
}

static int32_t geti(const opnd *o, int64_t i) {
    return ((int32_t *)o->data)[pos(o, i)];
}

static void setf(opnd *o, int64_t i, float v) {
    ((float *)o->data)[pos(o, i)] = v;
}

static void seti(opnd *o, int64_t i, int32_t v) {
    ((int32_t *)o->data)[pos(o, i)] = v;
}

/*
 * Non-zero if every buffer element that no logical index of o reaches
 * still holds the sentinel (the kernel wrote nothing outside the image).
 */
static int holes_untouched(const opnd *o, const char *name) {
    char *hit = calloc((size_t)o->cap, 1);
    int64_t n = size_of(o);
    for (int64_t i = 0; i < n; ++i)
        hit[pos(o, i)] = 1;
    int64_t bad = -1;
    for (int64_t p = 0; p < o->cap && bad < 0; ++p) {
        if (hit[p])
            continue;
        int same = 1;
        if (o->dt == SW_DTYPE_FLOAT32)
            same = ((float *)o->data)[p] == SENT_F;
        else if (o->dt == SW_DTYPE_INT32)
            same = ((int32_t *)o->data)[p] == SENT_I;
        else
            same = ((uint8_t *)o->data)[p] == 7;
        if (!same)
            bad = p;
    }
    free(hit);
    if (!ok(bad < 0, "%s: elements outside the output's image untouched",
            name)) {
        diag("buffer position %lld was written", (long long)bad);
        return 0;
    }
    return 1;
}

/* Close enough to a double reference: rtol 1e-5, atol 1e-6. */
static int close_to(float got, double want) {
    if (isnan(want))
        return isnan(got);
    if (isinf(want))
        return (double)got == want;
    return fabs((double)got - want) <= 1e-6 + 1e-5 * fabs(want);
}

/* Same float, NaN equal to NaN. */
static int same_float(float a, float b) {
    return (isnan(a) && isnan(b)) || a == b;
}

/* ---------------------------------------------------------- plan checks */

static void plan_is(const sw_plan *p, int32_t ndim, const int64_t *ext,
                    const int64_t *const *str, const char *name) {
    if (!is_int(p->ndim, ndim, "%s: ndim", name))
        return;
    int good = 1;
    for (int32_t d = 0; d < ndim; ++d) {
        good &= p->extent[d] == ext[d];
        for (int32_t k = 0; k < p->nops; ++k)
            good &= p->stride[k][d] == str[k][d];
    }
    if (!ok(good, "%s: extents and strides", name)) {
        for (int32_t d = 0; d < p->ndim; ++d) {
            char line[256];
            int len = snprintf(line, sizeof line, "mode %d: extent %lld,",
                               (int)d, (long long)p->extent[d]);
            for (int32_t k = 0; k < p->nops; ++k)
                len +=
                    snprintf(line + len, sizeof line - (size_t)len, " s%d=%lld",
                             (int)k, (long long)p->stride[k][d]);
            diag("%s", line);
        }
    }
}

static sw_status build2(const char *a, const char *b, const int64_t *offs,
                        sw_plan *p) {
    sw_layout *la = P(a), *lb = P(b);
    const sw_layout *ls[2] = {la, lb};
    sw_status st = sw_plan_build(2, ls, offs, p);
    sw_layout_unref(la);
    sw_layout_unref(lb);
    return st;
}

static void test_plan_examples(void) {
    int64_t base = sw_debug_live_allocs();
    sw_plan p;
    sw_status st;

    /* plan.h's worked example: compact output, transposed input. */
    st = build2("(4,6):(1,4)", "(4,6):(6,1)", NULL, &p);
    if (ok(st == SW_OK, "worked example builds")) {
        int64_t e[] = {4, 6}, s0[] = {1, 4}, s1[] = {6, 1};
        const int64_t *s[] = {s0, s1};
        plan_is(&p, 2, e, s, "compact vs transposed");
        is_int(p.size, 24, "worked example: size");
        is_int(p.nops, 2, "worked example: nops");
    }

    /* The tiled layout sorts and merges into one contiguous mode. */
    st = build2("((2,2),(2,2)):((1,4),(2,8))", "((2,2),(2,2)):((1,4),(2,8))",
                NULL, &p);
    if (ok(st == SW_OK, "tiled example builds")) {
        int64_t e[] = {16}, s0[] = {1}, s1[] = {1};
        const int64_t *s[] = {s0, s1};
        plan_is(&p, 1, e, s, "tiled layout merges to one mode");
    }

    /* Refinement: the output's single leaf splits at the input's cut. */
    st = build2("6:1", "(2,3):(3,1)", NULL, &p);
    if (ok(st == SW_OK, "refinement example builds")) {
        int64_t e[] = {2, 3}, s0[] = {1, 2}, s1[] = {3, 1};
        const int64_t *s[] = {s0, s1};
        plan_is(&p, 2, e, s, "6:1 against (2,3):(3,1)");
    }

    /* Refinement inside a nested leaf on both sides, then merging. */
    st = build2("((2,6),2):((1,2),12)", "(4,(3,2)):(1,(4,12))", NULL, &p);
    if (ok(st == SW_OK, "two-sided refinement builds")) {
        int64_t e[] = {24}, s0[] = {1}, s1[] = {1};
        const int64_t *s[] = {s0, s1};
        plan_is(&p, 1, e, s, "compact splits meet and merge back");
    }

    /* A refinement that cannot merge back: cuts 2, 4, 12 shared. */
    st = build2("(4,3):(3,1)", "(2,6):(1,2)", NULL, &p);
    if (ok(st == SW_OK, "refinement with strides builds")) {
        int64_t e[] = {3, 4}, s0[] = {1, 3}, s1[] = {4, 1};
        const int64_t *s[] = {s0, s1};
        plan_is(&p, 2, e, s, "(4,3):(3,1) against (2,6):(1,2)");
    }

    /* Extent-1 modes are dropped before anything else. */
    st = build2("(1,4,1):(7,1,9)", "(4,1):(2,5)", NULL, &p);
    if (ok(st == SW_OK, "extent-1 example builds")) {
        int64_t e[] = {4}, s0[] = {1}, s1[] = {2};
        const int64_t *s[] = {s0, s1};
        plan_is(&p, 1, e, s, "extent-1 modes dropped");
    }

    /* A mode in which every operand has stride 1 goes innermost. */
    st = build2("(4,4):(1,1)", "(4,4):(4,1)", NULL, &p);
    if (ok(st == SW_OK, "all-unit example builds")) {
        int64_t e[] = {4, 4}, s0[] = {1, 1}, s1[] = {1, 4};
        const int64_t *s[] = {s0, s1};
        plan_is(&p, 2, e, s, "the all-stride-1 mode is innermost");
    }

    /* Stride 0 of the output orders last. */
    st = build2("(3,4):(0,1)", "(3,4):(1,3)", NULL, &p);
    if (ok(st == SW_OK, "stride-0 example builds")) {
        int64_t e[] = {4, 3}, s0[] = {1, 0}, s1[] = {3, 1};
        const int64_t *s[] = {s0, s1};
        plan_is(&p, 2, e, s, "an output stride 0 sorts outermost");
    }

    /* Ties on operand 0 go to operand 1; stride-0 modes merge. */
    st = build2("(2,2):(0,0)", "(2,2):(2,1)", NULL, &p);
    if (ok(st == SW_OK, "tie example builds")) {
        int64_t e[] = {4}, s0[] = {0}, s1[] = {1};
        const int64_t *s[] = {s0, s1};
        plan_is(&p, 1, e, s, "ties broken by operand 1, then merged");
    }

    /* Full ties keep the logical order (stable sort). */
    st = build2("(2,3):(5,5)", "(2,3):(7,7)", NULL, &p);
    if (ok(st == SW_OK, "full-tie example builds")) {
        int64_t e[] = {2, 3}, s0[] = {5, 5}, s1[] = {7, 7};
        const int64_t *s[] = {s0, s1};
        plan_is(&p, 2, e, s, "full ties keep logical order");
    }

    /* One element: one mode of extent 1, stride 0; offsets kept. */
    int64_t offs[2] = {3, 11};
    st = build2("1:0", "(1,1):(4,9)", offs, &p);
    if (ok(st == SW_OK, "single-element plan builds")) {
        int64_t e[] = {1}, s0[] = {0}, s1[] = {0};
        const int64_t *s[] = {s0, s1};
        plan_is(&p, 1, e, s, "single element");
        is_int(p.offset[0], 3, "offset 0 kept");
        is_int(p.offset[1], 11, "offset 1 kept");
        is_int(p.size, 1, "single element: size 1");
    }
    sw_layout *emp = NULL;
    st = sw_layout_empty(&emp);
    if (ok(st == SW_OK, "empty layout")) {
        const sw_layout *ls[1] = {emp};
        st = sw_plan_build(1, ls, NULL, &p);
        ok(st == SW_OK && p.ndim == 1 && p.extent[0] == 1 && p.size == 1,
           "the empty layout plans as one element");
        sw_layout_unref(emp);
    }

    /* Four operands, the maximum. */
    {
        sw_layout *a = P("(8,5):(1,8)"), *b = P("(8,5):(5,1)");
        sw_layout *c = P("(8,5):(0,1)"), *d = P("((2,4),5):((1,2),8)");
        const sw_layout *ls[4] = {a, b, c, d};
        st = sw_plan_build(4, ls, NULL, &p);
        if (ok(st == SW_OK, "four operands build")) {
            int64_t e[] = {8, 5}, s0[] = {1, 8}, s1[] = {5, 1}, s2[] = {0, 1},
                    s3[] = {1, 8};
            const int64_t *s[] = {s0, s1, s2, s3};
            plan_is(&p, 2, e, s, "four operands");
        }
        sw_layout_unref(a);
        sw_layout_unref(b);
        sw_layout_unref(c);
        sw_layout_unref(d);
    }
    leak_check(base, "plan examples");
}

static void test_plan_errors(void) {
    int64_t base = sw_debug_live_allocs();
    sw_plan p, sentinel;
    memset(&sentinel, 0x5a, sizeof sentinel);

    p = sentinel;
    sw_status st = build2("(2,3):(1,2)", "(3,2):(1,3)", NULL, &p);
    is_str(S(st), "SW_ENOTIMPL", "(2,3) against (3,2) has no refinement");
    ok(strstr(sw_errmsg(), "common refinement") != NULL,
       "the message names the refinement ('%s')", sw_errmsg());
    ok(memcmp(&p, &sentinel, sizeof p) == 0, "failed build leaves *out");

    p = sentinel;
    st = build2("6:1", "4:1", NULL, &p);
    is_str(S(st), "SW_EVALUE", "sizes differ");
    ok(strstr(sw_errmsg(), "same size") != NULL, "message: '%s'", sw_errmsg());
    ok(memcmp(&p, &sentinel, sizeof p) == 0, "size error leaves *out");

    sw_layout *l = P("4:1");
    const sw_layout *ls[5] = {l, l, l, l, l};
    st = sw_plan_build(0, ls, NULL, &p);
    is_str(S(st), "SW_EVALUE", "zero operands refused");
    st = sw_plan_build(5, ls, NULL, &p);
    is_str(S(st), "SW_EVALUE", "five operands refused");
    sw_layout_unref(l);

    /* 17 leaves whose strides never merge: more than 16 modes. */
    {
        char text[512];
        int len = snprintf(text, sizeof text, "(");
        for (int k = 0; k < 17; ++k)
            len += snprintf(text + len, sizeof text - (size_t)len, "%s2",
                            k ? "," : "");
        len += snprintf(text + len, sizeof text - (size_t)len, "):(");
        int64_t s = 1;
        for (int k = 0; k < 17; ++k, s *= 3)
            len += snprintf(text + len, sizeof text - (size_t)len, "%s%lld",
                            k ? "," : "", (long long)s);
        snprintf(text + len, sizeof text - (size_t)len, ")");
        sw_layout *big = P(text);
        const sw_layout *one[1] = {big};
        p = sentinel;
        st = sw_plan_build(1, one, NULL, &p);
        is_str(S(st), "SW_ENOTIMPL", "17 unmergeable modes exceed the plan");
        ok(memcmp(&p, &sentinel, sizeof p) == 0, "too many modes: *out kept");
        /* Exactly 16 fit. */
        sw_layout *m16 = NULL;
        int32_t idx[16];
        for (int k = 0; k < 16; ++k)
            idx[k] = k;
        st = sw_layout_select(big, 16, idx, &m16);
        if (ok(st == SW_OK, "select 16 modes")) {
            const sw_layout *one16[1] = {m16};
            st = sw_plan_build(1, one16, NULL, &p);
            ok(st == SW_OK && p.ndim == 16, "16 unmergeable modes fit");
            sw_layout_unref(m16);
        }
        sw_layout_unref(big);
    }

    /* Offsets the walks would form past INT64_MAX: refused. The walks step
     * one stride past a mode's end, so 2:2^62 followed by a stride-0 mode
     * would reach 2^63. */
    {
        sw_layout *edge = P("(2,3):(4611686018427387904,0)");
        const sw_layout *one[1] = {edge};
        p = sentinel;
        st = sw_plan_build(1, one, NULL, &p);
        is_str(S(st), "SW_EOVERFLOW", "a plan reaching 2^63 is refused");
        is_str(sw_errmsg(),
               "plan operand 0: its offsets overflow 64-bit integers",
               "and the message names the operand");
        ok(memcmp(&p, &sentinel, sizeof p) == 0, "overflow: *out kept");
        sw_plan_leaves lv = sw_plan_leaves_of(edge);
        st = sw_plan_run_leaves(1, &lv, NULL, NULL, NULL, NULL, NULL);
        is_str(S(st), "SW_EOVERFLOW", "the fallback walk refuses it too");
        sw_clear_error();
        /* An offset near INT64_MAX counts. */
        sw_layout *small = P("4:1");
        const int64_t off[2] = {0, INT64_MAX - 4};
        const sw_layout *pair[2] = {small, small};
        st = sw_plan_build(2, pair, off, &p);
        is_str(S(st), "SW_EOVERFLOW", "an offset of INT64_MAX-4 is refused");
        ok(strstr(sw_errmsg(), "operand 1") != NULL, "operand 1 ('%s')",
           sw_errmsg());
        sw_clear_error();
        /* Half of that range is fine, and so is any stride of a leaf
         * that does not move. */
        sw_layout *half = P("(2,3):(2305843009213693952,0)");
        const sw_layout *h1[1] = {half};
        st = sw_plan_build(1, h1, NULL, &p);
        ok(st == SW_OK, "a plan reaching 2^61 + 2^62 is built");
        sw_layout *still =
            P("(1,4,1):(9223372036854775807,1,9223372036854775807)");
        const sw_layout *s1[2] = {still, still};
        st = sw_plan_build(2, s1, NULL, &p);
        ok(st == SW_OK && p.ndim == 1 && p.extent[0] == 4,
           "extent-1 leaves with stride INT64_MAX do not count");
        sw_layout_unref(still);
        /* The offsets of a list step back before stepping past the end. */
        sw_layout *tall = P("(2,2):(4611686018427387904,1)");
        int64_t got[4] = {-1, -1, -1, -1};
        sw_plan_leaves_offsets(sw_plan_leaves_of(tall), 0, 4, got);
        ok(got[0] == 0 && got[1] == (INT64_C(1) << 62) && got[2] == 1 &&
               got[3] == (INT64_C(1) << 62) + 1,
           "offsets of (2,2):(2^62,1) are 0, 2^62, 1, 2^62+1");
        sw_layout_unref(tall);
        sw_layout_unref(half);
        sw_layout_unref(small);
        sw_layout_unref(edge);
    }
    leak_check(base, "plan errors");
}

/* ----------------------------------------------------- walk @post */

/* Records every visited tuple of physical indices. */
typedef struct recorder {
    int32_t nops;
    int64_t n, cap;
    int64_t *tuples; /* n * nops */
    int64_t max_run;
    const int64_t *elsize;
    void *const *base;
} recorder;

static sw_status record_loop(int64_t n, void *const *ptr, const int64_t *step,
                             void *vctx) {
    recorder *r = vctx;
    if (n > r->max_run)
        r->max_run = n;
    for (int64_t j = 0; j < n; ++j) {
        if (r->n >= r->cap)
            return sw_fail(SW_EINDEX, "too many visits");
        for (int32_t k = 0; k < r->nops; ++k) {
            int64_t bytes = (const char *)ptr[k] - (const char *)r->base[k];
            r->tuples[r->n * r->nops + k] = bytes / r->elsize[k] + j * step[k];
        }
        r->n++;
    }
    return SW_OK;
}

static int32_t sort_nops;
static int cmp_tuple(const void *a, const void *b) {
    const int64_t *x = a, *y = b;
    for (int32_t k = 0; k < sort_nops; ++k)
        if (x[k] != y[k])
            return x[k] < y[k] ? -1 : 1;
    return 0;
}

/* The repeat count of the last check_walks (1 when nothing repeats). */
static int64_t last_repeat;

/*
 * Walks the operands four ways (planned if it builds, the fallback,
 * sw_plan_iterate, and sw_plan_iterate skipping repeats) and compares each
 * walk's tuples with the brute-force ones. Returns 1 if all agree; *built
 * says whether a plan was built.
 */
static int check_walks(int32_t nops, sw_layout *const *ls, const int64_t *offs,
                       int *built, const char **why) {
    int64_t size = sw_layout_size(ls[0]);
    int64_t *want = malloc((size_t)(size * nops) * sizeof(int64_t));
    int64_t *got = malloc((size_t)(size * nops + nops) * sizeof(int64_t));
    for (int64_t i = 0; i < size; ++i)
        for (int32_t k = 0; k < nops; ++k)
            want[i * nops + k] = offs[k] + IX(ls[k], i);
    sort_nops = nops;
    qsort(want, (size_t)size, (size_t)nops * sizeof(int64_t), cmp_tuple);

    /* A real arena, so every pointer a walk forms points into it. */
    static const int64_t elsize[SW_PLAN_MAX_OPS] = {4, 4, 4, 4};
    int64_t span = 1;
    for (int32_t k = 0; k < nops; ++k)
        if (offs[k] + sw_layout_cosize(ls[k]) > span)
            span = offs[k] + sw_layout_cosize(ls[k]);
    float *arena = calloc((size_t)span, sizeof(float));
    void *base[SW_PLAN_MAX_OPS] = {arena, arena, arena, arena};
    sw_plan_leaves lv[SW_PLAN_MAX_OPS];
    for (int32_t k = 0; k < nops; ++k)
        lv[k] = sw_plan_leaves_of(ls[k]);
    const sw_layout *cl[SW_PLAN_MAX_OPS];
    for (int32_t k = 0; k < nops; ++k)
        cl[k] = ls[k];

    int good = 1;
    sw_plan plan;
    sw_status st = sw_plan_build(nops, cl, offs, &plan);
    *built = st == SW_OK;
    if (st != SW_OK && st != SW_ENOTIMPL) {
        *why = "unexpected build status";
        good = 0;
    }
    for (int way = 0; way < 3 && good; ++way) {
        if (way == 0 && !*built)
            continue;
        recorder r = {nops, 0, size + 1, got, 0, elsize, base};
        if (way == 0)
            st = sw_plan_run(&plan, base, elsize, record_loop, &r);
        else if (way == 1)
            st = sw_plan_run_leaves(nops, lv, offs, base, elsize, record_loop,
                                    &r);
        else
            st = sw_plan_iterate(nops, lv, offs, base, elsize, 0, record_loop,
                                 &r);
        if (st != SW_OK || r.n != size) {
            *why = way == 0 ? "planned walk count" : "fallback walk count";
            good = 0;
            break;
        }
        qsort(got, (size_t)size, (size_t)nops * sizeof(int64_t), cmp_tuple);
        if (memcmp(got, want, (size_t)(size * nops) * sizeof(int64_t)) != 0) {
            *why = way == 0   ? "planned walk tuples"
                   : way == 1 ? "fallback walk tuples"
                              : "iterate tuples";
            good = 0;
        }
    }
    /* Skipping repeats: each tuple is visited its count / repeat times,
     * so the sorted brute-force list is the walk's, each entry repeated. */
    sw_plan_reduced red;
    st = good ? sw_plan_drop_repeats(nops, lv, &red) : SW_OK;
    if (good && st == SW_OK) {
        recorder r = {nops, 0, size + 1, got, 0, elsize, base};
        st = sw_plan_iterate(nops, lv, offs, base, elsize, SW_PLAN_SKIP_REPEATS,
                             record_loop, &r);
        last_repeat = red.repeat;
        if (st != SW_OK || r.n * red.repeat != size) {
            *why = "skipping walk count";
            good = 0;
        } else {
            qsort(got, (size_t)r.n, (size_t)nops * sizeof(int64_t), cmp_tuple);
            for (int64_t i = 0; i < size && good; ++i)
                for (int32_t k = 0; k < nops; ++k)
                    if (want[i * nops + k] != got[(i / red.repeat) * nops + k])
                        good = 0;
            if (!good)
                *why = "skipping walk tuples";
        }
    } else if (good) {
        *why = "drop_repeats status";
        good = 0;
    }
    free(want);
    free(got);
    free(arena);
    return good;
}

/* A random factorisation of n into leaves (shuffled), at most 6. */
static int32_t factor(int64_t n, int64_t *ext) {
    int32_t k = 0;
    while (n > 1 && k < 5) {
        int64_t d = 2 + rnd_below(4);
        if (n % d != 0) {
            d = n; /* take the rest when it does not divide */
            for (int64_t q = 2; q <= n; ++q)
                if (n % q == 0) {
                    d = q;
                    break;
                }
        }
        ext[k++] = d;
        n /= d;
    }
    if (n > 1)
        ext[k++] = n;
    if (k == 0)
        ext[k++] = 1;
    if (rnd_below(4) == 0) /* an extent-1 leaf now and then */
        ext[k++] = 1;
    for (int32_t i = k - 1; i > 0; --i) {
        int32_t j = (int32_t)rnd_below(i + 1);
        int64_t t = ext[i];
        ext[i] = ext[j];
        ext[j] = t;
    }
    return k;
}

/* Strides: a compact permutation, compact with gaps, or broadcast bits. */
static void strides_for(int32_t n, const int64_t *ext, int64_t *str) {
    int32_t order[8];
    for (int32_t i = 0; i < n; ++i)
        order[i] = i;
    for (int32_t i = n - 1; i > 0; --i) {
        int32_t j = (int32_t)rnd_below(i + 1);
        int32_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    int64_t s = 1 + rnd_below(2);
    int style = (int)rnd_below(4);
    for (int32_t i = 0; i < n; ++i) {
        int32_t m = order[i];
        str[m] = s;
        s *= ext[m] + (style == 1 ? rnd_below(2) : 0);
        if (style == 2 && rnd_below(4) == 0)
            str[m] = 0;
    }
}

static sw_layout *random_layout(int64_t size) {
    int64_t ext[8], str[8];
    int32_t n = factor(size, ext);
    strides_for(n, ext, str);
    /* Nest the first two leaves now and then. */
    int32_t recipe[16], nt = 0;
    int nest = n >= 2 && rnd_below(2);
    for (int32_t i = 0; i < n; ++i) {
        if (nest && i == 0)
            recipe[nt++] = SW_TOK_PUSH;
        recipe[nt++] = SW_TOK_LEAF;
        if (nest && i == 1)
            recipe[nt++] = SW_TOK_POP;
    }
    sw_layout *l = NULL;
    if (sw_layout_from_recipe(nt, recipe, ext, str, &l) != SW_OK) {
        ok(0, "random layout: %s", sw_errmsg());
        exit(1);
    }
    return l;
}

static void test_plan_random(void) {
    int64_t base = sw_debug_live_allocs();
    static const int64_t sizes[] = {1, 2, 6, 12, 24, 30, 36, 48, 64, 72, 120};
    int failures = 0, built = 0, fallback = 0, repeated = 0, trials = 3000;
    for (int t = 0; t < trials; ++t) {
        int64_t size = sizes[rnd_below(11)];
        int32_t nops = 1 + (int32_t)rnd_below(SW_PLAN_MAX_OPS);
        sw_layout *ls[SW_PLAN_MAX_OPS];
        int64_t offs[SW_PLAN_MAX_OPS];
        for (int32_t k = 0; k < nops; ++k) {
            /* Often reuse operand 0's layout, as elementwise ops do. */
            ls[k] = (k > 0 && rnd_below(3) == 0) ? sw_layout_retain(ls[0])
                                                 : random_layout(size);
            offs[k] = rnd_below(5);
        }
        int b = 0;
        const char *why = "";
        if (!check_walks(nops, ls, offs, &b, &why)) {
            if (failures++ < 5) {
                char buf[256];
                for (int32_t k = 0; k < nops; ++k) {
                    sw_layout_format(ls[k], buf, sizeof buf);
                    diag("trial %d operand %d: %s + %lld", t, (int)k, buf,
                         (long long)offs[k]);
                }
                diag("failed: %s", why);
            }
        }
        built += b;
        fallback += !b;
        repeated += last_repeat > 1;
        for (int32_t k = 0; k < nops; ++k)
            sw_layout_unref(ls[k]);
    }
    is_int(failures, 0,
           "%d random operand sets: every walk visits exactly the tuples "
           "(offset + layout(i)) (%d planned, %d fallback only)",
           trials, built, fallback);
    ok(built > trials / 2 && fallback > 10,
       "the random sets exercise both the plans and the fallback");
    ok(repeated > 20,
       "the random sets exercise skipped repeats (%d with a repeat)", repeated);

    /* Blocked walks: transposing pairs large enough to be tiled. */
    static const char *const pairs[][2] = {
        {"(100,70):(1,100)", "(100,70):(70,1)"},
        {"(300,90):(1,300)", "(300,90):(90,1)"},
        {"(130,(3,40)):(1,(130,390))", "(130,(3,40)):(120,(1,3))"},
        {"(65,66,3):(1,65,4290)", "(65,66,3):(198,3,1)"}};
    for (int i = 0; i < 4; ++i) {
        sw_layout *ls[2] = {P(pairs[i][0]), P(pairs[i][1])};
        int64_t offs[2] = {2, 7};
        int b = 0;
        const char *why = "";
        int good = check_walks(2, ls, offs, &b, &why);
        ok(good && b, "blocked walk of %s against %s visits every tuple",
           pairs[i][0], pairs[i][1]);
        if (!good)
            diag("%s", why);
        /* The blocked walk's runs are at most SW_PLAN_BLOCK0 long. */
        sw_plan plan;
        const sw_layout *cl[2] = {ls[0], ls[1]};
        if (sw_plan_build(2, cl, offs, &plan) == SW_OK) {
            int64_t cap = sw_layout_size(ls[0]) * 2 + 2;
            int64_t *buf = malloc((size_t)cap * sizeof(int64_t));
            static const int64_t elsize[2] = {4, 4};
            int64_t span =
                10 + sw_layout_cosize(ls[0]) + sw_layout_cosize(ls[1]);
            float *arena = calloc((size_t)span, sizeof(float));
            void *basep[2] = {arena, arena};
            recorder r = {2, 0, cap / 2, buf, 0, elsize, basep};
            sw_plan_run(&plan, basep, elsize, record_loop, &r);
            ok(r.max_run <= SW_PLAN_BLOCK0, "blocked runs are short (%lld)",
               (long long)r.max_run);
            free(buf);
            free(arena);
        }
        sw_layout_unref(ls[0]);
        sw_layout_unref(ls[1]);
    }

    /* Offsets of a leaf list: every start and count of a hierarchy. */
    {
        sw_layout *l = P("((3,2),(1,4),5):((7,1),(99,20),200)");
        sw_plan_leaves lv = sw_plan_leaves_of(l);
        int64_t n = sw_layout_size(l), out[200];
        int good = 1;
        for (int64_t start = 0; start < n && good; start += 7)
            for (int64_t count = 0; start + count <= n && count < 50;
                 count += 3) {
                sw_plan_leaves_offsets(lv, start, count, out);
                for (int64_t t = 0; t < count; ++t)
                    good &= out[t] == IX(l, start + t);
            }
        ok(good, "sw_plan_leaves_offsets matches layout(i) on every range");
        sw_plan_leaves m1 = sw_plan_leaves_mode(l, 1);
        is_int(sw_plan_leaves_size(m1), 4, "leaves of mode 1: size 4");
        sw_layout_unref(l);
    }
    leak_check(base, "plan walks");
}

/* --------------------------------------------------------- elementwise */

/* The layouts elementwise kernels are checked on (all of 120 elements). */
typedef struct case_layout {
    const char *text;
    int64_t off;
} case_layout;

static const case_layout ew_layouts[] = {
    {"120:1", 0},                        /* compact */
    {"(8,15):(1,8)", 3},                 /* compact, offset */
    {"(8,15):(15,1)", 0},                /* transposed */
    {"(8,15):(2,19)", 1},                /* strided with holes */
    {"((2,4),(3,5)):((1,6),(2,24))", 0}, /* tiled (hierarchical) */
    {"((4,2),15):((2,1),8)", 2},         /* permuted inner tile */
    {"(8,(5,3)):(3,(24,120))", 5},       /* hierarchical, holes */
    {"(2,3,4,5):(60,20,5,1)", 0},        /* reversed order */
};
#define N_EW_LAYOUTS (int)(sizeof ew_layouts / sizeof ew_layouts[0])

/* Float reference of one element, written independently of the kernel. */
/*
 * Float32 pow as elementwise.c documents it: the exponents 0, 1, 2, 3,
 * 0.5 and -1 by fixed expressions, the others through powf.
 */
static float ref_pow(float x, float e) {
    if (e == 0.0f)
        return 1.0f;
    if (e == 1.0f)
        return x;
    if (e == 2.0f)
        return x * x;
    if (e == 3.0f)
        return x * x * x;
    if (e == 0.5f)
        return x == -INFINITY ? INFINITY : sqrtf(x) + 0.0f;
    if (e == -1.0f)
        return 1.0f / x;
    return powf(x, e);
}

static float ref_elem(sw_kelem op, float a, float b, float c, float s) {
    switch (op) {
    case SW_KELEM_ADD:
        return a + b;
    case SW_KELEM_SUB:
        return a - b;
    case SW_KELEM_MUL:
        return a * b;
    case SW_KELEM_DIV:
        return a / b;
    case SW_KELEM_NEG:
        return -a;
    case SW_KELEM_MUL_SCALAR:
        return a * s;
    case SW_KELEM_POW_SCALAR:
        return ref_pow(a, s);
    case SW_KELEM_POW_GRAD:
        return s == 0.0f ? 0.0f : a * s * ref_pow(b, s - 1.0f);
    case SW_KELEM_DIV_GRAD_RHS: {
        float na = -a;
        return na * b / (c * c);
    }
    default:
        return NAN;
    }
}

static const char *const elem_names[] = {
    "add",        "sub",        "mul",      "div",         "neg",
    "mul_scalar", "pow_scalar", "pow_grad", "div_grad_rhs"};

/*
 * Runs one elementwise op on the given operands and compares every
 * element with the float reference (exactly) and the holes with the
 * sentinel. Inputs may be Float32 or Int32.
 */
static int check_elem(sw_kelem op, opnd *out, opnd *in, int32_t arity, float s,
                      const char *what) {
    sw_karg ka[3];
    for (int32_t k = 0; k < arity; ++k)
        ka[k] = K(&in[k]);
    sw_kscalar sc = {s, 0};
    sw_status st = sw_kernel_elementwise(op, K(out), ka, sc);
    if (!ok(st == SW_OK, "%s %s runs", elem_names[op], what)) {
        diag("%s: %s", S(st), sw_errmsg());
        return 0;
    }
    int64_t n = size_of(out), bad = -1;
    float got = 0, want = 0;
    for (int64_t i = 0; i < n && bad < 0; ++i) {
        float a = getf(&in[0], i);
        float b = arity > 1 ? getf(&in[1], i) : 0.0f;
        float c = arity > 2 ? getf(&in[2], i) : 0.0f;
        want = ref_elem(op, a, b, c, s);
        got = getf(out, i);
        if (!same_float(got, want))
            bad = i;
    }
    int good =
        ok(bad < 0, "%s %s: every element matches", elem_names[op], what);
    if (!good)
        diag("element %lld: got %.9g, want %.9g", (long long)bad, got, want);
    good &= holes_untouched(out, what);
    return good;
}

static void test_elementwise_f32(void) {
    int64_t base = sw_debug_live_allocs();
    /* Every op on every layout, inputs in the same layout as the output
     * (as the operations require) and, for binary ops, in other ones. */
    for (int op = 0; op < SW_KELEM_COUNT; ++op) {
        int32_t arity = sw_kelem_arity((sw_kelem)op);
        float s = op == SW_KELEM_POW_SCALAR ? 3.0f
                  : op == SW_KELEM_POW_GRAD ? 2.5f
                                            : -1.75f;
        int good = 1;
        for (int li = 0; li < N_EW_LAYOUTS; ++li) {
            const case_layout *c = &ew_layouts[li];
            const case_layout *c2 = &ew_layouts[(li + 3) % N_EW_LAYOUTS];
            opnd out = mk(c->text, c->off, SW_DTYPE_FLOAT32, 1);
            opnd in[3];
            for (int32_t k = 0; k < arity; ++k) {
                const case_layout *ck = k == 1 ? c2 : c;
                in[k] = mk(ck->text, ck->off + k, SW_DTYPE_FLOAT32, 0);
            }
            if (op == SW_KELEM_POW_GRAD) /* keep x**1.5 real */
                for (int64_t i = 0; i < size_of(&in[1]); ++i)
                    setf(&in[1], i, fabsf(getf(&in[1], i)));
            char what[160];
            snprintf(what, sizeof what, "on %s (+%lld)", c->text,
                     (long long)c->off);
            good &= check_elem((sw_kelem)op, &out, in, arity, s, what);
            rm(&out);
            for (int32_t k = 0; k < arity; ++k)
                rm(&in[k]);
        }
        ok(good, "%s: all layouts", elem_names[op]);
    }

    /* Stride-0 (broadcast) inputs, and a scalar-like 1-element source. */
    {
        opnd out = mk("(8,15):(1,8)", 0, SW_DTYPE_FLOAT32, 1);
        opnd in[2] = {mk("(8,15):(1,8)", 0, SW_DTYPE_FLOAT32, 0),
                      mk("(8,15):(1,0)", 2, SW_DTYPE_FLOAT32, 0)};
        check_elem(SW_KELEM_MUL, &out, in, 2, 0, "with a row broadcast");
        rm(&in[1]);
        in[1] = mk("(8,15):(0,0)", 4, SW_DTYPE_FLOAT32, 0);
        check_elem(SW_KELEM_SUB, &out, in, 2, 0, "with a scalar broadcast");
        rm(&out);
        rm(&in[0]);
        rm(&in[1]);
    }

    /* Operands without a common refinement take the fallback walk. */
    {
        opnd out = mk("(6,(2,5)):(1,(6,12))", 0, SW_DTYPE_FLOAT32, 1);
        opnd in[2] = {mk("(4,15):(15,1)", 1, SW_DTYPE_FLOAT32, 0),
                      mk("(5,4,3):(1,5,20)", 0, SW_DTYPE_FLOAT32, 0)};
        check_elem(SW_KELEM_ADD, &out, in, 2, 0, "without common refinement");
        rm(&out);
        rm(&in[0]);
        rm(&in[1]);
    }

    /* Long walks: chunks, tails, blocked transposition, in place. */
    {
        opnd out = mk("1003:1", 1, SW_DTYPE_FLOAT32, 1);
        opnd in[3] = {mk("1003:1", 0, SW_DTYPE_FLOAT32, 0),
                      mk("1003:1", 3, SW_DTYPE_FLOAT32, 0),
                      mk("1003:1", 2, SW_DTYPE_FLOAT32, 0)};
        for (int op = 0; op < SW_KELEM_COUNT; ++op)
            check_elem((sw_kelem)op, &out, in, sw_kelem_arity((sw_kelem)op),
                       2.0f, "on 1003 contiguous");
        rm(&out);
        for (int k = 0; k < 3; ++k)
            rm(&in[k]);

        out = mk("(130,90):(1,130)", 0, SW_DTYPE_FLOAT32, 1);
        in[0] = mk("(130,90):(90,1)", 0, SW_DTYPE_FLOAT32, 0);
        in[1] = mk("(130,90):(90,1)", 5, SW_DTYPE_FLOAT32, 0);
        check_elem(SW_KELEM_ADD, &out, in, 2, 0, "transposed into compact");
        rm(&out);
        rm(&in[0]);
        rm(&in[1]);

        /* In place: out is the same storage, offset and layout as in0. */
        opnd x = mk("(40,25):(25,1)", 2, SW_DTYPE_FLOAT32, 0);
        opnd y = mk("(40,25):(25,1)", 0, SW_DTYPE_FLOAT32, 0);
        float *before = malloc((size_t)x.cap * sizeof(float));
        memcpy(before, x.data, (size_t)x.cap * sizeof(float));
        sw_karg ka[2] = {K(&x), K(&y)};
        sw_kscalar sc = {0, 0};
        sw_status st = sw_kernel_elementwise(SW_KELEM_MUL, K(&x), ka, sc);
        int good = st == SW_OK;
        for (int64_t i = 0; i < size_of(&x) && good; ++i) {
            int64_t p = pos(&x, i);
            good = getf(&x, i) == before[p] * getf(&y, i);
        }
        ok(good, "in-place mul");
        free(before);
        rm(&x);
        rm(&y);
    }

    /* The streaming store path: operands totalling more than 40 MiB. */
    {
        int64_t n = (int64_t)3 << 20;
        char text[64];
        snprintf(text, sizeof text, "%lld:1", (long long)n);
        opnd out = mk(text, 1, SW_DTYPE_FLOAT32, 1); /* unaligned start */
        opnd in[2] = {mk(text, 0, SW_DTYPE_FLOAT32, 0),
                      mk(text, 2, SW_DTYPE_FLOAT32, 0)};
        check_elem(SW_KELEM_ADD, &out, in, 2, 0, "on 3M contiguous");
        check_elem(SW_KELEM_DIV, &out, in, 2, 0, "on 3M contiguous");
        rm(&out);
        rm(&in[0]);
        rm(&in[1]);
    }

    /* Int32 inputs are read as float, staged in pieces of 256. */
    {
        opnd out = mk("(30,31):(31,1)", 0, SW_DTYPE_FLOAT32, 1);
        opnd in[3] = {mk("(30,31):(31,1)", 1, SW_DTYPE_INT32, 0),
                      mk("(30,31):(31,1)", 0, SW_DTYPE_FLOAT32, 0),
                      mk("(30,31):(0,1)", 0, SW_DTYPE_INT32, 0)};
        for (int64_t i = 0; i < size_of(&in[2]); ++i)
            if (geti(&in[2], i) == 0)
                seti(&in[2], i, 3);
        check_elem(SW_KELEM_ADD, &out, in, 2, 0, "Int32 + Float32");
        check_elem(SW_KELEM_DIV_GRAD_RHS, &out, in, 3, 0,
                   "Int32, Float32, broadcast Int32");
        opnd io[2] = {in[0], in[2]};
        check_elem(SW_KELEM_DIV, &out, io, 2, 0, "Int32 / Int32 -> Float32");
        check_elem(SW_KELEM_MUL_SCALAR, &out, in, 1, 0.5f,
                   "Int32 * 0.5 -> Float32");
        check_elem(SW_KELEM_POW_SCALAR, &out, in, 1, 0.5f,
                   "Int32 ** 0.5 -> Float32");
        rm(&out);
        for (int k = 0; k < 3; ++k)
            rm(&in[k]);
    }

    /* pow_grad with exponent 0 is 0 even at x == 0. */
    {
        opnd out = mk("4:1", 0, SW_DTYPE_FLOAT32, 1);
        opnd in[2] = {mk("4:1", 0, SW_DTYPE_FLOAT32, 0),
                      mk("4:1", 0, SW_DTYPE_FLOAT32, 0)};
        for (int64_t i = 0; i < 4; ++i)
            setf(&in[1], i, 0.0f);
        check_elem(SW_KELEM_POW_GRAD, &out, in, 2, 0.0f, "at x=0, e=0");
        ok(getf(&out, 0) == 0.0f, "d/dx x**0 at 0 is 0");
        rm(&out);
        rm(&in[0]);
        rm(&in[1]);
    }
    leak_check(base, "elementwise Float32");
}

/*
 * pow by the fixed exponents, forward and backward, bit for bit against
 * their documented expressions (elementwise.c), over special values and
 * a long contiguous run (the vectorised loop) and a strided one. powf
 * rounds x**3 once where x*x*x rounds twice, so the old powf path fails
 * the x**3 rows.
 */
static void test_pow_fixed(void) {
    int64_t base = sw_debug_live_allocs();
    static const float exps[] = {0.0f, 1.0f, 2.0f, 3.0f, 0.5f, -1.0f};
    static const float grads[] = {1.0f, 2.0f, 3.0f, 4.0f, 1.5f, 0.0f};
    const char *lays[2] = {"1000:1", "(10,100):(100,1)"};
    for (int li = 0; li < 2; ++li) {
        opnd x = mk(lays[li], 0, SW_DTYPE_FLOAT32, 0);
        opnd g = mk(lays[li], 0, SW_DTYPE_FLOAT32, 0);
        opnd out = mk(lays[li], 0, SW_DTYPE_FLOAT32, 1);
        static const float special[] = {0.0f,   -0.0f, INFINITY,     -INFINITY,
                                        NAN,    -2.0f, 0x1p-140f,    1e20f,
                                        -1e13f, 1.0f,  0x1.000002p0f};
        for (int64_t i = 0; i < 1000; ++i) {
            float v = i < 11 ? special[i]
                             : (float)((i * 7919) % 20011 - 10005) / 997.0f;
            setf(&x, i, v);
            setf(&g, i, 1.0f + (float)(i % 7) / 4.0f);
        }
        for (int k = 0; k < 6; ++k) {
            sw_karg in[2] = {K(&x)};
            sw_kscalar sc = {exps[k], 0};
            sw_status st =
                sw_kernel_elementwise(SW_KELEM_POW_SCALAR, K(&out), in, sc);
            int good = st == SW_OK;
            for (int64_t i = 0; i < 1000 && good; ++i) {
                float want = ref_pow(getf(&x, i), exps[k]), got = getf(&out, i);
                good = memcmp(&want, &got, sizeof got) == 0 ||
                       (isnan(want) && isnan(got));
                if (!good)
                    diag("%a ** %g = %a, want %a", (double)getf(&x, i),
                         (double)exps[k], (double)got, (double)want);
            }
            ok(good, "pow(x, %g) on %s is its documented expression",
               (double)exps[k], lays[li]);
            sw_karg gin[2] = {K(&g), K(&x)};
            sc.f = grads[k];
            st = sw_kernel_elementwise(SW_KELEM_POW_GRAD, K(&out), gin, sc);
            good = st == SW_OK;
            for (int64_t i = 0; i < 1000 && good; ++i) {
                float s = grads[k],
                      want = s == 0.0f ? 0.0f
                                       : getf(&g, i) * s *
                                             ref_pow(getf(&x, i), s - 1.0f);
                float got = getf(&out, i);
                good = memcmp(&want, &got, sizeof got) == 0 ||
                       (isnan(want) && isnan(got));
            }
            ok(good, "pow gradient with e = %g on %s", (double)grads[k],
               lays[li]);
        }
        rm(&x);
        rm(&g);
        rm(&out);
    }
    /* The special values of x**0.5 follow powf, not sqrtf. */
    {
        opnd x = mk("3:1", 0, SW_DTYPE_FLOAT32, 0);
        opnd out = mk("3:1", 0, SW_DTYPE_FLOAT32, 1);
        setf(&x, 0, -0.0f);
        setf(&x, 1, -INFINITY);
        setf(&x, 2, NAN);
        sw_karg in[1] = {K(&x)};
        sw_kscalar sc = {0.5, 0};
        sw_status st =
            sw_kernel_elementwise(SW_KELEM_POW_SCALAR, K(&out), in, sc);
        ok(st == SW_OK && getf(&out, 0) == 0.0f && !signbit(getf(&out, 0)) &&
               getf(&out, 1) == INFINITY && isnan(getf(&out, 2)),
           "(-0)**0.5 = +0, (-inf)**0.5 = +inf, nan**0.5 = nan");
        sc.f = 0.0;
        st = sw_kernel_elementwise(SW_KELEM_POW_SCALAR, K(&out), in, sc);
        ok(st == SW_OK && getf(&out, 2) == 1.0f, "nan**0 = 1");
        rm(&x);
        rm(&out);
    }
    leak_check(base, "pow by fixed exponents");
}

static int64_t ref_i32(sw_kelem op, int64_t a, int64_t b, int64_t s, int *bad) {
    int64_t r = 0;
    switch (op) {
    case SW_KELEM_ADD:
        r = a + b;
        break;
    case SW_KELEM_SUB:
        r = a - b;
        break;
    case SW_KELEM_MUL:
        r = a * b;
        break;
    case SW_KELEM_NEG:
        r = -a;
        break;
    case SW_KELEM_MUL_SCALAR:
        if (__builtin_mul_overflow(a, s, &r)) {
            *bad = 1;
            return 0;
        }
        break;
    case SW_KELEM_POW_SCALAR:
        /* The true value: |a| <= 1 directly, else until out of range. */
        if (s == 0)
            r = 1;
        else if (a == 0 || a == 1)
            r = a;
        else if (a == -1)
            r = (s % 2) ? -1 : 1;
        else {
            r = 1;
            for (int64_t t = 0; t < s && r >= INT32_MIN && r <= INT32_MAX; ++t)
                r *= a;
        }
        break;
    default:
        break;
    }
    *bad = r < INT32_MIN || r > INT32_MAX;
    return r;
}

/* One Int32 elementwise op on one-element operands: value or overflow. */
static void int32_case(sw_kelem op, int32_t a, int32_t b, int64_t s) {
    opnd out = mk("1:1", 0, SW_DTYPE_INT32, 1);
    opnd in[2] = {mk("1:1", 0, SW_DTYPE_INT32, 0),
                  mk("1:1", 0, SW_DTYPE_INT32, 0)};
    seti(&in[0], 0, a);
    seti(&in[1], 0, b);
    sw_karg ka[2] = {K(&in[0]), K(&in[1])};
    sw_kscalar sc = {0, s};
    int bad = 0;
    int64_t want = ref_i32(op, a, b, s, &bad);
    sw_status st = sw_kernel_elementwise(op, K(&out), ka, sc);
    if (bad) {
        is_str(S(st), "SW_EOVERFLOW", "Int32 %s(%d, %d; %lld) overflows",
               elem_names[op], (int)a, (int)b, (long long)s);
        is_str(sw_errmsg(), "CPU Int32 operation result is out of int32 range",
               "  with the documented message");
    } else {
        ok(st == SW_OK && geti(&out, 0) == want,
           "Int32 %s(%d, %d; %lld) == %lld", elem_names[op], (int)a, (int)b,
           (long long)s, (long long)want);
    }
    rm(&out);
    rm(&in[0]);
    rm(&in[1]);
}

static void test_elementwise_i32(void) {
    int64_t base = sw_debug_live_allocs();
    static const sw_kelem ops[] = {SW_KELEM_ADD,        SW_KELEM_SUB,
                                   SW_KELEM_MUL,        SW_KELEM_NEG,
                                   SW_KELEM_MUL_SCALAR, SW_KELEM_POW_SCALAR};
    /* Every op on every layout, exact. */
    for (int oi = 0; oi < 6; ++oi) {
        sw_kelem op = ops[oi];
        int32_t arity = sw_kelem_arity(op);
        int64_t s = op == SW_KELEM_POW_SCALAR ? 3 : -7;
        int good = 1;
        for (int li = 0; li < N_EW_LAYOUTS; ++li) {
            const case_layout *c = &ew_layouts[li];
            const case_layout *c2 = &ew_layouts[(li + 5) % N_EW_LAYOUTS];
            opnd out = mk(c->text, c->off, SW_DTYPE_INT32, 1);
            opnd in[2] = {mk(c->text, c->off, SW_DTYPE_INT32, 0),
                          mk(c2->text, c2->off + 1, SW_DTYPE_INT32, 0)};
            sw_karg ka[2] = {K(&in[0]), K(&in[1])};
            sw_kscalar sc = {0, s};
            sw_status st = sw_kernel_elementwise(op, K(&out), ka, sc);
            good &= st == SW_OK;
            for (int64_t i = 0; i < size_of(&out) && good; ++i) {
                int bad = 0;
                int64_t want =
                    ref_i32(op, geti(&in[0], i),
                            arity > 1 ? geti(&in[1], i) : 0, s, &bad);
                good &= !bad && geti(&out, i) == want;
            }
            good &= holes_untouched(&out, c->text);
            rm(&out);
            rm(&in[0]);
            rm(&in[1]);
        }
        ok(good, "Int32 %s: all layouts exact", elem_names[op]);
    }

    /* The int32 range edges. */
    int32_case(SW_KELEM_ADD, INT32_MAX, 0, 0);
    int32_case(SW_KELEM_ADD, INT32_MAX, 1, 0);
    int32_case(SW_KELEM_ADD, INT32_MIN, -1, 0);
    int32_case(SW_KELEM_SUB, INT32_MIN, 1, 0);
    int32_case(SW_KELEM_SUB, -1, INT32_MAX, 0);
    int32_case(SW_KELEM_SUB, -2, INT32_MAX, 0);
    int32_case(SW_KELEM_MUL, 65536, 32768, 0);
    int32_case(SW_KELEM_MUL, -65536, 32768, 0);
    int32_case(SW_KELEM_MUL, 65536, 65536, 0);
    int32_case(SW_KELEM_NEG, INT32_MAX, 0, 0);
    int32_case(SW_KELEM_NEG, INT32_MIN, 0, 0);
    int32_case(SW_KELEM_MUL_SCALAR, 3, 0, 715827882);
    int32_case(SW_KELEM_MUL_SCALAR, 3, 0, 715827883);
    int32_case(SW_KELEM_MUL_SCALAR, 2, 0, INT64_MAX);
    int32_case(SW_KELEM_MUL_SCALAR, 0, 0, INT64_MAX);
    int32_case(SW_KELEM_MUL_SCALAR, -1, 0, INT64_MIN);
    int32_case(SW_KELEM_POW_SCALAR, 3, 0, 19);
    int32_case(SW_KELEM_POW_SCALAR, 3, 0, 20);
    int32_case(SW_KELEM_POW_SCALAR, 3, 0, 40);
    int32_case(SW_KELEM_POW_SCALAR, -2, 0, 31);
    int32_case(SW_KELEM_POW_SCALAR, 2, 0, 31);
    int32_case(SW_KELEM_POW_SCALAR, 0, 0, 0);
    int32_case(SW_KELEM_POW_SCALAR, 5, 0, 0);
    int32_case(SW_KELEM_POW_SCALAR, -1, 0, INT64_MAX);
    int32_case(SW_KELEM_POW_SCALAR, -1, 0, INT64_MAX - 1);
    int32_case(SW_KELEM_POW_SCALAR, 1, 0, (int64_t)1 << 60);
    int32_case(SW_KELEM_POW_SCALAR, 0, 0, (int64_t)1 << 60);
    int32_case(SW_KELEM_POW_SCALAR, 2, 0, (int64_t)1 << 60);
    int32_case(SW_KELEM_POW_SCALAR, 16777215, 0, 1);

    /* An overflow in the middle of a long walk is still reported. */
    {
        opnd out = mk("(50,40):(40,1)", 0, SW_DTYPE_INT32, 1);
        opnd in[2] = {mk("(50,40):(40,1)", 0, SW_DTYPE_INT32, 0),
                      mk("(50,40):(40,1)", 0, SW_DTYPE_INT32, 0)};
        seti(&in[0], 1234, INT32_MAX - 5);
        seti(&in[1], 1234, 6);
        sw_karg ka[2] = {K(&in[0]), K(&in[1])};
        sw_kscalar sc = {0, 0};
        sw_status st = sw_kernel_elementwise(SW_KELEM_ADD, K(&out), ka, sc);
        is_str(S(st), "SW_EOVERFLOW", "overflow at element 1234 of 2000");
        rm(&out);
        rm(&in[0]);
        rm(&in[1]);
    }
    leak_check(base, "elementwise Int32");
}

static void test_elementwise_errors(void) {
    int64_t base = sw_debug_live_allocs();
    opnd f = mk("(4,5):(1,4)", 0, SW_DTYPE_FLOAT32, 1);
    opnd g = mk("(4,6):(1,4)", 0, SW_DTYPE_FLOAT32, 0);
    opnd i = mk("(4,5):(1,4)", 0, SW_DTYPE_INT32, 0);
    opnd b = mk("(4,5):(1,4)", 0, SW_DTYPE_BOOL, 0);
    sw_kscalar sc = {0, 0};
    sw_status st;

    sw_karg in1[2] = {K(&f), K(&g)};
    st = sw_kernel_elementwise(SW_KELEM_ADD, K(&f), in1, sc);
    is_str(S(st), "SW_EVALUE", "sizes 20 and 24 refused");
    ok(strstr(sw_errmsg(), "24") != NULL, "message: '%s'", sw_errmsg());

    sw_karg in2[2] = {K(&f), K(&b)};
    st = sw_kernel_elementwise(SW_KELEM_ADD, K(&f), in2, sc);
    is_str(S(st), "SW_ETYPE", "a Bool input refused");

    sw_karg in3[2] = {K(&i), K(&i)};
    st = sw_kernel_elementwise(SW_KELEM_DIV, K(&i), in3, sc);
    is_str(S(st), "SW_ETYPE", "Int32 div has no Int32 output");

    sw_karg in4[2] = {K(&i), K(&f)};
    st = sw_kernel_elementwise(SW_KELEM_ADD, K(&i), in4, sc);
    is_str(S(st), "SW_ETYPE", "Int32 output with a Float32 input refused");

    st = sw_kernel_elementwise(SW_KELEM_ADD, K(&b), in3, sc);
    is_str(S(st), "SW_ETYPE", "Bool output refused");

    st = sw_kernel_elementwise((sw_kelem)42, K(&f), in3, sc);
    is_str(S(st), "SW_EVALUE", "unknown op refused");

    sw_kscalar neg = {0, -1};
    st = sw_kernel_elementwise(SW_KELEM_POW_SCALAR, K(&i), in3, neg);
    is_str(S(st), "SW_EVALUE", "negative Int32 exponent refused");

    rm(&f);
    rm(&g);
    rm(&i);
    rm(&b);
    leak_check(base, "elementwise errors");
}

/* --------------------------------------------------------- activation */

static const char *const act_names[] = {"exp",      "relu", "sigmoid",
                                        "tanh",     "gelu", "silu",
                                        "softplus", "elu",  "leaky_relu"};

static double sigmoid_d(double x) {
    return 1.0 / (1.0 + exp(-x));
}

/* The §12.4 formulas in double. */
static double ref_act(sw_kact op, double x) {
    switch (op) {
    case SW_KACT_EXP:
        return exp(x);
    case SW_KACT_RELU:
        return x > 0 ? x : 0;
    case SW_KACT_SIGMOID:
        return sigmoid_d(x);
    case SW_KACT_TANH:
        return tanh(x);
    case SW_KACT_GELU:
        return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
    case SW_KACT_SILU:
        return x * sigmoid_d(x);
    case SW_KACT_SOFTPLUS:
        return log1p(exp(-fabs(x))) + (x > 0 ? x : 0);
    case SW_KACT_ELU:
        return x > 0 ? x : expm1(x);
    case SW_KACT_LEAKY_RELU:
        return x >= 0 ? x : 0.01 * x;
    default:
        return NAN;
    }
}

/* The §4.6 gradients in double. */
static double ref_grad(sw_kact op, double g, double x) {
    double s = sigmoid_d(x);
    switch (op) {
    case SW_KACT_EXP:
        return g * exp(x);
    case SW_KACT_RELU:
        return x > 0 ? g : 0;
    case SW_KACT_SIGMOID:
        return g * s * (1 - s);
    case SW_KACT_TANH:
        return g * (1 - tanh(x) * tanh(x));
    case SW_KACT_GELU:
        return g * (0.5 * (1 + erf(x / sqrt(2.0))) +
                    x * exp(-x * x / 2) / sqrt(2 * 3.14159265358979323846));
    case SW_KACT_SILU:
        return g * (s + x * s * (1 - s));
    case SW_KACT_SOFTPLUS:
        return g * s;
    case SW_KACT_ELU:
        return x > 0 ? g : g * exp(x);
    case SW_KACT_LEAKY_RELU:
        return x >= 0 ? g : 0.01 * g;
    default:
        return NAN;
    }
}

/* Spreads inputs over [-12, 12] so every branch and tail is exercised. */
static void widen(opnd *x) {
    for (int64_t i = 0; i < size_of(x); ++i)
        setf(x, i, getf(x, i) * 6.0f);
}

static void test_activation(void) {
    int64_t base = sw_debug_live_allocs();
    for (int op = 0; op < SW_KACT_COUNT; ++op) {
        int fgood = 1, bgood = 1, ygood = 1;
        for (int li = 0; li < N_EW_LAYOUTS; ++li) {
            const case_layout *c = &ew_layouts[li];
            const case_layout *c2 = &ew_layouts[(li + 2) % N_EW_LAYOUTS];
            opnd out = mk(c->text, c->off, SW_DTYPE_FLOAT32, 1);
            opnd x = mk(c2->text, c2->off, SW_DTYPE_FLOAT32, 0);
            widen(&x);
            sw_status st = sw_kernel_activation((sw_kact)op, K(&out), K(&x));
            fgood &= st == SW_OK;
            int64_t n = size_of(&out);
            for (int64_t i = 0; i < n && fgood; ++i)
                if (!close_to(getf(&out, i),
                              ref_act((sw_kact)op, getf(&x, i)))) {
                    fgood = 0;
                    diag("%s(%.9g) = %.9g, want %.9g", act_names[op],
                         getf(&x, i), getf(&out, i),
                         ref_act((sw_kact)op, getf(&x, i)));
                }
            fgood &= holes_untouched(&out, c->text);

            /* Backward from x alone, and from x with y = f(x). */
            opnd g = mk(c->text, 0, SW_DTYPE_FLOAT32, 0);
            opnd dx = mk(c2->text, 1, SW_DTYPE_FLOAT32, 1);
            st = sw_kernel_activation_backward((sw_kact)op, K(&dx), K(&g),
                                               K(&x), NULL);
            bgood &= st == SW_OK;
            for (int64_t i = 0; i < n && bgood; ++i) {
                double want = ref_grad((sw_kact)op, getf(&g, i), getf(&x, i));
                if (!close_to(getf(&dx, i), want)) {
                    bgood = 0;
                    diag("%s'(%.9g)*%.9g = %.9g, want %.9g", act_names[op],
                         getf(&x, i), getf(&g, i), getf(&dx, i), want);
                }
            }
            bgood &= holes_untouched(&dx, c2->text);
            float *first = malloc((size_t)dx.cap * sizeof(float));
            memcpy(first, dx.data, (size_t)dx.cap * sizeof(float));
            sw_karg ky = K(&out);
            st = sw_kernel_activation_backward((sw_kact)op, K(&dx), K(&g),
                                               K(&x), &ky);
            ygood &= st == SW_OK && memcmp(first, dx.data,
                                           (size_t)dx.cap * sizeof(float)) == 0;
            free(first);
            rm(&out);
            rm(&x);
            rm(&g);
            rm(&dx);
        }
        ok(fgood, "%s forward on all layouts", act_names[op]);
        ok(bgood, "%s backward on all layouts", act_names[op]);
        ok(ygood, "%s backward from y gives the same values", act_names[op]);
    }

    /* Extremes: stable sigmoid and softplus, signed zeros, infinities. */
    {
        static const float xs[] = {-100.0f,   -88.0f,  -20.0f, -0.0f,
                                   0.0f,      20.0f,   88.0f,  100.0f,
                                   -INFINITY, INFINITY};
        opnd x = mk("10:1", 0, SW_DTYPE_FLOAT32, 0);
        opnd out = mk("10:1", 0, SW_DTYPE_FLOAT32, 1);
        for (int i = 0; i < 10; ++i)
            setf(&x, i, xs[i]);
        for (int op = 0; op < SW_KACT_COUNT; ++op) {
            sw_status st = sw_kernel_activation((sw_kact)op, K(&out), K(&x));
            int good = st == SW_OK;
            for (int i = 0; i < 10 && good; ++i) {
                double want = ref_act((sw_kact)op, xs[i]);
                if (op == SW_KACT_EXP && want > FLT_MAX)
                    want = INFINITY;
                /* x * (something tending to 0): the limit, not -inf * 0. */
                if ((op == SW_KACT_GELU || op == SW_KACT_SILU) &&
                    xs[i] == -INFINITY)
                    want = 0.0;
                good = close_to(getf(&out, i), want);
                if (!good)
                    diag("%s(%g) = %.9g, want %.9g", act_names[op], xs[i],
                         getf(&out, i), want);
            }
            ok(good, "%s at extremes", act_names[op]);
        }
        sw_status st = sw_kernel_activation(SW_KACT_SIGMOID, K(&out), K(&x));
        ok(st == SW_OK && getf(&out, 0) > 0.0f && getf(&out, 0) < 1e-40f,
           "sigmoid(-100) is a tiny positive number, not 0/0");
        rm(&x);
        rm(&out);
    }

    /* Int32 relu is exact; Int32 inputs to Float32 activations. */
    {
        opnd x = mk("(25,30):(30,1)", 2, SW_DTYPE_INT32, 0);
        seti(&x, 0, INT32_MAX);
        seti(&x, 1, INT32_MIN);
        opnd out = mk("(25,30):(30,1)", 0, SW_DTYPE_INT32, 1);
        sw_status st = sw_kernel_activation(SW_KACT_RELU, K(&out), K(&x));
        int good = st == SW_OK;
        for (int64_t i = 0; i < size_of(&x) && good; ++i)
            good = geti(&out, i) == (geti(&x, i) > 0 ? geti(&x, i) : 0);
        ok(good && geti(&out, 0) == INT32_MAX, "Int32 relu exact");
        good &= holes_untouched(&out, "Int32 relu");
        opnd fo = mk("(25,30):(1,25)", 0, SW_DTYPE_FLOAT32, 1);
        st = sw_kernel_activation(SW_KACT_TANH, K(&fo), K(&x));
        good = st == SW_OK;
        for (int64_t i = 0; i < size_of(&x) && good; ++i)
            good = close_to(getf(&fo, i), tanh((double)(float)geti(&x, i)));
        ok(good, "tanh of Int32 input reads it as float");
        st = sw_kernel_activation(SW_KACT_TANH, K(&out), K(&x));
        is_str(S(st), "SW_ETYPE", "Int32 tanh output refused");
        st = sw_kernel_activation((sw_kact)99, K(&fo), K(&x));
        is_str(S(st), "SW_EVALUE", "unknown activation refused");
        st = sw_kernel_activation_backward(SW_KACT_RELU, K(&fo), K(&fo), K(&x),
                                           NULL);
        is_str(S(st), "SW_ETYPE", "backward takes Float32 only");
        rm(&x);
        rm(&out);
        rm(&fo);
    }

    /* Long contiguous walks, including the streaming path (4 operands of
     * 3M floats exceed 40 MiB). */
    {
        int64_t n = (int64_t)3 << 20;
        char text[64];
        snprintf(text, sizeof text, "%lld:1", (long long)n);
        opnd x = mk(text, 0, SW_DTYPE_FLOAT32, 0);
        opnd y = mk(text, 3, SW_DTYPE_FLOAT32, 1);
        opnd g = mk(text, 1, SW_DTYPE_FLOAT32, 0);
        opnd dx = mk(text, 2, SW_DTYPE_FLOAT32, 1);
        sw_status st = sw_kernel_activation(SW_KACT_SIGMOID, K(&y), K(&x));
        sw_karg ky = K(&y);
        sw_status st2 = sw_kernel_activation_backward(SW_KACT_SIGMOID, K(&dx),
                                                      K(&g), K(&x), &ky);
        int good = st == SW_OK && st2 == SW_OK;
        for (int64_t i = 0; i < n && good; i += 1 + (i % 7)) {
            good = close_to(getf(&y, i), sigmoid_d(getf(&x, i))) &&
                   close_to(getf(&dx, i), ref_grad(SW_KACT_SIGMOID, getf(&g, i),
                                                   getf(&x, i)));
        }
        ok(good, "sigmoid forward and backward on 3M contiguous");
        good = holes_untouched(&y, "3M sigmoid") &&
               holes_untouched(&dx, "3M sigmoid backward");
        rm(&x);
        rm(&y);
        rm(&g);
        rm(&dx);
    }
    leak_check(base, "activations");
}

/* ------------------------------------------------------------- reduce */

static void reduce_case(const char *xl, int64_t xoff, const char *ol,
                        int64_t ooff, sw_dtype dt) {
    opnd x = mk(xl, xoff, dt, 0);
    opnd out = mk(ol, ooff, dt, 1);
    sw_layout *m0 = NULL, *m1 = NULL;
    sw_layout_mode(x.l, 0, &m0);
    sw_layout_mode(x.l, 1, &m1);
    int64_t n0 = sw_layout_size(m0), n1 = sw_layout_size(m1);
    sw_status st = sw_kernel_reduce_sum(K(&out), K(&x));
    int good = ok(st == SW_OK, "reduce %s %s -> %s runs",
                  dt == SW_DTYPE_INT32 ? "Int32" : "Float32", xl, ol);
    if (!good)
        diag("%s: %s", S(st), sw_errmsg());
    for (int64_t i = 0; i < n0 && good; ++i) {
        double want = 0, mag = 0;
        int64_t iwant = 0;
        for (int64_t j = 0; j < n1; ++j) {
            int64_t p = x.off + IX(m0, i) + IX(m1, j);
            if (dt == SW_DTYPE_FLOAT32) {
                float v = ((float *)x.data)[p];
                want += v;
                mag += fabs(v);
            } else {
                iwant += ((int32_t *)x.data)[p];
            }
        }
        if (dt == SW_DTYPE_FLOAT32)
            good = fabs(getf(&out, i) - want) <= 1e-6 * (double)n1 * mag;
        else
            good = geti(&out, i) == iwant;
        if (!good)
            diag("out[%lld] = %.9g, want %.9g", (long long)i, getf(&out, i),
                 dt == SW_DTYPE_FLOAT32 ? want : (double)iwant);
    }
    ok(good, "reduce %s: every sum", xl);
    holes_untouched(&out, ol);

    if (dt == SW_DTYPE_FLOAT32) {
        /* Backward: grad[i, j] = g[i]. */
        opnd gx = mk(xl, xoff + 1, dt, 1);
        st = sw_kernel_reduce_sum_backward(K(&gx), K(&out));
        good = st == SW_OK;
        for (int64_t i = 0; i < n0 && good; ++i)
            for (int64_t j = 0; j < n1 && good; ++j) {
                int64_t p = gx.off + IX(m0, i) + IX(m1, j);
                good = ((float *)gx.data)[p] == getf(&out, i);
            }
        ok(good, "reduce backward %s broadcasts g", xl);
        holes_untouched(&gx, xl);
        rm(&gx);
    }
    sw_layout_unref(m0);
    sw_layout_unref(m1);
    rm(&x);
    rm(&out);
}

static void test_reduce(void) {
    int64_t base = sw_debug_live_allocs();
    for (int d = 0; d < 2; ++d) {
        sw_dtype dt = d ? SW_DTYPE_INT32 : SW_DTYPE_FLOAT32;
        reduce_case("(7,9):(1,7)", 0, "7:1", 0, dt);     /* col-major */
        reduce_case("(7,9):(9,1)", 2, "7:1", 1, dt);     /* row-major */
        reduce_case("(37,41):(41,1)", 0, "37:2", 0, dt); /* long rows */
        reduce_case("(41,37):(1,41)", 0, "41:3", 3, dt); /* long cols */
        reduce_case("((2,3),(4,2)):((1,2),(6,24))", 0, "(2,3):(1,2)", 0, dt);
        reduce_case("((2,3),(4,2)):((12,1),(3,24))", 1, "(2,3):(3,1)", 0, dt);
        reduce_case("((3,2),5):((1,3),6)", 0, "(2,3):(1,2)", 0, dt);
        reduce_case("(6,(5,4)):(1,(0,6))", 0, "6:1", 0, dt); /* stride 0 */
        reduce_case("(1,300):(1,1)", 0, "1:1", 0, dt);       /* to a scalar */
        reduce_case("(300,1):(1,1)", 0, "300:1", 0, dt); /* nothing to sum */
        reduce_case("(200,200):(200,1)", 0, "200:1", 0, dt); /* blocked */
    }
    /* Int32 sums are exact in int64 whatever the order. */
    {
        opnd x = mk("(1,3):(1,1)", 0, SW_DTYPE_INT32, 0);
        opnd out = mk("1:1", 0, SW_DTYPE_INT32, 1);
        seti(&x, 0, INT32_MAX);
        seti(&x, 1, 1);
        seti(&x, 2, -1);
        sw_status st = sw_kernel_reduce_sum(K(&out), K(&x));
        ok(st == SW_OK && geti(&out, 0) == INT32_MAX,
           "Int32 sum passing through 2^31 but ending in range");
        seti(&x, 2, 0);
        st = sw_kernel_reduce_sum(K(&out), K(&x));
        is_str(S(st), "SW_EOVERFLOW", "Int32 sum of 2^31 overflows");
        is_str(sw_errmsg(), "CPU integer accumulation overflowed",
               "  with the documented message");
        seti(&x, 0, INT32_MIN);
        seti(&x, 1, -1);
        st = sw_kernel_reduce_sum(K(&out), K(&x));
        is_str(S(st), "SW_EOVERFLOW", "Int32 sum below -2^31 overflows");
        rm(&x);
        rm(&out);
    }
    /* Errors. */
    {
        opnd x3 = mk("(2,3,4):(1,2,6)", 0, SW_DTYPE_FLOAT32, 0);
        opnd x2 = mk("(2,12):(1,2)", 0, SW_DTYPE_FLOAT32, 0);
        opnd o2 = mk("2:1", 0, SW_DTYPE_FLOAT32, 1);
        opnd o3 = mk("3:1", 0, SW_DTYPE_FLOAT32, 1);
        opnd oi = mk("2:1", 0, SW_DTYPE_INT32, 1);
        sw_status st = sw_kernel_reduce_sum(K(&o2), K(&x3));
        is_str(S(st), "SW_EVALUE", "reduce of a three-mode layout refused");
        st = sw_kernel_reduce_sum(K(&o3), K(&x2));
        is_str(S(st), "SW_EVALUE", "reduce into the wrong size refused");
        st = sw_kernel_reduce_sum(K(&oi), K(&x2));
        is_str(S(st), "SW_ETYPE", "reduce Float32 into Int32 refused");
        st = sw_kernel_reduce_sum_backward(K(&x2), K(&o3));
        is_str(S(st), "SW_EVALUE", "reduce backward of the wrong size refused");
        rm(&x3);
        rm(&x2);
        rm(&o2);
        rm(&o3);
        rm(&oi);
    }
    leak_check(base, "reduce");
}

/* --------------------------------------------------------------- GEMM */

/*
 * A matrix operand seen through its modes: the physical offset of every
 * row, column and batch index, computed once with sw_layout_index.
 */
typedef struct mat_view {
    const opnd *o;
    int64_t nr, nc, nb;
    int64_t *row, *col, *bat;
} mat_view;

static int64_t *mode_offsets(const sw_layout *l, int32_t mode, int64_t *n) {
    if (mode < 0) {
        *n = 1;
        return calloc(1, sizeof(int64_t));
    }
    sw_layout *m = NULL;
    sw_layout_mode(l, mode, &m);
    *n = sw_layout_size(m);
    int64_t *t = malloc((size_t)*n * sizeof(int64_t));
    for (int64_t i = 0; i < *n; ++i)
        t[i] = IX(m, i);
    sw_layout_unref(m);
    return t;
}

static mat_view mat_view_of(const opnd *o, const sw_kmat *m) {
    mat_view v;
    v.o = o;
    v.row = mode_offsets(o->l, m->row_mode, &v.nr);
    v.col = mode_offsets(o->l, m->col_mode, &v.nc);
    v.bat = mode_offsets(o->l, m->batch_mode, &v.nb);
    return v;
}

static void mat_view_free(mat_view *v) {
    free(v->row);
    free(v->col);
    free(v->bat);
}

static double mat_get(const mat_view *v, int64_t r, int64_t c, int64_t b) {
    int64_t p = v->o->off + v->row[r] + v->col[c] + v->bat[b];
    if (v->o->dt == SW_DTYPE_FLOAT32)
        return ((float *)v->o->data)[p];
    return ((int32_t *)v->o->data)[p];
}

/*
 * Runs GEMM and compares every entry with a double triple loop (exactly
 * for Int32). Float32 is within 2*K*eps*sum|a*b| + 1e-30.
 */
static int gemm_check(opnd *c, sw_kmat mc, opnd *a, sw_kmat ma, opnd *b,
                      sw_kmat mb, const char *what) {
    mc.arg = K(c);
    ma.arg = K(a);
    mb.arg = K(b);
    sw_status st = sw_kernel_gemm(mc, ma, mb);
    if (!ok(st == SW_OK, "gemm %s runs", what)) {
        diag("%s: %s", S(st), sw_errmsg());
        return 0;
    }
    mat_view vc = mat_view_of(c, &mc), va = mat_view_of(a, &ma),
             vb = mat_view_of(b, &mb);
    int64_t M = va.nr, Kk = va.nc, N = vb.nr, B = va.nb;
    int good = 1;
    for (int64_t bi = 0; bi < B && good; ++bi)
        for (int64_t i = 0; i < M && good; ++i)
            for (int64_t j = 0; j < N && good; ++j) {
                double want = 0, mag = 0;
                for (int64_t k = 0; k < Kk; ++k) {
                    double p = mat_get(&va, i, k, bi) * mat_get(&vb, j, k, bi);
                    want += p;
                    mag += fabs(p);
                }
                double got = mat_get(&vc, i, j, bi);
                if (c->dt == SW_DTYPE_INT32)
                    good = got == want;
                else
                    good = fabs(got - want) <=
                           2.0 * (double)Kk * FLT_EPSILON * mag + 1e-30;
                if (!good)
                    diag("C[%lld,%lld,%lld] = %.9g, want %.9g", (long long)i,
                         (long long)j, (long long)bi, got, want);
            }
    ok(good, "gemm %s: every entry", what);
    holes_untouched(c, what);
    mat_view_free(&vc);
    mat_view_free(&va);
    mat_view_free(&vb);
    return good;
}

static void gemm_square(int64_t M, int64_t N, int64_t Kk, int layout,
                        sw_dtype adt, sw_dtype cdt) {
    char tc[128], ta[128], tb[128], what[256];
    const char *style = "";
    switch (layout) {
    case 0: /* column-major everywhere (the canonical result) */
        snprintf(tc, sizeof tc, "(%lld,%lld):(1,%lld)", (long long)M,
                 (long long)N, (long long)M);
        snprintf(ta, sizeof ta, "(%lld,%lld):(1,%lld)", (long long)M,
                 (long long)Kk, (long long)M);
        snprintf(tb, sizeof tb, "(%lld,%lld):(1,%lld)", (long long)N,
                 (long long)Kk, (long long)N);
        style = "column-major";
        break;
    case 1: /* row-major operands, row-major C */
        snprintf(tc, sizeof tc, "(%lld,%lld):(%lld,1)", (long long)M,
                 (long long)N, (long long)N);
        snprintf(ta, sizeof ta, "(%lld,%lld):(%lld,1)", (long long)M,
                 (long long)Kk, (long long)Kk);
        snprintf(tb, sizeof tb, "(%lld,%lld):(%lld,1)", (long long)N,
                 (long long)Kk, (long long)Kk);
        style = "row-major";
        break;
    default: /* strided with gaps */
        snprintf(tc, sizeof tc, "(%lld,%lld):(2,%lld)", (long long)M,
                 (long long)N, (long long)(2 * M + 1));
        snprintf(ta, sizeof ta, "(%lld,%lld):(%lld,3)", (long long)M,
                 (long long)Kk, (long long)(3 * Kk + 2));
        snprintf(tb, sizeof tb, "(%lld,%lld):(2,%lld)", (long long)N,
                 (long long)Kk, (long long)(2 * N + 3));
        style = "strided";
        break;
    }
    opnd c = mk(tc, layout == 2 ? 3 : 0, cdt, 1);
    opnd a = mk(ta, layout == 2 ? 1 : 0, adt, 0);
    opnd b = mk(tb, layout == 2 ? 2 : 0, adt, 0);
    snprintf(what, sizeof what, "%lldx%lldx%lld %s%s", (long long)M,
             (long long)N, (long long)Kk, style,
             adt == SW_DTYPE_INT32 ? " Int32" : "");
    gemm_check(&c, sw_kmat_of(K(&c)), &a, sw_kmat_of(K(&a)), &b,
               sw_kmat_of(K(&b)), what);
    rm(&c);
    rm(&a);
    rm(&b);
}

static void gemm_suite(void) {
    int64_t base = sw_debug_live_allocs();
    diag("GEMM micro-kernel: %s", sw_kernel_gemm_variant());
    static const int64_t odd[] = {1, 7, 63, 65, 129, 257};
    for (int i = 0; i < 6; ++i)
        gemm_square(odd[i], odd[i], odd[i], 0, SW_DTYPE_FLOAT32,
                    SW_DTYPE_FLOAT32);
    /* Rectangular and block-crossing shapes (MC 144, NC 1536, KC 256). */
    static const int64_t shapes[][3] = {
        {63, 65, 129}, {65, 63, 257},  {1, 257, 7},   {257, 1, 65},
        {7, 129, 1},   {150, 20, 300}, {17, 1600, 5}, {150, 13, 513}};
    for (int i = 0; i < 8; ++i)
        for (int l = 0; l < 3; ++l)
            gemm_square(shapes[i][0], shapes[i][1], shapes[i][2], l,
                        SW_DTYPE_FLOAT32, SW_DTYPE_FLOAT32);
    for (int l = 0; l < 3; ++l)
        gemm_square(65, 63, 129, l, SW_DTYPE_INT32, SW_DTYPE_FLOAT32);
    gemm_square(33, 31, 70, 2, SW_DTYPE_INT32, SW_DTYPE_INT32);
    gemm_square(7, 7, 7, 0, SW_DTYPE_INT32, SW_DTYPE_INT32);

    /* Hierarchical modes, an offset and a broadcast (stride-0) operand. */
    {
        opnd c = mk("((4,5),(3,7)):((1,4),(20,60))", 2, SW_DTYPE_FLOAT32, 1);
        opnd a = mk("((4,5),(6,9)):((6,24),(1,120))", 1, SW_DTYPE_FLOAT32, 0);
        opnd b = mk("((3,7),54):((54,162),1)", 0, SW_DTYPE_FLOAT32, 0);
        gemm_check(&c, sw_kmat_of(K(&c)), &a, sw_kmat_of(K(&a)), &b,
                   sw_kmat_of(K(&b)), "hierarchical modes");
        rm(&b);
        b = mk("(21,54):(0,1)", 0, SW_DTYPE_FLOAT32, 0);
        gemm_check(&c, sw_kmat_of(K(&c)), &a, sw_kmat_of(K(&a)), &b,
                   sw_kmat_of(K(&b)), "broadcast B rows");
        rm(&c);
        rm(&a);
        rm(&b);
    }

    /* Modes swapped, as matmul's backward uses them: dA = G . B. */
    {
        opnd g = mk("(20,30):(1,20)", 0, SW_DTYPE_FLOAT32, 0);
        opnd bm = mk("(30,40):(1,30)", 0, SW_DTYPE_FLOAT32, 0);
        opnd da = mk("(20,40):(1,20)", 0, SW_DTYPE_FLOAT32, 1);
        sw_kmat mg = sw_kmat_of(K(&g)), mb = sw_kmat_of(K(&bm));
        mb.row_mode = 1;
        mb.col_mode = 0;
        gemm_check(&da, sw_kmat_of(K(&da)), &g, mg, &bm, mb,
                   "dA = G.B (B's modes swapped)");
        /* dB[j,k] = sum_i G[i,j] A[i,k]: both inputs swapped. */
        opnd am = mk("(20,40):(1,20)", 0, SW_DTYPE_FLOAT32, 0);
        opnd db = mk("(30,40):(1,30)", 0, SW_DTYPE_FLOAT32, 1);
        sw_kmat mg2 = sw_kmat_of(K(&g)), ma2 = sw_kmat_of(K(&am));
        mg2.row_mode = 1;
        mg2.col_mode = 0;
        ma2.row_mode = 1;
        ma2.col_mode = 0;
        gemm_check(&db, sw_kmat_of(K(&db)), &g, mg2, &am, ma2,
                   "dB = G^T.A (both swapped)");
        rm(&g);
        rm(&bm);
        rm(&da);
        rm(&am);
        rm(&db);
    }

    /* Batched: a third mode, one batch broadcast with stride 0. */
    {
        opnd c = mk("(9,11,4):(1,9,99)", 0, SW_DTYPE_FLOAT32, 1);
        opnd a = mk("(9,13,4):(13,1,117)", 3, SW_DTYPE_FLOAT32, 0);
        opnd b = mk("(11,13,4):(1,11,0)", 0, SW_DTYPE_FLOAT32, 0);
        gemm_check(&c, sw_kmat_of(K(&c)), &a, sw_kmat_of(K(&a)), &b,
                   sw_kmat_of(K(&b)), "batched (B shared)");
        /* Batch first: modes (batch, rows, cols). */
        opnd c2 = mk("(4,9,11):(99,1,9)", 0, SW_DTYPE_FLOAT32, 1);
        sw_kmat m2 = {K(&c2), 1, 2, 0};
        gemm_check(&c2, m2, &a, sw_kmat_of(K(&a)), &b, sw_kmat_of(K(&b)),
                   "batched, batch mode first in C");
        opnd ci = mk("(9,11,4):(1,9,99)", 0, SW_DTYPE_INT32, 1);
        opnd ai = mk("(9,13,4):(13,1,117)", 0, SW_DTYPE_INT32, 0);
        opnd bi = mk("(11,13,4):(1,11,143)", 0, SW_DTYPE_INT32, 0);
        gemm_check(&ci, sw_kmat_of(K(&ci)), &ai, sw_kmat_of(K(&ai)), &bi,
                   sw_kmat_of(K(&bi)), "batched Int32");
        rm(&c);
        rm(&a);
        rm(&b);
        rm(&c2);
        rm(&ci);
        rm(&ai);
        rm(&bi);
    }

    /* Int32 overflow, errors and the packing allocation failure. */
    {
        opnd c = mk("(1,1):(1,1)", 0, SW_DTYPE_INT32, 1);
        opnd a = mk("(1,3):(1,1)", 0, SW_DTYPE_INT32, 0);
        opnd b = mk("(1,3):(1,1)", 0, SW_DTYPE_INT32, 0);
        seti(&a, 0, 46341);
        seti(&b, 0, 46341); /* 46341^2 = 2147488281 > 2^31-1 */
        seti(&a, 1, 0);
        seti(&a, 2, 0);
        sw_kmat mc = sw_kmat_of(K(&c)), ma = sw_kmat_of(K(&a)),
                mb = sw_kmat_of(K(&b));
        sw_status st = sw_kernel_gemm(mc, ma, mb);
        is_str(S(st), "SW_EOVERFLOW", "Int32 GEMM entry above 2^31-1");
        is_str(sw_errmsg(), "CPU integer accumulation overflowed",
               "  with the documented message");
        seti(&a, 1, -1);
        seti(&b, 1, 4633); /* 2147488281 - 4633 = 2147483648: still over */
        st = sw_kernel_gemm(mc, ma, mb);
        is_str(S(st), "SW_EOVERFLOW", "Int32 GEMM entry of exactly 2^31");
        seti(&b, 1, 4634);
        st = sw_kernel_gemm(mc, ma, mb);
        ok(st == SW_OK && geti(&c, 0) == INT32_MAX,
           "Int32 GEMM entry of 2^31-1 (through an int64 partial sum)");
        rm(&c);
        rm(&a);
        rm(&b);
    }
    {
        opnd c = mk("(8,6):(1,8)", 0, SW_DTYPE_FLOAT32, 1);
        opnd a = mk("(8,5):(1,8)", 0, SW_DTYPE_FLOAT32, 0);
        opnd b = mk("(6,5):(1,6)", 0, SW_DTYPE_FLOAT32, 0);
        opnd b4 = mk("(6,4):(1,6)", 0, SW_DTYPE_FLOAT32, 0);
        opnd b3 = mk("(6,5,2):(1,6,30)", 0, SW_DTYPE_FLOAT32, 0);
        opnd bb = mk("(6,5):(1,6)", 0, SW_DTYPE_BOOL, 0);
        opnd ci = mk("(8,6):(1,8)", 0, SW_DTYPE_INT32, 1);
        sw_kmat mc = sw_kmat_of(K(&c)), ma = sw_kmat_of(K(&a));
        sw_status st = sw_kernel_gemm(mc, ma, sw_kmat_of(K(&b4)));
        is_str(S(st), "SW_EVALUE", "GEMM with K 5 and 4 refused");
        st = sw_kernel_gemm(mc, ma, sw_kmat_of(K(&b3)));
        is_str(S(st), "SW_EVALUE", "GEMM with batch on B only refused");
        sw_kmat bad = sw_kmat_of(K(&b));
        bad.col_mode = 0;
        st = sw_kernel_gemm(mc, ma, bad);
        is_str(S(st), "SW_EVALUE", "GEMM with rows == columns refused");
        bad.col_mode = 2;
        st = sw_kernel_gemm(mc, ma, bad);
        is_str(S(st), "SW_EVALUE", "GEMM with a mode out of range refused");
        st = sw_kernel_gemm(mc, ma, sw_kmat_of(K(&bb)));
        is_str(S(st), "SW_ETYPE", "GEMM of a Bool operand refused");
        st = sw_kernel_gemm(sw_kmat_of(K(&ci)), ma, sw_kmat_of(K(&b)));
        is_str(S(st), "SW_ETYPE", "Int32 C with Float32 inputs refused");

        int64_t held = sw_debug_live_allocs();
        sw_debug_fail_alloc_after(0);
        st = sw_kernel_gemm(mc, ma, sw_kmat_of(K(&b)));
        sw_debug_fail_alloc_after(-1);
        is_str(S(st), "SW_ENOMEM", "GEMM reports a failed packing buffer");
        is_int(sw_debug_live_allocs(), held, "  and leaks nothing");
        holes_untouched(&c, "GEMM after ENOMEM");
        st = sw_kernel_gemm(mc, ma, sw_kmat_of(K(&b)));
        ok(st == SW_OK, "GEMM works again after the failure");
        rm(&c);
        rm(&a);
        rm(&b);
        rm(&b4);
        rm(&b3);
        rm(&bb);
        rm(&ci);
    }
    ok(strcmp(sw_kernel_gemm_variant(), "reference") == 0 ||
           strcmp(sw_kernel_gemm_variant(), "avx2-fma") == 0 ||
           strcmp(sw_kernel_gemm_variant(), "avx512") == 0,
       "gemm variant is named (%s)", sw_kernel_gemm_variant());
    leak_check(base, "gemm");
}

/* The suite once per micro-kernel this CPU runs, each against the
 * double-precision reference. */
static void test_gemm(void) {
    static const char *const names[] = {"avx512", "avx2-fma", "reference"};
    for (int i = 0; i < 3; ++i) {
        if (sw_kernel_gemm_force(names[i]) != 0) {
            diag("GEMM micro-kernel %s: not on this build or CPU", names[i]);
            continue;
        }
        gemm_suite();
    }
    ok(sw_kernel_gemm_force("no such kernel") == -1,
       "an unknown kernel is refused");
    sw_kernel_gemm_force(NULL);
}

/* --------------------------------------------------------- copy, fill */

static void test_copy(void) {
    int64_t base = sw_debug_live_allocs();
    static const sw_dtype dts[3] = {SW_DTYPE_FLOAT32, SW_DTYPE_INT32,
                                    SW_DTYPE_BOOL};
    static const char *const dtn[3] = {"Float32", "Int32", "Bool"};
    static const char *const pairs[][2] = {
        {"(8,15):(1,8)", "(8,15):(1,8)"},
        {"(8,15):(1,8)", "(8,15):(15,1)"},
        {"((2,4),(3,5)):((1,6),(2,24))", "(8,15):(2,19)"},
        {"(6,(2,5)):(1,(6,12))", "(4,15):(15,1)"}, /* no refinement */
        {"(8,15):(1,8)", "(8,15):(0,1)"},          /* broadcast source */
        {"(130,90):(1,130)", "(130,90):(90,1)"}};  /* blocked */
    for (int p = 0; p < 6; ++p)
        for (int d = 0; d < 3; ++d)
            for (int s = 0; s < 3; ++s) {
                opnd dst = mk(pairs[p][0], 1, dts[d], 1);
                opnd src = mk(pairs[p][1], 2, dts[s], 0);
                sw_status st = sw_kernel_copy(K(&dst), K(&src));
                int good = st == SW_OK;
                for (int64_t i = 0; i < size_of(&dst) && good; ++i) {
                    float v = getf(&src, i);
                    float want = dts[d] == SW_DTYPE_BOOL    ? (v != 0.0f)
                                 : dts[d] == SW_DTYPE_INT32 ? (float)(int32_t)v
                                                            : v;
                    good = getf(&dst, i) == want;
                }
                ok(good, "copy %s -> %s on %s <- %s", dtn[s], dtn[d],
                   pairs[p][0], pairs[p][1]);
                holes_untouched(&dst, pairs[p][0]);
                rm(&dst);
                rm(&src);
            }
    /* Float to Int32 edges. */
    {
        opnd src = mk("6:1", 0, SW_DTYPE_FLOAT32, 0);
        opnd dst = mk("6:1", 0, SW_DTYPE_INT32, 1);
        static const float ok_vals[6] = {2.9f,  -2.9f,         0.0f,
                                         -0.0f, 2147483520.0f, -2147483648.0f};
        for (int i = 0; i < 6; ++i)
            setf(&src, i, ok_vals[i]);
        sw_status st = sw_kernel_copy(K(&dst), K(&src));
        ok(st == SW_OK && geti(&dst, 0) == 2 && geti(&dst, 1) == -2 &&
               geti(&dst, 4) == 2147483520 && geti(&dst, 5) == INT32_MIN,
           "Float32 -> Int32 truncates toward zero, range edges kept");
        static const float bad_vals[3] = {2147483648.0f, NAN, -3e9f};
        for (int i = 0; i < 3; ++i) {
            setf(&src, 3, bad_vals[i]);
            st = sw_kernel_copy(K(&dst), K(&src));
            is_str(S(st), "SW_EOVERFLOW", "Float32 %g -> Int32 refused",
                   bad_vals[i]);
        }
        is_str(sw_errmsg(), "CPU Int32 operation result is out of int32 range",
               "  with the documented message");
        setf(&src, 0, NAN);
        opnd bdst = mk("6:1", 0, SW_DTYPE_BOOL, 1);
        st = sw_kernel_copy(K(&bdst), K(&src));
        ok(st == SW_OK && ((uint8_t *)bdst.data)[0] == 1,
           "NaN converts to Bool true");
        rm(&src);
        rm(&dst);
        rm(&bdst);
    }
    /* Fill. */
    for (int d = 0; d < 3; ++d) {
        opnd dst = mk("((2,4),(3,5)):((1,6),(2,24))", 3, dts[d], 1);
        sw_status st = sw_kernel_fill(K(&dst), 2.75);
        int good = st == SW_OK;
        float want = dts[d] == SW_DTYPE_FLOAT32 ? 2.75f
                     : dts[d] == SW_DTYPE_INT32 ? 2.0f
                                                : 1.0f;
        for (int64_t i = 0; i < size_of(&dst) && good; ++i)
            good = getf(&dst, i) == want;
        ok(good, "fill %s with 2.75", dtn[d]);
        holes_untouched(&dst, "fill");
        rm(&dst);
    }
    {
        opnd dst = mk("1003:1", 0, SW_DTYPE_FLOAT32, 1);
        sw_status st = sw_kernel_fill(K(&dst), -0.5);
        int good = st == SW_OK;
        for (int64_t i = 0; i < 1003 && good; ++i)
            good = getf(&dst, i) == -0.5f;
        ok(good, "fill 1003 contiguous floats");
        opnd di = mk("3:1", 0, SW_DTYPE_INT32, 1);
        st = sw_kernel_fill(K(&di), 2147483648.0);
        is_str(S(st), "SW_EOVERFLOW", "fill Int32 with 2^31 refused");
        st = sw_kernel_fill(K(&di), 2147483647.0);
        ok(st == SW_OK && geti(&di, 2) == INT32_MAX, "fill Int32 with 2^31-1");
        rm(&dst);
        rm(&di);
    }
    /* Errors. */
    {
        opnd a = mk("6:1", 0, SW_DTYPE_FLOAT32, 1);
        opnd b = mk("7:1", 0, SW_DTYPE_FLOAT32, 0);
        sw_status st = sw_kernel_copy(K(&a), K(&b));
        is_str(S(st), "SW_EVALUE", "copy of different sizes refused");
        sw_karg any = K(&b);
        any.dtype = SW_DTYPE_ANY;
        st = sw_kernel_copy(K(&a), any);
        is_str(S(st), "SW_ETYPE", "copy from Any refused");
        st = sw_kernel_fill(any, 1.0);
        is_str(S(st), "SW_ETYPE", "fill of Any refused");
        rm(&a);
        rm(&b);
    }
    leak_check(base, "copy and fill");
}

/* ------------------------------------------------------------ repeats */

/* 2**20, 2**40 and 2**62, as layout text extents. */
#define E20 "1048576"
#define E40 "1099511627776"
#define E62 "4611686018427387904"

/* Counts the loop's calls and visits without touching memory. */
typedef struct counter {
    int64_t calls, visits, max_run;
    int request_at; /* raise an interrupt request on this call (1-based) */
} counter;

static sw_status count_loop(int64_t n, void *const *ptr, const int64_t *step,
                            void *vctx) {
    (void)ptr;
    (void)step;
    counter *c = vctx;
    c->calls++;
    c->visits += n;
    if (n > c->max_run)
        c->max_run = n;
    if (c->calls == c->request_at)
        sw_interrupt_request();
    return SW_OK;
}

static int leaves_are(sw_plan_leaves l, int32_t n, const int64_t *ext,
                      const int64_t *str) {
    if (l.nleaf != n)
        return 0;
    for (int32_t j = 0; j < n; ++j)
        if (l.extent[j] != ext[j] || l.stride[j] != str[j])
            return 0;
    return 1;
}

static void test_plan_repeats(void) {
    int64_t base = sw_debug_live_allocs();
    sw_plan_reduced r;
    /* The example of plan.h, shared by three operands. */
    {
        sw_layout *l = P("(4,(8," E40 ")):(1,(4,0))");
        sw_plan_leaves lv[3] = {sw_plan_leaves_of(l), sw_plan_leaves_of(l),
                                sw_plan_leaves_of(l)};
        sw_status st = sw_plan_drop_repeats(3, lv, &r);
        static const int64_t ext[2] = {4, 8}, str[2] = {1, 4};
        ok(st == SW_OK && r.repeat == (int64_t)1 << 40 &&
               leaves_are(r.ops[0], 2, ext, str) &&
               leaves_are(r.ops[1], 2, ext, str) &&
               leaves_are(r.ops[2], 2, ext, str),
           "drop_repeats: (4,(8,2**40)):(1,(4,0)) keeps 4:1 and 8:4, "
           "repeat 2**40");
        sw_layout_unref(l);
    }
    /* Only the output has stride 0 (the inputs differ from visit to visit):
     * nothing is dropped; nor for an input alone. */
    {
        sw_layout *o = P("(4,8):(1,0)"), *x = P("(4,8):(1,4)");
        sw_plan_leaves lv[2] = {sw_plan_leaves_of(o), sw_plan_leaves_of(x)};
        sw_status st = sw_plan_drop_repeats(2, lv, &r);
        ok(st == SW_OK && r.repeat == 1 && r.ops[0].nleaf == 2,
           "drop_repeats: a stride-0 mode of the output alone stays");
        sw_plan_leaves rv[2] = {lv[1], lv[0]};
        st = sw_plan_drop_repeats(2, rv, &r);
        ok(st == SW_OK && r.repeat == 1 && r.ops[0].nleaf == 2,
           "drop_repeats: a stride-0 mode of an input alone stays");
        sw_layout_unref(o);
        sw_layout_unref(x);
    }
    /* A refined mode is dropped only where every operand has stride 0:
     * (6,4):(0,1) against ((2,3),4):((0,0),6) shares the 6 mode. */
    {
        sw_layout *a = P("(6,4):(0,1)"), *b = P("((2,3),4):((0,0),6)");
        sw_plan_leaves lv[2] = {sw_plan_leaves_of(a), sw_plan_leaves_of(b)};
        sw_status st = sw_plan_drop_repeats(2, lv, &r);
        static const int64_t ext[1] = {4}, sa[1] = {1}, sb[1] = {6};
        ok(st == SW_OK && r.repeat == 6 && leaves_are(r.ops[0], 1, ext, sa) &&
               leaves_are(r.ops[1], 1, ext, sb),
           "drop_repeats: modes shared after refinement are dropped");
        sw_layout_unref(a);
        sw_layout_unref(b);
    }
    /* Everything repeats: no leaf left, one visit. */
    {
        sw_layout *l = P(E62 ":0");
        sw_plan_leaves lv[2] = {sw_plan_leaves_of(l), sw_plan_leaves_of(l)};
        sw_status st = sw_plan_drop_repeats(2, lv, &r);
        ok(st == SW_OK && r.repeat == (int64_t)1 << 62 && r.ops[0].nleaf == 0 &&
               r.ops[1].nleaf == 0,
           "drop_repeats: 2**62:0 leaves nothing, repeat 2**62");
        counter c = {0, 0, 0, 0};
        char arena[8];
        void *basep[2] = {arena, arena};
        static const int64_t elsize[2] = {4, 4}, offs[2] = {0, 1};
        st = sw_plan_iterate(2, lv, offs, basep, elsize, SW_PLAN_SKIP_REPEATS,
                             count_loop, &c);
        ok(st == SW_OK && c.calls == 1 && c.visits == 1,
           "iterate skipping repeats walks 2**62:0 (offsets 0 and 1) in one "
           "visit");
        sw_layout_unref(l);
    }
    /* No common refinement: the operands are returned as they are. */
    {
        sw_layout *a = P("(2,3):(0,2)"), *b = P("(3,2):(0,3)");
        sw_plan_leaves lv[2] = {sw_plan_leaves_of(a), sw_plan_leaves_of(b)};
        sw_status st = sw_plan_drop_repeats(2, lv, &r);
        ok(st == SW_OK && r.repeat == 1 && r.ops[0].extent == lv[0].extent &&
               r.ops[1].stride == lv[1].stride && sw_errcode() == SW_OK,
           "drop_repeats without a common refinement keeps the operands");
        sw_layout_unref(a);
        sw_layout_unref(b);
    }
    /* Errors, as for building a plan. */
    {
        sw_layout *a = P("6:1"), *b = P("4:1");
        sw_plan_leaves lv[2] = {sw_plan_leaves_of(a), sw_plan_leaves_of(b)};
        sw_status st = sw_plan_drop_repeats(2, lv, &r);
        is_str(S(st), "SW_EVALUE", "drop_repeats of different sizes refused");
        is_str(sw_errmsg(),
               "plan operands must have the same size: operand 0 has 6 "
               "elements, operand 1 has 4",
               "  with the plan's message");
        st = sw_plan_drop_repeats(0, lv, &r);
        is_str(S(st), "SW_EVALUE", "drop_repeats of 0 operands refused");
        sw_clear_error();
        sw_layout_unref(a);
        sw_layout_unref(b);
    }
    leak_check(base, "plan repeats");
}

/* A one-element Float32 (or Int32) operand seen through a huge layout. */
static opnd mk_bcast(const char *layout, sw_dtype dt, float v) {
    opnd o = mk(layout, 0, dt, 0);
    for (int64_t p = 0; p < o.cap; ++p) {
        if (dt == SW_DTYPE_FLOAT32)
            ((float *)o.data)[p] = v;
        else
            ((int32_t *)o.data)[p] = (int32_t)v;
    }
    return o;
}

static void test_kernels_repeats(void) {
    int64_t base = sw_debug_live_allocs();
    sw_kscalar none = {0.0, 0};
    /* Elementwise, activations, copies and fills over 2**62 broadcast
     * elements: one visit each (these never finished before). */
    {
        opnd x = mk_bcast(E62 ":0", SW_DTYPE_FLOAT32, -2.0f);
        opnd y = mk_bcast(E62 ":0", SW_DTYPE_FLOAT32, 3.0f);
        opnd out = mk(E62 ":0", 0, SW_DTYPE_FLOAT32, 1);
        sw_karg in[2] = {K(&x), K(&y)};
        sw_status st = sw_kernel_elementwise(SW_KELEM_ADD, K(&out), in, none);
        ok(st == SW_OK && ((float *)out.data)[0] == 1.0f &&
               ((float *)out.data)[1] == SENT_F,
           "add over 2**62:0 operands writes the one element (1)");
        /* The same with the inputs at different offsets. */
        x.off = 2;
        ((float *)x.data)[2] = 5.0f;
        in[0] = K(&x);
        st = sw_kernel_elementwise(SW_KELEM_SUB, K(&out), in, none);
        ok(st == SW_OK && ((float *)out.data)[0] == 2.0f,
           "sub over 2**62:0 operands at different offsets (2)");
        x.off = 0;
        st = sw_kernel_activation(SW_KACT_RELU, K(&out), K(&x));
        ok(st == SW_OK && ((float *)out.data)[0] == 0.0f,
           "relu over 2**62:0 (0)");
        st = sw_kernel_activation(SW_KACT_EXP, K(&out), K(&y));
        ok(st == SW_OK && close_to(((float *)out.data)[0], exp(3.0)),
           "exp over 2**62:0");
        st = sw_kernel_activation_backward(SW_KACT_RELU, K(&out), K(&y), K(&x),
                                           NULL);
        ok(st == SW_OK && ((float *)out.data)[0] == 0.0f,
           "relu backward over 2**62:0 (0 at x = -2)");
        st = sw_kernel_activation_backward(SW_KACT_RELU, K(&out), K(&x), K(&y),
                                           NULL);
        ok(st == SW_OK && ((float *)out.data)[0] == -2.0f,
           "relu backward over 2**62:0 (g at x = 3)");
        st = sw_kernel_copy(K(&out), K(&y));
        ok(st == SW_OK && ((float *)out.data)[0] == 3.0f, "copy over 2**62:0");
        st = sw_kernel_fill(K(&out), 7.0);
        ok(st == SW_OK && ((float *)out.data)[0] == 7.0f &&
               ((float *)out.data)[1] == SENT_F,
           "fill over 2**62:0");
        opnd xi = mk_bcast(E62 ":0", SW_DTYPE_INT32, -4.0f);
        opnd oi = mk(E62 ":0", 0, SW_DTYPE_INT32, 1);
        st = sw_kernel_activation(SW_KACT_RELU, K(&oi), K(&xi));
        ok(st == SW_OK && ((int32_t *)oi.data)[0] == 0,
           "Int32 relu over 2**62:0");
        sw_karg ii[2] = {K(&xi), K(&xi)};
        st = sw_kernel_elementwise(SW_KELEM_MUL, K(&oi), ii, none);
        ok(st == SW_OK && ((int32_t *)oi.data)[0] == 16,
           "Int32 mul over 2**62:0");
        /* Float32 from Int32 inputs goes through the staging loop. */
        sw_karg mixed[2] = {K(&xi), K(&y)};
        st = sw_kernel_elementwise(SW_KELEM_MUL, K(&out), mixed, none);
        ok(st == SW_OK && ((float *)out.data)[0] == -12.0f,
           "Int32 * Float32 over 2**62:0 (staged)");
        rm(&x);
        rm(&y);
        rm(&out);
        rm(&xi);
        rm(&oi);
    }
    /* A stride-0 mode of the output alone is not a repeat: the last
     * visit wins, as in logical order. */
    {
        opnd x = mk("(4,3):(1,4)", 0, SW_DTYPE_FLOAT32, 0);
        opnd out = mk("(4,3):(1,0)", 0, SW_DTYPE_FLOAT32, 1);
        sw_status st = sw_kernel_copy(K(&out), K(&x));
        int good = st == SW_OK;
        for (int64_t i = 0; i < 4; ++i)
            good &= ((float *)out.data)[i] == ((float *)x.data)[8 + i];
        ok(good, "copy into (4,3):(1,0) keeps the last column");
        rm(&x);
        rm(&out);
    }
    /* Sums along broadcast modes: closed form. */
    {
        opnd x = mk("(4,(3," E40 ")):(1,(4,0))", 0, SW_DTYPE_FLOAT32, 0);
        opnd out = mk("4:1", 0, SW_DTYPE_FLOAT32, 1);
        sw_status st = sw_kernel_reduce_sum(K(&out), K(&x));
        int good = st == SW_OK;
        const float *xd = x.data, *od = out.data;
        for (int64_t i = 0; i < 4; ++i) {
            float want = ((xd[i] + xd[i + 4]) + xd[i + 8]) * 0x1p40f;
            float alt = ((xd[i + 8] + xd[i + 4]) + xd[i]) * 0x1p40f;
            good &= close_to(od[i], (double)want) || od[i] == alt;
        }
        ok(good, "Float32 sum over (4,(3,2**40)):(1,(4,0)) is 2**40 * the "
                 "sum of three");
        /* The whole row broadcast: 2**60 * x[i]. */
        opnd xb = mk("(4,1152921504606846976):(1,0)", 0, SW_DTYPE_FLOAT32, 0);
        st = sw_kernel_reduce_sum(K(&out), K(&xb));
        good = st == SW_OK;
        for (int64_t i = 0; i < 4; ++i)
            good &= od[i] == ((float *)xb.data)[i] * 0x1p60f;
        ok(good, "Float32 sum over (4,2**60):(1,0) is 2**60 * x");
        /* Broadcast rows of x (stride 0 in mode 0) against a compact
         * output: the output differs per row, so nothing is dropped there. */
        opnd xr = mk("(4,(3,1000)):(0,(1,0))", 0, SW_DTYPE_FLOAT32, 0);
        st = sw_kernel_reduce_sum(K(&out), K(&xr));
        good = st == SW_OK;
        for (int64_t i = 0; i < 4; ++i) {
            const float *rd = xr.data;
            good &= close_to(od[i], 1000.0 * ((double)rd[0] + rd[1] + rd[2]));
        }
        ok(good, "Float32 sum over (4,(3,1000)):(0,(1,0)) (vertical runs, "
                 "scaled)");
        /* Int32: exact products, overflow checked. */
        opnd xi = mk("(4,1000):(1,0)", 0, SW_DTYPE_INT32, 0);
        opnd oi = mk("4:1", 0, SW_DTYPE_INT32, 1);
        st = sw_kernel_reduce_sum(K(&oi), K(&xi));
        good = st == SW_OK;
        for (int64_t i = 0; i < 4; ++i)
            good &= ((int32_t *)oi.data)[i] == 1000 * ((int32_t *)xi.data)[i];
        ok(good, "Int32 sum over (4,1000):(1,0) is 1000 * x exactly");
        opnd xz = mk_bcast("(4,1152921504606846976):(1,0)", SW_DTYPE_INT32, 0);
        st = sw_kernel_reduce_sum(K(&oi), K(&xz));
        ok(st == SW_OK && ((int32_t *)oi.data)[3] == 0,
           "Int32 sum of 2**60 zeros is 0");
        ((int32_t *)xz.data)[1] = 1;
        st = sw_kernel_reduce_sum(K(&oi), K(&xz));
        is_str(S(st), "SW_EOVERFLOW", "Int32 sum of 2**60 ones overflows");
        is_str(sw_errmsg(), "CPU integer accumulation overflowed",
               "  with the accumulation message");
        sw_clear_error();
        /* The backward broadcast over a stride-0 mode: one visit. */
        opnd g = mk("4:1", 0, SW_DTYPE_FLOAT32, 0);
        opnd dx = mk("(4," E40 "):(1,0)", 0, SW_DTYPE_FLOAT32, 1);
        st = sw_kernel_reduce_sum_backward(K(&dx), K(&g));
        good = st == SW_OK;
        for (int64_t i = 0; i < 4; ++i)
            good &= ((float *)dx.data)[i] == ((float *)g.data)[i];
        ok(good, "sum backward into (4,2**40):(1,0)");
        rm(&x);
        rm(&xb);
        rm(&xr);
        rm(&out);
        rm(&xi);
        rm(&oi);
        rm(&xz);
        rm(&g);
        rm(&dx);
    }
    /* GEMM over broadcast rows, columns, contractions and batches. */
    {
        opnd a = mk("(4,(3," E40 ")):(1,(4,0))", 0, SW_DTYPE_FLOAT32, 0);
        opnd b = mk("(5,(3," E40 ")):(1,(5,0))", 0, SW_DTYPE_FLOAT32, 0);
        opnd c = mk("(4,5):(1,4)", 0, SW_DTYPE_FLOAT32, 1);
        sw_status st = sw_kernel_gemm(sw_kmat_of(K(&c)), sw_kmat_of(K(&a)),
                                      sw_kmat_of(K(&b)));
        int good = st == SW_OK;
        const float *ad = a.data, *bd = b.data, *cd = c.data;
        for (int64_t i = 0; i < 4; ++i)
            for (int64_t j = 0; j < 5; ++j) {
                double want = 0;
                for (int64_t k = 0; k < 3; ++k)
                    want += (double)ad[i + 4 * k] * bd[j + 5 * k];
                good &= fabs(cd[i + 4 * j] - want * 0x1p40) <=
                        1e-5 * 0x1p40 * (1 + fabs(want));
            }
        ok(good, "GEMM contracting (3,2**40):(k,0) is 2**40 * the product");
        /* Broadcast rows of C and A, columns of C and B, a batch of all. */
        opnd a2 =
            mk("(" E20 ",6,(2," E20 ")):(0,1,(6,0))", 0, SW_DTYPE_FLOAT32, 0);
        opnd b2 =
            mk("(" E20 ",6,(2," E20 ")):(0,1,(6,0))", 0, SW_DTYPE_FLOAT32, 0);
        opnd c2 = mk("(" E20 "," E20 ",(2," E20 ")):(0,0,(1,0))", 0,
                     SW_DTYPE_FLOAT32, 1);
        st = sw_kernel_gemm(sw_kmat_of(K(&c2)), sw_kmat_of(K(&a2)),
                            sw_kmat_of(K(&b2)));
        good = st == SW_OK;
        for (int64_t t = 0; t < 2; ++t) {
            double want = 0;
            for (int64_t k = 0; k < 6; ++k)
                want += (double)((float *)a2.data)[6 * t + k] *
                        ((float *)b2.data)[6 * t + k];
            good &= close_to(((float *)c2.data)[t], want);
        }
        ok(good, "batched GEMM over 2**20 broadcast rows, columns and "
                 "batches");
        /* Int32: exact, the repeat multiplied and checked. */
        opnd ai = mk("(3,(2,1000)):(1,(3,0))", 0, SW_DTYPE_INT32, 0);
        opnd bi = mk("(2,(2,1000)):(1,(2,0))", 0, SW_DTYPE_INT32, 0);
        opnd ci = mk("(3,2):(1,3)", 0, SW_DTYPE_INT32, 1);
        st = sw_kernel_gemm(sw_kmat_of(K(&ci)), sw_kmat_of(K(&ai)),
                            sw_kmat_of(K(&bi)));
        good = st == SW_OK;
        const int32_t *aid = ai.data, *bid = bi.data, *cid = ci.data;
        for (int64_t i = 0; i < 3; ++i)
            for (int64_t j = 0; j < 2; ++j) {
                int64_t want = 0;
                for (int64_t k = 0; k < 2; ++k)
                    want += (int64_t)aid[i + 3 * k] * bid[j + 2 * k];
                good &= cid[i + 3 * j] == 1000 * want;
            }
        ok(good, "Int32 GEMM contracting (2,1000):(k,0) is 1000 * the "
                 "product");
        opnd ah = mk_bcast("(3," E40 "):(1,0)", SW_DTYPE_INT32, 1);
        opnd bh = mk_bcast("(2," E40 "):(1,0)", SW_DTYPE_INT32, 1);
        st = sw_kernel_gemm(sw_kmat_of(K(&ci)), sw_kmat_of(K(&ah)),
                            sw_kmat_of(K(&bh)));
        is_str(S(st), "SW_EOVERFLOW",
               "Int32 GEMM of 2**40 broadcast ones overflows");
        sw_clear_error();
        rm(&a);
        rm(&b);
        rm(&c);
        rm(&a2);
        rm(&b2);
        rm(&c2);
        rm(&ai);
        rm(&bi);
        rm(&ci);
        rm(&ah);
        rm(&bh);
    }
    leak_check(base, "kernels over repeats");
}

/* --------------------------------------------------------- interrupts */

/* Calls one kernel family on small operands. */
typedef enum kfamily {
    KF_ELEM,
    KF_ELEM_I32,
    KF_ACT,
    KF_ACT_BACK,
    KF_REDUCE,
    KF_REDUCE_I32,
    KF_REDUCE_BACK,
    KF_GEMM,
    KF_GEMM_I32,
    KF_COPY,
    KF_FILL,
    KF_COUNT
} kfamily;

static const char *const kf_names[KF_COUNT] = {"elementwise",
                                               "Int32 elementwise",
                                               "activation",
                                               "activation backward",
                                               "reduce",
                                               "Int32 reduce",
                                               "reduce backward",
                                               "GEMM",
                                               "Int32 GEMM",
                                               "copy",
                                               "fill"};

static sw_status run_family(kfamily f) {
    int i32 = f == KF_ELEM_I32 || f == KF_REDUCE_I32 || f == KF_GEMM_I32;
    sw_dtype dt = i32 ? SW_DTYPE_INT32 : SW_DTYPE_FLOAT32;
    opnd x = mk("(8,6):(1,8)", 0, dt, 0), y = mk("(8,6):(1,8)", 0, dt, 0);
    opnd o = mk("(8,6):(1,8)", 0, dt, 1), r = mk("8:1", 0, dt, 1);
    opnd b = mk("(5,6):(1,5)", 0, dt, 0), c = mk("(8,5):(1,8)", 0, dt, 1);
    sw_karg in[2] = {K(&x), K(&y)};
    sw_kscalar none = {0.0, 0};
    sw_status st = SW_OK;
    switch (f) {
    case KF_ELEM:
    case KF_ELEM_I32:
        st = sw_kernel_elementwise(SW_KELEM_ADD, K(&o), in, none);
        break;
    case KF_ACT:
        st = sw_kernel_activation(SW_KACT_TANH, K(&o), K(&x));
        break;
    case KF_ACT_BACK:
        st = sw_kernel_activation_backward(SW_KACT_TANH, K(&o), K(&y), K(&x),
                                           NULL);
        break;
    case KF_REDUCE:
    case KF_REDUCE_I32:
        st = sw_kernel_reduce_sum(K(&r), K(&x));
        break;
    case KF_REDUCE_BACK: {
        opnd g = mk("8:1", 0, dt, 0);
        st = sw_kernel_reduce_sum_backward(K(&o), K(&g));
        rm(&g);
        break;
    }
    case KF_GEMM:
    case KF_GEMM_I32:
        st = sw_kernel_gemm(sw_kmat_of(K(&c)), sw_kmat_of(K(&x)),
                            sw_kmat_of(K(&b)));
        break;
    case KF_COPY:
        st = sw_kernel_copy(K(&o), K(&x));
        break;
    case KF_FILL:
        st = sw_kernel_fill(K(&o), 1.0);
        break;
    default:
        break;
    }
    rm(&x);
    rm(&y);
    rm(&o);
    rm(&r);
    rm(&b);
    rm(&c);
    return st;
}

static void test_interrupts(void) {
    int64_t base = sw_debug_live_allocs();
    ok(!sw_interrupt_requested(), "no interrupt request at start");
    is_int(sw_interrupt_watch(1), 0, "a thread starts not watching");
    sw_interrupt_request();
    ok(sw_interrupt_requested(), "sw_interrupt_request raises the request");
    for (int f = 0; f < KF_COUNT; ++f) {
        sw_status st = run_family((kfamily)f);
        is_str(S(st), "SW_EINTERRUPTED", "%s stops for a raised request",
               kf_names[f]);
        is_str(sw_errmsg(), "operation interrupted", "  with its message");
        sw_clear_error();
    }
    ok(sw_interrupt_requested(), "the request stays raised until cleared");
    /* A thread that does not watch ignores it. */
    is_int(sw_interrupt_watch(0), 1, "watch(0) returns the previous setting");
    int all = 1;
    for (int f = 0; f < KF_COUNT; ++f)
        all &= run_family((kfamily)f) == SW_OK;
    ok(all, "every kernel runs while the thread does not watch");
    sw_interrupt_watch(1);
    sw_interrupt_clear();
    ok(!sw_interrupt_requested(), "sw_interrupt_clear lowers it");
    all = 1;
    for (int f = 0; f < KF_COUNT; ++f)
        all &= run_family((kfamily)f) == SW_OK;
    ok(all, "every kernel runs once the request is cleared");

    /* A request raised during a walk stops it within about
     * SW_INTERRUPT_EVERY elements: 4000 runs of 1000, raised on the
     * first. */
    {
        sw_layout *l = P("(1000,4000):(1,1001)");
        sw_plan_leaves lv = sw_plan_leaves_of(l);
        char arena[4];
        void *basep[1] = {arena};
        static const int64_t elsize[1] = {0};
        counter c = {0, 0, 0, 1};
        sw_status st =
            sw_plan_iterate(1, &lv, NULL, basep, elsize, 0, count_loop, &c);
        ok(st == SW_EINTERRUPTED && c.visits <= SW_INTERRUPT_EVERY + 1000,
           "a walk stops %lld elements after the request", (long long)c.visits);
        sw_interrupt_clear();
        c = (counter){0, 0, 0, 1};
        st = sw_plan_run_leaves(1, &lv, NULL, basep, elsize, count_loop, &c);
        ok(st == SW_EINTERRUPTED && c.visits <= SW_INTERRUPT_EVERY + 1000,
           "the fallback walk stops too (%lld elements)", (long long)c.visits);
        sw_interrupt_clear();
        sw_clear_error();
        sw_layout_unref(l);
    }
    /* Long runs are cut into pieces of SW_PLAN_CHUNK, checked between. */
    {
        sw_layout *l = P("20000000:0");
        sw_plan_leaves lv = sw_plan_leaves_of(l);
        char arena[4];
        void *basep[1] = {arena};
        static const int64_t elsize[1] = {4};
        counter c = {0, 0, 0, 0};
        sw_status st =
            sw_plan_iterate(1, &lv, NULL, basep, elsize, 0, count_loop, &c);
        ok(st == SW_OK && c.visits == 20000000 && c.max_run == SW_PLAN_CHUNK &&
               c.calls == 3,
           "a run of 2e7 elements comes in 3 pieces of at most SW_PLAN_CHUNK");
        c = (counter){0, 0, 0, 1};
        st = sw_plan_iterate(1, &lv, NULL, basep, elsize, 0, count_loop, &c);
        ok(st == SW_EINTERRUPTED && c.calls == 1,
           "a request raised in the first piece stops the run there");
        sw_interrupt_clear();
        sw_clear_error();
        sw_layout_unref(l);
    }
    sw_interrupt_watch(0);
    leak_check(base, "interrupts");
}

int main(void) {
    test_plan_examples();
    test_plan_errors();
    test_plan_random();
    test_elementwise_f32();
    test_elementwise_i32();
    test_elementwise_errors();
    test_pow_fixed();
    test_activation();
    test_reduce();
    test_gemm();
    test_copy();
    test_plan_repeats();
    test_kernels_repeats();
    test_interrupts();
    return done_testing();
}
