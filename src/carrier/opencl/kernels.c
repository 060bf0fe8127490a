/*
 * Generated OpenCL C kernels and their cache.
 *
 * Every kernel is OpenCL C source written here from the operation and the
 * iteration plan of its operands (layout/plan.h): the plan's loop extents
 * and each operand's strides become constants of the source, so strided,
 * hierarchical and broadcast (stride 0) operands run in place, without a
 * copy into a compact buffer first, and the compiler sees constant
 * divisors. Only the buffers, the operands' element offsets and the
 * scalar of the scalar forms are kernel arguments.
 *
 * Three shapes of kernel are generated:
 *  - a map (sw_clk_map): one work item per visit of the joint plan of the
 *    output and its inputs, after shared repeats are dropped; operands
 *    without a common refinement (or with more modes than a plan holds)
 *    each decompose the logical index over their own leaves instead;
 *  - a row sum (sw_clk_reduce): for a short summed mode one work item
 *    per output element, which walks the summed mode's leaves in nested
 *    loops; for a long one two passes, partial sums of fixed parts by
 *    work groups then one work item per output adding them in order (see
 *    reduce_parallel);
 *  - a matrix product (sw_clk_gemm): Float32 by 64 x 64 tiles staged
 *    through local memory, each work item accumulating a 4 x 4 block;
 *    Int32 one work item per output, accumulated exactly in 64 bits.
 *
 * The cache: the generated source is the key (it spells out the
 * operation, the dtypes and the plan's extents and strides, so equal
 * sources are the same specialisation and different ones are not), per
 * device. A source is compiled once; later launches set the arguments of
 * the cached kernel under its lock and enqueue it. The cache holds at
 * most CACHE_MAX entries; past that the oldest unused one goes.
 *
 * Launches are asynchronous: the kernel is enqueued on the device's
 * in-order queue and the call returns; reads, moves and waits enqueued
 * later see its results. Int32 kernels that can leave the int32 range
 * raise a flag in a small buffer instead, and the launch then reads the
 * flag back, which waits for the kernel: an overflow is reported by the
 * call that caused it, as the CPU kernels report it.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "carrier/opencl/internal.h"
#include "layout/plan.h"

/* ------------------------------------------------------ source builder */

typedef struct sb {
    char *buf;
    size_t len, cap;
    int failed;
} sb;

static void sb_add(sb *b, const char *fmt, ...) SW_PRINTF(2, 3);

static void sb_add(sb *b, const char *fmt, ...) {
    if (b->failed)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = b->cap - b->len;
        int n = vsnprintf(b->buf ? b->buf + b->len : NULL, room, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->failed = 1;
            return;
        }
        if ((size_t)n < room) {
            b->len += (size_t)n;
            return;
        }
        size_t want = b->cap ? b->cap * 2 : 4096;
        while (want - b->len <= (size_t)n)
            want *= 2;
        char *grown = sw_realloc(b->buf, want);
        if (!grown) {
            b->failed = 1;
            return;
        }
        b->buf = grown;
        b->cap = want;
    }
}

static void sb_free(sb *b) {
    sw_free(b->buf);
    b->buf = NULL;
    b->len = b->cap = 0;
}

static const char *cl_type(sw_dtype dt) {
    return dt == SW_DTYPE_INT32 ? "int" : "float";
}

/* --------------------------------------------------------------- cache */

typedef struct clk_entry {
    struct clk_entry *next;
    sw_cl_device *device;
    uint64_t hash;
    char *source;
    cl_program program;
    cl_kernel kernel;
    pthread_mutex_t lock; /* guards the kernel's arguments until enqueued */
    atomic_int users;
} clk_entry;

#define CACHE_MAX 512

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static clk_entry *cache_head; /* newest first */
static int64_t cache_count;
static atomic_int_fast64_t compiles, launches;

static uint64_t fnv1a(const char *s, size_t n) {
    uint64_t h = UINT64_C(14695981039346656037);
    for (size_t i = 0; i < n; ++i) {
        h ^= (unsigned char)s[i];
        h *= UINT64_C(1099511628211);
    }
    return h;
}

/* Entries belong to the process, as the devices do (runtime.c): they
 * are allocated outside the library's counted allocator, whose live count
 * tests compare before and after their work. */
static void entry_free(clk_entry *e) {
    if (e->kernel)
        (void)sw_cl.ReleaseKernel(e->kernel);
    if (e->program)
        (void)sw_cl.ReleaseProgram(e->program);
    pthread_mutex_destroy(&e->lock);
    free(e->source);
    free(e);
}

/* Drops the oldest unused entries past CACHE_MAX. Under cache_lock. */
static void trim_locked(void) {
    while (cache_count > CACHE_MAX) {
        clk_entry **victim = NULL;
        for (clk_entry **p = &cache_head; *p; p = &(*p)->next)
            if (atomic_load(&(*p)->users) == 0)
                victim = p;
        if (!victim)
            return;
        clk_entry *e = *victim;
        *victim = e->next;
        --cache_count;
        entry_free(e);
    }
}

/* Whether divisions and square roots can be asked to round correctly. */
static int exact_divide(sw_cl_device *d) {
    cl_bitfield config = 0;
    const cl_bitfield correctly_rounded = (cl_bitfield)1 << 7;
    if (sw_cl.GetDeviceInfo(d->id, SW_CL_DEVICE_SINGLE_FP_CONFIG, sizeof config,
                            &config, NULL) != SW_CL_SUCCESS)
        return 0;
    return (config & correctly_rounded) != 0;
}

/* Compiles source for d into a fresh entry (not yet in the cache). */
static sw_status compile(sw_cl_device *d, const char *source, size_t len,
                         uint64_t hash, clk_entry **out) {
    clk_entry *e = calloc(1, sizeof *e);
    if (!e)
        return sw_oom();
    e->source = malloc(len + 1);
    if (!e->source) {
        free(e);
        return sw_oom();
    }
    memcpy(e->source, source, len + 1);
    e->device = d;
    e->hash = hash;
    pthread_mutex_init(&e->lock, NULL);
    sw_status st = SW_OK;
    cl_int err = SW_CL_SUCCESS;
    if (sw_cl_injected(SW_OPENCL_STAGE_COMPILE)) {
        st = sw_cl_fail_injected("kernel compilation");
        goto fail;
    }
    e->program =
        sw_cl.CreateProgramWithSource(d->context, 1, &source, &len, &err);
    if (!e->program) {
        st = sw_cl_fail("program creation", err);
        goto fail;
    }
    const char *options =
        exact_divide(d) ? "-cl-fp32-correctly-rounded-divide-sqrt" : "";
    err = sw_cl.BuildProgram(e->program, 1, &d->id, options, NULL, NULL);
    if (err != SW_CL_SUCCESS) {
        char log[600] = "";
        (void)sw_cl.GetProgramBuildInfo(e->program, d->id,
                                        SW_CL_PROGRAM_BUILD_LOG, sizeof log - 1,
                                        log, NULL);
        st = sw_fail(SW_ERUNTIME,
                     "OpenCL kernel compilation failed on %s (error %d): %s",
                     d->name, (int)err, log);
        goto fail;
    }
    e->kernel = sw_cl.CreateKernel(e->program, "sw_kernel", &err);
    if (!e->kernel) {
        st = sw_cl_fail("kernel creation", err);
        goto fail;
    }
    atomic_fetch_add(&compiles, 1);
    *out = e;
    return SW_OK;
fail:
    entry_free(e);
    return st;
}

/*
 * The cached kernel of source on d, compiled if it is new; the caller
 * holds it (users) until release_entry. Compiles run under the cache
 * lock: one compile per specialisation, even when threads race for it.
 */
