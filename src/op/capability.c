/*
 * Capabilities (strideweave/capability.h): descriptors, sorted immutable
 * lists, the class registry and per-instance snapshots.
 *
 * The registry is one array of entries sorted by tag, under one mutex.
 * An entry's list is allocated once, when it is declared (or generated
 * for a shipped backend), and never changes afterwards, so a list handed
 * out stays valid without the lock until its class is forgotten. Every
 * allocation a declaration needs happens before the lock is taken, and
 * publishing is one insertion: a declaration either lands whole or
 * leaves the class as it was.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/internal.h"
#include "carrier/defined.h"
#include "carrier/internal.h"
#include "strideweave/blockdev.h"
#include "strideweave/capability.h"
#include "strideweave/evictable.h"
#include "strideweave/opencl.h"

/* ---------------------------------------------------------- descriptors */

void sw_op_capability_from_plan(const sw_op_plan *plan, sw_op_capability *out) {
    memset(out, 0, sizeof *out);
    out->op = plan->op;
    out->noperands = plan->noperands;
    for (int32_t i = 0; i < plan->noperands && i < SW_PLAN_MAX_OPERANDS; ++i)
        out->operands[i] = plan->operands[i];
    out->compute = plan->compute;
    out->accumulation = plan->accumulation;
    out->accumulator = plan->accumulator;
    out->output = plan->output;
}

void sw_op_capability_to_plan(const sw_op_capability *cap, sw_op_plan *out) {
    memset(out, 0, sizeof *out);
    out->op = cap->op;
    out->noperands = cap->noperands;
    for (int32_t i = 0; i < cap->noperands && i < SW_PLAN_MAX_OPERANDS; ++i)
        out->operands[i] = cap->operands[i];
    out->compute = cap->compute;
    out->accumulation = cap->accumulation;
    out->accumulator = cap->accumulator;
    out->output = cap->output;
}

int sw_op_capability_matches(const sw_op_capability *cap,
                             const sw_op_plan *plan) {
    sw_op_plan p;
    sw_op_capability_to_plan(cap, &p);
    return sw_op_plan_equal(&p, plan);
}

/* Sort keys: names, with "" for the absent values so that they come
 * first, and "?" for values out of range. */
static const char *dtype_key(sw_dtype d) {
    if (d == SW_PLAN_NO_DTYPE)
        return "";
    const char *s = sw_dtype_name(d);
    return s ? s : "?";
}

static const char *op_key(int32_t op) {
    const sw_op_info *info = sw_op_info_get(op);
    return info ? info->plan_name : "?";
}

static int cmp_str(const char *a, const char *b) {
    int r = strcmp(a, b);
    return r < 0 ? -1 : r > 0;
}

static int cmp_int(int64_t a, int64_t b) {
    return a < b ? -1 : a > b;
}

static const char *name_or(const char *s) {
    return s ? s : "?";
}

int sw_op_capability_compare(const sw_op_capability *a,
                             const sw_op_capability *b) {
    int r = cmp_str(op_key(a->op), op_key(b->op));
    if (!r)
        r = cmp_int(a->op, b->op);
    if (!r)
        r = cmp_int(a->noperands, b->noperands);
    int32_t n = a->noperands;
    if (n < 0 || n > SW_PLAN_MAX_OPERANDS)
        n = 0;
    for (int32_t i = 0; !r && i < n; ++i) {
        const sw_operand_plan *x = &a->operands[i], *y = &b->operands[i];
        r = cmp_str(name_or(sw_operand_role_name(x->role)),
                    name_or(sw_operand_role_name(y->role)));
        if (!r)
            r = cmp_int(x->role, y->role);
        if (!r)
            r = cmp_str(dtype_key(x->dtype), dtype_key(y->dtype));
        if (!r)
            r = cmp_int(x->dtype, y->dtype);
        if (!r)
            r = cmp_str(dtype_key(x->convert_to), dtype_key(y->convert_to));
        if (!r)
            r = cmp_int(x->convert_to, y->convert_to);
    }
    if (!r)
        r = cmp_str(name_or(sw_arithmetic_name(a->compute)),
                    name_or(sw_arithmetic_name(b->compute)));
    if (!r)
        r = cmp_int(a->compute, b->compute);
    if (!r)
        r = cmp_str(a->accumulation == SW_ACCUM_NONE
                        ? ""
                        : name_or(sw_accumulation_name(a->accumulation)),
                    b->accumulation == SW_ACCUM_NONE
                        ? ""
                        : name_or(sw_accumulation_name(b->accumulation)));
    if (!r)
        r = cmp_int(a->accumulation, b->accumulation);
    if (!r)
        r = cmp_str(dtype_key(a->accumulator), dtype_key(b->accumulator));
    if (!r)
        r = cmp_int(a->accumulator, b->accumulator);
    if (!r)
        r = cmp_str(dtype_key(a->output), dtype_key(b->output));
    if (!r)
        r = cmp_int(a->output, b->output);
    return r;
}

