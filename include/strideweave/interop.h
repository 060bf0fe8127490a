/*
 * StrideWeave interoperability and movement: DLPack export and move.
 *
 * DLPack export hands a tensor's storage to a foreign array library
 * without copying: the exported DLTensor describes the layout's leaf modes
 * as a flat strided array over the carrier's own memory. Export is CPU-only
 * for the built-in carriers, Float32 and Int32 only, same-device only, and
 * changes neither versions nor gradients.
 *
 * move relocates a tensor's values into a caller-supplied destination
 * carrier and releases the source carrier when the copy has succeeded. The
 * transfer is chosen by the exact (source class, destination class) pair
 * in a process-global registry of move classes; pairs without an entry use
 * the elementwise fallback. A move is an operation: with grad mode on and
 * a differentiable source it records a node whose backward returns the
 * gradient in fresh storage of the source's exact class.
 *
 * Ownership: a managed tensor from sw_tensor_to_dlpack is owned by the
 * caller until its deleter runs; it holds a counted reference to the
 * carrier, not to the tensor. Move classes and the names in move keys are
 * borrowed by the registry and by operations: they must outlive every
 * registration and operation that uses them.
 */
#ifndef STRIDEWEAVE_INTEROP_H
#define STRIDEWEAVE_INTEROP_H

#include "strideweave/carrier.h"
#include "strideweave/dlpack.h"
#include "strideweave/op.h"
#include "strideweave/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------- DLPack */

/* The DLPack version of versioned exports: always 1.0. */
#define SW_DLPACK_MAJOR 1
#define SW_DLPACK_MINOR 0

/*
 * The DLPack device of t's carrier, as its dlpack_info slot reports it
 * (sw_carrier_dlpack_info; CPU: device type kDLCPU, id 0). Depends only on
 * the carrier, so a Bool CPU tensor has a device even though it cannot be
 * exported. SW_EBUFFER "DLPack is not supported for this carrier" for
 * carriers without the slot (Generic, FileBacked, custom backends that do
 * not opt in), the slot's own failure, and "DLPack data pointer must be
 * non-null" when the slot reports no storage for a tensor with elements
 * (a released CPU carrier).
 */
SW_API sw_status sw_tensor_dlpack_device(const sw_tensor *t,
                                         int32_t *device_type,
                                         int32_t *device_id);

/*
 * Exports t as a managed tensor that aliases the carrier's memory: a
 * DLManagedTensorVersioned (version 1.0) when versioned is non-zero, else
 * a legacy DLManagedTensor, written to *out as a pointer to that struct.
 *
 * The DLTensor: data is the carrier's buffer start and byte_offset is
 * offset * itemsize; ndim, shape and strides are the layout's leaf extents
 * and leaf strides in order (strides in elements, stride 0 kept; NULL
 * arrays for a layout without leaves); dtype is (kDLFloat, 32, 1) for
 * Float32 and (kDLInt, 32, 1) for Int32. A versioned export sets
 * DLPACK_FLAG_BITMASK_READ_ONLY exactly when t is not mutable now
 * (sw_tensor_is_mutable); the flag is advisory.
 *
 * The managed tensor is one allocation holding its shape and strides and a
 * counted reference to the carrier, which its deleter drops; the deleter
 * may run on any thread. The reference keeps the carrier object alive, not
 * its storage: releasing or moving the carrier still frees the memory the
 * export points at. Versions, autograd contexts and gradients are left as
 * they were.
 *
 * Errors, in order: the carrier's (as sw_tensor_dlpack_device), then
 * SW_EBUFFER "DLPack export supports only Float32 and Int32 tensors", then
 * SW_ENOMEM.
 */
SW_API sw_status sw_tensor_to_dlpack(sw_tensor *t, int versioned, void **out);

/*
 * How a binding passes one optional pair argument of __dlpack__ (dl_device,
 * max_version): absent, a two-integer pair, or malformed in one of the two
 * ways the library reports.
 */
