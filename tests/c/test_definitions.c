/*
 * Unit tests of operation definitions (definition.h): the name and schema
 * rules of sw_op_define, the registry's view of definitions, binding in
 * its order of checks, the checks on a resolution, the released-carrier
 * check and the exact-object alias ban, reference execution and its
 * contract, the autograd nodes (gradients against central differences,
 * saved versions, the VJP's contract, saved state freed after backward)
 * and concurrent definitions against lookups.
 *
 * acme.scale multiplies a tensor by its option factor; acme.probe
 * misbehaves on purpose in the way the global `mode` says.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "strideweave/strideweave.h"

/* ------------------------------------------------------------ helpers */

static sw_layout *P(const char *text) {
    sw_layout *l = NULL;
    if (sw_layout_parse(text, &l) != SW_OK)
        bail_out("layout parse");
    return l;
}

/* A CPU Float32 tensor of a compact layout holding vals. */
static sw_tensor *cpu_tensor(const char *layout, const double *vals) {
    sw_layout *l = P(layout);
    sw_carrier *c = NULL;
    sw_tensor *t = NULL;
    if (sw_cpu_new(sw_layout_cosize(l), SW_DTYPE_FLOAT32, 1, 0, &c) ||
        sw_tensor_new(c, 0, l, &t))
        bail_out("cpu tensor");
    for (int64_t i = 0; i < sw_layout_size(l); ++i) {
        sw_value v = sw_value_f64(vals ? vals[i] : 0.0);
        if (sw_tensor_set(t, i, &v))
            bail_out("cpu tensor set");
    }
    sw_carrier_unref(c);
    sw_layout_unref(l);
    return t;
}

static sw_tensor *int_tensor(const char *layout) {
    sw_layout *l = P(layout);
    sw_carrier *c = NULL;
    sw_tensor *t = NULL;
    if (sw_cpu_new(sw_layout_cosize(l), SW_DTYPE_INT32, 1, 0, &c) ||
        sw_tensor_new(c, 0, l, &t))
        bail_out("int tensor");
    sw_carrier_unref(c);
    sw_layout_unref(l);
    return t;
}

static double getd(const sw_tensor *t, int64_t i) {
    sw_value v;
    if (sw_tensor_get(t, i, &v))
        bail_out("get");
    return v.kind == SW_VALUE_F64 ? v.as.f : (double)v.as.i;
}

static double arg_f64(const sw_arg *a) {
    return a->kind == SW_ARG_F64 ? a->as.f : (double)a->as.i;
}

static sw_op_plan unary_plan(int32_t id, sw_dtype dt) {
    sw_op_plan p;
    memset(&p, 0, sizeof p);
    p.op = id;
    p.noperands = 1;
    p.operands[0].role = SW_ROLE_TENSOR;
    p.operands[0].dtype = dt;
    p.operands[0].convert_to = dt;
    p.compute = SW_ARITH_BINARY32;
    p.accumulation = SW_ACCUM_NONE;
    p.accumulator = SW_PLAN_NO_DTYPE;
    p.output = dt;
    return p;
}

/* ---------------------------------------------------------- acme.scale */

static int32_t scale_id = -1;
static int vjp_calls;

static sw_status scale_resolve(void *ctx, const sw_bound_call *call,
                               sw_resolution *out) {
    (void)ctx;
    sw_tensor *x = call->operands[0].as.tensor;
    out->plan = unary_plan(call->op, sw_tensor_dtype(x));
    out->nresults = 1;
    out->results[0].dtype = sw_tensor_dtype(x);
    out->results[0].layout = sw_layout_retain(sw_tensor_layout(x));
    return SW_OK;
}

static sw_status scale_reference(void *ctx, const sw_bound_call *call,
                                 const sw_resolution *res,
                                 sw_tensor **results) {
    (void)ctx;
    (void)res;
    return sw_mul(call->operands[0].as.tensor, call->options[0], &results[0]);
}

static sw_status scale_vjp(void *ctx, const sw_vjp_context *vc,
                           sw_tensor *const *cot, int32_t ngrads,
                           sw_tensor **grads) {
    (void)ctx;
    ++vjp_calls;
    if (ngrads != 1 || !cot[0])
        return sw_set_error(SW_ERUNTIME, "scale_vjp: bad call");
    return sw_mul(cot[0], sw_arg_f64(arg_f64(&vc->call->options[0])),
                  &grads[0]);
}

static const sw_operand_spec scale_operands[] = {{"x", SW_OPERAND_TENSOR, 1}};

static const sw_option_spec scale_options[1] = {
    {"factor", 0, {SW_ARG_F64, {.f = 2.0}}}};

static sw_op_definition scale_def(const char *name) {
    sw_op_definition d;
    memset(&d, 0, sizeof d);
    d.version = SW_OP_DEFINITION_VERSION;
    d.name = name;
    d.noperands = 1;
    d.operands = scale_operands;
    d.noptions = 1;
    d.options = scale_options;
    d.resolve = scale_resolve;
    d.reference = scale_reference;
    d.vjp = scale_vjp;
    return d;
}

/* ---------------------------------------------------------- acme.probe */

