/*
 * Unit tests of the vmath functions (src/op/kernels/vmath.h): the ULP
 * bounds on a sample of the float32 inputs (every 4099th bit pattern,
 * and every pattern within 2048 of the edges where the algorithms switch
 * branches, saturate, overflow or underflow), all paths giving the same
 * bits, the special values, and the activation kernels giving exactly the
 * array functions' results on contiguous and strided layouts, forward
 * and backward. The sample includes the gradients of gelu and tanh
 * (vmath_ulp.h). The exhaustive form of the ULP check is test_vmath_ulp.c
 * (`make test-ulp`).
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "op/kernels/kernels.h"
#include "strideweave/layout.h"
#include "strideweave/threads.h"
#include "tap.h"
#include "vmath_ulp.h"

/* ------------------------------------------------------------ sample */

/* Values near which a function changes branch or saturates. */
static const float edges[] = {
    0.0f,    0x1p-126f, 0x1p-149f, 0.072f, 0.2176f, 0.3466f, 0.5f,
    0.5625f, 0.75f,     0.881f,    1.0f,   1.5f,    2.0f,    3.0f,
    4.0f,    6.0f,      8.0f,      9.01f,  12.0f,   14.3f,   14.5f,
    16.0f,   17.33f,    86.0f,     87.0f,  87.34f,  88.0f,   88.7228f,
    89.0f,   103.97f,   104.0f,    108.6f, 110.0f,  FLT_MAX, INFINITY};
#define N_EDGES ((int)(sizeof edges / sizeof edges[0]))
#define EDGE_SPAN 4096 /* patterns around each edge, both signs */
#define STRIDE 4099

typedef struct sample {
    uint64_t strided; /* how many every-STRIDE-th patterns */
} sample;

static uint32_t sample_map(uint64_t i, void *ctx) {
    const sample *s = ctx;
    if (i < s->strided)
        return (uint32_t)(i * STRIDE);
    i -= s->strided;
    uint64_t e = i / (2 * EDGE_SPAN), k = i % (2 * EDGE_SPAN);
    uint32_t bits;
    memcpy(&bits, &edges[e / 2], sizeof bits);
    bits = (uint32_t)(bits + (uint32_t)k - EDGE_SPAN / 2);
    if (e % 2)
        bits ^= 0x80000000u;
    return bits;
}

static void test_ulp_sample(void) {
    static vu_run run;
    sample s = {((uint64_t)1 << 32) / STRIDE};
    vu_measure(&run, sample_map, &s,
               s.strided + (uint64_t)N_EDGES * 2 * 2 * EDGE_SPAN);
    for (int f = 0; f < VU_COUNT; ++f)
        for (int p = 0; p < SW_VMATH_ISA_COUNT; ++p) {
            if (!run.impl[p])
                continue;
            const vu_stat *st = &run.stat[f][p];
            ok(st->max_err <= vu_bound[f],
               "%s %s: sample within %.2f ULP (max %.4f at x = %a)", vu_name(f),
               run.impl[p]->name, vu_bound[f], st->max_err,
               (double)st->worst_x);
            ok(st->max_sub <= vu_bound_sub[f],
               "%s %s: subnormal results within %.2f ULP (max %.4f)",
               vu_name(f), run.impl[p]->name, vu_bound_sub[f], st->max_sub);
            if (p > 0)
                ok(st->mismatches == 0, "%s %s: the scalar path's bits",
                   vu_name(f), run.impl[p]->name);
        }
    diag("paths: scalar%s%s", run.impl[1] ? ", avx2-fma" : "",
         run.impl[2] ? ", avx512" : "");
}

/* ----------------------------------------------------- special values */

static int same_bits(float a, float b) {
    return memcmp(&a, &b, sizeof a) == 0;
}

