/*
 * Operation plans (include/strideweave/policy.h): every row of the dtype
 * tables of the CPU and Generic operations, each resolution error with its
 * message, plan equality, the description's text, the promise that
 * resolving allocates nothing, and answers from the table of earlier
 * resolutions equal to fresh ones, from several threads at once.
 */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "strideweave/strideweave.h"

#define F32 SW_DTYPE_FLOAT32
#define I32 SW_DTYPE_INT32
#define FLT SW_DTYPE_FLOATING
#define ANY SW_DTYPE_ANY
#define BOOL SW_DTYPE_BOOL
#define NONE SW_PLAN_NO_DTYPE

static sw_plan_input T(sw_dtype d) {
    return sw_plan_tensor(d);
}

static sw_plan_input SC(sw_scalar_kind kind, double v) {
    return sw_plan_scalar_value(kind, v);
}

static const sw_plan_input INT2 = {SW_ROLE_WEAK_SCALAR, NONE,
                                   SW_SCALAR_INTEGRAL,
                                   SW_SCALAR_NONNEGATIVE | SW_SCALAR_WHOLE_F32};

/* Resolves op on n inputs and checks the plan's description. */
static void expect_plan(sw_op_id op, int32_t n, const sw_plan_input *in,
                        const char *want) {
    sw_op_plan p;
    sw_status st = sw_op_plan_resolve(op, n, in, NONE, &p);
    if (!expect_ok(st, want))
        return;
    char buf[256];
    sw_op_plan_describe(&p, buf, sizeof buf);
    is_str(buf, want, "plan of %s", sw_op_info_get(op)->plan_name);
}

static void plan1(sw_op_id op, sw_plan_input a, const char *want) {
    sw_plan_input in[1] = {a};
    expect_plan(op, 1, in, want);
}

static void plan2(sw_op_id op, sw_plan_input a, sw_plan_input b,
                  const char *want) {
    sw_plan_input in[2] = {a, b};
    expect_plan(op, 2, in, want);
}

static void expect_error2(sw_op_id op, sw_plan_input a, sw_plan_input b,
                          sw_dtype acc, sw_status code, const char *msg) {
    sw_plan_input in[2] = {a, b};
    sw_op_plan p;
    memset(&p, 0x5a, sizeof p);
    sw_op_plan before = p;
    sw_status st = sw_op_plan_resolve(op, 2, in, acc, &p);
    expect_fail(st, code, msg, msg);
    ok(memcmp(&p, &before, sizeof p) == 0, "the plan is left untouched");
}

static void expect_error1(sw_op_id op, sw_plan_input a, sw_dtype acc,
                          sw_status code, const char *msg) {
    sw_plan_input in[1] = {a};
    sw_op_plan p;
    sw_status st = sw_op_plan_resolve(op, 1, in, acc, &p);
    expect_fail(st, code, msg, msg);
}

/* --------------------------------------------------------------- names */

static void test_names(void) {
    const char *arith[] = {"binary32", "binary64", "int32_exact",
                           "int32_exact_checked", "host"};
    for (int i = 0; i < SW_ARITHMETIC_COUNT; ++i)
        is_str(sw_arithmetic_name((sw_arithmetic)i), arith[i], "arithmetic %d",
               i);
    ok(sw_arithmetic_name((sw_arithmetic)SW_ARITHMETIC_COUNT) == NULL,
       "no arithmetic past the count");
    ok(sw_arithmetic_name((sw_arithmetic)-1) == NULL, "nor below 0");
    const char *accum[] = {"floating", "exact_integer", "host"};
    for (int i = 0; i < SW_ACCUMULATION_COUNT; ++i)
        is_str(sw_accumulation_name((sw_accumulation)i), accum[i],
               "accumulation %d", i);
    ok(sw_accumulation_name(SW_ACCUM_NONE) == NULL,
       "no accumulation has no name");
    is_str(sw_operand_role_name(SW_ROLE_TENSOR), "tensor", "role tensor");
    is_str(sw_operand_role_name(SW_ROLE_WEAK_SCALAR), "weak_scalar",
           "role weak_scalar");
    ok(sw_operand_role_name((sw_operand_role)2) == NULL, "no third role");

    ok(sw_op_info_find_plan("reduce_sum") == sw_op_info_get(SW_OP_REDUCE),
       "reduce_sum is reduce's plan name");
    ok(sw_op_info_find_plan("reduce") == NULL, "the dispatch name is not");
    ok(sw_op_info_find_plan("add") == sw_op_info_get(SW_OP_ADD), "add");
    ok(sw_op_info_find_plan(NULL) == NULL, "NULL finds nothing");
    for (int32_t id = 0; id < sw_op_count(); ++id) {
        const sw_op_info *e = sw_op_info_get(id);
        is_int(sw_op_has_plan(id), !(e->flags & SW_OPF_LAYOUT),
               "%s has a plan unless it is a layout operation", e->name);
    }
    ok(!sw_op_has_plan(-1) && !sw_op_has_plan(sw_op_count()),
       "no plan outside the registry");
}

