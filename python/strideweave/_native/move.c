/*
 * Moves from Python: see move.h.
 */
#include "move.h"
#include "strideweave/extension.h"

#include <string.h>

#include "strideweave/blockdev.h"
#include "strideweave/evictable.h"
#include "strideweave/opencl.h"
#include "strideweave/representation.h"

#include "py_carrier.h"
#include "errors.h"
#include "gil.h"
#include "py_layout.h"
#include "py_tensor.h"

/* A failure status whose Python exception explains it (see swpy_raise). */
#define HOOK_FAILED SW_ERUNTIME

/* Indexes of st->move_types. */
enum {
    MOVE_ELEMENTWISE = 0,
    MOVE_CPU_TO_FILE = 1,
    MOVE_FILE_TO_CPU = 2,
    MOVE_CPU_TO_BLOCK = 3,
    MOVE_BLOCK_TO_CPU = 4
};

#define OP(o) (((OperationObject *)(o))->op)

/* ------------------------------------------------------------------ keys */

/*
 * The move key of a carrier class; TypeError "<what> must be a Carrier
 * subclass" for anything else. The name is borrowed from the class.
 */
static int key_of_type(swpy_state *st, PyObject *cls, const char *what,
                       sw_move_key *out) {
    if (!PyType_Check(cls) ||
        !PyType_IsSubtype((PyTypeObject *)cls, st->carrier_type)) {
        PyErr_Format(PyExc_TypeError, "%s must be a Carrier subclass", what);
        return -1;
    }
    if (cls == (PyObject *)st->cpu_type) {
        *out = sw_move_key_cpu();
    } else if (cls == (PyObject *)st->generic_type) {
        *out = sw_move_key_generic();
    } else if (cls == (PyObject *)st->file_type) {
        *out = sw_move_key_file();
    } else if (cls == (PyObject *)st->opencl_type) {
        *out = sw_move_key_opencl();
    } else if (cls == (PyObject *)st->evictable_type) {
        *out = sw_move_key_class(sw_evictable_class());
    } else if (cls == (PyObject *)st->blockdev_type) {
        *out = sw_move_key_blockdev();
    } else {
        /* The dispatch tag of its instances (see carrier.c). */
        out->id = cls;
        out->name = ((PyTypeObject *)cls)->tp_name;
    }
    return 0;
}

/* --------------------------------------------------------- move classes */

static sw_status base_copy(sw_op *op, sw_tensor *tensor,
                           sw_carrier *destination, sw_tensor *output,
                           int64_t element_count) {
    return sw_set_error(SW_ENOTIMPL, "MoveOperation._copy must be implemented");
}

/* The class of MoveOperation itself: unpinned, no copy of its own. */
static const sw_move_class base_class = {
    .version = SW_MOVE_CLASS_VERSION,
    .name = "MoveOperation",
    .copy = base_copy,
};

/* A library move class made for a Python subclass, with its names. */
typedef struct class_box {
    sw_move_class cls;
    char names[];
} class_box;

static void box_free(PyObject *capsule) {
    PyMem_Free(PyCapsule_GetPointer(capsule, "strideweave.move_class"));
}

/* The library classes of the native move types, by index (base: -1). */
static const sw_move_class *native_class(int i) {
    switch (i) {
    case MOVE_ELEMENTWISE:
        return sw_move_elementwise();
    case MOVE_CPU_TO_FILE:
        return sw_move_cpu_to_file();
    case MOVE_FILE_TO_CPU:
        return sw_move_file_to_cpu();
    case MOVE_CPU_TO_BLOCK:
        return sw_move_cpu_to_blockdev();
    case MOVE_BLOCK_TO_CPU:
        return sw_move_blockdev_to_cpu();
    default:
        return &base_class;
    }
}

/* The index of the nearest native move type in type's MRO (-1: only
 * MoveOperation itself). */
static int native_base(swpy_state *st, PyTypeObject *type) {
    PyObject *mro = type->tp_mro;
    for (Py_ssize_t k = 0; mro != NULL && k < PyTuple_GET_SIZE(mro); k++) {
        PyObject *t = PyTuple_GET_ITEM(mro, k);
        for (int i = 0; i < SWPY_MOVE_TYPES; i++) {
            if (t == (PyObject *)st->move_types[i]) {
                return i;
            }
        }
    }
    return -1;
}

PyTypeObject *swpy_move_type_of_class(swpy_state *st,
                                      const sw_move_class *cls) {
    if (cls == sw_move_elementwise()) {
        return st->move_types[MOVE_ELEMENTWISE];
    }
    if (cls == sw_move_cpu_to_file()) {
        return st->move_types[MOVE_CPU_TO_FILE];
    }
    if (cls == sw_move_file_to_cpu()) {
        return st->move_types[MOVE_FILE_TO_CPU];
    }
    if (cls == sw_move_cpu_to_blockdev()) {
        return st->move_types[MOVE_CPU_TO_BLOCK];
    }
    if (cls == sw_move_blockdev_to_cpu()) {
        return st->move_types[MOVE_BLOCK_TO_CPU];
    }
    if (cls == &base_class || cls == NULL || cls->ctx == NULL ||
        sw_move_class_is_route(cls)) {
        return st->move_op_type;
    }
    return (PyTypeObject *)cls->ctx;
}

static sw_status py_copy(sw_op *op, sw_tensor *tensor, sw_carrier *destination,
                         sw_tensor *output, int64_t element_count);

