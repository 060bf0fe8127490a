/*
 * Unit tests of the FileBacked carrier: temporary and named files, their
 * lifetime on disk, resizing, element and bulk access with the CPU
 * conversion rules, the I/O fault hook and the allocation fault walk.
 *
 * The contract is the sw_file_* part of include/strideweave/carrier.h with
 * the Python reference (the Python API reference, section 9).
 * The program points TMPDIR at a private directory of its own, so that it
 * can count the temporary files the library leaves behind (there must be
 * none) without racing other programs; named files go to another private
 * directory. Both are removed at the end, and must be empty by then.
 */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "strideweave/base.h"
#include "strideweave/carrier.h"
#include "strideweave/layout.h"
#include "strideweave/tensor.h"
#include "check.h"
#include "tap.h"

/* ------------------------------------------------------------ helpers */

static max_align_t sentinel_storage[1];
#define SENT_CARRIER ((sw_carrier *)(void *)&sentinel_storage[0])
#define SENT_INT64 INT64_C(-777777)

static char tmp_dir[512];   /* TMPDIR while the program runs */
static char named_dir[512]; /* where named files go */

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

/*
 * Checks an OS failure: SW_EOS, the errno behind it, and a message that
 * carries the system's text for that errno.
 */
static void expect_os_fail(sw_status st, int err, const char *name) {
    is_int(st, SW_EOS, "%s fails with SW_EOS (got %s)", name, S(st));
    if (st == SW_EOS) {
        is_int(sw_errno(), err, "%s: sw_errno is %s", name, strerror(err));
        ok(strstr(sw_errmsg(), strerror(err)) != NULL,
           "%s: the message carries '%s' ('%s')", name, strerror(err),
           sw_errmsg());
    }
    sw_clear_error();
}

static bool exists(const char *path) {
    return path && access(path, F_OK) == 0;
}

/* The file's size in bytes, -1 if it cannot be seen. */
static int64_t disk_size(const char *path) {
    struct stat sb;
    if (!path || stat(path, &sb) != 0)
        return -1;
    return (int64_t)sb.st_size;
}

/* Reads n raw bytes at offset off of the file at path; false on failure. */
static bool disk_read(const char *path, int64_t off, void *buf, size_t n) {
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return false;
    ssize_t k = pread(fd, buf, n, (off_t)off);
    close(fd);
    return k == (ssize_t)n;
}

/* The number of entries (other than . and ..) in a directory. */
static int count_entries(const char *dir) {
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            n++;
    closedir(d);
    return n;
}

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

static bool same_double(double a, double b) {
    if (isnan(a) || isnan(b))
        return isnan(a) && isnan(b);
    return a == b && signbit(a) == signbit(b);
}

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

static void expect_i64_at(sw_carrier *c, int64_t i, int64_t want,
                          const char *name) {
    sw_value v = sentinel_value();
    sw_status st = sw_carrier_get(c, i, &v);
    if (!expect_ok(st, name))
        return;
    if (!ok(v.kind == SW_VALUE_I64 && v.as.i == want, "%s reads %lld", name,
            (long long)want))
        diag("got kind %d, value %lld", (int)v.kind, (long long)v.as.i);
    sw_value_clear(&v);
}

/* A named file's path in the private directory. */
static const char *named(const char *name) {
    static char buf[4][1024];
    static int next;
    next = (next + 1) % 4;
    snprintf(buf[next], sizeof buf[next], "%s/%s", named_dir, name);
    return buf[next];
}

/* ------------------------------------------------------ temporary files */

static void test_temporary(void) {
    int64_t base = sw_debug_live_allocs();
    sw_carrier *c = NULL;
    sw_status st = sw_file_new(NULL, SW_DTYPE_FLOATING, 1, &c);
    if (!expect_ok(st, "sw_file_new(NULL, Floating)"))
        return;
    ok(sw_carrier_is_file(c), "a FileBacked carrier");
    ok(!sw_carrier_is_cpu(c) && !sw_carrier_is_generic(c),
       "neither CPU nor Generic");
    is_str(sw_carrier_get_class(c)->name, "FileBacked", "the class name");
    ok(sw_file_is_temporary(c), "a private temporary");
    const char *path = sw_file_path(c);
    ok(path != NULL && path[0] == '/', "the path is absolute ('%s')",
       path ? path : "(null)");
    char saved[1024];
    snprintf(saved, sizeof saved, "%s", path ? path : "");
    size_t dl = strlen(tmp_dir);
    ok(strncmp(saved, tmp_dir, dl) == 0 &&
           strncmp(saved + dl, "/strideweave-", 13) == 0,
       "the path names TMPDIR and strideweave-<pid>-<n> ('%s')", saved);
    ok(!exists(saved), "but the file has no name in the file system");
    is_int(count_entries(tmp_dir), 0, "nothing in TMPDIR");
    is_int(sw_carrier_size(c), 0, "a new FileBacked carrier has size 0");
    is_int(sw_carrier_dtype(c), SW_DTYPE_FLOATING, "dtype Floating");
    ok(sw_carrier_is_mutable(c), "mutable");
    is_int(sw_carrier_version(c), 0, "version 0");
    sw_value v = sentinel_value();
    st = sw_carrier_get(c, 0, &v);
    expect_fail(st, SW_EINDEX, "Carrier index out of range",
                "get(0) of an empty file");
    ok(value_untouched(&v), "and leaves its out-parameter alone");

    /* Grow: zero-filled doubles. */
    st = sw_file_resize(c, 4);
    expect_ok(st, "resize to 4");
    is_int(sw_carrier_size(c), 4, "size 4");
    for (int i = 0; i < 4; i++)
        expect_f64_at(c, i, 0.0, "a grown element");
    is_int(sw_carrier_version(c), 0, "resizing is not a write");

    st = set_f(c, 0, 0.1);
    expect_ok(st, "set 0.1");
    expect_f64_at(c, 0, 0.1, "Floating keeps doubles exactly");
    st = set_i(c, 1, 3);
    expect_ok(st, "set integer 3");
    expect_f64_at(c, 1, 3.0, "an integer reads back as 3.0");
    st = set_f(c, 2, 1e300);
    expect_ok(st, "set 1e300");
    expect_f64_at(c, 2, 1e300, "1e300 is a double");
    st = set_f(c, 3, 2.0);
    expect_ok(st, "set 2.0");
    st = set_none(c, 3);
    expect_ok(st, "set NONE");
    expect_f64_at(c, 3, 0.0, "NONE writes 0");
    is_int(sw_carrier_version(c), 5, "one bump per write");
    st = set_f(c, 4, 1.0);
    expect_fail(st, SW_EINDEX, "Carrier index out of range", "set(4) of 4");
    st = set_f(c, -1, 1.0);
    expect_fail(st, SW_EINDEX, "Carrier index out of range", "set(-1)");

    /* Shrink, then grow again: the dropped part comes back as zeros. */
    st = sw_file_resize(c, 2);
    expect_ok(st, "resize to 2");
    is_int(sw_carrier_size(c), 2, "size 2");
    expect_f64_at(c, 1, 3.0, "a kept element keeps its value");
    st = sw_carrier_get(c, 2, &v);
    expect_fail(st, SW_EINDEX, "Carrier index out of range",
                "get(2) after shrinking");
    st = sw_file_resize(c, 3);
    expect_ok(st, "resize to 3");
    expect_f64_at(c, 2, 0.0, "an element shrunk away and regrown is zero");
    st = sw_file_resize(c, -1);
    expect_fail(st, SW_EVALUE,
                "FileBacked allocation size must be non-negative",
                "resize(-1)");
    is_int(sw_carrier_size(c), 3, "a refused resize keeps the size");
    st = sw_file_resize(c, 0);
    expect_ok(st, "resize to 0");
    is_int(sw_carrier_size(c), 0, "size 0");
    st = sw_file_resize(c, 2);
    expect_ok(st, "resize to 2 again");

    /* Release closes the file; the path stays readable. */
    int64_t version = sw_carrier_version(c);
    st = sw_carrier_release_storage(c);
    expect_ok(st, "release");
    ok(sw_carrier_is_released(c), "released");
    is_int(count_entries(tmp_dir), 0, "TMPDIR is still empty");
    is_str(sw_file_path(c), saved, "the path is still readable");
    is_int(sw_carrier_size(c), 0, "size 0 after release");
    is_int(sw_carrier_version(c), version, "release keeps the version");
    st = sw_carrier_get(c, 0, &v);
    expect_fail(st, SW_ERUNTIME, "Carrier is released", "get after release");
    ok(value_untouched(&v), "and leaves its out-parameter alone");
    st = set_f(c, 0, 1.0);
    expect_fail(st, SW_ERUNTIME, "Carrier is released", "set after release");
    st = sw_file_resize(c, 4);
    expect_fail(st, SW_ERUNTIME, "Carrier is released", "resize after release");
    double buf[2] = {-1.0, -1.0};
    st = sw_file_read(c, 0, 1, buf);
    expect_fail(st, SW_ERUNTIME, "Carrier is released", "read after release");
    ok(buf[0] == -1.0, "and leaves the buffer alone");
    st = sw_file_write(c, 0, 1, buf);
    expect_fail(st, SW_ERUNTIME, "Carrier is released", "write after release");
    st = sw_carrier_release_storage(c);
    expect_ok(st, "a second release");
    sw_carrier_unref(c);

    /* Destroy without release closes it too. */
    st = sw_file_new(NULL, SW_DTYPE_INT32, 1, &c);
    if (expect_ok(st, "sw_file_new(NULL, Int32)")) {
        st = sw_file_resize(c, 3);
        expect_ok(st, "resize to 3");
        expect_ok(set_i(c, 2, 9), "set 9");
        sw_carrier_retain(c);
        sw_carrier_unref(c);
        expect_i64_at(c, 2, 9, "dropping one of two references keeps it");
        sw_carrier_unref(c);
    }
    /* Two temporaries get two files. */
    sw_carrier *a = NULL, *b = NULL;
    st = sw_file_new(NULL, SW_DTYPE_FLOATING, 1, &a);
    sw_status st2 = sw_file_new(NULL, SW_DTYPE_FLOATING, 1, &b);
    if (expect_ok(st, "a first temporary") &&
        expect_ok(st2, "a second temporary")) {
        ok(strcmp(sw_file_path(a), sw_file_path(b)) != 0,
           "two temporaries have two paths");
        expect_ok(sw_file_resize(a, 1), "resize the first");
        expect_ok(set_f(a, 0, 1.0), "write the first");
        expect_ok(sw_file_resize(b, 2), "resize the second");
        expect_f64_at(b, 0, 0.0, "the second is a file of its own");
        is_int(sw_carrier_size(a), 1, "and the first keeps its size");
    }
    if (!st)
        sw_carrier_unref(a);
    if (!st2)
        sw_carrier_unref(b);
    is_int(count_entries(tmp_dir), 0, "nothing in TMPDIR");
    leak_check(base, "temporary files");
}

