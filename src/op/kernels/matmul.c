/*
 * GEMM: C[i, j] = sum_k A[i, k] * B[j, k], batched, with every matrix mode
 * given by a (possibly hierarchical) mode of a layout.
 *
 * Float32 follows the Goto/BLIS structure:
 *
 *   for each batch index
 *    for jc over N in steps of NC         B rows of one panel
 *     for pc over K in steps of KC        one rank-KC update
 *      pack B[jc.., pc..] into Bp         micro-panels of NR rows, k-major
 *      for ic over M in steps of MC
 *       pack A[ic.., pc..] into Ap        micro-panels of MR rows, k-major
 *       for jr, ir: micro-kernel          an MR x NR tile of C in registers
 *
 * A micro-panel of B (KC x NR floats, 6 KiB) stays in L1 while the
 * micro-kernel streams the A block (MC x KC, 144 KiB) from L2; the B panel
 * (KC x NC) lives in L3. Packing reads the operands through offset tables
 * of one block's rows and columns (computed with one division per block,
 * then an odometer: sw_plan_leaves_offsets), so any strides and any
 * hierarchical modes cost the same as compact ones, Int32 operands are
 * converted while packing, and the buffers (at most 3.4 MiB a thread,
 * allocated once per call with the library allocator) depend on the block
 * sizes only. Two cases read Float32 in memory order instead of one
 * gather per element: rows at unit stride (a column-major operand: one
 * contiguous run per k) and columns at unit stride (a transposed one, as
 * the backward passes' G^T and W^T are: one run per row, transposed in
 * 4 x 4 SSE blocks); on a 256 x 4096 x 4096 product with a transposed B
 * that took one thread from 110 to 133 GFLOP/s.
 *
 * The micro-kernel computes an MR x NR = 16 x 6 tile as twelve 8-float
 * accumulators: vectors run along C's rows (i), which is C's unit stride
 * in the canonical column-major result, so full tiles of such a C are
 * loaded and stored directly; other tiles go through a small buffer and
 * the offset tables. Three micro-kernels exist: the portable one (plain C;
 * the reference, and what runs on non-x86 machines) and, on x86-64 CPUs
 * with AVX2 and FMA or with AVX-512 (checked at run time), ones written
 * with GCC vector extensions in functions compiled for those targets (the
 * AVX-512 one with a 32 x 12 tile and its own blocks). The library itself
 * is built for the baseline ISA, so this is the only AVX code here and it
 * runs only where the CPU has it. gcc 12 compiles its inner loop to the
 * classic shape: 2 vmovups, 6 vbroadcastss, 12 vfmadd231ps per k.
 * Measured on a 2-vCPU AVX-512 machine (release build, other work
 * running): the AVX2 kernel ran 1024^2 at 95-103 GFLOP/s on one thread,
 * the AVX-512 one 145-147; on two threads 1024^2 took about what NumPy's
 * two-thread OpenBLAS takes (1.02x) and 2048^2 less (1.24x).
 *
 * Int32 is simple and exact: each entry is an int64 sum along k, walked
 * with a plan over the two k modes, checked for overflow.
 *
 * Repeats (layout/plan.h): before any of this, modes that are stride 0 in
 * every operand that runs along them are dropped: rows shared by C and A,
 * columns shared by C and B, batch modes shared by all three (each dropped
 * coordinate would recompute the same entry into the same place), and k
 * modes shared by A and B, which instead multiply every entry by their
 * extent (Float32: once, after the entry's sum, as float(repeat);
 * Int32: exactly, checked). So a product over Shape(2**40) broadcast
 * rows, columns or contractions costs what the distinct ones cost.
 *
 * Threads: from 2^21 multiply-adds, each batch index's C is cut into a
 * grid of tiles, one pool chunk each (two a thread from 2^26
 * multiply-adds, so that a thread slowed by other work hands tiles to the
 * others), cutting the longer side of C first. A tile runs the loop nest
 * above over its own entries with its thread's own buffers, so a product
 * with few rows (a training step's 256 x 4096 x 4096) splits its columns
 * instead of leaving a thread idle. A C entry is one sum over k in KC
 * blocks in increasing order whatever tile or thread computes it, so
 * results are the same for every thread count. Measured on the 2-vCPU
 * AVX-512 machine (shared): the three products of a 4096 x 4096 Linear
 * layer's training step at batch 256 (forward, G . W, G^T . X) went from
 * 69, 58 and 31 ms to 30, 33 and 28 ms on two threads (rows were split
 * only in MC blocks: 192 and 64 rows); one thread does 62, 65 and 56.
 *
 * Interrupts: Float32 checks once per MC x KC x NC block (at most 302
 * MFLOP, about two milliseconds), Int32 before every entry's walk.
 */
#include <stdatomic.h>
#include <string.h>

#include "base/pool.h"
#include "op/kernels/kcommon.h"

static const char accumulation_msg[] = "CPU integer accumulation overflowed";

/* Register tiles and cache blocks of the portable and AVX2 kernels (MC a
 * multiple of MR, NC of NR); the AVX-512 kernel's are below it. */
