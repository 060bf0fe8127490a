/*
 * The parsers of layout command strings: layout references, output
 * references, and the rearrange, reduce and einsum commands, into specs.
 *
 * Every parser is one left-to-right pass with an explicit stack of open
 * parentheses (no recursion, so no input can exhaust the C stack), and
 * reports the first offending token. Symbol lookups go through small
 * open-addressing tables, so a command costs time linear in its length.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "einops/internal.h"

/* ---------------------------------------------------------- symbol tables */

/* A symbol seen while parsing: its name, the id it stands for and whether
 * an output has placed it already. */
typedef struct psym {
    const char *name;
    int32_t length;
    int32_t id;
    int32_t used;
} psym;

/* Names to entries, for at most the capacity given at init. */
typedef struct names {
    psym *e;
    int32_t n;
    int32_t *slot; /* entry index + 1; 0 marks an empty slot */
    uint64_t mask;
} names;

static void names_free(names *t) {
    sw_free(t->e);
    sw_free(t->slot);
    t->e = NULL;
    t->slot = NULL;
    t->n = 0;
}

static sw_status names_init(names *t, int64_t cap) {
    uint64_t m = 16;
    while (m < (uint64_t)cap * 2)
        m <<= 1;
    t->n = 0;
    t->mask = m - 1;
    t->e = sw_malloc((size_t)(cap + 1) * sizeof(psym));
    t->slot = sw_calloc((size_t)m, sizeof(int32_t));
    if (!t->e || !t->slot) {
        names_free(t);
        return sw_oom();
    }
    return SW_OK;
}

/* The entry of a name, or -1; *pos gets the slot where it would go. */
static int32_t names_find(const names *t, const char *s, int32_t len,
                          uint64_t *pos) {
    uint64_t i = sw_einops_hash(s, len) & t->mask;
    for (;; i = (i + 1) & t->mask) {
        int32_t k = t->slot[i];
        if (k == 0) {
            if (pos)
                *pos = i;
            return -1;
        }
        const psym *e = &t->e[k - 1];
        if (e->length == len && (len == 0 || memcmp(e->name, s, len) == 0))
            return k - 1;
    }
}

/* Adds a name known to be absent, at the slot names_find gave. */
static void names_put(names *t, uint64_t pos, const char *s, int32_t len,
                      int32_t id) {
    psym *e = &t->e[t->n];
    e->name = s;
    e->length = len;
    e->id = id;
    e->used = 0;
    t->slot[pos] = ++t->n;
}

static void names_add(names *t, const char *s, int32_t len, int32_t id) {
    uint64_t pos = 0; /* set by names_find when the name is absent */
    if (names_find(t, s, len, &pos) < 0)
        names_put(t, pos, s, len, id);
}

/* ------------------------------------------------------------ references */

/* The open parentheses of a reference being parsed; level 0 is the top. */
typedef struct groups {
    int32_t depth;
    int64_t start[SW_EINOPS_MAX_DEPTH + 1];
    int32_t items[SW_EINOPS_MAX_DEPTH + 1];
} groups;

static sw_status empty_reference(void) {
    return sw_fail(SW_EVALUE, "Layout reference must not be empty");
}

/*
 * The rules of parentheses, commas and arrows, shared by left-hand and
 * output references. last is set for the slice's final token. Writes the
 * recipe token of a parenthesis to *emit.
 */