static sw_status lookup(sw_cl_device *d, const sb *src, clk_entry **out) {
    uint64_t h = fnv1a(src->buf, src->len);
    pthread_mutex_lock(&cache_lock);
    clk_entry **p = &cache_head;
    for (; *p; p = &(*p)->next) {
        clk_entry *e = *p;
        if (e->hash == h && e->device == d && strcmp(e->source, src->buf) == 0)
            break;
    }
    sw_status st = SW_OK;
    clk_entry *e = *p;
    if (e) {
        *p = e->next; /* to the front: the newest use */
    } else {
        st = compile(d, src->buf, src->len, h, &e);
        if (!st)
            ++cache_count;
    }
    if (!st) {
        e->next = cache_head;
        cache_head = e;
        atomic_fetch_add(&e->users, 1);
        trim_locked();
        *out = e;
    }
    pthread_mutex_unlock(&cache_lock);
    return st;
}

static void release_entry(clk_entry *e) {
    atomic_fetch_sub(&e->users, 1);
}

void sw_opencl_kernel_stats(int64_t *entries, int64_t *compiled,
                            int64_t *launched) {
    pthread_mutex_lock(&cache_lock);
    if (entries)
        *entries = cache_count;
    pthread_mutex_unlock(&cache_lock);
    if (compiled)
        *compiled = (int64_t)atomic_load(&compiles);
    if (launched)
        *launched = (int64_t)atomic_load(&launches);
}

/* ------------------------------------------------------------- launch */

typedef struct karg {
    size_t size;
    const void *value;
} karg;

#define MAX_KARGS 16

/*
 * Sets the arguments and enqueues the cached kernel over global[0..dims)
 * (local NULL: the runtime's choice), then flushes so that the device
 * starts. With a flag buffer, waits for the kernel and reads the flag:
 * *raised is set when a work item raised it.
 */
static sw_status launch(sw_cl_device *d, const sb *src, int32_t nargs,
                        const karg *args, cl_uint dims, const size_t *global,
                        const size_t *local, cl_mem flag, int *raised) {
    if (src->failed)
        return sw_oom();
    clk_entry *e = NULL;
    sw_status st = lookup(d, src, &e);
    if (st)
        return st;
    cl_int err = SW_CL_SUCCESS;
    pthread_mutex_lock(&e->lock);
    for (int32_t i = 0; i < nargs && err == SW_CL_SUCCESS; ++i)
        err = sw_cl.SetKernelArg(e->kernel, (cl_uint)i, args[i].size,
                                 args[i].value);
    if (err != SW_CL_SUCCESS) {
        st = sw_cl_fail("setting a kernel argument", err);
    } else if (sw_cl_injected(SW_OPENCL_STAGE_ENQUEUE)) {
        st = sw_cl_fail_injected("kernel launch");
    } else {
        err = sw_cl.EnqueueNDRangeKernel(d->queue, e->kernel, dims, NULL,
                                         global, local, 0, NULL, NULL);
        if (err != SW_CL_SUCCESS)
            st = sw_cl_fail("kernel launch", err);
    }
    pthread_mutex_unlock(&e->lock);
    release_entry(e);
    if (st)
        return st;
    atomic_fetch_add(&launches, 1);
    if (!flag) {
        (void)sw_cl.Flush(d->queue);
        return SW_OK;
    }
    cl_int value = 0;
    err = sw_cl.EnqueueReadBuffer(d->queue, flag, 1, 0, sizeof value, &value, 0,
                                  NULL, NULL);
    if (err != SW_CL_SUCCESS)
        return sw_cl_fail("reading the overflow flag", err);
    *raised = value != 0;
    return SW_OK;
}

/* A one-int buffer holding 0, for the overflow flag of Int32 kernels. */
static sw_status flag_new(sw_cl_device *d, cl_mem *out) {
    cl_int zero = 0, err = SW_CL_SUCCESS;
    cl_mem m = sw_cl.CreateBuffer(
        d->context, SW_CL_MEM_READ_WRITE | SW_CL_MEM_COPY_HOST_PTR, sizeof zero,
        &zero, &err);
    if (!m)
        return sw_cl_fail("flag buffer allocation", err);
    *out = m;
    return SW_OK;
}

/* ------------------------------------------------------ index algebra */

/* Leaves without extent-1 modes, neighbours merged where contiguous. */
typedef struct flat {
    int32_t n;
    int64_t ext[SW_PLAN_MAX_LEAVES];
    int64_t str[SW_PLAN_MAX_LEAVES];
} flat;

static void flatten(sw_plan_leaves l, flat *f) {
    f->n = 0;
    for (int32_t i = 0; i < l.nleaf; ++i) {
        if (l.extent[i] == 1)
            continue;
        if (f->n > 0 && l.stride[i] == f->ext[f->n - 1] * f->str[f->n - 1]) {
            f->ext[f->n - 1] *= l.extent[i];
            continue;
        }
        f->ext[f->n] = l.extent[i];
        f->str[f->n] = l.stride[i];
        f->n++;
    }
}

/*
 * Source adding to variable p the offset of logical index (variable idx,
 * consumed) over leaves f: one remainder and quotient per leaf, the last
 * leaf taking what is left.
 */
static void gen_decompose(sb *b, const flat *f, const char *idx,
                          const char *p) {
    for (int32_t i = 0; i < f->n; ++i) {
        if (i + 1 == f->n) {
            if (f->str[i] != 0)
                sb_add(b, "  %s += %s * %" PRId64 "L;\n", p, idx, f->str[i]);
            break;
        }
        if (f->str[i] != 0)
            sb_add(b, "  %s += (%s %% %" PRId64 "L) * %" PRId64 "L;\n", p, idx,
                   f->ext[i], f->str[i]);
        sb_add(b, "  %s /= %" PRId64 "L;\n", idx, f->ext[i]);
    }
}

/*
 * Source setting p<k> (declared by the caller, holding operand k's
 * offset) for the work item's visit idx (consumed): through the joint
 * plan of the operands when they have one, else each operand over its own
 * leaves (the fallback walk's rule: the same logical index, decomposed
 * per operand).
 */
static sw_status gen_visit(sb *b, int32_t nops, const sw_plan_leaves *ops,
                           int64_t *offset_adjust) {
    static const int64_t zero[SW_PLAN_MAX_OPS] = {0, 0, 0, 0};
    sw_plan plan;
    sw_status st = sw_plan_build_leaves(nops, ops, zero, &plan);
    if (st == SW_ENOTIMPL) {
        sw_clear_error();
        sb_add(b, "  long r;\n");
        for (int32_t k = 0; k < nops; ++k) {
            flat f;
            flatten(ops[k], &f);
            offset_adjust[k] = 0;
            sb_add(b, "  r = idx;\n");
            char p[16];
            snprintf(p, sizeof p, "p%d", (int)k);
            gen_decompose(b, &f, "r", p);
        }
        return SW_OK;
    }
    if (st)
        return st;
    for (int32_t k = 0; k < nops; ++k)
        offset_adjust[k] = plan.offset[k];
    for (int32_t d = 0; d < plan.ndim; ++d) {
        int last = d + 1 == plan.ndim;
        if (plan.extent[d] == 1)
            continue;
        if (last)
            sb_add(b, "  c = idx;\n");
        else
            sb_add(b, "  c = idx %% %" PRId64 "L; idx /= %" PRId64 "L;\n",
                   plan.extent[d], plan.extent[d]);
        for (int32_t k = 0; k < nops; ++k)
            if (plan.stride[k][d] != 0)
                sb_add(b, "  p%d += c * %" PRId64 "L;\n", (int)k,
                       plan.stride[k][d]);
    }
    return SW_OK;
}

/* ---------------------------------------------------------- expressions */

/* The exponents that Float32 pow computes by fixed expressions, as the
 * CPU kernels do (elementwise.c): 0, 1, 2, 3, 0.5, -1; -1 for others. */
static int pow_kind(float e) {
    static const float exps[6] = {0.0f, 1.0f, 2.0f, 3.0f, 0.5f, -1.0f};
    for (int k = 0; k < 6; ++k)
        if (e == exps[k])
            return k;
    return -1;
}

