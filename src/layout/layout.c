/*
 * Layouts: construction, derived facts, indexing and the structural
 * operations (modes, concatenation, append, permutation, extraction and
 * rearrangement). The algebra proper is in algebra.c.
 */
#include <stdio.h>
#include <string.h>

#include "layout/internal.h"

/* ------------------------------------------------------------------ views */

static const int32_t leaf_token = SW_TOK_LEAF;

sw_lview sw_lview_of(const sw_layout *l) {
    sw_lview v = {l->shape->tok, l->shape->ntok, l->shape->val, l->stride->val};
    return v;
}

int32_t sw_lview_rank(sw_lview v) {
    int32_t n = 0;
    for (int32_t p = 0; p < v.ntok; ++p, ++n)
        p = sw_tok_skip(v.tok, p, NULL);
    return n;
}

int32_t sw_lview_nleaf(sw_lview v) {
    int32_t n = 0;
    for (int32_t p = 0; p < v.ntok; ++p)
        if (v.tok[p] != SW_TOK_PUSH && v.tok[p] != SW_TOK_POP)
            ++n;
    return n;
}

static int lview_locate(sw_lview v, int32_t i, int32_t *tb, int32_t *te,
                        int32_t *lb) {
    int32_t leaves = 0, k = 0;
    for (int32_t p = 0; p < v.ntok; ++p) {
        int32_t start = p, before = leaves;
        p = sw_tok_skip(v.tok, p, &leaves);
        if (k++ == i) {
            *tb = start;
            *te = p + 1;
            *lb = before;
            return 1;
        }
    }
    return 0;
}

sw_lview sw_lview_child(sw_lview v, int32_t i) {
    int32_t tb = 0, te = 0, lb = 0;
    sw_lview c = {&leaf_token, 0, v.ext, v.str};
    if (!lview_locate(v, i, &tb, &te, &lb))
        return c;
    c.ext = v.ext + lb;
    c.str = v.str + lb;
    if (v.tok[tb] == SW_TOK_PUSH) {
        c.tok = v.tok + tb + 1;
        c.ntok = te - tb - 2;
    } else {
        c.tok = &leaf_token;
        c.ntok = 1;
    }
    return c;
}

int sw_lview_child_is_leaf(sw_lview v, int32_t i) {
    int32_t tb = 0, te = 0, lb = 0;
    return lview_locate(v, i, &tb, &te, &lb) && v.tok[tb] != SW_TOK_PUSH;
}

/* A view is "int-like" (joins flat under the append rule) if it has at
 * most one child and that child is a leaf. */
static int lview_is_int(sw_lview v) {
    return v.ntok == 0 || (v.ntok == 1 && v.tok[0] != SW_TOK_PUSH);
}

/* ---------------------------------------------------------------- builder */

void sw_lb_init(sw_lb *b) {
    memset(b, 0, sizeof *b);
}

void sw_lb_free(sw_lb *b) {
    sw_free(b->tok);
    sw_free(b->ext);
    sw_free(b->str);
    memset(b, 0, sizeof *b);
}

void sw_lb_fail(sw_lb *b, sw_status st) {
    if (!b->st)
        b->st = st;
}

static int lb_room(sw_lb *b, int32_t ntok, int32_t nleaf) {
    if (b->st)
        return 0;
    if (b->ntok + ntok > b->captok) {
        int32_t cap = b->captok ? b->captok : 8;
        while (cap < b->ntok + ntok)
            cap *= 2;
        int32_t *t = sw_realloc(b->tok, (size_t)cap * sizeof(int32_t));
        if (!t) {
            b->st = sw_oom();
            return 0;
        }
        b->tok = t;
        b->captok = cap;
    }
    if (b->nleaf + nleaf > b->capleaf) {
        int32_t cap = b->capleaf ? b->capleaf : 8;
        while (cap < b->nleaf + nleaf)
            cap *= 2;
        int64_t *e = sw_realloc(b->ext, (size_t)cap * sizeof(int64_t));
        if (!e) {
            b->st = sw_oom();
            return 0;
        }
        b->ext = e;
        int64_t *s = sw_realloc(b->str, (size_t)cap * sizeof(int64_t));
        if (!s) {
            b->st = sw_oom();
            return 0;
        }
        b->str = s;
        b->capleaf = cap;
    }
    return 1;
}

