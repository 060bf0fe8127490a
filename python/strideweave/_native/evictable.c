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

/* ------------------------------------------------------- documentation */

PyDoc_STRVAR(
    ev_doc,
    "Evictable(primary, secondary, /)\n--\n\n"
    "A two-tier storage hierarchy: values live in primary while promoted "
    "and in secondary after evict().\n\n"
    "The constructor takes exclusive ownership of both carriers: they stay "
    "readable through old references while live, but refuse direct writes, "
    "scatter, release and move. Computation runs on the primary through "
    "EvictableOperation adapters; element access, operations and scatter "
    "fail while evicted. The hierarchy's size, dtype and mutability are the "
    "primary's at construction. When the hierarchy is garbage-collected it "
    "gives both current tiers back.\n\n"
    "Args:\n"
    "    primary: a live, unowned carrier with at least one element.\n"
    "    secondary: a live, unowned, mutable carrier of the same dtype.\n\n"
    "Returns:\n"
    "    Evictable: the hierarchy.\n\n"
    "Raises:\n"
    "    TypeError: 'primary must be a Carrier instance', 'secondary must be "
    "a Carrier instance', 'primary and secondary dtypes must match'.\n"
    "    ValueError: 'primary and secondary must be distinct carriers', "
    "'primary carrier must contain at least one element'.\n"
    "    RuntimeError: 'primary carrier is released', 'secondary carrier is "
    "released', 'primary carrier is already owned by another carrier', "
    "'secondary carrier is already owned by another carrier', 'secondary "
    "carrier must be mutable'.\n\n"
    "Examples:\n"
    "    >>> primary = Generic([1.0])\n"
    "    >>> carrier = Evictable(primary, Generic([0.0]))\n"
    "    >>> carrier.is_mutable(), primary.is_owned(), primary.is_mutable()\n"
    "    (True, True, False)\n"
    "    >>> carrier[0] = 2.0\n"
    "    >>> carrier.version, primary[0]\n"
    "    (1, 2.0)\n");

PyDoc_STRVAR(ev_primary_doc,
             "The current primary tier (a new object after each "
             "promotion).\n\n"
             "Returns:\n"
             "    Carrier: the primary.\n\n"
             "Examples:\n"
             "    >>> p = Generic([1.0])\n"
             "    >>> Evictable(p, Generic([0.0])).primary is p\n"
             "    True\n");

PyDoc_STRVAR(ev_secondary_doc,
             "The current secondary tier (replaced when an eviction needs a "
             "larger or live one).\n\n"
             "Returns:\n"
             "    Carrier: the secondary.\n\n"
             "Examples:\n"
             "    >>> s = Generic([0.0])\n"
             "    >>> Evictable(Generic([1.0]), s).secondary is s\n"
             "    True\n");

PyDoc_STRVAR(ev_size_doc, "size($self, /)\n--\n\n"
                          "The element count recorded at construction; 0 "
                          "after release.\n\n"
                          "Returns:\n"
                          "    int: the size.\n\n"
                          "Examples:\n"
                          "    >>> Evictable(Generic([1.0, 2.0]), "
                          "Generic([])).size()\n"
                          "    2\n");

PyDoc_STRVAR(ev_dtype_doc, "dtype($self, /)\n--\n\n"
                           "The primary's dtype.\n\n"
                           "Returns:\n"
                           "    DType: the element type.\n\n"
                           "Examples:\n"
                           "    >>> Evictable(Generic([1.0]), "
                           "Generic([])).dtype()\n"
                           "    <DType.Floating: 'Floating'>\n");

PyDoc_STRVAR(ev_get_value_doc,
             "get_value($self, index, /)\n--\n\n"
             "Reads one element of the promoted primary.\n\n"
             "Args:\n"
             "    index: the element, 0 <= index < size().\n\n"
             "Returns:\n"
             "    Any: the value.\n\n"
             "Raises:\n"
             "    RuntimeError: 'Carrier is released', 'Evictable carrier is "
             "evicted; call promote() first'.\n"
             "    IndexError: 'Carrier index out of range'.\n\n"
             "Examples:\n"
             "    >>> Evictable(Generic([1.5]), Generic([])).get_value(0)\n"
             "    1.5\n");

