/*
 * Tensor.__dlpack__ and Tensor.__dlpack_device__ (see dlpack.c), the
 * DLPack export protocol over sw_tensor_dlpack_export.
 */
#ifndef SWPY_DLPACK_H
#define SWPY_DLPACK_H

#include "module.h"

/* __dlpack__(stream=None, *, max_version=None, dl_device=None, copy=None):
 * a "dltensor" or "dltensor_versioned" capsule (METH_VARARGS |
 * METH_KEYWORDS). */
PyObject *swpy_tensor_dlpack(PyObject *self, PyObject *args, PyObject *kw);

/* __dlpack_device__(): the (device_type, device_id) of the carrier. */
PyObject *swpy_tensor_dlpack_device(PyObject *self, PyObject *unused);

#endif /* SWPY_DLPACK_H */