/* ------------------------------------------------------------ CPU rows */

static void test_cpu_binary(void) {
    static const sw_op_id ops[] = {SW_OP_ADD, SW_OP_SUB, SW_OP_ELEMENTWISE_MUL};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; ++i) {
        const char *name = sw_op_info_get(ops[i])->plan_name;
        char want[256];
        snprintf(want, sizeof want,
                 "%s with operands (tensor Float32->Float32, tensor "
                 "Float32->Float32), binary32 compute, no accumulation, "
                 "Float32 output",
                 name);
        plan2(ops[i], T(F32), T(F32), want);
        snprintf(want, sizeof want,
                 "%s with operands (tensor Float32->Float32, tensor "
                 "Int32->Float32), binary32 compute, no accumulation, Float32 "
                 "output",
                 name);
        plan2(ops[i], T(F32), T(I32), want);
        snprintf(want, sizeof want,
                 "%s with operands (tensor Int32->Float32, tensor "
                 "Float32->Float32), binary32 compute, no accumulation, "
                 "Float32 output",
                 name);
        plan2(ops[i], T(I32), T(F32), want);
        snprintf(want, sizeof want,
                 "%s with operands (tensor Int32->Int32, tensor Int32->Int32), "
                 "int32_exact_checked compute, no accumulation, Int32 output",
                 name);
        plan2(ops[i], T(I32), T(I32), want);
    }
    plan2(SW_OP_DIV, T(I32), T(I32),
          "div with operands (tensor Int32->Float32, tensor Int32->Float32), "
          "binary32 compute, no accumulation, Float32 output");
    plan2(SW_OP_DIV, T(F32), T(I32),
          "div with operands (tensor Float32->Float32, tensor "
          "Int32->Float32), binary32 compute, no accumulation, Float32 "
          "output");
}

static void test_cpu_contractions(void) {
    static const sw_op_id ops[] = {SW_OP_MATMUL, SW_OP_BATCHED_MATMUL};
    for (size_t i = 0; i < 2; ++i) {
        const char *name = sw_op_info_get(ops[i])->plan_name;
        char want[256];
        snprintf(want, sizeof want,
                 "%s with operands (tensor Float32->Float32, tensor "
                 "Float32->Float32), binary32 compute, floating accumulation "
                 "in Float32, Float32 output",
                 name);
        plan2(ops[i], T(F32), T(F32), want);
        snprintf(want, sizeof want,
                 "%s with operands (tensor Int32->Float32, tensor "
                 "Float32->Float32), binary32 compute, floating accumulation "
                 "in Float32, Float32 output",
                 name);
        plan2(ops[i], T(I32), T(F32), want);
        snprintf(want, sizeof want,
                 "%s with operands (tensor Int32->Int32, tensor Int32->Int32), "
                 "int32_exact_checked compute, exact_integer accumulation in "
                 "Int32, Int32 output",
                 name);
        plan2(ops[i], T(I32), T(I32), want);
    }
    plan1(SW_OP_REDUCE, T(F32),
          "reduce_sum with operands (tensor Float32->Float32), binary32 "
          "compute, floating accumulation in Float32, Float32 output");
    plan1(SW_OP_REDUCE, T(I32),
          "reduce_sum with operands (tensor Int32->Int32), "
          "int32_exact_checked compute, exact_integer accumulation in Int32, "
          "Int32 output");
}

