/*
 * Kernels of definition-backed carriers (strideweave/extension.h): the
 * pattern and pack records, the candidate order and capability union of a
 * class, the resolution of built-in operations for them, and the dispatch
 * pipeline with its result checks and rollback.
 *
 * Rollback is a journal, not a snapshot: while a submitted kernel runs,
 * every carrier of a tensor operand that is definition-backed records the
 * old value of each element written through its storage interface (the
 * only way in: the provider owns the storage and the framework reaches it
 * through callbacks), so a failure restores exactly what was written and
 * a success costs one record per write, nothing per element read.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "carrier/defined.h"
#include "carrier/internal.h"
#include "layout/internal.h"
#include "op/internal.h"
#include "strideweave/capability.h"
#include "strideweave/definition.h"
#include "strideweave/extension.h"
#include "tensor/internal.h"

/* ------------------------------------------------------------- patterns */

/* Dispatch compares normalised capabilities as bytes: no padding. */
_Static_assert(sizeof(sw_op_capability) == 15 * sizeof(int32_t),
               "sw_op_capability has padding");

sw_status sw_kernel_patterns_check(const char *owner, int64_t n,
                                   const sw_kernel_pattern_decl *patterns) {
    if (n < 0 || (n > 0 && !patterns))
        return sw_fail(SW_EVALUE, "%s: pattern count %lld without patterns",
                       owner, (long long)n);
    for (int64_t i = 0; i < n; ++i) {
        const sw_kernel_pattern_decl *p = &patterns[i];
        const sw_op_info *info = sw_op_info_get(p->op);
        if (!p->kernel_id || !*p->kernel_id)
            return sw_fail(SW_EVALUE, "%s: kernel_id must not be empty", owner);
        if (!info)
            return sw_fail(SW_EVALUE, "kernel '%s': unknown operation id %d",
                           p->kernel_id, (int)p->op);
        if (!p->prepare || !p->submit)
            return sw_fail(SW_EVALUE, "kernel '%s' needs prepare and submit",
                           p->kernel_id);
        if (p->nplans < 1 || !p->plans)
            return sw_fail(SW_EVALUE, "kernel '%s': plans must not be empty",
                           p->kernel_id);
        for (int64_t k = 0; k < p->nplans; ++k) {
            const sw_op_capability *c = &p->plans[k];
            if (c->op != p->op)
                return sw_fail(SW_EVALUE,
                               "kernel '%s': plan %lld is for another "
                               "operation than operation.name '%s'",
                               p->kernel_id, (long long)k, info->plan_name);
            sw_status st = sw_op_capability_check(c);
            if (st) {
                char msg[320];
                snprintf(msg, sizeof msg, "%s", sw_errmsg());
                return sw_fail(st, "kernel '%s': plan %lld: %s", p->kernel_id,
                               (long long)k, msg);
            }
            for (int64_t j = 0; j < k; ++j)
                if (sw_op_capability_compare(&p->plans[j], c) == 0)
                    return sw_fail(SW_EVALUE,
                                   "kernel '%s': duplicate plan %lld",
                                   p->kernel_id, (long long)k);
        }
        for (int64_t j = 0; j < i; ++j)
            if (strcmp(patterns[j].kernel_id, p->kernel_id) == 0)
                return sw_fail(SW_EVALUE, "%s: duplicate kernel_id '%s'", owner,
                               p->kernel_id);
    }
    return SW_OK;
}

/* The bytes the copies of n patterns take after their array. */
static size_t patterns_extra(int64_t n, const sw_kernel_pattern_decl *ps) {
    size_t bytes = 0;
    for (int64_t i = 0; i < n; ++i)
        bytes += (size_t)ps[i].nplans * sizeof(sw_op_capability) +
                 strlen(ps[i].kernel_id) + 1;
    return bytes;
}

/* Copies n patterns into dst, their plans and ids at *cursor (aligned for
 * capabilities first, then the strings). */
