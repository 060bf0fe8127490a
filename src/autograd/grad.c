/*
 * Autograd: grad mode, gradient bookkeeping on tensors, and the iterative
 * reverse pass.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <string.h>

#include "carrier/defined.h"
#include "carrier/internal.h"
#include "layout/internal.h"
#include "op/internal.h"
#include "tensor/internal.h"
#include "strideweave/tiled.h"

/* -------------------------------------------------------------- grad mode */

/* Extern for the per-call paths that turn it off around a kernel
 * (op/internal.h). */
_Thread_local int sw_grad_disabled_tls;

int sw_grad_enabled(void) {
    return !sw_grad_disabled_tls;
}

void sw_set_grad_enabled(int enabled) {
    sw_grad_disabled_tls = !enabled;
}

/* ----------------------------------------------------- tensor bookkeeping */

sw_op *sw_tensor_autograd_ctx(const sw_tensor *t) {
    return t->ctx;
}

static sw_status not_differentiable(const char *what) {
    return sw_fail(SW_ERUNTIME,
                   "%s is not available for non-differentiable tensors", what);
}

sw_status sw_tensor_set_autograd_ctx(sw_tensor *t, sw_op *op) {
    if (op && !sw_tensor_is_differentiable(t))
        return not_differentiable("autograd_ctx");
    sw_op_retain(op);
    sw_op_unref(t->ctx);
    t->ctx = op;
    return SW_OK;
}

sw_tensor *sw_tensor_grad(const sw_tensor *t) {
    return t->grad;
}

/*
 * Gradient slots are shared between threads: two reverse passes may
 * accumulate into one leaf, and a .grad write may meet a pass. Every
 * change of t->grad (and every accumulation into it) holds the lock of
 * t's stripe. Locks are recursive: a host-language hook running inside an
 * accumulation may set a gradient itself.
 */
#define GRAD_STRIPES 64
static pthread_mutex_t grad_locks[GRAD_STRIPES];
static pthread_once_t grad_locks_once = PTHREAD_ONCE_INIT;

static void grad_locks_init(void) {
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
    for (int i = 0; i < GRAD_STRIPES; ++i)
        pthread_mutex_init(&grad_locks[i], &a);
    pthread_mutexattr_destroy(&a);
}

static pthread_mutex_t *grad_lock_of(const sw_tensor *t) {
    pthread_once(&grad_locks_once, grad_locks_init);
    uint64_t x = (uint64_t)(uintptr_t)t;
    x ^= x >> 29;
    x *= UINT64_C(0xbf58476d1ce4e5b9);
    return &grad_locks[(x >> 32) % GRAD_STRIPES];
}

sw_status sw_tensor_set_grad(sw_tensor *t, sw_tensor *grad) {
    if (grad && !sw_tensor_is_differentiable(t))
        return not_differentiable("grad");
    sw_tensor_retain(grad);
    pthread_mutex_t *lock = grad_lock_of(t);
    pthread_mutex_lock(lock);
    sw_tensor *old = t->grad;
    t->grad = grad;
    pthread_mutex_unlock(lock);
    sw_tensor_unref(old);
    return SW_OK;
}

sw_status sw_tensor_retain_grad(sw_tensor *t, int retain) {
    if (!sw_tensor_is_differentiable(t))
        return not_differentiable("retain_grad");
    t->retain_grad = retain != 0;
    return SW_OK;
}

int sw_tensor_retains_grad(const sw_tensor *t) {
    return t->retain_grad;
}

sw_status sw_tensor_set_requires_grad(sw_tensor *t, int on) {
    if (!t)
        return sw_fail(SW_ETYPE, "tensor must be a Tensor");
    if (t->ctx)
        return sw_fail(SW_ERUNTIME,
                       "requires_grad can only be changed on a leaf tensor "
                       "(one that no recorded operation made); detach() "
                       "gives a leaf over the same storage");
    if (on && (t->planes ||
               !sw_dtype_is_differentiable(sw_carrier_dtype(t->carrier))))
        return sw_fail(SW_ERUNTIME,
                       "only tensors of a differentiable dtype (Float32, "
                       "Floating) can require gradients");
    t->constant = !on;
    return SW_OK;
}

