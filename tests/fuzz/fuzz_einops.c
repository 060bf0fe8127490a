/*
 * libFuzzer target of the layout command strings: random bytes go through
 * the lexer, the layout-reference parser, all three command parsers (with
 * and without the cache) and the compile step on layouts built to match
 * each parsed spec. Beyond "no crash, no hang, no leak" (the sanitizers,
 * libFuzzer's timeout and the library's own allocation counter), it checks
 * the properties every input must keep:
 *
 * - a failure is SW_EVALUE with a message, and the out-parameter is left
 *   alone; the lexer's messages name one of its four kinds of error;
 * - tokens lie inside the text, in order, with the kind their text says;
 * - the cached compile agrees with the uncached parse (same status and
 *   message, or a spec with the same recipes), returns the identical spec
 *   when asked twice, and never caches a failure;
 * - every parsed spec applies to a layout congruent with its selections
 *   (anonymous 1s of size 1, shared symbols of equal size): rearrange
 *   keeps the size, reduce divides it by the reduced pieces, and einsum
 *   gives the product of the outer pieces.
 *
 * Build and run with `make fuzz` (FUZZ_TIME seconds, 60 by default).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strideweave/einops.h"
#include "strideweave/layout.h"

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "fuzz_einops: check failed at line %d: %s\n",      \
                    __LINE__, #cond);                                          \
            abort();                                                           \
        }                                                                      \
    } while (0)

static max_align_t sentinel;
#define SENT ((void *)&sentinel)

static int is_word(unsigned char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
           (c >= '0' && c <= '9') || c == '_';
}

static void check_tokens(const char *text, int64_t len,
                         const sw_einops_tokens *t) {
    const sw_einops_token *tok = sw_einops_tokens_data(t);
    int64_t n = sw_einops_tokens_count(t), prev = 0;
    for (int64_t i = 0; i < n; ++i) {
        const sw_einops_token *k = &tok[i];
        CHECK(k->start >= prev && k->end > k->start && k->end <= len);
        CHECK(k->length == k->end - k->start);
        CHECK(memcmp(k->value, text + k->start, (size_t)k->length) == 0);
        const char *v = k->value;
        switch (k->kind) {
        case SW_EINOPS_LEFT_PAREN:
            CHECK(k->length == 1 && v[0] == '(');
            break;
        case SW_EINOPS_RIGHT_PAREN:
            CHECK(k->length == 1 && v[0] == ')');
            break;
        case SW_EINOPS_COMMA:
            CHECK(k->length == 1 && v[0] == ',');
            break;
        case SW_EINOPS_ARROW:
            CHECK(k->length == 2 && v[0] == '-' && v[1] == '>');
            break;
        case SW_EINOPS_ONE:
            CHECK(k->length == 1 && v[0] == '1');
            CHECK(k->end == len || !is_word((unsigned char)text[k->end]));
            break;
        case SW_EINOPS_SYMBOL:
            CHECK(!(v[0] >= '0' && v[0] <= '9') && v[0] != '_');
            for (int64_t j = 0; j < k->length; ++j)
                CHECK(is_word((unsigned char)v[j]));
            CHECK(k->end == len || !is_word((unsigned char)text[k->end]));
            break;
        default:
            CHECK(0);
        }
        prev = k->end;
    }
}

static int same_recipes(const sw_einops_spec *a, const sw_einops_spec *b) {
    for (int f = 0; f < SW_EINOPS_FIELD_COUNT; ++f) {
        int32_t na, nb;
        const int32_t *ra = sw_einops_spec_recipe(a, (sw_einops_field)f, &na);
        const int32_t *rb = sw_einops_spec_recipe(b, (sw_einops_field)f, &nb);
        if (na != nb)
            return 0;
        if (na > 0 && memcmp(ra, rb, (size_t)na * sizeof *ra) != 0)
            return 0;
    }
    return 1;
}

/* The extent of a named piece: 1 or 2 or 3 by its name; 1 for anonymous. */
static int64_t extent_of(const char *name) {
    if (!name)
        return 1;
    uint32_t h = 2166136261u;
    for (const char *p = name; *p; ++p)
        h = (h ^ (unsigned char)*p) * 16777619u;
    return 1 + (int64_t)(h % 3);
}

/*
 * A compact layout congruent with a selection recipe whose piece k gets
 * extent_of(the symbol bound to id k on that side), or 1 when keep is set
 * and the output recipe keep omits id k (a rearrange may drop only pieces
 * of size 1). NULL when it cannot be made (its size would overflow).
 */
