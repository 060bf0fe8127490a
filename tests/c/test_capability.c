/*
 * Capabilities (include/strideweave/capability.h): descriptors and their
 * checks, sorted lists and their queries with the reason sentences, the
 * class registry (declaration, observation, sealing, shipped sets), a
 * declaration racing observers, per-instance snapshots, the carriers'
 * storage dtypes and the Evictable snapshot. The shipped sets are checked
 * against the plans: every dispatchable computing operation of CPU and
 * Generic has a capability and every capability resolves back to itself.
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "strideweave/strideweave.h"

#define F32 SW_DTYPE_FLOAT32
#define I32 SW_DTYPE_INT32
#define FLT SW_DTYPE_FLOATING
#define ANY SW_DTYPE_ANY
#define NONE SW_PLAN_NO_DTYPE

static sw_op_plan plan1(sw_op_id op, sw_dtype a) {
    sw_plan_input in[1] = {sw_plan_tensor(a)};
    sw_op_plan p;
    if (sw_op_plan_resolve(op, 1, in, NONE, &p) != SW_OK)
        bail_out(sw_errmsg());
    return p;
}

static sw_op_plan plan2(sw_op_id op, sw_dtype a, sw_dtype b) {
    sw_plan_input in[2] = {sw_plan_tensor(a), sw_plan_tensor(b)};
    sw_op_plan p;
    if (sw_op_plan_resolve(op, 2, in, NONE, &p) != SW_OK)
        bail_out(sw_errmsg());
    return p;
}

static sw_op_capability cap_of(sw_op_plan p) {
    sw_op_capability c;
    sw_op_capability_from_plan(&p, &c);
    return c;
}

/* Tags for host classes: addresses nothing else uses. */
static char tags[64];

/* ---------------------------------------------------------- descriptors */

static void test_descriptors(void) {
    sw_op_plan p = plan2(SW_OP_ADD, I32, I32);
    sw_op_capability c = cap_of(p);
    ok(sw_op_capability_matches(&c, &p), "a capability matches its plan");
    sw_op_plan back;
    sw_op_capability_to_plan(&c, &back);
    ok(sw_op_plan_equal(&back, &p), "and mirrors back to it");
    is_int(sw_op_capability_check(&c), SW_OK, "a resolved plan is well formed");
    sw_op_plan q = plan2(SW_OP_ADD, I32, F32);
    ok(!sw_op_capability_matches(&c, &q), "a nearby shape does not match");
    q = plan2(SW_OP_SUB, I32, I32);
    ok(!sw_op_capability_matches(&c, &q), "another operation does not match");

    sw_op_capability a = cap_of(plan2(SW_OP_ADD, F32, F32));
    sw_op_capability r = cap_of(plan1(SW_OP_REDUCE, F32));
    sw_op_capability u = cap_of(plan1(SW_OP_RELU, F32));
    ok(sw_op_capability_compare(&a, &r) < 0, "add < reduce_sum");
    ok(sw_op_capability_compare(&r, &u) < 0, "reduce_sum < relu");
    ok(sw_op_capability_compare(&u, &a) > 0, "relu > add");
    is_int(sw_op_capability_compare(&a, &a), 0, "equal to itself");
    sw_op_capability b = cap_of(plan2(SW_OP_ADD, F32, I32));
    ok(sw_op_capability_compare(&a, &b) < 0,
       "Float32 before Int32 in the second operand");

    sw_op_capability x = c;
    x.op = 99;
    expect_fail(sw_op_capability_check(&x), SW_EVALUE,
                "unknown operation id 99", "bad operation");
    x = c;
    x.op = SW_OP_VIEW;
    expect_fail(sw_op_capability_check(&x), SW_EVALUE,
                "view is a layout operation: it has no operation plan",
                "layout operation");
    x = c;
    x.noperands = 0;
    expect_fail(sw_op_capability_check(&x), SW_EVALUE,
                "capability needs at least one operand", "no operands");
    x = c;
    x.noperands = 4;
    expect_fail(sw_op_capability_check(&x), SW_EVALUE,
                "capability has more than 3 operands", "four operands");
    x = c;
    x.operands[0].dtype = NONE;
    expect_fail(sw_op_capability_check(&x), SW_ETYPE,
                "tensor operand capability needs a storage dtype",
                "tensor without dtype");
    x = c;
    x.operands[1].role = SW_ROLE_WEAK_SCALAR;
    expect_fail(sw_op_capability_check(&x), SW_ETYPE,
                "weak scalar operand capability has no storage dtype",
                "weak scalar with dtype");
    x = c;
    x.operands[1].role = (sw_operand_role)5;
    expect_fail(sw_op_capability_check(&x), SW_EVALUE,
                "operand 1 has no valid role", "bad role");
    x = c;
    x.operands[0].convert_to = NONE;
    expect_fail(sw_op_capability_check(&x), SW_EVALUE,
                "operand 0 has no valid convert_to", "no conversion");
    x = c;
    x.compute = (sw_arithmetic)9;
    expect_fail(sw_op_capability_check(&x), SW_EVALUE,
                "capability has no valid compute", "bad compute");
    x = c;
    x.accumulation = (sw_accumulation)8;
    expect_fail(sw_op_capability_check(&x), SW_EVALUE,
                "capability has no valid accumulation", "bad accumulation");
    x = c;
    x.accumulator = I32;
    expect_fail(sw_op_capability_check(&x), SW_ETYPE,
                "accumulator_dtype needs an accumulation",
                "accumulator without accumulation");
    x = c;
    x.accumulation = SW_ACCUM_EXACT_INTEGER;
    expect_fail(sw_op_capability_check(&x), SW_ETYPE,
                "an accumulation needs an accumulator_dtype",
                "accumulation without accumulator");
    x = c;
    x.output = NONE;
    expect_fail(sw_op_capability_check(&x), SW_EVALUE,
                "capability has no valid output", "no output");
}

