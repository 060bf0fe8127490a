/*
 * The DLPack protocol of Tensor: __dlpack__ and __dlpack_device__.
 *
 * The library decides everything about an export (argument checks in
 * their order, the carrier's storage and device, dtype, shape, strides,
 * offset, the read-only flag; see sw_tensor_dlpack_export). This file
 * converts the arguments, wraps the managed tensor in a PyCapsule named as
 * the DLPack Python specification requires, and keeps the Tensor object
 * alive for as long as the managed tensor.
 *
 * Ownership follows the DLPack convention. A consumer takes a capsule by
 * renaming it "used_dltensor" or "used_dltensor_versioned" and calls the
 * managed tensor's deleter when it is done; the capsule's destructor calls
 * the deleter only for a capsule nobody took. The deleter drops the
 * library's carrier reference and then, through the request's owner hook,
 * the Tensor object. A consumer may call it from any thread, with or
 * without the GIL, and even while or after the interpreter shuts down:
 * release_owner below takes the GIL when it can and otherwise leaves the
 * Tensor object alone (a few bytes stay allocated at exit rather than
 * touching a dead interpreter).
 */
#include "py_dlpack.h"

#include "errors.h"
#include "gil.h"
#include "py_tensor.h"
#include "strideweave/representation.h"

#include "strideweave/interop.h"

static const char legacy_name[] = "dltensor";
static const char versioned_name[] = "dltensor_versioned";

/* --------------------------------------------------------- the owner */

static int interpreter_gone(void) {
#if PY_VERSION_HEX >= 0x030D0000
    return !Py_IsInitialized() || Py_IsFinalizing();
#else
    return !Py_IsInitialized() || _Py_IsFinalizing();
#endif
}

/*
 * Drops the managed tensor's reference to the Tensor object. Runs inside
 * the deleter, wherever the consumer calls it:
 *   - while the interpreter finalizes or after it is gone: the reference
 *     is left behind, since taking the GIL could hang or end the thread
 *     and the object may no longer exist (an exiting process keeps a
 *     tensor object, as NumPy's exporter does);
 *   - with the GIL (capsule destructor, NumPy, most PyTorch paths): a
 *     plain decref;
 *   - on a thread that runs library code without the GIL (see gil.h): the
 *     saved thread state is taken back;
 *   - on any other thread: PyGILState_Ensure.
 */
static void release_owner(void *owner) {
    PyObject *tensor = owner;
    /* First: once the interpreter is finalized PyGILState_Check answers 1
     * on every thread, and nothing Python may be touched any more. */
    if (interpreter_gone()) {
        return;
    }
    if (PyGILState_Check()) {
        Py_DECREF(tensor);
        return;
    }
    if (swpy_nogil_state != NULL) {
        swpy_gil g = swpy_gil_ensure();
        Py_DECREF(tensor);
        swpy_gil_release(g);
        return;
    }
    PyGILState_STATE s = PyGILState_Ensure();
    Py_DECREF(tensor);
    PyGILState_Release(s);
}

/* --------------------------------------------------------- the capsule */

/* Runs the deleter of a capsule nobody consumed. A consumed capsule has
 * been renamed, so it is no longer valid under its original name. */
static void delete_unconsumed(PyObject *capsule, int versioned) {
    const char *name = versioned ? versioned_name : legacy_name;
    if (!PyCapsule_IsValid(capsule, name)) {
        return;
    }
    /* The deleter may run Python code (the Tensor's deallocation) while an
     * exception is being raised: keep that exception. */
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    void *m = PyCapsule_GetPointer(capsule, name);
    if (versioned) {
        DLManagedTensorVersioned *v = m;
        if (v != NULL && v->deleter != NULL) {
            v->deleter(v);
        }
    } else {
        DLManagedTensor *l = m;
        if (l != NULL && l->deleter != NULL) {
            l->deleter(l);
        }
    }
    PyErr_Restore(type, value, traceback);
}

static void legacy_capsule_destructor(PyObject *capsule) {
    delete_unconsumed(capsule, 0);
}

static void versioned_capsule_destructor(PyObject *capsule) {
    delete_unconsumed(capsule, 1);
}

static void delete_managed(void *m, int versioned) {
    if (versioned) {
        DLManagedTensorVersioned *v = m;
        v->deleter(v);
    } else {
        DLManagedTensor *l = m;
        l->deleter(l);
    }
}

