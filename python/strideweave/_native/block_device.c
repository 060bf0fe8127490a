/*
 * BlockDevice and BlockDeviceCarrier (strideweave/blockdev.h).
 *
 * A BlockDevice object owns one reference to its sw_blockdev and is the
 * device's peer (sw_blockdev_set_peer, a borrowed pointer cleared when the
 * object goes). A BlockDeviceCarrier object is a carrier object with one
 * more field: a strong reference to its device's object, set when
 * allocate makes it, or found through the peer (or made anew over the
 * device) for carriers the library made (allocate_like, new_like, a
 * backward pass). The GIL is released around every call that may do I/O
 * or wait for the device's lock; values are converted to numbers before,
 * so nothing under the device's lock calls back into Python.
 */
#include "py_carrier.h"
#include "errors.h"
#include "gil.h"

#include <string.h>

#include "strideweave/blockdev.h"

typedef struct {
    PyObject_HEAD sw_blockdev *dev; /* owned; never NULL once made */
    PyObject *path;                 /* as given; None for a found device */
} DeviceObject;

typedef struct {
    CarrierObject base;
    PyObject *device; /* a DeviceObject, or NULL until first needed */
} BlockCarrierObject;

#define DEV(o) (((DeviceObject *)(o))->dev)

/* ------------------------------------------------------------- devices */

/* A new device object over an owned device reference (consumed). */
static PyObject *device_wrap(swpy_state *st, sw_blockdev *owned,
                             PyObject *path) {
    PyTypeObject *type = st->blockdev_device_type;
    DeviceObject *self = (DeviceObject *)type->tp_alloc(type, 0);
    if (self == NULL) {
        sw_blockdev_unref(owned);
        return NULL;
    }
    self->dev = owned;
    self->path = Py_NewRef(path);
    if (sw_blockdev_get_peer(owned) == NULL) {
        sw_blockdev_set_peer(owned, self);
    }
    return (PyObject *)self;
}

/*
 * The path argument: str or os.PathLike, whose __fspath__ is called once
 * and must give str. *text is the encoded file-system form (a new bytes
 * object). Returns 0, or -1 with an exception.
 */
static int path_arg(PyObject *path, PyObject **text) {
    PyObject *fs = PyOS_FSPath(path);
    if (fs == NULL) {
        return -1;
    }
    if (!PyUnicode_Check(fs)) {
        Py_DECREF(fs);
        PyErr_SetString(PyExc_TypeError,
                        "BlockDevice path must have a string filesystem "
                        "representation");
        return -1;
    }
    Py_ssize_t nul = PyUnicode_FindChar(fs, 0, 0, PyUnicode_GET_LENGTH(fs), 1);
    if (nul == -2) {
        Py_DECREF(fs);
        return -1;
    }
    if (nul >= 0) {
        Py_DECREF(fs);
        PyErr_SetString(PyExc_ValueError,
                        "BlockDevice path has an embedded NUL character");
        return -1;
    }
    *text = PyUnicode_EncodeFSDefault(fs);
    Py_DECREF(fs);
    return *text == NULL ? -1 : 0;
}

static PyObject *device_tp_new(PyTypeObject *type, PyObject *args,
                               PyObject *kwds) {
    static char *kwlist[] = {"path", NULL};
    PyObject *path = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O:BlockDevice", kwlist,
                                     &path)) {
        return NULL;
    }
    swpy_state *st = swpy_state_of_type(type);
    PyObject *text = NULL;
    if (st == NULL || path_arg(path, &text) < 0) {
        return NULL;
    }
    sw_blockdev *d = NULL;
    sw_status s;
    SWPY_NOGIL_BEGIN
    s = sw_blockdev_open(PyBytes_AS_STRING(text), &d);
    SWPY_NOGIL_END
    Py_DECREF(text);
    if (s != SW_OK) {
        int os = s == SW_EOS;
        swpy_raise(s);
        if (os) {
            /* The path the failure is about, as the interpreter's own
             * open() reports it. */
            PyObject *etype, *value, *tb;
            PyErr_Fetch(&etype, &value, &tb);
            PyErr_NormalizeException(&etype, &value, &tb);
            if (value != NULL &&
                PyObject_SetAttrString(value, "filename", path) < 0) {
                PyErr_Clear();
            }
            PyErr_Restore(etype, value, tb);
        }
        return NULL;
    }
    return device_wrap(st, d, path);
}

