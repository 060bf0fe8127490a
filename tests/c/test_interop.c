/*
 * Unit tests of interop: DLPack export and move.
 *
 * The contract is include/strideweave/interop.h together with the
 * interop-movement specification and the Python reference
 * (the Python API reference, sections 15 and 16), whose rules
 * and messages the C API keeps. Every rejected call is checked for its
 * exact status and message, for leaving its out-parameter alone and for
 * leaving both carriers as they were; allocation counts prove that nothing
 * leaks, and fault-injection walks make every allocation (and, for moves
 * through files, every file operation) fail in turn.
 *
 * The program points TMPDIR at a private directory, so that it can check
 * that moves and gradients leave no temporary file behind.
 */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "strideweave/strideweave.h"
#include "check.h"
#include "tap.h"

/* ------------------------------------------------------------ helpers */

static max_align_t sentinel_storage[2];
#define SENT_TENSOR ((sw_tensor *)(void *)&sentinel_storage[0])
#define SENT_PTR ((void *)&sentinel_storage[1])

static char tmp_dir[512];

static int count_entries(const char *dir) {
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            n++;
    closedir(d);
    return n;
}

static sw_layout *L(const char *text) {
    sw_layout *l = NULL;
    if (sw_layout_parse(text, &l) != SW_OK)
        bail_out(sw_errmsg());
    return l;
}

/* A CPU carrier of n elements holding base + i (stored without a write,
 * so the version stays 0). */
static sw_carrier *cpu_seq(int64_t n, sw_dtype dtype, double base,
                           int mutable_) {
    sw_carrier *c = NULL;
    if (sw_cpu_new(n, dtype, mutable_, 0, &c) != SW_OK)
        bail_out(sw_errmsg());
    void *d = sw_cpu_data(c);
    for (int64_t i = 0; i < n; ++i) {
        if (dtype == SW_DTYPE_FLOAT32)
            ((float *)d)[i] = (float)(base + (double)i);
        else if (dtype == SW_DTYPE_INT32)
            ((int32_t *)d)[i] = (int32_t)(base + (double)i);
        else
            ((uint8_t *)d)[i] = (uint8_t)(i & 1);
    }
    return c;
}

static sw_carrier *generic_seq(int64_t n, double base) {
    double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    if (!v)
        bail_out("test allocation");
    for (int64_t i = 0; i < n; ++i)
        v[i] = base + (double)i;
    sw_carrier *c = NULL;
    sw_status st = sw_generic_new_doubles(n, v, 1, &c);
    free(v);
    if (st != SW_OK)
        bail_out(sw_errmsg());
    return c;
}

/* A temporary FileBacked carrier of n elements holding base + i; the
 * version is whatever the bulk write left (1 when n > 0). */
static sw_carrier *file_seq(int64_t n, sw_dtype dtype, double base) {
    sw_carrier *c = NULL;
    if (sw_file_new(NULL, dtype, 1, &c) != SW_OK)
        bail_out(sw_errmsg());
    if (n == 0)
        return c;
    if (sw_file_resize(c, n) != SW_OK)
        bail_out(sw_errmsg());
    int64_t item = sw_dtype_itemsize(dtype);
    char *buf = malloc((size_t)(n * item));
    if (!buf)
        bail_out("test allocation");
    for (int64_t i = 0; i < n; ++i) {
        double x = base + (double)i;
        if (dtype == SW_DTYPE_FLOAT32) {
            float f = (float)x;
            memcpy(buf + i * item, &f, sizeof f);
        } else if (dtype == SW_DTYPE_INT32) {
            int32_t k = (int32_t)x;
            memcpy(buf + i * item, &k, sizeof k);
        } else {
            memcpy(buf + i * item, &x, sizeof x);
        }
    }
    sw_status st = sw_file_write(c, 0, n, buf);
    free(buf);
    if (st != SW_OK)
        bail_out(sw_errmsg());
    return c;
}

static sw_tensor *T(sw_carrier *c, int64_t offset, const char *layout) {
    sw_layout *l = L(layout);
    sw_tensor *t = NULL;
    sw_status st = sw_tensor_new(c, offset, l, &t);
    sw_layout_unref(l);
    if (st != SW_OK)
        bail_out(sw_errmsg());
    return t;
}

static double num(sw_value v) {
    double r = v.kind == SW_VALUE_F64   ? v.as.f
               : v.kind == SW_VALUE_I64 ? (double)v.as.i
                                        : NAN;
    sw_value_clear(&v);
    return r;
}

/* Logical element i as a number (NaN if the read fails). */
static double tget(const sw_tensor *t, int64_t i) {
    sw_value v;
    memset(&v, 0, sizeof v);
    if (sw_tensor_get(t, i, &v) != SW_OK) {
        sw_clear_error();
        return NAN;
    }
    return num(v);
}

/* Storage element i as a number (NaN if the read fails). */
static double cget(sw_carrier *c, int64_t i) {
    sw_value v;
    memset(&v, 0, sizeof v);
    if (sw_carrier_get(c, i, &v) != SW_OK) {
        sw_clear_error();
        return NAN;
    }
    return num(v);
}

/* The logical values of t into out (size(t) entries). */
static void values_of(const sw_tensor *t, double *out) {
    for (int64_t i = 0; i < sw_tensor_size(t); ++i)
        out[i] = tget(t, i);
}

/* Whether t's logical values are want[0..size). */
static bool values_are(const sw_tensor *t, const double *want) {
    for (int64_t i = 0; i < sw_tensor_size(t); ++i)
        if (tget(t, i) != want[i]) {
            diag("element %lld: got %g, want %g", (long long)i, tget(t, i),
                 want[i]);
            return false;
        }
    return true;
}

/* =========================================================== DLPack */

/* The address a consumer computes for logical element i of an export. */
static const void *dl_address(const DLTensor *dl, int64_t i) {
    const char *p = (const char *)dl->data + dl->byte_offset;
    int64_t item = dl->dtype.bits / 8;
    for (int32_t k = 0; k < dl->ndim; ++k) {
        int64_t c = i % dl->shape[k];
        i /= dl->shape[k];
        p += c * dl->strides[k] * item;
    }
    return p;
}

typedef struct dl_case {
    const char *layout;
    int64_t offset;
    int64_t carrier_size;
    int32_t ndim;
    int64_t shape[4];
    int64_t strides[4];
} dl_case;

static const dl_case dl_cases[] = {
    {"(2,3):(1,2)", 0, 6, 2, {2, 3}, {1, 2}},
    {"(2,3):(3,1)", 0, 6, 2, {2, 3}, {3, 1}},
    {"(2,(3,4)):(1,(2,6))", 0, 24, 3, {2, 3, 4}, {1, 2, 6}},
    {"(2,3):(1,2)", 2, 10, 2, {2, 3}, {1, 2}},
    {"((2,2),3):((1,4),8)", 1, 24, 3, {2, 2, 3}, {1, 4, 8}},
    {"(3,2):(0,1)", 0, 2, 2, {3, 2}, {0, 1}},
    {"5:2", 3, 12, 1, {5}, {2}},
    {"():()", 4, 5, 0, {0}, {0}},
};

static void check_dl_fields(const DLTensor *dl, const dl_case *k, sw_tensor *t,
                            sw_dtype dtype, const char *name) {
    sw_carrier *c = sw_tensor_carrier(t);
    ok(dl->data == sw_cpu_data(c), "%s: data is the buffer start", name);
    is_int(dl->device.device_type, kDLCPU, "%s: device type CPU", name);
    is_int(dl->device.device_id, 0, "%s: device id 0", name);
    is_int(dl->dtype.code, dtype == SW_DTYPE_FLOAT32 ? kDLFloat : kDLInt,
           "%s: dtype code", name);
    is_int(dl->dtype.bits, 32, "%s: 32 bits", name);
    is_int(dl->dtype.lanes, 1, "%s: one lane", name);
    is_int((int64_t)dl->byte_offset, k->offset * 4,
           "%s: byte_offset is offset * itemsize", name);
    is_int(dl->ndim, k->ndim, "%s: ndim is the leaf count", name);
    if (k->ndim == 0) {
        ok(dl->shape == NULL && dl->strides == NULL,
           "%s: no shape or stride arrays for ndim 0", name);
    } else {
        bool same = dl->shape && dl->strides;
        for (int32_t i = 0; same && i < k->ndim; ++i)
            same =
                dl->shape[i] == k->shape[i] && dl->strides[i] == k->strides[i];
        ok(same, "%s: shape and strides are the leaf modes", name);
    }
    /* Read every logical element as a consumer would. */
    bool agree = true;
    for (int64_t i = 0; i < sw_tensor_size(t) && agree; ++i) {
        const void *p = dl_address(dl, i);
        double x;
        if (dtype == SW_DTYPE_FLOAT32) {
            float f;
            memcpy(&f, p, sizeof f);
            x = f;
        } else {
            int32_t v;
            memcpy(&v, p, sizeof v);
            x = v;
        }
        agree = x == tget(t, i);
        if (!agree)
            diag("element %lld: consumer reads %g, tensor has %g", (long long)i,
                 x, tget(t, i));
    }
    ok(agree, "%s: the consumer reads the tensor's logical values", name);
}

static void test_dlpack_fields(void) {
    int64_t base = sw_debug_live_allocs();
    for (size_t n = 0; n < sizeof dl_cases / sizeof dl_cases[0]; ++n) {
        const dl_case *k = &dl_cases[n];
        for (int dt = 0; dt < 2; ++dt) {
            sw_dtype dtype = dt ? SW_DTYPE_INT32 : SW_DTYPE_FLOAT32;
            sw_carrier *c = cpu_seq(k->carrier_size, dtype, 10, 1);
            sw_tensor *t = T(c, k->offset, k->layout);
            for (int versioned = 0; versioned < 2; ++versioned) {
                char name[128];
                snprintf(name, sizeof name, "%s %s offset %lld %s", k->layout,
                         sw_dtype_name(dtype), (long long)k->offset,
                         versioned ? "versioned" : "legacy");
                int64_t version = sw_tensor_version(t);
                void *out = SENT_PTR;
                sw_status st = sw_tensor_to_dlpack(t, versioned, &out);
                if (!expect_ok(st, name))
                    continue;
                if (versioned) {
                    DLManagedTensorVersioned *m = out;
                    is_int(m->version.major, 1, "%s: version 1.0", name);
                    is_int(m->version.minor, 0, "%s: minor 0", name);
                    is_int((int64_t)m->flags, 0,
                           "%s: flags 0 for a mutable tensor", name);
                    ok(m->deleter != NULL, "%s: a deleter", name);
                    check_dl_fields(&m->dl_tensor, k, t, dtype, name);
                    m->deleter(m);
                } else {
                    DLManagedTensor *m = out;
                    ok(m->deleter != NULL, "%s: a deleter", name);
                    check_dl_fields(&m->dl_tensor, k, t, dtype, name);
                    m->deleter(m);
                }
                is_int(sw_tensor_version(t), version,
                       "%s: the version is unchanged", name);
            }
            sw_tensor_unref(t);
            sw_carrier_unref(c);
        }
    }
    leak_check(base, "DLPack field exports");
}

static void test_dlpack_errors(void) {
    int64_t base = sw_debug_live_allocs();
    void *out = SENT_PTR;
    int32_t type = -7, id = -7;
    sw_status st;

    /* Bool: a device, but no export. */
    sw_carrier *b = cpu_seq(4, SW_DTYPE_BOOL, 0, 1);
    sw_tensor *tb = T(b, 0, "4:1");
    st = sw_tensor_dlpack_device(tb, &type, &id);
    if (expect_ok(st, "the DLPack device of a Bool CPU tensor")) {
        is_int(type, 1, "Bool tensor: device type 1");
        is_int(id, 0, "Bool tensor: device id 0");
    }
    st = sw_tensor_to_dlpack(tb, 0, &out);
    expect_fail(st, SW_EBUFFER,
                "DLPack export supports only Float32 and Int32 tensors",
                "exporting a Bool tensor");
    st = sw_tensor_to_dlpack(tb, 1, &out);
    expect_fail(st, SW_EBUFFER,
                "DLPack export supports only Float32 and Int32 tensors",
                "exporting a Bool tensor versioned");
    ok(out == SENT_PTR, "failed exports leave the out-parameter alone");

    /* Carriers that do not export: the carrier check comes first. */
    sw_carrier *g = generic_seq(4, 0);
    sw_tensor *tg = T(g, 0, "4:1");
    sw_carrier *f = file_seq(4, SW_DTYPE_FLOAT32, 0);
    sw_tensor *tf = T(f, 0, "4:1");
    sw_tensor *nonexp[2] = {tg, tf};
    const char *names[2] = {"Generic (Floating, also a bad dtype)",
                            "FileBacked (Float32)"};
    for (int i = 0; i < 2; ++i) {
        char what[128];
        snprintf(what, sizeof what, "exporting a %s tensor", names[i]);
        st = sw_tensor_to_dlpack(nonexp[i], 0, &out);
        expect_fail(st, SW_EBUFFER, "DLPack is not supported for this carrier",
                    what);
        snprintf(what, sizeof what, "the DLPack device of a %s tensor",
                 names[i]);
        st = sw_tensor_dlpack_device(nonexp[i], &type, &id);
        expect_fail(st, SW_EBUFFER, "DLPack is not supported for this carrier",
                    what);
    }
    ok(out == SENT_PTR && type == 1 && id == 0,
       "and they leave the out-parameters alone");

    /* A released carrier cannot export: its pointer is null. */
    sw_carrier *c = cpu_seq(4, SW_DTYPE_FLOAT32, 0, 1);
    sw_tensor *t = T(c, 0, "4:1");
    expect_ok(sw_carrier_release_storage(c), "releasing a CPU carrier");
    st = sw_tensor_to_dlpack(t, 1, &out);
    expect_fail(st, SW_EBUFFER, "DLPack data pointer must be non-null",
                "exporting a released CPU tensor");
    st = sw_tensor_dlpack_device(t, &type, &id);
    expect_fail(st, SW_EBUFFER, "DLPack data pointer must be non-null",
                "the DLPack device of a released CPU tensor");
    st = sw_tensor_to_dlpack(NULL, 0, &out);
    expect_fail(st, SW_ETYPE, "tensor must be a Tensor", "exporting NULL");
    ok(out == SENT_PTR, "the out-parameter is still untouched");

    sw_tensor_unref(t);
    sw_carrier_unref(c);
    sw_tensor_unref(tb);
    sw_carrier_unref(b);
    sw_tensor_unref(tg);
    sw_carrier_unref(g);
    sw_tensor_unref(tf);
    sw_carrier_unref(f);
    leak_check(base, "DLPack errors");
}

