/*
 * Softmax, log-softmax and cross-entropy over the classes of CPU Float32
 * tensors: the forward values and the vector-Jacobian products, each one
 * pass per row in double precision, numerically stable (the row's maximum
 * is subtracted before exp). The autograd records live with the caller
 * (the Python package wraps them as operations); these are the kernels.
 *
 * A "row tensor" has one or two top-level modes, each a leaf (a flat
 * mode), any strides: a one-mode tensor is one row of classes, a two-mode
 * tensor has rows along mode 0 and classes along mode 1. Anything else is
 * SW_EVALUE "softmax needs a tensor of one or two flat modes"; a carrier
 * other than CPU Float32 is SW_ETYPE; a released one is the base's
 * RuntimeError. Results are fresh CPU carriers the caller owns.
 */
#ifndef STRIDEWEAVE_SOFTMAX_H
#define STRIDEWEAVE_SOFTMAX_H

#include "strideweave/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * softmax (log_ zero) or log_softmax (log_ non-zero) of every row of x.
 * The result has x's layout when that layout is injective (holes kept),
 * else the compact row-major layout of x's shape. A row holding +inf or
 * NaN, or only -inf, gives NaN, as in IEEE arithmetic.
 */
SW_API sw_status sw_softmax(const sw_tensor *x, int log_, sw_tensor **out);

/*
 * The gradient with respect to x of sum(g * softmax(x)) (or of
 * log_softmax): g is a row tensor of x's shape (any layout). The result has
 * x's layout over fresh zeroed storage of cosize(x.layout); where x's
 * layout maps several elements to one index, their gradients add up.
 */
SW_API sw_status sw_softmax_backward(const sw_tensor *x, const sw_tensor *g,
                                     int log_, sw_tensor **out);

/* How sw_cross_entropy combines the rows' losses. */
typedef enum sw_reduction {
    SW_REDUCE_MEAN = 0,
    SW_REDUCE_SUM = 1
} sw_reduction;

/*
 * The cross-entropy of logits (a two-mode row tensor, N rows of C
 * classes) against target, as a 1:1 tensor. target is either N class
 * indices (any layout of size N, read in logical order; CPU Float32 holding
 * integers, or CPU Int32), or class probabilities of logits' shape (CPU
 * Float32, a two-mode row tensor): row i's loss is logsumexp(x_i) - x_i[t_i]
 * or sum_j t_ij * (logsumexp(x_i) - x_ij). The losses are averaged over the
 * rows (SW_REDUCE_MEAN) or added (SW_REDUCE_SUM). Errors: SW_EVALUE for a
 * target of another size ("cross_entropy target must hold one class index
 * per row or match the logits' shape"), for an index that is not an
 * integer; SW_EINDEX "cross_entropy target K is outside [0, C)".
 */
SW_API sw_status sw_cross_entropy(const sw_tensor *logits,
                                  const sw_tensor *target,
                                  sw_reduction reduction, sw_tensor **out);

/*
 * The gradient of sw_cross_entropy with respect to logits, scaled by the
 * single element of g (the upstream gradient of the loss, any one-element
 * CPU Float32 tensor): in logits' layout over fresh storage, as
 * sw_softmax_backward's. Same checks as sw_cross_entropy.
 */
SW_API sw_status sw_cross_entropy_backward(const sw_tensor *logits,
                                           const sw_tensor *target,
                                           sw_reduction reduction,
                                           const sw_tensor *g, sw_tensor **out);

#ifdef __cplusplus
}
#endif

#endif /* STRIDEWEAVE_SOFTMAX_H */
