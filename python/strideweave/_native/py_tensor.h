/*
 * The Tensor type: a carrier, an offset and a layout.
 *
 * A Tensor object owns one reference to its sw_tensor and is its peer (see
 * carrier.h for the scheme), and keeps strong references to the carrier
 * and Layout objects it was made with, so that tensor.carrier is carrier
 * and tensor.layout is layout.
 *
 * A tensor the library made (an operation's result) gets those two objects
 * on first use instead, as most results are read or passed on without
 * either: its layout is NULL until then, and the carrier of a CPU result
 * whose carrier has no object yet is the module's CPU placeholder (a CPU
 * object without a carrier, so that type(tensor.carrier) holds without an
 * object). swpy_tensor_carrier and swpy_tensor_layout give the objects,
 * made on demand; read the fields only for the carrier's type.
 */
#ifndef SWPY_TENSOR_H
#define SWPY_TENSOR_H

#include "module.h"

#include "strideweave/tensor.h"

typedef struct {
    PyObject_HEAD
        /* Owned; NULL until __init__ has run. */
        sw_tensor *tensor;
    PyObject *carrier; /* the carrier object, or the CPU placeholder */
    PyObject *layout;  /* the Layout object, or NULL until it is asked for */
    PyObject *weakreflist;
    /* Whether carrier is the carrier's own object (counted in its
     * tensor_peers), not the placeholder. */
    int carrier_made;
} TensorObject;

int swpy_tensor_init_type(PyObject *module, swpy_state *st);

/* Non-zero if o is a Tensor (or a subclass instance). */
int swpy_is_tensor(swpy_state *st, PyObject *o);

/* The tensor of a Tensor object, or NULL with TypeError if a subclass's
 * __init__ never called Tensor's. */
sw_tensor *swpy_tensor_of(PyObject *o);

/*
 * The carrier and Layout objects of a Tensor object whose tensor is set
 * (borrowed), made if they were not yet; NULL with an exception when that
 * fails.
 */
PyObject *swpy_tensor_carrier(PyObject *tensor);
PyObject *swpy_tensor_layout(PyObject *tensor);

/*
 * The Python object for a tensor the library returned (an owned
 * reference, consumed): its peer if it has one, else a new Tensor whose
 * carrier and layout objects are made (or found) for it.
 */
PyObject *swpy_tensor_wrap(swpy_state *st, sw_tensor *owned);

#endif /* SWPY_TENSOR_H */
