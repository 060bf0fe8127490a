/*
 * The profiler's cost in the operation execution path, from C.
 *
 * A trivial dispatched operation (its forward returns its input) runs in a
 * tight loop through sw_op_execute_lowered:
 *
 *   direct     its forward slot called straight, bypassing the library;
 *   inactive   through the library with no profiler on the thread;
 *   filtered   with a profiler whose selection excludes the carrier (frames
 *              and timing only, no event);
 *   recording  with a profiler recording every execution;
 *   shapes     recording shapes as well.
 *
 * "inactive - direct" bounds what the disabled profiler costs (one
 * predictable branch, plus the library's own result check); the goal is
 * under 20 ns. "recording - inactive" is the per-operation cost of an
 * active profiler; the goal is under 1 us. The numbers are a report.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "strideweave/strideweave.h"

#define TARGET_NS 200000000 /* about 0.2 s per measured run */
#define REPEATS 5
#define BATCH 100000 /* executions per profiler session */

static sw_tensor *input;
static sw_carrier *carrier;

static void check(const char *what, sw_status st) {
    if (st != SW_OK) {
        fprintf(stderr, "%s failed: %s\n", what, sw_errmsg());
        exit(1);
    }
}

static sw_status echo_forward(sw_op *op, int32_t nargs, const sw_arg *args,
                              sw_tensor **out) {
    (void)op;
    (void)nargs;
    *out = sw_tensor_retain(args[0].as.tensor);
    return SW_OK;
}

static const sw_op_class echo_class = {SW_OP_CLASS_VERSION, "Echo",
                                       echo_forward, NULL, NULL};

static sw_status echo_dispatch(sw_carrier *c, const char *name,
                               struct sw_op **out) {
    (void)c;
    (void)name;
    return sw_op_new(&echo_class, NULL, out);
}

static int64_t bench_size(sw_carrier *c) {
    (void)c;
    return 4;
}

static sw_status bench_get(sw_carrier *c, int64_t i, sw_value *out) {
    (void)c;
    *out = sw_value_f64((double)i);
    return SW_OK;
}

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

typedef enum mode { DIRECT, INACTIVE, FILTERED, RECORDING, SHAPES } mode;

/* Runs n executions in the given mode; returns the elapsed nanoseconds of
 * the executions alone (profiler set-up and tear-down excluded). */
static int64_t run(mode m, sw_op *op, int64_t n) {
    sw_arg arg = sw_arg_tensor(input);
    int64_t elapsed = 0;
    for (int64_t done = 0; done < n;) {
        int64_t k = n - done < BATCH ? n - done : BATCH;
        sw_profiler *p = NULL;
        if (m >= FILTERED) {
            check("sw_profiler_new", sw_profiler_new(&p));
            if (m == FILTERED)
                check("sw_profiler_set_carriers",
                      sw_profiler_set_carriers(p, 0, NULL));
            check("sw_profiler_set_record_shapes",
                  sw_profiler_set_record_shapes(p, m == SHAPES));
            check("sw_profiler_start", sw_profiler_start(p));
        }
        int64_t t0 = now_ns();
        for (int64_t i = 0; i < k; ++i) {
            sw_tensor *r = NULL;
            sw_status st = m == DIRECT ? echo_forward(op, 1, &arg, &r)
                                       : sw_op_execute_lowered(op, 1, &arg, &r);
            if (st != SW_OK)
                check("execute", st);
            sw_tensor_unref(r);
        }
        elapsed += now_ns() - t0;
        if (p) {
            check("sw_profiler_stop", sw_profiler_stop(p));
            sw_profiler_unref(p);
        }
        done += k;
    }
    return elapsed;
}

static double per_op(mode m, sw_op *op) {
    int64_t n = 1000;
    while (run(m, op, n) < TARGET_NS / 10 && n < ((int64_t)1 << 32))
        n *= 10;
    double best = -1.0;
    for (int r = 0; r < REPEATS; ++r) {
        double per = (double)run(m, op, n) / (double)n;
        if (best < 0.0 || per < best)
            best = per;
    }
    return best;
}

int main(void) {
    sw_carrier_class cls;
    memset(&cls, 0, sizeof cls);
    cls.version = SW_CARRIER_CLASS_VERSION;
    cls.name = "Bench";
    cls.size = bench_size;
    cls.get = bench_get;
    cls.dispatch_op = echo_dispatch;
    sw_layout *l = NULL;
    sw_op *op = NULL;
    check("sw_carrier_new",
          sw_carrier_new(&cls, NULL, SW_DTYPE_FLOATING, &carrier));
    check("sw_layout_parse", sw_layout_parse("4:1", &l));
    check("sw_tensor_new", sw_tensor_new(carrier, 0, l, &input));
    check("dispatch", sw_carrier_dispatch_op(carrier, "echo", &op));

    double direct = per_op(DIRECT, op);
    double inactive = per_op(INACTIVE, op);
    double filtered = per_op(FILTERED, op);
    double recording = per_op(RECORDING, op);
    double shapes = per_op(SHAPES, op);
    printf("profiler cost per execution of a trivial dispatched operation "
           "(best of %d)\n",
           REPEATS);
    printf("  %-34s %8.1f ns\n", "forward slot called directly", direct);
    printf("  %-34s %8.1f ns\n", "no profiler (inactive branch)", inactive);
    printf("  %-34s %8.1f ns\n", "profiler, carrier filtered out", filtered);
    printf("  %-34s %8.1f ns\n", "profiler recording", recording);
    printf("  %-34s %8.1f ns\n", "profiler recording shapes", shapes);
    printf("  inactive - direct   = %6.1f ns (goal < 20 ns)\n",
           inactive - direct);
    printf("  recording - inactive = %6.1f ns (goal < 1000 ns)\n",
           recording - inactive);

    sw_op_unref(op);
    sw_tensor_unref(input);
    sw_layout_unref(l);
    sw_carrier_unref(carrier);
    return 0;
}
