/*
 * The operation registry (include/strideweave/registry.h): the records of
 * the built-in operations, the lookups, the native classes and their
 * slots, dispatch by number through a version-3 carrier class, and the
 * host-free answer bindings use to decide whether to keep their locks.
 */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "strideweave/strideweave.h"

static sw_layout *L(const char *text) {
    sw_layout *l = NULL;
    if (sw_layout_parse(text, &l) != SW_OK)
        bail_out(sw_errmsg());
    return l;
}

static sw_tensor *T(sw_carrier *c, const char *layout) {
    sw_layout *l = L(layout);
    sw_tensor *t = NULL;
    sw_status st = sw_tensor_new(c, 0, l, &t);
    sw_layout_unref(l);
    if (st != SW_OK)
        bail_out(sw_errmsg());
    return t;
}

static sw_carrier *cpu(int64_t n) {
    sw_carrier *c = NULL;
    if (sw_cpu_new(n, SW_DTYPE_FLOAT32, 1, 0, &c) != SW_OK)
        bail_out(sw_errmsg());
    return c;
}

static sw_carrier *generic(int64_t n) {
    double v[16] = {0};
    sw_carrier *c = NULL;
    if (n > 16 || sw_generic_new_doubles(n, v, 1, &c) != SW_OK)
        bail_out(sw_errmsg());
    return c;
}

/* ------------------------------------------------------------- records */

static void test_records(void) {
    is_int(sw_op_count(), SW_OP_BUILTIN_COUNT, "every built-in is counted");
    ok(sw_op_info_get(-1) == NULL, "no record below 0");
    ok(sw_op_info_get(SW_OP_BUILTIN_COUNT) == NULL, "no record past the end");
    for (int32_t id = 0; id < sw_op_count(); ++id) {
        const sw_op_info *e = sw_op_info_get(id);
        if (!ok(e != NULL, "record %d exists", id))
            continue;
        is_int(e->id, id, "%s: its id is its index", e->name);
        ok(e->name && e->plan_name && e->title, "%s: names and title", e->name);
        ok(sw_op_info_find(e->name) == e, "%s: found by its name", e->name);
        ok(e->noperands >= 1 && e->operands != NULL, "%s: has operands",
           e->name);
        is_int(e->operands[0].kind, SW_OPERAND_TENSOR,
               "%s: the first operand is a tensor", e->name);
        ok(e->operands[0].differentiable, "%s: differentiable first operand",
           e->name);
        for (int32_t k = 0; k < e->noperands; ++k) {
            const sw_operand_spec *o = &e->operands[k];
            ok(o->name && o->name[0], "%s: operand %d is named", e->name, k);
            ok(!o->differentiable || o->kind == SW_OPERAND_TENSOR,
               "%s: only tensors are differentiable (%s)", e->name, o->name);
        }
        for (int32_t j = 0; j < id; ++j)
            ok(strcmp(sw_op_info_get(j)->name, e->name) != 0,
               "%s: a unique name (vs %d)", e->name, j);
        int layout = (e->flags & SW_OPF_LAYOUT) != 0;
        int form_layout = e->form == SW_FORM_VIEW ||
                          e->form == SW_FORM_PERMUTE ||
                          e->form == SW_FORM_REARRANGE;
        is_int(layout, form_layout, "%s: layout flag matches its form",
               e->name);
    }
    ok(sw_op_info_find(NULL) == NULL, "find(NULL) is NULL");
    ok(sw_op_info_find("nope") == NULL, "an unknown name has no record");
    ok(sw_op_info_find("reduce_sum") == NULL,
       "a plan name is not a dispatch name");
    const sw_op_info *r = sw_op_info_get(SW_OP_REDUCE);
    is_str(r->name, "reduce", "reduce dispatches as 'reduce'");
    is_str(r->plan_name, "reduce_sum", "and plans as 'reduce_sum'");
    const sw_op_info *mul = sw_op_info_get(SW_OP_MUL);
    is_int(mul->operands[1].kind, SW_OPERAND_WEAK_SCALAR,
           "mul's second operand is a weak scalar");
    is_str(mul->operands[1].name, "scalar", "named scalar");
    is_str(sw_op_info_get(SW_OP_POW)->operands[1].name, "exponent",
           "pow's is the exponent");
    ok(sw_op_info_get(SW_OP_PERMUTE)->flags & SW_OPF_VARIADIC,
       "permute's order repeats");
    ok(sw_op_info_get(SW_OP_REARRANGE)->flags & SW_OPF_OPTIONAL,
       "rearrange's selection may be omitted");
    is_int(sw_op_info_get(SW_OP_EXP)->values, SW_SAVED_OUTPUTS,
           "exp keeps its outputs on host backends");
    is_int(sw_op_info_get(SW_OP_SILU)->values, SW_SAVED_SIGMOID,
           "silu keeps the sigmoid of its inputs");
    is_int(sw_op_info_get(SW_OP_ADD)->saves, 0, "add's context keeps nothing");
    ok(sw_op_info_get(SW_OP_MATMUL)->saves & SW_SAVES_OUTPUT_LAYOUT,
       "matmul's keeps its output layout");
}

