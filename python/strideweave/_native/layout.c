/*
 * Shape, Stride and Layout: the binding of strideweave/layout.h.
 *
 * The binding only translates. Python objects become recipes (the pre-order
 * token arrays of layout.h) and leaf values; the library validates them and
 * does every computation; results come back as new wrapper objects. Every
 * rule about admissible values, keys and the algebra lives in the library,
 * whose status codes become exceptions through swpy_raise.
 *
 * Conversions use small inline buffers and fall back to the heap for big
 * inputs, so the indexing hot path (Layout.index / Layout.__call__) allocates
 * nothing but its result.
 */
#include "py_layout.h"

#include <limits.h>
#include <string.h>

#if PY_VERSION_HEX < 0x030C0000
#include <structmember.h>
#define SWPY_T_PYSSIZET T_PYSSIZET
#define SWPY_READONLY READONLY
#else
#define SWPY_T_PYSSIZET Py_T_PYSSIZET
#define SWPY_READONLY Py_READONLY
#endif

#include "errors.h"
#include "py_extension.h"
#include "recipe.h"
#include "strideweave/layout.h"

typedef struct {
    PyObject_HEAD sw_tree *tree;
} TreeObject;

typedef struct {
    PyObject_HEAD vectorcallfunc vectorcall;
    sw_layout *layout;
    /* The Shape and Stride objects, made on first use. They hold no
     * reference back to the layout, so no cycle can form. */
    PyObject *shape;
    PyObject *stride;
} LayoutObject;

#define TREE(o) (((TreeObject *)(o))->tree)
#define LAYOUT(o) (((LayoutObject *)(o))->layout)

static inline swpy_state *state_of_type(PyTypeObject *type) {
    return (swpy_state *)PyType_GetModuleState(type);
}

static inline swpy_state *state_of(PyObject *self) {
    return state_of_type(Py_TYPE(self));
}

static inline int is_layout(swpy_state *st, PyObject *o) {
    return Py_TYPE(o) == st->layout_type;
}

static inline int is_tree_object(swpy_state *st, PyObject *o) {
    return Py_TYPE(o) == st->shape_type || Py_TYPE(o) == st->stride_type;
}

static const char *kind_name(sw_tree_kind kind) {
    return kind == SW_TREE_SHAPE ? "Shape" : "Stride";
}

/* Appends a whole tree's recipe and values (its top-level children). */
static int rbuf_tree(rbuf *b, const sw_tree *tree) {
    int32_t ntok = sw_tree_ntok(tree);
    const int32_t *rec = sw_tree_recipe(tree);
    const int64_t *val = sw_tree_values(tree);
    int32_t v = 0;
    for (int32_t i = 0; i < ntok; i++) {
        int rc = rec[i] == SW_TOK_LEAF ? rbuf_leaf(b, val[v++])
                                       : rbuf_tok(b, rec[i]);
        if (rc < 0) {
            return -1;
        }
    }
    return 0;
}

/* ------------------------------------------- Python objects to recipes */

static inline int is_text(PyObject *o) {
    return PyUnicode_Check(o) || PyBytes_Check(o) || PyByteArray_Check(o);
}

static void tree_dealloc(PyObject *self);
static void layout_dealloc(PyObject *self);

/*
 * Shape, Stride and Layout objects are sized sequences whose items are
 * objects of the same kind; they are never read as keys or as levels of
 * another kind, which would nest forever. Checking the destructor tells
 * them apart without the module state.
 */
static inline int is_wrapper(PyObject *o) {
    destructor d = Py_TYPE(o)->tp_dealloc;
    return d == tree_dealloc || d == layout_dealloc;
}

static int has_len(PyObject *o) {
    PyTypeObject *t = Py_TYPE(o);
    return (t->tp_as_sequence != NULL && t->tp_as_sequence->sq_length) ||
           (t->tp_as_mapping != NULL && t->tp_as_mapping->mp_length);
}

static int is_iterable(PyObject *o) {
    return Py_TYPE(o)->tp_iter != NULL || PySequence_Check(o);
}

/*
 * A Python integer (or an object with __index__) as a tree value. Values
 * below int64 become INT64_MIN, which the library rejects with its own
 * message for negative values; values above int64 cannot be represented.
 */
static int tree_value(PyObject *item, sw_tree_kind kind, int64_t *out) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(item, &overflow);
    if (v == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (overflow > 0) {
        PyErr_Format(PyExc_ValueError,
                     "%s value %S does not fit in a signed 64-bit integer",
                     kind_name(kind), item);
        return -1;
    }
    *out = overflow < 0 ? INT64_MIN : (int64_t)v;
    return 0;
}

static int tree_level(swpy_state *st, rbuf *b, PyObject *level,
                      sw_tree_kind kind);

/* One element of a Shape or Stride level. */
static int tree_element(swpy_state *st, rbuf *b, PyObject *item,
                        sw_tree_kind kind) {
    int64_t v;
    if (PyLong_Check(item)) {
        if (tree_value(item, kind, &v) < 0) {
            return -1;
        }
        return rbuf_leaf(b, v);
    }
    if (is_tree_object(st, item)) {
        /* A one-leaf flat tree collapses to its integer; any other tree
         * (the empty one included) becomes a nested level. */
        const sw_tree *t = TREE(item);
        if (sw_tree_rank(t) == 1 && sw_tree_depth(t) <= 1) {
            return rbuf_leaf(b, sw_tree_values(t)[0]);
        }
        if (rbuf_tok(b, SW_TOK_PUSH) < 0 || rbuf_tree(b, t) < 0) {
            return -1;
        }
        return rbuf_tok(b, SW_TOK_POP);
    }
    if (!is_text(item) && !is_wrapper(item) && has_len(item) &&
        is_iterable(item)) {
        if (Py_EnterRecursiveCall(" while converting a nested level")) {
            return -1;
        }
        int rc = rbuf_tok(b, SW_TOK_PUSH);
        if (rc == 0) {
            rc = tree_level(st, b, item, kind);
        }
        if (rc == 0) {
            rc = rbuf_tok(b, SW_TOK_POP);
        }
        Py_LeaveRecursiveCall();
        return rc;
    }
    if (PyIndex_Check(item)) {
        if (tree_value(item, kind, &v) < 0) {
            return -1;
        }
        return rbuf_leaf(b, v);
    }
    PyErr_Format(PyExc_ValueError,
                 "%s contains an element that is not an integer or a iterable",
                 kind_name(kind));
    return -1;
}

/* The elements of an iterable, as one level of the tree. */
static int tree_level(swpy_state *st, rbuf *b, PyObject *level,
                      sw_tree_kind kind) {
    PyObject *seq = PySequence_Fast(level, "expected an iterable");
    if (seq == NULL) {
        return -1;
    }
    int rc = 0;
    /* Re-read the size and hold each item: an element's __index__ may run
     * Python code that mutates a list being converted. */
    for (Py_ssize_t i = 0; rc == 0 && i < PySequence_Fast_GET_SIZE(seq); i++) {
        PyObject *item = Py_NewRef(PySequence_Fast_GET_ITEM(seq, i));
        rc = tree_element(st, b, item, kind);
        Py_DECREF(item);
    }
    Py_DECREF(seq);
    return rc;
}

/*
 * The one-argument form: an int n means [n], a Shape or Stride is copied,
 * any other iterable is the top level. Text is refused rather than iterated
 * (a one-character string would otherwise nest forever).
 */
static int tree_single(swpy_state *st, rbuf *b, PyObject *arg,
                       sw_tree_kind kind) {
    int64_t v;
    if (PyLong_Check(arg)) {
        if (tree_value(arg, kind, &v) < 0) {
            return -1;
        }
        return rbuf_leaf(b, v);
    }
    if (is_tree_object(st, arg)) {
        return rbuf_tree(b, TREE(arg));
    }
    if (!is_text(arg) && !is_wrapper(arg) && is_iterable(arg)) {
        return tree_level(st, b, arg, kind);
    }
    if (!is_text(arg) && PyIndex_Check(arg)) {
        if (tree_value(arg, kind, &v) < 0) {
            return -1;
        }
        return rbuf_leaf(b, v);
    }
    PyErr_Format(PyExc_TypeError,
                 "%s input must be an integer or an iterable, not '%.200s'",
                 kind_name(kind), Py_TYPE(arg)->tp_name);
    return -1;
}

/* Makes a tree of the given kind from the one-argument form. */
static int tree_from_object(swpy_state *st, PyObject *arg, sw_tree_kind kind,
                            sw_tree **out) {
    rbuf b;
    rbuf_init(&b);
    int rc = -1;
    if (tree_single(st, &b, arg, kind) < 0) {
        goto fail;
    }
    sw_status s = sw_tree_new(kind, b.ntok, b.tok, b.val, out);
    if (s != SW_OK) {
        swpy_raise(s);
        goto fail;
    }
    rc = 0;
fail:
    rbuf_free(&b);
    return rc;
}

