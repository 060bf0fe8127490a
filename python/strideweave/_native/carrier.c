/*
 * The Carrier base type, the vtable that routes the library's carrier
 * slots to the methods of Python-implemented carriers, and the conversions
 * shared by every carrier and tensor call.
 *
 * The library owns every carrier rule (versions, mutability, release,
 * ownership, bounds); the methods here convert arguments, call sw_carrier_*
 * and turn statuses into exceptions. See py_carrier.h for the peer scheme.
 */
#include "py_carrier.h"
#include "py_layout.h"
#include "py_tensor.h"

#include "strideweave/blockdev.h"
#include "strideweave/tiled.h"
#include "strideweave/opencl.h"

#include <math.h>
#include <string.h>

#if PY_VERSION_HEX < 0x030C0000
#include <structmember.h>
#define SWPY_T_PYSSIZET T_PYSSIZET
#define SWPY_READONLY READONLY
#else
#define SWPY_T_PYSSIZET Py_T_PYSSIZET
#define SWPY_READONLY Py_READONLY
#endif

#include "errors.h"
#include "py_extension.h"
#include "strideweave/extension.h"
#include "gc.h"
#include "gil.h"
#include "operation.h"
#include "plans.h"

#include "strideweave/evictable.h"

#define CARRIER(o) (((CarrierObject *)(o))->carrier)

/* ------------------------------------------------------------ arguments */

int swpy_index_arg(PyObject *o, int64_t *out) {
    PyObject *n = PyNumber_Index(o);
    if (n == NULL) {
        return -1;
    }
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(n, &overflow);
    Py_DECREF(n);
    if (v == -1 && !overflow && PyErr_Occurred()) {
        return -1;
    }
    *out = overflow > 0 ? INT64_MAX : overflow < 0 ? INT64_MIN : (int64_t)v;
    return 0;
}

int swpy_alloc_size_arg(sw_carrier *c, PyObject *o, int64_t *out) {
    if (swpy_index_arg(o, out) < 0) {
        return -1;
    }
    return 0;
}

/* --------------------------------------------------------------- dtypes */

PyObject *swpy_dtype_to_py(swpy_state *st, sw_dtype d) {
    if (swpy_require_dtypes(st) < 0) {
        return NULL;
    }
    if ((int)d < 0 || (int)d >= SW_DTYPE_COUNT) {
        PyErr_Format(PyExc_SystemError, "strideweave: unknown dtype %d",
                     (int)d);
        return NULL;
    }
    return Py_NewRef(st->dtypes[d]);
}

int swpy_dtype_from_py(swpy_state *st, PyObject *o, sw_dtype *out) {
    if (swpy_require_dtypes(st) < 0) {
        return -1;
    }
    /* DType members are compared by identity. */
    for (int d = 0; d < SW_DTYPE_COUNT; d++) {
        if (o == st->dtypes[d]) {
            *out = (sw_dtype)d;
            return 1;
        }
    }
    return 0;
}

int swpy_dtype_arg(swpy_state *st, PyObject *o, const char *name,
                   int type_error, sw_dtype *out) {
    if (o == NULL || o == Py_None) {
        *out = SW_DTYPE_COUNT;
        return 0;
    }
    int rc = swpy_dtype_from_py(st, o, out);
    if (rc < 0) {
        return -1;
    }
    if (rc == 0) {
        if (type_error) {
            PyErr_Format(PyExc_TypeError, "%s dtype must be a DType", name);
            return -1;
        }
        *out = SW_DTYPE_ANY;
    }
    return 0;
}

/* --------------------------------------------------------------- values */

static inline sw_value host_value(PyObject *o) {
    sw_value v;
    memset(&v, 0, sizeof v);
    v.kind = SW_VALUE_HOST;
    v.as.host = o;
    v.ops = &swpy_host_ops;
    return v;
}

static inline int has_index(PyObject *o) {
    PyNumberMethods *nb = Py_TYPE(o)->tp_as_number;
    return nb != NULL && nb->nb_index != NULL;
}

static inline int has_float(PyObject *o) {
    PyNumberMethods *nb = Py_TYPE(o)->tp_as_number;
    return nb != NULL && (nb->nb_float != NULL || nb->nb_index != NULL);
}

/* An integer that does not fit int64, as a double (+-inf if it does not
 * fit a double either: huge ints become inf in float stores). */
static int big_int_as_double(PyObject *o, int sign, double *out) {
    double d = PyLong_AsDouble(o);
    if (d == -1.0 && PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_OverflowError)) {
            return -1;
        }
        PyErr_Clear();
        d = sign < 0 ? -INFINITY : INFINITY;
    }
    *out = d;
    return 0;
}

int swpy_value_convert(int numeric, sw_dtype dtype, int none_is_hole,
                       PyObject *v, sw_value *out) {
    if (none_is_hole && v == Py_None) {
        memset(out, 0, sizeof *out);
        out->kind = SW_VALUE_NONE;
        return 0;
    }
    if (!numeric) {
        *out = host_value(v);
        return 0;
    }
    if (PyFloat_Check(v)) {
        *out = sw_value_f64(PyFloat_AS_DOUBLE(v));
        return 0;
    }
    if (PyLong_Check(v) || (dtype == SW_DTYPE_INT32 && has_index(v))) {
        PyObject *n = PyNumber_Index(v);
        if (n == NULL) {
            return -1;
        }
        int overflow = 0;
        long long i = PyLong_AsLongLongAndOverflow(n, &overflow);
        int rc = 0;
        if (i == -1 && !overflow && PyErr_Occurred()) {
            rc = -1;
        } else if (!overflow) {
            *out = sw_value_i64((int64_t)i);
        } else if (dtype == SW_DTYPE_INT32 || dtype == SW_DTYPE_BOOL) {
            /* Out of int64 is out of int32 too: the library reports it. */
            *out = sw_value_i64(overflow > 0 ? INT64_MAX : INT64_MIN);
        } else {
            double d = 0.0;
            rc = big_int_as_double(n, overflow, &d);
            *out = sw_value_f64(d);
        }
        Py_DECREF(n);
        return rc;
    }
    if (dtype == SW_DTYPE_INT32) {
        /* Not an integer: a double that the Int32 store refuses with its
         * "must be an integer" message, where its checks reach it. */
        *out = sw_value_f64(NAN);
        return 0;
    }
    if (has_float(v)) {
        double d = PyFloat_AsDouble(v);
        if (d == -1.0 && PyErr_Occurred()) {
            return -1;
        }
        *out = sw_value_f64(d);
        return 0;
    }
    /* Not a number: the numeric store refuses it with its own message. */
    *out = host_value(v);
    return 0;
}

static int is_numeric_backend(const sw_carrier *c) {
    return sw_carrier_is_cpu(c) || sw_carrier_is_file(c) ||
           sw_carrier_is_blockdev(c) || sw_carrier_is_opencl(c);
}

/* The carrier whose way of storing values c uses: a hierarchy (an
 * Evictable or a TiledEvictable) stores them the way its innermost
 * primary does. */
static sw_carrier *value_store_of(sw_carrier *c) {
    for (;;) {
        if (sw_carrier_is_evictable(c)) {
            c = sw_evictable_primary(c);
        } else if (sw_carrier_is_tiled(c) && sw_tiled_primary(c) != NULL) {
            c = sw_tiled_primary(c);
        } else {
            return c;
        }
    }
}

int swpy_value_for(sw_carrier *dest, PyObject *v, sw_value *out) {
    dest = value_store_of(dest);
    int numeric = is_numeric_backend(dest);
    sw_dtype dtype = numeric ? sw_carrier_dtype(dest) : SW_DTYPE_ANY;
    return swpy_value_convert(numeric, dtype, 0, v, out);
}