static sw_status structure(groups *g, const sw_einops_token *t, int last,
                           int32_t *emit) {
    switch (t->kind) {
    case SW_EINOPS_LEFT_PAREN:
        if (last)
            return empty_reference();
        if (g->depth == SW_EINOPS_MAX_DEPTH)
            return sw_fail(SW_EVALUE,
                           "Layout reference nests parentheses deeper than "
                           "%d at offset %lld",
                           SW_EINOPS_MAX_DEPTH, (long long)t->start);
        ++g->depth;
        g->start[g->depth] = t->start;
        g->items[g->depth] = 0;
        *emit = SW_TOK_PUSH;
        return SW_OK;
    case SW_EINOPS_RIGHT_PAREN:
        if (g->depth == 0)
            return sw_fail(SW_EVALUE,
                           "Unmatched right parenthesis at offset %lld",
                           (long long)t->start);
        if (g->items[g->depth] == 0)
            return sw_fail(SW_EVALUE,
                           "Empty parenthesized group at offset %lld",
                           (long long)t->start);
        --g->depth;
        ++g->items[g->depth];
        *emit = SW_TOK_POP;
        return SW_OK;
    case SW_EINOPS_COMMA:
        return sw_fail(SW_EVALUE,
                       "Commas are not valid in layout references at offset "
                       "%lld",
                       (long long)t->start);
    default:
        return sw_fail(SW_EVALUE,
                       "Arrows are not valid in layout references at offset "
                       "%lld",
                       (long long)t->start);
    }
}

static sw_status unclosed(const groups *g) {
    return sw_fail(SW_EVALUE, "Unclosed left parenthesis at offset %lld",
                   (long long)g->start[g->depth]);
}

/* A parsed left-hand reference: its recipe, its symbols (with their piece
 * ids) and the number of pieces, literal 1s included. */
typedef struct lref {
    int32_t *rec;
    int32_t nrec;
    int32_t nleaf;
    names syms;
} lref;

static void lref_free(lref *r) {
    sw_free(r->rec);
    r->rec = NULL;
    names_free(&r->syms);
}

/*
 * Parses tokens [b, e) as a left-hand reference: leaves are numbered in
 * textual order, a literal 1 takes an id without a name, and a repeated
 * symbol is an error.
 */
static sw_status parse_ref(const sw_einops_token *tok, int64_t b, int64_t e,
                           lref *r) {
    groups g;
    g.depth = 0;
    g.items[0] = 0;
    r->rec = NULL;
    r->nrec = 0;
    r->nleaf = 0;
    r->syms.e = NULL;
    r->syms.slot = NULL;
    if (b == e)
        return empty_reference();
    /* Each token gives at most one recipe token and one symbol. */
    r->rec = sw_malloc((size_t)(e - b) * sizeof(int32_t));
    sw_status st = r->rec ? names_init(&r->syms, e - b) : sw_oom();
    for (int64_t i = b; i < e && !st; ++i) {
        const sw_einops_token *t = &tok[i];
        if (t->kind == SW_EINOPS_SYMBOL) {
            uint64_t pos = 0;
            int32_t len = (int32_t)t->length;
            if (names_find(&r->syms, t->value, len, &pos) >= 0) {
                st = sw_fail(SW_EVALUE,
                             "Duplicate dimension symbol '%.*s' at offset %lld",
                             (int)len, t->value, (long long)t->start);
                break;
            }
            names_put(&r->syms, pos, t->value, len, r->nleaf);
        }
        if (t->kind == SW_EINOPS_SYMBOL || t->kind == SW_EINOPS_ONE) {
            r->rec[r->nrec++] = SW_TOK_LEAF;
            ++r->nleaf;
            ++g.items[g.depth];
        } else {
            st = structure(&g, t, i == e - 1, &r->rec[r->nrec]);
            if (!st)
                ++r->nrec;
        }
    }
    if (!st && g.depth > 0)
        st = unclosed(&g);
    if (st)
        lref_free(r);
    return st;
}

/*
 * Parses tokens [b, e) as an output reference against the known symbols: a
 * symbol becomes its entry's id, a literal 1 a singleton leaf. Writes the
 * recipe into rec (room for e - b tokens) and its length into *nrec.
 */