/* ------------------------------------------------------------- lists */

static void test_lists(void) {
    sw_op_capability items[3] = {cap_of(plan2(SW_OP_ADD, F32, F32)),
                                 cap_of(plan1(SW_OP_REDUCE, F32)),
                                 cap_of(plan1(SW_OP_RELU, F32))};
    sw_capability_list l = {items, 3};
    sw_capability_list f = sw_capability_list_filter(l, SW_OP_REDUCE);
    ok(f.count == 1 && f.items == &items[1], "filter finds reduce_sum");
    f = sw_capability_list_filter(l, SW_OP_EXP);
    is_int(f.count, 0, "no exp");
    f = sw_capability_list_filter(l, -1);
    is_int(f.count, 3, "op < 0 keeps all");

    sw_op_plan p = plan1(SW_OP_RELU, F32);
    ok(sw_capability_list_match(l, &p) == &items[2], "match finds relu");
    char buf[512];
    is_int(sw_capability_list_reason(l, "CPU", &p, buf, sizeof buf), 0,
           "no reason when supported");
    is_str(buf, "", "and an empty one written");
    const sw_op_capability *m = NULL;
    expect_ok(sw_capability_list_require(l, "CPU", &p, &m), "require relu");
    ok(m == &items[2], "require gives the match");

    p = plan2(SW_OP_SUB, F32, F32);
    ok(sw_capability_list_match(l, &p) == NULL, "no sub");
    sw_capability_list_reason(l, "Custom", &p, buf, sizeof buf);
    is_str(buf, "Custom declares no operation-plan capability for 'sub'",
           "reason for an unknown operation");
    p = plan2(SW_OP_ADD, I32, I32);
    const char *want =
        "Custom declares no operation-plan capability for this 'add' plan: "
        "add with operands (tensor Int32->Int32, tensor Int32->Int32), "
        "int32_exact_checked compute, no accumulation, Int32 output";
    is_int(sw_capability_list_reason(l, "Custom", &p, buf, sizeof buf),
           (int64_t)strlen(want), "the reason's length");
    is_str(buf, want, "reason for a known operation without the shape");
    char small[16];
    is_int(sw_capability_list_reason(l, "Custom", &p, small, sizeof small),
           (int64_t)strlen(want), "a short buffer reports the full length");
    is_str(small, "Custom declares", "and is truncated");
    is_int(sw_capability_list_reason(l, "Custom", &p, NULL, 0),
           (int64_t)strlen(want), "no buffer: the length");
    m = &items[0];
    sw_status st = sw_capability_list_require(l, "Custom", &p, &m);
    expect_fail(st, SW_ENOTIMPL, want, "require without a match");
    ok(m == &items[0], "require leaves *out alone on failure");
    sw_capability_list empty = {NULL, 0};
    p = plan1(SW_OP_RELU, F32);
    ok(sw_capability_list_match(empty, &p) == NULL, "empty list: no match");
    ok(sw_capability_list_filter(empty, SW_OP_RELU).count == 0,
       "empty list: nothing to filter");
}