/* The advisory read-only flag follows sw_tensor_is_mutable at export. */
static void test_dlpack_read_only(void) {
    int64_t base = sw_debug_live_allocs();
    sw_carrier *imm = cpu_seq(4, SW_DTYPE_FLOAT32, 0, 0);
    sw_tensor *ti = T(imm, 0, "4:1");
    void *out = NULL;
    sw_status st = sw_tensor_to_dlpack(ti, 1, &out);
    if (expect_ok(st, "a versioned export of an immutable tensor")) {
        DLManagedTensorVersioned *m = out;
        is_int((int64_t)m->flags, (int64_t)DLPACK_FLAG_BITMASK_READ_ONLY,
               "the read-only flag is set");
        m->deleter(m);
    }
    st = sw_tensor_to_dlpack(ti, 0, &out);
    if (expect_ok(st, "a legacy export of an immutable tensor (no flags to "
                      "carry the signal)")) {
        DLManagedTensor *m = out;
        m->deleter(m);
    }

    sw_carrier *c = cpu_seq(4, SW_DTYPE_FLOAT32, 0, 1);
    sw_tensor *t = T(c, 0, "4:1");
    int64_t token = 0;
    expect_ok(sw_carrier_claim(c, &token), "a composite claims the carrier");
    st = sw_tensor_to_dlpack(t, 1, &out);
    if (expect_ok(st, "a versioned export of an owned tensor")) {
        DLManagedTensorVersioned *m = out;
        is_int((int64_t)m->flags, (int64_t)DLPACK_FLAG_BITMASK_READ_ONLY,
               "an owned carrier exports read-only");
        m->deleter(m);
    }
    expect_ok(sw_carrier_begin_owner_access(c, token), "owner access");
    st = sw_tensor_to_dlpack(t, 1, &out);
    if (expect_ok(st, "a versioned export under owner access")) {
        DLManagedTensorVersioned *m = out;
        is_int((int64_t)m->flags, 0, "is writable for the owner");
        m->deleter(m);
    }
    expect_ok(sw_carrier_end_owner_access(c, token), "end owner access");
    expect_ok(sw_carrier_relinquish(c, token), "relinquish");

    sw_tensor_unref(t);
    sw_carrier_unref(c);
    sw_tensor_unref(ti);
    sw_carrier_unref(imm);
    leak_check(base, "read-only flags");
}

/* The full __dlpack__ argument order. */
static void test_dlpack_request(void) {
    int64_t base = sw_debug_live_allocs();
    sw_carrier *c = cpu_seq(6, SW_DTYPE_FLOAT32, 0, 1);
    sw_tensor *t = T(c, 0, "(2,3):(1,2)");
    sw_carrier *g = generic_seq(6, 0);
    sw_tensor *tg = T(g, 0, "(2,3):(1,2)");
    sw_carrier *b = cpu_seq(6, SW_DTYPE_BOOL, 0, 1);
    sw_tensor *tb = T(b, 0, "(2,3):(1,2)");
    sw_dlpack_request r;
    void *out = SENT_PTR;
    int versioned = -1;
    sw_status st;

    memset(&r, 0, sizeof r);
    r.copy = 1;
    st = sw_tensor_dlpack_export(tg, &r, &versioned, &out);
    expect_fail(st, SW_EBUFFER, "DLPack copy exports are not supported",
                "copy=True (before the carrier check)");

    memset(&r, 0, sizeof r);
    r.dl_device = SW_DLPACK_ARG_NOT_SEQUENCE;
    st = sw_tensor_dlpack_export(tg, &r, &versioned, &out);
    expect_fail(st, SW_EBUFFER, "DLPack is not supported for this carrier",
                "the carrier check before dl_device");
    st = sw_tensor_dlpack_export(tb, &r, &versioned, &out);
    expect_fail(st, SW_ETYPE, "DLPack dl_device must be a tuple or list",
                "a dl_device that is not a sequence (before the dtype)");
    r.dl_device = SW_DLPACK_ARG_WRONG_LENGTH;
    st = sw_tensor_dlpack_export(t, &r, &versioned, &out);
    expect_fail(st, SW_EVALUE, "DLPack dl_device must have two elements",
                "a dl_device of three elements");
    r.dl_device = SW_DLPACK_ARG_PAIR;
    r.device[0] = 2;
    r.device[1] = 0;
    st = sw_tensor_dlpack_export(t, &r, &versioned, &out);
    expect_fail(st, SW_EBUFFER,
                "DLPack cross-device exports are not supported for this "
                "tensor",
                "dl_device (2, 0)");
    r.device[0] = 1;
    r.device[1] = 1;
    st = sw_tensor_dlpack_export(t, &r, &versioned, &out);
    expect_fail(st, SW_EBUFFER,
                "DLPack cross-device exports are not supported for this "
                "tensor",
                "dl_device (1, 1)");

    memset(&r, 0, sizeof r);
    r.max_version = SW_DLPACK_ARG_NOT_SEQUENCE;
    st = sw_tensor_dlpack_export(tb, &r, &versioned, &out);
    expect_fail(st, SW_EBUFFER,
                "DLPack export supports only Float32 and Int32 tensors",
                "the dtype check before max_version");
    st = sw_tensor_dlpack_export(t, &r, &versioned, &out);
    expect_fail(st, SW_ETYPE, "DLPack max_version must be a tuple or list",
                "a max_version that is not a sequence");
    r.max_version = SW_DLPACK_ARG_WRONG_LENGTH;
    st = sw_tensor_dlpack_export(t, &r, &versioned, &out);
    expect_fail(st, SW_EVALUE, "DLPack max_version must have two elements",
                "a max_version of one element");
    r.max_version = SW_DLPACK_ARG_PAIR;
    r.version[0] = 1;
    r.version[1] = -1;
    st = sw_tensor_dlpack_export(t, &r, &versioned, &out);
    expect_fail(st, SW_EVALUE,
                "DLPack max_version elements must be non-negative",
                "max_version (1, -1)");
    r.version[0] = -1;
    r.version[1] = 0;
    st = sw_tensor_dlpack_export(t, &r, &versioned, &out);
    expect_fail(st, SW_EVALUE,
                "DLPack max_version elements must be non-negative",
                "max_version (-1, 0)");
    ok(out == SENT_PTR && versioned == -1,
       "failed requests leave the out-parameters alone");

    /* Which struct comes out. */
    struct {
        sw_dlpack_arg arg;
        int64_t major, minor;
        int want;
    } picks[] = {{SW_DLPACK_ARG_NONE, 0, 0, 0},
                 {SW_DLPACK_ARG_PAIR, 0, 9, 0},
                 {SW_DLPACK_ARG_PAIR, 1, 0, 1},
                 {SW_DLPACK_ARG_PAIR, 1, 3, 1},
                 {SW_DLPACK_ARG_PAIR, 7, 2, 1}};
    for (size_t i = 0; i < sizeof picks / sizeof picks[0]; ++i) {
        memset(&r, 0, sizeof r);
        r.max_version = picks[i].arg;
        r.version[0] = picks[i].major;
        r.version[1] = picks[i].minor;
        /* The tensor's own device is accepted, and so is a false copy. */
        r.dl_device = SW_DLPACK_ARG_PAIR;
        r.device[0] = 1;
        r.device[1] = 0;
        char name[96];
        snprintf(name, sizeof name, "max_version %s(%lld, %lld)",
                 picks[i].arg == SW_DLPACK_ARG_NONE ? "None " : "",
                 (long long)picks[i].major, (long long)picks[i].minor);
        out = NULL;
        versioned = -1;
        st = sw_tensor_dlpack_export(t, &r, &versioned, &out);
        if (!expect_ok(st, name))
            continue;
        is_int(versioned, picks[i].want, "%s: %s", name,
               picks[i].want ? "versioned" : "legacy");
        if (versioned) {
            DLManagedTensorVersioned *m = out;
            ok(m->version.major == 1 && m->version.minor == 0,
               "%s: capped at version 1.0", name);
            ok(m->dl_tensor.data == sw_cpu_data(c), "%s: aliases the storage",
               name);
            m->deleter(m);
        } else {
            DLManagedTensor *m = out;
            ok(m->dl_tensor.data == sw_cpu_data(c), "%s: aliases the storage",
               name);
            m->deleter(m);
        }
    }
    st = sw_tensor_dlpack_export(t, NULL, NULL, &out);
    if (expect_ok(st, "a request of NULL (all defaults)")) {
        DLManagedTensor *m = out;
        m->deleter(m);
    }

    sw_tensor_unref(t);
    sw_carrier_unref(c);
    sw_tensor_unref(tg);
    sw_carrier_unref(g);
    sw_tensor_unref(tb);
    sw_carrier_unref(b);
    leak_check(base, "DLPack requests");
}

/*
 * A custom backend that opts into DLPack through the dlpack_info slot: it
 * reports its own buffer on a made-up device, or no storage, or a
 * failure, as its mode says.
 */
typedef enum { DEV_OK = 0, DEV_NULL = 1, DEV_FAIL = 2 } dev_mode;
typedef struct dev_store {
    float v[6];
    dev_mode mode;
} dev_store;

static int64_t dev_size(sw_carrier *c) {
    return 6;
}
static sw_status dev_get(sw_carrier *c, int64_t i, sw_value *out) {
    *out = sw_value_f64(((dev_store *)sw_carrier_state(c))->v[i]);
    return SW_OK;
}
static int dev_is_mutable(sw_carrier *c) {
    return 1;
}
static void dev_destroy(sw_carrier *c) {
    free(sw_carrier_state(c));
}
static sw_status dev_dlpack_info(sw_carrier *c, void **pointer,
                                 int32_t *device_type, int32_t *device_id) {
    dev_store *s = sw_carrier_state(c);
    if (s->mode == DEV_FAIL)
        return sw_set_error(SW_EVALUE, "the device is unplugged");
    *pointer = s->mode == DEV_NULL ? NULL : s->v;
    *device_type = kDLCUDA;
    *device_id = 3;
    return SW_OK;
}
static const sw_carrier_class dev_class = {
    .version = SW_CARRIER_CLASS_VERSION,
    .name = "Device",
    .size = dev_size,
    .get = dev_get,
    .is_mutable = dev_is_mutable,
    .destroy = dev_destroy,
    .dlpack_info = dev_dlpack_info,
};

/* A class written against version 1 of the vtable: it ends before the
 * dlpack_info slot, so the slot must never be read. The struct here has
 * the slot set to show that it is ignored. */
static const sw_carrier_class dev_class_v1 = {
    .version = 1,
    .name = "DeviceV1",
    .size = dev_size,
    .get = dev_get,
    .is_mutable = dev_is_mutable,
    .destroy = dev_destroy,
    .dlpack_info = dev_dlpack_info,
};

static sw_carrier *dev_new(const sw_carrier_class *cls, dev_mode mode) {
    dev_store *s = calloc(1, sizeof *s);
    if (!s)
        bail_out("calloc");
    for (int i = 0; i < 6; ++i)
        s->v[i] = (float)(i + 1);
    s->mode = mode;
    sw_carrier *c = NULL;
    if (sw_carrier_new(cls, s, SW_DTYPE_FLOAT32, &c) != SW_OK) {
        free(s);
        bail_out("sw_carrier_new");
    }
    return c;
}

static void test_dlpack_custom_carrier(void) {
    int64_t base = sw_debug_live_allocs();
    void *out = SENT_PTR;
    int32_t type = -7, id = -7;
    int versioned = -1;
    sw_status st;

    /* The slot's device is used verbatim, for the device and the export. */
    sw_carrier *c = dev_new(&dev_class, DEV_OK);
    sw_tensor *t = T(c, 1, "(2,2):(1,2)");
    st = sw_carrier_dlpack_info(c, &out, &type, &id);
    if (expect_ok(st, "sw_carrier_dlpack_info on a custom carrier"))
        ok(out == ((dev_store *)sw_carrier_state(c))->v && type == kDLCUDA &&
               id == 3,
           "it reports the slot's pointer and device");
    st = sw_tensor_dlpack_device(t, &type, &id);
    if (expect_ok(st, "the DLPack device of a custom carrier"))
        ok(type == kDLCUDA && id == 3, "is the one the slot reports");
    sw_dlpack_request r;
    memset(&r, 0, sizeof r);
    r.dl_device = SW_DLPACK_ARG_PAIR;
    r.device[0] = kDLCUDA;
    r.device[1] = 3;
    r.max_version = SW_DLPACK_ARG_PAIR;
    r.version[0] = 1;
    st = sw_tensor_dlpack_export(t, &r, &versioned, &out);
    if (expect_ok(st, "an export asking for the carrier's own device")) {
        DLManagedTensorVersioned *m = out;
        ok(versioned == 1, "is versioned");
        ok(m->dl_tensor.device.device_type == kDLCUDA &&
               m->dl_tensor.device.device_id == 3,
           "the managed tensor carries the slot's device");
        ok(m->dl_tensor.data == ((dev_store *)sw_carrier_state(c))->v,
           "and its pointer");
        is_int((int64_t)m->dl_tensor.byte_offset, 4, "byte_offset is 1 * 4");
        is_int(m->dl_tensor.strides[1], 2, "the strides are the layout's");
        m->deleter(m);
    }
    r.device[0] = kDLCPU;
    r.device[1] = 0;
    st = sw_tensor_dlpack_export(t, &r, &versioned, &out);
    expect_fail(st, SW_EBUFFER,
                "DLPack cross-device exports are not supported for this "
                "tensor",
                "a CPU dl_device for a carrier on another device");
    sw_tensor_unref(t);
    sw_carrier_unref(c);

    /* No storage for a tensor with elements (every layout has one). */
    c = dev_new(&dev_class, DEV_NULL);
    t = T(c, 0, "4:1");
    st = sw_tensor_dlpack_device(t, &type, &id);
    expect_fail(st, SW_EBUFFER, "DLPack data pointer must be non-null",
                "the device of a custom carrier without storage");
    st = sw_tensor_to_dlpack(t, 0, &out);
    expect_fail(st, SW_EBUFFER, "DLPack data pointer must be non-null",
                "exporting a custom carrier without storage");
    sw_tensor_unref(t);
    sw_carrier_unref(c);

    /* The slot's own failure comes through unchanged. */
    c = dev_new(&dev_class, DEV_FAIL);
    t = T(c, 0, "4:1");
    out = SENT_PTR;
    st = sw_tensor_to_dlpack(t, 1, &out);
    expect_fail(st, SW_EVALUE, "the device is unplugged",
                "exporting a custom carrier whose slot fails");
    st = sw_tensor_dlpack_device(t, &type, &id);
    expect_fail(st, SW_EVALUE, "the device is unplugged",
                "the device of a custom carrier whose slot fails");
    ok(out == SENT_PTR, "the failed export wrote nothing");
    sw_tensor_unref(t);
    sw_carrier_unref(c);

    /* A version-1 class is accepted, and has no DLPack support. */
    c = dev_new(&dev_class_v1, DEV_OK);
    t = T(c, 0, "4:1");
    st = sw_carrier_dlpack_info(c, &out, &type, &id);
    expect_fail(st, SW_EBUFFER, "DLPack is not supported for this carrier",
                "sw_carrier_dlpack_info on a version-1 class");
    st = sw_tensor_to_dlpack(t, 0, &out);
    expect_fail(st, SW_EBUFFER, "DLPack is not supported for this carrier",
                "exporting a carrier of a version-1 class");
    ok(out == SENT_PTR, "nothing was exported");
    sw_tensor_unref(t);
    sw_carrier_unref(c);

    /* Versions past the current one are refused. */
    sw_carrier_class future = dev_class;
    future.version = SW_CARRIER_CLASS_VERSION + 1;
    dev_store *s = calloc(1, sizeof *s);
    c = NULL;
    st = sw_carrier_new(&future, s, SW_DTYPE_FLOAT32, &c);
    expect_fail(st, SW_EVALUE,
                "carrier class is incomplete or of an unsupported version",
                "a carrier class of a future version");
    ok(c == NULL, "no carrier was made");
    free(s);
    future.version = 0;
    s = calloc(1, sizeof *s);
    st = sw_carrier_new(&future, s, SW_DTYPE_FLOAT32, &c);
    expect_fail(st, SW_EVALUE,
                "carrier class is incomplete or of an unsupported version",
                "a carrier class of version 0");
    free(s);
    leak_check(base, "DLPack through custom carriers");
}

