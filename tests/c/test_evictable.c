/*
 * Unit tests of the Evictable carrier and the EvictableOperation adapter:
 * construction rules, tier ownership, residency transitions through the
 * move registry for each tier pair, refusals while evicted, DLPack,
 * release and destruction, operations and autograd through the adapter,
 * and failure injection (allocation and I/O) during every transition.
 *
 * The contract is include/strideweave/evictable.h.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strideweave/strideweave.h"
#include "check.h"
#include "tap.h"

/* ------------------------------------------------------------ helpers */

static sw_carrier *cpu_of(int64_t n, const double *v) {
    sw_carrier *c = NULL;
    if (sw_cpu_new(n, SW_DTYPE_FLOAT32, 1, 0, &c) != SW_OK)
        bail_out("cpu carrier");
    for (int64_t i = 0; v && i < n; ++i) {
        sw_value x = sw_value_f64(v[i]);
        if (sw_carrier_set(c, i, &x) != SW_OK)
            bail_out("cpu write");
    }
    return c;
}

static sw_carrier *gen_of(int64_t n, const double *v) {
    sw_carrier *c = NULL;
    double zeros[64] = {0};
    if (sw_generic_new_doubles(n, v ? v : zeros, 1, &c) != SW_OK)
        bail_out("generic carrier");
    return c;
}

static sw_carrier *file_of(sw_dtype dtype, int64_t n) {
    sw_carrier *c = NULL;
    if (sw_file_new(NULL, dtype, 1, &c) != SW_OK ||
        (n && sw_file_resize(c, n) != SW_OK))
        bail_out("file carrier");
    return c;
}

static sw_carrier *ev_of(sw_carrier *p, sw_carrier *s) {
    sw_carrier *e = NULL;
    if (sw_evictable_new(p, s, &e) != SW_OK)
        bail_out(sw_errmsg());
    return e;
}

static double getd(sw_carrier *c, int64_t i) {
    sw_value v;
    if (sw_carrier_get(c, i, &v) != SW_OK) {
        sw_clear_error();
        return NAN;
    }
    double d = v.kind == SW_VALUE_F64 ? v.as.f : (double)v.as.i;
    sw_value_clear(&v);
    return d;
}

static double tget(const sw_tensor *t, int64_t i) {
    sw_value v;
    if (sw_tensor_get(t, i, &v) != SW_OK) {
        sw_clear_error();
        return NAN;
    }
    double d = v.kind == SW_VALUE_F64 ? v.as.f : (double)v.as.i;
    sw_value_clear(&v);
    return d;
}

static sw_tensor *T(sw_carrier *c, int64_t offset, const char *layout) {
    sw_layout *l = NULL;
    sw_tensor *t = NULL;
    if (sw_layout_parse(layout, &l) != SW_OK ||
        sw_tensor_new(c, offset, l, &t) != SW_OK)
        bail_out("tensor");
    sw_layout_unref(l);
    return t;
}

static bool values_are(sw_carrier *c, int64_t n, const double *want) {
    for (int64_t i = 0; i < n; ++i)
        if (fabs(getd(c, i) - want[i]) > 1e-6)
            return false;
    return true;
}

static const double V4[4] = {1.0, -2.0, 3.5, 4.0};

/* ------------------------------------------------------- construction */

