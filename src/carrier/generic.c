/*
 * The Generic carrier: host values behind an sw_host_ops vtable. The
 * library's own store holds doubles; the Python binding supplies a store
 * over a Python sequence.
 */
#include <string.h>

#include "carrier/internal.h"
#include "strideweave/capability.h"
#include "op/internal.h"

typedef struct generic_state {
    const sw_host_ops *ops;
    void *store;
    int mutable_;
} generic_state;

static generic_state *gen(sw_carrier *c) {
    return sw_carrier_state(c);
}

static int64_t generic_size(sw_carrier *c) {
    generic_state *g = gen(c);
    return g->store ? g->ops->length(g->store) : 0;
}

static sw_status generic_get(sw_carrier *c, int64_t i, sw_value *out) {
    generic_state *g = gen(c);
    return g->ops->get(g->store, i, out);
}

static sw_status generic_set(sw_carrier *c, int64_t i, const sw_value *v) {
    generic_state *g = gen(c);
    if (!g->ops->set)
        return sw_carrier_fail_immutable();
    return g->ops->set(g->store, i, v);
}

static int generic_is_mutable(sw_carrier *c) {
    return gen(c)->mutable_ && gen(c)->ops->set != NULL;
}

static void generic_release(sw_carrier *c) {
    generic_state *g = gen(c);
    if (g->store)
        g->ops->drop(g->store);
    g->store = NULL;
}

static void generic_destroy(sw_carrier *c) {
    sw_free(gen(c));
}

static sw_status check_generic_dtype(sw_dtype dtype) {
    if (dtype != SW_DTYPE_ANY && dtype != SW_DTYPE_FLOATING)
        return sw_fail(SW_EVALUE,
                       "Generic dtype must be DType.Any or DType.Floating");
    return SW_OK;
}

static sw_status generic_make(const sw_host_ops *ops, int64_t n,
                              const sw_value *values, sw_dtype dtype,
                              int mutable_, sw_carrier **out) {
    sw_status st = check_generic_dtype(dtype);
    if (st)
        return st;
    void *store = NULL;
    st = ops->make(ops, n, values, &store);
    if (st)
        return st;
    st = sw_generic_new(ops, store, dtype, mutable_, out);
    if (st)
        ops->drop(store);
    return st;
}

static sw_status generic_allocate_like(sw_carrier *c, int64_t size,
                                       int mutable_, sw_dtype dtype, int empty,
                                       sw_carrier **out) {
    return generic_make(gen(c)->ops, size, NULL, dtype, mutable_, out);
}

static sw_status generic_new_like(sw_carrier *c, int64_t n,
                                  const sw_value *values, int mutable_,
                                  sw_dtype dtype, sw_carrier **out) {
    return generic_make(gen(c)->ops, n, values, dtype, mutable_, out);
}

/* The reference operations (src/op/generic_ops.c). */
static sw_status generic_dispatch(sw_carrier *c, const sw_op_info *op,
                                  struct sw_op **out) {
    return sw_generic_op_new(op, out);
}

static const sw_carrier_class generic_class = {
    .version = SW_CARRIER_CLASS_VERSION,
    .name = "Generic",
    .size = generic_size,
    .get = generic_get,
    .set = generic_set,
    .is_mutable = generic_is_mutable,
    .release = generic_release,
    .destroy = generic_destroy,
    .allocate_like = generic_allocate_like,
    .new_like = generic_new_like,
    .dispatch = generic_dispatch,
};

sw_status sw_generic_new(const sw_host_ops *ops, void *store, sw_dtype dtype,
                         int mutable_, sw_carrier **out) {
    if (!ops || ops->version != SW_HOST_OPS_VERSION || !ops->length ||
        !ops->get || !ops->make || !ops->drop)
        return sw_fail(SW_EVALUE, "host ops are incomplete or of an "
                                  "unsupported version");
    sw_status st = check_generic_dtype(dtype);
    if (st)
        return st;
    generic_state *g = sw_malloc(sizeof *g);
    if (!g)
        return sw_oom();
    g->ops = ops;
    g->store = store;
    g->mutable_ = mutable_ != 0;
    st = sw_carrier_new(&generic_class, g, dtype, out);
    if (st)
        sw_free(g);
    return st;
}

const sw_carrier_class *sw_generic_class(void) {
    return &generic_class;
}

int sw_carrier_is_generic(const sw_carrier *c) {
    return sw_carrier_get_class(c) == &generic_class;
}

const sw_host_ops *sw_generic_ops(const sw_carrier *c) {
    if (!sw_carrier_is_generic(c))
        return NULL;
    return ((generic_state *)sw_carrier_state(c))->ops;
}

void *sw_generic_store(const sw_carrier *c) {
    if (!sw_carrier_is_generic(c))
        return NULL;
    return ((generic_state *)sw_carrier_state(c))->store;
}

/* ------------------------------------------------------ the double store */

typedef struct doubles {
    int64_t n;
    double v[];
} doubles;

static int64_t doubles_length(void *store) {
    return ((doubles *)store)->n;
}

static sw_status doubles_get(void *store, int64_t i, sw_value *out) {
    *out = sw_value_f64(((doubles *)store)->v[i]);
    return SW_OK;
}

static sw_status doubles_value(const sw_value *v, double *out) {
    switch (v->kind) {
    case SW_VALUE_F64:
        *out = v->as.f;
        return SW_OK;
    case SW_VALUE_I64:
        *out = (double)v->as.i;
        return SW_OK;
    case SW_VALUE_NONE:
        *out = 0.0;
        return SW_OK;
    default:
        return sw_fail(SW_ETYPE, "a store of doubles holds numbers only");
    }
}

static sw_status doubles_set(void *store, int64_t i, const sw_value *v) {
    return doubles_value(v, &((doubles *)store)->v[i]);
}

static sw_status doubles_make(const sw_host_ops *ops, int64_t n,
                              const sw_value *values, void **out) {
    if (n < 0 || (uint64_t)n > (SIZE_MAX - sizeof(doubles)) / sizeof(double))
        return sw_fail(SW_EVALUE, "store size is out of range");
    doubles *d = sw_malloc(sizeof *d + (size_t)n * sizeof(double));
    if (!d)
        return sw_oom();
    d->n = n;
    for (int64_t i = 0; i < n; ++i) {
        sw_status st = values ? doubles_value(&values[i], &d->v[i]) : SW_OK;
        if (!values)
            d->v[i] = 0.0;
        if (st) {
            sw_free(d);
            return st;
        }
    }
    *out = d;
    return SW_OK;
}

static void doubles_drop(void *store) {
    sw_free(store);
}

static const sw_host_ops doubles_ops = {
    .version = SW_HOST_OPS_VERSION,
    .length = doubles_length,
    .get = doubles_get,
    .set = doubles_set,
    .make = doubles_make,
    .drop = doubles_drop,
    .release_value = NULL,
};

const sw_host_ops *sw_host_doubles(void) {
    return &doubles_ops;
}

sw_status sw_generic_new_doubles(int64_t n, const double *values, int mutable_,
                                 sw_carrier **out) {
    if (n > 0 && !values)
        return sw_fail(SW_EVALUE, "values are missing");
    void *store = NULL;
    sw_status st = doubles_make(&doubles_ops, n, NULL, &store);
    if (st)
        return st;
    if (n > 0)
        memcpy(((doubles *)store)->v, values, (size_t)n * sizeof(double));
    st = sw_generic_new(&doubles_ops, store, SW_DTYPE_FLOATING, mutable_, out);
    if (st)
        doubles_drop(store);
    return st;
}