#define SW_GEMM_MR 16
#define SW_GEMM_NR 6
#define SW_GEMM_KC 256
#define SW_GEMM_MC 144
#define SW_GEMM_NC 1536
/* The largest tile of any kernel (the edge-tile buffer). */
#define SW_GEMM_TILE_MAX (32 * 12)

#if SW_KERNELS_FAST && defined(__GNUC__) && defined(__x86_64__)
#define SW_GEMM_X86 1
#else
#define SW_GEMM_X86 0
#endif

/* SSE is part of x86-64: the packing uses it without a run-time check. */
#if SW_KERNELS_FAST && defined(__SSE2__)
#include <xmmintrin.h>
#define SW_GEMM_SSE 1
#else
#define SW_GEMM_SSE 0
#endif

/*
 * A micro-kernel: the MR x NR tile T[i + j*MR] = sum_k a[k*MR + i] *
 * b[k*NR + j] over kc steps, stored to c[i + j*ldc] (accumulate == 0) or
 * added to it.
 */
typedef void (*gemm_ukernel)(int64_t kc, const float *a, const float *b,
                             float *c, int64_t ldc, int accumulate);

/* A micro-kernel with its register tile and the blocks that suit it. */
typedef struct gemm_kernel {
    const char *name;
    gemm_ukernel fn;
    int mr, nr;
    int64_t mc, nc, kc;
} gemm_kernel;

static void ukernel_portable(int64_t kc, const float *a, const float *b,
                             float *c, int64_t ldc, int accumulate) {
    float t[SW_GEMM_NR][SW_GEMM_MR] = {{0}};
    for (int64_t k = 0; k < kc; ++k) {
        const float *ak = a + k * SW_GEMM_MR;
        const float *bk = b + k * SW_GEMM_NR;
        for (int j = 0; j < SW_GEMM_NR; ++j)
            for (int i = 0; i < SW_GEMM_MR; ++i)
                t[j][i] += ak[i] * bk[j];
    }
    for (int j = 0; j < SW_GEMM_NR; ++j) {
        float *cj = c + j * ldc;
        if (accumulate)
            for (int i = 0; i < SW_GEMM_MR; ++i)
                cj[i] += t[j][i];
        else
            for (int i = 0; i < SW_GEMM_MR; ++i)
                cj[i] = t[j][i];
    }
}

#if SW_GEMM_X86
typedef float sw_v8f __attribute__((vector_size(32)));

/*
 * In ISO C mode gcc does not fuse a*b+c (-ffp-contract=off); the FMA
 * kernel exists to fuse, so it asks for contraction here only.
 */
#if !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize("fp-contract=fast")
#endif
__attribute__((target("avx2,fma"))) static void
ukernel_avx2(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
             int accumulate) {
    sw_v8f acc[SW_GEMM_NR][2];
#pragma GCC unroll 6
    for (int j = 0; j < SW_GEMM_NR; ++j) {
        acc[j][0] = (sw_v8f){0};
        acc[j][1] = (sw_v8f){0};
    }
    for (int64_t k = 0; k < kc; ++k) {
        sw_v8f a0, a1;
        memcpy(&a0, a + k * SW_GEMM_MR, sizeof a0);
        memcpy(&a1, a + k * SW_GEMM_MR + 8, sizeof a1);
        const float *bk = b + k * SW_GEMM_NR;
#pragma GCC unroll 6
        for (int j = 0; j < SW_GEMM_NR; ++j) {
            float x = bk[j];
            sw_v8f bj = {x, x, x, x, x, x, x, x};
            acc[j][0] += a0 * bj;
            acc[j][1] += a1 * bj;
        }
    }
#pragma GCC unroll 6
    for (int j = 0; j < SW_GEMM_NR; ++j) {
        float *cj = c + j * ldc;
        if (accumulate) {
            sw_v8f c0, c1;
            memcpy(&c0, cj, sizeof c0);
            memcpy(&c1, cj + 8, sizeof c1);
            acc[j][0] += c0;
            acc[j][1] += c1;
        }
        memcpy(cj, &acc[j][0], sizeof acc[j][0]);
        memcpy(cj + 8, &acc[j][1], sizeof acc[j][1]);
    }
}

typedef float sw_v16f __attribute__((vector_size(64)));

/*
 * AVX-512: a 32 x 12 tile as 24 sixteen-float accumulators (of the 32
 * vector registers), two A vectors and one broadcast per k: 24 FMAs to 14
 * loads, enough to keep both FMA ports busy. Same contract as the AVX2
 * kernel with MR = 32, NR = 12.
 */
