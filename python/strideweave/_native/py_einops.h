/*
 * strideweave.einops in the extension: the layout command strings of the
 * library (lexer, parsers, spec cache) bound to Python, and the
 * tensor-level rearrange, reduce and einsum.
 *
 * strideweave.einops registers its dataclasses (Token, LayoutReference and
 * the three spec classes) at import; compiled commands become instances of
 * them. Each command kind keeps a dict from command string to its compiled
 * entry in the module state, so a repeated command returns the identical
 * spec object and a cached call neither lexes nor parses. Failures are
 * never stored. The dicts hold at most sw_einops_cache_capacity() entries
 * each (the oldest entry goes first).
 */
#ifndef SWPY_EINOPS_H
#define SWPY_EINOPS_H

#include "module.h"

int swpy_einops_init(PyObject *module, swpy_state *st);

/*
 * The tensor-level commands (strideweave.einops.rearrange and friends, and
 * the string forms of the functional operations). description must be a
 * str (TypeError 'description must be a str'); it is compiled before the
 * tensors are looked at. Each step is a dispatched, recorded operation:
 * rearrange views, the carrier's reduce, matmul or batched_matmul.
 */
PyObject *swpy_einops_rearrange(swpy_state *st, PyObject *tensor,
                                PyObject *description);
PyObject *swpy_einops_reduce(swpy_state *st, PyObject *tensor,
                             PyObject *description);
PyObject *swpy_einops_einsum(swpy_state *st, PyObject *lhs, PyObject *rhs,
                             PyObject *description);

#endif /* SWPY_EINOPS_H */
