/*
 * The carrier-neutral layout operations: view, permute and rearrange. Each
 * result is a view (the input's carrier, a new offset and layout); the
 * backward pass scatters the gradient into fresh zeros shaped like the
 * input, through the result's layout.
 */
#include <string.h>

#include "carrier/internal.h"
#include "layout/internal.h"
#include "op/internal.h"
#include "tensor/internal.h"

typedef struct layout_op_state {
    sw_layout *out_layout; /* the result's layout */
    int64_t delta;         /* the result's offset minus the input's */
} layout_op_state;

static layout_op_state *lstate(sw_op *op) {
    return sw_op_state(op);
}

/* Python's slice.indices for a step of 1. */
static int64_t clamp_bound(int has, int64_t v, int64_t n, int64_t absent) {
    if (!has)
        return absent;
    if (v < 0)
        v += n;
    return v < 0 ? 0 : v > n ? n : v;
}

/* A leaf, or a tuple holding exactly one integer: Layout[k].is_leaf. */
static int is_leaf_mode(sw_lview m) {
    return m.ntok == 1 && sw_lview_nleaf(m) == 1;
}

/* A multi-subtensor view moves no placement: its keys start at 0. */
static sw_status nonzero_start(int32_t k, int64_t start) {
    return sw_fail(SW_ENOTIMPL,
                   "Multi-subtensor Tensor views take only keys of normalized "
                   "start 0: mode %d starts at %lld",
                   (int)k, (long long)start);
}

/* zero_start: every key must start at 0 (a multi-subtensor view). */
static sw_status view_layout(const sw_layout *l, int32_t n,
                             const sw_view_key *keys, int zero_start,
                             sw_layout **out, int64_t *delta) {
    if (n != l->rank)
        return sw_fail(SW_EVALUE, "View keys must include exactly one key "
                                  "per top-level mode");
    sw_lb b;
    sw_lb_init(&b);
    int64_t off = 0;
    sw_status st = SW_OK;
    sw_lview v = sw_lview_of(l);
    for (int32_t k = 0; k < n && !st; ++k) {
        sw_lview m = sw_lview_child(v, k);
        const sw_view_key *key = &keys[k];
        int leaf = is_leaf_mode(m);
        int64_t size = 1;
        if ((st = sw_lview_size(m, &size)))
            break;
        if (key->kind == SW_VIEW_INDEX) {
            if (key->index < 0 || key->index >= size) {
                st = sw_fail(SW_EVALUE, "View integer key is out of domain");
                break;
            }
            if (zero_start && key->index != 0) {
                st = nonzero_start(k, key->index);
                break;
            }
            int64_t idx = 0, i = key->index;
            int32_t nl = sw_lview_nleaf(m);
            for (int32_t j = 0; j < nl; ++j) {
                idx += (i % m.ext[j]) * m.str[j];
                i /= m.ext[j];
            }
            off += idx;
            continue;
        }
        int stepped = key->has_step && key->step != 1;
        if (!leaf) {
            if (key->has_start || key->has_stop || stepped) {
                st = sw_fail(SW_EVALUE, "Only whole slices are supported for "
                                        "non-leaf modes");
                break;
            }
            sw_lb_append_view(&b, m);
            continue;
        }
        if (stepped) {
            st = sw_fail(SW_EVALUE, "View slices do not support steps");
            break;
        }
        int64_t start = clamp_bound(key->has_start, key->start, size, 0);
        int64_t stop = clamp_bound(key->has_stop, key->stop, size, size);
        if (stop <= start) {
            st = sw_fail(SW_EVALUE, "View slices must be non-empty");
            break;
        }
        if (zero_start && start != 0) {
            st = nonzero_start(k, start);
            break;
        }
        sw_lb_leaf(&b, stop - start, m.str[0]);
        off += start * m.str[0];
    }
    if (st) {
        sw_lb_free(&b);
        return st;
    }
    st = sw_lb_finish(&b, out);
    if (!st)
        *delta = off;
    return st;
}