__attribute__((target("avx512f"))) static void
ukernel_avx512(int64_t kc, const float *a, const float *b, float *c,
               int64_t ldc, int accumulate) {
    enum { MR = 32, NR = 12 };
    sw_v16f acc[NR][2];
#pragma GCC unroll 12
    for (int j = 0; j < NR; ++j) {
        acc[j][0] = (sw_v16f){0};
        acc[j][1] = (sw_v16f){0};
    }
    for (int64_t k = 0; k < kc; ++k) {
        sw_v16f a0, a1;
        memcpy(&a0, a + k * MR, sizeof a0);
        memcpy(&a1, a + k * MR + 16, sizeof a1);
        const float *bk = b + k * NR;
#pragma GCC unroll 12
        for (int j = 0; j < NR; ++j) {
            float x = bk[j];
            sw_v16f bj = {x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x};
            acc[j][0] += a0 * bj;
            acc[j][1] += a1 * bj;
        }
    }
#pragma GCC unroll 12
    for (int j = 0; j < NR; ++j) {
        float *cj = c + j * ldc;
        if (accumulate) {
            sw_v16f c0, c1;
            memcpy(&c0, cj, sizeof c0);
            memcpy(&c1, cj + 16, sizeof c1);
            acc[j][0] += c0;
            acc[j][1] += c1;
        }
        memcpy(cj, &acc[j][0], sizeof acc[j][0]);
        memcpy(cj + 16, &acc[j][1], sizeof acc[j][1]);
    }
}
#if !defined(__clang__)
#pragma GCC pop_options
#endif
#endif /* SW_GEMM_X86 */

/*
 * The kernels, best first. The AVX-512 blocks: a 12 x 512 B micro-panel
 * (24 KiB) stays in L1 and a 192 x 512 A block (384 KiB) in L2. KC 512
 * rather than 256 halves the passes over C of a long sum (each reads and
 * writes the C block): a 256 x 4096 x 4096 product with a transposed B
 * went from 67 to 63 ms on one thread.
 */
static const gemm_kernel kernels[] = {
#if SW_GEMM_X86
    {"avx512", ukernel_avx512, 32, 12, 192, 1536, 512},
    {"avx2-fma", ukernel_avx2, SW_GEMM_MR, SW_GEMM_NR, SW_GEMM_MC, SW_GEMM_NC,
     SW_GEMM_KC},
#endif
    {"reference", ukernel_portable, SW_GEMM_MR, SW_GEMM_NR, SW_GEMM_MC,
     SW_GEMM_NC, SW_GEMM_KC},
};
#define NKERNELS ((int)(sizeof kernels / sizeof *kernels))

static int kernel_runs_here(const gemm_kernel *k) {
#if SW_GEMM_X86
    if (k->fn == ukernel_avx512)
        return __builtin_cpu_supports("avx512f");
    if (k->fn == ukernel_avx2)
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
    return 1;
}

/* The kernel tests asked for (-1: the best one the CPU runs). */
static _Atomic int forced_kernel = -1;

static const gemm_kernel *select_kernel(void) {
    int f = forced_kernel;
    if (f >= 0)
        return &kernels[f];
    for (int i = 0; i < NKERNELS; ++i)
        if (kernel_runs_here(&kernels[i]))
            return &kernels[i];
    return &kernels[NKERNELS - 1];
}

const char *sw_kernel_gemm_variant(void) {
    return select_kernel()->name;
}

int sw_kernel_gemm_force(const char *name) {
    if (!name) {
        forced_kernel = -1;
        return 0;
    }
    for (int i = 0; i < NKERNELS; ++i)
        if (strcmp(kernels[i].name, name) == 0 &&
            kernel_runs_here(&kernels[i])) {
            forced_kernel = i;
            return 0;
        }
    return -1;
}

/* ------------------------------------------------------------ operands */

/* One matrix as the plan module sees it: leaves of rows, columns, batch. */
typedef struct gemm_mat {
    const void *data;
    sw_dtype dtype;
    int64_t offset;
    sw_plan_leaves rows, cols, batch;
} gemm_mat;

sw_kmat sw_kmat_of(sw_karg arg) {
    sw_kmat m = {arg, 0, 1, sw_layout_rank(arg.layout) > 2 ? 2 : -1};
    return m;
}

static sw_status gemm_operand(const sw_kmat *m, const char *name,
                              gemm_mat *out) {
    int32_t rank = sw_layout_rank(m->arg.layout);
    int32_t want = m->batch_mode >= 0 ? 3 : 2;
    if (rank != want)
        return sw_fail(SW_EVALUE,
                       "gemm: %s has %d top-level modes; %d were described",
                       name, (int)rank, (int)want);
    int32_t r = m->row_mode, c = m->col_mode, b = m->batch_mode;
    if (r < 0 || r >= rank || c < 0 || c >= rank || r == c ||
        (b >= 0 && (b == r || b == c || b >= rank)))
        return sw_fail(SW_EVALUE,
                       "gemm: %s's row, column and batch modes must be "
                       "distinct modes of its layout",
                       name);
    static const int64_t one = 1, zero = 0;
    out->data = m->arg.data;
    out->dtype = m->arg.dtype;
    out->offset = m->arg.offset;
    out->rows = sw_plan_leaves_mode(m->arg.layout, r);
    out->cols = sw_plan_leaves_mode(m->arg.layout, c);
    if (b >= 0) {
        out->batch = sw_plan_leaves_mode(m->arg.layout, b);
    } else {
        sw_plan_leaves none = {1, &one, &zero};
        out->batch = none;
    }
    return SW_OK;
}

static sw_status check_extent(const char *what, int64_t x, int64_t y) {
    if (x != y)
        return sw_fail(SW_EVALUE, "gemm: %s do not match (%lld and %lld)", what,
                       (long long)x, (long long)y);
    return SW_OK;
}

/* --------------------------------------------------------------- pack */

/* Copies n floats; n a compile-time constant in the callers' fast cases,
 * so that the copy is a few vector moves instead of a call. */
