/*
 * The operation profiler: sessions, per-thread registration, event
 * recording and the abandoned-session recovery (see profile.h).
 *
 * The events of a session are written only by its owner thread; another
 * thread touches nothing but the atomic state (to abandon the session).
 * Results are read after the state became STOPPED.
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "profile/internal.h"
#include "strideweave/capability.h"
#include "strideweave/interop.h"
#include "strideweave/layout.h"
#include "strideweave/tensor.h"

enum {
    STATE_NEW = 0,
    STATE_ACTIVE = 1,
    STATE_STOPPED = 2,
    STATE_ABANDONED = 3
};

typedef struct event {
    int64_t parent;
    uint64_t thread; /* late events: the thread that recorded them */
    int owns_tag;    /* whether impl_tag is released with this event */
    int32_t name;    /* index into the interned names */
    int32_t nshapes; /* -1 when shapes are not recorded */
    const void *carrier_tag;
    const sw_op_class *impl_class;
    const void *impl_tag;
    sw_layout **shapes;
    int64_t start, duration, self;
    int succeeded;
} event;

struct sw_profiler {
    sw_refcount ref;
    atomic_int state;
    uint64_t thread;
    int record_shapes;
    int record_backward;
    int failed;        /* an event could not be recorded */
    int32_t ntags;     /* < 0: every carrier class */
    const void **tags; /* the selected dispatch tags */
    sw_profile_tag_fn tag_fn;
    sw_profile_release_fn release_fn;
    event *events;
    int64_t nevents, cap_events;
    char **names;
    int32_t nnames, cap_names;
    sw_profile_frame *top; /* the innermost open execution */
    /* Late events (move completions), recorded from any thread, even
     * after the stop: guarded by late_lock, as is the view. */
    pthread_mutex_t late_lock;
    event *late;
    int64_t nlate, cap_late;
    /* The results as sw_profiler_event shows them: every event and the
     * late ones known at the last refresh, in start-time order. */
    struct view_entry *view;
    int64_t nview, view_nlate;
};

typedef struct view_entry {
    int late;       /* an index into late rather than events */
    int64_t index;  /* into events or late */
    int64_t parent; /* renumbered, or -1 */
    int64_t start;
} view_entry;

_Thread_local sw_profiler *sw_profile_tls;

static uint64_t this_thread(void) {
    return (uint64_t)pthread_self();
}

int64_t sw_profile_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + (int64_t)ts.tv_nsec;
}

static int load_state(const sw_profiler *p) {
    return atomic_load_explicit((atomic_int *)&p->state, memory_order_acquire);
}

static int move_state(sw_profiler *p, int from, int to) {
    return atomic_compare_exchange_strong_explicit(
        &p->state, &from, to, memory_order_acq_rel, memory_order_acquire);
}

/* ------------------------------------------------------------ lifetime */

sw_status sw_profiler_new(sw_profiler **out) {
    sw_profiler *p = sw_calloc(1, sizeof *p);
    if (!p)
        return sw_oom();
    if (pthread_mutex_init(&p->late_lock, NULL) != 0) {
        sw_free(p);
        return sw_fail(SW_ERUNTIME, "cannot create a profiler lock");
    }
    sw_ref_init(&p->ref);
    atomic_init(&p->state, STATE_NEW);
    p->ntags = -1;
    *out = p;
    return SW_OK;
}

sw_profiler *sw_profiler_retain(sw_profiler *p) {
    if (p)
        sw_ref_inc(&p->ref);
    return p;
}

static void free_event(sw_profiler *p, event *e) {
    for (int32_t k = 0; k < e->nshapes; ++k)
        sw_layout_unref(e->shapes[k]);
    sw_free(e->shapes);
    if (e->owns_tag && e->impl_tag && p->release_fn)
        p->release_fn(e->impl_tag);
}

