/* Status codes and the per-thread message of the last failure. */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/internal.h"

#define SW_ERRMSG_CAP 512

static _Thread_local char errmsg[SW_ERRMSG_CAP];
static _Thread_local sw_status errcode;

static _Thread_local int errnum;
/* Whether the last failure is a broken provider contract: set after the
 * failure is recorded, cleared by the next one. */
static _Thread_local int errcontract;

sw_status sw_fail(sw_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(errmsg, sizeof errmsg, fmt, ap);
    va_end(ap);
    errcode = status;
    errnum = 0;
    errcontract = 0;
    return status;
}

void sw_error_mark_contract(void) {
    errcontract = errcode != SW_OK;
}

int sw_error_is_contract(void) {
    return errcontract;
}

sw_status sw_fail_os(int err, const char *fmt, ...) {
    char what[SW_ERRMSG_CAP / 2];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    /* strerror is not thread-safe everywhere; the POSIX variant is. */
    char text[128] = "";
#if defined(__GLIBC__) && defined(_GNU_SOURCE)
    const char *msg = strerror_r(err, text, sizeof text);
#else
    const char *msg = strerror_r(err, text, sizeof text) == 0 ? text : "";
#endif
    snprintf(errmsg, sizeof errmsg, "%s: %s", what, msg);
    errcode = SW_EOS;
    errnum = err;
    errcontract = 0;
    return SW_EOS;
}

sw_status sw_restore_error(sw_status status, int err, const char *message) {
    snprintf(errmsg, sizeof errmsg, "%s", message ? message : "");
    errcode = status;
    errnum = status == SW_EOS ? err : 0;
    errcontract = 0;
    return status;
}

sw_status sw_set_error(sw_status status, const char *message) {
    return sw_fail(status, "%s", message ? message : "");
}

int sw_errno(void) {
    return errnum;
}

const char *sw_errmsg(void) {
    return errmsg;
}

sw_status sw_errcode(void) {
    return errcode;
}

void sw_clear_error(void) {
    errmsg[0] = '\0';
    errcode = SW_OK;
    errnum = 0;
    errcontract = 0;
}

const char *sw_status_name(sw_status status) {
    static const char *const names[SW_STATUS_COUNT] = {
        "SW_OK",       "SW_ENOMEM",    "SW_ETYPE",    "SW_EVALUE",
        "SW_EINDEX",   "SW_EKEY",      "SW_ERUNTIME", "SW_EBUFFER",
        "SW_ENOTIMPL", "SW_EOVERFLOW", "SW_EOS",      "SW_EINTERRUPTED",
    };
    if ((int)status < 0 || (int)status >= SW_STATUS_COUNT)
        return "SW_UNKNOWN";
    return names[status];
}

const char *sw_version(void) {
    return "0.1.0";
}
