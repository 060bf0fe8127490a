/*
 * Kernel patterns and packs from Python (the library's extension.h).
 *
 * A Python KernelPattern becomes a library pattern whose prepare and
 * submit adapters take the GIL and call the Python layer
 * (strideweave.carriers.extension._kernel_prepare / _kernel_submit),
 * which checks what only Python can check: the types of what a provider
 * returns, the interface of a PreparedKernel, completions. The candidate
 * order, the result rules, rollback, versions and autograd are the
 * library's (sw_kernel_run).
 *
 * The invocation a Python prepare sees: for a Python definition, the
 * ResolvedInvocation its resolve returned (the resolution's token); for a
 * built-in operation, its central definition's resolution of the same
 * operands.
 */
#include "py_kernels.h"

#include "errors.h"
#include "gil.h"
#include "operation.h"
#include "plans.h"
#include "py_extension.h"
#include "py_carrier.h"
#include "py_tensor.h"
#include "strideweave/definition.h"
#include "strideweave/extension.h"

#define FAILED SW_ERUNTIME /* a Python exception is set (see swpy_raise) */

struct swpy_patterns {
    Py_ssize_t n;
    struct py_pattern {
        PyObject *pattern;   /* KernelPattern */
        PyObject *interface; /* the provider's KernelExecutionInterface */
        swpy_state *st;
    } *items;
    sw_kernel_pattern_decl *decls; /* for registration only */
    sw_op_capability *caps;        /* the decls' plans */
};

typedef struct py_pattern py_pattern;

/* The ResolvedInvocation of inv (a new reference). */
static PyObject *invocation_of(swpy_state *st,
                               const sw_kernel_invocation *inv) {
    PyObject *token = swpy_definition_token(inv->op->id, inv->resolution);
    if (token != NULL) {
        return Py_NewRef(token);
    }
    if (PyErr_Occurred()) {
        return NULL;
    }
    PyObject *ops = PyTuple_New(inv->call->noperands);
    for (int32_t i = 0; ops != NULL && i < inv->call->noperands; i++) {
        PyObject *o = swpy_arg_to_py(st, &inv->call->operands[i]);
        if (o == NULL) {
            Py_CLEAR(ops);
            break;
        }
        PyTuple_SET_ITEM(ops, i, o);
    }
    if (ops == NULL) {
        return NULL;
    }
    PyObject *name = PyUnicode_FromString(inv->op->plan_name);
    PyObject *r = name != NULL
                      ? swpy_call_layer("_builtin_invocation", name, ops, NULL)
                      : NULL;
    Py_XDECREF(name);
    Py_DECREF(ops);
    return r;
}

static sw_status prepare_body(void *ctx, const sw_kernel_invocation *inv,
                              void **work, int *unsupported, char *reason,
                              size_t size) {
    py_pattern *p = ctx;
    PyObject *invocation = invocation_of(p->st, inv);
    if (invocation == NULL) {
        return FAILED;
    }
    PyObject *out = swpy_call_layer("_kernel_prepare", p->pattern, p->interface,
                                    invocation);
    if (out == NULL) {
        Py_DECREF(invocation);
        return FAILED;
    }
    if (PyUnicode_Check(out)) {
        const char *text = PyUnicode_AsUTF8(out);
        PyOS_snprintf(reason, size, "%s", text != NULL ? text : "");
        PyErr_Clear();
        Py_DECREF(out);
        Py_DECREF(invocation);
        *unsupported = 1;
        return SW_OK;
    }
    /* (PreparedKernel, invocation), until finish. */
    *work = Py_BuildValue("(NN)", out, invocation);
    return *work != NULL ? SW_OK : FAILED;
}