/* ---------------------------------------------------------- named files */

static void test_named(void) {
    int64_t base = sw_debug_live_allocs();
    const char *path = named("a.bin");
    char saved[1024];
    snprintf(saved, sizeof saved, "%s", path);
    sw_carrier *c = NULL;
    sw_status st = sw_file_new(saved, SW_DTYPE_INT32, 1, &c);
    if (!expect_ok(st, "sw_file_new(named, Int32)"))
        return;
    ok(exists(saved), "the named file exists");
    ok(!sw_file_is_temporary(c), "a named file is not temporary");
    is_str(sw_file_path(c), saved, "sw_file_path is the name given");
    is_int(sw_carrier_size(c), 0, "size 0");
    is_int(count_entries(tmp_dir), 0, "nothing in TMPDIR");
    st = sw_file_resize(c, 2);
    expect_ok(st, "resize to 2");
    st = set_i(c, 0, 7);
    expect_ok(st, "set 7");
    st = set_i(c, 1, -8);
    expect_ok(st, "set -8");
    is_int(disk_size(saved), 8, "two int32 on disk");
    int32_t raw0[2] = {0, 0};
    ok(disk_read(saved, 0, raw0, sizeof raw0) && raw0[0] == 7 && raw0[1] == -8,
       "native int32 at bytes 0 and 4 of the file");

    /* Exclusive creation. */
    sw_carrier *d = SENT_CARRIER;
    st = sw_file_new(saved, SW_DTYPE_INT32, 1, &d);
    expect_os_fail(st, EEXIST, "creating an existing name");
    ok(d == SENT_CARRIER, "and leaves its out-parameter alone");
    is_int(disk_size(saved), 8, "the existing file was not truncated");
    expect_i64_at(c, 1, -8, "and its carrier still reads -8");

    FILE *fp = fopen(named("other.bin"), "wb");
    if (ok(fp != NULL, "make a file of our own")) {
        fputs("hello", fp);
        fclose(fp);
        st = sw_file_new(named("other.bin"), SW_DTYPE_FLOATING, 1, &d);
        expect_os_fail(st, EEXIST, "creating over a file of ours");
        ok(d == SENT_CARRIER, "and leaves its out-parameter alone");
        char text[8] = "";
        ok(disk_read(named("other.bin"), 0, text, 5) &&
               memcmp(text, "hello", 5) == 0 &&
               disk_size(named("other.bin")) == 5,
           "our file is untouched");
        unlink(named("other.bin"));
    }
    st = sw_file_new(named("missing/x.bin"), SW_DTYPE_FLOATING, 1, &d);
    expect_os_fail(st, ENOENT, "creating in a missing directory");
    ok(d == SENT_CARRIER, "and leaves its out-parameter alone");

    /* Release and destroy keep a named file with its contents. */
    st = sw_carrier_release_storage(c);
    expect_ok(st, "release");
    ok(exists(saved), "release keeps a named file");
    int32_t raw[2] = {0, 0};
    ok(disk_read(saved, 0, raw, sizeof raw) && raw[0] == 7 && raw[1] == -8,
       "with its values as native int32");
    is_int(sw_carrier_size(c), 0, "a released named file has size 0");
    sw_carrier_unref(c);
    ok(exists(saved), "destroy keeps a named file");
    is_int(disk_size(saved), 8, "with its size");

    /* The name is free again only once the file is gone. */
    st = sw_file_new(saved, SW_DTYPE_INT32, 1, &d);
    expect_os_fail(st, EEXIST, "creating the kept name again");
    unlink(saved);
    st = sw_file_new(saved, SW_DTYPE_FLOAT32, 0, &c);
    if (expect_ok(st, "creating the name after unlinking it")) {
        is_int(sw_carrier_size(c), 0, "a fresh empty file");
        ok(!sw_carrier_is_mutable(c), "immutable as asked");
        sw_carrier_unref(c);
    }
    unlink(saved);
    is_int(count_entries(named_dir), 0, "the named directory is clean");
    leak_check(base, "named files");
}

/* --------------------------------------------------------------- dtypes */

static void test_dtypes(void) {
    int64_t base = sw_debug_live_allocs();
    static const sw_dtype bad[] = {SW_DTYPE_ANY, SW_DTYPE_BOOL,
                                   (sw_dtype)SW_DTYPE_COUNT};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        char name[64];
        snprintf(name, sizeof name, "sw_file_new with dtype %d", (int)bad[k]);
        sw_carrier *c = SENT_CARRIER;
        sw_status st = sw_file_new(NULL, bad[k], 1, &c);
        expect_fail(st, SW_EVALUE,
                    "FileBacked dtype must be DType.Floating, DType.Float32, "
                    "or DType.Int32",
                    name);
        ok(c == SENT_CARRIER, "%s leaves its out-parameter alone", name);
        st = sw_file_new(named("bad.bin"), bad[k], 1, &c);
        expect_fail(st, SW_EVALUE,
                    "FileBacked dtype must be DType.Floating, DType.Float32, "
                    "or DType.Int32",
                    name);
        ok(!exists(named("bad.bin")), "%s creates no named file", name);
    }
    is_int(count_entries(tmp_dir), 0, "refused dtypes create no temporary");

    /* Float32. */
    sw_carrier *c = NULL;
    sw_status st = sw_file_new(named("f32.bin"), SW_DTYPE_FLOAT32, 1, &c);
    if (expect_ok(st, "sw_file_new(named, Float32)")) {
        st = sw_file_resize(c, 4);
        expect_ok(st, "resize to 4");
        is_int(disk_size(sw_file_path(c)), 16, "4 floats on disk");
        st = set_f(c, 0, 0.1);
        expect_ok(st, "Float32 set 0.1");
        expect_f64_at(c, 0, (double)0.1f, "0.1 reads back float32-rounded");
        float rf = 0.0f;
        ok(disk_read(sw_file_path(c), 0, &rf, sizeof rf) && rf == 0.1f,
           "a native float on disk");
        st = set_i(c, 1, 16777217);
        expect_ok(st, "Float32 set 2^24+1");
        expect_f64_at(c, 1, 16777216.0, "2^24+1 rounds to float32");
        st = set_f(c, 2, 5.0);
        expect_ok(st, "Float32 set 5.0");
        st = set_none(c, 2);
        expect_ok(st, "Float32 set NONE");
        expect_f64_at(c, 2, 0.0, "NONE writes 0");
        st = set_f(c, 3, -1e300);
        expect_ok(st, "Float32 set -1e300");
        expect_f64_at(c, 3, -INFINITY, "-1e300 becomes -inf");
        is_int(sw_carrier_version(c), 5, "one bump per write");
        sw_carrier_unref(c);
        unlink(named("f32.bin"));
    }

    /* Int32. */
    st = sw_file_new(named("i32.bin"), SW_DTYPE_INT32, 1, &c);
    if (expect_ok(st, "sw_file_new(named, Int32)")) {
        st = sw_file_resize(c, 3);
        expect_ok(st, "resize to 3");
        is_int(disk_size(sw_file_path(c)), 12, "3 int32 on disk");
        st = set_i(c, 0, INT32_MIN);
        expect_ok(st, "Int32 set INT32_MIN");
        expect_i64_at(c, 0, INT32_MIN, "INT32_MIN reads back as an integer");
        st = set_i(c, 1, INT32_MAX);
        expect_ok(st, "Int32 set INT32_MAX");
        expect_i64_at(c, 1, INT32_MAX, "INT32_MAX reads back");
        int32_t ri = 0;
        ok(disk_read(sw_file_path(c), 4, &ri, sizeof ri) && ri == INT32_MAX,
           "a native int32 on disk");
        int64_t version = sw_carrier_version(c);
        st = set_f(c, 1, 1.0);
        is_int(st, SW_ETYPE, "Int32 set of a double fails with SW_ETYPE");
        ok(strlen(sw_errmsg()) > 0, "with a message ('%s')", sw_errmsg());
        sw_clear_error();
        st = set_i(c, 1, (int64_t)INT32_MAX + 1);
        is_int(st, SW_EOVERFLOW, "Int32 set of 2^31 fails with SW_EOVERFLOW");
        ok(strlen(sw_errmsg()) > 0, "with a message ('%s')", sw_errmsg());
        sw_clear_error();
        st = set_i(c, 1, (int64_t)INT32_MIN - 1);
        is_int(st, SW_EOVERFLOW, "Int32 set of -2^31-1 fails");
        sw_clear_error();
        expect_i64_at(c, 1, INT32_MAX, "the refused values left the element");
        is_int(sw_carrier_version(c), version, "and the version");
        st = set_none(c, 0);
        expect_ok(st, "Int32 set NONE");
        expect_i64_at(c, 0, 0, "NONE writes 0");
        sw_carrier_unref(c);
        unlink(named("i32.bin"));
    }

    /* Host values are not numbers. */
    st = sw_file_new(NULL, SW_DTYPE_FLOATING, 1, &c);
    if (expect_ok(st, "sw_file_new(NULL, Floating)")) {
        st = sw_file_resize(c, 1);
        expect_ok(st, "resize to 1");
        int object;
        static const sw_host_ops ops = {.version = SW_HOST_OPS_VERSION};
        sw_value h;
        memset(&h, 0, sizeof h);
        h.kind = SW_VALUE_HOST;
        h.as.host = &object;
        h.ops = &ops;
        st = sw_carrier_set(c, 0, &h);
        is_int(st, SW_ETYPE, "a host value fails with SW_ETYPE");
        sw_clear_error();
        is_int(sw_carrier_version(c), 0, "and does not bump");
        sw_carrier_unref(c);
    }
    is_int(count_entries(tmp_dir), 0, "no temporary left");
    leak_check(base, "FileBacked dtypes");
}

