/*
 * Operation plans and capabilities (include/strideweave/policy.h and
 * capability.h) for Python: thin module functions that convert between
 * Python values and the library's structs, and the Carrier methods.
 *
 * Plans travel as plain tuples ("raw" plans), which the pure-Python
 * layer turns into its frozen dataclasses:
 *
 *   (operation: str, operands: ((role: int, dtype: DType | None,
 *    convert_to: DType), ...), compute: int, accumulation: int | None,
 *    accumulator_dtype: DType | None, output: DType)
 *
 * with the enumerators as indexes into the library's name tables
 * (_plan_names()). Capabilities use the same shape.
 *
 * Class tags: the built-in backends are keyed by the library's classes
 * (swpy_carrier_class_tag), every other class by its type object's
 * address. A dead class's address may be reused by a new class, so the
 * first time a host class is touched a weak reference with a callback is
 * kept in the module's _capability_guards dict; the callback makes the
 * library forget the class when it goes.
 */
#include "plans.h"

#include "strideweave/extension.h"
#include "strideweave/tiled.h"

#include <math.h>

#include "py_carrier.h"
#include "errors.h"
#include "operation.h"
#include "strideweave/blockdev.h"
#include "strideweave/capability.h"
#include "strideweave/evictable.h"
#include "strideweave/policy.h"

#define SNAPSHOT_CAPSULE "strideweave._native.capability_snapshot"
#define GUARDS "_capability_guards"
#define CAPABILITY_MODULE "strideweave.carriers.operation_capability"

/* ------------------------------------------------------------ dtypes */

/* The index of DType member o, or -1. */
static int dtype_index(swpy_state *st, PyObject *o) {
    for (int i = 0; i < SW_DTYPE_COUNT; i++) {
        if (st->dtypes[i] == o) {
            return i;
        }
    }
    return -1;
}

static PyObject *dtype_object(swpy_state *st, sw_dtype d) {
    if ((int)d < 0 || (int)d >= SW_DTYPE_COUNT) {
        Py_RETURN_NONE;
    }
    return Py_NewRef(st->dtypes[d]);
}

/* ---------------------------------------------------------- raw plans */

static int malformed(const char *what) {
    PyErr_Format(PyExc_TypeError, "malformed operation plan: %s", what);
    return -1;
}

/* An index into a name table of count entries, or none (-1) when o is
 * None and none_ok. */
static int enum_index(PyObject *o, int count, int none_ok, const char *what,
                      int *out) {
    if (o == Py_None && none_ok) {
        *out = -1;
        return 0;
    }
    long v = PyLong_Check(o) ? PyLong_AsLong(o) : -1;
    if (v < 0 || v >= count) {
        PyErr_Clear();
        return malformed(what);
    }
    *out = (int)v;
    return 0;
}

static int dtype_field(swpy_state *st, PyObject *o, int none_ok,
                       const char *what, sw_dtype *out) {
    if (o == Py_None && none_ok) {
        *out = SW_PLAN_NO_DTYPE;
        return 0;
    }
    int d = dtype_index(st, o);
    if (d < 0) {
        return malformed(what);
    }
    *out = (sw_dtype)d;
    return 0;
}