static void test_cpu_scalar(void) {
    plan2(SW_OP_MUL, T(I32), SC(SW_SCALAR_INTEGRAL, 3),
          "mul with operands (tensor Int32->Int32, weak_scalar->Int32), "
          "int32_exact_checked compute, no accumulation, Int32 output");
    plan2(SW_OP_MUL, T(I32), SC(SW_SCALAR_INTEGRAL, -3),
          "mul with operands (tensor Int32->Int32, weak_scalar->Int32), "
          "int32_exact_checked compute, no accumulation, Int32 output");
    plan2(SW_OP_MUL, SC(SW_SCALAR_INTEGRAL, 3), T(I32),
          "mul with operands (weak_scalar->Int32, tensor Int32->Int32), "
          "int32_exact_checked compute, no accumulation, Int32 output");
    plan2(SW_OP_MUL, T(I32), SC(SW_SCALAR_BOOL, 1),
          "mul with operands (tensor Int32->Float32, weak_scalar->Float32), "
          "binary32 compute, no accumulation, Float32 output");
    plan2(SW_OP_MUL, T(I32), SC(SW_SCALAR_REAL, 2.0),
          "mul with operands (tensor Int32->Float32, weak_scalar->Float32), "
          "binary32 compute, no accumulation, Float32 output");
    plan2(SW_OP_MUL, T(F32), SC(SW_SCALAR_INTEGRAL, 3),
          "mul with operands (tensor Float32->Float32, weak_scalar->Float32), "
          "binary32 compute, no accumulation, Float32 output");
    plan2(SW_OP_MUL, SC(SW_SCALAR_REAL, 0.5), T(F32),
          "mul with operands (weak_scalar->Float32, tensor Float32->Float32), "
          "binary32 compute, no accumulation, Float32 output");

    const char *exact_pow =
        "pow with operands (tensor Int32->Int32, weak_scalar->Int32), "
        "int32_exact_checked compute, no accumulation, Int32 output";
    const char *float_pow_i =
        "pow with operands (tensor Int32->Float32, weak_scalar->Float32), "
        "binary32 compute, no accumulation, Float32 output";
    plan2(SW_OP_POW, T(I32), SC(SW_SCALAR_INTEGRAL, 3), exact_pow);
    plan2(SW_OP_POW, T(I32), SC(SW_SCALAR_INTEGRAL, 0), exact_pow);
    /* CPU decides by the exponent's float32 value, not its type. */
    plan2(SW_OP_POW, T(I32), SC(SW_SCALAR_REAL, 2.0), exact_pow);
    plan2(SW_OP_POW, T(I32), SC(SW_SCALAR_REAL, 16777215.0), exact_pow);
    plan2(SW_OP_POW, T(I32), SC(SW_SCALAR_BOOL, 1), exact_pow);
    plan2(SW_OP_POW, T(I32), SC(SW_SCALAR_INTEGRAL, -1), float_pow_i);
    plan2(SW_OP_POW, T(I32), SC(SW_SCALAR_REAL, 0.5), float_pow_i);
    plan2(SW_OP_POW, T(I32), SC(SW_SCALAR_REAL, 1.0 / 0.0), float_pow_i);
    plan2(SW_OP_POW, T(F32), SC(SW_SCALAR_INTEGRAL, 2),
          "pow with operands (tensor Float32->Float32, weak_scalar->Float32), "
          "binary32 compute, no accumulation, Float32 output");
}

static const sw_op_id floating_unary[] = {
    SW_OP_EXP,  SW_OP_SIGMOID,  SW_OP_TANH, SW_OP_GELU,
    SW_OP_SILU, SW_OP_SOFTPLUS, SW_OP_ELU,  SW_OP_LEAKY_RELU};

