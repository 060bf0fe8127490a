/*
 * The Operation type: Python-defined operations plugged into the library's
 * operation class, the Python classes of the native operations, running
 * operations on Python arguments, and the values of op.ctx.
 *
 * The library owns every rule of operations (recording, saved inputs and
 * versions, dispatch metadata, the engine); this file converts arguments,
 * adapts Python methods into an sw_op_class and keeps object identity
 * through peers.
 */
#include "operation.h"

#include "strideweave/extension.h"
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

#include "py_carrier.h"
#include "errors.h"
#include "gc.h"
#include "gil.h"
#include "py_layout.h"
#include "move.h"
#include "recipe.h"
#include "py_tensor.h"

#include "strideweave/blockdev.h"
#include "strideweave/capability.h"
#include "strideweave/evictable.h"

#define OP(o) (((OperationObject *)(o))->op)

/* A failure status whose Python exception explains it (see swpy_raise). */
#define HOOK_FAILED SW_ERUNTIME

/* The peer hooks take the GIL back when the library runs without it. */
static const sw_peer_hooks peer_hooks = {swpy_peer_incref, swpy_peer_decref};

/* ------------------------------------------------- native operation classes */

/* The registry describes every native class (registry.h): its slot
 * indexes st->op_types. */

/* The slot of a native operation class with a Python class, or -1. */
static int native_index(const swpy_state *st, const sw_op_class *cls) {
    int32_t slot = sw_native_op_slot(sw_native_op_of_class(cls));
    return slot >= 0 && st->op_types[slot] != NULL ? slot : -1;
}

/* The native class of an operation that has a Python class, or NULL. An
 * operation the library made names its class itself (O(1)). */
static const sw_native_op *native_of(const swpy_state *st, const sw_op *op) {
    const sw_native_op *n = sw_native_op_of(op);
    if (n != NULL) {
        return n;
    }
    int i = native_index(st, sw_op_get_class(op));
    return i >= 0 ? sw_native_op_at(i) : NULL;
}

static const sw_op_info *native_info(const sw_native_op *n) {
    return sw_op_info_get(n->op);
}

/* The table index of the native class a Python class derives from, -1 if
 * none, -2 for the fallback class of unknown native operations. */
static int native_index_of_type(const swpy_state *st, PyTypeObject *type) {
    PyObject *mro = type->tp_mro;
    Py_ssize_t n = mro != NULL ? PyTuple_GET_SIZE(mro) : 0;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyTypeObject *base = (PyTypeObject *)PyTuple_GET_ITEM(mro, k);
        if (base == st->native_op_type) {
            return -2;
        }
        for (int i = 0; i < SW_NATIVE_OP_SLOTS; i++) {
            if (st->op_types[i] == base) {
                return i;
            }
        }
    }
    return -1;
}

/* ------------------------------------------- Python-defined operations */

static const sw_op_class python_op_class;

static int is_python_op(const sw_op *op) {
    return sw_op_get_class(op) == &python_op_class;
}

/* The object behind a slot of a Python operation, or NULL (with a status
 * in *st_out's place) when it must not run Python code. */
static PyObject *hook_self(sw_op *op, swpy_state **st) {
    PyObject *self = sw_op_get_peer(op);
    if (PyErr_Occurred()) {
        return NULL;
    }
    if (self == NULL) {
        sw_set_error(SW_ERUNTIME, "the Operation object is gone");
        return NULL;
    }
    *st = swpy_state_of_type(Py_TYPE(self));
    return *st != NULL ? self : NULL;
}

/* A view key back as a Python object (an int or a slice). */
static PyObject *key_to_py(const sw_view_key *k) {
    if (k->kind == SW_VIEW_INDEX) {
        return PyLong_FromLongLong(k->index);
    }
    PyObject *start =
        k->has_start ? PyLong_FromLongLong(k->start) : Py_NewRef(Py_None);
    PyObject *stop =
        k->has_stop ? PyLong_FromLongLong(k->stop) : Py_NewRef(Py_None);
    PyObject *step =
        k->has_step ? PyLong_FromLongLong(k->step) : Py_NewRef(Py_None);
    PyObject *r = NULL;
    if (start != NULL && stop != NULL && step != NULL) {
        r = PySlice_New(start, stop, step);
    }
    Py_XDECREF(start);
    Py_XDECREF(stop);
    Py_XDECREF(step);
    return r;
}

/* One argument of a library call as the Python object a Python operation
 * sees (a new reference). */
PyObject *swpy_arg_to_py(swpy_state *st, const sw_arg *a) {
    switch (a->kind) {
    case SW_ARG_TENSOR:
        return swpy_tensor_wrap(st, sw_tensor_retain(a->as.tensor));
    case SW_ARG_F64:
        return PyFloat_FromDouble(a->as.f);
    case SW_ARG_I64:
        return PyLong_FromLongLong(a->as.i);
    case SW_ARG_BOOL:
        return PyBool_FromLong(a->as.i != 0);
    case SW_ARG_HOST:
        return Py_NewRef((PyObject *)a->as.host);
    case SW_ARG_KEYS: {
        PyObject *t = PyTuple_New(a->as.keys.n);
        for (int32_t i = 0; t != NULL && i < a->as.keys.n; i++) {
            PyObject *k = key_to_py(&a->as.keys.keys[i]);
            if (k == NULL) {
                Py_CLEAR(t);
                break;
            }
            PyTuple_SET_ITEM(t, i, k);
        }
        return t;
    }
    case SW_ARG_RECIPE:
        if (a->as.recipe.n < 0) {
            Py_RETURN_NONE;
        }
        return swpy_idtree_to_tree(st, a->as.recipe.tokens, a->as.recipe.n);
    case SW_ARG_NONE:
        break;
    }
    Py_RETURN_NONE;
}

static sw_status pyop_forward_body(sw_op *op, int32_t nargs, const sw_arg *args,
                                   sw_tensor **out) {
    swpy_state *st = NULL;
    PyObject *self = hook_self(op, &st);
    if (self == NULL) {
        return HOOK_FAILED;
    }
    PyObject *tuple = PyTuple_New(nargs);
    if (tuple == NULL) {
        return HOOK_FAILED;
    }
    for (int32_t i = 0; i < nargs; i++) {
        PyObject *a = swpy_arg_to_py(st, &args[i]);
        if (a == NULL) {
            Py_DECREF(tuple);
            return HOOK_FAILED;
        }
        PyTuple_SET_ITEM(tuple, i, a);
    }
    Py_INCREF(self);
    PyObject *method = PyObject_GetAttr(self, st->str_forward_hook);
    PyObject *r = method != NULL ? PyObject_Call(method, tuple, NULL) : NULL;
    Py_XDECREF(method);
    Py_DECREF(self);
    Py_DECREF(tuple);
    if (r == NULL) {
        return HOOK_FAILED;
    }
    if (!swpy_is_tensor(st, r)) {
        Py_DECREF(r);
        PyErr_SetString(PyExc_TypeError,
                        "Operation._forward must return a Tensor");
        return HOOK_FAILED;
    }
    sw_tensor *t = swpy_tensor_of(r);
    if (t == NULL) {
        Py_DECREF(r);
        return HOOK_FAILED;
    }
    /* The library's reference keeps the object alive as its peer. */
    *out = sw_tensor_retain(t);
    Py_DECREF(r);
    return SW_OK;
}