void sw_constant_results(int32_t nargs, const sw_arg *args, int32_t n,
                         sw_tensor *const *results) {
    if (!sw_grad_enabled())
        return;
    int constant = 0;
    for (int32_t i = 0; i < nargs && !constant; ++i)
        constant = args[i].kind == SW_ARG_TENSOR && args[i].as.tensor &&
                   args[i].as.tensor->constant;
    for (int32_t k = 0; constant && k < n; ++k) {
        sw_tensor *t = results[k];
        if (t && !t->ctx && sw_tensor_is_differentiable(t))
            t->constant = 1;
    }
}

/* ------------------------------------------------------------ grad hooks */

typedef struct sw_grad_hook {
    struct sw_grad_hook *next;
    sw_grad_hook_fn fn;
    void *ctx;
    void (*release)(void *);
    int64_t id;
} sw_grad_hook;

static atomic_int_fast64_t next_hook_id = 1;

sw_status sw_tensor_add_grad_hook(sw_tensor *t, sw_grad_hook_fn fn, void *ctx,
                                  void (*release)(void *), int64_t *id) {
    if (!t)
        return sw_fail(SW_ETYPE, "grad hook needs a tensor");
    if (!fn)
        return sw_fail(SW_ETYPE, "grad hook needs a function");
    if (!sw_tensor_is_differentiable(t))
        return not_differentiable("grad hook");
    sw_grad_hook *h = sw_malloc(sizeof *h);
    if (!h)
        return sw_oom();
    h->next = NULL;
    h->fn = fn;
    h->ctx = ctx;
    h->release = release;
    h->id = atomic_fetch_add(&next_hook_id, 1);
    pthread_mutex_t *lock = grad_lock_of(t);
    pthread_mutex_lock(lock);
    sw_grad_hook **tail = &t->hooks;
    while (*tail)
        tail = &(*tail)->next;
    *tail = h;
    pthread_mutex_unlock(lock);
    if (id)
        *id = h->id;
    return SW_OK;
}

sw_status sw_tensor_remove_grad_hook(sw_tensor *t, int64_t id) {
    if (!t)
        return sw_fail(SW_ETYPE, "grad hook needs a tensor");
    pthread_mutex_t *lock = grad_lock_of(t);
    pthread_mutex_lock(lock);
    sw_grad_hook **p = &t->hooks;
    while (*p && (*p)->id != id)
        p = &(*p)->next;
    sw_grad_hook *h = *p;
    if (h)
        *p = h->next;
    pthread_mutex_unlock(lock);
    if (!h)
        return sw_fail(SW_EKEY, "no grad hook with this id");
    if (h->release)
        h->release(h->ctx);
    sw_free(h);
    return SW_OK;
}

void sw_grad_hooks_free(sw_tensor *t) {
    /* The last reference is gone: no pass can run a hook of t. */
    for (sw_grad_hook *h = t->hooks, *next; h; h = next) {
        next = h->next;
        if (h->release)
            h->release(h->ctx);
        sw_free(h);
    }
    t->hooks = NULL;
}

/* Runs t's hooks; the caller holds t's gradient lock. */
static sw_status run_grad_hooks(sw_tensor *t) {
    sw_status st = SW_OK;
    for (sw_grad_hook *h = t->hooks; h && !st; h = h->next)
        st = h->fn(t, h->ctx);
    return st;
}

/* ----------------------------------------------------- gradient arithmetic */

/* A fresh tensor like `like` (its carrier's class and dtype, `layout`)
 * holding the logical values of src. */
