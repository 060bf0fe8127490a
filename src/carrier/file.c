/*
 * The FileBacked carrier: raw values in a binary file, read and written in
 * place with pread/pwrite, so memory use does not depend on the file's
 * size.
 *
 * Names. A temporary never has a name in the file system: it is an
 * O_TMPFILE file, or, where the file system cannot make one, a file
 * unlinked right after its creation. The kernel reclaims it however the
 * process ends, and no other process (a forked child) can remove it. A
 * named file is created exclusively at construction, which reserves the
 * name. A staged resize gives the carrier a fresh file in the same
 * directory (unnamed where possible, else an obviously named partial
 * file); its commit publishes that file under the name with rename(2),
 * which replaces the reserved file in one step. The name therefore shows
 * the contents from before the stage or the complete new ones, whenever
 * the process dies.
 *
 * Threads. The state's lock guards the descriptors and the stage: I/O
 * holds it shared for the length of its system calls, so that release
 * (which may run on any thread, once the last reader has let go), stage,
 * commit and abandon, which close or swap descriptors and hold it
 * exclusively, never close a descriptor under a running pread or pwrite.
 * The path, the directory for temporaries and the temporary flag are set
 * at construction and never change; the mutability is set before the
 * carrier is handed out.
 */
#define _GNU_SOURCE /* O_TMPFILE */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "carrier/internal.h"
#include "strideweave/capability.h"

