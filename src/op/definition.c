/*
 * Operation definitions (definition.h): the run-time part of the
 * registry, binding, resolution checks, reference execution and the
 * autograd nodes of defined operations.
 */
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "carrier/internal.h"
#include "op/internal.h"
#include "profile/internal.h"
#include "strideweave/extension.h"
#include "strideweave/definition.h"
#include "tensor/internal.h"

/* ------------------------------------------------------------- records */

/* One registered definition. The info record comes first so that the
 * registry can hand it out as the definition's sw_op_info. */
typedef struct def_record {
    sw_op_info info;
    sw_op_definition def;
    sw_operand_spec operands[SW_DEF_MAX_OPERANDS];
    sw_option_spec options[SW_DEF_MAX_OPTIONS];
    int32_t ndiff;                     /* differentiable operands */
    int32_t diff[SW_DEF_MAX_OPERANDS]; /* their operand indices */
    char *strings;                     /* every copied name */
} def_record;

/*
 * Append-only: a slot is written once, under the lock, before the count
 * that covers it is published with release order. Readers load the count
 * with acquire order and read only the slots below it, without a lock.
 */
static def_record *records[SW_DEF_MAX_DEFINITIONS];
static atomic_int nrecords;
static pthread_mutex_t define_lock = PTHREAD_MUTEX_INITIALIZER;

int sw_op_contract_failed(void) {
    return sw_error_is_contract();
}

int32_t sw_def_count(void) {
    return (int32_t)atomic_load_explicit(&nrecords, memory_order_acquire);
}

static const def_record *record_of(int32_t id) {
    int32_t k = id - SW_OP_BUILTIN_COUNT;
    if (k < 0 || k >= sw_def_count())
        return NULL;
    return records[k];
}

const sw_op_info *sw_def_info_get(int32_t id) {
    const def_record *r = record_of(id);
    return r ? &r->info : NULL;
}

const sw_op_info *sw_def_info_find(const char *name) {
    int32_t n = sw_def_count();
    for (int32_t k = 0; k < n; ++k)
        if (strcmp(records[k]->info.name, name) == 0)
            return &records[k]->info;
    return NULL;
}

const sw_op_definition *sw_op_definition_get(int32_t id) {
    const def_record *r = record_of(id);
    return r ? &r->def : NULL;
}

int sw_op_definition_operand_differentiable(int32_t id, int32_t i) {
    const def_record *r = record_of(id);
    return r && i >= 0 && i < r->def.noperands && r->operands[i].differentiable;
}

/* ------------------------------------------------------------ defining */

static int is_ident_char(char c, int first) {
    return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (!first && c >= '0' && c <= '9');
}

/* A non-empty identifier of n bytes (ASCII: what C names can carry). */
static int is_ident(const char *s, size_t n) {
    if (n == 0)
        return 0;
    for (size_t i = 0; i < n; ++i)
        if (!is_ident_char(s[i], i == 0))
            return 0;
    return 1;
}

static int is_builtin_name(const char *s, size_t n) {
    for (int32_t id = 0; id < SW_OP_BUILTIN_COUNT; ++id) {
        const sw_op_info *e = sw_op_info_get(id);
        if ((strlen(e->name) == n && memcmp(e->name, s, n) == 0) ||
            (strlen(e->plan_name) == n && memcmp(e->plan_name, s, n) == 0))
            return 1;
    }
    return 0;
}

static sw_status check_name(const char *name) {
    const char *dot = strchr(name, '.');
    int ok = dot != NULL;
    for (const char *s = name; ok;) {
        const char *e = strchr(s, '.');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        ok = is_ident(s, n);
        if (!e)
            break;
        s = e + 1;
    }
    if (!ok)
        return sw_fail(SW_EVALUE,
                       "operation name '%s' must be namespaced: dot-separated "
                       "identifier segments such as 'acme.scale'",
                       name);
    size_t first = (size_t)(dot - name);
    if ((first == 11 && memcmp(name, "strideweave", 11) == 0) ||
        is_builtin_name(name, first))
        return sw_fail(SW_EVALUE,
                       "operation namespace '%.*s' of '%s' is reserved",
                       (int)first, name, name);
    return SW_OK;
}