static sw_status copy_like(sw_carrier *like, sw_layout *layout,
                           const sw_tensor *src, sw_tensor **out) {
    /* A TiledEvictable takes values of its primary's class in bulk. */
    int done = 0;
    sw_status st = sw_carrier_is_tiled(like)
                       ? sw_tiled_copy_of(like, layout, src, out, &done)
                       : SW_OK;
    if (st || done)
        return st;
    sw_carrier *c = NULL;
    sw_tensor *t = NULL;
    st = sw_carrier_allocate_like(like, layout->cosize, 1, SW_DTYPE_COUNT, 0,
                                  &c);
    if (!st)
        st = sw_tensor_new(c, 0, layout, &t);
    if (!st)
        st = sw_carrier_scatter(c, src, t, layout, 0);
    sw_carrier_unref(c);
    if (st) {
        sw_tensor_unref(t);
        return st;
    }
    *out = t;
    return SW_OK;
}

static int same_class(const sw_carrier *a, const sw_carrier *b) {
    return a->cls == b->cls && a->dispatch_tag == b->dispatch_tag;
}

/* a + b as a fresh, unrecorded tensor on a's carrier class. */
static sw_status add_tensors(sw_tensor *a, sw_tensor *b, sw_tensor **out) {
    sw_tensor *bb = NULL, *r = NULL;
    sw_op *op = NULL;
    sw_status st = SW_OK;
    if (same_class(a->carrier, b->carrier))
        bb = sw_tensor_retain(b);
    else if (sw_carrier_is_tiled(b->carrier) && sw_tiled_primary(b->carrier) &&
             sw_carrier_class_tag(sw_tiled_primary(b->carrier)) ==
                 sw_carrier_class_tag(a->carrier))
        st = sw_tiled_densify(b, &bb); /* in bulk, on a's class */
    else
        st = copy_like(a->carrier, b->layout, b, &bb);
    if (!st)
        st = sw_carrier_dispatch_op(a->carrier, "add", &op);
    if (!st) {
        sw_arg args[2] = {sw_arg_tensor(a), sw_arg_tensor(bb)};
        st = sw_op_execute_lowered(op, 2, args, &r);
    }
    sw_op_unref(op);
    sw_tensor_unref(bb);
    if (st)
        return st;
    *out = r;
    return SW_OK;
}

/*
 * Non-zero when the gradient g, which the pass holds the only reference
 * to, can itself become t's first .grad: it is then exactly the detached
 * copy that copy_like would make (same carrier class and dtype, offset 0,
 * t's layout over a carrier of its cosize, every element of which the
 * layout reaches once, so no stale element differs from a copy's zero),
 * and nothing else can see it (one reference to the tensor and to its
 * CPU or TiledEvictable carrier, no host peer, no pin, owner or move, no graph
 * links, and t a leaf). A parameter-sized gradient then costs no second
 * allocation and copy: a 4096 x 4096 weight's copy took about a third of a
 * training step.
 */
static int can_adopt(const sw_tensor *t, sw_tensor *g) {
    sw_carrier *c = g->carrier;
    /* Only a leaf: a retained non-leaf gradient also goes on down the
     * graph, where an operation's backward may keep it. */
    if (t->ctx || atomic_load(&g->obj.ref) != 1 || g->obj.peer || g->ctx ||
        g->grad || g->retain_grad || g->offset != 0 ||
        !sw_layout_equal(g->layout, t->layout))
        return 0;
    /* CPU storage, or a TiledEvictable (whose tile states a copy would
     * lose: every tile would become primary). */
    int plain = sw_carrier_is_cpu(c) && sw_carrier_is_cpu(t->carrier);
    int tiled = sw_carrier_is_tiled(c) && sw_carrier_is_tiled(t->carrier);
    if (!(plain || tiled) || !same_class(c, t->carrier) ||
        c->dtype != t->carrier->dtype || atomic_load(&c->obj.ref) != 1 ||
        c->obj.peer || atomic_load(&c->life) != 0 || c->owner_token != 0 ||
        atomic_load(&c->move_pending) != 0 || !sw_carrier_is_mutable(c) ||
        sw_carrier_size(c) != t->layout->cosize ||
        t->layout->size != t->layout->cosize)
        return 0;
    int injective = 0;
    if (sw_layout_is_injective(t->layout, &injective) != SW_OK) {
        sw_clear_error();
        return 0;
    }
    return injective;
}

