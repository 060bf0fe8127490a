/*
 * strideweave.distributed's native half (the library's distributed.h):
 * the collectives, their completions and data-parallel gradients. A
 * completion or a DistributedDataParallel state is a capsule that the
 * Python layer wraps; the GIL is released around every call that may
 * wait for other processes. No call here runs Python code from the
 * library's threads.
 */
#include "module.h"
#include "errors.h"
#include "py_kernels.h"
#include "py_tensor.h"

#include "strideweave/distributed.h"

#define WORK_NAME "strideweave.distributed.work"
#define DDP_NAME "strideweave.distributed.ddp"

static void work_capsule_free(PyObject *cap) {
    sw_dist_work_unref(PyCapsule_GetPointer(cap, WORK_NAME));
}

/* A DistributedDataParallel state: closed (NULL) before its capsule goes. */
typedef struct ddp_box {
    sw_dist_ddp *d;
} ddp_box;

static void ddp_capsule_free(PyObject *cap) {
    ddp_box *box = PyCapsule_GetPointer(cap, DDP_NAME);
    if (box != NULL) {
        sw_dist_ddp_unref(box->d);
        PyMem_Free(box);
    }
}

static sw_tensor *tensor_arg(PyObject *module, PyObject *o, const char *who) {
    swpy_state *st = swpy_module_state(module);
    if (!swpy_is_tensor(st, o)) {
        PyErr_Format(PyExc_TypeError, "%s needs a Tensor, not %.100s", who,
                     Py_TYPE(o)->tp_name);
        return NULL;
    }
    return swpy_tensor_of(o);
}

/* Blocking (async false: returns result, a new reference) or queued
 * (returns (result, work capsule)). */
static PyObject *finish(PyObject *module, sw_status s, sw_tensor *out,
                        PyObject *in_place, sw_dist_work *w) {
    if (s != SW_OK) {
        return swpy_raise(s);
    }
    PyObject *result;
    if (out != NULL) {
        result = swpy_tensor_wrap(swpy_module_state(module), out);
        if (result == NULL) {
            sw_dist_work_unref(w);
            return NULL;
        }
    } else {
        result = Py_NewRef(in_place);
    }
    if (w == NULL) {
        return result;
    }
    PyObject *cap = PyCapsule_New(w, WORK_NAME, work_capsule_free);
    if (cap == NULL) {
        sw_dist_work_unref(w);
        Py_DECREF(result);
        return NULL;
    }
    return Py_BuildValue("(NN)", result, cap);
}

static PyObject *fn_all_reduce(PyObject *module, PyObject *args) {
    PyObject *t_obj;
    int op, queued;
    if (!PyArg_ParseTuple(args, "Oip:_dist_all_reduce", &t_obj, &op, &queued)) {
        return NULL;
    }
    sw_tensor *t = tensor_arg(module, t_obj, "all_reduce");
    if (t == NULL) {
        return NULL;
    }
    sw_dist_work *w = NULL;
    sw_status s;
    Py_BEGIN_ALLOW_THREADS;
    s = sw_dist_all_reduce(t, (sw_dist_reduce)op, queued ? &w : NULL);
    Py_END_ALLOW_THREADS;
    return finish(module, s, NULL, t_obj, w);
}

static PyObject *fn_broadcast(PyObject *module, PyObject *args) {
    PyObject *t_obj;
    int root, queued;
    if (!PyArg_ParseTuple(args, "Oip:_dist_broadcast", &t_obj, &root,
                          &queued)) {
        return NULL;
    }
    sw_tensor *t = tensor_arg(module, t_obj, "broadcast");
    if (t == NULL) {
        return NULL;
    }
    sw_dist_work *w = NULL;
    sw_status s;
    Py_BEGIN_ALLOW_THREADS;
    s = sw_dist_broadcast(t, root, queued ? &w : NULL);
    Py_END_ALLOW_THREADS;
    return finish(module, s, NULL, t_obj, w);
}

static PyObject *fn_all_gather(PyObject *module, PyObject *args) {
    PyObject *t_obj;
    int queued;
    if (!PyArg_ParseTuple(args, "Op:_dist_all_gather", &t_obj, &queued)) {
        return NULL;
    }
    sw_tensor *t = tensor_arg(module, t_obj, "all_gather");
    if (t == NULL) {
        return NULL;
    }
    sw_dist_work *w = NULL;
    sw_tensor *out = NULL;
    sw_status s;
    Py_BEGIN_ALLOW_THREADS;
    s = sw_dist_all_gather(t, &out, queued ? &w : NULL);
    Py_END_ALLOW_THREADS;
    return finish(module, s, out, NULL, w);
}

static PyObject *fn_reduce_scatter(PyObject *module, PyObject *args) {
    PyObject *t_obj;
    int op, queued;
    if (!PyArg_ParseTuple(args, "Oip:_dist_reduce_scatter", &t_obj, &op,
                          &queued)) {
        return NULL;
    }
    sw_tensor *t = tensor_arg(module, t_obj, "reduce_scatter");
    if (t == NULL) {
        return NULL;
    }
    sw_dist_work *w = NULL;
    sw_tensor *out = NULL;
    sw_status s;
    Py_BEGIN_ALLOW_THREADS;
    s = sw_dist_reduce_scatter(t, (sw_dist_reduce)op, &out, queued ? &w : NULL);
    Py_END_ALLOW_THREADS;
    return finish(module, s, out, NULL, w);
}