static int valid_dtype(sw_dtype d) {
    return (int)d >= 0 && (int)d < SW_DTYPE_COUNT;
}

sw_status sw_op_capability_check(const sw_op_capability *cap) {
    const sw_op_info *info = sw_op_info_get(cap->op);
    if (!info)
        return sw_fail(SW_EVALUE, "unknown operation id %d", (int)cap->op);
    if (info->flags & SW_OPF_LAYOUT)
        return sw_fail(SW_EVALUE,
                       "%s is a layout operation: it has no operation plan",
                       info->plan_name);
    if (cap->noperands < 1)
        return sw_fail(SW_EVALUE, "capability needs at least one operand");
    if (cap->noperands > SW_PLAN_MAX_OPERANDS)
        return sw_fail(SW_EVALUE, "capability has more than %d operands",
                       SW_PLAN_MAX_OPERANDS);
    for (int32_t i = 0; i < cap->noperands; ++i) {
        const sw_operand_plan *o = &cap->operands[i];
        if (!sw_operand_role_name(o->role))
            return sw_fail(SW_EVALUE, "operand %d has no valid role", (int)i);
        if (o->role == SW_ROLE_TENSOR && !valid_dtype(o->dtype))
            return sw_fail(SW_ETYPE,
                           "tensor operand capability needs a storage dtype");
        if (o->role == SW_ROLE_WEAK_SCALAR && o->dtype != SW_PLAN_NO_DTYPE)
            return sw_fail(SW_ETYPE,
                           "weak scalar operand capability has no storage "
                           "dtype");
        if (!valid_dtype(o->convert_to))
            return sw_fail(SW_EVALUE, "operand %d has no valid convert_to",
                           (int)i);
    }
    if (!sw_arithmetic_name(cap->compute))
        return sw_fail(SW_EVALUE, "capability has no valid compute");
    if (cap->accumulation != SW_ACCUM_NONE &&
        !sw_accumulation_name(cap->accumulation))
        return sw_fail(SW_EVALUE, "capability has no valid accumulation");
    if (cap->accumulation == SW_ACCUM_NONE &&
        cap->accumulator != SW_PLAN_NO_DTYPE)
        return sw_fail(SW_ETYPE, "accumulator_dtype needs an accumulation");
    if (cap->accumulation != SW_ACCUM_NONE && !valid_dtype(cap->accumulator))
        return sw_fail(SW_ETYPE, "an accumulation needs an accumulator_dtype");
    if (!valid_dtype(cap->output))
        return sw_fail(SW_EVALUE, "capability has no valid output");
    return SW_OK;
}

/* ----------------------------------------------------------------- lists */

static int qsort_cmp(const void *a, const void *b) {
    return sw_op_capability_compare(a, b);
}