/* --------------------------------------------------------------- classes */

static void test_native_classes(void) {
    int found = 0, cpu_n = 0, gen_n = 0, shared_n = 0;
    ok(sw_native_op_at(-1) == NULL &&
           sw_native_op_at(SW_NATIVE_OP_SLOTS) == NULL,
       "no class outside the slots");
    for (int32_t i = 0; i < SW_NATIVE_OP_SLOTS; ++i) {
        const sw_native_op *n = sw_native_op_at(i);
        if (!n)
            continue;
        ++found;
        is_int(sw_native_op_slot(n), i, "%s: its slot round-trips",
               n->cls.name);
        is_int(n->op, i % SW_OP_BUILTIN_COUNT, "%s: slot = backend*count+op",
               n->cls.name);
        ok(sw_native_op_of_class(&n->cls) == n, "%s: found by its class",
           n->cls.name);
        ok(n->summary && n->summary[0], "%s: has a summary", n->cls.name);
        sw_op *op = NULL;
        sw_status st = sw_native_op_make(n, &op);
        if (expect_ok(st, n->cls.name)) {
            ok(sw_native_op_of(op) == n, "%s: a made op knows its class",
               n->cls.name);
            ok(sw_op_info_of(op) == NULL && sw_op_dispatch_name(op) == NULL,
               "%s: a made op is not dispatched", n->cls.name);
            sw_op_unref(op);
        }
        if (strcmp(n->backend, "cpu") == 0)
            ++cpu_n;
        else if (strcmp(n->backend, "generic") == 0)
            ++gen_n;
        else if (strcmp(n->backend, "shared") == 0)
            ++shared_n;
    }
    is_int(shared_n, 3, "three shared layout classes");
    is_int(cpu_n, SW_OP_BUILTIN_COUNT - 3, "CPU has every computing op");
    is_int(gen_n, SW_OP_BUILTIN_COUNT - 3, "Generic has every computing op");
    is_int(found, cpu_n + gen_n + shared_n, "no class of another backend");
    ok(sw_native_op_slot(NULL) == -1, "NULL has no slot");
    sw_native_op fake;
    memset(&fake, 0, sizeof fake);
    ok(sw_native_op_slot(&fake) == -1, "a copy is not a library class");
    ok(sw_native_op_of_class(&fake.cls) == NULL, "nor is its class");
    ok(sw_native_op_of_class(NULL) == NULL, "NULL is no class");
    sw_status st = sw_native_op_make(&fake, NULL);
    expect_fail(st, SW_EVALUE, "not a native operation class",
                "making a foreign class");
}

/* Dispatching every registered name on CPU and Generic carriers. */
static void test_dispatch_by_name(void) {
    int64_t base = sw_debug_live_allocs();
    sw_carrier *carriers[2] = {cpu(4), generic(4)};
    const char *backend[2] = {"cpu", "generic"};
    for (int k = 0; k < 2; ++k) {
        for (int32_t id = 0; id < sw_op_count(); ++id) {
            const sw_op_info *e = sw_op_info_get(id);
            sw_op *op = NULL;
            sw_status st = sw_carrier_dispatch_op(carriers[k], e->name, &op);
            if (!expect_ok(st, e->name))
                continue;
            ok(sw_op_info_of(op) == e, "%s on %s: dispatched as its record",
               e->name, backend[k]);
            is_str(sw_op_dispatch_name(op), e->name,
                   "%s on %s: the dispatch name", e->name, backend[k]);
            const sw_native_op *n = sw_native_op_of(op);
            ok(n && n->op == id, "%s on %s: a native class of the op", e->name,
               backend[k]);
            if (n && !(e->flags & SW_OPF_LAYOUT))
                is_str(n->backend, backend[k], "%s: of the carrier's backend",
                       e->name);
            sw_op_unref(op);
        }
        sw_op *op = NULL;
        sw_status st = sw_carrier_dispatch_op(carriers[k], "nope", &op);
        expect_fail(st, SW_ENOTIMPL,
                    k == 0 ? "CPU carrier does not support operation 'nope'"
                           : "Generic carrier does not support operation "
                             "'nope'",
                    "an unknown name");
        sw_carrier_unref(carriers[k]);
    }
    leak_check(base, "dispatch by name");
}

