/*
 * The Tensor type: construction, properties and element access over
 * strideweave/tensor.h.
 *
 * Keys follow the reference: an int is a logical index, a tuple or list a
 * coordinate (nested tuples and lists nest, missing trailing coordinates
 * are 0, extra ones are ignored); the library applies the layout's rules.
 * A key holding a slice anywhere asks for a view (the view operation).
 * The operators and the autograd entry points forward to the functional
 * operations and to the library's engine.
 */
#include "py_tensor.h"

#include <stdint.h>
#include <string.h>

#if PY_VERSION_HEX < 0x030C0000
#include <structmember.h>
#define SWPY_T_PYSSIZET T_PYSSIZET
#define SWPY_READONLY READONLY
#else
#define SWPY_T_PYSSIZET Py_T_PYSSIZET
#define SWPY_READONLY Py_READONLY
#endif

#include "py_carrier.h"
#include "py_dlpack.h"
#include "errors.h"
#include "functional.h"
#include "gc.h"
#include "gil.h"
#include "py_layout.h"
#include "py_representation.h"
#include "operation.h"
#include "recipe.h"

#define TENSOR(o) (((TensorObject *)(o))->tensor)

/* The hooks take the GIL back when the library runs without it. */
static const sw_peer_hooks peer_hooks = {swpy_peer_incref, swpy_peer_decref};

int swpy_is_tensor(swpy_state *st, PyObject *o) {
    return PyObject_TypeCheck(o, st->tensor_type);
}

sw_tensor *swpy_tensor_of(PyObject *o) {
    sw_tensor *t = TENSOR(o);
    if (t == NULL) {
        PyErr_SetString(PyExc_TypeError, "Tensor.__init__() must be called "
                                         "when overriding __init__");
    }
    return t;
}

/* Gives a fresh object its tensor (owned) with the carrier and layout
 * objects (owned; layout may be NULL, carrier the placeholder when
 * made is 0), and makes it the tensor's peer. */
static void attach(PyObject *self, sw_tensor *owned, PyObject *carrier,
                   int made, PyObject *layout) {
    TensorObject *o = (TensorObject *)self;
    o->tensor = owned;
    o->carrier = carrier;
    o->carrier_made = made;
    o->layout = layout;
    /* The tensor holds the carrier that this carrier object is the peer of
     * (see rule (a) in gc.c). */
    if (made) {
        ((CarrierObject *)carrier)->tensor_peers++;
    }
    sw_tensor_set_peer(owned, self, &peer_hooks);
}

/* Lets go of the tensor (the object stops being its peer), and of the
 * carrier and layout objects. */
static void detach(PyObject *self) {
    TensorObject *o = (TensorObject *)self;
    sw_tensor *t = o->tensor;
    if (t != NULL) {
        o->tensor = NULL;
        if (o->carrier_made) {
            ((CarrierObject *)o->carrier)->tensor_peers--;
        }
        sw_tensor_set_peer(t, NULL, NULL);
        sw_tensor_unref(t);
    }
    Py_CLEAR(o->carrier);
    Py_CLEAR(o->layout);
}

PyObject *swpy_tensor_carrier(PyObject *tensor) {
    TensorObject *o = (TensorObject *)tensor;
    if (!o->carrier_made) {
        swpy_state *st = swpy_state_of_type(Py_TYPE(tensor));
        if (st == NULL) {
            return NULL;
        }
        /* Another tensor over the carrier may have made its object. */
        PyObject *c = swpy_carrier_wrap(
            st, sw_carrier_retain(sw_tensor_carrier(o->tensor)));
        if (c == NULL) {
            return NULL;
        }
        Py_SETREF(o->carrier, c);
        o->carrier_made = 1;
        ((CarrierObject *)c)->tensor_peers++;
    }
    return o->carrier;
}

PyObject *swpy_tensor_layout(PyObject *tensor) {
    TensorObject *o = (TensorObject *)tensor;
    if (o->layout == NULL) {
        swpy_state *st = swpy_state_of_type(Py_TYPE(tensor));
        if (st == NULL) {
            return NULL;
        }
        o->layout =
            swpy_layout_wrap(st, sw_layout_retain(sw_tensor_layout(o->tensor)));
    }
    return o->layout;
}

PyObject *swpy_tensor_wrap(swpy_state *st, sw_tensor *owned) {
    PyObject *peer = sw_tensor_get_peer(owned);
    if (peer != NULL) {
        Py_INCREF(peer);
        sw_tensor_unref(owned);
        return peer;
    }
    /* A CPU carrier without an object holds no Python object, so its
     * object can wait (see tensor.h); one that has an object is named at
     * once, which keeps its tensor_peers count whole. */
    sw_carrier *c = sw_tensor_carrier(owned);
    int made = sw_carrier_get_peer(c) != NULL || !sw_carrier_is_cpu(c);
    PyObject *carrier = made ? swpy_carrier_wrap(st, sw_carrier_retain(c))
                             : Py_NewRef(st->cpu_placeholder);
    PyObject *self =
        carrier != NULL ? st->tensor_type->tp_alloc(st->tensor_type, 0) : NULL;
    if (self == NULL) {
        Py_XDECREF(carrier);
        sw_tensor_unref(owned);
        return NULL;
    }
    attach(self, owned, carrier, made, NULL);
    return self;
}

/* ---------------------------------------------------------- lifecycle */

static int tensor_tp_init(PyObject *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"carrier", "offset", "layout", NULL};
    PyObject *carrier, *offset_obj, *layout;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOO:Tensor", kwlist, &carrier,
                                     &offset_obj, &layout)) {
        return -1;
    }
    swpy_state *st = swpy_state_of_type(Py_TYPE(self));
    if (st == NULL) {
        return -1;
    }
    if (!swpy_is_carrier(st, carrier)) {
        PyErr_Format(PyExc_TypeError, "carrier must be a Carrier, not '%.200s'",
                     Py_TYPE(carrier)->tp_name);
        return -1;
    }
    const char *name = Py_TYPE(carrier)->tp_name;
    const char *dot = strrchr(name, '.');
    sw_carrier *c = swpy_carrier_of(carrier, dot != NULL ? dot + 1 : name);
    if (c == NULL) {
        return -1;
    }
    int64_t offset = 0;
    if (PyFloat_Check(offset_obj) || !PyIndex_Check(offset_obj)) {
        PyErr_Format(PyExc_TypeError,
                     "Tensor offset must be an integer, not '%.200s'",
                     Py_TYPE(offset_obj)->tp_name);
        return -1;
    }
    if (swpy_index_arg(offset_obj, &offset) < 0) {
        return -1;
    }
    if (!swpy_is_layout(st, layout)) {
        PyErr_Format(PyExc_TypeError, "layout must be a Layout, not '%.200s'",
                     Py_TYPE(layout)->tp_name);
        return -1;
    }
    if (TENSOR(self) != NULL) {
        PyErr_SetString(PyExc_RuntimeError,
                        "Tensor.__init__() must not be called twice");
        return -1;
    }
    /* The library reads the carrier's size, which may be a Python hook. */
    sw_tensor *t = NULL;
    sw_status s = sw_tensor_new(c, offset, swpy_layout_get(layout), &t);
    if (swpy_check(s) < 0) {
        sw_tensor_unref(t);
        return -1;
    }
    attach(self, t, Py_NewRef(carrier), 1, Py_NewRef(layout));
    return 0;
}