static sw_status parse_out(const sw_einops_token *tok, int64_t b, int64_t e,
                           names *known, int32_t *rec, int32_t *nrec) {
    groups g;
    g.depth = 0;
    g.items[0] = 0;
    int32_t n = 0;
    if (b == e)
        return empty_reference();
    for (int64_t i = b; i < e; ++i) {
        const sw_einops_token *t = &tok[i];
        sw_status st = SW_OK;
        if (t->kind == SW_EINOPS_SYMBOL) {
            int32_t len = (int32_t)t->length;
            int32_t k = names_find(known, t->value, len, NULL);
            if (k < 0)
                return sw_fail(SW_EVALUE,
                               "Unknown dimension symbol '%.*s' at offset %lld",
                               (int)len, t->value, (long long)t->start);
            if (known->e[k].used)
                return sw_fail(SW_EVALUE,
                               "Duplicate output dimension symbol '%.*s' at "
                               "offset %lld",
                               (int)len, t->value, (long long)t->start);
            known->e[k].used = 1;
            rec[n++] = known->e[k].id;
            ++g.items[g.depth];
        } else if (t->kind == SW_EINOPS_ONE) {
            rec[n++] = SW_TOK_LEAF;
            ++g.items[g.depth];
        } else {
            st = structure(&g, t, i == e - 1, &rec[n]);
            if (st)
                return st;
            ++n;
        }
    }
    if (g.depth > 0)
        return unclosed(&g);
    *nrec = n;
    return SW_OK;
}

/* ------------------------------------------------------------ spec blocks */

/* What a spec is made of, before it is copied into its block. */
typedef struct draft {
    sw_einops_kind kind;
    const char *command;
    int64_t length;
    int32_t nrec[SW_EINOPS_FIELD_COUNT];
    const int32_t *rec[SW_EINOPS_FIELD_COUNT];
    const names *side[2];
    const int32_t *common;
    int32_t ncommon;
    const int32_t *batch;
    int32_t nbatch;
} draft;

static void draft_init(draft *d, sw_einops_kind kind, const char *command,
                       int64_t length) {
    memset(d, 0, sizeof *d);
    d->kind = kind;
    d->command = command;
    d->length = length;
    for (int f = 0; f < SW_EINOPS_FIELD_COUNT; ++f)
        d->nrec[f] = -1;
}

static void draft_set(draft *d, sw_einops_field f, const int32_t *rec,
                      int32_t n) {
    d->rec[f] = rec;
    d->nrec[f] = n;
}

/* Copies a draft into one allocation. */
static sw_status spec_build(const draft *d, sw_einops_spec **out) {
    size_t nsym = 0, nint = (size_t)d->ncommon + (size_t)d->nbatch,
           nchar = (size_t)d->length + 1;
    for (int s = 0; s < 2; ++s) {
        if (!d->side[s])
            continue;
        nsym += (size_t)d->side[s]->n;
        for (int32_t i = 0; i < d->side[s]->n; ++i)
            nchar += (size_t)d->side[s]->e[i].length + 1;
    }
    for (int f = 0; f < SW_EINOPS_FIELD_COUNT; ++f)
        if (d->nrec[f] > 0)
            nint += (size_t)d->nrec[f];
    size_t size = sizeof(sw_einops_spec) + nsym * sizeof(sw_einops_sym) +
                  nint * sizeof(int32_t) + nchar;
    char *block = sw_malloc(size);
    if (!block)
        return sw_oom();
    sw_einops_spec *sp = (sw_einops_spec *)(void *)block;
    sw_einops_sym *sym =
        (sw_einops_sym *)(void *)(block + sizeof(sw_einops_spec));
    int32_t *ints = (int32_t *)(void *)(sym + nsym);
    char *chars = (char *)(ints + nint);
    sw_ref_init(&sp->ref);
    sp->kind = d->kind;
    for (int f = 0; f < SW_EINOPS_FIELD_COUNT; ++f) {
        sp->nrec[f] = d->nrec[f];
        sp->rec[f] = NULL;
        if (d->nrec[f] < 0)
            continue;
        sp->rec[f] = ints;
        if (d->nrec[f] > 0)
            memcpy(ints, d->rec[f], (size_t)d->nrec[f] * sizeof(int32_t));
        ints += d->nrec[f];
    }
    sp->ncommon = d->ncommon;
    sp->common = ints;
    if (d->ncommon)
        memcpy(ints, d->common, (size_t)d->ncommon * sizeof(int32_t));
    ints += d->ncommon;
    sp->nbatch = d->nbatch;
    sp->batch = ints;
    if (d->nbatch)
        memcpy(ints, d->batch, (size_t)d->nbatch * sizeof(int32_t));
    for (int s = 0; s < 2; ++s) {
        sp->nsym[s] = 0;
        sp->sym[s] = sym;
        if (!d->side[s])
            continue;
        for (int32_t i = 0; i < d->side[s]->n; ++i) {
            const psym *e = &d->side[s]->e[i];
            if (e->length)
                memcpy(chars, e->name, (size_t)e->length);
            chars[e->length] = '\0';
            sym[i].name = chars;
            sym[i].length = e->length;
            sym[i].id = e->id;
            chars += e->length + 1;
        }
        sp->nsym[s] = d->side[s]->n;
        sym += d->side[s]->n;
    }
    if (d->length)
        memcpy(chars, d->command, (size_t)d->length);
    chars[d->length] = '\0';
    sp->command = chars;
    sp->length = d->length;
    *out = sp;
    return SW_OK;
}