/* A pin attribute of a move class: None, or a Carrier subclass. */
static int pin_of(swpy_state *st, PyTypeObject *type, const char *attr,
                  sw_move_key *out) {
    PyObject *v = PyObject_GetAttrString((PyObject *)type, attr);
    if (v == NULL) {
        return -1;
    }
    int r = 0;
    if (v == Py_None) {
        out->id = NULL;
        out->name = NULL;
    } else {
        r = key_of_type(st, v, attr, out);
    }
    Py_DECREF(v);
    return r;
}

/*
 * The library move class of a MoveOperation class (borrowed: the module
 * state keeps it), made on first use. NULL with an exception set when a
 * pin attribute is neither None nor a Carrier subclass.
 */
static const sw_move_class *class_of_type(swpy_state *st, PyTypeObject *type) {
    if (type == st->move_op_type) {
        return &base_class;
    }
    for (int i = 0; i < SWPY_MOVE_TYPES; i++) {
        if (type == st->move_types[i]) {
            return native_class(i);
        }
    }
    PyObject *capsule = PyObject_GetItem(st->move_classes, (PyObject *)type);
    if (capsule != NULL) {
        /* The entry holds the capsule as long as the class lives. */
        const sw_move_class *found =
            PyCapsule_GetPointer(capsule, "strideweave.move_class");
        Py_DECREF(capsule);
        return found;
    }
    if (!PyErr_ExceptionMatches(PyExc_KeyError)) {
        return NULL;
    }
    PyErr_Clear();
    int base = native_base(st, type);
    PyTypeObject *base_type =
        base >= 0 ? st->move_types[base] : st->move_op_type;
    sw_move_key src, dst;
    if (pin_of(st, type, "source_class", &src) < 0 ||
        pin_of(st, type, "destination_class", &dst) < 0) {
        return NULL;
    }
    /* _copy overridden below the native base: the hook calls Python. */
    PyObject *mine = PyObject_GetAttr((PyObject *)type, st->str_copy_hook);
    PyObject *theirs = mine != NULL ? PyObject_GetAttr((PyObject *)base_type,
                                                       st->str_copy_hook)
                                    : NULL;
    if (theirs == NULL) {
        Py_XDECREF(mine);
        return NULL;
    }
    int overridden = mine != theirs;
    Py_DECREF(mine);
    Py_DECREF(theirs);
    const char *name = type->tp_name;
    const char *sn = src.name ? src.name : "";
    const char *dn = dst.name ? dst.name : "";
    size_t ln = strlen(name) + 1, ls = strlen(sn) + 1, ld = strlen(dn) + 1;
    class_box *box = PyMem_Malloc(sizeof *box + ln + ls + ld);
    if (box == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    memset(&box->cls, 0, sizeof box->cls);
    memcpy(box->names, name, ln);
    memcpy(box->names + ln, sn, ls);
    memcpy(box->names + ln + ls, dn, ld);
    box->cls.version = SW_MOVE_CLASS_VERSION;
    box->cls.name = box->names;
    box->cls.source_pin.id = src.id;
    box->cls.source_pin.name = src.id ? box->names + ln : NULL;
    box->cls.destination_pin.id = dst.id;
    box->cls.destination_pin.name = dst.id ? box->names + ln + ls : NULL;
    box->cls.copy = overridden ? py_copy : native_class(base)->copy;
    /* Not a reference: the box lives exactly as long as the class (it is
     * the class's entry in move_classes), and the library names the box
     * only through what keeps the class alive: instances (the objects of
     * its operations), the registry (st->move_registered) and the routes
     * back that recorded moves captured (OperationObject.move_reverse). */
    box->cls.ctx = type;
    capsule = PyCapsule_New(box, "strideweave.move_class", box_free);
    if (capsule == NULL) {
        PyMem_Free(box);
        return NULL;
    }
    int r = PyObject_SetItem(st->move_classes, (PyObject *)type, capsule);
    Py_DECREF(capsule);
    return r < 0 ? NULL : &box->cls;
}

/* ----------------------------------------------------- the Python hook */

/* A move's result shares the source's layout object (the library shares
 * the layout value; this keeps `result.layout is tensor.layout`), made
 * now if the source had none yet. Returns 0, or -1 with an exception. */
static int share_layout(PyObject *result, PyObject *source) {
    TensorObject *r = (TensorObject *)result, *s = (TensorObject *)source;
    if (r->tensor == NULL || s->tensor == NULL ||
        sw_tensor_layout(r->tensor) != sw_tensor_layout(s->tensor)) {
        return 0;
    }
    PyObject *layout = swpy_tensor_layout(source);
    if (layout == NULL) {
        return -1;
    }
    if (r->layout != layout) {
        Py_XSETREF(r->layout, Py_NewRef(layout));
    }
    return 0;
}

static sw_status py_copy_body(sw_op *op, sw_tensor *tensor,
                              sw_carrier *destination, sw_tensor *output,
                              int64_t element_count) {
    if (PyErr_Occurred()) {
        return HOOK_FAILED;
    }
    PyTypeObject *type = (PyTypeObject *)sw_move_op_class(op)->ctx;
    swpy_state *st = swpy_state_of_type(type);
    if (st == NULL) {
        return HOOK_FAILED;
    }
    /* An operation the library made (a backward pass's reverse route) has
     * no object: a fresh instance of the class runs the hook. */
    PyObject *self = sw_op_get_peer(op);
    if (self != NULL) {
        Py_INCREF(self);
    } else {
        self = PyObject_CallNoArgs((PyObject *)type);
        if (self == NULL) {
            return HOOK_FAILED;
        }
    }
    PyObject *t = swpy_tensor_wrap(st, sw_tensor_retain(tensor));
    PyObject *d = t != NULL
                      ? swpy_carrier_wrap(st, sw_carrier_retain(destination))
                      : NULL;
    PyObject *o =
        d != NULL ? swpy_tensor_wrap(st, sw_tensor_retain(output)) : NULL;
    if (o != NULL && share_layout(o, t) < 0) {
        Py_CLEAR(o);
    }
    PyObject *n = o != NULL ? PyLong_FromLongLong(element_count) : NULL;
    PyObject *r = n != NULL ? PyObject_CallMethodObjArgs(
                                  self, st->str_copy_hook, t, d, o, n, NULL)
                            : NULL;
    Py_XDECREF(t);
    Py_XDECREF(d);
    Py_XDECREF(o);
    Py_XDECREF(n);
    Py_DECREF(self);
    if (r == NULL) {
        return HOOK_FAILED;
    }
    Py_DECREF(r);
    return SW_OK;
}

static sw_status py_copy(sw_op *op, sw_tensor *tensor, sw_carrier *destination,
                         sw_tensor *output, int64_t element_count) {
    swpy_gil g = swpy_gil_ensure();
    sw_status r = py_copy_body(op, tensor, destination, output, element_count);
    swpy_gil_release(g);
    return r;
}

/* ------------------------------------------------------------- running */

/* The carrier of a Carrier object, NULL (no exception) for anything else
 * and for an object whose __init__ never ran. */
static sw_carrier *carrier_or_null(swpy_state *st, PyObject *o) {
    if (!swpy_is_carrier(st, o)) {
        return NULL;
    }
    return ((CarrierObject *)o)->carrier;
}

/* Whether a move can run without the GIL: a native copy between native
 * carriers (nothing calls back into Python), and worth it. */
static int move_without_gil(const sw_move_class *cls, sw_tensor *t,
                            sw_carrier *dst) {
    if (dst == NULL ||
        (cls != sw_move_elementwise() && cls != sw_move_cpu_to_file() &&
         cls != sw_move_file_to_cpu() && cls != sw_move_cpu_to_blockdev() &&
         cls != sw_move_blockdev_to_cpu())) {
        return 0;
    }
    sw_carrier *src = sw_tensor_carrier(t);
    int native_src = sw_carrier_is_cpu(src) || sw_carrier_is_file(src) ||
                     sw_carrier_is_blockdev(src);
    int native_dst = sw_carrier_is_cpu(dst) || sw_carrier_is_file(dst) ||
                     sw_carrier_is_blockdev(dst);
    return native_src && native_dst &&
           swpy_bulk(sw_layout_cosize(sw_tensor_layout(t)));
}

/* The (tensor, destination) arguments of a move. */
static int move_args(swpy_state *st, PyObject *const *args, Py_ssize_t nargs,
                     sw_tensor **t, sw_carrier **dst) {
    if (nargs < 1 || !swpy_is_tensor(st, args[0])) {
        PyErr_SetString(PyExc_TypeError, "tensor must be a Tensor");
        return -1;
    }
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError,
                        "a move takes a tensor and a destination carrier");
        return -1;
    }
    *t = swpy_tensor_of(args[0]);
    /* Refused before the move's class is found or made. */
    if (*t == NULL ||
        swpy_check(sw_tensor_require_single(*t, SW_ENTRY_OPERATION)) < 0) {
        return -1;
    }
    *dst = carrier_or_null(st, args[1]);
    return 0;
}