/* A binding's route answers instead of the class's slot. */
static sw_status route_info(sw_carrier *c, void *ctx, void **pointer,
                            int32_t *device_type, int32_t *device_id) {
    int *mode = ctx;
    if (*mode)
        return sw_set_error(SW_EBUFFER, "this subclass does not export");
    *pointer = sw_cpu_data(c);
    *device_type = kDLCPU;
    *device_id = 7;
    return SW_OK;
}

static void test_dlpack_route(void) {
    int64_t base = sw_debug_live_allocs();
    sw_carrier *c = cpu_seq(4, SW_DTYPE_FLOAT32, 1, 1);
    sw_tensor *t = T(c, 0, "4:1");
    int mode = 0;
    int32_t type = -1, id = -1;
    void *out = NULL;
    sw_carrier_set_dlpack_route(c, route_info, &mode);
    sw_status st = sw_tensor_dlpack_device(t, &type, &id);
    if (expect_ok(st, "the device through a route"))
        ok(type == kDLCPU && id == 7, "is the route's");
    st = sw_tensor_to_dlpack(t, 0, &out);
    if (expect_ok(st, "an export through a route")) {
        DLManagedTensor *m = out;
        ok(m->dl_tensor.device.device_id == 7 &&
               m->dl_tensor.data == sw_cpu_data(c),
           "carries the route's device and pointer");
        m->deleter(m);
    }
    mode = 1;
    st = sw_tensor_to_dlpack(t, 1, &out);
    expect_fail(st, SW_EBUFFER, "this subclass does not export",
                "a route that refuses");
    sw_carrier_set_dlpack_route(c, NULL, &mode);
    st = sw_tensor_dlpack_device(t, &type, &id);
    if (expect_ok(st, "the device after the route is removed"))
        ok(type == kDLCPU && id == 0, "is the CPU slot's again");
    /* A route makes a carrier without a slot export. */
    sw_carrier *g = generic_seq(4, 0);
    mode = 0;
    sw_carrier_set_dlpack_route(g, route_info, &mode);
    st = sw_carrier_dlpack_info(g, &out, &type, &id);
    if (expect_ok(st, "a routed Generic carrier"))
        ok(out == NULL && id == 7, "answers through the route");
    sw_tensor_unref(t);
    sw_carrier_unref(c);
    sw_carrier_unref(g);
    leak_check(base, "DLPack routes");
}

/* The request's owner: kept by the export, released once by its deleter. */
static atomic_int owner_releases;
static void *owner_seen;
static void count_owner(void *owner) {
    owner_seen = owner;
    atomic_fetch_add(&owner_releases, 1);
}

static void test_dlpack_owner(void) {
    int64_t base = sw_debug_live_allocs();
    sw_carrier *c = cpu_seq(6, SW_DTYPE_FLOAT32, 1, 1);
    sw_tensor *t = T(c, 0, "(2,3):(1,2)");
    int token;
    sw_dlpack_request r;
    memset(&r, 0, sizeof r);
    r.owner = &token;
    r.owner_release = count_owner;
    atomic_store(&owner_releases, 0);
    void *out = NULL;
    int versioned = -1;
    for (int v = 0; v < 2; ++v) {
        r.max_version = v ? SW_DLPACK_ARG_PAIR : SW_DLPACK_ARG_NONE;
        r.version[0] = 1;
        owner_seen = NULL;
        sw_status st = sw_tensor_dlpack_export(t, &r, &versioned, &out);
        if (!expect_ok(st, "an export with an owner"))
            continue;
        is_int(atomic_load(&owner_releases), v, "the export keeps its owner");
        if (versioned) {
            DLManagedTensorVersioned *m = out;
            m->deleter(m);
        } else {
            DLManagedTensor *m = out;
            m->deleter(m);
        }
        is_int(atomic_load(&owner_releases), v + 1,
               "its deleter releases the owner once (%s)",
               v ? "versioned" : "legacy");
        ok(owner_seen == &token, "and hands over the owner it was given");
    }
    /* A failed export leaves the owner to the caller. */
    r.copy = 1;
    sw_status st = sw_tensor_dlpack_export(t, &r, &versioned, &out);
    expect_fail(st, SW_EBUFFER, "DLPack copy exports are not supported",
                "a refused export with an owner");
    is_int(atomic_load(&owner_releases), 2, "does not release the owner");
    r.copy = 0;
    sw_debug_fail_alloc_after(0);
    st = sw_tensor_dlpack_export(t, &r, &versioned, &out);
    sw_debug_fail_alloc_after(-1);
    expect_fail(st, SW_ENOMEM, NULL, "an export with an owner out of memory");
    is_int(atomic_load(&owner_releases), 2,
           "an export that ran out of memory does not release the owner");
    sw_tensor_unref(t);
    sw_carrier_unref(c);
    leak_check(base, "exports with owners");
}

/* Peer hooks that count, to watch the carrier reference of an export. */
static atomic_int peer_retains, peer_releases;
static void peer_retain(void *p) {
    atomic_fetch_add(&peer_retains, 1);
}
static void peer_release(void *p) {
    atomic_fetch_add(&peer_releases, 1);
}
static const sw_peer_hooks counting_hooks = {peer_retain, peer_release};

static void *run_deleter(void *m) {
    DLManagedTensorVersioned *v = m;
    v->deleter(v);
    return NULL;
}

static void test_dlpack_lifetime(void) {
    int64_t base = sw_debug_live_allocs();
    sw_carrier *c = cpu_seq(6, SW_DTYPE_FLOAT32, 1, 1);
    sw_tensor *t = T(c, 0, "(2,3):(1,2)");
    /* The tensor holds the only other reference: the export's makes the
     * count rise from 1 to 2, which the peer hooks see. */
    sw_carrier_unref(c);
    int peer;
    sw_carrier_set_peer(c, &peer, &counting_hooks);
    atomic_store(&peer_retains, 0);
    atomic_store(&peer_releases, 0);
    void *out = NULL;
    sw_status st = sw_tensor_to_dlpack(t, 1, &out);
    if (!expect_ok(st, "an export for the lifetime checks"))
        return;
    DLManagedTensorVersioned *m = out;
    is_int(atomic_load(&peer_retains), 1, "the export retains the carrier");
    is_int(atomic_load(&peer_releases), 0, "and has not released it");
    pthread_t th;
    if (pthread_create(&th, NULL, run_deleter, m) != 0)
        bail_out("pthread_create");
    pthread_join(th, NULL);
    is_int(atomic_load(&peer_releases), 1,
           "the deleter, run on another thread, releases the carrier once");
    sw_carrier_set_peer(c, NULL, NULL);
    sw_tensor_unref(t);
    leak_check(base, "an export whose deleter ran on another thread");

    /* The export outlives every other reference. */
    c = cpu_seq(6, SW_DTYPE_FLOAT32, 1, 1);
    t = T(c, 0, "(2,3):(1,2)");
    st = sw_tensor_to_dlpack(t, 0, &out);
    if (expect_ok(st, "an export of a temporary")) {
        sw_tensor_unref(t);
        sw_carrier_unref(c);
        DLManagedTensor *lm = out;
        const float *d = lm->dl_tensor.data;
        ok(d[0] == 1.0f && d[5] == 6.0f,
           "the consumer still reads the values after the producer is gone");
        ok(sw_debug_live_allocs() > base, "the storage is still allocated");
        lm->deleter(lm);
    }
    leak_check(base, "an export that outlived its tensor");

    /* Released or moved storage is not kept alive by an export. */
    c = cpu_seq(6, SW_DTYPE_FLOAT32, 1, 1);
    t = T(c, 0, "(2,3):(1,2)");
    st = sw_tensor_to_dlpack(t, 1, &out);
    if (expect_ok(st, "an export, then a release")) {
        expect_ok(sw_carrier_release_storage(c),
                  "releasing the carrier with an export outstanding");
        ok(sw_cpu_data(c) == NULL, "the carrier no longer holds the storage");
        m = out;
        m->deleter(m);
    }
    sw_tensor_unref(t);
    sw_carrier_unref(c);
    c = cpu_seq(6, SW_DTYPE_FLOAT32, 1, 1);
    t = T(c, 0, "(2,3):(1,2)");
    st = sw_tensor_to_dlpack(t, 1, &out);
    if (expect_ok(st, "an export, then a move")) {
        sw_carrier *dst = NULL;
        sw_tensor *moved = NULL;
        expect_ok(sw_cpu_new(6, SW_DTYPE_FLOAT32, 1, 0, &dst), "destination");
        st = sw_move(t, dst, &moved);
        expect_ok(st, "moving the tensor with an export outstanding");
        ok(sw_carrier_is_released(c), "the exported carrier is released");
        m = out;
        m->deleter(m);
        sw_tensor_unref(moved);
        sw_carrier_unref(dst);
    }
    sw_tensor_unref(t);
    sw_carrier_unref(c);
    leak_check(base, "exports of released storage");
}

/* Export changes neither versions nor graphs; foreign writes go unseen. */
static void test_dlpack_autograd(void) {
    int64_t base = sw_debug_live_allocs();
    sw_carrier *c = cpu_seq(3, SW_DTYPE_FLOAT32, 1, 1);
    sw_tensor *x = T(c, 0, "3:1");
    sw_tensor *y = NULL;
    sw_status st = sw_elementwise_mul(x, x, &y);
    if (!expect_ok(st, "y = x * x"))
        return;
    sw_op *ctx = sw_tensor_autograd_ctx(y);
    int64_t xv = sw_tensor_version(x), yv = sw_tensor_version(y);
    void *out = NULL;
    st = sw_tensor_to_dlpack(y, 1, &out);
    if (expect_ok(st, "exporting the non-leaf y")) {
        DLManagedTensorVersioned *m = out;
        m->deleter(m);
    }
    ok(sw_tensor_autograd_ctx(y) == ctx, "y's autograd context is unchanged");
    ok(sw_tensor_grad(y) == NULL && sw_tensor_grad(x) == NULL,
       "no gradient appeared");
    is_int(sw_tensor_version(y), yv, "y's version is unchanged");

    st = sw_tensor_to_dlpack(x, 1, &out);
    if (expect_ok(st, "exporting the saved input x")) {
        DLManagedTensorVersioned *m = out;
        float *d = m->dl_tensor.data;
        d[1] = 5.0f; /* a consumer's write */
        is_int(sw_tensor_version(x), xv,
               "a foreign write does not change the version");
        m->deleter(m);
    }
    sw_carrier *gc = cpu_seq(3, SW_DTYPE_FLOAT32, 1, 1);
    sw_tensor *g = T(gc, 0, "3:1");
    st = sw_tensor_backward(y, g);
    if (expect_ok(st, "backward after the foreign write (no version error)")) {
        double want[3] = {2 * 1.0 * 1, 2 * 2.0 * 5, 2 * 3.0 * 3};
        ok(sw_tensor_grad(x) && values_are(sw_tensor_grad(x), want),
           "the gradient reflects the modified storage");
    }
    /* A gradient is exportable by the same rules. */
    if (sw_tensor_grad(x)) {
        st = sw_tensor_to_dlpack(sw_tensor_grad(x), 0, &out);
        if (expect_ok(st, "exporting a gradient")) {
            DLManagedTensor *m = out;
            m->deleter(m);
        }
    }
    sw_tensor_unref(g);
    sw_carrier_unref(gc);
    sw_tensor_unref(y);
    sw_tensor_unref(x);
    sw_carrier_unref(c);
    leak_check(base, "DLPack and autograd");
}

static void test_dlpack_faults(void) {
    sw_carrier *c = cpu_seq(24, SW_DTYPE_FLOAT32, 0, 1);
    sw_tensor *t = T(c, 0, "(2,(3,4)):(1,(2,6))");
    int64_t base = sw_debug_live_allocs();
    for (int versioned = 0; versioned < 2; ++versioned) {
        void *out = SENT_PTR;
        sw_debug_fail_alloc_after(0);
        sw_status st = sw_tensor_to_dlpack(t, versioned, &out);
        sw_debug_fail_alloc_after(-1);
        expect_fail(st, SW_ENOMEM, "out of memory",
                    versioned ? "a versioned export without memory"
                              : "a legacy export without memory");
        ok(out == SENT_PTR, "leaves the out-parameter alone");
        leak_check(base, "a failed export");
        sw_debug_fail_alloc_after(1);
        st = sw_tensor_to_dlpack(t, versioned, &out);
        sw_debug_fail_alloc_after(-1);
        if (expect_ok(st, "an export needs one allocation")) {
            if (versioned)
                ((DLManagedTensorVersioned *)out)
                    ->deleter((DLManagedTensorVersioned *)out);
            else
                ((DLManagedTensor *)out)->deleter((DLManagedTensor *)out);
        }
    }
    leak_check(base, "DLPack fault injection");
    sw_tensor_unref(t);
    sw_carrier_unref(c);
}

/* ============================================================= move */

/* Moves t into dst and checks the published result. */
static sw_tensor *move_ok(sw_tensor *t, sw_carrier *dst, const char *name) {
    double before[64];
    values_of(t, before);
    sw_carrier *src = sw_tensor_carrier(t);
    sw_carrier_retain(src);
    sw_tensor *r = SENT_TENSOR;
    sw_status st = sw_move(t, dst, &r);
    if (!expect_ok(st, name)) {
        sw_carrier_unref(src);
        return NULL;
    }
    ok(sw_tensor_carrier(r) == dst,
       "%s: the result is backed by the "
       "destination",
       name);
    is_int(sw_tensor_offset(r), 0, "%s: at offset 0", name);
    ok(sw_tensor_layout(r) == sw_tensor_layout(t),
       "%s: with the source's layout object", name);
    ok(values_are(r, before), "%s: the logical values arrived", name);
    ok(sw_carrier_is_released(src), "%s: the source carrier is released", name);
    sw_value v;
    st = sw_tensor_get(t, 0, &v);
    expect_fail(st, SW_ERUNTIME, "Carrier is released",
                "reading the moved source");
    sw_carrier_unref(src);
    return r;
}

