/*
 * e2e.h - helpers for the end-to-end programs. Each program is built twice,
 * eagerly (cc + libag) and staged (agc, then cc + libag), and both outputs
 * must match <name>.expected.
 */
#ifndef E2E_H
#define E2E_H

#include <ag.h>

#include <stdio.h>
#include <string.h>

/* The last error without the directories of its file name (the two builds
 * may name the file by different paths). */
static inline void e2e_print_error(const char *what)
{
    const char *m = ag_last_error();
    if (!m) {
        printf("%s: no error\n", what);
        return;
    }
    const char *colon = strchr(m, ':');
    const char *start = m;
    for (const char *p = m; colon && p < colon; p++)
        if (*p == '/')
            start = p + 1;
    printf("%s: error: %s\n", what, start);
    ag_clear_error();
}

#endif
