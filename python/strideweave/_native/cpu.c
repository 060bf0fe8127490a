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

/* ------------------------------------------------------------ type spec */

#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
#endif

#define KW(f) ((PyCFunction)(void (*)(void))(f))

static PyMethodDef cpu_methods[] = {
    {"size", swpy_carrier_size, METH_NOARGS, NULL},
    {"dtype", swpy_carrier_dtype, METH_NOARGS, NULL},
    {"get_value", swpy_carrier_get_value, METH_O, NULL},
    {"set_value", KW(swpy_carrier_set_value), METH_FASTCALL, NULL},
    {"new_like", KW(cpu_new_like), METH_VARARGS | METH_KEYWORDS, NULL},
    {"allocate_like", KW(cpu_allocate_like), METH_VARARGS | METH_KEYWORDS,
     NULL},
    {"pointer", cpu_pointer, METH_NOARGS, NULL},
    {"dlpack_info", cpu_dlpack_info, METH_NOARGS, NULL},
    {"scatter", KW(cpu_scatter), METH_VARARGS | METH_KEYWORDS, NULL},
    {"_dispatch_op", swpy_backend_dispatch_hook, METH_O, NULL},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot cpu_slots[] = {
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
