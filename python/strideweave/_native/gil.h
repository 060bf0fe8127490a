/*
 * Running library code without the GIL, and peer hooks that stay safe
 * while doing so.
 *
 * The binding releases the GIL around native kernels only: code in which
 * no Python callback (a Python carrier's hook, a Generic store, a Python
 * operation, a dispatch route) can run. One kind of callback remains: the
 * peer hooks (see sw_peer_hooks in base.h), which the library calls when a
 * reference count of a carrier, tensor or operation with a Python peer
 * crosses 1 <-> 2, for example when a recorded forward saves its inputs.
 * Those hooks take the GIL back for the one Py_INCREF or Py_DECREF they
 * do: SWPY_NOGIL_BEGIN remembers the thread state of the current thread
 * in a thread-local variable, and the hooks restore it when it is set.
 */
#ifndef SWPY_GIL_H
#define SWPY_GIL_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* The calling thread's state while it runs library code without the GIL
 * (NULL otherwise). */
extern _Thread_local PyThreadState *swpy_nogil_state;

#define SWPY_NOGIL_BEGIN                                                       \
    {                                                                          \
        PyThreadState *swpy_saved_ = PyEval_SaveThread();                      \
        swpy_nogil_state = swpy_saved_;

#define SWPY_NOGIL_END                                                         \
    swpy_nogil_state = NULL;                                                   \
    PyEval_RestoreThread(swpy_saved_);                                         \
    }

/* The peer hooks: Py_INCREF and Py_DECREF with the GIL taken back when
 * this thread runs without it. */
void swpy_peer_incref(void *peer);
void swpy_peer_decref(void *peer);

#endif /* SWPY_GIL_H */
