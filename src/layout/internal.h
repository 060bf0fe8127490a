/*
 * Private layout structures and the helpers shared by tree.c, layout.c and
 * algebra.c.
 */
#ifndef SW_LAYOUT_INTERNAL_H
#define SW_LAYOUT_INTERNAL_H

#include "base/internal.h"
#include "strideweave/layout.h"

/*
 * An immutable tree in one allocation: the recipe tokens and the leaf
 * values follow the header.
 */
struct sw_tree {
    sw_refcount ref;
    sw_tree_kind kind;
    int32_t ntok;
    int32_t nleaf;
    int32_t rank;
    int32_t depth;
    /* The product of the values. A shape's always fits (sw_tree_new refuses
     * one that does not); a stride tree's is -1 when it does not fit. */
    int64_t size;
    int64_t *val; /* nleaf values */
    int32_t *tok; /* ntok tokens */
};

/*
 * A layout: two congruent trees plus facts computed once. mode_tok and
 * mode_leaf have rank+1 entries: mode k spans tokens [mode_tok[k],
 * mode_tok[k+1]) and leaves [mode_leaf[k], mode_leaf[k+1]).
 */
struct sw_layout {
    sw_refcount ref;
    sw_tree *shape;
    sw_tree *stride;
    int64_t size;
    int64_t cosize;
    int32_t rank;
    int32_t depth;
    int32_t nleaf;
    int is_leaf;
    /* sw_layout_is_injective's answer once known: 0 not yet, 1 no, 2 yes.
     * Layouts are immutable, so any thread may fill it in. */
    _Atomic int injective;
    int32_t *mode_tok;
    int32_t *mode_leaf;
    int64_t *mode_size;
};

/*
 * A borrowed view of a sub-layout: the tokens of a tuple's children (the
 * enclosing PUSH/POP excluded) and its leaves. A leaf mode viewed as a
 * layout has the single token SW_TOK_LEAF.
 */
typedef struct sw_lview {
    const int32_t *tok;
    int32_t ntok;
    const int64_t *ext;
    const int64_t *str;
} sw_lview;

/* The whole layout as a view. */
sw_lview sw_lview_of(const sw_layout *l);
/* Child i of a view (i < number of children). */
sw_lview sw_lview_child(sw_lview v, int32_t i);
/* The number of top-level children of a view. */
int32_t sw_lview_rank(sw_lview v);
int32_t sw_lview_nleaf(sw_lview v);
/* The number of elements of a view (SW_EVALUE if it does not fit). */
sw_status sw_lview_size(sw_lview v, int64_t *out);
/* Non-zero if child i of the view is a leaf. */
int sw_lview_child_is_leaf(sw_lview v, int32_t i);

/*
 * The index of the token that closes the tuple opened at tok[i] (a PUSH),
 * or i itself for a leaf; the number of leaves in between is added to
 * *leaves when leaves is not NULL.
 */
int32_t sw_tok_skip(const int32_t *tok, int32_t i, int32_t *leaves);

/*
 * A growable layout under construction. Failures latch in st; the builder
 * functions become no-ops after the first failure, so a sequence of calls
 * needs one check at sw_lb_finish.
 */
typedef struct sw_lb {
    int32_t *tok;
    int64_t *ext;
    int64_t *str;
    int32_t ntok, nleaf, captok, capleaf;
    sw_status st;
} sw_lb;

void sw_lb_init(sw_lb *b);
void sw_lb_free(sw_lb *b);
void sw_lb_leaf(sw_lb *b, int64_t extent, int64_t stride);
void sw_lb_push(sw_lb *b);
void sw_lb_pop(sw_lb *b);
/* Adds the children of a view at the current level (concatenation). */
void sw_lb_view(sw_lb *b, sw_lview v);
/* Adds a view by the append rule: flat if rank <= 1 and depth 1. */
void sw_lb_append_view(sw_lb *b, sw_lview v);
void sw_lb_append(sw_lb *b, const sw_layout *l);
/* Records a failure (the first one wins). */
void sw_lb_fail(sw_lb *b, sw_status st);
/* Makes the layout and frees the builder, also on failure. */
sw_status sw_lb_finish(sw_lb *b, sw_layout **out);
/* The same with the strides replaced by the compact column-major ones
 * (1, e0, e0*e1, ... in leaf order; the nesting is kept): the canonical
 * layout of the built shape. */
sw_status sw_lb_finish_compact(sw_lb *b, sw_layout **out);
/* The same, naming what the layout is the size of ("matmul result") in
 * the SW_EVALUE failure when the built shape's size overflows int64_t. */
sw_status sw_lb_finish_compact_as(sw_lb *b, const char *what, sw_layout **out);

/*
 * Checks that a recipe is balanced and counts its leaves, top-level
 * children and depth. Id tokens (k >= 0) are accepted only when ids is set.
 */
sw_status sw_recipe_scan(int32_t ntok, const int32_t *recipe, int ids,
                         int32_t *nleaf, int32_t *rank, int32_t *depth);

/* Makes a layout of a view (copies it). */
sw_status sw_layout_of_view(sw_lview v, sw_layout **out);

/* A flat layout of n (extent, stride) pairs. */
sw_status sw_layout_from_pairs(int32_t n, const int64_t *ext,
                               const int64_t *str, sw_layout **out);

/* Formats a layout for an error message into a bounded buffer. */
const char *sw_layout_str(const sw_layout *l, char *buf, int64_t cap);

#endif /* SW_LAYOUT_INTERNAL_H */
