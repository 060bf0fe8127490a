/*
 * Block devices and the BlockDeviceCarrier (see strideweave/blockdev.h).
 *
 * I/O. Every transfer goes through bounce buffers aligned for O_DIRECT
 * and covering whole logical blocks: the device span of a byte range is
 * the range widened to logical-block boundaries, moved in chunks of at
 * most BOUNCE_BYTES. A write chunk that the range does not cover entirely
 * (the edges) is read first, so the bytes around the range stay as they
 * were. One chunk is one retry loop of system calls (raw_loop), whose
 * terminal outcomes fault the device.
 *
 * Extents. The device keeps its used extents in an array sorted by
 * offset; the free space is the gaps between them, so a freed extent
 * merges with its free neighbours by construction and the lowest gap
 * that fits is the lowest aligned free offset (every extent starts and
 * ends on a physical-block boundary).
 *
 * Threads. The device mutex guards the descriptor, the extents and every
 * system call; closed, faulted and the carrier count are atomics so that
 * queries never wait for a transfer.
 */
#define _GNU_SOURCE /* O_DIRECT */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>
#if defined(__linux__)
#include <linux/fs.h>
#endif

#include "carrier/internal.h"
#include "strideweave/blockdev.h"

/* The largest chunk one bounce buffer carries. */
#define BOUNCE_BYTES ((int64_t)1 << 20)

typedef struct extent {
    int64_t offset, length;
} extent;

struct sw_blockdev {
    atomic_int_fast64_t refs;
    pthread_mutex_t lock;
    const sw_blockdev_io *io;
    void *ctx;
    int fd;
    int64_t capacity, logical, physical;
    atomic_int closed, faulted;
    atomic_int_fast64_t carriers;
    void *peer; /* the binding's, see sw_blockdev_set_peer */
    /* Guarded by lock: the used extents, sorted by offset. */
    extent *used;
    int64_t nused, capused;
};

/* ------------------------------------------------------------ system I/O */

static int64_t sys_read(void *ctx, int fd, void *buf, int64_t count,
                        int64_t offset, int *err) {
    (void)ctx;
    ssize_t k = pread(fd, buf, (size_t)count, (off_t)offset);
    if (k < 0)
        *err = errno;
    return (int64_t)k;
}

static int64_t sys_write(void *ctx, int fd, const void *buf, int64_t count,
                         int64_t offset, int *err) {
    (void)ctx;
    ssize_t k = pwrite(fd, buf, (size_t)count, (off_t)offset);
    if (k < 0)
        *err = errno;
    return (int64_t)k;
}

static int sys_close(void *ctx, int fd) {
    (void)ctx;
    return close(fd) == 0 ? 0 : errno;
}

static const sw_blockdev_io system_io = {
    .version = SW_BLOCKDEV_IO_VERSION,
    .read = sys_read,
    .write = sys_write,
    .close = sys_close,
};

/* ---------------------------------------------------------- scripted I/O */

typedef struct script {
    sw_blockdev_step *steps;
    int64_t n, next;
} script;

typedef struct scripted {
    unsigned char *memory;
    int64_t size;
    script reads, writes;
    int close_error;
    int64_t read_attempts, write_attempts, close_attempts;
} scripted;

/* The step of the next call: a scripted one, or "everything". */
static sw_blockdev_step next_step(script *s) {
    if (s->next < s->n)
        return s->steps[s->next++];
    sw_blockdev_step all = {SW_BLOCKDEV_STEP_PROGRESS, INT64_MAX};
    return all;
}

static int64_t scripted_call(scripted *s, script *sc, int write, void *buf,
                             int64_t count, int64_t offset, int *err) {
    sw_blockdev_step step = next_step(sc);
    switch (step.kind) {
    case SW_BLOCKDEV_STEP_INTERRUPT:
        *err = EINTR;
        return -1;
    case SW_BLOCKDEV_STEP_ERROR:
        *err = (int)step.value;
        return -1;
    case SW_BLOCKDEV_STEP_ZERO:
        return 0;
    case SW_BLOCKDEV_STEP_PROGRESS:
        break;
    }
    int64_t m = step.value < count ? step.value : count;
    if (offset + m > s->size)
        m = s->size - offset;
    if (m <= 0)
        return 0;
    if (write)
        memcpy(s->memory + offset, buf, (size_t)m);
    else
        memcpy(buf, s->memory + offset, (size_t)m);
    return m;
}

