/*
 * Unit tests of block devices and the BlockDeviceCarrier
 * (include/strideweave/blockdev.h, and the block-device moves of
 * interop.h): geometry checks, raw transfers with their preflight, every
 * retry and fault path through scripted devices, the extent allocator,
 * zero-filling, close rules, element access with its version rules,
 * release, the bulk moves to and from CPU with their registry policy, the
 * Evictable refusal, and the allocation fault walk.
 *
 * A real block device is never needed: the scripted device keeps its
 * bytes in memory, and its reads and writes follow scripts.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "strideweave/base.h"
#include "strideweave/blockdev.h"
#include "strideweave/carrier.h"
#include "strideweave/evictable.h"
#include "strideweave/interop.h"
#include "strideweave/layout.h"
#include "strideweave/op.h"
#include "strideweave/tensor.h"
#include "check.h"
#include "tap.h"

#define STEP(k, v) ((sw_blockdev_step){SW_BLOCKDEV_STEP_##k, (v)})

/* A scripted device without scripts. */
static sw_blockdev *plain(int64_t capacity, int64_t logical, int64_t physical) {
    sw_blockdev *d = NULL;
    sw_status st = sw_blockdev_open_scripted(capacity, logical, physical, NULL,
                                             0, NULL, 0, 0, &d);
    if (!expect_ok(st, "open a scripted device"))
        return NULL;
    return d;
}

static sw_blockdev *scripted(int64_t capacity, int64_t logical,
                             int64_t physical, const sw_blockdev_step *r,
                             int64_t nr, const sw_blockdev_step *w,
                             int64_t nw) {
    sw_blockdev *d = NULL;
    sw_status st = sw_blockdev_open_scripted(capacity, logical, physical, r, nr,
                                             w, nw, 0, &d);
    if (!expect_ok(st, "open a scripted device"))
        return NULL;
    return d;
}

static int64_t writes_of(sw_blockdev *d) {
    int64_t w = 0;
    sw_blockdev_attempts(d, NULL, &w, NULL);
    return w;
}

static int64_t reads_of(sw_blockdev *d) {
    int64_t r = 0;
    sw_blockdev_attempts(d, &r, NULL, NULL);
    return r;
}

static float value_at(sw_carrier *c, int64_t i) {
    sw_value v = sw_value_f64(-999.0);
    sw_status st = sw_carrier_get(c, i, &v);
    if (st) {
        diag("get %lld: %s", (long long)i, sw_errmsg());
        sw_clear_error();
    }
    return (float)v.as.f;
}

static void expect_contains(sw_status st, sw_status want, const char *frag,
                            const char *name) {
    is_int(st, want, "%s fails with %s (got %s)", name, S(want), S(st));
    if (st)
        ok(strstr(sw_errmsg(), frag) != NULL, "%s: message has '%s' ('%s')",
           name, frag, sw_errmsg());
    sw_clear_error();
}

/* ------------------------------------------------------------- geometry */

static void test_geometry(void) {
    sw_blockdev *d = NULL;
    sw_status st = sw_blockdev_open_scripted(0, 1, 1, NULL, 0, NULL, 0, 0, &d);
    expect_fail(st, SW_EVALUE, "capacity must be positive", "capacity 0");
    st = sw_blockdev_open_scripted(8, 0, 1, NULL, 0, NULL, 0, 0, &d);
    expect_fail(st, SW_EVALUE, "logical block size must be positive",
                "logical 0");
    st = sw_blockdev_open_scripted(8, 1, -4, NULL, 0, NULL, 0, 0, &d);
    expect_fail(st, SW_EVALUE, "physical block size must be positive",
                "physical -4");
    st = sw_blockdev_open_scripted(10, 4, 4, NULL, 0, NULL, 0, 0, &d);
    expect_fail(st, SW_EVALUE,
                "capacity must be a multiple of the logical block size",
                "capacity 10 over logical 4");
    st = sw_blockdev_open_scripted(16, 4, 6, NULL, 0, NULL, 0, 0, &d);
    expect_fail(st, SW_EVALUE,
                "physical block size must be a multiple of the logical block "
                "size",
                "physical 6 over logical 4");
    sw_blockdev_step bad = {(sw_blockdev_step_kind)9, 0};
    st = sw_blockdev_open_scripted(16, 4, 4, &bad, 1, NULL, 0, 0, &d);
    expect_fail(st, SW_EVALUE, "unknown script step", "a bad step");
    ok(d == NULL, "failed opens write nothing");
    sw_blockdev_io bad_io = {SW_BLOCKDEV_IO_VERSION + 1, NULL, NULL, NULL,
                             NULL};
    st = sw_blockdev_open_io(-1, 16, 4, 4, &bad_io, NULL, &d);
    expect_fail(st, SW_ETYPE, "BlockDevice I/O table is not valid",
                "a table of another version");
    st = sw_blockdev_open_io(-1, 16, 4, 4, NULL, NULL, &d);
    expect_fail(st, SW_ETYPE, "BlockDevice I/O table is not valid", "no table");

    d = plain(4096, 512, 1024);
    if (!d)
        return;
    is_int(sw_blockdev_capacity(d), 4096, "capacity");
    is_int(sw_blockdev_logical_block_size(d), 512, "logical block size");
    is_int(sw_blockdev_physical_block_size(d), 1024, "physical block size");
    ok(!sw_blockdev_is_closed(d) && !sw_blockdev_is_faulted(d),
       "a new device is open and sound");
    sw_blockdev_unref(d);
    sw_blockdev_unref(NULL);
}

