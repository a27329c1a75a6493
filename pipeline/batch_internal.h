/*
 * batch_internal.h - the batching scheduler's insides (prefix bt_),
 * shared by its files; batch.h is what the rest of agc sees. After
 * TensorFlow's shared batch scheduler and BatchFunction.
 *
 * A batcher keeps a queue of batches; only the last may be open (taking
 * rows). A request joins the open batch if it fits, else starts a new one
 * (closing the open one), or, with splitting, fills the open batch and
 * spills its other rows into new batches. At most max_enqueued_batches
 * batches wait, the open one included; a request that would need more
 * fails at once. A worker takes the first batch when it is closed (full,
 * or ended by a request that did not fit), or when it is open and past its
 * timeout (batch_timeout_micros after its first row arrived) or the
 * batcher is closing.
 *
 * Lifetimes: a request lives on its caller's stack while the caller waits
 * for its parts (one per batch it landed in) to come back; a batch belongs
 * to the queue, then to the worker that took it. A worker makes the
 * batched inputs and runs the batch inside a scope of its own and pops it
 * afterwards, so every tensor of a batch dies with it; the rows each
 * request gets back are plain values, which the caller turns into handles
 * on its own thread, in its own scope.
 *
 * One mutex per batcher guards the queue, the requests' progress and the
 * statistics. Callers wait outside it, on the wake-up word of the batch
 * that holds their last rows (wakeup.h): a worker answers a batch under
 * the lock, releases it, and wakes the batch's callers with one system
 * call. Workers wait on a condition variable.
 */
#ifndef BT_BATCH_INTERNAL_H
#define BT_BATCH_INTERNAL_H

#include "batch.h"

#include "histogram.h"
#include "lateness.h"
#include "wakeup.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

/* Rows [first, first + rows) of a request, in one batch. */
typedef struct part {
    struct request *req;
    int64_t first, rows;
    bool copy; /* the worker copies its rows (the request had not failed) */
} part;

typedef struct request {
    int64_t rows;
    rt_value *in[BT_MAX_TENSORS];
    rt_value *out[BT_MAX_TENSORS]; /* made when its first part comes back */
    atomic_int parts_left; /* written under the lock; read by its caller outside */
    unsigned slot;         /* the wake-up word of the batch holding its last rows */
    int64_t arrived_us;    /* when it was queued: its latency counts from here */
    bool failed;
    char error[1024];
} request;

typedef struct batch {
    part *parts;
    int n_parts, cap;
    int64_t rows;
    int64_t opened_us; /* when its first row arrived: the timeout counts from here */
    unsigned slot;     /* its callers' wake-up word */
    bool open;
    struct batch *next;
} batch;

struct ag_batcher {
    ag_loc loc;
    bt_runner run;
    ag_batch_options o; /* defaults filled in; allowed_batch_sizes points at `allowed` */
    int *allowed;
    /* The dtype and shape (dimension 0 unknown) every request must have:
     * the first accepted request's. */
    bool typed;
    ag_dtype dtype[BT_MAX_TENSORS];
    ag_shape shape[BT_MAX_TENSORS];

    pthread_mutex_t lock;
    pthread_cond_t work; /* workers: a batch may have become ready, or closing */
    atomic_uint_least64_t news; /* bumped with every signal of `work`: what spinning
                                   workers watch (wait_for_work) */
    bool watching; /* an idle worker watches the queue (wait_for_work) */
    bool spinning; /* ... spinning on `news`, needing no signal */
    pthread_cond_t idle; /* ag_batcher_close: the last caller left */
    wakeup_set *answered; /* callers: their batch is answered */
    unsigned batches_made; /* numbers the batches' wake-up words */
    batch *head, *tail;
    int n_waiting;
    bool closing;
    atomic_int callers; /* waiting in ag_batcher_call (changed under the lock,
                           but for leaving callers that are not the last) */
    pthread_t *threads;
    int n_threads;
    ag_batch_stats stats;
    hist latency;  /* of answered requests, in microseconds */
    hist wait;     /* of answered requests: arrival to their last batch's start */
    hist run_time; /* of batches */
    lateness timer; /* how late the workers' timed waits end (under the lock) */
    struct ag_batcher *next_live;
};

/* Now, in microseconds of the monotonic clock. */
static inline int64_t bt_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* batch_registry.c: the batchers not yet freed. */
void bt_live_add(ag_batcher *b);
bool bt_live_remove(ag_batcher *b);
bool bt_is_live(const ag_batcher *b);
/* A live batcher without an owner (ag_shutdown frees it), or NULL. */
ag_batcher *bt_live_unowned(void);

/* batch_queue.c, under the lock: queues r's rows (false with the message
 * in r->error: too many batches would wait; *changed: a batch opened or
 * closed), and takes the batch a worker should run now (NULL: none is
 * ready, *deadline_us when the open one will be, or -1). */
bool bt_enqueue(ag_batcher *b, request *r, bool *changed);
batch *bt_take_batch(ag_batcher *b, int64_t *deadline_us);

/* batch_run.c: runs a batch taken at `started` and answers its callers
 * (prev_run: how long the thread's batch before it ran); counts a batch's
 * run under the lock. */
void bt_run_batch(ag_batcher *b, batch *bt, int64_t started, int64_t prev_run);
void bt_count_run(ag_batcher *b, int64_t run);

/* batch_worker.c: news for the workers (under the lock; true when one
 * must be signalled), the same with the signal (one worker, or all), and
 * a batch thread's body. */
bool bt_announce(ag_batcher *b);
void bt_wake_workers(ag_batcher *b, bool all);
void *bt_worker_main(void *arg);

#endif /* BT_BATCH_INTERNAL_H */
