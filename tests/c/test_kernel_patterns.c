/*
 * Kernels of definition-backed carriers (include/strideweave/extension.h):
 * pattern and pack registration with their rejections, the capability
 * union, candidate order with refusals falling through and failures
 * ending the call, result checks as broken contracts, rollback of operand
 * writes, one version step per declared mutation, autograd through the
 * central VJP, definitions dispatched to kernels, and allocation-failure
 * injection over the whole path.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "strideweave/strideweave.h"

static char tags[8];
#define TAG(i) ((const void *)&tags[i])
static char iface_tag, other_iface;

/* ----------------------------------------------------- storage: doubles */

typedef struct store {
    int64_t n;
    double *v;
} store;

static sw_status p_supports(void *ctx, sw_carrier *c, sw_dtype d, int *out) {
    (void)ctx;
    (void)c;
    *out = d == SW_DTYPE_FLOAT32 || d == SW_DTYPE_INT32;
    return SW_OK;
}

static sw_status p_allocate(void *ctx, sw_carrier *c, int64_t slots) {
    (void)ctx;
    store *s = calloc(1, sizeof *s);
    s->n = slots;
    s->v = calloc((size_t)(slots ? slots : 1), sizeof(double));
    sw_carrier_defined_set_data(c, s);
    return SW_OK;
}

static sw_status p_size(void *ctx, sw_carrier *c, int64_t *out) {
    (void)ctx;
    *out = ((store *)sw_carrier_defined_data(c))->n;
    return SW_OK;
}

static sw_status p_release(void *ctx, sw_carrier *c) {
    (void)ctx;
    store *s = sw_carrier_defined_data(c);
    if (s) {
        free(s->v);
        free(s);
    }
    sw_carrier_defined_set_data(c, NULL);
    return SW_OK;
}

static sw_status p_read(void *ctx, sw_carrier *c, int64_t i, sw_value *out) {
    (void)ctx;
    store *s = sw_carrier_defined_data(c);
    *out = sw_carrier_dtype(c) == SW_DTYPE_INT32
               ? sw_value_i64((int64_t)s->v[i])
               : sw_value_f64(s->v[i]);
    return SW_OK;
}

static sw_status p_write(void *ctx, sw_carrier *c, int64_t i,
                         const sw_value *v) {
    (void)ctx;
    store *s = sw_carrier_defined_data(c);
    s->v[i] = v->kind == SW_VALUE_I64 ? (double)v->as.i : v->as.f;
    return SW_OK;
}

static double *values(sw_carrier *c) {
    return ((store *)sw_carrier_defined_data(c))->v;
}

/* ------------------------------------------------------------- kernels */

/* What the kernels do, set per test. */
static struct {
    int refuse_fast, refuse_general; /* prepare says Unsupported */
    int fail_prepare;                /* prepare fails */
    int fail_submit;                 /* submit fails after writing */
    int wrong;                       /* 1 dtype, 2 layout, 3 size, 4 class,
                                        5 alias, 6 count */
    int write_operand;               /* submit writes operand 0 */
    int prepared, submitted, finished;
    char order[64];
} K;

/* relu into a fresh carrier of the operand's class; kid is the ctx. */
static sw_status k_prepare(void *ctx, const sw_kernel_invocation *inv,
                           void **work, int *unsupported, char *reason,
                           size_t size) {
    const char *kid = ctx;
    K.prepared++;
    strncat(K.order, kid, sizeof K.order - strlen(K.order) - 2);
    strcat(K.order, " ");
    if (K.fail_prepare)
        return sw_set_error(SW_EVALUE, strcmp(kid, "fast") == 0
                                           ? "prepare of fast failed"
                                           : "prepare failed");
    int refuse = strcmp(kid, "fast") == 0 ? K.refuse_fast : K.refuse_general;
    if (refuse) {
        *unsupported = 1;
        snprintf(reason, size, "%s",
                 strcmp(kid, "fast") == 0 ? "alignment" : "shape");
        return SW_OK;
    }
    *work = (void *)inv;
    return SW_OK;
}

