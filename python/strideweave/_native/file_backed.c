/*
 * The FileBacked carrier type: raw values in a binary file (sw_file_new),
 * read and written in place, so memory use does not grow with the file.
 *
 * With no filename the file is a private temporary without a name in the
 * file system, gone with its carrier or the process. A filename is a path
 * created exclusively and kept; a relative one is made absolute at
 * construction (by the library). The GIL is released around file creation
 * and the bulk calls (new_like, allocate_like, _allocate); TMPDIR is read
 * before, with the GIL held, and handed to the library.
 */
#include "py_carrier.h"
#include "errors.h"

static sw_carrier *file_of(PyObject *self) {
    return swpy_backend_of(self, sw_carrier_is_file, "FileBacked");
}

static int file_tp_init(PyObject *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"filename", "mutable", "dtype", NULL};
    PyObject *filename = Py_None, *dtype_obj = NULL;
    int mutable_ = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|O$pO:FileBacked", kwlist,
                                     &filename, &mutable_, &dtype_obj)) {
        return -1;
    }
    /* Refused before anything is created: a second __init__ must not leave
     * a file behind, and the object keeps its first carrier. */
    if (((CarrierObject *)self)->carrier != NULL) {
        PyErr_SetString(PyExc_RuntimeError,
                        "FileBacked.__init__() must not be called twice");
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
                                "FileBacked dtype must be a DType");
            }
            return -1;
        }
    }
    PyObject *path = NULL;
    if (filename != Py_None && !PyUnicode_FSConverter(filename, &path)) {
        return -1;
    }
    const char *cpath = path != NULL ? PyBytes_AS_STRING(path) : NULL;
    if (cpath != NULL && strlen(cpath) != (size_t)PyBytes_GET_SIZE(path)) {
        Py_DECREF(path);
        PyErr_SetString(PyExc_ValueError, "embedded null byte");
        return -1;
    }
    /* The environment is read here, with the GIL held, since os.environ
     * writes change it under the GIL; the library gets a copy. */
    const char *env = getenv("TMPDIR");
    PyObject *tmpdir = env != NULL ? PyBytes_FromString(env) : NULL;
    if (env != NULL && tmpdir == NULL) {
        Py_XDECREF(path);
        return -1;
    }
    const char *ctmpdir = tmpdir != NULL ? PyBytes_AS_STRING(tmpdir) : NULL;
    sw_carrier *c = NULL;
    sw_status s;
    Py_BEGIN_ALLOW_THREADS;
    s = sw_file_new_in(cpath, ctmpdir, dtype, mutable_, &c);
    Py_END_ALLOW_THREADS;
    Py_XDECREF(tmpdir);
    Py_XDECREF(path);
    if (s != SW_OK) {
        swpy_raise(s);
        return -1;
    }
    return swpy_carrier_adopt(self, c, "FileBacked");
}

/* Reads an optional non-negative int argument (None: absent, -1). */
static int window_arg(PyObject *obj, const char *name, int64_t *out) {
    *out = -1;
    if (obj == NULL || obj == Py_None) {
        return 0;
    }
    if (PyBool_Check(obj) || !PyIndex_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "FileBacked.open %s must be an int",
                     name);
        return -1;
    }
    long long v = PyLong_AsLongLong(obj);
    if (v == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (v < 0) {
        PyErr_Format(PyExc_ValueError,
                     "FileBacked.open %s must be non-negative", name);
        return -1;
    }
    *out = (int64_t)v;
    return 0;
}

/* FileBacked.open(path, *, dtype=DType.Floating, mutable=False,
 * offset=None, size=None): an existing raw file as a carrier
 * (sw_file_open_in), or a window of it when offset or size is given
 * (sw_file_open_window). */
static PyObject *file_open(PyObject *cls, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"path",   "dtype", "mutable",
                             "offset", "size",  NULL};
    PyObject *filename = NULL, *dtype_obj = NULL, *offset_obj = NULL,
             *size_obj = NULL;
    int mutable_ = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|$OpOO:open", kwlist,
                                     &filename, &dtype_obj, &mutable_,
                                     &offset_obj, &size_obj)) {
        return NULL;
    }
    int64_t offset = -1, count = -1;
    if (window_arg(offset_obj, "offset", &offset) < 0 ||
        window_arg(size_obj, "size", &count) < 0) {
        return NULL;
    }
    int window = offset >= 0 || count >= 0;
    if (offset < 0) {
        offset = 0;
    }
    swpy_state *st = swpy_state_of_type((PyTypeObject *)cls);
    if (st == NULL) {
        return NULL;
    }
    sw_dtype dtype = SW_DTYPE_FLOATING;
    if (dtype_obj != NULL) {
        int rc = swpy_dtype_from_py(st, dtype_obj, &dtype);
        if (rc <= 0) {
            if (rc == 0) {
                PyErr_SetString(PyExc_TypeError,
                                "FileBacked dtype must be a DType");
            }
            return NULL;
        }
    }
    PyObject *path = NULL;
    if (!PyUnicode_FSConverter(filename, &path)) {
        return NULL;
    }
    const char *cpath = PyBytes_AS_STRING(path);
    if (strlen(cpath) != (size_t)PyBytes_GET_SIZE(path)) {
        Py_DECREF(path);
        PyErr_SetString(PyExc_ValueError, "embedded null byte");
        return NULL;
    }
    const char *env = getenv("TMPDIR");
    PyObject *tmpdir = env != NULL ? PyBytes_FromString(env) : NULL;
    if (env != NULL && tmpdir == NULL) {
        Py_DECREF(path);
        return NULL;
    }
    const char *ctmpdir = tmpdir != NULL ? PyBytes_AS_STRING(tmpdir) : NULL;
    PyTypeObject *type = (PyTypeObject *)cls;
    PyObject *empty = PyTuple_New(0);
    PyObject *self = empty != NULL ? type->tp_new(type, empty, NULL) : NULL;
    Py_XDECREF(empty);
    if (self == NULL) {
        Py_XDECREF(tmpdir);
        Py_DECREF(path);
        return NULL;
    }
    sw_carrier *c = NULL;
    sw_status s;
    Py_BEGIN_ALLOW_THREADS;
    s = window ? sw_file_open_window(cpath, ctmpdir, dtype, mutable_, offset,
                                     count, &c)
               : sw_file_open_in(cpath, ctmpdir, dtype, mutable_, &c);
    Py_END_ALLOW_THREADS;
    Py_XDECREF(tmpdir);
    Py_DECREF(path);
    if (s != SW_OK) {
        Py_DECREF(self);
        swpy_raise(s);
        return NULL;
    }
    if (swpy_carrier_adopt(self, c, "FileBacked") < 0) {
        Py_DECREF(self);
        return NULL;
    }
    return self;
}

