/*
 * StrideWeave operation profiler.
 *
 * A profiler records the executions of carrier-dispatched operations
 * (sw_op_forward and sw_op_execute_lowered of operations that
 * sw_carrier_dispatch_op tagged), and on request their backward
 * executions, on the thread that started it. Each
 * execution attempt becomes one event: the canonical name, the exact
 * dispatching carrier class (its dispatch tag), the executed
 * implementation, the monotonic start time, the inclusive and the self
 * synchronous wall time, the thread, the nearest recorded enclosing
 * execution and whether it succeeded. Operations that were never
 * dispatched (made directly, or the move registry's) are not recorded as
 * executions.
 *
 * Moves (sw_move, sw_move_async, sw_move_op_submit) whose source carrier's
 * class is selected record two events: "move.submit" on the initiating
 * thread, an execution from the move's start to its hand-off (prepare and
 * submit of a transfer route included), succeeded once submission
 * happened; and "move.complete" when the move's outcome is known, on
 * whichever thread knows it and even after the profiler stopped: its
 * parent is the submission's event, it has the submission's carrier tag,
 * implementation and shapes, it spans from the moment the transfer may
 * begin (the hand-off, or for a transfer route just before its submit,
 * which may start device work: so it covers an OpenCL move's device copy)
 * to the outcome, both in host monotonic time, without waiting for any
 * device, and succeeded tells the outcome. Completions that arrive after the
 * stop join the results at the next sw_profiler_refresh.
 *
 * Profiling state is thread-local: at most one profiler is active per
 * thread, and a profiler is single-use (start once, stop once). Stopping
 * from another thread is refused and abandons the session; the owner
 * thread drops an abandoned session before its next dispatched operation
 * or profiler start, and its events are discarded. A thread that exits
 * with its session running abandons it the same way. When no profiler is
 * active, running an operation costs one predictable branch.
 *
 * Recording never changes what an operation computes or returns. An
 * allocation failure while recording drops that event and makes
 * sw_profiler_stop report SW_ENOMEM once the session has ended.
 *
 * Ownership: sw_profiler is reference-counted (sw_profiler_retain /
 * sw_profiler_unref, which accepts NULL). A started profiler also holds
 * itself as the active profiler of its thread until it stops or its
 * abandoned session is dropped. Strings, tags and layouts that events
 * expose are borrowed from the profiler and live as long as it does.
 */
#ifndef STRIDEWEAVE_PROFILE_H
#define STRIDEWEAVE_PROFILE_H

#include "strideweave/op.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sw_profiler sw_profiler;

/* One recorded execution, copied out by sw_profiler_event. */
typedef struct sw_profile_event {
    int64_t id;              /* from 0, in execution start order */
    int64_t parent_id;       /* nearest recorded enclosing execution, or -1 */
    const char *name;        /* the canonical dispatched name */
    const void *carrier_tag; /* sw_op_dispatch_tag of the op */
    const sw_op_class *impl_class;  /* the executed operation's class */
    const void *impl_tag;           /* sw_profiler_set_impl_hooks, or NULL */
    int32_t nshapes;                /* -1 unless shapes are recorded */
    const sw_layout *const *shapes; /* per argument: layout or NULL */
    int64_t start_ns;               /* CLOCK_MONOTONIC nanoseconds */
    int64_t duration_ns;            /* inclusive wall time */
    int64_t self_ns;                /* minus directly nested executions */
    uint64_t thread_id;             /* pthread_self() of the thread */
    int succeeded;                  /* the execution returned a result */
} sw_profile_event;

/* A new, not yet started profiler that records every carrier class
 * without shapes. */
SW_API sw_status sw_profiler_new(sw_profiler **out);
SW_API sw_profiler *sw_profiler_retain(sw_profiler *p);
SW_API void sw_profiler_unref(sw_profiler *p);