static sw_status k_submit(void *ctx, void *work,
                          const sw_kernel_invocation *inv,
                          sw_tensor **results) {
    (void)ctx;
    (void)work;
    K.submitted++;
    const sw_tensor *x = inv->call->operands[0].as.tensor;
    sw_carrier *xc = sw_tensor_carrier(x);
    const sw_result_spec *spec = &inv->resolution->results[0];
    if (K.write_operand || K.fail_submit) {
        sw_value v = sw_value_f64(99.0);
        sw_status st = sw_carrier_set(xc, sw_tensor_offset(x), &v);
        if (st)
            return st;
        st = sw_carrier_set(xc, sw_tensor_offset(x), &v);
        if (st)
            return st;
    }
    if (K.fail_submit)
        return sw_set_error(SW_ERUNTIME, "terminal provider failure");
    if (K.wrong == 5) {
        results[0] = sw_tensor_retain((sw_tensor *)x);
        return SW_OK;
    }
    if (K.wrong == 6)
        return SW_OK;
    int64_t n = spec->layout ? sw_layout_cosize(spec->layout) : 0;
    sw_carrier *out = NULL;
    sw_status st;
    if (K.wrong == 4)
        st = sw_cpu_new(n, SW_DTYPE_FLOAT32, 1, 0, &out);
    else
        st = sw_carrier_allocate_like(
            xc, n + (K.wrong == 3), 1,
            K.wrong == 1 ? SW_DTYPE_INT32 : spec->dtype, 0, &out);
    if (st)
        return st;
    for (int64_t i = 0; i < sw_layout_size(spec->layout) && !st; ++i) {
        sw_value a;
        int64_t p;
        st = sw_tensor_get(x, i, &a);
        if (st)
            break;
        double d = a.kind == SW_VALUE_I64 ? (double)a.as.i : a.as.f;
        sw_value r = sw_value_f64(d > 0 ? d : 0);
        sw_layout_index(spec->layout, i, &p);
        st = sw_carrier_set(out, p, &r);
    }
    if (!st) {
        if (K.wrong == 2) {
            sw_layout *l = NULL;
            st = sw_layout_parse("(1):(1)", &l);
            if (!st)
                st = sw_tensor_new(out, 0, l, &results[0]);
            sw_layout_unref(l);
        } else {
            st = sw_tensor_new(out, 0, spec->layout, &results[0]);
        }
    }
    sw_carrier_unref(out);
    return st;
}

static void k_finish(void *ctx, void *work) {
    (void)ctx;
    (void)work;
    K.finished++;
}

static sw_op_capability relu_plan(sw_dtype d) {
    sw_plan_input in = sw_plan_tensor(d);
    sw_op_plan p;
    if (sw_op_plan_resolve(SW_OP_RELU, 1, &in, SW_PLAN_NO_DTYPE, &p))
        bail_out(sw_errmsg());
    sw_op_capability c;
    sw_op_capability_from_plan(&p, &c);
    return c;
}

static sw_kernel_pattern_decl pattern(const char *kid, int64_t pref,
                                      const sw_op_capability *plans,
                                      int64_t nplans) {
    sw_kernel_pattern_decl p = {SW_OP_RELU,  nplans,    plans,    kid,     pref,
                                (void *)kid, k_prepare, k_submit, k_finish};
    return p;
}

static sw_carrier_definition
definition(const char *name, const sw_kernel_pattern_decl *pats, int64_t n) {
    sw_carrier_definition d;
    memset(&d, 0, sizeof d);
    d.version = SW_CARRIER_DEFINITION_VERSION;
    d.name = name;
    d.storage.version = SW_STORAGE_PROVIDER_VERSION;
    d.storage.supports_dtype = p_supports;
    d.storage.allocate = p_allocate;
    d.storage.physical_size = p_size;
    d.storage.release = p_release;
    d.storage.read = p_read;
    d.storage.write = p_write;
    d.has_kernels = 1;
    d.interface_type = &iface_tag;
    d.interface_version = "1";
    d.npatterns = n;
    d.patterns = pats;
    return d;
}

static sw_tensor *tensor_of(const void *tag, const double *v, int64_t n,
                            sw_dtype dt) {
    sw_carrier *c = NULL;
    sw_layout *l = NULL;
    sw_tensor *t = NULL;
    char text[64];
    snprintf(text, sizeof text, "(%lld):(1)", (long long)n);
    if (sw_carrier_defined_new(tag, &c) ||
        sw_carrier_defined_allocate(c, n, dt, 1) || sw_layout_parse(text, &l) ||
        sw_tensor_new(c, 0, l, &t))
        bail_out(sw_errmsg());
    for (int64_t i = 0; i < n; ++i)
        values(c)[i] = v[i];
    sw_layout_unref(l);
    sw_carrier_unref(c);
    return t;
}

static void reset(void) {
    memset(&K, 0, sizeof K);
}

/* --------------------------------------------------------- registration */

