/*
 * Collective operations over CPU tensors on MPI (distributed.h).
 *
 * One communication thread makes every MPI call of the library: init,
 * the collectives (in submission order, which is the order every process
 * must agree on) and finalisation. A caller validates its arguments,
 * prepares the work (fresh results, ownership of the carriers involved),
 * queues it and either returns its completion or waits for it. The
 * thread stages a tensor whose layout is not its canonical order through
 * one compact buffer, checks that every process made the same call,
 * moves the data, writes results back and records the outcome.
 *
 * Built without MPI (SW_HAVE_MPI 0), the argument checks still run and
 * the calls fail with SW_ENOTIMPL.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "carrier/internal.h"
#include "layout/internal.h"
#include "layout/plan.h"
#include "op/kernels/kcommon.h"
#include "strideweave/distributed.h"
#include "tensor/internal.h"

#ifndef SW_HAVE_MPI
#define SW_HAVE_MPI 0
#endif
#if SW_HAVE_MPI
#include <mpi.h>
#endif

typedef enum kind {
    K_ALL_REDUCE = 1,
    K_BROADCAST,
    K_ALL_GATHER,
    K_REDUCE_SCATTER,
    K_BARRIER,
    K_STOP
} kind;

static const char *const kind_names[] = {
    "",        "all_reduce", "broadcast", "all_gather", "reduce_scatter",
    "barrier", "finalize"};
static const char *const reduce_names[] = {"sum", "mean", "max", "min"};

/* One operand as the communication sees it: a tensor, the canonical
 * layout its elements travel in, and the memory they travel from. */
typedef struct operand {
    sw_tensor *t;         /* counted, NULL when unused */
    sw_layout *canonical; /* counted: the order of the wire */
    int direct;           /* t's own memory is in canonical order */
    int marked;           /* carrier owned by the work, pinned */
} operand;

struct sw_dist_work {
    atomic_int ref;
    struct sw_dist_work *next;
    kind kind;
    sw_dist_reduce op;
    int root;
    sw_dtype dtype;
    int64_t n; /* elements of the input (of one block for gather/scatter) */
    operand in, out; /* out.t == in.t for the in-place collectives */
    char call[160];  /* "all_reduce(Float32 (3,4), sum)" for agreement */
    /* The outcome, under g.mu. */
    int done;
    sw_status status;
    char *message;
};

static struct {
    pthread_mutex_t mu;
    pthread_cond_t queued, finished;
    sw_dist_work *head, *tail;
    int state; /* 0 never started, 1 running, 2 finalised */
    pthread_t thread;
    uintptr_t thread_id;
    int rank, size;
    double timeout;
    int started_mpi;
    /* The thread's start-up outcome. */
    int ready;
    sw_status init_status;
    char init_message[256];
#if SW_HAVE_MPI
    MPI_Comm comm;
#endif
} g = {.mu = PTHREAD_MUTEX_INITIALIZER};

static pthread_once_t conds_once = PTHREAD_ONCE_INIT;

/* The conditions wait on the monotonic clock, so that timeouts ignore
 * changes of the wall clock. */
static void conds_init(void) {
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(&g.queued, &a);
    pthread_cond_init(&g.finished, &a);
    pthread_condattr_destroy(&a);
}

int sw_dist_available(void) {
    return SW_HAVE_MPI;
}

static sw_status not_built(void) {
    return sw_fail(SW_ENOTIMPL,
                   "StrideWeave was built without MPI: install an MPI "
                   "implementation (Open MPI or MPICH, with its development "
                   "files) and rebuild to use strideweave.distributed");
}

static sw_status not_initialized(void) {
    return sw_fail(SW_ERUNTIME, "distributed is not initialised: call "
                                "init() (sw_dist_init) first");
}

/* ----------------------------------------------------------- completions */

static void work_free(sw_dist_work *w) {
    sw_tensor_unref(w->in.t);
    sw_layout_unref(w->in.canonical);
    if (w->out.t != w->in.t)
        sw_tensor_unref(w->out.t);
    sw_layout_unref(w->out.canonical);
    free(w->message);
    sw_free(w);
}

sw_dist_work *sw_dist_work_retain(sw_dist_work *w) {
    if (w)
        atomic_fetch_add(&w->ref, 1);
    return w;
}

void sw_dist_work_unref(sw_dist_work *w) {
    if (w && atomic_fetch_sub(&w->ref, 1) == 1)
        work_free(w);
}

