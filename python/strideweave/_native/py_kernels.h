/*
 * Kernel patterns and packs from Python (see kernels.c).
 */
#ifndef SWPY_KERNELS_H
#define SWPY_KERNELS_H

#include "module.h"
#include "strideweave/extension.h"

int swpy_kernels_init(PyObject *module, swpy_state *st);
/* The TiledEvictable functions (tiled.c). */
int swpy_tiled_init(PyObject *module, swpy_state *st);
/* strideweave.distributed's native functions (distributed.c). */
int swpy_distributed_init(PyObject *module, swpy_state *st);

/* Python patterns adapted into library patterns: the adapters' contexts
 * (which live as long as the definition or pack) and the declarations to
 * register (needed only until registration). */
typedef struct swpy_patterns swpy_patterns;

/* patterns: a tuple of (operation name, raw plans, kernel_id, preference,
 * KernelPattern); interface is what each prepare receives. NULL with an
 * exception set. */
swpy_patterns *swpy_patterns_new(swpy_state *st, PyObject *interface,
                                 PyObject *patterns);
const sw_kernel_pattern_decl *swpy_patterns_decls(const swpy_patterns *ps,
                                                  int64_t *n);
/* Frees the declarations once registered (the contexts stay). */
void swpy_patterns_drop_decls(swpy_patterns *ps);
/* Frees everything (with the GIL held). */
void swpy_patterns_free(swpy_patterns *ps);

/* A Python CompositeProvider adapted into decl (its context, which lives
 * as long as the definition); NULL with an exception set. */
typedef struct swpy_composite swpy_composite;
swpy_composite *swpy_composite_new(swpy_state *st, PyObject *composite,
                                   sw_composite_decl *decl);
void swpy_composite_free(swpy_composite *k);

/* The ResolvedInvocation a Python definition's resolve returned for this
 * resolution (borrowed), or NULL for an operation that is not a Python
 * definition (definition.c). */
PyObject *swpy_definition_token(int32_t op, const struct sw_resolution *res);

#endif