static void free_events(sw_profiler *p) {
    for (int64_t i = 0; i < p->nevents; ++i)
        free_event(p, &p->events[i]);
    for (int64_t i = 0; i < p->nlate; ++i)
        free_event(p, &p->late[i]);
    sw_free(p->events);
    sw_free(p->late);
    sw_free(p->view);
    p->events = p->late = NULL;
    p->view = NULL;
    p->nevents = p->cap_events = p->nlate = p->cap_late = 0;
    p->nview = p->view_nlate = 0;
}

void sw_profiler_unref(sw_profiler *p) {
    if (!p || !sw_ref_dec(&p->ref))
        return;
    free_events(p);
    for (int32_t i = 0; i < p->nnames; ++i)
        sw_free(p->names[i]);
    sw_free(p->names);
    sw_free(p->tags);
    pthread_mutex_destroy(&p->late_lock);
    sw_free(p);
}

/* ------------------------------------------------------- configuration */

static sw_status check_new(const sw_profiler *p) {
    if (load_state(p) != STATE_NEW)
        return sw_fail(SW_ERUNTIME, "Profiler contexts are single-use");
    return SW_OK;
}

sw_status sw_profiler_set_carriers(sw_profiler *p, int32_t n,
                                   const void *const *tags) {
    sw_status st = check_new(p);
    if (st)
        return st;
    if (n > 0 && !tags)
        return sw_fail(SW_EVALUE, "profiler carrier tags are missing");
    const void **copy = NULL;
    if (n >= 0) {
        copy = sw_malloc((size_t)(n > 0 ? n : 1) * sizeof *copy);
        if (!copy)
            return sw_oom();
        for (int32_t i = 0; i < n; ++i)
            copy[i] = tags[i];
    }
    sw_free(p->tags);
    p->tags = copy;
    p->ntags = n >= 0 ? n : -1;
    return SW_OK;
}

sw_status sw_profiler_set_record_shapes(sw_profiler *p, int record) {
    sw_status st = check_new(p);
    if (st)
        return st;
    p->record_shapes = record != 0;
    return SW_OK;
}

sw_status sw_profiler_set_record_backward(sw_profiler *p, int record) {
    sw_status st = check_new(p);
    if (st)
        return st;
    p->record_backward = record != 0;
    return SW_OK;
}

sw_status sw_profiler_set_impl_hooks(sw_profiler *p, sw_profile_tag_fn tag,
                                     sw_profile_release_fn release) {
    sw_status st = check_new(p);
    if (st)
        return st;
    p->tag_fn = tag;
    p->release_fn = release;
    return SW_OK;
}

/* ------------------------------------------------------------ sessions */

/*
 * The registration of a thread's active profiler is sw_profile_tls (the
 * fast path) mirrored in a thread-specific key whose destructor ends a
 * session still registered when its thread exits: the session is
 * abandoned and the registration's reference dropped.
 */
static pthread_key_t registration_key;
static pthread_once_t registration_once = PTHREAD_ONCE_INIT;
static int registration_keyed;

static void registration_end(void *value) {
    sw_profiler *p = value;
    if (sw_profile_tls == p)
        sw_profile_tls = NULL;
    move_state(p, STATE_ACTIVE, STATE_ABANDONED);
    sw_profiler_unref(p);
}

static void registration_make_key(void) {
    registration_keyed =
        pthread_key_create(&registration_key, registration_end) == 0;
}

/* Registers p (whose reference the registration takes) on this thread. */
static void registration_set(sw_profiler *p) {
    sw_profile_tls = p;
    pthread_once(&registration_once, registration_make_key);
    if (registration_keyed)
        pthread_setspecific(registration_key, p);
}

/* Ends this thread's registration and drops its reference. */
static void registration_drop(void) {
    sw_profiler *p = sw_profile_tls;
    sw_profile_tls = NULL;
    if (registration_keyed)
        pthread_setspecific(registration_key, NULL);
    sw_profiler_unref(p);
}

/* Drops the calling thread's registration if its session was abandoned. */
static void drop_abandoned(void) {
    sw_profiler *p = sw_profile_tls;
    if (p && load_state(p) == STATE_ABANDONED)
        registration_drop();
}

sw_profiler *sw_profiler_active(void) {
    drop_abandoned();
    return sw_profile_tls;
}