static void device_dealloc(PyObject *self) {
    PyTypeObject *type = Py_TYPE(self);
    DeviceObject *o = (DeviceObject *)self;
    if (o->dev != NULL) {
        if (sw_blockdev_get_peer(o->dev) == self) {
            sw_blockdev_set_peer(o->dev, NULL);
        }
        sw_blockdev *d = o->dev;
        o->dev = NULL;
        SWPY_NOGIL_BEGIN
        sw_blockdev_unref(d);
        SWPY_NOGIL_END
    }
    Py_CLEAR(o->path);
    type->tp_free(self);
    Py_DECREF(type);
}

static PyObject *device_get_path(PyObject *self, void *closure) {
    return Py_NewRef(((DeviceObject *)self)->path);
}

static PyObject *device_get_capacity(PyObject *self, void *closure) {
    return PyLong_FromLongLong(sw_blockdev_capacity(DEV(self)));
}

static PyObject *device_get_logical(PyObject *self, void *closure) {
    return PyLong_FromLongLong(sw_blockdev_logical_block_size(DEV(self)));
}

static PyObject *device_get_physical(PyObject *self, void *closure) {
    return PyLong_FromLongLong(sw_blockdev_physical_block_size(DEV(self)));
}

static PyObject *device_is_closed(PyObject *self, PyObject *unused) {
    return PyBool_FromLong(sw_blockdev_is_closed(DEV(self)));
}

static PyObject *device_is_faulted(PyObject *self, PyObject *unused) {
    return PyBool_FromLong(sw_blockdev_is_faulted(DEV(self)));
}

static PyObject *device_close(PyObject *self, PyObject *unused) {
    sw_status s;
    sw_blockdev *d = DEV(self);
    SWPY_NOGIL_BEGIN
    s = sw_blockdev_close(d);
    SWPY_NOGIL_END
    if (s != SW_OK) {
        return swpy_raise(s);
    }
    Py_RETURN_NONE;
}

static PyObject *device_enter(PyObject *self, PyObject *unused) {
    return Py_NewRef(self);
}

/* Closes on exit and never swallows the body's exception; a close error
 * propagates with it as its context (it is being handled now). */
static PyObject *device_exit(PyObject *self, PyObject *const *args,
                             Py_ssize_t nargs) {
    PyObject *r = device_close(self, NULL);
    if (r == NULL) {
        return NULL;
    }
    Py_DECREF(r);
    Py_RETURN_FALSE;
}

/* A keyword that must be a real bool. */
static int bool_arg(PyObject *o, const char *name, int *out) {
    if (o == NULL) {
        return 0;
    }
    if (!PyBool_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s must be a bool", name);
        return -1;
    }
    *out = o == Py_True;
    return 0;
}

/* Gives a new carrier object its device object. */
static PyObject *carrier_with_device(swpy_state *st, sw_carrier *owned,
                                     PyObject *device) {
    PyObject *r = swpy_carrier_wrap(st, owned);
    if (r != NULL && Py_IS_TYPE(r, st->blockdev_type) &&
        ((BlockCarrierObject *)r)->device == NULL) {
        ((BlockCarrierObject *)r)->device = Py_NewRef(device);
    }
    return r;
}