/* Whether a Python carrier class defines one of the allocation hooks
 * (the base's new_like allocates through allocate_like). */
static int allocates(swpy_state *st, PyObject *type) {
    static const char *const names[] = {"allocate_like", "new_like"};
    for (int i = 0; i < 2; i++) {
        PyObject *mine = PyObject_GetAttrString(type, names[i]);
        PyObject *base =
            mine != NULL
                ? PyObject_GetAttrString((PyObject *)st->carrier_type, names[i])
                : NULL;
        int differs = base != NULL && mine != base;
        Py_XDECREF(mine);
        Py_XDECREF(base);
        if (PyErr_Occurred()) {
            return -1;
        }
        if (differs) {
            return 1;
        }
    }
    return 0;
}

/*
 * The library checks a differentiable move's route back before any work,
 * but cannot see whether a Python carrier class can allocate: a source
 * whose class has no allocation hook fails here, after every other check,
 * as the library fails for a backend without allocation.
 */
static int check_python_reverse(swpy_state *st, sw_op *op, PyObject *tensor,
                                sw_tensor *t, sw_carrier *dst) {
    sw_carrier *src = sw_tensor_carrier(t);
    if (!swpy_carrier_is_python(src) || !sw_grad_enabled() ||
        !sw_tensor_is_differentiable(t)) {
        return 0;
    }
    PyObject *type = (PyObject *)Py_TYPE(((TensorObject *)tensor)->carrier);
    int can = allocates(st, type);
    if (can != 0) {
        return can < 0 ? -1 : 0;
    }
    sw_status s = sw_move_op_check(op, t, dst);
    if (swpy_check(s) < 0) {
        return -1;
    }
    PyErr_Format(PyExc_NotImplementedError,
                 "move has no reverse route: %s carrier does not support "
                 "allocation",
                 ((PyTypeObject *)type)->tp_name);
    return -1;
}

/*
 * A move captures its route back (the class registered for destination
 * and source) by address; when that is a Python class, the operation's
 * object keeps it alive, as the registry may let it go before the
 * operation's backward runs.
 */
