/*
 * Iteration plans: how a kernel walks several layouts of the same size at
 * once (DESIGN.md principle 2, STYLE.md habit 7).
 *
 * A kernel over nops operands (operand 0 is the output) must visit every
 * logical index i of the common domain [0, size) exactly once and, for each
 * operand k, touch the physical index offsets[k] + layouts[k](i). A plan
 * is that visit compiled into at most SW_PLAN_MAX_DIMS nested loop modes:
 * mode 0 is the innermost (fastest), and mode d has one extent and, for
 * each operand, one stride. Kernels never see hierarchical layouts; they
 * supply one strided inner-loop function (sw_plan_loop) that runs along
 * mode 0, and sw_plan_run calls it once per innermost run.
 *
 * Construction (sw_plan_build):
 *   (a) Refine. Every operand's flattened leaves (first leaf fastest) cut
 *       the domain at its prefix products 1, e0, e0*e1, ..., size. The
 *       union of these cuts must form a divisibility chain; then every
 *       leaf (e, d) that contains a foreign cut b splits into (b/P, d) and
 *       (e*P/b, d*b/P), where P is the leaf's own first cut, and all
 *       operands end up with the same extents. If the chain breaks (for
 *       example (2,3) against (3,2): cuts 2 and 3, and 2 does not divide
 *       3), there is no common refinement and the build fails with
 *       SW_ENOTIMPL.
 *   (b) Drop extent-1 modes (before refining, so they never cut).
 *   (c) Reorder (legal because every element is independent): a mode in
 *       which every operand has stride 1 goes innermost; otherwise modes
 *       are ordered by operand 0's stride, smallest first, with stride 0
 *       counting as the largest, ties broken by operand 1's stride, and so
 *       on, and remaining ties keep the logical order (the sort is stable).
 *   (d) Merge neighbours d, d+1 where, for every operand,
 *       stride[k][d+1] == extent[d] * stride[k][d].
 *   More than SW_PLAN_MAX_DIMS modes after merging fails with SW_ENOTIMPL.
 *   A plan always has at least one mode: a domain of one element gives
 *   ndim 1, extent 1 and stride 0.
 *
 * Worked example. Output (4,6):(1,4) (compact) and input (4,6):(6,1) (its
 * transpose, read through a view):
 *   (a) cuts {1,4,24} for both: no split. Modes: 4 with strides (1; 6),
 *       6 with strides (4; 1).
 *   (c) no mode is stride 1 for everyone; output strides 1 < 4 keep the
 *       order.
 *   (d) the output alone could merge (4 == 4*1), the input cannot
 *       (1 != 4*6), so nothing merges.
 *   Plan: ndim 2, extent {4, 6}, stride[0] = {1, 4}, stride[1] = {6, 1}.
 * With a tiled layout ((2,2),(2,2)):((1,4),(2,8)) for both operands, (c)
 * sorts the leaves to strides 1,2,4,8 and (d) merges them into one mode:
 * ndim 1, extent {16}, strides {1} and {1}, so the kernel runs one
 * contiguous loop. With output 6:1 and input (2,3):(3,1), (a) splits the
 * output at cut 2 into (2,3):(1,2), (c) keeps the order and (d) cannot
 * merge (the input has 1 != 2*3): extent {2, 3}, strides {1, 2} and {3, 1}.
 *
 * The unrefinable case. Elementwise operations in this library require
 * equal layouts, which always refine; copies between unrelated layouts
 * (permute and rearrange backward, scatter) can meet operands without a
 * common refinement, and any layout can have more than SW_PLAN_MAX_DIMS
 * leaves that never merge. For those, sw_plan_run_leaves walks the
 * logical order directly: each operand keeps its own odometer over its
 * leaves, and the loop function gets the longest run along which every
 * operand is still inside its innermost leaf (a carry per run, no
 * per-element work, no allocation, but no reordering either).
 * sw_plan_iterate builds a plan and falls back to this walk when the build
 * says SW_ENOTIMPL, so kernels need not care.
 *
 * Repeats. A refined mode in which every operand has stride 0 (a
 * broadcast that all operands share, as when an elementwise kernel runs
 * over the layout Shape(2**62):Stride(0) of its input and its result)
 * makes the walk visit the same tuple of physical elements again and
 * again. sw_plan_drop_repeats removes such modes and says how many visits
 * each remaining one stands for; sw_plan_iterate does so when the loop
 * asks with SW_PLAN_SKIP_REPEATS. This is valid only for loops whose
 * visit is idempotent: it writes the output from the inputs of the same
 * visit alone (assignments, such as elementwise arithmetic, activations
 * and copies), never accumulates into it. Then dropping changes nothing:
 * each visit of a repeated tuple reads the same inputs and writes the same
 * values to the same places. It holds whatever the operands' offsets are
 * (the tuple, not the index, repeats), and it never drops a mode in which
 * only the output has stride 0 (there the inputs differ from visit to
 * visit and the last one wins). Accumulating loops (sums, dot products)
 * drop the modes themselves and scale by the repeat count.
 *
 * Interrupts. Both walks hand runs of at most SW_PLAN_CHUNK elements to
 * the loop and check for an interrupt request (base/internal.h) before
 * the first run and again after every SW_INTERRUPT_EVERY elements; a walk
 * that sees one returns SW_EINTERRUPTED without running further.
 *
 * Everything here is allocation-free: a plan is a fixed-size struct, and
 * the walks keep their counters on the stack.
 */
