/*
 * prefix.c - where agc finds the runtime's ag.h by itself: in the include
 * directory of its install prefix (an installed agc, next to its
 * executable), else in the source tree it was built from (a build-tree
 * agc). Both agc's own parse and the C compiler it runs use them.
 */
#include "fe.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#ifndef AGC_RUNTIME_INCLUDE_DIR
#define AGC_RUNTIME_INCLUDE_DIR ""
#endif

static bool has_ag_h(const char *dir)
{
    if (!*dir)
        return false;
    FILE *f = fopen(fe_format("%s/ag.h", dir), "r");
    if (f)
        fclose(f);
    return f != NULL;
}

/* The install prefix's include directory, next to the executable. */
static const char *prefix_include(void)
{
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return "";
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash)
        return "";
    *slash = '\0';
    return fe_format("%s/../include", exe);
}

int fe_ag_include_dirs(const char *dirs[2])
{
    int n = 0;
    const char *prefix = prefix_include();
    if (has_ag_h(prefix))
        dirs[n++] = prefix;
    if (has_ag_h(AGC_RUNTIME_INCLUDE_DIR))
        dirs[n++] = AGC_RUNTIME_INCLUDE_DIR;
    return n;
}
