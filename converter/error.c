/*
 * error.c - the converter's messages about its input: at a place in the
 * options text when there is one (convert.h). Both the selection
 * (select.c) and the conversion (convert.c) report through it.
 */
#include "convert.h"

#include <stdarg.h>
#include <stdio.h>

bool cv_error(char *err, size_t errlen, const char *source, tp_loc at, const char *fmt, ...)
{
    int n = at.line ? snprintf(err, errlen, "%s:%d:%d: ", source, at.line, at.col) : 0;
    if (n < 0 || (size_t)n >= errlen)
        n = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
    va_end(ap);
    return false;
}
