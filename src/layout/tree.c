/*
 * Immutable integer trees: the shapes and strides of layouts.
 */
#include <stdio.h>
#include <string.h>

#include "layout/internal.h"

int32_t sw_tok_skip(const int32_t *tok, int32_t i, int32_t *leaves) {
    if (tok[i] != SW_TOK_PUSH) {
        if (leaves)
            ++*leaves;
        return i;
    }
    int32_t depth = 0;
    for (;; ++i) {
        if (tok[i] == SW_TOK_PUSH)
            ++depth;
        else if (tok[i] == SW_TOK_POP) {
            if (--depth == 0)
                return i;
        } else if (leaves)
            ++*leaves;
    }
}

sw_status sw_recipe_scan(int32_t ntok, const int32_t *recipe, int ids,
                         int32_t *nleaf, int32_t *rank, int32_t *depth) {
    int32_t open = 0, maxopen = 0, leaves = 0, top = 0;
    if (ntok < 0 || (ntok > 0 && recipe == NULL))
        return sw_fail(SW_EVALUE, "tree recipe is missing");
    for (int32_t i = 0; i < ntok; ++i) {
        int32_t t = recipe[i];
        if (t == SW_TOK_PUSH) {
            if (open == 0)
                ++top;
            if (++open > maxopen)
                maxopen = open;
        } else if (t == SW_TOK_POP) {
            if (open == 0)
                return sw_fail(SW_EVALUE,
                               "tree recipe closes a tuple that is not open "
                               "(token %d)",
                               (int)i);
            --open;
        } else if (t == SW_TOK_LEAF || (ids && t >= 0)) {
            if (open == 0)
                ++top;
            ++leaves;
        } else {
            return sw_fail(SW_EVALUE, "tree recipe has an invalid token %d",
                           (int)t);
        }
    }
    if (open != 0)
        return sw_fail(SW_EVALUE, "tree recipe leaves %d tuple(s) open",
                       (int)open);
    *nleaf = leaves;
    *rank = top;
    *depth = maxopen + 1;
    return SW_OK;
}

sw_status sw_tree_new(sw_tree_kind kind, int32_t ntok, const int32_t *recipe,
                      const int64_t *values, sw_tree **out) {
    int32_t nleaf, rank, depth;
    if (kind != SW_TREE_SHAPE && kind != SW_TREE_STRIDE)
        return sw_fail(SW_EVALUE, "unknown tree kind %d", (int)kind);
    sw_status st = sw_recipe_scan(ntok, recipe, 0, &nleaf, &rank, &depth);
    if (st)
        return st;
    if (nleaf > 0 && values == NULL)
        return sw_fail(SW_EVALUE, "tree values are missing");
    /* The product is kept only while it fits: a flag, not a marker value,
     * says when it stopped fitting (INT64_MAX itself is a valid size). */
    int64_t size = 1;
    int fits = 1;
    for (int32_t i = 0; i < nleaf; ++i) {
        int64_t v = values[i];
        if (kind == SW_TREE_SHAPE && v < 1)
            return sw_fail(SW_EVALUE,
                           "Dimension shape must not be less than 1");
        if (kind == SW_TREE_STRIDE && v < 0)
            return sw_fail(SW_EVALUE, "Stride value must not be negative");
        if (fits && !sw_mul_ok(size, v, &size))
            fits = 0;
    }
    if (!fits && kind == SW_TREE_SHAPE)
        return sw_fail(SW_EVALUE, "Shape size overflows 64-bit integers");
    if (!fits)
        size = -1;
    size_t bytes = sizeof(sw_tree) + (size_t)nleaf * sizeof(int64_t) +
                   (size_t)ntok * sizeof(int32_t);
    sw_tree *t = sw_malloc(bytes);
    if (!t)
        return sw_oom();
    sw_ref_init(&t->ref);
    t->kind = kind;
    t->ntok = ntok;
    t->nleaf = nleaf;
    t->rank = rank;
    t->depth = depth;
    t->size = size;
    t->val = (int64_t *)(t + 1);
    t->tok = (int32_t *)(t->val + nleaf);
    if (nleaf)
        memcpy(t->val, values, (size_t)nleaf * sizeof(int64_t));
    if (ntok)
        memcpy(t->tok, recipe, (size_t)ntok * sizeof(int32_t));
    *out = t;
    return SW_OK;
}

sw_tree *sw_tree_retain(sw_tree *tree) {
    if (tree)
        sw_ref_inc(&tree->ref);
    return tree;
}

void sw_tree_unref(sw_tree *tree) {
    if (tree && sw_ref_dec(&tree->ref))
        sw_free(tree);
}