static void test_construction(void) {
    int64_t base = sw_debug_live_allocs();
    sw_carrier *a = gen_of(2, V4), *b = gen_of(2, NULL), *out = NULL;
    sw_status st = sw_evictable_new(NULL, b, &out);
    expect_fail(st, SW_ETYPE, "primary tier carrier is missing", "NULL");
    st = sw_evictable_new(a, NULL, &out);
    expect_fail(st, SW_ETYPE, "secondary tier carrier is missing", "NULL2");
    st = sw_evictable_new(a, a, &out);
    expect_fail(st, SW_EVALUE,
                "primary and secondary must be distinct carriers",
                "the same carrier twice");

    sw_carrier *rel = gen_of(1, V4);
    sw_carrier_release_storage(rel);
    st = sw_evictable_new(rel, b, &out);
    expect_fail(st, SW_ERUNTIME, "primary carrier is released",
                "a released primary");
    st = sw_evictable_new(a, rel, &out);
    expect_fail(st, SW_ERUNTIME, "secondary carrier is released",
                "a released secondary");

    sw_carrier *x = gen_of(1, V4), *y = gen_of(1, NULL);
    sw_carrier *held = ev_of(x, y);
    st = sw_evictable_new(x, b, &out);
    expect_fail(st, SW_ERUNTIME,
                "primary carrier is already owned by another carrier",
                "an owned primary");
    st = sw_evictable_new(a, y, &out);
    expect_fail(st, SW_ERUNTIME,
                "secondary carrier is already owned by another carrier",
                "an owned secondary");
    ok(!sw_carrier_is_owned(a), "a refused construction claims nothing");

    sw_carrier *f32 = cpu_of(2, V4);
    st = sw_evictable_new(f32, b, &out);
    expect_fail(st, SW_ETYPE, "primary and secondary dtypes must match",
                "dtypes differ");
    sw_carrier *frozen = NULL;
    sw_generic_new_doubles(2, V4, 0, &frozen);
    st = sw_evictable_new(a, frozen, &out);
    expect_fail(st, SW_ERUNTIME, "secondary carrier must be mutable",
                "an immutable secondary");
    sw_carrier *empty = gen_of(0, NULL);
    st = sw_evictable_new(empty, b, &out);
    expect_fail(st, SW_EVALUE,
                "primary carrier must contain at least one element",
                "an empty primary");
    ok(!sw_carrier_is_owned(a) && !sw_carrier_is_owned(b),
       "no refused construction claimed a tier");

    /* A success: both tiers are owned and guarded. */
    sw_carrier *e = NULL;
    st = sw_evictable_new(a, b, &e);
    if (expect_ok(st, "a valid construction")) {
        ok(sw_carrier_is_evictable(e), "is an Evictable");
        is_str(sw_carrier_get_class(e)->name, "Evictable", "class name");
        ok(sw_evictable_primary(e) == a && sw_evictable_secondary(e) == b,
           "the tiers are the supplied carriers");
        is_int(sw_carrier_size(e), 2, "size is the primary's");
        is_int(sw_carrier_dtype(e), SW_DTYPE_FLOATING,
               "dtype is the primary's");
        ok(sw_carrier_is_mutable(e), "a mutable primary: a mutable hierarchy");
        ok(!sw_evictable_is_evicted(e), "starts promoted");
        ok(sw_carrier_is_owned(a) && sw_carrier_is_owned(b), "tiers owned");
        ok(!sw_carrier_is_mutable(a) && !sw_carrier_is_mutable(b),
           "owned tiers are not publicly mutable");
        is_int((int64_t)getd(a, 0), 1, "an owned tier stays readable");
        sw_value v = sw_value_f64(9.0);
        st = sw_carrier_set(a, 0, &v);
        expect_fail(st, SW_ERUNTIME, "Carrier is not mutable",
                    "a direct write to a tier");
        st = sw_carrier_release_storage(b);
        expect_fail(st, SW_ERUNTIME,
                    "Carrier is owned by another carrier and cannot be "
                    "modified directly",
                    "a direct release of a tier");
        st = sw_carrier_bump_version(a);
        expect_fail(st, SW_ERUNTIME,
                    "Carrier is owned by another carrier and cannot be "
                    "modified directly",
                    "a direct version bump of a tier");
        sw_tensor *ta = T(a, 0, "2:1");
        sw_carrier *dst = gen_of(2, NULL);
        sw_tensor *moved = NULL;
        st = sw_move(ta, dst, &moved);
        expect_fail(st, SW_ERUNTIME,
                    "tensor carrier is owned by another carrier object and "
                    "cannot be moved directly",
                    "a direct move of a tier");
        sw_tensor *src = T(dst, 0, "2:1");
        sw_layout *map = NULL;
        sw_layout_parse("2:1", &map);
        st = sw_carrier_scatter(a, src, ta, map, 0);
        expect_fail(st, SW_ERUNTIME, "Carrier is not mutable",
                    "a direct scatter onto a tier");
        sw_layout_unref(map);
        sw_tensor_unref(src);
        sw_tensor_unref(ta);
        sw_carrier_unref(dst);

        /* Writes through the hierarchy reach the primary. */
        st = sw_carrier_set(e, 0, &v);
        expect_ok(st, "a write through the hierarchy");
        is_int(sw_carrier_version(e), 1, "the hierarchy's version rises once");
        is_int(sw_carrier_version(a), 1, "so does the primary's");
        is_int((int64_t)getd(e, 0), 9, "the value is there");
        is_int((int64_t)getd(a, 0), 9, "and visible through the alias");
        st = sw_carrier_set(e, 2, &v);
        expect_fail(st, SW_EINDEX, "Carrier index out of range",
                    "an out-of-range write");
        sw_carrier_unref(e);
        ok(!sw_carrier_is_owned(a) && !sw_carrier_is_owned(b),
           "destroying the hierarchy gives the tiers back");
        ok(!sw_carrier_is_released(a) && sw_carrier_is_mutable(a),
           "unreleased and writable again");
    }

    /* An immutable primary makes an immutable hierarchy. */
    sw_carrier *ro = NULL, *sec = gen_of(1, NULL);
    sw_generic_new_doubles(2, V4, 0, &ro);
    e = ev_of(ro, sec);
    ok(!sw_carrier_is_mutable(e), "an immutable primary: immutable hierarchy");
    sw_value v = sw_value_f64(1.0);
    st = sw_carrier_set(e, 0, &v);
    expect_fail(st, SW_ERUNTIME, "Carrier is not mutable",
                "a write to an immutable hierarchy");
    sw_carrier_unref(e);

    sw_carrier_unref(ro);
    sw_carrier_unref(sec);
    sw_carrier_unref(held);
    sw_carrier_unref(x);
    sw_carrier_unref(y);
    sw_carrier_unref(empty);
    sw_carrier_unref(frozen);
    sw_carrier_unref(f32);
    sw_carrier_unref(rel);
    sw_carrier_unref(a);
    sw_carrier_unref(b);
    leak_check(base, "construction");
}

