/*
 * Ctrl-C during long kernels: the SIGINT handler that raises the library's
 * interrupt request and chains to Python's (see gil.h).
 *
 * The handler and what it chains to are process-wide by nature (there is
 * one SIGINT disposition per process), so they live in file statics, not
 * in module state; only the main thread of the main interpreter, the one
 * Python delivers signals to, ever installs the handler.
 */
#include "errors.h"
#include "gil.h"

#include <errno.h>
#include <string.h>

#ifndef _WIN32

/* The disposition the handler replaced, called after raising the request.
 * Written only while the handler is not installed. */
static struct sigaction chained;

/* Set by the handler; read and reset by the main thread. */
static volatile sig_atomic_t sigint_seen;

static void on_sigint(int signo, siginfo_t *info, void *uctx) {
    int saved_errno = errno;
    sw_interrupt_request();
    sigint_seen = 1;
    if (chained.sa_flags & SA_SIGINFO) {
        if (chained.sa_sigaction != NULL) {
            chained.sa_sigaction(signo, info, uctx);
        }
    } else if (chained.sa_handler != SIG_DFL && chained.sa_handler != SIG_IGN) {
        chained.sa_handler(signo);
    }
    errno = saved_errno;
}

static int is_ours(const struct sigaction *a) {
    return (a->sa_flags & SA_SIGINFO) && a->sa_sigaction == on_sigint;
}

void swpy_interrupt_begin(swpy_interrupt *s, int64_t work) {
    s->active = 0;
    s->installed = 0;
    /* _PyOS_IsMainThread (intrcheck.h, private but exported): the main
     * thread of the main interpreter, the only one Python runs signal
     * handlers on. */
    if (work < SWPY_INTERRUPT_WORK || !_PyOS_IsMainThread()) {
        return;
    }
    struct sigaction cur;
    if (sigaction(SIGINT, NULL, &cur) != 0) {
        return;
    }
    if (!is_ours(&cur)) {
        if (!(cur.sa_flags & SA_SIGINFO) &&
            (cur.sa_handler == SIG_DFL || cur.sa_handler == SIG_IGN)) {
            /* Python does not handle SIGINT here: leave it as it is. */
            return;
        }
        chained = cur;
        struct sigaction act;
        memset(&act, 0, sizeof act);
        act.sa_sigaction = on_sigint;
        act.sa_flags = SA_SIGINFO | SA_ONSTACK;
        sigemptyset(&act.sa_mask);
        if (sigaction(SIGINT, &act, &s->saved) != 0) {
            return;
        }
        s->installed = 1;
    }
    s->active = 1;
    s->watching = sw_interrupt_watch(1);
}

int swpy_interrupt_end(swpy_interrupt *s) {
    if (!s->active) {
        return 0;
    }
    sw_interrupt_watch(s->watching);
    if (!s->installed) {
        return sigint_seen;
    }
    struct sigaction cur;
    if (sigaction(SIGINT, &s->saved, &cur) == 0 && !is_ours(&cur)) {
        /* Python code run by the section (a Python operation) set a new
         * handler: it stays. */
        sigaction(SIGINT, &cur, NULL);
    }
    int seen = sigint_seen;
    if (seen) {
        sigint_seen = 0;
        sw_interrupt_clear();
    }
    return seen;
}

#else /* _WIN32: no sigaction; kernels are not interrupted. */

void swpy_interrupt_begin(swpy_interrupt *s, int64_t work) {
    (void)work;
    s->active = 0;
    s->installed = 0;
}

int swpy_interrupt_end(swpy_interrupt *s) {
    (void)s;
    return 0;
}

#endif

int swpy_interrupted(int seen) {
#ifndef _WIN32
    sigint_seen = 0;
#endif
    sw_interrupt_clear();
    if (PyErr_CheckSignals() < 0) {
        return -1;
    }
    if (seen) {
        return 1;
    }
    PyErr_SetString(PyExc_KeyboardInterrupt, "operation interrupted");
    return -1;
}
