/*
 * The compile step: a spec applied to layouts. Every rule here is a
 * composition of the layout algebra (extract, rearrange and the compact
 * layouts of the reduce and matmul results), so the tensor-level forms in
 * ops.c and a caller predicting their layouts agree by construction.
 */
#include <string.h>

#include "einops/internal.h"
#include "layout/internal.h"

static sw_status check_kind(const sw_einops_spec *spec, sw_einops_kind kind) {
    static const char *const what[SW_EINOPS_KIND_COUNT] = {
        "a LayoutReference", "a RearrangeSpec", "a ReduceSpec",
        "an EinsumSpec"};
    if (!spec || spec->kind != kind)
        return sw_fail(SW_ETYPE, "spec must be %s", what[kind]);
    return SW_OK;
}

static sw_status check_layout(const sw_layout *l, const char *name) {
    if (!l)
        return sw_fail(SW_ETYPE, "%s must be a Layout", name);
    return SW_OK;
}

static sw_status rearrange_by(const sw_einops_spec *spec, const sw_layout *l,
                              sw_einops_field output, sw_einops_field selection,
                              sw_layout **out) {
    return sw_layout_rearrange(l, spec->nrec[output], spec->rec[output],
                               spec->nrec[selection], spec->rec[selection],
                               out);
}

sw_status sw_einops_rearrange_layout(const sw_einops_spec *spec,
                                     const sw_layout *l, sw_layout **out) {
    sw_status st = check_kind(spec, SW_EINOPS_REARRANGE);
    if (!st)
        st = check_layout(l, "layout");
    if (st)
        return st;
    return rearrange_by(spec, l, SW_EINOPS_OUTPUT, SW_EINOPS_SELECTION, out);
}

/* The compact layout whose top-level modes are the children of mode 0 of a
 * two-mode layout (the rule of the two-mode reduce). */
static sw_status reduced_layout(const sw_layout *inter, sw_layout **out) {
    sw_lb b;
    sw_lb_init(&b);
    sw_lb_view(&b, sw_lview_child(sw_lview_of(inter), 0));
    return sw_lb_finish_compact(&b, out);
}

sw_status sw_einops_reduce_layouts(const sw_einops_spec *spec,
                                   const sw_layout *l, sw_layout **intermediate,
                                   sw_layout **result) {
    sw_status st = check_kind(spec, SW_EINOPS_REDUCE);
    if (!st)
        st = check_layout(l, "layout");
    if (st)
        return st;
    sw_layout *inter = NULL, *res = NULL;
    st = rearrange_by(spec, l, SW_EINOPS_REARRANGE_OUTPUT, SW_EINOPS_SELECTION,
                      &inter);
    if (!st && result)
        st = reduced_layout(inter, &res);
    if (st) {
        sw_layout_unref(inter);
        return st;
    }
    if (intermediate)
        *intermediate = inter;
    else
        sw_layout_unref(inter);
    if (result)
        *result = res;
    return SW_OK;
}

/* The number of pieces a selection recipe splits a layout into. */
static int32_t count_leaves(const int32_t *rec, int32_t n) {
    int32_t k = 0;
    for (int32_t i = 0; i < n; ++i)
        k += rec[i] == SW_TOK_LEAF;
    return k;
}

/* The logical sizes of the pieces of l along a selection (sizes must have
 * room for every leaf of the selection). */
static sw_status piece_sizes(const sw_einops_spec *spec, sw_einops_field sel,
                             const sw_layout *l, int64_t *sizes) {
    int32_t n = count_leaves(spec->rec[sel], spec->nrec[sel]), got = 0;
    sw_layout **pieces = sw_calloc((size_t)n + 1, sizeof *pieces);
    if (!pieces)
        return sw_oom();
    sw_status st =
        sw_layout_extract(l, spec->nrec[sel], spec->rec[sel], n, pieces, &got);
    for (int32_t i = 0; !st && i < got; ++i)
        sizes[i] = sw_layout_size(pieces[i]);
    for (int32_t i = 0; i < got; ++i)
        sw_layout_unref(pieces[i]);
    sw_free(pieces);
    return st;
}