void sw_lb_leaf(sw_lb *b, int64_t extent, int64_t stride) {
    if (!lb_room(b, 1, 1))
        return;
    b->tok[b->ntok++] = SW_TOK_LEAF;
    b->ext[b->nleaf] = extent;
    b->str[b->nleaf++] = stride;
}

void sw_lb_push(sw_lb *b) {
    if (lb_room(b, 1, 0))
        b->tok[b->ntok++] = SW_TOK_PUSH;
}

void sw_lb_pop(sw_lb *b) {
    if (lb_room(b, 1, 0))
        b->tok[b->ntok++] = SW_TOK_POP;
}

void sw_lb_view(sw_lb *b, sw_lview v) {
    int32_t nleaf = sw_lview_nleaf(v);
    if (!lb_room(b, v.ntok, nleaf))
        return;
    for (int32_t p = 0, l = 0; p < v.ntok; ++p) {
        int32_t t = v.tok[p];
        if (t == SW_TOK_PUSH || t == SW_TOK_POP) {
            b->tok[b->ntok++] = t;
        } else {
            b->tok[b->ntok++] = SW_TOK_LEAF;
            b->ext[b->nleaf] = v.ext[l];
            b->str[b->nleaf++] = v.str[l++];
        }
    }
}

void sw_lb_append_view(sw_lb *b, sw_lview v) {
    if (lview_is_int(v)) {
        sw_lb_view(b, v);
        return;
    }
    sw_lb_push(b);
    sw_lb_view(b, v);
    sw_lb_pop(b);
}

void sw_lb_append(sw_lb *b, const sw_layout *l) {
    sw_lb_append_view(b, sw_lview_of(l));
}

sw_status sw_lb_finish(sw_lb *b, sw_layout **out) {
    sw_status st = b->st;
    if (!st)
        st = sw_layout_from_recipe(b->ntok, b->tok, b->ext, b->str, out);
    sw_lb_free(b);
    return st;
}

sw_status sw_lb_finish_compact_as(sw_lb *b, const char *what, sw_layout **out) {
    int64_t acc = 1;
    for (int32_t i = 0; !b->st && i < b->nleaf; ++i) {
        b->str[i] = acc;
        if (!sw_mul_ok(acc, b->ext[i], &acc)) {
            /* Name the extents: the caller's operands are what overflowed. */
            char shape[160];
            int64_t len = 0;
            for (int32_t j = 0; j < b->nleaf && len < (int64_t)sizeof shape;
                 ++j)
                len += snprintf(shape + len, sizeof shape - (size_t)len,
                                "%s%lld", j ? "," : "", (long long)b->ext[j]);
            sw_lb_fail(b, sw_fail(SW_EVALUE,
                                  "%s size overflows 64-bit integers (the "
                                  "extents are %s)",
                                  what, shape));
        }
    }
    return sw_lb_finish(b, out);
}

sw_status sw_lb_finish_compact(sw_lb *b, sw_layout **out) {
    return sw_lb_finish_compact_as(b, "Layout", out);
}

sw_status sw_layout_of_view(sw_lview v, sw_layout **out) {
    sw_lb b;
    sw_lb_init(&b);
    sw_lb_view(&b, v);
    return sw_lb_finish(&b, out);
}

sw_status sw_layout_from_pairs(int32_t n, const int64_t *ext,
                               const int64_t *str, sw_layout **out) {
    sw_lb b;
    sw_lb_init(&b);
    for (int32_t i = 0; i < n; ++i)
        sw_lb_leaf(&b, ext[i], str[i]);
    return sw_lb_finish(&b, out);
}

/* ----------------------------------------------------------- construction */

