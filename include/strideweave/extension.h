/*
 * StrideWeave carrier extension: definition-backed carriers.
 *
 * A new kind of storage joins the framework by registering one immutable
 * definition for an exact carrier class, keyed by the same opaque class
 * tag as capabilities (capability.h): a C program's own tag, or a
 * binding's type object. The definition supplies a storage provider (the
 * callbacks that allocate, read, write, size and release the storage of
 * one instance) and says which other providers the class has. The
 * framework builds the carrier's vtable from it and checks everything a
 * provider must not be trusted with: index range, liveness and
 * mutability before every callback, the size a provider reports after
 * allocation, and versions (a write bumps the version by exactly one).
 *
 * Registration rules, all checked under the capability registry's lock so
 * that registration and observation are atomic against each other:
 * - the built-in backends (CPU, Generic, FileBacked, Evictable) are
 *   definition-free: SW_ETYPE "<name> is a definition-free shipped
 *   carrier";
 * - a class has at most one definition: SW_ETYPE "<name> already has a
 *   CarrierDefinition";
 * - a class observed without one (a capability query, an instance
 *   constructed, a capability declaration) stays definition-free: SW_ETYPE
 *   "<name> was already observed without a CarrierDefinition";
 * - an independent class must not supply a composite provider, a
 *   dependent class requires one and must not supply kernels;
 * - every transfer route's source is exactly the class: SW_ETYPE "route
 *   '<id>' must have the exact source_class <name>"; two routes to one
 *   destination: SW_EVALUE "duplicate exact transfer routes".
 * Lookup is by exact tag: a subclass has no definition unless it
 * registers its own. Constructing the first instance, or any class-level
 * capability query, observes the class and freezes its definition.
 *
 * Moves (sw_move, sw_move_async): a definition-backed source moves
 * through its definition's route to the destination's exact class (its
 * prepare and submit on the initiating thread once the move owns both
 * carriers, its completion on the move executor: see interop.h); with
 * none, or when the route's prepare refuses, two definition-backed classes
 * whose providers both allow it copy element by element, and any other
 * pair fails with SW_ENOTIMPL "no transfer route for <source>,
 * <destination>" (with the refusal's reason). A recorded move (grad mode
 * on, a differentiable dtype) needs a route or fallback back, checked
 * before any work. A definition-free source moves into a definition-backed
 * class through the move registry's rules (element by element), which
 * refuses registrations for pairs with a definition-backed class.
 *
 * Kernels: a definition's kernel provider is an execution interface (an
 * identity: a type tag and a version string) and kernel patterns; kernel
 * packs (sw_kernel_pack_register) add patterns for the same interface
 * until the class is first observed. A pattern serves one operation (a
 * built-in or a definition, definition.h) for the plans it lists; the
 * class's capabilities are the union of all its patterns' plans. An
 * operation on a definition-backed carrier runs the pipeline of
 * sw_kernel_run: the candidates' prepare in order, one submit, the checks
 * of its results, rollback on failure, one version bump per declared
 * mutation, and autograd through the operation's central VJP (the
 * definition's vjp; for a built-in operation the Generic backend's
 * element-wise gradient, which allocates gradients in the operand's
 * class).
 *
 * Composites: a dependent class (built from other carriers) has a
 * composite provider instead of kernels. Each instance finalizes its own
 * capabilities once (sw_carrier_defined_finalize, from the provider's
 * capabilities callback); an operation on it matches that snapshot, asks
 * the provider which class each result's carrier has, and runs its
 * prepare and submit through the same pipeline and checks as kernels.
 */
#ifndef STRIDEWEAVE_EXTENSION_H
#define STRIDEWEAVE_EXTENSION_H

#include "strideweave/capability.h"
#include "strideweave/carrier.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The storage of a definition-backed class. Every callback gets ctx and
 * the carrier; per-instance state goes through sw_carrier_defined_data.
 * The framework has checked release, range and mutability before read,
 * write and allocate run. A failing callback returns its status with the
 * message set (sw_set_error); the framework passes it on unchanged and leaves
 * the carrier as it was.
 */