static void test_specials(void) {
    for (int p = 0; p < SW_VMATH_ISA_COUNT; ++p) {
        const sw_vmath_impl *im = sw_vmath_impl_get((sw_vmath_isa)p);
        if (!im)
            continue;
        float in[6] = {NAN, -NAN, INFINITY, -INFINITY, 0.0f, -0.0f};
        float out[SW_VMATH_COUNT][6];
        for (int f = 0; f < SW_VMATH_COUNT; ++f)
            im->fwd[f](in, out[f], 6);
        int nan_ok = 1;
        for (int f = 0; f < SW_VMATH_COUNT; ++f)
            nan_ok &= isnan(out[f][0]) && isnan(out[f][1]);
        ok(nan_ok, "%s: NaN in, NaN out, every function", im->name);
        /* Limits at +inf and -inf, per function. */
        static const float lim[SW_VMATH_COUNT][2] = {
            {INFINITY, 0.0f},  {1.0f, -1.0f},     {1.0f, 0.0f},
            {INFINITY, -0.0f}, {INFINITY, -0.0f}, {INFINITY, 0.0f},
            {INFINITY, -1.0f}};
        for (int f = 0; f < SW_VMATH_COUNT; ++f)
            ok(same_bits(out[f][2], lim[f][0]) &&
                   same_bits(out[f][3], lim[f][1]),
               "%s %s(+inf) = %g, (-inf) = %g", im->name,
               sw_vmath_name((sw_vmath_fn)f), (double)out[f][2],
               (double)out[f][3]);
        /* Signed zeros: the odd-at-0 functions keep -0.0. */
        ok(same_bits(out[SW_VMATH_TANH][5], -0.0f) &&
               same_bits(out[SW_VMATH_GELU][5], -0.0f) &&
               same_bits(out[SW_VMATH_SILU][5], -0.0f) &&
               same_bits(out[SW_VMATH_ELU][5], -0.0f) &&
               same_bits(out[SW_VMATH_TANH][4], 0.0f),
           "%s: tanh, gelu, silu, elu keep the sign of zero", im->name);
        ok(out[SW_VMATH_EXP][4] == 1.0f && out[SW_VMATH_SIGMOID][5] == 0.5f,
           "%s: exp(0) = 1, sigmoid(-0) = 1/2", im->name);
        /* exp overflows past ln(FLT_MAX) and underflows gradually. */
        float e[5] = {88.72283f, 88.72284f, -87.0f, -100.0f, -104.0f}, ye[5];
        im->fwd[SW_VMATH_EXP](e, ye, 5);
        ok(isfinite(ye[0]) && isinf(ye[1]) && ye[2] >= FLT_MIN && ye[3] > 0 &&
               ye[3] < FLT_MIN && ye[4] == 0.0f,
           "%s: exp overflow, subnormal and zero results", im->name);
        /* A subnormal input is not flushed. */
        float d[1] = {-0x1p-140f}, yd[1];
        im->fwd[SW_VMATH_TANH](d, yd, 1);
        ok(same_bits(yd[0], -0x1p-140f), "%s: tanh(-2^-140) = -2^-140",
           im->name);
        float ts[2] = {0x1p-12f, -0x1.fffffep-13f}, yts[2];
        im->fwd[SW_VMATH_TANH](ts, yts, 2);
        ok(same_bits(yts[0], ts[0]) && same_bits(yts[1], ts[1]),
           "%s: tanh(x) = x for |x| <= 2^-12", im->name);
        float t[2] = {9.1f, -20.0f}, yt[2];
        im->fwd[SW_VMATH_TANH](t, yt, 2);
        ok(yt[0] == 1.0f && yt[1] == -1.0f, "%s: tanh saturates to +-1",
           im->name);
        /* gelu is x from 5.5 on and -0 below -14.5; its gradient has the
         * limits 1 and 0 and is 1/2 at both zeros. */
        float gx[5] = {5.5f, 100.0f, FLT_MAX, -14.5f, -1e30f};
        float gy[6], one[6] = {1, 1, 1, 1, 1, 1};
        im->fwd[SW_VMATH_GELU](gx, gy, 5);
        ok(gy[0] == 5.5f && gy[1] == 100.0f && gy[2] == FLT_MAX &&
               same_bits(gy[3], -0.0f) && same_bits(gy[4], -0.0f) &&
               same_bits(out[SW_VMATH_GELU][4], 0.0f),
           "%s: gelu(x) = x for x >= 5.5, -0 below -14.5, +0 at +0", im->name);
        im->grad[SW_VMATH_GELU](one, in, gy, 6);
        ok(isnan(gy[0]) && isnan(gy[1]) && gy[2] == 1.0f && gy[3] == 0.0f &&
               gy[4] == 0.5f && gy[5] == 0.5f,
           "%s: gelu'(NaN) = NaN, gelu'(+-inf) = 1, 0, gelu'(+-0) = 1/2",
           im->name);
    }
}

