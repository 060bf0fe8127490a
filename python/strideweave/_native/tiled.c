/*
 * TiledEvictable from Python (the library's strideweave/tiled.h): the
 * constructor and residency calls the Python class
 * strideweave.carriers.tiled_evictable.TiledEvictable is a face over.
 * Tier transfers may call a Python tier's methods, so every call keeps
 * the GIL.
 */
#include "py_kernels.h"
#include "py_tensor.h"
#include "move.h"

#include "errors.h"
#include "gil.h"
#include "py_carrier.h"

#include "strideweave/extension.h"
#include "strideweave/tiled.h"

/* Up to SW_TILE_MAX_RANK extents from a sequence of ints. */
static int extents(PyObject *o, const char *name, int32_t *rank, int64_t *out) {
    PyObject *seq =
        PySequence_Fast(o, "grid and tile shapes must be sequences");
    if (seq == NULL) {
        return -1;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n < 1 || n > SW_TILE_MAX_RANK) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_ValueError, "%s must have 1 to %d axes", name,
                     SW_TILE_MAX_RANK);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = PySequence_Fast_GET_ITEM(seq, i);
        if (PyBool_Check(v) || !PyLong_Check(v)) {
            Py_DECREF(seq);
            PyErr_Format(PyExc_TypeError, "%s extents must be integers", name);
            return -1;
        }
        out[i] = PyLong_AsLongLong(v);
        if (out[i] == -1 && PyErr_Occurred()) {
            Py_DECREF(seq);
            return -1;
        }
    }
    Py_DECREF(seq);
    *rank = (int32_t)n;
    return 0;
}

static sw_carrier *tier(swpy_state *st, PyObject *o, const char *which) {
    if (!swpy_is_carrier(st, o)) {
        PyErr_Format(PyExc_TypeError, "%s must be a Carrier", which);
        return NULL;
    }
    return swpy_carrier_of(o, which);
}

/* ------------------------------------------------------------ policies */

/* A Python residency policy: the carrier object's _policy_plan does the
 * conversions and checks; the index lists live here until done. */
typedef struct py_policy {
    int64_t *lists; /* promote, retain, evict, one allocation */
} py_policy;

static int index_list(PyObject *seq, int64_t *out) {
    Py_ssize_t n = PyTuple_GET_SIZE(seq);
    for (Py_ssize_t i = 0; i < n; i++) {
        out[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(seq, i));
        if (out[i] == -1 && PyErr_Occurred()) {
            return -1;
        }
    }
    return 0;
}

static sw_status policy_body(void *ctx, sw_carrier *c, const int64_t *required,
                             int64_t n, const char *purpose,
                             sw_residency_plan *out) {
    py_policy *pp = ctx;
    PyObject *self = sw_carrier_get_peer(c);
    if (self == NULL) {
        return sw_set_error(SW_ERUNTIME, "a TiledEvictable without its object");
    }
    PyObject *req = PyTuple_New((Py_ssize_t)n);
    for (int64_t i = 0; req != NULL && i < n; i++) {
        PyObject *v = PyLong_FromLongLong(required[i]);
        if (v == NULL) {
            Py_CLEAR(req);
            break;
        }
        PyTuple_SET_ITEM(req, (Py_ssize_t)i, v);
    }
    PyObject *r = req != NULL ? PyObject_CallMethod(self, "_policy_plan", "Os",
                                                    req, purpose)
                              : NULL;
    Py_XDECREF(req);
    if (r == NULL) {
        return SW_ERUNTIME;
    }
    if (!PyTuple_Check(r) || PyTuple_GET_SIZE(r) != 3) {
        Py_DECREF(r);
        PyErr_SetString(PyExc_TypeError, "_policy_plan must return 3 tuples");
        return SW_ERUNTIME;
    }
    Py_ssize_t np = PyTuple_GET_SIZE(PyTuple_GET_ITEM(r, 0)),
               nr = PyTuple_GET_SIZE(PyTuple_GET_ITEM(r, 1)),
               ne = PyTuple_GET_SIZE(PyTuple_GET_ITEM(r, 2));
    int64_t *lists =
        PyMem_RawMalloc((size_t)(np + nr + ne + 1) * sizeof *lists);
    if (lists == NULL) {
        Py_DECREF(r);
        PyErr_NoMemory();
        return SW_ERUNTIME;
    }
    if (index_list(PyTuple_GET_ITEM(r, 0), lists) < 0 ||
        index_list(PyTuple_GET_ITEM(r, 1), lists + np) < 0 ||
        index_list(PyTuple_GET_ITEM(r, 2), lists + np + nr) < 0) {
        Py_DECREF(r);
        PyMem_RawFree(lists);
        return SW_ERUNTIME;
    }
    Py_DECREF(r);
    pp->lists = lists;
    out->promote = lists;
    out->npromote = np;
    out->retain = lists + np;
    out->nretain = nr;
    out->evict = lists + np + nr;
    out->nevict = ne;
    return SW_OK;
}