/* ----------------------------------------------------------------- bulk */

static void test_bulk(void) {
    int64_t base = sw_debug_live_allocs();
    sw_carrier *c = NULL;
    sw_status st = sw_file_new(NULL, SW_DTYPE_FLOATING, 1, &c);
    if (!expect_ok(st, "sw_file_new(NULL, Floating)"))
        return;
    st = sw_file_resize(c, 5);
    expect_ok(st, "resize to 5");
    const double w[3] = {1.5, -2.25, 1e-300};
    int64_t version = sw_carrier_version(c);
    st = sw_file_write(c, 1, 3, w);
    expect_ok(st, "write 3 doubles at 1");
    ok(sw_carrier_version(c) > version, "a bulk write changes the version");
    is_int(sw_carrier_version(c), version + 1, "by one, as one write");
    expect_f64_at(c, 0, 0.0, "element 0 untouched");
    expect_f64_at(c, 1, 1.5, "element 1 written");
    expect_f64_at(c, 3, 1e-300, "element 3 written");
    expect_f64_at(c, 4, 0.0, "element 4 untouched");
    double r[5] = {9, 9, 9, 9, 9};
    st = sw_file_read(c, 0, 5, r);
    expect_ok(st, "read 5 doubles");
    ok(r[0] == 0.0 && r[1] == 1.5 && r[2] == -2.25 && r[3] == 1e-300 &&
           r[4] == 0.0,
       "the bulk read sees every element");
    version = sw_carrier_version(c);
    st = sw_file_read(c, 2, 2, r);
    expect_ok(st, "read 2 at 2");
    ok(r[0] == -2.25 && r[1] == 1e-300 && r[2] == -2.25,
       "a partial read fills only its part");
    is_int(sw_carrier_version(c), version, "a read does not bump");

    static const struct {
        int64_t i, n;
    } bad[] = {{3, 3}, {5, 1},         {-1, 1},       {0, -1},
               {0, 6}, {INT64_MAX, 1}, {1, INT64_MAX}};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        char name[96];
        double rb[8] = {7, 7, 7, 7, 7, 7, 7, 7};
        snprintf(name, sizeof name, "read(%lld, %lld) of 5",
                 (long long)bad[k].i, (long long)bad[k].n);
        st = sw_file_read(c, bad[k].i, bad[k].n, rb);
        expect_fail(st, SW_EINDEX, "Carrier index out of range", name);
        ok(rb[0] == 7 && rb[7] == 7, "%s leaves the buffer alone", name);
        snprintf(name, sizeof name, "write(%lld, %lld) of 5",
                 (long long)bad[k].i, (long long)bad[k].n);
        version = sw_carrier_version(c);
        st = sw_file_write(c, bad[k].i, bad[k].n, rb);
        expect_fail(st, SW_EINDEX, "Carrier index out of range", name);
        is_int(sw_carrier_version(c), version, "%s does not bump", name);
    }
    is_int(sw_carrier_size(c), 5, "the refused writes kept the size");
    st = sw_file_read(c, 5, 0, r);
    expect_ok(st, "an empty read at the end");
    st = sw_file_write(c, 0, 0, r);
    expect_ok(st, "an empty write");

    /* Owned: writes refused, reads allowed. */
    int64_t tok = 0;
    if (expect_ok(sw_carrier_claim(c, &tok), "claim")) {
        st = sw_file_write(c, 0, 1, w);
        expect_fail(st, SW_ERUNTIME, "Carrier is not mutable",
                    "a bulk write into an owned file");
        st = set_f(c, 0, 1.0);
        expect_fail(st, SW_ERUNTIME, "Carrier is not mutable",
                    "a write into an owned file");
        st = sw_file_read(c, 0, 1, r);
        expect_ok(st, "a bulk read of an owned file");
        expect_ok(sw_carrier_relinquish(c, tok), "relinquish");
    }
    sw_carrier_unref(c);

    /* Float32 and Int32 transfer native elements. */
    st = sw_file_new(NULL, SW_DTYPE_FLOAT32, 1, &c);
    if (expect_ok(st, "sw_file_new(NULL, Float32)")) {
        st = sw_file_resize(c, 3);
        expect_ok(st, "resize to 3");
        const float wf[3] = {0.5f, 0.1f, -3.0f};
        st = sw_file_write(c, 0, 3, wf);
        expect_ok(st, "write 3 floats");
        expect_f64_at(c, 1, (double)0.1f, "a float written in bulk");
        float rf[3] = {0, 0, 0};
        st = sw_file_read(c, 0, 3, rf);
        expect_ok(st, "read 3 floats");
        ok(memcmp(rf, wf, sizeof wf) == 0, "the floats read back");
        is_int(sw_carrier_size(c), 3, "3 floats in the file");
        sw_carrier_unref(c);
    }
    st = sw_file_new(NULL, SW_DTYPE_INT32, 1, &c);
    if (expect_ok(st, "sw_file_new(NULL, Int32)")) {
        st = sw_file_resize(c, 2);
        expect_ok(st, "resize to 2");
        const int32_t wi[2] = {INT32_MIN, 12345};
        st = sw_file_write(c, 0, 2, wi);
        expect_ok(st, "write 2 int32");
        expect_i64_at(c, 0, INT32_MIN, "an int32 written in bulk");
        int32_t ri[2] = {0, 0};
        st = sw_file_read(c, 0, 2, ri);
        expect_ok(st, "read 2 int32");
        ok(ri[0] == INT32_MIN && ri[1] == 12345, "the int32 read back");
        sw_carrier_unref(c);
    }

    /* Immutable. */
    st = sw_file_new(NULL, SW_DTYPE_FLOATING, 0, &c);
    if (expect_ok(st, "sw_file_new(NULL, Floating, immutable)")) {
        ok(!sw_carrier_is_mutable(c), "not mutable");
        st = sw_file_resize(c, 2);
        expect_ok(st, "resize an immutable file (allocation, not a write)");
        st = set_f(c, 0, 1.0);
        expect_fail(st, SW_ERUNTIME, "Carrier is not mutable",
                    "a write into an immutable file");
        st = sw_file_write(c, 0, 1, w);
        expect_fail(st, SW_ERUNTIME, "Carrier is not mutable",
                    "a bulk write into an immutable file");
        expect_f64_at(c, 0, 0.0, "the element is unchanged");
        st = sw_file_read(c, 0, 2, r);
        expect_ok(st, "a bulk read of an immutable file");
        sw_carrier_unref(c);
    }

    /* The sw_file_* functions refuse other carriers. */
    sw_carrier *cpu = NULL;
    if (expect_ok(sw_cpu_new(2, SW_DTYPE_FLOAT32, 1, 0, &cpu), "a CPU")) {
        ok(!sw_carrier_is_file(cpu), "a CPU carrier is not FileBacked");
        ok(sw_file_path(cpu) == NULL, "and has no path");
        ok(!sw_file_is_temporary(cpu), "nor a temporary");
        st = sw_file_resize(cpu, 4);
        is_int(st, SW_ETYPE, "sw_file_resize of a CPU carrier: SW_ETYPE");
        sw_clear_error();
        is_int(sw_carrier_size(cpu), 2, "and its size is unchanged");
        st = sw_file_read(cpu, 0, 1, r);
        is_int(st, SW_ETYPE, "sw_file_read of a CPU carrier: SW_ETYPE");
        sw_clear_error();
        st = sw_file_write(cpu, 0, 1, r);
        is_int(st, SW_ETYPE, "sw_file_write of a CPU carrier: SW_ETYPE");
        sw_clear_error();
        sw_carrier_unref(cpu);
    }
    is_int(count_entries(tmp_dir), 0, "no temporary left");
    leak_check(base, "bulk transfer");
}

