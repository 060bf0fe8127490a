/*
 * Unit tests of the operation profiler (include/strideweave/profile.h):
 * what is recorded for dispatched executions of built-in and custom
 * operations, the two events of a move (also completed after the stop),
 * backward executions when asked for (never by default),
 * nesting and parent ids, carrier filtering by exact class,
 * self-time arithmetic with filtered-out children, shapes, failures, the
 * session rules and their messages, cross-thread stops and recovery, two
 * threads profiling independently, an allocation-failure walk, and the
 * nesting of an Evictable execution around its lowered primary execution
 * (also under layout command strings).
 *
 * The controlled workload is a custom carrier class "Outer" whose "outer"
 * operation sleeps and then runs an "inner" operation dispatched by a
 * second custom class "Inner", which sleeps too.
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "strideweave/capability.h"
#include "strideweave/carrier.h"
#include "strideweave/einops.h"
#include "strideweave/evictable.h"
#include "strideweave/interop.h"
#include "strideweave/layout.h"
#include "strideweave/op.h"
#include "strideweave/profile.h"
#include "strideweave/tensor.h"

#define OUTER_SLEEP_NS 2000000
#define INNER_SLEEP_NS 3000000

static void sleep_ns(int64_t ns) {
    struct timespec ts = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

/* ------------------------------------------------------ custom carriers */

static int64_t fake_size(sw_carrier *c) {
    (void)c;
    return 4;
}

static sw_status fake_get(sw_carrier *c, int64_t i, sw_value *out) {
    (void)c;
    *out = sw_value_f64((double)i);
    return SW_OK;
}

static sw_carrier *inner_carrier; /* dispatches the nested operation */
static sw_profiler *stop_target;  /* stopped by the "stopper" operation */

static sw_status inner_forward(sw_op *op, int32_t nargs, const sw_arg *args,
                               sw_tensor **out) {
    (void)op;
    (void)nargs;
    sleep_ns(INNER_SLEEP_NS);
    *out = sw_tensor_retain(args[0].as.tensor);
    return SW_OK;
}

static sw_status outer_forward(sw_op *op, int32_t nargs, const sw_arg *args,
                               sw_tensor **out) {
    (void)op;
    sleep_ns(OUTER_SLEEP_NS);
    sw_op *inner = NULL;
    sw_status st = sw_carrier_dispatch_op(inner_carrier, "inner", &inner);
    if (st)
        return st;
    st = sw_op_forward(inner, nargs, args, out);
    sw_op_unref(inner);
    return st;
}

static sw_status failing_forward(sw_op *op, int32_t nargs, const sw_arg *args,
                                 sw_tensor **out) {
    (void)op;
    (void)nargs;
    (void)args;
    (void)out;
    return sw_set_error(SW_EVALUE, "the operation fails");
}

static sw_status stopper_forward(sw_op *op, int32_t nargs, const sw_arg *args,
                                 sw_tensor **out) {
    (void)op;
    (void)nargs;
    sw_status st = sw_profiler_stop(stop_target);
    if (st)
        return st;
    *out = sw_tensor_retain(args[0].as.tensor);
    return SW_OK;
}

static const sw_op_class inner_op = {SW_OP_CLASS_VERSION, "Inner",
                                     inner_forward, NULL, NULL};
static const sw_op_class outer_op = {SW_OP_CLASS_VERSION, "Outer",
                                     outer_forward, NULL, NULL};
static const sw_op_class failing_op = {SW_OP_CLASS_VERSION, "Failing",
                                       failing_forward, NULL, NULL};
static const sw_op_class stopper_op = {SW_OP_CLASS_VERSION, "Stopper",
                                       stopper_forward, NULL, NULL};

static sw_status outer_dispatch(sw_carrier *c, const char *name,
                                struct sw_op **out) {
    (void)c;
    const sw_op_class *cls = strcmp(name, "outer") == 0     ? &outer_op
                             : strcmp(name, "fail") == 0    ? &failing_op
                             : strcmp(name, "stopper") == 0 ? &stopper_op
                                                            : NULL;
    if (!cls)
        return sw_set_error(SW_ENOTIMPL, "no such operation");
    return sw_op_new(cls, NULL, out);
}

static sw_status inner_dispatch(sw_carrier *c, const char *name,
                                struct sw_op **out) {
    (void)c;
    if (strcmp(name, "inner") != 0)
        return sw_set_error(SW_ENOTIMPL, "no such operation");
    return sw_op_new(&inner_op, NULL, out);
}

static sw_carrier_class outer_class;
static sw_carrier_class inner_class;

static void init_classes(void) {
    memset(&outer_class, 0, sizeof outer_class);
    outer_class.version = SW_CARRIER_CLASS_VERSION;
    outer_class.name = "Outer";
    outer_class.size = fake_size;
    outer_class.get = fake_get;
    outer_class.dispatch_op = outer_dispatch;
    inner_class = outer_class;
    inner_class.name = "Inner";
    inner_class.dispatch_op = inner_dispatch;
}

/* ------------------------------------------------------------- helpers */

static sw_tensor *cpu_tensor(const char *layout) {
    sw_layout *l = NULL;
    sw_carrier *c = NULL;
    sw_tensor *t = NULL;
    if (sw_layout_parse(layout, &l) == SW_OK &&
        sw_cpu_new(sw_layout_cosize(l), SW_DTYPE_FLOAT32, 1, 0, &c) == SW_OK)
        sw_tensor_new(c, 0, l, &t);
    sw_layout_unref(l);
    sw_carrier_unref(c);
    return t;
}