/* ------------------------------------------------------- transitions */

typedef sw_carrier *(*maker)(int64_t n, const double *v);

static sw_carrier *file_f32(int64_t n, const double *v) {
    (void)v;
    return file_of(SW_DTYPE_FLOAT32, n);
}
static sw_carrier *file_f64(int64_t n, const double *v) {
    (void)v;
    return file_of(SW_DTYPE_FLOATING, n);
}

static void round_trip(const char *name, maker mp, maker ms, int64_t ssize) {
    int64_t base = sw_debug_live_allocs();
    sw_carrier *p = mp(4, V4), *s = ms(ssize, NULL);
    sw_carrier *e = ev_of(p, s);
    sw_status st = sw_evictable_evict(e);
    if (expect_ok(st, name)) {
        ok(sw_evictable_is_evicted(e), "%s: evicted", name);
        ok(sw_carrier_is_released(p), "%s: the primary was released", name);
        sw_carrier *sec = sw_evictable_secondary(e);
        ok(ssize >= 4 ? sec == s : sec != s,
           "%s: the secondary is reused only when large enough", name);
        ok(values_are(sec, 4, V4), "%s: the secondary holds the values", name);
        ok(sw_carrier_is_owned(sec) && !sw_carrier_is_mutable(sec),
           "%s: the new secondary is owned", name);
        if (sec != s)
            ok(sw_carrier_is_released(s) && !sw_carrier_is_owned(s),
               "%s: the replaced secondary was released and given back", name);
        is_int(sw_carrier_version(e), 0, "%s: no version change", name);
        is_int(sw_carrier_size(e), 4, "%s: the size is kept", name);
        sw_value v;
        st = sw_carrier_get(e, 0, &v);
        expect_fail(st, SW_ERUNTIME,
                    "Evictable carrier is evicted; call promote() first",
                    "reading while evicted");
        v = sw_value_f64(1.0);
        st = sw_carrier_set(e, 0, &v);
        expect_fail(st, SW_ERUNTIME,
                    "Evictable carrier is evicted; call promote() first",
                    "writing while evicted");
        expect_ok(sw_evictable_evict(e), "evicting again is a no-op");
        st = sw_evictable_promote(e);
        if (expect_ok(st, "promote")) {
            sw_carrier *np = sw_evictable_primary(e);
            ok(np != p, "%s: a fresh primary", name);
            ok(!sw_evictable_is_evicted(e), "%s: promoted", name);
            ok(values_are(e, 4, V4), "%s: the values came back", name);
            ok(sw_carrier_is_released(sw_evictable_secondary(e)),
               "%s: promotion released the secondary", name);
            ok(!sw_carrier_is_owned(p), "%s: the old primary is given back",
               name);
            ok(sw_carrier_is_owned(np), "%s: the new primary is owned", name);
            is_int(sw_carrier_version(e), 0, "%s: still version 0", name);
            expect_ok(sw_evictable_promote(e), "promoting again is a no-op");
            /* A second round trip allocates a new secondary. */
            sw_carrier *old_sec = sw_evictable_secondary(e);
            expect_ok(sw_evictable_evict(e), "a second eviction");
            ok(sw_evictable_secondary(e) != old_sec,
               "%s: the second eviction made a new secondary", name);
            expect_ok(sw_evictable_promote(e), "a second promotion");
            ok(values_are(e, 4, V4), "%s: values after two trips", name);
        }
    }
    sw_carrier_unref(e);
    sw_carrier_unref(p);
    sw_carrier_unref(s);
    leak_check(base, name);
}

static void test_transitions(void) {
    round_trip("Generic to Generic (large secondary)", gen_of, gen_of, 4);
    round_trip("Generic to Generic (lazy secondary)", gen_of, gen_of, 0);
    round_trip("CPU to CPU", cpu_of, cpu_of, 0);
    round_trip("CPU to FileBacked", cpu_of, file_f32, 0);
    round_trip("CPU to a sized FileBacked", cpu_of, file_f32, 6);
    round_trip("Generic to FileBacked", gen_of, file_f64, 0);
}

