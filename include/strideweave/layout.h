/*
 * StrideWeave layouts: hierarchical integer trees and CuTe-style layouts.
 *
 * Notation follows CuTe. A layout is a pair of congruent trees, a shape and a
 * stride, written shape:stride, e.g. (2,(3,4)):(1,(10,100)). A tree is an
 * ordered tuple whose children are integers (leaves) or tuples. The root is
 * always a tuple; a root holding a single integer prints without parentheses
 * (4:2), any other root prints with them ((4):(2) is never printed; () is the
 * empty tuple). The top-level children are the layout's modes; their number
 * is its rank. An integer index is split colexicographically: the first mode
 * varies fastest, at every level of the hierarchy.
 *
 * A tree's structure is described by a recipe: the pre-order token sequence
 * of the root's children, where SW_TOK_LEAF is an integer leaf, SW_TOK_PUSH
 * opens a tuple and SW_TOK_POP closes it. (2,(3,4)) has the recipe
 * LEAF PUSH LEAF LEAF POP and the leaf values 2 3 4. Recipes of id trees (used
 * by sw_layout_rearrange) may also hold non-negative tokens: token k >= 0 is a
 * leaf that names item k.
 *
 * Ownership: sw_tree and sw_layout are immutable, reference-counted values.
 * Functions that produce one write an owned reference through their last
 * parameter; the caller releases it with sw_tree_unref / sw_layout_unref
 * (both accept NULL). Getters return borrowed references. No function steals
 * a reference. Values may be shared freely between threads.
 *
 * Errors: a function that can fail returns an sw_status and leaves its
 * out-parameter untouched on failure; sw_errmsg() then names the rule that
 * failed. All sizes, strides and indices are int64_t; a shape whose size or a
 * layout whose cosize would not fit in int64_t is rejected with SW_EVALUE.
 */
#ifndef STRIDEWEAVE_LAYOUT_H
#define STRIDEWEAVE_LAYOUT_H

#include "strideweave/base.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
    SW_TOK_LEAF = -1, /* an integer leaf (an unnamed leaf in id trees) */
    SW_TOK_PUSH = -2, /* opens a nested tuple */
    SW_TOK_POP = -3   /* closes the innermost open tuple */
};

/* What a tree's leaves hold; the kind decides which values are admissible. */
typedef enum sw_tree_kind {
    SW_TREE_SHAPE = 0, /* extents, each >= 1; the product must fit int64_t */
    SW_TREE_STRIDE = 1 /* strides, each >= 0 */
} sw_tree_kind;

typedef struct sw_tree sw_tree;
typedef struct sw_layout sw_layout;

/* ---------------------------------------------------------------- trees */

/*
 * Makes a tree from a recipe of ntok tokens and the values of its leaves (in
 * recipe order; as many as the recipe has leaf tokens). Fails with SW_EVALUE
 * for an unbalanced recipe, a value inadmissible for the kind ("Dimension
 * shape must not be less than 1", "Stride value must not be negative") or a
 * shape size that overflows int64_t.
 */
SW_API sw_status sw_tree_new(sw_tree_kind kind, int32_t ntok,
                             const int32_t *recipe, const int64_t *values,
                             sw_tree **out);

/* Parses "(2,(3,4))" or "5" (a single leaf) into a tree of the given kind. */
SW_API sw_status sw_tree_parse(sw_tree_kind kind, const char *text,
                               sw_tree **out);

SW_API sw_tree *sw_tree_retain(sw_tree *tree);
SW_API void sw_tree_unref(sw_tree *tree);

SW_API sw_tree_kind sw_tree_get_kind(const sw_tree *tree);
/* Number of top-level children. */
SW_API int32_t sw_tree_rank(const sw_tree *tree);
/* 1 for a flat tuple (or the empty tuple); 1 + the deepest child otherwise. */
SW_API int32_t sw_tree_depth(const sw_tree *tree);
SW_API int32_t sw_tree_nleaf(const sw_tree *tree);
SW_API int32_t sw_tree_ntok(const sw_tree *tree);
/* Borrowed arrays of ntok tokens and nleaf values, valid while tree lives. */
SW_API const int32_t *sw_tree_recipe(const sw_tree *tree);
SW_API const int64_t *sw_tree_values(const sw_tree *tree);
/*
 * Product of the leaves (1 for the empty tuple); meaningful for shapes,
 * whose product always fits int64_t. For a stride tree whose product does
 * not fit, -1.
 */