static sw_status check_schema(const sw_op_definition *d) {
    if (d->noperands < 1)
        return sw_fail(SW_EVALUE, "the operand list of '%s' must not be empty",
                       d->name);
    if (d->noperands > SW_DEF_MAX_OPERANDS)
        return sw_fail(SW_EVALUE,
                       "'%s' has %d operands; at most %d are "
                       "supported",
                       d->name, (int)d->noperands, SW_DEF_MAX_OPERANDS);
    if (d->noptions < 0 || d->noptions > SW_DEF_MAX_OPTIONS)
        return sw_fail(SW_EVALUE,
                       "'%s' has %d options; at most %d are "
                       "supported",
                       d->name, (int)d->noptions, SW_DEF_MAX_OPTIONS);
    if (d->noptions > 0 && !d->options)
        return sw_fail(SW_ETYPE, "options of '%s' are missing", d->name);
    int32_t total = d->noperands + d->noptions;
    for (int32_t i = 0; i < total; ++i) {
        int operand = i < d->noperands;
        const char *n =
            operand ? d->operands[i].name : d->options[i - d->noperands].name;
        const char *what = operand ? "operand" : "option";
        if (!n || !is_ident(n, strlen(n)))
            return sw_fail(SW_EVALUE,
                           "%s name '%s' of '%s' must be an "
                           "identifier",
                           what, n ? n : "(null)", d->name);
        if (operand) {
            sw_operand_kind k = d->operands[i].kind;
            if (k != SW_OPERAND_TENSOR && k != SW_OPERAND_WEAK_SCALAR &&
                k != SW_OPERAND_STRUCTURAL)
                return sw_fail(SW_ETYPE,
                               "operand '%s' of '%s' has no valid "
                               "OperandKind",
                               n, d->name);
            if (d->operands[i].differentiable && k != SW_OPERAND_TENSOR)
                return sw_fail(SW_EVALUE,
                               "operand '%s' of '%s': only a Tensor "
                               "operand can be differentiable",
                               n, d->name);
        }
        for (int32_t j = 0; j < i; ++j) {
            const char *m = j < d->noperands
                                ? d->operands[j].name
                                : d->options[j - d->noperands].name;
            if (strcmp(m, n) == 0)
                return sw_fail(SW_EVALUE,
                               "operand and option names of '%s' "
                               "must be unique: '%s' repeats",
                               d->name, n);
        }
    }
    return SW_OK;
}

static char *copy_string(char **cursor, const char *s) {
    size_t n = strlen(s) + 1;
    char *r = *cursor;
    memcpy(r, s, n);
    *cursor += n;
    return r;
}

sw_status sw_op_define(const sw_op_definition *d, int32_t *id) {
    if (!d || d->version != SW_OP_DEFINITION_VERSION)
        return sw_fail(SW_ETYPE, "operation definition is missing or of an "
                                 "unsupported version");
    if (!d->name)
        return sw_fail(SW_ETYPE, "operation name must be a string");
    sw_status st = check_name(d->name);
    if (st)
        return st;
    if (!d->vjp == !d->non_differentiable)
        return sw_fail(SW_EVALUE,
                       "the vjp of '%s' must be supplied explicitly: a "
                       "callback or the non-differentiable marker, not both",
                       d->name);
    if (!d->resolve)
        return sw_fail(SW_ETYPE, "the resolve callback of '%s' is missing",
                       d->name);
    if (d->noperands > 0 && !d->operands)
        return sw_fail(SW_ETYPE, "operands of '%s' are missing", d->name);
    if ((st = check_schema(d)))
        return st;

    size_t bytes = strlen(d->name) + 1;
    for (int32_t i = 0; i < d->noperands; ++i)
        bytes += strlen(d->operands[i].name) + 1;
    for (int32_t i = 0; i < d->noptions; ++i)
        bytes += strlen(d->options[i].name) + 1;
    def_record *r = sw_calloc(1, sizeof *r);
    char *strings = sw_malloc(bytes);
    if (!r || !strings) {
        sw_free(r);
        sw_free(strings);
        return sw_oom();
    }
    char *cur = strings;
    r->strings = strings;
    r->def = *d;
    r->def.name = copy_string(&cur, d->name);
    for (int32_t i = 0; i < d->noperands; ++i) {
        r->operands[i] = d->operands[i];
        r->operands[i].differentiable = d->operands[i].differentiable != 0;
        r->operands[i].name = copy_string(&cur, d->operands[i].name);
        if (r->operands[i].differentiable)
            r->diff[r->ndiff++] = i;
    }
    for (int32_t i = 0; i < d->noptions; ++i) {
        r->options[i] = d->options[i];
        r->options[i].name = copy_string(&cur, d->options[i].name);
    }
    r->def.operands = r->operands;
    r->def.options = r->options;
    r->info.name = r->def.name;
    r->info.plan_name = r->def.name;
    r->info.title = r->def.name;
    r->info.form = SW_FORM_DEFINED;
    r->info.noperands = d->noperands;
    r->info.operands = r->operands;
    r->info.vop = (sw_vop)-1;

    pthread_mutex_lock(&define_lock);
    int32_t n = sw_def_count();
    if (sw_op_info_find(r->def.name))
        st = sw_fail(SW_EVALUE, "operation '%s' is already defined",
                     r->def.name);
    else if (n >= SW_DEF_MAX_DEFINITIONS)
        st = sw_fail(SW_ERUNTIME,
                     "no more operations can be defined (at most "
                     "%d)",
                     SW_DEF_MAX_DEFINITIONS);
    if (!st) {
        r->info.id = SW_OP_BUILTIN_COUNT + n;
        records[n] = r;
        atomic_store_explicit(&nrecords, n + 1, memory_order_release);
    }
    pthread_mutex_unlock(&define_lock);
    if (st) {
        sw_free(strings);
        sw_free(r);
        return st;
    }
    if (id)
        *id = r->info.id;
    return SW_OK;
}