static void test_guards(void) {
    int64_t base = sw_debug_live_allocs();
    sw_carrier *p = gen_of(2, V4), *s = gen_of(0, NULL);
    sw_carrier *e = ev_of(p, s);
    sw_status st = sw_evictable_evict(p);
    expect_fail(st, SW_ETYPE, "carrier is not an Evictable carrier",
                "evicting a plain carrier");
    /* Nesting: an inner hierarchy refuses transitions from outside. */
    sw_carrier *outer_s = gen_of(0, NULL);
    sw_carrier *outer = ev_of(e, outer_s);
    st = sw_evictable_evict(e);
    expect_fail(st, SW_ERUNTIME,
                "Evictable carrier is owned by another carrier and cannot be "
                "modified directly",
                "evicting an owned inner hierarchy");
    st = sw_evictable_promote(e);
    expect_fail(st, SW_ERUNTIME,
                "Evictable carrier is owned by another carrier and cannot be "
                "modified directly",
                "promoting an owned inner hierarchy");
    expect_ok(sw_evictable_evict(outer), "evicting the outer hierarchy");
    ok(sw_carrier_is_released(e) && sw_carrier_is_released(p),
       "the inner hierarchy and its tiers were released by the move");
    expect_ok(sw_evictable_promote(outer), "promoting the outer hierarchy");
    ok(values_are(outer, 2, V4), "nested values survive the round trip");
    sw_carrier *inner = sw_evictable_primary(outer);
    ok(sw_carrier_is_evictable(inner) && inner != e,
       "the new primary is a fresh inner hierarchy");
    sw_value v = sw_value_f64(7.0);
    expect_ok(sw_carrier_set(outer, 1, &v), "a write through both levels");
    is_int((int64_t)getd(sw_evictable_primary(inner), 1), 7,
           "reaches the innermost tier");

    /* Release releases both tiers; transitions then fail. */
    expect_ok(sw_carrier_release_storage(outer), "release the hierarchy");
    ok(sw_carrier_is_released(inner) &&
           sw_carrier_is_released(sw_evictable_secondary(outer)),
       "both tiers are released");
    is_int(sw_carrier_size(outer), 0, "size 0 once released");
    st = sw_evictable_evict(outer);
    expect_fail(st, SW_ERUNTIME, "Carrier is released", "evicting released");
    st = sw_evictable_promote(outer);
    expect_fail(st, SW_ERUNTIME, "Carrier is released", "promoting released");
    sw_carrier_unref(outer);
    sw_carrier_unref(outer_s);
    sw_carrier_unref(e);
    sw_carrier_unref(p);
    sw_carrier_unref(s);
    leak_check(base, "guards");
}

static void test_dlpack_and_scatter(void) {
    int64_t base = sw_debug_live_allocs();
    sw_carrier *p = cpu_of(4, V4), *s = file_of(SW_DTYPE_FLOAT32, 0);
    sw_carrier *e = ev_of(p, s);
    sw_tensor *t = T(e, 0, "4:1");
    int32_t dt = 0, di = 0;
    void *out = NULL;
    int versioned = 0;
    for (int round = 0; round < 2; ++round) {
        sw_status st = sw_tensor_dlpack_device(t, &dt, &di);
        expect_fail(st, SW_EBUFFER,
                    "DLPack is not supported for Evictable carrier",
                    round ? "DLPack device, evicted" : "DLPack device");
        st = sw_tensor_dlpack_export(t, NULL, &versioned, &out);
        expect_fail(st, SW_EBUFFER,
                    "DLPack is not supported for Evictable carrier",
                    round ? "DLPack export, evicted" : "DLPack export");
        if (!round) {
            /* Scatter bumps the hierarchy once. */
            sw_carrier *sc = cpu_of(2, V4 + 2);
            sw_tensor *src = T(sc, 0, "2:1");
            sw_layout *map = NULL;
            sw_layout_parse("2:2", &map);
            st = sw_carrier_scatter(e, src, t, map, 0);
            if (expect_ok(st, "scatter onto a hierarchy")) {
                is_int(sw_carrier_version(e), 1, "the version rose once");
                ok(getd(e, 0) == 3.5 && getd(e, 2) == 4.0,
                   "the values were scattered");
            }
            st = sw_carrier_scatter(e, src, src, map, 0);
            expect_fail(st, SW_EVALUE,
                        "scatter_onto must be backed by this carrier object",
                        "scatter onto another carrier's tensor");
            st = sw_carrier_scatter(e, NULL, t, map, 0);
            expect_fail(st, SW_ETYPE, "to_scatter must be a Tensor",
                        "scatter without a source");
            expect_ok(sw_evictable_evict(e), "evict");
            st = sw_carrier_scatter(e, src, t, map, 0);
            expect_fail(st, SW_ERUNTIME,
                        "Evictable carrier is evicted; call promote() first",
                        "scatter while evicted");
            sw_layout_unref(map);
            sw_tensor_unref(src);
            sw_carrier_unref(sc);
        }
    }
    sw_tensor_unref(t);
    sw_carrier_unref(e);
    sw_carrier_unref(p);
    sw_carrier_unref(s);
    leak_check(base, "DLPack and scatter");
}

/* ------------------------------------------------------- operations */

