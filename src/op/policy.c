/*
 * Operation plans (strideweave/policy.h): the dtype rules of every
 * built-in computing operation, in one place.
 *
 * Resolution is a pure function of its arguments: it reads the static
 * registry records and writes the caller's struct, and allocates nothing.
 * The commonest call, every operand a tensor of one dtype, is answered
 * from a table of earlier answers (plan_memo), which is what a
 * definition-backed carrier's dispatch asks on every operation.
 */
#include <math.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/internal.h"
#include "op/internal.h"
#include "strideweave/policy.h"

/* ---------------------------------------------------------------- names */

static const char *const arithmetic_names[] = {
    "binary32", "binary64", "int32_exact", "int32_exact_checked", "host"};
static const char *const accumulation_names[] = {"floating", "exact_integer",
                                                 "host"};
static const char *const role_names[] = {"tensor", "weak_scalar"};

_Static_assert(sizeof arithmetic_names / sizeof arithmetic_names[0] ==
                   SW_ARITHMETIC_COUNT,
               "one name per arithmetic");
_Static_assert(sizeof accumulation_names / sizeof accumulation_names[0] ==
                   SW_ACCUMULATION_COUNT,
               "one name per accumulation");
_Static_assert(SW_ACCUM_NONE == SW_ACCUMULATION_COUNT,
               "the absent accumulation follows the kinds");
_Static_assert(sizeof role_names / sizeof role_names[0] ==
                   SW_OPERAND_ROLE_COUNT,
               "one name per operand role");

const char *sw_arithmetic_name(sw_arithmetic a) {
    return (int)a >= 0 && (int)a < SW_ARITHMETIC_COUNT ? arithmetic_names[a]
                                                       : NULL;
}

const char *sw_accumulation_name(sw_accumulation a) {
    return (int)a >= 0 && (int)a < SW_ACCUMULATION_COUNT ? accumulation_names[a]
                                                         : NULL;
}

const char *sw_operand_role_name(sw_operand_role r) {
    return (int)r >= 0 && (int)r < SW_OPERAND_ROLE_COUNT ? role_names[r] : NULL;
}

/* --------------------------------------------------------------- inputs */

sw_plan_input sw_plan_tensor(sw_dtype dtype) {
    sw_plan_input in = {SW_ROLE_TENSOR, dtype, SW_SCALAR_INTEGRAL, 0};
    return in;
}

sw_plan_input sw_plan_scalar(sw_scalar_kind kind, uint32_t traits) {
    sw_plan_input in = {SW_ROLE_WEAK_SCALAR, SW_PLAN_NO_DTYPE, kind, traits};
    return in;
}

sw_plan_input sw_plan_scalar_value(sw_scalar_kind kind, double v) {
    uint32_t traits = 0;
    if (v >= 0)
        traits |= SW_SCALAR_NONNEGATIVE;
    /* CPU carries a scalar as float32: its whole-ness is that value's. */
    float f = (float)v;
    if (isfinite(f) && floorf(f) == f)
        traits |= SW_SCALAR_WHOLE_F32;
    return sw_plan_scalar(kind, traits);
}

/* ------------------------------------------------------------ the rules */

int sw_op_has_plan(int32_t id) {
    /* Defined operations have no central plan: their resolve states one. */
    const sw_op_info *info =
        id < SW_OP_BUILTIN_COUNT ? sw_op_info_get(id) : NULL;
    return info != NULL && !(info->flags & SW_OPF_LAYOUT);
}

const sw_op_info *sw_op_info_find_plan(const char *name) {
    if (!name)
        return NULL;
    for (int32_t i = 0; i < sw_op_count(); ++i) {
        const sw_op_info *e = sw_op_info_get(i);
        if (e && strcmp(e->plan_name, name) == 0)
            return e;
    }
    return NULL;
}

/* The two families of computing dtypes: each has a floating and an
 * exact member, and an arithmetic for each. */
typedef enum family { FAMILY_NONE, FAMILY_CPU, FAMILY_GENERIC } family;

static family family_of(sw_dtype d) {
    switch (d) {
    case SW_DTYPE_FLOAT32:
    case SW_DTYPE_INT32:
        return FAMILY_CPU;
    case SW_DTYPE_FLOATING:
    case SW_DTYPE_ANY:
        return FAMILY_GENERIC;
    default:
        return FAMILY_NONE;
    }
}

static int is_exact(sw_dtype d) {
    return d == SW_DTYPE_INT32 || d == SW_DTYPE_ANY;
}