/* ---------------------------------------------------------- registry */

static void test_declare(void) {
    const void *t = &tags[0];
    is_int(sw_capabilities_state(t), SW_CAPS_OPEN, "a fresh tag is open");
    sw_op_capability caps[3] = {cap_of(plan1(SW_OP_RELU, F32)),
                                cap_of(plan2(SW_OP_ADD, F32, F32)),
                                cap_of(plan1(SW_OP_REDUCE, I32))};

    /* Rejected declarations leave the class open. */
    sw_op_capability dup[2] = {caps[0], caps[0]};
    sw_status st = sw_capabilities_declare(t, "Custom", 2, dup);
    expect_fail(st, SW_EVALUE,
                "Custom already declares a capability: relu with operands "
                "(tensor Float32->Float32), binary32 compute, no "
                "accumulation, Float32 output",
                "a duplicate shape");
    is_int(sw_capabilities_state(t), SW_CAPS_OPEN, "still open");
    sw_op_capability badc[2] = {caps[0], caps[1]};
    badc[1].noperands = 0;
    st = sw_capabilities_declare(t, "Custom", 2, badc);
    expect_fail(st, SW_EVALUE,
                "capability 1: capability needs at least one operand",
                "a malformed entry");
    is_int(sw_capabilities_state(t), SW_CAPS_OPEN, "still open");
    st = sw_capabilities_declare(t, "Custom", -1, caps);
    expect_fail(st, SW_EVALUE, "capability count must be >= 0", "n < 0");
    st = sw_capabilities_declare(t, "Custom", 2, NULL);
    expect_fail(st, SW_EVALUE, "capabilities are missing", "NULL entries");
    st = sw_capabilities_declare(NULL, "Custom", 0, NULL);
    expect_fail(st, SW_EVALUE, "capability class tag must not be NULL",
                "NULL tag");
    sw_debug_fail_alloc_after(0);
    st = sw_capabilities_declare(t, "Custom", 3, caps);
    sw_debug_fail_alloc_after(-1);
    expect_fail(st, SW_ENOMEM, NULL, "out of memory");
    is_int(sw_capabilities_state(t), SW_CAPS_OPEN, "still open");

    expect_ok(sw_capabilities_declare(t, "Custom", 3, caps), "declare");
    is_int(sw_capabilities_state(t), SW_CAPS_DECLARED, "declared");
    sw_capability_list l;
    if (expect_ok(sw_capabilities_of_class(t, &l), "query")) {
        is_int(l.count, 3, "three entries");
        ok(l.count == 3 && l.items[0].op == SW_OP_ADD &&
               l.items[1].op == SW_OP_REDUCE && l.items[2].op == SW_OP_RELU,
           "sorted add < reduce_sum < relu");
        ok(l.items != caps, "the entries were copied");
    }
    st = sw_capabilities_declare(t, "Custom", 0, NULL);
    expect_fail(st, SW_ETYPE,
                "Custom has already declared its operation-plan capabilities",
                "a second declaration");
    is_int(sw_capabilities_state(t), SW_CAPS_DECLARED, "unchanged");

    /* An empty declaration is complete. */
    const void *e = &tags[1];
    expect_ok(sw_capabilities_declare(e, "Empty", 0, NULL), "declare empty");
    is_int(sw_capabilities_state(e), SW_CAPS_DECLARED, "declared empty");
    if (expect_ok(sw_capabilities_of_class(e, &l), "query empty"))
        is_int(l.count, 0, "no entries");
}