/* A regular file is refused without being written, and a missing path is
 * an OSError with its errno. */
static void test_open_paths(void) {
    char path[] = "/tmp/sw-blockdev-XXXXXX";
    int fd = mkstemp(path);
    if (!ok(fd >= 0, "a regular file to refuse"))
        return;
    (void)!write(fd, "abcd", 4);
    close(fd);
    sw_blockdev *d = NULL;
    sw_status st = sw_blockdev_open(path, &d);
    expect_contains(st, SW_EVALUE, "is not a block device", "a regular file");
    char buf[8] = {0};
    fd = open(path, O_RDONLY);
    ok(fd >= 0 && read(fd, buf, sizeof buf) == 4 && memcmp(buf, "abcd", 4) == 0,
       "the regular file is unchanged");
    if (fd >= 0)
        close(fd);
    unlink(path);
    st = sw_blockdev_open("/nonexistent/sw-blockdev", &d);
    is_int(st, SW_EOS, "a missing path is SW_EOS");
    is_int(sw_errno(), ENOENT, "with ENOENT");
    sw_clear_error();
    ok(d == NULL, "nothing is written on failure");
}

/* ------------------------------------------------------------ transfers */

static void test_preflight(void) {
    sw_blockdev *d = plain(64, 4, 8);
    if (!d)
        return;
    char buf[16];
    sw_status st = sw_blockdev_read(d, 0, 4, NULL, NULL);
    expect_fail(st, SW_EVALUE, "pointer must be non-null", "NULL pointer");
    st = sw_blockdev_read(d, -1, 4, buf, NULL);
    expect_fail(st, SW_EVALUE, "byte_offset must be non-negative",
                "negative offset");
    st = sw_blockdev_write(d, 0, -4, buf, NULL);
    expect_fail(st, SW_EVALUE, "byte_count must be non-negative",
                "negative count");
    st = sw_blockdev_read(d, 60, 8, buf, NULL);
    expect_fail(st, SW_EVALUE, "byte range exceeds the device capacity",
                "past the end");
    st = sw_blockdev_read(d, INT64_MAX, 2, buf, NULL);
    expect_fail(st, SW_EOVERFLOW, "byte endpoint overflows Index",
                "endpoint overflow");
    st = sw_blockdev_read(d, 0, 8, (void *)(UINTPTR_MAX - 3), NULL);
    expect_fail(st, SW_EOVERFLOW, "pointer byte endpoint overflows",
                "pointer endpoint overflow");
    st = sw_blockdev_read(d, 64, 0, NULL, NULL);
    ok(st == SW_OK, "a zero-length transfer at the end takes pointer 0");
    is_int(reads_of(d) + writes_of(d), 0, "preflight failures do no I/O");
    ok(!sw_blockdev_is_faulted(d), "preflight failures do not fault");
    sw_blockdev_unref(d);
}

static void test_retries(void) {
    sw_blockdev_step w[] = {STEP(INTERRUPT, 0), STEP(PROGRESS, 1),
                            STEP(INTERRUPT, 0), STEP(PROGRESS, 2)};
    sw_blockdev_step r[] = {STEP(PROGRESS, 3), STEP(INTERRUPT, 0)};
    sw_blockdev *d = scripted(64, 1, 4, r, 2, w, 4);
    if (!d)
        return;
    unsigned char in[4] = {1, 2, 3, 4}, out[4] = {0};
    sw_blockdev_result res;
    sw_status st = sw_blockdev_write(d, 8, 4, in, &res);
    ok(st == SW_OK && res.outcome == SW_BLOCKDEV_COMPLETE && res.completed == 4,
       "interrupts and short writes are retried to completion");
    is_int(writes_of(d), 5, "five write calls (2 interrupts, 3 progress)");
    st = sw_blockdev_read(d, 8, 4, out, &res);
    ok(st == SW_OK && memcmp(in, out, 4) == 0,
       "a short and an interrupted read complete and read back");
    is_int(reads_of(d), 3, "three read calls");
    sw_blockdev_unref(d);
}

