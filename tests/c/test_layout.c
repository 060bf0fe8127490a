/*
 * Unit tests of the layout module: trees, layouts, indexing and the layout
 * algebra.
 *
 * The sections follow the layout-vector reference: every worked
 * example there is checked as written ("exact" rows by their printed form,
 * "function" rows by size and index map), and every listed property is
 * checked over thousands of random layouts from a fixed-seed generator, each
 * against a brute-force model written here rather than against the library.
 * The error cases and the fault-injection walk check the header's promise
 * that a failing call leaves its out-parameter alone and leaks nothing.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strideweave/base.h"
#include "strideweave/layout.h"
#include "tap.h"

enum { LEAF = SW_TOK_LEAF, PUSH = SW_TOK_PUSH, POP = SW_TOK_POP };

/* ------------------------------------------------------------ helpers */

/*
 * Addresses no library call can produce, to prove that a failing call left
 * its out-parameters alone.
 */
static max_align_t sentinel_storage[3];
#define SENT_LAYOUT ((sw_layout *)(void *)&sentinel_storage[0])
#define SENT_TREE ((sw_tree *)(void *)&sentinel_storage[1])
#define SENT_RECIPE ((int32_t *)(void *)&sentinel_storage[2])
#define SENT_INT64 INT64_C(-777777)

/*
 * Formats into one of a few rotating buffers, so that a check can format
 * two or three layouts in one printf without managing storage.
 */
#define FMT_CAP 1024
static char fmt_bufs[8][FMT_CAP];
static int fmt_next;

static char *next_buf(void) {
    fmt_next = (fmt_next + 1) % 8;
    return fmt_bufs[fmt_next];
}

static const char *L(const sw_layout *l) {
    char *buf = next_buf();
    if (l == NULL)
        return "(null)";
    int64_t n = sw_layout_format(l, buf, FMT_CAP);
    if (n < 0 || n >= FMT_CAP)
        snprintf(buf, FMT_CAP, "(format returned %lld)", (long long)n);
    return buf;
}

static const char *T(const sw_tree *t) {
    char *buf = next_buf();
    if (t == NULL)
        return "(null)";
    int64_t n = sw_tree_format(t, buf, FMT_CAP);
    if (n < 0 || n >= FMT_CAP)
        snprintf(buf, FMT_CAP, "(format returned %lld)", (long long)n);
    return buf;
}

static const char *S(sw_status st) {
    return sw_status_name(st);
}

/* Parses a layout that the test relies on; a failure is itself a failure. */
static sw_layout *P(const char *text) {
    sw_layout *l = NULL;
    sw_status st = sw_layout_parse(text, &l);
    if (st != SW_OK) {
        ok(0, "parse '%s'", text);
        diag("status %s: %s", S(st), sw_errmsg());
        return NULL;
    }
    return l;
}

static sw_tree *PT(sw_tree_kind kind, const char *text) {
    sw_tree *t = NULL;
    sw_status st = sw_tree_parse(kind, text, &t);
    if (st != SW_OK) {
        ok(0, "parse tree '%s'", text);
        diag("status %s: %s", S(st), sw_errmsg());
        return NULL;
    }
    return t;
}

/* The index of i, or -1 if the library refuses it (indices are >= 0). */
static int64_t IX(const sw_layout *l, int64_t i) {
    int64_t r = -1;
    if (sw_layout_index(l, i, &r) != SW_OK)
        return -1;
    return r;
}

/*
 * The index of i computed here from the leaf arrays: splitting i
 * colexicographically over the nested modes is the same as splitting it
 * over the leaves in infix order.
 */
static int64_t ref_index(const sw_layout *l, int64_t i) {
    int32_t n = sw_layout_nleaf(l);
    const int64_t *e = sw_layout_leaf_extents(l);
    const int64_t *s = sw_layout_leaf_strides(l);
    int64_t r = 0;
    for (int32_t k = 0; k < n; k++) {
        r += (i % e[k]) * s[k];
        i /= e[k];
    }
    return r;
}

static void leak_check(int64_t base, const char *what) {
    is_int(sw_debug_live_allocs(), base, "%s: no library allocation leaked",
           what);
}

/*
 * The expect_* helpers take the status and the out-parameter's value after
 * the call. Callers make the call in a statement of its own: C leaves the
 * order of argument evaluation open, so expect_exact(fn(&r), r, ...) may
 * read r before fn writes it.
 */

/* Checks a call that should have produced a layout printed as want. */
static void expect_exact(sw_status st, const sw_layout *got, const char *want,
                         const char *name) {
    if (!ok(st == SW_OK, "%s succeeds", name)) {
        diag("status %s: %s", S(st), sw_errmsg());
        return;
    }
    is_str(L(got), want, "%s == %s", name, want);
}

/*
 * Same size and same index for every logical index; reports the first
 * difference.
 */
static int same_function(const sw_layout *got, const sw_layout *want,
                         const char *name) {
    if (got == NULL || want == NULL)
        return ok(0, "%s: missing layout", name);
    if (!is_int(sw_layout_size(got), sw_layout_size(want), "%s: size of %s",
                name, L(got)))
        return 0;
    for (int64_t i = 0; i < sw_layout_size(want); i++) {
        int64_t g = IX(got, i), w = IX(want, i);
        if (g != w) {
            ok(0, "%s: %s has the function of %s", name, L(got), L(want));
            diag("first difference at i=%lld: got %lld, expected %lld",
                 (long long)i, (long long)g, (long long)w);
            return 0;
        }
    }
    return ok(1, "%s: %s has the function of %s", name, L(got), L(want));
}

static void expect_function(sw_status st, const sw_layout *got,
                            const char *want, const char *name) {
    if (!ok(st == SW_OK, "%s succeeds", name)) {
        diag("status %s: %s", S(st), sw_errmsg());
        return;
    }
    sw_layout *w = P(want);
    same_function(got, w, name);
    sw_layout_unref(w);
}

/* Checks a rejected call: the status, the message and the out-parameter. */
static void expect_error(sw_status st, sw_status want, const void *out,
                         const void *sentinel, const char *name) {
    is_int(st, want, "%s fails with %s (got %s)", name, S(want), S(st));
    ok(out == sentinel, "%s leaves its out-parameter alone", name);
    if (st != SW_OK) {
        ok(strlen(sw_errmsg()) > 0, "%s sets a message", name);
        diag("%s: %s", name, sw_errmsg());
    }
    sw_clear_error();
}

typedef sw_status (*unop_fn)(const sw_layout *, sw_layout **);
typedef sw_status (*binop_fn)(const sw_layout *, const sw_layout *,
                              sw_layout **);
typedef sw_status (*tilerop_fn)(const sw_layout *, int32_t, sw_layout *const *,
                                sw_layout **);

/* Applies a unary operation to a parsed layout; exact or by function. */
static void check_unop(unop_fn fn, const char *op, const char *a,
                       const char *want, bool exact) {
    char name[256];
    snprintf(name, sizeof name, "%s(%s)", op, a);
    sw_layout *la = P(a), *r = NULL;
    if (la == NULL)
        return;
    sw_status st = fn(la, &r);
    if (exact)
        expect_exact(st, r, want, name);
    else
        expect_function(st, r, want, name);
    sw_layout_unref(r);
    sw_layout_unref(la);
}

static void check_binop(binop_fn fn, const char *op, const char *a,
                        const char *b, const char *want, bool exact) {
    char name[256];
    snprintf(name, sizeof name, "%s(%s, %s)", op, a, b);
    sw_layout *la = P(a), *lb = P(b), *r = NULL;
    if (la != NULL && lb != NULL) {
        sw_status st = fn(la, lb, &r);
        if (exact)
            expect_exact(st, r, want, name);
        else
            expect_function(st, r, want, name);
    }
    sw_layout_unref(r);
    sw_layout_unref(la);
    sw_layout_unref(lb);
}

static void check_binop_rejected(binop_fn fn, const char *op, const char *a,
                                 const char *b) {
    sw_status status;
    char name[256];
    snprintf(name, sizeof name, "%s(%s, %s)", op, a, b);
    sw_layout *la = P(a), *lb = P(b), *r = SENT_LAYOUT;
    if (la != NULL && lb != NULL) {
        status = fn(la, lb, &r);
        expect_error(status, SW_EVALUE, r, SENT_LAYOUT, name);
    }
    sw_layout_unref(la);
    sw_layout_unref(lb);
}

#define MAX_TILER 4

/* Parses n tiler layouts; on failure releases what it made. */
static bool parse_tiler(int32_t n, const char *const *texts,
                        sw_layout **tiler) {
    bool good = true;
    for (int32_t k = 0; k < n; k++) {
        tiler[k] = P(texts[k]);
        good = good && tiler[k] != NULL;
    }
    return good;
}

static void release_tiler(int32_t n, sw_layout **tiler) {
    for (int32_t k = 0; k < n; k++)
        sw_layout_unref(tiler[k]);
}

static void check_tilerop(tilerop_fn fn, const char *op, const char *a,
                          int32_t n, const char *const *texts,
                          const char *want) {
    sw_status status;
    char name[256];
    snprintf(name, sizeof name, "%s(%s, [%s, ...])", op, a, texts[0]);
    sw_layout *la = P(a), *tiler[MAX_TILER] = {NULL}, *r = NULL;
    if (parse_tiler(n, texts, tiler) && la != NULL) {
        status = fn(la, n, tiler, &r);
        expect_exact(status, r, want, name);
    }
    sw_layout_unref(r);
    release_tiler(n, tiler);
    sw_layout_unref(la);
}

/* ---------------------------------------------------------- trees */

static void test_trees(void) {
    int64_t base = sw_debug_live_allocs();
    sw_tree *t = PT(SW_TREE_SHAPE, "(2,(3,4))");
    if (t == NULL)
        return;
    is_str(T(t), "(2,(3,4))", "tree (2,(3,4)) formats back");
    is_int(sw_tree_get_kind(t), SW_TREE_SHAPE, "kind is SW_TREE_SHAPE");
    is_int(sw_tree_rank(t), 2, "rank of (2,(3,4))");
    is_int(sw_tree_depth(t), 2, "depth of (2,(3,4))");
    is_int(sw_tree_nleaf(t), 3, "nleaf of (2,(3,4))");
    is_int(sw_tree_ntok(t), 5, "ntok of (2,(3,4))");
    is_int(sw_tree_size(t), 24, "size of (2,(3,4))");
    static const int32_t want_recipe[] = {LEAF, PUSH, LEAF, LEAF, POP};
    static const int64_t want_values[] = {2, 3, 4};
    ok(memcmp(sw_tree_recipe(t), want_recipe, sizeof want_recipe) == 0,
       "recipe of (2,(3,4)) is LEAF PUSH LEAF LEAF POP");
    ok(memcmp(sw_tree_values(t), want_values, sizeof want_values) == 0,
       "values of (2,(3,4)) are 2 3 4");
    ok(sw_tree_child_is_leaf(t, 0), "child 0 of (2,(3,4)) is a leaf");
    ok(!sw_tree_child_is_leaf(t, 1), "child 1 of (2,(3,4)) is a tuple");

    /* The same tree from its recipe. */
    sw_tree *u = NULL;
    sw_status st = sw_tree_new(SW_TREE_SHAPE, 5, want_recipe, want_values, &u);
    if (ok(st == SW_OK, "sw_tree_new from the recipe")) {
        ok(sw_tree_equal(t, u), "parsed and built trees are equal");
        ok(sw_tree_congruent(t, u), "and congruent");
    }

    sw_tree *c = NULL;
    st = sw_tree_child(t, 1, &c);
    if (ok(st == SW_OK, "sw_tree_child(t, 1)"))
        is_str(T(c), "(3,4)", "child 1 of (2,(3,4)) is the tuple (3,4)");
    sw_tree_unref(c);
    c = NULL;
    st = sw_tree_child(t, 0, &c);
    if (ok(st == SW_OK, "sw_tree_child(t, 0)")) {
        is_str(T(c), "2", "child 0 of (2,(3,4)) is the one-leaf tree 2");
        is_int(sw_tree_rank(c), 1, "the one-leaf tree has rank 1");
    }
    sw_tree_unref(c);

    static const int32_t sel[] = {1, 0};
    c = NULL;
    st = sw_tree_select(t, 2, sel, &c);
    if (ok(st == SW_OK, "sw_tree_select(t, {1,0})"))
        is_str(T(c), "((3,4),2)", "select {1,0} of (2,(3,4))");
    sw_tree_unref(c);
    static const int32_t sel1[] = {1};
    c = NULL;
    st = sw_tree_select(t, 1, sel1, &c);
    if (ok(st == SW_OK, "sw_tree_select(t, {1})"))
        is_str(T(c), "((3,4))", "select {1} keeps the tuple as one child");
    sw_tree_unref(c);

    sw_tree *five = PT(SW_TREE_SHAPE, "5");
    sw_tree *pair = PT(SW_TREE_SHAPE, "(6,7)");
    sw_tree *empty = PT(SW_TREE_SHAPE, "()");
    if (five != NULL && pair != NULL && empty != NULL) {
        is_str(T(five), "5", "a one-leaf tree prints bare");
        is_int(sw_tree_rank(empty), 0, "() has rank 0");
        is_int(sw_tree_depth(empty), 1, "() has depth 1");
        is_int(sw_tree_size(empty), 1, "() has size 1");
        is_str(T(empty), "()", "() prints as ()");

        c = NULL;
        if (ok(sw_tree_concat(t, pair, &c) == SW_OK, "sw_tree_concat"))
            is_str(T(c), "(2,(3,4),6,7)", "concat (2,(3,4)) and (6,7)");
        sw_tree_unref(c);
        c = NULL;
        if (ok(sw_tree_append(t, pair, &c) == SW_OK, "sw_tree_append pair"))
            is_str(T(c), "(2,(3,4),(6,7))", "append nests a pair");
        sw_tree_unref(c);
        c = NULL;
        if (ok(sw_tree_append(t, five, &c) == SW_OK, "sw_tree_append leaf"))
            is_str(T(c), "(2,(3,4),5)", "append concatenates a leaf");
        sw_tree_unref(c);
        c = NULL;
        if (ok(sw_tree_append(five, empty, &c) == SW_OK,
               "sw_tree_append empty"))
            is_str(T(c), "5", "appending () adds nothing");
        sw_tree_unref(c);
        c = NULL;
        if (ok(sw_tree_append(empty, five, &c) == SW_OK,
               "sw_tree_append to ()"))
            is_str(T(c), "5", "appending a leaf to () gives the leaf");
        sw_tree_unref(c);

        ok(!sw_tree_equal(t, pair), "different trees are not equal");
        ok(!sw_tree_congruent(t, pair), "nor congruent");
    }

    /* Kind is not structure: congruence ignores it, equality does not. */
    sw_tree *sh = PT(SW_TREE_SHAPE, "(2,(3,4))");
    sw_tree *sd = PT(SW_TREE_STRIDE, "(2,(3,4))");
    sw_tree *sv = PT(SW_TREE_STRIDE, "(1,(0,9))");
    if (sh != NULL && sd != NULL && sv != NULL) {
        is_int(sw_tree_get_kind(sd), SW_TREE_STRIDE, "stride kind");
        ok(!sw_tree_equal(sh, sd), "same values of another kind: not equal");
        ok(sw_tree_congruent(sh, sd), "but congruent");
        ok(sw_tree_congruent(sd, sv), "values do not matter to congruence");
    }

    /* sw_tree_format behaves like snprintf. */
    char small[5];
    int64_t need = sw_tree_format(t, small, sizeof small);
    is_int(need, 9, "sw_tree_format returns the full length");
    is_str(small, "(2,(", "and truncates with a NUL");
    is_int(sw_tree_format(t, NULL, 0), 9, "buf may be NULL when cap is 0");

    sw_tree_unref(sh);
    sw_tree_unref(sd);
    sw_tree_unref(sv);
    sw_tree_unref(five);
    sw_tree_unref(pair);
    sw_tree_unref(empty);
    sw_tree_unref(u);
    sw_tree_unref(t);
    leak_check(base, "trees");
}

/* -------------------------------------------------------- layouts */

