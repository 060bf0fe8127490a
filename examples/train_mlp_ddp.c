/*
 * Data-parallel training of the sin(x) MLP of examples/train_mlp.c on
 * several processes with MPI, through the public C API only.
 *
 * Every process builds the same model (the same initialisation as
 * train_mlp.c) and takes its shard of the 64 points: point i goes to rank
 * i mod world. sw_dist_ddp_new broadcasts rank 0's parameters and watches
 * their gradients, so that after each sw_tensor_backward every process
 * holds the mean of all processes' gradients and takes the same SGD step.
 * The loss printed by rank 0 is the mean of the processes' losses.
 *
 *   mpirun -n 2 ./train_mlp_ddp [EPOCHS [LOG_EVERY [MAX_FINAL_LOSS]]]
 *
 * (add --oversubscribe with more processes than cores). Alone it is a job
 * of one process. Exits 1 on an error, when the loss did not decrease, or
 * when the final loss is not below MAX_FINAL_LOSS (if given).
 */
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

static void mt_init_genrand(mt19937 *mt, uint32_t seed) {
    mt->state[0] = seed;
    for (int i = 1; i < MT_N; ++i) {
        uint32_t prev = mt->state[i - 1];
        mt->state[i] = 1812433253u * (prev ^ (prev >> 30)) + (uint32_t)i;
    }
    mt->index = MT_N;
}

