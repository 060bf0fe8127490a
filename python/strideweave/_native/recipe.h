/*
 * Growable recipes for the extension: the token arrays and leaf values of
 * layout.h, built from Python objects. A buffer starts in its inline arrays
 * and moves to the heap only for large trees, so converting an index key
 * allocates nothing.
 */
#ifndef SWPY_RECIPE_H
#define SWPY_RECIPE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

#include "strideweave/layout.h"

/*
 * A growable recipe: tokens and leaf values. Starts in the inline arrays and
 * moves to the heap only for large trees.
 */
#define RBUF_INLINE 48

typedef struct {
    int32_t *tok;
    int64_t *val;
    int32_t ntok;
    int32_t nval;
    int32_t tokcap;
    int32_t valcap;
    int32_t tok_small[RBUF_INLINE];
    int64_t val_small[RBUF_INLINE];
} rbuf;

static inline void rbuf_init(rbuf *b) {
    b->tok = b->tok_small;
    b->val = b->val_small;
    b->ntok = 0;
    b->nval = 0;
    b->tokcap = RBUF_INLINE;
    b->valcap = RBUF_INLINE;
}

static inline void rbuf_free(rbuf *b) {
    if (b->tok != b->tok_small) {
        PyMem_Free(b->tok);
    }
    if (b->val != b->val_small) {
        PyMem_Free(b->val);
    }
    rbuf_init(b);
}

static inline int rbuf_too_big(void) {
    PyErr_SetString(PyExc_ValueError, "tree has too many nodes");
    return -1;
}

static inline int rbuf_grow_tok(rbuf *b) {
    if (b->tokcap > INT32_MAX / 2) {
        return rbuf_too_big();
    }
    int32_t cap = b->tokcap * 2;
    int32_t *p;
    if (b->tok == b->tok_small) {
        p = PyMem_Malloc((size_t)cap * sizeof(int32_t));
        if (p != NULL) {
            memcpy(p, b->tok, (size_t)b->ntok * sizeof(int32_t));
        }
    } else {
        p = PyMem_Realloc(b->tok, (size_t)cap * sizeof(int32_t));
    }
    if (p == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    b->tok = p;
    b->tokcap = cap;
    return 0;
}

static inline int rbuf_grow_val(rbuf *b) {
    if (b->valcap > INT32_MAX / 2) {
        return rbuf_too_big();
    }
    int32_t cap = b->valcap * 2;
    int64_t *p;
    if (b->val == b->val_small) {
        p = PyMem_Malloc((size_t)cap * sizeof(int64_t));
        if (p != NULL) {
            memcpy(p, b->val, (size_t)b->nval * sizeof(int64_t));
        }
    } else {
        p = PyMem_Realloc(b->val, (size_t)cap * sizeof(int64_t));
    }
    if (p == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    b->val = p;
    b->valcap = cap;
    return 0;
}

static inline int rbuf_tok(rbuf *b, int32_t tok) {
    if (b->ntok == b->tokcap && rbuf_grow_tok(b) < 0) {
        return -1;
    }
    b->tok[b->ntok++] = tok;
    return 0;
}

static inline int rbuf_leaf(rbuf *b, int64_t value) {
    if (rbuf_tok(b, SW_TOK_LEAF) < 0) {
        return -1;
    }
    if (b->nval == b->valcap && rbuf_grow_val(b) < 0) {
        return -1;
    }
    b->val[b->nval++] = value;
    return 0;
}

#endif /* SWPY_RECIPE_H */