static int tensor_clear(PyObject *self) {
    /*
     * Unreachable, so garbage with its tensor (see gc.c): the gradient and
     * the context go first, as every cycle among library objects passes
     * through one of them. Neither call can fail with NULL.
     */
    sw_tensor *t = ((TensorObject *)self)->tensor;
    if (t != NULL) {
        (void)sw_tensor_set_grad(t, NULL);
        (void)sw_tensor_set_autograd_ctx(t, NULL);
    }
    detach(self);
    return 0;
}

static void tensor_dealloc(PyObject *self) {
    PyTypeObject *type = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    if (((TensorObject *)self)->weakreflist != NULL) {
        PyObject_ClearWeakRefs(self);
    }
    /* The last reference to the object: the tensor has no other holder
     * (they would keep the object alive), and goes with what it holds. */
    detach(self);
    type->tp_free(self);
    Py_DECREF(type);
}

static int tensor_traverse(PyObject *self, visitproc visit, void *arg) {
    TensorObject *o = (TensorObject *)self;
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(o->carrier);
    Py_VISIT(o->layout);
    /* The context, the gradient and what they hold (see gc.c). */
    return swpy_gc_traverse_tensor(self, visit, arg);
}

/* --------------------------------------------------------- properties */

static PyObject *tensor_get_carrier(PyObject *self, void *closure) {
    return swpy_tensor_of(self) == NULL ? NULL
                                        : Py_XNewRef(swpy_tensor_carrier(self));
}

static PyObject *tensor_get_layout(PyObject *self, void *closure) {
    return swpy_tensor_of(self) == NULL ? NULL
                                        : Py_XNewRef(swpy_tensor_layout(self));
}

static PyObject *tensor_get_offset(PyObject *self, void *closure) {
    sw_tensor *t = swpy_tensor_of(self);
    return t == NULL ? NULL : PyLong_FromLongLong(sw_tensor_offset(t));
}

static PyObject *tensor_get_version(PyObject *self, void *closure) {
    sw_tensor *t = swpy_tensor_of(self);
    return t == NULL ? NULL : PyLong_FromLongLong(sw_tensor_version(t));
}

static PyObject *tensor_size(PyObject *self, PyObject *unused) {
    sw_tensor *t = swpy_tensor_of(self);
    return t == NULL ? NULL : PyLong_FromLongLong(sw_tensor_size(t));
}

static PyObject *tensor_is_mutable(PyObject *self, PyObject *unused) {
    sw_tensor *t = swpy_tensor_of(self);
    if (t == NULL) {
        return NULL;
    }
    int r = sw_tensor_is_mutable(t);
    return PyErr_Occurred() ? NULL : PyBool_FromLong(r);
}

static PyObject *tensor_dtype(PyObject *self, PyObject *unused) {
    sw_tensor *t = swpy_tensor_of(self);
    swpy_state *st = swpy_state_of_type(Py_TYPE(self));
    if (t == NULL || st == NULL) {
        return NULL;
    }
    if (sw_tensor_nsubtensors(t) > 1) {
        return swpy_tensor_logical_dtype(st, t);
    }
    sw_dtype d = sw_tensor_dtype(t);
    return PyErr_Occurred() ? NULL : swpy_dtype_to_py(st, d);
}

static PyObject *tensor_is_differentiable(PyObject *self, PyObject *unused) {
    sw_tensor *t = swpy_tensor_of(self);
    if (t == NULL) {
        return NULL;
    }
    int r = sw_tensor_is_differentiable(t);
    return PyErr_Occurred() ? NULL : PyBool_FromLong(r);
}

static PyObject *tensor_get_requires_grad(PyObject *self, void *closure) {
    (void)closure;
    return tensor_is_differentiable(self, NULL);
}

/* Sets requires_grad from a bool (TypeError for anything else). */
static int set_requires_grad(PyObject *self, PyObject *value) {
    sw_tensor *t = swpy_tensor_of(self);
    if (t == NULL) {
        return -1;
    }
    if (value == NULL || !PyBool_Check(value)) {
        PyErr_SetString(PyExc_TypeError, "requires_grad must be a bool");
        return -1;
    }
    return swpy_check(sw_tensor_set_requires_grad(t, value == Py_True));
}

static int tensor_set_requires_grad(PyObject *self, PyObject *value,
                                    void *closure) {
    (void)closure;
    return set_requires_grad(self, value);
}

static PyObject *tensor_requires_grad_(PyObject *self, PyObject *const *args,
                                       Py_ssize_t nargs, PyObject *kwnames) {
    Py_ssize_t nkw = kwnames != NULL ? PyTuple_GET_SIZE(kwnames) : 0;
    if (nargs + nkw > 1 ||
        (nkw == 1 && PyUnicode_CompareWithASCIIString(
                         PyTuple_GET_ITEM(kwnames, 0), "requires_grad") != 0)) {
        PyErr_SetString(PyExc_TypeError, "requires_grad_() takes one optional "
                                         "argument 'requires_grad'");
        return NULL;
    }
    if (set_requires_grad(self, nargs + nkw == 1 ? args[0] : Py_True) < 0) {
        return NULL;
    }
    return Py_NewRef(self);
}

/* Tensor._repr_html_: the repr and the layout's picture, for Jupyter. */
static PyObject *tensor_repr_html(PyObject *self, PyObject *unused) {
    (void)unused;
    return swpy_call_viz("_repr_html", self);
}

static PyObject *tensor_carrier_type(PyObject *self, PyObject *unused) {
    if (swpy_tensor_of(self) == NULL) {
        return NULL;
    }
    return Py_NewRef((PyObject *)Py_TYPE(((TensorObject *)self)->carrier));
}

/* ------------------------------------------ conveniences of PyTorch users */

/* Calls strideweave._show.<name>(self): printing and Python values are
 * written in Python, and read only the elements they return. */
static PyObject *call_show(PyObject *self, const char *name) {
    PyObject *mod = PyImport_ImportModule("strideweave._show");
    if (mod == NULL) {
        return NULL;
    }
    PyObject *r = PyObject_CallMethod(mod, name, "O", self);
    Py_DECREF(mod);
    return r;
}

static PyObject *tensor_repr(PyObject *self) {
    if (swpy_tensor_of(self) == NULL) {
        PyErr_Clear();
        return PyUnicode_FromFormat("<%s (uninitialised)>",
                                    Py_TYPE(self)->tp_name);
    }
    return call_show(self, "tensor_repr");
}

