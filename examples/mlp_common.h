/*
 * The pieces shared by examples/train_mlp.c and examples/train_mlp_ddp.c,
 * written against the public C API only: Python's random.Random (MT19937),
 * column-major CPU Float32 tensors, the Kaiming-uniform initialisation, the
 * linear layer, the MSE loss and the SGD step of the sin(x) MLP, and the
 * programs' command line and exit status. See train_mlp.c for what each
 * piece reproduces of the Python examples.
 *
 * Each program includes this file from its own directory; it needs no build
 * of its own (its functions are static inline).
 */
#ifndef STRIDEWEAVE_EXAMPLES_MLP_COMMON_H
#define STRIDEWEAVE_EXAMPLES_MLP_COMMON_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <strideweave/strideweave.h>

#define POINTS 64
#define HIDDEN 16

/* math.pi: the double nearest to pi (M_PI is not part of C11). */
static const double PI = 3.141592653589793;

#define CHECK(call)                                                            \
    do {                                                                       \
        sw_status st_ = (call);                                                \
        if (st_) {                                                             \
            fprintf(stderr, "%s: %s\n", #call, sw_errmsg());                   \
            goto fail;                                                         \
        }                                                                      \
    } while (0)

/* ------------------------------------------------ Python's random.Random */

/* MT19937 as in CPython's _randommodule.c, written from the published
 * algorithm: the same seeding (init_by_array) and the same 53-bit random(). */
enum { MT_N = 624, MT_M = 397 };

typedef struct mt19937 {
    uint32_t state[MT_N];
    int index;
} mt19937;

static inline void mt_init_genrand(mt19937 *mt, uint32_t seed) {
    mt->state[0] = seed;
    for (int i = 1; i < MT_N; ++i) {
        uint32_t prev = mt->state[i - 1];
        mt->state[i] = 1812433253u * (prev ^ (prev >> 30)) + (uint32_t)i;
    }
    mt->index = MT_N;
}

static inline void mt_init_by_array(mt19937 *mt, const uint32_t *key,
                                    int length) {
    mt_init_genrand(mt, 19650218u);
    int i = 1, j = 0;
    for (int k = MT_N > length ? MT_N : length; k > 0; --k) {
        uint32_t prev = mt->state[i - 1];
        mt->state[i] = (mt->state[i] ^ ((prev ^ (prev >> 30)) * 1664525u)) +
                       key[j] + (uint32_t)j;
        ++i;
        ++j;
        if (i >= MT_N) {
            mt->state[0] = mt->state[MT_N - 1];
            i = 1;
        }
        if (j >= length)
            j = 0;
    }
    for (int k = MT_N - 1; k > 0; --k) {
        uint32_t prev = mt->state[i - 1];
        mt->state[i] = (mt->state[i] ^ ((prev ^ (prev >> 30)) * 1566083941u)) -
                       (uint32_t)i;
        ++i;
        if (i >= MT_N) {
            mt->state[0] = mt->state[MT_N - 1];
            i = 1;
        }
    }
    mt->state[0] = 0x80000000u; /* a non-zero initial state */
}

/* Python's random.Random(n) for a non-negative n below 2**32: the key is
 * the 32-bit digits of n, and [0] for n == 0. */
static inline void mt_seed(mt19937 *mt, uint32_t n) {
    mt_init_by_array(mt, &n, 1);
}

static inline uint32_t mt_next(mt19937 *mt) {
    static const uint32_t mag01[2] = {0u, 0x9908b0dfu};
    const uint32_t upper = 0x80000000u, lower = 0x7fffffffu;
    if (mt->index >= MT_N) {
        int k = 0;
        for (; k < MT_N - MT_M; ++k) {
            uint32_t y = (mt->state[k] & upper) | (mt->state[k + 1] & lower);
            mt->state[k] = mt->state[k + MT_M] ^ (y >> 1) ^ mag01[y & 1u];
        }
        for (; k < MT_N - 1; ++k) {
            uint32_t y = (mt->state[k] & upper) | (mt->state[k + 1] & lower);
            mt->state[k] =
                mt->state[k + (MT_M - MT_N)] ^ (y >> 1) ^ mag01[y & 1u];
        }
        uint32_t y = (mt->state[MT_N - 1] & upper) | (mt->state[0] & lower);
        mt->state[MT_N - 1] = mt->state[MT_M - 1] ^ (y >> 1) ^ mag01[y & 1u];
        mt->index = 0;
    }
    uint32_t y = mt->state[mt->index++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= y >> 18;
    return y;
}

/* random(): a double in [0, 1) from 27 + 26 random bits. */
static inline double mt_random(mt19937 *mt) {
    uint32_t a = mt_next(mt) >> 5, b = mt_next(mt) >> 6;
    return ((double)a * 67108864.0 + (double)b) * (1.0 / 9007199254740992.0);
}

/* uniform(lo, hi) exactly as Python computes it. */
static inline double mt_uniform(mt19937 *mt, double lo, double hi) {
    return lo + (hi - lo) * mt_random(mt);
}

/* ------------------------------------------------------------- tensors */

/* A fresh zeroed CPU Float32 tensor of the column-major layout (rows,cols). */
static inline sw_status column_major(int64_t rows, int64_t cols,
                                     sw_tensor **out) {
    int32_t recipe[2] = {SW_TOK_LEAF, SW_TOK_LEAF};
    int64_t shape[2] = {rows, cols}, stride[2] = {1, rows};
    sw_layout *layout = NULL;
    sw_carrier *carrier = NULL;
    sw_status st = sw_layout_from_recipe(2, recipe, shape, stride, &layout);
    if (!st)
        st = sw_cpu_new(sw_layout_cosize(layout), SW_DTYPE_FLOAT32, 1, 0,
                        &carrier);
    if (!st)
        st = sw_tensor_new(carrier, 0, layout, out);
    sw_carrier_unref(carrier);
    sw_layout_unref(layout);
    return st;
}

static inline sw_status fill(sw_tensor *t, double value) {
    sw_value v = sw_value_f64(value);
    sw_status st = SW_OK;
    for (int64_t i = 0; !st && i < sw_tensor_size(t); ++i)
        st = sw_tensor_set(t, i, &v);
    return st;
}

/* Kaiming-uniform initialisation in logical order, as strideweave.nn.init. */
static inline sw_status kaiming_uniform(sw_tensor *t, int64_t fan_in,
                                        mt19937 *rng) {
    double bound = 1.0 / sqrt((double)fan_in);
    sw_status st = SW_OK;
    for (int64_t i = 0; !st && i < sw_tensor_size(t); ++i) {
        sw_value v = sw_value_f64(mt_uniform(rng, -bound, bound));
        st = sw_tensor_set(t, i, &v);
    }
    return st;
}

typedef struct linear {
    int64_t in, out;
    sw_tensor *weight; /* [out, in] */
    sw_tensor *bias;   /* [out, 1] */
} linear;

static inline sw_status linear_init(linear *l, int64_t in, int64_t out,
                                    mt19937 *rng) {
    l->in = in;
    l->out = out;
    sw_status st = column_major(out, in, &l->weight);
    if (!st)
        st = kaiming_uniform(l->weight, in, rng);
    if (!st)
        st = column_major(out, 1, &l->bias);
    if (!st)
        st = kaiming_uniform(l->bias, in, rng);
    return st;
}

/* Drops the layer's parameters (NULL where linear_init did not make them). */
static inline void linear_unref(linear *l) {
    sw_tensor_unref(l->bias);
    sw_tensor_unref(l->weight);
}

/* x @ weight + ones[batch, 1] @ bias: matmul contracts mode 1 of both. */
static inline sw_status linear_forward(const linear *l, sw_tensor *x,
                                       sw_tensor **out) {
    sw_tensor *product = NULL, *ones = NULL, *shift = NULL;
    int64_t batch = sw_layout_size(sw_tensor_layout(x)) / l->in;
    sw_status st = sw_matmul(x, l->weight, &product);
    if (!st)
        st = column_major(batch, 1, &ones);
    if (!st)
        st = fill(ones, 1.0);
    if (!st)
        st = sw_matmul(ones, l->bias, &shift);
    if (!st)
        st = sw_add(product, shift, out);
    sw_tensor_unref(shift);
    sw_tensor_unref(ones);
    sw_tensor_unref(product);
    return st;
}

/* mean((prediction - target) ** 2) as the exact scalar 1:1: the squares are
 * rearranged to (1, (batch, features)) and their second mode reduced. */
static inline sw_status mse(sw_tensor *prediction, sw_tensor *target,
                            sw_tensor **out) {
    static const int32_t to_scalar[] = {
        SW_TOK_PUSH, SW_TOK_LEAF, SW_TOK_POP, SW_TOK_PUSH, 0, 1, SW_TOK_POP};
    sw_tensor *diff = NULL, *square = NULL, *row = NULL, *total = NULL;
    sw_status st = sw_sub(prediction, target, &diff);
    if (!st)
        st = sw_pow(diff, sw_arg_f64(2.0), &square);
    if (!st)
        st = sw_rearrange(square, 7, to_scalar, -1, NULL, &row);
    if (!st)
        st = sw_reduce_sum(row, &total);
    if (!st)
        st = sw_mul(total, sw_arg_f64(1.0 / (double)sw_tensor_size(square)),
                    out);
    sw_tensor_unref(total);
    sw_tensor_unref(row);
    sw_tensor_unref(square);
    sw_tensor_unref(diff);
    return st;
}

/* p[i] -= lr * grad[i] for every logical i, in double, stored as float32:
 * what strideweave.nn.SGD does element by element, in one library call. */
static inline sw_status sgd_update(sw_tensor *p, double lr) {
    sw_tensor *g = sw_tensor_grad(p);
    return g != NULL ? sw_tensor_axpy(p, -lr, g) : SW_OK;
}

static inline double seconds(void) {
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ------------------------------------------- command line and exit status */

/* [EPOCHS [LOG_EVERY [MAX_FINAL_LOSS]]], by default 2000, 200 and no bound.
 * Returns 0 after printing the usage unless both counts are positive. */
static inline int parse_args(int argc, char **argv, long *epochs,
                             long *log_every, double *max_final) {
    *epochs = argc > 1 ? strtol(argv[1], NULL, 10) : 2000;
    *log_every = argc > 2 ? strtol(argv[2], NULL, 10) : 200;
    *max_final = argc > 3 ? strtod(argv[3], NULL) : INFINITY;
    if (*epochs <= 0 || *log_every <= 0) {
        fprintf(stderr, "usage: %s [EPOCHS [LOG_EVERY [MAX_FINAL_LOSS]]]\n",
                argv[0]);
        return 0;
    }
    return 1;
}

/* 0 when the loss decreased from the first epoch's to the final one (or
 * there was one epoch) and ends below max_final; else 1, the reason printed
 * on stderr. */
static inline int exit_status(double first, double final, long epochs,
                              double max_final) {
    if (!(isfinite(final) && (epochs == 1 || final < first))) {
        fprintf(stderr, "the loss did not decrease: %.9g -> %.9g\n", first,
                final);
        return 1;
    }
    if (!(final < max_final)) {
        fprintf(stderr, "final loss %.9g is not below %g\n", final, max_final);
        return 1;
    }
    return 0;
}

#endif /* STRIDEWEAVE_EXAMPLES_MLP_COMMON_H */