static int plan_from_raw(swpy_state *st, PyObject *raw, sw_op_plan *out) {
    if (swpy_require_dtypes(st) < 0) {
        return -1;
    }
    if (!PyTuple_Check(raw) || PyTuple_GET_SIZE(raw) != 6) {
        return malformed("not a 6-tuple");
    }
    memset(out, 0, sizeof *out);
    PyObject *name = PyTuple_GET_ITEM(raw, 0);
    if (!PyUnicode_Check(name)) {
        return malformed("operation");
    }
    const char *s = PyUnicode_AsUTF8(name);
    if (s == NULL) {
        return -1;
    }
    const sw_op_info *info = sw_op_info_find_plan(s);
    if (info == NULL) {
        PyErr_Format(PyExc_ValueError, "unknown operation '%s'", s);
        return -1;
    }
    out->op = info->id;
    PyObject *ops = PyTuple_GET_ITEM(raw, 1);
    if (!PyTuple_Check(ops) || PyTuple_GET_SIZE(ops) < 1 ||
        PyTuple_GET_SIZE(ops) > SW_PLAN_MAX_OPERANDS) {
        return malformed("operands");
    }
    out->noperands = (int32_t)PyTuple_GET_SIZE(ops);
    for (int32_t i = 0; i < out->noperands; i++) {
        PyObject *o = PyTuple_GET_ITEM(ops, i);
        int role = 0;
        if (!PyTuple_Check(o) || PyTuple_GET_SIZE(o) != 3 ||
            enum_index(PyTuple_GET_ITEM(o, 0), SW_OPERAND_ROLE_COUNT, 0, "role",
                       &role) < 0 ||
            dtype_field(st, PyTuple_GET_ITEM(o, 1), 1, "operand dtype",
                        &out->operands[i].dtype) < 0 ||
            dtype_field(st, PyTuple_GET_ITEM(o, 2), 1, "convert_to",
                        &out->operands[i].convert_to) < 0) {
            if (!PyErr_Occurred()) {
                malformed("operand");
            }
            return -1;
        }
        out->operands[i].role = (sw_operand_role)role;
    }
    int compute = 0, accumulation = 0;
    if (enum_index(PyTuple_GET_ITEM(raw, 2), SW_ARITHMETIC_COUNT, 0, "compute",
                   &compute) < 0 ||
        enum_index(PyTuple_GET_ITEM(raw, 3), SW_ACCUMULATION_COUNT, 1,
                   "accumulation", &accumulation) < 0 ||
        dtype_field(st, PyTuple_GET_ITEM(raw, 4), 1, "accumulator_dtype",
                    &out->accumulator) < 0 ||
        dtype_field(st, PyTuple_GET_ITEM(raw, 5), 0, "output", &out->output) <
            0) {
        return -1;
    }
    out->compute = (sw_arithmetic)compute;
    out->accumulation =
        accumulation < 0 ? SW_ACCUM_NONE : (sw_accumulation)accumulation;
    return 0;
}

static PyObject *raw_from_plan(swpy_state *st, const sw_op_plan *p) {
    const sw_op_info *info = sw_op_info_get(p->op);
    PyObject *ops = PyTuple_New(p->noperands);
    if (ops == NULL) {
        return NULL;
    }
    for (int32_t i = 0; i < p->noperands; i++) {
        const sw_operand_plan *o = &p->operands[i];
        PyObject *dt = dtype_object(st, o->dtype);
        PyObject *cv = dtype_object(st, o->convert_to);
        PyObject *t = Py_BuildValue("(iNN)", (int)o->role, dt, cv);
        if (t == NULL) {
            Py_DECREF(ops);
            return NULL;
        }
        PyTuple_SET_ITEM(ops, i, t);
    }
    PyObject *acc = p->accumulation == SW_ACCUM_NONE
                        ? Py_NewRef(Py_None)
                        : PyLong_FromLong((long)p->accumulation);
    if (acc == NULL) {
        Py_DECREF(ops);
        return NULL;
    }
    return Py_BuildValue("(sNiNNN)", info ? info->plan_name : "?", ops,
                         (int)p->compute, acc, dtype_object(st, p->accumulator),
                         dtype_object(st, p->output));
}

static PyObject *raw_list(swpy_state *st, sw_capability_list l) {
    PyObject *r = PyTuple_New((Py_ssize_t)l.count);
    if (r == NULL) {
        return NULL;
    }
    for (int64_t i = 0; i < l.count; i++) {
        sw_op_plan p;
        sw_op_capability_to_plan(&l.items[i], &p);
        PyObject *one = raw_from_plan(st, &p);
        if (one == NULL) {
            Py_DECREF(r);
            return NULL;
        }
        PyTuple_SET_ITEM(r, (Py_ssize_t)i, one);
    }
    return r;
}