/* ----------------------------------------------------- allocate/new_like */

static void test_like(void) {
    int64_t base = sw_debug_live_allocs();
    sw_carrier *c = NULL;
    sw_status st = sw_file_new(NULL, SW_DTYPE_FLOAT32, 1, &c);
    if (!expect_ok(st, "sw_file_new(NULL, Float32)"))
        return;
    sw_carrier *r = NULL;
    st = sw_carrier_allocate_like(c, 3, 1, (sw_dtype)SW_DTYPE_COUNT, 0, &r);
    if (expect_ok(st, "allocate_like(3)")) {
        ok(sw_carrier_is_file(r), "a FileBacked carrier");
        ok(sw_file_is_temporary(r), "a temporary");
        is_int(sw_carrier_dtype(r), SW_DTYPE_FLOAT32, "of the own dtype");
        is_int(sw_carrier_size(r), 3, "of 3 elements");
        expect_f64_at(r, 2, 0.0, "zero-filled");
        ok(sw_carrier_is_mutable(r), "mutable");
        size_t dl = strlen(tmp_dir);
        ok(strncmp(sw_file_path(r), tmp_dir, dl) == 0 &&
               sw_file_path(r)[dl] == '/',
           "in the source's temporary directory");
        is_int(count_entries(tmp_dir), 0, "without a name there");
        sw_carrier_unref(r);
    }
    st = sw_carrier_allocate_like(c, 2, 0, SW_DTYPE_INT32, 0, &r);
    if (expect_ok(st, "allocate_like(2, Int32, immutable)")) {
        is_int(sw_carrier_dtype(r), SW_DTYPE_INT32, "of the asked dtype");
        ok(!sw_carrier_is_mutable(r), "immutable");
        is_int(sw_carrier_size(r), 2, "of 2 elements");
        sw_carrier_unref(r);
    }
    r = SENT_CARRIER;
    st = sw_carrier_allocate_like(c, -1, 1, (sw_dtype)SW_DTYPE_COUNT, 0, &r);
    expect_fail(st, SW_EVALUE,
                "FileBacked allocation size must be non-negative",
                "allocate_like(-1)");
    ok(r == SENT_CARRIER, "and leaves its out-parameter");
    st = sw_carrier_allocate_like(c, 1, 1, SW_DTYPE_ANY, 0, &r);
    expect_fail(st, SW_EVALUE,
                "FileBacked dtype must be DType.Floating, DType.Float32, or "
                "DType.Int32",
                "allocate_like(Any)");
    ok(r == SENT_CARRIER, "and leaves its out-parameter");
    is_int(count_entries(tmp_dir), 0, "the refusals left no file");

    sw_value vals[3];
    vals[0] = sw_value_f64(1.5);
    memset(&vals[1], 0, sizeof vals[1]);
    vals[1].kind = SW_VALUE_NONE;
    vals[2] = sw_value_i64(2);
    st = sw_carrier_new_like(c, 3, vals, 1, (sw_dtype)SW_DTYPE_COUNT, &r);
    if (expect_ok(st, "new_like(3)")) {
        ok(sw_carrier_is_file(r) && sw_file_is_temporary(r),
           "a temporary FileBacked carrier");
        is_int(sw_carrier_size(r), 3, "of 3 elements");
        expect_f64_at(r, 0, 1.5, "new_like element 0");
        expect_f64_at(r, 1, 0.0, "new_like element 1 (NONE)");
        expect_f64_at(r, 2, 2.0, "new_like element 2");
        is_int(sw_carrier_version(r), 0, "at version 0");
        sw_carrier_unref(r);
    }
    st = sw_carrier_new_like(c, 2, vals, 0, SW_DTYPE_FLOATING, &r);
    if (expect_ok(st, "new_like(2, Floating, immutable)")) {
        ok(!sw_carrier_is_mutable(r), "immutable");
        expect_f64_at(r, 0, 1.5, "its element 0");
        is_int(sw_carrier_size(r), 2, "of 2 elements");
        sw_carrier_unref(r);
    }
    r = SENT_CARRIER;
    st = sw_carrier_new_like(c, 3, vals, 1, SW_DTYPE_INT32, &r);
    is_int(st, SW_ETYPE, "new_like of a double into Int32 fails");
    ok(r == SENT_CARRIER, "and leaves its out-parameter");
    sw_clear_error();
    is_int(count_entries(tmp_dir), 0, "the failed new_like left no file");
    sw_carrier_unref(c);
    is_int(count_entries(tmp_dir), 0, "no temporary left");
    leak_check(base, "FileBacked allocate_like/new_like");
}

/* ---------------------------------------------------- a tensor over it */

static void test_tensor_over_file(void) {
    int64_t base = sw_debug_live_allocs();
    sw_carrier *c = NULL;
    sw_layout *l = NULL;
    sw_tensor *t = NULL;
    if (expect_ok(sw_file_new(named("t.bin"), SW_DTYPE_FLOATING, 1, &c),
                  "a file") &&
        expect_ok(sw_file_resize(c, 6), "resize to 6") &&
        expect_ok(sw_layout_parse("(2,2):(3,1)", &l), "a layout") &&
        expect_ok(sw_tensor_new(c, 1, l, &t), "a tensor over the file")) {
        ok(sw_tensor_is_differentiable(t), "a Floating file tensor");
        sw_value v = sw_value_f64(4.5);
        sw_status st = sw_tensor_set(t, 1, &v); /* element 1 + 3 */
        expect_ok(st, "a tensor write");
        expect_f64_at(c, 4, 4.5, "lands at offset + layout(1) = 4");
        double raw = 0.0;
        ok(disk_read(sw_file_path(c), 32, &raw, sizeof raw) && raw == 4.5,
           "and in the file");
        sw_value r = sw_value_f64(0.0);
        st = sw_tensor_get(t, 1, &r);
        ok(st == SW_OK && r.kind == SW_VALUE_F64 && r.as.f == 4.5,
           "a tensor read");
    }
    sw_tensor_unref(t);
    sw_layout_unref(l);
    sw_carrier_unref(c);
    unlink(named("t.bin"));
    is_int(count_entries(tmp_dir), 0, "no temporary left");
    leak_check(base, "tensor over a file");
}

/* --------------------------------------------------------------- faults */

