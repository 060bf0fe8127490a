/*
 * Operation definitions from Python: registering a Python definition in
 * the library's registry (sw_op_define) and calling it (sw_op_call), with
 * the definition's resolve, reference and VJP adapted into the library's
 * callbacks.
 *
 * The adapters run the Python layer's own helpers
 * (OperationDefinition.resolve_call, _execute_reference, _call_vjp), so
 * the Python checks and messages come first and the library's checks
 * follow. The resolved invocation travels with the library's resolution
 * as its token, so autograd nodes keep it (and through it the call's
 * Python objects) alive until they go.
 */
#include "errors.h"
#include "py_kernels.h"
#include "gil.h"
#include "py_layout.h"
#include "module.h"
#include "py_tensor.h"
#include "py_carrier.h"

#include "strideweave/definition.h"

/* What one definition's callbacks need; lives as long as the process, as
 * the registry's record does. */
typedef struct def_ctx {
    PyObject *module;     /* strong */
    PyObject *definition; /* the OperationDefinition, strong */
} def_ctx;

/*
 * The Python objects of the call being made on this thread: the resolve
 * adapter binds them as the caller wrote them (the library's bound call
 * carries numbers and tensors, not the objects). Nested calls (a
 * reference that calls another definition) stack.
 */
typedef struct call_frame {
    int32_t id;
    PyObject *operands; /* borrowed, a tuple */
    PyObject *options;  /* borrowed, a dict or NULL */
    struct call_frame *prev;
} call_frame;

static _Thread_local call_frame *current_frame;

static const char LAYER[] = "_definition_layer";

/* The Python layer's (ProviderContractError, VJPContext,
 * _execute_reference, _call_vjp), borrowed from the module dict. */
static PyObject *layer_item(PyObject *module, Py_ssize_t i) {
    PyObject *t = PyObject_GetAttrString(module, LAYER);
    if (t == NULL) {
        return NULL;
    }
    PyObject *r = PyTuple_Check(t) && PyTuple_GET_SIZE(t) == 4
                      ? Py_NewRef(PyTuple_GET_ITEM(t, i))
                      : NULL;
    Py_DECREF(t);
    if (r == NULL) {
        PyErr_SetString(PyExc_RuntimeError,
                        "the operation definition layer is not registered");
    }
    return r;
}

/* A failure for the library whose Python exception stays pending. */
static sw_status python_failed(void) {
    return sw_set_error(SW_ERUNTIME, "a Python callback raised");
}

static void release_token(void *token) {
    swpy_gil g = swpy_gil_ensure();
    Py_DECREF((PyObject *)token);
    swpy_gil_release(g);
}

/* ------------------------------------------------------------- resolve */

static int long_field(PyObject *o, const char *name, int32_t *out) {
    PyObject *v = PyObject_GetAttrString(o, name);
    if (v == NULL) {
        return -1;
    }
    long x = v == Py_None ? -1 : PyLong_AsLong(v);
    Py_DECREF(v);
    if (x == -1 && PyErr_Occurred()) {
        return -1;
    }
    *out = (int32_t)x;
    return 0;
}

static int double_field(PyObject *o, const char *name, double *out) {
    PyObject *v = PyObject_GetAttrString(o, name);
    if (v == NULL) {
        return -1;
    }
    *out = PyFloat_AsDouble(v);
    Py_DECREF(v);
    return *out == -1.0 && PyErr_Occurred() ? -1 : 0;
}

static int dtype_field(swpy_state *st, PyObject *o, const char *name,
                       int none_ok, sw_dtype *out) {
    PyObject *v = PyObject_GetAttrString(o, name);
    if (v == NULL) {
        return -1;
    }
    int rc = 0;
    if (v == Py_None && none_ok) {
        *out = SW_PLAN_NO_DTYPE;
    } else if ((rc = swpy_dtype_from_py(st, v, out)) == 0) {
        PyErr_Format(PyExc_TypeError, "%s must be a DType", name);
        rc = -1;
    }
    Py_DECREF(v);
    return rc < 0 ? -1 : 0;
}