static void patterns_copy(int64_t n, const sw_kernel_pattern_decl *src,
                          sw_kernel_pattern_decl *dst, char **cursor) {
    for (int64_t i = 0; i < n; ++i) {
        dst[i] = src[i];
        sw_op_capability *plans = (sw_op_capability *)*cursor;
        /* Normalised (entries past noperands zero, no stray bytes), so
         * that dispatch compares plans as bytes. */
        for (int64_t k = 0; k < src[i].nplans; ++k) {
            sw_op_plan p;
            sw_op_capability_to_plan(&src[i].plans[k], &p);
            sw_op_capability_from_plan(&p, &plans[k]);
        }
        dst[i].plans = plans;
        *cursor += (size_t)src[i].nplans * sizeof(sw_op_capability);
    }
    for (int64_t i = 0; i < n; ++i) {
        size_t k = strlen(src[i].kernel_id) + 1;
        memcpy(*cursor, src[i].kernel_id, k);
        dst[i].kernel_id = *cursor;
        *cursor += k;
    }
}

size_t sw_kernel_patterns_size(int64_t n, const sw_kernel_pattern_decl *ps) {
    return (size_t)n * sizeof(sw_kernel_pattern_decl) + patterns_extra(n, ps);
}

sw_kernel_pattern_decl *
sw_kernel_patterns_place(int64_t n, const sw_kernel_pattern_decl *src,
                         char *block) {
    sw_kernel_pattern_decl *dst = (sw_kernel_pattern_decl *)block;
    char *cursor = block + (size_t)n * sizeof *dst;
    patterns_copy(n, src, dst, &cursor);
    return dst;
}

sw_status sw_kernel_pack_copy(const sw_kernel_pack_decl *decl,
                              sw_kernel_pack_rec **out) {
    size_t head = sizeof(sw_kernel_pack_rec);
    head = (head + 15) & ~(size_t)15;
    size_t pats = sw_kernel_patterns_size(decl->npatterns, decl->patterns);
    size_t ns = strlen(decl->namespace_) + 1,
           ver = strlen(decl->pack_version) + 1,
           iv = strlen(decl->interface_version) + 1;
    char *block = sw_calloc(1, head + pats + ns + ver + iv);
    if (!block)
        return sw_oom();
    sw_kernel_pack_rec *rec = (sw_kernel_pack_rec *)block;
    rec->decl = *decl;
    rec->decl.patterns =
        sw_kernel_patterns_place(decl->npatterns, decl->patterns, block + head);
    char *text = block + head + pats;
    memcpy(text, decl->namespace_, ns);
    rec->decl.namespace_ = text;
    memcpy(text + ns, decl->pack_version, ver);
    rec->decl.pack_version = text + ns;
    memcpy(text + ns + ver, decl->interface_version, iv);
    rec->decl.interface_version = text + ns + ver;
    *out = rec;
    return SW_OK;
}

void sw_kernel_pack_free(sw_kernel_pack_rec *rec) {
    if (!rec)
        return;
    if (rec->decl.drop)
        rec->decl.drop(rec->decl.ctx);
    sw_free(rec);
}

/* ------------------------------------------------------ candidate order */

typedef struct order_key {
    const sw_kernel_pattern_decl *p;
    int64_t group; /* 0 built-in; 1 + the pack's rank */
    int64_t index; /* in its provider or pack */
} order_key;