/* What acme.probe's callbacks do wrong. */
typedef enum probe_mode {
    PROBE_GOOD = 0,
    PROBE_ROLES,          /* a plan with a weak-scalar role */
    PROBE_OTHER_OP,       /* a plan of another operation */
    PROBE_NO_RESULTS,     /* an empty result list */
    PROBE_ALIAS_RANGE,    /* alias_of 5 */
    PROBE_ALIAS_STRUCT,   /* alias_of the structural operand */
    PROBE_ALIAS_NEG,      /* alias_of -2 */
    PROBE_MUTATED_STRUCT, /* mutated_operands on the structural operand */
    PROBE_SAVED_TWICE,    /* saved_operands (0, 0) */
    PROBE_KERNEL_EMPTY,   /* kernel_id "" */
    PROBE_TOL,            /* atol infinite */
    PROBE_ALIAS,          /* a correct alias of operand 0 */
    PROBE_ALIAS_COPY,     /* declares an alias, returns a fresh tensor */
    PROBE_REF_NONE,       /* the reference returns nothing */
    PROBE_REF_DTYPE,      /* the reference returns an Int32 tensor */
    PROBE_VJP_SHAPE,      /* the VJP's gradient has another shape */
    PROBE_VJP_DTYPE,      /* the VJP's gradient has another dtype */
    PROBE_VJP_LAYOUT      /* the right shape in another layout */
} probe_mode;

static probe_mode mode;
static int32_t probe_id = -1, probe_nd_id = -1;
static int resolve_calls, reference_calls;

static sw_status probe_resolve(void *ctx, const sw_bound_call *call,
                               sw_resolution *out) {
    (void)ctx;
    ++resolve_calls;
    sw_tensor *x = call->operands[0].as.tensor;
    out->plan = unary_plan(call->op, sw_tensor_dtype(x));
    out->nresults = 1;
    out->results[0].dtype = sw_tensor_dtype(x);
    out->results[0].layout = sw_layout_retain(sw_tensor_layout(x));
    out->nsaved = 1;
    out->saved[0] = 0;
    switch (mode) {
    case PROBE_ROLES:
        out->plan.operands[0].role = SW_ROLE_WEAK_SCALAR;
        break;
    case PROBE_OTHER_OP:
        out->plan.op = SW_OP_RELU;
        break;
    case PROBE_NO_RESULTS:
        sw_layout_unref(out->results[0].layout);
        out->results[0].layout = NULL;
        out->nresults = 0;
        break;
    case PROBE_ALIAS_RANGE:
        out->results[0].alias_of = 5;
        break;
    case PROBE_ALIAS_STRUCT:
        out->results[0].alias_of = 1;
        break;
    case PROBE_ALIAS_NEG:
        out->results[0].alias_of = -2;
        break;
    case PROBE_MUTATED_STRUCT:
        out->nmutated = 1;
        out->mutated[0] = 1;
        break;
    case PROBE_SAVED_TWICE:
        out->nsaved = 2;
        out->saved[1] = 0;
        break;
    case PROBE_KERNEL_EMPTY:
        out->kernel_id = "";
        break;
    case PROBE_TOL:
        out->results[0].atol = INFINITY;
        break;
    case PROBE_ALIAS:
    case PROBE_ALIAS_COPY:
        out->results[0].alias_of = 0;
        break;
    default:
        break;
    }
    return SW_OK;
}

static sw_status probe_reference(void *ctx, const sw_bound_call *call,
                                 const sw_resolution *res,
                                 sw_tensor **results) {
    (void)ctx;
    (void)res;
    ++reference_calls;
    sw_tensor *x = call->operands[0].as.tensor;
    switch (mode) {
    case PROBE_REF_NONE:
        return SW_OK;
    case PROBE_ALIAS:
        results[0] = sw_tensor_retain(x);
        return SW_OK;
    case PROBE_REF_DTYPE:
        results[0] = int_tensor("(2,3):(1,2)");
        return SW_OK;
    default:
        return sw_mul(x, sw_arg_f64(3.0), &results[0]);
    }
}

static sw_status probe_vjp(void *ctx, const sw_vjp_context *vc,
                           sw_tensor *const *cot, int32_t ngrads,
                           sw_tensor **grads) {
    (void)ctx;
    (void)ngrads;
    ++vjp_calls;
    if (vc->nsaved != 1 || vc->saved[0] != vc->call->operands[0].as.tensor ||
        vc->noutputs != 1 || !vc->outputs[0])
        return sw_set_error(SW_ERUNTIME, "probe_vjp: bad context");
    switch (mode) {
    case PROBE_VJP_SHAPE:
        grads[0] = cpu_tensor("6:1", NULL);
        return SW_OK;
    case PROBE_VJP_DTYPE:
        grads[0] = int_tensor("(2,3):(1,2)");
        return SW_OK;
    case PROBE_VJP_LAYOUT: {
        /* Row-major values of cot * 3. */
        double v[6];
        for (int i = 0; i < 6; ++i)
            v[i] = 3.0 * getd(cot[0], i);
        sw_tensor *t = cpu_tensor("(2,3):(1,2)", v);
        sw_layout *rm = P("(2,3):(3,1)");
        sw_status st = sw_tensor_new(sw_tensor_carrier(t), 0, rm, &grads[0]);
        sw_layout_unref(rm);
        /* rm reads slot 3*i+j where t holds element (i, j) at i+2j, so
         * write the values again through the row-major view. */
        for (int i = 0; !st && i < 6; ++i) {
            sw_value x = sw_value_f64(v[i]);
            st = sw_tensor_set(grads[0], i, &x);
        }
        sw_tensor_unref(t);
        return st;
    }
    default:
        return sw_mul(cot[0], sw_arg_f64(3.0), &grads[0]);
    }
}

