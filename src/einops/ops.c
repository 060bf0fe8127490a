/*
 * The tensor-level commands: a compiled spec run as recorded operations of
 * op.h, so that results are views where the algebra allows, reductions and
 * contractions use the carriers' planned kernels, and autograd sees each
 * step.
 */
#include "einops/internal.h"
#include "strideweave/op.h"

#define NO_DESCRIPTION "description must be a str"

static sw_status spec_of(sw_einops_kind kind, const char *description,
                         sw_einops_spec **out) {
    if (!description)
        return sw_fail(SW_ETYPE, NO_DESCRIPTION);
    return sw_einops_compile(kind, description, -1, out);
}

static sw_status check_kind(const sw_einops_spec *spec, sw_einops_kind kind,
                            const char *what) {
    if (!spec || spec->kind != kind)
        return sw_fail(SW_ETYPE, "spec must be %s", what);
    return SW_OK;
}

static sw_status rearrange_by(sw_tensor *t, const sw_einops_spec *spec,
                              sw_einops_field output, sw_einops_field selection,
                              sw_tensor **out) {
    return sw_rearrange(t, spec->nrec[output], spec->rec[output],
                        spec->nrec[selection], spec->rec[selection], out);
}

sw_status sw_einops_rearrange_spec(sw_tensor *t, const sw_einops_spec *spec,
                                   sw_tensor **out) {
    sw_status st = check_kind(spec, SW_EINOPS_REARRANGE, "a RearrangeSpec");
    if (st)
        return st;
    return rearrange_by(t, spec, SW_EINOPS_OUTPUT, SW_EINOPS_SELECTION, out);
}

sw_status sw_einops_reduce_spec(sw_tensor *t, const sw_einops_spec *spec,
                                sw_tensor **out) {
    sw_status st = check_kind(spec, SW_EINOPS_REDUCE, "a ReduceSpec");
    if (st)
        return st;
    sw_tensor *mid = NULL;
    st = rearrange_by(t, spec, SW_EINOPS_REARRANGE_OUTPUT, SW_EINOPS_SELECTION,
                      &mid);
    if (st)
        return st;
    st = sw_reduce_sum(mid, out);
    sw_tensor_unref(mid);
    return st;
}

sw_status sw_einops_einsum_spec(sw_tensor *lhs, sw_tensor *rhs,
                                const sw_einops_spec *spec, sw_tensor **out) {
    sw_status st = check_kind(spec, SW_EINOPS_EINSUM, "an EinsumSpec");
    if (st)
        return st;
    if (!lhs)
        return sw_fail(SW_ETYPE, "lhs must be a Tensor");
    if (!rhs)
        return sw_fail(SW_ETYPE, "rhs must be a Tensor");
    st = sw_einops_einsum_check(spec, sw_tensor_layout(lhs),
                                sw_tensor_layout(rhs));
    if (st)
        return st;
    sw_tensor *a = NULL, *b = NULL, *p = NULL;
    st = rearrange_by(lhs, spec, SW_EINOPS_LHS_REARRANGE_OUTPUT,
                      SW_EINOPS_LHS_SELECTION, &a);
    if (!st)
        st = rearrange_by(rhs, spec, SW_EINOPS_RHS_REARRANGE_OUTPUT,
                          SW_EINOPS_RHS_SELECTION, &b);
    if (!st)
        st = spec->nbatch > 0 ? sw_batched_matmul(a, b, &p)
                              : sw_matmul(a, b, &p);
    if (!st)
        st = rearrange_by(p, spec, SW_EINOPS_OUTPUT,
                          SW_EINOPS_MATMUL_OUTPUT_SELECTION, out);
    sw_tensor_unref(a);
    sw_tensor_unref(b);
    sw_tensor_unref(p);
    return st;
}

sw_status sw_einops_rearrange(sw_tensor *t, const char *description,
                              sw_tensor **out) {
    sw_einops_spec *spec = NULL;
    sw_status st = spec_of(SW_EINOPS_REARRANGE, description, &spec);
    if (st)
        return st;
    st = sw_einops_rearrange_spec(t, spec, out);
    sw_einops_spec_unref(spec);
    return st;
}

sw_status sw_einops_reduce(sw_tensor *t, const char *description,
                           sw_tensor **out) {
    sw_einops_spec *spec = NULL;
    sw_status st = spec_of(SW_EINOPS_REDUCE, description, &spec);
    if (st)
        return st;
    st = sw_einops_reduce_spec(t, spec, out);
    sw_einops_spec_unref(spec);
    return st;
}

sw_status sw_einops_einsum(sw_tensor *lhs, sw_tensor *rhs,
                           const char *description, sw_tensor **out) {
    sw_einops_spec *spec = NULL;
    sw_status st = spec_of(SW_EINOPS_EINSUM, description, &spec);
    if (st)
        return st;
    st = sw_einops_einsum_spec(lhs, rhs, spec, out);
    sw_einops_spec_unref(spec);
    return st;
}
