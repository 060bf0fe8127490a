/*
 * sw_file_open_in: an existing raw file as a FileBacked carrier, its size
 * from the file's length, read-only or read-write, and the refusals, none
 * of which removes the file.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "strideweave/strideweave.h"
#include "check.h"

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
    rmdir(dir);
    leak_check(base, "file open");
    return done_testing();
}