/* ------------------------------------------------------- the arguments */

/* One int element of a pair, clamped to int64 (a huge value is still
 * "large" or "negative" to the library's checks). */
static int pair_element(PyObject *item, int64_t *out) {
    PyObject *index = PyNumber_Index(item);
    if (index == NULL) {
        return -1;
    }
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(index, &overflow);
    Py_DECREF(index);
    if (v == -1 && PyErr_Occurred()) {
        return -1;
    }
    *out = overflow > 0 ? INT64_MAX : overflow < 0 ? INT64_MIN : (int64_t)v;
    return 0;
}

/*
 * dl_device or max_version as the library takes them: None, a tuple or
 * list of two integers, or one of the two malformed shapes the library
 * reports. A non-integer element fails here with TypeError.
 */
static int pair_arg(PyObject *o, sw_dlpack_arg *kind, int64_t out[2]) {
    if (o == NULL || o == Py_None) {
        *kind = SW_DLPACK_ARG_NONE;
        return 0;
    }
    if (!PyTuple_Check(o) && !PyList_Check(o)) {
        *kind = SW_DLPACK_ARG_NOT_SEQUENCE;
        return 0;
    }
    if (PySequence_Fast_GET_SIZE(o) != 2) {
        *kind = SW_DLPACK_ARG_WRONG_LENGTH;
        return 0;
    }
    /* Strong references: an element's __index__ may change a list. */
    PyObject *a = Py_NewRef(PySequence_Fast_GET_ITEM(o, 0));
    PyObject *b = Py_NewRef(PySequence_Fast_GET_ITEM(o, 1));
    int rc = pair_element(a, &out[0]);
    if (rc == 0) {
        rc = pair_element(b, &out[1]);
    }
    Py_DECREF(a);
    Py_DECREF(b);
    if (rc < 0) {
        return -1;
    }
    *kind = SW_DLPACK_ARG_PAIR;
    return 0;
}

/* ------------------------------------------------------------ methods */

PyObject *swpy_tensor_dlpack(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"stream", "max_version", "dl_device", "copy",
                             NULL};
    PyObject *stream = Py_None, *max_version = Py_None, *dl_device = Py_None,
             *copy = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|O$OOO:__dlpack__", kwlist,
                                     &stream, &max_version, &dl_device,
                                     &copy)) {
        return NULL;
    }
    (void)stream; /* nothing to order: export does no device work */
    sw_tensor *t = swpy_tensor_of(self);
    /* Refused before the request's arguments are read. */
    if (t == NULL ||
        swpy_check(sw_tensor_require_single(t, SW_ENTRY_DLPACK)) < 0) {
        return NULL;
    }
    sw_dlpack_request req;
    memset(&req, 0, sizeof req);
    int truth = PyObject_IsTrue(copy);
    if (truth < 0 || pair_arg(dl_device, &req.dl_device, req.device) < 0 ||
        pair_arg(max_version, &req.max_version, req.version) < 0) {
        return NULL;
    }
    req.copy = truth;
    req.owner = self;
    req.owner_release = release_owner;
    /* The managed tensor's reference, handed over on success. */
    Py_INCREF(self);
    int versioned = 0;
    void *m = NULL;
    sw_status s = sw_tensor_dlpack_export(t, &req, &versioned, &m);
    if (s != SW_OK || PyErr_Occurred()) {
        /* A Python carrier hook may have raised inside a successful
         * call (is_mutable has no failure channel). */
        if (s == SW_OK) {
            delete_managed(m, versioned);
        } else {
            Py_DECREF(self);
        }
        return swpy_raise(s == SW_OK ? SW_ERUNTIME : s);
    }
    PyObject *capsule = PyCapsule_New(
        m, versioned ? versioned_name : legacy_name,
        versioned ? versioned_capsule_destructor : legacy_capsule_destructor);
    if (capsule == NULL) {
        delete_managed(m, versioned);
        return NULL;
    }
    return capsule;
}

PyObject *swpy_tensor_dlpack_device(PyObject *self, PyObject *unused) {
    sw_tensor *t = swpy_tensor_of(self);
    if (t == NULL) {
        return NULL;
    }
    int32_t type = 0, id = 0;
    sw_status s = sw_tensor_dlpack_device(t, &type, &id);
    if (swpy_check(s) < 0) {
        return NULL;
    }
    return Py_BuildValue("(ii)", (int)type, (int)id);
}