/*
 * Keys. A coordinate is an int (a logical index into its mode) or a
 * sequence of coordinates. An int that does not fit int64 cannot be in any
 * domain, so it is clamped to a value the library rejects ("Key is not in
 * domain of shape"); the library decides every range question.
 */
static inline int64_t key_int(PyObject *o, int *err) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (v == -1 && !overflow && PyErr_Occurred()) {
        *err = 1;
        return 0;
    }
    if (overflow) {
        return overflow > 0 ? INT64_MAX : -1;
    }
    return (int64_t)v;
}

static inline int is_key_sequence(PyObject *o) {
    return PyTuple_Check(o) || PyList_Check(o) ||
           (!is_text(o) && !is_wrapper(o) && PySequence_Check(o) && has_len(o));
}

static int key_level(rbuf *b, PyObject *seq_obj);

static int key_coord(rbuf *b, PyObject *c) {
    int err = 0;
    if (PyLong_Check(c)) {
        int64_t v = key_int(c, &err);
        return err ? -1 : rbuf_leaf(b, v);
    }
    if (is_key_sequence(c)) {
        if (Py_EnterRecursiveCall(" while converting a layout key")) {
            return -1;
        }
        int rc = rbuf_tok(b, SW_TOK_PUSH);
        if (rc == 0) {
            rc = key_level(b, c);
        }
        if (rc == 0) {
            rc = rbuf_tok(b, SW_TOK_POP);
        }
        Py_LeaveRecursiveCall();
        return rc;
    }
    if (PyIndex_Check(c)) {
        PyObject *n = PyNumber_Index(c);
        if (n == NULL) {
            return -1;
        }
        int64_t v = key_int(n, &err);
        Py_DECREF(n);
        return err ? -1 : rbuf_leaf(b, v);
    }
    PyErr_Format(PyExc_TypeError,
                 "Layout coordinates must be integers or sequences of "
                 "coordinates, not '%.200s'",
                 Py_TYPE(c)->tp_name);
    return -1;
}

static int key_level(rbuf *b, PyObject *seq_obj) {
    int rc = 0;
    if (PyTuple_Check(seq_obj)) {
        Py_ssize_t n = PyTuple_GET_SIZE(seq_obj);
        for (Py_ssize_t i = 0; rc == 0 && i < n; i++) {
            rc = key_coord(b, PyTuple_GET_ITEM(seq_obj, i));
        }
        return rc;
    }
    PyObject *seq = PySequence_Fast(seq_obj, "expected a sequence");
    if (seq == NULL) {
        return -1;
    }
    for (Py_ssize_t i = 0; rc == 0 && i < PySequence_Fast_GET_SIZE(seq); i++) {
        PyObject *item = Py_NewRef(PySequence_Fast_GET_ITEM(seq, i));
        rc = key_coord(b, item);
        Py_DECREF(item);
    }
    Py_DECREF(seq);
    return rc;
}

/*
 * Id trees (profiles, rearrange outputs and selections): a tuple (Tree
 * included) is a subtree; Node.Leaf or an int is an unnamed leaf; a Node.id
 * marker is token k when ids are kept, else an unnamed leaf.
 */
static int idtree_level(swpy_state *st, rbuf *b, PyObject *tuple,
                        int keep_ids) {
    Py_ssize_t n = PyTuple_GET_SIZE(tuple);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyTuple_GET_ITEM(tuple, i);
        int rc;
        if (PyTuple_Check(item)) {
            if (Py_EnterRecursiveCall(" while converting a Tree")) {
                return -1;
            }
            rc = rbuf_tok(b, SW_TOK_PUSH);
            if (rc == 0) {
                rc = idtree_level(st, b, item, keep_ids);
            }
            if (rc == 0) {
                rc = rbuf_tok(b, SW_TOK_POP);
            }
            Py_LeaveRecursiveCall();
        } else if (item == st->node_leaf || PyLong_Check(item)) {
            rc = rbuf_tok(b, SW_TOK_LEAF);
        } else if (PyObject_TypeCheck(item, (PyTypeObject *)st->node_id_type)) {
            int32_t tok = SW_TOK_LEAF;
            if (keep_ids) {
                PyObject *id = PyObject_GetAttr(item, st->str_id);
                if (id == NULL) {
                    return -1;
                }
                int overflow = 0;
                long long k = PyLong_AsLongLongAndOverflow(id, &overflow);
                Py_DECREF(id);
                if (k == -1 && !overflow && PyErr_Occurred()) {
                    return -1;
                }
                /* No tree has 2^31 pieces: a larger id is out of range,
                 * which the library reports. */
                if (overflow > 0 || k > INT32_MAX) {
                    k = INT32_MAX;
                }
                if (overflow < 0 || k < 0) {
                    PyErr_SetString(PyExc_ValueError,
                                    "Node leaf id must be non-negative");
                    return -1;
                }
                tok = (int32_t)k;
            }
            rc = rbuf_tok(b, tok);
        } else {
            PyErr_Format(PyExc_ValueError,
                         "Tree can only accept integers or Node.Leaf for leaf "
                         "markers, got %R",
                         item);
            rc = -1;
        }
        if (rc < 0) {
            return -1;
        }
    }
    return 0;
}

/* The root of an id tree must be a tuple (a Tree); what names it. */
static int idtree_root(swpy_state *st, rbuf *b, PyObject *tree, int keep_ids,
                       const char *what) {
    if (swpy_require_tree_types(st) < 0) {
        return -1;
    }
    if (!PyTuple_Check(tree)) {
        PyErr_Format(PyExc_ValueError, "%s must be a Tree", what);
        return -1;
    }
    return idtree_level(st, b, tree, keep_ids);
}

/* ------------------------------------------- recipes to Python objects */

/*
 * Builds nested Python objects from a recipe. leaf makes the object of one
 * leaf token; wrap (optional) turns the tuple of a nested level into its
 * final object (a Tree, say); without it nested levels stay tuples.
 */
typedef struct recipe_out recipe_out;
struct recipe_out {
    PyObject *(*leaf)(recipe_out *o, int32_t tok, int64_t value);
    PyObject *(*wrap)(recipe_out *o, PyObject *tuple);
    swpy_state *st;
};

static PyObject *recipe_level(recipe_out *o, const int32_t *rec, int32_t ntok,
                              const int64_t *val, int32_t *pos, int32_t *vpos) {
    Py_ssize_t n = 0;
    int32_t depth = 0;
    for (int32_t i = *pos; i < ntok; i++) {
        int32_t t = rec[i];
        if (t == SW_TOK_PUSH) {
            n += depth == 0;
            depth++;
        } else if (t == SW_TOK_POP) {
            if (depth == 0) {
                break;
            }
            depth--;
        } else {
            n += depth == 0;
        }
    }
    PyObject *tuple = PyTuple_New(n);
    if (tuple == NULL) {
        return NULL;
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        int32_t t = rec[*pos];
        PyObject *child;
        if (t == SW_TOK_PUSH) {
            (*pos)++;
            if (Py_EnterRecursiveCall(" while building a nested level")) {
                goto fail;
            }
            PyObject *inner = recipe_level(o, rec, ntok, val, pos, vpos);
            Py_LeaveRecursiveCall();
            if (inner == NULL) {
                goto fail;
            }
            (*pos)++; /* the matching POP */
            if (o->wrap != NULL) {
                child = o->wrap(o, inner);
                Py_DECREF(inner);
            } else {
                child = inner;
            }
        } else {
            child = o->leaf(o, t, val != NULL ? val[*vpos] : 0);
            (*vpos)++;
            (*pos)++;
        }
        if (child == NULL) {
            goto fail;
        }
        PyTuple_SET_ITEM(tuple, k, child);
    }
    return tuple;
fail:
    Py_DECREF(tuple);
    return NULL;
}

static PyObject *recipe_build(recipe_out *o, const int32_t *rec, int32_t ntok,
                              const int64_t *val) {
    int32_t pos = 0, vpos = 0;
    return recipe_level(o, rec, ntok, val, &pos, &vpos);
}

static PyObject *int_leaf(recipe_out *o, int32_t tok, int64_t value) {
    return PyLong_FromLongLong(value);
}

/* The nested tuple of ints of a tree's top level. */
static PyObject *tree_to_tuple(const sw_tree *tree) {
    recipe_out o = {int_leaf, NULL, NULL};
    return recipe_build(&o, sw_tree_recipe(tree), sw_tree_ntok(tree),
                        sw_tree_values(tree));
}

static PyObject *node_leaf_of(recipe_out *o, int32_t tok, int64_t value) {
    if (tok >= 0) {
        return PyObject_CallFunction(o->st->node_id_type, "i", (int)tok);
    }
    return Py_NewRef(o->st->node_leaf);
}

static PyObject *tree_wrap_level(recipe_out *o, PyObject *tuple) {
    return PyObject_Call(o->st->tree_type, tuple, NULL);
}

