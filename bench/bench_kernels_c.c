/*
 * Throughput of the CPU kernels, straight through the internal kernel API
 * (no tensors, no Python): elementwise add, mul and relu on 4M floats in
 * four layouts, and Float32 GEMM. Prints one table. The NumPy equivalents
 * to time beside it (same machine, same run) are given per row.
 *
 *   layouts (every operand has the same layout unless noted):
 *     compact     4194304:1                     np.add(x, y, out=o)
 *     transposed  (2048,2048):(2048,1)          np.add(X.T, Y.T, out=O.T)
 *     mixed       output (2048,2048):(1,2048),  np.add(X.T, Y.T, out=C)
 *                 inputs transposed (a copy-like walk, tiled by the plan)
 *     tiled       ((32,64),(32,64)):((1,1024),(32,65536)), 32x32 tiles;
 *                 NumPy: the 4-d as_strided view with the same strides
 *   relu is np.maximum(x, 0, out=o).
 *   GEMM: C (M x N, column-major) = A (M x K) . B (N x K)^T, i.e. a @ b.T.
 *
 * Bandwidth counts each operand once (12 bytes an element for add and
 * mul, 8 for relu); the time is the best of several repetitions (the
 * development machine is a VM whose memory bandwidth varies by +-20%
 * between runs, so compare rows taken in the same minute).
 */
#define _POSIX_C_SOURCE 200112L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "op/kernels/kernels.h"
#include "strideweave/layout.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static sw_layout *parse(const char *text) {
    sw_layout *l = NULL;
    if (sw_layout_parse(text, &l) != SW_OK) {
        fprintf(stderr, "cannot parse %s: %s\n", text, sw_errmsg());
        exit(1);
    }
    return l;
}

static sw_karg arg(float *data, const sw_layout *l) {
    sw_karg a = {data, SW_DTYPE_FLOAT32, 0, l};
    return a;
}

enum { OP_ADD, OP_MUL, OP_RELU };

static void run_op(int op, sw_karg out, sw_karg a, sw_karg b) {
    sw_status st = SW_OK;
    sw_karg in[2] = {a, b};
    sw_kscalar s = {0.0, 0};
    switch (op) {
    case OP_ADD:
        st = sw_kernel_elementwise(SW_KELEM_ADD, out, in, s);
        break;
    case OP_MUL:
        st = sw_kernel_elementwise(SW_KELEM_MUL, out, in, s);
        break;
    default:
        st = sw_kernel_activation(SW_KACT_RELU, out, a);
        break;
    }
    if (st != SW_OK) {
        fprintf(stderr, "kernel failed: %s\n", sw_errmsg());
        exit(1);
    }
}

/* Best time of reps runs, after one warm-up. */
static double time_op(int op, sw_karg out, sw_karg a, sw_karg b, int reps) {
    run_op(op, out, a, b);
    double best = 1e30;
    for (int r = 0; r < reps; ++r) {
        double t0 = now();
        run_op(op, out, a, b);
        double t = now() - t0;
        if (t < best)
            best = t;
    }
    return best;
}

static double time_gemm(sw_kmat c, sw_kmat a, sw_kmat b, int reps) {
    double best = 1e30;
    for (int r = 0; r <= reps; ++r) {
        double t0 = now();
        sw_status st = sw_kernel_gemm(c, a, b);
        double t = now() - t0;
        if (st != SW_OK) {
            fprintf(stderr, "gemm failed: %s\n", sw_errmsg());
            exit(1);
        }
        if (r > 0 && t < best)
            best = t;
    }
    return best;
}

static float *floats(size_t n) {
    float *p = NULL;
    if (posix_memalign((void **)&p, 64, n * sizeof(float)) != 0) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < n; ++i)
        p[i] = (float)((int)(i * 2654435761u % 2001) - 1000) / 997.0f;
    return p;
}

int main(void) {
    const size_t n = (size_t)1 << 22;
    float *x = floats(n), *y = floats(n), *z = floats(n);
    static const char *const layouts[][2] = {
        {"compact", "4194304:1"},
        {"transposed", "(2048,2048):(2048,1)"},
        {"mixed", "(2048,2048):(1,2048)"},
        {"tiled", "((32,64),(32,64)):((1,1024),(32,65536))"}};
    static const char *const ops[] = {"add", "mul", "relu"};
    sw_layout *transposed = parse("(2048,2048):(2048,1)");

    /* The portable GEMM micro-kernel runs only in a reference build, or
     * on CPUs without AVX2 and FMA. */
    printf("strideweave CPU kernels (GEMM micro-kernel: %s)\n",
           sw_kernel_gemm_variant());
    printf("%-8s %-11s %10s %10s\n", "op", "layout", "ms", "GB/s");
    for (int li = 0; li < 4; ++li) {
        sw_layout *l = parse(layouts[li][1]);
        /* mixed: the output is compact, the inputs are transposed. */
        const sw_layout *lin = li == 2 ? transposed : l;
        for (int op = 0; op < 3; ++op) {
            double t = time_op(op, arg(z, l), arg(x, lin), arg(y, lin), 20);
            double bytes = (op == OP_RELU ? 8.0 : 12.0) * (double)n;
            printf("%-8s %-11s %10.3f %10.2f\n", ops[op], layouts[li][0],
                   t * 1e3, bytes / t / 1e9);
        }
        sw_layout_unref(l);
    }
    sw_layout_unref(transposed);
    free(x);
    free(y);
    free(z);

    printf("\n");
    printf("%-6s %-14s %10s %10s\n", "size", "operands", "ms", "GFLOP/s");
    static const int sizes[] = {256, 512, 1024};
    for (int si = 0; si < 3; ++si) {
        int m = sizes[si];
        size_t mm = (size_t)m * (size_t)m;
        float *a = floats(mm), *b = floats(mm), *c = floats(mm);
        char text[64];
        snprintf(text, sizeof text, "(%d,%d):(1,%d)", m, m, m);
        sw_layout *cm = parse(text);
        snprintf(text, sizeof text, "(%d,%d):(%d,1)", m, m, m);
        sw_layout *rm = parse(text);
        for (int variant = 0; variant < 2; ++variant) {
            /* compact: A and B column-major; row-major: both row-major. */
            const sw_layout *lab = variant == 0 ? cm : rm;
            sw_kmat mc = sw_kmat_of(arg(c, cm));
            sw_kmat ma = sw_kmat_of(arg(a, lab));
            sw_kmat mb = sw_kmat_of(arg(b, lab));
            int reps = m >= 1024 ? 5 : 20;
            double t = time_gemm(mc, ma, mb, reps);
            printf("%-6d %-14s %10.3f %10.2f\n", m,
                   variant == 0 ? "column-major" : "row-major", t * 1e3,
                   2.0 * m * m * (double)m / t / 1e9);
        }
        sw_layout_unref(cm);
        sw_layout_unref(rm);
        free(a);
        free(b);
        free(c);
    }
    return 0;
}
