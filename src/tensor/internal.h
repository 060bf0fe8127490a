/* The tensor structure, shared with the autograd engine. */
#ifndef SW_TENSOR_INTERNAL_H
#define SW_TENSOR_INTERNAL_H

#include "base/internal.h"
#include "strideweave/op.h"
#include "strideweave/representation.h"
#include "strideweave/tensor.h"

/*
 * Subtensor k >= 1 of a multi-subtensor tensor, with adjacent layout k - 1
 * (from level k - 1 into level k). All counted.
 */
typedef struct sw_plane {
    sw_carrier *carrier;
    sw_layout *placement;
    sw_layout *adjacent_in;
    int64_t offset;
} sw_plane;

/* The part of a representation beyond subtensor 0 (one allocation). */
typedef struct sw_planes {
    const sw_schema *dtype; /* counted: the compound logical dtype */
    int32_t n;              /* subtensors, >= 2 */
    sw_plane plane[];       /* subtensors 1 .. n - 1 */
} sw_planes;

struct sw_tensor {
    sw_object obj;
    /* Subtensor 0, the primary one, which every tensor has. */
    sw_carrier *carrier;
    sw_layout *layout;
    int64_t offset;
    /* NULL for one subtensor, the common case: nothing else to read. */
    sw_planes *planes;
    /* Autograd: the producing operation, the accumulated gradient. */
    sw_op *ctx;
    sw_tensor *grad;
    int retain_grad;
    /* A constant for autograd (sw_tensor_set_requires_grad(t, 0)): not
     * differentiable whatever its dtype. */
    int constant;
    /* Gradient hooks (sw_tensor_add_grad_hook), changed and run under
     * t's gradient lock; NULL for none. */
    struct sw_grad_hook *hooks;
    /* The tensor lives in its carrier's block (the room of
     * sw_carrier_offer_tensor_room) and goes with the carrier, not by
     * itself. */
    int in_carrier;
};

/* The bytes of a carrier's room for its first tensor. */
#define SW_TENSOR_ROOM sizeof(struct sw_tensor)

/* Frees t's gradient hooks (tensor destruction). */
void sw_grad_hooks_free(sw_tensor *t);

/* The gate of sw_tensor_require_single, with the common case inline. */
sw_status sw_tensor_refuse_multi(const sw_tensor *t, sw_entry entry);
static inline sw_status sw_tensor_single(const sw_tensor *t, sw_entry entry) {
    return t && t->planes ? sw_tensor_refuse_multi(t, entry) : SW_OK;
}

/* The gate over every tensor argument of a call. */
sw_status sw_args_single(int32_t nargs, const sw_arg *args, sw_entry entry);

/* Frees a tensor's planes (NULL accepted). */
void sw_planes_free(sw_planes *p);

/*
 * The view of multi-subtensor tensor t whose subtensor 0 has the given
 * offset and placement and whose adjacent layout 0 is adjacent: the later
 * planes are shared. No autograd context. Errors as sw_tensor_new.
 */
sw_status sw_tensor_new_view_multi(const sw_tensor *t, int64_t offset,
                                   sw_layout *placement, sw_layout *adjacent,
                                   sw_tensor **out);

#endif /* SW_TENSOR_INTERNAL_H */