static sw_status pyop_backward_body(sw_op *op, sw_tensor *gradient, int32_t n,
                                    sw_tensor **grads) {
    swpy_state *st = NULL;
    PyObject *self = hook_self(op, &st);
    if (self == NULL) {
        return HOOK_FAILED;
    }
    PyObject *g = swpy_tensor_wrap(st, sw_tensor_retain(gradient));
    if (g == NULL) {
        return HOOK_FAILED;
    }
    Py_INCREF(self);
    PyObject *r = PyObject_CallMethodOneArg(self, st->str_backward, g);
    Py_DECREF(self);
    Py_DECREF(g);
    if (r == NULL) {
        return HOOK_FAILED;
    }
    PyObject *seq = PySequence_Fast(
        r, "Operation backward must return a sequence of gradients");
    Py_DECREF(r);
    if (seq == NULL) {
        return HOOK_FAILED;
    }
    if (PySequence_Fast_GET_SIZE(seq) != n) {
        Py_DECREF(seq);
        PyErr_SetString(PyExc_ValueError,
                        "Operation backward returned wrong number of "
                        "gradients");
        return HOOK_FAILED;
    }
    for (int32_t i = 0; i < n; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
        sw_tensor *input = sw_op_input(op, i);
        if (item == Py_None) {
            continue;
        }
        if (!swpy_is_tensor(st, item)) {
            /* Gradients of inputs that take none are ignored. */
            if (input == NULL || !sw_tensor_is_differentiable(input)) {
                continue;
            }
            Py_DECREF(seq);
            PyErr_SetString(PyExc_TypeError,
                            "Tensor.backward requires a Tensor gradient");
            return HOOK_FAILED;
        }
        sw_tensor *t = swpy_tensor_of(item);
        if (t == NULL) {
            Py_DECREF(seq);
            return HOOK_FAILED;
        }
        grads[i] = sw_tensor_retain(t);
    }
    Py_DECREF(seq);
    return SW_OK;
}

/* The slots as the library calls them: each takes the GIL for its
 * whole body (see gil.h). */

static sw_status pyop_forward(sw_op *op, int32_t nargs, const sw_arg *args,
                              sw_tensor **out) {
    swpy_gil g = swpy_gil_ensure();
    sw_status r = pyop_forward_body(op, nargs, args, out);
    swpy_gil_release(g);
    return r;
}

static sw_status pyop_backward(sw_op *op, sw_tensor *gradient, int32_t n,
                               sw_tensor **grads) {
    swpy_gil g = swpy_gil_ensure();
    sw_status r = pyop_backward_body(op, gradient, n, grads);
    swpy_gil_release(g);
    return r;
}

static const sw_op_class python_op_class = {
    .version = SW_OP_CLASS_VERSION,
    .name = "Operation",
    .forward = pyop_forward,
    .backward = pyop_backward,
    .destroy = NULL,
};

/* ------------------------------------------------------- object basics */

int swpy_is_operation(swpy_state *st, PyObject *o) {
    return PyObject_TypeCheck(o, st->operation_type);
}

static sw_op *op_of(PyObject *self) {
    sw_op *op = OP(self);
    if (op == NULL) {
        PyErr_SetString(PyExc_RuntimeError,
                        "the Operation object has been cleared");
    }
    return op;
}

/* Makes self the peer of op (owned from now on). */
static void adopt(PyObject *self, sw_op *owned) {
    OP(self) = owned;
    sw_op_set_peer(owned, self, &peer_hooks);
}

PyObject *swpy_op_wrap(swpy_state *st, sw_op *owned) {
    PyObject *peer = sw_op_get_peer(owned);
    if (peer != NULL) {
        Py_INCREF(peer);
        sw_op_unref(owned);
        return peer;
    }
    int i = native_index(st, sw_op_get_class(owned));
    int tiled = sw_tiled_op_kind(owned);
    PyTypeObject *type =
        i >= 0                      ? st->op_types[i]
        : tiled > 0                 ? st->tiled_op_types[tiled - 1]
        : is_python_op(owned)       ? st->operation_type
        : sw_op_is_evictable(owned) ? st->evictable_op_type
        : sw_op_is_move(owned)
            ? swpy_move_type_of_class(st, sw_move_op_class(owned))
            : st->native_op_type;
    return swpy_op_new_object(type, owned);
}

PyObject *swpy_op_new_object(PyTypeObject *type, sw_op *owned) {
    PyObject *self = type->tp_alloc(type, 0);
    PyObject *ctx = self != NULL ? PyDict_New() : NULL;
    if (ctx == NULL) {
        Py_XDECREF(self);
        sw_op_unref(owned);
        return NULL;
    }
    ((OperationObject *)self)->ctx = ctx;
    adopt(self, owned);
    return self;
}

static PyObject *operation_tp_new(PyTypeObject *type, PyObject *args,
                                  PyObject *kwds) {
    swpy_state *st = swpy_state_of_type(type);
    if (st == NULL) {
        return NULL;
    }
    int i = native_index_of_type(st, type);
    if (i == -2) {
        PyErr_Format(PyExc_TypeError, "cannot create '%.200s' instances",
                     type->tp_name);
        return NULL;
    }
    sw_op *op = NULL;
    sw_status s = i >= 0 ? sw_native_op_make(sw_native_op_at(i), &op)
                         : sw_op_new(&python_op_class, NULL, &op);
    if (s != SW_OK) {
        return swpy_raise(s);
    }
    PyObject *self = type->tp_alloc(type, 0);
    PyObject *ctx = self != NULL ? PyDict_New() : NULL;
    if (ctx == NULL) {
        Py_XDECREF(self);
        sw_op_unref(op);
        return NULL;
    }
    ((OperationObject *)self)->ctx = ctx;
    adopt(self, op);
    return self;
}

static int operation_tp_init(PyObject *self, PyObject *args, PyObject *kwds) {
    if (PyTuple_GET_SIZE(args) != 0 ||
        (kwds != NULL && PyDict_GET_SIZE(kwds) != 0)) {
        PyErr_SetString(PyExc_TypeError, "Operation() takes no arguments");
        return -1;
    }
    return 0;
}

/* Lets go of the operation: the object stops being its peer. */
static void operation_drop(PyObject *self) {
    sw_op *op = OP(self);
    if (op == NULL) {
        return;
    }
    OP(self) = NULL;
    sw_op_set_peer(op, NULL, NULL);
    sw_op_unref(op);
}

static int operation_traverse(PyObject *self, visitproc visit, void *arg) {
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(((OperationObject *)self)->ctx);
    Py_VISIT(((OperationObject *)self)->dispatch_type);
    Py_VISIT(((OperationObject *)self)->move_reverse);
    /* The saved inputs and what they hold (see gc.c). */
    return swpy_gc_traverse_op(self, visit, arg);
}

static int operation_clear(PyObject *self) {
    /* An unreachable object's operation is garbage too (see gc.c); its
     * other holders, if any, let go of it later. */
    operation_drop(self);
    Py_CLEAR(((OperationObject *)self)->ctx);
    Py_CLEAR(((OperationObject *)self)->dispatch_type);
    Py_CLEAR(((OperationObject *)self)->move_reverse);
    return 0;
}

static void operation_dealloc(PyObject *self) {
    PyTypeObject *type = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    if (((OperationObject *)self)->weakreflist != NULL) {
        PyObject_ClearWeakRefs(self);
    }
    operation_clear(self);
    type->tp_free(self);
    Py_DECREF(type);
}

/* ------------------------------------------------------ argument lists */

/* The library arguments of one call, with the storage they point into. */
typedef struct call_args {
    sw_arg small[8];
    sw_arg *items;
    int32_t n, cap;
    sw_view_key *keys;
    rbuf output, selection;
} call_args;

static void call_args_init(call_args *a) {
    a->items = a->small;
    a->n = 0;
    a->cap = 8;
    a->keys = NULL;
    rbuf_init(&a->output);
    rbuf_init(&a->selection);
}

static void call_args_free(call_args *a) {
    if (a->items != a->small) {
        PyMem_Free(a->items);
    }
    PyMem_Free(a->keys);
    rbuf_free(&a->output);
    rbuf_free(&a->selection);
    call_args_init(a);
}