sw_status sw_profiler_start(sw_profiler *p) {
    sw_status st = check_new(p);
    if (st)
        return st;
    drop_abandoned();
    if (sw_profile_tls)
        return sw_fail(SW_ERUNTIME, "A profiler session is already active");
    p->thread = this_thread();
    if (!move_state(p, STATE_NEW, STATE_ACTIVE))
        return sw_fail(SW_ERUNTIME, "Profiler contexts are single-use");
    registration_set(sw_profiler_retain(p));
    return SW_OK;
}

static void close_frame(sw_profiler *p, sw_profile_frame *f, int64_t now,
                        int succeeded) {
    int64_t duration = now - f->start;
    if (duration < 0)
        duration = 0;
    int64_t self = duration - f->child_ns;
    if (f->event >= 0) {
        event *e = &p->events[f->event];
        e->duration = duration;
        e->self = self > 0 ? self : 0;
        e->succeeded = succeeded;
    }
    if (f->parent)
        f->parent->child_ns += duration;
    p->top = f->parent;
}

sw_status sw_profiler_stop(sw_profiler *p) {
    if (load_state(p) != STATE_ACTIVE)
        return sw_fail(SW_ERUNTIME, "Profiler context is not active");
    if (p->thread != this_thread()) {
        move_state(p, STATE_ACTIVE, STATE_ABANDONED);
        return sw_fail(SW_ERUNTIME,
                       "Profiler session must be stopped on its active thread");
    }
    int64_t now = sw_profile_now_ns();
    if (!move_state(p, STATE_ACTIVE, STATE_STOPPED)) {
        /* Another thread abandoned it just now. */
        drop_abandoned();
        return sw_fail(SW_ERUNTIME, "Profiler context is not active");
    }
    while (p->top)
        close_frame(p, p->top, now, 0);
    if (sw_profile_tls == p)
        registration_drop();
    int changed = 0;
    if (sw_profiler_refresh(p, &changed) != SW_OK)
        p->failed = 1;
    if (p->failed)
        return sw_fail(SW_ENOMEM, "out of memory while recording profiler "
                                  "events");
    return SW_OK;
}

void sw_profiler_abandon(sw_profiler *p) {
    if (!p)
        return;
    if (move_state(p, STATE_ACTIVE, STATE_ABANDONED) &&
        p->thread == this_thread())
        drop_abandoned();
}

int sw_profiler_is_active(const sw_profiler *p) {
    return load_state(p) == STATE_ACTIVE;
}

/* ------------------------------------------------------------ recording */

static int selected(const sw_profiler *p, const void *tag) {
    if (p->ntags < 0)
        return 1;
    for (int32_t i = 0; i < p->ntags; ++i)
        if (p->tags[i] == tag)
            return 1;
    return 0;
}

/* The index of name among the interned names, adding it; -1 on failure. */
static int32_t intern(sw_profiler *p, const char *name) {
    for (int32_t i = p->nnames - 1; i >= 0; --i)
        if (strcmp(p->names[i], name) == 0)
            return i;
    if (p->nnames == p->cap_names) {
        int32_t cap = p->cap_names ? p->cap_names * 2 : 8;
        char **grown = sw_realloc(p->names, (size_t)cap * sizeof *grown);
        if (!grown)
            return -1;
        p->names = grown;
        p->cap_names = cap;
    }
    size_t n = strlen(name) + 1;
    char *copy = sw_malloc(n);
    if (!copy)
        return -1;
    memcpy(copy, name, n);
    p->names[p->nnames] = copy;
    return p->nnames++;
}

/* Appends the event of an execution of op starting now, under name for
 * the carrier class tag; -1 on failure. */