static void test_operations(void) {
    int64_t base = sw_debug_live_allocs();
    sw_carrier *p = cpu_of(4, V4), *s = file_of(SW_DTYPE_FLOAT32, 0);
    sw_carrier *e = ev_of(p, s);
    sw_tensor *x = T(e, 0, "(2,2):(1,2)");
    sw_op *op = NULL;
    sw_status st = sw_carrier_dispatch_op(e, "relu", &op);
    if (expect_ok(st, "dispatch on a hierarchy")) {
        ok(sw_op_is_evictable(op), "an EvictableOperation");
        is_str(sw_op_dispatch_name(op), "relu", "tagged with the name");
        ok(sw_op_dispatch_tag(op) == sw_evictable_class(),
           "tagged with the Evictable class");
        sw_op *inner = sw_evictable_op_primary(op);
        is_str(sw_op_dispatch_name(inner), "relu",
               "the inner op is dispatched");
        ok(sw_op_dispatch_tag(inner) != sw_evictable_class(),
           "by the primary's class");
        sw_op_unref(op);
    }
    sw_tensor *y = NULL;
    st = sw_unary("sigmoid", x, &y);
    if (expect_ok(st, "sigmoid on a hierarchy")) {
        sw_carrier *yc = sw_tensor_carrier(y);
        ok(sw_carrier_is_evictable(yc), "the result is an Evictable");
        ok(sw_carrier_is_cpu(sw_evictable_primary(yc)), "over a CPU primary");
        sw_carrier *ys = sw_evictable_secondary(yc);
        ok(sw_carrier_is_file(ys) && sw_carrier_size(ys) == 0,
           "with an empty secondary of the input's class");
        ok(sw_op_is_evictable(sw_tensor_autograd_ctx(y)),
           "the adapter is the autograd node");
        ok(fabs(tget(y, 1) - 1.0 / (1.0 + exp(2.0))) < 1e-6, "values");
        /* Backward while the result is evicted. */
        expect_ok(sw_evictable_evict(sw_tensor_carrier(y)), "evict result");
        sw_carrier *gc = cpu_of(4, NULL);
        for (int i = 0; i < 4; ++i) {
            sw_value one = sw_value_f64(1.0);
            sw_carrier_set(gc, i, &one);
        }
        sw_tensor *g = T(gc, 0, "(2,2):(1,2)");
        st = sw_tensor_backward(y, g);
        if (expect_ok(st, "backward with the result evicted")) {
            sw_tensor *gx = sw_tensor_grad(x);
            ok(gx && sw_carrier_is_evictable(sw_tensor_carrier(gx)),
               "the leaf's grad is an Evictable");
            bool same = gx != NULL;
            for (int i = 0; same && i < 4; ++i) {
                double sg = 1.0 / (1.0 + exp(-V4[i]));
                same = fabs(tget(gx, i) - sg * (1 - sg)) < 1e-5;
            }
            ok(same, "gradients equal sigmoid'(x)");
        }
        /* Backward needs the saved input promoted. */
        expect_ok(sw_evictable_evict(e), "evict the input");
        st = sw_tensor_backward(y, g);
        expect_fail(st, SW_ERUNTIME,
                    "Evictable carrier is evicted; call promote() first",
                    "backward with an evicted input");
        sw_tensor *z = NULL;
        st = sw_unary("relu", x, &z);
        expect_fail(st, SW_ERUNTIME,
                    "Evictable carrier is evicted; call promote() first",
                    "a forward op on an evicted input");
        expect_ok(sw_evictable_promote(e), "promote the input");
        st = sw_tensor_backward(y, g);
        expect_ok(st, "backward again after promotion");
        sw_tensor_unref(g);
        sw_carrier_unref(gc);
    }
    sw_tensor_unref(y);

    /* A view stays in the same hierarchy. */
    sw_tensor *v = NULL;
    int32_t order[2] = {1, 0};
    st = sw_permute(x, 2, order, &v);
    if (expect_ok(st, "permute on a hierarchy"))
        ok(sw_tensor_carrier(v) == e, "a view shares the hierarchy");
    sw_tensor_unref(v);

    /* Binary operations: classes must match. */
    sw_carrier *p2 = cpu_of(4, V4), *s2 = cpu_of(0, NULL);
    sw_carrier *e2 = ev_of(p2, s2);
    sw_tensor *x2 = T(e2, 0, "(2,2):(1,2)");
    sw_tensor *r = NULL;
    st = sw_add(x, x2, &r);
    expect_fail(st, SW_ETYPE, "Evictable secondary carriers must match",
                "secondary classes differ");
    sw_tensor *plain = T(p2, 0, "(2,2):(1,2)");
    st = sw_add(x, plain, &r);
    expect_fail(st, SW_ETYPE, "Tensor backing carriers must match",
                "an Evictable and a plain tensor");
    st = sw_add(x, x, &r);
    if (expect_ok(st, "add(x, x)"))
        ok(tget(r, 3) == 8.0, "add values");
    sw_tensor_unref(r);

    /* The adapter's own rules. */
    sw_op *inner = NULL, *adapter = NULL;
    st = sw_evictable_op_new(NULL, &adapter);
    expect_fail(st, SW_ETYPE, "primary_operation must be an Operation",
                "an adapter without an operation");
    sw_carrier_dispatch_op(p2, "relu", &inner);
    sw_evictable_op_new(inner, &adapter);
    sw_arg a = sw_arg_tensor(plain);
    st = sw_op_forward(adapter, 1, &a, &r);
    expect_fail(st, SW_ETYPE, "EvictableOperation requires a tensor input",
                "no Evictable input");
    sw_tensor *gg = T(p2, 0, "(2,2):(1,2)");
    st = sw_op_backward(adapter, gg, 1, &r);
    expect_fail(st, SW_ERUNTIME,
                "EvictableOperation backward requires forward first",
                "backward before forward");
    a = sw_arg_tensor(x);
    st = sw_op_forward(adapter, 1, &a, &r);
    if (expect_ok(st, "an adapter made by hand"))
        sw_tensor_unref(r);
    st = sw_op_forward(adapter, 1, &a, &r);
    expect_fail(st, SW_ERUNTIME,
                "EvictableOperation forward may only be called once",
                "a second forward");
    st = sw_op_backward(adapter, NULL, 1, &r);
    expect_fail(st, SW_ETYPE, "gradient must be a Tensor", "a NULL gradient");
    sw_carrier *gen = gen_of(4, V4);
    sw_tensor *gt = T(gen, 0, "(2,2):(1,2)");
    st = sw_op_backward(adapter, gt, 1, &r);
    expect_fail(st, SW_ETYPE,
                "gradient carrier must match the primary carrier class",
                "a gradient of another class");
    st = sw_op_backward(adapter, gg, 1, &r);
    if (expect_ok(st, "a plain primary-class gradient")) {
        ok(sw_carrier_is_evictable(sw_tensor_carrier(r)), "comes back wrapped");
        sw_tensor_unref(r);
    }
    sw_tensor_unref(gt);
    sw_carrier_unref(gen);
    sw_tensor_unref(gg);
    sw_op_unref(adapter);
    sw_op_unref(inner);
    sw_tensor_unref(plain);
    sw_tensor_unref(x2);
    sw_carrier_unref(e2);
    sw_carrier_unref(p2);
    sw_carrier_unref(s2);
    sw_tensor_unref(x);
    sw_carrier_unref(e);
    sw_carrier_unref(p);
    sw_carrier_unref(s);
    leak_check(base, "operations");
}