static void keep_reverse(swpy_state *st, sw_op *op, sw_tensor *t,
                         sw_carrier *dst) {
    PyObject *self = sw_op_get_peer(op);
    if (self == NULL || dst == NULL) {
        return;
    }
    const sw_move_class *rev =
        sw_move_dispatch_carriers(dst, sw_tensor_carrier(t));
    PyTypeObject *type = swpy_move_type_of_class(st, rev);
    /* The classes made here live as long as the module. */
    if (type == st->move_op_type) {
        return;
    }
    for (int i = 0; i < SWPY_MOVE_TYPES; i++) {
        if (type == st->move_types[i]) {
            return;
        }
    }
    Py_XSETREF(((OperationObject *)self)->move_reverse,
               Py_NewRef((PyObject *)type));
}

PyObject *swpy_move_run(swpy_state *st, sw_op *op, PyObject *const *args,
                        Py_ssize_t nargs, swpy_run_mode mode) {
    sw_tensor *t = NULL;
    sw_carrier *dst = NULL;
    if (move_args(st, args, nargs, &t, &dst) < 0 ||
        check_python_reverse(st, op, args[0], t, dst) < 0) {
        return NULL;
    }
    keep_reverse(st, op, t, dst);
    sw_tensor *out = NULL;
    sw_status s;
    if (move_without_gil(sw_move_op_class(op), t, dst)) {
        SWPY_NOGIL_BEGIN
        s = mode == SWPY_RUN_FORWARD
                ? sw_move_op_forward(op, t, dst, &out)
                : sw_move_op_execute_lowered(op, t, dst, &out);
        SWPY_NOGIL_END
    } else {
        s = mode == SWPY_RUN_FORWARD
                ? sw_move_op_forward(op, t, dst, &out)
                : sw_move_op_execute_lowered(op, t, dst, &out);
    }
    if (swpy_check(s) < 0) {
        sw_tensor_unref(s == SW_OK ? out : NULL);
        return NULL;
    }
    PyObject *r = swpy_tensor_wrap(st, out);
    if (r != NULL && share_layout(r, args[0]) < 0) {
        Py_CLEAR(r);
    }
    return r;
}

/* A fresh instance of the operation class registered for the pair of
 * tensor's carrier and destination (an owned reference). */
static PyObject *dispatched_instance(swpy_state *st, sw_tensor *t,
                                     sw_carrier *dst) {
    const sw_move_class *cls =
        sw_move_dispatch_carriers(sw_tensor_carrier(t), dst);
    if (sw_move_class_is_route(cls)) {
        /* A transfer route: a MoveOperation over the route's class. */
        sw_op *op = NULL;
        sw_status s = sw_move_op_new(cls, &op);
        if (s != SW_OK) {
            return swpy_raise(s);
        }
        return swpy_op_new_object(st->move_op_type, op);
    }
    return PyObject_CallNoArgs((PyObject *)swpy_move_type_of_class(st, cls));
}

/* ------------------------------------------------ MoveOperation methods */

static PyObject *move_op_tp_new(PyTypeObject *type, PyObject *args,
                                PyObject *kwds) {
    swpy_state *st = swpy_state_of_type(type);
    if (st == NULL) {
        return NULL;
    }
    const sw_move_class *cls = class_of_type(st, type);
    if (cls == NULL) {
        return NULL;
    }
    sw_op *op = NULL;
    sw_status s = sw_move_op_new(cls, &op);
    if (s != SW_OK) {
        return swpy_raise(s);
    }
    return swpy_op_new_object(type, op);
}

/* _copy(tensor, destination, output, element_count): the native copy of
 * the nearest built-in class (what a subclass reaches through super()). */
static PyObject *move_op_copy(PyObject *self, PyObject *const *args,
                              Py_ssize_t nargs) {
    swpy_state *st = swpy_state_of_type(Py_TYPE(self));
    if (st == NULL) {
        return NULL;
    }
    int base = native_base(st, Py_TYPE(self));
    if (base < 0) {
        PyErr_SetString(PyExc_NotImplementedError,
                        "MoveOperation._copy must be implemented");
        return NULL;
    }
    if (nargs != 4) {
        PyErr_Format(PyExc_TypeError,
                     "_copy() takes 4 arguments (tensor, destination, "
                     "output, element_count), %zd given",
                     nargs);
        return NULL;
    }
    if (!swpy_is_tensor(st, args[0])) {
        PyErr_SetString(PyExc_TypeError, "tensor must be a Tensor");
        return NULL;
    }
    sw_carrier *dst = carrier_or_null(st, args[1]);
    if (dst == NULL) {
        PyErr_SetString(PyExc_TypeError,
                        "destination must be a Carrier instance");
        return NULL;
    }
    if (!swpy_is_tensor(st, args[2])) {
        PyErr_SetString(PyExc_TypeError, "output must be a Tensor");
        return NULL;
    }
    long long count = PyLong_AsLongLong(args[3]);
    if (count == -1 && PyErr_Occurred()) {
        return NULL;
    }
    sw_tensor *t = swpy_tensor_of(args[0]);
    sw_tensor *o = t != NULL ? swpy_tensor_of(args[2]) : NULL;
    sw_op *op = OP(self);
    if (o == NULL || op == NULL) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_RuntimeError,
                            "the Operation object has been cleared");
        }
        return NULL;
    }
    if (sw_carrier_is_released(sw_tensor_carrier(t))) {
        PyErr_SetString(PyExc_RuntimeError, "tensor carrier is released");
        return NULL;
    }
    if (swpy_check(native_class(base)->copy(op, t, dst, o, (int64_t)count)) <
        0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------ functions */

/* The classes of a registry call; 0, or -1 with TypeError. */
static int pair_args(swpy_state *st, PyObject *src, PyObject *dst,
                     sw_move_key *skey, sw_move_key *dkey) {
    if (key_of_type(st, src, "source_class", skey) < 0 ||
        key_of_type(st, dst, "destination_class", dkey) < 0) {
        return -1;
    }
    return 0;
}

static PyObject *fn_register(PyObject *module, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"source_class", "destination_class",
                             "operation_class", NULL};
    PyObject *src = NULL, *dst = NULL, *op_cls = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOO:register_move_operation",
                                     kwlist, &src, &dst, &op_cls)) {
        return NULL;
    }
    swpy_state *st = swpy_module_state(module);
    sw_move_key skey, dkey;
    if (pair_args(st, src, dst, &skey, &dkey) < 0) {
        return NULL;
    }
    if (!PyType_Check(op_cls) ||
        !PyType_IsSubtype((PyTypeObject *)op_cls, st->move_op_type)) {
        PyErr_SetString(PyExc_TypeError,
                        "operation_class must be a MoveOperation subclass");
        return NULL;
    }
    const sw_move_class *cls = class_of_type(st, (PyTypeObject *)op_cls);
    if (cls == NULL) {
        return NULL;
    }
    PyObject *pair = PyTuple_Pack(2, src, dst);
    if (pair == NULL) {
        return NULL;
    }
    sw_status s = sw_move_register(skey, dkey, cls);
    if (s != SW_OK) {
        Py_DECREF(pair);
        return swpy_raise(s);
    }
    /* The classes stay alive while the library registry names them. */
    if (PyDict_SetItem(st->move_registered, pair, op_cls) < 0) {
        (void)sw_move_unregister(skey, dkey, NULL);
        Py_DECREF(pair);
        return NULL;
    }
    Py_DECREF(pair);
    Py_RETURN_NONE;
}