/* The capabilities of a sequence of raw entries (owned array, or NULL
 * for none); -1 with an exception set. */
int swpy_caps_from_raws(swpy_state *st, PyObject *raws, sw_op_capability **out,
                        int64_t *n) {
    PyObject *seq = PySequence_Fast(raws, "capabilities must be a sequence");
    if (seq == NULL) {
        return -1;
    }
    Py_ssize_t k = PySequence_Fast_GET_SIZE(seq);
    sw_op_capability *a = NULL;
    if (k > 0) {
        a = PyMem_Calloc((size_t)k, sizeof *a);
        if (a == NULL) {
            Py_DECREF(seq);
            PyErr_NoMemory();
            return -1;
        }
    }
    for (Py_ssize_t i = 0; i < k; i++) {
        sw_op_plan p;
        if (plan_from_raw(st, PySequence_Fast_GET_ITEM(seq, i), &p) < 0) {
            PyMem_Free(a);
            Py_DECREF(seq);
            return -1;
        }
        sw_op_capability_from_plan(&p, &a[i]);
    }
    Py_DECREF(seq);
    *out = a;
    *n = k;
    return 0;
}

/* --------------------------------------------------------- class tags */

static const void *class_tag(swpy_state *st, PyTypeObject *type) {
    if (type == st->file_type) {
        return sw_file_class();
    }
    if (type == st->blockdev_type && type != NULL) {
        return sw_blockdev_class();
    }
    if (type == st->tiled_type && type != NULL) {
        return sw_tiled_class();
    }
    return swpy_carrier_class_tag(st, type);
}

/* The weak reference's callback: the class is going, forget its tag.
 * self is (tag as int, guards dict). */
static PyObject *guard_fired(PyObject *self, PyObject *ref) {
    PyObject *key = PyTuple_GET_ITEM(self, 0);
    PyObject *guards = PyTuple_GET_ITEM(self, 1);
    sw_capabilities_forget(PyLong_AsVoidPtr(key));
    PyObject *cur = PyDict_GetItemWithError(guards, key);
    if (cur == ref && PyDict_DelItem(guards, key) < 0) {
        PyErr_Clear();
    }
    PyErr_Clear();
    Py_RETURN_NONE;
}

static PyMethodDef guard_def = {"_capability_guard", guard_fired, METH_O, NULL};

/* Makes sure the library forgets type's tag when type goes. */
static int ensure_guard(PyObject *module, swpy_state *st, PyTypeObject *type) {
    const void *tag = class_tag(st, type);
    if (tag != (const void *)type) {
        return 0; /* a shipped backend: never forgotten */
    }
    PyObject *guards = PyObject_GetAttrString(module, GUARDS);
    if (guards == NULL) {
        return -1;
    }
    PyObject *key = PyLong_FromVoidPtr((void *)type);
    if (key == NULL) {
        Py_DECREF(guards);
        return -1;
    }
    int rc = -1;
    PyObject *cur = PyDict_GetItemWithError(guards, key);
    if (cur != NULL && PyWeakref_GetObject(cur) == (PyObject *)type) {
        rc = 0;
        goto done;
    }
    if (PyErr_Occurred()) {
        goto done;
    }
    /* No guard, or a dead class's at this address: that class was
     * forgotten when it went, so this one starts fresh. */
    PyObject *ctx = PyTuple_Pack(2, key, guards);
    if (ctx == NULL) {
        goto done;
    }
    PyObject *cb = PyCFunction_New(&guard_def, ctx);
    Py_DECREF(ctx);
    if (cb == NULL) {
        goto done;
    }
    PyObject *ref = PyWeakref_NewRef((PyObject *)type, cb);
    Py_DECREF(cb);
    if (ref == NULL) {
        goto done;
    }
    rc = PyDict_SetItem(guards, key, ref);
    Py_DECREF(ref);
done:
    Py_DECREF(key);
    Py_DECREF(guards);
    return rc;
}