/* An index tuple attribute into an int array of at most SW_DEF_MAX_OPERANDS. */
static int index_field(PyObject *o, const char *name, int32_t *n,
                       int32_t *out) {
    PyObject *v = PyObject_GetAttrString(o, name);
    if (v == NULL) {
        return -1;
    }
    PyObject *seq = PySequence_Fast(v, "indices must be a sequence");
    Py_DECREF(v);
    if (seq == NULL) {
        return -1;
    }
    Py_ssize_t k = PySequence_Fast_GET_SIZE(seq);
    if (k > SW_DEF_MAX_OPERANDS) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_ValueError, "%s has more than %d entries", name,
                     SW_DEF_MAX_OPERANDS);
        return -1;
    }
    for (Py_ssize_t i = 0; i < k; i++) {
        long x = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, i));
        if (x == -1 && PyErr_Occurred()) {
            Py_DECREF(seq);
            return -1;
        }
        out[i] = (int32_t)x;
    }
    *n = (int32_t)k;
    Py_DECREF(seq);
    return 0;
}

/* The library enumerator of a plan's compute (accumulation 0) or
 * accumulation (accumulation 1; None is SW_ACCUM_NONE) enum attribute,
 * found by its value's name. */
static int enum_field(PyObject *plan, const char *name, int accumulation,
                      void *out) {
    PyObject *v = PyObject_GetAttrString(plan, name);
    if (v == NULL) {
        return -1;
    }
    if (v == Py_None && accumulation) {
        Py_DECREF(v);
        *(sw_accumulation *)out = SW_ACCUM_NONE;
        return 0;
    }
    PyObject *value = PyObject_GetAttrString(v, "value");
    Py_DECREF(v);
    const char *text = value != NULL && PyUnicode_Check(value)
                           ? PyUnicode_AsUTF8(value)
                           : NULL;
    int count = accumulation ? SW_ACCUMULATION_COUNT : SW_ARITHMETIC_COUNT;
    for (int k = 0; text != NULL && k < count; k++) {
        const char *known = accumulation
                                ? sw_accumulation_name((sw_accumulation)k)
                                : sw_arithmetic_name((sw_arithmetic)k);
        if (known != NULL && strcmp(known, text) == 0) {
            Py_DECREF(value);
            if (accumulation) {
                *(sw_accumulation *)out = (sw_accumulation)k;
            } else {
                *(sw_arithmetic *)out = (sw_arithmetic)k;
            }
            return 0;
        }
    }
    Py_XDECREF(value);
    if (!PyErr_Occurred()) {
        PyErr_Format(PyExc_TypeError, "plan %s is not a known value", name);
    }
    return -1;
}

/* The plan of a resolution: its operation, roles, dtypes and arithmetic. */
static int plan_from_py(swpy_state *st, PyObject *plan, int32_t id,
                        sw_op_plan *out) {
    memset(out, 0, sizeof *out);
    out->op = id;
    out->accumulation = SW_ACCUM_NONE;
    PyObject *ops = PyObject_GetAttrString(plan, "operands");
    if (ops == NULL) {
        return -1;
    }
    PyObject *seq = PySequence_Fast(ops, "plan operands must be a sequence");
    Py_DECREF(ops);
    if (seq == NULL) {
        return -1;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n > SW_PLAN_MAX_OPERANDS) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_ValueError,
                     "a plan of a defined operation has at most %d tensor "
                     "and weak-scalar operands",
                     SW_PLAN_MAX_OPERANDS);
        return -1;
    }
    out->noperands = (int32_t)n;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *o = PySequence_Fast_GET_ITEM(seq, i);
        PyObject *role = PyObject_GetAttrString(o, "role");
        PyObject *value =
            role != NULL ? PyObject_GetAttrString(role, "value") : NULL;
        Py_XDECREF(role);
        if (value == NULL) {
            Py_DECREF(seq);
            return -1;
        }
        int weak = PyUnicode_Check(value) &&
                   PyUnicode_CompareWithASCIIString(value, "weak_scalar") == 0;
        Py_DECREF(value);
        out->operands[i].role = weak ? SW_ROLE_WEAK_SCALAR : SW_ROLE_TENSOR;
        if (dtype_field(st, o, "dtype", 1, &out->operands[i].dtype) < 0 ||
            dtype_field(st, o, "convert_to", 0, &out->operands[i].convert_to) <
                0) {
            Py_DECREF(seq);
            return -1;
        }
    }
    Py_DECREF(seq);
    if (enum_field(plan, "compute", 0, &out->compute) < 0 ||
        enum_field(plan, "accumulation", 1, &out->accumulation) < 0 ||
        dtype_field(st, plan, "accumulator_dtype", 1, &out->accumulator) < 0) {
        return -1;
    }
    return dtype_field(st, plan, "output", 0, &out->output);
}

