/* The tensor structure, shared with the autograd engine. */
#ifndef SW_TENSOR_INTERNAL_H
#define SW_TENSOR_INTERNAL_H

#include "base/internal.h"
#include "strideweave/op.h"
#include "strideweave/tensor.h"

struct sw_tensor {
    sw_object obj;
    sw_carrier *carrier;
    sw_layout *layout;
    int64_t offset;
    /* Autograd: the producing operation, the accumulated gradient. */
    sw_op *ctx;
    sw_tensor *grad;
    int retain_grad;
    /* The tensor lives in its carrier's block (sw_tensor_new_in) and goes
     * with the carrier, not by itself. */
    int in_carrier;
};

/*
 * sw_tensor_new with the tensor placed in mem, sizeof(sw_tensor) bytes
 * aligned for any member inside carrier's own allocation (the spare room
 * of sw_cpu_new_fresh): one allocation fewer for a fresh result. The
 * memory is carrier's, which the tensor holds, so it outlives the tensor;
 * when the tensor goes, the block goes with the carrier's last reference.
 * Errors as sw_tensor_new.
 */
sw_status sw_tensor_new_in(void *mem, sw_carrier *carrier, int64_t offset,
                           sw_layout *layout, sw_tensor **out);

#endif /* SW_TENSOR_INTERNAL_H */
