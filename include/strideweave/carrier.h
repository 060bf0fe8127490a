/*
 * StrideWeave carriers: dtypes, element values and the carrier base.
 *
 * A carrier owns or references storage. The base (sw_carrier_*) owns the
 * rules every carrier shares: the version counter, mutability, release,
 * ownership by a composite carrier, bounds and state checks. A backend
 * supplies its storage through an sw_carrier_class vtable; the base wraps
 * every slot and supplies the documented default for an empty one.
 *
 * Built-in backends: CPU (native memory), Generic (host values behind an
 * sw_host_ops vtable; doubles for C programs) and FileBacked (raw values in
 * a file).
 *
 * Ownership: sw_carrier is reference-counted (sw_carrier_retain and
 * sw_carrier_unref). Releasing a carrier's *storage*, the permanent
 * user-visible action, is sw_carrier_release_storage. Constructors write an
 * owned reference through their last parameter.
 *
 * Threads: a carrier may be read from several threads; writes and the
 * ownership protocol must be serialised by the caller, as with any
 * mutable object. Version counters are atomic. Release may happen on any
 * thread at any time: storage lifetime is one rule of the base (see
 * sw_carrier_pin) that element access, operations, the reverse pass,
 * moves, scatter and DLPack exports all obey, so no path frees storage
 * that another path is still reading.
 */
#ifndef STRIDEWEAVE_CARRIER_H
#define STRIDEWEAVE_CARRIER_H

#include "strideweave/base.h"
#include "strideweave/layout.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ dtypes */

typedef enum sw_dtype {
    SW_DTYPE_ANY = 0,      /* arbitrary host values (Generic only) */
    SW_DTYPE_FLOATING = 1, /* host numbers; doubles in files */
    SW_DTYPE_FLOAT32 = 2,
    SW_DTYPE_INT32 = 3,
    SW_DTYPE_BOOL = 4
} sw_dtype;

#define SW_DTYPE_COUNT 5

/* "Any", "Floating", "Float32", "Int32" or "Bool"; NULL if out of range. */
SW_API const char *sw_dtype_name(sw_dtype dtype);
/* Non-zero for Floating and Float32, the dtypes autograd works on. */
SW_API int sw_dtype_is_differentiable(sw_dtype dtype);
/* Bytes per element in native storage (8 for Floating, 0 for Any). */
SW_API int64_t sw_dtype_itemsize(sw_dtype dtype);

/* ------------------------------------------------------------------ values */

typedef struct sw_host_ops sw_host_ops;

typedef enum sw_value_kind {
    SW_VALUE_NONE = 0, /* no value: a layout hole (written as 0) */
    SW_VALUE_F64 = 1,
    SW_VALUE_I64 = 2,
    SW_VALUE_HOST = 3 /* a host object reference, released by ops */
} sw_value_kind;

/*
 * One element value. A value read from a carrier is owned by the reader:
 * sw_value_clear releases a host reference (a no-op for numbers). Values
 * passed to a write are borrowed.
 */
typedef struct sw_value {
    sw_value_kind kind;
    union {
        double f;
        int64_t i;
        void *host;
    } as;
    const sw_host_ops *ops; /* SW_VALUE_HOST: the ops owning the reference */
} sw_value;

SW_API sw_value sw_value_f64(double f);
SW_API sw_value sw_value_i64(int64_t i);
SW_API void sw_value_clear(sw_value *v);

/*
 * The value operations of Generic carriers' reference kernels. Binary:
 * ADD..POW take (a, b); unary: the rest take (x). Formulas as the
 * framework's functional operations define them (sigmoid and softplus in
 * their numerically stable forms, elu with alpha 1, leaky_relu with slope
 * 0.01, gelu in its erf form).
 */
typedef enum sw_vop {
    SW_VOP_ADD = 0,
    SW_VOP_SUB = 1,
    SW_VOP_MUL = 2,
    SW_VOP_DIV = 3,
    SW_VOP_POW = 4,
    SW_VOP_EXP = 5,
    SW_VOP_RELU = 6,
    SW_VOP_SIGMOID = 7,
    SW_VOP_TANH = 8,
    SW_VOP_GELU = 9,
    SW_VOP_SILU = 10,
    SW_VOP_SOFTPLUS = 11,
    SW_VOP_ELU = 12,
    SW_VOP_LEAKY_RELU = 13
} sw_vop;