static void test_registration(void) {
    sw_op_capability f32 = relu_plan(SW_DTYPE_FLOAT32);
    sw_op_capability twice[2] = {f32, f32};
    sw_kernel_pattern_decl p = pattern("general", 0, &f32, 1);
    sw_carrier_definition d = definition("Dev", &p, 1);

    sw_carrier_definition bad = d;
    bad.interface_version = "";
    expect_fail(sw_carrier_define(TAG(0), &bad), SW_EVALUE,
                "Dev: the KernelProvider needs an execution interface (a "
                "type and a non-empty version)",
                "a provider without an interface");
    sw_kernel_pattern_decl q = pattern("general", 0, twice, 2);
    bad = definition("Dev", &q, 1);
    expect_fail(sw_carrier_define(TAG(0), &bad), SW_EVALUE,
                "kernel 'general': duplicate plan 1", "a duplicate plan");
    q = pattern("general", 0, &f32, 0);
    bad = definition("Dev", &q, 1);
    expect_fail(sw_carrier_define(TAG(0), &bad), SW_EVALUE,
                "kernel 'general': plans must not be empty", "no plans");
    q = pattern("general", 0, &f32, 1);
    q.op = SW_OP_EXP;
    bad = definition("Dev", &q, 1);
    expect_fail(sw_carrier_define(TAG(0), &bad), SW_EVALUE,
                "kernel 'general': plan 0 is for another operation than "
                "operation.name 'exp'",
                "a plan of another operation");
    sw_kernel_pattern_decl two[2] = {p, p};
    bad = definition("Dev", two, 2);
    expect_fail(sw_carrier_define(TAG(0), &bad), SW_EVALUE,
                "Dev: duplicate kernel_id 'general'", "duplicate kernel ids");
    bad = d;
    bad.version = 1;
    expect_fail(sw_carrier_define(TAG(0), &bad), SW_EVALUE,
                "Dev: a KernelProvider needs a version-2 definition",
                "a version-1 definition with kernels");
    is_int(sw_carrier_has_definition(TAG(0)), 0, "nothing was registered");

    expect_ok(sw_carrier_define(TAG(0), &d), "define Dev");
    is_int(sw_carrier_kernel_count(TAG(0)), 1, "one built-in pattern");

    /* Packs: shape, target, interface, duplicates, then sealing. */
    sw_op_capability i32 = relu_plan(SW_DTYPE_INT32);
    sw_kernel_pattern_decl fast = pattern("fast", 10, &f32, 1);
    sw_kernel_pattern_decl ints = pattern("ints", 0, &i32, 1);
    sw_kernel_pattern_decl pk[2] = {fast, ints};
    sw_kernel_pack_decl pack = {SW_KERNEL_PACK_VERSION,
                                "zeta",
                                "1",
                                TAG(0),
                                &iface_tag,
                                "1",
                                2,
                                pk,
                                NULL,
                                NULL};
    sw_kernel_pack_decl bp = pack;
    bp.npatterns = 0;
    expect_fail(sw_kernel_pack_register(&bp), SW_EVALUE,
                "a kernel pack must not be empty", "an empty pack");
    sw_kernel_pattern_decl dup[2] = {fast, fast};
    bp = pack;
    bp.patterns = dup;
    expect_fail(sw_kernel_pack_register(&bp), SW_EVALUE,
                "duplicate kernel_id 'fast' in the pack", "duplicate in pack");
    bp = pack;
    bp.cls = sw_cpu_class();
    expect_fail(sw_kernel_pack_register(&bp), SW_ETYPE,
                "kernel pack target must have its own exact "
                "CarrierDefinition with a KernelProvider",
                "CPU as a target");
    bp = pack;
    bp.interface_type = &other_iface;
    expect_fail(sw_kernel_pack_register(&bp), SW_ETYPE,
                "the pack's execution interface does not match the "
                "KernelProvider's",
                "another interface type");
    bp = pack;
    bp.interface_version = "2";
    expect_fail(sw_kernel_pack_register(&bp), SW_ETYPE,
                "the pack's execution interface does not match the "
                "KernelProvider's",
                "another interface version");
    sw_kernel_pattern_decl clash = pattern("general", 0, &f32, 1);
    bp = pack;
    bp.patterns = &clash;
    bp.npatterns = 1;
    expect_fail(sw_kernel_pack_register(&bp), SW_EVALUE,
                "kernel_id 'general' is already used by Dev",
                "a kernel id of the target");
    expect_ok(sw_kernel_pack_register(&pack), "register pack zeta");
    expect_fail(sw_kernel_pack_register(&pack), SW_EVALUE,
                "a kernel pack with namespace and version 'zeta' '1' is "
                "already registered",
                "the same namespace and version");
    sw_kernel_pattern_decl alpha_p = pattern("alpha-general", 0, &f32, 1);
    sw_kernel_pack_decl alpha = pack;
    alpha.namespace_ = "alpha";
    alpha.patterns = &alpha_p;
    alpha.npatterns = 1;
    expect_ok(sw_kernel_pack_register(&alpha), "register pack alpha");
    is_int(sw_carrier_kernel_count(TAG(0)), 4, "four patterns");
    is_str(sw_carrier_kernel_id(TAG(0), 0), "fast", "preference first");
    is_str(sw_carrier_kernel_id(TAG(0), 1), "general", "then built-in");
    is_str(sw_carrier_kernel_id(TAG(0), 2), "alpha-general",
           "then packs by namespace");
    is_str(sw_carrier_kernel_id(TAG(0), 3), "ints", "zeta last");

    /* The first observation seals: capabilities are the union. */
    sw_capability_list l;
    expect_ok(sw_capabilities_of_class(TAG(0), &l), "class capabilities");
    is_int(l.count, 2, "Float32 and Int32 relu, without duplicates");
    sw_kernel_pattern_decl late_p = pattern("late", 0, &f32, 1);
    sw_kernel_pack_decl late = pack;
    late.namespace_ = "late";
    late.patterns = &late_p;
    late.npatterns = 1;
    expect_fail(sw_kernel_pack_register(&late), SW_ETYPE,
                "Dev was already observed: its kernel packs are frozen",
                "a pack after observation");

    /* A storage-only class takes no pack. */
    sw_carrier_definition so = definition("Plain", NULL, 0);
    so.has_kernels = 0;
    so.interface_type = NULL;
    so.interface_version = NULL;
    expect_ok(sw_carrier_define(TAG(1), &so), "define Plain");
    bp = pack;
    bp.cls = TAG(1);
    expect_fail(sw_kernel_pack_register(&bp), SW_ETYPE,
                "kernel pack target must have its own exact "
                "CarrierDefinition with a KernelProvider",
                "a storage-only target");
}