int sw_dist_work_done(sw_dist_work *w) {
    if (!w)
        return 1;
    pthread_mutex_lock(&g.mu);
    int done = w->done;
    pthread_mutex_unlock(&g.mu);
    return done;
}

static sw_status outcome(const sw_dist_work *w) {
    if (!w->status)
        return SW_OK;
    return sw_fail(w->status, "%s", w->message ? w->message : "failed");
}

sw_status sw_dist_work_wait(sw_dist_work *w) {
    if (!w)
        return sw_fail(SW_ETYPE, "wait needs a work");
    pthread_once(&conds_once, conds_init);
    struct timespec until;
    double limit = 0;
    pthread_mutex_lock(&g.mu);
    limit = g.timeout;
    if (limit > 0) {
        clock_gettime(CLOCK_MONOTONIC, &until);
        double whole = floor(limit);
        until.tv_sec += (time_t)whole;
        until.tv_nsec += (long)((limit - whole) * 1e9);
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec += 1;
            until.tv_nsec -= 1000000000L;
        }
    }
    int timed_out = 0;
    while (!w->done && !timed_out) {
        if (limit > 0)
            timed_out =
                pthread_cond_timedwait(&g.finished, &g.mu, &until) == ETIMEDOUT;
        else
            pthread_cond_wait(&g.finished, &g.mu);
    }
    int done = w->done;
    pthread_mutex_unlock(&g.mu);
    if (!done)
        return sw_fail(SW_ERUNTIME,
                       "%s did not complete within %g s: another process may "
                       "have failed or not made the same call (abort the job)",
                       kind_names[w->kind], limit);
    return outcome(w);
}

/* ------------------------------------------------------------ operands */

/* The compact column-major layout of t's shape (its canonical order). */
static sw_status compact_of(const sw_layout *l, sw_layout **out) {
    sw_lb b;
    sw_lb_init(&b);
    sw_lb_view(&b, sw_lview_of(l));
    return sw_lb_finish_compact(&b, out);
}

/* The layout (world, *shape(l)) whose first mode is slowest: block r (all
 * of l's elements, canonical order) at r * size(l). */
static sw_status blocks_of(const sw_layout *l, int world, sw_layout **out) {
    sw_lb b;
    sw_lb_init(&b);
    sw_lb_view(&b, sw_lview_of(l));
    sw_lb_leaf(&b, world, 0);
    sw_layout *last = NULL;
    sw_status st = sw_lb_finish_compact(&b, &last);
    if (st)
        return st;
    int32_t r = last->rank;
    int32_t order[SW_PLAN_MAX_LEAVES + 1];
    if (r > (int32_t)(sizeof order / sizeof *order)) {
        sw_layout_unref(last);
        return sw_fail(SW_EVALUE, "too many modes");
    }
    order[0] = r - 1;
    for (int32_t k = 1; k < r; ++k)
        order[k] = k - 1;
    st = sw_layout_permute(last, r, order, out);
    sw_layout_unref(last);
    return st;
}

/* The layout of modes 1.. of l, compact: a reduce_scatter's result. */
static sw_status rest_compact(const sw_layout *l, sw_layout **out) {
    if (l->rank < 2)
        return sw_layout_leaf(1, 1, out);
    sw_lb b;
    sw_lb_init(&b);
    for (int32_t k = 1; k < l->rank; ++k)
        sw_lb_append_view(&b, sw_lview_child(sw_lview_of(l), k));
    return sw_lb_finish_compact(&b, out);
}

/* Whether t's elements lie at t.offset + canonical(i): then the wire
 * reads and writes t's memory directly. */
static int is_direct(const sw_tensor *t, const sw_layout *canonical) {
    const sw_layout *ls[2] = {canonical, t->layout};
    int64_t offs[2] = {0, t->offset};
    sw_plan p;
    if (sw_plan_build(2, ls, offs, &p) != SW_OK) {
        sw_clear_error();
        return 0;
    }
    for (int32_t d = 0; d < p.ndim; ++d)
        if (p.extent[d] > 1 && p.stride[0][d] != p.stride[1][d])
            return 0;
    return 1;
}

#if SW_HAVE_MPI
static sw_status copy4(int64_t n, void *const *ptr, const int64_t *step,
                       void *ctx) {
    (void)ctx;
    uint32_t *d = ptr[0];
    const uint32_t *s = ptr[1];
    if (step[0] == 1 && step[1] == 1) {
        memcpy(d, s, (size_t)n * 4);
        return SW_OK;
    }
    for (int64_t i = 0; i < n; ++i)
        d[i * step[0]] = s[i * step[1]];
    return SW_OK;
}