static int64_t record_as(sw_profiler *p, const char *dispatch_name,
                         const void *carrier_tag, const sw_op *op,
                         int32_t nargs, const sw_arg *args, int64_t parent) {
    if (p->nevents == p->cap_events) {
        int64_t cap = p->cap_events ? p->cap_events * 2 : 64;
        event *grown = sw_realloc(p->events, (size_t)cap * sizeof *grown);
        if (!grown)
            return -1;
        p->events = grown;
        p->cap_events = cap;
    }
    int32_t name = intern(p, dispatch_name);
    if (name < 0)
        return -1;
    sw_layout **shapes = NULL;
    int32_t nshapes = -1;
    if (p->record_shapes) {
        nshapes = nargs > 0 ? nargs : 0;
        shapes = sw_calloc((size_t)(nshapes > 0 ? nshapes : 1), sizeof *shapes);
        if (!shapes)
            return -1;
        for (int32_t i = 0; i < nshapes; ++i)
            if (args[i].kind == SW_ARG_TENSOR && args[i].as.tensor)
                shapes[i] =
                    sw_layout_retain(sw_tensor_layout(args[i].as.tensor));
    }
    event *e = &p->events[p->nevents];
    memset(e, 0, sizeof *e);
    e->parent = parent;
    e->name = name;
    e->nshapes = nshapes;
    e->shapes = shapes;
    e->carrier_tag = carrier_tag;
    e->impl_class = sw_op_get_class(op);
    e->impl_tag = p->tag_fn ? p->tag_fn(op) : NULL;
    e->owns_tag = 1;
    e->thread = p->thread;
    return p->nevents++;
}

/* Opens f on the active profiler p; the event (when tag is selected) is
 * recorded under name. */
static int begin_frame(sw_profiler *p, const char *name, const void *tag,
                       const sw_op *op, int32_t nargs, const sw_arg *args,
                       sw_profile_frame *f) {
    sw_profile_frame *parent = p->top;
    f->profiler = p;
    f->parent = parent;
    f->child_ns = 0;
    f->event = -1;
    f->parent_rec = !parent              ? -1
                    : parent->event >= 0 ? parent->event
                                         : parent->parent_rec;
    if (selected(p, tag)) {
        f->event = record_as(p, name, tag, op, nargs, args, f->parent_rec);
        if (f->event < 0)
            p->failed = 1;
    }
    p->top = f;
    f->start = sw_profile_now_ns();
    if (f->event >= 0)
        p->events[f->event].start = f->start;
    return 1;
}

int sw_profile_begin(const sw_op *op, int32_t nargs, const sw_arg *args,
                     sw_profile_frame *f) {
    sw_profiler *p = sw_profile_tls;
    if (load_state(p) != STATE_ACTIVE) {
        drop_abandoned();
        return 0;
    }
    return begin_frame(p, sw_op_dispatch_name(op), sw_op_dispatch_tag(op), op,
                       nargs, args, f);
}

int sw_profile_backward_begin(const sw_op *op, sw_tensor *gradient,
                              sw_profile_frame *f) {
    sw_profiler *p = sw_profile_tls;
    if (load_state(p) != STATE_ACTIVE) {
        drop_abandoned();
        return 0;
    }
    if (!p->record_backward)
        return 0;
    /* A dispatched operation (or a definition's node) by its name and
     * class; a move by its source's class, as its submission. */
    const char *name = sw_op_dispatch_name(op);
    const void *tag = sw_op_dispatch_tag(op);
    if (!name && sw_op_is_move(op) && sw_op_input(op, 0)) {
        name = "move";
        tag = sw_carrier_class_tag(sw_tensor_carrier(sw_op_input(op, 0)));
    }
    if (!name)
        return 0;
    char full[160];
    snprintf(full, sizeof full, "%s.backward", name);
    sw_arg arg = sw_arg_tensor(gradient);
    return begin_frame(p, full, tag, op, gradient ? 1 : 0, &arg, f);
}

int sw_profile_move_begin(const sw_op *op, const void *carrier_tag,
                          int32_t nargs, const sw_arg *args,
                          sw_profile_frame *f) {
    sw_profiler *p = sw_profile_tls;
    if (!p)
        return 0;
    if (load_state(p) != STATE_ACTIVE) {
        drop_abandoned();
        return 0;
    }
    return begin_frame(p, "move.submit", carrier_tag, op, nargs, args, f);
}

