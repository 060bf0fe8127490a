/*
 * Private structures of the layout command strings: the token list, the
 * spec and the parser's entry points shared by parser.c, cache.c,
 * compile.c and ops.c.
 */
#ifndef SW_EINOPS_INTERNAL_H
#define SW_EINOPS_INTERNAL_H

#include "base/internal.h"
#include "strideweave/einops.h"

/* A token list in one allocation: the tokens, then the command's text
 * (NUL-terminated), which the tokens' values point into. */
struct sw_einops_tokens {
    int64_t n;
    sw_einops_token *tok;
    char *text;
    int64_t length;
};

/* One symbol binding: a name (NUL-terminated, inside the spec's block) and
 * the id of its piece. */
typedef struct sw_einops_sym {
    const char *name;
    int32_t length;
    int32_t id;
} sw_einops_sym;

/*
 * A spec in one allocation: this header, the symbol records of both sides,
 * the recipes, the common-symbol indices (into side 0), then the names and
 * the command text. Immutable once built; shared by the cache and callers.
 */
struct sw_einops_spec {
    sw_refcount ref;
    sw_einops_kind kind;
    int32_t nrec[SW_EINOPS_FIELD_COUNT]; /* -1: the kind has no such field */
    const int32_t *rec[SW_EINOPS_FIELD_COUNT];
    int32_t nsym[2];
    const sw_einops_sym *sym[2];
    int32_t ncommon;
    const int32_t *common; /* indices into sym[0] */
    int32_t nbatch;
    const int32_t *batch; /* EINSUM batch symbols: indices into sym[0] */
    const char *command;
    int64_t length;
};

/* The message for a NULL command in the parsers. */
#define SW_EINOPS_NO_COMMAND "command must be a str"

/*
 * Lexes length bytes of command into a token array (sw_malloc'd, freed by
 * the caller; NULL when there are none) whose values point into command.
 */
sw_status sw_einops_lex_raw(const char *command, int64_t length,
                            sw_einops_token **tokens, int64_t *n);

/* The length of a command given as (text, length < 0 for NUL-terminated);
 * SW_EVALUE for a command whose offsets would not fit the recipes. */
sw_status sw_einops_command_length(const char *command, int64_t length,
                                   int64_t *out);

/* Hashes a command's bytes (64-bit FNV-1a). */
uint64_t sw_einops_hash(const char *text, int64_t length);

#endif /* SW_EINOPS_INTERNAL_H */
