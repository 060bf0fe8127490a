/*
 * Unit tests of the carrier module: dtypes, element values, the carrier
 * base (versions, mutability, release, ownership, peers), the CPU and
 * Generic backends, and a custom backend built from a vtable written here.
 *
 * The contract is include/strideweave/carrier.h together with the Python
 * reference (the Python API reference, sections 5 to 8), whose
 * rules and messages the C API keeps unless the header says otherwise.
 * Every rejected call is checked for its exact status and message and for
 * leaving its out-parameter alone; allocation counts prove that nothing
 * leaks, and a fault-injection walk makes every allocation of each
 * constructor fail in turn.
 */
#include <math.h>
#include <pthread.h>
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

/* ------------------------------------------------------------ helpers */

/*
 * Addresses no library call can produce, to prove that a failing call left
 * its out-parameters alone.
 */
static max_align_t sentinel_storage[2];
#define SENT_CARRIER ((sw_carrier *)(void *)&sentinel_storage[0])
#define SENT_TENSOR ((sw_tensor *)(void *)&sentinel_storage[1])
#define SENT_INT64 INT64_C(-777777)

/* A value no read produces: an integer the tests never store. */
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

/* Writes of one number; the value is borrowed by the call. */
static sw_status set_f(sw_carrier *c, int64_t i, double f) {
    sw_value v = sw_value_f64(f);
    return sw_carrier_set(c, i, &v);
}

static sw_status set_i(sw_carrier *c, int64_t i, int64_t x) {
    sw_value v = sw_value_i64(x);
    return sw_carrier_set(c, i, &v);
}

static sw_status set_none(sw_carrier *c, int64_t i) {
    sw_value v;
    memset(&v, 0, sizeof v);
    v.kind = SW_VALUE_NONE;
    return sw_carrier_set(c, i, &v);
}

/* Bitwise equality of doubles, with every NaN equal to every NaN. */
static bool same_double(double a, double b) {
    if (isnan(a) || isnan(b))
        return isnan(a) && isnan(b);
    return a == b && signbit(a) == signbit(b);
}

/* Reads element i and checks that it is the double want (kind F64). */
static void expect_f64_at(sw_carrier *c, int64_t i, double want,
                          const char *name) {
    sw_value v = sentinel_value();
    sw_status st = sw_carrier_get(c, i, &v);
    if (!expect_ok(st, name))
        return;
    if (!ok(v.kind == SW_VALUE_F64 && same_double(v.as.f, want),
            "%s reads %.17g", name, want))
        diag("got kind %d, value %.17g / %lld", (int)v.kind,
             v.kind == SW_VALUE_F64 ? v.as.f : 0.0, (long long)v.as.i);
    sw_value_clear(&v);
}

/* Reads element i and checks that it is the integer want (kind I64). */
static void expect_i64_at(sw_carrier *c, int64_t i, int64_t want,
                          const char *name) {
    sw_value v = sentinel_value();
    sw_status st = sw_carrier_get(c, i, &v);
    if (!expect_ok(st, name))
        return;
    if (!ok(v.kind == SW_VALUE_I64 && v.as.i == want, "%s reads %lld", name,
            (long long)want))
        diag("got kind %d, value %lld / %.17g", (int)v.kind, (long long)v.as.i,
             v.kind == SW_VALUE_F64 ? v.as.f : 0.0);
    sw_value_clear(&v);
}

/* Reads element i as a number of either kind (NaN if it fails). */
static double read_num(sw_carrier *c, int64_t i) {
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

/* --------------------------------------------------------------- dtypes */

static void test_dtypes(void) {
    static const struct {
        sw_dtype dtype;
        const char *name;
        int differentiable;
        int64_t itemsize;
    } rows[] = {
        {SW_DTYPE_ANY, "Any", 0, 0},
        {SW_DTYPE_FLOATING, "Floating", 1, 8},
        {SW_DTYPE_FLOAT32, "Float32", 1, 4},
        {SW_DTYPE_INT32, "Int32", 0, 4},
        {SW_DTYPE_BOOL, "Bool", 0, 1},
    };
    size_t n = sizeof rows / sizeof rows[0];
    is_int(n, SW_DTYPE_COUNT, "the dtype table covers SW_DTYPE_COUNT dtypes");
    for (size_t k = 0; k < n; k++) {
        is_str(sw_dtype_name(rows[k].dtype), rows[k].name, "sw_dtype_name(%d)",
               (int)rows[k].dtype);
        is_int(sw_dtype_is_differentiable(rows[k].dtype) != 0,
               rows[k].differentiable, "%s is%s differentiable", rows[k].name,
               rows[k].differentiable ? "" : " not");
        is_int(sw_dtype_itemsize(rows[k].dtype), rows[k].itemsize,
               "itemsize of %s", rows[k].name);
    }
    is_str(sw_dtype_name((sw_dtype)SW_DTYPE_COUNT), NULL,
           "sw_dtype_name(SW_DTYPE_COUNT) is NULL");
    is_str(sw_dtype_name((sw_dtype)-1), NULL, "sw_dtype_name(-1) is NULL");
    is_str(sw_dtype_name((sw_dtype)1000), NULL, "sw_dtype_name(1000) is NULL");
}

/* --------------------------------------------------------------- values */

static int value_releases;
static void *value_released_last;

static void count_value_release(void *host) {
    value_releases++;
    value_released_last = host;
}

static int64_t dummy_length(void *store) {
    return 0;
}

static const sw_host_ops release_counting_ops = {
    .version = SW_HOST_OPS_VERSION,
    .length = dummy_length,
    .release_value = count_value_release,
};

static const sw_host_ops no_release_ops = {
    .version = SW_HOST_OPS_VERSION,
    .length = dummy_length,
    .release_value = NULL,
};

static void test_values(void) {
    sw_value v = sw_value_f64(1.5);
    is_int(v.kind, SW_VALUE_F64, "sw_value_f64 makes an F64 value");
    ok(v.as.f == 1.5, "sw_value_f64(1.5) holds 1.5");
    ok(v.ops == NULL, "sw_value_f64 has no host ops");
    v = sw_value_f64(-0.0);
    ok(v.as.f == 0.0 && signbit(v.as.f), "sw_value_f64 keeps the sign of -0");
    v = sw_value_f64(NAN);
    ok(isnan(v.as.f), "sw_value_f64 keeps NaN");

    v = sw_value_i64(INT64_MIN);
    is_int(v.kind, SW_VALUE_I64, "sw_value_i64 makes an I64 value");
    is_int(v.as.i, INT64_MIN, "sw_value_i64(INT64_MIN) holds INT64_MIN");
    ok(v.ops == NULL, "sw_value_i64 has no host ops");
    v = sw_value_i64(INT64_MAX);
    is_int(v.as.i, INT64_MAX, "sw_value_i64(INT64_MAX) holds INT64_MAX");

    /* Clearing a number releases nothing and leaves no value behind. */
    v = sw_value_f64(2.5);
    sw_value_clear(&v);
    is_int(v.kind, SW_VALUE_NONE, "clearing an F64 value leaves NONE");
    v = sw_value_i64(7);
    sw_value_clear(&v);
    is_int(v.kind, SW_VALUE_NONE, "clearing an I64 value leaves NONE");
    memset(&v, 0, sizeof v);
    v.kind = SW_VALUE_NONE;
    sw_value_clear(&v);
    is_int(v.kind, SW_VALUE_NONE, "clearing NONE leaves NONE");

    /* A host value goes back to its ops exactly once. */
    int object;
    memset(&v, 0, sizeof v);
    v.kind = SW_VALUE_HOST;
    v.as.host = &object;
    v.ops = &release_counting_ops;
    value_releases = 0;
    value_released_last = NULL;
    sw_value_clear(&v);
    is_int(value_releases, 1, "clearing a host value releases it once");
    ok(value_released_last == &object, "the release receives the host object");
    is_int(v.kind, SW_VALUE_NONE, "a cleared host value is NONE");
    ok(v.ops == NULL && v.as.host == NULL,
       "a cleared host value holds no reference");
    sw_value_clear(&v);
    is_int(value_releases, 1, "clearing it again releases nothing more");

    /* Ops without release_value: clearing must not crash. */
    memset(&v, 0, sizeof v);
    v.kind = SW_VALUE_HOST;
    v.as.host = &object;
    v.ops = &no_release_ops;
    sw_value_clear(&v);
    is_int(v.kind, SW_VALUE_NONE,
           "clearing a host value whose ops have no release_value");
}

/* ------------------------------------------------------------------ CPU */

static void test_cpu_new(void) {
    int64_t base = sw_debug_live_allocs();
    static const sw_dtype good[] = {SW_DTYPE_FLOAT32, SW_DTYPE_INT32,
                                    SW_DTYPE_BOOL};
    static const int64_t sizes[] = {0, 1, 3, 17, 1000};
    for (size_t d = 0; d < 3; d++) {
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
            char name[128];
            snprintf(name, sizeof name, "sw_cpu_new(%lld, %s)",
                     (long long)sizes[k], sw_dtype_name(good[d]));
            sw_carrier *c = NULL;
            sw_status st = sw_cpu_new(sizes[k], good[d], 1, 0, &c);
            if (!expect_ok(st, name))
                continue;
            ok(sw_carrier_is_cpu(c), "%s is a CPU carrier", name);
            ok(!sw_carrier_is_generic(c), "%s is not Generic", name);
            is_str(sw_carrier_get_class(c)->name, "CPU", "%s: class name",
                   name);
            is_int(sw_carrier_dtype(c), good[d], "%s: dtype", name);
            is_int(sw_carrier_size(c), sizes[k], "%s: size", name);
            is_int(sw_carrier_version(c), 0, "%s: version starts at 0", name);
            ok(sw_carrier_is_mutable(c), "%s is mutable", name);
            ok(!sw_carrier_is_released(c), "%s is not released", name);
            ok(!sw_carrier_is_owned(c), "%s is not owned", name);
            ok(!sw_carrier_has_owner_access(c), "%s has no owner access", name);
            void *data = sw_cpu_data(c);
            ok(data != NULL, "%s has data", name);
            is_int((uintptr_t)data % 64, 0, "%s: data is 64-byte aligned",
                   name);
            /* Zero-filled: every byte of the buffer and every element. */
            bool zero = true;
            int64_t bytes = sizes[k] * sw_dtype_itemsize(good[d]);
            for (int64_t b = 0; data && b < bytes; b++)
                zero = zero && ((unsigned char *)data)[b] == 0;
            for (int64_t i = 0; i < sizes[k]; i++)
                zero = zero && read_num(c, i) == 0.0;
            ok(zero, "%s is zero-filled", name);
            sw_carrier_unref(c);
        }
    }
    leak_check(base, "sw_cpu_new");

    /*
     * Zeroing proven on reused memory: dirty a buffer, free it, and ask for
     * the same size again, several times.
     */
    bool all_zero = true;
    for (int round = 0; round < 8; round++) {
        sw_carrier *c = NULL;
        if (sw_cpu_new(64, SW_DTYPE_INT32, 1, 0, &c) != SW_OK) {
            all_zero = false;
            break;
        }
        int32_t *p = sw_cpu_data(c);
        for (int i = 0; i < 64; i++) {
            all_zero = all_zero && p[i] == 0;
            p[i] = -1;
        }
        sw_carrier_unref(c);
    }
    ok(all_zero, "a fresh buffer is zero even where a freed one was dirty");

    /* empty = 1: the size and dtype are right; the contents are open. */
    sw_carrier *e = NULL;
    sw_status st = sw_cpu_new(33, SW_DTYPE_FLOAT32, 1, 1, &e);
    if (expect_ok(st, "sw_cpu_new(33, Float32, empty)")) {
        is_int(sw_carrier_size(e), 33, "an empty CPU carrier has its size");
        is_int((uintptr_t)sw_cpu_data(e) % 64, 0,
               "an empty CPU carrier is aligned too");
        /* Writable everywhere: the buffer really has 33 elements. */
        float *p = sw_cpu_data(e);
        for (int i = 0; i < 33; i++)
            p[i] = (float)i;
        is_int(read_num(e, 32), 32, "the last element of an empty carrier");
        sw_carrier_unref(e);
    }

    /* Immutable. */
    sw_carrier *im = NULL;
    st = sw_cpu_new(4, SW_DTYPE_FLOAT32, 0, 0, &im);
    if (expect_ok(st, "sw_cpu_new(4, Float32, immutable)")) {
        ok(!sw_carrier_is_mutable(im), "an immutable CPU carrier");
        sw_carrier_unref(im);
    }

    /* Rejections. */
    sw_carrier *c = SENT_CARRIER;
    st = sw_cpu_new(-1, SW_DTYPE_FLOAT32, 1, 0, &c);
    expect_fail(st, SW_EVALUE, "CPU size must be non-negative",
                "sw_cpu_new(-1)");
    ok(c == SENT_CARRIER, "sw_cpu_new(-1) leaves its out-parameter alone");
    st = sw_cpu_new(INT64_MIN, SW_DTYPE_INT32, 1, 0, &c);
    expect_fail(st, SW_EVALUE, "CPU size must be non-negative",
                "sw_cpu_new(INT64_MIN)");
    ok(c == SENT_CARRIER, "sw_cpu_new(INT64_MIN) leaves its out-parameter");
    static const sw_dtype bad[] = {SW_DTYPE_ANY, SW_DTYPE_FLOATING,
                                   (sw_dtype)SW_DTYPE_COUNT, (sw_dtype)-1};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        char name[64];
        snprintf(name, sizeof name, "sw_cpu_new with dtype %d", (int)bad[k]);
        st = sw_cpu_new(4, bad[k], 1, 0, &c);
        expect_fail(st, SW_EVALUE,
                    "CPU dtype must be DType.Float32, DType.Int32 or "
                    "DType.Bool",
                    name);
        ok(c == SENT_CARRIER, "%s leaves its out-parameter alone", name);
    }
    /* A size whose byte length overflows: refused before allocating. */
    st = sw_cpu_new(INT64_MAX, SW_DTYPE_FLOAT32, 1, 0, &c);
    expect_fail(st, SW_EOVERFLOW,
                "CPU size 9223372036854775807 is too large: "
                "9223372036854775807 elements of DType.Float32 (4 bytes each) "
                "overflow the byte length",
                "sw_cpu_new(INT64_MAX)");
    ok(c == SENT_CARRIER, "sw_cpu_new(INT64_MAX) leaves its out-parameter");
    st = sw_cpu_new(INT64_MAX / 4 + 1, SW_DTYPE_INT32, 1, 0, &c);
    expect_fail(st, SW_EOVERFLOW,
                "CPU size 2305843009213693952 is too large: "
                "2305843009213693952 elements of DType.Int32 (4 bytes each) "
                "overflow the byte length",
                "sw_cpu_new(INT64_MAX/4+1, Int32)");
    ok(c == SENT_CARRIER, "and leaves its out-parameter alone");
    /* The last bytes below INT64_MAX are the aligned allocator's header. */
    st = sw_cpu_new(INT64_MAX - 100, SW_DTYPE_BOOL, 1, 0, &c);
    is_int(st, SW_EOVERFLOW, "sw_cpu_new(INT64_MAX-100, Bool) fails (got %s)",
           S(st));
    sw_clear_error();
    leak_check(base, "CPU construction");
}