/* A Python Tree from an id recipe (token k >= 0 becomes Node.id(k)). */
static PyObject *idtree_to_tree(swpy_state *st, const int32_t *rec,
                                int32_t ntok) {
    recipe_out o = {node_leaf_of, tree_wrap_level, st};
    PyObject *top = recipe_build(&o, rec, ntok, NULL);
    if (top == NULL) {
        return NULL;
    }
    PyObject *tree = tree_wrap_level(&o, top);
    Py_DECREF(top);
    return tree;
}

/* ------------------------------------------------------ wrapper objects */

/* Wraps an owned tree; the reference is released if wrapping fails. */
static PyObject *tree_wrap(PyTypeObject *type, sw_tree *tree) {
    TreeObject *self = (TreeObject *)type->tp_alloc(type, 0);
    if (self == NULL) {
        sw_tree_unref(tree);
        return NULL;
    }
    self->tree = tree;
    return (PyObject *)self;
}

static PyObject *layout_vectorcall(PyObject *callable, PyObject *const *args,
                                   size_t nargsf, PyObject *kwnames);

/* Wraps an owned layout; the reference is released if wrapping fails. */
static PyObject *layout_wrap(swpy_state *st, sw_layout *layout) {
    PyTypeObject *type = st->layout_type;
    LayoutObject *self = (LayoutObject *)type->tp_alloc(type, 0);
    if (self == NULL) {
        sw_layout_unref(layout);
        return NULL;
    }
    self->vectorcall = layout_vectorcall;
    self->layout = layout;
    self->shape = NULL;
    self->stride = NULL;
    return (PyObject *)self;
}

/*
 * The usual ending of a call that produces a layout. out is read only after
 * the call that computes s has run (arguments are evaluated in no fixed
 * order, hence the pointer).
 */
static PyObject *layout_result(swpy_state *st, sw_status s, sw_layout **out) {
    if (s != SW_OK) {
        return swpy_raise(s);
    }
    return layout_wrap(st, *out);
}

static int layout_arg(swpy_state *st, PyObject *o, const char *name,
                      sw_layout **out) {
    if (!is_layout(st, o)) {
        PyErr_Format(PyExc_TypeError, "%s must be a Layout, not '%.200s'", name,
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    *out = LAYOUT(o);
    return 0;
}

/* A sequence of Layout objects as a borrowed array (held by seq). */
#define TILER_INLINE 8

typedef struct {
    PyObject *seq;
    sw_layout **items;
    int32_t n;
    sw_layout *small[TILER_INLINE];
} tiler_arg;

static void tiler_free(tiler_arg *t) {
    if (t->items != t->small) {
        PyMem_Free(t->items);
    }
    t->items = t->small;
    Py_CLEAR(t->seq);
}

static int tiler_init(swpy_state *st, tiler_arg *t, PyObject *obj,
                      const char *name) {
    t->items = t->small;
    t->n = 0;
    t->seq = NULL;
    if (is_text(obj) || !is_iterable(obj)) {
        PyErr_Format(PyExc_TypeError,
                     "%s must be a sequence of Layout objects, not '%.200s'",
                     name, Py_TYPE(obj)->tp_name);
        return -1;
    }
    t->seq = PySequence_Fast(obj, "tiler must be a sequence of Layouts");
    if (t->seq == NULL) {
        return -1;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(t->seq);
    if (n > INT32_MAX) {
        PyErr_Format(PyExc_ValueError, "%s is too long", name);
        goto fail;
    }
    if (n > TILER_INLINE) {
        t->items = PyMem_Malloc((size_t)n * sizeof(sw_layout *));
        if (t->items == NULL) {
            t->items = t->small;
            PyErr_NoMemory();
            goto fail;
        }
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(t->seq, i);
        if (!is_layout(st, item)) {
            PyErr_Format(PyExc_TypeError,
                         "%s must be a sequence of Layout objects; item %zd "
                         "is '%.200s'",
                         name, i, Py_TYPE(item)->tp_name);
            goto fail;
        }
        t->items[i] = LAYOUT(item);
    }
    t->n = (int32_t)n;
    return 0;
fail:
    tiler_free(t);
    return -1;
}

/* Top-level positions of a slice, as int32 indices for *_select. */
typedef struct {
    int32_t *idx;
    int32_t n;
    int32_t small[16];
} slice_arg;

static void slice_free(slice_arg *s) {
    if (s->idx != s->small) {
        PyMem_Free(s->idx);
    }
    s->idx = s->small;
}

static int slice_init(slice_arg *s, PyObject *slice, Py_ssize_t len) {
    Py_ssize_t start, stop, step;
    s->idx = s->small;
    s->n = 0;
    if (PySlice_Unpack(slice, &start, &stop, &step) < 0) {
        return -1;
    }
    Py_ssize_t n = PySlice_AdjustIndices(len, &start, &stop, step);
    if (n > 16) {
        s->idx = PyMem_Malloc((size_t)n * sizeof(int32_t));
        if (s->idx == NULL) {
            s->idx = s->small;
            PyErr_NoMemory();
            return -1;
        }
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        s->idx[i] = (int32_t)(start + i * step);
    }
    s->n = (int32_t)n;
    return 0;
}

/* A Python integer index into a container of len elements (may wrap). */
static int position_arg(PyObject *key, Py_ssize_t len, const char *what,
                        int32_t *out) {
    Py_ssize_t i = PyNumber_AsSsize_t(key, PyExc_IndexError);
    if (i == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (i < 0) {
        i += len;
    }
    if (i < 0 || i >= len) {
        PyErr_Format(PyExc_IndexError, "%s index out of range", what);
        return -1;
    }
    *out = (int32_t)i;
    return 0;
}

/* An int64 argument (TypeError for non-integers, OverflowError if big). */
static int int64_arg(PyObject *o, int64_t *out) {
    long long v = PyLong_AsLongLong(o);
    if (v == -1 && PyErr_Occurred()) {
        return -1;
    }
    *out = (int64_t)v;
    return 0;
}

/* ------------------------------------------------------- Shape, Stride */

static sw_tree_kind kind_of_type(swpy_state *st, PyTypeObject *type) {
    return type == st->shape_type ? SW_TREE_SHAPE : SW_TREE_STRIDE;
}

static PyObject *tree_tp_new(PyTypeObject *type, PyObject *args,
                             PyObject *kwds) {
    swpy_state *st = state_of_type(type);
    sw_tree_kind kind = kind_of_type(st, type);
    sw_tree *tree = NULL;
    rbuf b;
    rbuf_init(&b);
    if (kwds != NULL && PyDict_GET_SIZE(kwds) != 0) {
        PyErr_Format(PyExc_TypeError, "%s() takes no keyword arguments",
                     kind_name(kind));
        goto fail;
    }
    Py_ssize_t nargs = PyTuple_GET_SIZE(args);
    if (nargs == 1 && Py_TYPE(PyTuple_GET_ITEM(args, 0)) == type) {
        /* Immutable: a Shape of a Shape is that Shape. */
        return Py_NewRef(PyTuple_GET_ITEM(args, 0));
    }
    int rc = nargs == 1 ? tree_single(st, &b, PyTuple_GET_ITEM(args, 0), kind)
                        : tree_level(st, &b, args, kind);
    if (rc < 0) {
        goto fail;
    }
    sw_status s = sw_tree_new(kind, b.ntok, b.tok, b.val, &tree);
    if (s != SW_OK) {
        swpy_raise(s);
        goto fail;
    }
    rbuf_free(&b);
    return tree_wrap(type, tree);
fail:
    rbuf_free(&b);
    return NULL;
}

static void tree_dealloc(PyObject *self) {
    PyTypeObject *type = Py_TYPE(self);
    sw_tree_unref(TREE(self));
    type->tp_free(self);
    Py_DECREF(type);
}

static PyObject *tree_repr(PyObject *self) {
    PyObject *top = tree_to_tuple(TREE(self));
    if (top == NULL) {
        return NULL;
    }
    PyObject *r = PyUnicode_FromFormat(
        "%s<%R>", kind_name(sw_tree_get_kind(TREE(self))), top);
    Py_DECREF(top);
    return r;
}

static PyObject *tree_richcompare(PyObject *self, PyObject *other, int op) {
    if ((op != Py_EQ && op != Py_NE) || Py_TYPE(other) != Py_TYPE(self)) {
        Py_RETURN_NOTIMPLEMENTED;
    }
    int eq = sw_tree_equal(TREE(self), TREE(other));
    return PyBool_FromLong(op == Py_EQ ? eq : !eq);
}

static Py_ssize_t tree_length(PyObject *self) {
    return sw_tree_rank(TREE(self));
}

static PyObject *tree_child(PyObject *self, int32_t i) {
    sw_tree *child = NULL;
    sw_status s = sw_tree_child(TREE(self), i, &child);
    if (s != SW_OK) {
        return swpy_raise(s);
    }
    return tree_wrap(Py_TYPE(self), child);
}

static PyObject *tree_sq_item(PyObject *self, Py_ssize_t i) {
    if (i < 0 || i >= sw_tree_rank(TREE(self))) {
        PyErr_Format(PyExc_IndexError, "%s index out of range",
                     kind_name(sw_tree_get_kind(TREE(self))));
        return NULL;
    }
    return tree_child(self, (int32_t)i);
}

static PyObject *tree_subscript(PyObject *self, PyObject *key) {
    const sw_tree *tree = TREE(self);
    const char *name = kind_name(sw_tree_get_kind(tree));
    if (PySlice_Check(key)) {
        slice_arg sl;
        sw_tree *out = NULL;
        if (slice_init(&sl, key, sw_tree_rank(tree)) < 0) {
            return NULL;
        }
        sw_status s = sw_tree_select(tree, sl.n, sl.idx, &out);
        slice_free(&sl);
        if (s != SW_OK) {
            return swpy_raise(s);
        }
        return tree_wrap(Py_TYPE(self), out);
    }
    if (!PyIndex_Check(key)) {
        PyErr_Format(PyExc_TypeError,
                     "%s indices must be integers or slices, not '%.200s'",
                     name, Py_TYPE(key)->tp_name);
        return NULL;
    }
    int32_t i;
    if (position_arg(key, sw_tree_rank(tree), name, &i) < 0) {
        return NULL;
    }
    return tree_child(self, i);
}

static PyObject *tree_iter(PyObject *self) {
    return PySeqIter_New(self);
}

static int tree_is_int(const sw_tree *tree) {
    return sw_tree_rank(tree) <= 1 && sw_tree_depth(tree) <= 1;
}

static PyObject *tree_int(PyObject *self) {
    const sw_tree *tree = TREE(self);
    const char *name = kind_name(sw_tree_get_kind(tree));
    if (!tree_is_int(tree)) {
        PyErr_Format(PyExc_ValueError, "%s can not be represented as a integer",
                     name);
        return NULL;
    }
    if (sw_tree_rank(tree) == 0) {
        PyErr_Format(PyExc_IndexError, "%s is empty", name);
        return NULL;
    }
    return PyLong_FromLongLong(sw_tree_values(tree)[0]);
}

static PyObject *tree_get_top_level(PyObject *self, void *closure) {
    return tree_to_tuple(TREE(self));
}

static PyObject *tree_get_depth(PyObject *self, void *closure) {
    return PyLong_FromLong(sw_tree_depth(TREE(self)));
}

static PyObject *tree_get_is_int(PyObject *self, void *closure) {
    return PyBool_FromLong(tree_is_int(TREE(self)));
}

static PyObject *tree_get_size(PyObject *self, void *closure) {
    return PyLong_FromLongLong(sw_tree_size(TREE(self)));
}

/* Shape.concat / Stride.concat and append: cls is the class. */
static PyObject *tree_join(PyObject *cls, PyObject *const *args,
                           Py_ssize_t nargs, int append) {
    PyTypeObject *type = (PyTypeObject *)cls;
    swpy_state *st = state_of_type(type);
    const char *name = kind_name(kind_of_type(st, type));
    const char *fn = append ? "append" : "concat";
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError,
                     "%s.%s() takes exactly 2 arguments (%zd given)", name, fn,
                     nargs);
        return NULL;
    }
    if (Py_TYPE(args[0]) != type || Py_TYPE(args[1]) != type) {
        PyErr_Format(PyExc_TypeError, "%s.%s() expects two %s objects", name,
                     fn, name);
        return NULL;
    }
    sw_tree *out = NULL;
    sw_status s = append ? sw_tree_append(TREE(args[0]), TREE(args[1]), &out)
                         : sw_tree_concat(TREE(args[0]), TREE(args[1]), &out);
    if (s != SW_OK) {
        return swpy_raise(s);
    }
    return tree_wrap(type, out);
}

static PyObject *tree_concat(PyObject *cls, PyObject *const *args,
                             Py_ssize_t nargs) {
    return tree_join(cls, args, nargs, 0);
}

static PyObject *tree_append(PyObject *cls, PyObject *const *args,
                             Py_ssize_t nargs) {
    return tree_join(cls, args, nargs, 1);
}

static PyObject *tree_reduce(PyObject *self, PyObject *unused) {
    PyObject *top = tree_to_tuple(TREE(self));
    if (top == NULL) {
        return NULL;
    }
    return Py_BuildValue("(O(N))", (PyObject *)Py_TYPE(self), top);
}

/* -------------------------------------------------------------- Layout */

static PyObject *layout_tp_new(PyTypeObject *type, PyObject *args,
                               PyObject *kwds) {
    static char *kwlist[] = {"shape", "stride", NULL};
    PyObject *shape, *stride;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO:Layout", kwlist, &shape,
                                     &stride)) {
        return NULL;
    }
    swpy_state *st = state_of_type(type);
    if (Py_TYPE(shape) != st->shape_type) {
        PyErr_SetString(PyExc_ValueError, "shape input must be a Shape object");
        return NULL;
    }
    if (Py_TYPE(stride) != st->stride_type) {
        PyErr_SetString(PyExc_ValueError,
                        "stride input must be a Stride object");
        return NULL;
    }
    sw_layout *layout = NULL;
    sw_status s = sw_layout_new(TREE(shape), TREE(stride), &layout);
    if (s != SW_OK) {
        return swpy_raise(s);
    }
    LayoutObject *self = (LayoutObject *)layout_wrap(st, layout);
    if (self == NULL) {
        return NULL;
    }
    self->shape = Py_NewRef(shape);
    self->stride = Py_NewRef(stride);
    return (PyObject *)self;
}

