/*
 * The layout algebra: coalesce, filter, composition, complement, divides,
 * products, inverses and the injectivity predicates. Definitions and names
 * follow CuTe; where a result's exact tree matters (coalesce, composition,
 * divides) the construction follows the earlier StrideWeave implementation.
 *
 * Most functions work on a flat list of (extent, stride) pairs: a layout's
 * function depends only on its leaves in infix order, and the hierarchy of
 * a result is rebuilt from the operands' structure afterwards.
 */
#include <stdlib.h>
#include <string.h>

#include "layout/internal.h"

/* A flat list of (extent, stride) pairs, with a third optional array. */
typedef struct pairs {
    int32_t n;
    int64_t *e;
    int64_t *d;
    int64_t *x; /* domain strides, used by the inverses */
} pairs;

static sw_status pairs_alloc(pairs *p, int32_t cap) {
    p->n = 0;
    p->e = sw_malloc((size_t)(cap + 1) * sizeof(int64_t));
    p->d = sw_malloc((size_t)(cap + 1) * sizeof(int64_t));
    p->x = sw_malloc((size_t)(cap + 1) * sizeof(int64_t));
    if (!p->e || !p->d || !p->x) {
        sw_free(p->e);
        sw_free(p->d);
        sw_free(p->x);
        p->e = p->d = p->x = NULL;
        return sw_oom();
    }
    return SW_OK;
}

static void pairs_free(pairs *p) {
    sw_free(p->e);
    sw_free(p->d);
    sw_free(p->x);
    p->e = p->d = p->x = NULL;
}

static void pairs_add(pairs *p, int64_t e, int64_t d) {
    p->e[p->n] = e;
    p->d[p->n] = d;
    p->x[p->n] = 0;
    p->n++;
}

/* The leaves of a view as pairs (cap for extra pairs added later). */
static sw_status pairs_of_view(sw_lview v, int32_t extra, pairs *p) {
    int32_t n = sw_lview_nleaf(v);
    sw_status st = pairs_alloc(p, n + extra);
    if (st)
        return st;
    for (int32_t i = 0; i < n; ++i)
        pairs_add(p, v.ext[i], v.str[i]);
    return SW_OK;
}

/*
 * Coalesces pairs in place: extent-1 pairs after the first are dropped, a
 * leading extent-1 pair is replaced by the next, and a pair whose stride
 * continues its predecessor (d[k] == e[k-1]*d[k-1]) merges into it.
 * SW_EVALUE if a merged extent overflows (the pairs' size does not fit).
 */
static sw_status coalesce_pairs(pairs *p) {
    if (p->n == 0)
        return SW_OK;
    int32_t m = 1;
    for (int32_t k = 1; k < p->n; ++k) {
        int64_t span;
        if (p->e[k] == 1)
            continue;
        if (p->e[m - 1] == 1) {
            p->e[m - 1] = p->e[k];
            p->d[m - 1] = p->d[k];
        } else if (sw_mul_ok(p->e[m - 1], p->d[m - 1], &span) &&
                   span == p->d[k]) {
            if (!sw_mul_ok(p->e[m - 1], p->e[k], &p->e[m - 1]))
                return sw_fail(SW_EVALUE,
                               "coalesce: the size overflows 64-bit integers");
        } else {
            p->e[m] = p->e[k];
            p->d[m] = p->d[k];
            ++m;
        }
    }
    p->n = m;
    return SW_OK;
}

/* Keeps only the pairs that move: extent > 1 and stride > 0. */
static void drop_still_pairs(pairs *p) {
    int32_t m = 0;
    for (int32_t k = 0; k < p->n; ++k) {
        if (p->e[k] > 1 && p->d[k] > 0) {
            p->e[m] = p->e[k];
            p->d[m] = p->d[k];
            p->x[m] = p->x[k];
            ++m;
        }
    }
    p->n = m;
}

/* Sorts pairs by stride, keeping the original order among equal strides. */
static void sort_by_stride(pairs *p) {
    for (int32_t i = 1; i < p->n; ++i) {
        int64_t e = p->e[i], d = p->d[i], x = p->x[i];
        int32_t j = i;
        for (; j > 0 && p->d[j - 1] > d; --j) {
            p->e[j] = p->e[j - 1];
            p->d[j] = p->d[j - 1];
            p->x[j] = p->x[j - 1];
        }
        p->e[j] = e;
        p->d[j] = d;
        p->x[j] = x;
    }
}

/* Adds pairs to a builder: one pair as a flat leaf, several as a tuple. */
static void lb_pairs(sw_lb *b, const pairs *p) {
    if (p->n == 1) {
        sw_lb_leaf(b, p->e[0], p->d[0]);
        return;
    }
    sw_lb_push(b);
    for (int32_t i = 0; i < p->n; ++i)
        sw_lb_leaf(b, p->e[i], p->d[i]);
    sw_lb_pop(b);
}

