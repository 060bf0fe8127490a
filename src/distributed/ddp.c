/*
 * Data-parallel training over the collectives (distributed.h): gradient
 * hooks copy each parameter's final gradient into its bucket, full
 * buckets are averaged across processes while the reverse pass goes on,
 * and the last hook of a pass waits for them and writes the means back.
 *
 * Buckets launch strictly in their order (bucket k after bucket k - 1),
 * so every process submits the same reductions in the same sequence even
 * if its hooks fire in another order.
 */
#include <pthread.h>
#include <string.h>

#include "carrier/internal.h"
#include "layout/internal.h"
#include "strideweave/distributed.h"
#include "tensor/internal.h"

typedef struct bucket {
    int32_t first, count; /* parameters [first, first + count) in order */
    int32_t reported;
    sw_carrier *carrier; /* CPU Float32, the bucket's elements */
    sw_tensor *flat;     /* all of it, 1-D */
    sw_dist_work *work;  /* the reduction in flight, or NULL */
} bucket;

typedef struct hook_ctx {
    struct sw_dist_ddp *d;
    int32_t index; /* in bucket order */
} hook_ctx;

struct sw_dist_ddp {
    pthread_mutex_t mu;
    int32_t n;
    sw_tensor **params; /* counted, bucket order: last given first */
    sw_tensor **slices; /* counted: parameter i's part of its bucket */
    int32_t *bucket_of;
    int64_t *hook_ids;
    hook_ctx *ctx;
    unsigned char *reported;
    int32_t nbuckets, pending, next_launch;
    bucket *b;
    int sync;
};

#define DEFAULT_BUCKET_BYTES ((int64_t)25 << 20)

/* Launches every ready bucket whose predecessors have launched. */
static sw_status launch_ready(sw_dist_ddp *d) {
    sw_status st = SW_OK;
    while (!st && d->next_launch < d->nbuckets) {
        bucket *b = &d->b[d->next_launch];
        if (b->reported < b->count)
            break;
        st = sw_dist_all_reduce(b->flat, SW_DIST_MEAN, &b->work);
        d->next_launch++;
    }
    return st;
}

/* Waits for every launched reduction; on success writes the means into
 * the parameters' gradients. Leaves the pass state clean either way. */
static sw_status complete(sw_dist_ddp *d, int write) {
    sw_status st = SW_OK;
    for (int32_t k = 0; k < d->nbuckets; ++k) {
        bucket *b = &d->b[k];
        if (b->work) {
            sw_status w = sw_dist_work_wait(b->work);
            if (!st)
                st = w;
            sw_dist_work_unref(b->work);
            b->work = NULL;
        }
        b->reported = 0;
    }
    for (int32_t i = 0; i < d->n && !st && write; ++i) {
        sw_tensor *g = d->params[i]->grad;
        st = sw_carrier_scatter(g->carrier, d->slices[i], g, g->layout, 0);
    }
    memset(d->reported, 0, (size_t)d->n);
    d->pending = d->n;
    d->next_launch = 0;
    return st;
}

static sw_status on_grad(sw_tensor *t, void *vctx) {
    hook_ctx *hc = vctx;
    sw_dist_ddp *d = hc->d;
    int32_t i = hc->index;
    pthread_mutex_lock(&d->mu);
    sw_status st = SW_OK;
    if (!d->sync)
        goto done;
    if (d->reported[i]) {
        st = sw_fail(SW_ERUNTIME,
                     "DistributedDataParallel: a parameter received its "
                     "gradient again before the previous pass's gradients "
                     "were averaged: %d parameter(s) got no gradient in that "
                     "pass (every parameter must take part in the loss; "
                     "reset() after a failed pass)",
                     (int)d->pending);
        goto done;
    }
    bucket *b = &d->b[d->bucket_of[i]];
    sw_tensor *slice = d->slices[i];
    st = sw_carrier_scatter(b->carrier, t->grad, slice, slice->layout, 0);
    if (st)
        goto done;
    d->reported[i] = 1;
    d->pending--;
    b->reported++;
    st = launch_ready(d);
    if (!st && d->pending == 0)
        st = complete(d, 1);
done:
    pthread_mutex_unlock(&d->mu);
    return st;
}