static int64_t scripted_read(void *ctx, int fd, void *buf, int64_t count,
                             int64_t offset, int *err) {
    (void)fd;
    scripted *s = ctx;
    s->read_attempts++;
    return scripted_call(s, &s->reads, 0, buf, count, offset, err);
}

static int64_t scripted_write(void *ctx, int fd, const void *buf, int64_t count,
                              int64_t offset, int *err) {
    (void)fd;
    scripted *s = ctx;
    s->write_attempts++;
    return scripted_call(s, &s->writes, 1, (void *)buf, count, offset, err);
}

static int scripted_close(void *ctx, int fd) {
    (void)fd;
    scripted *s = ctx;
    s->close_attempts++;
    return s->close_error;
}

static void scripted_drop(void *ctx) {
    scripted *s = ctx;
    if (!s)
        return;
    sw_free(s->memory);
    sw_free(s->reads.steps);
    sw_free(s->writes.steps);
    sw_free(s);
}

static const sw_blockdev_io scripted_io = {
    .version = SW_BLOCKDEV_IO_VERSION,
    .read = scripted_read,
    .write = scripted_write,
    .close = scripted_close,
    .drop = scripted_drop,
};

static sw_status copy_script(const sw_blockdev_step *steps, int64_t n,
                             script *out) {
    out->n = out->next = 0;
    out->steps = NULL;
    if (n < 0 || (n > 0 && !steps))
        return sw_fail(SW_EVALUE, "a script must be an array of steps");
    for (int64_t i = 0; i < n; ++i) {
        sw_blockdev_step_kind k = steps[i].kind;
        if (k != SW_BLOCKDEV_STEP_INTERRUPT && k != SW_BLOCKDEV_STEP_PROGRESS &&
            k != SW_BLOCKDEV_STEP_ZERO && k != SW_BLOCKDEV_STEP_ERROR)
            return sw_fail(SW_EVALUE, "unknown script step");
        if (k == SW_BLOCKDEV_STEP_PROGRESS && steps[i].value <= 0)
            return sw_fail(SW_EVALUE, "a progress step must move at least "
                                      "one byte");
        if (k == SW_BLOCKDEV_STEP_ERROR &&
            (steps[i].value <= 0 || steps[i].value == EINTR ||
             steps[i].value > 4095))
            return sw_fail(SW_EVALUE, "an error step needs an errno other "
                                      "than EINTR");
    }
    if (n > 0) {
        out->steps = sw_malloc((size_t)n * sizeof *steps);
        if (!out->steps)
            return sw_oom();
        memcpy(out->steps, steps, (size_t)n * sizeof *steps);
    }
    out->n = n;
    return SW_OK;
}

/* ------------------------------------------------------------- devices */

static sw_status check_geometry(int64_t capacity, int64_t logical,
                                int64_t physical) {
    if (capacity <= 0)
        return sw_fail(SW_EVALUE, "capacity must be positive");
    if (logical <= 0)
        return sw_fail(SW_EVALUE, "logical block size must be positive");
    if (physical <= 0)
        return sw_fail(SW_EVALUE, "physical block size must be positive");
    if (capacity % logical != 0)
        return sw_fail(SW_EVALUE,
                       "capacity must be a multiple of the logical block "
                       "size");
    if (physical % logical != 0)
        return sw_fail(SW_EVALUE, "physical block size must be a multiple of "
                                  "the logical block size");
    return SW_OK;
}

sw_status sw_blockdev_open_io(int fd, int64_t capacity, int64_t logical,
                              int64_t physical, const sw_blockdev_io *io,
                              void *ctx, sw_blockdev **out) {
    sw_status st = SW_OK;
    if (!io || io->version != SW_BLOCKDEV_IO_VERSION || !io->read ||
        !io->write || !io->close) {
        st = sw_fail(SW_ETYPE, "BlockDevice I/O table is not valid");
        /* Without a table nothing can close fd or drop ctx. */
        return st;
    }
    if (!out)
        st = sw_fail(SW_EVALUE, "out must be non-null");
    if (!st)
        st = check_geometry(capacity, logical, physical);
    sw_blockdev *d = NULL;
    if (!st) {
        d = sw_calloc(1, sizeof *d);
        if (!d)
            st = sw_oom();
    }
    if (!st && pthread_mutex_init(&d->lock, NULL) != 0) {
        sw_free(d);
        d = NULL;
        st = sw_oom();
    }
    if (st) {
        (void)io->close(ctx, fd);
        if (io->drop)
            io->drop(ctx);
        return st;
    }
    atomic_init(&d->refs, 1);
    d->io = io;
    d->ctx = ctx;
    d->fd = fd;
    d->capacity = capacity;
    d->logical = logical;
    d->physical = physical;
    *out = d;
    return SW_OK;
}

