/*
 * The one place where a library status becomes a Python exception.
 */
#include "errors.h"

#include "strideweave/definition.h"

PyObject *swpy_exception_type(sw_status status) {
    switch (status) {
    case SW_ENOMEM:
        return PyExc_MemoryError;
    case SW_ETYPE:
        return PyExc_TypeError;
    case SW_EVALUE:
        return PyExc_ValueError;
    case SW_EINDEX:
        return PyExc_IndexError;
    case SW_EKEY:
        return PyExc_KeyError;
    case SW_ERUNTIME:
        return PyExc_RuntimeError;
    case SW_EBUFFER:
        return PyExc_BufferError;
    case SW_ENOTIMPL:
        return PyExc_NotImplementedError;
    case SW_EOVERFLOW:
        return PyExc_OverflowError;
    case SW_EOS:
        return PyExc_OSError;
    case SW_EINTERRUPTED:
        return PyExc_KeyboardInterrupt;
    case SW_OK:
        break;
    }
    return PyExc_SystemError;
}

/*
 * OSError(errno, message) picks the subclass for errno (FileExistsError
 * for EEXIST, PermissionError for EACCES, ...), as the interpreter's own
 * I/O errors do.
 */
static void raise_os_error(const char *msg) {
    int err = sw_errno();
    if (err == 0) {
        PyErr_SetString(PyExc_OSError, msg);
        return;
    }
    PyObject *args = Py_BuildValue("(is)", err, msg);
    if (args != NULL) {
        PyErr_SetObject(PyExc_OSError, args);
        Py_DECREF(args);
    }
}

PyObject *swpy_raise(sw_status status) {
    if (PyErr_Occurred()) {
        /* A Python callback made the call fail: its exception says why. */
        return NULL;
    }
    if (status == SW_OK) {
        PyErr_SetString(PyExc_SystemError,
                        "strideweave: error raised for a successful call");
        return NULL;
    }
    if (status == SW_EINTERRUPTED && PyErr_CheckSignals() < 0) {
        /* A Ctrl-C stopped the kernel: Python's handler says what to
         * raise (see swpy_interrupted in gil.h). */
        return NULL;
    }
    const char *msg = sw_errmsg();
    if (msg == NULL || msg[0] == '\0') {
        msg = sw_status_name(status);
    }
    if (status == SW_ERUNTIME && sw_op_contract_failed()) {
        /* A provider broke its contract: the definition layer's error. */
        PyObject *mod =
            PyImport_ImportModule("strideweave.operation_definition");
        PyObject *pce =
            mod != NULL ? PyObject_GetAttrString(mod, "ProviderContractError")
                        : NULL;
        Py_XDECREF(mod);
        if (pce == NULL) {
            return NULL;
        }
        PyErr_SetString(pce, msg);
        Py_DECREF(pce);
        return NULL;
    }
    if (status == SW_EOS) {
        raise_os_error(msg);
        return NULL;
    }
    /*
     * KeyError's str() is the repr of its argument; giving it the message
     * as its single argument matches what Python code raising KeyError does.
     */
    PyErr_SetString(swpy_exception_type(status), msg);
    return NULL;
}
