/*
 * Module state of strideweave._native, shared by the extension's sources.
 *
 * Everything the extension keeps between calls lives here, one copy per
 * module object: the heap types, the Python classes of the tree vocabulary
 * (Tree, Node, the Node.id marker) that strideweave.core.layout registers when
 * it is imported, the DType members that strideweave.carriers.dtype registers,
 * and interned method names for the calls into Python-implemented carriers.
 *
 * Carrier, tensor and operation objects are the peers of library objects
 * (see py_carrier.h); gc.c says how the cycle collector sees through the
 * references between them.
 */
#ifndef SWPY_MODULE_H
#define SWPY_MODULE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pythread.h>
#include <stdatomic.h>

#include "strideweave/carrier.h"
#include "strideweave/op.h"
#include "strideweave/registry.h"

/* The most operands of a built-in operation (rearrange's three). */
#define SWPY_MAX_OPERANDS 3

/* The classes strideweave.einops registers and the command kinds cached. */
#define SWPY_EINOPS_CLASSES 5
#define SWPY_EINOPS_CACHES 3

#define SWPY_SCATTER_STRIPES 16
/* The native move classes (move.c): elementwise and the bulk pairs. */
#define SWPY_MOVE_TYPES 5

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
    /* Carriers and tensors. */
    PyTypeObject *carrier_type;
    PyTypeObject *cpu_type;
    PyTypeObject *generic_type;
    PyTypeObject *file_type;
    /* BlockDeviceCarrier and BlockDevice (block_device.c). */
    PyTypeObject *blockdev_type;
    PyTypeObject *blockdev_device_type;
    PyTypeObject *evictable_type;
    PyTypeObject *opencl_type;
    /* strideweave.TiledEvictable (a Python class over the library's
     * definition-backed carrier), registered at import; or NULL. */
    PyTypeObject *tiled_type;
    PyTypeObject *tensor_type;
    /* TensorIndexError (IndexError and ValueError), see tensor.c. */
    PyObject *tensor_index_error;
    /* The CPU object without a carrier that stands for the carrier object
     * of a result until it is made (see tensor.h). */
    PyObject *cpu_placeholder;
    /* Registered by strideweave.carriers.dtype; NULL until then. The
     * members are indexed by sw_dtype. */
    PyObject *dtype_enum;
    PyObject *dtypes[SW_DTYPE_COUNT];
    /* pathlib.Path, imported on first use. */
    PyObject *path_type;
    /* Interned names of the hooks a Python carrier implements. */
    PyObject *str_size;
    PyObject *str_dtype;
    PyObject *str_get_value;
    PyObject *str_set_value;
    PyObject *str_is_mutable_hook; /* "_is_mutable" */
    PyObject *str_release_hook;    /* "_release" */
    PyObject *str_allocate_like;
    PyObject *str_new_like;
    PyObject *str_mutable;
    PyObject *str_empty;
    /* Operations (see operation.h). */
    PyTypeObject *operation_type;
    /* The class of native operations of no known kind (a fallback). */
    PyTypeObject *native_op_type;
    /* EvictableOperation, the adapter of Evictable carriers. */
    PyTypeObject *evictable_op_type;
    /* _ProjectionOperation and _ScatterOperation (TiledEvictable). */
    PyTypeObject *tiled_op_types[2];
    /* One Python class per native operation class, by registry slot
     * (NULL for an empty slot). */
    PyTypeObject *op_types[SW_NATIVE_OP_SLOTS];
    /* The interned names of every built-in operation's operands, the keys
     * under which op.ctx keeps them. */
    PyObject *operand_keys[SW_OP_BUILTIN_COUNT][SWPY_MAX_OPERANDS];
    /* The backend classes of the built-in carriers (operations record
     * them as their carrier tag) and carriers used to make native
     * operations directly through a backend's dispatch slot. */
    const sw_carrier_class *cpu_class;
    const sw_carrier_class *generic_class;
    sw_carrier *cpu_template;
    sw_carrier *generic_template;
    /* Serialises reverse passes and .grad writes of this interpreter:
     * a pass runs without the GIL, and the library wants writes to one
     * tensor serialised. Re-entrant through backward_owner (the thread
     * identifier of the holder, 0 when free). */
    PyThread_type_lock backward_lock;
    _Atomic unsigned long backward_owner;
    /* Scatters into one CPU carrier run one at a time (see cpu.c): the
     * lock of stripe (carrier address / 64) % SWPY_SCATTER_STRIPES. */
    PyThread_type_lock scatter_locks[SWPY_SCATTER_STRIPES];
    /* strideweave.profiling's ProfilerSession (see profile.c). */
    PyTypeObject *profiler_type;
    /* Interned names. */
    PyObject *str_forward_hook;  /* "_forward" */
    PyObject *str_backward;      /* "backward" */
    PyObject *str_dispatch_hook; /* "_dispatch_op" */
    PyObject *str_output_layout;
    PyObject *str_mapping_layout;
    PyObject *str_mapping_offset;
    PyObject *str_saved_values;
    /* strideweave.einops (see einops.c): the classes it registers (NULL
     * until it is imported) and, per command kind (rearrange, reduce,
     * einsum), the dict of compiled commands: str -> entry tuple. */
    PyObject *einops_classes[SWPY_EINOPS_CLASSES];
    /* "id", the attribute of Node.id(k) markers (interned, so that reading
     * it hits the type's attribute cache). */
    PyObject *str_id;
    PyObject *einops_cache[SWPY_EINOPS_CACHES];
    /* Moves (see move.h): MoveOperation and the three built-in move
     * classes; the library move class of each Python subclass (type ->
     * capsule, keyed weakly: it goes with the class); the pairs registered from
     * Python ((source, destination)
     * -> operation class), kept alive while the library registry names
     * them; the completion handle types. */
    PyTypeObject *move_op_type;
    PyTypeObject *move_types[SWPY_MOVE_TYPES];
    PyObject *move_classes;
    PyObject *move_registered;
    PyTypeObject *await_result_type;
    PyTypeObject *await_move_type;
    PyTypeObject *await_projection_type;
    PyTypeObject *await_residency_type;
    PyObject *str_copy_hook; /* "_copy" */
} swpy_state;

/* The definition of this module, to find its state from a subclass. */
extern struct PyModuleDef swpy_module_def;

/* The state of a module made from this extension's definition. */
static inline swpy_state *swpy_module_state(PyObject *module) {
    return (swpy_state *)PyModule_GetState(module);
}

/*
 * The state of the module that defined type or one of its bases: works
 * for Python subclasses of the extension's types. Returns NULL with an
 * exception set if no base comes from this module.
 */
swpy_state *swpy_state_of_type(PyTypeObject *type);

/*
 * Makes sure the tree vocabulary is registered, importing
 * strideweave.core.layout (which registers it) if needed. Returns 0, or -1
 * with an exception set.
 */
int swpy_require_tree_types(swpy_state *st);

/* The same for DType, registered by strideweave.carriers.dtype. */
int swpy_require_dtypes(swpy_state *st);

/* Adds ProfilerSession and profile_now_ns (profile.c). */
int swpy_profile_init(PyObject *module, swpy_state *st);

/* Operation definitions from Python (definition.c). */
int swpy_definition_init(PyObject *module, swpy_state *st);
/* What a defined operation's autograd node keeps (definition.c): its
 * ResolvedInvocation or None, and its saved operands as a tuple (empty
 * for any other operation, and once its backward has run). */
PyObject *swpy_definition_invocation(sw_op *op);
PyObject *swpy_definition_saved(swpy_state *st, sw_op *op);

#endif /* SWPY_MODULE_H */