/* dst[doff + dl(i)] = src[soff + sl(i)] for every logical i (4-byte
 * elements). */
static sw_status copy_elements(void *dst, const sw_layout *dl, int64_t doff,
                               const void *src, const sw_layout *sl,
                               int64_t soff) {
    sw_plan_leaves ops[2] = {sw_plan_leaves_of(dl), sw_plan_leaves_of(sl)};
    int64_t offs[2] = {doff, soff};
    void *base[2] = {dst, (void *)src};
    int64_t elsize[2] = {4, 4};
    return sw_kwalk(2, ops, offs, base, elsize, 0, 1u, 1, copy4, NULL);
}

#endif /* SW_HAVE_MPI */

static sw_status check_tensor(const char *who, const sw_tensor *t) {
    if (!t)
        return sw_fail(SW_ETYPE, "%s needs a tensor", who);
    sw_status st = sw_tensor_single(t, SW_ENTRY_OPERATION);
    if (st)
        return st;
    if (!sw_carrier_is_cpu(t->carrier))
        return sw_fail(SW_ETYPE,
                       "%s needs a CPU tensor (this one is on %s); move it to "
                       "CPU first",
                       who, sw_carrier_get_class(t->carrier)->name);
    sw_dtype dt = sw_carrier_dtype(t->carrier);
    if (dt != SW_DTYPE_FLOAT32 && dt != SW_DTYPE_INT32)
        return sw_fail(SW_ETYPE, "%s needs a Float32 or Int32 tensor, not %s",
                       who, sw_dtype_name(dt));
    if (sw_carrier_is_released(t->carrier))
        return sw_carrier_fail_released();
    return sw_carrier_check_move(t->carrier);
}

static sw_status check_writable(const char *who, sw_tensor *t) {
    if (!sw_carrier_is_mutable(t->carrier))
        return sw_carrier_fail_immutable();
    int injective = 0;
    sw_status st = sw_layout_is_injective(t->layout, &injective);
    if (st)
        return st;
    if (!injective)
        return sw_fail(SW_ERUNTIME,
                       "%s writes its tensor in place and needs a layout that "
                       "reaches each element once",
                       who);
    return SW_OK;
}

static sw_status check_reduce(const char *who, sw_dist_reduce op, sw_dtype dt) {
    if ((int)op < 0 || op > SW_DIST_MIN)
        return sw_fail(SW_EVALUE,
                       "%s: unknown reduction %d (sum, mean, max, min)", who,
                       (int)op);
    if (op == SW_DIST_MEAN && dt != SW_DTYPE_FLOAT32)
        return sw_fail(SW_ETYPE, "%s: mean needs a Float32 tensor", who);
    return SW_OK;
}

#if SW_HAVE_MPI
/* Takes the operand's carrier for the work: pinned, and owned as a move
 * owns its participants, with the communication thread allowed to write.
 * A second taking of the same carrier (an operand both read and written)
 * only counts. */
static sw_status take(operand *o) {
    if (!o->t)
        return SW_OK;
    sw_status st = sw_carrier_pin(o->t->carrier);
    if (st)
        return st;
    sw_carrier_move_mark(o->t->carrier, 1);
    sw_carrier_move_worker(o->t->carrier, g.thread_id);
    o->marked = 1;
    return SW_OK;
}

static void give_back(operand *o) {
    if (!o->marked)
        return;
    sw_carrier_move_mark(o->t->carrier, -1);
    sw_carrier_unpin(o->t->carrier);
    o->marked = 0;
}
#endif /* SW_HAVE_MPI */

/* ------------------------------------------------------------- the wire */

#if SW_HAVE_MPI

static sw_status mpi_fail(const char *who, int code) {
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(code, text, &len) != MPI_SUCCESS)
        snprintf(text, sizeof text, "MPI error %d", code);
    return sw_fail(SW_ERUNTIME, "%s: %s", who, text);
}

static MPI_Datatype mpi_type(sw_dtype dt) {
    return dt == SW_DTYPE_INT32 ? MPI_INT : MPI_FLOAT;
}

static MPI_Op mpi_op(sw_dist_reduce op) {
    switch (op) {
    case SW_DIST_MAX:
        return MPI_MAX;
    case SW_DIST_MIN:
        return MPI_MIN;
    default:
        return MPI_SUM;
    }
}

static uint64_t fnv1a(const char *s) {
    uint64_t h = UINT64_C(1469598103934665603);
    for (; *s; ++s)
        h = (h ^ (uint8_t)*s) * UINT64_C(1099511628211);
    return h;
}