static void test_io_faults(void) {
    int64_t base = sw_debug_live_allocs();
    sw_carrier *c = NULL;
    sw_status st = sw_file_new(NULL, SW_DTYPE_FLOATING, 1, &c);
    if (!expect_ok(st, "sw_file_new for I/O faults"))
        return;
    expect_ok(sw_file_resize(c, 3), "resize to 3");
    expect_ok(set_f(c, 1, 5.0), "set 5.0");
    int64_t version = sw_carrier_version(c);

    sw_debug_fail_io_after(0);
    st = set_f(c, 1, 7.0);
    sw_debug_fail_io_after(-1);
    expect_os_fail(st, ENOSPC, "a write with I/O failing");
    expect_f64_at(c, 1, 5.0, "the element keeps its old value");
    is_int(sw_carrier_version(c), version, "and the version is unchanged");

    sw_value v = sentinel_value();
    sw_debug_fail_io_after(0);
    st = sw_carrier_get(c, 1, &v);
    sw_debug_fail_io_after(-1);
    expect_os_fail(st, ENOSPC, "a read with I/O failing");
    ok(value_untouched(&v), "and leaves its out-parameter alone");

    sw_debug_fail_io_after(0);
    st = sw_file_resize(c, 10);
    sw_debug_fail_io_after(-1);
    expect_os_fail(st, ENOSPC, "a resize with I/O failing");
    is_int(sw_carrier_size(c), 3, "the size is unchanged");
    sw_debug_fail_io_after(0);
    st = sw_file_resize(c, 1);
    sw_debug_fail_io_after(-1);
    expect_os_fail(st, ENOSPC, "a shrinking resize with I/O failing");
    is_int(sw_carrier_size(c), 3, "the size is unchanged");
    expect_f64_at(c, 1, 5.0, "and so is the element");

    const double w[3] = {1, 2, 3};
    sw_debug_fail_io_after(0);
    st = sw_file_write(c, 0, 3, w);
    sw_debug_fail_io_after(-1);
    expect_os_fail(st, ENOSPC, "a bulk write with I/O failing");
    expect_f64_at(c, 0, 0.0, "element 0 is unchanged");
    expect_f64_at(c, 1, 5.0, "element 1 is unchanged");
    is_int(sw_carrier_version(c), version, "and the version");
    double r[3] = {9, 9, 9};
    sw_debug_fail_io_after(0);
    st = sw_file_read(c, 0, 3, r);
    sw_debug_fail_io_after(-1);
    expect_os_fail(st, ENOSPC, "a bulk read with I/O failing");

    /* One operation allowed: the next one fails. */
    sw_debug_fail_io_after(1);
    st = set_f(c, 0, 8.0);
    sw_status st2 = set_f(c, 2, 9.0);
    sw_debug_fail_io_after(-1);
    expect_ok(st, "the first write with one operation allowed");
    expect_os_fail(st2, ENOSPC, "the second write");
    expect_f64_at(c, 0, 8.0, "the first write landed");
    expect_f64_at(c, 2, 0.0, "the second did not");
    is_int(sw_carrier_version(c), version + 1, "one bump, for the first");

    /* After the hook is off, everything works again. */
    st = set_f(c, 2, 9.0);
    expect_ok(st, "a write with the hook disabled");
    expect_f64_at(c, 2, 9.0, "it landed");
    sw_carrier_unref(c);

    /* Creation under I/O failure: nothing created, nothing leaked. */
    sw_carrier *d = SENT_CARRIER;
    sw_debug_fail_io_after(0);
    st = sw_file_new(NULL, SW_DTYPE_FLOATING, 1, &d);
    sw_debug_fail_io_after(-1);
    expect_os_fail(st, ENOSPC, "creating a temporary with I/O failing");
    ok(d == SENT_CARRIER, "and leaves its out-parameter alone");
    is_int(count_entries(tmp_dir), 0, "no temporary left");
    sw_debug_fail_io_after(0);
    st = sw_file_new(named("io.bin"), SW_DTYPE_FLOATING, 1, &d);
    sw_debug_fail_io_after(-1);
    expect_os_fail(st, ENOSPC, "creating a named file with I/O failing");
    ok(d == SENT_CARRIER, "and leaves its out-parameter alone");
    ok(!exists(named("io.bin")), "no named file left");

    /*
     * A walk: n operations allowed, a new file is made, grown and written.
     * Each step either completes or fails with SW_EOS, and a failed step
     * leaves neither a carrier nor a file.
     */
    int64_t steps = -1;
    bool clean = true;
    for (int64_t n = 0; n < 64; n++) {
        sw_carrier *e = NULL;
        sw_debug_fail_io_after(n);
        st = sw_file_new(NULL, SW_DTYPE_INT32, 1, &e);
        if (!st)
            st = sw_file_resize(e, 4);
        if (!st)
            st = set_i(e, 3, 11);
        sw_debug_fail_io_after(-1);
        if (st == SW_OK) {
            int64_t x = 0;
            sw_value got = sentinel_value();
            if (sw_carrier_get(e, 3, &got) == SW_OK)
                x = got.as.i;
            clean = clean && x == 11 && sw_carrier_size(e) == 4;
            sw_carrier_unref(e);
            steps = n;
            break;
        }
        if (st != SW_EOS) {
            diag("I/O walk, n=%lld: status %s (%s)", (long long)n, S(st),
                 sw_errmsg());
            clean = false;
        }
        sw_clear_error();
        sw_carrier_unref(e);
        if (count_entries(tmp_dir) != 0) {
            diag("I/O walk, n=%lld: a temporary was left", (long long)n);
            clean = false;
        }
    }
    ok(clean && steps > 0,
       "I/O walk: new + resize + set fail cleanly until %lld operations are "
       "allowed",
       (long long)steps);
    is_int(count_entries(tmp_dir), 0, "no temporary left");
    leak_check(base, "I/O faults");
}

/* sw_file_remove_temporaries has nothing left to do, and changes nothing. */
static void test_remove_temporaries(void) {
    int64_t base = sw_debug_live_allocs();
    sw_carrier *a = NULL, *n = NULL;
    sw_status sa = sw_file_new(NULL, SW_DTYPE_FLOATING, 1, &a);
    sw_status sn = sw_file_new(named("kept.bin"), SW_DTYPE_FLOATING, 1, &n);
    if (expect_ok(sa, "a temporary") && expect_ok(sn, "a named file")) {
        expect_ok(sw_file_resize(a, 2), "resize the temporary");
        expect_ok(set_f(a, 1, 2.5), "write it");
        sw_file_remove_temporaries();
        sw_file_remove_temporaries();
        expect_f64_at(a, 1, 2.5, "the temporary still works");
        is_int(count_entries(tmp_dir), 0, "TMPDIR is empty");
        ok(exists(named("kept.bin")), "a named file is kept");
        expect_ok(sw_carrier_release_storage(a), "release the temporary");
    }
    if (!sa)
        sw_carrier_unref(a);
    if (!sn)
        sw_carrier_unref(n);
    ok(exists(named("kept.bin")), "the named file survives its carrier");
    unlink(named("kept.bin"));
    leak_check(base, "sw_file_remove_temporaries");
}

/* Allocation faults: sw_file_new, allocate_like and new_like. */

typedef struct fi_case {
    const char *name;
    sw_status (*run)(sw_carrier **out);
    const char *path; /* a named file the call creates, or NULL */
} fi_case;

static sw_carrier *fi_src;

static sw_status fi_new_temp(sw_carrier **out) {
    return sw_file_new(NULL, SW_DTYPE_FLOATING, 1, out);
}
static sw_status fi_new_named(sw_carrier **out) {
    return sw_file_new(named("fi.bin"), SW_DTYPE_INT32, 1, out);
}
static sw_status fi_allocate_like(sw_carrier **out) {
    return sw_carrier_allocate_like(fi_src, 3, 1, (sw_dtype)SW_DTYPE_COUNT, 0,
                                    out);
}
static sw_status fi_new_like(sw_carrier **out) {
    sw_value v[2];
    v[0] = sw_value_f64(2.5);
    v[1] = sw_value_i64(-1);
    return sw_carrier_new_like(fi_src, 2, v, 1, (sw_dtype)SW_DTYPE_COUNT, out);
}

static void fi_describe(sw_carrier *c, char *buf, size_t cap) {
    int n = snprintf(
        buf, cap, "%s temp=%d size=%lld:", sw_dtype_name(sw_carrier_dtype(c)),
        sw_file_is_temporary(c), (long long)sw_carrier_size(c));
    for (int64_t i = 0; i < sw_carrier_size(c) && n > 0 && (size_t)n < cap;
         i++) {
        sw_value v = sentinel_value();
        sw_carrier_get(c, i, &v);
        n += snprintf(buf + n, cap - (size_t)n, " %.17g",
                      v.kind == SW_VALUE_F64 ? v.as.f : (double)v.as.i);
    }
}

static int64_t fi_walk(const fi_case *fc) {
    static char want[1024], got[1024];
    int64_t base = sw_debug_live_allocs();
    sw_carrier *out = NULL;
    sw_status st = fc->run(&out);
    if (st != SW_OK) {
        ok(0, "fault injection: %s works without injection", fc->name);
        diag("status %s: %s", S(st), sw_errmsg());
        return -1;
    }
    fi_describe(out, want, sizeof want);
    sw_carrier_unref(out);
    if (fc->path)
        unlink(fc->path);
    if (sw_debug_live_allocs() != base) {
        ok(0, "fault injection: %s leaks without injection", fc->name);
        return -1;
    }
    int files = count_entries(tmp_dir);
    int failures = 0;
    for (int64_t n = 0; n < 1000; n++) {
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
            if (count_entries(tmp_dir) != files) {
                diag("%s, n=%lld: SW_ENOMEM left a temporary file", fc->name,
                     (long long)n);
                good = false;
            }
            if (fc->path && exists(fc->path)) {
                diag("%s, n=%lld: SW_ENOMEM left the named file", fc->name,
                     (long long)n);
                unlink(fc->path);
                good = false;
            }
        } else if (st == SW_OK) {
            fi_describe(out, got, sizeof got);
            if (strcmp(got, want) != 0) {
                diag("%s, n=%lld: result '%s', without injection '%s'",
                     fc->name, (long long)n, got, want);
                good = false;
            }
            sw_carrier_unref(out);
            if (fc->path)
                unlink(fc->path);
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
    if (!expect_ok(sw_file_new(NULL, SW_DTYPE_FLOAT32, 1, &fi_src),
                   "fault injection: input"))
        return;
    char npath[1024];
    snprintf(npath, sizeof npath, "%s", named("fi.bin"));
    const fi_case cases[] = {
        {"sw_file_new (temporary)", fi_new_temp, NULL},
        {"sw_file_new (named)", fi_new_named, npath},
        {"sw_carrier_allocate_like (FileBacked)", fi_allocate_like, NULL},
        {"sw_carrier_new_like (FileBacked)", fi_new_like, NULL},
    };
    int64_t base = sw_debug_live_allocs();
    int64_t sites = 0;
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        int64_t n = fi_walk(&cases[k]);
        if (n > 0)
            sites += n;
    }
    diag("fault injection: %lld allocation sites walked over %zu entry "
         "points",
         (long long)sites, sizeof cases / sizeof cases[0]);
    leak_check(base, "fault injection");
    sw_carrier_unref(fi_src);
    is_int(count_entries(tmp_dir), 0, "no temporary left");
    leak_check(base0, "fault injection input");
}