static const sw_operand_spec probe_operands[] = {
    {"x", SW_OPERAND_TENSOR, 1}, {"tag", SW_OPERAND_STRUCTURAL, 0}};

static sw_op_definition probe_def(const char *name, int nondiff) {
    sw_op_definition d;
    memset(&d, 0, sizeof d);
    d.version = SW_OP_DEFINITION_VERSION;
    d.name = name;
    d.noperands = 2;
    d.operands = probe_operands;
    d.resolve = probe_resolve;
    d.reference = probe_reference;
    if (nondiff)
        d.non_differentiable = 1;
    else
        d.vjp = probe_vjp;
    return d;
}

static sw_status probe_call(int32_t id, sw_tensor *x, sw_tensor **out) {
    sw_arg args[2] = {sw_arg_tensor(x), sw_arg_i64(7)};
    int32_t n = 0;
    sw_tensor *res[SW_DEF_MAX_RESULTS] = {NULL};
    sw_status st = sw_op_call(id, 2, args, 0, NULL, &n, res);
    if (!st)
        *out = res[0];
    return st;
}

/* ------------------------------------------------------------- tests */

static void test_define_rules(void) {
    int64_t base = sw_debug_live_allocs();
    static const char *bad[] = {
        "plain",   ".missing", "acme.", "acme.not-valid",
        "acme..x", "1acme.x",  ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
        sw_op_definition d = scale_def(bad[i]);
        char want[256];
        snprintf(want, sizeof want,
                 "operation name '%s' must be namespaced: dot-separated "
                 "identifier segments such as 'acme.scale'",
                 bad[i]);
        sw_status st = sw_op_define(&d, NULL);
        expect_fail(st, SW_EVALUE, want, bad[i]);
    }
    static const char *reserved[] = {"strideweave.custom", "add.custom",
                                     "reduce_sum.x", "reduce.x"};
    for (size_t i = 0; i < sizeof reserved / sizeof reserved[0]; ++i) {
        sw_op_definition d = scale_def(reserved[i]);
        char want[256];
        const char *dot = strchr(reserved[i], '.');
        snprintf(want, sizeof want,
                 "operation namespace '%.*s' of '%s' is reserved",
                 (int)(dot - reserved[i]), reserved[i], reserved[i]);
        sw_status st = sw_op_define(&d, NULL);
        expect_fail(st, SW_EVALUE, want, reserved[i]);
    }
    sw_op_definition d = scale_def("acme.novjp");
    d.vjp = NULL;
    sw_status st = sw_op_define(&d, NULL);
    expect_fail(st, SW_EVALUE,
                "the vjp of 'acme.novjp' must be supplied explicitly: a "
                "callback or the non-differentiable marker, not both",
                "no vjp");
    ok(sw_op_info_find("acme.novjp") == NULL, "nothing registered without a "
                                              "vjp");
    d.vjp = scale_vjp;
    d.non_differentiable = 1;
    st = sw_op_define(&d, NULL);
    expect_fail(st, SW_EVALUE, NULL, "vjp and non-differentiable");

    d = scale_def("acme.empty");
    d.noperands = 0;
    st = sw_op_define(&d, NULL);
    expect_fail(st, SW_EVALUE,
                "the operand list of 'acme.empty' must not be empty",
                "empty operands");
    static const sw_operand_spec bad_name[] = {{"not valid", 0, 0}};
    d = scale_def("acme.badname");
    d.operands = bad_name;
    st = sw_op_define(&d, NULL);
    expect_fail(st, SW_EVALUE,
                "operand name 'not valid' of 'acme.badname' must be an "
                "identifier",
                "operand name");
    static const sw_operand_spec diff_scalar[] = {
        {"s", SW_OPERAND_WEAK_SCALAR, 1}};
    d = scale_def("acme.diffscalar");
    d.operands = diff_scalar;
    st = sw_op_define(&d, NULL);
    expect_fail(st, SW_EVALUE,
                "operand 's' of 'acme.diffscalar': only a Tensor operand "
                "can be differentiable",
                "differentiable scalar");
    static const sw_operand_spec twice[] = {{"factor", SW_OPERAND_TENSOR, 0}};
    d = scale_def("acme.twice");
    d.operands = twice;
    st = sw_op_define(&d, NULL);
    expect_fail(st, SW_EVALUE,
                "operand and option names of 'acme.twice' must be unique: "
                "'factor' repeats",
                "repeated name");
    d = scale_def("acme.noresolve");
    d.resolve = NULL;
    st = sw_op_define(&d, NULL);
    expect_fail(st, SW_ETYPE,
                "the resolve callback of 'acme.noresolve' is "
                "missing",
                "no resolve");
    d = scale_def("acme.version");
    d.version = 99;
    st = sw_op_define(&d, NULL);
    expect_fail(st, SW_ETYPE, NULL, "wrong version");
    leak_check(base, "rejected definitions");
}

