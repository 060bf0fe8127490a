/*
 * Unit tests of the tensor module: construction, getters, element access
 * by index and by coordinate, views sharing one carrier, peers, and
 * sw_carrier_scatter on the CPU bulk path and the element path.
 *
 * The contract is include/strideweave/tensor.h with the Python reference
 * (the Python API reference, sections 3, 7 and 8). Scatter
 * results are checked against a brute-force model written here from the
 * leaf extents and strides, not against the library's own indexing.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strideweave/base.h"
#include "strideweave/carrier.h"
#include "strideweave/layout.h"
#include "strideweave/tensor.h"
#include "check.h"
#include "tap.h"

enum { LEAF = SW_TOK_LEAF, PUSH = SW_TOK_PUSH, POP = SW_TOK_POP };

/* ------------------------------------------------------------ helpers */

static max_align_t sentinel_storage[2];
#define SENT_TENSOR ((sw_tensor *)(void *)&sentinel_storage[0])
#define SENT_INT64 INT64_C(-777777)

static sw_value sentinel_value(void) {
    sw_value v;
    memset(&v, 0, sizeof v);
    v.kind = SW_VALUE_I64;
    v.as.i = SENT_INT64;
    return v;
}

static bool value_untouched(const sw_value *v) {
    return v->kind == SW_VALUE_I64 && v->as.i == SENT_INT64 && v->ops == NULL;
}

/* Parses a layout that the test relies on; a failure is itself a failure. */
static sw_layout *P(const char *text) {
    sw_layout *l = NULL;
    sw_status st = sw_layout_parse(text, &l);
    if (st != SW_OK) {
        ok(0, "parse '%s'", text);
        diag("status %s: %s", S(st), sw_errmsg());
        return NULL;
    }
    return l;
}

/*
 * The index of logical element i, computed here from the leaf arrays:
 * splitting i colexicographically over nested modes is splitting it over
 * the leaves in infix order.
 */
static int64_t ref_index(const sw_layout *l, int64_t i) {
    int32_t n = sw_layout_nleaf(l);
    const int64_t *e = sw_layout_leaf_extents(l);
    const int64_t *s = sw_layout_leaf_strides(l);
    int64_t r = 0;
    for (int32_t k = 0; k < n; k++) {
        r += (i % e[k]) * s[k];
        i /= e[k];
    }
    return r;
}

static sw_status tset_f(sw_tensor *t, int64_t i, double f) {
    sw_value v = sw_value_f64(f);
    return sw_tensor_set(t, i, &v);
}

/* A number read through a tensor (NaN on failure or for other kinds). */
static double tget_num(const sw_tensor *t, int64_t i) {
    sw_value v = sentinel_value();
    if (sw_tensor_get(t, i, &v) != SW_OK) {
        sw_clear_error();
        return NAN;
    }
    double r = v.kind == SW_VALUE_F64   ? v.as.f
               : v.kind == SW_VALUE_I64 ? (double)v.as.i
                                        : NAN;
    sw_value_clear(&v);
    return r;
}

static double cget_num(sw_carrier *c, int64_t i) {
    sw_value v = sentinel_value();
    if (sw_carrier_get(c, i, &v) != SW_OK) {
        sw_clear_error();
        return NAN;
    }
    double r = v.kind == SW_VALUE_F64   ? v.as.f
               : v.kind == SW_VALUE_I64 ? (double)v.as.i
                                        : NAN;
    sw_value_clear(&v);
    return r;
}

/* A Generic carrier of n doubles, element k holding k. */
static sw_carrier *iota_generic(int64_t n, int mutable_) {
    double *v = malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
    if (!v)
        return NULL;
    for (int64_t k = 0; k < n; k++)
        v[k] = (double)k;
    sw_carrier *c = NULL;
    sw_status st = sw_generic_new_doubles(n, v, mutable_, &c);
    free(v);
    if (!expect_ok(st, "a Generic carrier of doubles"))
        return NULL;
    return c;
}

/* A CPU carrier of n elements; element k holds k (Bool: k % 2). */
static sw_carrier *iota_cpu(int64_t n, sw_dtype dtype, int mutable_) {
    sw_carrier *c = NULL;
    sw_status st = sw_cpu_new(n, dtype, 1, 0, &c);
    if (!expect_ok(st, "a CPU carrier"))
        return NULL;
    void *p = sw_cpu_data(c);
    for (int64_t k = 0; k < n; k++) {
        if (dtype == SW_DTYPE_FLOAT32)
            ((float *)p)[k] = (float)k;
        else if (dtype == SW_DTYPE_INT32)
            ((int32_t *)p)[k] = (int32_t)k;
        else
            ((uint8_t *)p)[k] = (uint8_t)(k % 2);
    }
    if (!mutable_) {
        /* Immutable with the same contents: copy through new_like. */
        sw_value *vals = calloc((size_t)(n > 0 ? n : 1), sizeof *vals);
        sw_carrier *r = NULL;
        for (int64_t k = 0; vals && k < n; k++)
            vals[k] = dtype == SW_DTYPE_FLOAT32 ? sw_value_f64((double)k)
                      : dtype == SW_DTYPE_INT32 ? sw_value_i64(k)
                                                : sw_value_i64(k % 2);
        st = vals ? sw_carrier_new_like(c, n, vals, 0, dtype, &r) : SW_ENOMEM;
        free(vals);
        sw_carrier_unref(c);
        if (!expect_ok(st, "an immutable CPU carrier"))
            return NULL;
        c = r;
    }
    return c;
}

/* ---------------------------------------------------------- construction */

