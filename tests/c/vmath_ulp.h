/*
 * The ULP measurement of the vmath functions (src/op/kernels/vmath.h),
 * shared by the fast sample in test_vmath.c and the exhaustive program
 * test_vmath_ulp.c.
 *
 * For a set of float32 bit patterns, every available path (scalar, AVX2,
 * AVX-512) computes every function through its array entry point; each
 * result is compared with the function computed in double and rounded
 * nowhere: the error is |y - f(x)| / ulp, ulp the spacing of floats in
 * the binade of |f(x)| (2**-149 below 2**-126). A NaN must come out for a
 * NaN reference and only then; an infinite float (or a reference that
 * rounds to one) must match exactly. The paths must also agree bit for
 * bit (any NaN matching any NaN).
 *
 * Besides the forward functions, the gradients of gelu and tanh are
 * measured (g = 1 through grad[], the same code as any g): gelu'(x) =
 * Phi(x) + x phi(x) crosses zero at x = -0.7518, where no relative
 * accuracy is possible, so its error is in ULP of max(|gelu'(x)|, Phi(x))
 * (of the result itself except near that zero). tanh'(x) = 1 - tanh(x)^2
 * is formed as 1 - t*t from the forward's t (the activation kernels'
 * expression), which cancels where t is near 1, so its error is in ULP of
 * max(tanh'(x), tanh(x)^2) (the two add up to 1, so this is an absolute
 * error in units of 2**-24, and the relative one where |x| < 0.88).
 *
 * Work is split into blocks of VU_BLOCK consecutive indices taken from a
 * shared counter by VU_THREADS threads; index i maps to the bit pattern
 * map(i), so a sample is a map over a smaller range.
 */
#ifndef SW_TESTS_VMATH_ULP_H
#define SW_TESTS_VMATH_ULP_H

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "op/kernels/vmath.h"

#define VU_BLOCK 4096
#define VU_THREADS 2

/* The measured functions: the vmath ones, then gelu's and tanh's
 * gradients. */
#define VU_GELU_GRAD SW_VMATH_COUNT
#define VU_TANH_GRAD (SW_VMATH_COUNT + 1)
#define VU_COUNT (SW_VMATH_COUNT + 2)

static inline const char *vu_name(int f) {
    if (f == VU_GELU_GRAD)
        return "gelu_grad";
    if (f == VU_TANH_GRAD)
        return "tanh_grad";
    return sw_vmath_name((sw_vmath_fn)f);
}

/*
 * The bounds each function must keep, in ULP, for results in the normal
 * range and for subnormal results: the exhaustive run's maxima rounded up
 * in the second decimal (vmath.h and docs/VMATH.md state the same).
 */
static const double vu_bound[VU_COUNT] = {
    [SW_VMATH_EXP] = 0.61,  [SW_VMATH_TANH] = 0.71, [SW_VMATH_SIGMOID] = 2.41,
    [SW_VMATH_GELU] = 1.43, [SW_VMATH_SILU] = 3.40, [SW_VMATH_SOFTPLUS] = 0.85,
    [SW_VMATH_ELU] = 0.82,  [VU_GELU_GRAD] = 2.25,  [VU_TANH_GRAD] = 1.51};
static const double vu_bound_sub[VU_COUNT] = {
    [SW_VMATH_EXP] = 0.76,  [SW_VMATH_TANH] = 0.0,  [SW_VMATH_SIGMOID] = 0.76,
    [SW_VMATH_GELU] = 1.08, [SW_VMATH_SILU] = 1.31, [SW_VMATH_SOFTPLUS] = 0.76,
    [SW_VMATH_ELU] = 0.0,   [VU_GELU_GRAD] = 1.48,  [VU_TANH_GRAD] = 0.0};

static inline double vu_sigmoid(double x) {
    return x >= 0 ? 1.0 / (1.0 + exp(-x)) : exp(x) / (1.0 + exp(x));
}

