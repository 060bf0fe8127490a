/*
 * The OpenCL carrier (opencl.h) on whatever OpenCL runtime is installed
 * (PoCL in CI): construction and validation, storage, element access and
 * its version rule, factories, release, scatter, the exact bulk moves and
 * their failure atomicity at each synchronisation point, the interval a
 * profiled move's completion covers, and OpenCL as a TiledEvictable tier
 * (tile transfers of rank up to 4 over a CPU or a FileBacked secondary,
 * their rollback, the refusal of a pair without exact moves), and the
 * moves between FileBacked and OpenCL.
 *
 * Without a runtime the argument checks still run (they come before the
 * runtime loads) and the rest is skipped, unless STRIDEWEAVE_REQUIRE_OPENCL
 * is set (CI), when a missing runtime is a failure.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "strideweave/strideweave.h"

static sw_tensor *tensor_over(sw_carrier *c, int64_t offset, const char *text) {
    sw_layout *l = NULL;
    sw_tensor *t = NULL;
    if (sw_layout_parse(text, &l) == SW_OK)
        (void)sw_tensor_new(c, offset, l, &t);
    sw_layout_unref(l);
    return t;
}

static double get_f(sw_carrier *c, int64_t i) {
    sw_value v;
    if (sw_carrier_get(c, i, &v) != SW_OK)
        return -999.0;
    return v.kind == SW_VALUE_F64 ? v.as.f : (double)v.as.i;
}

static void test_validation(void) {
    sw_carrier *c = NULL;
    sw_status st = sw_opencl_new(-1, SW_DTYPE_FLOAT32, 1, 0, -1, &c);
    expect_fail(st, SW_EVALUE, "OpenCL size must be non-negative",
                "a negative size");
    st = sw_opencl_new(4, SW_DTYPE_FLOATING, 1, 0, -1, &c);
    expect_fail(st, SW_EVALUE,
                "OpenCL dtype must be DType.Float32, DType.Int32 or "
                "DType.Bool",
                "an unsupported dtype");
    st = sw_opencl_new(INT64_MAX / 2, SW_DTYPE_FLOAT32, 1, 0, -1, &c);
    expect_fail(st, SW_EOVERFLOW, NULL, "a size whose bytes overflow");
    st = sw_opencl_new(4, SW_DTYPE_FLOAT32, 1, 0, -2, &c);
    expect_fail(st, SW_EVALUE,
                "OpenCL device must be a non-negative index or -1",
                "a bad device index");
    ok(sw_opencl_supports_dtype(SW_DTYPE_FLOAT32) &&
           sw_opencl_supports_dtype(SW_DTYPE_INT32) &&
           sw_opencl_supports_dtype(SW_DTYPE_BOOL) &&
           !sw_opencl_supports_dtype(SW_DTYPE_FLOATING) &&
           !sw_opencl_supports_dtype(SW_DTYPE_ANY),
       "storage dtypes are Float32, Int32 and Bool, without the runtime");
}

static void test_storage(void) {
    sw_carrier *c = NULL;
    if (!expect_ok(sw_opencl_new(5, SW_DTYPE_FLOAT32, 1, 0, -1, &c), "new"))
        return;
    ok(sw_carrier_is_opencl(c), "the carrier is an OpenCL carrier");
    is_int(sw_carrier_size(c), 5, "size");
    ok(sw_opencl_device_of(c) >= 0, "it has a device");
    int zero = 1;
    for (int64_t i = 0; i < 5; ++i)
        zero = zero && get_f(c, i) == 0.0;
    ok(zero, "slots are zero-initialised");
    sw_value v = sw_value_f64(2.5);
    sw_status st = sw_carrier_set(c, 3, &v);
    expect_ok(st, "a scalar write");
    is_int(sw_carrier_version(c), 1, "a write bumps the version by one");
    ok(get_f(c, 3) == 2.5, "a synchronised read sees the write");
    st = sw_carrier_get(c, 5, &v);
    expect_fail(st, SW_EINDEX, "Carrier index out of range", "out of range");

    /* A write the device does not confirm is not published. */
    v = sw_value_f64(7.0);
    sw_debug_opencl_fail(SW_OPENCL_STAGE_WAIT, 0);
    st = sw_carrier_set(c, 3, &v);
    expect_fail(st, SW_ERUNTIME, "OpenCL write failed (injected)",
                "a write whose wait fails");
    is_int(sw_carrier_version(c), 1, "the failed write left the version");
    ok(get_f(c, 3) == 2.5, "the failed write left the value");
    sw_debug_opencl_fail(SW_OPENCL_STAGE_ENQUEUE, 1); /* the old read passes */
    st = sw_carrier_set(c, 3, &v);
    expect_fail(st, SW_ERUNTIME, "OpenCL write failed (injected)",
                "a write whose enqueue fails");
    is_int(sw_carrier_version(c), 1, "the refused write left the version");
    ok(get_f(c, 3) == 2.5, "the refused write left the value");

    ok(sw_carrier_dlpack_info(c, &(void *){NULL}, &(int32_t){0},
                              &(int32_t){0}) == SW_EBUFFER,
       "DLPack export is refused");
    sw_clear_error();

    /* Factories. */
    sw_carrier *a = NULL, *n = NULL;
    expect_ok(sw_carrier_allocate_like(c, 3, 0, SW_DTYPE_INT32, 0, &a),
              "allocate_like with a dtype override");
    if (a) {
        ok(sw_carrier_is_opencl(a) && sw_carrier_dtype(a) == SW_DTYPE_INT32 &&
               !sw_carrier_is_mutable(a) && get_f(a, 2) == 0.0,
           "allocate_like gives a fresh zeroed immutable Int32 carrier");
        sw_value w = sw_value_i64(1);
        st = sw_carrier_set(a, 0, &w);
        expect_fail(st, SW_ERUNTIME, "Carrier is not mutable",
                    "writing an immutable carrier");
    }
    sw_value vals[3] = {sw_value_i64(4), sw_value_i64(-2), sw_value_i64(9)};
    expect_ok(sw_carrier_new_like(c, 3, vals, 1, SW_DTYPE_INT32, &n),
              "new_like");
    if (n)
        ok(get_f(n, 0) == 4 && get_f(n, 1) == -2 && get_f(n, 2) == 9 &&
               sw_carrier_version(n) == 0,
           "new_like holds the values at version 0");
    sw_carrier *bad = NULL;
    sw_value big = sw_value_i64((int64_t)1 << 31);
    st = sw_carrier_new_like(c, 1, &big, 1, SW_DTYPE_INT32, &bad);
    expect_fail(st, SW_EOVERFLOW, "OpenCL value is out of int32 range",
                "new_like with 2**31 into Int32");
    sw_value f = sw_value_f64(0.5);
    st = sw_carrier_new_like(c, 1, &f, 1, SW_DTYPE_INT32, &bad);
    expect_fail(st, SW_ETYPE, "OpenCL value must be an integer",
                "new_like with a float into Int32");
    sw_debug_opencl_fail(SW_OPENCL_STAGE_MAP, 0);
    st = sw_carrier_new_like(c, 3, vals, 1, SW_DTYPE_INT32, &bad);
    expect_fail(st, SW_ERUNTIME, "OpenCL map failed (injected)",
                "new_like whose map fails");

    /* Release. */
    expect_ok(sw_carrier_release_storage(c), "release");
    is_int(sw_carrier_size(c), 0, "a released carrier has size 0");
    st = sw_carrier_get(c, 0, &v);
    expect_fail(st, SW_ERUNTIME, "Carrier is released",
                "reading after release");
    sw_carrier *again = NULL;
    expect_ok(sw_carrier_allocate_like(c, 2, 1, SW_DTYPE_COUNT, 0, &again),
              "allocate_like after release");
    sw_carrier_unref(again);
    sw_carrier_unref(a);
    sw_carrier_unref(n);
    sw_carrier_unref(c);
}