static void layout_dealloc(PyObject *self) {
    PyTypeObject *type = Py_TYPE(self);
    LayoutObject *l = (LayoutObject *)self;
    sw_layout_unref(l->layout);
    Py_XDECREF(l->shape);
    Py_XDECREF(l->stride);
    type->tp_free(self);
    Py_DECREF(type);
}

static PyObject *layout_repr(PyObject *self) {
    char small[256];
    int64_t n = sw_layout_format(LAYOUT(self), small, sizeof small);
    if (n < (int64_t)sizeof small) {
        return PyUnicode_FromStringAndSize(small, (Py_ssize_t)n);
    }
    if (n >= PY_SSIZE_T_MAX) {
        return PyErr_NoMemory();
    }
    char *buf = PyMem_Malloc((size_t)n + 1);
    if (buf == NULL) {
        return PyErr_NoMemory();
    }
    sw_layout_format(LAYOUT(self), buf, n + 1);
    PyObject *r = PyUnicode_FromStringAndSize(buf, (Py_ssize_t)n);
    PyMem_Free(buf);
    return r;
}

static PyObject *layout_richcompare(PyObject *self, PyObject *other, int op) {
    if ((op != Py_EQ && op != Py_NE) || Py_TYPE(other) != Py_TYPE(self)) {
        Py_RETURN_NOTIMPLEMENTED;
    }
    int eq = sw_layout_equal(LAYOUT(self), LAYOUT(other));
    return PyBool_FromLong(op == Py_EQ ? eq : !eq);
}

/* ---- indexing: the hot path */

static PyObject *layout_index_impl(PyObject *self, PyObject *key) {
    int64_t out = 0;
    sw_status s;
    int err = 0;
    if (PyLong_Check(key)) {
        int64_t i = key_int(key, &err);
        if (err) {
            return NULL;
        }
        s = sw_layout_index(LAYOUT(self), i, &out);
    } else if (is_key_sequence(key)) {
        rbuf b;
        rbuf_init(&b);
        if (key_level(&b, key) < 0) {
            rbuf_free(&b);
            return NULL;
        }
        s = sw_layout_index_coord(LAYOUT(self), b.ntok, b.tok, b.val, &out);
        rbuf_free(&b);
    } else if (!is_text(key) && PyIndex_Check(key)) {
        PyObject *n = PyNumber_Index(key);
        if (n == NULL) {
            return NULL;
        }
        int64_t i = key_int(n, &err);
        Py_DECREF(n);
        if (err) {
            return NULL;
        }
        s = sw_layout_index(LAYOUT(self), i, &out);
    } else {
        PyErr_Format(PyExc_TypeError,
                     "Layout key must be an integer or a sequence of "
                     "coordinates, not '%.200s'",
                     Py_TYPE(key)->tp_name);
        return NULL;
    }
    if (s != SW_OK) {
        return swpy_raise(s);
    }
    return PyLong_FromLongLong(out);
}

static PyObject *layout_vectorcall(PyObject *callable, PyObject *const *args,
                                   size_t nargsf, PyObject *kwnames) {
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (kwnames != NULL && PyTuple_GET_SIZE(kwnames) != 0) {
        PyErr_SetString(PyExc_TypeError,
                        "Layout() call takes no keyword arguments");
        return NULL;
    }
    if (nargs != 1) {
        PyErr_Format(PyExc_TypeError,
                     "Layout() call takes exactly one key (%zd given)", nargs);
        return NULL;
    }
    return layout_index_impl(callable, args[0]);
}

static PyObject *layout_index(PyObject *self, PyObject *key) {
    return layout_index_impl(self, key);
}

