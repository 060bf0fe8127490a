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

/* Dispatches name on t's carrier and runs a recorded forward. */
sw_status sw_dispatch_forward(sw_tensor *t, const char *name, int32_t nargs,
                              const sw_arg *args, sw_tensor **out);

/* A fresh CPU operation for a canonical name, or SW_ENOTIMPL. */
sw_status sw_cpu_op_new(const char *name, sw_op **out);

/* A fresh Generic operation for a canonical name, or SW_ENOTIMPL. */
sw_status sw_generic_op_new(const char *name, sw_op **out);

#endif /* SW_OP_INTERNAL_H */
