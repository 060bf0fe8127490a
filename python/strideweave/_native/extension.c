/*
 * Definition-backed carriers from Python (the library's extension.h).
 *
 * strideweave.carriers.extension validates the CarrierDefinition values
 * and registers them here; the library keeps the definition under the
 * class's tag with its rules. A Python StorageProvider's callbacks are
 * adapted into the library's storage provider: each adapter takes the
 * GIL, calls the Python callback with the carrier object, and checks
 * what only Python can check (the types of the values returned); range,
 * liveness, mutability, sizes and versions are the library's.
 *
 * The registered definition object is the library definition's ctx: one
 * reference, dropped (with the GIL) when the class goes and the registry
 * forgets it. Its storage provider is borrowed from it.
 */
#include "py_extension.h"
#include "py_kernels.h"

#include "errors.h"
#include "gil.h"
#include "operation.h"
#include "plans.h"
#include "py_carrier.h"
#include "py_tensor.h"
#include "strideweave/extension.h"

#define FAILED SW_ERUNTIME /* a Python exception is set (see swpy_raise) */

typedef struct {
    PyObject *provider; /* TransferProvider (borrowed from definition) */
    swpy_state *st;
} py_route;

typedef struct {
    PyObject *definition;      /* CarrierDefinition */
    PyObject *storage;         /* StorageProvider (borrowed from definition) */
    py_route *routes;          /* one per TransferRoute */
    swpy_patterns *patterns;   /* the KernelProvider's, or NULL */
    swpy_composite *composite; /* the CompositeProvider's, or NULL */
} py_definition;

static PyObject *peer_of(sw_carrier *c) {
    PyObject *self = sw_carrier_get_peer(c);
    if (self == NULL) {
        PyErr_SetString(PyExc_RuntimeError,
                        "a definition-backed carrier without its object");
    }
    return self;
}

/* storage.<field>(carrier, *args): a new reference or NULL. */
static PyObject *call_field(void *ctx, const char *field, sw_carrier *c,
                            PyObject *arg1, PyObject *arg2) {
    PyObject *self = peer_of(c);
    if (self == NULL) {
        return NULL;
    }
    PyObject *fn =
        PyObject_GetAttrString(((py_definition *)ctx)->storage, field);
    if (fn == NULL) {
        return NULL;
    }
    PyObject *r =
        arg1 == NULL ? PyObject_CallOneArg(fn, self)
        : arg2 == NULL
            ? PyObject_CallFunctionObjArgs(fn, self, arg1, NULL)
            : PyObject_CallFunctionObjArgs(fn, self, arg1, arg2, NULL);
    Py_DECREF(fn);
    return r;
}

/* A callback that must return None. */
static sw_status none_result(PyObject *r, const char *field) {
    if (r == NULL) {
        return FAILED;
    }
    int none = r == Py_None;
    Py_DECREF(r);
    if (!none) {
        PyErr_Format(PyExc_TypeError, "%s must return None", field);
        return FAILED;
    }
    return SW_OK;
}

static sw_status supports_body(void *ctx, sw_carrier *c, sw_dtype d, int *out) {
    swpy_state *st = swpy_state_of_type(Py_TYPE(peer_of(c)));
    PyObject *dtype = st != NULL ? swpy_dtype_to_py(st, d) : NULL;
    if (dtype == NULL) {
        return FAILED;
    }
    PyObject *r = call_field(ctx, "supports_dtype", c, dtype, NULL);
    Py_DECREF(dtype);
    if (r == NULL) {
        return FAILED;
    }
    int is_bool = PyBool_Check(r);
    *out = r == Py_True;
    Py_DECREF(r);
    if (!is_bool) {
        PyErr_SetString(PyExc_TypeError, "supports_dtype must return a bool");
        return FAILED;
    }
    return SW_OK;
}

static sw_status allocate_body(void *ctx, sw_carrier *c, int64_t slots) {
    PyObject *n = PyLong_FromLongLong(slots);
    if (n == NULL) {
        return FAILED;
    }
    PyObject *r = call_field(ctx, "allocate", c, n, NULL);
    Py_DECREF(n);
    return none_result(r, "allocate");
}