SW_API int64_t sw_tree_size(const sw_tree *tree);
/* Non-zero if child i (0 <= i < rank) is an integer leaf. */
SW_API int sw_tree_child_is_leaf(const sw_tree *tree, int32_t i);
/* Non-zero if both trees have the same kind, structure and values. */
SW_API int sw_tree_equal(const sw_tree *a, const sw_tree *b);
/* Non-zero if both trees have the same structure (values ignored). */
SW_API int sw_tree_congruent(const sw_tree *a, const sw_tree *b);

/*
 * Child i of the top level as a tree (SW_EINDEX if out of range): a leaf
 * child gives the one-leaf tree (n), a tuple child gives that tuple.
 */
SW_API sw_status sw_tree_child(const sw_tree *tree, int32_t i, sw_tree **out);

/*
 * The tree whose top level is children idx[0..n) of tree, in that order
 * (used for slicing). SW_EINDEX if an index is out of range.
 */
SW_API sw_status sw_tree_select(const sw_tree *tree, int32_t n,
                                const int32_t *idx, sw_tree **out);

/* The top-level children of a followed by those of b (same kind required). */
SW_API sw_status sw_tree_concat(const sw_tree *a, const sw_tree *b,
                                sw_tree **out);

/*
 * Appends b to a: if b has at most one child and depth 1 it is concatenated,
 * otherwise b becomes one new nested child of a.
 */
SW_API sw_status sw_tree_append(const sw_tree *a, const sw_tree *b,
                                sw_tree **out);

/*
 * Writes the CuTe form of a tree, "(2,(3,4))" (a root holding one integer
 * prints bare: "5"), into buf (at most cap bytes including the terminating
 * NUL; buf may be NULL when cap is 0). Returns the length the full text
 * needs, excluding the NUL, like snprintf.
 */
SW_API int64_t sw_tree_format(const sw_tree *tree, char *buf, int64_t cap);

/* -------------------------------------------------------------- layouts */

/*
 * Makes a layout from a shape tree and a stride tree. SW_ETYPE if the kinds
 * are wrong; SW_EVALUE "Shape and Stride do not match in Structure" if the
 * trees are not congruent, or if the cosize overflows int64_t.
 */
SW_API sw_status sw_layout_new(sw_tree *shape, sw_tree *stride,
                               sw_layout **out);

/* The same from a recipe and two value arrays (one entry per leaf). */
SW_API sw_status sw_layout_from_recipe(int32_t ntok, const int32_t *recipe,
                                       const int64_t *shape,
                                       const int64_t *stride, sw_layout **out);

/*
 * Parses the CuTe form "shape:stride", e.g. "(2,(3,4)):(1,(10,100))" or
 * "4:2". SW_EVALUE names the offset of a syntax error.
 */
SW_API sw_status sw_layout_parse(const char *text, sw_layout **out);

/* The one-mode layout extent:stride. */
SW_API sw_status sw_layout_leaf(int64_t extent, int64_t stride,
                                sw_layout **out);

/* The empty layout (): (), of size 1 and cosize 1. */
SW_API sw_status sw_layout_empty(sw_layout **out);

SW_API sw_layout *sw_layout_retain(sw_layout *layout);
SW_API void sw_layout_unref(sw_layout *layout);

/* Borrowed trees. */
SW_API sw_tree *sw_layout_shape(const sw_layout *layout);
SW_API sw_tree *sw_layout_stride(const sw_layout *layout);

/* Logical element count: the product of the extents. */
SW_API int64_t sw_layout_size(const sw_layout *layout);
/* One past the largest index: 1 + sum of stride*(extent-1). */
SW_API int64_t sw_layout_cosize(const sw_layout *layout);
SW_API int32_t sw_layout_rank(const sw_layout *layout);
SW_API int32_t sw_layout_depth(const sw_layout *layout);
SW_API int32_t sw_layout_nleaf(const sw_layout *layout);
/* Borrowed leaf extents and strides in recipe (infix) order. */
SW_API const int64_t *sw_layout_leaf_extents(const sw_layout *layout);
SW_API const int64_t *sw_layout_leaf_strides(const sw_layout *layout);
/* Non-zero for at most one top-level mode that is an integer leaf. */
SW_API int sw_layout_is_leaf(const sw_layout *layout);
SW_API int sw_layout_equal(const sw_layout *a, const sw_layout *b);