static sw_arg *call_args_push(call_args *a) {
    if (a->n == a->cap) {
        if (a->cap > INT32_MAX / 2) {
            PyErr_SetString(PyExc_ValueError, "too many operation arguments");
            return NULL;
        }
        int32_t cap = a->cap * 2;
        sw_arg *p = PyMem_Malloc((size_t)cap * sizeof *p);
        if (p == NULL) {
            PyErr_NoMemory();
            return NULL;
        }
        memcpy(p, a->items, (size_t)a->n * sizeof *p);
        if (a->items != a->small) {
            PyMem_Free(a->items);
        }
        a->items = p;
        a->cap = cap;
    }
    sw_arg *r = &a->items[a->n++];
    memset(r, 0, sizeof *r);
    return r;
}

static void host_arg(sw_arg *out, PyObject *o) {
    out->kind = SW_ARG_HOST;
    out->as.host = o;
}

/*
 * A scalar for a native operation: bool, int (int64; larger as a double),
 * float, then anything with __index__ or __float__; other objects stay
 * host objects, which the operations refuse with their own message.
 */
static int scalar_arg(PyObject *o, sw_arg *out) {
    if (PyBool_Check(o)) {
        out->kind = SW_ARG_BOOL;
        out->as.i = o == Py_True;
        return 0;
    }
    if (PyFloat_Check(o)) {
        out->kind = SW_ARG_F64;
        out->as.f = PyFloat_AS_DOUBLE(o);
        return 0;
    }
    if (PyLong_Check(o) || PyIndex_Check(o)) {
        PyObject *n = PyNumber_Index(o);
        if (n == NULL) {
            return -1;
        }
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(n, &overflow);
        if (v == -1 && !overflow && PyErr_Occurred()) {
            Py_DECREF(n);
            return -1;
        }
        if (!overflow) {
            out->kind = SW_ARG_I64;
            out->as.i = (int64_t)v;
        } else {
            double d = PyLong_AsDouble(n);
            if (d == -1.0 && PyErr_Occurred()) {
                PyErr_Clear();
                d = overflow > 0 ? INFINITY : -INFINITY;
            }
            out->kind = SW_ARG_F64;
            out->as.f = d;
        }
        Py_DECREF(n);
        return 0;
    }
    PyNumberMethods *nb = Py_TYPE(o)->tp_as_number;
    if (nb != NULL && nb->nb_float != NULL) {
        double d = PyFloat_AsDouble(o);
        if (d == -1.0 && PyErr_Occurred()) {
            return -1;
        }
        out->kind = SW_ARG_F64;
        out->as.f = d;
        return 0;
    }
    host_arg(out, o);
    return 0;
}

/* A slice bound or step: None is absent. */
static int slice_part(PyObject *o, int *has, int64_t *v) {
    if (o == Py_None) {
        *has = 0;
        *v = 0;
        return 0;
    }
    if (!PyIndex_Check(o)) {
        PyErr_SetString(PyExc_TypeError, "slice indices must be integers or "
                                         "None or have an __index__ method");
        return -1;
    }
    *has = 1;
    return swpy_index_arg(o, v);
}

/* The keys of a view: a tuple as it is, anything else as a 1-tuple. */
static int view_keys_arg(call_args *a, sw_tensor *t, PyObject *key,
                         sw_arg *out) {
    PyObject *const *items = &key;
    Py_ssize_t n = 1;
    if (PyTuple_Check(key)) {
        items = &PyTuple_GET_ITEM(key, 0);
        n = PyTuple_GET_SIZE(key);
    }
    if (n > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "too many view keys");
        return -1;
    }
    a->keys = PyMem_Calloc((size_t)n + 1, sizeof *a->keys);
    if (a->keys == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    out->kind = SW_ARG_KEYS;
    out->as.keys.n = (int32_t)n;
    out->as.keys.keys = a->keys;
    /* A wrong count is the library's error, reported before the keys. */
    if (t != NULL && n != sw_layout_rank(sw_tensor_layout(t))) {
        return 0;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *k = items[i];
        sw_view_key *vk = &a->keys[i];
        if (PySlice_Check(k)) {
            PySliceObject *s = (PySliceObject *)k;
            vk->kind = SW_VIEW_SLICE;
            if (slice_part(s->start, &vk->has_start, &vk->start) < 0 ||
                slice_part(s->stop, &vk->has_stop, &vk->stop) < 0 ||
                slice_part(s->step, &vk->has_step, &vk->step) < 0) {
                return -1;
            }
        } else if (PyIndex_Check(k)) {
            vk->kind = SW_VIEW_INDEX;
            if (swpy_index_arg(k, &vk->index) < 0) {
                return -1;
            }
        } else {
            PyErr_SetString(PyExc_TypeError,
                            "View key must be an integer or slice");
            return -1;
        }
    }
    return 0;
}

static int is_tree(swpy_state *st, PyObject *o) {
    return PyObject_TypeCheck(o, (PyTypeObject *)st->tree_type);
}

/* An exact int as a permutation entry; anything else is no integer,
 * which the operation refuses ("Permutation dimensions must be
 * integers"). */
static void order_arg(PyObject *o, sw_arg *out) {
    if (!PyLong_CheckExact(o)) {
        out->kind = SW_ARG_NONE;
        return;
    }
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    out->kind = SW_ARG_I64;
    out->as.i = overflow ? -1 : (int64_t)v;
}

/* Pushes one library argument; NULL with an exception on failure. */
static sw_arg *push_tensor_or(call_args *a, swpy_state *st, PyObject *o,
                              int *is_tensor) {
    *is_tensor = swpy_is_tensor(st, o);
    sw_tensor *t = *is_tensor ? swpy_tensor_of(o) : NULL;
    if (*is_tensor && t == NULL) {
        return NULL;
    }
    sw_arg *out = call_args_push(a);
    if (out != NULL && t != NULL) {
        /* The fields, not a copy of sw_arg_tensor's value: the slot is
         * clear already, and a copy over fresh stores stalls. */
        out->kind = SW_ARG_TENSOR;
        out->as.tensor = t;
    }
    return out;
}

/* A permutation given as one list or tuple: one argument per entry. */
static int order_list_arg(call_args *a, PyObject *o) {
    PyObject *order = PySequence_Tuple(o);
    if (order == NULL) {
        return -1;
    }
    int rc = 0;
    for (Py_ssize_t k = 0; rc == 0 && k < PyTuple_GET_SIZE(order); k++) {
        sw_arg *out = call_args_push(a);
        if (out == NULL) {
            rc = -1;
        } else {
            order_arg(PyTuple_GET_ITEM(order, k), out);
        }
    }
    Py_DECREF(order);
    return rc;
}

/* A rearrange output (i == 1) or selection (i == 2) tree. */
static int tree_arg(swpy_state *st, call_args *a, PyObject *o, Py_ssize_t i,
                    sw_arg *out) {
    if (i == 2 && o == Py_None) {
        out->kind = SW_ARG_NONE;
        return 0;
    }
    if (!is_tree(st, o)) {
        PyErr_SetString(PyExc_TypeError, i == 1 ? "output must be a Tree"
                                                : "selection must be a Tree or "
                                                  "None");
        return -1;
    }
    rbuf *b = i == 1 ? &a->output : &a->selection;
    if (swpy_idtree_recipe(st, b, o, i == 1, i == 1 ? "output" : "selection") <
        0) {
        return -1;
    }
    out->kind = SW_ARG_RECIPE;
    out->as.recipe.n = b->ntok;
    out->as.recipe.tokens = b->tok;
    return 0;
}

/*
 * The library arguments for a call of op (of native class n, or NULL).
 * A Python operation gets tensors and host objects; a native one gets
 * arguments converted for its kind. Returns 0 or -1.
 */