static void test_layout_basics(void) {
    int64_t base = sw_debug_live_allocs();
    sw_layout *l = P("(2,(3,4)):(1,(10,100))");
    if (l == NULL)
        return;
    is_str(L(l), "(2,(3,4)):(1,(10,100))", "format round-trips");
    is_int(sw_layout_rank(l), 2, "rank");
    is_int(sw_layout_depth(l), 2, "depth");
    is_int(sw_layout_nleaf(l), 3, "nleaf");
    ok(!sw_layout_is_leaf(l), "a two-mode layout is not a leaf");
    is_str(T(sw_layout_shape(l)), "(2,(3,4))", "borrowed shape");
    is_str(T(sw_layout_stride(l)), "(1,(10,100))", "borrowed stride");
    is_int(sw_tree_get_kind(sw_layout_shape(l)), SW_TREE_SHAPE, "shape kind");
    is_int(sw_tree_get_kind(sw_layout_stride(l)), SW_TREE_STRIDE,
           "stride kind");
    const int64_t *e = sw_layout_leaf_extents(l);
    const int64_t *s = sw_layout_leaf_strides(l);
    ok(e[0] == 2 && e[1] == 3 && e[2] == 4, "leaf extents 2 3 4");
    ok(s[0] == 1 && s[1] == 10 && s[2] == 100, "leaf strides 1 10 100");

    int64_t coord[2] = {SENT_INT64, SENT_INT64};
    if (ok(sw_layout_expand_index(l, 23, coord) == SW_OK, "expand_index 23"))
        ok(coord[0] == 1 && coord[1] == 11,
           "23 splits into (1, 11): (%lld, "
           "%lld)",
           (long long)coord[0], (long long)coord[1]);

    /* snprintf-like formatting. */
    char small[4];
    is_int(sw_layout_format(l, small, sizeof small), 22,
           "sw_layout_format returns the full length");
    is_str(small, "(2,", "and truncates with a NUL");

    sw_layout *leaf = P("4:2");
    if (leaf != NULL) {
        is_str(L(leaf), "4:2", "a one-leaf layout prints bare");
        ok(sw_layout_is_leaf(leaf), "4:2 is a leaf");
        is_int(sw_layout_rank(leaf), 1, "4:2 has rank 1");
        is_int(sw_layout_depth(leaf), 1, "4:2 has depth 1");
    }
    sw_layout *nest = P("((3,4)):((2,6))");
    if (nest != NULL) {
        is_str(L(nest), "((3,4)):((2,6))", "one nested mode keeps its parens");
        is_int(sw_layout_rank(nest), 1, "((3,4)) has rank 1");
        is_int(sw_layout_depth(nest), 2, "((3,4)) has depth 2");
        ok(!sw_layout_is_leaf(nest), "((3,4)):((2,6)) is not a leaf");
    }

    sw_layout *emp = NULL;
    if (ok(sw_layout_empty(&emp) == SW_OK, "sw_layout_empty")) {
        is_str(L(emp), "():()", "the empty layout prints ():()");
        is_int(sw_layout_size(emp), 1, "the empty layout has size 1");
        is_int(sw_layout_cosize(emp), 1, "the empty layout has cosize 1");
        is_int(sw_layout_rank(emp), 0, "the empty layout has rank 0");
        ok(sw_layout_is_leaf(emp), "the empty layout counts as a leaf");
        sw_layout *back = NULL;
        if (ok(sw_layout_parse("():()", &back) == SW_OK, "parse ():()"))
            ok(sw_layout_equal(back, emp), "():() parses to the empty one");
        sw_layout_unref(back);
    }

    sw_layout *lf = NULL;
    if (ok(sw_layout_leaf(6, 3, &lf) == SW_OK, "sw_layout_leaf(6, 3)"))
        is_str(L(lf), "6:3", "sw_layout_leaf(6, 3) is 6:3");

    /* The same layout three ways; equality is structural. */
    static const int32_t recipe[] = {LEAF, PUSH, LEAF, LEAF, POP};
    static const int64_t shape[] = {2, 3, 4}, stride[] = {1, 10, 100};
    sw_layout *fr = NULL;
    if (ok(sw_layout_from_recipe(5, recipe, shape, stride, &fr) == SW_OK,
           "sw_layout_from_recipe"))
        ok(sw_layout_equal(fr, l), "from_recipe equals the parsed layout");
    ok(!sw_layout_equal(l, leaf), "different layouts are not equal");

    /* sw_layout_new retains its trees instead of stealing them. */
    sw_tree *ts = PT(SW_TREE_SHAPE, "(2,(3,4))");
    sw_tree *td = PT(SW_TREE_STRIDE, "(1,(10,100))");
    sw_layout *nl = NULL;
    if (ts != NULL && td != NULL &&
        ok(sw_layout_new(ts, td, &nl) == SW_OK, "sw_layout_new")) {
        sw_tree_unref(ts);
        sw_tree_unref(td);
        ts = td = NULL;
        ok(sw_layout_equal(nl, l), "the new layout outlives our references");
        is_str(L(nl), "(2,(3,4)):(1,(10,100))", "and still prints");
    }
    sw_tree_unref(ts);
    sw_tree_unref(td);

    /* A borrowed tree can be retained past the layout's lifetime. */
    if (nl != NULL) {
        sw_tree *kept = sw_tree_retain(sw_layout_shape(nl));
        sw_layout_unref(nl);
        nl = NULL;
        is_str(T(kept), "(2,(3,4))", "a retained shape outlives its layout");
        sw_tree_unref(kept);
    }

    /* Retain returns its argument and counts. */
    int64_t held = sw_debug_live_allocs();
    ok(sw_layout_retain(l) == l, "sw_layout_retain returns its argument");
    sw_layout_unref(l);
    is_int(sw_debug_live_allocs(), held, "one release of two frees nothing");
    is_int(sw_layout_size(l), 24, "the layout is still usable");
    sw_layout_unref(NULL);
    sw_tree_unref(NULL);
    ok(1, "releasing NULL is a no-op");

    sw_layout_unref(fr);
    sw_layout_unref(lf);
    sw_layout_unref(emp);
    sw_layout_unref(nest);
    sw_layout_unref(leaf);
    sw_layout_unref(l);
    leak_check(base, "layout basics");
}

/* --------------------------------------------- layout-vectors.md rows */

static void test_vectors_size(void) {
    int64_t base = sw_debug_live_allocs();
    static const struct {
        const char *layout;
        int64_t size, cosize;
    } rows[] = {
        {"(2,3):(1,4)", 6, 10},
        {"(6,2):(8,2)", 12, 43},
        {"(4,(2,3)):(2,(1,8))", 24, 24},
        {"(2,2):(1,6)", 4, 8},
        {"(2,(3,4)):(1,(10,100))", 24, 322},
        {"(3,4):(2,10)", 12, 35},
    };
    for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++) {
        sw_layout *l = P(rows[k].layout);
        if (l == NULL)
            continue;
        is_int(sw_layout_size(l), rows[k].size, "size of %s", rows[k].layout);
        is_int(sw_layout_cosize(l), rows[k].cosize, "cosize of %s",
               rows[k].layout);
        sw_layout_unref(l);
    }

    sw_layout *l = P("(2,(3,4)):(1,(10,100))");
    if (l != NULL) {
        static const int32_t rc[] = {LEAF, PUSH, LEAF, LEAF, POP};
        static const int64_t vc[] = {1, 2, 3};
        int64_t r = SENT_INT64;
        sw_status st = sw_layout_index_coord(l, 5, rc, vc, &r);
        is_int(st, SW_OK, "index_coord (1,(2,3)) succeeds");
        is_int(r, 321, "index of coordinate (1,(2,3)) is 321");
        r = SENT_INT64;
        is_int(sw_layout_index(l, 23, &r), SW_OK, "index 23 succeeds");
        is_int(r, 321, "index of integer 23 is 321");

        /* A nested mode also takes its logical index. */
        static const int32_t r2[] = {LEAF, LEAF};
        static const int64_t v2[] = {1, 11};
        r = SENT_INT64;
        st = sw_layout_index_coord(l, 2, r2, v2, &r);
        ok(st == SW_OK && r == 321, "index of (1,11) is 321 (got %lld)",
           (long long)r);
        /* Missing trailing coordinates count as 0. */
        static const int64_t v1[] = {1};
        r = SENT_INT64;
        st = sw_layout_index_coord(l, 1, r2, v1, &r);
        ok(st == SW_OK && r == 1, "index of (1) is 1 (got %lld)", (long long)r);
        r = SENT_INT64;
        st = sw_layout_index_coord(l, 0, rc, vc, &r);
        ok(st == SW_OK && r == 0, "index of () is 0 (got %lld)", (long long)r);
        /* Extra coordinates are ignored. */
        static const int32_t r4[] = {LEAF, PUSH, LEAF, LEAF, POP, LEAF, LEAF};
        static const int64_t v4[] = {1, 2, 3, 7, 8};
        r = SENT_INT64;
        st = sw_layout_index_coord(l, 7, r4, v4, &r);
        ok(st == SW_OK && r == 321, "index of (1,(2,3),7,8) is 321 (got %lld)",
           (long long)r);
        sw_layout_unref(l);
    }

    l = P("(3,4):(2,10)");
    if (l != NULL) {
        static const int32_t rc[] = {LEAF, LEAF};
        static const int64_t vc[] = {2, 3};
        int64_t r = SENT_INT64;
        sw_status st = sw_layout_index_coord(l, 2, rc, vc, &r);
        ok(st == SW_OK && r == 34,
           "(3,4):(2,10) index of (2,3) is 34 "
           "(got %lld)",
           (long long)r);
        r = SENT_INT64;
        st = sw_layout_index(l, 5, &r);
        ok(st == SW_OK && r == 14, "(3,4):(2,10) index of 5 is 14 (got %lld)",
           (long long)r);
        sw_layout_unref(l);
    }
    leak_check(base, "size and cosize rows");
}

static void test_vectors_compose(void) {
    int64_t base = sw_debug_live_allocs();
    check_binop(sw_layout_compose, "compose", "(6,2):(8,2)", "(4,3):(3,1)",
                "((2,2),3):((24,2),8)", true);
    check_binop(sw_layout_compose, "compose", "20:2", "(5,4):(4,1)",
                "(5,4):(8,2)", true);
    check_binop(sw_layout_compose, "compose", "(10,2):(16,4)", "(5,4):(1,5)",
                "(5,(2,2)):(16,(80,4))", true);
    /* Examples of python-api.md 2.6 (compose_layouts). */
    check_binop(sw_layout_compose, "compose", "5:2", "(3,(5,2)):(2,(6,30))",
                "(3,(5,2)):(4,(12,60))", true);

    static const char *const tiler_text[] = {"3:4", "8:2"};
    check_tilerop(sw_layout_compose_tiler, "compose_tiler",
                  "(12,(4,8)):(59,(13,1))", 2, tiler_text,
                  "(3,(2,4)):(236,(26,1))");

    sw_layout *a = P("(12,(4,8)):(59,(13,1))"), *r = NULL;
    sw_tree *shape = NULL;
    sw_status st = sw_tree_parse(SW_TREE_SHAPE, "(3,8)", &shape);
    ok(st == SW_OK, "parse shape (3,8)");
    if (a != NULL && shape != NULL) {
        st = sw_layout_compose_shape(a, shape, &r);
        expect_exact(st, r, "(3,(4,2)):(59,(13,1))",
                     "compose_shape((12,(4,8)):(59,(13,1)), (3,8))");
    }
    sw_layout_unref(r);
    sw_layout_unref(a);
    sw_tree_unref(shape);

    /* python-api.md 2.6: (20,50):(1,20) o Shape([5,2]) is (5,2):(1,20). */
    a = P("(20,50):(1,20)");
    r = NULL;
    shape = PT(SW_TREE_SHAPE, "(5,2)");
    if (a != NULL && shape != NULL) {
        st = sw_layout_compose_shape(a, shape, &r);
        expect_exact(st, r, "(5,2):(1,20)",
                     "compose_shape((20,50):(1,20), (5,2))");
    }
    sw_layout_unref(r);
    sw_layout_unref(a);
    sw_tree_unref(shape);

    check_binop_rejected(sw_layout_compose, "compose", "(3,4):(4,1)", "4:2");
    leak_check(base, "composition rows");
}

static void test_vectors_coalesce(void) {
    sw_status status;
    int64_t base = sw_debug_live_allocs();
    check_unop(sw_layout_coalesce, "coalesce", "(2,(1,6)):(1,(6,2))", "12:1",
               true);
    check_unop(sw_layout_coalesce, "coalesce",
               "((2,(3,4)),(3,2),1):((4,(8,24)),(2,6),12)", "(24,6):(4,2)",
               true);
    /* python-api.md 2.6: extent-1 leaves vanish; one leaf stays as is. */
    check_unop(sw_layout_coalesce, "coalesce", "(1,(1,2)):(1,(5,25))", "2:25",
               true);
    check_unop(sw_layout_coalesce, "coalesce", "(2,3):(1,2)", "6:1", true);
    check_unop(sw_layout_coalesce, "coalesce", "((4)):((3))", "((4)):((3))",
               true);

    static const int32_t profile[] = {LEAF, LEAF};
    static const struct {
        const char *in, *want;
    } rows[] = {
        {"(2,(1,6)):(1,(6,2))", "(2,6):(1,2)"},
        {"(1,(1,2)):(1,(5,25))", "(1,2):(1,25)"},
    };
    for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++) {
        sw_layout *l = P(rows[k].in), *r = NULL;
        if (l == NULL)
            continue;
        char name[128];
        snprintf(name, sizeof name, "coalesce_profile(%s, (1,1))", rows[k].in);
        status = sw_layout_coalesce_profile(l, 2, profile, &r);
        expect_exact(status, r, rows[k].want, name);
        sw_layout_unref(r);
        sw_layout_unref(l);
    }
    leak_check(base, "coalesce rows");
}

static void check_complement(const char *a, int64_t m, const char *want) {
    sw_status status;
    char name[128];
    snprintf(name, sizeof name, "complement(%s, %lld)", a, (long long)m);
    sw_layout *l = P(a), *r = NULL;
    if (l == NULL)
        return;
    status = sw_layout_complement(l, m, &r);
    expect_exact(status, r, want, name);
    sw_layout_unref(r);
    sw_layout_unref(l);
}

static void check_complement_rejected(const char *a, int64_t m) {
    sw_status status;
    char name[128];
    snprintf(name, sizeof name, "complement(%s, %lld)", a, (long long)m);
    sw_layout *l = P(a), *r = SENT_LAYOUT;
    if (l == NULL)
        return;
    status = sw_layout_complement(l, m, &r);
    expect_error(status, SW_EVALUE, r, SENT_LAYOUT, name);
    sw_layout_unref(l);
}

static void test_vectors_complement(void) {
    int64_t base = sw_debug_live_allocs();
    check_complement("4:1", 24, "6:4");
    check_complement("4:2", 24, "(2,3):(1,8)");
    check_complement("(2,4):(1,6)", 24, "3:2");
    check_complement("(2,2):(4,1)", 24, "(2,3):(2,8)");
    /* python-api.md 2.6. */
    check_complement("(2,2):(1,6)", 24, "(3,2):(2,12)");
    /* The header: 1:0 when nothing is left to cover. */
    check_complement("4:1", 4, "1:0");
    /* Cotarget 0: only the gaps between the modes. */
    check_complement("4:2", 0, "2:1");
    check_complement("(2,4):(1,6)", 0, "3:2");
    check_complement("8:1", 0, "1:0");
    check_complement_rejected("(2,2):(1,1)", 8);
    check_complement_rejected("4:2", -1);
    check_complement_rejected("4:2", 12);
    leak_check(base, "complement rows");
}

static void test_vectors_divide(void) {
    int64_t base = sw_debug_live_allocs();
    check_binop(sw_layout_divide, "divide", "(4,2,3):(2,1,8)", "4:2",
                "((2,2),(2,3)):((4,1),(2,8))", true);
    check_binop(sw_layout_divide, "divide", "24:1", "4:2",
                "(4,(2,3)):(2,(1,8))", true);

    static const char *const tiler[] = {"3:3", "(2,4):(1,8)"};
    const char *a = "(9,(4,8)):(59,(13,1))";
    check_tilerop(sw_layout_divide_tiler, "divide_tiler", a, 2, tiler,
                  "((3,3),((2,4),(2,2))):((177,59),((13,2),(26,1)))");
    check_tilerop(sw_layout_zipped_divide, "zipped_divide", a, 2, tiler,
                  "((3,(2,4)),(3,(2,2))):((177,(13,2)),(59,(26,1)))");
    check_tilerop(sw_layout_tiled_divide, "tiled_divide", a, 2, tiler,
                  "((3,(2,4)),3,(2,2)):((177,(13,2)),59,(26,1))");
    check_tilerop(sw_layout_flat_divide, "flat_divide", a, 2, tiler,
                  "(3,(2,4),3,(2,2)):(177,(13,2),59,(26,1))");

    /* The divide_tiler row also gives the index of coordinate (1,1). */
    sw_layout *la = P(a), *t[2] = {NULL, NULL}, *r = NULL;
    if (la != NULL && parse_tiler(2, tiler, t) &&
        sw_layout_divide_tiler(la, 2, t, &r) == SW_OK) {
        static const int32_t rc[] = {LEAF, LEAF};
        static const int64_t vc[] = {1, 1};
        int64_t idx = SENT_INT64;
        sw_status st = sw_layout_index_coord(r, 2, rc, vc, &idx);
        ok(st == SW_OK && idx == 190,
           "divide_tiler result: index of (1,1) is 190 (got %lld, %s)",
           (long long)idx, S(st));
    }
    sw_layout_unref(r);
    release_tiler(2, t);
    sw_layout_unref(la);

    check_binop_rejected(sw_layout_divide, "divide", "12:1", "5:1");
    leak_check(base, "divide rows");
}

