/* alloc.c - allocation that never returns NULL: out of memory is fatal. */
#include "rt.h"

#include <stdlib.h>
#include <string.h>

static void out_of_memory(size_t n)
{
    fprintf(stderr, "agc runtime: out of memory allocating %zu bytes\n", n);
    abort();
}

void *rt_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        out_of_memory(n);
    return p;
}

void *rt_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        out_of_memory(n * size);
    return p;
}

void *rt_xrealloc(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    if (!p)
        out_of_memory(n);
    return p;
}

char *rt_xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(rt_xmalloc(n), s, n);
}