static void test_faults(void) {
    /* Zero progress after a short write: the whole device faults. */
    sw_blockdev_step w[] = {STEP(PROGRESS, 2), STEP(ZERO, 0)};
    sw_blockdev *d = scripted(64, 1, 4, NULL, 0, w, 2);
    if (!d)
        return;
    float f = 1.0f;
    sw_blockdev_result res;
    sw_status st = sw_blockdev_write(d, 0, 4, &f, &res);
    expect_contains(st, SW_ERUNTIME, "completed 2 of 4 bytes", "zero progress");
    ok(res.outcome == SW_BLOCKDEV_ZERO_COMPLETION && res.completed == 2,
       "the result says zero_completion after 2 bytes");
    ok(sw_blockdev_is_faulted(d), "the device is faulted");
    int64_t calls = writes_of(d) + reads_of(d);
    st = sw_blockdev_read(d, 0, 4, &f, NULL);
    expect_contains(st, SW_ERUNTIME, "faulted", "a read after the fault");
    sw_carrier *c = NULL;
    st = sw_blockdev_allocate(d, 1, 1, SW_DTYPE_FLOAT32, 0, &c);
    expect_contains(st, SW_ERUNTIME, "faulted", "allocate after the fault");
    is_int(writes_of(d) + reads_of(d), calls, "no I/O after the fault");
    is_int(sw_blockdev_capacity(d), 64, "sizes are still reported");
    sw_blockdev_unref(d);

    /* An errno failure. */
    sw_blockdev_step r[] = {STEP(INTERRUPT, 0), STEP(ERROR, EIO)};
    d = scripted(64, 1, 4, r, 2, NULL, 0);
    if (!d)
        return;
    st = sw_blockdev_read(d, 0, 4, &f, &res);
    is_int(st, SW_EOS, "an EIO read is SW_EOS");
    is_int(sw_errno(), EIO, "with EIO");
    ok(strstr(sw_errmsg(), "Input/output error") != NULL,
       "the message has the system's text");
    sw_clear_error();
    ok(res.outcome == SW_BLOCKDEV_OS_ERROR && res.error_number == EIO,
       "the result says os_error EIO");
    ok(sw_blockdev_is_faulted(d), "the device is faulted");
    sw_blockdev_unref(d);
}

/* Ranges that do not cover whole logical blocks keep the bytes around
 * them, whatever the memory's alignment. */
static void test_unaligned(void) {
    sw_blockdev *d = plain(4096, 512, 512);
    if (!d)
        return;
    unsigned char all[1024], part[5] = {9, 8, 7, 6, 5}, back[1024];
    for (int i = 0; i < 1024; ++i)
        all[i] = (unsigned char)(i * 7);
    sw_status st = sw_blockdev_write(d, 512, 1024, all, NULL);
    expect_ok(st, "an aligned write");
    int64_t r0 = reads_of(d);
    st = sw_blockdev_write(d, 1021, 5, part, NULL);
    expect_ok(st, "a write across a block edge");
    ok(reads_of(d) > r0, "the edge blocks were read first");
    st = sw_blockdev_read(d, 513, 1023, back + 1, NULL);
    expect_ok(st, "an unaligned read into unaligned memory");
    int same = 1;
    for (int i = 1; i < 1024; ++i) {
        unsigned char want = (i >= 509 && i < 514) ? part[i - 509] : all[i];
        same &= back[i] == want;
    }
    ok(same, "only the written bytes changed");
    st = sw_blockdev_zero(d, 600, 10, NULL);
    expect_ok(st, "zero a range");
    st = sw_blockdev_read(d, 600, 10, back, NULL);
    int zero = st == SW_OK;
    for (int i = 0; i < 10; ++i)
        zero &= back[i] == 0;
    ok(zero, "the range reads back as zeros");
    sw_blockdev_unref(d);
}

/* Spans larger than one bounce buffer move in chunks. */
static void test_large(void) {
    int64_t n = (int64_t)3 << 20;
    sw_blockdev *d = plain(n + 4096, 4096, 4096);
    unsigned char *a = malloc((size_t)n), *b = malloc((size_t)n);
    if (!d || !a || !b) {
        free(a);
        free(b);
        sw_blockdev_unref(d);
        return;
    }
    for (int64_t i = 0; i < n; ++i)
        a[i] = (unsigned char)(i * 31 + 5);
    sw_status st = sw_blockdev_write(d, 100, n, a, NULL);
    expect_ok(st, "a 3 MiB write");
    st = sw_blockdev_read(d, 100, n, b, NULL);
    ok(st == SW_OK && memcmp(a, b, (size_t)n) == 0, "reads back");
    free(a);
    free(b);
    sw_blockdev_unref(d);
}

/* --------------------------------------------------------------- extents */

