/*
 * The layout types of the extension: Shape, Stride and Layout.
 *
 * Shape and Stride wrap an immutable sw_tree, Layout an immutable sw_layout.
 * The types are heap types created per module; all three are final and
 * immutable, and their tp_name puts them in strideweave.core.layout.
 */
#ifndef SWPY_LAYOUT_H
#define SWPY_LAYOUT_H

#include "module.h"

#include "strideweave/layout.h"

#include "recipe.h"

/*
 * Creates the three types for module and stores them in st. Returns 0, or
 * -1 with an exception set (st may then hold some of the types, which the
 * module's clear function releases).
 */
int swpy_layout_init_types(PyObject *module, swpy_state *st);

/* Non-zero if o is a Layout object of this module. */
int swpy_is_layout(swpy_state *st, PyObject *o);

/* The layout of a Layout object (borrowed; o must be a Layout). */
sw_layout *swpy_layout_get(PyObject *o);

/* Wraps an owned layout in a new Layout object; the reference is released
 * if wrapping fails. */
PyObject *swpy_layout_wrap(swpy_state *st, sw_layout *layout);

/*
 * Id trees (rearrange outputs and selections) as recipes: a tuple is a
 * subtree, Node.Leaf or an int an unnamed leaf, Node.id(k) the token k when
 * keep_ids (else an unnamed leaf). ValueError('<what> must be a Tree') for
 * a root that is not a tuple. Returns 0, or -1 with an exception set.
 */
int swpy_idtree_recipe(swpy_state *st, rbuf *b, PyObject *tree, int keep_ids,
                       const char *what);

/* A Tree from an id recipe: token k >= 0 is Node.id(k), SW_TOK_LEAF is
 * Node.Leaf. */
PyObject *swpy_idtree_to_tree(swpy_state *st, const int32_t *recipe,
                              int32_t ntok);

/* Calls fn of the pure-Python module strideweave.viz with one argument
 * (a new reference, or NULL with an exception): the pictures that
 * Layout._repr_svg_ and Tensor._repr_html_ show. */
PyObject *swpy_call_viz(const char *fn, PyObject *arg);

#endif /* SWPY_LAYOUT_H */
