/*
 * Definition-backed carriers (include/strideweave/extension.h): the
 * registration rules, sealing by observation, construction with the
 * size checks, element access with the base's checks, factories, a
 * refusable release, dispatch refusals, and the move rules for pairs
 * with a definition-backed class, and asynchronous routes (ownership
 * before prepare, completions on the move executor, failures). The
 * storage provider here keeps
 * doubles in a malloc'd array and counts its callbacks.
 */
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "strideweave/strideweave.h"

/* Tags for classes: addresses nothing else uses. */
static char tags[16];
#define TAG(i) ((const void *)&tags[i])

typedef struct store {
    int64_t n;
    double *v;
} store;

typedef struct counts {
    int supports, allocate, size, release, read, write;
    int refuse_dtype;    /* supports_dtype says no */
    int64_t size_offset; /* physical_size lies by this much */
    int negative_size;
    int fail_release; /* release fails this many times */
    int dropped;
} counts;

static counts K;

static sw_status p_supports(void *ctx, sw_carrier *c, sw_dtype d, int *out) {
    (void)ctx;
    (void)c;
    K.supports++;
    *out = !K.refuse_dtype && (d == SW_DTYPE_FLOAT32 || d == SW_DTYPE_FLOATING);
    return SW_OK;
}

static sw_status p_allocate(void *ctx, sw_carrier *c, int64_t slots) {
    (void)ctx;
    K.allocate++;
    store *s = calloc(1, sizeof *s);
    s->n = slots;
    s->v = calloc((size_t)(slots ? slots : 1), sizeof(double));
    sw_carrier_defined_set_data(c, s);
    return SW_OK;
}

static sw_status p_size(void *ctx, sw_carrier *c, int64_t *out) {
    (void)ctx;
    K.size++;
    store *s = sw_carrier_defined_data(c);
    *out = K.negative_size ? -1 : s->n + K.size_offset;
    return SW_OK;
}

static sw_status p_release(void *ctx, sw_carrier *c) {
    (void)ctx;
    K.release++;
    if (K.fail_release > 0) {
        K.fail_release--;
        return sw_set_error(SW_ERUNTIME, "release refused by the provider");
    }
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
    K.read++;
    store *s = sw_carrier_defined_data(c);
    *out = sw_value_f64(s->v[i]);
    return SW_OK;
}

static sw_status p_write(void *ctx, sw_carrier *c, int64_t i,
                         const sw_value *v) {
    (void)ctx;
    K.write++;
    store *s = sw_carrier_defined_data(c);
    s->v[i] = v->kind == SW_VALUE_I64 ? (double)v->as.i : v->as.f;
    return SW_OK;
}

static void p_drop(void *ctx) {
    (void)ctx;
    K.dropped++;
}

/* A route to CPU: copies the store's doubles into the CPU floats. */
static int route_refuse, route_fail, route_runs, route_finished;

typedef struct route_work {
    sw_carrier *src, *dst;
    int64_t offset, span;
} route_work;

static sw_status r_prepare(void *ctx, const sw_transfer_request *r, void **work,
                           int *unsupported, char *reason, size_t size) {
    (void)ctx;
    if (route_refuse) {
        *unsupported = 1;
        snprintf(reason, size, "alignment");
        return SW_OK;
    }
    route_work *w = malloc(sizeof *w);
    w->src = sw_tensor_carrier(r->tensor);
    w->dst = r->destination;
    w->offset = r->offset;
    w->span = r->physical_span;
    *work = w;
    return SW_OK;
}

static sw_status r_run(void *ctx, void *work) {
    (void)ctx;
    route_runs++;
    if (route_fail)
        return sw_set_error(SW_EOS, "the device went away");
    route_work *w = work;
    store *s = sw_carrier_defined_data(w->src);
    float *out = sw_cpu_data(w->dst);
    for (int64_t i = 0; i < w->span; ++i)
        out[i] = (float)s->v[w->offset + i];
    return SW_OK;
}

static void r_finish(void *ctx, void *work) {
    (void)ctx;
    route_finished++;
    free(work);
}

static sw_transfer_route_decl route_to_cpu(const void *src, const char *id) {
    sw_transfer_route_decl r = {src,       sw_cpu_class(), id,       NULL,
                                r_prepare, r_run,          r_finish, NULL};
    return r;
}

static sw_carrier_definition definition(const char *name) {
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
    d.drop = p_drop;
    return d;
}

static sw_carrier *make(const void *tag, int64_t n, int mutable_) {
    sw_carrier *c = NULL;
    if (sw_carrier_defined_new(tag, &c) ||
        sw_carrier_defined_allocate(c, n, SW_DTYPE_FLOAT32, mutable_))
        bail_out(sw_errmsg());
    return c;
}