static void test_scatter(void) {
    sw_carrier *c = NULL, *src = NULL;
    if (!expect_ok(sw_opencl_new(6, SW_DTYPE_FLOAT32, 1, 0, -1, &c), "new") ||
        !expect_ok(sw_cpu_new(2, SW_DTYPE_FLOAT32, 1, 0, &src), "source")) {
        sw_carrier_unref(c);
        return;
    }
    sw_value v = sw_value_f64(1.5);
    (void)sw_carrier_set(src, 0, &v);
    v = sw_value_f64(-3.0);
    (void)sw_carrier_set(src, 1, &v);
    sw_tensor *s = tensor_over(src, 0, "2:1");
    sw_tensor *onto = tensor_over(c, 1, "5:1");
    sw_layout *map = NULL, *far = NULL;
    (void)sw_layout_parse("2:3", &map);
    (void)sw_layout_parse("2:9", &far);
    int64_t before = sw_carrier_version(c);
    sw_status st = sw_opencl_scatter(c, s, onto, far, 0);
    expect_fail(st, SW_EINDEX, "Carrier index out of range",
                "scatter out of range");
    is_int(sw_carrier_version(c), before,
           "a refused scatter keeps the version");
    sw_debug_opencl_fail(SW_OPENCL_STAGE_WAIT, 0);
    st = sw_opencl_scatter(c, s, onto, map, 0);
    expect_fail(st, SW_ERUNTIME, "OpenCL write failed (injected)",
                "scatter whose wait fails");
    ok(get_f(c, 1) == 0.0 && get_f(c, 4) == 0.0 &&
           sw_carrier_version(c) == before,
       "a failed scatter leaves values and version");
    st = sw_opencl_scatter(c, s, onto, map, 0);
    expect_ok(st, "scatter");
    ok(get_f(c, 1) == 1.5 && get_f(c, 4) == -3.0 && get_f(c, 0) == 0.0,
       "scatter writes the mapped slots");
    is_int(sw_carrier_version(c), before + 1, "scatter bumps the version once");
    sw_layout_unref(map);
    sw_layout_unref(far);
    sw_tensor_unref(s);
    sw_tensor_unref(onto);
    sw_carrier_unref(src);
    sw_carrier_unref(c);
}

/* A CPU Float32 carrier holding 0, 1, 2, ... */
static sw_carrier *cpu_iota(int64_t n) {
    sw_carrier *c = NULL;
    if (sw_cpu_new(n, SW_DTYPE_FLOAT32, 1, 0, &c) != SW_OK)
        return NULL;
    float *d = sw_cpu_data(c);
    for (int64_t i = 0; i < n; ++i)
        d[i] = (float)i;
    return c;
}