static sw_status finish_pairs(pairs *p, sw_layout **out) {
    sw_status st = p->n ? sw_layout_from_pairs(p->n, p->e, p->d, out)
                        : sw_layout_leaf(1, 0, out);
    pairs_free(p);
    return st;
}

/* --------------------------------------------------------------- coalesce */

sw_status sw_layout_coalesce(const sw_layout *l, sw_layout **out) {
    if (l->nleaf <= 1) {
        *out = sw_layout_retain((sw_layout *)l);
        return SW_OK;
    }
    pairs p;
    sw_status st = pairs_of_view(sw_lview_of(l), 0, &p);
    if (st)
        return st;
    if ((st = coalesce_pairs(&p))) {
        pairs_free(&p);
        return st;
    }
    return finish_pairs(&p, out);
}

/* Adds the coalesced form of a view by the append rule. */
static void lb_coalesced(sw_lb *b, sw_lview v) {
    if (sw_lview_nleaf(v) <= 1) {
        sw_lb_append_view(b, v);
        return;
    }
    pairs p;
    sw_status st = pairs_of_view(v, 0, &p);
    if (st) {
        sw_lb_fail(b, st);
        return;
    }
    if ((st = coalesce_pairs(&p)))
        sw_lb_fail(b, st);
    else
        lb_pairs(b, &p);
    pairs_free(&p);
}

/* Walks a profile like extract_views, coalescing at each profile leaf. */
static sw_status coalesce_walk(sw_lb *b, sw_lview v, const int32_t *prof,
                               int32_t np) {
    int32_t rank = sw_lview_rank(v), k = 0;
    for (int32_t p = 0; p < np; ++p, ++k) {
        if (k >= rank)
            return sw_fail(SW_EVALUE, "layout and tree profile do not match");
        sw_lview child = sw_lview_child(v, k);
        if (prof[p] != SW_TOK_PUSH) {
            lb_coalesced(b, child);
            continue;
        }
        int32_t end = sw_tok_skip(prof, p, NULL);
        sw_lb_push(b);
        sw_status st = coalesce_walk(b, child, prof + p + 1, end - p - 1);
        if (st)
            return st;
        sw_lb_pop(b);
        p = end;
    }
    if (k != rank)
        return sw_fail(SW_EVALUE, "layout and tree profile do not match");
    return SW_OK;
}

sw_status sw_layout_coalesce_profile(const sw_layout *l, int32_t np,
                                     const int32_t *prof, sw_layout **out) {
    int32_t nleaf, rank, depth;
    sw_status st = sw_recipe_scan(np, prof, 1, &nleaf, &rank, &depth);
    if (st)
        return st;
    sw_lb b;
    sw_lb_init(&b);
    st = coalesce_walk(&b, sw_lview_of(l), prof, np);
    if (st) {
        sw_lb_free(&b);
        return st;
    }
    return sw_lb_finish(&b, out);
}

sw_status sw_layout_filter(const sw_layout *l, sw_layout **out) {
    pairs p;
    sw_status st = pairs_of_view(sw_lview_of(l), 0, &p);
    if (st)
        return st;
    drop_still_pairs(&p);
    if ((st = coalesce_pairs(&p))) {
        pairs_free(&p);
        return st;
    }
    return finish_pairs(&p, out);
}

/* ------------------------------------------------------------ composition */

/*
 * choose: C(j) == A(d*j). Walks A's pairs dividing d out of the leading
 * extents. For composition (named is NULL) the last pair is unbounded (A
 * extends along its last mode), so it takes whatever factor remains
 * without a divisibility condition. For the public choose (named is A),
 * every pair must divide, as in the reference.
 */