/*
 * Every process made the same call: one small reduction of the call's
 * description and its negation (equal maxima iff equal everywhere); on a
 * mismatch every process gathers all descriptions and fails with the same
 * message.
 */
static sw_status agree(const sw_dist_work *w) {
    enum { K = 2 };
    int64_t mine[K] = {(int64_t)w->kind, (int64_t)(fnv1a(w->call) >> 1)};
    int64_t both[2 * K], max[2 * K];
    for (int i = 0; i < K; ++i) {
        both[i] = mine[i];
        both[K + i] = -mine[i];
    }
    int rc = MPI_Allreduce(both, max, 2 * K, MPI_INT64_T, MPI_MAX, g.comm);
    if (rc != MPI_SUCCESS)
        return mpi_fail(kind_names[w->kind], rc);
    int same = 1;
    for (int i = 0; i < K; ++i)
        same &= max[i] == -max[K + i];
    if (same)
        return SW_OK;
    size_t width = sizeof w->call;
    char *all = malloc(width * (size_t)g.size);
    if (!all)
        return sw_oom();
    rc = MPI_Allgather(w->call, (int)width, MPI_CHAR, all, (int)width, MPI_CHAR,
                       g.comm);
    if (rc != MPI_SUCCESS) {
        free(all);
        return mpi_fail(kind_names[w->kind], rc);
    }
    char msg[1024];
    int used = snprintf(msg, sizeof msg,
                        "%s: the processes disagree:", kind_names[w->kind]);
    for (int r = 0; r < g.size && used < (int)sizeof msg; ++r) {
        const char *call = all + (size_t)r * width;
        int shown = r < 8 || r == g.size - 1;
        if (shown)
            used += snprintf(msg + used, sizeof msg - (size_t)used,
                             "%s rank %d: %s", r ? ";" : "", r, call);
        else if (r == 8)
            used += snprintf(msg + used, sizeof msg - (size_t)used, "; ...");
    }
    free(all);
    return sw_fail(SW_EVALUE, "%s", msg);
}

/* MPI counts are int: large buffers go in chunks of at most 2^30. */
#define CHUNK ((int64_t)1 << 30)

static sw_status wire(sw_dist_work *w, void *in, void *out) {
    const char *who = kind_names[w->kind];
    MPI_Datatype type = mpi_type(w->dtype);
    int rc = MPI_SUCCESS;
    switch (w->kind) {
    case K_ALL_REDUCE:
        for (int64_t at = 0; at < w->n && rc == MPI_SUCCESS; at += CHUNK) {
            int64_t k = w->n - at < CHUNK ? w->n - at : CHUNK;
            rc = MPI_Allreduce(MPI_IN_PLACE, (char *)in + at * 4, (int)k, type,
                               mpi_op(w->op), g.comm);
        }
        if (rc == MPI_SUCCESS && w->op == SW_DIST_MEAN) {
            float *f = in, world = (float)g.size;
            for (int64_t i = 0; i < w->n; ++i)
                f[i] /= world;
        }
        break;
    case K_BROADCAST:
        for (int64_t at = 0; at < w->n && rc == MPI_SUCCESS; at += CHUNK) {
            int64_t k = w->n - at < CHUNK ? w->n - at : CHUNK;
            rc = MPI_Bcast((char *)in + at * 4, (int)k, type, w->root, g.comm);
        }
        break;
    case K_ALL_GATHER:
        rc = MPI_Allgather(in, (int)w->n, type, out, (int)w->n, type, g.comm);
        break;
    case K_REDUCE_SCATTER:
        rc = MPI_Reduce_scatter_block(in, out, (int)w->n, type, mpi_op(w->op),
                                      g.comm);
        if (rc == MPI_SUCCESS && w->op == SW_DIST_MEAN) {
            float *f = out, world = (float)g.size;
            for (int64_t i = 0; i < w->n; ++i)
                f[i] /= world;
        }
        break;
    case K_BARRIER:
        rc = MPI_Barrier(g.comm);
        break;
    default:
        break;
    }
    return rc == MPI_SUCCESS ? SW_OK : mpi_fail(who, rc);
}

/* The memory of an operand's elements in canonical order: its own, or a
 * fresh staging buffer (filled from it when fill). */