/* ------------------------------------------------ paths and directories */

/* Entries of dir whose name holds ".partial-" (a stage's partial file). */
static int count_partials(const char *dir) {
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strstr(e->d_name, ".partial-"))
            n++;
    closedir(d);
    return n;
}

/* Removes the plain files of dir (after a child was killed mid-way). */
static void empty_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    char p[1024];
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        unlink(p);
    }
    closedir(d);
}

static bool starts_with(const char *s, const char *prefix) {
    return s && strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Relative names are resolved at construction; the temporary directory is
 * an argument, read once. */
static void test_paths(void) {
    int64_t base = sw_debug_live_allocs();
    char cwd[1024], want[1200];
    if (!ok(getcwd(cwd, sizeof cwd) != NULL, "the working directory"))
        return;
    char sub[1100];
    snprintf(sub, sizeof sub, "%s/tmpsub", named_dir);
    ok(mkdir(sub, 0700) == 0, "a directory for temporaries");
    ok(chdir(named_dir) == 0, "chdir into the named directory");
    sw_carrier *c = NULL, *t = NULL, *r = NULL;
    sw_status st = sw_file_new("rel.bin", SW_DTYPE_INT32, 1, &c);
    sw_status st2 = sw_file_new_in(NULL, "tmpsub", SW_DTYPE_FLOATING, 1, &t);
    ok(chdir("/") == 0, "chdir to /");
    if (expect_ok(st, "a relative name") &&
        expect_ok(st2, "a relative temporary directory")) {
        is_str(sw_file_path(c), named("rel.bin"),
               "the path is made absolute at construction");
        snprintf(want, sizeof want, "%s/strideweave-", sub);
        ok(starts_with(sw_file_path(t), want),
           "so is the temporary directory ('%s')", sw_file_path(t));
        expect_ok(sw_file_resize(c, 2), "resize after chdir");
        expect_ok(set_i(c, 1, 5), "write after chdir");
        int32_t raw = 0;
        ok(disk_read(named("rel.bin"), 4, &raw, sizeof raw) && raw == 5,
           "the write lands in the file made before the chdir");
        expect_ok(sw_file_stage(c, 3), "stage after chdir");
        expect_ok(sw_file_commit(c), "commit after chdir");
        is_int(disk_size(named("rel.bin")), 12,
               "the commit publishes at the absolute path");
        ok(!exists("/rel.bin"), "not in the new working directory");
        st = sw_carrier_allocate_like(t, 1, 1, (sw_dtype)SW_DTYPE_COUNT, 0, &r);
        if (expect_ok(st, "allocate_like after chdir"))
            ok(starts_with(sw_file_path(r), want),
               "its temporary goes to the directory resolved before");
    }
    ok(chdir(cwd) == 0, "back to the working directory");
    sw_carrier_unref(r);
    sw_carrier_unref(t);
    sw_carrier_unref(c);
    unlink(named("rel.bin"));
    is_int(count_entries(sub), 0, "no temporary was named");
    ok(rmdir(sub) == 0, "remove the directory for temporaries");

    /* The library reads TMPDIR in sw_file_new only. */
    ok(setenv("TMPDIR", named_dir, 1) == 0, "point TMPDIR elsewhere");
    st = sw_file_new_in(NULL, tmp_dir, SW_DTYPE_FLOATING, 1, &t);
    if (expect_ok(st, "sw_file_new_in with a directory")) {
        snprintf(want, sizeof want, "%s/strideweave-", tmp_dir);
        ok(starts_with(sw_file_path(t), want), "uses it, not TMPDIR");
        r = NULL;
        st = sw_carrier_new_like(t, 0, NULL, 1, (sw_dtype)SW_DTYPE_COUNT, &r);
        if (expect_ok(st, "new_like"))
            ok(starts_with(sw_file_path(r), want),
               "its like-temporaries go there too");
        sw_carrier_unref(r);
        sw_carrier_unref(t);
    }
    st = sw_file_new(NULL, SW_DTYPE_FLOATING, 1, &t);
    if (expect_ok(st, "sw_file_new")) {
        snprintf(want, sizeof want, "%s/strideweave-", named_dir);
        ok(starts_with(sw_file_path(t), want), "reads TMPDIR");
        sw_carrier_unref(t);
    }
    ok(setenv("TMPDIR", tmp_dir, 1) == 0, "restore TMPDIR");
    char slashes[1100];
    snprintf(slashes, sizeof slashes, "%s///", tmp_dir);
    st = sw_file_new_in(NULL, slashes, SW_DTYPE_FLOATING, 1, &t);
    if (expect_ok(st, "a directory with trailing slashes")) {
        snprintf(want, sizeof want, "%s/strideweave-", tmp_dir);
        ok(starts_with(sw_file_path(t), want), "gives one slash ('%s')",
           sw_file_path(t));
        sw_carrier_unref(t);
    }
    const char *defaults[] = {NULL, ""};
    for (int k = 0; k < 2; k++) {
        st = sw_file_new_in(NULL, defaults[k], SW_DTYPE_INT32, 1, &t);
        if (expect_ok(st, k ? "an empty directory" : "a NULL directory")) {
            ok(starts_with(sw_file_path(t), "/tmp/strideweave-"),
               "means /tmp ('%s')", sw_file_path(t));
            sw_carrier_unref(t);
        }
    }
    sw_carrier *d = SENT_CARRIER;
    st = sw_file_new_in(NULL, named("missing"), SW_DTYPE_FLOATING, 1, &d);
    expect_os_fail(st, ENOENT, "a temporary in a missing directory");
    ok(d == SENT_CARRIER, "and leaves its out-parameter alone");
    is_int(count_entries(named_dir), 0, "the named directory is clean");
    leak_check(base, "paths");
}

/* ------------------------------------------------- unnamed temporaries */

static void test_unnamed(int no_tmpfile) {
    int64_t base = sw_debug_live_allocs();
    const char *mode = no_tmpfile ? "without O_TMPFILE" : "with O_TMPFILE";
    sw_debug_file_no_tmpfile(no_tmpfile);
    sw_carrier *c = NULL;
    sw_status st = sw_file_new(NULL, SW_DTYPE_FLOATING, 1, &c);
    if (expect_ok(st, mode)) {
        ok(!exists(sw_file_path(c)), "%s: the temporary has no name", mode);
        is_int(count_entries(tmp_dir), 0, "%s: nothing in TMPDIR", mode);
        expect_ok(sw_file_resize(c, 3), "resize");
        expect_ok(set_f(c, 2, 4.5), "write");
        /* A child that releases the carrier and exits removes nothing of
         * the parent's. */
        pid_t pid = fork();
        if (pid == 0) {
            int code = sw_carrier_release_storage(c) != SW_OK;
            sw_carrier_unref(c);
            sw_file_remove_temporaries();
            _exit(code);
        }
        int status = 0;
        ok(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
               WEXITSTATUS(status) == 0,
           "%s: a forked child releases the carrier and exits", mode);
        expect_f64_at(c, 2, 4.5, "the parent's temporary still holds it");
        is_int(sw_carrier_size(c), 3, "with its size");
        sw_carrier_unref(c);
    }
    is_int(count_entries(tmp_dir), 0, "%s: TMPDIR is empty", mode);
    sw_debug_file_no_tmpfile(0);
    leak_check(base, mode);
}

/* ------------------------------------------------------ staged resizes */

static void expect_disk_i32(const char *path, const int32_t *want, int n,
                            const char *name) {
    int32_t got[8] = {0};
    bool same = disk_size(path) == (int64_t)n * 4 &&
                disk_read(path, 0, got, (size_t)n * 4) &&
                memcmp(got, want, (size_t)n * 4) == 0;
    ok(same, "%s: the name holds %d int32 as expected", name, n);
}

static void test_stage(int no_tmpfile) {
    int64_t base = sw_debug_live_allocs();
    char mode[64], name[160];
    snprintf(mode, sizeof mode, "stage %s",
             no_tmpfile ? "without O_TMPFILE" : "with O_TMPFILE");
    sw_debug_file_no_tmpfile(no_tmpfile);
    int partials = no_tmpfile ? 1 : 0;
    char path[1024];
    snprintf(path, sizeof path, "%s", named("staged.bin"));
    sw_carrier *c = NULL;
    if (!expect_ok(sw_file_new(path, SW_DTYPE_INT32, 1, &c), mode))
        return;
    ok(!sw_file_is_staged(c), "%s: not staged at first", mode);
    expect_ok(sw_file_stage(c, 4), "stage 4 elements");
    ok(sw_file_is_staged(c), "%s: staged", mode);
    is_int(sw_carrier_size(c), 4, "%s: the carrier sees the stage", mode);
    is_int(disk_size(path), 0, "%s: the name still holds the empty file", mode);
    is_int(count_partials(named_dir), partials,
           "%s: a partial file only without O_TMPFILE", mode);
    is_int(count_entries(named_dir), 1 + partials, "%s: and nothing else",
           mode);
    for (int i = 0; i < 4; i++)
        set_i(c, i, 10 + i);
    expect_i64_at(c, 3, 13, "writes land in the stage");
    is_int(disk_size(path), 0, "%s: and not under the name", mode);
    sw_status st = sw_file_stage(c, 2);
    expect_fail(st, SW_ERUNTIME,
                "FileBacked carrier already has a staged resize",
                "a second stage");
    is_int(sw_carrier_size(c), 4, "%s: the refusal changed nothing", mode);
    expect_ok(sw_file_commit(c), "commit");
    ok(!sw_file_is_staged(c), "%s: no longer staged", mode);
    snprintf(name, sizeof name, "%s, committed", mode);
    expect_disk_i32(path, (const int32_t[]){10, 11, 12, 13}, 4, name);
    is_int(count_entries(named_dir), 1, "%s: nothing else is left", mode);
    expect_ok(set_i(c, 0, 99), "write after the commit");
    snprintf(name, sizeof name, "%s, written after", mode);
    expect_disk_i32(path, (const int32_t[]){99, 11, 12, 13}, 4, name);
    st = sw_file_commit(c);
    expect_fail(st, SW_ERUNTIME, "FileBacked carrier has no staged resize",
                "a commit without a stage");
    expect_ok(sw_file_abandon(c), "an abandon without a stage");
    is_int(sw_carrier_size(c), 4, "%s: which does nothing", mode);

    /* A stage starts with the carrier's elements; abandon drops it. */
    expect_ok(sw_file_stage(c, 6), "stage 6 elements");
    expect_i64_at(c, 0, 99, "a stage keeps the first element");
    expect_i64_at(c, 3, 13, "and the last one");
    expect_i64_at(c, 5, 0, "and is zero after them");
    expect_ok(set_i(c, 1, -5), "write into the stage");
    expect_ok(sw_file_abandon(c), "abandon");
    ok(!sw_file_is_staged(c), "%s: no longer staged", mode);
    is_int(sw_carrier_size(c), 4, "%s: the size from before", mode);
    expect_i64_at(c, 1, 11, "the value from before");
    snprintf(name, sizeof name, "%s, abandoned", mode);
    expect_disk_i32(path, (const int32_t[]){99, 11, 12, 13}, 4, name);
    is_int(count_entries(named_dir), 1, "%s: abandon leaves no partial file",
           mode);
    expect_ok(sw_file_stage(c, 2), "a shrinking stage");
    expect_i64_at(c, 1, 11, "keeps the first elements");
    expect_ok(sw_file_commit(c), "commit it");
    snprintf(name, sizeof name, "%s, shrunk", mode);
    expect_disk_i32(path, (const int32_t[]){99, 11}, 2, name);

    /* The name taken by another file meanwhile: not replaced. */
    char aside[1100];
    snprintf(aside, sizeof aside, "%s.aside", path);
    expect_ok(sw_file_stage(c, 3), "stage");
    ok(rename(path, aside) == 0, "move the reserved file aside");
    FILE *fp = fopen(path, "wb");
    if (ok(fp != NULL, "another file takes the name")) {
        fputs("other", fp);
        fclose(fp);
    }
    st = sw_file_commit(c);
    expect_os_fail(st, EEXIST, "a commit over another file");
    ok(sw_file_is_staged(c), "%s: the carrier stays staged", mode);
    is_int(disk_size(path), 5, "%s: the other file is left alone", mode);
    expect_ok(sw_file_abandon(c), "abandon");
    ok(rename(aside, path) == 0, "the reserved file comes back");
    /* The name gone meanwhile: published anyway. */
    expect_ok(sw_file_stage(c, 1), "stage");
    unlink(path);
    expect_ok(sw_file_commit(c), "a commit with the name gone");
    snprintf(name, sizeof name, "%s, name gone", mode);
    expect_disk_i32(path, (const int32_t[]){99}, 1, name);

    /* The published file keeps the permissions. */
    ok(chmod(path, 0640) == 0, "chmod 0640");
    expect_ok(sw_file_stage(c, 2), "stage");
    expect_ok(sw_file_commit(c), "commit");
    struct stat sb;
    ok(stat(path, &sb) == 0 && (sb.st_mode & 0777) == 0640,
       "%s: the published file keeps mode 0640", mode);

    /* Faults: a failed stage or commit changes nothing. */
    sw_debug_fail_io_after(0);
    st = sw_file_stage(c, 3);
    sw_debug_fail_io_after(-1);
    expect_os_fail(st, ENOSPC, "a stage with I/O failing");
    ok(!sw_file_is_staged(c), "%s: not staged", mode);
    is_int(count_entries(named_dir), 1, "%s: no partial file", mode);
    expect_ok(sw_file_stage(c, 3), "stage");
    expect_ok(set_i(c, 2, 3), "write");
    sw_debug_fail_io_after(0);
    st = sw_file_commit(c);
    sw_debug_fail_io_after(-1);
    expect_os_fail(st, ENOSPC, "a commit with I/O failing");
    ok(sw_file_is_staged(c), "%s: still staged", mode);
    is_int(disk_size(path), 8, "%s: the name is unchanged", mode);
    expect_ok(sw_file_commit(c), "the commit again");
    snprintf(name, sizeof name, "%s, retried", mode);
    expect_disk_i32(path, (const int32_t[]){99, 0, 3}, 3, name);
    int64_t sites = -1;
    bool clean = true;
    for (int64_t n = 0; n < 200 && sites < 0; n++) {
        int64_t live = sw_debug_live_allocs();
        sw_debug_fail_alloc_after(n);
        st = sw_file_stage(c, 4);
        sw_status st3 = st ? st : sw_file_commit(c);
        sw_debug_fail_alloc_after(-1);
        if (st3 == SW_OK) {
            sites = n;
            break;
        }
        if (st3 != SW_ENOMEM) {
            diag("alloc walk n=%lld: %s (%s)", (long long)n, S(st3),
                 sw_errmsg());
            clean = false;
        }
        sw_clear_error();
        (void)sw_file_abandon(c);
        if (sw_carrier_size(c) != 3 || disk_size(path) != 12 ||
            count_entries(named_dir) != 1 || sw_debug_live_allocs() != live) {
            diag("alloc walk n=%lld: the carrier or the directory changed",
                 (long long)n);
            clean = false;
        }
    }
    ok(clean && sites >= 0,
       "%s: stage + commit fail cleanly at each of %lld allocation sites", mode,
       (long long)sites);

    /* Release drops a stage; the name keeps what it held. */
    expect_ok(sw_file_stage(c, 5), "stage");
    expect_ok(set_i(c, 4, 7), "write");
    expect_ok(sw_carrier_release_storage(c), "release while staged");
    is_int(disk_size(path), 16, "%s: the name keeps its 4 elements", mode);
    is_int(count_entries(named_dir), 1, "%s: no partial file", mode);
    st = sw_file_commit(c);
    expect_fail(st, SW_ERUNTIME, "Carrier is released",
                "a commit after release");
    st = sw_file_stage(c, 1);
    expect_fail(st, SW_ERUNTIME, "Carrier is released",
                "a stage after release");
    expect_ok(sw_file_abandon(c), "an abandon after release");
    sw_carrier_unref(c);
    unlink(path);

    /* A temporary's stage: nothing named anywhere. */
    if (expect_ok(sw_file_new(NULL, SW_DTYPE_FLOATING, 1, &c), "temporary")) {
        expect_ok(sw_file_resize(c, 2), "resize");
        expect_ok(set_f(c, 1, 1.5), "write");
        expect_ok(sw_file_stage(c, 3), "stage a temporary");
        expect_ok(set_f(c, 2, 2.5), "write into the stage");
        is_int(count_entries(tmp_dir), 0, "%s: TMPDIR stays empty", mode);
        expect_ok(sw_file_commit(c), "commit a temporary");
        expect_f64_at(c, 1, 1.5, "the temporary kept its element");
        expect_f64_at(c, 2, 2.5, "and has the stage's");
        expect_ok(sw_file_stage(c, 1), "stage again");
        expect_ok(sw_file_abandon(c), "abandon");
        is_int(sw_carrier_size(c), 3, "%s: the size from before", mode);
        sw_carrier_unref(c);
    }

    /* Errors. */
    sw_carrier *cpu = NULL;
    if (expect_ok(sw_file_new(path, SW_DTYPE_FLOATING, 1, &c), "named") &&
        expect_ok(sw_cpu_new(1, SW_DTYPE_FLOAT32, 1, 0, &cpu), "a CPU")) {
        st = sw_file_stage(c, -1);
        expect_fail(st, SW_EVALUE,
                    "FileBacked allocation size must be non-negative",
                    "stage(-1)");
        st = sw_file_stage(c, INT64_MAX);
        expect_fail(st, SW_EVALUE, "FileBacked size is too large",
                    "stage(INT64_MAX)");
        ok(!sw_file_is_staged(c), "%s: the refusals changed nothing", mode);
        st = sw_file_stage(cpu, 1);
        expect_fail(st, SW_ETYPE, "carrier is not a FileBacked carrier",
                    "stage of a CPU carrier");
        st = sw_file_commit(cpu);
        expect_fail(st, SW_ETYPE, "carrier is not a FileBacked carrier",
                    "commit of a CPU carrier");
        st = sw_file_abandon(cpu);
        expect_fail(st, SW_ETYPE, "carrier is not a FileBacked carrier",
                    "abandon of a CPU carrier");
        ok(!sw_file_is_staged(cpu), "a CPU carrier is never staged");
    }
    sw_carrier_unref(cpu);
    sw_carrier_unref(c);
    unlink(path);
    is_int(count_entries(named_dir), 0, "%s: the named directory is clean",
           mode);
    sw_debug_file_no_tmpfile(0);
    leak_check(base, mode);
}

/* A forked child must not commit, nor remove, its parent's stage. */
static void test_stage_fork(void) {
    int64_t base = sw_debug_live_allocs();
    sw_debug_file_no_tmpfile(1); /* a named partial file: one to remove */
    char path[1024];
    snprintf(path, sizeof path, "%s", named("forked.bin"));
    sw_carrier *c = NULL;
    if (expect_ok(sw_file_new(path, SW_DTYPE_INT32, 1, &c), "fork: named") &&
        expect_ok(sw_file_stage(c, 2), "fork: stage")) {
        expect_ok(set_i(c, 1, 42), "fork: write");
        pid_t pid = fork();
        if (pid == 0) {
            int code = 0;
            if (sw_file_commit(c) != SW_ERUNTIME ||
                strcmp(sw_errmsg(), "FileBacked staged resize belongs to "
                                    "another process") != 0)
                code |= 1;
            if (sw_file_abandon(c) != SW_OK)
                code |= 2;
            if (sw_carrier_release_storage(c) != SW_OK)
                code |= 4;
            sw_carrier_unref(c);
            _exit(code);
        }
        int status = 0;
        ok(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status),
           "fork: the child exits");
        is_int(WEXITSTATUS(status), 0,
               "fork: the child's commit is refused, its abandon and release "
               "work");
        is_int(count_partials(named_dir), 1,
               "fork: the parent's partial file is still there");
        ok(sw_file_is_staged(c), "fork: the parent is still staged");
        expect_i64_at(c, 1, 42, "fork: with its value");
        is_int(disk_size(path), 0, "fork: the name is still empty");
        expect_ok(sw_file_commit(c), "fork: the parent commits");
        expect_disk_i32(path, (const int32_t[]){0, 42}, 2, "fork");
        is_int(count_entries(named_dir), 1, "fork: nothing else is left");
    }
    sw_carrier_unref(c);
    unlink(path);
    sw_debug_file_no_tmpfile(0);
    leak_check(base, "stage and fork");
}