static sw_status check_params(sw_tensor *const *params, int32_t n) {
    if (n <= 0 || !params)
        return sw_fail(SW_EVALUE,
                       "DistributedDataParallel needs at least one parameter");
    for (int32_t i = 0; i < n; ++i) {
        sw_tensor *p = params[i];
        if (!p)
            return sw_fail(SW_ETYPE, "parameter %d is not a tensor", (int)i);
        if (!sw_carrier_is_cpu(p->carrier) ||
            sw_carrier_dtype(p->carrier) != SW_DTYPE_FLOAT32)
            return sw_fail(SW_ETYPE,
                           "DistributedDataParallel: parameter %d must be a "
                           "CPU Float32 tensor",
                           (int)i);
        if (p->ctx || !sw_tensor_is_differentiable(p))
            return sw_fail(SW_EVALUE,
                           "DistributedDataParallel: parameter %d must be a "
                           "leaf that requires gradients",
                           (int)i);
        for (int32_t j = 0; j < i; ++j)
            if (params[j] == p)
                return sw_fail(SW_EVALUE,
                               "DistributedDataParallel: parameter %d is "
                               "given twice",
                               (int)i);
    }
    return SW_OK;
}

static void ddp_free(sw_dist_ddp *d) {
    for (int32_t i = 0; i < d->n; ++i) {
        if (d->hook_ids && d->hook_ids[i])
            sw_tensor_remove_grad_hook(d->params[i], d->hook_ids[i]);
    }
    /* No hook runs from here on. */
    if (d->b)
        complete(d, 0);
    for (int32_t i = 0; i < d->n; ++i) {
        if (d->params)
            sw_tensor_unref(d->params[i]);
        if (d->slices)
            sw_tensor_unref(d->slices[i]);
    }
    for (int32_t k = 0; d->b && k < d->nbuckets; ++k) {
        sw_tensor_unref(d->b[k].flat);
        sw_carrier_unref(d->b[k].carrier);
    }
    sw_free(d->params);
    sw_free(d->slices);
    sw_free(d->bucket_of);
    sw_free(d->hook_ids);
    sw_free(d->ctx);
    sw_free(d->reported);
    sw_free(d->b);
    pthread_mutex_destroy(&d->mu);
    sw_free(d);
}

/* The compact column-major layout of l's shape. */
static sw_status compact_of(const sw_layout *l, sw_layout **out) {
    sw_lb b;
    sw_lb_init(&b);
    sw_lb_view(&b, sw_lview_of(l));
    return sw_lb_finish_compact(&b, out);
}

static sw_status make_buckets(sw_dist_ddp *d, int64_t bucket_bytes) {
    int64_t cap = bucket_bytes > 0 ? bucket_bytes : DEFAULT_BUCKET_BYTES;
    /* Count first, then build. */
    int32_t nb = 0;
    int64_t bytes = 0;
    for (int32_t i = 0; i < d->n; ++i) {
        int64_t size = d->params[i]->layout->size * 4;
        if (i == 0 || bytes + size > cap) {
            nb++;
            bytes = 0;
        }
        bytes += size;
        d->bucket_of[i] = nb - 1;
    }
    d->b = sw_calloc((size_t)nb, sizeof *d->b);
    if (!d->b)
        return sw_oom();
    d->nbuckets = nb;
    for (int32_t i = 0; i < d->n; ++i) {
        bucket *b = &d->b[d->bucket_of[i]];
        if (!b->count)
            b->first = i;
        b->count++;
    }
    sw_status st = SW_OK;
    for (int32_t k = 0; k < nb && !st; ++k) {
        bucket *b = &d->b[k];
        int64_t elems = 0;
        for (int32_t i = b->first; i < b->first + b->count; ++i)
            elems += d->params[i]->layout->size;
        sw_layout *flat = NULL;
        st = sw_cpu_new(elems, SW_DTYPE_FLOAT32, 1, 0, &b->carrier);
        if (!st)
            st = sw_layout_leaf(elems, 1, &flat);
        if (!st)
            st = sw_tensor_new(b->carrier, 0, flat, &b->flat);
        sw_layout_unref(flat);
        int64_t at = 0;
        for (int32_t i = b->first; i < b->first + b->count && !st; ++i) {
            sw_layout *l = NULL;
            st = compact_of(d->params[i]->layout, &l);
            if (!st)
                st = sw_tensor_new(b->carrier, at, l, &d->slices[i]);
            sw_layout_unref(l);
            at += d->params[i]->layout->size;
        }
    }
    return st;
}