static PyObject *tensor_str(PyObject *self) {
    if (swpy_tensor_of(self) == NULL) {
        PyErr_Clear();
        return tensor_repr(self);
    }
    return call_show(self, "tensor_str");
}

static PyObject *tensor_get_shape(PyObject *self, void *closure) {
    (void)closure;
    sw_tensor *t = swpy_tensor_of(self);
    if (t == NULL) {
        return NULL;
    }
    const sw_layout *l = sw_tensor_layout(t);
    int32_t rank = sw_layout_rank(l);
    PyObject *shape = PyTuple_New(rank);
    for (int32_t k = 0; shape != NULL && k < rank; k++) {
        sw_layout *m = NULL;
        PyObject *e = NULL;
        if (swpy_check(sw_layout_mode(l, k, &m)) == 0) {
            e = PyLong_FromLongLong((long long)sw_layout_size(m));
            sw_layout_unref(m);
        }
        if (e == NULL) {
            Py_CLEAR(shape);
        } else {
            PyTuple_SET_ITEM(shape, k, e);
        }
    }
    return shape;
}

static PyObject *tensor_get_ndim(PyObject *self, void *closure) {
    (void)closure;
    sw_tensor *t = swpy_tensor_of(self);
    return t == NULL
               ? NULL
               : PyLong_FromLong((long)sw_layout_rank(sw_tensor_layout(t)));
}

static PyObject *tensor_get_T(PyObject *self, void *closure) {
    (void)closure;
    sw_tensor *t = swpy_tensor_of(self);
    swpy_state *st = t != NULL ? swpy_state_of_type(Py_TYPE(self)) : NULL;
    if (st == NULL) {
        return NULL;
    }
    if (sw_layout_rank(sw_tensor_layout(t)) != 2) {
        PyErr_SetString(PyExc_ValueError, "T requires a two-mode tensor");
        return NULL;
    }
    PyObject *one = PyLong_FromLong(1), *zero = PyLong_FromLong(0);
    PyObject *r = NULL;
    if (one != NULL && zero != NULL) {
        PyObject *args[3] = {self, one, zero};
        r = swpy_op_call(st, self, SW_OP_PERMUTE, args, 3);
    }
    Py_XDECREF(one);
    Py_XDECREF(zero);
    return r;
}

static PyObject *tensor_numel(PyObject *self, PyObject *unused) {
    (void)unused;
    sw_tensor *t = swpy_tensor_of(self);
    return t == NULL ? NULL : PyLong_FromLongLong(sw_tensor_size(t));
}

static PyObject *tensor_item(PyObject *self, PyObject *unused) {
    (void)unused;
    sw_tensor *t = swpy_tensor_of(self);
    if (t == NULL) {
        return NULL;
    }
    if (sw_tensor_size(t) != 1) {
        PyErr_SetString(PyExc_ValueError,
                        "item requires a tensor with exactly one element");
        return NULL;
    }
    sw_value v;
    if (swpy_check(sw_tensor_get(t, 0, &v)) < 0) {
        return NULL;
    }
    return swpy_value_to_py(sw_tensor_carrier(t), &v);
}

static PyObject *tensor_tolist(PyObject *self, PyObject *unused) {
    (void)unused;
    return swpy_tensor_of(self) == NULL ? NULL : call_show(self, "tolist");
}

static PyObject *tensor_numpy(PyObject *self, PyObject *unused) {
    (void)unused;
    return swpy_tensor_of(self) == NULL ? NULL : call_show(self, "to_numpy");
}

/* A new leaf over the same carrier, offset and layout: no autograd
 * context, so gradients stop here. */
static PyObject *tensor_detach(PyObject *self, PyObject *unused) {
    (void)unused;
    sw_tensor *t = swpy_tensor_of(self);
    swpy_state *st = t != NULL ? swpy_state_of_type(Py_TYPE(self)) : NULL;
    if (st == NULL) {
        return NULL;
    }
    if (sw_tensor_nsubtensors(t) > 1) {
        return swpy_tensor_share(st, t);
    }
    PyObject *carrier = swpy_tensor_carrier(self);
    PyObject *layout = carrier != NULL ? swpy_tensor_layout(self) : NULL;
    PyObject *offset =
        layout != NULL ? PyLong_FromLongLong(sw_tensor_offset(t)) : NULL;
    if (offset == NULL) {
        return NULL;
    }
    PyObject *r = PyObject_CallFunctionObjArgs((PyObject *)st->tensor_type,
                                               carrier, offset, layout, NULL);
    Py_DECREF(offset);
    return r;
}

/* A differentiable copy with the same layout: the scalar multiplication
 * by 1, which every carrier with arithmetic runs as one kernel. */
static PyObject *tensor_clone(PyObject *self, PyObject *unused) {
    (void)unused;
    swpy_state *st = swpy_state_of_type(Py_TYPE(self));
    if (st == NULL || swpy_tensor_of(self) == NULL) {
        return NULL;
    }
    PyObject *one = PyLong_FromLong(1);
    PyObject *r = one != NULL ? swpy_fn_mul(st, self, one) : NULL;
    Py_XDECREF(one);
    return r;
}

/* ------------------------------------------------------ element access */

static int bad_key(void) {
    PyErr_SetString(PyExc_TypeError,
                    "Tensor indices must be integers or tuples/lists of "
                    "integers");
    return -1;
}

static inline int is_level(PyObject *o) {
    return PyTuple_Check(o) || PyList_Check(o);
}

/* 1 if key holds a slice anywhere (inside tuples and lists), else 0. */
static int has_slice(PyObject *key) {
    if (PySlice_Check(key)) {
        return 1;
    }
    if (!is_level(key)) {
        return 0;
    }
    if (Py_EnterRecursiveCall(" while reading a tensor key")) {
        return -1;
    }
    int r = 0;
    /* Plain checks only: no Python code runs, so the level cannot change
     * under the loop. */
    Py_ssize_t n = PySequence_Fast_GET_SIZE(key);
    for (Py_ssize_t i = 0; r == 0 && i < n; i++) {
        r = has_slice(PySequence_Fast_GET_ITEM(key, i));
    }
    Py_LeaveRecursiveCall();
    return r;
}

/* An int of a key; values outside int64 are outside every domain. */
static int64_t key_int(PyObject *o) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    return overflow > 0 ? INT64_MAX : overflow < 0 ? INT64_MIN : (int64_t)v;
}

/* The coordinates of one tuple or list level as recipe tokens. */
static int key_level(rbuf *b, PyObject *level) {
    if (Py_EnterRecursiveCall(" while reading a tensor key")) {
        return -1;
    }
    int rc = 0;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(level);
    for (Py_ssize_t i = 0; rc == 0 && i < n; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(level, i);
        if (PyLong_Check(item)) {
            rc = rbuf_leaf(b, key_int(item));
        } else if (is_level(item)) {
            rc = rbuf_tok(b, SW_TOK_PUSH);
            if (rc == 0) {
                rc = key_level(b, item);
            }
            if (rc == 0) {
                rc = rbuf_tok(b, SW_TOK_POP);
            }
        } else {
            rc = bad_key();
        }
    }
    Py_LeaveRecursiveCall();
    return rc;
}