#define SW_VOP_COUNT 14

/* The value of op on doubles (the reference arithmetic). */
SW_API double sw_vop_apply(sw_vop op, double a, double b);

/*
 * Host values for Generic carriers. A store is an indexable sequence of
 * host values owned by the carrier. C programs use sw_host_doubles, whose
 * store is an array of doubles; the Python binding supplies a store over a
 * Python sequence. version must be SW_HOST_OPS_VERSION.
 */
#define SW_HOST_OPS_VERSION 1
struct sw_host_ops {
    uint32_t version;
    /* The number of values in the store (>= 0), or a negative status. */
    int64_t (*length)(void *store);
    /* Reads value i (0 <= i < length) into *out, owned by the caller. */
    sw_status (*get)(void *store, int64_t i, sw_value *out);
    /* Writes value i; NULL if the store cannot be written. */
    sw_status (*set)(void *store, int64_t i, const sw_value *v);
    /* Makes a new store of n values (NULL values: n empty slots). */
    sw_status (*make)(const sw_host_ops *ops, int64_t n, const sw_value *values,
                      void **out);
    /* Drops the carrier's reference to the store. */
    void (*drop)(void *store);
    /* Releases one host value reference (for sw_value_clear). */
    void (*release_value)(void *host);
    /* Optional: op on host values (b is NULL for unary ops), giving an
     * owned value. Default: the values as numbers through sw_vop_apply. */
    sw_status (*apply)(sw_vop op, const sw_value *a, const sw_value *b,
                       sw_value *out);
    /* Optional: a host value as a number (SW_VALUE_F64 or SW_VALUE_I64).
     * Default: SW_ETYPE for host values. */
    sw_status (*to_number)(const sw_value *v, sw_value *out);
};

/* The built-in store of doubles (values read as SW_VALUE_F64). */
SW_API const sw_host_ops *sw_host_doubles(void);

/* ---------------------------------------------------------------- carriers */

typedef struct sw_carrier sw_carrier;
typedef struct sw_tensor sw_tensor;
struct sw_op;
struct sw_op_info;

/*
 * A carrier backend. version is SW_CARRIER_CLASS_VERSION (4); classes of
 * an earlier version are still accepted and end where their version did
 * (version 1 at dispatch_op, version 2 at dlpack_info, version 3 at
 * dispatch): the base never
 * reads a later slot of theirs and treats it as absent. Every slot receives the
 * carrier; sw_carrier_state gives the backend's state. The base has checked
 * release, bounds and mutability before a slot runs. Slots marked
 * optional may be NULL; the comment gives the default.
 */
#define SW_CARRIER_CLASS_VERSION 4
typedef struct sw_carrier_class {
    uint32_t version;
    /* A short name for messages: "CPU", "Generic", "FileBacked". */
    const char *name;
    /* Required: the number of elements. */
    int64_t (*size)(sw_carrier *c);
    /* Required: reads element i into *out (owned by the caller). */
    sw_status (*get)(sw_carrier *c, int64_t i, sw_value *out);
    /* Optional: writes element i. Default: RuntimeError, not mutable. */
    sw_status (*set)(sw_carrier *c, int64_t i, const sw_value *v);
    /* Optional: the dtype, for backends whose dtype is decided late (a
     * Python subclass answers through a method). Default: the dtype given
     * to sw_carrier_new. */
    sw_dtype (*dtype)(sw_carrier *c);
    /* Optional: the storage's intrinsic mutability. Default: 0. */
    int (*is_mutable)(sw_carrier *c);
    /* Optional: frees the storage (called once, when the carrier is
     * released and unpinned, or destroyed: possibly on another thread
     * than the release, see sw_carrier_pin). Default: nothing. */
    void (*release)(sw_carrier *c);
    /* Optional: frees the backend state when the last reference goes. */
    void (*destroy)(sw_carrier *c);
    /* Optional: fresh storage of the same backend. Default: NotImpl. */
    sw_status (*allocate_like)(sw_carrier *c, int64_t size, int mutable_,
                               sw_dtype dtype, int empty, sw_carrier **out);
    /* Optional: fresh storage holding values. Default: allocate_like, then
     * element writes. */
    sw_status (*new_like)(sw_carrier *c, int64_t n, const sw_value *values,
                          int mutable_, sw_dtype dtype, sw_carrier **out);
    /* Optional: contiguous native elements, NULL if none. */
    void *(*data)(sw_carrier *c);
    /* Optional: a fresh operation for a canonical name (see op.h).
     * Default: NotImplementedError, the carrier supports no operation. */
    sw_status (*dispatch_op)(sw_carrier *c, const char *name,
                             struct sw_op **out);
    /* Optional (version 2): where a DLPack export finds the data. Writes
     * the address the tensor offset is relative to (NULL when there is no
     * storage, as after release) and the DLPack device (device_type is a
     * DLDeviceType code). Runs on released carriers too. Default:
     * SW_EBUFFER "DLPack is not supported for this carrier". */
    sw_status (*dlpack_info)(sw_carrier *c, void **pointer,
                             int32_t *device_type, int32_t *device_id);
    /* Optional (version 3): a fresh operation for a registered operation
     * (registry.h), dispatched by its number. When present it serves every
     * registered name, and dispatch_op only names the registry does not
     * know. */
    sw_status (*dispatch)(sw_carrier *c, const struct sw_op_info *op,
                          struct sw_op **out);
    /* Optional (version 4): frees the storage at an explicit release that
     * finds no pin, instead of release, and may refuse: on failure the
     * carrier is live again and sw_carrier_release_storage returns the
     * status (concurrent readers may meanwhile have been told it was
     * released). A pinned carrier's release, or a destruction, runs
     * release as usual. */
    sw_status (*release_now)(sw_carrier *c);
} sw_carrier_class;