sw_status sw_layout_new(sw_tree *shape, sw_tree *stride, sw_layout **out) {
    if (!shape || !stride)
        return sw_fail(SW_ETYPE, "layout needs a shape and a stride");
    if (shape->kind != SW_TREE_SHAPE)
        return sw_fail(SW_ETYPE, "shape input must be a Shape tree");
    if (stride->kind != SW_TREE_STRIDE)
        return sw_fail(SW_ETYPE, "stride input must be a Stride tree");
    if (!sw_tree_congruent(shape, stride))
        return sw_fail(SW_EVALUE, "Shape and Stride do not match in Structure");
    int64_t span = 0;
    for (int32_t i = 0; i < shape->nleaf; ++i) {
        int64_t term;
        if (!sw_mul_ok(stride->val[i], shape->val[i] - 1, &term) ||
            !sw_add_ok(span, term, &span) || span == INT64_MAX)
            return sw_fail(SW_EVALUE,
                           "Layout cosize overflows 64-bit integers");
    }
    int32_t rank = shape->rank;
    size_t bytes = sizeof(sw_layout) + (size_t)rank * sizeof(int64_t) +
                   2 * (size_t)(rank + 1) * sizeof(int32_t);
    sw_layout *l = sw_malloc(bytes);
    if (!l)
        return sw_oom();
    sw_ref_init(&l->ref);
    l->shape = sw_tree_retain(shape);
    l->stride = sw_tree_retain(stride);
    l->size = shape->size;
    l->cosize = span + 1;
    l->rank = rank;
    l->depth = shape->depth;
    l->nleaf = shape->nleaf;
    l->is_leaf = rank <= 1 && shape->depth <= 1;
    atomic_init(&l->injective, 0);
    l->mode_size = (int64_t *)(l + 1);
    l->mode_tok = (int32_t *)(l->mode_size + rank);
    l->mode_leaf = l->mode_tok + rank + 1;
    int32_t k = 0, leaves = 0;
    for (int32_t p = 0; p < shape->ntok; ++p, ++k) {
        l->mode_tok[k] = p;
        l->mode_leaf[k] = leaves;
        p = sw_tok_skip(shape->tok, p, &leaves);
        /* A mode's size divides the shape's, which fits. */
        int64_t size = 1;
        for (int32_t j = l->mode_leaf[k]; j < leaves; ++j)
            if (!sw_mul_ok(size, shape->val[j], &size)) {
                sw_layout_unref(l);
                return sw_fail(SW_EVALUE,
                               "Shape size overflows 64-bit integers");
            }
        l->mode_size[k] = size;
    }
    l->mode_tok[rank] = shape->ntok;
    l->mode_leaf[rank] = leaves;
    *out = l;
    return SW_OK;
}

sw_status sw_layout_from_recipe(int32_t ntok, const int32_t *recipe,
                                const int64_t *shape, const int64_t *stride,
                                sw_layout **out) {
    sw_tree *a = NULL, *b = NULL;
    sw_status st = sw_tree_new(SW_TREE_SHAPE, ntok, recipe, shape, &a);
    if (!st)
        st = sw_tree_new(SW_TREE_STRIDE, ntok, recipe, stride, &b);
    if (!st)
        st = sw_layout_new(a, b, out);
    sw_tree_unref(a);
    sw_tree_unref(b);
    return st;
}

sw_status sw_layout_leaf(int64_t extent, int64_t stride, sw_layout **out) {
    int32_t tok = SW_TOK_LEAF;
    return sw_layout_from_recipe(1, &tok, &extent, &stride, out);
}

sw_status sw_layout_empty(sw_layout **out) {
    return sw_layout_from_recipe(0, NULL, NULL, NULL, out);
}

sw_layout *sw_layout_retain(sw_layout *l) {
    if (l)
        sw_ref_inc(&l->ref);
    return l;
}

void sw_layout_unref(sw_layout *l) {
    if (l && sw_ref_dec(&l->ref)) {
        sw_tree_unref(l->shape);
        sw_tree_unref(l->stride);
        sw_free(l);
    }
}

