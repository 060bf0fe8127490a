/*
 * Definition-backed carriers from Python (see extension.c).
 */
#ifndef SWPY_EXTENSION_H
#define SWPY_EXTENSION_H

#include "module.h"

int swpy_extension_init(PyObject *module, swpy_state *st);

/* Whether the exact class type has a CarrierDefinition. */
int swpy_carrier_defined_tag(swpy_state *st, PyTypeObject *type);
/* Carrier.__new__ for a defined class: the object, without storage. */
PyObject *swpy_carrier_defined_new(swpy_state *st, PyTypeObject *type);
/* Carrier.__init__(slots, *, dtype, mutable=True) for a defined class. */
int swpy_carrier_defined_init(PyObject *self, PyObject *args, PyObject *kwds);

/* strideweave.carriers.extension.<fn>(a, b, c) (c or b and c may be
 * NULL): the Python layer's half of a provider callback. */
/* fn of the pure-Python module named module, called with the leading
 * non-NULL ones of a, b, c (a new reference, or NULL with an exception). */
PyObject *swpy_call_in(const char *module, const char *fn, PyObject *a,
                       PyObject *b, PyObject *c);
PyObject *swpy_call_layer(const char *fn, PyObject *a, PyObject *b,
                          PyObject *c);

#endif