/* A process killed between stage and commit leaves the name as it was. */
static void test_stage_killed(int no_tmpfile) {
    const char *mode =
        no_tmpfile ? "killed without O_TMPFILE" : "killed with O_TMPFILE";
    char path[1024];
    snprintf(path, sizeof path, "%s", named("killed.bin"));
    int fds[2];
    if (!ok(pipe(fds) == 0, "%s: a pipe", mode))
        return;
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        sw_debug_file_no_tmpfile(no_tmpfile);
        enum { N = 1 << 20 };
        static int32_t ones[N / 2];
        for (int i = 0; i < N / 2; i++)
            ones[i] = 1;
        sw_carrier *c = NULL;
        if (sw_file_new(path, SW_DTYPE_INT32, 1, &c) || sw_file_stage(c, N) ||
            sw_file_write(c, 0, N / 2, ones))
            _exit(1);
        /* Half written: tell the parent, then wait to be killed. */
        if (write(fds[1], "h", 1) != 1)
            _exit(2);
        for (;;)
            pause();
    }
    close(fds[1]);
    char ch = 0;
    bool half = pid > 0 && read(fds[0], &ch, 1) == 1 && ch == 'h';
    close(fds[0]);
    ok(half, "%s: the child has written half of a 4 MiB stage", mode);
    is_int(disk_size(path), 0, "%s: the name is empty while it runs", mode);
    int status = 0;
    if (pid > 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
    }
    ok(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
       "%s: the child died of SIGKILL", mode);
    is_int(disk_size(path), 0, "%s: the name holds the empty reserved file",
           mode);
    is_int(count_partials(named_dir), no_tmpfile ? 1 : 0,
           "%s: at most an obviously named partial file beside it", mode);
    is_int(count_entries(named_dir), no_tmpfile ? 2 : 1, "%s: and nothing else",
           mode);
    empty_dir(named_dir);
}

