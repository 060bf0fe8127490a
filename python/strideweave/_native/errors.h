/*
 * Status-to-exception mapping for the extension module.
 *
 * Every sw_status has exactly one Python exception type; the message is the
 * library's sw_errmsg() of the failing call. The binding raises library
 * errors only through swpy_raise so that the mapping lives in one place.
 *
 * Library calls can run Python code: a carrier implemented in Python is a
 * vtable whose slots call its methods, and a Generic carrier's values live
 * in a Python sequence. A slot whose Python code raises leaves that
 * exception set and returns a failure status, so swpy_raise propagates an
 * exception that is already set unchanged: a user's get_value raising
 * KeyError surfaces as that KeyError.
 */
#ifndef SWPY_ERRORS_H
#define SWPY_ERRORS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "strideweave/base.h"

/* The Python exception type for a status (a borrowed reference). */
PyObject *swpy_exception_type(sw_status status);

/*
 * Sets the exception for a failed library call: the exception a Python
 * callback already raised, if any; otherwise the type mapped from status
 * and the message sw_errmsg() (SW_EOS becomes the OSError subclass of
 * sw_errno(), such as FileExistsError). Always returns NULL so callers can
 * write `return swpy_raise(st);`. A status of SW_OK with no exception set
 * is a bug in the caller and raises SystemError.
 */
PyObject *swpy_raise(sw_status status);

/*
 * The check after a library call that may have run Python code: returns
 * -1 with an exception set if the call failed, or if it succeeded while a
 * callback without a failure channel (a carrier's size or dtype hook)
 * raised; 0 otherwise.
 */
static inline int swpy_check(sw_status status) {
    if (status != SW_OK) {
        swpy_raise(status);
        return -1;
    }
    return PyErr_Occurred() != NULL ? -1 : 0;
}

#endif /* SWPY_ERRORS_H */
