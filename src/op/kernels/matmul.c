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
 * converted while packing, and the buffers (at most 1.7 MiB, allocated once
 * per call with the library allocator) depend on the block sizes only.
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
 * Threads: from 2^21 multiply-adds and two MC blocks of rows, the MC
 * blocks of each rank-KC update run over the library's pool, each packing
 * its rows into its thread's own A buffer while the B panel is shared; a
 * C entry is computed by one thread in one order, so results are the same
 * for every thread count.
 *
 * Interrupts: Float32 checks once per MC x KC x NC block (at most 113
 * MFLOP, about a millisecond), Int32 before every entry's walk.
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
 * The kernels, best first. The AVX-512 blocks: a 12 x 256 B micro-panel
 * (12 KiB) stays in L1 and a 192 x 256 A block (192 KiB) in L2.
 */
static const gemm_kernel kernels[] = {
#if SW_GEMM_X86
    {"avx512", ukernel_avx512, 32, 12, 192, 1536, 256},
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

/*
 * Packs rows [0, m) x columns [0, kc) of a matrix, read at
 * base + row[i] + col[k], into micro-panels of mr_full rows: panel p holds
 * dst[p*mr_full*kc + k*mr_full + i]; rows past m are zero.
 */
static void pack_panels(float *dst, const gemm_mat *x, int64_t base,
                        const int64_t *row, int64_t m, const int64_t *col,
                        int64_t kc, int mr_full) {
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

/* Non-zero if t[i] == t[0] + i*step for every i < n (n >= 1). */
static int table_is_affine(const int64_t *t, int64_t n, int64_t step) {
    for (int64_t i = 1; i < n; ++i)
        if (t[i] != t[0] + i * step)
            return 0;
    return 1;
}

/* ------------------------------------------------------------ Float32 */

typedef struct gemm_f32_job {
    gemm_mat a, b, c;
    int64_t m, n, k, nbatch;
    float scale; /* the repeat count of the dropped k modes */
} gemm_f32_job;

/*
 * One rank-KC update of one B panel, shared by the threads that work on
 * it: each chunk is one MC block of rows, packed into its thread's own A
 * buffer, so a C entry is computed by one thread in the same order for
 * every thread count.
 */
typedef struct gemm_panel {
    const gemm_f32_job *job;
    const gemm_kernel *kern;
    const float *bp;
    const int64_t *acol, *ccol;
    int64_t abase, cbase, nc, kc, ldc, pc;
    int cols_affine, last;
    /* Per thread slot: an A block and its row tables. */
    float *ap;
    int64_t *arow, *crow;
    int64_t ap_stride, rows_stride;
} gemm_panel;

static sw_status gemm_block(void *vctx, int64_t chunk, int32_t slot) {
    const gemm_panel *g = vctx;
    const gemm_f32_job *job = g->job;
    const gemm_kernel *kern = g->kern;
    const int MR = kern->mr, NR = kern->nr;
    int64_t ic = chunk * kern->mc, M = job->m;
    int64_t mc = M - ic < kern->mc ? M - ic : kern->mc;
    int64_t kc = g->kc, nc = g->nc, pc = g->pc, ldc = g->ldc;
    float *ap = g->ap + slot * g->ap_stride;
    int64_t *arow = g->arow + slot * g->rows_stride;
    int64_t *crow = g->crow + slot * g->rows_stride;
    float tile[SW_GEMM_TILE_MAX];
    float *cdata = (float *)job->c.data;
    float scale = job->scale;
    sw_status st = sw_check_interrupt();
    if (st)
        return st;
    sw_plan_leaves_offsets(job->a.rows, ic, mc, arow);
    sw_plan_leaves_offsets(job->c.rows, ic, mc, crow);
    pack_panels(ap, &job->a, g->abase, arow, mc, g->acol, kc, MR);
    /* Tiles may go straight to C when its rows are unit stride and its
     * columns evenly spaced. */
    int direct = SW_KERNELS_FAST && scale == 1.0f && g->cols_affine &&
                 table_is_affine(crow, mc, 1);
    for (int64_t jr = 0; jr < nc; jr += NR) {
        int64_t nr = nc - jr < NR ? nc - jr : NR;
        const float *bpanel = g->bp + jr * kc;
        for (int64_t ir = 0; ir < mc; ir += MR) {
            int64_t mr = mc - ir < MR ? mc - ir : MR;
            const float *apanel = ap + ir * kc;
            if (direct && mr == MR && nr == NR) {
                float *ct = cdata + g->cbase + crow[ir] + g->ccol[jr];
                kern->fn(kc, apanel, bpanel, ct, ldc, pc > 0);
                continue;
            }
            kern->fn(kc, apanel, bpanel, tile, MR, 0);
            for (int64_t j = 0; j < nr; ++j) {
                float *cj = cdata + g->cbase + g->ccol[jr + j];
                const float *tj = tile + j * MR;
                for (int64_t i = 0; i < mr; ++i) {
                    float *ce = cj + crow[ir + i];
                    float v = pc > 0 ? *ce + tj[i] : tj[i];
                    *ce = g->last ? v * scale : v;
                }
            }
        }
    }
    return SW_OK;
}

/* Products below this many multiply-adds stay on one thread. */
#define SW_GEMM_PARALLEL_FMAS ((int64_t)1 << 21)

static sw_status gemm_f32(const gemm_f32_job *job) {
    int64_t M = job->m, N = job->n, K = job->k;
    const gemm_kernel *kern = select_kernel();
    const int MR = kern->mr, NR = kern->nr;
    const int64_t MC = kern->mc, NC = kern->nc, KC = kern->kc;
    /* Block extents for this call: never more than the matrix needs. */
    int64_t mcap = (M + MR - 1) / MR * MR, ncap = (N + NR - 1) / NR * NR;
    int64_t mc_max = mcap < MC ? mcap : MC;
    int64_t nc_max = ncap < NC ? ncap : NC;
    int64_t kc_max = K < KC ? K : KC;
    int64_t mblocks = (M + MC - 1) / MC;
    double fmas = (double)M * (double)N * (double)K * (double)job->nbatch;
    int32_t threads = fmas < (double)SW_GEMM_PARALLEL_FMAS || mblocks < 2
                          ? 1
                          : sw_pool_threads();
    if (threads > mblocks)
        threads = (int32_t)mblocks;
    /* One A block and its two row tables per thread; B's panel, its row
     * table and the column tables are shared. */
    size_t floats = (size_t)(threads * mc_max * kc_max + kc_max * nc_max);
    size_t tables = (size_t)(threads * 2 * mc_max + 2 * nc_max + 2 * kc_max);
    float *buf =
        sw_alloc_aligned(floats * sizeof(float) + tables * sizeof(int64_t), 0);
    if (!buf)
        return sw_oom();
    gemm_panel g;
    memset(&g, 0, sizeof g);
    g.job = job;
    g.kern = kern;
    g.ap = buf;
    g.ap_stride = mc_max * kc_max;
    float *bp = buf + threads * mc_max * kc_max;
    g.bp = bp;
    int64_t *tab = (int64_t *)(void *)(buf + floats);
    g.arow = tab;
    g.crow = tab + threads * mc_max;
    g.rows_stride = mc_max;
    int64_t *brow = g.crow + threads * mc_max;
    int64_t *ccol = brow + nc_max, *acol = ccol + nc_max;
    int64_t *bcol = acol + kc_max;
    g.ccol = ccol;
    g.acol = acol;
    sw_status st = SW_OK;

    for (int64_t bi = 0; bi < job->nbatch && !st; ++bi) {
        int64_t boff[3];
        sw_plan_leaves_offsets(job->a.batch, bi, 1, &boff[0]);
        sw_plan_leaves_offsets(job->b.batch, bi, 1, &boff[1]);
        sw_plan_leaves_offsets(job->c.batch, bi, 1, &boff[2]);
        g.abase = job->a.offset + boff[0];
        int64_t bbase = job->b.offset + boff[1];
        g.cbase = job->c.offset + boff[2];
        for (int64_t jc = 0; jc < N && !st; jc += NC) {
            int64_t nc = N - jc < NC ? N - jc : NC;
            sw_plan_leaves_offsets(job->b.rows, jc, nc, brow);
            sw_plan_leaves_offsets(job->c.cols, jc, nc, ccol);
            g.nc = nc;
            g.ldc = nc > 1 ? ccol[1] - ccol[0] : 0;
            g.cols_affine = table_is_affine(ccol, nc, g.ldc);
            for (int64_t pc = 0; pc < K && !st; pc += KC) {
                int64_t kc = K - pc < KC ? K - pc : KC;
                sw_plan_leaves_offsets(job->a.cols, pc, kc, acol);
                sw_plan_leaves_offsets(job->b.cols, pc, kc, bcol);
                pack_panels(bp, &job->b, bbase, brow, nc, bcol, kc, NR);
                g.kc = kc;
                g.pc = pc;
                /* The scale goes on each entry once its sum is complete. */
                g.last = pc + kc == K;
                st = sw_parallel_for(mblocks, threads, gemm_block, &g);
            }
        }
    }
    sw_free_aligned(buf);
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