sw_tree *sw_layout_shape(const sw_layout *l) {
    return l->shape;
}
sw_tree *sw_layout_stride(const sw_layout *l) {
    return l->stride;
}
int64_t sw_layout_size(const sw_layout *l) {
    return l->size;
}
int64_t sw_layout_cosize(const sw_layout *l) {
    return l->cosize;
}
int32_t sw_layout_rank(const sw_layout *l) {
    return l->rank;
}
int32_t sw_layout_depth(const sw_layout *l) {
    return l->depth;
}
int32_t sw_layout_nleaf(const sw_layout *l) {
    return l->nleaf;
}
const int64_t *sw_layout_leaf_extents(const sw_layout *l) {
    return l->shape->val;
}
const int64_t *sw_layout_leaf_strides(const sw_layout *l) {
    return l->stride->val;
}
int sw_layout_is_leaf(const sw_layout *l) {
    return l->is_leaf;
}

int sw_layout_equal(const sw_layout *a, const sw_layout *b) {
    return a == b || (sw_tree_equal(a->shape, b->shape) &&
                      sw_tree_equal(a->stride, b->stride));
}

/* ---------------------------------------------------------------- indexing */

static sw_status out_of_domain(void) {
    return sw_fail(SW_EVALUE, "Key is not in domain of shape");
}

/* The index of logical element i of the leaves [0, n) (colexicographic). */
static int64_t split_index(int64_t i, int32_t n, const int64_t *ext,
                           const int64_t *str) {
    int64_t off = 0;
    for (int32_t k = 0; k < n; ++k) {
        int64_t e = ext[k];
        off += (i % e) * str[k];
        i /= e;
    }
    return off;
}

sw_status sw_layout_index(const sw_layout *l, int64_t i, int64_t *out) {
    if (i < 0 || i >= l->size)
        return out_of_domain();
    *out = split_index(i, l->nleaf, l->shape->val, l->stride->val);
    return SW_OK;
}

sw_status sw_layout_expand_index(const sw_layout *l, int64_t i, int64_t *out) {
    if (i < 0 || i >= l->size)
        return out_of_domain();
    for (int32_t k = 0; k < l->rank; ++k) {
        out[k] = i % l->mode_size[k];
        i /= l->mode_size[k];
    }
    return SW_OK;
}

/* The number of coordinates at one level of a coordinate recipe. */
static int32_t count_children(const int32_t *tok, int32_t n) {
    int32_t count = 0;
    for (int32_t p = 0; p < n; ++p, ++count)
        p = sw_tok_skip(tok, p, NULL);
    return count;
}

/*
 * A coordinate c of a mode of extent n, after SW_INDEX_WRAP; SW_EVALUE when
 * it stays outside [0, n).
 */
static sw_status mode_coord(int64_t c, int64_t n, uint32_t flags,
                            int64_t *out) {
    if (c < 0 && (flags & SW_INDEX_WRAP) && c >= -n)
        c += n;
    if (c < 0 || c >= n)
        return out_of_domain();
    *out = c;
    return SW_OK;
}

/*
 * The index of a coordinate (tokens ctok[0..cn), values from *cval) against
 * the view v. Coordinates pair positionally with v's children.
 */
