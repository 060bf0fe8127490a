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

/* The peer hooks: Py_INCREF and Py_DECREF with the GIL taken back when
 * this thread runs without it. The reference they keep (the toggle
 * reference) is hidden from the cycle collector; gc.c says when it is
 * reported. */
void swpy_peer_incref(void *peer);
void swpy_peer_decref(void *peer);

#endif /* SWPY_GIL_H */