const void *swpy_capability_tag(swpy_state *st, PyTypeObject *type) {
    return class_tag(st, type);
}

int swpy_capability_guard(PyObject *module, swpy_state *st,
                          PyTypeObject *type) {
    return ensure_guard(module, st, type);
}

static int type_arg(PyObject *o, PyTypeObject **out) {
    if (!PyType_Check(o)) {
        PyErr_SetString(PyExc_TypeError, "must be a carrier class");
        return -1;
    }
    *out = (PyTypeObject *)o;
    return 0;
}

int swpy_capability_constructed(PyObject *self) {
    PyTypeObject *type = Py_TYPE(self);
    PyObject *module = PyType_GetModuleByDef(type, &swpy_module_def);
    if (module == NULL) {
        return -1;
    }
    swpy_state *st = swpy_module_state(module);
    const void *tag = class_tag(st, type);
    if (tag != (const void *)type) {
        return 0; /* shipped: sealed already */
    }
    if (ensure_guard(module, st, type) < 0) {
        return -1;
    }
    return swpy_check(sw_capabilities_observe(tag, SW_OBSERVE_CONSTRUCTION));
}

/* ---------------------------------------------------------- functions */

static PyObject *names_tuple(const char *(*name)(int), int count) {
    PyObject *t = PyTuple_New(count);
    if (t == NULL) {
        return NULL;
    }
    for (int i = 0; i < count; i++) {
        PyObject *s = PyUnicode_FromString(name(i));
        if (s == NULL) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, s);
    }
    return t;
}

static const char *arith_name(int i) {
    return sw_arithmetic_name((sw_arithmetic)i);
}
static const char *accum_name(int i) {
    return sw_accumulation_name((sw_accumulation)i);
}
static const char *role_name(int i) {
    return sw_operand_role_name((sw_operand_role)i);
}

static PyObject *plan_names(PyObject *module, PyObject *unused) {
    return Py_BuildValue(
        "{sNsNsN}", "arithmetic", names_tuple(arith_name, SW_ARITHMETIC_COUNT),
        "accumulation", names_tuple(accum_name, SW_ACCUMULATION_COUNT), "role",
        names_tuple(role_name, SW_OPERAND_ROLE_COUNT));
}

static PyObject *plan_operations(PyObject *module, PyObject *unused) {
    PyObject *r = PyList_New(0);
    if (r == NULL) {
        return NULL;
    }
    for (int32_t id = 0; id < sw_op_count(); id++) {
        if (!sw_op_has_plan(id)) {
            continue;
        }
        const sw_op_info *info = sw_op_info_get(id);
        PyObject *ops = PyTuple_New(info->noperands);
        if (ops == NULL) {
            goto fail;
        }
        for (int32_t i = 0; i < info->noperands; i++) {
            const sw_operand_spec *o = &info->operands[i];
            PyObject *t =
                Py_BuildValue("(ss)", o->name,
                              sw_operand_role_name(o->kind == SW_OPERAND_TENSOR
                                                       ? SW_ROLE_TENSOR
                                                       : SW_ROLE_WEAK_SCALAR));
            if (t == NULL) {
                Py_DECREF(ops);
                goto fail;
            }
            PyTuple_SET_ITEM(ops, i, t);
        }
        PyObject *e = Py_BuildValue("(sssN)", info->plan_name, info->name,
                                    info->title, ops);
        if (e == NULL || PyList_Append(r, e) < 0) {
            Py_XDECREF(e);
            goto fail;
        }
        Py_DECREF(e);
    }
    PyObject *t = PyList_AsTuple(r);
    Py_DECREF(r);
    return t;
fail:
    Py_DECREF(r);
    return NULL;
}