#define SW_STORAGE_PROVIDER_VERSION 1
typedef struct sw_storage_provider {
    uint32_t version;
    void *ctx;
    /* Whether the class can store dtype (asked at every construction and
     * every sw_carrier_defined_supports_dtype, released or not). */
    sw_status (*supports_dtype)(void *ctx, sw_carrier *c, sw_dtype dtype,
                                int *out);
    /* Makes storage for slots elements. */
    sw_status (*allocate)(void *ctx, sw_carrier *c, int64_t slots);
    /* The number of elements the storage holds: checked once, right after
     * allocate, against the slots asked for; the carrier's size is that
     * number from then on (storage of a definition-backed carrier does not
     * grow or shrink). */
    sw_status (*physical_size)(void *ctx, sw_carrier *c, int64_t *out);
    /* Frees the storage. A failure at an explicit release refuses the
     * release (the carrier stays live); at destruction, or when the last
     * pin of a released carrier goes, it has no caller and is dropped. */
    sw_status (*release)(void *ctx, sw_carrier *c);
    /* Element i (0 <= i < size), owned by the caller. */
    sw_status (*read)(void *ctx, sw_carrier *c, int64_t i, sw_value *out);
    /* Writes element i; the framework bumps the version. */
    sw_status (*write)(void *ctx, sw_carrier *c, int64_t i, const sw_value *v);
    /* Non-zero: moves between two classes that both allow it may copy
     * element by element when no transfer route serves them. */
    int elementwise_fallback;
} sw_storage_provider;

/*
 * One move through a transfer route, as its provider sees it: copy
 * physical_span slots from offset in the tensor's carrier to 0 in the
 * destination (holes included). The request and everything it points at
 * are borrowed from prepare until the route's finish runs (prepared work
 * may keep the pointer for submit and its completion).
 */
typedef struct sw_transfer_request {
    sw_tensor *tensor;
    sw_carrier *destination;
    sw_dtype dtype;
    const sw_layout *layout;
    int64_t offset;
    int64_t physical_span; /* layout's cosize */
} sw_transfer_request;

/*
 * The completion of submitted transfer work (ProviderCompletion): the
 * framework collects its terminal outcome once, on a thread of its
 * bounded background move executor, never on the thread that submitted
 * it, with graph construction off.
 *
 * wait blocks until the work ended and returns its outcome: SW_OK, or a
 * failure with the message set. When error is non-NULL the callback may
 * also hand over the host language's own error object there (owned; the
 * move's handle keeps it and a binding re-raises that very object, see
 * sw_move_request_host_error); drop_error frees one (NULL: none is
 * handed over). drop (optional) frees ctx once the completion is done
 * with, waited or not. wait may write the move's destination: the thread
 * running it is the move's transfer thread.
 */
typedef struct sw_transfer_completion {
    void *ctx;
    sw_status (*wait)(void *ctx, void **error);
    void (*drop)(void *ctx);
    void (*drop_error)(void *error);
} sw_transfer_completion;

/*
 * A transfer route: a move from exactly the defined class to exactly the
 * destination class. After its own checks of the pair, the framework
 * claims ownership of both carriers (interop.h), then runs prepare and
 * submit on the initiating thread, collects a completion on its executor,
 * and runs finish, all with graph construction off.
 */
typedef struct sw_transfer_route_decl {
    const void *source;      /* exactly the defined class */
    const void *destination; /* an exact class tag */
    const char *route_id;    /* non-empty, copied */
    void *ctx;               /* borrowed: lives as long as the definition */
    /* Prepares one move: SW_OK with *work set (any value, NULL included)
     * and *unsupported 0, or SW_OK with *unsupported non-zero and a reason
     * written to reason (size bytes) to refuse; then an elementwise copy
     * is used where both classes allow it, else the move fails with
     * SW_ENOTIMPL naming the pair and the reason. */
    sw_status (*prepare)(void *ctx, const sw_transfer_request *request,
                         void **work, int *unsupported, char *reason,
                         size_t size);
    /* Submits the prepared work and waits for its terminal outcome (used
     * when submit is NULL). */
    sw_status (*run)(void *ctx, void *work);
    /* Optional: frees work once the move is done with it (after the
     * completion's outcome, or when submit fails or is skipped): the
     * prepared record stays alive until then. */
    void (*finish)(void *ctx, void *work);
    /* Optional: submits the prepared work, exactly once, and returns
     * without waiting: SW_OK with completion->wait NULL when the work is
     * already complete, or with a completion (see sw_transfer_completion)
     * whose outcome becomes the move's; a failure fails the move (the
     * handle records it; the source stays live and unchanged). completion
     * is zeroed before the call. */
    sw_status (*submit)(void *ctx, void *work,
                        sw_transfer_completion *completion);
} sw_transfer_route_decl;

/* ------------------------------------------------------------- kernels */

struct sw_bound_call;
struct sw_resolution;
struct sw_op_capability;

/*
 * One call as a kernel pattern sees it: the dispatch carrier, the
 * operation, the call bound to its schema (operands in schema order) and
 * its resolution (the plan, the declared results, the operands it may
 * mutate). Everything is borrowed for the duration of prepare and submit.
 */