static sw_tensor *outer_tensor(sw_carrier *c) {
    sw_layout *l = NULL;
    sw_tensor *t = NULL;
    if (sw_layout_parse("4:1", &l) == SW_OK)
        sw_tensor_new(c, 0, l, &t);
    sw_layout_unref(l);
    return t;
}

static sw_profiler *started(int32_t ntags, const void *const *tags,
                            int shapes) {
    sw_profiler *p = NULL;
    if (sw_profiler_new(&p) != SW_OK)
        return NULL;
    if (sw_profiler_set_carriers(p, ntags, tags) != SW_OK ||
        sw_profiler_set_record_shapes(p, shapes) != SW_OK ||
        sw_profiler_start(p) != SW_OK) {
        sw_profiler_unref(p);
        return NULL;
    }
    return p;
}

static int64_t count(const sw_profiler *p) {
    int64_t n = -1;
    if (sw_profiler_event_count(p, &n) != SW_OK)
        return -1;
    return n;
}

static sw_profile_event ev(const sw_profiler *p, int64_t i) {
    sw_profile_event e;
    memset(&e, 0, sizeof e);
    e.id = -2;
    sw_profiler_event(p, i, &e);
    return e;
}

/* Runs "outer" on c's tensor t and returns the status. */
static sw_status run_outer(sw_carrier *c, sw_tensor *t, const char *name) {
    sw_op *op = NULL;
    sw_tensor *r = NULL;
    sw_status st = sw_carrier_dispatch_op(c, name, &op);
    if (st)
        return st;
    sw_arg a = sw_arg_tensor(t);
    st = sw_op_forward(op, 1, &a, &r);
    sw_tensor_unref(r);
    sw_op_unref(op);
    return st;
}

/* --------------------------------------------------------------- tests */

static void test_builtin_recording(void) {
    int64_t base = sw_debug_live_allocs();
    sw_tensor *a = cpu_tensor("4:1");
    sw_tensor *b = cpu_tensor("4:1");
    sw_tensor *r = NULL;
    ok(sw_profiler_active() == NULL, "no profiler is active at first");
    sw_profiler *p = started(-1, NULL, 0);
    ok(p != NULL && sw_profiler_active() == p, "a started profiler is active");
    ok(sw_profiler_is_active(p), "sw_profiler_is_active while running");
    int64_t before = sw_profile_now_ns();
    expect_ok(sw_add(a, b, &r), "add under the profiler");
    int64_t n = -1;
    expect_fail(sw_profiler_event_count(p, &n), SW_ERUNTIME,
                "Profiler results are available only after context exit",
                "results before stop");
    expect_ok(sw_profiler_stop(p), "stop");
    ok(sw_profiler_active() == NULL, "nothing is active after stop");
    ok(!sw_profiler_is_active(p), "not active after stop");
    is_int(count(p), 1, "one event for one add");
    sw_profile_event e = ev(p, 0);
    is_int(e.id, 0, "event id 0");
    is_int(e.parent_id, -1, "a root event");
    is_str(e.name, "add", "canonical name");
    ok(e.carrier_tag ==
           (const void *)sw_carrier_get_class(sw_tensor_carrier(a)),
       "carrier tag is the CPU class");
    ok(e.impl_class != NULL && e.impl_tag == NULL, "implementation class");
    is_int(e.nshapes, -1, "no shapes unless recorded");
    ok(e.start_ns >= before, "start is on the monotonic clock");
    ok(e.duration_ns >= 0 && e.self_ns == e.duration_ns,
       "a leaf's self time is its duration");
    ok(e.thread_id == (uint64_t)pthread_self(), "thread id");
    ok(e.succeeded, "succeeded");
    sw_profile_event bad;
    expect_fail(sw_profiler_event(p, 1, &bad), SW_EINDEX,
                "profiler event index out of range", "event out of range");
    expect_fail(sw_profiler_event(p, -1, &bad), SW_EINDEX,
                "profiler event index out of range", "negative event index");
    sw_profiler_unref(p);
    sw_tensor_unref(r);

    /* Shapes: the argument's layout, NULL for a scalar position. */
    p = started(-1, NULL, 1);
    expect_ok(sw_mul(a, sw_arg_f64(2.0), &r), "mul under the profiler");
    expect_ok(sw_profiler_stop(p), "stop");
    is_int(count(p), 1, "one event for one mul");
    e = ev(p, 0);
    is_str(e.name, "mul", "mul's canonical name");
    is_int(e.nshapes, 2, "two argument positions");
    ok(e.shapes && e.shapes[0] == sw_tensor_layout(a),
       "the tensor position holds its layout");
    ok(e.shapes && e.shapes[1] == NULL, "the scalar position holds NULL");
    sw_tensor_unref(r);
    r = NULL;
    /* The events keep the layout alive after the tensors are gone. */
    sw_tensor_unref(a);
    sw_tensor_unref(b);
    ok(sw_layout_size(ev(p, 0).shapes[0]) == 4,
       "the shape outlives the tensor");
    sw_profiler_unref(p);
    leak_check(base, "builtin recording");
}