/*
 * Makes a carrier of a custom backend with the given state (owned by the
 * carrier from now on: destroy frees it). SW_EVALUE for a bad class.
 */
SW_API sw_status sw_carrier_new(const sw_carrier_class *cls, void *state,
                                sw_dtype dtype, sw_carrier **out);

SW_API sw_carrier *sw_carrier_retain(sw_carrier *c);
SW_API void sw_carrier_unref(sw_carrier *c);

/* Binding support: see sw_peer_hooks in base.h. */
SW_API void sw_carrier_set_peer(sw_carrier *c, void *peer,
                                const sw_peer_hooks *hooks);
SW_API void *sw_carrier_get_peer(const sw_carrier *c);
/* The number of references to c now, its peer's included (a snapshot;
 * see base.h). */
SW_API int64_t sw_carrier_refcount(const sw_carrier *c);

SW_API const sw_carrier_class *sw_carrier_get_class(const sw_carrier *c);
SW_API void *sw_carrier_state(const sw_carrier *c);
SW_API sw_dtype sw_carrier_dtype(const sw_carrier *c);
/* The element count; 0 after release. */
SW_API int64_t sw_carrier_size(sw_carrier *c);
SW_API int64_t sw_carrier_version(const sw_carrier *c);
SW_API int sw_carrier_is_released(const sw_carrier *c);
/* Writable through public interfaces now: intrinsically mutable, not
 * owned by a composite (or accessed by its owner), and not owned by a move
 * running on another thread (interop.h). */
SW_API int sw_carrier_is_mutable(sw_carrier *c);
/* Owned by a composite carrier (sw_carrier_claim) or by a pending move:
 * a move owns its source and destination from its submission until its
 * outcome is recorded (interop.h). */
SW_API int sw_carrier_is_owned(const sw_carrier *c);

/*
 * Element access with the base checks: RuntimeError "Carrier is released",
 * IndexError "Carrier index out of range", and for writes RuntimeError
 * "Carrier is not mutable". A successful write bumps the version by
 * exactly one.
 */
SW_API sw_status sw_carrier_get(sw_carrier *c, int64_t i, sw_value *out);
SW_API sw_status sw_carrier_set(sw_carrier *c, int64_t i, const sw_value *v);

/*
 * The carrier's DLPack storage through its dlpack_info slot (see
 * sw_carrier_class): SW_EBUFFER "DLPack is not supported for this
 * carrier" when the class has none. CPU carriers report their buffer
 * (NULL after release) on device (kDLCPU, 0); Generic and FileBacked have
 * no slot. A route set with sw_carrier_set_dlpack_route answers instead
 * of the slot. The outputs are written only on success.
 */