static int order_cmp(const void *a, const void *b) {
    const order_key *x = a, *y = b;
    if (x->p->preference != y->p->preference)
        return x->p->preference > y->p->preference ? -1 : 1;
    if (x->group != y->group)
        return x->group < y->group ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

static int cap_cmp(const void *a, const void *b) {
    return sw_op_capability_compare(a, b);
}

sw_status sw_defn_rebuild_kernels(sw_defn *d) {
    int64_t n = d->def.npatterns, nplans = 0;
    for (const sw_kernel_pack_rec *r = d->packs; r; r = r->next)
        n += r->decl.npatterns;
    order_key *keys = sw_calloc((size_t)n + 1, sizeof *keys);
    const sw_kernel_pattern_decl **order =
        sw_calloc((size_t)n + 1, sizeof *order);
    if (!keys || !order) {
        sw_free(keys);
        sw_free(order);
        return sw_oom();
    }
    int64_t k = 0, rank = 0;
    for (int64_t i = 0; i < d->def.npatterns; ++i)
        keys[k++] = (order_key){&d->patterns[i], 0, i};
    for (const sw_kernel_pack_rec *r = d->packs; r; r = r->next, ++rank)
        for (int64_t i = 0; i < r->decl.npatterns; ++i)
            keys[k++] = (order_key){&r->decl.patterns[i], 1 + rank, i};
    qsort(keys, (size_t)n, sizeof *keys, order_cmp);
    for (int64_t i = 0; i < n; ++i) {
        order[i] = keys[i].p;
        nplans += keys[i].p->nplans;
    }
    sw_free(keys);
    sw_op_capability *caps = sw_calloc((size_t)nplans + 1, sizeof *caps);
    if (!caps) {
        sw_free(order);
        return sw_oom();
    }
    int64_t m = 0;
    for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < order[i]->nplans; ++j)
            caps[m++] = order[i]->plans[j];
    qsort(caps, (size_t)m, sizeof *caps, cap_cmp);
    int64_t w = 0;
    for (int64_t i = 0; i < m; ++i)
        if (w == 0 || sw_op_capability_compare(&caps[w - 1], &caps[i]) != 0)
            caps[w++] = caps[i];
    sw_free((void *)d->order);
    sw_free(d->caps);
    d->order = order;
    d->norder = n;
    d->caps = caps;
    d->ncaps = w;
    return SW_OK;
}

int64_t sw_carrier_kernel_count(const void *cls) {
    const sw_defn *d = sw_defn_lookup(cls, 0);
    return d ? d->norder : 0;
}

const char *sw_carrier_kernel_id(const void *cls, int64_t i) {
    const sw_defn *d = sw_defn_lookup(cls, 0);
    return d && i >= 0 && i < d->norder ? d->order[i]->kernel_id : NULL;
}

/* -------------------------------------------------------------- journal */

/*
 * The journal of one submission. Each definition-backed operand carrier
 * points to it while the kernel runs (sw_defined_journal_* in defined.c)
 * and appends the old value of every element written, from any thread.
 */
struct sw_journal {
    pthread_mutex_t lock;
    int64_t n, cap;
    struct journal_entry {
        sw_carrier *c;
        int64_t i;
        sw_value old;
    } *entries;
    int failed; /* an entry could not be recorded: the write was refused */
    int locked; /* the lock was taken: it is destroyed at the end */
};

sw_status sw_journal_record(sw_journal *j, sw_carrier *c, int64_t i,
                            const sw_value *old) {
    pthread_mutex_lock(&j->lock);
    j->locked = 1;
    if (j->n == j->cap) {
        int64_t want = j->cap ? j->cap * 2 : 16;
        void *grown = sw_realloc(j->entries, (size_t)want * sizeof *j->entries);
        if (!grown) {
            pthread_mutex_unlock(&j->lock);
            return sw_oom();
        }
        j->entries = grown;
        j->cap = want;
    }
    j->entries[j->n].c = c;
    j->entries[j->n].i = i;
    j->entries[j->n].old = *old;
    ++j->n;
    pthread_mutex_unlock(&j->lock);
    return SW_OK;
}

/* Whether carrier c was written under j. The kernel's writes are over
 * (its submit returned), so an empty journal needs no lock. */
static int journal_touched(sw_journal *j, const sw_carrier *c) {
    if (j->n == 0)
        return 0;
    pthread_mutex_lock(&j->lock);
    j->locked = 1;
    int hit = 0;
    for (int64_t k = 0; k < j->n && !hit; ++k)
        hit = j->entries[k].c == c;
    pthread_mutex_unlock(&j->lock);
    return hit;
}

/* Puts back every recorded value, the latest write undone first. */
static void journal_undo(sw_journal *j) {
    for (int64_t k = j->n - 1; k >= 0; --k) {
        struct journal_entry *e = &j->entries[k];
        if (sw_defined_restore(e->c, e->i, &e->old))
            sw_clear_error();
    }
}

/* Frees the entries and ends the lock. A lock never taken (nothing was
 * recorded: the common case) was only initialised, statically, and needs
 * no destruction. */