static sw_status wire_memory(operand *o, int fill, void **mem, void **staged) {
    *staged = NULL;
    char *base = sw_cpu_storage(o->t->carrier);
    if (o->direct) {
        *mem = base + o->t->offset * 4;
        return SW_OK;
    }
    void *buf = sw_malloc((size_t)o->canonical->size * 4);
    if (!buf)
        return sw_oom();
    sw_status st = SW_OK;
    if (fill)
        st = copy_elements(buf, o->canonical, 0, base, o->t->layout,
                           o->t->offset);
    if (st) {
        sw_free(buf);
        return st;
    }
    *mem = *staged = buf;
    return SW_OK;
}

/* Runs one work on the communication thread. */
static sw_status run(sw_dist_work *w) {
    sw_status st = agree(w);
    if (st || w->kind == K_BARRIER)
        return st;
    void *in = NULL, *in_staged = NULL, *out = NULL, *out_staged = NULL;
    int in_place = w->out.t == w->in.t;
    st = wire_memory(&w->in, 1, &in, &in_staged);
    if (!st && !in_place)
        st = wire_memory(&w->out, 0, &out, &out_staged);
    if (!st)
        st = wire(w, in, out);
    /* Results back into the tensors they belong to. A broadcast leaves
     * its root's tensor as it was. */
    int writes = in_place && !(w->kind == K_BROADCAST && w->root == g.rank);
    if (!st && writes && in_staged)
        st = copy_elements(sw_cpu_storage(w->in.t->carrier), w->in.t->layout,
                           w->in.t->offset, in_staged, w->in.canonical, 0);
    if (!st && !in_place && out_staged)
        st = copy_elements(sw_cpu_storage(w->out.t->carrier), w->out.t->layout,
                           w->out.t->offset, out_staged, w->out.canonical, 0);
    if (!st && writes)
        st = sw_carrier_bump_version(w->in.t->carrier);
    sw_free(in_staged);
    sw_free(out_staged);
    return st;
}

/* Records w's outcome. Its operands go first and the queue's reference
 * before the outcome is published, so that a caller who saw it complete
 * sees nothing of it still held. */
static void finish(sw_dist_work *w, sw_status st) {
    char *message = st ? strdup(sw_errmsg()) : NULL;
    give_back(&w->in);
    if (w->out.t != w->in.t)
        give_back(&w->out);
    if (w->out.t != w->in.t)
        sw_tensor_unref(w->out.t);
    sw_tensor_unref(w->in.t);
    sw_layout_unref(w->in.canonical);
    sw_layout_unref(w->out.canonical);
    memset(&w->in, 0, sizeof w->in);
    memset(&w->out, 0, sizeof w->out);
    pthread_mutex_lock(&g.mu);
    w->status = st;
    w->message = message;
    w->done = 1;
    int last = atomic_fetch_sub(&w->ref, 1) == 1;
    pthread_cond_broadcast(&g.finished);
    pthread_mutex_unlock(&g.mu);
    if (last)
        work_free(w);
}

static void start_mpi(void) {
    int initialized = 0, provided = 0, rc = MPI_SUCCESS;
    MPI_Initialized(&initialized);
    if (initialized) {
        MPI_Query_thread(&provided);
        if (provided < MPI_THREAD_MULTIPLE) {
            g.init_status = sw_fail(
                SW_ERUNTIME,
                "MPI was initialised by the program without "
                "MPI_THREAD_MULTIPLE; initialise it with that level (or let "
                "strideweave.distributed.init() do it)");
            return;
        }
    } else {
        rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided);
        if (rc != MPI_SUCCESS) {
            g.init_status = mpi_fail("init", rc);
            return;
        }
        g.started_mpi = 1;
    }
    rc = MPI_Comm_dup(MPI_COMM_WORLD, &g.comm);
    if (rc == MPI_SUCCESS)
        rc = MPI_Comm_set_errhandler(g.comm, MPI_ERRORS_RETURN);
    if (rc == MPI_SUCCESS)
        rc = MPI_Comm_rank(g.comm, &g.rank);
    if (rc == MPI_SUCCESS)
        rc = MPI_Comm_size(g.comm, &g.size);
    if (rc != MPI_SUCCESS)
        g.init_status = mpi_fail("init", rc);
}

static void stop_mpi(void) {
    if (g.comm != MPI_COMM_NULL)
        MPI_Comm_free(&g.comm);
    if (g.started_mpi)
        MPI_Finalize();
}