/* One operand of a resolution: a DType (a tensor) or a number. */
static int input_of(swpy_state *st, PyObject *o, Py_ssize_t i,
                    sw_plan_input *in) {
    int d = dtype_index(st, o);
    if (d >= 0) {
        *in = sw_plan_tensor((sw_dtype)d);
        return 0;
    }
    if (PyBool_Check(o)) {
        *in = sw_plan_scalar_value(SW_SCALAR_BOOL, o == Py_True ? 1.0 : 0.0);
        return 0;
    }
    int integral = PyIndex_Check(o);
    if (!integral && !PyFloat_Check(o) &&
        (Py_TYPE(o)->tp_as_number == NULL ||
         Py_TYPE(o)->tp_as_number->nb_float == NULL)) {
        PyErr_Format(PyExc_TypeError,
                     "operand %zd must be a DType or a numerical scalar, not "
                     "'%.200s'",
                     i, Py_TYPE(o)->tp_name);
        return -1;
    }
    double v = PyFloat_AsDouble(o);
    if (v == -1.0 && PyErr_Occurred()) {
        if (!integral || !PyErr_ExceptionMatches(PyExc_OverflowError)) {
            return -1;
        }
        /* An integer beyond every double: not whole as float32. */
        PyErr_Clear();
        v = INFINITY;
    }
    sw_plan_input s =
        sw_plan_scalar_value(integral ? SW_SCALAR_INTEGRAL : SW_SCALAR_REAL, v);
    if (integral) {
        /* The sign of the integer itself, not of its rounding. */
        PyObject *zero = PyLong_FromLong(0);
        if (zero == NULL) {
            return -1;
        }
        int ge = PyObject_RichCompareBool(o, zero, Py_GE);
        Py_DECREF(zero);
        if (ge < 0) {
            return -1;
        }
        s.traits = ge ? s.traits | SW_SCALAR_NONNEGATIVE
                      : s.traits & ~SW_SCALAR_NONNEGATIVE;
    }
    *in = s;
    return 0;
}

static PyObject *resolve_plan(PyObject *module, PyObject *const *args,
                              Py_ssize_t nargs) {
    swpy_state *st = swpy_module_state(module);
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "_resolve_plan takes 3 arguments");
        return NULL;
    }
    if (swpy_require_dtypes(st) < 0) {
        return NULL;
    }
    if (!PyUnicode_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "operation name must be a str");
        return NULL;
    }
    const char *name = PyUnicode_AsUTF8(args[0]);
    if (name == NULL) {
        return NULL;
    }
    const sw_op_info *info = sw_op_info_find_plan(name);
    if (info == NULL) {
        PyErr_Format(PyExc_ValueError, "unknown operation '%s'", name);
        return NULL;
    }
    if (!PyTuple_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "operands must be a tuple");
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(args[1]);
    sw_plan_input in[SW_PLAN_MAX_OPERANDS];
    for (Py_ssize_t i = 0; i < n && i < SW_PLAN_MAX_OPERANDS; i++) {
        if (input_of(st, PyTuple_GET_ITEM(args[1], i), i, &in[i]) < 0) {
            return NULL;
        }
    }
    sw_dtype acc = SW_PLAN_NO_DTYPE;
    if (args[2] != Py_None) {
        int d = dtype_index(st, args[2]);
        if (d < 0) {
            PyErr_Format(PyExc_TypeError,
                         "accumulator_dtype must be a DType, not '%.200s'",
                         Py_TYPE(args[2])->tp_name);
            return NULL;
        }
        acc = (sw_dtype)d;
    }
    /* More operands than any plan has: the library states the arity. */
    int32_t count =
        n > SW_PLAN_MAX_OPERANDS ? SW_PLAN_MAX_OPERANDS + 1 : (int32_t)n;
    sw_op_plan p;
    sw_status s = sw_op_plan_resolve(info->id, count, in, acc, &p);
    if (s != SW_OK) {
        return swpy_raise(s);
    }
    return raw_from_plan(st, &p);
}