sw_status sw_einops_einsum_check(const sw_einops_spec *spec,
                                 const sw_layout *lhs, const sw_layout *rhs) {
    sw_status st = check_kind(spec, SW_EINOPS_EINSUM);
    if (!st)
        st = check_layout(lhs, "lhs");
    if (!st)
        st = check_layout(rhs, "rhs");
    if (st)
        return st;
    int32_t nl = count_leaves(spec->rec[SW_EINOPS_LHS_SELECTION],
                              spec->nrec[SW_EINOPS_LHS_SELECTION]);
    int32_t nr = count_leaves(spec->rec[SW_EINOPS_RHS_SELECTION],
                              spec->nrec[SW_EINOPS_RHS_SELECTION]);
    int64_t *sizes = sw_malloc(((size_t)nl + nr + 1) * sizeof *sizes);
    if (!sizes)
        return sw_oom();
    st = piece_sizes(spec, SW_EINOPS_LHS_SELECTION, lhs, sizes);
    if (!st)
        st = piece_sizes(spec, SW_EINOPS_RHS_SELECTION, rhs, sizes + nl);
    /* Each shared symbol's piece on both sides, matched by name. */
    int32_t nrs = sw_einops_spec_nsymbols(spec, 1);
    for (int32_t i = 0; !st && i < spec->ncommon; ++i) {
        const sw_einops_sym *e = &spec->sym[0][spec->common[i]];
        for (int32_t j = 0; j < nrs; ++j) {
            const sw_einops_sym *f = &spec->sym[1][j];
            if (f->length != e->length ||
                memcmp(f->name, e->name, (size_t)e->length) != 0)
                continue;
            if (sizes[e->id] != sizes[nl + f->id])
                st = sw_fail(SW_EVALUE,
                             "Einsum shared dimension '%s' has mismatched "
                             "logical size",
                             e->name);
            break;
        }
    }
    sw_free(sizes);
    return st;
}

/* The layout of the product of two (outer, inner[, batch]) operands:
 * compact over (lhs mode 0, rhs mode 0[, lhs mode 2]), each joining by the
 * append rule. */
static sw_status product_layout(const sw_layout *a, const sw_layout *b,
                                sw_layout **out) {
    sw_lb lb;
    sw_lb_init(&lb);
    sw_lb_append_view(&lb, sw_lview_child(sw_lview_of(a), 0));
    sw_lb_append_view(&lb, sw_lview_child(sw_lview_of(b), 0));
    if (sw_layout_rank(a) == 3)
        sw_lb_append_view(&lb, sw_lview_child(sw_lview_of(a), 2));
    return sw_lb_finish_compact_as(&lb, "einsum result", out);
}

sw_status sw_einops_einsum_layouts(const sw_einops_spec *spec,
                                   const sw_layout *lhs, const sw_layout *rhs,
                                   sw_layout **lhs_out, sw_layout **rhs_out,
                                   sw_layout **result) {
    sw_status st = sw_einops_einsum_check(spec, lhs, rhs);
    if (st)
        return st;
    sw_layout *a = NULL, *b = NULL, *p = NULL, *r = NULL;
    st = rearrange_by(spec, lhs, SW_EINOPS_LHS_REARRANGE_OUTPUT,
                      SW_EINOPS_LHS_SELECTION, &a);
    if (!st)
        st = rearrange_by(spec, rhs, SW_EINOPS_RHS_REARRANGE_OUTPUT,
                          SW_EINOPS_RHS_SELECTION, &b);
    if (!st && result)
        st = product_layout(a, b, &p);
    if (!st && result)
        st = rearrange_by(spec, p, SW_EINOPS_OUTPUT,
                          SW_EINOPS_MATMUL_OUTPUT_SELECTION, &r);
    sw_layout_unref(p);
    if (st) {
        sw_layout_unref(a);
        sw_layout_unref(b);
        return st;
    }
    if (lhs_out)
        *lhs_out = a;
    else
        sw_layout_unref(a);
    if (rhs_out)
        *rhs_out = b;
    else
        sw_layout_unref(b);
    if (result)
        *result = r;
    return SW_OK;
}