static PyObject *device_allocate(PyObject *self, PyObject *args,
                                 PyObject *kwds) {
    static char *kwlist[] = {"size", "mutable", "dtype", "empty", NULL};
    PyObject *size_obj = NULL, *mutable_obj = NULL, *dtype_obj = NULL,
             *empty_obj = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|$OOO:allocate", kwlist,
                                     &size_obj, &mutable_obj, &dtype_obj,
                                     &empty_obj)) {
        return NULL;
    }
    swpy_state *st = swpy_state_of_type(Py_TYPE(self));
    if (st == NULL) {
        return NULL;
    }
    int mutable_ = 1, empty = 0;
    if (bool_arg(mutable_obj, "mutable", &mutable_) < 0 ||
        bool_arg(empty_obj, "empty", &empty) < 0) {
        return NULL;
    }
    sw_dtype dtype = SW_DTYPE_FLOAT32;
    if (dtype_obj != NULL) {
        int rc = swpy_dtype_from_py(st, dtype_obj, &dtype);
        if (rc <= 0) {
            if (rc == 0) {
                PyErr_SetString(PyExc_TypeError, "dtype must be a DType");
            }
            return NULL;
        }
    }
    /* __index__ runs here, before the library takes the device's lock,
     * so that it may itself allocate from the device. */
    int64_t size = 0;
    if (swpy_index_arg(size_obj, &size) < 0) {
        return NULL;
    }
    sw_carrier *c = NULL;
    sw_status s;
    sw_blockdev *d = DEV(self);
    SWPY_NOGIL_BEGIN
    s = sw_blockdev_allocate(d, size, mutable_, dtype, empty, &c);
    SWPY_NOGIL_END
    if (s != SW_OK) {
        return swpy_raise(s);
    }
    return carrier_with_device(st, c, self);
}

/* ------------------------------------------- raw transfers (for tests) */

static int range_args(PyObject *const *args, Py_ssize_t nargs, const char *name,
                      int64_t *offset, int64_t *count) {
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "%s takes two arguments", name);
        return -1;
    }
    return swpy_index_arg(args[0], offset) < 0 ||
                   swpy_index_arg(args[1], count) < 0
               ? -1
               : 0;
}

static PyObject *device_read_bytes(PyObject *self, PyObject *const *args,
                                   Py_ssize_t nargs) {
    int64_t offset = 0, count = 0;
    if (range_args(args, nargs, "_read_bytes", &offset, &count) < 0) {
        return NULL;
    }
    /* A count the library's preflight will refuse gets an empty buffer:
     * the library checks the range before it writes a byte. */
    int64_t cap = sw_blockdev_capacity(DEV(self));
    int64_t n = count < 0 || count > cap ? 0 : count;
    PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)n);
    if (out == NULL) {
        return NULL;
    }
    sw_status s;
    sw_blockdev *d = DEV(self);
    char *buf = PyBytes_AS_STRING(out);
    SWPY_NOGIL_BEGIN
    s = sw_blockdev_read(d, offset, count, buf, NULL);
    SWPY_NOGIL_END
    if (s != SW_OK) {
        Py_DECREF(out);
        return swpy_raise(s);
    }
    return out;
}

static PyObject *device_write_bytes(PyObject *self, PyObject *const *args,
                                    Py_ssize_t nargs) {
    int64_t offset = 0;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "_write_bytes takes two arguments");
        return NULL;
    }
    if (swpy_index_arg(args[0], &offset) < 0) {
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[1], &view, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    sw_status s;
    sw_blockdev *d = DEV(self);
    SWPY_NOGIL_BEGIN
    s = sw_blockdev_write(d, offset, (int64_t)view.len,
                          view.len ? view.buf : (void *)"", NULL);
    SWPY_NOGIL_END
    PyBuffer_Release(&view);
    if (s != SW_OK) {
        return swpy_raise(s);
    }
    Py_RETURN_NONE;
}