static sw_status size_body(void *ctx, sw_carrier *c, int64_t *out) {
    PyObject *r = call_field(ctx, "physical_size", c, NULL, NULL);
    if (r == NULL) {
        return FAILED;
    }
    if (!PyLong_Check(r) || PyBool_Check(r)) {
        Py_DECREF(r);
        PyErr_SetString(PyExc_TypeError,
                        "physical_size must return an integer");
        return FAILED;
    }
    long long n = PyLong_AsLongLong(r);
    Py_DECREF(r);
    if (n == -1 && PyErr_Occurred()) {
        return FAILED;
    }
    *out = n;
    return SW_OK;
}

/* With its object gone (the library destroyed the carrier after the
 * object's finalizer found other references), the storage the provider
 * kept on the object has gone with it: nothing is left to release. */
static sw_status release_body(void *ctx, sw_carrier *c) {
    if (sw_carrier_get_peer(c) == NULL) {
        return SW_OK;
    }
    /* The library gives storage back after another callback failed: that
     * failure's exception is the one the caller sees. */
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    sw_status s =
        none_result(call_field(ctx, "release", c, NULL, NULL), "release");
    if (type != NULL) {
        PyErr_Restore(type, value, tb);
    }
    return s;
}

static sw_status read_body(void *ctx, sw_carrier *c, int64_t i, sw_value *out) {
    PyObject *index = PyLong_FromLongLong(i);
    if (index == NULL) {
        return FAILED;
    }
    PyObject *r = call_field(ctx, "read", c, index, NULL);
    Py_DECREF(index);
    if (r == NULL) {
        return FAILED;
    }
    /* The reader owns the reference now (a host value). */
    memset(out, 0, sizeof *out);
    out->kind = SW_VALUE_HOST;
    out->as.host = r;
    out->ops = &swpy_host_ops;
    return SW_OK;
}

static sw_status write_body(void *ctx, sw_carrier *c, int64_t i,
                            const sw_value *v) {
    PyObject *index = PyLong_FromLongLong(i);
    PyObject *value = index != NULL ? swpy_value_new_ref(v) : NULL;
    PyObject *r =
        value != NULL ? call_field(ctx, "write", c, index, value) : NULL;
    Py_XDECREF(index);
    Py_XDECREF(value);
    return none_result(r, "write");
}

/* type(like)(slots, dtype=..., mutable=...): the same exact class. */
static sw_status make_body(void *ctx, sw_carrier *like, int64_t slots,
                           sw_dtype dtype, int mutable_, sw_carrier **out) {
    (void)ctx;
    PyObject *self = peer_of(like);
    swpy_state *st = self != NULL ? swpy_state_of_type(Py_TYPE(self)) : NULL;
    if (st == NULL) {
        return FAILED;
    }
    PyObject *kw = Py_BuildValue("{sOsO}", "dtype", swpy_dtype_to_py(st, dtype),
                                 "mutable", mutable_ ? Py_True : Py_False);
    PyObject *args = kw != NULL ? Py_BuildValue("(L)", (long long)slots) : NULL;
    PyObject *made = args != NULL
                         ? PyObject_Call((PyObject *)Py_TYPE(self), args, kw)
                         : NULL;
    Py_XDECREF(args);
    Py_XDECREF(kw);
    if (made == NULL) {
        return FAILED;
    }
    sw_carrier *c = Py_TYPE(made) == Py_TYPE(self)
                        ? ((CarrierObject *)made)->carrier
                        : NULL;
    if (c == NULL) {
        Py_DECREF(made);
        PyErr_Format(PyExc_TypeError, "%.200s(...) did not make a %.200s",
                     Py_TYPE(self)->tp_name, Py_TYPE(self)->tp_name);
        return FAILED;
    }
    /* The carrier's reference to its peer keeps the object alive. */
    *out = sw_carrier_retain(c);
    Py_DECREF(made);
    return SW_OK;
}