PyDoc_STRVAR(ev_set_value_doc,
             "set_value($self, index, value, /)\n--\n\n"
             "Writes one element of the promoted primary (under owner "
             "access, so the primary's version rises too) and bumps the "
             "hierarchy's version once.\n\n"
             "Args:\n"
             "    index: the element, 0 <= index < size().\n"
             "    value: the value.\n\n"
             "Returns:\n"
             "    None.\n\n"
             "Raises:\n"
             "    RuntimeError: 'Carrier is not mutable', 'Evictable carrier "
             "is evicted; call promote() first'.\n\n"
             "Examples:\n"
             "    >>> e = Evictable(Generic([1.0]), Generic([]))\n"
             "    >>> e.set_value(0, 4.0)\n"
             "    >>> e[0], e.version, e.primary.version\n"
             "    (4.0, 1, 1)\n");

PyDoc_STRVAR(ev_is_evicted_doc,
             "is_evicted($self, /)\n--\n\n"
             "Whether the values are in the secondary tier.\n\n"
             "Returns:\n"
             "    bool: True after evict() until promote().\n\n"
             "Examples:\n"
             "    >>> Evictable(Generic([1.0]), Generic([])).is_evicted()\n"
             "    False\n");

PyDoc_STRVAR(
    ev_evict_doc,
    "evict($self, /)\n--\n\n"
    "Moves the values to the secondary tier and releases the primary.\n\n"
    "The destination is the current secondary if it is live and large "
    "enough, else a fresh one from its allocate_like. The move class comes "
    "from the move registry for the exact tier classes and runs without "
    "recording autograd. The new secondary is published only after the "
    "move succeeded: on failure the hierarchy is as before and the call may "
    "be retried. A no-op when already evicted; the version never "
    "changes.\n\n"
    "Returns:\n"
    "    None.\n\n"
    "Raises:\n"
    "    RuntimeError: 'Evictable carrier is owned by another carrier and "
    "cannot be modified directly', 'Carrier is released'.\n"
    "    OSError: an I/O failure of a file tier.\n\n"
    "Examples:\n"
    "    >>> e = Evictable(Generic([1.0, 2.0]), Generic([]))\n"
    "    >>> old = e.primary\n"
    "    >>> e.evict()\n"
    "    >>> e.is_evicted(), old.is_released(), list(e.secondary)\n"
    "    (True, True, [1.0, 2.0])\n");

PyDoc_STRVAR(
    ev_promote_doc,
    "promote($self, /)\n--\n\n"
    "Moves the values back into a fresh primary (from the released "
    "primary's allocate_like) and releases the secondary.\n\n"
    "The same publication rule as evict(): on failure nothing changes. A "
    "no-op when promoted; the version never changes.\n\n"
    "Returns:\n"
    "    None.\n\n"
    "Raises:\n"
    "    RuntimeError: 'Evictable carrier is owned by another carrier and "
    "cannot be modified directly', 'Carrier is released'.\n"
    "    OSError: an I/O failure of a file tier.\n\n"
    "Examples:\n"
    "    >>> e = Evictable(Generic([1.0, 2.0]), Generic([]))\n"
    "    >>> e.evict()\n"
    "    >>> e.promote()\n"
    "    >>> e.is_evicted(), list(e), e.secondary.is_released()\n"
    "    (False, [1.0, 2.0], True)\n");

PyDoc_STRVAR(ev_new_like_doc,
             "new_like($self, /, values, *, mutable=True, dtype=None)\n--\n\n"
             "A new hierarchy: the primary's new_like(values) over an empty "
             "secondary like this one's.\n\n"
             "Args:\n"
             "    values: an iterable of values (at least one).\n"
             "    mutable: whether the new primary can be written.\n"
             "    dtype: the element type; None means this carrier's.\n\n"
             "Returns:\n"
             "    Evictable: the new hierarchy.\n\n"
             "Raises:\n"
             "    ValueError: 'primary carrier must contain at least one "
             "element'.\n\n"
             "Examples:\n"
             "    >>> e = Evictable(Generic([1.0]), Generic([]))\n"
             "    >>> n = e.new_like([3.0, 4.0])\n"
             "    >>> list(n), n.secondary.size()\n"
             "    ([3.0, 4.0], 0)\n");