/* ------------------------------------------- kernels vs array forms */

static const sw_kact kact_of[SW_VMATH_COUNT] = {
    SW_KACT_EXP,  SW_KACT_TANH,     SW_KACT_SIGMOID, SW_KACT_GELU,
    SW_KACT_SILU, SW_KACT_SOFTPLUS, SW_KACT_ELU};

static sw_karg karg(float *data, const sw_layout *l) {
    sw_karg k = {data, SW_DTYPE_FLOAT32, 0, l};
    return k;
}

static void test_kernels_match(void) {
    enum { N = 1003 };
    float *x = malloc(2 * N * sizeof(float));
    float *g = malloc(2 * N * sizeof(float));
    float *want = malloc(N * sizeof(float));
    float *got = malloc(2 * N * sizeof(float));
    for (int i = 0; i < 2 * N; ++i) {
        x[i] = (float)((i * 7919) % 2001 - 1000) / 40.0f;
        g[i] = 1.0f + (float)(i % 13) / 8.0f;
    }
    x[5] = -0.0f;
    x[6] = INFINITY;
    x[7] = -INFINITY;
    x[8] = -95.0f; /* subnormal results */
    sw_layout *contig = NULL, *strided = NULL;
    sw_status st = sw_layout_parse("1003:1", &contig);
    if (!st)
        st = sw_layout_parse("1003:2", &strided);
    if (!ok(st == SW_OK, "layouts"))
        return;
    float *xs = malloc(N * sizeof(float)), *gs = malloc(N * sizeof(float));
    for (int i = 0; i < N; ++i) {
        xs[i] = x[2 * i];
        gs[i] = g[2 * i];
    }
    for (int f = 0; f < SW_VMATH_COUNT; ++f) {
        sw_vmath_fn fn = (sw_vmath_fn)f;
        const sw_vmath_impl *im = sw_vmath_active();
        int good = 1;
        /* Forward, unit stride and stride 2, against the array form. */
        im->fwd[f](x, want, N);
        st = sw_kernel_activation(kact_of[f], karg(got, contig),
                                  karg(x, contig));
        good &= st == SW_OK && memcmp(got, want, N * sizeof(float)) == 0;
        im->fwd[f](xs, want, N);
        st = sw_kernel_activation(kact_of[f], karg(got, strided),
                                  karg(x, strided));
        for (int i = 0; i < N; ++i)
            good &= same_bits(got[2 * i], want[i]);
        for (int i = 0; i < N; ++i)
            good &= same_bits(sw_vmath_f32(fn, xs[i]), want[i]) ||
                    (isnan(want[i]) && isnan(sw_vmath_f32(fn, xs[i])));
        ok(good, "%s kernel = array form, contiguous and strided",
           sw_vmath_name(fn));
        /* Backward from x, and the per-element form. */
        good = 1;
        im->grad[f](g, x, want, N);
        st = sw_kernel_activation_backward(kact_of[f], karg(got, contig),
                                           karg(g, contig), karg(x, contig),
                                           NULL);
        good &= st == SW_OK;
        for (int i = 0; i < N; ++i)
            good &=
                same_bits(got[i], want[i]) || (isnan(got[i]) && isnan(want[i]));
        im->grad[f](gs, xs, want, N);
        st = sw_kernel_activation_backward(kact_of[f], karg(got, strided),
                                           karg(g, strided), karg(x, strided),
                                           NULL);
        for (int i = 0; i < N; ++i) {
            float one = sw_vmath_grad1_f32(fn, gs[i], xs[i]);
            good &=
                (same_bits(got[2 * i], want[i]) && same_bits(one, want[i])) ||
                (isnan(want[i]) && isnan(one) && isnan(got[2 * i]));
        }
        ok(good, "%s backward kernel = array form, contiguous and strided",
           sw_vmath_name(fn));
        /* In place. */
        memcpy(got, x, N * sizeof(float));
        im->fwd[f](x, want, N);
        im->fwd[f](got, got, N);
        good = 1;
        for (int i = 0; i < N; ++i)
            good &=
                same_bits(got[i], want[i]) || (isnan(got[i]) && isnan(want[i]));
        ok(good, "%s in place", sw_vmath_name(fn));
    }
    sw_layout_unref(contig);
    sw_layout_unref(strided);
    free(x);
    free(g);
    free(xs);
    free(gs);
    free(want);
    free(got);
}