static void test_nesting_and_self_time(void) {
    int64_t base = sw_debug_live_allocs();
    sw_carrier *outer = NULL;
    sw_carrier_new(&outer_class, NULL, SW_DTYPE_FLOATING, &outer);
    sw_carrier_new(&inner_class, NULL, SW_DTYPE_FLOATING, &inner_carrier);
    sw_tensor *t = outer_tensor(outer);
    const void *both[2] = {&outer_class, &inner_class};

    sw_profiler *p = started(2, both, 0);
    expect_ok(run_outer(outer, t, "outer"), "nested run");
    expect_ok(sw_profiler_stop(p), "stop");
    is_int(count(p), 2, "outer and inner events");
    sw_profile_event o = ev(p, 0), i = ev(p, 1);
    is_str(o.name, "outer", "the outer event starts first");
    is_str(i.name, "inner", "the inner event second");
    is_int(o.parent_id, -1, "outer is a root");
    is_int(i.parent_id, 0, "inner's parent is outer");
    ok(o.carrier_tag == &outer_class && i.carrier_tag == &inner_class,
       "exact carrier classes");
    ok(o.impl_class == &outer_op && i.impl_class == &inner_op,
       "implementation classes");
    ok(i.start_ns >= o.start_ns, "inner starts after outer");
    ok(i.duration_ns >= INNER_SLEEP_NS, "inner lasts its sleep");
    ok(o.duration_ns >= OUTER_SLEEP_NS + i.duration_ns,
       "outer includes its own sleep and inner");
    is_int(o.self_ns, o.duration_ns - i.duration_ns,
           "outer self = duration - inner duration");
    ok(o.self_ns >= OUTER_SLEEP_NS, "outer self covers its own sleep");
    is_int(i.self_ns, i.duration_ns, "inner self = its duration");
    sw_profiler_unref(p);

    /* Only the outer class: the filtered-out inner is still subtracted. */
    const void *only_outer[1] = {&outer_class};
    p = started(1, only_outer, 0);
    expect_ok(run_outer(outer, t, "outer"), "nested run, outer only");
    expect_ok(sw_profiler_stop(p), "stop");
    is_int(count(p), 1, "one event");
    o = ev(p, 0);
    is_str(o.name, "outer", "the outer one");
    ok(o.self_ns <= o.duration_ns - INNER_SLEEP_NS,
       "filtered-out inner time is not charged to outer's self time");
    ok(o.self_ns >= OUTER_SLEEP_NS, "outer self covers its own sleep");
    sw_profiler_unref(p);

    /* Only the inner class: it becomes a root. */
    const void *only_inner[1] = {&inner_class};
    p = started(1, only_inner, 0);
    expect_ok(run_outer(outer, t, "outer"), "nested run, inner only");
    expect_ok(sw_profiler_stop(p), "stop");
    is_int(count(p), 1, "one event");
    i = ev(p, 0);
    is_str(i.name, "inner", "the inner one");
    is_int(i.parent_id, -1, "without its recorded parent it is a root");
    sw_profiler_unref(p);

    /* An empty selection records nothing. */
    p = started(0, NULL, 0);
    expect_ok(run_outer(outer, t, "outer"), "nested run, nothing selected");
    expect_ok(sw_profiler_stop(p), "stop");
    is_int(count(p), 0, "no events");
    sw_profiler_unref(p);

    /* A failing execution: recorded as failed, its error unchanged. */
    p = started(-1, NULL, 0);
    expect_fail(run_outer(outer, t, "fail"), SW_EVALUE, "the operation fails",
                "a failing operation under the profiler");
    expect_ok(sw_profiler_stop(p), "stop");
    is_int(count(p), 1, "the failed attempt is recorded");
    ok(!ev(p, 0).succeeded, "and marked as failed");
    is_str(ev(p, 0).name, "fail", "with its name");
    sw_profiler_unref(p);

    /* An operation made directly (no dispatch metadata) is not recorded,
     * with forward or lowered execution. */
    p = started(-1, NULL, 0);
    sw_op *direct = NULL;
    sw_tensor *r = NULL;
    sw_arg a = sw_arg_tensor(t);
    sw_op_new(&inner_op, NULL, &direct);
    expect_ok(sw_op_forward(direct, 1, &a, &r), "direct forward");
    sw_tensor_unref(r);
    r = NULL;
    expect_ok(sw_op_execute_lowered(direct, 1, &a, &r), "direct lowered");
    sw_tensor_unref(r);
    r = NULL;
    sw_op_unref(direct);
    /* A dispatched one is recorded by lowered execution too. */
    sw_carrier_dispatch_op(inner_carrier, "inner", &direct);
    expect_ok(sw_op_execute_lowered(direct, 1, &a, &r), "dispatched lowered");
    sw_tensor_unref(r);
    sw_op_unref(direct);
    expect_ok(sw_profiler_stop(p), "stop");
    is_int(count(p), 1, "only the dispatched execution is recorded");
    sw_profiler_unref(p);

    /* Stopped from inside an operation: the open execution ends at the
     * stop and counts as failed; the operation itself still succeeds. */
    stop_target = started(-1, NULL, 0);
    expect_ok(run_outer(outer, t, "stopper"), "an operation that stops");
    ok(sw_profiler_active() == NULL, "the session ended");
    is_int(count(stop_target), 1, "its execution was recorded");
    ok(!ev(stop_target, 0).succeeded, "as not completed");
    sw_profiler_unref(stop_target);
    stop_target = NULL;

    sw_tensor_unref(t);
    sw_carrier_unref(outer);
    sw_carrier_unref(inner_carrier);
    inner_carrier = NULL;
    leak_check(base, "nesting");
}

/* Moves run unannotated operations (no dispatch metadata): not recorded,
 * and an operation around them is charged their time as its own. */
/* A dispatch route that hands out the elementwise move class under the
 * name "copy_out": an annotated move. */
static sw_status move_route(sw_carrier *c, const char *name, void *ctx,
                            sw_op **out) {
    (void)c;
    (void)ctx;
    if (strcmp(name, "copy_out") != 0)
        return sw_set_error(SW_ENOTIMPL, "no such operation");
    return sw_move_op_new(sw_move_elementwise(), out);
}

static const int move_route_tag = 0;

/* A move records its submission and its completion (profile.h). */
/* Index of the first event named name, or -1. */
static int64_t find_event(const sw_profiler *p, const char *name) {
    for (int64_t i = 0; i < count(p); ++i)
        if (strcmp(ev(p, i).name, name) == 0)
            return i;
    return -1;
}