typedef enum sw_dlpack_arg {
    SW_DLPACK_ARG_NONE = 0,         /* None: not supplied */
    SW_DLPACK_ARG_PAIR = 1,         /* a tuple or list of two integers */
    SW_DLPACK_ARG_NOT_SEQUENCE = 2, /* neither a tuple nor a list */
    SW_DLPACK_ARG_WRONG_LENGTH = 3  /* a tuple or list of another length */
} sw_dlpack_arg;

/*
 * The arguments of __dlpack__ (stream is accepted and ignored), and an
 * optional owner: when owner_release is set, a successful export keeps
 * owner and its deleter calls owner_release(owner) exactly once, after
 * dropping the carrier reference and before freeing the managed tensor.
 * owner_release may run on any thread, whenever the consumer lets go. A
 * failed export leaves owner to the caller. A binding uses the owner to
 * keep its host tensor object alive for as long as the managed tensor.
 */
typedef struct sw_dlpack_request {
    int copy; /* non-zero: the consumer demands a copy */
    sw_dlpack_arg dl_device;
    int64_t device[2]; /* (device_type, device_id) when a pair */
    sw_dlpack_arg max_version;
    int64_t version[2]; /* (major, minor) when a pair */
    void *owner;
    void (*owner_release)(void *owner);
} sw_dlpack_request;

/*
 * The whole __dlpack__ rule. Checks in order: copy (SW_EBUFFER "DLPack
 * copy exports are not supported"); the carrier (as
 * sw_tensor_dlpack_device); dl_device (SW_ETYPE "DLPack dl_device must be
 * a tuple or list", SW_EVALUE "DLPack dl_device must have two elements",
 * SW_EBUFFER "DLPack cross-device exports are not supported for this
 * tensor"); the dtype (as sw_tensor_to_dlpack); max_version (SW_ETYPE
 * "DLPack max_version must be a tuple or list", SW_EVALUE "DLPack
 * max_version must have two elements", SW_EVALUE "DLPack max_version
 * elements must be non-negative"). Then exports: versioned 1.0 when
 * max_version is a pair with major >= 1, legacy otherwise. *versioned
 * tells which struct *out points at. req NULL means all defaults.
 */
SW_API sw_status sw_tensor_dlpack_export(sw_tensor *t,
                                         const sw_dlpack_request *req,
                                         int *versioned, void **out);

/* -------------------------------------------------------- move keys */

/*
 * The identity of a carrier class for the move registry, with its name for
 * messages (the name is not part of the identity). Keys match by id alone:
 * exact classes, no inheritance.
 *
 * Which id a carrier has (sw_move_key_of): the dispatch tag a binding set
 * with sw_carrier_set_dispatch when there is one (the host-language class,
 * the same tag sw_op_dispatch_tag reports); otherwise the built-in
 * backend's key (sw_move_key_cpu, sw_move_key_generic, sw_move_key_file);
 * otherwise the custom backend's sw_carrier_class pointer
 * (sw_move_key_class). A binding therefore registers host classes by the
 * tag it sets on their instances; it sets no tag on instances of the
 * built-in backends' own classes, which it registers with the built-in
 * keys.
 */
typedef struct sw_move_key {
    const void *id;
    const char *name;
} sw_move_key;

SW_API sw_move_key sw_move_key_of(const sw_carrier *c);
SW_API sw_move_key sw_move_key_cpu(void);
SW_API sw_move_key sw_move_key_generic(void);
SW_API sw_move_key sw_move_key_file(void);
/* BlockDeviceCarrier (blockdev.h): a final class, so its key is fixed. */
SW_API sw_move_key sw_move_key_blockdev(void);
/* The key of a custom backend: {cls, cls->name}. */
SW_API sw_move_key sw_move_key_class(const sw_carrier_class *cls);

/* ------------------------------------------------------- move classes */

