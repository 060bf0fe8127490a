/*
 * strideweave.einops: a thin binding of the library's layout command
 * strings (include/strideweave/einops.h). See einops.h for the scheme.
 */
#include "py_einops.h"

#include "errors.h"
#include "functional.h"
#include "py_layout.h"
#include "operation.h"
#include "py_tensor.h"

#include "strideweave/einops.h"

/* The registered classes, indexed like swpy_state.einops_classes. */
enum {
    CLS_TOKEN = 0,
    CLS_LAYOUT_REFERENCE = 1,
    CLS_REARRANGE = 2,
    CLS_REDUCE = 3,
    CLS_EINSUM = 4
};

/* The cached command kinds, indexed like swpy_state.einops_cache. */
enum { CACHE_REARRANGE = 0, CACHE_REDUCE = 1, CACHE_EINSUM = 2 };

static const sw_einops_kind cache_kinds[SWPY_EINOPS_CACHES] = {
    SW_EINOPS_REARRANGE, SW_EINOPS_REDUCE, SW_EINOPS_EINSUM};

/*
 * The entry tuple of a compiled command: the spec object, a capsule owning
 * the library spec, then the trees the tensor-level command passes on.
 */
enum {
    E_SPEC = 0,
    E_CAPSULE = 1,
    /* rearrange: output, selection; reduce: rearrange_output, selection */
    E_OUTPUT = 2,
    E_SELECTION = 3,
    /* einsum */
    E_LHS_SELECTION = 2,
    E_RHS_SELECTION = 3,
    E_LHS_REARRANGE = 4,
    E_RHS_REARRANGE = 5,
    E_MATMUL_SELECTION = 6,
    E_EINSUM_OUTPUT = 7,
    E_EINSUM_SIZE = 8
};

#define CAPSULE_NAME "strideweave.einops.spec"

static const char *const class_names[SWPY_EINOPS_CLASSES] = {
    "Token", "LayoutReference", "RearrangeSpec", "ReduceSpec", "EinsumSpec"};

/* Makes sure strideweave.einops registered its classes. */
static int require_classes(swpy_state *st) {
    if (st->einops_classes[CLS_EINSUM] != NULL) {
        return 0;
    }
    PyObject *mod = PyImport_ImportModule("strideweave.einops");
    if (mod == NULL) {
        return -1;
    }
    Py_DECREF(mod);
    if (st->einops_classes[CLS_EINSUM] == NULL) {
        PyErr_SetString(PyExc_RuntimeError,
                        "strideweave.einops did not register its classes "
                        "with strideweave._native");
        return -1;
    }
    return 0;
}

/* --------------------------------------------------------- conversions */

static PyObject *tree_of(swpy_state *st, const sw_einops_spec *spec,
                         sw_einops_field field) {
    int32_t n = -1;
    const int32_t *rec = sw_einops_spec_recipe(spec, field, &n);
    if (n < 0) {
        PyErr_SetString(PyExc_RuntimeError, "spec field is missing");
        return NULL;
    }
    return swpy_idtree_to_tree(st, rec, n);
}

/* ((name, id), ...) of one side. */
static PyObject *symbol_ids(const sw_einops_spec *spec, int side) {
    int32_t n = sw_einops_spec_nsymbols(spec, side);
    PyObject *t = PyTuple_New(n);
    for (int32_t i = 0; t != NULL && i < n; i++) {
        int32_t id = 0;
        const char *name = sw_einops_spec_symbol(spec, side, i, &id);
        PyObject *pair = Py_BuildValue("(si)", name, (int)id);
        if (pair == NULL) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, i, pair);
    }
    return t;
}

/* A tuple of the names got(spec, i) for i < n. */
static PyObject *names_of(const sw_einops_spec *spec, int32_t n,
                          const char *(*got)(const sw_einops_spec *, int32_t)) {
    PyObject *t = PyTuple_New(n);
    for (int32_t i = 0; t != NULL && i < n; i++) {
        PyObject *s = PyUnicode_FromString(got(spec, i));
        if (s == NULL) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, i, s);
    }
    return t;
}

