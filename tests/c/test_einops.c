/*
 * Unit tests of the layout command strings: the lexer, layout and output
 * references, the rearrange, reduce and einsum parsers and their specs,
 * the compile step on layouts, the tensor-level commands, the spec cache
 * and fault injection.
 *
 * The contract is include/strideweave/einops.h with the Python reference
 * (the Python API reference, section 13 and section 22 items
 * 20-23), whose grammar, spec contents, result layouts and messages the C
 * API keeps. Grammar and errors are checked rule by rule with their exact
 * messages and offsets; results of commands on Generic and CPU tensors over
 * compact, strided and hierarchical layouts are checked against a brute
 * force written here, which enumerates every assignment of the symbols and
 * sums products of elements read by logical index. Every rejected call is
 * checked for leaving its out-parameter alone and leaking nothing.
 */
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strideweave/strideweave.h"
#include "tap.h"

enum { LEAF = SW_TOK_LEAF, PUSH = SW_TOK_PUSH, POP = SW_TOK_POP };

/* ------------------------------------------------------------ helpers */

static max_align_t sentinel_storage[4];
#define SENT_SPEC ((sw_einops_spec *)(void *)&sentinel_storage[0])
#define SENT_TOKENS ((sw_einops_tokens *)(void *)&sentinel_storage[1])
#define SENT_TENSOR ((sw_tensor *)(void *)&sentinel_storage[2])
#define SENT_LAYOUT ((sw_layout *)(void *)&sentinel_storage[3])

static const char *S(sw_status st) {
    return sw_status_name(st);
}

static void leak_check(int64_t base, const char *what) {
    sw_einops_cache_clear();
    is_int(sw_debug_live_allocs(), base, "%s: no library allocation leaked",
           what);
}

static void expect_fail(sw_status st, sw_status want, const char *msg,
                        const char *name) {
    is_int(st, want, "%s fails with %s (got %s)", name, S(want), S(st));
    if (st != SW_OK)
        is_str(sw_errmsg(), msg, "%s: message", name);
    sw_clear_error();
}

static bool expect_ok(sw_status st, const char *name) {
    if (!ok(st == SW_OK, "%s succeeds", name)) {
        diag("status %s: %s", S(st), sw_errmsg());
        return false;
    }
    return true;
}

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
    sw_layout_format(l, buf, FMT_CAP);
    return buf;
}

static sw_layout *P(const char *text) {
    sw_layout *l = NULL;
    if (sw_layout_parse(text, &l) != SW_OK) {
        ok(0, "parse layout '%s'", text);
        diag("%s", sw_errmsg());
        bail_out("a test layout does not parse");
    }
    return l;
}

/*
 * A recipe in the notation of the reference's Tree reprs, compressed: the
 * root's children in parentheses, L for a leaf, k for id k. Tree(L,
 * Tree(L, L)) is "(L,(L,L))" and Tree(Tree(id0), Tree(id1)) is
 * "((0),(1))".
 */
static const char *R(const int32_t *rec, int32_t n) {
    char *buf = next_buf();
    size_t at = 0;
    if (n < 0 || (n > 0 && rec == NULL))
        return "(none)";
    buf[at++] = '(';
    bool first = true;
    for (int32_t i = 0; i < n && at < FMT_CAP - 16; ++i) {
        int32_t t = rec[i];
        if (t != POP && !first)
            buf[at++] = ',';
        first = false;
        if (t == PUSH) {
            buf[at++] = '(';
            first = true;
        } else if (t == POP) {
            buf[at++] = ')';
        } else if (t == LEAF) {
            buf[at++] = 'L';
        } else {
            at += (size_t)snprintf(buf + at, FMT_CAP - at, "%d", (int)t);
        }
    }
    buf[at++] = ')';
    buf[at] = '\0';
    return buf;
}

static const char *F(const sw_einops_spec *s, sw_einops_field f) {
    int32_t n = -1;
    const int32_t *rec = sw_einops_spec_recipe(s, f, &n);
    return R(rec, n);
}

/* The symbol bindings of one side as "a=0 b=1 c=2". */
static const char *SYMS(const sw_einops_spec *s, int side) {
    char *buf = next_buf();
    size_t at = 0;
    buf[0] = '\0';
    for (int32_t i = 0; i < sw_einops_spec_nsymbols(s, side); ++i) {
        int32_t id = -1;
        const char *name = sw_einops_spec_symbol(s, side, i, &id);
        at += (size_t)snprintf(buf + at, FMT_CAP - at, "%s%s=%d", i ? " " : "",
                               name, (int)id);
    }
    return buf;
}

static const char *COMMON(const sw_einops_spec *s) {
    char *buf = next_buf();
    size_t at = 0;
    buf[0] = '\0';
    for (int32_t i = 0; i < sw_einops_spec_ncommon(s); ++i)
        at += (size_t)snprintf(buf + at, FMT_CAP - at, "%s%s", i ? " " : "",
                               sw_einops_spec_common(s, i));
    return buf;
}

/* Tokens as the reference's example prints them: "symbol a 0-1, ...". */
static const char *TOKS(const sw_einops_tokens *t) {
    char *buf = next_buf();
    size_t at = 0;
    buf[0] = '\0';
    const sw_einops_token *tok = sw_einops_tokens_data(t);
    for (int64_t i = 0; i < sw_einops_tokens_count(t); ++i)
        at += (size_t)snprintf(
            buf + at, FMT_CAP - at, "%s%s %.*s %lld-%lld", i ? ", " : "",
            sw_einops_token_kind_name(tok[i].kind), (int)tok[i].length,
            tok[i].value, (long long)tok[i].start, (long long)tok[i].end);
    return buf;
}

static double getd(const sw_tensor *t, int64_t i) {
    sw_value v;
    if (sw_tensor_get(t, i, &v) != SW_OK)
        return NAN;
    double r = v.kind == SW_VALUE_F64   ? v.as.f
               : v.kind == SW_VALUE_I64 ? (double)v.as.i
                                        : NAN;
    sw_value_clear(&v);
    return r;
}

/* Small integers, exact in float32 sums: slot p holds ((p*7+3) % 11) - 5,
 * shifted by seed. */
static double slot_value(int64_t p, int seed) {
    return (double)(((p * 7 + 3 + seed) % 11) - 5);
}

enum { GENERIC = 0, CPU = 1 };

/* A tensor over a fresh carrier with room for offset + cosize + 2. */
static sw_tensor *make_tensor(int kind, const char *layout, int64_t offset,
                              int seed) {
    sw_layout *l = P(layout);
    int64_t n = offset + sw_layout_cosize(l) + 2;
    sw_carrier *c = NULL;
    sw_status st;
    if (kind == GENERIC) {
        double *v = malloc((size_t)n * sizeof *v);
        if (!v)
            bail_out("out of memory");
        for (int64_t p = 0; p < n; ++p)
            v[p] = slot_value(p, seed);
        st = sw_generic_new_doubles(n, v, 1, &c);
        free(v);
    } else {
        st = sw_cpu_new(n, SW_DTYPE_FLOAT32, 1, 0, &c);
        if (st == SW_OK) {
            float *f = sw_cpu_data(c);
            for (int64_t p = 0; p < n; ++p)
                f[p] = (float)slot_value(p, seed);
        }
    }
    sw_tensor *t = NULL;
    if (st == SW_OK)
        st = sw_tensor_new(c, offset, l, &t);
    sw_carrier_unref(c);
    sw_layout_unref(l);
    if (st != SW_OK) {
        diag("%s", sw_errmsg());
        bail_out("a test tensor cannot be made");
    }
    return t;
}

/* ------------------------------------------------------- brute force */

/*
 * The oracle of all three commands. Each operand is described by the
 * symbols of its pieces in piece (id) order, one character each, '1' for
 * an anonymous size-1 piece; out likewise ('1' for an inserted singleton).
 * sizes lists "a2b3..." (one digit each). For every assignment of the
 * named symbols, the product of the operands' elements (by logical index:
 * colexicographic over the pieces) is added into want at the output's
 * logical index. Returns the number of output elements.
 */
static int64_t oracle(int nin, sw_tensor *const *in, const char *const *pieces,
                      const char *out, const char *sizes, double *want,
                      int64_t cap) {
    int64_t size[128] = {0};
    char syms[64];
    int nsym = 0;
    for (const char *p = sizes; p[0] && p[1]; p += 2) {
        size[(unsigned char)p[0]] = p[1] - '0';
        syms[nsym++] = p[0];
    }
    size['1'] = 1;
    int64_t nout = 1;
    for (const char *p = out; *p; ++p)
        nout *= size[(unsigned char)*p];
    if (nout > cap)
        bail_out("oracle output too large");
    for (int64_t i = 0; i < nout; ++i)
        want[i] = 0;
    int64_t coord[128] = {0};
    for (;;) {
        double prod = 1;
        for (int k = 0; k < nin; ++k) {
            int64_t idx = 0, mul = 1;
            for (const char *p = pieces[k]; *p; ++p) {
                idx += coord[(unsigned char)*p] * mul;
                mul *= size[(unsigned char)*p];
            }
            prod *= getd(in[k], idx);
        }
        int64_t o = 0, mul = 1;
        for (const char *p = out; *p; ++p) {
            o += coord[(unsigned char)*p] * mul;
            mul *= size[(unsigned char)*p];
        }
        want[o] += prod;
        int s = 0;
        for (; s < nsym; ++s) {
            unsigned char c = (unsigned char)syms[s];
            if (++coord[c] < size[c])
                break;
            coord[c] = 0;
        }
        if (s == nsym)
            break;
    }
    return nout;
}

/* Compares a result with the oracle's values. */
static void check_values(const sw_tensor *r, const double *want, int64_t n,
                         const char *what) {
    if (!is_int(sw_tensor_size(r), n, "%s: %lld elements", what, (long long)n))
        return;
    int64_t bad = -1;
    for (int64_t i = 0; i < n && bad < 0; ++i)
        if (fabs(getd(r, i) - want[i]) > 1e-9)
            bad = i;
    if (!ok(bad < 0, "%s: every element equals the brute force", what))
        diag("element %lld: got %g, expected %g", (long long)bad, getd(r, bad),
             want[bad]);
}

/* ----------------------------------------------------------- the lexer */

/* A command fit for a test name: control characters and non-ASCII bytes
 * as \xNN. */
static const char *VIS(const char *cmd, int64_t len) {
    char *buf = next_buf();
    size_t at = 0;
    if (len < 0)
        len = (int64_t)strlen(cmd);
    for (int64_t i = 0; i < len && at < FMT_CAP - 8; ++i) {
        unsigned char c = (unsigned char)cmd[i];
        if (c < 32 || c >= 127)
            at += (size_t)snprintf(buf + at, FMT_CAP - at, "\\x%02x", c);
        else
            buf[at++] = (char)c;
    }
    buf[at] = '\0';
    return buf;
}

static void lex_ok(const char *cmd, const char *want) {
    sw_einops_tokens *t = SENT_TOKENS;
    sw_status st = sw_einops_lex(cmd, -1, &t);
    char name[128];
    snprintf(name, sizeof name, "lex '%s'", VIS(cmd, -1));
    if (!expect_ok(st, name))
        return;
    is_str(TOKS(t), want, "%s", name);
    sw_einops_tokens_free(t);
}

static void lex_err(const char *cmd, int64_t len, const char *msg) {
    sw_einops_tokens *t = SENT_TOKENS;
    sw_status st = sw_einops_lex(cmd, len, &t);
    char name[128];
    snprintf(name, sizeof name, "lex '%s'", VIS(cmd, len));
    expect_fail(st, SW_EVALUE, msg, name);
    ok(t == SENT_TOKENS, "%s: out-parameter untouched", name);
}