static sw_status submit_body(void *ctx, void *work,
                             const sw_kernel_invocation *inv,
                             sw_tensor **results) {
    (void)ctx;
    PyObject *w = work;
    PyObject *outs = swpy_call_layer("_kernel_submit", PyTuple_GET_ITEM(w, 0),
                                     PyTuple_GET_ITEM(w, 1), NULL);
    if (outs == NULL) {
        return FAILED;
    }
    Py_ssize_t n = PyTuple_Check(outs) ? PyTuple_GET_SIZE(outs) : 0;
    for (Py_ssize_t k = 0; k < n && k < inv->resolution->nresults; k++) {
        sw_tensor *t = swpy_tensor_of(PyTuple_GET_ITEM(outs, k));
        if (t == NULL) {
            for (Py_ssize_t j = 0; j < k; j++) {
                sw_tensor_unref(results[j]);
                results[j] = NULL;
            }
            Py_DECREF(outs);
            return FAILED;
        }
        results[k] = sw_tensor_retain(t);
    }
    Py_DECREF(outs);
    return SW_OK;
}

static void finish_adapter(void *ctx, void *work) {
    (void)ctx;
    swpy_gil g = swpy_gil_ensure();
    Py_XDECREF((PyObject *)work);
    swpy_gil_release(g);
}

static sw_status prepare_adapter(void *ctx, const sw_kernel_invocation *inv,
                                 void **work, int *unsupported, char *reason,
                                 size_t size) {
    swpy_gil g = swpy_gil_ensure();
    sw_status s = prepare_body(ctx, inv, work, unsupported, reason, size);
    swpy_gil_release(g);
    return s;
}

static sw_status submit_adapter(void *ctx, void *work,
                                const sw_kernel_invocation *inv,
                                sw_tensor **results) {
    swpy_gil g = swpy_gil_ensure();
    sw_status s = submit_body(ctx, work, inv, results);
    swpy_gil_release(g);
    return s;
}

/* ------------------------------------------------------------- building */

void swpy_patterns_free(swpy_patterns *ps) {
    if (ps == NULL) {
        return;
    }
    for (Py_ssize_t i = 0; i < ps->n; i++) {
        Py_XDECREF(ps->items[i].pattern);
        Py_XDECREF(ps->items[i].interface);
    }
    PyMem_RawFree(ps->items);
    PyMem_RawFree(ps->decls);
    PyMem_RawFree(ps->caps);
    PyMem_RawFree(ps);
}

void swpy_patterns_drop_decls(swpy_patterns *ps) {
    PyMem_RawFree(ps->decls);
    PyMem_RawFree(ps->caps);
    ps->decls = NULL;
    ps->caps = NULL;
}

const sw_kernel_pattern_decl *swpy_patterns_decls(const swpy_patterns *ps,
                                                  int64_t *n) {
    *n = ps->n;
    return ps->decls;
}