#ifndef SW_LAYOUT_PLAN_H
#define SW_LAYOUT_PLAN_H

#include "layout/internal.h"

#define SW_PLAN_MAX_OPS 4
#define SW_PLAN_MAX_DIMS 16

/*
 * An upper bound on the leaves of extent > 1 of any layout (each has
 * extent >= 2 and the size fits int64_t, so there are at most 62), and so
 * on the modes of a refinement. Fixed-size scratch uses it.
 */
#define SW_PLAN_MAX_LEAVES 64

typedef struct sw_plan {
    int32_t nops, ndim;
    int64_t size;
    int64_t extent[SW_PLAN_MAX_DIMS];
    int64_t stride[SW_PLAN_MAX_OPS][SW_PLAN_MAX_DIMS];
    int64_t offset[SW_PLAN_MAX_OPS];
} sw_plan;

/*
 * One operand as a flat list of leaves (borrowed arrays), first leaf
 * fastest. A layout's leaves, or the leaves of one of its top-level modes,
 * are obtained with sw_plan_leaves_of and sw_plan_leaves_mode; kernels may
 * also describe broadcast operands by appending stride-0 leaves.
 */
typedef struct sw_plan_leaves {
    int32_t nleaf;
    const int64_t *extent;
    const int64_t *stride;
} sw_plan_leaves;

/* The leaves of a whole layout. */
sw_plan_leaves sw_plan_leaves_of(const sw_layout *layout);
/* The leaves of top-level mode m (0 <= m < rank). */
sw_plan_leaves sw_plan_leaves_mode(const sw_layout *layout, int32_t m);
/* The product of the extents. */
int64_t sw_plan_leaves_size(sw_plan_leaves ops);

/*
 * Builds the plan of nops layouts (1 <= nops <= SW_PLAN_MAX_OPS) with the
 * given element offsets.
 * @pre  layouts[k] are valid layouts; offsets[k] >= 0.
 * @post for every logical index i there is exactly one coordinate
 *       (c_0, ..., c_ndim-1), 0 <= c_d < extent[d], and for every k
 *       offsets[k] + layouts[k](i) == offset[k] + sum_d c_d*stride[k][d];
 *       size == product of extent == size of each layout.
 * Errors: SW_EVALUE if nops is out of range or the sizes differ;
 * SW_EOVERFLOW if an operand's offset plus its span plus its largest
 * extent*stride overflows int64_t (the walks form offsets up to there);
 * SW_ENOTIMPL if the operands have no common refinement or need more than
 * SW_PLAN_MAX_DIMS modes (then use sw_plan_run_leaves). *out is written
 * only on success. The failure message is recorded in both cases.
 */
sw_status sw_plan_build(int32_t nops, const sw_layout *const *layouts,
                        const int64_t *offsets, sw_plan *out);

/* The same from leaf lists. */
sw_status sw_plan_build_leaves(int32_t nops, const sw_plan_leaves *ops,
                               const int64_t *offsets, sw_plan *out);