/* -------------------------------------------------------------- threads */

typedef struct race {
    sw_carrier *c;
    atomic_int stop;
    atomic_int bad;
} race;

/* Reads through the class's slots while another thread stages, commits
 * and finally releases: every read sees a file, or the release. */
static void *race_reader(void *arg) {
    race *r = arg;
    const sw_carrier_class *cls = sw_carrier_get_class(r->c);
    while (!atomic_load(&r->stop)) {
        if (!sw_file_is_temporary(r->c) || !sw_file_path(r->c))
            atomic_fetch_add(&r->bad, 1);
        (void)sw_file_is_staged(r->c);
        (void)cls->size(r->c);
        sw_value v = sentinel_value();
        sw_status st = cls->get(r->c, 0, &v);
        if (st == SW_OK && !(v.kind == SW_VALUE_F64 && v.as.f == 1.0))
            atomic_fetch_add(&r->bad, 1);
        if (st != SW_OK && st != SW_ERUNTIME && st != SW_EINDEX) {
            diag("a racing read: %s (%s)", S(st), sw_errmsg());
            atomic_fetch_add(&r->bad, 1);
        }
        sw_clear_error();
    }
    return NULL;
}

static void test_threads(void) {
    int64_t base = sw_debug_live_allocs();
    int bad = 0, runs = 0;
    for (int k = 0; k < 20; k++) {
        race r;
        r.c = NULL;
        atomic_init(&r.stop, 0);
        atomic_init(&r.bad, 0);
        if (sw_file_new(NULL, SW_DTYPE_FLOATING, 1, &r.c) ||
            sw_file_resize(r.c, 4) || set_f(r.c, 0, 1.0)) {
            bad++;
            sw_carrier_unref(r.c);
            continue;
        }
        pthread_t th[2];
        int started = 0;
        for (int i = 0; i < 2; i++)
            if (pthread_create(&th[i], NULL, race_reader, &r) == 0)
                started++;
        for (int i = 0; i < 20; i++) {
            if (sw_file_stage(r.c, 4) || sw_file_commit(r.c))
                bad++;
            sw_clear_error();
        }
        if (sw_carrier_release_storage(r.c))
            bad++;
        /* Let the readers meet the released file. */
        for (int i = 0; i < 3; i++)
            sched_yield();
        atomic_store(&r.stop, 1);
        for (int i = 0; i < started; i++)
            pthread_join(th[i], NULL);
        bad += atomic_load(&r.bad) + (started != 2);
        sw_carrier_unref(r.c);
        runs++;
    }
    ok(bad == 0 && runs == 20,
       "reads on other threads during stages, commits and release see a "
       "file or the release (%d runs)",
       runs);
    is_int(count_entries(tmp_dir), 0, "no temporary left");
    leak_check(base, "threads");
}

/* ----------------------------------------------------------------- main */

/* Makes the private directories and points TMPDIR at one of them. */
static bool setup_dirs(void) {
    const char *sys = getenv("TMPDIR");
    if (!sys || !*sys)
        sys = "/tmp";
    snprintf(tmp_dir, sizeof tmp_dir, "%s/sw-test-file-tmp-XXXXXX", sys);
    snprintf(named_dir, sizeof named_dir, "%s/sw-test-file-named-XXXXXX", sys);
    if (!mkdtemp(tmp_dir) || !mkdtemp(named_dir))
        return false;
    return setenv("TMPDIR", tmp_dir, 1) == 0;
}

int main(void) {
    if (!ok(setup_dirs(), "private directories for the test's files"))
        return done_testing();
    int64_t base = sw_debug_live_allocs();
    test_temporary();
    test_named();
    test_dtypes();
    test_bulk();
    test_like();
    test_tensor_over_file();
    test_io_faults();
    test_remove_temporaries();
    test_fault_injection();
    test_paths();
    test_unnamed(0);
    test_unnamed(1);
    test_stage(0);
    test_stage(1);
    test_stage_fork();
    test_stage_killed(0);
    test_stage_killed(1);
    test_threads();
    is_int(sw_debug_live_allocs(), base, "no allocation is live at the end");
    is_int(count_entries(tmp_dir), 0, "no temporary file is left");
    is_int(count_entries(named_dir), 0, "no named file is left");
    ok(rmdir(tmp_dir) == 0, "the private TMPDIR is removed (it was empty)");
    ok(rmdir(named_dir) == 0, "the named directory is removed (it was empty)");
    return done_testing();
}