static void test_move_bulk(void) {
    int64_t base = sw_debug_live_allocs();
    sw_set_grad_enabled(0);

    /* CPU to an empty FileBacked: grown to the cosize, holes carried. */
    sw_carrier *c = cpu_seq(12, SW_DTYPE_FLOAT32, 100, 1);
    sw_tensor *t = T(c, 3, "(2,2):(1,4)");
    sw_carrier *f = NULL;
    if (sw_file_new(NULL, SW_DTYPE_FLOAT32, 1, &f) != SW_OK)
        bail_out(sw_errmsg());
    sw_tensor *r = move_ok(t, f, "CPU to empty FileBacked (bulk)");
    is_int(sw_carrier_size(f), 6, "the file grew to the cosize");
    is_int(sw_carrier_version(f), 0,
           "the bulk write leaves the destination version at 0");
    bool span = true;
    for (int64_t i = 0; i < 6; ++i)
        span = span && cget(f, i) == 103 + i;
    ok(span, "the whole physical span, holes included, is in the file");
    sw_tensor_unref(t);
    sw_carrier_unref(c);

    /* And back to CPU, holes included, version untouched. */
    sw_carrier *d = cpu_seq(8, SW_DTYPE_FLOAT32, -50, 1);
    sw_tensor *back = r ? move_ok(r, d, "FileBacked to CPU (bulk)") : NULL;
    is_int(sw_carrier_version(d), 0,
           "the bulk read leaves the destination version at 0");
    span = true;
    for (int64_t i = 0; i < 6; ++i)
        span = span && cget(d, i) == 103 + i;
    ok(span, "the span came back, holes included");
    ok(cget(d, 6) == -44 && cget(d, 7) == -43,
       "slots past the cosize keep their values");
    sw_tensor_unref(back);
    sw_tensor_unref(r);
    sw_carrier_unref(f);
    sw_carrier_unref(d);

    /* Int32 through both bulk routes, from an offset. */
    c = cpu_seq(9, SW_DTYPE_INT32, 7, 1);
    t = T(c, 2, "(3,2):(2,1)");
    if (sw_file_new(NULL, SW_DTYPE_INT32, 1, &f) != SW_OK)
        bail_out(sw_errmsg());
    r = move_ok(t, f, "Int32 CPU to FileBacked");
    d = cpu_seq(7, SW_DTYPE_INT32, 0, 1);
    back = r ? move_ok(r, d, "Int32 FileBacked to CPU") : NULL;
    sw_tensor_unref(back);
    sw_tensor_unref(r);
    sw_tensor_unref(t);
    sw_carrier_unref(c);
    sw_carrier_unref(f);
    sw_carrier_unref(d);

    /* A tensor larger than one bulk chunk. */
    int64_t n = 3 << 20;
    c = cpu_seq(n, SW_DTYPE_FLOAT32, 0, 1);
    char lay[64];
    snprintf(lay, sizeof lay, "%lld:1", (long long)n);
    t = T(c, 0, lay);
    if (sw_file_new(NULL, SW_DTYPE_FLOAT32, 1, &f) != SW_OK)
        bail_out(sw_errmsg());
    sw_tensor *big = NULL;
    sw_status st = sw_move(t, f, &big);
    if (expect_ok(st, "a 12 MiB CPU tensor to FileBacked")) {
        ok(cget(f, 0) == 0 && cget(f, n / 2) == (double)(n / 2) &&
               cget(f, n - 1) == (double)(n - 1),
           "the file holds the values across chunks");
        d = NULL;
        if (sw_cpu_new(n, SW_DTYPE_FLOAT32, 1, 1, &d) != SW_OK)
            bail_out(sw_errmsg());
        sw_tensor *again = NULL;
        st = sw_move(big, d, &again);
        if (expect_ok(st, "and back to CPU")) {
            const float *p = sw_cpu_data(d);
            bool all = true;
            for (int64_t i = 0; i < n && all; ++i)
                all = p[i] == (float)i;
            ok(all, "every value came back");
        }
        sw_tensor_unref(again);
        sw_carrier_unref(d);
    }
    sw_tensor_unref(big);
    sw_tensor_unref(t);
    sw_carrier_unref(c);
    sw_carrier_unref(f);

    sw_set_grad_enabled(1);
    leak_check(base, "bulk moves");
    is_int(count_entries(tmp_dir), 0, "no temporary file is left");
}

static void test_move_fallback(void) {
    int64_t base = sw_debug_live_allocs();
    sw_set_grad_enabled(0);

    /* CPU to CPU: elementwise; holes keep their values. */
    sw_carrier *c = cpu_seq(8, SW_DTYPE_FLOAT32, 10, 1);
    sw_tensor *t = T(c, 1, "(2,2):(1,4)");
    sw_carrier *d = cpu_seq(6, SW_DTYPE_FLOAT32, -1, 1);
    sw_tensor *r = move_ok(t, d, "CPU to CPU (elementwise)");
    is_int(sw_carrier_version(d), 4,
           "the destination version rises once per element");
    ok(cget(d, 2) == 1 && cget(d, 3) == 2,
       "holes of the destination keep their old values");
    sw_tensor_unref(r);
    sw_tensor_unref(t);
    sw_carrier_unref(c);
    sw_carrier_unref(d);

    /* Generic (doubles) to FileBacked Floating, and on around. */
    sw_carrier *g = generic_seq(6, 0.25);
    t = T(g, 0, "(2,3):(3,1)");
    sw_carrier *f = NULL;
    if (sw_file_new(NULL, SW_DTYPE_FLOATING, 1, &f) != SW_OK)
        bail_out(sw_errmsg());
    r = move_ok(t, f, "Generic to empty FileBacked (elementwise)");
    is_int(sw_carrier_size(f), 6, "the file grew to the cosize");
    sw_carrier *f2 = file_seq(6, SW_DTYPE_FLOATING, 0);
    sw_tensor *r2 = r ? move_ok(r, f2, "FileBacked to FileBacked") : NULL;
    sw_carrier *g2 = generic_seq(6, 0);
    sw_tensor *r3 = r2 ? move_ok(r2, g2, "FileBacked to Generic") : NULL;
    sw_carrier *g3 = generic_seq(7, 0);
    sw_tensor *r4 = r3 ? move_ok(r3, g3, "Generic to Generic") : NULL;
    sw_tensor_unref(r4);
    sw_tensor_unref(r3);
    sw_tensor_unref(r2);
    sw_tensor_unref(r);
    sw_tensor_unref(t);
    sw_carrier_unref(g);
    sw_carrier_unref(f);
    sw_carrier_unref(f2);
    sw_carrier_unref(g2);
    sw_carrier_unref(g3);

    /* A broadcast view: two slots over six coordinates. */
    c = cpu_seq(2, SW_DTYPE_FLOAT32, 4, 1);
    t = T(c, 0, "(3,2):(0,1)");
    if (sw_file_new(NULL, SW_DTYPE_FLOAT32, 1, &f) != SW_OK)
        bail_out(sw_errmsg());
    r = move_ok(t, f, "a broadcast view to empty FileBacked");
    is_int(sw_carrier_size(f), 2, "only two slots were needed");
    d = cpu_seq(2, SW_DTYPE_FLOAT32, 0, 1);
    r2 = r ? move_ok(r, d, "the broadcast view back to a 2-slot CPU") : NULL;
    sw_tensor_unref(r2);
    sw_tensor_unref(r);
    sw_tensor_unref(t);
    sw_carrier_unref(c);
    sw_carrier_unref(f);
    sw_carrier_unref(d);

    /* A destination larger than needed; a hierarchical layout. */
    c = cpu_seq(30, SW_DTYPE_FLOAT32, 0, 1);
    t = T(c, 2, "(2,(3,2)):(1,(2,12))");
    d = cpu_seq(40, SW_DTYPE_FLOAT32, 0, 1);
    r = move_ok(t, d, "a hierarchical layout into a larger destination");
    sw_tensor_unref(r);
    sw_tensor_unref(t);
    sw_carrier_unref(c);
    sw_carrier_unref(d);

    sw_set_grad_enabled(1);
    leak_check(base, "fallback moves");
    is_int(count_entries(tmp_dir), 0, "no temporary file is left");
}

/* The destination version step expect_move_fail expects: 0 for failures
 * before the copy, 1 for a copy that ran and failed (its values may be
 * partly written). */
static int64_t move_fail_dst_step;

/* A failed move: status, message, and both carriers as they were. */
static void expect_move_fail(sw_tensor *t, sw_carrier *dst, sw_status want,
                             const char *msg, const char *name) {
    sw_carrier *src = t ? sw_tensor_carrier(t) : NULL;
    int src_released = src ? sw_carrier_is_released(src) : 0;
    int64_t sv = src ? sw_carrier_version(src) : 0;
    int64_t dv = dst ? sw_carrier_version(dst) : 0;
    int64_t dsize = dst ? sw_carrier_size(dst) : 0;
    int dst_released = dst ? sw_carrier_is_released(dst) : 0;
    double before[64];
    if (src && !src_released)
        values_of(t, before);
    sw_tensor *r = SENT_TENSOR;
    sw_status st = sw_move(t, dst, &r);
    expect_fail(st, want, msg, name);
    ok(r == SENT_TENSOR, "%s: no result is published", name);
    if (src) {
        is_int(sw_carrier_is_released(src), src_released,
               "%s: the source's release state is unchanged", name);
        is_int(sw_carrier_version(src), sv, "%s: the source version too", name);
        if (!src_released)
            ok(values_are(t, before), "%s: the source values too", name);
    }
    if (dst) {
        is_int(sw_carrier_version(dst), dv + move_fail_dst_step,
               move_fail_dst_step ? "%s: the destination version rose once"
                                  : "%s: the destination version is unchanged",
               name);
        is_int(sw_carrier_size(dst), dsize,
               "%s: the destination size is unchanged", name);
        is_int(sw_carrier_is_released(dst), dst_released,
               "%s: the destination's release state is unchanged", name);
    }
}

static void test_move_validation(void) {
    int64_t base = sw_debug_live_allocs();
    sw_carrier *c = cpu_seq(6, SW_DTYPE_FLOAT32, 0, 1);
    sw_tensor *t = T(c, 0, "(2,3):(1,2)");
    sw_carrier *dead = cpu_seq(6, SW_DTYPE_FLOAT32, 0, 1);
    sw_tensor *tdead = T(dead, 0, "(2,3):(1,2)");
    sw_carrier_release_storage(dead);
    sw_carrier *owned = cpu_seq(6, SW_DTYPE_FLOAT32, 0, 1);
    sw_tensor *towned = T(owned, 0, "(2,3):(1,2)");
    int64_t token = 0;
    sw_carrier_claim(owned, &token);
    sw_carrier *dst = cpu_seq(6, SW_DTYPE_FLOAT32, 0, 1);
    sw_carrier *dst_dead = cpu_seq(6, SW_DTYPE_FLOAT32, 0, 1);
    sw_carrier_release_storage(dst_dead);
    sw_carrier *dst_imm = cpu_seq(6, SW_DTYPE_FLOAT32, 0, 0);
    sw_carrier *dst_owned = cpu_seq(6, SW_DTYPE_FLOAT32, 0, 1);
    int64_t token2 = 0;
    sw_carrier_claim(dst_owned, &token2);
    sw_carrier *dst_int = cpu_seq(6, SW_DTYPE_INT32, 0, 1);
    sw_carrier *dst_gen = generic_seq(6, 0);
    sw_carrier *dst_small = cpu_seq(5, SW_DTYPE_FLOAT32, 0, 1);
    sw_carrier *dst_small_file = file_seq(3, SW_DTYPE_FLOAT32, 0);
    sw_carrier *dst_empty_gen = generic_seq(0, 0);

    /* Each check, paired with a later failing one to prove the order. */
    expect_move_fail(NULL, NULL, SW_ETYPE, "tensor must be a Tensor",
                     "1. a NULL tensor (and destination)");
    expect_move_fail(tdead, NULL, SW_ERUNTIME, "tensor carrier is released",
                     "2. a released source (before the destination)");
    expect_move_fail(towned, NULL, SW_ERUNTIME,
                     "tensor carrier is owned by another carrier object and "
                     "cannot be moved directly",
                     "3. an owned source (before the destination)");
    expect_move_fail(t, NULL, SW_ETYPE,
                     "destination must be a Carrier instance",
                     "4. a NULL destination");
    expect_move_fail(t, c, SW_EVALUE,
                     "destination must not be the tensor's own carrier",
                     "5. the tensor's own carrier");
    expect_move_fail(t, dst_dead, SW_ERUNTIME,
                     "destination carrier is released",
                     "6. a released destination");
    expect_move_fail(t, dst_imm, SW_ERUNTIME,
                     "destination carrier must be mutable",
                     "7. an immutable destination");
    expect_move_fail(t, dst_owned, SW_ERUNTIME,
                     "destination carrier must be mutable",
                     "7. an owned destination");
    expect_move_fail(t, dst_int, SW_ETYPE,
                     "destination dtype must match the tensor dtype",
                     "8. an Int32 destination for Float32");
    expect_move_fail(t, dst_gen, SW_ETYPE,
                     "destination dtype must match the tensor dtype",
                     "8. Float32 into Generic (Floating)");
    expect_move_fail(t, dst_small, SW_EVALUE,
                     "destination carrier is too small for the tensor layout",
                     "10. a CPU destination one slot short");
    expect_move_fail(t, dst_small_file, SW_EVALUE,
                     "destination carrier is too small for the tensor layout",
                     "10. a non-empty FileBacked that is too small");
    sw_carrier *g = generic_seq(6, 0);
    sw_tensor *tg = T(g, 0, "(2,3):(1,2)");
    expect_move_fail(tg, dst_empty_gen, SW_EVALUE,
                     "destination carrier is too small for the tensor layout",
                     "10. an empty Generic cannot grow");

    /* 9. Pinned classes run directly. */
    sw_op *op = NULL;
    if (expect_ok(sw_move_op_new(sw_move_cpu_to_file(), &op),
                  "a CpuToFileBackedMoveOperation")) {
        sw_carrier *gf = NULL;
        if (sw_file_new(NULL, SW_DTYPE_FLOATING, 1, &gf) != SW_OK)
            bail_out(sw_errmsg());
        sw_tensor *r = SENT_TENSOR;
        sw_status st = sw_move_op_forward(op, tg, gf, &r);
        expect_fail(st, SW_ETYPE,
                    "CpuToFileBackedMoveOperation requires a CPU source",
                    "9. a Generic source for the CPU-pinned class");
        st = sw_move_op_forward(op, t, dst, &r);
        expect_fail(st, SW_ETYPE,
                    "CpuToFileBackedMoveOperation requires a FileBacked "
                    "destination",
                    "9. a CPU destination for the FileBacked-pinned class");
        ok(r == SENT_TENSOR && !sw_carrier_is_released(g) &&
               !sw_carrier_is_released(c) && sw_carrier_size(gf) == 0,
           "pin failures publish nothing and release nothing");
        is_str(sw_move_op_class(op)->name, "CpuToFileBackedMoveOperation",
               "the operation knows its move class");
        ok(sw_op_is_move(op), "and is a move operation");
        st = sw_move_op_forward(op, NULL, gf, &r);
        expect_fail(st, SW_ETYPE, "tensor must be a Tensor",
                    "a direct forward of NULL");
        sw_op_unref(op);
        sw_carrier_unref(gf);
    }
    sw_op *other = NULL;
    if (expect_ok(sw_shared_op_new("view", &other), "a non-move operation")) {
        ok(!sw_op_is_move(other) && sw_move_op_class(other) == NULL,
           "is not a move operation");
        sw_tensor *r = SENT_TENSOR;
        sw_status st = sw_move_op_forward(other, t, dst, &r);
        expect_fail(st, SW_ETYPE, "operation must be a MoveOperation",
                    "sw_move_op_forward on another operation");
        sw_op_unref(other);
    }
    sw_op *bad = SENT_PTR;
    sw_status st = sw_move_op_new(NULL, &bad);
    expect_fail(st, SW_ETYPE,
                "operation_class must be a MoveOperation subclass",
                "sw_move_op_new without a class");
    ok(bad == SENT_PTR, "leaves the out-parameter alone");

    /* Under owner access the owner may move its tier. */
    sw_carrier_begin_owner_access(owned, token);
    sw_tensor *r = NULL;
    st = sw_move(towned, dst, &r);
    if (expect_ok(st, "moving an owned source under owner access"))
        ok(sw_carrier_is_released(owned), "releases the owned source");
    sw_carrier_end_owner_access(owned, token);
    sw_carrier_relinquish(owned, token);
    sw_tensor_unref(r);
    sw_carrier_relinquish(dst_owned, token2);

    sw_tensor_unref(t);
    sw_tensor_unref(tdead);
    sw_tensor_unref(towned);
    sw_tensor_unref(tg);
    sw_carrier *all[] = {c,        dead,      owned,          dst,
                         dst_dead, dst_imm,   dst_owned,      dst_int,
                         dst_gen,  dst_small, dst_small_file, dst_empty_gen,
                         g};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i)
        sw_carrier_unref(all[i]);
    leak_check(base, "move validation");
    is_int(count_entries(tmp_dir), 0, "no temporary file is left");
}