static const char *pow_fixed(int kind) {
    switch (kind) {
    case 0:
        return "1.0f";
    case 1:
        return "X";
    case 2:
        return "X * X";
    case 3:
        return "X * X * X";
    case 4:
        return "(X == -INFINITY ? INFINITY : sqrt(X) + 0.0f)";
    default:
        return "1.0f / X";
    }
}

/* Writes pow_fixed(kind) with X replaced by var. */
static void add_fixed(sb *b, int kind, const char *var) {
    for (const char *s = pow_fixed(kind); *s; ++s) {
        if (*s == 'X')
            sb_add(b, "%s", var);
        else
            sb_add(b, "%c", *s);
    }
}

/* Float32 helpers every map kernel may call. */
static const char float_helpers[] =
    "#pragma OPENCL FP_CONTRACT OFF\n"
    "static float sw_sigmoid(float x) {\n"
    "  if (x >= 0.0f) return 1.0f / (1.0f + exp(-x));\n"
    "  float e = exp(x); return e / (1.0f + e);\n"
    "}\n"
    "static float sw_gelu_h(float x) { return 0.5f * erfc(fabs(x) * "
    "0.70710678118654752f); }\n"
    /* x - x*h keeps gelu's relative accuracy where 1 + erf cancels; past
     * the point where h underflows the limits are x and -0 (also at the
     * infinities, where x*h would be NaN). */
    "static float sw_gelu(float x) {\n"
    "  float h = sw_gelu_h(x);\n"
    "  if (h == 0.0f) return x >= 0.0f ? x : -0.0f;\n"
    "  return x >= 0.0f ? x - x * h : x * h;\n"
    "}\n"
    "static float sw_silu(float x) {\n"
    "  if (x >= 0.0f) return x / (1.0f + exp(-x));\n"
    "  float e = exp(x);\n"
    "  return e == 0.0f ? -0.0f : x * e / (1.0f + e);\n"
    "}\n";

/* The Float32 value of an activation of x (variable a). */
static void gen_act(sb *b, sw_kact op) {
    switch (op) {
    case SW_KACT_EXP:
        sb_add(b, "exp(a)");
        break;
    case SW_KACT_RELU:
        sb_add(b, "(a > 0.0f ? a : 0.0f)");
        break;
    case SW_KACT_SIGMOID:
        sb_add(b, "sw_sigmoid(a)");
        break;
    case SW_KACT_TANH:
        sb_add(b, "tanh(a)");
        break;
    case SW_KACT_GELU:
        sb_add(b, "sw_gelu(a)");
        break;
    case SW_KACT_SILU:
        sb_add(b, "sw_silu(a)");
        break;
    case SW_KACT_SOFTPLUS:
        sb_add(b, "(log1p(exp(-fabs(a))) + fmax(a, 0.0f))");
        break;
    case SW_KACT_ELU:
        sb_add(b, "(a > 0.0f ? a : expm1(a))");
        break;
    case SW_KACT_LEAKY_RELU:
        sb_add(b, "(a >= 0.0f ? a : 0.01f * a)");
        break;
    default:
        b->failed = 1;
        break;
    }
}

/* The Float32 value g * f'(x) with g in a and x in b_. */
static void gen_act_grad(sb *b, sw_kact op) {
    switch (op) {
    case SW_KACT_EXP:
        sb_add(b, "a * exp(b_)");
        break;
    case SW_KACT_RELU:
        sb_add(b, "(b_ > 0.0f ? a : 0.0f)");
        break;
    case SW_KACT_SIGMOID:
        sb_add(b, "a * sw_sigmoid(b_) * (1.0f - sw_sigmoid(b_))");
        break;
    case SW_KACT_TANH:
        sb_add(b, "a * (1.0f - tanh(b_) * tanh(b_))");
        break;
    case SW_KACT_GELU:
        sb_add(b, "a * ((b_ >= 0.0f ? 1.0f - sw_gelu_h(b_) : sw_gelu_h(b_)) + "
                  "b_ * exp(-0.5f * b_ * b_) * 0.39894228040143268f)");
        break;
    case SW_KACT_SILU:
        sb_add(b, "a * (sw_sigmoid(b_) + b_ * sw_sigmoid(b_) * (1.0f - "
                  "sw_sigmoid(b_)))");
        break;
    case SW_KACT_SOFTPLUS:
        sb_add(b, "a * sw_sigmoid(b_)");
        break;
    case SW_KACT_ELU:
        sb_add(b, "(b_ > 0.0f ? a : a * exp(b_))");
        break;
    case SW_KACT_LEAKY_RELU:
        sb_add(b, "(b_ >= 0.0f ? a : 0.01f * a)");
        break;
    default:
        b->failed = 1;
        break;
    }
}

/* The number of inputs of a map expression. */
static int32_t expr_arity(sw_clk_expr e) {
    switch (e.family) {
    case SW_CLK_ELEM:
        return sw_kelem_arity((sw_kelem)e.code);
    case SW_CLK_ACT_GRAD:
        return 2;
    default:
        return 1;
    }
}

/* Whether the Int32 form of an expression can leave the int32 range. */
static int int_checked(sw_clk_expr e) {
    return e.family == SW_CLK_ELEM;
}

/*
 * The body of a map kernel: the output element o[p0] from the inputs
 * read into a, b_, c_ (converted to the output's type). Returns 0 when
 * the expression has no form for the dtypes.
 */
static int gen_map_body(sb *b, sw_clk_expr e, sw_dtype out, float s) {
    if (out == SW_DTYPE_FLOAT32) {
        sb_add(b, "  o[p0] = ");
        switch (e.family) {
        case SW_CLK_COPY:
            sb_add(b, "a");
            break;
        case SW_CLK_ACT:
            gen_act(b, (sw_kact)e.code);
            break;
        case SW_CLK_ACT_GRAD:
            gen_act_grad(b, (sw_kact)e.code);
            break;
        case SW_CLK_ELEM:
            switch ((sw_kelem)e.code) {
            case SW_KELEM_ADD:
                sb_add(b, "a + b_");
                break;
            case SW_KELEM_SUB:
                sb_add(b, "a - b_");
                break;
            case SW_KELEM_MUL:
                sb_add(b, "a * b_");
                break;
            case SW_KELEM_DIV:
                sb_add(b, "a / b_");
                break;
            case SW_KELEM_NEG:
                sb_add(b, "-a");
                break;
            case SW_KELEM_MUL_SCALAR:
                sb_add(b, "a * s");
                break;
            case SW_KELEM_POW_SCALAR:
                if (pow_kind(s) >= 0)
                    add_fixed(b, pow_kind(s), "a");
                else
                    sb_add(b, "pow(a, s)");
                break;
            case SW_KELEM_POW_GRAD:
                if (s == 0.0f) {
                    sb_add(b, "0.0f");
                } else if (pow_kind(s - 1.0f) >= 0 && pow_kind(s - 1.0f) != 5) {
                    sb_add(b, "a * s * (");
                    add_fixed(b, pow_kind(s - 1.0f), "b_");
                    sb_add(b, ")");
                } else {
                    sb_add(b, "a * s * pow(b_, s - 1.0f)");
                }
                break;
            case SW_KELEM_DIV_GRAD_RHS:
                sb_add(b, "-a * b_ / (c_ * c_)");
                break;
            default:
                return 0;
            }
            break;
        default:
            return 0;
        }
        sb_add(b, ";\n");
        return 1;
    }
    /* Int32 outputs: exact, checked where a result can leave the range. */
    switch (e.family) {
    case SW_CLK_COPY:
        sb_add(b, "  o[p0] = a;\n");
        return 1;
    case SW_CLK_ACT:
        if (e.code != SW_KACT_RELU)
            return 0;
        sb_add(b, "  o[p0] = a > 0 ? a : 0;\n");
        return 1;
    case SW_CLK_ELEM:
        break;
    default:
        return 0;
    }
    switch ((sw_kelem)e.code) {
    case SW_KELEM_ADD:
        sb_add(b, "  long r = (long)a + (long)b_;\n");
        break;
    case SW_KELEM_SUB:
        sb_add(b, "  long r = (long)a - (long)b_;\n");
        break;
    case SW_KELEM_MUL:
        sb_add(b, "  long r = (long)a * (long)b_;\n");
        break;
    case SW_KELEM_NEG:
        sb_add(b, "  long r = -(long)a;\n");
        break;
    case SW_KELEM_MUL_SCALAR:
        /* si is clamped to +-2**32 by the caller: the product is exact in
         * 64 bits, and any clamped factor overflows for a non-zero a. */
        sb_add(b, "  long r = (long)a * si;\n");
        break;
    case SW_KELEM_POW_SCALAR:
        /* Step by step, as the CPU kernel: |a| <= 1 directly, otherwise
         * the magnitude at least doubles per step. */
        sb_add(b, "  long r = 1;\n"
                  "  if (si == 0) r = 1;\n"
                  "  else if (a == 0 || a == 1) r = a;\n"
                  "  else if (a == -1) r = (si & 1) ? -1 : 1;\n"
                  "  else for (long t = 0; t < si; ++t) {\n"
                  "    r *= a;\n"
                  "    if (r < INT_MIN || r > INT_MAX) break;\n"
                  "  }\n");
        break;
    default:
        return 0;
    }
    sb_add(b, "  if (r < INT_MIN || r > INT_MAX) flag[0] = 1;\n"
              "  o[p0] = (int)r;\n");
    return 1;
}

