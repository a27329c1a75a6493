/*
 * cg_parallel.c - a parallel for-loop for generated code.
 *
 * Large fused elementwise loops are outlined by the code generator into a
 * body(ctx, begin, end) and run here over [0, n) in chunks by a small pool
 * of worker threads plus the calling thread. Each element is computed by
 * the same instructions whichever thread runs it, so results do not
 * depend on the number of threads.
 *
 * The pool starts on first use with one worker less than the CPUs online
 * (at most 15), or AG_NUM_THREADS - 1; AG_NUM_THREADS=1 runs everything on
 * the calling thread. It runs one loop at a time: a caller that finds it
 * busy (another thread's loop) runs its loop alone instead of waiting.
 * Workers live until the process exits.
 */
#include "cg_runtime.h"
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

enum { MAX_WORKERS = 15, CHUNKS_PER_THREAD = 4, CHUNK_ALIGN = CG_RT_CHUNK_ALIGN };

typedef struct pool {
    pthread_mutex_t lock;
    pthread_cond_t work, done;
    int n_workers;
    /* the current loop */
    cg_rt_body body;
    void *ctx;
    int64_t n, chunk;
    atomic_llong next;   /* the next chunk's start */
    int busy_workers;    /* workers still in the current loop */
    uint64_t generation; /* bumped per loop, so workers see new work */
} pool;

static pool the_pool = {.lock = PTHREAD_MUTEX_INITIALIZER,
                        .work = PTHREAD_COND_INITIALIZER,
                        .done = PTHREAD_COND_INITIALIZER};
static pthread_mutex_t loop_lock = PTHREAD_MUTEX_INITIALIZER; /* one loop at a time */
static pthread_once_t pool_once = PTHREAD_ONCE_INIT;

/* Takes chunks until none is left. */
static void run_chunks(pool *p, cg_rt_body body, void *ctx, int64_t n, int64_t chunk)
{
    for (;;) {
        int64_t begin = atomic_fetch_add(&p->next, chunk);
        if (begin >= n)
            return;
        int64_t end = n - begin < chunk ? n : begin + chunk;
        body(ctx, begin, end);
    }
}

static void *worker(void *arg)
{
    pool *p = arg;
    uint64_t seen = 0;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (p->generation == seen)
            pthread_cond_wait(&p->work, &p->lock);
        seen = p->generation;
        cg_rt_body body = p->body;
        void *ctx = p->ctx;
        int64_t n = p->n, chunk = p->chunk;
        pthread_mutex_unlock(&p->lock);
        run_chunks(p, body, ctx, n, chunk);
        pthread_mutex_lock(&p->lock);
        if (--p->busy_workers == 0)
            pthread_cond_signal(&p->done);
    }
    return NULL;
}

/* The setting num_threads (AG_NUM_THREADS) in force when the pool
 * starts: one pool serves every compiled function, JIT or ahead of time
 * (libag_rt), so it is the process's, not a compile's. */
static int threads_wanted(void)
{
    const rt_config *c = rt_config_get();
    const char *env = rt_config_str(c, RT_CFG_NUM_THREADS);
    long n = env && *env ? strtol(env, NULL, 10) : sysconf(_SC_NPROCESSORS_ONLN);
    rt_config_release(c);
    if (n < 1)
        n = 1;
    return n > MAX_WORKERS + 1 ? MAX_WORKERS + 1 : (int)n;
}

/* A forked child has none of the parent's threads: it runs its loops
 * alone. */
static void forget_workers(void)
{
    the_pool.n_workers = 0;
    pthread_mutex_init(&the_pool.lock, NULL);
    pthread_mutex_init(&loop_lock, NULL);
}

static void pool_start(void)
{
    pool *p = &the_pool;
    pthread_atfork(NULL, NULL, forget_workers);
    int want = threads_wanted() - 1;
    for (int i = 0; i < want; i++) {
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&t, &attr, worker, p) == 0)
            p->n_workers++;
        pthread_attr_destroy(&attr);
    }
}

int cg_rt_num_threads(void)
{
    pthread_once(&pool_once, pool_start);
    return the_pool.n_workers + 1;
}

void cg_rt_parallel_for(cg_rt_body body, void *ctx, int64_t n, int64_t grain)
{
    pool *p = &the_pool;
    pthread_once(&pool_once, pool_start);
    if (n <= 0)
        return;
    if (p->n_workers == 0 || n < 2 * grain || pthread_mutex_trylock(&loop_lock) != 0) {
        body(ctx, 0, n);
        return;
    }
    int threads = p->n_workers + 1;
    int64_t chunk = (n + threads * CHUNKS_PER_THREAD - 1) / (threads * CHUNKS_PER_THREAD);
    if (chunk < grain)
        chunk = grain;
    chunk = (chunk + CHUNK_ALIGN - 1) / CHUNK_ALIGN * CHUNK_ALIGN;

    pthread_mutex_lock(&p->lock);
    p->body = body;
    p->ctx = ctx;
    p->n = n;
    p->chunk = chunk;
    atomic_store(&p->next, 0);
    p->busy_workers = p->n_workers;
    p->generation++;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->lock);

    run_chunks(p, body, ctx, n, chunk);

    pthread_mutex_lock(&p->lock);
    while (p->busy_workers > 0)
        pthread_cond_wait(&p->done, &p->lock);
    pthread_mutex_unlock(&p->lock);
    pthread_mutex_unlock(&loop_lock);
}