static sw_status index_coord(sw_lview v, const int32_t *ctok, int32_t cn,
                             const int64_t **cval, uint32_t flags,
                             int64_t *acc) {
    if (flags & SW_INDEX_EXACT) {
        int32_t given = count_children(ctok, cn);
        int32_t modes = count_children(v.tok, v.ntok);
        if (given > modes)
            return sw_fail(SW_EINDEX, "Key has %d coordinates for %d modes",
                           (int)given, (int)modes);
    }
    int32_t vp = 0, vl = 0; /* position in v's tokens and leaves */
    for (int32_t cp = 0; cp < cn; ++cp) {
        int32_t ct = ctok[cp];
        if (vp >= v.ntok) {
            /* An extra coordinate: skip it, consuming its values. */
            int32_t leaves = 0;
            cp = sw_tok_skip(ctok, cp, &leaves);
            *cval += leaves;
            continue;
        }
        int32_t vstart = vp, vleaf = vl;
        vp = sw_tok_skip(v.tok, vp, &vl) + 1;
        if (v.tok[vstart] != SW_TOK_PUSH) {
            /* A leaf mode takes an integer in [0, extent). */
            if (ct == SW_TOK_PUSH)
                return sw_fail(SW_ETYPE,
                               "Coordinate for a leaf mode must be an integer");
            int64_t c = 0;
            sw_status st = mode_coord(*(*cval)++, v.ext[vleaf], flags, &c);
            if (st)
                return st;
            *acc += c * v.str[vleaf];
            continue;
        }
        sw_lview sub = {v.tok + vstart + 1, vp - vstart - 2, v.ext + vleaf,
                        v.str + vleaf};
        int32_t nsub = vl - vleaf;
        if (ct != SW_TOK_PUSH) {
            /* An integer for a nested mode is its logical index. */
            int64_t c = 0, size = 1;
            sw_status st = sw_lview_size(sub, &size);
            if (st == SW_OK)
                st = mode_coord(*(*cval)++, size, flags, &c);
            if (st)
                return st;
            *acc += split_index(c, nsub, sub.ext, sub.str);
            continue;
        }
        int32_t cend = sw_tok_skip(ctok, cp, NULL);
        sw_status st =
            index_coord(sub, ctok + cp + 1, cend - cp - 1, cval, flags, acc);
        if (st)
            return st;
        cp = cend;
    }
    return SW_OK;
}

sw_status sw_layout_index_coord(const sw_layout *l, int32_t ntok,
                                const int32_t *recipe, const int64_t *values,
                                int64_t *out) {
    return sw_layout_index_coord_ex(l, ntok, recipe, values, 0, out);
}

sw_status sw_layout_index_ex(const sw_layout *l, int64_t i, uint32_t flags,
                             int64_t *out) {
    int64_t c = 0;
    if (flags & ~(uint32_t)(SW_INDEX_WRAP | SW_INDEX_EXACT))
        return sw_fail(SW_EVALUE, "unknown index flags %u", (unsigned)flags);
    sw_status st = mode_coord(i, l->size, flags, &c);
    if (st)
        return st;
    *out = split_index(c, l->nleaf, l->shape->val, l->stride->val);
    return SW_OK;
}

sw_status sw_layout_index_coord_ex(const sw_layout *l, int32_t ntok,
                                   const int32_t *recipe, const int64_t *values,
                                   uint32_t flags, int64_t *out) {
    int32_t nleaf, rank, depth;
    if (flags & ~(uint32_t)(SW_INDEX_WRAP | SW_INDEX_EXACT))
        return sw_fail(SW_EVALUE, "unknown index flags %u", (unsigned)flags);
    sw_status st = sw_recipe_scan(ntok, recipe, 0, &nleaf, &rank, &depth);
    if (st)
        return st;
    int64_t acc = 0;
    const int64_t *cval = values;
    st = index_coord(sw_lview_of(l), recipe, ntok, &cval, flags, &acc);
    if (st)
        return st;
    *out = acc;
    return SW_OK;
}

/* ------------------------------------------------------------- structure */

/* Mode i with its own PUSH/POP kept, ready to copy as one child. */
static sw_lview raw_mode(const sw_layout *l, int32_t i) {
    int32_t tb = l->mode_tok[i], lb = l->mode_leaf[i];
    sw_lview v = {l->shape->tok + tb, l->mode_tok[i + 1] - tb,
                  l->shape->val + lb, l->stride->val + lb};
    return v;
}

sw_status sw_layout_mode(const sw_layout *l, int32_t i, sw_layout **out) {
    if (i < 0 || i >= l->rank)
        return sw_fail(SW_EINDEX, "Layout mode %d out of range (rank %d)",
                       (int)i, (int)l->rank);
    return sw_layout_of_view(sw_lview_child(sw_lview_of(l), i), out);
}