static void capsule_free(PyObject *capsule) {
    sw_einops_spec_unref(PyCapsule_GetPointer(capsule, CAPSULE_NAME));
}

/* Calls cls(*args) and releases the n arguments (any may be NULL, which
 * means a failure happened while making them). */
static PyObject *call_class(PyObject *cls, PyObject **args, int n) {
    PyObject *r = NULL;
    int complete = 1;
    for (int i = 0; i < n; i++) {
        complete = complete && args[i] != NULL;
    }
    if (complete) {
        r = PyObject_Vectorcall(cls, args, (size_t)n, NULL);
    }
    for (int i = 0; i < n; i++) {
        Py_XDECREF(args[i]);
    }
    return r;
}

/*
 * The entry tuple of a compiled spec (an owned reference, consumed: the
 * entry's capsule owns it from here, or it is released on failure).
 */
static PyObject *entry_new(swpy_state *st, int k, sw_einops_spec *spec) {
    PyObject *capsule = PyCapsule_New(spec, CAPSULE_NAME, capsule_free);
    if (capsule == NULL) {
        sw_einops_spec_unref(spec);
        return NULL;
    }
    PyObject *obj = NULL, *entry = NULL;
    if (k == CACHE_REARRANGE) {
        PyObject *a[3] = {tree_of(st, spec, SW_EINOPS_SELECTION),
                          tree_of(st, spec, SW_EINOPS_OUTPUT),
                          symbol_ids(spec, 0)};
        obj = call_class(st->einops_classes[CLS_REARRANGE], a, 3);
        if (obj != NULL) {
            PyObject *out = PyObject_GetAttrString(obj, "output");
            PyObject *sel = PyObject_GetAttrString(obj, "selection");
            if (out != NULL && sel != NULL) {
                entry = PyTuple_Pack(4, obj, capsule, out, sel);
            }
            Py_XDECREF(out);
            Py_XDECREF(sel);
        }
    } else if (k == CACHE_REDUCE) {
        PyObject *a[5] = {tree_of(st, spec, SW_EINOPS_SELECTION),
                          tree_of(st, spec, SW_EINOPS_OUTPUT),
                          tree_of(st, spec, SW_EINOPS_REDUCED),
                          tree_of(st, spec, SW_EINOPS_REARRANGE_OUTPUT),
                          symbol_ids(spec, 0)};
        obj = call_class(st->einops_classes[CLS_REDUCE], a, 5);
        if (obj != NULL) {
            PyObject *ro = PyObject_GetAttrString(obj, "rearrange_output");
            PyObject *sel = PyObject_GetAttrString(obj, "selection");
            if (ro != NULL && sel != NULL) {
                entry = PyTuple_Pack(4, obj, capsule, ro, sel);
            }
            Py_XDECREF(ro);
            Py_XDECREF(sel);
        }
    } else {
        static const sw_einops_field fields[6] = {
            SW_EINOPS_LHS_SELECTION,           SW_EINOPS_RHS_SELECTION,
            SW_EINOPS_LHS_REARRANGE_OUTPUT,    SW_EINOPS_RHS_REARRANGE_OUTPUT,
            SW_EINOPS_MATMUL_OUTPUT_SELECTION, SW_EINOPS_OUTPUT};
        PyObject *a[10];
        for (int i = 0; i < 6; i++) {
            a[i] = tree_of(st, spec, fields[i]);
        }
        a[6] = symbol_ids(spec, 0);
        a[7] = symbol_ids(spec, 1);
        a[8] =
            names_of(spec, sw_einops_spec_ncommon(spec), sw_einops_spec_common);
        a[9] =
            names_of(spec, sw_einops_spec_nbatch(spec), sw_einops_spec_batch);
        /* The entry keeps the trees too; call_class releases its args. */
        entry = PyTuple_New(E_EINSUM_SIZE);
        if (entry != NULL) {
            for (int i = 0; i < 6; i++) {
                PyTuple_SET_ITEM(entry, E_LHS_SELECTION + i, Py_XNewRef(a[i]));
            }
        }
        obj = call_class(st->einops_classes[CLS_EINSUM], a, 10);
        if (obj != NULL && entry != NULL) {
            PyTuple_SET_ITEM(entry, E_SPEC, Py_NewRef(obj));
            PyTuple_SET_ITEM(entry, E_CAPSULE, Py_NewRef(capsule));
        } else {
            Py_CLEAR(entry);
        }
    }
    Py_XDECREF(obj);
    Py_DECREF(capsule);
    return entry;
}

