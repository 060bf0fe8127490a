/*
 * Tensor representations in Python (py_representation.h): the conversion
 * of CompoundDType, Subtensor and TensorRepresentation values to the
 * library's schemas and representations and back. Every rule is the
 * library's; a value of the wrong kind is a TypeError here.
 */
#include "py_representation.h"

#include <string.h>

#include "errors.h"
#include "py_carrier.h"
#include "py_layout.h"
#include "py_tensor.h"

/* ------------------------------------------------------------ helpers */

/* An attribute of a module of the package (a new reference). */
static PyObject *package_attr(const char *module, const char *name) {
    PyObject *m = PyImport_ImportModule(module);
    if (m == NULL) {
        return NULL;
    }
    PyObject *r = PyObject_GetAttrString(m, name);
    Py_DECREF(m);
    return r;
}

static PyObject *compound_class(void) {
    return package_attr("strideweave.carriers.compound_dtype", "CompoundDType");
}

/* The planes of a sequence of DType members; -1 with TypeError for
 * anything else. *n receives the count, which may exceed cap (the library
 * then reports it); only the first cap are written. */
static int planes_of(swpy_state *st, PyObject *planes, int32_t cap,
                     sw_dtype *out, int32_t *n) {
    PyObject *seq = PySequence_Fast(planes, "CompoundDType simple_types must "
                                            "be a sequence of DType members");
    if (seq == NULL) {
        return -1;
    }
    Py_ssize_t len = PySequence_Fast_GET_SIZE(seq);
    int rc = 0;
    for (Py_ssize_t i = 0; rc == 0 && i < len; i++) {
        sw_dtype d = SW_DTYPE_COUNT;
        int got = swpy_dtype_from_py(st, PySequence_Fast_GET_ITEM(seq, i), &d);
        if (got == 0) {
            PyErr_Format(PyExc_TypeError,
                         "CompoundDType plane %zd must be a DType member", i);
        }
        if (got != 1) {
            rc = -1;
        } else if (i < cap) {
            out[i] = d;
        }
    }
    Py_DECREF(seq);
    *n = len > INT32_MAX ? INT32_MAX : (int32_t)len;
    return rc;
}

/* A new library schema for CompoundDType o (an owned reference). */
static int compound_schema(swpy_state *st, PyObject *name, PyObject *planes,
                           sw_schema **out) {
    if (!PyUnicode_Check(name)) {
        PyErr_Format(PyExc_TypeError,
                     "CompoundDType name must be a str, not '%.200s'",
                     Py_TYPE(name)->tp_name);
        return -1;
    }
    const char *text = PyUnicode_AsUTF8(name);
    sw_dtype p[SW_SCHEMA_MAX_PLANES];
    int32_t n = 0;
    if (text == NULL ||
        planes_of(st, planes, SW_SCHEMA_MAX_PLANES, p, &n) < 0) {
        return -1;
    }
    /* More planes than the library allows: it names the limit. */
    return swpy_check(sw_schema_compound_new(
        text, n > SW_SCHEMA_MAX_PLANES ? SW_SCHEMA_MAX_PLANES + 1 : n, p, out));
}

/* The schema of a logical dtype: a DType (static) or a CompoundDType (new,
 * owned in *owned). */
static int schema_of(swpy_state *st, PyObject *dtype, const sw_schema **out,
                     sw_schema **owned) {
    *owned = NULL;
    sw_dtype d;
    int simple = swpy_dtype_from_py(st, dtype, &d);
    if (simple < 0) {
        return -1;
    }
    if (simple) {
        *out = sw_schema_simple(d);
        return 0;
    }
    PyObject *cls = compound_class();
    int is = cls != NULL ? PyObject_IsInstance(dtype, cls) : -1;
    Py_XDECREF(cls);
    if (is <= 0) {
        if (is == 0) {
            PyErr_Format(PyExc_TypeError,
                         "logical_dtype must be a DType or a CompoundDType, "
                         "not '%.200s'",
                         Py_TYPE(dtype)->tp_name);
        }
        return -1;
    }
    PyObject *name = PyObject_GetAttrString(dtype, "name");
    PyObject *planes =
        name != NULL ? PyObject_GetAttrString(dtype, "simple_types") : NULL;
    int rc = planes != NULL ? compound_schema(st, name, planes, owned) : -1;
    Py_XDECREF(planes);
    Py_XDECREF(name);
    if (rc == 0) {
        *out = *owned;
    }
    return rc;
}