static void test_cpu_unary(void) {
    for (size_t i = 0; i < sizeof floating_unary / sizeof floating_unary[0];
         ++i) {
        const char *name = sw_op_info_get(floating_unary[i])->plan_name;
        char want[256];
        snprintf(want, sizeof want,
                 "%s with operands (tensor Float32->Float32), binary32 "
                 "compute, no accumulation, Float32 output",
                 name);
        plan1(floating_unary[i], T(F32), want);
        snprintf(want, sizeof want,
                 "%s with operands (tensor Int32->Float32), binary32 compute, "
                 "no accumulation, Float32 output",
                 name);
        plan1(floating_unary[i], T(I32), want);
    }
    plan1(SW_OP_RELU, T(I32),
          "relu with operands (tensor Int32->Int32), int32_exact compute, no "
          "accumulation, Int32 output");
    plan1(SW_OP_RELU, T(F32),
          "relu with operands (tensor Float32->Float32), binary32 compute, no "
          "accumulation, Float32 output");
}

/* -------------------------------------------------------- Generic rows */

static void test_generic(void) {
    static const sw_op_id ops[] = {SW_OP_ADD, SW_OP_SUB, SW_OP_ELEMENTWISE_MUL};
    for (size_t i = 0; i < 3; ++i) {
        const char *name = sw_op_info_get(ops[i])->plan_name;
        char want[256];
        snprintf(want, sizeof want,
                 "%s with operands (tensor Floating->Floating, tensor "
                 "Floating->Floating), binary64 compute, no accumulation, "
                 "Floating output",
                 name);
        plan2(ops[i], T(FLT), T(FLT), want);
        snprintf(want, sizeof want,
                 "%s with operands (tensor Any->Floating, tensor "
                 "Floating->Floating), binary64 compute, no accumulation, "
                 "Floating output",
                 name);
        plan2(ops[i], T(ANY), T(FLT), want);
        snprintf(want, sizeof want,
                 "%s with operands (tensor Any->Any, tensor Any->Any), host "
                 "compute, no accumulation, Any output",
                 name);
        plan2(ops[i], T(ANY), T(ANY), want);
    }
    plan2(SW_OP_DIV, T(ANY), T(ANY),
          "div with operands (tensor Any->Floating, tensor Any->Floating), "
          "binary64 compute, no accumulation, Floating output");
    plan2(SW_OP_MATMUL, T(ANY), T(ANY),
          "matmul with operands (tensor Any->Any, tensor Any->Any), host "
          "compute, host accumulation in Any, Any output");
    plan2(SW_OP_MATMUL, T(FLT), T(ANY),
          "matmul with operands (tensor Floating->Floating, tensor "
          "Any->Floating), binary64 compute, floating accumulation in "
          "Floating, Floating output");
    plan2(SW_OP_BATCHED_MATMUL, T(FLT), T(FLT),
          "batched_matmul with operands (tensor Floating->Floating, tensor "
          "Floating->Floating), binary64 compute, floating accumulation in "
          "Floating, Floating output");
    plan1(SW_OP_REDUCE, T(ANY),
          "reduce_sum with operands (tensor Any->Any), host compute, host "
          "accumulation in Any, Any output");
    plan1(SW_OP_REDUCE, T(FLT),
          "reduce_sum with operands (tensor Floating->Floating), binary64 "
          "compute, floating accumulation in Floating, Floating output");

    const char *host_mul =
        "mul with operands (tensor Any->Any, weak_scalar->Any), host compute, "
        "no accumulation, Any output";
    const char *float_mul =
        "mul with operands (tensor Any->Floating, weak_scalar->Floating), "
        "binary64 compute, no accumulation, Floating output";
    plan2(SW_OP_MUL, T(ANY), SC(SW_SCALAR_INTEGRAL, 3), host_mul);
    plan2(SW_OP_MUL, T(ANY), SC(SW_SCALAR_INTEGRAL, -3), host_mul);
    plan2(SW_OP_MUL, T(ANY), SC(SW_SCALAR_BOOL, 1), float_mul);
    plan2(SW_OP_MUL, T(ANY), SC(SW_SCALAR_REAL, 2.0), float_mul);
    plan2(SW_OP_MUL, T(FLT), SC(SW_SCALAR_INTEGRAL, 3),
          "mul with operands (tensor Floating->Floating, "
          "weak_scalar->Floating), binary64 compute, no accumulation, "
          "Floating output");

    const char *host_pow =
        "pow with operands (tensor Any->Any, weak_scalar->Any), host compute, "
        "no accumulation, Any output";
    const char *float_pow =
        "pow with operands (tensor Any->Floating, weak_scalar->Floating), "
        "binary64 compute, no accumulation, Floating output";
    plan2(SW_OP_POW, T(ANY), SC(SW_SCALAR_INTEGRAL, 3), host_pow);
    plan2(SW_OP_POW, T(ANY), SC(SW_SCALAR_INTEGRAL, 0), host_pow);
    /* Generic decides by the exponent's type and sign. */
    plan2(SW_OP_POW, T(ANY), SC(SW_SCALAR_INTEGRAL, -1), float_pow);
    plan2(SW_OP_POW, T(ANY), SC(SW_SCALAR_REAL, 2.0), float_pow);
    plan2(SW_OP_POW, T(ANY), SC(SW_SCALAR_BOOL, 1), float_pow);
    plan2(SW_OP_POW, T(FLT), SC(SW_SCALAR_INTEGRAL, 2),
          "pow with operands (tensor Floating->Floating, "
          "weak_scalar->Floating), binary64 compute, no accumulation, "
          "Floating output");

    for (size_t i = 0; i < sizeof floating_unary / sizeof floating_unary[0];
         ++i) {
        const char *name = sw_op_info_get(floating_unary[i])->plan_name;
        char want[256];
        snprintf(want, sizeof want,
                 "%s with operands (tensor Any->Floating), binary64 compute, "
                 "no accumulation, Floating output",
                 name);
        plan1(floating_unary[i], T(ANY), want);
        snprintf(want, sizeof want,
                 "%s with operands (tensor Floating->Floating), binary64 "
                 "compute, no accumulation, Floating output",
                 name);
        plan1(floating_unary[i], T(FLT), want);
    }
    plan1(SW_OP_RELU, T(ANY),
          "relu with operands (tensor Any->Any), host compute, no "
          "accumulation, Any output");
    plan1(SW_OP_RELU, T(FLT),
          "relu with operands (tensor Floating->Floating), binary64 compute, "
          "no accumulation, Floating output");
}