/* A started profiler that records backward executions too. */
static sw_profiler *started_backward(int shapes) {
    sw_profiler *p = NULL;
    if (sw_profiler_new(&p) != SW_OK)
        return NULL;
    if (sw_profiler_set_record_shapes(p, shapes) != SW_OK ||
        sw_profiler_set_record_backward(p, 1) != SW_OK ||
        sw_profiler_start(p) != SW_OK) {
        sw_profiler_unref(p);
        return NULL;
    }
    return p;
}

static void test_backward_recorded(void) {
    int64_t base = sw_debug_live_allocs();
    sw_tensor *a = cpu_tensor("4:1"), *b = cpu_tensor("4:1");
    sw_tensor *g = cpu_tensor("4:1");
    sw_tensor *y = NULL, *z = NULL;
    expect_ok(sw_unary("exp", a, &y), "exp");
    expect_ok(sw_elementwise_mul(y, b, &z), "elementwise_mul");

    /* Off by default: the backward's own operations only. */
    sw_profiler *p = started(-1, NULL, 0);
    expect_ok(sw_tensor_backward(z, g), "backward, default profiler");
    expect_ok(sw_profiler_stop(p), "stop");
    is_int(find_event(p, "exp.backward"), -1, "no backward event by default");
    is_int(find_event(p, "elementwise_mul.backward"), -1,
           "none for elementwise_mul either");
    sw_profiler_unref(p);

    expect_ok(sw_tensor_backward(z, g), "backward again, to compare");
    p = started_backward(1);
    ok(p != NULL, "a profiler recording backward starts");
    expect_ok(sw_tensor_backward(z, g), "backward under it");
    expect_ok(sw_profiler_stop(p), "stop");
    int64_t m = find_event(p, "elementwise_mul.backward");
    int64_t e = find_event(p, "exp.backward");
    ok(m >= 0 && e > m, "one event per node, in the order they ran");
    sw_profile_event me = ev(p, m), ee = ev(p, e);
    is_int(me.parent_id, -1, "a backward event is a root");
    is_int(ee.parent_id, -1, "and so is the next");
    ok(me.carrier_tag == (const void *)sw_cpu_class() &&
           ee.carrier_tag == me.carrier_tag,
       "tagged with the forward's carrier class");
    ok(me.succeeded && ee.succeeded, "both succeeded");
    ok(me.nshapes == 1 && me.shapes[0] == sw_tensor_layout(g),
       "the gradient is the one argument");
    /* CPU's VJPs compute with kernels; any operation one dispatches is a
     * child inside its interval. */
    int inside = 1;
    for (int64_t i = 0; i < count(p); ++i) {
        sw_profile_event c = ev(p, i);
        if (c.parent_id == m)
            inside = inside && c.start_ns >= me.start_ns &&
                     c.start_ns + c.duration_ns <= me.start_ns + me.duration_ns;
    }
    ok(inside, "its children run inside its interval");
    int64_t child_time = 0;
    for (int64_t i = 0; i < count(p); ++i)
        if (ev(p, i).parent_id == m)
            child_time += ev(p, i).duration_ns;
    is_int(me.self_ns, me.duration_ns - child_time,
           "self time = duration - the children's");
    sw_profiler_unref(p);

    /* A move's backward, under its source's class. */
    sw_carrier *dest = NULL;
    sw_tensor *moved = NULL, *w = NULL;
    sw_cpu_new(4, SW_DTYPE_FLOAT32, 1, 0, &dest);
    sw_tensor *src = cpu_tensor("4:1");
    expect_ok(sw_move(src, dest, &moved), "a move with the graph on");
    p = started_backward(0);
    expect_ok(sw_tensor_backward(moved, g), "its backward");
    expect_ok(sw_profiler_stop(p), "stop");
    int64_t mv = find_event(p, "move.backward");
    ok(mv >= 0 && ev(p, mv).carrier_tag == (const void *)sw_cpu_class(),
       "move.backward under the source's class");
    sw_profiler_unref(p);

    /* The flag is part of the session's set-up. */
    p = started(-1, NULL, 0);
    expect_fail(sw_profiler_set_record_backward(p, 1), SW_ERUNTIME,
                "Profiler contexts are single-use", "set after start");
    expect_ok(sw_profiler_stop(p), "stop");
    sw_profiler_unref(p);

    sw_tensor_unref(w);
    sw_tensor_unref(moved);
    sw_tensor_unref(src);
    sw_carrier_unref(dest);
    sw_tensor_unref(z);
    sw_tensor_unref(y);
    sw_tensor_unref(g);
    sw_tensor_unref(b);
    sw_tensor_unref(a);
    leak_check(base, "backward recording");
}