static PyObject *layout_get_index(PyObject *cls, PyObject *const *args,
                                  Py_ssize_t nargs) {
    swpy_state *st = state_of_type((PyTypeObject *)cls);
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError,
                     "get_index() takes exactly 2 arguments (%zd given)",
                     nargs);
        return NULL;
    }
    if (!is_layout(st, args[0])) {
        PyErr_SetString(PyExc_ValueError,
                        "layout input must be a Layout object");
        return NULL;
    }
    return layout_index_impl(args[0], args[1]);
}

/* ---- properties */

static PyObject *layout_get_shape(PyObject *self, void *closure) {
    LayoutObject *l = (LayoutObject *)self;
    if (l->shape == NULL) {
        swpy_state *st = state_of(self);
        l->shape = tree_wrap(st->shape_type,
                             sw_tree_retain(sw_layout_shape(l->layout)));
        if (l->shape == NULL) {
            return NULL;
        }
    }
    return Py_NewRef(l->shape);
}

static PyObject *layout_get_stride(PyObject *self, void *closure) {
    LayoutObject *l = (LayoutObject *)self;
    if (l->stride == NULL) {
        swpy_state *st = state_of(self);
        l->stride = tree_wrap(st->stride_type,
                              sw_tree_retain(sw_layout_stride(l->layout)));
        if (l->stride == NULL) {
            return NULL;
        }
    }
    return Py_NewRef(l->stride);
}

static PyObject *layout_get_size(PyObject *self, void *closure) {
    return PyLong_FromLongLong(sw_layout_size(LAYOUT(self)));
}

static PyObject *layout_get_cosize(PyObject *self, void *closure) {
    return PyLong_FromLongLong(sw_layout_cosize(LAYOUT(self)));
}

static PyObject *layout_get_depth(PyObject *self, void *closure) {
    return PyLong_FromLong(sw_layout_depth(LAYOUT(self)));
}

static PyObject *layout_get_rank(PyObject *self, void *closure) {
    return PyLong_FromLong(sw_layout_rank(LAYOUT(self)));
}

static PyObject *layout_get_is_leaf(PyObject *self, void *closure) {
    return PyBool_FromLong(sw_layout_is_leaf(LAYOUT(self)));
}

/* ---- container protocol */

static Py_ssize_t layout_length(PyObject *self) {
    return sw_layout_rank(LAYOUT(self));
}

static PyObject *layout_mode(PyObject *self, int32_t i) {
    sw_layout *out = NULL;
    return layout_result(state_of(self), sw_layout_mode(LAYOUT(self), i, &out),
                         &out);
}

static PyObject *layout_sq_item(PyObject *self, Py_ssize_t i) {
    if (i < 0 || i >= sw_layout_rank(LAYOUT(self))) {
        PyErr_SetString(PyExc_IndexError, "Layout index out of range");
        return NULL;
    }
    return layout_mode(self, (int32_t)i);
}

static PyObject *layout_subscript(PyObject *self, PyObject *key) {
    const sw_layout *layout = LAYOUT(self);
    if (PySlice_Check(key)) {
        slice_arg sl;
        sw_layout *out = NULL;
        if (slice_init(&sl, key, sw_layout_rank(layout)) < 0) {
            return NULL;
        }
        sw_status s = sw_layout_select(layout, sl.n, sl.idx, &out);
        slice_free(&sl);
        return layout_result(state_of(self), s, &out);
    }
    if (!PyIndex_Check(key)) {
        PyErr_Format(PyExc_TypeError,
                     "Layout indices must be integers or slices, not '%.200s'",
                     Py_TYPE(key)->tp_name);
        return NULL;
    }
    int32_t i;
    if (position_arg(key, sw_layout_rank(layout), "Layout", &i) < 0) {
        return NULL;
    }
    return layout_mode(self, i);
}

static PyObject *layout_iter(PyObject *self) {
    return PySeqIter_New(self);
}

static PyObject *layout_nb_add(PyObject *a, PyObject *b) {
    PyTypeObject *type = Py_TYPE(a);
    if (Py_TYPE(b) != type) {
        Py_RETURN_NOTIMPLEMENTED;
    }
    sw_layout *out = NULL;
    return layout_result(state_of(a),
                         sw_layout_concat(LAYOUT(a), LAYOUT(b), &out), &out);
}

/* ---- copying and pickling: layouts are immutable values */

static PyObject *layout_copy(PyObject *self, PyObject *unused) {
    LayoutObject *l = (LayoutObject *)self;
    LayoutObject *r = (LayoutObject *)layout_wrap(state_of(self),
                                                  sw_layout_retain(l->layout));
    if (r == NULL) {
        return NULL;
    }
    r->shape = Py_XNewRef(l->shape);
    r->stride = Py_XNewRef(l->stride);
    return (PyObject *)r;
}

static PyObject *layout_deepcopy(PyObject *self, PyObject *memo) {
    return layout_copy(self, NULL);
}

static PyObject *layout_reduce(PyObject *self, PyObject *unused) {
    PyObject *shape = layout_get_shape(self, NULL);
    if (shape == NULL) {
        return NULL;
    }
    PyObject *stride = layout_get_stride(self, NULL);
    if (stride == NULL) {
        Py_DECREF(shape);
        return NULL;
    }
    return Py_BuildValue("(O(NN))", (PyObject *)Py_TYPE(self), shape, stride);
}

/* ---- construction */

static PyObject *layout_empty(PyObject *cls, PyObject *unused) {
    sw_layout *out = NULL;
    return layout_result(state_of_type((PyTypeObject *)cls),
                         sw_layout_empty(&out), &out);
}

static PyObject *layout_leaf(PyObject *cls, PyObject *const *args,
                             Py_ssize_t nargs) {
    swpy_state *st = state_of_type((PyTypeObject *)cls);
    sw_tree *shape = NULL, *stride = NULL;
    sw_layout *out = NULL;
    PyObject *result = NULL;
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError,
                     "leaf() takes exactly 2 arguments (%zd given)", nargs);
        return NULL;
    }
    if (tree_from_object(st, args[0], SW_TREE_SHAPE, &shape) < 0 ||
        tree_from_object(st, args[1], SW_TREE_STRIDE, &stride) < 0) {
        goto fail;
    }
    result = layout_result(st, sw_layout_new(shape, stride, &out), &out);
fail:
    sw_tree_unref(shape);
    sw_tree_unref(stride);
    return result;
}

static PyObject *layout_concat(PyObject *self, PyObject *other) {
    swpy_state *st = state_of(self);
    sw_layout *b, *out = NULL;
    if (layout_arg(st, other, "other", &b) < 0) {
        return NULL;
    }
    return layout_result(st, sw_layout_concat(LAYOUT(self), b, &out), &out);
}

static PyObject *layout_append(PyObject *self, PyObject *other) {
    swpy_state *st = state_of(self);
    sw_layout *b, *out = NULL;
    if (layout_arg(st, other, "other", &b) < 0) {
        return NULL;
    }
    return layout_result(st, sw_layout_append(LAYOUT(self), b, &out), &out);
}

static PyObject *layout_make_layout(PyObject *cls, PyObject *args) {
    swpy_state *st = state_of_type((PyTypeObject *)cls);
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    sw_layout *small[TILER_INLINE];
    sw_layout **items = small;
    sw_layout *out = NULL;
    PyObject *result = NULL;
    if (n > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "too many layouts");
        return NULL;
    }
    if (n > TILER_INLINE) {
        items = PyMem_Malloc((size_t)n * sizeof(sw_layout *));
        if (items == NULL) {
            return PyErr_NoMemory();
        }
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyTuple_GET_ITEM(args, i);
        if (!is_layout(st, item)) {
            PyErr_SetString(PyExc_ValueError,
                            "function make_layout only accepts Layouts as "
                            "argument");
            goto fail;
        }
        items[i] = LAYOUT(item);
    }
    result = layout_result(st, sw_layout_make((int32_t)n, items, &out), &out);
fail:
    if (items != small) {
        PyMem_Free(items);
    }
    return result;
}

static PyObject *layout_check_tree(PyObject *cls, PyObject *const *args,
                                   Py_ssize_t nargs) {
    swpy_state *st = state_of_type((PyTypeObject *)cls);
    sw_tree *shape = NULL, *stride = NULL;
    PyObject *result = NULL;
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError,
                     "check_tree() takes exactly 2 arguments (%zd given)",
                     nargs);
        return NULL;
    }
    if (tree_from_object(st, args[0], SW_TREE_SHAPE, &shape) < 0 ||
        tree_from_object(st, args[1], SW_TREE_STRIDE, &stride) < 0) {
        goto fail;
    }
    result = PyBool_FromLong(sw_tree_congruent(shape, stride));
fail:
    sw_tree_unref(shape);
    sw_tree_unref(stride);
    return result;
}