/* ------------------------------------------------------------------ map */

static const char int32_range_msg[] =
    "OpenCL Int32 operation result is out of int32 range";

sw_status sw_clk_map(sw_cl_device *d, sw_clk_expr e, int32_t nops,
                     const sw_clk_operand *ops, sw_kscalar s) {
    int32_t arity = expr_arity(e);
    if (nops != arity + 1 || arity < 1 || arity > 3)
        return sw_fail(SW_EVALUE,
                       "OpenCL map kernel: %d operands for an "
                       "expression of %d inputs",
                       (int)nops, (int)arity);
    sw_dtype out = ops[0].dtype;
    sw_plan_leaves leaves[SW_PLAN_MAX_OPS];
    for (int32_t k = 0; k < nops; ++k) {
        leaves[k] = ops[k].leaves;
        if (k > 0 &&
            sw_plan_leaves_size(leaves[k]) != sw_plan_leaves_size(leaves[0]))
            return sw_fail(SW_EVALUE,
                           "OpenCL map kernel: operand %d has %" PRId64
                           " elements, the output %" PRId64,
                           (int)k, sw_plan_leaves_size(leaves[k]),
                           sw_plan_leaves_size(leaves[0]));
    }
    /* Every map is an assignment, so shared repeats are visited once. */
    sw_plan_reduced red;
    sw_status st = sw_plan_drop_repeats(nops, leaves, &red);
    if (st)
        return st;
    int64_t visits = sw_plan_leaves_size(red.ops[0]);
    float sf = (float)s.f;
    int checked = out == SW_DTYPE_INT32 && int_checked(e);
    sb b = {0};
    sb_add(&b, "%s", float_helpers);
    sb_add(&b, "__kernel void sw_kernel(__global %s *o, long o_off",
           cl_type(out));
    static const char *const names[3] = {"x0", "x1", "x2"};
    for (int32_t k = 1; k < nops; ++k)
        sb_add(&b, ", __global const %s *%s, long %s_off",
               cl_type(ops[k].dtype), names[k - 1], names[k - 1]);
    sb_add(&b, ", float s, long si, __global int *flag) {\n"
               "  long idx = (long)get_global_id(0);\n"
               "  long c = 0;\n");
    for (int32_t k = 0; k < nops; ++k)
        sb_add(&b, "  long p%d = %s;\n", (int)k,
               k == 0   ? "o_off"
               : k == 1 ? "x0_off"
               : k == 2 ? "x1_off"
                        : "x2_off");
    int64_t adjust[SW_PLAN_MAX_OPS] = {0};
    if ((st = gen_visit(&b, nops, red.ops, adjust))) {
        sb_free(&b);
        return st;
    }
    const char *vt = cl_type(out);
    static const char *const vars[3] = {"a", "b_", "c_"};
    for (int32_t k = 1; k < nops; ++k)
        sb_add(&b, "  %s %s = (%s)%s[p%d];\n", vt, vars[k - 1], vt,
               names[k - 1], (int)k);
    if (!gen_map_body(&b, e, out, sf)) {
        sb_free(&b);
        return sw_fail(SW_ETYPE,
                       "OpenCL map kernel: no %s form of this "
                       "operation",
                       out == SW_DTYPE_INT32 ? "Int32" : "Float32");
    }
    sb_add(&b, "}\n");

    cl_mem flag = NULL;
    if (checked && (st = flag_new(d, &flag))) {
        sb_free(&b);
        return st;
    }
    int64_t si = s.i;
    if (e.family == SW_CLK_ELEM && e.code == SW_KELEM_MUL_SCALAR) {
        const int64_t lim = (int64_t)1 << 32;
        si = si > lim ? lim : si < -lim ? -lim : si;
    }
    int64_t offs[SW_PLAN_MAX_OPS];
    karg args[MAX_KARGS];
    int32_t n = 0;
    for (int32_t k = 0; k < nops; ++k) {
        offs[k] = ops[k].offset + adjust[k];
        args[n++] = (karg){sizeof(cl_mem), &ops[k].mem};
        args[n++] = (karg){sizeof(int64_t), &offs[k]};
    }
    args[n++] = (karg){sizeof(float), &sf};
    args[n++] = (karg){sizeof(int64_t), &si};
    cl_mem flag_arg = flag;
    args[n++] = (karg){sizeof(cl_mem), &flag_arg};
    size_t global = (size_t)visits;
    int raised = 0;
    st = launch(d, &b, n, args, 1, &global, NULL, flag, &raised);
    sb_free(&b);
    if (flag)
        (void)sw_cl.ReleaseMemObject(flag);
    if (!st && raised)
        st = sw_fail(SW_EOVERFLOW, "%s", int32_range_msg);
    return st;
}

/* -------------------------------------------------------------- reduce */

/* Source of the offset function FN(i) over leaves f. */
static void gen_offset_fn(sb *b, const char *fn, const flat *f) {
    sb_add(b, "static long %s(long i) {\n  long p = 0;\n", fn);
    gen_decompose(b, f, "i", "p");
    sb_add(b, "  return p;\n}\n");
}

/* Nested loops over leaves f (outermost the last leaf) adding x's
 * elements from base into acc. */
static void gen_sum_loops(sb *b, const flat *f, const char *acc_type) {
    if (f->n == 0) {
        sb_add(b, "  acc += (%s)x[px];\n", acc_type);
        return;
    }
    sb_add(b, "  long q%d = px;\n", (int)f->n);
    for (int32_t i = f->n - 1; i >= 0; --i)
        sb_add(b,
               "  for (long j%d = 0; j%d < %" PRId64 "L; ++j%d) {\n"
               "  long q%d = q%d + j%d * %" PRId64 "L;\n",
               (int)i, (int)i, f->ext[i], (int)i, (int)i, (int)i + 1, (int)i,
               f->str[i]);
    sb_add(b, "  acc += (%s)x[q0];\n", acc_type);
    for (int32_t i = 0; i < f->n; ++i)
        sb_add(b, "  }\n");
}

static const char accumulation_msg[] = "OpenCL integer accumulation overflowed";

