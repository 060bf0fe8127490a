/*
 * ProfilerSession: one library profiler (include/strideweave/profile.h)
 * for strideweave.profiling.Profiler, which adds the argument checks and
 * the result objects.
 *
 * Carrier classes become the dispatch tags their carriers record (the
 * built-in CPU and Generic record their backend class, Python classes
 * themselves, by address). An executed operation with a Python object is
 * named by that object's class; the event keeps it, and the Python class
 * that dispatched the operation, alive until it is freed (a pair made
 * when the operation runs). One without an object is named by the class of
 * its native operation class and was dispatched by a built-in carrier, if
 * at all (a Python carrier class dispatches through its objects).
 */
#include "module.h"

#include "errors.h"
#include "gil.h"
#include "py_layout.h"
#include "operation.h"
#include "strideweave/profile.h"

typedef struct {
    PyObject_HEAD sw_profiler *profiler;
} SessionObject;

#define SESSION(o) (((SessionObject *)(o))->profiler)

/* The classes of an executing operation: (its Python object's class, the
 * Python class that dispatched it or None), or NULL when it has no object
 * (the native class names it). */
static const void *impl_tag(const sw_op *op) {
    if (sw_op_get_peer(op) == NULL) {
        return NULL;
    }
    swpy_gil g = swpy_gil_ensure();
    PyObject *peer = sw_op_get_peer(op);
    PyObject *pair = NULL;
    if (peer != NULL) {
        /* The hook cannot fail: without memory for the pair, the native
         * class names the event, and a pending exception stays as it was. */
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        PyObject *by = ((OperationObject *)peer)->dispatch_type;
        pair = PyTuple_Pack(2, (PyObject *)Py_TYPE(peer),
                            by != NULL ? by : Py_None);
        PyErr_Clear();
        PyErr_Restore(type, value, tb);
    }
    swpy_gil_release(g);
    return pair;
}

static void impl_release(const void *tag) {
    swpy_gil g = swpy_gil_ensure();
    Py_DECREF((PyObject *)tag);
    swpy_gil_release(g);
}

static PyObject *session_new(PyTypeObject *type, PyObject *args,
                             PyObject *kwds) {
    static char *kwlist[] = {"carriers", "record_shapes", "record_backward",
                             NULL};
    PyObject *carriers = NULL;
    int record_shapes = 0, record_backward = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "Op|p:ProfilerSession", kwlist,
                                     &carriers, &record_shapes,
                                     &record_backward)) {
        return NULL;
    }
    swpy_state *st = swpy_state_of_type(type);
    if (st == NULL) {
        return NULL;
    }
    const void **tags = NULL;
    Py_ssize_t n = -1;
    if (carriers != Py_None) {
        if (!PyTuple_Check(carriers)) {
            PyErr_SetString(PyExc_TypeError,
                            "carriers must be a tuple of classes or None");
            return NULL;
        }
        n = PyTuple_GET_SIZE(carriers);
        if (n > INT32_MAX) {
            PyErr_SetString(PyExc_ValueError, "too many carrier classes");
            return NULL;
        }
        tags = PyMem_Malloc((size_t)(n > 0 ? n : 1) * sizeof *tags);
        if (tags == NULL) {
            PyErr_NoMemory();
            return NULL;
        }
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *cls = PyTuple_GET_ITEM(carriers, i);
            if (!PyType_Check(cls)) {
                PyMem_Free(tags);
                PyErr_SetString(PyExc_TypeError,
                                "carriers must contain only Carrier "
                                "subclasses");
                return NULL;
            }
            tags[i] = swpy_carrier_class_tag(st, (PyTypeObject *)cls);
        }
    }
    sw_profiler *p = NULL;
    sw_status s = sw_profiler_new(&p);
    if (s == SW_OK) {
        s = sw_profiler_set_carriers(p, (int32_t)n, tags);
    }
    if (s == SW_OK) {
        s = sw_profiler_set_record_shapes(p, record_shapes);
    }
    if (s == SW_OK) {
        s = sw_profiler_set_record_backward(p, record_backward);
    }
    if (s == SW_OK) {
        s = sw_profiler_set_impl_hooks(p, impl_tag, impl_release);
    }
    PyMem_Free(tags);
    if (s != SW_OK) {
        sw_profiler_unref(p);
        return swpy_raise(s);
    }
    PyObject *self = type->tp_alloc(type, 0);
    if (self == NULL) {
        sw_profiler_unref(p);
        return NULL;
    }
    SESSION(self) = p;
    return self;
}