static void test_moves(void) {
    ok(sw_move_dispatch(sw_move_key_cpu(), sw_move_key_opencl()) ==
               sw_move_cpu_to_opencl() &&
           sw_move_dispatch(sw_move_key_opencl(), sw_move_key_cpu()) ==
               sw_move_opencl_to_cpu() &&
           sw_move_dispatch(sw_move_key_opencl(), sw_move_key_opencl()) ==
               sw_move_opencl_to_opencl(),
       "the three exact pairs are registered from the start");

    /* CPU -> OpenCL with holes and an offset; a larger fresh destination
     * keeps zero tail slots. */
    sw_carrier *cpu = cpu_iota(12), *dev = NULL, *dev2 = NULL, *back = NULL;
    (void)sw_opencl_new(9, SW_DTYPE_FLOAT32, 1, 0, -1, &dev);
    sw_tensor *t = tensor_over(cpu, 2, "(2,2):(1,4)"), *r = NULL, *r2 = NULL,
              *r3 = NULL;
    sw_status st = sw_move(t, dev, &r);
    if (!expect_ok(st, "CPU -> OpenCL"))
        goto out;
    ok(sw_carrier_is_released(cpu), "the source is released");
    ok(get_f(dev, 0) == 2 && get_f(dev, 1) == 3 && get_f(dev, 2) == 4 &&
           get_f(dev, 4) == 6 && get_f(dev, 5) == 7 && get_f(dev, 6) == 0 &&
           get_f(dev, 8) == 0,
       "the physical span is copied, holes included; the tail stays zero");
    is_int(sw_carrier_version(dev), 0, "a move does not bump the destination");
    ok(sw_layout_equal(sw_tensor_layout(r), sw_tensor_layout(t)) &&
           sw_tensor_offset(r) == 0,
       "the layout is kept at offset 0");

    /* OpenCL -> OpenCL, then OpenCL -> CPU (a destination whose tail is
     * left alone). */
    (void)sw_opencl_new(6, SW_DTYPE_FLOAT32, 1, 1, -1, &dev2);
    st = sw_move(r, dev2, &r2);
    if (!expect_ok(st, "OpenCL -> OpenCL"))
        goto out;
    ok(get_f(dev2, 4) == 6 && sw_carrier_is_released(dev),
       "OpenCL -> OpenCL copies and releases");
    back = cpu_iota(7);
    float *bd = sw_cpu_data(back);
    bd[6] = 42.0f;
    st = sw_move(r2, back, &r3);
    if (!expect_ok(st, "OpenCL -> CPU"))
        goto out;
    ok(bd[0] == 2 && bd[1] == 3 && bd[4] == 6 && bd[5] == 7 && bd[6] == 42.0f,
       "OpenCL -> CPU copies the span and leaves the CPU tail");
out:
    sw_tensor_unref(t);
    sw_tensor_unref(r);
    sw_tensor_unref(r2);
    sw_tensor_unref(r3);
    sw_carrier_unref(cpu);
    sw_carrier_unref(dev);
    sw_carrier_unref(dev2);
    sw_carrier_unref(back);
}

/*
 * FileBacked -> OpenCL -> FileBacked: the span with its holes goes into a
 * fresh device buffer (a larger destination keeps its tail) and back into
 * a growing file, which ends as large as the span; neither destination's
 * version moves; a failing map or file read leaves the destination as it
 * was and the source live.
 */
static void test_file_moves(void) {
    ok(sw_move_dispatch(sw_move_key_file(), sw_move_key_opencl()) ==
               sw_move_file_to_opencl() &&
           sw_move_dispatch(sw_move_key_opencl(), sw_move_key_file()) ==
               sw_move_opencl_to_file(),
       "the file pairs are registered from the start");
    sw_carrier *fb = NULL, *dev = NULL, *out = NULL;
    (void)sw_file_new(NULL, SW_DTYPE_FLOAT32, 1, &fb);
    (void)sw_file_new(NULL, SW_DTYPE_FLOAT32, 1, &out);
    (void)sw_opencl_new(8, SW_DTYPE_FLOAT32, 1, 0, -1, &dev);
    float vals[10];
    for (int i = 0; i < 10; ++i)
        vals[i] = (float)i;
    sw_tensor *t = NULL, *r = NULL, *r2 = NULL;
    if (!expect_ok(sw_file_resize(fb, 10), "a file of 10") ||
        !expect_ok(sw_file_write(fb, 0, 10, vals), "its values"))
        goto out;
    t = tensor_over(fb, 2, "(2,2):(1,4)");
    sw_debug_opencl_fail(SW_OPENCL_STAGE_MAP, 0);
    sw_status st = sw_move(t, dev, &r);
    sw_debug_opencl_fail(SW_OPENCL_STAGE_NONE, 0);
    ok(st == SW_ERUNTIME && !sw_carrier_is_released(fb) && get_f(dev, 0) == 0 &&
           sw_carrier_version(dev) == 0,
       "a failing map: the source stays, the destination is unchanged");
    sw_debug_fail_io_after(0);
    st = sw_move(t, dev, &r);
    sw_debug_fail_io_after(-1);
    ok(st != SW_OK && !sw_carrier_is_released(fb) && get_f(dev, 0) == 0 &&
           sw_carrier_version(dev) == 0,
       "a failing file read: the same");
    if (!expect_ok(sw_move(t, dev, &r), "FileBacked -> OpenCL"))
        goto out;
    ok(sw_carrier_is_released(fb) && get_f(dev, 0) == 2 && get_f(dev, 3) == 5 &&
           get_f(dev, 5) == 7 && get_f(dev, 6) == 0 && get_f(dev, 7) == 0 &&
           sw_carrier_version(dev) == 0,
       "the span, holes included, in a fresh buffer; the tail stays zero");
    if (!expect_ok(sw_move(r, out, &r2), "OpenCL -> FileBacked"))
        goto out;
    float back[6] = {0};
    ok(sw_carrier_size(out) == 6 && sw_file_read(out, 0, 6, back) == SW_OK &&
           back[0] == 2 && back[5] == 7 && sw_carrier_version(out) == 0 &&
           sw_carrier_is_released(dev),
       "the growing file takes the span, its version unchanged");
out:
    sw_tensor_unref(t);
    sw_tensor_unref(r);
    sw_tensor_unref(r2);
    sw_carrier_unref(fb);
    sw_carrier_unref(dev);
    sw_carrier_unref(out);
}