/* Dispatch by number gives what dispatch by name gives, with the same
 * errors, without a name to look up. */
static void test_dispatch_by_number(void) {
    int64_t base = sw_debug_live_allocs();
    sw_carrier *carriers[2] = {cpu(4), generic(4)};
    const char *backend[2] = {"cpu", "generic"};
    for (int k = 0; k < 2; ++k) {
        for (int32_t id = 0; id < sw_op_count(); ++id) {
            const sw_op_info *e = sw_op_info_get(id);
            sw_op *by_id = NULL, *named = NULL;
            sw_status st = sw_carrier_dispatch_id(carriers[k], id, &by_id);
            sw_status sn = sw_carrier_dispatch_op(carriers[k], e->name, &named);
            if (expect_ok(st, e->name) && expect_ok(sn, e->name)) {
                ok(sw_op_info_of(by_id) == e,
                   "%s on %s by number: dispatched as its record", e->name,
                   backend[k]);
                is_str(sw_op_dispatch_name(by_id), e->name,
                       "%s on %s by number: the dispatch name", e->name,
                       backend[k]);
                ok(sw_op_get_class(by_id) == sw_op_get_class(named) &&
                       sw_op_dispatch_tag(by_id) == sw_op_dispatch_tag(named),
                   "%s on %s: the class and tag of dispatch by name", e->name,
                   backend[k]);
            }
            sw_op_unref(by_id);
            sw_op_unref(named);
        }
        static const int32_t bad[] = {-1, SW_OP_BUILTIN_COUNT, INT32_MAX};
        for (size_t b = 0; b < sizeof bad / sizeof bad[0]; ++b) {
            char want[64];
            snprintf(want, sizeof want, "unknown operation number %d",
                     (int)bad[b]);
            sw_op *op = NULL;
            sw_status st = sw_carrier_dispatch_id(carriers[k], bad[b], &op);
            expect_fail(st, SW_EVALUE, want, "an unknown number");
            ok(op == NULL, "an unknown number gives no operation");
        }
        sw_carrier_unref(carriers[k]);
    }
    leak_check(base, "dispatch by number");
}

/* ---------------------------------------------- version-3 carrier classes */

static int64_t one_size(sw_carrier *c) {
    return 1;
}

static sw_status one_get(sw_carrier *c, int64_t i, sw_value *out) {
    *out = sw_value_f64(0.0);
    return SW_OK;
}

static const sw_op_info *seen_info;
static const char *seen_name;

static sw_status by_number(sw_carrier *c, const sw_op_info *op, sw_op **out) {
    seen_info = op;
    return sw_carrier_backend_op(sw_carrier_state(c), op->name, out);
}

static sw_status by_name(sw_carrier *c, const char *name, sw_op **out) {
    seen_name = name;
    return sw_set_error(SW_ENOTIMPL, "by name");
}

