/*
 * The Evictable carrier type and the EvictableOperation type: thin
 * wrappers over sw_evictable_* (strideweave/evictable.h), which owns every
 * rule of the hierarchy, its transitions and the adapter.
 *
 * Transitions run with the GIL held: a tier may be a Python carrier, and
 * the elementwise move calls its methods.
 */
#include "py_evictable.h"

#include "py_carrier.h"
#include "errors.h"
#include "py_layout.h"
#include "operation.h"
#include "py_tensor.h"

#include "strideweave/evictable.h"

static sw_carrier *ev_of(PyObject *self) {
    return swpy_backend_of(self, sw_carrier_is_evictable, "Evictable");
}

/* The carrier of a constructor argument, or NULL with TypeError. */
static sw_carrier *tier_arg(swpy_state *st, PyObject *o, const char *name) {
    if (!swpy_is_carrier(st, o)) {
        PyErr_Format(PyExc_TypeError, "%s must be a Carrier instance", name);
        return NULL;
    }
    return swpy_carrier_of(o, "Carrier");
}

static int ev_tp_init(PyObject *self, PyObject *args, PyObject *kwds) {
    PyObject *primary, *secondary;
    if (kwds != NULL && PyDict_GET_SIZE(kwds) != 0) {
        PyErr_SetString(PyExc_TypeError,
                        "Evictable() takes no keyword arguments");
        return -1;
    }
    if (!PyArg_ParseTuple(args, "OO:Evictable", &primary, &secondary)) {
        return -1;
    }
    swpy_state *st = swpy_state_of_type(Py_TYPE(self));
    if (st == NULL) {
        return -1;
    }
    sw_carrier *p = tier_arg(st, primary, "primary");
    if (p == NULL) {
        return -1;
    }
    sw_carrier *s = tier_arg(st, secondary, "secondary");
    if (s == NULL) {
        return -1;
    }
    sw_carrier *c = NULL;
    if (swpy_check(sw_evictable_new(p, s, &c)) < 0) {
        return -1;
    }
    return swpy_carrier_adopt(self, c, "Evictable");
}

static PyObject *tier(PyObject *self, int which) {
    sw_carrier *c = ev_of(self);
    swpy_state *st = swpy_state_of_type(Py_TYPE(self));
    if (c == NULL || st == NULL) {
        return NULL;
    }
    sw_carrier *t = which ? sw_evictable_secondary(c) : sw_evictable_primary(c);
    return swpy_carrier_wrap(st, sw_carrier_retain(t));
}

static PyObject *ev_get_primary(PyObject *self, void *closure) {
    return tier(self, 0);
}

static PyObject *ev_get_secondary(PyObject *self, void *closure) {
    return tier(self, 1);
}

static PyObject *ev_is_evicted(PyObject *self, PyObject *unused) {
    sw_carrier *c = ev_of(self);
    return c == NULL ? NULL : PyBool_FromLong(sw_evictable_is_evicted(c));
}

