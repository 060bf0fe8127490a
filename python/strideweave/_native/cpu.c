/*
 * The CPU carrier type: native memory of Float32, Int32 or Bool elements
 * (sw_cpu_new, 64-byte aligned), or memory the caller owns (sw_cpu_wrap).
 *
 * The GIL is released around large allocations (zero-filling) and around
 * the bulk CPU-to-CPU scatter; neither runs Python code, and the library
 * pins the carriers involved so that a release meanwhile cannot free
 * their storage under the copy.
 *
 * Writes to a carrier must be serialised by the caller (carrier.h). With
 * the GIL held for the whole call, a scatter was serialised with every
 * other; once the GIL is released, two threads scattering into one
 * carrier would write it at the same time. So every CPU scatter, bulk or
 * not, holds its destination's scatter lock (module state, one of
 * SWPY_SCATTER_STRIPES by address), waiting for it without the GIL: two
 * scatters into one carrier run one after the other, each whole, as they
 * did with the GIL. Reading a carrier while another thread scatters into
 * it stays the caller's business (the values read are old or new ones).
 */
#include "py_carrier.h"
#include "errors.h"
#include "py_layout.h"
#include "operation.h"
#include "py_tensor.h"

static sw_carrier *cpu_of(PyObject *self) {
    return swpy_backend_of(self, sw_carrier_is_cpu, "CPU");
}

static int cpu_tp_init(PyObject *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"size",  "pointer", "mutable",
                             "dtype", "empty",   NULL};
    PyObject *size_obj = NULL, *pointer = Py_None, *dtype_obj = Py_None;
    int mutable_ = 1, empty = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|O$pOp:CPU", kwlist,
                                     &size_obj, &pointer, &mutable_, &dtype_obj,
                                     &empty)) {
        return -1;
    }
    swpy_state *st = swpy_state_of_type(Py_TYPE(self));
    if (st == NULL) {
        return -1;
    }
    int64_t size = 0;
    sw_dtype dtype;
    if (swpy_index_arg(size_obj, &size) < 0 ||
        swpy_dtype_arg(st, dtype_obj, "CPU", 0, &dtype) < 0) {
        return -1;
    }
    if (dtype == SW_DTYPE_COUNT) {
        dtype = SW_DTYPE_FLOAT32;
    }
    sw_carrier *c = NULL;
    sw_status s;
    if (pointer == Py_None) {
        if (swpy_bulk(size)) {
            Py_BEGIN_ALLOW_THREADS;
            s = sw_cpu_new(size, dtype, mutable_, empty, &c);
            Py_END_ALLOW_THREADS;
        } else {
            s = sw_cpu_new(size, dtype, mutable_, empty, &c);
        }
    } else {
        if (!PyLong_Check(pointer)) {
            PyErr_SetString(PyExc_TypeError,
                            "CPU pointer must be an integer address or None");
            return -1;
        }
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(pointer, &overflow);
        if (v == -1 && !overflow && PyErr_Occurred()) {
            return -1;
        }
        /* Zero or negative is no address: the library refuses NULL. */
        void *address = NULL;
        if (overflow > 0 || (!overflow && v > 0)) {
            address = PyLong_AsVoidPtr(pointer);
            if (address == NULL && PyErr_Occurred()) {
                return -1;
            }
        }
        s = sw_cpu_wrap(address, size, dtype, mutable_, &c);
    }
    if (s != SW_OK) {
        swpy_raise(s);
        return -1;
    }
    return swpy_carrier_adopt(self, c, "CPU");
}

static const swpy_backend cpu_backend = {
    .name = "CPU",
    .is = sw_carrier_is_cpu,
    .exact_new_like = 0,
    .dtype_type_error = 0,
    .gil = SWPY_GIL_BULK,
};

static PyObject *cpu_new_like(PyObject *self, PyObject *args, PyObject *kwds) {
    return swpy_backend_new_like(&cpu_backend, self, args, kwds);
}

static PyObject *cpu_allocate_like(PyObject *self, PyObject *args,
                                   PyObject *kwds) {
    return swpy_backend_allocate_like(&cpu_backend, self, args, kwds);
}

static PyObject *cpu_pointer(PyObject *self, PyObject *unused) {
    sw_carrier *c = cpu_of(self);
    return c == NULL ? NULL : PyLong_FromVoidPtr(sw_cpu_data(c));
}