/* --------------------------------------------------------- registration */

static void test_registration(void) {
    sw_carrier_definition d = definition("Store");
    expect_fail(sw_carrier_define(NULL, &d), SW_EVALUE,
                "carrier class tag must not be NULL", "a NULL tag");
    expect_fail(sw_carrier_define(sw_cpu_class(), &d), SW_ETYPE,
                "Store is a definition-free shipped carrier", "CPU");
    sw_carrier_definition bad = d;
    bad.storage.read = NULL;
    expect_fail(sw_carrier_define(TAG(0), &bad), SW_EVALUE,
                "Store: the storage provider is incomplete or of an "
                "unsupported version",
                "an incomplete provider");
    bad = d;
    bad.dependent = 1;
    expect_fail(sw_carrier_define(TAG(0), &bad), SW_ETYPE,
                "Store is a DependentCarrier: its CarrierDefinition requires "
                "composite",
                "a dependent class without a composite");
    bad.has_composite = 1;
    bad.has_kernels = 1;
    expect_fail(sw_carrier_define(TAG(0), &bad), SW_ETYPE,
                "Store is a DependentCarrier: its CarrierDefinition forbids "
                "kernels",
                "a dependent class with kernels");
    bad = d;
    bad.has_composite = 1;
    expect_fail(sw_carrier_define(TAG(0), &bad), SW_ETYPE,
                "Store is an independent carrier: its CarrierDefinition must "
                "not supply a composite",
                "an independent class with a composite");
    sw_transfer_route_decl routes[2] = {route_to_cpu(TAG(1), "to-cpu"),
                                        route_to_cpu(TAG(0), "again")};
    bad = d;
    bad.nroutes = 1;
    bad.routes = routes;
    expect_fail(sw_carrier_define(TAG(0), &bad), SW_ETYPE,
                "route 'to-cpu' must have the exact source_class Store",
                "a route from another class");
    routes[0].source = TAG(0);
    bad.nroutes = 2;
    expect_fail(sw_carrier_define(TAG(0), &bad), SW_EVALUE,
                "duplicate exact transfer routes", "two routes to CPU");
    routes[1].route_id = "";
    expect_fail(sw_carrier_define(TAG(0), &bad), SW_EVALUE,
                "route_id must not be empty", "an empty route id");
    is_int(K.dropped, 0, "rejected definitions drop nothing");
    ok(!sw_carrier_has_definition(TAG(0)), "and register nothing");

    is_int(sw_capabilities_state(TAG(0)), SW_CAPS_OPEN, "the class is open");
    expect_ok(sw_carrier_define(TAG(0), &d), "a definition");
    ok(sw_carrier_has_definition(TAG(0)), "is registered");
    is_int(sw_capabilities_state(TAG(0)), SW_CAPS_DEFINED,
           "and leaves the class open until observed");
    expect_fail(sw_carrier_define(TAG(0), &d), SW_ETYPE,
                "Store already has a CarrierDefinition", "a second one");
    sw_op_capability none[1];
    expect_fail(sw_capabilities_declare(TAG(0), "Store", 0, none), SW_ETYPE,
                "Store has a CarrierDefinition; its operation-plan "
                "capabilities come from its providers",
                "declaring capabilities by hand");

    expect_ok(sw_capabilities_observe(TAG(2), SW_OBSERVE_QUERY), "observe");
    sw_carrier_definition late = definition("Late");
    expect_fail(sw_carrier_define(TAG(2), &late), SW_ETYPE,
                "Late was already observed without a CarrierDefinition",
                "a definition after observation");

    sw_capability_list l;
    expect_ok(sw_capabilities_of_class(TAG(0), &l), "a class query");
    is_int(l.count, 0, "a storage-only class has no capabilities");
    is_int(sw_capabilities_state(TAG(0)), SW_CAPS_DEFINED_SEALED,
           "and the query sealed it");

    sw_carrier *c = NULL;
    expect_fail(sw_carrier_defined_new(TAG(3), &c), SW_ETYPE,
                "carrier class has no CarrierDefinition",
                "constructing an undefined class");
}

/* ----------------------------------------------------------- lifecycle */

