/*
 * Running library code without the GIL, and peer hooks that stay safe
 * while doing so.
 *
 * The binding releases the GIL around library calls that run kernels
 * (native operations, the reverse pass). Every function the binding hands
 * to the library (sw_carrier_class slots of Python carriers, sw_host_ops of
 * Generic stores, sw_op_class slots of Python operations, dispatch routes,
 * sw_peer_hooks) takes the GIL back for its whole body with
 * swpy_gil_ensure/swpy_gil_release: SWPY_NOGIL_BEGIN remembers the thread
 * state of the current thread in a thread-local variable, and the
 * callbacks restore it when it is set.
 */
#ifndef SWPY_GIL_H
#define SWPY_GIL_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdatomic.h>

#ifndef _WIN32
#include <signal.h>
#endif

/* The calling thread's state while it runs library code without the GIL
 * (NULL otherwise). */
extern _Thread_local PyThreadState *swpy_nogil_state;

/*
 * The number of SWPY_NOGIL sections running, process-wide. Library code
 * running without the GIL changes reference counts and graph fields
 * while a collection may run, so the garbage collector reports only
 * Python references while it is not zero (see gc.c). It changes only
 * with the GIL held: it is raised before the GIL is released and lowered
 * after it is taken back.
 */
extern _Atomic long swpy_nogil_calls;

#define SWPY_NOGIL_BEGIN                                                       \
    {                                                                          \
        atomic_fetch_add(&swpy_nogil_calls, 1);                                \
        PyThreadState *swpy_saved_ = PyEval_SaveThread();                      \
        swpy_nogil_state = swpy_saved_;

#define SWPY_NOGIL_END                                                         \
    swpy_nogil_state = NULL;                                                   \
    PyEval_RestoreThread(swpy_saved_);                                         \
    atomic_fetch_sub(&swpy_nogil_calls, 1);                                    \
    }

/*
 * Taking the GIL back inside a callback from the library (a Python
 * carrier's hook, a Generic store operation, a Python operation's slot, a
 * dispatch route, a peer hook). Every such callback runs its whole body
 * between swpy_gil_ensure and swpy_gil_release:
 *
 *   - on a thread that runs library code inside SWPY_NOGIL_BEGIN/END, the
 *     saved thread state is restored (the exact one, which keeps this
 *     right in sub-interpreters) and saved again afterwards;
 *   - on a thread unknown to Python, PyGILState_Ensure makes one (the
 *     library starts no threads of its own; this is a safety net);
 *   - otherwise the thread already holds the GIL (the library call was
 *     made with it) and nothing happens, which is what the re-entrant
 *     PyGILState_Ensure would do in the main interpreter, without its
 *     wrong thread state in a sub-interpreter.
 *
 * The error indicator lives in the thread state, so a Python exception
 * raised by the callback stays pending for the caller (see swpy_raise).
 */
typedef struct {
    PyThreadState *restored; /* the state taken back, or NULL */
    int gilstate;            /* PyGILState_Ensure was used */
    PyGILState_STATE state;
} swpy_gil;

static inline swpy_gil swpy_gil_ensure(void) {
    swpy_gil g = {swpy_nogil_state, 0, PyGILState_LOCKED};
    if (g.restored != NULL) {
        swpy_nogil_state = NULL;
        PyEval_RestoreThread(g.restored);
    } else if (PyGILState_GetThisThreadState() == NULL) {
        g.state = PyGILState_Ensure();
        g.gilstate = 1;
    }
    return g;
}

static inline void swpy_gil_release(swpy_gil g) {
    if (g.restored != NULL) {
        PyEval_SaveThread();
        swpy_nogil_state = g.restored;
    } else if (g.gilstate) {
        PyGILState_Release(g.state);
    }
}

/*
 * Ctrl-C during a long kernel. While the GIL is released, Python's own
 * SIGINT handler only records the signal, and the KeyboardInterrupt would
 * come when the kernel is done (8.6 s for a 7000 x 7000 matmul). So the
 * long sections of the main thread (native operations above the bulk
 * threshold, reverse passes on CPU tensors) run between
 * swpy_interrupt_begin and swpy_interrupt_end, which install a C handler
 * for SIGINT that raises the library's interrupt request
 * (sw_interrupt_request) and then calls the handler it replaced (Python's,
 * so Python still records the signal), make the thread watch the request,
 * and restore both afterwards. Sections on other threads, in
 * sub-interpreters, or where SIGINT is ignored or left to the default
 * action change nothing. Nested sections (a Python operation inside a
 * reverse pass runs one of its own) leave the handler to the outermost.
 *
 * A kernel that saw the request fails with SW_EINTERRUPTED. Then, with the
 * GIL back, swpy_interrupted runs Python's signal handlers: their
 * exception (KeyboardInterrupt from the default handler, or whatever a
 * user's handler raises) is the call's exception. If a handler ran and
 * raised nothing, the user chose to go on: swpy_interrupted returns 1 and
 * a native operation is run again (its inputs were only read). If no
 * handler ran (the request came from elsewhere), KeyboardInterrupt
 * "operation interrupted" is raised.
 *
 * The cost is three sigaction calls (about 0.4 us), so operations do this
 * only from SWPY_INTERRUPT_WORK elements of work, where a kernel takes a
 * millisecond or more (a shorter one ends before a person notices the
 * wait); small operations keep the GIL and pay nothing. A reverse pass
 * always does it: its length is unknown in advance.
 */
#define SWPY_INTERRUPT_WORK ((int64_t)1 << 20)
typedef struct swpy_interrupt {
    int active;    /* the thread watches for this section */
    int installed; /* this section installed the handler */
    int watching;  /* the library's watch setting before the section */
#ifndef _WIN32
    struct sigaction saved;
#endif
} swpy_interrupt;

/* Before SWPY_NOGIL_BEGIN, with the GIL held; does nothing for a call of
 * less than SWPY_INTERRUPT_WORK elements of work. */
void swpy_interrupt_begin(swpy_interrupt *s, int64_t work);

/*
 * After SWPY_NOGIL_END, with the GIL held: restores what begin changed.
 * Returns 1 if a SIGINT arrived while the handler was installed.
 */
int swpy_interrupt_end(swpy_interrupt *s);

/*
 * For a call that failed with SW_EINTERRUPTED, given what
 * swpy_interrupt_end returned: clears the library's request and runs
 * Python's signal handlers. Returns -1 with an exception set, or 1 when a
 * handler ran and raised nothing (the caller may run the call again).
 */
int swpy_interrupted(int seen);

/* The peer hooks: Py_INCREF and Py_DECREF with the GIL taken back when
 * this thread runs without it. The reference they keep (the toggle
 * reference) is hidden from the cycle collector; gc.c says when it is
 * reported. */
void swpy_peer_incref(void *peer);
void swpy_peer_decref(void *peer);

#endif /* SWPY_GIL_H */