/*
 * The entry of command for cache k (a new reference): from the dict, else
 * compiled through the library's cache and stored. command must be a str.
 */
static PyObject *entry_of(swpy_state *st, int k, PyObject *command) {
    PyObject *cache = st->einops_cache[k];
    PyObject *e = PyDict_GetItemWithError(cache, command);
    if (e != NULL) {
        return Py_NewRef(e);
    }
    if (PyErr_Occurred() || require_classes(st) < 0) {
        return NULL;
    }
    Py_ssize_t len = 0;
    const char *text = PyUnicode_AsUTF8AndSize(command, &len);
    if (text == NULL) {
        return NULL;
    }
    sw_einops_spec *spec = NULL;
    sw_status s = sw_einops_compile(cache_kinds[k], text, (int64_t)len, &spec);
    if (swpy_check(s) < 0) {
        return NULL;
    }
    e = entry_new(st, k, spec);
    if (e == NULL) {
        return NULL;
    }
    /* Making the entry ran Python code (the dataclasses' __init__), so
     * another thread may have stored the command meanwhile: the first
     * entry wins, so that every caller sees one spec object. */
    PyObject *first = PyDict_GetItemWithError(cache, command);
    if (first != NULL || PyErr_Occurred()) {
        Py_DECREF(e);
        return Py_XNewRef(first);
    }
    /* Bounded like the library's cache: the oldest entries go first. */
    int64_t cap = sw_einops_cache_capacity();
    while ((int64_t)PyDict_GET_SIZE(cache) >= cap) {
        Py_ssize_t pos = 0;
        PyObject *key = NULL, *value = NULL;
        if (!PyDict_Next(cache, &pos, &key, &value)) {
            break;
        }
        Py_INCREF(key);
        int rc = PyDict_DelItem(cache, key);
        Py_DECREF(key);
        if (rc < 0) {
            Py_DECREF(e);
            return NULL;
        }
    }
    if (PyDict_SetItem(cache, command, e) < 0) {
        Py_DECREF(e);
        return NULL;
    }
    return e;
}

static const sw_einops_spec *spec_of_entry(PyObject *entry) {
    return PyCapsule_GetPointer(PyTuple_GET_ITEM(entry, E_CAPSULE),
                                CAPSULE_NAME);
}

/* ------------------------------------------------------- tensor level */

static int check_description(PyObject *description) {
    if (!PyUnicode_Check(description)) {
        PyErr_SetString(PyExc_TypeError, "description must be a str");
        return -1;
    }
    return 0;
}

static int check_tensor(swpy_state *st, PyObject *o, const char *name) {
    if (!swpy_is_tensor(st, o)) {
        PyErr_Format(PyExc_TypeError, "%s must be a Tensor", name);
        return -1;
    }
    return 0;
}

/* A dispatched "rearrange" view of t by (output, selection). */
static PyObject *rearrange_by(swpy_state *st, PyObject *t, PyObject *output,
                              PyObject *selection) {
    PyObject *args[3] = {t, output, selection};
    return swpy_op_call(st, t, SW_OP_REARRANGE, args, 3);
}