void sw_profile_move_end(sw_profile_frame *f, int succeeded, int64_t started,
                         sw_profile_move *ticket) {
    memset(ticket, 0, sizeof *ticket);
    sw_profiler *p = f->profiler;
    int64_t id = f->event;
    int open = sw_profile_tls == p && p->top == f;
    sw_profile_end(f, succeeded);
    if (!open || id < 0 || !succeeded)
        return;
    /* The completion copies what it shares with the submission now: the
     * owner thread may grow the event array while it is outstanding. */
    const event *e = &p->events[id];
    int32_t name = intern(p, "move.complete");
    sw_layout **shapes = NULL;
    if (name >= 0 && e->nshapes >= 0) {
        shapes = sw_calloc((size_t)(e->nshapes > 0 ? e->nshapes : 1),
                           sizeof *shapes);
        if (!shapes)
            name = -1;
    }
    if (name < 0) {
        p->failed = 1;
        return;
    }
    for (int32_t k = 0; k < e->nshapes; ++k)
        shapes[k] = e->shapes[k] ? sw_layout_retain(e->shapes[k]) : NULL;
    ticket->profiler = sw_profiler_retain(p);
    ticket->parent = id;
    ticket->name = name;
    ticket->nshapes = e->nshapes;
    ticket->shapes = shapes;
    ticket->carrier_tag = e->carrier_tag;
    ticket->impl_class = e->impl_class;
    ticket->impl_tag = e->impl_tag;
    /* A transfer that may have begun inside the submission (a route's
     * device commands) is covered from that moment on. */
    int64_t now = sw_profile_now_ns();
    ticket->start = started > 0 && started < now ? started : now;
}

void sw_profile_move_complete(sw_profile_move *ticket, int succeeded) {
    sw_profiler *p = ticket->profiler;
    if (!p)
        return;
    int64_t now = sw_profile_now_ns();
    pthread_mutex_lock(&p->late_lock);
    int stored = 0;
    if (p->nlate == p->cap_late) {
        int64_t cap = p->cap_late ? p->cap_late * 2 : 16;
        event *grown = sw_realloc(p->late, (size_t)cap * sizeof *grown);
        if (grown) {
            p->late = grown;
            p->cap_late = cap;
        }
    }
    if (p->nlate < p->cap_late) {
        event *e = &p->late[p->nlate++];
        memset(e, 0, sizeof *e);
        e->parent = ticket->parent;
        e->thread = this_thread();
        e->name = ticket->name;
        e->nshapes = ticket->nshapes;
        e->shapes = ticket->shapes;
        e->carrier_tag = ticket->carrier_tag;
        e->impl_class = ticket->impl_class;
        e->impl_tag = ticket->impl_tag; /* the submission's event owns it */
        e->start = ticket->start;
        e->duration = now > ticket->start ? now - ticket->start : 0;
        e->self = e->duration;
        e->succeeded = succeeded != 0;
        stored = 1;
    }
    pthread_mutex_unlock(&p->late_lock);
    if (stored) {
        /* The late event owns the shapes now. */
        ticket->shapes = NULL;
        ticket->nshapes = -1;
    }
    /* A completion that finds no memory is dropped, as any event. */
    sw_profile_move_drop(ticket);
}

void sw_profile_move_drop(sw_profile_move *ticket) {
    for (int32_t k = 0; k < ticket->nshapes; ++k)
        sw_layout_unref(ticket->shapes[k]);
    sw_free(ticket->shapes);
    ticket->shapes = NULL;
    ticket->nshapes = -1;
    sw_profiler_unref(ticket->profiler);
    ticket->profiler = NULL;
}

void sw_profile_end(sw_profile_frame *f, int succeeded) {
    int64_t now = sw_profile_now_ns();
    sw_profiler *p = f->profiler;
    /* A session stopped or dropped while this execution ran has already
     * closed (or discarded) its frames. */
    if (sw_profile_tls != p || p->top != f)
        return;
    close_frame(p, f, now, succeeded);
}

/* ------------------------------------------------------------- results */

