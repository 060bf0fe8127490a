/*
 * Operation plans and capabilities for Python (policy.c): the module
 * functions strideweave.carriers.operation_policy and
 * strideweave.carriers.operation_capability are built on, and the Carrier
 * methods that answer capability and storage-dtype queries.
 */
#ifndef SWPY_PLANS_H
#define SWPY_PLANS_H

#include "module.h"
#include "strideweave/capability.h"

/* Adds the plan and capability functions to the module. */
int swpy_policy_init(PyObject *module, swpy_state *st);

/*
 * Observes the exact class of a carrier object being constructed, which
 * seals an undeclared class empty (see capability.h). Returns 0, or -1
 * with an exception set.
 */
int swpy_capability_constructed(PyObject *self);
/* The capabilities of a sequence of raw entries (an owned PyMem array, or
 * NULL for none); -1 with an exception set. */
int swpy_caps_from_raws(swpy_state *st, PyObject *raws, sw_op_capability **out,
                        int64_t *n);
/* The tag the library keeps a class's capabilities and definition under. */
const void *swpy_capability_tag(swpy_state *st, PyTypeObject *type);
/* Makes sure the library forgets type's class tag when type goes. */
int swpy_capability_guard(PyObject *module, swpy_state *st, PyTypeObject *type);

/* The Carrier methods, one block of carrier.c's method table. */
PyObject *swpy_carrier_operation_capabilities(PyObject *self, PyObject *args,
                                              PyObject *kwds);
PyObject *swpy_carrier_supports_operation_plan(PyObject *self, PyObject *plan);
PyObject *swpy_carrier_unsupported_plan_reason(PyObject *self, PyObject *plan);
PyObject *swpy_carrier_require_operation_plan(PyObject *self, PyObject *plan);
PyObject *swpy_carrier_supports_storage_dtype(PyObject *self, PyObject *dtype);

#endif /* SWPY_PLANS_H */