PyDoc_STRVAR(ev_allocate_like_doc,
             "allocate_like($self, /, size, *, mutable=True, dtype=None, "
             "empty=False)\n--\n\n"
             "A new hierarchy: the primary's allocate_like(size) over an "
             "empty secondary like this one's.\n\n"
             "Args:\n"
             "    size: the element count, >= 1.\n"
             "    mutable: whether the new primary can be written.\n"
             "    dtype: the element type; None means this carrier's.\n"
             "    empty: passed on to the primary.\n\n"
             "Returns:\n"
             "    Evictable: the new hierarchy.\n\n"
             "Raises:\n"
             "    ValueError: 'primary carrier must contain at least one "
             "element'.\n\n"
             "Examples:\n"
             "    >>> e = Evictable(CPU(1), CPU(0))\n"
             "    >>> e.allocate_like(3).size()\n"
             "    3\n");

PyDoc_STRVAR(
    ev_scatter_doc,
    "scatter($self, /, to_scatter, scatter_onto, mapping, "
    "mapping_offset=0)\n--\n\n"
    "Scatters into the promoted primary under owner access, then bumps the "
    "hierarchy's version once. An Evictable source is read through its "
    "primary.\n\n"
    "Args:\n"
    "    to_scatter: the source Tensor.\n"
    "    scatter_onto: a Tensor backed by this carrier (its offset is "
    "used).\n"
    "    mapping: a Layout of to_scatter's shape.\n"
    "    mapping_offset: an offset added to every mapped index.\n\n"
    "Returns:\n"
    "    None.\n\n"
    "Raises:\n"
    "    RuntimeError: 'Carrier is not mutable', 'Carrier is released', "
    "'Evictable carrier is evicted; call promote() first'.\n"
    "    ValueError: 'scatter_onto must be backed by this carrier object'.\n"
    "    TypeError: 'to_scatter must be a Tensor', 'mapping must be a "
    "Layout'.\n\n"
    "Examples:\n"
    "    >>> e = Evictable(Generic([0.0, 0.0]), Generic([]))\n"
    "    >>> src = Tensor(Generic([5.0]), 0, Layout(Shape(1), Stride(1)))\n"
    "    >>> onto = Tensor(e, 0, Layout(Shape(2), Stride(1)))\n"
    "    >>> e.scatter(src, onto, Layout(Shape(1), Stride(1)), 1)\n"
    "    >>> list(e), e.version\n"
    "    ([0.0, 5.0], 1)\n");

PyDoc_STRVAR(ev_dlpack_info_doc,
             "dlpack_info($self, /)\n--\n\n"
             "Refuses DLPack export, promoted or not.\n\n"
             "Returns:\n"
             "    dict: never returns.\n\n"
             "Raises:\n"
             "    BufferError: 'DLPack is not supported for Evictable "
             "carrier'.\n\n"
             "Examples:\n"
             "    >>> Evictable(Generic([1.0]), Generic([])).dlpack_info()\n"
             "    Traceback (most recent call last):\n"
             "    ...\n"
             "    BufferError: DLPack is not supported for Evictable "
             "carrier\n");

PyDoc_STRVAR(ev_dispatch_hook_doc,
             "_dispatch_op($self, name, /)\n--\n\n"
             "An EvictableOperation wrapping the primary's dispatched "
             "operation of this name (a hook: subclasses may override it and "
             "reach this one through super()).\n\n"
             "Args:\n"
             "    name: the canonical operation name.\n\n"
             "Returns:\n"
             "    EvictableOperation: a fresh, undispatched adapter.\n\n"
             "Raises:\n"
             "    RuntimeError: 'Evictable carrier is evicted; call promote() "
             "first'.\n\n"
             "Examples:\n"
             "    >>> e = Evictable(Generic([1.0]), Generic([]))\n"
             "    >>> type(e._dispatch_op('relu').primary_operation)."
             "__name__\n"
             "    'GenericReLUOperation'\n");