static int convert_args(swpy_state *st, sw_op *op, const sw_native_op *n,
                        call_args *a, PyObject *const *args, Py_ssize_t nargs) {
    int python = is_python_op(op);
    sw_op_form kind = n != NULL ? native_info(n)->form : SW_FORM_BINARY;
    if (kind == SW_FORM_VIEW || kind == SW_FORM_PERMUTE ||
        kind == SW_FORM_REARRANGE) {
        /* The tensor is checked before the keys and trees. */
        if (nargs < 1 || !swpy_is_tensor(st, args[0])) {
            PyErr_SetString(PyExc_TypeError, "tensor must be a Tensor");
            return -1;
        }
        if (kind == SW_FORM_REARRANGE && swpy_require_tree_types(st) < 0) {
            return -1;
        }
    }
    sw_tensor *first = NULL;
    for (Py_ssize_t i = 0; i < nargs; i++) {
        PyObject *o = args[i];
        if (kind == SW_FORM_PERMUTE && nargs == 2 && i == 1 &&
            (PyList_Check(o) || PyTuple_Check(o))) {
            if (order_list_arg(a, o) < 0) {
                return -1;
            }
            continue;
        }
        int is_tensor = 0;
        sw_arg *out = push_tensor_or(a, st, o, &is_tensor);
        if (out == NULL) {
            return -1;
        }
        if (is_tensor) {
            if (i == 0) {
                first = out->as.tensor;
            }
            continue;
        }
        int rc = 0;
        if (python) {
            host_arg(out, o);
        } else if (kind == SW_FORM_PERMUTE && i > 0) {
            order_arg(o, out);
        } else if (kind == SW_FORM_VIEW && i == 1) {
            rc = view_keys_arg(a, first, o, out);
        } else if (kind == SW_FORM_REARRANGE && (i == 1 || i == 2)) {
            rc = tree_arg(st, a, o, i, out);
        } else {
            rc = scalar_arg(o, out);
        }
        if (rc < 0) {
            return -1;
        }
    }
    return 0;
}

/* -------------------------------------------------------------- op.ctx */

static int ctx_set(PyObject *ctx, PyObject *key, PyObject *value) {
    if (value == NULL) {
        return -1;
    }
    int rc = PyDict_SetItem(ctx, key, value);
    Py_DECREF(value);
    return rc;
}

static double sigmoid(double x) {
    if (x >= 0) {
        return 1.0 / (1.0 + exp(-x));
    }
    double e = exp(x);
    return e / (1.0 + e);
}

/* ctx["saved_values"] of a unary operation of a host-value backend. */
static PyObject *saved_values(sw_saved_values kind, sw_tensor *x,
                              sw_tensor *r) {
    int64_t n = sw_tensor_size(x);
    PyObject *list = PyList_New((Py_ssize_t)n);
    for (int64_t i = 0; list != NULL && i < n; i++) {
        PyObject *item = NULL;
        sw_value v;
        if (kind == SW_SAVED_NOTHING) {
            item = Py_NewRef(Py_None);
        } else if (kind == SW_SAVED_OUTPUTS) {
            if (swpy_check(sw_tensor_get(r, i, &v)) == 0) {
                item = swpy_value_to_py(sw_tensor_carrier(r), &v);
            }
        } else if (swpy_check(sw_tensor_get(x, i, &v)) == 0) {
            PyObject *o = swpy_value_to_py(sw_tensor_carrier(x), &v);
            double d = o != NULL ? PyFloat_AsDouble(o) : -1.0;
            Py_XDECREF(o);
            if (o != NULL && !(d == -1.0 && PyErr_Occurred())) {
                item = PyFloat_FromDouble(sigmoid(d));
            }
        }
        if (item == NULL) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, item);
    }
    return list;
}

/* A CPU scalar as the kernel sees it: float32, widened back. */
static PyObject *float32_of(PyObject *o) {
    double d = PyFloat_AsDouble(o);
    if (d == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        return Py_NewRef(o);
    }
    return PyFloat_FromDouble((double)(float)d);
}

/* The normalised order of a permute call's arguments. */
static PyObject *order_of(PyObject *const *args, Py_ssize_t nargs) {
    if (nargs == 2 && (PyList_Check(args[1]) || PyTuple_Check(args[1]))) {
        return PySequence_Tuple(args[1]);
    }
    PyObject *t = PyTuple_New(nargs - 1);
    for (Py_ssize_t i = 1; t != NULL && i < nargs; i++) {
        PyTuple_SET_ITEM(t, i - 1, Py_NewRef(args[i]));
    }
    return t;
}

/* The default rearrange selection of a layout: its shape's nesting with
 * every leaf unnamed. */
static PyObject *default_selection(swpy_state *st, const sw_layout *l) {
    const sw_tree *shape = sw_layout_shape(l);
    int32_t n = sw_tree_ntok(shape);
    const int32_t *rec = sw_tree_recipe(shape);
    return swpy_idtree_to_tree(st, rec, n);
}

/* Whether a class keeps per-element values for its backward (a backend
 * of host values). */
static int keeps_values(const sw_native_op *n) {
    return native_info(n)->form == SW_FORM_UNARY &&
           !(n->flags & SW_NATIVE_HOST_FREE);
}

/*
 * Fills op.ctx of native class n after a successful call, as the
 * registry says the operation's context keeps: its non-tensor operands by
 * name, its output layout, a view's mapping, a host backend's saved values.
 */
static int fill_ctx(swpy_state *st, const sw_native_op *n, PyObject *ctx,
                    PyObject *const *args, Py_ssize_t nargs, PyObject *result) {
    const sw_op_info *info = native_info(n);
    PyObject *const *keys = st->operand_keys[n->op];
    TensorObject *r = (TensorObject *)result;
    PyObject *layout = swpy_tensor_layout(result);
    if (layout == NULL) {
        return -1;
    }
    sw_tensor *x = nargs > 0 && swpy_is_tensor(st, args[0])
                       ? ((TensorObject *)args[0])->tensor
                       : NULL;
    if (keeps_values(n)) {
        return x == NULL ? 0
                         : ctx_set(ctx, st->str_saved_values,
                                   saved_values(info->values, x, r->tensor));
    }
    if (info->saves & SW_SAVES_OPERANDS) {
        switch (info->form) {
        case SW_FORM_SCALAR: {
            if (nargs < 2) {
                return 0;
            }
            PyObject *v = n->flags & SW_NATIVE_F32_SCALARS ? float32_of(args[1])
                                                           : Py_NewRef(args[1]);
            if (ctx_set(ctx, keys[1], v) < 0) {
                return -1;
            }
            break;
        }
        case SW_FORM_PERMUTE:
            if (ctx_set(ctx, keys[1], order_of(args, nargs)) < 0) {
                return -1;
            }
            break;
        case SW_FORM_REARRANGE: {
            if (nargs < 2 || x == NULL) {
                return 0;
            }
            PyObject *sel = nargs > 2 && args[2] != Py_None
                                ? Py_NewRef(args[2])
                                : default_selection(st, sw_tensor_layout(x));
            if (ctx_set(ctx, keys[1], Py_NewRef(args[1])) < 0 ||
                ctx_set(ctx, keys[2], sel) < 0) {
                return -1;
            }
            break;
        }
        default:
            break;
        }
    }
    if (info->saves & SW_SAVES_MAPPING) {
        if (x == NULL) {
            return 0;
        }
        if (ctx_set(ctx, st->str_mapping_layout, Py_NewRef(layout)) < 0 ||
            ctx_set(ctx, st->str_mapping_offset,
                    PyLong_FromLongLong(sw_tensor_offset(r->tensor) -
                                        sw_tensor_offset(x))) < 0) {
            return -1;
        }
    }
    if (info->saves & SW_SAVES_OUTPUT_LAYOUT) {
        return ctx_set(ctx, st->str_output_layout, Py_NewRef(layout));
    }
    return 0;
}