sw_capability_list sw_capability_list_filter(sw_capability_list l, int32_t op) {
    if (op < 0 || l.count == 0)
        return l;
    const char *key = op_key(op);
    /* The list is sorted by plan name first: a binary search finds the
     * first entry of op, a scan the end of its run. */
    int64_t lo = 0, hi = l.count;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        const sw_op_capability *e = &l.items[mid];
        int r = cmp_str(op_key(e->op), key);
        if (!r)
            r = cmp_int(e->op, op);
        if (r < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    int64_t end = lo;
    while (end < l.count && l.items[end].op == op)
        ++end;
    sw_capability_list r = {l.items + lo, end - lo};
    return r;
}

const sw_op_capability *sw_capability_list_match(sw_capability_list l,
                                                 const sw_op_plan *plan) {
    /* The operation's run (one binary search by name), then exact field
     * comparisons: a run holds a handful of dtype shapes. */
    sw_capability_list run = sw_capability_list_filter(l, plan->op);
    for (int64_t i = 0; i < run.count; ++i)
        if (sw_op_capability_matches(&run.items[i], plan))
            return &run.items[i];
    return NULL;
}

int64_t sw_capability_list_reason(sw_capability_list l, const char *name,
                                  const sw_op_plan *plan, char *buf,
                                  size_t size) {
    if (size > 0)
        buf[0] = '\0';
    if (sw_capability_list_match(l, plan))
        return 0;
    const char *op = op_key(plan->op);
    name = name ? name : "carrier";
    if (sw_capability_list_filter(l, plan->op).count == 0) {
        int k = snprintf(size ? buf : NULL, size,
                         "%s declares no operation-plan capability for '%s'",
                         name, op);
        return k < 0 ? 0 : k;
    }
    int k = snprintf(size ? buf : NULL, size,
                     "%s declares no operation-plan capability for this '%s' "
                     "plan: ",
                     name, op);
    if (k < 0)
        return 0;
    size_t at = (size_t)k < size ? (size_t)k : size;
    int64_t rest =
        sw_op_plan_describe(plan, size ? buf + at : NULL, size ? size - at : 0);
    return k + rest;
}

sw_status sw_capability_list_require(sw_capability_list l, const char *name,
                                     const sw_op_plan *plan,
                                     const sw_op_capability **out) {
    const sw_op_capability *m = sw_capability_list_match(l, plan);
    if (m) {
        if (out)
            *out = m;
        return SW_OK;
    }
    char why[448];
    sw_capability_list_reason(l, name, plan, why, sizeof why);
    return sw_fail(SW_ENOTIMPL, "%s", why);
}

/*
 * Copies, checks and sorts n entries into a fresh array (NULL when n is
 * 0). A duplicate is an error worded for a declaration (generated 0) or
 * for a snapshot's generator (generated 1).
 */
static sw_status prepare(const char *name, int64_t n,
                         const sw_op_capability *caps, int generated,
                         sw_op_capability **out) {
    name = name ? name : "carrier";
    if (n < 0)
        return sw_fail(SW_EVALUE, "capability count must be >= 0");
    if (n > 0 && !caps)
        return sw_fail(SW_EVALUE, "capabilities are missing");
    *out = NULL;
    if (n == 0)
        return SW_OK;
    int64_t bytes = 0;
    if (!sw_mul_ok(n, (int64_t)sizeof *caps, &bytes))
        return sw_fail(SW_EOVERFLOW, "too many capabilities");
    sw_op_capability *a = sw_malloc((size_t)bytes);
    if (!a)
        return sw_oom();
    for (int64_t i = 0; i < n; ++i) {
        sw_status st = sw_op_capability_check(&caps[i]);
        if (st) {
            char msg[400];
            snprintf(msg, sizeof msg, "%s", sw_errmsg());
            sw_free(a);
            return sw_fail(st, "capability %lld: %s", (long long)i, msg);
        }
        sw_op_plan p;
        sw_op_capability_to_plan(&caps[i], &p);
        sw_op_capability_from_plan(&p, &a[i]);
    }
    qsort(a, (size_t)n, sizeof *a, qsort_cmp);
    for (int64_t i = 1; i < n; ++i) {
        if (sw_op_capability_compare(&a[i - 1], &a[i]) == 0) {
            sw_op_plan p;
            sw_op_capability_to_plan(&a[i], &p);
            char desc[320];
            sw_op_plan_describe(&p, desc, sizeof desc);
            sw_free(a);
            if (generated)
                return sw_fail(SW_EVALUE,
                               "%s generated two capabilities equal to: %s",
                               name, desc);
            return sw_fail(SW_EVALUE, "%s already declares a capability: %s",
                           name, desc);
        }
    }
    *out = a;
    return SW_OK;
}

/* -------------------------------------------------- shipped generation */

/* Every weak-scalar description: kinds by traits. */
#define SCALAR_SHAPES ((int)(SW_SCALAR_KIND_COUNT * (SW_SCALAR_TRAITS + 1)))

static sw_plan_input scalar_shape(int k) {
    return sw_plan_scalar((sw_scalar_kind)(k / (SW_SCALAR_TRAITS + 1)),
                          (uint32_t)(k % (SW_SCALAR_TRAITS + 1)));
}

/* The choices of operand i of info (swapped: mul's scalar first). */
static int choices(const sw_op_info *info, int32_t i, int swapped, int ndt) {
    int32_t at = swapped ? info->noperands - 1 - i : i;
    return info->operands[at].kind == SW_OPERAND_TENSOR ? ndt : SCALAR_SHAPES;
}

/*
 * Every plan an operation-dtype family executes: resolve every
 * combination of its tensor dtypes and of weak-scalar shapes, keep what
 * resolves, sort and drop repeats. Generated from the plans, so the
 * shipped sets cannot drift from them.
 */
static sw_status generate(const sw_dtype *dts, int ndt, sw_op_capability **out,
                          int64_t *count) {
    int64_t bound = 0;
    for (int32_t id = 0; id < sw_op_count(); ++id) {
        if (!sw_op_has_plan(id))
            continue;
        const sw_op_info *info = sw_op_info_get(id);
        for (int swapped = 0; swapped <= (id == SW_OP_MUL); ++swapped) {
            int64_t k = 1;
            for (int32_t i = 0; i < info->noperands; ++i)
                k *= choices(info, i, swapped, ndt);
            bound += k;
        }
    }
    sw_op_capability *a = sw_malloc((size_t)bound * sizeof *a);
    if (!a)
        return sw_oom();
    int64_t n = 0;
    for (int32_t id = 0; id < sw_op_count(); ++id) {
        if (!sw_op_has_plan(id))
            continue;
        const sw_op_info *info = sw_op_info_get(id);
        for (int swapped = 0; swapped <= (id == SW_OP_MUL); ++swapped) {
            int64_t k = 1;
            for (int32_t i = 0; i < info->noperands; ++i)
                k *= choices(info, i, swapped, ndt);
            for (int64_t c = 0; c < k; ++c) {
                sw_plan_input in[SW_PLAN_MAX_OPERANDS];
                int64_t rest = c;
                for (int32_t i = 0; i < info->noperands; ++i) {
                    int m = choices(info, i, swapped, ndt);
                    int pick = (int)(rest % m);
                    rest /= m;
                    int32_t at = swapped ? info->noperands - 1 - i : i;
                    if (info->operands[at].kind == SW_OPERAND_TENSOR)
                        in[i] = sw_plan_tensor(dts[pick]);
                    else
                        in[i] = scalar_shape(pick);
                }
                sw_op_plan p;
                if (sw_op_plan_resolve(id, info->noperands, in,
                                       SW_PLAN_NO_DTYPE, &p) != SW_OK) {
                    sw_clear_error();
                    continue;
                }
                sw_op_capability_from_plan(&p, &a[n++]);
            }
        }
    }
    qsort(a, (size_t)n, sizeof *a, qsort_cmp);
    int64_t w = 0;
    for (int64_t i = 0; i < n; ++i)
        if (w == 0 || sw_op_capability_compare(&a[w - 1], &a[i]) != 0)
            a[w++] = a[i];
    *out = a;
    *count = w;
    return SW_OK;
}

/* ------------------------------------------------------ class registry */

typedef struct cap_entry {
    const void *cls;
    sw_capability_state state;
    sw_op_capability *items; /* never changes once the entry exists */
    int64_t count;
    /* A CarrierDefinition (extension.h): the class's definition, set once
     * at registration; the class is open (state SW_CAPS_DEFINED) until its
     * first observation seals it (SW_CAPS_DEFINED_SEALED). */
    sw_defn *defn;
} cap_entry;

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static cap_entry *entries; /* sorted by tag address */
static int64_t nentries, capacity;

static int is_shipped(const void *cls) {
    return cls == sw_cpu_class() || cls == sw_generic_class() ||
           cls == sw_file_class() || cls == sw_evictable_class() ||
           cls == sw_blockdev_class() || cls == sw_opencl_class();
}

/* The index of cls, or -(insertion point) - 1. Under the lock. */
static int64_t find_locked(const void *cls) {
    int64_t lo = 0, hi = nentries;
    uintptr_t key = (uintptr_t)cls;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        uintptr_t k = (uintptr_t)entries[mid].cls;
        if (k == key)
            return mid;
        if (k < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -lo - 1;
}

/* Inserts e at position at (from find_locked). Under the lock. */
static sw_status insert_locked(int64_t at, const cap_entry *e) {
    if (nentries == capacity) {
        int64_t want = capacity ? capacity * 2 : 16;
        cap_entry *grown = sw_realloc(entries, (size_t)want * sizeof *grown);
        if (!grown)
            return sw_oom();
        entries = grown;
        capacity = want;
    }
    memmove(&entries[at + 1], &entries[at],
            (size_t)(nentries - at) * sizeof *entries);
    entries[at] = *e;
    ++nentries;
    return SW_OK;
}

/* Makes the shipped entry of cls. Under the lock (resolution takes no
 * lock, so generating here cannot deadlock). */
static sw_status make_shipped(const void *cls, cap_entry *e) {
    static const sw_dtype cpu[] = {SW_DTYPE_FLOAT32, SW_DTYPE_INT32};
    static const sw_dtype generic[] = {SW_DTYPE_FLOATING, SW_DTYPE_ANY};
    e->cls = cls;
    e->state = SW_CAPS_SHIPPED;
    e->items = NULL;
    e->count = 0;
    /* OpenCL runs every operation the CPU runs, with its rules
     * (carrier/opencl/ops.c): the same plans. */
    if (cls == sw_cpu_class() || cls == sw_opencl_class())
        return generate(cpu, 2, &e->items, &e->count);
    if (cls == sw_generic_class())
        return generate(generic, 2, &e->items, &e->count);
    return SW_OK; /* FileBacked, BlockDeviceCarrier, Evictable: sealed empty */
}

/* The entry of cls, made as observed (how) if there is none. Under the
 * lock; NULL with an error recorded when memory runs out. */
static cap_entry *touch_locked(const void *cls, int how) {
    int64_t at = find_locked(cls);
    if (at >= 0) {
        /* The first observation freezes a definition: its capabilities
         * are the plans of its kernels, and no kernel is supplied yet. */
        if (entries[at].state == SW_CAPS_DEFINED)
            entries[at].state = SW_CAPS_DEFINED_SEALED;
        return &entries[at];
    }
    at = -at - 1;
    cap_entry e = {cls,
                   how == SW_OBSERVE_CONSTRUCTION ? SW_CAPS_CONSTRUCTED
                                                  : SW_CAPS_OBSERVED,
                   NULL, 0, NULL};
    if (is_shipped(cls) && make_shipped(cls, &e) != SW_OK)
        return NULL;
    if (insert_locked(at, &e) != SW_OK) {
        sw_free(e.items);
        return NULL;
    }
    return &entries[at];
}

sw_status sw_capabilities_declare(const void *cls, const char *name, int64_t n,
                                  const sw_op_capability *caps) {
    if (!cls)
        return sw_fail(SW_EVALUE, "capability class tag must not be NULL");
    name = name ? name : "carrier";
    if (is_shipped(cls))
        return sw_fail(SW_ETYPE,
                       "%s is a shipped backend; its operation-plan "
                       "capabilities are sealed",
                       name);
    sw_op_capability *items = NULL;
    sw_status st = prepare(name, n, caps, 0, &items);
    if (st)
        return st;
    pthread_mutex_lock(&reg_lock);
    int64_t at = find_locked(cls);
    if (at >= 0) {
        sw_capability_state state = entries[at].state;
        pthread_mutex_unlock(&reg_lock);
        sw_free(items);
        if (state == SW_CAPS_DEFINED || state == SW_CAPS_DEFINED_SEALED)
            return sw_fail(SW_ETYPE,
                           "%s has a CarrierDefinition; its operation-plan "
                           "capabilities come from its providers",
                           name);
        if (state == SW_CAPS_DECLARED)
            return sw_fail(SW_ETYPE,
                           "%s has already declared its operation-plan "
                           "capabilities",
                           name);
        if (state == SW_CAPS_CONSTRUCTED)
            return sw_fail(SW_ETYPE,
                           "%s was already observed, when an instance was "
                           "constructed, without a declaration; its "
                           "operation-plan capabilities are sealed empty",
                           name);
        return sw_fail(SW_ETYPE,
                       "%s was first observed without a declaration; its "
                       "operation-plan capabilities are sealed empty",
                       name);
    }
    cap_entry e = {cls, SW_CAPS_DECLARED, items, n, NULL};
    st = insert_locked(-at - 1, &e);
    pthread_mutex_unlock(&reg_lock);
    if (st)
        sw_free(items);
    return st;
}

sw_status sw_capabilities_observe(const void *cls, int how) {
    if (!cls)
        return sw_fail(SW_EVALUE, "capability class tag must not be NULL");
    pthread_mutex_lock(&reg_lock);
    cap_entry *e = touch_locked(cls, how);
    pthread_mutex_unlock(&reg_lock);
    return e ? SW_OK : sw_errcode();
}

sw_status sw_capabilities_of_class(const void *cls, sw_capability_list *out) {
    if (!cls)
        return sw_fail(SW_EVALUE, "capability class tag must not be NULL");
    pthread_mutex_lock(&reg_lock);
    cap_entry *e = touch_locked(cls, SW_OBSERVE_QUERY);
    sw_capability_list l = {NULL, 0};
    if (e) {
        l.items = e->items;
        l.count = e->count;
    }
    pthread_mutex_unlock(&reg_lock);
    if (!e)
        return sw_errcode();
    *out = l;
    return SW_OK;
}

sw_capability_state sw_capabilities_state(const void *cls) {
    if (!cls)
        return SW_CAPS_OPEN;
    pthread_mutex_lock(&reg_lock);
    int64_t at = find_locked(cls);
    sw_capability_state s = at >= 0 ? entries[at].state : SW_CAPS_OPEN;
    pthread_mutex_unlock(&reg_lock);
    /* A shipped set not generated yet is sealed all the same. */
    if (s == SW_CAPS_OPEN && is_shipped(cls))
        s = SW_CAPS_SHIPPED;
    return s;
}

void sw_capabilities_forget(const void *cls) {
    if (!cls || is_shipped(cls))
        return;
    pthread_mutex_lock(&reg_lock);
    int64_t at = find_locked(cls);
    sw_op_capability *items = NULL;
    sw_defn *defn = NULL;
    if (at >= 0) {
        items = entries[at].items;
        defn = entries[at].defn;
        memmove(&entries[at], &entries[at + 1],
                (size_t)(nentries - at - 1) * sizeof *entries);
        --nentries;
    }
    pthread_mutex_unlock(&reg_lock);
    if (!defn)
        sw_free(items); /* a definition owns its capability union */
    sw_defn_unref(defn);
}

/* ---------------------------------------------------------- definitions */

sw_status sw_defn_register(const void *cls, sw_defn *d) {
    const char *name = d->def.name;
    if (is_shipped(cls))
        return sw_fail(SW_ETYPE, "%s is a definition-free shipped carrier",
                       name);
    pthread_mutex_lock(&reg_lock);
    int64_t at = find_locked(cls);
    sw_status st = SW_OK;
    if (at >= 0) {
        sw_capability_state state = entries[at].state;
        st = state == SW_CAPS_DEFINED || state == SW_CAPS_DEFINED_SEALED
                 ? sw_fail(SW_ETYPE, "%s already has a CarrierDefinition", name)
                 : sw_fail(SW_ETYPE,
                           "%s was already observed without a "
                           "CarrierDefinition",
                           name);
    } else {
        cap_entry e = {cls, SW_CAPS_DEFINED, d->caps, d->ncaps, d};
        st = insert_locked(-at - 1, &e);
    }
    pthread_mutex_unlock(&reg_lock);
    return st;
}

sw_status sw_defn_add_pack(const sw_kernel_pack_decl *decl) {
    pthread_mutex_lock(&reg_lock);
    int64_t at = find_locked(decl->cls);
    cap_entry *e = at >= 0 ? &entries[at] : NULL;
    sw_defn *d = e ? e->defn : NULL;
    sw_status st = SW_OK;
    if (d && d->def.dependent)
        st = sw_fail(SW_ETYPE,
                     "%s is a DependentCarrier: kernel packs target "
                     "independent carriers",
                     d->def.name);
    else if (!d || !d->def.has_kernels)
        st = sw_fail(SW_ETYPE, "kernel pack target must have its own exact "
                               "CarrierDefinition with a KernelProvider");
    else if (e->state != SW_CAPS_DEFINED)
        st = sw_fail(SW_ETYPE,
                     "%s was already observed: its kernel packs are frozen",
                     d->def.name);
    else if (decl->interface_type != d->def.interface_type ||
             strcmp(decl->interface_version, d->def.interface_version) != 0)
        st = sw_fail(SW_ETYPE, "the pack's execution interface does not "
                               "match the KernelProvider's");
    sw_kernel_pack_rec **link = d ? &d->packs : NULL;
    for (; !st && *link; link = &(*link)->next) {
        const sw_kernel_pack_decl *o = &(*link)->decl;
        int c = strcmp(o->namespace_, decl->namespace_);
        if (c == 0)
            c = strcmp(o->pack_version, decl->pack_version);
        if (c == 0)
            st = sw_fail(SW_EVALUE,
                         "a kernel pack with namespace and version '%s' "
                         "'%s' is already registered",
                         decl->namespace_, decl->pack_version);
        if (c > 0)
            break;
    }
    for (int64_t i = 0; !st && i < decl->npatterns; ++i)
        for (int64_t k = 0; !st && k < d->norder; ++k)
            if (strcmp(d->order[k]->kernel_id, decl->patterns[i].kernel_id) ==
                0)
                st = sw_fail(SW_EVALUE, "kernel_id '%s' is already used by %s",
                             decl->patterns[i].kernel_id, d->def.name);
    sw_kernel_pack_rec *rec = NULL;
    if (!st)
        st = sw_kernel_pack_copy(decl, &rec);
    if (!st) {
        rec->next = *link;
        *link = rec;
        st = sw_defn_rebuild_kernels(d);
        if (st) {
            *link = rec->next;
            rec->decl.drop = NULL; /* the caller keeps ctx */
            sw_kernel_pack_free(rec);
        } else {
            e->items = d->caps;
            e->count = d->ncaps;
        }
    }
    pthread_mutex_unlock(&reg_lock);
    return st;
}

/* Definitions live until their class is forgotten, and a carrier keeps
 * its class alive, so the pointer stays valid without the lock. */
const sw_defn *sw_defn_lookup(const void *cls, int observe) {
    if (!cls)
        return NULL;
    pthread_mutex_lock(&reg_lock);
    int64_t at = find_locked(cls);
    sw_defn *d = at >= 0 ? entries[at].defn : NULL;
    if (d && observe) {
        if (entries[at].state == SW_CAPS_DEFINED)
            entries[at].state = SW_CAPS_DEFINED_SEALED;
        atomic_fetch_add(&d->refs, 1);
    }
    pthread_mutex_unlock(&reg_lock);
    return d;
}

/* ------------------------------------------------------------ snapshots */

struct sw_capability_snapshot {
    /* 0 open, 1 being published, 2 final: items and count are written
     * once, before the release store of 2. */
    atomic_int state;
    sw_op_capability *items;
    int64_t count;
};

sw_status sw_capability_snapshot_new(sw_capability_snapshot **out) {
    sw_capability_snapshot *s = sw_malloc(sizeof *s);
    if (!s)
        return sw_oom();
    atomic_init(&s->state, 0);
    s->items = NULL;
    s->count = 0;
    *out = s;
    return SW_OK;
}

void sw_capability_snapshot_free(sw_capability_snapshot *s) {
    if (!s)
        return;
    sw_free(s->items);
    sw_free(s);
}

sw_status sw_capability_snapshot_finalize(sw_capability_snapshot *s,
                                          const char *name, int64_t n,
                                          const sw_op_capability *caps) {
    name = name ? name : "carrier";
    if (!s)
        return sw_fail(SW_EVALUE, "capability snapshot must not be NULL");
    if (atomic_load_explicit(&s->state, memory_order_acquire) != 0)
        return sw_fail(SW_ERUNTIME, "%s capabilities are already finalized",
                       name);
    sw_op_capability *items = NULL;
    sw_status st = prepare(name, n, caps, 1, &items);
    if (st)
        return st;
    int open = 0;
    if (!atomic_compare_exchange_strong(&s->state, &open, 1)) {
        sw_free(items);
        return sw_fail(SW_ERUNTIME, "%s capabilities are already finalized",
                       name);
    }
    s->items = items;
    s->count = n;
    atomic_store_explicit(&s->state, 2, memory_order_release);
    return SW_OK;
}

int sw_capability_snapshot_is_final(const sw_capability_snapshot *s) {
    return s && atomic_load_explicit(&((sw_capability_snapshot *)s)->state,
                                     memory_order_acquire) == 2;
}

sw_status sw_capability_snapshot_get(const sw_capability_snapshot *s,
                                     const char *name,
                                     sw_capability_list *out) {
    if (!sw_capability_snapshot_is_final(s))
        return sw_fail(SW_ERUNTIME,
                       "%s has not finalized its operation-plan capabilities",
                       name ? name : "carrier");
    sw_capability_list l = {s->items, s->count};
    *out = l;
    return SW_OK;
}

/* ------------------------------------------------------------- carriers */

const void *sw_carrier_class_tag(const sw_carrier *c) {
    return sw_carrier_tag_inline(c);
}

int sw_carrier_supports_storage_dtype(sw_carrier *c, sw_dtype dtype) {
    if (!c || !valid_dtype(dtype))
        return 0;
    if (sw_carrier_is_cpu(c))
        return dtype == SW_DTYPE_FLOAT32 || dtype == SW_DTYPE_INT32 ||
               dtype == SW_DTYPE_BOOL;
    if (sw_carrier_is_generic(c))
        return 1;
    if (sw_carrier_is_file(c))
        return dtype == SW_DTYPE_FLOAT32 || dtype == SW_DTYPE_INT32 ||
               dtype == SW_DTYPE_FLOATING;
    if (sw_carrier_is_opencl(c))
        return sw_opencl_supports_dtype(dtype);
    if (sw_carrier_is_defined(c)) {
        /* The provider answers every time; a failure reads as "no" with
         * the error left for the caller. */
        int yes = 0;
        return sw_carrier_defined_supports_dtype(c, dtype, &yes) == SW_OK &&
               yes;
    }
    if (sw_carrier_is_evictable(c))
        return sw_carrier_supports_storage_dtype(sw_evictable_primary(c),
                                                 dtype) &&
               sw_carrier_supports_storage_dtype(sw_evictable_secondary(c),
                                                 dtype);
    return sw_carrier_dtype(c) == dtype;
}

/* The Evictable snapshot: the primary's plans whose output both tiers can
 * store, made once; a losing racer frees its copy. */
static sw_status evictable_capabilities(sw_carrier *c,
                                        sw_capability_list *out) {
    sw_snapshot_slot *slot = sw_evictable_caps_slot(c);
    sw_capability_snapshot *s =
        atomic_load_explicit(slot, memory_order_acquire);
    if (!s) {
        sw_carrier *primary = sw_evictable_primary(c);
        sw_carrier *secondary = sw_evictable_secondary(c);
        sw_capability_list pl;
        sw_status st = sw_carrier_capabilities(primary, &pl);
        if (st)
            return st;
        sw_op_capability *kept = NULL;
        if (pl.count > 0) {
            kept = sw_malloc((size_t)pl.count * sizeof *kept);
            if (!kept)
                return sw_oom();
        }
        int64_t n = 0;
        for (int64_t i = 0; i < pl.count; ++i) {
            sw_dtype d = pl.items[i].output;
            if (sw_carrier_supports_storage_dtype(primary, d) &&
                sw_carrier_supports_storage_dtype(secondary, d))
                kept[n++] = pl.items[i];
        }
        st = sw_capability_snapshot_new(&s);
        if (!st)
            st = sw_capability_snapshot_finalize(s, "Evictable", n, kept);
        sw_free(kept);
        if (st) {
            sw_capability_snapshot_free(s);
            return st;
        }
        sw_capability_snapshot *none = NULL;
        if (!atomic_compare_exchange_strong_explicit(
                slot, &none, s, memory_order_acq_rel, memory_order_acquire)) {
            sw_capability_snapshot_free(s);
            s = none;
        }
    }
    return sw_capability_snapshot_get(s, "Evictable", out);
}

sw_status sw_carrier_capabilities(sw_carrier *c, sw_capability_list *out) {
    if (!c)
        return sw_fail(SW_EVALUE, "carrier must not be NULL");
    if (sw_carrier_is_evictable(c))
        return evictable_capabilities(c, out);
    const sw_defn *d = sw_carrier_defn(c);
    if (d && d->def.dependent)
        return sw_carrier_defined_capabilities(c, out);
    return sw_capabilities_of_class(sw_carrier_class_tag(c), out);
}