static sw_layout *layout_for(const sw_einops_spec *s, sw_einops_field sel,
                             int side, sw_einops_field keep, int64_t *ext_out) {
    int32_t n = 0, nleaf = 0;
    const int32_t *rec = sw_einops_spec_recipe(s, sel, &n);
    CHECK(rec && n > 0);
    for (int32_t i = 0; i < n; ++i)
        nleaf += rec[i] == SW_TOK_LEAF;
    int64_t *ext = calloc((size_t)nleaf + 1, sizeof *ext);
    int64_t *str = calloc((size_t)nleaf + 1, sizeof *str);
    CHECK(ext && str);
    for (int32_t i = 0; i < nleaf; ++i)
        ext[i] = 1;
    for (int32_t i = 0; i < sw_einops_spec_nsymbols(s, side); ++i) {
        int32_t id = -1;
        const char *name = sw_einops_spec_symbol(s, side, i, &id);
        CHECK(name && id >= 0 && id < nleaf);
        ext[id] = extent_of(name);
    }
    if (keep != SW_EINOPS_TREE) {
        int32_t nk = 0;
        const int32_t *kr = sw_einops_spec_recipe(s, keep, &nk);
        for (int32_t id = 0; id < nleaf; ++id) {
            int used = 0;
            for (int32_t i = 0; i < nk && !used; ++i)
                used = kr[i] == id;
            if (!used)
                ext[id] = 1;
        }
    }
    int64_t acc = 1;
    sw_layout *l = NULL;
    int fits = 1;
    for (int32_t i = 0; i < nleaf && fits; ++i) {
        str[i] = acc;
        fits = acc <= INT64_MAX / 4;
        acc *= ext[i];
    }
    if (fits && sw_layout_from_recipe(n, rec, ext, str, &l) != SW_OK)
        l = NULL;
    if (ext_out)
        memcpy(ext_out, ext, (size_t)nleaf * sizeof *ext);
    free(ext);
    free(str);
    return l;
}

static int32_t leaves_of(const sw_einops_spec *s, sw_einops_field f) {
    int32_t n = 0, k = 0;
    const int32_t *rec = sw_einops_spec_recipe(s, f, &n);
    for (int32_t i = 0; i < n; ++i)
        k += rec[i] == SW_TOK_LEAF;
    return k;
}