static void test_construction(void) {
    memset(&K, 0, sizeof K);
    sw_carrier *c = NULL;
    expect_ok(sw_carrier_defined_new(TAG(0), &c), "new");
    ok(sw_carrier_is_defined(c), "a definition-backed carrier");
    ok(sw_carrier_defined_class(c) == TAG(0), "of its class");
    ok(sw_carrier_class_tag(c) == TAG(0), "keyed by its class's tag");
    is_int(sw_carrier_size(c), 0, "without storage yet");
    is_int(K.supports + K.allocate, 0, "no callback has run");
    expect_fail(sw_carrier_defined_allocate(c, -1, SW_DTYPE_FLOAT32, 1),
                SW_EVALUE, "Store slots must be non-negative",
                "negative slots");
    expect_ok(sw_carrier_defined_allocate(c, 4, SW_DTYPE_FLOAT32, 1),
              "allocate 4");
    is_int(K.supports, 1, "supports_dtype asked once");
    is_int(K.allocate, 1, "allocate called once");
    is_int(sw_carrier_size(c), 4, "size from physical_size");
    expect_fail(sw_carrier_defined_allocate(c, 4, SW_DTYPE_FLOAT32, 1),
                SW_ERUNTIME, "Store storage is already allocated",
                "a second allocate");
    sw_carrier_unref(c);
    is_int(K.release, 1, "destruction releases the storage");

    memset(&K, 0, sizeof K);
    K.refuse_dtype = 1;
    expect_ok(sw_carrier_defined_new(TAG(0), &c), "new");
    expect_fail(sw_carrier_defined_allocate(c, 2, SW_DTYPE_FLOAT32, 1),
                SW_ETYPE, "Store does not support storage dtype Float32",
                "an unsupported dtype");
    is_int(K.allocate, 0, "allocate is never called then");
    sw_carrier_unref(c);
    is_int(K.release, 0, "and nothing is released");

    memset(&K, 0, sizeof K);
    K.size_offset = 1;
    expect_ok(sw_carrier_defined_new(TAG(0), &c), "new");
    expect_fail(sw_carrier_defined_allocate(c, 3, SW_DTYPE_FLOAT32, 1),
                SW_EVALUE,
                "Store.physical_size returned 4, not the requested physical "
                "size 3",
                "a size mismatch");
    is_int(K.release, 1, "the storage is given back");
    ok(!sw_carrier_defined_is_allocated(c), "and the carrier has none");
    K.size_offset = 0;
    K.negative_size = 1;
    expect_fail(sw_carrier_defined_allocate(c, 3, SW_DTYPE_FLOAT32, 1),
                SW_EVALUE,
                "Store.physical_size must not return a negative value",
                "a negative size");
    sw_carrier_unref(c);
    is_int(K.release, 2, "given back again, and not at destruction");
}

