/*
 * batch.c - a batcher's lifetime (batch.h, batch_internal.h for the
 * design): made from a runner and options, its batch threads started,
 * closed, freed, its statistics.
 */
#include "batch_internal.h"

#include <stdlib.h>
#include <string.h>

static void batch_shutdown(void);

/* Starts the workers; false with a message in err. */
static bool start_threads(ag_batcher *b, char *err, size_t n)
{
    b->threads = rt_xcalloc((size_t)b->o.num_batch_threads, sizeof *b->threads);
    for (; b->n_threads < b->o.num_batch_threads; b->n_threads++) {
        int rc = pthread_create(&b->threads[b->n_threads], NULL, bt_worker_main, b);
        if (rc != 0)
            return snprintf(err, n, "cannot start batch thread %d of %d: %s", b->n_threads + 1,
                            b->o.num_batch_threads, strerror(rc)), false;
    }
    return true;
}

/* The options with their defaults filled in and the allowed sizes copied
 * (the caller's array need not outlive the call). */
static void take_options(ag_batcher *b, const ag_batch_options *o)
{
    b->o = *o;
    bt_options_fill_defaults(&b->o);
    if (o->n_allowed_batch_sizes > 0) {
        b->allowed = rt_xmalloc((size_t)o->n_allowed_batch_sizes * sizeof *b->allowed);
        memcpy(b->allowed, o->allowed_batch_sizes,
               (size_t)o->n_allowed_batch_sizes * sizeof *b->allowed);
    }
    b->o.allowed_batch_sizes = b->allowed;
}

static void destroy(ag_batcher *b)
{
    pthread_mutex_destroy(&b->lock);
    pthread_cond_destroy(&b->work);
    pthread_cond_destroy(&b->idle);
    wakeup_free(b->answered);
    if (b->run.free_state)
        b->run.free_state(b->run.state);
    free(b->threads);
    free(b->allowed);
    free(b);
}

static void stop_threads(ag_batcher *b)
{
    pthread_mutex_lock(&b->lock);
    b->closing = true;
    bt_wake_workers(b, true);
    pthread_mutex_unlock(&b->lock);
    for (int i = 0; i < b->n_threads; i++)
        pthread_join(b->threads[i], NULL);
}

static void init_sync(ag_batcher *b)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    /* Timeouts are intervals: immune to the wall clock being set. */
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&b->work, &ca);
    pthread_condattr_destroy(&ca);
    pthread_cond_init(&b->idle, NULL);
    pthread_mutexattr_t ma;
    pthread_mutexattr_init(&ma);
#if defined(__GLIBC__) && defined(PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP)
    pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ADAPTIVE_NP);
#endif
    pthread_mutex_init(&b->lock, &ma);
    pthread_mutexattr_destroy(&ma);
    b->answered = wakeup_new();
    late_init(&b->timer);
}

ag_batcher *bt_new(ag_loc loc, const bt_runner *r, const ag_batch_options *o)
{
    char err[512];
    bool ok = o != NULL;
    if (!o)
        snprintf(err, sizeof err, "the options are NULL");
    else
        ok = bt_options_check(o, err, sizeof err);
    if (ok && (r->n_inputs < 1 || r->n_inputs > BT_MAX_TENSORS || r->n_outputs < 0 ||
               r->n_outputs > BT_MAX_TENSORS)) {
        snprintf(err, sizeof err, "%s has %d inputs and %d outputs; a batcher needs 1 to %d "
                                  "inputs and at most %d outputs", r->name, r->n_inputs,
                 r->n_outputs, BT_MAX_TENSORS, BT_MAX_TENSORS);
        ok = false;
    }
    if (!ok) {
        if (r->free_state)
            r->free_state(r->state);
        rt_report(loc, "ag_batcher_new: %s", err);
        return NULL;
    }
    ag_batcher *b = rt_xcalloc(1, sizeof *b);
    b->loc = loc;
    b->run = *r;
    take_options(b, o);
    init_sync(b);
    if (!start_threads(b, err, sizeof err)) {
        stop_threads(b);
        destroy(b);
        rt_report(loc, "ag_batcher_new: %s", err);
        return NULL;
    }
    bt_live_add(b);
    rt_at_shutdown(batch_shutdown);
    return b;
}

void ag_batcher_close(ag_batcher *b)
{
    if (!b)
        return;
    if (!bt_is_live(b)) {
        rt_report((ag_loc){0}, "ag_batcher_close: not a live batcher (freed, or never made)");
        return;
    }
    pthread_mutex_lock(&b->lock);
    b->closing = true;
    bt_wake_workers(b, true); /* the open batch need not wait any more */
    while (atomic_load(&b->callers) > 0)
        pthread_cond_wait(&b->idle, &b->lock);
    pthread_mutex_unlock(&b->lock);
}

void ag_batcher_free(ag_batcher *b)
{
    if (!b)
        return;
    if (!bt_is_live(b)) {
        rt_report((ag_loc){0}, "ag_batcher_free: not a live batcher (freed, or never made)");
        return;
    }
    ag_batcher_close(b);
    stop_threads(b);
    if (bt_live_remove(b))
        destroy(b);
}

ag_batch_stats ag_batcher_stats(ag_batcher *b)
{
    ag_batch_stats s = {0};
    if (!b)
        return s;
    pthread_mutex_lock(&b->lock);
    s = b->stats;
    s.waiting_batches = b->n_waiting;
    s.latency_p50_micros = hist_quantile(&b->latency, 0.5);
    s.latency_p99_micros = hist_quantile(&b->latency, 0.99);
    s.wait_p50_micros = hist_quantile(&b->wait, 0.5);
    s.wait_p99_micros = hist_quantile(&b->wait, 0.99);
    s.run_p50_micros = hist_quantile(&b->run_time, 0.5);
    s.run_p99_micros = hist_quantile(&b->run_time, 0.99);
    pthread_mutex_unlock(&b->lock);
    return s;
}

/* ag_shutdown: the batchers still alive finish their requests and go
 * (those with an owner go with it). */
static void batch_shutdown(void)
{
    ag_batcher *b;
    while ((b = bt_live_unowned()) != NULL)
        ag_batcher_free(b);
}