/* The result layout of the named operation for input layout l. */
static sw_status layout_of(int32_t id, const sw_layout *l, int32_t nargs,
                           const sw_arg *args, int multi, sw_layout **out,
                           int64_t *delta) {
    *delta = 0;
    if (id == SW_OP_VIEW) {
        if (nargs != 2 || args[1].kind != SW_ARG_KEYS)
            return sw_fail(SW_ETYPE, "view requires a tensor and its keys");
        return view_layout(l, args[1].as.keys.n, args[1].as.keys.keys, multi,
                           out, delta);
    }
    if (id == SW_OP_PERMUTE) {
        int32_t n = nargs - 1;
        int32_t *order = sw_malloc((size_t)(n + 1) * sizeof *order);
        if (!order)
            return sw_oom();
        sw_status st = SW_OK;
        for (int32_t i = 0; i < n && !st; ++i) {
            if (args[i + 1].kind != SW_ARG_I64 ||
                args[i + 1].as.i < INT32_MIN || args[i + 1].as.i > INT32_MAX)
                st = sw_fail(SW_ETYPE,
                             "Permutation dimensions must be integers");
            else
                order[i] = (int32_t)args[i + 1].as.i;
        }
        if (!st)
            st = sw_layout_permute(l, n, order, out);
        sw_free(order);
        return st;
    }
    if (nargs < 2 || args[1].kind != SW_ARG_RECIPE ||
        (nargs > 2 && args[2].kind != SW_ARG_RECIPE &&
         args[2].kind != SW_ARG_NONE))
        return sw_fail(SW_ETYPE, "rearrange requires a tensor, an output tree "
                                 "and an optional selection tree");
    int32_t nsel = -1;
    const int32_t *sel = NULL;
    if (nargs > 2 && args[2].kind == SW_ARG_RECIPE) {
        nsel = args[2].as.recipe.n;
        sel = args[2].as.recipe.tokens;
    }
    return sw_layout_rearrange(l, args[1].as.recipe.n, args[1].as.recipe.tokens,
                               nsel, sel, out);
}

static sw_status layout_forward(sw_op *op, int32_t nargs, const sw_arg *args,
                                sw_tensor **out) {
    if (nargs < 1 || args[0].kind != SW_ARG_TENSOR)
        return sw_fail(SW_ETYPE, "tensor must be a Tensor");
    sw_tensor *t = args[0].as.tensor;
    sw_layout *l = NULL;
    int64_t delta;
    int32_t id = sw_native_op_of(op)->op;
    int multi = t->planes != NULL;
    sw_status st = layout_of(id, t->layout, nargs, args, multi, &l, &delta);
    if (st)
        return st;
    if (multi) {
        /* The c0 domain: subtensor 0's placement and adjacent layout 0
         * change alike (the same keys, both starting at 0), the later
         * planes stay. */
        sw_layout *adj = NULL;
        int64_t adelta;
        st = layout_of(id, t->planes->plane[0].adjacent_in, nargs, args, 1,
                       &adj, &adelta);
        if (!st)
            st = sw_tensor_new_view_multi(t, t->offset + delta, l, adj, out);
        sw_layout_unref(adj);
    } else {
        st = sw_tensor_new(t->carrier, t->offset + delta, l, out);
    }
    if (!st) {
        layout_op_state *s = lstate(op);
        sw_layout_unref(s->out_layout);
        s->out_layout = sw_layout_retain(l);
        s->delta = delta;
    }
    sw_layout_unref(l);
    return st;
}

/* Fresh storage of n zeros of c's class and dtype. */
static sw_status zeros_like(sw_carrier *c, int64_t n, sw_carrier **out) {
    if (c->cls->data || sw_carrier_is_file(c))
        return sw_carrier_allocate_like(c, n, 1, SW_DTYPE_COUNT, 0, out);
    sw_value *zeros = sw_calloc((size_t)n + 1, sizeof *zeros);
    if (!zeros)
        return sw_oom();
    for (int64_t i = 0; i < n; ++i)
        zeros[i] = sw_value_i64(0);
    sw_status st = sw_carrier_new_like(c, n, zeros, 1, SW_DTYPE_COUNT, out);
    sw_free(zeros);
    return st;
}

static sw_status layout_backward(sw_op *op, sw_tensor *g, int32_t n,
                                 sw_tensor **grads) {
    layout_op_state *s = lstate(op);
    sw_tensor *in = sw_op_input(op, 0);
    if (!in || !s->out_layout)
        return sw_fail(SW_ERUNTIME, "backward requires a recorded forward");
    sw_carrier *z = NULL;
    sw_tensor *r = NULL;
    sw_status st = zeros_like(in->carrier, in->layout->cosize, &z);
    if (!st)
        st = sw_tensor_new(z, 0, in->layout, &r);
    if (!st)
        st = sw_carrier_scatter(z, g, r, s->out_layout, s->delta);
    sw_carrier_unref(z);
    if (st) {
        sw_tensor_unref(r);
        return st;
    }
    grads[0] = r;
    return SW_OK;
}