/* The adapters, each holding the GIL for its whole body (gil.h). */
#define ADAPT(name, body, params, args)                                        \
    static sw_status name params {                                             \
        swpy_gil g = swpy_gil_ensure();                                        \
        sw_status rc_ = body args;                                             \
        swpy_gil_release(g);                                                   \
        return rc_;                                                            \
    }
ADAPT(py_supports, supports_body,
      (void *ctx, sw_carrier *c, sw_dtype d, int *out), (ctx, c, d, out))
ADAPT(py_allocate, allocate_body, (void *ctx, sw_carrier *c, int64_t n),
      (ctx, c, n))
ADAPT(py_size, size_body, (void *ctx, sw_carrier *c, int64_t *out),
      (ctx, c, out))
ADAPT(py_release, release_body, (void *ctx, sw_carrier *c), (ctx, c))
ADAPT(py_read, read_body, (void *ctx, sw_carrier *c, int64_t i, sw_value *out),
      (ctx, c, i, out))
/* A write may run while an exception is pending: the library puts back
 * what a failed kernel wrote (sw_kernel_run's rollback) before the failure
 * reaches the caller, whose exception stays the one raised. */
static sw_status py_write(void *ctx, sw_carrier *c, int64_t i,
                          const sw_value *v) {
    swpy_gil g = swpy_gil_ensure();
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    sw_status rc = write_body(ctx, c, i, v);
    if (type != NULL) {
        PyErr_Clear();
        PyErr_Restore(type, value, tb);
    }
    swpy_gil_release(g);
    return rc;
}
ADAPT(py_make, make_body,
      (void *ctx, sw_carrier *like, int64_t n, sw_dtype d, int m,
       sw_carrier **out),
      (ctx, like, n, d, m, out))

/* ------------------------------------------------------------ routes */

PyObject *swpy_call_layer(const char *fn, PyObject *a, PyObject *b,
                          PyObject *c) {
    return swpy_call_in("strideweave.carriers.extension", fn, a, b, c);
}

PyObject *swpy_call_in(const char *module, const char *fn, PyObject *a,
                       PyObject *b, PyObject *c) {
    PyObject *mod = PyImport_ImportModule(module);
    if (mod == NULL) {
        return NULL;
    }
    PyObject *f = PyObject_GetAttrString(mod, fn);
    Py_DECREF(mod);
    if (f == NULL) {
        return NULL;
    }
    PyObject *r = PyObject_CallFunctionObjArgs(f, a, b, c, NULL);
    Py_DECREF(f);
    return r;
}

static sw_status route_prepare_body(void *ctx, const sw_transfer_request *r,
                                    void **work, int *unsupported, char *reason,
                                    size_t size) {
    py_route *pr = ctx;
    PyObject *tensor = swpy_tensor_wrap(pr->st, sw_tensor_retain(r->tensor));
    PyObject *dst = sw_carrier_get_peer(r->destination);
    dst = dst != NULL
              ? Py_NewRef(dst)
              : swpy_carrier_wrap(pr->st, sw_carrier_retain(r->destination));
    PyObject *out =
        tensor != NULL && dst != NULL
            ? swpy_call_layer("_route_prepare", pr->provider, tensor, dst)
            : NULL;
    Py_XDECREF(tensor);
    Py_XDECREF(dst);
    if (out == NULL) {
        return FAILED;
    }
    if (PyUnicode_Check(out)) {
        const char *text = PyUnicode_AsUTF8(out);
        PyOS_snprintf(reason, size, "%s", text != NULL ? text : "");
        Py_DECREF(out);
        PyErr_Clear();
        *unsupported = 1;
        return SW_OK;
    }
    *work = out; /* the PreparedTransfer, until finish */
    return SW_OK;
}

static sw_status route_run_body(void *ctx, void *work) {
    PyObject *r = swpy_call_layer("_route_run", (PyObject *)work, NULL, NULL);
    if (r == NULL) {
        return FAILED;
    }
    Py_DECREF(r);
    return SW_OK;
}

/*
 * A Python ProviderCompletion as the library's completion: the move
 * executor calls wait on one of its threads, which takes the GIL only for
 * the call. A failure's exception is handed over as the host error (the
 * handle re-raises that very object); called on a thread that keeps its
 * Python thread state (error NULL), it stays set instead.
 */