static void test_cpu_wrap(void) {
    int64_t base = sw_debug_live_allocs();
    float buf[5] = {1.5f, -2.0f, 0.1f, 4.0f, 99.0f};
    sw_carrier *c = NULL;
    /* Only the first 4 elements are the carrier's; buf[4] is a guard. */
    sw_status st = sw_cpu_wrap(buf, 4, SW_DTYPE_FLOAT32, 1, &c);
    if (expect_ok(st, "sw_cpu_wrap(buf, 4, Float32)")) {
        ok(sw_carrier_is_cpu(c), "a wrapped carrier is a CPU carrier");
        ok(sw_cpu_data(c) == (void *)buf, "sw_cpu_data is the caller's array");
        is_int(sw_carrier_size(c), 4, "the wrapped size");
        is_int(sw_carrier_version(c), 0, "the wrapped version starts at 0");
        ok(sw_carrier_is_mutable(c), "a mutable wrap");
        ok(buf[0] == 1.5f && buf[1] == -2.0f && buf[2] == 0.1f &&
               buf[3] == 4.0f,
           "wrapping does not write the caller's memory");
        expect_f64_at(c, 0, 1.5, "wrapped element 0");
        expect_f64_at(c, 2, (double)0.1f, "wrapped element 2");
        st = set_f(c, 1, 8.25);
        expect_ok(st, "a write into a wrapped carrier");
        ok(buf[1] == 8.25f, "the write shows in the caller's array");
        buf[3] = -7.5f;
        expect_f64_at(c, 3, -7.5, "a caller's write shows in the carrier");
        st = set_f(c, 4, 1.0);
        expect_fail(st, SW_EINDEX, "Carrier index out of range",
                    "a write past the wrapped size");
        ok(buf[4] == 99.0f, "the guard element past the size is untouched");
        st = sw_carrier_release_storage(c);
        expect_ok(st, "releasing a wrapped carrier");
        ok(sw_cpu_data(c) == NULL, "a released wrap has no data");
        is_int(sw_carrier_size(c), 0, "a released wrap has size 0");
        /* Never freed: ASan would report a free of stack memory. */
        ok(buf[0] == 1.5f && buf[1] == 8.25f && buf[3] == -7.5f,
           "the caller's array is intact after release");
        sw_carrier_unref(c);
        ok(buf[0] == 1.5f, "the caller's array is intact after destroy");
    }

    int32_t ibuf[3] = {5, -6, 7};
    st = sw_cpu_wrap(ibuf, 3, SW_DTYPE_INT32, 0, &c);
    if (expect_ok(st, "sw_cpu_wrap(ibuf, 3, Int32, immutable)")) {
        ok(!sw_carrier_is_mutable(c), "an immutable wrap is not mutable");
        expect_i64_at(c, 1, -6, "wrapped Int32 element 1");
        st = set_i(c, 0, 1);
        expect_fail(st, SW_ERUNTIME, "Carrier is not mutable",
                    "a write into an immutable wrap");
        is_int(ibuf[0], 5, "the immutable wrap left the caller's array");
        is_int(sw_carrier_version(c), 0, "and its version");
        sw_carrier_unref(c);
    }

    uint8_t bbuf[2] = {0, 1};
    st = sw_cpu_wrap(bbuf, 2, SW_DTYPE_BOOL, 1, &c);
    if (expect_ok(st, "sw_cpu_wrap(bbuf, 2, Bool)")) {
        is_int(read_num(c, 1), 1, "wrapped Bool element 1");
        st = set_i(c, 0, 5);
        expect_ok(st, "a Bool write into a wrap");
        is_int(bbuf[0], 1, "a Bool write stores 1");
        sw_carrier_unref(c);
    }

    /* Size 0 over a real pointer is fine. */
    st = sw_cpu_wrap(buf, 0, SW_DTYPE_FLOAT32, 1, &c);
    if (expect_ok(st, "sw_cpu_wrap(buf, 0)")) {
        is_int(sw_carrier_size(c), 0, "a wrap of size 0");
        sw_carrier_unref(c);
    }

    c = SENT_CARRIER;
    st = sw_cpu_wrap(NULL, 4, SW_DTYPE_FLOAT32, 1, &c);
    expect_fail(st, SW_EVALUE, "CPU pointer must be a positive integer address",
                "sw_cpu_wrap(NULL)");
    ok(c == SENT_CARRIER, "sw_cpu_wrap(NULL) leaves its out-parameter alone");
    st = sw_cpu_wrap(buf, -1, SW_DTYPE_FLOAT32, 1, &c);
    expect_fail(st, SW_EVALUE, "CPU size must be non-negative",
                "sw_cpu_wrap(buf, -1)");
    ok(c == SENT_CARRIER, "sw_cpu_wrap(buf, -1) leaves its out-parameter");
    st = sw_cpu_wrap(buf, 4, SW_DTYPE_FLOATING, 1, &c);
    expect_fail(st, SW_EVALUE,
                "CPU dtype must be DType.Float32, DType.Int32 or DType.Bool",
                "sw_cpu_wrap(buf, 4, Floating)");
    ok(c == SENT_CARRIER, "sw_cpu_wrap(Floating) leaves its out-parameter");
    st = sw_cpu_wrap(buf, 4, SW_DTYPE_ANY, 1, &c);
    expect_fail(st, SW_EVALUE,
                "CPU dtype must be DType.Float32, DType.Int32 or DType.Bool",
                "sw_cpu_wrap(buf, 4, Any)");
    ok(c == SENT_CARRIER, "sw_cpu_wrap(Any) leaves its out-parameter");

    /* The byte length of a wrap must not overflow. */
    st = sw_cpu_wrap(buf, INT64_MAX / 2, SW_DTYPE_FLOAT32, 1, &c);
    expect_fail(st, SW_EOVERFLOW,
                "CPU size 4611686018427387903 is too large: "
                "4611686018427387903 elements of DType.Float32 (4 bytes each) "
                "overflow the byte length",
                "sw_cpu_wrap(buf, INT64_MAX/2)");
    ok(c == SENT_CARRIER, "an overflowing wrap leaves its out-parameter");
    st = sw_cpu_wrap(buf, (INT64_MAX >> 2) + 1, SW_DTYPE_INT32, 1, &c);
    is_int(st, SW_EOVERFLOW, "a wrap of 2^61 Int32 elements fails (got %s)",
           S(st));
    sw_clear_error();
    /* Nor may the memory run past the end of the address space. */
    st = sw_cpu_wrap((void *)(UINTPTR_MAX - 15), 32, SW_DTYPE_BOOL, 1, &c);
    is_int(st, SW_EOVERFLOW, "a wrap past the top address fails (got %s)",
           S(st));
    ok(strstr(sw_errmsg(), "overflows the address space") != NULL,
       "and says so ('%s')", sw_errmsg());
    sw_clear_error();
    ok(c == SENT_CARRIER, "and leaves its out-parameter alone");

    /* The elements must be aligned for their loads and stores. */
    char name[96];
    snprintf(name, sizeof name,
             "CPU pointer 0x%llx is not aligned to 4 bytes, as DType.Float32 "
             "elements require",
             (unsigned long long)(uintptr_t)((char *)buf + 1));
    st = sw_cpu_wrap((char *)buf + 1, 2, SW_DTYPE_FLOAT32, 1, &c);
    expect_fail(st, SW_EVALUE, name, "sw_cpu_wrap(buf + 1 byte, Float32)");
    ok(c == SENT_CARRIER, "a misaligned wrap leaves its out-parameter");
    st = sw_cpu_wrap((char *)ibuf + 2, 1, SW_DTYPE_INT32, 1, &c);
    is_int(st, SW_EVALUE, "sw_cpu_wrap(ibuf + 2 bytes, Int32) fails (got %s)",
           S(st));
    ok(strstr(sw_errmsg(), "not aligned to 4 bytes, as DType.Int32") != NULL,
       "and names the alignment ('%s')", sw_errmsg());
    sw_clear_error();
    /* Bool elements are bytes: any address will do. */
    st = sw_cpu_wrap(bbuf + 1, 1, SW_DTYPE_BOOL, 1, &c);
    if (expect_ok(st, "sw_cpu_wrap(bbuf + 1, Bool)"))
        sw_carrier_unref(c);
    leak_check(base, "sw_cpu_wrap");
}

static void test_cpu_float32(void) {
    sw_carrier *c = NULL;
    sw_status st = sw_cpu_new(6, SW_DTYPE_FLOAT32, 1, 0, &c);
    if (!expect_ok(st, "sw_cpu_new(6, Float32)"))
        return;
    float *p = sw_cpu_data(c);
    int64_t version = 0;

    st = set_f(c, 0, 0.1);
    expect_ok(st, "Float32 set 0.1");
    is_int(sw_carrier_version(c), ++version, "a write bumps the version");
    expect_f64_at(c, 0, (double)0.1f, "0.1 reads back float32-rounded");
    ok((double)0.1f != 0.1, "(double)0.1f is not 0.1 (the test means it)");
    ok(p[0] == 0.1f, "the buffer holds 0.1f");

    st = set_i(c, 1, 3);
    expect_ok(st, "Float32 set integer 3");
    is_int(sw_carrier_version(c), ++version, "a write bumps the version");
    expect_f64_at(c, 1, 3.0, "an integer reads back as 3.0");

    st = set_i(c, 2, 16777217);
    expect_ok(st, "Float32 set integer 2^24+1");
    expect_f64_at(c, 2, 16777216.0, "2^24+1 rounds to float32");
    is_int(sw_carrier_version(c), ++version, "a write bumps the version");

    st = set_f(c, 3, 1e300);
    expect_ok(st, "Float32 set 1e300");
    expect_f64_at(c, 3, INFINITY, "1e300 becomes inf in float32");
    st = set_f(c, 3, -1e300);
    expect_ok(st, "Float32 set -1e300");
    expect_f64_at(c, 3, -INFINITY, "-1e300 becomes -inf in float32");
    st = set_f(c, 3, NAN);
    expect_ok(st, "Float32 set NaN");
    expect_f64_at(c, 3, NAN, "NaN stays NaN");
    st = set_f(c, 3, -0.0);
    expect_ok(st, "Float32 set -0.0");
    expect_f64_at(c, 3, -0.0, "-0.0 keeps its sign");
    version += 4;

    st = set_f(c, 4, 2.5);
    expect_ok(st, "Float32 set 2.5");
    st = set_none(c, 4);
    expect_ok(st, "Float32 set NONE");
    expect_f64_at(c, 4, 0.0, "NONE writes 0");
    version += 2;
    is_int(sw_carrier_version(c), version, "one bump per successful write");

    /* Host values are not numbers. */
    int object;
    sw_value h;
    memset(&h, 0, sizeof h);
    h.kind = SW_VALUE_HOST;
    h.as.host = &object;
    h.ops = &release_counting_ops;
    p[5] = 6.5f;
    value_releases = 0;
    st = sw_carrier_set(c, 5, &h);
    is_int(st, SW_ETYPE, "Float32 set of a host value fails with SW_ETYPE");
    ok(strlen(sw_errmsg()) > 0, "with a message ('%s')", sw_errmsg());
    sw_clear_error();
    ok(p[5] == 6.5f, "the rejected host value left the element");
    is_int(sw_carrier_version(c), version, "a failed write does not bump");
    is_int(value_releases, 0, "a borrowed host value is not released");
    sw_carrier_unref(c);
}

static void test_cpu_int32(void) {
    sw_carrier *c = NULL;
    sw_status st = sw_cpu_new(4, SW_DTYPE_INT32, 1, 0, &c);
    if (!expect_ok(st, "sw_cpu_new(4, Int32)"))
        return;
    int32_t *p = sw_cpu_data(c);
    st = set_i(c, 0, 5);
    expect_ok(st, "Int32 set 5");
    expect_i64_at(c, 0, 5, "Int32 element 0");
    is_int(p[0], 5, "the buffer holds 5");
    st = set_i(c, 1, INT32_MAX);
    expect_ok(st, "Int32 set INT32_MAX");
    expect_i64_at(c, 1, INT32_MAX, "INT32_MAX reads back");
    st = set_i(c, 2, INT32_MIN);
    expect_ok(st, "Int32 set INT32_MIN");
    expect_i64_at(c, 2, INT32_MIN, "INT32_MIN reads back");
    is_int(sw_carrier_version(c), 3, "three writes, three bumps");

    st = set_f(c, 0, 1.0);
    expect_fail(st, SW_ETYPE, "CPU value must be an integer",
                "Int32 set of the double 1.0");
    expect_i64_at(c, 0, 5, "the rejected double left the element");
    st = set_f(c, 0, 7.5);
    expect_fail(st, SW_ETYPE, "CPU value must be an integer",
                "Int32 set of the double 7.5");
    st = set_i(c, 0, (int64_t)INT32_MAX + 1);
    expect_fail(st, SW_EOVERFLOW, "CPU value is out of int32 range",
                "Int32 set of 2^31");
    st = set_i(c, 0, (int64_t)INT32_MIN - 1);
    expect_fail(st, SW_EOVERFLOW, "CPU value is out of int32 range",
                "Int32 set of -2^31-1");
    st = set_i(c, 0, INT64_MAX);
    expect_fail(st, SW_EOVERFLOW, "CPU value is out of int32 range",
                "Int32 set of INT64_MAX");
    expect_i64_at(c, 0, 5, "the rejected values left the element");
    is_int(sw_carrier_version(c), 3, "failed writes do not bump");

    st = set_none(c, 1);
    expect_ok(st, "Int32 set NONE");
    expect_i64_at(c, 1, 0, "NONE writes 0");
    is_int(sw_carrier_version(c), 4, "the NONE write bumps once");

    int object;
    sw_value h;
    memset(&h, 0, sizeof h);
    h.kind = SW_VALUE_HOST;
    h.as.host = &object;
    h.ops = &release_counting_ops;
    st = sw_carrier_set(c, 0, &h);
    is_int(st, SW_ETYPE, "Int32 set of a host value fails with SW_ETYPE");
    ok(strlen(sw_errmsg()) > 0, "with a message ('%s')", sw_errmsg());
    sw_clear_error();
    expect_i64_at(c, 0, 5, "the rejected host value left the element");
    sw_carrier_unref(c);
}