static void test_observe(void) {
    const void *q = &tags[2], *c = &tags[3];
    sw_capability_list l = {(void *)1, 9};
    if (expect_ok(sw_capabilities_of_class(q, &l), "query an open class"))
        ok(l.count == 0, "it is empty");
    is_int(sw_capabilities_state(q), SW_CAPS_OBSERVED, "and sealed");
    sw_op_capability one = cap_of(plan1(SW_OP_RELU, F32));
    sw_status st = sw_capabilities_declare(q, "Late", 1, &one);
    expect_fail(st, SW_ETYPE,
                "Late was first observed without a declaration; its "
                "operation-plan capabilities are sealed empty",
                "declare after a query");
    expect_ok(sw_capabilities_observe(c, SW_OBSERVE_CONSTRUCTION),
              "observe by construction");
    is_int(sw_capabilities_state(c), SW_CAPS_CONSTRUCTED, "sealed by it");
    st = sw_capabilities_declare(c, "Built", 1, &one);
    expect_fail(st, SW_ETYPE,
                "Built was already observed, when an instance was "
                "constructed, without a declaration; its operation-plan "
                "capabilities are sealed empty",
                "declare after construction");
    expect_ok(sw_capabilities_observe(c, SW_OBSERVE_QUERY), "observe again");
    is_int(sw_capabilities_state(c), SW_CAPS_CONSTRUCTED,
           "the first observation is kept");
    st = sw_capabilities_observe(NULL, 0);
    expect_fail(st, SW_EVALUE, "capability class tag must not be NULL",
                "observe NULL");
    st = sw_capabilities_of_class(NULL, &l);
    expect_fail(st, SW_EVALUE, "capability class tag must not be NULL",
                "query NULL");
    is_int(sw_capabilities_state(NULL), SW_CAPS_OPEN, "NULL reads open");

    /* Forgetting a class frees its set: its tag starts over. */
    const void *f = &tags[4];
    int64_t base = sw_debug_live_allocs();
    expect_ok(sw_capabilities_declare(f, "Gone", 1, &one), "declare");
    sw_capabilities_forget(f);
    is_int(sw_capabilities_state(f), SW_CAPS_OPEN, "forgotten: open again");
    leak_check(base, "forget");
    sw_capabilities_forget(f);
    sw_capabilities_forget(NULL);
    ok(1, "forgetting twice or NULL is harmless");
    sw_capabilities_forget(sw_cpu_class());
    is_int(sw_capabilities_state(sw_cpu_class()), SW_CAPS_SHIPPED,
           "a shipped class is never forgotten");
}

/* ------------------------------------------------------------- shipped */

/* Resolves the inputs cap describes (weak scalars: every shape) and says
 * whether one resolution gives exactly cap. */
static int resolves_back(const sw_op_capability *cap) {
    int nscalar = 0;
    for (int32_t i = 0; i < cap->noperands; ++i)
        nscalar += cap->operands[i].role == SW_ROLE_WEAK_SCALAR;
    int shapes = SW_SCALAR_KIND_COUNT * (SW_SCALAR_TRAITS + 1);
    int tries = nscalar ? shapes : 1;
    for (int k = 0; k < tries; ++k) {
        sw_plan_input in[SW_PLAN_MAX_OPERANDS];
        for (int32_t i = 0; i < cap->noperands; ++i)
            in[i] = cap->operands[i].role == SW_ROLE_TENSOR
                        ? sw_plan_tensor(cap->operands[i].dtype)
                        : sw_plan_scalar(
                              (sw_scalar_kind)(k / (SW_SCALAR_TRAITS + 1)),
                              (uint32_t)(k % (SW_SCALAR_TRAITS + 1)));
        sw_op_plan p;
        if (sw_op_plan_resolve(cap->op, cap->noperands, in, NONE, &p) ==
                SW_OK &&
            sw_op_capability_matches(cap, &p))
            return 1;
        sw_clear_error();
    }
    return 0;
}