/* Writes "shape:stride" in CuTe form; returns the needed length. */
SW_API int64_t sw_layout_format(const sw_layout *layout, char *buf,
                                int64_t cap);

/* ------------------------------------------------------------- indexing */

/*
 * The index of logical element i (0 <= i < size, else SW_EVALUE "Key is not
 * in domain of shape").
 */
SW_API sw_status sw_layout_index(const sw_layout *layout, int64_t i,
                                 int64_t *out);

/*
 * The index of a coordinate given as a tree of ntok tokens and its leaf
 * values. Coordinate i pairs with top-level mode i; missing trailing
 * coordinates count as 0 and extra ones are ignored. A leaf mode takes an
 * integer in [0, extent); a nested mode takes an integer (its logical index)
 * or a nested coordinate, recursively. A tuple given for a leaf mode is
 * SW_ETYPE; an out-of-range or negative value is SW_EVALUE "Key is not in
 * domain of shape".
 */
SW_API sw_status sw_layout_index_coord(const sw_layout *layout, int32_t ntok,
                                       const int32_t *recipe,
                                       const int64_t *values, int64_t *out);

/*
 * Python's indexing rules, beside the reference's (flags of the *_ex
 * functions below; 0 gives exactly sw_layout_index and
 * sw_layout_index_coord). SW_INDEX_WRAP: a negative coordinate c of a mode
 * of extent (or size) n stands for c + n, and a negative logical index i
 * for i + size; what stays outside is SW_EVALUE "Key is not in domain of
 * shape". SW_INDEX_EXACT: more coordinates than modes, at any level, is
 * SW_EINDEX "Key has K coordinates for R modes" (missing trailing
 * coordinates still count as 0). Other flag bits are SW_EVALUE.
 */
#define SW_INDEX_WRAP 1u
#define SW_INDEX_EXACT 2u
SW_API sw_status sw_layout_index_ex(const sw_layout *layout, int64_t i,
                                    uint32_t flags, int64_t *out);
SW_API sw_status sw_layout_index_coord_ex(const sw_layout *layout, int32_t ntok,
                                          const int32_t *recipe,
                                          const int64_t *values, uint32_t flags,
                                          int64_t *out);

/*
 * Splits logical index i colexicographically into one coordinate per
 * top-level mode: out[k] for k < rank (out must hold rank entries).
 */
SW_API sw_status sw_layout_expand_index(const sw_layout *layout, int64_t i,
                                        int64_t *out);

/* --------------------------------------------------------- construction */

/* Top-level mode i (negative i is not accepted; SW_EINDEX if out of range). */
SW_API sw_status sw_layout_mode(const sw_layout *layout, int32_t i,
                                sw_layout **out);
/* The layout of top-level modes idx[0..n), in that order. */
SW_API sw_status sw_layout_select(const sw_layout *layout, int32_t n,
                                  const int32_t *idx, sw_layout **out);
/* The modes of a followed by the modes of b. */
SW_API sw_status sw_layout_concat(const sw_layout *a, const sw_layout *b,
                                  sw_layout **out);
/* As sw_tree_append on both trees: a leaf b is concatenated, else nested. */
SW_API sw_status sw_layout_append(const sw_layout *a, const sw_layout *b,
                                  sw_layout **out);
/* Appends layouts[0..n) in turn to the empty layout. */
SW_API sw_status sw_layout_make(int32_t n, sw_layout *const *layouts,
                                sw_layout **out);
/* Reorders the top-level modes: mode k of the result is mode order[k]. */
SW_API sw_status sw_layout_permute(const sw_layout *layout, int32_t n,
                                   const int32_t *order, sw_layout **out);

/* ------------------------------------------------------------- algebra */

/* All leaves as top-level modes, in infix order. */
SW_API sw_status sw_layout_flatten(const sw_layout *layout, sw_layout **out);

/*
 * The flat layout of the fewest modes with the same function on the same
 * domain: extent-1 leaves are dropped and neighbours with
 * stride[k+1] == extent[k]*stride[k] merge. A layout of one leaf is returned
 * unchanged (nesting kept). Example: ((2,(3,4)),(3,2),1):((4,(8,24)),(2,6),12)
 * gives (24,6):(4,2).
 */
SW_API sw_status sw_layout_coalesce(const sw_layout *layout, sw_layout **out);

/*
 * Coalesces within the modes selected by a profile recipe: where the profile
 * has a leaf, that whole mode (possibly nested) is coalesced into one flat
 * piece; where it has a tuple, the layout must have a tuple of the same
 * length and the rule recurses. The result follows the profile's structure.
 * (2,(1,6)):(1,(6,2)) with profile (1,1) gives (2,6):(1,2).
 */