static void test_cpu_bool(void) {
    sw_carrier *c = NULL;
    sw_status st = sw_cpu_new(5, SW_DTYPE_BOOL, 1, 0, &c);
    if (!expect_ok(st, "sw_cpu_new(5, Bool)"))
        return;
    uint8_t *p = sw_cpu_data(c);
    st = set_f(c, 0, 0.5);
    expect_ok(st, "Bool set 0.5");
    st = set_i(c, 1, 7);
    expect_ok(st, "Bool set 7");
    st = set_i(c, 2, -1);
    expect_ok(st, "Bool set -1");
    st = set_f(c, 3, 0.0);
    expect_ok(st, "Bool set 0.0");
    st = set_i(c, 4, 1);
    expect_ok(st, "Bool set 1");
    st = set_none(c, 4);
    expect_ok(st, "Bool set NONE");
    static const uint8_t want[5] = {1, 1, 1, 0, 0};
    for (int i = 0; i < 5; i++) {
        is_int(p[i], want[i], "Bool byte %d stores %d", i, want[i]);
        is_int(read_num(c, i), want[i], "Bool element %d reads %d", i, want[i]);
    }
    is_int(sw_carrier_version(c), 6, "six writes, six bumps");
    sw_carrier_unref(c);
}

static void test_cpu_bounds_and_mutability(void) {
    sw_carrier *c = NULL;
    sw_status st = sw_cpu_new(3, SW_DTYPE_FLOAT32, 1, 0, &c);
    if (!expect_ok(st, "sw_cpu_new(3, Float32)"))
        return;
    static const int64_t bad[] = {-1, 3, 4, INT64_MIN, INT64_MAX};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        char name[64];
        snprintf(name, sizeof name, "get(%lld)", (long long)bad[k]);
        sw_value v = sentinel_value();
        st = sw_carrier_get(c, bad[k], &v);
        expect_fail(st, SW_EINDEX, "Carrier index out of range", name);
        ok(value_untouched(&v), "%s leaves its out-parameter alone", name);
        snprintf(name, sizeof name, "set(%lld)", (long long)bad[k]);
        st = set_f(c, bad[k], 1.0);
        expect_fail(st, SW_EINDEX, "Carrier index out of range", name);
    }
    is_int(sw_carrier_version(c), 0, "rejected writes do not bump");
    sw_carrier_unref(c);

    st = sw_cpu_new(3, SW_DTYPE_INT32, 0, 0, &c);
    if (!expect_ok(st, "sw_cpu_new(3, Int32, immutable)"))
        return;
    st = set_i(c, 0, 1);
    expect_fail(st, SW_ERUNTIME, "Carrier is not mutable",
                "a write into an immutable CPU carrier");
    /* The mutability check comes before the range and conversion checks. */
    st = set_i(c, 7, 1);
    expect_fail(st, SW_ERUNTIME, "Carrier is not mutable",
                "an out-of-range write into an immutable carrier");
    st = set_f(c, 0, 1.5);
    expect_fail(st, SW_ERUNTIME, "Carrier is not mutable",
                "a bad-value write into an immutable carrier");
    expect_i64_at(c, 0, 0, "an immutable carrier can be read");
    is_int(sw_carrier_version(c), 0, "and keeps its version");
    /* The version can still be bumped: it is not owned. */
    st = sw_carrier_bump_version(c);
    expect_ok(st, "sw_carrier_bump_version on an unowned carrier");
    is_int(sw_carrier_version(c), 1, "bump_version adds one");
    sw_carrier_unref(c);

    /* The range check on a mutable Int32 comes before the conversion. */
    st = sw_cpu_new(3, SW_DTYPE_INT32, 1, 0, &c);
    if (!expect_ok(st, "sw_cpu_new(3, Int32)"))
        return;
    st = set_f(c, 5, 1.5);
    expect_fail(st, SW_EINDEX, "Carrier index out of range",
                "a bad value at a bad index through the base");
    sw_carrier_unref(c);
}

static void test_cpu_release(void) {
    int64_t base = sw_debug_live_allocs();
    sw_carrier *c = NULL;
    sw_status st = sw_cpu_new(1000, SW_DTYPE_FLOAT32, 1, 0, &c);
    if (!expect_ok(st, "sw_cpu_new(1000)"))
        return;
    st = set_f(c, 0, 1.0);
    expect_ok(st, "a write before release");
    st = set_f(c, 1, 2.0);
    expect_ok(st, "another write before release");
    int64_t held = sw_debug_live_allocs();
    st = sw_carrier_release_storage(c);
    expect_ok(st, "sw_carrier_release_storage");
    ok(sw_carrier_is_released(c), "the carrier is released");
    ok(sw_debug_live_allocs() < held, "release frees the owned buffer");
    is_int(sw_carrier_version(c), 2, "release does not change the version");
    is_int(sw_carrier_size(c), 0, "a released carrier has size 0");
    ok(sw_cpu_data(c) == NULL, "a released carrier has no data");
    is_int(sw_carrier_dtype(c), SW_DTYPE_FLOAT32, "the dtype stays");

    sw_value v = sentinel_value();
    st = sw_carrier_get(c, 0, &v);
    expect_fail(st, SW_ERUNTIME, "Carrier is released", "get after release");
    ok(value_untouched(&v), "get after release leaves its out-parameter");
    st = sw_carrier_get(c, 5000, &v);
    expect_fail(st, SW_ERUNTIME, "Carrier is released",
                "get(5000) after release (released before range)");
    st = sw_carrier_get(c, -1, &v);
    expect_fail(st, SW_ERUNTIME, "Carrier is released",
                "get(-1) after release");
    st = set_f(c, 0, 1.0);
    expect_fail(st, SW_ERUNTIME, "Carrier is released", "set after release");
    st = set_f(c, 5000, 1.0);
    expect_fail(st, SW_ERUNTIME, "Carrier is released",
                "set(5000) after release");
    is_int(sw_carrier_version(c), 2, "failed writes after release");

    int64_t after = sw_debug_live_allocs();
    st = sw_carrier_release_storage(c);
    expect_ok(st, "a second release (idempotent)");
    ok(sw_carrier_is_released(c), "still released");
    is_int(sw_debug_live_allocs(), after, "a second release frees nothing");
    is_int(sw_carrier_version(c), 2, "the second release keeps the version");
    sw_carrier_unref(c);
    leak_check(base, "CPU release");

    /* An immutable carrier can be released too. */
    st = sw_cpu_new(4, SW_DTYPE_INT32, 0, 0, &c);
    if (expect_ok(st, "sw_cpu_new(4, Int32, immutable)")) {
        st = sw_carrier_release_storage(c);
        expect_ok(st, "releasing an immutable carrier");
        st = set_i(c, 0, 1);
        expect_fail(st, SW_ERUNTIME, "Carrier is released",
                    "a write into a released immutable carrier");
        sw_carrier_unref(c);
    }
    leak_check(base, "CPU release (immutable)");
}

static void test_cpu_like(void) {
    int64_t base = sw_debug_live_allocs();
    sw_carrier *c = NULL;
    sw_status st = sw_cpu_new(3, SW_DTYPE_INT32, 1, 0, &c);
    if (!expect_ok(st, "sw_cpu_new(3, Int32)"))
        return;
    st = set_i(c, 0, 9);
    expect_ok(st, "a write into the source");

    sw_carrier *r = NULL;
    st = sw_carrier_allocate_like(c, 5, 1, (sw_dtype)SW_DTYPE_COUNT, 0, &r);
    if (expect_ok(st, "allocate_like(5, own dtype)")) {
        ok(sw_carrier_is_cpu(r), "allocate_like makes a CPU carrier");
        is_int(sw_carrier_dtype(r), SW_DTYPE_INT32, "of the source's dtype");
        is_int(sw_carrier_size(r), 5, "of the requested size");
        ok(sw_carrier_is_mutable(r), "mutable as asked");
        is_int(sw_carrier_version(r), 0, "at version 0");
        bool zero = true;
        for (int i = 0; i < 5; i++)
            zero = zero && read_num(r, i) == 0.0;
        ok(zero, "zero-filled");
        is_int((uintptr_t)sw_cpu_data(r) % 64, 0, "and aligned");
        sw_carrier_unref(r);
    }
    st = sw_carrier_allocate_like(c, 2, 0, SW_DTYPE_FLOAT32, 0, &r);
    if (expect_ok(st, "allocate_like(2, Float32, immutable)")) {
        is_int(sw_carrier_dtype(r), SW_DTYPE_FLOAT32, "of the asked dtype");
        ok(!sw_carrier_is_mutable(r), "immutable as asked");
        sw_carrier_unref(r);
    }
    st = sw_carrier_allocate_like(c, 7, 1, SW_DTYPE_BOOL, 1, &r);
    if (expect_ok(st, "allocate_like(7, Bool, empty)")) {
        is_int(sw_carrier_size(r), 7, "an empty allocation has its size");
        is_int(sw_carrier_dtype(r), SW_DTYPE_BOOL, "and its dtype");
        sw_carrier_unref(r);
    }
    st = sw_carrier_allocate_like(c, 0, 1, (sw_dtype)SW_DTYPE_COUNT, 0, &r);
    if (expect_ok(st, "allocate_like(0)")) {
        is_int(sw_carrier_size(r), 0, "an allocation of 0 elements");
        sw_carrier_unref(r);
    }
    r = SENT_CARRIER;
    st = sw_carrier_allocate_like(c, -1, 1, (sw_dtype)SW_DTYPE_COUNT, 0, &r);
    expect_fail(st, SW_EVALUE, "CPU allocation size must be non-negative",
                "allocate_like(-1)");
    ok(r == SENT_CARRIER, "allocate_like(-1) leaves its out-parameter");
    st = sw_carrier_allocate_like(c, 2, 1, SW_DTYPE_FLOATING, 0, &r);
    expect_fail(st, SW_EVALUE,
                "CPU dtype must be DType.Float32, DType.Int32 or DType.Bool",
                "allocate_like(Floating)");
    ok(r == SENT_CARRIER, "allocate_like(Floating) leaves its out-parameter");
    st = sw_carrier_allocate_like(c, 2, 1, (sw_dtype)(SW_DTYPE_COUNT + 1), 0,
                                  &r);
    is_int(st, SW_EVALUE, "allocate_like with an unknown dtype fails");
    ok(r == SENT_CARRIER, "and leaves its out-parameter");
    sw_clear_error();

    /* new_like: values, NONE as 0, the dtype default and conversions. */
    sw_value vals[4];
    vals[0] = sw_value_i64(4);
    memset(&vals[1], 0, sizeof vals[1]);
    vals[1].kind = SW_VALUE_NONE;
    vals[2] = sw_value_i64(-3);
    vals[3] = sw_value_i64(INT32_MAX);
    st = sw_carrier_new_like(c, 4, vals, 1, (sw_dtype)SW_DTYPE_COUNT, &r);
    if (expect_ok(st, "new_like(4 values, own dtype)")) {
        ok(sw_carrier_is_cpu(r), "new_like makes a CPU carrier");
        is_int(sw_carrier_dtype(r), SW_DTYPE_INT32, "of the source's dtype");
        is_int(sw_carrier_size(r), 4, "with one element per value");
        expect_i64_at(r, 0, 4, "new_like element 0");
        expect_i64_at(r, 1, 0, "new_like element 1 (NONE becomes 0)");
        expect_i64_at(r, 2, -3, "new_like element 2");
        expect_i64_at(r, 3, INT32_MAX, "new_like element 3");
        is_int(sw_carrier_version(r), 0, "a new carrier is at version 0");
        ok(sw_carrier_is_mutable(r), "mutable as asked");
        expect_i64_at(c, 0, 9, "the source is unchanged");
        sw_carrier_unref(r);
    }
    sw_value fvals[3];
    fvals[0] = sw_value_f64(0.1);
    fvals[1] = sw_value_i64(2);
    memset(&fvals[2], 0, sizeof fvals[2]);
    fvals[2].kind = SW_VALUE_NONE;
    st = sw_carrier_new_like(c, 3, fvals, 0, SW_DTYPE_FLOAT32, &r);
    if (expect_ok(st, "new_like(Float32, immutable)")) {
        is_int(sw_carrier_dtype(r), SW_DTYPE_FLOAT32, "of the asked dtype");
        ok(!sw_carrier_is_mutable(r), "immutable as asked");
        expect_f64_at(r, 0, (double)0.1f, "new_like Float32 element 0");
        expect_f64_at(r, 1, 2.0, "new_like Float32 element 1");
        expect_f64_at(r, 2, 0.0, "new_like Float32 element 2 (NONE)");
        sw_carrier_unref(r);
    }
    r = SENT_CARRIER;
    st = sw_carrier_new_like(c, 3, fvals, 1, (sw_dtype)SW_DTYPE_COUNT, &r);
    expect_fail(st, SW_ETYPE, "CPU value must be an integer",
                "new_like of a double into Int32");
    ok(r == SENT_CARRIER, "a failed new_like leaves its out-parameter");
    sw_value big = sw_value_i64(INT64_C(1) << 40);
    st = sw_carrier_new_like(c, 1, &big, 1, (sw_dtype)SW_DTYPE_COUNT, &r);
    expect_fail(st, SW_EOVERFLOW, "CPU value is out of int32 range",
                "new_like of 2^40 into Int32");
    ok(r == SENT_CARRIER, "and leaves its out-parameter");
    st = sw_carrier_new_like(c, -1, vals, 1, (sw_dtype)SW_DTYPE_COUNT, &r);
    expect_fail(st, SW_EVALUE, NULL, "new_like(-1)");
    ok(r == SENT_CARRIER, "new_like(-1) leaves its out-parameter");
    st = sw_carrier_new_like(c, 0, NULL, 1, (sw_dtype)SW_DTYPE_COUNT, &r);
    if (expect_ok(st, "new_like of no values")) {
        is_int(sw_carrier_size(r), 0, "an empty new_like");
        sw_carrier_unref(r);
    }

    /* Both work after release, with the released carrier's dtype. */
    st = sw_carrier_release_storage(c);
    expect_ok(st, "releasing the source");
    st = sw_carrier_new_like(c, 2, vals, 1, (sw_dtype)SW_DTYPE_COUNT, &r);
    if (expect_ok(st, "new_like after release")) {
        is_int(sw_carrier_dtype(r), SW_DTYPE_INT32, "keeps the dtype");
        expect_i64_at(r, 0, 4, "new_like after release element 0");
        ok(!sw_carrier_is_released(r), "the copy is not released");
        sw_carrier_unref(r);
    }
    st = sw_carrier_allocate_like(c, 2, 1, (sw_dtype)SW_DTYPE_COUNT, 0, &r);
    if (expect_ok(st, "allocate_like after release")) {
        is_int(sw_carrier_size(r), 2, "allocates the asked size");
        sw_carrier_unref(r);
    }
    sw_carrier_unref(c);
    leak_check(base, "CPU allocate_like/new_like");
}

