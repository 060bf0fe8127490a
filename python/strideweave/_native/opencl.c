/*
 * The OpenCL carrier type (sw_opencl_new): storage in one OpenCL device
 * buffer. The type is final: subclassing raises TypeError. The runtime
 * loads at the first construction, inside the library, after the argument
 * checks; the GIL is released around construction, factories and the
 * device synchronisation, which run no Python code.
 */
#include "py_carrier.h"
#include "errors.h"
#include "py_layout.h"
#include "py_tensor.h"

#include "strideweave/opencl.h"

static sw_carrier *opencl_of(PyObject *self) {
    return swpy_backend_of(self, sw_carrier_is_opencl, "OpenCL");
}

static int opencl_tp_init(PyObject *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"size",  "mutable", "dtype",
                             "empty", "device",  NULL};
    PyObject *size_obj = NULL, *dtype_obj = NULL, *device_obj = Py_None;
    int mutable_ = 1, empty = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|$pOpO:OpenCL", kwlist,
                                     &size_obj, &mutable_, &dtype_obj, &empty,
                                     &device_obj)) {
        return -1;
    }
    if (((CarrierObject *)self)->carrier != NULL) {
        PyErr_SetString(PyExc_RuntimeError,
                        "OpenCL.__init__() must not be called twice");
        return -1;
    }
    swpy_state *st = swpy_state_of_type(Py_TYPE(self));
    if (st == NULL) {
        return -1;
    }
    int64_t size = 0, device = -1;
    if (swpy_index_arg(size_obj, &size) < 0) {
        return -1;
    }
    sw_dtype dtype = SW_DTYPE_FLOAT32;
    if (dtype_obj != NULL) {
        int rc = swpy_dtype_from_py(st, dtype_obj, &dtype);
        if (rc <= 0) {
            if (rc == 0) {
                PyErr_SetString(PyExc_TypeError,
                                "OpenCL dtype must be a DType");
            }
            return -1;
        }
    }
    if (device_obj != Py_None && swpy_index_arg(device_obj, &device) < 0) {
        return -1;
    }
    sw_carrier *c = NULL;
    sw_status s;
    Py_BEGIN_ALLOW_THREADS;
    s = sw_opencl_new(size, dtype, mutable_, empty, device, &c);
    Py_END_ALLOW_THREADS;
    if (s != SW_OK) {
        swpy_raise(s);
        return -1;
    }
    return swpy_carrier_adopt(self, c, "OpenCL");
}

static PyObject *opencl_init_subclass(PyObject *cls, PyObject *args,
                                      PyObject *kwds) {
    PyErr_SetString(PyExc_TypeError,
                    "OpenCL is a closed carrier implementation and cannot be "
                    "subclassed");
    return NULL;
}

static const swpy_backend opencl_backend = {
    .name = "OpenCL",
    .is = sw_carrier_is_opencl,
    .exact_new_like = 0,
    .dtype_type_error = 1,
    .gil = SWPY_GIL_ALWAYS,
};

static PyObject *opencl_new_like(PyObject *self, PyObject *args,
                                 PyObject *kwds) {
    return swpy_backend_new_like(&opencl_backend, self, args, kwds);
}

static PyObject *opencl_allocate_like(PyObject *self, PyObject *args,
                                      PyObject *kwds) {
    return swpy_backend_allocate_like(&opencl_backend, self, args, kwds);
}

static PyObject *opencl_dlpack_info(PyObject *self, PyObject *unused) {
    sw_carrier *c = opencl_of(self);
    if (c == NULL) {
        return NULL;
    }
    void *pointer = NULL;
    int32_t type = 0, id = 0;
    sw_status s = sw_carrier_dlpack_info(c, &pointer, &type, &id);
    if (s != SW_OK) {
        return swpy_raise(s);
    }
    PyErr_SetString(PyExc_SystemError,
                    "strideweave: an OpenCL carrier reported DLPack storage");
    return NULL;
}

/* Answers without a carrier (an instance whose __init__ never ran) and
 * without the runtime. */