static void test_extents(void) {
    sw_blockdev *d = plain(64, 4, 16);
    if (!d)
        return;
    sw_carrier *a = NULL, *b = NULL, *c = NULL, *z = NULL, *big = NULL;
    sw_status st = sw_blockdev_allocate(d, 1, 1, SW_DTYPE_FLOAT32, 0, &a);
    expect_ok(st, "allocate 1");
    st = sw_blockdev_allocate(d, 5, 1, SW_DTYPE_FLOAT32, 0, &b);
    expect_ok(st, "allocate 5");
    st = sw_blockdev_allocate(d, 0, 1, SW_DTYPE_FLOAT32, 0, &z);
    expect_ok(st, "allocate 0");
    if (!a || !b || !z)
        return;
    is_int(sw_blockdev_carrier_offset(a), 0, "the first extent is at 0");
    is_int(sw_blockdev_carrier_extent(a), 16, "rounded to one physical block");
    is_int(sw_blockdev_carrier_offset(b), 16, "the next at 16");
    is_int(sw_blockdev_carrier_extent(b), 32, "20 bytes take two blocks");
    is_int(sw_blockdev_carrier_offset(z), 0, "size 0 has offset 0");
    is_int(sw_blockdev_carrier_extent(z), 0, "and extent 0");
    st = sw_blockdev_allocate(d, 5, 1, SW_DTYPE_FLOAT32, 0, &big);
    expect_contains(st, SW_ENOMEM, "no aligned extent", "nothing fits");
    ok(big == NULL, "no carrier");
    st = sw_blockdev_allocate(d, 4, 1, SW_DTYPE_FLOAT32, 0, &c);
    expect_ok(st, "the last block still fits");
    is_int(sw_blockdev_carrier_offset(c), 48, "at 48");
    /* Free a and b: they merge into one range of 48 bytes. */
    st = sw_carrier_release_storage(a);
    expect_ok(st, "release a");
    is_int(sw_blockdev_carrier_extent(a), 0, "a released extent reads 0");
    sw_carrier_unref(b); /* collected: its extent is freed */
    st = sw_blockdev_allocate(d, 12, 1, SW_DTYPE_FLOAT32, 0, &big);
    expect_ok(st, "48 bytes fit in the merged range");
    if (big)
        is_int(sw_blockdev_carrier_offset(big), 0, "lowest first");
    sw_carrier_unref(big);
    st = sw_blockdev_allocate(d, -1, 1, SW_DTYPE_FLOAT32, 0, &big);
    expect_fail(st, SW_EVALUE, "size must be non-negative", "size -1");
    st = sw_blockdev_allocate(d, INT64_MAX / 2, 1, SW_DTYPE_FLOAT32, 0, &big);
    expect_fail(st, SW_EOVERFLOW, "byte length overflows", "huge size");
    st = sw_blockdev_allocate(d, 1, 1, SW_DTYPE_INT32, 0, &big);
    expect_fail(st, SW_EVALUE, "BlockDeviceCarrier dtype must be DType.Float32",
                "Int32");
    sw_carrier_unref(a);
    sw_carrier_unref(c);
    sw_carrier_unref(z);
    sw_blockdev_unref(d);
}

static void test_zero_fill(void) {
    sw_blockdev *d = plain(64, 4, 16);
    if (!d)
        return;
    float junk[16];
    for (int i = 0; i < 16; ++i)
        junk[i] = 3.0f;
    sw_status st = sw_blockdev_write(d, 0, 64, junk, NULL);
    expect_ok(st, "fill the device");
    sw_carrier *e = NULL, *z = NULL;
    st = sw_blockdev_allocate(d, 4, 1, SW_DTYPE_FLOAT32, 1, &e);
    expect_ok(st, "allocate empty");
    st = sw_blockdev_allocate(d, 4, 1, SW_DTYPE_FLOAT32, 0, &z);
    expect_ok(st, "allocate zeroed");
    if (e && z) {
        ok(value_at(e, 0) == 3.0f, "empty keeps what the device held");
        ok(value_at(z, 3) == 0.0f, "not empty reads zeros");
        is_int(sw_carrier_version(z), 0, "a new carrier has version 0");
    }
    sw_carrier_unref(e);
    sw_carrier_unref(z);
    sw_blockdev_unref(d);

    sw_blockdev_step w[] = {STEP(ERROR, EIO)};
    d = scripted(64, 4, 16, NULL, 0, w, 1);
    if (!d)
        return;
    sw_carrier *c = NULL;
    st = sw_blockdev_allocate(d, 4, 1, SW_DTYPE_FLOAT32, 0, &c);
    is_int(st, SW_EOS, "a failed zero fill is SW_EOS");
    sw_clear_error();
    ok(c == NULL && sw_blockdev_is_faulted(d),
       "no carrier, and the device is faulted");
    is_int(sw_blockdev_carrier_count(d), 0, "no carrier object");
    sw_blockdev_unref(d);
}