static void test_moves_recorded(void) {
    int64_t base = sw_debug_live_allocs();
    sw_tensor *a = cpu_tensor("4:1");
    sw_carrier *dest = NULL;
    sw_tensor *moved = NULL, *r = NULL;
    sw_cpu_new(4, SW_DTYPE_FLOAT32, 1, 0, &dest);
    sw_profiler *p = started(-1, NULL, 1);
    expect_ok(sw_move(a, dest, &moved), "a move under the profiler");
    expect_ok(sw_add(moved, moved, &r), "an add after it");
    expect_ok(sw_profiler_stop(p), "stop");
    is_int(count(p), 3, "the move's two events and the add");
    sw_profile_event sub = ev(p, 0), com = ev(p, 1);
    is_str(sub.name, "move.submit", "the submission first");
    is_str(com.name, "move.complete", "then the completion");
    is_str(ev(p, 2).name, "add", "then the add");
    ok(sub.parent_id == -1 && com.parent_id == sub.id,
       "the completion's parent is the submission");
    ok(sub.carrier_tag == (const void *)sw_cpu_class() &&
           com.carrier_tag == sub.carrier_tag,
       "both carry the source's class");
    ok(com.impl_class == sub.impl_class && sub.impl_class != NULL,
       "and the same implementation");
    ok(sub.nshapes == 2 && sub.shapes[0] == sw_tensor_layout(a) &&
           sub.shapes[1] == NULL && com.nshapes == 2 &&
           com.shapes[0] == sub.shapes[0],
       "and the same shapes");
    ok(sub.succeeded && com.succeeded, "both succeeded");
    ok(com.start_ns >= sub.start_ns &&
           com.start_ns + com.duration_ns <= ev(p, 2).start_ns,
       "the completion follows the submission, before the add");
    int changed = 1;
    expect_ok(sw_profiler_refresh(p, &changed), "refresh");
    ok(!changed, "nothing new arrived");
    sw_profiler_unref(p);
    sw_tensor_unref(r);
    sw_tensor_unref(moved);
    sw_tensor_unref(a);
    sw_carrier_unref(dest);

    /* Filtered out by the source's class: nothing. */
    a = cpu_tensor("4:1");
    sw_cpu_new(4, SW_DTYPE_FLOAT32, 1, 0, &dest);
    const void *generic = sw_generic_class();
    p = started(1, &generic, 0);
    expect_ok(sw_move(a, dest, &moved), "a move of an unselected class");
    expect_ok(sw_profiler_stop(p), "stop");
    is_int(count(p), 0, "is not recorded");
    sw_profiler_unref(p);
    sw_tensor_unref(moved);
    sw_tensor_unref(a);
    sw_carrier_unref(dest);

    /* A failing move: a submission that happened, a failed completion. */
    a = cpu_tensor("4:1");
    sw_cpu_new(4, SW_DTYPE_FLOAT32, 1, 0, &dest);
    sw_move_request *req = NULL;
    p = started(-1, NULL, 0);
    sw_status st = sw_move_async(a, NULL, &req);
    expect_fail(st, SW_ETYPE, "destination must be a Carrier instance",
                "a move refused by its checks");
    expect_ok(sw_profiler_stop(p), "stop");
    is_int(count(p), 0, "records nothing");
    sw_profiler_unref(p);
    sw_tensor_unref(a);
    sw_carrier_unref(dest);

    /* A move operation dispatched by a carrier carries the metadata and is
     * recorded, with one shape per position: the tensor, then NULL for the
     * destination. */
    a = cpu_tensor("4:1");
    sw_carrier_set_dispatch(sw_tensor_carrier(a), move_route, NULL,
                            &move_route_tag);
    sw_op *op = NULL;
    moved = NULL;
    sw_cpu_new(4, SW_DTYPE_FLOAT32, 1, 0, &dest);
    expect_ok(sw_carrier_dispatch_op(sw_tensor_carrier(a), "copy_out", &op),
              "dispatch a move");
    p = started(-1, NULL, 1);
    expect_ok(sw_move_op_forward(op, a, dest, &moved), "annotated move");
    expect_ok(sw_profiler_stop(p), "stop");
    is_int(count(p), 1, "the annotated move is recorded");
    sw_profile_event e = ev(p, 0);
    is_str(e.name, "copy_out", "under its dispatched name");
    ok(e.carrier_tag == (const void *)&move_route_tag, "and carrier tag");
    ok(e.impl_class == sw_op_get_class(op), "implemented by the move class");
    ok(e.nshapes == 2 && e.shapes[0] == sw_tensor_layout(a) &&
           e.shapes[1] == NULL,
       "shapes: the tensor's, NULL for the destination");
    ok(e.succeeded, "succeeded");
    sw_profiler_unref(p);
    sw_op_unref(op);
    sw_tensor_unref(moved);
    sw_tensor_unref(a);
    sw_carrier_unref(dest);
    leak_check(base, "moves");
}

/* A move on the executor completes after the profiler stopped: the
 * completion joins the results at the next refresh, once. */
static void test_async_move_recorded(void) {
    int64_t base = sw_debug_live_allocs();
    int64_t n = (int64_t)1 << 19; /* 2 MiB of float32: the executor's */
    sw_carrier *c = NULL, *f = NULL;
    sw_layout *l = NULL;
    sw_tensor *t = NULL;
    if (sw_cpu_new(n, SW_DTYPE_FLOAT32, 1, 1, &c) != SW_OK ||
        sw_layout_leaf(n, 1, &l) != SW_OK ||
        sw_tensor_new(c, 0, l, &t) != SW_OK ||
        sw_file_new(NULL, SW_DTYPE_FLOAT32, 1, &f) != SW_OK)
        bail_out(sw_errmsg());
    sw_layout_unref(l);
    sw_debug_move_hold(1);
    sw_profiler *p = started(-1, NULL, 0);
    sw_move_request *req = NULL;
    sw_status st = sw_move_async(t, f, &req);
    expect_ok(st, "a bulk move on the executor");
    expect_ok(sw_profiler_stop(p), "stop while it is held");
    is_int(count(p), 1, "only the submission so far");
    is_str(ev(p, 0).name, "move.submit", "the submission");
    int64_t before = sw_profile_now_ns();
    sw_debug_move_hold(0);
    sw_tensor *moved = NULL;
    expect_ok(sw_move_request_wait(req, &moved), "wait");
    int64_t after = sw_profile_now_ns();
    expect_ok(sw_move_request_wait(req, NULL), "wait again");
    is_int(sw_profiler_late_count(p), 1, "one completion arrived");
    is_int(count(p), 1, "the results wait for a refresh");
    int changed = 0;
    expect_ok(sw_profiler_refresh(p, &changed), "refresh");
    ok(changed, "which takes the completion in");
    is_int(count(p), 2, "two events");
    sw_profile_event com = ev(p, 1);
    is_str(com.name, "move.complete", "the completion");
    ok(com.parent_id == 0 && com.succeeded, "of the submission, succeeded");
    ok(com.start_ns <= before && com.start_ns + com.duration_ns >= before,
       "its interval covers the asynchronous transfer");
    ok(com.start_ns + com.duration_ns <= after, "and ends with the outcome");
    expect_ok(sw_profiler_refresh(p, &changed), "refresh again");
    ok(!changed, "changes nothing: repeated waits add no event");
    is_int(count(p), 2, "still two");
    sw_profiler_unref(p);
    sw_move_request_unref(req);
    sw_tensor_unref(moved);
    sw_tensor_unref(t);
    sw_carrier_unref(c);
    sw_carrier_unref(f);
    sw_move_wait_idle();
    leak_check(base, "an asynchronous move under the profiler");
}

