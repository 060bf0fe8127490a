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
};

#endif /* SW_TENSOR_INTERNAL_H */