PyObject *swpy_value_new_ref(const sw_value *v) {
    switch (v->kind) {
    case SW_VALUE_HOST:
        if (v->ops != &swpy_host_ops) {
            PyErr_SetString(PyExc_SystemError,
                            "strideweave: a host value of foreign host ops");
            return NULL;
        }
        return Py_NewRef((PyObject *)v->as.host);
    case SW_VALUE_F64:
        return PyFloat_FromDouble(v->as.f);
    case SW_VALUE_I64:
        return PyLong_FromLongLong(v->as.i);
    case SW_VALUE_NONE:
        break;
    }
    Py_RETURN_NONE;
}

PyObject *swpy_value_to_py(const sw_carrier *src, sw_value *v) {
    PyObject *r;
    const sw_carrier *store = value_store_of((sw_carrier *)src);
    if (v->kind == SW_VALUE_I64 && sw_carrier_is_cpu(store) &&
        sw_carrier_dtype(store) == SW_DTYPE_BOOL) {
        r = PyBool_FromLong(v->as.i != 0);
    } else {
        r = swpy_value_new_ref(v);
    }
    sw_value_clear(v);
    return r;
}

int swpy_values_init(swpy_values *vals, PyObject *iterable, int numeric,
                     sw_dtype dtype) {
    vals->items = NULL;
    vals->n = 0;
    vals->has_host = 0;
    /* A private copy: the conversions below may run Python code
     * (__index__, __float__) that must not change what is converted. */
    vals->keep = PySequence_List(iterable);
    if (vals->keep == NULL) {
        return -1;
    }
    Py_ssize_t n = PyList_GET_SIZE(vals->keep);
    if ((size_t)n > PY_SSIZE_T_MAX / sizeof(sw_value)) {
        PyErr_NoMemory();
        goto fail;
    }
    vals->items = PyMem_Malloc(n > 0 ? (size_t)n * sizeof(sw_value) : 1);
    if (vals->items == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (swpy_value_convert(numeric, dtype, 1,
                               PyList_GET_ITEM(vals->keep, i),
                               &vals->items[i]) < 0) {
            goto fail;
        }
        vals->has_host |= vals->items[i].kind == SW_VALUE_HOST;
    }
    vals->n = n;
    return 0;
fail:
    swpy_values_free(vals);
    return -1;
}

void swpy_values_free(swpy_values *vals) {
    /* Written values are borrowed: nothing to clear one by one. */
    PyMem_Free(vals->items);
    vals->items = NULL;
    Py_CLEAR(vals->keep);
}

/* ---------------------------------------------------------------- peers */

/* The hooks take the GIL back when the library runs without it. */
static const sw_peer_hooks peer_hooks = {swpy_peer_incref, swpy_peer_decref};

const sw_peer_hooks *swpy_peer_hooks(void) {
    return &peer_hooks;
}

/* ---------------------------------------------- Python-implemented hooks */

/*
 * The state of a carrier whose hooks are Python methods: the object, or
 * NULL once it is gone. The library may destroy the carrier after the
 * object (destruction is deferred while another object is being
 * destroyed), so the slots never assume the object is still there.
 */
typedef struct {
    PyObject *self;
} py_state;

static const sw_carrier_class python_class;

int swpy_carrier_is_python(const sw_carrier *c) {
    return sw_carrier_get_class(c) == &python_class;
}

/*
 * The object behind a slot call, or NULL if the slot must not run Python
 * code: the object is gone, or an earlier slot of the same library call
 * raised (a hook without a failure channel, such as size).
 */
static PyObject *hook_self(sw_carrier *c, swpy_state **st) {
    PyObject *self = ((py_state *)sw_carrier_state(c))->self;
    if (self == NULL || PyErr_Occurred()) {
        return NULL;
    }
    *st = swpy_state_of_type(Py_TYPE(self));
    if (*st != NULL && (*st)->str_size == NULL) {
        /* The module was cleared (interpreter shutdown). */
        PyErr_SetString(PyExc_RuntimeError,
                        "strideweave._native is no longer available");
        return NULL;
    }
    return *st != NULL ? self : NULL;
}

/* A failure status for a slot whose Python code raised; the binding
 * propagates the exception (see swpy_raise). */
#define HOOK_FAILED SW_ERUNTIME

/* An optional hook: 1 and a new reference, 0 if absent, -1 on error. */
static int optional_hook(PyObject *self, PyObject *name, PyObject **out) {
    *out = PyObject_GetAttr(self, name);
    if (*out != NULL) {
        return 1;
    }
    if (PyErr_ExceptionMatches(PyExc_AttributeError)) {
        PyErr_Clear();
        return 0;
    }
    return -1;
}

static int64_t hook_size_body(sw_carrier *c) {
    swpy_state *st;
    PyObject *self = hook_self(c, &st);
    if (self == NULL) {
        return 0;
    }
    PyObject *r = PyObject_CallMethodNoArgs(self, st->str_size);
    if (r == NULL) {
        return 0;
    }
    int64_t n = 0;
    int rc = swpy_index_arg(r, &n);
    Py_DECREF(r);
    return rc < 0 ? 0 : n;
}

static sw_status hook_get_body(sw_carrier *c, int64_t i, sw_value *out) {
    swpy_state *st;
    PyObject *self = hook_self(c, &st);
    if (self == NULL) {
        return HOOK_FAILED;
    }
    PyObject *index = PyLong_FromLongLong(i);
    if (index == NULL) {
        return HOOK_FAILED;
    }
    PyObject *r = PyObject_CallMethodOneArg(self, st->str_get_value, index);
    Py_DECREF(index);
    if (r == NULL) {
        return HOOK_FAILED;
    }
    *out = host_value(r);
    return SW_OK;
}

static sw_status hook_set_body(sw_carrier *c, int64_t i, const sw_value *v) {
    swpy_state *st;
    PyObject *self = hook_self(c, &st);
    if (self == NULL) {
        return HOOK_FAILED;
    }
    PyObject *method = NULL, *index = NULL, *value = NULL, *r = NULL;
    int found = optional_hook(self, st->str_set_value, &method);
    if (found <= 0) {
        if (found == 0) {
            /* The default set_value: the storage cannot be written. */
            PyErr_SetString(PyExc_RuntimeError, "Carrier is not mutable");
        }
        return HOOK_FAILED;
    }
    index = PyLong_FromLongLong(i);
    value = index != NULL ? swpy_value_new_ref(v) : NULL;
    if (value != NULL) {
        r = PyObject_CallFunctionObjArgs(method, index, value, NULL);
    }
    Py_DECREF(method);
    Py_XDECREF(index);
    Py_XDECREF(value);
    if (r == NULL) {
        return HOOK_FAILED;
    }
    Py_DECREF(r);
    return SW_OK;
}

static sw_dtype hook_dtype_body(sw_carrier *c) {
    swpy_state *st;
    PyObject *self = hook_self(c, &st);
    if (self == NULL) {
        return SW_DTYPE_ANY;
    }
    PyObject *r = PyObject_CallMethodNoArgs(self, st->str_dtype);
    if (r == NULL) {
        return SW_DTYPE_ANY;
    }
    sw_dtype d = SW_DTYPE_ANY;
    int rc = swpy_dtype_from_py(st, r, &d);
    if (rc == 0) {
        PyErr_Format(PyExc_TypeError,
                     "%.200s.dtype() must return a DType, not '%.200s'",
                     Py_TYPE(self)->tp_name, Py_TYPE(r)->tp_name);
    }
    Py_DECREF(r);
    return rc == 1 ? d : SW_DTYPE_ANY;
}