static sw_status choose_pairs(const pairs *a, int64_t d, pairs *c,
                              const sw_layout *named) {
    char name[160];
    int64_t r = d;
    c->n = 0;
    for (int32_t k = 0; k < a->n; ++k) {
        int64_t s = a->e[k], t = a->d[k], td;
        int last = !named && k == a->n - 1;
        if (r == 1) {
            pairs_add(c, s, t);
            c->x[c->n - 1] = 1;
            continue;
        }
        int divides = last || (s > r ? s % r == 0 : r % s == 0);
        if (!divides && named)
            return sw_fail(SW_EVALUE,
                           "Can not choose the %lld-th element of Layout %s: "
                           "%lld can not be reduced by %lld",
                           (long long)d,
                           sw_layout_str(named, name, sizeof name),
                           (long long)s, (long long)r);
        if (!divides)
            return sw_fail(SW_EVALUE,
                           "composition: stride %lld of B does not divide "
                           "mode %lld:%lld of A",
                           (long long)r, (long long)s, (long long)t);
        if (!sw_mul_ok(t, r, &td)) {
            if (named)
                return sw_fail(SW_EVALUE,
                               "Can not choose the %lld-th element of Layout "
                               "%s: stride %lld times %lld overflows 64-bit "
                               "integers",
                               (long long)d,
                               sw_layout_str(named, name, sizeof name),
                               (long long)t, (long long)r);
            return sw_fail(SW_EVALUE,
                           "composition: stride %lld of B overflows 64-bit "
                           "integers in mode %lld:%lld of A",
                           (long long)d, (long long)s, (long long)t);
        }
        if (last) {
            /* ceil(s / r), without the overflow of s + r - 1 */
            pairs_add(c, s / r + (s % r != 0), td);
            c->x[c->n - 1] = r;
            r = 1;
        } else if (s > r) {
            pairs_add(c, s / r, td);
            c->x[c->n - 1] = r;
            r = 1;
        } else {
            pairs_add(c, 1, td);
            c->x[c->n - 1] = r;
            r /= s;
        }
    }
    return SW_OK;
}

/*
 * modout: keeps the first n elements of C, mode by mode. For composition
 * (named is NULL) the last pair is unbounded, so it takes whatever count
 * remains. For the public modout (named is A) a C of at most n elements is
 * kept whole, as in the reference.
 */
static sw_status modout_pairs(pairs *c, int64_t n, const sw_layout *named) {
    char name[160];
    int64_t cur = 1;
    for (int32_t k = 0; k < c->n; ++k) {
        int64_t s = c->e[k], full;
        int last = !named && k == c->n - 1;
        if (cur == n) {
            c->e[k] = 1;
        } else if (!last && sw_mul_ok(s, cur, &full) && full <= n) {
            cur = full;
        } else {
            if (n % cur != 0 && named)
                return sw_fail(SW_EVALUE,
                               "Shape divisibility condition not met for %s "
                               "and %lld",
                               sw_layout_str(named, name, sizeof name),
                               (long long)n);
            if (n % cur != 0)
                return sw_fail(SW_EVALUE,
                               "composition: extent %lld of B does not fit "
                               "the modes of A (it is not a multiple of %lld)",
                               (long long)n, (long long)cur);
            c->e[k] = n / cur;
            cur = n;
        }
    }
    return SW_OK;
}

/*
 * The coalesced pairs of A o (n:d) into c (room for a->n pairs).
 *
 * Composition distributes over the modes of B, which is exact only while
 * the images of B's leaves add up inside A without carrying from one mode
 * of A into the next (A is linear within a mode, not across modes). Each
 * leaf steps mode k of A in digits of c->x[k], up to c->e[k] of them;
 * usage[k] sums the largest digit every leaf can contribute, and the
 * composition is refused once a mode other than the last (which extends)
 * could overflow.
 */
static sw_status compose_leaf(const pairs *a, int64_t n, int64_t d,
                              int64_t *usage, pairs *c) {
    if (d == 0) {
        c->n = 0;
        pairs_add(c, n, 0);
        return SW_OK;
    }
    sw_status st = choose_pairs(a, d, c, NULL);
    if (!st)
        st = modout_pairs(c, n, NULL);
    if (st)
        return st;
    for (int32_t k = 0; k + 1 < c->n; ++k) {
        /* Usage past a->e[k] is refused, so an overflowing sum is too. */
        int64_t digit;
        if (!sw_mul_ok(c->x[k], c->e[k] - 1, &digit) ||
            !sw_add_ok(usage[k], digit, &usage[k]) || usage[k] >= a->e[k])
            return sw_fail(SW_EVALUE,
                           "composition: the modes of B overlap in mode "
                           "%lld:%lld of A, so A o B is not a layout",
                           (long long)a->e[k], (long long)a->d[k]);
    }
    return coalesce_pairs(c);
}

/*
 * A o B for a view B: one result mode per mode of B (a leaf mode composes
 * directly, a tuple mode recursively); a result of one mode is unwrapped.
 */
static sw_status compose_view(const pairs *a, sw_lview bv, int64_t *usage,
                              sw_layout **out) {
    sw_lb b;
    pairs c;
    sw_status st = pairs_alloc(&c, a->n);
    if (st)
        return st;
    sw_lb_init(&b);
    int32_t rank = sw_lview_rank(bv);
    for (int32_t i = 0; i < rank && !b.st; ++i) {
        sw_lview child = sw_lview_child(bv, i);
        if (sw_lview_child_is_leaf(bv, i)) {
            st = compose_leaf(a, child.ext[0], child.str[0], usage, &c);
            if (st)
                sw_lb_fail(&b, st);
            else
                lb_pairs(&b, &c);
        } else {
            sw_layout *r = NULL;
            st = compose_view(a, child, usage, &r);
            if (st)
                sw_lb_fail(&b, st);
            else
                sw_lb_append(&b, r);
            sw_layout_unref(r);
        }
    }
    pairs_free(&c);
    sw_layout *l = NULL;
    st = sw_lb_finish(&b, &l);
    if (st)
        return st;
    if (l->rank != 1) {
        *out = l;
        return SW_OK;
    }
    st = sw_layout_mode(l, 0, out);
    sw_layout_unref(l);
    return st;
}

