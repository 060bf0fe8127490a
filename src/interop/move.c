/*
 * move: the move registry, the built-in move classes, the move operation
 * with its validation, commit and backward, transfer routes, and
 * asynchronous moves with their executor.
 *
 * A move's life: checks (nothing changes on failure), the claim of both
 * carriers (one ownership rule for every move, see carrier/internal.h),
 * the begin of the transfer (destination pinned, a growing file staged),
 * the transfer (a copy hook; or a route's prepare and submit at
 * submission and its completion later), and the end (commit or undo),
 * after which the claim goes and the outcome is recorded.
 *
 * The registry maps an exact (source key, destination key) pair to a move
 * class. Keys are opaque pointers (see sw_move_key in interop.h): a
 * binding's dispatch tag, a built-in backend's token, or a custom
 * backend's vtable. The registry is a linked list under a mutex; the two
 * built-in entries are static nodes, so it needs no initialisation and
 * allocates only for registrations made at run time.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sys/mman.h>
#include <stdio.h>
#include <string.h>

#include "carrier/defined.h"
#include "carrier/internal.h"
#include "carrier/opencl/internal.h"
#include "layout/internal.h"
#include "op/internal.h"
#include "profile/internal.h"
#include "strideweave/blockdev.h"
#include "strideweave/capability.h"
#include "strideweave/interop.h"
#include "tensor/internal.h"

/* ---------------------------------------------------------------- keys */

/* The built-in backends' vtables are private to src/carrier, so their
 * keys are tokens of their own. */
static const char key_cpu_token, key_generic_token, key_file_token,
    key_blockdev_token;

sw_move_key sw_move_key_cpu(void) {
    sw_move_key k = {&key_cpu_token, "CPU"};
    return k;
}

sw_move_key sw_move_key_generic(void) {
    sw_move_key k = {&key_generic_token, "Generic"};
    return k;
}

sw_move_key sw_move_key_file(void) {
    sw_move_key k = {&key_file_token, "FileBacked"};
    return k;
}

sw_move_key sw_move_key_blockdev(void) {
    sw_move_key k = {&key_blockdev_token, "BlockDeviceCarrier"};
    return k;
}

sw_move_key sw_move_key_class(const sw_carrier_class *cls) {
    sw_move_key k = {cls, cls ? cls->name : NULL};
    return k;
}

sw_move_key sw_move_key_of(const sw_carrier *c) {
    if (c->dispatch_tag) {
        const sw_defn *d = sw_carrier_defn(c);
        sw_move_key k = {c->dispatch_tag, d ? d->def.name : c->cls->name};
        return k;
    }
    if (sw_carrier_is_cpu(c))
        return sw_move_key_cpu();
    if (sw_carrier_is_generic(c))
        return sw_move_key_generic();
    if (sw_carrier_is_file(c))
        return sw_move_key_file();
    if (sw_carrier_is_blockdev(c))
        return sw_move_key_blockdev();
    return sw_move_key_class(c->cls);
}

static const char *key_name(sw_move_key k) {
    return k.name ? k.name : "?";
}

/* The legacy registry serves definition-free pairs only. */
sw_status sw_move_check_pair(sw_move_key source, sw_move_key destination) {
    if (sw_carrier_has_definition(source.id) ||
        sw_carrier_has_definition(destination.id))
        return sw_fail(SW_ERUNTIME,
                       "(%s, %s) involves a definition-backed carrier: its "
                       "moves go through the TransferRoute of its "
                       "CarrierDefinition, not the move registry",
                       key_name(source), key_name(destination));
    return SW_OK;
}

/*
 * The move class for a pair with a definition-backed source
 * (extension.h): its route to the destination's exact class, else the
 * elementwise copy when both classes allow it. *cls is NULL for a
 * definition-free source (the registry decides).
 */
static sw_status defined_route(const sw_carrier *src, const sw_carrier *dst,
                               const sw_move_class **cls) {
    *cls = NULL;
    const sw_defn *sd = sw_carrier_defn(src);
    if (!sd)
        return SW_OK;
    *cls = sw_defn_route(sd, sw_carrier_class_tag(dst));
    if (*cls)
        return SW_OK;
    const sw_defn *dd = sw_carrier_defn(dst);
    if (dd && sd->def.storage.elementwise_fallback &&
        dd->def.storage.elementwise_fallback) {
        *cls = sw_move_elementwise();
        return SW_OK;
    }
    return sw_fail(SW_ENOTIMPL, "no transfer route for %s, %s",
                   key_name(sw_move_key_of(src)),
                   key_name(sw_move_key_of(dst)));
}

/* ------------------------------------------------------------- helpers */

/* Sets a carrier's version back (used where a transfer must not count as
 * a mutation, and to undo the bumps of a failed one). */
static void restore_version(sw_carrier *c, int64_t version) {
    atomic_store(&c->version, version);
}

/* The calling thread's failure, kept across cleanup that may fail too. */
typedef struct saved_error {
    sw_status status;
    int err;
    char msg[512];
} saved_error;

static void save_error(saved_error *s, sw_status st) {
    s->status = st;
    s->err = sw_errno();
    snprintf(s->msg, sizeof s->msg, "%s", sw_errmsg());
}

static sw_status restore_error(const saved_error *s) {
    if (s->status == SW_EOS && s->err) {
        /* sw_fail_os appends ": <strerror>"; strip the copy we saved. */
        const char *cut = strrchr(s->msg, ':');
        int n = cut ? (int)(cut - s->msg) : (int)strlen(s->msg);
        return sw_fail_os(s->err, "%.*s", n, s->msg);
    }
    return sw_fail(s->status, "%s", s->msg);
}

/* ------------------------------------------------------ the copy hooks */

/*
 * output[i] = tensor[i] for every logical i. Both tensors have the same
 * shape; an odometer over their flattened leaves keeps the indices.
 */
static sw_status copy_elementwise(sw_op *op, sw_tensor *tensor,
                                  sw_carrier *destination, sw_tensor *output,
                                  int64_t element_count) {
    const sw_layout *sl = tensor->layout, *dl = output->layout;
    if (sl == dl || sw_layout_equal(sl, dl)) {
        int32_t n = sl->nleaf;
        const int64_t *ext = sl->shape->val, *str = sl->stride->val;
        int64_t ctr_small[16];
        int64_t *ctr = ctr_small;
        if (n > 16) {
            ctr = sw_calloc((size_t)n, sizeof *ctr);
            if (!ctr)
                return sw_oom();
        } else {
            memset(ctr_small, 0, sizeof ctr_small);
        }
        sw_status st = SW_OK;
        int64_t idx = 0;
        for (int64_t k = 0; k < sl->size && !st; ++k) {
            sw_value v;
            st = sw_carrier_get(tensor->carrier, tensor->offset + idx, &v);
            if (st)
                break;
            st = sw_carrier_set(output->carrier, output->offset + idx, &v);
            sw_value_clear(&v);
            for (int32_t j = 0; j < n; ++j) {
                if (++ctr[j] < ext[j]) {
                    idx += str[j];
                    break;
                }
                idx -= (ext[j] - 1) * str[j];
                ctr[j] = 0;
            }
        }
        if (ctr != ctr_small)
            sw_free(ctr);
        return st;
    }
    /* Different layouts of one shape (a backward pass): by logical index. */
    for (int64_t i = 0; i < sl->size; ++i) {
        sw_value v;
        sw_status st = sw_tensor_get(tensor, i, &v);
        if (st)
            return st;
        st = sw_tensor_set(output, i, &v);
        sw_value_clear(&v);
        if (st)
            return st;
    }
    return SW_OK;
}

/* Bulk transfers move at most this many bytes per file operation. */
#define BULK_CHUNK_BYTES ((int64_t)8 << 20)

/* Whether a bulk span copy gives output tensor's values. */
static int bulk_applies(const sw_tensor *tensor, const sw_tensor *output) {
    return sw_carrier_dtype(tensor->carrier) ==
               sw_carrier_dtype(output->carrier) &&
           output->offset == 0 &&
           (tensor->layout == output->layout ||
            sw_layout_equal(tensor->layout, output->layout));
}