/* A CPU tensor of layout over an Evictable hierarchy (CPU primary with
 * values 0, 1, ..., CPU secondary); *ev gets the hierarchy (borrowed). */
static sw_tensor *evictable_tensor(const char *layout, sw_carrier **hier) {
    sw_layout *l = NULL;
    sw_carrier *primary = NULL, *secondary = NULL, *c = NULL;
    sw_tensor *t = NULL;
    if (sw_layout_parse(layout, &l) == SW_OK &&
        sw_cpu_new(sw_layout_cosize(l), SW_DTYPE_FLOAT32, 1, 0, &primary) ==
            SW_OK &&
        sw_cpu_new(0, SW_DTYPE_FLOAT32, 1, 0, &secondary) == SW_OK) {
        for (int64_t i = 0; i < sw_layout_cosize(l); ++i) {
            sw_value v = sw_value_f64((double)i - 2.0);
            sw_carrier_set(primary, i, &v);
        }
        if (sw_evictable_new(primary, secondary, &c) == SW_OK)
            sw_tensor_new(c, 0, l, &t);
    }
    *hier = c;
    sw_layout_unref(l);
    sw_carrier_unref(primary);
    sw_carrier_unref(secondary);
    sw_carrier_unref(c);
    return t;
}

/* An Evictable execution is an outer event (tagged with the Evictable
 * class, implemented by EvictableOperation) around the lowered primary
 * execution (tagged with the primary's class). */
static void test_evictable_nesting(void) {
    int64_t base = sw_debug_live_allocs();
    sw_carrier *hier = NULL;
    sw_tensor *t = evictable_tensor("(2,3):(1,2)", &hier);
    ok(t != NULL, "an Evictable tensor");
    const void *cpu_tag = sw_carrier_get_class(sw_evictable_primary(hier));
    const void *ev_tag = sw_evictable_class();
    sw_tensor *r = NULL;

    sw_profiler *p = started(-1, NULL, 1);
    expect_ok(sw_unary("relu", t, &r), "relu on the hierarchy");
    expect_ok(sw_profiler_stop(p), "stop");
    ok(r && sw_carrier_is_evictable(sw_tensor_carrier(r)),
       "the result is Evictable");
    is_int(count(p), 2, "an outer and a nested event");
    sw_profile_event outer = ev(p, 0), inner = ev(p, 1);
    is_str(outer.name, "relu", "outer name");
    is_str(inner.name, "relu", "nested name");
    ok(outer.carrier_tag == ev_tag, "outer carrier is the Evictable class");
    ok(inner.carrier_tag == cpu_tag, "nested carrier is the CPU class");
    ok(outer.impl_class == sw_evictable_op_class(),
       "outer implementation is EvictableOperation");
    ok(inner.impl_class != NULL && inner.impl_class != sw_evictable_op_class(),
       "nested implementation is the CPU operation");
    is_int(outer.parent_id, -1, "outer is a root");
    is_int(inner.parent_id, 0, "nested under the outer");
    is_int(outer.self_ns, outer.duration_ns - inner.duration_ns,
           "outer self time excludes the nested execution");
    ok(outer.succeeded && inner.succeeded, "both succeeded");
    ok(outer.nshapes == 1 && inner.nshapes == 1, "one argument each");
    ok(outer.shapes[0] == sw_tensor_layout(t) &&
           inner.shapes[0] == sw_tensor_layout(t),
       "the lowered argument keeps the layout");
    sw_profiler_unref(p);
    sw_tensor_unref(r);
    r = NULL;

    /* Filtering: the outer alone still excludes the nested time; the
     * nested alone becomes a root. */
    p = started(1, &ev_tag, 0);
    expect_ok(sw_unary("relu", t, &r), "relu, Evictable only");
    expect_ok(sw_profiler_stop(p), "stop");
    is_int(count(p), 1, "only the outer");
    outer = ev(p, 0);
    ok(outer.carrier_tag == ev_tag && outer.parent_id == -1, "outer root");
    ok(outer.self_ns < outer.duration_ns,
       "a filtered-out nested execution is still subtracted");
    sw_profiler_unref(p);
    sw_tensor_unref(r);
    r = NULL;
    p = started(1, &cpu_tag, 0);
    expect_ok(sw_unary("relu", t, &r), "relu, CPU only");
    expect_ok(sw_profiler_stop(p), "stop");
    is_int(count(p), 1, "only the nested");
    inner = ev(p, 0);
    ok(inner.carrier_tag == cpu_tag && inner.parent_id == -1,
       "the nested execution becomes a root");
    sw_profiler_unref(p);
    sw_tensor_unref(r);
    r = NULL;

    /* A batched einsum on the hierarchy: four outer events, each around
     * its nested CPU execution, with the canonical names. */
    sw_tensor_unref(t);
    t = evictable_tensor("(2,3,2):(1,2,6)", &hier);
    p = started(-1, NULL, 0);
    expect_ok(sw_einops_einsum(t, t, "a k b, c k b -> a c b", &r),
              "batched einsum on the hierarchy");
    expect_ok(sw_profiler_stop(p), "stop");
    const char *names[] = {"rearrange", "rearrange", "batched_matmul",
                           "rearrange"};
    is_int(count(p), 8, "four outer and four nested events");
    for (int64_t i = 0; i < 8 && count(p) == 8; ++i) {
        sw_profile_event e = ev(p, i);
        is_str(e.name, names[i / 2], "canonical einsum step name");
        if (i % 2 == 0)
            ok(e.carrier_tag == ev_tag && e.parent_id == -1 &&
                   e.impl_class == sw_evictable_op_class(),
               "an outer Evictable step");
        else
            ok(e.parent_id == i - 1 && e.impl_class != sw_evictable_op_class(),
               "its nested primary step");
    }
    sw_profiler_unref(p);
    sw_tensor_unref(r);
    sw_tensor_unref(t);
    sw_einops_cache_clear(); /* the compiled command is cached */
    leak_check(base, "Evictable nesting");
}

