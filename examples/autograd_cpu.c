/*
 * Gradient descent from C: fit w in y = w*x by least squares with CPU
 * tensors, native operations and autograd, through the public API only.
 *
 *     loss = sum_i (x_i*w - y_i)^2
 *
 * Each step builds the graph (matmul, sub, pow, a permuted view, reduce),
 * runs backward() from the scalar loss, and moves w against its gradient.
 */
#include <stdio.h>

#include <strideweave/strideweave.h>

#define N 32

#define CHECK(call)                                                            \
    do {                                                                       \
        sw_status st_ = (call);                                                \
        if (st_) {                                                             \
            fprintf(stderr, "%s: %s\n", #call, sw_errmsg());                   \
            goto fail;                                                         \
        }                                                                      \
    } while (0)

/* A CPU Float32 tensor of the given layout text holding values[i] at its
 * logical index i. */
static sw_status tensor_of(const char *layout, const float *values,
                           sw_tensor **out) {
    sw_layout *l = NULL;
    sw_carrier *c = NULL;
    sw_status st = sw_layout_parse(layout, &l);
    if (!st)
        st = sw_cpu_new(sw_layout_cosize(l), SW_DTYPE_FLOAT32, 1, 0, &c);
    if (!st)
        st = sw_tensor_new(c, 0, l, out);
    for (int64_t i = 0; !st && i < sw_layout_size(l); ++i) {
        sw_value v = sw_value_f64(values[i]);
        st = sw_tensor_set(*out, i, &v);
    }
    sw_carrier_unref(c);
    sw_layout_unref(l);
    return st;
}

int main(void) {
    float xs[N], ys[N], w0 = 0.0f;
    for (int i = 0; i < N; ++i) {
        xs[i] = (float)i / N;
        ys[i] = 3.0f * xs[i] + 0.01f * (float)((i * 7) % 5 - 2);
    }
    sw_tensor *x = NULL, *y = NULL, *w = NULL;
    sw_tensor *pred = NULL, *d = NULL, *sq = NULL, *row = NULL, *loss = NULL;
    int32_t swap[2] = {1, 0};
    double final = 0.0;
    int rc = 1;
    CHECK(tensor_of("(32,1):(1,32)", xs, &x)); /* [batch, features] */
    CHECK(tensor_of("(32,1):(1,32)", ys, &y));
    CHECK(tensor_of("(1,1):(1,1)", &w0, &w)); /* [out, in] */
    for (int step = 0; step <= 60; ++step) {
        CHECK(sw_matmul(x, w, &pred)); /* contracts mode 1 of both */
        CHECK(sw_sub(pred, y, &d));
        CHECK(sw_pow(d, sw_arg_f64(2.0), &sq));
        CHECK(sw_permute(sq, 2, swap, &row)); /* (1,32): a view */
        CHECK(sw_reduce_sum(row, &loss));     /* exact scalar 1:1 */
        CHECK(sw_tensor_backward(loss, NULL));
        sw_value l, g, wv;
        CHECK(sw_tensor_get(loss, 0, &l));
        CHECK(sw_tensor_get(sw_tensor_grad(w), 0, &g));
        CHECK(sw_tensor_get(w, 0, &wv));
        if (step % 20 == 0)
            printf("step %2d  loss %.6f  w %.4f\n", step, l.as.f, wv.as.f);
        final = l.as.f;
        sw_value next = sw_value_f64(wv.as.f - 0.05 * g.as.f);
        CHECK(sw_tensor_set(w, 0, &next)); /* bumps w's version */
        CHECK(sw_tensor_set_grad(w, NULL));
        sw_tensor_unref(loss);
        sw_tensor_unref(row);
        sw_tensor_unref(sq);
        sw_tensor_unref(d);
        sw_tensor_unref(pred);
        loss = row = sq = d = pred = NULL;
    }
    printf("final loss %.6f\n", final);
    rc = final < 0.01 ? 0 : 1;
fail:
    sw_tensor_unref(loss);
    sw_tensor_unref(row);
    sw_tensor_unref(sq);
    sw_tensor_unref(d);
    sw_tensor_unref(pred);
    sw_tensor_unref(w);
    sw_tensor_unref(y);
    sw_tensor_unref(x);
    return rc;
}