/*
 * The parallel form of the row sum. A row whose summed mode has more than
 * RED_PART_MIN elements is cut into P parts of len elements each (the
 * last one shorter), a partition that depends on that length alone:
 *
 *   len = RED_LANES * ceil(max(RED_PART_MIN, ceil(K / RED_PARTS_MAX))
 *                          / RED_LANES),  P = ceil(K / len)
 *
 * Pass one runs a work group of RED_LANES work items per (row, part):
 * lane l takes the l-th of RED_LANES equal stretches of the part (the
 * last ones shorter or empty) and adds element u of every run of RED_ILP
 * neighbours into its own sum u, in order (independent sums that a CPU
 * device adds as one vector; the last, shorter run likewise), then its
 * RED_ILP sums pairwise; the lanes' sums are then added pairwise in local
 * memory, halving the count each step, into the part's partial sum. Pass
 * two, one work item per row, adds the row's P partials in order, applies
 * the broadcast multiplier and stores. Every addition has a fixed place
 * in that tree, whatever the device's scheduling, so a sum is the same
 * from run to run (Float32 partials in float, Int32 ones exact in 64
 * bits). On PoCL, few large parts run fastest (two cores; each part's
 * lanes become vector lanes), hence RED_PARTS_MAX.
 */
#define RED_LANES 64
#define RED_PART_MIN 4096
#define RED_PARTS_MAX 64
#define RED_ILP 8 /* the sums of a lane, added pairwise at its end */
_Static_assert(RED_ILP == 8, "gen_reduce_parts adds eight lane sums");

/* Source storing acc (the row's sum) at o[p0], after the broadcast
 * multiplier and, for Int32, the range checks. Closes the kernel. */
static void gen_reduce_store(sb *b, int integer, int64_t repeat) {
    if (integer) {
        sb_add(b, "  if (acc < INT_MIN || acc > INT_MAX) { flag[0] = 1; "
                  "acc = 0; }\n");
        if (repeat > 1) {
            /* The sum fits int32 here, so acc * repeat is exact in 64
             * bits whenever repeat < 2**32. */
            if (repeat >= ((int64_t)1 << 32))
                sb_add(b, "  if (acc != 0) flag[0] = 1;\n");
            else
                sb_add(b,
                       "  acc *= %" PRId64 "L;\n"
                       "  if (acc < INT_MIN || acc > INT_MAX) flag[0] = 1;\n",
                       repeat);
        }
        sb_add(b, "  o[p0] = (int)acc;\n}\n");
    } else {
        if (repeat > 1)
            sb_add(b, "  acc *= (float)%" PRId64 "L;\n", repeat);
        sb_add(b, "  o[p0] = acc;\n}\n");
    }
}

/* Source of pass one: the partial sums of every (row, part) of x. */
static sw_status gen_reduce_parts(sb *b, sw_dtype dt, const char *acc_type,
                                  sw_plan_leaves out, sw_plan_leaves rows,
                                  const flat *cf, int64_t k, int64_t len,
                                  int64_t parts, int64_t *adjust) {
    sb_add(b,
           "#pragma OPENCL FP_CONTRACT OFF\n"
           "__kernel __attribute__((reqd_work_group_size(%d, 1, 1)))\n"
           "void sw_kernel(__global const %s *x, long x_off, "
           "__global %s *part) {\n"
           "  __local %s lanes[%d];\n"
           "  long g = (long)get_group_id(0);\n"
           "  int l = (int)get_local_id(0);\n"
           "  long idx = g / %" PRId64 "L;\n"
           "  long lo = (g %% %" PRId64 "L) * %" PRId64 "L;\n"
           "  long hi = min(lo + %" PRId64 "L, %" PRId64 "L);\n"
           "  long c = 0;\n"
           "  long p0 = 0, p1 = x_off;\n",
           RED_LANES, cl_type(dt), acc_type, acc_type, RED_LANES, parts, parts,
           len, len, k);
    sw_plan_leaves two[2] = {out, rows};
    sw_status st = gen_visit(b, 2, two, adjust);
    if (st)
        return st;
    sb_add(b,
           "  long m = (hi - lo + %d) / %d;\n"
           "  long j = min(lo + l * m, hi), e = min(j + m, hi);\n"
           "  %s a[%d];\n"
           "  for (int u = 0; u < %d; ++u) a[u] = 0;\n"
           "  for (; j + %d <= e; j += %d) {\n"
           "  #pragma unroll\n"
           "  for (int u = 0; u < %d; ++u) {\n"
           "  long i = j + u;\n"
           "  long q = p1;\n",
           RED_LANES - 1, RED_LANES, acc_type, RED_ILP, RED_ILP, RED_ILP,
           RED_ILP, RED_ILP);
    gen_decompose(b, cf, "i", "q");
    sb_add(b,
           "  a[u] += (%s)x[q];\n  }\n  }\n"
           "  for (int u = 0; j < e; ++j, ++u) {\n"
           "  long i = j;\n"
           "  long q = p1;\n",
           acc_type);
    gen_decompose(b, cf, "i", "q");
    sb_add(b, "  a[u] += (%s)x[q];\n  }\n", acc_type);
    sb_add(b,
           "  %s acc = ((a[0] + a[1]) + (a[2] + a[3])) + "
           "((a[4] + a[5]) + (a[6] + a[7]));\n",
           acc_type);
    sb_add(b,
           "  lanes[l] = acc;\n"
           "  barrier(CLK_LOCAL_MEM_FENCE);\n"
           "  for (int h = %d; h > 0; h >>= 1) {\n"
           "  if (l < h) lanes[l] += lanes[l + h];\n"
           "  barrier(CLK_LOCAL_MEM_FENCE);\n"
           "  }\n"
           "  if (l == 0) part[g] = lanes[0];\n"
           "}\n",
           RED_LANES / 2);
    return SW_OK;
}

/* Source of pass two: each row's partials, added in order, stored. */
static sw_status gen_reduce_rows(sb *b, sw_dtype dt, const char *acc_type,
                                 sw_plan_leaves out, sw_plan_leaves rows,
                                 int64_t parts, int integer, int64_t repeat,
                                 int64_t *adjust) {
    sb_add(b,
           "#pragma OPENCL FP_CONTRACT OFF\n"
           "__kernel void sw_kernel(__global %s *o, long o_off, "
           "__global const %s *part, __global int *flag) {\n"
           "  long idx = (long)get_global_id(0);\n"
           "  __global const %s *mine = part + idx * %" PRId64 "L;\n"
           "  long c = 0;\n"
           "  long p0 = o_off, p1 = 0;\n",
           cl_type(dt), acc_type, acc_type, parts);
    sw_plan_leaves two[2] = {out, rows};
    sw_status st = gen_visit(b, 2, two, adjust);
    if (st)
        return st;
    sb_add(b,
           "  %s acc = 0;\n"
           "  for (long j = 0; j < %" PRId64 "L; ++j) acc += mine[j];\n",
           acc_type, parts);
    gen_reduce_store(b, integer, repeat);
    return SW_OK;
}

/* Both passes: partials into a scratch buffer, then the rows. */
static sw_status reduce_parallel(sw_cl_device *d, const sw_clk_operand *out,
                                 const sw_clk_operand *x, sw_plan_leaves rows,
                                 const flat *cf, int64_t k, int64_t repeat,
                                 cl_mem flag, int *raised) {
    sw_dtype ot = out->dtype;
    int integer = ot == SW_DTYPE_INT32;
    const char *acc_type = integer ? "long" : "float";
    int64_t nrows = sw_plan_leaves_size(out->leaves);
    int64_t len = (k + RED_PARTS_MAX - 1) / RED_PARTS_MAX;
    if (len < RED_PART_MIN)
        len = RED_PART_MIN;
    len = (len + RED_LANES - 1) / RED_LANES * RED_LANES;
    int64_t parts = (k + len - 1) / len;
    int64_t groups, bytes;
    if (!sw_mul_ok(nrows, parts, &groups) ||
        !sw_mul_ok(groups, integer ? 8 : 4, &bytes) ||
        groups > INT64_MAX / RED_LANES)
        return sw_fail(SW_EOVERFLOW, "OpenCL reduce: too many partial sums");
    int64_t adjust[SW_PLAN_MAX_OPS] = {0};
    sb one = {0}, two = {0};
    cl_mem part = NULL;
    sw_status st = gen_reduce_parts(&one, ot, acc_type, out->leaves, rows, cf,
                                    k, len, parts, adjust);
    int64_t x_off = x->offset + adjust[1];
    if (!st)
        st = gen_reduce_rows(&two, ot, acc_type, out->leaves, rows, parts,
                             integer, repeat, adjust);
    int64_t o_off = out->offset + adjust[0];
    if (!st)
        st = sw_opencl_buffer_new(d, bytes, &part);
    if (!st) {
        karg a1[3] = {{sizeof(cl_mem), &x->mem},
                      {sizeof(int64_t), &x_off},
                      {sizeof(cl_mem), &part}};
        size_t global = (size_t)(groups * RED_LANES), local = RED_LANES;
        st = launch(d, &one, 3, a1, 1, &global, &local, NULL, NULL);
    }
    if (!st) {
        cl_mem flag_arg = flag;
        karg a2[4] = {{sizeof(cl_mem), &out->mem},
                      {sizeof(int64_t), &o_off},
                      {sizeof(cl_mem), &part},
                      {sizeof(cl_mem), &flag_arg}};
        size_t global = (size_t)nrows;
        st = launch(d, &two, 4, a2, 1, &global, NULL, flag, raised);
    }
    /* Commands enqueued with the scratch buffer keep it until they end. */
    if (part)
        (void)sw_cl.ReleaseMemObject(part);
    sb_free(&one);
    sb_free(&two);
    return st;
}