/*
 * A move class: what the registry maps a carrier pair to (MoveOperation
 * subclasses in Python). version must be SW_MOVE_CLASS_VERSION.
 *
 * copy performs one transfer: it fills destination so that output (a
 * tensor over destination at offset 0 with tensor's layout) holds tensor's
 * logical values; element_count is the layout's cosize, the destination
 * slots the transfer may cover. It runs only after every validation, must
 * not release either carrier, and may leave slots the layout does not
 * address with any value. op is the move operation running it (for a
 * binding, its peer is the host instance; an operation the library makes
 * for a backward pass has no peer). On failure the source must be
 * unchanged; the move then leaves the destination's version one above
 * its version before the move if the copy wrote anything (see
 * sw_move_op_forward) and restores its size.
 *
 * A pinned class (source_pin.id or destination_pin.id non-NULL) accepts
 * only carriers of exactly that key: SW_ETYPE "<name> requires a
 * <pin name> source" (or destination) otherwise, before any copying.
 */
#define SW_MOVE_CLASS_VERSION 1
typedef struct sw_move_class {
    uint32_t version;
    const char *name;
    sw_move_key source_pin;
    sw_move_key destination_pin;
    sw_status (*copy)(sw_op *op, sw_tensor *tensor, sw_carrier *destination,
                      sw_tensor *output, int64_t element_count);
    void *ctx; /* for the copy hook (sw_move_op_class(op)->ctx) */
} sw_move_class;

/*
 * The built-in move classes (static). ElementwiseMoveOperation writes
 * output[i] = tensor[i] for every logical i through the carriers' element
 * access (the destination's version rises once per element; holes keep
 * their values). CpuToFileBackedMoveOperation (pinned CPU to FileBacked)
 * writes the whole physical span, cosize elements from the tensor's
 * offset, holes included, into the file from position 0;
 * FileBackedToCpuMoveOperation (pinned FileBacked to CPU) reads it back.
 * Both are chunked bulk transfers that leave the destination's version
 * unchanged; they fall back to the elementwise copy if the dtypes or
 * layouts of tensor and output differ.
 */
SW_API const sw_move_class *sw_move_elementwise(void);
SW_API const sw_move_class *sw_move_cpu_to_file(void);
SW_API const sw_move_class *sw_move_file_to_cpu(void);

/*
 * The block-device bulk moves (pinned CPU to BlockDeviceCarrier and
 * back): one transfer of the whole physical span, holes included, from
 * the tensor's offset to the destination's slot 0, retrying interrupts and
 * short progress (blockdev.h). The destination's version rises by one,
 * also when the transfer fails after it started; a terminal failure
 * faults the device and leaves the completed prefix in the destination.
 *
 * These pairs are protected built-ins: they have no registry entries, and
 * sw_move_register and sw_move_unregister refuse any pair that involves
 * the BlockDeviceCarrier key with SW_EVALUE "... protected built-ins"
 * (after their argument checks). sw_move_dispatch answers the two classes
 * for the two pairs. Every other pair with the block-device key is refused
 * by sw_move_check_blockdev with SW_ENOTIMPL "... block-device carrier
 * pair ...": there is no elementwise fallback. A move checks that right
 * after its destination argument (check 4 of sw_move_op_forward) and,
 * after the pins (check 9), refuses any other class on the two pairs with
 * SW_ENOTIMPL "... exact built-in ..." and a faulted device with
 * SW_ERUNTIME "BlockDevice is faulted ...".
 */
SW_API const sw_move_class *sw_move_cpu_to_blockdev(void);
SW_API const sw_move_class *sw_move_blockdev_to_cpu(void);
SW_API sw_status sw_move_check_blockdev(sw_move_key source,
                                        sw_move_key destination);

/* ----------------------------------------------------------- registry */

/*
 * The process-global move registry, guarded by a mutex. It starts with
 * (CPU, FileBacked) -> CpuToFileBackedMoveOperation and (FileBacked, CPU)
 * -> FileBackedToCpuMoveOperation, and the exact OpenCL pairs (CPU,
 * OpenCL), (OpenCL, CPU) and (OpenCL, OpenCL) (opencl.h).
 *
 * sw_move_register records cls for the exact pair. SW_ETYPE
 * "source_class must be a Carrier subclass" / "destination_class must be
 * a Carrier subclass" for a NULL key id, "operation_class must be a
 * MoveOperation subclass" for a NULL class, a wrong version or no copy
 * hook; SW_EVALUE "a move operation is already registered for (CPU,
 * FileBacked)" (the keys' names) if the pair has an entry, which is kept.
 *
 * sw_move_unregister removes the pair's entry (built-in ones too) and
 * writes its class to *out (out may be NULL). SW_EKEY "no move operation
 * is registered for (Generic, Generic)" if there is none.
 *
 * sw_move_dispatch is dispatch_move: the class registered for the exact
 * pair, or sw_move_elementwise() when there is none.
 */