static void *thread_main(void *arg) {
    (void)arg;
    g.comm = MPI_COMM_NULL;
    start_mpi();
    pthread_mutex_lock(&g.mu);
    g.thread_id = sw_thread_id();
    if (g.init_status)
        snprintf(g.init_message, sizeof g.init_message, "%s", sw_errmsg());
    g.ready = 1;
    pthread_cond_broadcast(&g.finished);
    int failed = g.init_status != SW_OK;
    pthread_mutex_unlock(&g.mu);
    if (failed)
        return NULL;
    for (;;) {
        pthread_mutex_lock(&g.mu);
        while (!g.head)
            pthread_cond_wait(&g.queued, &g.mu);
        sw_dist_work *w = g.head;
        g.head = w->next;
        if (!g.head)
            g.tail = NULL;
        pthread_mutex_unlock(&g.mu);
        if (w->kind == K_STOP) {
            stop_mpi();
            finish(w, SW_OK);
            return NULL;
        }
        finish(w, run(w));
    }
}

#endif /* SW_HAVE_MPI */

/* ------------------------------------------------------------ lifecycle */

sw_status sw_dist_init(void) {
#if SW_HAVE_MPI
    pthread_once(&conds_once, conds_init);
    pthread_mutex_lock(&g.mu);
    if (g.state == 1) {
        pthread_mutex_unlock(&g.mu);
        return SW_OK;
    }
    if (g.state == 2) {
        pthread_mutex_unlock(&g.mu);
        return sw_fail(SW_ERUNTIME, "distributed was finalised; MPI cannot "
                                    "be initialised again in this process");
    }
    g.ready = 0;
    g.init_status = SW_OK;
    int rc = pthread_create(&g.thread, NULL, thread_main, NULL);
    if (rc) {
        pthread_mutex_unlock(&g.mu);
        return sw_fail(SW_EOS, "could not start the communication thread: %s",
                       strerror(rc));
    }
    while (!g.ready)
        pthread_cond_wait(&g.finished, &g.mu);
    sw_status st = g.init_status;
    if (st) {
        pthread_mutex_unlock(&g.mu);
        pthread_join(g.thread, NULL);
        return sw_fail(st, "%s", g.init_message);
    }
    g.state = 1;
    pthread_mutex_unlock(&g.mu);
    return SW_OK;
#else
    return not_built();
#endif
}

int sw_dist_initialized(void) {
    pthread_mutex_lock(&g.mu);
    int on = g.state == 1;
    pthread_mutex_unlock(&g.mu);
    return on;
}

static sw_status running(void) {
    if (!SW_HAVE_MPI)
        return not_built();
    return sw_dist_initialized() ? SW_OK : not_initialized();
}

sw_status sw_dist_rank(int *rank) {
    sw_status st = running();
    if (!st && rank)
        *rank = g.rank;
    return st;
}

sw_status sw_dist_world_size(int *size) {
    sw_status st = running();
    if (!st && size)
        *size = g.size;
    return st;
}

sw_status sw_dist_set_timeout(double seconds) {
    if (!(seconds >= 0) || isinf(seconds))
        return sw_fail(SW_EVALUE,
                       "timeout must be a finite number of seconds >= 0 "
                       "(0 waits for ever)");
    pthread_mutex_lock(&g.mu);
    g.timeout = seconds;
    pthread_mutex_unlock(&g.mu);
    return SW_OK;
}

double sw_dist_timeout(void) {
    pthread_mutex_lock(&g.mu);
    double t = g.timeout;
    pthread_mutex_unlock(&g.mu);
    return t;
}

sw_status sw_dist_abort(int code, const char *message) {
    sw_status st = running();
    if (st)
        return st;
    fprintf(stderr, "[rank %d] %s\n", g.rank,
            message ? message : "aborting the job");
    fflush(stderr);
#if SW_HAVE_MPI
    MPI_Abort(MPI_COMM_WORLD, code ? code : 1);
#endif
    (void)code;
    return sw_fail(SW_ERUNTIME, "MPI_Abort returned");
}

/* ------------------------------------------------------------ submission */

static sw_status new_work(kind k, sw_dist_work **out) {
    sw_dist_work *w = sw_calloc(1, sizeof *w);
    if (!w)
        return sw_oom();
    atomic_init(&w->ref, 1);
    w->kind = k;
    *out = w;
    return SW_OK;
}

/* Queues w (the queue's reference is w's own) and either hands the
 * caller a reference or waits. Consumes w on every path. */