sw_status sw_blockdev_open(const char *path, sw_blockdev **out) {
    if (!path)
        return sw_fail(SW_ETYPE, "path must be a string");
#if defined(__linux__) && defined(BLKGETSIZE64) && defined(BLKSSZGET) &&       \
    defined(BLKPBSZGET)
    struct stat sb;
    /* Looked at before anything is opened for writing: a regular file is
     * refused untouched. */
    if (stat(path, &sb) != 0)
        return sw_fail_os(errno, "BlockDevice cannot open %s", path);
    if (!S_ISBLK(sb.st_mode))
        return sw_fail(SW_EVALUE, "%s is not a block device", path);
    int fd = open(path, O_RDWR | O_DIRECT | O_CLOEXEC);
    if (fd < 0)
        return sw_fail_os(errno, "BlockDevice cannot open %s", path);
    uint64_t bytes = 0;
    int logical = 0;
    unsigned int physical = 0;
    sw_status st = SW_OK;
    if (fstat(fd, &sb) != 0)
        st = sw_fail_os(errno, "BlockDevice cannot open %s", path);
    else if (!S_ISBLK(sb.st_mode))
        st = sw_fail(SW_EVALUE, "%s is not a block device", path);
    else if (ioctl(fd, BLKGETSIZE64, &bytes) != 0 ||
             ioctl(fd, BLKSSZGET, &logical) != 0 ||
             ioctl(fd, BLKPBSZGET, &physical) != 0)
        st = sw_fail_os(errno, "BlockDevice cannot read the geometry of %s",
                        path);
    else if (bytes > (uint64_t)INT64_MAX)
        st = sw_fail(SW_EOVERFLOW, "BlockDevice %s is too large", path);
    if (st) {
        close(fd);
        return st;
    }
    return sw_blockdev_open_io(fd, (int64_t)bytes, logical, (int64_t)physical,
                               &system_io, NULL, out);
#else
    (void)out;
    return sw_fail(SW_ENOTIMPL, "BlockDevice needs Linux block devices");
#endif
}

sw_status
sw_blockdev_open_scripted(int64_t capacity, int64_t logical, int64_t physical,
                          const sw_blockdev_step *reads, int64_t nreads,
                          const sw_blockdev_step *writes, int64_t nwrites,
                          int close_error, sw_blockdev **out) {
    sw_status st = check_geometry(capacity, logical, physical);
    if (st)
        return st;
    if (capacity > ((int64_t)1 << 32))
        return sw_fail(SW_EVALUE, "a scripted device holds at most 4 GiB");
    scripted *s = sw_calloc(1, sizeof *s);
    if (!s)
        return sw_oom();
    s->close_error = close_error;
    s->size = capacity;
    st = copy_script(reads, nreads, &s->reads);
    if (!st)
        st = copy_script(writes, nwrites, &s->writes);
    if (!st) {
        s->memory = sw_calloc(1, (size_t)capacity);
        if (!s->memory)
            st = sw_oom();
    }
    if (st) {
        scripted_drop(s);
        return st;
    }
    return sw_blockdev_open_io(-1, capacity, logical, physical, &scripted_io, s,
                               out);
}

void sw_blockdev_attempts(const sw_blockdev *d, int64_t *reads, int64_t *writes,
                          int64_t *closes) {
    int64_t r = 0, w = 0, c = 0;
    if (d && d->io == &scripted_io) {
        sw_blockdev *m = (sw_blockdev *)d;
        pthread_mutex_lock(&m->lock);
        const scripted *s = d->ctx;
        r = s->read_attempts;
        w = s->write_attempts;
        c = s->close_attempts;
        pthread_mutex_unlock(&m->lock);
    }
    if (reads)
        *reads = r;
    if (writes)
        *writes = w;
    if (closes)
        *closes = c;
}

sw_blockdev *sw_blockdev_retain(sw_blockdev *d) {
    if (d)
        atomic_fetch_add(&d->refs, 1);
    return d;
}