/* A's leaves, coalesced, as the left operand of a composition. */
static sw_status compose_lhs(sw_lview v, pairs *a) {
    if (sw_lview_nleaf(v) == 0)
        return sw_fail(SW_EVALUE, "composition: A is the empty layout");
    sw_status st = pairs_of_view(v, 0, a);
    if (st)
        return st;
    if ((st = coalesce_pairs(a)))
        pairs_free(a);
    return st;
}

static sw_status compose_views(sw_lview av, sw_lview bv, sw_layout **out) {
    pairs a;
    sw_status st = compose_lhs(av, &a);
    if (st)
        return st;
    int64_t *usage = sw_calloc((size_t)a.n + 1, sizeof(int64_t));
    if (!usage) {
        pairs_free(&a);
        return sw_oom();
    }
    st = compose_view(&a, bv, usage, out);
    sw_free(usage);
    pairs_free(&a);
    return st;
}

sw_status sw_layout_compose(const sw_layout *a, const sw_layout *b,
                            sw_layout **out) {
    return compose_views(sw_lview_of(a), sw_lview_of(b), out);
}

static sw_status check_tiler(const sw_layout *a, int32_t n,
                             sw_layout *const *tiler) {
    if (n < 0 || (n > 0 && tiler == NULL))
        return sw_fail(SW_EVALUE, "tiler is missing");
    if (n > a->rank)
        return sw_fail(SW_EVALUE,
                       "tiler has %d modes but the layout has only %d", (int)n,
                       (int)a->rank);
    return SW_OK;
}

/* Adds modes [from, rank) of a unchanged. */
static void lb_rest(sw_lb *b, const sw_layout *a, int32_t from) {
    sw_lview v = sw_lview_of(a);
    for (int32_t i = from; i < a->rank; ++i)
        sw_lb_append_view(b, sw_lview_child(v, i));
}

sw_status sw_layout_compose_tiler(const sw_layout *a, int32_t n,
                                  sw_layout *const *tiler, sw_layout **out) {
    sw_status st = check_tiler(a, n, tiler);
    if (st)
        return st;
    sw_lb b;
    sw_lb_init(&b);
    for (int32_t i = 0; i < n && !b.st; ++i) {
        sw_layout *r = NULL;
        st = compose_views(sw_lview_child(sw_lview_of(a), i),
                           sw_lview_of(tiler[i]), &r);
        if (st)
            sw_lb_fail(&b, st);
        else
            sw_lb_append(&b, r);
        sw_layout_unref(r);
    }
    lb_rest(&b, a, n);
    return sw_lb_finish(&b, out);
}

/* The compact column-major layout of a view's shape. */
static sw_status compact_of(sw_lview v, sw_layout **out) {
    int32_t n = sw_lview_nleaf(v);
    int64_t *str = sw_malloc((size_t)(n + 1) * sizeof(int64_t));
    if (!str)
        return sw_oom();
    int64_t acc = 1;
    for (int32_t i = 0; i < n; ++i) {
        str[i] = acc;
        if (!sw_mul_ok(acc, v.ext[i], &acc)) {
            sw_free(str);
            return sw_fail(SW_EVALUE, "Shape size overflows 64-bit integers");
        }
    }
    sw_lview c = {v.tok, v.ntok, v.ext, str};
    sw_status st = sw_layout_of_view(c, out);
    sw_free(str);
    return st;
}

sw_status sw_layout_compose_shape(const sw_layout *a, const sw_tree *shape,
                                  sw_layout **out) {
    if (sw_tree_get_kind(shape) != SW_TREE_SHAPE)
        return sw_fail(SW_ETYPE, "composition needs a Shape tree");
    int32_t n = sw_tree_rank(shape);
    sw_status st = SW_OK;
    sw_layout **tiler = sw_calloc((size_t)n + 1, sizeof(sw_layout *));
    if (!tiler)
        return sw_oom();
    sw_lview sv = {sw_tree_recipe(shape), sw_tree_ntok(shape),
                   sw_tree_values(shape), sw_tree_values(shape)};
    for (int32_t i = 0; i < n && !st; ++i)
        st = compact_of(sw_lview_child(sv, i), &tiler[i]);
    if (!st)
        st = sw_layout_compose_tiler(a, n, tiler, out);
    for (int32_t i = 0; i < n; ++i)
        sw_layout_unref(tiler[i]);
    sw_free(tiler);
    return st;
}