PyObject *swpy_einops_rearrange(swpy_state *st, PyObject *tensor,
                                PyObject *description) {
    if (check_description(description) < 0) {
        return NULL;
    }
    PyObject *e = entry_of(st, CACHE_REARRANGE, description);
    if (e == NULL) {
        return NULL;
    }
    PyObject *r = NULL;
    if (check_tensor(st, tensor, "tensor") == 0) {
        r = rearrange_by(st, tensor, PyTuple_GET_ITEM(e, E_OUTPUT),
                         PyTuple_GET_ITEM(e, E_SELECTION));
    }
    Py_DECREF(e);
    return r;
}

PyObject *swpy_einops_reduce(swpy_state *st, PyObject *tensor,
                             PyObject *description) {
    if (check_description(description) < 0) {
        return NULL;
    }
    PyObject *e = entry_of(st, CACHE_REDUCE, description);
    if (e == NULL) {
        return NULL;
    }
    PyObject *r = NULL;
    if (check_tensor(st, tensor, "tensor") == 0) {
        PyObject *mid = rearrange_by(st, tensor, PyTuple_GET_ITEM(e, E_OUTPUT),
                                     PyTuple_GET_ITEM(e, E_SELECTION));
        if (mid != NULL) {
            r = swpy_op_call(st, mid, SW_OP_REDUCE, &mid, 1);
            Py_DECREF(mid);
        }
    }
    Py_DECREF(e);
    return r;
}

PyObject *swpy_einops_einsum(swpy_state *st, PyObject *lhs, PyObject *rhs,
                             PyObject *description) {
    if (check_description(description) < 0) {
        return NULL;
    }
    PyObject *e = entry_of(st, CACHE_EINSUM, description);
    if (e == NULL) {
        return NULL;
    }
    PyObject *a = NULL, *b = NULL, *p = NULL, *r = NULL;
    sw_tensor *lt = NULL, *rt = NULL;
    if (check_tensor(st, lhs, "lhs") < 0 || check_tensor(st, rhs, "rhs") < 0 ||
        (lt = swpy_tensor_of(lhs)) == NULL ||
        (rt = swpy_tensor_of(rhs)) == NULL) {
        goto done;
    }
    const sw_einops_spec *spec = spec_of_entry(e);
    if (spec == NULL ||
        swpy_check(sw_einops_einsum_check(spec, sw_tensor_layout(lt),
                                          sw_tensor_layout(rt))) < 0) {
        goto done;
    }
    a = rearrange_by(st, lhs, PyTuple_GET_ITEM(e, E_LHS_REARRANGE),
                     PyTuple_GET_ITEM(e, E_LHS_SELECTION));
    if (a == NULL) {
        goto done;
    }
    b = rearrange_by(st, rhs, PyTuple_GET_ITEM(e, E_RHS_REARRANGE),
                     PyTuple_GET_ITEM(e, E_RHS_SELECTION));
    if (b == NULL) {
        goto done;
    }
    p = swpy_fn_binary(st,
                       sw_einops_spec_nbatch(spec) > 0 ? SW_OP_BATCHED_MATMUL
                                                       : SW_OP_MATMUL,
                       a, b);
    if (p == NULL) {
        goto done;
    }
    r = rearrange_by(st, p, PyTuple_GET_ITEM(e, E_EINSUM_OUTPUT),
                     PyTuple_GET_ITEM(e, E_MATMUL_SELECTION));
done:
    Py_XDECREF(a);
    Py_XDECREF(b);
    Py_XDECREF(p);
    Py_DECREF(e);
    return r;
}

/* ------------------------------------------------------------ functions */

static int check_command(PyObject *command) {
    if (!PyUnicode_Check(command)) {
        PyErr_SetString(PyExc_TypeError, "command must be a str");
        return -1;
    }
    return 0;
}

