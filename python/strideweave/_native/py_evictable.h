/*
 * The Evictable carrier type and the EvictableOperation type of the
 * extension (strideweave.carriers.evictable).
 */
#ifndef SWPY_EVICTABLE_H
#define SWPY_EVICTABLE_H

#include "module.h"

/* Creates both types; needs the Carrier and Operation types. */
int swpy_evictable_init_types(PyObject *module, swpy_state *st);

#endif /* SWPY_EVICTABLE_H */