static void test_lexer(void) {
    int64_t base = sw_debug_live_allocs();
    lex_ok("a (b c) -> a c",
           "symbol a 0-1, left_paren ( 2-3, symbol b 3-4, symbol c 5-6, "
           "right_paren ) 6-7, arrow -> 8-10, symbol a 11-12, symbol c 13-14");
    lex_ok("a a1 batch_size", "symbol a 0-1, symbol a1 2-4, "
                              "symbol batch_size 5-15");
    lex_ok("", "");
    lex_ok(" \t\n\r\f\v ", "");
    lex_ok("1", "one 1 0-1");
    lex_ok("1 a -> a", "one 1 0-1, symbol a 2-3, arrow -> 4-6, symbol a 7-8");
    lex_ok("(1)1,", "left_paren ( 0-1, one 1 1-2, right_paren ) 2-3, "
                    "one 1 3-4, comma , 4-5");
    lex_ok("a->b", "symbol a 0-1, arrow -> 1-3, symbol b 3-4");
    lex_ok("Ab_9z", "symbol Ab_9z 0-5");
    lex_ok("x,y", "symbol x 0-1, comma , 1-2, symbol y 2-3");

    lex_err("a - b", -1, "Expected '->' arrow token at offset 2");
    lex_err("a -", -1, "Expected '->' arrow token at offset 2");
    lex_err("a - > b", -1, "Expected '->' arrow token at offset 2");
    lex_err("a > b", -1, "Unexpected '>' at offset 2");
    lex_err("1a", -1, "Invalid singleton token at offset 0");
    lex_err("x 11", -1, "Invalid singleton token at offset 2");
    lex_err("x 1_", -1, "Invalid singleton token at offset 2");
    lex_err("x 2", -1, "Invalid dimension symbol at offset 2");
    lex_err("01", -1, "Invalid dimension symbol at offset 0");
    lex_err("a + b", -1, "Unexpected character at offset 2");
    lex_err("a [b]", -1, "Unexpected character at offset 2");
    lex_err("_x", -1, "Unexpected character at offset 0");
    lex_err("a b\x01", -1, "Unexpected character at offset 3");
    /* Non-ASCII: the whole text is checked first, at byte offsets. */
    lex_err("a \xc3\xa9 -> a", -1,
            "Layout command must contain only ASCII characters at offset 2");
    lex_err("+ \xc3\xa9", -1,
            "Layout command must contain only ASCII characters at offset 2");
    lex_err("\xe2\x86\x92", -1,
            "Layout command must contain only ASCII characters at offset 0");
    /* An explicit length: a NUL byte is an unexpected character, and
     * nothing past the length is read. */
    lex_err("a\0b", 3, "Unexpected character at offset 1");
    {
        sw_einops_tokens *t = NULL;
        sw_status st = sw_einops_lex("a b +", 3, &t);
        if (expect_ok(st, "lex with a length that stops before '+'"))
            is_str(TOKS(t), "symbol a 0-1, symbol b 2-3", "only 3 bytes lexed");
        sw_einops_tokens_free(t);
    }
    {
        sw_einops_tokens *t = SENT_TOKENS;
        sw_status st = sw_einops_lex(NULL, -1, &t);
        expect_fail(st, SW_ETYPE, "command must be a str", "lex NULL");
        ok(t == SENT_TOKENS, "lex NULL: out-parameter untouched");
        st = sw_einops_lex("ab", (int64_t)INT32_MAX + 1, &t);
        expect_fail(st, SW_EVALUE, "Layout command is too long",
                    "lex of a length past INT32_MAX");
    }
    is_str(sw_einops_token_kind_name(SW_EINOPS_LEFT_PAREN), "left_paren",
           "kind name left_paren");
    is_str(sw_einops_token_kind_name(SW_EINOPS_RIGHT_PAREN), "right_paren",
           "kind name right_paren");
    is_str(sw_einops_token_kind_name(SW_EINOPS_ARROW), "arrow",
           "kind name arrow");
    is_str(sw_einops_token_kind_name(SW_EINOPS_COMMA), "comma",
           "kind name comma");
    is_str(sw_einops_token_kind_name(SW_EINOPS_ONE), "one", "kind name one");
    is_str(sw_einops_token_kind_name(SW_EINOPS_SYMBOL), "symbol",
           "kind name symbol");
    ok(sw_einops_token_kind_name((sw_einops_token_kind)6) == NULL,
       "kind name out of range is NULL");
    ok(sw_einops_tokens_count(NULL) == 0 && sw_einops_tokens_data(NULL) == NULL,
       "a NULL token list is empty");
    sw_einops_tokens_free(NULL);
    /* Every lexer message carries one of the reference's words. */
    const char *bad[] = {"-", ">", "1x", "3", "#", "\xff"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
        sw_einops_tokens *t = NULL;
        sw_status st = sw_einops_lex(bad[i], -1, &t);
        const char *m = sw_errmsg();
        ok(st == SW_EVALUE && (strstr(m, "Invalid") || strstr(m, "Expected") ||
                               strstr(m, "Unexpected") || strstr(m, "ASCII")),
           "lexer message %zu names the kind of error", i);
    }
    leak_check(base, "lexer");
}

/* ---------------------------------------------------- layout references */

static sw_einops_spec *ref_of(const char *cmd) {
    sw_einops_spec *s = NULL;
    sw_status st = sw_einops_parse(SW_EINOPS_LAYOUT_REF, cmd, -1, &s);
    char name[128];
    snprintf(name, sizeof name, "layout reference '%.40s'", VIS(cmd, -1));
    if (!expect_ok(st, name))
        return NULL;
    return s;
}

static void ref_err(const char *cmd, const char *msg) {
    sw_einops_spec *s = SENT_SPEC;
    sw_status st = sw_einops_parse(SW_EINOPS_LAYOUT_REF, cmd, -1, &s);
    char name[128];
    snprintf(name, sizeof name, "layout reference '%.40s'", VIS(cmd, -1));
    expect_fail(st, SW_EVALUE, msg, name);
    ok(s == SENT_SPEC, "%s: out-parameter untouched", name);
}

static void test_layout_refs(void) {
    int64_t base = sw_debug_live_allocs();
    sw_einops_spec *s = ref_of("a (b c)");
    if (s) {
        is_int(sw_einops_spec_kind(s), SW_EINOPS_LAYOUT_REF, "kind");
        is_str(F(s, SW_EINOPS_TREE), "(L,(L,L))", "'a (b c)' tree");
        is_str(SYMS(s, 0), "a=0 b=1 c=2", "'a (b c)' symbol ids");
        is_int(sw_einops_spec_nsymbols(s, 1), 0, "no second side");
        ok(sw_einops_spec_recipe(s, SW_EINOPS_OUTPUT, NULL) == NULL,
           "a reference has no output");
        int32_t n = 7;
        sw_einops_spec_recipe(s, SW_EINOPS_SELECTION, &n);
        is_int(n, -1, "a missing field has -1 tokens");
        ok(sw_einops_spec_symbol(s, 0, 3, NULL) == NULL &&
               sw_einops_spec_symbol(s, 2, 0, NULL) == NULL &&
               sw_einops_spec_symbol(s, 0, -1, NULL) == NULL,
           "symbols out of range are NULL");
        is_int(sw_einops_spec_ncommon(s), 0, "no common symbols");
        ok(sw_einops_spec_common(s, 0) == NULL, "common out of range");
        int64_t len = 0;
        is_str(sw_einops_spec_command(s, &len), "a (b c)", "command text");
        is_int(len, 7, "command length");
        sw_einops_spec_unref(s);
    }
    s = ref_of("1 a (1 (b)) c");
    if (s) {
        is_str(F(s, SW_EINOPS_TREE), "(L,L,(L,(L)),L)",
               "literal 1s are leaves");
        is_str(SYMS(s, 0), "a=1 b=3 c=4", "literal 1s use up ids, unnamed");
        sw_einops_spec_unref(s);
    }
    s = ref_of("((x))");
    if (s) {
        is_str(F(s, SW_EINOPS_TREE), "(((L)))", "nesting is kept");
        sw_einops_spec_unref(s);
    }
    ref_err("a )", "Unmatched right parenthesis at offset 2");
    ref_err(")", "Unmatched right parenthesis at offset 0");
    ref_err("a (b", "Unclosed left parenthesis at offset 2");
    ref_err("(a (b) c", "Unclosed left parenthesis at offset 0");
    ref_err("(a (b c", "Unclosed left parenthesis at offset 3");
    ref_err("a ()", "Empty parenthesized group at offset 3");
    ref_err("(())", "Empty parenthesized group at offset 2");
    ref_err("a, b", "Commas are not valid in layout references at offset 1");
    ref_err("a -> b", "Arrows are not valid in layout references at offset 2");
    ref_err("", "Layout reference must not be empty");
    ref_err("   ", "Layout reference must not be empty");
    ref_err("a (", "Layout reference must not be empty");
    ref_err("(", "Layout reference must not be empty");
    ref_err("a b a", "Duplicate dimension symbol 'a' at offset 4");
    ref_err("ab (cd ab)", "Duplicate dimension symbol 'ab' at offset 7");
    ref_err("a a )", "Duplicate dimension symbol 'a' at offset 2");
    ref_err("a ) a", "Unmatched right parenthesis at offset 2");
    /* The depth limit, one past it and at it. */
    {
        char deep[2 * SW_EINOPS_MAX_DEPTH + 8];
        size_t at = 0;
        for (int i = 0; i <= SW_EINOPS_MAX_DEPTH; ++i)
            deep[at++] = '(';
        deep[at++] = 'a';
        for (int i = 0; i <= SW_EINOPS_MAX_DEPTH; ++i)
            deep[at++] = ')';
        deep[at] = '\0';
        ref_err(deep, "Layout reference nests parentheses deeper than 256 at "
                      "offset 256");
        deep[at - 1] = '\0'; /* drop one level on each side */
        s = ref_of(deep + 1);
        if (s) {
            int32_t n = 0;
            sw_einops_spec_recipe(s, SW_EINOPS_TREE, &n);
            is_int(n, 2 * SW_EINOPS_MAX_DEPTH + 1, "256 levels are accepted");
            sw_einops_spec_unref(s);
        }
    }

    /* Tokens made by the caller, as a binding's Token objects are. */
    sw_einops_token tk[4] = {
        {SW_EINOPS_SYMBOL, 10, 13, "foo", 3},
        {SW_EINOPS_LEFT_PAREN, 14, 15, "(", 1},
        {SW_EINOPS_ONE, 15, 16, "1", 1},
        {SW_EINOPS_RIGHT_PAREN, 16, 17, ")", 1},
    };
    s = SENT_SPEC;
    sw_status st = sw_einops_parse_layout_ref(4, tk, &s);
    if (expect_ok(st, "reference from tokens")) {
        is_str(F(s, SW_EINOPS_TREE), "(L,(L))", "tree from tokens");
        is_str(SYMS(s, 0), "foo=0", "symbols from tokens");
        is_str(sw_einops_spec_command(s, NULL), "foo ( 1 )",
               "command of a token reference: values joined by spaces");
        sw_einops_spec_unref(s);
    }
    sw_einops_token dup[2] = {{SW_EINOPS_SYMBOL, 5, 6, "x", 1},
                              {SW_EINOPS_SYMBOL, 40, 41, "x", 1}};
    s = SENT_SPEC;
    st = sw_einops_parse_layout_ref(2, dup, &s);
    expect_fail(st, SW_EVALUE, "Duplicate dimension symbol 'x' at offset 40",
                "tokens: offsets come from the tokens");
    st = sw_einops_parse_layout_ref(0, NULL, &s);
    expect_fail(st, SW_EVALUE, "Layout reference must not be empty",
                "no tokens");
    st = sw_einops_parse_layout_ref(1, NULL, &s);
    expect_fail(st, SW_ETYPE, "layout reference tokens must be Token objects",
                "NULL token array");
    sw_einops_token badkind = {(sw_einops_token_kind)9, 0, 1, "a", 1};
    st = sw_einops_parse_layout_ref(1, &badkind, &s);
    expect_fail(st, SW_ETYPE, "layout reference tokens must be Token objects",
                "a token of no kind");
    sw_einops_token noval = {SW_EINOPS_SYMBOL, 0, 1, NULL, 1};
    st = sw_einops_parse_layout_ref(1, &noval, &s);
    expect_fail(st, SW_ETYPE, "layout reference tokens must be Token objects",
                "a token without its text");
    ok(s == SENT_SPEC, "failed token parses leave the out-parameter alone");
    /* Lexed tokens feed the reference parser directly. */
    sw_einops_tokens *t = NULL;
    st = sw_einops_lex("x (y z)", -1, &t);
    if (expect_ok(st, "lex for parse_layout_ref")) {
        st = sw_einops_parse_layout_ref(sw_einops_tokens_count(t),
                                        sw_einops_tokens_data(t), &s);
        if (expect_ok(st, "parse lexed tokens")) {
            is_str(F(s, SW_EINOPS_TREE), "(L,(L,L))", "lexed tokens' tree");
            sw_einops_spec_unref(s);
        }
        sw_einops_tokens_free(t);
    }
    sw_einops_spec_unref(NULL);
    leak_check(base, "layout references");
}