/* ----------------------------------------------------------------- close */

static void test_close(void) {
    sw_blockdev *d = plain(64, 4, 16);
    if (!d)
        return;
    sw_carrier *c = NULL;
    sw_status st = sw_blockdev_allocate(d, 2, 1, SW_DTYPE_FLOAT32, 0, &c);
    expect_ok(st, "allocate");
    st = sw_carrier_release_storage(c);
    expect_ok(st, "release");
    st = sw_blockdev_close(d);
    expect_contains(st, SW_ERUNTIME, "Carrier object exists",
                    "close with a released carrier object");
    ok(!sw_blockdev_is_closed(d), "still open");
    sw_carrier_unref(c);
    st = sw_blockdev_close(d);
    expect_ok(st, "close once the object is gone");
    ok(sw_blockdev_is_closed(d), "closed");
    st = sw_blockdev_close(d);
    expect_ok(st, "a second close does nothing");
    int64_t closes = 0;
    sw_blockdev_attempts(d, NULL, NULL, &closes);
    is_int(closes, 1, "the descriptor was closed once");
    st = sw_blockdev_allocate(d, 1, 1, SW_DTYPE_FLOAT32, 0, &c);
    expect_contains(st, SW_ERUNTIME, "closed", "allocate after close");
    float f;
    st = sw_blockdev_read(d, 0, 4, &f, NULL);
    expect_fail(st, SW_ERUNTIME, "BlockDevice handle is closed",
                "a transfer after close");
    sw_blockdev_unref(d);

    d = NULL;
    st = sw_blockdev_open_scripted(64, 4, 16, NULL, 0, NULL, 0, EIO, &d);
    if (!expect_ok(st, "a device whose close fails"))
        return;
    st = sw_blockdev_close(d);
    is_int(st, SW_EOS, "the close error is SW_EOS");
    is_int(sw_errno(), EIO, "with EIO");
    sw_clear_error();
    ok(sw_blockdev_is_closed(d), "the device is closed all the same");
    st = sw_blockdev_close(d);
    expect_ok(st, "a second close does nothing");
    sw_blockdev_attempts(d, NULL, NULL, &closes);
    is_int(closes, 1, "one close call");
    sw_blockdev_unref(d);

    /* Destroying an open device closes it once. */
    d = plain(64, 4, 16);
    if (d) {
        sw_blockdev_retain(d);
        sw_blockdev_unref(d);
        ok(!sw_blockdev_is_closed(d),
           "a dropped extra reference closes nothing");
        sw_blockdev_unref(d);
    }
}

/* -------------------------------------------------------------- carriers */

static void test_values(void) {
    sw_blockdev_step w[] = {STEP(PROGRESS, 4), STEP(ERROR, EIO)};
    sw_blockdev *d = scripted(64, 4, 16, NULL, 0, w, 2);
    if (!d)
        return;
    sw_carrier *c = NULL;
    sw_status st = sw_blockdev_allocate(d, 3, 1, SW_DTYPE_FLOAT32, 1, &c);
    if (!expect_ok(st, "allocate"))
        return;
    sw_value v = sw_value_f64(1.1);
    st = sw_carrier_set(c, 1, &v);
    expect_ok(st, "write 1.1");
    ok(value_at(c, 1) == 1.1f, "reads back as its 32-bit rounding");
    is_int(sw_carrier_version(c), 1, "one write, version 1");
    int64_t before = writes_of(d);
    st = sw_carrier_set(c, 3, &v);
    expect_fail(st, SW_EINDEX, "Carrier index out of range", "index 3");
    st = sw_carrier_set(c, -1, &v);
    expect_fail(st, SW_EINDEX, "Carrier index out of range", "index -1");
    is_int(writes_of(d), before, "bounds are checked before any I/O");
    st = sw_carrier_set(c, 0, &v);
    is_int(st, SW_EOS, "a failing write is SW_EOS");
    sw_clear_error();
    is_int(sw_carrier_version(c), 2,
           "the version rose as the failing transfer started");
    ok(sw_blockdev_is_faulted(d), "the device is faulted");
    sw_value out;
    st = sw_carrier_get(c, 1, &out);
    expect_contains(st, SW_ERUNTIME, "faulted", "a read on a faulted device");
    is_int(sw_carrier_size(c), 3, "the size is still reported");
    int64_t calls = writes_of(d) + reads_of(d);
    st = sw_carrier_release_storage(c);
    expect_ok(st, "release on a faulted device");
    st = sw_carrier_release_storage(c);
    expect_ok(st, "release again");
    is_int(writes_of(d) + reads_of(d), calls, "release does no I/O");
    st = sw_carrier_get(c, 0, &out);
    expect_contains(st, SW_ERUNTIME, "released", "a read after release");
    ok(sw_blockdev_of(c) == d, "the device is kept after release");
    sw_carrier_unref(c);
    sw_blockdev_unref(d);

    /* Immutable carriers, like-allocation from a released carrier. */
    d = plain(256, 4, 16);
    if (!d)
        return;
    st = sw_blockdev_allocate(d, 2, 0, SW_DTYPE_FLOAT32, 0, &c);
    if (!expect_ok(st, "an immutable carrier"))
        return;
    before = writes_of(d);
    st = sw_carrier_set(c, 0, &v);
    expect_contains(st, SW_ERUNTIME, "not mutable", "a write to it");
    is_int(writes_of(d), before, "mutability is checked before any I/O");
    st = sw_carrier_release_storage(c);
    expect_ok(st, "release");
    sw_carrier *like = NULL;
    st = sw_carrier_allocate_like(c, 3, 1, SW_DTYPE_COUNT, 0, &like);
    ok(st == SW_OK && sw_blockdev_of(like) == d && sw_carrier_size(like) == 3,
       "allocate_like on a released carrier allocates from its device");
    sw_carrier_unref(like);
    sw_value vals[3] = {
        sw_value_f64(1.5), {SW_VALUE_NONE, {0}, NULL}, sw_value_i64(4)};
    st = sw_carrier_new_like(c, 3, vals, 0, SW_DTYPE_COUNT, &like);
    if (expect_ok(st, "new_like on a released carrier")) {
        ok(value_at(like, 0) == 1.5f && value_at(like, 1) == 0.0f &&
               value_at(like, 2) == 4.0f,
           "new_like holds the values, None as 0");
        ok(!sw_carrier_is_mutable(like), "and its mutability");
        is_int(sw_carrier_version(like), 0, "at version 0");
    }
    sw_carrier_unref(like);
    sw_carrier_unref(c);
    sw_blockdev_unref(d);
}