/* ---------------------------------------------------------- accumulator */

static void test_accumulator(void) {
    sw_plan_input in[1] = {T(I32)};
    sw_op_plan p, q;
    if (expect_ok(sw_op_plan_resolve(SW_OP_REDUCE, 1, in, I32, &p),
                  "reduce_sum with its own accumulator"))
        is_int(p.accumulator, I32, "Int32 accumulator");
    expect_ok(sw_op_plan_resolve(SW_OP_REDUCE, 1, in, NONE, &q),
              "reduce_sum without the option");
    ok(sw_op_plan_equal(&p, &q), "the option changes nothing when it agrees");
    expect_error1(SW_OP_REDUCE, T(I32), F32, SW_ETYPE,
                  "accumulator_dtype Float32 is not supported for this "
                  "reduce_sum plan: it accumulates in Int32");
    expect_error1(SW_OP_REDUCE, T(F32), I32, SW_ETYPE,
                  "accumulator_dtype Int32 is not supported for this "
                  "reduce_sum plan: it accumulates in Float32");
    expect_error2(SW_OP_MATMUL, T(F32), T(F32), FLT, SW_ETYPE,
                  "accumulator_dtype Floating is not supported for this "
                  "matmul plan: it accumulates in Float32");
    expect_error1(SW_OP_REDUCE, T(F32), (sw_dtype)42, SW_ETYPE,
                  "accumulator_dtype must be a dtype");
    expect_error1(SW_OP_RELU, T(I32), I32, SW_ETYPE,
                  "unknown option 'accumulator_dtype': relu has no "
                  "accumulation");
    expect_error2(SW_OP_ADD, T(F32), T(F32), F32, SW_ETYPE,
                  "unknown option 'accumulator_dtype': add has no "
                  "accumulation");
}

/* --------------------------------------------------------------- errors */