typedef struct sw_kernel_invocation {
    sw_carrier *carrier;
    const struct sw_op_info *op;
    const struct sw_bound_call *call;
    const struct sw_resolution *resolution;
} sw_kernel_invocation;

/*
 * A kernel pattern: a way to run operation op for the plans it lists.
 * prepare looks at one invocation and either accepts it (SW_OK, *work set
 * to anything, NULL included, and *unsupported left 0) or refuses it
 * (SW_OK with *unsupported non-zero and a reason written to reason, size
 * bytes), and then the next candidate is tried; a failing prepare ends
 * the call with its status (no later candidate runs). submit runs the
 * accepted work once, with graph construction off, and writes one owned
 * tensor per declared result (resolution->nresults) into results: a
 * fresh result in storage of the dispatch carrier's exact class holding
 * exactly its layout's cosize slots, or, for a result declared as an
 * alias, the very operand tensor, retained. It may write operands it
 * declared as mutated, through their carriers' element interface.
 * finish (optional) frees work after submit, or when submit is skipped.
 */
typedef struct sw_kernel_pattern_decl {
    int32_t op;                           /* an operation id */
    int64_t nplans;                       /* at least one */
    const struct sw_op_capability *plans; /* copied */
    const char *kernel_id;                /* non-empty, copied */
    int64_t preference;                   /* higher runs first */
    void *ctx; /* borrowed: lives as long as the definition or pack */
    sw_status (*prepare)(void *ctx, const sw_kernel_invocation *inv,
                         void **work, int *unsupported, char *reason,
                         size_t size);
    sw_status (*submit)(void *ctx, void *work, const sw_kernel_invocation *inv,
                        sw_tensor **results);
    void (*finish)(void *ctx, void *work);
} sw_kernel_pattern_decl;

/*
 * A composite provider (dependent classes). capabilities is asked once per
 * instance, at sw_carrier_defined_finalize: it points *out to *n entries
 * that stay valid until the framework has copied them, after which it
 * calls capabilities_done (optional) with the same pointer. result_carriers
 * writes the exact class tag of each declared result's carrier
 * (resolution->nresults entries of classes). prepare, submit and finish
 * are as for a kernel pattern, the results on the classes result_carriers
 * named.
 */
typedef struct sw_composite_decl {
    void *ctx; /* borrowed: lives as long as the definition */
    sw_status (*capabilities)(void *ctx, sw_carrier *c,
                              const struct sw_op_capability **out, int64_t *n);
    void (*capabilities_done)(void *ctx, sw_carrier *c,
                              const struct sw_op_capability *entries);
    sw_status (*result_carriers)(void *ctx, const sw_kernel_invocation *inv,
                                 const void **classes);
    sw_status (*prepare)(void *ctx, const sw_kernel_invocation *inv,
                         void **work, int *unsupported, char *reason,
                         size_t size);
    sw_status (*submit)(void *ctx, void *work, const sw_kernel_invocation *inv,
                        sw_tensor **results);
    void (*finish)(void *ctx, void *work);
} sw_composite_decl;

#define SW_CARRIER_DEFINITION_VERSION 2
typedef struct sw_carrier_definition {
    uint32_t version;
    /* The class's name, for messages (copied). */
    const char *name;
    sw_storage_provider storage;
    /* A dependent (composite) class: one built from other carriers. */
    int dependent;
    /* Whether a composite provider and a kernel provider are supplied. */
    int has_composite;
    int has_kernels;
    int64_t nroutes;
    const sw_transfer_route_decl *routes; /* copied */
    /*
     * Optional: makes a fresh, allocated carrier of this class for
     * sw_carrier_allocate_like and new_like on one of its instances (a
     * binding makes its own object). Default: sw_carrier_defined_new and
     * sw_carrier_defined_allocate.
     */
    sw_status (*make)(void *ctx, sw_carrier *like, int64_t slots,
                      sw_dtype dtype, int mutable_, sw_carrier **out);
    /* Passed to make; drop(ctx) runs when the class is forgotten (drop
     * may be NULL). storage.ctx is borrowed: it lives as long as ctx
     * (usually it is the same object). */
    void *ctx;
    void (*drop)(void *ctx);
    /* Version 2: the kernel provider, when has_kernels is non-zero: the
     * execution interface's identity (a non-NULL type tag and a
     * non-empty version, copied) and its built-in patterns (copied; none
     * is allowed: packs may supply them all). */
    const void *interface_type;
    const char *interface_version;
    int64_t npatterns;
    const sw_kernel_pattern_decl *patterns;
    /* Version 2: the composite provider, when has_composite is non-zero
     * (capabilities, result_carriers, prepare and submit required). */
    sw_composite_decl composite;
} sw_carrier_definition;