sw_status sw_layout_choose(const sw_layout *a, int64_t d, sw_layout **out) {
    char name[160];
    if (d < 1)
        return sw_fail(SW_EVALUE, "choose: the stride must be positive");
    if (a->size % d != 0)
        return sw_fail(SW_EVALUE,
                       "Can not choose the %lld-th element of "
                       "Layout %s",
                       (long long)d, sw_layout_str(a, name, sizeof name));
    pairs p, c;
    sw_status st = pairs_of_view(sw_lview_of(a), 0, &p);
    if (st)
        return st;
    st = pairs_alloc(&c, p.n);
    if (!st) {
        st = choose_pairs(&p, d, &c, a);
        if (!st)
            st = sw_layout_from_pairs(c.n, c.e, c.d, out);
        pairs_free(&c);
    }
    pairs_free(&p);
    return st;
}

sw_status sw_layout_modout(const sw_layout *a, int64_t s, sw_layout **out) {
    if (s < 1)
        return sw_fail(SW_EVALUE, "modout: the count must be positive");
    pairs p;
    sw_status st = pairs_of_view(sw_lview_of(a), 0, &p);
    if (st)
        return st;
    st = modout_pairs(&p, s, a);
    if (!st)
        st = sw_layout_from_pairs(p.n, p.e, p.d, out);
    pairs_free(&p);
    return st;
}

/* ------------------------------------------------------------- complement */

/*
 * The pairs filling the gaps between A's sorted strides (and, when
 * cotarget > 0, from A's span up to the cotarget).
 */
static sw_status complement_pairs(const sw_layout *a, int64_t cotarget,
                                  pairs *out) {
    char name[160];
    pairs p;
    sw_status st = pairs_of_view(sw_lview_of(a), 0, &p);
    if (st)
        return st;
    st = pairs_alloc(out, 2 * p.n + 2);
    if (st) {
        pairs_free(&p);
        return st;
    }
    drop_still_pairs(&p);
    sort_by_stride(&p);
    if (p.n == 0) {
        if (cotarget > 1)
            pairs_add(out, cotarget, 1);
        pairs_free(&p);
        return SW_OK;
    }
    if (p.d[0] != 1)
        pairs_add(out, p.d[0], 1);
    for (int32_t i = 0; i + 1 < p.n && !st; ++i) {
        int64_t ns;
        if (!sw_mul_ok(p.e[i], p.d[i], &ns) || ns > p.d[i + 1])
            st = sw_fail(SW_EVALUE, "Layout %s overlaps with itself",
                         sw_layout_str(a, name, sizeof name));
        else if (p.d[i + 1] % ns != 0)
            st = sw_fail(SW_EVALUE,
                         "Layout %s is incongruent: stride %lld is not a "
                         "multiple of %lld",
                         sw_layout_str(a, name, sizeof name),
                         (long long)p.d[i + 1], (long long)ns);
        else if (ns != p.d[i + 1])
            pairs_add(out, p.d[i + 1] / ns, ns);
    }
    if (!st && cotarget > 0) {
        int64_t ns;
        int32_t k = p.n - 1;
        if (!sw_mul_ok(p.e[k], p.d[k], &ns) || ns > cotarget)
            st = sw_fail(SW_EVALUE, "Layout %s is larger than cotarget %lld",
                         sw_layout_str(a, name, sizeof name),
                         (long long)cotarget);
        else if (cotarget % ns != 0)
            st = sw_fail(SW_EVALUE,
                         "Layout %s is incongruent with cotarget %lld: the "
                         "cotarget is not a multiple of its span %lld",
                         sw_layout_str(a, name, sizeof name),
                         (long long)cotarget, (long long)ns);
        else if (ns != cotarget)
            pairs_add(out, cotarget / ns, ns);
    }
    pairs_free(&p);
    if (st)
        pairs_free(out);
    return st;
}

sw_status sw_layout_complement(const sw_layout *a, int64_t cotarget,
                               sw_layout **out) {
    if (cotarget < 0)
        return sw_fail(SW_EVALUE, "complement: cotarget must not be negative");
    pairs c;
    sw_status st = complement_pairs(a, cotarget, &c);
    if (st)
        return st;
    return finish_pairs(&c, out);
}

/* ---------------------------------------------------------------- divides */