static PyObject *fn_barrier(PyObject *module, PyObject *arg) {
    int queued = PyObject_IsTrue(arg);
    if (queued < 0) {
        return NULL;
    }
    sw_dist_work *w = NULL;
    sw_status s;
    Py_BEGIN_ALLOW_THREADS;
    s = sw_dist_barrier(queued ? &w : NULL);
    Py_END_ALLOW_THREADS;
    return finish(module, s, NULL, Py_None, w);
}

static sw_dist_work *work_of(PyObject *cap) {
    return PyCapsule_GetPointer(cap, WORK_NAME);
}

static PyObject *fn_work_done(PyObject *module, PyObject *cap) {
    sw_dist_work *w = work_of(cap);
    return w == NULL ? NULL : PyBool_FromLong(sw_dist_work_done(w));
}

static PyObject *fn_work_wait(PyObject *module, PyObject *cap) {
    sw_dist_work *w = work_of(cap);
    if (w == NULL) {
        return NULL;
    }
    sw_status s;
    Py_BEGIN_ALLOW_THREADS;
    s = sw_dist_work_wait(w);
    Py_END_ALLOW_THREADS;
    return s != SW_OK ? swpy_raise(s) : Py_NewRef(Py_None);
}

static PyObject *status_none(sw_status s) {
    return s != SW_OK ? swpy_raise(s) : Py_NewRef(Py_None);
}

static PyObject *fn_available(PyObject *module, PyObject *unused) {
    return PyBool_FromLong(sw_dist_available());
}

static PyObject *fn_init(PyObject *module, PyObject *unused) {
    sw_status s;
    Py_BEGIN_ALLOW_THREADS;
    s = sw_dist_init();
    Py_END_ALLOW_THREADS;
    return status_none(s);
}

static PyObject *fn_initialized(PyObject *module, PyObject *unused) {
    return PyBool_FromLong(sw_dist_initialized());
}

static PyObject *fn_finalize(PyObject *module, PyObject *unused) {
    sw_status s;
    Py_BEGIN_ALLOW_THREADS;
    s = sw_dist_finalize();
    Py_END_ALLOW_THREADS;
    return status_none(s);
}

static PyObject *fn_rank(PyObject *module, PyObject *unused) {
    int r = 0;
    sw_status s = sw_dist_rank(&r);
    return s != SW_OK ? swpy_raise(s) : PyLong_FromLong(r);
}

static PyObject *fn_world_size(PyObject *module, PyObject *unused) {
    int n = 0;
    sw_status s = sw_dist_world_size(&n);
    return s != SW_OK ? swpy_raise(s) : PyLong_FromLong(n);
}

static PyObject *fn_abort(PyObject *module, PyObject *args) {
    int code;
    const char *message;
    if (!PyArg_ParseTuple(args, "is:_dist_abort", &code, &message)) {
        return NULL;
    }
    sw_status s;
    Py_BEGIN_ALLOW_THREADS;
    s = sw_dist_abort(code, message);
    Py_END_ALLOW_THREADS;
    return status_none(s);
}

static PyObject *fn_set_timeout(PyObject *module, PyObject *arg) {
    double seconds = PyFloat_AsDouble(arg);
    if (seconds == -1.0 && PyErr_Occurred()) {
        return NULL;
    }
    return status_none(sw_dist_set_timeout(seconds));
}

static PyObject *fn_timeout(PyObject *module, PyObject *unused) {
    return PyFloat_FromDouble(sw_dist_timeout());
}

/* ----------------------------------------------------------------- ddp */

static PyObject *fn_ddp_new(PyObject *module, PyObject *args) {
    PyObject *params_obj;
    long long bucket_bytes;
    if (!PyArg_ParseTuple(args, "OL:_dist_ddp_new", &params_obj,
                          &bucket_bytes)) {
        return NULL;
    }
    PyObject *seq =
        PySequence_Fast(params_obj, "parameters must be a sequence");
    if (seq == NULL) {
        return NULL;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n > INT32_MAX) {
        Py_DECREF(seq);
        PyErr_SetString(PyExc_ValueError, "too many parameters");
        return NULL;
    }
    sw_tensor **params = PyMem_Calloc((size_t)n + 1, sizeof *params);
    if (params == NULL) {
        Py_DECREF(seq);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        params[i] =
            tensor_arg(module, PySequence_Fast_GET_ITEM(seq, i), "parameter");
        if (params[i] == NULL) {
            PyMem_Free(params);
            Py_DECREF(seq);
            return NULL;
        }
    }
    ddp_box *box = PyMem_Calloc(1, sizeof *box);
    if (box == NULL) {
        PyMem_Free(params);
        Py_DECREF(seq);
        return PyErr_NoMemory();
    }
    sw_status s;
    Py_BEGIN_ALLOW_THREADS;
    s = sw_dist_ddp_new(params, (int32_t)n, (int64_t)bucket_bytes, &box->d);
    Py_END_ALLOW_THREADS;
    PyMem_Free(params);
    Py_DECREF(seq);
    if (s != SW_OK) {
        PyMem_Free(box);
        return swpy_raise(s);
    }
    PyObject *cap = PyCapsule_New(box, DDP_NAME, ddp_capsule_free);
    if (cap == NULL) {
        sw_dist_ddp_unref(box->d);
        PyMem_Free(box);
    }
    return cap;
}