/* -------------------------------------------------------------- parsers */

static sw_einops_spec *parse(sw_einops_kind kind, const char *cmd) {
    sw_einops_spec *s = NULL;
    sw_status st = sw_einops_parse(kind, cmd, -1, &s);
    if (!expect_ok(st, cmd))
        return NULL;
    return s;
}

/*
 * A rejected command: the uncached parser and the cache give the same
 * status and message, leave the out-parameter alone and cache nothing.
 */
static void cmd_err(sw_einops_kind kind, const char *cmd, const char *msg) {
    char name[160];
    snprintf(name, sizeof name, "%s '%s'",
             kind == SW_EINOPS_REARRANGE ? "rearrange"
             : kind == SW_EINOPS_REDUCE  ? "reduce"
                                         : "einsum",
             VIS(cmd, -1));
    sw_einops_spec *s = SENT_SPEC;
    sw_status st = sw_einops_parse(kind, cmd, -1, &s);
    expect_fail(st, SW_EVALUE, msg, name);
    int64_t before = sw_einops_cache_count(kind);
    for (int round = 0; round < 2; ++round) {
        st = sw_einops_compile(kind, cmd, -1, &s);
        is_int(st, SW_EVALUE, "%s: cached compile fails too (round %d)", name,
               round);
        is_str(sw_errmsg(), msg, "%s: cached compile message (round %d)", name,
               round);
    }
    sw_clear_error();
    is_int(sw_einops_cache_count(kind), before, "%s: failure not cached", name);
    ok(s == SENT_SPEC, "%s: out-parameter untouched", name);
}

static void test_rearrange_parse(void) {
    int64_t base = sw_debug_live_allocs();
    sw_einops_spec *s = parse(SW_EINOPS_REARRANGE, "a (b c) -> a c");
    if (s) {
        is_int(sw_einops_spec_kind(s), SW_EINOPS_REARRANGE, "kind");
        is_str(F(s, SW_EINOPS_SELECTION), "(L,(L,L))", "selection");
        is_str(F(s, SW_EINOPS_OUTPUT), "(0,2)", "output");
        is_str(SYMS(s, 0), "a=0 b=1 c=2", "symbol ids");
        is_str(F(s, SW_EINOPS_REDUCED), "(none)", "no reduced field");
        sw_einops_spec_unref(s);
    }
    s = parse(SW_EINOPS_REARRANGE, "1 a -> a");
    if (s) {
        is_str(F(s, SW_EINOPS_OUTPUT), "(1)", "'1 a -> a' output");
        is_str(SYMS(s, 0), "a=1", "'1 a -> a' symbol ids");
        sw_einops_spec_unref(s);
    }
    s = parse(SW_EINOPS_REARRANGE, "a -> a 1");
    if (s) {
        is_str(F(s, SW_EINOPS_OUTPUT), "(0,L)", "'a -> a 1' output");
        sw_einops_spec_unref(s);
    }
    s = parse(SW_EINOPS_REARRANGE, "a b c -> (c (a 1)) b");
    if (s) {
        is_str(F(s, SW_EINOPS_OUTPUT), "((2,(0,L)),1)", "nested output");
        sw_einops_spec_unref(s);
    }
    s = parse(SW_EINOPS_REARRANGE, "a b -> a");
    if (s) {
        is_str(F(s, SW_EINOPS_OUTPUT), "(0)",
               "an omitted symbol parses (its size is checked when applied)");
        sw_einops_spec_unref(s);
    }
    cmd_err(SW_EINOPS_REARRANGE, "a b",
            "Rearrange command must contain one '->' arrow");
    cmd_err(SW_EINOPS_REARRANGE, "a -> b -> c",
            "Rearrange command must contain only one '->' arrow");
    cmd_err(SW_EINOPS_REARRANGE, "a b -> b x",
            "Unknown dimension symbol 'x' at offset 9");
    cmd_err(SW_EINOPS_REARRANGE, "a b -> b a b",
            "Duplicate output dimension symbol 'b' at offset 11");
    cmd_err(SW_EINOPS_REARRANGE, "a a -> a",
            "Duplicate dimension symbol 'a' at offset 2");
    cmd_err(SW_EINOPS_REARRANGE, "a, b -> a",
            "Commas are not valid in layout references at offset 1");
    cmd_err(SW_EINOPS_REARRANGE, "a b -> a, b",
            "Commas are not valid in layout references at offset 8");
    cmd_err(SW_EINOPS_REARRANGE, "a b ->",
            "Layout reference must not be empty");
    cmd_err(SW_EINOPS_REARRANGE, "-> a", "Layout reference must not be empty");
    cmd_err(SW_EINOPS_REARRANGE, "a (b -> a",
            "Unclosed left parenthesis at offset 2");
    cmd_err(SW_EINOPS_REARRANGE, "a b -> (a) b)",
            "Unmatched right parenthesis at offset 12");
    cmd_err(SW_EINOPS_REARRANGE, "a b -> a () b",
            "Empty parenthesized group at offset 10");
    cmd_err(SW_EINOPS_REARRANGE, "a b -> (a b",
            "Unclosed left parenthesis at offset 7");
    cmd_err(SW_EINOPS_REARRANGE, "a b -> a (",
            "Layout reference must not be empty");
    cmd_err(SW_EINOPS_REARRANGE, "a \xce\xb1 -> a",
            "Layout command must contain only ASCII characters at offset 2");
    cmd_err(SW_EINOPS_REARRANGE, "a b -> b 2",
            "Invalid dimension symbol at offset 9");
    {
        sw_einops_spec *x = SENT_SPEC;
        sw_status st = sw_einops_parse(SW_EINOPS_REARRANGE, NULL, -1, &x);
        expect_fail(st, SW_ETYPE, "command must be a str", "parse NULL");
        st = sw_einops_compile(SW_EINOPS_REARRANGE, NULL, -1, &x);
        expect_fail(st, SW_ETYPE, "command must be a str", "compile NULL");
        st = sw_einops_parse_rearrange(NULL, &x);
        expect_fail(st, SW_ETYPE, "command must be a str",
                    "parse_rearrange NULL");
        st = sw_einops_parse((sw_einops_kind)7, "a -> a", -1, &x);
        expect_fail(st, SW_EVALUE, "unknown layout command kind 7",
                    "a kind out of range");
        st = sw_einops_compile((sw_einops_kind)-1, "a -> a", -1, &x);
        expect_fail(st, SW_EVALUE, "unknown layout command kind -1",
                    "compile: a kind out of range");
        ok(x == SENT_SPEC, "out-parameter untouched");
    }
    leak_check(base, "rearrange parser");
}

static void test_reduce_parse(void) {
    int64_t base = sw_debug_live_allocs();
    sw_einops_spec *s = parse(SW_EINOPS_REDUCE, "a (c d) b -> a c");
    if (s) {
        is_int(sw_einops_spec_kind(s), SW_EINOPS_REDUCE, "kind");
        is_str(F(s, SW_EINOPS_SELECTION), "(L,(L,L),L)", "selection");
        is_str(F(s, SW_EINOPS_OUTPUT), "(0,1)", "output");
        is_str(F(s, SW_EINOPS_REDUCED), "(2,3)", "reduced");
        is_str(F(s, SW_EINOPS_REARRANGE_OUTPUT), "((0,1),(2,3))",
               "rearrange_output");
        is_str(SYMS(s, 0), "a=0 c=1 d=2 b=3", "symbol ids");
        sw_einops_spec_unref(s);
    }
    s = parse(SW_EINOPS_REDUCE, "a b -> 1");
    if (s) {
        is_str(F(s, SW_EINOPS_OUTPUT), "(L)", "'-> 1' output");
        is_str(F(s, SW_EINOPS_REDUCED), "(0,1)", "everything reduced");
        is_str(F(s, SW_EINOPS_REARRANGE_OUTPUT), "((L),(0,1))",
               "'-> 1' rearrange_output");
        sw_einops_spec_unref(s);
    }
    s = parse(SW_EINOPS_REDUCE, "1 a b -> b a");
    if (s) {
        is_str(F(s, SW_EINOPS_REDUCED), "(0)", "a literal 1 is reduced");
        is_str(F(s, SW_EINOPS_REARRANGE_OUTPUT), "((2,1),(0))",
               "rearrange_output with a reduced 1");
        sw_einops_spec_unref(s);
    }
    s = parse(SW_EINOPS_REDUCE, "a b c -> (c a)");
    if (s) {
        is_str(F(s, SW_EINOPS_REARRANGE_OUTPUT), "(((2,0)),(1))",
               "grouped output nests");
        sw_einops_spec_unref(s);
    }
    cmd_err(SW_EINOPS_REDUCE, "a b -> a b",
            "Reduce command must omit at least one dimension");
    cmd_err(SW_EINOPS_REDUCE, "a b -> (b a) 1",
            "Reduce command must omit at least one dimension");
    cmd_err(SW_EINOPS_REDUCE, "a b",
            "Reduce command must contain one '->' "
            "arrow");
    cmd_err(SW_EINOPS_REDUCE, "a -> -> a",
            "Reduce command must contain only one '->' arrow");
    cmd_err(SW_EINOPS_REDUCE, "a b -> c",
            "Unknown dimension symbol 'c' at offset 7");
    cmd_err(SW_EINOPS_REDUCE, "a b -> a a",
            "Duplicate output dimension symbol 'a' at offset 9");
    cmd_err(SW_EINOPS_REDUCE, "a b ->", "Layout reference must not be empty");
    leak_check(base, "reduce parser");
}