/* The tile (B, complement(B, size)) that divides a mode of that size. */
static sw_status divide_tile(const sw_layout *b, int64_t size,
                             sw_layout **out) {
    sw_layout *c = NULL;
    sw_status st = sw_layout_complement(b, size, &c);
    if (st) {
        char inner[256], name[160];
        strncpy(inner, sw_errmsg(), sizeof inner - 1);
        inner[sizeof inner - 1] = '\0';
        return sw_fail(st, "%s does not tile a mode of size %lld (%s)",
                       sw_layout_str(b, name, sizeof name), (long long)size,
                       inner);
    }
    sw_lb r;
    sw_lb_init(&r);
    sw_lb_append(&r, b);
    sw_lb_append(&r, c);
    sw_layout_unref(c);
    return sw_lb_finish(&r, out);
}

sw_status sw_layout_divide(const sw_layout *a, const sw_layout *b,
                           sw_layout **out) {
    sw_layout *tile = NULL;
    sw_status st = divide_tile(b, a->size, &tile);
    if (st)
        return st;
    st = sw_layout_compose(a, tile, out);
    sw_layout_unref(tile);
    return st;
}

/* The divided modes A[i] / tiler[i], each with the two modes (tile, rest). */
static sw_status divide_modes(const sw_layout *a, int32_t n,
                              sw_layout *const *tiler, sw_layout ***out) {
    sw_status st = check_tiler(a, n, tiler);
    if (st)
        return st;
    sw_layout **r = sw_calloc((size_t)n + 1, sizeof(sw_layout *));
    if (!r)
        return sw_oom();
    for (int32_t i = 0; i < n && !st; ++i) {
        sw_lview mode = sw_lview_child(sw_lview_of(a), i);
        sw_layout *tile = NULL;
        int64_t size = 1;
        st = sw_lview_size(mode, &size);
        if (!st)
            st = divide_tile(tiler[i], size, &tile);
        if (!st)
            st = compose_views(mode, sw_lview_of(tile), &r[i]);
        sw_layout_unref(tile);
    }
    if (st) {
        for (int32_t i = 0; i < n; ++i)
            sw_layout_unref(r[i]);
        sw_free(r);
        return st;
    }
    *out = r;
    return SW_OK;
}

static void free_modes(sw_layout **r, int32_t n) {
    for (int32_t i = 0; i < n; ++i)
        sw_layout_unref(r[i]);
    sw_free(r);
}

/* How the divided modes are laid out in the result. */
enum divide_form { DIVIDE_TILER, DIVIDE_ZIPPED, DIVIDE_TILED, DIVIDE_FLAT };

/* Appends part `which` (0 tile, 1 rest) of every divided mode to b. */
static void lb_parts(sw_lb *b, sw_layout **r, int32_t n, int32_t which) {
    for (int32_t i = 0; i < n; ++i)
        sw_lb_append_view(b, sw_lview_child(sw_lview_of(r[i]), which));
}

/* Appends the layout made of part `which` of every divided mode. */
static void lb_grouped(sw_lb *b, sw_layout **r, int32_t n, int32_t which) {
    sw_lb g;
    sw_layout *l = NULL;
    sw_lb_init(&g);
    lb_parts(&g, r, n, which);
    sw_status st = sw_lb_finish(&g, &l);
    if (st)
        sw_lb_fail(b, st);
    else
        sw_lb_append(b, l);
    sw_layout_unref(l);
}

static sw_status divide_form(const sw_layout *a, int32_t n,
                             sw_layout *const *tiler, enum divide_form form,
                             sw_layout **out) {
    sw_layout **r = NULL;
    sw_status st = divide_modes(a, n, tiler, &r);
    if (st)
        return st;
    sw_lb b;
    sw_lb_init(&b);
    switch (form) {
    case DIVIDE_TILER:
        for (int32_t i = 0; i < n; ++i)
            sw_lb_append(&b, r[i]);
        break;
    case DIVIDE_ZIPPED:
        lb_grouped(&b, r, n, 0);
        lb_grouped(&b, r, n, 1);
        break;
    case DIVIDE_TILED:
        lb_grouped(&b, r, n, 0);
        lb_parts(&b, r, n, 1);
        break;
    case DIVIDE_FLAT:
        lb_parts(&b, r, n, 0);
        lb_parts(&b, r, n, 1);
        break;
    }
    lb_rest(&b, a, n);
    free_modes(r, n);
    return sw_lb_finish(&b, out);
}

sw_status sw_layout_divide_tiler(const sw_layout *a, int32_t n,
                                 sw_layout *const *tiler, sw_layout **out) {
    return divide_form(a, n, tiler, DIVIDE_TILER, out);
}

sw_status sw_layout_zipped_divide(const sw_layout *a, int32_t n,
                                  sw_layout *const *tiler, sw_layout **out) {
    return divide_form(a, n, tiler, DIVIDE_ZIPPED, out);
}

sw_status sw_layout_tiled_divide(const sw_layout *a, int32_t n,
                                 sw_layout *const *tiler, sw_layout **out) {
    return divide_form(a, n, tiler, DIVIDE_TILED, out);
}