static void check_shipped(const char *backend, const void *cls,
                          const char *name, int64_t *count) {
    sw_capability_list l;
    if (!expect_ok(sw_capabilities_of_class(cls, &l), name))
        return;
    *count = l.count;
    is_int(sw_capabilities_state(cls), SW_CAPS_SHIPPED, "%s is shipped", name);
    int sorted = 1, back = 1;
    for (int64_t i = 0; i < l.count; ++i) {
        if (i && sw_op_capability_compare(&l.items[i - 1], &l.items[i]) >= 0)
            sorted = 0;
        if (!resolves_back(&l.items[i])) {
            back = 0;
            sw_op_plan p;
            char buf[256];
            sw_op_capability_to_plan(&l.items[i], &p);
            sw_op_plan_describe(&p, buf, sizeof buf);
            diag("%s: does not resolve back: %s", name, buf);
        }
    }
    ok(sorted, "%s: sorted, no duplicates", name);
    ok(back, "%s: every capability's plan resolves back to itself", name);
    /* Every computing operation the backend dispatches has a capability. */
    for (int32_t slot = 0; slot < SW_NATIVE_OP_SLOTS; ++slot) {
        const sw_native_op *n = sw_native_op_at(slot);
        if (!n || strcmp(n->backend, backend) != 0 || !sw_op_has_plan(n->op))
            continue;
        ok(sw_capability_list_filter(l, n->op).count > 0, "%s declares %s",
           name, sw_op_info_get(n->op)->plan_name);
    }
    sw_op_capability one = cap_of(plan1(SW_OP_RELU, F32));
    sw_status st = sw_capabilities_declare(cls, name, 1, &one);
    char want[128];
    snprintf(want, sizeof want,
             "%s is a shipped backend; its operation-plan capabilities are "
             "sealed",
             name);
    expect_fail(st, SW_ETYPE, want, "declaring on a shipped class");
}

static void test_shipped(void) {
    int64_t ncpu = 0, ngeneric = 0;
    check_shipped("cpu", sw_cpu_class(), "CPU", &ncpu);
    check_shipped("generic", sw_generic_class(), "Generic", &ngeneric);
    diag("CPU declares %lld capabilities, Generic %lld", (long long)ncpu,
         (long long)ngeneric);
    ok(ncpu > 0 && ngeneric > 0, "both sets are non-empty");

    /* A few shapes checked by hand. */
    sw_capability_list l;
    sw_capabilities_of_class(sw_cpu_class(), &l);
    sw_op_plan p = plan2(SW_OP_MATMUL, I32, I32);
    ok(sw_capability_list_match(l, &p) != NULL, "CPU matmul Int32");
    p = plan2(SW_OP_ADD, FLT, FLT);
    ok(sw_capability_list_match(l, &p) == NULL, "CPU has no Floating add");
    sw_plan_input s[2] = {sw_plan_scalar_value(SW_SCALAR_INTEGRAL, 3),
                          sw_plan_tensor(I32)};
    sw_op_plan q;
    if (expect_ok(sw_op_plan_resolve(SW_OP_MUL, 2, s, NONE, &q), "mul(3, x)"))
        ok(sw_capability_list_match(l, &q) != NULL,
           "CPU declares a scalar-first mul");
    sw_capabilities_of_class(sw_generic_class(), &l);
    p = plan2(SW_OP_ADD, ANY, FLT);
    ok(sw_capability_list_match(l, &p) != NULL, "Generic Any + Floating");
    p = plan2(SW_OP_ADD, F32, F32);
    ok(sw_capability_list_match(l, &p) == NULL, "Generic has no Float32 add");

    const void *sealed[] = {sw_file_class(), sw_evictable_class()};
    const char *names[] = {"FileBacked", "Evictable"};
    for (int i = 0; i < 2; ++i) {
        is_int(sw_capabilities_state(sealed[i]), SW_CAPS_SHIPPED,
               "%s is shipped", names[i]);
        if (expect_ok(sw_capabilities_of_class(sealed[i], &l), names[i]))
            is_int(l.count, 0, "%s: sealed empty at class level", names[i]);
        sw_op_capability one = cap_of(plan1(SW_OP_RELU, F32));
        sw_status st = sw_capabilities_declare(sealed[i], names[i], 1, &one);
        expect_fail(st, SW_ETYPE, NULL, "declaring on a sealed shipped class");
    }
}

