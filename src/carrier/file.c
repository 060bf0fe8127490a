/*
 * The FileBacked carrier: raw values in a binary file, read and written in
 * place with pread/pwrite, so memory use does not depend on the file's
 * size. Temporary files are tracked so that they can all be removed at
 * exit.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "carrier/internal.h"

typedef struct file_state {
    int fd;
    int mutable_;
    int temporary;
    char *path;
    /* Links of the registry of temporary files. */
    struct file_state *prev, *next;
} file_state;

/* ------------------------------------------------------------ io faults */

static atomic_int_fast64_t io_countdown = -1;

void sw_debug_fail_io_after(int64_t n) {
    atomic_store(&io_countdown, n < 0 ? -1 : n);
}

/* True when the fault hook says this file operation must fail. */
static bool io_fault(void) {
    int_fast64_t left = atomic_load(&io_countdown);
    while (left >= 0) {
        if (left == 0)
            return true;
        if (atomic_compare_exchange_weak(&io_countdown, &left, left - 1))
            return false;
    }
    return false;
}

/* ------------------------------------------------------- the temporaries */

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static file_state *registry;

static void registry_add(file_state *f) {
    pthread_mutex_lock(&registry_lock);
    f->prev = NULL;
    f->next = registry;
    if (registry)
        registry->prev = f;
    registry = f;
    pthread_mutex_unlock(&registry_lock);
}

/* Unlinks a temporary's file and forgets it (idempotent). */
static void registry_remove(file_state *f) {
    pthread_mutex_lock(&registry_lock);
    if (f->temporary) {
        unlink(f->path);
        f->temporary = 0;
        if (f->prev)
            f->prev->next = f->next;
        else
            registry = f->next;
        if (f->next)
            f->next->prev = f->prev;
        f->prev = f->next = NULL;
    }
    pthread_mutex_unlock(&registry_lock);
}

void sw_file_remove_temporaries(void) {
    pthread_mutex_lock(&registry_lock);
    for (file_state *f = registry; f; f = f->next) {
        unlink(f->path);
        f->temporary = 0;
    }
    /* The files stay open; only their names are gone. */
    for (file_state *f = registry, *next; f; f = next) {
        next = f->next;
        f->prev = f->next = NULL;
    }
    registry = NULL;
    pthread_mutex_unlock(&registry_lock);
}

/* -------------------------------------------------------------- storage */

static file_state *fst(sw_carrier *c) {
    return sw_carrier_state(c);
}

static int64_t item(sw_carrier *c) {
    return sw_dtype_itemsize(sw_carrier_dtype(c));
}

static int64_t file_size(sw_carrier *c) {
    struct stat sb;
    if (fst(c)->fd < 0 || fstat(fst(c)->fd, &sb) != 0)
        return 0;
    return (int64_t)sb.st_size / item(c);
}

static sw_status io_error(sw_carrier *c, const char *what, int err) {
    return sw_fail_os(err, "FileBacked %s of %s failed", what, fst(c)->path);
}

/* Reads or writes exactly n bytes at byte offset off. */
static sw_status transfer(sw_carrier *c, int write, int64_t off, int64_t n,
                          void *buf) {
    char *p = buf;
    while (n > 0) {
        if (io_fault())
            return io_error(c, write ? "write" : "read", ENOSPC);
        ssize_t k = write ? pwrite(fst(c)->fd, p, (size_t)n, (off_t)off)
                          : pread(fst(c)->fd, p, (size_t)n, (off_t)off);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return io_error(c, write ? "write" : "read", errno);
        if (k == 0)
            return sw_fail(SW_EOS, "FileBacked file %s is truncated",
                           fst(c)->path);
        p += k;
        off += k;
        n -= k;
    }
    return SW_OK;
}

/* Converts one value into its bytes in the file's dtype. */
static sw_status encode(sw_dtype dtype, const sw_value *v, void *dst) {
    if (v->kind == SW_VALUE_HOST) {
        sw_value n;
        if (!v->ops || !v->ops->to_number)
            return sw_fail(SW_ETYPE, "FileBacked value must be a number");
        sw_status st = v->ops->to_number(v, &n);
        if (st == SW_ETYPE)
            return sw_fail(SW_ETYPE, "FileBacked value must be a number");
        if (st)
            return st;
        if (n.kind == SW_VALUE_HOST)
            return sw_fail(SW_ETYPE, "FileBacked value must be a number");
        return encode(dtype, &n, dst);
    }
    if (dtype == SW_DTYPE_INT32) {
        if (v->kind == SW_VALUE_F64)
            return sw_fail(SW_ETYPE, "FileBacked value must be an integer");
        int64_t i = v->kind == SW_VALUE_I64 ? v->as.i : 0;
        if (i < INT32_MIN || i > INT32_MAX)
            return sw_fail(SW_EOVERFLOW,
                           "FileBacked value is out of int32 range");
        int32_t x = (int32_t)i;
        memcpy(dst, &x, sizeof x);
        return SW_OK;
    }
    double d = v->kind == SW_VALUE_F64   ? v->as.f
               : v->kind == SW_VALUE_I64 ? (double)v->as.i
                                         : 0.0;
    if (dtype == SW_DTYPE_FLOAT32) {
        float f = (float)d;
        memcpy(dst, &f, sizeof f);
    } else {
        memcpy(dst, &d, sizeof d);
    }
    return SW_OK;
}