static void test_define_and_registry(void) {
    int32_t before = sw_op_count();
    sw_op_definition d = scale_def("acme.scale");
    sw_status st = sw_op_define(&d, &scale_id);
    if (!expect_ok(st, "define acme.scale"))
        bail_out("cannot define");
    ok(scale_id >= SW_OP_BUILTIN_COUNT, "a defined id follows the built-ins");
    is_int(sw_op_count(), before + 1, "the registry grew by one");
    const sw_op_info *info = sw_op_info_get(scale_id);
    ok(info && info->id == scale_id, "sw_op_info_get sees it");
    is_str(info ? info->name : "", "acme.scale", "its name");
    ok(sw_op_info_find("acme.scale") == info, "sw_op_info_find sees it");
    is_int(info ? info->noperands : -1, 1, "its operand count");
    ok(info && info->form == SW_FORM_DEFINED, "its form");
    ok(!sw_op_has_plan(scale_id), "no central plan");
    ok(sw_op_definition_get(scale_id) != NULL &&
           sw_op_definition_get(SW_OP_ADD) == NULL,
       "sw_op_definition_get knows definitions only");
    ok(sw_op_definition_operand_differentiable(scale_id, 0), "x is "
                                                             "differentiable");
    st = sw_op_define(&d, NULL);
    expect_fail(st, SW_EVALUE, "operation 'acme.scale' is already defined",
                "defining again");
    is_int(sw_op_count(), before + 1, "a rejected definition adds nothing");
    sw_op_plan plan;
    sw_plan_input in = sw_plan_tensor(SW_DTYPE_FLOAT32);
    st = sw_op_plan_resolve(scale_id, 1, &in, SW_PLAN_NO_DTYPE, &plan);
    expect_fail(st, SW_EVALUE,
                "acme.scale is a defined operation: its resolve states its "
                "plans",
                "no central plan resolution");
    sw_carrier *c = NULL;
    sw_op *op = NULL;
    sw_cpu_new(4, SW_DTYPE_FLOAT32, 1, 0, &c);
    st = sw_carrier_dispatch_op(c, "acme.scale", &op);
    ok(st == SW_ENOTIMPL, "a CPU carrier does not dispatch a definition");
    sw_clear_error();
    sw_carrier_unref(c);

    d = probe_def("acme.probe", 0);
    st = sw_op_define(&d, &probe_id);
    expect_ok(st, "define acme.probe");
    d = probe_def("acme.probe_nd", 1);
    st = sw_op_define(&d, &probe_nd_id);
    expect_ok(st, "define acme.probe_nd (non-differentiable)");
}

static void test_bind(void) {
    int64_t base = sw_debug_live_allocs();
    sw_tensor *x = cpu_tensor("(2,3):(1,2)", NULL);
    sw_bound_call call;
    sw_arg args[2] = {sw_arg_tensor(x), sw_arg_f64(1.0)};
    sw_status st = sw_op_bind(scale_id, 2, args, 0, NULL, &call);
    expect_fail(st, SW_ETYPE, "'acme.scale' expects 1 operands, got 2",
                "operand count");
    sw_named_arg unknown = {"bogus", sw_arg_f64(1)};
    st = sw_op_bind(scale_id, 1, args, 1, &unknown, &call);
    expect_fail(st, SW_ETYPE, "'acme.scale' got an unknown option 'bogus'",
                "unknown option");
    sw_named_arg dup[2] = {{"factor", sw_arg_f64(1)},
                           {"factor", sw_arg_f64(2)}};
    st = sw_op_bind(scale_id, 1, args, 2, dup, &call);
    expect_fail(st, SW_ETYPE, "'acme.scale' got option 'factor' twice",
                "duplicate option");
    sw_arg notensor = sw_arg_f64(1.0);
    st = sw_op_bind(scale_id, 1, &notensor, 0, NULL, &call);
    expect_fail(st, SW_ETYPE, "operand 'x' of 'acme.scale' must be a Tensor",
                "tensor kind");
    /* The order: options before kinds. */
    st = sw_op_bind(scale_id, 1, &notensor, 1, &unknown, &call);
    expect_fail(st, SW_ETYPE, "'acme.scale' got an unknown option 'bogus'",
                "options are checked before kinds");
    st = sw_op_bind(SW_OP_ADD, 1, args, 0, NULL, &call);
    expect_fail(st, SW_EKEY, NULL, "a built-in is not a definition");

    st = sw_op_bind(scale_id, 1, args, 0, NULL, &call);
    if (expect_ok(st, "bind with the default"))
        ok(call.noptions == 1 && call.options[0].kind == SW_ARG_F64 &&
               call.options[0].as.f == 2.0,
           "the default is filled in");

    /* A required option and a weak scalar. */
    static const sw_operand_spec ops[] = {{"x", SW_OPERAND_TENSOR, 1},
                                          {"s", SW_OPERAND_WEAK_SCALAR, 0}};
    static sw_option_spec opts[] = {{"mode", 1, {0}}};
    sw_op_definition d = scale_def("acme.bindrules");
    d.noperands = 2;
    d.operands = ops;
    d.noptions = 1;
    d.options = opts;
    int32_t id = -1;
    st = sw_op_define(&d, &id);
    expect_ok(st, "define acme.bindrules");
    base += 2; /* its record and names stay for the life of the process */
    st = sw_op_bind(id, 2, args, 0, NULL, &call);
    expect_fail(st, SW_ETYPE,
                "'acme.bindrules' is missing required option "
                "'mode'",
                "missing required");
    sw_named_arg mode_opt = {"mode", sw_arg_i64(1)};
    sw_arg two_tensors[2] = {sw_arg_tensor(x), sw_arg_tensor(x)};
    st = sw_op_bind(id, 2, two_tensors, 1, &mode_opt, &call);
    expect_fail(st, SW_ETYPE,
                "operand 's' of 'acme.bindrules' must be a weak scalar (a "
                "real number, not a Tensor)",
                "weak scalar kind");
    sw_arg with_bool[2] = {sw_arg_tensor(x), {SW_ARG_BOOL, {.i = 1}}};
    st = sw_op_bind(id, 2, with_bool, 1, &mode_opt, &call);
    expect_ok(st, "a bool is a weak scalar");
    sw_tensor_unref(x);
    leak_check(base, "binding");
}

