/* The functional forms: argument rules, dispatch and recorded forward. */
#include <string.h>

#include "carrier/internal.h"
#include "layout/internal.h"
#include "op/internal.h"
#include "tensor/internal.h"

sw_status sw_dispatch_forward(sw_tensor *t, sw_op_id id, int32_t nargs,
                              const sw_arg *args, sw_tensor **out) {
    if (!t)
        return sw_fail(SW_ETYPE, "tensor must be a Tensor");
    sw_op *op = NULL;
    sw_status st = sw_carrier_dispatch(t->carrier, sw_op_info_get(id), &op);
    if (st)
        return st;
    st = sw_op_forward(op, nargs, args, out);
    sw_op_unref(op);
    return st;
}

sw_status sw_elementwise_layout(const sw_layout *a, const sw_layout *b,
                                sw_layout **out) {
    if (sw_layout_equal(a, b)) {
        *out = sw_layout_retain((sw_layout *)a);
        return SW_OK;
    }
    if (a->rank != b->rank)
        return sw_fail(SW_EVALUE, "Tensor layouts must match");
    for (int32_t k = 0; k < a->rank; ++k)
        if (a->mode_size[k] != b->mode_size[k])
            return sw_fail(SW_EVALUE, "Tensor layouts must match");
    int compact = 0;
    if (sw_layout_is_compact(a, &compact) != SW_OK)
        compact = 0;
    if (compact) {
        *out = sw_layout_retain((sw_layout *)a);
        return SW_OK;
    }
    sw_lb lb;
    sw_lb_init(&lb);
    sw_lb_view(&lb, sw_lview_of(a));
    return sw_lb_finish_compact(&lb, out);
}

static sw_status binary(sw_op_id id, sw_tensor *lhs, sw_tensor *rhs,
                        sw_tensor **out) {
    if (!lhs)
        return sw_fail(SW_ETYPE, "lhs must be a Tensor");
    if (!rhs)
        return sw_fail(SW_ETYPE, "rhs must be a Tensor");
    const sw_carrier *a = lhs->carrier, *b = rhs->carrier;
    if (a->cls != b->cls || a->dispatch_tag != b->dispatch_tag)
        return sw_fail(SW_ETYPE, "Tensor backing carriers must match");
    sw_arg args[2] = {sw_arg_tensor(lhs), sw_arg_tensor(rhs)};
    return sw_dispatch_forward(lhs, id, 2, args, out);
}

sw_status sw_add(sw_tensor *lhs, sw_tensor *rhs, sw_tensor **out) {
    return binary(SW_OP_ADD, lhs, rhs, out);
}

sw_status sw_sub(sw_tensor *lhs, sw_tensor *rhs, sw_tensor **out) {
    return binary(SW_OP_SUB, lhs, rhs, out);
}

sw_status sw_elementwise_mul(sw_tensor *lhs, sw_tensor *rhs, sw_tensor **out) {
    return binary(SW_OP_ELEMENTWISE_MUL, lhs, rhs, out);
}

sw_status sw_div(sw_tensor *lhs, sw_tensor *rhs, sw_tensor **out) {
    return binary(SW_OP_DIV, lhs, rhs, out);
}

sw_status sw_matmul(sw_tensor *lhs, sw_tensor *rhs, sw_tensor **out) {
    return binary(SW_OP_MATMUL, lhs, rhs, out);
}

sw_status sw_batched_matmul(sw_tensor *lhs, sw_tensor *rhs, sw_tensor **out) {
    return binary(SW_OP_BATCHED_MATMUL, lhs, rhs, out);
}

sw_status sw_mul(sw_tensor *t, sw_arg scalar, sw_tensor **out) {
    if (scalar.kind == SW_ARG_TENSOR)
        return sw_elementwise_mul(t, scalar.as.tensor, out);
    sw_arg args[2] = {sw_arg_tensor(t), scalar};
    return sw_dispatch_forward(t, SW_OP_MUL, 2, args, out);
}

sw_status sw_neg(sw_tensor *t, sw_tensor **out) {
    return sw_mul(t, sw_arg_i64(-1), out);
}

sw_status sw_pow(sw_tensor *t, sw_arg exponent, sw_tensor **out) {
    if (exponent.kind == SW_ARG_TENSOR)
        return sw_fail(SW_ETYPE, "exponent must be a numerical scalar");
    sw_arg args[2] = {sw_arg_tensor(t), exponent};
    return sw_dispatch_forward(t, SW_OP_POW, 2, args, out);
}

sw_status sw_unary(const char *name, sw_tensor *t, sw_tensor **out) {
    const sw_op_info *op = sw_builtin_info_find(name);
    if (op && op->form == SW_FORM_UNARY) {
        sw_arg arg = sw_arg_tensor(t);
        return sw_dispatch_forward(t, (sw_op_id)op->id, 1, &arg, out);
    }
    return sw_fail(SW_EVALUE, "'%s' is not a unary operation",
                   name ? name : "(null)");
}

sw_status sw_reduce_sum(sw_tensor *t, sw_tensor **out) {
    sw_arg arg = sw_arg_tensor(t);
    return sw_dispatch_forward(t, SW_OP_REDUCE, 1, &arg, out);
}