/* ------------------------------------------------------------ dispatch */

static void test_dispatch(void) {
    const double xv[4] = {-1, 2, -3, 4};
    sw_tensor *x = tensor_of(TAG(0), xv, 4, SW_DTYPE_FLOAT32);
    sw_tensor *y = NULL;

    reset();
    expect_ok(sw_unary("relu", x, &y), "relu through the kernels");
    is_str(K.order, "fast ", "the preferred pattern ran");
    is_int(K.submitted, 1, "one submit");
    is_int(K.finished, 1, "one finish");
    const double *yv = values(sw_tensor_carrier(y));
    ok(yv[0] == 0 && yv[1] == 2 && yv[2] == 0 && yv[3] == 4, "relu values");
    ok(sw_carrier_defined_class(sw_tensor_carrier(y)) == TAG(0),
       "the result is on the dispatch class");
    sw_tensor_unref(y);
    y = NULL;

    reset();
    K.refuse_fast = 1;
    expect_ok(sw_unary("relu", x, &y), "fast refuses, general runs");
    is_str(K.order, "fast general ", "refusal falls through in order");
    sw_tensor_unref(y);
    y = NULL;

    reset();
    K.refuse_fast = K.refuse_general = 1;
    expect_fail(sw_unary("relu", x, &y), SW_ENOTIMPL,
                "no kernel of Dev accepted 'relu': fast: alignment; general: "
                "shape; alpha-general: shape",
                "every candidate refused");
    is_int(K.submitted, 0, "nothing submitted");

    reset();
    K.fail_prepare = 1;
    expect_fail(sw_unary("relu", x, &y), SW_EVALUE, "prepare of fast failed",
                "a failing prepare is terminal");
    is_str(K.order, "fast ", "no later candidate ran");

    /* Contract checks, each leaving the operand as it was. */
    static const char *frag[] = {NULL,           "dtype",   "layout", "slots",
                                 "carrier role", "aliases", "count"};
    for (int w = 1; w <= 6; ++w) {
        reset();
        K.wrong = w;
        int64_t v0 = sw_tensor_version(x);
        sw_status st = sw_unary("relu", x, &y);
        char what[64];
        snprintf(what, sizeof what, "contract rule %d", w);
        is_int(st, SW_ERUNTIME, what);
        ok(strstr(sw_errmsg(), frag[w]) != NULL, "the message names the rule");
        if (!strstr(sw_errmsg(), frag[w]))
            diag("got: %s", sw_errmsg());
        ok(sw_op_contract_failed(), "marked as a broken contract");
        is_int(sw_tensor_version(x), v0, "operand version unchanged");
        ok(y == NULL, "no result");
    }

    /* An undeclared write is refused and rolled back. */
    reset();
    K.write_operand = 1;
    int64_t v0 = sw_tensor_version(x);
    expect_fail(sw_unary("relu", x, &y), SW_ERUNTIME,
                "kernel 'fast' for 'relu' on Dev made an unauthorized operand "
                "mutation: a carrier of an operand not in mutated_operands "
                "was written",
                "unauthorized operand mutation");
    ok(values(sw_tensor_carrier(x))[0] == -1, "the write was rolled back");
    is_int(sw_tensor_version(x), v0, "version restored");

    /* A submit that fails after writing rolls back too. */
    reset();
    K.fail_submit = 1;
    expect_fail(sw_unary("relu", x, &y), SW_ERUNTIME,
                "terminal provider failure", "a failing submit");
    ok(values(sw_tensor_carrier(x))[0] == -1, "rolled back after failure");
    is_int(sw_tensor_version(x), v0, "version restored after failure");
    ok(!sw_op_contract_failed(), "a provider failure is not a contract one");

    /* No kernel for the operation (at dispatch), or for the plan. */
    expect_fail(sw_unary("exp", x, &y), SW_ENOTIMPL,
                "Dev has no kernel for 'exp'", "no pattern for the operation");
    sw_op_capability i32 = relu_plan(SW_DTYPE_INT32);
    sw_kernel_pattern_decl ints = pattern("ints", 0, &i32, 1);
    sw_carrier_definition half = definition("Half", &ints, 1);
    expect_ok(sw_carrier_define(TAG(3), &half), "define Half");
    sw_tensor *hx = tensor_of(TAG(3), xv, 4, SW_DTYPE_FLOAT32);
    expect_fail(sw_unary("relu", hx, &y), SW_ENOTIMPL,
                "Half has no kernel for 'relu' with plan relu with operands "
                "(tensor Float32->Float32), binary32 compute, no "
                "accumulation, Float32 output",
                "no pattern for the plan");
    sw_tensor_unref(hx);
    sw_capabilities_forget(TAG(3));

    /* Int32 relu comes from pack zeta. */
    reset();
    sw_tensor *xi = tensor_of(TAG(0), xv, 4, SW_DTYPE_INT32);
    expect_ok(sw_unary("relu", xi, &y), "Int32 relu from a pack");
    is_str(K.order, "ints ", "the pack's pattern");
    is_int(sw_tensor_dtype(y), SW_DTYPE_INT32, "Int32 result");
    sw_tensor_unref(y);
    y = NULL;
    sw_tensor_unref(xi);

    /* Views need no kernel. */
    sw_tensor *v = NULL;
    int32_t order[1] = {0};
    expect_ok(sw_permute(x, 1, order, &v), "a view on a kernel carrier");
    sw_tensor_unref(v);

    /* Storage-only and released. */
    sw_tensor *plain = tensor_of(TAG(1), xv, 4, SW_DTYPE_FLOAT32);
    expect_fail(sw_unary("relu", plain, &y), SW_ENOTIMPL,
                "Plain is storage-only: its CarrierDefinition has no "
                "KernelProvider, so it runs no 'relu'",
                "a storage-only class");
    sw_tensor_unref(plain);
    sw_tensor_unref(x);
}