sw_status sw_clk_reduce(sw_cl_device *d, const sw_clk_operand *out,
                        const sw_clk_operand *x, sw_plan_leaves rows,
                        sw_plan_leaves cols) {
    sw_dtype ot = out->dtype;
    if (ot != x->dtype || (ot != SW_DTYPE_FLOAT32 && ot != SW_DTYPE_INT32))
        return sw_fail(SW_ETYPE, "OpenCL reduce: the output and input must "
                                 "both be Float32 or both Int32");
    if (sw_plan_leaves_size(rows) != sw_plan_leaves_size(out->leaves))
        return sw_fail(SW_EVALUE,
                       "OpenCL reduce: the output has %" PRId64
                       " elements, the rows %" PRId64,
                       sw_plan_leaves_size(out->leaves),
                       sw_plan_leaves_size(rows));
    /* Summed leaves along which x does not move add the same value again:
     * their extents multiply the sum instead (as the CPU kernel does). */
    flat cf;
    int64_t repeat = 1, k = 1;
    {
        sw_plan_leaves kept = cols;
        int64_t ext[SW_PLAN_MAX_LEAVES] = {0}, str[SW_PLAN_MAX_LEAVES] = {0};
        int32_t n = 0;
        for (int32_t i = 0; i < cols.nleaf && n < SW_PLAN_MAX_LEAVES; ++i) {
            if (cols.stride[i] == 0) {
                repeat *= cols.extent[i];
                continue;
            }
            ext[n] = cols.extent[i];
            str[n] = cols.stride[i];
            k *= ext[n];
            ++n;
        }
        kept.nleaf = n;
        kept.extent = ext;
        kept.stride = str;
        flatten(kept, &cf);
    }
    int integer = ot == SW_DTYPE_INT32;
    cl_mem flag = NULL;
    sw_status st;
    if (integer && (st = flag_new(d, &flag)))
        return st;
    int raised = 0;
    if (k > RED_PART_MIN && d->max_group >= RED_LANES) {
        st = reduce_parallel(d, out, x, rows, &cf, k, repeat, flag, &raised);
    } else {
        /* One work item per row walks the summed leaves in nested loops. */
        const char *acc_type = integer ? "long" : "float";
        sb b = {0};
        sb_add(&b,
               "#pragma OPENCL FP_CONTRACT OFF\n"
               "__kernel void sw_kernel(__global %s *o, long o_off, "
               "__global const %s *x, long x_off, __global int *flag) {\n"
               "  long idx = (long)get_global_id(0);\n"
               "  long c = 0;\n"
               "  long p0 = o_off, p1 = x_off;\n",
               cl_type(ot), cl_type(ot));
        sw_plan_leaves two[2] = {out->leaves, rows};
        int64_t adjust[SW_PLAN_MAX_OPS] = {0};
        st = gen_visit(&b, 2, two, adjust);
        if (!st) {
            sb_add(&b, "  long px = p1;\n  %s acc = 0;\n", acc_type);
            gen_sum_loops(&b, &cf, acc_type);
            gen_reduce_store(&b, integer, repeat);
            int64_t o_off = out->offset + adjust[0],
                    x_off = x->offset + adjust[1];
            cl_mem flag_arg = flag;
            karg args[5] = {{sizeof(cl_mem), &out->mem},
                            {sizeof(int64_t), &o_off},
                            {sizeof(cl_mem), &x->mem},
                            {sizeof(int64_t), &x_off},
                            {sizeof(cl_mem), &flag_arg}};
            size_t global = (size_t)sw_plan_leaves_size(out->leaves);
            st = launch(d, &b, 5, args, 1, &global, NULL, flag, &raised);
        }
        sb_free(&b);
    }
    if (flag)
        (void)sw_cl.ReleaseMemObject(flag);
    if (!st && raised)
        st = sw_fail(SW_EOVERFLOW, "%s", accumulation_msg);
    return st;
}

/* ---------------------------------------------------------------- gemm */

/* The tile of the Float32 product: TM x TN outputs per work group of
 * (TM/WM) x (TN/WN) work items, TK terms of the sum staged at a time. */
#define TM 64
#define TN 64
#define TK 16
#define WM 4
#define WN 4

/*
 * Which Float32 product kernel a device runs: on CPU devices (PoCL) one
 * whose work items each hold a VR x VC block of C in VR-wide vectors,
 * fed by a vector load of A's rows (a gather when they are not
 * contiguous) and broadcasts of B, which the device compiles to its SIMD
 * registers; elsewhere (GPUs) the tiled kernel through local memory.
 * STRIDEWEAVE_OPENCL_GEMM=tiled or =vector overrides the choice (tests
 * run both on one device).
 */
#define VR 16
#define VC 16

static int vector_gemm(sw_cl_device *d) {
    const char *env = getenv("STRIDEWEAVE_OPENCL_GEMM");
    if (env && strcmp(env, "tiled") == 0)
        return 0;
    if (env && strcmp(env, "vector") == 0)
        return 1;
    return (d->type & SW_CL_DEVICE_TYPE_CPU) != 0;
}

/* The body of the vector kernel (see vector_gemm); the offset functions
 * and M, N, K are defined before it. */