static SW_ALWAYS_INLINE void copy_floats(float *dst, const float *src,
                                         int64_t n) {
    memcpy(dst, src, (size_t)n * sizeof(float));
}

/* Columns of the block that the unit-stride rows case reads in one sweep
 * over its panels (see below). */
#define SW_GEMM_PACK_KB 16

/* Copies rows [0, mr) of columns [k0, k1) of one panel; rows mr.. are 0. */
static SW_ALWAYS_INLINE void pack_rows_run(float *panel, const float *sp,
                                           const int64_t *col, int64_t k0,
                                           int64_t k1, int64_t mr,
                                           int mr_full) {
    if (mr == mr_full) {
        /* The kernels' tiles as constants: a few vector moves a column. */
        switch (mr_full) {
        case 32:
            for (int64_t k = k0; k < k1; ++k)
                copy_floats(panel + k * 32, sp + col[k], 32);
            return;
        case 16:
            for (int64_t k = k0; k < k1; ++k)
                copy_floats(panel + k * 16, sp + col[k], 16);
            return;
        case 12:
            for (int64_t k = k0; k < k1; ++k)
                copy_floats(panel + k * 12, sp + col[k], 12);
            return;
        case 6:
            for (int64_t k = k0; k < k1; ++k)
                copy_floats(panel + k * 6, sp + col[k], 6);
            return;
        default:
            break;
        }
    }
    for (int64_t k = k0; k < k1; ++k) {
        float *pk = panel + k * mr_full;
        const float *sk = sp + col[k];
        for (int64_t i = 0; i < mr; ++i)
            pk[i] = sk[i];
        for (int64_t i = mr; i < mr_full; ++i)
            pk[i] = 0.0f;
    }
}

/*
 * The unit-stride rows case of pack_panels: row i of the block is at
 * src + i, column k at col[k] (a column-major operand), so each k of a
 * panel is one contiguous run of mr_full floats. The block is read
 * SW_GEMM_PACK_KB columns at a time down all its panels: each column is
 * then read front to back (a stream the prefetcher follows) rather than
 * one panel's few floats of each of kc columns, a page apart, at a time.
 */
static void pack_unit_rows(float *dst, const float *src, int64_t m,
                           const int64_t *col, int64_t kc, int mr_full) {
    for (int64_t k0 = 0; k0 < kc; k0 += SW_GEMM_PACK_KB) {
        int64_t k1 = kc - k0 < SW_GEMM_PACK_KB ? kc : k0 + SW_GEMM_PACK_KB;
        for (int64_t p0 = 0; p0 < m; p0 += mr_full) {
            int64_t mr = m - p0 < mr_full ? m - p0 : mr_full;
            pack_rows_run(dst + p0 * kc, src + p0, col, k0, k1, mr, mr_full);
        }
    }
}

/*
 * The unit-stride columns case of pack_panels: row i of the block starts
 * at src + row[i] and runs contiguously along k (a transposed operand,
 * such as B = W^T in a backward pass). Each row is read as a run and
 * written down its panel; on x86-64 four rows at a time, in 4 x 4 blocks
 * transposed in SSE registers (baseline x86-64), a load and a store per
 * four floats instead of per float.
 */
static void pack_unit_cols(float *dst, const float *src, const int64_t *row,
                           int64_t m, int64_t kc, int mr_full) {
    for (int64_t p0 = 0; p0 < m; p0 += mr_full) {
        float *panel = dst + p0 * kc;
        int64_t mr = m - p0 < mr_full ? m - p0 : mr_full;
        int64_t i = 0;
#if SW_GEMM_SSE
        for (; i + 4 <= mr; i += 4) {
            const float *r0 = src + row[p0 + i], *r1 = src + row[p0 + i + 1];
            const float *r2 = src + row[p0 + i + 2];
            const float *r3 = src + row[p0 + i + 3];
            float *pi = panel + i;
            int64_t k = 0;
            for (; k + 4 <= kc; k += 4) {
                __m128 x0 = _mm_loadu_ps(r0 + k), x1 = _mm_loadu_ps(r1 + k);
                __m128 x2 = _mm_loadu_ps(r2 + k), x3 = _mm_loadu_ps(r3 + k);
                _MM_TRANSPOSE4_PS(x0, x1, x2, x3);
                _mm_storeu_ps(pi + k * mr_full, x0);
                _mm_storeu_ps(pi + (k + 1) * mr_full, x1);
                _mm_storeu_ps(pi + (k + 2) * mr_full, x2);
                _mm_storeu_ps(pi + (k + 3) * mr_full, x3);
            }
            for (; k < kc; ++k) {
                float *pk = pi + k * mr_full;
                pk[0] = r0[k];
                pk[1] = r1[k];
                pk[2] = r2[k];
                pk[3] = r3[k];
            }
        }
#endif
        for (; i < mr; ++i) {
            const float *ri = src + row[p0 + i];
            float *pi = panel + i;
            for (int64_t k = 0; k < kc; ++k)
                pi[k * mr_full] = ri[k];
        }
        for (i = mr; i < mr_full; ++i)
            for (int64_t k = 0; k < kc; ++k)
                panel[k * mr_full + i] = 0.0f;
    }
}