/* A move whose device work fails at stage (after `after` calls) is atomic. */
static void check_atomic(int to_device, sw_opencl_stage stage, int64_t after,
                         const char *what) {
    sw_carrier *cpu = cpu_iota(4), *dev = NULL;
    (void)sw_opencl_new(4, SW_DTYPE_FLOAT32, 1, 0, -1, &dev);
    sw_value v = sw_value_f64(-1.0);
    (void)sw_carrier_set(dev, 1, &v);
    int64_t cv = sw_carrier_version(cpu), dv = sw_carrier_version(dev);
    sw_tensor *t =
        to_device ? tensor_over(cpu, 0, "4:1") : tensor_over(dev, 0, "4:1");
    sw_carrier *dst = to_device ? dev : cpu;
    sw_tensor *r = NULL;
    sw_move_request *req = NULL;
    sw_debug_opencl_fail(stage, after);
    sw_status st = sw_move_async(t, dst, &req);
    if (!st)
        st = sw_move_request_wait(req, &r);
    sw_debug_opencl_fail(SW_OPENCL_STAGE_NONE, 0);
    ok(st == SW_ERUNTIME && strstr(sw_errmsg(), "(injected)") != NULL,
       "%s: the move fails (%s)", what, sw_errmsg());
    sw_clear_error();
    ok(!sw_carrier_is_released(cpu) && !sw_carrier_is_released(dev),
       "%s: the source is not released", what);
    float *d = sw_cpu_data(cpu);
    ok(d && d[0] == 0 && d[1] == 1 && d[3] == 3, "%s: CPU values unchanged",
       what);
    ok(get_f(dev, 0) == 0 && get_f(dev, 1) == -1.0 && get_f(dev, 3) == 0,
       "%s: OpenCL values unchanged", what);
    ok(sw_carrier_version(cpu) == cv && sw_carrier_version(dev) == dv,
       "%s: no version changed", what);
    ok(!sw_carrier_is_owned(cpu) && !sw_carrier_is_owned(dev),
       "%s: the carriers are free again", what);
    sw_move_request_unref(req);
    sw_tensor_unref(r);
    sw_tensor_unref(t);
    sw_carrier_unref(cpu);
    sw_carrier_unref(dev);
}

static void test_move_faults(void) {
    check_atomic(1, SW_OPENCL_STAGE_ENQUEUE, 0, "CPU -> OpenCL, enqueue");
    check_atomic(1, SW_OPENCL_STAGE_WAIT, 0, "CPU -> OpenCL, wait");
    check_atomic(0, SW_OPENCL_STAGE_MAP, 0, "OpenCL -> CPU, map");
    check_atomic(0, SW_OPENCL_STAGE_WAIT, 0, "OpenCL -> CPU, wait");
}

static void test_async(void) {
    /* A large move completes on the executor through the device's event. */
    int64_t n = (int64_t)1 << 20;
    sw_carrier *cpu = cpu_iota(n), *dev = NULL;
    (void)sw_opencl_new(n, SW_DTYPE_FLOAT32, 1, 1, -1, &dev);
    sw_layout *l = NULL;
    (void)sw_layout_leaf(n, 1, &l);
    sw_tensor *t = NULL, *r = NULL;
    (void)sw_tensor_new(cpu, 0, l, &t);
    sw_move_request *req = NULL;
    sw_status st = sw_move_async(t, dev, &req);
    if (expect_ok(st, "move_async")) {
        st = sw_move_request_wait(req, &r);
        expect_ok(st, "its wait");
        ok(get_f(dev, n - 1) == (double)(n - 1) && sw_carrier_is_released(cpu),
           "the move completed and released its source");
    }
    sw_move_request_unref(req);
    sw_tensor_unref(r);
    sw_tensor_unref(t);
    sw_layout_unref(l);

    sw_carrier_unref(cpu);
    sw_carrier_unref(dev);
}

/* Whether the default device is a CPU device (PoCL): its large buffers
 * are host blocks that the library keeps for reuse. */
static int default_is_cpu(void) {
    for (int64_t i = 0; i < sw_opencl_device_count(); ++i) {
        sw_opencl_device_desc d;
        if (sw_opencl_device_info(i, &d) == SW_OK && d.is_default)
            return strcmp(d.type, "CPU") == 0;
    }
    return 0;
}

/* Makes and drops an OpenCL carrier of n Float32 elements (empty: its
 * memory is never touched). */
static void churn(int64_t n) {
    sw_carrier *c = NULL;
    if (sw_opencl_new(n, SW_DTYPE_FLOAT32, 1, 1, -1, &c) == SW_OK)
        sw_carrier_unref(c);
}

/*
 * The kept host blocks of a CPU device. Runs before any other test makes
 * a buffer of 2 MiB or more, and uses carriers that no command ever
 * touched, so that each buffer is gone (and its block back) when the
 * carrier is dropped. That a reused block reads zero is checked from
 * Python (test_reused_device_memory_is_overwritten).
 */