/* I/O failures in the middle of a move leave the source usable. */
static void test_move_io_faults(void) {
    int64_t base = sw_debug_live_allocs();
    sw_set_grad_enabled(0);
    int64_t n = 3 << 20; /* two bulk chunks */
    char lay[64];
    snprintf(lay, sizeof lay, "%lld:1", (long long)n);
    sw_carrier *c = cpu_seq(n, SW_DTYPE_FLOAT32, 0, 1);
    sw_tensor *t = T(c, 0, lay);
    sw_carrier *f = NULL;
    if (sw_file_new(NULL, SW_DTYPE_FLOAT32, 1, &f) != SW_OK)
        bail_out(sw_errmsg());
    /* 0: the growth fails; 1: the first chunk; 2: the second chunk. */
    for (int k = 0; k < 3; ++k) {
        char name[96];
        snprintf(name, sizeof name,
                 "CPU to FileBacked with file operation %d failing", k + 1);
        sw_tensor *r = SENT_TENSOR;
        sw_debug_fail_io_after(k);
        sw_status st = sw_move(t, f, &r);
        sw_debug_fail_io_after(-1);
        char msg[512];
        snprintf(msg, sizeof msg, "%s", sw_errmsg());
        is_int(st, SW_EOS, "%s: SW_EOS", name);
        is_int(sw_errno(), ENOSPC, "%s: errno ENOSPC", name);
        ok(strstr(msg, "No space left on device") != NULL,
           "%s: the system's message ('%s')", name, msg);
        sw_clear_error();
        ok(r == SENT_TENSOR, "%s: no result", name);
        ok(!sw_carrier_is_released(c), "%s: the source is live", name);
        ok(tget(t, 0) == 0 && tget(t, n - 1) == (double)(n - 1),
           "%s: and its values are intact", name);
        is_int(sw_carrier_version(c), 0, "%s: the source version is kept",
               name);
        /* Only the failure of the second chunk, after the first landed,
         * leaves the destination partly written: one version step. */
        is_int(sw_carrier_version(f), k == 2,
               "%s: the destination version rose only if written", name);
        /* The hook fails every later file operation too, so the move's
         * attempt to shrink the grown file back fails as well: the error
         * reported must still be the transfer's. */
        if (k > 0) {
            ok(strstr(msg, "FileBacked write of") == msg,
               "%s: the transfer's error survives the failed cleanup", name);
            expect_ok(sw_file_resize(f, 0), "emptying the destination");
        }
    }
    sw_tensor *r = NULL;
    sw_status st = sw_move(t, f, &r);
    expect_ok(st, "the same move afterwards");
    sw_tensor_unref(t);
    sw_carrier_unref(c);

    /* FileBacked to CPU failing on the second chunk. */
    sw_carrier *d = NULL;
    if (sw_cpu_new(n, SW_DTYPE_FLOAT32, 1, 0, &d) != SW_OK)
        bail_out(sw_errmsg());
    if (r) {
        sw_tensor *back = SENT_TENSOR;
        sw_debug_fail_io_after(1);
        st = sw_move(r, d, &back);
        sw_debug_fail_io_after(-1);
        expect_fail(st, SW_EOS, NULL,
                    "FileBacked to CPU with the second read failing");
        ok(back == SENT_TENSOR, "no result");
        ok(!sw_carrier_is_released(f), "the FileBacked source is live");
        ok(tget(r, 1) == 1 && tget(r, n - 1) == (double)(n - 1),
           "and readable");
        is_int(sw_carrier_version(d), 1,
               "the CPU destination version rose once (partly written)");
        st = sw_move(r, d, &back);
        if (expect_ok(st, "the same move afterwards"))
            sw_tensor_unref(back);
    }
    sw_tensor_unref(r);
    sw_carrier_unref(f);
    sw_carrier_unref(d);

    /* The elementwise fallback with a write failing midway. */
    sw_carrier *g = generic_seq(6, 1);
    t = T(g, 0, "(2,3):(1,2)");
    if (sw_file_new(NULL, SW_DTYPE_FLOATING, 1, &f) != SW_OK)
        bail_out(sw_errmsg());
    r = SENT_TENSOR;
    sw_debug_fail_io_after(3); /* growth, two writes, then failure */
    st = sw_move(t, f, &r);
    sw_debug_fail_io_after(-1);
    expect_fail(st, SW_EOS, NULL, "Generic to FileBacked failing midway");
    ok(r == SENT_TENSOR && !sw_carrier_is_released(g),
       "no result, the source is live");
    is_int(sw_carrier_version(f), 1,
           "the destination version rose once (partly written)");
    expect_ok(sw_file_resize(f, 0), "emptying the destination");
    r = NULL;
    st = sw_move(t, f, &r);
    if (expect_ok(st, "the same move afterwards")) {
        double want[6] = {1, 2, 3, 4, 5, 6};
        ok(values_are(r, want), "with the values");
    }
    sw_tensor_unref(r);
    sw_tensor_unref(t);
    sw_carrier_unref(g);
    sw_carrier_unref(f);

    sw_set_grad_enabled(1);
    leak_check(base, "moves with I/O failures");
    is_int(count_entries(tmp_dir), 0, "no temporary file is left");
}

/* Every allocation of a move fails in turn. */
typedef enum { FI_CPU, FI_FILE, FI_GENERIC } fi_kind;

static sw_carrier *fi_dest(fi_kind k) {
    sw_carrier *d = NULL;
    if (k == FI_CPU)
        d = cpu_seq(6, SW_DTYPE_FLOAT32, 0, 1);
    else if (k == FI_FILE && sw_file_new(NULL, SW_DTYPE_FLOAT32, 1, &d))
        bail_out(sw_errmsg());
    return d;
}

static void fi_walk(fi_kind k, int grad, const char *name) {
    int64_t base = sw_debug_live_allocs();
    sw_set_grad_enabled(grad);
    int bad = 0;
    int64_t n;
    for (n = 0; n < 1000 && bad < 3; ++n) {
        sw_carrier *c = cpu_seq(6, SW_DTYPE_FLOAT32, 1, 1);
        sw_tensor *t = T(c, 0, "(2,3):(1,2)");
        sw_carrier *d = fi_dest(k);
        sw_tensor *r = SENT_TENSOR;
        sw_debug_fail_alloc_after(n);
        sw_status st = sw_move(t, d, &r);
        sw_debug_fail_alloc_after(-1);
        int done = st == SW_OK;
        if (done) {
            double want[6] = {1, 2, 3, 4, 5, 6};
            if (!values_are(r, want) || !sw_carrier_is_released(c))
                bad++;
            if (grad && !sw_tensor_autograd_ctx(r)) {
                diag("%s, n=%lld: no autograd context", name, (long long)n);
                bad++;
            }
            sw_tensor_unref(r);
        } else if (st != SW_ENOMEM || r != SENT_TENSOR ||
                   sw_carrier_is_released(c) || tget(t, 5) != 6 ||
                   sw_carrier_size(d) != (k == FI_FILE ? 0 : 6)) {
            diag("%s, n=%lld: status %s (%s), or the failure changed a "
                 "carrier",
                 name, (long long)n, S(st), sw_errmsg());
            bad++;
        }
        sw_clear_error();
        sw_tensor_unref(t);
        sw_carrier_unref(c);
        sw_carrier_unref(d);
        if (sw_debug_live_allocs() != base) {
            diag("%s, n=%lld: leak", name, (long long)n);
            bad++;
            base = sw_debug_live_allocs();
        }
        if (done)
            break;
    }
    sw_set_grad_enabled(1);
    ok(bad == 0 && n > 0, "%s: every allocation failure is clean (%lld runs)",
       name, (long long)n + 1);
}

static void test_move_faults(void) {
    fi_walk(FI_CPU, 0, "CPU to CPU, allocations failing");
    fi_walk(FI_CPU, 1, "CPU to CPU recorded, allocations failing");
    fi_walk(FI_FILE, 0, "CPU to FileBacked, allocations failing");
    fi_walk(FI_FILE, 1, "CPU to FileBacked recorded, allocations failing");
    is_int(count_entries(tmp_dir), 0, "no temporary file is left");
}

/* ---------------------------------------------------------- registry */

static int64_t copy_calls, copy_count;
static sw_status fail_next_copy;

/* A custom copy: records its element count and copies by element. */
static sw_status recording_copy(sw_op *op, sw_tensor *tensor,
                                sw_carrier *destination, sw_tensor *output,
                                int64_t element_count) {
    copy_calls++;
    copy_count = element_count;
    if (!sw_op_is_move(op) || sw_tensor_carrier(output) != destination)
        return sw_set_error(SW_ERUNTIME, "copy hook got the wrong arguments");
    for (int64_t i = 0; i < sw_tensor_size(tensor); ++i) {
        sw_value v;
        sw_status st = sw_tensor_get(tensor, i, &v);
        if (!st)
            st = sw_tensor_set(output, i, &v);
        sw_value_clear(&v);
        if (st)
            return st;
        if (fail_next_copy && i == 1)
            return sw_set_error(fail_next_copy, "the copy hook failed");
    }
    return SW_OK;
}

static const sw_move_class recording_class = {
    .version = SW_MOVE_CLASS_VERSION,
    .name = "RecordingMoveOperation",
    .copy = recording_copy,
};

/* Pinned to a Generic source (the pin is set where it is used: the
 * built-in keys are function results, not constants). */
static const sw_move_class generic_pinned_class = {
    .version = SW_MOVE_CLASS_VERSION,
    .name = "GenericPinnedMove",
    .copy = recording_copy,
};