static PyObject *einops_register(PyObject *module, PyObject *const *args,
                                 Py_ssize_t nargs) {
    swpy_state *st = swpy_module_state(module);
    if (nargs != SWPY_EINOPS_CLASSES) {
        PyErr_Format(PyExc_TypeError,
                     "_einops_register expected %d arguments, got %zd",
                     SWPY_EINOPS_CLASSES, nargs);
        return NULL;
    }
    for (int i = 0; i < SWPY_EINOPS_CLASSES; i++) {
        if (!PyType_Check(args[i])) {
            PyErr_Format(PyExc_TypeError, "%s must be a class", class_names[i]);
            return NULL;
        }
    }
    for (int i = 0; i < SWPY_EINOPS_CLASSES; i++) {
        Py_XSETREF(st->einops_classes[i], Py_NewRef(args[i]));
    }
    /* Specs made with earlier classes are dropped. */
    for (int i = 0; i < SWPY_EINOPS_CACHES; i++) {
        PyDict_Clear(st->einops_cache[i]);
    }
    Py_RETURN_NONE;
}

static PyObject *einops_lex(PyObject *module, PyObject *command) {
    swpy_state *st = swpy_module_state(module);
    if (check_command(command) < 0 || require_classes(st) < 0) {
        return NULL;
    }
    Py_ssize_t len = 0;
    const char *text = PyUnicode_AsUTF8AndSize(command, &len);
    if (text == NULL) {
        return NULL;
    }
    sw_einops_tokens *toks = NULL;
    if (swpy_check(sw_einops_lex(text, (int64_t)len, &toks)) < 0) {
        return NULL;
    }
    int64_t n = sw_einops_tokens_count(toks);
    const sw_einops_token *t = sw_einops_tokens_data(toks);
    PyObject *list = PyList_New((Py_ssize_t)n);
    for (int64_t i = 0; list != NULL && i < n; i++) {
        PyObject *a[4] = {
            PyUnicode_FromString(sw_einops_token_kind_name(t[i].kind)),
            PyUnicode_FromStringAndSize(t[i].value, (Py_ssize_t)t[i].length),
            PyLong_FromLongLong(t[i].start), PyLong_FromLongLong(t[i].end)};
        PyObject *tok = call_class(st->einops_classes[CLS_TOKEN], a, 4);
        if (tok == NULL) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, tok);
    }
    sw_einops_tokens_free(toks);
    return list;
}

#define BAD_TOKENS "layout reference tokens must be Token objects"

/* Reads one Token object into *out (its value borrowed from the object's
 * UTF-8 cache, alive while the token is). */
static int token_of(swpy_state *st, PyObject *o, sw_einops_token *out) {
    int is = PyObject_IsInstance(o, st->einops_classes[CLS_TOKEN]);
    if (is <= 0) {
        if (is == 0) {
            PyErr_SetString(PyExc_TypeError, BAD_TOKENS);
        }
        return -1;
    }
    PyObject *kind = PyObject_GetAttrString(o, "kind");
    PyObject *value = PyObject_GetAttrString(o, "value");
    PyObject *start = PyObject_GetAttrString(o, "start");
    PyObject *end = PyObject_GetAttrString(o, "end");
    int rc = -1;
    if (kind == NULL || value == NULL || start == NULL || end == NULL) {
        goto done;
    }
    if (!PyUnicode_Check(kind) || !PyUnicode_Check(value) ||
        !PyLong_Check(start) || !PyLong_Check(end)) {
        PyErr_SetString(PyExc_TypeError, BAD_TOKENS);
        goto done;
    }
    out->kind = (sw_einops_token_kind)-1;
    for (int k = 0; k < SW_EINOPS_TOKEN_KIND_COUNT; k++) {
        if (PyUnicode_CompareWithASCIIString(
                kind, sw_einops_token_kind_name((sw_einops_token_kind)k)) ==
            0) {
            out->kind = (sw_einops_token_kind)k;
        }
    }
    Py_ssize_t len = 0;
    out->value = PyUnicode_AsUTF8AndSize(value, &len);
    out->length = (int64_t)len;
    out->start = PyLong_AsLongLong(start);
    out->end = PyLong_AsLongLong(end);
    if (out->value == NULL || PyErr_Occurred()) {
        goto done;
    }
    rc = 0;
done:
    Py_XDECREF(kind);
    Py_XDECREF(value);
    Py_XDECREF(start);
    Py_XDECREF(end);
    return rc;
}