/*
 * The strided inner loop: n elements, where operand k's first element is at
 * ptr[k] and its next ones step[k] elements further (step may be 0). It
 * returns SW_OK to continue; any other status stops the walk, which then
 * returns it (the loop records the message with sw_fail).
 */
typedef sw_status (*sw_plan_loop)(int64_t n, void *const *ptr,
                                  const int64_t *step, void *ctx);

/*
 * The longest run handed to a loop: long runs are cut so that interrupt
 * checks come often enough (about 2 ms for a Float32 add, 0.2 s for the
 * slowest activation), yet every piece of a two-operand Float32 walk
 * (64 MiB) is still long enough for the streaming stores of
 * op/kernels/kcommon.h (SW_KSTREAM_MIN_BYTES, 40 MiB).
 */
#define SW_PLAN_CHUNK ((int64_t)1 << 23)

#define SW_PLAN_CROSSED 64
#define SW_PLAN_BLOCK0 8
#define SW_PLAN_BLOCK1 256

/*
 * Runs loop over every innermost run of the plan. base[k] is operand k's
 * element 0 and elsize[k] its element size in bytes. When some operand has
 * a stride above SW_PLAN_CROSSED along mode 0 but a smaller non-zero one
 * along mode 1 (a transposing walk, such as a compact output read from a
 * transposed input), modes 0 and 1 are walked in tiles of SW_PLAN_BLOCK0 x
 * SW_PLAN_BLOCK1 elements, so runs are at most SW_PLAN_BLOCK0 long but
 * every cache line is used while it is in L1. The set of visits is the
 * same either way; only the order (and so a float sum's rounding) changes.
 * SW_EINTERRUPTED for an interrupt request (see the header comment).
 */
sw_status sw_plan_run(const sw_plan *plan, void *const *base,
                      const int64_t *elsize, sw_plan_loop loop, void *ctx);

/*
 * The fallback walk in logical order (see the header comment): works for
 * any operands of equal size, in runs bounded by every operand's innermost
 * leaf. SW_EVALUE if the sizes differ or nops is out of range,
 * SW_EOVERFLOW as sw_plan_build, SW_EINTERRUPTED for an interrupt
 * request.
 */
sw_status sw_plan_run_leaves(int32_t nops, const sw_plan_leaves *ops,
                             const int64_t *offsets, void *const *base,
                             const int64_t *elsize, sw_plan_loop loop,
                             void *ctx);

/*
 * Operand leaf lists without their shared repeats (see the header
 * comment), with the storage they point into.
 */
typedef struct sw_plan_reduced {
    int32_t nops;
    int64_t repeat; /* how many input visits each reduced visit stands for */
    int64_t extent[SW_PLAN_MAX_LEAVES];
    int64_t stride[SW_PLAN_MAX_OPS][SW_PLAN_MAX_LEAVES];
    sw_plan_leaves ops[SW_PLAN_MAX_OPS];
} sw_plan_reduced;

/*
 * Refines the operands as step (a) does and drops every refined mode in
 * which every operand has stride 0.
 * @post out->ops[k] (all with the same extents, first leaf fastest) have
 *       size(ops[0]) / repeat elements; the map from logical index i of
 *       the inputs to its coordinates in the kept modes takes every
 *       reduced index exactly repeat times, and the tuple of operand
 *       positions (offsets[k] + ops[k](i))_k equals the reduced one.
 *       Example: (4,(8,2**40)):(1,(4,0)) for every operand reduces to
 *       leaves 4:1 and 8:4 (32 elements) with repeat 2**40.
 * When nothing is dropped (operand 0 has no stride-0 leaf, or the
 * operands have no common refinement), out->ops are the input lists
 * (borrowed) and repeat is 1.
 * Errors: SW_EVALUE as sw_plan_build; out is written only on success.
 */
sw_status sw_plan_drop_repeats(int32_t nops, const sw_plan_leaves *ops,
                               sw_plan_reduced *out);

/* Flags of sw_plan_iterate. */
#define SW_PLAN_SKIP_REPEATS 1u /* the loop is idempotent per visit */