static PyObject *cpu_dlpack_info(PyObject *self, PyObject *unused) {
    sw_carrier *c = cpu_of(self);
    if (c == NULL) {
        return NULL;
    }
    PyObject *pointer = PyLong_FromVoidPtr(sw_cpu_data(c));
    if (pointer == NULL) {
        return NULL;
    }
    /* kDLCPU is device type 1. */
    return Py_BuildValue("{sNsisi}", "pointer", pointer, "device_type", 1,
                         "device_id", 0);
}

/* A scatter argument that must be a Tensor over a CPU carrier. */
static sw_tensor *cpu_tensor_arg(swpy_state *st, PyObject *o,
                                 const char *name) {
    if (!swpy_is_tensor(st, o)) {
        PyErr_Format(PyExc_TypeError, "%s must be a Tensor", name);
        return NULL;
    }
    sw_tensor *t = swpy_tensor_of(o);
    if (t != NULL && !sw_carrier_is_cpu(sw_tensor_carrier(t))) {
        PyErr_Format(PyExc_TypeError, "%s must be backed by a CPU carrier",
                     name);
        return NULL;
    }
    return t;
}

static PyObject *cpu_scatter(PyObject *self, PyObject *args, PyObject *kwds) {
    swpy_scatter_args a;
    if (swpy_backend_scatter_args(&cpu_backend, self, args, kwds, &a) < 0) {
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
    sw_tensor *onto = cpu_tensor_arg(st, onto_obj, "scatter_onto");
    if (onto == NULL) {
        return NULL;
    }
    sw_tensor *src = cpu_tensor_arg(st, src_obj, "to_scatter");
    if (src == NULL) {
        return NULL;
    }
    if (!swpy_is_layout(st, mapping_obj)) {
        PyErr_SetString(PyExc_TypeError, "mapping must be a Layout");
        return NULL;
    }
    sw_layout *mapping = swpy_layout_get(mapping_obj);
    /* Between two CPU carriers the library copies in one pass without
     * calling back into Python. */
    PyThread_type_lock lock =
        st->scatter_locks[((uintptr_t)c / 64) % SWPY_SCATTER_STRIPES];
    if (!PyThread_acquire_lock(lock, NOWAIT_LOCK)) {
        Py_BEGIN_ALLOW_THREADS;
        PyThread_acquire_lock(lock, WAIT_LOCK);
        Py_END_ALLOW_THREADS;
    }
    sw_status s;
    if (swpy_bulk(sw_layout_size(mapping))) {
        Py_BEGIN_ALLOW_THREADS;
        s = sw_carrier_scatter(c, src, onto, mapping, offset);
        Py_END_ALLOW_THREADS;
    } else {
        s = sw_carrier_scatter(c, src, onto, mapping, offset);
    }
    PyThread_release_lock(lock);
    if (s != SW_OK) {
        return swpy_raise(s);
    }
    Py_RETURN_NONE;
}

/* ------------------------------------------------------- documentation */

PyDoc_STRVAR(
    cpu_doc,
    "CPU(size, pointer=None, *, mutable=True, dtype=None, empty=False)\n--\n\n"
    "Native memory of Float32, Int32 or Bool elements.\n\n"
    "With no pointer the carrier owns a fresh 64-byte aligned buffer, "
    "zero-filled unless empty=True. With a pointer (an int address, for "
    "example array.array(...).buffer_info()[0]) it aliases the caller's "
    "memory, which is never freed or initialised here. Float32 elements "
    "read back as Python floats (widened from float32), Int32 as ints, "
    "Bool as bools.\n\n"
    "Args:\n"
    "    size: the element count, >= 0.\n"
    "    pointer: None, or the positive address of size elements.\n"
    "    mutable: whether the carrier can be written.\n"
    "    dtype: DType.Float32 (the default, also for None), DType.Int32 or "
    "DType.Bool.\n"
    "    empty: skip zero-filling a fresh buffer.\n\n"
    "Returns:\n"
    "    CPU: the carrier.\n\n"
    "Raises:\n"
    "    ValueError: 'CPU size must be non-negative', 'CPU dtype must be "
    "DType.Float32, DType.Int32 or DType.Bool', 'CPU pointer must be a "
    "positive integer address'.\n"
    "    TypeError: a non-int size, or 'CPU pointer must be an integer "
    "address or None'.\n\n"
    "Examples:\n"
    "    >>> c = CPU(3)\n"
    "    >>> c[1] = 0.1\n"
    "    >>> c[1], c.size(), c.dtype()\n"
    "    (0.10000000149011612, 3, <DType.Float32: 'Float32'>)\n"
    "    >>> CPU(2, dtype=DType.Int32)[0]\n"
    "    0\n");

PyDoc_STRVAR(cpu_size_doc, "size($self, /)\n--\n\n"
                           "The number of elements; 0 after release.\n\n"
                           "Returns:\n"
                           "    int: the element count.\n\n"
                           "Examples:\n"
                           "    >>> CPU(4).size()\n"
                           "    4\n");

PyDoc_STRVAR(cpu_dtype_doc, "dtype($self, /)\n--\n\n"
                            "The element type.\n\n"
                            "Returns:\n"
                            "    DType: Float32, Int32 or Bool.\n\n"
                            "Examples:\n"
                            "    >>> CPU(1, dtype=DType.Bool).dtype()\n"
                            "    <DType.Bool: 'Bool'>\n");

PyDoc_STRVAR(cpu_get_value_doc,
             "get_value($self, index, /)\n--\n\n"
             "Reads one element, range-checked.\n\n"
             "Args:\n"
             "    index: the element, 0 <= index < size().\n\n"
             "Returns:\n"
             "    float | int | bool: the value, by dtype.\n\n"
             "Raises:\n"
             "    IndexError: 'Carrier index out of range'.\n"
             "    RuntimeError: 'Carrier is released'.\n\n"
             "Examples:\n"
             "    >>> CPU(2).get_value(1)\n"
             "    0.0\n");

PyDoc_STRVAR(
    cpu_set_value_doc,
    "set_value($self, index, value, /)\n--\n\n"
    "Writes one element and bumps the version by one.\n\n"
    "Float32 takes anything float() converts from a number (bool too; "
    "ints too large become inf); Int32 takes integers (__index__) in int32 "
    "range; Bool takes numbers (non-zero is True).\n\n"
    "Args:\n"
    "    index: the element, 0 <= index < size().\n"
    "    value: the new value.\n\n"
    "Returns:\n"
    "    None.\n\n"
    "Raises:\n"
    "    RuntimeError: 'Carrier is not mutable', 'Carrier is released'.\n"
    "    IndexError: 'Carrier index out of range'.\n"
    "    TypeError: 'CPU value must be a number', 'CPU value must be an "
    "integer'.\n"
    "    OverflowError: 'CPU value is out of int32 range'.\n\n"
    "Examples:\n"
    "    >>> c = CPU(2, dtype=DType.Int32)\n"
    "    >>> c.set_value(0, 7)\n"
    "    >>> c[0], c.version\n"
    "    (7, 1)\n");

PyDoc_STRVAR(cpu_new_like_doc,
             "new_like($self, /, values, *, mutable=True, dtype=None)\n--\n\n"
             "A new CPU carrier holding values (None entries become 0).\n\n"
             "Works after release.\n\n"
             "Args:\n"
             "    values: an iterable of numbers or None.\n"
             "    mutable: whether the new carrier can be written.\n"
             "    dtype: the element type; None means this carrier's.\n\n"
             "Returns:\n"
             "    CPU: a carrier of len(values) elements.\n\n"
             "Examples:\n"
             "    >>> list(CPU(0, dtype=DType.Int32).new_like([1, None, 3]))\n"
             "    [1, 0, 3]\n");

PyDoc_STRVAR(cpu_allocate_like_doc,
             "allocate_like($self, /, size, *, mutable=True, dtype=None, "
             "empty=False)\n--\n\n"
             "A fresh CPU carrier, zero-filled unless empty=True.\n\n"
             "Args:\n"
             "    size: the element count, >= 0.\n"
             "    mutable: whether the new carrier can be written.\n"
             "    dtype: the element type; None means this carrier's.\n"
             "    empty: skip zero-filling.\n\n"
             "Returns:\n"
             "    CPU: the new carrier.\n\n"
             "Raises:\n"
             "    ValueError: 'CPU allocation size must be non-negative'.\n\n"
             "Examples:\n"
             "    >>> CPU(1).allocate_like(2, dtype=DType.Int32).dtype()\n"
             "    <DType.Int32: 'Int32'>\n");

PyDoc_STRVAR(cpu_pointer_doc,
             "pointer($self, /)\n--\n\n"
             "The address of the first element; 0 after release.\n\n"
             "Returns:\n"
             "    int: the buffer address.\n\n"
             "Examples:\n"
             "    >>> CPU(4).pointer() % 64\n"
             "    0\n");

PyDoc_STRVAR(cpu_dlpack_info_doc,
             "dlpack_info($self, /)\n--\n\n"
             "Where a DLPack export finds the data: host memory.\n\n"
             "Returns:\n"
             "    dict: {'pointer': address, 'device_type': 1, 'device_id': "
             "0}; the pointer is 0 after release.\n\n"
             "Examples:\n"
             "    >>> info = CPU(1).dlpack_info()\n"
             "    >>> info['device_type'], info['device_id']\n"
             "    (1, 0)\n");

PyDoc_STRVAR(
    cpu_scatter_doc,
    "scatter($self, /, to_scatter, scatter_onto, mapping, mapping_offset=0)"
    "\n--\n\n"
    "Copies to_scatter[i] to element scatter_onto.offset + mapping_offset + "
    "mapping(i), for every logical i, in one pass; the version rises "
    "once.\n\n"
    "Int32 sources convert to float for a Float32 destination.\n\n"
    "Args:\n"
    "    to_scatter: a Tensor over a CPU carrier.\n"
    "    scatter_onto: a Tensor over this carrier; only its offset is used.\n"
    "    mapping: a Layout with the shape of to_scatter's layout.\n"
    "    mapping_offset: added to every destination index, >= 0.\n\n"
    "Returns:\n"
    "    None.\n\n"
    "Raises:\n"
    "    TypeError: 'scatter_onto must be a Tensor', 'scatter_onto must be "
    "backed by a CPU carrier' (the same for to_scatter), 'mapping must be "
    "a Layout', 'cannot scatter Float32 values into an Int32 CPU "
    "carrier'.\n"
    "    ValueError: 'mapping_offset must be non-negative', 'scatter_onto "
    "must be backed by this carrier', 'mapping shape must match to_scatter "
    "layout shape', 'scatter mapping exceeds destination carrier size'.\n"
    "    RuntimeError: 'Carrier is not mutable', 'scatter_onto carrier is "
    "released', 'to_scatter carrier is released'.\n\n"
    "Examples:\n"
    "    >>> dst = CPU(3)\n"
    "    >>> src = Tensor(CPU(1).new_like([5, 6]), 0, Layout(Shape(2), "
    "Stride(1)))\n"
    "    >>> dst.scatter(src, Tensor(dst, 1, Layout(Shape(2), Stride(1))), "
    "Layout(Shape(2), Stride(1)))\n"
    "    >>> list(dst), dst.version\n"
    "    ([0.0, 5.0, 6.0], 1)\n");

/* ------------------------------------------------------------ type spec */

#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
#endif

#define KW(f) ((PyCFunction)(void (*)(void))(f))

static PyMethodDef cpu_methods[] = {
    {"size", swpy_carrier_size, METH_NOARGS, cpu_size_doc},
    {"dtype", swpy_carrier_dtype, METH_NOARGS, cpu_dtype_doc},
    {"get_value", swpy_carrier_get_value, METH_O, cpu_get_value_doc},
    {"set_value", KW(swpy_carrier_set_value), METH_FASTCALL, cpu_set_value_doc},
    {"new_like", KW(cpu_new_like), METH_VARARGS | METH_KEYWORDS,
     cpu_new_like_doc},
    {"allocate_like", KW(cpu_allocate_like), METH_VARARGS | METH_KEYWORDS,
     cpu_allocate_like_doc},
    {"pointer", cpu_pointer, METH_NOARGS, cpu_pointer_doc},
    {"dlpack_info", cpu_dlpack_info, METH_NOARGS, cpu_dlpack_info_doc},
    {"scatter", KW(cpu_scatter), METH_VARARGS | METH_KEYWORDS, cpu_scatter_doc},
    {"_dispatch_op", swpy_backend_dispatch_hook, METH_O,
     swpy_cpu_dispatch_hook_doc},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot cpu_slots[] = {
    {Py_tp_doc, (void *)cpu_doc},
    {Py_tp_new, swpy_backend_new},
    {Py_tp_init, cpu_tp_init},
    {Py_tp_dealloc, swpy_carrier_dealloc},
    {Py_tp_traverse, swpy_carrier_traverse},
    {Py_tp_clear, swpy_carrier_clear},
    {Py_tp_methods, cpu_methods},
    {0, NULL},
};

static PyType_Spec cpu_spec = {
    .name = "strideweave.carriers.cpu.carrier.CPU",
    .basicsize = sizeof(CarrierObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC |
             Py_TPFLAGS_IMMUTABLETYPE,
    .slots = cpu_slots,
};

#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

int swpy_cpu_init_type(PyObject *module, swpy_state *st) {
    return swpy_add_type(module, &cpu_spec, st->carrier_type, &st->cpu_type);
}