/* ------------------------------------------------------------- binding */

static int is_scalar_arg(sw_arg_kind k) {
    return k == SW_ARG_F64 || k == SW_ARG_I64 || k == SW_ARG_BOOL;
}

sw_status sw_op_bind(int32_t id, int32_t noperands, const sw_arg *operands,
                     int32_t noptions, const sw_named_arg *options,
                     sw_bound_call *out) {
    const def_record *r = record_of(id);
    if (!r)
        return sw_fail(SW_EKEY, "operation %d is not a definition", (int)id);
    const char *name = r->def.name;
    if (noperands != r->def.noperands)
        return sw_fail(SW_ETYPE, "'%s' expects %d operands, got %d", name,
                       (int)r->def.noperands, (int)noperands);
    sw_arg opt[SW_DEF_MAX_OPTIONS];
    int given[SW_DEF_MAX_OPTIONS] = {0};
    for (int32_t i = 0; i < noptions; ++i) {
        const char *k = options[i].name ? options[i].name : "(null)";
        int32_t j = 0;
        while (j < r->def.noptions && strcmp(r->options[j].name, k) != 0)
            ++j;
        if (j == r->def.noptions)
            return sw_fail(SW_ETYPE, "'%s' got an unknown option '%s'", name,
                           k);
        if (given[j])
            return sw_fail(SW_ETYPE, "'%s' got option '%s' twice", name, k);
        given[j] = 1;
        opt[j] = options[i].value;
    }
    for (int32_t j = 0; j < r->def.noptions; ++j) {
        if (given[j])
            continue;
        if (r->options[j].required)
            return sw_fail(SW_ETYPE, "'%s' is missing required option '%s'",
                           name, r->options[j].name);
        opt[j] = r->options[j].default_value;
    }
    for (int32_t i = 0; i < noperands; ++i) {
        const sw_operand_spec *s = &r->operands[i];
        const sw_arg *a = &operands[i];
        if (s->kind == SW_OPERAND_TENSOR &&
            (a->kind != SW_ARG_TENSOR || !a->as.tensor))
            return sw_fail(SW_ETYPE, "operand '%s' of '%s' must be a Tensor",
                           s->name, name);
        if (s->kind == SW_OPERAND_WEAK_SCALAR && !is_scalar_arg(a->kind))
            return sw_fail(SW_ETYPE,
                           "operand '%s' of '%s' must be a weak scalar (a "
                           "real number, not a Tensor)",
                           s->name, name);
    }
    sw_status gate = sw_args_single(noperands, operands, SW_ENTRY_OPERATION);
    if (gate)
        return gate;
    memset(out, 0, sizeof *out);
    out->op = id;
    out->noperands = noperands;
    memcpy(out->operands, operands, (size_t)noperands * sizeof *operands);
    out->noptions = r->def.noptions;
    memcpy(out->options, opt, (size_t)r->def.noptions * sizeof *opt);
    return SW_OK;
}

/* ---------------------------------------------------------- resolution */

void sw_resolution_clear(sw_resolution *res) {
    if (!res)
        return;
    for (int32_t i = 0; i < SW_DEF_MAX_RESULTS; ++i) {
        if (res->results[i].layout) {
            sw_layout_unref(res->results[i].layout);
            res->results[i].layout = NULL;
        }
    }
    if (res->token && res->token_release)
        res->token_release(res->token);
    res->token = NULL;
    res->token_release = NULL;
}

static sw_status check_indices(const char *name, const char *what,
                               const sw_bound_call *call, int32_t n,
                               const int32_t *idx) {
    const def_record *r = record_of(call->op);
    if (n < 0 || n > SW_DEF_MAX_OPERANDS)
        return sw_fail(SW_EVALUE, "%s of '%s': bad count %d", what, name,
                       (int)n);
    for (int32_t i = 0; i < n; ++i) {
        if (idx[i] < 0)
            return sw_fail(SW_EVALUE,
                           "%s of '%s' must be non-negative, got "
                           "%d",
                           what, name, (int)idx[i]);
        if (idx[i] >= call->noperands)
            return sw_fail(SW_EVALUE,
                           "%s of '%s': index %d is out-of-range "
                           "for %d operands",
                           what, name, (int)idx[i], (int)call->noperands);
        if (r->operands[idx[i]].kind != SW_OPERAND_TENSOR)
            return sw_fail(SW_EVALUE,
                           "%s of '%s' must name Tensor operands: "
                           "operand %d ('%s') is not one",
                           what, name, (int)idx[i], r->operands[idx[i]].name);
        for (int32_t j = 0; j < i; ++j)
            if (idx[j] == idx[i])
                return sw_fail(SW_EVALUE,
                               "%s of '%s' must be unique: %d "
                               "repeats",
                               what, name, (int)idx[i]);
    }
    return SW_OK;
}

