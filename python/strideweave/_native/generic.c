/*
 * The Generic carrier type: the library's Generic carrier over a store of
 * Python objects.
 *
 * The binding supplies the host-value operations (swpy_host_ops): a store
 * is a Python sequence object itself (a list the caller passed is used as
 * an alias), values are object references, and the carrier's one
 * reference to the store is visited by the garbage collector through the
 * carrier object (see swpy_carrier_traverse).
 */
#include "py_carrier.h"

#include <math.h>
#include <string.h>

#include "errors.h"
#include "gil.h"
#include "py_layout.h"
#include "operation.h"
#include "py_tensor.h"

/* ----------------------------------------------------- host operations */

/* A failure status whose Python exception explains it (see swpy_raise). */
#define HOST_FAILED SW_ERUNTIME

static int64_t host_length_body(void *store) {
    if (PyErr_Occurred()) {
        return -(int64_t)HOST_FAILED;
    }
    /* Each call holds the store: the Python code it runs may release the
     * carrier, which drops the carrier's reference. */
    Py_INCREF((PyObject *)store);
    Py_ssize_t n = PyObject_Length((PyObject *)store);
    Py_DECREF((PyObject *)store);
    return n < 0 ? -(int64_t)HOST_FAILED : (int64_t)n;
}

/*
 * Generic kernels run with the GIL held and read every value through
 * host_get, so that is where a long one notices Ctrl-C: every few
 * thousand reads, the signal handlers run (on the main thread; elsewhere
 * PyErr_CheckSignals does nothing), and an exception they raise stops the
 * kernel like any failing read.
 */
#define SIGNAL_CHECK_READS 4096
static _Thread_local unsigned reads_since_check;

static sw_status host_get_body(void *store, int64_t i, sw_value *out) {
    PyObject *seq = store, *r;
    if (PyErr_Occurred()) {
        return HOST_FAILED;
    }
    if (++reads_since_check >= SIGNAL_CHECK_READS) {
        reads_since_check = 0;
        if (PyErr_CheckSignals() < 0) {
            return HOST_FAILED;
        }
    }
    if (PyList_CheckExact(seq) && i < PyList_GET_SIZE(seq)) {
        r = Py_NewRef(PyList_GET_ITEM(seq, (Py_ssize_t)i));
    } else {
        PyObject *key = PyLong_FromLongLong(i);
        if (key == NULL) {
            return HOST_FAILED;
        }
        Py_INCREF(seq);
        r = PyObject_GetItem(seq, key);
        Py_DECREF(seq);
        Py_DECREF(key);
        if (r == NULL) {
            return HOST_FAILED;
        }
    }
    memset(out, 0, sizeof *out);
    out->kind = SW_VALUE_HOST;
    out->as.host = r;
    out->ops = &swpy_host_ops;
    return SW_OK;
}

static sw_status host_set_body(void *store, int64_t i, const sw_value *v) {
    if (PyErr_Occurred()) {
        return HOST_FAILED;
    }
    PyObject *value = swpy_value_new_ref(v);
    if (value == NULL) {
        return HOST_FAILED;
    }
    PyObject *key = PyLong_FromLongLong(i);
    Py_INCREF((PyObject *)store);
    int rc = key != NULL ? PyObject_SetItem((PyObject *)store, key, value) : -1;
    Py_DECREF((PyObject *)store);
    Py_XDECREF(key);
    Py_DECREF(value);
    return rc < 0 ? HOST_FAILED : SW_OK;
}

/* A new list of n values; empty slots (and NULL values) are None. */
static sw_status host_make_body(const sw_host_ops *ops, int64_t n,
                                const sw_value *values, void **out) {
    if (n > PY_SSIZE_T_MAX) {
        PyErr_NoMemory();
        return HOST_FAILED;
    }
    PyObject *list = PyList_New((Py_ssize_t)n);
    if (list == NULL) {
        return HOST_FAILED;
    }
    for (int64_t i = 0; i < n; i++) {
        PyObject *item = values != NULL ? swpy_value_new_ref(&values[i])
                                        : Py_NewRef(Py_None);
        if (item == NULL) {
            Py_DECREF(list);
            return HOST_FAILED;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, item);
    }
    *out = list;
    return SW_OK;
}