static void journal_clear(sw_journal *j) {
    if (!j->entries && !j->locked)
        return; /* nothing recorded, nothing locked */
    for (int64_t k = 0; k < j->n; ++k)
        sw_value_clear(&j->entries[k].old);
    if (j->entries)
        sw_free(j->entries);
    j->entries = NULL;
    j->n = j->cap = 0;
    if (j->locked)
        pthread_mutex_destroy(&j->lock);
    j->locked = 0;
}

/* ------------------------------------------------------------- pipeline */

#define MAX_TENSORS SW_DEF_MAX_OPERANDS

/* The distinct carriers of a call's tensor operands, what is known about
 * each before submission, and whether its journal is this call's. */
typedef struct operand_set {
    int32_t n;
    sw_carrier *c[MAX_TENSORS];
    int64_t version[MAX_TENSORS];
    int journaled[MAX_TENSORS];
    int authorized[MAX_TENSORS]; /* an operand on it is declared mutated */
} operand_set;

static void operands_collect(const sw_bound_call *call,
                             const sw_resolution *res, operand_set *s) {
    s->n = 0;
    for (int32_t i = 0; i < call->noperands; ++i) {
        if (call->operands[i].kind != SW_ARG_TENSOR)
            continue;
        sw_carrier *c = call->operands[i].as.tensor->carrier;
        int32_t at = 0;
        while (at < s->n && s->c[at] != c)
            ++at;
        if (at == s->n) {
            s->c[at] = c;
            s->version[at] = atomic_load(&c->version);
            s->journaled[at] = 0;
            s->authorized[at] = 0;
            ++s->n;
        }
        for (int32_t m = 0; m < res->nmutated; ++m)
            s->authorized[at] |= res->mutated[m] == i;
    }
}

static const char *class_name(const sw_defn *d) {
    return d->def.name;
}

/* The checks of step 4 for result k; a broken rule is a contract error. */
static sw_status check_result(const sw_defn *d, const sw_kernel_invocation *inv,
                              int32_t k, const sw_tensor *r, const void *role) {
    const sw_result_spec *spec = &inv->resolution->results[k];
    const char *op = inv->op->name;
    if (!r)
        return sw_contract_fail("kernel for '%s' on %s returned too few "
                                "results: the count is %d",
                                op, class_name(d),
                                (int)inv->resolution->nresults);
    sw_dtype dtype = sw_carrier_dtype_inline(r->carrier);
    if (dtype != spec->dtype)
        return sw_contract_fail("result %d of '%s' on %s has dtype %s, not "
                                "the declared dtype %s",
                                (int)k, op, class_name(d), sw_dtype_name(dtype),
                                sw_dtype_name(spec->dtype));
    if (r->layout != spec->layout && !sw_layout_equal(r->layout, spec->layout))
        return sw_contract_fail("result %d of '%s' on %s does not have the "
                                "declared layout",
                                (int)k, op, class_name(d));
    if (spec->alias_of >= 0) {
        if (r != inv->call->operands[spec->alias_of].as.tensor)
            return sw_contract_fail("result %d of '%s' on %s must be operand "
                                    "%d itself: it is declared as its alias",
                                    (int)k, op, class_name(d),
                                    (int)spec->alias_of);
        return SW_OK;
    }
    int64_t size = sw_carrier_size_inline(r->carrier);
    if (size != spec->layout->cosize)
        return sw_contract_fail("result %d of '%s' on %s: its carrier holds "
                                "%lld slots, not the layout's size %lld",
                                (int)k, op, class_name(d), (long long)size,
                                (long long)spec->layout->cosize);
    if (sw_carrier_tag_inline(r->carrier) != role)
        return sw_contract_fail("result %d of '%s' on %s is on another "
                                "carrier class than its carrier role",
                                (int)k, op, class_name(d));
    for (int32_t i = 0; i < inv->call->noperands; ++i) {
        const sw_arg *a = &inv->call->operands[i];
        if (a->kind == SW_ARG_TENSOR && a->as.tensor == r)
            return sw_contract_fail("result %d of '%s' on %s aliases operand "
                                    "%d without declaring it",
                                    (int)k, op, class_name(d), (int)i);
    }
    return SW_OK;
}

/* Appends "<id>: <reason>" to the refusals. */
static void note_refusal(char *buf, size_t size, const char *id,
                         const char *reason) {
    size_t used = strlen(buf);
    if (used + 1 >= size)
        return;
    snprintf(buf + used, size - used, "%s%s: %s", used ? "; " : "", id,
             *reason ? reason : "unsupported");
}