sw_status sw_layout_select(const sw_layout *l, int32_t n, const int32_t *idx,
                           sw_layout **out) {
    sw_lb b;
    if (n < 0)
        return sw_fail(SW_EVALUE, "negative selection count");
    for (int32_t k = 0; k < n; ++k)
        if (idx[k] < 0 || idx[k] >= l->rank)
            return sw_fail(SW_EINDEX, "Layout mode %d out of range (rank %d)",
                           (int)idx[k], (int)l->rank);
    sw_lb_init(&b);
    for (int32_t k = 0; k < n; ++k)
        sw_lb_view(&b, raw_mode(l, idx[k]));
    return sw_lb_finish(&b, out);
}

sw_status sw_layout_permute(const sw_layout *l, int32_t n, const int32_t *order,
                            sw_layout **out) {
    if (n != l->rank)
        return sw_fail(SW_EVALUE,
                       "Permutation dimensions must reorder every layout mode");
    uint64_t seen_small = 0;
    uint8_t *seen = NULL;
    if (n > 64) {
        seen = sw_calloc((size_t)n, 1);
        if (!seen)
            return sw_oom();
    }
    for (int32_t k = 0; k < n; ++k) {
        int32_t o = order[k];
        int dup = 0;
        if (o >= 0 && o < n) {
            if (seen) {
                dup = seen[o];
                seen[o] = 1;
            } else {
                dup = (int)((seen_small >> o) & 1u);
                seen_small |= (uint64_t)1 << o;
            }
        }
        if (o < 0 || o >= n || dup) {
            sw_free(seen);
            return sw_fail(
                SW_EVALUE,
                "Permutation dimensions must reorder every layout mode");
        }
    }
    sw_free(seen);
    return sw_layout_select(l, n, order, out);
}

sw_status sw_layout_concat(const sw_layout *a, const sw_layout *b,
                           sw_layout **out) {
    sw_lb r;
    sw_lb_init(&r);
    sw_lb_view(&r, sw_lview_of(a));
    sw_lb_view(&r, sw_lview_of(b));
    return sw_lb_finish(&r, out);
}

sw_status sw_layout_append(const sw_layout *a, const sw_layout *b,
                           sw_layout **out) {
    sw_lb r;
    sw_lb_init(&r);
    sw_lb_view(&r, sw_lview_of(a));
    sw_lb_append(&r, b);
    return sw_lb_finish(&r, out);
}

sw_status sw_layout_make(int32_t n, sw_layout *const *layouts,
                         sw_layout **out) {
    sw_lb r;
    if (n < 0)
        return sw_fail(SW_EVALUE, "negative layout count");
    sw_lb_init(&r);
    for (int32_t i = 0; i < n; ++i)
        sw_lb_append(&r, layouts[i]);
    return sw_lb_finish(&r, out);
}

sw_status sw_layout_flatten(const sw_layout *l, sw_layout **out) {
    return sw_layout_from_pairs(l->nleaf, l->shape->val, l->stride->val, out);
}

/* ------------------------------------------------- extraction, rearrange */

static sw_status profile_mismatch(void) {
    return sw_fail(SW_EVALUE, "layout and tree profile do not match");
}

/*
 * Collects the pieces of view v selected by the profile tokens
 * prof[0..np): a profile leaf takes the whole child, a profile tuple
 * recurses into it. views must have room for every profile leaf.
 */
static sw_status extract_views(sw_lview v, const int32_t *prof, int32_t np,
                               sw_lview *views, int32_t *n) {
    int32_t rank = sw_lview_rank(v), k = 0;
    for (int32_t p = 0; p < np; ++p, ++k) {
        if (k >= rank)
            return profile_mismatch();
        sw_lview child = sw_lview_child(v, k);
        if (prof[p] != SW_TOK_PUSH) {
            views[(*n)++] = child;
            continue;
        }
        int32_t end = sw_tok_skip(prof, p, NULL);
        sw_status st =
            extract_views(child, prof + p + 1, end - p - 1, views, n);
        if (st)
            return st;
        p = end;
    }
    return k == rank ? SW_OK : profile_mismatch();
}