static sw_status policy_plan(void *ctx, sw_carrier *c, const int64_t *required,
                             int64_t n, const char *purpose,
                             sw_residency_plan *out) {
    swpy_gil g = swpy_gil_ensure();
    sw_status s = policy_body(ctx, c, required, n, purpose, out);
    swpy_gil_release(g);
    return s;
}

static void policy_done(void *ctx, const sw_residency_plan *plan) {
    (void)plan;
    py_policy *pp = ctx;
    PyMem_RawFree(pp->lists);
    pp->lists = NULL;
}

static void policy_drop(void *ctx) {
    py_policy *pp = ctx;
    PyMem_RawFree(pp->lists);
    PyMem_RawFree(pp);
}

/* _tiled_use_policy(carrier): the carrier asks its object's _policy_plan
 * from now on. */
static PyObject *tiled_use_policy(PyObject *module, PyObject *self) {
    (void)module;
    sw_carrier *c = swpy_carrier_of(self, "TiledEvictable");
    if (c == NULL) {
        return NULL;
    }
    py_policy *pp = PyMem_RawCalloc(1, sizeof *pp);
    if (pp == NULL) {
        return PyErr_NoMemory();
    }
    sw_residency_policy pol = {pp, policy_plan, policy_done, policy_drop};
    sw_status s = sw_tiled_set_policy(c, &pol);
    if (s != SW_OK) {
        PyMem_RawFree(pp);
        return swpy_raise(s);
    }
    Py_RETURN_NONE;
}

/* _tiled_new(cls, primary, secondary, grid_shape, tile_shape): a fresh
 * object of cls (the registered TiledEvictable type) over a new library
 * carrier. */
static PyObject *tiled_new(PyObject *module, PyObject *args) {
    PyObject *cls, *primary, *secondary, *grid_obj, *tile_obj;
    if (!PyArg_ParseTuple(args, "OOOOO:_tiled_new", &cls, &primary, &secondary,
                          &grid_obj, &tile_obj)) {
        return NULL;
    }
    swpy_state *st = swpy_module_state(module);
    if ((PyTypeObject *)cls != st->tiled_type) {
        PyErr_SetString(PyExc_TypeError, "TiledEvictable is final");
        return NULL;
    }
    sw_carrier *p = tier(st, primary, "primary");
    sw_carrier *q = p != NULL ? tier(st, secondary, "secondary") : NULL;
    int64_t grid[SW_TILE_MAX_RANK], tile[SW_TILE_MAX_RANK];
    int32_t gr = 0, tr = 0;
    if (q == NULL || extents(grid_obj, "grid_shape", &gr, grid) < 0 ||
        extents(tile_obj, "tile_shape", &tr, tile) < 0) {
        return NULL;
    }
    if (gr != tr) {
        PyErr_Format(PyExc_ValueError,
                     "grid_shape and tile_shape ranks differ (%d and %d)",
                     (int)gr, (int)tr);
        return NULL;
    }
    sw_carrier *c = NULL;
    sw_status s = sw_tiled_new(p, q, gr, grid, tile, &c);
    if (s != SW_OK) {
        return swpy_raise(s);
    }
    return swpy_carrier_wrap(st, c);
}