sw_tree_kind sw_tree_get_kind(const sw_tree *t) {
    return t->kind;
}
int32_t sw_tree_rank(const sw_tree *t) {
    return t->rank;
}
int32_t sw_tree_depth(const sw_tree *t) {
    return t->depth;
}
int32_t sw_tree_nleaf(const sw_tree *t) {
    return t->nleaf;
}
int32_t sw_tree_ntok(const sw_tree *t) {
    return t->ntok;
}
const int32_t *sw_tree_recipe(const sw_tree *t) {
    return t->tok;
}
const int64_t *sw_tree_values(const sw_tree *t) {
    return t->val;
}
int64_t sw_tree_size(const sw_tree *t) {
    return t->size;
}

int sw_tree_congruent(const sw_tree *a, const sw_tree *b) {
    return a->ntok == b->ntok &&
           (a->ntok == 0 ||
            memcmp(a->tok, b->tok, (size_t)a->ntok * sizeof(int32_t)) == 0);
}

int sw_tree_equal(const sw_tree *a, const sw_tree *b) {
    return a->kind == b->kind && sw_tree_congruent(a, b) &&
           (a->nleaf == 0 ||
            memcmp(a->val, b->val, (size_t)a->nleaf * sizeof(int64_t)) == 0);
}

/*
 * Locates top-level child i: its token range [*tb, *te) and its first leaf.
 * Returns 0 if the tree has no child i.
 */
static int child_range(const sw_tree *t, int32_t i, int32_t *tb, int32_t *te,
                       int32_t *lb) {
    int32_t k = 0, leaves = 0;
    for (int32_t p = 0; p < t->ntok; ++p) {
        int32_t start = p, before = leaves;
        p = sw_tok_skip(t->tok, p, &leaves);
        if (k++ == i) {
            *tb = start;
            *te = p + 1;
            *lb = before;
            return 1;
        }
    }
    return 0;
}

int sw_tree_child_is_leaf(const sw_tree *t, int32_t i) {
    int32_t tb = 0, te = 0, lb = 0;
    return child_range(t, i, &tb, &te, &lb) && t->tok[tb] != SW_TOK_PUSH;
}

/* A growable tree (recipe and values) under construction. */
typedef struct tbuild {
    int32_t *tok;
    int64_t *val;
    int32_t ntok, nval;
} tbuild;

static sw_status tb_reserve(tbuild *b, int32_t ntok, int32_t nval) {
    b->tok = sw_malloc((size_t)(ntok ? ntok : 1) * sizeof(int32_t));
    b->val = sw_malloc((size_t)(nval ? nval : 1) * sizeof(int64_t));
    b->ntok = b->nval = 0;
    if (!b->tok || !b->val) {
        sw_free(b->tok);
        sw_free(b->val);
        return sw_oom();
    }
    return SW_OK;
}

static void tb_copy(tbuild *b, const sw_tree *t, int32_t tb, int32_t te,
                    int32_t lb) {
    for (int32_t p = tb; p < te; ++p) {
        b->tok[b->ntok++] = t->tok[p];
        if (t->tok[p] != SW_TOK_PUSH && t->tok[p] != SW_TOK_POP)
            b->val[b->nval++] = t->val[lb++];
    }
}

static sw_status tb_finish(tbuild *b, sw_tree_kind kind, sw_tree **out) {
    sw_status st = sw_tree_new(kind, b->ntok, b->tok, b->val, out);
    sw_free(b->tok);
    sw_free(b->val);
    return st;
}

sw_status sw_tree_child(const sw_tree *t, int32_t i, sw_tree **out) {
    int32_t tb = 0, te = 0, lb = 0;
    if (i < 0 || !child_range(t, i, &tb, &te, &lb))
        return sw_fail(SW_EINDEX, "tree index %d out of range (rank %d)",
                       (int)i, (int)t->rank);
    if (t->tok[tb] == SW_TOK_PUSH) {
        ++tb;
        --te;
    }
    tbuild b;
    sw_status st = tb_reserve(&b, te - tb, t->nleaf);
    if (st)
        return st;
    tb_copy(&b, t, tb, te, lb);
    return tb_finish(&b, t->kind, out);
}

sw_status sw_tree_select(const sw_tree *t, int32_t n, const int32_t *idx,
                         sw_tree **out) {
    int32_t ntok = 0, nval = 0;
    if (n < 0)
        return sw_fail(SW_EVALUE, "negative selection count");
    for (int32_t k = 0; k < n; ++k) {
        int32_t tb = 0, te = 0, lb = 0, leaves = 0;
        if (idx[k] < 0 || !child_range(t, idx[k], &tb, &te, &lb))
            return sw_fail(SW_EINDEX, "tree index %d out of range (rank %d)",
                           (int)idx[k], (int)t->rank);
        sw_tok_skip(t->tok, tb, &leaves);
        ntok += te - tb;
        nval += leaves;
    }
    tbuild b;
    sw_status st = tb_reserve(&b, ntok, nval);
    if (st)
        return st;
    for (int32_t k = 0; k < n; ++k) {
        int32_t tb = 0, te = 0, lb = 0;
        child_range(t, idx[k], &tb, &te, &lb);
        tb_copy(&b, t, tb, te, lb);
    }
    return tb_finish(&b, t->kind, out);
}