/*
 * gelu takes its far path (x < -8) per vector, so which lanes share a
 * vector must not matter: on 1000003 elements in [-16, 16) (a quarter of
 * them far, at every offset), gelu and its gradient give the same bits at
 * 1 and 2 threads (different chunks) and as the per-element form.
 */
static void test_gelu_threads(void) {
    enum { N = 1000003 };
    float *x = malloc(N * sizeof(float)), *g = malloc(N * sizeof(float));
    float *y1 = malloc(N * sizeof(float)), *y2 = malloc(N * sizeof(float));
    sw_layout *l = NULL;
    if (!ok(x && g && y1 && y2 && sw_layout_parse("1000003:1", &l) == SW_OK,
            "gelu threads: buffers and layout"))
        goto done;
    uint32_t s = 12345u;
    for (int i = 0; i < N; ++i) {
        s = s * 1664525u + 1013904223u;
        x[i] = (float)((double)(s >> 8) / 524288.0 - 16.0);
        g[i] = 1.0f + (float)(i % 5) / 4.0f;
    }
    int before = sw_get_num_threads();
    for (int back = 0; back < 2; ++back) {
        float *y[2] = {y1, y2};
        int good = 1;
        for (int t = 0; t < 2; ++t) {
            good &= sw_set_num_threads(t + 1) == SW_OK;
            sw_status st =
                back ? sw_kernel_activation_backward(SW_KACT_GELU,
                                                     karg(y[t], l), karg(g, l),
                                                     karg(x, l), NULL)
                     : sw_kernel_activation(SW_KACT_GELU, karg(y[t], l),
                                            karg(x, l));
            good &= st == SW_OK;
        }
        good &= memcmp(y1, y2, N * sizeof(float)) == 0;
        for (int i = 0; i < N; ++i) {
            float one = back ? sw_vmath_grad1_f32(SW_VMATH_GELU, g[i], x[i])
                             : sw_vmath_f32(SW_VMATH_GELU, x[i]);
            good &= same_bits(one, y1[i]);
        }
        ok(good, "gelu%s: the same bits at 1 and 2 threads and per element",
           back ? " backward" : "");
    }
    sw_set_num_threads(before);
done:
    sw_layout_unref(l);
    free(x);
    free(g);
    free(y1);
    free(y2);
}

int main(void) {
    test_ulp_sample();
    test_specials();
    test_kernels_match();
    test_gelu_threads();
    return done_testing();
}