/*
 * Extracts the pieces of l into a fresh array of views (freed by the
 * caller with sw_free). With np < 0 every leaf is a piece.
 */
static sw_status extract_all(const sw_layout *l, int32_t np,
                             const int32_t *prof, sw_lview **views,
                             int32_t *n) {
    int32_t nleaf = l->nleaf, rank, depth, cap;
    if (np >= 0) {
        sw_status st = sw_recipe_scan(np, prof, 1, &cap, &rank, &depth);
        if (st)
            return st;
    } else {
        cap = nleaf;
    }
    sw_lview *v = sw_malloc((size_t)(cap + 1) * sizeof(sw_lview));
    if (!v)
        return sw_oom();
    *n = 0;
    if (np < 0) {
        for (int32_t i = 0; i < nleaf; ++i) {
            sw_lview leaf = {&leaf_token, 1, l->shape->val + i,
                             l->stride->val + i};
            v[(*n)++] = leaf;
        }
    } else {
        sw_status st = extract_views(sw_lview_of(l), prof, np, v, n);
        if (st) {
            sw_free(v);
            return st;
        }
    }
    *views = v;
    return SW_OK;
}

sw_status sw_layout_extract(const sw_layout *l, int32_t np, const int32_t *prof,
                            int32_t cap, sw_layout **pieces, int32_t *count) {
    sw_lview *views;
    int32_t n;
    sw_status st = extract_all(l, np, prof, &views, &n);
    if (st)
        return st;
    if (n > cap) {
        sw_free(views);
        *count = n;
        return sw_fail(SW_EINDEX, "extract needs room for %d pieces", (int)n);
    }
    /* Pieces are made into scratch space so that a failure leaves the
     * caller's array untouched. */
    sw_layout **made = sw_calloc((size_t)n + 1, sizeof(sw_layout *));
    if (!made) {
        sw_free(views);
        return sw_oom();
    }
    for (int32_t i = 0; i < n && !st; ++i)
        st = sw_layout_of_view(views[i], &made[i]);
    sw_free(views);
    if (st) {
        for (int32_t i = 0; i < n; ++i)
            sw_layout_unref(made[i]);
        sw_free(made);
        return st;
    }
    memcpy(pieces, made, (size_t)n * sizeof(sw_layout *));
    sw_free(made);
    *count = n;
    return SW_OK;
}

sw_status sw_lview_size(sw_lview v, int64_t *out) {
    int64_t size = 1;
    int32_t n = sw_lview_nleaf(v);
    for (int32_t i = 0; i < n; ++i)
        if (!sw_mul_ok(size, v.ext[i], &size))
            return sw_fail(SW_EVALUE, "Shape size overflows 64-bit integers");
    *out = size;
    return SW_OK;
}