/* Non-zero if t[i] == t[0] + i*step for every i < n (n >= 1). */
static int table_is_affine(const int64_t *t, int64_t n, int64_t step) {
    for (int64_t i = 1; i < n; ++i)
        if (t[i] != t[0] + i * step)
            return 0;
    return 1;
}

/*
 * Packs rows [0, m) x columns [0, kc) of a matrix, read at
 * base + row[i] + col[k], into micro-panels of mr_full rows: panel p holds
 * dst[p*mr_full*kc + k*mr_full + i]; rows past m are zero. Float32
 * operands whose rows or whose columns are at unit stride take the two
 * cases above (the same values, read in the order the memory has them);
 * any other tables, and Int32 (converted here), one gather per element.
 */
static void pack_panels(float *dst, const gemm_mat *x, int64_t base,
                        const int64_t *row, int64_t m, const int64_t *col,
                        int64_t kc, int mr_full) {
    if (SW_KERNELS_FAST && x->dtype == SW_DTYPE_FLOAT32) {
        const float *src = x->data;
        if (table_is_affine(row, m, 1)) {
            pack_unit_rows(dst, src + base + row[0], m, col, kc, mr_full);
            return;
        }
        if (table_is_affine(col, kc, 1)) {
            pack_unit_cols(dst, src + base + col[0], row, m, kc, mr_full);
            return;
        }
    }
    for (int64_t p0 = 0; p0 < m; p0 += mr_full) {
        float *panel = dst + p0 * kc;
        int64_t mr = m - p0 < mr_full ? m - p0 : mr_full;
        for (int64_t k = 0; k < kc; ++k) {
            float *pk = panel + k * mr_full;
            int64_t ck = base + col[k];
            if (x->dtype == SW_DTYPE_FLOAT32) {
                const float *src = x->data;
                for (int64_t i = 0; i < mr; ++i)
                    pk[i] = src[ck + row[p0 + i]];
            } else {
                const int32_t *src = x->data;
                for (int64_t i = 0; i < mr; ++i)
                    pk[i] = (float)src[ck + row[p0 + i]];
            }
            for (int64_t i = mr; i < mr_full; ++i)
                pk[i] = 0.0f;
        }
    }
}

/* ------------------------------------------------------------ Float32 */

typedef struct gemm_f32_job {
    gemm_mat a, b, c;
    int64_t m, n, k, nbatch;
    float scale; /* the repeat count of the dropped k modes */
} gemm_f32_job;

/*
 * The work split: every batch index's C is cut into a grid of tiles of
 * tile_rows x tile_cols entries (multiples of the register tile), one
 * pool chunk each. A tile runs the whole Goto loop nest for its entries
 * with its thread's own buffers: it packs its B panels and A blocks
 * itself, so tiles share nothing but the read-only operands.
 */
typedef struct gemm_grid {
    const gemm_f32_job *job;
    const gemm_kernel *kern;
    int64_t tile_rows, tile_cols, row_tiles, col_tiles;
    /* Per thread slot: slot_bytes of scratch at scratch + slot*slot_bytes,
     * laid out by slot_scratch. */
    int64_t mc_max, nc_max, kc_max;
    char *scratch;
    size_t slot_bytes;
} gemm_grid;

/* One thread's buffers: its A block, its B panel and their tables. */
typedef struct gemm_scratch {
    float *ap, *bp;
    int64_t *arow, *crow, *brow, *ccol, *acol, *bcol;
} gemm_scratch;

static size_t round_up_64(size_t n) {
    return (n + 63) & ~(size_t)63;
}

static size_t slot_size(int64_t mc, int64_t nc, int64_t kc) {
    return round_up_64((size_t)(mc * kc) * sizeof(float)) +
           round_up_64((size_t)(nc * kc) * sizeof(float)) +
           round_up_64((size_t)(2 * mc + 2 * nc + 2 * kc) * sizeof(int64_t));
}

static gemm_scratch slot_scratch(const gemm_grid *g, int32_t slot) {
    char *p = g->scratch + (size_t)slot * g->slot_bytes;
    gemm_scratch s;
    s.ap = (float *)(void *)p;
    p += round_up_64((size_t)(g->mc_max * g->kc_max) * sizeof(float));
    s.bp = (float *)(void *)p;
    p += round_up_64((size_t)(g->nc_max * g->kc_max) * sizeof(float));
    s.arow = (int64_t *)(void *)p;
    s.crow = s.arow + g->mc_max;
    s.brow = s.crow + g->mc_max;
    s.ccol = s.brow + g->nc_max;
    s.acol = s.ccol + g->nc_max;
    s.bcol = s.acol + g->kc_max;
    return s;
}

/* Where one rank-kc update of one B panel writes: C's bases and steps. */
typedef struct gemm_update {
    int64_t abase, cbase, nc, kc, ldc, pc;
    int cols_affine, last;
} gemm_update;

/*
 * Rows [ic, ic + mc) of one rank-kc update of the packed B panel in
 * s->bp: packs the A block, then runs the micro-kernel over its tiles.
 */