static sw_value decode(sw_dtype dtype, const void *src) {
    if (dtype == SW_DTYPE_INT32) {
        int32_t x;
        memcpy(&x, src, sizeof x);
        return sw_value_i64(x);
    }
    if (dtype == SW_DTYPE_FLOAT32) {
        float f;
        memcpy(&f, src, sizeof f);
        return sw_value_f64(f);
    }
    double d;
    memcpy(&d, src, sizeof d);
    return sw_value_f64(d);
}

static sw_status file_get(sw_carrier *c, int64_t i, sw_value *out) {
    unsigned char buf[8];
    sw_status st = transfer(c, 0, i * item(c), item(c), buf);
    if (st)
        return st;
    *out = decode(sw_carrier_dtype(c), buf);
    return SW_OK;
}

static sw_status file_set(sw_carrier *c, int64_t i, const sw_value *v) {
    unsigned char buf[8];
    sw_status st = encode(sw_carrier_dtype(c), v, buf);
    if (st)
        return st;
    return transfer(c, 1, i * item(c), item(c), buf);
}

static int file_is_mutable(sw_carrier *c) {
    return fst(c)->mutable_;
}

static void file_release(sw_carrier *c) {
    file_state *f = fst(c);
    registry_remove(f);
    if (f->fd >= 0)
        close(f->fd);
    f->fd = -1;
}

static void file_destroy(sw_carrier *c) {
    file_state *f = fst(c);
    sw_free(f->path);
    sw_free(f);
}

static sw_status file_allocate_like(sw_carrier *c, int64_t size, int mutable_,
                                    sw_dtype dtype, int empty,
                                    sw_carrier **out) {
    sw_carrier *r = NULL;
    sw_status st = sw_file_new(NULL, dtype, 1, &r);
    if (!st)
        st = sw_file_resize(r, size);
    if (st) {
        sw_carrier_unref(r);
        return st;
    }
    fst(r)->mutable_ = mutable_ != 0;
    *out = r;
    return SW_OK;
}

static sw_status file_new_like(sw_carrier *c, int64_t n, const sw_value *values,
                               int mutable_, sw_dtype dtype, sw_carrier **out) {
    enum { CHUNK = 1024 };
    unsigned char buf[CHUNK * 8];
    sw_carrier *r = NULL;
    sw_status st = file_allocate_like(c, n, 1, dtype, 0, &r);
    int64_t size = sw_dtype_itemsize(dtype);
    /* Converts and writes a chunk at a time: memory stays constant. */
    for (int64_t i = 0; !st && i < n; i += CHUNK) {
        int64_t m = n - i < CHUNK ? n - i : CHUNK;
        for (int64_t k = 0; !st && k < m; ++k)
            st = encode(dtype, &values[i + k], buf + k * size);
        if (!st)
            st = transfer(r, 1, i * size, m * size, buf);
    }
    if (st) {
        sw_carrier_unref(r);
        return st;
    }
    fst(r)->mutable_ = mutable_ != 0;
    *out = r;
    return SW_OK;
}

static const sw_carrier_class file_class = {
    .version = SW_CARRIER_CLASS_VERSION,
    .name = "FileBacked",
    .size = file_size,
    .get = file_get,
    .set = file_set,
    .is_mutable = file_is_mutable,
    .release = file_release,
    .destroy = file_destroy,
    .allocate_like = file_allocate_like,
    .new_like = file_new_like,
};