static void host_drop_body(void *store) {
    Py_DECREF((PyObject *)store);
}

static void host_release_value_body(void *host) {
    Py_DECREF((PyObject *)host);
}

/* ------------------------------------------- arithmetic on host values */

/*
 * The Generic reference operations compute with Python's own arithmetic,
 * as the reference implementation's Python code did: +, -, *, / and **
 * on the objects (ints stay ints), max(0, x) for relu (a negative float
 * gives the int 0), and the math module's functions on float(x) for the
 * rest (math.exp raises OverflowError where the result overflows).
 */

static double py_sigmoid(double x) {
    if (x >= 0) {
        return 1.0 / (1.0 + exp(-x));
    }
    double e = exp(x);
    return e / (1.0 + e);
}

/* float(o), as the math functions convert their argument. */
static int as_double(PyObject *o, double *out) {
    *out = PyFloat_AsDouble(o);
    return *out == -1.0 && PyErr_Occurred() ? -1 : 0;
}

/* max(0, x) and max(x, 0) as Python evaluates them. */
static PyObject *py_max(PyObject *a, PyObject *b) {
    int gt = PyObject_RichCompareBool(b, a, Py_GT);
    if (gt < 0) {
        return NULL;
    }
    return Py_NewRef(gt ? b : a);
}

static PyObject *float_result(double r, double x) {
    if (isinf(r) && isfinite(x)) {
        PyErr_SetString(PyExc_OverflowError, "math range error");
        return NULL;
    }
    return PyFloat_FromDouble(r);
}

static PyObject *unary_value(sw_vop op, PyObject *x) {
    PyObject *zero = NULL, *r = NULL;
    double d = 0.0;
    switch (op) {
    case SW_VOP_RELU:
        zero = PyLong_FromLong(0);
        r = zero != NULL ? py_max(zero, x) : NULL;
        Py_XDECREF(zero);
        return r;
    case SW_VOP_SILU: {
        if (as_double(x, &d) < 0) {
            return NULL;
        }
        PyObject *s = PyFloat_FromDouble(py_sigmoid(d));
        r = s != NULL ? PyNumber_Multiply(x, s) : NULL;
        Py_XDECREF(s);
        return r;
    }
    case SW_VOP_SOFTPLUS: {
        if (as_double(x, &d) < 0) {
            return NULL;
        }
        PyObject *lhs = PyFloat_FromDouble(log1p(exp(-fabs(d))));
        zero = PyLong_FromLong(0);
        PyObject *m = lhs != NULL && zero != NULL ? py_max(x, zero) : NULL;
        r = m != NULL ? PyNumber_Add(lhs, m) : NULL;
        Py_XDECREF(lhs);
        Py_XDECREF(zero);
        Py_XDECREF(m);
        return r;
    }
    default:
        break;
    }
    if (as_double(x, &d) < 0) {
        return NULL;
    }
    switch (op) {
    case SW_VOP_EXP:
        return float_result(exp(d), d);
    case SW_VOP_SIGMOID:
        return PyFloat_FromDouble(py_sigmoid(d));
    case SW_VOP_TANH:
        return PyFloat_FromDouble(tanh(d));
    case SW_VOP_GELU:
        return PyFloat_FromDouble(0.5 * d * (1.0 + erf(d / sqrt(2.0))));
    case SW_VOP_ELU:
        return PyFloat_FromDouble(d > 0 ? d : expm1(d));
    case SW_VOP_LEAKY_RELU:
        return PyFloat_FromDouble(d >= 0 ? d : 0.01 * d);
    default:
        break;
    }
    PyErr_Format(PyExc_SystemError, "strideweave: unknown value operation %d",
                 (int)op);
    return NULL;
}