/* The library carrier of a live TiledEvictable object. */
static sw_carrier *tiled_of(PyObject *self) {
    sw_carrier *c = swpy_carrier_of(self, "TiledEvictable");
    if (c != NULL && !sw_carrier_is_tiled(c)) {
        PyErr_SetString(PyExc_TypeError, "carrier is not a TiledEvictable");
        return NULL;
    }
    if (c != NULL && sw_tiled_geometry(c) == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "TiledEvictable is released");
        return NULL;
    }
    return c;
}

/* _tiled_geometry(carrier): (grid_shape, tile_shape). */
static PyObject *tiled_geometry(PyObject *module, PyObject *self) {
    (void)module;
    sw_carrier *c = tiled_of(self);
    const sw_tile_geometry *g = c != NULL ? sw_tiled_geometry(c) : NULL;
    if (g == NULL) {
        return NULL;
    }
    PyObject *grid = PyTuple_New(g->rank), *tile = PyTuple_New(g->rank);
    for (int32_t k = 0; grid != NULL && tile != NULL && k < g->rank; k++) {
        PyTuple_SET_ITEM(grid, k, PyLong_FromLongLong(g->grid[k]));
        PyTuple_SET_ITEM(tile, k, PyLong_FromLongLong(g->tile[k]));
    }
    if (grid == NULL || tile == NULL || PyErr_Occurred()) {
        Py_XDECREF(grid);
        Py_XDECREF(tile);
        return NULL;
    }
    return Py_BuildValue("(NN)", grid, tile);
}

/* _tiled_tiers(carrier): (primary, secondary). */
static PyObject *tiled_tiers(PyObject *module, PyObject *self) {
    swpy_state *st = swpy_module_state(module);
    sw_carrier *c = tiled_of(self);
    if (c == NULL) {
        return NULL;
    }
    PyObject *p = swpy_carrier_wrap(st, sw_carrier_retain(sw_tiled_primary(c)));
    PyObject *q =
        p != NULL
            ? swpy_carrier_wrap(st, sw_carrier_retain(sw_tiled_secondary(c)))
            : NULL;
    if (q == NULL) {
        Py_XDECREF(p);
        return NULL;
    }
    return Py_BuildValue("(NN)", p, q);
}

/* _tiled_states(carrier): a tuple of (location, valid, dirty) per tile
 * index, location 0 primary, 1 secondary, 2 implicit. */
static PyObject *tiled_states(PyObject *module, PyObject *self) {
    (void)module;
    sw_carrier *c = tiled_of(self);
    const sw_tile_geometry *g = c != NULL ? sw_tiled_geometry(c) : NULL;
    if (g == NULL) {
        return NULL;
    }
    PyObject *r = PyTuple_New((Py_ssize_t)g->ntiles);
    for (int64_t t = 0; r != NULL && t < g->ntiles; t++) {
        sw_tile_location loc;
        int valid, dirty;
        sw_status s = sw_tiled_tile_state(c, t, &loc, &valid, &dirty);
        PyObject *e = s == SW_OK ? Py_BuildValue("(iOO)", (int)loc,
                                                 valid ? Py_True : Py_False,
                                                 dirty ? Py_True : Py_False)
                                 : swpy_raise(s);
        if (e == NULL) {
            Py_CLEAR(r);
            break;
        }
        PyTuple_SET_ITEM(r, (Py_ssize_t)t, e);
    }
    return r;
}

/* The int64 values of a tuple of ints, allocated with PyMem_Malloc (at
 * least one slot); NULL with an exception. */
static int64_t *int_tuple(PyObject *tuple, Py_ssize_t *n) {
    *n = PyTuple_GET_SIZE(tuple);
    int64_t *v = PyMem_Malloc((size_t)(*n > 0 ? *n : 1) * sizeof *v);
    if (v == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t i = 0; i < *n; i++) {
        v[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(tuple, i));
        if (v[i] == -1 && PyErr_Occurred()) {
            PyMem_Free(v);
            return NULL;
        }
    }
    return v;
}