static void test_buffer_cache(void) {
    const int64_t mib = (int64_t)1 << 20;
    int64_t blocks = -1, bytes = -1, reused = -1, reused2 = -1;
    sw_opencl_empty_cache();
    sw_opencl_buffer_stats(&blocks, &bytes, &reused);
    ok(blocks == 0 && bytes == 0, "empty_cache keeps no block");
    sw_opencl_buffer_stats(NULL, NULL, NULL); /* every argument optional */
    int cpu = default_is_cpu();

    /* A released 4 MiB carrier's block is kept, and the next carrier of
     * that size takes it. */
    int64_t n = mib; /* Float32 elements: 4 MiB */
    churn(n);
    sw_opencl_buffer_stats(&blocks, &bytes, NULL);
    if (cpu)
        ok(blocks == 1 && bytes == 4 * mib,
           "a released 4 MiB buffer keeps its block (%lld, %lld bytes)",
           (long long)blocks, (long long)bytes);
    else
        ok(blocks == 0, "a device's own buffers are not kept");
    sw_carrier *b = NULL;
    (void)sw_opencl_new(n, SW_DTYPE_FLOAT32, 1, 1, -1, &b);
    sw_opencl_buffer_stats(&blocks, NULL, &reused2);
    ok(b && reused2 == reused + (cpu ? 1 : 0) && blocks == 0,
       "the next buffer of that size takes the block");
    sw_carrier_unref(b);

    /* Sizes are rounded up to 2 MiB: 4 MiB + 4 bytes is another size;
     * below 2 MiB nothing is kept. */
    churn(n + 1);
    churn(n / 4);
    sw_opencl_buffer_stats(&blocks, &bytes, NULL);
    ok(!cpu || (blocks == 2 && bytes == 10 * mib),
       "6 MiB and 4 MiB blocks kept, 1 MiB not (%lld, %lld bytes)",
       (long long)blocks, (long long)bytes);

    /* At most four blocks, the oldest dropped first; at most 512 MiB. */
    sw_opencl_empty_cache();
    for (int i = 1; i <= 5; ++i)
        churn(i * 2 * mib / 4); /* 2, 4, 6, 8, 10 MiB */
    sw_opencl_buffer_stats(&blocks, &bytes, NULL);
    ok(!cpu || (blocks == 4 && bytes == 28 * mib),
       "four blocks kept, the oldest (2 MiB) dropped");
    churn(130 * mib / 4);
    churn(132 * mib / 4);
    churn(134 * mib / 4);
    churn(136 * mib / 4); /* 532 MiB with the 10 MiB block: too many */
    sw_opencl_buffer_stats(&blocks, &bytes, NULL);
    ok(!cpu || (blocks == 3 && bytes == (132 + 134 + 136) * mib),
       "the oldest blocks dropped to stay within 512 MiB (%lld, %lld bytes)",
       (long long)blocks, (long long)bytes);
    churn(514 * mib / 4);
    sw_opencl_buffer_stats(&blocks, &bytes, NULL);
    ok(!cpu || (blocks == 3 && bytes == (132 + 134 + 136) * mib),
       "a block larger than 512 MiB is not kept");
    sw_opencl_empty_cache();
    sw_opencl_buffer_stats(&blocks, &bytes, NULL);
    ok(blocks == 0 && bytes == 0, "empty_cache frees every kept block");
}

/* Runs built-in op on the given arguments through the carrier of the
 * first one; the result or NULL. */
static sw_tensor *run_op(const char *name, int32_t nargs, const sw_arg *args) {
    sw_op *op = NULL;
    sw_tensor *r = NULL;
    if (sw_carrier_dispatch_op(sw_tensor_carrier(args[0].as.tensor), name,
                               &op) == SW_OK)
        (void)sw_op_forward(op, nargs, args, &r);
    sw_op_unref(op);
    return r;
}

static double tget(sw_tensor *t, int64_t i) {
    sw_value v;
    if (!t || sw_tensor_get(t, i, &v) != SW_OK)
        return -999.0;
    return v.kind == SW_VALUE_F64 ? v.as.f : (double)v.as.i;
}

static void test_operations(void) {
    /* Six values 0..5 on the device, read through two layouts. */
    sw_carrier *c = NULL;
    (void)sw_opencl_new(6, SW_DTYPE_FLOAT32, 1, 0, -1, &c);
    for (int64_t i = 0; i < 6; ++i) {
        sw_value v = {.kind = SW_VALUE_F64, .as.f = (double)i};
        (void)sw_carrier_set(c, i, &v);
    }
    sw_tensor *a = tensor_over(c, 0, "(2,3):(1,2)");
    sw_tensor *b = tensor_over(c, 0, "(2,3):(3,1)");
    sw_arg ab[2] = {sw_arg_tensor(a), sw_arg_tensor(b)};
    int64_t compiled0 = 0, compiled1 = 0, launched0 = 0, launched1 = 0;
    sw_opencl_kernel_stats(NULL, &compiled0, &launched0);
    sw_tensor *sum = run_op("add", 2, ab);
    /* a(i, j) = 2j + i, b(i, j) = 3i + j: the logical order is i fastest. */
    ok(sum && sw_carrier_is_opencl(sw_tensor_carrier(sum)) &&
           tget(sum, 0) == 0.0 && tget(sum, 1) == 4.0 &&
           tget(sum, 5) == 5.0 + 5.0,
       "add of a compact and a transposed layout runs on the device");
    sw_tensor *again = run_op("add", 2, ab);
    sw_opencl_kernel_stats(NULL, &compiled1, &launched1);
    ok(compiled1 == compiled0 + 1 && launched1 == launched0 + 2,
       "one compile for two launches of one specialisation");
    sw_tensor *prod = run_op("matmul", 2, ab);
    /* C[i, j] = sum_k a(i, k) b(j, k). */
    ok(prod && tget(prod, 0) == 0 * 0 + 2 * 1 + 4 * 2 &&
           tget(prod, 3) == 1 * 3 + 3 * 4 + 5 * 5,
       "matmul on the device");
    sw_arg one = sw_arg_tensor(a);
    sw_tensor *red = run_op("reduce", 1, &one);
    ok(red && tget(red, 0) == 0 + 2 + 4 && tget(red, 1) == 1 + 3 + 5,
       "reduce on the device");
    sw_tensor *ex = run_op("exp", 1, &one);
    ok(ex && tget(ex, 2) > 7.389 && tget(ex, 2) < 7.390, "exp on the device");

    /* Int32 overflow is reported by the call that caused it. */
    sw_carrier *ic = NULL;
    (void)sw_opencl_new(1, SW_DTYPE_INT32, 1, 0, -1, &ic);
    sw_value big = {.kind = SW_VALUE_I64, .as.i = (int64_t)1 << 30};
    (void)sw_carrier_set(ic, 0, &big);
    sw_tensor *it = tensor_over(ic, 0, "1:1");
    sw_arg ii[2] = {sw_arg_tensor(it), sw_arg_tensor(it)};
    sw_op *op = NULL;
    sw_tensor *r = NULL;
    sw_status st = sw_carrier_dispatch_op(ic, "add", &op);
    if (!st)
        st = sw_op_forward(op, 2, ii, &r);
    is_int(st, SW_EOVERFLOW, "Int32 overflow: %s", sw_errmsg());
    ok(r == NULL, "no result on overflow");
    sw_op_unref(op);
    sw_clear_error();

    /* Bool and unknown operations are refused. */
    sw_carrier *bc = NULL;
    (void)sw_opencl_new(1, SW_DTYPE_BOOL, 1, 0, -1, &bc);
    sw_tensor *bt = tensor_over(bc, 0, "1:1");
    sw_arg bb[2] = {sw_arg_tensor(bt), sw_arg_tensor(bt)};
    op = NULL;
    st = sw_carrier_dispatch_op(bc, "add", &op);
    if (!st)
        st = sw_op_forward(op, 2, bb, &r);
    is_int(st, SW_ETYPE, "Bool refused: %s", sw_errmsg());
    sw_op_unref(op);
    op = NULL;
    is_int(sw_carrier_dispatch_op(bc, "no_such_op", &op), SW_ENOTIMPL,
           "an unknown operation is refused: %s", sw_errmsg());
    sw_clear_error();

    sw_tensor *list[] = {a, b, sum, again, prod, red, ex, it, bt};
    for (size_t i = 0; i < sizeof list / sizeof *list; ++i)
        sw_tensor_unref(list[i]);
    sw_carrier_unref(bc);
    sw_carrier_unref(ic);
    sw_carrier_unref(c);
}