/* .grad += g: a detached copy the first time (g itself when nothing else
 * can see it), an in-place sum later, under t's gradient lock (see
 * sw_tensor_set_grad). */
static sw_status accumulate_grad(sw_tensor *t, sw_tensor *g) {
    pthread_mutex_t *lock = grad_lock_of(t);
    pthread_mutex_lock(lock);
    sw_status st = SW_OK;
    if (!t->grad && can_adopt(t, g)) {
        t->grad = sw_tensor_retain(g);
    } else if (!t->grad) {
        sw_tensor *fresh = NULL;
        st = copy_like(t->carrier, t->layout, g, &fresh);
        if (!st)
            t->grad = fresh;
    } else {
        sw_tensor *sum = NULL;
        st = add_tensors(t->grad, g, &sum);
        if (!st)
            st = sw_carrier_scatter(t->grad->carrier, sum, t->grad,
                                    t->grad->layout, 0);
        sw_tensor_unref(sum);
    }
    if (!st)
        st = run_grad_hooks(t);
    pthread_mutex_unlock(lock);
    return st;
}

/* ------------------------------------------------------------ pointer maps */

/* An open-addressing map from pointers to int32 slots. */
typedef struct pmap {
    const void **keys;
    int32_t *vals;
    int64_t cap, n;
} pmap;

static uint64_t hash_ptr(const void *p) {
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= UINT64_C(0xff51afd7ed558ccd);
    x ^= x >> 33;
    return x;
}

static int64_t pmap_find(const pmap *m, const void *k) {
    if (!m->cap)
        return -1;
    for (uint64_t i = hash_ptr(k) & (uint64_t)(m->cap - 1);;
         i = (i + 1) & (uint64_t)(m->cap - 1)) {
        if (m->keys[i] == k)
            return m->vals[i];
        if (!m->keys[i])
            return -1;
    }
}

static sw_status pmap_put(pmap *m, const void *k, int32_t v) {
    if (2 * (m->n + 1) > m->cap) {
        pmap g = {NULL, NULL, m->cap ? 2 * m->cap : 64, 0};
        g.keys = sw_calloc((size_t)g.cap, sizeof *g.keys);
        g.vals = sw_malloc((size_t)g.cap * sizeof *g.vals);
        if (!g.keys || !g.vals) {
            sw_free(g.keys);
            sw_free(g.vals);
            return sw_oom();
        }
        for (int64_t i = 0; i < m->cap; ++i)
            if (m->keys[i])
                pmap_put(&g, m->keys[i], m->vals[i]);
        sw_free(m->keys);
        sw_free(m->vals);
        *m = g;
    }
    uint64_t i = hash_ptr(k) & (uint64_t)(m->cap - 1);
    while (m->keys[i] && m->keys[i] != k)
        i = (i + 1) & (uint64_t)(m->cap - 1);
    if (!m->keys[i])
        m->n++;
    m->keys[i] = k;
    m->vals[i] = v;
    return SW_OK;
}

static void pmap_free(pmap *m) {
    sw_free(m->keys);
    sw_free(m->vals);
}

/* A growable array of fixed-size items. */
typedef struct vec {
    void *data;
    int64_t n, cap;
    size_t item;
} vec;

static void *vec_push(vec *v) {
    if (v->n == v->cap) {
        int64_t cap = v->cap ? 2 * v->cap : 32;
        void *d = sw_realloc(v->data, (size_t)cap * v->item);
        if (!d)
            return NULL;
        v->data = d;
        v->cap = cap;
    }
    return (char *)v->data + (v->n++) * v->item;
}