/* Closes the descriptor once; the errno of a failure, else 0. */
static int close_once(sw_blockdev *d) {
    int expected = 0;
    if (!atomic_compare_exchange_strong(&d->closed, &expected, 1))
        return 0;
    int err = d->io->close(d->ctx, d->fd);
    d->fd = -1;
    return err;
}

void sw_blockdev_unref(sw_blockdev *d) {
    if (!d || atomic_fetch_sub(&d->refs, 1) != 1)
        return;
    pthread_mutex_lock(&d->lock);
    (void)close_once(d);
    pthread_mutex_unlock(&d->lock);
    if (d->io->drop)
        d->io->drop(d->ctx);
    pthread_mutex_destroy(&d->lock);
    sw_free(d->used);
    sw_free(d);
}

void sw_blockdev_set_peer(sw_blockdev *d, void *peer) {
    if (d)
        d->peer = peer;
}

void *sw_blockdev_get_peer(const sw_blockdev *d) {
    return d ? d->peer : NULL;
}

int64_t sw_blockdev_capacity(const sw_blockdev *d) {
    return d ? d->capacity : 0;
}

int64_t sw_blockdev_logical_block_size(const sw_blockdev *d) {
    return d ? d->logical : 0;
}

int64_t sw_blockdev_physical_block_size(const sw_blockdev *d) {
    return d ? d->physical : 0;
}

int sw_blockdev_is_closed(sw_blockdev *d) {
    return d && atomic_load(&d->closed);
}

int sw_blockdev_is_faulted(sw_blockdev *d) {
    return d && atomic_load(&d->faulted);
}

int64_t sw_blockdev_carrier_count(sw_blockdev *d) {
    return d ? atomic_load(&d->carriers) : 0;
}

sw_status sw_blockdev_close(sw_blockdev *d) {
    if (!d)
        return sw_fail(SW_ETYPE, "device must be a BlockDevice");
    pthread_mutex_lock(&d->lock);
    sw_status st = SW_OK;
    if (atomic_load(&d->carriers) > 0) {
        st = sw_fail(SW_ERUNTIME,
                     "BlockDevice cannot close: a Carrier object exists");
    } else {
        int err = close_once(d);
        if (err)
            st = sw_fail_os(err, "BlockDevice close failed");
    }
    pthread_mutex_unlock(&d->lock);
    return st;
}

/* ------------------------------------------------------------ transfers */

static sw_status fail_faulted(void) {
    return sw_fail(SW_ERUNTIME, "BlockDevice is faulted after an I/O error");
}

static sw_status fail_closed(void) {
    return sw_fail(SW_ERUNTIME, "BlockDevice handle is closed");
}

/*
 * Moves exactly n bytes at device offset off, retrying interrupts and
 * short progress. Lock held. *done grows by the bytes moved.
 */
static sw_blockdev_outcome raw_loop(sw_blockdev *d, int write, int64_t off,
                                    int64_t n, unsigned char *buf,
                                    int64_t *done, int *err) {
    while (n > 0) {
        int e = 0;
        int64_t k = write ? d->io->write(d->ctx, d->fd, buf, n, off, &e)
                          : d->io->read(d->ctx, d->fd, buf, n, off, &e);
        if (k < 0 && e == EINTR)
            continue;
        if (k < 0) {
            *err = e ? e : EIO;
            return SW_BLOCKDEV_OS_ERROR;
        }
        if (k == 0)
            return SW_BLOCKDEV_ZERO_COMPLETION;
        if (k > n)
            k = n; /* a table that claims more than it was asked */
        buf += k;
        off += k;
        n -= k;
        *done += k;
    }
    return SW_BLOCKDEV_COMPLETE;
}

/* The largest power of two dividing the logical block size, 16..4096:
 * what O_DIRECT asks of memory. */
static size_t memory_alignment(int64_t logical) {
    int64_t a = logical & -logical;
    if (a < 16)
        a = 16;
    if (a > 4096)
        a = 4096;
    return (size_t)a;
}