/*
 * The key as a logical index (*is_index) or a coordinate recipe in b.
 * Returns 0, or -1 with TypeError for anything but ints and (nested)
 * tuples and lists of ints.
 */
static int read_key(PyObject *key, rbuf *b, int *is_index, int64_t *index) {
    if (PyLong_Check(key)) {
        *is_index = 1;
        *index = key_int(key);
        return 0;
    }
    if (!is_level(key)) {
        return bad_key();
    }
    *is_index = 0;
    return key_level(b, key);
}

/* The domain error of a read becomes TensorIndexError, an IndexError that
 * is also the reference's ValueError (same message), so that the old-style
 * iteration of list(t) and for loops stops at the end. */
static void outside_to_index_error(PyObject *self) {
    if (!PyErr_ExceptionMatches(PyExc_ValueError)) {
        return;
    }
    PyObject *type = NULL, *value = NULL, *tb = NULL;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    PyObject *msg = value != NULL ? PyObject_Str(value) : NULL;
    int outside = msg != NULL && PyUnicode_CompareWithASCIIString(
                                     msg, "Key is not in domain of shape") == 0;
    PyErr_Clear();
    swpy_state *st = outside ? swpy_state_of_type(Py_TYPE(self)) : NULL;
    PyErr_Clear();
    if (st != NULL && st->tensor_index_error != NULL) {
        PyErr_SetObject(st->tensor_index_error, msg);
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(tb);
    } else {
        PyErr_Restore(type, value, tb);
    }
    Py_XDECREF(msg);
}

static PyObject *tensor_subscript(PyObject *self, PyObject *key) {
    sw_tensor *t = swpy_tensor_of(self);
    if (t == NULL) {
        return NULL;
    }
    int sliced = has_slice(key);
    if (sliced != 0) {
        /* A slice anywhere asks for a view. */
        swpy_state *st = sliced > 0 ? swpy_state_of_type(Py_TYPE(self)) : NULL;
        return st != NULL ? swpy_fn_view(st, self, key) : NULL;
    }
    rbuf b;
    rbuf_init(&b);
    int is_index = 0;
    int64_t index = 0;
    sw_value v;
    sw_status s = SW_OK;
    if (read_key(key, &b, &is_index, &index) < 0) {
        rbuf_free(&b);
        return NULL;
    }
    s = is_index ? sw_tensor_get(t, index, &v)
                 : sw_tensor_get_coord(t, b.ntok, b.tok, b.val, &v);
    rbuf_free(&b);
    if (swpy_check(s) < 0) {
        if (s == SW_OK) {
            sw_value_clear(&v);
        }
        outside_to_index_error(self);
        return NULL;
    }
    return swpy_value_to_py(sw_tensor_carrier(t), &v);
}

/* Any error of resolving a key by Python's rules becomes TensorIndexError
 * with the library's message. */
static void resolve_to_index_error(PyObject *self) {
    if (!PyErr_ExceptionMatches(PyExc_ValueError) &&
        !PyErr_ExceptionMatches(PyExc_IndexError)) {
        return;
    }
    PyObject *type = NULL, *value = NULL, *tb = NULL;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    PyObject *msg = value != NULL ? PyObject_Str(value) : NULL;
    swpy_state *st = msg != NULL ? swpy_state_of_type(Py_TYPE(self)) : NULL;
    if (st != NULL && st->tensor_index_error != NULL) {
        PyErr_SetObject(st->tensor_index_error, msg);
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(tb);
    } else {
        PyErr_Restore(type, value, tb);
    }
    Py_XDECREF(msg);
}

/* The carrier index of a key under Python's rules (negative coordinates
 * count from a mode's end, extra coordinates are refused): the library's
 * SW_INDEX_WRAP | SW_INDEX_EXACT resolution. */
static int resolve_python_key(PyObject *self, sw_tensor *t, PyObject *key,
                              int64_t *out) {
    rbuf b;
    rbuf_init(&b);
    int is_index = 0;
    int64_t index = 0, idx = 0;
    if (read_key(key, &b, &is_index, &index) < 0) {
        rbuf_free(&b);
        return -1;
    }
    const uint32_t flags = SW_INDEX_WRAP | SW_INDEX_EXACT;
    sw_layout *l = sw_tensor_layout(t);
    sw_status s = is_index ? sw_layout_index_ex(l, index, flags, &idx)
                           : sw_layout_index_coord_ex(l, b.ntok, b.tok, b.val,
                                                      flags, &idx);
    rbuf_free(&b);
    if (swpy_check(s) < 0) {
        resolve_to_index_error(self);
        return -1;
    }
    *out = sw_tensor_offset(t) + idx;
    return 0;
}

static PyObject *tensor_get(PyObject *self, PyObject *key) {
    sw_tensor *t = swpy_tensor_of(self);
    int64_t idx = 0;
    if (t == NULL || resolve_python_key(self, t, key, &idx) < 0) {
        return NULL;
    }
    sw_value v;
    sw_status s = sw_carrier_get(sw_tensor_carrier(t), idx, &v);
    if (swpy_check(s) < 0) {
        if (s == SW_OK) {
            sw_value_clear(&v);
        }
        return NULL;
    }
    return swpy_value_to_py(sw_tensor_carrier(t), &v);
}

