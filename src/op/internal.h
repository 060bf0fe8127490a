/* The operation structure, shared by dispatch, the engine and backends. */
#ifndef SW_OP_INTERNAL_H
#define SW_OP_INTERNAL_H

#include "base/internal.h"
#include "strideweave/op.h"

struct sw_op {
    sw_object obj;
    const sw_op_class *cls;
    void *state;
    char *dispatch_name;
    const void *dispatch_tag;
    sw_tensor **inputs;
    int64_t *versions;
    int32_t ninputs;
};

#endif /* SW_OP_INTERNAL_H */