sw_status sw_layout_flat_divide(const sw_layout *a, int32_t n,
                                sw_layout *const *tiler, sw_layout **out) {
    return divide_form(a, n, tiler, DIVIDE_FLAT, out);
}

/* --------------------------------------------------------------- products */

/* complement(A, size(A)*cosize(B)) o B: B's pattern in units of A. */
static sw_status product_pattern(const sw_layout *a, const sw_layout *b,
                                 sw_layout **out) {
    int64_t target;
    if (!sw_mul_ok(a->size, b->cosize, &target))
        return sw_fail(SW_EVALUE, "product size overflows 64-bit integers");
    sw_layout *c = NULL;
    sw_status st = sw_layout_complement(a, target, &c);
    if (st)
        return st;
    st = sw_layout_compose(c, b, out);
    sw_layout_unref(c);
    return st;
}

sw_status sw_layout_product(const sw_layout *a, const sw_layout *b,
                            sw_layout **out) {
    sw_layout *p = NULL;
    sw_status st = product_pattern(a, b, &p);
    if (st)
        return st;
    sw_lb r;
    sw_lb_init(&r);
    sw_lb_append(&r, a);
    sw_lb_append(&r, p);
    sw_layout_unref(p);
    return sw_lb_finish(&r, out);
}

/* Mode i of a view padded to rank n with 1:0 modes. */
static sw_lview padded_mode(sw_lview v, int32_t rank, int32_t i) {
    static const int32_t one_tok = SW_TOK_LEAF;
    static const int64_t one_ext = 1, zero_str = 0;
    if (i < rank)
        return sw_lview_child(v, i);
    sw_lview unit = {&one_tok, 1, &one_ext, &zero_str};
    return unit;
}

static sw_status zip_product(const sw_layout *a, const sw_layout *b, int raked,
                             sw_layout **out) {
    int32_t rank = a->rank > b->rank ? a->rank : b->rank;
    sw_layout *p = NULL;
    sw_status st = product_pattern(a, b, &p);
    if (st)
        return st;
    sw_lb r;
    sw_lb_init(&r);
    for (int32_t i = 0; i < rank && !r.st; ++i) {
        sw_lview am = padded_mode(sw_lview_of(a), a->rank, i);
        /* p has one mode per mode of b (unwrapped when b has one). */
        sw_lview pm = (b->rank == 1 && i == 0)
                          ? sw_lview_of(p)
                          : padded_mode(sw_lview_of(p), b->rank, i);
        sw_lb m;
        sw_layout *ml = NULL;
        sw_lb_init(&m);
        sw_lb_append_view(&m, raked ? pm : am);
        sw_lb_append_view(&m, raked ? am : pm);
        st = sw_lb_finish(&m, &ml);
        if (st)
            sw_lb_fail(&r, st);
        else
            sw_lb_append(&r, ml);
        sw_layout_unref(ml);
    }
    sw_layout_unref(p);
    return sw_lb_finish(&r, out);
}

sw_status sw_layout_blocked_product(const sw_layout *a, const sw_layout *b,
                                    sw_layout **out) {
    return zip_product(a, b, 0, out);
}

sw_status sw_layout_raked_product(const sw_layout *a, const sw_layout *b,
                                  sw_layout **out) {
    return zip_product(a, b, 1, out);
}

/* --------------------------------------------------------------- inverses */

/*
 * The right inverse of pairs p (consumed): each pair's domain stride is the
 * product of the extents before it; following strides 1, e0, e0*e1, ... in
 * sorted order gives the modes of the inverse.
 */
static sw_status right_inverse_pairs(pairs *p, const sw_layout *a,
                                     const char *what, sw_layout **out) {
    char name[160];
    sw_status st = SW_OK;
    int64_t dom = 1, cur = 1;
    /* The inverse's size is the product of the extents it chains; a
     * product that overflows (a left inverse's holes can make one) has no
     * layout. */
    for (int32_t i = 0; i < p->n && !st; ++i) {
        p->x[i] = dom;
        if (!sw_mul_ok(dom, p->e[i], &dom))
            st = SW_EVALUE;
    }
    int32_t m = 0;
    if (!st) {
        drop_still_pairs(p);
        sort_by_stride(p);
        for (int32_t i = 0; i < p->n && p->d[i] == cur && !st; ++i, ++m) {
            int64_t e = p->e[i];
            p->e[m] = e;
            p->d[m] = p->x[i];
            if (!sw_mul_ok(cur, e, &cur))
                st = SW_EVALUE;
        }
    }
    if (st) {
        pairs_free(p);
        return sw_fail(SW_EVALUE,
                       "%s of %s: its size overflows 64-bit "
                       "integers",
                       what, sw_layout_str(a, name, sizeof name));
    }
    p->n = m;
    if ((st = coalesce_pairs(p))) {
        pairs_free(p);
        return st;
    }
    return finish_pairs(p, out);
}

