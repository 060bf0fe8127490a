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

/* ------------------------------------------------------- documentation */

PyDoc_STRVAR(
    file_doc,
    "FileBacked(filename=None, *, mutable=True, dtype=DType.Floating)\n--\n\n"
    "Raw numeric values in a binary file, in native byte order.\n\n"
    "Floating values are 8-byte doubles, Float32 and Int32 values 4 bytes. "
    "A new carrier has size 0; _allocate and allocate_like make room "
    "(zero-filled). Elements are read and written in the file directly, so "
    "memory use does not grow with the file. With no filename the file is "
    "a private temporary without a name in the file system, gone on "
    "release, on garbage collection and however the process ends. A "
    "filename is a path that is created exclusively (empty, reserving the "
    "name), made absolute and kept; a move that grows the empty file shows "
    "its values under the name only once they are all written. I/O "
    "failures raise OSError and leave the carrier and its values as they "
    "were. For storage and movement only: FileBacked carriers run no "
    "computation.\n\n"
    "Args:\n"
    "    filename: None, or the path of a file to create (str, bytes or "
    "os.PathLike).\n"
    "    mutable: whether the carrier can be written.\n"
    "    dtype: DType.Floating, DType.Float32 or DType.Int32.\n\n"
    "Returns:\n"
    "    FileBacked: the carrier.\n\n"
    "Raises:\n"
    "    TypeError: 'FileBacked dtype must be a DType'.\n"
    "    ValueError: 'FileBacked dtype must be DType.Floating, DType.Float32, "
    "or DType.Int32'.\n"
    "    FileExistsError: the file exists already.\n"
    "    OSError: the file cannot be created.\n\n"
    "Examples:\n"
    "    >>> f = FileBacked(dtype=DType.Int32)\n"
    "    >>> f.size()\n"
    "    0\n"
    "    >>> f._allocate(3)\n"
    "    >>> f[2] = 7\n"
    "    >>> list(f), f.size()\n"
    "    ([0, 0, 7], 3)\n"
    "    >>> f.path.exists()\n"
    "    False\n");

PyDoc_STRVAR(file_path_doc,
             "The file's absolute path.\n\n"
             "A temporary has no name in the file system; its path is the "
             "directory it lives in joined with strideweave-<pid>-<n>, a "
             "name that does not exist.\n\n"
             "Returns:\n"
             "    pathlib.Path: the path (resolved at construction).\n\n"
             "Examples:\n"
             "    >>> FileBacked().path.is_absolute()\n"
             "    True\n");

PyDoc_STRVAR(file_size_doc,
             "size($self, /)\n--\n\n"
             "The number of elements in the file, read from the file on each "
             "call; 0 after release.\n\n"
             "Returns:\n"
             "    int: the file size divided by the item size.\n\n"
             "Examples:\n"
             "    >>> FileBacked().size()\n"
             "    0\n");

PyDoc_STRVAR(file_dtype_doc, "dtype($self, /)\n--\n\n"
                             "The element type.\n\n"
                             "Returns:\n"
                             "    DType: Floating, Float32 or Int32.\n\n"
                             "Examples:\n"
                             "    >>> FileBacked().dtype()\n"
                             "    <DType.Floating: 'Floating'>\n");

PyDoc_STRVAR(file_get_value_doc,
             "get_value($self, index, /)\n--\n\n"
             "Reads one element from the file.\n\n"
             "Args:\n"
             "    index: the element, 0 <= index < size().\n\n"
             "Returns:\n"
             "    float | int: the value (Float32 values widened to "
             "double).\n\n"
             "Raises:\n"
             "    RuntimeError: 'Carrier is released'.\n"
             "    IndexError: 'Carrier index out of range'.\n"
             "    OSError: the read failed.\n\n"
             "Examples:\n"
             "    >>> f = FileBacked()\n"
             "    >>> f._allocate(1)\n"
             "    >>> f.get_value(0)\n"
             "    0.0\n");

PyDoc_STRVAR(file_set_value_doc,
             "set_value($self, index, value, /)\n--\n\n"
             "Writes one element to the file and bumps the version.\n\n"
             "Args:\n"
             "    index: the element, 0 <= index < size().\n"
             "    value: a number (an integer for Int32).\n\n"
             "Returns:\n"
             "    None.\n\n"
             "Raises:\n"
             "    RuntimeError: 'Carrier is not mutable', 'Carrier is "
             "released'.\n"
             "    IndexError: 'Carrier index out of range'.\n"
             "    TypeError: 'FileBacked value must be a number', 'FileBacked "
             "value must be an integer'.\n"
             "    OverflowError: 'FileBacked value is out of int32 range'.\n"
             "    OSError: the write failed; the element is unchanged.\n\n"
             "Examples:\n"
             "    >>> f = FileBacked(dtype=DType.Float32)\n"
             "    >>> f._allocate(1)\n"
             "    >>> f.set_value(0, 0.1)\n"
             "    >>> f[0], f.version\n"
             "    (0.10000000149011612, 1)\n");