static void gemm_block(const gemm_grid *g, const gemm_scratch *s,
                       const gemm_update *u, int64_t ic, int64_t mc) {
    const gemm_f32_job *job = g->job;
    const gemm_kernel *kern = g->kern;
    const int MR = kern->mr, NR = kern->nr;
    int64_t kc = u->kc, nc = u->nc, pc = u->pc, ldc = u->ldc;
    float tile[SW_GEMM_TILE_MAX];
    float *cdata = (float *)job->c.data;
    float scale = job->scale;
    sw_plan_leaves_offsets(job->a.rows, ic, mc, s->arow);
    sw_plan_leaves_offsets(job->c.rows, ic, mc, s->crow);
    pack_panels(s->ap, &job->a, u->abase, s->arow, mc, s->acol, kc, MR);
    /* Tiles may go straight to C when its rows are unit stride and its
     * columns evenly spaced. */
    int direct = SW_KERNELS_FAST && scale == 1.0f && u->cols_affine &&
                 table_is_affine(s->crow, mc, 1);
    for (int64_t jr = 0; jr < nc; jr += NR) {
        int64_t nr = nc - jr < NR ? nc - jr : NR;
        const float *bpanel = s->bp + jr * kc;
        for (int64_t ir = 0; ir < mc; ir += MR) {
            int64_t mr = mc - ir < MR ? mc - ir : MR;
            const float *apanel = s->ap + ir * kc;
            if (direct && mr == MR && nr == NR) {
                float *ct = cdata + u->cbase + s->crow[ir] + s->ccol[jr];
                kern->fn(kc, apanel, bpanel, ct, ldc, pc > 0);
                continue;
            }
            kern->fn(kc, apanel, bpanel, tile, MR, 0);
            for (int64_t j = 0; j < nr; ++j) {
                float *cj = cdata + u->cbase + s->ccol[jr + j];
                const float *tj = tile + j * MR;
                for (int64_t i = 0; i < mr; ++i) {
                    float *ce = cj + s->crow[ir + i];
                    float v = pc > 0 ? *ce + tj[i] : tj[i];
                    *ce = u->last ? v * scale : v;
                }
            }
        }
    }
}

/*
 * One tile of the grid (a pool chunk): the Goto loop nest over its rows
 * and columns. Each C entry is one sum over k in KC blocks in increasing
 * order, whatever tile or thread computes it, so the grid (which depends
 * on the thread count) never changes a bit of the result.
 */
static sw_status gemm_tile(void *vctx, int64_t chunk, int32_t slot) {
    const gemm_grid *g = vctx;
    const gemm_f32_job *job = g->job;
    const gemm_kernel *kern = g->kern;
    const int64_t MC = kern->mc, NC = kern->nc, KC = kern->kc;
    const int NR = kern->nr;
    int64_t per_batch = g->row_tiles * g->col_tiles;
    int64_t bi = chunk / per_batch, t = chunk % per_batch;
    int64_t i0 = t / g->col_tiles * g->tile_rows;
    int64_t j0 = t % g->col_tiles * g->tile_cols;
    int64_t i1 = i0 + g->tile_rows < job->m ? i0 + g->tile_rows : job->m;
    int64_t j1 = j0 + g->tile_cols < job->n ? j0 + g->tile_cols : job->n;
    int64_t K = job->k;
    gemm_scratch s = slot_scratch(g, slot);
    int64_t boff[3];
    sw_plan_leaves_offsets(job->a.batch, bi, 1, &boff[0]);
    sw_plan_leaves_offsets(job->b.batch, bi, 1, &boff[1]);
    sw_plan_leaves_offsets(job->c.batch, bi, 1, &boff[2]);
    gemm_update u;
    u.abase = job->a.offset + boff[0];
    u.cbase = job->c.offset + boff[2];
    int64_t bbase = job->b.offset + boff[1];
    for (int64_t jc = j0; jc < j1; jc += NC) {
        u.nc = j1 - jc < NC ? j1 - jc : NC;
        sw_plan_leaves_offsets(job->b.rows, jc, u.nc, s.brow);
        sw_plan_leaves_offsets(job->c.cols, jc, u.nc, s.ccol);
        u.ldc = u.nc > 1 ? s.ccol[1] - s.ccol[0] : 0;
        u.cols_affine = table_is_affine(s.ccol, u.nc, u.ldc);
        for (int64_t pc = 0; pc < K; pc += KC) {
            u.kc = K - pc < KC ? K - pc : KC;
            u.pc = pc;
            /* The scale goes on each entry once its sum is complete. */
            u.last = pc + u.kc == K;
            sw_plan_leaves_offsets(job->a.cols, pc, u.kc, s.acol);
            sw_plan_leaves_offsets(job->b.cols, pc, u.kc, s.bcol);
            pack_panels(s.bp, &job->b, bbase, s.brow, u.nc, s.bcol, u.kc, NR);
            for (int64_t ic = i0; ic < i1; ic += MC) {
                sw_status st = sw_check_interrupt();
                if (st)
                    return st;
                gemm_block(g, &s, &u, ic, i1 - ic < MC ? i1 - ic : MC);
            }
        }
    }
    return SW_OK;
}

/* Products below this many multiply-adds stay on one thread. */
#define SW_GEMM_PARALLEL_FMAS ((int64_t)1 << 21)
/* From this many, each thread gets two tiles, so that a thread slowed by
 * other work on its core hands tiles to the others. */