static PyObject *fn_unregister(PyObject *module, PyObject *args,
                               PyObject *kwds) {
    static char *kwlist[] = {"source_class", "destination_class", NULL};
    PyObject *src = NULL, *dst = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO:unregister_move_operation",
                                     kwlist, &src, &dst)) {
        return NULL;
    }
    swpy_state *st = swpy_module_state(module);
    sw_move_key skey, dkey;
    if (pair_args(st, src, dst, &skey, &dkey) < 0) {
        return NULL;
    }
    const sw_move_class *cls = NULL;
    sw_status s = sw_move_unregister(skey, dkey, &cls);
    if (s != SW_OK) {
        return swpy_raise(s);
    }
    PyObject *r = Py_NewRef((PyObject *)swpy_move_type_of_class(st, cls));
    PyObject *pair = PyTuple_Pack(2, src, dst);
    if (pair == NULL || (PyDict_DelItem(st->move_registered, pair) < 0 &&
                         !PyErr_ExceptionMatches(PyExc_KeyError))) {
        Py_XDECREF(pair);
        Py_DECREF(r);
        return NULL;
    }
    PyErr_Clear();
    Py_DECREF(pair);
    return r;
}

static PyObject *fn_dispatch(PyObject *module, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"source_class", "destination_class", NULL};
    PyObject *src = NULL, *dst = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO:dispatch_move", kwlist,
                                     &src, &dst)) {
        return NULL;
    }
    swpy_state *st = swpy_module_state(module);
    sw_move_key skey, dkey;
    if (pair_args(st, src, dst, &skey, &dkey) < 0) {
        return NULL;
    }
    /* Pairs with a block carrier have no fallback to answer. */
    if (swpy_check(sw_move_check_blockdev(skey, dkey)) < 0) {
        return NULL;
    }
    const sw_move_class *cls = sw_move_dispatch(skey, dkey);
    return Py_NewRef((PyObject *)swpy_move_type_of_class(st, cls));
}

/* ------------------------------------------------------ await handles */

typedef struct {
    PyObject_HEAD
        /* Owned; NULL for a handle not made by move_async. */
        sw_move_request *req;
    PyObject *result; /* the moved Tensor once observed */
    PyObject *source; /* the moved Tensor object, until then */
    /* The recorded failure as an exception (type, value, traceback), made
     * once so that every wait raises the same object. */
    PyObject *exc_type, *exc_value, *exc_tb;
} AwaitObject;

#define AWAIT(o) ((AwaitObject *)(o))

/* Keeps the pending Python exception as the handle's failure. */
static void await_keep_exception(PyObject *self) {
    AwaitObject *a = AWAIT(self);
    PyErr_Fetch(&a->exc_type, &a->exc_value, &a->exc_tb);
    PyErr_NormalizeException(&a->exc_type, &a->exc_value, &a->exc_tb);
    if (a->exc_tb != NULL && a->exc_value != NULL) {
        PyException_SetTraceback(a->exc_value, a->exc_tb);
    }
}

static PyObject *await_raise(PyObject *self) {
    AwaitObject *a = AWAIT(self);
    PyErr_Restore(Py_XNewRef(a->exc_type), Py_XNewRef(a->exc_value),
                  Py_XNewRef(a->exc_tb));
    return NULL;
}

static PyObject *await_tp_new(PyTypeObject *type, PyObject *args,
                              PyObject *kwds) {
    PyErr_Format(PyExc_TypeError, "cannot create '%.200s' instances",
                 type->tp_name);
    return NULL;
}

static int await_traverse(PyObject *self, visitproc visit, void *arg) {
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(AWAIT(self)->result);
    Py_VISIT(AWAIT(self)->source);
    Py_VISIT(AWAIT(self)->exc_type);
    Py_VISIT(AWAIT(self)->exc_value);
    Py_VISIT(AWAIT(self)->exc_tb);
    return 0;
}

static int await_clear(PyObject *self) {
    Py_CLEAR(AWAIT(self)->result);
    Py_CLEAR(AWAIT(self)->source);
    Py_CLEAR(AWAIT(self)->exc_type);
    Py_CLEAR(AWAIT(self)->exc_value);
    Py_CLEAR(AWAIT(self)->exc_tb);
    return 0;
}