static PyObject *device_zero_fill(PyObject *self, PyObject *const *args,
                                  Py_ssize_t nargs) {
    int64_t offset = 0, count = 0;
    if (range_args(args, nargs, "_zero_fill", &offset, &count) < 0) {
        return NULL;
    }
    sw_status s;
    sw_blockdev *d = DEV(self);
    SWPY_NOGIL_BEGIN
    s = sw_blockdev_zero(d, offset, count, NULL);
    SWPY_NOGIL_END
    if (s != SW_OK) {
        return swpy_raise(s);
    }
    Py_RETURN_NONE;
}

static PyObject *device_attempts(PyObject *self, PyObject *unused) {
    int64_t r = 0, w = 0, c = 0;
    sw_blockdev_attempts(DEV(self), &r, &w, &c);
    return Py_BuildValue("(LLL)", (long long)r, (long long)w, (long long)c);
}

static PyObject *device_carrier_count(PyObject *self, PyObject *unused) {
    return PyLong_FromLongLong(sw_blockdev_carrier_count(DEV(self)));
}

/* --------------------------------------------------- the scripted device */

/* A script argument: an iterable of (kind, number) pairs. Returns the
 * number of steps, or -1 with an exception; *out is PyMem memory. */
static Py_ssize_t script_arg(PyObject *o, const char *name,
                             sw_blockdev_step **out) {
    *out = NULL;
    PyObject *seq = PySequence_Fast(o, "a script must be a sequence of steps");
    if (seq == NULL) {
        return -1;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    sw_blockdev_step *steps = PyMem_Calloc(n ? (size_t)n : 1, sizeof *steps);
    if (steps == NULL) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return -1;
    }
    static const char *const kinds[] = {"interrupt", "progress", "zero",
                                        "error"};
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
        const char *kind = NULL;
        long long value = 0;
        if (!PyTuple_Check(item) ||
            !PyArg_ParseTuple(item, "sL", &kind, &value)) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError,
                         "%s steps must be (kind, number) pairs", name);
            goto fail;
        }
        int k = -1;
        for (int j = 0; j < 4; j++) {
            if (strcmp(kind, kinds[j]) == 0) {
                k = j;
            }
        }
        if (k < 0) {
            PyErr_Format(PyExc_ValueError, "unknown script step '%s'", kind);
            goto fail;
        }
        steps[i].kind = (sw_blockdev_step_kind)k;
        steps[i].value = (int64_t)value;
    }
    Py_DECREF(seq);
    *out = steps;
    return n;
fail:
    Py_DECREF(seq);
    PyMem_Free(steps);
    return -1;
}

static PyObject *fn_scripted(PyObject *module, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {
        "capacity",     "logical",     "physical", "read_script",
        "write_script", "close_error", "path",     NULL};
    long long capacity = 0, logical = 0, physical = 0;
    PyObject *reads_obj = NULL, *writes_obj = NULL;
    int close_error = 0;
    PyObject *path = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "LLL|$OOiO:_blockdev_scripted",
                                     kwlist, &capacity, &logical, &physical,
                                     &reads_obj, &writes_obj, &close_error,
                                     &path)) {
        return NULL;
    }
    swpy_state *st = swpy_module_state(module);
    sw_blockdev_step *reads = NULL, *writes = NULL;
    Py_ssize_t nr = 0, nw = 0;
    if (reads_obj != NULL &&
        (nr = script_arg(reads_obj, "read_script", &reads)) < 0) {
        return NULL;
    }
    if (writes_obj != NULL &&
        (nw = script_arg(writes_obj, "write_script", &writes)) < 0) {
        PyMem_Free(reads);
        return NULL;
    }
    sw_blockdev *d = NULL;
    sw_status s = sw_blockdev_open_scripted(capacity, logical, physical, reads,
                                            nr, writes, nw, close_error, &d);
    PyMem_Free(reads);
    PyMem_Free(writes);
    if (s != SW_OK) {
        return swpy_raise(s);
    }
    PyObject *label =
        path != NULL ? Py_NewRef(path) : PyUnicode_FromString("<scripted>");
    if (label == NULL) {
        sw_blockdev_unref(d);
        return NULL;
    }
    PyObject *r = device_wrap(st, d, label);
    Py_DECREF(label);
    return r;
}

