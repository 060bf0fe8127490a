/*
 * StrideWeave layout command strings: rearrange, reduce and einsum by text.
 *
 * A command names layout *subtrees*, not flat axes: each symbol binds the
 * piece of a layout that sits at its place in the left-hand reference, and
 * parentheses follow the layout's hierarchy. "a (b c) -> a c" on a layout
 * (2,(3,1)):(1,(2,6)) binds a = 2:1, b = 3:2, c = 1:6; the output places
 * the pieces into a new tree. Grammar (whitespace between tokens is free):
 *
 *     ref       := item+
 *     item      := symbol | '1' | '(' ref ')'
 *     rearrange := ref '->' ref
 *     reduce    := ref '->' ref            (omits at least one input piece)
 *     einsum    := ref ',' ref '->' ref    (the two sides share a symbol)
 *
 * In an einsum, a symbol of both sides is contracted (summed over) unless
 * the output names it too: then it is a batch symbol, matched index by
 * index ("b i k, b j k -> b i j" is a batched GEMM). The reference grammar
 * had no batch symbols: a shared symbol in the output was unknown.
 *
 * A symbol is [A-Za-z][A-Za-z0-9_]*. A literal 1 on the left takes up a
 * piece (which must have size 1) without naming it; on the right it inserts
 * the singleton mode 1:0. Only ASCII is accepted; every offset in a message
 * is a byte offset into the command.
 *
 * The pipeline: sw_einops_lex turns text into tokens, the parsers turn
 * tokens into a spec (an immutable description holding recipes in the
 * layout.h sense: SW_TOK_LEAF / PUSH / POP for selections, id tokens k >= 0
 * for outputs), and the compile step applies a spec to layouts
 * (sw_einops_*_layouts) or to tensors (sw_einops_rearrange and friends),
 * which run the recorded operations of op.h: a rearrange is one view
 * (sw_rearrange), a reduce is a view then sw_reduce_sum, an einsum is two
 * views, sw_matmul and a view of the product. Gradients flow through all
 * of them.
 *
 * Errors: malformed commands fail with SW_EVALUE and a message naming the
 * rule and the byte offset, with the exact texts of the Python reference
 * (for example "Unclosed left parenthesis at offset 2"); a NULL command is
 * SW_ETYPE "command must be a str" (the tensor-level forms say
 * "description must be a str"). Out-parameters are written only on success.
 * Deviations from the reference, by design: a command longer than
 * INT32_MAX bytes is SW_EVALUE "Layout command is too long", and
 * parentheses nested deeper than SW_EINOPS_MAX_DEPTH are SW_EVALUE "Layout
 * reference nests parentheses deeper than 256 at offset N" (the reference's
 * recursive parser would overflow its own stack there).
 *
 * Ownership: sw_einops_tokens is owned by whoever made it and freed with
 * sw_einops_tokens_free. sw_einops_spec is immutable and reference-counted
 * (atomically): every function that writes one through an out-parameter
 * writes an owned reference, released with sw_einops_spec_unref (which
 * accepts NULL); getters return borrowed pointers that live as long as the
 * spec. Specs may be shared freely between threads.
 *
 * The cache: sw_einops_compile (and the sw_einops_parse_* shorthands and
 * the tensor-level forms, which use it) keeps successfully compiled specs in
 * a bounded, thread-safe cache, one per command kind. While a command stays
 * cached, compiling it again returns the identical spec object (a new
 * reference to it) after hashing and comparing the text, without lexing or
 * parsing; failures are never cached, so a bad command fails again every
 * time. The cache holds its own reference to each entry; when it is full
 * the least recently used entry is dropped (specs still referenced
 * elsewhere stay alive). If the cache cannot allocate an entry, the freshly
 * compiled spec is returned uncached.
 */
#ifndef STRIDEWEAVE_EINOPS_H
#define STRIDEWEAVE_EINOPS_H