static void test_vectors_product(void) {
    int64_t base = sw_debug_live_allocs();
    check_binop(sw_layout_product, "product", "(2,2):(4,1)", "6:1",
                "((2,2),(2,3)):((4,1),(2,8))", false);
    check_binop(sw_layout_product, "product", "(2,2):(4,1)", "(4,2):(2,1)",
                "((2,2),(4,2)):((4,1),(8,2))", false);
    check_binop(sw_layout_blocked_product, "blocked_product", "(2,5):(5,1)",
                "(3,4):(1,3)", "((2,3),(5,4)):((5,10),(1,30))", false);
    check_binop(sw_layout_raked_product, "raked_product", "(2,5):(5,1)",
                "(3,4):(1,3)", "((3,2),(4,5)):((10,5),(30,1))", false);
    check_binop(sw_layout_blocked_product, "blocked_product", "(3,4):(4,1)",
                "(2,5):(1,2)", "((3,2),(4,5)):((4,12),(1,24))", false);
    leak_check(base, "product rows");
}

static void test_vectors_inverse(void) {
    int64_t base = sw_debug_live_allocs();
    static const struct {
        const char *layout, *right, *left;
    } rows[] = {
        {"(2,4,6):(4,1,8)", "(4,2,6):(2,1,8)", "(4,2,6):(2,1,8)"},
        {"(2,4):(4,1)", "(4,2):(2,1)", "(4,2):(2,1)"},
        {"(2,3):(1,2)", "6:1", "6:1"},
        {"4:2", "1:0", "(2,4):(4,1)"},
    };
    for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++) {
        check_unop(sw_layout_right_inverse, "right_inverse", rows[k].layout,
                   rows[k].right, false);
        check_unop(sw_layout_left_inverse, "left_inverse", rows[k].layout,
                   rows[k].left, false);
    }
    leak_check(base, "inverse rows");
}

/* --------------------------------------- construction and rearrange */

static void test_construction(void) {
    sw_status status;
    int64_t base = sw_debug_live_allocs();
    sw_layout *l = P("(2,(3,4),5):(1,(2,6),24)");
    sw_layout *r = NULL;
    if (l == NULL)
        return;

    if (ok(sw_layout_mode(l, 1, &r) == SW_OK, "mode 1"))
        is_str(L(r), "(3,4):(2,6)", "mode 1 of (2,(3,4),5) is the tuple");
    sw_layout_unref(r);
    r = NULL;
    if (ok(sw_layout_mode(l, 2, &r) == SW_OK, "mode 2"))
        is_str(L(r), "5:24", "mode 2 is the leaf 5:24");
    sw_layout_unref(r);

    static const int32_t idx20[] = {2, 0};
    r = NULL;
    if (ok(sw_layout_select(l, 2, idx20, &r) == SW_OK, "select {2,0}"))
        is_str(L(r), "(5,2):(24,1)", "select {2,0}");
    sw_layout_unref(r);
    static const int32_t idx1[] = {1};
    r = NULL;
    if (ok(sw_layout_select(l, 1, idx1, &r) == SW_OK, "select {1}"))
        is_str(L(r), "((3,4)):((2,6))", "select {1} keeps one nested mode");
    sw_layout_unref(r);

    static const int32_t perm[] = {2, 0, 1};
    r = NULL;
    if (ok(sw_layout_permute(l, 3, perm, &r) == SW_OK, "permute {2,0,1}"))
        is_str(L(r), "(5,2,(3,4)):(24,1,(2,6))", "permute moves whole modes");
    sw_layout_unref(r);

    r = NULL;
    if (ok(sw_layout_flatten(l, &r) == SW_OK, "flatten"))
        is_str(L(r), "(2,3,4,5):(1,2,6,24)", "flatten");
    sw_layout_unref(r);
    check_unop(sw_layout_flatten, "flatten", "(2,(3,(4,5))):(1,(2,(6,24)))",
               "(2,3,4,5):(1,2,6,24)", true);

    check_unop(sw_layout_filter, "filter", "(2,1,3,4):(0,7,1,3)", "12:1", true);
    check_unop(sw_layout_filter, "filter", "(2,2):(0,0)", "1:0", true);
    check_unop(sw_layout_filter, "filter", "(3,2,5):(2,0,12)", "(3,5):(2,12)",
               true);

    sw_layout_unref(l);

    check_binop(sw_layout_concat, "concat", "(2,3):(1,2)", "4:6",
                "(2,3,4):(1,2,6)", true);
    check_binop(sw_layout_concat, "concat", "2:1", "(3,(4,5)):(2,(6,24))",
                "(2,3,(4,5)):(1,2,(6,24))", true);
    check_binop(sw_layout_append, "append", "2:1", "(3,4):(2,6)",
                "(2,(3,4)):(1,(2,6))", true);
    check_binop(sw_layout_append, "append", "2:1", "4:6", "(2,4):(1,6)", true);
    check_binop(sw_layout_append, "append", "(2,4):(1,6)", "():()",
                "(2,4):(1,6)", true);
    /* python-api.md 2.6: append((1):(1), (2,3):(2,6)). */
    check_binop(sw_layout_append, "append", "1:1", "(2,3):(2,6)",
                "(1,(2,3)):(1,(2,6))", true);

    sw_layout *m[3] = {P("4:2"), P("(2,3):(1,8)"), P("5:48")};
    if (m[0] != NULL && m[1] != NULL && m[2] != NULL) {
        r = NULL;
        if (ok(sw_layout_make(3, m, &r) == SW_OK, "make of three"))
            is_str(L(r), "(4,(2,3),5):(2,(1,8),48)", "make appends in turn");
        sw_layout_unref(r);
        r = NULL;
        if (ok(sw_layout_make(1, m + 1, &r) == SW_OK, "make of one pair"))
            is_str(L(r), "((2,3)):((1,8))", "make of one tuple nests it");
        sw_layout_unref(r);
        r = NULL;
        if (ok(sw_layout_make(0, m, &r) == SW_OK, "make of none"))
            is_str(L(r), "():()", "make of none is the empty layout");
        sw_layout_unref(r);
    }
    for (int k = 0; k < 3; k++)
        sw_layout_unref(m[k]);

    /* choose and modout: python-api.md 2.6, checked by function. */
    sw_layout *a = P("(3,6,2,8):(1,3,18,36)");
    if (a != NULL) {
        r = NULL;
        status = sw_layout_choose(a, 72, &r);
        expect_function(status, r, "(1,1,1,4):(72,72,72,72)", "choose(A, 72)");
        sw_layout_unref(r);
        r = NULL;
        status = sw_layout_choose(a, 9, &r);
        expect_function(status, r, "(1,2,2,8):(9,9,18,36)", "choose(A, 9)");
        sw_layout_unref(r);
        sw_layout_unref(a);
    }
    a = P("(1,2,2,8):(9,9,18,36)");
    if (a != NULL) {
        r = NULL;
        status = sw_layout_modout(a, 16, &r);
        expect_function(status, r, "(1,2,2,4):(9,9,18,36)", "modout(A, 16)");
        sw_layout_unref(r);
        sw_layout_unref(a);
    }
    leak_check(base, "construction");
}

static void test_extract(void) {
    int64_t base = sw_debug_live_allocs();
    sw_layout *l = P("(2,(3,4)):(1,(10,100))");
    if (l == NULL)
        return;
    sw_layout *pieces[4] = {NULL, NULL, NULL, NULL};
    int32_t count = -1;
    sw_status st = sw_layout_extract(l, -1, NULL, 4, pieces, &count);
    if (ok(st == SW_OK, "extract every leaf") &&
        is_int(count, 3, "three leaves")) {
        is_str(L(pieces[0]), "2:1", "piece 0");
        is_str(L(pieces[1]), "3:10", "piece 1");
        is_str(L(pieces[2]), "4:100", "piece 2");
        for (int k = 0; k < count; k++)
            sw_layout_unref(pieces[k]);
    }

    static const int32_t profile[] = {LEAF, LEAF};
    count = -1;
    st = sw_layout_extract(l, 2, profile, 4, pieces, &count);
    if (ok(st == SW_OK, "extract with profile (1,1)") &&
        is_int(count, 2, "two pieces")) {
        is_str(L(pieces[0]), "2:1", "piece 0 is mode 0");
        is_str(L(pieces[1]), "(3,4):(10,100)", "piece 1 is the whole mode 1");
        for (int k = 0; k < count; k++)
            sw_layout_unref(pieces[k]);
    }

    static const int32_t deep[] = {LEAF, PUSH, LEAF, LEAF, POP};
    count = -1;
    st = sw_layout_extract(l, 5, deep, 4, pieces, &count);
    if (ok(st == SW_OK, "extract with profile (1,(1,1))") &&
        is_int(count, 3, "three pieces")) {
        is_str(L(pieces[1]), "3:10", "the profile recursed into mode 1");
        for (int k = 0; k < count; k++)
            sw_layout_unref(pieces[k]);
    }

    /* Too small a buffer: SW_EINDEX and the count needed; nothing kept. */
    sw_layout *few[2] = {SENT_LAYOUT, SENT_LAYOUT};
    count = -1;
    int64_t live = sw_debug_live_allocs();
    st = sw_layout_extract(l, -1, NULL, 2, few, &count);
    is_int(st, SW_EINDEX, "extract with cap 2 of 3 gives SW_EINDEX");
    is_int(count, 3, "and the count needed");
    ok(few[0] == SENT_LAYOUT && few[1] == SENT_LAYOUT, "and writes no piece");
    is_int(sw_debug_live_allocs(), live, "and keeps nothing alive");
    sw_clear_error();

    static const int32_t bad[] = {LEAF, LEAF, LEAF};
    count = -1;
    few[0] = few[1] = SENT_LAYOUT;
    st = sw_layout_extract(l, 3, bad, 2, few, &count);
    expect_error(st, SW_EVALUE, few[0], SENT_LAYOUT,
                 "extract with a profile of the wrong length");
    sw_layout_unref(l);
    leak_check(base, "extract");
}

static void check_rearrange(const char *a, int32_t nout, const int32_t *out,
                            int32_t nsel, const int32_t *sel, const char *want,
                            const char *name) {
    sw_status status;
    sw_layout *l = P(a), *r = NULL;
    if (l == NULL)
        return;
    status = sw_layout_rearrange(l, nout, out, nsel, sel, &r);
    expect_exact(status, r, want, name);
    sw_layout_unref(r);
    sw_layout_unref(l);
}

static void check_rearrange_rejected(const char *a, int32_t nout,
                                     const int32_t *out, int32_t nsel,
                                     const int32_t *sel, const char *name) {
    sw_status status;
    sw_layout *l = P(a), *r = SENT_LAYOUT;
    if (l == NULL)
        return;
    status = sw_layout_rearrange(l, nout, out, nsel, sel, &r);
    expect_error(status, SW_EVALUE, r, SENT_LAYOUT, name);
    sw_layout_unref(l);
}

static bool same_recipe(int32_t n, const int32_t *got, int32_t nwant,
                        const int32_t *want) {
    return n == nwant && memcmp(got, want, sizeof *want * (size_t)n) == 0;
}

static void check_reverse(int32_t nout, const int32_t *out, int32_t nsel,
                          const int32_t *sel, int32_t nwo, const int32_t *wo,
                          int32_t nws, const int32_t *ws, const char *name) {
    int32_t nro = -1, nrs = -1;
    int32_t *ro = NULL, *rs = NULL;
    sw_status st =
        sw_rearrange_reverse(nout, out, nsel, sel, &nro, &ro, &nrs, &rs);
    if (ok(st == SW_OK, "%s succeeds", name)) {
        ok(same_recipe(nro, ro, nwo, wo), "%s: reverse output", name);
        ok(same_recipe(nrs, rs, nws, ws), "%s: reverse selection", name);
        if (!same_recipe(nro, ro, nwo, wo) || !same_recipe(nrs, rs, nws, ws)) {
            for (int32_t k = 0; k < nro; k++)
                diag("rev_out[%d] = %d", k, ro[k]);
            for (int32_t k = 0; k < nrs; k++)
                diag("rev_sel[%d] = %d", k, rs[k]);
        }
    } else {
        diag("status %s: %s", S(st), sw_errmsg());
    }
    sw_free_recipe(ro);
    sw_free_recipe(rs);
}

static void test_rearrange(void) {
    int64_t base = sw_debug_live_allocs();
    /* python-api.md 2.6 examples. */
    static const int32_t o201[] = {2, 0, 1};
    check_rearrange("(2,3,4):(1,2,6)", 3, o201, -1, NULL, "(4,2,3):(6,1,2)",
                    "rearrange (2,3,4):(1,2,6) by (2,0,1)");
    static const int32_t o10[] = {1, 0}, s11[] = {LEAF, LEAF};
    check_rearrange("(1,(2,3)):(5,(7,14))", 2, o10, 2, s11,
                    "((2,3),1):((7,14),5)",
                    "rearrange (1,(2,3)):(5,(7,14)) by (1,0) over (1,1)");
    static const int32_t o1l0[] = {1, LEAF, 0};
    check_rearrange("(2,3):(1,2)", 3, o1l0, -1, NULL, "(3,1,2):(2,0,1)",
                    "rearrange (2,3):(1,2) by (1,Leaf,0)");
    /* Tuples in the output nest; a piece of size 1 may be dropped. */
    static const int32_t onest[] = {PUSH, 2, 0, POP, 1};
    check_rearrange("(2,3,4):(1,2,6)", 5, onest, -1, NULL,
                    "((4,2),3):((6,1),2)",
                    "rearrange (2,3,4):(1,2,6) by ((2,0),1)");
    static const int32_t o0[] = {0};
    check_rearrange("(2,1):(1,0)", 1, o0, -1, NULL, "2:1",
                    "rearrange (2,1):(1,0) by (0) drops the size-1 piece");

    /* The reverse pair. */
    static const int32_t s111[] = {LEAF, LEAF, LEAF};
    static const int32_t w20[] = {2, 0};
    check_reverse(3, o1l0, 2, s11, 2, w20, 3, s111,
                  "reverse of ((1,Leaf,0), (1,1))");
    static const int32_t w0l[] = {0, LEAF}, s1[] = {LEAF};
    check_reverse(1, o0, 2, s11, 2, w0l, 1, s1, "reverse of ((0), (1,1))");

    /* Applying the reverse restores the source. */
    check_rearrange("(3,1,2):(2,0,1)", 2, w20, 3, s111, "(2,3):(1,2)",
                    "the reverse pair undoes (1,Leaf,0)");

    static const int32_t o00[] = {0, 0}, o05[] = {0, 5};
    check_rearrange_rejected("(2,3):(1,2)", 2, o00, -1, NULL,
                             "rearrange with a repeated id");
    check_rearrange_rejected("(2,3):(1,2)", 2, o05, -1, NULL,
                             "rearrange with an id out of range");
    check_rearrange_rejected("(2,3):(1,2)", 1, o0, -1, NULL,
                             "rearrange leaving out a piece of size 3");

    int32_t nro = -7, nrs = -7;
    int32_t *ro = SENT_RECIPE, *rs = SENT_RECIPE;
    sw_status st = sw_rearrange_reverse(2, o00, 2, s11, &nro, &ro, &nrs, &rs);
    expect_error(st, SW_EVALUE, ro, SENT_RECIPE,
                 "rearrange_reverse with a repeated id");
    ok(nro == -7 && nrs == -7 && rs == SENT_RECIPE,
       "rearrange_reverse leaves every out-parameter alone");
    st = sw_rearrange_reverse(2, o05, 2, s11, &nro, &ro, &nrs, &rs);
    expect_error(st, SW_EVALUE, ro, SENT_RECIPE,
                 "rearrange_reverse with an id out of range");
    leak_check(base, "rearrange");
}

/* --------------------------------------------------------- errors */

static void check_tree_rejected(sw_tree_kind kind, int32_t ntok,
                                const int32_t *recipe, const int64_t *values,
                                const char *name) {
    sw_status status;
    sw_tree *t = SENT_TREE;
    status = sw_tree_new(kind, ntok, recipe, values, &t);
    expect_error(status, SW_EVALUE, t, SENT_TREE, name);
}

static void check_parse_rejected(const char *text) {
    sw_status status;
    char name[96];
    snprintf(name, sizeof name, "sw_layout_parse(\"%s\")", text);
    sw_layout *l = SENT_LAYOUT;
    status = sw_layout_parse(text, &l);
    expect_error(status, SW_EVALUE, l, SENT_LAYOUT, name);
}