static sw_status check_results(const sw_profiler *p) {
    if (load_state(p) != STATE_STOPPED)
        return sw_fail(SW_ERUNTIME, "Profiler results are available only "
                                    "after context exit");
    return SW_OK;
}

static int by_start(const void *a, const void *b) {
    const view_entry *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    /* A completion never starts before its submission: ties keep the
     * recording order, submissions first. */
    if (x->late != y->late)
        return x->late ? 1 : -1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* Rebuilds the view from every event and late event. Lock held. */
static sw_status build_view(sw_profiler *p) {
    int64_t n = p->nevents + p->nlate;
    view_entry *v = sw_malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
    int64_t *ids =
        sw_malloc((size_t)(p->nevents > 0 ? p->nevents : 1) * sizeof *ids);
    if (!v || !ids) {
        sw_free(v);
        sw_free(ids);
        return sw_oom();
    }
    for (int64_t i = 0; i < p->nevents; ++i)
        v[i] = (view_entry){0, i, p->events[i].parent, p->events[i].start};
    for (int64_t i = 0; i < p->nlate; ++i)
        v[p->nevents + i] =
            (view_entry){1, i, p->late[i].parent, p->late[i].start};
    qsort(v, (size_t)n, sizeof *v, by_start);
    for (int64_t k = 0; k < n; ++k)
        if (!v[k].late)
            ids[v[k].index] = k;
    /* Every parent is an event of the session (never a late one). */
    for (int64_t k = 0; k < n; ++k)
        if (v[k].parent >= 0)
            v[k].parent = ids[v[k].parent];
    sw_free(ids);
    sw_free(p->view);
    p->view = v;
    p->nview = n;
    p->view_nlate = p->nlate;
    return SW_OK;
}

sw_status sw_profiler_refresh(sw_profiler *p, int *changed) {
    *changed = 0;
    sw_status st = check_results(p);
    if (st)
        return st;
    pthread_mutex_lock(&p->late_lock);
    if (!p->view || p->view_nlate != p->nlate) {
        st = build_view(p);
        *changed = st == SW_OK;
    }
    pthread_mutex_unlock(&p->late_lock);
    return st;
}

int64_t sw_profiler_late_count(sw_profiler *p) {
    pthread_mutex_lock(&p->late_lock);
    int64_t n = p->nlate;
    pthread_mutex_unlock(&p->late_lock);
    return n;
}

sw_status sw_profiler_event_count(const sw_profiler *p, int64_t *out) {
    sw_status st = check_results(p);
    if (st)
        return st;
    sw_profiler *q = (sw_profiler *)p;
    pthread_mutex_lock(&q->late_lock);
    *out = q->view ? q->nview : q->nevents;
    pthread_mutex_unlock(&q->late_lock);
    return SW_OK;
}

sw_status sw_profiler_event(const sw_profiler *p, int64_t i,
                            sw_profile_event *out) {
    sw_status st = check_results(p);
    if (st)
        return st;
    sw_profiler *q = (sw_profiler *)p;
    pthread_mutex_lock(&q->late_lock);
    int64_t n = q->view ? q->nview : q->nevents;
    if (i < 0 || i >= n) {
        pthread_mutex_unlock(&q->late_lock);
        return sw_fail(SW_EINDEX, "profiler event index out of range");
    }
    const event *e;
    int64_t parent;
    if (q->view) {
        const view_entry *v = &q->view[i];
        e = v->late ? &q->late[v->index] : &q->events[v->index];
        parent = v->parent;
    } else {
        e = &q->events[i];
        parent = e->parent;
    }
    out->id = i;
    out->parent_id = parent;
    out->name = p->names[e->name];
    out->carrier_tag = e->carrier_tag;
    out->impl_class = e->impl_class;
    out->impl_tag = e->impl_tag;
    out->nshapes = e->nshapes;
    out->shapes = (const sw_layout *const *)e->shapes;
    out->start_ns = e->start;
    out->duration_ns = e->duration;
    out->self_ns = e->self;
    out->thread_id = e->thread;
    out->succeeded = e->succeeded;
    pthread_mutex_unlock(&q->late_lock);
    return SW_OK;
}