static void test_errors(void) {
    sw_plan_input in[3] = {T(F32), T(F32), T(F32)};
    sw_op_plan p;
    sw_status st = sw_op_plan_resolve(-1, 1, in, NONE, &p);
    expect_fail(st, SW_EVALUE, "unknown operation id -1", "id -1");
    st = sw_op_plan_resolve(SW_OP_BUILTIN_COUNT, 1, in, NONE, &p);
    expect_fail(st, SW_EVALUE, "unknown operation id 21", "id past the end");
    st = sw_op_plan_resolve(SW_OP_VIEW, 1, in, NONE, &p);
    expect_fail(st, SW_EVALUE,
                "view is a layout operation: it has no operation plan", "view");
    st = sw_op_plan_resolve(SW_OP_PERMUTE, 1, in, NONE, &p);
    expect_fail(st, SW_EVALUE,
                "permute is a layout operation: it has no operation plan",
                "permute");
    st = sw_op_plan_resolve(SW_OP_REARRANGE, 3, in, NONE, &p);
    expect_fail(st, SW_EVALUE,
                "rearrange is a layout operation: it has no operation plan",
                "rearrange");
    st = sw_op_plan_resolve(SW_OP_ADD, 1, in, NONE, &p);
    expect_fail(st, SW_ETYPE, "add takes 2 operands, got 1", "add of one");
    st = sw_op_plan_resolve(SW_OP_ADD, 3, in, NONE, &p);
    expect_fail(st, SW_ETYPE, "add takes 2 operands, got 3", "add of three");
    st = sw_op_plan_resolve(SW_OP_RELU, 2, in, NONE, &p);
    expect_fail(st, SW_ETYPE, "relu takes 1 operand, got 2", "relu of two");
    st = sw_op_plan_resolve(SW_OP_RELU, 1, NULL, NONE, &p);
    expect_fail(st, SW_EVALUE, "relu plan needs inputs and a result",
                "NULL inputs");
    st = sw_op_plan_resolve(SW_OP_RELU, 1, in, NONE, NULL);
    expect_fail(st, SW_EVALUE, "relu plan needs inputs and a result",
                "NULL result");

    sw_plan_input bad = T((sw_dtype)9);
    expect_error1(SW_OP_RELU, bad, NONE, SW_EVALUE,
                  "relu operand 0 has no valid dtype");
    bad.role = (sw_operand_role)7;
    expect_error1(SW_OP_RELU, bad, NONE, SW_EVALUE,
                  "relu operand 0 has no valid role");
    bad = sw_plan_scalar((sw_scalar_kind)5, 0);
    expect_error2(SW_OP_MUL, T(F32), bad, NONE, SW_EVALUE,
                  "mul operand 1 has no valid scalar kind");
    bad = sw_plan_scalar(SW_SCALAR_REAL, 0x10u);
    expect_error2(SW_OP_MUL, T(F32), bad, NONE, SW_EVALUE,
                  "mul operand 1 has unknown scalar traits");

    expect_error2(SW_OP_ADD, T(F32), INT2, NONE, SW_ETYPE,
                  "rhs must be a Tensor");
    expect_error2(SW_OP_ADD, INT2, T(F32), NONE, SW_ETYPE,
                  "lhs must be a Tensor");
    expect_error1(SW_OP_RELU, INT2, NONE, SW_ETYPE, "tensor must be a Tensor");
    expect_error2(SW_OP_POW, T(F32), T(F32), NONE, SW_ETYPE,
                  "exponent must be a numerical scalar");
    expect_error2(SW_OP_POW, INT2, T(F32), NONE, SW_ETYPE,
                  "tensor must be a Tensor");
    expect_error2(SW_OP_MUL, T(F32), T(F32), NONE, SW_ETYPE,
                  "scalar must be a numerical scalar");
    expect_error2(SW_OP_MUL, INT2, INT2, NONE, SW_ETYPE,
                  "tensor must be a Tensor");

    expect_error2(SW_OP_ADD, T(BOOL), T(F32), NONE, SW_ETYPE,
                  "lhs: CPU operations do not compute on Bool tensors");
    expect_error2(SW_OP_MATMUL, T(F32), T(BOOL), NONE, SW_ETYPE,
                  "rhs: CPU operations do not compute on Bool tensors");
    expect_error1(SW_OP_RELU, T(BOOL), NONE, SW_ETYPE,
                  "tensor: CPU operations do not compute on Bool tensors");
    expect_error2(SW_OP_MUL, INT2, T(BOOL), NONE, SW_ETYPE,
                  "tensor: CPU operations do not compute on Bool tensors");
    expect_error2(SW_OP_ADD, T(F32), T(FLT), NONE, SW_ETYPE,
                  "add has no plan for Float32 and Floating operands: CPU "
                  "dtypes (Float32, Int32) and Generic dtypes (Floating, Any) "
                  "do not mix");
    expect_error2(SW_OP_MATMUL, T(ANY), T(I32), NONE, SW_ETYPE,
                  "matmul has no plan for Any and Int32 operands: CPU dtypes "
                  "(Float32, Int32) and Generic dtypes (Floating, Any) do not "
                  "mix");
}