static sw_status copy_cpu_to_file(sw_op *op, sw_tensor *tensor,
                                  sw_carrier *destination, sw_tensor *output,
                                  int64_t element_count) {
    sw_carrier *src = tensor->carrier;
    if (!sw_carrier_is_cpu(src) || !sw_carrier_is_file(destination) ||
        !bulk_applies(tensor, output))
        return copy_elementwise(op, tensor, destination, output, element_count);
    int64_t item = sw_dtype_itemsize(sw_carrier_dtype(src));
    const char *data = sw_cpu_storage(src);
    if (!data)
        return sw_carrier_fail_released();
    data += tensor->offset * item;
    int64_t chunk = BULK_CHUNK_BYTES / item;
    int64_t version = sw_carrier_version(destination);
    sw_status st = SW_OK;
    for (int64_t i = 0; i < element_count && !st; i += chunk) {
        int64_t m = element_count - i < chunk ? element_count - i : chunk;
        st = sw_file_write(destination, i, m, data + i * item);
    }
    /* A move is not an in-place mutation of the destination; a failed one
     * that wrote a chunk keeps the bumps, so the move sees the change. */
    if (!st)
        restore_version(destination, version);
    return st;
}

/*
 * Asks for transparent huge pages over the 2 MiB-aligned interior of a
 * large buffer about to be filled: the fresh pages of a big destination
 * then fault in 2 MiB at a time, which otherwise costs more than the
 * read itself. Advice only; failures are ignored.
 */
static void advise_huge(void *data, int64_t bytes) {
#ifdef MADV_HUGEPAGE
    const uintptr_t huge = (uintptr_t)2 << 20;
    uintptr_t start = ((uintptr_t)data + huge - 1) & ~(huge - 1);
    uintptr_t end = ((uintptr_t)data + (uintptr_t)bytes) & ~(huge - 1);
    if (bytes >= (int64_t)(4 * huge) && end > start)
        (void)madvise((void *)start, end - start, MADV_HUGEPAGE);
#else
    (void)data;
    (void)bytes;
#endif
}

static sw_status copy_file_to_cpu(sw_op *op, sw_tensor *tensor,
                                  sw_carrier *destination, sw_tensor *output,
                                  int64_t element_count) {
    sw_carrier *src = tensor->carrier;
    if (!sw_carrier_is_file(src) || !sw_carrier_is_cpu(destination) ||
        !bulk_applies(tensor, output))
        return copy_elementwise(op, tensor, destination, output, element_count);
    int64_t item = sw_dtype_itemsize(sw_carrier_dtype(src));
    char *data = sw_cpu_storage(destination);
    if (!data)
        return sw_carrier_fail_released();
    advise_huge(data, element_count * item);
    int64_t chunk = BULK_CHUNK_BYTES / item;
    sw_status st = SW_OK;
    for (int64_t i = 0; i < element_count && !st; i += chunk) {
        int64_t m = element_count - i < chunk ? element_count - i : chunk;
        st = sw_file_read(src, tensor->offset + i, m, data + i * item);
        /* Reads fill memory directly: a failure after (or during) a read
         * may have changed the destination, which its version says. */
        if (st)
            atomic_fetch_add(&destination->version, 1);
    }
    return st;
}

/*
 * The block-device bulk moves: one transfer of the whole physical span
 * (cosize elements from the tensor's offset, holes included) to or from
 * the destination's slot 0. Unlike the file moves, the destination's
 * version rises by one, at the start of the transfer, so a failure that
 * wrote a prefix is seen as a change. Only a backward pass whose layouts
 * differ comes here with tensors a span copy does not fit.
 */
static sw_status copy_cpu_to_blockdev(sw_op *op, sw_tensor *tensor,
                                      sw_carrier *destination,
                                      sw_tensor *output,
                                      int64_t element_count) {
    sw_carrier *src = tensor->carrier;
    if (!sw_carrier_is_cpu(src) || !sw_carrier_is_blockdev(destination) ||
        !bulk_applies(tensor, output))
        return copy_elementwise(op, tensor, destination, output, element_count);
    const char *data = sw_cpu_storage(src);
    if (!data)
        return sw_carrier_fail_released();
    return sw_blockdev_carrier_write(destination, 0, element_count * 4,
                                     data + tensor->offset * 4);
}

static sw_status copy_blockdev_to_cpu(sw_op *op, sw_tensor *tensor,
                                      sw_carrier *destination,
                                      sw_tensor *output,
                                      int64_t element_count) {
    sw_carrier *src = tensor->carrier;
    if (!sw_carrier_is_blockdev(src) || !sw_carrier_is_cpu(destination) ||
        !bulk_applies(tensor, output))
        return copy_elementwise(op, tensor, destination, output, element_count);
    char *data = sw_cpu_storage(destination);
    if (!data)
        return sw_carrier_fail_released();
    atomic_fetch_add(&destination->version, 1);
    return sw_blockdev_carrier_read(src, tensor->offset * 4, element_count * 4,
                                    data);
}

static const sw_move_class elementwise_class = {
    .version = SW_MOVE_CLASS_VERSION,
    .name = "ElementwiseMoveOperation",
    .copy = copy_elementwise,
};

static const sw_move_class cpu_to_file_class = {
    .version = SW_MOVE_CLASS_VERSION,
    .name = "CpuToFileBackedMoveOperation",
    .source_pin = {&key_cpu_token, "CPU"},
    .destination_pin = {&key_file_token, "FileBacked"},
    .copy = copy_cpu_to_file,
};

static const sw_move_class file_to_cpu_class = {
    .version = SW_MOVE_CLASS_VERSION,
    .name = "FileBackedToCpuMoveOperation",
    .source_pin = {&key_file_token, "FileBacked"},
    .destination_pin = {&key_cpu_token, "CPU"},
    .copy = copy_file_to_cpu,
};

static const sw_move_class cpu_to_blockdev_class = {
    .version = SW_MOVE_CLASS_VERSION,
    .name = "CpuToBlockDeviceMoveOperation",
    .source_pin = {&key_cpu_token, "CPU"},
    .destination_pin = {&key_blockdev_token, "BlockDeviceCarrier"},
    .copy = copy_cpu_to_blockdev,
};

static const sw_move_class blockdev_to_cpu_class = {
    .version = SW_MOVE_CLASS_VERSION,
    .name = "BlockDeviceToCpuMoveOperation",
    .source_pin = {&key_blockdev_token, "BlockDeviceCarrier"},
    .destination_pin = {&key_cpu_token, "CPU"},
    .copy = copy_blockdev_to_cpu,
};

const sw_move_class *sw_move_cpu_to_blockdev(void) {
    return &cpu_to_blockdev_class;
}

const sw_move_class *sw_move_blockdev_to_cpu(void) {
    return &blockdev_to_cpu_class;
}

/* The exact built-in class of a pair involving the block-device key, or
 * NULL when the pair has none (every other such pair is refused). */
static const sw_move_class *blockdev_pair_class(const void *src,
                                                const void *dst) {
    if (src == &key_cpu_token && dst == &key_blockdev_token)
        return &cpu_to_blockdev_class;
    if (src == &key_blockdev_token && dst == &key_cpu_token)
        return &blockdev_to_cpu_class;
    return NULL;
}

static int involves_blockdev(const void *src, const void *dst) {
    return src == &key_blockdev_token || dst == &key_blockdev_token;
}

sw_status sw_move_check_blockdev(sw_move_key source, sw_move_key destination) {
    if (involves_blockdev(source.id, destination.id) &&
        !blockdev_pair_class(source.id, destination.id))
        return sw_fail(SW_ENOTIMPL,
                       "(%s, %s) is not a supported block-device carrier pair: "
                       "BlockDeviceCarrier moves only to and from CPU, with "
                       "no elementwise fallback",
                       key_name(source), key_name(destination));
    return SW_OK;
}

/* The registry's refusal of pairs whose moves are fixed built-ins. */
static sw_status check_protected(sw_move_key source, sw_move_key destination) {
    if (involves_blockdev(source.id, destination.id))
        return sw_fail(SW_EVALUE,
                       "(%s, %s) involves BlockDeviceCarrier, whose moves are "
                       "protected built-ins",
                       key_name(source), key_name(destination));
    return SW_OK;
}

const sw_move_class *sw_move_elementwise(void) {
    return &elementwise_class;
}