static void test_registry(void) {
    sw_move_key cpu = sw_move_key_cpu(), gen = sw_move_key_generic(),
                file = sw_move_key_file();
    is_str(cpu.name, "CPU", "the CPU key's name");
    is_str(gen.name, "Generic", "the Generic key's name");
    is_str(file.name, "FileBacked", "the FileBacked key's name");
    ok(cpu.id != gen.id && gen.id != file.id && cpu.id != file.id,
       "the built-in keys differ");
    ok(sw_move_dispatch(cpu, file) == sw_move_cpu_to_file(),
       "(CPU, FileBacked) dispatches to CpuToFileBackedMoveOperation");
    ok(sw_move_dispatch(file, cpu) == sw_move_file_to_cpu(),
       "(FileBacked, CPU) dispatches to FileBackedToCpuMoveOperation");
    ok(sw_move_dispatch(cpu, cpu) == sw_move_elementwise(),
       "(CPU, CPU) falls back to ElementwiseMoveOperation");
    ok(sw_move_dispatch(gen, file) == sw_move_elementwise(),
       "(Generic, FileBacked) falls back too");
    is_str(sw_move_elementwise()->name, "ElementwiseMoveOperation",
           "the fallback's name");
    is_str(sw_move_file_to_cpu()->name, "FileBackedToCpuMoveOperation",
           "the reverse bulk class's name");

    sw_carrier *c = cpu_seq(1, SW_DTYPE_FLOAT32, 0, 1);
    sw_carrier *g = generic_seq(1, 0);
    sw_carrier *f = file_seq(0, SW_DTYPE_FLOAT32, 0);
    ok(sw_move_key_of(c).id == cpu.id && sw_move_key_of(g).id == gen.id &&
           sw_move_key_of(f).id == file.id,
       "carriers of the built-in backends have the built-in keys");
    int64_t base = sw_debug_live_allocs();

    sw_status st = sw_move_register(cpu, file, &recording_class);
    expect_fail(st, SW_EVALUE,
                "a move operation is already registered for (CPU, FileBacked)",
                "registering over a built-in entry");
    ok(sw_move_dispatch(cpu, file) == sw_move_cpu_to_file(), "which is kept");
    sw_move_key none = {NULL, "X"};
    st = sw_move_register(none, gen, &recording_class);
    expect_fail(st, SW_ETYPE, "source_class must be a Carrier subclass",
                "registering without a source key");
    st = sw_move_register(gen, none, &recording_class);
    expect_fail(st, SW_ETYPE, "destination_class must be a Carrier subclass",
                "registering without a destination key");
    st = sw_move_register(gen, gen, NULL);
    expect_fail(st, SW_ETYPE,
                "operation_class must be a MoveOperation subclass",
                "registering without a class");
    sw_move_class wrong = recording_class;
    wrong.version = 99;
    st = sw_move_register(gen, gen, &wrong);
    expect_fail(st, SW_ETYPE,
                "operation_class must be a MoveOperation subclass",
                "registering a class of another version");
    wrong = recording_class;
    wrong.copy = NULL;
    st = sw_move_register(gen, gen, &wrong);
    expect_fail(st, SW_ETYPE,
                "operation_class must be a MoveOperation subclass",
                "registering a class without a copy hook");
    ok(sw_move_dispatch(gen, gen) == sw_move_elementwise(),
       "nothing was registered by the failures");
    leak_check(base, "failed registrations");

    /* Register, use, unregister. */
    if (expect_ok(sw_move_register(gen, gen, &recording_class),
                  "registering (Generic, Generic)")) {
        ok(sw_move_dispatch(gen, gen) == &recording_class,
           "dispatch returns it for the exact pair");
        ok(sw_move_dispatch(gen, file) == sw_move_elementwise() &&
               sw_move_dispatch(file, gen) == sw_move_elementwise(),
           "and not for a pair differing in one class");
        st = sw_move_register(gen, gen, sw_move_elementwise());
        expect_fail(st, SW_EVALUE,
                    "a move operation is already registered for (Generic, "
                    "Generic)",
                    "registering the pair again");
        ok(sw_move_dispatch(gen, gen) == &recording_class,
           "the first registration is kept");

        sw_carrier *src = generic_seq(8, 3);
        sw_tensor *t = T(src, 1, "(2,2):(1,3)");
        sw_carrier *dst = generic_seq(5, 0);
        copy_calls = 0;
        copy_count = -1;
        sw_tensor *r = move_ok(t, dst, "a move through the registered class");
        is_int(copy_calls, 1, "the copy hook ran once");
        is_int(copy_count, 5, "with the layout's cosize as element count");
        sw_tensor_unref(r);
        sw_tensor_unref(t);
        sw_carrier_unref(src);
        sw_carrier_unref(dst);

        /* A failing copy keeps the source. */
        src = generic_seq(6, 3);
        t = T(src, 0, "(2,3):(1,2)");
        dst = generic_seq(6, 0);
        fail_next_copy = SW_ERUNTIME;
        move_fail_dst_step = 1;
        expect_move_fail(t, dst, SW_ERUNTIME, "the copy hook failed",
                         "a failing copy hook");
        move_fail_dst_step = 0;
        fail_next_copy = SW_OK;
        sw_tensor_unref(t);
        sw_carrier_unref(src);
        sw_carrier_unref(dst);

        /* A failing copy into an empty FileBacked: the growth is undone. */
        sw_op *op = NULL;
        if (expect_ok(sw_move_op_new(&recording_class, &op),
                      "a RecordingMoveOperation")) {
            src = generic_seq(6, 3);
            t = T(src, 0, "(2,3):(1,2)");
            sw_carrier *ef = file_seq(0, SW_DTYPE_FLOATING, 0);
            r = SENT_TENSOR;
            fail_next_copy = SW_EVALUE;
            st = sw_move_op_forward(op, t, ef, &r);
            fail_next_copy = SW_OK;
            expect_fail(st, SW_EVALUE, "the copy hook failed",
                        "a failing copy into an empty FileBacked");
            ok(r == SENT_TENSOR && !sw_carrier_is_released(src),
               "publishes nothing and keeps the source");
            is_int(sw_carrier_size(ef), 0, "the destination is empty again");
            is_int(sw_carrier_version(ef), 1,
                   "its version rose once (the copy ran)");
            sw_tensor_unref(t);
            sw_carrier_unref(src);
            sw_carrier_unref(ef);
            sw_op_unref(op);
        }

        const sw_move_class *removed = NULL;
        st = sw_move_unregister(gen, gen, &removed);
        if (expect_ok(st, "unregistering (Generic, Generic)"))
            ok(removed == &recording_class, "returns the class");
        st = sw_move_unregister(gen, gen, &removed);
        expect_fail(st, SW_EKEY,
                    "no move operation is registered for (Generic, Generic)",
                    "unregistering it again");
        ok(sw_move_dispatch(gen, gen) == sw_move_elementwise(),
           "dispatch falls back again");
    }
    leak_check(base, "a registration and its removal");

    /* A built-in entry can be removed and restored. */
    const sw_move_class *removed = NULL;
    st = sw_move_unregister(cpu, file, &removed);
    if (expect_ok(st, "unregistering the built-in (CPU, FileBacked)")) {
        ok(removed == sw_move_cpu_to_file(), "returns the bulk class");
        ok(sw_move_dispatch(cpu, file) == sw_move_elementwise(),
           "the pair falls back");
        sw_set_grad_enabled(0);
        sw_carrier *src = cpu_seq(6, SW_DTYPE_FLOAT32, 0, 1);
        sw_tensor *t = T(src, 0, "(2,3):(1,2)");
        sw_tensor *r = move_ok(t, f, "CPU to FileBacked by the fallback");
        is_int(sw_carrier_version(f), 6,
               "element writes bump the destination version");
        sw_set_grad_enabled(1);
        sw_tensor_unref(r);
        sw_tensor_unref(t);
        sw_carrier_unref(src);
        expect_ok(sw_move_register(cpu, file, sw_move_cpu_to_file()),
                  "registering it again");
        ok(sw_move_dispatch(cpu, file) == sw_move_cpu_to_file(),
           "the bulk class is back");
    }
    st = sw_move_unregister(none, none, NULL);
    expect_fail(st, SW_EKEY, "no move operation is registered for (X, X)",
                "unregistering an unknown pair");

    /* A class tagged by a binding (a subclass of CPU) has its own key and
     * does not inherit CPU's registration. */
    static const char subclass_tag = 0;
    sw_carrier *sub = cpu_seq(6, SW_DTYPE_FLOAT32, 0, 1);
    sw_carrier_set_dispatch(sub, NULL, NULL, &subclass_tag);
    ok(sw_move_key_of(sub).id == &subclass_tag,
       "a tagged carrier's key is its tag");
    sw_carrier *f2 = file_seq(0, SW_DTYPE_FLOAT32, 0);
    sw_set_grad_enabled(0);
    sw_tensor *t = T(sub, 0, "(2,3):(1,2)");
    sw_tensor *r = move_ok(t, f2, "a CPU subclass to FileBacked");
    is_int(sw_carrier_version(f2), 6,
           "went through the fallback (one bump per element)");
    sw_set_grad_enabled(1);
    sw_tensor_unref(r);
    sw_tensor_unref(t);
    sw_carrier_unref(sub);
    sw_carrier_unref(f2);

    leak_check(base, "the registry");
    sw_carrier_unref(c);
    sw_carrier_unref(g);
    sw_carrier_unref(f);
    is_int(count_entries(tmp_dir), 0, "no temporary file is left");
}

/* A minimal custom backend of doubles that cannot allocate. */
typedef struct plain {
    int64_t n;
    double v[8];
} plain;

static int64_t plain_size(sw_carrier *c) {
    plain *p = sw_carrier_state(c);
    return p ? p->n : 0;
}
static sw_status plain_get(sw_carrier *c, int64_t i, sw_value *out) {
    *out = sw_value_f64(((plain *)sw_carrier_state(c))->v[i]);
    return SW_OK;
}
static sw_status plain_set(sw_carrier *c, int64_t i, const sw_value *v) {
    ((plain *)sw_carrier_state(c))->v[i] =
        v->kind == SW_VALUE_F64 ? v->as.f : (double)v->as.i;
    return SW_OK;
}
static int plain_is_mutable(sw_carrier *c) {
    return 1;
}
static void plain_destroy(sw_carrier *c) {
    free(sw_carrier_state(c));
}
static const sw_carrier_class plain_class = {
    .version = SW_CARRIER_CLASS_VERSION,
    .name = "Plain",
    .size = plain_size,
    .get = plain_get,
    .set = plain_set,
    .is_mutable = plain_is_mutable,
    .destroy = plain_destroy,
};

/* ---------------------------------------------------------- autograd */

/* Moves a fresh leaf x and runs backward with gradient values 10 + i in
 * grad_carrier; checks x.grad's class, layout and values. */
static void grad_case(sw_carrier *src, int64_t offset, const char *layout,
                      sw_carrier *dst, sw_carrier *grad_carrier,
                      int (*is_class)(const sw_carrier *), const char *name) {
    sw_tensor *x = T(src, offset, layout);
    sw_tensor *y = NULL;
    sw_status st = sw_move(x, dst, &y);
    if (!expect_ok(st, name)) {
        sw_tensor_unref(x);
        return;
    }
    sw_op *ctx = sw_tensor_autograd_ctx(y);
    ok(ctx && sw_op_is_move(ctx), "%s: the result's context is the move", name);
    ok(ctx && sw_op_ninputs(ctx) == 1 && sw_op_input(ctx, 0) == x,
       "%s: whose one input is the source tensor", name);
    sw_tensor *g = T(grad_carrier, 0, layout);
    double want[64];
    values_of(g, want);
    st = sw_tensor_backward(y, g);
    if (expect_ok(st, name)) {
        sw_tensor *gx = sw_tensor_grad(x);
        ok(gx != NULL, "%s: x has a gradient", name);
        if (gx) {
            ok(is_class(sw_tensor_carrier(gx)),
               "%s: in the source's carrier class", name);
            ok(sw_layout_equal(sw_tensor_layout(gx), sw_tensor_layout(x)),
               "%s: with the source layout", name);
            is_int(sw_tensor_offset(gx), 0, "%s: at offset 0", name);
            ok(values_are(gx, want), "%s: holding the gradient's values", name);
            ok(sw_tensor_autograd_ctx(gx) == NULL, "%s: detached", name);
        }
    }
    ok(!sw_carrier_is_released(grad_carrier),
       "%s: the incoming gradient's carrier is not released", name);
    sw_tensor_unref(g);
    sw_tensor_unref(y);
    sw_tensor_unref(x);
}