PyObject *swpy_tensor_logical_dtype(swpy_state *st, const sw_tensor *t) {
    const sw_schema *s = sw_tensor_schema(t);
    if (!sw_schema_is_compound(s)) {
        return swpy_dtype_to_py(st, sw_schema_plane(s, 0));
    }
    int32_t n = sw_schema_nplanes(s);
    PyObject *planes = PyTuple_New(n);
    for (int32_t i = 0; planes != NULL && i < n; i++) {
        PyObject *d = swpy_dtype_to_py(st, sw_schema_plane(s, i));
        if (d == NULL) {
            Py_CLEAR(planes);
        } else {
            PyTuple_SET_ITEM(planes, i, d);
        }
    }
    PyObject *cls = planes != NULL ? compound_class() : NULL;
    PyObject *r = cls != NULL ? PyObject_CallFunction(cls, "sO",
                                                      sw_schema_name(s), planes)
                              : NULL;
    Py_XDECREF(cls);
    Py_XDECREF(planes);
    return r;
}

/* --------------------------------------------------- representations */

/* The library form of a TensorRepresentation: parallel arrays and the
 * Python references that keep their values alive. */
typedef struct conv {
    const sw_schema *dtype;
    sw_schema *owned;
    int32_t n, nadj;
    sw_dtype *storage;
    sw_carrier **carriers;
    int64_t *offsets;
    sw_layout **placements;
    sw_layout **adjacent;
    PyObject **held; /* 2 per subtensor (carrier, layout), 1 per adjacent */
    int32_t nheld;
} conv;

static void conv_free(conv *c) {
    for (int32_t i = 0; i < c->nheld; i++) {
        Py_XDECREF(c->held[i]);
    }
    PyMem_Free(c->held);
    PyMem_Free(c->storage);
    PyMem_Free(c->carriers);
    PyMem_Free(c->offsets);
    PyMem_Free(c->placements);
    PyMem_Free(c->adjacent);
    sw_schema_unref(c->owned);
}

/* A Python sequence attribute as a fast sequence (new reference). */
static PyObject *seq_attr(PyObject *o, const char *name) {
    PyObject *v = PyObject_GetAttrString(o, name);
    if (v == NULL) {
        return NULL;
    }
    PyObject *seq = PySequence_Fast(v, "representation fields must be "
                                       "sequences");
    Py_DECREF(v);
    return seq;
}

/* Subtensor i of the representation into c (its attributes are held). */
static int conv_subtensor(swpy_state *st, conv *c, int32_t i, PyObject *sub) {
    PyObject *dtype = PyObject_GetAttrString(sub, "storage_dtype");
    PyObject *carrier = dtype ? PyObject_GetAttrString(sub, "carrier") : NULL;
    PyObject *offset = carrier ? PyObject_GetAttrString(sub, "offset") : NULL;
    PyObject *layout =
        offset ? PyObject_GetAttrString(sub, "placement_layout") : NULL;
    c->held[c->nheld++] = carrier;
    c->held[c->nheld++] = layout;
    int rc = layout != NULL ? 0 : -1;
    sw_dtype d = SW_DTYPE_COUNT;
    int got = rc == 0 ? swpy_dtype_from_py(st, dtype, &d) : -1;
    if (got == 0) {
        PyErr_Format(PyExc_TypeError,
                     "subtensor %d storage_dtype must be a DType, not "
                     "'%.200s'",
                     (int)i, Py_TYPE(dtype)->tp_name);
    }
    rc = got == 1 ? 0 : -1;
    if (rc == 0 && !swpy_is_carrier(st, carrier)) {
        PyErr_Format(PyExc_TypeError,
                     "subtensor %d carrier must be a Carrier, not '%.200s'",
                     (int)i, Py_TYPE(carrier)->tp_name);
        rc = -1;
    }
    sw_carrier *cc = NULL;
    if (rc == 0) {
        const char *name = Py_TYPE(carrier)->tp_name;
        const char *dot = strrchr(name, '.');
        cc = swpy_carrier_of(carrier, dot != NULL ? dot + 1 : name);
        rc = cc != NULL ? 0 : -1;
    }
    int64_t off = 0;
    if (rc == 0 && (PyFloat_Check(offset) || !PyIndex_Check(offset))) {
        /* The rule is an integer at or above 0; the library checks the
         * sign. */
        PyErr_Format(PyExc_ValueError,
                     "subtensor %d offset must be non-negative: an integer, "
                     "not '%.200s'",
                     (int)i, Py_TYPE(offset)->tp_name);
        rc = -1;
    }
    if (rc == 0) {
        rc = swpy_index_arg(offset, &off);
    }
    if (rc == 0 && !swpy_is_layout(st, layout)) {
        PyErr_Format(PyExc_TypeError,
                     "subtensor %d placement_layout must be a Layout, not "
                     "'%.200s'",
                     (int)i, Py_TYPE(layout)->tp_name);
        rc = -1;
    }
    if (rc == 0) {
        c->storage[i] = d;
        c->carriers[i] = cc;
        c->offsets[i] = off;
        c->placements[i] = swpy_layout_get(layout);
    }
    Py_XDECREF(dtype);
    Py_XDECREF(offset);
    return rc;
}