/* _tiled_residency(carrier, tile_indices, evict): promote or evict. */
static PyObject *tiled_residency(PyObject *module, PyObject *args) {
    (void)module;
    PyObject *self, *tiles;
    int evict;
    if (!PyArg_ParseTuple(args, "OO!p:_tiled_residency", &self, &PyTuple_Type,
                          &tiles, &evict)) {
        return NULL;
    }
    sw_carrier *c = tiled_of(self);
    Py_ssize_t n = 0;
    int64_t *idx = c != NULL ? int_tuple(tiles, &n) : NULL;
    if (idx == NULL) {
        return NULL;
    }
    sw_status s =
        evict ? sw_tiled_evict(c, n, idx) : sw_tiled_promote(c, n, idx);
    PyMem_Free(idx);
    return s == SW_OK ? Py_NewRef(Py_None) : swpy_raise(s);
}

/* _tiled_residency_async(carrier, tile_indices, evict): AwaitResidency. */
static PyObject *tiled_residency_async(PyObject *module, PyObject *args) {
    swpy_state *st = swpy_module_state(module);
    PyObject *self, *tiles;
    int evict;
    if (!PyArg_ParseTuple(args, "OO!p:_tiled_residency_async", &self,
                          &PyTuple_Type, &tiles, &evict)) {
        return NULL;
    }
    sw_carrier *c = tiled_of(self);
    Py_ssize_t n = 0;
    int64_t *idx = c != NULL ? int_tuple(tiles, &n) : NULL;
    if (idx == NULL) {
        return NULL;
    }
    sw_move_request *req = NULL;
    sw_status s = evict ? sw_tiled_evict_async(c, n, idx, &req)
                        : sw_tiled_promote_async(c, n, idx, &req);
    PyMem_Free(idx);
    if (s != SW_OK) {
        return swpy_raise(s);
    }
    return swpy_await_new(st, st->await_residency_type, req);
}

/* The tensor of a Tensor argument named what; NULL with TypeError. */
static sw_tensor *tensor_arg(swpy_state *st, PyObject *o, const char *what) {
    if (!swpy_is_tensor(st, o)) {
        PyErr_Format(PyExc_TypeError, "%s must be a Tensor", what);
        return NULL;
    }
    return swpy_tensor_of(o);
}

/* A selection given as (counts, coords) tuples; 0, or -1 with an
 * exception. */
static int selection_arg(PyObject *counts, PyObject *coords, int32_t *rank,
                         int64_t **cv, int64_t **xv) {
    Py_ssize_t nc = 0, nx = 0;
    *cv = int_tuple(counts, &nc);
    *xv = *cv != NULL ? int_tuple(coords, &nx) : NULL;
    if (*xv == NULL) {
        PyMem_Free(*cv);
        return -1;
    }
    *rank = (int32_t)nc;
    return 0;
}

/* The handle of a submitted selection request (the selection freed), or
 * NULL with the submission's failure raised. */
static PyObject *selection_handle(swpy_state *st, PyTypeObject *type,
                                  sw_status s, sw_move_request *req,
                                  int64_t *cv, int64_t *xv) {
    PyMem_Free(cv);
    PyMem_Free(xv);
    if (s != SW_OK) {
        return swpy_raise(s);
    }
    return swpy_await_new(st, type, req);
}

/* _tiled_project(tensor, counts, coords, destination): AwaitProjection. */
static PyObject *tiled_project(PyObject *module, PyObject *args) {
    swpy_state *st = swpy_module_state(module);
    PyObject *tensor, *counts, *coords, *dest;
    if (!PyArg_ParseTuple(args, "OO!O!O:_tiled_project", &tensor, &PyTuple_Type,
                          &counts, &PyTuple_Type, &coords, &dest)) {
        return NULL;
    }
    sw_tensor *t = tensor_arg(st, tensor, "tensor");
    if (t == NULL) {
        return NULL;
    }
    sw_carrier *d = NULL;
    if (dest != Py_None) {
        if (!swpy_is_carrier(st, dest)) {
            PyErr_SetString(PyExc_TypeError,
                            "destination must be a Carrier or None");
            return NULL;
        }
        if ((d = swpy_carrier_of(dest, "destination")) == NULL) {
            return NULL;
        }
    }
    int32_t rank;
    int64_t *cv, *xv;
    if (selection_arg(counts, coords, &rank, &cv, &xv) < 0) {
        return NULL;
    }
    sw_move_request *req = NULL;
    sw_status s = sw_tiled_project_async(t, rank, cv, xv, d, &req);
    return selection_handle(st, st->await_projection_type, s, req, cv, xv);
}