/* ------------------------------------------------------------ the parsers */

static const char *const command_names[SW_EINOPS_KIND_COUNT] = {
    "Layout reference", "Rearrange", "Reduce", "Einsum"};

/* The index of the only token of a kind in [b, e), or a failure naming how
 * many there were (the arrow and comma rules of the commands). */
static sw_status find_one(const sw_einops_token *tok, int64_t b, int64_t e,
                          sw_einops_token_kind kind, int64_t *at) {
    int64_t n = 0;
    for (int64_t i = b; i < e; ++i) {
        if (tok[i].kind != kind)
            continue;
        if (n++ == 0)
            *at = i;
    }
    return n == 1 ? SW_OK : n == 0 ? SW_EVALUE : SW_ERUNTIME;
}

static sw_status parse_rearrange_tokens(sw_einops_kind kind,
                                        const sw_einops_token *tok, int64_t n,
                                        int64_t arrow, draft *d,
                                        sw_einops_spec **out) {
    lref left;
    sw_status st = parse_ref(tok, 0, arrow, &left);
    if (st)
        return st;
    int64_t nright = n - arrow - 1;
    int32_t nout = 0, nred = 0, nro = 0;
    /* Room for the output, the reduced ids and (output, reduced). */
    int32_t *buf = sw_malloc(
        (size_t)(2 * nright + 2 * (int64_t)left.nleaf + 6) * sizeof(int32_t));
    if (!buf) {
        lref_free(&left);
        return sw_oom();
    }
    int32_t *rec = buf, *red = buf + nright + 1;
    int32_t *ro = red + left.nleaf + 1;
    st = parse_out(tok, arrow + 1, n, &left.syms, rec, &nout);
    if (!st && kind == SW_EINOPS_REDUCE) {
        /* Every left piece the output does not place is reduced, in
         * ascending order: literal 1s too, since they have ids. red first
         * holds the flags; writing the reduced ids over them never
         * overtakes the flag being read, since at most k ids precede k. */
        int32_t *placed = red;
        memset(placed, 0, (size_t)left.nleaf * sizeof(int32_t));
        for (int32_t i = 0; i < nout; ++i)
            if (rec[i] >= 0)
                placed[rec[i]] = 1;
        for (int32_t id = 0; id < left.nleaf; ++id)
            if (!placed[id])
                red[nred++] = id;
        if (nred == 0) {
            st = sw_fail(SW_EVALUE,
                         "Reduce command must omit at least one dimension");
        } else {
            ro[nro++] = SW_TOK_PUSH;
            memcpy(ro + nro, rec, (size_t)nout * sizeof(int32_t));
            nro += nout;
            ro[nro++] = SW_TOK_POP;
            ro[nro++] = SW_TOK_PUSH;
            memcpy(ro + nro, red, (size_t)nred * sizeof(int32_t));
            nro += nred;
            ro[nro++] = SW_TOK_POP;
            draft_set(d, SW_EINOPS_REDUCED, red, nred);
            draft_set(d, SW_EINOPS_REARRANGE_OUTPUT, ro, nro);
        }
    }
    if (!st) {
        draft_set(d, SW_EINOPS_SELECTION, left.rec, left.nrec);
        draft_set(d, SW_EINOPS_OUTPUT, rec, nout);
        d->side[0] = &left.syms;
        st = spec_build(d, out);
    }
    sw_free(buf);
    lref_free(&left);
    return st;
}

