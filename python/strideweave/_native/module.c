/*
 * strideweave._native: the CPython face of libstrideweave.
 *
 * Multi-phase initialisation; all state lives in the module object (see
 * module.h), so the module can be loaded more than once (sub-interpreters,
 * reloads) without sharing anything between the copies.
 */
#include "module.h"

#include <limits.h>

#include "py_carrier.h"
#include "docs.h"
#include "errors.h"
#include "py_extension.h"
#include "py_kernels.h"
#include "py_evictable.h"
#include "gil.h"
#include "py_einops.h"
#include "functional.h"
#include "py_layout.h"
#include "move.h"
#include "operation.h"
#include "plans.h"
#include "strideweave/strideweave.h"
#include "py_representation.h"
#include "py_tensor.h"

_Thread_local PyThreadState *swpy_nogil_state = NULL;

void swpy_peer_incref(void *peer) {
    swpy_gil g = swpy_gil_ensure();
    Py_INCREF((PyObject *)peer);
    swpy_gil_release(g);
}

void swpy_peer_decref(void *peer) {
    /* The object may go now: its deallocator runs Python code. */
    swpy_gil g = swpy_gil_ensure();
    Py_DECREF((PyObject *)peer);
    swpy_gil_release(g);
}

swpy_state *swpy_state_of_type(PyTypeObject *type) {
    PyObject *module = PyType_GetModuleByDef(type, &swpy_module_def);
    return module != NULL ? swpy_module_state(module) : NULL;
}

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

int swpy_require_dtypes(swpy_state *st) {
    if (st->dtype_enum != NULL) {
        return 0;
    }
    /* Importing the module registers the enum with this extension. */
    PyObject *mod = PyImport_ImportModule("strideweave.carriers.dtype");
    if (mod == NULL) {
        return -1;
    }
    Py_DECREF(mod);
    if (st->dtype_enum == NULL) {
        PyErr_SetString(PyExc_RuntimeError,
                        "strideweave.carriers.dtype did not register DType "
                        "with strideweave._native");
        return -1;
    }
    return 0;
}

static PyObject *register_dtype(PyObject *module, PyObject *enum_type) {
    swpy_state *st = swpy_module_state(module);
    PyObject *members[SW_DTYPE_COUNT] = {NULL};
    if (!PyType_Check(enum_type)) {
        PyErr_SetString(PyExc_TypeError,
                        "_register_dtype expects the DType enum class");
        return NULL;
    }
    for (int d = 0; d < SW_DTYPE_COUNT; d++) {
        members[d] =
            PyObject_GetAttrString(enum_type, sw_dtype_name((sw_dtype)d));
        if (members[d] == NULL) {
            for (int k = 0; k < d; k++) {
                Py_DECREF(members[k]);
            }
            return NULL;
        }
    }
    Py_XSETREF(st->dtype_enum, Py_NewRef(enum_type));
    for (int d = 0; d < SW_DTYPE_COUNT; d++) {
        Py_XSETREF(st->dtypes[d], members[d]);
    }
    Py_RETURN_NONE;
}

static PyObject *debug_fail_io_after(PyObject *module, PyObject *arg) {
    long long n = PyLong_AsLongLong(arg);
    if (n == -1 && PyErr_Occurred()) {
        return NULL;
    }
    sw_debug_fail_io_after((int64_t)n);
    Py_RETURN_NONE;
}

static PyObject *file_remove_temporaries(PyObject *module, PyObject *unused) {
    sw_file_remove_temporaries();
    Py_RETURN_NONE;
}

static PyObject *debug_live_allocs(PyObject *module, PyObject *unused) {
    return PyLong_FromLongLong(sw_debug_live_allocs());
}

static PyObject *debug_fail_alloc_after(PyObject *module, PyObject *arg) {
    long long n = PyLong_AsLongLong(arg);
    if (n == -1 && PyErr_Occurred()) {
        return NULL;
    }
    sw_debug_fail_alloc_after((int64_t)n);
    Py_RETURN_NONE;
}

/* The thread count: the rule (range, default, environment) is the
 * library's; this only converts the argument. */