#include "strideweave/base.h"
#include "strideweave/layout.h"
#include "strideweave/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The deepest nesting of parentheses a reference may have. */
#define SW_EINOPS_MAX_DEPTH 256

/* ------------------------------------------------------------------ lexer */

typedef enum sw_einops_token_kind {
    SW_EINOPS_LEFT_PAREN = 0,  /* "(" */
    SW_EINOPS_RIGHT_PAREN = 1, /* ")" */
    SW_EINOPS_ARROW = 2,       /* "->" */
    SW_EINOPS_COMMA = 3,       /* "," */
    SW_EINOPS_ONE = 4,         /* "1" not followed by [A-Za-z0-9_] */
    SW_EINOPS_SYMBOL = 5       /* [A-Za-z][A-Za-z0-9_]* */
} sw_einops_token_kind;

#define SW_EINOPS_TOKEN_KIND_COUNT 6

/* "left_paren", "right_paren", "arrow", "comma", "one" or "symbol"; NULL
 * for a value out of range. */
SW_API const char *sw_einops_token_kind_name(sw_einops_token_kind kind);

/*
 * One token. start and end are byte offsets into the command (end
 * exclusive); value points at the token's text, length bytes, not
 * NUL-terminated ("(", "->", "1", the symbol's name, ...). The parsers read
 * kind, value and length, and name start in their messages; tokens made by
 * a caller (a binding's Token objects) need not come from sw_einops_lex.
 */
typedef struct sw_einops_token {
    sw_einops_token_kind kind;
    int64_t start;
    int64_t end;
    const char *value;
    int64_t length;
} sw_einops_token;

typedef struct sw_einops_tokens sw_einops_tokens;

/*
 * Splits command (length bytes; length < 0 means up to the first NUL) into
 * tokens, skipping ASCII whitespace (space, \t, \n, \r, \f, \v). The whole
 * command is checked for non-ASCII bytes first: SW_EVALUE "Layout command
 * must contain only ASCII characters at offset N" names the first byte
 * >= 128. Then, at the first offending character: "Expected '->' arrow
 * token at offset N" (a '-' without '>'), "Unexpected '>' at offset N",
 * "Invalid singleton token at offset N" (1 followed by a letter, digit or
 * _), "Invalid dimension symbol at offset N" (another leading digit) and
 * "Unexpected character at offset N" (anything else, NUL bytes included).
 * SW_ETYPE "command must be a str" for a NULL command. The token list
 * keeps its own copy of the text; free it with sw_einops_tokens_free.
 */
SW_API sw_status sw_einops_lex(const char *command, int64_t length,
                               sw_einops_tokens **out);
SW_API int64_t sw_einops_tokens_count(const sw_einops_tokens *tokens);
/* Borrowed array of sw_einops_tokens_count tokens (NULL when empty). */
SW_API const sw_einops_token *
sw_einops_tokens_data(const sw_einops_tokens *tokens);
SW_API void sw_einops_tokens_free(sw_einops_tokens *tokens);

/* ------------------------------------------------------------------ specs */

typedef enum sw_einops_kind {
    SW_EINOPS_LAYOUT_REF = 0, /* one layout reference (no arrow) */
    SW_EINOPS_REARRANGE = 1,
    SW_EINOPS_REDUCE = 2,
    SW_EINOPS_EINSUM = 3
} sw_einops_kind;

#define SW_EINOPS_KIND_COUNT 4