/*
 * A kernel pack: more patterns for the kernel provider of exactly class
 * cls, for the same execution interface.
 */
#define SW_KERNEL_PACK_VERSION 1
typedef struct sw_kernel_pack_decl {
    uint32_t version;
    const char *namespace_;   /* non-empty, copied */
    const char *pack_version; /* non-empty, copied */
    const void *cls;
    const void *interface_type;
    const char *interface_version;
    int64_t npatterns; /* at least one */
    const sw_kernel_pattern_decl *patterns;
    void *ctx;               /* owned by the registry from success on */
    void (*drop)(void *ctx); /* when the class is forgotten; may be NULL */
} sw_kernel_pack_decl;

/*
 * Registers a kernel pack, checked in this order under the registry's
 * lock (so that registration and observation are atomic against each
 * other): its own shape (SW_EVALUE "a kernel pack must not be empty",
 * "duplicate kernel_id 'k' in the pack", the pattern rules of
 * sw_carrier_define); the target (SW_ETYPE "<name> is a DependentCarrier:
 * kernel packs target independent carriers", SW_ETYPE "kernel pack
 * target must have its own exact CarrierDefinition with a
 * KernelProvider"); SW_ETYPE "... was already observed" once the class is
 * sealed; the interface (SW_ETYPE "the pack's execution interface does not
 * match the KernelProvider's"); SW_EVALUE "a kernel pack with namespace
 * and version 'n' 'v' is already registered"; SW_EVALUE "kernel_id 'k'
 * is already used by <name>". A rejected pack contributes nothing and the
 * caller keeps ctx.
 */
SW_API sw_status sw_kernel_pack_register(const sw_kernel_pack_decl *pack);

/*
 * Runs one bound, resolved call on definition-backed carrier c (the
 * carrier of its first tensor operand), after the caller's released-
 * carrier check and alias ban:
 *  1. SW_ENOTIMPL "<name> is storage-only ..." without a kernel
 *     provider, "<name> has no kernel for '<op>' with plan <plan>" when
 *     no pattern serves the plan;
 *  2. the candidates' prepare, in order: descending preference, then the
 *     built-in patterns in provider order, then packs by (namespace,
 *     version), each in pattern order; a refusal moves on, a failure ends
 *     the call; when all refuse, SW_ENOTIMPL "no kernel of <name>
 *     accepted '<op>': <kernel_id>: <reason>; ...";
 *  3. submit, with graph construction off;
 *  4. the results' checks, failing as broken contracts
 *     (sw_op_contract_failed) with SW_ERUNTIME naming the rule: "count",
 *     "dtype", "layout", "size", "carrier role", "aliases", and
 *     "unauthorized operand" for an operand mutated without being
 *     declared;
 *  5. on any failure after submission, the operands' values written
 *     through definition-backed carriers are rolled back and every
 *     operand's version restored; on success each carrier of a declared
 *     mutated operand is one version above where it was.
 * Writes res->nresults owned tensors into results, without autograd
 * contexts (the caller attaches them). Nothing is written on failure.
 */
SW_API sw_status sw_kernel_run(sw_carrier *c, const struct sw_op_info *op,
                               const struct sw_bound_call *call,
                               const struct sw_resolution *res,
                               sw_tensor **results);

/*
 * Finalizes the capabilities of an instance of a dependent class, once:
 * the composite provider's capabilities callback, then the entries'
 * checks (SW_EVALUE "<name> generated two capabilities equal to: ..."),
 * sorted. SW_ERUNTIME "<name> capabilities are already finalized" the
 * second time; SW_ETYPE for a carrier that is not of a dependent
 * definition-backed class. A failure leaves c unfinalized. Before it,
 * every operation and capability query of c fails with SW_ERUNTIME "<name>
 * has not finalized its operation-plan capabilities".
 */
SW_API sw_status sw_carrier_defined_finalize(sw_carrier *c);
/* Whether c is of a dependent definition-backed class. */
SW_API int sw_carrier_defined_is_dependent(const sw_carrier *c);
/* The finalized capabilities of a dependent definition-backed carrier
 * (valid while c lives), or that SW_ERUNTIME. */
SW_API sw_status sw_carrier_defined_capabilities(const sw_carrier *c,
                                                 sw_capability_list *out);

/* The kernel ids of the patterns that would be tried for plan-less
 * inspection: the number of patterns of cls (built-in and packs, in
 * candidate order), and the id of the i-th, or NULL. Observes nothing. */
