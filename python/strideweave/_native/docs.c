/*
 * Docstrings, attached at import from strideweave/_native_docs.py.
 *
 * The C sources keep the code; the prose lives in one Python file (DOCS:
 * path -> text), as NumPy keeps its add_newdocs. A path names the module
 * (""), a module function or type ("name"), or a member of a type
 * ("Type.member": a method, class method, static method, property or
 * member). Texts are in CPython's internal form, "name(signature)\n--\n\n"
 * first where the object has a signature, so __text_signature__ and
 * inspect.signature read them as they would a PyDoc_STRVAR.
 *
 * Method, property and member docs live in the static PyMethodDef,
 * PyGetSetDef and PyMemberDef tables that every module instance shares
 * (one per interpreter), so their texts are copied once into memory that
 * lives as long as the process, under one process-wide lock; a later
 * module instance finds them set and checks that they agree. A type's doc
 * belongs to the type object (a heap type frees tp_doc with the type).
 */
#include "docs.h"

#if PY_VERSION_HEX < 0x030C0000
#include <structmember.h> /* PyMemberDef moved into Python.h in 3.12 */
#endif

#include <pthread.h>
#include <string.h>

static pthread_mutex_t docs_lock = PTHREAD_MUTEX_INITIALIZER;

/* The slot an object's doc lives in, or NULL for an object of another kind. */
static const char **doc_slot(PyObject *o) {
    if (PyCFunction_Check(o)) {
        return &((PyCFunctionObject *)o)->m_ml->ml_doc;
    }
    if (PyObject_TypeCheck(o, &PyMethodDescr_Type) ||
        PyObject_TypeCheck(o, &PyClassMethodDescr_Type)) {
        return &((PyMethodDescrObject *)o)->d_method->ml_doc;
    }
    if (PyObject_TypeCheck(o, &PyGetSetDescr_Type)) {
        return &((PyGetSetDescrObject *)o)->d_getset->doc;
    }
    if (PyObject_TypeCheck(o, &PyMemberDescr_Type)) {
        return (const char **)&((PyMemberDescrObject *)o)->d_member->doc;
    }
    return NULL;
}

/* Sets a shared table's doc once; a second module instance must agree. */
static int set_shared(const char **slot, const char *text, PyObject *path) {
    int rc = 0;
    pthread_mutex_lock(&docs_lock);
    if (*slot == NULL) {
        size_t n = strlen(text) + 1;
        char *copy = PyMem_RawMalloc(n);
        if (copy == NULL) {
            PyErr_NoMemory();
            rc = -1;
        } else {
            memcpy(copy, text, n);
            *slot = copy;
        }
    } else if (strcmp(*slot, text) != 0) {
        PyErr_Format(PyExc_RuntimeError, "docstring of %R is defined twice",
                     path);
        rc = -1;
    }
    pthread_mutex_unlock(&docs_lock);
    return rc;
}

/*
 * A heap type's doc: tp_doc (where __text_signature__ is read) and the
 * __doc__ entry of its dict without the signature, as PyType_FromSpec
 * would have made them.
 */
static int set_type_doc(PyTypeObject *type, const char *text) {
    size_t n = strlen(text) + 1;
    char *copy = PyObject_Malloc(n);
    if (copy == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    memcpy(copy, text, n);
    const char *body = text;
    const char *dot = strrchr(type->tp_name, '.');
    const char *name = dot != NULL ? dot + 1 : type->tp_name;
    size_t len = strlen(name);
    const char *end = strstr(text, ")\n--\n\n");
    if (strncmp(text, name, len) == 0 && text[len] == '(' && end != NULL) {
        body = end + 6;
    }
    PyObject *doc = PyUnicode_FromString(body);
    if (doc == NULL ||
        PyDict_SetItemString(type->tp_dict, "__doc__", doc) < 0) {
        Py_XDECREF(doc);
        PyObject_Free(copy);
        return -1;
    }
    Py_DECREF(doc);
    PyObject_Free((void *)type->tp_doc);
    type->tp_doc = copy;
    PyType_Modified(type);
    return 0;
}

/* The object a path names: a module attribute, then a type's own entry. */
static PyObject *target_of(PyObject *module, PyObject *path) {
    Py_ssize_t dot =
        PyUnicode_FindChar(path, '.', 0, PyUnicode_GetLength(path), 1);
    if (dot == -2) {
        return NULL;
    }
    PyObject *head =
        dot < 0 ? Py_NewRef(path) : PyUnicode_Substring(path, 0, dot);
    if (head == NULL) {
        return NULL;
    }
    PyObject *o = PyObject_GetAttr(module, head);
    Py_DECREF(head);
    if (o == NULL || dot < 0) {
        return o;
    }
    PyObject *member =
        PyUnicode_Substring(path, dot + 1, PyUnicode_GetLength(path));
    PyObject *entry = NULL;
    if (member != NULL && PyType_Check(o)) {
        entry = PyDict_GetItemWithError(((PyTypeObject *)o)->tp_dict, member);
        Py_XINCREF(entry);
    }
    if (entry != NULL && PyObject_TypeCheck(entry, &PyStaticMethod_Type)) {
        Py_SETREF(entry, PyObject_GetAttrString(entry, "__func__"));
    }
    if (entry == NULL && !PyErr_Occurred()) {
        PyErr_Format(PyExc_RuntimeError, "no object for the docstring %R",
                     path);
    }
    Py_XDECREF(member);
    Py_DECREF(o);
    return entry;
}

static int apply_one(PyObject *module, PyObject *path, PyObject *text) {
    const char *utf8 = PyUnicode_Check(text) ? PyUnicode_AsUTF8(text) : NULL;
    if (utf8 == NULL) {
        if (!PyErr_Occurred()) {
            PyErr_Format(PyExc_TypeError, "docstring of %R is not a str", path);
        }
        return -1;
    }
    if (PyUnicode_GetLength(path) == 0) {
        return PyObject_SetAttrString(module, "__doc__", text);
    }
    PyObject *o = target_of(module, path);
    if (o == NULL) {
        return -1;
    }
    int rc;
    const char **slot;
    if (PyType_Check(o) &&
        PyType_HasFeature((PyTypeObject *)o, Py_TPFLAGS_HEAPTYPE)) {
        rc = set_type_doc((PyTypeObject *)o, utf8);
    } else if ((slot = doc_slot(o)) != NULL) {
        rc = set_shared(slot, utf8, path);
    } else {
        PyErr_Format(PyExc_RuntimeError,
                     "docstring %R names a %s, which holds no doc", path,
                     Py_TYPE(o)->tp_name);
        rc = -1;
    }
    Py_DECREF(o);
    return rc;
}

int swpy_docs_apply(PyObject *module) {
    PyObject *docs_module = PyImport_ImportModule("strideweave._native_docs");
    if (docs_module == NULL) {
        return -1;
    }
    PyObject *docs = PyObject_GetAttrString(docs_module, "DOCS");
    Py_DECREF(docs_module);
    if (docs == NULL) {
        return -1;
    }
    int rc = 0;
    if (!PyDict_Check(docs)) {
        PyErr_SetString(PyExc_TypeError, "_native_docs.DOCS is not a dict");
        rc = -1;
    }
    Py_ssize_t pos = 0;
    PyObject *path, *text;
    while (rc == 0 && PyDict_Next(docs, &pos, &path, &text)) {
        if (!PyUnicode_Check(path)) {
            PyErr_SetString(PyExc_TypeError, "a docstring path is not a str");
            rc = -1;
        } else {
            rc = apply_one(module, path, text);
        }
    }
    Py_DECREF(docs);
    return rc;
}