static sw_status check_input(const sw_op_info *info, int32_t i,
                             const sw_plan_input *in) {
    if ((int)in->role < 0 || (int)in->role >= SW_OPERAND_ROLE_COUNT)
        return sw_fail(SW_EVALUE, "%s operand %d has no valid role",
                       info->plan_name, (int)i);
    if (in->role == SW_ROLE_TENSOR) {
        if ((int)in->dtype < 0 || (int)in->dtype >= SW_DTYPE_COUNT)
            return sw_fail(SW_EVALUE, "%s operand %d has no valid dtype",
                           info->plan_name, (int)i);
        return SW_OK;
    }
    if ((int)in->kind < 0 || (int)in->kind >= SW_SCALAR_KIND_COUNT)
        return sw_fail(SW_EVALUE, "%s operand %d has no valid scalar kind",
                       info->plan_name, (int)i);
    if (in->traits & ~SW_SCALAR_TRAITS)
        return sw_fail(SW_EVALUE, "%s operand %d has unknown scalar traits",
                       info->plan_name, (int)i);
    return SW_OK;
}

/* Whether the result keeps the family's exact dtype, given that every
 * tensor operand is exact and s (or NULL) is the weak scalar. */
static int keeps_exact(const sw_op_info *info, family fam,
                       const sw_plan_input *s) {
    switch (info->id) {
    case SW_OP_MUL:
        return s->kind == SW_SCALAR_INTEGRAL;
    case SW_OP_POW:
        /* CPU reads the exponent as float32; Generic keeps Python's own
         * integer power only for non-negative integers. */
        if (fam == FAMILY_CPU)
            return (s->traits & SW_SCALAR_WHOLE_F32) &&
                   (s->traits & SW_SCALAR_NONNEGATIVE);
        return s->kind == SW_SCALAR_INTEGRAL &&
               (s->traits & SW_SCALAR_NONNEGATIVE);
    case SW_OP_ADD:
    case SW_OP_SUB:
    case SW_OP_ELEMENTWISE_MUL:
    case SW_OP_MATMUL:
    case SW_OP_BATCHED_MATMUL:
    case SW_OP_RELU:
    case SW_OP_REDUCE:
        return 1;
    default:
        return 0;
    }
}

static int accumulates(const sw_op_info *info) {
    return info->form == SW_FORM_REDUCE || info->form == SW_FORM_MATMUL;
}