static void check_index_coord_rejected(const sw_layout *l, int32_t ntok,
                                       const int32_t *recipe,
                                       const int64_t *values, sw_status want,
                                       const char *name) {
    int64_t r = SENT_INT64;
    sw_status st = sw_layout_index_coord(l, ntok, recipe, values, &r);
    is_int(st, want, "%s fails with %s (got %s)", name, S(want), S(st));
    is_int(r, SENT_INT64, "%s leaves its out-parameter alone", name);
    if (st != SW_OK)
        ok(strlen(sw_errmsg()) > 0, "%s sets a message: %s", name, sw_errmsg());
    sw_clear_error();
}

static void test_errors_trees(void) {
    sw_status status;
    int64_t base = sw_debug_live_allocs();
    static const int32_t extra_pop[] = {LEAF, POP};
    static const int32_t extra_pop2[] = {PUSH, LEAF, POP, POP};
    static const int32_t missing_pop[] = {PUSH, LEAF};
    static const int32_t pop_first[] = {POP, PUSH, LEAF};
    static const int64_t v1[] = {3};
    check_tree_rejected(SW_TREE_SHAPE, 2, extra_pop, v1, "recipe LEAF POP");
    check_tree_rejected(SW_TREE_SHAPE, 4, extra_pop2, v1,
                        "recipe PUSH LEAF POP POP");
    check_tree_rejected(SW_TREE_SHAPE, 2, missing_pop, v1, "recipe PUSH LEAF");
    check_tree_rejected(SW_TREE_SHAPE, 3, pop_first, v1,
                        "recipe POP PUSH LEAF");

    static const int32_t two[] = {LEAF, LEAF};
    static const int64_t zero[] = {2, 0}, neg[] = {-3, 2};
    check_tree_rejected(SW_TREE_SHAPE, 2, two, zero, "shape extent 0");
    check_tree_rejected(SW_TREE_SHAPE, 2, two, neg, "shape extent -3");
    check_tree_rejected(SW_TREE_STRIDE, 2, two, neg, "stride -3");
    static const int64_t huge[] = {INT64_C(1) << 40, INT64_C(1) << 40};
    check_tree_rejected(SW_TREE_SHAPE, 2, two, huge,
                        "shape (2^40,2^40) overflows int64");
    /* Strides have no product, so the same values are fine there. */
    sw_tree *t = NULL;
    ok(sw_tree_new(SW_TREE_STRIDE, 2, two, huge, &t) == SW_OK,
       "stride (2^40,2^40) is admissible");
    sw_tree_unref(t);
    /* Zero is a fine stride. */
    t = NULL;
    ok(sw_tree_new(SW_TREE_STRIDE, 2, two, zero, &t) == SW_OK,
       "stride (2,0) is admissible");
    sw_tree_unref(t);

    sw_tree *tr = PT(SW_TREE_SHAPE, "(2,(3,4))");
    sw_tree *st = PT(SW_TREE_STRIDE, "(1,2)");
    if (tr != NULL && st != NULL) {
        sw_tree *c = SENT_TREE;
        status = sw_tree_child(tr, 2, &c);
        expect_error(status, SW_EINDEX, c, SENT_TREE,
                     "sw_tree_child(t, 2) of rank 2");
        status = sw_tree_child(tr, -1, &c);
        expect_error(status, SW_EINDEX, c, SENT_TREE, "sw_tree_child(t, -1)");
        static const int32_t idx[] = {0, 2};
        status = sw_tree_select(tr, 2, idx, &c);
        expect_error(status, SW_EINDEX, c, SENT_TREE,
                     "sw_tree_select(t, {0,2}) of rank 2");
        /* The kind of error is not specified; only that it fails cleanly. */
        sw_status s = sw_tree_concat(tr, st, &c);
        ok(s != SW_OK, "sw_tree_concat of two kinds fails (%s)", S(s));
        ok(c == SENT_TREE, "and leaves its out-parameter alone");
        sw_clear_error();
    }
    sw_tree_unref(tr);
    sw_tree_unref(st);
    leak_check(base, "tree errors");
}

static void test_errors_layouts(void) {
    sw_status status;
    int64_t base = sw_debug_live_allocs();
    sw_layout *l = SENT_LAYOUT;

    /* Cosize overflow: (2^31 - 1) * 2^40 does not fit int64. */
    int64_t big_e = INT64_C(1) << 31, big_s = INT64_C(1) << 40;
    status = sw_layout_leaf(big_e, big_s, &l);
    expect_error(status, SW_EVALUE, l, SENT_LAYOUT,
                 "sw_layout_leaf(2^31, 2^40): cosize overflow");
    static const int32_t one[] = {LEAF};
    status = sw_layout_from_recipe(1, one, &big_e, &big_s, &l);
    expect_error(status, SW_EVALUE, l, SENT_LAYOUT,
                 "from_recipe 2^31:2^40: cosize overflow");
    check_parse_rejected("2147483648:1099511627776");
    sw_tree *bs = NULL, *bd = NULL;
    if (sw_tree_new(SW_TREE_SHAPE, 1, one, &big_e, &bs) == SW_OK &&
        sw_tree_new(SW_TREE_STRIDE, 1, one, &big_s, &bd) == SW_OK) {
        status = sw_layout_new(bs, bd, &l);
        expect_error(status, SW_EVALUE, l, SENT_LAYOUT,
                     "sw_layout_new 2^31:2^40: cosize overflow");
    } else {
        ok(0, "could not build the trees 2^31 and 2^40");
    }
    sw_tree_unref(bs);
    sw_tree_unref(bd);

    status = sw_layout_leaf(0, 1, &l);
    expect_error(status, SW_EVALUE, l, SENT_LAYOUT, "sw_layout_leaf(0, 1)");
    status = sw_layout_leaf(3, -1, &l);
    expect_error(status, SW_EVALUE, l, SENT_LAYOUT, "sw_layout_leaf(3, -1)");

    sw_tree *sh = PT(SW_TREE_SHAPE, "(2,3)");
    sw_tree *sd = PT(SW_TREE_STRIDE, "(1,(2,3))");
    sw_tree *sd2 = PT(SW_TREE_STRIDE, "(1,2)");
    sw_tree *sh2 = PT(SW_TREE_SHAPE, "(1,2)");
    if (sh != NULL && sd != NULL && sd2 != NULL && sh2 != NULL) {
        status = sw_layout_new(sh, sd, &l);
        expect_error(status, SW_EVALUE, l, SENT_LAYOUT,
                     "sw_layout_new((2,3), (1,(2,3))) not congruent");
        status = sw_layout_new(sd2, sh, &l);
        expect_error(status, SW_ETYPE, l, SENT_LAYOUT,
                     "sw_layout_new with the kinds swapped");
        status = sw_layout_new(sh, sh2, &l);
        expect_error(status, SW_ETYPE, l, SENT_LAYOUT,
                     "sw_layout_new with two shape trees");
    }
    sw_tree_unref(sh);
    sw_tree_unref(sd);
    sw_tree_unref(sd2);
    sw_tree_unref(sh2);

    static const char *const malformed[] = {
        "(2,3",
        "2:",
        "(2,3):(1)",
        "a:b",
        "",
        "(2,,3):(1,2,3)",
        "0:1",
        "2:-1",
        "(2,3):(1,2",
        "2:1 junk",
        "(2,3)",
        ":",
        "(2,3):(1,2):(3)",
    };
    for (size_t k = 0; k < sizeof malformed / sizeof malformed[0]; k++)
        check_parse_rejected(malformed[k]);

    sw_layout *a = P("(3,4):(2,10)");
    if (a != NULL) {
        int64_t r = SENT_INT64;
        sw_status s = sw_layout_index(a, 12, &r);
        is_int(s, SW_EVALUE, "index 12 of a size-12 layout is SW_EVALUE");
        is_int(r, SENT_INT64, "and leaves the out-parameter alone");
        s = sw_layout_index(a, -1, &r);
        is_int(s, SW_EVALUE, "index -1 is SW_EVALUE");
        is_int(r, SENT_INT64, "and leaves the out-parameter alone");
        ok(strlen(sw_errmsg()) > 0, "index sets a message: %s", sw_errmsg());
        sw_clear_error();

        int64_t co[2] = {SENT_INT64, SENT_INT64};
        s = sw_layout_expand_index(a, 12, co);
        ok(s != SW_OK, "expand_index 12 of a size-12 layout fails (%s)", S(s));
        sw_clear_error();

        sw_layout *m = SENT_LAYOUT;
        status = sw_layout_mode(a, 2, &m);
        expect_error(status, SW_EINDEX, m, SENT_LAYOUT,
                     "sw_layout_mode(a, 2) of rank 2");
        status = sw_layout_mode(a, -1, &m);
        expect_error(status, SW_EINDEX, m, SENT_LAYOUT,
                     "sw_layout_mode(a, -1)");
        static const int32_t sel_bad[] = {0, 2};
        status = sw_layout_select(a, 2, sel_bad, &m);
        expect_error(status, SW_EINDEX, m, SENT_LAYOUT,
                     "sw_layout_select(a, {0,2}) of rank 2");
        static const int32_t dup[] = {0, 0}, shortp[] = {1};
        static const int32_t negp[] = {-1, 0}, outp[] = {0, 2};
        status = sw_layout_permute(a, 2, dup, &m);
        expect_error(status, SW_EVALUE, m, SENT_LAYOUT, "permute {0,0}");
        status = sw_layout_permute(a, 1, shortp, &m);
        expect_error(status, SW_EVALUE, m, SENT_LAYOUT,
                     "permute {1} of rank 2");
        status = sw_layout_permute(a, 2, negp, &m);
        expect_error(status, SW_EVALUE, m, SENT_LAYOUT, "permute {-1,0}");
        status = sw_layout_permute(a, 2, outp, &m);
        expect_error(status, SW_EVALUE, m, SENT_LAYOUT, "permute {0,2}");

        sw_layout *t1 = P("2:1");
        sw_layout *tiler[3] = {t1, t1, t1};
        if (t1 != NULL) {
            status = sw_layout_compose_tiler(a, 3, tiler, &m);
            expect_error(status, SW_EVALUE, m, SENT_LAYOUT,
                         "compose_tiler longer than rank");
            status = sw_layout_divide_tiler(a, 3, tiler, &m);
            expect_error(status, SW_EVALUE, m, SENT_LAYOUT,
                         "divide_tiler longer than rank");
            status = sw_layout_zipped_divide(a, 3, tiler, &m);
            expect_error(status, SW_EVALUE, m, SENT_LAYOUT,
                         "zipped_divide longer than rank");
        }
        sw_layout_unref(t1);

        static const int32_t prof3[] = {LEAF, LEAF, LEAF};
        status = sw_layout_coalesce_profile(a, 3, prof3, &m);
        expect_error(status, SW_EVALUE, m, SENT_LAYOUT,
                     "coalesce_profile with 3 modes for 2");
        sw_layout_unref(a);
    }

    a = P("(2,(3,4)):(1,(10,100))");
    if (a != NULL) {
        static const int32_t r2[] = {LEAF, LEAF};
        static const int32_t rn[] = {LEAF, PUSH, LEAF, LEAF, POP};
        static const int32_t rt[] = {PUSH, LEAF, LEAF, POP, LEAF};
        static const int64_t v20[] = {2, 0}, v112[] = {1, 12};
        static const int64_t vneg[] = {-1, 0}, v140[] = {1, 4, 0};
        static const int64_t v1n1[] = {1, 0, -1};
        check_index_coord_rejected(a, 2, r2, v20, SW_EVALUE,
                                   "index_coord (2,0) with extent 2");
        check_index_coord_rejected(a, 2, r2, v112, SW_EVALUE,
                                   "index_coord (1,12) of a size-12 mode");
        check_index_coord_rejected(a, 2, r2, vneg, SW_EVALUE,
                                   "index_coord (-1,0)");
        check_index_coord_rejected(a, 5, rn, v140, SW_EVALUE,
                                   "index_coord (1,(4,0)) with extent 3");
        check_index_coord_rejected(a, 5, rn, v1n1, SW_EVALUE,
                                   "index_coord (1,(0,-1))");
        check_index_coord_rejected(a, 5, rt, v140, SW_ETYPE,
                                   "index_coord ((1,4),0): tuple for a leaf");
        sw_layout_unref(a);
    }

    check_binop_rejected(sw_layout_compose, "compose", "(3,4):(4,1)", "4:2");
    check_complement_rejected("(2,2):(1,1)", 8);
    check_complement_rejected("(2,2):(1,3)", 12);
    check_complement_rejected("4:2", 12);
    check_complement_rejected("4:2", 4);
    check_binop_rejected(sw_layout_divide, "divide", "12:1", "5:1");
    l = SENT_LAYOUT;
    a = P("(2,2):(1,1)");
    if (a != NULL) {
        status = sw_layout_left_inverse(a, &l);
        expect_error(status, SW_EVALUE, l, SENT_LAYOUT,
                     "left_inverse((2,2):(1,1))");
    }
    sw_layout_unref(a);
    a = P("(4,2):(1,0)");
    if (a != NULL) {
        status = sw_layout_left_inverse(a, &l);
        expect_error(status, SW_EVALUE, l, SENT_LAYOUT,
                     "left_inverse((4,2):(1,0))");
    }
    sw_layout_unref(a);
    leak_check(base, "layout errors");
}

/* ----------------------------------------------- random layouts */

/* splitmix64: small, fast and the same sequence on every platform. */
typedef struct rng {
    uint64_t s;
} rng;