const sw_move_class *sw_move_cpu_to_file(void) {
    return &cpu_to_file_class;
}

const sw_move_class *sw_move_file_to_cpu(void) {
    return &file_to_cpu_class;
}

/* ------------------------------------------------------------ registry */

typedef struct entry {
    struct entry *next;
    const void *src, *dst;
    const sw_move_class *cls;
    /* Copies of the keys' names for messages ("CPU\0FileBacked\0"), in
     * the same allocation as the entry; static for the built-ins. */
    const char *src_name, *dst_name;
    /* The built-in nodes are static, and are reused when a removed
     * built-in pair is registered again. */
    int is_static;
} entry;

/* The OpenCL carrier's exact bulk pairs (src/carrier/opencl/moves.c). */
static entry builtin_opencl_to_file = {NULL,
                                       &sw_opencl_carrier_class,
                                       &key_file_token,
                                       &sw_opencl_move_classes[4],
                                       "OpenCL",
                                       "FileBacked",
                                       1};
static entry builtin_file_to_opencl = {&builtin_opencl_to_file,
                                       &key_file_token,
                                       &sw_opencl_carrier_class,
                                       &sw_opencl_move_classes[3],
                                       "FileBacked",
                                       "OpenCL",
                                       1};
static entry builtin_opencl_to_opencl = {&builtin_file_to_opencl,
                                         &sw_opencl_carrier_class,
                                         &sw_opencl_carrier_class,
                                         &sw_opencl_move_classes[2],
                                         "OpenCL",
                                         "OpenCL",
                                         1};
static entry builtin_opencl_to_cpu = {&builtin_opencl_to_opencl,
                                      &sw_opencl_carrier_class,
                                      &key_cpu_token,
                                      &sw_opencl_move_classes[1],
                                      "OpenCL",
                                      "CPU",
                                      1};
static entry builtin_cpu_to_opencl = {&builtin_opencl_to_cpu,
                                      &key_cpu_token,
                                      &sw_opencl_carrier_class,
                                      &sw_opencl_move_classes[0],
                                      "CPU",
                                      "OpenCL",
                                      1};
static entry builtin_file_to_cpu = {&builtin_cpu_to_opencl,
                                    &key_file_token,
                                    &key_cpu_token,
                                    &file_to_cpu_class,
                                    "FileBacked",
                                    "CPU",
                                    1};
static entry builtin_cpu_to_file = {&builtin_file_to_cpu,
                                    &key_cpu_token,
                                    &key_file_token,
                                    &cpu_to_file_class,
                                    "CPU",
                                    "FileBacked",
                                    1};
static entry *const builtin_entries[] = {
    &builtin_cpu_to_file,   &builtin_file_to_cpu,      &builtin_cpu_to_opencl,
    &builtin_opencl_to_cpu, &builtin_opencl_to_opencl, &builtin_file_to_opencl,
    &builtin_opencl_to_file};

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static entry *registry = &builtin_cpu_to_file;

/* The link pointing at the pair's entry (or at NULL). Lock held. */
static entry **find(const void *src, const void *dst) {
    entry **p = &registry;
    while (*p && ((*p)->src != src || (*p)->dst != dst))
        p = &(*p)->next;
    return p;
}

static sw_status check_class(const sw_move_class *cls) {
    if (!cls || cls->version != SW_MOVE_CLASS_VERSION || !cls->copy)
        return sw_fail(SW_ETYPE,
                       "operation_class must be a MoveOperation subclass");
    return SW_OK;
}

sw_status sw_move_register(sw_move_key source, sw_move_key destination,
                           const sw_move_class *cls) {
    if (!source.id)
        return sw_fail(SW_ETYPE, "source_class must be a Carrier subclass");
    if (!destination.id)
        return sw_fail(SW_ETYPE,
                       "destination_class must be a Carrier subclass");
    sw_status st = check_class(cls);
    if (!st)
        st = check_protected(source, destination);
    if (!st)
        st = sw_move_check_pair(source, destination);
    if (st)
        return st;
    const char *sn = key_name(source), *dn = key_name(destination);
    entry *e = NULL;
    for (size_t i = 0; i < sizeof builtin_entries / sizeof *builtin_entries;
         ++i)
        if (builtin_entries[i]->src == source.id &&
            builtin_entries[i]->dst == destination.id)
            e = builtin_entries[i];
    if (!e) {
        size_t ls = strlen(sn) + 1, ld = strlen(dn) + 1;
        e = sw_malloc(sizeof *e + ls + ld);
        if (!e)
            return sw_oom();
        char *names = (char *)(e + 1);
        memcpy(names, sn, ls);
        memcpy(names + ls, dn, ld);
        e->src = source.id;
        e->dst = destination.id;
        e->src_name = names;
        e->dst_name = names + ls;
        e->is_static = 0;
    }
    pthread_mutex_lock(&registry_lock);
    entry **p = find(source.id, destination.id);
    if (*p) {
        pthread_mutex_unlock(&registry_lock);
        if (!e->is_static)
            sw_free(e);
        return sw_fail(SW_EVALUE,
                       "a move operation is already registered for (%s, %s)",
                       sn, dn);
    }
    /* The pair is absent, so a static node for it is unlinked and no
     * one else reads it: it can be set here, under the lock. */
    e->cls = cls;
    e->next = NULL;
    *p = e;
    pthread_mutex_unlock(&registry_lock);
    return SW_OK;
}

sw_status sw_move_unregister(sw_move_key source, sw_move_key destination,
                             const sw_move_class **out) {
    sw_status st = check_protected(source, destination);
    if (!st)
        st = sw_move_check_pair(source, destination);
    if (st)
        return st;
    pthread_mutex_lock(&registry_lock);
    entry **p = find(source.id, destination.id);
    entry *e = *p;
    const sw_move_class *cls = NULL;
    if (e) {
        *p = e->next;
        e->next = NULL;
        cls = e->cls;
    }
    pthread_mutex_unlock(&registry_lock);
    if (!e)
        return sw_fail(SW_EKEY, "no move operation is registered for (%s, %s)",
                       key_name(source), key_name(destination));
    if (!e->is_static)
        sw_free(e);
    if (out)
        *out = cls;
    return SW_OK;
}

const sw_move_class *sw_move_dispatch(sw_move_key source,
                                      sw_move_key destination) {
    if (involves_blockdev(source.id, destination.id)) {
        const sw_move_class *fixed =
            blockdev_pair_class(source.id, destination.id);
        return fixed ? fixed : &elementwise_class;
    }
    pthread_mutex_lock(&registry_lock);
    entry *e = *find(source.id, destination.id);
    const sw_move_class *cls = e ? e->cls : &elementwise_class;
    pthread_mutex_unlock(&registry_lock);
    return cls;
}
/* ------------------------------------------------------ the operation */

/* What the checks of a move decided, for the transfer that follows. */
typedef struct move_plan {
    int64_t required; /* the layout's cosize */
    int grow;         /* the destination is an empty FileBacked to grow */
    const sw_move_class *reverse; /* the route back, when recording */
    sw_move_key dkey;
    int64_t dst_version; /* the destination's version at the checks */
} move_plan;

/* A transfer route's work, prepared and submitted when the move was
 * submitted (sw_move_op_submit), collected by the move's transfer. */
typedef struct route_work {
    int active;   /* prepare ran at submission */
    int fallback; /* prepare refused: copy element by element */
    const sw_transfer_route_decl *route;
    void *work;                        /* until finish */
    sw_transfer_completion completion; /* wait NULL: none */
    sw_transfer_request request;       /* prepare's, valid until finish */
    saved_error failure;               /* status non-zero: submit failed */
    /* The host language's error object a failed wait handed over. */
    void *host_error;
    void (*drop_error)(void *error);
    /* When a profiler is active: the moment just before submit, whose
     * asynchronous work (device commands) may start right away. */
    int64_t submit_ns;
} route_work;

typedef struct move_state {
    const sw_move_class *cls;
    /* The destination of the forward in progress (borrowed). */
    sw_carrier *destination;
    /* Set when the checks already ran (an asynchronous submission): the
     * forward then only transfers and commits. */
    int planned;
    move_plan plan;
    /* The transfer in progress, from move_begin to move_end: the
     * destination pinned and staged, whether anything may have written
     * it, and the result over it. */
    int begun, pinned, staged, copied;
    sw_tensor *output;
    route_work route;
    /* Saved by a successful recorded forward for backward: the route back
     * and the destination's key. */
    const sw_move_class *reverse;
    const void *destination_key;
} move_state;