sw_status sw_resolution_check(const sw_bound_call *call,
                              const sw_resolution *res) {
    const def_record *r = call ? record_of(call->op) : NULL;
    if (!r || !res)
        return sw_fail(SW_EVALUE, "resolution of an unknown definition");
    const char *name = r->def.name;
    const sw_op_plan *p = &res->plan;
    int32_t k = 0;
    int roles_ok = p->op == call->op;
    for (int32_t i = 0; i < call->noperands && roles_ok; ++i) {
        sw_operand_kind kind = r->operands[i].kind;
        if (kind == SW_OPERAND_STRUCTURAL)
            continue;
        sw_operand_role want =
            kind == SW_OPERAND_TENSOR ? SW_ROLE_TENSOR : SW_ROLE_WEAK_SCALAR;
        roles_ok = k < p->noperands && p->operands[k].role == want;
        ++k;
    }
    if (!roles_ok || k != p->noperands)
        return sw_fail(SW_EVALUE,
                       "the plan of '%s' must match the call's operation and "
                       "operand roles (its tensor and weak-scalar operands, "
                       "in order)",
                       name);
    if (res->nresults < 1)
        return sw_fail(SW_EVALUE, "the results of '%s' must not be empty",
                       name);
    if (res->nresults > SW_DEF_MAX_RESULTS)
        return sw_fail(SW_EVALUE,
                       "'%s' declares %d results; at most %d are "
                       "supported",
                       name, (int)res->nresults, SW_DEF_MAX_RESULTS);
    for (int32_t i = 0; i < res->nresults; ++i) {
        const sw_result_spec *s = &res->results[i];
        if ((int)s->dtype < 0 || s->dtype >= SW_DTYPE_COUNT)
            return sw_fail(SW_ETYPE, "result %d of '%s' needs a DType", (int)i,
                           name);
        if (!s->layout)
            return sw_fail(SW_ETYPE, "result %d of '%s' needs a layout", (int)i,
                           name);
        if (!isfinite(s->atol) || !isfinite(s->rtol) || s->atol < 0 ||
            s->rtol < 0)
            return sw_fail(SW_EVALUE,
                           "tolerances of result %d of '%s' must "
                           "be finite and non-negative",
                           (int)i, name);
        if (s->alias_of < -1)
            return sw_fail(SW_EVALUE,
                           "alias_of of result %d of '%s' must be "
                           "non-negative",
                           (int)i, name);
        if (s->alias_of >= 0) {
            sw_status st =
                check_indices(name, "alias_of", call, 1, &s->alias_of);
            if (st)
                return st;
        }
    }
    sw_status st = check_indices(name, "mutated_operands", call, res->nmutated,
                                 res->mutated);
    if (!st)
        st = check_indices(name, "saved_operands", call, res->nsaved,
                           res->saved);
    if (st)
        return st;
    if (res->kernel_id && !res->kernel_id[0])
        return sw_fail(SW_EVALUE, "the kernel_id of '%s' must not be empty",
                       name);
    return SW_OK;
}

static void init_resolution(sw_resolution *res) {
    memset(res, 0, sizeof *res);
    for (int32_t i = 0; i < SW_DEF_MAX_RESULTS; ++i)
        res->results[i].alias_of = -1;
}

sw_status sw_op_resolve(const sw_bound_call *call, sw_resolution *out) {
    const def_record *r = call ? record_of(call->op) : NULL;
    if (!r)
        return sw_fail(SW_EKEY, "not a bound call of a definition");
    sw_resolution res;
    init_resolution(&res);
    sw_status st = r->def.resolve(r->def.ctx, call, &res);
    if (!st)
        st = sw_resolution_check(call, &res);
    if (st) {
        sw_resolution_clear(&res);
        return st;
    }
    *out = res;
    return SW_OK;
}

/* ----------------------------------------------------------- reference */

/* A broken provider contract: bindings raise their contract error. */
static sw_status contract(void) {
    sw_error_mark_contract();
    return SW_ERUNTIME;
}

sw_status sw_contract_fail(const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    sw_fail(SW_ERUNTIME, "%s", msg);
    sw_error_mark_contract();
    return SW_ERUNTIME;
}