static void test_access(void) {
    memset(&K, 0, sizeof K);
    sw_carrier *c = make(TAG(0), 3, 1);
    sw_value v = sw_value_f64(2.5);
    expect_ok(sw_carrier_set(c, 1, &v), "a write");
    is_int(sw_carrier_version(c), 1, "bumps the version by one");
    sw_value r;
    expect_ok(sw_carrier_get(c, 1, &r), "a read");
    ok(r.kind == SW_VALUE_F64 && r.as.f == 2.5, "reads the value back");
    int reads = K.read, writes = K.write;
    expect_fail(sw_carrier_get(c, 3, &r), SW_EINDEX,
                "Carrier index out of range", "a read past the end");
    expect_fail(sw_carrier_set(c, -1, &v), SW_EINDEX,
                "Carrier index out of range", "a negative write");
    is_int(K.read - reads + K.write - writes, 0,
           "out-of-range access never reaches the provider");
    int yes = 0;
    expect_ok(sw_carrier_defined_supports_dtype(c, SW_DTYPE_INT32, &yes),
              "supports_dtype");
    ok(!yes, "Int32 is not stored");

    sw_carrier *frozen = make(TAG(0), 2, 0);
    ok(!sw_carrier_is_mutable(frozen), "mutable=0 is immutable");
    writes = K.write;
    expect_fail(sw_carrier_set(frozen, 0, &v), SW_ERUNTIME, NULL,
                "a write to an immutable carrier");
    is_int(K.write, writes, "never reaches the provider");
    sw_carrier_unref(frozen);

    /* Factories: the same class, version 0, filled through writes. */
    sw_carrier *like = NULL;
    int asked = K.supports;
    expect_ok(sw_carrier_allocate_like(c, 5, 1, SW_DTYPE_COUNT, 0, &like),
              "allocate_like");
    ok(sw_carrier_defined_class(like) == TAG(0), "of the same class");
    is_int(sw_carrier_size(like), 5, "of the size asked");
    is_int(sw_carrier_version(like), 0, "at version 0");
    is_int(K.supports, asked,
           "the source's own dtype is not asked about again");
    sw_carrier_unref(like);
    expect_ok(sw_carrier_allocate_like(c, 2, 1, SW_DTYPE_FLOATING, 0, &like),
              "allocate_like in another dtype");
    is_int(K.supports, asked + 1, "another dtype is asked about");
    is_int(sw_carrier_dtype(like), SW_DTYPE_FLOATING, "and stored");
    sw_carrier_unref(like);
    like = NULL;
    expect_fail(sw_carrier_allocate_like(c, 2, 1, SW_DTYPE_INT32, 0, &like),
                SW_ETYPE, "Store does not support storage dtype Int32",
                "allocate_like in a dtype the class refuses");
    ok(like == NULL, "makes nothing");

    /* The provider's room in the carrier's block. */
    char *room = sw_carrier_defined_room(c, SW_DEFINED_ROOM);
    ok(room != NULL, "a definition-backed carrier has room");
    ok((uintptr_t)room % _Alignof(max_align_t) == 0, "aligned for any type");
    ok(sw_carrier_defined_room(c, 1) == (void *)room,
       "the same room every time");
    ok(sw_carrier_defined_room(c, SW_DEFINED_ROOM + 1) == NULL,
       "none past SW_DEFINED_ROOM bytes");
    expect_ok(sw_carrier_allocate_like(c, 1, 1, SW_DTYPE_COUNT, 0, &like),
              "a fresh carrier");
    char *fresh = sw_carrier_defined_room(like, SW_DEFINED_ROOM);
    int zero = fresh != NULL && fresh != room;
    for (int i = 0; zero && i < SW_DEFINED_ROOM; ++i)
        zero = fresh[i] == 0;
    ok(zero, "has its own room, zeroed");
    memset(fresh, 0xab, SW_DEFINED_ROOM); /* the provider's to use */
    sw_carrier_unref(like);
    sw_carrier *cpu = NULL;
    expect_ok(sw_cpu_new(1, SW_DTYPE_FLOAT32, 1, 0, &cpu), "a CPU carrier");
    ok(sw_carrier_defined_room(cpu, 1) == NULL, "other carriers have none");
    ok(sw_carrier_defined_room(NULL, 1) == NULL, "nor has NULL");
    sw_carrier_unref(cpu);
    sw_value vals[2] = {sw_value_f64(7), sw_value_f64(8)};
    expect_ok(sw_carrier_new_like(c, 2, vals, 0, SW_DTYPE_COUNT, &like),
              "new_like");
    is_int(sw_carrier_version(like), 0, "filled without version bumps");
    ok(!sw_carrier_is_mutable(like), "with the mutability asked");
    expect_ok(sw_carrier_get(like, 1, &r), "read");
    ok(r.as.f == 8.0, "holding the values");
    sw_carrier_unref(like);

    /* Dispatch: storage-only, then released. */
    sw_op *op = NULL;
    expect_fail(sw_carrier_dispatch_id(c, SW_OP_RELU, &op), SW_ENOTIMPL,
                "Store is storage-only: its CarrierDefinition has no "
                "KernelProvider, so it runs no 'relu'",
                "dispatching relu");

    /* A refused release leaves the carrier live. */
    K.fail_release = 1;
    expect_fail(sw_carrier_release_storage(c), SW_ERUNTIME,
                "release refused by the provider", "a refused release");
    ok(!sw_carrier_is_released(c), "the carrier is still live");
    expect_ok(sw_carrier_get(c, 1, &r), "and readable");
    int released = K.release;
    expect_ok(sw_carrier_release_storage(c), "a release");
    ok(sw_carrier_is_released(c), "releases");
    is_int(sw_carrier_size(c), 0, "size 0 after release");
    expect_ok(sw_carrier_release_storage(c), "a second release");
    is_int(K.release, released + 1, "calls the provider once");
    expect_fail(sw_carrier_dispatch_op(c, "no such op", &op), SW_ERUNTIME,
                "Store is released", "dispatch after release");
    sw_carrier_unref(c);
    is_int(K.release, released + 1, "destruction does not release again");
}

/* ---------------------------------------------------------------- moves */

static sw_tensor *tensor_on(sw_carrier *c, int64_t n) {
    sw_layout *l = NULL;
    if (sw_layout_leaf(n, 1, &l))
        bail_out(sw_errmsg());
    sw_tensor *t = NULL;
    if (sw_tensor_new(c, 0, l, &t))
        bail_out(sw_errmsg());
    sw_layout_unref(l);
    return t;
}