/*
 * Step 3 to 5 of sw_kernel_run for accepted work: submit with graph
 * construction off, the results' checks (classes: the class of each
 * result's carrier, NULL for the dispatch class), rollback or the
 * declared mutations' version step.
 */
static sw_status
submit_checked(const sw_defn *d, const sw_kernel_invocation *inv,
               const char *kernel_id,
               sw_status (*submit)(void *, void *, const sw_kernel_invocation *,
                                   sw_tensor **),
               void (*finish)(void *, void *), void *ctx, void *work,
               const void *const *classes, sw_tensor **results) {
    const sw_resolution *res = inv->resolution;
    operand_set ops;
    operands_collect(inv->call, res, &ops);
    sw_journal journal = {PTHREAD_MUTEX_INITIALIZER, 0, 0, NULL, 0, 0};
    for (int32_t i = 0; i < ops.n; ++i)
        ops.journaled[i] = sw_defined_journal_begin(ops.c[i], &journal);

    sw_tensor *got[SW_DEF_MAX_RESULTS];
    for (int32_t k = 0; k < SW_DEF_MAX_RESULTS; ++k)
        got[k] = NULL;
    /* Grad mode off around the submission (sw_set_grad_enabled, read
     * and set directly), then back to what it was. */
    int grad_off = sw_grad_disabled_tls;
    sw_grad_disabled_tls = 1;
    sw_status st = submit(ctx, work, inv, got);
    sw_grad_disabled_tls = grad_off;
    if (finish)
        finish(ctx, work);
    for (int32_t k = 0; !st && k < res->nresults; ++k)
        st = check_result(d, inv, k, got[k], classes ? classes[k] : d->cls);
    for (int32_t i = 0; !st && i < ops.n; ++i) {
        if (ops.authorized[i])
            continue;
        int touched =
            (ops.journaled[i] && journal_touched(&journal, ops.c[i])) ||
            atomic_load(&ops.c[i]->version) != ops.version[i];
        if (touched)
            st = sw_contract_fail("kernel '%s' for '%s' on %s made an "
                                  "unauthorized operand mutation: a carrier "
                                  "of an operand not in mutated_operands was "
                                  "written",
                                  kernel_id, inv->op->name, class_name(d));
    }
    for (int32_t i = 0; i < ops.n; ++i)
        if (ops.journaled[i])
            sw_defined_journal_end(ops.c[i]);
    if (st) {
        /* The operands go back to what they were: values, then versions. */
        journal_undo(&journal);
        for (int32_t i = 0; i < ops.n; ++i)
            sw_carrier_version_restore(ops.c[i], ops.version[i]);
        for (int32_t k = 0; k < SW_DEF_MAX_RESULTS; ++k)
            sw_tensor_unref(got[k]);
    } else {
        /* One version step per declared mutation, whatever was written. */
        for (int32_t i = 0; i < ops.n; ++i)
            if (ops.authorized[i])
                sw_carrier_version_restore(ops.c[i], ops.version[i] + 1);
        if (res->nresults == 1) /* the common case, without a memcpy */
            results[0] = got[0];
        else
            memcpy(results, got, (size_t)res->nresults * sizeof *got);
    }
    journal_clear(&journal);
    return st;
}

/* The composite path of sw_kernel_run (a dependent class). */
static sw_status run_composite(const sw_defn *d, sw_carrier *c,
                               const sw_op_info *op, const sw_bound_call *call,
                               const sw_resolution *res, sw_tensor **results);

/* Whether cap is plan's capability: the bytes of
 * sw_op_capability_from_plan(plan), compared field by field. cap is
 * normalised (entries past its operand count are zero, as from_plan makes
 * them), so equal counts leave only the first entries to compare. */
static int cap_is_plan(const sw_op_capability *cap, const sw_op_plan *plan) {
    if (cap->op != plan->op || cap->noperands != plan->noperands ||
        cap->compute != plan->compute ||
        cap->accumulation != plan->accumulation ||
        cap->accumulator != plan->accumulator || cap->output != plan->output)
        return 0;
    for (int32_t i = 0; i < cap->noperands; ++i)
        if (cap->operands[i].role != plan->operands[i].role ||
            cap->operands[i].dtype != plan->operands[i].dtype ||
            cap->operands[i].convert_to != plan->operands[i].convert_to)
            return 0;
    return 1;
}