/* ------------------------------------------------------------ autograd */

static void test_autograd(void) {
    const double xv[4] = {-1, 2, -3, 4};
    const double ones[4] = {1, 1, 1, 1};
    sw_tensor *x = tensor_of(TAG(0), xv, 4, SW_DTYPE_FLOAT32);
    sw_tensor *c = tensor_of(TAG(0), ones, 4, SW_DTYPE_FLOAT32);
    sw_tensor *y = NULL;
    reset();
    expect_ok(sw_unary("relu", x, &y), "recorded relu");
    ok(sw_tensor_autograd_ctx(y) != NULL, "one node on the result");
    expect_ok(sw_tensor_backward(y, c), "backward");
    sw_tensor *g = sw_tensor_grad(x);
    ok(g != NULL, "the operand has a gradient");
    if (g) {
        ok(sw_carrier_defined_class(sw_tensor_carrier(g)) == TAG(0),
           "the gradient is in the operand's class");
        const double *gv = values(sw_tensor_carrier(g));
        ok(gv[0] == 0 && gv[1] == 1 && gv[2] == 0 && gv[3] == 1,
           "relu gradient");
    }
    sw_tensor_unref(c);
    sw_tensor_unref(y);
    sw_tensor_unref(x);
}

/* ------------------------------------------------- mixed operand layouts */

static sw_status add_prepare(void *ctx, const sw_kernel_invocation *inv,
                             void **work, int *unsupported, char *reason,
                             size_t size) {
    (void)ctx;
    (void)inv;
    (void)unsupported;
    (void)reason;
    (void)size;
    *work = NULL;
    return SW_OK;
}

/* x + y by logical index into the declared result layout. */
static sw_status add_submit(void *ctx, void *work,
                            const sw_kernel_invocation *inv,
                            sw_tensor **results) {
    (void)ctx;
    (void)work;
    const sw_tensor *x = inv->call->operands[0].as.tensor;
    const sw_tensor *y = inv->call->operands[1].as.tensor;
    const sw_result_spec *spec = &inv->resolution->results[0];
    sw_carrier *out = NULL;
    sw_status st = sw_carrier_allocate_like(sw_tensor_carrier(x),
                                            sw_layout_cosize(spec->layout), 1,
                                            spec->dtype, 0, &out);
    for (int64_t i = 0; !st && i < sw_layout_size(spec->layout); ++i) {
        sw_value a, b;
        int64_t p = 0;
        st = sw_tensor_get(x, i, &a);
        if (!st)
            st = sw_tensor_get(y, i, &b);
        if (!st)
            st = sw_layout_index(spec->layout, i, &p);
        sw_value r = sw_value_f64(a.as.f + b.as.f);
        if (!st)
            st = sw_carrier_set(out, p, &r);
    }
    if (!st)
        st = sw_tensor_new(out, 0, spec->layout, &results[0]);
    sw_carrier_unref(out);
    return st;
}

/* A tensor of c under the layout text. */
static sw_tensor *view_of(sw_tensor *t, const char *text) {
    sw_layout *l = NULL;
    sw_tensor *v = NULL;
    if (sw_layout_parse(text, &l) ||
        sw_tensor_new(sw_tensor_carrier(t), 0, l, &v))
        bail_out(sw_errmsg());
    sw_layout_unref(l);
    return v;
}