static void apply(const sw_einops_spec *s) {
    sw_einops_kind kind = sw_einops_spec_kind(s);
    if (kind == SW_EINOPS_LAYOUT_REF)
        return;
    if (kind == SW_EINOPS_REARRANGE || kind == SW_EINOPS_REDUCE) {
        int32_t nleaf = leaves_of(s, SW_EINOPS_SELECTION);
        int64_t *ext = calloc((size_t)nleaf + 1, sizeof *ext);
        CHECK(ext);
        sw_layout *l = layout_for(s, SW_EINOPS_SELECTION, 0,
                                  kind == SW_EINOPS_REARRANGE ? SW_EINOPS_OUTPUT
                                                              : SW_EINOPS_TREE,
                                  ext);
        if (l && kind == SW_EINOPS_REARRANGE) {
            sw_layout *r = NULL;
            CHECK(sw_einops_rearrange_layout(s, l, &r) == SW_OK);
            CHECK(sw_layout_size(r) == sw_layout_size(l));
            sw_layout_unref(r);
        } else if (l) {
            sw_layout *mid = NULL, *r = NULL;
            CHECK(sw_einops_reduce_layouts(s, l, &mid, &r) == SW_OK);
            int32_t nred = 0;
            const int32_t *red =
                sw_einops_spec_recipe(s, SW_EINOPS_REDUCED, &nred);
            int64_t rsize = 1;
            for (int32_t i = 0; i < nred; ++i)
                rsize *= ext[red[i]];
            CHECK(sw_layout_rank(mid) == 2);
            CHECK(sw_layout_size(r) * rsize == sw_layout_size(l));
            sw_layout_unref(mid);
            sw_layout_unref(r);
        }
        sw_layout_unref(l);
        free(ext);
        return;
    }
    sw_layout *a =
        layout_for(s, SW_EINOPS_LHS_SELECTION, 0, SW_EINOPS_TREE, NULL);
    sw_layout *b =
        layout_for(s, SW_EINOPS_RHS_SELECTION, 1, SW_EINOPS_TREE, NULL);
    if (a && b) {
        sw_layout *la = NULL, *lb = NULL, *r = NULL;
        CHECK(sw_einops_einsum_layouts(s, a, b, &la, &lb, &r) == SW_OK);
        /* Batch symbols add a third mode (the batch) to both operands. */
        int32_t rank = sw_einops_spec_nbatch(s) > 0 ? 3 : 2;
        CHECK(sw_layout_rank(la) == rank && sw_layout_rank(lb) == rank);
        int64_t batch = 1;
        if (rank == 3) {
            sw_layout *ba = NULL, *bb = NULL;
            CHECK(sw_layout_mode(la, 2, &ba) == SW_OK);
            CHECK(sw_layout_mode(lb, 2, &bb) == SW_OK);
            batch = sw_layout_size(ba);
            CHECK(sw_layout_size(bb) == batch);
            sw_layout_unref(ba);
            sw_layout_unref(bb);
        }
        sw_layout *ia = NULL, *ib = NULL, *oa = NULL, *ob = NULL;
        CHECK(sw_layout_mode(la, 1, &ia) == SW_OK);
        CHECK(sw_layout_mode(lb, 1, &ib) == SW_OK);
        CHECK(sw_layout_mode(la, 0, &oa) == SW_OK);
        CHECK(sw_layout_mode(lb, 0, &ob) == SW_OK);
        CHECK(sw_layout_size(ia) == sw_layout_size(ib));
        CHECK(sw_layout_size(r) ==
              sw_layout_size(oa) * sw_layout_size(ob) * batch);
        sw_layout_unref(ia);
        sw_layout_unref(ib);
        sw_layout_unref(oa);
        sw_layout_unref(ob);
        sw_layout_unref(la);
        sw_layout_unref(lb);
        sw_layout_unref(r);
    }
    sw_layout_unref(a);
    sw_layout_unref(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *text = (const char *)data;
    int64_t len = (int64_t)size;
    int64_t live = sw_debug_live_allocs();

    sw_einops_tokens *t = SENT;
    sw_status st = sw_einops_lex(text, len, &t);
    if (st == SW_OK) {
        check_tokens(text, len, t);
        sw_einops_spec *s = SENT;
        st = sw_einops_parse_layout_ref(sw_einops_tokens_count(t),
                                        sw_einops_tokens_data(t), &s);
        if (st == SW_OK) {
            sw_einops_spec_unref(s);
        } else {
            CHECK(st == SW_EVALUE && s == SENT && sw_errmsg()[0]);
        }
        sw_einops_tokens_free(t);
    } else {
        const char *m = sw_errmsg();
        CHECK(st == SW_EVALUE && t == SENT);
        CHECK(strstr(m, "Invalid") || strstr(m, "Expected") ||
              strstr(m, "Unexpected") || strstr(m, "ASCII"));
    }

    for (int k = 0; k < SW_EINOPS_KIND_COUNT; ++k) {
        sw_einops_kind kind = (sw_einops_kind)k;
        sw_einops_spec *p = SENT, *c1 = SENT, *c2 = SENT;
        sw_status sp = sw_einops_parse(kind, text, len, &p);
        char msg[600] = "";
        if (sp != SW_OK) {
            CHECK(sp == SW_EVALUE && p == SENT);
            snprintf(msg, sizeof msg, "%s", sw_errmsg());
            CHECK(msg[0]);
        }
        int64_t cached = sw_einops_cache_count(kind);
        sw_status s1 = sw_einops_compile(kind, text, len, &c1);
        sw_status s2 = sw_einops_compile(kind, text, len, &c2);
        CHECK(s1 == sp && s2 == sp);
        if (sp != SW_OK) {
            CHECK(strcmp(sw_errmsg(), msg) == 0);
            CHECK(c1 == SENT && c2 == SENT);
            CHECK(sw_einops_cache_count(kind) == cached);
            continue;
        }
        CHECK(c1 == c2 && c1 != p);
        CHECK(sw_einops_spec_kind(p) == kind && same_recipes(p, c1));
        int64_t clen = -1;
        const char *cmd = sw_einops_spec_command(c1, &clen);
        CHECK(clen == len && memcmp(cmd, text, (size_t)len) == 0);
        apply(p);
        sw_einops_spec_unref(p);
        sw_einops_spec_unref(c1);
        sw_einops_spec_unref(c2);
    }
    sw_einops_cache_clear();
    CHECK(sw_debug_live_allocs() == live);
    return 0;
}