static void test_moves(void) {
    memset(&K, 0, sizeof K);
    int grad = sw_grad_enabled();
    sw_set_grad_enabled(0);
    sw_carrier *c = make(TAG(0), 3, 1);
    sw_tensor *t = tensor_on(c, 3);
    sw_carrier *cpu = NULL, *cpu_b = NULL;
    if (sw_cpu_new(3, SW_DTYPE_FLOAT32, 1, 0, &cpu))
        bail_out(sw_errmsg());
    sw_tensor *out = NULL;
    expect_fail(sw_move(t, cpu, &out), SW_ENOTIMPL,
                "no transfer route for Store, CPU",
                "a definition-backed source without a route");

    /* A class with a route to CPU. */
    sw_transfer_route_decl route = route_to_cpu(TAG(4), "to-cpu");
    sw_carrier_definition routed = definition("Routed");
    routed.nroutes = 1;
    routed.routes = &route;
    routed.storage.elementwise_fallback = 1;
    expect_ok(sw_carrier_define(TAG(4), &routed), "a definition with a route");
    sw_carrier *via = make(TAG(4), 3, 1);
    sw_value three = sw_value_f64(3.0);
    if (sw_carrier_set(via, 1, &three))
        bail_out(sw_errmsg());
    sw_tensor *vt = tensor_on(via, 3);
    route_refuse = 1;
    expect_fail(sw_move(vt, cpu, &out), SW_ENOTIMPL,
                "no transfer route for Routed, CPU: alignment",
                "a route that refuses");
    is_int(route_runs, 0, "and nothing ran");
    route_refuse = 0;
    route_fail = 1;
    expect_fail(sw_move(vt, cpu, &out), SW_EOS, NULL, "a route that fails");
    ok(!sw_carrier_is_released(via), "the source stays live");
    is_int(route_finished, 1, "the work is finished after a failed run");
    route_fail = 0;
    expect_ok(sw_move(vt, cpu, &out), "a move through the route");
    ok(sw_tensor_carrier(out) == cpu, "onto the destination");
    ok(((float *)sw_cpu_data(cpu))[1] == 3.0f, "with the values");
    ok(sw_carrier_is_released(via), "releasing the source");
    is_int(route_runs, 2, "run once per move");
    sw_tensor_unref(out);
    sw_tensor_unref(vt);
    sw_carrier_unref(via);
    if (sw_cpu_new(3, SW_DTYPE_FLOAT32, 1, 0, &cpu_b))
        bail_out(sw_errmsg());
    sw_carrier *rc = make(TAG(4), 3, 1);
    sw_tensor *rt = tensor_on(rc, 3);

    /* Store has no fallback, Routed has: no elementwise copy between. */
    sw_carrier *rc2 = make(TAG(4), 3, 1);
    expect_fail(sw_move(t, rc2, &out), SW_ENOTIMPL,
                "no transfer route for Store, Routed",
                "fallback allowed by one side only");

    /* Two classes that both allow it copy element by element. */
    sw_carrier_definition other = definition("Other");
    other.storage.elementwise_fallback = 1;
    expect_ok(sw_carrier_define(TAG(5), &other), "a second fallback class");
    sw_carrier *oc = make(TAG(5), 3, 1);
    sw_value v = sw_value_f64(4.0);
    if (sw_carrier_set(rc, 2, &v))
        bail_out(sw_errmsg());
    expect_ok(sw_move(rt, oc, &out), "a fallback move");
    sw_value r;
    expect_ok(sw_carrier_get(sw_tensor_carrier(out), 2, &r), "read");
    ok(r.as.f == 4.0, "carries the values");
    ok(sw_carrier_is_released(rc), "and releases the source");
    sw_tensor_unref(out);

    /* A definition-free source moves to a definition-backed class by
     * elementwise copy; recording needs a route back. */
    sw_tensor *ct = tensor_on(cpu, 3);
    sw_carrier *c2 = make(TAG(0), 3, 1);
    expect_ok(sw_move(ct, c2, &out), "CPU to Store");
    sw_tensor_unref(out);
    sw_carrier *cpu2 = NULL, *c3 = make(TAG(0), 3, 1);
    if (sw_cpu_new(3, SW_DTYPE_FLOAT32, 1, 0, &cpu2))
        bail_out(sw_errmsg());
    sw_tensor *ct2 = tensor_on(cpu2, 3);
    sw_set_grad_enabled(1);
    expect_fail(sw_move(ct2, c3, &out), SW_ENOTIMPL,
                "move has no reverse route: no transfer route for Store, CPU",
                "a recorded move without a route back");
    sw_set_grad_enabled(0);

    /* The legacy registry serves definition-free pairs only. */
    sw_move_key sk = {TAG(0), "Store"}, ck = sw_move_key_cpu();
    expect_fail(sw_move_register(sk, ck, sw_move_elementwise()), SW_ERUNTIME,
                "(Store, CPU) involves a definition-backed carrier: its moves "
                "go through the TransferRoute of its CarrierDefinition, not "
                "the move registry",
                "registering a legacy move");
    expect_fail(sw_move_unregister(ck, sk, NULL), SW_ERUNTIME, NULL,
                "unregistering one");

    sw_tensor_unref(ct2);
    sw_carrier_unref(cpu2);
    sw_carrier_unref(c3);
    sw_tensor_unref(ct);
    sw_carrier_unref(c2);
    sw_carrier_unref(oc);
    sw_carrier_unref(rc2);
    sw_tensor_unref(rt);
    sw_carrier_unref(rc);
    sw_tensor_unref(t);
    sw_carrier_unref(c);
    sw_carrier_unref(cpu);
    sw_carrier_unref(cpu_b);
    sw_set_grad_enabled(grad);
}

