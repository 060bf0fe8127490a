/*
 * strideweave._native: the CPython face of libstrideweave.
 *
 * Multi-phase initialisation; all state lives in the module object (see
 * module.h), so the module can be loaded more than once (sub-interpreters,
 * reloads) without sharing anything between the copies.
 */
#include "module.h"

#include "errors.h"
#include "layout.h"
#include "strideweave/strideweave.h"

int swpy_require_tree_types(swpy_state *st) {
    if (st->tree_type != NULL) {
        return 0;
    }
    /* Importing the module registers the classes with this extension. */
    PyObject *mod = PyImport_ImportModule("strideweave.core.layout");
    if (mod == NULL) {
        return -1;
    }
    Py_DECREF(mod);
    if (st->tree_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError,
                        "strideweave.core.layout did not register the Tree "
                        "and Node classes with strideweave._native");
        return -1;
    }
    return 0;
}

PyDoc_STRVAR(register_tree_types_doc,
             "_register_tree_types($module, tree, node, node_id, /)\n--\n\n"
             "Registers the tree vocabulary used to convert id trees.\n\n"
             "Called once by strideweave.core.layout at import; not part of "
             "the public API.\n\n"
             "Args:\n"
             "    tree: the Tree class (a tuple subclass).\n"
             "    node: the Node enum with members Leaf, Push and Pop.\n"
             "    node_id: the class of Node.id(k) markers.\n\n"
             "Returns:\n"
             "    None.\n");

static PyObject *register_tree_types(PyObject *module, PyObject *const *args,
                                     Py_ssize_t nargs) {
    swpy_state *st = swpy_module_state(module);
    PyObject *leaf = NULL, *push = NULL, *pop = NULL;
    if (nargs != 3) {
        PyErr_Format(PyExc_TypeError,
                     "_register_tree_types expected 3 arguments, got %zd",
                     nargs);
        return NULL;
    }
    if (!PyType_Check(args[0]) ||
        !PyType_IsSubtype((PyTypeObject *)args[0], &PyTuple_Type) ||
        !PyType_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError,
                        "_register_tree_types expects the Tree class, the "
                        "Node enum and the marker class");
        return NULL;
    }
    leaf = PyObject_GetAttrString(args[1], "Leaf");
    if (leaf == NULL) {
        goto fail;
    }
    push = PyObject_GetAttrString(args[1], "Push");
    if (push == NULL) {
        goto fail;
    }
    pop = PyObject_GetAttrString(args[1], "Pop");
    if (pop == NULL) {
        goto fail;
    }
    Py_XSETREF(st->tree_type, Py_NewRef(args[0]));
    Py_XSETREF(st->node_id_type, Py_NewRef(args[2]));
    Py_XSETREF(st->node_leaf, leaf);
    Py_XSETREF(st->node_push, push);
    Py_XSETREF(st->node_pop, pop);
    Py_RETURN_NONE;
fail:
    Py_XDECREF(leaf);
    Py_XDECREF(push);
    Py_XDECREF(pop);
    return NULL;
}

PyDoc_STRVAR(debug_live_allocs_doc,
             "_debug_live_allocs($module, /)\n--\n\n"
             "The number of live libstrideweave allocations, process-wide.\n\n"
             "Tests compare it before and after a call to prove that the C "
             "library leaked nothing.\n\n"
             "Returns:\n"
             "    int: allocations made and not yet freed.\n");

static PyObject *debug_live_allocs(PyObject *module, PyObject *unused) {
    return PyLong_FromLongLong(sw_debug_live_allocs());
}

PyDoc_STRVAR(debug_fail_alloc_after_doc,
             "_debug_fail_alloc_after($module, n, /)\n--\n\n"
             "Fault injection: the library allocator succeeds n more times, "
             "then fails.\n\n"
             "Args:\n"
             "    n: allocations that still succeed; a negative n disables "
             "the hook.\n\n"
             "Returns:\n"
             "    None.\n");

static PyObject *debug_fail_alloc_after(PyObject *module, PyObject *arg) {
    long long n = PyLong_AsLongLong(arg);
    if (n == -1 && PyErr_Occurred()) {
        return NULL;
    }
    sw_debug_fail_alloc_after((int64_t)n);
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"_register_tree_types", (PyCFunction)(void (*)(void))register_tree_types,
     METH_FASTCALL, register_tree_types_doc},
    {"_debug_live_allocs", debug_live_allocs, METH_NOARGS,
     debug_live_allocs_doc},
    {"_debug_fail_alloc_after", debug_fail_alloc_after, METH_O,
     debug_fail_alloc_after_doc},
    {NULL, NULL, 0, NULL},
};

static int module_exec(PyObject *module) {
    swpy_state *st = swpy_module_state(module);
    if (swpy_layout_init_types(module, st) < 0) {
        return -1;
    }
    if (PyModule_AddStringConstant(module, "c_version", sw_version()) < 0) {
        return -1;
    }
    return 0;
}

static int module_traverse(PyObject *module, visitproc visit, void *arg) {
    swpy_state *st = swpy_module_state(module);
    if (st == NULL) {
        return 0;
    }
    Py_VISIT(st->shape_type);
    Py_VISIT(st->stride_type);
    Py_VISIT(st->layout_type);
    Py_VISIT(st->tree_type);
    Py_VISIT(st->node_id_type);
    Py_VISIT(st->node_leaf);
    Py_VISIT(st->node_push);
    Py_VISIT(st->node_pop);
    return 0;
}

static int module_clear(PyObject *module) {
    swpy_state *st = swpy_module_state(module);
    if (st == NULL) {
        return 0;
    }
    Py_CLEAR(st->shape_type);
    Py_CLEAR(st->stride_type);
    Py_CLEAR(st->layout_type);
    Py_CLEAR(st->tree_type);
    Py_CLEAR(st->node_id_type);
    Py_CLEAR(st->node_leaf);
    Py_CLEAR(st->node_push);
    Py_CLEAR(st->node_pop);
    return 0;
}

static void module_free(void *module) {
    module_clear((PyObject *)module);
}

/* Slot values are void *; see the note in layout.c. */
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
#endif
static PyModuleDef_Slot module_slots[] = {
    {Py_mod_exec, module_exec},
#if PY_VERSION_HEX >= 0x030C0000
    {Py_mod_multiple_interpreters, Py_MOD_PER_INTERPRETER_GIL_SUPPORTED},
#endif
    {0, NULL},
};
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

PyDoc_STRVAR(
    module_doc,
    "The C extension behind strideweave: layouts and their algebra.\n\n"
    "Import the public names from strideweave or its submodules; "
    "this module is an implementation detail.");

static struct PyModuleDef native_module = {
    PyModuleDef_HEAD_INIT,         .m_name = "strideweave._native",
    .m_doc = module_doc,           .m_size = sizeof(swpy_state),
    .m_methods = module_methods,   .m_slots = module_slots,
    .m_traverse = module_traverse, .m_clear = module_clear,
    .m_free = module_free,
};

PyMODINIT_FUNC PyInit__native(void);

PyMODINIT_FUNC PyInit__native(void) {
    return PyModuleDef_Init(&native_module);
}