static int resolution_from_py(swpy_state *st, PyObject *inv, int32_t id,
                              sw_resolution *res) {
    PyObject *plan = PyObject_GetAttrString(inv, "plan");
    if (plan == NULL) {
        return -1;
    }
    int rc = plan_from_py(st, plan, id, &res->plan);
    Py_DECREF(plan);
    if (rc < 0) {
        return -1;
    }
    PyObject *results = PyObject_GetAttrString(inv, "results");
    if (results == NULL) {
        return -1;
    }
    Py_ssize_t n = PyTuple_Check(results) ? PyTuple_GET_SIZE(results) : -1;
    if (n < 0 || n > SW_DEF_MAX_RESULTS) {
        Py_DECREF(results);
        PyErr_Format(PyExc_ValueError, "an invocation has at most %d results",
                     SW_DEF_MAX_RESULTS);
        return -1;
    }
    res->nresults = (int32_t)n;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *spec = PyTuple_GET_ITEM(results, i);
        sw_result_spec *s = &res->results[i];
        PyObject *layout = PyObject_GetAttrString(spec, "layout");
        if (layout == NULL) {
            Py_DECREF(results);
            return -1;
        }
        if (!swpy_is_layout(st, layout)) {
            Py_DECREF(layout);
            Py_DECREF(results);
            PyErr_SetString(PyExc_TypeError, "result layout must be a Layout");
            return -1;
        }
        s->layout = sw_layout_retain(swpy_layout_get(layout));
        Py_DECREF(layout);
        if (dtype_field(st, spec, "dtype", 0, &s->dtype) < 0 ||
            long_field(spec, "alias_of", &s->alias_of) < 0 ||
            double_field(spec, "atol", &s->atol) < 0 ||
            double_field(spec, "rtol", &s->rtol) < 0) {
            Py_DECREF(results);
            return -1;
        }
    }
    Py_DECREF(results);
    if (index_field(inv, "mutated_operands", &res->nmutated, res->mutated) <
            0 ||
        index_field(inv, "saved_operands", &res->nsaved, res->saved) < 0) {
        return -1;
    }
    PyObject *kid = PyObject_GetAttrString(inv, "kernel_id");
    if (kid == NULL) {
        return -1;
    }
    /* The invocation keeps the string alive: it is the token. */
    res->kernel_id = PyUnicode_Check(kid) ? PyUnicode_AsUTF8(kid) : NULL;
    Py_DECREF(kid);
    return res->kernel_id == NULL && PyErr_Occurred() ? -1 : 0;
}