/* The preflight of a raw transfer (no I/O); buf may be NULL when zero. */
static sw_status preflight(sw_blockdev *d, int64_t offset, int64_t count,
                           const void *buf, int need_buf) {
    if (!d)
        return sw_fail(SW_ETYPE, "device must be a BlockDevice");
    if (need_buf && !buf && count != 0)
        return sw_fail(SW_EVALUE, "pointer must be non-null");
    if (offset < 0)
        return sw_fail(SW_EVALUE, "byte_offset must be non-negative");
    if (count < 0)
        return sw_fail(SW_EVALUE, "byte_count must be non-negative");
    if (buf && (uintptr_t)count > UINTPTR_MAX - (uintptr_t)buf)
        return sw_fail(SW_EOVERFLOW, "pointer byte endpoint overflows");
    int64_t end;
    if (!sw_add_ok(offset, count, &end))
        return sw_fail(SW_EOVERFLOW, "byte endpoint overflows Index");
    if (end > d->capacity)
        return sw_fail(SW_EVALUE, "byte range exceeds the device capacity");
    return SW_OK;
}

/*
 * The transfer of count bytes at offset between user memory (src for a
 * write, NULL for zeros; dst for a read) and the device. Lock held, the
 * range checked. A terminal outcome faults the device.
 */
static sw_status transfer(sw_blockdev *d, int write, int64_t offset,
                          int64_t count, const void *src, void *dst,
                          sw_blockdev_result *res) {
    sw_blockdev_result r = {SW_BLOCKDEV_COMPLETE, 0, 0};
    if (res)
        *res = r;
    if (atomic_load(&d->closed))
        return fail_closed();
    if (atomic_load(&d->faulted))
        return fail_faulted();
    if (count == 0)
        return SW_OK;
    int64_t L = d->logical;
    int64_t a0 = offset - offset % L, end = offset + count;
    int64_t a1 = end % L ? end + (L - end % L) : end;
    int64_t chunk = BOUNCE_BYTES < L ? L : BOUNCE_BYTES - BOUNCE_BYTES % L;
    int64_t span = a1 - a0;
    if (span < chunk)
        chunk = span;
    size_t align = memory_alignment(L);
    unsigned char *raw = sw_malloc((size_t)chunk + align);
    if (!raw)
        return sw_oom();
    unsigned char *bounce = (unsigned char *)(((uintptr_t)raw + align - 1) &
                                              ~(uintptr_t)(align - 1));
    sw_blockdev_outcome out = SW_BLOCKDEV_COMPLETE;
    int err = 0;
    int64_t done = 0;
    for (int64_t c0 = a0; c0 < a1 && out == SW_BLOCKDEV_COMPLETE; c0 += chunk) {
        int64_t c1 = c0 + chunk < a1 ? c0 + chunk : a1;
        int64_t u0 = offset > c0 ? offset : c0, u1 = end < c1 ? end : c1;
        if (!write) {
            int64_t before = done;
            out = raw_loop(d, 0, c0, c1 - c0, bounce, &done, &err);
            /* What arrived is the caller's, also when the rest failed. */
            int64_t got = c0 + (done - before);
            int64_t v1 = got < u1 ? got : u1;
            if (v1 > u0)
                memcpy((unsigned char *)dst + (u0 - offset), bounce + (u0 - c0),
                       (size_t)(v1 - u0));
            continue;
        }
        if (u0 != c0 || u1 != c1) {
            /* The edges keep their bytes: read them first (not counted as
             * progress of the write). */
            int64_t ignored = 0;
            out = raw_loop(d, 0, c0, c1 - c0, bounce, &ignored, &err);
            if (out != SW_BLOCKDEV_COMPLETE)
                break;
        }
        if (src)
            memcpy(bounce + (u0 - c0),
                   (const unsigned char *)src + (u0 - offset),
                   (size_t)(u1 - u0));
        else
            memset(bounce + (u0 - c0), 0, (size_t)(u1 - u0));
        out = raw_loop(d, 1, c0, c1 - c0, bounce, &done, &err);
    }
    sw_free(raw);
    r.outcome = out;
    r.completed = done;
    r.error_number = out == SW_BLOCKDEV_OS_ERROR ? err : 0;
    if (res)
        *res = r;
    if (out == SW_BLOCKDEV_COMPLETE)
        return SW_OK;
    atomic_store(&d->faulted, 1);
    const char *what = write ? "write" : "read";
    if (out == SW_BLOCKDEV_OS_ERROR)
        return sw_fail_os(err, "BlockDevice %s failed after %lld of %lld bytes",
                          what, (long long)done, (long long)span);
    return sw_fail(SW_ERUNTIME,
                   "BlockDevice %s completed %lld of %lld bytes and then made "
                   "no progress",
                   what, (long long)done, (long long)span);
}