/*
 * The recipes a spec holds. Selections are recipes of SW_TOK_LEAF, PUSH and
 * POP (the left-hand trees; leaf k in pre-order is piece k). Outputs are id
 * recipes: token k >= 0 places piece k, SW_TOK_LEAF inserts a singleton.
 *
 * LAYOUT_REF: TREE.
 * REARRANGE:  SELECTION, OUTPUT.
 * REDUCE:     SELECTION, OUTPUT, REDUCED (the ids of every left piece the
 *             output omits, ascending, literal 1s included) and
 *             REARRANGE_OUTPUT = (OUTPUT, REDUCED) as two nested modes.
 * EINSUM:     LHS_SELECTION, RHS_SELECTION; LHS_/RHS_REARRANGE_OUTPUT =
 *             (outer, inner): outer holds that side's non-shared symbols in
 *             side order (a singleton if none), inner the shared symbols in
 *             lhs order, each with that side's ids; MATMUL_OUTPUT_SELECTION
 *             = (leaf per lhs outer piece, leaf per rhs outer piece), each at
 *             least one leaf; OUTPUT, whose ids number the lhs outer pieces
 *             then the rhs outer pieces of the matmul product. With batch
 *             symbols, the rearrange outputs are (outer, inner, batch):
 *             inner holds only the contracted symbols (a singleton if none)
 *             and batch the batch symbols in lhs order; the matmul output
 *             selection gets a third group of one leaf per batch symbol,
 *             and OUTPUT numbers the batch pieces after both outer groups
 *             (a side without outer symbols still skips one id).
 */
typedef enum sw_einops_field {
    SW_EINOPS_TREE = 0,
    SW_EINOPS_SELECTION = 1,
    SW_EINOPS_OUTPUT = 2,
    SW_EINOPS_REDUCED = 3,
    SW_EINOPS_REARRANGE_OUTPUT = 4,
    SW_EINOPS_LHS_SELECTION = 5,
    SW_EINOPS_RHS_SELECTION = 6,
    SW_EINOPS_LHS_REARRANGE_OUTPUT = 7,
    SW_EINOPS_RHS_REARRANGE_OUTPUT = 8,
    SW_EINOPS_MATMUL_OUTPUT_SELECTION = 9
} sw_einops_field;

#define SW_EINOPS_FIELD_COUNT 10

typedef struct sw_einops_spec sw_einops_spec;

/*
 * Parses a list of tokens as one layout reference (a LAYOUT_REF spec).
 * SW_ETYPE "layout reference tokens must be Token objects" for a NULL array
 * with n > 0 or a token whose kind or value is invalid. SW_EVALUE, at the
 * first offending token: "Unmatched right parenthesis at offset N",
 * "Unclosed left parenthesis at offset N" (the innermost open '('), "Empty
 * parenthesized group at offset N" (the ')'), "Commas are not valid in
 * layout references at offset N", "Arrows are not valid in layout
 * references at offset N", "Duplicate dimension symbol 'a' at offset N",
 * and "Layout reference must not be empty" (no tokens, or a '(' as the
 * last token).
 */
SW_API sw_status sw_einops_parse_layout_ref(int64_t n,
                                            const sw_einops_token *tokens,
                                            sw_einops_spec **out);

/*
 * Lexes and parses command (length < 0: up to the first NUL) as a command
 * of the given kind, without the cache. Beyond the lexer's and the
 * reference parser's errors (the output side adds "Unknown dimension
 * symbol 'x' at offset N" and "Duplicate output dimension symbol 'x' at
 * offset N"):
 * - REARRANGE / REDUCE / EINSUM: "<Kind> command must contain one '->'
 *   arrow" and "<Kind> command must contain only one '->' arrow", Kind
 *   being Rearrange, Reduce or Einsum;
 * - REDUCE: "Reduce command must omit at least one dimension";
 * - EINSUM: "Contraction command must contain one comma before '->'",
 *   "Contraction command must contain only one comma before '->'",
 *   "Contraction command must include at least one shared dimension",
 *   "Einsum output must include every non-shared input symbol: x, y" (the
 *   missing symbols sorted). Shared symbols are unknown in the output.
 * SW_EVALUE for a kind out of range.
 */
SW_API sw_status sw_einops_parse(sw_einops_kind kind, const char *command,
                                 int64_t length, sw_einops_spec **out);

/* The same through the cache (see the top of this header). */
SW_API sw_status sw_einops_compile(sw_einops_kind kind, const char *command,
                                   int64_t length, sw_einops_spec **out);