sw_status sw_layout_rearrange(const sw_layout *l, int32_t nout,
                              const int32_t *output, int32_t nsel,
                              const int32_t *selection, sw_layout **out) {
    int32_t nleaf, rank, depth, n;
    sw_lview *views;
    sw_status st = sw_recipe_scan(nout, output, 1, &nleaf, &rank, &depth);
    if (st)
        return st;
    st = extract_all(l, nsel, selection, &views, &n);
    if (st)
        return st;
    int32_t *used = sw_calloc((size_t)n + 1, sizeof(int32_t));
    int32_t *open = sw_malloc((size_t)depth * sizeof(int32_t));
    sw_lb b;
    sw_lb_init(&b);
    if (!used || !open)
        sw_lb_fail(&b, sw_oom());
    int32_t nopen = 0;
    for (int32_t p = 0; p < nout && !b.st; ++p) {
        int32_t t = output[p];
        if (t >= 0) {
            if (t >= n) {
                sw_lb_fail(&b, sw_fail(SW_EVALUE,
                                       "Layout rearrange id is out of range"));
                break;
            }
            ++used[t];
            sw_lb_append_view(&b, views[t]);
        } else if (t == SW_TOK_LEAF) {
            sw_lb_leaf(&b, 1, 0);
        } else if (t == SW_TOK_PUSH) {
            open[nopen++] = b.ntok;
            sw_lb_push(&b);
        } else {
            /* A subtree joins by the append rule: flat if int-like. */
            int32_t start = open[--nopen], inner = b.ntok - start - 1;
            if (inner == 0 || (inner == 1 && b.tok[start + 1] != SW_TOK_PUSH)) {
                if (inner == 1)
                    b.tok[start] = b.tok[start + 1];
                b.ntok = start + inner;
            } else {
                sw_lb_pop(&b);
            }
        }
    }
    for (int32_t i = 0; i < n && !b.st; ++i)
        if (used[i] > 1)
            sw_lb_fail(&b, sw_fail(SW_EVALUE, "Layout rearrange ids must not "
                                              "be duplicated"));
    for (int32_t i = 0; i < n && !b.st; ++i) {
        int64_t size = 1;
        if (used[i] != 0)
            continue;
        sw_status zs = sw_lview_size(views[i], &size);
        if (zs)
            sw_lb_fail(&b, zs);
        else if (size != 1)
            sw_lb_fail(&b, sw_fail(SW_EVALUE,
                                   "Layout rearrange ids must include every "
                                   "extracted layout"));
    }
    sw_free(used);
    sw_free(open);
    sw_free(views);
    return sw_lb_finish(&b, out);
}

sw_status sw_rearrange_reverse(int32_t nout, const int32_t *output,
                               int32_t nsel, const int32_t *selection,
                               int32_t *nrev_out, int32_t **rev_out,
                               int32_t *nrev_sel, int32_t **rev_sel) {
    int32_t outleaves, selleaves, rank, depth;
    sw_status st = sw_recipe_scan(nout, output, 1, &outleaves, &rank, &depth);
    if (!st)
        st = sw_recipe_scan(nsel, selection, 1, &selleaves, &rank, &depth);
    if (st)
        return st;
    /* pos[s]: position of source piece s in the output's leaf order. */
    int32_t *pos = sw_malloc((size_t)(selleaves + 1) * sizeof(int32_t));
    int32_t *ro = sw_malloc((size_t)(nsel + 1) * sizeof(int32_t));
    int32_t *rs = sw_malloc((size_t)(nout + 1) * sizeof(int32_t));
    if (!pos || !ro || !rs) {
        st = sw_oom();
        goto fail;
    }
    for (int32_t s = 0; s < selleaves; ++s)
        pos[s] = -1;
    for (int32_t p = 0, leaf = 0; p < nout; ++p) {
        int32_t t = output[p];
        rs[p] = (t >= 0) ? SW_TOK_LEAF : t;
        if (t == SW_TOK_PUSH || t == SW_TOK_POP)
            continue;
        if (t >= 0) {
            if (t >= selleaves) {
                st = sw_fail(SW_EVALUE, "Layout rearrange id is out of range");
                goto fail;
            }
            if (pos[t] >= 0) {
                st = sw_fail(SW_EVALUE,
                             "Layout rearrange ids must not be duplicated");
                goto fail;
            }
            pos[t] = leaf;
        }
        ++leaf;
    }
    for (int32_t p = 0, s = 0; p < nsel; ++p) {
        int32_t t = selection[p];
        if (t == SW_TOK_PUSH || t == SW_TOK_POP) {
            ro[p] = t;
            continue;
        }
        ro[p] = pos[s] >= 0 ? pos[s] : SW_TOK_LEAF;
        ++s;
    }
    sw_free(pos);
    *nrev_out = nsel;
    *rev_out = ro;
    *nrev_sel = nout;
    *rev_sel = rs;
    return SW_OK;
fail:
    sw_free(pos);
    sw_free(ro);
    sw_free(rs);
    return st;
}

void sw_free_recipe(int32_t *recipe) {
    sw_free(recipe);
}