static int kind_has_ctx(const sw_native_op *n) {
    return n != NULL && (native_info(n)->saves != 0 || keeps_values(n));
}

/* ------------------------------------------------------------- running */

/* Whether a call may run without the GIL: the library says it calls no
 * host callback, and it is worth it. *work is the bound on its elements
 * used to decide. */
static int runs_without_gil(const sw_op *op, const call_args *a,
                            int64_t *work_out) {
    return sw_op_runs_host_free(op, a->n, a->items, work_out) &&
           swpy_bulk(*work_out);
}

PyObject *swpy_op_run(swpy_state *st, sw_op *op, PyObject *self,
                      PyObject *const *args, Py_ssize_t nargs,
                      swpy_run_mode mode) {
    if (sw_op_is_move(op)) {
        return swpy_move_run(st, op, args, nargs, mode);
    }
    /* An Evictable adapter takes the arguments of the operation it wraps,
     * which also keeps the op.ctx values. */
    sw_op *kind_op = op;
    while (sw_op_is_evictable(kind_op)) {
        kind_op = sw_evictable_op_primary(kind_op);
    }
    int python = is_python_op(kind_op);
    const sw_native_op *n = python ? NULL : native_of(st, kind_op);
    call_args a;
    call_args_init(&a);
    if (nargs > INT32_MAX ||
        convert_args(st, kind_op, n, &a, args, nargs) < 0) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_ValueError, "too many operation arguments");
        }
        call_args_free(&a);
        return NULL;
    }
    sw_tensor *out = NULL;
    sw_status s;
    int64_t work = 0;
    if (runs_without_gil(op, &a, &work)) {
        /* Ctrl-C stops a long kernel; it runs again only if a Python
         * signal handler ran and raised nothing (see gil.h). */
        int again;
        do {
            swpy_interrupt intr;
            swpy_interrupt_begin(&intr, work);
            SWPY_NOGIL_BEGIN
            s = mode == SWPY_RUN_FORWARD
                    ? sw_op_forward(op, a.n, a.items, &out)
                    : sw_op_execute_lowered(op, a.n, a.items, &out);
            SWPY_NOGIL_END
            int seen = swpy_interrupt_end(&intr);
            again = s == SW_EINTERRUPTED && swpy_interrupted(seen) == 1;
        } while (again);
    } else {
        s = mode == SWPY_RUN_FORWARD
                ? sw_op_forward(op, a.n, a.items, &out)
                : sw_op_execute_lowered(op, a.n, a.items, &out);
    }
    call_args_free(&a);
    if (swpy_check(s) < 0) {
        sw_tensor_unref(s == SW_OK ? out : NULL);
        return NULL;
    }
    PyObject *result = swpy_tensor_wrap(st, out);
    if (result == NULL || !kind_has_ctx(n)) {
        return result;
    }
    PyObject *owner = NULL;
    if (kind_op != op &&
        (self != NULL ||
         (mode == SWPY_RUN_FORWARD &&
          sw_tensor_autograd_ctx(((TensorObject *)result)->tensor) == op))) {
        /* The wrapped operation keeps its own ctx values. */
        owner = swpy_op_wrap(st, sw_op_retain(kind_op));
        if (owner == NULL) {
            Py_DECREF(result);
            return NULL;
        }
        self = owner;
    } else if (kind_op != op) {
        self = NULL;
    } else if (self == NULL && mode == SWPY_RUN_FORWARD &&
               sw_tensor_autograd_ctx(((TensorObject *)result)->tensor) == op) {
        /* The operation outlives the call as the result's context. */
        owner = swpy_op_wrap(st, sw_op_retain(op));
        if (owner == NULL) {
            Py_DECREF(result);
            return NULL;
        }
        self = owner;
    }
    if (self != NULL && fill_ctx(st, n, ((OperationObject *)self)->ctx, args,
                                 nargs, result) < 0) {
        Py_CLEAR(result);
    }
    Py_XDECREF(owner);
    return result;
}

/* Dispatches on the tensor's carrier, by name when one is given, else by
 * number, and runs a recorded forward. */
static PyObject *call_dispatched(swpy_state *st, PyObject *tensor, int32_t id,
                                 const char *name, PyObject *const *args,
                                 Py_ssize_t nargs) {
    sw_tensor *t = swpy_tensor_of(tensor);
    if (t == NULL) {
        return NULL;
    }
    sw_op *op = NULL;
    sw_carrier *c = sw_tensor_carrier(t);
    sw_status s = name != NULL ? sw_carrier_dispatch_op(c, name, &op)
                               : sw_carrier_dispatch_id(c, id, &op);
    if (swpy_check(s) < 0) {
        sw_op_unref(s == SW_OK ? op : NULL);
        return NULL;
    }
    PyObject *r = swpy_op_run(st, op, NULL, args, nargs, SWPY_RUN_FORWARD);
    sw_op_unref(op);
    return r;
}

PyObject *swpy_op_call(swpy_state *st, PyObject *tensor, int32_t id,
                       PyObject *const *args, Py_ssize_t nargs) {
    return call_dispatched(st, tensor, id, NULL, args, nargs);
}

PyObject *swpy_op_call_named(swpy_state *st, PyObject *tensor, const char *name,
                             PyObject *const *args, Py_ssize_t nargs) {
    return call_dispatched(st, tensor, -1, name, args, nargs);
}

/* -------------------------------------------------------------- methods */

static PyObject *operation_forward(PyObject *self, PyObject *const *args,
                                   Py_ssize_t nargs) {
    sw_op *op = op_of(self);
    swpy_state *st = swpy_state_of_type(Py_TYPE(self));
    if (op == NULL || st == NULL) {
        return NULL;
    }
    return swpy_op_run(st, op, self, args, nargs, SWPY_RUN_FORWARD);
}

static PyObject *operation_forward_hook(PyObject *self, PyObject *const *args,
                                        Py_ssize_t nargs) {
    sw_op *op = op_of(self);
    swpy_state *st = swpy_state_of_type(Py_TYPE(self));
    if (op == NULL || st == NULL) {
        return NULL;
    }
    if (is_python_op(op)) {
        PyErr_SetString(PyExc_TypeError,
                        "Operation._forward must be implemented");
        return NULL;
    }
    return swpy_op_run(st, op, self, args, nargs, SWPY_RUN_LOWERED);
}

static PyObject *operation_execute_lowered(PyObject *self,
                                           PyObject *const *args,
                                           Py_ssize_t nargs) {
    sw_op *op = op_of(self);
    swpy_state *st = swpy_state_of_type(Py_TYPE(self));
    if (op == NULL || st == NULL) {
        return NULL;
    }
    return swpy_op_run(st, op, self, args, nargs, SWPY_RUN_LOWERED);
}

PyObject *swpy_execute_lowered_operation(PyObject *module,
                                         PyObject *const *args,
                                         Py_ssize_t nargs) {
    swpy_state *st = swpy_module_state(module);
    if (nargs < 1 || !swpy_is_operation(st, args[0])) {
        PyErr_SetString(PyExc_TypeError,
                        "execute_lowered_operation requires an Operation");
        return NULL;
    }
    sw_op *op = op_of(args[0]);
    if (op == NULL) {
        return NULL;
    }
    return swpy_op_run(st, op, args[0], args + 1, nargs - 1, SWPY_RUN_LOWERED);
}