SW_API sw_status sw_layout_coalesce_profile(const sw_layout *layout,
                                            int32_t ntok,
                                            const int32_t *profile,
                                            sw_layout **out);

/*
 * Drops stride-0 and extent-1 leaves, then coalesces; the result is 1:0 if
 * nothing remains. Its size counts the distinct elements reached.
 */
SW_API sw_status sw_layout_filter(const sw_layout *layout, sw_layout **out);

/*
 * Composition R = A o B: R(c) == A(B(c)) for every coordinate c of B, and R
 * has B's modes. A is extended past its size along its last mode (CuTe's
 * convention). Fails with SW_EVALUE when a stride of B does not divide A's
 * modes ("stride 2 of B does not divide mode 3:4 of A"), when an extent of
 * B does not fit them, or when B's modes overlap inside a mode of A so that
 * their images would carry into the next mode (then no layout equals
 * A o B, e.g. (2,6):(24,24) o (2,2):(1,1)).
 */
SW_API sw_status sw_layout_compose(const sw_layout *a, const sw_layout *b,
                                   sw_layout **out);

/*
 * Mode-by-mode composition with a tiler: mode i of the result is
 * A[i] o tiler[i] for i < n; the remaining modes of A follow unchanged.
 * SW_EVALUE if n exceeds the rank of A.
 */
SW_API sw_status sw_layout_compose_tiler(const sw_layout *a, int32_t n,
                                         sw_layout *const *tiler,
                                         sw_layout **out);

/*
 * Composition with a shape: each top-level mode s of the shape becomes the
 * compact column-major layout of s (stride 1 for an integer) in a tiler.
 */
SW_API sw_status sw_layout_compose_shape(const sw_layout *a,
                                         const sw_tree *shape, sw_layout **out);

/*
 * The complement of A with respect to cotarget M: the ordered layout C with
 * strides increasing such that (A, C) is injective and has cosize M.
 * Extent-1 and stride-0 leaves of A are ignored. SW_EVALUE if A overlaps
 * itself, if its strides cannot be completed evenly, or if M is not a
 * multiple of A's span. A cotarget of 0 means A's own span: only the gaps
 * between A's modes are filled ((4:2) gives 2:1). The result is 1:0 when
 * nothing is left to cover.
 */
SW_API sw_status sw_layout_complement(const sw_layout *a, int64_t cotarget,
                                      sw_layout **out);

/*
 * Logical divide A / B = A o (B, complement(B, size(A))). The result has two
 * modes: the tile (B's modes) and the rest. SW_EVALUE if B does not tile A.
 */
SW_API sw_status sw_layout_divide(const sw_layout *a, const sw_layout *b,
                                  sw_layout **out);

/*
 * Divides the leading modes of A by a tiler: mode i becomes
 * A[i] / tiler[i] = (tile_i, rest_i); the remaining modes follow unchanged.
 */
SW_API sw_status sw_layout_divide_tiler(const sw_layout *a, int32_t n,
                                        sw_layout *const *tiler,
                                        sw_layout **out);

/* ((tile_0,...,tile_n-1),(rest_0,...,rest_n-1), remaining modes of A...) */
SW_API sw_status sw_layout_zipped_divide(const sw_layout *a, int32_t n,
                                         sw_layout *const *tiler,
                                         sw_layout **out);
/* ((tile_0,...,tile_n-1), rest_0, ..., rest_n-1, remaining modes of A...) */
SW_API sw_status sw_layout_tiled_divide(const sw_layout *a, int32_t n,
                                        sw_layout *const *tiler,
                                        sw_layout **out);
/* (tile_0, ..., tile_n-1, rest_0, ..., rest_n-1, remaining modes of A...) */
SW_API sw_status sw_layout_flat_divide(const sw_layout *a, int32_t n,
                                       sw_layout *const *tiler,
                                       sw_layout **out);

/*
 * Logical product A x B = (A, complement(A, size(A)*cosize(B)) o B): the
 * layout A repeated in the pattern of B. Two modes.
 */
SW_API sw_status sw_layout_product(const sw_layout *a, const sw_layout *b,
                                   sw_layout **out);
/*
 * Blocked product: mode i is (A[i], P[i]) where P = complement o B, both
 * padded with 1:0 modes to the larger rank. Raked product: mode i is
 * (P[i], A[i]).
 */