sw_status sw_dist_ddp_new(sw_tensor *const *params, int32_t n,
                          int64_t bucket_bytes, sw_dist_ddp **out) {
    if (!out)
        return sw_fail(SW_ETYPE, "DistributedDataParallel needs an out slot");
    sw_status st = check_params(params, n);
    if (!st && !sw_dist_initialized())
        st = sw_dist_world_size(NULL); /* the not-built/not-initialised text */
    if (st)
        return st;
    sw_dist_ddp *d = sw_calloc(1, sizeof *d);
    if (!d)
        return sw_oom();
    pthread_mutex_init(&d->mu, NULL);
    d->n = n;
    d->sync = 1;
    d->pending = n;
    d->params = sw_calloc((size_t)n, sizeof *d->params);
    d->slices = sw_calloc((size_t)n, sizeof *d->slices);
    d->bucket_of = sw_calloc((size_t)n, sizeof *d->bucket_of);
    d->hook_ids = sw_calloc((size_t)n, sizeof *d->hook_ids);
    d->ctx = sw_calloc((size_t)n, sizeof *d->ctx);
    d->reported = sw_calloc((size_t)n, 1);
    if (!d->params || !d->slices || !d->bucket_of || !d->hook_ids || !d->ctx ||
        !d->reported) {
        ddp_free(d);
        return sw_oom();
    }
    /* Bucket order: the last parameter first, whose gradient a reverse
     * pass usually finishes first. */
    for (int32_t i = 0; i < n; ++i)
        d->params[i] = sw_tensor_retain(params[n - 1 - i]);
    st = make_buckets(d, bucket_bytes);
    /* Every process starts from rank 0's values. */
    sw_dist_work **works = st ? NULL : sw_calloc((size_t)n, sizeof *works);
    if (!st && !works)
        st = sw_oom();
    for (int32_t i = 0; i < n && !st; ++i)
        st = sw_dist_broadcast(d->params[i], 0, &works[i]);
    for (int32_t i = 0; works && i < n; ++i) {
        if (works[i]) {
            sw_status w = sw_dist_work_wait(works[i]);
            if (!st)
                st = w;
            sw_dist_work_unref(works[i]);
        }
    }
    sw_free(works);
    for (int32_t i = 0; i < n && !st; ++i) {
        d->ctx[i].d = d;
        d->ctx[i].index = i;
        st = sw_tensor_add_grad_hook(d->params[i], on_grad, &d->ctx[i], NULL,
                                     &d->hook_ids[i]);
    }
    if (st) {
        ddp_free(d);
        return st;
    }
    *out = d;
    return SW_OK;
}

int32_t sw_dist_ddp_pending(const sw_dist_ddp *d) {
    if (!d)
        return 0;
    pthread_mutex_lock((pthread_mutex_t *)&d->mu);
    int32_t n = d->pending == d->n ? 0 : d->pending;
    pthread_mutex_unlock((pthread_mutex_t *)&d->mu);
    return n;
}

int sw_dist_ddp_reported(const sw_dist_ddp *d, int32_t i) {
    if (!d || i < 0 || i >= d->n)
        return 0;
    pthread_mutex_lock((pthread_mutex_t *)&d->mu);
    /* i counts in the order given; the buckets keep the reverse. */
    int r = d->reported[d->n - 1 - i];
    pthread_mutex_unlock((pthread_mutex_t *)&d->mu);
    return r;
}

int32_t sw_dist_ddp_buckets(const sw_dist_ddp *d) {
    return d ? d->nbuckets : 0;
}

void sw_dist_ddp_reset(sw_dist_ddp *d) {
    if (!d)
        return;
    pthread_mutex_lock(&d->mu);
    complete(d, 0);
    pthread_mutex_unlock(&d->mu);
}

void sw_dist_ddp_set_sync(sw_dist_ddp *d, int on) {
    if (!d)
        return;
    pthread_mutex_lock(&d->mu);
    d->sync = on != 0;
    pthread_mutex_unlock(&d->mu);
}

void sw_dist_ddp_unref(sw_dist_ddp *d) {
    if (d)
        ddp_free(d);
}