SW_API int64_t sw_carrier_kernel_count(const void *cls);
SW_API const char *sw_carrier_kernel_id(const void *cls, int64_t i);

/*
 * Registers def for class tag cls (see the header comment for the
 * rules). The definition is copied; its ctx is owned by the registry
 * from success on and dropped (drop) when the class is forgotten
 * (sw_capabilities_forget). On failure nothing is registered and the
 * caller keeps it. SW_EVALUE for a NULL tag, an incomplete
 * provider or a route without an id; SW_ENOMEM.
 */
SW_API sw_status sw_carrier_define(const void *cls,
                                   const sw_carrier_definition *def);

/* Whether cls has a definition (observes nothing). */
SW_API int sw_carrier_has_definition(const void *cls);
/* The definition's ctx, or NULL (observes nothing). */
SW_API void *sw_carrier_definition_ctx(const void *cls);
/* Whether cls's definition may fall back to elementwise moves. */
SW_API int sw_carrier_definition_fallback(const void *cls);

/*
 * A carrier of defined class cls with no storage yet (size 0, so element
 * access is out of range until sw_carrier_defined_allocate): observes the
 * class. The binding makes its object here and configures it (a subclass
 * sets its attributes) before allocating. SW_ETYPE "carrier class has no
 * CarrierDefinition" for an undefined tag; SW_ENOMEM.
 */
SW_API sw_status sw_carrier_defined_new(const void *cls, sw_carrier **out);

/*
 * Gives c its dtype and mutability and allocates its storage, once: asks
 * supports_dtype (SW_ETYPE "<name> does not support storage dtype
 * <dtype>" on no; allocate is not called), allocates, then checks
 * physical_size: SW_EVALUE "<name>.physical_size must not return a
 * negative value", SW_EVALUE "<name>.physical_size returned N, not the
 * requested physical size M". On failure after allocate the storage is
 * released again. SW_EVALUE for slots < 0 or an unknown dtype;
 * SW_ERUNTIME "<name> storage is already allocated".
 */
SW_API sw_status sw_carrier_defined_allocate(sw_carrier *c, int64_t slots,
                                             sw_dtype dtype, int mutable_);

/*
 * The move class for moving a tensor on src to dst: src's route to dst's
 * exact class, the elementwise copy for two definition-backed classes
 * that allow it, or else the move registry's class for the pair (whose
 * move then fails its checks where no route serves a definition-backed
 * source). Never NULL.
 */
SW_API const struct sw_move_class *
sw_move_dispatch_carriers(const sw_carrier *src, const sw_carrier *dst);
/* sw_move_dispatch_carriers with the refusal as a status: SW_ENOTIMPL "no
 * transfer route for <source>, <destination>" where no route, fallback
 * or registry entry serves the pair. */
SW_API sw_status sw_move_resolve(const sw_carrier *src, const sw_carrier *dst,
                                 const struct sw_move_class **out);
/* Whether cls is the move class of a transfer route. */
SW_API int sw_move_class_is_route(const struct sw_move_class *cls);

/* Whether c is a definition-backed carrier. */
SW_API int sw_carrier_is_defined(const sw_carrier *c);
/* The class tag of a definition-backed carrier (NULL for others). */
SW_API const void *sw_carrier_defined_class(const sw_carrier *c);
/* Whether the storage has been allocated. */
SW_API int sw_carrier_defined_is_allocated(const sw_carrier *c);
/* The provider's per-instance state (NULL until set). */
SW_API void *sw_carrier_defined_data(const sw_carrier *c);
SW_API void sw_carrier_defined_set_data(sw_carrier *c, void *data);
/*
 * Room inside c's own block for a provider's small per-instance storage:
 * up to SW_DEFINED_ROOM bytes, aligned for any type, zeroed when c is
 * made, freed with c. Returns the same room on every call, or NULL when
 * bytes exceed SW_DEFINED_ROOM or c is not definition-backed. A storage
 * provider whose allocate needs no more (a small tensor's values and a
 * header) can keep them there instead of allocating, as the CPU carrier
 * keeps a small array in its block: a fresh result is then one
 * allocation. The provider owns its use; the framework never reads it.
 */
#define SW_DEFINED_ROOM 64
SW_API void *sw_carrier_defined_room(sw_carrier *c, size_t bytes);
/* Asks the storage provider whether c's class stores dtype (every time). */
SW_API sw_status sw_carrier_defined_supports_dtype(sw_carrier *c,
                                                   sw_dtype dtype, int *out);

#ifdef __cplusplus
}
#endif

#endif
