/*
 * pool.c - the slice simulator's threads (pool.h). Workers take tasks by
 * index from a shared counter under the pool's lock; the caller takes
 * tasks too, then waits until every task taken is done. One run at a
 * time per pool: a pool belongs to one simulated call (sim.c makes it on
 * the call's first use, and frees it when the call ends).
 */
#include "pool.h"

#include "rt.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

struct tpu_pool {
    pthread_mutex_t lock;
    pthread_cond_t work, done;
    pthread_t *workers;
    int n_workers;
    /* the current run */
    tpu_pool_task task;
    void *ctx;
    int n, next, running; /* tasks, the next one to take, taken and not done */
    unsigned generation;  /* bumped per run, so workers see new work */
    bool quit;
};

static atomic_int forced_threads;

void tpu_pool_set_threads(int threads) { atomic_store(&forced_threads, threads); }

static int cpus(void)
{
#ifdef __linux__
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
#endif
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

int tpu_pool_threads_for(int tasks)
{
    int forced = atomic_load(&forced_threads);
    int n = forced > 0 ? forced : cpus();
    n = n < tasks ? n : tasks;
    return n > 1 ? n : 1;
}

/* Takes and runs tasks until none is left; called with the lock held. */
static void drain(tpu_pool *pool)
{
    while (pool->next < pool->n) {
        int i = pool->next++;
        tpu_pool_task task = pool->task;
        void *ctx = pool->ctx;
        pool->running++;
        pthread_mutex_unlock(&pool->lock);
        task(ctx, i);
        pthread_mutex_lock(&pool->lock);
        if (--pool->running == 0 && pool->next == pool->n)
            pthread_cond_broadcast(&pool->done);
    }
}

static void *worker(void *arg)
{
    tpu_pool *pool = arg;
    unsigned seen = 0;
    pthread_mutex_lock(&pool->lock);
    for (;;) {
        while (!pool->quit && pool->generation == seen)
            pthread_cond_wait(&pool->work, &pool->lock);
        if (pool->quit)
            break;
        seen = pool->generation;
        drain(pool);
    }
    pthread_mutex_unlock(&pool->lock);
    return NULL;
}

tpu_pool *tpu_pool_new(int threads)
{
    tpu_pool *pool = rt_xcalloc(1, sizeof *pool);
    pthread_mutex_init(&pool->lock, NULL);
    pthread_cond_init(&pool->work, NULL);
    pthread_cond_init(&pool->done, NULL);
    pool->workers = rt_xcalloc((size_t)(threads > 1 ? threads - 1 : 1), sizeof *pool->workers);
    for (int i = 0; i < threads - 1; i++) {
        if (pthread_create(&pool->workers[i], NULL, worker, pool) != 0)
            break; /* fewer threads: the same results, later */
        pool->n_workers++;
    }
    return pool;
}

void tpu_pool_run(tpu_pool *pool, int n, tpu_pool_task task, void *ctx)
{
    if (!pool || pool->n_workers == 0 || n <= 1) {
        for (int i = 0; i < n; i++)
            task(ctx, i);
        return;
    }
    pthread_mutex_lock(&pool->lock);
    pool->task = task;
    pool->ctx = ctx;
    pool->n = n;
    pool->next = 0;
    pool->generation++;
    pthread_cond_broadcast(&pool->work);
    drain(pool);
    while (pool->running > 0 || pool->next < pool->n)
        pthread_cond_wait(&pool->done, &pool->lock);
    pthread_mutex_unlock(&pool->lock);
}

void tpu_pool_free(tpu_pool *pool)
{
    if (!pool)
        return;
    pthread_mutex_lock(&pool->lock);
    pool->quit = true;
    pthread_cond_broadcast(&pool->work);
    pthread_mutex_unlock(&pool->lock);
    for (int i = 0; i < pool->n_workers; i++)
        pthread_join(pool->workers[i], NULL);
    pthread_cond_destroy(&pool->work);
    pthread_cond_destroy(&pool->done);
    pthread_mutex_destroy(&pool->lock);
    free(pool->workers);
    free(pool);
}
