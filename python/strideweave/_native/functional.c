/*
 * strideweave.functional: the functional forms of the operations and the
 * grad-mode switches.
 *
 * The functions live in the extension so that a small operation costs one
 * C call: argument checks, dispatch on the carrier (native tables or a
 * Python route), a recorded forward, and the result's Python objects.
 */
#include "functional.h"

#include <string.h>

#include "py_einops.h"
#include "errors.h"
#include "gil.h"
#include "operation.h"
#include "py_carrier.h"
#include "py_tensor.h"
#include "strideweave/softmax.h"

/* An operation's name, from the registry. */
#define OP_NAME(id) (sw_op_info_get(id)->name)

/* ------------------------------------------------------------ arguments */

/*
 * Parses a vectorcall's arguments against names (the first `required`
 * are required, `total` in all). Missing optional ones are NULL.
 */
static int parse_args(const char *fname, PyObject *const *args,
                      Py_ssize_t nargs, PyObject *kwnames,
                      const char *const *names, int required, int total,
                      PyObject **out) {
    if (nargs > total) {
        PyErr_Format(PyExc_TypeError,
                     "%s() takes %d positional arguments but %zd were given",
                     fname, total, nargs);
        return -1;
    }
    for (int i = 0; i < total; i++) {
        out[i] = i < nargs ? args[i] : NULL;
    }
    Py_ssize_t nkw = kwnames != NULL ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t k = 0; k < nkw; k++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, k);
        int found = -1;
        for (int i = 0; i < total && found < 0; i++) {
            if (PyUnicode_CompareWithASCIIString(key, names[i]) == 0) {
                found = i;
            }
        }
        if (found < 0) {
            PyErr_Format(PyExc_TypeError,
                         "%s() got an unexpected keyword argument '%U'", fname,
                         key);
            return -1;
        }
        if (out[found] != NULL) {
            PyErr_Format(PyExc_TypeError,
                         "%s() got multiple values for argument '%s'", fname,
                         names[found]);
            return -1;
        }
        out[found] = args[nargs + k];
    }
    for (int i = 0; i < required; i++) {
        if (out[i] == NULL) {
            PyErr_Format(PyExc_TypeError, "%s() missing required argument '%s'",
                         fname, names[i]);
            return -1;
        }
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

/* -------------------------------------------------------------- helpers */

PyObject *swpy_fn_binary(swpy_state *st, int32_t id, PyObject *lhs,
                         PyObject *rhs) {
    if (check_tensor(st, lhs, "lhs") < 0 || check_tensor(st, rhs, "rhs") < 0) {
        return NULL;
    }
    if (swpy_tensor_of(lhs) == NULL || swpy_tensor_of(rhs) == NULL) {
        return NULL;
    }
    /* The exact classes: a Generic subclass is not Generic. */
    if (Py_TYPE(((TensorObject *)lhs)->carrier) !=
        Py_TYPE(((TensorObject *)rhs)->carrier)) {
        PyErr_SetString(PyExc_TypeError, "Tensor backing carriers must match");
        return NULL;
    }
    PyObject *args[2] = {lhs, rhs};
    return swpy_op_call(st, lhs, id, args, 2);
}

static PyObject *unary(swpy_state *st, int32_t id, PyObject *tensor) {
    if (check_tensor(st, tensor, "tensor") < 0) {
        return NULL;
    }
    return swpy_op_call(st, tensor, id, &tensor, 1);
}

PyObject *swpy_fn_mul(swpy_state *st, PyObject *tensor, PyObject *scalar) {
    if (check_tensor(st, tensor, "tensor") < 0) {
        return NULL;
    }
    if (swpy_is_tensor(st, scalar)) {
        return swpy_fn_binary(st, SW_OP_ELEMENTWISE_MUL, tensor, scalar);
    }
    PyObject *args[2] = {tensor, scalar};
    return swpy_op_call(st, tensor, SW_OP_MUL, args, 2);
}

PyObject *swpy_fn_neg(swpy_state *st, PyObject *tensor) {
    PyObject *minus_one = PyLong_FromLong(-1);
    if (minus_one == NULL) {
        return NULL;
    }
    PyObject *r = swpy_fn_mul(st, tensor, minus_one);
    Py_DECREF(minus_one);
    return r;
}

PyObject *swpy_fn_pow(swpy_state *st, PyObject *tensor, PyObject *exponent) {
    if (check_tensor(st, tensor, "tensor") < 0) {
        return NULL;
    }
    if (swpy_is_tensor(st, exponent)) {
        PyErr_SetString(PyExc_TypeError, "exponent must be a numerical scalar");
        return NULL;
    }
    PyObject *args[2] = {tensor, exponent};
    return swpy_op_call(st, tensor, SW_OP_POW, args, 2);
}

PyObject *swpy_fn_view(swpy_state *st, PyObject *tensor, PyObject *key) {
    if (check_tensor(st, tensor, "tensor") < 0) {
        return NULL;
    }
    PyObject *args[2] = {tensor, key};
    return swpy_op_call(st, tensor, SW_OP_VIEW, args, 2);
}

/* ---------------------------------------------------------- functions */

static const char *const names_lhs_rhs[] = {"lhs", "rhs"};
static const char *const names_tensor[] = {"tensor"};

static PyObject *binary_call(PyObject *m, int32_t id, PyObject *const *args,
                             Py_ssize_t nargs, PyObject *kwnames) {
    const char *name = OP_NAME(id);
    PyObject *a[2];
    if (kwnames == NULL && nargs == 2) {
        a[0] = args[0];
        a[1] = args[1];
    } else if (parse_args(name, args, nargs, kwnames, names_lhs_rhs, 2, 2, a) <
               0) {
        return NULL;
    }
    return swpy_fn_binary(swpy_module_state(m), id, a[0], a[1]);
}

static PyObject *unary_call(PyObject *m, int32_t id, PyObject *const *args,
                            Py_ssize_t nargs, PyObject *kwnames) {
    const char *name = OP_NAME(id);
    PyObject *a[1];
    if (kwnames == NULL && nargs == 1) {
        a[0] = args[0];
    } else if (parse_args(name, args, nargs, kwnames, names_tensor, 1, 1, a) <
               0) {
        return NULL;
    }
    return unary(swpy_module_state(m), id, a[0]);
}

static PyObject *fn_matmul(PyObject *m, PyObject *const *args, Py_ssize_t nargs,
                           PyObject *kwnames) {
    return binary_call(m, SW_OP_MATMUL, args, nargs, kwnames);
}

static PyObject *fn_mul(PyObject *m, PyObject *const *args, Py_ssize_t nargs,
                        PyObject *kwnames) {
    static const char *const names[] = {"tensor", "scalar"};
    PyObject *a[2];
    if (parse_args(OP_NAME(SW_OP_MUL), args, nargs, kwnames, names, 2, 2, a) <
        0) {
        return NULL;
    }
    return swpy_fn_mul(swpy_module_state(m), a[0], a[1]);
}

static PyObject *fn_neg(PyObject *m, PyObject *const *args, Py_ssize_t nargs,
                        PyObject *kwnames) {
    PyObject *a[1];
    if (parse_args("neg", args, nargs, kwnames, names_tensor, 1, 1, a) < 0) {
        return NULL;
    }
    return swpy_fn_neg(swpy_module_state(m), a[0]);
}

static PyObject *fn_pow(PyObject *m, PyObject *const *args, Py_ssize_t nargs,
                        PyObject *kwnames) {
    static const char *const names[] = {"tensor", "exponent"};
    PyObject *a[2];
    if (parse_args(OP_NAME(SW_OP_POW), args, nargs, kwnames, names, 2, 2, a) <
        0) {
        return NULL;
    }
    return swpy_fn_pow(swpy_module_state(m), a[0], a[1]);
}

static PyObject *fn_view(PyObject *m, PyObject *const *args, Py_ssize_t nargs,
                         PyObject *kwnames) {
    static const char *const names[] = {"tensor", "key"};
    PyObject *a[2];
    if (parse_args(OP_NAME(SW_OP_VIEW), args, nargs, kwnames, names, 2, 2, a) <
        0) {
        return NULL;
    }
    return swpy_fn_view(swpy_module_state(m), a[0], a[1]);
}

static PyObject *fn_permute(PyObject *m, PyObject *const *args,
                            Py_ssize_t nargs) {
    swpy_state *st = swpy_module_state(m);
    if (nargs < 1) {
        PyErr_SetString(PyExc_TypeError,
                        "permute() missing required argument 'tensor'");
        return NULL;
    }
    if (check_tensor(st, args[0], "tensor") < 0) {
        return NULL;
    }
    return swpy_op_call(st, args[0], SW_OP_PERMUTE, args, nargs);
}

static PyObject *fn_rearrange(PyObject *m, PyObject *const *args,
                              Py_ssize_t nargs, PyObject *kwnames) {
    static const char *const names[] = {"tensor", "output", "selection"};
    swpy_state *st = swpy_module_state(m);
    PyObject *a[3];
    if (parse_args(OP_NAME(SW_OP_REARRANGE), args, nargs, kwnames, names, 2, 3,
                   a) < 0) {
        return NULL;
    }
    PyObject *selection = a[2] != NULL ? a[2] : Py_None;
    if (PyUnicode_Check(a[1])) {
        if (selection != Py_None) {
            PyErr_SetString(PyExc_TypeError,
                            "String rearrange descriptions do not accept an "
                            "explicit selection");
            return NULL;
        }
        return swpy_einops_rearrange(st, a[0], a[1]);
    }
    if (check_tensor(st, a[0], "tensor") < 0 ||
        swpy_require_tree_types(st) < 0) {
        return NULL;
    }
    if (!PyObject_TypeCheck(a[1], (PyTypeObject *)st->tree_type)) {
        PyErr_SetString(PyExc_TypeError, "output must be a Tree");
        return NULL;
    }
    if (selection != Py_None &&
        !PyObject_TypeCheck(selection, (PyTypeObject *)st->tree_type)) {
        PyErr_SetString(PyExc_TypeError, "selection must be a Tree or None");
        return NULL;
    }
    PyObject *call[3] = {a[0], a[1], selection};
    return swpy_op_call(st, a[0], SW_OP_REARRANGE, call, 3);
}

static PyObject *fn_reduce(PyObject *m, PyObject *const *args, Py_ssize_t nargs,
                           PyObject *kwnames) {
    static const char *const names[] = {"tensor", "description"};
    swpy_state *st = swpy_module_state(m);
    PyObject *a[2];
    if (parse_args(OP_NAME(SW_OP_REDUCE), args, nargs, kwnames, names, 1, 2,
                   a) < 0) {
        return NULL;
    }
    /* Any description given, None included, selects the string form. */
    if (a[1] != NULL) {
        if (!PyUnicode_Check(a[1])) {
            PyErr_SetString(PyExc_TypeError, "description must be a str");
            return NULL;
        }
        return swpy_einops_reduce(st, a[0], a[1]);
    }
    return unary(st, SW_OP_REDUCE, a[0]);
}

static PyObject *fn_einsum(PyObject *m, PyObject *const *args, Py_ssize_t nargs,
                           PyObject *kwnames) {
    static const char *const names[] = {"lhs", "rhs", "description"};
    PyObject *a[3];
    if (parse_args("einsum", args, nargs, kwnames, names, 3, 3, a) < 0) {
        return NULL;
    }
    return swpy_einops_einsum(swpy_module_state(m), a[0], a[1], a[2]);
}

static PyObject *fn_is_grad_enabled(PyObject *m, PyObject *unused) {
    return PyBool_FromLong(sw_grad_enabled());
}

static PyObject *fn_set_grad_enabled(PyObject *m, PyObject *const *args,
                                     Py_ssize_t nargs, PyObject *kwnames) {
    static const char *const names[] = {"enabled"};
    PyObject *a[1];
    if (parse_args("set_grad_enabled", args, nargs, kwnames, names, 1, 1, a) <
        0) {
        return NULL;
    }
    int enabled = PyObject_IsTrue(a[0]);
    if (enabled < 0) {
        return NULL;
    }
    sw_set_grad_enabled(enabled);
    Py_RETURN_NONE;
}

/* The pieces of the registered forms' docstrings. */
#define SETUP_X                                                                \
    "    >>> x = Tensor(Generic([1.0, -2.0]), 0, Layout(Shape(2), "            \
    "Stride(1)))\n"

#define ARG_TENSOR "    tensor: the input Tensor.\n"
#define ARGS_BINARY                                                            \
    "    lhs: the left Tensor.\n"                                              \
    "    rhs: the right Tensor, with a layout equal to lhs's, over a carrier " \
    "of exactly the same class.\n"
#define RAISES_BINARY                                                          \
    "Raises:\n"                                                                \
    "    TypeError: 'lhs must be a Tensor', 'rhs must be a Tensor', 'Tensor "  \
    "backing carriers must match'.\n"                                          \
    "    ValueError: 'Tensor layouts must match'.\n\n"
#define RAISES_UNARY                                                           \
    "Raises:\n"                                                                \
    "    TypeError: 'tensor must be a Tensor'.\n\n"
#define RETURNS_ELEMENTWISE                                                    \
    "Returns:\n"                                                               \
    "    Tensor: a fresh tensor with the input's layout (offset 0).\n\n"

/* ------------------------------------- forms made from the registry */

/*
 * The elementwise and activation operations take their functional form
 * from the library's registry: one implementation bound to the operation's
 * number, its name and a docstring made from the record (its summary, and
 * an example whose value is the library's reference arithmetic at 1.0).
 */
static PyMethodDef registered_defs[SW_OP_BUILTIN_COUNT];

static int has_registered_form(const sw_op_info *info) {
    return (info->flags & SW_OPF_FUNCTIONAL) &&
           (info->form == SW_FORM_BINARY || info->form == SW_FORM_UNARY);
}

/* self is (module, operation id). */
static PyObject *fn_registered(PyObject *self, PyObject *const *args,
                               Py_ssize_t nargs, PyObject *kwnames) {
    PyObject *m = PyTuple_GET_ITEM(self, 0);
    const sw_op_info *info =
        sw_op_info_get((int32_t)PyLong_AsLong(PyTuple_GET_ITEM(self, 1)));
    return info->form == SW_FORM_BINARY
               ? binary_call(m, info->id, args, nargs, kwnames)
               : unary_call(m, info->id, args, nargs, kwnames);
}

/* repr(round(v, 6)), as a doctest prints it. */
static PyObject *rounded_repr(double v) {
    PyObject *round = PyDict_GetItemString(PyEval_GetBuiltins(), "round");
    PyObject *r =
        round != NULL ? PyObject_CallFunction(round, "di", v, 6) : NULL;
    PyObject *text = r != NULL ? PyObject_Repr(r) : NULL;
    Py_XDECREF(r);
    return text;
}

/* The docstring of a registered form (static once made: the method
 * definitions outlive every module object). */
static const char *registered_doc(const sw_op_info *info) {
    int binary = info->form == SW_FORM_BINARY;
    PyObject *value = rounded_repr(sw_vop_apply(info->vop, 1.0, 1.0));
    if (value == NULL) {
        return NULL;
    }
    PyObject *doc = PyUnicode_FromFormat(
        "%s($module, %s)\n--\n\n%s\n\nArgs:\n%s\n" RETURNS_ELEMENTWISE
        "%sExamples:\n" SETUP_X "    >>> round(%s(%s)[0], 6)\n    %U\n",
        info->name, binary ? "lhs, rhs" : "tensor", info->summary,
        binary ? ARGS_BINARY : ARG_TENSOR,
        binary ? RAISES_BINARY : RAISES_UNARY, info->name,
        binary ? "x, x" : "x", value);
    Py_DECREF(value);
    const char *utf8 = doc != NULL ? PyUnicode_AsUTF8(doc) : NULL;
    char *copy = utf8 != NULL ? PyMem_RawMalloc(strlen(utf8) + 1) : NULL;
    if (copy != NULL) {
        memcpy(copy, utf8, strlen(utf8) + 1);
    } else if (utf8 != NULL) {
        PyErr_NoMemory();
    }
    Py_XDECREF(doc);
    return copy;
}

static int add_registered_forms(PyObject *module) {
    PyObject *modname = PyModule_GetNameObject(module);
    if (modname == NULL) {
        return -1;
    }
    int rc = 0;
    for (int32_t id = 0; id < SW_OP_BUILTIN_COUNT && rc == 0; id++) {
        const sw_op_info *info = sw_op_info_get(id);
        if (!has_registered_form(info)) {
            continue;
        }
        PyMethodDef *def = &registered_defs[id];
        if (def->ml_name == NULL) {
            const char *doc = registered_doc(info);
            if (doc == NULL) {
                rc = -1;
                break;
            }
            def->ml_meth = (PyCFunction)(void (*)(void))fn_registered;
            def->ml_flags = METH_FASTCALL | METH_KEYWORDS;
            def->ml_doc = doc;
            def->ml_name = info->name;
        }
        PyObject *self = Py_BuildValue("(Oi)", module, (int)id);
        PyObject *fn =
            self != NULL ? PyCFunction_NewEx(def, self, modname) : NULL;
        Py_XDECREF(self);
        rc = fn != NULL ? PyModule_AddObjectRef(module, info->name, fn) : -1;
        Py_XDECREF(fn);
    }
    Py_DECREF(modname);
    return rc;
}

/* y += alpha * x in place (sw_tensor_axpy): an optimizer's step over a
 * whole parameter in one call, without the GIL when it is large. */
static PyObject *fn_axpy(PyObject *m, PyObject *const *args, Py_ssize_t nargs) {
    swpy_state *st = swpy_module_state(m);
    if (nargs != 3) {
        PyErr_Format(PyExc_TypeError,
                     "_axpy() takes 3 arguments (y, alpha, x), %zd given",
                     nargs);
        return NULL;
    }
    if (check_tensor(st, args[0], "y") < 0 ||
        check_tensor(st, args[2], "x") < 0) {
        return NULL;
    }
    double alpha = PyFloat_AsDouble(args[1]);
    if (alpha == -1.0 && PyErr_Occurred()) {
        return NULL;
    }
    sw_tensor *y = swpy_tensor_of(args[0]), *x = swpy_tensor_of(args[2]);
    if (y == NULL || x == NULL) {
        return NULL;
    }
    int64_t work = sw_tensor_size(y);
    sw_status s;
    if (swpy_bulk(work)) {
        swpy_interrupt intr;
        swpy_interrupt_begin(&intr, work);
        SWPY_NOGIL_BEGIN
        s = sw_tensor_axpy(y, alpha, x);
        SWPY_NOGIL_END
        int seen = swpy_interrupt_end(&intr);
        /* A partly applied step cannot run again: it stops here whatever
         * the handler did. */
        if (s == SW_EINTERRUPTED && swpy_interrupted(seen) == 1) {
            PyErr_SetString(PyExc_KeyboardInterrupt, "operation interrupted");
            return NULL;
        }
        if (s == SW_EINTERRUPTED) {
            return NULL;
        }
    } else {
        s = sw_tensor_axpy(y, alpha, x);
    }
    if (swpy_check(s) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* One Adam step over whole tensors (sw_tensor_adam_step). */
static PyObject *fn_adam_step(PyObject *m, PyObject *const *args,
                              Py_ssize_t nargs) {
    swpy_state *st = swpy_module_state(m);
    if (nargs != 10) {
        PyErr_Format(PyExc_TypeError,
                     "_adam_step() takes 10 arguments (param, grad, m, v, lr, "
                     "beta1, beta2, eps, weight_decay, step), %zd given",
                     nargs);
        return NULL;
    }
    static const char *const names[4] = {"param", "grad", "m", "v"};
    sw_tensor *t[4];
    for (int k = 0; k < 4; k++) {
        if (check_tensor(st, args[k], names[k]) < 0 ||
            (t[k] = swpy_tensor_of(args[k])) == NULL) {
            return NULL;
        }
    }
    double h[5];
    for (int k = 0; k < 5; k++) {
        h[k] = PyFloat_AsDouble(args[4 + k]);
        if (h[k] == -1.0 && PyErr_Occurred()) {
            return NULL;
        }
    }
    long long step = PyLong_AsLongLong(args[9]);
    if (step == -1 && PyErr_Occurred()) {
        return NULL;
    }
    sw_adam a = {h[0], h[1], h[2], h[3], h[4], step};
    int64_t work = sw_tensor_size(t[0]);
    sw_status s;
    if (swpy_bulk(work)) {
        swpy_interrupt intr;
        swpy_interrupt_begin(&intr, work);
        SWPY_NOGIL_BEGIN
        s = sw_tensor_adam_step(t[0], t[1], t[2], t[3], &a);
        SWPY_NOGIL_END
        int seen = swpy_interrupt_end(&intr);
        if (s == SW_EINTERRUPTED) {
            if (swpy_interrupted(seen) == 1) {
                PyErr_SetString(PyExc_KeyboardInterrupt,
                                "operation interrupted");
            }
            return NULL;
        }
    } else {
        s = sw_tensor_adam_step(t[0], t[1], t[2], t[3], &a);
    }
    if (swpy_check(s) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* ------------------------------------------- softmax and cross-entropy */

/* The tensors of a softmax-family call, checked; 0 or -1 with TypeError. */
static int softmax_args(PyObject *m, PyObject *const *args, Py_ssize_t nargs,
                        Py_ssize_t want, const char *usage,
                        const char *const *names, sw_tensor **t) {
    swpy_state *st = swpy_module_state(m);
    if (nargs != want) {
        PyErr_Format(PyExc_TypeError, "%s, %zd given", usage, nargs);
        return -1;
    }
    for (Py_ssize_t k = 0; k < want; k++) {
        if (names[k] == NULL) {
            continue;
        }
        if (check_tensor(st, args[k], names[k]) < 0 ||
            (t[k] = swpy_tensor_of(args[k])) == NULL) {
            return -1;
        }
    }
    return 0;
}

/* The result of a softmax-family kernel as a Tensor (or NULL with the
 * status's exception). */
static PyObject *softmax_result(PyObject *m, sw_status s, sw_tensor *r) {
    if (swpy_check(s) < 0) {
        return NULL;
    }
    return swpy_tensor_wrap(swpy_module_state(m), r);
}

/* softmax or log_softmax over the rows of a CPU Float32 tensor. */
static PyObject *fn_softmax(PyObject *m, PyObject *const *args,
                            Py_ssize_t nargs) {
    static const char *const names[2] = {"x", NULL};
    sw_tensor *t[2] = {NULL, NULL}, *r = NULL;
    if (softmax_args(m, args, nargs, 2, "_softmax() takes 2 arguments (x, log)",
                     names, t) < 0) {
        return NULL;
    }
    int log_ = PyObject_IsTrue(args[1]);
    if (log_ < 0) {
        return NULL;
    }
    sw_status s;
    if (swpy_bulk(sw_tensor_size(t[0]))) {
        SWPY_NOGIL_BEGIN
        s = sw_softmax(t[0], log_, &r);
        SWPY_NOGIL_END
    } else {
        s = sw_softmax(t[0], log_, &r);
    }
    return softmax_result(m, s, r);
}

static PyObject *fn_softmax_backward(PyObject *m, PyObject *const *args,
                                     Py_ssize_t nargs) {
    static const char *const names[3] = {"x", "gradient", NULL};
    sw_tensor *t[3] = {NULL, NULL, NULL}, *r = NULL;
    if (softmax_args(m, args, nargs, 3,
                     "_softmax_backward() takes 3 arguments (x, gradient, log)",
                     names, t) < 0) {
        return NULL;
    }
    int log_ = PyObject_IsTrue(args[2]);
    if (log_ < 0) {
        return NULL;
    }
    sw_status s;
    if (swpy_bulk(sw_tensor_size(t[0]))) {
        SWPY_NOGIL_BEGIN
        s = sw_softmax_backward(t[0], t[1], log_, &r);
        SWPY_NOGIL_END
    } else {
        s = sw_softmax_backward(t[0], t[1], log_, &r);
    }
    return softmax_result(m, s, r);
}

/* "mean" or "sum" as the library's reduction; -1 with ValueError. */
static int reduction_of(PyObject *o, sw_reduction *out) {
    if (PyUnicode_Check(o) &&
        PyUnicode_CompareWithASCIIString(o, "mean") == 0) {
        *out = SW_REDUCE_MEAN;
        return 0;
    }
    if (PyUnicode_Check(o) && PyUnicode_CompareWithASCIIString(o, "sum") == 0) {
        *out = SW_REDUCE_SUM;
        return 0;
    }
    PyErr_SetString(PyExc_ValueError, "reduction must be 'mean' or 'sum'");
    return -1;
}

static PyObject *fn_cross_entropy(PyObject *m, PyObject *const *args,
                                  Py_ssize_t nargs) {
    static const char *const names[3] = {"logits", "target", NULL};
    sw_tensor *t[3] = {NULL, NULL, NULL}, *r = NULL;
    sw_reduction red;
    if (softmax_args(m, args, nargs, 3,
                     "_cross_entropy() takes 3 arguments (logits, target, "
                     "reduction)",
                     names, t) < 0 ||
        reduction_of(args[2], &red) < 0) {
        return NULL;
    }
    sw_status s;
    if (swpy_bulk(sw_tensor_size(t[0]))) {
        SWPY_NOGIL_BEGIN
        s = sw_cross_entropy(t[0], t[1], red, &r);
        SWPY_NOGIL_END
    } else {
        s = sw_cross_entropy(t[0], t[1], red, &r);
    }
    return softmax_result(m, s, r);
}

static PyObject *fn_cross_entropy_backward(PyObject *m, PyObject *const *args,
                                           Py_ssize_t nargs) {
    static const char *const names[4] = {"logits", "target", NULL, "gradient"};
    sw_tensor *t[4] = {NULL, NULL, NULL, NULL}, *r = NULL;
    sw_reduction red;
    if (softmax_args(m, args, nargs, 4,
                     "_cross_entropy_backward() takes 4 arguments (logits, "
                     "target, reduction, gradient)",
                     names, t) < 0 ||
        reduction_of(args[2], &red) < 0) {
        return NULL;
    }
    sw_status s;
    if (swpy_bulk(sw_tensor_size(t[0]))) {
        SWPY_NOGIL_BEGIN
        s = sw_cross_entropy_backward(t[0], t[1], red, t[3], &r);
        SWPY_NOGIL_END
    } else {
        s = sw_cross_entropy_backward(t[0], t[1], red, t[3], &r);
    }
    return softmax_result(m, s, r);
}

/* The names of the operations with a functional form, in registry order. */
static PyObject *fn_functional_operations(PyObject *m, PyObject *unused) {
    PyObject *names = PyList_New(0);
    for (int32_t id = 0; names != NULL && id < sw_op_count(); id++) {
        const sw_op_info *info = sw_op_info_get(id);
        if (!(info->flags & SW_OPF_FUNCTIONAL)) {
            continue;
        }
        PyObject *name = PyUnicode_FromString(info->name);
        if (name == NULL || PyList_Append(names, name) < 0) {
            Py_CLEAR(names);
        }
        Py_XDECREF(name);
    }
    return names;
}

/* The class names of a backend's native operations, sorted. */
static PyObject *fn_native_classes(PyObject *m, PyObject *backend) {
    const char *want = PyUnicode_AsUTF8(backend);
    if (want == NULL) {
        return NULL;
    }
    PyObject *names = PyList_New(0);
    for (int32_t i = 0; names != NULL && i < SW_NATIVE_OP_SLOTS; i++) {
        const sw_native_op *n = sw_native_op_at(i);
        if (n == NULL || strcmp(n->backend, want) != 0) {
            continue;
        }
        PyObject *name = PyUnicode_FromString(n->cls.name);
        if (name == NULL || PyList_Append(names, name) < 0) {
            Py_CLEAR(names);
        }
        Py_XDECREF(name);
    }
    if (names != NULL && PyList_Sort(names) < 0) {
        Py_CLEAR(names);
    }
    return names;
}

/* ------------------------------------------------------------ the table */

#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
#endif

#define FK(f) ((PyCFunction)(void (*)(void))(f)), METH_FASTCALL | METH_KEYWORDS

static PyMethodDef functional_methods[] = {
    {"matmul", FK(fn_matmul), NULL},
    {"mul", FK(fn_mul), NULL},
    {"neg", FK(fn_neg), NULL},
    {"pow", FK(fn_pow), NULL},
    {"view", FK(fn_view), NULL},
    {"permute", (PyCFunction)(void (*)(void))fn_permute, METH_FASTCALL, NULL},
    {"rearrange", FK(fn_rearrange), NULL},
    {"reduce", FK(fn_reduce), NULL},
    {"einsum", FK(fn_einsum), NULL},
    {"is_grad_enabled", fn_is_grad_enabled, METH_NOARGS, NULL},
    {"set_grad_enabled", FK(fn_set_grad_enabled), NULL},
    {"_functional_operations", fn_functional_operations, METH_NOARGS, NULL},
    {"_native_classes", fn_native_classes, METH_O, NULL},
    {"_axpy", (PyCFunction)(void (*)(void))fn_axpy, METH_FASTCALL, NULL},
    {"_softmax", (PyCFunction)(void (*)(void))fn_softmax, METH_FASTCALL, NULL},
    {"_softmax_backward", (PyCFunction)(void (*)(void))fn_softmax_backward,
     METH_FASTCALL, NULL},
    {"_cross_entropy", (PyCFunction)(void (*)(void))fn_cross_entropy,
     METH_FASTCALL, NULL},
    {"_cross_entropy_backward",
     (PyCFunction)(void (*)(void))fn_cross_entropy_backward, METH_FASTCALL,
     NULL},
    {"_adam_step", (PyCFunction)(void (*)(void))fn_adam_step, METH_FASTCALL,
     NULL},
    {"execute_lowered_operation",
     (PyCFunction)(void (*)(void))swpy_execute_lowered_operation, METH_FASTCALL,
     NULL},
    {NULL, NULL, 0, NULL},
};

#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

int swpy_functional_init(PyObject *module, swpy_state *st) {
    if (PyModule_AddFunctions(module, functional_methods) < 0) {
        return -1;
    }
    return add_registered_forms(module);
}