sw_status sw_blockdev_read(sw_blockdev *d, int64_t offset, int64_t count,
                           void *buf, sw_blockdev_result *res) {
    sw_status st = preflight(d, offset, count, buf, 1);
    if (st)
        return st;
    pthread_mutex_lock(&d->lock);
    st = transfer(d, 0, offset, count, NULL, buf, res);
    pthread_mutex_unlock(&d->lock);
    return st;
}

sw_status sw_blockdev_write(sw_blockdev *d, int64_t offset, int64_t count,
                            const void *buf, sw_blockdev_result *res) {
    sw_status st = preflight(d, offset, count, buf, 1);
    if (st)
        return st;
    pthread_mutex_lock(&d->lock);
    st = transfer(d, 1, offset, count, buf, NULL, res);
    pthread_mutex_unlock(&d->lock);
    return st;
}

sw_status sw_blockdev_zero(sw_blockdev *d, int64_t offset, int64_t count,
                           sw_blockdev_result *res) {
    sw_status st = preflight(d, offset, count, NULL, 0);
    if (st)
        return st;
    pthread_mutex_lock(&d->lock);
    st = transfer(d, 1, offset, count, NULL, NULL, res);
    pthread_mutex_unlock(&d->lock);
    return st;
}

/* ------------------------------------------------------------- extents */

/* Reserves length bytes (a positive multiple of the physical block size)
 * at the lowest free aligned offset. Lock held. */
static sw_status extent_take(sw_blockdev *d, int64_t length, int64_t *at) {
    int64_t usable = d->capacity - d->capacity % d->physical;
    int64_t prev = 0, i = 0;
    for (; i < d->nused; ++i) {
        if (d->used[i].offset - prev >= length)
            break;
        prev = d->used[i].offset + d->used[i].length;
    }
    if (i == d->nused && usable - prev < length)
        return sw_fail(SW_ENOMEM,
                       "BlockDevice has no aligned extent of %lld bytes free",
                       (long long)length);
    if (d->nused == d->capused) {
        int64_t cap = d->capused ? d->capused * 2 : 8;
        extent *grown = sw_realloc(d->used, (size_t)cap * sizeof *grown);
        if (!grown)
            return sw_oom();
        d->used = grown;
        d->capused = cap;
    }
    memmove(d->used + i + 1, d->used + i,
            (size_t)(d->nused - i) * sizeof *d->used);
    d->used[i].offset = prev;
    d->used[i].length = length;
    d->nused++;
    *at = prev;
    return SW_OK;
}

/* Frees the extent at offset. Lock held. */
static void extent_give(sw_blockdev *d, int64_t offset) {
    for (int64_t i = 0; i < d->nused; ++i) {
        if (d->used[i].offset == offset) {
            memmove(d->used + i, d->used + i + 1,
                    (size_t)(d->nused - i - 1) * sizeof *d->used);
            d->nused--;
            return;
        }
    }
}

/* ------------------------------------------------------------- carriers */

typedef struct bd_state {
    sw_blockdev *dev; /* a counted reference */
    int64_t offset, extent, size;
    int mutable_;
    int holds; /* guarded by the device lock: the extent is reserved */
} bd_state;

static bd_state *bst(sw_carrier *c) {
    return sw_carrier_state(c);
}

static int64_t bd_size(sw_carrier *c) {
    return bst(c)->size;
}

/* One value as its 32-bit float. */
static sw_status encode(const sw_value *v, float *out) {
    if (v->kind == SW_VALUE_HOST) {
        sw_value n;
        if (!v->ops || !v->ops->to_number)
            return sw_fail(SW_ETYPE, "BlockDeviceCarrier value must be a "
                                     "number");
        sw_status st = v->ops->to_number(v, &n);
        if (st == SW_ETYPE || (!st && n.kind == SW_VALUE_HOST))
            return sw_fail(SW_ETYPE, "BlockDeviceCarrier value must be a "
                                     "number");
        if (st)
            return st;
        return encode(&n, out);
    }
    *out = v->kind == SW_VALUE_F64   ? (float)v->as.f
           : v->kind == SW_VALUE_I64 ? (float)v->as.i
                                     : 0.0f;
    return SW_OK;
}

/* The carrier's transfer of count bytes at byte offset within its slots
 * (range checked), under the device lock; a write's version step comes
 * first, as the transfer starts. */