/* Whether one of p's plans is plan's capability. */
static int pattern_takes(const sw_kernel_pattern_decl *p,
                         const sw_op_plan *plan) {
    for (int64_t k = 0; k < p->nplans; ++k)
        if (cap_is_plan(&p->plans[k], plan))
            return 1;
    return 0;
}

/* The most candidates asked, in candidate order. */
#define MAX_CANDIDATES 64

/* sw_kernel_run's body, shared with the built-in operations' path. */
static inline sw_status run_kernels(sw_carrier *c, const sw_op_info *op,
                                    const sw_bound_call *call,
                                    const sw_resolution *res,
                                    sw_tensor **results) {
    const sw_defined_state *s = sw_defined_state_of(c);
    if (!s)
        return sw_fail(SW_ETYPE, "carrier is not definition-backed");
    const sw_defn *d = s->defn;
    if (d->def.dependent)
        return run_composite(d, c, op, call, res, results);
    if (!d->def.has_kernels)
        return sw_fail(SW_ENOTIMPL,
                       "%s is storage-only: its CarrierDefinition has no "
                       "KernelProvider, so it runs no '%s'",
                       class_name(d), op->name);
    /* The candidates (the patterns of op with the call's plan, in
     * candidate order, at most MAX_CANDIDATES) are asked in turn as they
     * are found: the first that accepts runs. */
    sw_kernel_invocation inv = {c, op, call, res};
    char refusals[512];
    refusals[0] = '\0';
    int64_t ncand = 0;
    for (int64_t i = 0; i < d->norder && ncand < MAX_CANDIDATES; ++i) {
        const sw_kernel_pattern_decl *p = d->order[i];
        if (p->op != op->id || !pattern_takes(p, &res->plan))
            continue;
        ++ncand;
        char reason[256];
        reason[0] = '\0';
        int unsupported = 0;
        void *work = NULL;
        sw_status st = p->prepare(p->ctx, &inv, &work, &unsupported, reason,
                                  sizeof reason);
        if (st)
            return st;
        if (!unsupported)
            return submit_checked(d, &inv, p->kernel_id, p->submit, p->finish,
                                  p->ctx, work, NULL, results);
        note_refusal(refusals, sizeof refusals, p->kernel_id, reason);
    }
    if (ncand == 0) {
        char plan[320];
        sw_op_plan_describe(&res->plan, plan, sizeof plan);
        return sw_fail(SW_ENOTIMPL, "%s has no kernel for '%s' with plan %s",
                       class_name(d), op->name, plan);
    }
    return sw_fail(SW_ENOTIMPL, "no kernel of %s accepted '%s': %s",
                   class_name(d), op->name, refusals);
}

sw_status sw_kernel_run(sw_carrier *c, const sw_op_info *op,
                        const sw_bound_call *call, const sw_resolution *res,
                        sw_tensor **results) {
    return run_kernels(c, op, call, res, results);
}

/* ------------------------------------------- built-in operations' calls */

static sw_status tensor_operand(const sw_op_info *info, int32_t nargs,
                                const sw_arg *args, int32_t i) {
    if (i >= nargs || args[i].kind != SW_ARG_TENSOR || !args[i].as.tensor)
        return sw_fail(SW_ETYPE, "%s must be a Tensor",
                       i < info->noperands ? info->operands[i].name
                                           : "operand");
    return SW_OK;
}

/*
 * Binds and resolves a built-in operation's call for the kernels: the
 * central plan and one result (same layout for elementwise operations,
 * Generic's for reduce and matmul). *borrowed 1: the result's layout is
 * the first operand's, not retained (the unary and scalar forms; the
 * operand holds it through the call). On failure *res holds nothing.
 * resolution_drop ends *res.
 */