static sw_status completion_wait(void *ctx, void **error) {
    swpy_gil g = swpy_gil_ensure();
    PyObject *r = swpy_call_layer("_route_wait", (PyObject *)ctx, NULL, NULL);
    sw_status s = SW_OK;
    if (r == NULL) {
        s = FAILED;
        if (error != NULL) {
            PyObject *type, *value, *tb;
            PyErr_Fetch(&type, &value, &tb);
            PyErr_NormalizeException(&type, &value, &tb);
            if (value != NULL && tb != NULL) {
                PyException_SetTraceback(value, tb);
            }
            Py_XDECREF(type);
            Py_XDECREF(tb);
            *error = value;
            /* The library's message, for a caller without Python. */
            PyObject *text = value != NULL ? PyObject_Str(value) : NULL;
            const char *msg = text != NULL ? PyUnicode_AsUTF8(text) : NULL;
            char line[512];
            PyOS_snprintf(line, sizeof line, "%s", msg != NULL ? msg : "?");
            sw_set_error(SW_ERUNTIME, line);
            Py_XDECREF(text);
            PyErr_Clear();
        }
    } else {
        Py_DECREF(r);
    }
    swpy_gil_release(g);
    return s;
}

static void completion_drop(void *ctx) {
    swpy_gil g = swpy_gil_ensure();
    Py_XDECREF((PyObject *)ctx);
    swpy_gil_release(g);
}

static void error_drop(void *error) {
    swpy_gil g = swpy_gil_ensure();
    Py_XDECREF((PyObject *)error);
    swpy_gil_release(g);
}

static sw_status route_submit_body(void *ctx, void *work,
                                   sw_transfer_completion *c) {
    PyObject *r =
        swpy_call_layer("_route_submit", (PyObject *)work, NULL, NULL);
    if (r == NULL) {
        return FAILED;
    }
    if (r == Py_None) {
        Py_DECREF(r);
        return SW_OK;
    }
    c->ctx = r; /* the completion, until drop */
    c->wait = completion_wait;
    c->drop = completion_drop;
    c->drop_error = error_drop;
    return SW_OK;
}

static void route_finish(void *ctx, void *work) {
    swpy_gil g = swpy_gil_ensure();
    Py_XDECREF((PyObject *)work);
    swpy_gil_release(g);
}

ADAPT(py_route_prepare, route_prepare_body,
      (void *ctx, const sw_transfer_request *r, void **work, int *unsupported,
       char *reason, size_t size),
      (ctx, r, work, unsupported, reason, size))
ADAPT(py_route_run, route_run_body, (void *ctx, void *work), (ctx, work))
ADAPT(py_route_submit, route_submit_body,
      (void *ctx, void *work, sw_transfer_completion *c), (ctx, work, c))

static void py_drop(void *ctx) {
    swpy_gil g = swpy_gil_ensure();
    py_definition *d = ctx;
    Py_XDECREF(d->definition);
    swpy_patterns_free(d->patterns);
    swpy_composite_free(d->composite);
    PyMem_RawFree(d->routes);
    PyMem_RawFree(d);
    swpy_gil_release(g);
}

static int type_of(PyObject *o, const char *what, PyTypeObject **out) {
    if (!PyType_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s must be a Carrier subclass", what);
        return -1;
    }
    *out = (PyTypeObject *)o;
    return 0;
}

/*
 * _define_carrier(cls, definition, storage, routes, dependent,
 * has_kernels, has_composite, fallback, interface, patterns, composite):
 * routes is a tuple of (source class, destination class, route id,
 * provider); interface the KernelProvider's (or None), patterns its
 * patterns (see swpy_patterns_new), composite the CompositeProvider (or
 * None). The Python layer has checked the values; the rules are the
 * library's.
 */