typedef struct file_state {
    pthread_rwlock_t lock;
    /* Guarded by lock. */
    int fd;           /* the file reads and writes see; -1 after release */
    int base_fd;      /* while staged: the file from before; else -1 */
    char *stage_name; /* while staged in a named partial file: its path */
    pid_t stage_pid;  /* the process that staged */
    /* Fixed once the carrier is handed out. */
    int mutable_;
    int temporary;
    /* A window (sw_file_open_window): element 0 is at byte origin and
     * there are window elements, a size no resize changes; window < 0
     * (SW_FILE_WHOLE) for a whole file (origin 0). */
    int64_t origin;
    int64_t window;
    char *path; /* absolute; a temporary's never exists */
    char *dir;  /* absolute: where this carrier's like-temporaries go */
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

static atomic_int tmpfile_disabled;

void sw_debug_file_no_tmpfile(int disable) {
    atomic_store(&tmpfile_disabled, disable != 0);
}

/* ------------------------------------------------------------- names */

/* a + b + c with the library allocator; NULL when out of memory. */
static char *concat3(const char *a, const char *b, const char *c) {
    size_t na = strlen(a), nb = strlen(b), nc = strlen(c);
    char *r = sw_malloc(na + nb + nc + 1);
    if (r) {
        memcpy(r, a, na);
        memcpy(r + na, b, nb);
        memcpy(r + na + nb, c, nc + 1);
    }
    return r;
}

/* The absolute form of path: the working directory joined with a relative
 * path, links and dots left as they are (as the file system will read
 * them from the working directory of now). */
static sw_status make_absolute(const char *path, char **out) {
    if (path[0] == '/') {
        *out = concat3(path, "", "");
        return *out ? SW_OK : sw_oom();
    }
    for (size_t cap = 256;; cap *= 2) {
        char *cwd = sw_malloc(cap);
        if (!cwd)
            return sw_oom();
        if (getcwd(cwd, cap)) {
            *out = concat3(cwd, strcmp(cwd, "/") == 0 ? "" : "/", path);
            sw_free(cwd);
            return *out ? SW_OK : sw_oom();
        }
        int err = errno;
        sw_free(cwd);
        if (err != ERANGE || cap >= ((size_t)1 << 20))
            return sw_fail_os(err,
                              "FileBacked cannot resolve %s against the "
                              "working directory",
                              path);
    }
}

/* The directory part of an absolute path. */
static char *dir_of(const char *path) {
    const char *slash = strrchr(path, '/');
    size_t n = slash == path ? 1 : (size_t)(slash - path);
    char *d = sw_malloc(n + 1);
    if (d) {
        memcpy(d, path, n);
        d[n] = '\0';
    }
    return d;
}

/* dir + "/" + name, without doubling the root's slash. */
static char *in_dir(const char *dir, const char *name) {
    return concat3(dir, strcmp(dir, "/") == 0 ? "" : "/", name);
}

/* A name unique in this process and among live processes: prefix, then
 * "-<pid>-<serial>". */
static atomic_uint name_serial;

static char *fresh_name(const char *prefix) {
    char tail[48];
    snprintf(tail, sizeof tail, "-%ld-%u", (long)getpid(),
             atomic_fetch_add(&name_serial, 1) + 1);
    return concat3(prefix, tail, "");
}

/*
 * Creates a new empty file exclusively at a fresh name after prefix.
 * Returns 0, -1 when out of memory, or the errno of the failure.
 */
static int create_fresh(const char *prefix, int *fd, char **name) {
    for (int tries = 0; tries < 64; tries++) {
        char *n = fresh_name(prefix);
        if (!n)
            return -1;
        int f = open(n, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (f >= 0) {
            *fd = f;
            *name = n;
            return 0;
        }
        int err = errno;
        sw_free(n);
        if (err != EEXIST)
            return err;
    }
    return EEXIST;
}

/*
 * A new file without a name in dir, or -1 with errno. errno is ENOTSUP
 * where the system or the file system cannot make one (old kernels
 * answer EISDIR or EINVAL), so that callers fall back to a name.
 */
static int open_unnamed(const char *dir) {
#ifdef O_TMPFILE
    if (!atomic_load(&tmpfile_disabled)) {
        int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        if (fd >= 0)
            return fd;
        if (errno != ENOTSUP && errno != EOPNOTSUPP && errno != EISDIR &&
            errno != EINVAL)
            return -1;
    }
#else
    (void)dir;
#endif
    errno = ENOTSUP;
    return -1;
}

/*
 * A temporary in dir: unnamed, or created at a fresh name and unlinked at
 * once. *label is the name a temporary reports as its path: the one it had
 * for that instant, or one of the same form.
 */
static sw_status create_temporary(const char *dir, int *fd, char **label) {
    char *prefix = in_dir(dir, "strideweave");
    if (!prefix)
        return sw_oom();
    sw_status st = SW_OK;
    int f = open_unnamed(dir);
    if (f >= 0) {
        *label = fresh_name(prefix);
        if (*label)
            *fd = f;
        else {
            close(f);
            st = sw_oom();
        }
    } else {
        int err = errno == ENOTSUP ? create_fresh(prefix, fd, label) : errno;
        if (err == 0)
            unlink(*label);
        else if (err < 0)
            st = sw_oom();
        else
            st = sw_fail_os(err,
                            "FileBacked cannot create a temporary file in "
                            "%s",
                            dir);
    }
    sw_free(prefix);
    return st;
}

/* Creates the named file exclusively, at its absolute path. */
static sw_status create_named(const char *given, int *fd, char **path) {
    char *abs = NULL;
    sw_status st = make_absolute(given, &abs);
    if (st)
        return st;
    int f = open(abs, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (f < 0) {
        st = sw_fail_os(errno, "FileBacked cannot create %s", abs);
        sw_free(abs);
        return st;
    }
    *fd = f;
    *path = abs;
    return SW_OK;
}

/* The window counts of open_named that are not element counts. */
#define SW_FILE_WHOLE (-2)
#define SW_FILE_TO_END (-1)

/* Whether window elements of itemsize bytes from byte origin lie inside a
 * file of size bytes. */
static int window_fits(int64_t origin, int64_t window, int64_t itemsize,
                       int64_t size) {
    int64_t bytes, end;
    return sw_mul_ok(window, itemsize, &bytes) &&
           sw_add_ok(origin, bytes, &end) && end <= size;
}

/*
 * Opens an existing regular file for a carrier of itemsize-byte elements:
 * read-write when mutable, else read-only. The whole file when *window is
 * SW_FILE_WHOLE; else a window from byte origin of *window elements,
 * which must lie inside the file, or with SW_FILE_TO_END of the whole
 * elements up to its end (*window is set to their count). Nothing is
 * created or removed.
 */
static sw_status open_named(const char *given, int mutable_, int64_t itemsize,
                            int64_t origin, int64_t *window, int *fd,
                            char **path) {
    char *abs = NULL;
    sw_status st = make_absolute(given, &abs);
    if (st)
        return st;
    int f = open(abs, (mutable_ ? O_RDWR : O_RDONLY) | O_CLOEXEC);
    if (f < 0) {
        st = sw_fail_os(errno, "FileBacked cannot open %s", abs);
        sw_free(abs);
        return st;
    }
    struct stat sb;
    if (fstat(f, &sb) != 0)
        st = sw_fail_os(errno, "FileBacked cannot open %s", abs);
    else if (!S_ISREG(sb.st_mode))
        st = sw_fail(SW_EVALUE, "FileBacked cannot open %s: not a regular file",
                     abs);
    else if (*window < 0 && origin > (int64_t)sb.st_size)
        st = sw_fail(SW_EVALUE,
                     "FileBacked file %s holds %lld bytes: a window from "
                     "byte %lld starts past its end",
                     abs, (long long)sb.st_size, (long long)origin);
    else if (*window < 0 && ((int64_t)sb.st_size - origin) % itemsize != 0)
        st = sw_fail(SW_EVALUE,
                     "FileBacked file %s holds %lld bytes, not a multiple of "
                     "%lld%s",
                     abs, (long long)sb.st_size - origin, (long long)itemsize,
                     origin ? " after the window's offset" : "");
    else if (*window >= 0 &&
             !window_fits(origin, *window, itemsize, (int64_t)sb.st_size))
        st = sw_fail(SW_EVALUE,
                     "FileBacked file %s holds %lld bytes: %lld elements of "
                     "%lld bytes from byte %lld pass its end",
                     abs, (long long)sb.st_size, (long long)*window,
                     (long long)itemsize, (long long)origin);
    if (!st && *window == SW_FILE_TO_END)
        *window = ((int64_t)sb.st_size - origin) / itemsize;
    if (st) {
        close(f);
        sw_free(abs);
        return st;
    }
    *fd = f;
    *path = abs;
    return SW_OK;
}

/* ------------------------------------------------------------ raw I/O */

/* Reads or writes exactly n bytes at byte offset off of fd. */
static sw_status raw_io(int fd, int write, int64_t off, int64_t n, void *buf,
                        const char *path) {
    char *p = buf;
    while (n > 0) {
        if (io_fault())
            return sw_fail_os(ENOSPC, "FileBacked %s of %s failed",
                              write ? "write" : "read", path);
        ssize_t k = write ? pwrite(fd, p, (size_t)n, (off_t)off)
                          : pread(fd, p, (size_t)n, (off_t)off);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return sw_fail_os(errno, "FileBacked %s of %s failed",
                              write ? "write" : "read", path);
        if (k == 0)
            return sw_fail(SW_EOS, "FileBacked file %s is truncated", path);
        p += k;
        off += k;
        n -= k;
    }
    return SW_OK;
}

/* -------------------------------------------------------------- storage */

static file_state *fst(sw_carrier *c) {
    return sw_carrier_state(c);
}

static int64_t item(sw_carrier *c) {
    return sw_dtype_itemsize(sw_carrier_dtype(c));
}

static int64_t file_size(sw_carrier *c) {
    file_state *f = fst(c);
    struct stat sb;
    pthread_rwlock_rdlock(&f->lock);
    int live = f->fd >= 0;
    int ok = live && (f->window >= 0 || fstat(f->fd, &sb) == 0);
    pthread_rwlock_unlock(&f->lock);
    if (!ok)
        return 0;
    return f->window >= 0 ? f->window : (int64_t)sb.st_size / item(c);
}

/* Reads or writes exactly n bytes at byte offset off of the carrier's
 * elements (of its window, for a window) in its current file. */
static sw_status transfer(sw_carrier *c, int write, int64_t off, int64_t n,
                          void *buf) {
    file_state *f = fst(c);
    pthread_rwlock_rdlock(&f->lock);
    sw_status st = f->fd < 0
                       ? sw_carrier_fail_released()
                       : raw_io(f->fd, write, f->origin + off, n, buf, f->path);
    pthread_rwlock_unlock(&f->lock);
    return st;
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

/* Ends a stage, keeping the file from before; the stage's own name (a
 * named partial file) is removed only by the process that made it, never
 * by a forked child. Called with the lock held exclusively. */
static void drop_stage(file_state *f) {
    if (f->base_fd < 0)
        return;
    if (f->fd >= 0)
        close(f->fd);
    f->fd = f->base_fd;
    f->base_fd = -1;
    if (f->stage_name) {
        if (f->stage_pid == getpid())
            unlink(f->stage_name);
        sw_free(f->stage_name);
        f->stage_name = NULL;
    }
}

/* Self-contained: it may run on any thread, after the last reader. */
static void file_release(sw_carrier *c) {
    file_state *f = fst(c);
    pthread_rwlock_wrlock(&f->lock);
    drop_stage(f);
    if (f->fd >= 0)
        close(f->fd);
    f->fd = -1;
    pthread_rwlock_unlock(&f->lock);
}

static void file_state_free(file_state *f) {
    pthread_rwlock_destroy(&f->lock);
    sw_free(f->stage_name);
    sw_free(f->path);
    sw_free(f->dir);
    sw_free(f);
}

static void file_destroy(sw_carrier *c) {
    file_state_free(fst(c));
}

static sw_status file_allocate_like(sw_carrier *c, int64_t size, int mutable_,
                                    sw_dtype dtype, int empty,
                                    sw_carrier **out) {
    sw_carrier *r = NULL;
    sw_status st = sw_file_new_in(NULL, fst(c)->dir, dtype, 1, &r);
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

/* sw_file_new_in, or with existing non-zero sw_file_open_in (window < 0)
 * and sw_file_open_window. */
static sw_status file_make(const char *path, const char *temporary_dir,
                           sw_dtype dtype, int mutable_, int existing,
                           int64_t origin, int64_t window, sw_carrier **out) {
    if (existing && !path)
        return sw_fail(SW_EVALUE, "FileBacked.open needs a path");
    if (dtype != SW_DTYPE_FLOATING && dtype != SW_DTYPE_FLOAT32 &&
        dtype != SW_DTYPE_INT32)
        return sw_fail(SW_EVALUE, "FileBacked dtype must be DType.Floating, "
                                  "DType.Float32, or DType.Int32");
    file_state *f = sw_calloc(1, sizeof *f);
    if (!f)
        return sw_oom();
    pthread_rwlockattr_t attr;
    int bad = pthread_rwlockattr_init(&attr);
#if defined(__GLIBC__)
    /* Readers that keep coming must not starve a release or a commit
     * (glibc prefers readers by default; no reader nests its lock). */
    if (!bad)
        (void)pthread_rwlockattr_setkind_np(
            &attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
#endif
    if (!bad) {
        bad = pthread_rwlock_init(&f->lock, &attr);
        pthread_rwlockattr_destroy(&attr);
    }
    if (bad) {
        sw_free(f);
        return sw_oom();
    }
    f->fd = f->base_fd = -1;
    f->origin = origin;
    f->window = window;
    sw_status st = make_absolute(
        temporary_dir && *temporary_dir ? temporary_dir : "/tmp", &f->dir);
    /* "dir/" and "dir" name one directory: one form of the paths. */
    for (size_t n = st ? 0 : strlen(f->dir); n > 1 && f->dir[n - 1] == '/';)
        f->dir[--n] = '\0';
    if (!st && io_fault())
        st = sw_fail_os(ENOSPC, "FileBacked cannot create %s",
                        path ? path : "a temporary file");
    if (!st && existing)
        st = open_named(path, mutable_, sw_dtype_itemsize(dtype), origin,
                        &f->window, &f->fd, &f->path);
    else if (!st)
        st = path ? create_named(path, &f->fd, &f->path)
                  : create_temporary(f->dir, &f->fd, &f->path);
    if (!st) {
        f->mutable_ = mutable_ != 0;
        f->temporary = path == NULL;
        st = sw_carrier_new(&file_class, f, dtype, out);
    }
    if (st) {
        if (f->fd >= 0) {
            close(f->fd);
            /* Only a file made here is removed, never an opened one. */
            if (path && !existing)
                unlink(f->path);
        }
        file_state_free(f);
        return st;
    }
    return SW_OK;
}

sw_status sw_file_new_in(const char *path, const char *temporary_dir,
                         sw_dtype dtype, int mutable_, sw_carrier **out) {
    return file_make(path, temporary_dir, dtype, mutable_, 0, 0, SW_FILE_WHOLE,
                     out);
}

sw_status sw_file_open_in(const char *path, const char *temporary_dir,
                          sw_dtype dtype, int mutable_, sw_carrier **out) {
    return file_make(path, temporary_dir, dtype, mutable_, 1, 0, SW_FILE_WHOLE,
                     out);
}

sw_status sw_file_open_window(const char *path, const char *temporary_dir,
                              sw_dtype dtype, int mutable_, int64_t offset,
                              int64_t count, sw_carrier **out) {
    if (offset < 0)
        return sw_fail(SW_EVALUE, "FileBacked window offset must be a "
                                  "non-negative byte offset");
    if (count < -1)
        return sw_fail(SW_EVALUE, "FileBacked window size must be "
                                  "non-negative, or -1 for the rest of the "
                                  "file");
    return file_make(path, temporary_dir, dtype, mutable_, 1, offset, count,
                     out);
}

int64_t sw_file_window_offset(const sw_carrier *c) {
    if (!c || !sw_carrier_is_file(c))
        return -1;
    const file_state *f = fst((sw_carrier *)c);
    return f->window >= 0 ? f->origin : -1;
}

sw_status sw_file_new(const char *path, sw_dtype dtype, int mutable_,
                      sw_carrier **out) {
    return sw_file_new_in(path, getenv("TMPDIR"), dtype, mutable_, out);
}

void sw_file_remove_temporaries(void) {
    /* Temporaries have no names left to remove. */
}

const sw_carrier_class *sw_file_class(void) {
    return &file_class;
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

/* The checks of every resize: a live file no other thread is moving, and
 * a size whose bytes fit. */
static sw_status check_resize(sw_carrier *c, int64_t size, int64_t *bytes) {
    sw_status st = check_live_file(c);
    if (!st)
        st = sw_carrier_check_move(c);
    if (st)
        return st;
    if (fst(c)->window >= 0)
        return sw_fail(SW_EVALUE,
                       "FileBacked window of %s has a fixed size: it cannot "
                       "be resized",
                       fst(c)->path);
    if (size < 0)
        return sw_fail(SW_EVALUE,
                       "FileBacked allocation size must be non-negative");
    if (!sw_mul_ok(size, item(c), bytes))
        return sw_fail(SW_EVALUE, "FileBacked size is too large");
    return SW_OK;
}

sw_status sw_file_resize(sw_carrier *c, int64_t size) {
    int64_t bytes = 0;
    sw_status st = check_resize(c, size, &bytes);
    if (st)
        return st;
    file_state *f = fst(c);
    pthread_rwlock_rdlock(&f->lock);
    if (f->fd < 0)
        st = sw_carrier_fail_released();
    else if (io_fault())
        st = sw_fail_os(ENOSPC, "FileBacked resize of %s failed", f->path);
    else if (ftruncate(f->fd, (off_t)bytes) != 0)
        st = sw_fail_os(errno, "FileBacked resize of %s failed", f->path);
    pthread_rwlock_unlock(&f->lock);
    return st;
}

/* ------------------------------------------------------ staged resizes */

/* The prefix of a partial file's names: beside the file, named after it,
 * or (form 1, for names too long for that) a shorter one in its
 * directory. */
static char *partial_prefix(const char *path, int form) {
    if (form == 0)
        return concat3(path, ".partial", "");
    char *dir = dir_of(path);
    char *r = dir ? in_dir(dir, "strideweave-partial") : NULL;
    sw_free(dir);
    return r;
}

/* Creates a named partial file for path. Returns 0, -1 when out of memory,
 * or an errno. */
static int create_partial(const char *path, int *fd, char **name) {
    int err = ENAMETOOLONG;
    for (int form = 0; form < 2 && err == ENAMETOOLONG; form++) {
        char *prefix = partial_prefix(path, form);
        if (!prefix)
            return -1;
        err = create_fresh(prefix, fd, name);
        sw_free(prefix);
    }
    return err;
}

/* Whether an unnamed file can get a name later (the commit links it
 * through /proc/self/fd). */
static bool can_link_later(int fd) {
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    return access(proc, F_OK) == 0;
}

/* Gives the unnamed file fd a fresh partial name for path. Returns 0, -1
 * when out of memory, or an errno. */
static int link_partial(int fd, const char *path, char **name) {
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    int err = ENAMETOOLONG;
    for (int form = 0; form < 2 && err == ENAMETOOLONG; form++) {
        char *prefix = partial_prefix(path, form);
        if (!prefix)
            return -1;
        err = EEXIST;
        for (int tries = 0; tries < 64 && err == EEXIST; tries++) {
            char *n = fresh_name(prefix);
            if (!n) {
                err = -1;
            } else if (linkat(AT_FDCWD, proc, AT_FDCWD, n, AT_SYMLINK_FOLLOW) ==
                       0) {
                *name = n;
                err = 0;
            } else {
                err = errno;
                sw_free(n);
            }
        }
        sw_free(prefix);
    }
    return err;
}

/* A fresh file for a stage of f: a temporary for a temporary, else an
 * unnamed file in the named file's directory or, failing that, a named
 * partial file there. */
static sw_status create_stage(file_state *f, int *fd, char **name) {
    *name = NULL;
    if (f->temporary) {
        char *label = NULL;
        sw_status st = create_temporary(f->dir, fd, &label);
        sw_free(label);
        return st;
    }
    char *dir = dir_of(f->path);
    if (!dir)
        return sw_oom();
    int s = open_unnamed(dir);
    sw_free(dir);
    if (s >= 0 && !can_link_later(s)) {
        close(s);
        s = -1;
        errno = ENOTSUP;
    }
    int err = 0;
    if (s >= 0)
        *fd = s;
    else
        err = errno == ENOTSUP ? create_partial(f->path, fd, name) : errno;
    if (err < 0)
        return sw_oom();
    if (err)
        return sw_fail_os(err, "FileBacked cannot stage a resize of %s",
                          f->path);
    return SW_OK;
}

/* Sizes a stage to bytes and copies the current file's first bytes into
 * it (as many as both hold); a named file's stage takes its permissions. */
static sw_status fill_stage(file_state *f, int stage, int64_t bytes) {
    enum { CHUNK = 1 << 20 };
    struct stat sb;
    if (fstat(f->fd, &sb) != 0)
        return sw_fail_os(errno, "FileBacked resize of %s failed", f->path);
    if (ftruncate(stage, (off_t)bytes) != 0)
        return sw_fail_os(errno, "FileBacked resize of %s failed", f->path);
    int64_t keep = (int64_t)sb.st_size < bytes ? (int64_t)sb.st_size : bytes;
    if (keep > 0) {
        int64_t chunk = keep < CHUNK ? keep : CHUNK;
        char *buf = sw_malloc((size_t)chunk);
        if (!buf)
            return sw_oom();
        sw_status st = SW_OK;
        for (int64_t off = 0; off < keep && !st; off += chunk) {
            int64_t m = keep - off < chunk ? keep - off : chunk;
            st = raw_io(f->fd, 0, off, m, buf, f->path);
            if (!st)
                st = raw_io(stage, 1, off, m, buf, f->path);
        }
        sw_free(buf);
        if (st)
            return st;
    }
    if (!f->temporary)
        (void)fchmod(stage, sb.st_mode & 07777);
    return SW_OK;
}

/*
 * Puts a named file's stage under its name. The stage gets a partial name
 * first if it has none, then replaces the reserved file by rename; a name
 * that holds another file by now is left alone. On failure the stage is
 * as it was (unnamed again, or under its partial name).
 */
static sw_status publish(file_state *f) {
    if (io_fault())
        return sw_fail_os(ENOSPC, "FileBacked cannot publish %s", f->path);
    struct stat now, mine;
    if (stat(f->path, &now) == 0 && fstat(f->base_fd, &mine) == 0 &&
        (now.st_dev != mine.st_dev || now.st_ino != mine.st_ino))
        return sw_fail_os(EEXIST,
                          "FileBacked cannot publish %s, which names another "
                          "file now",
                          f->path);
    char *linked = f->stage_name;
    if (!linked) {
        int err = link_partial(f->fd, f->path, &linked);
        if (err < 0)
            return sw_oom();
        if (err)
            return sw_fail_os(err, "FileBacked cannot publish %s", f->path);
    }
    sw_status st = SW_OK;
    if (rename(linked, f->path) != 0) {
        st = sw_fail_os(errno, "FileBacked cannot publish %s", f->path);
        if (linked != f->stage_name)
            unlink(linked);
    }
    if (linked != f->stage_name)
        sw_free(linked);
    return st;
}

sw_status sw_file_stage(sw_carrier *c, int64_t size) {
    int64_t bytes = 0;
    sw_status st = check_resize(c, size, &bytes);
    if (st)
        return st;
    file_state *f = fst(c);
    pthread_rwlock_wrlock(&f->lock);
    if (f->fd < 0)
        st = sw_carrier_fail_released();
    else if (f->base_fd >= 0)
        st = sw_fail(SW_ERUNTIME,
                     "FileBacked carrier already has a staged resize");
    else if (io_fault()) /* one file operation, as for sw_file_resize */
        st = sw_fail_os(ENOSPC, "FileBacked resize of %s failed", f->path);
    int fd = -1;
    char *name = NULL;
    if (!st)
        st = create_stage(f, &fd, &name);
    if (!st) {
        st = fill_stage(f, fd, bytes);
        if (st) {
            close(fd);
            if (name)
                unlink(name);
            sw_free(name);
        }
    }
    if (!st) {
        f->base_fd = f->fd;
        f->fd = fd;
        f->stage_name = name;
        f->stage_pid = getpid();
    }
    pthread_rwlock_unlock(&f->lock);
    return st;
}

sw_status sw_file_commit(sw_carrier *c) {
    sw_status st = check_live_file(c);
    if (!st)
        st = sw_carrier_check_move(c);
    if (st)
        return st;
    file_state *f = fst(c);
    pthread_rwlock_wrlock(&f->lock);
    if (f->fd < 0)
        st = sw_carrier_fail_released();
    else if (f->base_fd < 0)
        st = sw_fail(SW_ERUNTIME, "FileBacked carrier has no staged resize");
    else if (f->stage_pid != getpid())
        st = sw_fail(SW_ERUNTIME, "FileBacked staged resize belongs to "
                                  "another process");
    else if (!f->temporary)
        st = publish(f);
    if (!st) {
        close(f->base_fd);
        f->base_fd = -1;
        sw_free(f->stage_name);
        f->stage_name = NULL;
    }
    pthread_rwlock_unlock(&f->lock);
    return st;
}

sw_status sw_file_abandon(sw_carrier *c) {
    if (!sw_carrier_is_file(c))
        return sw_fail(SW_ETYPE, "carrier is not a FileBacked carrier");
    sw_status st = sw_carrier_check_move(c);
    if (st)
        return st;
    file_state *f = fst(c);
    pthread_rwlock_wrlock(&f->lock);
    drop_stage(f);
    pthread_rwlock_unlock(&f->lock);
    return SW_OK;
}

int sw_file_is_staged(const sw_carrier *c) {
    if (!sw_carrier_is_file(c))
        return 0;
    file_state *f = fst((sw_carrier *)c);
    pthread_rwlock_rdlock(&f->lock);
    int staged = f->base_fd >= 0;
    pthread_rwlock_unlock(&f->lock);
    return staged;
}

/* ------------------------------------------------------------ bulk I/O */

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

void sw_file_will_read(sw_carrier *c, int64_t i, int64_t n) {
    if (!sw_carrier_is_file(c))
        return;
    if (check_range(c, i, n)) {
        sw_clear_error();
        return;
    }
    file_state *f = fst(c);
    int64_t size = item(c);
    pthread_rwlock_rdlock(&f->lock);
    if (f->fd >= 0 && n > 0)
        (void)posix_fadvise(f->fd, (off_t)(f->origin + i * size),
                            (off_t)(n * size), POSIX_FADV_WILLNEED);
    pthread_rwlock_unlock(&f->lock);
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