/* --------------------------------------------- Generic over doubles */

static void test_generic_doubles(void) {
    int64_t base = sw_debug_live_allocs();
    double src[3] = {1.0, 2.5, -3.0};
    sw_carrier *c = NULL;
    sw_status st = sw_generic_new_doubles(3, src, 1, &c);
    if (!expect_ok(st, "sw_generic_new_doubles(3)"))
        return;
    src[0] = 100.0; /* the values were copied */
    ok(sw_carrier_is_generic(c), "a Generic carrier");
    ok(!sw_carrier_is_cpu(c), "not a CPU carrier");
    is_str(sw_carrier_get_class(c)->name, "Generic", "the class name");
    is_int(sw_carrier_dtype(c), SW_DTYPE_FLOATING, "dtype Floating");
    is_int(sw_carrier_size(c), 3, "size 3");
    ok(sw_carrier_is_mutable(c), "mutable");
    ok(sw_generic_store(c) != NULL, "it has a store");
    ok(sw_cpu_data(c) == NULL, "sw_cpu_data of a Generic carrier is NULL");
    expect_f64_at(c, 0, 1.0, "Generic element 0 (copied, not aliased)");
    expect_f64_at(c, 1, 2.5, "Generic element 1");
    expect_f64_at(c, 2, -3.0, "Generic element 2");

    st = set_f(c, 0, 0.1);
    expect_ok(st, "Generic set 0.1");
    expect_f64_at(c, 0, 0.1, "Generic keeps doubles exactly");
    st = set_i(c, 1, 7);
    expect_ok(st, "Generic set integer 7");
    expect_f64_at(c, 1, 7.0, "an integer becomes 7.0 in a store of doubles");
    st = set_none(c, 2);
    expect_ok(st, "Generic set NONE");
    expect_f64_at(c, 2, 0.0, "NONE becomes 0.0 in a store of doubles");
    is_int(sw_carrier_version(c), 3, "three writes, three bumps");

    int object;
    sw_value h;
    memset(&h, 0, sizeof h);
    h.kind = SW_VALUE_HOST;
    h.as.host = &object;
    h.ops = &release_counting_ops;
    st = sw_carrier_set(c, 0, &h);
    is_int(st, SW_ETYPE, "a host value into a store of doubles: SW_ETYPE");
    sw_clear_error();
    expect_f64_at(c, 0, 0.1, "the rejected value left the element");
    is_int(sw_carrier_version(c), 3, "and the version");

    sw_value v = sentinel_value();
    st = sw_carrier_get(c, 3, &v);
    expect_fail(st, SW_EINDEX, "Carrier index out of range", "Generic get(3)");
    ok(value_untouched(&v), "Generic get(3) leaves its out-parameter");
    st = sw_carrier_get(c, -1, &v);
    expect_fail(st, SW_EINDEX, "Carrier index out of range", "Generic get(-1)");
    st = set_f(c, -1, 1.0);
    expect_fail(st, SW_EINDEX, "Carrier index out of range", "Generic set(-1)");

    /* allocate_like: empty slots, which a store of doubles holds as 0. */
    sw_carrier *r = NULL;
    st = sw_carrier_allocate_like(c, 4, 1, (sw_dtype)SW_DTYPE_COUNT, 0, &r);
    if (expect_ok(st, "Generic allocate_like(4)")) {
        ok(sw_carrier_is_generic(r), "a Generic carrier");
        is_int(sw_carrier_dtype(r), SW_DTYPE_FLOATING, "of the own dtype");
        is_int(sw_carrier_size(r), 4, "of 4 elements");
        ok(sw_carrier_is_mutable(r), "mutable");
        expect_f64_at(r, 3, 0.0, "an empty slot of doubles reads 0.0");
        sw_carrier_unref(r);
    }
    st = sw_carrier_allocate_like(c, 2, 0, SW_DTYPE_ANY, 0, &r);
    if (expect_ok(st, "Generic allocate_like(2, Any, immutable)")) {
        is_int(sw_carrier_dtype(r), SW_DTYPE_ANY, "of dtype Any");
        ok(!sw_carrier_is_mutable(r), "immutable as asked");
        sw_carrier_unref(r);
    }
    r = SENT_CARRIER;
    st = sw_carrier_allocate_like(c, 2, 1, SW_DTYPE_FLOAT32, 0, &r);
    expect_fail(st, SW_EVALUE,
                "Generic dtype must be DType.Any or DType.Floating",
                "Generic allocate_like(Float32)");
    ok(r == SENT_CARRIER, "and leaves its out-parameter");
    st = sw_carrier_allocate_like(c, -1, 1, (sw_dtype)SW_DTYPE_COUNT, 0, &r);
    expect_fail(st, SW_EVALUE, "Generic allocation size must be non-negative",
                "Generic allocate_like(-1)");
    ok(r == SENT_CARRIER, "and leaves its out-parameter");

    /* new_like copies the values. */
    sw_value vals[3];
    vals[0] = sw_value_f64(1.25);
    vals[1] = sw_value_i64(-4);
    memset(&vals[2], 0, sizeof vals[2]);
    vals[2].kind = SW_VALUE_NONE;
    st = sw_carrier_new_like(c, 3, vals, 1, (sw_dtype)SW_DTYPE_COUNT, &r);
    if (expect_ok(st, "Generic new_like(3)")) {
        ok(sw_carrier_is_generic(r), "a Generic carrier");
        expect_f64_at(r, 0, 1.25, "Generic new_like element 0");
        expect_f64_at(r, 1, -4.0, "Generic new_like element 1");
        expect_f64_at(r, 2, 0.0, "Generic new_like element 2 (NONE)");
        is_int(sw_carrier_version(r), 0, "at version 0");
        sw_carrier_unref(r);
    }
    r = SENT_CARRIER;
    st = sw_carrier_new_like(c, 1, vals, 1, SW_DTYPE_INT32, &r);
    expect_fail(st, SW_EVALUE,
                "Generic dtype must be DType.Any or DType.Floating",
                "Generic new_like(Int32)");
    ok(r == SENT_CARRIER, "and leaves its out-parameter");

    /* Release drops the store; new_like still works. */
    st = sw_carrier_release_storage(c);
    expect_ok(st, "Generic release");
    ok(sw_generic_store(c) == NULL, "a released Generic has no store");
    is_int(sw_carrier_size(c), 0, "a released Generic has size 0");
    is_int(sw_carrier_version(c), 3, "release keeps the version");
    v = sentinel_value();
    st = sw_carrier_get(c, 0, &v);
    expect_fail(st, SW_ERUNTIME, "Carrier is released", "Generic get");
    ok(value_untouched(&v), "and leaves its out-parameter");
    st = set_f(c, 0, 1.0);
    expect_fail(st, SW_ERUNTIME, "Carrier is released", "Generic set");
    st = sw_carrier_release_storage(c);
    expect_ok(st, "a second Generic release");
    st = sw_carrier_new_like(c, 1, vals, 1, (sw_dtype)SW_DTYPE_COUNT, &r);
    if (expect_ok(st, "Generic new_like after release")) {
        expect_f64_at(r, 0, 1.25, "its element 0");
        sw_carrier_unref(r);
    }
    sw_carrier_unref(c);

    /* Immutable doubles; zero doubles. */
    st = sw_generic_new_doubles(2, src, 0, &c);
    if (expect_ok(st, "sw_generic_new_doubles(2, immutable)")) {
        ok(!sw_carrier_is_mutable(c), "not mutable");
        st = set_f(c, 0, 1.0);
        expect_fail(st, SW_ERUNTIME, "Carrier is not mutable",
                    "a write into immutable doubles");
        expect_f64_at(c, 0, 100.0, "immutable doubles can be read");
        sw_carrier_unref(c);
    }
    st = sw_generic_new_doubles(0, NULL, 1, &c);
    if (expect_ok(st, "sw_generic_new_doubles(0, NULL)")) {
        is_int(sw_carrier_size(c), 0, "zero doubles");
        sw_carrier_unref(c);
    }
    c = SENT_CARRIER;
    st = sw_generic_new_doubles(-1, src, 1, &c);
    is_int(st, SW_EVALUE, "sw_generic_new_doubles(-1) fails with SW_EVALUE");
    ok(c == SENT_CARRIER, "and leaves its out-parameter");
    sw_clear_error();
    leak_check(base, "Generic doubles");
}

/* ------------------------------------------- a counted host-value store */

/*
 * Host objects live in a table with reference counts, as Python objects
 * do: a store slot holds one reference, a value read from a carrier holds
 * one (given back by sw_value_clear), and the test holds those it makes.
 * A store is an array of object pointers; NULL is an empty slot, read as
 * SW_VALUE_NONE.
 */
#define OBJ_MAX 4096
typedef struct obj {
    int64_t value;
    int64_t refs;
} obj;

static obj objs[OBJ_MAX];
static int obj_used;

static struct {
    int64_t handed;   /* references handed out by get */
    int64_t returned; /* references given back through release_value */
    int64_t drops;    /* stores dropped */
    int64_t stores;   /* stores live */
    int64_t bad;      /* protocol violations seen by the store */
} hs;

static const sw_host_ops *obj_ops(void);

static obj *obj_new(int64_t value) {
    if (obj_used >= OBJ_MAX) {
        hs.bad++;
        return NULL;
    }
    obj *o = &objs[obj_used++];
    o->value = value;
    o->refs = 1;
    return o;
}

static void obj_incref(obj *o) {
    if (o)
        o->refs++;
}

static void obj_decref(obj *o) {
    if (!o)
        return;
    if (o->refs <= 0)
        hs.bad++;
    o->refs--;
}

typedef struct objstore {
    int64_t n;
    obj *slot[];
} objstore;

static int64_t os_length(void *store) {
    return ((objstore *)store)->n;
}

static sw_status os_get(void *store, int64_t i, sw_value *out) {
    objstore *s = store;
    if (i < 0 || i >= s->n) {
        hs.bad++;
        return SW_EINDEX;
    }
    memset(out, 0, sizeof *out);
    obj *o = s->slot[i];
    if (!o) {
        out->kind = SW_VALUE_NONE;
        return SW_OK;
    }
    obj_incref(o);
    hs.handed++;
    out->kind = SW_VALUE_HOST;
    out->as.host = o;
    out->ops = obj_ops();
    return SW_OK;
}

/* A new reference for a value: integers become new objects. */
static sw_status os_convert(const sw_value *v, obj **out) {
    switch (v->kind) {
    case SW_VALUE_NONE:
        *out = NULL;
        return SW_OK;
    case SW_VALUE_I64:
        *out = obj_new(v->as.i);
        return *out ? SW_OK : SW_ENOMEM;
    case SW_VALUE_HOST:
        if (v->ops != obj_ops())
            return SW_ETYPE;
        obj_incref(v->as.host);
        *out = v->as.host;
        return SW_OK;
    default:
        return SW_ETYPE;
    }
}

static sw_status os_set(void *store, int64_t i, const sw_value *v) {
    objstore *s = store;
    if (i < 0 || i >= s->n) {
        hs.bad++;
        return SW_EINDEX;
    }
    obj *o = NULL;
    sw_status st = os_convert(v, &o);
    if (st)
        return st;
    obj_decref(s->slot[i]);
    s->slot[i] = o;
    return SW_OK;
}

static void os_free(objstore *s) {
    for (int64_t i = 0; i < s->n; i++)
        obj_decref(s->slot[i]);
    free(s);
    hs.stores--;
}

static sw_status os_make(const sw_host_ops *ops, int64_t n,
                         const sw_value *values, void **out) {
    if (n < 0)
        return SW_EVALUE;
    objstore *s = calloc(1, sizeof *s + (size_t)n * sizeof(obj *));
    if (!s)
        return SW_ENOMEM;
    hs.stores++;
    s->n = 0;
    for (int64_t i = 0; i < n; i++) {
        obj *o = NULL;
        sw_status st = values ? os_convert(&values[i], &o) : SW_OK;
        if (st) {
            os_free(s);
            return st;
        }
        s->slot[s->n++] = o;
    }
    *out = s;
    return SW_OK;
}

static void os_drop(void *store) {
    hs.drops++;
    os_free(store);
}

static void os_release_value(void *host) {
    hs.returned++;
    obj_decref(host);
}

static const sw_host_ops obj_ops_rw = {
    .version = SW_HOST_OPS_VERSION,
    .length = os_length,
    .get = os_get,
    .set = os_set,
    .make = os_make,
    .drop = os_drop,
    .release_value = os_release_value,
};

/* The same store without a set: an immutable sequence. */
static const sw_host_ops obj_ops_ro = {
    .version = SW_HOST_OPS_VERSION,
    .length = os_length,
    .get = os_get,
    .set = NULL,
    .make = os_make,
    .drop = os_drop,
    .release_value = os_release_value,
};