static sw_status move_forward(sw_op *op, int32_t nargs, const sw_arg *args,
                              sw_tensor **out);
static sw_status move_backward(sw_op *op, sw_tensor *gradient, int32_t n,
                               sw_tensor **grads);

static void route_work_clear(route_work *w);

static void move_destroy(sw_op *op) {
    move_state *s = sw_op_state(op);
    route_work_clear(&s->route);
    sw_tensor_unref(s->output);
    sw_free(s);
}

static const sw_op_class move_op_class = {
    .version = SW_OP_CLASS_VERSION,
    .name = "move",
    .forward = move_forward,
    .backward = move_backward,
    .destroy = move_destroy,
};

sw_status sw_move_op_new(const sw_move_class *cls, sw_op **out) {
    sw_status st = check_class(cls);
    if (st)
        return st;
    move_state *s = sw_malloc(sizeof *s);
    if (!s)
        return sw_oom();
    memset(s, 0, sizeof *s);
    s->cls = cls;
    st = sw_op_new(&move_op_class, s, out);
    if (st)
        sw_free(s);
    return st;
}

int sw_op_is_move(const sw_op *op) {
    return op && sw_op_get_class(op) == &move_op_class;
}

const sw_move_class *sw_move_op_class(const sw_op *op) {
    if (!sw_op_is_move(op))
        return NULL;
    return ((move_state *)sw_op_state(op))->cls;
}

/* SW_ETYPE unless the class accepts the exact pair of keys. */
static sw_status check_pins(const sw_move_class *cls, sw_move_key src,
                            sw_move_key dst) {
    if (cls->source_pin.id && cls->source_pin.id != src.id)
        return sw_fail(SW_ETYPE, "%s requires a %s source", cls->name,
                       key_name(cls->source_pin));
    if (cls->destination_pin.id && cls->destination_pin.id != dst.id)
        return sw_fail(SW_ETYPE, "%s requires a %s destination", cls->name,
                       key_name(cls->destination_pin));
    return SW_OK;
}

/* A move between CPU and a block carrier runs only its exact built-in
 * class, and never on a faulted device. */
static sw_status check_blockdev_move(const sw_move_class *cls,
                                     const sw_carrier *src,
                                     const sw_carrier *dst, sw_move_key skey,
                                     sw_move_key dkey) {
    const sw_move_class *fixed = blockdev_pair_class(skey.id, dkey.id);
    if (!fixed)
        return SW_OK;
    if (cls != fixed)
        return sw_fail(SW_ENOTIMPL,
                       "(%s, %s) moves only through the exact built-in %s",
                       key_name(skey), key_name(dkey), fixed->name);
    sw_blockdev *d =
        sw_blockdev_of(src) ? sw_blockdev_of(src) : sw_blockdev_of(dst);
    if (sw_blockdev_is_faulted(d))
        return sw_fail(SW_ERUNTIME, "BlockDevice is faulted after an I/O "
                                    "error");
    return SW_OK;
}

/* Only an empty FileBacked destination can grow in place. */
static int can_grow(sw_carrier *c) {
    return sw_carrier_is_file(c);
}

/* Every check of a move, in the documented order; nothing changes. */
static sw_status move_check(const sw_move_class *cls, sw_tensor *t,
                            sw_carrier *dst, move_plan *p) {
    if (!t)
        return sw_fail(SW_ETYPE, "tensor must be a Tensor");
    sw_status gate = sw_tensor_single(t, SW_ENTRY_OPERATION);
    if (gate)
        return gate;
    sw_carrier *src = t->carrier;
    if (sw_carrier_is_released(src))
        return sw_fail(SW_ERUNTIME, "tensor carrier is released");
    if (sw_carrier_has_owner(src) && !sw_carrier_has_owner_access(src))
        return sw_fail(SW_ERUNTIME, "tensor carrier is owned by another "
                                    "carrier object and cannot be moved "
                                    "directly");
    if (sw_carrier_check_move(src))
        return sw_fail(SW_ERUNTIME, "tensor carrier is owned by a pending "
                                    "move");
    if (!dst)
        return sw_fail(SW_ETYPE, "destination must be a Carrier instance");
    sw_status refused =
        sw_move_check_blockdev(sw_move_key_of(src), sw_move_key_of(dst));
    if (refused)
        return refused;
    if (dst == src)
        return sw_fail(SW_EVALUE,
                       "destination must not be the tensor's own carrier");
    if (sw_carrier_is_released(dst))
        return sw_fail(SW_ERUNTIME, "destination carrier is released");
    if (sw_carrier_check_move(dst))
        return sw_fail(SW_ERUNTIME, "destination carrier must be mutable: it "
                                    "is owned by a pending move");
    if (!sw_carrier_is_mutable(dst))
        return sw_fail(SW_ERUNTIME, "destination carrier must be mutable");
    if (sw_carrier_dtype(dst) != sw_carrier_dtype(src))
        return sw_fail(SW_ETYPE,
                       "destination dtype must match the tensor dtype");
    sw_move_key skey = sw_move_key_of(src), dkey = sw_move_key_of(dst);
    const sw_move_class *routed = NULL;
    sw_status st = defined_route(src, dst, &routed);
    if (!st && routed && cls != routed)
        st = sw_fail(SW_ETYPE,
                     "(%s, %s) moves through %s, not through the move "
                     "operation given",
                     key_name(skey), key_name(dkey), routed->name);
    if (!st)
        st = check_pins(cls, skey, dkey);
    if (!st)
        st = check_blockdev_move(cls, src, dst, skey, dkey);
    if (st)
        return st;
    int64_t required = t->layout->cosize;
    int64_t have = sw_carrier_size(dst);
    int grow = have == 0 && can_grow(dst);
    if (!grow && have < required)
        return sw_fail(SW_EVALUE,
                       "destination carrier is too small for the tensor "
                       "layout");
    /* The route back, before any work: a move that could not carry its
     * gradient home fails here rather than after the transfer. */
    const sw_move_class *reverse = NULL;
    if (sw_grad_enabled() && sw_tensor_is_differentiable(t)) {
        st = defined_route(dst, src, &reverse);
        if (st) {
            char why[400];
            snprintf(why, sizeof why, "%s", sw_errmsg());
            return sw_fail(st, "move has no reverse route: %s", why);
        }
        if (!reverse)
            reverse = sw_move_dispatch(dkey, skey);
        st = check_pins(reverse, dkey, skey);
        if (st)
            return st;
        if (!src->cls->allocate_like && !src->cls->new_like)
            return sw_fail(SW_ENOTIMPL,
                           "move has no reverse route: %s carrier does not "
                           "support allocation",
                           src->cls->name);
    }
    p->required = required;
    p->grow = grow;
    p->reverse = reverse;
    p->dkey = dkey;
    p->dst_version = sw_carrier_version(dst);
    return SW_OK;
}

/*
 * The start of a checked move's transfer: from here until move_end the
 * move owns both carriers (nobody may change the source, a copy hook only
 * reads it; only this thread may change the destination), the
 * destination's storage is pinned (it must outlive the copy even if a
 * hook releases it), a growing file is staged, and the result over the
 * destination exists. A failure is left for move_end to undo.
 */
static sw_status move_begin(move_state *s, sw_tensor *t, sw_carrier *dst,
                            const move_plan *p) {
    sw_carrier_move_mark(t->carrier, 1);
    sw_carrier_move_mark(dst, 1);
    sw_carrier_move_worker(dst, sw_thread_id());
    s->begun = 1;
    sw_status st = sw_carrier_pin(dst);
    s->pinned = !st;
    /* A grown file shows its values under its name only at the commit. */
    if (!st && p->grow) {
        st = sw_file_stage(dst, p->required);
        s->staged = !st;
    }
    if (!st)
        st = sw_tensor_new(dst, 0, t->layout, &s->output);
    return st;
}

/*
 * The end of a begun move's transfer, whose outcome is st: the commit
 * (the destination holds the values, the source goes) or the undoing of
 * everything the transfer changed. Ends the move's ownership either way.
 */