/* Shorthands: sw_einops_compile of a NUL-terminated command. */
SW_API sw_status sw_einops_parse_rearrange(const char *command,
                                           sw_einops_spec **out);
SW_API sw_status sw_einops_parse_reduce(const char *command,
                                        sw_einops_spec **out);
SW_API sw_status sw_einops_parse_einsum(const char *command,
                                        sw_einops_spec **out);

SW_API sw_einops_spec *sw_einops_spec_retain(sw_einops_spec *spec);
SW_API void sw_einops_spec_unref(sw_einops_spec *spec);

SW_API sw_einops_kind sw_einops_spec_kind(const sw_einops_spec *spec);

/*
 * The command the spec was compiled from (a NUL-terminated copy; *length,
 * when not NULL, gets its length). For a LAYOUT_REF parsed from tokens, the
 * token values joined by single spaces.
 */
SW_API const char *sw_einops_spec_command(const sw_einops_spec *spec,
                                          int64_t *length);

/*
 * A borrowed recipe of the spec; *ntok gets its token count. NULL with
 * *ntok = -1 if the spec's kind has no such field.
 */
SW_API const int32_t *sw_einops_spec_recipe(const sw_einops_spec *spec,
                                            sw_einops_field field,
                                            int32_t *ntok);

/*
 * The symbol bindings of one side in textual order: side 0 is the only
 * side of a layout reference, rearrange or reduce and the lhs of an
 * einsum; side 1 is the rhs of an einsum. Symbol i's name (borrowed,
 * NUL-terminated) is returned and its piece id written to *id when id is
 * not NULL; literal 1s use up ids but have no binding. NULL (and 0 symbols)
 * for a side or index out of range.
 */
SW_API int32_t sw_einops_spec_nsymbols(const sw_einops_spec *spec, int side);
SW_API const char *sw_einops_spec_symbol(const sw_einops_spec *spec, int side,
                                         int32_t i, int32_t *id);

/* EINSUM: the shared symbols in lhs order (0 and NULL for other kinds). */
SW_API int32_t sw_einops_spec_ncommon(const sw_einops_spec *spec);
SW_API const char *sw_einops_spec_common(const sw_einops_spec *spec, int32_t i);

/* EINSUM: the batch symbols (shared symbols the output names), in lhs
 * order (0 and NULL for other kinds and for unbatched contractions). */
SW_API int32_t sw_einops_spec_nbatch(const sw_einops_spec *spec);
SW_API const char *sw_einops_spec_batch(const sw_einops_spec *spec, int32_t i);

/* ------------------------------------------------------------------ cache */

/* Drops every cached spec of every kind. */
SW_API void sw_einops_cache_clear(void);
/* The number of specs cached for a kind (0 for a kind out of range). */
SW_API int64_t sw_einops_cache_count(sw_einops_kind kind);
/* The largest number of specs kept per kind (1024 unless changed). */
SW_API int64_t sw_einops_cache_capacity(void);
/* Changes the capacity (at least 1); shrinking drops the least recently
 * used entries at once. SW_EVALUE for a capacity below 1. */
SW_API sw_status sw_einops_cache_set_capacity(int64_t capacity);

/* -------------------------------------------------------- layout compile */

/*
 * The layout a REARRANGE spec makes of l: sw_layout_rearrange with the
 * spec's OUTPUT and SELECTION, whose errors it passes on ("layout and tree
 * profile do not match", "Layout rearrange ids must include every
 * extracted layout" for an omitted piece of size > 1). SW_ETYPE "spec must
 * be a RearrangeSpec" for another kind.
 */
SW_API sw_status sw_einops_rearrange_layout(const sw_einops_spec *spec,
                                            const sw_layout *l,
                                            sw_layout **out);