static int cmp_psym(const void *a, const void *b) {
    const psym *x = *(const psym *const *)a, *y = *(const psym *const *)b;
    int32_t m = x->length < y->length ? x->length : y->length;
    int c = m ? memcmp(x->name, y->name, (size_t)m) : 0;
    if (c)
        return c;
    return (x->length > y->length) - (x->length < y->length);
}

/* "Einsum output must include every non-shared input symbol: x, y", the
 * missing symbols sorted. */
static sw_status missing_symbols(const names *outk) {
    int32_t nmiss = 0;
    for (int32_t i = 0; i < outk->n; ++i)
        nmiss += !outk->e[i].used;
    const psym **miss = sw_malloc((size_t)nmiss * sizeof *miss);
    if (!miss)
        return sw_oom();
    for (int32_t i = 0, k = 0; i < outk->n; ++i)
        if (!outk->e[i].used)
            miss[k++] = &outk->e[i];
    qsort(miss, (size_t)nmiss, sizeof *miss, cmp_psym);
    /* The message is bounded anyway (sw_errmsg keeps 512 bytes). */
    char list[600];
    size_t used = 0;
    list[0] = '\0';
    for (int32_t i = 0; i < nmiss && used < sizeof list - 1; ++i) {
        int w = snprintf(list + used, sizeof list - used, "%s%.*s",
                         i ? ", " : "", (int)miss[i]->length, miss[i]->name);
        if (w < 0)
            break;
        used += (size_t)w;
    }
    sw_free(miss);
    return sw_fail(SW_EVALUE,
                   "Einsum output must include every non-shared input "
                   "symbol: %s",
                   list);
}

/* Appends to rec the ids on one side (syms) of the lhs symbols idx[0..n)
 * that have flag == want in flags (indexed like idx); returns the count. */
static int32_t side_ids(const lref *lhs, const names *syms, const int32_t *idx,
                        const int32_t *flags, int32_t n, int32_t want,
                        int32_t *rec) {
    int32_t k = 0;
    for (int32_t c = 0; c < n; ++c) {
        if (flags[c] != want)
            continue;
        const psym *e = &lhs->syms.e[idx[c]];
        int32_t j = names_find(syms, e->name, e->length, NULL);
        rec[k++] = syms->e[j].id;
    }
    return k;
}

/*
 * One side's (outer, inner[, batch]) rearrange output: outer holds the
 * side's non-shared symbols in side order (a singleton if none), inner the
 * contracted shared symbols in lhs order (a singleton if every shared
 * symbol is a batch symbol), batch the batch symbols in lhs order; ids are
 * the side's own. Returns the recipe length.
 */
static int32_t side_rearrange_output(const lref *lhs, const lref *side,
                                     const int32_t *shared,
                                     const int32_t *common,
                                     const int32_t *isbatch, int32_t ncommon,
                                     int32_t nbatch, int32_t *rec) {
    int32_t n = 0, k = 0;
    rec[n++] = SW_TOK_PUSH;
    for (int32_t i = 0; i < side->syms.n; ++i)
        if (!shared[i]) {
            rec[n++] = side->syms.e[i].id;
            ++k;
        }
    if (k == 0)
        rec[n++] = SW_TOK_LEAF;
    rec[n++] = SW_TOK_POP;
    rec[n++] = SW_TOK_PUSH;
    k = side_ids(lhs, &side->syms, common, isbatch, ncommon, 0, rec + n);
    n += k;
    if (k == 0)
        rec[n++] = SW_TOK_LEAF;
    rec[n++] = SW_TOK_POP;
    if (nbatch > 0) {
        rec[n++] = SW_TOK_PUSH;
        n += side_ids(lhs, &side->syms, common, isbatch, ncommon, 1, rec + n);
        rec[n++] = SW_TOK_POP;
    }
    return n;
}