static void expect_resolution_fail(probe_mode m, sw_status want,
                                   const char *msg, const char *name) {
    sw_tensor *x = cpu_tensor("(2,3):(1,2)", NULL);
    sw_tensor *out = NULL;
    mode = m;
    reference_calls = 0;
    sw_status st = probe_call(probe_id, x, &out);
    expect_fail(st, want, msg, name);
    is_int(reference_calls, 0, "%s: the reference did not run", name);
    ok(out == NULL, "%s: no result", name);
    sw_tensor_unref(x);
    mode = PROBE_GOOD;
}

static void test_resolution_checks(void) {
    int64_t base = sw_debug_live_allocs();
    expect_resolution_fail(PROBE_ROLES, SW_EVALUE,
                           "the plan of 'acme.probe' must match the call's "
                           "operation and operand roles (its tensor and "
                           "weak-scalar operands, in order)",
                           "plan roles");
    expect_resolution_fail(PROBE_OTHER_OP, SW_EVALUE, NULL, "plan operation");
    expect_resolution_fail(PROBE_NO_RESULTS, SW_EVALUE,
                           "the results of 'acme.probe' must not be empty",
                           "no results");
    expect_resolution_fail(PROBE_ALIAS_RANGE, SW_EVALUE,
                           "alias_of of 'acme.probe': index 5 is "
                           "out-of-range for 2 operands",
                           "alias out of range");
    expect_resolution_fail(PROBE_ALIAS_STRUCT, SW_EVALUE,
                           "alias_of of 'acme.probe' must name Tensor "
                           "operands: operand 1 ('tag') is not one",
                           "alias on a structural operand");
    expect_resolution_fail(PROBE_ALIAS_NEG, SW_EVALUE,
                           "alias_of of result 0 of 'acme.probe' must be "
                           "non-negative",
                           "negative alias");
    expect_resolution_fail(PROBE_MUTATED_STRUCT, SW_EVALUE,
                           "mutated_operands of 'acme.probe' must name "
                           "Tensor operands: operand 1 ('tag') is not one",
                           "mutated structural");
    expect_resolution_fail(PROBE_SAVED_TWICE, SW_EVALUE,
                           "saved_operands of 'acme.probe' must be unique: 0 "
                           "repeats",
                           "saved twice");
    expect_resolution_fail(PROBE_KERNEL_EMPTY, SW_EVALUE,
                           "the kernel_id of 'acme.probe' must not be empty",
                           "empty kernel id");
    expect_resolution_fail(PROBE_TOL, SW_EVALUE,
                           "tolerances of result 0 of 'acme.probe' must be "
                           "finite and non-negative",
                           "infinite tolerance");
    leak_check(base, "resolution checks");
}