static sw_status move_end(move_state *s, sw_tensor *t, sw_carrier *dst,
                          const move_plan *p, sw_status st, sw_tensor **out) {
    sw_carrier *src = t->carrier;
    sw_tensor *r = s->output;
    s->output = NULL;
    /* A copy hook may have released its destination: nothing to publish. */
    if (!st && sw_carrier_is_released(dst))
        st = sw_fail(SW_ERUNTIME, "destination carrier is released");
    if (!st && s->staged)
        st = sw_file_commit(dst);
    if (!st) {
        sw_carrier_unpin(dst);
        s->pinned = 0;
        /* Commit: the destination holds the values; the source goes. */
        st = sw_carrier_release_moved(src);
    } else {
        saved_error e;
        save_error(&e, st);
        /* A copy that wrote part of the destination (its version moved)
         * leaves exactly one version step, so that every saved-version
         * check sees the change; one that wrote nothing leaves none. */
        int64_t now = sw_carrier_version(dst);
        restore_version(dst, s->copied && now != p->dst_version
                                 ? p->dst_version + 1
                                 : p->dst_version);
        if (s->staged)
            (void)sw_file_abandon(dst);
        if (s->pinned)
            sw_carrier_unpin(dst);
        st = restore_error(&e);
    }
    s->begun = s->pinned = s->staged = s->copied = 0;
    sw_carrier_move_mark(dst, -1);
    sw_carrier_move_mark(src, -1);
    if (st) {
        sw_tensor_unref(r);
        return st;
    }
    s->reverse = p->reverse;
    s->destination_key = p->dkey.id;
    *out = r;
    return SW_OK;
}

/* The transfer and the commit of a checked move (begun already when a
 * route's work was submitted with the move). */
static sw_status move_run(sw_op *op, move_state *s, sw_tensor *t,
                          sw_carrier *dst, const move_plan *p,
                          sw_tensor **out) {
    sw_status st = SW_OK;
    if (!s->begun)
        st = move_begin(s, t, dst, p);
    if (!st) {
        s->copied = 1;
        st = s->cls->copy(op, t, dst, s->output, p->required);
    }
    return move_end(s, t, dst, p, st, out);
}

static sw_status move_forward(sw_op *op, int32_t nargs, const sw_arg *args,
                              sw_tensor **out) {
    move_state *s = sw_op_state(op);
    if (nargs < 1 || args[0].kind != SW_ARG_TENSOR || !args[0].as.tensor)
        return sw_fail(SW_ETYPE, "tensor must be a Tensor");
    sw_tensor *t = args[0].as.tensor;
    move_plan p;
    if (s->planned) {
        p = s->plan;
    } else {
        sw_status st = move_check(s->cls, t, s->destination, &p);
        if (st)
            return st;
    }
    return move_run(op, s, t, s->destination, &p, out);
}

/* The positional arguments as executions see them: the tensor, then a
 * placeholder for the destination (which the operation state holds), so
 * that recorded shapes have one entry per argument, None for it. */
static void move_args(sw_tensor *tensor, sw_arg args[2]) {
    args[0] = sw_arg_tensor(tensor);
    args[1].kind = SW_ARG_NONE;
    args[1].as.host = NULL;
}

sw_status sw_move_op_forward(sw_op *op, sw_tensor *tensor,
                             sw_carrier *destination, sw_tensor **out) {
    if (!sw_op_is_move(op))
        return sw_fail(SW_ETYPE, "operation must be a MoveOperation");
    if (!tensor)
        return sw_fail(SW_ETYPE, "tensor must be a Tensor");
    move_state *s = sw_op_state(op);
    s->destination = destination;
    sw_arg args[2];
    move_args(tensor, args);
    sw_status st = sw_op_forward(op, 2, args, out);
    s->destination = NULL;
    return st;
}

sw_status sw_move_op_check(sw_op *op, sw_tensor *tensor,
                           sw_carrier *destination) {
    if (!sw_op_is_move(op))
        return sw_fail(SW_ETYPE, "operation must be a MoveOperation");
    move_plan p;
    return move_check(((move_state *)sw_op_state(op))->cls, tensor, destination,
                      &p);
}

sw_status sw_move_op_execute_lowered(sw_op *op, sw_tensor *tensor,
                                     sw_carrier *destination, sw_tensor **out) {
    if (!sw_op_is_move(op))
        return sw_fail(SW_ETYPE, "operation must be a MoveOperation");
    if (!tensor)
        return sw_fail(SW_ETYPE, "tensor must be a Tensor");
    move_state *s = sw_op_state(op);
    s->destination = destination;
    sw_arg args[2];
    move_args(tensor, args);
    sw_status st = sw_op_execute_lowered(op, 2, args, out);
    s->destination = NULL;
    return st;
}

/* The class registered for the pair of tensor's carrier and destination. */
sw_status sw_move_resolve(const sw_carrier *src, const sw_carrier *dst,
                          const sw_move_class **out) {
    const sw_move_class *routed = NULL;
    sw_status st = defined_route(src, dst, &routed);
    if (st)
        return st;
    *out = routed ? routed
                  : sw_move_dispatch(sw_move_key_of(src), sw_move_key_of(dst));
    return SW_OK;
}

const sw_move_class *sw_move_dispatch_carriers(const sw_carrier *src,
                                               const sw_carrier *dst) {
    /* A refused pair's failure is reported by the move's checks, which run
     * the same resolution. */
    const sw_move_class *cls = NULL;
    if (dst && sw_move_resolve(src, dst, &cls) == SW_OK)
        return cls;
    sw_clear_error();
    sw_move_key dkey = {NULL, NULL};
    if (dst)
        dkey = sw_move_key_of(dst);
    return sw_move_dispatch(sw_move_key_of(src), dkey);
}

int sw_move_class_is_route(const sw_move_class *cls) {
    return cls && cls->copy == sw_route_copy;
}

static const sw_move_class *dispatch_pair(sw_tensor *tensor,
                                          sw_carrier *destination) {
    return sw_move_dispatch_carriers(tensor->carrier, destination);
}

/* ------------------------------------------------------ transfer routes */

/* Whether both exact classes let a refused route copy element by
 * element. */
static int fallback_allowed(const sw_carrier *src, const sw_carrier *dst) {
    const sw_defn *sd = sw_carrier_defn(src), *dd = sw_carrier_defn(dst);
    return sd && dd && sd->def.storage.elementwise_fallback &&
           dd->def.storage.elementwise_fallback;
}

static sw_status fail_refused(const sw_carrier *src, const sw_carrier *dst,
                              const char *reason) {
    return sw_fail(SW_ENOTIMPL, "no transfer route for %s, %s: %s",
                   key_name(sw_move_key_of(src)), key_name(sw_move_key_of(dst)),
                   reason[0] ? reason : "the route refused");
}

/* The route's prepare for moving tensor into destination; *req (which
 * the caller keeps until finish) is the request it sees. */
static sw_status route_prepare(const sw_transfer_route_decl *r,
                               sw_transfer_request *req, sw_tensor *tensor,
                               sw_carrier *destination, void **work,
                               int *unsupported, char *reason, size_t size) {
    sw_transfer_request made = {
        tensor,         destination,    sw_carrier_dtype(tensor->carrier),
        tensor->layout, tensor->offset, tensor->layout->cosize};
    *req = made;
    *work = NULL;
    *unsupported = 0;
    return r->prepare(r->ctx, req, work, unsupported, reason, size);
}

/* Submits prepared work: *c gets a completion, or none (wait NULL) when
 * the work is complete. A route without submit runs (and waits) here. */
static sw_status route_submit(const sw_transfer_route_decl *r, void *work,
                              sw_transfer_completion *c) {
    memset(c, 0, sizeof *c);
    if (r->submit)
        return r->submit(r->ctx, work, c);
    return r->run(r->ctx, work);
}

static void completion_drop(sw_transfer_completion *c) {
    if (c->drop)
        c->drop(c->ctx);
    memset(c, 0, sizeof *c);
}