/* The functions in double, as python-api.md §12.4 defines them. */
static inline double vu_ref(sw_vmath_fn fn, double x) {
    switch (fn) {
    case SW_VMATH_EXP:
        return exp(x);
    case SW_VMATH_TANH:
        return tanh(x);
    case SW_VMATH_SIGMOID:
        return vu_sigmoid(x);
    case SW_VMATH_GELU:
        if (x == -INFINITY) /* the limit, not -inf * 0 */
            return -0.0;
        /* 1 + erf(z) = erfc(-z), without the cancellation. */
        return 0.5 * x * erfc(-x * 0.70710678118654752440);
    case SW_VMATH_SILU:
        return x == -INFINITY ? -0.0 : x * vu_sigmoid(x);
    case SW_VMATH_SOFTPLUS:
        return log1p(exp(-fabs(x))) + (x > 0 ? x : 0);
    case SW_VMATH_ELU:
        return x > 0 ? x : expm1(x);
    default:
        return NAN;
    }
}

/* tanh'(x) = 1/cosh(x)^2 in double, and tanh(x)^2 in *t2 (the scale of
 * its error, with tanh'(x)), with the limit 0 at +-inf. */
static inline double vu_tanh_grad_ref(double x, double *t2) {
    double t = tanh(x), c = cosh(x);
    *t2 = t * t;
    return 1.0 / (c * c);
}

/* gelu'(x) = Phi(x) + x phi(x) in double, and Phi(x) in *phi (the
 * scale of its error), with the limits 0 and 1 at -inf and +inf. */
static inline double vu_gelu_grad_ref(double x, double *phi) {
    *phi = 0.5 * erfc(-x * 0.70710678118654752440);
    if (isinf(x))
        return x > 0 ? 1.0 : 0.0;
    return *phi + x * exp(-0.5 * x * x) * 0.39894228040143267794;
}

/* The error of y against ref in ULP of scale (ulp the spacing of floats
 * in the binade of |scale|, 2**-149 below 2**-126); INFINITY for a wrong
 * NaN or inf. */
static inline double vu_err_at(float y, double ref, double scale) {
    if (isnan(ref) || isnan(y))
        return isnan(ref) && isnan(y) ? 0.0 : INFINITY;
    float cr = (float)ref;
    if (isinf(cr) || isinf(y))
        return y == cr ? 0.0 : INFINITY;
    /* |scale| in [2^e, 2^(e+1)): ulp 2^(e-23), read off the bits. */
    uint64_t bits;
    memcpy(&bits, &scale, sizeof bits);
    int e = (int)((bits >> 52) & 0x7ff) - 1023;
    double ulp = 0x1p-149;
    if (e >= -126) {
        uint64_t ub = (uint64_t)(e - 23 + 1023) << 52;
        memcpy(&ulp, &ub, sizeof ulp);
    }
    return fabs((double)y - ref) / ulp;
}

/* The error of y against ref in ULP of ref. */
static inline double vu_err(float y, double ref) {
    return vu_err_at(y, ref, ref);
}

static inline int vu_same(float a, float b) {
    if (isnan(a) || isnan(b))
        return isnan(a) && isnan(b);
    return memcmp(&a, &b, sizeof a) == 0;
}

typedef uint32_t (*vu_map)(uint64_t i, void *ctx);

/* What a run found for one function and one path. */
typedef struct vu_stat {
    double max_err; /* over results in the normal range (and 0, inf) */
    float worst_x;
    float worst_y;
    double max_sub; /* over subnormal results (|f(x)| < 2**-126) */
    float worst_sub_x;
    uint64_t mismatches; /* differs from the scalar path */
    float mismatch_x;
} vu_stat;

typedef struct vu_run {
    vu_map map;
    void *ctx;
    uint64_t count; /* indices 0..count-1 */
    unsigned only;  /* bit f set: measure function f; 0: all of them */
    _Atomic uint64_t next;
    const sw_vmath_impl *impl[SW_VMATH_ISA_COUNT];
    pthread_mutex_t lock;
    vu_stat stat[VU_COUNT][SW_VMATH_ISA_COUNT];
} vu_run;