static void test_mixed_layouts(void) {
    sw_plan_input in[2] = {sw_plan_tensor(SW_DTYPE_FLOAT32),
                           sw_plan_tensor(SW_DTYPE_FLOAT32)};
    sw_op_plan plan;
    if (sw_op_plan_resolve(SW_OP_ADD, 2, in, SW_PLAN_NO_DTYPE, &plan))
        bail_out(sw_errmsg());
    sw_op_capability cap;
    sw_op_capability_from_plan(&plan, &cap);
    sw_kernel_pattern_decl p = {SW_OP_ADD, 1,           &cap,       "add", 0,
                                NULL,      add_prepare, add_submit, NULL};
    sw_carrier_definition d = definition("Adder", &p, 1);
    if (!expect_ok(sw_carrier_define(TAG(5), &d), "an add pattern"))
        return;
    const double av[6] = {0, 1, 2, 3, 4, 5};
    const double bv[6] = {0, 10, 20, 30, 40, 50};
    sw_tensor *a0 = tensor_of(TAG(5), av, 6, SW_DTYPE_FLOAT32);
    sw_tensor *b0 = tensor_of(TAG(5), bv, 6, SW_DTYPE_FLOAT32);
    sw_tensor *col = view_of(a0, "(2,3):(1,2)"),
              *row = view_of(b0, "(2,3):(3,1)");
    sw_tensor *bcast = view_of(a0, "(2,3):(0,1)");
    sw_tensor *flat = view_of(b0, "(6):(1)");
    sw_tensor *y = NULL, *z = NULL;
    int grad = sw_grad_enabled();
    sw_set_grad_enabled(0);
    if (expect_ok(sw_add(col, row, &y), "column-major plus row-major")) {
        char text[64];
        sw_layout_format(sw_tensor_layout(y), text, sizeof text);
        is_str(text, "(2,3):(1,2)", "the first operand's compact layout");
        int right = 1;
        for (int64_t i = 0; i < 6; ++i) {
            sw_value r, a, b;
            sw_tensor_get(y, i, &r);
            sw_tensor_get(col, i, &a);
            sw_tensor_get(row, i, &b);
            right = right && r.as.f == a.as.f + b.as.f;
        }
        ok(right, "the sums by logical position");
    }
    if (expect_ok(sw_add(bcast, row, &z), "a broadcast first operand")) {
        char text[64];
        sw_layout_format(sw_tensor_layout(z), text, sizeof text);
        is_str(text, "(2,3):(1,2)", "compact column-major");
    }
    sw_tensor *w = NULL;
    expect_fail(sw_add(col, flat, &w), SW_EVALUE,
                "add operands must have the same shape", "another shape");
    sw_set_grad_enabled(grad);
    sw_tensor_unref(z);
    sw_tensor_unref(y);
    sw_tensor_unref(flat);
    sw_tensor_unref(bcast);
    sw_tensor_unref(row);
    sw_tensor_unref(col);
    sw_tensor_unref(b0);
    sw_tensor_unref(a0);
    sw_capabilities_forget(TAG(5));
}

/* --------------------------------------------------- injection and leaks */

static void test_injection(void) {
    const double xv[4] = {-1, 2, -3, 4};
    int64_t base = sw_debug_live_allocs();
    for (int64_t k = 0; k < 200; ++k) {
        sw_tensor *x = tensor_of(TAG(0), xv, 4, SW_DTYPE_FLOAT32);
        sw_tensor *y = NULL;
        reset();
        K.write_operand = (k & 1) != 0; /* exercise the journal too */
        sw_debug_fail_alloc_after(k);
        sw_status st = sw_unary("relu", x, &y);
        sw_debug_fail_alloc_after(-1);
        if (!st)
            sw_tensor_unref(y);
        ok(values(sw_tensor_carrier(x))[0] == -1,
           "the operand is intact after a failure");
        sw_tensor_unref(x);
        if (!st && !K.write_operand)
            break;
    }
    leak_check(base, "kernel dispatch under allocation failure");
}

/* ------------------------------------------- a definition with kernels */

static int32_t fill_id = -1;
static int fill_writes = 2; /* the kernel writes each element this often */

static sw_op_plan fill_plan(void) {
    sw_op_plan p;
    memset(&p, 0, sizeof p);
    p.op = fill_id;
    p.noperands = 1;
    p.operands[0].role = SW_ROLE_TENSOR;
    p.operands[0].dtype = SW_DTYPE_FLOAT32;
    p.operands[0].convert_to = SW_DTYPE_FLOAT32;
    p.compute = SW_ARITH_BINARY32;
    p.accumulation = SW_ACCUM_NONE;
    p.accumulator = SW_PLAN_NO_DTYPE;
    p.output = SW_DTYPE_FLOAT32;
    return p;
}