#define SW_GEMM_SPLIT_FMAS ((int64_t)1 << 26)

static int64_t ceil_div(int64_t x, int64_t y) {
    return (x + y - 1) / y;
}

/*
 * Chooses the tile grid for `threads` threads: tiles_wanted tiles in all,
 * cutting the longer of C's two sides first, so that what is packed again
 * by every tile of a row (A) or column (B) of the grid is the smaller
 * operand.
 */
static void choose_grid(gemm_grid *g, int32_t threads, double fmas) {
    const gemm_f32_job *job = g->job;
    int64_t MR = g->kern->mr, NR = g->kern->nr;
    int64_t mu = ceil_div(job->m, MR), nu = ceil_div(job->n, NR);
    int64_t wanted = threads;
    if (threads > 1 && fmas >= (double)SW_GEMM_SPLIT_FMAS)
        wanted = 2 * (int64_t)threads;
    int64_t per_batch = ceil_div(wanted, job->nbatch);
    int64_t rt = 1, ct = 1;
    if (per_batch > 1) {
        if (job->n >= job->m) {
            ct = per_batch < nu ? per_batch : nu;
            rt = ceil_div(per_batch, ct);
            rt = rt < mu ? rt : mu;
        } else {
            rt = per_batch < mu ? per_batch : mu;
            ct = ceil_div(per_batch, rt);
            ct = ct < nu ? ct : nu;
        }
    }
    g->tile_rows = ceil_div(mu, rt) * MR;
    g->tile_cols = ceil_div(nu, ct) * NR;
    g->row_tiles = ceil_div(job->m, g->tile_rows);
    g->col_tiles = ceil_div(job->n, g->tile_cols);
}

static sw_status gemm_f32(const gemm_f32_job *job) {
    const gemm_kernel *kern = select_kernel();
    gemm_grid g;
    memset(&g, 0, sizeof g);
    g.job = job;
    g.kern = kern;
    double fmas =
        (double)job->m * (double)job->n * (double)job->k * (double)job->nbatch;
    int32_t threads =
        fmas < (double)SW_GEMM_PARALLEL_FMAS ? 1 : sw_pool_threads();
    choose_grid(&g, threads, fmas);
    int64_t chunks = g.row_tiles * g.col_tiles * job->nbatch;
    if (threads > chunks)
        threads = (int32_t)chunks;
    /* Block extents for this call: never more than a tile needs. */
    g.mc_max = g.tile_rows < kern->mc ? g.tile_rows : kern->mc;
    g.nc_max = g.tile_cols < kern->nc ? g.tile_cols : kern->nc;
    g.kc_max = job->k < kern->kc ? job->k : kern->kc;
    g.slot_bytes = slot_size(g.mc_max, g.nc_max, g.kc_max);
    g.scratch = sw_alloc_aligned(g.slot_bytes * (size_t)threads, 0);
    if (!g.scratch)
        return sw_oom();
    sw_status st = sw_parallel_for(chunks, threads, gemm_tile, &g);
    sw_free_aligned(g.scratch);
    return st;
}

/* -------------------------------------------------------------- Int32 */

typedef struct dot_i32_ctx {
    int64_t acc;
} dot_i32_ctx;

static sw_status dot_i32_loop(int64_t n, void *const *ptr, const int64_t *step,
                              void *vctx) {
    dot_i32_ctx *c = vctx;
    const int32_t *a = ptr[0], *b = ptr[1];
    int64_t sa = step[0], sb = step[1], acc = c->acc;
    for (int64_t k = 0; k < n; ++k)
        if (!sw_add_ok(acc, (int64_t)a[k * sa] * b[k * sb], &acc))
            return sw_fail(SW_EOVERFLOW, "%s", accumulation_msg);
    c->acc = acc;
    return SW_OK;
}

static sw_status gemm_i32(const gemm_mat *a, const gemm_mat *b,
                          const gemm_mat *c, int64_t M, int64_t N,
                          int64_t nbatch, int64_t repeat) {
    sw_plan_leaves kops[2] = {a->cols, b->cols};
    static const int64_t zero[2] = {0, 0};
    static const int64_t elsize[2] = {4, 4};
    sw_plan plan;
    int have_plan = sw_plan_build_leaves(2, kops, zero, &plan) == SW_OK;
    if (!have_plan)
        sw_clear_error();
    for (int64_t bi = 0; bi < nbatch; ++bi) {
        int64_t boff[3];
        sw_plan_leaves_offsets(a->batch, bi, 1, &boff[0]);
        sw_plan_leaves_offsets(b->batch, bi, 1, &boff[1]);
        sw_plan_leaves_offsets(c->batch, bi, 1, &boff[2]);
        for (int64_t i = 0; i < M; ++i) {
            int64_t ai, ci;
            sw_plan_leaves_offsets(a->rows, i, 1, &ai);
            sw_plan_leaves_offsets(c->rows, i, 1, &ci);
            for (int64_t j = 0; j < N; ++j) {
                int64_t bj, cj;
                sw_plan_leaves_offsets(b->rows, j, 1, &bj);
                sw_plan_leaves_offsets(c->cols, j, 1, &cj);
                void *base[2] = {(int32_t *)a->data + a->offset + boff[0] + ai,
                                 (int32_t *)b->data + b->offset + boff[1] + bj};
                dot_i32_ctx d = {0};
                sw_status st =
                    have_plan
                        ? sw_plan_run(&plan, base, elsize, dot_i32_loop, &d)
                        : sw_plan_run_leaves(2, kops, zero, base, elsize,
                                             dot_i32_loop, &d);
                if (st)
                    return st;
                if (!sw_mul_ok(d.acc, repeat, &d.acc) || d.acc < INT32_MIN ||
                    d.acc > INT32_MAX)
                    return sw_fail(SW_EOVERFLOW, "%s", accumulation_msg);
                ((int32_t *)c->data)[c->offset + boff[2] + ci + cj] =
                    (int32_t)d.acc;
            }
        }
    }
    return SW_OK;
}

