/*
 * A tiny header-only TAP producer for the C unit tests.
 *
 * Each check prints "ok N - name" or "not ok N - name" on stdout; a failing
 * check also prints where it failed and what it saw as "# " comment lines.
 * done_testing() prints the plan "1..N" last, which TAP allows, so that a
 * test program never has to count its checks in advance.
 *
 * Names are printf formats: is_int(got, want, "index %d", i).
 */
#ifndef SW_TESTS_TAP_H
#define SW_TESTS_TAP_H

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__)
#define TAP_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define TAP_PRINTF(f, a)
#endif

/* Checks run and checks failed so far, in this program. */
static int tap_run;
static int tap_failed;

static inline void tap_vline(const char *prefix, const char *fmt, va_list ap) {
    fputs(prefix, stdout);
    vprintf(fmt, ap);
    fputc('\n', stdout);
}

/* Prints a "# " comment line; a TAP consumer shows it but does not parse it. */
static inline void diag(const char *fmt, ...) TAP_PRINTF(1, 2);
static inline void diag(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    tap_vline("# ", fmt, ap);
    va_end(ap);
}

/*
 * Reports one check. Returns cond so that callers can skip work that only
 * makes sense after a success (such as using an out-parameter).
 */
static inline int tap_vok(int cond, const char *file, int line, const char *fmt,
                          va_list ap) {
    tap_run++;
    printf("%s %d - ", cond ? "ok" : "not ok", tap_run);
    vprintf(fmt, ap);
    fputc('\n', stdout);
    if (!cond) {
        tap_failed++;
        printf("#   Failed test at %s line %d.\n", file, line);
    }
    /* Flushing keeps the stream complete if a later check crashes. */
    fflush(stdout);
    return cond;
}

static inline int tap_ok(int cond, const char *file, int line, const char *fmt,
                         ...) TAP_PRINTF(4, 5);
static inline int tap_ok(int cond, const char *file, int line, const char *fmt,
                         ...) {
    va_list ap;
    va_start(ap, fmt);
    int r = tap_vok(cond, file, line, fmt, ap);
    va_end(ap);
    return r;
}

static inline int tap_is_int(int64_t got, int64_t want, const char *file,
                             int line, const char *fmt, ...) TAP_PRINTF(5, 6);
static inline int tap_is_int(int64_t got, int64_t want, const char *file,
                             int line, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int r = tap_vok(got == want, file, line, fmt, ap);
    va_end(ap);
    if (!r) {
        printf("#          got: %" PRId64 "\n", got);
        printf("#     expected: %" PRId64 "\n", want);
    }
    return r;
}

static inline int tap_is_str(const char *got, const char *want,
                             const char *file, int line, const char *fmt, ...)
    TAP_PRINTF(5, 6);
static inline int tap_is_str(const char *got, const char *want,
                             const char *file, int line, const char *fmt, ...) {
    /* NULL equals only NULL, so a missing result still reports cleanly. */
    int same =
        (got == NULL || want == NULL) ? got == want : strcmp(got, want) == 0;
    va_list ap;
    va_start(ap, fmt);
    int r = tap_vok(same, file, line, fmt, ap);
    va_end(ap);
    if (!r) {
        printf("#          got: %s%s%s\n", got ? "'" : "", got ? got : "NULL",
               got ? "'" : "");
        printf("#     expected: %s%s%s\n", want ? "'" : "",
               want ? want : "NULL", want ? "'" : "");
    }
    return r;
}

/* The macros record where a check was written, for the failure report. */
#define ok(cond, ...) tap_ok((cond) ? 1 : 0, __FILE__, __LINE__, __VA_ARGS__)
#define is_int(got, want, ...)                                                 \
    tap_is_int((int64_t)(got), (int64_t)(want), __FILE__, __LINE__, __VA_ARGS__)
#define is_str(got, want, ...)                                                 \
    tap_is_str((got), (want), __FILE__, __LINE__, __VA_ARGS__)

/* Prints the plan and returns the program's exit status. */
/* Stops the whole run (TAP's "Bail out!"), for failures of the test itself,
 * such as its own scratch allocation. */
static inline void bail_out(const char *why) {
    printf("Bail out! %s\n", why);
    fflush(stdout);
    exit(1);
}

static inline int done_testing(void) {
    printf("1..%d\n", tap_run);
    if (tap_failed)
        printf("# Looks like you failed %d test%s of %d.\n", tap_failed,
               tap_failed == 1 ? "" : "s", tap_run);
    fflush(stdout);
    return tap_failed ? 1 : 0;
}

#endif /* SW_TESTS_TAP_H */