/* kern.fill_(x): writes 7 into x in place and returns x itself. */
static sw_status fill_resolve(void *ctx, const sw_bound_call *call,
                              sw_resolution *out) {
    (void)ctx;
    sw_tensor *x = call->operands[0].as.tensor;
    out->plan = fill_plan();
    out->nresults = 1;
    out->results[0].dtype = sw_tensor_dtype(x);
    out->results[0].layout = sw_layout_retain(sw_tensor_layout(x));
    out->results[0].alias_of = 0;
    out->nmutated = 1;
    out->mutated[0] = 0;
    return SW_OK;
}

static sw_status fill_prepare(void *ctx, const sw_kernel_invocation *inv,
                              void **work, int *unsupported, char *reason,
                              size_t size) {
    (void)ctx;
    (void)unsupported;
    (void)reason;
    (void)size;
    *work = NULL;
    return inv->op->id == fill_id ? SW_OK
                                  : sw_set_error(SW_ERUNTIME, "wrong op");
}

static sw_status fill_submit(void *ctx, void *work,
                             const sw_kernel_invocation *inv,
                             sw_tensor **results) {
    (void)ctx;
    (void)work;
    sw_tensor *x = inv->call->operands[0].as.tensor;
    sw_value v = sw_value_f64(7.0);
    for (int w = 0; w < fill_writes; ++w)
        for (int64_t i = 0; i < sw_layout_size(sw_tensor_layout(x)); ++i) {
            sw_status st = sw_tensor_set(x, i, &v);
            if (st)
                return st;
        }
    if (K.fail_submit)
        return sw_set_error(SW_ERUNTIME, "terminal provider failure");
    results[0] = sw_tensor_retain(x);
    return SW_OK;
}

static void test_definition_kernels(void) {
    static const sw_operand_spec operands[] = {{"x", SW_OPERAND_TENSOR, 0}};
    sw_op_definition od;
    memset(&od, 0, sizeof od);
    od.version = SW_OP_DEFINITION_VERSION;
    od.name = "kern.fill_";
    od.noperands = 1;
    od.operands = operands;
    od.resolve = fill_resolve;
    od.non_differentiable = 1;
    expect_ok(sw_op_define(&od, &fill_id), "define kern.fill_");
    sw_op_plan plan = fill_plan();
    sw_op_capability cap;
    sw_op_capability_from_plan(&plan, &cap);
    sw_kernel_pattern_decl p = {
        fill_id, 1, &cap, "fill", 0, NULL, fill_prepare, fill_submit, NULL};
    sw_carrier_definition d = definition("Filler", &p, 1);
    expect_ok(sw_carrier_define(TAG(2), &d), "define Filler");

    const double xv[3] = {1, 2, 3};
    sw_tensor *x = tensor_of(TAG(2), xv, 3, SW_DTYPE_FLOAT32);
    sw_arg a = sw_arg_tensor(x);
    int32_t n = 0;
    sw_tensor *r[SW_DEF_MAX_RESULTS] = {NULL};
    int64_t v0 = sw_tensor_version(x);
    reset();
    expect_ok(sw_op_call(fill_id, 1, &a, 0, NULL, &n, r), "kern.fill_ call");
    is_int(n, 1, "one result");
    ok(r[0] == x, "the declared alias is the operand itself");
    is_int(sw_tensor_version(x), v0 + 1,
           "a declared mutation is exactly one version step (6 writes)");
    ok(values(sw_tensor_carrier(x))[2] == 7, "the values were written");
    sw_tensor_unref(r[0]);
    r[0] = NULL;

    for (int64_t i = 0; i < 3; ++i)
        values(sw_tensor_carrier(x))[i] = xv[i];
    v0 = sw_tensor_version(x);
    K.fail_submit = 1;
    expect_fail(sw_op_call(fill_id, 1, &a, 0, NULL, &n, r), SW_ERUNTIME,
                "terminal provider failure", "a failing in-place kernel");
    ok(values(sw_tensor_carrier(x))[0] == 1 &&
           values(sw_tensor_carrier(x))[2] == 3,
       "every write was rolled back");
    is_int(sw_tensor_version(x), v0, "the version is as before");

    /* On CPU the definition has no reference to fall back on. */
    sw_tensor_unref(x);
    sw_capabilities_forget(TAG(2));
}

/* ---------------------------------------------------------- composites */

static int comp_wrong_class, comp_refuse;

static sw_op_capability comp_caps[1];
static int comp_done;

static sw_status c_caps(void *ctx, sw_carrier *c, const sw_op_capability **out,
                        int64_t *n) {
    (void)ctx;
    (void)c;
    comp_caps[0] = relu_plan(SW_DTYPE_FLOAT32);
    *out = comp_caps;
    *n = 1;
    return SW_OK;
}

static void c_caps_done(void *ctx, sw_carrier *c,
                        const sw_op_capability *entries) {
    (void)ctx;
    (void)c;
    comp_done += entries == comp_caps;
}

static sw_status c_results(void *ctx, const sw_kernel_invocation *inv,
                           const void **classes) {
    (void)ctx;
    (void)inv;
    classes[0] = comp_wrong_class ? TAG(4) : TAG(0); /* results on Dev */
    return SW_OK;
}

