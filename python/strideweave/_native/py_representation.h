/*
 * Tensor representations in Python: CompoundDType values, the private
 * TensorRepresentation and Subtensor values of
 * strideweave.core._representation, and their conversion to and from the
 * library's (strideweave/representation.h). The library checks every
 * rule; these functions convert Python values and call it.
 */
#ifndef SWPY_REPRESENTATION_H
#define SWPY_REPRESENTATION_H

#include "module.h"

#include "strideweave/representation.h"

/* Adds the module functions _compound_check and _representation_check. */
int swpy_representation_init(PyObject *module, swpy_state *st);

/*
 * Builds the library tensor of a TensorRepresentation rep (owned in *out),
 * with new references to the Python objects of subtensor 0's carrier and
 * placement layout in *carrier and *layout. Returns 0, or -1 with an
 * exception.
 */
int swpy_representation_build(swpy_state *st, PyObject *rep, sw_tensor **out,
                              PyObject **carrier, PyObject **layout);

/* The logical dtype of t as a Python value: a DType, or the (interned)
 * CompoundDType of a multi-subtensor tensor. */
PyObject *swpy_tensor_logical_dtype(swpy_state *st, const sw_tensor *t);

/* tensor._representation: the TensorRepresentation of a Tensor object. */
PyObject *swpy_tensor_representation(PyObject *self, void *closure);

/* tensor._version_token(): ((id(carrier), version), ...), one pair per
 * unique carrier in order of first appearance. */
PyObject *swpy_tensor_version_token(PyObject *self, PyObject *unused);

/* A new tensor holding the representation of multi-subtensor t, without
 * an autograd context (detach). */
PyObject *swpy_tensor_share(swpy_state *st, const sw_tensor *t);

#endif /* SWPY_REPRESENTATION_H */