static int conv_make(swpy_state *st, PyObject *rep, conv *c) {
    memset(c, 0, sizeof *c);
    PyObject *dtype = PyObject_GetAttrString(rep, "logical_dtype");
    PyObject *subs = dtype ? seq_attr(rep, "subtensors") : NULL;
    PyObject *adj = subs ? seq_attr(rep, "adjacent_layouts") : NULL;
    int rc = adj != NULL ? schema_of(st, dtype, &c->dtype, &c->owned) : -1;
    Py_ssize_t n = rc == 0 ? PySequence_Fast_GET_SIZE(subs) : 0;
    Py_ssize_t na = rc == 0 ? PySequence_Fast_GET_SIZE(adj) : 0;
    if (rc == 0 && (n > INT32_MAX / 4 || na > INT32_MAX / 4)) {
        PyErr_SetString(PyExc_ValueError, "too many subtensors");
        rc = -1;
    }
    if (rc == 0) {
        size_t k = (size_t)n + 1, ka = (size_t)na + 1;
        c->storage = PyMem_Calloc(k, sizeof *c->storage);
        c->carriers = PyMem_Calloc(k, sizeof *c->carriers);
        c->offsets = PyMem_Calloc(k, sizeof *c->offsets);
        c->placements = PyMem_Calloc(k, sizeof *c->placements);
        c->adjacent = PyMem_Calloc(ka, sizeof *c->adjacent);
        c->held = PyMem_Calloc(2 * k + ka, sizeof *c->held);
        if (!c->storage || !c->carriers || !c->offsets || !c->placements ||
            !c->adjacent || !c->held) {
            PyErr_NoMemory();
            rc = -1;
        }
    }
    c->n = (int32_t)n;
    c->nadj = (int32_t)na;
    for (Py_ssize_t i = 0; rc == 0 && i < n; i++) {
        rc = conv_subtensor(st, c, (int32_t)i,
                            PySequence_Fast_GET_ITEM(subs, i));
    }
    for (Py_ssize_t i = 0; rc == 0 && i < na; i++) {
        PyObject *l = PySequence_Fast_GET_ITEM(adj, i);
        if (!swpy_is_layout(st, l)) {
            PyErr_Format(PyExc_TypeError,
                         "adjacent layout %zd must be a Layout, not '%.200s'",
                         i, Py_TYPE(l)->tp_name);
            rc = -1;
        } else {
            c->held[c->nheld++] = Py_NewRef(l);
            c->adjacent[i] = swpy_layout_get(l);
        }
    }
    Py_XDECREF(adj);
    Py_XDECREF(subs);
    Py_XDECREF(dtype);
    return rc;
}

int swpy_representation_build(swpy_state *st, PyObject *rep, sw_tensor **out,
                              PyObject **carrier, PyObject **layout) {
    conv c;
    int rc = conv_make(st, rep, &c);
    if (rc == 0 && c.n == 0) {
        /* The library reports the count against the schema. */
        rc = swpy_check(sw_representation_check(
            c.dtype, 0, c.storage, c.carriers, c.offsets, c.placements, c.nadj,
            c.adjacent));
        if (rc == 0) {
            PyErr_SetString(PyExc_ValueError,
                            "a representation needs a subtensor");
            rc = -1;
        }
    }
    sw_tensor *t = NULL;
    if (rc == 0) {
        /* Carrier sizes may be Python hooks. */
        sw_status s =
            sw_tensor_new_multi(c.dtype, c.n, c.storage, c.carriers, c.offsets,
                                c.placements, c.nadj, c.adjacent, &t);
        rc = swpy_check(s);
        if (rc < 0 && s == SW_OK) {
            sw_tensor_unref(t);
            t = NULL;
        }
    }
    if (rc == 0) {
        *out = t;
        *carrier = Py_NewRef(c.held[0]);
        *layout = Py_NewRef(c.held[1]);
    }
    conv_free(&c);
    return rc;
}

