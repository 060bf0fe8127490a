/*
 * The costs of the carrier-extension paths beside the built-in ones, best
 * of alternating rounds:
 *
 *  1. a built-in operation on a definition-backed carrier whose kernel is
 *     a C pattern, beside the same operation on CPU, for 4-element
 *     tensors: relu through sw_unary, grad mode off and on (goal: at most
 *     1.5x CPU). The storage provider keeps float32 values in an array
 *     (a C device carrier's shape): a small one in the carrier's own
 *     block (sw_carrier_defined_room), as the CPU carrier keeps small
 *     arrays in its block, a larger one in a block of its own; the
 *     pattern computes relu over the raw arrays;
 *  2. a move of 1 GiB through a definition-backed transfer route into an
 *     empty FileBacked carrier (the route writes the whole span with one
 *     sw_file_write), beside the built-in CPU -> FileBacked route of the
 *     same tensor (goal: at most 1.1x). The store keeps large blocks in
 *     2 MiB-aligned memory advised for huge pages, as the CPU carrier
 *     does: with 4 KiB pages the kernel's copy out of the source costs
 *     about half as much again, which is the page size, not the route.
 */
#define _DEFAULT_SOURCE /* madvise */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "strideweave/strideweave.h"

#ifndef N
#define N 400000
#endif
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
    int big;   /* v is a separate huge-page block */
    int inner; /* s is the carrier's room: not to be freed */
    float *v;
    float small[];
} store;

#define BIG_BYTES ((size_t)4 << 20)
#define HUGE_PAGE ((size_t)2 << 20)

static sw_status s_supports(void *ctx, sw_carrier *c, sw_dtype d, int *out) {
    (void)ctx;
    (void)c;
    *out = d == SW_DTYPE_FLOAT32;
    return SW_OK;
}

static sw_status s_allocate(void *ctx, sw_carrier *c, int64_t n) {
    (void)ctx;
    size_t bytes = (size_t)n * sizeof(float);
    int big = bytes >= BIG_BYTES;
    store *s = sw_carrier_defined_room(c, sizeof *s + bytes);
    int inner = s != NULL;
    if (!s)
        s = calloc(1, sizeof *s + (big ? 0 : bytes));
    if (!s)
        return sw_set_error(SW_ENOMEM, "out of memory");
    s->n = n;
    s->big = big;
    s->inner = inner;
    s->v = s->small;
    if (big) {
        size_t rounded = (bytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
        void *p = NULL;
        if (posix_memalign(&p, HUGE_PAGE, rounded)) {
            free(s);
            return sw_set_error(SW_ENOMEM, "out of memory");
        }
        madvise(p, rounded, MADV_HUGEPAGE);
        memset(p, 0, bytes);
        s->v = p;
    }
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
    store *s = sw_carrier_defined_data(c);
    if (s && s->big)
        free(s->v);
    if (s && !s->inner)
        free(s);
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

/* -------------------------------------------------------------- route */

typedef struct route_work {
    const float *src;
    sw_carrier *dst;
    int64_t span;
} route_work;

static route_work the_work;

static sw_status r_prepare(void *ctx, const sw_transfer_request *r, void **work,
                           int *unsupported, char *reason, size_t size) {
    (void)ctx;
    (void)unsupported;
    (void)reason;
    (void)size;
    const store *s = sw_carrier_defined_data(sw_tensor_carrier(r->tensor));
    the_work.src = s->v + r->offset;
    the_work.dst = r->destination;
    the_work.span = r->physical_span;
    *work = &the_work;
    return SW_OK;
}

static sw_status r_run(void *ctx, void *work) {
    (void)ctx;
    route_work *w = work;
    return sw_file_write(w->dst, 0, w->span, w->src);
}

static double seconds_to_move(sw_tensor *t) {
    sw_carrier *dst = NULL;
    check("file", sw_file_new_in(NULL, NULL, SW_DTYPE_FLOAT32, 1, &dst));
    sw_tensor *out = NULL;
    double t0 = now();
    check("move", sw_move(t, dst, &out));
    double dt = now() - t0;
    sw_tensor_unref(out);
    sw_carrier_unref(dst);
    return dt;
}

/* A fresh source of n floats, CPU or definition-backed, filled. */
static sw_tensor *big_source(int defined, int64_t n, const sw_layout *l) {
    sw_carrier *c = NULL;
    if (defined) {
        check("device", sw_carrier_defined_new(&tag, &c));
        check("allocate",
              sw_carrier_defined_allocate(c, n, SW_DTYPE_FLOAT32, 1));
        store *s = sw_carrier_defined_data(c);
        memset(s->v, 1, (size_t)n * sizeof(float));
    } else {
        check("cpu", sw_cpu_new(n, SW_DTYPE_FLOAT32, 1, 0, &c));
        memset(sw_cpu_data(c), 1, (size_t)n * sizeof(float));
    }
    sw_tensor *t = NULL;
    check("tensor", sw_tensor_new(c, 0, (sw_layout *)l, &t));
    sw_carrier_unref(c);
    return t;
}

static void bench_route(void) {
    const int64_t n = (int64_t)1 << 28; /* 1 GiB of float32 */
    char text[64];
    snprintf(text, sizeof text, "(%lld):(1)", (long long)n);
    sw_layout *l = NULL;
    check("layout", sw_layout_parse(text, &l));
    sw_set_grad_enabled(0);
    double best_r = 1e30, best_c = 1e30;
    for (int r = 0; r < 3; ++r) {
        sw_tensor *a = big_source(0, n, l);
        double c = seconds_to_move(a);
        sw_tensor_unref(a);
        sw_tensor *b = big_source(1, n, l);
        double d = seconds_to_move(b);
        sw_tensor_unref(b);
        best_c = c < best_c ? c : best_c;
        best_r = d < best_r ? d : best_r;
    }
    printf("move 1 GiB into FileBacked: built-in CPU route %.3f s (%.2f GB/s), "
           "definition-backed route %.3f s (%.2f GB/s), ratio %.2fx (goal <= "
           "1.1x)\n",
           best_c, 1.073741824 / best_c, best_r, 1.073741824 / best_r,
           best_r / best_c);
    sw_layout_unref(l);
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
    sw_transfer_route_decl route = {0};
    route.source = &tag;
    route.destination = sw_file_class();
    route.route_id = "to-file";
    route.prepare = r_prepare;
    route.run = r_run;
    def.nroutes = 1;
    def.routes = &route;
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
    if (!getenv("SW_BENCH_NO_ROUTE"))
        bench_route();
    sw_tensor_unref(xd);
    sw_tensor_unref(xc);
    sw_carrier_unref(dc);
    sw_carrier_unref(cc);
    sw_layout_unref(l);
    sw_capabilities_forget(&tag);
    return 0;
}