static sw_status c_prepare(void *ctx, const sw_kernel_invocation *inv,
                           void **work, int *unsupported, char *reason,
                           size_t size) {
    (void)ctx;
    (void)inv;
    if (comp_refuse) {
        *unsupported = 1;
        snprintf(reason, size, "tile footprint");
    }
    *work = NULL;
    return SW_OK;
}

static sw_status c_submit(void *ctx, void *work,
                          const sw_kernel_invocation *inv,
                          sw_tensor **results) {
    (void)ctx;
    (void)work;
    const sw_tensor *x = inv->call->operands[0].as.tensor;
    const sw_layout *l = inv->resolution->results[0].layout;
    int64_t n = sw_layout_cosize(l);
    double v[16] = {0};
    for (int64_t i = 0; i < n && i < 16; ++i)
        v[i] = values(sw_tensor_carrier(x))[i] > 0
                   ? values(sw_tensor_carrier(x))[i]
                   : 0;
    sw_tensor *t = tensor_of(TAG(0), v, n, SW_DTYPE_FLOAT32);
    results[0] = t;
    return SW_OK;
}

static void test_composites(void) {
    sw_carrier_definition d = definition("Tiled", NULL, 0);
    d.has_kernels = 0;
    d.interface_type = NULL;
    d.interface_version = NULL;
    d.dependent = 1;
    d.has_composite = 1;
    sw_carrier_definition bad = d;
    expect_fail(sw_carrier_define(TAG(5), &bad), SW_EVALUE,
                "Tiled: the composite provider needs capabilities, "
                "result_carriers, prepare and submit",
                "an incomplete composite");
    d.composite = (sw_composite_decl){
        NULL, c_caps, c_caps_done, c_results, c_prepare, c_submit, NULL};
    expect_ok(sw_carrier_define(TAG(5), &d), "define Tiled");

    const double xv[3] = {-1, 2, -3};
    sw_tensor *x = tensor_of(TAG(5), xv, 3, SW_DTYPE_FLOAT32);
    sw_tensor *y = NULL;
    sw_capability_list l;
    expect_fail(sw_unary("relu", x, &y), SW_ERUNTIME,
                "Tiled has not finalized its operation-plan capabilities",
                "an operation before finalization");
    expect_fail(sw_carrier_capabilities(sw_tensor_carrier(x), &l), SW_ERUNTIME,
                "Tiled has not finalized its operation-plan capabilities",
                "a query before finalization");
    expect_ok(sw_carrier_defined_finalize(sw_tensor_carrier(x)), "finalize");
    is_int(comp_done, 1, "the entries were handed back once");
    expect_fail(sw_carrier_defined_finalize(sw_tensor_carrier(x)), SW_ERUNTIME,
                "Tiled capabilities are already finalized", "twice");
    expect_ok(sw_carrier_capabilities(sw_tensor_carrier(x), &l), "query");
    is_int(l.count, 1, "the instance snapshot");

    expect_ok(sw_unary("relu", x, &y), "relu through the composite");
    ok(sw_carrier_defined_class(sw_tensor_carrier(y)) == TAG(0),
       "the result is on the class result_carriers named");
    ok(values(sw_tensor_carrier(y))[1] == 2 &&
           values(sw_tensor_carrier(y))[0] == 0,
       "composite values");
    sw_tensor_unref(y);
    y = NULL;
    expect_fail(sw_unary("exp", x, &y), SW_ENOTIMPL,
                "Tiled does not support 'exp' with plan exp with operands "
                "(tensor Float32->Float32), binary32 compute, no "
                "accumulation, Float32 output",
                "a plan outside the snapshot");
    comp_refuse = 1;
    expect_fail(sw_unary("relu", x, &y), SW_ENOTIMPL,
                "the composite of Tiled refused 'relu': tile footprint",
                "a refusing composite");
    comp_refuse = 0;
    comp_wrong_class = 1;
    sw_status st = sw_unary("relu", x, &y);
    is_int(st, SW_ERUNTIME, "a result on another class than named");
    ok(sw_op_contract_failed() && strstr(sw_errmsg(), "carrier role"),
       "a carrier-role contract failure");
    comp_wrong_class = 0;

    sw_tensor *plain = tensor_of(TAG(0), xv, 3, SW_DTYPE_FLOAT32);
    expect_fail(sw_carrier_defined_finalize(sw_tensor_carrier(plain)), SW_ETYPE,
                "carrier is not of a dependent definition-backed class",
                "finalizing an independent carrier");
    sw_tensor_unref(plain);
    sw_tensor_unref(x);
    sw_capabilities_forget(TAG(5));
}

int main(void) {
    test_registration();
    test_dispatch();
    test_autograd();
    test_mixed_layouts();
    test_definition_kernels();
    test_composites();
    test_injection();
    sw_capabilities_forget(TAG(0));
    sw_capabilities_forget(TAG(1));
    return done_testing();
}
