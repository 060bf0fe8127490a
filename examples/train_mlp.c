/*
 * Train a small MLP on sin(x) from C, through the public API only: the same
 * task, model, initialisation and loop as examples/train_mlp_cpu.py and
 * examples/train_mlp_cpu_friendly.py, so the losses agree with theirs.
 *
 *   data:  64 points x_i = -pi + 2*pi*i/63, targets sin(x_i), as [64, 1]
 *          column-major CPU Float32 tensors (layout (64,1):(1,64));
 *   model: Linear(1, 16) -> tanh -> Linear(16, 1), weights [out, in]
 *          column-major, biases [out, 1], added as ones[batch, 1] @ bias;
 *   init:  Python's random.Random(0) (MT19937 seeded by init_by_array, as
 *          CPython seeds from an int), uniform(-1/sqrt(in), 1/sqrt(in)) for
 *          every weight element in logical order, then every bias element;
 *   loss:  mean((prediction - target) ** 2) as an exact scalar 1:1;
 *   step:  p -= lr * p.grad per element in double precision, stored as
 *          float32 (what strideweave.nn.SGD does), with sw_tensor_axpy.
 *
 * These pieces are in mlp_common.h, shared with train_mlp_ddp.c; this file
 * holds the data and the training loop.
 *
 * Usage: train_mlp [EPOCHS [LOG_EVERY [MAX_FINAL_LOSS]]]
 * Prints "epoch N  loss L  R steps/s" every LOG_EVERY epochs and at the last
 * one (L with 9 significant digits, enough to recover the float32 value),
 * then the final loss. Exits 1 on an error, when the loss did not decrease,
 * or when the final loss is not below MAX_FINAL_LOSS (if given).
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

    mt19937 rng;
    mt_seed(&rng, 0);
    linear hidden = {0}, output = {0};
    sw_tensor *x = NULL, *target = NULL;
    sw_tensor *h = NULL, *a = NULL, *y = NULL, *loss = NULL;
    double first = NAN, final = NAN;
    int rc = 1;

    CHECK(column_major(POINTS, 1, &x));
    CHECK(column_major(POINTS, 1, &target));
    for (int64_t i = 0; i < POINTS; ++i) {
        /* The same expression, evaluated in the same order, as Python's
         * -math.pi + 2 * math.pi * i / 63. */
        double xi = -PI + 2 * PI * (double)i / (POINTS - 1);
        sw_value xv = sw_value_f64(xi), yv = sw_value_f64(sin(xi));
        CHECK(sw_tensor_set(x, i, &xv));
        CHECK(sw_tensor_set(target, i, &yv));
    }
    CHECK(linear_init(&hidden, 1, HIDDEN, &rng));
    CHECK(linear_init(&output, HIDDEN, 1, &rng));
    sw_tensor *params[4] = {hidden.weight, hidden.bias, output.weight,
                            output.bias};

    double start = seconds(), last = start;
    long last_epoch = 0;
    for (long epoch = 1; epoch <= epochs; ++epoch) {
        CHECK(linear_forward(&hidden, x, &h));
        CHECK(sw_unary("tanh", h, &a));
        CHECK(linear_forward(&output, a, &y));
        CHECK(mse(y, target, &loss));
        sw_value lv;
        CHECK(sw_tensor_get(loss, 0, &lv));
        final = lv.as.f;
        if (epoch == 1)
            first = final;
        for (int k = 0; k < 4; ++k)
            CHECK(sw_tensor_set_grad(params[k], NULL));
        CHECK(sw_tensor_backward(loss, NULL));
        for (int k = 0; k < 4; ++k)
            CHECK(sgd_update(params[k], lr));
        sw_tensor_unref(loss);
        sw_tensor_unref(y);
        sw_tensor_unref(a);
        sw_tensor_unref(h);
        loss = y = a = h = NULL;
        if (epoch % log_every == 0 || epoch == epochs) {
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
    printf("final loss %.9g after %ld epochs in %.2f s (%.0f steps/s)\n", final,
           epochs, elapsed, (double)epochs / elapsed);
    rc = exit_status(first, final, epochs, max_final);
fail:
    sw_tensor_unref(loss);
    sw_tensor_unref(y);
    sw_tensor_unref(a);
    sw_tensor_unref(h);
    linear_unref(&output);
    linear_unref(&hidden);
    sw_tensor_unref(target);
    sw_tensor_unref(x);
    return rc;
}
