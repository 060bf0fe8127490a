/*
 * Helpers shared by the kernel files: the fast-path switch, the
 * vectoriser hints, operand checks and the Int32-to-float staging of the
 * Float32 kernels.
 */
#ifndef SW_OP_KERNELS_KCOMMON_H
#define SW_OP_KERNELS_KCOMMON_H

#include "op/kernels/kernels.h"

/* Non-zero when the fast paths may run (not in a reference build). */
#if defined(SW_REFERENCE_KERNELS)
#define SW_KERNELS_FAST 0
#else
#define SW_KERNELS_FAST 1
#endif

/*
 * Contiguous fast paths process SW_KCHUNK elements per step in an inner
 * loop of constant trip count marked with SW_IVDEP: GCC then vectorises
 * it even at -O2 (whose cost model refuses loops of unknown trip count
 * and loops that need a run-time alias check), and the marker is honest
 * because element j of the output depends on element j of the inputs
 * only, so even an in-place run carries no dependence between iterations.
 * "unroll 1" keeps -O3 from unrolling the chunk into straight-line code
 * before the loop vectoriser sees it: without it gcc 12 -O3 left relu
 * scalar (19 GB/s instead of 46 on 4M floats).
 */
#define SW_KCHUNK 16

#if defined(__clang__)
#define SW_IVDEP _Pragma("clang loop vectorize(assume_safety)")
#elif defined(__GNUC__)
#define SW_IVDEP _Pragma("GCC ivdep") _Pragma("GCC unroll 1")
#else
#define SW_IVDEP
#endif

/*
 * Forces the per-op run helpers inline into their switch cases, so the op
 * is a constant inside the loop and the loop body has no branch on it.
 */
#if defined(__GNUC__)
#define SW_ALWAYS_INLINE __attribute__((always_inline)) inline
#else
#define SW_ALWAYS_INLINE inline
#endif

/*
 * Non-temporal stores for very long contiguous Float32 output runs. An
 * output of 8 MiB or more (with its inputs, more than most L3 caches can
 * keep for the next operation anyway) is written around the caches, which
 * saves the read-for-ownership of every output line: 4M-element add went
 * from about 40 to 50 GB/s on the development machine (AMD EPYC, 32 MiB
 * L3), while runs that fit in L3 measured the same either way. SSE2 is
 * part of x86-64, so this needs no run-time check. Elsewhere, and in the
 * reference build, SW_KSTREAM is 0 and the branch disappears.
 */
#if SW_KERNELS_FAST && defined(__SSE2__)
#include <emmintrin.h>
#define SW_KSTREAM 1
#else
#define SW_KSTREAM 0
#endif
#ifndef SW_KSTREAM_MIN_BYTES
#define SW_KSTREAM_MIN_BYTES ((int64_t)40 << 20)
#endif

/*
 * SW_KCLONES on a loop function compiles it for AVX-512, AVX2 and the
 * baseline, the one to run chosen once by the loader (an ifunc): the
 * contiguous loops then work on 16 or 8 floats per instruction where the
 * baseline's SSE2 takes 4, which is what limits runs the caches hold.
 * Every clone computes the same IEEE operations per element, unfused (ISO
 * C mode contracts nothing), so the results are the same bits. Elsewhere,
 * in the reference build and under ThreadSanitizer (whose runtime is not
 * up yet when the loader runs a resolver), it is empty.
 */