static void test_bulk_carrier(void) {
    sw_blockdev *d = plain(256, 4, 16);
    if (!d)
        return;
    sw_carrier *c = NULL;
    sw_status st = sw_blockdev_allocate(d, 6, 1, SW_DTYPE_FLOAT32, 0, &c);
    if (!expect_ok(st, "allocate"))
        return;
    float in[3] = {1, 2, 3}, out[3] = {0};
    st = sw_blockdev_carrier_write(c, 8, 12, in);
    expect_ok(st, "bulk write");
    is_int(sw_carrier_version(c), 1, "one version step");
    st = sw_blockdev_carrier_read(c, 8, 12, out);
    ok(st == SW_OK && memcmp(in, out, sizeof in) == 0, "bulk read back");
    ok(value_at(c, 2) == 1.0f && value_at(c, 4) == 3.0f, "at slots 2..4");
    st = sw_blockdev_carrier_read(c, 16, 12, out);
    expect_fail(st, SW_EINDEX, "Carrier index out of range", "past the slots");
    sw_carrier_unref(c);
    sw_blockdev_unref(d);
}

/* ----------------------------------------------------------------- moves */

static sw_tensor *tensor_of(sw_carrier *c, int64_t offset, const char *text) {
    sw_layout *l = NULL;
    sw_tensor *t = NULL;
    if (sw_layout_parse(text, &l) != SW_OK ||
        sw_tensor_new(c, offset, l, &t) != SW_OK) {
        diag("tensor: %s", sw_errmsg());
        sw_clear_error();
    }
    sw_layout_unref(l);
    return t;
}