static void await_dealloc(PyObject *self) {
    PyTypeObject *type = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    await_clear(self);
    /* Dropping the handle neither waits for nor cancels the move. */
    sw_move_request_unref(AWAIT(self)->req);
    AWAIT(self)->req = NULL;
    type->tp_free(self);
    Py_DECREF(type);
}

static PyObject *await_get_done(PyObject *self, void *closure) {
    AwaitObject *a = AWAIT(self);
    return PyBool_FromLong(a->req == NULL || sw_move_request_done(a->req) ||
                           a->exc_value != NULL);
}

static PyObject *await_wait(PyObject *self, PyObject *unused) {
    AwaitObject *a = AWAIT(self);
    if (a->result != NULL) {
        return Py_NewRef(a->result);
    }
    if (a->exc_value != NULL || a->exc_type != NULL) {
        return await_raise(self);
    }
    if (a->req == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "this handle has no move");
        return NULL;
    }
    swpy_state *st = swpy_state_of_type(Py_TYPE(self));
    if (st == NULL) {
        return NULL;
    }
    sw_tensor *out = NULL;
    sw_status s;
    if (sw_move_request_done(a->req)) {
        s = sw_move_request_wait(a->req, &out);
    } else {
        /* The worker may need the GIL to finish. The result is taken
         * once the GIL is back: its host peer is set under the GIL by
         * whichever thread wraps it, and taking a reference reads it. */
        SWPY_NOGIL_BEGIN
        s = sw_move_request_wait(a->req, NULL);
        SWPY_NOGIL_END
        if (s == SW_OK) {
            s = sw_move_request_wait(a->req, &out);
        }
    }
    /* Another thread may have observed the outcome meanwhile. */
    if (a->result != NULL) {
        sw_tensor_unref(out);
        return Py_NewRef(a->result);
    }
    if (a->exc_value != NULL || a->exc_type != NULL) {
        return await_raise(self);
    }
    if (s != SW_OK) {
        /* A completion's own exception, collected on the move executor,
         * is raised as that very object. */
        PyObject *host = (PyObject *)sw_move_request_host_error(a->req);
        if (host != NULL) {
            sw_clear_error();
            PyErr_Restore(Py_NewRef((PyObject *)Py_TYPE(host)), Py_NewRef(host),
                          PyException_GetTraceback(host));
        } else {
            swpy_raise(s);
        }
        await_keep_exception(self);
        return await_raise(self);
    }
    /* Work with no result (residency) gives None. */
    PyObject *r = out != NULL ? swpy_tensor_wrap(st, out) : Py_NewRef(Py_None);
    if (r == NULL) {
        return NULL;
    }
    if (a->source != NULL) {
        int shared = share_layout(r, a->source);
        Py_CLEAR(a->source);
        if (shared < 0) {
            Py_DECREF(r);
            return NULL;
        }
    }
    a->result = Py_NewRef(r);
    return r;
}

PyObject *swpy_await_new(swpy_state *st, PyTypeObject *type,
                         sw_move_request *req) {
    (void)st;
    AwaitObject *handle = (AwaitObject *)type->tp_alloc(type, 0);
    if (handle == NULL) {
        sw_move_request_unref(req);
        return NULL;
    }
    handle->req = req;
    return (PyObject *)handle;
}

/* move_async(tensor, destination): the handle, or NULL with the
 * validation failure set. */
static PyObject *submit(PyObject *module, PyObject *tensor,
                        PyObject *destination) {
    swpy_state *st = swpy_module_state(module);
    PyObject *argv[2] = {tensor, destination};
    sw_tensor *t = NULL;
    sw_carrier *dst = NULL;
    if (move_args(st, argv, 2, &t, &dst) < 0) {
        return NULL;
    }
    /* One move per call: a sequence of destinations is refused first. */
    if (PyList_Check(destination) || PyTuple_Check(destination)) {
        PyErr_SetString(PyExc_TypeError,
                        "destination must be a Carrier instance");
        return NULL;
    }
    PyObject *op = dispatched_instance(st, t, dst);
    if (op == NULL) {
        return NULL;
    }
    AwaitObject *handle =
        (AwaitObject *)st->await_move_type->tp_alloc(st->await_move_type, 0);
    if (handle == NULL) {
        Py_DECREF(op);
        return NULL;
    }
    if (check_python_reverse(st, OP(op), tensor, t, dst) < 0) {
        Py_DECREF(op);
        Py_DECREF(handle);
        return NULL;
    }
    keep_reverse(st, OP(op), t, dst);
    /* A profiler names the move's events by the source's class: the
     * operation object keeps it alive for them. */
    OperationObject *o = (OperationObject *)op;
    PyObject *source = sw_carrier_get_peer(sw_tensor_carrier(t));
    if (o->dispatch_type == NULL && source != NULL) {
        o->dispatch_type = Py_NewRef((PyObject *)Py_TYPE(source));
    }
    sw_move_request *req = NULL;
    sw_status s = sw_move_op_submit(OP(op), t, dst, &req);
    Py_DECREF(op);
    if (s != SW_OK) {
        Py_DECREF(handle);
        return swpy_raise(s);
    }
    handle->req = req;
    handle->source = Py_NewRef(tensor);
    /* A move that ran here and failed in Python code (a _copy hook, a
     * carrier method): that exception is the outcome. */
    if (PyErr_Occurred()) {
        await_keep_exception((PyObject *)handle);
    }
    return (PyObject *)handle;
}