/* Values read through either table are released by the same function. */
static const sw_host_ops *obj_ops(void) {
    return &obj_ops_rw;
}

/* A store of new objects with the given values (the store holds them). */
static void *os_of(int64_t n, const int64_t *values) {
    sw_value v[16];
    for (int64_t i = 0; i < n && i < 16; i++)
        v[i] = sw_value_i64(values[i]);
    void *s = NULL;
    if (os_make(obj_ops(), n, v, &s) != SW_OK)
        return NULL;
    return s;
}

/* Reads element i and checks that it is the host object o. */
static void expect_host_at(sw_carrier *c, int64_t i, const obj *o,
                           const char *name) {
    sw_value v = sentinel_value();
    sw_status st = sw_carrier_get(c, i, &v);
    if (!expect_ok(st, name))
        return;
    if (o == NULL) {
        is_int(v.kind, SW_VALUE_NONE, "%s is an empty slot", name);
    } else if (ok(v.kind == SW_VALUE_HOST && v.as.host == o &&
                      v.ops == obj_ops(),
                  "%s is the object holding %lld", name, (long long)o->value)) {
        ok(((obj *)v.as.host)->refs >= 2,
           "%s: the value read holds its own reference", name);
    }
    sw_value_clear(&v);
}

/* Reads element i: the object there (NULL for empty or failure). */
static obj *host_at(sw_carrier *c, int64_t i) {
    sw_value v = sentinel_value();
    if (sw_carrier_get(c, i, &v) != SW_OK) {
        sw_clear_error();
        return NULL;
    }
    obj *o = v.kind == SW_VALUE_HOST ? v.as.host : NULL;
    sw_value_clear(&v);
    return o;
}

static void check_host_balance(const char *what) {
    is_int(hs.handed, hs.returned,
           "%s: every value read was released once (%lld handed out)", what,
           (long long)hs.handed);
    is_int(hs.bad, 0, "%s: the store saw no protocol violation", what);
    is_int(hs.stores, 0, "%s: every store was dropped", what);
    int64_t live = 0;
    for (int k = 0; k < obj_used; k++)
        if (objs[k].refs != 0)
            live++;
    is_int(live, 0, "%s: every object's count is back to 0", what);
}

static void test_generic_custom(void) {
    int64_t base = sw_debug_live_allocs();
    static const int64_t init[3] = {10, 20, 30};
    void *store = os_of(3, init);
    if (!ok(store != NULL, "a store of three objects"))
        return;
    obj *o10 = ((objstore *)store)->slot[0];
    obj *o20 = ((objstore *)store)->slot[1];
    obj *o30 = ((objstore *)store)->slot[2];
    sw_carrier *c = NULL;
    sw_status st = sw_generic_new(obj_ops(), store, SW_DTYPE_ANY, 1, &c);
    if (!expect_ok(st, "sw_generic_new over a custom store")) {
        os_drop(store);
        return;
    }
    ok(sw_generic_store(c) == store, "sw_generic_store is the store");
    is_int(sw_carrier_dtype(c), SW_DTYPE_ANY, "dtype Any");
    is_int(sw_carrier_size(c), 3, "the store's length");
    ok(sw_carrier_is_mutable(c), "a writable store is mutable");

    /* A read hands out one reference; clearing gives it back once. */
    sw_value v = sentinel_value();
    st = sw_carrier_get(c, 0, &v);
    if (expect_ok(st, "get(0) from a custom store")) {
        ok(v.kind == SW_VALUE_HOST && v.as.host == o10 && v.ops == obj_ops(),
           "get(0) is the host object 10 with its ops");
        is_int(o10->refs, 2, "the value read holds a reference");
        sw_value_clear(&v);
        is_int(o10->refs, 1, "sw_value_clear gives it back");
        is_int(hs.returned, 1, "through release_value, once");
        sw_value_clear(&v);
        is_int(o10->refs, 1, "a second clear gives back nothing");
        is_int(hs.returned, 1, "and does not call release_value");
    }

    /* Writes borrow the value: the store takes its own reference. */
    obj *x = obj_new(77);
    sw_value hv;
    memset(&hv, 0, sizeof hv);
    hv.kind = SW_VALUE_HOST;
    hv.as.host = x;
    hv.ops = obj_ops();
    st = sw_carrier_set(c, 1, &hv);
    expect_ok(st, "set(1) of a host object");
    is_int(x->refs, 2, "the store took its own reference to the object");
    is_int(o20->refs, 0, "the replaced object was released by the store");
    is_int(sw_carrier_version(c), 1, "the write bumped once");
    expect_host_at(c, 1, x, "element 1 after the write");
    st = set_none(c, 2);
    expect_ok(st, "set(2) of NONE");
    is_int(o30->refs, 0, "the emptied slot released its object");
    expect_host_at(c, 2, NULL, "element 2 after NONE");
    st = set_f(c, 0, 1.5);
    is_int(st, SW_ETYPE, "a double into the object store fails (store error)");
    sw_clear_error();
    is_int(sw_carrier_version(c), 2, "the failed write did not bump");
    expect_host_at(c, 0, o10, "element 0 after the failed write");

    /* allocate_like: n empty slots of the same ops. */
    sw_carrier *r = NULL;
    st = sw_carrier_allocate_like(c, 4, 1, (sw_dtype)SW_DTYPE_COUNT, 0, &r);
    if (expect_ok(st, "custom allocate_like(4)")) {
        ok(sw_carrier_is_generic(r), "a Generic carrier");
        is_int(sw_carrier_dtype(r), SW_DTYPE_ANY, "of the own dtype");
        is_int(sw_carrier_size(r), 4, "with 4 slots");
        bool empty = true;
        for (int i = 0; i < 4; i++) {
            sw_value e = sentinel_value();
            empty = empty && sw_carrier_get(r, i, &e) == SW_OK &&
                    e.kind == SW_VALUE_NONE;
            sw_value_clear(&e);
        }
        ok(empty, "every slot of allocate_like is empty");
        sw_carrier_unref(r);
    }

    /* new_like: the new store holds its own references to the values. */
    sw_value nv[3];
    nv[0] = hv;
    nv[1] = sw_value_i64(5);
    memset(&nv[2], 0, sizeof nv[2]);
    nv[2].kind = SW_VALUE_NONE;
    st = sw_carrier_new_like(c, 3, nv, 1, SW_DTYPE_FLOATING, &r);
    if (expect_ok(st, "custom new_like(3)")) {
        is_int(sw_carrier_dtype(r), SW_DTYPE_FLOATING, "of the asked dtype");
        is_int(x->refs, 3, "the copy holds a reference to the object");
        expect_host_at(r, 0, x, "new_like element 0 is the same object");
        obj *five = host_at(r, 1);
        ok(five && five->value == 5, "new_like element 1 holds 5");
        expect_host_at(r, 2, NULL, "new_like element 2 is empty");
        int64_t drops = hs.drops;
        sw_carrier_unref(r);
        is_int(hs.drops, drops + 1, "destroying the copy drops its store");
        is_int(x->refs, 2, "and its reference to the object");
    }

    /* Release drops the store once; destroy does not drop it again. */
    int64_t drops = hs.drops;
    st = sw_carrier_release_storage(c);
    expect_ok(st, "custom Generic release");
    is_int(hs.drops, drops + 1, "release drops the store once");
    ok(sw_generic_store(c) == NULL, "and forgets it");
    is_int(x->refs, 1, "the store's references went with it");
    st = sw_carrier_release_storage(c);
    expect_ok(st, "a second release");
    is_int(hs.drops, drops + 1, "a second release drops nothing");
    sw_carrier_unref(c);
    is_int(hs.drops, drops + 1, "destroying a released carrier drops nothing");
    obj_decref(x);

    /* Without release, destroy drops the store exactly once. */
    store = os_of(2, init);
    st = sw_generic_new(obj_ops(), store, SW_DTYPE_FLOATING, 1, &c);
    if (expect_ok(st, "sw_generic_new(Floating)")) {
        drops = hs.drops;
        sw_carrier_retain(c);
        sw_carrier_unref(c);
        is_int(hs.drops, drops, "dropping one of two references drops nothing");
        sw_carrier_unref(c);
        is_int(hs.drops, drops + 1, "the last reference drops the store once");
    } else {
        os_drop(store);
    }

    /* A store without set is immutable, whatever mutable_ says. */
    store = os_of(2, init);
    st = sw_generic_new(&obj_ops_ro, store, SW_DTYPE_ANY, 1, &c);
    if (expect_ok(st, "sw_generic_new over a read-only store")) {
        ok(!sw_carrier_is_mutable(c), "a store without set is not mutable");
        st = set_i(c, 0, 1);
        expect_fail(st, SW_ERUNTIME, "Carrier is not mutable",
                    "a write into a read-only store");
        is_int(sw_carrier_version(c), 0, "the failed write did not bump");
        obj *first = host_at(c, 0);
        ok(first && first->value == 10, "a read-only store can be read");
        sw_carrier_unref(c);
    } else {
        os_drop(store);
    }
    store = os_of(1, init);
    st = sw_generic_new(obj_ops(), store, SW_DTYPE_ANY, 0, &c);
    if (expect_ok(st, "sw_generic_new(mutable=0)")) {
        ok(!sw_carrier_is_mutable(c), "mutable=0 makes it immutable");
        st = set_i(c, 0, 1);
        expect_fail(st, SW_ERUNTIME, "Carrier is not mutable",
                    "a write into an immutable Generic");
        sw_carrier_unref(c);
    } else {
        os_drop(store);
    }

    /* Rejections leave the store with the caller. */
    static const sw_dtype bad[] = {SW_DTYPE_FLOAT32, SW_DTYPE_INT32,
                                   SW_DTYPE_BOOL, (sw_dtype)SW_DTYPE_COUNT};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        char name[64];
        snprintf(name, sizeof name, "sw_generic_new with dtype %d",
                 (int)bad[k]);
        store = os_of(1, init);
        drops = hs.drops;
        c = SENT_CARRIER;
        st = sw_generic_new(obj_ops(), store, bad[k], 1, &c);
        expect_fail(st, SW_EVALUE,
                    "Generic dtype must be DType.Any or DType.Floating", name);
        ok(c == SENT_CARRIER, "%s leaves its out-parameter alone", name);
        is_int(hs.drops, drops, "%s does not drop the caller's store", name);
        if (st != SW_OK)
            os_drop(store);
    }
    sw_host_ops wrong = obj_ops_rw;
    wrong.version = SW_HOST_OPS_VERSION + 1;
    store = os_of(1, init);
    c = SENT_CARRIER;
    st = sw_generic_new(&wrong, store, SW_DTYPE_ANY, 1, &c);
    expect_fail(st, SW_EVALUE, NULL, "sw_generic_new with a wrong ops version");
    ok(c == SENT_CARRIER, "and leaves its out-parameter alone");
    sw_host_ops partial = obj_ops_rw;
    partial.length = NULL;
    st = sw_generic_new(&partial, store, SW_DTYPE_ANY, 1, &c);
    expect_fail(st, SW_EVALUE, NULL, "sw_generic_new with no length");
    ok(c == SENT_CARRIER, "and leaves its out-parameter alone");
    st = sw_generic_new(NULL, store, SW_DTYPE_ANY, 1, &c);
    expect_fail(st, SW_EVALUE, NULL, "sw_generic_new with no ops");
    ok(c == SENT_CARRIER, "and leaves its out-parameter alone");
    os_drop(store);

    check_host_balance("custom store");
    leak_check(base, "custom store");
}

/*
 * Scatter between Generic carriers over the object store: every value read
 * from the source is released exactly once, and the destination holds the
 * source's objects.
 */
static void test_generic_custom_scatter(void) {
    int64_t base = sw_debug_live_allocs();
    static const int64_t a[4] = {1, 2, 3, 4};
    static const int64_t b[6] = {0, 0, 0, 0, 0, 0};
    sw_carrier *src = NULL, *dst = NULL;
    void *sa = os_of(4, a), *sb = os_of(6, b);
    sw_status st = sw_generic_new(obj_ops(), sa, SW_DTYPE_ANY, 1, &src);
    if (st)
        os_drop(sa);
    sw_status st2 = sw_generic_new(obj_ops(), sb, SW_DTYPE_ANY, 1, &dst);
    if (st2)
        os_drop(sb);
    sw_layout *ls = NULL, *lm = NULL, *ld = NULL;
    sw_tensor *ts = NULL, *td = NULL;
    if (expect_ok(st, "object-store source") &&
        expect_ok(st2, "object-store destination") &&
        expect_ok(sw_layout_parse("(2,2):(2,1)", &ls), "source layout") &&
        expect_ok(sw_layout_parse("(2,2):(1,3)", &lm), "mapping") &&
        expect_ok(sw_layout_parse("6:1", &ld), "onto layout") &&
        expect_ok(sw_tensor_new(src, 0, ls, &ts), "source tensor") &&
        expect_ok(sw_tensor_new(dst, 0, ld, &td), "onto tensor")) {
        int64_t handed = hs.handed, returned = hs.returned;
        st = sw_carrier_scatter(dst, ts, td, lm, 1);
        expect_ok(st, "scatter between object stores");
        ok(hs.handed - handed >= 4, "scatter read the four values");
        is_int(hs.handed - handed, hs.returned - returned,
               "scatter released every value it read, once");
        is_int(sw_carrier_version(dst), 4, "one bump per element");
        /* dst[1 + m(i)] = src[s(i)], m = (2,2):(1,3), s = (2,2):(2,1). */
        static const int want[6] = {0, 1, 3, 0, 2, 4};
        bool same = true;
        for (int k = 0; k < 6; k++) {
            obj *o = host_at(dst, k);
            if (k == 0 || k == 3)
                same = same && o && o->value == 0;
            else
                same = same && o == ((objstore *)sa)->slot[want[k] - 1];
        }
        ok(same, "the destination holds the source's objects in place");
    }
    sw_tensor_unref(ts);
    sw_tensor_unref(td);
    sw_layout_unref(ls);
    sw_layout_unref(lm);
    sw_layout_unref(ld);
    if (!st)
        sw_carrier_unref(src);
    if (!st2)
        sw_carrier_unref(dst);
    check_host_balance("custom store scatter");
    leak_check(base, "custom store scatter");
}