static sw_status carrier_io(sw_carrier *c, int write, int64_t offset,
                            int64_t count, const void *src, void *dst) {
    bd_state *s = bst(c);
    pthread_mutex_lock(&s->dev->lock);
    sw_status st = SW_OK;
    if (atomic_load(&s->dev->faulted))
        st = fail_faulted();
    else if (atomic_load(&s->dev->closed))
        st = fail_closed();
    else if (!s->holds)
        st = sw_carrier_fail_released();
    if (!st) {
        if (write)
            atomic_fetch_add(&c->version, 1);
        st = transfer(s->dev, write, s->offset + offset, count, src, dst, NULL);
    }
    pthread_mutex_unlock(&s->dev->lock);
    return st;
}

static sw_status bd_get(sw_carrier *c, int64_t i, sw_value *out) {
    float f;
    sw_status st = carrier_io(c, 0, i * 4, 4, NULL, &f);
    if (st)
        return st;
    *out = sw_value_f64(f);
    return SW_OK;
}

static sw_status bd_set(sw_carrier *c, int64_t i, const sw_value *v) {
    float f;
    sw_status st = encode(v, &f);
    if (st)
        return st;
    return carrier_io(c, 1, i * 4, 4, &f, NULL);
}

static int bd_is_mutable(sw_carrier *c) {
    return bst(c)->mutable_;
}

/* Frees the extent, after any transfer on it (the lock). No I/O. */
static void bd_release(sw_carrier *c) {
    bd_state *s = bst(c);
    pthread_mutex_lock(&s->dev->lock);
    if (s->holds)
        extent_give(s->dev, s->offset);
    s->holds = 0;
    pthread_mutex_unlock(&s->dev->lock);
}

static void bd_destroy(sw_carrier *c) {
    bd_state *s = bst(c);
    /* The release slot has run by now (the base runs it at destruction
     * of a live carrier), so the extent is free. */
    atomic_fetch_sub(&s->dev->carriers, 1);
    sw_blockdev_unref(s->dev);
    sw_free(s);
}

static sw_status bd_allocate_like(sw_carrier *c, int64_t size, int mutable_,
                                  sw_dtype dtype, int empty, sw_carrier **out) {
    return sw_blockdev_allocate(bst(c)->dev, size, mutable_, dtype, empty, out);
}

static sw_status bd_new_like(sw_carrier *c, int64_t n, const sw_value *values,
                             int mutable_, sw_dtype dtype, sw_carrier **out) {
    int64_t bytes;
    if (n < 0)
        return sw_fail(SW_EVALUE, "size must be non-negative");
    if (!sw_mul_ok(n, 4, &bytes))
        return sw_fail(SW_EOVERFLOW, "byte length overflows");
    if (dtype != SW_DTYPE_FLOAT32)
        return sw_fail(SW_EVALUE,
                       "BlockDeviceCarrier dtype must be DType.Float32");
    float *buf = sw_malloc((size_t)(n ? bytes : 1));
    if (!buf)
        return sw_oom();
    sw_status st = SW_OK;
    for (int64_t i = 0; i < n && !st; ++i)
        st = encode(&values[i], &buf[i]);
    sw_carrier *r = NULL;
    if (!st)
        st = sw_blockdev_allocate(bst(c)->dev, n, 1, dtype, 1, &r);
    if (!st && n > 0)
        st = carrier_io(r, 1, 0, bytes, buf, NULL);
    sw_free(buf);
    if (st) {
        sw_carrier_unref(r);
        return st;
    }
    atomic_store(&r->version, 0);
    bst(r)->mutable_ = mutable_ != 0;
    *out = r;
    return SW_OK;
}

static const sw_carrier_class blockdev_class = {
    .version = SW_CARRIER_CLASS_VERSION,
    .name = "BlockDeviceCarrier",
    .size = bd_size,
    .get = bd_get,
    .set = bd_set,
    .is_mutable = bd_is_mutable,
    .release = bd_release,
    .destroy = bd_destroy,
    .allocate_like = bd_allocate_like,
    .new_like = bd_new_like,
};