/*
 * Builds the plan and runs it, or falls back to sw_plan_run_leaves when
 * the operands cannot share a plan. With SW_PLAN_SKIP_REPEATS the shared
 * repeats are dropped first (sw_plan_drop_repeats), so a walk of 2**62
 * broadcast elements costs one visit. Returns SW_EVALUE for mismatched
 * sizes, SW_EINTERRUPTED for an interrupt request, otherwise whatever the
 * loop returned.
 */
sw_status sw_plan_iterate(int32_t nops, const sw_plan_leaves *ops,
                          const int64_t *offsets, void *const *base,
                          const int64_t *elsize, unsigned flags,
                          sw_plan_loop loop, void *ctx);

/*
 * Splitting a plan into chunks for several threads (base/pool.h). A split
 * cuts one mode into blocks of `block` indices (the last may be shorter),
 * and chunk c is the plan restricted to block c of that mode with every
 * other mode whole: its visits are the plan's visits whose coordinate
 * along the mode lies in [c*block, (c+1)*block), so the chunks together
 * visit every element once. A split depends only on the plan and the
 * target chunk size, never on the number of threads, so a kernel whose
 * chunks each compute in a fixed order gets the same bits for every
 * thread count.
 *
 * Worked example, with a target of 131072 elements. A compact
 * 4M-element add (one mode of 4194304): mode 0, block 131072, 32 chunks.
 * A transposed 2048 x 2048 copy (modes 2048:(1; 2048) and 2048:(2048; 1),
 * crossed): the outer mode, 2048 indices each worth 2048 elements, in
 * blocks of 64 rounded up to the 256 of a tile (SW_PLAN_BLOCK1): 8
 * chunks. A sliced 1000 x 4000 walk (modes 1000:(1) and 4000:(1024)):
 * mode 1, block 132, 31 chunks.
 */
typedef struct sw_plan_split {
    int32_t mode;  /* the mode cut into blocks */
    int64_t block; /* indices of the mode per chunk */
    int64_t count; /* chunks: ceil(extent[mode] / block); 1 means no split */
} sw_plan_split;

/* A split wants at least this many chunks, for balance across threads. */
#define SW_PLAN_SPLIT_MIN 8

/*
 * The split of mode d into blocks of about target elements each (at
 * least one index per block). When the plan walks in tiles and d is mode
 * 1, blocks are whole multiples of SW_PLAN_BLOCK1 so that tiles stay
 * whole. @pre 0 <= d < plan->ndim, target >= 1.
 */
sw_plan_split sw_plan_split_mode(const sw_plan *plan, int32_t d,
                                 int64_t target);

/*
 * The split a kernel takes by default: of the modes of extent > 1, the
 * outermost whose split (sw_plan_split_mode) gives at least
 * SW_PLAN_SPLIT_MIN chunks, so that each chunk covers few separate pieces
 * of memory; if none does, the one that gives the most chunks (the
 * outermost of equals). count is 1 when the plan has fewer than two
 * target-sized pieces.
 */
sw_plan_split sw_plan_split_choose(const sw_plan *plan, int64_t target);

/* Chunk c of split s as a plan of its own. @pre 0 <= c < s.count. */
void sw_plan_chunk(const sw_plan *plan, sw_plan_split s, int64_t c,
                   sw_plan *out);

/*
 * Non-zero if operand k reaches a different element at every visit of the
 * plan (so chunks that write it never write the same element), judged by
 * a sufficient test: sorted by stride, every mode's stride exceeds the
 * span of the modes before it. With skip_zero, modes along which operand k
 * has stride 0 are left out (the question is then whether visits that
 * differ outside those modes reach different elements: the outputs of a
 * sum). Zero, conservatively, for anything the test cannot prove.
 */
int sw_plan_injective(const sw_plan *plan, int32_t k, int skip_zero);

/*
 * Writes the physical offsets of count consecutive logical indices
 * start, start+1, ... of a leaf list into out (one division per leaf for
 * the first, then an odometer). Used by GEMM to address the rows and
 * columns of a block. @pre 0 <= start, start + count <= size.
 */
void sw_plan_leaves_offsets(sw_plan_leaves ops, int64_t start, int64_t count,
                            int64_t *out);

#endif /* SW_LAYOUT_PLAN_H */
