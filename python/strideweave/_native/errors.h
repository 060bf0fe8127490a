/*
 * Status-to-exception mapping for the extension module.
 *
 * Every sw_status has exactly one Python exception type; the message is the
 * library's sw_errmsg() of the failing call. The binding raises library
 * errors only through swpy_raise so that the mapping lives in one place.
 */
#ifndef SWPY_ERRORS_H
#define SWPY_ERRORS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "strideweave/base.h"

/* The Python exception type for a status (a borrowed reference). */
PyObject *swpy_exception_type(sw_status status);

/*
 * Sets the exception for a failed library call: the type mapped from status
 * and the message sw_errmsg(). Always returns NULL so callers can write
 * `return swpy_raise(st);`. A status of SW_OK is a bug in the caller and
 * raises SystemError.
 */
PyObject *swpy_raise(sw_status status);

#endif /* SWPY_ERRORS_H */