static int pin_operands(const sw_bound_call *call, sw_carrier **pinned) {
    int n = 0;
    for (int32_t i = 0; i < call->noperands; ++i) {
        const sw_arg *a = &call->operands[i];
        if (a->kind == SW_ARG_TENSOR && a->as.tensor &&
            sw_carrier_pin(a->as.tensor->carrier) == SW_OK)
            pinned[n++] = a->as.tensor->carrier;
    }
    return n;
}

static sw_status run_reference(const def_record *r, const sw_bound_call *call,
                               const sw_resolution *res, sw_tensor **results) {
    const char *name = r->def.name;
    if (!r->def.reference)
        return sw_fail(SW_ENOTIMPL, "operation '%s' has no reference", name);
    sw_tensor *got[SW_DEF_MAX_RESULTS] = {NULL};
    sw_carrier *pinned[SW_DEF_MAX_OPERANDS];
    int npinned = pin_operands(call, pinned);
    /* The reference computes values; what it calls records nothing. */
    int grad = sw_grad_enabled();
    sw_set_grad_enabled(0);
    sw_status st = r->def.reference(r->def.ctx, call, res, got);
    sw_set_grad_enabled(grad);
    for (int i = 0; i < npinned; ++i)
        sw_carrier_unpin(pinned[i]);
    for (int32_t i = 0; i < res->nresults && !st; ++i) {
        const sw_result_spec *s = &res->results[i];
        sw_tensor *t = got[i];
        if (!t) {
            st = i == 0 ? (sw_fail(SW_ERUNTIME,
                                   "the reference of '%s' "
                                   "returned no results",
                                   name),
                           contract())
                        : sw_fail(SW_ETYPE,
                                  "result %d of the reference of '%s' must be "
                                  "a Tensor",
                                  (int)i, name);
            break;
        }
        if (s->alias_of >= 0) {
            if (t != call->operands[s->alias_of].as.tensor) {
                sw_fail(SW_ERUNTIME,
                        "the reference of '%s' broke aliasing: result %d is "
                        "declared alias_of operand %d but is not that very "
                        "Tensor",
                        name, (int)i, (int)s->alias_of);
                st = contract();
            }
            continue;
        }
        /* A result other than declared breaks the invocation's contract:
         * kernels may never rewrite dtype or layout. */
        if (sw_tensor_dtype(t) != s->dtype) {
            sw_fail(SW_ERUNTIME,
                    "result %d of the reference of '%s' has dtype %s, "
                    "declared %s",
                    (int)i, name, sw_dtype_name(sw_tensor_dtype(t)),
                    sw_dtype_name(s->dtype));
            st = contract();
        } else if (!sw_layout_equal(t->layout, s->layout)) {
            sw_fail(SW_ERUNTIME,
                    "result %d of the reference of '%s' does not have the "
                    "declared layout",
                    (int)i, name);
            st = contract();
        }
    }
    if (st) {
        for (int32_t i = 0; i < SW_DEF_MAX_RESULTS; ++i)
            sw_tensor_unref(got[i]);
        return st;
    }
    memcpy(results, got, (size_t)res->nresults * sizeof *got);
    return SW_OK;
}

sw_status sw_op_execute_reference(const sw_bound_call *call,
                                  const sw_resolution *res,
                                  sw_tensor **results) {
    const def_record *r = call ? record_of(call->op) : NULL;
    if (!r || !res)
        return sw_fail(SW_EKEY, "not a bound call of a definition");
    sw_status st = sw_resolution_check(call, res);
    return st ? st : run_reference(r, call, res, results);
}

/* -------------------------------------------------------- autograd nodes */

/* The state one call's nodes share. */
typedef struct def_call {
    sw_refcount ref;
    const def_record *rec;
    sw_bound_call call; /* kept tensors retained, others SW_ARG_NONE */
    sw_resolution res;
    char *kernel_id;
    int32_t nsaved; /* 0 once freed */
    sw_tensor *saved[SW_DEF_MAX_OPERANDS];
    int64_t versions[SW_DEF_MAX_OPERANDS];
    sw_tensor *outputs[SW_DEF_MAX_RESULTS];
    atomic_int nodes_left; /* nodes that have not run backward yet */
    atomic_int freed;
} def_call;

typedef struct node_state {
    def_call *dc;
    int32_t result;
    int ran;
} node_state;

static void free_saved(def_call *dc) {
    for (int32_t i = 0; i < dc->nsaved; ++i) {
        sw_tensor_unref(dc->saved[i]);
        dc->saved[i] = NULL;
    }
    dc->nsaved = 0;
    for (int32_t i = 0; i < SW_DEF_MAX_RESULTS; ++i) {
        sw_tensor_unref(dc->outputs[i]);
        dc->outputs[i] = NULL;
    }
    for (int32_t i = 0; i < dc->call.noperands; ++i) {
        if (dc->call.operands[i].kind == SW_ARG_TENSOR)
            sw_tensor_unref(dc->call.operands[i].as.tensor);
        dc->call.operands[i].kind = SW_ARG_NONE;
    }
    sw_resolution_clear(&dc->res);
}