static void test_tensor_new(void) {
    int64_t base = sw_debug_live_allocs();
    sw_carrier *c10 = iota_cpu(10, SW_DTYPE_FLOAT32, 1);
    sw_carrier *c9 = iota_cpu(9, SW_DTYPE_FLOAT32, 1);
    sw_carrier *c6 = iota_cpu(6, SW_DTYPE_FLOAT32, 1);
    sw_carrier *c0 = iota_cpu(0, SW_DTYPE_FLOAT32, 1);
    sw_layout *l = P("(2,3):(1,4)"); /* size 6, cosize 10 */
    sw_layout *one = P("1:1");
    sw_layout *bcast = P("4:0"); /* size 4, cosize 1 */
    sw_layout *empty = P("():()");
    if (!c10 || !c9 || !c6 || !c0 || !l || !one || !bcast || !empty)
        goto done;
    is_int(sw_layout_size(l), 6, "the test layout has size 6");
    is_int(sw_layout_cosize(l), 10, "and cosize 10");

    sw_tensor *t = NULL;
    sw_status st = sw_tensor_new(c10, 0, l, &t);
    if (expect_ok(st, "(2,3):(1,4) at offset 0 over 10 elements")) {
        ok(sw_tensor_carrier(t) == c10, "sw_tensor_carrier is the carrier");
        ok(sw_tensor_layout(t) == l, "sw_tensor_layout is the layout");
        is_int(sw_tensor_offset(t), 0, "sw_tensor_offset");
        is_int(sw_tensor_size(t), 6, "sw_tensor_size is the logical size");
        is_int(sw_tensor_dtype(t), SW_DTYPE_FLOAT32, "sw_tensor_dtype");
        is_int(sw_tensor_version(t), 0, "sw_tensor_version");
        ok(sw_tensor_is_mutable(t), "sw_tensor_is_mutable");
        ok(sw_tensor_is_differentiable(t),
           "a Float32 tensor is differentiable");
        ok(sw_tensor_retain(t) == t, "sw_tensor_retain returns the tensor");
        sw_tensor_unref(t);
        ok(sw_tensor_get_peer(t) == NULL, "no peer at first");
        sw_tensor_unref(t);
    }

    struct {
        sw_carrier *c;
        int64_t offset;
        sw_layout *l;
        const char *name;
    } good[] = {
        {c10, 9, one, "1:1 at offset 9 of 10 (the last element)"},
        {c6, 5, bcast, "4:0 (cosize 1) at offset 5 of 6"},
        {c6, 0, empty, "():() (cosize 1) at offset 0 of 6"},
        {c10, 10 - 1, empty, "():() at offset 9 of 10"},
    };
    for (size_t k = 0; k < sizeof good / sizeof good[0]; k++) {
        t = NULL;
        st = sw_tensor_new(good[k].c, good[k].offset, good[k].l, &t);
        if (expect_ok(st, good[k].name)) {
            is_int(sw_tensor_offset(t), good[k].offset, "%s: offset",
                   good[k].name);
            is_int(sw_tensor_size(t), sw_layout_size(good[k].l), "%s: size",
                   good[k].name);
            sw_tensor_unref(t);
        }
    }

    struct {
        sw_carrier *c;
        int64_t offset;
        sw_layout *l;
        const char *msg;
        const char *name;
    } bad[] = {
        {c10, 1, l, "Tensor storage exceeds carrier size",
         "(2,3):(1,4) at offset 1 of 10"},
        {c9, 0, l, "Tensor storage exceeds carrier size",
         "(2,3):(1,4) over 9 elements (size 6 fits, cosize 10 does not)"},
        {c6, 0, l, "Tensor storage exceeds carrier size",
         "(2,3):(1,4) over 6 elements"},
        {c10, 10, one, "Tensor storage exceeds carrier size",
         "1:1 at offset 10 of 10"},
        {c10, 11, one, "Tensor storage exceeds carrier size",
         "offset 11 > size 10"},
        {c10, INT64_MAX, one, "Tensor storage exceeds carrier size",
         "offset INT64_MAX"},
        {c6, 6, bcast, "Tensor storage exceeds carrier size",
         "4:0 at offset 6 of 6"},
        {c0, 0, empty, "Tensor storage exceeds carrier size",
         "():() over 0 elements"},
        {c10, -1, one, "Tensor offset must be non-negative", "offset -1"},
        {c10, INT64_MIN, one, "Tensor offset must be non-negative",
         "offset INT64_MIN"},
        {c0, -1, l, "Tensor offset must be non-negative",
         "offset -1 over 0 elements (the offset is checked first)"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        t = SENT_TENSOR;
        st = sw_tensor_new(bad[k].c, bad[k].offset, bad[k].l, &t);
        expect_fail(st, SW_EVALUE, bad[k].msg, bad[k].name);
        ok(t == SENT_TENSOR, "%s leaves its out-parameter alone", bad[k].name);
    }
    t = SENT_TENSOR;
    st = sw_tensor_new(NULL, 0, one, &t);
    ok(st != SW_OK, "a tensor without a carrier is refused (%s)", S(st));
    ok(t == SENT_TENSOR, "and leaves its out-parameter alone");
    sw_clear_error();
    st = sw_tensor_new(c10, 0, NULL, &t);
    ok(st != SW_OK, "a tensor without a layout is refused (%s)", S(st));
    ok(t == SENT_TENSOR, "and leaves its out-parameter alone");
    sw_clear_error();

    /* A released carrier has size 0: no storage fits. */
    st = sw_carrier_release_storage(c9);
    expect_ok(st, "releasing a carrier");
    st = sw_tensor_new(c9, 0, one, &t);
    expect_fail(st, SW_EVALUE, "Tensor storage exceeds carrier size",
                "a tensor over a released carrier");
    ok(t == SENT_TENSOR, "and leaves its out-parameter alone");

done:
    sw_carrier_unref(c10);
    sw_carrier_unref(c9);
    sw_carrier_unref(c6);
    sw_carrier_unref(c0);
    sw_layout_unref(l);
    sw_layout_unref(one);
    sw_layout_unref(bcast);
    sw_layout_unref(empty);
    leak_check(base, "sw_tensor_new");
}

static void test_tensor_getters(void) {
    int64_t base = sw_debug_live_allocs();
    sw_layout *l = P("3:1");
    static const struct {
        sw_dtype dtype;
        int generic;
        int differentiable;
    } rows[] = {
        {SW_DTYPE_FLOAT32, 0, 1}, {SW_DTYPE_INT32, 0, 0},
        {SW_DTYPE_BOOL, 0, 0},    {SW_DTYPE_FLOATING, 1, 1},
        {SW_DTYPE_ANY, 1, 0},
    };
    for (size_t k = 0; l && k < sizeof rows / sizeof rows[0]; k++) {
        sw_carrier *c = NULL;
        sw_status st;
        if (rows[k].generic) {
            sw_carrier *d = iota_generic(3, 1);
            if (!d)
                continue;
            st = sw_carrier_allocate_like(d, 3, 1, rows[k].dtype, 0, &c);
            sw_carrier_unref(d);
        } else {
            st = sw_cpu_new(3, rows[k].dtype, 1, 0, &c);
        }
        if (!expect_ok(st, sw_dtype_name(rows[k].dtype)))
            continue;
        sw_tensor *t = NULL;
        st = sw_tensor_new(c, 0, l, &t);
        if (expect_ok(st, "a tensor of each dtype")) {
            is_int(sw_tensor_dtype(t), rows[k].dtype, "%s tensor: dtype",
                   sw_dtype_name(rows[k].dtype));
            is_int(sw_tensor_is_differentiable(t) != 0, rows[k].differentiable,
                   "%s tensor: is_differentiable",
                   sw_dtype_name(rows[k].dtype));
            sw_tensor_unref(t);
        }
        sw_carrier_unref(c);
    }

    /* Mutability and version follow the carrier at every call. */
    sw_carrier *c = iota_cpu(3, SW_DTYPE_FLOAT32, 1);
    sw_tensor *t = NULL;
    if (c && l && expect_ok(sw_tensor_new(c, 0, l, &t), "a tensor")) {
        ok(sw_tensor_is_mutable(t), "mutable with its carrier");
        sw_status st = sw_carrier_set(c, 1, &(sw_value){.kind = SW_VALUE_NONE});
        expect_ok(st, "a write through the carrier");
        is_int(sw_tensor_version(t), 1, "the tensor sees the carrier version");
        int64_t tok = 0;
        st = sw_carrier_claim(c, &tok);
        if (expect_ok(st, "claiming the carrier")) {
            ok(!sw_tensor_is_mutable(t), "not mutable while owned");
            st = tset_f(t, 0, 1.0);
            expect_fail(st, SW_ERUNTIME, "Carrier is not mutable",
                        "a tensor write while the carrier is owned");
            st = sw_carrier_relinquish(c, tok);
            expect_ok(st, "relinquish");
            ok(sw_tensor_is_mutable(t), "mutable again");
        }
        sw_tensor_unref(t);
    }
    sw_carrier_unref(c);
    c = iota_cpu(3, SW_DTYPE_FLOAT32, 0);
    if (c && l &&
        expect_ok(sw_tensor_new(c, 0, l, &t), "an immutable tensor")) {
        ok(!sw_tensor_is_mutable(t), "not mutable with an immutable carrier");
        sw_tensor_unref(t);
    }
    sw_carrier_unref(c);
    sw_layout_unref(l);
    leak_check(base, "tensor getters");
}

/* The tensor holds its carrier and layout after the caller drops them. */
static void test_tensor_keeps_alive(void) {
    int64_t base = sw_debug_live_allocs();
    sw_carrier *c = iota_cpu(8, SW_DTYPE_INT32, 1);
    sw_layout *l = P("(2,2):(1,4)");
    sw_tensor *t = NULL;
    if (!c || !l || !expect_ok(sw_tensor_new(c, 1, l, &t), "a tensor")) {
        sw_carrier_unref(c);
        sw_layout_unref(l);
        return;
    }
    int64_t held = sw_debug_live_allocs();
    sw_carrier_unref(c);
    sw_layout_unref(l);
    is_int(sw_debug_live_allocs(), held,
           "dropping the caller's references frees nothing");
    char buf[64];
    sw_layout_format(sw_tensor_layout(t), buf, sizeof buf);
    is_str(buf, "(2,2):(1,4)", "the layout is alive through the tensor");
    is_int(tget_num(t, 3), 1 + 1 + 4,
           "the carrier is alive through the tensor");
    sw_status st = tset_f(t, 2, 1.0);
    is_int(st, SW_ETYPE, "the carrier still converts (double into Int32)");
    sw_clear_error();
    sw_value v = sw_value_i64(42);
    st = sw_tensor_set(t, 2, &v);
    expect_ok(st, "a write after the caller dropped the carrier");
    is_int(cget_num(sw_tensor_carrier(t), 5), 42, "it landed at 1 + 4");
    sw_tensor_unref(t);
    leak_check(base, "tensor keep-alive");
}

/* ------------------------------------------------------- element access */

static void test_tensor_access(void) {
    int64_t base = sw_debug_live_allocs();
    sw_carrier *c = iota_generic(400, 1);
    sw_layout *l = P("(2,(3,4)):(1,(10,100))");
    sw_tensor *t = NULL;
    if (!c || !l || !expect_ok(sw_tensor_new(c, 5, l, &t), "a tensor")) {
        sw_carrier_unref(c);
        sw_layout_unref(l);
        return;
    }
    bool same = true;
    for (int64_t i = 0; i < 24; i++) {
        sw_value v = sentinel_value();
        sw_status st = sw_tensor_get(t, i, &v);
        if (st != SW_OK || v.kind != SW_VALUE_F64 ||
            v.as.f != (double)(5 + ref_index(l, i))) {
            diag("get(%lld): status %s, kind %d, value %g", (long long)i, S(st),
                 (int)v.kind, v.as.f);
            same = false;
        }
    }
    ok(same, "get(i) reads offset + layout(i) for every i");
    same = true;
    for (int64_t i = 0; i < 24; i++) {
        sw_status st = tset_f(t, i, 1000.0 + (double)i);
        same = same && st == SW_OK &&
               cget_num(c, 5 + ref_index(l, i)) == 1000.0 + (double)i;
    }
    ok(same, "set(i) writes offset + layout(i) for every i");
    is_int(sw_tensor_version(t), 24, "24 writes, 24 bumps");
    is_int(cget_num(c, 4), 4, "the element before the offset is untouched");
    is_int(cget_num(c, 7), 7, "a hole of the layout is untouched");

    static const int64_t bad_index[] = {24, 25, -1, INT64_MIN, INT64_MAX};
    for (size_t k = 0; k < sizeof bad_index / sizeof bad_index[0]; k++) {
        char name[64];
        snprintf(name, sizeof name, "tensor get(%lld)",
                 (long long)bad_index[k]);
        sw_value v = sentinel_value();
        sw_status st = sw_tensor_get(t, bad_index[k], &v);
        expect_fail(st, SW_EVALUE, "Key is not in domain of shape", name);
        ok(value_untouched(&v), "%s leaves its out-parameter alone", name);
        snprintf(name, sizeof name, "tensor set(%lld)",
                 (long long)bad_index[k]);
        st = tset_f(t, bad_index[k], 1.0);
        expect_fail(st, SW_EVALUE, "Key is not in domain of shape", name);
    }
    is_int(sw_tensor_version(t), 24, "refused writes do not bump");

    /* Coordinates. */
    static const struct {
        int32_t ntok;
        int32_t recipe[6];
        int64_t values[4];
        int64_t index;
        const char *name;
    } coords[] = {
        {2, {LEAF, LEAF}, {1, 2}, 1 + 20, "(1,2): a nested mode by index"},
        {5,
         {LEAF, PUSH, LEAF, LEAF, POP},
         {1, 2, 3},
         1 + 20 + 300,
         "(1,(2,3))"},
        {5, {LEAF, PUSH, LEAF, LEAF, POP}, {0, 0, 1}, 100, "(0,(0,1))"},
        {1, {LEAF}, {1}, 1, "(1): a missing trailing coordinate is 0"},
        {0, {0}, {0}, 0, "(): every coordinate missing"},
        {3,
         {LEAF, LEAF, LEAF},
         {1, 11, 9},
         1 + 20 + 300,
         "(1,11,9): extra coordinates are ignored"},
        {4,
         {LEAF, PUSH, LEAF, POP},
         {0, 2},
         20,
         "(0,(2)): a nested coordinate with a missing part"},
    };
    for (size_t k = 0; k < sizeof coords / sizeof coords[0]; k++) {
        sw_value v = sentinel_value();
        sw_status st = sw_tensor_get_coord(t, coords[k].ntok, coords[k].recipe,
                                           coords[k].values, &v);
        if (expect_ok(st, coords[k].name))
            ok(v.kind == SW_VALUE_F64 &&
                   v.as.f == cget_num(c, 5 + coords[k].index),
               "get_coord %s reads element 5 + %lld", coords[k].name,
               (long long)coords[k].index);
        sw_value_clear(&v);
        sw_value w = sw_value_f64(-1.0 - (double)k);
        st = sw_tensor_set_coord(t, coords[k].ntok, coords[k].recipe,
                                 coords[k].values, &w);
        if (expect_ok(st, coords[k].name))
            ok(cget_num(c, 5 + coords[k].index) == -1.0 - (double)k,
               "set_coord %s writes element 5 + %lld", coords[k].name,
               (long long)coords[k].index);
    }
    int64_t version = sw_tensor_version(t);
    static const struct {
        int32_t ntok;
        int32_t recipe[6];
        int64_t values[4];
        sw_status status;
        const char *msg;
        const char *name;
    } bad_coords[] = {
        {2,
         {LEAF, LEAF},
         {2, 0},
         SW_EVALUE,
         "Key is not in domain of shape",
         "(2,0): past the first mode"},
        {2,
         {LEAF, LEAF},
         {0, 12},
         SW_EVALUE,
         "Key is not in domain of shape",
         "(0,12): past the nested mode's size"},
        {5,
         {LEAF, PUSH, LEAF, LEAF, POP},
         {0, 3, 0},
         SW_EVALUE,
         "Key is not in domain of shape",
         "(0,(3,0))"},
        {1,
         {LEAF},
         {-1},
         SW_EVALUE,
         "Key is not in domain of shape",
         "(-1): negative"},
        {3,
         {PUSH, LEAF, POP},
         {0},
         SW_ETYPE,
         NULL,
         "((0)): a tuple for a leaf mode"},
    };
    for (size_t k = 0; k < sizeof bad_coords / sizeof bad_coords[0]; k++) {
        char name[128];
        snprintf(name, sizeof name, "get_coord %s", bad_coords[k].name);
        sw_value v = sentinel_value();
        sw_status st =
            sw_tensor_get_coord(t, bad_coords[k].ntok, bad_coords[k].recipe,
                                bad_coords[k].values, &v);
        expect_fail(st, bad_coords[k].status, bad_coords[k].msg, name);
        ok(value_untouched(&v), "%s leaves its out-parameter alone", name);
        snprintf(name, sizeof name, "set_coord %s", bad_coords[k].name);
        sw_value w = sw_value_f64(5.0);
        st = sw_tensor_set_coord(t, bad_coords[k].ntok, bad_coords[k].recipe,
                                 bad_coords[k].values, &w);
        expect_fail(st, bad_coords[k].status, bad_coords[k].msg, name);
    }
    is_int(sw_tensor_version(t), version, "refused coordinate writes");

    /* Layout errors come before carrier errors. */
    {
        sw_status st = sw_carrier_release_storage(c);
        expect_ok(st, "releasing the carrier");
        sw_value v = sentinel_value();
        st = sw_tensor_get(t, 24, &v);
        expect_fail(st, SW_EVALUE, "Key is not in domain of shape",
                    "get(24) of a released tensor: the layout first");
        st = sw_tensor_get(t, 0, &v);
        expect_fail(st, SW_ERUNTIME, "Carrier is released",
                    "get(0) of a released tensor");
        ok(value_untouched(&v), "and leaves its out-parameter alone");
        st = tset_f(t, 24, 1.0);
        expect_fail(st, SW_EVALUE, "Key is not in domain of shape",
                    "set(24) of a released tensor: the layout first");
        st = tset_f(t, 0, 1.0);
        expect_fail(st, SW_ERUNTIME, "Carrier is released",
                    "set(0) of a released tensor");
        int32_t r2[2] = {LEAF, LEAF};
        int64_t v2[2] = {1, 2};
        st = sw_tensor_get_coord(t, 2, r2, v2, &v);
        expect_fail(st, SW_ERUNTIME, "Carrier is released",
                    "get_coord of a released tensor");
        int64_t v3[2] = {2, 0};
        st = sw_tensor_get_coord(t, 2, r2, v3, &v);
        expect_fail(st, SW_EVALUE, "Key is not in domain of shape",
                    "get_coord out of domain, released: the layout first");
    }
    sw_tensor_unref(t);
    sw_carrier_unref(c);

    /* Immutable and converting carriers. */
    c = iota_cpu(8, SW_DTYPE_INT32, 0);
    sw_layout *l8 = P("8:1");
    if (c && l8 && expect_ok(sw_tensor_new(c, 0, l8, &t), "immutable")) {
        sw_value v = sw_value_i64(1);
        sw_status st = sw_tensor_set(t, 0, &v);
        expect_fail(st, SW_ERUNTIME, "Carrier is not mutable",
                    "a write into an immutable tensor");
        st = sw_tensor_set(t, 8, &v);
        expect_fail(st, SW_EVALUE, "Key is not in domain of shape",
                    "an out-of-domain write, immutable: the layout first");
        sw_tensor_unref(t);
    }
    sw_carrier_unref(c);
    c = iota_cpu(8, SW_DTYPE_INT32, 1);
    if (c && l8 && expect_ok(sw_tensor_new(c, 0, l8, &t), "Int32")) {
        sw_status st = tset_f(t, 3, 1.5);
        expect_fail(st, SW_ETYPE, "CPU value must be an integer",
                    "a double into an Int32 tensor");
        st = tset_f(t, 8, 1.5);
        expect_fail(st, SW_EVALUE, "Key is not in domain of shape",
                    "a double out of domain: the layout first");
        sw_value big = sw_value_i64(INT64_C(1) << 33);
        int32_t r1[1] = {LEAF};
        int64_t v1[1] = {3};
        st = sw_tensor_set_coord(t, 1, r1, v1, &big);
        expect_fail(st, SW_EOVERFLOW, "CPU value is out of int32 range",
                    "2^33 into an Int32 tensor by coordinate");
        is_int(cget_num(c, 3), 3, "the refused values left the element");
        is_int(sw_tensor_version(t), 0, "and the version");
        sw_value v = sentinel_value();
        st = sw_tensor_get(t, 3, &v);
        if (expect_ok(st, "an Int32 tensor read"))
            ok(v.kind == SW_VALUE_I64 && v.as.i == 3, "reads the integer 3");
        sw_tensor_unref(t);
    }
    sw_carrier_unref(c);
    c = iota_cpu(4, SW_DTYPE_FLOAT32, 1);
    sw_layout *l4 = P("4:1");
    if (c && l4 && expect_ok(sw_tensor_new(c, 0, l4, &t), "Float32")) {
        sw_status st = tset_f(t, 1, 0.1);
        expect_ok(st, "0.1 into a Float32 tensor");
        sw_value v = sentinel_value();
        st = sw_tensor_get(t, 1, &v);
        if (expect_ok(st, "a Float32 tensor read"))
            ok(v.kind == SW_VALUE_F64 && v.as.f == (double)0.1f,
               "reads (double)0.1f");
        sw_tensor_unref(t);
    }
    sw_carrier_unref(c);
    sw_layout_unref(l);
    sw_layout_unref(l8);
    sw_layout_unref(l4);
    leak_check(base, "tensor access");
}

/* Two views of one carrier see each other's writes and one version. */
static void test_views(void) {
    int64_t base = sw_debug_live_allocs();
    sw_carrier *c = iota_cpu(12, SW_DTYPE_FLOAT32, 1);
    sw_layout *flat = P("12:1");
    sw_layout *tile = P("(2,2):(3,1)");
    sw_layout *bcast = P("3:0");
    sw_tensor *t1 = NULL, *t2 = NULL, *t3 = NULL;
    if (!c || !flat || !tile || !bcast ||
        !expect_ok(sw_tensor_new(c, 0, flat, &t1), "the flat view") ||
        !expect_ok(sw_tensor_new(c, 2, tile, &t2), "the tile view") ||
        !expect_ok(sw_tensor_new(c, 6, bcast, &t3), "the broadcast view"))
        goto done;
    /* t2 element i is carrier element 2 + (i%2)*3 + (i/2): 2, 5, 3, 6. */
    static const int64_t where[4] = {2, 5, 3, 6};
    bool same = true;
    for (int i = 0; i < 4; i++)
        same = same && tget_num(t2, i) == (double)where[i];
    ok(same, "the tile view reads elements 2, 5, 3, 6");
    sw_status st = tset_f(t2, 1, 70.0);
    expect_ok(st, "a write through the tile view");
    is_int(tget_num(t1, 5), 70, "the flat view sees it at 5");
    st = tset_f(t1, 3, 90.0);
    expect_ok(st, "a write through the flat view");
    is_int(tget_num(t2, 2), 90, "the tile view sees it at its element 2");
    st = tset_f(t2, 3, 60.0);
    expect_ok(st, "a write to element 6 through the tile view");
    same = true;
    for (int i = 0; i < 3; i++)
        same = same && tget_num(t3, i) == 60.0;
    ok(same, "the broadcast view reads element 6 everywhere");
    is_int(sw_tensor_version(t1), 3, "the flat view sees version 3");
    is_int(sw_tensor_version(t2), 3, "the tile view sees version 3");
    is_int(sw_tensor_version(t3), 3, "the broadcast view sees version 3");
    is_int(sw_carrier_version(c), 3, "the carrier's version");
    st = tset_f(t3, 2, 1.0);
    expect_ok(st, "a write through the broadcast view");
    is_int(tget_num(t2, 3), 1, "lands on element 6");
    is_int(sw_tensor_version(t1), 4, "and every view sees the bump");
    st = sw_carrier_release_storage(c);
    expect_ok(st, "releasing the shared carrier");
    sw_value v = sentinel_value();
    st = sw_tensor_get(t1, 0, &v);
    expect_fail(st, SW_ERUNTIME, "Carrier is released", "flat view read");
    st = sw_tensor_get(t2, 0, &v);
    expect_fail(st, SW_ERUNTIME, "Carrier is released", "tile view read");
done:
    sw_tensor_unref(t1);
    sw_tensor_unref(t2);
    sw_tensor_unref(t3);
    sw_carrier_unref(c);
    sw_layout_unref(flat);
    sw_layout_unref(tile);
    sw_layout_unref(bcast);
    leak_check(base, "views");
}

/* ---------------------------------------------------------------- peers */

typedef struct peer {
    int retains;
    int releases;
} peer;

static void peer_retain(void *p) {
    ((peer *)p)->retains++;
}

static void peer_release(void *p) {
    ((peer *)p)->releases++;
}

static const sw_peer_hooks counting_hooks = {peer_retain, peer_release};

static void test_tensor_peers(void) {
    int64_t base = sw_debug_live_allocs();
    sw_carrier *c = iota_cpu(4, SW_DTYPE_FLOAT32, 1);
    sw_layout *l = P("4:1");
    sw_tensor *t = NULL;
    if (!c || !l || !expect_ok(sw_tensor_new(c, 0, l, &t), "a tensor")) {
        sw_carrier_unref(c);
        sw_layout_unref(l);
        return;
    }
    peer p = {0, 0}, q = {0, 0}, cp = {0, 0};
    sw_tensor_set_peer(t, &p, &counting_hooks);
    ok(sw_tensor_get_peer(t) == &p, "sw_tensor_get_peer");
    is_int(p.retains + p.releases, 0, "one reference: no hook");
    sw_tensor_retain(t);
    is_int(p.retains, 1, "1 -> 2 retains the peer");
    sw_tensor_retain(t);
    is_int(p.retains, 1, "2 -> 3 does not");
    is_int(sw_tensor_refcount(t), 3,
           "sw_tensor_refcount counts every reference, the peer's too");
    sw_tensor_unref(t);
    is_int(p.releases, 0, "3 -> 2 does not release");
    sw_tensor_unref(t);
    is_int(p.releases, 1, "2 -> 1 releases the peer");
    sw_tensor_retain(t);
    is_int(p.retains, 2, "1 -> 2 retains again");
    sw_tensor_set_peer(t, &q, &counting_hooks);
    is_int(q.retains, 1, "a peer set while shared is retained at once");
    is_int(p.releases, 2, "the replaced peer is released");
    sw_tensor_set_peer(t, NULL, NULL);
    ok(sw_tensor_get_peer(t) == NULL, "the peer is cleared");
    is_int(q.releases, 1, "clearing a shared tensor's peer releases it");
    sw_tensor_unref(t);
    is_int(q.releases + p.releases, 3, "no peer: 2 -> 1 calls nothing");

    /* A tensor is one more reference to its carrier. */
    sw_carrier_set_peer(c, &cp, &counting_hooks);
    sw_tensor *t2 = NULL;
    if (expect_ok(sw_tensor_new(c, 0, l, &t2), "a second tensor")) {
        is_int(cp.retains, 1,
               "the carrier peer, set with two references (the caller's and "
               "the first tensor's), was retained once");
        is_int(sw_carrier_refcount(c), 3,
               "each tensor holds one reference to its carrier");
        sw_tensor_unref(t2);
        is_int(cp.releases, 0, "3 -> 2 carrier references: no release");
    }
    sw_carrier_unref(c); /* the caller's reference: only t's remains */
    is_int(cp.releases, 1, "2 -> 1 carrier references releases its peer");
    sw_tensor_set_peer(t, &p, &counting_hooks);
    sw_tensor_unref(t); /* destroys t and with it the carrier */
    is_int(p.retains, 2, "destroying the tensor calls no retain");
    is_int(p.releases, 2, "nor release");
    is_int(cp.releases, 1, "destroying the carrier calls no hook");
    sw_layout_unref(l);
    leak_check(base, "tensor peers");
}

/* --------------------------------------------------------------- scatter */

/* A snapshot of a CPU carrier's elements as doubles, for comparison. */
static bool cpu_same(sw_carrier *c, const double *want, int64_t n) {
    for (int64_t k = 0; k < n; k++)
        if (cget_num(c, k) != want[k])
            return false;
    return true;
}

static void snapshot(sw_carrier *c, double *out, int64_t n) {
    for (int64_t k = 0; k < n; k++)
        out[k] = cget_num(c, k);
}

static void test_scatter_checks(void) {
    int64_t base = sw_debug_live_allocs();
    sw_carrier *dst = iota_cpu(10, SW_DTYPE_FLOAT32, 1);
    sw_carrier *other = iota_cpu(10, SW_DTYPE_FLOAT32, 1);
    sw_carrier *dst_im = iota_cpu(10, SW_DTYPE_FLOAT32, 0);
    sw_carrier *dst_i32 = iota_cpu(10, SW_DTYPE_INT32, 1);
    sw_carrier *dst_rel = iota_cpu(10, SW_DTYPE_FLOAT32, 1);
    sw_carrier *src = iota_cpu(6, SW_DTYPE_FLOAT32, 1);
    sw_carrier *src_rel = iota_cpu(6, SW_DTYPE_FLOAT32, 1);
    sw_carrier *gdst = iota_generic(10, 1);
    sw_carrier *gdst_im = iota_generic(10, 0);
    sw_layout *l4 = P("4:1");
    sw_layout *ls = P("(2,3):(1,2)"); /* cosize 6 */
    sw_layout *lm = P("(2,3):(3,1)"); /* cosize 6 */
    sw_layout *lflat = P("6:1");      /* the same size, another shape */
    sw_layout *lswap = P("(3,2):(1,3)");
    sw_layout *lm2 = P("(2,3):(1,2)"); /* the same shape, other strides */
    sw_tensor *onto = NULL, *onto_other = NULL, *onto_im = NULL;
    sw_tensor *onto_i32 = NULL, *onto_rel = NULL, *ts = NULL, *ts_rel = NULL;
    sw_tensor *gonto = NULL, *gonto_im = NULL;
    if (!dst || !other || !dst_im || !dst_i32 || !dst_rel || !src || !src_rel ||
        !gdst || !gdst_im || !l4 || !ls || !lm || !lflat || !lswap || !lm2)
        goto done;
    if (!expect_ok(sw_tensor_new(dst, 1, l4, &onto), "onto") ||
        !expect_ok(sw_tensor_new(other, 1, l4, &onto_other), "onto other") ||
        !expect_ok(sw_tensor_new(dst_im, 1, l4, &onto_im), "onto immutable") ||
        !expect_ok(sw_tensor_new(dst_i32, 1, l4, &onto_i32), "onto Int32") ||
        !expect_ok(sw_tensor_new(dst_rel, 1, l4, &onto_rel), "onto released") ||
        !expect_ok(sw_tensor_new(src, 0, ls, &ts), "to_scatter") ||
        !expect_ok(sw_tensor_new(src_rel, 0, ls, &ts_rel), "released src") ||
        !expect_ok(sw_tensor_new(gdst, 1, l4, &gonto), "Generic onto") ||
        !expect_ok(sw_tensor_new(gdst_im, 1, l4, &gonto_im),
                   "immutable Generic onto"))
        goto done;
    expect_ok(sw_carrier_release_storage(dst_rel), "release a destination");
    expect_ok(sw_carrier_release_storage(src_rel), "release a source");

    double before[10], gbefore[10];
    snapshot(dst, before, 10);
    snapshot(gdst, gbefore, 10);

    struct {
        sw_carrier *c;
        const sw_tensor *src, *onto;
        const sw_layout *mapping;
        int64_t moff;
        sw_status status;
        const char *msg;
        const char *name;
    } bad[] = {
        {dst, NULL, onto, lm, 0, SW_ETYPE, NULL, "no to_scatter"},
        {dst, ts, NULL, lm, 0, SW_ETYPE, NULL, "no scatter_onto"},
        {dst, ts, onto, NULL, 0, SW_ETYPE, NULL, "no mapping"},
        {dst_im, ts, onto_im, lm, 0, SW_ERUNTIME, "Carrier is not mutable",
         "an immutable destination"},
        {dst, ts, onto_other, lm, 0, SW_EVALUE,
         "scatter_onto must be backed by this carrier",
         "scatter_onto over another carrier"},
        {dst, ts, onto, lflat, 0, SW_EVALUE,
         "mapping shape must match to_scatter layout shape",
         "a mapping of shape 6 for (2,3)"},
        {dst, ts, onto, lswap, 0, SW_EVALUE,
         "mapping shape must match to_scatter layout shape",
         "a mapping of shape (3,2) for (2,3)"},
        {dst, ts, onto, lm, -1, SW_EVALUE,
         "mapping_offset must be non-negative", "mapping_offset -1"},
        {dst, ts, onto, lm, INT64_MIN, SW_EVALUE,
         "mapping_offset must be non-negative", "mapping_offset INT64_MIN"},
        {dst, ts, onto, lm, 4, SW_EVALUE,
         "scatter mapping exceeds destination carrier size",
         "1 + 4 + cosize 6 > 10"},
        {dst_rel, ts, onto_rel, lm, 0, SW_ERUNTIME,
         "scatter_onto carrier is released", "a released destination"},
        {dst, ts_rel, onto, lm, 0, SW_ERUNTIME,
         "to_scatter carrier is released", "a released source"},
        {dst_i32, ts, onto_i32, lm, 0, SW_ETYPE,
         "cannot scatter Float32 values into an Int32 CPU carrier",
         "Float32 into Int32"},
        /* The order of the checks (reference section 8). */
        {dst, ts, onto_other, lm, -1, SW_EVALUE,
         "mapping_offset must be non-negative",
         "order: mapping_offset before the destination check"},
        {dst_im, ts, onto, lm, 0, SW_EVALUE,
         "scatter_onto must be backed by this carrier",
         "order: scatter_onto's carrier before mutability"},
        {dst, ts_rel, onto, lflat, 0, SW_ERUNTIME,
         "to_scatter carrier is released",
         "order: a released source before the mapping shape"},
        {dst_i32, ts, onto_i32, lm, 4, SW_ETYPE,
         "cannot scatter Float32 values into an Int32 CPU carrier",
         "order: Float32 into Int32 before the mapped range"},
        /* Generic destinations: the same checks. */
        {gdst_im, ts, gonto_im, lm, 0, SW_ERUNTIME, "Carrier is not mutable",
         "an immutable Generic destination"},
        {gdst, ts, onto, lm, 0, SW_EVALUE,
         "scatter_onto must be backed by this carrier",
         "Generic: scatter_onto over another carrier"},
        {gdst, ts, gonto, lflat, 0, SW_EVALUE,
         "mapping shape must match to_scatter layout shape",
         "Generic: a mapping of another shape"},
        {gdst, ts, gonto, lm, -1, SW_EVALUE,
         "mapping_offset must be non-negative", "Generic: mapping_offset -1"},
        {gdst, ts, gonto, lm, 4, SW_EVALUE,
         "scatter mapping exceeds destination carrier size",
         "Generic: 1 + 4 + cosize 6 > 10"},
        {gdst, ts_rel, gonto, lm, 0, SW_ERUNTIME,
         "to_scatter carrier is released", "Generic: a released source"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        int64_t version = sw_carrier_version(bad[k].c);
        sw_status st = sw_carrier_scatter(bad[k].c, bad[k].src, bad[k].onto,
                                          bad[k].mapping, bad[k].moff);
        expect_fail(st, bad[k].status, bad[k].msg, bad[k].name);
        is_int(sw_carrier_version(bad[k].c), version,
               "%s: the version is unchanged", bad[k].name);
    }
    ok(cpu_same(dst, before, 10), "the refused scatters left the destination");
    ok(cpu_same(gdst, gbefore, 10), "and the Generic destination");
    is_int(sw_carrier_version(src), 0, "and did not touch the source");

    /* Owned: not mutable; in owner access: allowed. */
    int64_t tok = 0;
    snapshot(dst, before, 10);
    int64_t version = sw_carrier_version(dst);
    if (expect_ok(sw_carrier_claim(dst, &tok), "claim the destination")) {
        sw_status st = sw_carrier_scatter(dst, ts, onto, lm, 0);
        expect_fail(st, SW_ERUNTIME, "Carrier is not mutable",
                    "scatter into an owned carrier");
        ok(cpu_same(dst, before, 10), "left the owned destination");
        is_int(sw_carrier_version(dst), version, "and its version");
        expect_ok(sw_carrier_begin_owner_access(dst, tok), "begin access");
        st = sw_carrier_scatter(dst, ts, onto, lm, 0);
        expect_ok(st, "scatter inside owner access");
        is_int(sw_carrier_version(dst), version + 1, "bumps once");
        expect_ok(sw_carrier_end_owner_access(dst, tok), "end access");
        expect_ok(sw_carrier_relinquish(dst, tok), "relinquish");
    }

    /* The mapped range is the carrier's; onto's own layout is ignored. */
    sw_layout *tiny = P("1:0");
    sw_tensor *onto_tiny = NULL;
    if (tiny && expect_ok(sw_tensor_new(dst, 1, tiny, &onto_tiny),
                          "onto with a 1-element layout")) {
        sw_status st = sw_carrier_scatter(dst, ts, onto_tiny, lm, 3);
        expect_ok(st, "1 + 3 + cosize 6 == 10 fits, whatever onto's layout");
        /* dst[4 + lm(i)] = src[ls(i)] */
        bool same = true;
        for (int64_t i = 0; i < 6; i++)
            same = same && cget_num(dst, 4 + ref_index(lm, i)) ==
                               cget_num(src, ref_index(ls, i));
        ok(same, "the scatter used onto's offset and the mapping");
        /* Same shape, other strides: accepted. */
        st = sw_carrier_scatter(dst, ts, onto_tiny, lm2, 0);
        expect_ok(st, "a mapping of the same shape and other strides");
        sw_tensor_unref(onto_tiny);
    }
    sw_layout_unref(tiny);

done:
    sw_tensor_unref(onto);
    sw_tensor_unref(onto_other);
    sw_tensor_unref(onto_im);
    sw_tensor_unref(onto_i32);
    sw_tensor_unref(onto_rel);
    sw_tensor_unref(ts);
    sw_tensor_unref(ts_rel);
    sw_tensor_unref(gonto);
    sw_tensor_unref(gonto_im);
    sw_carrier_unref(dst);
    sw_carrier_unref(other);
    sw_carrier_unref(dst_im);
    sw_carrier_unref(dst_i32);
    sw_carrier_unref(dst_rel);
    sw_carrier_unref(src);
    sw_carrier_unref(src_rel);
    sw_carrier_unref(gdst);
    sw_carrier_unref(gdst_im);
    sw_layout_unref(l4);
    sw_layout_unref(ls);
    sw_layout_unref(lm);
    sw_layout_unref(lflat);
    sw_layout_unref(lswap);
    sw_layout_unref(lm2);
    leak_check(base, "scatter checks");
}

/*
 * One scatter case: a source tensor (its layout and offset over a carrier
 * of src_size elements), a destination of dst_size elements, onto's offset,
 * the mapping and mapping_offset.
 */
typedef struct scatter_case {
    const char *src_layout;
    int64_t src_offset;
    int64_t src_size;
    const char *mapping;
    int64_t onto_offset;
    int64_t mapping_offset;
    int64_t dst_size;
} scatter_case;

static const scatter_case scatter_cases[] = {
    {"8:1", 0, 8, "8:1", 0, 0, 8},
    {"(2,3):(3,1)", 1, 8, "(2,3):(1,4)", 2, 1, 16},
    {"(2,(2,3)):(1,(12,4))", 3, 30, "(2,(2,3)):(6,(1,2))", 1, 2, 16},
    {"(3,2):(0,1)", 2, 4, "(3,2):(2,1)", 0, 5, 12},
    {"((2,2),(2,(1,3))):((1,2),(4,(0,8)))", 0, 24,
     "((2,2),(2,(1,3))):((12,6),(3,(5,1)))", 4, 0, 28},
    {"():()", 5, 6, "():()", 2, 3, 6},
    {"(4,(2,2)):(2,(1,8))", 0, 16, "(4,(2,2)):(1,(8,4))", 0, 0, 16},
    {"(1,5,1):(9,2,7)", 1, 10, "(1,5,1):(3,1,6)", 3, 3, 11},
};

/* Element k of a CPU carrier as the double it holds. */
static double raw_at(sw_carrier *c, int64_t k) {
    void *p = sw_cpu_data(c);
    switch (sw_carrier_dtype(c)) {
    case SW_DTYPE_FLOAT32:
        return ((float *)p)[k];
    case SW_DTYPE_INT32:
        return ((int32_t *)p)[k];
    default:
        return ((uint8_t *)p)[k];
    }
}

/* What a destination of dtype dt stores for the source number x. */
static double convert_to(sw_dtype dt, double x) {
    if (dt == SW_DTYPE_FLOAT32)
        return (float)x;
    if (dt == SW_DTYPE_INT32)
        return (int32_t)x;
    return x != 0.0;
}

/* Fills a CPU carrier with a pattern that differs per dtype and seed. */
static void fill(sw_carrier *c, int64_t n, int seed) {
    void *p = sw_cpu_data(c);
    for (int64_t k = 0; k < n; k++) {
        switch (sw_carrier_dtype(c)) {
        case SW_DTYPE_FLOAT32:
            ((float *)p)[k] = (float)(seed + k) * 0.5f + 0.25f;
            break;
        case SW_DTYPE_INT32:
            /* One value past float32's exact integers. */
            ((int32_t *)p)[k] = k == 0 ? 16777217 : (int32_t)(3 * k - 7 + seed);
            break;
        default:
            ((uint8_t *)p)[k] = (uint8_t)((k + (int64_t)seed) % 3 != 0);
            break;
        }
    }
}

static void run_scatter_case(const scatter_case *sc, sw_dtype sdt,
                             sw_dtype ddt) {
    char name[256];
    snprintf(name, sizeof name, "scatter %s %s@%lld -> %s %s@%lld+%lld",
             sw_dtype_name(sdt), sc->src_layout, (long long)sc->src_offset,
             sw_dtype_name(ddt), sc->mapping, (long long)sc->onto_offset,
             (long long)sc->mapping_offset);
    sw_carrier *src = NULL, *dst = NULL;
    sw_layout *ls = P(sc->src_layout), *lm = P(sc->mapping), *lo = P("1:1");
    sw_tensor *ts = NULL, *onto = NULL;
    double *want = calloc((size_t)sc->dst_size, sizeof *want);
    double *src_before = calloc((size_t)sc->src_size, sizeof *src_before);
    if (!ls || !lm || !lo || !want || !src_before)
        goto done;
    if (!expect_ok(sw_cpu_new(sc->src_size, sdt, 1, 0, &src), name) ||
        !expect_ok(sw_cpu_new(sc->dst_size, ddt, 1, 0, &dst), name))
        goto done;
    fill(src, sc->src_size, 1);
    fill(dst, sc->dst_size, 100);
    if (!expect_ok(sw_tensor_new(src, sc->src_offset, ls, &ts), name) ||
        !expect_ok(sw_tensor_new(dst, sc->onto_offset, lo, &onto), name))
        goto done;
    /* The brute-force expectation. */
    for (int64_t k = 0; k < sc->dst_size; k++)
        want[k] = raw_at(dst, k);
    for (int64_t k = 0; k < sc->src_size; k++)
        src_before[k] = raw_at(src, k);
    for (int64_t i = 0; i < sw_layout_size(lm); i++) {
        int64_t d = sc->onto_offset + sc->mapping_offset + ref_index(lm, i);
        int64_t s = sc->src_offset + ref_index(ls, i);
        want[d] = convert_to(ddt, raw_at(src, s));
    }
    sw_status st = sw_carrier_scatter(dst, ts, onto, lm, sc->mapping_offset);
    if (!expect_ok(st, name))
        goto done;
    bool same = true;
    for (int64_t k = 0; k < sc->dst_size; k++) {
        if (raw_at(dst, k) != want[k]) {
            if (same)
                diag("%s: first difference at %lld: got %.9g, expected %.9g",
                     name, (long long)k, raw_at(dst, k), want[k]);
            same = false;
        }
    }
    ok(same, "%s: every element as the brute force says", name);
    is_int(sw_carrier_version(dst), 1, "%s: one bump for the bulk copy", name);
    same = true;
    for (int64_t k = 0; k < sc->src_size; k++)
        same = same && raw_at(src, k) == src_before[k];
    ok(same && sw_carrier_version(src) == 0, "%s: the source is unchanged",
       name);
done:
    sw_tensor_unref(ts);
    sw_tensor_unref(onto);
    sw_carrier_unref(src);
    sw_carrier_unref(dst);
    sw_layout_unref(ls);
    sw_layout_unref(lm);
    sw_layout_unref(lo);
    free(want);
    free(src_before);
}

static void test_scatter_cpu(void) {
    int64_t base = sw_debug_live_allocs();
    static const sw_dtype pairs[][2] = {
        {SW_DTYPE_FLOAT32, SW_DTYPE_FLOAT32},
        {SW_DTYPE_INT32, SW_DTYPE_FLOAT32},
        {SW_DTYPE_INT32, SW_DTYPE_INT32},
        {SW_DTYPE_BOOL, SW_DTYPE_FLOAT32},
        {SW_DTYPE_BOOL, SW_DTYPE_INT32},
        {SW_DTYPE_BOOL, SW_DTYPE_BOOL},
    };
    size_t ncase = sizeof scatter_cases / sizeof scatter_cases[0];
    for (size_t p = 0; p < sizeof pairs / sizeof pairs[0]; p++)
        for (size_t k = 0; k < ncase; k++)
            run_scatter_case(&scatter_cases[k], pairs[p][0], pairs[p][1]);

    /* Int32 into Float32 converts, rounding to float32. */
    sw_carrier *src = NULL, *dst = NULL;
    sw_layout *l = P("3:1");
    sw_tensor *ts = NULL, *onto = NULL;
    if (l && expect_ok(sw_cpu_new(3, SW_DTYPE_INT32, 1, 0, &src), "Int32") &&
        expect_ok(sw_cpu_new(3, SW_DTYPE_FLOAT32, 1, 0, &dst), "Float32") &&
        expect_ok(sw_tensor_new(src, 0, l, &ts), "source") &&
        expect_ok(sw_tensor_new(dst, 0, l, &onto), "onto")) {
        int32_t *s = sw_cpu_data(src);
        s[0] = 7;
        s[1] = -16777217;
        s[2] = INT32_MAX;
        sw_status st = sw_carrier_scatter(dst, ts, onto, l, 0);
        expect_ok(st, "Int32 into Float32");
        float *d = sw_cpu_data(dst);
        ok(d[0] == 7.0f, "7 becomes 7.0f");
        ok(d[1] == -16777216.0f, "-2^24-1 rounds to -2^24");
        ok(d[2] == 2147483648.0f, "INT32_MAX rounds to 2^31");
        is_int(sw_carrier_version(dst), 1, "one bump");
    }
    sw_tensor_unref(ts);
    sw_tensor_unref(onto);
    sw_carrier_unref(src);
    sw_carrier_unref(dst);
    sw_layout_unref(l);
    leak_check(base, "CPU scatter");
}

/* The element path: every write goes through sw_carrier_set. */
static void test_scatter_elementwise(void) {
    int64_t base = sw_debug_live_allocs();
    sw_carrier *gdst = iota_generic(16, 1);
    sw_carrier *gsrc = iota_generic(8, 1);
    sw_carrier *csrc = iota_cpu(8, SW_DTYPE_FLOAT32, 1);
    sw_carrier *cdst = iota_cpu(16, SW_DTYPE_FLOAT32, 1);
    sw_carrier *idst = iota_cpu(16, SW_DTYPE_INT32, 1);
    sw_layout *ls = P("(2,3):(3,1)"); /* cosize 6 */
    sw_layout *lm = P("(2,3):(1,4)"); /* cosize 10 */
    sw_layout *lo = P("16:1");
    sw_tensor *tg = NULL, *tc = NULL, *oc = NULL, *oi = NULL;
    if (!gdst || !gsrc || !csrc || !cdst || !idst || !ls || !lm || !lo)
        goto done;
    if (!expect_ok(sw_tensor_new(gsrc, 1, ls, &tg), "Generic source") ||
        !expect_ok(sw_tensor_new(csrc, 2, ls, &tc), "CPU source") ||
        !expect_ok(sw_tensor_new(cdst, 0, lo, &oc), "CPU onto") ||
        !expect_ok(sw_tensor_new(idst, 0, lo, &oi), "Int32 onto"))
        goto done;
    /* onto has offset 2; only the carrier's size bounds the mapping. */
    sw_tensor *onto_g = NULL;
    sw_layout *l1 = P("1:1");
    if (!l1 || !expect_ok(sw_tensor_new(gdst, 2, l1, &onto_g), "onto"))
        goto done2;

    struct {
        sw_carrier *dst;
        sw_tensor *src, *onto;
        int64_t moff;
        const char *name;
    } cases[] = {
        {gdst, tc, onto_g, 3, "CPU into Generic"},
        {gdst, tg, onto_g, 1, "Generic into Generic"},
        {cdst, tg, oc, 2, "Generic into CPU"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        double want[16];
        snapshot(cases[k].dst, want, 16);
        int64_t base_off = sw_tensor_offset(cases[k].onto) + cases[k].moff;
        sw_carrier *sc = sw_tensor_carrier(cases[k].src);
        for (int64_t i = 0; i < 6; i++)
            want[base_off + ref_index(lm, i)] =
                cget_num(sc, sw_tensor_offset(cases[k].src) + ref_index(ls, i));
        int64_t version = sw_carrier_version(cases[k].dst);
        sw_status st = sw_carrier_scatter(cases[k].dst, cases[k].src,
                                          cases[k].onto, lm, cases[k].moff);
        if (expect_ok(st, cases[k].name)) {
            ok(cpu_same(cases[k].dst, want, 16),
               "%s: every element as the brute force says", cases[k].name);
            is_int(sw_carrier_version(cases[k].dst), version + 6,
                   "%s: one bump per element", cases[k].name);
        }
    }

    /* Doubles from a Generic source into Int32: the CPU conversion fails. */
    double ibefore[16];
    snapshot(idst, ibefore, 16);
    sw_status st = sw_carrier_scatter(idst, tg, oi, lm, 0);
    expect_fail(st, SW_ETYPE, "CPU value must be an integer",
                "Generic doubles into an Int32 CPU carrier");
    ok(cpu_same(idst, ibefore, 16), "the failed first write left it");
    is_int(sw_carrier_version(idst), 0, "and its version");

    sw_tensor_unref(onto_g);
done2:
    sw_layout_unref(l1);
done:
    sw_tensor_unref(tg);
    sw_tensor_unref(tc);
    sw_tensor_unref(oc);
    sw_tensor_unref(oi);
    sw_carrier_unref(gdst);
    sw_carrier_unref(gsrc);
    sw_carrier_unref(csrc);
    sw_carrier_unref(cdst);
    sw_carrier_unref(idst);
    sw_layout_unref(ls);
    sw_layout_unref(lm);
    sw_layout_unref(lo);
    leak_check(base, "element-wise scatter");
}

/*
 * A mapping_offset so large that onto's offset plus it overflows int64_t
 * must be refused like any other range excess. This runs last: a library
 * that overflows here has undefined behaviour, which the sanitizer build
 * stops on, and the other checks should have reported by then.
 */
static void test_scatter_offset_overflow(void) {
    int64_t base = sw_debug_live_allocs();
    sw_carrier *dst = iota_cpu(10, SW_DTYPE_FLOAT32, 1);
    sw_carrier *src = iota_cpu(6, SW_DTYPE_FLOAT32, 1);
    sw_layout *l4 = P("4:1"), *ls = P("(2,3):(1,2)"), *lm = P("(2,3):(3,1)");
    sw_tensor *onto0 = NULL, *onto1 = NULL, *ts = NULL;
    if (dst && src && l4 && ls && lm &&
        expect_ok(sw_tensor_new(dst, 0, l4, &onto0), "onto at 0") &&
        expect_ok(sw_tensor_new(dst, 1, l4, &onto1), "onto at 1") &&
        expect_ok(sw_tensor_new(src, 0, ls, &ts), "to_scatter")) {
        double before[10];
        snapshot(dst, before, 10);
        sw_status st = sw_carrier_scatter(dst, ts, onto0, lm, INT64_MAX);
        expect_fail(st, SW_EVALUE,
                    "scatter mapping exceeds destination carrier size",
                    "offset 0 + mapping_offset INT64_MAX + cosize 6");
        st = sw_carrier_scatter(dst, ts, onto1, lm, INT64_MAX);
        expect_fail(st, SW_EVALUE,
                    "scatter mapping exceeds destination carrier size",
                    "offset 1 + mapping_offset INT64_MAX (overflows int64)");
        st = sw_carrier_scatter(dst, ts, onto1, lm, INT64_MAX - 3);
        expect_fail(st, SW_EVALUE,
                    "scatter mapping exceeds destination carrier size",
                    "offset 1 + mapping_offset INT64_MAX - 3 + cosize 6");
        is_int(sw_carrier_version(dst), 0, "the refused scatters did not bump");
        ok(cpu_same(dst, before, 10), "and did not write the destination");
    }
    sw_tensor_unref(onto0);
    sw_tensor_unref(onto1);
    sw_tensor_unref(ts);
    sw_carrier_unref(dst);
    sw_carrier_unref(src);
    sw_layout_unref(l4);
    sw_layout_unref(ls);
    sw_layout_unref(lm);
    leak_check(base, "scatter offset overflow");
}

/* ------------------------------------------------------ fault injection */

static struct {
    sw_carrier *cpu, *gen, *gdst, *cdst;
    sw_layout *l, *lm;
    sw_tensor *src_g, *src_c, *onto_g, *onto_c;
} fin;

static void describe_tensor(const sw_tensor *t, char *buf, size_t cap) {
    char lb[128];
    sw_layout_format(sw_tensor_layout(t), lb, sizeof lb);
    int n = snprintf(buf, cap, "carrier=%p offset=%lld layout=%s:",
                     (void *)sw_tensor_carrier(t),
                     (long long)sw_tensor_offset(t), lb);
    for (int64_t i = 0; i < sw_tensor_size(t) && n > 0 && (size_t)n < cap; i++)
        n += snprintf(buf + n, cap - (size_t)n, " %.9g", tget_num(t, i));
}

static void describe_carrier(sw_carrier *c, char *buf, size_t cap) {
    int n = snprintf(buf, cap, "values:");
    for (int64_t i = 0; i < sw_carrier_size(c) && n > 0 && (size_t)n < cap; i++)
        n += snprintf(buf + n, cap - (size_t)n, " %.9g", cget_num(c, i));
}

/*
 * A case runs with injection on. Constructors write a tensor; scatters
 * write into a destination that is reset (outside injection) before each
 * step and whose state is the result.
 */
typedef struct fi_case {
    const char *name;
    sw_status (*run)(sw_tensor **out);
    sw_carrier **dst; /* scatter cases: the destination; else NULL */
} fi_case;

static sw_status fi_tensor_cpu(sw_tensor **out) {
    return sw_tensor_new(fin.cpu, 1, fin.l, out);
}
static sw_status fi_tensor_generic(sw_tensor **out) {
    return sw_tensor_new(fin.gen, 2, fin.l, out);
}
static sw_status fi_scatter_generic(sw_tensor **out) {
    return sw_carrier_scatter(fin.gdst, fin.src_g, fin.onto_g, fin.lm, 1);
}
static sw_status fi_scatter_cpu_into_generic(sw_tensor **out) {
    return sw_carrier_scatter(fin.gdst, fin.src_c, fin.onto_g, fin.lm, 0);
}
static sw_status fi_scatter_cpu(sw_tensor **out) {
    return sw_carrier_scatter(fin.cdst, fin.src_c, fin.onto_c, fin.lm, 2);
}

static const fi_case fi_cases[] = {
    {"sw_tensor_new (CPU)", fi_tensor_cpu, NULL},
    {"sw_tensor_new (Generic)", fi_tensor_generic, NULL},
    {"sw_carrier_scatter (Generic into Generic)", fi_scatter_generic,
     &fin.gdst},
    {"sw_carrier_scatter (CPU into Generic)", fi_scatter_cpu_into_generic,
     &fin.gdst},
    {"sw_carrier_scatter (CPU into CPU)", fi_scatter_cpu, &fin.cdst},
};

/* Resets a destination to element k = -k at version 0 (a new carrier). */
static bool fi_reset_dst(const fi_case *fc) {
    if (!fc->dst)
        return true;
    sw_carrier *c = *fc->dst;
    for (int64_t k = 0; k < sw_carrier_size(c); k++) {
        sw_value v = sw_value_f64(-(double)k);
        if (sw_carrier_set(c, k, &v) != SW_OK)
            return false;
    }
    return true;
}

#define FI_MAX_STEPS 1000
static int64_t fi_walk(const fi_case *fc) {
    static char want[4096], got[4096], before[4096];
    int64_t base = sw_debug_live_allocs();
    sw_tensor *out = NULL;
    if (!fi_reset_dst(fc)) {
        ok(0, "fault injection: %s: reset", fc->name);
        return -1;
    }
    if (fc->dst)
        describe_carrier(*fc->dst, before, sizeof before);
    int64_t v0 = fc->dst ? sw_carrier_version(*fc->dst) : 0;
    sw_status st = fc->run(&out);
    if (st != SW_OK) {
        ok(0, "fault injection: %s works without injection", fc->name);
        diag("status %s: %s", S(st), sw_errmsg());
        return -1;
    }
    /* The scatter's result relative to the version before it. */
    if (fc->dst) {
        int n = snprintf(want, sizeof want, "+%lld ",
                         (long long)(sw_carrier_version(*fc->dst) - v0));
        describe_carrier(*fc->dst, want + n, sizeof want - (size_t)n);
    } else {
        describe_tensor(out, want, sizeof want);
        sw_tensor_unref(out);
    }
    if (sw_debug_live_allocs() != base) {
        ok(0, "fault injection: %s leaks without injection", fc->name);
        return -1;
    }
    int failures = 0;
    for (int64_t n = 0; n < FI_MAX_STEPS; n++) {
        if (!fi_reset_dst(fc)) {
            ok(0, "fault injection: %s: reset", fc->name);
            return -1;
        }
        if (fc->dst)
            describe_carrier(*fc->dst, before, sizeof before);
        v0 = fc->dst ? sw_carrier_version(*fc->dst) : 0;
        out = SENT_TENSOR;
        sw_clear_error();
        sw_debug_fail_alloc_after(n);
        st = fc->run(&out);
        sw_debug_fail_alloc_after(-1);
        bool good = true;
        if (st == SW_ENOMEM) {
            if (out != SENT_TENSOR) {
                diag("%s, n=%lld: SW_ENOMEM but the out-parameter was "
                     "written",
                     fc->name, (long long)n);
                good = false;
            }
            if (fc->dst) {
                describe_carrier(*fc->dst, got, sizeof got);
                if (strcmp(got, before) != 0 ||
                    sw_carrier_version(*fc->dst) != v0) {
                    diag("%s, n=%lld: SW_ENOMEM but the destination changed",
                         fc->name, (long long)n);
                    good = false;
                }
            }
            if (sw_errcode() != SW_ENOMEM) {
                diag("%s, n=%lld: SW_ENOMEM but sw_errcode is %s", fc->name,
                     (long long)n, S(sw_errcode()));
                good = false;
            }
        } else if (st == SW_OK) {
            if (fc->dst) {
                int w =
                    snprintf(got, sizeof got, "+%lld ",
                             (long long)(sw_carrier_version(*fc->dst) - v0));
                describe_carrier(*fc->dst, got + w, sizeof got - (size_t)w);
            } else {
                describe_tensor(out, got, sizeof got);
                sw_tensor_unref(out);
            }
            if (strcmp(got, want) != 0) {
                diag("%s, n=%lld: result '%s', without injection '%s'",
                     fc->name, (long long)n, got, want);
                good = false;
            }
        } else {
            diag("%s, n=%lld: status %s (%s); only SW_OK or SW_ENOMEM may "
                 "come out",
                 fc->name, (long long)n, S(st), sw_errmsg());
            good = false;
        }
        if (sw_debug_live_allocs() != base) {
            diag("%s, n=%lld (%s): %lld allocations live, baseline %lld",
                 fc->name, (long long)n, S(st),
                 (long long)sw_debug_live_allocs(), (long long)base);
            good = false;
        }
        if (!good && ++failures >= 3)
            break;
        if (st == SW_OK) {
            ok(failures == 0,
               "fault injection: %s fails cleanly at each of %lld "
               "allocation sites",
               fc->name, (long long)n);
            return n;
        }
        if (st != SW_ENOMEM)
            break;
    }
    ok(0, "fault injection: %s (%d bad steps, walk stopped)", fc->name,
       failures);
    return -1;
}

static void test_fault_injection(void) {
    int64_t base0 = sw_debug_live_allocs();
    fin.cpu = iota_cpu(8, SW_DTYPE_FLOAT32, 1);
    fin.gen = iota_generic(8, 1);
    fin.gdst = iota_generic(12, 1);
    fin.cdst = iota_cpu(12, SW_DTYPE_FLOAT32, 1);
    fin.l = P("(2,3):(1,2)");
    fin.lm = P("(2,3):(4,1)"); /* cosize 7 */
    sw_layout *lo = P("4:1");
    bool good =
        fin.cpu && fin.gen && fin.gdst && fin.cdst && fin.l && fin.lm && lo;
    good = good && sw_tensor_new(fin.gen, 1, fin.l, &fin.src_g) == SW_OK &&
           sw_tensor_new(fin.cpu, 0, fin.l, &fin.src_c) == SW_OK &&
           sw_tensor_new(fin.gdst, 1, lo, &fin.onto_g) == SW_OK &&
           sw_tensor_new(fin.cdst, 0, lo, &fin.onto_c) == SW_OK;
    if (ok(good, "fault injection: inputs")) {
        int64_t base = sw_debug_live_allocs();
        int64_t sites = 0;
        size_t ncase = sizeof fi_cases / sizeof fi_cases[0];
        for (size_t k = 0; k < ncase; k++) {
            int64_t n = fi_walk(&fi_cases[k]);
            if (n > 0)
                sites += n;
        }
        diag("fault injection: %lld allocation sites walked over %zu entry "
             "points",
             (long long)sites, ncase);
        leak_check(base, "fault injection");
    }
    sw_tensor_unref(fin.src_g);
    sw_tensor_unref(fin.src_c);
    sw_tensor_unref(fin.onto_g);
    sw_tensor_unref(fin.onto_c);
    sw_carrier_unref(fin.cpu);
    sw_carrier_unref(fin.gen);
    sw_carrier_unref(fin.gdst);
    sw_carrier_unref(fin.cdst);
    sw_layout_unref(fin.l);
    sw_layout_unref(fin.lm);
    sw_layout_unref(lo);
    leak_check(base0, "fault injection inputs");
}

/* --------------------------------------------------------------- axpy */

/* A CPU tensor of the layout text over a fresh carrier of n elements whose
 * element k holds base + k (so that every slot is distinguishable). */
static sw_tensor *axpy_tensor(const char *layout, int64_t offset, int64_t n,
                              double base, sw_dtype dtype, int mutable_) {
    sw_layout *l = P(layout);
    sw_carrier *c = NULL;
    sw_tensor *t = NULL;
    /* An immutable carrier stays zeroed: it cannot be written to. */
    if (l && expect_ok(sw_cpu_new(n, dtype, mutable_, 0, &c), "axpy carrier")) {
        for (int64_t k = 0; mutable_ && k < n; ++k) {
            sw_value v =
                sw_value_f64(dtype == SW_DTYPE_INT32 ? (double)k : base + k);
            sw_carrier_set(c, k, &v);
        }
        expect_ok(sw_tensor_new(c, offset, l, &t), "axpy tensor");
    }
    sw_carrier_unref(c);
    sw_layout_unref(l);
    return t;
}

static void snapshot_all(sw_carrier *c, float *out, int64_t n) {
    for (int64_t k = 0; k < n; ++k) {
        sw_value v;
        sw_carrier_get(c, k, &v);
        out[k] = (float)v.as.f;
    }
}

static void test_axpy(void) {
    int64_t base = sw_debug_live_allocs();
    /* y over (3,(2,2)):(1,(3,6)) at offset 2 of 16 elements; x of the same
     * shape but other strides and offset. */
    sw_tensor *y =
        axpy_tensor("(3,(2,2)):(1,(3,6))", 2, 16, 0.5, SW_DTYPE_FLOAT32, 1);
    sw_tensor *x =
        axpy_tensor("(3,(2,2)):(4,(1,2))", 1, 16, 0.25, SW_DTYPE_FLOAT32, 1);
    if (!y || !x) {
        sw_tensor_unref(y);
        sw_tensor_unref(x);
        return;
    }
    float before[16], after[16];
    snapshot_all(sw_tensor_carrier(y), before, 16);
    double want[12];
    for (int64_t i = 0; i < 12; ++i) {
        sw_value yv, xv;
        sw_tensor_get(y, i, &yv);
        sw_tensor_get(x, i, &xv);
        want[i] = (double)(float)(yv.as.f + -0.1 * xv.as.f);
    }
    int64_t v0 = sw_tensor_version(y), vx = sw_tensor_version(x);
    sw_status st = sw_tensor_axpy(y, -0.1, x);
    expect_ok(st, "axpy over different strides");
    is_int(sw_tensor_version(y), v0 + 1, "axpy bumps y's version once");
    is_int(sw_tensor_version(x), vx, "axpy leaves x's version alone");
    bool all = true;
    for (int64_t i = 0; i < 12; ++i) {
        sw_value yv;
        sw_tensor_get(y, i, &yv);
        all = all && yv.as.f == want[i];
    }
    ok(all,
       "axpy writes y[i] + alpha * x[i], rounded once, at every logical i");
    /* Slots outside y's layout are untouched. */
    snapshot_all(sw_tensor_carrier(y), after, 16);
    bool outside = true;
    for (int64_t k = 0; k < 16; ++k) {
        bool inside = false;
        for (int64_t i = 0; i < 12; ++i) {
            int64_t idx;
            sw_layout_index(sw_tensor_layout(y), i, &idx);
            inside = inside || idx + 2 == k;
        }
        if (!inside)
            outside = outside && after[k] == before[k];
    }
    ok(outside, "axpy writes nothing outside y's layout");

    /* y aliasing x: y += 1 * y doubles every element. */
    sw_value y0;
    sw_tensor_get(y, 0, &y0);
    st = sw_tensor_axpy(y, 1.0, y);
    expect_ok(st, "axpy with y as x");
    sw_value y1;
    sw_tensor_get(y, 0, &y1);
    ok(y1.as.f == 2 * y0.as.f, "y + y doubles an element");

    /* Errors: checked before anything is written. */
    snapshot_all(sw_tensor_carrier(y), before, 16);
    v0 = sw_tensor_version(y);
    sw_tensor *other =
        axpy_tensor("(3,4):(1,3)", 0, 12, 0.0, SW_DTYPE_FLOAT32, 1);
    sw_tensor *ints =
        axpy_tensor("(3,(2,2)):(1,(3,6))", 0, 12, 0.0, SW_DTYPE_INT32, 1);
    sw_tensor *frozen =
        axpy_tensor("(3,(2,2)):(1,(3,6))", 0, 12, 0.0, SW_DTYPE_FLOAT32, 0);
    sw_tensor *generic = NULL;
    double g[12] = {0};
    sw_carrier *gc = NULL;
    sw_layout *gl = P("(3,(2,2)):(1,(3,6))");
    if (expect_ok(sw_generic_new_doubles(12, g, 1, &gc), "generic carrier"))
        expect_ok(sw_tensor_new(gc, 0, gl, &generic), "generic tensor");
    sw_carrier_unref(gc);
    sw_layout_unref(gl);

    st = sw_tensor_axpy(NULL, 1.0, x);
    expect_fail(st, SW_ETYPE, "axpy needs two tensors", "axpy NULL y");
    st = sw_tensor_axpy(y, 1.0, NULL);
    expect_fail(st, SW_ETYPE, "axpy needs two tensors", "axpy NULL x");
    st = sw_tensor_axpy(y, 1.0, generic);
    expect_fail(st, SW_ETYPE, "axpy needs CPU tensors", "axpy Generic x");
    st = sw_tensor_axpy(generic, 1.0, y);
    expect_fail(st, SW_ETYPE, "axpy needs CPU tensors", "axpy Generic y");
    st = sw_tensor_axpy(y, 1.0, ints);
    expect_fail(st, SW_ETYPE, "axpy needs Float32 tensors", "axpy Int32 x");
    st = sw_tensor_axpy(ints, 1.0, y);
    expect_fail(st, SW_ETYPE, "axpy needs Float32 tensors", "axpy Int32 y");
    st = sw_tensor_axpy(y, 1.0, other);
    expect_fail(st, SW_EVALUE, "axpy operands must have the same shape",
                "axpy (3,4) onto (3,(2,2))");
    st = sw_tensor_axpy(frozen, 1.0, y);
    expect_fail(st, SW_ERUNTIME, "Carrier is not mutable", "axpy immutable y");
    snapshot_all(sw_tensor_carrier(y), after, 16);
    ok(memcmp(before, after, sizeof before) == 0 && sw_tensor_version(y) == v0,
       "rejected calls change neither y nor its version");

    sw_carrier_release_storage(sw_tensor_carrier(x));
    st = sw_tensor_axpy(y, 1.0, x);
    expect_fail(st, SW_ERUNTIME, "Carrier is released", "axpy released x");
    st = sw_tensor_axpy(x, 1.0, y);
    expect_fail(st, SW_ERUNTIME, "Carrier is released", "axpy released y");

    sw_tensor_unref(generic);
    sw_tensor_unref(frozen);
    sw_tensor_unref(ints);
    sw_tensor_unref(other);
    sw_tensor_unref(x);
    sw_tensor_unref(y);
    leak_check(base, "axpy");
}

/* A step over a broadcast of 2**62 elements stops on an interrupt
 * request, on a thread that watches for it, with y's version bumped. */
/* --------------------------------------------------------------- adam */

static double value_at(sw_tensor *t, int64_t i) {
    sw_value v;
    sw_tensor_get(t, i, &v);
    return v.as.f;
}

static void test_adam(void) {
    int64_t base = sw_debug_live_allocs();
    /* param and its state over different strides and offsets. */
    sw_tensor *p = axpy_tensor("(2,3):(1,2)", 1, 8, 0.5, SW_DTYPE_FLOAT32, 1);
    sw_tensor *g = axpy_tensor("(2,3):(3,1)", 0, 6, -1.0, SW_DTYPE_FLOAT32, 1);
    sw_tensor *m = axpy_tensor("(2,3):(1,2)", 0, 6, 0.0, SW_DTYPE_FLOAT32, 1);
    sw_tensor *v = axpy_tensor("(2,3):(1,2)", 0, 6, 0.0, SW_DTYPE_FLOAT32, 1);
    if (!p || !g || !m || !v)
        bail_out("adam tensors");
    for (int64_t i = 0; i < 6; ++i) { /* zero moments */
        sw_value z = sw_value_f64(0.0);
        sw_tensor_set(m, i, &z);
        sw_tensor_set(v, i, &z);
    }
    sw_adam h = {0.01, 0.9, 0.999, 1e-8, 0.1, 1};
    double mw[6] = {0}, vw[6] = {0}, pw[6];
    for (int64_t i = 0; i < 6; ++i)
        pw[i] = value_at(p, i);
    int ok_all = 1;
    int64_t v0 = sw_tensor_version(p), vg = sw_tensor_version(g);
    for (h.step = 1; h.step <= 3; ++h.step) {
        for (int64_t i = 0; i < 6; ++i) {
            double gi = value_at(g, i) + h.weight_decay * pw[i];
            mw[i] = (double)(float)(h.beta1 * mw[i] + (1 - h.beta1) * gi);
            vw[i] = (double)(float)(h.beta2 * vw[i] + (1 - h.beta2) * gi * gi);
            double c1 = 1 - pow(h.beta1, (double)h.step);
            double c2 = 1 - pow(h.beta2, (double)h.step);
            pw[i] = (double)(float)(pw[i] - h.lr * (mw[i] / c1) /
                                                (sqrt(vw[i] / c2) + h.eps));
        }
        sw_status st = sw_tensor_adam_step(p, g, m, v, &h);
        expect_ok(st, "adam step");
        for (int64_t i = 0; i < 6; ++i)
            ok_all = ok_all && fabs(value_at(p, i) - pw[i]) < 1e-6 &&
                     fabs(value_at(m, i) - mw[i]) < 1e-6 &&
                     fabs(value_at(v, i) - vw[i]) < 1e-6;
    }
    ok(ok_all, "three adam steps match the formula at every logical element");
    is_int(sw_tensor_version(p), v0 + 3,
           "the parameter's version rises once "
           "a step");
    is_int(sw_tensor_version(g), vg, "the gradient is only read");
    /* Rejections, before anything is written. */
    double before = value_at(p, 0);
    sw_adam bad = h;
    bad.lr = 0;
    sw_status st = sw_tensor_adam_step(p, g, m, v, &bad);
    expect_fail(st, SW_EVALUE, "adam: lr must be positive", "lr 0");
    bad = h;
    bad.beta2 = 1.0;
    st = sw_tensor_adam_step(p, g, m, v, &bad);
    expect_fail(st, SW_EVALUE, "adam: betas must be in [0, 1)", "beta2 1");
    bad = h;
    bad.eps = -1;
    st = sw_tensor_adam_step(p, g, m, v, &bad);
    expect_fail(st, SW_EVALUE,
                "adam: eps and weight_decay must be non-negative", "eps < 0");
    bad = h;
    bad.step = 0;
    st = sw_tensor_adam_step(p, g, m, v, &bad);
    expect_fail(st, SW_EVALUE, "adam: the step count starts at 1", "step 0");
    st = sw_tensor_adam_step(p, g, m, NULL, &h);
    expect_fail(st, SW_ETYPE, NULL, "a missing tensor");
    sw_tensor *small =
        axpy_tensor("(2,2):(1,2)", 0, 4, 0.0, SW_DTYPE_FLOAT32, 1);
    st = sw_tensor_adam_step(p, g, small, v, &h);
    expect_fail(st, SW_EVALUE, "adam operands must have the parameter's shape",
                "a moment of another shape");
    sw_tensor *ints = axpy_tensor("(2,3):(1,2)", 0, 6, 0.0, SW_DTYPE_INT32, 1);
    st = sw_tensor_adam_step(p, ints, m, v, &h);
    expect_fail(st, SW_ETYPE, "adam needs Float32 tensors",
                "an Int32 gradient");
    sw_tensor *frozen =
        axpy_tensor("(2,3):(1,2)", 0, 6, 0.0, SW_DTYPE_FLOAT32, 0);
    st = sw_tensor_adam_step(p, g, frozen, v, &h);
    expect_fail(st, SW_ERUNTIME, "Carrier is not mutable",
                "an immutable moment");
    sw_carrier_release_storage(sw_tensor_carrier(v));
    st = sw_tensor_adam_step(p, g, m, v, &h);
    expect_fail(st, SW_ERUNTIME, "Carrier is released", "a released moment");
    ok(value_at(p, 0) == before, "rejected steps wrote nothing");
    sw_tensor *all[] = {p, g, m, v, small, ints, frozen};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; ++k)
        sw_tensor_unref(all[k]);
    leak_check(base, "adam");
}

static void test_axpy_interrupt(void) {
    int64_t base = sw_debug_live_allocs();
    sw_tensor *y =
        axpy_tensor("4611686018427387904:0", 0, 1, 0.0, SW_DTYPE_FLOAT32, 1);
    sw_tensor *x =
        axpy_tensor("4611686018427387904:0", 0, 1, 1.0, SW_DTYPE_FLOAT32, 1);
    if (y && x) {
        int64_t v0 = sw_tensor_version(y);
        int was = sw_interrupt_watch(1);
        sw_interrupt_request();
        sw_status st = sw_tensor_axpy(y, 1.0, x);
        sw_interrupt_clear();
        sw_interrupt_watch(was);
        expect_fail(st, SW_EINTERRUPTED, "operation interrupted",
                    "axpy over a 2**62 broadcast with a request raised");
        is_int(sw_tensor_version(y), v0 + 1,
               "the partly updated y has its version bumped");
        sw_value v;
        if (expect_ok(sw_tensor_get(y, 0, &v), "reading y"))
            /* A request raised before the walk stops it before its first
             * run, as every planned walk does. */
            ok(v.as.f == 0.0, "no step ran (%g)", v.as.f);
    }
    sw_tensor_unref(y);
    sw_tensor_unref(x);
    leak_check(base, "interrupted axpy");
}

int main(void) {
    int64_t base = sw_debug_live_allocs();
    test_tensor_new();
    test_tensor_getters();
    test_tensor_keeps_alive();
    test_tensor_access();
    test_views();
    test_tensor_peers();
    test_scatter_checks();
    test_scatter_cpu();
    test_scatter_elementwise();
    test_fault_injection();
    test_scatter_offset_overflow();
    test_axpy();
    test_axpy_interrupt();
    test_adam();
    is_int(sw_debug_live_allocs(), base, "no allocation is live at the end");
    return done_testing();
}