/* --------------------------------------------- a custom carrier backend */

/*
 * The mock backend: up to 16 doubles in a state the test allocates with
 * malloc. Counters live outside the state so that they survive destroy.
 */
typedef struct mock_state {
    int64_t n;
    double v[16];
    int mutable_;
    int fail_set; /* non-zero: set fails with SW_EVALUE */
} mock_state;

static struct {
    int releases;
    int destroys;
    int dtype_calls;
    int sets;
    int release_before_destroy; /* 0 if destroy ran before release */
} mk;

static mock_state *mock_of(sw_carrier *c) {
    return sw_carrier_state(c);
}

static mock_state *mock_state_new(int64_t n, int mutable_) {
    mock_state *s = calloc(1, sizeof *s);
    if (s) {
        s->n = n;
        s->mutable_ = mutable_;
        for (int64_t i = 0; i < n && i < 16; i++)
            s->v[i] = (double)i + 0.5;
    }
    return s;
}

static int64_t mock_size(sw_carrier *c) {
    return mock_of(c)->n;
}

static sw_status mock_get(sw_carrier *c, int64_t i, sw_value *out) {
    *out = sw_value_f64(mock_of(c)->v[i]);
    return SW_OK;
}

static sw_status mock_set(sw_carrier *c, int64_t i, const sw_value *v) {
    mock_state *s = mock_of(c);
    if (s->fail_set)
        return SW_EVALUE;
    mk.sets++;
    s->v[i] = v->kind == SW_VALUE_F64   ? v->as.f
              : v->kind == SW_VALUE_I64 ? (double)v->as.i
                                        : 0.0;
    return SW_OK;
}

/* A set that bumps the version itself, as a Python set_value may. */
static sw_status mock_set_bumping(sw_carrier *c, int64_t i, const sw_value *v) {
    sw_status st = mock_set(c, i, v);
    if (st == SW_OK)
        st = sw_carrier_bump_version(c);
    return st;
}

static sw_dtype mock_dtype(sw_carrier *c) {
    mk.dtype_calls++;
    return SW_DTYPE_INT32;
}

static int mock_is_mutable(sw_carrier *c) {
    return mock_of(c)->mutable_;
}

static void mock_release(sw_carrier *c) {
    mk.releases++;
}

static void mock_destroy(sw_carrier *c) {
    mk.destroys++;
    mk.release_before_destroy = mk.releases > 0;
    free(mock_of(c));
}

static const sw_carrier_class mock_full_class;

static sw_status mock_allocate_like(sw_carrier *c, int64_t size, int mutable_,
                                    sw_dtype dtype, int empty,
                                    sw_carrier **out) {
    if (size > 16)
        return SW_EVALUE;
    mock_state *s = mock_state_new(size, mutable_);
    if (!s)
        return SW_ENOMEM;
    for (int64_t i = 0; i < size; i++)
        s->v[i] = 0.0;
    sw_status st = sw_carrier_new(sw_carrier_get_class(c), s, dtype, out);
    if (st)
        free(s);
    return st;
}

/* Only the required slots. */
static const sw_carrier_class mock_min_class = {
    .version = SW_CARRIER_CLASS_VERSION,
    .name = "MockMin",
    .size = mock_size,
    .get = mock_get,
};

/* Every slot but dtype, new_like and data. */
static const sw_carrier_class mock_full_class = {
    .version = SW_CARRIER_CLASS_VERSION,
    .name = "Mock",
    .size = mock_size,
    .get = mock_get,
    .set = mock_set,
    .is_mutable = mock_is_mutable,
    .release = mock_release,
    .destroy = mock_destroy,
    .allocate_like = mock_allocate_like,
};

static const sw_carrier_class mock_bumping_class = {
    .version = SW_CARRIER_CLASS_VERSION,
    .name = "MockBumping",
    .size = mock_size,
    .get = mock_get,
    .set = mock_set_bumping,
    .is_mutable = mock_is_mutable,
    .destroy = mock_destroy,
};

static const sw_carrier_class mock_dtype_class = {
    .version = SW_CARRIER_CLASS_VERSION,
    .name = "MockDtype",
    .size = mock_size,
    .get = mock_get,
    .dtype = mock_dtype,
    .destroy = mock_destroy,
};

/* A set but no is_mutable: the default intrinsic mutability is 0. */
static const sw_carrier_class mock_set_only_class = {
    .version = SW_CARRIER_CLASS_VERSION,
    .name = "MockSetOnly",
    .size = mock_size,
    .get = mock_get,
    .set = mock_set,
    .destroy = mock_destroy,
};

/* is_mutable says yes but there is no set. */
static const sw_carrier_class mock_no_set_class = {
    .version = SW_CARRIER_CLASS_VERSION,
    .name = "MockNoSet",
    .size = mock_size,
    .get = mock_get,
    .is_mutable = mock_is_mutable,
    .destroy = mock_destroy,
};

static void test_custom_minimal(void) {
    int64_t base = sw_debug_live_allocs();
    static mock_state state; /* no destroy: the test keeps the state */
    state.n = 3;
    state.v[0] = 1.0;
    state.v[1] = 2.0;
    state.v[2] = 3.0;
    sw_carrier *c = NULL;
    sw_status st =
        sw_carrier_new(&mock_min_class, &state, SW_DTYPE_FLOATING, &c);
    if (!expect_ok(st, "sw_carrier_new(minimal class)"))
        return;
    ok(sw_carrier_get_class(c) == &mock_min_class, "sw_carrier_get_class");
    ok(sw_carrier_state(c) == &state, "sw_carrier_state");
    is_int(sw_carrier_dtype(c), SW_DTYPE_FLOATING, "the dtype given to new");
    is_int(sw_carrier_size(c), 3, "the size slot");
    ok(!sw_carrier_is_cpu(c) && !sw_carrier_is_generic(c),
       "neither CPU nor Generic");
    ok(sw_cpu_data(c) == NULL, "sw_cpu_data of a custom carrier is NULL");
    expect_f64_at(c, 2, 3.0, "the get slot");
    sw_value v = sentinel_value();
    st = sw_carrier_get(c, 3, &v);
    expect_fail(st, SW_EINDEX, "Carrier index out of range",
                "the base range check before get");
    ok(value_untouched(&v), "and the out-parameter is untouched");
    ok(!sw_carrier_is_mutable(c), "is_mutable NULL: not mutable");
    st = set_f(c, 0, 9.0);
    expect_fail(st, SW_ERUNTIME, "Carrier is not mutable", "set NULL: a write");
    is_int(sw_carrier_version(c), 0, "the refused write did not bump");
    ok(state.v[0] == 1.0, "and did not change the state");
    st = sw_carrier_bump_version(c);
    expect_ok(st, "bump_version on a minimal carrier");
    is_int(sw_carrier_version(c), 1, "bumped");

    sw_carrier *r = SENT_CARRIER;
    st = sw_carrier_allocate_like(c, 2, 1, (sw_dtype)SW_DTYPE_COUNT, 0, &r);
    expect_fail(st, SW_ENOTIMPL, NULL, "allocate_like NULL");
    ok(r == SENT_CARRIER, "allocate_like NULL leaves its out-parameter");
    sw_value vals[1];
    vals[0] = sw_value_f64(1.0);
    st = sw_carrier_new_like(c, 1, vals, 1, (sw_dtype)SW_DTYPE_COUNT, &r);
    expect_fail(st, SW_ENOTIMPL, NULL,
                "new_like with neither new_like nor allocate_like");
    ok(r == SENT_CARRIER, "and leaves its out-parameter");

    st = sw_carrier_release_storage(c);
    expect_ok(st, "release with no release slot");
    ok(sw_carrier_is_released(c), "released");
    is_int(sw_carrier_size(c), 0, "size 0 after release, size slot or not");
    st = sw_carrier_get(c, 0, &v);
    expect_fail(st, SW_ERUNTIME, "Carrier is released", "get after release");
    sw_carrier_unref(c);
    leak_check(base, "minimal custom carrier");
}

static void test_custom_full(void) {
    int64_t base = sw_debug_live_allocs();
    memset(&mk, 0, sizeof mk);
    mock_state *s = mock_state_new(4, 1);
    sw_carrier *c = NULL;
    sw_status st = sw_carrier_new(&mock_full_class, s, SW_DTYPE_FLOATING, &c);
    if (!expect_ok(st, "sw_carrier_new(full class)")) {
        free(s);
        return;
    }
    ok(sw_carrier_is_mutable(c), "is_mutable slot says yes");
    st = set_f(c, 1, 4.5);
    expect_ok(st, "a write through the set slot");
    ok(s->v[1] == 4.5, "the state holds the value");
    is_int(sw_carrier_version(c), 1, "the base bumped once");
    is_int(mk.sets, 1, "the set slot ran once");
    st = set_f(c, 4, 1.0);
    expect_fail(st, SW_EINDEX, "Carrier index out of range",
                "the base range check before set");
    is_int(mk.sets, 1, "set did not run for a bad index");
    s->fail_set = 1;
    st = set_f(c, 0, 1.0);
    is_int(st, SW_EVALUE, "a failing set slot's status comes through");
    sw_clear_error();
    is_int(sw_carrier_version(c), 1, "a failing set does not bump");
    s->fail_set = 0;
    s->mutable_ = 0;
    ok(!sw_carrier_is_mutable(c), "is_mutable slot says no");
    st = set_f(c, 0, 1.0);
    expect_fail(st, SW_ERUNTIME, "Carrier is not mutable",
                "a write when the slot says immutable");
    is_int(mk.sets, 1, "set did not run");
    s->mutable_ = 1;

    /* The default new_like: allocate_like, then element writes. */
    sw_value vals[3];
    vals[0] = sw_value_f64(7.0);
    memset(&vals[1], 0, sizeof vals[1]);
    vals[1].kind = SW_VALUE_NONE;
    vals[2] = sw_value_i64(3);
    sw_carrier *r = NULL;
    st = sw_carrier_new_like(c, 3, vals, 1, (sw_dtype)SW_DTYPE_COUNT, &r);
    if (expect_ok(st, "the default new_like")) {
        ok(sw_carrier_get_class(r) == &mock_full_class, "of the same class");
        is_int(sw_carrier_size(r), 3, "with one element per value");
        is_int(sw_carrier_dtype(r), SW_DTYPE_FLOATING, "of the own dtype");
        expect_f64_at(r, 0, 7.0, "default new_like element 0");
        expect_f64_at(r, 1, 0.0, "default new_like element 1 (NONE)");
        expect_f64_at(r, 2, 3.0, "default new_like element 2");
        is_int(sw_carrier_version(r), 0, "a new carrier is at version 0");
        ok(sw_carrier_is_mutable(r), "mutable as asked");
        sw_carrier_unref(r);
    }
    r = SENT_CARRIER;
    st = sw_carrier_new_like(c, 3, vals, 0, (sw_dtype)SW_DTYPE_COUNT, &r);
    if (st == SW_OK) {
        ok(!sw_carrier_is_mutable(r), "an immutable default new_like");
        sw_carrier_unref(r);
    } else {
        /* The header leaves this open; the result must still be clean. */
        is_int(st, SW_ENOTIMPL,
               "an immutable default new_like is SW_OK or SW_ENOTIMPL");
        ok(r == SENT_CARRIER, "and a refusal leaves the out-parameter");
        diag("immutable default new_like: %s", sw_errmsg());
        sw_clear_error();
    }
    st = sw_carrier_new_like(c, 20, NULL, 1, (sw_dtype)SW_DTYPE_COUNT, &r);
    is_int(st, SW_EVALUE,
           "a default new_like whose allocate_like fails passes the status");
    ok(r == SENT_CARRIER, "and leaves the out-parameter");
    sw_clear_error();
    st = sw_carrier_allocate_like(c, 2, 1, SW_DTYPE_INT32, 0, &r);
    if (expect_ok(st, "the allocate_like slot")) {
        is_int(sw_carrier_dtype(r), SW_DTYPE_INT32,
               "receives the dtype asked for");
        sw_carrier_unref(r);
    }

    /* release once, destroy once, release before destroy. */
    int releases = mk.releases, destroys = mk.destroys;
    st = sw_carrier_release_storage(c);
    expect_ok(st, "release_storage");
    is_int(mk.releases, releases + 1, "the release slot ran once");
    st = sw_carrier_release_storage(c);
    expect_ok(st, "a second release_storage");
    is_int(mk.releases, releases + 1, "the release slot did not run again");
    is_int(mk.destroys, destroys, "destroy waits for the last reference");
    sw_carrier_unref(c);
    is_int(mk.releases, releases + 1, "destroying does not release again");
    is_int(mk.destroys, destroys + 1, "destroy ran once");

    /* Without release_storage, the last unref releases then destroys. */
    memset(&mk, 0, sizeof mk);
    s = mock_state_new(2, 1);
    st = sw_carrier_new(&mock_full_class, s, SW_DTYPE_FLOATING, &c);
    if (expect_ok(st, "sw_carrier_new(full class) again")) {
        sw_carrier_retain(c);
        sw_carrier_unref(c);
        is_int(mk.releases + mk.destroys, 0,
               "dropping one of two references calls nothing");
        sw_carrier_unref(c);
        is_int(mk.releases, 1, "the last unref releases once");
        is_int(mk.destroys, 1, "and destroys once");
        ok(mk.release_before_destroy, "release runs before destroy");
    } else {
        free(s);
    }
    leak_check(base, "full custom carrier");
}