SW_API sw_status sw_layout_blocked_product(const sw_layout *a,
                                           const sw_layout *b, sw_layout **out);
SW_API sw_status sw_layout_raked_product(const sw_layout *a, const sw_layout *b,
                                         sw_layout **out);

/*
 * Right inverse R: A(R(i)) == i for every i < size(R). R covers the
 * longest prefix 0, 1, 2, ... that A reaches contiguously; 1:0 if A never
 * reaches 1 (or has size 1).
 */
SW_API sw_status sw_layout_right_inverse(const sw_layout *a, sw_layout **out);

/*
 * Left inverse L of an injective A: L(A(i)) == i for every i < size(A).
 * SW_EVALUE if A is not injective, and also for injective layouts whose
 * sorted strides do not divide one another, e.g. (3,3):(11,12): their
 * inverses are not computed.
 */
SW_API sw_status sw_layout_left_inverse(const sw_layout *a, sw_layout **out);

/*
 * Sets *out to 1 if no two coordinates of A share an index, else 0.
 * Decided exactly; SW_ENOTIMPL only for layouts whose strides interleave in
 * a way that would need more than 2^27 bits of scratch to decide.
 */
SW_API sw_status sw_layout_is_injective(const sw_layout *a, int *out);

/* Sets *out to 1 if A is a bijection onto [0, size(A)), else 0. */
SW_API sw_status sw_layout_is_compact(const sw_layout *a, int *out);

/*
 * The shape-division steps of composition, on the flattened leaves of A,
 * with the reference's rules (composition itself uses variants that
 * extend A's last mode instead).
 * choose(A, d) is the layout C with C(j) == A(d*j) for j < size(A)/d. d
 * must divide size(A) ("Can not choose the 2-th element of Layout 3:1")
 * and the leading extents in turn ("...: 4 can not be reduced by 6").
 * modout(A, s) keeps the first min(s, size(A)) elements, with A's strides:
 * a layout of at most s elements comes back whole, and where s ends inside
 * a leaf it must be a multiple of the elements before that leaf ("Shape
 * divisibility condition not met for (4,4):(1,4) and 6").
 * SW_EVALUE also for d < 1 or s < 1 and for strides that overflow.
 */
SW_API sw_status sw_layout_choose(const sw_layout *a, int64_t d,
                                  sw_layout **out);
SW_API sw_status sw_layout_modout(const sw_layout *a, int64_t s,
                                  sw_layout **out);

/*
 * Splits A along a profile recipe (see sw_layout_coalesce_profile): a
 * profile leaf takes the whole corresponding mode. With ntok < 0 (no
 * profile) every leaf of A is one piece. Writes at most cap owned layouts
 * into pieces and their number into *count; SW_EVALUE "layout and tree
 * profile do not match" if the structures disagree, SW_EINDEX if cap is too
 * small (*count then holds the number needed).
 */
SW_API sw_status sw_layout_extract(const sw_layout *a, int32_t ntok,
                                   const int32_t *profile, int32_t cap,
                                   sw_layout **pieces, int32_t *count);

/*
 * Rearranges the pieces of A (as extracted with the selection profile, or
 * every leaf when nsel < 0) into the structure of the output id recipe:
 * token k >= 0 places piece k, SW_TOK_LEAF inserts the singleton 1:0, and
 * tuples nest. Each child joins as sw_layout_append does. SW_EVALUE for an
 * id out of range, a repeated id, or a piece of size > 1 left unused.
 */
SW_API sw_status sw_layout_rearrange(const sw_layout *a, int32_t nout,
                                     const int32_t *output, int32_t nsel,
                                     const int32_t *selection, sw_layout **out);

/*
 * The inverse pair of a rearrangement: given the output id recipe and the
 * selection recipe of a rearrange, writes the output and selection recipes
 * that restore the source order. Outputs are malloc'd with the library
 * allocator and freed with sw_free_recipe. SW_EVALUE for a repeated or
 * out-of-range id.
 */
SW_API sw_status sw_rearrange_reverse(int32_t nout, const int32_t *output,
                                      int32_t nsel, const int32_t *selection,
                                      int32_t *nrev_out, int32_t **rev_out,
                                      int32_t *nrev_sel, int32_t **rev_sel);
SW_API void sw_free_recipe(int32_t *recipe);

#ifdef __cplusplus
}
#endif

#endif /* STRIDEWEAVE_LAYOUT_H */