static PyObject *define_carrier(PyObject *module, PyObject *args) {
    PyObject *cls_obj, *definition, *storage, *routes, *iface, *patterns,
        *composite;
    int dependent, has_kernels, has_composite, fallback;
    if (!PyArg_ParseTuple(args, "OOOO!ppppOO!O:_define_carrier", &cls_obj,
                          &definition, &storage, &PyTuple_Type, &routes,
                          &dependent, &has_kernels, &has_composite, &fallback,
                          &iface, &PyTuple_Type, &patterns, &composite)) {
        return NULL;
    }
    swpy_state *st = swpy_module_state(module);
    PyTypeObject *cls;
    if (type_of(cls_obj, "cls", &cls) < 0) {
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(routes);
    sw_transfer_route_decl *decls =
        PyMem_Calloc((size_t)(n > 0 ? n : 1), sizeof *decls);
    py_route *pr = PyMem_RawCalloc((size_t)(n > 0 ? n : 1), sizeof *pr);
    py_definition *ctx = PyMem_RawMalloc(sizeof *ctx);
    if (decls == NULL || pr == NULL || ctx == NULL) {
        PyMem_Free(decls);
        PyMem_RawFree(pr);
        PyMem_RawFree(ctx);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *r = PyTuple_GET_ITEM(routes, i);
        PyTypeObject *src, *dst;
        if (!PyTuple_Check(r) || PyTuple_GET_SIZE(r) != 4 ||
            type_of(PyTuple_GET_ITEM(r, 0), "source_class", &src) < 0 ||
            type_of(PyTuple_GET_ITEM(r, 1), "destination_class", &dst) < 0 ||
            (decls[i].route_id = PyUnicode_AsUTF8(PyTuple_GET_ITEM(r, 2))) ==
                NULL) {
            if (!PyErr_Occurred()) {
                PyErr_SetString(PyExc_TypeError,
                                "a route is (source, destination, id, "
                                "provider)");
            }
            PyMem_Free(decls);
            PyMem_RawFree(pr);
            PyMem_RawFree(ctx);
            return NULL;
        }
        decls[i].source = swpy_capability_tag(st, src);
        decls[i].destination = swpy_capability_tag(st, dst);
        pr[i].provider = PyTuple_GET_ITEM(r, 3);
        pr[i].st = st;
        decls[i].ctx = &pr[i];
        decls[i].prepare = py_route_prepare;
        decls[i].run = py_route_run;
        decls[i].finish = route_finish;
        decls[i].submit = py_route_submit;
    }
    ctx->definition = definition;
    ctx->storage = storage;
    ctx->routes = pr;
    ctx->patterns = NULL;
    ctx->composite = NULL;
    sw_composite_decl cdecl = {0};
    if (has_composite &&
        (ctx->composite = swpy_composite_new(st, composite, &cdecl)) == NULL) {
        PyMem_Free(decls);
        PyMem_RawFree(pr);
        PyMem_RawFree(ctx);
        return NULL;
    }
    PyObject *iface_version = NULL;
    const char *iv = NULL;
    int64_t npatterns = 0;
    const sw_kernel_pattern_decl *pdecls = NULL;
    if (has_kernels) {
        iface_version = PyObject_GetAttrString(iface, "version");
        iv = iface_version != NULL ? PyUnicode_AsUTF8(iface_version) : NULL;
        ctx->patterns =
            iv != NULL ? swpy_patterns_new(st, iface, patterns) : NULL;
        if (ctx->patterns == NULL) {
            Py_XDECREF(iface_version);
            swpy_composite_free(ctx->composite);
            PyMem_Free(decls);
            PyMem_RawFree(pr);
            PyMem_RawFree(ctx);
            return NULL;
        }
        pdecls = swpy_patterns_decls(ctx->patterns, &npatterns);
    }
    sw_carrier_definition def = {
        .version = SW_CARRIER_DEFINITION_VERSION,
        .name = cls->tp_name,
        .storage = {.version = SW_STORAGE_PROVIDER_VERSION,
                    .ctx = ctx,
                    .supports_dtype = py_supports,
                    .allocate = py_allocate,
                    .physical_size = py_size,
                    .release = py_release,
                    .read = py_read,
                    .write = py_write,
                    .elementwise_fallback = fallback},
        .dependent = dependent,
        .has_composite = has_composite,
        .has_kernels = has_kernels,
        .nroutes = n,
        .routes = decls,
        .make = py_make,
        .ctx = ctx,
        .drop = py_drop,
        .interface_type = has_kernels ? (const void *)Py_TYPE(iface) : NULL,
        .interface_version = iv,
        .npatterns = npatterns,
        .patterns = pdecls,
        .composite = cdecl,
    };
    const char *dot = strrchr(cls->tp_name, '.');
    def.name = dot != NULL ? dot + 1 : cls->tp_name;
    sw_status s = SW_OK;
    if (swpy_capability_guard(module, st, cls) < 0) {
        s = FAILED;
    } else {
        s = sw_carrier_define(swpy_capability_tag(st, cls), &def);
    }
    PyMem_Free(decls);
    Py_XDECREF(iface_version);
    if (s != SW_OK) {
        swpy_patterns_free(ctx->patterns);
        swpy_composite_free(ctx->composite);
        PyMem_RawFree(pr);
        PyMem_RawFree(ctx);
        return swpy_raise(s);
    }
    if (ctx->patterns != NULL) {
        swpy_patterns_drop_decls(ctx->patterns);
    }
    Py_INCREF(definition);
    Py_RETURN_NONE;
}

/* _carrier_definition(cls): the registered definition or None (observes
 * nothing). */
static PyObject *carrier_definition(PyObject *module, PyObject *cls_obj) {
    PyTypeObject *cls;
    if (type_of(cls_obj, "cls", &cls) < 0) {
        return NULL;
    }
    py_definition *d = sw_carrier_definition_ctx(
        swpy_capability_tag(swpy_module_state(module), cls));
    return Py_NewRef(d != NULL ? d->definition : Py_None);
}

int swpy_carrier_defined_tag(swpy_state *st, PyTypeObject *type) {
    return sw_carrier_has_definition(swpy_capability_tag(st, type));
}

PyObject *swpy_carrier_defined_new(swpy_state *st, PyTypeObject *type) {
    PyObject *self = type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    sw_carrier *c = NULL;
    sw_status s = sw_carrier_defined_new(swpy_capability_tag(st, type), &c);
    if (s != SW_OK) {
        Py_DECREF(self);
        return swpy_raise(s);
    }
    ((CarrierObject *)self)->carrier = c;
    sw_carrier_set_peer(c, self, swpy_peer_hooks());
    return self;
}

int swpy_carrier_defined_init(PyObject *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"slots", "dtype", "mutable", NULL};
    PyObject *slots_obj, *dtype_obj = NULL;
    int mutable_ = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|$Op:Carrier", kwlist,
                                     &slots_obj, &dtype_obj, &mutable_)) {
        return -1;
    }
    if (dtype_obj == NULL) {
        PyErr_Format(PyExc_TypeError,
                     "%.200s() missing required keyword-only argument: "
                     "'dtype'",
                     Py_TYPE(self)->tp_name);
        return -1;
    }
    swpy_state *st = swpy_state_of_type(Py_TYPE(self));
    sw_carrier *c = ((CarrierObject *)self)->carrier;
    int64_t slots = 0;
    sw_dtype dtype;
    if (st == NULL || swpy_index_arg(slots_obj, &slots) < 0 ||
        swpy_dtype_arg(st, dtype_obj, Py_TYPE(self)->tp_name, 1, &dtype) < 0) {
        return -1;
    }
    if (dtype == SW_DTYPE_COUNT) {
        PyErr_SetString(PyExc_TypeError, "dtype must be a DType");
        return -1;
    }
    return swpy_check(sw_carrier_defined_allocate(c, slots, dtype, mutable_));
}

static PyMethodDef extension_methods[] = {
    {"_define_carrier", define_carrier, METH_VARARGS, NULL},
    {"_carrier_definition", carrier_definition, METH_O, NULL},
    {NULL, NULL, 0, NULL},
};

int swpy_extension_init(PyObject *module, swpy_state *st) {
    (void)st;
    return PyModule_AddFunctions(module, extension_methods);
}