static void def_call_unref(def_call *dc) {
    if (!dc || !sw_ref_dec(&dc->ref))
        return;
    if (!atomic_load(&dc->freed))
        free_saved(dc);
    sw_free(dc->kernel_id);
    sw_free(dc);
}

static sw_status node_forward(sw_op *op, int32_t nargs, const sw_arg *args,
                              sw_tensor **out) {
    (void)op;
    (void)nargs;
    (void)args;
    (void)out;
    return sw_fail(SW_ERUNTIME, "a defined operation's node runs only "
                                "through its definition's call");
}

/* g as a fresh tensor with layout (same shape), on g's carrier class. */
static sw_status relayout(sw_tensor *g, sw_layout *layout, sw_tensor **out) {
    sw_carrier *c = NULL;
    sw_tensor *t = NULL;
    sw_status st = sw_carrier_allocate_like(
        g->carrier, sw_layout_cosize(layout), 1, SW_DTYPE_COUNT, 0, &c);
    if (!st)
        st = sw_tensor_new(c, 0, layout, &t);
    if (!st)
        st = sw_carrier_scatter(c, g, t, layout, 0);
    sw_carrier_unref(c);
    if (st) {
        sw_tensor_unref(t);
        return st;
    }
    *out = t;
    return SW_OK;
}

static sw_status check_grads(const def_record *r, const def_call *dc,
                             sw_tensor **grads) {
    const char *name = r->def.name;
    for (int32_t j = 0; j < r->ndiff; ++j) {
        sw_tensor *g = grads[j];
        int32_t i = r->diff[j];
        sw_tensor *x = dc->call.operands[i].as.tensor;
        if (!g || !x)
            continue;
        if (!sw_tree_equal(sw_layout_shape(g->layout),
                           sw_layout_shape(x->layout)))
            return sw_fail(SW_EVALUE,
                           "the VJP of '%s' returned a gradient of "
                           "incompatible shape for operand '%s'",
                           name, r->operands[i].name);
        if (sw_tensor_dtype(g) != sw_tensor_dtype(x))
            return sw_fail(SW_ETYPE,
                           "the VJP of '%s' returned a gradient of "
                           "incompatible dtype %s for operand '%s' (%s)",
                           name, sw_dtype_name(sw_tensor_dtype(g)),
                           r->operands[i].name,
                           sw_dtype_name(sw_tensor_dtype(x)));
        if (!sw_layout_equal(g->layout, x->layout)) {
            sw_tensor *fresh = NULL;
            sw_status st = relayout(g, x->layout, &fresh);
            if (st)
                return st;
            sw_tensor_unref(g);
            grads[j] = fresh;
        }
    }
    return SW_OK;
}

static sw_status node_backward(sw_op *op, sw_tensor *gradient, int32_t n,
                               sw_tensor **grads) {
    node_state *ns = op->state;
    def_call *dc = ns->dc;
    const def_record *r = dc->rec;
    const char *name = r->def.name;
    if (atomic_load(&dc->freed))
        return sw_fail(SW_ERUNTIME,
                       "Trying to backward through '%s' a second time: its "
                       "saved operands were freed after the first backward",
                       name);
    for (int32_t i = 0; i < dc->nsaved; ++i) {
        int64_t now = sw_tensor_version(dc->saved[i]);
        if (now != dc->versions[i])
            return sw_fail(SW_ERUNTIME,
                           "A tensor saved by '%s' was modified in-place: "
                           "expected version %lld, got version %lld",
                           name, (long long)dc->versions[i], (long long)now);
    }
    sw_tensor *cot[SW_DEF_MAX_RESULTS] = {NULL};
    cot[ns->result] = gradient;
    sw_tensor *out[SW_DEF_MAX_OPERANDS] = {NULL};
    sw_vjp_context vc = {&dc->call,   &dc->res,   dc->res.nresults,
                         dc->outputs, dc->nsaved, dc->saved};
    int grad = sw_grad_enabled();
    sw_set_grad_enabled(0);
    sw_status st = r->def.vjp(r->def.ctx, &vc, cot, r->ndiff, out);
    sw_set_grad_enabled(grad);
    if (!st)
        st = check_grads(r, dc, out);
    if (st) {
        for (int32_t j = 0; j < SW_DEF_MAX_OPERANDS; ++j)
            sw_tensor_unref(out[j]);
        return st;
    }
    for (int32_t j = 0; j < r->ndiff; ++j) {
        if (j < n)
            grads[j] = out[j];
        else
            sw_tensor_unref(out[j]);
    }
    if (!ns->ran) {
        ns->ran = 1;
        if (atomic_fetch_sub(&dc->nodes_left, 1) == 1 &&
            !atomic_exchange(&dc->freed, 1))
            free_saved(dc);
    }
    return SW_OK;
}