static PyObject *opencl_supports_storage_dtype(PyObject *self,
                                               PyObject *dtype) {
    swpy_state *st = swpy_state_of_type(Py_TYPE(self));
    if (st == NULL) {
        return NULL;
    }
    sw_dtype d;
    int rc = swpy_dtype_from_py(st, dtype, &d);
    if (rc < 0) {
        return NULL;
    }
    if (rc == 0) {
        PyErr_Format(PyExc_TypeError,
                     "storage dtype must be a DType, not '%.200s'",
                     Py_TYPE(dtype)->tp_name);
        return NULL;
    }
    return PyBool_FromLong(sw_opencl_supports_dtype(d));
}

static PyObject *opencl_synchronize(PyObject *self, PyObject *unused) {
    sw_carrier *c = opencl_of(self);
    if (c == NULL) {
        return NULL;
    }
    sw_status s;
    Py_BEGIN_ALLOW_THREADS;
    s = sw_opencl_synchronize(c);
    Py_END_ALLOW_THREADS;
    if (s != SW_OK) {
        return swpy_raise(s);
    }
    Py_RETURN_NONE;
}

static PyObject *opencl_get_device(PyObject *self, void *closure) {
    sw_carrier *c = opencl_of(self);
    return c == NULL ? NULL : PyLong_FromLongLong(sw_opencl_device_of(c));
}

static PyObject *opencl_scatter(PyObject *self, PyObject *args,
                                PyObject *kwds) {
    swpy_scatter_args a;
    if (swpy_backend_scatter_args(&opencl_backend, self, args, kwds, &a) < 0) {
        return NULL;
    }
    int64_t offset = 0;
    if (a.offset != NULL && a.offset != Py_None &&
        swpy_index_arg(a.offset, &offset) < 0) {
        return NULL;
    }
    if (!swpy_is_tensor(a.st, a.src)) {
        PyErr_SetString(PyExc_TypeError, "to_scatter must be a Tensor");
        return NULL;
    }
    if (!swpy_is_tensor(a.st, a.onto)) {
        PyErr_SetString(PyExc_TypeError, "scatter_onto must be a Tensor");
        return NULL;
    }
    if (!swpy_is_layout(a.st, a.mapping)) {
        PyErr_SetString(PyExc_TypeError, "mapping must be a Layout");
        return NULL;
    }
    /* The source may hold Python values: the GIL stays held. */
    sw_status s = sw_opencl_scatter(a.carrier, swpy_tensor_of(a.src),
                                    swpy_tensor_of(a.onto),
                                    swpy_layout_get(a.mapping), offset);
    if (s != SW_OK) {
        return swpy_raise(s);
    }
    Py_RETURN_NONE;
}

/* ------------------------------------------------- module functions */

static PyObject *opencl_devices(PyObject *module, PyObject *unused) {
    int64_t n;
    Py_BEGIN_ALLOW_THREADS;
    n = sw_opencl_device_count();
    Py_END_ALLOW_THREADS;
    PyObject *list = PyList_New(0);
    for (int64_t i = 0; list != NULL && i < n; i++) {
        sw_opencl_device_desc d;
        if (sw_opencl_device_info(i, &d) != SW_OK) {
            Py_DECREF(list);
            return swpy_raise(sw_errcode());
        }
        PyObject *item =
            Py_BuildValue("{sLsssssssLsO}", "index", (long long)d.index,
                          "platform", d.platform, "name", d.name, "type",
                          d.type, "global_memory", (long long)d.global_memory,
                          "default", d.is_default ? Py_True : Py_False);
        if (item == NULL || PyList_Append(list, item) < 0) {
            Py_XDECREF(item);
            Py_DECREF(list);
            return NULL;
        }
        Py_DECREF(item);
    }
    return list;
}

static PyObject *debug_opencl_fail(PyObject *module, PyObject *args) {
    const char *stage = NULL;
    long long after = 0;
    if (!PyArg_ParseTuple(args, "sL:_debug_opencl_fail", &stage, &after)) {
        return NULL;
    }
    sw_opencl_stage s;
    if (strcmp(stage, "none") == 0) {
        s = SW_OPENCL_STAGE_NONE;
    } else if (strcmp(stage, "enqueue") == 0) {
        s = SW_OPENCL_STAGE_ENQUEUE;
    } else if (strcmp(stage, "wait") == 0) {
        s = SW_OPENCL_STAGE_WAIT;
    } else if (strcmp(stage, "map") == 0) {
        s = SW_OPENCL_STAGE_MAP;
    } else if (strcmp(stage, "compile") == 0) {
        s = SW_OPENCL_STAGE_COMPILE;
    } else {
        PyErr_SetString(PyExc_ValueError, "stage must be 'none', 'enqueue', "
                                          "'wait', 'map' or 'compile'");
        return NULL;
    }
    sw_debug_opencl_fail(s, after);
    Py_RETURN_NONE;
}