static sw_status resolve_adapter(void *ctx, const sw_bound_call *call,
                                 sw_resolution *out) {
    def_ctx *d = ctx;
    swpy_gil g = swpy_gil_ensure();
    sw_status status = SW_OK;
    call_frame *f = current_frame;
    if (f == NULL || f->id != call->op) {
        status = sw_set_error(SW_ERUNTIME, "a Python definition is called "
                                           "through its Python object only");
        goto done;
    }
    PyObject *meth = PyObject_GetAttrString(d->definition, "resolve_call");
    PyObject *inv =
        meth != NULL ? PyObject_Call(meth, f->operands, f->options) : NULL;
    Py_XDECREF(meth);
    if (inv == NULL) {
        status = python_failed();
        goto done;
    }
    if (resolution_from_py(swpy_module_state(d->module), inv, call->op, out) <
        0) {
        Py_DECREF(inv);
        status = python_failed();
        goto done;
    }
    out->token = inv; /* the reference the resolution owns */
    out->token_release = release_token;
done:
    swpy_gil_release(g);
    return status;
}

PyObject *swpy_definition_token(int32_t op, const sw_resolution *res) {
    const sw_op_definition *d = sw_op_definition_get(op);
    return d != NULL && d->resolve == resolve_adapter && res->token != NULL
               ? (PyObject *)res->token
               : NULL;
}

/* ----------------------------------------------------------- reference */

static sw_status reference_adapter(void *ctx, const sw_bound_call *call,
                                   const sw_resolution *res,
                                   sw_tensor **results) {
    (void)call;
    def_ctx *d = ctx;
    swpy_gil g = swpy_gil_ensure();
    sw_status status = SW_OK;
    PyObject *fn = layer_item(d->module, 2);
    PyObject *r =
        fn != NULL ? PyObject_CallOneArg(fn, (PyObject *)res->token) : NULL;
    Py_XDECREF(fn);
    if (r == NULL) {
        status = python_failed();
        goto done;
    }
    Py_ssize_t n = PyTuple_Check(r) ? PyTuple_GET_SIZE(r) : -1;
    for (Py_ssize_t i = 0; i < n && i < res->nresults; i++) {
        sw_tensor *t = swpy_tensor_of(PyTuple_GET_ITEM(r, i));
        if (t == NULL) {
            status = python_failed();
            break;
        }
        results[i] = sw_tensor_retain(t);
    }
    Py_DECREF(r);
done:
    swpy_gil_release(g);
    return status;
}

/* ----------------------------------------------------------------- vjp */

static PyObject *wrap_tensors(swpy_state *st, int32_t n, sw_tensor *const *ts) {
    PyObject *t = PyTuple_New(n);
    for (int32_t i = 0; t != NULL && i < n; i++) {
        PyObject *o = ts[i] != NULL
                          ? swpy_tensor_wrap(st, sw_tensor_retain(ts[i]))
                          : Py_NewRef(Py_None);
        if (o == NULL) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, i, o);
    }
    return t;
}

static sw_status vjp_adapter(void *ctx, const sw_vjp_context *vc,
                             sw_tensor *const *cotangents, int32_t ngrads,
                             sw_tensor **grads) {
    def_ctx *d = ctx;
    swpy_gil g = swpy_gil_ensure();
    swpy_state *st = swpy_module_state(d->module);
    sw_status status = SW_OK;
    PyObject *outputs = wrap_tensors(st, vc->noutputs, vc->outputs);
    PyObject *saved = outputs ? wrap_tensors(st, vc->nsaved, vc->saved) : NULL;
    PyObject *cot =
        saved ? wrap_tensors(st, vc->resolution->nresults, cotangents) : NULL;
    PyObject *type = cot ? layer_item(d->module, 1) : NULL;
    PyObject *context = type ? PyObject_CallFunctionObjArgs(
                                   type, (PyObject *)vc->resolution->token,
                                   outputs, saved, NULL)
                             : NULL;
    PyObject *fn = context ? layer_item(d->module, 3) : NULL;
    PyObject *r =
        fn ? PyObject_CallFunctionObjArgs(fn, context, cot, NULL) : NULL;
    Py_XDECREF(outputs);
    Py_XDECREF(saved);
    Py_XDECREF(cot);
    Py_XDECREF(type);
    Py_XDECREF(context);
    Py_XDECREF(fn);
    if (r == NULL) {
        status = python_failed();
        goto done;
    }
    Py_ssize_t n = PyTuple_Check(r) ? PyTuple_GET_SIZE(r) : -1;
    for (Py_ssize_t i = 0; i < n && i < ngrads; i++) {
        PyObject *o = PyTuple_GET_ITEM(r, i);
        if (o == Py_None) {
            continue;
        }
        sw_tensor *t = swpy_tensor_of(o);
        if (t == NULL) {
            status = python_failed();
            break;
        }
        grads[i] = sw_tensor_retain(t);
    }
    Py_DECREF(r);
done:
    swpy_gil_release(g);
    return status;
}