static sw_status resolve_plan(int32_t op_id, int32_t n,
                              const sw_plan_input *inputs, sw_dtype accumulator,
                              sw_op_plan *out) {
    const sw_op_info *info = sw_op_info_get(op_id);
    if (!info)
        return sw_fail(SW_EVALUE, "unknown operation id %d", (int)op_id);
    if (info->id >= SW_OP_BUILTIN_COUNT)
        return sw_fail(SW_EVALUE,
                       "%s is a defined operation: its resolve states its "
                       "plans",
                       info->name);
    if (info->flags & SW_OPF_LAYOUT)
        return sw_fail(SW_EVALUE,
                       "%s is a layout operation: it has no operation plan",
                       info->plan_name);
    if (n != info->noperands)
        return sw_fail(SW_ETYPE, "%s takes %d operand%s, got %d",
                       info->plan_name, (int)info->noperands,
                       info->noperands == 1 ? "" : "s", (int)n);
    if (!inputs || !out)
        return sw_fail(SW_EVALUE, "%s plan needs inputs and a result",
                       info->plan_name);
    for (int32_t i = 0; i < n; ++i) {
        sw_status st = check_input(info, i, &inputs[i]);
        if (st)
            return st;
    }

    /* Roles: the schema's, except that mul may take its scalar first. */
    int swapped = info->id == SW_OP_MUL &&
                  inputs[0].role == SW_ROLE_WEAK_SCALAR &&
                  inputs[1].role == SW_ROLE_TENSOR;
    const sw_plan_input *scalar = NULL;
    for (int32_t i = 0; i < n; ++i) {
        const sw_operand_spec *spec = &info->operands[swapped ? n - 1 - i : i];
        int want_tensor = spec->kind == SW_OPERAND_TENSOR;
        if (want_tensor && inputs[i].role != SW_ROLE_TENSOR)
            return sw_fail(SW_ETYPE, "%s must be a Tensor", spec->name);
        if (!want_tensor && inputs[i].role != SW_ROLE_WEAK_SCALAR)
            return sw_fail(SW_ETYPE, "%s must be a numerical scalar",
                           spec->name);
        if (!want_tensor)
            scalar = &inputs[i];
    }

    /* The family of the tensor operands. */
    family fam = FAMILY_NONE;
    sw_dtype first = SW_PLAN_NO_DTYPE;
    int all_exact = 1;
    for (int32_t i = 0; i < n; ++i) {
        if (inputs[i].role != SW_ROLE_TENSOR)
            continue;
        sw_dtype d = inputs[i].dtype;
        const char *name = info->operands[swapped ? n - 1 - i : i].name;
        if (d == SW_DTYPE_BOOL)
            return sw_fail(SW_ETYPE,
                           "%s: CPU operations do not compute on Bool "
                           "tensors",
                           name);
        family f = family_of(d);
        if (fam != FAMILY_NONE && f != fam)
            return sw_fail(SW_ETYPE,
                           "%s has no plan for %s and %s operands: CPU dtypes "
                           "(Float32, Int32) and Generic dtypes (Floating, "
                           "Any) do not mix",
                           info->plan_name, sw_dtype_name(first),
                           sw_dtype_name(d));
        if (fam == FAMILY_NONE) {
            fam = f;
            first = d;
        }
        all_exact = all_exact && is_exact(d);
    }

    int exact = all_exact && keeps_exact(info, fam, scalar);
    sw_dtype floating =
        fam == FAMILY_CPU ? SW_DTYPE_FLOAT32 : SW_DTYPE_FLOATING;
    sw_dtype exact_dt = fam == FAMILY_CPU ? SW_DTYPE_INT32 : SW_DTYPE_ANY;
    sw_dtype result = exact ? exact_dt : floating;

    sw_op_plan p;
    memset(&p, 0, sizeof p);
    p.op = info->id;
    p.noperands = n;
    for (int32_t i = 0; i < n; ++i) {
        p.operands[i].role = inputs[i].role;
        p.operands[i].dtype = inputs[i].role == SW_ROLE_TENSOR
                                  ? inputs[i].dtype
                                  : SW_PLAN_NO_DTYPE;
        p.operands[i].convert_to = result;
    }
    if (!exact)
        p.compute = fam == FAMILY_CPU ? SW_ARITH_BINARY32 : SW_ARITH_BINARY64;
    else if (fam == FAMILY_GENERIC)
        p.compute = SW_ARITH_HOST;
    else
        /* ReLU keeps its input or 0: nothing to overflow. */
        p.compute = info->id == SW_OP_RELU ? SW_ARITH_INT32_EXACT
                                           : SW_ARITH_INT32_EXACT_CHECKED;
    if (accumulates(info)) {
        if (!exact)
            p.accumulation = SW_ACCUM_FLOATING;
        else
            p.accumulation =
                fam == FAMILY_CPU ? SW_ACCUM_EXACT_INTEGER : SW_ACCUM_HOST;
        p.accumulator = result;
    } else {
        p.accumulation = SW_ACCUM_NONE;
        p.accumulator = SW_PLAN_NO_DTYPE;
    }
    p.output = result;

    if (accumulator != SW_PLAN_NO_DTYPE) {
        if (p.accumulation == SW_ACCUM_NONE)
            return sw_fail(SW_ETYPE,
                           "unknown option 'accumulator_dtype': %s has no "
                           "accumulation",
                           info->plan_name);
        if ((int)accumulator < 0 || (int)accumulator >= SW_DTYPE_COUNT)
            return sw_fail(SW_ETYPE, "accumulator_dtype must be a dtype");
        if (accumulator != p.accumulator)
            return sw_fail(SW_ETYPE,
                           "accumulator_dtype %s is not supported for this %s "
                           "plan: it accumulates in %s",
                           sw_dtype_name(accumulator), info->plan_name,
                           sw_dtype_name(p.accumulator));
    }
    *out = p;
    return SW_OK;
}

/* Successful resolutions of calls whose operands are all tensors of one
 * dtype, without an accumulator option, per (operation, dtype). An entry
 * goes from empty to writing (one thread wins the exchange; the others
 * simply do not remember) to ready, published with a release store that
 * readers acquire: no lock, so nothing to repair in a forked child. The
 * operand count is part of the answer and is compared, so a call with
 * another count resolves (and fails) in full. */
enum { MEMO_EMPTY, MEMO_WRITING, MEMO_READY };

typedef struct plan_memo {
    atomic_int state;
    sw_op_plan plan;
} plan_memo;

static plan_memo memo[SW_OP_BUILTIN_COUNT][SW_DTYPE_COUNT];

/* The memo entry of a call, or NULL when the call is of another shape. */
static plan_memo *memo_of(int32_t op_id, int32_t n, const sw_plan_input *inputs,
                          sw_dtype accumulator) {
    if (op_id < 0 || op_id >= SW_OP_BUILTIN_COUNT || n < 1 ||
        n > SW_PLAN_MAX_OPERANDS || !inputs || accumulator != SW_PLAN_NO_DTYPE)
        return NULL;
    sw_dtype d = inputs[0].dtype;
    if ((int)d < 0 || (int)d >= SW_DTYPE_COUNT)
        return NULL;
    for (int32_t i = 0; i < n; ++i)
        if (inputs[i].role != SW_ROLE_TENSOR || inputs[i].dtype != d)
            return NULL;
    return &memo[op_id][d];
}