/* Frees what a route's work still holds (accepts cleared work). */
static void route_work_clear(route_work *w) {
    completion_drop(&w->completion);
    if (w->route && w->route->finish && !w->fallback)
        w->route->finish(w->route->ctx, w->work);
    if (w->host_error && w->drop_error)
        w->drop_error(w->host_error);
    memset(w, 0, sizeof *w);
}

/*
 * A route's half of a move's submission, on the submitting thread and
 * with the graph off, after the move has claimed both carriers: begins
 * the transfer, prepares, and submits. A failure here (the transfer
 * cannot begin, prepare fails, or refuses with no fallback) comes before
 * any submission: the move does not happen. A failing submit is the
 * move's outcome, kept for the transfer to report.
 */
static sw_status route_submit_early(move_state *s, sw_tensor *t,
                                    sw_carrier *dst, const move_plan *p) {
    route_work *w = &s->route;
    route_work_clear(w);
    sw_status st = move_begin(s, t, dst, p);
    if (st)
        return st;
    const sw_transfer_route_decl *r = s->cls->ctx;
    int grad = sw_grad_enabled();
    sw_set_grad_enabled(0);
    void *work = NULL;
    int unsupported = 0;
    char reason[256] = "";
    st = route_prepare(r, &w->request, t, dst, &work, &unsupported, reason,
                       sizeof reason);
    if (!st && unsupported) {
        if (fallback_allowed(t->carrier, dst)) {
            w->active = w->fallback = 1;
            w->route = r;
        } else {
            st = fail_refused(t->carrier, dst, reason);
        }
    } else if (!st) {
        w->active = 1;
        w->route = r;
        w->work = work;
        /* Submitted work may write the destination from now on. */
        s->copied = 1;
        if (SW_UNLIKELY(sw_profile_tls != NULL))
            w->submit_ns = sw_profile_now_ns();
        sw_status sub = route_submit(r, work, &w->completion);
        if (sub) {
            save_error(&w->failure, sub);
            completion_drop(&w->completion);
        }
    }
    sw_set_grad_enabled(grad);
    return st;
}

/*
 * The transfer of work submitted early: the kept submit failure, or the
 * completion's outcome (waited here, with the graph off: on the move
 * executor for an asynchronous move), then finish. A failed wait's host
 * error stays in w for the request.
 */
static sw_status route_collect(route_work *w) {
    sw_status st = SW_OK;
    if (w->failure.status) {
        st = restore_error(&w->failure);
    } else if (w->completion.wait) {
        void *error = NULL;
        st = w->completion.wait(w->completion.ctx, &error);
        if (st && error) {
            w->host_error = error;
            w->drop_error = w->completion.drop_error;
        } else if (error && w->completion.drop_error) {
            w->completion.drop_error(error);
        }
    }
    saved_error e;
    if (st)
        save_error(&e, st);
    completion_drop(&w->completion);
    /* The prepared record stays alive until here. */
    if (w->route->finish)
        w->route->finish(w->route->ctx, w->work);
    w->work = NULL;
    w->route = NULL;
    w->active = 0;
    memset(&w->failure, 0, sizeof w->failure);
    return st ? restore_error(&e) : SW_OK;
}

/* The whole route on the calling thread (a move run by
 * sw_move_op_forward, or a backward pass): prepare, submit, the
 * completion's outcome, finish. */
static sw_status route_inline(const sw_transfer_route_decl *r,
                              sw_tensor *tensor, sw_carrier *destination,
                              int *unsupported, char *reason, size_t size) {
    void *work = NULL;
    sw_transfer_request req;
    sw_status st = route_prepare(r, &req, tensor, destination, &work,
                                 unsupported, reason, size);
    if (st || *unsupported)
        return st;
    sw_transfer_completion c;
    st = route_submit(r, work, &c);
    if (!st && c.wait)
        st = c.wait(c.ctx, NULL);
    saved_error e;
    if (st)
        save_error(&e, st);
    completion_drop(&c);
    if (r->finish)
        r->finish(r->ctx, work);
    return st ? restore_error(&e) : SW_OK;
}

/* A route's move (the copy hook of route classes), with the graph off. A
 * refusal falls back to the elementwise copy where both classes allow
 * it. */
sw_status sw_route_copy(sw_op *op, sw_tensor *tensor, sw_carrier *destination,
                        sw_tensor *output, int64_t element_count) {
    move_state *s = sw_op_state(op);
    const sw_transfer_route_decl *r = s->cls->ctx;
    if (s->route.active && s->route.fallback) {
        s->route.active = s->route.fallback = 0;
        s->route.route = NULL;
        return copy_elementwise(op, tensor, destination, output, element_count);
    }
    int grad = sw_grad_enabled();
    sw_set_grad_enabled(0);
    int unsupported = 0;
    char reason[256] = "";
    sw_status st = s->route.active
                       ? route_collect(&s->route)
                       : route_inline(r, tensor, destination, &unsupported,
                                      reason, sizeof reason);
    sw_set_grad_enabled(grad);
    if (st || !unsupported)
        return st;
    if (fallback_allowed(tensor->carrier, destination))
        return copy_elementwise(op, tensor, destination, output, element_count);
    return fail_refused(tensor->carrier, destination, reason);
}

/* ---------------------------------------------------- asynchronous moves */

struct sw_move_request {
    atomic_int refs;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    atomic_int done;
    /* The terminal outcome (under lock once done): ok, with the result
     * (NULL for work that makes none), or the error. */
    int ok;
    sw_tensor *result;
    saved_error error;
    void *host_error; /* a completion's own error object, or NULL */
    void (*drop_error)(void *error);
    /* The move, kept until it ends. */
    sw_op *op;
    sw_tensor *tensor;
    sw_carrier *destination;
    /* Or work given to the executor (sw_work_submit), with its context. */
    sw_work_fn run;
    void (*drop)(void *ctx);
    void *ctx;
    int record;                   /* the submitter's grad mode */
    sw_profile_move profile;      /* the move.complete event to record */
    struct sw_move_request *next; /* in the executor's queue */
};

/*
 * The move executor: a small fixed pool of threads, started on demand,
 * that completes asynchronous moves in submission order (a built-in bulk
 * route's transfer, or the collection of a route's completion, then the
 * commit). Moves queued or running, and the test gate that holds the
 * queue, are counted under the same lock.
 */
#define EXECUTOR_THREADS 4

static pthread_mutex_t exec_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t exec_cond = PTHREAD_COND_INITIALIZER;
static sw_move_request *queue_head, *queue_tail;
static int exec_threads, exec_idle;
static int64_t workers_running;
static int workers_held;
static pthread_once_t exec_once = PTHREAD_ONCE_INIT;

/* A forked child has none of its parent's threads: it starts afresh
 * (a move the parent had queued is the parent's). */
static void exec_after_fork(void) {
    pthread_mutex_init(&exec_lock, NULL);
    pthread_cond_init(&exec_cond, NULL);
    queue_head = queue_tail = NULL;
    exec_threads = exec_idle = 0;
    workers_running = 0;
}

static void exec_init(void) {
    (void)pthread_atfork(NULL, NULL, exec_after_fork);
}

void sw_debug_move_hold(int hold) {
    pthread_mutex_lock(&exec_lock);
    workers_held = hold != 0;
    pthread_cond_broadcast(&exec_cond);
    pthread_mutex_unlock(&exec_lock);
}

void sw_move_wait_idle(void) {
    pthread_mutex_lock(&exec_lock);
    while (workers_running > 0)
        pthread_cond_wait(&exec_cond, &exec_lock);
    pthread_mutex_unlock(&exec_lock);
}

int64_t sw_move_pending_count(void) {
    pthread_mutex_lock(&exec_lock);
    int64_t n = workers_running;
    pthread_mutex_unlock(&exec_lock);
    return n;
}

static sw_status request_new(sw_move_request **out) {
    sw_move_request *r = sw_malloc(sizeof *r);
    if (!r)
        return sw_oom();
    memset(r, 0, sizeof *r);
    atomic_init(&r->refs, 1);
    atomic_init(&r->done, 0);
    r->profile.nshapes = -1;
    if (pthread_mutex_init(&r->lock, NULL) != 0) {
        sw_free(r);
        return sw_fail(SW_ERUNTIME, "cannot create a move request lock");
    }
    if (pthread_cond_init(&r->cond, NULL) != 0) {
        pthread_mutex_destroy(&r->lock);
        sw_free(r);
        return sw_fail(SW_ERUNTIME, "cannot create a move request lock");
    }
    *out = r;
    return SW_OK;
}