static sw_status parse_einsum_tokens(const sw_einops_token *tok, int64_t n,
                                     int64_t arrow, draft *d,
                                     sw_einops_spec **out) {
    int64_t comma = 0;
    sw_status st = find_one(tok, 0, arrow, SW_EINOPS_COMMA, &comma);
    if (st == SW_EVALUE)
        return sw_fail(SW_EVALUE,
                       "Contraction command must contain one comma before "
                       "'->'");
    if (st)
        return sw_fail(SW_EVALUE,
                       "Contraction command must contain only one comma "
                       "before '->'");
    lref lhs, rhs;
    if ((st = parse_ref(tok, 0, comma, &lhs)))
        return st;
    if ((st = parse_ref(tok, comma + 1, arrow, &rhs))) {
        lref_free(&lhs);
        return st;
    }
    int32_t nl = lhs.syms.n, nr = rhs.syms.n;
    int64_t nright = n - arrow - 1;
    names outk;
    outk.e = NULL;
    outk.slot = NULL;
    /* Scratch: the shared flags of both sides, the common symbols, their
     * batch flags and the batch symbols, then the recipes, each with room
     * for its worst case. */
    int64_t nbuf = 11 * (int64_t)nl + 3 * (int64_t)nr + nright + 40;
    int32_t *buf = sw_malloc((size_t)nbuf * sizeof(int32_t));
    if (!buf) {
        st = sw_oom();
        goto done;
    }
    if ((st = names_init(&outk, (int64_t)nl + nr)))
        goto done;
    int32_t *lshared = buf, *rshared = lshared + nl;
    int32_t *common = rshared + nr, *isbatch = common + nl;
    int32_t *batch = isbatch + nl, *lro = batch + nl;
    int32_t *rro = lro + 3 * nl + 10, *mos = rro + 2 * nl + nr + 10;
    int32_t *orec = mos + 2 * nl + nr + 10;
    int32_t ncommon = 0, nbatch = 0;
    for (int32_t j = 0; j < nr; ++j)
        rshared[j] = 0;
    for (int32_t i = 0; i < nl; ++i) {
        const psym *e = &lhs.syms.e[i];
        int32_t k = names_find(&rhs.syms, e->name, e->length, NULL);
        lshared[i] = k >= 0;
        if (k >= 0) {
            rshared[k] = 1;
            common[ncommon++] = i;
        }
    }
    if (ncommon == 0) {
        st = sw_fail(SW_EVALUE, "Contraction command must include at least "
                                "one shared dimension");
        goto done;
    }
    /* A shared symbol that the output names is a batch symbol: kept in the
     * output and matched index by index instead of summed over. */
    for (int32_t c = 0; c < ncommon; ++c) {
        const psym *e = &lhs.syms.e[common[c]];
        isbatch[c] = 0;
        for (int64_t i = arrow + 1; i < n && !isbatch[c]; ++i)
            isbatch[c] = tok[i].kind == SW_EINOPS_SYMBOL &&
                         tok[i].length == e->length &&
                         memcmp(tok[i].value, e->name, (size_t)e->length) == 0;
        if (isbatch[c])
            batch[nbatch++] = common[c];
    }
    /* Output ids: the lhs outer pieces of the product, then the rhs ones;
     * a side without outer symbols still has its singleton piece; then the
     * batch pieces in lhs order. */
    int32_t next = 0, nlo = 0, nro = 0;
    for (int32_t i = 0; i < nl; ++i)
        if (!lshared[i]) {
            names_add(&outk, lhs.syms.e[i].name, lhs.syms.e[i].length, next++);
            ++nlo;
        }
    if (nlo == 0)
        ++next;
    for (int32_t j = 0; j < nr; ++j)
        if (!rshared[j]) {
            names_add(&outk, rhs.syms.e[j].name, rhs.syms.e[j].length, next++);
            ++nro;
        }
    if (nro == 0)
        ++next;
    for (int32_t b = 0; b < nbatch; ++b)
        names_add(&outk, lhs.syms.e[batch[b]].name, lhs.syms.e[batch[b]].length,
                  next++);
    int32_t nout = 0;
    if ((st = parse_out(tok, arrow + 1, n, &outk, orec, &nout)))
        goto done;
    for (int32_t i = 0; i < outk.n; ++i)
        if (!outk.e[i].used) {
            st = missing_symbols(&outk);
            goto done;
        }
    int32_t nlro = side_rearrange_output(&lhs, &lhs, lshared, common, isbatch,
                                         ncommon, nbatch, lro);
    int32_t nrro = side_rearrange_output(&lhs, &rhs, rshared, common, isbatch,
                                         ncommon, nbatch, rro);
    int32_t nmos = 0;
    int32_t leaves[3] = {nlo ? nlo : 1, nro ? nro : 1, nbatch};
    for (int s = 0; s < (nbatch > 0 ? 3 : 2); ++s) {
        mos[nmos++] = SW_TOK_PUSH;
        for (int32_t i = 0; i < leaves[s]; ++i)
            mos[nmos++] = SW_TOK_LEAF;
        mos[nmos++] = SW_TOK_POP;
    }
    draft_set(d, SW_EINOPS_LHS_SELECTION, lhs.rec, lhs.nrec);
    draft_set(d, SW_EINOPS_RHS_SELECTION, rhs.rec, rhs.nrec);
    draft_set(d, SW_EINOPS_LHS_REARRANGE_OUTPUT, lro, nlro);
    draft_set(d, SW_EINOPS_RHS_REARRANGE_OUTPUT, rro, nrro);
    draft_set(d, SW_EINOPS_MATMUL_OUTPUT_SELECTION, mos, nmos);
    draft_set(d, SW_EINOPS_OUTPUT, orec, nout);
    d->side[0] = &lhs.syms;
    d->side[1] = &rhs.syms;
    d->common = common;
    d->ncommon = ncommon;
    d->batch = batch;
    d->nbatch = nbatch;
    st = spec_build(d, out);
done:
    names_free(&outk);
    sw_free(buf);
    lref_free(&lhs);
    lref_free(&rhs);
    return st;
}