static void test_version3_class(void) {
    int64_t base = sw_debug_live_allocs();
    sw_carrier *backing = cpu(1);
    sw_carrier_class both = {0}, numbers = {0}, old = {0};
    both.version = SW_CARRIER_CLASS_VERSION;
    both.name = "Both";
    both.size = one_size;
    both.get = one_get;
    both.dispatch = by_number;
    both.dispatch_op = by_name;
    numbers = both;
    numbers.name = "Numbers";
    numbers.dispatch_op = NULL;
    old = both;
    old.version = 2; /* its dispatch slot does not exist */
    sw_carrier *c = NULL;
    sw_op *op = NULL;
    sw_status st = sw_carrier_new(&both, backing, SW_DTYPE_FLOAT32, &c);
    if (expect_ok(st, "a version-3 class")) {
        seen_info = NULL;
        st = sw_carrier_dispatch_op(c, "relu", &op);
        if (expect_ok(st, "relu by number")) {
            ok(seen_info == sw_op_info_get(SW_OP_RELU),
               "the dispatch slot got relu's record");
            ok(sw_op_dispatch_tag(op) == (const void *)&both,
               "tagged with the class");
            sw_op_unref(op);
        }
        seen_name = NULL;
        st = sw_carrier_dispatch_op(c, "acme.thing", &op);
        expect_fail(st, SW_ENOTIMPL, "by name",
                    "an unregistered name goes by name");
        is_str(seen_name, "acme.thing", "to the dispatch_op slot");
        sw_carrier_unref(c);
    }
    st = sw_carrier_new(&numbers, backing, SW_DTYPE_FLOAT32, &c);
    if (expect_ok(st, "a class dispatching by number only")) {
        st = sw_carrier_dispatch_op(c, "acme.thing", &op);
        expect_fail(st, SW_ENOTIMPL,
                    "Numbers carrier does not support operation 'acme.thing'",
                    "an unregistered name without a name slot");
        sw_carrier_unref(c);
    }
    st = sw_carrier_new(&old, backing, SW_DTYPE_FLOAT32, &c);
    if (expect_ok(st, "a version-2 class")) {
        seen_info = NULL;
        seen_name = NULL;
        st = sw_carrier_dispatch_op(c, "relu", &op);
        expect_fail(st, SW_ENOTIMPL, "by name",
                    "a version-2 class dispatches by name");
        ok(seen_info == NULL, "its version-3 slot is never read");
        sw_carrier_unref(c);
    }
    sw_carrier_unref(backing);
    leak_check(base, "version-3 classes");
}

/* --------------------------------------------------------------- host-free */

static void test_host_free(void) {
    int64_t base = sw_debug_live_allocs();
    sw_carrier *a = cpu(6), *g = generic(6);
    sw_tensor *x = T(a, "(2,3):(1,2)"), *y = T(g, "(2,3):(1,2)");
    sw_arg args[2] = {sw_arg_tensor(x), sw_arg_tensor(x)};
    sw_op *op = NULL;
    int64_t work = -1;
    if (expect_ok(sw_carrier_dispatch_op(a, "relu", &op), "CPU relu")) {
        ok(sw_op_runs_host_free(op, 1, args, &work), "CPU relu is host-free");
        is_int(work, 6, "its work is its operand's size");
        args[0] = sw_arg_tensor(y);
        ok(!sw_op_runs_host_free(op, 1, args, NULL),
           "not with a Generic tensor argument");
        sw_op_unref(op);
    }
    args[0] = sw_arg_tensor(x);
    if (expect_ok(sw_carrier_dispatch_op(a, "matmul", &op), "CPU matmul")) {
        ok(sw_op_runs_host_free(op, 2, args, &work), "CPU matmul is host-free");
        is_int(work, 36, "its work bound is the product of the sizes");
        sw_op_unref(op);
    }
    if (expect_ok(sw_carrier_dispatch_op(a, "permute", &op), "CPU permute")) {
        ok(sw_op_runs_host_free(op, 1, args, &work), "a layout op is too");
        is_int(work, 0, "and touches no element");
        sw_op_unref(op);
    }
    if (expect_ok(sw_carrier_dispatch_op(g, "relu", &op), "Generic relu")) {
        args[0] = sw_arg_tensor(y);
        ok(!sw_op_runs_host_free(op, 1, args, &work),
           "Generic relu calls the host");
        is_int(work, 0, "and reports no work");
        sw_op_unref(op);
    }
    ok(!sw_op_runs_host_free(NULL, 0, NULL, NULL), "NULL is not host-free");
    sw_tensor_unref(x);
    sw_tensor_unref(y);
    sw_carrier_unref(a);
    sw_carrier_unref(g);
    leak_check(base, "host-free");
}

int main(void) {
    test_records();
    test_native_classes();
    test_dispatch_by_name();
    test_dispatch_by_number();
    test_version3_class();
    test_host_free();
    return done_testing();
}
