/*
 * blocks.c - the memory behind tensor data, with large blocks recycled.
 *
 * Why recycle: glibc serves a large block (above its mmap threshold, at
 * most 32 MiB) with a fresh mapping and unmaps it on free, so the first
 * write to every page of it faults. For a 64 MiB tensor that is 16,384
 * faults, which take about as long as an elementwise op over the data.
 * Programs make tensors of the same sizes again and again (each call of a
 * function, each step of a loop, each eager op), so freed blocks of 1 MiB
 * or more are kept, a few at a time, and handed out again with their
 * pages already mapped. The memory kept is bounded (CACHE_MAX_BYTES); like
 * TensorFlow's allocator, it stays with the process.
 */
#include "rt.h"

#include <pthread.h>
#include <stdlib.h>

enum { DATA_ALIGN = 64, CACHE_SLOTS = 8 };
#define RECYCLE_MIN_BYTES ((size_t)1 << 20)
#define CACHE_MAX_BYTES ((size_t)512 << 20)

static struct {
    pthread_mutex_t lock;
    void *ptr[CACHE_SLOTS];
    size_t cap[CACHE_SLOTS];
    int n;
    size_t bytes;
} cache = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* A kept block of at least `bytes` and at most twice that (the smallest),
 * or NULL. */
static void *take_cached(size_t bytes, size_t *cap)
{
    void *p = NULL;
    pthread_mutex_lock(&cache.lock);
    int best = -1;
    for (int i = 0; i < cache.n; i++)
        if (cache.cap[i] >= bytes && cache.cap[i] / 2 <= bytes &&
            (best < 0 || cache.cap[i] < cache.cap[best]))
            best = i;
    if (best >= 0) {
        p = cache.ptr[best];
        *cap = cache.cap[best];
        cache.bytes -= *cap;
        cache.n--;
        cache.ptr[best] = cache.ptr[cache.n];
        cache.cap[best] = cache.cap[cache.n];
    }
    pthread_mutex_unlock(&cache.lock);
    return p;
}

static bool keep(void *p, size_t cap)
{
    bool kept = false;
    pthread_mutex_lock(&cache.lock);
    if (cache.n < CACHE_SLOTS && cache.bytes + cap <= CACHE_MAX_BYTES) {
        cache.ptr[cache.n] = p;
        cache.cap[cache.n++] = cap;
        cache.bytes += cap;
        kept = true;
    }
    pthread_mutex_unlock(&cache.lock);
    return kept;
}

void *rt_data_alloc(size_t bytes, size_t *cap)
{
    if (bytes > SIZE_MAX - DATA_ALIGN)
        return NULL; /* rounding up would wrap around */
    size_t rounded = (bytes + DATA_ALIGN - 1) / DATA_ALIGN * DATA_ALIGN;
    if (rounded == 0)
        rounded = DATA_ALIGN;
    if (rounded >= RECYCLE_MIN_BYTES) {
        void *p = take_cached(rounded, cap);
        if (p)
            return p;
    }
    void *p = aligned_alloc(DATA_ALIGN, rounded);
    if (p)
        *cap = rounded;
    return p;
}

void rt_data_free(void *p, size_t cap)
{
    if (p && !(cap >= RECYCLE_MIN_BYTES && keep(p, cap)))
        free(p);
}