static void gen_gemm_vector(sb *s, const sw_clk_mat *a, const sw_clk_mat *c,
                            const char *at, const char *bt, int64_t repeat) {
    flat ar, cr;
    flatten(a->row, &ar);
    flatten(c->row, &cr);
    int a_unit = ar.n == 1 && ar.str[0] == 1;
    int c_unit = cr.n == 1 && cr.str[0] == 1;
    sb_add(s,
           "__kernel void sw_kernel(__global float *C, long c_off, "
           "__global const %s *A, long a_off, __global const %s *B, long "
           "b_off, __global int *flag) {\n"
           "  long j0 = get_global_id(0) * %d, i0 = get_global_id(1) * %d, "
           "z = get_global_id(2);\n"
           "  long pa = a_off + a_bat(z), pb = b_off + b_bat(z), pc = c_off + "
           "c_bat(z);\n",
           at, bt, VC, VR);
    char scale[48] = "";
    if (repeat > 1)
        snprintf(scale, sizeof scale, " * (float)%" PRId64 "L", repeat);
    sb_add(s, "  if (i0 + %d <= M && j0 + %d <= N) {\n", VR, VC);
    for (int q = 0; q < VC; ++q)
        sb_add(s,
               "    float16 acc%d = (float16)(0.0f);\n"
               "    long pb%d = pb + b_row(j0 + %d);\n",
               q, q, q);
    if (a_unit) {
        sb_add(s, "    long pa0 = pa + i0;\n");
    } else {
        for (int r = 0; r < VR; ++r)
            sb_add(s, "    long ra%d = pa + a_row(i0 + %d);\n", r, r);
    }
    sb_add(s, "    for (long t = 0; t < K; ++t) {\n"
              "      long ta = a_col(t), tb = b_col(t);\n");
    if (a_unit) {
        sb_add(s, "      float16 av = convert_float16(vload16(0, A + pa0 + "
                  "ta));\n");
    } else {
        sb_add(s, "      float16 av = (float16)(");
        for (int r = 0; r < VR; ++r)
            sb_add(s, "%s(float)A[ra%d + ta]", r ? ", " : "", r);
        sb_add(s, ");\n");
    }
    for (int q = 0; q < VC; ++q)
        sb_add(s,
               "      acc%d = fma(av, (float16)((float)B[pb%d + tb]), "
               "acc%d);\n",
               q, q, q);
    sb_add(s, "    }\n");
    for (int q = 0; q < VC; ++q) {
        if (c_unit) {
            sb_add(s,
                   "    vstore16(acc%d%s, 0, C + pc + i0 + c_col(j0 + %d));\n",
                   q, scale, q);
        } else {
            for (int r = 0; r < VR; ++r)
                sb_add(s,
                       "    C[pc + c_row(i0 + %d) + c_col(j0 + %d)] = "
                       "acc%d.s%X%s;\n",
                       r, q, q, r, scale);
        }
    }
    /* Blocks at the edges of C, element by element. */
    sb_add(s,
           "  } else {\n"
           "    for (int q = 0; q < %d; ++q) for (int r = 0; r < %d; ++r) {\n"
           "      long i = i0 + r, j = j0 + q;\n"
           "      if (i >= M || j >= N) continue;\n"
           "      long ra = pa + a_row(i), rb = pb + b_row(j);\n"
           "      float acc = 0.0f;\n"
           "      for (long t = 0; t < K; ++t)\n"
           "        acc = fma((float)A[ra + a_col(t)], (float)B[rb + "
           "b_col(t)], acc);\n"
           "      C[pc + c_row(i) + c_col(j)] = acc%s;\n"
           "    }\n"
           "  }\n"
           "}\n",
           VC, VR, scale);
}

/* A leaf list with the stride-0 leaves shared by both dropped: the
 * summed mode of a product, reduced as sw_plan_drop_repeats does. */
static sw_status reduce_k(sw_plan_leaves a, sw_plan_leaves b,
                          sw_plan_reduced *red) {
    sw_plan_leaves two[2] = {a, b};
    return sw_plan_drop_repeats(2, two, red);
}

/*
 * Packing. Operands whose columns lie a power-of-two number of bytes apart
 * (a 1024 x 1024 matrix) make the vector kernel's loads of successive
 * columns collide in the same cache sets; a large Float32 product
 * therefore first copies A and B (a map kernel, in the device's queue)
 * into Float32 buffers of row stride 1 and a column stride padded to a
 * multiple of 16 that is not one of 64, and multiplies those. The copies
 * cost O(M K + N K) against the product's O(M N K).
 */
#define PACK_MIN_WORK ((int64_t)1 << 21)

typedef struct packed {
    sw_clk_mat mat;
    int64_t ext[3], str[3];
} packed;

/* Copies m (rows, k columns, batch) into a fresh padded buffer; p->mat
 * describes it (p->mat.arg.mem owned by the caller on success). */
static sw_status pack(sw_cl_device *d, const sw_clk_mat *m, int64_t rows,
                      int64_t k, int64_t batch, packed *p) {
    int64_t ld = (rows + 15) / 16 * 16;
    if (ld % 64 == 0)
        ld += 16;
    p->ext[0] = rows;
    p->ext[1] = k;
    p->ext[2] = batch;
    p->str[0] = 1;
    p->str[1] = ld;
    p->str[2] = ld * k;
    int32_t total = m->row.nleaf + m->col.nleaf + m->batch.nleaf;
    if (total > SW_PLAN_MAX_LEAVES)
        return sw_fail(SW_ENOTIMPL, "too many leaves to pack");
    int64_t ext[SW_PLAN_MAX_LEAVES], str[SW_PLAN_MAX_LEAVES];
    int32_t n = 0;
    const sw_plan_leaves parts[3] = {m->row, m->col, m->batch};
    for (int i = 0; i < 3; ++i)
        for (int32_t j = 0; j < parts[i].nleaf; ++j, ++n) {
            ext[n] = parts[i].extent[j];
            str[n] = parts[i].stride[j];
        }
    cl_mem mem = NULL;
    sw_status st = sw_opencl_buffer_new(d, ld * k * batch * 4, &mem);
    if (st)
        return st;
    sw_clk_operand ops[2];
    ops[0].mem = mem;
    ops[0].dtype = SW_DTYPE_FLOAT32;
    ops[0].offset = 0;
    ops[0].leaves = (sw_plan_leaves){3, p->ext, p->str};
    ops[1] = m->arg;
    ops[1].leaves = (sw_plan_leaves){n, ext, str};
    sw_clk_expr copy = {SW_CLK_COPY, 0};
    st = sw_clk_map(d, copy, 2, ops, (sw_kscalar){0.0, 0});
    if (st) {
        (void)sw_cl.ReleaseMemObject(mem);
        return st;
    }
    p->mat.arg = ops[0];
    p->mat.row = (sw_plan_leaves){1, &p->ext[0], &p->str[0]};
    p->mat.col = (sw_plan_leaves){1, &p->ext[1], &p->str[1]};
    p->mat.batch = (sw_plan_leaves){1, &p->ext[2], &p->str[2]};
    return SW_OK;
}

static sw_status gemm(sw_cl_device *d, const sw_clk_mat *c, const sw_clk_mat *a,
                      const sw_clk_mat *b, int packing);

sw_status sw_clk_gemm(sw_cl_device *d, const sw_clk_mat *c, const sw_clk_mat *a,
                      const sw_clk_mat *b) {
    return gemm(d, c, a, b, 1);
}