SW_API sw_status sw_move_register(sw_move_key source, sw_move_key destination,
                                  const sw_move_class *cls);
SW_API sw_status sw_move_unregister(sw_move_key source, sw_move_key destination,
                                    const sw_move_class **out);
/*
 * SW_ERUNTIME "(<source>, <destination>) involves a definition-backed
 * carrier: ..." when either class has a CarrierDefinition (extension.h):
 * the registry (register, unregister, dispatch) serves definition-free
 * pairs only; sw_move_register and sw_move_unregister check it
 * themselves, after their argument checks.
 */
SW_API sw_status sw_move_check_pair(sw_move_key source,
                                    sw_move_key destination);
SW_API const sw_move_class *sw_move_dispatch(sw_move_key source,
                                             sw_move_key destination);

/* ------------------------------------------------------ move operations */

/*
 * A fresh move operation of class cls (an owned reference), for running a
 * chosen class or for a binding's MoveOperation instances.
 */
SW_API sw_status sw_move_op_new(const sw_move_class *cls, sw_op **out);
/* Non-zero if op was made by sw_move_op_new. */
SW_API int sw_op_is_move(const sw_op *op);
/* The move class of a move operation (NULL for other operations). */
SW_API const sw_move_class *sw_move_op_class(const sw_op *op);

/*
 * Runs a move operation as a recorded forward (sw_op_forward with tensor
 * as its one input): moves tensor into destination and writes the result,
 * a tensor over destination at offset 0 sharing tensor's layout object.
 *
 * Checks, in order (nothing is modified or released before all pass):
 *  1. tensor is NULL: SW_ETYPE "tensor must be a Tensor"
 *  2. its carrier is released: SW_ERUNTIME "tensor carrier is released"
 *  3. its carrier is owned by a composite and not under owner access:
 *     SW_ERUNTIME "tensor carrier is owned by another carrier object and
 *     cannot be moved directly"
 *  4. destination is NULL: SW_ETYPE "destination must be a Carrier
 *     instance"
 *  5. destination is the tensor's carrier: SW_EVALUE "destination must not
 *     be the tensor's own carrier"
 *  6. destination is released: SW_ERUNTIME "destination carrier is
 *     released"
 *  7. destination is not mutable now: SW_ERUNTIME "destination carrier
 *     must be mutable"
 *  8. dtypes differ: SW_ETYPE "destination dtype must match the tensor
 *     dtype"
 *  9. pins (see sw_move_class): SW_ETYPE
 * 10. the destination has fewer than cosize(layout) elements and cannot
 *     grow (only an empty FileBacked destination grows, in a stage that
 *     is committed after the copy, or abandoned if the copy or the commit
 *     fails: see sw_file_stage): SW_EVALUE "destination carrier is too
 *     small for the tensor layout"
 * 11. with grad mode on and a differentiable tensor, the reverse route is
 *     captured: the class registered for (destination, source) must accept
 *     that pair (SW_ETYPE as in 9), and the source's class must be able to
 *     allocate (SW_ENOTIMPL "move has no reverse route: <Name> carrier
 *     does not support allocation").
 * Then the destination grows if needed, the class's copy runs, and only
 * when it has succeeded is the source carrier's storage released. While
 * the growth and the copy run, the move owns both carriers
 * (sw_carrier_is_owned): the source refuses writes, release, ownership
 * claims and other moves from every thread (a copy hook only reads it;
 * SW_ERUNTIME "Carrier is owned by a pending move and is not mutable" /
 * "tensor carrier is owned by a pending move"), and the destination
 * accepts changes from this thread only. A copy that leaves
 * the destination released fails with SW_ERUNTIME "destination carrier is
 * released". If the growth or the copy fails, the source is left live and
 * unchanged, nothing is written to *out, and a destination that grew gets
 * back its size. A copy that failed after writing part of the
 * destination (through the carriers' interfaces, which bump versions, or
 * through a built-in bulk route) leaves the destination's version exactly
 * one above its version before the move, so that saved-version checks of
 * a later backward see the change; a failure that wrote nothing leaves
 * the version as it was. The move's outcome is one of two: it succeeded (the
 * source is released; a failure of the source's release slot, which may run
 * later, when the last pin goes, is not the move's) or it did not happen.
 *
 * Backward: the gradient must be a tensor (SW_ETYPE "gradient must be a
 * Tensor") on a live carrier (SW_ERUNTIME "gradient carrier is released")
 * with the source's shape (SW_EVALUE "gradient shape must match the moved
 * tensor's shape") and an injective layout (SW_EVALUE "move backward
 * requires an injective gradient Layout"). It returns a detached gradient
 * at offset 0 in fresh storage of the source carrier's exact class
 * (allocated through the released source carrier), version 0, carrying
 * the gradient's logical values under the source layout, or under the
 * compact column-major layout of its shape when the source layout is not
 * injective. The values go through the captured reverse route when the
 * gradient's carrier has the destination's key and the same layout, and
 * through the elementwise copy otherwise.
 */
