/*
 * Module state of strideweave._native, shared by the extension's sources.
 *
 * Everything the extension keeps between calls lives here, one copy per
 * module object: the heap types and the Python classes of the tree vocabulary
 * (Tree, Node, the Node.id marker) that strideweave.core.layout registers when
 * it is imported.
 */
#ifndef SWPY_MODULE_H
#define SWPY_MODULE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

typedef struct swpy_state {
    PyTypeObject *shape_type;
    PyTypeObject *stride_type;
    PyTypeObject *layout_type;
    /* Registered by strideweave.core.layout; NULL until then. */
    PyObject *tree_type;    /* Tree, a tuple subclass */
    PyObject *node_id_type; /* the class of Node.id(k) markers */
    PyObject *node_leaf;    /* Node.Leaf */
    PyObject *node_push;    /* Node.Push */
    PyObject *node_pop;     /* Node.Pop */
} swpy_state;

/* The state of a module made from this extension's definition. */
static inline swpy_state *swpy_module_state(PyObject *module) {
    return (swpy_state *)PyModule_GetState(module);
}

/*
 * Makes sure the tree vocabulary is registered, importing
 * strideweave.core.layout (which registers it) if needed. Returns 0, or -1
 * with an exception set.
 */
int swpy_require_tree_types(swpy_state *st);

#endif /* SWPY_MODULE_H */