/* _tiled_scatter(compact, template, counts, coords, add): AwaitMove. */
static PyObject *tiled_scatter(PyObject *module, PyObject *args) {
    swpy_state *st = swpy_module_state(module);
    PyObject *compact, *tmpl, *counts, *coords;
    int add;
    if (!PyArg_ParseTuple(args, "OOO!O!p:_tiled_scatter", &compact, &tmpl,
                          &PyTuple_Type, &counts, &PyTuple_Type, &coords,
                          &add)) {
        return NULL;
    }
    sw_tensor *c = tensor_arg(st, compact, "compact");
    sw_tensor *t = c != NULL ? tensor_arg(st, tmpl, "template") : NULL;
    if (t == NULL) {
        return NULL;
    }
    int32_t rank;
    int64_t *cv, *xv;
    if (selection_arg(counts, coords, &rank, &cv, &xv) < 0) {
        return NULL;
    }
    sw_move_request *req = NULL;
    sw_status s = sw_tiled_scatter_async(
        c, t, rank, cv, xv, add ? SW_SCATTER_ADD : SW_SCATTER_REPLACE, &req);
    return selection_handle(st, st->await_move_type, s, req, cv, xv);
}

/* _tiled_pending(carrier): requests not ended yet. */
static PyObject *tiled_pending(PyObject *module, PyObject *self) {
    (void)module;
    sw_carrier *c = swpy_carrier_of(self, "TiledEvictable");
    if (c == NULL) {
        return NULL;
    }
    return PyLong_FromLongLong(sw_tiled_pending(c));
}

/* _register_tiled_type(cls): the Python class library TiledEvictable
 * carriers are wrapped in. */
static PyObject *register_tiled_type(PyObject *module, PyObject *cls) {
    swpy_state *st = swpy_module_state(module);
    if (!PyType_Check(cls)) {
        PyErr_SetString(PyExc_TypeError, "cls must be a class");
        return NULL;
    }
    Py_XSETREF(st->tiled_type, (PyTypeObject *)Py_NewRef(cls));
    Py_RETURN_NONE;
}

/* _is_defined_dependent(carrier): whether the library keeps carrier's
 * instance capabilities (a dependent definition-backed carrier). */
static PyObject *is_defined_dependent(PyObject *module, PyObject *self) {
    swpy_state *st = swpy_module_state(module);
    if (!swpy_is_carrier(st, self)) {
        Py_RETURN_FALSE;
    }
    sw_carrier *c = swpy_carrier_of(self, "Carrier");
    if (c == NULL) {
        PyErr_Clear();
        Py_RETURN_FALSE;
    }
    return PyBool_FromLong(sw_carrier_defined_is_dependent(c));
}

static PyMethodDef tiled_methods[] = {
    {"_is_defined_dependent", is_defined_dependent, METH_O, NULL},
    {"_tiled_new", tiled_new, METH_VARARGS, NULL},
    {"_tiled_geometry", tiled_geometry, METH_O, NULL},
    {"_tiled_tiers", tiled_tiers, METH_O, NULL},
    {"_tiled_states", tiled_states, METH_O, NULL},
    {"_tiled_residency", tiled_residency, METH_VARARGS, NULL},
    {"_tiled_residency_async", tiled_residency_async, METH_VARARGS, NULL},
    {"_tiled_project", tiled_project, METH_VARARGS, NULL},
    {"_tiled_scatter", tiled_scatter, METH_VARARGS, NULL},
    {"_tiled_pending", tiled_pending, METH_O, NULL},
    {"_tiled_use_policy", tiled_use_policy, METH_O, NULL},
    {"_register_tiled_type", register_tiled_type, METH_O, NULL},
    {NULL, NULL, 0, NULL},
};

int swpy_tiled_init(PyObject *module, swpy_state *st) {
    (void)st;
    return PyModule_AddFunctions(module, tiled_methods);
}