static void test_moves(void) {
    sw_set_grad_enabled(0);
    ok(sw_move_dispatch(sw_move_key_cpu(), sw_move_key_blockdev()) ==
           sw_move_cpu_to_blockdev(),
       "dispatch (CPU, BDC)");
    ok(sw_move_dispatch(sw_move_key_blockdev(), sw_move_key_cpu()) ==
           sw_move_blockdev_to_cpu(),
       "dispatch (BDC, CPU)");
    sw_status st =
        sw_move_check_blockdev(sw_move_key_generic(), sw_move_key_blockdev());
    expect_contains(st, SW_ENOTIMPL, "block-device carrier pair",
                    "(Generic, BDC)");
    st = sw_move_check_blockdev(sw_move_key_blockdev(), sw_move_key_blockdev());
    expect_contains(st, SW_ENOTIMPL, "block-device carrier pair", "(BDC, BDC)");
    st = sw_move_check_blockdev(sw_move_key_blockdev(), sw_move_key_file());
    expect_contains(st, SW_ENOTIMPL, "block-device carrier pair",
                    "(BDC, FileBacked)");
    st = sw_move_register(sw_move_key_cpu(), sw_move_key_blockdev(),
                          sw_move_elementwise());
    expect_contains(st, SW_EVALUE, "protected built-ins",
                    "register (CPU, BDC)");
    st = sw_move_unregister(sw_move_key_blockdev(), sw_move_key_cpu(), NULL);
    expect_contains(st, SW_EVALUE, "protected built-ins",
                    "unregister (BDC, CPU)");
    st = sw_move_register(sw_move_key_blockdev(), sw_move_key_cpu(), NULL);
    expect_contains(st, SW_ETYPE, "operation_class",
                    "argument checks come first");

    sw_blockdev *d = plain(4096, 4, 16);
    if (!d)
        return;
    sw_carrier *cpu = NULL, *blk = NULL, *back = NULL;
    st = sw_cpu_new(8, SW_DTYPE_FLOAT32, 1, 0, &cpu);
    float *data = cpu ? sw_cpu_data(cpu) : NULL;
    for (int i = 0; data && i < 8; ++i)
        data[i] = (float)(i + 1);
    st = sw_blockdev_allocate(d, 6, 1, SW_DTYPE_FLOAT32, 0, &blk);
    expect_ok(st, "a block destination");
    /* Offset 1, layout (2,2):(1,3): span 5 with holes at 3..4. */
    sw_tensor *t = tensor_of(cpu, 1, "(2,2):(1,3)");
    sw_tensor *r = NULL;
    int64_t w0 = writes_of(d);
    st = sw_move(t, blk, &r);
    if (expect_ok(st, "move CPU -> BDC")) {
        is_int(writes_of(d) - w0, 1, "one native transfer");
        is_int(sw_carrier_version(blk), 1,
               "the destination version rises by 1");
        ok(sw_carrier_is_released(cpu), "the source is released");
        int same = 1;
        for (int i = 0; i < 5; ++i)
            same &= value_at(blk, i) == (float)(i + 2);
        ok(same, "the whole span, holes included, from offset 0");
        ok(value_at(blk, 5) == 0.0f, "slots beyond the span are left alone");
    }
    st = sw_cpu_new(5, SW_DTYPE_FLOAT32, 1, 0, &back);
    sw_tensor *r2 = NULL;
    if (r) {
        st = sw_move(r, back, &r2);
        if (expect_ok(st, "move BDC -> CPU")) {
            float *bd = sw_cpu_data(back);
            ok(bd[0] == 2 && bd[1] == 3 && bd[3] == 5 && bd[4] == 6,
               "the values come back");
            is_int(sw_carrier_version(back), 1, "its version rises by 1");
            ok(sw_carrier_is_released(blk), "the block source is released");
        }
    }
    sw_tensor_unref(t);
    sw_tensor_unref(r);
    sw_tensor_unref(r2);
    sw_carrier_unref(cpu);
    sw_carrier_unref(blk);
    sw_carrier_unref(back);

    /* Too small, unsupported classes, a terminal failure. */
    st = sw_cpu_new(4, SW_DTYPE_FLOAT32, 1, 0, &cpu);
    st = sw_blockdev_allocate(d, 1, 1, SW_DTYPE_FLOAT32, 0, &blk);
    t = tensor_of(cpu, 0, "4:1");
    w0 = writes_of(d);
    st = sw_move(t, blk, &r);
    expect_contains(st, SW_EVALUE, "too small", "an undersized destination");
    sw_op *op = NULL;
    (void)sw_move_op_new(sw_move_elementwise(), &op);
    sw_carrier_unref(blk);
    st = sw_blockdev_allocate(d, 4, 1, SW_DTYPE_FLOAT32, 0, &blk);
    w0 = writes_of(d);
    st = sw_move_op_forward(op, t, blk, &r);
    expect_contains(st, SW_ENOTIMPL, "exact built-in",
                    "the elementwise class on (CPU, BDC)");
    sw_op_unref(op);
    op = NULL;
    (void)sw_move_op_new(sw_move_cpu_to_file(), &op);
    st = sw_move_op_forward(op, t, blk, &r);
    expect_contains(st, SW_ETYPE, "FileBacked destination",
                    "the file class: its pin first");
    sw_op_unref(op);
    is_int(writes_of(d), w0, "refused moves do no I/O");
    sw_tensor_unref(t);
    sw_carrier_unref(cpu);
    sw_carrier_unref(blk);
    sw_blockdev_unref(d);

    sw_blockdev_step w[] = {STEP(PROGRESS, 4), STEP(ZERO, 0)};
    d = scripted(4096, 1, 16, NULL, 0, w, 2);
    if (!d)
        return;
    st = sw_blockdev_allocate(d, 2, 1, SW_DTYPE_FLOAT32, 1, &blk);
    st = sw_cpu_new(2, SW_DTYPE_FLOAT32, 1, 0, &cpu);
    data = sw_cpu_data(cpu);
    data[0] = 7;
    data[1] = 8;
    t = tensor_of(cpu, 0, "2:1");
    st = sw_move(t, blk, &r);
    expect_contains(st, SW_ERUNTIME, "completed 4 of 8 bytes",
                    "a zero completion during a move");
    ok(!sw_carrier_is_released(cpu), "the source is kept");
    is_int(sw_carrier_version(blk), 1, "the destination version rose by 1");
    ok(sw_blockdev_is_faulted(d), "the device is faulted");
    sw_carrier *cpu2 = NULL;
    st = sw_cpu_new(2, SW_DTYPE_FLOAT32, 1, 0, &cpu2);
    sw_tensor *tb = tensor_of(blk, 0, "2:1");
    st = sw_move(tb, cpu2, &r);
    expect_contains(st, SW_ERUNTIME, "faulted",
                    "a move from a faulted carrier");
    sw_tensor_unref(tb);
    sw_tensor_unref(t);
    sw_carrier_unref(cpu);
    sw_carrier_unref(cpu2);
    sw_carrier_unref(blk);
    sw_blockdev_unref(d);
    sw_set_grad_enabled(1);
}