static sw_status host_apply_body(sw_vop op, const sw_value *a,
                                 const sw_value *b, sw_value *out) {
    if (PyErr_Occurred()) {
        return HOST_FAILED;
    }
    PyObject *x = swpy_value_new_ref(a);
    PyObject *y = x != NULL && b != NULL ? swpy_value_new_ref(b) : NULL;
    PyObject *r = NULL;
    if (x != NULL && (b == NULL || y != NULL)) {
        switch (op) {
        case SW_VOP_ADD:
            r = PyNumber_Add(x, y);
            break;
        case SW_VOP_SUB:
            r = PyNumber_Subtract(x, y);
            break;
        case SW_VOP_MUL:
            r = PyNumber_Multiply(x, y);
            break;
        case SW_VOP_DIV:
            r = PyNumber_TrueDivide(x, y);
            break;
        case SW_VOP_POW:
            r = PyNumber_Power(x, y, Py_None);
            break;
        default:
            r = unary_value(op, x);
            break;
        }
    }
    Py_XDECREF(x);
    Py_XDECREF(y);
    if (r == NULL) {
        return HOST_FAILED;
    }
    memset(out, 0, sizeof *out);
    out->kind = SW_VALUE_HOST;
    out->as.host = r;
    out->ops = &swpy_host_ops;
    return SW_OK;
}

static sw_status host_to_number_body(const sw_value *v, sw_value *out) {
    if (PyErr_Occurred()) {
        return HOST_FAILED;
    }
    double d = 0.0;
    if (as_double((PyObject *)v->as.host, &d) < 0) {
        if (!PyErr_ExceptionMatches(PyExc_TypeError)) {
            return HOST_FAILED;
        }
        /* Not a number at all: the library names the rule for the
         * destination ("CPU value must be a number"). */
        PyErr_Clear();
        return sw_set_error(SW_ETYPE, "value is not a number");
    }
    *out = sw_value_f64(d);
    return SW_OK;
}

/* The slots as the library calls them: each takes the GIL for its
 * whole body (see gil.h). */

static int64_t host_length(void *store) {
    swpy_gil g = swpy_gil_ensure();
    int64_t r = host_length_body(store);
    swpy_gil_release(g);
    return r;
}

static sw_status host_get(void *store, int64_t i, sw_value *out) {
    swpy_gil g = swpy_gil_ensure();
    sw_status r = host_get_body(store, i, out);
    swpy_gil_release(g);
    return r;
}

static sw_status host_set(void *store, int64_t i, const sw_value *v) {
    swpy_gil g = swpy_gil_ensure();
    sw_status r = host_set_body(store, i, v);
    swpy_gil_release(g);
    return r;
}

static sw_status host_make(const sw_host_ops *ops, int64_t n,
                           const sw_value *values, void **out) {
    swpy_gil g = swpy_gil_ensure();
    sw_status r = host_make_body(ops, n, values, out);
    swpy_gil_release(g);
    return r;
}

static void host_drop(void *store) {
    swpy_gil g = swpy_gil_ensure();
    host_drop_body(store);
    swpy_gil_release(g);
}

static void host_release_value(void *host) {
    swpy_gil g = swpy_gil_ensure();
    host_release_value_body(host);
    swpy_gil_release(g);
}

static sw_status host_apply(sw_vop op, const sw_value *a, const sw_value *b,
                            sw_value *out) {
    swpy_gil g = swpy_gil_ensure();
    sw_status r = host_apply_body(op, a, b, out);
    swpy_gil_release(g);
    return r;
}

static sw_status host_to_number(const sw_value *v, sw_value *out) {
    swpy_gil g = swpy_gil_ensure();
    sw_status r = host_to_number_body(v, out);
    swpy_gil_release(g);
    return r;
}

const sw_host_ops swpy_host_ops = {
    .version = SW_HOST_OPS_VERSION,
    .length = host_length,
    .get = host_get,
    .set = host_set,
    .make = host_make,
    .drop = host_drop,
    .release_value = host_release_value,
    .apply = host_apply,
    .to_number = host_to_number,
};

/* ------------------------------------------------------------- Generic */

static sw_carrier *generic_of(PyObject *self) {
    return swpy_backend_of(self, sw_carrier_is_generic, "Generic");
}

/* The store of a live Generic carrier (borrowed), or NULL with
 * RuntimeError('Carrier is released'). */
static PyObject *live_store(sw_carrier *c) {
    PyObject *store = sw_generic_store(c);
    if (store == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Carrier is released");
    }
    return store;
}

static int has_len(PyObject *o) {
    PyTypeObject *t = Py_TYPE(o);
    return (t->tp_as_sequence != NULL && t->tp_as_sequence->sq_length) ||
           (t->tp_as_mapping != NULL && t->tp_as_mapping->mp_length);
}