SW_API sw_status sw_move_op_forward(sw_op *op, sw_tensor *tensor,
                                    sw_carrier *destination, sw_tensor **out);

/*
 * Only the checks of sw_move_op_forward (1-11, and the pending-move checks
 * of sw_move_op_submit), under the calling thread's grad mode: the first
 * failure, or SW_OK. Nothing changes.
 */
SW_API sw_status sw_move_op_check(sw_op *op, sw_tensor *tensor,
                                  sw_carrier *destination);

/*
 * The same move without recording (sw_op_execute_lowered): no saved
 * inputs and no autograd context on the result, as a composite carrier
 * runs an inner operation (an Evictable's residency transitions). The
 * reverse route is still captured when grad mode is on and the tensor is
 * differentiable.
 */
SW_API sw_status sw_move_op_execute_lowered(sw_op *op, sw_tensor *tensor,
                                            sw_carrier *destination,
                                            sw_tensor **out);

/*
 * move(tensor, destination): sw_move_async and sw_move_request_wait, with
 * one difference: a built-in bulk transfer runs on the calling thread,
 * which waits anyway (a route's completion is still collected on the move
 * executor).
 */
SW_API sw_status sw_move(sw_tensor *tensor, sw_carrier *destination,
                         sw_tensor **out);

/* ------------------------------------------------ asynchronous moves */