static void node_destroy(sw_op *op) {
    node_state *ns = op->state;
    def_call_unref(ns->dc);
    sw_free(ns);
}

static const sw_op_class node_class = {SW_OP_CLASS_VERSION, "DefinedOperation",
                                       node_forward, node_backward,
                                       node_destroy};

static const node_state *node_of(const sw_op *op) {
    return op && op->cls == &node_class ? op->state : NULL;
}

const sw_resolution *sw_op_definition_resolution(const sw_op *op) {
    const node_state *ns = node_of(op);
    return ns && !atomic_load(&ns->dc->freed) ? &ns->dc->res : NULL;
}

int32_t sw_op_definition_nsaved(const sw_op *op) {
    const node_state *ns = node_of(op);
    return ns && !atomic_load(&ns->dc->freed) ? ns->dc->nsaved : 0;
}

sw_tensor *sw_op_definition_saved(const sw_op *op, int32_t i) {
    int32_t n = sw_op_definition_nsaved(op);
    return i >= 0 && i < n ? node_of(op)->dc->saved[i] : NULL;
}

int32_t sw_op_definition_result(const sw_op *op) {
    const node_state *ns = node_of(op);
    return ns ? ns->result : -1;
}

/* Makes the shared state of one recorded call; takes over res. */
static sw_status make_def_call(const def_record *r, const sw_bound_call *call,
                               sw_resolution *res, sw_tensor **results,
                               def_call **out) {
    def_call *dc = sw_calloc(1, sizeof *dc);
    const char *kid = res->kernel_id ? res->kernel_id : r->def.name;
    size_t nk = strlen(kid) + 1;
    char *kernel_id = sw_malloc(nk);
    if (!dc || !kernel_id) {
        sw_free(dc);
        sw_free(kernel_id);
        return sw_oom();
    }
    sw_ref_init(&dc->ref);
    dc->rec = r;
    memcpy(kernel_id, kid, nk);
    dc->kernel_id = kernel_id;
    for (int32_t i = 0; i < res->nresults; ++i) {
        sw_tensor *t = results[i];
        sw_status st =
            sw_tensor_new(t->carrier, t->offset, t->layout, &dc->outputs[i]);
        if (st) {
            def_call_unref(dc);
            return st;
        }
    }
    dc->call = *call;
    int keep[SW_DEF_MAX_OPERANDS] = {0};
    for (int32_t i = 0; i < res->nsaved; ++i)
        keep[res->saved[i]] = 1;
    for (int32_t i = 0; i < call->noperands; ++i) {
        sw_arg *a = &dc->call.operands[i];
        if (a->kind != SW_ARG_TENSOR)
            continue;
        if (keep[i] || r->operands[i].differentiable)
            sw_tensor_retain(a->as.tensor);
        else
            a->kind = SW_ARG_NONE;
    }
    dc->res = *res;
    dc->res.kernel_id = dc->kernel_id;
    init_resolution(res); /* taken over */
    for (int32_t i = 0; i < dc->res.nsaved; ++i) {
        sw_tensor *t = call->operands[dc->res.saved[i]].as.tensor;
        dc->saved[i] = sw_tensor_retain(t);
        dc->versions[i] = sw_tensor_version(t);
    }
    dc->nsaved = dc->res.nsaved;
    *out = dc;
    return SW_OK;
}

/* The carrier the call dispatches on: its first tensor operand's. */
static sw_carrier *first_carrier(const sw_bound_call *call) {
    for (int32_t i = 0; i < call->noperands; ++i)
        if (call->operands[i].kind == SW_ARG_TENSOR)
            return call->operands[i].as.tensor->carrier;
    return NULL;
}