static PyObject *describe_plan(PyObject *module, PyObject *raw) {
    sw_op_plan p;
    if (plan_from_raw(swpy_module_state(module), raw, &p) < 0) {
        return NULL;
    }
    char buf[512];
    sw_op_plan_describe(&p, buf, sizeof buf);
    return PyUnicode_FromString(buf);
}

static PyObject *check_capability(PyObject *module, PyObject *raw) {
    sw_op_plan p;
    if (plan_from_raw(swpy_module_state(module), raw, &p) < 0) {
        return NULL;
    }
    sw_op_capability c;
    sw_op_capability_from_plan(&p, &c);
    sw_status s = sw_op_capability_check(&c);
    if (s != SW_OK) {
        return swpy_raise(s);
    }
    Py_RETURN_NONE;
}

static PyObject *declare_capabilities(PyObject *module, PyObject *const *args,
                                      Py_ssize_t nargs) {
    swpy_state *st = swpy_module_state(module);
    PyTypeObject *type = NULL;
    if (nargs != 3 || !PyUnicode_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError,
                        "_declare_capabilities takes cls, name, capabilities");
        return NULL;
    }
    if (type_arg(args[0], &type) < 0) {
        return NULL;
    }
    const char *name = PyUnicode_AsUTF8(args[1]);
    if (name == NULL) {
        return NULL;
    }
    sw_op_capability *caps = NULL;
    int64_t n = 0;
    if (swpy_caps_from_raws(st, args[2], &caps, &n) < 0 ||
        ensure_guard(module, st, type) < 0) {
        PyMem_Free(caps);
        return NULL;
    }
    sw_status s = sw_capabilities_declare(class_tag(st, type), name, n, caps);
    PyMem_Free(caps);
    if (s != SW_OK) {
        return swpy_raise(s);
    }
    Py_RETURN_NONE;
}

static PyObject *class_state(PyObject *module, PyObject *cls) {
    PyTypeObject *type = NULL;
    if (type_arg(cls, &type) < 0) {
        return NULL;
    }
    swpy_state *st = swpy_module_state(module);
    return PyLong_FromLong((long)sw_capabilities_state(class_tag(st, type)));
}

/* The list of a source: a snapshot capsule, a class (observed) or an
 * Evictable carrier object (its instance snapshot). */
static int source_list(PyObject *module, PyObject *src, const char *name,
                       sw_capability_list *out) {
    swpy_state *st = swpy_module_state(module);
    if (PyCapsule_CheckExact(src)) {
        sw_capability_snapshot *s = PyCapsule_GetPointer(src, SNAPSHOT_CAPSULE);
        if (s == NULL) {
            return -1;
        }
        return swpy_check(sw_capability_snapshot_get(s, name, out));
    }
    if (PyType_Check(src)) {
        PyTypeObject *type = (PyTypeObject *)src;
        if (ensure_guard(module, st, type) < 0) {
            return -1;
        }
        return swpy_check(sw_capabilities_of_class(class_tag(st, type), out));
    }
    if (swpy_is_carrier(st, src)) {
        sw_carrier *c = swpy_carrier_of(src, Py_TYPE(src)->tp_name);
        if (c == NULL) {
            return -1;
        }
        if (!sw_carrier_is_evictable(c) &&
            !sw_carrier_defined_is_dependent(c)) {
            return source_list(module, (PyObject *)Py_TYPE(src), name, out);
        }
        return swpy_check(sw_carrier_capabilities(c, out));
    }
    PyErr_SetString(PyExc_TypeError,
                    "capability source must be a class, a snapshot or a "
                    "carrier");
    return -1;
}

static int name_arg(PyObject *o, const char **out) {
    if (!PyUnicode_Check(o)) {
        PyErr_SetString(PyExc_TypeError, "name must be a str");
        return -1;
    }
    *out = PyUnicode_AsUTF8(o);
    return *out != NULL ? 0 : -1;
}

