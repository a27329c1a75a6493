/*
 * tool_diag.c - the tools' error messages (tool_diag.h).
 */
#include "tool_diag.h"

#include "rt.h"

#include <stdarg.h>
#include <stdio.h>

static const char *name = "agc";

void tool_set_name(const char *tool) { name = tool; }
const char *tool_name(void) { return name; }

void tool_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fflush(stdout);
    fprintf(stderr, "%s: error: ", name);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

bool tool_report_last_error(void)
{
    ag_loc loc;
    const char *msg = rt_last_error_parts(&loc);
    if (!msg)
        return false;
    fflush(stdout);
    if (loc.file)
        fprintf(stderr, "%s:%d: error: %s\n", loc.file, loc.line, msg);
    else
        fprintf(stderr, "%s: error: %s\n", name, msg);
    return true;
}