/* _representation_check(rep): the library's validation alone. */
static PyObject *representation_check(PyObject *module, PyObject *rep) {
    swpy_state *st = swpy_module_state(module);
    sw_tensor *t = NULL;
    PyObject *carrier = NULL, *layout = NULL;
    if (swpy_representation_build(st, rep, &t, &carrier, &layout) < 0) {
        return NULL;
    }
    sw_tensor_unref(t);
    Py_DECREF(carrier);
    Py_DECREF(layout);
    Py_RETURN_NONE;
}

/* _compound_check(name, simple_types): the library's rules of a
 * CompoundDType. */
static PyObject *compound_check(PyObject *module, PyObject *const *args,
                                Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError,
                        "_compound_check(name, simple_types) takes two "
                        "arguments");
        return NULL;
    }
    sw_schema *s = NULL;
    if (compound_schema(swpy_module_state(module), args[0], args[1], &s) < 0) {
        return NULL;
    }
    sw_schema_unref(s);
    Py_RETURN_NONE;
}

/* ------------------------------------------------- tensor accessors */

/* The Python objects of subtensor i: the tensor's own for subtensor 0. */
static int subtensor_objects(swpy_state *st, PyObject *self, int32_t i,
                             PyObject **carrier, PyObject **layout,
                             int64_t *offset, sw_dtype *dtype) {
    sw_tensor *t = ((TensorObject *)self)->tensor;
    sw_carrier *c = NULL;
    sw_layout *l = NULL;
    if (swpy_check(sw_tensor_subtensor(t, i, &c, offset, &l)) < 0) {
        return -1;
    }
    *dtype = sw_carrier_dtype(c);
    if (i == 0) {
        *carrier = Py_XNewRef(swpy_tensor_carrier(self));
        *layout = *carrier ? Py_XNewRef(swpy_tensor_layout(self)) : NULL;
    } else {
        *carrier = swpy_carrier_wrap(st, sw_carrier_retain(c));
        *layout = *carrier ? swpy_layout_wrap(st, sw_layout_retain(l)) : NULL;
    }
    if (*layout == NULL) {
        Py_CLEAR(*carrier);
        return -1;
    }
    return PyErr_Occurred() ? -1 : 0;
}

PyObject *swpy_tensor_representation(PyObject *self, void *closure) {
    (void)closure;
    sw_tensor *t = swpy_tensor_of(self);
    swpy_state *st = t != NULL ? swpy_state_of_type(Py_TYPE(self)) : NULL;
    if (st == NULL) {
        return NULL;
    }
    PyObject *sub_cls =
        package_attr("strideweave.core._representation", "Subtensor");
    PyObject *rep_cls = sub_cls
                            ? package_attr("strideweave.core._representation",
                                           "TensorRepresentation")
                            : NULL;
    int32_t n = sw_tensor_nsubtensors(t);
    PyObject *subs = rep_cls ? PyTuple_New(n) : NULL;
    PyObject *adj = subs ? PyTuple_New(n - 1) : NULL;
    PyObject *logical = adj ? swpy_tensor_logical_dtype(st, t) : NULL;
    int rc = logical != NULL ? 0 : -1;
    for (int32_t i = 0; rc == 0 && i < n; i++) {
        PyObject *carrier = NULL, *layout = NULL;
        int64_t offset = 0;
        sw_dtype d = SW_DTYPE_COUNT;
        rc = subtensor_objects(st, self, i, &carrier, &layout, &offset, &d);
        PyObject *dt = rc == 0 ? swpy_dtype_to_py(st, d) : NULL;
        PyObject *off = dt ? PyLong_FromLongLong(offset) : NULL;
        PyObject *sub = off ? PyObject_CallFunctionObjArgs(sub_cls, dt, carrier,
                                                           off, layout, NULL)
                            : NULL;
        Py_XDECREF(dt);
        Py_XDECREF(off);
        Py_XDECREF(carrier);
        Py_XDECREF(layout);
        if (sub == NULL) {
            rc = -1;
        } else {
            PyTuple_SET_ITEM(subs, i, sub);
        }
    }
    for (int32_t i = 0; rc == 0 && i < n - 1; i++) {
        sw_layout *l = NULL;
        PyObject *o = NULL;
        if (swpy_check(sw_tensor_adjacent_layout(t, i, &l)) == 0) {
            o = swpy_layout_wrap(st, sw_layout_retain(l));
        }
        if (o == NULL) {
            rc = -1;
        } else {
            PyTuple_SET_ITEM(adj, i, o);
        }
    }
    PyObject *r = rc == 0 ? PyObject_CallFunctionObjArgs(rep_cls, logical, subs,
                                                         adj, NULL)
                          : NULL;
    Py_XDECREF(logical);
    Py_XDECREF(adj);
    Py_XDECREF(subs);
    Py_XDECREF(rep_cls);
    Py_XDECREF(sub_cls);
    return r;
}