static void test_move_autograd(void) {
    int64_t base = sw_debug_live_allocs();
    sw_carrier *src, *dst, *gc;

    src = cpu_seq(6, SW_DTYPE_FLOAT32, 1, 1);
    dst = file_seq(0, SW_DTYPE_FLOAT32, 0);
    gc = file_seq(6, SW_DTYPE_FLOAT32, 10);
    grad_case(src, 0, "(2,3):(1,2)", dst, gc, sw_carrier_is_cpu,
              "CPU to FileBacked, FileBacked gradient (bulk route back)");
    sw_carrier_unref(src);
    sw_carrier_unref(dst);
    sw_carrier_unref(gc);

    src = cpu_seq(40, SW_DTYPE_FLOAT32, 1, 1);
    dst = cpu_seq(40, SW_DTYPE_FLOAT32, 0, 1);
    gc = cpu_seq(40, SW_DTYPE_FLOAT32, 10, 1);
    grad_case(src, 3, "(2,(3,2)):(1,(4,16))", dst, gc, sw_carrier_is_cpu,
              "CPU to CPU, hierarchical with holes and an offset");
    sw_carrier_unref(src);
    sw_carrier_unref(dst);
    sw_carrier_unref(gc);

    src = generic_seq(6, 1);
    dst = file_seq(0, SW_DTYPE_FLOATING, 0);
    gc = generic_seq(6, 10);
    grad_case(src, 0, "(2,3):(3,1)", dst, gc, sw_carrier_is_generic,
              "Generic to FileBacked, Generic gradient");
    sw_carrier_unref(src);
    sw_carrier_unref(dst);
    sw_carrier_unref(gc);

    src = file_seq(6, SW_DTYPE_FLOAT32, 1);
    dst = cpu_seq(6, SW_DTYPE_FLOAT32, 0, 1);
    gc = cpu_seq(6, SW_DTYPE_FLOAT32, 10, 1);
    grad_case(src, 0, "(2,3):(1,2)", dst, gc, sw_carrier_is_file,
              "FileBacked to CPU, CPU gradient (bulk route back)");
    sw_carrier_unref(src);
    sw_carrier_unref(dst);
    sw_carrier_unref(gc);

    /* Through a chain: x -> z = 2x -> move -> w. */
    src = cpu_seq(3, SW_DTYPE_FLOAT32, 1, 1);
    sw_tensor *x = T(src, 0, "3:1");
    sw_tensor *z = NULL, *w = NULL;
    sw_status st = sw_mul(x, sw_arg_f64(2.0), &z);
    if (expect_ok(st, "z = 2x")) {
        dst = file_seq(0, SW_DTYPE_FLOAT32, 0);
        st = sw_move(z, dst, &w);
        if (expect_ok(st, "moving z to FileBacked")) {
            gc = file_seq(3, SW_DTYPE_FLOAT32, 1);
            sw_tensor *g = T(gc, 0, "3:1");
            st = sw_tensor_backward(w, g);
            if (expect_ok(st, "backward through the move and the product")) {
                double want[3] = {2, 4, 6};
                ok(sw_tensor_grad(x) && values_are(sw_tensor_grad(x), want),
                   "x.grad is 2 * g");
                ok(sw_tensor_grad(x) &&
                       sw_carrier_is_cpu(sw_tensor_carrier(sw_tensor_grad(x))),
                   "on CPU");
            }
            sw_tensor_unref(g);
            sw_carrier_unref(gc);
        }
        sw_tensor_unref(w);
        sw_carrier_unref(dst);
    }
    sw_tensor_unref(z);
    sw_tensor_unref(x);
    sw_carrier_unref(src);

    /* No node without grad mode, or for Int32. */
    src = cpu_seq(3, SW_DTYPE_FLOAT32, 1, 1);
    x = T(src, 0, "3:1");
    dst = cpu_seq(3, SW_DTYPE_FLOAT32, 0, 1);
    sw_set_grad_enabled(0);
    st = sw_move(x, dst, &w);
    sw_set_grad_enabled(1);
    if (expect_ok(st, "a move without grad mode"))
        ok(sw_tensor_autograd_ctx(w) == NULL, "records no context");
    sw_tensor_unref(w);
    sw_tensor_unref(x);
    sw_carrier_unref(src);
    sw_carrier_unref(dst);
    src = cpu_seq(3, SW_DTYPE_INT32, 1, 1);
    x = T(src, 0, "3:1");
    dst = file_seq(0, SW_DTYPE_INT32, 0);
    st = sw_move(x, dst, &w);
    if (expect_ok(st, "an Int32 move with grad mode"))
        ok(sw_tensor_autograd_ctx(w) == NULL, "records no context");
    sw_tensor_unref(w);
    sw_tensor_unref(x);
    sw_carrier_unref(src);
    sw_carrier_unref(dst);

    /* Cotangent checks, by calling the node's backward directly. */
    src = cpu_seq(6, SW_DTYPE_FLOAT32, 1, 1);
    x = T(src, 0, "(2,3):(1,2)");
    dst = cpu_seq(6, SW_DTYPE_FLOAT32, 0, 1);
    st = sw_move(x, dst, &w);
    if (expect_ok(st, "a move for the cotangent checks")) {
        sw_op *op = sw_tensor_autograd_ctx(w);
        sw_tensor *grads[1] = {SENT_TENSOR};
        st = sw_op_backward(op, NULL, 1, grads);
        expect_fail(st, SW_ETYPE, "gradient must be a Tensor",
                    "a NULL cotangent");
        ok(grads[0] == NULL, "no gradient comes out");
        gc = cpu_seq(6, SW_DTYPE_FLOAT32, 0, 1);
        sw_tensor *g = T(gc, 0, "(3,2):(1,3)");
        st = sw_op_backward(op, g, 1, grads);
        expect_fail(st, SW_EVALUE,
                    "gradient shape must match the moved tensor's shape",
                    "a cotangent of another shape");
        sw_tensor_unref(g);
        g = T(gc, 0, "(2,3):(0,1)");
        st = sw_op_backward(op, g, 1, grads);
        expect_fail(st, SW_EVALUE,
                    "move backward requires an injective gradient Layout",
                    "a stride-zero cotangent");
        sw_tensor_unref(g);
        g = T(gc, 0, "(2,3):(3,1)");
        st = sw_op_backward(op, g, 1, grads);
        if (expect_ok(st, "a row-major cotangent of the right shape")) {
            double want[6];
            values_of(g, want);
            ok(sw_layout_equal(sw_tensor_layout(grads[0]),
                               sw_tensor_layout(x)) &&
                   values_are(grads[0], want),
               "gives its logical values under the source layout");
            sw_tensor_unref(grads[0]);
        }
        sw_carrier_release_storage(gc);
        st = sw_op_backward(op, g, 1, grads);
        expect_fail(st, SW_ERUNTIME, "gradient carrier is released",
                    "a released cotangent");
        sw_tensor_unref(g);
        sw_carrier_unref(gc);
    }
    sw_tensor_unref(w);
    sw_tensor_unref(x);
    sw_carrier_unref(src);
    sw_carrier_unref(dst);

    /* A moved broadcast view: the node wants an injective cotangent and
     * hands back the canonical layout. */
    src = cpu_seq(2, SW_DTYPE_FLOAT32, 1, 1);
    x = T(src, 0, "(3,2):(0,1)");
    dst = file_seq(0, SW_DTYPE_FLOAT32, 0);
    st = sw_move(x, dst, &w);
    if (expect_ok(st, "moving a broadcast view with grad mode")) {
        gc = cpu_seq(2, SW_DTYPE_FLOAT32, 1, 1);
        sw_tensor *g = T(gc, 0, "(3,2):(0,1)");
        st = sw_tensor_backward(w, g);
        expect_fail(st, SW_EVALUE,
                    "move backward requires an injective gradient Layout",
                    "backward with the result's stride-zero layout");
        sw_tensor_unref(g);
        sw_carrier_unref(gc);
        gc = cpu_seq(6, SW_DTYPE_FLOAT32, 10, 1);
        g = T(gc, 0, "(3,2):(1,3)");
        sw_tensor *grads[1] = {NULL};
        st = sw_op_backward(sw_tensor_autograd_ctx(w), g, 1, grads);
        if (expect_ok(st, "the node's backward with a compact cotangent")) {
            sw_layout *canon = L("(3,2):(1,3)");
            double want[6] = {10, 11, 12, 13, 14, 15};
            ok(sw_layout_equal(sw_tensor_layout(grads[0]), canon) &&
                   values_are(grads[0], want) &&
                   sw_carrier_is_cpu(sw_tensor_carrier(grads[0])),
               "gives a CPU gradient under the canonical injective layout");
            sw_layout_unref(canon);
            sw_tensor_unref(grads[0]);
        }
        sw_tensor_unref(g);
        sw_carrier_unref(gc);
    }
    sw_tensor_unref(w);
    sw_tensor_unref(x);
    sw_carrier_unref(src);
    sw_carrier_unref(dst);

    /* A one-way route fails before any work. */
    sw_move_key cpu = sw_move_key_cpu(), file = sw_move_key_file();
    const sw_move_class *saved = NULL;
    sw_move_class pinned = generic_pinned_class;
    pinned.source_pin = sw_move_key_generic();
    if (expect_ok(sw_move_unregister(file, cpu, &saved),
                  "unregistering (FileBacked, CPU)") &&
        expect_ok(sw_move_register(file, cpu, &pinned),
                  "registering a Generic-pinned class for it")) {
        src = cpu_seq(6, SW_DTYPE_FLOAT32, 1, 1);
        x = T(src, 0, "(2,3):(1,2)");
        dst = file_seq(0, SW_DTYPE_FLOAT32, 0);
        expect_move_fail(x, dst, SW_ETYPE,
                         "GenericPinnedMove requires a Generic source",
                         "a differentiable move whose way back is refused");
        sw_set_grad_enabled(0);
        st = sw_move(x, dst, &w);
        sw_set_grad_enabled(1);
        if (expect_ok(st, "the same move without grad mode"))
            sw_tensor_unref(w);
        sw_tensor_unref(x);
        sw_carrier_unref(src);
        sw_carrier_unref(dst);
        sw_move_unregister(file, cpu, NULL);
        expect_ok(sw_move_register(file, cpu, saved),
                  "restoring (FileBacked, CPU)");
    }

    /* A source class that cannot allocate has no way back. */
    plain *p = calloc(1, sizeof *p);
    if (!p)
        bail_out("test allocation");
    p->n = 4;
    for (int i = 0; i < 4; ++i)
        p->v[i] = i + 1;
    sw_carrier *pc = NULL;
    if (sw_carrier_new(&plain_class, p, SW_DTYPE_FLOATING, &pc) != SW_OK)
        bail_out(sw_errmsg());
    ok(sw_move_key_of(pc).id == &plain_class &&
           !strcmp(sw_move_key_of(pc).name, "Plain"),
       "a custom backend's key is its vtable");
    x = T(pc, 0, "4:1");
    dst = generic_seq(4, 0);
    expect_move_fail(x, dst, SW_ENOTIMPL,
                     "move has no reverse route: Plain carrier does not "
                     "support allocation",
                     "a differentiable move from a class that cannot "
                     "allocate");
    sw_set_grad_enabled(0);
    st = sw_move(x, dst, &w);
    sw_set_grad_enabled(1);
    if (expect_ok(st, "the same move without grad mode")) {
        double want[4] = {1, 2, 3, 4};
        ok(values_are(w, want), "moves the values");
        sw_tensor_unref(w);
    }
    sw_tensor_unref(x);
    sw_carrier_unref(pc);
    sw_carrier_unref(dst);

    leak_check(base, "autograd across moves");
    is_int(count_entries(tmp_dir), 0, "no temporary file is left");
}

/* Every allocation and every file operation of a backward through a
 * move fails in turn. */
static void test_move_backward_faults(void) {
    sw_carrier *src = cpu_seq(6, SW_DTYPE_FLOAT32, 1, 1);
    sw_tensor *x = T(src, 0, "(2,3):(1,2)");
    sw_carrier *dst = file_seq(0, SW_DTYPE_FLOAT32, 0);
    sw_carrier *gc = file_seq(6, SW_DTYPE_FLOAT32, 10);
    sw_tensor *g = T(gc, 0, "(2,3):(1,2)");
    sw_tensor *y = NULL;
    sw_status st = sw_move(x, dst, &y);
    if (!expect_ok(st, "a move for the backward fault walks"))
        bail_out("setup");
    double want[6] = {10, 11, 12, 13, 14, 15};
    int64_t base = sw_debug_live_allocs();
    for (int io = 0; io < 2; ++io) {
        int bad = 0;
        int64_t n;
        for (n = 0; n < 1000 && bad < 3; ++n) {
            if (io)
                sw_debug_fail_io_after(n);
            else
                sw_debug_fail_alloc_after(n);
            st = sw_tensor_backward(y, g);
            sw_debug_fail_io_after(-1);
            sw_debug_fail_alloc_after(-1);
            int done = st == SW_OK;
            if (done) {
                if (!sw_tensor_grad(x) || !values_are(sw_tensor_grad(x), want))
                    bad++;
            } else if (st != (io ? SW_EOS : SW_ENOMEM) || sw_tensor_grad(x)) {
                diag("n=%lld: status %s (%s), or a gradient appeared",
                     (long long)n, S(st), sw_errmsg());
                bad++;
            }
            sw_clear_error();
            sw_tensor_set_grad(x, NULL);
            if (sw_debug_live_allocs() != base) {
                diag("n=%lld: leak", (long long)n);
                bad++;
                base = sw_debug_live_allocs();
            }
            if (count_entries(tmp_dir) != 0) {
                diag("n=%lld: %d files in TMPDIR", (long long)n,
                     count_entries(tmp_dir));
                bad++;
            }
            if (done)
                break;
        }
        ok(bad == 0 && n > 0,
           "backward through a move, %s failing in turn: clean (%lld runs)",
           io ? "file operations" : "allocations", (long long)n + 1);
    }
    sw_tensor_unref(y);
    sw_tensor_unref(g);
    sw_tensor_unref(x);
    sw_carrier_unref(src);
    sw_carrier_unref(dst);
    sw_carrier_unref(gc);
    is_int(count_entries(tmp_dir), 0, "no temporary file is left");
}

/* ------------------------------------------------------------- main */

static bool setup_dir(void) {
    const char *root = getenv("TMPDIR");
    snprintf(tmp_dir, sizeof tmp_dir, "%s/sw-interop-XXXXXX",
             root && *root ? root : "/tmp");
    if (!mkdtemp(tmp_dir))
        return false;
    return setenv("TMPDIR", tmp_dir, 1) == 0;
}

/* --------------------------------------------------- asynchronous moves */

static sw_carrier *file_new_f32(void) {
    sw_carrier *f = NULL;
    if (sw_file_new(NULL, SW_DTYPE_FLOAT32, 1, &f) != SW_OK)
        bail_out(sw_errmsg());
    return f;
}

static sw_tensor *flat_tensor(sw_carrier *c, int64_t n) {
    char lay[64];
    snprintf(lay, sizeof lay, "%lld:1", (long long)n);
    return T(c, 0, lay);
}

static sw_status noop_forward(sw_op *op, int32_t nargs, const sw_arg *args,
                              sw_tensor **out) {
    return sw_set_error(SW_ERUNTIME, "not a move");
}

static const sw_op_class noop_class = {
    .version = SW_OP_CLASS_VERSION,
    .name = "noop",
    .forward = noop_forward,
};

static void test_move_lowered(void) {
    int64_t base = sw_debug_live_allocs();
    sw_carrier *c = cpu_seq(3, SW_DTYPE_FLOAT32, 1, 1);
    sw_tensor *t = T(c, 0, "3:1");
    sw_carrier *d = cpu_seq(3, SW_DTYPE_FLOAT32, 0, 1);
    sw_op *op = NULL;
    if (sw_move_op_new(sw_move_elementwise(), &op) != SW_OK)
        bail_out(sw_errmsg());
    sw_tensor *r = SENT_TENSOR;
    sw_status st = sw_move_op_execute_lowered(op, NULL, d, &r);
    expect_fail(st, SW_ETYPE, "tensor must be a Tensor", "lowered NULL");
    ok(r == SENT_TENSOR, "a failed lowered move leaves *out alone");
    st = sw_move_op_execute_lowered(op, t, sw_tensor_carrier(t), &r);
    expect_fail(st, SW_EVALUE,
                "destination must not be the tensor's own carrier",
                "lowered into its own carrier");
    st = sw_move_op_check(op, t, sw_tensor_carrier(t));
    expect_fail(st, SW_EVALUE,
                "destination must not be the tensor's own carrier",
                "checking a move into its own carrier");
    st = sw_move_op_check(op, t, d);
    expect_ok(st, "checking a valid move");
    ok(!sw_carrier_is_released(c) && sw_carrier_version(d) == 0,
       "checking changes nothing");
    r = NULL;
    st = sw_move_op_execute_lowered(op, t, d, &r);
    if (expect_ok(st, "a lowered move")) {
        ok(sw_tensor_autograd_ctx(r) == NULL,
           "a lowered move records no autograd context");
        is_int(sw_op_ninputs(op), 0, "and saves no input");
        ok(cget(d, 2) == 3 && sw_carrier_is_released(c),
           "the values moved and the source is released");
    }
    sw_tensor_unref(r);
    sw_tensor *dummy = NULL;
    sw_op *noop = NULL;
    if (sw_op_new(&noop_class, NULL, &noop) == SW_OK) {
        st = sw_move_op_execute_lowered(noop, t, d, &dummy);
        expect_fail(st, SW_ETYPE, "operation must be a MoveOperation",
                    "lowered on another operation");
        st = sw_move_op_check(noop, t, d);
        expect_fail(st, SW_ETYPE, "operation must be a MoveOperation",
                    "checking with another operation");
        sw_op_unref(noop);
    }
    sw_op_unref(op);
    sw_tensor_unref(t);
    sw_carrier_unref(c);
    sw_carrier_unref(d);
    leak_check(base, "lowered moves");
}

static void test_move_async_small(void) {
    int64_t base = sw_debug_live_allocs();
    sw_carrier *c = cpu_seq(4, SW_DTYPE_FLOAT32, 1, 1);
    sw_tensor *t = T(c, 0, "4:1");
    sw_carrier *f = file_new_f32();
    sw_move_request *req = NULL;
    sw_status st = sw_move_async(t, f, &req);
    if (expect_ok(st, "a small move_async")) {
        ok(sw_move_request_done(req), "a small move is done at submission");
        is_int(sw_move_pending_count(), 0, "no worker was started");
        sw_tensor *a = NULL, *b = NULL;
        st = sw_move_request_wait(req, &a);
        expect_ok(st, "wait");
        st = sw_move_request_wait(req, &b);
        expect_ok(st, "a second wait");
        ok(a && a == b, "every wait returns the same result");
        ok(a && sw_tensor_carrier(a) == f && cget(f, 3) == 4,
           "the result is over the destination");
        ok(sw_carrier_is_released(c), "the source is released");
        ok(a && sw_tensor_autograd_ctx(a) != NULL &&
               sw_op_is_move(sw_tensor_autograd_ctx(a)),
           "the result records the move");
        st = sw_move_request_wait(req, NULL);
        expect_ok(st, "wait without an out-parameter");
        sw_tensor_unref(a);
        sw_tensor_unref(b);
    }
    sw_move_request_unref(req);
    sw_move_request_unref(NULL);
    ok(!sw_move_request_done(NULL), "a NULL request is not done");
    st = sw_move_request_wait(NULL, NULL);
    expect_fail(st, SW_ETYPE, "move request must not be NULL", "wait NULL");

    /* Validation failures come back directly, with no request. */
    req = (sw_move_request *)SENT_PTR;
    st = sw_move_async(NULL, f, &req);
    expect_fail(st, SW_ETYPE, "tensor must be a Tensor", "move_async NULL");
    st = sw_move_async(t, f, &req);
    expect_fail(st, SW_ERUNTIME, "tensor carrier is released",
                "move_async of a released source");
    sw_carrier *c2 = cpu_seq(4, SW_DTYPE_FLOAT32, 1, 1);
    sw_tensor *t2 = T(c2, 0, "4:1");
    st = sw_move_async(t2, NULL, &req);
    expect_fail(st, SW_ETYPE, "destination must be a Carrier instance",
                "move_async without a destination");
    ok(req == (sw_move_request *)SENT_PTR, "*out is left alone");
    ok(!sw_carrier_is_released(c2), "the source is kept");

    /* A copy failure after submission is the request's outcome. */
    sw_carrier *g = generic_seq(4, 0);
    sw_tensor *gt = T(g, 0, "4:1");
    sw_move_request *fr = NULL;
    sw_carrier *f2 = file_new_f32();
    sw_debug_fail_io_after(1);
    st = sw_move_async(t2, f2, &fr);
    sw_debug_fail_io_after(-1);
    if (expect_ok(st, "a move that fails after submission is submitted")) {
        ok(sw_move_request_done(fr), "and is done");
        sw_tensor *r = SENT_TENSOR;
        st = sw_move_request_wait(fr, &r);
        is_int(st, SW_EOS, "wait reports the I/O failure");
        ok(strstr(sw_errmsg(), "No space left") != NULL,
           "with the system's message");
        sw_clear_error();
        st = sw_move_request_wait(fr, &r);
        is_int(st, SW_EOS, "every wait reports it");
        sw_clear_error();
        ok(r == SENT_TENSOR, "and writes no result");
        ok(!sw_carrier_is_released(c2) && cget(c2, 3) == 4,
           "the source is live and unchanged");
        is_int(sw_carrier_version(f2), 0,
               "the destination version is kept (nothing was written)");
    }
    sw_move_request_unref(fr);
    sw_tensor_unref(gt);
    sw_carrier_unref(g);
    sw_carrier_unref(f2);
    sw_tensor_unref(t2);
    sw_carrier_unref(c2);
    sw_tensor_unref(t);
    sw_carrier_unref(c);
    sw_carrier_unref(f);
    leak_check(base, "small asynchronous moves");
}

