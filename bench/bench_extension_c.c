/*
 * The cost of running a built-in operation on a definition-backed carrier
 * whose kernel is a C pattern, beside the same operation on CPU, for
 * 4-element tensors: relu through sw_unary, grad mode off and on, best of
 * REPEATS alternating rounds. The goal is at most 1.5x CPU. The storage
 * provider keeps float32 values in a malloc'd array (a C device carrier's
 * shape), and the pattern computes relu over the raw arrays.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "strideweave/strideweave.h"

#define N 400000
#define REPEATS 7

static char tag;
static char iface;

static void check(const char *what, sw_status st) {
    if (st != SW_OK) {
        fprintf(stderr, "%s failed: %s\n", what, sw_errmsg());
        exit(1);
    }
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ------------------------------------------------------------- storage */

typedef struct store {
    int64_t n;
    float v[];
} store;

static sw_status s_supports(void *ctx, sw_carrier *c, sw_dtype d, int *out) {
    (void)ctx;
    (void)c;
    *out = d == SW_DTYPE_FLOAT32;
    return SW_OK;
}

static sw_status s_allocate(void *ctx, sw_carrier *c, int64_t n) {
    (void)ctx;
    store *s = calloc(1, sizeof *s + (size_t)n * sizeof(float));
    if (!s)
        return sw_set_error(SW_ENOMEM, "out of memory");
    s->n = n;
    sw_carrier_defined_set_data(c, s);
    return SW_OK;
}

static sw_status s_size(void *ctx, sw_carrier *c, int64_t *out) {
    (void)ctx;
    *out = ((store *)sw_carrier_defined_data(c))->n;
    return SW_OK;
}

static sw_status s_release(void *ctx, sw_carrier *c) {
    (void)ctx;
    free(sw_carrier_defined_data(c));
    sw_carrier_defined_set_data(c, NULL);
    return SW_OK;
}

static sw_status s_read(void *ctx, sw_carrier *c, int64_t i, sw_value *out) {
    (void)ctx;
    *out = sw_value_f64(((store *)sw_carrier_defined_data(c))->v[i]);
    return SW_OK;
}

static sw_status s_write(void *ctx, sw_carrier *c, int64_t i,
                         const sw_value *v) {
    (void)ctx;
    ((store *)sw_carrier_defined_data(c))->v[i] = (float)v->as.f;
    return SW_OK;
}

/* ------------------------------------------------------------- kernel */

static sw_status k_prepare(void *ctx, const sw_kernel_invocation *inv,
                           void **work, int *unsupported, char *reason,
                           size_t size) {
    (void)ctx;
    (void)reason;
    (void)size;
    const sw_tensor *x = inv->call->operands[0].as.tensor;
    /* Contiguous tensors only: the kernel reads the raw array. */
    if (sw_tensor_offset(x) != 0 || sw_layout_cosize(sw_tensor_layout(x)) !=
                                        sw_layout_size(sw_tensor_layout(x))) {
        *unsupported = 1;
        return SW_OK;
    }
    *work = NULL;
    return SW_OK;
}

static sw_status k_submit(void *ctx, void *work,
                          const sw_kernel_invocation *inv,
                          sw_tensor **results) {
    (void)ctx;
    (void)work;
    const sw_tensor *x = inv->call->operands[0].as.tensor;
    const sw_layout *l = inv->resolution->results[0].layout;
    sw_carrier *out = NULL;
    sw_status st =
        sw_carrier_allocate_like(sw_tensor_carrier(x), sw_layout_cosize(l), 1,
                                 SW_DTYPE_FLOAT32, 1, &out);
    if (st)
        return st;
    const store *in = sw_carrier_defined_data(sw_tensor_carrier(x));
    store *o = sw_carrier_defined_data(out);
    for (int64_t i = 0; i < in->n; ++i)
        o->v[i] = in->v[i] > 0 ? in->v[i] : 0.0f;
    st = sw_tensor_new(out, 0, (sw_layout *)l, &results[0]);
    sw_carrier_unref(out);
    return st;
}

/* ------------------------------------------------------------- timing */

static double run(sw_tensor *x) {
    double t0 = now();
    for (int i = 0; i < N; ++i) {
        sw_tensor *y = NULL;
        check("relu", sw_unary("relu", x, &y));
        sw_tensor_unref(y);
    }
    return (now() - t0) / N * 1e9;
}

int main(void) {
    sw_plan_input in = sw_plan_tensor(SW_DTYPE_FLOAT32);
    sw_op_plan plan;
    check("plan",
          sw_op_plan_resolve(SW_OP_RELU, 1, &in, SW_PLAN_NO_DTYPE, &plan));
    sw_op_capability cap;
    sw_op_capability_from_plan(&plan, &cap);
    sw_kernel_pattern_decl pattern = {
        SW_OP_RELU, 1, &cap, "relu", 0, NULL, k_prepare, k_submit, NULL};
    sw_carrier_definition def;
    memset(&def, 0, sizeof def);
    def.version = SW_CARRIER_DEFINITION_VERSION;
    def.name = "Device";
    def.storage = (sw_storage_provider){SW_STORAGE_PROVIDER_VERSION,
                                        NULL,
                                        s_supports,
                                        s_allocate,
                                        s_size,
                                        s_release,
                                        s_read,
                                        s_write,
                                        0};
    def.has_kernels = 1;
    def.interface_type = &iface;
    def.interface_version = "1";
    def.npatterns = 1;
    def.patterns = &pattern;
    check("define", sw_carrier_define(&tag, &def));

    sw_layout *l = NULL;
    check("layout", sw_layout_parse("(4):(1)", &l));
    sw_carrier *dc = NULL, *cc = NULL;
    check("device", sw_carrier_defined_new(&tag, &dc));
    check("allocate", sw_carrier_defined_allocate(dc, 4, SW_DTYPE_FLOAT32, 1));
    check("cpu", sw_cpu_new(4, SW_DTYPE_FLOAT32, 1, 0, &cc));
    for (int64_t i = 0; i < 4; ++i) {
        sw_value v = sw_value_f64((double)i - 1.5);
        check("fill", sw_carrier_set(dc, i, &v));
        check("fill", sw_carrier_set(cc, i, &v));
    }
    sw_tensor *xd = NULL, *xc = NULL;
    check("tensor", sw_tensor_new(dc, 0, l, &xd));
    check("tensor", sw_tensor_new(cc, 0, l, &xc));

    for (int grad = 0; grad <= 1; ++grad) {
        sw_set_grad_enabled(grad);
        double best_d = 1e30, best_c = 1e30;
        for (int r = 0; r < REPEATS; ++r) {
            double c = run(xc), d = run(xd);
            best_c = c < best_c ? c : best_c;
            best_d = d < best_d ? d : best_d;
        }
        printf("relu, 4 elements, grad %s: CPU %.0f ns, definition-backed "
               "C pattern %.0f ns, ratio %.2fx (goal <= 1.5x)\n",
               grad ? "on " : "off", best_c, best_d, best_d / best_c);
    }
    sw_tensor_unref(xd);
    sw_tensor_unref(xc);
    sw_carrier_unref(dc);
    sw_carrier_unref(cc);
    sw_layout_release(l);
    sw_capabilities_forget(&tag);
    return 0;
}