/* The values of a tiled carrier, read slot by slot, against 0, 1, ... */
static int tiled_is_iota(sw_carrier *t, int64_t n) {
    int good = 1;
    for (int64_t i = 0; i < n && good; ++i)
        good = get_f(t, i) == (double)i;
    return good;
}

static int64_t tile_loc(sw_carrier *t, int64_t tile) {
    sw_tile_location loc = SW_TILE_IMPLICIT;
    int valid = 0, dirty = 0;
    if (sw_tiled_tile_state(t, tile, &loc, &valid, &dirty) != SW_OK)
        return -1;
    return (int64_t)loc;
}

/*
 * An OpenCL primary over a CPU secondary (or a FileBacked one, grown from
 * empty, when file), rank 4 with no axis merged away (two rectangular
 * regions per tile) and one with a single-tile axis (a merged mode): evict
 * and promote move the tiles' footprints on the device, with the values
 * of 0, 1, ... throughout; the device tier's version does not move, nor
 * does a CPU secondary's; a failing transfer rolls the request back.
 */
static void check_tiled_geometry(int32_t rank, const int64_t *grid,
                                 const int64_t *tile, int file,
                                 const char *what) {
    sw_tile_geometry g;
    if (sw_tile_geometry_init(rank, grid, tile, &g) != SW_OK)
        bail_out(sw_errmsg());
    sw_carrier *host = cpu_iota(g.size), *dev = NULL, *sec = NULL, *t = NULL;
    (void)sw_opencl_new(g.size, SW_DTYPE_FLOAT32, 1, 1, -1, &dev);
    if (file)
        (void)sw_file_new(NULL, SW_DTYPE_FLOAT32, 1, &sec);
    else
        (void)sw_cpu_new(g.size, SW_DTYPE_FLOAT32, 1, 0, &sec);
    sw_layout *flat = NULL;
    sw_tensor *h = NULL, *moved = NULL;
    (void)sw_layout_leaf(g.size, 1, &flat);
    (void)sw_tensor_new(host, 0, flat, &h);
    if (!expect_ok(sw_move(h, dev, &moved), "values onto the device") ||
        !expect_ok(sw_tiled_new(dev, sec, rank, grid, tile, &t), what))
        goto out;
    int64_t *all = malloc((size_t)g.ntiles * sizeof *all);
    for (int64_t i = 0; i < g.ntiles; ++i)
        all[i] = i;
    expect_ok(sw_tiled_evict(t, g.ntiles, all), "evict every tile");
    ok(tile_loc(t, g.ntiles - 1) == SW_TILE_SECONDARY &&
           tiled_is_iota(t, g.size),
       "%s: every tile is on the host with its values", what);
    int64_t odd[64], nodd = 0;
    for (int64_t i = 1; i < g.ntiles && nodd < 64; i += 2)
        odd[nodd++] = i;
    expect_ok(sw_tiled_promote(t, nodd, odd), "promote every other tile");
    ok(tile_loc(t, 1) == SW_TILE_PRIMARY &&
           tile_loc(t, 0) == SW_TILE_SECONDARY && tiled_is_iota(t, g.size),
       "%s: promoted tiles come back to the device", what);
    is_int(sw_carrier_version(dev) + (file ? 0 : sw_carrier_version(sec)), 0,
           "%s: no element write reached a tier", what);
    /* The second tile's write fails: the first one's is undone too. */
    sw_debug_opencl_fail(SW_OPENCL_STAGE_ENQUEUE, 1);
    sw_status st = sw_tiled_promote(t, g.ntiles, all);
    sw_debug_opencl_fail(SW_OPENCL_STAGE_NONE, 0);
    ok(st == SW_ERUNTIME && strstr(sw_errmsg(), "(injected)") != NULL,
       "%s: a failing tile transfer fails the request", what);
    ok(tile_loc(t, 0) == SW_TILE_SECONDARY &&
           tile_loc(t, 1) == SW_TILE_PRIMARY && tiled_is_iota(t, g.size),
       "%s: and rolls it back", what);
    expect_ok(sw_tiled_promote(t, g.ntiles, all), "the retry");
    ok(tile_loc(t, 0) == SW_TILE_PRIMARY && tiled_is_iota(t, g.size),
       "%s: the retry brings every tile back", what);
    free(all);
out:
    sw_tensor_unref(h);
    sw_tensor_unref(moved);
    sw_layout_unref(flat);
    sw_carrier_unref(t);
    sw_carrier_unref(host);
    sw_carrier_unref(dev);
    sw_carrier_unref(sec);
}