static ddp_box *box_of(PyObject *cap) {
    return PyCapsule_GetPointer(cap, DDP_NAME);
}

static PyObject *fn_ddp_state(PyObject *module, PyObject *cap) {
    ddp_box *box = box_of(cap);
    if (box == NULL) {
        return NULL;
    }
    if (box->d == NULL) {
        PyErr_SetString(PyExc_RuntimeError,
                        "DistributedDataParallel is closed");
        return NULL;
    }
    int32_t n = sw_dist_ddp_pending(box->d);
    return Py_BuildValue("(ii)", (int)n, (int)sw_dist_ddp_buckets(box->d));
}

static PyObject *fn_ddp_reported(PyObject *module, PyObject *args) {
    PyObject *cap;
    int i;
    if (!PyArg_ParseTuple(args, "Oi:_dist_ddp_reported", &cap, &i)) {
        return NULL;
    }
    ddp_box *box = box_of(cap);
    if (box == NULL) {
        return NULL;
    }
    return PyBool_FromLong(box->d ? sw_dist_ddp_reported(box->d, i) : 0);
}

static PyObject *fn_ddp_reset(PyObject *module, PyObject *cap) {
    ddp_box *box = box_of(cap);
    if (box == NULL) {
        return NULL;
    }
    if (box->d != NULL) {
        Py_BEGIN_ALLOW_THREADS;
        sw_dist_ddp_reset(box->d);
        Py_END_ALLOW_THREADS;
    }
    Py_RETURN_NONE;
}

static PyObject *fn_ddp_set_sync(PyObject *module, PyObject *args) {
    PyObject *cap;
    int on;
    if (!PyArg_ParseTuple(args, "Op:_dist_ddp_set_sync", &cap, &on)) {
        return NULL;
    }
    ddp_box *box = box_of(cap);
    if (box == NULL) {
        return NULL;
    }
    if (box->d != NULL) {
        sw_dist_ddp_set_sync(box->d, on);
    }
    Py_RETURN_NONE;
}

static PyObject *fn_ddp_close(PyObject *module, PyObject *cap) {
    ddp_box *box = box_of(cap);
    if (box == NULL) {
        return NULL;
    }
    sw_dist_ddp *d = box->d;
    box->d = NULL;
    Py_BEGIN_ALLOW_THREADS;
    sw_dist_ddp_unref(d);
    Py_END_ALLOW_THREADS;
    Py_RETURN_NONE;
}

static PyMethodDef distributed_methods[] = {
    {"_dist_available", fn_available, METH_NOARGS, NULL},
    {"_dist_init", fn_init, METH_NOARGS, NULL},
    {"_dist_initialized", fn_initialized, METH_NOARGS, NULL},
    {"_dist_finalize", fn_finalize, METH_NOARGS, NULL},
    {"_dist_rank", fn_rank, METH_NOARGS, NULL},
    {"_dist_world_size", fn_world_size, METH_NOARGS, NULL},
    {"_dist_abort", fn_abort, METH_VARARGS, NULL},
    {"_dist_set_timeout", fn_set_timeout, METH_O, NULL},
    {"_dist_timeout", fn_timeout, METH_NOARGS, NULL},
    {"_dist_all_reduce", fn_all_reduce, METH_VARARGS, NULL},
    {"_dist_broadcast", fn_broadcast, METH_VARARGS, NULL},
    {"_dist_all_gather", fn_all_gather, METH_VARARGS, NULL},
    {"_dist_reduce_scatter", fn_reduce_scatter, METH_VARARGS, NULL},
    {"_dist_barrier", fn_barrier, METH_O, NULL},
    {"_dist_work_done", fn_work_done, METH_O, NULL},
    {"_dist_work_wait", fn_work_wait, METH_O, NULL},
    {"_dist_ddp_new", fn_ddp_new, METH_VARARGS, NULL},
    {"_dist_ddp_state", fn_ddp_state, METH_O, NULL},
    {"_dist_ddp_reported", fn_ddp_reported, METH_VARARGS, NULL},
    {"_dist_ddp_reset", fn_ddp_reset, METH_O, NULL},
    {"_dist_ddp_set_sync", fn_ddp_set_sync, METH_VARARGS, NULL},
    {"_dist_ddp_close", fn_ddp_close, METH_O, NULL},
    {NULL, NULL, 0, NULL},
};

int swpy_distributed_init(PyObject *module, swpy_state *st) {
    (void)st;
    return PyModule_AddFunctions(module, distributed_methods);
}
