/*
 * CPU kernels for Float32 and Int32 (and Bool, for copies): the loops that
 * native CPU operations run. Internal to the library.
 *
 * A kernel receives its operands as sw_karg values: a typed storage
 * pointer, an element offset and a layout. It asks the plan builder
 * (layout/plan.h) for a joint walk of all operand layouts and runs one
 * strided inner loop per innermost run; it never expands a layout into an
 * index list and allocates nothing per element (GEMM allocates its packing
 * buffers once per call, sized by its block sizes). Files, one per op
 * family: elementwise.c, activation.c, reduce.c, matmul.c, copy.c.
 *
 * Every kernel has a portable reference path (plain loops over the plan,
 * any strides) and fast paths: a contiguous branch taken when the
 * innermost mode has stride 1 for every operand, written so that the
 * compiler vectorises it, and for GEMM a micro-kernel chosen at run time
 * for the CPU. Building with -Dreference_kernels=true defines
 * SW_REFERENCE_KERNELS and leaves only the reference paths; both builds
 * must give results within the tests' tolerances.
 *
 * Common rules:
 * - @pre every operand's storage holds offset + cosize(layout) elements of
 *   its dtype; inputs are not written. An output may be the same storage
 *   as an input with the same offset and layout (in place); any other
 *   overlap gives unspecified results.
 * - Errors: SW_EVALUE for operands of the wrong size or rank, SW_ETYPE for
 *   a dtype the kernel does not take, SW_EOVERFLOW for Int32 results out
 *   of range ('CPU Int32 operation result is out of int32 range') and for
 *   Int32 sums that leave the int32 range ('CPU integer accumulation
 *   overflowed'), SW_ENOMEM for GEMM's packing buffers. On an error the
 *   output's contents are unspecified (operations write into fresh
 *   carriers, so nothing half-changed is visible to a user).
 * - Broadcasts: a mode along which every operand of a kernel has stride 0
 *   is walked once (layout/plan.h, repeats): elementwise, activation, copy
 *   and fill kernels write the same values either way; sums and GEMM
 *   multiply by the mode's extent instead of adding it up, so work is
 *   bounded by the distinct elements, not the logical size (2**62 for
 *   Shape(2**62):Stride(0)).
 * - Float32 math is done in float; the transcendental activations come
 *   from vmath.h (the same bits on every path and layout, within the ULP
 *   bounds stated there). Int32 inputs of Float32 kernels are read as
 *   float.
 * - Kernels are reentrant and thread-safe; they touch no global state
 *   except the error message of the calling thread and the thread pool
 *   (base/pool.h): large walks run in chunks over it (kcommon.h,
 *   threads), with results bit-identical for every thread count, and a
 *   failure or interrupt in any chunk fails the call on the calling
 *   thread with that chunk's status and message.
 */
#ifndef SW_OP_KERNELS_H
#define SW_OP_KERNELS_H

#include "base/internal.h"
#include "layout/plan.h"
#include "strideweave/carrier.h"

/*
 * An operand: data points at element 0 of the storage (float for
 * SW_DTYPE_FLOAT32, int32_t for SW_DTYPE_INT32, uint8_t 0/1 for
 * SW_DTYPE_BOOL); element i of the operand is data[offset + layout(i)].
 * All borrowed.
 */
typedef struct sw_karg {
    void *data;
    sw_dtype dtype;
    int64_t offset;
    const sw_layout *layout;
} sw_karg;

/* ------------------------------------------------------- elementwise.c */

/*
 * Elementwise arithmetic. The inputs in[0..arity) all have out's size
 * (the operations above require equal layouts, but any layouts of equal
 * size work). s is the scalar of the scalar forms.
 */
typedef enum sw_kelem {
    SW_KELEM_ADD = 0,          /* in0 + in1 */
    SW_KELEM_SUB = 1,          /* in0 - in1 */
    SW_KELEM_MUL = 2,          /* in0 * in1 */
    SW_KELEM_DIV = 3,          /* in0 / in1 (Float32 only) */
    SW_KELEM_NEG = 4,          /* -in0 */
    SW_KELEM_MUL_SCALAR = 5,   /* in0 * s */
    SW_KELEM_POW_SCALAR = 6,   /* in0 ** s (Float32: exponents 0, 1, 2, 3,
                                  0.5 and -1 by the fixed expressions of
                                  elementwise.c, others by powf) */
    SW_KELEM_POW_GRAD = 7,     /* in0 * s * in1**(s-1), 0 when s == 0; the
                                  backward of pow with g = in0, x = in1
                                  (Float32 only) */
    SW_KELEM_DIV_GRAD_RHS = 8, /* -in0 * in1 / (in2*in2): the rhs gradient
                                  of div with g, lhs, rhs (Float32 only) */
    SW_KELEM_COUNT = 9
} sw_kelem;

/* The number of inputs an elementwise op takes (1 to 3). */
int32_t sw_kelem_arity(sw_kelem op);

/*
 * The scalar of the scalar forms. A Float32 output uses f (rounded to
 * float, as the reference carries scalars as float32). An Int32 output
 * uses i: the factor of MUL_SCALAR, the exponent (>= 0) of POW_SCALAR.
 */
typedef struct sw_kscalar {
    double f;
    int64_t i;
} sw_kscalar;

/*
 * out = op(in...). A Float32 out takes Float32 or Int32 inputs (read as
 * float). An Int32 out takes Int32 inputs for ADD, SUB, MUL, NEG,
 * MUL_SCALAR and POW_SCALAR, computes exactly and fails with SW_EOVERFLOW
 * when a result leaves the int32 range; POW_SCALAR multiplies step by step
 * and checks every step (3**40 fails, and so does any exponent that makes
 * the result too large; |x| <= 1 never overflows).
 */