static void mt_init_by_array(mt19937 *mt, const uint32_t *key, int length) {
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
static void mt_seed(mt19937 *mt, uint32_t n) {
    mt_init_by_array(mt, &n, 1);
}

static uint32_t mt_next(mt19937 *mt) {
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
static double mt_random(mt19937 *mt) {
    uint32_t a = mt_next(mt) >> 5, b = mt_next(mt) >> 6;
    return ((double)a * 67108864.0 + (double)b) * (1.0 / 9007199254740992.0);
}

/* uniform(lo, hi) exactly as Python computes it. */
static double mt_uniform(mt19937 *mt, double lo, double hi) {
    return lo + (hi - lo) * mt_random(mt);
}

/* ------------------------------------------------------------- tensors */

/* A fresh zeroed CPU Float32 tensor of the column-major layout (rows,cols). */
static sw_status column_major(int64_t rows, int64_t cols, sw_tensor **out) {
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

static sw_status fill(sw_tensor *t, double value) {
    sw_value v = sw_value_f64(value);
    sw_status st = SW_OK;
    for (int64_t i = 0; !st && i < sw_tensor_size(t); ++i)
        st = sw_tensor_set(t, i, &v);
    return st;
}

/* Kaiming-uniform initialisation in logical order, as strideweave.nn.init. */
static sw_status kaiming_uniform(sw_tensor *t, int64_t fan_in, mt19937 *rng) {
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

static sw_status linear_init(linear *l, int64_t in, int64_t out, mt19937 *rng) {
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

/* x @ weight + ones[batch, 1] @ bias: matmul contracts mode 1 of both. */
static sw_status linear_forward(const linear *l, sw_tensor *x,
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
static sw_status mse(sw_tensor *prediction, sw_tensor *target,
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
static sw_status sgd_update(sw_tensor *p, double lr) {
    sw_tensor *g = sw_tensor_grad(p);
    return g != NULL ? sw_tensor_axpy(p, -lr, g) : SW_OK;
}

static double seconds(void) {
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv) {
    long epochs = argc > 1 ? strtol(argv[1], NULL, 10) : 2000;
    long log_every = argc > 2 ? strtol(argv[2], NULL, 10) : 200;
    double max_final = argc > 3 ? strtod(argv[3], NULL) : INFINITY;
    const double lr = 0.05;
    if (epochs <= 0 || log_every <= 0) {
        fprintf(stderr, "usage: %s [EPOCHS [LOG_EVERY [MAX_FINAL_LOSS]]]\n",
                argv[0]);
        return 2;
    }

    if (sw_dist_init()) {
        fprintf(stderr, "sw_dist_init: %s\n", sw_errmsg());
        return 1;
    }
    int rank = 0, world = 1;
    sw_dist_rank(&rank);
    sw_dist_world_size(&world);
    /* This process's points: i = rank, rank + world, ... */
    int64_t local = (POINTS - rank + world - 1) / world;

    mt19937 rng;
    mt_seed(&rng, 0);
    sw_dist_ddp *ddp = NULL;
    sw_tensor *mean_loss = NULL;
    linear hidden = {0}, output = {0};
    sw_tensor *x = NULL, *target = NULL;
    sw_tensor *h = NULL, *a = NULL, *y = NULL, *loss = NULL;
    double first = NAN, final = NAN;
    int rc = 1;

    CHECK(column_major(local, 1, &x));
    CHECK(column_major(local, 1, &target));
    for (int64_t k = 0; k < local; ++k) {
        int64_t i = rank + k * world;
        double xi = -PI + 2 * PI * (double)i / (POINTS - 1);
        sw_value xv = sw_value_f64(xi), yv = sw_value_f64(sin(xi));
        CHECK(sw_tensor_set(x, k, &xv));
        CHECK(sw_tensor_set(target, k, &yv));
    }
    /* The data takes no gradient. */
    CHECK(sw_tensor_set_requires_grad(x, 0));
    CHECK(sw_tensor_set_requires_grad(target, 0));
    CHECK(column_major(1, 1, &mean_loss));
    CHECK(linear_init(&hidden, 1, HIDDEN, &rng));
    CHECK(linear_init(&output, HIDDEN, 1, &rng));
    sw_tensor *params[4] = {hidden.weight, hidden.bias, output.weight,
                            output.bias};
    /* Rank 0's values everywhere, and gradients averaged in every pass. */
    CHECK(sw_dist_ddp_new(params, 4, 0, &ddp));

    double start = seconds(), last = start;
    long last_epoch = 0;
    for (long epoch = 1; epoch <= epochs; ++epoch) {
        CHECK(linear_forward(&hidden, x, &h));
        CHECK(sw_unary("tanh", h, &a));
        CHECK(linear_forward(&output, a, &y));
        CHECK(mse(y, target, &loss));
        /* The mean of the processes' losses (a collective: every process
         * makes it, in the same order). */
        sw_value lv;
        CHECK(sw_tensor_get(loss, 0, &lv));
        CHECK(sw_tensor_set(mean_loss, 0, &lv));
        CHECK(sw_dist_all_reduce(mean_loss, SW_DIST_MEAN, NULL));
        CHECK(sw_tensor_get(mean_loss, 0, &lv));
        final = lv.as.f;
        if (epoch == 1)
            first = final;
        for (int k = 0; k < 4; ++k)
            CHECK(sw_tensor_set_grad(params[k], NULL));
        CHECK(sw_tensor_backward(loss, NULL)); /* averages the gradients */
        for (int k = 0; k < 4; ++k)
            CHECK(sgd_update(params[k], lr));
        sw_tensor_unref(loss);
        sw_tensor_unref(y);
        sw_tensor_unref(a);
        sw_tensor_unref(h);
        loss = y = a = h = NULL;
        if (rank == 0 && (epoch % log_every == 0 || epoch == epochs)) {
            double now = seconds();
            double rate = (double)(epoch - last_epoch) /
                          (now - last > 1e-9 ? now - last : 1e-9);
            printf("epoch %5ld  loss %.9g  %8.0f steps/s\n", epoch, final,
                   rate);
            last = now;
            last_epoch = epoch;
        }
    }
    double elapsed = seconds() - start;
    if (rank == 0)
        printf("final loss %.9g after %ld epochs on %d process(es) in %.2f s "
               "(%.0f steps/s)\n",
               final, epochs, world, elapsed, (double)epochs / elapsed);
    if (!(isfinite(final) && (epochs == 1 || final < first))) {
        fprintf(stderr, "the loss did not decrease: %.9g -> %.9g\n", first,
                final);
    } else if (!(final < max_final)) {
        fprintf(stderr, "final loss %.9g is not below %g\n", final, max_final);
    } else {
        rc = 0;
    }
fail:
    sw_dist_ddp_unref(ddp);
    sw_tensor_unref(mean_loss);
    sw_tensor_unref(loss);
    sw_tensor_unref(y);
    sw_tensor_unref(a);
    sw_tensor_unref(h);
    sw_tensor_unref(output.bias);
    sw_tensor_unref(output.weight);
    sw_tensor_unref(hidden.bias);
    sw_tensor_unref(hidden.weight);
    sw_tensor_unref(target);
    sw_tensor_unref(x);
    /* A process that failed ends the job rather than leave the others
     * waiting in a collective. */
    if (rc != 0 && world > 1)
        sw_dist_abort(rc, "train_mlp_ddp failed");
    sw_dist_finalize();
    return rc;
}