static void test_einsum_parse(void) {
    int64_t base = sw_debug_live_allocs();
    sw_einops_spec *s = parse(SW_EINOPS_EINSUM, "a b, c b -> a c");
    if (s) {
        is_int(sw_einops_spec_kind(s), SW_EINOPS_EINSUM, "kind");
        is_str(F(s, SW_EINOPS_LHS_SELECTION), "(L,L)", "lhs selection");
        is_str(F(s, SW_EINOPS_RHS_SELECTION), "(L,L)", "rhs selection");
        is_str(F(s, SW_EINOPS_LHS_REARRANGE_OUTPUT), "((0),(1))",
               "lhs rearrange output");
        is_str(F(s, SW_EINOPS_RHS_REARRANGE_OUTPUT), "((0),(1))",
               "rhs rearrange output");
        is_str(F(s, SW_EINOPS_MATMUL_OUTPUT_SELECTION), "((L),(L))",
               "matmul output selection");
        is_str(F(s, SW_EINOPS_OUTPUT), "(0,1)", "output");
        is_str(SYMS(s, 0), "a=0 b=1", "lhs symbol ids");
        is_str(SYMS(s, 1), "c=0 b=1", "rhs symbol ids");
        is_str(COMMON(s), "b", "common symbols");
        is_str(F(s, SW_EINOPS_SELECTION), "(none)", "no plain selection");
        sw_einops_spec_unref(s);
    }
    s = parse(SW_EINOPS_EINSUM, "a b c, d c b -> a d");
    if (s) {
        is_str(F(s, SW_EINOPS_LHS_REARRANGE_OUTPUT), "((0),(1,2))",
               "lhs inner in lhs order");
        is_str(F(s, SW_EINOPS_RHS_REARRANGE_OUTPUT), "((0),(2,1))",
               "rhs inner reordered to lhs order");
        is_str(COMMON(s), "b c", "common symbols in lhs order");
        sw_einops_spec_unref(s);
    }
    s = parse(SW_EINOPS_EINSUM, "a b, b -> a");
    if (s) {
        is_str(F(s, SW_EINOPS_RHS_REARRANGE_OUTPUT), "((L),(0))",
               "rhs outer is a singleton");
        is_str(F(s, SW_EINOPS_MATMUL_OUTPUT_SELECTION), "((L),(L))",
               "matmul selection keeps the singleton");
        is_str(F(s, SW_EINOPS_OUTPUT), "(0)", "output");
        sw_einops_spec_unref(s);
    }
    s = parse(SW_EINOPS_EINSUM, "b, b -> 1");
    if (s) {
        is_str(F(s, SW_EINOPS_OUTPUT), "(L)", "'b, b -> 1' output");
        is_str(F(s, SW_EINOPS_LHS_REARRANGE_OUTPUT), "((L),(0))",
               "lhs outer singleton");
        sw_einops_spec_unref(s);
    }
    s = parse(SW_EINOPS_EINSUM, "k, c k -> c");
    if (s) {
        is_str(F(s, SW_EINOPS_OUTPUT), "(1)",
               "an lhs without outer symbols skips one id");
        sw_einops_spec_unref(s);
    }
    s = parse(SW_EINOPS_EINSUM, "a (b k) 1, c k -> (c a) b");
    if (s) {
        is_str(F(s, SW_EINOPS_LHS_SELECTION), "(L,(L,L),L)",
               "grouped lhs selection");
        is_str(SYMS(s, 0), "a=0 b=1 k=2", "lhs ids (1 is anonymous)");
        is_str(F(s, SW_EINOPS_LHS_REARRANGE_OUTPUT), "((0,1),(2))",
               "lhs outer holds a and b");
        is_str(F(s, SW_EINOPS_RHS_REARRANGE_OUTPUT), "((0),(1))", "rhs (c, k)");
        is_str(F(s, SW_EINOPS_MATMUL_OUTPUT_SELECTION), "((L,L),(L))",
               "two lhs outer pieces, one rhs");
        is_str(F(s, SW_EINOPS_OUTPUT), "((2,0),1)", "output ids");
        sw_einops_spec_unref(s);
    }
    /* Batch symbols: shared symbols the output names (an extension of the
     * reference grammar, which rejected them as unknown). */
    s = parse(SW_EINOPS_EINSUM, "b i k, b j k -> b i j");
    if (s) {
        is_str(F(s, SW_EINOPS_LHS_REARRANGE_OUTPUT), "((1),(2),(0))",
               "batched lhs: (outer, contracted, batch)");
        is_str(F(s, SW_EINOPS_RHS_REARRANGE_OUTPUT), "((1),(2),(0))",
               "batched rhs: (outer, contracted, batch)");
        is_str(F(s, SW_EINOPS_MATMUL_OUTPUT_SELECTION), "((L),(L),(L))",
               "batched matmul selection has a batch group");
        is_str(F(s, SW_EINOPS_OUTPUT), "(2,0,1)",
               "batch ids follow both outer groups");
        is_str(COMMON(s), "b k", "batch symbols are shared symbols");
        is_int(sw_einops_spec_nbatch(s), 1, "one batch symbol");
        is_str(sw_einops_spec_batch(s, 0), "b", "the batch symbol");
        ok(sw_einops_spec_batch(s, 1) == NULL, "batch index out of range");
        sw_einops_spec_unref(s);
    }
    s = parse(SW_EINOPS_EINSUM, "a b, c b -> a b c");
    if (s) {
        is_str(F(s, SW_EINOPS_LHS_REARRANGE_OUTPUT), "((0),(L),(1))",
               "nothing contracted: the inner group is a singleton");
        is_str(F(s, SW_EINOPS_RHS_REARRANGE_OUTPUT), "((0),(L),(1))",
               "rhs inner singleton");
        is_str(F(s, SW_EINOPS_OUTPUT), "(0,2,1)", "batched outer product");
        sw_einops_spec_unref(s);
    }
    s = parse(SW_EINOPS_EINSUM, "b k, b k -> b");
    if (s) {
        is_str(F(s, SW_EINOPS_LHS_REARRANGE_OUTPUT), "((L),(1),(0))",
               "no outer symbols: a singleton outer group");
        is_str(F(s, SW_EINOPS_OUTPUT), "(2)",
               "both singleton outer groups take an id");
        sw_einops_spec_unref(s);
    }
    s = parse(SW_EINOPS_EINSUM, "k (b i), b j k -> (i j) b");
    if (s) {
        is_str(F(s, SW_EINOPS_LHS_REARRANGE_OUTPUT), "((2),(0),(1))",
               "grouped batched lhs");
        is_str(F(s, SW_EINOPS_RHS_REARRANGE_OUTPUT), "((1),(2),(0))",
               "rhs ids, inner and batch in lhs order");
        is_str(F(s, SW_EINOPS_OUTPUT), "((0,1),2)", "grouped batched output");
        sw_einops_spec_unref(s);
    }
    s = parse(SW_EINOPS_EINSUM, "a b, c b -> a c");
    if (s) {
        is_int(sw_einops_spec_nbatch(s), 0, "an unbatched contraction");
        ok(sw_einops_spec_batch(s, 0) == NULL, "has no batch symbol");
        sw_einops_spec_unref(s);
    }
    cmd_err(SW_EINOPS_EINSUM, "a b, c b",
            "Einsum command must contain one '->' arrow");
    cmd_err(SW_EINOPS_EINSUM, "a b, c b -> a -> c",
            "Einsum command must contain only one '->' arrow");
    cmd_err(SW_EINOPS_EINSUM, "a b -> a",
            "Contraction command must contain one comma before '->'");
    cmd_err(SW_EINOPS_EINSUM, "a b, b, b -> a",
            "Contraction command must contain only one comma before '->'");
    cmd_err(SW_EINOPS_EINSUM, "a b, c b -> a, c",
            "Commas are not valid in layout references at offset 13");
    cmd_err(SW_EINOPS_EINSUM, "a, c -> a c",
            "Contraction command must include at least one shared dimension");
    cmd_err(SW_EINOPS_EINSUM, "a b, c b -> a c x",
            "Unknown dimension symbol 'x' at offset 16");
    cmd_err(SW_EINOPS_EINSUM, "a b, c b -> a b c b",
            "Duplicate output dimension symbol 'b' at offset 18");
    cmd_err(SW_EINOPS_EINSUM, "z a b, c b y -> a",
            "Einsum output must include every non-shared input symbol: c, y, "
            "z");
    cmd_err(SW_EINOPS_EINSUM, "a b, c b -> c c",
            "Duplicate output dimension symbol 'c' at offset 14");
    cmd_err(SW_EINOPS_EINSUM, "a a, c a -> c",
            "Duplicate dimension symbol 'a' at offset 2");
    cmd_err(SW_EINOPS_EINSUM, "a b, c c -> a",
            "Duplicate dimension symbol 'c' at offset 7");
    cmd_err(SW_EINOPS_EINSUM, ", b -> b", "Layout reference must not be empty");
    cmd_err(SW_EINOPS_EINSUM, "b, -> b", "Layout reference must not be empty");
    cmd_err(SW_EINOPS_EINSUM, "(a b, c b) -> a c",
            "Unclosed left parenthesis at offset 0");
    cmd_err(SW_EINOPS_EINSUM, "a b, c b -> ",
            "Layout reference must not be empty");
    leak_check(base, "einsum parser");
}

/* ------------------------------------------------------ layout compile */