/* ----------------------------------------------------------- functions */

static PyObject *define_operation(PyObject *module, PyObject *const *args,
                                  Py_ssize_t nargs) {
    if (nargs != 6 || !PyUnicode_Check(args[0]) || !PyTuple_Check(args[1]) ||
        !PyTuple_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError,
                        "_define_operation(name, operands, options, has_vjp, "
                        "non_differentiable, definition)");
        return NULL;
    }
    const char *name = PyUnicode_AsUTF8(args[0]);
    if (name == NULL) {
        return NULL;
    }
    Py_ssize_t nops = PyTuple_GET_SIZE(args[1]);
    Py_ssize_t nopts = PyTuple_GET_SIZE(args[2]);
    if (nops > SW_DEF_MAX_OPERANDS || nopts > SW_DEF_MAX_OPTIONS) {
        PyErr_Format(PyExc_ValueError,
                     "a definition has at most %d operands and %d options",
                     SW_DEF_MAX_OPERANDS, SW_DEF_MAX_OPTIONS);
        return NULL;
    }
    sw_operand_spec ops[SW_DEF_MAX_OPERANDS];
    sw_option_spec opts[SW_DEF_MAX_OPTIONS];
    for (Py_ssize_t i = 0; i < nops; i++) {
        const char *on = NULL;
        int kind = 0, diff = 0;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(args[1], i), "sip", &on, &kind,
                              &diff)) {
            return NULL;
        }
        ops[i].name = on;
        ops[i].kind = (sw_operand_kind)kind;
        ops[i].differentiable = diff;
    }
    for (Py_ssize_t i = 0; i < nopts; i++) {
        const char *on = NULL;
        int required = 0;
        PyObject *def = NULL;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(args[2], i), "spO", &on,
                              &required, &def)) {
            return NULL;
        }
        memset(&opts[i], 0, sizeof opts[i]);
        opts[i].name = on;
        opts[i].required = required;
        /* Borrowed from the schema, which the definition keeps. */
        opts[i].default_value.kind = SW_ARG_HOST;
        opts[i].default_value.as.host = def;
    }
    int has_vjp = PyObject_IsTrue(args[3]);
    int nondiff = PyObject_IsTrue(args[4]);
    if (has_vjp < 0 || nondiff < 0) {
        return NULL;
    }
    def_ctx *ctx = PyMem_RawMalloc(sizeof *ctx);
    if (ctx == NULL) {
        return PyErr_NoMemory();
    }
    sw_op_definition d;
    memset(&d, 0, sizeof d);
    d.version = SW_OP_DEFINITION_VERSION;
    d.name = name;
    d.noperands = (int32_t)nops;
    d.operands = ops;
    d.noptions = (int32_t)nopts;
    d.options = opts;
    d.resolve = resolve_adapter;
    d.reference = reference_adapter;
    d.vjp = has_vjp ? vjp_adapter : NULL;
    d.non_differentiable = nondiff;
    d.ctx = ctx;
    int32_t id = -1;
    sw_status st = sw_op_define(&d, &id);
    if (st != SW_OK) {
        PyMem_RawFree(ctx);
        return swpy_raise(st);
    }
    /* The record lives as long as the process: so do these. */
    ctx->module = Py_NewRef(module);
    ctx->definition = Py_NewRef(args[5]);
    return PyLong_FromLong(id);
}