/* Copies a string with the library allocator. */
static char *dup_string(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = sw_malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

/* Creates the file: exclusively at path, or a fresh temporary. */
static sw_status create_file(const char *path, int *fd, char **name) {
    if (io_fault())
        return sw_fail_os(ENOSPC, "FileBacked cannot create a file");
    if (path) {
        char *copy = dup_string(path);
        if (!copy)
            return sw_oom();
        int f = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (f < 0) {
            int err = errno;
            sw_free(copy);
            return sw_fail_os(err, "FileBacked cannot create %s", path);
        }
        *fd = f;
        *name = copy;
        return SW_OK;
    }
    const char *dir = getenv("TMPDIR");
    if (!dir || !*dir)
        dir = "/tmp";
    size_t n = strlen(dir) + sizeof "/strideweave-XXXXXX";
    char *tmpl = sw_malloc(n);
    if (!tmpl)
        return sw_oom();
    snprintf(tmpl, n, "%s/strideweave-XXXXXX", dir);
    int f = mkstemp(tmpl);
    if (f < 0) {
        int err = errno;
        sw_free(tmpl);
        return sw_fail_os(err,
                          "FileBacked cannot create a temporary file in "
                          "%s",
                          dir);
    }
    *fd = f;
    *name = tmpl;
    return SW_OK;
}

sw_status sw_file_new(const char *path, sw_dtype dtype, int mutable_,
                      sw_carrier **out) {
    if (dtype != SW_DTYPE_FLOATING && dtype != SW_DTYPE_FLOAT32 &&
        dtype != SW_DTYPE_INT32)
        return sw_fail(SW_EVALUE, "FileBacked dtype must be DType.Floating, "
                                  "DType.Float32, or DType.Int32");
    file_state *f = sw_malloc(sizeof *f);
    if (!f)
        return sw_oom();
    memset(f, 0, sizeof *f);
    sw_status st = create_file(path, &f->fd, &f->path);
    if (st) {
        sw_free(f);
        return st;
    }
    f->mutable_ = mutable_ != 0;
    f->temporary = path == NULL;
    st = sw_carrier_new(&file_class, f, dtype, out);
    if (st) {
        close(f->fd);
        unlink(f->path);
        sw_free(f->path);
        sw_free(f);
        return st;
    }
    if (f->temporary)
        registry_add(f);
    return SW_OK;
}

int sw_carrier_is_file(const sw_carrier *c) {
    return sw_carrier_get_class(c) == &file_class;
}

const char *sw_file_path(const sw_carrier *c) {
    return sw_carrier_is_file(c) ? fst((sw_carrier *)c)->path : NULL;
}

int sw_file_is_temporary(const sw_carrier *c) {
    return sw_carrier_is_file(c) && fst((sw_carrier *)c)->temporary;
}

static sw_status check_live_file(sw_carrier *c) {
    if (!sw_carrier_is_file(c))
        return sw_fail(SW_ETYPE, "carrier is not a FileBacked carrier");
    if (sw_carrier_is_released(c))
        return sw_carrier_fail_released();
    return SW_OK;
}

sw_status sw_file_resize(sw_carrier *c, int64_t size) {
    sw_status st = check_live_file(c);
    if (!st)
        st = sw_carrier_check_move(c);
    if (st)
        return st;
    int64_t bytes;
    if (size < 0)
        return sw_fail(SW_EVALUE,
                       "FileBacked allocation size must be non-negative");
    if (!sw_mul_ok(size, item(c), &bytes))
        return sw_fail(SW_EVALUE, "FileBacked size is too large");
    if ((st = sw_carrier_pin(c)))
        return st;
    if (io_fault())
        st = io_error(c, "resize", ENOSPC);
    else if (ftruncate(fst(c)->fd, (off_t)bytes) != 0)
        st = io_error(c, "resize", errno);
    sw_carrier_unpin(c);
    return st;
}

static sw_status check_range(sw_carrier *c, int64_t i, int64_t n) {
    sw_status st = check_live_file(c);
    if (st)
        return st;
    if (i < 0 || n < 0 || i > file_size(c) || n > file_size(c) - i)
        return sw_fail(SW_EINDEX, "Carrier index out of range");
    return SW_OK;
}

sw_status sw_file_read(sw_carrier *c, int64_t i, int64_t n, void *buf) {
    sw_status st = check_range(c, i, n);
    if (st || (st = sw_carrier_pin(c)))
        return st;
    st = transfer(c, 0, i * item(c), n * item(c), buf);
    sw_carrier_unpin(c);
    return st;
}

sw_status sw_file_write(sw_carrier *c, int64_t i, int64_t n, const void *buf) {
    sw_status st = check_range(c, i, n);
    if (st)
        return st;
    if (!sw_carrier_is_mutable(c))
        return sw_carrier_fail_immutable();
    if ((st = sw_carrier_pin(c)))
        return st;
    st = transfer(c, 1, i * item(c), n * item(c), (void *)buf);
    sw_carrier_unpin(c);
    if (st)
        return st;
    return sw_carrier_bump_version(c);
}