static void test_layout_compile(void) {
    int64_t base = sw_debug_live_allocs();
    struct {
        sw_einops_kind kind;
        const char *cmd, *lhs, *rhs, *want, *want2;
    } cases[] = {
        {SW_EINOPS_REARRANGE, "a b -> b a", "(2,3):(1,2)", NULL, "(3,2):(2,1)",
         NULL},
        {SW_EINOPS_REARRANGE, "a (b c) -> (c a) b", "(2,(3,4)):(1,(2,6))", NULL,
         "((4,2),3):((6,1),2)", NULL},
        {SW_EINOPS_REARRANGE, "x y -> y x", "((2,3),4):((1,2),6)", NULL,
         "(4,(2,3)):(6,(1,2))", NULL},
        {SW_EINOPS_REARRANGE, "a (b c) -> a c", "(2,(1,4)):(1,(2,2))", NULL,
         "(2,4):(1,2)", NULL},
        {SW_EINOPS_REARRANGE, "1 a -> a", "(1,5):(7,2)", NULL, "5:2", NULL},
        {SW_EINOPS_REARRANGE, "a -> a 1", "6:1", NULL, "(6,1):(1,0)", NULL},
        {SW_EINOPS_REARRANGE, "a -> (a)", "6:1", NULL, "6:1", NULL},
        {SW_EINOPS_REDUCE, "a b -> a", "(2,3):(1,2)", NULL, "(2,3):(1,2)",
         "2:1"},
        {SW_EINOPS_REDUCE, "a (c d) b -> a c", "(2,(3,4),5):(1,(2,6),24)", NULL,
         "((2,3),(4,5)):((1,2),(6,24))", "(2,3):(1,2)"},
        {SW_EINOPS_REDUCE, "a (c d) b -> (a c)", "(2,(3,4),5):(1,(2,6),24)",
         NULL, "(((2,3)),(4,5)):(((1,2)),(6,24))", "((2,3)):((1,2))"},
        {SW_EINOPS_REDUCE, "a b -> 1", "(2,3):(1,2)", NULL,
         "(1,(2,3)):(0,(1,2))", "1:1"},
        {SW_EINOPS_REDUCE, "x y -> x", "((2,3),4):((4,8),1)", NULL,
         "(((2,3)),4):(((4,8)),1)", "((2,3)):((1,2))"},
        {SW_EINOPS_EINSUM, "a b, c b -> a c", "(2,3):(1,2)", "(4,3):(1,4)",
         "(2,4):(1,2)", NULL},
        {SW_EINOPS_EINSUM, "a b, c b -> (c a)", "(2,3):(1,2)", "(4,3):(1,4)",
         "((4,2)):((2,1))", NULL},
        {SW_EINOPS_EINSUM, "b, b -> 1", "3:1", "3:2", "1:0", NULL},
        {SW_EINOPS_EINSUM, "a (b k), c k -> a b c", "(2,(3,4)):(1,(2,6))",
         "(5,4):(1,5)", "(2,3,5):(1,2,6)", NULL},
        {SW_EINOPS_EINSUM, "a b, b -> a", "(2,3):(1,2)", "3:1", "2:1", NULL},
        {SW_EINOPS_EINSUM, "x k, y k -> y x", "((2,3),4):((1,2),6)",
         "(5,4):(4,1)", "(5,(2,3)):(6,(1,2))", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        sw_einops_spec *s = parse(cases[i].kind, cases[i].cmd);
        if (!s)
            continue;
        sw_layout *a = P(cases[i].lhs),
                  *b = cases[i].rhs ? P(cases[i].rhs) : NULL;
        sw_layout *r = NULL, *r2 = NULL;
        sw_status st;
        if (cases[i].kind == SW_EINOPS_REARRANGE)
            st = sw_einops_rearrange_layout(s, a, &r);
        else if (cases[i].kind == SW_EINOPS_REDUCE)
            st = sw_einops_reduce_layouts(s, a, &r, &r2);
        else
            st = sw_einops_einsum_layouts(s, a, b, NULL, NULL, &r);
        if (expect_ok(st, cases[i].cmd)) {
            is_str(L(r), cases[i].want, "'%s' on %s", cases[i].cmd,
                   cases[i].lhs);
            if (cases[i].want2)
                is_str(L(r2), cases[i].want2, "'%s' on %s: the sum's layout",
                       cases[i].cmd, cases[i].lhs);
        }
        sw_layout_unref(r);
        sw_layout_unref(r2);
        sw_layout_unref(a);
        sw_layout_unref(b);
        sw_einops_spec_unref(s);
    }
    /* The einsum operands, rearranged to (outer, inner). */
    sw_einops_spec *s = parse(SW_EINOPS_EINSUM, "a b c, d c b -> a d");
    sw_layout *a = P("(2,3,4):(1,2,6)"), *b = P("(5,4,3):(1,5,20)");
    sw_layout *la = NULL, *lb = NULL;
    sw_status st = sw_einops_einsum_layouts(s, a, b, &la, &lb, NULL);
    if (expect_ok(st, "einsum operand layouts")) {
        is_str(L(la), "(2,(3,4)):(1,(2,6))", "lhs (outer, inner)");
        is_str(L(lb), "(5,(3,4)):(1,(20,5))", "rhs inner in lhs order");
    }
    sw_layout_unref(la);
    sw_layout_unref(lb);
    st = sw_einops_einsum_check(s, a, b);
    expect_ok(st, "einsum check");
    sw_layout *c = P("(5,4,2):(1,5,20)");
    la = SENT_LAYOUT;
    st = sw_einops_einsum_layouts(s, a, c, &la, NULL, NULL);
    expect_fail(st, SW_EVALUE,
                "Einsum shared dimension 'b' has mismatched logical size",
                "mismatched shared size");
    ok(la == SENT_LAYOUT, "mismatch: out-parameter untouched");
    sw_layout *d = P("(5,12):(1,5)");
    st = sw_einops_einsum_check(s, a, d);
    expect_fail(st, SW_EVALUE, "layout and tree profile do not match",
                "a side that does not split along its selection");
    sw_layout_unref(d);
    d = P("(5,4,3):(1,5,20)");
    sw_layout_unref(c);
    c = P("(5,3,3):(1,5,15)");
    st = sw_einops_einsum_check(s, a, c);
    expect_fail(st, SW_EVALUE,
                "Einsum shared dimension 'c' has mismatched logical size",
                "the first mismatch in lhs order is named");
    st = sw_einops_einsum_check(NULL, a, d);
    expect_fail(st, SW_ETYPE, "spec must be an EinsumSpec", "NULL spec");
    st = sw_einops_einsum_check(s, NULL, d);
    expect_fail(st, SW_ETYPE, "lhs must be a Layout", "NULL lhs layout");
    st = sw_einops_einsum_check(s, a, NULL);
    expect_fail(st, SW_ETYPE, "rhs must be a Layout", "NULL rhs layout");
    sw_layout *r = SENT_LAYOUT;
    st = sw_einops_rearrange_layout(s, a, &r);
    expect_fail(st, SW_ETYPE, "spec must be a RearrangeSpec",
                "an einsum spec is not a rearrange spec");
    st = sw_einops_reduce_layouts(s, a, &r, NULL);
    expect_fail(st, SW_ETYPE, "spec must be a ReduceSpec",
                "an einsum spec is not a reduce spec");
    ok(r == SENT_LAYOUT, "kind errors leave the out-parameter alone");
    sw_layout_unref(c);
    sw_layout_unref(d);
    sw_einops_spec_unref(s);
    s = parse(SW_EINOPS_REARRANGE, "1 a -> a");
    st = sw_einops_rearrange_layout(s, a, &r);
    expect_fail(st, SW_EVALUE, "layout and tree profile do not match",
                "a command with fewer modes than the layout");
    sw_einops_spec_unref(s);
    s = parse(SW_EINOPS_REARRANGE, "1 a b -> a b");
    st = sw_einops_rearrange_layout(s, a, &r);
    expect_fail(st, SW_EVALUE,
                "Layout rearrange ids must include every extracted layout",
                "a literal 1 over a piece of size 2");
    st = sw_einops_rearrange_layout(s, NULL, &r);
    expect_fail(st, SW_ETYPE, "layout must be a Layout", "NULL layout");
    sw_einops_spec_unref(s);
    sw_layout_unref(a);
    sw_layout_unref(b);
    leak_check(base, "layout compile");
}

/* --------------------------------------------------------- tensor level */

typedef struct tcase {
    sw_einops_kind kind;
    const char *cmd;
    const char *lhs;
    int64_t lhs_offset;
    const char *rhs;
    const char *lhs_pieces, *rhs_pieces, *out_pieces, *sizes;
    const char *want_layout; /* NULL: not checked */
} tcase;

static const tcase tensor_cases[] = {
    /* rearrange: compact, strided (row-major, holes), hierarchical */
    {SW_EINOPS_REARRANGE, "a b -> b a", "(2,3):(1,2)", 0, NULL, "ab", NULL,
     "ba", "a2b3", "(3,2):(2,1)"},
    {SW_EINOPS_REARRANGE, "a b -> b a", "(2,3):(3,1)", 1, NULL, "ab", NULL,
     "ba", "a2b3", "(3,2):(1,3)"},
    {SW_EINOPS_REARRANGE, "a b c -> c (b a)", "(2,3,2):(1,4,20)", 3, NULL,
     "abc", NULL, "cba", "a2b3c2", "(2,(3,2)):(20,(4,1))"},
    {SW_EINOPS_REARRANGE, "a (b c) -> (c a) b", "(2,(3,4)):(1,(2,6))", 0, NULL,
     "abc", NULL, "cab", "a2b3c4", "((4,2),3):((6,1),2)"},
    {SW_EINOPS_REARRANGE, "x y -> y x", "((2,3),4):((1,2),6)", 2, NULL, "xy",
     NULL, "yx", "x6y4", "(4,(2,3)):(6,(1,2))"},
    {SW_EINOPS_REARRANGE, "a (b c) -> a c", "(2,(1,4)):(1,(2,2))", 0, NULL,
     "abc", NULL, "ac", "a2b1c4", "(2,4):(1,2)"},
    {SW_EINOPS_REARRANGE, "1 a -> a 1", "(1,5):(7,2)", 0, NULL, "1a", NULL,
     "a1", "a5", "(5,1):(2,0)"},
    /* reduce */
    {SW_EINOPS_REDUCE, "a b -> a", "(2,3):(1,2)", 0, NULL, "ab", NULL, "a",
     "a2b3", "2:1"},
    {SW_EINOPS_REDUCE, "a b -> b", "(2,3):(3,1)", 4, NULL, "ab", NULL, "b",
     "a2b3", "3:1"},
    {SW_EINOPS_REDUCE, "a (c d) b -> a c", "(2,(3,4),5):(1,(2,6),24)", 0, NULL,
     "acdb", NULL, "ac", "a2c3d4b5", "(2,3):(1,2)"},
    {SW_EINOPS_REDUCE, "a (c d) b -> (a c)", "(2,(3,4),5):(1,(2,6),24)", 0,
     NULL, "acdb", NULL, "ac", "a2c3d4b5", "((2,3)):((1,2))"},
    {SW_EINOPS_REDUCE, "a b -> 1", "(2,3):(1,2)", 0, NULL, "ab", NULL, "1",
     "a2b3", "1:1"},
    {SW_EINOPS_REDUCE, "a b c -> c a", "(2,3,4):(12,4,1)", 5, NULL, "abc", NULL,
     "ca", "a2b3c4", "(4,2):(1,4)"},
    {SW_EINOPS_REDUCE, "1 a b -> b", "(1,3,4):(5,1,3)", 0, NULL, "1ab", NULL,
     "b", "a3b4", "4:1"},
    {SW_EINOPS_REDUCE, "x y -> x", "((2,3),4):((4,8),1)", 0, NULL, "xy", NULL,
     "x", "x6y4", "((2,3)):((1,2))"},
    {SW_EINOPS_REDUCE, "a b -> b 1", "(3,2):(2,1)", 0, NULL, "ab", NULL, "b1",
     "a3b2", "(2,1):(1,2)"},
    /* einsum */
    {SW_EINOPS_EINSUM, "a b, c b -> a c", "(2,3):(1,2)", 0, "(4,3):(1,4)", "ab",
     "cb", "ac", "a2b3c4", "(2,4):(1,2)"},
    {SW_EINOPS_EINSUM, "a b, c b -> (c a)", "(2,3):(3,1)", 1, "(4,3):(3,1)",
     "ab", "cb", "ca", "a2b3c4", "((4,2)):((2,1))"},
    {SW_EINOPS_EINSUM, "b, b -> 1", "3:1", 0, "3:2", "b", "b", "1", "b3",
     "1:0"},
    {SW_EINOPS_EINSUM, "a (b k), c k -> a b c", "(2,(3,4)):(1,(2,6))", 0,
     "(5,4):(1,5)", "abk", "ck", "abc", "a2b3k4c5", "(2,3,5):(1,2,6)"},
    {SW_EINOPS_EINSUM, "a (b k), c k -> (a b) c", "(2,(3,4)):(12,(4,1))", 2,
     "(5,4):(4,1)", "abk", "ck", "abc", "a2b3k4c5", "((2,3),5):((1,2),6)"},
    {SW_EINOPS_EINSUM, "a b c, d c b -> a d", "(2,3,4):(1,2,6)", 0,
     "(5,4,3):(1,5,20)", "abc", "dcb", "ad", "a2b3c4d5", "(2,5):(1,2)"},
    {SW_EINOPS_EINSUM, "a b, b -> a", "(2,3):(1,2)", 0, "3:1", "ab", "b", "a",
     "a2b3", "2:1"},
    {SW_EINOPS_EINSUM, "k, c k -> c", "4:2", 1, "(3,4):(4,1)", "k", "ck", "c",
     "k4c3", "3:1"},
    {SW_EINOPS_EINSUM, "x k, y k -> y x", "((2,3),4):((1,2),6)", 0,
     "(5,4):(4,1)", "xk", "yk", "yx", "x6k4y5", "(5,(2,3)):(6,(1,2))"},
    {SW_EINOPS_EINSUM, "a k, c k -> a c", "(2,(2,3)):(1,(2,4))", 0,
     "(5,6):(6,1)", "ak", "ck", "ac", "a2k6c5", "(2,5):(1,2)"},
    {SW_EINOPS_EINSUM, "a b c, b c -> a", "(2,3,4):(12,4,1)", 0, "(3,4):(1,3)",
     "abc", "bc", "a", "a2b3c4", "2:1"},
    {SW_EINOPS_EINSUM, "1 a k, k c 1 -> c a", "(1,2,3):(9,1,2)", 0,
     "(3,4,1):(4,1,7)", "1ak", "kc1", "ca", "a2k3c4", "(4,2):(2,1)"},
    /* batched einsum */
    {SW_EINOPS_EINSUM, "b i k, b j k -> b i j", "(2,3,4):(1,2,6)", 0,
     "(2,5,4):(1,2,10)", "bik", "bjk", "bij", "b2i3k4j5", "(2,3,5):(15,1,3)"},
    {SW_EINOPS_EINSUM, "b (i k), j k b -> (i j) b", "(2,(3,4)):(12,(4,1))", 1,
     "(5,4,2):(8,2,1)", "bik", "jkb", "ijb", "b2i3k4j5",
     "((3,5),2):((1,3),15)"},
    {SW_EINOPS_EINSUM, "a b, c b -> a b c", "(2,3):(1,2)", 0, "(4,3):(1,4)",
     "ab", "cb", "abc", "a2b3c4", "(2,3,4):(1,8,2)"},
    {SW_EINOPS_EINSUM, "b k, b k -> b", "(3,4):(4,1)", 0, "(3,4):(1,3)", "bk",
     "bk", "b", "b3k4", "3:1"},
    {SW_EINOPS_EINSUM, "x (y k), k y -> y x", "((2,2),(3,4)):((1,2),(4,12))", 0,
     "(4,3):(3,1)", "xyk", "ky", "yx", "x4y3k4", "(3,(2,2)):(4,(1,2))"},
};

static void run_case(const tcase *c, int kind, int *bad) {
    char name[200];
    snprintf(name, sizeof name, "%s '%s' on %s%s%s",
             kind == GENERIC ? "Generic" : "CPU", c->cmd, c->lhs,
             c->rhs ? " and " : "", c->rhs ? c->rhs : "");
    sw_tensor *a = make_tensor(kind, c->lhs, c->lhs_offset, 0);
    sw_tensor *b = c->rhs ? make_tensor(kind, c->rhs, 0, 5) : NULL;
    sw_tensor *r = NULL;
    sw_status st;
    if (c->kind == SW_EINOPS_REARRANGE)
        st = sw_einops_rearrange(a, c->cmd, &r);
    else if (c->kind == SW_EINOPS_REDUCE)
        st = sw_einops_reduce(a, c->cmd, &r);
    else
        st = sw_einops_einsum(a, b, c->cmd, &r);
    if (expect_ok(st, name)) {
        if (c->want_layout)
            is_str(L(sw_tensor_layout(r)), c->want_layout, "%s: layout", name);
        double want[512];
        sw_tensor *in[2] = {a, b};
        const char *pieces[2] = {c->lhs_pieces, c->rhs_pieces};
        int64_t n = oracle(c->rhs ? 2 : 1, in, pieces, c->out_pieces, c->sizes,
                           want, 512);
        check_values(r, want, n, name);
        if (c->kind == SW_EINOPS_REARRANGE)
            ok(sw_tensor_carrier(r) == sw_tensor_carrier(a),
               "%s: a view of the input's carrier", name);
        else
            ok(sw_tensor_carrier(r) != sw_tensor_carrier(a) &&
                   sw_carrier_is_cpu(sw_tensor_carrier(r)) == (kind == CPU),
               "%s: fresh storage of the same carrier class", name);
    } else {
        ++*bad;
    }
    sw_tensor_unref(r);
    sw_tensor_unref(a);
    sw_tensor_unref(b);
}

static void test_tensor_commands(void) {
    int64_t base = sw_debug_live_allocs();
    int bad = 0;
    for (int kind = GENERIC; kind <= CPU; ++kind)
        for (size_t i = 0; i < sizeof tensor_cases / sizeof tensor_cases[0];
             ++i)
            run_case(&tensor_cases[i], kind, &bad);
    is_int(bad, 0, "every tensor-level case ran");
    leak_check(base, "tensor commands");
}

static const char *op_name(const sw_tensor *t) {
    /* The operation a native class implements, by the registry. */
    const sw_native_op *n = sw_native_op_of(sw_tensor_autograd_ctx(t));
    return n ? sw_op_info_get(n->op)->name : "(none)";
}

static void test_tensor_graph_and_errors(void) {
    int64_t base = sw_debug_live_allocs();
    sw_tensor *a = make_tensor(GENERIC, "(2,3):(1,2)", 0, 0);
    sw_tensor *b = make_tensor(GENERIC, "(4,3):(1,4)", 0, 1);
    sw_tensor *r = NULL;
    /* The recorded graph: one operation per step. */
    sw_status st = sw_einops_rearrange(a, "a b -> b a", &r);
    if (expect_ok(st, "rearrange graph")) {
        is_str(op_name(r), "rearrange", "rearrange: the ctx is a rearrange");
        is_int(sw_tensor_offset(r), 0, "rearrange: same offset");
        sw_tensor_unref(r);
    }
    st = sw_einops_reduce(a, "a b -> a", &r);
    if (expect_ok(st, "reduce graph")) {
        sw_op *op = sw_tensor_autograd_ctx(r);
        ok(op && strcmp(sw_op_dispatch_name(op), "reduce") == 0,
           "reduce: the ctx is the reduce operation");
        ok(op && strcmp(op_name(sw_op_input(op, 0)), "rearrange") == 0,
           "reduce: its input is the rearranged view");
        sw_tensor_unref(r);
    }
    st = sw_einops_einsum(a, b, "a b, c b -> a c", &r);
    if (expect_ok(st, "einsum graph")) {
        sw_op *op = sw_tensor_autograd_ctx(r);
        is_str(op_name(r), "rearrange", "einsum: the ctx is a rearrange");
        ok(op && strcmp(sw_op_dispatch_name(
                            sw_tensor_autograd_ctx(sw_op_input(op, 0))),
                        "matmul") == 0,
           "einsum: whose input comes from the matmul");
        sw_tensor_unref(r);
    }
    /* Errors. */
    r = SENT_TENSOR;
    st = sw_einops_rearrange(a, NULL, &r);
    expect_fail(st, SW_ETYPE, "description must be a str", "rearrange NULL");
    st = sw_einops_reduce(a, NULL, &r);
    expect_fail(st, SW_ETYPE, "description must be a str", "reduce NULL");
    st = sw_einops_einsum(a, b, NULL, &r);
    expect_fail(st, SW_ETYPE, "description must be a str", "einsum NULL");
    st = sw_einops_rearrange(NULL, "a b -> b a", &r);
    expect_fail(st, SW_ETYPE, "tensor must be a Tensor", "rearrange of NULL");
    st = sw_einops_reduce(NULL, "a b -> b", &r);
    expect_fail(st, SW_ETYPE, "tensor must be a Tensor", "reduce of NULL");
    st = sw_einops_einsum(NULL, b, "a b, c b -> a c", &r);
    expect_fail(st, SW_ETYPE, "lhs must be a Tensor", "einsum of a NULL lhs");
    st = sw_einops_einsum(a, NULL, "a b, c b -> a c", &r);
    expect_fail(st, SW_ETYPE, "rhs must be a Tensor", "einsum of a NULL rhs");
    st = sw_einops_rearrange(NULL, "a b", &r);
    expect_fail(st, SW_EVALUE, "Rearrange command must contain one '->' arrow",
                "the description is parsed before the tensor is looked at");
    st = sw_einops_reduce(a, "a b -> a b", &r);
    expect_fail(st, SW_EVALUE,
                "Reduce command must omit at least one dimension",
                "reduce parse error");
    st = sw_einops_einsum(a, b, "a b, c d -> a c", &r);
    expect_fail(st, SW_EVALUE,
                "Contraction command must include at least one shared "
                "dimension",
                "einsum parse error");
    sw_tensor *c = make_tensor(GENERIC, "(4,5):(1,4)", 0, 2);
    st = sw_einops_einsum(a, c, "a b, c b -> a c", &r);
    expect_fail(st, SW_EVALUE,
                "Einsum shared dimension 'b' has mismatched logical size",
                "einsum of mismatched shared sizes");
    sw_tensor *cpu = make_tensor(CPU, "(4,3):(1,4)", 0, 2);
    st = sw_einops_einsum(a, cpu, "a b, c b -> a c", &r);
    expect_fail(st, SW_ETYPE, "Tensor backing carriers must match",
                "einsum across carrier classes");
    st = sw_einops_rearrange(a, "a (b c) -> a b c", &r);
    expect_fail(st, SW_EVALUE, "layout and tree profile do not match",
                "rearrange along a profile the layout lacks");
    st = sw_einops_rearrange(a, "1 a -> a", &r);
    expect_fail(st, SW_EVALUE,
                "Layout rearrange ids must include every extracted layout",
                "a literal 1 over a mode of size 2");
    st = sw_einops_einsum(a, b, "1 b, c b -> c", &r);
    expect_fail(st, SW_EVALUE,
                "Layout rearrange ids must include every extracted layout",
                "einsum: a literal 1 over a mode of size 2");
    ok(r == SENT_TENSOR, "failed commands leave the out-parameter alone");
    /* In reduce, a literal 1 is a reduced piece: it is summed, whatever its
     * size (the reference's rule). */
    st = sw_einops_reduce(a, "1 b -> b", &r);
    if (expect_ok(st, "reduce of a literal 1 over a mode of size 2")) {
        bool same = sw_tensor_size(r) == 3;
        for (int64_t j = 0; same && j < 3; ++j)
            same = getd(r, j) == getd(a, 2 * j) + getd(a, 2 * j + 1);
        ok(same, "the literal 1's piece is summed");
        sw_tensor_unref(r);
    }
    /* Specs of the wrong kind. */
    sw_einops_spec *red = NULL, *rea = NULL;
    st = sw_einops_parse_reduce("a b -> a", &red);
    expect_ok(st, "a reduce spec");
    st = sw_einops_parse_rearrange("a b -> b a", &rea);
    expect_ok(st, "a rearrange spec");
    r = SENT_TENSOR;
    st = sw_einops_rearrange_spec(a, red, &r);
    expect_fail(st, SW_ETYPE, "spec must be a RearrangeSpec",
                "rearrange with a reduce spec");
    st = sw_einops_reduce_spec(a, rea, &r);
    expect_fail(st, SW_ETYPE, "spec must be a ReduceSpec",
                "reduce with a rearrange spec");
    st = sw_einops_einsum_spec(a, b, rea, &r);
    expect_fail(st, SW_ETYPE, "spec must be an EinsumSpec",
                "einsum with a rearrange spec");
    st = sw_einops_rearrange_spec(a, NULL, &r);
    expect_fail(st, SW_ETYPE, "spec must be a RearrangeSpec",
                "rearrange with no spec");
    ok(r == SENT_TENSOR, "kind errors leave the out-parameter alone");
    st = sw_einops_reduce_spec(a, red, &r);
    if (expect_ok(st, "reduce with its spec")) {
        is_str(L(sw_tensor_layout(r)), "2:1", "reduce_spec result");
        sw_tensor_unref(r);
    }
    sw_einops_spec_unref(red);
    sw_einops_spec_unref(rea);
    sw_tensor_unref(c);
    sw_tensor_unref(cpu);
    sw_tensor_unref(a);
    sw_tensor_unref(b);
    leak_check(base, "tensor graph and errors");
}

/* Gradients through all three commands, against hand-derived sums. */
static void test_gradients(void) {
    int64_t base = sw_debug_live_allocs();
    for (int route = 0; route < 3; ++route) {
        sw_tensor *x = make_tensor(GENERIC, "(2,3):(1,2)", 0, 0);
        sw_tensor *w = make_tensor(GENERIC, "(4,3):(3,1)", 0, 3);
        sw_tensor *t = NULL, *y = NULL, *s = NULL;
        sw_status st;
        /* Three routes to s = sum over a, c of sum_b x[a,b] w[c,b]. */
        if (route == 0) {
            st = sw_einops_einsum(x, w, "a b, c b -> a c", &y);
        } else if (route == 1) {
            st = sw_einops_rearrange(x, "a b -> b a", &t);
            if (!st)
                st = sw_einops_einsum(t, w, "b a, c b -> (c a)", &y);
        } else {
            st = sw_einops_einsum(w, x, "c b, a b -> c a", &y);
        }
        if (!st)
            st =
                sw_einops_reduce(y, route == 1 ? "(c a) -> 1" : "a c -> 1", &s);
        if (!st)
            st = sw_tensor_backward(s, NULL);
        if (expect_ok(st, route == 0   ? "backward through einsum and reduce"
                          : route == 1 ? "backward through rearrange too"
                                       : "backward with swapped operands")) {
            sw_tensor *gx = sw_tensor_grad(x), *gw = sw_tensor_grad(w);
            bool same =
                gx && gw && sw_tensor_size(gx) == 6 && sw_tensor_size(gw) == 12;
            for (int64_t a = 0; same && a < 2; ++a)
                for (int64_t b = 0; same && b < 3; ++b) {
                    double want = 0;
                    for (int64_t c = 0; c < 4; ++c)
                        want += getd(w, c + 4 * b);
                    same = getd(gx, a + 2 * b) == want;
                }
            for (int64_t c = 0; same && c < 4; ++c)
                for (int64_t b = 0; same && b < 3; ++b)
                    same = getd(gw, c + 4 * b) ==
                           getd(x, 0 + 2 * b) + getd(x, 1 + 2 * b);
            ok(same, "route %d: both gradients equal the hand-derived sums",
               route);
        }
        sw_tensor_unref(s);
        sw_tensor_unref(y);
        sw_tensor_unref(t);
        sw_tensor_unref(x);
        sw_tensor_unref(w);
    }
    leak_check(base, "gradients");
}

/* Batched einsum: s = sum of einsum("b i k, b j k -> b i j") has
 * dA[b,i,k] = sum_j B[b,j,k] and dB[b,j,k] = sum_i A[b,i,k]. */
static void test_batched_gradients(void) {
    int64_t base = sw_debug_live_allocs();
    for (int kind = GENERIC; kind <= CPU; ++kind) {
        sw_tensor *x = make_tensor(kind, "(2,3,4):(1,2,6)", 0, 0);
        sw_tensor *w = make_tensor(kind, "(2,5,4):(20,4,1)", 0, 3);
        sw_tensor *y = NULL, *s = NULL;
        sw_status st = sw_einops_einsum(x, w, "b i k, b j k -> b i j", &y);
        if (!st)
            ok(strcmp(sw_op_dispatch_name(sw_tensor_autograd_ctx(
                          sw_op_input(sw_tensor_autograd_ctx(y), 0))),
                      "batched_matmul") == 0,
               "batched einsum runs the batched matmul");
        if (!st)
            st = sw_einops_reduce(y, "b i j -> 1", &s);
        if (!st)
            st = sw_tensor_backward(s, NULL);
        if (expect_ok(st, kind == GENERIC ? "Generic batched backward"
                                          : "CPU batched backward")) {
            sw_tensor *gx = sw_tensor_grad(x), *gw = sw_tensor_grad(w);
            bool same = gx && gw && sw_tensor_size(gx) == 24 &&
                        sw_tensor_size(gw) == 40;
            for (int64_t b = 0; same && b < 2; ++b)
                for (int64_t k = 0; same && k < 4; ++k) {
                    double sj = 0, si = 0;
                    for (int64_t j = 0; j < 5; ++j)
                        sj += getd(w, b + 2 * j + 10 * k);
                    for (int64_t i = 0; i < 3; ++i)
                        si += getd(x, b + 2 * i + 6 * k);
                    for (int64_t i = 0; same && i < 3; ++i)
                        same = fabs(getd(gx, b + 2 * i + 6 * k) - sj) < 1e-4;
                    for (int64_t j = 0; same && j < 5; ++j)
                        same = fabs(getd(gw, b + 2 * j + 10 * k) - si) < 1e-4;
                }
            ok(same, "%s: batched gradients equal the hand-derived sums",
               kind == GENERIC ? "Generic" : "CPU");
        }
        sw_tensor_unref(s);
        sw_tensor_unref(y);
        sw_tensor_unref(x);
        sw_tensor_unref(w);
    }
    /* The operation's own rules. */
    for (int kind = GENERIC; kind <= CPU; ++kind) {
        sw_tensor *a = make_tensor(kind, "(2,3,4):(1,2,6)", 0, 0);
        sw_tensor *b2 = make_tensor(kind, "(5,3):(1,5)", 0, 1);
        sw_tensor *k5 = make_tensor(kind, "(5,4,4):(1,5,20)", 0, 1);
        sw_tensor *b5 = make_tensor(kind, "(5,3,2):(1,5,15)", 0, 1);
        sw_tensor *ok3 = make_tensor(kind, "(5,3,4):(12,4,1)", 0, 1);
        sw_tensor *r = SENT_TENSOR;
        sw_status st = sw_batched_matmul(b2, a, &r);
        expect_fail(st, SW_EVALUE, "lhs must have a three-mode layout",
                    "batched_matmul of a two-mode lhs");
        st = sw_batched_matmul(a, b2, &r);
        expect_fail(st, SW_EVALUE, "rhs must have a three-mode layout",
                    "batched_matmul of a two-mode rhs");
        st = sw_batched_matmul(a, k5, &r);
        expect_fail(st, SW_EVALUE, "Matmul inner dimensions must match",
                    "batched_matmul inner sizes");
        st = sw_batched_matmul(a, b5, &r);
        expect_fail(st, SW_EVALUE, "Matmul batch dimensions must match",
                    "batched_matmul batch sizes");
        ok(r == SENT_TENSOR, "failed batched_matmul leaves out alone");
        st = sw_batched_matmul(a, ok3, &r);
        if (expect_ok(st, "batched_matmul")) {
            is_str(L(sw_tensor_layout(r)), "(2,5,4):(1,2,10)",
                   "batched_matmul result layout");
            bool same = true;
            for (int64_t q = 0; same && q < 4; ++q)
                for (int64_t j = 0; same && j < 5; ++j)
                    for (int64_t i = 0; same && i < 2; ++i) {
                        double want = 0;
                        for (int64_t k = 0; k < 3; ++k)
                            want += getd(a, i + 2 * k + 6 * q) *
                                    getd(ok3, j + 5 * k + 15 * q);
                        same = fabs(getd(r, i + 2 * j + 10 * q) - want) < 1e-3;
                    }
            ok(same, "batched_matmul values");
            sw_tensor_unref(r);
        }
        sw_tensor_unref(a);
        sw_tensor_unref(b2);
        sw_tensor_unref(k5);
        sw_tensor_unref(b5);
        sw_tensor_unref(ok3);
    }
    leak_check(base, "batched gradients");
}

/* ---------------------------------------------------------------- cache */

static void test_cache(void) {
    sw_einops_cache_clear();
    int64_t base = sw_debug_live_allocs();
    is_int(sw_einops_cache_count(SW_EINOPS_REARRANGE), 0, "empty after clear");
    is_int(sw_einops_cache_capacity(), 1024, "default capacity");
    sw_einops_spec *a = NULL, *b = NULL, *c = NULL, *d = NULL;
    sw_status st = sw_einops_parse_rearrange("a b -> b a", &a);
    expect_ok(st, "first compile");
    is_int(sw_einops_cache_count(SW_EINOPS_REARRANGE), 1, "one entry");
    st = sw_einops_parse_rearrange("a b -> b a", &b);
    expect_ok(st, "second compile");
    ok(a == b, "the same command gives the identical spec");
    st = sw_einops_compile(SW_EINOPS_REARRANGE, "a b -> b a; junk", 10, &c);
    expect_ok(st, "compile with a length");
    ok(c == a, "the length decides the key");
    sw_einops_spec_unref(c);
    st = sw_einops_parse(SW_EINOPS_REARRANGE, "a b -> b a", -1, &c);
    expect_ok(st, "uncached parse");
    ok(c != a, "sw_einops_parse never uses the cache");
    is_str(F(c, SW_EINOPS_OUTPUT), F(a, SW_EINOPS_OUTPUT),
           "but builds the same spec");
    sw_einops_spec_unref(c);
    st = sw_einops_parse_rearrange("a b ->  b a", &c);
    expect_ok(st, "a command differing in whitespace");
    ok(c != a, "is another entry (keys are the exact text)");
    sw_einops_spec_unref(c);
    st = sw_einops_parse_reduce("a b -> b", &c);
    expect_ok(st, "reduce compile");
    st = sw_einops_compile(SW_EINOPS_REARRANGE, "a b -> b", -1, &d);
    expect_ok(st, "the same text as a rearrange");
    ok(c != d && sw_einops_spec_kind(c) == SW_EINOPS_REDUCE &&
           sw_einops_spec_kind(d) == SW_EINOPS_REARRANGE,
       "a separate cache per command kind");
    sw_einops_spec_unref(c);
    sw_einops_spec_unref(d);
    st = sw_einops_parse_einsum("a b, c b -> a c", &c);
    expect_ok(st, "einsum compile");
    st = sw_einops_parse_einsum("a b, c b -> a c", &d);
    expect_ok(st, "einsum again");
    ok(c == d, "einsum specs are cached too");
    sw_einops_spec_unref(c);
    sw_einops_spec_unref(d);
    /* A cached spec outlives the cache's reference. */
    sw_einops_cache_clear();
    is_int(sw_einops_cache_count(SW_EINOPS_REARRANGE), 0, "cleared");
    is_str(F(a, SW_EINOPS_OUTPUT), "(1,0)", "a held spec survives a clear");
    st = sw_einops_parse_rearrange("a b -> b a", &c);
    expect_ok(st, "compile after clear");
    ok(c != a, "a new spec after the clear");
    sw_einops_spec_unref(c);
    sw_einops_spec_unref(a);
    sw_einops_spec_unref(b);
    /* Eviction: the least recently used entry goes first. */
    st = sw_einops_cache_set_capacity(2);
    expect_ok(st, "capacity 2");
    sw_einops_spec *x = NULL, *y = NULL, *z = NULL, *w = NULL;
    sw_einops_parse_rearrange("x -> x", &x);
    sw_einops_parse_rearrange("y -> y", &y);
    sw_einops_parse_rearrange("x -> x", &w); /* x is now the most recent */
    sw_einops_spec_unref(w);
    sw_einops_parse_rearrange("z -> z", &z); /* evicts y */
    is_int(sw_einops_cache_count(SW_EINOPS_REARRANGE), 2, "bounded at 2");
    sw_einops_parse_rearrange("x -> x", &w);
    ok(w == x, "the recently used entry stayed");
    sw_einops_spec_unref(w);
    sw_einops_parse_rearrange("y -> y", &w);
    ok(w != y, "the least recently used entry was dropped");
    sw_einops_spec_unref(w);
    st = sw_einops_cache_set_capacity(1);
    expect_ok(st, "capacity 1");
    is_int(sw_einops_cache_count(SW_EINOPS_REARRANGE), 1,
           "shrinking evicts at once");
    st = sw_einops_cache_set_capacity(0);
    expect_fail(st, SW_EVALUE, "einops cache capacity must be at least 1",
                "capacity 0");
    is_int(sw_einops_cache_count((sw_einops_kind)9), 0, "count of no kind");
    sw_einops_spec_unref(x);
    sw_einops_spec_unref(y);
    sw_einops_spec_unref(z);
    /* Many commands through a small cache: still bounded, still correct. */
    sw_einops_cache_set_capacity(8);
    bool fine = true;
    for (int i = 0; i < 100 && fine; ++i) {
        char cmd[64];
        snprintf(cmd, sizeof cmd, "s%d t -> t s%d", i % 13, i % 13);
        sw_einops_spec *s = NULL;
        fine = sw_einops_parse_rearrange(cmd, &s) == SW_OK &&
               strcmp(sw_einops_spec_command(s, NULL), cmd) == 0 &&
               strcmp(F(s, SW_EINOPS_OUTPUT), "(1,0)") == 0 &&
               sw_einops_cache_count(SW_EINOPS_REARRANGE) <= 8;
        sw_einops_spec_unref(s);
    }
    ok(fine, "a churning cache stays bounded and returns the right specs");
    sw_einops_cache_set_capacity(1024);
    leak_check(base, "cache");
}

/* Two threads hitting one cache. */
#define THREAD_CMDS 6
static const char *const thread_cmds[THREAD_CMDS] = {
    "a b -> b a",   "a (b c) -> c a b", "x y z -> (z x) y",
    "p q -> q 1 p", "m n -> n m",       "u (v w) -> (w v) u"};

typedef struct thread_arg {
    sw_einops_spec *const *want; /* NULL: identity not checked */
    int clear;                   /* also clear the cache now and then */
    int failures;
} thread_arg;

static void *thread_main(void *p) {
    thread_arg *arg = p;
    for (int i = 0; i < 20000; ++i) {
        int k = (i * 5 + (arg->clear ? 1 : 0)) % THREAD_CMDS;
        sw_einops_spec *s = NULL;
        if (sw_einops_parse_rearrange(thread_cmds[k], &s) != SW_OK) {
            ++arg->failures;
            continue;
        }
        if (arg->want && s != arg->want[k])
            ++arg->failures;
        if (strcmp(sw_einops_spec_command(s, NULL), thread_cmds[k]) != 0)
            ++arg->failures;
        sw_einops_spec_unref(s);
        /* Failures on the way never enter the cache. */
        if (sw_einops_parse_rearrange("a a -> a", &s) == SW_OK)
            ++arg->failures;
        if (arg->clear && i % 97 == 0)
            sw_einops_cache_clear();
    }
    return NULL;
}

static void test_cache_threads(void) {
    sw_einops_cache_clear();
    int64_t base = sw_debug_live_allocs();
    sw_einops_spec *want[THREAD_CMDS] = {NULL};
    for (int k = 0; k < THREAD_CMDS; ++k)
        sw_einops_parse_rearrange(thread_cmds[k], &want[k]);
    thread_arg args[2] = {{want, 0, 0}, {want, 0, 0}};
    pthread_t th[2];
    int made = 0;
    for (int i = 0; i < 2; ++i)
        made += pthread_create(&th[i], NULL, thread_main, &args[i]) == 0;
    for (int i = 0; i < made; ++i)
        pthread_join(th[i], NULL);
    is_int(made, 2, "two threads ran");
    is_int(args[0].failures + args[1].failures, 0,
           "both threads always got the identical cached specs");
    for (int k = 0; k < THREAD_CMDS; ++k)
        sw_einops_spec_unref(want[k]);
    /* Racing inserts, evictions and clears: every answer is still right. */
    sw_einops_cache_clear();
    sw_einops_cache_set_capacity(3);
    thread_arg race[2] = {{NULL, 1, 0}, {NULL, 0, 0}};
    made = 0;
    for (int i = 0; i < 2; ++i)
        made += pthread_create(&th[i], NULL, thread_main, &race[i]) == 0;
    for (int i = 0; i < made; ++i)
        pthread_join(th[i], NULL);
    is_int(race[0].failures + race[1].failures, 0,
           "racing threads with evictions and clears get correct specs");
    ok(sw_einops_cache_count(SW_EINOPS_REARRANGE) <= 3, "still bounded");
    sw_einops_cache_set_capacity(1024);
    leak_check(base, "threads");
}

/* ------------------------------------------------------ fault injection */

static sw_tensor *fi_a, *fi_b, *fi_c;
static sw_layout *fi_l, *fi_lb;

/* One run of a walked call: returns its status; on success *check tells
 * whether the result was right. */
static sw_status fi_run(int w, bool *check) {
    sw_status st = SW_OK;
    *check = true;
    switch (w) {
    case 0: {
        sw_einops_tokens *t = SENT_TOKENS;
        st = sw_einops_lex("a (b c) -> (c a) b", -1, &t);
        if (st)
            *check = t == SENT_TOKENS;
        else {
            *check = sw_einops_tokens_count(t) == 11;
            sw_einops_tokens_free(t);
        }
        break;
    }
    case 1:
    case 2:
    case 3: {
        static const char *cmds[] = {"a (b 1 c) -> (c a) 1",
                                     "a (c d) 1 b -> (a c)",
                                     "a (b k) 1, c k -> (c a) b"};
        static const sw_einops_kind kinds[] = {
            SW_EINOPS_REARRANGE, SW_EINOPS_REDUCE, SW_EINOPS_EINSUM};
        sw_einops_spec *s = SENT_SPEC;
        st = sw_einops_parse(kinds[w - 1], cmds[w - 1], -1, &s);
        if (st)
            *check = s == SENT_SPEC;
        else {
            *check = sw_einops_spec_kind(s) == kinds[w - 1];
            sw_einops_spec_unref(s);
        }
        break;
    }
    case 4: {
        sw_einops_token tk[3] = {{SW_EINOPS_LEFT_PAREN, 0, 1, "(", 1},
                                 {SW_EINOPS_SYMBOL, 1, 2, "q", 1},
                                 {SW_EINOPS_RIGHT_PAREN, 2, 3, ")", 1}};
        sw_einops_spec *s = SENT_SPEC;
        st = sw_einops_parse_layout_ref(3, tk, &s);
        if (st)
            *check = s == SENT_SPEC;
        else {
            *check = strcmp(F(s, SW_EINOPS_TREE), "((L))") == 0;
            sw_einops_spec_unref(s);
        }
        break;
    }
    case 5: {
        /* The cache, from empty: a miss, an insert, then a hit. */
        sw_einops_cache_clear();
        sw_einops_spec *s = SENT_SPEC, *s2 = NULL;
        st = sw_einops_parse_einsum("a b, c b -> c a", &s);
        if (st) {
            *check = s == SENT_SPEC;
            break;
        }
        st = sw_einops_parse_einsum("a b, c b -> c a", &s2);
        if (!st) {
            *check = strcmp(F(s2, SW_EINOPS_OUTPUT), "(1,0)") == 0;
            sw_einops_spec_unref(s2);
        }
        sw_einops_spec_unref(s);
        break;
    }
    case 6:
    case 7:
    case 8: {
        sw_tensor *r = SENT_TENSOR;
        if (w == 6)
            st = sw_einops_rearrange(fi_a, "a (b k) -> k (a b)", &r);
        else if (w == 7)
            st = sw_einops_reduce(fi_a, "a (b k) -> (k a)", &r);
        else
            st = sw_einops_einsum(fi_a, fi_b, "a (b k), c k -> a b c", &r);
        if (st)
            *check = r == SENT_TENSOR;
        else
            sw_tensor_unref(r);
        break;
    }
    case 9: {
        sw_tensor *r = SENT_TENSOR;
        st = sw_einops_einsum(fi_c, fi_c, "a b, c b -> (c a)", &r);
        if (st)
            *check = r == SENT_TENSOR;
        else
            sw_tensor_unref(r);
        break;
    }
    default: {
        sw_einops_spec *s = NULL;
        sw_layout *l = fi_l, *rb = fi_lb, *r = SENT_LAYOUT, *r2 = SENT_LAYOUT;
        st = sw_einops_parse(SW_EINOPS_EINSUM, "a (b k), c k -> (c a) b", -1,
                             &s);
        if (!st)
            st = sw_einops_einsum_layouts(s, l, rb, &r, NULL, &r2);
        if (!st) {
            *check = strcmp(L(r2), "((5,2),3):((6,1),2)") == 0;
            sw_layout_unref(r);
            sw_layout_unref(r2);
        } else {
            *check = r == SENT_LAYOUT && r2 == SENT_LAYOUT;
        }
        sw_einops_spec_unref(s);
        break;
    }
    }
    return st;
}

static void test_fault_injection(void) {
    static const char *const names[] = {"lex",
                                        "parse rearrange",
                                        "parse reduce",
                                        "parse einsum",
                                        "parse tokens",
                                        "cache miss and hit",
                                        "rearrange (Generic)",
                                        "reduce (Generic)",
                                        "einsum (Generic)",
                                        "einsum (CPU)",
                                        "einsum layouts"};
    fi_a = make_tensor(GENERIC, "(2,(3,4)):(1,(2,6))", 0, 0);
    fi_b = make_tensor(GENERIC, "(5,4):(1,5)", 0, 1);
    fi_c = make_tensor(CPU, "(3,4):(4,1)", 0, 2);
    fi_l = P("(2,(3,4)):(1,(2,6))");
    fi_lb = P("(5,4):(1,5)");
    for (int w = 0; w < 11; ++w) {
        bool check;
        /* A warm-up run, so that lazily made state is not counted. */
        fi_run(w, &check);
        sw_einops_cache_clear();
        int64_t walk_base = sw_debug_live_allocs();
        int bad = 0, n;
        for (n = 0; n < 2000; ++n) {
            sw_clear_error();
            sw_debug_fail_alloc_after(n);
            sw_status st = fi_run(w, &check);
            sw_debug_fail_alloc_after(-1);
            sw_einops_cache_clear();
            if (!check) {
                diag("%s, n=%d: wrong result or out-parameter", names[w], n);
                ++bad;
            }
            if (sw_debug_live_allocs() != walk_base) {
                diag("%s, n=%d: %lld allocations live, baseline %lld", names[w],
                     n, (long long)sw_debug_live_allocs(),
                     (long long)walk_base);
                ++bad;
            }
            if (st == SW_OK)
                break;
            if (st != SW_ENOMEM || sw_errcode() != SW_ENOMEM) {
                diag("%s, n=%d: status %s (%s)", names[w], n, S(st),
                     sw_errmsg());
                ++bad;
                break;
            }
        }
        ok(n > 0 && n < 2000, "%s: the walk reached success after %d failures",
           names[w], n);
        is_int(bad, 0, "%s: every injected failure is clean", names[w]);
    }
    sw_tensor_unref(fi_a);
    sw_tensor_unref(fi_b);
    sw_tensor_unref(fi_c);
    sw_layout_unref(fi_l);
    sw_layout_unref(fi_lb);
}

int main(void) {
    test_lexer();
    test_layout_refs();
    test_rearrange_parse();
    test_reduce_parse();
    test_einsum_parse();
    test_layout_compile();
    test_tensor_commands();
    test_tensor_graph_and_errors();
    test_gradients();
    test_batched_gradients();
    test_cache();
    test_cache_threads();
    test_fault_injection();
    sw_einops_cache_clear();
    return done_testing();
}
