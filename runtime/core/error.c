/*
 * error.c - the two error modes and the last error.
 *
 * AG_ERRORS_EXIT prints "file:line: error: message" and exits with status 1;
 * AG_ERRORS_RETURN records the message and lets the failing call return an
 * error tensor. The last error is per thread, since concurrent callers
 * would otherwise read each other's messages.
 */
#include "rt.h"

#include <stdlib.h>
#include <string.h>

static atomic_int error_mode = AG_ERRORS_EXIT;
static _Thread_local char last_error[1024];
static _Thread_local bool has_last_error;

void ag_set_error_mode(ag_error_mode mode) { atomic_store(&error_mode, (int)mode); }
ag_error_mode ag_get_error_mode(void) { return (ag_error_mode)atomic_load(&error_mode); }

const char *ag_last_error(void) { return has_last_error ? last_error : NULL; }
void ag_clear_error(void) { has_last_error = false; }

bool ag_is_error(ag_tensor t) { return t.id == 0; }

void rt_err_set(rt_err *e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
}

void rt_vreport(ag_loc loc, const char *fmt, va_list ap)
{
    char msg[768];
    vsnprintf(msg, sizeof msg, fmt, ap);
    if (loc.file)
        snprintf(last_error, sizeof last_error, "%s:%d: %s", loc.file, loc.line, msg);
    else
        snprintf(last_error, sizeof last_error, "%s", msg);
    has_last_error = true;
    if (ag_get_error_mode() == AG_ERRORS_RETURN)
        return;
    fflush(stdout);
    if (loc.file)
        fprintf(stderr, "%s:%d: error: %s\n", loc.file, loc.line, msg);
    else
        fprintf(stderr, "error: %s\n", msg);
    exit(1);
}

void rt_report(ag_loc loc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    rt_vreport(loc, fmt, ap);
    va_end(ap);
}