static int has_getitem(PyObject *o) {
    PyTypeObject *t = Py_TYPE(o);
    return (t->tp_as_sequence != NULL && t->tp_as_sequence->sq_item) ||
           (t->tp_as_mapping != NULL && t->tp_as_mapping->mp_subscript);
}

static int has_setitem(PyObject *o) {
    PyTypeObject *t = Py_TYPE(o);
    return (t->tp_as_sequence != NULL && t->tp_as_sequence->sq_ass_item) ||
           (t->tp_as_mapping != NULL && t->tp_as_mapping->mp_ass_subscript);
}

static int is_iterable(PyObject *o) {
    return Py_TYPE(o)->tp_iter != NULL || PySequence_Check(o);
}

/*
 * The store for values: a mutable carrier uses any object with __len__,
 * __getitem__ and __setitem__ as it is (an alias), an immutable one any
 * object with __len__ and __getitem__; anything else becomes list(values).
 */
static PyObject *make_store(PyObject *values, int mutable_) {
    if (!is_iterable(values)) {
        PyErr_SetString(PyExc_TypeError, "Generic requires an iterable object");
        return NULL;
    }
    if (has_len(values) && has_getitem(values) &&
        (!mutable_ || has_setitem(values))) {
        return Py_NewRef(values);
    }
    return PySequence_List(values);
}

static int generic_tp_init(PyObject *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"values", "mutable", "dtype", NULL};
    PyObject *values = NULL, *dtype_obj = NULL;
    int mutable_ = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|$pO:Generic", kwlist,
                                     &values, &mutable_, &dtype_obj)) {
        return -1;
    }
    swpy_state *st = swpy_state_of_type(Py_TYPE(self));
    if (st == NULL) {
        return -1;
    }
    sw_dtype dtype = SW_DTYPE_FLOATING;
    if (dtype_obj != NULL) {
        int rc = swpy_dtype_from_py(st, dtype_obj, &dtype);
        if (rc <= 0) {
            if (rc == 0) {
                PyErr_SetString(PyExc_TypeError,
                                "Generic dtype must be a DType");
            }
            return -1;
        }
    }
    PyObject *store = make_store(values, mutable_);
    if (store == NULL) {
        return -1;
    }
    sw_carrier *c = NULL;
    sw_status s = sw_generic_new(&swpy_host_ops, store, dtype, mutable_, &c);
    if (s != SW_OK) {
        Py_DECREF(store);
        swpy_raise(s);
        return -1;
    }
    return swpy_carrier_adopt(self, c, "Generic");
}

static PyObject *generic_size(PyObject *self, PyObject *unused) {
    sw_carrier *c = generic_of(self);
    if (c == NULL || live_store(c) == NULL) {
        return NULL;
    }
    int64_t n = sw_carrier_size(c);
    if (PyErr_Occurred()) {
        return NULL;
    }
    return PyLong_FromLongLong(n);
}

/* Called directly, get_value and set_value index the store with Python's
 * rules (negative indices count from the end). */
static PyObject *generic_get_value(PyObject *self, PyObject *index) {
    sw_carrier *c = generic_of(self);
    PyObject *store = c != NULL ? live_store(c) : NULL;
    if (store == NULL) {
        return NULL;
    }
    Py_INCREF(store);
    PyObject *r = PyObject_GetItem(store, index);
    Py_DECREF(store);
    return r;
}

static PyObject *generic_set_value(PyObject *self, PyObject *const *args,
                                   Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError,
                     "set_value() takes exactly 2 arguments (%zd given)",
                     nargs);
        return NULL;
    }
    sw_carrier *c = generic_of(self);
    PyObject *store = c != NULL ? live_store(c) : NULL;
    if (store == NULL) {
        return NULL;
    }
    int mutable_ = sw_carrier_is_mutable(c);
    if (PyErr_Occurred()) {
        return NULL;
    }
    if (!mutable_) {
        PyErr_SetString(PyExc_RuntimeError, "Carrier is not mutable");
        return NULL;
    }
    /* The store is held: the assignment may run arbitrary Python code. */
    Py_INCREF(store);
    int rc = PyObject_SetItem(store, args[0], args[1]);
    Py_DECREF(store);
    if (rc < 0) {
        return NULL;
    }
    sw_status s = sw_carrier_bump_version(c);
    if (s != SW_OK) {
        return swpy_raise(s);
    }
    Py_RETURN_NONE;
}