static sw_status join(const sw_tree *a, const sw_tree *b, int nest,
                      sw_tree **out) {
    if (a->kind != b->kind)
        return sw_fail(SW_ETYPE, "cannot join a shape with a stride");
    tbuild r;
    sw_status st = tb_reserve(&r, a->ntok + b->ntok + 2, a->nleaf + b->nleaf);
    if (st)
        return st;
    tb_copy(&r, a, 0, a->ntok, 0);
    if (nest)
        r.tok[r.ntok++] = SW_TOK_PUSH;
    tb_copy(&r, b, 0, b->ntok, 0);
    if (nest)
        r.tok[r.ntok++] = SW_TOK_POP;
    return tb_finish(&r, a->kind, out);
}

sw_status sw_tree_concat(const sw_tree *a, const sw_tree *b, sw_tree **out) {
    return join(a, b, 0, out);
}

sw_status sw_tree_append(const sw_tree *a, const sw_tree *b, sw_tree **out) {
    return join(a, b, !(b->rank <= 1 && b->depth <= 1), out);
}

/* Appends text to a bounded buffer, counting the full length. */
typedef struct sbuf {
    char *buf;
    int64_t cap;
    int64_t len;
} sbuf;

static void sb_put(sbuf *s, const char *text) {
    for (; *text; ++text, ++s->len)
        if (s->len + 1 < s->cap)
            s->buf[s->len] = *text;
}

static void sb_int(sbuf *s, int64_t v) {
    char tmp[24];
    snprintf(tmp, sizeof tmp, "%lld", (long long)v);
    sb_put(s, tmp);
}

static void sb_end(sbuf *s) {
    if (s->cap > 0)
        s->buf[s->len < s->cap ? s->len : s->cap - 1] = '\0';
}

/* Writes the children of the root in CuTe form. */
static void format_tokens(sbuf *s, int32_t ntok, const int32_t *tok,
                          const int64_t *val, int32_t rank) {
    if (rank == 1 && ntok == 1) {
        sb_int(s, val[0]);
        return;
    }
    int first = 1;
    sb_put(s, "(");
    for (int32_t p = 0; p < ntok; ++p) {
        int32_t t = tok[p];
        if (t == SW_TOK_POP) {
            sb_put(s, ")");
            first = 0;
            continue;
        }
        if (!first)
            sb_put(s, ",");
        if (t == SW_TOK_PUSH) {
            sb_put(s, "(");
            first = 1;
        } else {
            sb_int(s, *val++);
            first = 0;
        }
    }
    sb_put(s, ")");
}

int64_t sw_tree_format(const sw_tree *t, char *buf, int64_t cap) {
    sbuf s = {buf, cap, 0};
    format_tokens(&s, t->ntok, t->tok, t->val, t->rank);
    sb_end(&s);
    return s.len;
}

int64_t sw_layout_format(const sw_layout *l, char *buf, int64_t cap) {
    sbuf s = {buf, cap, 0};
    const sw_tree *a = l->shape, *b = l->stride;
    format_tokens(&s, a->ntok, a->tok, a->val, a->rank);
    sb_put(&s, ":");
    format_tokens(&s, b->ntok, b->tok, b->val, b->rank);
    sb_end(&s);
    return s.len;
}

const char *sw_layout_str(const sw_layout *l, char *buf, int64_t cap) {
    int64_t n = sw_layout_format(l, buf, cap);
    if (n >= cap && cap > 4)
        memcpy(buf + cap - 4, "...", 4);
    return buf;
}

/* ---------------------------------------------------------------- parsing */

typedef struct parser {
    const char *text;
    int64_t pos;
    int32_t *tok;
    int64_t *val;
    int32_t ntok, nval, cap;
} parser;

static void skip_ws(parser *p) {
    while (p->text[p->pos] == ' ' || p->text[p->pos] == '\t' ||
           p->text[p->pos] == '\n')
        ++p->pos;
}

static sw_status syntax(const parser *p, const char *what) {
    return sw_fail(SW_EVALUE, "layout text \"%.80s\": %s at offset %lld",
                   p->text, what, (long long)p->pos);
}