static void test_alias_rules(void) {
    int64_t base = sw_debug_live_allocs();
    /* The released-carrier check comes first. */
    sw_tensor *x = cpu_tensor("(2,3):(1,2)", NULL);
    sw_carrier_release_storage(sw_tensor_carrier(x));
    mode = PROBE_ALIAS;
    sw_tensor *out = NULL;
    sw_status st = probe_call(probe_id, x, &out);
    expect_fail(st, SW_ERUNTIME, "Carrier is released",
                "released wins over the alias ban");
    sw_tensor_unref(x);

    x = cpu_tensor("(2,3):(1,2)", NULL);
    int64_t version = sw_tensor_version(x);
    reference_calls = 0;
    st = probe_call(probe_id, x, &out);
    expect_fail(st, SW_EVALUE,
                "result 0 of 'acme.probe' would be exact-object aliased to "
                "operand 0 while gradients are recorded: a result that takes "
                "the node cannot be its own operand",
                "the alias ban");
    is_int(reference_calls, 0, "the ban runs before the reference");
    is_int(sw_tensor_version(x), version, "the operand is untouched");
    ok(sw_tensor_autograd_ctx(x) == NULL, "no node on the operand");

    sw_set_grad_enabled(0);
    st = probe_call(probe_id, x, &out);
    sw_set_grad_enabled(1);
    if (expect_ok(st, "an alias without grad mode"))
        ok(out == x && sw_tensor_autograd_ctx(x) == NULL,
           "returns the very operand, no node");
    sw_tensor_unref(out);
    out = NULL;
    st = probe_call(probe_nd_id, x, &out);
    if (expect_ok(st, "an alias of a non-differentiable definition"))
        ok(out == x && sw_tensor_autograd_ctx(x) == NULL,
           "returns the very operand, no node");
    sw_tensor_unref(out);
    out = NULL;

    mode = PROBE_ALIAS_COPY;
    int contract;
    st = probe_call(probe_nd_id, x, &out);
    contract = sw_op_contract_failed();
    expect_fail(st, SW_ERUNTIME,
                "the reference of 'acme.probe_nd' broke aliasing: result 0 "
                "is declared alias_of operand 0 but is not that very Tensor",
                "a distinct tensor for an alias");
    ok(contract, "a broken alias is a contract failure");
    mode = PROBE_REF_NONE;
    st = probe_call(probe_nd_id, x, &out);
    contract = sw_op_contract_failed();
    expect_fail(st, SW_ERUNTIME,
                "the reference of 'acme.probe_nd' returned no results",
                "no results from the reference");
    ok(contract, "no results is a contract failure");
    mode = PROBE_REF_DTYPE;
    st = probe_call(probe_nd_id, x, &out);
    contract = sw_op_contract_failed();
    expect_fail(st, SW_ERUNTIME,
                "result 0 of the reference of 'acme.probe_nd' has dtype "
                "Int32, declared Float32",
                "a result of the wrong dtype");
    ok(contract, "a wrong dtype is a contract failure");
    mode = PROBE_GOOD;
    st = probe_call(probe_nd_id, x, &out);
    ok(st == SW_OK && !sw_op_contract_failed(),
       "the flag resets on the next call");
    sw_tensor_unref(out);
    out = NULL;
    mode = PROBE_GOOD;
    sw_tensor_unref(x);

    sw_op_definition d = scale_def("acme.noref");
    d.reference = NULL;
    int32_t id = -1;
    st = sw_op_define(&d, &id);
    base += 2; /* the record of acme.noref stays */
    x = cpu_tensor("(2,3):(1,2)", NULL);
    sw_arg arg = sw_arg_tensor(x);
    int32_t n = 0;
    sw_tensor *res[SW_DEF_MAX_RESULTS] = {NULL};
    st = sw_op_call(id, 1, &arg, 0, NULL, &n, res);
    expect_fail(st, SW_ENOTIMPL, "operation 'acme.noref' has no reference",
                "no reference");
    sw_tensor_unref(x);
    leak_check(base, "alias rules");
}

/* Sum of w[i] * scale(x)[i]: the loss of the gradient checks. */
static double loss(sw_tensor *x, double factor, const double *w) {
    sw_arg arg = sw_arg_tensor(x);
    sw_named_arg opt = {"factor", sw_arg_f64(factor)};
    int32_t n = 0;
    sw_tensor *res[SW_DEF_MAX_RESULTS] = {NULL};
    sw_set_grad_enabled(0);
    sw_status st = sw_op_call(scale_id, 1, &arg, 1, &opt, &n, res);
    sw_set_grad_enabled(1);
    if (st)
        bail_out("loss");
    double s = 0;
    for (int64_t i = 0; i < sw_tensor_size(res[0]); ++i)
        s += w[i] * getd(res[0], i);
    sw_tensor_unref(res[0]);
    return s;
}