/* Gradients through a hierarchy equal those of the plain computation. */
static void test_gradients_match(void) {
    int64_t base = sw_debug_live_allocs();
    const char *ops[] = {"exp", "tanh", "gelu", "silu", "softplus", "elu"};
    for (size_t k = 0; k < sizeof ops / sizeof *ops; ++k) {
        sw_carrier *pc = gen_of(4, V4), *ps = gen_of(0, NULL);
        sw_carrier *e = ev_of(pc, ps);
        sw_carrier *plain = gen_of(4, V4);
        sw_tensor *xe = T(e, 0, "4:1"), *xp = T(plain, 0, "4:1");
        sw_tensor *ye = NULL, *yp = NULL, *ze = NULL, *zp = NULL;
        sw_status st = sw_unary(ops[k], xe, &ye);
        if (!st)
            st = sw_elementwise_mul(ye, xe, &ze);
        if (!st)
            st = sw_unary(ops[k], xp, &yp);
        if (!st)
            st = sw_elementwise_mul(yp, xp, &zp);
        if (expect_ok(st, ops[k])) {
            double ones[4] = {1, 1, 1, 1};
            sw_carrier *g1 = gen_of(4, ones), *g2 = gen_of(4, ones);
            sw_tensor *ge = T(g1, 0, "4:1"), *gp = T(g2, 0, "4:1");
            st = sw_tensor_backward(ze, ge);
            if (!st)
                st = sw_tensor_backward(zp, gp);
            if (expect_ok(st, "both backward passes")) {
                bool same = true;
                for (int i = 0; i < 4; ++i)
                    same = same && fabs(tget(sw_tensor_grad(xe), i) -
                                        tget(sw_tensor_grad(xp), i)) < 1e-9;
                ok(same, "%s: equal gradients", ops[k]);
            }
            sw_tensor_unref(ge);
            sw_tensor_unref(gp);
            sw_carrier_unref(g1);
            sw_carrier_unref(g2);
        }
        sw_tensor_unref(ze);
        sw_tensor_unref(zp);
        sw_tensor_unref(ye);
        sw_tensor_unref(yp);
        sw_tensor_unref(xe);
        sw_tensor_unref(xp);
        sw_carrier_unref(plain);
        sw_carrier_unref(e);
        sw_carrier_unref(pc);
        sw_carrier_unref(ps);
    }
    leak_check(base, "gradients");
}

/* --------------------------------------------------- failure injection */

