/*
 * sw_file_open_in: an existing raw file as a FileBacked carrier, its size
 * from the file's length, read-only or read-write, and the refusals, none
 * of which removes the file. sw_file_open_window: a window of a file
 * (elements from a byte offset), reads and writes that stay inside it, a
 * bulk move out of it, its fixed size and its refusals.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "strideweave/strideweave.h"
#include "check.h"

static void write_file(const char *path, const void *bytes, size_t n);

/* A file of a 5-byte header, three floats at byte 5 and a 3-byte tail. */
static void test_window(const char *dir) {
    int64_t base = sw_debug_live_allocs();
    char path[256];
    snprintf(path, sizeof path, "%s/container.bin", dir);
    unsigned char bytes[5 + 12 + 3];
    memset(bytes, 0x7F, sizeof bytes);
    float vals[3] = {1.5f, -2.0f, 4.0f};
    memcpy(bytes + 5, vals, sizeof vals);
    write_file(path, bytes, sizeof bytes);

    sw_carrier *c = NULL;
    if (expect_ok(
            sw_file_open_window(path, NULL, SW_DTYPE_FLOAT32, 0, 5, 3, &c),
            "open a window")) {
        is_int(sw_carrier_size(c), 3, "its size is the element count");
        is_int(sw_file_window_offset(c), 5, "its byte offset");
        sw_value v;
        if (expect_ok(sw_carrier_get(c, 0, &v), "read element 0"))
            ok(v.as.f == 1.5, "element 0 is the float at byte 5");
        if (expect_ok(sw_carrier_get(c, 2, &v), "read element 2"))
            ok(v.as.f == 4.0, "element 2 is the last float");
        expect_fail(sw_carrier_get(c, 3, &v), SW_EINDEX, NULL,
                    "the tail is outside the window");
        expect_fail(sw_file_resize(c, 4), SW_EVALUE, NULL,
                    "a window cannot be resized");
        expect_fail(sw_file_stage(c, 4), SW_EVALUE, NULL,
                    "nor staged for growth");
        /* A bulk move out of the window reads exactly its values. */
        sw_layout *l = NULL;
        sw_tensor *t = NULL, *moved = NULL;
        sw_carrier *dst = NULL;
        sw_layout_parse("(3):(1)", &l);
        sw_tensor_new(c, 0, l, &t);
        sw_cpu_new(3, SW_DTYPE_FLOAT32, 1, 0, &dst);
        int grad = sw_grad_enabled();
        sw_set_grad_enabled(0);
        if (expect_ok(sw_move(t, dst, &moved), "move the window to CPU")) {
            const float *got = sw_cpu_data(dst);
            ok(got[0] == 1.5f && got[1] == -2.0f && got[2] == 4.0f,
               "the moved values");
        }
        sw_set_grad_enabled(grad);
        sw_tensor_unref(moved);
        sw_tensor_unref(t);
        sw_carrier_unref(dst);
        sw_layout_unref(l);
        sw_carrier_unref(c);
    }
    c = NULL;
    if (expect_ok(
            sw_file_open_window(path, NULL, SW_DTYPE_FLOAT32, 1, 5, 3, &c),
            "open a window read-write")) {
        sw_value v = sw_value_f64(8.0);
        expect_ok(sw_carrier_set(c, 1, &v), "write element 1");
        sw_carrier_unref(c);
        unsigned char back[sizeof bytes];
        FILE *f = fopen(path, "rb");
        size_t n = f ? fread(back, 1, sizeof back, f) : 0;
        if (f)
            fclose(f);
        float mid;
        memcpy(&mid, back + 9, sizeof mid);
        ok(n == sizeof back && mid == 8.0f && back[0] == 0x7F &&
               back[4] == 0x7F && back[17] == 0x7F && back[19] == 0x7F,
           "the write landed at byte 9 and nothing else changed");
    }
    c = NULL;
    if (expect_ok(
            sw_file_open_window(path, NULL, SW_DTYPE_FLOAT32, 0, 20, 0, &c),
            "an empty window at the end"))
        is_int(sw_carrier_size(c), 0, "holds nothing");
    sw_carrier_unref(c);
    c = NULL;
    expect_fail(sw_file_open_window(path, NULL, SW_DTYPE_FLOAT32, 0, 9, 3, &c),
                SW_EVALUE, NULL, "a window that passes the end");
    expect_fail(sw_file_open_window(path, NULL, SW_DTYPE_FLOAT32, 0, -1, 1, &c),
                SW_EVALUE,
                "FileBacked window offset must be a non-negative "
                "byte offset",
                "a negative offset");
    expect_fail(sw_file_open_window(path, NULL, SW_DTYPE_FLOAT32, 0, 0, -2, &c),
                SW_EVALUE,
                "FileBacked window size must be non-negative, or -1 for the "
                "rest of the file",
                "a count below -1");
    expect_fail(sw_file_open_window(path, NULL, SW_DTYPE_FLOAT32, 0, 5, -1, &c),
                SW_EVALUE, NULL, "the rest of the file is not whole elements");
    expect_fail(
        sw_file_open_window(path, NULL, SW_DTYPE_FLOAT32, 0, 21, -1, &c),
        SW_EVALUE, NULL, "the rest of the file from past its end");
    if (expect_ok(
            sw_file_open_window(path, NULL, SW_DTYPE_FLOAT32, 0, 8, -1, &c),
            "the rest of the file from byte 8")) {
        is_int(sw_carrier_size(c), 3, "three whole elements");
        sw_value v;
        expect_fail(sw_file_resize(c, 1), SW_EVALUE, NULL,
                    "a window to the end is fixed too");
        if (expect_ok(sw_carrier_get(c, 2, &v), "its last element"))
            ok(v.kind == SW_VALUE_F64, "reads");
        sw_carrier_unref(c);
        c = NULL;
    }
    expect_fail(
        sw_file_open_window(path, NULL, SW_DTYPE_FLOAT32, 0, INT64_MAX, 2, &c),
        SW_EVALUE, NULL, "an offset whose end overflows");
    expect_fail(sw_file_open_window(path, NULL, SW_DTYPE_BOOL, 0, 5, 3, &c),
                SW_EVALUE, NULL, "a Bool window");
    ok(c == NULL, "no carrier after refused windows");
    struct stat sb;
    ok(stat(path, &sb) == 0 && sb.st_size == (off_t)sizeof bytes,
       "refused windows leave the file as it was");
    is_int(sw_file_window_offset(NULL), -1, "no window offset for NULL");
    unlink(path);
    leak_check(base, "file windows");
}

