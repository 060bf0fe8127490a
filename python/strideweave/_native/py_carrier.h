/*
 * The carrier types of the extension: the Carrier base and the built-in
 * backends CPU, Generic and FileBacked, plus the conversions every carrier
 * and tensor call shares (values, dtypes, arguments).
 *
 * Identity through peers. Every carrier object owns one reference to its
 * sw_carrier and is the carrier's peer (see sw_peer_hooks in base.h): while
 * the library holds further references (a tensor, an operation), the peer
 * is kept alive by an incref, so the library can always hand the same
 * Python object back (tensor.carrier is carrier) and the state of a Python
 * subclass survives as long as the library uses it. The hooks run with the
 * GIL held; the binding never changes a reference count without it. The
 * same holds for tensor and operation objects. The incref (the toggle
 * reference) is invisible to the cycle collector; gc.c reports it, and
 * what the library objects hold, when that is sound, so that cycles
 * through library objects are collected.
 *
 * Carrier() itself and Python subclasses of Carrier get an sw_carrier made
 * with sw_carrier_new and the binding's vtable, whose slots call the
 * instance's Python methods (size, dtype, get_value, set_value,
 * _is_mutable, _release, allocate_like, new_like). The built-in backends
 * (and their Python subclasses) wrap the library's own carriers, made in
 * __init__.
 */
#ifndef SWPY_CARRIER_H
#define SWPY_CARRIER_H

#include "module.h"

#include "strideweave/carrier.h"

typedef struct {
    PyObject_HEAD
        /* Owned; NULL until a built-in backend's __init__ has run, and after
         * the garbage collector cleared the object. */
        sw_carrier *carrier;
    /* The tensor objects whose .carrier is this object and whose tensor
     * holds its carrier (each one reference of the library's); see rule
     * (a) in gc.c. */
    Py_ssize_t tensor_peers;

    PyObject *weakreflist;
} CarrierObject;

/* Creates the Carrier, CPU, Generic and FileBacked types. */
int swpy_carrier_init_types(PyObject *module, swpy_state *st);
int swpy_cpu_init_type(PyObject *module, swpy_state *st);
int swpy_generic_init_type(PyObject *module, swpy_state *st);
int swpy_file_init_type(PyObject *module, swpy_state *st);
/* BlockDevice and BlockDeviceCarrier (block_device.c). */
int swpy_blockdev_init_types(PyObject *module, swpy_state *st);
int swpy_opencl_init_type(PyObject *module, swpy_state *st);

/* ------------------------------------------- shared by the carrier types */

/* tp_new of the built-in backends: an empty object; __init__ fills it. */
PyObject *swpy_backend_new(PyTypeObject *type, PyObject *args, PyObject *kwds);
/* Gives an initialised-once object its owned carrier and makes it the
 * peer. Returns 0, or -1 (carrier released) if self already has one. */
int swpy_carrier_adopt(PyObject *self, sw_carrier *owned, const char *name);

/*
 * The carrier of a carrier object, or NULL with TypeError if a subclass's
 * __init__ never called the backend's (name is the backend class name).
 */
sw_carrier *swpy_carrier_of(PyObject *self, const char *name);

/* The carrier of self if it is of the backend that is(c) accepts, else
 * NULL with TypeError naming the backend. */
sw_carrier *swpy_backend_of(PyObject *self, int (*is)(const sw_carrier *),
                            const char *name);

/* Non-zero if o is an instance of Carrier (any backend, any subclass). */
int swpy_is_carrier(swpy_state *st, PyObject *o);

/*
 * The Python object for a carrier the library returned (an owned
 * reference, consumed): its peer if it has one, else a new object of the
 * exact built-in type of its backend, made its peer.
 */
PyObject *swpy_carrier_wrap(swpy_state *st, sw_carrier *owned);

/* Non-zero for carriers whose hooks are Python methods. */
int swpy_carrier_is_python(const sw_carrier *c);
/* The peer hooks of every carrier object. */
const sw_peer_hooks *swpy_peer_hooks(void);

/* ---------------------------------------------------------------- values */

/* The host-value operations of Python objects (for SW_VALUE_HOST). */
extern const sw_host_ops swpy_host_ops;

/*
 * A Python value as an element for a carrier of the given backend and
 * dtype. numeric is non-zero for backends that store numbers (CPU,
 * FileBacked): an integer becomes SW_VALUE_I64, a float (or anything with
 * __float__) SW_VALUE_F64, and other objects stay host references, which
 * the library rejects with its own message at the point its checks reach
 * the value; for an Int32 store a non-integer becomes SW_VALUE_F64 ("must
 * be an integer"). none_is_hole maps None to SW_VALUE_NONE (a hole, 0).
 * Host references are borrowed from v. Returns 0, or -1 with an exception
 * set (an __index__ or __float__ that raised).
 */
int swpy_value_convert(int numeric, sw_dtype dtype, int none_is_hole,
                       PyObject *v, sw_value *out);

/* The same for a write into carrier dest. */
int swpy_value_for(sw_carrier *dest, PyObject *v, sw_value *out);

/* A value read from carrier src as a Python object; consumes *v. */
PyObject *swpy_value_to_py(const sw_carrier *src, sw_value *v);

/* A new reference to the Python object for a value (not consumed). */
PyObject *swpy_value_new_ref(const sw_value *v);

/*
 * A sequence of values (any iterable) as an array for new_like, converted
 * for the backend as swpy_value_convert with none_is_hole. *keep holds the
 * host references; free with swpy_values_free.
 */