static void *vu_worker(void *arg) {
    vu_run *run = arg;
    float x[VU_BLOCK], y[SW_VMATH_ISA_COUNT][VU_BLOCK], one[VU_BLOCK];
    for (int j = 0; j < VU_BLOCK; ++j)
        one[j] = 1.0f;
    vu_stat local[VU_COUNT][SW_VMATH_ISA_COUNT];
    memset(local, 0, sizeof local);
    for (;;) {
        uint64_t start = atomic_fetch_add(&run->next, VU_BLOCK);
        if (start >= run->count)
            break;
        int64_t n = (int64_t)(run->count - start < VU_BLOCK ? run->count - start
                                                            : VU_BLOCK);
        for (int64_t j = 0; j < n; ++j) {
            uint32_t bits = run->map(start + (uint64_t)j, run->ctx);
            memcpy(&x[j], &bits, sizeof bits);
        }
        for (int f = 0; f < VU_COUNT; ++f) {
            if (run->only && !(run->only & (1u << f)))
                continue;
            for (int p = 0; p < SW_VMATH_ISA_COUNT; ++p) {
                if (!run->impl[p])
                    continue;
                if (f == VU_GELU_GRAD)
                    run->impl[p]->grad[SW_VMATH_GELU](one, x, y[p], n);
                else if (f == VU_TANH_GRAD)
                    run->impl[p]->grad[SW_VMATH_TANH](one, x, y[p], n);
                else
                    run->impl[p]->fwd[f](x, y[p], n);
            }
            for (int64_t j = 0; j < n; ++j) {
                double ref, scale;
                if (f == VU_GELU_GRAD) {
                    ref = vu_gelu_grad_ref(x[j], &scale);
                    scale = fabs(ref) > scale ? ref : scale;
                } else if (f == VU_TANH_GRAD) {
                    ref = vu_tanh_grad_ref(x[j], &scale);
                    scale = ref > scale ? ref : scale;
                } else {
                    ref = scale = vu_ref((sw_vmath_fn)f, x[j]);
                }
                double e0 = 0;
                for (int p = 0; p < SW_VMATH_ISA_COUNT; ++p) {
                    if (!run->impl[p])
                        continue;
                    vu_stat *s = &local[f][p];
                    /* A path with the scalar path's bits has its error. */
                    int same = p > 0 && vu_same(y[p][j], y[0][j]);
                    double e = same ? e0 : vu_err_at(y[p][j], ref, scale);
                    if (p == 0)
                        e0 = e;
                    double a = fabs(scale);
                    if (a < 0x1p-126 && a > 0) {
                        if (e > s->max_sub) {
                            s->max_sub = e;
                            s->worst_sub_x = x[j];
                        }
                    } else if (e > s->max_err) {
                        s->max_err = e;
                        s->worst_x = x[j];
                        s->worst_y = y[p][j];
                    }
                    if (p > 0 && !same) {
                        if (!s->mismatches)
                            s->mismatch_x = x[j];
                        s->mismatches++;
                    }
                }
            }
        }
    }
    pthread_mutex_lock(&run->lock);
    for (int f = 0; f < VU_COUNT; ++f)
        for (int p = 0; p < SW_VMATH_ISA_COUNT; ++p) {
            vu_stat *d = &run->stat[f][p], *s = &local[f][p];
            if (s->max_err > d->max_err) {
                d->max_err = s->max_err;
                d->worst_x = s->worst_x;
                d->worst_y = s->worst_y;
            }
            if (s->max_sub > d->max_sub) {
                d->max_sub = s->max_sub;
                d->worst_sub_x = s->worst_sub_x;
            }
            if (s->mismatches && !d->mismatches)
                d->mismatch_x = s->mismatch_x;
            d->mismatches += s->mismatches;
        }
    pthread_mutex_unlock(&run->lock);
    return NULL;
}

/* Runs the measurement over count indices on VU_THREADS threads. */
static inline void vu_measure(vu_run *run, vu_map map, void *ctx,
                              uint64_t count) {
    memset(run->stat, 0, sizeof run->stat);
    run->map = map;
    run->ctx = ctx;
    run->count = count;
    atomic_store(&run->next, 0);
    for (int p = 0; p < SW_VMATH_ISA_COUNT; ++p)
        run->impl[p] = sw_vmath_impl_get((sw_vmath_isa)p);
    pthread_mutex_init(&run->lock, NULL);
    pthread_t th[VU_THREADS];
    int started = 0;
    for (int t = 0; t < VU_THREADS; ++t)
        if (pthread_create(&th[t], NULL, vu_worker, run) == 0)
            started++;
        else
            break;
    if (started == 0)
        vu_worker(run);
    for (int t = 0; t < started; ++t)
        pthread_join(th[t], NULL);
    pthread_mutex_destroy(&run->lock);
}

#endif /* SW_TESTS_VMATH_ULP_H */