static PyObject *caps_list(PyObject *module, PyObject *const *args,
                           Py_ssize_t nargs) {
    const char *name = NULL;
    if (nargs != 2 || name_arg(args[1], &name) < 0) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_TypeError, "_caps_list takes source, name");
        }
        return NULL;
    }
    sw_capability_list l;
    if (source_list(module, args[0], name, &l) < 0) {
        return NULL;
    }
    return raw_list(swpy_module_state(module), l);
}

/* The (source, name, plan) arguments of _caps_match and _caps_reason. */
static int source_plan_args(PyObject *module, PyObject *const *args,
                            Py_ssize_t nargs, const char *fn, const char **name,
                            sw_op_plan *p, sw_capability_list *l) {
    if (nargs != 3 || name_arg(args[1], name) < 0) {
        if (!PyErr_Occurred()) {
            PyErr_Format(PyExc_TypeError, "%s takes source, name, plan", fn);
        }
        return -1;
    }
    if (plan_from_raw(swpy_module_state(module), args[2], p) < 0 ||
        source_list(module, args[0], *name, l) < 0) {
        return -1;
    }
    return 0;
}

static PyObject *caps_match(PyObject *module, PyObject *const *args,
                            Py_ssize_t nargs) {
    const char *name = NULL;
    sw_op_plan p;
    sw_capability_list l;
    if (source_plan_args(module, args, nargs, "_caps_match", &name, &p, &l) <
        0) {
        return NULL;
    }
    const sw_op_capability *m = sw_capability_list_match(l, &p);
    return PyLong_FromSsize_t(m ? (Py_ssize_t)(m - l.items) : -1);
}

static PyObject *caps_reason(PyObject *module, PyObject *const *args,
                             Py_ssize_t nargs) {
    const char *name = NULL;
    sw_op_plan p;
    sw_capability_list l;
    if (source_plan_args(module, args, nargs, "_caps_reason", &name, &p, &l) <
        0) {
        return NULL;
    }
    char buf[1024];
    if (sw_capability_list_reason(l, name, &p, buf, sizeof buf) == 0) {
        Py_RETURN_NONE;
    }
    return PyUnicode_FromString(buf);
}

static void snapshot_destroy(PyObject *capsule) {
    sw_capability_snapshot_free(
        PyCapsule_GetPointer(capsule, SNAPSHOT_CAPSULE));
}

static PyObject *snapshot_new(PyObject *module, PyObject *unused) {
    sw_capability_snapshot *s = NULL;
    sw_status st = sw_capability_snapshot_new(&s);
    if (st != SW_OK) {
        return swpy_raise(st);
    }
    PyObject *c = PyCapsule_New(s, SNAPSHOT_CAPSULE, snapshot_destroy);
    if (c == NULL) {
        sw_capability_snapshot_free(s);
    }
    return c;
}

static PyObject *snapshot_finalize(PyObject *module, PyObject *const *args,
                                   Py_ssize_t nargs) {
    const char *name = NULL;
    if (nargs != 3 || name_arg(args[1], &name) < 0) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_TypeError,
                            "_snapshot_finalize takes snapshot, name, "
                            "capabilities");
        }
        return NULL;
    }
    sw_capability_snapshot *s = PyCapsule_GetPointer(args[0], SNAPSHOT_CAPSULE);
    if (s == NULL) {
        return NULL;
    }
    sw_op_capability *caps = NULL;
    int64_t n = 0;
    if (swpy_caps_from_raws(swpy_module_state(module), args[2], &caps, &n) <
        0) {
        return NULL;
    }
    sw_status st = sw_capability_snapshot_finalize(s, name, n, caps);
    PyMem_Free(caps);
    if (st != SW_OK) {
        return swpy_raise(st);
    }
    Py_RETURN_NONE;
}