static void test_scale_and_gradient(void) {
    int64_t base = sw_debug_live_allocs();
    double xv[6] = {0.5, -1.0, 2.0, 0.25, -0.75, 1.5};
    double wv[6] = {1.0, 2.0, -1.0, 0.5, 3.0, -2.0};
    sw_tensor *x = cpu_tensor("(2,3):(1,2)", xv);
    sw_tensor *w = cpu_tensor("(2,3):(1,2)", wv);
    sw_arg arg = sw_arg_tensor(x);
    sw_named_arg opt = {"factor", sw_arg_f64(1.5)};
    int32_t n = 0;
    sw_tensor *res[SW_DEF_MAX_RESULTS] = {NULL};
    sw_status st = sw_op_call(scale_id, 1, &arg, 1, &opt, &n, res);
    if (!expect_ok(st, "call acme.scale"))
        bail_out("call");
    is_int(n, 1, "one result");
    sw_tensor *y = res[0];
    int good = 1;
    for (int i = 0; i < 6; ++i)
        good &= fabs(getd(y, i) - 1.5 * xv[i]) < 1e-6;
    ok(good, "the values are x * factor");
    sw_op *node = sw_tensor_autograd_ctx(y);
    ok(node != NULL, "the result has a node");
    ok(sw_op_info_of(node) == sw_op_info_get(scale_id),
       "the node's record is the definition");
    is_str(node ? sw_op_dispatch_name(node) : "", "acme.scale",
           "the node's name");
    is_int(sw_op_ninputs(node), 1, "the node keeps x as its input");
    ok(sw_op_input(node, 0) == x, "that input is x");
    is_int(sw_op_definition_result(node), 0, "it stands for result 0");
    const sw_resolution *r = sw_op_definition_resolution(node);
    is_str(r ? r->kernel_id : "", "acme.scale",
           "kernel_id defaults to the "
           "name");

    /* y . w, so the gradient of x is factor * w. */
    vjp_calls = 0;
    st = sw_tensor_backward(y, w);
    expect_ok(st, "backward");
    is_int(vjp_calls, 1, "the VJP ran once");
    sw_tensor *g = sw_tensor_grad(x);
    ok(g != NULL, "x has a gradient");
    int fd_ok = 1;
    const double h = 1e-3;
    for (int i = 0; g && i < 6; ++i) {
        double save = xv[i];
        double vp[6], vm[6];
        memcpy(vp, xv, sizeof vp);
        memcpy(vm, xv, sizeof vm);
        vp[i] = save + h;
        vm[i] = save - h;
        sw_tensor *xp = cpu_tensor("(2,3):(1,2)", vp);
        sw_tensor *xm = cpu_tensor("(2,3):(1,2)", vm);
        double fd = (loss(xp, 1.5, wv) - loss(xm, 1.5, wv)) / (2 * h);
        sw_tensor_unref(xp);
        sw_tensor_unref(xm);
        if (fabs(fd - getd(g, i)) > 1e-2 * (1 + fabs(fd))) {
            diag("element %d: finite difference %g, gradient %g", i, fd,
                 getd(g, i));
            fd_ok = 0;
        }
    }
    ok(fd_ok, "the gradient agrees with central differences");
    ok(sw_op_definition_resolution(node) == NULL &&
           sw_op_definition_nsaved(node) == 0,
       "backward freed the node's saved state");
    st = sw_tensor_backward(y, w);
    expect_fail(st, SW_ERUNTIME,
                "Trying to backward through 'acme.scale' a second time: its "
                "saved operands were freed after the first backward",
                "a second backward");
    sw_tensor_unref(y);

    /* No node without grad mode, nor without a differentiable operand. */
    sw_set_grad_enabled(0);
    st = sw_op_call(scale_id, 1, &arg, 0, NULL, &n, res);
    sw_set_grad_enabled(1);
    if (expect_ok(st, "call under no-grad"))
        ok(sw_tensor_autograd_ctx(res[0]) == NULL, "no node under no-grad");
    sw_tensor_unref(res[0]);
    sw_tensor *xi = int_tensor("(2,3):(1,2)");
    arg = sw_arg_tensor(xi);
    sw_named_arg whole = {"factor", sw_arg_i64(3)};
    st = sw_op_call(scale_id, 1, &arg, 1, &whole, &n, res);
    if (expect_ok(st, "call on Int32 (no differentiable operand)"))
        ok(sw_tensor_autograd_ctx(res[0]) == NULL,
           "no node without a differentiable operand");
    sw_tensor_unref(res[0]);
    sw_tensor_unref(xi);
    sw_tensor_unref(x);
    sw_tensor_unref(w);
    leak_check(base, "scale and its gradient");
}

static void expect_vjp_fail(probe_mode m, sw_status want, const char *msg,
                            const char *name, int mutate) {
    sw_tensor *x = cpu_tensor("(2,3):(1,2)", NULL);
    sw_tensor *g = cpu_tensor("(2,3):(1,2)", NULL);
    sw_tensor *y = NULL;
    mode = m;
    sw_status st = probe_call(probe_id, x, &y);
    if (!expect_ok(st, name))
        bail_out("probe");
    if (mutate) {
        sw_value one = sw_value_f64(1.0);
        sw_tensor_set(x, 0, &one);
    }
    st = sw_tensor_backward(y, g);
    expect_fail(st, want, msg, name);
    ok(sw_tensor_grad(x) == NULL, "%s: no gradient reached x", name);
    mode = PROBE_GOOD;
    sw_tensor_unref(y);
    sw_tensor_unref(g);
    sw_tensor_unref(x);
}