static PyObject *file_get_path(PyObject *self, void *closure) {
    sw_carrier *c = file_of(self);
    swpy_state *st = swpy_state_of_type(Py_TYPE(self));
    if (c == NULL || st == NULL) {
        return NULL;
    }
    if (st->path_type == NULL) {
        PyObject *pathlib = PyImport_ImportModule("pathlib");
        if (pathlib == NULL) {
            return NULL;
        }
        st->path_type = PyObject_GetAttrString(pathlib, "Path");
        Py_DECREF(pathlib);
        if (st->path_type == NULL) {
            return NULL;
        }
    }
    PyObject *text = PyUnicode_DecodeFSDefault(sw_file_path(c));
    if (text == NULL) {
        return NULL;
    }
    PyObject *r = PyObject_CallOneArg(st->path_type, text);
    Py_DECREF(text);
    return r;
}

static const swpy_backend file_backend = {
    .name = "FileBacked",
    .is = sw_carrier_is_file,
    .exact_new_like = 1,
    .dtype_type_error = 1,
    .gil = SWPY_GIL_ALWAYS,
};

static PyObject *file_new_like(PyObject *self, PyObject *args, PyObject *kwds) {
    return swpy_backend_new_like(&file_backend, self, args, kwds);
}

static PyObject *file_allocate_like(PyObject *self, PyObject *args,
                                    PyObject *kwds) {
    return swpy_backend_allocate_like(&file_backend, self, args, kwds);
}

static PyObject *file_allocate(PyObject *self, PyObject *size_obj) {
    sw_carrier *c = file_of(self);
    int64_t size = 0;
    if (c == NULL || swpy_index_arg(size_obj, &size) < 0) {
        return NULL;
    }
    sw_status s;
    Py_BEGIN_ALLOW_THREADS;
    s = sw_file_resize(c, size);
    Py_END_ALLOW_THREADS;
    if (s != SW_OK) {
        return swpy_raise(s);
    }
    Py_RETURN_NONE;
}

static PyObject *file_scatter(PyObject *self, PyObject *args, PyObject *kwds) {
    PyErr_SetString(PyExc_NotImplementedError,
                    "FileBacked carriers do not support scatter");
    return NULL;
}

/* ------------------------------------------------------------ type spec */

#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
#endif

#define KW(f) ((PyCFunction)(void (*)(void))(f))

static PyMethodDef file_methods[] = {
    {"open", (PyCFunction)(void (*)(void))file_open,
     METH_VARARGS | METH_KEYWORDS | METH_CLASS, NULL},
    {"size", swpy_carrier_size, METH_NOARGS, NULL},
    {"dtype", swpy_carrier_dtype, METH_NOARGS, NULL},
    {"get_value", swpy_carrier_get_value, METH_O, NULL},
    {"set_value", KW(swpy_carrier_set_value), METH_FASTCALL, NULL},
    {"new_like", KW(file_new_like), METH_VARARGS | METH_KEYWORDS, NULL},
    {"allocate_like", KW(file_allocate_like), METH_VARARGS | METH_KEYWORDS,
     NULL},
    {"_allocate", file_allocate, METH_O, NULL},
    {"scatter", KW(file_scatter), METH_VARARGS | METH_KEYWORDS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef file_getset[] = {
    {"path", file_get_path, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot file_slots[] = {
    {Py_tp_new, swpy_backend_new},
    {Py_tp_init, file_tp_init},
    {Py_tp_dealloc, swpy_carrier_dealloc},
    {Py_tp_traverse, swpy_carrier_traverse},
    {Py_tp_clear, swpy_carrier_clear},
    {Py_tp_methods, file_methods},
    {Py_tp_getset, file_getset},
    {0, NULL},
};

static PyType_Spec file_spec = {
    .name = "strideweave.carriers.file_backed.carrier.FileBacked",
    .basicsize = sizeof(CarrierObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC |
             Py_TPFLAGS_IMMUTABLETYPE,
    .slots = file_slots,
};

#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

int swpy_file_init_type(PyObject *module, swpy_state *st) {
    return swpy_add_type(module, &file_spec, st->carrier_type, &st->file_type);
}