static int hook_is_mutable_body(sw_carrier *c) {
    swpy_state *st;
    PyObject *self = hook_self(c, &st);
    if (self == NULL) {
        return 0;
    }
    PyObject *method = NULL;
    if (optional_hook(self, st->str_is_mutable_hook, &method) <= 0) {
        return 0; /* the default: not mutable (or the error stays set) */
    }
    PyObject *r = PyObject_CallNoArgs(method);
    Py_DECREF(method);
    if (r == NULL) {
        return 0;
    }
    int truth = PyObject_IsTrue(r);
    Py_DECREF(r);
    return truth > 0;
}

/* Set on this thread while Carrier.release() runs the library's release. */
static _Thread_local int direct_release;

/*
 * The _release hook. The library runs the release slot when a carrier is
 * released and unpinned: inside Carrier.release() on this thread, whose
 * caller then sees the hook's exception; or elsewhere (a move's commit,
 * the last reader of a released carrier, garbage collection), where the
 * release has already happened for everyone and an exception has no
 * caller to go to: it is reported through sys.unraisablehook.
 */
static void hook_release_body(sw_carrier *c) {
    swpy_state *st;
    PyObject *self = hook_self(c, &st);
    if (self == NULL) {
        return;
    }
    PyObject *method = NULL;
    if (optional_hook(self, st->str_release_hook, &method) <= 0) {
        if (!direct_release && PyErr_Occurred()) {
            PyErr_WriteUnraisable(self);
        }
        return;
    }
    PyObject *r = PyObject_CallNoArgs(method);
    if (r == NULL && !direct_release) {
        PyErr_WriteUnraisable(method);
    }
    Py_DECREF(method);
    Py_XDECREF(r);
}

static void hook_destroy(sw_carrier *c) {
    PyMem_RawFree(sw_carrier_state(c));
}

static sw_carrier *base_of(PyObject *self);

/* The carrier a Python factory hook returned, retained for the library. */
static sw_status hook_result(PyObject *self, const char *hook, PyObject *r,
                             sw_carrier **out) {
    if (r == NULL) {
        return HOOK_FAILED;
    }
    swpy_state *st = swpy_state_of_type(Py_TYPE(self));
    sw_carrier *rc = NULL;
    if (st != NULL && !swpy_is_carrier(st, r)) {
        PyErr_Format(PyExc_TypeError,
                     "%.200s.%s() must return a Carrier, not '%.200s'",
                     Py_TYPE(self)->tp_name, hook, Py_TYPE(r)->tp_name);
    } else if (st != NULL) {
        rc = base_of(r);
    }
    if (rc == NULL) {
        Py_DECREF(r);
        return HOOK_FAILED;
    }
    /* The library's reference keeps the object alive through its peer. */
    *out = sw_carrier_retain(rc);
    Py_DECREF(r);
    return SW_OK;
}

/* Calls self.<name>(*args, **kwargs) with kwargs built from pairs. */
static PyObject *call_with_kwargs(PyObject *self, PyObject *name,
                                  PyObject *args, PyObject *kwargs) {
    PyObject *method = PyObject_GetAttr(self, name);
    if (method == NULL) {
        return NULL;
    }
    PyObject *r = PyObject_Call(method, args, kwargs);
    Py_DECREF(method);
    return r;
}

static sw_status hook_allocate_like_body(sw_carrier *c, int64_t size,
                                         int mutable_, sw_dtype dtype,
                                         int empty, sw_carrier **out) {
    swpy_state *st;
    PyObject *self = hook_self(c, &st);
    if (self == NULL) {
        return HOOK_FAILED;
    }
    PyObject *dt = swpy_dtype_to_py(st, dtype);
    if (dt == NULL) {
        return HOOK_FAILED;
    }
    PyObject *args = Py_BuildValue("(L)", (long long)size);
    PyObject *kwargs = Py_BuildValue(
        "{OOOOOO}", st->str_mutable, mutable_ ? Py_True : Py_False,
        st->str_dtype, dt, st->str_empty, empty ? Py_True : Py_False);
    Py_DECREF(dt);
    PyObject *r = NULL;
    if (args != NULL && kwargs != NULL) {
        r = call_with_kwargs(self, st->str_allocate_like, args, kwargs);
    }
    Py_XDECREF(args);
    Py_XDECREF(kwargs);
    return hook_result(self, "allocate_like", r, out);
}

static sw_status hook_new_like_body(sw_carrier *c, int64_t n,
                                    const sw_value *values, int mutable_,
                                    sw_dtype dtype, sw_carrier **out) {
    swpy_state *st;
    PyObject *self = hook_self(c, &st);
    if (self == NULL) {
        return HOOK_FAILED;
    }
    if (n > PY_SSIZE_T_MAX) {
        PyErr_NoMemory();
        return HOOK_FAILED;
    }
    PyObject *list = PyList_New((Py_ssize_t)n);
    if (list == NULL) {
        return HOOK_FAILED;
    }
    for (int64_t i = 0; i < n; i++) {
        PyObject *item = swpy_value_new_ref(&values[i]);
        if (item == NULL) {
            Py_DECREF(list);
            return HOOK_FAILED;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, item);
    }
    PyObject *args = PyTuple_Pack(1, list);
    Py_DECREF(list);
    PyObject *kwargs =
        Py_BuildValue("{OO}", st->str_mutable, mutable_ ? Py_True : Py_False);
    /*
     * The library has resolved "the carrier's own dtype" already. The base
     * signature is new_like(values, *, mutable=True); pass dtype only when
     * it differs from the carrier's, so that hooks written to the base
     * signature keep working.
     */
    if (kwargs != NULL && dtype != hook_dtype_body(c) && !PyErr_Occurred()) {
        PyObject *dt = swpy_dtype_to_py(st, dtype);
        if (dt == NULL || PyDict_SetItem(kwargs, st->str_dtype, dt) < 0) {
            Py_CLEAR(kwargs);
        }
        Py_XDECREF(dt);
    }
    PyObject *r = NULL;
    if (args != NULL && kwargs != NULL && !PyErr_Occurred()) {
        r = call_with_kwargs(self, st->str_new_like, args, kwargs);
    }
    Py_XDECREF(args);
    Py_XDECREF(kwargs);
    return hook_result(self, "new_like", r, out);
}

/*
 * One integer of the dict dlpack_info returned: KeyError naming the key
 * when it is missing; a non-integer fails with TypeError and a value out
 * of range with OverflowError.
 */
static int info_item(PyObject *info, const char *key, PyObject **out) {
    PyObject *name = PyUnicode_FromString(key);
    if (name == NULL) {
        return -1;
    }
    PyObject *v = PyDict_GetItemWithError(info, name);
    if (v == NULL) {
        if (!PyErr_Occurred()) {
            PyErr_SetObject(PyExc_KeyError, name);
        }
        Py_DECREF(name);
        return -1;
    }
    Py_DECREF(name);
    *out = PyNumber_Index(v);
    return *out == NULL ? -1 : 0;
}