static const swpy_backend generic_backend = {
    .name = "Generic",
    .is = sw_carrier_is_generic,
    .exact_new_like = 1,
    .dtype_type_error = 1,
    .gil = SWPY_GIL_KEEP,
};

static PyObject *generic_new_like(PyObject *self, PyObject *args,
                                  PyObject *kwds) {
    return swpy_backend_new_like(&generic_backend, self, args, kwds);
}

static PyObject *generic_allocate_like(PyObject *self, PyObject *args,
                                       PyObject *kwds) {
    return swpy_backend_allocate_like(&generic_backend, self, args, kwds);
}

static sw_tensor *tensor_arg(swpy_state *st, PyObject *o, const char *name) {
    if (!swpy_is_tensor(st, o)) {
        PyErr_Format(PyExc_TypeError, "%s must be a Tensor", name);
        return NULL;
    }
    return swpy_tensor_of(o);
}

static PyObject *generic_scatter(PyObject *self, PyObject *args,
                                 PyObject *kwds) {
    swpy_scatter_args a;
    if (swpy_backend_scatter_args(&generic_backend, self, args, kwds, &a) < 0) {
        return NULL;
    }
    sw_carrier *c = a.carrier;
    swpy_state *st = a.st;
    PyObject *src_obj = a.src, *onto_obj = a.onto, *mapping_obj = a.mapping;
    PyObject *offset_obj = a.offset;
    /* The reference checks mutability before the argument types. */
    int mutable_ = sw_carrier_is_mutable(c);
    if (PyErr_Occurred()) {
        return NULL;
    }
    if (!mutable_) {
        PyErr_SetString(PyExc_RuntimeError, "Carrier is not mutable");
        return NULL;
    }
    sw_tensor *src = tensor_arg(st, src_obj, "to_scatter");
    sw_tensor *onto =
        src != NULL ? tensor_arg(st, onto_obj, "scatter_onto") : NULL;
    if (onto == NULL) {
        return NULL;
    }
    if (!swpy_is_layout(st, mapping_obj)) {
        PyErr_SetString(PyExc_TypeError, "mapping must be a Layout");
        return NULL;
    }
    int64_t offset = 0;
    if (offset_obj != NULL && swpy_index_arg(offset_obj, &offset) < 0) {
        return NULL;
    }
    /* Element by element through sw_carrier_set: one bump per element. */
    sw_status s =
        sw_carrier_scatter(c, src, onto, swpy_layout_get(mapping_obj), offset);
    if (swpy_check(s) < 0) {
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

static PyMethodDef generic_methods[] = {
    {"size", generic_size, METH_NOARGS, NULL},
    {"dtype", swpy_carrier_dtype, METH_NOARGS, NULL},
    {"get_value", generic_get_value, METH_O, NULL},
    {"set_value", KW(generic_set_value), METH_FASTCALL, NULL},
    {"new_like", KW(generic_new_like), METH_VARARGS | METH_KEYWORDS, NULL},
    {"allocate_like", KW(generic_allocate_like), METH_VARARGS | METH_KEYWORDS,
     NULL},
    {"scatter", KW(generic_scatter), METH_VARARGS | METH_KEYWORDS, NULL},
    {"_dispatch_op", swpy_backend_dispatch_hook, METH_O, NULL},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot generic_slots[] = {
    {Py_tp_new, swpy_backend_new},
    {Py_tp_init, generic_tp_init},
    {Py_tp_dealloc, swpy_carrier_dealloc},
    {Py_tp_traverse, swpy_carrier_traverse},
    {Py_tp_clear, swpy_carrier_clear},
    {Py_tp_methods, generic_methods},
    {0, NULL},
};

static PyType_Spec generic_spec = {
    .name = "strideweave.carriers.generic.carrier.Generic",
    .basicsize = sizeof(CarrierObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC |
             Py_TPFLAGS_IMMUTABLETYPE,
    .slots = generic_slots,
};

#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

int swpy_generic_init_type(PyObject *module, swpy_state *st) {
    return swpy_add_type(module, &generic_spec, st->carrier_type,
                         &st->generic_type);
}