static PyObject *operation_backward(PyObject *self, PyObject *gradient) {
    sw_op *op = op_of(self);
    swpy_state *st = swpy_state_of_type(Py_TYPE(self));
    if (op == NULL || st == NULL) {
        return NULL;
    }
    if (is_python_op(op)) {
        PyErr_SetString(PyExc_RuntimeError, "Tried to call pure virtual "
                                            "function \"Operation::backward\"");
        return NULL;
    }
    if (!swpy_is_tensor(st, gradient)) {
        PyErr_SetString(PyExc_TypeError, "gradient must be a Tensor");
        return NULL;
    }
    sw_tensor *g = swpy_tensor_of(gradient);
    if (g == NULL) {
        return NULL;
    }
    int32_t n = sw_op_ninputs(op);
    sw_tensor *small[4];
    sw_tensor **grads = small;
    if (n > 4) {
        grads = PyMem_Calloc((size_t)n, sizeof *grads);
        if (grads == NULL) {
            return PyErr_NoMemory();
        }
    }
    sw_status s = sw_op_backward(op, g, n, grads);
    PyObject *r = NULL;
    if (swpy_check(s) == 0) {
        r = PyTuple_New(n);
    }
    for (int32_t i = 0; i < n; i++) {
        if (s != SW_OK) {
            continue;
        }
        PyObject *item = NULL;
        if (grads[i] == NULL) {
            item = Py_NewRef(Py_None);
        } else if (r != NULL) {
            item = swpy_tensor_wrap(st, grads[i]);
        } else {
            sw_tensor_unref(grads[i]);
        }
        grads[i] = NULL;
        if (r != NULL && item == NULL) {
            Py_CLEAR(r);
        } else if (r != NULL) {
            PyTuple_SET_ITEM(r, i, item);
        } else {
            Py_XDECREF(item);
        }
    }
    if (grads != small) {
        PyMem_Free(grads);
    }
    return r;
}

static PyObject *operation_store_inputs(PyObject *self, PyObject *const *args,
                                        Py_ssize_t nargs) {
    sw_op *op = op_of(self);
    swpy_state *st = swpy_state_of_type(Py_TYPE(self));
    if (op == NULL || st == NULL) {
        return NULL;
    }
    if (nargs > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "too many inputs");
        return NULL;
    }
    sw_tensor *small[8];
    sw_tensor **in = small;
    if (nargs > 8) {
        in = PyMem_Calloc((size_t)nargs, sizeof *in);
        if (in == NULL) {
            return PyErr_NoMemory();
        }
    }
    int ok = 1;
    for (Py_ssize_t i = 0; ok && i < nargs; i++) {
        if (!swpy_is_tensor(st, args[i])) {
            PyErr_SetString(PyExc_TypeError,
                            "Operation inputs must be Tensors");
            ok = 0;
        } else {
            in[i] = swpy_tensor_of(args[i]);
            ok = in[i] != NULL;
        }
    }
    if (ok) {
        ok = swpy_check(sw_op_store_inputs(op, (int32_t)nargs, in)) == 0;
    }
    if (in != small) {
        PyMem_Free(in);
    }
    if (!ok) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *operation_inputs(PyObject *self, PyObject *unused) {
    sw_op *op = op_of(self);
    swpy_state *st = swpy_state_of_type(Py_TYPE(self));
    if (op == NULL || st == NULL) {
        return NULL;
    }
    int32_t n = sw_op_ninputs(op);
    PyObject *r = PyTuple_New(n);
    for (int32_t i = 0; r != NULL && i < n; i++) {
        PyObject *t =
            swpy_tensor_wrap(st, sw_tensor_retain(sw_op_input(op, i)));
        if (t == NULL) {
            Py_CLEAR(r);
            break;
        }
        PyTuple_SET_ITEM(r, i, t);
    }
    return r;
}

static PyObject *operation_input_versions(PyObject *self, PyObject *unused) {
    sw_op *op = op_of(self);
    if (op == NULL) {
        return NULL;
    }
    int32_t n = sw_op_ninputs(op);
    PyObject *r = PyTuple_New(n);
    for (int32_t i = 0; r != NULL && i < n; i++) {
        PyObject *v = PyLong_FromLongLong(sw_op_input_version(op, i));
        if (v == NULL) {
            Py_CLEAR(r);
            break;
        }
        PyTuple_SET_ITEM(r, i, v);
    }
    return r;
}

