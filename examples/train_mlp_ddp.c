/*
 * Data-parallel training of the sin(x) MLP of examples/train_mlp.c on
 * several processes with MPI, through the public C API only.
 *
 * Every process builds the same model (the same initialisation as
 * train_mlp.c) and takes its shard of the 64 points: point i goes to rank
 * i mod world. sw_dist_ddp_new broadcasts rank 0's parameters and watches
 * their gradients, so that after each sw_tensor_backward every process
 * holds the mean of all processes' gradients and takes the same SGD step.
 * The loss printed by rank 0 is the mean of the processes' losses. The
 * model, the loss and the step are those of train_mlp.c, in mlp_common.h.
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

#include <strideweave/strideweave.h>

#include "mlp_common.h"

int main(int argc, char **argv) {
    long epochs, log_every;
    double max_final;
    if (!parse_args(argc, argv, &epochs, &log_every, &max_final))
        return 2;
    const double lr = 0.05;

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
    rc = exit_status(first, final, epochs, max_final);
fail:
    sw_dist_ddp_unref(ddp);
    sw_tensor_unref(mean_loss);
    sw_tensor_unref(loss);
    sw_tensor_unref(y);
    sw_tensor_unref(a);
    sw_tensor_unref(h);
    linear_unref(&output);
    linear_unref(&hidden);
    sw_tensor_unref(target);
    sw_tensor_unref(x);
    /* A process that failed ends the job rather than leave the others
     * waiting in a collective. */
    if (rc != 0 && world > 1)
        sw_dist_abort(rc, "train_mlp_ddp failed");
    sw_dist_finalize();
    return rc;
}