/* -------------------------------------------------------------- entry */

/* The leaf lists of a GEMM without their shared repeats, with storage. */
typedef struct gemm_reduced {
    sw_plan_reduced rows, cols, k, batch;
} gemm_reduced;

/*
 * Drops the repeats of each index (see the header comment) from the
 * operands, whose extents already agree. Returns the repeat of k.
 */
static sw_status drop_gemm_repeats(gemm_mat *a, gemm_mat *b, gemm_mat *c,
                                   gemm_reduced *r, int64_t *krepeat) {
    sw_plan_leaves rows[2] = {c->rows, a->rows}, cols[2] = {c->cols, b->rows};
    sw_plan_leaves ks[2] = {a->cols, b->cols};
    sw_plan_leaves batch[3] = {c->batch, a->batch, b->batch};
    sw_status st = sw_plan_drop_repeats(2, rows, &r->rows);
    if (!st)
        st = sw_plan_drop_repeats(2, cols, &r->cols);
    if (!st)
        st = sw_plan_drop_repeats(2, ks, &r->k);
    if (!st)
        st = sw_plan_drop_repeats(3, batch, &r->batch);
    if (st)
        return st;
    c->rows = r->rows.ops[0];
    a->rows = r->rows.ops[1];
    c->cols = r->cols.ops[0];
    b->rows = r->cols.ops[1];
    a->cols = r->k.ops[0];
    b->cols = r->k.ops[1];
    c->batch = r->batch.ops[0];
    a->batch = r->batch.ops[1];
    b->batch = r->batch.ops[2];
    *krepeat = r->k.repeat;
    return SW_OK;
}

sw_status sw_kernel_gemm(sw_kmat c, sw_kmat a, sw_kmat b) {
    gemm_mat ga, gb, gc;
    sw_status st = gemm_operand(&c, "C", &gc);
    if (st)
        return st;
    st = gemm_operand(&a, "A", &ga);
    if (st)
        return st;
    st = gemm_operand(&b, "B", &gb);
    if (st)
        return st;
    int64_t M = sw_plan_leaves_size(ga.rows);
    int64_t K = sw_plan_leaves_size(ga.cols);
    int64_t N = sw_plan_leaves_size(gb.rows);
    int64_t nbatch = sw_plan_leaves_size(gc.batch);
    st = check_extent("rows of C and A", sw_plan_leaves_size(gc.rows), M);
    if (st)
        return st;
    st = check_extent("columns of C and rows of B",
                      sw_plan_leaves_size(gc.cols), N);
    if (st)
        return st;
    st = check_extent("columns of A and B", sw_plan_leaves_size(gb.cols), K);
    if (st)
        return st;
    st = check_extent("batch extents of C and A", sw_plan_leaves_size(ga.batch),
                      nbatch);
    if (st)
        return st;
    st = check_extent("batch extents of C and B", sw_plan_leaves_size(gb.batch),
                      nbatch);
    if (st)
        return st;
    gemm_reduced red;
    int64_t krepeat = 1;
    if ((st = drop_gemm_repeats(&ga, &gb, &gc, &red, &krepeat)))
        return st;
    M = sw_plan_leaves_size(ga.rows);
    K = sw_plan_leaves_size(ga.cols);
    N = sw_plan_leaves_size(gb.rows);
    nbatch = sw_plan_leaves_size(gc.batch);
    switch (gc.dtype) {
    case SW_DTYPE_FLOAT32: {
        if (ga.dtype != SW_DTYPE_FLOAT32 && ga.dtype != SW_DTYPE_INT32)
            return sw_kbad_dtype("gemm", "A", ga.dtype);
        if (gb.dtype != SW_DTYPE_FLOAT32 && gb.dtype != SW_DTYPE_INT32)
            return sw_kbad_dtype("gemm", "B", gb.dtype);
        gemm_f32_job job = {ga, gb, gc, M, N, K, nbatch, (float)krepeat};
        return gemm_f32(&job);
    }
    case SW_DTYPE_INT32:
        if (ga.dtype != SW_DTYPE_INT32)
            return sw_kbad_dtype("gemm", "A", ga.dtype);
        if (gb.dtype != SW_DTYPE_INT32)
            return sw_kbad_dtype("gemm", "B", gb.dtype);
        return gemm_i32(&ga, &gb, &gc, M, N, nbatch, krepeat);
    default:
        return sw_kbad_dtype("gemm", "C", gc.dtype);
    }
}