SW_API sw_status sw_carrier_dlpack_info(sw_carrier *c, void **pointer,
                                        int32_t *device_type,
                                        int32_t *device_id);

/*
 * Binding support: answers sw_carrier_dlpack_info for c through fn
 * instead of its class's slot, so that a host-language subclass of a
 * built-in backend (a Python subclass of CPU overriding dlpack_info)
 * decides for its instances. fn NULL restores the slot.
 */
typedef sw_status (*sw_dlpack_info_fn)(sw_carrier *c, void *ctx, void **pointer,
                                       int32_t *device_type,
                                       int32_t *device_id);
SW_API void sw_carrier_set_dlpack_route(sw_carrier *c, sw_dlpack_info_fn fn,
                                        void *ctx);

/*
 * Storage lifetime. A pin keeps c's storage (memory, file, host store:
 * whatever its slots reach) valid until the matching sw_carrier_unpin,
 * even if c is released meanwhile. Release (sw_carrier_release_storage,
 * a move's commit, an Evictable transition, a DLPack consumer's owner)
 * takes effect at once for everyone: c reports released, its size is 0,
 * element access and new pins fail with RuntimeError "Carrier is
 * released". But the class's release slot runs only when the last pin
 * goes, on the thread that drops it. So release never waits and is never
 * refused because of readers, and a reader never sees its storage freed.
 *
 * The library pins for every path that reaches storage outside the
 * carrier's own slots: sw_carrier_get/set for the slot call, every tensor
 * argument for an operation's forward, the gradient and saved inputs for
 * its backward, both tensors of a scatter or axpy, a move's destination,
 * bulk file transfers, and a DLPack export until its deleter runs.
 * Backends and bindings that read storage on their own pin the same way.
 * The caller keeps a reference to c while it holds a pin. Pins are
 * counted, so they nest.
 */
SW_API sw_status sw_carrier_pin(sw_carrier *c);
SW_API void sw_carrier_unpin(sw_carrier *c);
/* Non-zero while some pin is held (for tests and diagnostics). */
SW_API int sw_carrier_is_pinned(const sw_carrier *c);

/* Bumps the version; RuntimeError if owned without owner access. */
SW_API sw_status sw_carrier_bump_version(sw_carrier *c);

/*
 * Releases the storage permanently (idempotent; the version is unchanged).
 * RuntimeError if owned by a composite without owner access, or while an
 * asynchronous move uses c. The release slot runs now, or when the last
 * pin goes (see sw_carrier_pin).
 */
SW_API sw_status sw_carrier_release_storage(sw_carrier *c);

/* Fresh storage like c (dtype SW_DTYPE_COUNT means c's own dtype). */
SW_API sw_status sw_carrier_allocate_like(sw_carrier *c, int64_t size,
                                          int mutable_, sw_dtype dtype,
                                          int empty, sw_carrier **out);
SW_API sw_status sw_carrier_new_like(sw_carrier *c, int64_t n,
                                     const sw_value *values, int mutable_,
                                     sw_dtype dtype, sw_carrier **out);

/*
 * Ownership by a composite carrier. claim returns a token (RuntimeError if
 * released or already owned); the owner brackets its own accesses with
 * begin/end_owner_access (re-entrant on one thread).
 */
SW_API sw_status sw_carrier_claim(sw_carrier *c, int64_t *token);
SW_API sw_status sw_carrier_relinquish(sw_carrier *c, int64_t token);
SW_API sw_status sw_carrier_begin_owner_access(sw_carrier *c, int64_t token);
SW_API sw_status sw_carrier_end_owner_access(sw_carrier *c, int64_t token);
SW_API int sw_carrier_has_owner_access(const sw_carrier *c);

/* ------------------------------------------------------ built-in backends */

/* Native memory, 64-byte aligned, zeroed unless empty. Float32, Int32 or
 * Bool (ValueError otherwise). SW_EVALUE for a negative size, SW_EOVERFLOW
 * when the byte length of size elements overflows. */
SW_API sw_status sw_cpu_new(int64_t size, sw_dtype dtype, int mutable_,
                            int empty, sw_carrier **out);
/*
 * Caller-provided memory of size elements, never freed by us. SW_EVALUE for
 * a negative size, a NULL pointer, or one not aligned to the dtype's
 * elements (4 bytes for Float32 and Int32); SW_EOVERFLOW when the byte
 * length overflows or the memory would pass the end of the address space.
 */