/* ------------------------------------------------- memory and forgetting */

/* ------------------------------------------------- asynchronous routes */

/* A route with submit: the completion waits on a gate, on the thread the
 * framework picks, and may fail handing over an error object. */
static struct async_route {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int open;          /* the gate */
    int entered;       /* a wait has started */
    int owned_prepare; /* both carriers owned when prepare ran */
    int grad_prepare, grad_submit, grad_wait;
    int refused_elsewhere; /* another thread's changes were refused */
    int source_live;       /* the source was live while waited on */
    int fail_prepare, fail_submit, fail_wait;
    int with_completion;
    int errors_dropped;
    int finished, completions_dropped;
    pthread_t submitter, waiter;
    sw_carrier *src, *dst;
    int64_t span, offset;
} A = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

static int error_token;

/* What another thread may do to the carriers of a move in progress. */
static void *probe(void *unused) {
    (void)unused;
    sw_value v = sw_value_f64(7.0);
    int refused = 0;
    sw_status st = sw_carrier_set(A.dst, 0, &v);
    refused += st == SW_ERUNTIME &&
               strcmp(sw_errmsg(), "Carrier is owned by a pending move and "
                                   "is not mutable") == 0;
    st = sw_carrier_set(A.src, 0, &v);
    refused += st == SW_ERUNTIME;
    st = sw_carrier_release_storage(A.src);
    refused += st == SW_ERUNTIME && strstr(sw_errmsg(), "owned") != NULL;
    refused += !sw_carrier_is_mutable(A.dst) && sw_carrier_is_owned(A.dst) &&
               sw_carrier_is_owned(A.src);
    A.refused_elsewhere = refused == 4;
    sw_clear_error();
    return NULL;
}

static sw_status a_prepare(void *ctx, const sw_transfer_request *r, void **work,
                           int *unsupported, char *reason, size_t size) {
    (void)ctx;
    (void)unsupported;
    (void)reason;
    (void)size;
    A.src = sw_tensor_carrier(r->tensor);
    A.dst = r->destination;
    A.span = r->physical_span;
    A.offset = r->offset;
    A.owned_prepare = sw_carrier_is_owned(A.src) && sw_carrier_is_owned(A.dst);
    A.grad_prepare = sw_grad_enabled();
    pthread_t t;
    if (pthread_create(&t, NULL, probe, NULL) == 0)
        pthread_join(t, NULL);
    if (A.fail_prepare)
        return sw_set_error(SW_EVALUE, "prepare refused the layout");
    *work = &A;
    return SW_OK;
}

static sw_status a_wait(void *ctx, void **error) {
    (void)ctx;
    pthread_mutex_lock(&A.lock);
    A.waiter = pthread_self();
    A.grad_wait = sw_grad_enabled();
    A.source_live = !sw_carrier_is_released(A.src);
    A.entered = 1;
    pthread_cond_broadcast(&A.cond);
    while (!A.open)
        pthread_cond_wait(&A.cond, &A.lock);
    pthread_mutex_unlock(&A.lock);
    if (A.fail_wait) {
        if (error)
            *error = &error_token;
        return sw_set_error(SW_ERUNTIME, "the device went away");
    }
    /* The waiting thread runs the transfer: it may write the destination. */
    store *s = sw_carrier_defined_data(A.src);
    for (int64_t i = 0; i < A.span; ++i) {
        sw_value v = sw_value_f64(s->v[A.offset + i]);
        sw_status st = sw_carrier_set(A.dst, i, &v);
        if (st)
            return st;
    }
    return SW_OK;
}

static void a_drop(void *ctx) {
    (void)ctx;
    A.completions_dropped++;
}

static void a_drop_error(void *error) {
    if (error == &error_token)
        A.errors_dropped++;
}

static sw_status a_submit(void *ctx, void *work, sw_transfer_completion *c) {
    (void)ctx;
    (void)work;
    A.submitter = pthread_self();
    A.grad_submit = sw_grad_enabled();
    if (A.fail_submit)
        return sw_set_error(SW_ERUNTIME, "submit failed");
    if (A.with_completion) {
        c->ctx = &A;
        c->wait = a_wait;
        c->drop = a_drop;
        c->drop_error = a_drop_error;
    }
    return SW_OK;
}

static void a_finish(void *ctx, void *work) {
    (void)ctx;
    (void)work;
    A.finished++;
}