static PyObject *operation_validate_input_versions(PyObject *self,
                                                   PyObject *unused) {
    sw_op *op = op_of(self);
    if (op == NULL || swpy_check(sw_op_validate_input_versions(op)) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *operation_get_ctx(PyObject *self, void *closure) {
    PyObject *ctx = ((OperationObject *)self)->ctx;
    if (ctx == NULL) {
        ctx = PyDict_New();
        ((OperationObject *)self)->ctx = ctx;
    }
    return Py_XNewRef(ctx);
}

static PyObject *operation_get_invocation(PyObject *self, void *closure) {
    sw_op *op = op_of(self);
    return op != NULL ? swpy_definition_invocation(op) : NULL;
}

static PyObject *operation_get_saved(PyObject *self, void *closure) {
    sw_op *op = op_of(self);
    swpy_state *st = swpy_state_of_type(Py_TYPE(self));
    return op != NULL && st != NULL ? swpy_definition_saved(st, op) : NULL;
}

static PyObject *operation_get_name(PyObject *self, void *closure) {
    sw_op *op = op_of(self);
    if (op == NULL) {
        return NULL;
    }
    const char *name = sw_op_dispatch_name(op);
    if (name == NULL) {
        Py_RETURN_NONE;
    }
    return PyUnicode_FromString(name);
}

/*
 * The built-in carrier types whose operations are tagged with their
 * backend class rather than with the Python class: one table for both
 * directions of the mapping, so that they cannot disagree.
 */
enum { BUILTIN_TAGS = 6 };

static void builtin_tags(swpy_state *st, PyTypeObject *types[BUILTIN_TAGS],
                         const void *tags[BUILTIN_TAGS]) {
    types[0] = st->cpu_type;
    tags[0] = st->cpu_class;
    types[1] = st->generic_type;
    tags[1] = st->generic_class;
    types[2] = st->evictable_type;
    tags[2] = sw_evictable_class();
    /* FileBacked dispatches no operation, but moves name their source. */
    types[3] = st->file_type;
    tags[3] = sw_file_class();
    types[4] = st->blockdev_type;
    tags[4] = sw_blockdev_class();
    types[5] = st->opencl_type;
    tags[5] = sw_opencl_class();
}

/*
 * The Python class of a carrier tag: a built-in backend's class, or known,
 * the Python class that dispatched (known: the dispatch_type of the
 * operation object, which keeps it alive; tags of Python classes are their
 * addresses, which alone cannot say whether the class still exists). None
 * for no tag and for an unknown one.
 */
static PyObject *tag_type(swpy_state *st, const void *tag, PyObject *known) {
    if (tag == NULL) {
        Py_RETURN_NONE;
    }
    PyTypeObject *types[BUILTIN_TAGS];
    const void *tags[BUILTIN_TAGS];
    builtin_tags(st, types, tags);
    for (int i = 0; i < BUILTIN_TAGS; i++) {
        if (tag == tags[i]) {
            return Py_NewRef((PyObject *)types[i]);
        }
    }
    if (known != NULL && (const void *)known == tag) {
        return Py_NewRef(known);
    }
    if (tag == sw_tiled_class()) {
        return Py_NewRef(st->tiled_type != NULL ? (PyObject *)st->tiled_type
                                                : Py_None);
    }
    /* A definition-backed class's tag is the class itself, and the
     * library forgets its definition when the class goes: while there is
     * one, the class is alive. */
    if (sw_carrier_has_definition(tag)) {
        return Py_NewRef((PyObject *)tag);
    }
    Py_RETURN_NONE;
}

PyObject *swpy_carrier_tag_type(swpy_state *st, const void *tag,
                                PyObject *known) {
    return tag_type(st, tag, known);
}

const void *swpy_carrier_class_tag(swpy_state *st, PyTypeObject *cls) {
    if (cls == st->tiled_type && cls != NULL) {
        return sw_tiled_class();
    }
    PyTypeObject *types[BUILTIN_TAGS];
    const void *tags[BUILTIN_TAGS];
    builtin_tags(st, types, tags);
    for (int i = 0; i < BUILTIN_TAGS; i++) {
        if (cls == types[i]) {
            return tags[i];
        }
    }
    return cls;
}

PyObject *swpy_op_class_type(swpy_state *st, const sw_op_class *cls) {
    if (cls == &python_op_class) {
        return Py_NewRef((PyObject *)st->operation_type);
    }
    if (cls == sw_evictable_op_class()) {
        return Py_NewRef((PyObject *)st->evictable_op_type);
    }
    int i = native_index(st, cls);
    return Py_NewRef(i >= 0 ? (PyObject *)st->op_types[i]
                            : (PyObject *)st->native_op_type);
}

static PyObject *operation_get_carrier_class(PyObject *self, void *closure) {
    sw_op *op = op_of(self);
    swpy_state *st = swpy_state_of_type(Py_TYPE(self));
    if (op == NULL || st == NULL) {
        return NULL;
    }
    return tag_type(st, sw_op_dispatch_tag(op),
                    ((OperationObject *)self)->dispatch_type);
}

/* ------------------------------------------------------------- dispatch */

/* The route of a carrier with a Python class: self._dispatch_op(name). */
static sw_status route_dispatch_body(sw_carrier *c, const char *name, void *ctx,
                                     sw_op **out) {
    if (PyErr_Occurred()) {
        return HOOK_FAILED;
    }
    PyObject *self = sw_carrier_get_peer(c);
    if (self == NULL) {
        return sw_set_error(SW_ERUNTIME, "the carrier object is gone");
    }
    swpy_state *st = swpy_state_of_type(Py_TYPE(self));
    if (st == NULL) {
        return HOOK_FAILED;
    }
    Py_INCREF(self);
    PyObject *method = PyObject_GetAttr(self, st->str_dispatch_hook);
    Py_DECREF(self);
    if (method == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) {
            return HOOK_FAILED;
        }
        PyErr_Clear();
        /* No _dispatch_op: the base's default. */
        PyErr_Format(PyExc_NotImplementedError,
                     "Carrier class does not support operation '%s'", name);
        return SW_ENOTIMPL;
    }
    PyObject *r = PyObject_CallFunction(method, "s", name);
    Py_DECREF(method);
    if (r == NULL) {
        return HOOK_FAILED;
    }
    if (!swpy_is_operation(st, r) || OP(r) == NULL) {
        Py_DECREF(r);
        PyErr_SetString(PyExc_TypeError,
                        "Carrier._dispatch_op must return an Operation");
        return HOOK_FAILED;
    }
    if (sw_op_dispatch_name(OP(r)) != NULL) {
        Py_DECREF(r);
        PyErr_SetString(PyExc_TypeError, "Carrier._dispatch_op must return a "
                                         "fresh Operation instance");
        return HOOK_FAILED;
    }
    {
        OperationObject *o = (OperationObject *)r;
        /* The library tags a fresh operation with ctx, the class that
         * installed this route; the object keeps the class for the tag
         * (the library refuses one dispatched before). */
        if (sw_op_dispatch_name(o->op) == NULL && o->dispatch_type == NULL &&
            ctx == (void *)Py_TYPE(self)) {
            o->dispatch_type = Py_NewRef(ctx);
        }
        *out = sw_op_retain(o->op);
    }
    Py_DECREF(r);
    return SW_OK;
}

/* The slots as the library calls them: each takes the GIL for its
 * whole body (see gil.h). */

static sw_status route_dispatch(sw_carrier *c, const char *name, void *ctx,
                                sw_op **out) {
    swpy_gil g = swpy_gil_ensure();
    sw_status r = route_dispatch_body(c, name, ctx, out);
    swpy_gil_release(g);
    return r;
}

int swpy_carrier_install_dispatch(swpy_state *st, PyObject *self,
                                  sw_carrier *c) {
    /* The class is the tag and the route's context, by address: nothing
     * here keeps it alive (its instances do, and so do the operations it
     * dispatched, through their objects' dispatch_type). */
    PyObject *type = (PyObject *)Py_TYPE(self);
    sw_carrier_set_dispatch(c, route_dispatch, type, type);
    return 0;
}

static int name_arg(PyObject *name, const char **out) {
    if (!PyUnicode_Check(name)) {
        PyErr_Format(PyExc_TypeError,
                     "operation name must be a str, not '%.200s'",
                     Py_TYPE(name)->tp_name);
        return -1;
    }
    *out = PyUnicode_AsUTF8(name);
    return *out == NULL ? -1 : 0;
}

PyObject *swpy_carrier_dispatch_op(PyObject *self, PyObject *name) {
    swpy_state *st = swpy_state_of_type(Py_TYPE(self));
    const char *text = NULL;
    if (st == NULL || name_arg(name, &text) < 0) {
        return NULL;
    }
    sw_carrier *c = swpy_carrier_of(self, "Carrier");
    if (c == NULL) {
        return NULL;
    }
    sw_op *op = NULL;
    sw_status s = sw_carrier_dispatch_op(c, text, &op);
    if (swpy_check(s) < 0) {
        sw_op_unref(s == SW_OK ? op : NULL);
        return NULL;
    }
    return swpy_op_wrap(st, op);
}

PyObject *swpy_backend_dispatch_hook(PyObject *self, PyObject *name) {
    swpy_state *st = swpy_state_of_type(Py_TYPE(self));
    const char *text = NULL;
    if (st == NULL || name_arg(name, &text) < 0) {
        return NULL;
    }
    sw_carrier *c = swpy_carrier_of(self, "Carrier");
    if (c == NULL) {
        return NULL;
    }
    /* The backend's own operation, whatever route the carrier has. */
    sw_op *op = NULL;
    sw_status s = sw_carrier_backend_op(c, text, &op);
    if (swpy_check(s) < 0) {
        sw_op_unref(s == SW_OK ? op : NULL);
        return NULL;
    }
    return swpy_op_wrap(st, op);
}

/* ------------------------------------------------------- documentation */
/* ------------------------------------------------------------ type specs */

#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
#endif

#define FC(f) ((PyCFunction)(void (*)(void))(f))

static PyMethodDef operation_methods[] = {
    {"forward", FC(operation_forward), METH_FASTCALL, NULL},
    {"_forward", FC(operation_forward_hook), METH_FASTCALL, NULL},
    {"backward", operation_backward, METH_O, NULL},
    {"_execute_lowered", FC(operation_execute_lowered), METH_FASTCALL, NULL},
    {"store_inputs", FC(operation_store_inputs), METH_FASTCALL, NULL},
    {"inputs", operation_inputs, METH_NOARGS, NULL},
    {"input_versions", operation_input_versions, METH_NOARGS, NULL},
    {"validate_input_versions", operation_validate_input_versions, METH_NOARGS,
     NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef operation_getset[] = {
    {"ctx", operation_get_ctx, NULL, NULL, NULL},
    {"_operation_name", operation_get_name, NULL, NULL, NULL},
    {"_resolved_invocation", operation_get_invocation, NULL,
     "The ResolvedInvocation of a defined operation's autograd node, or "
     "None (any other operation).",
     NULL},
    {"_saved_operands", operation_get_saved, NULL,
     "The operands a defined operation's node saved for its VJP, as a "
     "tuple; () for any other operation and after backward.",
     NULL},
    {"_dispatch_carrier_class", operation_get_carrier_class, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMemberDef operation_members[] = {
    {"__weaklistoffset__", SWPY_T_PYSSIZET,
     offsetof(OperationObject, weakreflist), SWPY_READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot operation_slots[] = {
    {Py_tp_new, operation_tp_new},
    {Py_tp_init, operation_tp_init},
    {Py_tp_dealloc, operation_dealloc},
    {Py_tp_traverse, operation_traverse},
    {Py_tp_clear, operation_clear},
    {Py_tp_methods, operation_methods},
    {Py_tp_getset, operation_getset},
    {Py_tp_members, operation_members},
    {0, NULL},
};

static PyType_Spec operation_spec = {
    .name = "strideweave.carriers.operation_helpers.Operation",
    .basicsize = sizeof(OperationObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC |
             Py_TPFLAGS_IMMUTABLETYPE,
    .slots = operation_slots,
};

static PyType_Slot native_op_slots[] = {
    {Py_tp_traverse, operation_traverse},
    {Py_tp_clear, operation_clear},
    {0, NULL},
};

static PyType_Spec native_op_spec = {
    .name = "strideweave.carriers.operation_helpers.NativeOperation",
    .basicsize = sizeof(OperationObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = native_op_slots,
};

/* The nodes of TiledEvictable projections and scatters. */
static PyType_Spec tiled_op_specs[2] = {
    {
        .name = "strideweave.carriers.tiled_evictable.projection."
                "_ProjectionOperation",
        .basicsize = sizeof(OperationObject),
        .flags =
            Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE,
        .slots = native_op_slots,
    },
    {
        .name = "strideweave.carriers.tiled_evictable.projection."
                "_ScatterOperation",
        .basicsize = sizeof(OperationObject),
        .flags =
            Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE,
        .slots = native_op_slots,
    },
};

#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

/* The docstring of table entry i (a new string; CPython copies it). */
/* The Python module of a backend's native classes. */
static void backend_module(const sw_native_op *n, char *buf, size_t size) {
    if (strcmp(n->backend, "shared") == 0) {
        PyOS_snprintf(buf, size, "strideweave.carriers.shared_ops");
    } else {
        PyOS_snprintf(buf, size, "strideweave.carriers.%s.ops", n->backend);
    }
}

/* The docstring of a native class, from its registry entry. */
static char *op_doc(const sw_native_op *n) {
    const char *name = n->cls.name;
    const char *op = sw_op_info_get(n->op)->name;
    const char *carrier =
        strcmp(n->backend, "generic") == 0 ? "Generic([1.0])" : "CPU(1)";
    char *buf = PyMem_Malloc(2048);
    if (buf == NULL) {
        return NULL;
    }
    PyOS_snprintf(buf, 2048,
                  "%s()\n--\n\n%s\n\nThe native operation '%s' of the %s "
                  "backend: forward(*inputs) runs it and records the "
                  "autograd context, backward(gradient) returns one gradient "
                  "per saved input.\n\nReturns:\n    %s: the operation.\n\n"
                  "Examples:\n    >>> op = %s.dispatch_op('%s')\n"
                  "    >>> type(op).__name__, op._operation_name\n"
                  "    ('%s', '%s')\n",
                  name, n->summary, op, n->backend, name, carrier, op, name,
                  op);
    return buf;
}

static int intern(PyObject **slot, const char *text) {
    *slot = PyUnicode_InternFromString(text);
    return *slot == NULL ? -1 : 0;
}

/* Slot values are void *; see the note in layout.c. */
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
#endif
static const PyType_Slot op_type_slots[] = {
    {Py_tp_doc, NULL},
    {Py_tp_traverse, operation_traverse},
    {Py_tp_clear, operation_clear},
    {0, NULL},
};
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

/* Makes the Python class of the native class in slot i. */
static int make_op_type(PyObject *module, swpy_state *st, int i) {
    const sw_native_op *n = sw_native_op_at(i);
    char tp_name[256];
    backend_module(n, tp_name, sizeof tp_name);
    size_t len = strlen(tp_name);
    PyOS_snprintf(tp_name + len, sizeof tp_name - len, ".%s", n->cls.name);
    char *doc = op_doc(n);
    if (doc == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    PyType_Slot slots[sizeof op_type_slots / sizeof op_type_slots[0]];
    memcpy(slots, op_type_slots, sizeof slots);
    slots[0].pfunc = doc;
    PyType_Spec spec = {
        .name = tp_name,
        .basicsize = sizeof(OperationObject),
        .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC |
                 Py_TPFLAGS_IMMUTABLETYPE,
        .slots = slots,
    };
    PyObject *type =
        PyType_FromModuleAndSpec(module, &spec, (PyObject *)st->operation_type);
    PyMem_Free(doc);
    if (type == NULL) {
        return -1;
    }
    st->op_types[i] = (PyTypeObject *)type;
    return PyModule_AddType(module, st->op_types[i]);
}

/* The context keys of every operation's operands, by the registry. */
static int intern_operand_keys(swpy_state *st) {
    for (int32_t id = 0; id < SW_OP_BUILTIN_COUNT; id++) {
        const sw_op_info *info = sw_op_info_get(id);
        for (int32_t k = 0; k < info->noperands && k < SWPY_MAX_OPERANDS; k++) {
            if (intern(&st->operand_keys[id][k], info->operands[k].name) < 0) {
                return -1;
            }
        }
    }
    return 0;
}

int swpy_operation_init_types(PyObject *module, swpy_state *st) {
    if (intern(&st->str_forward_hook, "_forward") < 0 ||
        intern(&st->str_backward, "backward") < 0 ||
        intern(&st->str_dispatch_hook, "_dispatch_op") < 0 ||
        intern(&st->str_output_layout, "output_layout") < 0 ||
        intern(&st->str_mapping_layout, "mapping_layout") < 0 ||
        intern(&st->str_mapping_offset, "mapping_offset") < 0 ||
        intern(&st->str_saved_values, "saved_values") < 0 ||
        intern_operand_keys(st) < 0) {
        return -1;
    }
    /* Library carriers that name the backends and make their operations. */
    sw_status s = sw_cpu_new(0, SW_DTYPE_FLOAT32, 1, 0, &st->cpu_template);
    if (s == SW_OK) {
        s = sw_generic_new_doubles(0, NULL, 1, &st->generic_template);
    }
    if (s != SW_OK) {
        swpy_raise(s);
        return -1;
    }
    st->cpu_class = sw_carrier_get_class(st->cpu_template);
    st->generic_class = sw_carrier_get_class(st->generic_template);
    PyObject *type = PyType_FromModuleAndSpec(module, &operation_spec, NULL);
    if (type == NULL) {
        return -1;
    }
    st->operation_type = (PyTypeObject *)type;
    if (PyModule_AddType(module, st->operation_type) < 0) {
        return -1;
    }
    type = PyType_FromModuleAndSpec(module, &native_op_spec,
                                    (PyObject *)st->operation_type);
    if (type == NULL) {
        return -1;
    }
    st->native_op_type = (PyTypeObject *)type;
    if (PyModule_AddType(module, st->native_op_type) < 0) {
        return -1;
    }
    for (int i = 0; i < 2; i++) {
        type = PyType_FromModuleAndSpec(module, &tiled_op_specs[i],
                                        (PyObject *)st->operation_type);
        if (type == NULL) {
            return -1;
        }
        st->tiled_op_types[i] = (PyTypeObject *)type;
        if (PyModule_AddType(module, st->tiled_op_types[i]) < 0) {
            return -1;
        }
    }
    for (int i = 0; i < SW_NATIVE_OP_SLOTS; i++) {
        if (sw_native_op_at(i) != NULL && make_op_type(module, st, i) < 0) {
            return -1;
        }
    }
    return 0;
}

void swpy_operation_free_state(swpy_state *st) {
    sw_carrier_unref(st->cpu_template);
    sw_carrier_unref(st->generic_template);
    st->cpu_template = NULL;
    st->generic_template = NULL;
}