static int info_int32(PyObject *info, const char *key, int32_t *out) {
    PyObject *v = NULL;
    if (info_item(info, key, &v) < 0) {
        return -1;
    }
    long x = PyLong_AsLong(v);
    Py_DECREF(v);
    if (x == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (x < INT32_MIN || x > INT32_MAX) {
        PyErr_Format(PyExc_OverflowError,
                     "dlpack_info()['%s'] is out of int32 range", key);
        return -1;
    }
    *out = (int32_t)x;
    return 0;
}

/*
 * self.dlpack_info(): the base method refuses (BufferError), an override
 * returns something dict() accepts with the keys pointer, device_type and
 * device_id (more keys are ignored). Its own exceptions propagate.
 */
static sw_status call_dlpack_info(PyObject *self, void **pointer,
                                  int32_t *device_type, int32_t *device_id) {
    PyObject *r = PyObject_CallMethod(self, "dlpack_info", NULL);
    if (r == NULL) {
        return HOOK_FAILED;
    }
    PyObject *info = PyDict_Check(r)
                         ? Py_NewRef(r)
                         : PyObject_CallOneArg((PyObject *)&PyDict_Type, r);
    if (info == NULL) {
        if (PyErr_ExceptionMatches(PyExc_TypeError) ||
            PyErr_ExceptionMatches(PyExc_ValueError)) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError,
                         "%.200s.dlpack_info() must return a dict, not "
                         "'%.200s'",
                         Py_TYPE(self)->tp_name, Py_TYPE(r)->tp_name);
        }
        Py_DECREF(r);
        return HOOK_FAILED;
    }
    Py_DECREF(r);
    PyObject *p = NULL;
    int rc = info_item(info, "pointer", &p);
    void *address = NULL;
    if (rc == 0) {
        address = PyLong_AsVoidPtr(p);
        Py_DECREF(p);
        rc = address == NULL && PyErr_Occurred() ? -1 : 0;
    }
    int32_t type = 0, id = 0;
    if (rc == 0) {
        rc = info_int32(info, "device_type", &type);
    }
    if (rc == 0) {
        rc = info_int32(info, "device_id", &id);
    }
    Py_DECREF(info);
    if (rc < 0) {
        return HOOK_FAILED;
    }
    *pointer = address;
    *device_type = type;
    *device_id = id;
    return SW_OK;
}

static sw_status hook_dlpack_info_body(sw_carrier *c, void **pointer,
                                       int32_t *device_type,
                                       int32_t *device_id) {
    swpy_state *st;
    PyObject *self = hook_self(c, &st);
    if (self == NULL) {
        return HOOK_FAILED;
    }
    return call_dlpack_info(self, pointer, device_type, device_id);
}

/* The slots as the library calls them: each takes the GIL for its
 * whole body (see gil.h). */

static int64_t hook_size(sw_carrier *c) {
    swpy_gil g = swpy_gil_ensure();
    int64_t r = hook_size_body(c);
    swpy_gil_release(g);
    return r;
}

static sw_status hook_get(sw_carrier *c, int64_t i, sw_value *out) {
    swpy_gil g = swpy_gil_ensure();
    sw_status r = hook_get_body(c, i, out);
    swpy_gil_release(g);
    return r;
}

static sw_status hook_set(sw_carrier *c, int64_t i, const sw_value *v) {
    swpy_gil g = swpy_gil_ensure();
    sw_status r = hook_set_body(c, i, v);
    swpy_gil_release(g);
    return r;
}

static sw_dtype hook_dtype(sw_carrier *c) {
    swpy_gil g = swpy_gil_ensure();
    sw_dtype r = hook_dtype_body(c);
    swpy_gil_release(g);
    return r;
}

static int hook_is_mutable(sw_carrier *c) {
    swpy_gil g = swpy_gil_ensure();
    int r = hook_is_mutable_body(c);
    swpy_gil_release(g);
    return r;
}

static void hook_release(sw_carrier *c) {
    swpy_gil g = swpy_gil_ensure();
    hook_release_body(c);
    swpy_gil_release(g);
}

static sw_status hook_allocate_like(sw_carrier *c, int64_t size, int mutable_,
                                    sw_dtype dtype, int empty,
                                    sw_carrier **out) {
    swpy_gil g = swpy_gil_ensure();
    sw_status r = hook_allocate_like_body(c, size, mutable_, dtype, empty, out);
    swpy_gil_release(g);
    return r;
}

static sw_status hook_new_like(sw_carrier *c, int64_t n, const sw_value *values,
                               int mutable_, sw_dtype dtype, sw_carrier **out) {
    swpy_gil g = swpy_gil_ensure();
    sw_status r = hook_new_like_body(c, n, values, mutable_, dtype, out);
    swpy_gil_release(g);
    return r;
}

static sw_status hook_dlpack_info(sw_carrier *c, void **pointer,
                                  int32_t *device_type, int32_t *device_id) {
    swpy_gil g = swpy_gil_ensure();
    sw_status r = hook_dlpack_info_body(c, pointer, device_type, device_id);
    swpy_gil_release(g);
    return r;
}

/*
 * The dlpack_info route of a Python subclass of a built-in backend: its
 * dlpack_info method, an override or the backend's own. Without its
 * object (gone, or the module cleared at shutdown) the backend's slot
 * answers.
 */
static sw_status route_dlpack_info(sw_carrier *c, void *ctx, void **pointer,
                                   int32_t *device_type, int32_t *device_id) {
    swpy_gil g = swpy_gil_ensure();
    sw_status r;
    PyObject *self = sw_carrier_get_peer(c);
    swpy_state *st = self != NULL ? swpy_state_of_type(Py_TYPE(self)) : NULL;
    if (PyErr_Occurred()) {
        r = HOOK_FAILED;
    } else if (st != NULL && st->str_size != NULL) {
        r = call_dlpack_info(self, pointer, device_type, device_id);
    } else {
        const sw_carrier_class *cls = sw_carrier_get_class(c);
        r = cls->dlpack_info != NULL
                ? cls->dlpack_info(c, pointer, device_type, device_id)
                : sw_set_error(SW_EBUFFER,
                               "DLPack is not supported for this carrier");
    }
    swpy_gil_release(g);
    return r;
}

static const sw_carrier_class python_class = {
    .version = SW_CARRIER_CLASS_VERSION,
    .name = "Carrier",
    .size = hook_size,
    .get = hook_get,
    .set = hook_set,
    .dtype = hook_dtype,
    .is_mutable = hook_is_mutable,
    .release = hook_release,
    .destroy = hook_destroy,
    .allocate_like = hook_allocate_like,
    .new_like = hook_new_like,
    .dlpack_info = hook_dlpack_info,
};

/* -------------------------------------------------------- carrier objects */

int swpy_is_carrier(swpy_state *st, PyObject *o) {
    return PyObject_TypeCheck(o, st->carrier_type);
}

sw_carrier *swpy_carrier_of(PyObject *self, const char *name) {
    sw_carrier *c = CARRIER(self);
    if (c == NULL) {
        PyErr_Format(PyExc_TypeError,
                     "%s.__init__() must be called when overriding "
                     "__init__",
                     name);
    }
    return c;
}

sw_carrier *swpy_backend_of(PyObject *self, int (*is)(const sw_carrier *),
                            const char *name) {
    sw_carrier *c = swpy_carrier_of(self, name);
    if (c != NULL && !is(c)) {
        PyErr_Format(PyExc_TypeError, "a %s method needs a %s carrier", name,
                     name);
        return NULL;
    }
    return c;
}

/* The exact built-in type of c's backend, or NULL for another backend. */
static PyTypeObject *backend_type(swpy_state *st, const sw_carrier *c) {
    return sw_carrier_is_cpu(c)         ? st->cpu_type
           : sw_carrier_is_generic(c)   ? st->generic_type
           : sw_carrier_is_file(c)      ? st->file_type
           : sw_carrier_is_blockdev(c)  ? st->blockdev_type
           : sw_carrier_is_evictable(c) ? st->evictable_type
           : sw_carrier_is_tiled(c)     ? st->tiled_type
           : sw_carrier_is_opencl(c)    ? st->opencl_type
                                        : NULL;
}