/* ------------------------------------------------------------ the pass */

typedef struct record {
    sw_tensor *tensor;
    int64_t consumers;
    sw_tensor *pending;
} record;

typedef struct ready {
    sw_op *op;
    sw_tensor *grad; /* owned, may be NULL */
} ready;

typedef struct pass {
    pmap seen_ops, recs_of;
    vec ops, recs, stack;
} pass;

/* Whether input i of op is the first occurrence of that tensor. */
static int first_occurrence(const sw_op *op, int32_t i) {
    for (int32_t j = 0; j < i; ++j)
        if (op->inputs[j] == op->inputs[i])
            return 0;
    return 1;
}

static sw_status discover(pass *p, sw_op *root) {
    sw_status st = pmap_put(&p->seen_ops, root, 0);
    sw_op **slot = st ? NULL : vec_push(&p->ops);
    if (!slot)
        return st ? st : sw_oom();
    *slot = root;
    /* p->ops doubles as the work list: entries past `next` are unvisited. */
    for (int64_t next = 0; next < p->ops.n; ++next) {
        sw_op *op = ((sw_op **)p->ops.data)[next];
        for (int32_t i = 0; i < op->ninputs; ++i) {
            sw_tensor *t = op->inputs[i];
            if (!sw_tensor_is_differentiable(t) || !first_occurrence(op, i))
                continue;
            int64_t r = pmap_find(&p->recs_of, t);
            if (r < 0) {
                record *rec = vec_push(&p->recs);
                if (!rec)
                    return sw_oom();
                rec->tensor = t;
                rec->consumers = 0;
                rec->pending = NULL;
                r = p->recs.n - 1;
                if ((st = pmap_put(&p->recs_of, t, (int32_t)r)))
                    return st;
            }
            ((record *)p->recs.data)[r].consumers++;
            if (t->ctx && pmap_find(&p->seen_ops, t->ctx) < 0) {
                if ((st = pmap_put(&p->seen_ops, t->ctx, 0)))
                    return st;
                sw_op **s = vec_push(&p->ops);
                if (!s)
                    return sw_oom();
                *s = t->ctx;
            }
        }
    }
    return SW_OK;
}

static sw_status push_ready(pass *p, sw_op *op, sw_tensor *grad) {
    ready *r = vec_push(&p->stack);
    if (!r) {
        sw_tensor_unref(grad);
        return sw_oom();
    }
    r->op = op;
    r->grad = grad;
    return SW_OK;
}

/* Adds one backward contribution into the input's pending sum. */
static sw_status contribute(record *rec, sw_tensor *g) {
    if (!sw_layout_equal(g->layout, rec->tensor->layout)) {
        sw_tensor_unref(g);
        return sw_fail(SW_EVALUE,
                       "Tensor gradient layout must match tensor layout");
    }
    if (!rec->pending) {
        rec->pending = g;
        return SW_OK;
    }
    sw_tensor *sum = NULL;
    sw_status st = add_tensors(rec->pending, g, &sum);
    sw_tensor_unref(g);
    if (st)
        return st;
    sw_tensor_unref(rec->pending);
    rec->pending = sum;
    return SW_OK;
}