PyObject *swpy_tensor_version_token(PyObject *self, PyObject *unused) {
    (void)unused;
    sw_tensor *t = swpy_tensor_of(self);
    swpy_state *st = t != NULL ? swpy_state_of_type(Py_TYPE(self)) : NULL;
    if (st == NULL) {
        return NULL;
    }
    sw_carrier *cs[SW_SCHEMA_MAX_PLANES];
    int64_t vs[SW_SCHEMA_MAX_PLANES];
    int32_t n = sw_tensor_version_token(t, SW_SCHEMA_MAX_PLANES, cs, vs);
    PyObject *token = PyTuple_New(n);
    for (int32_t k = 0; token != NULL && k < n; k++) {
        PyObject *obj = cs[k] == sw_tensor_carrier(t)
                            ? Py_XNewRef(swpy_tensor_carrier(self))
                            : swpy_carrier_wrap(st, sw_carrier_retain(cs[k]));
        PyObject *pair = obj != NULL
                             ? Py_BuildValue("(NL)", PyLong_FromVoidPtr(obj),
                                             (long long)vs[k])
                             : NULL;
        /* The carrier's object outlives this call: the tensor holds the
         * carrier, which keeps its peer. */
        Py_XDECREF(obj);
        if (pair == NULL) {
            Py_CLEAR(token);
        } else {
            PyTuple_SET_ITEM(token, k, pair);
        }
    }
    return token;
}

PyObject *swpy_tensor_share(swpy_state *st, const sw_tensor *t) {
    int32_t n = sw_tensor_nsubtensors(t);
    sw_dtype storage[SW_SCHEMA_MAX_PLANES];
    sw_carrier *carriers[SW_SCHEMA_MAX_PLANES];
    int64_t offsets[SW_SCHEMA_MAX_PLANES];
    sw_layout *placements[SW_SCHEMA_MAX_PLANES];
    sw_layout *adjacent[SW_SCHEMA_MAX_PLANES];
    for (int32_t i = 0; i < n; i++) {
        (void)sw_tensor_subtensor(t, i, &carriers[i], &offsets[i],
                                  &placements[i]);
        storage[i] = sw_carrier_dtype(carriers[i]);
        if (i + 1 < n) {
            (void)sw_tensor_adjacent_layout(t, i, &adjacent[i]);
        }
    }
    sw_tensor *r = NULL;
    sw_status s = sw_tensor_new_multi(sw_tensor_schema(t), n, storage, carriers,
                                      offsets, placements, n - 1, adjacent, &r);
    if (swpy_check(s) < 0) {
        sw_tensor_unref(s == SW_OK ? r : NULL);
        return NULL;
    }
    return swpy_tensor_wrap(st, r);
}

/* _require_one_subtensor(tensor): the library's gate for an operation
 * whose binding runs in Python (operation definitions). */
static PyObject *require_one_subtensor(PyObject *module, PyObject *tensor) {
    swpy_state *st = swpy_module_state(module);
    if (!swpy_is_tensor(st, tensor)) {
        PyErr_SetString(PyExc_TypeError, "tensor must be a Tensor");
        return NULL;
    }
    sw_tensor *t = swpy_tensor_of(tensor);
    if (t == NULL ||
        swpy_check(sw_tensor_require_single(t, SW_ENTRY_OPERATION)) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------- module */

#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
#endif

static PyMethodDef representation_methods[] = {
    {"_compound_check", (PyCFunction)(void (*)(void))compound_check,
     METH_FASTCALL, NULL},
    {"_representation_check", representation_check, METH_O, NULL},
    {"_require_one_subtensor", require_one_subtensor, METH_O, NULL},
    {NULL, NULL, 0, NULL},
};

#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

int swpy_representation_init(PyObject *module, swpy_state *st) {
    (void)st;
    return PyModule_AddFunctions(module, representation_methods);
}
