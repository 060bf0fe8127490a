/*
 * The functional operations of strideweave.functional, and the helpers
 * the Tensor operators share with them.
 *
 * Each function checks its arguments as the reference's dispatch helpers
 * do (a unary operation needs a Tensor, a binary one two Tensors over
 * carriers of exactly the same class), dispatches the canonical name on
 * the (lhs) tensor's carrier and runs the operation as a recorded forward
 * (swpy_op_call, by operation number).
 */
#ifndef SWPY_FUNCTIONAL_H
#define SWPY_FUNCTIONAL_H

#include "module.h"

/* Adds the functions to the module. Returns 0, or -1 with an exception. */
int swpy_functional_init(PyObject *module, swpy_state *st);

PyObject *swpy_fn_binary(swpy_state *st, int32_t id, PyObject *lhs,
                         PyObject *rhs);
PyObject *swpy_fn_mul(swpy_state *st, PyObject *tensor, PyObject *scalar);
PyObject *swpy_fn_neg(swpy_state *st, PyObject *tensor);
PyObject *swpy_fn_pow(swpy_state *st, PyObject *tensor, PyObject *exponent);
PyObject *swpy_fn_view(swpy_state *st, PyObject *tensor, PyObject *key);

#endif /* SWPY_FUNCTIONAL_H */