SW_API sw_status sw_cpu_wrap(void *pointer, int64_t size, sw_dtype dtype,
                             int mutable_, sw_carrier **out);
/* Non-zero if c is a CPU carrier. */
SW_API int sw_carrier_is_cpu(const sw_carrier *c);
/* The CPU buffer (NULL after release or for other carriers). Reading or
 * writing it is safe only under a pin taken before the release. */
SW_API void *sw_cpu_data(sw_carrier *c);

/* A Generic carrier over a host store (owned by the carrier from now on).
 * dtype is SW_DTYPE_ANY or SW_DTYPE_FLOATING. */
SW_API sw_status sw_generic_new(const sw_host_ops *ops, void *store,
                                sw_dtype dtype, int mutable_, sw_carrier **out);
/* A Generic carrier of n doubles (copied). */
SW_API sw_status sw_generic_new_doubles(int64_t n, const double *values,
                                        int mutable_, sw_carrier **out);
SW_API int sw_carrier_is_generic(const sw_carrier *c);
/* The host store of a Generic carrier (borrowed; NULL after release or for
 * other carriers), for bindings that must visit it (garbage collection). */
SW_API void *sw_generic_store(const sw_carrier *c);
/* The host ops of a Generic carrier (NULL for other carriers), so that a
 * binding can tell its own stores from others. */
SW_API const sw_host_ops *sw_generic_ops(const sw_carrier *c);

/*
 * FileBacked: raw values in a binary file, in native byte order: Floating
 * as 8-byte doubles, Float32 and Int32 as 4 bytes. A new carrier has size 0
 * (sw_file_resize grows it, zero-filled). Element access reads and writes
 * the file directly: memory use does not grow with the file. I/O failures
 * are SW_EOS with the system's message, and leave the carrier and its
 * values as they were.
 *
 * Files. With path NULL the file is a private temporary with no name in
 * the file system (O_TMPFILE, or created and unlinked at once where the
 * file system has no O_TMPFILE): it goes when the carrier is released or
 * destroyed and with the process however it ends, and a forked child
 * cannot remove it. Its sw_file_path is <dir>/strideweave-<pid>-<n>, a name
 * that does not exist. A named file is created exclusively (SW_EOS "File
 * exists" if it does) and kept after release; a relative path is resolved
 * against the working directory at construction, so sw_file_path is
 * absolute and stays right after a chdir.
 *
 * Threads: element and bulk I/O, resizes and release may run on different
 * threads; release waits for I/O in flight on the carrier's file (the
 * usual rule still holds: the caller serialises writes with writes).
 */

/*
 * Makes a FileBacked carrier. temporary_dir is where its temporaries go:
 * its own file when path is NULL, and those of sw_carrier_allocate_like and
 * sw_carrier_new_like on it; NULL or "" means /tmp, a relative directory is
 * resolved now. The library reads no environment here. SW_EVALUE for a
 * dtype other than Floating, Float32 and Int32; SW_EOS when the file
 * cannot be created (nothing is left behind).
 */
SW_API sw_status sw_file_new_in(const char *path, const char *temporary_dir,
                                sw_dtype dtype, int mutable_, sw_carrier **out);
/*
 * Opens an existing raw file as a FileBacked carrier (beyond the
 * reference, whose constructor always creates): its size is the file's
 * length over the dtype's item size, its values the file's bytes in native
 * order. mutable_ opens it read-write (writes change the file), else
 * read-only. The file is kept after release, and never removed on failure.
 * SW_EVALUE for a NULL path, another dtype (as sw_file_new_in), a path that
 * is not a regular file, or a length that is not a multiple of the item
 * size; SW_EOS when it cannot be opened.
 */
SW_API sw_status sw_file_open_in(const char *path, const char *temporary_dir,
                                 sw_dtype dtype, int mutable_,
                                 sw_carrier **out);
/*
 * Opens count elements of an existing file, the first at byte offset
 * offset, as a FileBacked carrier of that fixed size (a window: one
 * tensor of a container file such as safetensors, read in place); count
 * -1 takes the rest of the file, which must be whole elements.
 * Element i is at byte offset + i * itemsize, in native order; the rest
 * of the file is never read or written. As sw_file_open_in otherwise,
 * and: SW_EVALUE for a negative offset, a count below -1, or a window
 * that passes the end of the file; a window cannot be resized (sw_file_resize
 * and sw_file_stage refuse with SW_EVALUE), so it does not grow as a move's
 * destination.
 */