/* ------------------------------------------------------------ carriers */

static sw_carrier *block_of(PyObject *self) {
    return swpy_backend_of(self, sw_carrier_is_blockdev, "BlockDeviceCarrier");
}

static PyObject *block_tp_new(PyTypeObject *type, PyObject *args,
                              PyObject *kwds) {
    PyErr_SetString(PyExc_TypeError, "BlockDeviceCarrier cannot be created "
                                     "directly: use BlockDevice.allocate");
    return NULL;
}

static void block_dealloc(PyObject *self) {
    PyObject *device = ((BlockCarrierObject *)self)->device;
    ((BlockCarrierObject *)self)->device = NULL;
    swpy_carrier_dealloc(self);
    Py_XDECREF(device);
}

static int block_traverse(PyObject *self, visitproc visit, void *arg) {
    Py_VISIT(((BlockCarrierObject *)self)->device);
    return swpy_carrier_traverse(self, visit, arg);
}

static int block_clear(PyObject *self) {
    Py_CLEAR(((BlockCarrierObject *)self)->device);
    return swpy_carrier_clear(self);
}

static PyObject *block_get_device(PyObject *self, void *closure) {
    BlockCarrierObject *o = (BlockCarrierObject *)self;
    if (o->device != NULL) {
        return Py_NewRef(o->device);
    }
    sw_carrier *c = block_of(self);
    swpy_state *st = swpy_state_of_type(Py_TYPE(self));
    if (c == NULL || st == NULL) {
        return NULL;
    }
    sw_blockdev *d = sw_blockdev_of(c);
    PyObject *peer = sw_blockdev_get_peer(d);
    o->device = peer != NULL ? Py_NewRef(peer)
                             : device_wrap(st, sw_blockdev_retain(d), Py_None);
    return Py_XNewRef(o->device);
}

static PyObject *block_get_offset(PyObject *self, void *closure) {
    sw_carrier *c = block_of(self);
    return c == NULL ? NULL
                     : PyLong_FromLongLong(sw_blockdev_carrier_offset(c));
}

static PyObject *block_get_extent(PyObject *self, void *closure) {
    sw_carrier *c = block_of(self);
    return c == NULL ? NULL
                     : PyLong_FromLongLong(sw_blockdev_carrier_extent(c));
}

static const swpy_backend block_backend = {
    .name = "BlockDeviceCarrier",
    .is = sw_carrier_is_blockdev,
    .exact_new_like = 1,
    .dtype_type_error = 1,
    .gil = SWPY_GIL_ALWAYS,
};

/* The like-carriers come from the same device: they share its object. */
static PyObject *with_my_device(PyObject *self, PyObject *r) {
    if (r == NULL) {
        return NULL;
    }
    PyObject *dev = block_get_device(self, NULL);
    if (dev == NULL) {
        Py_DECREF(r);
        return NULL;
    }
    BlockCarrierObject *o = (BlockCarrierObject *)r;
    if (o->device == NULL) {
        o->device = dev;
    } else {
        Py_DECREF(dev);
    }
    return r;
}

static PyObject *block_new_like(PyObject *self, PyObject *args,
                                PyObject *kwds) {
    return with_my_device(
        self, swpy_backend_new_like(&block_backend, self, args, kwds));
}

static PyObject *block_allocate_like(PyObject *self, PyObject *args,
                                     PyObject *kwds) {
    return with_my_device(
        self, swpy_backend_allocate_like(&block_backend, self, args, kwds));
}

static PyObject *block_scatter(PyObject *self, PyObject *args, PyObject *kwds) {
    PyErr_SetString(PyExc_NotImplementedError,
                    "BlockDeviceCarrier carriers do not support scatter");
    return NULL;
}