typedef struct {
    sw_value *items;
    int64_t n;
    PyObject *keep;
    /* Non-zero if some entry is a host reference. */
    int has_host;
} swpy_values;

int swpy_values_init(swpy_values *vals, PyObject *iterable, int numeric,
                     sw_dtype dtype);
void swpy_values_free(swpy_values *vals);

/* ---------------------------------------------------------------- dtypes */

/* The DType member for d (a new reference). */
PyObject *swpy_dtype_to_py(swpy_state *st, sw_dtype d);

/* 1 and *out if o is a DType member, 0 if it is not, -1 on error. */
int swpy_dtype_from_py(swpy_state *st, PyObject *o, sw_dtype *out);

/*
 * The dtype argument of allocate_like and new_like: None means the
 * carrier's own (SW_DTYPE_COUNT). A non-DType raises TypeError('<name>
 * dtype must be a DType') when type_error is set; otherwise it becomes
 * SW_DTYPE_ANY, which the numeric backends reject with their own message.
 */
int swpy_dtype_arg(swpy_state *st, PyObject *o, const char *name,
                   int type_error, sw_dtype *out);

/* ------------------------------------------------------------- arguments */

/*
 * An integer argument through __index__ (bool accepted, float refused with
 * TypeError). Values outside int64 are clamped to INT64_MIN or INT64_MAX,
 * which the library's range checks reject.
 */
int swpy_index_arg(PyObject *o, int64_t *out);

/* The size argument of allocate_like: an index, and non-negative
 * (ValueError '<Name> allocation size must be non-negative'). */
int swpy_alloc_size_arg(sw_carrier *c, PyObject *o, int64_t *out);

/* Whether a bulk call of n elements is worth releasing the GIL for. */
static inline int swpy_bulk(int64_t n) {
    return n >= 16384;
}

/*
 * What tells the built-in backends' new_like and allocate_like apart; the
 * rest (arguments, keywords, checks, messages, wrapping) is one code.
 */
typedef enum {
    /* The library call runs with the GIL held. */
    SWPY_GIL_KEEP,
    /* Released for sizes worth it (swpy_bulk). */
    SWPY_GIL_BULK,
    /* Released for every call. */
    SWPY_GIL_ALWAYS
} swpy_gil_policy;

typedef struct {
    /* The class name used in messages. */
    const char *name;
    /* Accepts the backend's carriers (as for swpy_backend_of). */
    int (*is)(const sw_carrier *);
    /* new_like refuses Python subclasses with NotImplementedError
     * ('<name> carrier factory only supports exact <name> carriers'). */
    int exact_new_like;
    /* swpy_dtype_arg's type_error: a non-DType dtype raises TypeError;
     * otherwise it becomes the "any" dtype, left to the library. */
    int dtype_type_error;
    /* For new_like, the GIL is released only when no value is a host
     * reference (those are converted through Python). */
    swpy_gil_policy gil;
} swpy_backend;

/*
 * new_like(values, *, mutable=True, dtype=None) and
 * allocate_like(size, *, mutable=True, dtype=None, empty=False) of a
 * built-in backend. Values are converted as the carrier stores them
 * (numbers for CPU and FileBacked, and for a hierarchy over one; host
 * references otherwise).
 */
PyObject *swpy_backend_new_like(const swpy_backend *b, PyObject *self,
                                PyObject *args, PyObject *kwds);
PyObject *swpy_backend_allocate_like(const swpy_backend *b, PyObject *self,
                                     PyObject *args, PyObject *kwds);

/*
 * The arguments of scatter(to_scatter, scatter_onto, mapping,
 * mapping_offset=None) of a built-in backend, with the carrier and the
 * module state; each backend checks them in its own order. Returns 0, or
 * -1 with an exception set.
 */
typedef struct {
    PyObject *src;
    PyObject *onto;
    PyObject *mapping;
    /* NULL when not given. */
    PyObject *offset;
    sw_carrier *carrier;
    swpy_state *st;
} swpy_scatter_args;

int swpy_backend_scatter_args(const swpy_backend *b, PyObject *self,
                              PyObject *args, PyObject *kwds,
                              swpy_scatter_args *out);

/* Creates the type of spec (a subclass of base, or of object for NULL),
 * stores it in *out and adds it to module. Returns 0 or -1. */
int swpy_add_type(PyObject *module, PyType_Spec *spec, PyTypeObject *base,
                  PyTypeObject **out);

/* Shared methods of the built-in backends. */
PyObject *swpy_carrier_size(PyObject *self, PyObject *unused);
PyObject *swpy_carrier_dtype(PyObject *self, PyObject *unused);
PyObject *swpy_carrier_get_value(PyObject *self, PyObject *index);
PyObject *swpy_carrier_set_value(PyObject *self, PyObject *const *args,
                                 Py_ssize_t nargs);

/* _native._debug_allocate_like(carrier, size, dtype=None) and
 * _native._debug_new_like(carrier, values): the library's factory policy,
 * which runs a Python carrier's hooks (for tests). */
PyObject *swpy_debug_allocate_like(PyObject *module, PyObject *const *args,
                                   Py_ssize_t nargs);
PyObject *swpy_debug_new_like(PyObject *module, PyObject *const *args,
                              Py_ssize_t nargs);

/* The slot functions of the Carrier type, reused by its subclasses. */
void swpy_carrier_dealloc(PyObject *self);
int swpy_carrier_traverse(PyObject *self, visitproc visit, void *arg);
int swpy_carrier_clear(PyObject *self);

#endif /* SWPY_CARRIER_H */