PyDoc_STRVAR(file_new_like_doc,
             "new_like($self, /, values, *, mutable=True, dtype=None)\n--\n\n"
             "A new temporary FileBacked holding values (None entries are "
             "zero; exact FileBacked only).\n\n"
             "Args:\n"
             "    values: an iterable of numbers or None.\n"
             "    mutable: whether the new carrier can be written.\n"
             "    dtype: the element type; None means this carrier's.\n\n"
             "Returns:\n"
             "    FileBacked: the new carrier.\n\n"
             "Raises:\n"
             "    NotImplementedError: 'FileBacked carrier factory only "
             "supports exact FileBacked carriers' on a subclass.\n\n"
             "Examples:\n"
             "    >>> list(FileBacked().new_like([1, None, 2.5]))\n"
             "    [1.0, 0.0, 2.5]\n");

PyDoc_STRVAR(file_allocate_like_doc,
             "allocate_like($self, /, size, *, mutable=True, dtype=None, "
             "empty=False)\n--\n\n"
             "A new temporary FileBacked of size zero elements.\n\n"
             "Args:\n"
             "    size: the element count, >= 0.\n"
             "    mutable: whether the new carrier can be written.\n"
             "    dtype: the element type; None means this carrier's.\n"
             "    empty: ignored (files are zero-filled).\n\n"
             "Returns:\n"
             "    FileBacked: the new carrier.\n\n"
             "Raises:\n"
             "    ValueError: 'FileBacked allocation size must be "
             "non-negative'.\n\n"
             "Examples:\n"
             "    >>> FileBacked().allocate_like(4).size()\n"
             "    4\n");

PyDoc_STRVAR(file_allocate_doc,
             "_allocate($self, size, /)\n--\n\n"
             "Truncates or extends the file to size elements (new ones are "
             "zero).\n\n"
             "Args:\n"
             "    size: the element count, >= 0.\n\n"
             "Returns:\n"
             "    None.\n\n"
             "Raises:\n"
             "    ValueError: 'FileBacked allocation size must be "
             "non-negative'.\n"
             "    RuntimeError: 'Carrier is released'.\n\n"
             "Examples:\n"
             "    >>> f = FileBacked()\n"
             "    >>> f._allocate(2)\n"
             "    >>> f.size()\n"
             "    2\n");

PyDoc_STRVAR(file_scatter_doc,
             "scatter($self, /, to_scatter, scatter_onto, mapping, "
             "mapping_offset=0)\n--\n\n"
             "Not supported: FileBacked carriers are for storage and "
             "movement.\n\n"
             "Args:\n"
             "    to_scatter: ignored.\n"
             "    scatter_onto: ignored.\n"
             "    mapping: ignored.\n"
             "    mapping_offset: ignored.\n\n"
             "Returns:\n"
             "    None: never returns.\n\n"
             "Raises:\n"
             "    NotImplementedError: 'FileBacked carriers do not support "
             "scatter'.\n\n"
             "Examples:\n"
             "    >>> FileBacked().scatter(None, None, None)\n"
             "    Traceback (most recent call last):\n"
             "    ...\n"
             "    NotImplementedError: FileBacked carriers do not support "
             "scatter\n");

/* ------------------------------------------------------------ type spec */

#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
#endif

#define KW(f) ((PyCFunction)(void (*)(void))(f))

static PyMethodDef file_methods[] = {
    {"size", swpy_carrier_size, METH_NOARGS, file_size_doc},
    {"dtype", swpy_carrier_dtype, METH_NOARGS, file_dtype_doc},
    {"get_value", swpy_carrier_get_value, METH_O, file_get_value_doc},
    {"set_value", KW(swpy_carrier_set_value), METH_FASTCALL,
     file_set_value_doc},
    {"new_like", KW(file_new_like), METH_VARARGS | METH_KEYWORDS,
     file_new_like_doc},
    {"allocate_like", KW(file_allocate_like), METH_VARARGS | METH_KEYWORDS,
     file_allocate_like_doc},
    {"_allocate", file_allocate, METH_O, file_allocate_doc},
    {"scatter", KW(file_scatter), METH_VARARGS | METH_KEYWORDS,
     file_scatter_doc},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef file_getset[] = {
    {"path", file_get_path, NULL, file_path_doc, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot file_slots[] = {
    {Py_tp_doc, (void *)file_doc},
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