/* ---------------------------------------------------------------- race */

#define RACE_ROUNDS 200
#define RACE_OBSERVERS 4

static char race_tags[RACE_ROUNDS];
static atomic_int race_arrived[RACE_ROUNDS];
static int64_t race_seen[RACE_ROUNDS][RACE_OBSERVERS];
static sw_status race_declared[RACE_ROUNDS];
static sw_op_capability race_caps[3];

typedef struct race_arg {
    int who; /* -1: the declarer */
} race_arg;

static void *race_thread(void *p) {
    race_arg *a = p;
    for (int r = 0; r < RACE_ROUNDS; ++r) {
        /* Every thread starts round r together. */
        atomic_fetch_add(&race_arrived[r], 1);
        while (atomic_load(&race_arrived[r]) < RACE_OBSERVERS + 1)
            sched_yield();
        if (a->who < 0) {
            race_declared[r] =
                sw_capabilities_declare(&race_tags[r], "Racer", 3, race_caps);
            sw_clear_error();
        } else {
            /* Stagger the observers so that both orders happen; the
             * check holds whichever wins. */
            for (volatile int spin = 0; spin < (r * 37 % 13) * 2000; ++spin)
                ;
            sw_capability_list l = {NULL, -1};
            if (sw_capabilities_of_class(&race_tags[r], &l) != SW_OK)
                l.count = -2;
            race_seen[r][a->who] = l.count;
        }
    }
    return NULL;
}

static void test_race(void) {
    race_caps[0] = cap_of(plan2(SW_OP_ADD, F32, F32));
    race_caps[1] = cap_of(plan1(SW_OP_REDUCE, F32));
    race_caps[2] = cap_of(plan1(SW_OP_RELU, F32));
    pthread_t threads[RACE_OBSERVERS + 1];
    race_arg args[RACE_OBSERVERS + 1];
    for (int i = 0; i <= RACE_OBSERVERS; ++i) {
        args[i].who = i - 1;
        if (pthread_create(&threads[i], NULL, race_thread, &args[i]) != 0)
            bail_out("pthread_create failed");
    }
    for (int i = 0; i <= RACE_OBSERVERS; ++i)
        pthread_join(threads[i], NULL);
    int consistent = 1, wins = 0;
    for (int r = 0; r < RACE_ROUNDS; ++r) {
        int won = race_declared[r] == SW_OK;
        wins += won;
        /* A declaration that won was first: every observer saw it whole.
         * One that lost came after an observation sealed the class empty,
         * and so every observer saw nothing. */
        for (int o = 0; o < RACE_OBSERVERS; ++o)
            if (race_seen[r][o] != (won ? 3 : 0))
                consistent = 0;
        sw_capability_state s = sw_capabilities_state(&race_tags[r]);
        if (s != (won ? SW_CAPS_DECLARED : SW_CAPS_OBSERVED))
            consistent = 0;
    }
    diag("the declaration won %d of %d rounds", wins, RACE_ROUNDS);
    ok(consistent, "every round ended all-or-nothing");
}

/* ----------------------------------------------------------- snapshots */