static sw_status resolve_builtin(const sw_op_info *info, int32_t nargs,
                                 const sw_arg *args, sw_bound_call *call,
                                 sw_resolution *res, int *borrowed) {
    /* Only the fields a built-in call uses are set (the structs are large
     * and this is the per-call path), and every result's layout and the
     * token, which the kernels may read (NULL). */
    for (int32_t k = 1; k < SW_DEF_MAX_RESULTS; ++k)
        res->results[k].layout = NULL;
    call->noptions = 0;
    res->nresults = 0;
    res->nmutated = 0;
    res->nsaved = 0;
    res->kernel_id = NULL;
    res->token = NULL;
    res->token_release = NULL;
    res->results[0].layout = NULL;
    res->results[0].alias_of = -1;
    res->results[0].atol = res->results[0].rtol = 0.0;
    *borrowed = 0;
    int32_t n = info->noperands;
    if (nargs < n || n > SW_PLAN_MAX_OPERANDS)
        return sw_fail(SW_ETYPE, "'%s' takes %d operands, got %d", info->name,
                       (int)n, (int)nargs);
    sw_status st = tensor_operand(info, nargs, args, 0);
    if (st)
        return st;
    sw_plan_input in[SW_PLAN_MAX_OPERANDS];
    int uniform = n >= 1; /* tensors of one dtype: the plan may be memoised */
    for (int32_t i = 0; i < n; ++i) {
        const sw_arg *a = &args[i];
        if (info->operands[i].kind == SW_OPERAND_TENSOR) {
            /* Operand 0 was checked above. */
            if (i > 0 && (st = tensor_operand(info, nargs, args, i)))
                return st;
            in[i] =
                sw_plan_tensor(sw_carrier_dtype_inline(a->as.tensor->carrier));
            uniform &= in[i].dtype == in[0].dtype;
        } else if (a->kind == SW_ARG_I64) {
            uniform = 0;
            in[i] = sw_plan_scalar_value(SW_SCALAR_INTEGRAL, (double)a->as.i);
        } else if (a->kind == SW_ARG_BOOL) {
            uniform = 0;
            in[i] = sw_plan_scalar_value(SW_SCALAR_BOOL, a->as.i ? 1.0 : 0.0);
        } else if (a->kind == SW_ARG_F64) {
            uniform = 0;
            in[i] = sw_plan_scalar_value(SW_SCALAR_REAL, a->as.f);
        } else {
            return sw_fail(SW_ETYPE, "%s must be a numerical scalar",
                           info->operands[i].name);
        }
        call->operands[i] = *a;
    }
    call->op = info->id;
    call->noperands = n;
    const sw_op_plan *memo =
        uniform ? sw_op_plan_memo(info->id, n, in[0].dtype) : NULL;
    if (memo)
        res->plan = *memo;
    else if ((st = sw_op_plan_resolve(info->id, n, in, SW_PLAN_NO_DTYPE,
                                      &res->plan)))
        return st;
    const sw_tensor *x = args[0].as.tensor;
    const sw_layout *xl = x->layout;
    sw_layout *layout = NULL;
    switch (info->form) {
    case SW_FORM_BINARY: {
        /* One shape; the layouts may differ, and the result takes the
         * first operand's when the layouts are equal or it is compact,
         * else the compact column-major one, as on CPU and Generic and in
         * the central definitions. */
        const sw_layout *yl = args[1].as.tensor->layout;
        if (!sw_tree_equal(sw_layout_shape(xl), sw_layout_shape(yl)))
            return sw_fail(SW_EVALUE, "%s operands must have the same shape",
                           info->plan_name);
        st = sw_elementwise_layout(xl, yl, &layout);
        break;
    }
    case SW_FORM_SCALAR:
    case SW_FORM_UNARY:
        layout = (sw_layout *)xl;
        *borrowed = 1;
        break;
    case SW_FORM_REDUCE:
    case SW_FORM_MATMUL:
        st = sw_generic_result_layout(info, nargs, args, &layout);
        break;
    default:
        return sw_fail(SW_ENOTIMPL, "'%s' has no kernel call form", info->name);
    }
    if (st)
        return st;
    res->nresults = 1;
    res->results[0].dtype = res->plan.output;
    res->results[0].layout = layout;
    return SW_OK;
}

/* sw_resolution_clear for what resolve_builtin sets: no token, and no
 * layout but result 0's (NULL after a failure; borrowed: not owned). */