static void test_vjp_rules(void) {
    int64_t base = sw_debug_live_allocs();
    expect_vjp_fail(PROBE_VJP_SHAPE, SW_EVALUE,
                    "the VJP of 'acme.probe' returned a gradient of "
                    "incompatible shape for operand 'x'",
                    "a gradient of another shape", 0);
    expect_vjp_fail(PROBE_VJP_DTYPE, SW_ETYPE,
                    "the VJP of 'acme.probe' returned a gradient of "
                    "incompatible dtype Int32 for operand 'x' (Float32)",
                    "a gradient of another dtype", 0);
    expect_vjp_fail(PROBE_GOOD, SW_ERUNTIME, NULL,
                    "a saved operand modified in place", 1);

    /* A gradient in another layout of the right shape is re-laid. */
    double xv[6] = {1, 2, 3, 4, 5, 6};
    sw_tensor *x = cpu_tensor("(2,3):(1,2)", xv);
    sw_tensor *g = cpu_tensor("(2,3):(1,2)", xv);
    sw_tensor *y = NULL;
    mode = PROBE_VJP_LAYOUT;
    sw_status st = probe_call(probe_id, x, &y);
    if (!st)
        st = sw_tensor_backward(y, g);
    expect_ok(st, "a gradient in another layout");
    sw_tensor *gx = sw_tensor_grad(x);
    int good = gx != NULL;
    for (int i = 0; gx && i < 6; ++i)
        good &= fabs(getd(gx, i) - 3.0 * xv[i]) < 1e-6;
    ok(good, "its values arrive by logical index");
    mode = PROBE_GOOD;
    sw_tensor_unref(y);
    sw_tensor_unref(g);
    sw_tensor_unref(x);
    leak_check(base, "VJP rules");
}

/* Every allocation of a recorded call and its backward fails in turn:
 * each failure is clean (no result, no gradient, nothing leaked). */
static void test_fault_injection(void) {
    double xv[6] = {1, 2, 3, 4, 5, 6};
    sw_tensor *x = cpu_tensor("(2,3):(1,2)", xv);
    sw_tensor *w = cpu_tensor("(2,3):(1,2)", xv);
    int64_t base = sw_debug_live_allocs();
    int clean = 1, done = 0;
    for (int64_t n = 0; n < 200 && !done; ++n) {
        sw_arg arg = sw_arg_tensor(x);
        int32_t k = 0;
        sw_tensor *res[SW_DEF_MAX_RESULTS] = {NULL};
        sw_debug_fail_alloc_after(n);
        sw_status st = sw_op_call(scale_id, 1, &arg, 0, NULL, &k, res);
        if (!st)
            st = sw_tensor_backward(res[0], w);
        sw_debug_fail_alloc_after(-1);
        if (!st) {
            done = 1;
        } else if (st != SW_ENOMEM) {
            diag("allocation %lld: %s %s", (long long)n, S(st), sw_errmsg());
            clean = 0;
        }
        sw_clear_error();
        sw_tensor_unref(res[0]);
        sw_tensor_set_grad(x, NULL);
        if (sw_debug_live_allocs() != base) {
            diag("allocation %lld leaked %lld", (long long)n,
                 (long long)(sw_debug_live_allocs() - base));
            clean = 0;
        }
    }
    ok(done, "the call and backward succeed once allocations do");
    ok(clean, "every failing allocation fails cleanly, without leaks");
    sw_tensor_unref(x);
    sw_tensor_unref(w);
}

/* ---------------------------------------------------------- concurrency */

#define DEFINERS 4
#define PER_DEFINER 50

static void *definer(void *arg) {
    int k = (int)(intptr_t)arg;
    for (int i = 0; i < PER_DEFINER; ++i) {
        char name[64];
        snprintf(name, sizeof name, "conc%d.op%d", k, i);
        sw_op_definition d = scale_def(name);
        if (sw_op_define(&d, NULL))
            return (void *)1;
        /* Every thread also tries one shared name: exactly one wins. */
        d = scale_def("conc.shared");
        sw_op_define(&d, NULL);
    }
    return NULL;
}

static void *looker(void *arg) {
    (void)arg;
    for (int i = 0; i < 2000; ++i) {
        int32_t n = sw_op_count();
        for (int32_t id = SW_OP_BUILTIN_COUNT; id < n; ++id) {
            const sw_op_info *e = sw_op_info_get(id);
            if (!e || e->id != id || sw_op_info_find(e->name) != e)
                return (void *)1;
        }
    }
    return NULL;
}

static void test_concurrency(void) {
    int32_t before = sw_op_count();
    pthread_t d[DEFINERS], l[2];
    for (int i = 0; i < DEFINERS; ++i)
        pthread_create(&d[i], NULL, definer, (void *)(intptr_t)i);
    for (int i = 0; i < 2; ++i)
        pthread_create(&l[i], NULL, looker, NULL);
    int bad = 0;
    for (int i = 0; i < DEFINERS; ++i) {
        void *r = NULL;
        pthread_join(d[i], &r);
        bad |= r != NULL;
    }
    for (int i = 0; i < 2; ++i) {
        void *r = NULL;
        pthread_join(l[i], &r);
        bad |= r != NULL;
    }
    ok(!bad, "definitions and lookups on several threads agree");
    is_int(sw_op_count(), before + DEFINERS * PER_DEFINER + 1,
           "every distinct name registered once, the shared one once");
    sw_clear_error();
}

int main(void) {
    test_define_rules();
    test_define_and_registry();
    test_bind();
    test_resolution_checks();
    test_alias_rules();
    test_scale_and_gradient();
    test_vjp_rules();
    test_fault_injection();
    test_concurrency();
    return done_testing();
}