static void layout_destroy(sw_op *op) {
    layout_op_state *s = lstate(op);
    sw_layout_unref(s->out_layout); /* the state is in the op's block */
}

#define SHARED_OP(id, cls_name, summary, flags)                                \
    [id] = {{SW_OP_CLASS_VERSION, cls_name, layout_forward, layout_backward,   \
             layout_destroy},                                                  \
            id,                                                                \
            "shared",                                                          \
            summary,                                                           \
            SW_NATIVE_HOST_FREE | (flags)}

static const sw_native_op shared_table[SW_OP_BUILTIN_COUNT] = {
    SHARED_OP(SW_OP_VIEW, "GenericViewOperation",
              "A view selecting one key per top-level mode (an integer removes "
              "the mode, a slice keeps part of it); used by every computing "
              "carrier.",
              SW_NATIVE_MULTI_VIEW),
    SHARED_OP(SW_OP_PERMUTE, "PermuteOperation",
              "A view with the top-level modes reordered; used by every "
              "computing carrier.",
              SW_NATIVE_MULTI_VIEW),
    SHARED_OP(SW_OP_REARRANGE, "RearrangeOperation",
              "A view whose layout is the input's rearranged by an output "
              "recipe and a selection; used by every computing carrier.",
              0),
};

const sw_native_table sw_shared_native_table = {"shared", shared_table,
                                                sizeof(sw_native_op)};

sw_status sw_shared_op_new_info(const sw_op_info *op, sw_op **out) {
    const sw_native_op *n =
        op->id < SW_OP_BUILTIN_COUNT ? &shared_table[op->id] : NULL;
    if (!n || !n->cls.name)
        return sw_fail(SW_ENOTIMPL, "no shared operation '%s'", op->name);
    return sw_native_op_new(n, sizeof(layout_op_state), out);
}

sw_status sw_shared_op_new(const char *name, sw_op **out) {
    const sw_op_info *op = sw_builtin_info_find(name);
    if (!op)
        return sw_fail(SW_ENOTIMPL, "no shared operation '%s'",
                       name ? name : "(null)");
    return sw_shared_op_new_info(op, out);
}

/* ------------------------------------------------------ functional forms */

sw_status sw_view(sw_tensor *t, int32_t nkeys, const sw_view_key *keys,
                  sw_tensor **out) {
    sw_arg args[2] = {sw_arg_tensor(t)};
    args[1].kind = SW_ARG_KEYS;
    args[1].as.keys.n = nkeys;
    args[1].as.keys.keys = keys;
    return sw_dispatch_forward(t, SW_OP_VIEW, 2, args, out);
}

sw_status sw_permute(sw_tensor *t, int32_t n, const int32_t *order,
                     sw_tensor **out) {
    if (n < 0)
        return sw_fail(SW_EVALUE,
                       "Permutation dimensions must reorder every layout mode");
    sw_arg *args = sw_calloc((size_t)n + 1, sizeof *args);
    if (!args)
        return sw_oom();
    args[0] = sw_arg_tensor(t);
    for (int32_t i = 0; i < n; ++i)
        args[i + 1] = sw_arg_i64(order[i]);
    sw_status st = sw_dispatch_forward(t, SW_OP_PERMUTE, n + 1, args, out);
    sw_free(args);
    return st;
}

sw_status sw_rearrange(sw_tensor *t, int32_t nout, const int32_t *output,
                       int32_t nsel, const int32_t *selection,
                       sw_tensor **out) {
    sw_arg args[3] = {sw_arg_tensor(t)};
    args[1].kind = SW_ARG_RECIPE;
    args[1].as.recipe.n = nout;
    args[1].as.recipe.tokens = output;
    args[2].kind = nsel < 0 ? SW_ARG_NONE : SW_ARG_RECIPE;
    args[2].as.recipe.n = nsel;
    args[2].as.recipe.tokens = selection;
    return sw_dispatch_forward(t, SW_OP_REARRANGE, 3, args, out);
}