/*
 * The layouts of a REDUCE on l: *intermediate is the two-mode layout
 * (kept, reduced) (l rearranged by REARRANGE_OUTPUT and SELECTION), and
 * *result the layout of the sum: the compact column-major layout whose
 * top-level modes are the children of the intermediate's mode 0 (one
 * nesting level flattened: "-> a c" gives flat modes, "-> (a c)" one
 * nested mode, "-> 1" exactly 1:1). Either out-parameter may be NULL.
 * SW_ETYPE "spec must be a ReduceSpec" for another kind.
 */
SW_API sw_status sw_einops_reduce_layouts(const sw_einops_spec *spec,
                                          const sw_layout *l,
                                          sw_layout **intermediate,
                                          sw_layout **result);

/*
 * Checks an EINSUM's operands: each side must split along its selection
 * (the layout errors of sw_layout_extract), and each shared symbol must
 * bind pieces of the same logical size on both sides, else SW_EVALUE
 * "Einsum shared dimension 'b' has mismatched logical size" (the first such
 * symbol in lhs order). SW_ETYPE "spec must be an EinsumSpec".
 */
SW_API sw_status sw_einops_einsum_check(const sw_einops_spec *spec,
                                        const sw_layout *lhs,
                                        const sw_layout *rhs);

/*
 * The layouts of an EINSUM: after sw_einops_einsum_check, *lhs_out and
 * *rhs_out are the operands rearranged to (outer, inner[, batch]), and
 * *result the contraction's layout: the compact layout of (lhs outer, rhs
 * outer[, lhs batch]) (the rule of sw_matmul and sw_batched_matmul)
 * rearranged by MATMUL_OUTPUT_SELECTION and OUTPUT. Any
 * out-parameter may be NULL.
 */
SW_API sw_status sw_einops_einsum_layouts(
    const sw_einops_spec *spec, const sw_layout *lhs, const sw_layout *rhs,
    sw_layout **lhs_out, sw_layout **rhs_out, sw_layout **result);

/* ---------------------------------------------------------- tensor level */

/*
 * Tensor-level commands. Each checks the description (SW_ETYPE
 * "description must be a str" for NULL), compiles it through the cache
 * and runs recorded operations dispatched on the tensor's carrier:
 * - rearrange: one "rearrange" view of t (no copy);
 * - reduce: a "rearrange" view of t into (kept, reduced), then
 *   sw_reduce_sum; the result layout is sw_einops_reduce_layouts' result;
 * - einsum: sw_einops_einsum_check, "rearrange" views of both operands to
 *   (outer, inner), sw_matmul (carriers must match exactly), and a
 *   "rearrange" view of the product by MATMUL_OUTPUT_SELECTION and OUTPUT;
 *   with batch symbols the views are (outer, inner, batch) and the product
 *   is sw_batched_matmul's.
 * A NULL tensor is SW_ETYPE "tensor must be a Tensor" ("lhs must be a
 * Tensor", "rhs must be a Tensor"). *out gets an owned reference.
 */
SW_API sw_status sw_einops_rearrange(sw_tensor *t, const char *description,
                                     sw_tensor **out);
SW_API sw_status sw_einops_reduce(sw_tensor *t, const char *description,
                                  sw_tensor **out);
SW_API sw_status sw_einops_einsum(sw_tensor *lhs, sw_tensor *rhs,
                                  const char *description, sw_tensor **out);

/* The same with a compiled spec (SW_ETYPE "spec must be a RearrangeSpec",
 * "... a ReduceSpec", "... an EinsumSpec" for another kind or NULL). */
SW_API sw_status sw_einops_rearrange_spec(sw_tensor *t,
                                          const sw_einops_spec *spec,
                                          sw_tensor **out);
SW_API sw_status sw_einops_reduce_spec(sw_tensor *t, const sw_einops_spec *spec,
                                       sw_tensor **out);
SW_API sw_status sw_einops_einsum_spec(sw_tensor *lhs, sw_tensor *rhs,
                                       const sw_einops_spec *spec,
                                       sw_tensor **out);

#ifdef __cplusplus
}
#endif

#endif /* STRIDEWEAVE_EINOPS_H */