static void resolution_drop(sw_resolution *res, int borrowed) {
    if (!borrowed && res->results[0].layout)
        sw_layout_unref(res->results[0].layout);
    res->results[0].layout = NULL;
}

sw_status sw_kernel_run_builtin(const sw_op_info *info, int32_t nargs,
                                const sw_arg *args, sw_arg *scalar,
                                sw_tensor **out) {
    sw_bound_call call;
    sw_resolution res;
    int borrowed = 0;
    sw_status st = resolve_builtin(info, nargs, args, &call, &res, &borrowed);
    if (!st) {
        if (scalar)
            *scalar = args[1];
        st = run_kernels(args[0].as.tensor->carrier, info, &call, &res, out);
    }
    resolution_drop(&res, borrowed);
    return st;
}

/* ---------------------------------------------------------------- packs */

sw_status sw_kernel_pack_register(const sw_kernel_pack_decl *pack) {
    if (!pack || pack->version != SW_KERNEL_PACK_VERSION)
        return sw_fail(SW_EVALUE,
                       "kernel pack is missing or of an unsupported version");
    if (!pack->namespace_ || !*pack->namespace_ || !pack->pack_version ||
        !*pack->pack_version)
        return sw_fail(SW_EVALUE,
                       "a kernel pack needs a namespace and a version");
    if (!pack->cls)
        return sw_fail(SW_EVALUE, "carrier class tag must not be NULL");
    if (!pack->interface_type || !pack->interface_version ||
        !*pack->interface_version)
        return sw_fail(SW_EVALUE, "a kernel pack needs an execution interface");
    if (pack->npatterns < 1)
        return sw_fail(SW_EVALUE, "a kernel pack must not be empty");
    for (int64_t i = 0; i < pack->npatterns; ++i)
        for (int64_t j = 0; j < i; ++j)
            if (pack->patterns[i].kernel_id && pack->patterns[j].kernel_id &&
                strcmp(pack->patterns[i].kernel_id,
                       pack->patterns[j].kernel_id) == 0)
                return sw_fail(SW_EVALUE,
                               "duplicate kernel_id '%s' in the pack",
                               pack->patterns[i].kernel_id);
    sw_status st = sw_kernel_patterns_check("kernel pack", pack->npatterns,
                                            pack->patterns);
    return st ? st : sw_defn_add_pack(pack);
}

/* ---------------------------------------------------------- composites */

static sw_status run_composite(const sw_defn *d, sw_carrier *c,
                               const sw_op_info *op, const sw_bound_call *call,
                               const sw_resolution *res, sw_tensor **results) {
    sw_capability_list caps;
    sw_status st = sw_carrier_defined_capabilities(c, &caps);
    if (st)
        return st;
    if (!sw_capability_list_match(caps, &res->plan)) {
        char plan[320];
        sw_op_plan_describe(&res->plan, plan, sizeof plan);
        return sw_fail(SW_ENOTIMPL, "%s does not support '%s' with plan %s",
                       class_name(d), op->name, plan);
    }
    const sw_composite_decl *k = &d->def.composite;
    sw_kernel_invocation inv = {c, op, call, res};
    const void *classes[SW_DEF_MAX_RESULTS];
    for (int32_t i = 0; i < SW_DEF_MAX_RESULTS; ++i)
        classes[i] = NULL;
    if ((st = k->result_carriers(k->ctx, &inv, classes)))
        return st;
    for (int32_t i = 0; i < res->nresults; ++i)
        if (!classes[i])
            return sw_fail(SW_ETYPE,
                           "result_carriers of %s gave no class for result %d",
                           class_name(d), (int)i);
    char reason[256];
    reason[0] = '\0';
    int unsupported = 0;
    void *work = NULL;
    if ((st = k->prepare(k->ctx, &inv, &work, &unsupported, reason,
                         sizeof reason)))
        return st;
    if (unsupported)
        return sw_fail(SW_ENOTIMPL, "the composite of %s refused '%s': %s",
                       class_name(d), op->name,
                       *reason ? reason : "unsupported");
    return submit_checked(d, &inv, "composite", k->submit, k->finish, k->ctx,
                          work, classes, results);
}