static PyObject *einops_parse_layout_ref(PyObject *module, PyObject *tokens) {
    swpy_state *st = swpy_module_state(module);
    if (require_classes(st) < 0) {
        return NULL;
    }
    PyObject *seq = PySequence_Fast(tokens, BAD_TOKENS);
    if (seq == NULL) {
        return NULL;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    sw_einops_token *arr = PyMem_Malloc(((size_t)n + 1) * sizeof *arr);
    PyObject *r = NULL;
    if (arr == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (token_of(st, PySequence_Fast_GET_ITEM(seq, i), &arr[i]) < 0) {
            goto done;
        }
    }
    sw_einops_spec *spec = NULL;
    if (swpy_check(sw_einops_parse_layout_ref((int64_t)n, arr, &spec)) < 0) {
        goto done;
    }
    PyObject *a[2] = {tree_of(st, spec, SW_EINOPS_TREE), symbol_ids(spec, 0)};
    sw_einops_spec_unref(spec);
    r = call_class(st->einops_classes[CLS_LAYOUT_REFERENCE], a, 2);
done:
    PyMem_Free(arr);
    Py_DECREF(seq);
    return r;
}

static PyObject *einops_parse(PyObject *module, PyObject *const *args,
                              Py_ssize_t nargs) {
    swpy_state *st = swpy_module_state(module);
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError,
                     "_einops_parse expected 2 arguments, got %zd", nargs);
        return NULL;
    }
    int k = PyLong_Check(args[0]) ? (int)PyLong_AsLong(args[0]) : -1;
    if (k < 0 || k >= SWPY_EINOPS_CACHES) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_ValueError, "unknown layout command kind");
        }
        return NULL;
    }
    if (check_command(args[1]) < 0) {
        return NULL;
    }
    PyObject *e = entry_of(st, k, args[1]);
    if (e == NULL) {
        return NULL;
    }
    PyObject *spec = Py_NewRef(PyTuple_GET_ITEM(e, E_SPEC));
    Py_DECREF(e);
    return spec;
}

static PyObject *einops_rearrange(PyObject *module, PyObject *const *args,
                                  Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError,
                     "rearrange() takes 2 positional arguments but %zd were "
                     "given",
                     nargs);
        return NULL;
    }
    return swpy_einops_rearrange(swpy_module_state(module), args[0], args[1]);
}

static PyObject *einops_reduce(PyObject *module, PyObject *const *args,
                               Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError,
                     "reduce() takes 2 positional arguments but %zd were "
                     "given",
                     nargs);
        return NULL;
    }
    return swpy_einops_reduce(swpy_module_state(module), args[0], args[1]);
}

static PyObject *einops_einsum(PyObject *module, PyObject *const *args,
                               Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_Format(PyExc_TypeError,
                     "einsum() takes 3 positional arguments but %zd were "
                     "given",
                     nargs);
        return NULL;
    }
    return swpy_einops_einsum(swpy_module_state(module), args[0], args[1],
                              args[2]);
}

#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
#endif

#define FC(f) ((PyCFunction)(void (*)(void))(f)), METH_FASTCALL

static PyMethodDef einops_methods[] = {
    {"_einops_register", FC(einops_register), NULL},
    {"_einops_lex", einops_lex, METH_O, NULL},
    {"_einops_parse_layout_ref", einops_parse_layout_ref, METH_O, NULL},
    {"_einops_parse", FC(einops_parse), NULL},
    {"_einops_rearrange", FC(einops_rearrange), NULL},
    {"_einops_reduce", FC(einops_reduce), NULL},
    {"_einops_einsum", FC(einops_einsum), NULL},
    {NULL, NULL, 0, NULL},
};

#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

int swpy_einops_init(PyObject *module, swpy_state *st) {
    for (int i = 0; i < SWPY_EINOPS_CACHES; i++) {
        st->einops_cache[i] = PyDict_New();
        if (st->einops_cache[i] == NULL) {
            return -1;
        }
    }
    return PyModule_AddFunctions(module, einops_methods);
}