PyObject *swpy_backend_new_like(const swpy_backend *b, PyObject *self,
                                PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"values", "mutable", "dtype", NULL};
    PyObject *values = NULL, *dtype_obj = Py_None;
    int mutable_ = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|$pO:new_like", kwlist,
                                     &values, &mutable_, &dtype_obj)) {
        return NULL;
    }
    sw_carrier *c = swpy_backend_of(self, b->is, b->name);
    swpy_state *st = swpy_state_of_type(Py_TYPE(self));
    if (c == NULL || st == NULL) {
        return NULL;
    }
    if (b->exact_new_like && Py_TYPE(self) != backend_type(st, c)) {
        PyErr_Format(PyExc_NotImplementedError,
                     "%s carrier factory only supports exact %s carriers",
                     b->name, b->name);
        return NULL;
    }
    sw_dtype dtype;
    if (swpy_dtype_arg(st, dtype_obj, b->name, b->dtype_type_error, &dtype) <
        0) {
        return NULL;
    }
    /* Numbers are converted for the dtype of the result (the carrier's
     * own by default); host references need none. */
    int numeric = is_numeric_backend(value_store_of(c));
    sw_dtype target = !numeric                  ? SW_DTYPE_ANY
                      : dtype == SW_DTYPE_COUNT ? sw_carrier_dtype(c)
                                                : dtype;
    swpy_values vals;
    if (swpy_values_init(&vals, values, numeric, target) < 0) {
        return NULL;
    }
    /* Host entries are converted through Python (the GIL is needed);
     * numbers alone can be written without it. */
    int nogil =
        !vals.has_host && (b->gil == SWPY_GIL_ALWAYS ||
                           (b->gil == SWPY_GIL_BULK && swpy_bulk(vals.n)));
    sw_carrier *out = NULL;
    sw_status s;
    if (nogil) {
        Py_BEGIN_ALLOW_THREADS;
        s = sw_carrier_new_like(c, vals.n, vals.items, mutable_, dtype, &out);
        Py_END_ALLOW_THREADS;
    } else {
        s = sw_carrier_new_like(c, vals.n, vals.items, mutable_, dtype, &out);
    }
    swpy_values_free(&vals);
    if (s != SW_OK) {
        return swpy_raise(s);
    }
    return swpy_carrier_wrap(st, out);
}

PyObject *swpy_backend_allocate_like(const swpy_backend *b, PyObject *self,
                                     PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"size", "mutable", "dtype", "empty", NULL};
    PyObject *size_obj = NULL, *dtype_obj = Py_None;
    int mutable_ = 1, empty = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|$pOp:allocate_like", kwlist,
                                     &size_obj, &mutable_, &dtype_obj,
                                     &empty)) {
        return NULL;
    }
    sw_carrier *c = swpy_backend_of(self, b->is, b->name);
    swpy_state *st = swpy_state_of_type(Py_TYPE(self));
    int64_t size = 0;
    sw_dtype dtype;
    if (c == NULL || st == NULL ||
        swpy_alloc_size_arg(c, size_obj, &size) < 0 ||
        swpy_dtype_arg(st, dtype_obj, b->name, b->dtype_type_error, &dtype) <
            0) {
        return NULL;
    }
    int nogil = b->gil == SWPY_GIL_ALWAYS ||
                (b->gil == SWPY_GIL_BULK && swpy_bulk(size));
    sw_carrier *out = NULL;
    sw_status s;
    if (nogil) {
        Py_BEGIN_ALLOW_THREADS;
        s = sw_carrier_allocate_like(c, size, mutable_, dtype, empty, &out);
        Py_END_ALLOW_THREADS;
    } else {
        s = sw_carrier_allocate_like(c, size, mutable_, dtype, empty, &out);
    }
    if (s != SW_OK) {
        return swpy_raise(s);
    }
    return swpy_carrier_wrap(st, out);
}

int swpy_backend_scatter_args(const swpy_backend *b, PyObject *self,
                              PyObject *args, PyObject *kwds,
                              swpy_scatter_args *out) {
    static char *kwlist[] = {"to_scatter", "scatter_onto", "mapping",
                             "mapping_offset", NULL};
    out->offset = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOO|O:scatter", kwlist,
                                     &out->src, &out->onto, &out->mapping,
                                     &out->offset)) {
        return -1;
    }
    out->carrier = swpy_backend_of(self, b->is, b->name);
    out->st = swpy_state_of_type(Py_TYPE(self));
    return out->carrier == NULL || out->st == NULL ? -1 : 0;
}

int swpy_add_type(PyObject *module, PyType_Spec *spec, PyTypeObject *base,
                  PyTypeObject **out) {
    PyObject *type = PyType_FromModuleAndSpec(module, spec, (PyObject *)base);
    if (type == NULL) {
        return -1;
    }
    *out = (PyTypeObject *)type;
    return PyModule_AddType(module, *out);
}

int swpy_carrier_adopt(PyObject *self, sw_carrier *owned, const char *name) {
    /* Tensor objects over an object that let go of its carrier (cleared by
     * the collector) still name it: it may not take another. */
    if (CARRIER(self) != NULL || ((CarrierObject *)self)->tensor_peers != 0) {
        sw_carrier_unref(owned);
        PyErr_Format(PyExc_RuntimeError,
                     "%s.__init__() must not be called twice", name);
        return -1;
    }
    CARRIER(self) = owned;
    sw_carrier_set_peer(owned, self, &peer_hooks);
    /* A Python subclass dispatches through _dispatch_op (its override, or
     * the backend's table) and tags operations with its own class. */
    swpy_state *st = swpy_state_of_type(Py_TYPE(self));
    if (st == NULL) {
        return -1;
    }
    PyTypeObject *type = Py_TYPE(self);
    if (type != st->cpu_type && type != st->generic_type &&
        type != st->file_type && type != st->evictable_type &&
        type != st->blockdev_type && type != st->opencl_type) {
        /* Its dlpack_info method decides, as it does for Carrier
         * subclasses through their vtable. */
        sw_carrier_set_dlpack_route(owned, route_dlpack_info, NULL);
        if (swpy_carrier_install_dispatch(st, self, owned) < 0) {
            return -1;
        }
        return swpy_capability_constructed(self);
    }
    return 0;
}

/* Lets go of the carrier: the object stops being its peer. */
/*
 * A definition-backed carrier going with its object gives its storage
 * back through the provider while the object (and the attributes the
 * provider keeps on it) still exists: the finalizer runs before a
 * subclass's instance dictionary is cleared. Only when the object holds
 * the last reference: storage the library still uses stays.
 */
static void carrier_finalize(PyObject *self) {
    sw_carrier *c = CARRIER(self);
    if (c == NULL || !sw_carrier_is_defined(c) ||
        !sw_carrier_defined_is_allocated(c) || sw_carrier_is_released(c) ||
        sw_carrier_refcount(c) > 1) {
        return;
    }
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    if (sw_carrier_release_storage(c) != SW_OK) {
        if (!PyErr_Occurred()) {
            swpy_raise(sw_errcode());
        }
        PyErr_WriteUnraisable(self);
    }
    PyErr_Restore(type, value, tb);
}

static void carrier_drop(PyObject *self) {
    sw_carrier *c = CARRIER(self);
    if (c == NULL) {
        return;
    }
    CARRIER(self) = NULL;
    if (swpy_carrier_is_python(c)) {
        /* The object's methods must not run from here on, not even
         * _release when the library destroys the carrier. */
        ((py_state *)sw_carrier_state(c))->self = NULL;
    }
    sw_carrier_set_peer(c, NULL, NULL);
    sw_carrier_unref(c);
}

PyObject *swpy_carrier_wrap(swpy_state *st, sw_carrier *owned) {
    PyObject *peer = sw_carrier_get_peer(owned);
    if (peer != NULL) {
        Py_INCREF(peer);
        sw_carrier_unref(owned);
        return peer;
    }
    PyTypeObject *type = backend_type(st, owned);
    if (type == NULL) {
        sw_carrier_unref(owned);
        PyErr_SetString(PyExc_SystemError,
                        "strideweave: a carrier of an unknown backend");
        return NULL;
    }
    PyObject *self = type->tp_alloc(type, 0);
    if (self == NULL) {
        sw_carrier_unref(owned);
        return NULL;
    }
    CARRIER(self) = owned;
    sw_carrier_set_peer(owned, self, &peer_hooks);
    return self;
}