static int parse_int(parser *p, int64_t *v) {
    const char *c = p->text + p->pos;
    if (*c < '0' || *c > '9')
        return 0;
    int64_t x = 0;
    while (*c >= '0' && *c <= '9') {
        if (!sw_mul_ok(x, 10, &x) || !sw_add_ok(x, *c - '0', &x))
            return -1;
        ++c;
    }
    p->pos = c - p->text;
    *v = x;
    return 1;
}

/* Parses one element (an integer or a tuple) into tokens. */
static sw_status parse_elem(parser *p, int depth) {
    skip_ws(p);
    if (depth > 256)
        return syntax(p, "nesting too deep");
    if (p->ntok >= p->cap)
        return syntax(p, "too many tokens");
    if (p->text[p->pos] == '(') {
        ++p->pos;
        p->tok[p->ntok++] = SW_TOK_PUSH;
        skip_ws(p);
        if (p->text[p->pos] != ')') {
            for (;;) {
                sw_status st = parse_elem(p, depth + 1);
                if (st)
                    return st;
                skip_ws(p);
                if (p->text[p->pos] == ',') {
                    ++p->pos;
                    continue;
                }
                break;
            }
        }
        if (p->text[p->pos] != ')')
            return syntax(p, "expected ',' or ')'");
        ++p->pos;
        if (p->ntok >= p->cap)
            return syntax(p, "too many tokens");
        p->tok[p->ntok++] = SW_TOK_POP;
        return SW_OK;
    }
    int64_t v;
    int r = parse_int(p, &v);
    if (r == 0)
        return syntax(p, "expected an integer or '('");
    if (r < 0)
        return syntax(p, "integer overflows 64 bits");
    p->tok[p->ntok++] = SW_TOK_LEAF;
    p->val[p->nval++] = v;
    return SW_OK;
}

/*
 * Parses a tree at p->pos; the outer tuple becomes the root (its tokens are
 * dropped) and a bare integer becomes a root with one leaf.
 */
static sw_status parse_root(parser *p) {
    int32_t start = p->ntok;
    sw_status st = parse_elem(p, 0);
    if (st)
        return st;
    if (p->tok[start] == SW_TOK_PUSH) {
        memmove(p->tok + start, p->tok + start + 1,
                (size_t)(p->ntok - start - 2) * sizeof(int32_t));
        p->ntok -= 2;
    }
    return SW_OK;
}

static sw_status parser_init(parser *p, const char *text) {
    if (text == NULL)
        return sw_fail(SW_EVALUE, "layout text is NULL");
    size_t n = strlen(text);
    if (n > (1u << 24))
        return sw_fail(SW_EVALUE, "layout text is too long");
    p->text = text;
    p->pos = 0;
    p->cap = (int32_t)n + 2;
    p->ntok = p->nval = 0;
    p->tok = sw_malloc((size_t)p->cap * sizeof(int32_t));
    p->val = sw_malloc((size_t)p->cap * sizeof(int64_t));
    if (!p->tok || !p->val) {
        sw_free(p->tok);
        sw_free(p->val);
        return sw_oom();
    }
    return SW_OK;
}

static void parser_free(parser *p) {
    sw_free(p->tok);
    sw_free(p->val);
}

sw_status sw_tree_parse(sw_tree_kind kind, const char *text, sw_tree **out) {
    parser p;
    sw_status st = parser_init(&p, text);
    if (st)
        return st;
    st = parse_root(&p);
    if (!st) {
        skip_ws(&p);
        if (p.text[p.pos] != '\0')
            st = syntax(&p, "unexpected text");
    }
    if (!st)
        st = sw_tree_new(kind, p.ntok, p.tok, p.val, out);
    parser_free(&p);
    return st;
}

sw_status sw_layout_parse(const char *text, sw_layout **out) {
    parser p;
    sw_tree *shape = NULL, *stride = NULL;
    sw_status st = parser_init(&p, text);
    if (st)
        return st;
    st = parse_root(&p);
    if (!st) {
        skip_ws(&p);
        if (p.text[p.pos] != ':')
            st = syntax(&p, "expected ':'");
    }
    if (!st)
        st = sw_tree_new(SW_TREE_SHAPE, p.ntok, p.tok, p.val, &shape);
    if (!st) {
        ++p.pos;
        p.ntok = p.nval = 0;
        st = parse_root(&p);
    }
    if (!st) {
        skip_ws(&p);
        if (p.text[p.pos] != '\0')
            st = syntax(&p, "unexpected text");
    }
    if (!st)
        st = sw_tree_new(SW_TREE_STRIDE, p.ntok, p.tok, p.val, &stride);
    if (!st)
        st = sw_layout_new(shape, stride, out);
    sw_tree_unref(shape);
    sw_tree_unref(stride);
    parser_free(&p);
    return st;
}