/*
 * Makes what lives as long as the process once made, before the leak
 * checks count: the TiledEvictable class's definition (made and sealed at
 * its first use) and, with a runtime, the OpenCL class's capability
 * snapshot (a TiledEvictable asks its primary's capabilities).
 */
static void process_caches_warm(void) {
    const int64_t grid[1] = {1}, tile[1] = {2};
    sw_carrier *a = cpu_iota(2), *b = cpu_iota(2), *t = NULL, *d = NULL;
    if (sw_tiled_new(a, b, 1, grid, tile, &t) != SW_OK)
        bail_out(sw_errmsg());
    sw_carrier_unref(t);
    sw_carrier_unref(a);
    sw_carrier_unref(b);
    sw_capability_list caps;
    if (sw_opencl_new(1, SW_DTYPE_FLOAT32, 1, 0, -1, &d) == SW_OK &&
        sw_carrier_capabilities(d, &caps) == SW_OK)
        (void)caps;
    sw_carrier_unref(d);
    sw_clear_error();
}

static void test_tiled(void) {
    int64_t base = sw_debug_live_allocs();
    const int64_t grid4[4] = {2, 2, 2, 2}, tile4[4] = {2, 3, 2, 2};
    check_tiled_geometry(4, grid4, tile4, 0, "rank 4");
    check_tiled_geometry(4, grid4, tile4, 1, "rank 4 over a file");
    const int64_t grid3[3] = {3, 1, 2}, tile3[3] = {2, 2, 3};
    check_tiled_geometry(3, grid3, tile3, 0, "rank 3, one tile across axis 1");
    check_tiled_geometry(3, grid3, tile3, 1, "rank 3 over a file");
    const int64_t grid1[1] = {5}, tile1[1] = {3};
    check_tiled_geometry(1, grid1, tile1, 0, "rank 1");

    /* Without the exact move FileBacked -> OpenCL, the pair would move
     * element by element: refused before either tier is claimed or
     * grown. */
    sw_carrier *dev = NULL, *fb = NULL, *t = NULL;
    const int64_t grid[1] = {2}, tile[1] = {2};
    (void)sw_opencl_new(0, SW_DTYPE_FLOAT32, 1, 0, -1, &dev);
    (void)sw_file_new(NULL, SW_DTYPE_FLOAT32, 1, &fb);
    const sw_move_class *route = NULL;
    expect_ok(
        sw_move_unregister(sw_move_key_file(), sw_move_key_opencl(), &route),
        "unregister FileBacked -> OpenCL");
    ok(route == sw_move_file_to_opencl(), "the built-in route");
    expect_fail(sw_tiled_new(dev, fb, 1, grid, tile, &t), SW_ERUNTIME,
                "an OpenCL TiledEvictable tier needs an exact registered move "
                "operation for (FileBacked, OpenCL) in both directions",
                "OpenCL over FileBacked without the route");
    ok(!sw_carrier_is_owned(dev) && !sw_carrier_is_owned(fb) &&
           sw_carrier_size(dev) == 0 && sw_carrier_size(fb) == 0,
       "neither tier is claimed or grown");
    expect_ok(sw_move_register(sw_move_key_file(), sw_move_key_opencl(), route),
              "register it again");
    /* An empty OpenCL primary grows to the extent. */
    sw_carrier *sec = cpu_iota(4);
    expect_ok(sw_tiled_new(dev, sec, 1, grid, tile, &t),
              "an empty OpenCL primary over a full CPU secondary");
    ok(sw_carrier_size(dev) == 4 && tile_loc(t, 0) == SW_TILE_SECONDARY &&
           tiled_is_iota(t, 4),
       "grows, its tiles on the host");
    sw_carrier_unref(t);
    sw_carrier_unref(sec);
    sw_carrier_unref(dev);
    sw_carrier_unref(fb);
    sw_move_wait_idle();
    leak_check(base, "OpenCL TiledEvictable tiers");
}

/*
 * A profiled move's completion covers the device's work: with the device
 * held, the copy cannot start before the hold ends, so the complete
 * event must start before that moment and end after it; the profiler
 * stops without waiting for the device, and the completion joins the
 * results at the next refresh, once.
 */