static void session_dealloc(PyObject *self) {
    PyTypeObject *type = Py_TYPE(self);
    sw_profiler *p = SESSION(self);
    SESSION(self) = NULL;
    /* A session still running is abandoned; its thread drops it. */
    sw_profiler_abandon(p);
    sw_profiler_unref(p);
    type->tp_free(self);
    Py_DECREF(type);
}

static PyObject *session_start(PyObject *self, PyObject *unused) {
    if (swpy_check(sw_profiler_start(SESSION(self))) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *session_stop(PyObject *self, PyObject *unused) {
    if (swpy_check(sw_profiler_stop(SESSION(self))) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *session_abandon(PyObject *self, PyObject *unused) {
    sw_profiler_abandon(SESSION(self));
    Py_RETURN_NONE;
}

static PyObject *session_get_active(PyObject *self, void *closure) {
    return PyBool_FromLong(sw_profiler_is_active(SESSION(self)));
}

/* layout.shape.top_level of a recorded layout, one object per layout. */
static PyObject *shape_of(swpy_state *st, PyObject *cache, const sw_layout *l) {
    PyObject *key = PyLong_FromVoidPtr((void *)l);
    if (key == NULL) {
        return NULL;
    }
    PyObject *top = PyDict_GetItemWithError(cache, key);
    if (top != NULL || PyErr_Occurred()) {
        Py_DECREF(key);
        return Py_XNewRef(top);
    }
    PyObject *layout = swpy_layout_wrap(st, sw_layout_retain((sw_layout *)l));
    PyObject *shape =
        layout != NULL ? PyObject_GetAttrString(layout, "shape") : NULL;
    top = shape != NULL ? PyObject_GetAttrString(shape, "top_level") : NULL;
    Py_XDECREF(shape);
    Py_XDECREF(layout);
    if (top != NULL && PyDict_SetItem(cache, key, top) < 0) {
        Py_CLEAR(top);
    }
    Py_DECREF(key);
    return top;
}

static PyObject *shapes_of(swpy_state *st, PyObject *cache,
                           const sw_profile_event *e) {
    if (e->nshapes < 0) {
        Py_RETURN_NONE;
    }
    PyObject *t = PyTuple_New(e->nshapes);
    for (int32_t i = 0; t != NULL && i < e->nshapes; i++) {
        PyObject *item = e->shapes[i] != NULL
                             ? shape_of(st, cache, e->shapes[i])
                             : Py_NewRef(Py_None);
        if (item == NULL) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, i, item);
    }
    return t;
}

static PyObject *event_tuple(swpy_state *st, PyObject *cache,
                             const sw_profile_event *e) {
    PyObject *pair = (PyObject *)e->impl_tag;
    PyObject *by = pair != NULL ? PyTuple_GET_ITEM(pair, 1) : NULL;
    PyObject *carrier =
        swpy_carrier_tag_type(st, e->carrier_tag, by != Py_None ? by : NULL);
    if (carrier == NULL) {
        return NULL;
    }
    PyObject *impl = pair != NULL ? Py_NewRef(PyTuple_GET_ITEM(pair, 0))
                                  : swpy_op_class_type(st, e->impl_class);
    PyObject *shapes = shapes_of(st, cache, e);
    PyObject *parent = e->parent_id >= 0 ? PyLong_FromLongLong(e->parent_id)
                                         : Py_NewRef(Py_None);
    PyObject *r = NULL;
    if (shapes != NULL && parent != NULL) {
        r = Py_BuildValue("(LOsOOOLLLKO)", (long long)e->id, parent, e->name,
                          carrier, impl, shapes, (long long)e->start_ns,
                          (long long)e->duration_ns, (long long)e->self_ns,
                          (unsigned long long)e->thread_id,
                          e->succeeded ? Py_True : Py_False);
    }
    Py_XDECREF(parent);
    Py_XDECREF(shapes);
    Py_DECREF(impl);
    Py_DECREF(carrier);
    return r;
}

static PyObject *session_events(PyObject *self, PyObject *unused) {
    swpy_state *st = swpy_state_of_type(Py_TYPE(self));
    if (st == NULL) {
        return NULL;
    }
    sw_profiler *p = SESSION(self);
    int64_t n = 0;
    if (swpy_check(sw_profiler_event_count(p, &n)) < 0) {
        return NULL;
    }
    PyObject *cache = PyDict_New();
    PyObject *out = cache != NULL ? PyTuple_New((Py_ssize_t)n) : NULL;
    for (int64_t i = 0; out != NULL && i < n; i++) {
        sw_profile_event e;
        PyObject *item = NULL;
        if (swpy_check(sw_profiler_event(p, i, &e)) == 0) {
            item = event_tuple(st, cache, &e);
        }
        if (item == NULL) {
            Py_CLEAR(out);
            break;
        }
        PyTuple_SET_ITEM(out, (Py_ssize_t)i, item);
    }
    Py_XDECREF(cache);
    return out;
}

/* refresh(): whether move completions that arrived since the last
 * refresh changed the results (see sw_profiler_refresh). */
static PyObject *session_refresh(PyObject *self, PyObject *unused) {
    int changed = 0;
    if (swpy_check(sw_profiler_refresh(SESSION(self), &changed)) < 0) {
        return NULL;
    }
    return PyBool_FromLong(changed);
}

/* late_count(): the move completions recorded so far. */
static PyObject *session_late_count(PyObject *self, PyObject *unused) {
    return PyLong_FromLongLong(sw_profiler_late_count(SESSION(self)));
}

static PyObject *profile_now(PyObject *module, PyObject *unused) {
    return PyLong_FromLongLong(sw_profile_now_ns());
}

static PyMethodDef session_methods[] = {
    {"start", session_start, METH_NOARGS,
     "Makes this session the active one of the calling thread."},
    {"stop", session_stop, METH_NOARGS,
     "Ends the session (on the thread that started it)."},
    {"abandon", session_abandon, METH_NOARGS,
     "Abandons a running session without error."},
    {"refresh", session_refresh, METH_NOARGS,
     "Takes in the move completions that arrived: whether the events "
     "changed."},
    {"late_count", session_late_count, METH_NOARGS,
     "The number of move completions recorded so far."},
    {"events", session_events, METH_NOARGS,
     "The recorded events as tuples (id, parent_id, name, carrier_type, "
     "implementation_type, input_shapes, start_time_ns, duration_ns, "
     "self_time_ns, thread_id, succeeded)."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef session_getset[] = {
    {"active", session_get_active, NULL,
     "Whether the session runs (started, not stopped or abandoned).", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

/* The slot table stores function pointers in void * (the CPython API). */
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
#endif
static PyType_Slot session_slots[] = {
    {Py_tp_new, session_new},
    {Py_tp_dealloc, session_dealloc},
    {Py_tp_methods, session_methods},
    {Py_tp_getset, session_getset},
    {0, NULL},
};
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

static PyType_Spec session_spec = {
    .name = "strideweave._native.ProfilerSession",
    .basicsize = sizeof(SessionObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = session_slots,
};

static PyMethodDef profile_functions[] = {
    {"profile_now_ns", profile_now, METH_NOARGS,
     "The monotonic clock of profiler events, in nanoseconds."},
    {NULL, NULL, 0, NULL},
};

int swpy_profile_init(PyObject *module, swpy_state *st) {
    PyObject *type = PyType_FromModuleAndSpec(module, &session_spec, NULL);
    if (type == NULL) {
        return -1;
    }
    st->profiler_type = (PyTypeObject *)type;
    if (PyModule_AddType(module, st->profiler_type) < 0) {
        return -1;
    }
    return PyModule_AddFunctions(module, profile_functions);
}