static PyObject *fn_move_async(PyObject *module, PyObject *args,
                               PyObject *kwds) {
    static char *kwlist[] = {"tensor", "destination", NULL};
    PyObject *tensor = NULL, *destination = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO:move_async", kwlist,
                                     &tensor, &destination)) {
        return NULL;
    }
    return submit(module, tensor, destination);
}

/* move(tensor, destination) is move_async(tensor, destination).wait(). */
static PyObject *fn_move(PyObject *module, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"tensor", "destination", NULL};
    PyObject *tensor = NULL, *destination = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO:move", kwlist, &tensor,
                                     &destination)) {
        return NULL;
    }
    PyObject *handle = submit(module, tensor, destination);
    if (handle == NULL) {
        return NULL;
    }
    PyObject *r = await_wait(handle, NULL);
    Py_DECREF(handle);
    return r;
}

static PyObject *fn_move_wait_idle(PyObject *module, PyObject *unused) {
    SWPY_NOGIL_BEGIN
    sw_move_wait_idle();
    SWPY_NOGIL_END
    Py_RETURN_NONE;
}

static PyObject *fn_move_hold(PyObject *module, PyObject *arg) {
    int hold = PyObject_IsTrue(arg);
    if (hold < 0) {
        return NULL;
    }
    sw_debug_move_hold(hold);
    Py_RETURN_NONE;
}

static PyObject *fn_move_pending(PyObject *module, PyObject *unused) {
    return PyLong_FromLongLong(sw_move_pending_count());
}

/* ------------------------------------------------------------ type specs */

#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
#endif

#define FC(f) ((PyCFunction)(void (*)(void))(f))