static PyObject *ev_evict(PyObject *self, PyObject *unused) {
    sw_carrier *c = ev_of(self);
    if (c == NULL || swpy_check(sw_evictable_evict(c)) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *ev_promote(PyObject *self, PyObject *unused) {
    sw_carrier *c = ev_of(self);
    if (c == NULL || swpy_check(sw_evictable_promote(c)) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static const swpy_backend ev_backend = {
    .name = "Evictable",
    .is = sw_carrier_is_evictable,
    .exact_new_like = 0,
    .dtype_type_error = 1,
    .gil = SWPY_GIL_KEEP,
};

static PyObject *ev_new_like(PyObject *self, PyObject *args, PyObject *kwds) {
    return swpy_backend_new_like(&ev_backend, self, args, kwds);
}

static PyObject *ev_allocate_like(PyObject *self, PyObject *args,
                                  PyObject *kwds) {
    return swpy_backend_allocate_like(&ev_backend, self, args, kwds);
}

static PyObject *ev_scatter(PyObject *self, PyObject *args, PyObject *kwds) {
    swpy_scatter_args a;
    if (swpy_backend_scatter_args(&ev_backend, self, args, kwds, &a) < 0) {
        return NULL;
    }
    sw_carrier *c = a.carrier;
    swpy_state *st = a.st;
    PyObject *src_obj = a.src, *onto_obj = a.onto, *mapping_obj = a.mapping;
    PyObject *offset_obj = a.offset;
    int64_t offset = 0;
    if (offset_obj != NULL && swpy_index_arg(offset_obj, &offset) < 0) {
        return NULL;
    }
    /* Arguments of the wrong kind reach the library as NULL, which
     * reports them in the reference's order. */
    sw_tensor *src =
        swpy_is_tensor(st, src_obj) ? swpy_tensor_of(src_obj) : NULL;
    sw_tensor *onto =
        swpy_is_tensor(st, onto_obj) ? swpy_tensor_of(onto_obj) : NULL;
    sw_layout *mapping =
        swpy_is_layout(st, mapping_obj) ? swpy_layout_get(mapping_obj) : NULL;
    if (PyErr_Occurred()) {
        return NULL;
    }
    if (swpy_check(sw_carrier_scatter(c, src, onto, mapping, offset)) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *ev_dlpack_info(PyObject *self, PyObject *unused) {
    PyErr_SetString(PyExc_BufferError,
                    "DLPack is not supported for Evictable carrier");
    return NULL;
}

/* ------------------------------------------------------------ type spec */

#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
#endif

#define KW(f) ((PyCFunction)(void (*)(void))(f))

static PyMethodDef ev_methods[] = {
    {"size", swpy_carrier_size, METH_NOARGS, NULL},
    {"dtype", swpy_carrier_dtype, METH_NOARGS, NULL},
    {"get_value", swpy_carrier_get_value, METH_O, NULL},
    {"set_value", KW(swpy_carrier_set_value), METH_FASTCALL, NULL},
    {"is_evicted", ev_is_evicted, METH_NOARGS, NULL},
    {"evict", ev_evict, METH_NOARGS, NULL},
    {"promote", ev_promote, METH_NOARGS, NULL},
    {"new_like", KW(ev_new_like), METH_VARARGS | METH_KEYWORDS, NULL},
    {"allocate_like", KW(ev_allocate_like), METH_VARARGS | METH_KEYWORDS, NULL},
    {"scatter", KW(ev_scatter), METH_VARARGS | METH_KEYWORDS, NULL},
    {"dlpack_info", ev_dlpack_info, METH_NOARGS, NULL},
    {"_dispatch_op", swpy_backend_dispatch_hook, METH_O, NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef ev_getset[] = {
    {"primary", ev_get_primary, NULL, NULL, NULL},
    {"secondary", ev_get_secondary, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot ev_slots[] = {
    {Py_tp_new, swpy_backend_new},
    {Py_tp_init, ev_tp_init},
    {Py_tp_dealloc, swpy_carrier_dealloc},
    {Py_tp_traverse, swpy_carrier_traverse},
    {Py_tp_clear, swpy_carrier_clear},
    {Py_tp_methods, ev_methods},
    {Py_tp_getset, ev_getset},
    {0, NULL},
};

static PyType_Spec ev_spec = {
    .name = "strideweave.carriers.evictable.Evictable",
    .basicsize = sizeof(CarrierObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC |
             Py_TPFLAGS_IMMUTABLETYPE,
    .slots = ev_slots,
};

/* ------------------------------------------------- EvictableOperation */

static PyObject *evop_tp_new(PyTypeObject *type, PyObject *args,
                             PyObject *kwds) {
    static char *kwlist[] = {"primary_operation", NULL};
    PyObject *primary = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O:EvictableOperation", kwlist,
                                     &primary)) {
        return NULL;
    }
    swpy_state *st = swpy_state_of_type(type);
    if (st == NULL) {
        return NULL;
    }
    if (!swpy_is_operation(st, primary)) {
        PyErr_SetString(PyExc_TypeError,
                        "primary_operation must be an Operation");
        return NULL;
    }
    sw_op *inner = ((OperationObject *)primary)->op;
    if (inner == NULL) {
        PyErr_SetString(PyExc_RuntimeError,
                        "the Operation object has been cleared");
        return NULL;
    }
    sw_op *op = NULL;
    if (swpy_check(sw_evictable_op_new(inner, &op)) < 0) {
        return NULL;
    }
    return swpy_op_new_object(type, op);
}

static int evop_tp_init(PyObject *self, PyObject *args, PyObject *kwds) {
    /* __new__ took the argument. */
    return 0;
}

static PyObject *evop_get_primary(PyObject *self, void *closure) {
    sw_op *op = ((OperationObject *)self)->op;
    swpy_state *st = swpy_state_of_type(Py_TYPE(self));
    if (st == NULL) {
        return NULL;
    }
    if (op == NULL) {
        PyErr_SetString(PyExc_RuntimeError,
                        "the Operation object has been cleared");
        return NULL;
    }
    return swpy_op_wrap(st, sw_op_retain(sw_evictable_op_primary(op)));
}

static PyGetSetDef evop_getset[] = {
    {"primary_operation", evop_get_primary, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot evop_slots[] = {
    {Py_tp_new, evop_tp_new},
    {Py_tp_init, evop_tp_init},
    {Py_tp_getset, evop_getset},
    {0, NULL},
};

static PyType_Spec evop_spec = {
    .name = "strideweave.carriers.evictable.EvictableOperation",
    .basicsize = sizeof(OperationObject),
    /* Garbage collection and deallocation are Operation's, inherited. */
    .flags =
        Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = evop_slots,
};

#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

int swpy_evictable_init_types(PyObject *module, swpy_state *st) {
    if (swpy_add_type(module, &ev_spec, st->carrier_type, &st->evictable_type) <
        0) {
        return -1;
    }
    return swpy_add_type(module, &evop_spec, st->operation_type,
                         &st->evictable_op_type);
}