/* Every allocation site of construction, evict, promote and a forward. */
static void test_alloc_faults(void) {
    int64_t base = sw_debug_live_allocs();
    int failures = 0;
    for (int64_t k = 0; k < 200; ++k) {
        sw_carrier *p = gen_of(4, V4), *s = gen_of(0, NULL), *e = NULL;
        sw_debug_fail_alloc_after(k);
        sw_status st = sw_evictable_new(p, s, &e);
        sw_debug_fail_alloc_after(-1);
        if (st) {
            is_int(st, SW_ENOMEM, "construction fault %lld: ENOMEM",
                   (long long)k);
            ok(!sw_carrier_is_owned(p) && !sw_carrier_is_owned(s),
               "nothing claimed");
            sw_clear_error();
            sw_carrier_unref(p);
            sw_carrier_unref(s);
            continue;
        }
        sw_debug_fail_alloc_after(k);
        st = sw_evictable_evict(e);
        sw_debug_fail_alloc_after(-1);
        if (st) {
            ++failures;
            sw_clear_error();
            if (!ok(!sw_evictable_is_evicted(e) && values_are(e, 4, V4) &&
                        sw_evictable_primary(e) == p &&
                        sw_evictable_secondary(e) == s &&
                        sw_carrier_is_owned(p) && sw_carrier_is_owned(s),
                    "evict fault %lld leaves the hierarchy as it was",
                    (long long)k))
                diag("%s", sw_errmsg());
            st = sw_evictable_evict(e);
            expect_ok(st, "and a retry succeeds");
        }
        sw_debug_fail_alloc_after(k);
        st = sw_evictable_promote(e);
        sw_debug_fail_alloc_after(-1);
        if (st) {
            ++failures;
            sw_clear_error();
            sw_carrier *sec = sw_evictable_secondary(e);
            ok(sw_evictable_is_evicted(e) && sw_evictable_primary(e) == p &&
                   values_are(sec, 4, V4) && !sw_carrier_is_released(sec),
               "promote fault %lld leaves the hierarchy as it was",
               (long long)k);
            st = sw_evictable_promote(e);
            expect_ok(st, "and a retry succeeds");
        }
        ok(values_are(e, 4, V4), "fault %lld: values intact", (long long)k);
        sw_tensor *x = T(e, 0, "4:1"), *y = NULL;
        sw_debug_fail_alloc_after(k);
        st = sw_unary("relu", x, &y);
        sw_debug_fail_alloc_after(-1);
        if (st) {
            ++failures;
            sw_clear_error();
        } else {
            ok(tget(y, 2) == 3.5, "relu after fault walk");
            sw_tensor_unref(y);
        }
        sw_tensor_unref(x);
        sw_carrier_unref(e);
        sw_carrier_unref(p);
        sw_carrier_unref(s);
        leak_check(base, "an allocation fault");
        if (k > 60 && !st)
            break;
    }
    ok(failures > 0, "some transitions met an allocation fault");
}

/* I/O failures while moving to and from a file secondary. */
static void test_io_faults(void) {
    int64_t base = sw_debug_live_allocs();
    for (int64_t k = 0; k < 12; ++k) {
        sw_carrier *p = cpu_of(4, V4), *s = file_of(SW_DTYPE_FLOAT32, 0);
        sw_carrier *e = ev_of(p, s);
        sw_debug_fail_io_after(k);
        sw_status st = sw_evictable_evict(e);
        sw_debug_fail_io_after(-1);
        if (st) {
            is_int(st, SW_EOS, "evict I/O fault %lld: SW_EOS", (long long)k);
            sw_clear_error();
            ok(!sw_evictable_is_evicted(e) && values_are(e, 4, V4) &&
                   sw_evictable_secondary(e) == s && !sw_carrier_is_released(p),
               "evict I/O fault %lld leaves the hierarchy valid", (long long)k);
            expect_ok(sw_evictable_evict(e), "retry the eviction");
        }
        sw_debug_fail_io_after(k);
        st = sw_evictable_promote(e);
        sw_debug_fail_io_after(-1);
        if (st) {
            is_int(st, SW_EOS, "promote I/O fault %lld: SW_EOS", (long long)k);
            sw_clear_error();
            ok(sw_evictable_is_evicted(e) &&
                   !sw_carrier_is_released(sw_evictable_secondary(e)) &&
                   values_are(sw_evictable_secondary(e), 4, V4),
               "promote I/O fault %lld leaves the hierarchy valid",
               (long long)k);
            expect_ok(sw_evictable_promote(e), "retry the promotion");
        }
        ok(values_are(e, 4, V4), "I/O fault %lld: values intact", (long long)k);
        sw_carrier_unref(e);
        sw_carrier_unref(p);
        sw_carrier_unref(s);
        leak_check(base, "an I/O fault");
    }
}

/* Every allocation site of a backward pass through adapters. */
static void test_backward_faults(void) {
    int64_t base = sw_debug_live_allocs();
    int failures = 0;
    for (int64_t k = 0; k < 400; ++k) {
        sw_carrier *p = cpu_of(4, V4), *s = file_of(SW_DTYPE_FLOAT32, 0);
        sw_carrier *e = ev_of(p, s);
        sw_tensor *x = T(e, 0, "(2,2):(1,2)"), *y = NULL, *z = NULL;
        sw_carrier *gc = cpu_of(4, V4);
        sw_tensor *g = T(gc, 0, "(2,2):(1,2)");
        sw_status st = sw_unary("tanh", x, &y);
        if (!st)
            st = sw_elementwise_mul(y, x, &z);
        expect_ok(st, "the forward pass");
        sw_debug_fail_alloc_after(k);
        st = sw_tensor_backward(z, g);
        sw_debug_fail_alloc_after(-1);
        bool done = st == SW_OK;
        if (st) {
            ++failures;
            is_int(st, SW_ENOMEM, "backward fault %lld: ENOMEM", (long long)k);
            sw_clear_error();
        } else {
            double t0 = tanh(V4[0]);
            ok(fabs(tget(sw_tensor_grad(x), 0) -
                    V4[0] * (t0 + V4[0] * (1 - t0 * t0))) < 1e-5,
               "the gradient after %lld faulty attempts", (long long)k);
        }
        ok(!sw_carrier_is_owned(gc), "the caller's gradient stays unowned");
        sw_tensor_unref(g);
        sw_carrier_unref(gc);
        sw_tensor_unref(z);
        sw_tensor_unref(y);
        sw_tensor_unref(x);
        sw_carrier_unref(e);
        sw_carrier_unref(p);
        sw_carrier_unref(s);
        leak_check(base, "a backward fault");
        if (done)
            break;
    }
    ok(failures > 5, "backward met allocation faults (%d)", failures);
}

