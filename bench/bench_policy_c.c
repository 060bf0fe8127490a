/*
 * The cost of plan resolution and capability lookup, from C.
 *
 *   resolve   sw_op_plan_resolve for add of two Float32 tensors;
 *   resolve3  the same for matmul with an Int32 and a Float32 operand;
 *   match     sw_capability_list_match of that add plan in CPU's set;
 *   class     sw_capabilities_of_class(CPU) then the match (a carrier's
 *             supports_operation_plan).
 *
 * The goal for resolving a built-in call's plan is under 100 ns. The
 * numbers are a report.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "strideweave/strideweave.h"

#define N 2000000
#define REPEATS 5

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

static volatile int64_t sink;

typedef void (*body)(void);

static sw_plan_input in_add[2], in_mm[2];
static sw_op_plan add_plan;
static sw_capability_list cpu_caps;

static void resolve_add(void) {
    sw_op_plan p;
    for (int i = 0; i < N; ++i) {
        check("resolve",
              sw_op_plan_resolve(SW_OP_ADD, 2, in_add, SW_PLAN_NO_DTYPE, &p));
        sink += p.output;
    }
}

static void resolve_matmul(void) {
    sw_op_plan p;
    for (int i = 0; i < N; ++i) {
        check("resolve",
              sw_op_plan_resolve(SW_OP_MATMUL, 2, in_mm, SW_PLAN_NO_DTYPE, &p));
        sink += p.output;
    }
}

static void match(void) {
    for (int i = 0; i < N; ++i)
        sink += sw_capability_list_match(cpu_caps, &add_plan) != NULL;
}

static void class_match(void) {
    for (int i = 0; i < N; ++i) {
        sw_capability_list l;
        check("class", sw_capabilities_of_class(sw_cpu_class(), &l));
        sink += sw_capability_list_match(l, &add_plan) != NULL;
    }
}

static void report(const char *name, body fn) {
    double best = 1e30;
    for (int r = 0; r < REPEATS; ++r) {
        double t0 = now();
        fn();
        double t = now() - t0;
        if (t < best)
            best = t;
    }
    printf("%-9s %7.1f ns\n", name, best / N * 1e9);
}

int main(void) {
    in_add[0] = in_add[1] = sw_plan_tensor(SW_DTYPE_FLOAT32);
    in_mm[0] = sw_plan_tensor(SW_DTYPE_INT32);
    in_mm[1] = sw_plan_tensor(SW_DTYPE_FLOAT32);
    check("resolve", sw_op_plan_resolve(SW_OP_ADD, 2, in_add, SW_PLAN_NO_DTYPE,
                                        &add_plan));
    check("CPU set", sw_capabilities_of_class(sw_cpu_class(), &cpu_caps));
    printf("plan resolution and capability lookup (best of %d, %d calls)\n",
           REPEATS, N);
    report("resolve", resolve_add);
    report("resolve3", resolve_matmul);
    report("match", match);
    report("class", class_match);
    return sink == 42 ? 1 : 0;
}