static void test_session_rules(void) {
    int64_t base = sw_debug_live_allocs();
    sw_profiler *p = NULL, *q = NULL;
    sw_profiler_new(&p);
    sw_profiler_new(&q);
    expect_fail(sw_profiler_stop(p), SW_ERUNTIME,
                "Profiler context is not active", "stop before start");
    expect_ok(sw_profiler_start(p), "start");
    expect_fail(sw_profiler_start(p), SW_ERUNTIME,
                "Profiler contexts are single-use", "start twice");
    expect_fail(sw_profiler_start(q), SW_ERUNTIME,
                "A profiler session is already active",
                "a second session on the thread");
    expect_fail(sw_profiler_set_carriers(p, -1, NULL), SW_ERUNTIME,
                "Profiler contexts are single-use", "configure after start");
    expect_fail(sw_profiler_set_record_shapes(p, 1), SW_ERUNTIME,
                "Profiler contexts are single-use", "shapes after start");
    expect_fail(sw_profiler_set_impl_hooks(p, NULL, NULL), SW_ERUNTIME,
                "Profiler contexts are single-use", "hooks after start");
    expect_ok(sw_profiler_stop(p), "stop");
    expect_fail(sw_profiler_stop(p), SW_ERUNTIME,
                "Profiler context is not active", "stop twice");
    expect_fail(sw_profiler_start(p), SW_ERUNTIME,
                "Profiler contexts are single-use", "restart");
    expect_fail(sw_profiler_set_carriers(q, 2, NULL), SW_EVALUE,
                "profiler carrier tags are missing", "missing tags");
    expect_ok(sw_profiler_start(q), "another session after the first");
    expect_ok(sw_profiler_stop(q), "stop it");
    sw_profiler_unref(p);
    sw_profiler_unref(q);
    sw_profiler_unref(NULL);
    sw_profiler_abandon(NULL);
    leak_check(base, "session rules");
}

/* ------------------------------------------------------------- threads */

typedef struct stop_job {
    sw_profiler *p;
    sw_status status;
    char message[128];
} stop_job;

static void *stop_elsewhere(void *arg) {
    stop_job *job = arg;
    job->status = sw_profiler_stop(job->p);
    snprintf(job->message, sizeof job->message, "%s", sw_errmsg());
    sw_clear_error();
    return NULL;
}

typedef struct profile_job {
    int adds;
    int64_t events;
    uint64_t thread, recorded_thread;
    sw_status status;
} profile_job;

static void *profile_adds(void *arg) {
    profile_job *job = arg;
    sw_tensor *a = cpu_tensor("4:1");
    sw_profiler *p = started(-1, NULL, 0);
    job->thread = (uint64_t)pthread_self();
    job->status = p ? SW_OK : SW_ENOMEM;
    for (int i = 0; i < job->adds && p; ++i) {
        sw_tensor *r = NULL;
        if (sw_add(a, a, &r) != SW_OK)
            job->status = SW_ERUNTIME;
        sw_tensor_unref(r);
    }
    if (p && sw_profiler_stop(p) != SW_OK)
        job->status = SW_ERUNTIME;
    job->events = p ? count(p) : -1;
    job->recorded_thread = p && job->events > 0 ? ev(p, 0).thread_id : 0;
    sw_profiler_unref(p);
    sw_tensor_unref(a);
    return NULL;
}

static void *start_and_exit(void *arg) {
    sw_profiler *p = arg;
    sw_tensor *a = cpu_tensor("4:1");
    sw_tensor *r = NULL;
    if (sw_profiler_start(p) == SW_OK && sw_add(a, a, &r) == SW_OK)
        sw_tensor_unref(r);
    sw_tensor_unref(a);
    return NULL; /* without stopping */
}

