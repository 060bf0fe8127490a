/*
 * The Operation type, its native subclasses, dispatch and the calls that
 * run operations on Python arguments.
 *
 * Every Operation object owns one reference to an sw_op and is its peer
 * (see py_carrier.h for the scheme), so t.autograd_ctx is op. Operation()
 * itself and Python subclasses get an sw_op of the binding's class, whose
 * forward calls the object's _forward(*inputs) with the original Python
 * arguments and whose backward calls backward(gradient). The library's
 * own operations (Generic, the shared layout operations, CPU) reach Python
 * as objects of one Python class per native class: the exported
 * Generic*Operation classes, GenericViewOperation, PermuteOperation and
 * RearrangeOperation, and non-exported CPU classes.
 */
#ifndef SWPY_OPERATION_H
#define SWPY_OPERATION_H

#include "module.h"

#include "strideweave/op.h"

typedef struct {
    PyObject_HEAD
        /* Owned; NULL after the garbage collector cleared the object. */
        sw_op *op;
    PyObject *ctx; /* the dict behind op.ctx */
    PyObject *weakreflist;
    /*
     * Classes the library operation names by address only, kept alive for
     * as long as it may name them (no table in the module pins them): the
     * Python carrier class that dispatched it (its dispatch tag), and the
     * MoveOperation class of the reverse route a recorded move captured.
     * The operation keeps this object alive for as long as it lives (see
     * the peer scheme in py_carrier.h).
     */
    PyObject *dispatch_type;
    PyObject *move_reverse;
} OperationObject;

int swpy_operation_init_types(PyObject *module, swpy_state *st);
/* Releases the library objects of the state (the template carriers). */
void swpy_operation_free_state(swpy_state *st);

int swpy_is_operation(swpy_state *st, PyObject *o);

/*
 * The Python object for an operation the library returned (an owned
 * reference, consumed): its peer if it has one, else a new object of the
 * class of its native class, made its peer.
 */
PyObject *swpy_op_wrap(swpy_state *st, sw_op *owned);

/* A new object of type (an Operation type) for an operation without a
 * peer (owned, consumed), made its peer. */
PyObject *swpy_op_new_object(PyTypeObject *type, sw_op *owned);

/* How swpy_op_run runs an operation. */
typedef enum swpy_run_mode {
    SWPY_RUN_FORWARD = 0, /* sw_op_forward: records the autograd context */
    SWPY_RUN_LOWERED = 1  /* sw_op_execute_lowered: records nothing */
} swpy_run_mode;

/*
 * Runs op on Python arguments and returns the result Tensor. A Python
 * operation receives the arguments as they are (tensors as
 * SW_ARG_TENSOR, everything else as SW_ARG_HOST); a native one gets them
 * converted for its kind (scalars as numbers, view keys, permutation
 * orders, rearrange trees). self is the op's Python object if the caller
 * has one (NULL otherwise); the ctx of a native op is filled from the
 * call (op.ctx values of the reference) when self is given, or when the
 * op was recorded as the result's context. The GIL is released around
 * large native CPU operations.
 */
PyObject *swpy_op_run(swpy_state *st, sw_op *op, PyObject *self,
                      PyObject *const *args, Py_ssize_t nargs,
                      swpy_run_mode mode);

/*
 * Dispatches built-in operation id (an sw_op_id) on the carrier of a
 * Tensor object and runs the operation as a recorded forward on args (the
 * tensor included): the functional forms' path, with no name to look up.
 */
PyObject *swpy_op_call(swpy_state *st, PyObject *tensor, int32_t id,
                       PyObject *const *args, Py_ssize_t nargs);

/* swpy_op_call by name (a registered name, or one that only a Python
 * dispatch route knows). */
PyObject *swpy_op_call_named(swpy_state *st, PyObject *tensor, const char *name,
                             PyObject *const *args, Py_ssize_t nargs);

/* ------------------------------------------------------------- dispatch */

/*
 * Routes dispatch on a carrier whose class is a Python class (a subclass of
 * Carrier, or of a built-in backend) through its _dispatch_op method, with
 * the class as the tag that operations record. Returns 0, or -1 with an
 * exception set.
 */
int swpy_carrier_install_dispatch(swpy_state *st, PyObject *self,
                                  sw_carrier *c);

/* Carrier.dispatch_op(name) and the _dispatch_op of CPU and Generic (the
 * backend's native table). */
PyObject *swpy_carrier_dispatch_op(PyObject *self, PyObject *name);
PyObject *swpy_backend_dispatch_hook(PyObject *self, PyObject *name);

/* execute_lowered_operation(operation, *inputs), the sealed lowered call. */
PyObject *swpy_execute_lowered_operation(PyObject *module,
                                         PyObject *const *args,
                                         Py_ssize_t nargs);

/* ------------------------------------------------------------- profiler */

/*
 * The Python class of a carrier tag recorded by dispatch (a new
 * reference): a built-in backend's class, known if the tag is its address
 * (the dispatch_type of the operation's object), else None.
 */
PyObject *swpy_carrier_tag_type(swpy_state *st, const void *tag,
                                PyObject *known);
/* The tag that carriers of the Python class cls record on dispatch. */
const void *swpy_carrier_class_tag(swpy_state *st, PyTypeObject *cls);
/* The Python class of operations of a library class (a new reference):
 * Operation for Python-defined ones, EvictableOperation for the Evictable
 * adapter, the class of a known native class, or the fallback class. */
PyObject *swpy_op_class_type(swpy_state *st, const sw_op_class *cls);

/* One argument of a library call as the Python object a Python operation
 * sees (a new reference). */
PyObject *swpy_arg_to_py(swpy_state *st, const sw_arg *a);

#endif /* SWPY_OPERATION_H */