static void write_file(const char *path, const void *bytes, size_t n) {
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(bytes, 1, n, f);
        fclose(f);
    }
}

int main(void) {
    int64_t base = sw_debug_live_allocs();
    char dir[] = "/tmp/sw-file-open-XXXXXX";
    if (!mkdtemp(dir)) {
        ok(0, "mkdtemp");
        return done_testing();
    }
    char path[256], odd[256];
    snprintf(path, sizeof path, "%s/raw.bin", dir);
    snprintf(odd, sizeof odd, "%s/odd.bin", dir);
    float vals[3] = {1.5f, -2.0f, 4.0f};
    write_file(path, vals, sizeof vals);
    write_file(odd, vals, 6);

    sw_carrier *c = NULL;
    if (expect_ok(sw_file_open_in(path, NULL, SW_DTYPE_FLOAT32, 0, &c),
                  "open read-only")) {
        is_int(sw_carrier_size(c), 3, "size from the file's length");
        sw_value v;
        if (expect_ok(sw_carrier_get(c, 2, &v), "read"))
            ok(v.as.f == 4.0, "the file's values");
        ok(!sw_carrier_is_mutable(c), "read-only");
        v = sw_value_f64(1.0);
        sw_status st = sw_carrier_set(c, 0, &v);
        ok(st != SW_OK, "a write is refused");
        sw_clear_error();
        sw_carrier_unref(c);
    }
    c = NULL;
    if (expect_ok(sw_file_open_in(path, NULL, SW_DTYPE_FLOAT32, 1, &c),
                  "open read-write")) {
        sw_value v = sw_value_f64(8.0);
        expect_ok(sw_carrier_set(c, 0, &v), "write");
        sw_carrier_unref(c);
        FILE *f = fopen(path, "rb");
        float back[3] = {0};
        if (f) {
            ok(fread(back, sizeof(float), 3, f) == 3 && back[0] == 8.0f,
               "the write reached the file");
            fclose(f);
        }
    }
    c = NULL;
    sw_status st = sw_file_open_in(odd, NULL, SW_DTYPE_FLOAT32, 0, &c);
    expect_fail(st, SW_EVALUE, NULL, "a length that is not whole elements");
    st = sw_file_open_in(dir, NULL, SW_DTYPE_FLOAT32, 0, &c);
    expect_fail(st, SW_EVALUE, NULL, "a directory");
    st = sw_file_open_in(NULL, NULL, SW_DTYPE_FLOAT32, 0, &c);
    expect_fail(st, SW_EVALUE, "FileBacked.open needs a path", "no path");
    st = sw_file_open_in(path, NULL, SW_DTYPE_BOOL, 0, &c);
    expect_fail(st, SW_EVALUE, NULL, "a Bool dtype");
    char missing[256];
    snprintf(missing, sizeof missing, "%s/missing.bin", dir);
    st = sw_file_open_in(missing, NULL, SW_DTYPE_FLOAT32, 0, &c);
    expect_fail(st, SW_EOS, NULL, "a missing file");
    ok(c == NULL, "no carrier after failures");
    struct stat sb;
    ok(stat(odd, &sb) == 0 && stat(path, &sb) == 0,
       "refused opens remove nothing");
    unlink(path);
    unlink(odd);
    leak_check(base, "file open");
    test_window(dir);
    rmdir(dir);
    return done_testing();
}