static PyObject *set_num_threads(PyObject *module, PyObject *arg) {
    if (!PyLong_Check(arg)) {
        PyErr_Format(PyExc_TypeError,
                     "set_num_threads() argument must be an int, not %.200s",
                     Py_TYPE(arg)->tp_name);
        return NULL;
    }
    int overflow = 0;
    long long n = PyLong_AsLongLongAndOverflow(arg, &overflow);
    if (n == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (overflow || n < INT_MIN || n > INT_MAX) {
        /* Out of the library's int: no valid count is that large. */
        PyErr_Format(PyExc_ValueError,
                     "the number of threads must be between 1 and %d, not %S",
                     SW_MAX_THREADS, arg);
        return NULL;
    }
    sw_status st = sw_set_num_threads((int)n);
    if (st != SW_OK) {
        return swpy_raise(st);
    }
    Py_RETURN_NONE;
}

static PyObject *get_num_threads(PyObject *module, PyObject *unused) {
    return PyLong_FromLong(sw_get_num_threads());
}

static PyMethodDef module_methods[] = {
    {"set_num_threads", set_num_threads, METH_O, NULL},
    {"get_num_threads", get_num_threads, METH_NOARGS, NULL},
    {"_debug_allocate_like",
     (PyCFunction)(void (*)(void))swpy_debug_allocate_like, METH_FASTCALL,
     NULL},
    {"_debug_new_like", (PyCFunction)(void (*)(void))swpy_debug_new_like,
     METH_FASTCALL, NULL},
    {"_register_tree_types", (PyCFunction)(void (*)(void))register_tree_types,
     METH_FASTCALL, NULL},
    {"_register_dtype", register_dtype, METH_O, NULL},
    {"_debug_fail_io_after", debug_fail_io_after, METH_O, NULL},
    {"_file_remove_temporaries", file_remove_temporaries, METH_NOARGS, NULL},
    {"_debug_live_allocs", debug_live_allocs, METH_NOARGS, NULL},
    {"_debug_fail_alloc_after", debug_fail_alloc_after, METH_O, NULL},
    {NULL, NULL, 0, NULL},
};

static int module_exec(PyObject *module) {
    swpy_state *st = swpy_module_state(module);
    atomic_init(&st->backward_owner, 0);
    st->backward_lock = PyThread_allocate_lock();
    if (st->backward_lock == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (int i = 0; i < SWPY_SCATTER_STRIPES; i++) {
        st->scatter_locks[i] = PyThread_allocate_lock();
        if (st->scatter_locks[i] == NULL) {
            PyErr_NoMemory();
            return -1;
        }
    }
    if (swpy_layout_init_types(module, st) < 0 ||
        swpy_carrier_init_types(module, st) < 0 ||
        swpy_tensor_init_type(module, st) < 0 ||
        swpy_representation_init(module, st) < 0 ||
        swpy_operation_init_types(module, st) < 0 ||
        swpy_evictable_init_types(module, st) < 0 ||
        swpy_functional_init(module, st) < 0 ||
        swpy_einops_init(module, st) < 0 || swpy_move_init(module, st) < 0 ||
        swpy_profile_init(module, st) < 0 || swpy_policy_init(module, st) < 0 ||
        swpy_definition_init(module, st) < 0 ||
        swpy_extension_init(module, st) < 0 ||
        swpy_kernels_init(module, st) < 0 || swpy_tiled_init(module, st) < 0 ||
        swpy_distributed_init(module, st) < 0) {
        return -1;
    }
    if (PyModule_AddStringConstant(module, "c_version", sw_version()) < 0) {
        return -1;
    }
    return swpy_docs_apply(module);
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
    Py_VISIT(st->carrier_type);
    Py_VISIT(st->cpu_type);
    Py_VISIT(st->generic_type);
    Py_VISIT(st->file_type);
    Py_VISIT(st->blockdev_type);
    Py_VISIT(st->blockdev_device_type);
    Py_VISIT(st->opencl_type);
    Py_VISIT(st->evictable_type);
    Py_VISIT(st->tiled_type);
    Py_VISIT(st->evictable_op_type);
    Py_VISIT(st->tiled_op_types[0]);
    Py_VISIT(st->tiled_op_types[1]);
    Py_VISIT(st->tensor_type);
    Py_VISIT(st->tensor_index_error);
    Py_VISIT(st->cpu_placeholder);
    Py_VISIT(st->dtype_enum);
    for (int d = 0; d < SW_DTYPE_COUNT; d++) {
        Py_VISIT(st->dtypes[d]);
    }
    Py_VISIT(st->path_type);
    Py_VISIT(st->operation_type);
    Py_VISIT(st->native_op_type);
    for (int i = 0; i < SW_NATIVE_OP_SLOTS; i++) {
        Py_VISIT(st->op_types[i]);
    }
    for (int i = 0; i < SWPY_EINOPS_CLASSES; i++) {
        Py_VISIT(st->einops_classes[i]);
    }
    for (int i = 0; i < SWPY_EINOPS_CACHES; i++) {
        Py_VISIT(st->einops_cache[i]);
    }
    Py_VISIT(st->move_op_type);
    for (int i = 0; i < SWPY_MOVE_TYPES; i++) {
        Py_VISIT(st->move_types[i]);
    }
    Py_VISIT(st->move_classes);
    Py_VISIT(st->move_registered);
    Py_VISIT(st->await_result_type);
    Py_VISIT(st->await_move_type);
    Py_VISIT(st->await_projection_type);
    Py_VISIT(st->await_residency_type);
    Py_VISIT(st->profiler_type);
    return 0;
}

static int module_clear(PyObject *module) {
    swpy_state *st = swpy_module_state(module);
    if (st == NULL) {
        return 0;
    }
    /* First: it maps carrier classes to keys with the types below. */
    swpy_move_clear(st);
    Py_CLEAR(st->shape_type);
    Py_CLEAR(st->stride_type);
    Py_CLEAR(st->layout_type);
    Py_CLEAR(st->tree_type);
    Py_CLEAR(st->node_id_type);
    Py_CLEAR(st->node_leaf);
    Py_CLEAR(st->node_push);
    Py_CLEAR(st->node_pop);
    Py_CLEAR(st->carrier_type);
    Py_CLEAR(st->cpu_type);
    Py_CLEAR(st->generic_type);
    Py_CLEAR(st->file_type);
    Py_CLEAR(st->blockdev_type);
    Py_CLEAR(st->blockdev_device_type);
    Py_CLEAR(st->opencl_type);
    Py_CLEAR(st->evictable_type);
    Py_CLEAR(st->tiled_type);
    Py_CLEAR(st->evictable_op_type);
    Py_CLEAR(st->tiled_op_types[0]);
    Py_CLEAR(st->tiled_op_types[1]);
    Py_CLEAR(st->tensor_type);
    Py_CLEAR(st->tensor_index_error);
    Py_CLEAR(st->cpu_placeholder);
    Py_CLEAR(st->dtype_enum);
    for (int d = 0; d < SW_DTYPE_COUNT; d++) {
        Py_CLEAR(st->dtypes[d]);
    }
    Py_CLEAR(st->path_type);
    Py_CLEAR(st->str_size);
    Py_CLEAR(st->str_dtype);
    Py_CLEAR(st->str_get_value);
    Py_CLEAR(st->str_set_value);
    Py_CLEAR(st->str_is_mutable_hook);
    Py_CLEAR(st->str_release_hook);
    Py_CLEAR(st->str_allocate_like);
    Py_CLEAR(st->str_new_like);
    Py_CLEAR(st->str_mutable);
    Py_CLEAR(st->str_empty);
    Py_CLEAR(st->operation_type);
    Py_CLEAR(st->native_op_type);
    for (int i = 0; i < SW_NATIVE_OP_SLOTS; i++) {
        Py_CLEAR(st->op_types[i]);
    }
    for (int i = 0; i < SW_OP_BUILTIN_COUNT; i++) {
        for (int k = 0; k < SWPY_MAX_OPERANDS; k++) {
            Py_CLEAR(st->operand_keys[i][k]);
        }
    }
    Py_CLEAR(st->profiler_type);
    Py_CLEAR(st->str_forward_hook);
    Py_CLEAR(st->str_backward);
    Py_CLEAR(st->str_dispatch_hook);
    Py_CLEAR(st->str_output_layout);
    Py_CLEAR(st->str_mapping_layout);
    Py_CLEAR(st->str_mapping_offset);
    Py_CLEAR(st->str_saved_values);
    for (int i = 0; i < SWPY_EINOPS_CLASSES; i++) {
        Py_CLEAR(st->einops_classes[i]);
    }
    Py_CLEAR(st->str_id);
    for (int i = 0; i < SWPY_EINOPS_CACHES; i++) {
        Py_CLEAR(st->einops_cache[i]);
    }
    return 0;
}

static void module_free(void *module) {
    module_clear((PyObject *)module);
    swpy_state *st = swpy_module_state((PyObject *)module);
    if (st != NULL) {
        swpy_operation_free_state(st);
        if (st->backward_lock != NULL) {
            PyThread_free_lock(st->backward_lock);
            st->backward_lock = NULL;
        }
        for (int i = 0; i < SWPY_SCATTER_STRIPES; i++) {
            if (st->scatter_locks[i] != NULL) {
                PyThread_free_lock(st->scatter_locks[i]);
                st->scatter_locks[i] = NULL;
            }
        }
    }
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

struct PyModuleDef swpy_module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "strideweave._native",
    .m_doc = NULL,
    .m_size = sizeof(swpy_state),
    .m_methods = module_methods,
    .m_slots = module_slots,
    .m_traverse = module_traverse,
    .m_clear = module_clear,
    .m_free = module_free,
};

PyMODINIT_FUNC PyInit__native(void);

PyMODINIT_FUNC PyInit__native(void) {
    return PyModuleDef_Init(&swpy_module_def);
}
