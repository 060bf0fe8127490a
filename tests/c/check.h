/*
 * Checks shared by the C test suites of carriers, tensors, files and
 * interop: a failing call's status and exact message, a succeeding call,
 * and the leak check against the library's live-allocation counter.
 * Callers make the call under test in a statement of its own (C leaves the
 * order of argument evaluation unspecified) and pass its status.
 */
#ifndef SW_TESTS_CHECK_H
#define SW_TESTS_CHECK_H

#include <stdbool.h>
#include <string.h>

#include "strideweave/base.h"
#include "tap.h"

static inline const char *S(sw_status st) {
    return sw_status_name(st);
}

static inline void leak_check(int64_t base, const char *what) {
    is_int(sw_debug_live_allocs(), base, "%s: no library allocation leaked",
           what);
}

/* A rejected call: its status and its exact message (or, with msg NULL, a
 * non-empty one). */
static inline void expect_fail(sw_status st, sw_status want, const char *msg,
                               const char *name) {
    is_int(st, want, "%s fails with %s (got %s)", name, S(want), S(st));
    if (st != SW_OK) {
        if (msg)
            is_str(sw_errmsg(), msg, "%s: message", name);
        else
            ok(strlen(sw_errmsg()) > 0, "%s sets a message ('%s')", name,
               sw_errmsg());
    }
    sw_clear_error();
}

/* A call that should succeed, reporting the failure if not. */
static inline bool expect_ok(sw_status st, const char *name) {
    if (!ok(st == SW_OK, "%s succeeds", name)) {
        diag("status %s: %s", S(st), sw_errmsg());
        sw_clear_error();
        return false;
    }
    return true;
}

#endif /* SW_TESTS_CHECK_H */