static void test_move_async_worker(void) {
    int64_t base = sw_debug_live_allocs();
    int64_t n = (int64_t)1 << 19; /* 2 MiB of float32 */
    sw_carrier *c = cpu_seq(n, SW_DTYPE_FLOAT32, 0, 1);
    sw_tensor *t = flat_tensor(c, n);
    sw_carrier *f = file_new_f32();
    sw_debug_move_hold(1);
    sw_move_request *req = NULL;
    sw_status st = sw_move_async(t, f, &req);
    if (!expect_ok(st, "a 2 MiB move_async")) {
        sw_debug_move_hold(0);
        bail_out("cannot continue");
    }
    ok(!sw_move_request_done(req), "it is not done while the worker waits");
    is_int(sw_move_pending_count(), 1, "one worker runs");

    /* The participants refuse changes from other threads. */
    sw_value v = sw_value_f64(1);
    st = sw_carrier_set(c, 0, &v);
    expect_fail(st, SW_ERUNTIME,
                "Carrier is owned by a pending move and is not mutable",
                "writing the source");
    st = sw_carrier_set(f, 0, &v);
    expect_fail(st, SW_ERUNTIME,
                "Carrier is owned by a pending move and is not mutable",
                "writing the destination");
    st = sw_carrier_bump_version(c);
    expect_fail(st, SW_ERUNTIME,
                "Carrier is owned by a pending move and is not mutable",
                "bumping the source's version");
    st = sw_carrier_release_storage(c);
    expect_fail(st, SW_ERUNTIME,
                "Carrier is owned by a pending move and is not mutable",
                "releasing the source");
    st = sw_carrier_release_storage(f);
    expect_fail(st, SW_ERUNTIME,
                "Carrier is owned by a pending move and is not mutable",
                "releasing the destination");
    st = sw_file_resize(f, 3);
    expect_fail(st, SW_ERUNTIME,
                "Carrier is owned by a pending move and is not mutable",
                "resizing the destination");
    int64_t token = 0;
    st = sw_carrier_claim(c, &token);
    expect_fail(st, SW_ERUNTIME,
                "Carrier is owned by a pending move and is not mutable",
                "claiming the source");
    sw_carrier *other = file_new_f32();
    sw_tensor *r = SENT_TENSOR;
    st = sw_move(t, other, &r);
    expect_fail(st, SW_ERUNTIME, "tensor carrier is owned by a pending move",
                "moving the source again");
    sw_carrier *c3 = cpu_seq(4, SW_DTYPE_FLOAT32, 0, 1);
    sw_tensor *t3 = T(c3, 0, "4:1");
    st = sw_move(t3, f, &r);
    expect_fail(
        st, SW_ERUNTIME,
        "destination carrier must be mutable: it is owned by a pending move",
        "moving into the destination");
    sw_move_request *second = (sw_move_request *)SENT_PTR;
    st = sw_move_async(t, other, &second);
    expect_fail(st, SW_ERUNTIME, "tensor carrier is owned by a pending move",
                "move_async of the source again");
    ok(r == SENT_TENSOR && second == (sw_move_request *)SENT_PTR,
       "the refused moves wrote nothing");
    ok(cget(c, 5) == 5, "the source can still be read");

    sw_debug_move_hold(0);
    sw_tensor *a = NULL;
    st = sw_move_request_wait(req, &a);
    if (expect_ok(st, "wait for the worker")) {
        ok(sw_move_request_done(req), "the request is done");
        ok(sw_carrier_is_released(c), "the source is released at commit");
        is_int(sw_carrier_size(f), n, "the file has the cosize");
        is_int(sw_carrier_version(f), 0, "the destination version is 0");
        ok(cget(f, 0) == 0 && cget(f, n - 1) == (double)(n - 1),
           "the values arrived");
        ok(sw_tensor_autograd_ctx(a) &&
               sw_op_ninputs(sw_tensor_autograd_ctx(a)) == 1,
           "the result records the move with its input");
        st = sw_carrier_set(f, 0, &v);
        expect_ok(st, "the destination is writable again");
    }
    sw_tensor_unref(a);
    sw_move_request_unref(req);
    sw_move_wait_idle();
    is_int(sw_move_pending_count(), 0, "no worker is left");

    /* And back, dropping the request before it ends. */
    sw_carrier *d = NULL;
    if (sw_cpu_new(n, SW_DTYPE_FLOAT32, 1, 1, &d) != SW_OK)
        bail_out(sw_errmsg());
    sw_tensor *ft = flat_tensor(f, n);
    sw_debug_move_hold(1);
    req = NULL;
    st = sw_move_async(ft, d, &req);
    expect_ok(st, "FileBacked to CPU asynchronously");
    ok(!sw_move_request_done(req), "pending");
    sw_move_request_unref(req); /* neither waits nor cancels */
    sw_debug_move_hold(0);
    sw_move_wait_idle();
    ok(sw_carrier_is_released(f), "the dropped move still completed");
    const float *p = sw_cpu_data(d);
    ok(p && p[n - 1] == (float)(n - 1), "and delivered the values");
    sw_tensor_unref(ft);

    /* An I/O failure on the worker: the source stays. */
    sw_carrier *c4 = cpu_seq(n, SW_DTYPE_FLOAT32, 1, 1);
    sw_tensor *t4 = flat_tensor(c4, n);
    sw_carrier *f4 = file_new_f32();
    sw_debug_move_hold(1);
    req = NULL;
    st = sw_move_async(t4, f4, &req);
    expect_ok(st, "an asynchronous move that will fail");
    sw_debug_fail_io_after(1);
    sw_debug_move_hold(0);
    r = SENT_TENSOR;
    st = sw_move_request_wait(req, &r);
    sw_debug_fail_io_after(-1);
    is_int(st, SW_EOS, "the worker's I/O failure is the outcome");
    sw_clear_error();
    ok(r == SENT_TENSOR, "no result");
    ok(!sw_carrier_is_released(c4) && cget(c4, n - 1) == (double)n,
       "the source is live and unchanged");
    is_int(sw_carrier_version(c4), 0, "the source version is kept");
    is_int(sw_carrier_version(f4), 0,
           "the destination version is kept (nothing was written)");
    st = sw_carrier_set(c4, 0, &v);
    expect_ok(st, "the source is writable again");
    sw_move_request_unref(req);
    sw_move_wait_idle();

    sw_tensor_unref(t4);
    sw_carrier_unref(c4);
    sw_carrier_unref(f4);
    sw_tensor_unref(t3);
    sw_carrier_unref(c3);
    sw_carrier_unref(other);
    sw_carrier_unref(d);
    sw_tensor_unref(t);
    sw_carrier_unref(c);
    sw_carrier_unref(f);
    leak_check(base, "asynchronous moves on a worker");
    is_int(count_entries(tmp_dir), 0, "no temporary file is left");
}

typedef struct waiter_arg {
    sw_move_request *req;
    sw_tensor *result;
    sw_status st;
} waiter_arg;

static void *waiter(void *p) {
    waiter_arg *w = p;
    w->st = sw_move_request_wait(w->req, &w->result);
    return NULL;
}

static void test_move_async_concurrent_waits(void) {
    int64_t base = sw_debug_live_allocs();
    int64_t n = (int64_t)1 << 19;
    sw_carrier *c = cpu_seq(n, SW_DTYPE_FLOAT32, 0, 1);
    sw_tensor *t = flat_tensor(c, n);
    sw_carrier *f = file_new_f32();
    sw_debug_move_hold(1);
    sw_move_request *req = NULL;
    sw_status st = sw_move_async(t, f, &req);
    expect_ok(st, "submit for two waiters");
    waiter_arg w[2] = {{req, NULL, SW_EVALUE}, {req, NULL, SW_EVALUE}};
    pthread_t th[2];
    for (int i = 0; i < 2; ++i)
        pthread_create(&th[i], NULL, waiter, &w[i]);
    sw_debug_move_hold(0);
    for (int i = 0; i < 2; ++i)
        pthread_join(th[i], NULL);
    ok(w[0].st == SW_OK && w[1].st == SW_OK, "both waits succeed");
    ok(w[0].result && w[0].result == w[1].result,
       "both get the identical result");
    sw_tensor_unref(w[0].result);
    sw_tensor_unref(w[1].result);
    sw_move_request_unref(req);
    sw_move_wait_idle();
    sw_tensor_unref(t);
    sw_carrier_unref(c);
    sw_carrier_unref(f);
    leak_check(base, "concurrent waits");
}

/* ------------------------------------------- participants of a copy */

static int guard_checks;

/* Tries to release, write and move again the source it is copying (each
 * must fail: the source takes part in a move), then copies. */
static sw_status guarded_copy(sw_op *op, sw_tensor *tensor,
                              sw_carrier *destination, sw_tensor *output,
                              int64_t element_count) {
    sw_carrier *src = sw_tensor_carrier(tensor);
    sw_value v = sw_value_f64(9.0);
    expect_fail(sw_carrier_release_storage(src), SW_ERUNTIME,
                "Carrier is owned by a pending move and is not mutable",
                "a hook releasing its source");
    expect_fail(sw_carrier_set(src, 0, &v), SW_ERUNTIME,
                "Carrier is owned by a pending move and is not mutable",
                "a hook writing its source");
    sw_carrier *other = generic_seq(4, 0);
    sw_tensor *again = NULL;
    expect_fail(sw_move(tensor, other, &again), SW_ERUNTIME,
                "tensor carrier is owned by a pending move",
                "a hook moving its source again");
    sw_carrier_unref(other);
    guard_checks++;
    return sw_move_elementwise()->copy(op, tensor, destination, output,
                                       element_count);
}

/* Copies, then releases its destination. */
static sw_status dest_releasing_copy(sw_op *op, sw_tensor *tensor,
                                     sw_carrier *destination, sw_tensor *output,
                                     int64_t element_count) {
    sw_status st = sw_move_elementwise()->copy(op, tensor, destination, output,
                                               element_count);
    return st ? st : sw_carrier_release_storage(destination);
}

static const sw_move_class guarded_class = {
    SW_MOVE_CLASS_VERSION, "GuardedMove", {NULL, NULL},
    {NULL, NULL},          guarded_copy,  NULL};
static const sw_move_class dest_releasing_class = {
    SW_MOVE_CLASS_VERSION, "DestReleasingMove", {NULL, NULL},
    {NULL, NULL},          dest_releasing_copy, NULL};

static void test_move_participants(void) {
    int64_t base = sw_debug_live_allocs();
    sw_move_key k = sw_move_key_generic();
    const sw_move_class *out = NULL;
    for (int round = 0; round < 2; ++round) {
        const sw_move_class *cls =
            round ? &dest_releasing_class : &guarded_class;
        if (!expect_ok(sw_move_register(k, k, cls), "registering a hook"))
            return;
        sw_carrier *src = generic_seq(4, 1), *dst = generic_seq(4, 0);
        sw_tensor *t = T(src, 0, "4:1"), *m = NULL;
        sw_status st = sw_move(t, dst, &m);
        if (!round) {
            expect_ok(st, "a move whose hook met the guards");
            is_int(guard_checks, 1, "the hook ran once");
            ok(sw_carrier_is_released(src), "the source went at the commit");
            is_int(sw_carrier_version(dst), 4, "one write per element");
        } else {
            expect_fail(st, SW_ERUNTIME, "destination carrier is released",
                        "a move whose hook released its destination");
            ok(!sw_carrier_is_released(src) && sw_carrier_version(src) == 0,
               "the source is kept, unchanged");
        }
        sw_value v = sw_value_f64(2.0);
        if (!round)
            expect_ok(sw_carrier_set(dst, 0, &v), "the destination is free");
        else
            expect_ok(sw_carrier_set(src, 0, &v), "the source is free");
        sw_tensor_unref(m);
        sw_tensor_unref(t);
        sw_carrier_unref(src);
        sw_carrier_unref(dst);
        expect_ok(sw_move_unregister(k, k, &out), "unregistering the hook");
    }
    leak_check(base, "hooks and move participants");
}

int main(void) {
    if (!ok(setup_dir(), "a private TMPDIR"))
        return done_testing();
    int64_t base = sw_debug_live_allocs();
    test_dlpack_fields();
    test_dlpack_errors();
    test_dlpack_read_only();
    test_dlpack_request();
    test_dlpack_custom_carrier();
    test_dlpack_owner();
    test_dlpack_route();
    test_dlpack_lifetime();
    test_dlpack_autograd();
    test_dlpack_faults();
    test_move_bulk();
    test_move_fallback();
    test_move_validation();
    test_move_io_faults();
    test_move_faults();
    test_registry();
    test_move_autograd();
    test_move_backward_faults();
    test_move_lowered();
    test_move_async_small();
    test_move_async_worker();
    test_move_async_concurrent_waits();
    test_move_participants();
    is_int(sw_debug_live_allocs(), base, "no allocation is live at the end");
    is_int(count_entries(tmp_dir), 0, "no temporary file is left");
    ok(rmdir(tmp_dir) == 0, "the private TMPDIR is removed (it was empty)");
    return done_testing();
}