sw_move_request *sw_move_request_retain(sw_move_request *r) {
    if (r)
        atomic_fetch_add(&r->refs, 1);
    return r;
}

void sw_move_request_unref(sw_move_request *r) {
    if (!r || atomic_fetch_sub(&r->refs, 1) != 1)
        return;
    sw_tensor_unref(r->result);
    if (r->host_error && r->drop_error)
        r->drop_error(r->host_error);
    sw_profile_move_drop(&r->profile);
    if (r->drop)
        r->drop(r->ctx);
    sw_op_unref(r->op);
    sw_tensor_unref(r->tensor);
    sw_carrier_unref(r->destination);
    pthread_cond_destroy(&r->cond);
    pthread_mutex_destroy(&r->lock);
    sw_free(r);
}

/* Records the terminal outcome once (st and the calling thread's error,
 * or result) and wakes the waiters. */
static void request_finish(sw_move_request *r, sw_status st, sw_tensor *result,
                           void *host_error, void (*drop_error)(void *)) {
    pthread_mutex_lock(&r->lock);
    if (!atomic_load(&r->done)) {
        if (st) {
            save_error(&r->error, st);
            r->host_error = host_error;
            r->drop_error = drop_error;
            host_error = NULL;
        } else {
            r->ok = 1;
            r->result = result;
        }
        result = NULL;
        atomic_store(&r->done, 1);
        pthread_cond_broadcast(&r->cond);
    }
    pthread_mutex_unlock(&r->lock);
    sw_tensor_unref(result);
    if (host_error && drop_error)
        drop_error(host_error);
}

int sw_move_request_done(const sw_move_request *r) {
    return r && atomic_load(&r->done);
}

void *sw_move_request_host_error(sw_move_request *r) {
    if (!r || !atomic_load(&r->done))
        return NULL;
    pthread_mutex_lock(&r->lock);
    void *e = r->host_error;
    pthread_mutex_unlock(&r->lock);
    return e;
}

sw_status sw_move_request_wait(sw_move_request *r, sw_tensor **out) {
    if (!r)
        return sw_fail(SW_ETYPE, "move request must not be NULL");
    pthread_mutex_lock(&r->lock);
    while (!atomic_load(&r->done))
        pthread_cond_wait(&r->cond, &r->lock);
    sw_tensor *result = r->result;
    int ok = r->ok;
    saved_error e = r->error;
    pthread_mutex_unlock(&r->lock);
    if (!ok)
        return restore_error(&e);
    if (out)
        *out = sw_tensor_retain(result);
    return SW_OK;
}

/* Runs the submitted move r describes on the calling thread, as a
 * recorded forward under the calling thread's grad mode. */
static sw_status request_run(sw_move_request *r, sw_tensor **out) {
    move_state *s = sw_op_state(r->op);
    s->destination = r->destination;
    sw_arg arg = sw_arg_tensor(r->tensor);
    sw_status st = sw_op_forward(r->op, 1, &arg, out);
    s->destination = NULL;
    return st;
}

/*
 * The end of a request, once its transfer has committed (the result
 * published, the source released) or failed: the move's ownership ends,
 * the completion event is recorded, then the outcome. The participants
 * are usable again before the outcome is visible: whoever sees done may
 * write to, release or move them.
 */
static void request_end(sw_move_request *r, sw_status st, sw_tensor *out) {
    move_state *s = sw_op_state(r->op);
    saved_error e;
    if (st)
        save_error(&e, st);
    /* A transfer begun at submission that the forward never reached (it
     * failed before its body ran) is undone here. */
    if (s->begun && st) {
        sw_tensor *none = NULL;
        (void)move_end(s, r->tensor, r->destination, &s->plan, st, &none);
    }
    void *host = s->route.host_error;
    void (*drop)(void *) = s->route.drop_error;
    s->route.host_error = NULL;
    s->route.drop_error = NULL;
    route_work_clear(&s->route);
    s->planned = 0;
    sw_carrier_move_mark(r->tensor->carrier, -1);
    sw_carrier_move_mark(r->destination, -1);
    sw_profile_move_complete(&r->profile, st == SW_OK);
    if (st)
        st = restore_error(&e);
    request_finish(r, st, st ? NULL : out, host, drop);
}

/* Runs submitted work under the submitter's grad mode and records its
 * outcome; the context goes with the request. */
static void work_complete(sw_move_request *r) {
    sw_set_grad_enabled(r->record);
    sw_tensor *out = NULL;
    sw_status st = r->run(r->ctx, &out);
    request_finish(r, st, st ? NULL : out, NULL, NULL);
}

/* The executor's part of a request: the transfer and the commit. */
static void request_complete(sw_move_request *r) {
    if (r->run) {
        work_complete(r);
        return;
    }
    /* This thread runs the transfer now: it may change the destination. */
    sw_carrier_move_worker(r->destination, sw_thread_id());
    sw_set_grad_enabled(r->record);
    sw_tensor *out = NULL;
    sw_status st = request_run(r, &out);
    request_end(r, st, st ? NULL : out);
}

static void *executor_main(void *unused) {
    (void)unused;
    pthread_mutex_lock(&exec_lock);
    for (;;) {
        while (!queue_head || workers_held) {
            ++exec_idle;
            pthread_cond_wait(&exec_cond, &exec_lock);
            --exec_idle;
        }
        sw_move_request *r = queue_head;
        queue_head = r->next;
        if (!queue_head)
            queue_tail = NULL;
        r->next = NULL;
        pthread_mutex_unlock(&exec_lock);
        request_complete(r);
        sw_move_request_unref(r);
        pthread_mutex_lock(&exec_lock);
        if (--workers_running == 0)
            pthread_cond_broadcast(&exec_cond);
    }
    return NULL;
}

/* Queues r (whose reference the queue takes) for the executor, starting
 * a thread when none is idle and the pool is not full. 0 when the
 * executor has no thread and none can start: the caller keeps r. */
static int executor_submit(sw_move_request *r) {
    pthread_once(&exec_once, exec_init);
    pthread_mutex_lock(&exec_lock);
    if (exec_idle == 0 && exec_threads < EXECUTOR_THREADS) {
        pthread_attr_t attr;
        pthread_t thread;
        int ok = pthread_attr_init(&attr) == 0;
        if (ok) {
            pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
            ok = pthread_create(&thread, &attr, executor_main, NULL) == 0;
            pthread_attr_destroy(&attr);
        }
        if (ok)
            ++exec_threads;
    }
    if (exec_threads == 0) {
        pthread_mutex_unlock(&exec_lock);
        return 0;
    }
    r->next = NULL;
    if (queue_tail)
        queue_tail->next = r;
    else
        queue_head = r;
    queue_tail = r;
    ++workers_running;
    pthread_cond_broadcast(&exec_cond);
    pthread_mutex_unlock(&exec_lock);
    return 1;
}

/* Whether a checked move's transfer runs on the executor: a built-in bulk
 * route between the built-in CPU and FileBacked storages, of at least
 * SW_MOVE_ASYNC_MIN_BYTES. Other copies may call back into a host
 * language or are small, and complete at submission. */
static int runs_async(const sw_move_class *cls, sw_tensor *t, sw_carrier *dst,
                      const move_plan *p) {
    sw_carrier *src = t->carrier;
    int pair = (cls == &cpu_to_file_class && sw_carrier_is_cpu(src) &&
                sw_carrier_is_file(dst)) ||
               (cls == &file_to_cpu_class && sw_carrier_is_file(src) &&
                sw_carrier_is_cpu(dst));
    int64_t bytes;
    return pair &&
           sw_mul_ok(p->required, sw_dtype_itemsize(sw_carrier_dtype(src)),
                     &bytes) &&
           bytes >= SW_MOVE_ASYNC_MIN_BYTES;
}

/* The class tag a profiler selects a move's source carrier by. */
static const void *profile_tag(const sw_carrier *c) {
    return c->dispatch_tag ? c->dispatch_tag : (const void *)c->cls;
}

/* sw_move_op_submit; bulk non-zero lets a built-in bulk transfer run on
 * the executor (sw_move, whose caller waits anyway, runs it here). */