/* Parses tokens as a command of a kind; the draft carries the text. */
static sw_status parse_tokens(sw_einops_kind kind, const sw_einops_token *tok,
                              int64_t n, draft *d, sw_einops_spec **out) {
    if (kind == SW_EINOPS_LAYOUT_REF) {
        lref r;
        sw_status st = parse_ref(tok, 0, n, &r);
        if (st)
            return st;
        draft_set(d, SW_EINOPS_TREE, r.rec, r.nrec);
        d->side[0] = &r.syms;
        st = spec_build(d, out);
        lref_free(&r);
        return st;
    }
    int64_t arrow = 0;
    sw_status st = find_one(tok, 0, n, SW_EINOPS_ARROW, &arrow);
    if (st == SW_EVALUE)
        return sw_fail(SW_EVALUE, "%s command must contain one '->' arrow",
                       command_names[kind]);
    if (st)
        return sw_fail(SW_EVALUE, "%s command must contain only one '->' arrow",
                       command_names[kind]);
    if (kind == SW_EINOPS_EINSUM)
        return parse_einsum_tokens(tok, n, arrow, d, out);
    return parse_rearrange_tokens(kind, tok, n, arrow, d, out);
}

sw_status sw_einops_parse(sw_einops_kind kind, const char *command,
                          int64_t length, sw_einops_spec **out) {
    if ((int)kind < 0 || (int)kind >= SW_EINOPS_KIND_COUNT)
        return sw_fail(SW_EVALUE, "unknown layout command kind %d", (int)kind);
    if (!command)
        return sw_fail(SW_ETYPE, SW_EINOPS_NO_COMMAND);
    sw_status st = sw_einops_command_length(command, length, &length);
    if (st)
        return st;
    sw_einops_token *tok = NULL;
    int64_t n = 0;
    if ((st = sw_einops_lex_raw(command, length, &tok, &n)))
        return st;
    draft d;
    draft_init(&d, kind, command, length);
    st = parse_tokens(kind, tok, n, &d, out);
    sw_free(tok);
    return st;
}