static void test_custom_slots(void) {
    int64_t base = sw_debug_live_allocs();
    /* A set that bumps by itself: still one bump per write. */
    mock_state *s = mock_state_new(3, 1);
    sw_carrier *c = NULL;
    sw_status st =
        sw_carrier_new(&mock_bumping_class, s, SW_DTYPE_FLOATING, &c);
    if (expect_ok(st, "sw_carrier_new(bumping class)")) {
        for (int k = 0; k < 5; k++) {
            st = set_f(c, k % 3, (double)k);
            expect_ok(st, "a write through a set that bumps by itself");
            is_int(sw_carrier_version(c), k + 1,
                   "exactly one bump per write (write %d)", k);
        }
        sw_carrier_unref(c);
    } else {
        free(s);
    }

    /* The dtype slot wins over the dtype given to new. */
    mk.dtype_calls = 0;
    s = mock_state_new(1, 0);
    st = sw_carrier_new(&mock_dtype_class, s, SW_DTYPE_FLOATING, &c);
    if (expect_ok(st, "sw_carrier_new(dtype class)")) {
        is_int(sw_carrier_dtype(c), SW_DTYPE_INT32, "the dtype slot's answer");
        ok(mk.dtype_calls > 0, "the dtype slot was asked");
        sw_carrier_unref(c);
    } else {
        free(s);
    }

    /* set without is_mutable: not mutable (default 0), set never runs. */
    mk.sets = 0;
    s = mock_state_new(2, 1);
    st = sw_carrier_new(&mock_set_only_class, s, SW_DTYPE_FLOATING, &c);
    if (expect_ok(st, "sw_carrier_new(set, no is_mutable)")) {
        ok(!sw_carrier_is_mutable(c), "is_mutable NULL means not mutable");
        st = set_f(c, 0, 1.0);
        expect_fail(st, SW_ERUNTIME, "Carrier is not mutable",
                    "a write with is_mutable NULL");
        is_int(mk.sets, 0, "the set slot did not run");
        sw_carrier_unref(c);
    } else {
        free(s);
    }

    /* is_mutable yes but no set: writes are refused as not mutable. */
    s = mock_state_new(2, 1);
    st = sw_carrier_new(&mock_no_set_class, s, SW_DTYPE_FLOATING, &c);
    if (expect_ok(st, "sw_carrier_new(is_mutable, no set)")) {
        st = set_f(c, 0, 1.0);
        expect_fail(st, SW_ERUNTIME, "Carrier is not mutable",
                    "a write with set NULL");
        is_int(sw_carrier_version(c), 0, "no bump");
        sw_carrier_unref(c);
    } else {
        free(s);
    }

    /* Bad classes. */
    memset(&mk, 0, sizeof mk);
    s = mock_state_new(1, 1);
    sw_carrier_class bad = mock_full_class;
    bad.version = SW_CARRIER_CLASS_VERSION + 1;
    c = SENT_CARRIER;
    st = sw_carrier_new(&bad, s, SW_DTYPE_FLOATING, &c);
    expect_fail(st, SW_EVALUE, NULL, "a class of the wrong version");
    ok(c == SENT_CARRIER, "leaves its out-parameter alone");
    bad.version = 0;
    st = sw_carrier_new(&bad, s, SW_DTYPE_FLOATING, &c);
    expect_fail(st, SW_EVALUE, NULL, "a class of version 0");
    ok(c == SENT_CARRIER, "leaves its out-parameter alone");
    bad = mock_full_class;
    bad.size = NULL;
    st = sw_carrier_new(&bad, s, SW_DTYPE_FLOATING, &c);
    expect_fail(st, SW_EVALUE, NULL, "a class without size");
    ok(c == SENT_CARRIER, "leaves its out-parameter alone");
    bad = mock_full_class;
    bad.get = NULL;
    st = sw_carrier_new(&bad, s, SW_DTYPE_FLOATING, &c);
    expect_fail(st, SW_EVALUE, NULL, "a class without get");
    ok(c == SENT_CARRIER, "leaves its out-parameter alone");
    st = sw_carrier_new(NULL, s, SW_DTYPE_FLOATING, &c);
    expect_fail(st, SW_EVALUE, NULL, "no class");
    ok(c == SENT_CARRIER, "leaves its out-parameter alone");
    st = sw_carrier_new(&mock_full_class, s, (sw_dtype)SW_DTYPE_COUNT, &c);
    expect_fail(st, SW_EVALUE, NULL, "an unknown dtype");
    ok(c == SENT_CARRIER, "leaves its out-parameter alone");
    is_int(mk.releases + mk.destroys, 0,
           "a refused class calls neither release nor destroy");
    free(s);
    leak_check(base, "custom carrier slots");
}

/* ------------------------------------------------------------ ownership */

typedef enum probe_op { PROBE_BEGIN, PROBE_END, PROBE_LOOK } probe_op;

typedef struct probe {
    sw_carrier *c;
    int64_t token;
    probe_op op;
    sw_status st;
    char msg[256];
    int is_mutable;
    int has_access;
} probe;

static void *probe_main(void *arg) {
    probe *p = arg;
    p->st = SW_OK;
    if (p->op == PROBE_BEGIN)
        p->st = sw_carrier_begin_owner_access(p->c, p->token);
    else if (p->op == PROBE_END)
        p->st = sw_carrier_end_owner_access(p->c, p->token);
    /* The message is per thread: copy it before the thread ends. */
    snprintf(p->msg, sizeof p->msg, "%s", p->st ? sw_errmsg() : "");
    p->is_mutable = sw_carrier_is_mutable(p->c);
    p->has_access = sw_carrier_has_owner_access(p->c);
    return NULL;
}

/* Runs one probe on a new thread and waits for it. */
static bool run_probe(probe *p) {
    pthread_t th;
    if (pthread_create(&th, NULL, probe_main, p) != 0)
        return ok(0, "start a probe thread");
    pthread_join(th, NULL);
    return true;
}

/* A thread that holds owner access until the main thread lets it go. */
typedef struct holder {
    sw_carrier *c;
    int64_t token;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int phase; /* 1: access begun, 2: may end */
    sw_status begin_st, end_st;
} holder;

static void *holder_main(void *arg) {
    holder *h = arg;
    sw_status st = sw_carrier_begin_owner_access(h->c, h->token);
    pthread_mutex_lock(&h->mu);
    h->begin_st = st;
    h->phase = 1;
    pthread_cond_broadcast(&h->cv);
    while (h->phase != 2)
        pthread_cond_wait(&h->cv, &h->mu);
    pthread_mutex_unlock(&h->mu);
    h->end_st =
        st == SW_OK ? sw_carrier_end_owner_access(h->c, h->token) : SW_OK;
    return NULL;
}