/* Gives each differentiable result a node; nothing changes on failure. */
static sw_status attach_nodes(const def_record *r, const sw_bound_call *call,
                              sw_resolution *res, sw_tensor **results) {
    sw_tensor *inputs[SW_DEF_MAX_OPERANDS];
    for (int32_t j = 0; j < r->ndiff; ++j)
        inputs[j] = call->operands[r->diff[j]].as.tensor;
    sw_op *nodes[SW_DEF_MAX_RESULTS] = {NULL};
    /* The nodes name the class the call dispatched on (sw_op_dispatch_tag),
     * as a dispatched operation does. */
    sw_carrier *c = first_carrier(call);
    const void *tag = !c                         ? NULL
                      : sw_carrier_is_defined(c) ? sw_carrier_defined_class(c)
                      : c->dispatch_tag          ? c->dispatch_tag
                                                 : (const void *)c->cls;
    def_call *dc = NULL;
    sw_status st = make_def_call(r, call, res, results, &dc);
    int32_t nnodes = 0;
    for (int32_t k = 0; !st && k < dc->res.nresults; ++k) {
        if (!sw_tensor_is_differentiable(results[k]))
            continue;
        node_state *ns = sw_calloc(1, sizeof *ns);
        if (!ns) {
            st = sw_oom();
            break;
        }
        sw_ref_inc(&dc->ref);
        ns->dc = dc;
        ns->result = k;
        st = sw_op_new(&node_class, ns, &nodes[k]);
        if (st) {
            def_call_unref(dc);
            sw_free(ns);
            break;
        }
        nodes[k]->info = &r->info;
        nodes[k]->dispatch_tag = tag;
        st = sw_op_store_inputs(nodes[k], r->ndiff, inputs);
        ++nnodes;
    }
    if (!st) {
        atomic_store(&dc->nodes_left, nnodes);
        for (int32_t k = 0; k < dc->res.nresults; ++k) {
            if (!nodes[k])
                continue;
            sw_op_unref(results[k]->ctx);
            results[k]->ctx = nodes[k];
            nodes[k] = NULL;
        }
    }
    for (int32_t k = 0; k < SW_DEF_MAX_RESULTS; ++k)
        sw_op_unref(nodes[k]);
    def_call_unref(dc);
    return st;
}

/* ---------------------------------------------------------------- calls */

static const sw_op_class frame_class = {SW_OP_CLASS_VERSION, "DefinitionCall",
                                        NULL, NULL, NULL};

/* The kernels of a definition-backed carrier, inside one profiler event
 * when a profiler is active on this thread (the event needs an operation
 * to name it: a state-less one that stands for the call). */
static sw_status run_kernels(const def_record *r, sw_carrier *c,
                             const sw_bound_call *call,
                             const sw_resolution *res, sw_tensor **got) {
    const sw_op_info *info = &r->info;
    if (!SW_UNLIKELY(sw_profile_tls != NULL))
        return sw_kernel_run(c, info, call, res, got);
    sw_op *frame = NULL;
    sw_status st = sw_op_new(&frame_class, NULL, &frame);
    if (st)
        return st;
    frame->info = info;
    frame->dispatched = 1;
    frame->dispatch_tag = sw_carrier_defined_class(c);
    sw_profile_frame f;
    int on = sw_profile_begin(frame, call->noperands, call->operands, &f);
    st = sw_kernel_run(c, info, call, res, got);
    if (on)
        sw_profile_end(&f, st == SW_OK);
    sw_op_unref(frame);
    return st;
}

sw_status sw_op_call(int32_t id, int32_t noperands, const sw_arg *operands,
                     int32_t noptions, const sw_named_arg *options,
                     int32_t *nresults, sw_tensor **results) {
    sw_bound_call call;
    sw_status st =
        sw_op_bind(id, noperands, operands, noptions, options, &call);
    if (st)
        return st;
    const def_record *r = record_of(id);
    const char *name = r->def.name;
    sw_resolution res;
    if ((st = sw_op_resolve(&call, &res)))
        return st;
    int diff_present = 0;
    for (int32_t i = 0; i < call.noperands; ++i) {
        const sw_arg *a = &call.operands[i];
        if (a->kind != SW_ARG_TENSOR)
            continue;
        if (sw_carrier_is_released(a->as.tensor->carrier)) {
            sw_resolution_clear(&res);
            return sw_fail(SW_ERUNTIME, "Carrier is released");
        }
        diff_present |= r->operands[i].differentiable &&
                        sw_tensor_is_differentiable(a->as.tensor);
    }
    int graph = diff_present && sw_grad_enabled() && r->def.vjp;
    for (int32_t k = 0; graph && k < res.nresults; ++k) {
        if (res.results[k].alias_of < 0)
            continue;
        sw_resolution_clear(&res);
        return sw_fail(SW_EVALUE,
                       "result %d of '%s' would be exact-object aliased to "
                       "operand %d while gradients are recorded: a result "
                       "that takes the node cannot be its own operand",
                       (int)k, name, (int)res.results[k].alias_of);
    }
    sw_tensor *got[SW_DEF_MAX_RESULTS] = {NULL};
    int32_t n = res.nresults;
    sw_carrier *dispatch = first_carrier(&call);
    if (dispatch && sw_carrier_is_defined(dispatch))
        st = run_kernels(r, dispatch, &call, &res, got);
    else
        st = run_reference(r, &call, &res, got);
    if (!st && graph)
        st = attach_nodes(r, &call, &res, got);
    if (!st && !diff_present)
        sw_constant_results(call.noperands, call.operands, n, got);
    sw_resolution_clear(&res);
    if (st) {
        for (int32_t k = 0; k < SW_DEF_MAX_RESULTS; ++k)
            sw_tensor_unref(got[k]);
        return st;
    }
    memcpy(results, got, (size_t)n * sizeof *got);
    *nresults = n;
    return SW_OK;
}