/* A Python operand as a library argument (objects borrowed). */
static int arg_from_py(swpy_state *st, PyObject *o, sw_arg *out) {
    memset(out, 0, sizeof *out);
    if (swpy_is_tensor(st, o)) {
        out->kind = SW_ARG_TENSOR;
        out->as.tensor = swpy_tensor_of(o);
        return out->as.tensor == NULL ? -1 : 0;
    }
    if (PyBool_Check(o)) {
        out->kind = SW_ARG_BOOL;
        out->as.i = o == Py_True;
    } else if (PyLong_Check(o)) {
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
        if (v == -1 && PyErr_Occurred()) {
            return -1;
        }
        if (overflow) {
            out->kind = SW_ARG_F64;
            out->as.f = PyLong_AsDouble(o);
            if (out->as.f == -1.0 && PyErr_Occurred()) {
                PyErr_Clear();
                out->as.f = overflow > 0 ? Py_HUGE_VAL : -Py_HUGE_VAL;
            }
        } else {
            out->kind = SW_ARG_I64;
            out->as.i = v;
        }
    } else if (PyFloat_Check(o)) {
        out->kind = SW_ARG_F64;
        out->as.f = PyFloat_AS_DOUBLE(o);
    } else {
        out->kind = SW_ARG_HOST;
        out->as.host = o;
    }
    return 0;
}

static PyObject *definition_call(PyObject *module, PyObject *const *args,
                                 Py_ssize_t nargs) {
    swpy_state *st = swpy_module_state(module);
    if (nargs != 4 || !PyLong_Check(args[0]) || !PyTuple_Check(args[2]) ||
        !PyDict_Check(args[3])) {
        PyErr_SetString(PyExc_TypeError, "_definition_call(id, definition, "
                                         "operands, options)");
        return NULL;
    }
    int32_t id = (int32_t)PyLong_AsLong(args[0]);
    PyObject *operands = args[2], *options = args[3];
    Py_ssize_t nops = PyTuple_GET_SIZE(operands);
    Py_ssize_t nopts = PyDict_GET_SIZE(options);
    if (nops > SW_DEF_MAX_OPERANDS || nopts > SW_DEF_MAX_OPTIONS) {
        PyErr_Format(PyExc_TypeError, "too many operands or options");
        return NULL;
    }
    sw_arg a[SW_DEF_MAX_OPERANDS];
    sw_named_arg named[SW_DEF_MAX_OPTIONS];
    for (Py_ssize_t i = 0; i < nops; i++) {
        if (arg_from_py(st, PyTuple_GET_ITEM(operands, i), &a[i]) < 0) {
            return NULL;
        }
    }
    Py_ssize_t pos = 0, k = 0;
    PyObject *key = NULL, *value = NULL;
    while (PyDict_Next(options, &pos, &key, &value)) {
        named[k].name = PyUnicode_AsUTF8(key);
        if (named[k].name == NULL) {
            return NULL;
        }
        memset(&named[k].value, 0, sizeof named[k].value);
        named[k].value.kind = SW_ARG_HOST;
        named[k].value.as.host = value;
        k++;
    }
    call_frame frame = {id, operands, nopts > 0 ? options : NULL,
                        current_frame};
    current_frame = &frame;
    int32_t n = 0;
    sw_tensor *results[SW_DEF_MAX_RESULTS] = {NULL};
    sw_status status =
        sw_op_call(id, (int32_t)nops, a, (int32_t)k, named, &n, results);
    current_frame = frame.prev;
    if (status != SW_OK) {
        if (PyErr_Occurred()) {
            return NULL;
        }
        if (sw_op_contract_failed()) {
            PyObject *pce = layer_item(module, 0);
            if (pce != NULL) {
                PyErr_SetString(pce, sw_errmsg());
                Py_DECREF(pce);
            }
            return NULL;
        }
        return swpy_raise(status);
    }
    PyObject *r = PyTuple_New(n);
    for (int32_t i = 0; i < n; i++) {
        PyObject *o = r != NULL ? swpy_tensor_wrap(st, results[i]) : NULL;
        if (o == NULL) {
            for (int32_t j = i + (r == NULL ? 0 : 1); j < n; j++) {
                sw_tensor_unref(results[j]);
            }
            if (r == NULL) {
                sw_tensor_unref(results[i]);
            }
            Py_CLEAR(r);
            return NULL;
        }
        PyTuple_SET_ITEM(r, i, o);
    }
    return r;
}