static sw_status gemm(sw_cl_device *d, const sw_clk_mat *c, const sw_clk_mat *a,
                      const sw_clk_mat *b, int packing) {
    sw_dtype ct = c->arg.dtype;
    int integer = ct == SW_DTYPE_INT32;
    if (integer &&
        (a->arg.dtype != SW_DTYPE_INT32 || b->arg.dtype != SW_DTYPE_INT32))
        return sw_fail(SW_ETYPE, "OpenCL matmul: an Int32 product takes Int32 "
                                 "operands");
    int64_t m = sw_plan_leaves_size(a->row), n = sw_plan_leaves_size(b->row);
    int64_t k = sw_plan_leaves_size(a->col);
    int64_t batch = sw_plan_leaves_size(c->batch);
    if (sw_plan_leaves_size(c->row) != m || sw_plan_leaves_size(c->col) != n ||
        sw_plan_leaves_size(b->col) != k ||
        sw_plan_leaves_size(a->batch) != batch ||
        sw_plan_leaves_size(b->batch) != batch)
        return sw_fail(SW_EVALUE, "OpenCL matmul: the operands' extents do "
                                  "not agree");
    sw_plan_reduced red;
    sw_status st = reduce_k(a->col, b->col, &red);
    if (st)
        return st;
    int64_t repeat = red.repeat, kk = sw_plan_leaves_size(red.ops[0]);
    int64_t work = 0;
    if (packing && !integer && repeat == 1 && vector_gemm(d) &&
        sw_mul_ok(m, n, &work) && sw_mul_ok(work, kk, &work) &&
        sw_mul_ok(work, batch, &work) && work >= PACK_MIN_WORK) {
        packed pa, pb;
        st = pack(d, a, m, k, batch, &pa);
        if (!st) {
            st = pack(d, b, n, k, batch, &pb);
            if (!st) {
                st = gemm(d, c, &pa.mat, &pb.mat, 0);
                (void)sw_cl.ReleaseMemObject(pb.mat.arg.mem);
            }
            (void)sw_cl.ReleaseMemObject(pa.mat.arg.mem);
        }
        if (st != SW_ENOTIMPL)
            return st;
        sw_clear_error();
    }
    flat f;
    sb s = {0};
    sb_add(&s, "#pragma OPENCL FP_CONTRACT OFF\n");
    const struct {
        const char *name;
        sw_plan_leaves l;
    } fns[8] = {{"a_row", a->row}, {"a_col", red.ops[0]}, {"a_bat", a->batch},
                {"b_row", b->row}, {"b_col", red.ops[1]}, {"b_bat", b->batch},
                {"c_row", c->row}, {"c_col", c->col}};
    for (int i = 0; i < 8; ++i) {
        flatten(fns[i].l, &f);
        gen_offset_fn(&s, fns[i].name, &f);
    }
    flatten(c->batch, &f);
    gen_offset_fn(&s, "c_bat", &f);
    const char *at = cl_type(a->arg.dtype), *bt = cl_type(b->arg.dtype);
    sb_add(&s,
           "#define M %" PRId64 "L\n#define N %" PRId64 "L\n#define K %" PRId64
           "L\n",
           m, n, kk);
    size_t global[3], local[3];
    if (integer) {
        sb_add(&s,
               "__kernel void sw_kernel(__global int *C, long c_off, "
               "__global const int *A, long a_off, __global const int *B, "
               "long b_off, __global int *flag) {\n"
               "  long i = get_global_id(0), j = get_global_id(1), "
               "z = get_global_id(2);\n"
               "  long pa = a_off + a_row(i) + a_bat(z), pb = b_off + b_row(j) "
               "+ b_bat(z);\n"
               "  long acc = 0;\n"
               "  for (long t = 0; t < K; ++t)\n"
               "    acc += (long)A[pa + a_col(t)] * (long)B[pb + b_col(t)];\n"
               "  if (acc < INT_MIN || acc > INT_MAX) { flag[0] = 1; acc = 0; "
               "}\n");
        if (repeat >= ((int64_t)1 << 32))
            sb_add(&s, "  if (acc != 0) flag[0] = 1;\n");
        else if (repeat > 1)
            sb_add(&s,
                   "  acc *= %" PRId64 "L;\n"
                   "  if (acc < INT_MIN || acc > INT_MAX) flag[0] = 1;\n",
                   repeat);
        sb_add(&s, "  C[c_off + c_row(i) + c_col(j) + c_bat(z)] = (int)acc;\n"
                   "}\n");
        global[0] = (size_t)m;
        global[1] = (size_t)n;
        global[2] = (size_t)batch;
    } else if (vector_gemm(d)) {
        gen_gemm_vector(&s, a, c, at, bt, repeat);
        global[0] = (size_t)((n + VC - 1) / VC);
        global[1] = (size_t)((m + VR - 1) / VR);
        global[2] = (size_t)batch;
    } else {
        /* Work item (x, y) of a group computes rows x + 16r and columns
         * y + 16c of the group's 64 x 64 tile, so that neighbouring work
         * items read neighbouring elements of the staged tiles. */
        sb_add(&s,
               "#define TM %d\n#define TN %d\n#define TK %d\n#define WM %d\n"
               "#define WN %d\n",
               TM, TN, TK, WM, WN);
        sb_add(&s,
               "__kernel __attribute__((reqd_work_group_size(%d, %d, 1)))\n"
               "void sw_kernel(__global float *C, long c_off, "
               "__global const %s *A, long a_off, __global const %s *B, long "
               "b_off, __global int *flag) {\n",
               TM / WM, TN / WN, at, bt);
        sb_add(&s,
               "  __local float As[TK][TM + 1];\n"
               "  __local float Bs[TK][TN + 1];\n"
               "  int tx = get_local_id(0), ty = get_local_id(1);\n"
               "  long i0 = get_group_id(0) * TM, j0 = get_group_id(1) * TN, "
               "z = get_global_id(2);\n"
               "  long pa = a_off + a_bat(z), pb = b_off + b_bat(z);\n"
               "  int lid = ty * (TM / WM) + tx;\n"
               "  float acc[WM][WN];\n"
               "  for (int r = 0; r < WM; ++r) for (int q = 0; q < WN; ++q) "
               "acc[r][q] = 0.0f;\n"
               "  for (long k0 = 0; k0 < K; k0 += TK) {\n"
               "    for (int e = lid; e < TM * TK; e += (TM / WM) * (TN / "
               "WN)) {\n"
               "      int rr = e %% TM, kk = e / TM;\n"
               "      long i = i0 + rr, t = k0 + kk;\n"
               "      As[kk][rr] = (i < M && t < K) ? (float)A[pa + a_row(i) + "
               "a_col(t)] : 0.0f;\n"
               "    }\n"
               "    for (int e = lid; e < TN * TK; e += (TM / WM) * (TN / "
               "WN)) {\n"
               "      int rr = e %% TN, kk = e / TN;\n"
               "      long j = j0 + rr, t = k0 + kk;\n"
               "      Bs[kk][rr] = (j < N && t < K) ? (float)B[pb + b_row(j) + "
               "b_col(t)] : 0.0f;\n"
               "    }\n"
               "    barrier(CLK_LOCAL_MEM_FENCE);\n"
               "    for (int kk = 0; kk < TK; ++kk) {\n"
               "      float av[WM], bv[WN];\n"
               "      for (int r = 0; r < WM; ++r) av[r] = As[kk][tx + r * (TM "
               "/ WM)];\n"
               "      for (int q = 0; q < WN; ++q) bv[q] = Bs[kk][ty + q * (TN "
               "/ WN)];\n"
               "      for (int r = 0; r < WM; ++r) for (int q = 0; q < WN; "
               "++q) acc[r][q] += av[r] * bv[q];\n"
               "    }\n"
               "    barrier(CLK_LOCAL_MEM_FENCE);\n"
               "  }\n"
               "  long pc = c_off + c_bat(z);\n"
               "  for (int r = 0; r < WM; ++r) for (int q = 0; q < WN; ++q) {\n"
               "    long i = i0 + tx + r * (TM / WM), j = j0 + ty + q * (TN / "
               "WN);\n");
        if (repeat > 1)
            sb_add(&s,
                   "    if (i < M && j < N) C[pc + c_row(i) + c_col(j)] = "
                   "acc[r][q] * (float)%" PRId64 "L;\n",
                   repeat);
        else
            sb_add(&s, "    if (i < M && j < N) C[pc + c_row(i) + c_col(j)] = "
                       "acc[r][q];\n");
        sb_add(&s, "  }\n}\n");
        local[0] = TM / WM;
        local[1] = TN / WN;
        local[2] = 1;
        global[0] = (size_t)((m + TM - 1) / TM) * local[0];
        global[1] = (size_t)((n + TN - 1) / TN) * local[1];
        global[2] = (size_t)batch;
    }
    cl_mem flag = NULL;
    if (integer && (st = flag_new(d, &flag))) {
        sb_free(&s);
        return st;
    }
    int64_t c_off = c->arg.offset, a_off = a->arg.offset, b_off = b->arg.offset;
    cl_mem flag_arg = flag;
    karg args[7] = {{sizeof(cl_mem), &c->arg.mem}, {sizeof(int64_t), &c_off},
                    {sizeof(cl_mem), &a->arg.mem}, {sizeof(int64_t), &a_off},
                    {sizeof(cl_mem), &b->arg.mem}, {sizeof(int64_t), &b_off},
                    {sizeof(cl_mem), &flag_arg}};
    int raised = 0;
    st = launch(d, &s, 7, args, 3, global,
                integer || vector_gemm(d) ? NULL : local, flag, &raised);
    sb_free(&s);
    if (flag)
        (void)sw_cl.ReleaseMemObject(flag);
    if (!st && raised)
        st = sw_fail(SW_EOVERFLOW, "%s", accumulation_msg);
    return st;
}
