/*
 * pool.h - a small pool of threads for simulating a slice's chips
 * (prefix tpu_pool): one call's chips, their shares of a split product
 * (sharded.c) and their timing (sim.c), run as tasks over the pool.
 *
 * A task writes only what is its own (its chip's rows, its chip's
 * timing), and whatever joins the tasks' results (a K split's sum in chip
 * order, a collective's start) runs after them on the caller: results do
 * not depend on the number of threads or on which thread ran what.
 */
#ifndef TPU_POOL_H
#define TPU_POOL_H

typedef struct tpu_pool tpu_pool;

/* Task i of n (run_all's), on some thread of the pool. */
typedef void (*tpu_pool_task)(void *ctx, int i);

/* The threads a pool for `tasks` tasks gets: at most the CPUs this
 * process may run on, at most the tasks, at least 1 (then the caller runs
 * every task itself and no thread starts). */
int tpu_pool_threads_for(int tasks);

/* A pool of `threads` threads in all, the caller's among them (so
 * threads - 1 workers start). */
tpu_pool *tpu_pool_new(int threads);
void tpu_pool_free(tpu_pool *pool);

/* Runs task(ctx, i) for i in [0, n) and returns when all are done. A NULL
 * pool runs them in order on the caller. */
void tpu_pool_run(tpu_pool *pool, int n, tpu_pool_task task, void *ctx);

/* For tests: the threads tpu_pool_threads_for gives, instead of the CPUs
 * (still at most the tasks); 0 restores the CPUs. The thread count must
 * not change any result, and tests hold that by setting 1 and many. */
void tpu_pool_set_threads(int threads);

#endif