static void test_snapshot(void) {
    int64_t base = sw_debug_live_allocs();
    sw_capability_snapshot *s = NULL;
    if (!expect_ok(sw_capability_snapshot_new(&s), "new snapshot"))
        return;
    ok(!sw_capability_snapshot_is_final(s), "not final");
    sw_capability_list l;
    sw_status st = sw_capability_snapshot_get(s, "Tiered", &l);
    expect_fail(st, SW_ERUNTIME,
                "Tiered has not finalized its operation-plan capabilities",
                "query before finalization");
    sw_op_capability caps[2] = {cap_of(plan1(SW_OP_RELU, F32)),
                                cap_of(plan2(SW_OP_ADD, F32, F32))};
    sw_op_capability dup[2] = {caps[0], caps[0]};
    st = sw_capability_snapshot_finalize(s, "Tiered", 2, dup);
    expect_fail(st, SW_EVALUE,
                "Tiered generated two capabilities equal to: relu with "
                "operands (tensor Float32->Float32), binary32 compute, no "
                "accumulation, Float32 output",
                "duplicates");
    ok(!sw_capability_snapshot_is_final(s), "a failure leaves it open");
    expect_ok(sw_capability_snapshot_finalize(s, "Tiered", 2, caps),
              "finalize");
    ok(sw_capability_snapshot_is_final(s), "final");
    if (expect_ok(sw_capability_snapshot_get(s, "Tiered", &l), "query"))
        ok(l.count == 2 && l.items[0].op == SW_OP_ADD, "sorted snapshot");
    st = sw_capability_snapshot_finalize(s, "Tiered", 0, NULL);
    expect_fail(st, SW_ERUNTIME, "Tiered capabilities are already finalized",
                "second finalization");
    sw_capability_snapshot_free(s);
    sw_capability_snapshot_free(NULL);
    leak_check(base, "snapshot");
    st = sw_capability_snapshot_finalize(NULL, "X", 0, NULL);
    expect_fail(st, SW_EVALUE, "capability snapshot must not be NULL",
                "finalize NULL");
    st = sw_capability_snapshot_get(NULL, "X", &l);
    expect_fail(st, SW_ERUNTIME,
                "X has not finalized its operation-plan capabilities",
                "query NULL");
}

/* ------------------------------------------------------------ carriers */

static int64_t one_size(sw_carrier *c) {
    (void)c;
    return 1;
}

static sw_status one_get(sw_carrier *c, int64_t i, sw_value *out) {
    (void)c;
    (void)i;
    *out = sw_value_f64(0);
    return SW_OK;
}

static const sw_carrier_class custom_class = {
    .version = SW_CARRIER_CLASS_VERSION,
    .name = "Custom",
    .size = one_size,
    .get = one_get,
};