sw_status sw_layout_right_inverse(const sw_layout *a, sw_layout **out) {
    pairs p;
    sw_status st = pairs_of_view(sw_lview_of(a), 0, &p);
    if (st)
        return st;
    return right_inverse_pairs(&p, a, "right inverse", out);
}

sw_status sw_layout_left_inverse(const sw_layout *a, sw_layout **out) {
    char name[160];
    int inj = 0;
    sw_status st = sw_layout_is_injective(a, &inj);
    if (st)
        return st;
    if (!inj)
        return sw_fail(SW_EVALUE,
                       "Layout %s is not injective and has no left inverse",
                       sw_layout_str(a, name, sizeof name));
    pairs holes, p;
    st = complement_pairs(a, 0, &holes);
    if (st) {
        if (st == SW_EVALUE)
            sw_fail(SW_EVALUE,
                    "Layout %s has strides that do not divide one another; "
                    "its left inverse is not supported",
                    sw_layout_str(a, name, sizeof name));
        return st;
    }
    st = pairs_of_view(sw_lview_of(a), holes.n, &p);
    if (!st) {
        for (int32_t i = 0; i < holes.n; ++i)
            pairs_add(&p, holes.e[i], holes.d[i]);
        st = right_inverse_pairs(&p, a, "left inverse", out);
    }
    pairs_free(&holes);
    return st;
}

/* ------------------------------------------------------------ predicates */

/* Scratch bits allowed for deciding injectivity by enumeration. */
#define SW_INJECTIVE_SCRATCH_BITS ((int64_t)1 << 27)

static sw_status decide_injective(const sw_layout *a, int *out);

sw_status sw_layout_is_injective(const sw_layout *a, int *out) {
    /* Every result's compactness is asked on every operation: the answer
     * is kept in the (immutable) layout. */
    sw_layout *m = (sw_layout *)a;
    int known = atomic_load_explicit(&m->injective, memory_order_relaxed);
    if (known) {
        *out = known == 2;
        return SW_OK;
    }
    sw_status st = decide_injective(a, out);
    if (!st)
        atomic_store_explicit(&m->injective, *out ? 2 : 1,
                              memory_order_relaxed);
    return st;
}

static sw_status decide_injective(const sw_layout *a, int *out) {
    pairs p;
    sw_status st = pairs_of_view(sw_lview_of(a), 0, &p);
    if (st)
        return st;
    int32_t m = 0;
    int still = 0;
    for (int32_t k = 0; k < p.n; ++k) {
        if (p.e[k] == 1)
            continue;
        if (p.d[k] == 0)
            still = 1;
        p.e[m] = p.e[k];
        p.d[m] = p.d[k];
        p.x[m++] = 0;
    }
    p.n = m;
    if (still) {
        pairs_free(&p);
        *out = 0;
        return SW_OK;
    }
    sort_by_stride(&p);
    /* Sorted strides that each clear the span below them are injective. */
    int nested = 1;
    for (int32_t i = 0; i + 1 < p.n && nested; ++i) {
        int64_t ns;
        nested = sw_mul_ok(p.e[i], p.d[i], &ns) && ns <= p.d[i + 1];
    }
    if (nested || a->cosize < a->size) {
        pairs_free(&p);
        *out = nested;
        return SW_OK;
    }
    if (a->cosize > SW_INJECTIVE_SCRATCH_BITS) {
        pairs_free(&p);
        return sw_fail(SW_ENOTIMPL,
                       "deciding injectivity of a layout with interleaved "
                       "strides and cosize %lld is not supported",
                       (long long)a->cosize);
    }
    uint8_t *seen = sw_calloc((size_t)(a->cosize + 7) / 8, 1);
    if (!seen) {
        pairs_free(&p);
        return sw_oom();
    }
    /* Enumerates every coordinate with an odometer over p.x. */
    int inj = 1;
    int64_t off = 0;
    for (;;) {
        uint8_t bit = (uint8_t)(1u << (off & 7));
        if (seen[off >> 3] & bit) {
            inj = 0;
            break;
        }
        seen[off >> 3] |= bit;
        int32_t k = 0;
        for (; k < p.n; ++k) {
            if (++p.x[k] < p.e[k]) {
                off += p.d[k];
                break;
            }
            off -= (p.e[k] - 1) * p.d[k];
            p.x[k] = 0;
        }
        if (k == p.n)
            break;
    }
    sw_free(seen);
    pairs_free(&p);
    *out = inj;
    return SW_OK;
}

sw_status sw_layout_is_compact(const sw_layout *a, int *out) {
    if (a->cosize != a->size) {
        *out = 0;
        return SW_OK;
    }
    return sw_layout_is_injective(a, out);
}