static PyObject *layout_expand_int(PyObject *cls, PyObject *const *args,
                                   Py_ssize_t nargs) {
    swpy_state *st = state_of_type((PyTypeObject *)cls);
    sw_tree *shape = NULL;
    sw_layout *layout = NULL;
    int64_t *buf = NULL;
    PyObject *result = NULL;
    int err = 0;
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError,
                     "expand_int() takes exactly 2 arguments (%zd given)",
                     nargs);
        return NULL;
    }
    if (!PyIndex_Check(args[0])) {
        PyErr_Format(PyExc_TypeError, "key must be an integer, not '%.200s'",
                     Py_TYPE(args[0])->tp_name);
        return NULL;
    }
    PyObject *k = PyNumber_Index(args[0]);
    if (k == NULL) {
        return NULL;
    }
    int64_t key = key_int(k, &err);
    Py_DECREF(k);
    if (err || tree_from_object(st, args[1], SW_TREE_SHAPE, &shape) < 0) {
        goto fail;
    }
    /* A layout of the shape with zero strides: only its domain matters. */
    int32_t nleaf = sw_tree_nleaf(shape);
    int32_t rank = sw_tree_rank(shape);
    size_t count = (size_t)(nleaf > rank ? nleaf : rank) + 1;
    buf = PyMem_Calloc(count, sizeof(int64_t));
    if (buf == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    sw_status s =
        sw_layout_from_recipe(sw_tree_ntok(shape), sw_tree_recipe(shape),
                              sw_tree_values(shape), buf, &layout);
    if (s == SW_OK) {
        s = sw_layout_expand_index(layout, key, buf);
    }
    if (s != SW_OK) {
        swpy_raise(s);
        goto fail;
    }
    result = PyList_New(rank);
    if (result == NULL) {
        goto fail;
    }
    for (int32_t i = 0; i < rank; i++) {
        PyObject *v = PyLong_FromLongLong(buf[i]);
        if (v == NULL) {
            Py_CLEAR(result);
            goto fail;
        }
        PyList_SET_ITEM(result, i, v);
    }
fail:
    PyMem_Free(buf);
    sw_layout_unref(layout);
    sw_tree_unref(shape);
    return result;
}

/* ---- structure */

static PyObject *layout_flatten(PyObject *self, PyObject *unused) {
    sw_layout *out = NULL;
    return layout_result(state_of(self), sw_layout_flatten(LAYOUT(self), &out),
                         &out);
}

static PyObject *layout_flatten_layout(PyObject *self, PyObject *unused) {
    swpy_state *st = state_of(self);
    if (swpy_require_tree_types(st) < 0) {
        return NULL;
    }
    const sw_tree *shape = sw_layout_shape(LAYOUT(self));
    int32_t ntok = sw_tree_ntok(shape);
    const int32_t *rec = sw_tree_recipe(shape);
    PyObject *recipe = PyList_New(ntok);
    if (recipe == NULL) {
        return NULL;
    }
    for (int32_t i = 0; i < ntok; i++) {
        PyObject *node = rec[i] == SW_TOK_PUSH  ? st->node_push
                         : rec[i] == SW_TOK_POP ? st->node_pop
                                                : st->node_leaf;
        PyList_SET_ITEM(recipe, i, Py_NewRef(node));
    }
    PyObject *flat = layout_flatten(self, NULL);
    if (flat == NULL) {
        Py_DECREF(recipe);
        return NULL;
    }
    return Py_BuildValue("(NN)", flat, recipe);
}

static PyObject *layout_infix(PyObject *self, PyObject *unused) {
    const sw_layout *layout = LAYOUT(self);
    int32_t n = sw_layout_nleaf(layout);
    const int64_t *ext = sw_layout_leaf_extents(layout);
    const int64_t *str = sw_layout_leaf_strides(layout);
    PyObject *list = PyList_New(n);
    if (list == NULL) {
        return NULL;
    }
    for (int32_t i = 0; i < n; i++) {
        PyObject *pair =
            Py_BuildValue("(LL)", (long long)ext[i], (long long)str[i]);
        if (pair == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, i, pair);
    }
    return list;
}

static PyObject *layout_coalesce(PyObject *self, PyObject *unused) {
    sw_layout *out = NULL;
    return layout_result(state_of(self), sw_layout_coalesce(LAYOUT(self), &out),
                         &out);
}

static PyObject *layout_filter(PyObject *self, PyObject *unused) {
    sw_layout *out = NULL;
    return layout_result(state_of(self), sw_layout_filter(LAYOUT(self), &out),
                         &out);
}

static PyObject *layout_coalesce_by_mode(PyObject *self, PyObject *profile) {
    swpy_state *st = state_of(self);
    sw_layout *out = NULL;
    rbuf b;
    rbuf_init(&b);
    PyObject *result = NULL;
    if (idtree_root(st, &b, profile, 0, "profile") < 0) {
        goto fail;
    }
    result = layout_result(
        st, sw_layout_coalesce_profile(LAYOUT(self), b.ntok, b.tok, &out),
        &out);
fail:
    rbuf_free(&b);
    return result;
}

static PyObject *layout_extract_profile(PyObject *self, PyObject *args,
                                        PyObject *kwds) {
    static char *kwlist[] = {"profile", NULL};
    swpy_state *st = state_of(self);
    PyObject *profile = Py_None;
    PyObject *result = NULL;
    sw_layout **pieces = NULL;
    int32_t count = 0, cap;
    rbuf b;
    rbuf_init(&b);
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|O:extract_profile", kwlist,
                                     &profile)) {
        return NULL;
    }
    int32_t ntok = -1;
    if (profile != Py_None) {
        if (idtree_root(st, &b, profile, 0, "profile") < 0) {
            goto fail;
        }
        ntok = b.ntok;
    }
    /* Each piece is a leaf of the profile, or of the layout without one. */
    cap = sw_layout_nleaf(LAYOUT(self));
    for (int32_t i = 0; i < b.ntok; i++) {
        cap += b.tok[i] >= SW_TOK_LEAF;
    }
    for (int attempt = 0; attempt < 2; attempt++) {
        pieces = PyMem_Calloc((size_t)cap + 1, sizeof(sw_layout *));
        if (pieces == NULL) {
            PyErr_NoMemory();
            goto fail;
        }
        sw_status s =
            sw_layout_extract(LAYOUT(self), ntok, b.tok, cap, pieces, &count);
        if (s == SW_EINDEX && attempt == 0 && count > cap) {
            PyMem_Free(pieces);
            pieces = NULL;
            cap = count;
            continue;
        }
        if (s != SW_OK) {
            count = 0;
            swpy_raise(s);
            goto fail;
        }
        break;
    }
    result = PyList_New(count);
    if (result == NULL) {
        goto fail;
    }
    for (int32_t i = 0; i < count; i++) {
        /* layout_wrap takes the piece's reference, also on failure. */
        PyObject *piece = layout_wrap(st, pieces[i]);
        pieces[i] = NULL;
        if (piece == NULL) {
            Py_CLEAR(result);
            goto fail;
        }
        PyList_SET_ITEM(result, i, piece);
    }
fail:
    if (pieces != NULL) {
        for (int32_t i = 0; i < count; i++) {
            sw_layout_unref(pieces[i]);
        }
        PyMem_Free(pieces);
    }
    rbuf_free(&b);
    return result;
}

static PyObject *layout_rearrange(PyObject *self, PyObject *args,
                                  PyObject *kwds) {
    static char *kwlist[] = {"output", "selection", NULL};
    swpy_state *st = state_of(self);
    PyObject *output, *selection = Py_None, *result = NULL;
    sw_layout *out = NULL;
    rbuf bo, bs;
    rbuf_init(&bo);
    rbuf_init(&bs);
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|O:rearrange", kwlist,
                                     &output, &selection)) {
        return NULL;
    }
    if (idtree_root(st, &bo, output, 1, "output") < 0) {
        goto fail;
    }
    int32_t nsel = -1;
    if (selection != Py_None) {
        if (idtree_root(st, &bs, selection, 0, "selection") < 0) {
            goto fail;
        }
        nsel = bs.ntok;
    }
    result = layout_result(
        st,
        sw_layout_rearrange(LAYOUT(self), bo.ntok, bo.tok, nsel, bs.tok, &out),
        &out);
fail:
    rbuf_free(&bo);
    rbuf_free(&bs);
    return result;
}

static PyObject *layout_reverse_rearrange(PyObject *cls, PyObject *args,
                                          PyObject *kwds) {
    static char *kwlist[] = {"output", "selection", NULL};
    swpy_state *st = state_of_type((PyTypeObject *)cls);
    PyObject *output, *selection, *result = NULL;
    PyObject *rev_output = NULL, *rev_selection = NULL;
    int32_t nrev_out = 0, nrev_sel = 0;
    int32_t *rev_out = NULL, *rev_sel = NULL;
    rbuf bo, bs;
    rbuf_init(&bo);
    rbuf_init(&bs);
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO:reverse_rearrange", kwlist,
                                     &output, &selection)) {
        return NULL;
    }
    if (idtree_root(st, &bo, output, 1, "output") < 0 ||
        idtree_root(st, &bs, selection, 0, "selection") < 0) {
        goto fail;
    }
    sw_status s =
        sw_rearrange_reverse(bo.ntok, bo.tok, bs.ntok, bs.tok, &nrev_out,
                             &rev_out, &nrev_sel, &rev_sel);
    if (s != SW_OK) {
        swpy_raise(s);
        goto fail;
    }
    rev_output = idtree_to_tree(st, rev_out, nrev_out);
    if (rev_output == NULL) {
        goto fail;
    }
    rev_selection = idtree_to_tree(st, rev_sel, nrev_sel);
    if (rev_selection == NULL) {
        goto fail;
    }
    result = PyTuple_Pack(2, rev_output, rev_selection);