static sw_status submit(sw_dist_work *w, sw_dist_work **work) {
#if SW_HAVE_MPI
    sw_status st = take(&w->in);
    if (!st && w->out.t != w->in.t)
        st = take(&w->out);
    pthread_mutex_lock(&g.mu);
    if (!st && g.state != 1)
        st = not_initialized();
    if (st) {
        pthread_mutex_unlock(&g.mu);
        give_back(&w->in);
        give_back(&w->out);
        sw_dist_work_unref(w);
        return st;
    }
    sw_dist_work_retain(w); /* the caller's */
    if (g.tail)
        g.tail->next = w;
    else
        g.head = w;
    g.tail = w;
    pthread_cond_signal(&g.queued);
    pthread_mutex_unlock(&g.mu);
    if (work) {
        *work = w;
        return SW_OK;
    }
    st = sw_dist_work_wait(w);
    sw_dist_work_unref(w);
    return st;
#else
    (void)work;
    sw_dist_work_unref(w);
    return not_built();
#endif
}

static void describe(sw_dist_work *w, const sw_tensor *t, const char *extra) {
    char shape[96];
    if (t) {
        sw_tree_format(t->layout->shape, shape, sizeof shape);
        snprintf(w->call, sizeof w->call, "%s(%s %s%s%s)", kind_names[w->kind],
                 sw_dtype_name(w->dtype), shape, extra ? ", " : "",
                 extra ? extra : "");
    } else {
        snprintf(w->call, sizeof w->call, "%s()", kind_names[w->kind]);
    }
}

static sw_status in_operand(sw_dist_work *w, sw_tensor *t,
                            sw_layout *canonical) {
    w->in.t = sw_tensor_retain(t);
    w->in.canonical = canonical;
    w->in.direct = is_direct(t, canonical);
    w->dtype = sw_carrier_dtype(t->carrier);
    return SW_OK;
}

sw_status sw_dist_all_reduce(sw_tensor *t, sw_dist_reduce op,
                             sw_dist_work **work) {
    const char *who = "all_reduce";
    sw_status st = check_tensor(who, t);
    if (!st)
        st = check_reduce(who, op, sw_carrier_dtype(t->carrier));
    if (!st)
        st = check_writable(who, t);
    if (!st)
        st = running();
    sw_layout *canonical = NULL;
    if (!st)
        st = compact_of(t->layout, &canonical);
    sw_dist_work *w = NULL;
    if (!st && (st = new_work(K_ALL_REDUCE, &w)))
        sw_layout_unref(canonical);
    if (st)
        return st;
    in_operand(w, t, canonical);
    w->out = w->in;
    w->out.canonical = sw_layout_retain(canonical);
    w->op = op;
    w->n = t->layout->size;
    describe(w, t, reduce_names[op]);
    return submit(w, work);
}

sw_status sw_dist_broadcast(sw_tensor *t, int root, sw_dist_work **work) {
    const char *who = "broadcast";
    sw_status st = check_tensor(who, t);
    if (!st)
        st = running();
    if (!st && (root < 0 || root >= g.size))
        st = sw_fail(SW_EVALUE, "broadcast: root %d is not a rank (0 to %d)",
                     root, g.size - 1);
    /* Every rank but the root writes. */
    if (!st && root != g.rank)
        st = check_writable(who, t);
    sw_layout *canonical = NULL;
    if (!st)
        st = compact_of(t->layout, &canonical);
    sw_dist_work *w = NULL;
    if (!st && (st = new_work(K_BROADCAST, &w)))
        sw_layout_unref(canonical);
    if (st)
        return st;
    in_operand(w, t, canonical);
    w->out = w->in;
    w->out.canonical = sw_layout_retain(canonical);
    w->root = root;
    w->n = t->layout->size;
    char extra[32];
    snprintf(extra, sizeof extra, "root %d", root);
    describe(w, t, extra);
    return submit(w, work);
}

/* A fresh CPU tensor of layout l (borrowed), for a result. */
static sw_status fresh(sw_dtype dt, sw_layout *l, sw_tensor **out) {
    sw_carrier *c = NULL;
    sw_status st = sw_cpu_new_fresh(l->cosize, dt, 1, &c);
    if (!st)
        st = sw_tensor_new(c, 0, l, out);
    sw_carrier_unref(c);
    return st;
}

static int too_large(int64_t block, int world) {
    return block > INT32_MAX || block * (int64_t)world > INT32_MAX;
}