/* ------------------------------------------------ equality, description */

static void test_equal_describe(void) {
    sw_plan_input a[2] = {T(I32), T(I32)};
    sw_op_plan p, q;
    if (!expect_ok(sw_op_plan_resolve(SW_OP_ADD, 2, a, NONE, &p), "add") ||
        !expect_ok(sw_op_plan_resolve(SW_OP_ADD, 2, a, NONE, &q), "again"))
        return;
    ok(sw_op_plan_equal(&p, &q), "equal plans");
    q.operands[2].dtype = F32;
    ok(sw_op_plan_equal(&p, &q), "entries past noperands are ignored");
    q = p;
    q.operands[1].convert_to = F32;
    ok(!sw_op_plan_equal(&p, &q), "a conversion differs");
    q = p;
    q.compute = SW_ARITH_INT32_EXACT;
    ok(!sw_op_plan_equal(&p, &q), "the compute differs");
    q = p;
    q.accumulation = SW_ACCUM_EXACT_INTEGER;
    ok(!sw_op_plan_equal(&p, &q), "an accumulation differs from none");
    q = p;
    q.op = SW_OP_SUB;
    ok(!sw_op_plan_equal(&p, &q), "the operation differs");
    q = p;
    q.operands[0].role = SW_ROLE_WEAK_SCALAR;
    ok(!sw_op_plan_equal(&p, &q), "a role differs");

    const char *want = "add with operands (tensor Int32->Int32, tensor "
                       "Int32->Int32), int32_exact_checked compute, no "
                       "accumulation, Int32 output";
    char buf[256];
    is_int(sw_op_plan_describe(&p, buf, sizeof buf), (int64_t)strlen(want),
           "describe returns the length");
    is_str(buf, want, "the stable sentence");
    char small[10];
    is_int(sw_op_plan_describe(&p, small, sizeof small), (int64_t)strlen(want),
           "a short buffer still reports the full length");
    is_str(small, "add with ", "and is truncated, terminated");
    is_int(sw_op_plan_describe(&p, NULL, 0), (int64_t)strlen(want),
           "no buffer: only the length");
    q = p;
    q.op = -5;
    q.compute = (sw_arithmetic)77;
    q.output = (sw_dtype)99;
    sw_op_plan_describe(&q, buf, sizeof buf);
    is_str(buf,
           "? with operands (tensor Int32->Int32, tensor Int32->Int32), ? "
           "compute, no accumulation, ? output",
           "fields out of range print as ?");
}

/* ----------------------------------------------------------- allocation */

static void test_no_allocation(void) {
    int64_t base = sw_debug_live_allocs();
    /* With every allocation failing, resolution still succeeds: it
     * allocates nothing, which no timing could show. */
    sw_debug_fail_alloc_after(0);
    sw_plan_input in[2] = {T(I32), T(F32)};
    sw_op_plan p;
    int all = 1;
    for (int i = 0; i < 1000; ++i) {
        all = all && sw_op_plan_resolve(SW_OP_MATMUL, 2, in, NONE, &p) == SW_OK;
        all = all &&
              sw_op_plan_resolve(SW_OP_REDUCE, 1, in + 1, F32, &p) == SW_OK;
        sw_plan_input s[2] = {T(I32), SC(SW_SCALAR_INTEGRAL, i)};
        all = all && sw_op_plan_resolve(SW_OP_POW, 2, s, NONE, &p) == SW_OK;
    }
    /* Failures format a message into thread-local storage, no heap. */
    sw_op_plan_resolve(SW_OP_VIEW, 1, in, NONE, &p);
    sw_debug_fail_alloc_after(-1);
    sw_clear_error();
    ok(all, "resolution succeeds with the allocator failing");
    leak_check(base, "resolution");
}