static void test_profiled_interval(void) {
    int64_t base = sw_debug_live_allocs();
    for (int to_device = 1; to_device >= 0; --to_device) {
        sw_carrier *cpu = cpu_iota(8), *dev = NULL, *dst = NULL;
        (void)sw_opencl_new(8, SW_DTYPE_FLOAT32, 1, 0, -1, &dev);
        (void)sw_cpu_new(8, SW_DTYPE_FLOAT32, 1, 0, &dst);
        sw_tensor *t = tensor_over(to_device ? cpu : dev, 0, "8:1");
        sw_carrier *to = to_device ? dev : dst;
        sw_profiler *p = NULL;
        sw_move_request *req = NULL;
        int64_t n = 0;
        (void)sw_profiler_new(&p);
        expect_ok(sw_debug_opencl_hold(1), "hold the device");
        expect_ok(sw_profiler_start(p), "profile");
        expect_ok(sw_move_async(t, to, &req), "submit the move");
        expect_ok(sw_profiler_stop(p), "stop while the device is held");
        ok(!sw_move_request_done(req) &&
               sw_profiler_event_count(p, &n) == SW_OK && n == 1,
           "%s: the stop did not wait for the device; only the submission",
           to_device ? "CPU -> OpenCL" : "OpenCL -> CPU");
        int64_t released = sw_profile_now_ns();
        expect_ok(sw_debug_opencl_hold(0), "release the device");
        expect_ok(sw_move_request_wait(req, NULL), "wait");
        expect_ok(sw_move_request_wait(req, NULL), "wait again");
        int changed = 0;
        (void)sw_profiler_refresh(p, &changed);
        (void)sw_profiler_event_count(p, &n);
        is_int(n, 2, "one completion, however often it is waited for");
        sw_profile_event sub, com;
        memset(&sub, 0, sizeof sub);
        memset(&com, 0, sizeof com);
        (void)sw_profiler_event(p, 0, &sub);
        (void)sw_profiler_event(p, 1, &com);
        ok(strcmp(com.name, "move.complete") == 0 && com.parent_id == sub.id &&
               com.succeeded,
           "the completion's parent is the submission");
        ok(com.start_ns <= released &&
               com.start_ns + com.duration_ns >= released,
           "its interval contains the held device's release");
        ok(com.start_ns <= sub.start_ns + sub.duration_ns,
           "it starts inside the submission, before the device commands are "
           "enqueued");
        sw_profiler_unref(p);
        sw_move_request_unref(req);
        sw_tensor_unref(t);
        sw_carrier_unref(cpu);
        sw_carrier_unref(dev);
        sw_carrier_unref(dst);
    }
    sw_move_wait_idle();
    leak_check(base, "profiled OpenCL moves");
}

/*
 * Two devices (meson runs this program again with PoCL asked for two, each
 * with its own context): a move between them goes through the host,
 * asynchronously; a failure at its map, write or wait leaves both
 * carriers as they were; the destination's tail and version stay.
 */
static void test_two_devices(void) {
    if (sw_opencl_device_count() < 2) {
        ok(1, "moves between two devices # SKIP one OpenCL device");
        return;
    }
    int64_t base = sw_debug_live_allocs();
    const sw_opencl_stage stages[3] = {
        SW_OPENCL_STAGE_MAP, SW_OPENCL_STAGE_ENQUEUE, SW_OPENCL_STAGE_WAIT};
    for (int i = 0; i < 4; ++i) {
        sw_carrier *cpu = cpu_iota(4), *a = NULL, *b = NULL;
        sw_tensor *t = tensor_over(cpu, 0, "4:1"), *on_a = NULL, *r = NULL,
                  *ta = NULL;
        (void)sw_opencl_new(4, SW_DTYPE_FLOAT32, 1, 0, 0, &a);
        (void)sw_opencl_new(6, SW_DTYPE_FLOAT32, 1, 0, 1, &b);
        if (!expect_ok(sw_move(t, a, &on_a), "onto device 0"))
            goto next;
        ta = tensor_over(a, 1, "3:1");
        if (i < 3)
            sw_debug_opencl_fail(stages[i], 0);
        sw_status st = sw_move(ta, b, &r);
        sw_debug_opencl_fail(SW_OPENCL_STAGE_NONE, 0);
        if (i < 3) {
            ok(st == SW_ERUNTIME && strstr(sw_errmsg(), "(injected)") &&
                   !sw_carrier_is_released(a) && get_f(a, 1) == 1 &&
                   get_f(b, 0) == 0 && sw_carrier_version(b) == 0,
               "a failing %s between devices changes nothing",
               i == 0   ? "map"
               : i == 1 ? "write"
                        : "wait");
            sw_clear_error();
        } else if (expect_ok(st, "device 0 -> device 1")) {
            ok(sw_carrier_is_released(a) && get_f(b, 0) == 1 &&
                   get_f(b, 2) == 3 && get_f(b, 3) == 0 && get_f(b, 5) == 0 &&
                   sw_carrier_version(b) == 0,
               "the span moves to the other device, the tail stays zero");
        }
    next:
        sw_tensor_unref(t);
        sw_tensor_unref(on_a);
        sw_tensor_unref(ta);
        sw_tensor_unref(r);
        sw_carrier_unref(cpu);
        sw_carrier_unref(a);
        sw_carrier_unref(b);
    }
    sw_move_wait_idle();
    leak_check(base, "moves between two devices");
}

int main(void) {
    process_caches_warm();
    int64_t base = sw_debug_live_allocs();
    test_validation();
    if (sw_opencl_load() != SW_OK) {
        const char *why = sw_errmsg();
        if (getenv("STRIDEWEAVE_REQUIRE_OPENCL")) {
            ok(0, "an OpenCL runtime is required here: %s", why);
            return done_testing();
        }
        ok(1, "the OpenCL runtime tests # SKIP no OpenCL runtime: %s", why);
        sw_clear_error();
        leak_check(base, "the checks without a runtime");
        return done_testing();
    }
    sw_opencl_device_desc d;
    if (sw_opencl_device_info(0, &d) == SW_OK)
        diag("device 0: %s / %s (%s)", d.platform, d.name, d.type);
    test_buffer_cache();
    test_storage();
    test_scatter();
    test_moves();
    test_file_moves();
    test_move_faults();
    test_async();
    test_operations();
    test_tiled();
    test_profiled_interval();
    test_two_devices();
    sw_move_wait_idle();
    leak_check(base, "the whole program");
    return done_testing();
}
