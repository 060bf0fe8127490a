/*
 * The profiler's hooks in the operation execution path.
 *
 * sw_profile_tls is the calling thread's active profiler. The execution
 * path tests it once (the only cost without a profiler) and, when it is
 * set, brackets a dispatched execution with sw_profile_begin and
 * sw_profile_end around a frame that lives on the caller's stack. Frames
 * link to their enclosing frame, so nesting, parent ids and self times
 * need no allocation; every dispatched execution gets a frame, recorded or
 * filtered out, so that a filtered-out child's time is still subtracted
 * from its parent's self time.
 */
#ifndef SW_PROFILE_INTERNAL_H
#define SW_PROFILE_INTERNAL_H

#include "base/internal.h"
#include "strideweave/profile.h"

extern _Thread_local sw_profiler *sw_profile_tls;

#if defined(__GNUC__)
#define SW_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define SW_UNLIKELY(x) (x)
#endif

typedef struct sw_profile_frame {
    struct sw_profile_frame *parent;
    sw_profiler *profiler;
    int64_t start;
    int64_t child_ns;   /* durations of directly nested executions */
    int64_t event;      /* this execution's event, or -1 if not recorded */
    int64_t parent_rec; /* the nearest recorded enclosing event, or -1 */
} sw_profile_frame;

/*
 * Opens a frame for a dispatched execution of op on the active profiler,
 * dropping an abandoned one first. Returns 1 when a frame was opened (the
 * caller must end it), 0 when nothing is being profiled.
 */
int sw_profile_begin(const sw_op *op, int32_t nargs, const sw_arg *args,
                     sw_profile_frame *f);
/*
 * Opens a frame for the backward of op (its gradient the one argument)
 * when the active profiler records backward executions: an event named
 * "<name>.backward" for the operation's dispatch name and class tag, or
 * "move.backward" for the class of a move's source. Operations that were
 * never dispatched get no frame. Returns 1 when a frame was opened.
 */
int sw_profile_backward_begin(const sw_op *op, sw_tensor *gradient,
                              sw_profile_frame *f);
/* Closes the frame opened by sw_profile_begin or
 * sw_profile_backward_begin. */
void sw_profile_end(sw_profile_frame *f, int succeeded);

/*
 * Moves (profile.h): a submission is an execution frame named
 * "move.submit" for the source carrier's class tag, opened by
 * sw_profile_move_begin (0: nothing is being profiled) and closed by
 * sw_profile_move_end, which fills ticket when the submission was
 * recorded and succeeded (ticket->profiler is NULL otherwise). The
 * completion is recorded from any thread, at any time, by
 * sw_profile_move_complete: a "move.complete" event whose parent is the
 * submission's, with its class tags and shapes, spanning from started
 * (sw_profile_now_ns when the transfer could first begin inside the
 * submission, such as a transfer route's submit that enqueues device
 * work; 0: the end of the submission) to now, when the outcome is known.
 * Both ends are host monotonic times taken on either side of the
 * transfer: no device clock is read and nothing waits for the device.
 * sw_profile_move_drop frees a ticket that will never complete (accepts
 * an empty one).
 */
typedef struct sw_profile_move {
    sw_profiler *profiler; /* owned; NULL: nothing to record */
    int64_t parent;
    int32_t name;
    int32_t nshapes;
    struct sw_layout **shapes; /* owned */
    const void *carrier_tag;
    const sw_op_class *impl_class;
    const void *impl_tag; /* owned by the submission's event */
    int64_t start;
} sw_profile_move;

int sw_profile_move_begin(const sw_op *op, const void *carrier_tag,
                          int32_t nargs, const sw_arg *args,
                          sw_profile_frame *f);
void sw_profile_move_end(sw_profile_frame *f, int succeeded, int64_t started,
                         sw_profile_move *ticket);
void sw_profile_move_complete(sw_profile_move *ticket, int succeeded);
void sw_profile_move_drop(sw_profile_move *ticket);

#endif /* SW_PROFILE_INTERNAL_H */