sw_status sw_dist_all_gather(const sw_tensor *t, sw_tensor **out,
                             sw_dist_work **work) {
    const char *who = "all_gather";
    if (!out)
        return sw_fail(SW_ETYPE, "all_gather needs somewhere for its result");
    sw_status st = check_tensor(who, t);
    if (!st)
        st = running();
    if (!st && too_large(t->layout->size, g.size))
        st = sw_fail(SW_EVALUE,
                     "all_gather: %lld elements from each of %d processes "
                     "exceed MPI's count limit (2^31 - 1)",
                     (long long)t->layout->size, g.size);
    sw_layout *canonical = NULL, *blocks = NULL;
    if (!st)
        st = compact_of(t->layout, &canonical);
    if (!st)
        st = blocks_of(t->layout, g.size, &blocks);
    sw_tensor *result = NULL;
    if (!st)
        st = fresh(sw_carrier_dtype(t->carrier), blocks, &result);
    sw_dist_work *w = NULL;
    if (!st)
        st = new_work(K_ALL_GATHER, &w);
    if (st) {
        sw_layout_unref(canonical);
        sw_layout_unref(blocks);
        sw_tensor_unref(result);
        return st;
    }
    in_operand(w, (sw_tensor *)t, canonical);
    w->out.t = result;
    w->out.canonical = blocks;
    w->out.direct = 1;
    w->n = t->layout->size;
    describe(w, t, NULL);
    *out = sw_tensor_retain(result);
    st = submit(w, work);
    if (st) {
        sw_tensor_unref(*out);
        *out = NULL;
    }
    return st;
}

sw_status sw_dist_reduce_scatter(const sw_tensor *t, sw_dist_reduce op,
                                 sw_tensor **out, sw_dist_work **work) {
    const char *who = "reduce_scatter";
    if (!out)
        return sw_fail(SW_ETYPE,
                       "reduce_scatter needs somewhere for its result");
    sw_status st = check_tensor(who, t);
    if (!st)
        st = check_reduce(who, op, sw_carrier_dtype(t->carrier));
    if (!st)
        st = running();
    int64_t first = 0;
    if (!st) {
        sw_lview m0 = sw_lview_child(sw_lview_of(t->layout), 0);
        st = sw_lview_size(m0, &first);
        if (!st && first != g.size)
            st = sw_fail(SW_EVALUE,
                         "reduce_scatter: the first mode has extent %lld, not "
                         "the number of processes (%d)",
                         (long long)first, g.size);
    }
    int64_t block = st ? 0 : t->layout->size / g.size;
    if (!st && too_large(block, g.size))
        st = sw_fail(SW_EVALUE,
                     "reduce_scatter: %lld elements exceed MPI's count limit "
                     "(2^31 - 1)",
                     (long long)t->layout->size);
    sw_layout *rest = NULL, *canonical = NULL;
    if (!st)
        st = rest_compact(t->layout, &rest);
    if (!st)
        st = blocks_of(rest, g.size, &canonical);
    /* The wire order is (world, rest) by logical index, which is the
     * input's own logical order whatever the nesting of its first mode. */
    sw_tensor *result = NULL;
    if (!st)
        st = fresh(sw_carrier_dtype(t->carrier), rest, &result);
    sw_layout_unref(rest);
    sw_dist_work *w = NULL;
    if (!st)
        st = new_work(K_REDUCE_SCATTER, &w);
    if (st) {
        sw_layout_unref(canonical);
        sw_tensor_unref(result);
        return st;
    }
    in_operand(w, (sw_tensor *)t, canonical);
    w->out.t = result;
    w->out.canonical = sw_layout_retain(result->layout);
    w->out.direct = 1;
    w->op = op;
    w->n = block;
    describe(w, t, reduce_names[op]);
    *out = sw_tensor_retain(result);
    st = submit(w, work);
    if (st) {
        sw_tensor_unref(*out);
        *out = NULL;
    }
    return st;
}

sw_status sw_dist_barrier(sw_dist_work **work) {
    sw_status st = running();
    sw_dist_work *w = NULL;
    if (!st)
        st = new_work(K_BARRIER, &w);
    if (st)
        return st;
    describe(w, NULL, NULL);
    return submit(w, work);
}

sw_status sw_dist_finalize(void) {
#if SW_HAVE_MPI
    pthread_mutex_lock(&g.mu);
    if (g.state != 1) {
        pthread_mutex_unlock(&g.mu);
        return SW_OK;
    }
    g.state = 2;
    pthread_mutex_unlock(&g.mu);
    sw_dist_work *w = NULL;
    sw_status st = new_work(K_STOP, &w);
    if (st)
        return st;
    pthread_mutex_lock(&g.mu);
    if (g.tail)
        g.tail->next = w;
    else
        g.head = w;
    g.tail = w;
    pthread_cond_signal(&g.queued);
    pthread_mutex_unlock(&g.mu);
    pthread_join(g.thread, NULL);
    return SW_OK;
#else
    return SW_OK;
#endif
}