static void gate(int open) {
    pthread_mutex_lock(&A.lock);
    A.open = open;
    pthread_cond_broadcast(&A.cond);
    pthread_mutex_unlock(&A.lock);
}

static void wait_entered(void) {
    pthread_mutex_lock(&A.lock);
    while (!A.entered)
        pthread_cond_wait(&A.cond, &A.lock);
    pthread_mutex_unlock(&A.lock);
}

static void reset_async(void) {
    A.open = A.entered = 0;
    A.owned_prepare = A.refused_elsewhere = A.source_live = 0;
    A.fail_prepare = A.fail_submit = A.fail_wait = 0;
    A.with_completion = 1;
    A.errors_dropped = A.finished = A.completions_dropped = 0;
    A.grad_prepare = A.grad_submit = A.grad_wait = -1;
}

static void test_async_routes(void) {
    int64_t base = sw_debug_live_allocs();
    sw_transfer_route_decl route = {TAG(7),   sw_cpu_class(), "async",
                                    NULL,     a_prepare,      NULL,
                                    a_finish, a_submit};
    sw_carrier_definition d = definition("Async");
    d.nroutes = 1;
    d.routes = &route;
    expect_ok(sw_carrier_define(TAG(7), &d), "a route with submit only");
    int grad = sw_grad_enabled();
    sw_set_grad_enabled(0);

    /* A completion collected on the executor. */
    reset_async();
    sw_carrier *c = make(TAG(7), 3, 1), *cpu = NULL;
    sw_value v = sw_value_f64(5.0);
    if (sw_carrier_set(c, 2, &v) || sw_cpu_new(3, SW_DTYPE_FLOAT32, 1, 0, &cpu))
        bail_out(sw_errmsg());
    sw_tensor *t = tensor_on(c, 3), *out = NULL;
    sw_move_request *r = NULL;
    sw_set_grad_enabled(1);
    sw_status st = sw_move_async(t, cpu, &r);
    sw_set_grad_enabled(0);
    expect_ok(st, "move_async through a completion");
    ok(A.owned_prepare, "both carriers are owned before prepare runs");
    ok(A.refused_elsewhere, "and refuse other threads while it runs");
    ok(A.grad_prepare == 0 && A.grad_submit == 0,
       "prepare and submit run with the graph off");
    ok(pthread_equal(A.submitter, pthread_self()),
       "submit runs on the submitting thread");
    ok(!sw_move_request_done(r), "move_async returned without waiting");
    wait_entered();
    ok(sw_carrier_is_owned(c) && sw_carrier_is_owned(cpu),
       "both stay owned while the completion is pending");
    is_int(A.finished, 0, "the prepared work lives until the completion");
    gate(1);
    expect_ok(sw_move_request_wait(r, &out), "the outcome");
    ok(!pthread_equal(A.waiter, pthread_self()),
       "the completion was waited on another thread");
    ok(A.grad_wait == 0, "with the graph off");
    ok(A.source_live, "the source was live during the wait");
    ok(sw_carrier_is_released(c), "released after success");
    ok(!sw_carrier_is_owned(cpu) && sw_carrier_is_mutable(cpu),
       "the destination is free again");
    ok(((float *)sw_cpu_data(cpu))[2] == 5.0f, "with the values");
    ok(sw_tensor_autograd_ctx(out) != NULL,
       "recorded under the submitter's mode");
    ok(sw_move_request_host_error(r) == NULL, "no host error");
    is_int(A.finished, 1, "finished once");
    is_int(A.completions_dropped, 1, "the completion dropped once");
    sw_tensor_unref(out);
    out = NULL;
    sw_move_request_unref(r);
    sw_tensor_unref(t);
    sw_carrier_unref(c);
    sw_carrier_unref(cpu);

    /* A failing wait: the handle's outcome, with its error object. */
    reset_async();
    A.fail_wait = 1;
    c = make(TAG(7), 2, 1);
    if (sw_cpu_new(2, SW_DTYPE_FLOAT32, 1, 0, &cpu))
        bail_out(sw_errmsg());
    t = tensor_on(c, 2);
    r = NULL;
    st = sw_move_async(t, cpu, &r);
    expect_ok(st, "a move whose completion fails");
    gate(1);
    st = sw_move_request_wait(r, &out);
    expect_fail(st, SW_ERUNTIME, "the device went away", "its outcome");
    ok(sw_move_request_host_error(r) == &error_token,
       "the handed-over error object");
    ok(!sw_carrier_is_released(c) && !sw_carrier_is_owned(c) &&
           !sw_carrier_is_owned(cpu) && sw_carrier_is_mutable(cpu),
       "the source is live, neither is owned");
    sw_move_request_unref(r);
    sw_move_wait_idle(); /* the executor lets go of its reference too */
    is_int(A.errors_dropped, 1, "the error object goes with the request");
    sw_tensor_unref(t);
    sw_carrier_unref(c);
    sw_carrier_unref(cpu);

    /* A failing submit: a request, whose outcome it is. */
    reset_async();
    A.fail_submit = 1;
    gate(1);
    c = make(TAG(7), 2, 1);
    if (sw_cpu_new(2, SW_DTYPE_FLOAT32, 1, 0, &cpu))
        bail_out(sw_errmsg());
    t = tensor_on(c, 2);
    r = NULL;
    st = sw_move_async(t, cpu, &r);
    expect_ok(st, "a move whose submit fails has a request");
    ok(sw_move_request_done(r), "already done");
    st = sw_move_request_wait(r, NULL);
    expect_fail(st, SW_ERUNTIME, "submit failed", "its outcome");
    ok(!sw_carrier_is_released(c) && !sw_carrier_is_owned(c) &&
           !sw_carrier_is_owned(cpu),
       "the carriers are as they were");
    is_int(A.finished, 1, "the work is finished");
    sw_move_request_unref(r);

    /* A failing prepare comes before submission: no request. */
    reset_async();
    A.fail_prepare = 1;
    r = NULL;
    st = sw_move_async(t, cpu, &r);
    expect_fail(st, SW_EVALUE, "prepare refused the layout",
                "a failing prepare fails the call");
    ok(r == NULL, "and makes no request");
    ok(!sw_carrier_is_owned(c) && !sw_carrier_is_owned(cpu),
       "and leaves nothing owned");

    /* Without a completion the work is complete at submission. */
    reset_async();
    A.with_completion = 0;
    st = sw_move_async(t, cpu, &r);
    expect_ok(st, "a submit with no completion");
    ok(sw_move_request_done(r), "is done at once");
    sw_move_request_unref(r);
    sw_tensor_unref(t);
    sw_carrier_unref(c);
    sw_carrier_unref(cpu);
    sw_move_wait_idle();

    /* Allocation failures anywhere in a recorded move through a
     * completion: a clean failure or success, nothing left owned. */
    reset_async();
    gate(1);
    int runs = 0, clean = 1;
    sw_set_grad_enabled(1);
    for (int64_t n = 0; n < 200; ++n) {
        sw_carrier *fc = make(TAG(7), 2, 1), *fd = NULL;
        if (sw_cpu_new(2, SW_DTYPE_FLOAT32, 1, 0, &fd))
            bail_out(sw_errmsg());
        sw_tensor *ft = tensor_on(fc, 2), *fo = NULL;
        sw_move_request *fr = NULL;
        sw_debug_fail_alloc_after(n);
        st = sw_move_async(ft, fd, &fr);
        if (!st)
            st = sw_move_request_wait(fr, &fo);
        sw_debug_fail_alloc_after(-1);
        sw_move_wait_idle();
        runs++;
        if (st) {
            clean &= st == SW_ENOMEM || strlen(sw_errmsg()) > 0;
            clean &= !sw_carrier_is_released(fc) && !sw_carrier_is_owned(fc) &&
                     !sw_carrier_is_owned(fd) && sw_carrier_is_mutable(fd);
            sw_clear_error();
        }
        sw_tensor_unref(fo);
        sw_move_request_unref(fr);
        sw_tensor_unref(ft);
        sw_carrier_unref(fc);
        sw_carrier_unref(fd);
        if (!st)
            break;
    }
    sw_set_grad_enabled(0);
    ok(clean && runs > 1,
       "every allocation failure of an asynchronous route move is clean (%d "
       "runs)",
       runs);
    sw_set_grad_enabled(grad);
    sw_capabilities_forget(TAG(7));
    leak_check(base, "asynchronous routes");
}

static void test_memory(void) {
    int64_t base = sw_debug_live_allocs();
    sw_carrier_definition d = definition("Oom");
    int64_t n = 0;
    sw_status st;
    do {
        sw_debug_fail_alloc_after(n++);
        st = sw_carrier_define(TAG(6), &d);
        sw_debug_fail_alloc_after(-1);
        if (st)
            is_int(st, SW_ENOMEM, "allocation %lld fails cleanly",
                   (long long)n - 1);
        sw_clear_error();
    } while (st);
    ok(sw_carrier_has_definition(TAG(6)), "defined once memory allows");
    int dropped = K.dropped;
    sw_capabilities_forget(TAG(6));
    ok(!sw_carrier_has_definition(TAG(6)), "forgetting drops the definition");
    is_int(K.dropped, dropped + 1, "and its ctx");
    leak_check(base, "define and forget");
}

int main(void) {
    test_registration();
    test_construction();
    test_access();
    test_moves();
    test_async_routes();
    test_memory();
    return done_testing();
}