sw_status sw_blockdev_allocate(sw_blockdev *d, int64_t size, int mutable_,
                               sw_dtype dtype, int empty, sw_carrier **out) {
    if (!d)
        return sw_fail(SW_ETYPE, "device must be a BlockDevice");
    if (atomic_load(&d->closed))
        return sw_fail(SW_ERUNTIME, "BlockDevice is closed");
    if (atomic_load(&d->faulted))
        return fail_faulted();
    if (dtype != SW_DTYPE_FLOAT32)
        return sw_fail(SW_EVALUE,
                       "BlockDeviceCarrier dtype must be DType.Float32");
    if (size < 0)
        return sw_fail(SW_EVALUE, "size must be non-negative");
    int64_t bytes, length;
    if (!sw_mul_ok(size, 4, &bytes) ||
        !sw_add_ok(bytes, d->physical - 1, &length))
        return sw_fail(SW_EOVERFLOW, "byte length overflows");
    length -= length % d->physical;
    bd_state *s = sw_calloc(1, sizeof *s);
    if (!s)
        return sw_oom();
    s->dev = d;
    s->size = size;
    s->mutable_ = mutable_ != 0;
    s->extent = length;
    pthread_mutex_lock(&d->lock);
    sw_status st = SW_OK;
    /* Checked again under the lock: a close or a fault may have come. */
    if (atomic_load(&d->closed))
        st = sw_fail(SW_ERUNTIME, "BlockDevice is closed");
    else if (atomic_load(&d->faulted))
        st = fail_faulted();
    else if (length > 0)
        st = extent_take(d, length, &s->offset);
    if (!st && length > 0) {
        s->holds = 1;
        if (!empty)
            st = transfer(d, 1, s->offset, length, NULL, NULL, NULL);
        if (st) {
            extent_give(d, s->offset);
            s->holds = 0;
        }
    }
    pthread_mutex_unlock(&d->lock);
    sw_carrier *c = NULL;
    if (!st)
        st = sw_carrier_new(&blockdev_class, s, SW_DTYPE_FLOAT32, &c);
    if (st) {
        if (s->holds) {
            pthread_mutex_lock(&d->lock);
            extent_give(d, s->offset);
            pthread_mutex_unlock(&d->lock);
        }
        sw_free(s);
        return st;
    }
    sw_blockdev_retain(d);
    atomic_fetch_add(&d->carriers, 1);
    *out = c;
    return SW_OK;
}

const sw_carrier_class *sw_blockdev_class(void) {
    return &blockdev_class;
}

int sw_carrier_is_blockdev(const sw_carrier *c) {
    return c && sw_carrier_get_class(c) == &blockdev_class;
}

sw_blockdev *sw_blockdev_of(const sw_carrier *c) {
    return sw_carrier_is_blockdev(c) ? bst((sw_carrier *)c)->dev : NULL;
}

int64_t sw_blockdev_carrier_offset(sw_carrier *c) {
    if (!sw_carrier_is_blockdev(c) || sw_carrier_is_released(c))
        return 0;
    return bst(c)->offset;
}

int64_t sw_blockdev_carrier_extent(sw_carrier *c) {
    if (!sw_carrier_is_blockdev(c) || sw_carrier_is_released(c))
        return 0;
    return bst(c)->extent;
}

/* The checks of a bulk transfer on a carrier. */
static sw_status check_bulk(sw_carrier *c, int64_t offset, int64_t count,
                            const void *buf) {
    if (!sw_carrier_is_blockdev(c))
        return sw_fail(SW_ETYPE, "carrier is not a BlockDeviceCarrier");
    if (sw_carrier_is_released(c))
        return sw_carrier_fail_released();
    if (atomic_load(&bst(c)->dev->faulted))
        return fail_faulted();
    int64_t bytes = bst(c)->size * 4;
    if (offset < 0 || count < 0 || offset > bytes || count > bytes - offset)
        return sw_fail(SW_EINDEX, "Carrier index out of range");
    if (count > 0 && !buf)
        return sw_fail(SW_EVALUE, "pointer must be non-null");
    return SW_OK;
}

sw_status sw_blockdev_carrier_read(sw_carrier *c, int64_t offset, int64_t count,
                                   void *buf) {
    sw_status st = check_bulk(c, offset, count, buf);
    if (st || (st = sw_carrier_pin(c)))
        return st;
    st = carrier_io(c, 0, offset, count, NULL, buf);
    sw_carrier_unpin(c);
    return st;
}

sw_status sw_blockdev_carrier_write(sw_carrier *c, int64_t offset,
                                    int64_t count, const void *buf) {
    sw_status st = check_bulk(c, offset, count, buf);
    if (st)
        return st;
    if (!sw_carrier_is_mutable(c))
        return sw_carrier_fail_immutable();
    if ((st = sw_carrier_pin(c)))
        return st;
    st = carrier_io(c, 1, offset, count, buf, NULL);
    sw_carrier_unpin(c);
    return st;
}