static void test_carriers(void) {
    sw_carrier *cpu = NULL, *cpu2 = NULL, *gen = NULL, *file = NULL,
               *custom = NULL, *ev = NULL, *ev2 = NULL;
    double v[2] = {1, 2};
    if (sw_cpu_new(2, F32, 1, 0, &cpu) || sw_cpu_new(2, F32, 1, 0, &cpu2) ||
        sw_generic_new_doubles(2, v, 1, &gen) ||
        sw_file_new_in(NULL, NULL, FLT, 1, &file) ||
        sw_carrier_new(&custom_class, NULL, I32, &custom))
        bail_out(sw_errmsg());
    static const int want[4][SW_DTYPE_COUNT] = {
        /* Any Floating Float32 Int32 Bool */
        {0, 0, 1, 1, 1}, /* CPU */
        {1, 1, 1, 1, 1}, /* Generic */
        {0, 1, 1, 1, 0}, /* FileBacked */
        {0, 0, 0, 1, 0}, /* a custom carrier: its own dtype */
    };
    sw_carrier *cs[4] = {cpu, gen, file, custom};
    const char *names[4] = {"CPU", "Generic", "FileBacked", "Custom"};
    for (int i = 0; i < 4; ++i)
        for (int d = 0; d < SW_DTYPE_COUNT; ++d)
            is_int(sw_carrier_supports_storage_dtype(cs[i], (sw_dtype)d),
                   want[i][d], "%s stores %s: %d", names[i],
                   sw_dtype_name((sw_dtype)d), want[i][d]);
    ok(!sw_carrier_supports_storage_dtype(cpu, (sw_dtype)9),
       "no dtype out of range");
    ok(!sw_carrier_supports_storage_dtype(NULL, F32), "no carrier: no");
    sw_carrier_release_storage(cpu2);
    ok(sw_carrier_supports_storage_dtype(cpu2, I32),
       "the answer holds after release");

    /* Instances read their class's set. */
    sw_capability_list a, b;
    if (expect_ok(sw_carrier_capabilities(cpu, &a), "CPU instance") &&
        expect_ok(sw_capabilities_of_class(sw_cpu_class(), &b), "CPU class"))
        ok(a.items == b.items && a.count == b.count,
           "a CPU instance reads the class set");
    ok(sw_carrier_class_tag(cpu) == sw_cpu_class(), "the tag of a CPU");
    if (expect_ok(sw_carrier_capabilities(custom, &a), "custom instance"))
        is_int(a.count, 0, "an undeclared custom class is empty");
    is_int(sw_capabilities_state(&custom_class), SW_CAPS_OBSERVED,
           "and the query sealed it");
    sw_status st = sw_carrier_capabilities(NULL, &a);
    expect_fail(st, SW_EVALUE, "carrier must not be NULL", "NULL carrier");

    /* Evictable(Generic, FileBacked): Generic's plans with a Floating
     * output (FileBacked stores no Any). */
    sw_carrier *fsec = NULL;
    if (sw_file_new_in(NULL, NULL, FLT, 1, &fsec))
        bail_out(sw_errmsg());
    if (expect_ok(sw_evictable_new(gen, fsec, &ev), "Evictable(Generic)")) {
        for (int d = 0; d < SW_DTYPE_COUNT; ++d)
            is_int(sw_carrier_supports_storage_dtype(ev, (sw_dtype)d),
                   want[1][d] && want[2][d], "Evictable stores %s",
                   sw_dtype_name((sw_dtype)d));
        sw_capabilities_of_class(sw_generic_class(), &b);
        int64_t floating = 0;
        for (int64_t i = 0; i < b.count; ++i)
            floating += b.items[i].output == FLT;
        sw_capability_list e1, e2;
        if (expect_ok(sw_carrier_capabilities(ev, &e1), "Evictable query")) {
            is_int(e1.count, floating, "only the Floating-output plans");
            int all = 1;
            for (int64_t i = 0; i < e1.count; ++i) {
                sw_op_plan p;
                sw_op_capability_to_plan(&e1.items[i], &p);
                all = all && e1.items[i].output == FLT &&
                      sw_capability_list_match(b, &p) != NULL;
            }
            ok(all, "each of them a Floating-output Generic plan");
            expect_ok(sw_carrier_capabilities(ev, &e2), "again");
            ok(e1.items == e2.items, "the snapshot is made once");
        }
    }
    /* Evictable(CPU, CPU) keeps every CPU plan. */
    {
        sw_carrier *sec = NULL;
        if (sw_cpu_new(2, F32, 1, 0, &sec))
            bail_out(sw_errmsg());
        if (expect_ok(sw_evictable_new(cpu, sec, &ev2), "Evictable(CPU)")) {
            sw_capability_list e;
            sw_capabilities_of_class(sw_cpu_class(), &b);
            if (expect_ok(sw_carrier_capabilities(ev2, &e), "query"))
                is_int(e.count, b.count, "every CPU plan is kept");
        }
        sw_carrier_unref(sec);
    }
    sw_carrier_unref(ev);
    sw_carrier_unref(ev2);
    sw_carrier_unref(fsec);
    sw_carrier_unref(cpu);
    sw_carrier_unref(cpu2);
    sw_carrier_unref(gen);
    sw_carrier_unref(file);
    sw_carrier_unref(custom);
}

int main(void) {
    /* The shipped sets are made on first use and live with the process:
     * make them before any leak check. */
    sw_capability_list warm;
    sw_capabilities_of_class(sw_cpu_class(), &warm);
    sw_capabilities_of_class(sw_generic_class(), &warm);
    test_descriptors();
    test_lists();
    test_declare();
    test_observe();
    test_shipped();
    test_race();
    test_snapshot();
    test_carriers();
    return done_testing();
}