SW_API sw_status sw_file_open_window(const char *path,
                                     const char *temporary_dir, sw_dtype dtype,
                                     int mutable_, int64_t offset,
                                     int64_t count, sw_carrier **out);
/* The byte offset of a window's first element, or -1 for a carrier that
 * is not a FileBacked window. */
SW_API int64_t sw_file_window_offset(const sw_carrier *c);
/* sw_file_new_in(path, getenv("TMPDIR"), ...): reads the environment, so a
 * program whose threads change it should call sw_file_new_in. */
SW_API sw_status sw_file_new(const char *path, sw_dtype dtype, int mutable_,
                             sw_carrier **out);
SW_API int sw_carrier_is_file(const sw_carrier *c);
/* The file's absolute path (borrowed; valid until the carrier is
 * destroyed); a temporary's does not exist (see above). */
SW_API const char *sw_file_path(const sw_carrier *c);
/* Non-zero if the file is a private temporary (fixed at construction). */
SW_API int sw_file_is_temporary(const sw_carrier *c);
/* Truncates or extends the file to size elements (new ones are zero).
 * SW_EVALUE for a negative size, SW_ERUNTIME if released or moving on
 * another thread. */
SW_API sw_status sw_file_resize(sw_carrier *c, int64_t size);

/*
 * Staged resize: a resize that a named file shows under its name only once
 * it is committed. The rule: a named file's name holds either what it held
 * before sw_file_stage or, after sw_file_commit, the stage's complete
 * contents; a process that dies in between leaves the name as it was, plus
 * at most an obviously named partial file beside it (<path>.partial-...,
 * only where the file system has no O_TMPFILE or /proc is missing).
 *
 * sw_file_stage gives c a fresh file of size elements in the same
 * directory, holding c's first elements (as many as both sizes allow) and
 * zeros after them; from then on every read, write and resize of c goes to
 * the stage. On failure (SW_EVALUE, SW_ERUNTIME "FileBacked carrier already
 * has a staged resize", released, SW_EOS, SW_ENOMEM) nothing changes.
 *
 * sw_file_commit makes the stage c's file: a named file's stage replaces
 * the name's file by rename (SW_EOS "... which names another file now",
 * EEXIST, when something else took the name meanwhile); the file from
 * before is closed. On failure c stays staged (abandon it, or retry).
 * SW_ERUNTIME "FileBacked carrier has no staged resize", or "FileBacked
 * staged resize belongs to another process" in a forked child.
 *
 * sw_file_abandon drops the stage and its writes: c's file is again the one
 * from before. Without a stage, and on a released carrier, it does
 * nothing. Release drops a stage too. A forked child abandoning or
 * releasing never removes its parent's partial file.
 */
SW_API sw_status sw_file_stage(sw_carrier *c, int64_t size);
SW_API sw_status sw_file_commit(sw_carrier *c);
SW_API sw_status sw_file_abandon(sw_carrier *c);
/* Non-zero while c has a staged resize. */
SW_API int sw_file_is_staged(const sw_carrier *c);

/* Bulk transfer of n elements starting at element i, in native layout. A
 * successful write bumps the version once. */
SW_API sw_status sw_file_read(sw_carrier *c, int64_t i, int64_t n, void *buf);
SW_API sw_status sw_file_write(sw_carrier *c, int64_t i, int64_t n,
                               const void *buf);
/* Does nothing: temporaries have no names to remove. Kept for callers that
 * ran it at exit. */
SW_API void sw_file_remove_temporaries(void);

/*
 * Fault injection for tests: after sw_debug_fail_io_after(n) with n >= 0,
 * n more file operations succeed and later ones fail with ENOSPC until the
 * hook is disabled with a negative n.
 */
SW_API void sw_debug_fail_io_after(int64_t n);
/* For tests: non-zero makes FileBacked act as on a file system without
 * O_TMPFILE (temporaries are created and unlinked at once, stages are
 * named partial files); 0 restores the default. */
SW_API void sw_debug_file_no_tmpfile(int disable);

#ifdef __cplusplus
}
#endif

#endif /* STRIDEWEAVE_CARRIER_H */