/* ------------------------------------------------------------ type specs */

#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
#endif

#define KW(f) ((PyCFunction)(void (*)(void))(f))

static PyMethodDef device_methods[] = {
    {"allocate", KW(device_allocate), METH_VARARGS | METH_KEYWORDS, NULL},
    {"close", device_close, METH_NOARGS, NULL},
    {"is_closed", device_is_closed, METH_NOARGS, NULL},
    {"is_faulted", device_is_faulted, METH_NOARGS, NULL},
    {"__enter__", device_enter, METH_NOARGS, NULL},
    {"__exit__", KW(device_exit), METH_FASTCALL, NULL},
    {"_read_bytes", KW(device_read_bytes), METH_FASTCALL, NULL},
    {"_write_bytes", KW(device_write_bytes), METH_FASTCALL, NULL},
    {"_zero_fill", KW(device_zero_fill), METH_FASTCALL, NULL},
    {"_attempts", device_attempts, METH_NOARGS, NULL},
    {"_carrier_count", device_carrier_count, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef device_getset[] = {
    {"path", device_get_path, NULL, NULL, NULL},
    {"capacity_bytes", device_get_capacity, NULL, NULL, NULL},
    {"logical_block_size", device_get_logical, NULL, NULL, NULL},
    {"physical_block_size", device_get_physical, NULL, NULL, NULL},
    {"allocation_alignment", device_get_physical, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot device_slots[] = {
    {Py_tp_new, device_tp_new},
    {Py_tp_dealloc, device_dealloc},
    {Py_tp_methods, device_methods},
    {Py_tp_getset, device_getset},
    {0, NULL},
};

static PyType_Spec device_spec = {
    .name = "strideweave.carriers.block_device.carrier.BlockDevice",
    .basicsize = sizeof(DeviceObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = device_slots,
};

static PyMethodDef block_methods[] = {
    {"size", swpy_carrier_size, METH_NOARGS, NULL},
    {"dtype", swpy_carrier_dtype, METH_NOARGS, NULL},
    {"get_value", swpy_carrier_get_value, METH_O, NULL},
    {"set_value", KW(swpy_carrier_set_value), METH_FASTCALL, NULL},
    {"new_like", KW(block_new_like), METH_VARARGS | METH_KEYWORDS, NULL},
    {"allocate_like", KW(block_allocate_like), METH_VARARGS | METH_KEYWORDS,
     NULL},
    {"scatter", KW(block_scatter), METH_VARARGS | METH_KEYWORDS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef block_getset[] = {
    {"device", block_get_device, NULL, NULL, NULL},
    {"device_offset_bytes", block_get_offset, NULL, NULL, NULL},
    {"extent_bytes", block_get_extent, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot block_slots[] = {
    {Py_tp_new, block_tp_new},
    {Py_tp_dealloc, block_dealloc},
    {Py_tp_traverse, block_traverse},
    {Py_tp_clear, block_clear},
    {Py_tp_methods, block_methods},
    {Py_tp_getset, block_getset},
    {0, NULL},
};

/* Final: no Py_TPFLAGS_BASETYPE. */
static PyType_Spec block_spec = {
    .name = "strideweave.carriers.block_device.carrier.BlockDeviceCarrier",
    .basicsize = sizeof(BlockCarrierObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = block_slots,
};

static PyMethodDef block_functions[] = {
    {"_blockdev_scripted", KW(fn_scripted), METH_VARARGS | METH_KEYWORDS, NULL},
    {NULL, NULL, 0, NULL},
};

#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

int swpy_blockdev_init_types(PyObject *module, swpy_state *st) {
    if (swpy_add_type(module, &device_spec, NULL, &st->blockdev_device_type) <
            0 ||
        swpy_add_type(module, &block_spec, st->carrier_type,
                      &st->blockdev_type) < 0) {
        return -1;
    }
    return PyModule_AddFunctions(module, block_functions);
}