/*
 * Records only executions whose dispatch tag is one of tags[0..n) (exact
 * match; n == 0 records nothing; tags == NULL with n < 0 records every
 * class again). Nothing is retained: tags are compared as addresses.
 * SW_ERUNTIME "Profiler contexts are single-use" once started.
 */
SW_API sw_status sw_profiler_set_carriers(sw_profiler *p, int32_t n,
                                          const void *const *tags);
/* Whether events keep the layouts of tensor arguments. Same error. */
SW_API sw_status sw_profiler_set_record_shapes(sw_profiler *p, int record);
/*
 * Whether backward executions are recorded too (off by default): each
 * call of an operation's backward (sw_op_backward, which the autograd
 * engine uses) becomes an event named "<name>.backward" under the
 * forward's dispatch name and carrier class tag ("move.backward" under
 * the source's class for a move), with the gradient as its one argument;
 * operations its VJP dispatches are its children. Same error.
 */
SW_API sw_status sw_profiler_set_record_backward(sw_profiler *p, int record);

/*
 * Binding support: tag(op) names the implementation of an op at the start
 * of its execution (for example a host-language class; NULL for none), and
 * release(tag) is called once per non-NULL tag when the profiler is freed.
 * Both run on whatever thread does that work. Same error once started.
 */
typedef const void *(*sw_profile_tag_fn)(const sw_op *op);
typedef void (*sw_profile_release_fn)(const void *tag);
SW_API sw_status sw_profiler_set_impl_hooks(sw_profiler *p,
                                            sw_profile_tag_fn tag,
                                            sw_profile_release_fn release);

/*
 * Makes p the active profiler of the calling thread. SW_ERUNTIME
 * "Profiler contexts are single-use" if p was started before, "A profiler
 * session is already active" if another is active on this thread.
 */
SW_API sw_status sw_profiler_start(sw_profiler *p);

/*
 * Ends the session. SW_ERUNTIME "Profiler context is not active" when it
 * is not running; "Profiler session must be stopped on its active thread"
 * from another thread, which also abandons the session. SW_ENOMEM when an
 * event could not be recorded (the session has ended all the same).
 * Executions still running when it stops (stop called from inside an
 * operation) end at the stop time and count as failed.
 */
SW_API sw_status sw_profiler_stop(sw_profiler *p);

/* Abandons a running session from any thread, without error (for
 * finalizers); on the owner thread it is dropped at once. */
SW_API void sw_profiler_abandon(sw_profiler *p);

/* 1 while started and not yet stopped or abandoned. */
SW_API int sw_profiler_is_active(const sw_profiler *p);

/*
 * The number of events and one event, as of the last refresh (the stop
 * makes the first): every event in start-time order with ids 0..n-1 and
 * parent ids renumbered alike. SW_ERUNTIME "Profiler results are
 * available only after context exit" unless stopped; SW_EINDEX "profiler
 * event index out of range".
 */
SW_API sw_status sw_profiler_event_count(const sw_profiler *p, int64_t *out);
SW_API sw_status sw_profiler_event(const sw_profiler *p, int64_t i,
                                   sw_profile_event *out);

/*
 * Takes in the move completions recorded since the last refresh: *changed
 * is 1 when the results changed (their ids may all change then), 0
 * otherwise. Thread-safe with completions arriving; readers of the
 * results must not run concurrently with a refresh that changes them.
 * SW_ERUNTIME as sw_profiler_event_count; SW_ENOMEM (the results stay as
 * they were).
 */
SW_API sw_status sw_profiler_refresh(sw_profiler *p, int *changed);
/* The number of move completions recorded so far (any state). */
SW_API int64_t sw_profiler_late_count(sw_profiler *p);

/* The CLOCK_MONOTONIC time in nanoseconds that events use. */
SW_API int64_t sw_profile_now_ns(void);

/* The active profiler of the calling thread (borrowed), or NULL. */
SW_API sw_profiler *sw_profiler_active(void);

#ifdef __cplusplus
}
#endif

#endif /* STRIDEWEAVE_PROFILE_H */