static PyMethodDef move_op_methods[] = {
    {"_copy", FC(move_op_copy), METH_FASTCALL, NULL},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot move_op_slots[] = {
    {Py_tp_new, move_op_tp_new},
    {Py_tp_methods, move_op_methods},
    {0, NULL},
};

static PyType_Slot elementwise_slots[] = {
    {0, NULL},
};

static PyType_Slot cpu_to_file_slots[] = {
    {0, NULL},
};

static PyType_Slot file_to_cpu_slots[] = {
    {0, NULL},
};

static PyType_Slot cpu_to_block_slots[] = {
    {0, NULL},
};

static PyType_Slot block_to_cpu_slots[] = {
    {0, NULL},
};

static PyMethodDef await_methods[] = {
    {"wait", await_wait, METH_NOARGS, NULL},
    {"__class_getitem__", Py_GenericAlias, METH_O | METH_CLASS, "See PEP 585."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef await_getset[] = {
    {"done", await_get_done, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot await_result_slots[] = {
    {Py_tp_new, await_tp_new},
    {Py_tp_dealloc, await_dealloc},
    {Py_tp_traverse, await_traverse},
    {Py_tp_clear, await_clear},
    {Py_tp_methods, await_methods},
    {Py_tp_getset, await_getset},
    {0, NULL},
};

static PyType_Slot await_move_slots[] = {
    {Py_tp_traverse, await_traverse},
    {Py_tp_clear, await_clear},
    {0, NULL},
};

static PyMethodDef move_functions[] = {
    {"move_async", FC(fn_move_async), METH_VARARGS | METH_KEYWORDS, NULL},
    {"_move_wait_idle", fn_move_wait_idle, METH_NOARGS, NULL},
    {"_debug_move_hold", fn_move_hold, METH_O, NULL},
    {"_move_pending_count", fn_move_pending, METH_NOARGS, NULL},
    {"move", FC(fn_move), METH_VARARGS | METH_KEYWORDS, NULL},
    {"register_move_operation", FC(fn_register), METH_VARARGS | METH_KEYWORDS,
     NULL},
    {"unregister_move_operation", FC(fn_unregister),
     METH_VARARGS | METH_KEYWORDS, NULL},
    {"dispatch_move", FC(fn_dispatch), METH_VARARGS | METH_KEYWORDS, NULL},
    {NULL, NULL, 0, NULL},
};

#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

#define MOVE_FLAGS                                                             \
    (Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_IMMUTABLETYPE)

static PyType_Spec move_op_spec = {
    .name = "strideweave.carriers.move.MoveOperation",
    .basicsize = sizeof(OperationObject),
    .flags = MOVE_FLAGS,
    .slots = move_op_slots,
};

static PyType_Spec move_specs[SWPY_MOVE_TYPES] = {
    {
        .name = "strideweave.carriers.move.ElementwiseMoveOperation",
        .basicsize = sizeof(OperationObject),
        .flags = MOVE_FLAGS,
        .slots = elementwise_slots,
    },
    {
        .name = "strideweave.carriers.move.CpuToFileBackedMoveOperation",
        .basicsize = sizeof(OperationObject),
        .flags = MOVE_FLAGS,
        .slots = cpu_to_file_slots,
    },
    {
        .name = "strideweave.carriers.move.FileBackedToCpuMoveOperation",
        .basicsize = sizeof(OperationObject),
        .flags = MOVE_FLAGS,
        .slots = file_to_cpu_slots,
    },
    {
        .name = "strideweave.carriers.move.CpuToBlockDeviceMoveOperation",
        .basicsize = sizeof(OperationObject),
        .flags = MOVE_FLAGS,
        .slots = cpu_to_block_slots,
    },
    {
        .name = "strideweave.carriers.move.BlockDeviceToCpuMoveOperation",
        .basicsize = sizeof(OperationObject),
        .flags = MOVE_FLAGS,
        .slots = block_to_cpu_slots,
    },
};

static PyType_Spec await_result_spec = {
    .name = "strideweave.carriers.move.AwaitResult",
    .basicsize = sizeof(AwaitObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC |
             Py_TPFLAGS_IMMUTABLETYPE,
    .slots = await_result_slots,
};

static PyType_Spec await_move_spec = {
    .name = "strideweave.carriers.move.AwaitMove",
    .basicsize = sizeof(AwaitObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = await_move_slots,
};

static PyType_Spec await_projection_spec = {
    .name = "strideweave.carriers.tiled_evictable.AwaitProjection",
    .basicsize = sizeof(AwaitObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = await_move_slots,
};

static PyType_Spec await_residency_spec = {
    .name = "strideweave.carriers.tiled_evictable.AwaitResidency",
    .basicsize = sizeof(AwaitObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = await_move_slots,
};

/* Sets a class attribute of an immutable type made here. */
static int set_class_attr(PyTypeObject *type, const char *name,
                          PyObject *value) {
    int r = PyDict_SetItemString(type->tp_dict, name, value);
    PyType_Modified(type);
    return r;
}

int swpy_move_init(PyObject *module, swpy_state *st) {
    st->str_copy_hook = PyUnicode_InternFromString("_copy");
    /* Keyed weakly: a class's entry (its library move class) goes with
     * the class, which everything naming that entry keeps alive. */
    PyObject *weakref = PyImport_ImportModule("weakref");
    st->move_classes =
        weakref != NULL
            ? PyObject_CallMethod(weakref, "WeakKeyDictionary", NULL)
            : NULL;
    Py_XDECREF(weakref);
    st->move_registered = PyDict_New();
    if (st->str_copy_hook == NULL || st->move_classes == NULL ||
        st->move_registered == NULL) {
        return -1;
    }
    PyObject *type = PyType_FromModuleAndSpec(module, &move_op_spec,
                                              (PyObject *)st->operation_type);
    if (type == NULL) {
        return -1;
    }
    st->move_op_type = (PyTypeObject *)type;
    if (set_class_attr(st->move_op_type, "source_class", Py_None) < 0 ||
        set_class_attr(st->move_op_type, "destination_class", Py_None) < 0 ||
        PyModule_AddType(module, st->move_op_type) < 0) {
        return -1;
    }
    PyObject *pins[SWPY_MOVE_TYPES][2] = {
        {Py_None, Py_None},
        {(PyObject *)st->cpu_type, (PyObject *)st->file_type},
        {(PyObject *)st->file_type, (PyObject *)st->cpu_type},
        {(PyObject *)st->cpu_type, (PyObject *)st->blockdev_type},
        {(PyObject *)st->blockdev_type, (PyObject *)st->cpu_type},
    };
    for (int i = 0; i < SWPY_MOVE_TYPES; i++) {
        type = PyType_FromModuleAndSpec(module, &move_specs[i],
                                        (PyObject *)st->move_op_type);
        if (type == NULL) {
            return -1;
        }
        st->move_types[i] = (PyTypeObject *)type;
        if (set_class_attr(st->move_types[i], "source_class", pins[i][0]) < 0 ||
            set_class_attr(st->move_types[i], "destination_class", pins[i][1]) <
                0 ||
            PyModule_AddType(module, st->move_types[i]) < 0) {
            return -1;
        }
    }
    type = PyType_FromModuleAndSpec(module, &await_result_spec, NULL);
    if (type == NULL) {
        return -1;
    }
    st->await_result_type = (PyTypeObject *)type;
    if (PyModule_AddType(module, st->await_result_type) < 0) {
        return -1;
    }
    type = PyType_FromModuleAndSpec(module, &await_move_spec,
                                    (PyObject *)st->await_result_type);
    if (type == NULL) {
        return -1;
    }
    st->await_move_type = (PyTypeObject *)type;
    if (PyModule_AddType(module, st->await_move_type) < 0) {
        return -1;
    }
    type = PyType_FromModuleAndSpec(module, &await_projection_spec,
                                    (PyObject *)st->await_result_type);
    if (type == NULL) {
        return -1;
    }
    st->await_projection_type = (PyTypeObject *)type;
    if (PyModule_AddType(module, st->await_projection_type) < 0) {
        return -1;
    }
    type = PyType_FromModuleAndSpec(module, &await_residency_spec,
                                    (PyObject *)st->await_result_type);
    if (type == NULL) {
        return -1;
    }
    st->await_residency_type = (PyTypeObject *)type;
    if (PyModule_AddType(module, st->await_residency_type) < 0) {
        return -1;
    }
    return PyModule_AddFunctions(module, move_functions);
}

void swpy_move_clear(swpy_state *st) {
    if (st->move_registered != NULL) {
        /* The library registry is process-wide: take out what this
         * module put in before its classes go. */
        PyObject *key, *value;
        Py_ssize_t pos = 0;
        while (PyDict_Next(st->move_registered, &pos, &key, &value)) {
            sw_move_key skey, dkey;
            if (pair_args(st, PyTuple_GET_ITEM(key, 0),
                          PyTuple_GET_ITEM(key, 1), &skey, &dkey) == 0) {
                (void)sw_move_unregister(skey, dkey, NULL);
            }
            PyErr_Clear();
            sw_clear_error();
        }
    }
    Py_CLEAR(st->move_registered);
    Py_CLEAR(st->move_classes);
    Py_CLEAR(st->move_op_type);
    for (int i = 0; i < SWPY_MOVE_TYPES; i++) {
        Py_CLEAR(st->move_types[i]);
    }
    Py_CLEAR(st->await_result_type);
    Py_CLEAR(st->await_move_type);
    Py_CLEAR(st->await_projection_type);
    Py_CLEAR(st->await_residency_type);
    Py_CLEAR(st->str_copy_hook);
}