/* ------------------------------------------------------------ type spec */

#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
#endif

#define KW(f) ((PyCFunction)(void (*)(void))(f))

static PyMethodDef ev_methods[] = {
    {"size", swpy_carrier_size, METH_NOARGS, ev_size_doc},
    {"dtype", swpy_carrier_dtype, METH_NOARGS, ev_dtype_doc},
    {"get_value", swpy_carrier_get_value, METH_O, ev_get_value_doc},
    {"set_value", KW(swpy_carrier_set_value), METH_FASTCALL, ev_set_value_doc},
    {"is_evicted", ev_is_evicted, METH_NOARGS, ev_is_evicted_doc},
    {"evict", ev_evict, METH_NOARGS, ev_evict_doc},
    {"promote", ev_promote, METH_NOARGS, ev_promote_doc},
    {"new_like", KW(ev_new_like), METH_VARARGS | METH_KEYWORDS,
     ev_new_like_doc},
    {"allocate_like", KW(ev_allocate_like), METH_VARARGS | METH_KEYWORDS,
     ev_allocate_like_doc},
    {"scatter", KW(ev_scatter), METH_VARARGS | METH_KEYWORDS, ev_scatter_doc},
    {"dlpack_info", ev_dlpack_info, METH_NOARGS, ev_dlpack_info_doc},
    {"_dispatch_op", swpy_backend_dispatch_hook, METH_O, ev_dispatch_hook_doc},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef ev_getset[] = {
    {"primary", ev_get_primary, NULL, ev_primary_doc, NULL},
    {"secondary", ev_get_secondary, NULL, ev_secondary_doc, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot ev_slots[] = {
    {Py_tp_doc, (void *)ev_doc},
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

PyDoc_STRVAR(
    evop_doc,
    "EvictableOperation(primary_operation)\n--\n\n"
    "The operation of Evictable carriers: runs primary_operation on the "
    "tensors' primary tiers and wraps the result back into a hierarchy.\n\n"
    "forward lowers every Evictable tensor input to its promoted primary, "
    "stores the lowered inputs on the primary operation, runs it by sealed "
    "lowered execution and returns the result in an Evictable: a view stays "
    "in its input's hierarchy, fresh storage gets a new hierarchy with an "
    "empty secondary. The adapter is the only autograd node; backward needs "
    "the saved inputs promoted (not the result) and returns Evictable "
    "gradients. forward may run once.\n\n"
    "Args:\n"
    "    primary_operation: the Operation of the primary carrier.\n\n"
    "Returns:\n"
    "    EvictableOperation: the adapter.\n\n"
    "Raises:\n"
    "    TypeError: 'primary_operation must be an Operation'.\n\n"
    "Examples:\n"
    "    >>> e = Evictable(Generic([-1.0, 2.0]), Generic([]))\n"
    "    >>> x = Tensor(e, 0, Layout(Shape(2), Stride(1)))\n"
    "    >>> y = relu(x)\n"
    "    >>> type(y.autograd_ctx).__name__, type(y.carrier).__name__, y[1]\n"
    "    ('EvictableOperation', 'Evictable', 2.0)\n"
    "    >>> y.carrier.secondary.size()\n"
    "    0\n");

PyDoc_STRVAR(evop_primary_doc,
             "The wrapped operation of the primary carrier.\n\n"
             "Returns:\n"
             "    Operation: the primary operation.\n\n"
             "Examples:\n"
             "    >>> inner = GenericReLUOperation()\n"
             "    >>> EvictableOperation(inner).primary_operation is inner\n"
             "    True\n");

static PyGetSetDef evop_getset[] = {
    {"primary_operation", evop_get_primary, NULL, evop_primary_doc, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot evop_slots[] = {
    {Py_tp_doc, (void *)evop_doc},
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