static sw_status submit_move(sw_op *op, sw_tensor *tensor,
                             sw_carrier *destination, int bulk,
                             sw_move_request **out) {
    if (!sw_op_is_move(op))
        return sw_fail(SW_ETYPE, "operation must be a MoveOperation");
    move_state *s = sw_op_state(op);
    if (s->planned)
        return sw_fail(SW_ERUNTIME, "this move operation is already running");
    move_plan p;
    sw_status st = move_check(s->cls, tensor, destination, &p);
    if (st)
        return st;
    sw_move_request *r = NULL;
    st = request_new(&r);
    if (st)
        return st;
    r->op = sw_op_retain(op);
    r->tensor = sw_tensor_retain(tensor);
    r->destination = sw_carrier_retain(destination);
    r->record = sw_grad_enabled();
    sw_carrier *src = tensor->carrier;
    sw_profile_frame frame;
    sw_arg args[2];
    move_args(tensor, args);
    int profiled = SW_UNLIKELY(sw_profile_tls != NULL) &&
                   sw_profile_move_begin(op, profile_tag(src), 2, args, &frame);
    s->plan = p;
    s->planned = 1;
    /* The move owns both carriers from now until its outcome, before any
     * provider code runs. */
    sw_carrier_move_mark(src, 1);
    sw_carrier_move_mark(destination, 1);
    sw_carrier_move_worker(destination, sw_thread_id());
    int async;
    if (sw_move_class_is_route(s->cls)) {
        st = route_submit_early(s, tensor, destination, &p);
        if (st) {
            /* Nothing was submitted: no request, and nothing changed. */
            sw_tensor *none = NULL;
            st = move_end(s, tensor, destination, &p, st, &none);
            saved_error e;
            save_error(&e, st);
            route_work_clear(&s->route);
            s->planned = 0;
            sw_carrier_move_mark(src, -1);
            sw_carrier_move_mark(destination, -1);
            if (profiled)
                sw_profile_move_end(&frame, 0, 0, &r->profile);
            sw_move_request_unref(r);
            return restore_error(&e);
        }
        async = s->route.completion.wait != NULL;
    } else {
        async = bulk && runs_async(s->cls, tensor, destination, &p);
    }
    /* The completion covers the transfer from where it may begin: a
     * route's submit, which may start device work, or else the hand-off. */
    if (profiled)
        sw_profile_move_end(
            &frame, 1, sw_move_class_is_route(s->cls) ? s->route.submit_ns : 0,
            &r->profile);
    if (async) {
        /* Handed off: no thread may change the destination until the
         * executor's runs the transfer. */
        sw_carrier_move_worker(destination, 0);
        if (executor_submit(sw_move_request_retain(r))) {
            *out = r;
            return SW_OK;
        }
        /* No thread at all: the move completes here instead. */
        sw_move_request_unref(r);
        sw_carrier_move_worker(destination, sw_thread_id());
    }
    sw_tensor *result = NULL;
    st = request_run(r, &result);
    request_end(r, st, st ? NULL : result);
    /* A completed request keeps nothing but its outcome. */
    sw_op_unref(r->op);
    sw_tensor_unref(r->tensor);
    sw_carrier_unref(r->destination);
    r->op = NULL;
    r->tensor = NULL;
    r->destination = NULL;
    *out = r;
    return SW_OK;
}

sw_status sw_move_op_submit(sw_op *op, sw_tensor *tensor,
                            sw_carrier *destination, sw_move_request **out) {
    return submit_move(op, tensor, destination, 1, out);
}

sw_status sw_work_submit(sw_work_fn run, void (*drop)(void *ctx), void *ctx,
                         int here, sw_move_request **out) {
    if (!run || !out) {
        if (drop)
            drop(ctx);
        return sw_fail(SW_EVALUE, "work must have a function and an output");
    }
    sw_move_request *r = NULL;
    sw_status st = request_new(&r);
    if (st) {
        if (drop)
            drop(ctx);
        return st;
    }
    r->run = run;
    r->drop = drop;
    r->ctx = ctx;
    r->record = sw_grad_enabled();
    if (here) {
        work_complete(r);
    } else if (!executor_submit(sw_move_request_retain(r))) {
        /* No thread at all: the work runs here. */
        sw_move_request_unref(r);
        work_complete(r);
    }
    *out = r;
    return SW_OK;
}

static sw_status move_async(sw_tensor *tensor, sw_carrier *destination,
                            int bulk, sw_move_request **out) {
    if (!tensor)
        return sw_fail(SW_ETYPE, "tensor must be a Tensor");
    sw_op *op = NULL;
    sw_status st = sw_move_op_new(dispatch_pair(tensor, destination), &op);
    if (st)
        return st;
    st = submit_move(op, tensor, destination, bulk, out);
    sw_op_unref(op);
    return st;
}

sw_status sw_move_async(sw_tensor *tensor, sw_carrier *destination,
                        sw_move_request **out) {
    return move_async(tensor, destination, 1, out);
}

sw_status sw_move(sw_tensor *tensor, sw_carrier *destination, sw_tensor **out) {
    sw_move_request *r = NULL;
    sw_status st = move_async(tensor, destination, 0, &r);
    if (st)
        return st;
    st = sw_move_request_wait(r, out);
    sw_move_request_unref(r);
    return st;
}

/* ------------------------------------------------------------ backward */

static sw_status check_cotangent(const sw_tensor *g, const sw_tensor *source) {
    if (!g)
        return sw_fail(SW_ETYPE, "gradient must be a Tensor");
    if (sw_carrier_is_released(g->carrier))
        return sw_fail(SW_ERUNTIME, "gradient carrier is released");
    if (!sw_tree_equal(g->layout->shape, source->layout->shape))
        return sw_fail(SW_EVALUE,
                       "gradient shape must match the moved tensor's shape");
    int injective = 0;
    sw_status st = sw_layout_is_injective(g->layout, &injective);
    if (st)
        return st;
    if (!injective)
        return sw_fail(SW_EVALUE,
                       "move backward requires an injective gradient Layout");
    return SW_OK;
}

/* The source layout when injective, else the compact column-major layout
 * of its shape (an owned reference). */
static sw_status gradient_layout(sw_layout *source, sw_layout **out) {
    int injective = 0;
    sw_status st = sw_layout_is_injective(source, &injective);
    if (st)
        return st;
    if (injective) {
        *out = sw_layout_retain(source);
        return SW_OK;
    }
    sw_lb b;
    sw_lb_init(&b);
    sw_lb_view(&b, sw_lview_of(source));
    return sw_lb_finish_compact(&b, out);
}

static sw_status move_backward(sw_op *op, sw_tensor *gradient, int32_t n,
                               sw_tensor **grads) {
    move_state *s = sw_op_state(op);
    sw_tensor *source = sw_op_input(op, 0);
    if (n < 1 || !source)
        return sw_fail(SW_ERUNTIME, "move backward has no saved input");
    sw_status st = check_cotangent(gradient, source);
    if (st)
        return st;
    sw_layout *layout = NULL;
    sw_carrier *fresh = NULL;
    sw_tensor *r = NULL;
    sw_op *route = NULL;
    st = gradient_layout(source->layout, &layout);
    if (!st)
        st = sw_carrier_allocate_like(source->carrier, layout->cosize, 1,
                                      SW_DTYPE_COUNT, 0, &fresh);
    if (!st)
        st = sw_tensor_new(fresh, 0, layout, &r);
    /* The captured route fits a gradient shaped like the forward's
     * result; any other gradient is copied element by element. */
    const sw_move_class *cls = &elementwise_class;
    if (!st && s->reverse &&
        sw_move_key_of(gradient->carrier).id == s->destination_key &&
        sw_layout_equal(gradient->layout, layout))
        cls = s->reverse;
    if (!st)
        st = sw_move_op_new(cls, &route);
    if (!st)
        st = cls->copy(route, gradient, fresh, r, layout->cosize);
    sw_op_unref(route);
    sw_layout_unref(layout);
    if (!st)
        restore_version(fresh, 0);
    sw_carrier_unref(fresh);
    if (st) {
        sw_tensor_unref(r);
        return st;
    }
    grads[0] = r;
    return SW_OK;
}