fail:
    Py_XDECREF(rev_output);
    Py_XDECREF(rev_selection);
    sw_free_recipe(rev_out);
    sw_free_recipe(rev_sel);
    rbuf_free(&bo);
    rbuf_free(&bs);
    return result;
}

static PyObject *layout_permute(PyObject *self, PyObject *args) {
    swpy_state *st = state_of(self);
    PyObject *order = args;
    int32_t small[16];
    int32_t *idx = small;
    sw_layout *out = NULL;
    PyObject *result = NULL;
    if (PyTuple_GET_SIZE(args) == 1 &&
        (PyList_Check(PyTuple_GET_ITEM(args, 0)) ||
         PyTuple_Check(PyTuple_GET_ITEM(args, 0)))) {
        order = PyTuple_GET_ITEM(args, 0);
    }
    /* A list argument is copied so that nothing can change it under us. */
    order = PySequence_Tuple(order);
    if (order == NULL) {
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(order);
    if (n > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError,
                        "Permutation dimensions must reorder every layout "
                        "mode");
        goto fail;
    }
    if (n > 16) {
        idx = PyMem_Malloc((size_t)n * sizeof(int32_t));
        if (idx == NULL) {
            idx = small;
            PyErr_NoMemory();
            goto fail;
        }
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyTuple_GET_ITEM(order, i);
        if (!PyLong_CheckExact(item)) {
            PyErr_SetString(PyExc_TypeError,
                            "Permutation dimensions must be integers");
            goto fail;
        }
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(item, &overflow);
        /* Out of int32 range can never name a mode: pass an invalid one. */
        idx[i] = (overflow || v < INT32_MIN || v > INT32_MAX) ? -1 : (int32_t)v;
    }
    result = layout_result(
        st, sw_layout_permute(LAYOUT(self), (int32_t)n, idx, &out), &out);
fail:
    if (idx != small) {
        PyMem_Free(idx);
    }
    Py_DECREF(order);
    return result;
}

/* ---- algebra */

static PyObject *layout_choose(PyObject *self, PyObject *arg) {
    int64_t d;
    sw_layout *out = NULL;
    if (int64_arg(arg, &d) < 0) {
        return NULL;
    }
    return layout_result(state_of(self),
                         sw_layout_choose(LAYOUT(self), d, &out), &out);
}

static PyObject *layout_modout(PyObject *self, PyObject *arg) {
    int64_t s;
    sw_layout *out = NULL;
    if (int64_arg(arg, &s) < 0) {
        return NULL;
    }
    return layout_result(state_of(self),
                         sw_layout_modout(LAYOUT(self), s, &out), &out);
}

static PyObject *layout_compose_layouts(PyObject *self, PyObject *arg) {
    swpy_state *st = state_of(self);
    sw_layout *b, *out = NULL;
    if (layout_arg(st, arg, "B", &b) < 0) {
        return NULL;
    }
    return layout_result(st, sw_layout_compose(LAYOUT(self), b, &out), &out);
}

/* Runs one of the tiler functions of layout.h on a Python tiler. */
typedef sw_status (*tiler_fn)(const sw_layout *, int32_t, sw_layout *const *,
                              sw_layout **);

static PyObject *layout_with_tiler(PyObject *self, PyObject *arg,
                                   const char *name, tiler_fn fn) {
    swpy_state *st = state_of(self);
    tiler_arg t;
    sw_layout *out = NULL;
    if (tiler_init(st, &t, arg, name) < 0) {
        return NULL;
    }
    sw_status s = fn(LAYOUT(self), t.n, t.items, &out);
    tiler_free(&t);
    return layout_result(st, s, &out);
}

static PyObject *layout_compose(PyObject *self, PyObject *arg) {
    swpy_state *st = state_of(self);
    sw_layout *out = NULL;
    if (is_layout(st, arg)) {
        return layout_result(
            st, sw_layout_compose(LAYOUT(self), LAYOUT(arg), &out), &out);
    }
    if (Py_TYPE(arg) == st->shape_type) {
        return layout_result(
            st, sw_layout_compose_shape(LAYOUT(self), TREE(arg), &out), &out);
    }
    if (Py_TYPE(arg) == st->stride_type) {
        PyErr_SetString(PyExc_TypeError,
                        "B must be a Layout, a Shape or a sequence of Layout "
                        "objects, not 'Stride'");
        return NULL;
    }
    return layout_with_tiler(self, arg, "B", sw_layout_compose_tiler);
}

static PyObject *layout_complement(PyObject *self, PyObject *args,
                                   PyObject *kwds) {
    static char *kwlist[] = {"cotarget", NULL};
    PyObject *cotarget = Py_None;
    sw_layout *out = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|O:complement", kwlist,
                                     &cotarget)) {
        return NULL;
    }
    int64_t m = 0; /* no cotarget: fill the gaps of self only */
    if (cotarget != Py_None && int64_arg(cotarget, &m) < 0) {
        return NULL;
    }
    return layout_result(state_of(self),
                         sw_layout_complement(LAYOUT(self), m, &out), &out);
}

static PyObject *layout_divide(PyObject *self, PyObject *arg) {
    swpy_state *st = state_of(self);
    sw_layout *b, *out = NULL;
    if (layout_arg(st, arg, "B", &b) < 0) {
        return NULL;
    }
    return layout_result(st, sw_layout_divide(LAYOUT(self), b, &out), &out);
}

static PyObject *layout_divide_tiler(PyObject *self, PyObject *arg) {
    return layout_with_tiler(self, arg, "tiler", sw_layout_divide_tiler);
}

static PyObject *layout_zipped_divide(PyObject *self, PyObject *arg) {
    return layout_with_tiler(self, arg, "tiler", sw_layout_zipped_divide);
}

static PyObject *layout_tiled_divide(PyObject *self, PyObject *arg) {
    return layout_with_tiler(self, arg, "tiler", sw_layout_tiled_divide);
}

static PyObject *layout_flat_divide(PyObject *self, PyObject *arg) {
    return layout_with_tiler(self, arg, "tiler", sw_layout_flat_divide);
}

typedef sw_status (*binary_fn)(const sw_layout *, const sw_layout *,
                               sw_layout **);

static PyObject *layout_binary(PyObject *self, PyObject *arg, binary_fn fn) {
    swpy_state *st = state_of(self);
    sw_layout *b, *out = NULL;
    if (layout_arg(st, arg, "B", &b) < 0) {
        return NULL;
    }
    return layout_result(st, fn(LAYOUT(self), b, &out), &out);
}

static PyObject *layout_logical_product(PyObject *self, PyObject *arg) {
    return layout_binary(self, arg, sw_layout_product);
}

static PyObject *layout_blocked_product(PyObject *self, PyObject *arg) {
    return layout_binary(self, arg, sw_layout_blocked_product);
}

static PyObject *layout_raked_product(PyObject *self, PyObject *arg) {
    return layout_binary(self, arg, sw_layout_raked_product);
}

static PyObject *layout_right_inverse(PyObject *self, PyObject *unused) {
    sw_layout *out = NULL;
    return layout_result(state_of(self),
                         sw_layout_right_inverse(LAYOUT(self), &out), &out);
}

static PyObject *layout_left_inverse(PyObject *self, PyObject *unused) {
    sw_layout *out = NULL;
    return layout_result(state_of(self),
                         sw_layout_left_inverse(LAYOUT(self), &out), &out);
}

static PyObject *layout_is_injective(PyObject *self, PyObject *unused) {
    int r = 0;
    sw_status s = sw_layout_is_injective(LAYOUT(self), &r);
    if (s != SW_OK) {
        return swpy_raise(s);
    }
    return PyBool_FromLong(r);
}

static PyObject *layout_is_compact(PyObject *self, PyObject *unused) {
    int r = 0;
    sw_status s = sw_layout_is_compact(LAYOUT(self), &r);
    if (s != SW_OK) {
        return swpy_raise(s);
    }
    return PyBool_FromLong(r);
}

/* ------------------------------------------------------ type specs */

/*
 * CPython's slot tables store function pointers in void * fields, which ISO C
 * does not sanction and -Wpedantic reports; every POSIX platform and Windows
 * guarantee the conversion, and CPython requires it.
 */
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
#endif

#define FASTCALL(f) ((PyCFunction)(void (*)(void))(f))

