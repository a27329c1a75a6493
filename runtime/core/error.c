/*
 * error.c - the two error modes and the last error.
 *
 * AG_ERRORS_EXIT prints "file:line: error: message" and exits with status 1;
 * AG_ERRORS_RETURN records the message and lets the failing call return an
 * error tensor. The last error is per thread, since concurrent callers
 * would otherwise read each other's messages.
 */
#include "rt.h"
#include "config.h"

#include <stdlib.h>
#include <string.h>

static _Thread_local int thread_error_mode = -1; /* -1: error_mode */
static _Thread_local char last_error[1024];
static _Thread_local bool has_last_error;
/* the same, in parts: the file is copied, since a graph's location may
 * name a file whose text is freed before the error is read */
static _Thread_local char last_message[768];
static _Thread_local char last_file[512];
static _Thread_local int last_line;
static _Thread_local uint64_t error_count;
static _Thread_local bool last_error_absent; /* rt_report_absent's */

static _Thread_local int latch_depth;
static _Thread_local bool latched;

uint64_t rt_error_count(void) { return error_count; }

void rt_error_latch(bool on)
{
    latch_depth += on ? 1 : -1;
    if (latch_depth == 0 || (on && latch_depth == 1))
        latched = false;
}

void rt_warn(ag_loc loc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fflush(stdout);
    if (loc.file)
        fprintf(stderr, "%s:%d: warning: ", loc.file, loc.line);
    else
        fprintf(stderr, "warning: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static void (*shutdown_hooks[8])(void);
static int n_shutdown_hooks;

void rt_at_shutdown(void (*fn)(void))
{
    for (int i = 0; i < n_shutdown_hooks; i++)
        if (shutdown_hooks[i] == fn)
            return;
    if (n_shutdown_hooks < 8)
        shutdown_hooks[n_shutdown_hooks++] = fn;
}

void rt_run_shutdown_hooks(void)
{
    for (int i = n_shutdown_hooks - 1; i >= 0; i--)
        shutdown_hooks[i]();
}

void ag_set_error_mode(ag_error_mode mode)
{
    rt_config_set(RT_CFG_ERROR_MODE, mode == AG_ERRORS_RETURN ? "return" : "exit");
}
ag_error_mode ag_get_error_mode(void)
{
    if (thread_error_mode >= 0)
        return (ag_error_mode)thread_error_mode;
    const rt_config *c = rt_config_get();
    const char *mode = rt_config_str(c, RT_CFG_ERROR_MODE);
    bool ret = mode && strcmp(mode, "return") == 0;
    rt_config_release(c);
    return ret ? AG_ERRORS_RETURN : AG_ERRORS_EXIT;
}

void rt_set_thread_error_mode(int mode) { thread_error_mode = mode; }

const char *ag_last_error(void) { return has_last_error ? last_error : NULL; }

const char *rt_last_error_parts(ag_loc *loc)
{
    if (!has_last_error)
        return NULL;
    *loc = (ag_loc){last_file[0] ? last_file : NULL, last_line};
    return last_message;
}

static void keep_parts(ag_loc loc, const char *msg)
{
    snprintf(last_message, sizeof last_message, "%s", msg);
    snprintf(last_file, sizeof last_file, "%s", loc.file ? loc.file : "");
    last_line = loc.line;
}
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
    if (latched) {
        error_count++;
        return;
    }
    latched = latch_depth > 0;
    vsnprintf(msg, sizeof msg, fmt, ap);
    if (loc.file)
        snprintf(last_error, sizeof last_error, "%s:%d: %s", loc.file, loc.line, msg);
    else
        snprintf(last_error, sizeof last_error, "%s", msg);
    keep_parts(loc, msg);
    has_last_error = true;
    last_error_absent = false;
    error_count++;
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

void rt_report_absent(ag_loc loc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    rt_vreport(loc, fmt, ap);
    va_end(ap);
    last_error_absent = has_last_error;
}

bool rt_last_error_absent(void) { return has_last_error && last_error_absent; }
