/*
 * The lexer of layout command strings: ASCII text into tokens with byte
 * offsets. It never reads past length, so commands need no terminating NUL
 * and may contain NUL bytes (rejected as unexpected characters).
 */
#include <string.h>

#include "einops/internal.h"

static const char *const kind_names[SW_EINOPS_TOKEN_KIND_COUNT] = {
    "left_paren", "right_paren", "arrow", "comma", "one", "symbol"};

const char *sw_einops_token_kind_name(sw_einops_token_kind kind) {
    if ((int)kind < 0 || (int)kind >= SW_EINOPS_TOKEN_KIND_COUNT)
        return NULL;
    return kind_names[kind];
}

static int is_space(unsigned char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' ||
           c == '\v';
}

static int is_alpha(unsigned char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

static int is_digit(unsigned char c) {
    return c >= '0' && c <= '9';
}

static int is_word(unsigned char c) {
    return is_alpha(c) || is_digit(c) || c == '_';
}

uint64_t sw_einops_hash(const char *text, int64_t length) {
    uint64_t h = UINT64_C(14695981039346656037);
    for (int64_t i = 0; i < length; ++i) {
        h ^= (unsigned char)text[i];
        h *= UINT64_C(1099511628211);
    }
    return h;
}

sw_status sw_einops_command_length(const char *command, int64_t length,
                                   int64_t *out) {
    if (length < 0)
        length = (int64_t)strlen(command);
    if (length > INT32_MAX)
        return sw_fail(SW_EVALUE, "Layout command is too long");
    *out = length;
    return SW_OK;
}

sw_status sw_einops_lex_raw(const char *s, int64_t n, sw_einops_token **tokens,
                            int64_t *count) {
    const unsigned char *u = (const unsigned char *)s;
    /* The reference checks the whole text for non-ASCII bytes before it
     * looks at any token, so that check comes first here too. */
    for (int64_t i = 0; i < n; ++i)
        if (u[i] >= 128)
            return sw_fail(SW_EVALUE,
                           "Layout command must contain only ASCII characters "
                           "at offset %lld",
                           (long long)i);
    /* Every token takes at least one byte, so n bounds their number; count
     * them first so that one allocation suffices. */
    int64_t ntok = 0;
    for (int64_t i = 0; i < n;) {
        unsigned char c = u[i];
        if (is_space(c)) {
            ++i;
            continue;
        }
        int64_t start = i;
        if (c == '(' || c == ')' || c == ',') {
            ++i;
        } else if (c == '-') {
            if (i + 1 >= n || u[i + 1] != '>')
                return sw_fail(SW_EVALUE,
                               "Expected '->' arrow token at offset %lld",
                               (long long)start);
            i += 2;
        } else if (c == '>') {
            return sw_fail(SW_EVALUE, "Unexpected '>' at offset %lld",
                           (long long)start);
        } else if (c == '1') {
            if (i + 1 < n && is_word(u[i + 1]))
                return sw_fail(SW_EVALUE,
                               "Invalid singleton token at offset %lld",
                               (long long)start);
            ++i;
        } else if (is_digit(c)) {
            return sw_fail(SW_EVALUE, "Invalid dimension symbol at offset %lld",
                           (long long)start);
        } else if (is_alpha(c)) {
            while (i < n && is_word(u[i]))
                ++i;
        } else {
            return sw_fail(SW_EVALUE, "Unexpected character at offset %lld",
                           (long long)start);
        }
        ++ntok;
    }
    sw_einops_token *t = NULL;
    if (ntok > 0) {
        t = sw_malloc((size_t)ntok * sizeof *t);
        if (!t)
            return sw_oom();
    }
    int64_t k = 0;
    for (int64_t i = 0; i < n;) {
        unsigned char c = u[i];
        if (is_space(c)) {
            ++i;
            continue;
        }
        sw_einops_token *tk = &t[k++];
        tk->start = i;
        tk->value = s + i;
        switch (c) {
        case '(':
            tk->kind = SW_EINOPS_LEFT_PAREN;
            ++i;
            break;
        case ')':
            tk->kind = SW_EINOPS_RIGHT_PAREN;
            ++i;
            break;
        case ',':
            tk->kind = SW_EINOPS_COMMA;
            ++i;
            break;
        case '-':
            tk->kind = SW_EINOPS_ARROW;
            i += 2;
            break;
        case '1':
            tk->kind = SW_EINOPS_ONE;
            ++i;
            break;
        default:
            tk->kind = SW_EINOPS_SYMBOL;
            while (i < n && is_word(u[i]))
                ++i;
            break;
        }
        tk->end = i;
        tk->length = i - tk->start;
    }
    *tokens = t;
    *count = ntok;
    return SW_OK;
}

sw_status sw_einops_lex(const char *command, int64_t length,
                        sw_einops_tokens **out) {
    if (!command)
        return sw_fail(SW_ETYPE, SW_EINOPS_NO_COMMAND);
    sw_status st = sw_einops_command_length(command, length, &length);
    if (st)
        return st;
    sw_einops_token *tok = NULL;
    int64_t n = 0;
    if ((st = sw_einops_lex_raw(command, length, &tok, &n)))
        return st;
    /* One block: the header, the tokens, then the text they point into. */
    size_t head = sizeof(sw_einops_tokens);
    head = (head + _Alignof(sw_einops_token) - 1) / _Alignof(sw_einops_token) *
           _Alignof(sw_einops_token);
    size_t size =
        head + (size_t)n * sizeof(sw_einops_token) + (size_t)length + 1;
    sw_einops_tokens *r = sw_malloc(size);
    if (!r) {
        sw_free(tok);
        return sw_oom();
    }
    r->n = n;
    r->tok = n ? (sw_einops_token *)((char *)r + head) : NULL;
    r->text = (char *)r + head + (size_t)n * sizeof(sw_einops_token);
    r->length = length;
    if (length)
        memcpy(r->text, command, (size_t)length);
    r->text[length] = '\0';
    for (int64_t i = 0; i < n; ++i) {
        r->tok[i] = tok[i];
        r->tok[i].value = r->text + tok[i].start;
    }
    sw_free(tok);
    *out = r;
    return SW_OK;
}

int64_t sw_einops_tokens_count(const sw_einops_tokens *tokens) {
    return tokens ? tokens->n : 0;
}

const sw_einops_token *sw_einops_tokens_data(const sw_einops_tokens *tokens) {
    return tokens ? tokens->tok : NULL;
}

void sw_einops_tokens_free(sw_einops_tokens *tokens) {
    sw_free(tokens);
}