static sw_status run_one(pass *p, sw_op *op, sw_tensor *g) {
    sw_status st = SW_OK;
    if (g) {
        st = sw_op_validate_input_versions(op);
        if (st)
            return st;
        int32_t n = op->ninputs;
        sw_tensor **grads = sw_calloc((size_t)n + 1, sizeof *grads);
        if (!grads)
            return sw_oom();
        st = sw_op_backward(op, g, n, grads);
        for (int32_t i = 0; i < n; ++i) {
            sw_tensor *gi = grads[i];
            grads[i] = NULL;
            if (st || !gi || !sw_tensor_is_differentiable(op->inputs[i])) {
                sw_tensor_unref(gi);
                continue;
            }
            int64_t r = pmap_find(&p->recs_of, op->inputs[i]);
            st = contribute(&((record *)p->recs.data)[r], gi);
        }
        sw_free(grads);
        if (st)
            return st;
    }
    for (int32_t i = 0; i < op->ninputs && !st; ++i) {
        sw_tensor *t = op->inputs[i];
        if (!sw_tensor_is_differentiable(t) || !first_occurrence(op, i))
            continue;
        record *rec = &((record *)p->recs.data)[pmap_find(&p->recs_of, t)];
        if (--rec->consumers > 0)
            continue;
        sw_tensor *total = rec->pending;
        rec->pending = NULL;
        if (total && (!t->ctx || t->retain_grad))
            st = accumulate_grad(t, total);
        if (!st && t->ctx)
            st = push_ready(p, t->ctx, total);
        else
            sw_tensor_unref(total);
    }
    return st;
}

static sw_status traverse(sw_op *root, sw_tensor *g) {
    pass p;
    memset(&p, 0, sizeof p);
    p.ops.item = sizeof(sw_op *);
    p.recs.item = sizeof(record);
    p.stack.item = sizeof(ready);
    sw_status st = discover(&p, root);
    if (!st)
        st = push_ready(&p, root, sw_tensor_retain(g));
    while (!st && p.stack.n > 0) {
        /* Between nodes, a pass stops for an interrupt request; the
         * gradients accumulated so far stay, as for any failing node. */
        if ((st = sw_check_interrupt()))
            break;
        ready r = ((ready *)p.stack.data)[--p.stack.n];
        st = run_one(&p, r.op, r.grad);
        sw_tensor_unref(r.grad);
    }
    for (int64_t i = 0; i < p.stack.n; ++i)
        sw_tensor_unref(((ready *)p.stack.data)[i].grad);
    for (int64_t i = 0; i < p.recs.n; ++i)
        sw_tensor_unref(((record *)p.recs.data)[i].pending);
    sw_free(p.ops.data);
    sw_free(p.recs.data);
    sw_free(p.stack.data);
    pmap_free(&p.seen_ops);
    pmap_free(&p.recs_of);
    return st;
}

/* One flat top-level mode of extent 1. */
static int exact_scalar(const sw_layout *l) {
    return l->rank == 1 && l->is_leaf && l->size == 1;
}

sw_status sw_tensor_backward(sw_tensor *t, sw_tensor *gradient) {
    sw_status gate = sw_tensor_single(t, SW_ENTRY_BACKWARD);
    if (!gate)
        gate = sw_tensor_single(gradient, SW_ENTRY_BACKWARD);
    if (gate)
        return gate;
    if (!sw_tensor_is_differentiable(t))
        return not_differentiable("backward");
    sw_tensor *g = NULL;
    sw_status st = SW_OK;
    if (!gradient) {
        if (!exact_scalar(t->layout))
            return sw_fail(SW_EVALUE, "Tensor.backward requires a gradient "
                                      "for non-scalar tensors");
        sw_carrier *c = NULL;
        sw_value one = sw_value_i64(1);
        st = sw_carrier_new_like(t->carrier, 1, &one, 1, SW_DTYPE_COUNT, &c);
        if (!st)
            st = sw_tensor_new(c, 0, t->layout, &g);
        sw_carrier_unref(c);
        if (st)
            return st;
    } else {
        if (!sw_layout_equal(gradient->layout, t->layout))
            return sw_fail(SW_EVALUE,
                           "Tensor gradient layout must match tensor layout");
        g = sw_tensor_retain(gradient);
    }
    if (!t->ctx || t->retain_grad)
        st = accumulate_grad(t, g);
    if (!st && t->ctx)
        st = traverse(t->ctx, g);
    sw_tensor_unref(g);
    return st;
}