const sw_op_plan *sw_op_plan_memo(int32_t op_id, int32_t n, sw_dtype dtype) {
    /* memo_of's entry of n tensor inputs of dtype, when it is ready. */
    if (op_id < 0 || op_id >= SW_OP_BUILTIN_COUNT || n < 1 ||
        n > SW_PLAN_MAX_OPERANDS || (int)dtype < 0 ||
        (int)dtype >= SW_DTYPE_COUNT)
        return NULL;
    const plan_memo *m = &memo[op_id][dtype];
    if (atomic_load_explicit(&m->state, memory_order_acquire) != MEMO_READY ||
        m->plan.noperands != n)
        return NULL;
    return &m->plan;
}

sw_status sw_op_plan_resolve(int32_t op_id, int32_t n,
                             const sw_plan_input *inputs, sw_dtype accumulator,
                             sw_op_plan *out) {
    plan_memo *m = memo_of(op_id, n, inputs, accumulator);
    const sw_op_plan *known =
        m && out ? sw_op_plan_memo(op_id, n, inputs[0].dtype) : NULL;
    if (known) {
        *out = *known;
        return SW_OK;
    }
    sw_status st = resolve_plan(op_id, n, inputs, accumulator, out);
    if (st || !m)
        return st;
    int empty = MEMO_EMPTY;
    if (atomic_compare_exchange_strong_explicit(&m->state, &empty, MEMO_WRITING,
                                                memory_order_acquire,
                                                memory_order_relaxed)) {
        m->plan = *out;
        atomic_store_explicit(&m->state, MEMO_READY, memory_order_release);
    }
    return SW_OK;
}

int sw_op_plan_equal(const sw_op_plan *a, const sw_op_plan *b) {
    if (a->op != b->op || a->noperands != b->noperands ||
        a->compute != b->compute || a->accumulation != b->accumulation ||
        a->accumulator != b->accumulator || a->output != b->output)
        return 0;
    if (a->noperands < 0 || a->noperands > SW_PLAN_MAX_OPERANDS)
        return 0;
    for (int32_t i = 0; i < a->noperands; ++i) {
        const sw_operand_plan *x = &a->operands[i], *y = &b->operands[i];
        if (x->role != y->role || x->dtype != y->dtype ||
            x->convert_to != y->convert_to)
            return 0;
    }
    return 1;
}

/* --------------------------------------------------------- description */

static const char *or_unknown(const char *s) {
    return s ? s : "?";
}

/* Appends to buf like snprintf, tracking the full length in *len. */
SW_PRINTF(4, 5)
static void put(char *buf, size_t size, int64_t *len, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    size_t at = (size_t)*len < size ? (size_t)*len : size;
    int k = vsnprintf(buf ? buf + at : NULL, size - at, fmt, ap);
    va_end(ap);
    if (k > 0)
        *len += k;
}

int64_t sw_op_plan_describe(const sw_op_plan *plan, char *buf, size_t size) {
    int64_t len = 0;
    if (size == 0)
        buf = NULL;
    else
        buf[0] = '\0';
    const sw_op_info *info = sw_op_info_get(plan->op);
    put(buf, size, &len, "%s with operands (", info ? info->plan_name : "?");
    int32_t n = plan->noperands;
    if (n < 0 || n > SW_PLAN_MAX_OPERANDS)
        n = 0;
    for (int32_t i = 0; i < n; ++i) {
        const sw_operand_plan *o = &plan->operands[i];
        const char *sep = i ? ", " : "";
        if (o->role == SW_ROLE_TENSOR)
            put(buf, size, &len, "%stensor %s->%s", sep,
                or_unknown(sw_dtype_name(o->dtype)),
                or_unknown(sw_dtype_name(o->convert_to)));
        else
            put(buf, size, &len, "%s%s->%s", sep,
                or_unknown(sw_operand_role_name(o->role)),
                or_unknown(sw_dtype_name(o->convert_to)));
    }
    put(buf, size, &len, "), %s compute, ",
        or_unknown(sw_arithmetic_name(plan->compute)));
    if (plan->accumulation == SW_ACCUM_NONE)
        put(buf, size, &len, "no accumulation, ");
    else
        put(buf, size, &len, "%s accumulation in %s, ",
            or_unknown(sw_accumulation_name(plan->accumulation)),
            or_unknown(sw_dtype_name(plan->accumulator)));
    put(buf, size, &len, "%s output", or_unknown(sw_dtype_name(plan->output)));
    return len;
}