static PyObject *register_layer(PyObject *module, PyObject *const *args,
                                Py_ssize_t nargs) {
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "_register_definition_layer takes 4 "
                                         "arguments");
        return NULL;
    }
    PyObject *t = PyTuple_Pack(4, args[0], args[1], args[2], args[3]);
    if (t == NULL || PyObject_SetAttrString(module, LAYER, t) < 0) {
        Py_XDECREF(t);
        return NULL;
    }
    Py_DECREF(t);
    Py_RETURN_NONE;
}

static PyObject *is_defined(PyObject *module, PyObject *name) {
    (void)module;
    if (!PyUnicode_Check(name)) {
        Py_RETURN_FALSE;
    }
    const char *s = PyUnicode_AsUTF8(name);
    if (s == NULL) {
        return NULL;
    }
    const sw_op_info *info = sw_op_info_find(s);
    return PyBool_FromLong(info != NULL && info->id >= SW_OP_BUILTIN_COUNT);
}

PyObject *swpy_definition_invocation(sw_op *op) {
    const sw_resolution *res = sw_op_definition_result(op) >= 0
                                   ? sw_op_definition_resolution(op)
                                   : NULL;
    return Py_NewRef(res != NULL && res->token ? (PyObject *)res->token
                                               : Py_None);
}

PyObject *swpy_definition_saved(swpy_state *st, sw_op *op) {
    int32_t n =
        sw_op_definition_result(op) >= 0 ? sw_op_definition_nsaved(op) : 0;
    sw_tensor *saved[SW_DEF_MAX_OPERANDS];
    for (int32_t i = 0; i < n; i++) {
        saved[i] = sw_op_definition_saved(op, i);
    }
    return wrap_tensors(st, n, saved);
}

static PyObject *definition_node(PyObject *module, PyObject *tensor) {
    swpy_state *st = swpy_module_state(module);
    if (!swpy_is_tensor(st, tensor)) {
        PyErr_SetString(PyExc_TypeError, "_definition_node needs a Tensor");
        return NULL;
    }
    sw_tensor *t = swpy_tensor_of(tensor);
    if (t == NULL) {
        return NULL;
    }
    sw_op *op = sw_tensor_autograd_ctx(t);
    if (sw_op_definition_result(op) < 0) {
        Py_RETURN_NONE;
    }
    const sw_resolution *res = sw_op_definition_resolution(op);
    int32_t n = sw_op_definition_nsaved(op);
    sw_tensor *saved[SW_DEF_MAX_OPERANDS];
    for (int32_t i = 0; i < n; i++) {
        saved[i] = sw_op_definition_saved(op, i);
    }
    PyObject *s = wrap_tensors(st, n, saved);
    if (s == NULL) {
        return NULL;
    }
    PyObject *inv =
        res != NULL && res->token ? (PyObject *)res->token : Py_None;
    return Py_BuildValue("(ON)", inv, s);
}

static PyMethodDef definition_methods[] = {
    {"_define_operation", (PyCFunction)(void (*)(void))define_operation,
     METH_FASTCALL, NULL},
    {"_definition_call", (PyCFunction)(void (*)(void))definition_call,
     METH_FASTCALL, NULL},
    {"_register_definition_layer", (PyCFunction)(void (*)(void))register_layer,
     METH_FASTCALL, NULL},
    {"_is_defined_operation", is_defined, METH_O, NULL},
    {"_definition_node", definition_node, METH_O, NULL},
    {NULL, NULL, 0, NULL},
};

int swpy_definition_init(PyObject *module, swpy_state *st) {
    (void)st;
    return PyModule_AddFunctions(module, definition_methods);
}