sw_status sw_einops_parse_layout_ref(int64_t n, const sw_einops_token *tokens,
                                     sw_einops_spec **out) {
    const char *bad = "layout reference tokens must be Token objects";
    if (n < 0 || (n > 0 && !tokens))
        return sw_fail(SW_ETYPE, "%s", bad);
    if (n > INT32_MAX)
        return sw_fail(SW_EVALUE, "Layout command is too long");
    /* The spec's text: the token values joined by single spaces. */
    int64_t length = 0;
    for (int64_t i = 0; i < n; ++i) {
        const sw_einops_token *t = &tokens[i];
        if ((int)t->kind < 0 || (int)t->kind >= SW_EINOPS_TOKEN_KIND_COUNT ||
            t->length < 0 || t->length > INT32_MAX ||
            (t->length > 0 && !t->value))
            return sw_fail(SW_ETYPE, "%s", bad);
        length += t->length + (i > 0);
        if (length > INT32_MAX)
            return sw_fail(SW_EVALUE, "Layout command is too long");
    }
    char *text = sw_malloc((size_t)length + 1);
    if (!text)
        return sw_oom();
    int64_t at = 0;
    for (int64_t i = 0; i < n; ++i) {
        if (i > 0)
            text[at++] = ' ';
        if (tokens[i].length)
            memcpy(text + at, tokens[i].value, (size_t)tokens[i].length);
        at += tokens[i].length;
    }
    text[at] = '\0';
    draft d;
    draft_init(&d, SW_EINOPS_LAYOUT_REF, text, length);
    sw_status st = parse_tokens(SW_EINOPS_LAYOUT_REF, tokens, n, &d, out);
    sw_free(text);
    return st;
}

/* ------------------------------------------------------------- accessors */

sw_einops_spec *sw_einops_spec_retain(sw_einops_spec *spec) {
    if (spec)
        sw_ref_inc(&spec->ref);
    return spec;
}

void sw_einops_spec_unref(sw_einops_spec *spec) {
    if (spec && sw_ref_dec(&spec->ref))
        sw_free(spec);
}

sw_einops_kind sw_einops_spec_kind(const sw_einops_spec *spec) {
    return spec->kind;
}

const char *sw_einops_spec_command(const sw_einops_spec *spec,
                                   int64_t *length) {
    if (length)
        *length = spec->length;
    return spec->command;
}

const int32_t *sw_einops_spec_recipe(const sw_einops_spec *spec,
                                     sw_einops_field field, int32_t *ntok) {
    if ((int)field < 0 || (int)field >= SW_EINOPS_FIELD_COUNT ||
        spec->nrec[field] < 0) {
        if (ntok)
            *ntok = -1;
        return NULL;
    }
    if (ntok)
        *ntok = spec->nrec[field];
    return spec->rec[field];
}

int32_t sw_einops_spec_nsymbols(const sw_einops_spec *spec, int side) {
    if (side < 0 || side > 1)
        return 0;
    return spec->nsym[side];
}

const char *sw_einops_spec_symbol(const sw_einops_spec *spec, int side,
                                  int32_t i, int32_t *id) {
    if (side < 0 || side > 1 || i < 0 || i >= spec->nsym[side])
        return NULL;
    if (id)
        *id = spec->sym[side][i].id;
    return spec->sym[side][i].name;
}

int32_t sw_einops_spec_ncommon(const sw_einops_spec *spec) {
    return spec->ncommon;
}

const char *sw_einops_spec_common(const sw_einops_spec *spec, int32_t i) {
    if (i < 0 || i >= spec->ncommon)
        return NULL;
    return spec->sym[0][spec->common[i]].name;
}

int32_t sw_einops_spec_nbatch(const sw_einops_spec *spec) {
    return spec->nbatch;
}

const char *sw_einops_spec_batch(const sw_einops_spec *spec, int32_t i) {
    if (i < 0 || i >= spec->nbatch)
        return NULL;
    return spec->sym[0][spec->batch[i]].name;
}