static uint64_t rng_u64(rng *r) {
    uint64_t z = (r->s += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

/* Uniform in [lo, hi]; the modulo bias is irrelevant for tests. */
static int64_t rng_int(rng *r, int64_t lo, int64_t hi) {
    return lo + (int64_t)(rng_u64(r) % (uint64_t)(hi - lo + 1));
}

static void rng_shuffle(rng *r, int32_t n, int32_t *a) {
    for (int32_t k = n - 1; k > 0; k--) {
        int32_t j = (int32_t)rng_int(r, 0, k);
        int32_t t = a[k];
        a[k] = a[j];
        a[j] = t;
    }
}

#define MAX_LEAF 16
#define MAX_TOK 64
#define SIZE_BUDGET 4096

/* A layout under construction: a recipe and one extent/stride per leaf. */
typedef struct spec {
    int32_t ntok;
    int32_t tok[MAX_TOK];
    int32_t nleaf;
    int64_t shape[MAX_LEAF];
    int64_t stride[MAX_LEAF];
} spec;

/*
 * Emits the children of a tuple holding n leaves. With depth to spare, the
 * leaves are split into 1..max_rank groups and each group of two or more
 * becomes a nested tuple of at least two children; without, all n are flat.
 */
static void gen_tuple(rng *r, spec *s, int32_t n, int depth_left,
                      int32_t min_rank, int32_t max_rank) {
    if (depth_left == 0 || n < 2) {
        for (int32_t k = 0; k < n; k++) {
            s->tok[s->ntok++] = LEAF;
            s->nleaf++;
        }
        return;
    }
    int32_t hi = n < max_rank ? n : max_rank;
    int32_t lo = min_rank < hi ? min_rank : hi;
    int32_t rank = (int32_t)rng_int(r, lo, hi);
    int32_t part[MAX_LEAF];
    for (int32_t k = 0; k < rank; k++)
        part[k] = 1;
    for (int32_t k = rank; k < n; k++)
        part[rng_int(r, 0, rank - 1)]++;
    for (int32_t k = 0; k < rank; k++) {
        if (part[k] == 1) {
            s->tok[s->ntok++] = LEAF;
            s->nleaf++;
        } else {
            s->tok[s->ntok++] = PUSH;
            gen_tuple(r, s, part[k], depth_left - 1, 2, 3);
            s->tok[s->ntok++] = POP;
        }
    }
}

/* A random tree structure of n leaves and depth at most 3. */
static void gen_structure(rng *r, spec *s, int32_t n) {
    s->ntok = 0;
    s->nleaf = 0;
    gen_tuple(r, s, n, (int)rng_int(r, 0, 2), 1, 4);
}

/* Extents in [1, 6] with their product at most budget. */
static void gen_extents(rng *r, spec *s, int64_t budget) {
    int32_t order[MAX_LEAF];
    for (int32_t k = 0; k < s->nleaf; k++)
        order[k] = k;
    /* A random fill order keeps the budget from always starving the end. */
    rng_shuffle(r, s->nleaf, order);
    int64_t prod = 1;
    for (int32_t k = 0; k < s->nleaf; k++) {
        int64_t e = rng_int(r, 1, 6);
        while (prod * e > budget)
            e--;
        s->shape[order[k]] = e;
        prod *= e;
    }
}

/* Any layout: strides in [0, 40], one in eight of them 0. */
static void gen_random(rng *r, spec *s, int32_t max_leaf) {
    gen_structure(r, s, (int32_t)rng_int(r, 1, max_leaf));
    gen_extents(r, s, SIZE_BUDGET);
    for (int32_t k = 0; k < s->nleaf; k++)
        s->stride[k] = rng_int(r, 0, 7) == 0 ? 0 : rng_int(r, 1, 40);
}

static int64_t pick_gap(rng *r) {
    int64_t g = rng_int(r, 0, 5);
    return g < 4 ? 1 : g - 2;
}

/*
 * An injective layout: the leaves of a compact layout in a random order,
 * with a random gap after each (none when compact). Extent-1 leaves get a
 * random stride now and then, which must not matter to anything. Returns
 * the span, the extent times the stride of the outermost leaf that is not
 * of extent 1 (1 if there is none).
 */
static int64_t gen_injective(rng *r, spec *s, int32_t max_leaf, bool compact,
                             int64_t budget) {
    gen_structure(r, s, (int32_t)rng_int(r, 1, max_leaf));
    gen_extents(r, s, budget);
    int32_t order[MAX_LEAF];
    for (int32_t k = 0; k < s->nleaf; k++)
        order[k] = k;
    rng_shuffle(r, s->nleaf, order);
    int64_t cur = compact ? 1 : pick_gap(r), span = 1;
    for (int32_t j = 0; j < s->nleaf; j++) {
        int32_t k = order[j];
        s->stride[k] = cur;
        if (s->shape[k] == 1) {
            if (rng_int(r, 0, 3) == 0)
                s->stride[k] = rng_int(r, 0, 40);
            continue;
        }
        span = cur * s->shape[k];
        /* Gaps stop growing early so that brute force stays cheap. */
        cur = span * (compact || cur >= 64 ? 1 : pick_gap(r));
    }
    return span;
}

/* Extents whose product is exactly n, in a random structure. */
static void gen_shape_of_size(rng *r, spec *s, int64_t n) {
    int64_t f[MAX_LEAF];
    int32_t nf = 0;
    while (n > 1 && nf < MAX_LEAF - 2) {
        int64_t divs[5];
        int32_t nd = 0;
        for (int64_t d = 2; d <= 6; d++)
            if (n % d == 0)
                divs[nd++] = d;
        int64_t d = n;
        if (nd > 0) {
            d = divs[rng_int(r, 0, nd - 1)];
        } else {
            /* No small factor: take the smallest prime, whatever it is. */
            for (int64_t p = 7; p * p <= n; p++)
                if (n % p == 0) {
                    d = p;
                    break;
                }
        }
        f[nf++] = d;
        n /= d;
    }
    if (n > 1 || nf == 0)
        f[nf++] = n;
    if (rng_int(r, 0, 3) == 0)
        f[nf++] = 1;
    gen_structure(r, s, nf);
    int32_t order[MAX_LEAF];
    for (int32_t k = 0; k < nf; k++)
        order[k] = k;
    rng_shuffle(r, nf, order);
    for (int32_t k = 0; k < nf; k++)
        s->shape[k] = f[order[k]];
}

static sw_layout *mk(const spec *s) {
    sw_layout *l = NULL;
    sw_status st =
        sw_layout_from_recipe(s->ntok, s->tok, s->shape, s->stride, &l);
    if (st != SW_OK) {
        ok(0, "sw_layout_from_recipe of a generated layout");
        diag("status %s: %s", S(st), sw_errmsg());
        return NULL;
    }
    return l;
}

/*
 * Brute force over the whole domain: the largest index, and whether some
 * two indices collide (a bitmap over [0, max]).
 */
typedef struct image {
    int64_t max;
    int64_t distinct;
    bool injective;
    bool index_ok;
} image;

static image brute_image_map(const sw_layout *l, uint8_t **map) {
    image im = {0, 0, true, true};
    int64_t n = sw_layout_size(l);
    for (int64_t i = 0; i < n; i++) {
        int64_t v = IX(l, i);
        if (v < 0) {
            im.index_ok = false;
            return im;
        }
        if (v > im.max)
            im.max = v;
    }
    uint8_t *seen = calloc((size_t)(im.max / 8 + 1), 1);
    if (seen == NULL) {
        im.index_ok = false;
        return im;
    }
    for (int64_t i = 0; i < n; i++) {
        int64_t v = IX(l, i);
        if (seen[v / 8] & (1u << (v % 8)))
            im.injective = false;
        else
            im.distinct++;
        seen[v / 8] |= (uint8_t)(1u << (v % 8));
    }
    if (map != NULL)
        *map = seen;
    else
        free(seen);
    return im;
}

static image brute_image(const sw_layout *l) {
    return brute_image_map(l, NULL);
}

static bool in_map(const uint8_t *map, int64_t max, int64_t v) {
    return v >= 0 && v <= max && (map[v / 8] & (1u << (v % 8)));
}

/* A tree as nodes, to compare structures without the library's help. */
#define MAX_NODE 128
typedef struct tnode {
    bool leaf;
    int64_t size;
    int32_t nchild;
    int32_t child[MAX_NODE];
} tnode;

typedef struct tshape {
    int32_t n;
    tnode node[MAX_NODE];
} tshape;

static int64_t tshape_size(tshape *t, int32_t k) {
    tnode *nd = &t->node[k];
    if (!nd->leaf) {
        nd->size = 1;
        for (int32_t c = 0; c < nd->nchild; c++)
            nd->size *= tshape_size(t, nd->child[c]);
    }
    return nd->size;
}

/* Node 0 is the root tuple. */
static void tshape_build(tshape *t, const sw_tree *tree) {
    const int32_t *rc = sw_tree_recipe(tree);
    const int64_t *v = sw_tree_values(tree);
    int32_t stack[MAX_NODE], top = 0, nv = 0;
    t->n = 1;
    t->node[0].leaf = false;
    t->node[0].nchild = 0;
    stack[0] = 0;
    for (int32_t k = 0; k < sw_tree_ntok(tree) && t->n < MAX_NODE; k++) {
        if (rc[k] == POP) {
            top--;
            continue;
        }
        int32_t id = t->n++;
        tnode *parent = &t->node[stack[top]];
        parent->child[parent->nchild++] = id;
        t->node[id].nchild = 0;
        t->node[id].leaf = rc[k] != PUSH;
        if (rc[k] == PUSH)
            stack[++top] = id;
        else
            t->node[id].size = v[nv++];
    }
    tshape_size(t, 0);
}

/* Tuples of one child stand for that child, on both sides. */
static int32_t tshape_unwrap(const tshape *t, int32_t k) {
    while (!t->node[k].leaf && t->node[k].nchild == 1)
        k = t->node[k].child[0];
    return k;
}

/*
 * CuTe's compatibility of shapes: an integer is compatible with any shape of
 * the same size; a tuple with a tuple of the same length whose children are
 * compatible in turn.
 */
static bool compatible_at(const tshape *b, int32_t kb, const tshape *r,
                          int32_t kr) {
    kb = tshape_unwrap(b, kb);
    kr = tshape_unwrap(r, kr);
    const tnode *nb = &b->node[kb], *nr = &r->node[kr];
    if (nb->leaf)
        return nb->size == nr->size;
    if (nr->leaf || nb->nchild != nr->nchild)
        return false;
    for (int32_t c = 0; c < nb->nchild; c++)
        if (!compatible_at(b, nb->child[c], r, nr->child[c]))
            return false;
    return true;
}

static bool compatible(const sw_layout *b, const sw_layout *r) {
    static tshape tb, tr;
    tshape_build(&tb, sw_layout_shape(b));
    tshape_build(&tr, sw_layout_shape(r));
    return compatible_at(&tb, 0, &tr, 0);
}

/* Counters for one property: checks run, and how many failed. */
typedef struct tally {
    const char *name;
    int64_t run, failed, skipped;
} tally;

/* Records one case; the first few failures explain themselves. */
static bool tally_case(tally *t, bool good, const char *fmt, ...)
    TAP_PRINTF(3, 4);
static bool tally_case(tally *t, bool good, const char *fmt, ...) {
    t->run++;
    if (!good) {
        if (t->failed < 5) {
            va_list ap;
            va_start(ap, fmt);
            printf("# %s: ", t->name);
            vprintf(fmt, ap);
            printf("\n");
            va_end(ap);
        }
        t->failed++;
    }
    return good;
}

static void tally_report(const tally *t) {
    ok(t->failed == 0 && t->run > 0, "property %s: %lld cases, %lld failed%s",
       t->name, (long long)t->run, (long long)t->failed,
       t->run == 0 ? " (none ran)" : "");
}

/* -------------------------------------------------- properties */

/* Index, format, cosize, injectivity, compactness, coalesce, filter. */
static void test_properties_basic(void) {
    int64_t base = sw_debug_live_allocs();
    rng r = {UINT64_C(0x5eed0001)};
    tally t_index = {"index == colexicographic model", 0, 0, 0};
    tally t_coord = {"index_coord(expand_index(i)) == index(i)", 0, 0, 0};
    tally t_parse = {"parse(format(L)) == L", 0, 0, 0};
    tally t_cosize = {"cosize == max index + 1", 0, 0, 0};
    tally t_inj = {"is_injective agrees with brute force", 0, 0, 0};
    tally t_cmp = {"is_compact agrees with brute force", 0, 0, 0};
    tally t_coal = {"coalesce keeps the function, flat and minimal", 0, 0, 0};
    tally t_filt = {"filter keeps the image", 0, 0, 0};
    int64_t n_injective = 0, n_compact = 0;

    for (int iter = 0; iter < 3000; iter++) {
        spec s;
        int kind = iter % 4;
        if (kind == 0 || kind == 1)
            gen_random(&r, &s, 8);
        else
            gen_injective(&r, &s, 8, kind == 3, 512);
        /* Now and then make an injective layout collide in one stride. */
        if (kind == 2 && rng_int(&r, 0, 2) == 0) {
            int32_t k = (int32_t)rng_int(&r, 0, s.nleaf - 1);
            s.stride[k] = s.stride[k] > 1 ? s.stride[k] - 1 : 0;
        }
        sw_layout *l = mk(&s);
        if (l == NULL)
            continue;
        const char *ls = L(l);
        int64_t size = sw_layout_size(l);

        int64_t bad = -1;
        for (int64_t i = 0; i < size && bad < 0; i++)
            if (IX(l, i) != ref_index(l, i))
                bad = i;
        tally_case(&t_index, bad < 0, "%s: index(%lld) = %lld, model %lld", ls,
                   (long long)bad, (long long)IX(l, bad < 0 ? 0 : bad),
                   (long long)ref_index(l, bad < 0 ? 0 : bad));

        int32_t rank = sw_layout_rank(l);
        int64_t coord[MAX_LEAF];
        int32_t leaves[MAX_LEAF];
        for (int32_t k = 0; k < rank; k++)
            leaves[k] = LEAF;
        int64_t i = rng_int(&r, 0, size - 1), got = -1;
        bool good =
            sw_layout_expand_index(l, i, coord) == SW_OK &&
            sw_layout_index_coord(l, rank, leaves, coord, &got) == SW_OK &&
            got == IX(l, i);
        tally_case(&t_coord, good, "%s at %lld: %lld vs %lld", ls, (long long)i,
                   (long long)got, (long long)IX(l, i));

        sw_layout *back = NULL;
        good = sw_layout_parse(ls, &back) == SW_OK && sw_layout_equal(back, l);
        tally_case(&t_parse, good, "%s parses to %s", ls, L(back));
        sw_layout_unref(back);

        uint8_t *map = NULL;
        image im = brute_image_map(l, &map);
        tally_case(&t_cosize, im.index_ok && sw_layout_cosize(l) == im.max + 1,
                   "%s: cosize %lld, max index %lld", ls,
                   (long long)sw_layout_cosize(l), (long long)im.max);

        int inj = -1, cmp = -1;
        sw_status st = sw_layout_is_injective(l, &inj);
        tally_case(&t_inj, st == SW_OK && (inj != 0) == im.injective,
                   "%s: is_injective %s %d, brute force %d", ls, S(st), inj,
                   im.injective);
        bool compact = im.injective && im.max + 1 == size;
        st = sw_layout_is_compact(l, &cmp);
        tally_case(&t_cmp, st == SW_OK && (cmp != 0) == compact,
                   "%s: is_compact %s %d, brute force %d", ls, S(st), cmp,
                   compact);
        n_injective += im.injective;
        n_compact += compact;

        sw_layout *c = NULL;
        st = sw_layout_coalesce(l, &c);
        good = st == SW_OK && sw_layout_size(c) == size;
        for (int64_t j = 0; good && j < size; j++)
            good = IX(c, j) == IX(l, j);
        if (good && sw_layout_nleaf(l) == 1) {
            good = sw_layout_equal(c, l);
        } else if (good) {
            /* Flat, no extent-1 leaf in a multi-mode result, no mergeable
             * neighbours: the fewest modes. */
            good = sw_layout_depth(c) <= 1;
            int32_t n = sw_layout_nleaf(c);
            const int64_t *e = sw_layout_leaf_extents(c);
            const int64_t *d = sw_layout_leaf_strides(c);
            for (int32_t k = 0; good && n > 1 && k < n; k++)
                good = e[k] != 1 && (k == 0 || d[k] != e[k - 1] * d[k - 1]);
        }
        tally_case(&t_coal, good, "coalesce(%s) = %s (%s)", ls, L(c), S(st));
        sw_layout_unref(c);

        sw_layout *f = NULL;
        st = sw_layout_filter(l, &f);
        good = st == SW_OK;
        if (good) {
            image fim = brute_image(f);
            /* Same image as a set: as many distinct elements, each of f's
             * in l's image. */
            good = fim.index_ok && im.index_ok && fim.distinct == im.distinct;
            for (int64_t j = 0; good && j < sw_layout_size(f); j++)
                good = in_map(map, im.max, IX(f, j));
            /* The size counts the distinct elements when f is injective. */
            if (good && fim.injective)
                good = sw_layout_size(f) == im.distinct;
        }
        tally_case(&t_filt, good, "filter(%s) = %s (%s)", ls, L(f), S(st));
        sw_layout_unref(f);

        free(map);
        sw_layout_unref(l);
    }
    tally_report(&t_index);
    tally_report(&t_coord);
    tally_report(&t_parse);
    tally_report(&t_cosize);
    tally_report(&t_inj);
    tally_report(&t_cmp);
    tally_report(&t_coal);
    tally_report(&t_filt);
    /* The generator must give both answers often, or the checks are weak. */
    ok(n_injective > 500 && n_injective < 2800,
       "random layouts: %lld of 3000 injective", (long long)n_injective);
    ok(n_compact > 300, "random layouts: %lld of 3000 compact",
       (long long)n_compact);
    leak_check(base, "basic properties");
}

static int64_t spec_size(const spec *s) {
    int64_t n = 1;
    for (int32_t k = 0; k < s->nleaf; k++)
        n *= s->shape[k];
    return n;
}

static int64_t spec_cosize(const spec *s) {
    int64_t n = 1;
    for (int32_t k = 0; k < s->nleaf; k++)
        n += (s->shape[k] - 1) * s->stride[k];
    return n;
}

/*
 * A B that CuTe composition with A always accepts: each leaf n:d of B has
 * d = s_0*...*s_{j-1} (a prefix product of A's leaf extents) and n =
 * s_j*...*s_{m-1}*q with q dividing s_m, so every stride divides A's modes
 * and every extent fits them. The runs [j, m] of different leaves are
 * disjoint, which keeps cosize(B) <= size(A).
 */
static void gen_compose_friendly(rng *r, const spec *a, spec *b) {
    int64_t n[MAX_LEAF], d[MAX_LEAF];
    int32_t m = 0, j = 0;
    int64_t prefix = 1;
    while (j < a->nleaf && m < 4) {
        if (rng_int(r, 0, 1) == 0) {
            prefix *= a->shape[j++];
            continue;
        }
        int32_t len = (int32_t)rng_int(r, 0, 2);
        if (j + len >= a->nleaf)
            len = a->nleaf - 1 - j;
        int64_t ext = 1;
        for (int32_t k = j; k < j + len; k++)
            ext *= a->shape[k];
        int64_t last = a->shape[j + len], q;
        do
            q = rng_int(r, 1, last);
        while (last % q != 0);
        n[m] = ext * q;
        d[m] = prefix;
        m++;
        for (int32_t k = j; k <= j + len; k++)
            prefix *= a->shape[k];
        j += len + 1;
    }
    if (m == 0) {
        n[0] = a->shape[0];
        d[0] = 1;
        m = 1;
    }
    int32_t order[MAX_LEAF];
    for (int32_t k = 0; k < m; k++)
        order[k] = k;
    rng_shuffle(r, m, order);
    gen_structure(r, b, m);
    for (int32_t k = 0; k < m; k++) {
        b->shape[k] = n[order[k]];
        b->stride[k] = d[order[k]];
    }
}

/*
 * Any small B with cosize(B) <= size(A); its strides are often prefix
 * products of A's extents so that a fair share of compositions succeed.
 * Returns false if no such B turned up.
 */
static bool gen_compose_random(rng *r, const spec *a, spec *b) {
    int64_t size_a = spec_size(a);
    for (int tries = 0; tries < 20; tries++) {
        gen_structure(r, b, (int32_t)rng_int(r, 1, 3));
        gen_extents(r, b, size_a);
        for (int32_t k = 0; k < b->nleaf; k++) {
            int64_t choice = rng_int(r, 0, 3);
            if (choice == 0) {
                b->stride[k] = 0;
            } else if (choice == 1) {
                b->stride[k] = rng_int(r, 1, 8);
            } else {
                int32_t j = (int32_t)rng_int(r, 0, a->nleaf - 1);
                int64_t p = 1;
                for (int32_t q = 0; q < j; q++)
                    p *= a->shape[q];
                b->stride[k] = p;
            }
        }
        if (spec_cosize(b) <= size_a)
            return true;
    }
    return false;
}

/*
 * (A o B)(i) == A(B(i)) for every i < size(B), same size, and A o B
 * compatible with B. Returns the status so callers can count rejections.
 */
static sw_status check_compose_case(tally *t, const sw_layout *a,
                                    const sw_layout *b, bool may_reject) {
    sw_layout *c = NULL;
    sw_status st = sw_layout_compose(a, b, &c);
    if (st == SW_EVALUE && may_reject) {
        sw_clear_error();
        return st;
    }
    bool good = st == SW_OK && sw_layout_size(c) == sw_layout_size(b);
    int64_t bad = -1;
    for (int64_t i = 0; good && i < sw_layout_size(b); i++) {
        int64_t want = IX(a, IX(b, i));
        if (want < 0 || IX(c, i) != want) {
            good = false;
            bad = i;
        }
    }
    bool compat = good && compatible(b, c);
    if (!good && t->failed < 5) {
        image bim = brute_image(b);
        printf("#   (B is %sinjective)\n", bim.injective ? "" : "not ");
    }
    tally_case(t, good && compat, "%s o %s = %s (%s%s%s), first bad i %lld",
               L(a), L(b), L(c), S(st), st == SW_OK ? "" : ": ",
               st == SW_OK ? "" : sw_errmsg(), (long long)bad);
    if (good && !compat)
        printf("#   (the function is right but the shape is not "
               "compatible with B)\n");
    sw_layout_unref(c);
    sw_clear_error();
    return st;
}

static void test_properties_compose(void) {
    int64_t base = sw_debug_live_allocs();
    rng r = {UINT64_C(0x5eed0002)};
    tally t_friendly = {"A o B for divisible B", 0, 0, 0};
    tally t_random = {"A o B for random B (rejections allowed)", 0, 0, 0};
    int64_t rejected = 0;
    for (int iter = 0; iter < 3000; iter++) {
        spec sa, sb;
        gen_random(&r, &sa, 6);
        sw_layout *a = mk(&sa);
        if (a == NULL)
            continue;
        if (iter % 2 == 0) {
            gen_compose_friendly(&r, &sa, &sb);
            sw_layout *b = mk(&sb);
            if (b != NULL)
                check_compose_case(&t_friendly, a, b, false);
            sw_layout_unref(b);
        } else if (gen_compose_random(&r, &sa, &sb)) {
            sw_layout *b = mk(&sb);
            if (b != NULL &&
                check_compose_case(&t_random, a, b, true) == SW_EVALUE)
                rejected++;
            sw_layout_unref(b);
        }
        sw_layout_unref(a);
    }
    tally_report(&t_friendly);
    tally_report(&t_random);
    diag("random compositions: %lld accepted, %lld rejected with SW_EVALUE",
         (long long)(t_random.run), (long long)rejected);
    ok(t_random.run >= 200,
       "a fair share of random compositions succeed (%lld)",
       (long long)t_random.run);
    leak_check(base, "composition properties");
}

static void test_properties_complement(void) {
    int64_t base = sw_debug_live_allocs();
    rng r = {UINT64_C(0x5eed0003)};
    tally t = {"complement: ordered, (A,C) injective, cosize M", 0, 0, 0};
    for (int iter = 0; iter < 2000; iter++) {
        spec s;
        int64_t span = gen_injective(&r, &s, 6, iter % 5 == 0, 256);
        int64_t m = span * rng_int(&r, 1, 3);
        sw_layout *a = mk(&s), *c = NULL, *ac = NULL;
        if (a == NULL)
            continue;
        sw_status st = sw_layout_complement(a, m, &c);
        bool good = st == SW_OK && sw_layout_depth(c) <= 1;
        const char *why = good ? "" : "status or depth";
        if (good) {
            const int64_t *d = sw_layout_leaf_strides(c);
            for (int32_t k = 1; good && k < sw_layout_nleaf(c); k++)
                good = d[k] > d[k - 1];
            why = good ? "" : "strides not increasing";
        }
        int inj = -1;
        if (good) {
            good = sw_layout_concat(a, c, &ac) == SW_OK &&
                   sw_layout_is_injective(ac, &inj) == SW_OK && inj == 1;
            why = good ? "" : "is_injective((A,C)) is not 1";
        }
        if (good) {
            image im = brute_image(ac);
            good = im.index_ok && im.injective;
            why = good ? "" : "(A,C) not injective by brute force";
        }
        if (good) {
            good = sw_layout_cosize(ac) == m;
            why = good ? "" : "cosize((A,C)) != M";
        }
        tally_case(&t, good, "complement(%s, %lld) = %s (%s): %s", L(a),
                   (long long)m, L(c), S(st), why);
        sw_layout_unref(ac);
        sw_layout_unref(c);
        sw_layout_unref(a);
        sw_clear_error();
    }
    tally_report(&t);
    leak_check(base, "complement properties");
}

/* Strides of a compact column-major layout over a random leaf order. */
static void compact_strides(rng *r, spec *s) {
    int32_t order[MAX_LEAF];
    for (int32_t k = 0; k < s->nleaf; k++)
        order[k] = k;
    rng_shuffle(r, s->nleaf, order);
    int64_t cur = 1;
    for (int32_t j = 0; j < s->nleaf; j++) {
        s->stride[order[j]] = cur;
        cur *= s->shape[order[j]];
    }
}

static void test_properties_divide(void) {
    int64_t base = sw_debug_live_allocs();
    rng r = {UINT64_C(0x5eed0004)};
    tally t = {"divide(A,B) == A o (B, complement(B, size(A)))", 0, 0, 0};
    int64_t succeeded = 0;
    for (int iter = 0; iter < 2000; iter++) {
        spec sb, sa;
        int64_t span;
        do
            span = gen_injective(&r, &sb, 3, rng_int(&r, 0, 1) == 0, 64);
        while (span > SIZE_BUDGET);
        int64_t k = rng_int(&r, 1, 4);
        while (span * k > SIZE_BUDGET)
            k--;
        gen_shape_of_size(&r, &sa, span * k);
        if (iter % 2 == 0)
            compact_strides(&r, &sa);
        else
            for (int32_t q = 0; q < sa.nleaf; q++)
                sa.stride[q] = rng_int(&r, 0, 40);
        sw_layout *a = mk(&sa), *b = mk(&sb);
        sw_layout *d = NULL, *c = NULL, *bc = NULL, *want = NULL;
        if (a == NULL || b == NULL) {
            sw_layout_unref(a);
            sw_layout_unref(b);
            continue;
        }
        sw_status st_d = sw_layout_divide(a, b, &d);
        sw_status st_w = sw_layout_complement(b, sw_layout_size(a), &c);
        if (st_w == SW_OK) {
            sw_layout *parts[2] = {b, c};
            st_w = sw_layout_make(2, parts, &bc);
        }
        if (st_w == SW_OK)
            st_w = sw_layout_compose(a, bc, &want);
        bool good = st_d == st_w && (st_d != SW_OK || sw_layout_equal(d, want));
        tally_case(&t, good, "%s / %s: divide %s %s, composed %s %s", L(a),
                   L(b), S(st_d), L(d), S(st_w), L(want));
        succeeded += st_d == SW_OK;
        sw_layout_unref(want);
        sw_layout_unref(bc);
        sw_layout_unref(c);
        sw_layout_unref(d);
        sw_layout_unref(b);
        sw_layout_unref(a);
        sw_clear_error();
    }
    tally_report(&t);
    ok(succeeded >= 200, "a fair share of random divisions succeed (%lld)",
       (long long)succeeded);
    leak_check(base, "divide properties");
}

static void test_properties_product(void) {
    int64_t base = sw_debug_live_allocs();
    rng r = {UINT64_C(0x5eed0005)};
    tally t = {"product(A,B) == (A, complement(A, size*cosize(B)) o B)", 0, 0,
               0};
    int64_t succeeded = 0;
    for (int iter = 0; iter < 1000; iter++) {
        spec sa, sb;
        gen_injective(&r, &sa, 4, iter % 4 != 0, 64);
        gen_structure(&r, &sb, (int32_t)rng_int(&r, 1, 3));
        gen_extents(&r, &sb, 64);
        if (iter % 2 == 0)
            compact_strides(&r, &sb);
        else
            for (int32_t q = 0; q < sb.nleaf; q++)
                sb.stride[q] = rng_int(&r, 0, 8);
        sw_layout *a = mk(&sa), *b = mk(&sb);
        sw_layout *p = NULL, *c = NULL, *cb = NULL, *want = NULL;
        if (a == NULL || b == NULL) {
            sw_layout_unref(a);
            sw_layout_unref(b);
            continue;
        }
        sw_status st_p = sw_layout_product(a, b, &p);
        sw_status st_w = sw_layout_complement(
            a, sw_layout_size(a) * sw_layout_cosize(b), &c);
        if (st_w == SW_OK)
            st_w = sw_layout_compose(c, b, &cb);
        if (st_w == SW_OK) {
            sw_layout *parts[2] = {a, cb};
            st_w = sw_layout_make(2, parts, &want);
        }
        bool good = st_p == st_w && (st_p != SW_OK || sw_layout_equal(p, want));
        tally_case(&t, good, "%s x %s: product %s %s, composed %s %s", L(a),
                   L(b), S(st_p), L(p), S(st_w), L(want));
        succeeded += st_p == SW_OK;
        sw_layout_unref(want);
        sw_layout_unref(cb);
        sw_layout_unref(c);
        sw_layout_unref(p);
        sw_layout_unref(b);
        sw_layout_unref(a);
        sw_clear_error();
    }
    tally_report(&t);
    ok(succeeded >= 100, "a fair share of random products succeed (%lld)",
       (long long)succeeded);
    leak_check(base, "product properties");
}

/* The length of the prefix 0, 1, 2, ... that l reaches. */
static int64_t reached_prefix(const sw_layout *l) {
    uint8_t *map = NULL;
    image im = brute_image_map(l, &map);
    int64_t k = 0;
    while (im.index_ok && in_map(map, im.max, k))
        k++;
    free(map);
    return k;
}

/*
 * Whether the leaves of l, sorted by stride, each start at a multiple of
 * the previous one's span: the condition for CuTe's complement, which its
 * left inverse is built from. Extent-1 leaves do not count.
 */
static bool strides_divide(const sw_layout *l) {
    int64_t e[MAX_LEAF], d[MAX_LEAF];
    int32_t n = 0;
    for (int32_t k = 0; k < sw_layout_nleaf(l) && n < MAX_LEAF; k++) {
        if (sw_layout_leaf_extents(l)[k] == 1)
            continue;
        e[n] = sw_layout_leaf_extents(l)[k];
        d[n] = sw_layout_leaf_strides(l)[k];
        /* Insertion sort by stride: n is tiny. */
        for (int32_t j = n; j > 0 && d[j] < d[j - 1]; j--) {
            int64_t te = e[j], td = d[j];
            e[j] = e[j - 1];
            d[j] = d[j - 1];
            e[j - 1] = te;
            d[j - 1] = td;
        }
        n++;
    }
    for (int32_t k = 1; k < n; k++)
        if (d[k] < e[k - 1] * d[k - 1] || d[k] % (e[k - 1] * d[k - 1]) != 0)
            return false;
    return true;
}

static void test_properties_inverse(void) {
    int64_t base = sw_debug_live_allocs();
    rng r = {UINT64_C(0x5eed0006)};
    tally t_right = {"L(right_inverse(L)(i)) == i", 0, 0, 0};
    tally t_prefix = {"right_inverse covers the reached prefix (injective L)",
                      0, 0, 0};
    tally t_left = {"left_inverse(L)(L(i)) == i (injective L, strides "
                    "divide)",
                    0, 0, 0};
    /*
     * The header refuses (SW_EVALUE) injective layouts whose sorted strides
     * do not divide one another; when it does answer, the answer must hold.
     */
    tally t_left_other = {"left_inverse of injective L whose strides do not "
                          "divide: correct or SW_EVALUE",
                          0, 0, 0};
    tally t_left_bad = {"left_inverse rejects non-injective L", 0, 0, 0};
    for (int iter = 0; iter < 2000; iter++) {
        spec s;
        if (iter % 3 == 0)
            gen_random(&r, &s, 6);
        else
            gen_injective(&r, &s, 6, iter % 3 == 1, 512);
        sw_layout *l = mk(&s), *ri = NULL, *li = NULL;
        if (l == NULL)
            continue;
        image im = brute_image(l);

        sw_status st = sw_layout_right_inverse(l, &ri);
        bool good = st == SW_OK;
        for (int64_t i = 0; good && i < sw_layout_size(ri); i++)
            good = IX(l, IX(ri, i)) == i;
        tally_case(&t_right, good, "right_inverse(%s) = %s (%s)", L(l), L(ri),
                   S(st));
        if (st == SW_OK && im.injective) {
            int64_t k = reached_prefix(l);
            tally_case(&t_prefix, sw_layout_size(ri) == k,
                       "right_inverse(%s) = %s has size %lld, L reaches "
                       "0..%lld",
                       L(l), L(ri), (long long)sw_layout_size(ri),
                       (long long)(k - 1));
        }

        st = sw_layout_left_inverse(l, &li);
        if (im.injective) {
            bool divides = strides_divide(l);
            good = st == SW_OK;
            for (int64_t i = 0; good && i < sw_layout_size(l); i++)
                good = IX(li, IX(l, i)) == i;
            if (!divides && st == SW_EVALUE)
                good = true;
            tally_case(divides ? &t_left : &t_left_other, good,
                       "left_inverse(%s) = %s (%s%s%s)", L(l), L(li), S(st),
                       st == SW_OK ? "" : ": ", st == SW_OK ? "" : sw_errmsg());
        } else {
            tally_case(&t_left_bad, st == SW_EVALUE,
                       "left_inverse(%s) gives %s %s", L(l), S(st), L(li));
        }
        sw_layout_unref(li);
        sw_layout_unref(ri);
        sw_layout_unref(l);
        sw_clear_error();
    }
    tally_report(&t_right);
    tally_report(&t_prefix);
    tally_report(&t_left);
    tally_report(&t_left_other);
    tally_report(&t_left_bad);
    leak_check(base, "inverse properties");
}

/* ------------------------------------------------------------ overflow */

/* A rejected call's status and exact message; the out-parameter is kept. */
static void expect_message(sw_status st, sw_status want, const void *out,
                           const void *sentinel, const char *msg,
                           const char *name) {
    is_int(st, want, "%s fails with %s (got %s)", name, S(want), S(st));
    ok(out == sentinel, "%s leaves its out-parameter alone", name);
    if (st != SW_OK)
        is_str(sw_errmsg(), msg, "%s: message", name);
    sw_clear_error();
}

/*
 * Sizes, strides and indices at the edge of int64_t. INT64_MAX is itself a
 * valid size, so overflow must be a status and never a marker value; and
 * every intermediate product must be checked (the sanitizer build turns an
 * unchecked one into a failure).
 */
static void test_overflow(void) {
    sw_status status;
    int64_t base = sw_debug_live_allocs();
    const int64_t max = INT64_MAX;
    static const int32_t two[] = {LEAF, LEAF};

    /* A shape of size exactly INT64_MAX, then one past it. */
    const int64_t exact[] = {max, 1}, maxmax[] = {max, max}, max2[] = {max, 2};
    const int64_t two_max[] = {2, max};
    sw_tree *t = NULL;
    status = sw_tree_new(SW_TREE_SHAPE, 2, two, exact, &t);
    if (ok(status == SW_OK, "shape (INT64_MAX,1) is admissible"))
        is_int(sw_tree_size(t), max, "and its size is INT64_MAX");
    sw_tree_unref(t);
    const int64_t *over[] = {maxmax, max2, two_max};
    const char *over_name[] = {"(INT64_MAX,INT64_MAX)", "(INT64_MAX,2)",
                               "(2,INT64_MAX)"};
    for (int k = 0; k < 3; k++) {
        char name[96];
        snprintf(name, sizeof name, "shape %s", over_name[k]);
        t = SENT_TREE;
        status = sw_tree_new(SW_TREE_SHAPE, 2, two, over[k], &t);
        expect_message(status, SW_EVALUE, t, SENT_TREE,
                       "Shape size overflows 64-bit integers", name);
    }
    /* A stride tree's product has no use; one that overflows reads -1. */
    t = NULL;
    status = sw_tree_new(SW_TREE_STRIDE, 2, two, maxmax, &t);
    if (ok(status == SW_OK, "stride (INT64_MAX,INT64_MAX) is admissible"))
        is_int(sw_tree_size(t), -1, "its product does not fit: -1");
    sw_tree_unref(t);
    sw_layout *l = SENT_LAYOUT;
    status =
        sw_layout_parse("(9223372036854775807,9223372036854775807):(0,0)", &l);
    expect_message(status, SW_EVALUE, l, SENT_LAYOUT,
                   "Shape size overflows 64-bit integers",
                   "parse (INT64_MAX,INT64_MAX):(0,0)");

    /* INT64_MAX = 7 * 1317624576693539401: coalesces to exactly max:1. */
    check_unop(sw_layout_coalesce, "coalesce", "(7,1317624576693539401):(1,7)",
               "9223372036854775807:1", true);
    check_unop(sw_layout_coalesce, "coalesce", "(9223372036854775807,1):(0,0)",
               "9223372036854775807:0", true);
    sw_layout *r = NULL;
    sw_layout *big = P("(7,1317624576693539401):(1,7)");
    if (big != NULL) {
        int64_t idx = -1;
        status = sw_layout_index(big, max - 1, &idx);
        ok(status == SW_OK && idx == max - 1,
           "index INT64_MAX-1 of a compact layout of size INT64_MAX");
        status = sw_layout_right_inverse(big, &r);
        expect_exact(status, r, "9223372036854775807:1",
                     "right_inverse((7,1317624576693539401):(1,7))");
        sw_layout_unref(r);
        r = NULL;
        status = sw_layout_left_inverse(big, &r);
        expect_exact(status, r, "9223372036854775807:1",
                     "left_inverse((7,1317624576693539401):(1,7))");
        sw_layout_unref(r);
        sw_layout_unref(big);
    }

    /* A left inverse of 2:2^62 would have 2^63 elements. */
    sw_layout *a = P("2:4611686018427387904");
    if (a != NULL) {
        r = SENT_LAYOUT;
        status = sw_layout_left_inverse(a, &r);
        expect_message(status, SW_EVALUE, r, SENT_LAYOUT,
                       "left inverse of 2:4611686018427387904: its size "
                       "overflows 64-bit integers",
                       "left_inverse(2:2^62)");
        r = NULL;
        status = sw_layout_right_inverse(a, &r);
        expect_exact(status, r, "1:0", "right_inverse(2:2^62)");
        sw_layout_unref(r);
        sw_layout_unref(a);
    }

    /* Composition with A's last mode at INT64_MAX: ceil(s / r) must not
     * form s + r - 1. */
    check_binop(sw_layout_compose, "compose", "9223372036854775807:1", "1:2",
                "1:2", true);
    check_binop(sw_layout_compose, "compose", "9223372036854775807:1",
                "2:4611686018427387903", "2:4611686018427387903", true);
    /* A stride product that overflows is refused with a message. */
    a = P("(2,2):(1,4611686018427387904)");
    sw_layout *b = P("2:4");
    if (a != NULL && b != NULL) {
        r = SENT_LAYOUT;
        status = sw_layout_compose(a, b, &r);
        expect_message(status, SW_EVALUE, r, SENT_LAYOUT,
                       "composition: stride 4 of B overflows 64-bit integers "
                       "in mode 2:4611686018427387904 of A",
                       "compose((2,2):(1,2^62), 2:4)");

        /* The product's target size(A) * cosize(B) is checked too. */
        sw_layout *c = P("3074457345618258602:1");
        if (c != NULL) {
            r = SENT_LAYOUT;
            status = sw_layout_product(c, a, &r);
            expect_message(status, SW_EVALUE, r, SENT_LAYOUT,
                           "product size overflows 64-bit integers",
                           "product(3074457345618258602:1, (2,2):(1,2^62))");
            sw_layout_unref(c);
        }
    }
    sw_layout_unref(a);
    sw_layout_unref(b);
    /* Its neighbour B = 2:2 stays inside A and needs no extension. */
    check_binop(sw_layout_compose, "compose", "(2,2):(1,4611686018427387904)",
                "2:2", "2:4611686018427387904", true);

    /* choose: a stride that overflows names it. */
    a = P("(1,2):(1,4611686018427387904)");
    if (a != NULL) {
        r = SENT_LAYOUT;
        status = sw_layout_choose(a, 2, &r);
        expect_message(status, SW_EVALUE, r, SENT_LAYOUT,
                       "Can not choose the 2-th element of Layout "
                       "(1,2):(1,4611686018427387904): stride "
                       "4611686018427387904 times 2 overflows 64-bit integers",
                       "choose((1,2):(1,2^62), 2)");
        r = NULL;
        status = sw_layout_modout(a, max, &r);
        expect_exact(status, r, "(1,2):(1,4611686018427387904)",
                     "modout((1,2):(1,2^62), INT64_MAX)");
        sw_layout_unref(r);
        sw_layout_unref(a);
    }
    leak_check(base, "overflow");
}

/* choose and modout as the reference defines them: no extension. */
static void test_choose_modout_reference(void) {
    sw_status status;
    int64_t base = sw_debug_live_allocs();
    sw_layout *a = P("3:1"), *r = SENT_LAYOUT;
    if (a != NULL) {
        status = sw_layout_choose(a, 2, &r);
        expect_message(status, SW_EVALUE, r, SENT_LAYOUT,
                       "Can not choose the 2-th element of Layout 3:1",
                       "choose(3:1, 2)");
        r = NULL;
        status = sw_layout_choose(a, 3, &r);
        expect_exact(status, r, "1:3", "choose(3:1, 3)");
        sw_layout_unref(r);
        sw_layout_unref(a);
    }
    a = P("(4,3):(1,4)");
    if (a != NULL) {
        r = SENT_LAYOUT;
        status = sw_layout_choose(a, 6, &r);
        expect_message(status, SW_EVALUE, r, SENT_LAYOUT,
                       "Can not choose the 6-th element of Layout "
                       "(4,3):(1,4): 4 can not be reduced by 6",
                       "choose((4,3):(1,4), 6)");
        r = SENT_LAYOUT;
        status = sw_layout_choose(a, 0, &r);
        expect_message(status, SW_EVALUE, r, SENT_LAYOUT,
                       "choose: the stride must be positive",
                       "choose((4,3):(1,4), 0)");
        sw_layout_unref(a);
    }
    a = P("(2,3):(1,2)");
    if (a != NULL) {
        /* A layout of fewer than s elements is kept whole. */
        r = NULL;
        status = sw_layout_modout(a, 12, &r);
        expect_exact(status, r, "(2,3):(1,2)", "modout((2,3):(1,2), 12)");
        sw_layout_unref(r);
        r = NULL;
        status = sw_layout_modout(a, 6, &r);
        expect_exact(status, r, "(2,3):(1,2)", "modout((2,3):(1,2), 6)");
        sw_layout_unref(r);
        r = NULL;
        status = sw_layout_modout(a, 4, &r);
        expect_exact(status, r, "(2,2):(1,2)", "modout((2,3):(1,2), 4)");
        sw_layout_unref(r);
        r = SENT_LAYOUT;
        status = sw_layout_modout(a, 0, &r);
        expect_message(status, SW_EVALUE, r, SENT_LAYOUT,
                       "modout: the count must be positive",
                       "modout((2,3):(1,2), 0)");
        sw_layout_unref(a);
    }
    a = P("(4,4):(1,4)");
    if (a != NULL) {
        r = SENT_LAYOUT;
        status = sw_layout_modout(a, 6, &r);
        expect_message(status, SW_EVALUE, r, SENT_LAYOUT,
                       "Shape divisibility condition not met for (4,4):(1,4) "
                       "and 6",
                       "modout((4,4):(1,4), 6)");
        sw_layout_unref(a);
    }
    /* Composition still extends A's last mode (COMPATIBILITY.md). */
    check_binop(sw_layout_compose, "compose", "(2,3):(1,2)", "8:1", "8:1",
                true);
    check_binop(sw_layout_compose, "compose", "3:1", "2:2", "2:2", true);
    leak_check(base, "choose and modout");
}

/* ------------------------------------------------ fault injection */

/*
 * Every out-parameter an entry point can have. The walk fills them with
 * sentinels, so that any write on failure shows.
 */
#define FI_PIECES 8
typedef struct fi_out {
    sw_layout *layout;
    sw_tree *tree;
    int flag;
    int32_t count;
    sw_layout *pieces[FI_PIECES];
    int32_t nrev_out, nrev_sel;
    int32_t *rev_out, *rev_sel;
} fi_out;

static void fi_reset(fi_out *o) {
    o->layout = SENT_LAYOUT;
    o->tree = SENT_TREE;
    o->flag = -7;
    o->count = -7;
    for (int k = 0; k < FI_PIECES; k++)
        o->pieces[k] = SENT_LAYOUT;
    o->nrev_out = o->nrev_sel = -7;
    o->rev_out = o->rev_sel = SENT_RECIPE;
}

static bool fi_untouched(const fi_out *o) {
    bool same = o->layout == SENT_LAYOUT && o->tree == SENT_TREE &&
                o->flag == -7 && o->count == -7 && o->nrev_out == -7 &&
                o->nrev_sel == -7 && o->rev_out == SENT_RECIPE &&
                o->rev_sel == SENT_RECIPE;
    for (int k = 0; k < FI_PIECES; k++)
        same = same && o->pieces[k] == SENT_LAYOUT;
    return same;
}

static void fi_append(char *buf, size_t cap, const char *text) {
    size_t used = strlen(buf);
    if (used < cap)
        snprintf(buf + used, cap - used, "%s", text);
}

static void fi_append_recipe(char *buf, size_t cap, int32_t n,
                             const int32_t *rc) {
    char tok[16];
    for (int32_t k = 0; k < n; k++) {
        snprintf(tok, sizeof tok, " %d", rc[k]);
        fi_append(buf, cap, tok);
    }
}

/* A text naming every result written, to compare two runs of a call. */
static void fi_describe(const fi_out *o, char *buf, size_t cap) {
    char num[32];
    buf[0] = '\0';
    if (o->layout != SENT_LAYOUT) {
        fi_append(buf, cap, "layout ");
        fi_append(buf, cap, L(o->layout));
    }
    if (o->tree != SENT_TREE) {
        fi_append(buf, cap, " tree ");
        fi_append(buf, cap, T(o->tree));
    }
    if (o->flag != -7) {
        snprintf(num, sizeof num, " flag %d", o->flag);
        fi_append(buf, cap, num);
    }
    if (o->count != -7) {
        snprintf(num, sizeof num, " count %d:", o->count);
        fi_append(buf, cap, num);
        for (int32_t k = 0; k < o->count && k < FI_PIECES; k++) {
            fi_append(buf, cap, " ");
            fi_append(buf, cap, L(o->pieces[k]));
        }
    }
    if (o->rev_out != SENT_RECIPE) {
        fi_append(buf, cap, " rev_out");
        fi_append_recipe(buf, cap, o->nrev_out, o->rev_out);
    }
    if (o->rev_sel != SENT_RECIPE) {
        fi_append(buf, cap, " rev_sel");
        fi_append_recipe(buf, cap, o->nrev_sel, o->rev_sel);
    }
}

static void fi_release(fi_out *o) {
    if (o->layout != SENT_LAYOUT)
        sw_layout_unref(o->layout);
    if (o->tree != SENT_TREE)
        sw_tree_unref(o->tree);
    for (int32_t k = 0; k < FI_PIECES; k++)
        if (o->pieces[k] != SENT_LAYOUT)
            sw_layout_unref(o->pieces[k]);
    if (o->rev_out != SENT_RECIPE)
        sw_free_recipe(o->rev_out);
    if (o->rev_sel != SENT_RECIPE)
        sw_free_recipe(o->rev_sel);
    fi_reset(o);
}

/* Inputs shared by the cases, built before the walk with the hook off. */
static struct fi_inputs {
    sw_layout *a, *b, *nested, *hier, *coal, *unit, *filt, *divd, *four2;
    sw_layout *prod_a, *prod_b, *blk_a, *blk_b, *inv, *inj, *rear3, *deep;
    sw_layout *mode_src, *tiler_src, *tile_t[2], *compose_t[2];
    sw_layout *comp_src, *choose_src, *modout_src;
    sw_tree *shape, *stride, *tshape38, *tpair;
} in;

static const int32_t fi_recipe[] = {LEAF, PUSH, LEAF, LEAF, POP};
static const int64_t fi_shape[] = {2, 3, 4}, fi_stride[] = {1, 10, 100};
static const int32_t fi_prof11[] = {LEAF, LEAF};
static const int32_t fi_o201[] = {2, 0, 1}, fi_o10[] = {1, 0};
static const int32_t fi_o1l0[] = {1, LEAF, 0};
static const int32_t fi_idx[] = {2, 0};

static sw_status fi_parse(fi_out *o) {
    return sw_layout_parse("((2,(3,4)),5):((1,(2,6)),24)", &o->layout);
}
static sw_status fi_new(fi_out *o) {
    return sw_layout_new(in.shape, in.stride, &o->layout);
}
static sw_status fi_from_recipe(fi_out *o) {
    return sw_layout_from_recipe(5, fi_recipe, fi_shape, fi_stride, &o->layout);
}
static sw_status fi_leaf(fi_out *o) {
    return sw_layout_leaf(6, 3, &o->layout);
}
static sw_status fi_empty(fi_out *o) {
    return sw_layout_empty(&o->layout);
}
static sw_status fi_compose(fi_out *o) {
    return sw_layout_compose(in.a, in.b, &o->layout);
}
static sw_status fi_compose_tiler(fi_out *o) {
    return sw_layout_compose_tiler(in.comp_src, 2, in.compose_t, &o->layout);
}
static sw_status fi_compose_shape(fi_out *o) {
    return sw_layout_compose_shape(in.comp_src, in.tshape38, &o->layout);
}
static sw_status fi_complement(fi_out *o) {
    return sw_layout_complement(in.blk_b, 24, &o->layout);
}
static sw_status fi_coalesce(fi_out *o) {
    return sw_layout_coalesce(in.coal, &o->layout);
}
static sw_status fi_coalesce_profile(fi_out *o) {
    return sw_layout_coalesce_profile(in.unit, 2, fi_prof11, &o->layout);
}
static sw_status fi_filter(fi_out *o) {
    return sw_layout_filter(in.filt, &o->layout);
}
static sw_status fi_flatten(fi_out *o) {
    return sw_layout_flatten(in.deep, &o->layout);
}
static sw_status fi_divide(fi_out *o) {
    return sw_layout_divide(in.divd, in.four2, &o->layout);
}
static sw_status fi_divide_tiler(fi_out *o) {
    return sw_layout_divide_tiler(in.tiler_src, 2, in.tile_t, &o->layout);
}
static sw_status fi_zipped_divide(fi_out *o) {
    return sw_layout_zipped_divide(in.tiler_src, 2, in.tile_t, &o->layout);
}
static sw_status fi_tiled_divide(fi_out *o) {
    return sw_layout_tiled_divide(in.tiler_src, 2, in.tile_t, &o->layout);
}
static sw_status fi_flat_divide(fi_out *o) {
    return sw_layout_flat_divide(in.tiler_src, 2, in.tile_t, &o->layout);
}
static sw_status fi_product(fi_out *o) {
    return sw_layout_product(in.prod_a, in.prod_b, &o->layout);
}
static sw_status fi_blocked_product(fi_out *o) {
    return sw_layout_blocked_product(in.blk_a, in.prod_b, &o->layout);
}
static sw_status fi_raked_product(fi_out *o) {
    return sw_layout_raked_product(in.blk_a, in.prod_b, &o->layout);
}
static sw_status fi_right_inverse(fi_out *o) {
    return sw_layout_right_inverse(in.inv, &o->layout);
}
static sw_status fi_left_inverse(fi_out *o) {
    return sw_layout_left_inverse(in.inv, &o->layout);
}
static sw_status fi_is_injective(fi_out *o) {
    return sw_layout_is_injective(in.inj, &o->flag);
}
static sw_status fi_is_compact(fi_out *o) {
    return sw_layout_is_compact(in.inv, &o->flag);
}
static sw_status fi_choose(fi_out *o) {
    return sw_layout_choose(in.choose_src, 9, &o->layout);
}
static sw_status fi_modout(fi_out *o) {
    return sw_layout_modout(in.modout_src, 16, &o->layout);
}
static sw_status fi_extract(fi_out *o) {
    return sw_layout_extract(in.hier, -1, NULL, FI_PIECES, o->pieces,
                             &o->count);
}
static sw_status fi_extract_profile(fi_out *o) {
    return sw_layout_extract(in.hier, 2, fi_prof11, FI_PIECES, o->pieces,
                             &o->count);
}
static sw_status fi_rearrange(fi_out *o) {
    return sw_layout_rearrange(in.rear3, 3, fi_o201, -1, NULL, &o->layout);
}
static sw_status fi_rearrange_sel(fi_out *o) {
    return sw_layout_rearrange(in.nested, 2, fi_o10, 2, fi_prof11, &o->layout);
}
static sw_status fi_rearrange_reverse(fi_out *o) {
    return sw_rearrange_reverse(3, fi_o1l0, 2, fi_prof11, &o->nrev_out,
                                &o->rev_out, &o->nrev_sel, &o->rev_sel);
}
static sw_status fi_concat(fi_out *o) {
    return sw_layout_concat(in.hier, in.b, &o->layout);
}
static sw_status fi_append_layout(fi_out *o) {
    return sw_layout_append(in.b, in.hier, &o->layout);
}
static sw_status fi_make(fi_out *o) {
    sw_layout *parts[3] = {in.four2, in.hier, in.b};
    return sw_layout_make(3, parts, &o->layout);
}
static sw_status fi_permute(fi_out *o) {
    return sw_layout_permute(in.mode_src, 3, fi_o201, &o->layout);
}
static sw_status fi_select(fi_out *o) {
    return sw_layout_select(in.mode_src, 2, fi_idx, &o->layout);
}
static sw_status fi_mode(fi_out *o) {
    return sw_layout_mode(in.mode_src, 1, &o->layout);
}
static sw_status fi_tree_new(fi_out *o) {
    return sw_tree_new(SW_TREE_SHAPE, 5, fi_recipe, fi_shape, &o->tree);
}
static sw_status fi_tree_parse(fi_out *o) {
    return sw_tree_parse(SW_TREE_STRIDE, "(1,(10,(100,7)),3)", &o->tree);
}
static sw_status fi_tree_child(fi_out *o) {
    return sw_tree_child(in.shape, 1, &o->tree);
}
static sw_status fi_tree_select(fi_out *o) {
    static const int32_t idx[] = {1, 0};
    return sw_tree_select(in.shape, 2, idx, &o->tree);
}
static sw_status fi_tree_concat(fi_out *o) {
    return sw_tree_concat(in.shape, in.tpair, &o->tree);
}
static sw_status fi_tree_append(fi_out *o) {
    return sw_tree_append(in.shape, in.tpair, &o->tree);
}

typedef struct fi_case {
    const char *name;
    sw_status (*run)(fi_out *);
} fi_case;

static const fi_case fi_cases[] = {
    {"sw_layout_parse", fi_parse},
    {"sw_layout_new", fi_new},
    {"sw_layout_from_recipe", fi_from_recipe},
    {"sw_layout_leaf", fi_leaf},
    {"sw_layout_empty", fi_empty},
    {"sw_layout_compose", fi_compose},
    {"sw_layout_compose_tiler", fi_compose_tiler},
    {"sw_layout_compose_shape", fi_compose_shape},
    {"sw_layout_complement", fi_complement},
    {"sw_layout_coalesce", fi_coalesce},
    {"sw_layout_coalesce_profile", fi_coalesce_profile},
    {"sw_layout_filter", fi_filter},
    {"sw_layout_flatten", fi_flatten},
    {"sw_layout_divide", fi_divide},
    {"sw_layout_divide_tiler", fi_divide_tiler},
    {"sw_layout_zipped_divide", fi_zipped_divide},
    {"sw_layout_tiled_divide", fi_tiled_divide},
    {"sw_layout_flat_divide", fi_flat_divide},
    {"sw_layout_product", fi_product},
    {"sw_layout_blocked_product", fi_blocked_product},
    {"sw_layout_raked_product", fi_raked_product},
    {"sw_layout_right_inverse", fi_right_inverse},
    {"sw_layout_left_inverse", fi_left_inverse},
    {"sw_layout_is_injective", fi_is_injective},
    {"sw_layout_is_compact", fi_is_compact},
    {"sw_layout_choose", fi_choose},
    {"sw_layout_modout", fi_modout},
    {"sw_layout_extract", fi_extract},
    {"sw_layout_extract (profile)", fi_extract_profile},
    {"sw_layout_rearrange", fi_rearrange},
    {"sw_layout_rearrange (selection)", fi_rearrange_sel},
    {"sw_rearrange_reverse", fi_rearrange_reverse},
    {"sw_layout_concat", fi_concat},
    {"sw_layout_append", fi_append_layout},
    {"sw_layout_make", fi_make},
    {"sw_layout_permute", fi_permute},
    {"sw_layout_select", fi_select},
    {"sw_layout_mode", fi_mode},
    {"sw_tree_new", fi_tree_new},
    {"sw_tree_parse", fi_tree_parse},
    {"sw_tree_child", fi_tree_child},
    {"sw_tree_select", fi_tree_select},
    {"sw_tree_concat", fi_tree_concat},
    {"sw_tree_append", fi_tree_append},
};

/* Every input layout with its text, so that building and releasing loop. */
static const struct fi_layout_input {
    sw_layout **slot;
    const char *text;
} fi_layout_inputs[] = {
    {&in.a, "(6,2):(8,2)"},
    {&in.b, "(4,3):(3,1)"},
    {&in.nested, "(1,(2,3)):(5,(7,14))"},
    {&in.hier, "(2,(3,4)):(1,(10,100))"},
    {&in.coal, "((2,(3,4)),(3,2),1):((4,(8,24)),(2,6),12)"},
    {&in.unit, "(2,(1,6)):(1,(6,2))"},
    {&in.filt, "(2,1,3,(4,2)):(0,7,1,(3,0))"},
    {&in.divd, "(4,2,3):(2,1,8)"},
    {&in.four2, "4:2"},
    {&in.prod_a, "(2,2):(4,1)"},
    {&in.prod_b, "(4,2):(2,1)"},
    {&in.blk_a, "(2,5):(5,1)"},
    {&in.blk_b, "(2,2):(4,1)"},
    {&in.inv, "(2,4,6):(4,1,8)"},
    {&in.inj, "(4,3,5):(3,5,7)"},
    {&in.rear3, "(2,3,4):(1,2,6)"},
    {&in.deep, "(2,(3,(4,5))):(1,(2,(6,24)))"},
    {&in.mode_src, "(2,(3,4),5):(1,(2,6),24)"},
    {&in.tiler_src, "(9,(4,8)):(59,(13,1))"},
    {&in.tile_t[0], "3:3"},
    {&in.tile_t[1], "(2,4):(1,8)"},
    {&in.comp_src, "(12,(4,8)):(59,(13,1))"},
    {&in.compose_t[0], "3:4"},
    {&in.compose_t[1], "8:2"},
    {&in.choose_src, "(3,6,2,8):(1,3,18,36)"},
    {&in.modout_src, "(1,2,2,8):(9,9,18,36)"},
};

static bool fi_build_inputs(void) {
    bool good = true;
    size_t n = sizeof fi_layout_inputs / sizeof fi_layout_inputs[0];
    for (size_t k = 0; k < n; k++) {
        *fi_layout_inputs[k].slot = P(fi_layout_inputs[k].text);
        good = good && *fi_layout_inputs[k].slot != NULL;
    }
    in.shape = PT(SW_TREE_SHAPE, "(2,(3,4))");
    in.stride = PT(SW_TREE_STRIDE, "(1,(10,100))");
    in.tshape38 = PT(SW_TREE_SHAPE, "(3,8)");
    in.tpair = PT(SW_TREE_SHAPE, "(6,7)");
    return good && in.shape && in.stride && in.tshape38 && in.tpair;
}

static void fi_release_inputs(void) {
    size_t n = sizeof fi_layout_inputs / sizeof fi_layout_inputs[0];
    for (size_t k = 0; k < n; k++)
        sw_layout_unref(*fi_layout_inputs[k].slot);
    sw_tree_unref(in.shape);
    sw_tree_unref(in.stride);
    sw_tree_unref(in.tshape38);
    sw_tree_unref(in.tpair);
}

/*
 * Walks n = 0, 1, 2, ...: with n allocations allowed, the call must either
 * succeed or fail with SW_ENOMEM, leaving its out-parameters alone and
 * nothing allocated. The first n that succeeds ends the walk; its result
 * must be the one computed without injection. Returns the number of
 * allocation sites walked (the n that succeeded), or -1.
 */
#define FI_MAX_STEPS 20000
static int64_t fi_walk(const fi_case *c) {
    static char want[4096], got[4096];
    fi_out o;
    fi_reset(&o);
    int64_t base = sw_debug_live_allocs();
    sw_status st = c->run(&o);
    if (st != SW_OK) {
        ok(0, "fault injection: %s works without injection", c->name);
        diag("status %s: %s", S(st), sw_errmsg());
        fi_release(&o);
        return -1;
    }
    fi_describe(&o, want, sizeof want);
    fi_release(&o);
    if (sw_debug_live_allocs() != base) {
        ok(0, "fault injection: %s leaks without injection", c->name);
        return -1;
    }

    int failures = 0;
    for (int64_t n = 0; n < FI_MAX_STEPS; n++) {
        fi_reset(&o);
        sw_clear_error();
        sw_debug_fail_alloc_after(n);
        st = c->run(&o);
        sw_debug_fail_alloc_after(-1);
        bool good = true;
        if (st == SW_ENOMEM) {
            if (!fi_untouched(&o)) {
                diag("%s, n=%lld: SW_ENOMEM but an out-parameter was written",
                     c->name, (long long)n);
                good = false;
            }
            if (sw_errcode() != SW_ENOMEM) {
                diag("%s, n=%lld: SW_ENOMEM but sw_errcode is %s", c->name,
                     (long long)n, S(sw_errcode()));
                good = false;
            }
        } else if (st == SW_OK) {
            fi_describe(&o, got, sizeof got);
            if (strcmp(got, want) != 0) {
                diag("%s, n=%lld: result '%s', without injection '%s'", c->name,
                     (long long)n, got, want);
                good = false;
            }
        } else {
            diag("%s, n=%lld: status %s (%s); only SW_OK or SW_ENOMEM may "
                 "come out",
                 c->name, (long long)n, S(st), sw_errmsg());
            good = false;
        }
        /* Releasing a partial write would be unsafe; only release on OK. */
        if (st == SW_OK)
            fi_release(&o);
        if (sw_debug_live_allocs() != base) {
            diag("%s, n=%lld (%s): %lld allocations live, baseline %lld",
                 c->name, (long long)n, S(st),
                 (long long)sw_debug_live_allocs(), (long long)base);
            good = false;
        }
        if (!good && ++failures >= 3)
            break;
        if (st == SW_OK) {
            ok(failures == 0,
               "fault injection: %s fails cleanly at each of %lld "
               "allocation sites",
               c->name, (long long)n);
            return n;
        }
        if (st != SW_ENOMEM)
            break;
    }
    ok(0, "fault injection: %s (%d bad steps, walk stopped)", c->name,
       failures);
    return -1;
}

static void test_fault_injection(void) {
    if (!fi_build_inputs()) {
        ok(0, "fault injection: inputs");
        fi_release_inputs();
        return;
    }
    int64_t base = sw_debug_live_allocs();
    int64_t sites = 0;
    size_t ncase = sizeof fi_cases / sizeof fi_cases[0];
    for (size_t k = 0; k < ncase; k++) {
        int64_t n = fi_walk(&fi_cases[k]);
        if (n > 0)
            sites += n;
    }
    diag("fault injection: %lld allocation sites walked over %zu entry "
         "points",
         (long long)sites, ncase);
    leak_check(base, "fault injection");
    fi_release_inputs();
}

/* Python's rules beside the reference's: SW_INDEX_WRAP and SW_INDEX_EXACT. */
static void test_index_flags(void) {
    int64_t base = sw_debug_live_allocs();
    sw_layout *l = P("(2,(3,4)):(1,(10,100))");
    if (l == NULL)
        return;
    int64_t r = SENT_INT64;
    sw_status st = sw_layout_index_ex(l, -1, SW_INDEX_WRAP, &r);
    ok(st == SW_OK && r == 321, "logical index -1 wraps to 23 (got %lld)",
       (long long)r);
    st = sw_layout_index_ex(l, -24, SW_INDEX_WRAP, &r);
    ok(st == SW_OK && r == 0, "logical index -24 wraps to 0");
    st = sw_layout_index_ex(l, -25, SW_INDEX_WRAP, &r);
    is_int(st, SW_EVALUE, "logical index -25 stays outside");
    is_str(sw_errmsg(), "Key is not in domain of shape", "its message");
    sw_clear_error();
    st = sw_layout_index_ex(l, -1, 0, &r);
    is_int(st, SW_EVALUE, "without SW_INDEX_WRAP -1 is outside");
    sw_clear_error();
    st = sw_layout_index_ex(l, INT64_MIN, SW_INDEX_WRAP, &r);
    is_int(st, SW_EVALUE, "INT64_MIN stays outside");
    sw_clear_error();

    /* (-1, (-1, -2)) is (1, (2, 2)); a nested mode's int wraps by its size. */
    static const int32_t rc[] = {LEAF, PUSH, LEAF, LEAF, POP};
    static const int64_t vc[] = {-1, -1, -2};
    r = SENT_INT64;
    st = sw_layout_index_coord_ex(l, 5, rc, vc, SW_INDEX_WRAP, &r);
    ok(st == SW_OK && r == 221, "(-1,(-1,-2)) is 221 (got %lld)", (long long)r);
    static const int32_t r2[] = {LEAF, LEAF};
    static const int64_t v2[] = {-2, -1};
    st = sw_layout_index_coord_ex(l, 2, r2, v2, SW_INDEX_WRAP, &r);
    ok(st == SW_OK && r == 320, "(-2,-1) is (0,11): 320 (got %lld)",
       (long long)r);
    static const int64_t v3[] = {-3, 0};
    st = sw_layout_index_coord_ex(l, 2, r2, v3, SW_INDEX_WRAP, &r);
    is_int(st, SW_EVALUE, "-3 on an extent-2 mode stays outside");
    is_str(sw_errmsg(), "Key is not in domain of shape", "its message");
    sw_clear_error();
    st = sw_layout_index_coord_ex(l, 2, r2, v2, 0, &r);
    is_int(st, SW_EVALUE, "without SW_INDEX_WRAP negatives are outside");
    sw_clear_error();

    /* Extra coordinates, at the top and inside a nested mode. */
    static const int32_t r4[] = {LEAF, PUSH, LEAF, LEAF, POP, LEAF};
    static const int64_t v4[] = {1, 2, 3, 7};
    st = sw_layout_index_coord_ex(l, 6, r4, v4, SW_INDEX_EXACT, &r);
    is_int(st, SW_EINDEX, "an extra top-level coordinate is SW_EINDEX");
    is_str(sw_errmsg(), "Key has 3 coordinates for 2 modes", "its message");
    sw_clear_error();
    static const int32_t r5[] = {LEAF, PUSH, LEAF, LEAF, LEAF, POP};
    static const int64_t v5[] = {1, 2, 3, 0};
    st = sw_layout_index_coord_ex(l, 6, r5, v5, SW_INDEX_EXACT, &r);
    is_int(st, SW_EINDEX, "an extra nested coordinate is SW_EINDEX");
    is_str(sw_errmsg(), "Key has 3 coordinates for 2 modes", "its message");
    sw_clear_error();
    st = sw_layout_index_coord_ex(l, 6, r4, v4, 0, &r);
    ok(st == SW_OK && r == 321, "without SW_INDEX_EXACT extras are ignored");
    static const int64_t v1[] = {1};
    st = sw_layout_index_coord_ex(l, 1, r2, v1, SW_INDEX_EXACT, &r);
    ok(st == SW_OK && r == 1, "missing trailing coordinates still count as 0");
    st = sw_layout_index_coord_ex(l, 1, r2, v1, 4u, &r);
    is_int(st, SW_EVALUE, "an unknown flag is SW_EVALUE");
    sw_clear_error();
    st = sw_layout_index_ex(l, 0, 8u, &r);
    is_int(st, SW_EVALUE, "an unknown flag is SW_EVALUE for an index too");
    sw_clear_error();
    sw_layout_unref(l);
    is_int(sw_debug_live_allocs(), base, "index flags: nothing leaked");
}

int main(void) {
    int64_t base = sw_debug_live_allocs();
    test_trees();
    test_layout_basics();
    test_vectors_size();
    test_vectors_compose();
    test_vectors_coalesce();
    test_vectors_complement();
    test_vectors_divide();
    test_vectors_product();
    test_vectors_inverse();
    test_construction();
    test_extract();
    test_rearrange();
    test_errors_trees();
    test_errors_layouts();
    test_properties_basic();
    test_properties_compose();
    test_properties_complement();
    test_properties_divide();
    test_properties_product();
    test_properties_inverse();
    test_overflow();
    test_choose_modout_reference();
    test_fault_injection();
    test_index_flags();
    is_int(sw_debug_live_allocs(), base, "no allocation is live at the end");
    return done_testing();
}
