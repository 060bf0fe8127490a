/*
 * StrideWeave tensors: a carrier, an offset and a layout.
 *
 * A tensor views offset + layout(i) of its carrier for every logical index
 * i. Several tensors (views) may share one carrier with different offsets
 * and layouts; all of them see the carrier's one version counter.
 *
 * Ownership: sw_tensor is reference-counted (sw_tensor_retain and
 * sw_tensor_unref); a tensor holds counted references to its carrier and
 * its layout. Getters return borrowed references.
 */
#ifndef STRIDEWEAVE_TENSOR_H
#define STRIDEWEAVE_TENSOR_H

#include "strideweave/carrier.h"
#include "strideweave/layout.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Makes a tensor. SW_EVALUE "Tensor offset must be non-negative", or
 * "Tensor storage exceeds carrier size" unless offset + cosize(layout) fits
 * in the carrier (cosize, not size: the layout may have holes).
 */
SW_API sw_status sw_tensor_new(sw_carrier *carrier, int64_t offset,
                               sw_layout *layout, sw_tensor **out);

SW_API sw_tensor *sw_tensor_retain(sw_tensor *t);
SW_API void sw_tensor_unref(sw_tensor *t);

/* Binding support: see sw_peer_hooks in base.h. */
SW_API void sw_tensor_set_peer(sw_tensor *t, void *peer,
                               const sw_peer_hooks *hooks);
SW_API void *sw_tensor_get_peer(const sw_tensor *t);
/* The number of references to t now, its peer's included (a snapshot;
 * see base.h). */
SW_API int64_t sw_tensor_refcount(const sw_tensor *t);

SW_API sw_carrier *sw_tensor_carrier(const sw_tensor *t);
SW_API sw_layout *sw_tensor_layout(const sw_tensor *t);
SW_API int64_t sw_tensor_offset(const sw_tensor *t);
/* The logical element count: size(layout). */
SW_API int64_t sw_tensor_size(const sw_tensor *t);
SW_API sw_dtype sw_tensor_dtype(const sw_tensor *t);
SW_API int64_t sw_tensor_version(const sw_tensor *t);
SW_API int sw_tensor_is_mutable(const sw_tensor *t);
SW_API int sw_tensor_is_differentiable(const sw_tensor *t);

/*
 * Element access by logical index or by coordinate (a recipe and its leaf
 * values, with sw_layout_index_coord's rules). Layout errors come first,
 * then the carrier's (released, not mutable, conversion).
 */
SW_API sw_status sw_tensor_get(const sw_tensor *t, int64_t i, sw_value *out);
SW_API sw_status sw_tensor_get_coord(const sw_tensor *t, int32_t ntok,
                                     const int32_t *recipe,
                                     const int64_t *values, sw_value *out);
SW_API sw_status sw_tensor_set(sw_tensor *t, int64_t i, const sw_value *v);
SW_API sw_status sw_tensor_set_coord(sw_tensor *t, int32_t ntok,
                                     const int32_t *recipe,
                                     const int64_t *values, const sw_value *v);

/*
 * Scatters src into carrier c: for every logical i, element
 * onto.offset + mapping_offset + mapping(i) of c becomes src[i]. onto must
 * be backed by c, and mapping must have src's shape. Checks: c mutable
 * (RuntimeError), onto's carrier is c (ValueError), mapping shape
 * (ValueError), mapping_offset >= 0 (ValueError), the mapped range inside
 * c (ValueError), released carriers (RuntimeError). Between two CPU
 * carriers the copy is one bulk pass and bumps c's version once; otherwise
 * every element is written through sw_carrier_set (one bump each).
 */
SW_API sw_status sw_carrier_scatter(sw_carrier *c, const sw_tensor *src,
                                    const sw_tensor *onto,
                                    const sw_layout *mapping,
                                    int64_t mapping_offset);

/*
 * In place: y[i] = y[i] + alpha * x[i] for every logical i, computed in
 * double precision and rounded once to float32 (a gradient-descent step is
 * sw_tensor_axpy(param, -lr, grad)). Both tensors are CPU Float32 with equal
 * shapes; their strides and offsets may differ. Bumps y's version once, like
 * any write, so graphs that saved y can no longer run backward. Errors,
 * checked before anything is written: SW_ETYPE "axpy needs two tensors",
 * "axpy needs CPU tensors", "axpy needs Float32 tensors"; SW_EVALUE "axpy
 * operands must have the same shape"; SW_ERUNTIME "Carrier is released",
 * "Carrier is not mutable". On
 * a thread that watches for interrupts (sw_interrupt_watch), a raised
 * request stops the step between chunks with SW_EINTERRUPTED: y is then
 * partly updated and its version is bumped all the same.
 */
SW_API sw_status sw_tensor_axpy(sw_tensor *y, double alpha, const sw_tensor *x);

/* The hyper-parameters of one Adam step; step counts from 1. */
typedef struct sw_adam {
    double lr;           /* > 0 */
    double beta1, beta2; /* in [0, 1) */
    double eps;          /* >= 0 */
    double weight_decay; /* >= 0: added to the gradient as decay * param */
    int64_t step;        /* the number of this step, >= 1 */
} sw_adam;

/*
 * One Adam step (Kingma and Ba, with bias correction, as PyTorch's Adam
 * without amsgrad) in place, for every logical element i:
 *   g' = grad[i] + weight_decay * param[i]
 *   m[i] = beta1 * m[i] + (1 - beta1) * g'
 *   v[i] = beta2 * v[i] + (1 - beta2) * g'^2
 *   param[i] -= lr * (m[i] / (1 - beta1^step))
 *               / (sqrt(v[i] / (1 - beta2^step)) + eps)
 * computed in double and rounded once per stored value. The four tensors
 * are CPU Float32 of one shape (strides and offsets may differ); m and v
 * are the optimizer's state (zero before the first step). The versions of
 * param, m and v rise once. Errors, before anything is written: SW_ETYPE
 * "adam needs CPU tensors", "adam needs Float32 tensors"; SW_EVALUE "adam
 * operands must have the parameter's shape", "adam: lr must be positive",
 * "adam: betas must be in [0, 1)", "adam: eps and weight_decay must be
 * non-negative", "adam: the step count starts at 1"; SW_ERUNTIME "Carrier
 * is released", "Carrier is not mutable". An interrupt request
 * (sw_interrupt_watch) stops it between chunks with SW_EINTERRUPTED,
 * param, m and v partly updated and their versions bumped.
 */
SW_API sw_status sw_tensor_adam_step(sw_tensor *param, const sw_tensor *grad,
                                     sw_tensor *m, sw_tensor *v,
                                     const sw_adam *h);

#ifdef __cplusplus
}
#endif

#endif /* STRIDEWEAVE_TENSOR_H */