static void test_ownership(void) {
    int64_t base = sw_debug_live_allocs();
    sw_carrier *c = NULL, *d = NULL;
    sw_status st = sw_cpu_new(4, SW_DTYPE_FLOAT32, 1, 0, &c);
    if (!expect_ok(st, "sw_cpu_new for ownership"))
        return;
    st = sw_cpu_new(4, SW_DTYPE_FLOAT32, 1, 0, &d);
    if (!expect_ok(st, "a second carrier for ownership")) {
        sw_carrier_unref(c);
        return;
    }
    st = set_f(c, 0, 1.0);
    expect_ok(st, "a write before claiming");

    int64_t tok = SENT_INT64;
    st = sw_carrier_claim(c, &tok);
    if (!expect_ok(st, "sw_carrier_claim")) {
        sw_carrier_unref(c);
        sw_carrier_unref(d);
        return;
    }
    ok(tok > 0, "the token is positive (%lld)", (long long)tok);
    ok(sw_carrier_is_owned(c), "the carrier is owned");
    ok(!sw_carrier_is_mutable(c), "an owned carrier is not mutable");
    ok(!sw_carrier_has_owner_access(c), "no owner access yet");
    int64_t tok2 = SENT_INT64;
    st = sw_carrier_claim(d, &tok2);
    if (expect_ok(st, "claiming a second carrier"))
        ok(tok2 > tok, "tokens increase (%lld > %lld)", (long long)tok2,
           (long long)tok);

    int64_t again = SENT_INT64;
    st = sw_carrier_claim(c, &again);
    expect_fail(st, SW_ERUNTIME, "Carrier is already owned by another carrier",
                "claiming twice");
    is_int(again, SENT_INT64, "a refused claim leaves the token alone");

    /* Owned: writes, release and bumps are refused. */
    st = set_f(c, 0, 2.0);
    expect_fail(st, SW_ERUNTIME, "Carrier is not mutable",
                "a write into an owned carrier");
    st = sw_carrier_release_storage(c);
    expect_fail(st, SW_ERUNTIME,
                "Carrier is owned by another carrier and cannot be modified "
                "directly",
                "release_storage of an owned carrier");
    ok(!sw_carrier_is_released(c), "the owned carrier was not released");
    st = sw_carrier_bump_version(c);
    expect_fail(st, SW_ERUNTIME,
                "Carrier is owned by another carrier and cannot be modified "
                "directly",
                "bump_version of an owned carrier");
    is_int(sw_carrier_version(c), 1, "the owned carrier kept its version");
    expect_f64_at(c, 0, 1.0, "an owned carrier can still be read");

    /* Wrong tokens. */
    st = sw_carrier_begin_owner_access(c, tok + 1000);
    expect_fail(st, SW_ERUNTIME, "Invalid carrier ownership token",
                "begin_owner_access with a wrong token");
    st = sw_carrier_end_owner_access(c, tok + 1000);
    expect_fail(st, SW_ERUNTIME, "Invalid carrier ownership token",
                "end_owner_access with a wrong token");
    st = sw_carrier_relinquish(c, tok + 1000);
    expect_fail(st, SW_ERUNTIME, "Invalid carrier ownership token",
                "relinquish with a wrong token");
    st = sw_carrier_relinquish(c, tok2);
    expect_fail(st, SW_ERUNTIME, "Invalid carrier ownership token",
                "relinquish with another carrier's token");
    ok(sw_carrier_is_owned(c), "still owned after the wrong tokens");

    /* Owner access: re-entrant, and writable inside. */
    st = sw_carrier_begin_owner_access(c, tok);
    expect_ok(st, "begin_owner_access");
    ok(sw_carrier_has_owner_access(c), "owner access is on");
    ok(sw_carrier_is_mutable(c), "mutable inside owner access");
    st = set_f(c, 1, 3.0);
    expect_ok(st, "a write inside owner access");
    is_int(sw_carrier_version(c), 2, "it bumps the version");
    st = sw_carrier_bump_version(c);
    expect_ok(st, "bump_version inside owner access");
    is_int(sw_carrier_version(c), 3, "bumped");
    st = sw_carrier_begin_owner_access(c, tok);
    expect_ok(st, "a nested begin_owner_access");
    st = sw_carrier_relinquish(c, tok);
    expect_fail(st, SW_ERUNTIME,
                "Carrier ownership cannot be relinquished during owner access",
                "relinquish during owner access");
    ok(sw_carrier_is_owned(c), "still owned");

    /* Another thread can neither enter nor end the access. */
    probe p = {.c = c, .token = tok, .op = PROBE_LOOK};
    if (run_probe(&p)) {
        ok(!p.has_access, "another thread has no owner access");
        ok(!p.is_mutable, "another thread sees the carrier not mutable");
    }
    p.op = PROBE_BEGIN;
    if (run_probe(&p)) {
        is_int(p.st, SW_ERUNTIME, "begin on another thread fails");
        is_str(p.msg,
               "Carrier is already being accessed by its owner on another "
               "thread",
               "begin on another thread: message");
    }
    p.op = PROBE_END;
    if (run_probe(&p)) {
        is_int(p.st, SW_ERUNTIME, "end on another thread fails");
        is_str(p.msg,
               "Carrier owner access must end on the thread where it began",
               "end on another thread: message");
    }
    ok(sw_carrier_has_owner_access(c), "the main thread keeps its access");

    st = sw_carrier_end_owner_access(c, tok);
    expect_ok(st, "end of the nested access");
    ok(sw_carrier_has_owner_access(c), "the outer access remains");
    ok(sw_carrier_is_mutable(c), "still mutable");
    st = sw_carrier_end_owner_access(c, tok);
    expect_ok(st, "end of the outer access");
    ok(!sw_carrier_has_owner_access(c), "owner access is off");
    ok(!sw_carrier_is_mutable(c), "not mutable once access ended");
    st = set_f(c, 1, 4.0);
    expect_fail(st, SW_ERUNTIME, "Carrier is not mutable",
                "a write after owner access ended");
    st = sw_carrier_end_owner_access(c, tok);
    expect_fail(st, SW_ERUNTIME,
                "Carrier owner access must end on the thread where it began",
                "ending an access that was not begun");

    /* Access held by another thread; the main thread cannot enter or end. */
    holder h = {.c = c, .token = tok, .phase = 0};
    pthread_mutex_init(&h.mu, NULL);
    pthread_cond_init(&h.cv, NULL);
    pthread_t th;
    if (pthread_create(&th, NULL, holder_main, &h) == 0) {
        pthread_mutex_lock(&h.mu);
        while (h.phase != 1)
            pthread_cond_wait(&h.cv, &h.mu);
        pthread_mutex_unlock(&h.mu);
        is_int(h.begin_st, SW_OK, "another thread begins owner access");
        ok(!sw_carrier_has_owner_access(c),
           "the main thread has no access while another thread has");
        ok(!sw_carrier_is_mutable(c),
           "and sees the carrier not mutable meanwhile");
        st = sw_carrier_begin_owner_access(c, tok);
        expect_fail(st, SW_ERUNTIME,
                    "Carrier is already being accessed by its owner on "
                    "another thread",
                    "begin on the main thread while another holds access");
        st = sw_carrier_end_owner_access(c, tok);
        expect_fail(st, SW_ERUNTIME,
                    "Carrier owner access must end on the thread where it "
                    "began",
                    "end on the main thread of another thread's access");
        st = set_f(c, 2, 5.0);
        expect_fail(st, SW_ERUNTIME, "Carrier is not mutable",
                    "a write from the main thread meanwhile");
        st = sw_carrier_relinquish(c, tok);
        expect_fail(st, SW_ERUNTIME,
                    "Carrier ownership cannot be relinquished during owner "
                    "access",
                    "relinquish while another thread has access");
        pthread_mutex_lock(&h.mu);
        h.phase = 2;
        pthread_cond_broadcast(&h.cv);
        pthread_mutex_unlock(&h.mu);
        pthread_join(th, NULL);
        is_int(h.end_st, SW_OK, "the other thread ends its access");
    } else {
        ok(0, "start the holder thread");
    }
    pthread_mutex_destroy(&h.mu);
    pthread_cond_destroy(&h.cv);

    /* Release inside owner access is the owner's right. */
    st = sw_carrier_begin_owner_access(d, tok2);
    expect_ok(st, "begin access to the second carrier");
    st = sw_carrier_release_storage(d);
    expect_ok(st, "release_storage inside owner access");
    ok(sw_carrier_is_released(d), "the owner released it");
    st = sw_carrier_end_owner_access(d, tok2);
    expect_ok(st, "end access to the second carrier");
    st = sw_carrier_relinquish(d, tok2);
    expect_ok(st, "relinquish the released carrier");

    /* Relinquish: mutable again, and the token is spent. */
    st = sw_carrier_relinquish(c, tok);
    expect_ok(st, "relinquish");
    ok(!sw_carrier_is_owned(c), "no longer owned");
    ok(sw_carrier_is_mutable(c), "mutable again");
    st = set_f(c, 1, 6.0);
    expect_ok(st, "a write after relinquish");
    st = sw_carrier_relinquish(c, tok);
    expect_fail(st, SW_ERUNTIME, "Invalid carrier ownership token",
                "relinquishing twice");
    st = sw_carrier_begin_owner_access(c, tok);
    expect_fail(st, SW_ERUNTIME, "Invalid carrier ownership token",
                "begin access with a spent token");
    int64_t tok3 = SENT_INT64;
    st = sw_carrier_claim(c, &tok3);
    if (expect_ok(st, "claiming again after relinquish")) {
        ok(tok3 > tok2, "a new, larger token");
        st = sw_carrier_relinquish(c, tok3);
        expect_ok(st, "relinquish the new token");
    }
    st = sw_carrier_release_storage(c);
    expect_ok(st, "release after relinquish");

    /* A released carrier cannot be claimed. */
    int64_t tok4 = SENT_INT64;
    st = sw_carrier_claim(c, &tok4);
    expect_fail(st, SW_ERUNTIME, "Carrier is released",
                "claiming a released carrier");
    is_int(tok4, SENT_INT64, "leaves the token alone");
    st = sw_carrier_relinquish(c, 0);
    expect_fail(st, SW_ERUNTIME, "Invalid carrier ownership token",
                "relinquish token 0 of an unowned carrier");
    sw_carrier_unref(c);
    sw_carrier_unref(d);
    leak_check(base, "ownership");
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

static void test_peers(void) {
    int64_t base = sw_debug_live_allocs();
    sw_carrier *c = NULL;
    sw_status st = sw_cpu_new(2, SW_DTYPE_FLOAT32, 1, 0, &c);
    if (!expect_ok(st, "sw_cpu_new for peers"))
        return;
    peer p = {0, 0}, q = {0, 0};
    ok(sw_carrier_get_peer(c) == NULL, "no peer at first");
    is_int(sw_carrier_refcount(c), 1, "sw_carrier_refcount: one reference");
    /* Only the peer's reference: nothing to keep alive. */
    sw_carrier_set_peer(c, &p, &counting_hooks);
    ok(sw_carrier_get_peer(c) == &p, "sw_carrier_get_peer");
    is_int(p.retains + p.releases, 0,
           "setting a peer with one reference calls no hook");
    sw_carrier_retain(c);
    is_int(p.retains, 1, "1 -> 2 retains the peer");
    sw_carrier_retain(c);
    is_int(p.retains, 1, "2 -> 3 does not");
    is_int(sw_carrier_refcount(c), 3,
           "sw_carrier_refcount counts every reference, the peer's too");
    sw_carrier_unref(c);
    is_int(p.releases, 0, "3 -> 2 does not release");
    sw_carrier_unref(c);
    is_int(p.releases, 1, "2 -> 1 releases the peer");
    is_int(p.retains, 1, "and does not retain");
    sw_carrier_retain(c);
    is_int(p.retains, 2, "1 -> 2 again retains again");

    /* With another reference: a new peer is retained at once. */
    sw_carrier_set_peer(c, &q, &counting_hooks);
    ok(sw_carrier_get_peer(c) == &q, "the new peer");
    is_int(q.retains, 1, "a peer set while shared is retained at once");
    is_int(p.releases, 2, "the old peer is released when replaced");
    sw_carrier_set_peer(c, NULL, NULL);
    ok(sw_carrier_get_peer(c) == NULL, "the peer is cleared");
    is_int(q.releases, 1, "clearing a shared carrier's peer releases it");
    sw_carrier_unref(c);
    is_int(q.releases, 1, "no peer: 2 -> 1 calls nothing");
    is_int(p.releases, 2, "no peer: nothing on the old one either");

    /* Clearing with one reference: no release. */
    sw_carrier_set_peer(c, &p, &counting_hooks);
    sw_carrier_set_peer(c, NULL, NULL);
    is_int(p.retains, 2, "set and clear at one reference: no retain");
    is_int(p.releases, 2, "set and clear at one reference: no release");

    /* The last reference going (the peer's) calls no hook. */
    sw_carrier_set_peer(c, &p, &counting_hooks);
    sw_carrier_unref(c);
    is_int(p.retains, 2, "destroying calls no retain");
    is_int(p.releases, 2, "destroying calls no release");
    leak_check(base, "peers");
}

/* ------------------------------------------------------ fault injection */

typedef struct fi_case {
    const char *name;
    sw_status (*run)(sw_carrier **out);
    /* The result's elements are uninitialised (empty=1): compare its
     * description without them. */
    bool uninitialised;
} fi_case;

static struct {
    sw_carrier *cpu;    /* Int32, 3 elements */
    sw_carrier *gen;    /* Generic doubles, 3 elements */
    sw_carrier *custom; /* Generic over the object store */
    sw_carrier *mock;   /* the full mock backend */
    float wrapped[4];
} fin;

static sw_status fi_cpu_new(sw_carrier **out) {
    return sw_cpu_new(5, SW_DTYPE_FLOAT32, 1, 0, out);
}
static sw_status fi_cpu_new_empty(sw_carrier **out) {
    return sw_cpu_new(5, SW_DTYPE_BOOL, 0, 1, out);
}
static sw_status fi_cpu_wrap(sw_carrier **out) {
    return sw_cpu_wrap(fin.wrapped, 4, SW_DTYPE_FLOAT32, 1, out);
}
static sw_status fi_generic_doubles(sw_carrier **out) {
    static const double v[3] = {1.0, 2.0, 3.0};
    return sw_generic_new_doubles(3, v, 1, out);
}
static sw_status fi_generic_custom(sw_carrier **out) {
    static const int64_t v[2] = {4, 5};
    void *store = os_of(2, v);
    if (!store)
        return SW_EVALUE;
    sw_status st = sw_generic_new(obj_ops(), store, SW_DTYPE_ANY, 1, out);
    if (st)
        os_drop(store);
    return st;
}
static sw_status fi_cpu_allocate_like(sw_carrier **out) {
    return sw_carrier_allocate_like(fin.cpu, 4, 1, (sw_dtype)SW_DTYPE_COUNT, 0,
                                    out);
}
static sw_status fi_generic_allocate_like(sw_carrier **out) {
    return sw_carrier_allocate_like(fin.gen, 4, 1, (sw_dtype)SW_DTYPE_COUNT, 0,
                                    out);
}
static sw_status fi_custom_allocate_like(sw_carrier **out) {
    return sw_carrier_allocate_like(fin.custom, 2, 1, (sw_dtype)SW_DTYPE_COUNT,
                                    0, out);
}
static const sw_value *fi_values(void) {
    static sw_value v[3];
    v[0] = sw_value_i64(7);
    memset(&v[1], 0, sizeof v[1]);
    v[1].kind = SW_VALUE_NONE;
    v[2] = sw_value_i64(-2);
    return v;
}
static sw_status fi_cpu_new_like(sw_carrier **out) {
    return sw_carrier_new_like(fin.cpu, 3, fi_values(), 1,
                               (sw_dtype)SW_DTYPE_COUNT, out);
}
static sw_status fi_generic_new_like(sw_carrier **out) {
    return sw_carrier_new_like(fin.gen, 3, fi_values(), 1,
                               (sw_dtype)SW_DTYPE_COUNT, out);
}
static sw_status fi_custom_new_like(sw_carrier **out) {
    return sw_carrier_new_like(fin.custom, 3, fi_values(), 1,
                               (sw_dtype)SW_DTYPE_COUNT, out);
}
static sw_status fi_mock_new_like(sw_carrier **out) {
    return sw_carrier_new_like(fin.mock, 3, fi_values(), 1,
                               (sw_dtype)SW_DTYPE_COUNT, out);
}

static const fi_case fi_cases[] = {
    {"sw_cpu_new", fi_cpu_new, false},
    {"sw_cpu_new (empty, Bool)", fi_cpu_new_empty, true},
    {"sw_cpu_wrap", fi_cpu_wrap, false},
    {"sw_generic_new_doubles", fi_generic_doubles, false},
    {"sw_generic_new (object store)", fi_generic_custom, false},
    {"sw_carrier_allocate_like (CPU)", fi_cpu_allocate_like, false},
    {"sw_carrier_allocate_like (Generic)", fi_generic_allocate_like, false},
    {"sw_carrier_allocate_like (object store)", fi_custom_allocate_like, false},
    {"sw_carrier_new_like (CPU)", fi_cpu_new_like, false},
    {"sw_carrier_new_like (Generic)", fi_generic_new_like, false},
    {"sw_carrier_new_like (object store)", fi_custom_new_like, false},
    {"sw_carrier_new_like (default, custom backend)", fi_mock_new_like, false},
};

/* A printable summary of a carrier: what the walk compares. The elements
 * are left out when values is false (reading uninitialised memory). */
static void fi_describe(sw_carrier *c, bool values, char *buf, size_t cap) {
    int n = snprintf(buf, cap, "%s %s size=%lld mutable=%d version=%lld:",
                     sw_carrier_get_class(c)->name,
                     sw_dtype_name(sw_carrier_dtype(c)),
                     (long long)sw_carrier_size(c), sw_carrier_is_mutable(c),
                     (long long)sw_carrier_version(c));
    for (int64_t i = 0;
         values && i < sw_carrier_size(c) && n > 0 && (size_t)n < cap; i++) {
        sw_value v = sentinel_value();
        sw_status st = sw_carrier_get(c, i, &v);
        if (st != SW_OK)
            n += snprintf(buf + n, cap - (size_t)n, " !%s", S(st));
        else if (v.kind == SW_VALUE_F64)
            n += snprintf(buf + n, cap - (size_t)n, " %.17g", v.as.f);
        else if (v.kind == SW_VALUE_I64)
            n += snprintf(buf + n, cap - (size_t)n, " %lld", (long long)v.as.i);
        else if (v.kind == SW_VALUE_HOST)
            n += snprintf(buf + n, cap - (size_t)n, " obj(%lld)",
                          (long long)((obj *)v.as.host)->value);
        else
            n += snprintf(buf + n, cap - (size_t)n, " none");
        sw_value_clear(&v);
    }
}

/*
 * Walks n = 0, 1, 2, ...: with n allocations allowed, the call must either
 * succeed or fail with SW_ENOMEM, leaving its out-parameter alone and
 * nothing allocated. The first n that succeeds ends the walk; its result
 * must be the one computed without injection.
 */
#define FI_MAX_STEPS 1000
static int64_t fi_walk(const fi_case *fc) {
    static char want[2048], got[2048];
    int64_t base = sw_debug_live_allocs();
    sw_carrier *out = NULL;
    sw_status st = fc->run(&out);
    if (st != SW_OK) {
        ok(0, "fault injection: %s works without injection", fc->name);
        diag("status %s: %s", S(st), sw_errmsg());
        return -1;
    }
    fi_describe(out, !fc->uninitialised, want, sizeof want);
    sw_carrier_unref(out);
    if (sw_debug_live_allocs() != base) {
        ok(0, "fault injection: %s leaks without injection", fc->name);
        return -1;
    }
    int failures = 0;
    for (int64_t n = 0; n < FI_MAX_STEPS; n++) {
        out = SENT_CARRIER;
        sw_clear_error();
        sw_debug_fail_alloc_after(n);
        st = fc->run(&out);
        sw_debug_fail_alloc_after(-1);
        bool good = true;
        if (st == SW_ENOMEM) {
            if (out != SENT_CARRIER) {
                diag("%s, n=%lld: SW_ENOMEM but the out-parameter was "
                     "written",
                     fc->name, (long long)n);
                good = false;
            }
            if (sw_errcode() != SW_ENOMEM) {
                diag("%s, n=%lld: SW_ENOMEM but sw_errcode is %s", fc->name,
                     (long long)n, S(sw_errcode()));
                good = false;
            }
        } else if (st == SW_OK) {
            fi_describe(out, !fc->uninitialised, got, sizeof got);
            if (strcmp(got, want) != 0) {
                diag("%s, n=%lld: result '%s', without injection '%s'",
                     fc->name, (long long)n, got, want);
                good = false;
            }
            sw_carrier_unref(out);
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
    static const int64_t ov[2] = {8, 9};
    void *store = os_of(2, ov);
    mock_state *ms = mock_state_new(2, 1);
    sw_status s1 = sw_cpu_new(3, SW_DTYPE_INT32, 1, 0, &fin.cpu);
    sw_status s2 =
        sw_generic_new_doubles(3, (const double[]){1, 2, 3}, 1, &fin.gen);
    sw_status s3 =
        sw_generic_new(obj_ops(), store, SW_DTYPE_ANY, 1, &fin.custom);
    sw_status s4 =
        sw_carrier_new(&mock_full_class, ms, SW_DTYPE_FLOATING, &fin.mock);
    if (s3)
        os_drop(store);
    if (s4)
        free(ms);
    if (ok(!s1 && !s2 && !s3 && !s4, "fault injection: inputs")) {
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
    if (!s1)
        sw_carrier_unref(fin.cpu);
    if (!s2)
        sw_carrier_unref(fin.gen);
    if (!s3)
        sw_carrier_unref(fin.custom);
    if (!s4)
        sw_carrier_unref(fin.mock);
    check_host_balance("fault injection");
    leak_check(base0, "fault injection inputs");
}

int main(void) {
    int64_t base = sw_debug_live_allocs();
    test_dtypes();
    test_values();
    test_cpu_new();
    test_cpu_wrap();
    test_cpu_float32();
    test_cpu_int32();
    test_cpu_bool();
    test_cpu_bounds_and_mutability();
    test_cpu_release();
    test_cpu_like();
    test_generic_doubles();
    test_generic_custom();
    test_generic_custom_scatter();
    test_custom_minimal();
    test_custom_full();
    test_custom_slots();
    test_ownership();
    test_peers();
    test_fault_injection();
    is_int(sw_debug_live_allocs(), base, "no allocation is live at the end");
    return done_testing();
}