#if SW_KERNELS_FAST && defined(__GNUC__) && defined(__x86_64__) &&             \
    defined(__linux__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
#define SW_KCLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define SW_KCLONES
#endif

/*
 * The elements of the whole walk that the calling thread is running a
 * chunk of (0 outside chunked walks). A chunk's runs are short, but
 * whether the output is worth keeping in cache depends on the whole
 * walk, so the chunk runner (sw_krun_split) sets this for the loops.
 */
extern _Thread_local int64_t sw_kstream_walk;

/*
 * Non-zero if a contiguous run of n elements over nops Float32 operands
 * streams its output: when the operands together exceed
 * SW_KSTREAM_MIN_BYTES, over the run or over the walk it belongs to.
 */
static inline int sw_kstream_run(int64_t n, int32_t nops) {
    int64_t m = n > sw_kstream_walk ? n : sw_kstream_walk;
    return SW_KSTREAM && m * 4 * nops >= SW_KSTREAM_MIN_BYTES;
}

/* Elements to write normally before o is 16-byte aligned (n at most). */
static inline int64_t sw_kstream_head(const float *o, int64_t n) {
    int64_t h = (int64_t)((16 - ((uintptr_t)o & 15)) & 15) / 4;
    return h < n ? h : n;
}

/* Stores SW_KCHUNK floats from r to the 16-byte aligned o, around caches. */
static inline void sw_kstream_chunk(float *o, const float *r) {
#if SW_KSTREAM
    for (int t = 0; t < SW_KCHUNK; t += 4)
        _mm_stream_ps(o + t, _mm_loadu_ps(r + t));
#else
    for (int t = 0; t < SW_KCHUNK; ++t)
        o[t] = r[t];
#endif
}

/* Orders the streamed stores before anything the caller does next. */
static inline void sw_kstream_fence(void) {
#if SW_KSTREAM
    _mm_sfence();
#endif
}

/* Element sizes of the dtypes kernels take; 0 for the others. */
static inline int64_t sw_kelsize(sw_dtype dt) {
    switch (dt) {
    case SW_DTYPE_FLOAT32:
    case SW_DTYPE_INT32:
        return 4;
    case SW_DTYPE_BOOL:
        return 1;
    default:
        return 0;
    }
}

/* SW_EVALUE unless size(b) == size(a); names the two operands. */
sw_status sw_kcheck_same_size(const char *kernel, const sw_karg *a,
                              const char *an, const sw_karg *b, const char *bn);

/* SW_ETYPE naming the kernel, the operand and its dtype. */
sw_status sw_kbad_dtype(const char *kernel, const char *operand,
                        sw_dtype dtype);

/*
 * Runs a Float32 inner loop over operands some of whose inputs are Int32:
 * the walk's runs are cut into pieces of at most SW_KSTAGE elements, each
 * Int32 input piece is converted into a float buffer on the stack (stride
 * 1), and the float loop sees only floats. Operand 0 (the output) must be
 * Float32.
 */
#define SW_KSTAGE 256
typedef struct sw_kstage {
    sw_plan_loop loop; /* the Float32 loop */
    void *ctx;         /* its context */
    int32_t nops;
    int is_i32[SW_PLAN_MAX_OPS];
} sw_kstage;

sw_status sw_kstage_loop(int64_t n, void *const *ptr, const int64_t *step,
                         void *stage);

/*
 * Iterates nops operands (operand 0 the output) with a Float32 loop,
 * staging Int32 inputs through sw_kstage_loop when there are any.
 */
sw_status sw_kiterate_f32(int32_t nops, const sw_karg *ops, sw_plan_loop loop,
                          void *ctx);

/*
 * Threads (base/pool.h). A walk of at least SW_KPAR_MIN elements of work
 * is split into chunks (sw_plan_split_choose) of about sw_kpar_target
 * elements of work when more than one thread is set; each chunk is a
 * sub-plan run by sw_plan_run with the same loop and context, so loops
 * must be thread-safe: the context is read-only, and chunks write only the
 * elements they visit. Work is elements times a kernel's weight (1 for a
 * memory-bound loop; more for loops that compute per element, which pay
 * for threads sooner). Below the threshold nothing about the walk changes,
 * so small operations pay nothing for the pool.
 *
 * Chunks are a 32nd of the walk, but at least SW_KPAR_CHUNK elements of
 * work: enough chunks for the threads to share evenly whatever each one's
 * speed, few enough that the cost per chunk (a sub-plan, an atomic
 * increment, an interrupt check) stays small. The size of a chunk depends
 * on the walk alone, never on the thread count.
 *
 * Measured on the development machine (2 cores, Float32, compact
 * operands, inputs in cache, best of 7 x 400 calls), 2 threads against 1:
 * with the threshold lowered to try them, add and relu 1.1x at 64K
 * elements and 1.0x below; at 128K add 1.25-1.4x, relu 1.3-1.5x; about
 * 2x from 256K (add) and 1M (relu); exp 1.9x from 16K.
 */
#ifndef SW_KPAR_MIN
#define SW_KPAR_MIN ((int64_t)1 << 17)
#endif
#ifndef SW_KPAR_CHUNK
#define SW_KPAR_CHUNK ((int64_t)1 << 14)
#endif

/*
 * The weight of a loop that calls libm per element (expf, tanhf, powf,
 * ...): measured, exp costs about 25 times an add per element here, and
 * 2 threads halve a 16K-element exp already; 8 starts them from 16K
 * elements, and stays right for a vectorised exp a few times faster.
 */
#define SW_KWEIGHT_MATH 8

/* The target chunk, in elements, of a walk of n elements of this weight. */
static inline int64_t sw_kpar_target(int64_t n, int64_t weight) {
    int64_t t = n / 32;
    int64_t lo = SW_KPAR_CHUNK / weight;
    return t > lo ? t : (lo > 0 ? lo : 1);
}

/*
 * Runs every chunk of split s of plan over the pool (sw_parallel_for),
 * with sw_kstream_walk set to the plan's size. Returns the lowest failing
 * chunk's status, message included; SW_EINTERRUPTED if a chunk saw an
 * interrupt request (each chunk checks before it starts).
 */
sw_status sw_krun_split(const sw_plan *plan, sw_plan_split s, void *const *base,
                        const int64_t *elsize, sw_plan_loop loop, void *ctx);

/*
 * sw_plan_iterate (flags as there) that runs large walks over the pool:
 * when the work (elements after dropping repeats, times weight) reaches
 * SW_KPAR_MIN, more than one thread is set, the operands share a plan and
 * every operand in the bit mask `written` is injective over it
 * (sw_plan_injective), the default split runs through sw_krun_split.
 * Otherwise, exactly sw_plan_iterate. Results are the same either way for
 * a loop whose visits are independent (an assignment, or an update of the
 * written operands' own elements), which is what the kernels pass.
 */
sw_status sw_kwalk(int32_t nops, const sw_plan_leaves *ops,
                   const int64_t *offsets, void *const *base,
                   const int64_t *elsize, unsigned flags, unsigned written,
                   int64_t weight, sw_plan_loop loop, void *ctx);

/*
 * The part of sw_kwalk after the plan is built: runs the plan over the
 * pool under the same conditions, else with sw_plan_run.
 */
sw_status sw_krun_plan(const sw_plan *plan, void *const *base,
                       const int64_t *elsize, unsigned written, int64_t weight,
                       sw_plan_loop loop, void *ctx);

/*
 * Iterates nops operands with a loop that reads them in their dtypes.
 * Every loop run through sw_kiterate and sw_kiterate_f32 is an assignment
 * (operand 0 written from the other operands of the same visit), so both
 * skip repeated visits (SW_PLAN_SKIP_REPEATS): a broadcast that every
 * operand shares costs one visit, however many logical elements it has.
 */
sw_status sw_kiterate(int32_t nops, const sw_karg *ops, sw_plan_loop loop,
                      void *ctx);

/* sw_kiterate and sw_kiterate_f32 with a weight for sw_kwalk. */
sw_status sw_kiterate_w(int32_t nops, const sw_karg *ops, sw_plan_loop loop,
                        void *ctx, int64_t weight);
sw_status sw_kiterate_f32_w(int32_t nops, const sw_karg *ops, sw_plan_loop loop,
                            void *ctx, int64_t weight);

#endif /* SW_OP_KERNELS_KCOMMON_H */