static PyMethodDef shape_methods[] = {
    {"concat", FASTCALL(tree_concat), METH_FASTCALL | METH_CLASS, NULL},
    {"append", FASTCALL(tree_append), METH_FASTCALL | METH_CLASS, NULL},
    {"__reduce__", tree_reduce, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef shape_getset[] = {
    {"top_level", tree_get_top_level, NULL, NULL, NULL},
    {"depth", tree_get_depth, NULL, NULL, NULL},
    {"is_int", tree_get_is_int, NULL, NULL, NULL},
    {"logical_size", tree_get_size, NULL, NULL, NULL},
    {"size", tree_get_size, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyGetSetDef stride_getset[] = {
    {"top_level", tree_get_top_level, NULL, NULL, NULL},
    {"depth", tree_get_depth, NULL, NULL, NULL},
    {"is_int", tree_get_is_int, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot shape_slots[] = {
    {Py_tp_new, tree_tp_new},
    {Py_tp_dealloc, tree_dealloc},
    {Py_tp_repr, tree_repr},
    {Py_tp_richcompare, tree_richcompare},
    {Py_tp_iter, tree_iter},
    {Py_tp_methods, shape_methods},
    {Py_tp_getset, shape_getset},
    {Py_sq_length, tree_length},
    {Py_sq_item, tree_sq_item},
    {Py_mp_length, tree_length},
    {Py_mp_subscript, tree_subscript},
    {Py_nb_int, tree_int},
    {0, NULL},
};

static PyType_Slot stride_slots[] = {
    {Py_tp_new, tree_tp_new},
    {Py_tp_dealloc, tree_dealloc},
    {Py_tp_repr, tree_repr},
    {Py_tp_richcompare, tree_richcompare},
    {Py_tp_iter, tree_iter},
    {Py_tp_methods, shape_methods},
    {Py_tp_getset, stride_getset},
    {Py_sq_length, tree_length},
    {Py_sq_item, tree_sq_item},
    {Py_mp_length, tree_length},
    {Py_mp_subscript, tree_subscript},
    {Py_nb_int, tree_int},
    {0, NULL},
};

static PyType_Spec shape_spec = {
    .name = "strideweave.core.layout.Shape",
    .basicsize = sizeof(TreeObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = shape_slots,
};

static PyType_Spec stride_spec = {
    .name = "strideweave.core.layout.Stride",
    .basicsize = sizeof(TreeObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = stride_slots,
};

#define KW(f) ((PyCFunction)(void (*)(void))(f))

PyObject *swpy_call_viz(const char *fn, PyObject *arg) {
    return swpy_call_in("strideweave.viz", fn, arg, NULL, NULL);
}

/* Layout._repr_svg_: the picture of strideweave.viz, for Jupyter. */
static PyObject *layout_repr_svg(PyObject *self, PyObject *unused) {
    (void)unused;
    return swpy_call_viz("_repr_svg", self);
}

static PyMethodDef layout_methods[] = {
    {"_repr_svg_", layout_repr_svg, METH_NOARGS, NULL},
    {"index", layout_index, METH_O, NULL},
    {"get_index", FASTCALL(layout_get_index), METH_FASTCALL | METH_CLASS, NULL},
    {"empty", layout_empty, METH_NOARGS | METH_CLASS, NULL},
    {"leaf", FASTCALL(layout_leaf), METH_FASTCALL | METH_CLASS, NULL},
    {"concat", layout_concat, METH_O, NULL},
    {"append", layout_append, METH_O, NULL},
    {"make_layout", layout_make_layout, METH_VARARGS | METH_CLASS, NULL},
    {"check_tree", FASTCALL(layout_check_tree), METH_FASTCALL | METH_CLASS,
     NULL},
    {"expand_int", FASTCALL(layout_expand_int), METH_FASTCALL | METH_CLASS,
     NULL},
    {"flatten", layout_flatten, METH_NOARGS, NULL},
    {"flatten_layout", layout_flatten_layout, METH_NOARGS, NULL},
    {"infix", layout_infix, METH_NOARGS, NULL},
    {"coalesce", layout_coalesce, METH_NOARGS, NULL},
    {"coalesce_by_mode", layout_coalesce_by_mode, METH_O, NULL},
    {"filter", layout_filter, METH_NOARGS, NULL},
    {"extract_profile", KW(layout_extract_profile),
     METH_VARARGS | METH_KEYWORDS, NULL},
    {"rearrange", KW(layout_rearrange), METH_VARARGS | METH_KEYWORDS, NULL},
    {"reverse_rearrange", KW(layout_reverse_rearrange),
     METH_VARARGS | METH_KEYWORDS | METH_CLASS, NULL},
    {"permute", layout_permute, METH_VARARGS, NULL},
    {"choose", layout_choose, METH_O, NULL},
    {"modout", layout_modout, METH_O, NULL},
    {"compose_layouts", layout_compose_layouts, METH_O, NULL},
    {"compose", layout_compose, METH_O, NULL},
    {"complement", KW(layout_complement), METH_VARARGS | METH_KEYWORDS, NULL},
    {"divide", layout_divide, METH_O, NULL},
    {"divide_tiler", layout_divide_tiler, METH_O, NULL},
    {"zipped_divide", layout_zipped_divide, METH_O, NULL},
    {"tiled_divide", layout_tiled_divide, METH_O, NULL},
    {"flat_divide", layout_flat_divide, METH_O, NULL},
    {"logical_product", layout_logical_product, METH_O, NULL},
    {"blocked_product", layout_blocked_product, METH_O, NULL},
    {"raked_product", layout_raked_product, METH_O, NULL},
    {"right_inverse", layout_right_inverse, METH_NOARGS, NULL},
    {"left_inverse", layout_left_inverse, METH_NOARGS, NULL},
    {"is_injective", layout_is_injective, METH_NOARGS, NULL},
    {"is_compact", layout_is_compact, METH_NOARGS, NULL},
    {"__copy__", layout_copy, METH_NOARGS, NULL},
    {"__deepcopy__", layout_deepcopy, METH_O, NULL},
    {"__reduce__", layout_reduce, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef layout_getset[] = {
    {"shape", layout_get_shape, NULL, NULL, NULL},
    {"stride", layout_get_stride, NULL, NULL, NULL},
    {"size", layout_get_size, NULL, NULL, NULL},
    {"cosize", layout_get_cosize, NULL, NULL, NULL},
    {"depth", layout_get_depth, NULL, NULL, NULL},
    {"rank", layout_get_rank, NULL, NULL, NULL},
    {"is_leaf", layout_get_is_leaf, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMemberDef layout_members[] = {
    {"__vectorcalloffset__", SWPY_T_PYSSIZET,
     offsetof(LayoutObject, vectorcall), SWPY_READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot layout_slots[] = {
    {Py_tp_new, layout_tp_new},
    {Py_tp_dealloc, layout_dealloc},
    {Py_tp_repr, layout_repr},
    {Py_tp_call, PyVectorcall_Call},
    {Py_tp_richcompare, layout_richcompare},
    {Py_tp_iter, layout_iter},
    {Py_tp_methods, layout_methods},
    {Py_tp_getset, layout_getset},
    {Py_tp_members, layout_members},
    {Py_sq_length, layout_length},
    {Py_sq_item, layout_sq_item},
    {Py_mp_length, layout_length},
    {Py_mp_subscript, layout_subscript},
    {Py_nb_add, layout_nb_add},
    {0, NULL},
};

static PyType_Spec layout_spec = {
    .name = "strideweave.core.layout.Layout",
    .basicsize = sizeof(LayoutObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE |
             Py_TPFLAGS_HAVE_VECTORCALL,
    .slots = layout_slots,
};

#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

static int add_type(PyObject *module, PyType_Spec *spec, PyTypeObject **out) {
    PyObject *type = PyType_FromModuleAndSpec(module, spec, NULL);
    if (type == NULL) {
        return -1;
    }
    *out = (PyTypeObject *)type;
    return PyModule_AddType(module, (PyTypeObject *)type);
}

int swpy_layout_init_types(PyObject *module, swpy_state *st) {
    if (add_type(module, &shape_spec, &st->shape_type) < 0 ||
        add_type(module, &stride_spec, &st->stride_type) < 0 ||
        add_type(module, &layout_spec, &st->layout_type) < 0) {
        return -1;
    }
    st->str_id = PyUnicode_InternFromString("id");
    return st->str_id != NULL ? 0 : -1;
}

/* ------------------------------------------------ for the other sources */

int swpy_is_layout(swpy_state *st, PyObject *o) {
    return is_layout(st, o);
}

sw_layout *swpy_layout_get(PyObject *o) {
    return LAYOUT(o);
}

PyObject *swpy_layout_wrap(swpy_state *st, sw_layout *layout) {
    return layout_wrap(st, layout);
}

int swpy_idtree_recipe(swpy_state *st, rbuf *b, PyObject *tree, int keep_ids,
                       const char *what) {
    return idtree_root(st, b, tree, keep_ids, what);
}

PyObject *swpy_idtree_to_tree(swpy_state *st, const int32_t *recipe,
                              int32_t ntok) {
    if (swpy_require_tree_types(st) < 0) {
        return NULL;
    }
    return idtree_to_tree(st, recipe, ntok);
}