/* Resolves every one-dtype all-tensor call of the built-in operations
 * (the calls the table keeps) and compares with the first answer. */
static sw_op_plan first[SW_OP_BUILTIN_COUNT][SW_DTYPE_COUNT];
static int first_ok[SW_OP_BUILTIN_COUNT][SW_DTYPE_COUNT];

static void *resolve_all(void *mismatches) {
    for (int32_t op = 0; op < SW_OP_BUILTIN_COUNT; ++op) {
        const sw_op_info *info = sw_op_info_get(op);
        if (!info || info->noperands < 1 ||
            info->noperands > SW_PLAN_MAX_OPERANDS)
            continue;
        for (int d = 0; d < SW_DTYPE_COUNT; ++d) {
            sw_plan_input in[SW_PLAN_MAX_OPERANDS];
            for (int32_t i = 0; i < info->noperands; ++i)
                in[i] = T((sw_dtype)d);
            sw_op_plan p;
            memset(&p, 0, sizeof p);
            sw_status st =
                sw_op_plan_resolve(op, info->noperands, in, NONE, &p);
            if ((st == SW_OK) != first_ok[op][d] ||
                (st == SW_OK && !sw_op_plan_equal(&p, &first[op][d])))
                ++*(int *)mismatches;
            if (st)
                sw_clear_error();
        }
    }
    return NULL;
}

static void test_memo(void) {
    for (int32_t op = 0; op < SW_OP_BUILTIN_COUNT; ++op) {
        const sw_op_info *info = sw_op_info_get(op);
        if (!info || info->noperands < 1 ||
            info->noperands > SW_PLAN_MAX_OPERANDS)
            continue;
        for (int d = 0; d < SW_DTYPE_COUNT; ++d) {
            sw_plan_input in[SW_PLAN_MAX_OPERANDS];
            for (int32_t i = 0; i < info->noperands; ++i)
                in[i] = T((sw_dtype)d);
            first_ok[op][d] = sw_op_plan_resolve(op, info->noperands, in, NONE,
                                                 &first[op][d]) == SW_OK;
            sw_clear_error();
        }
    }
    int mismatches[4] = {0, 0, 0, 0};
    pthread_t th[4];
    for (int i = 0; i < 4; ++i)
        pthread_create(&th[i], NULL, resolve_all, &mismatches[i]);
    for (int i = 0; i < 4; ++i)
        pthread_join(th[i], NULL);
    is_int(mismatches[0] + mismatches[1] + mismatches[2] + mismatches[3], 0,
           "remembered resolutions equal fresh ones on four threads");
    /* The operand count is part of the answer: relu of two still fails
     * after relu of one was remembered. */
    sw_plan_input two[2] = {T(F32), T(F32)};
    sw_op_plan p;
    expect_fail(sw_op_plan_resolve(SW_OP_RELU, 2, two, NONE, &p), SW_ETYPE,
                "relu takes 1 operand, got 2", "relu of two after relu");
    /* So is the accumulator option. */
    expect_fail(sw_op_plan_resolve(SW_OP_RELU, 1, two, F32, &p), SW_ETYPE,
                "unknown option 'accumulator_dtype': relu has no accumulation",
                "relu with an accumulator after relu");
}

int main(void) {
    test_names();
    test_cpu_binary();
    test_cpu_contractions();
    test_cpu_scalar();
    test_cpu_unary();
    test_generic();
    test_accumulator();
    test_errors();
    test_equal_describe();
    test_no_allocation();
    test_memo();
    return done_testing();
}