/* ------------------------------------------- move hooks in transitions */

/* The hierarchy a hook below meddles with, and what it saw. */
static sw_carrier *meddled;
static int meddle_checks;

/* Tries to transition, release and write the hierarchy under its own
 * transition (each must fail as a pending move), then copies. */
static sw_status meddling_copy(sw_op *op, sw_tensor *tensor,
                               sw_carrier *destination, sw_tensor *output,
                               int64_t element_count) {
    sw_value v = sw_value_f64(9.0);
    for (int i = 0; i < 4; ++i) {
        sw_status st = i == 0   ? sw_evictable_evict(meddled)
                       : i == 1 ? sw_evictable_promote(meddled)
                       : i == 2 ? sw_carrier_release_storage(meddled)
                                : sw_carrier_set(meddled, 0, &v);
        expect_fail(st, SW_ERUNTIME,
                    "Carrier is owned by a pending move and is not mutable",
                    "meddling with a hierarchy under its transition");
        meddle_checks++;
    }
    return sw_move_elementwise()->copy(op, tensor, destination, output,
                                       element_count);
}

/* Copies, then releases the destination it was given. */
static sw_status releasing_copy(sw_op *op, sw_tensor *tensor,
                                sw_carrier *destination, sw_tensor *output,
                                int64_t element_count) {
    sw_status st = sw_move_elementwise()->copy(op, tensor, destination, output,
                                               element_count);
    if (!st)
        st = sw_carrier_release_storage(destination);
    return st;
}

static const sw_move_class meddling_class = {
    SW_MOVE_CLASS_VERSION, "MeddlingMove", {NULL, NULL},
    {NULL, NULL},          meddling_copy,  NULL};
static const sw_move_class releasing_class = {
    SW_MOVE_CLASS_VERSION, "ReleasingMove", {NULL, NULL},
    {NULL, NULL},          releasing_copy,  NULL};

static void test_move_hooks(void) {
    int64_t base = sw_debug_live_allocs();
    sw_move_key k = sw_move_key_cpu();
    /* (CPU, CPU) has no built-in entry. */
    if (!expect_ok(sw_move_register(k, k, &meddling_class),
                   "registering a (CPU, CPU) hook"))
        return;
    sw_carrier *p = cpu_of(4, V4), *s = cpu_of(0, NULL);
    meddled = ev_of(p, s);
    meddle_checks = 0;
    expect_ok(sw_evictable_evict(meddled), "a transition through the hook");
    is_int(meddle_checks, 4, "the hook ran once and was refused each time");
    ok(sw_evictable_is_evicted(meddled) && !sw_carrier_is_released(meddled),
       "the hierarchy is evicted and live");
    is_int(sw_carrier_version(meddled), 0, "its version is unchanged");
    const sw_move_class *out = NULL;
    expect_ok(sw_move_unregister(k, k, &out), "unregistering the hook");
    expect_ok(sw_move_register(k, k, &releasing_class),
              "registering a releasing hook");
    sw_carrier *old_primary = sw_evictable_primary(meddled);
    sw_carrier *old_secondary = sw_evictable_secondary(meddled);
    expect_fail(sw_evictable_promote(meddled), SW_ERUNTIME,
                "destination carrier is released",
                "a promotion whose hook released the new primary");
    ok(sw_evictable_is_evicted(meddled) &&
           sw_evictable_primary(meddled) == old_primary &&
           sw_evictable_secondary(meddled) == old_secondary &&
           !sw_carrier_is_released(old_secondary),
       "the hierarchy is unchanged");
    expect_ok(sw_move_unregister(k, k, &out), "unregistering the hook");
    expect_ok(sw_evictable_promote(meddled), "the promotion retried");
    ok(getd(meddled, 3) == V4[3], "values survive");
    sw_carrier_unref(meddled);
    sw_carrier_unref(p);
    sw_carrier_unref(s);
    meddled = NULL;
    leak_check(base, "move hooks in transitions");
}

int main(void) {
    test_construction();
    test_transitions();
    test_guards();
    test_dlpack_and_scatter();
    test_operations();
    test_gradients_match();
    test_alloc_faults();
    test_io_faults();
    test_backward_faults();
    test_move_hooks();
    return done_testing();
}