static PyMethodDef policy_methods[] = {
    {"_plan_names", plan_names, METH_NOARGS, NULL},
    {"_plan_operations", plan_operations, METH_NOARGS, NULL},
    {"_resolve_plan", (PyCFunction)(void (*)(void))resolve_plan, METH_FASTCALL,
     NULL},
    {"_describe_plan", describe_plan, METH_O, NULL},
    {"_check_capability", check_capability, METH_O, NULL},
    {"_declare_capabilities", (PyCFunction)(void (*)(void))declare_capabilities,
     METH_FASTCALL, NULL},
    {"_class_state", class_state, METH_O, NULL},
    {"_caps_list", (PyCFunction)(void (*)(void))caps_list, METH_FASTCALL, NULL},
    {"_caps_match", (PyCFunction)(void (*)(void))caps_match, METH_FASTCALL,
     NULL},
    {"_caps_reason", (PyCFunction)(void (*)(void))caps_reason, METH_FASTCALL,
     NULL},
    {"_snapshot_new", snapshot_new, METH_NOARGS, NULL},
    {"_snapshot_finalize", (PyCFunction)(void (*)(void))snapshot_finalize,
     METH_FASTCALL, NULL},
    {NULL, NULL, 0, NULL},
};

int swpy_policy_init(PyObject *module, swpy_state *st) {
    if (PyModule_AddFunctions(module, policy_methods) < 0) {
        return -1;
    }
    PyObject *guards = PyDict_New();
    if (guards == NULL) {
        return -1;
    }
    int rc = PyModule_AddObjectRef(module, GUARDS, guards);
    Py_DECREF(guards);
    return rc;
}

/* ------------------------------------------------------ carrier methods */

/* operation_capability.<fn>(self, arg): the Python layer makes the
 * descriptor objects. */
static PyObject *call_layer(const char *fn, PyObject *self, PyObject *arg) {
    PyObject *mod = PyImport_ImportModule(CAPABILITY_MODULE);
    if (mod == NULL) {
        return NULL;
    }
    PyObject *r = PyObject_CallMethod(mod, fn, "OO", self, arg);
    Py_DECREF(mod);
    return r;
}

PyObject *swpy_carrier_operation_capabilities(PyObject *self, PyObject *args,
                                              PyObject *kwds) {
    static char *kwlist[] = {"operation_name", NULL};
    PyObject *name = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|O:operation_capabilities",
                                     kwlist, &name)) {
        return NULL;
    }
    return call_layer("_carrier_capabilities", self, name);
}

PyObject *swpy_carrier_supports_operation_plan(PyObject *self, PyObject *plan) {
    return call_layer("_carrier_supports", self, plan);
}

PyObject *swpy_carrier_unsupported_plan_reason(PyObject *self, PyObject *plan) {
    return call_layer("_carrier_reason", self, plan);
}

PyObject *swpy_carrier_require_operation_plan(PyObject *self, PyObject *plan) {
    return call_layer("_carrier_require", self, plan);
}

PyObject *swpy_carrier_supports_storage_dtype(PyObject *self, PyObject *dtype) {
    swpy_state *st = swpy_state_of_type(Py_TYPE(self));
    if (st == NULL || swpy_require_dtypes(st) < 0) {
        return NULL;
    }
    int d = dtype_index(st, dtype);
    if (d < 0) {
        PyErr_Format(PyExc_TypeError,
                     "storage dtype must be a DType, not '%.200s'",
                     Py_TYPE(dtype)->tp_name);
        return NULL;
    }
    sw_carrier *c = swpy_carrier_of(self, Py_TYPE(self)->tp_name);
    if (c == NULL) {
        return NULL;
    }
    int r = sw_carrier_supports_storage_dtype(c, (sw_dtype)d);
    if (PyErr_Occurred()) {
        return NULL; /* a Python carrier's dtype hook raised */
    }
    return PyBool_FromLong(r);
}