swpy_patterns *swpy_patterns_new(swpy_state *st, PyObject *interface,
                                 PyObject *patterns) {
    if (!PyTuple_Check(patterns)) {
        PyErr_SetString(PyExc_TypeError, "patterns must be a tuple");
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(patterns), nplans = 0;
    swpy_patterns *ps = PyMem_RawCalloc(1, sizeof *ps);
    if (ps == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    ps->items = PyMem_RawCalloc((size_t)(n > 0 ? n : 1), sizeof *ps->items);
    ps->decls = PyMem_RawCalloc((size_t)(n > 0 ? n : 1), sizeof *ps->decls);
    if (ps->items == NULL || ps->decls == NULL) {
        swpy_patterns_free(ps);
        PyErr_NoMemory();
        return NULL;
    }
    /* Each entry: (operation name, raw plans, kernel_id, preference,
     * pattern). */
    sw_op_capability **plans =
        PyMem_RawCalloc((size_t)(n > 0 ? n : 1), sizeof *plans);
    int64_t *counts = PyMem_RawCalloc((size_t)(n > 0 ? n : 1), sizeof *counts);
    int ok = plans != NULL && counts != NULL;
    if (!ok) {
        PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; ok && i < n; i++) {
        PyObject *e = PyTuple_GET_ITEM(patterns, i);
        const char *opname, *kid;
        PyObject *raws, *pattern;
        long long pref;
        if (!PyArg_ParseTuple(e, "sOsLO", &opname, &raws, &kid, &pref,
                              &pattern)) {
            ok = 0;
            break;
        }
        const sw_op_info *info = sw_op_info_find_plan(opname);
        if (info == NULL) {
            PyErr_Format(PyExc_ValueError, "no operation named '%s'", opname);
            ok = 0;
            break;
        }
        if (swpy_caps_from_raws(st, raws, &plans[i], &counts[i]) < 0) {
            ok = 0;
            break;
        }
        nplans += (Py_ssize_t)counts[i];
        ps->items[i].pattern = Py_NewRef(pattern);
        ps->items[i].interface = Py_NewRef(interface);
        ps->items[i].st = st;
        ps->n = i + 1;
        sw_kernel_pattern_decl *d = &ps->decls[i];
        d->op = info->id;
        d->kernel_id = kid; /* borrowed from the entry until registration */
        d->preference = (int64_t)pref;
        d->ctx = &ps->items[i];
        d->prepare = prepare_adapter;
        d->submit = submit_adapter;
        d->finish = finish_adapter;
    }
    if (ok) {
        ps->caps = PyMem_RawCalloc((size_t)(nplans > 0 ? nplans : 1),
                                   sizeof *ps->caps);
        ok = ps->caps != NULL;
        if (!ok) {
            PyErr_NoMemory();
        }
    }
    Py_ssize_t at = 0;
    for (Py_ssize_t i = 0; ok && i < n; i++) {
        memcpy(&ps->caps[at], plans[i], (size_t)counts[i] * sizeof *ps->caps);
        ps->decls[i].plans = &ps->caps[at];
        ps->decls[i].nplans = counts[i];
        at += (Py_ssize_t)counts[i];
    }
    for (Py_ssize_t i = 0; plans != NULL && i < n; i++) {
        PyMem_Free(plans[i]);
    }
    PyMem_RawFree(plans);
    PyMem_RawFree(counts);
    if (!ok) {
        swpy_patterns_free(ps);
        return NULL;
    }
    return ps;
}

/* ----------------------------------------------------------- composites */

struct swpy_composite {
    PyObject *composite; /* CompositeProvider */
    swpy_state *st;
};

static PyObject *peer_object(sw_carrier *c) {
    PyObject *self = sw_carrier_get_peer(c);
    if (self == NULL) {
        PyErr_SetString(PyExc_RuntimeError,
                        "a definition-backed carrier without its object");
    }
    return self;
}

static sw_status caps_body(void *ctx, sw_carrier *c,
                           const sw_op_capability **out, int64_t *n) {
    swpy_composite *k = ctx;
    PyObject *self = peer_object(c);
    PyObject *raws = self != NULL ? swpy_call_layer("_composite_capabilities",
                                                    k->composite, self, NULL)
                                  : NULL;
    if (raws == NULL) {
        return FAILED;
    }
    sw_op_capability *caps = NULL;
    int rc = swpy_caps_from_raws(k->st, raws, &caps, n);
    Py_DECREF(raws);
    if (rc < 0) {
        return FAILED;
    }
    *out = caps;
    return SW_OK;
}

static void caps_done(void *ctx, sw_carrier *c,
                      const sw_op_capability *entries) {
    (void)ctx;
    (void)c;
    PyMem_Free((void *)entries);
}

static sw_status results_body(void *ctx, const sw_kernel_invocation *inv,
                              const void **classes) {
    swpy_composite *k = ctx;
    PyObject *self = peer_object(inv->carrier);
    PyObject *invocation = self != NULL ? invocation_of(k->st, inv) : NULL;
    PyObject *r = invocation != NULL
                      ? swpy_call_layer("_composite_result_carriers",
                                        k->composite, self, invocation)
                      : NULL;
    Py_XDECREF(invocation);
    if (r == NULL) {
        return FAILED;
    }
    /* The Python layer checked the classes and their count. */
    Py_ssize_t n = PyTuple_Check(r) ? PyTuple_GET_SIZE(r) : 0;
    for (Py_ssize_t i = 0; i < n && i < inv->resolution->nresults; i++) {
        classes[i] =
            swpy_capability_tag(k->st, (PyTypeObject *)PyTuple_GET_ITEM(r, i));
    }
    Py_DECREF(r);
    return SW_OK;
}

static sw_status composite_prepare_body(void *ctx,
                                        const sw_kernel_invocation *inv,
                                        void **work, int *unsupported,
                                        char *reason, size_t size) {
    swpy_composite *k = ctx;
    PyObject *self = peer_object(inv->carrier);
    PyObject *invocation = self != NULL ? invocation_of(k->st, inv) : NULL;
    PyObject *out = invocation != NULL
                        ? swpy_call_layer("_composite_prepare", k->composite,
                                          self, invocation)
                        : NULL;
    if (out == NULL) {
        Py_XDECREF(invocation);
        return FAILED;
    }
    if (PyUnicode_Check(out)) {
        const char *text = PyUnicode_AsUTF8(out);
        PyOS_snprintf(reason, size, "%s", text != NULL ? text : "");
        PyErr_Clear();
        Py_DECREF(out);
        Py_DECREF(invocation);
        *unsupported = 1;
        return SW_OK;
    }
    *work = Py_BuildValue("(NN)", out, invocation);
    return *work != NULL ? SW_OK : FAILED;
}

#define WITH_GIL(call)                                                         \
    do {                                                                       \
        swpy_gil g_ = swpy_gil_ensure();                                       \
        sw_status s_ = call;                                                   \
        swpy_gil_release(g_);                                                  \
        return s_;                                                             \
    } while (0)

static sw_status caps_adapter(void *ctx, sw_carrier *c,
                              const sw_op_capability **out, int64_t *n) {
    WITH_GIL(caps_body(ctx, c, out, n));
}

static void caps_done_adapter(void *ctx, sw_carrier *c,
                              const sw_op_capability *entries) {
    swpy_gil g = swpy_gil_ensure();
    caps_done(ctx, c, entries);
    swpy_gil_release(g);
}

static sw_status results_adapter(void *ctx, const sw_kernel_invocation *inv,
                                 const void **classes) {
    WITH_GIL(results_body(ctx, inv, classes));
}

static sw_status composite_prepare_adapter(void *ctx,
                                           const sw_kernel_invocation *inv,
                                           void **work, int *unsupported,
                                           char *reason, size_t size) {
    WITH_GIL(composite_prepare_body(ctx, inv, work, unsupported, reason, size));
}

swpy_composite *swpy_composite_new(swpy_state *st, PyObject *composite,
                                   sw_composite_decl *decl) {
    swpy_composite *k = PyMem_RawMalloc(sizeof *k);
    if (k == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    k->composite = Py_NewRef(composite);
    k->st = st;
    *decl = (sw_composite_decl){
        .ctx = k,
        .capabilities = caps_adapter,
        .capabilities_done = caps_done_adapter,
        .result_carriers = results_adapter,
        .prepare = composite_prepare_adapter,
        .submit = submit_adapter,
        .finish = finish_adapter,
    };
    return k;
}

void swpy_composite_free(swpy_composite *k) {
    if (k != NULL) {
        Py_XDECREF(k->composite);
        PyMem_RawFree(k);
    }
}

/* _defined_finalize(carrier): finalizes a dependent definition-backed
 * carrier's capabilities through its composite. */
static PyObject *defined_finalize(PyObject *module, PyObject *self) {
    swpy_state *st = swpy_module_state(module);
    if (!swpy_is_carrier(st, self)) {
        PyErr_SetString(PyExc_TypeError, "carrier must be a Carrier");
        return NULL;
    }
    sw_carrier *c = swpy_carrier_of(self, Py_TYPE(self)->tp_name);
    if (c == NULL) {
        return NULL;
    }
    sw_status s = sw_carrier_defined_finalize(c);
    return s == SW_OK ? Py_NewRef(Py_None) : swpy_raise(s);
}

/* ---------------------------------------------------------------- packs */

static void pack_drop(void *ctx) {
    swpy_gil g = swpy_gil_ensure();
    swpy_patterns_free(ctx);
    swpy_gil_release(g);
}

/* _register_kernel_pack(cls, namespace, version, interface, patterns):
 * interface is the target's provider interface (each prepare gets it);
 * the pack's own interface was compared by identity in Python and is
 * compared again, by type and version, by the library. */
static PyObject *register_kernel_pack(PyObject *module, PyObject *args) {
    PyObject *cls_obj, *iface, *provider_iface, *patterns;
    const char *ns, *ver;
    if (!PyArg_ParseTuple(args, "OssOOO!:_register_kernel_pack", &cls_obj, &ns,
                          &ver, &iface, &provider_iface, &PyTuple_Type,
                          &patterns)) {
        return NULL;
    }
    if (!PyType_Check(cls_obj)) {
        PyErr_SetString(PyExc_TypeError, "cls must be a Carrier subclass");
        return NULL;
    }
    swpy_state *st = swpy_module_state(module);
    PyObject *iface_version = PyObject_GetAttrString(iface, "version");
    const char *iv =
        iface_version != NULL ? PyUnicode_AsUTF8(iface_version) : NULL;
    if (iv == NULL) {
        Py_XDECREF(iface_version);
        return NULL;
    }
    swpy_patterns *ps = swpy_patterns_new(st, provider_iface, patterns);
    if (ps == NULL) {
        Py_DECREF(iface_version);
        return NULL;
    }
    sw_kernel_pack_decl decl = {
        .version = SW_KERNEL_PACK_VERSION,
        .namespace_ = ns,
        .pack_version = ver,
        .cls = swpy_capability_tag(st, (PyTypeObject *)cls_obj),
        .interface_type = Py_TYPE(iface),
        .interface_version = iv,
        .npatterns = ps->n,
        .patterns = ps->decls,
        .ctx = ps,
        .drop = pack_drop,
    };
    sw_status s = sw_kernel_pack_register(&decl);
    Py_DECREF(iface_version);
    if (s != SW_OK) {
        swpy_patterns_free(ps);
        return swpy_raise(s);
    }
    swpy_patterns_drop_decls(ps);
    Py_RETURN_NONE;
}

/* _kernel_ids(cls): the kernel ids in candidate order (observes
 * nothing). */
static PyObject *kernel_ids(PyObject *module, PyObject *cls_obj) {
    if (!PyType_Check(cls_obj)) {
        PyErr_SetString(PyExc_TypeError, "cls must be a Carrier subclass");
        return NULL;
    }
    const void *tag =
        swpy_capability_tag(swpy_module_state(module), (PyTypeObject *)cls_obj);
    int64_t n = sw_carrier_kernel_count(tag);
    PyObject *r = PyTuple_New((Py_ssize_t)n);
    for (int64_t i = 0; r != NULL && i < n; i++) {
        PyObject *s = PyUnicode_FromString(sw_carrier_kernel_id(tag, i));
        if (s == NULL) {
            Py_CLEAR(r);
            break;
        }
        PyTuple_SET_ITEM(r, (Py_ssize_t)i, s);
    }
    return r;
}

static PyMethodDef kernel_methods[] = {
    {"_register_kernel_pack", register_kernel_pack, METH_VARARGS, NULL},
    {"_kernel_ids", kernel_ids, METH_O, NULL},
    {"_defined_finalize", defined_finalize, METH_O, NULL},
    {NULL, NULL, 0, NULL},
};

int swpy_kernels_init(PyObject *module, swpy_state *st) {
    (void)st;
    return PyModule_AddFunctions(module, kernel_methods);
}
