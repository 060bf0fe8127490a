/*
 * StrideWeave base: status codes, error messages and the allocation hook.
 *
 * Every fallible function in the library returns an sw_status. SW_OK (zero)
 * means success; any other value names the class of failure, and a message
 * describing it is available from sw_errmsg() on the same thread until the
 * next failing call on that thread. Results are written through
 * out-parameters, and only on success: on failure the out-parameter is left
 * untouched and nothing is leaked.
 */
#ifndef STRIDEWEAVE_BASE_H
#define STRIDEWEAVE_BASE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#if defined(SW_BUILDING_LIBRARY)
#define SW_API __declspec(dllexport)
#else
#define SW_API
#endif
#elif defined(SW_API_HIDDEN)
/* A copy of the library linked into one module that exports none of it
 * (the Python extension): its calls into itself then bind directly. */
#define SW_API
#else
#define SW_API __attribute__((visibility("default")))
#endif

#define SW_VERSION_MAJOR 0
#define SW_VERSION_MINOR 1
#define SW_VERSION_PATCH 0

/*
 * Status codes. Each maps to exactly one Python exception type, given in
 * the comment; the binding relies on this one-to-one mapping.
 */
typedef enum sw_status {
    SW_OK = 0,
    SW_ENOMEM = 1,       /* MemoryError: an allocation failed */
    SW_ETYPE = 2,        /* TypeError: an argument has the wrong kind */
    SW_EVALUE = 3,       /* ValueError: an argument has an inadmissible value */
    SW_EINDEX = 4,       /* IndexError: an index is out of range */
    SW_EKEY = 5,         /* KeyError: a name is not registered */
    SW_ERUNTIME = 6,     /* RuntimeError: the object's state forbids the call */
    SW_EBUFFER = 7,      /* BufferError: a buffer protocol request failed */
    SW_ENOTIMPL = 8,     /* NotImplementedError: not supported here */
    SW_EOVERFLOW = 9,    /* OverflowError: a value does not fit its type */
    SW_EOS = 10,         /* OSError: the operating system refused */
    SW_EINTERRUPTED = 11 /* KeyboardInterrupt: an interrupt request stopped
                            long work (see sw_interrupt_request) */
} sw_status;

#define SW_STATUS_COUNT 12

/*
 * The message of the last failure on the calling thread. The returned
 * string is owned by the library and stays valid until the next failing
 * call on this thread. Returns "" if nothing has failed yet.
 */
SW_API const char *sw_errmsg(void);

/* The status of the last failure on the calling thread (SW_OK if none). */
SW_API sw_status sw_errcode(void);

/*
 * The operating system's error number (errno) behind the last SW_EOS
 * failure on the calling thread, so that bindings can pick a precise
 * exception (FileExistsError, ...). 0 if the last failure was not SW_EOS.
 */
SW_API int sw_errno(void);

/* A short constant name for a status, such as "SW_EVALUE". */
SW_API const char *sw_status_name(sw_status status);

/*
 * Records a failure with a message, for backends and host-language
 * bindings whose vtable slots fail, and returns status (so a slot can
 * write `return sw_set_error(SW_EVALUE, "...")`).
 */
SW_API sw_status sw_set_error(sw_status status, const char *message);

/* Clears the calling thread's last failure. */
SW_API void sw_clear_error(void);

/*
 * Fault injection for tests. After sw_debug_fail_alloc_after(n) with n >= 0,
 * the library's allocator succeeds n more times, then every later request
 * fails (as if the system were out of memory) until the hook is disabled
 * with a negative n. The counter is process-wide.
 */
SW_API void sw_debug_fail_alloc_after(int64_t n);

/*
 * The number of library allocations currently live (allocated and not yet
 * freed), process-wide. Tests compare it before and after a call to prove
 * that nothing leaked.
 */
SW_API int64_t sw_debug_live_allocs(void);

/*
 * Peers, for bindings. A reference-counted library object (a carrier, a
 * tensor) may have one peer: the object that represents it in a host
 * language. The peer holds one reference to the library object; while
 * anything else holds one too, the library object keeps its peer alive
 * through these hooks (retain when the count rises from 1 to 2, release
 * when it falls back to 1), so the pair lives exactly as long as either is
 * used, without a reference cycle. Hooks run on the thread that changes
 * the count.
 *
 * The reference a library object holds on its peer while it has other
 * holders is invisible to a host's cycle collector. A binding that wants
 * cycles through library objects collected reads the current count
 * (sw_carrier_refcount, sw_tensor_refcount, sw_op_refcount) and the
 * references an object holds (its getters) to tell when every holder is
 * one its collector sees; the counts are snapshots that other threads may
 * change at any moment.
 */
typedef struct sw_peer_hooks {
    void (*retain)(void *peer);
    void (*release)(void *peer);
} sw_peer_hooks;

/*
 * Interrupting long work (a Ctrl-C during a large matmul).
 *
 * sw_interrupt_request() raises a process-wide request. Long library work
 * on a thread that watches for it (sw_interrupt_watch) checks it between
 * chunks of work and fails with SW_EINTERRUPTED, "operation interrupted":
 * elementwise, copy and reduction kernels before they start and then about
 * every 2^20 elements (runs longer than 2^23 elements are cut), GEMM
 * before every cache block (at most about 113 MFLOP), the reverse pass
 * before every node. What an interrupted call leaves: an operation's
 * result is discarded and nothing is returned (its inputs were only read);
 * a reverse pass keeps the gradients it accumulated before the node where
 * it stopped, exactly as when a node fails for any other reason. Nothing
 * else stops midway: scatter, element writes and moves run to completion,
 * so an in-place target is never left half-written.
 *
 * The request stays raised until sw_interrupt_clear(): work that starts
 * while it is raised fails at its first check, so a C program can raise it
 * from a SIGINT handler and clear it where it handles the interruption.
 * sw_interrupt_request and sw_interrupt_clear are one lock-free atomic
 * store each: async-signal-safe and callable from any thread.
 */
SW_API void sw_interrupt_request(void);
SW_API void sw_interrupt_clear(void);

/* Non-zero while a request is raised (not cleared). */
SW_API int sw_interrupt_requested(void);

/*
 * Whether long work on the calling thread stops for a raised request
 * (watch != 0) or ignores it; returns the previous setting. A thread starts
 * not watching, so that a request meant for one thread (the Python
 * binding's main thread, while it runs a kernel without the GIL) never
 * stops work on another. Not async-signal-safe (thread-local state).
 */
SW_API int sw_interrupt_watch(int watch);

/* The library version as "MAJOR.MINOR.PATCH"; a static string. */
SW_API const char *sw_version(void);

#ifdef __cplusplus
}
#endif

#endif /* STRIDEWEAVE_BASE_H */