/* The device-side test gate (sw_debug_opencl_hold). */
static PyObject *debug_opencl_hold(PyObject *module, PyObject *arg) {
    int hold = PyObject_IsTrue(arg);
    if (hold < 0) {
        return NULL;
    }
    sw_status st;
    Py_BEGIN_ALLOW_THREADS;
    st = sw_debug_opencl_hold(hold);
    Py_END_ALLOW_THREADS;
    if (st) {
        return swpy_raise(st);
    }
    Py_RETURN_NONE;
}

/* The kernel cache's counters: (entries, compiled, launched). */
static PyObject *opencl_kernel_stats(PyObject *module, PyObject *unused) {
    int64_t entries = 0, compiled = 0, launched = 0;
    sw_opencl_kernel_stats(&entries, &compiled, &launched);
    return Py_BuildValue("(LLL)", (long long)entries, (long long)compiled,
                         (long long)launched);
}

/* ------------------------------------------------------------ type spec */

#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
#endif

#define KW(f) ((PyCFunction)(void (*)(void))(f))

static PyMethodDef opencl_methods[] = {
    {"size", swpy_carrier_size, METH_NOARGS, NULL},
    {"dtype", swpy_carrier_dtype, METH_NOARGS, NULL},
    {"get_value", swpy_carrier_get_value, METH_O, NULL},
    {"set_value", KW(swpy_carrier_set_value), METH_FASTCALL, NULL},
    {"new_like", KW(opencl_new_like), METH_VARARGS | METH_KEYWORDS, NULL},
    {"allocate_like", KW(opencl_allocate_like), METH_VARARGS | METH_KEYWORDS,
     NULL},
    {"dlpack_info", opencl_dlpack_info, METH_NOARGS, NULL},
    {"supports_storage_dtype", opencl_supports_storage_dtype, METH_O, NULL},
    {"synchronize", opencl_synchronize, METH_NOARGS, NULL},
    {"scatter", KW(opencl_scatter), METH_VARARGS | METH_KEYWORDS, NULL},
    {"__init_subclass__", KW(opencl_init_subclass),
     METH_VARARGS | METH_KEYWORDS | METH_CLASS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef opencl_getset[] = {
    {"device", opencl_get_device, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef opencl_functions[] = {
    {"opencl_devices", opencl_devices, METH_NOARGS, NULL},
    {"_debug_opencl_fail", debug_opencl_fail, METH_VARARGS, NULL},
    {"_debug_opencl_hold", debug_opencl_hold, METH_O, NULL},
    {"_opencl_kernel_stats", opencl_kernel_stats, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot opencl_slots[] = {
    {Py_tp_new, swpy_backend_new},
    {Py_tp_init, opencl_tp_init},
    {Py_tp_dealloc, swpy_carrier_dealloc},
    {Py_tp_traverse, swpy_carrier_traverse},
    {Py_tp_clear, swpy_carrier_clear},
    {Py_tp_methods, opencl_methods},
    {Py_tp_getset, opencl_getset},
    {0, NULL},
};

/* Py_TPFLAGS_BASETYPE only so that __init_subclass__ can refuse with the
 * carrier's own message. */
static PyType_Spec opencl_spec = {
    .name = "strideweave.carriers.opencl.carrier.OpenCL",
    .basicsize = sizeof(CarrierObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC |
             Py_TPFLAGS_IMMUTABLETYPE,
    .slots = opencl_slots,
};

#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

int swpy_opencl_init_type(PyObject *module, swpy_state *st) {
    if (swpy_add_type(module, &opencl_spec, st->carrier_type,
                      &st->opencl_type) < 0) {
        return -1;
    }
    return PyModule_AddFunctions(module, opencl_functions);
}