static void test_threads(void) {
    int64_t base = sw_debug_live_allocs();
    sw_tensor *a = cpu_tensor("4:1");
    sw_tensor *r = NULL;

    /* A stop from another thread is refused and abandons the session. */
    sw_profiler *p = started(-1, NULL, 0);
    stop_job job = {p, SW_OK, ""};
    pthread_t th;
    pthread_create(&th, NULL, stop_elsewhere, &job);
    pthread_join(th, NULL);
    is_int(job.status, SW_ERUNTIME, "a stop from another thread fails");
    is_str(job.message, "Profiler session must be stopped on its active thread",
           "with the documented message");
    ok(!sw_profiler_is_active(p), "the session is abandoned");
    /* The owner recovers before its next operation: nothing is recorded
     * and a new session can start. */
    expect_ok(sw_add(a, a, &r), "an operation after the abandon");
    sw_tensor_unref(r);
    r = NULL;
    ok(sw_profiler_active() == NULL, "the registration was dropped");
    expect_fail(sw_profiler_stop(p), SW_ERUNTIME,
                "Profiler context is not active", "stopping it afterwards");
    int64_t n = 0;
    expect_fail(sw_profiler_event_count(p, &n), SW_ERUNTIME,
                "Profiler results are available only after context exit",
                "abandoned results");
    sw_profiler_unref(p);

    /* Recovery before a profiler start as well. */
    p = started(-1, NULL, 0);
    job.p = p;
    pthread_create(&th, NULL, stop_elsewhere, &job);
    pthread_join(th, NULL);
    sw_profiler *q = started(-1, NULL, 0);
    ok(q != NULL, "a new session starts after an abandoned one");
    expect_ok(sw_add(a, a, &r), "an operation in it");
    sw_tensor_unref(r);
    r = NULL;
    expect_ok(sw_profiler_stop(q), "stop the new session");
    is_int(count(q), 1, "the new session recorded its operation");
    sw_profiler_unref(q);
    sw_profiler_unref(p);

    /* Abandoning on the owner thread drops the session at once. */
    p = started(-1, NULL, 0);
    sw_profiler_abandon(p);
    ok(sw_profiler_active() == NULL, "abandon on the owner drops it");
    sw_profiler_unref(p);

    /* A thread that exits with its session running abandons it and drops
     * its registration (nothing stays allocated). */
    int64_t before_exit = sw_debug_live_allocs();
    p = NULL;
    sw_profiler_new(&p);
    pthread_create(&th, NULL, start_and_exit, p);
    pthread_join(th, NULL);
    ok(!sw_profiler_is_active(p), "a session whose thread exited is over");
    expect_fail(sw_profiler_stop(p), SW_ERUNTIME,
                "Profiler context is not active", "stopping it afterwards");
    sw_profiler_unref(p);
    leak_check(before_exit, "thread exit with a running session");

    /* Two threads profile independently; this thread's work is not seen. */
    profile_job jobs[2] = {{3, 0, 0, 0, SW_OK}, {5, 0, 0, 0, SW_OK}};
    pthread_t ths[2];
    for (int i = 0; i < 2; ++i)
        pthread_create(&ths[i], NULL, profile_adds, &jobs[i]);
    for (int i = 0; i < 10; ++i) {
        expect_ok(sw_add(a, a, &r), "unprofiled work meanwhile");
        sw_tensor_unref(r);
        r = NULL;
    }
    for (int i = 0; i < 2; ++i)
        pthread_join(ths[i], NULL);
    for (int i = 0; i < 2; ++i) {
        is_int(jobs[i].status, SW_OK, "thread %d profiled", i);
        is_int(jobs[i].events, jobs[i].adds, "thread %d saw its own adds", i);
        ok(jobs[i].recorded_thread == jobs[i].thread,
           "thread %d's events carry its id", i);
    }
    sw_tensor_unref(a);
    leak_check(base, "threads");
}

/* ---------------------------------------------------- allocation walk */

static void test_alloc_failures(void) {
    int64_t base = sw_debug_live_allocs();
    sw_tensor *a = cpu_tensor("(2,2):(1,2)");
    int finished = 0;
    for (int64_t n = 0; n < 200 && !finished; ++n) {
        sw_profiler *p = NULL;
        sw_tensor *r1 = NULL, *r2 = NULL;
        sw_debug_fail_alloc_after(n);
        sw_status st = sw_profiler_new(&p);
        if (st == SW_OK)
            st = sw_profiler_set_carriers(p, -1, NULL);
        if (st == SW_OK)
            st = sw_profiler_set_record_shapes(p, 1);
        if (st == SW_OK)
            st = sw_profiler_start(p);
        if (st == SW_OK) {
            sw_status s1 = sw_add(a, a, &r1);
            sw_status s2 = sw_mul(a, sw_arg_f64(3.0), &r2);
            sw_status stop = sw_profiler_stop(p);
            sw_debug_fail_alloc_after(-1);
            int64_t k = -1;
            sw_profiler_event_count(p, &k);
            if (stop == SW_OK && s1 == SW_OK && s2 == SW_OK) {
                finished = 1;
                is_int(k, 2, "the walk ends with both events recorded");
            } else if (stop != SW_OK && stop != SW_ENOMEM) {
                ok(0, "stop at fault %lld: %s", (long long)n, S(stop));
            }
        } else if (st != SW_ENOMEM) {
            ok(0, "setup at fault %lld: %s", (long long)n, S(st));
        }
        sw_debug_fail_alloc_after(-1);
        sw_clear_error();
        ok(sw_profiler_active() == NULL || sw_profiler_active() == p,
           "fault %lld: a consistent registration", (long long)n);
        if (p && sw_profiler_active() == p)
            sw_profiler_stop(p);
        sw_clear_error();
        sw_tensor_unref(r1);
        sw_tensor_unref(r2);
        sw_profiler_unref(p);
    }
    ok(finished, "the walk reached a run without faults");

    sw_tensor_unref(a);
    leak_check(base, "allocation failures");
}

int main(void) {
    init_classes();
    test_builtin_recording();
    test_nesting_and_self_time();
    test_moves_recorded();
    test_backward_recorded();
    test_async_move_recorded();
    test_evictable_nesting();
    test_session_rules();
    test_threads();
    test_alloc_failures();
    return done_testing();
}