/*
 * move_async: one move, validated at submission and completed later.
 *
 * sw_move_op_submit runs every check of sw_move_op_forward (1-11, plus
 * SW_ERUNTIME "tensor carrier is owned by a pending move" after 3 and
 * "destination carrier must be mutable: it is owned by a pending move"
 * after 6) and returns the failure directly, with nothing changed and no
 * request. Then the move owns both carriers until its outcome is
 * recorded: sw_carrier_is_owned reports 1 for both, and writes, version
 * bumps, resizing, release, ownership claims and other moves from every
 * thread but the one running the transfer fail with SW_ERUNTIME "Carrier
 * is owned by a pending move and is not mutable" (reads are allowed: the
 * source does not change). Then:
 *
 *  - a transfer route (extension.h) is prepared and submitted on the
 *    calling thread, with the graph off. A failure of prepare (or a
 *    refusal without fallback) comes before submission: it is returned
 *    directly, with nothing changed and no request. A failure of submit is
 *    the request's outcome. A completion returned by submit is collected
 *    on the move executor (below), never on the calling thread; the
 *    prepared work lives until then;
 *  - a built-in bulk route (CpuToFileBackedMoveOperation from a CPU
 *    carrier into a FileBacked one, FileBackedToCpuMoveOperation back) of
 *    at least SW_MOVE_ASYNC_MIN_BYTES is transferred on the move executor;
 *  - every other move (small ones, and those that may call back into a
 *    host language: Python carriers and copy hooks) runs on the calling
 *    thread before sw_move_op_submit returns, so the request is already
 *    done.
 *
 * The move executor is a small fixed pool of threads (four), started on
 * demand, that takes queued moves in submission order: it collects the
 * completion or runs the transfer, then commits: the result is published,
 * the source released, the move's ownership ends, the outcome is recorded
 * (in that order). A process whose executor cannot start a thread at all
 * completes the move on the calling thread instead.
 *
 * Profiling: a move whose source class the calling thread's active
 * profiler selects records "move.submit" and "move.complete" (profile.h).
 *
 * The move is a recorded forward under the submitting thread's grad mode:
 * on success the result's autograd context is op, exactly as with
 * sw_move_op_forward. The source is released only at the successful
 * commit; a failure leaves the source live and unchanged, treats the
 * destination's version and size as sw_move_op_forward does, and becomes
 * the request's outcome.
 *
 * A request is reference-counted; dropping every reference neither waits
 * for nor cancels the move, which keeps what it needs until it ends.
 * sw_move_request_done is non-zero once the outcome is recorded (after the
 * carriers are usable again). sw_move_request_wait blocks until then and
 * returns the same outcome every time, from any thread: SW_OK and the
 * result (an owned reference; out may be NULL), or the recorded status
 * with its message set for the calling thread.
 *
 * sw_move_async is move_async: SW_ETYPE "tensor must be a Tensor" for a
 * NULL tensor, then the registered class for the exact pair, submitted on
 * a fresh operation.
 */
#define SW_MOVE_ASYNC_MIN_BYTES ((int64_t)1 << 20)

typedef struct sw_move_request sw_move_request;

SW_API sw_status sw_move_op_submit(sw_op *op, sw_tensor *tensor,
                                   sw_carrier *destination,
                                   sw_move_request **out);
SW_API sw_status sw_move_async(sw_tensor *tensor, sw_carrier *destination,
                               sw_move_request **out);
SW_API int sw_move_request_done(const sw_move_request *r);
SW_API sw_status sw_move_request_wait(sw_move_request *r, sw_tensor **out);
/* The host language's error object a transfer route's completion handed
 * over with a failure (sw_transfer_completion in extension.h), once done;
 * NULL for none. Borrowed: it lives as long as r. */
SW_API void *sw_move_request_host_error(sw_move_request *r);
SW_API sw_move_request *sw_move_request_retain(sw_move_request *r);
SW_API void sw_move_request_unref(sw_move_request *r);

/*
 * Work for the move executor: run(ctx, &out) runs on one of its threads
 * (or here, before the call returns, when here is non-zero or no thread
 * can start: work that calls into a host language) under the submitting
 * thread's grad
 * mode, and its outcome becomes the request's: SW_OK with out (an owned
 * tensor, or NULL for work that makes none, which sw_move_request_wait
 * then gives as NULL) or its error. drop(ctx), optional, runs when the
 * request goes (also when submission fails). Work on the executor must
 * not wait for other queued work.
 */
typedef sw_status (*sw_work_fn)(void *ctx, sw_tensor **out);
SW_API sw_status sw_work_submit(sw_work_fn run, void (*drop)(void *ctx),
                                void *ctx, int here, sw_move_request **out);

/* Blocks until no move is queued on or running on the executor (for
 * process exit); a queue held by sw_debug_move_hold never drains, so
 * release the hold first. */
SW_API void sw_move_wait_idle(void);
/* The number of moves queued on or running on the executor now. */
SW_API int64_t sw_move_pending_count(void);
/* Test hook: while held (non-zero), the executor takes no queued move;
 * releasing the hold lets them go. */
SW_API void sw_debug_move_hold(int hold);

#ifdef __cplusplus
}
#endif

#endif /* STRIDEWEAVE_INTEROP_H */
