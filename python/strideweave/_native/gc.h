/*
 * Garbage collection through library references: the traverse functions
 * of the carrier, tensor and operation objects report what their library
 * objects hold. See gc.c for the scheme and why it is sound.
 */
#ifndef SWPY_GC_H
#define SWPY_GC_H

#include "module.h"

/*
 * The Python objects a carrier, tensor or operation object reaches
 * through its library object (the peer's own Python references are for
 * its type's traverse to visit), with the rules of gc.c. Returns what
 * visit returned, as tp_traverse does.
 */
int swpy_gc_traverse_carrier(PyObject *self, visitproc visit, void *arg);
int swpy_gc_traverse_tensor(PyObject *self, visitproc visit, void *arg);
int swpy_gc_traverse_op(PyObject *self, visitproc visit, void *arg);

#endif /* SWPY_GC_H */