sw_status sw_kernel_elementwise(sw_kelem op, sw_karg out, const sw_karg *in,
                                sw_kscalar s);

/* -------------------------------------------------------- activation.c */

typedef enum sw_kact {
    SW_KACT_EXP = 0,
    SW_KACT_RELU = 1,
    SW_KACT_SIGMOID = 2,
    SW_KACT_TANH = 3,
    SW_KACT_GELU = 4,       /* 0.5*x*(1+erf(x/sqrt 2)) */
    SW_KACT_SILU = 5,       /* x*sigmoid(x) */
    SW_KACT_SOFTPLUS = 6,   /* log1p(exp(-|x|)) + max(x, 0) */
    SW_KACT_ELU = 7,        /* x if x > 0 else expm1(x) (alpha 1) */
    SW_KACT_LEAKY_RELU = 8, /* x if x >= 0 else 0.01*x */
    SW_KACT_COUNT = 9
} sw_kact;

/*
 * out = f(x), python-api.md §12.4. out Float32 with x Float32 or Int32;
 * or, for RELU only, out and x Int32 (exact: max(0, x)). Sigmoid is
 * computed as 1/(1+e^-x) for x >= 0 and e^x/(1+e^x) otherwise.
 */
sw_status sw_kernel_activation(sw_kact op, sw_karg out, sw_karg x);

/*
 * out = g * f'(x), python-api.md §4.6; all Float32. y, when not NULL, is
 * the forward result f(x); EXP, SIGMOID and TANH then use it instead of
 * recomputing it (the values are the same either way). Other ops ignore it.
 */
sw_status sw_kernel_activation_backward(sw_kact op, sw_karg out, sw_karg g,
                                        sw_karg x, const sw_karg *y);

/* ------------------------------------------------------------ reduce.c */

/*
 * out[i] = sum over j of x[i, j], where x has exactly two top-level modes
 * (i runs over mode 0's logical indices, j over mode 1's) and out has
 * size(mode 0) elements in any layout. Float32 -> Float32 (float
 * accumulation, in an order chosen for x's memory layout) or Int32 ->
 * Int32 (each sum accumulated exactly in int64 along j; a sum outside the
 * int32 range fails with SW_EOVERFLOW 'CPU integer accumulation
 * overflowed'). SW_EVALUE if x is not two-mode or the sizes disagree.
 */
sw_status sw_kernel_reduce_sum(sw_karg out, sw_karg x);

/* The backward of reduce_sum: out[i, j] = g[i] for every j (Float32). */
sw_status sw_kernel_reduce_sum_backward(sw_karg out, sw_karg g);

/* ------------------------------------------------------------ matmul.c */

/*
 * A matrix operand of GEMM: which top-level modes of arg.layout are its
 * rows, its columns and (or -1) its batch. A mode may be hierarchical.
 */
typedef struct sw_kmat {
    sw_karg arg;
    int32_t row_mode;
    int32_t col_mode;
    int32_t batch_mode;
} sw_kmat;

/* Rows mode 0, columns mode 1, batch mode 2 if the layout has 3 modes. */
sw_kmat sw_kmat_of(sw_karg arg);

/*
 * C[i, j] = sum over k of A[i, k] * B[j, k] for every batch index
 * (matmul contracts the second mode of both operands; its backward is the
 * same kernel with modes swapped: dA = G.B with B's rows and columns
 * exchanged). Shapes: A is M x K, B is N x K, C is M x N; either all three
 * have a batch mode of one size or none has. Float32 C takes Float32 or
 * Int32 A and B and accumulates in float through a blocked, packed
 * algorithm; Int32 C takes Int32 A and B and accumulates each entry
 * exactly in int64 ('CPU integer accumulation overflowed' when it leaves
 * the int32 range). C must not overlap A or B. Errors:
 * SW_EVALUE for a bad mode index or mismatched extents, SW_ETYPE for
 * dtypes, SW_ENOMEM if the packing buffers cannot be allocated.
 */
sw_status sw_kernel_gemm(sw_kmat c, sw_kmat a, sw_kmat b);

/*
 * Which micro-kernel the Float32 GEMM uses on this machine: "reference"
 * (portable C), "avx2-fma" or "avx512". For benchmarks and tests.
 */
const char *sw_kernel_gemm_variant(void);
/* Tests: runs GEMM with the named micro-kernel ("avx512", "avx2-fma",
 * "reference"; NULL: the best the CPU runs again). -1 if the CPU cannot
 * run it. Process-wide; not for concurrent use. */
int sw_kernel_gemm_force(const char *name);

/* -------------------------------------------------------------- copy.c */

/*
 * dst[i] = src[i] for every logical index, converting between Float32,
 * Int32 and Bool: to Bool, nonzero (and NaN) is 1; from Bool, 0 or 1;
 * Float32 to Int32 truncates toward zero and fails with SW_EOVERFLOW
 * ('CPU Int32 operation result is out of int32 range') for NaN or values
 * outside the int32 range. The layouts may be any two of equal size,
 * including pairs without a common refinement.
 */
sw_status sw_kernel_copy(sw_karg dst, sw_karg src);

/*
 * dst[i] = value for every logical index (holes are not touched). The
 * double is rounded to float for Float32, truncated toward zero for Int32
 * (SW_EOVERFLOW for NaN or a value outside the int32 range) and tested
 * against 0 for Bool.
 */
sw_status sw_kernel_fill(sw_karg dst, double value);

#endif /* SW_OP_KERNELS_H */