static PyObject *tensor_set(PyObject *self, PyObject *const *args,
                            Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError,
                     "set() takes a key and a value (%zd given)", nargs);
        return NULL;
    }
    sw_tensor *t = swpy_tensor_of(self);
    int64_t idx = 0;
    if (t == NULL || resolve_python_key(self, t, args[0], &idx) < 0) {
        return NULL;
    }
    sw_value v;
    if (swpy_value_for(sw_tensor_carrier(t), args[1], &v) < 0) {
        return NULL;
    }
    if (swpy_check(sw_carrier_set(sw_tensor_carrier(t), idx, &v)) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* Old-style iteration: list(t) tries 0, 1, ... and ends at the
 * TensorIndexError of the first index outside the layout. */
static PyObject *tensor_sq_item(PyObject *self, Py_ssize_t i) {
    PyObject *key = PyLong_FromSsize_t(i);
    if (key == NULL) {
        return NULL;
    }
    PyObject *r = tensor_subscript(self, key);
    Py_DECREF(key);
    return r;
}

static int tensor_ass_subscript(PyObject *self, PyObject *key,
                                PyObject *value) {
    if (value == NULL) {
        PyErr_SetString(PyExc_TypeError, "Tensor elements cannot be deleted");
        return -1;
    }
    sw_tensor *t = swpy_tensor_of(self);
    if (t == NULL) {
        return -1;
    }
    /* Before the value's conversion, which may ask the carrier. */
    if (swpy_check(sw_tensor_require_single(t, SW_ENTRY_MUTATION)) < 0) {
        return -1;
    }
    /* Slices are not keys for assignment: read_key refuses them. */
    rbuf b;
    rbuf_init(&b);
    int is_index = 0;
    int64_t index = 0;
    sw_value v;
    int rc = read_key(key, &b, &is_index, &index);
    if (rc == 0) {
        rc = swpy_value_for(sw_tensor_carrier(t), value, &v);
    }
    if (rc == 0) {
        sw_status s = is_index
                          ? sw_tensor_set(t, index, &v)
                          : sw_tensor_set_coord(t, b.ntok, b.tok, b.val, &v);
        rc = swpy_check(s);
    }
    rbuf_free(&b);
    return rc;
}

/* ------------------------------------------------------------ autograd */

static PyObject *tensor_get_autograd_ctx(PyObject *self, void *closure) {
    sw_tensor *t = swpy_tensor_of(self);
    swpy_state *st = swpy_state_of_type(Py_TYPE(self));
    if (t == NULL || st == NULL) {
        return NULL;
    }
    sw_op *op = sw_tensor_autograd_ctx(t);
    if (op == NULL) {
        Py_RETURN_NONE;
    }
    return swpy_op_wrap(st, sw_op_retain(op));
}

static int tensor_set_autograd_ctx(PyObject *self, PyObject *value,
                                   void *closure) {
    sw_tensor *t = swpy_tensor_of(self);
    swpy_state *st = swpy_state_of_type(Py_TYPE(self));
    if (t == NULL || st == NULL) {
        return -1;
    }
    sw_op *op = NULL;
    if (value != NULL && value != Py_None) {
        int differentiable = sw_tensor_is_differentiable(t);
        if (PyErr_Occurred()) {
            return -1;
        }
        if (!differentiable) {
            /* Differentiability comes first, whatever the value: the
             * library refuses any context for such a tensor (a stand-in
             * operation here, which it never stores). */
            sw_op *stand_in = NULL;
            sw_status s = sw_shared_op_new("view", &stand_in);
            if (s == SW_OK) {
                s = sw_tensor_set_autograd_ctx(t, stand_in);
            }
            sw_op_unref(stand_in);
            return swpy_check(s);
        }
        if (!swpy_is_operation(st, value)) {
            PyErr_SetString(PyExc_TypeError,
                            "autograd_ctx must be an Operation or None");
            return -1;
        }
        op = ((OperationObject *)value)->op;
        if (op == NULL) {
            PyErr_SetString(PyExc_RuntimeError,
                            "the Operation object has been cleared");
            return -1;
        }
    }
    return swpy_check(sw_tensor_set_autograd_ctx(t, op));
}

static PyObject *tensor_get_grad(PyObject *self, void *closure) {
    sw_tensor *t = swpy_tensor_of(self);
    swpy_state *st = swpy_state_of_type(Py_TYPE(self));
    if (t == NULL || st == NULL) {
        return NULL;
    }
    if (!sw_tensor_is_differentiable(t)) {
        /* sw_tensor_grad does not check; the setter's message applies. */
        PyErr_SetString(PyExc_RuntimeError,
                        "grad is not available for non-differentiable "
                        "tensors");
        return NULL;
    }
    sw_tensor *g = sw_tensor_grad(t);
    if (g == NULL) {
        Py_RETURN_NONE;
    }
    return swpy_tensor_wrap(st, sw_tensor_retain(g));
}

static int autograd_lock(swpy_state *st);
static void autograd_unlock(swpy_state *st, int nested);

static int tensor_set_grad(PyObject *self, PyObject *value, void *closure) {
    sw_tensor *t = swpy_tensor_of(self);
    swpy_state *st = swpy_state_of_type(Py_TYPE(self));
    if (t == NULL || st == NULL) {
        return -1;
    }
    sw_tensor *g = NULL;
    if (value != NULL && value != Py_None) {
        if (!swpy_is_tensor(st, value)) {
            /* Differentiability comes first: the library refuses any
             * gradient for a non-differentiable tensor (t itself here, which
             * it never stores). */
            if (!sw_tensor_is_differentiable(t)) {
                return swpy_check(sw_tensor_set_grad(t, t));
            }
            PyErr_SetString(PyExc_TypeError, "grad must be a Tensor or None");
            return -1;
        }
        g = swpy_tensor_of(value);
        if (g == NULL) {
            return -1;
        }
    }
    /* Not while a reverse pass of another thread accumulates into it. */
    int nested = autograd_lock(st);
    sw_status s = sw_tensor_set_grad(t, g);
    autograd_unlock(st, nested);
    return swpy_check(s);
}

static PyObject *tensor_retain_grad(PyObject *self, PyObject *const *args,
                                    Py_ssize_t nargs, PyObject *kwnames) {
    sw_tensor *t = swpy_tensor_of(self);
    if (t == NULL) {
        return NULL;
    }
    PyObject *retain = Py_True;
    Py_ssize_t nkw = kwnames != NULL ? PyTuple_GET_SIZE(kwnames) : 0;
    if (nargs + nkw > 1 ||
        (nkw == 1 && PyUnicode_CompareWithASCIIString(
                         PyTuple_GET_ITEM(kwnames, 0), "retain") != 0)) {
        PyErr_SetString(PyExc_TypeError,
                        "retain_grad() takes one optional argument 'retain'");
        return NULL;
    }
    if (nargs + nkw == 1) {
        retain = args[0];
    }
    int truth = PyObject_IsTrue(retain);
    if (truth < 0 || swpy_check(sw_tensor_retain_grad(t, truth)) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* The gradient argument of backward: NULL for None; -1 for a non-Tensor. */
static int gradient_arg(swpy_state *st, PyObject *o, sw_tensor **out) {
    *out = NULL;
    if (o == NULL || o == Py_None) {
        return 0;
    }
    if (!swpy_is_tensor(st, o)) {
        PyErr_SetString(PyExc_TypeError,
                        "Tensor.backward requires a Tensor gradient");
        return -1;
    }
    *out = swpy_tensor_of(o);
    return *out == NULL ? -1 : 0;
}

/* Takes st->backward_lock unless this thread holds it already (returns 1
 * then); waits for it without the GIL. */
static int autograd_lock(swpy_state *st) {
    unsigned long me = PyThread_get_thread_ident();
    if (atomic_load(&st->backward_owner) == me) {
        return 1;
    }
    if (!PyThread_acquire_lock(st->backward_lock, NOWAIT_LOCK)) {
        Py_BEGIN_ALLOW_THREADS;
        PyThread_acquire_lock(st->backward_lock, WAIT_LOCK);
        Py_END_ALLOW_THREADS;
    }
    atomic_store(&st->backward_owner, me);
    return 0;
}

static void autograd_unlock(swpy_state *st, int nested) {
    if (!nested) {
        atomic_store(&st->backward_owner, 0);
        PyThread_release_lock(st->backward_lock);
    }
}

/*
 * sw_tensor_backward, one pass at a time per interpreter (two passes may
 * accumulate into the same leaf). A pass that starts on a CPU tensor runs
 * without the GIL: its kernels run while other Python threads go on, and
 * every callback it may make (Python operations, carriers and stores,
 * dispatch routes, peer hooks) takes the GIL back itself (see gil.h). A
 * pass that starts on any other carrier keeps the GIL: its per-value
 * callbacks would otherwise take it back once a value.
 */
static sw_status run_backward(swpy_state *st, sw_tensor *t, sw_tensor *g) {
    int nested = autograd_lock(st);
    sw_status s;
    if (sw_carrier_is_cpu(sw_tensor_carrier(t))) {
        /* Ctrl-C stops the pass between nodes (see gil.h); it cannot run
         * again, so a handler that raises nothing still ends it with
         * KeyboardInterrupt. */
        swpy_interrupt intr;
        swpy_interrupt_begin(&intr, SWPY_INTERRUPT_WORK);
        SWPY_NOGIL_BEGIN
        s = sw_tensor_backward(t, g);
        SWPY_NOGIL_END
        int seen = swpy_interrupt_end(&intr);
        if (s == SW_EINTERRUPTED && swpy_interrupted(seen) == 1) {
            PyErr_SetString(PyExc_KeyboardInterrupt, "operation interrupted");
        }
    } else {
        s = sw_tensor_backward(t, g);
    }
    autograd_unlock(st, nested);
    return s;
}

static PyObject *tensor_backward(PyObject *self, PyObject *const *args,
                                 Py_ssize_t nargs, PyObject *kwnames) {
    sw_tensor *t = swpy_tensor_of(self);
    swpy_state *st = swpy_state_of_type(Py_TYPE(self));
    if (t == NULL || st == NULL) {
        return NULL;
    }
    PyObject *gradient = NULL;
    Py_ssize_t nkw = kwnames != NULL ? PyTuple_GET_SIZE(kwnames) : 0;
    if (nargs + nkw > 1 ||
        (nkw == 1 && PyUnicode_CompareWithASCIIString(
                         PyTuple_GET_ITEM(kwnames, 0), "gradient") != 0)) {
        PyErr_SetString(PyExc_TypeError,
                        "backward() takes one optional argument 'gradient'");
        return NULL;
    }
    if (nargs + nkw == 1) {
        gradient = args[0];
    }
    /* A non-differentiable tensor is reported before its gradient. */
    if (!sw_tensor_is_differentiable(t)) {
        swpy_check(sw_tensor_backward(t, NULL));
        return NULL;
    }
    sw_tensor *g = NULL;
    if (gradient_arg(st, gradient, &g) < 0 ||
        swpy_check(run_backward(st, t, g)) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/*
 * Tensor.backwards_traversal(gradient, operation): the graph propagation
 * alone, seeded at operation. A stand-in tensor over the gradient's
 * storage with operation as its context lets sw_tensor_backward run just
 * the traversal (a tensor with a context accumulates nothing itself).
 */
static PyObject *tensor_backwards_traversal(PyObject *cls,
                                            PyObject *const *args,
                                            Py_ssize_t nargs,
                                            PyObject *kwnames) {
    swpy_state *st = swpy_state_of_type((PyTypeObject *)cls);
    if (st == NULL) {
        return NULL;
    }
    static const char *const names[] = {"gradient", "operation"};
    PyObject *a[2] = {NULL, NULL};
    Py_ssize_t nkw = kwnames != NULL ? PyTuple_GET_SIZE(kwnames) : 0;
    if (nargs + nkw != 2 || nargs > 2) {
        PyErr_SetString(PyExc_TypeError,
                        "backwards_traversal() takes gradient and operation");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < nargs; i++) {
        a[i] = args[i];
    }
    for (Py_ssize_t k = 0; k < nkw; k++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, k);
        int found = -1;
        for (int i = 0; i < 2; i++) {
            if (PyUnicode_CompareWithASCIIString(key, names[i]) == 0) {
                found = i;
            }
        }
        if (found < 0 || a[found] != NULL) {
            PyErr_SetString(PyExc_TypeError, "backwards_traversal() takes "
                                             "gradient and operation");
            return NULL;
        }
        a[found] = args[nargs + k];
    }
    if (a[1] == Py_None) {
        Py_RETURN_NONE;
    }
    if (!swpy_is_operation(st, a[1])) {
        PyErr_SetString(PyExc_TypeError, "operation must be an Operation");
        return NULL;
    }
    sw_op *op = ((OperationObject *)a[1])->op;
    sw_tensor *g = NULL;
    if (op == NULL || gradient_arg(st, a[0], &g) < 0) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_RuntimeError,
                            "the Operation object has been cleared");
        }
        return NULL;
    }
    if (g == NULL) {
        PyErr_SetString(PyExc_TypeError,
                        "Tensor.backward requires a Tensor gradient");
        return NULL;
    }
    sw_tensor *seed = NULL;
    sw_status s = sw_tensor_new(sw_tensor_carrier(g), sw_tensor_offset(g),
                                sw_tensor_layout(g), &seed);
    if (s == SW_OK) {
        s = sw_tensor_set_autograd_ctx(seed, op);
    }
    if (s == SW_OK) {
        s = run_backward(st, seed, g);
    }
    sw_tensor_unref(seed);
    if (swpy_check(s) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* ----------------------------------------------------------- operators */

/* A Python number (int, float, bool, or anything with __float__ or
 * __index__ that is not a Tensor) on one side of + - / . */
static int is_number(swpy_state *st, PyObject *o) {
    return !swpy_is_tensor(st, o) && PyNumber_Check(o);
}

/*
 * The tensor that stands for a scalar next to tensor t: t's layout over a
 * fresh carrier of t's class (carrier.new_like) holding the scalar in
 * every slot, so that the operation runs the carrier's own binary kernel
 * on two tensors of one layout and records a differentiable op.
 */
/*
 * The constant of scalar_tensor made natively where t is on CPU and the
 * number needs no conversion rule of new_like's (a real number next to
 * Float32, an int next to Int32): one fill of n slots, no per-element
 * Python. None where that does not apply.
 */
static PyObject *cpu_constant(swpy_state *st, sw_tensor *t, PyObject *scalar,
                              int64_t n) {
    sw_carrier *tc = sw_tensor_carrier(t);
    sw_dtype dt = sw_carrier_dtype(tc);
    int integral = PyLong_Check(scalar) && !PyBool_Check(scalar);
    int real = integral || PyFloat_Check(scalar);
    if (!sw_carrier_is_cpu(tc) || !((dt == SW_DTYPE_FLOAT32 && real) ||
                                    (dt == SW_DTYPE_INT32 && integral))) {
        Py_RETURN_NONE;
    }
    double f = 0.0;
    long long i = 0;
    if (dt == SW_DTYPE_FLOAT32) {
        f = PyFloat_AsDouble(scalar);
    } else {
        i = PyLong_AsLongLong(scalar);
        if (!PyErr_Occurred() && (i < INT32_MIN || i > INT32_MAX)) {
            Py_RETURN_NONE; /* new_like says what to do with it */
        }
    }
    if (PyErr_Occurred()) {
        return NULL;
    }
    sw_carrier *c = NULL;
    sw_status s = sw_cpu_new(n, dt, 0, 1, &c);
    if (s != SW_OK) {
        return swpy_raise(s);
    }
    if (dt == SW_DTYPE_FLOAT32) {
        float *v = sw_cpu_data(c), x = (float)f;
        for (int64_t k = 0; k < n; k++) {
            v[k] = x;
        }
    } else {
        int32_t *v = sw_cpu_data(c), x = (int32_t)i;
        for (int64_t k = 0; k < n; k++) {
            v[k] = x;
        }
    }
    sw_tensor *r = NULL;
    s = sw_tensor_new(c, 0, sw_tensor_layout(t), &r);
    sw_carrier_unref(c);
    if (s != SW_OK) {
        return swpy_raise(s);
    }
    return swpy_tensor_wrap(st, r);
}

static PyObject *scalar_tensor(swpy_state *st, PyObject *t, PyObject *scalar) {
    sw_tensor *tt = swpy_tensor_of(t);
    if (tt == NULL) {
        return NULL;
    }
    PyObject *carrier = swpy_tensor_carrier(t);
    PyObject *layout = carrier != NULL ? swpy_tensor_layout(t) : NULL;
    if (layout == NULL) {
        return NULL;
    }
    int64_t n = sw_layout_cosize(sw_tensor_layout(tt));
    PyObject *fast = cpu_constant(st, tt, scalar, n);
    if (fast != Py_None) {
        return fast; /* the constant, or NULL with an exception */
    }
    Py_DECREF(fast);
    PyObject *values = PyList_New((Py_ssize_t)n);
    if (values == NULL) {
        return NULL;
    }
    for (int64_t i = 0; i < n; i++) {
        PyList_SET_ITEM(values, (Py_ssize_t)i, Py_NewRef(scalar));
    }
    PyObject *like =
        PyObject_CallMethodOneArg(carrier, st->str_new_like, values);
    Py_DECREF(values);
    if (like == NULL) {
        return NULL;
    }
    PyObject *zero = PyLong_FromLong(0);
    PyObject *r =
        zero == NULL ? NULL
                     : PyObject_CallFunctionObjArgs((PyObject *)st->tensor_type,
                                                    like, zero, layout, NULL);
    Py_XDECREF(zero);
    Py_DECREF(like);
    return r;
}

/* op(a, b) where one side is a number: the number becomes scalar_tensor. */
static PyObject *scalar_operator(swpy_state *st, int32_t id, PyObject *a,
                                 PyObject *b) {
    int left = !swpy_is_tensor(st, a);
    /* Before the constant, which the tensor's carrier makes. */
    sw_tensor *t = swpy_tensor_of(left ? b : a);
    if (t == NULL ||
        swpy_check(sw_tensor_require_single(t, SW_ENTRY_OPERATION)) < 0) {
        return NULL;
    }
    PyObject *c = scalar_tensor(st, left ? b : a, left ? a : b);
    if (c == NULL) {
        return NULL;
    }
    PyObject *r =
        left ? swpy_fn_binary(st, id, c, b) : swpy_fn_binary(st, id, a, c);
    Py_DECREF(c);
    return r;
}

/* t + o with o a Tensor forwards to the functional operation (its errors
 * are the reference's); a number on either side is a scalar_operator. A
 * reflected call with anything else returns NotImplemented, so Python
 * raises its own TypeError. */
static PyObject *binary_operator(PyObject *a, PyObject *b, int32_t id) {
    swpy_state *st = swpy_state_of_type(Py_TYPE(a));
    if (st == NULL || !swpy_is_tensor(st, a)) {
        PyErr_Clear();
        st = swpy_state_of_type(Py_TYPE(b));
        if (st == NULL || id == SW_OP_MATMUL || !is_number(st, a)) {
            PyErr_Clear();
            Py_RETURN_NOTIMPLEMENTED;
        }
        return scalar_operator(st, id, a, b);
    }
    if (id != SW_OP_MATMUL && is_number(st, b)) {
        return scalar_operator(st, id, a, b);
    }
    return swpy_fn_binary(st, id, a, b);
}

static PyObject *tensor_nb_add(PyObject *a, PyObject *b) {
    return binary_operator(a, b, SW_OP_ADD);
}

static PyObject *tensor_nb_subtract(PyObject *a, PyObject *b) {
    return binary_operator(a, b, SW_OP_SUB);
}

static PyObject *tensor_nb_true_divide(PyObject *a, PyObject *b) {
    return binary_operator(a, b, SW_OP_DIV);
}

static PyObject *tensor_nb_matmul(PyObject *a, PyObject *b) {
    return binary_operator(a, b, SW_OP_MATMUL);
}

/* t * o is mul(t, o), and so is o * t (__rmul__). */
static PyObject *tensor_nb_multiply(PyObject *a, PyObject *b) {
    swpy_state *st = swpy_state_of_type(Py_TYPE(a));
    if (st == NULL || !swpy_is_tensor(st, a)) {
        PyErr_Clear();
        st = swpy_state_of_type(Py_TYPE(b));
        if (st == NULL) {
            return NULL;
        }
        return swpy_fn_mul(st, b, a);
    }
    return swpy_fn_mul(st, a, b);
}

static PyObject *tensor_nb_power(PyObject *a, PyObject *b, PyObject *mod) {
    swpy_state *st = swpy_state_of_type(Py_TYPE(a));
    if (st == NULL) {
        PyErr_Clear();
        Py_RETURN_NOTIMPLEMENTED;
    }
    if (!swpy_is_tensor(st, a)) {
        Py_RETURN_NOTIMPLEMENTED;
    }
    if (mod != Py_None) {
        PyErr_SetString(PyExc_TypeError,
                        "pow() with a modulus is not supported for Tensors");
        return NULL;
    }
    return swpy_fn_pow(st, a, b);
}

static PyObject *tensor_nb_negative(PyObject *a) {
    swpy_state *st = swpy_state_of_type(Py_TYPE(a));
    return st == NULL ? NULL : swpy_fn_neg(st, a);
}

/* ------------------------------------------------------ representations */

/* Tensor._from_representation(representation): the one way to a
 * multi-subtensor tensor (the library validates the representation). */
static PyObject *tensor_from_representation(PyObject *cls, PyObject *rep) {
    PyTypeObject *type = (PyTypeObject *)cls;
    swpy_state *st = swpy_state_of_type(type);
    if (st == NULL) {
        return NULL;
    }
    sw_tensor *t = NULL;
    PyObject *carrier = NULL, *layout = NULL;
    if (swpy_representation_build(st, rep, &t, &carrier, &layout) < 0) {
        return NULL;
    }
    PyObject *self = type->tp_alloc(type, 0);
    if (self == NULL) {
        Py_DECREF(carrier);
        Py_DECREF(layout);
        sw_tensor_unref(t);
        return NULL;
    }
    attach(self, t, carrier, 1, layout);
    return self;
}

/* ------------------------------------------------------------ type spec */

#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
#endif

static PyMethodDef tensor_methods[] = {
    {"size", tensor_size, METH_NOARGS, NULL},
    {"is_mutable", tensor_is_mutable, METH_NOARGS, NULL},
    {"dtype", tensor_dtype, METH_NOARGS, NULL},
    {"is_differentiable", tensor_is_differentiable, METH_NOARGS, NULL},
    {"carrier_type", tensor_carrier_type, METH_NOARGS, NULL},
    {"numel", tensor_numel, METH_NOARGS, NULL},
    {"item", tensor_item, METH_NOARGS, NULL},
    {"tolist", tensor_tolist, METH_NOARGS, NULL},
    {"numpy", tensor_numpy, METH_NOARGS, NULL},
    {"detach", tensor_detach, METH_NOARGS, NULL},
    {"_repr_html_", tensor_repr_html, METH_NOARGS, NULL},
    {"clone", tensor_clone, METH_NOARGS, NULL},
    {"get", tensor_get, METH_O, NULL},
    {"set", (PyCFunction)(void (*)(void))tensor_set, METH_FASTCALL, NULL},
    {"retain_grad", (PyCFunction)(void (*)(void))tensor_retain_grad,
     METH_FASTCALL | METH_KEYWORDS, NULL},
    {"requires_grad_", (PyCFunction)(void (*)(void))tensor_requires_grad_,
     METH_FASTCALL | METH_KEYWORDS, NULL},
    {"backward", (PyCFunction)(void (*)(void))tensor_backward,
     METH_FASTCALL | METH_KEYWORDS, NULL},
    {"backwards_traversal",
     (PyCFunction)(void (*)(void))tensor_backwards_traversal,
     METH_FASTCALL | METH_KEYWORDS | METH_CLASS, NULL},
    {"__dlpack__", (PyCFunction)(void (*)(void))swpy_tensor_dlpack,
     METH_VARARGS | METH_KEYWORDS, NULL},
    {"__dlpack_device__", swpy_tensor_dlpack_device, METH_NOARGS, NULL},
    {"_from_representation", tensor_from_representation, METH_O | METH_CLASS,
     NULL},
    {"_version_token", swpy_tensor_version_token, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef tensor_getset[] = {
    {"carrier", tensor_get_carrier, NULL, NULL, NULL},
    {"offset", tensor_get_offset, NULL, NULL, NULL},
    {"layout", tensor_get_layout, NULL, NULL, NULL},
    {"version", tensor_get_version, NULL, NULL, NULL},
    {"autograd_ctx", tensor_get_autograd_ctx, tensor_set_autograd_ctx, NULL,
     NULL},
    {"grad", tensor_get_grad, tensor_set_grad, NULL, NULL},
    {"requires_grad", tensor_get_requires_grad, tensor_set_requires_grad, NULL,
     NULL},
    {"shape", tensor_get_shape, NULL, NULL, NULL},
    {"ndim", tensor_get_ndim, NULL, NULL, NULL},
    {"T", tensor_get_T, NULL, NULL, NULL},
    {"_representation", swpy_tensor_representation, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMemberDef tensor_members[] = {
    {"__weaklistoffset__", SWPY_T_PYSSIZET, offsetof(TensorObject, weakreflist),
     SWPY_READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot tensor_slots[] = {
    {Py_tp_new, PyType_GenericNew},
    {Py_tp_init, tensor_tp_init},
    {Py_tp_repr, tensor_repr},
    {Py_tp_str, tensor_str},
    {Py_tp_dealloc, tensor_dealloc},
    {Py_tp_traverse, tensor_traverse},
    {Py_tp_clear, tensor_clear},
    {Py_tp_methods, tensor_methods},
    {Py_tp_getset, tensor_getset},
    {Py_tp_members, tensor_members},
    {Py_mp_subscript, tensor_subscript},
    {Py_mp_ass_subscript, tensor_ass_subscript},
    {Py_sq_item, tensor_sq_item},
    {Py_nb_add, tensor_nb_add},
    {Py_nb_subtract, tensor_nb_subtract},
    {Py_nb_multiply, tensor_nb_multiply},
    {Py_nb_true_divide, tensor_nb_true_divide},
    {Py_nb_power, tensor_nb_power},
    {Py_nb_negative, tensor_nb_negative},
    {Py_nb_matrix_multiply, tensor_nb_matmul},
    {0, NULL},
};

static PyType_Spec tensor_spec = {
    .name = "strideweave.tensor.Tensor",
    .basicsize = sizeof(TensorObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC |
             Py_TPFLAGS_IMMUTABLETYPE,
    .slots = tensor_slots,
};

#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

int swpy_tensor_init_type(PyObject *module, swpy_state *st) {
    PyObject *type = PyType_FromModuleAndSpec(module, &tensor_spec, NULL);
    if (type == NULL) {
        return -1;
    }
    st->tensor_type = (PyTypeObject *)type;
    st->cpu_placeholder = st->cpu_type->tp_alloc(st->cpu_type, 0);
    if (st->cpu_placeholder == NULL) {
        return -1;
    }
    /* The number slots give every reflected method too; numbers on the
     * left of + - * / are supported, 2 ** t and o @ t are not (the slots
     * stay and return NotImplemented for such a reflected call). */
    static const char *const reflected[] = {"__rpow__", "__rmatmul__"};
    PyObject *dict = st->tensor_type->tp_dict;
    for (size_t i = 0; i < sizeof reflected / sizeof reflected[0]; i++) {
        if (PyDict_DelItemString(dict, reflected[i]) < 0) {
            return -1;
        }
    }
    PyType_Modified(st->tensor_type);
    /* Out-of-range element reads: an IndexError (iteration stops there)
     * that stays the reference's ValueError. */
    PyObject *bases = PyTuple_Pack(2, PyExc_IndexError, PyExc_ValueError);
    if (bases == NULL) {
        return -1;
    }
    st->tensor_index_error = PyErr_NewExceptionWithDoc(
        "strideweave.tensor.TensorIndexError",
        "An element key outside a tensor's domain: both IndexError and "
        "ValueError.",
        bases, NULL);
    Py_DECREF(bases);
    if (st->tensor_index_error == NULL ||
        PyModule_AddObjectRef(module, "TensorIndexError",
                              st->tensor_index_error) < 0) {
        return -1;
    }
    return PyModule_AddType(module, st->tensor_type);
}