PyObject *swpy_backend_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    return type->tp_alloc(type, 0);
}

/* Carrier() and Python subclasses: an sw_carrier over the Python hooks. */
static PyObject *carrier_tp_new(PyTypeObject *type, PyObject *args,
                                PyObject *kwds) {
    swpy_state *st = swpy_state_of_type(type);
    if (st == NULL) {
        return NULL;
    }
    if (PyType_IsSubtype(type, st->cpu_type) ||
        PyType_IsSubtype(type, st->generic_type) ||
        PyType_IsSubtype(type, st->file_type) ||
        PyType_IsSubtype(type, st->evictable_type) ||
        PyType_IsSubtype(type, st->blockdev_type) ||
        PyType_IsSubtype(type, st->opencl_type)) {
        /* Carrier.__new__(CPU): the built-in backends make their own. */
        PyErr_Format(PyExc_TypeError,
                     "Carrier.__new__(%.200s) is not safe, use "
                     "%.200s.__new__()",
                     type->tp_name, type->tp_name);
        return NULL;
    }
    if (swpy_carrier_defined_tag(st, type)) {
        return swpy_carrier_defined_new(st, type);
    }
    PyObject *self = type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    py_state *ps = PyMem_RawMalloc(sizeof *ps);
    if (ps == NULL) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    ps->self = self;
    sw_carrier *c = NULL;
    sw_status s = sw_carrier_new(&python_class, ps, SW_DTYPE_ANY, &c);
    if (s != SW_OK) {
        PyMem_RawFree(ps);
        Py_DECREF(self);
        return swpy_raise(s);
    }
    CARRIER(self) = c;
    sw_carrier_set_peer(c, self, &peer_hooks);
    if (swpy_carrier_install_dispatch(st, self, c) < 0 ||
        swpy_capability_constructed(self) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    return self;
}

static int carrier_tp_init(PyObject *self, PyObject *args, PyObject *kwds) {
    sw_carrier *c = ((CarrierObject *)self)->carrier;
    if (c != NULL && sw_carrier_is_defined(c)) {
        return swpy_carrier_defined_init(self, args, kwds);
    }
    if (PyTuple_GET_SIZE(args) != 0 ||
        (kwds != NULL && PyDict_GET_SIZE(kwds))) {
        PyErr_Format(PyExc_TypeError,
                     "Carrier() takes no arguments: %.200s has no "
                     "CarrierDefinition of its own (definition-free Carrier "
                     "construction)",
                     Py_TYPE(self)->tp_name);
        return -1;
    }
    return 0;
}

void swpy_carrier_dealloc(PyObject *self) {
    PyTypeObject *type = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    if (((CarrierObject *)self)->weakreflist != NULL) {
        PyObject_ClearWeakRefs(self);
    }
    carrier_drop(self);
    type->tp_free(self);
    Py_DECREF(type);
}

int swpy_carrier_traverse(PyObject *self, visitproc visit, void *arg) {
    Py_VISIT(Py_TYPE(self));
    /* A Generic store, an Evictable's tiers, and the toggle reference when
     * tensor objects explain it (see gc.c). */
    return swpy_gc_traverse_carrier(self, visit, arg);
}

int swpy_carrier_clear(PyObject *self) {
    /*
     * An unreachable carrier object's carrier is garbage too (see gc.c):
     * other holders may still release it later, without its object.
     */
    carrier_drop(self);
    return 0;
}

/* --------------------------------------------------------- base methods */

static sw_carrier *base_of(PyObject *self) {
    const char *name = Py_TYPE(self)->tp_name;
    const char *dot = strrchr(name, '.');
    return swpy_carrier_of(self, dot != NULL ? dot + 1 : name);
}

static PyObject *pure_virtual(const char *name) {
    PyErr_Format(PyExc_RuntimeError,
                 "Tried to call pure virtual function \"Carrier::%s\"", name);
    return NULL;
}

/* A definition-backed carrier's storage is the library's: the base
 * methods serve it; for other Python subclasses they are pure virtual. */
static int is_defined(PyObject *self) {
    sw_carrier *c = ((CarrierObject *)self)->carrier;
    return c != NULL && sw_carrier_is_defined(c);
}

static const swpy_backend defined_backend = {"Carrier", sw_carrier_is_defined,
                                             0, 1, SWPY_GIL_KEEP};

static PyObject *carrier_size(PyObject *self, PyObject *args, PyObject *kw) {
    return is_defined(self) ? swpy_carrier_size(self, NULL)
                            : pure_virtual("size");
}
static PyObject *carrier_dtype(PyObject *self, PyObject *args, PyObject *kw) {
    return is_defined(self) ? swpy_carrier_dtype(self, NULL)
                            : pure_virtual("dtype");
}
static PyObject *carrier_get_value(PyObject *self, PyObject *args,
                                   PyObject *kw) {
    if (!is_defined(self)) {
        return pure_virtual("get_value");
    }
    PyObject *index;
    if (!PyArg_ParseTuple(args, "O:get_value", &index)) {
        return NULL;
    }
    return swpy_carrier_get_value(self, index);
}
static PyObject *carrier_new_like(PyObject *self, PyObject *args,
                                  PyObject *kw) {
    return is_defined(self)
               ? swpy_backend_new_like(&defined_backend, self, args, kw)
               : pure_virtual("new_like");
}
static PyObject *carrier_allocate_like(PyObject *self, PyObject *args,
                                       PyObject *kw) {
    return is_defined(self)
               ? swpy_backend_allocate_like(&defined_backend, self, args, kw)
               : pure_virtual("allocate_like");
}
/* A definition-backed carrier scatters through its provider's writes
 * (the library's loop; the GIL stays held for Python providers). */
static PyObject *carrier_scatter(PyObject *self, PyObject *args, PyObject *kw) {
    if (!is_defined(self)) {
        return pure_virtual("scatter");
    }
    swpy_scatter_args a;
    if (swpy_backend_scatter_args(&defined_backend, self, args, kw, &a) < 0) {
        return NULL;
    }
    int64_t offset = 0;
    if (a.offset != NULL && swpy_index_arg(a.offset, &offset) < 0) {
        return NULL;
    }
    if (!swpy_is_tensor(a.st, a.onto)) {
        PyErr_SetString(PyExc_TypeError, "scatter_onto must be a Tensor");
        return NULL;
    }
    if (!swpy_is_tensor(a.st, a.src)) {
        PyErr_SetString(PyExc_TypeError, "to_scatter must be a Tensor");
        return NULL;
    }
    if (!swpy_is_layout(a.st, a.mapping)) {
        PyErr_SetString(PyExc_TypeError, "mapping must be a Layout");
        return NULL;
    }
    sw_tensor *onto = swpy_tensor_of(a.onto), *src = swpy_tensor_of(a.src);
    if (onto == NULL || src == NULL) {
        return NULL;
    }
    sw_status s = sw_carrier_scatter(a.carrier, src, onto,
                                     swpy_layout_get(a.mapping), offset);
    return s == SW_OK ? Py_NewRef(Py_None) : swpy_raise(s);
}

static PyObject *carrier_is_mutable(PyObject *self, PyObject *unused) {
    sw_carrier *c = base_of(self);
    if (c == NULL) {
        return NULL;
    }
    int r = sw_carrier_is_mutable(c);
    if (PyErr_Occurred()) {
        return NULL;
    }
    return PyBool_FromLong(r);
}

static PyObject *carrier_is_owned(PyObject *self, PyObject *unused) {
    sw_carrier *c = base_of(self);
    return c == NULL ? NULL : PyBool_FromLong(sw_carrier_is_owned(c));
}

static PyObject *carrier_is_released(PyObject *self, PyObject *unused) {
    sw_carrier *c = base_of(self);
    return c == NULL ? NULL : PyBool_FromLong(sw_carrier_is_released(c));
}

static PyObject *carrier_get_version(PyObject *self, void *closure) {
    sw_carrier *c = base_of(self);
    return c == NULL ? NULL : PyLong_FromLongLong(sw_carrier_version(c));
}

static PyObject *carrier_increment_version(PyObject *self, PyObject *unused) {
    sw_carrier *c = base_of(self);
    if (c == NULL) {
        return NULL;
    }
    sw_status s = sw_carrier_bump_version(c);
    if (s != SW_OK) {
        return swpy_raise(s);
    }
    Py_RETURN_NONE;
}

static PyObject *carrier_release(PyObject *self, PyObject *unused) {
    sw_carrier *c = base_of(self);
    if (c == NULL) {
        return NULL;
    }
    /* Work on other threads that reads this carrier holds pins: the
     * library frees the storage when the last one goes (see
     * sw_carrier_pin), so release never has to be refused. */
    direct_release = 1;
    sw_status s = sw_carrier_release_storage(c);
    direct_release = 0;
    if (swpy_check(s) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *carrier_dlpack_info(PyObject *self, PyObject *unused) {
    PyErr_SetString(PyExc_BufferError,
                    "DLPack is not supported for this carrier");
    return NULL;
}

static PyObject *carrier_claim_ownership(PyObject *self, PyObject *unused) {
    sw_carrier *c = base_of(self);
    if (c == NULL) {
        return NULL;
    }
    int64_t token = 0;
    sw_status s = sw_carrier_claim(c, &token);
    if (s != SW_OK) {
        return swpy_raise(s);
    }
    return PyLong_FromLongLong(token);
}

typedef sw_status (*token_fn)(sw_carrier *c, int64_t token);

static PyObject *with_token(PyObject *self, PyObject *arg, token_fn fn) {
    sw_carrier *c = base_of(self);
    if (c == NULL) {
        return NULL;
    }
    /* A token outside int64 is never valid: the library says so. */
    int64_t token = 0;
    if (swpy_index_arg(arg, &token) < 0) {
        return NULL;
    }
    if (token == INT64_MAX || token == INT64_MIN) {
        token = 0;
    }
    sw_status s = fn(c, token);
    if (s != SW_OK) {
        return swpy_raise(s);
    }
    Py_RETURN_NONE;
}

static PyObject *carrier_relinquish_ownership(PyObject *self, PyObject *arg) {
    return with_token(self, arg, sw_carrier_relinquish);
}

static PyObject *carrier_begin_owner_access(PyObject *self, PyObject *arg) {
    return with_token(self, arg, sw_carrier_begin_owner_access);
}

static PyObject *carrier_end_owner_access(PyObject *self, PyObject *arg) {
    return with_token(self, arg, sw_carrier_end_owner_access);
}

static PyObject *carrier_has_owner_access(PyObject *self, PyObject *unused) {
    sw_carrier *c = base_of(self);
    return c == NULL ? NULL : PyBool_FromLong(sw_carrier_has_owner_access(c));
}

/* carrier[i]: an int index (no wraparound; the library checks it). */
static int item_index(PyObject *key, int64_t *out) {
    if (PyFloat_Check(key) || !has_index(key)) {
        PyErr_Format(PyExc_TypeError,
                     "Carrier indices must be integers, not '%.200s'",
                     Py_TYPE(key)->tp_name);
        return -1;
    }
    return swpy_index_arg(key, out);
}

static PyObject *carrier_item(PyObject *self, int64_t i) {
    sw_carrier *c = base_of(self);
    if (c == NULL) {
        return NULL;
    }
    sw_value v;
    if (swpy_check(sw_carrier_get(c, i, &v)) < 0) {
        return NULL;
    }
    return swpy_value_to_py(c, &v);
}

static PyObject *carrier_subscript(PyObject *self, PyObject *key) {
    int64_t i = 0;
    if (item_index(key, &i) < 0) {
        return NULL;
    }
    return carrier_item(self, i);
}

/* Old-style iteration (list(carrier)) ends at the IndexError. */
static PyObject *carrier_sq_item(PyObject *self, Py_ssize_t i) {
    return carrier_item(self, (int64_t)i);
}

static int carrier_ass_subscript(PyObject *self, PyObject *key,
                                 PyObject *value) {
    if (value == NULL) {
        PyErr_SetString(PyExc_TypeError, "Carrier elements cannot be deleted");
        return -1;
    }
    int64_t i = 0;
    if (item_index(key, &i) < 0) {
        return -1;
    }
    sw_carrier *c = base_of(self);
    if (c == NULL) {
        return -1;
    }
    sw_value v;
    if (swpy_value_for(c, value, &v) < 0) {
        return -1;
    }
    return swpy_check(sw_carrier_set(c, i, &v));
}

/* ------------------------------------- shared methods of the backends */

PyObject *swpy_carrier_size(PyObject *self, PyObject *unused) {
    sw_carrier *c = base_of(self);
    if (c == NULL) {
        return NULL;
    }
    int64_t n = sw_carrier_size(c);
    if (PyErr_Occurred()) {
        return NULL;
    }
    return PyLong_FromLongLong(n);
}

PyObject *swpy_carrier_dtype(PyObject *self, PyObject *unused) {
    sw_carrier *c = base_of(self);
    if (c == NULL) {
        return NULL;
    }
    swpy_state *st = swpy_state_of_type(Py_TYPE(self));
    return st == NULL ? NULL : swpy_dtype_to_py(st, sw_carrier_dtype(c));
}

PyObject *swpy_carrier_get_value(PyObject *self, PyObject *index) {
    int64_t i = 0;
    if (swpy_index_arg(index, &i) < 0) {
        return NULL;
    }
    return carrier_item(self, i);
}

PyObject *swpy_carrier_set_value(PyObject *self, PyObject *const *args,
                                 Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError,
                     "set_value() takes exactly 2 arguments (%zd given)",
                     nargs);
        return NULL;
    }
    int64_t i = 0;
    if (swpy_index_arg(args[0], &i) < 0) {
        return NULL;
    }
    sw_carrier *c = base_of(self);
    if (c == NULL) {
        return NULL;
    }
    sw_value v;
    if (swpy_value_for(c, args[1], &v) < 0 ||
        swpy_check(sw_carrier_set(c, i, &v)) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------ type spec */

#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
#endif

#define KW(f) ((PyCFunction)(void (*)(void))(f))

/* facet(T) / require_facet(T): the definition's facets are Python
 * values, found by the extension layer. */
static PyObject *facet_lookup(PyObject *self, PyObject *kind, int required) {
    PyObject *mod = PyImport_ImportModule("strideweave.carriers.extension");
    if (mod == NULL) {
        return NULL;
    }
    PyObject *r = PyObject_CallMethod(mod, "_carrier_facet", "OOO", self, kind,
                                      required ? Py_True : Py_False);
    Py_DECREF(mod);
    return r;
}

static PyObject *carrier_facet(PyObject *self, PyObject *kind) {
    return facet_lookup(self, kind, 0);
}

static PyObject *carrier_require_facet(PyObject *self, PyObject *kind) {
    return facet_lookup(self, kind, 1);
}

static PyMethodDef carrier_methods[] = {
    {"facet", carrier_facet, METH_O, NULL},
    {"require_facet", carrier_require_facet, METH_O, NULL},
    {"size", KW(carrier_size), METH_VARARGS | METH_KEYWORDS, NULL},
    {"dtype", KW(carrier_dtype), METH_VARARGS | METH_KEYWORDS, NULL},
    {"get_value", KW(carrier_get_value), METH_VARARGS | METH_KEYWORDS, NULL},
    {"new_like", KW(carrier_new_like), METH_VARARGS | METH_KEYWORDS, NULL},
    {"allocate_like", KW(carrier_allocate_like), METH_VARARGS | METH_KEYWORDS,
     NULL},
    {"scatter", KW(carrier_scatter), METH_VARARGS | METH_KEYWORDS, NULL},
    {"is_mutable", carrier_is_mutable, METH_NOARGS, NULL},
    {"is_owned", carrier_is_owned, METH_NOARGS, NULL},
    {"_increment_version", carrier_increment_version, METH_NOARGS, NULL},
    {"is_released", carrier_is_released, METH_NOARGS, NULL},
    {"release", carrier_release, METH_NOARGS, NULL},
    {"dlpack_info", carrier_dlpack_info, METH_NOARGS, NULL},
    {"_claim_ownership", carrier_claim_ownership, METH_NOARGS, NULL},
    {"_relinquish_ownership", carrier_relinquish_ownership, METH_O, NULL},
    {"_begin_owner_access", carrier_begin_owner_access, METH_O, NULL},
    {"_end_owner_access", carrier_end_owner_access, METH_O, NULL},
    {"_has_owner_access", carrier_has_owner_access, METH_NOARGS, NULL},
    {"dispatch_op", swpy_carrier_dispatch_op, METH_O, NULL},
    /* Capability and storage-dtype queries (policy.c). */
    {"operation_capabilities", KW(swpy_carrier_operation_capabilities),
     METH_VARARGS | METH_KEYWORDS, NULL},
    {"supports_operation_plan", swpy_carrier_supports_operation_plan, METH_O,
     NULL},
    {"unsupported_plan_reason", swpy_carrier_unsupported_plan_reason, METH_O,
     NULL},
    {"require_operation_plan", swpy_carrier_require_operation_plan, METH_O,
     NULL},
    {"supports_storage_dtype", swpy_carrier_supports_storage_dtype, METH_O,
     NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef carrier_getset[] = {
    {"version", carrier_get_version, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMemberDef carrier_members[] = {
    {"__weaklistoffset__", SWPY_T_PYSSIZET,
     offsetof(CarrierObject, weakreflist), SWPY_READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

/* Class, size, dtype and state (strideweave._show.carrier_repr): never
 * reads values, so a released or evicted carrier prints too. */
static PyObject *carrier_repr(PyObject *self) {
    PyObject *mod = PyImport_ImportModule("strideweave._show");
    if (mod == NULL) {
        return NULL;
    }
    PyObject *r = PyObject_CallMethod(mod, "carrier_repr", "O", self);
    Py_DECREF(mod);
    return r;
}

static PyType_Slot carrier_slots[] = {
    {Py_tp_repr, carrier_repr},
    {Py_tp_new, carrier_tp_new},
    {Py_tp_init, carrier_tp_init},
    {Py_tp_dealloc, swpy_carrier_dealloc},
    {Py_tp_finalize, carrier_finalize},
    {Py_tp_traverse, swpy_carrier_traverse},
    {Py_tp_clear, swpy_carrier_clear},
    {Py_tp_methods, carrier_methods},
    {Py_tp_getset, carrier_getset},
    {Py_tp_members, carrier_members},
    {Py_mp_subscript, carrier_subscript},
    {Py_mp_ass_subscript, carrier_ass_subscript},
    {Py_sq_item, carrier_sq_item},
    {0, NULL},
};

static PyType_Spec carrier_spec = {
    .name = "strideweave.carriers.base.Carrier",
    .basicsize = sizeof(CarrierObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC |
             Py_TPFLAGS_IMMUTABLETYPE,
    .slots = carrier_slots,
};

#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

static int intern(PyObject **slot, const char *text) {
    *slot = PyUnicode_InternFromString(text);
    return *slot == NULL ? -1 : 0;
}

int swpy_carrier_init_types(PyObject *module, swpy_state *st) {
    if (intern(&st->str_size, "size") < 0 ||
        intern(&st->str_dtype, "dtype") < 0 ||
        intern(&st->str_get_value, "get_value") < 0 ||
        intern(&st->str_set_value, "set_value") < 0 ||
        intern(&st->str_is_mutable_hook, "_is_mutable") < 0 ||
        intern(&st->str_release_hook, "_release") < 0 ||
        intern(&st->str_allocate_like, "allocate_like") < 0 ||
        intern(&st->str_new_like, "new_like") < 0 ||
        intern(&st->str_mutable, "mutable") < 0 ||
        intern(&st->str_empty, "empty") < 0) {
        return -1;
    }
    if (swpy_add_type(module, &carrier_spec, NULL, &st->carrier_type) < 0) {
        return -1;
    }
    if (swpy_cpu_init_type(module, st) < 0 ||
        swpy_generic_init_type(module, st) < 0 ||
        swpy_file_init_type(module, st) < 0 ||
        swpy_blockdev_init_types(module, st) < 0 ||
        swpy_opencl_init_type(module, st) < 0) {
        return -1;
    }
    return 0;
}

/* ------------------------------------------------ library-driven hooks */

/*
 * The library's own allocate_like and new_like policy on a carrier, for
 * tests: with a Python carrier they run its hooks as library code will
 * (operations allocate their results this way), with the library's dtype
 * resolution.
 */
PyObject *swpy_debug_allocate_like(PyObject *module, PyObject *const *args,
                                   Py_ssize_t nargs) {
    swpy_state *st = swpy_module_state(module);
    int64_t size = 0;
    sw_dtype dtype = SW_DTYPE_COUNT;
    if (nargs != 2 && nargs != 3) {
        PyErr_SetString(PyExc_TypeError,
                        "_debug_allocate_like(carrier, size, dtype=None)");
        return NULL;
    }
    if (!swpy_is_carrier(st, args[0])) {
        PyErr_SetString(PyExc_TypeError, "carrier must be a Carrier");
        return NULL;
    }
    sw_carrier *c = base_of(args[0]);
    if (c == NULL || swpy_index_arg(args[1], &size) < 0 ||
        (nargs == 3 && swpy_dtype_arg(st, args[2], "Carrier", 1, &dtype) < 0)) {
        return NULL;
    }
    sw_carrier *out = NULL;
    if (swpy_check(sw_carrier_allocate_like(c, size, 1, dtype, 0, &out)) < 0) {
        sw_carrier_unref(out);
        return NULL;
    }
    return swpy_carrier_wrap(st, out);
}

PyObject *swpy_debug_new_like(PyObject *module, PyObject *const *args,
                              Py_ssize_t nargs) {
    swpy_state *st = swpy_module_state(module);
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "_debug_new_like(carrier, values)");
        return NULL;
    }
    if (!swpy_is_carrier(st, args[0])) {
        PyErr_SetString(PyExc_TypeError, "carrier must be a Carrier");
        return NULL;
    }
    sw_carrier *c = base_of(args[0]);
    if (c == NULL) {
        return NULL;
    }
    int numeric = is_numeric_backend(c);
    swpy_values vals;
    if (swpy_values_init(&vals, args[1], numeric,
                         numeric ? sw_carrier_dtype(c) : SW_DTYPE_ANY) < 0) {
        return NULL;
    }
    sw_carrier *out = NULL;
    sw_status s =
        sw_carrier_new_like(c, vals.n, vals.items, 1, SW_DTYPE_COUNT, &out);
    swpy_values_free(&vals);
    if (swpy_check(s) < 0) {
        sw_carrier_unref(out);
        return NULL;
    }
    return swpy_carrier_wrap(st, out);
}