static void test_evictable(void) {
    sw_blockdev *d = plain(256, 4, 16);
    if (!d)
        return;
    sw_carrier *cpu = NULL, *blk = NULL, *ev = NULL;
    (void)sw_cpu_new(2, SW_DTYPE_FLOAT32, 1, 0, &cpu);
    (void)sw_blockdev_allocate(d, 2, 1, SW_DTYPE_FLOAT32, 0, &blk);
    sw_status st = sw_evictable_new(cpu, blk, &ev);
    expect_contains(st, SW_ETYPE, "not a supported Evictable tier",
                    "a block secondary");
    st = sw_evictable_new(blk, blk, &ev);
    expect_contains(st, SW_ETYPE, "not a supported Evictable tier",
                    "before the distinctness check");
    sw_carrier_unref(cpu);
    sw_carrier_unref(blk);
    sw_blockdev_unref(d);
}

/* --------------------------------------------------------- fault walk */

/* Every allocation of opening, allocating and moving fails once in turn:
 * a clean SW_ENOMEM and nothing leaked. */
static void test_alloc_failures(void) {
    int64_t base = sw_debug_live_allocs();
    int clean = 1;
    for (int64_t n = 0; n < 64; ++n) {
        sw_blockdev_step w[] = {STEP(INTERRUPT, 0)};
        sw_debug_fail_alloc_after(n);
        sw_blockdev *d = NULL;
        sw_carrier *c = NULL, *c2 = NULL, *cpu = NULL;
        sw_tensor *t = NULL, *r = NULL;
        sw_layout *l = NULL;
        sw_status st =
            sw_blockdev_open_scripted(256, 4, 16, NULL, 0, w, 1, 0, &d);
        for (int k = 0; !st && k < 10; ++k) {
            sw_carrier *x = NULL;
            st = sw_blockdev_allocate(d, 4, 1, SW_DTYPE_FLOAT32, k & 1, &x);
            if (!st) {
                sw_carrier_unref(c);
                c = x;
            }
        }
        if (!st)
            st = sw_blockdev_allocate(d, 2, 1, SW_DTYPE_FLOAT32, 0, &c2);
        if (!st)
            st = sw_cpu_new(2, SW_DTYPE_FLOAT32, 1, 0, &cpu);
        if (!st)
            st = sw_layout_leaf(2, 1, &l);
        if (!st)
            st = sw_tensor_new(cpu, 0, l, &t);
        if (!st)
            st = sw_move(t, c2, &r);
        sw_debug_fail_alloc_after(-1);
        if (st && st != SW_ENOMEM) {
            diag("step %lld: %s %s", (long long)n, S(st), sw_errmsg());
            clean = 0;
        }
        sw_clear_error();
        sw_tensor_unref(r);
        sw_tensor_unref(t);
        sw_layout_unref(l);
        sw_carrier_unref(cpu);
        sw_carrier_unref(c2);
        sw_carrier_unref(c);
        if (d && sw_blockdev_carrier_count(d) != 0)
            clean = 0;
        sw_blockdev_unref(d);
        if (sw_debug_live_allocs() != base) {
            diag("step %lld leaked", (long long)n);
            clean = 0;
            base = sw_debug_live_allocs();
        }
        if (!st)
            break;
    }
    ok(clean, "every injected allocation failure is a clean SW_ENOMEM");
}

int main(void) {
    int64_t base = sw_debug_live_allocs();
    test_geometry();
    test_open_paths();
    test_preflight();
    test_retries();
    test_faults();
    test_unaligned();
    test_large();
    test_extents();
    test_zero_fill();
    test_close();
    test_values();
    test_bulk_carrier();
    test_moves();
    test_evictable();
    leak_check(base, "the whole program");
    test_alloc_failures();
    return done_testing();
}
