/*
 * batch_worker.c - the batch threads: how they wait for work and are
 * woken (spinning before a deadline, sleeping otherwise), and their loop.
 */
#include "batch_internal.h"

#include <errno.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

/* Waits on cv until the monotonic time deadline_us; true when the time
 * came (not a signal). */
static bool wait_until(pthread_cond_t *cv, pthread_mutex_t *m, int64_t deadline_us)
{
    struct timespec ts = {.tv_sec = deadline_us / 1000000,
                          .tv_nsec = (long)(deadline_us % 1000000) * 1000};
    return pthread_cond_timedwait(cv, m, &ts) == ETIMEDOUT;
}

/* News for the workers (the caller holds the lock): a batch opened or
 * closed, or the batcher is closing. True when a worker must be signalled
 * to see it: none spins on `news` (wait_for_work). A caller may signal
 * after releasing the lock. */
bool bt_announce(ag_batcher *b)
{
    atomic_fetch_add_explicit(&b->news, 1, memory_order_release);
    return !b->spinning;
}

/* announce, and signal one worker (or all) under the lock. */
void bt_wake_workers(ag_batcher *b, bool all)
{
    bool signal = bt_announce(b);
    if (all)
        pthread_cond_broadcast(&b->work);
    else if (signal)
        pthread_cond_signal(&b->work);
}

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/*
 * A worker's wait (the caller holds the lock) for news or for the open
 * batch's deadline (-1: none). A sleeping thread wakes after its time
 * comes, by 40 - 160 us on a virtual machine, as long as a small batch
 * takes to run, so the last stretch before a deadline is spent spinning
 * on `news` with the lock released; how long is learned from how late
 * the timed waits end (lateness.h), so a batch starts on time wherever
 * it runs. A short while after a batch, when the queue is empty, is
 * spent spinning too, so that a request arriving at an idle batcher
 * starts at once (IDLE_SPIN_US); then the worker sleeps.
 */
enum { IDLE_SPIN_US = 100 };

/* The watcher's wait: sleeps until the margin before the deadline, or
 * spins until the deadline or IDLE_SPIN_US. True when it should then
 * sleep until signalled: nothing came and there is no deadline. */
static bool watch(ag_batcher *b, int64_t deadline)
{
    int64_t now = bt_now_us();
    int64_t wake = deadline - late_margin(&b->timer);
    if (deadline >= 0 && now < wake) {
        if (wait_until(&b->work, &b->lock, wake))
            late_add(&b->timer, bt_now_us() - wake);
        return false;
    }
    uint64_t seen = atomic_load_explicit(&b->news, memory_order_acquire);
    int64_t until = deadline >= 0 ? deadline : now + IDLE_SPIN_US;
    b->spinning = true;
    pthread_mutex_unlock(&b->lock);
    while (atomic_load_explicit(&b->news, memory_order_acquire) == seen && bt_now_us() < until)
        cpu_relax();
    pthread_mutex_lock(&b->lock);
    b->spinning = false;
    /* news comes under the lock, so none is lost between this check and
     * the caller's wait */
    return deadline < 0 && atomic_load_explicit(&b->news, memory_order_acquire) == seen;
}

/* One idle worker at a time watches the queue (spinning, or sleeping
 * until a deadline); the others sleep until signalled. On a machine with
 * as many batch threads as CPUs, two spinning workers would leave the
 * callers no CPU, and a signal sent to a worker that spins anyway is a
 * system call and a context switch for nothing (wake_workers skips it). */
static void wait_for_work(ag_batcher *b, int64_t deadline)
{
    if (b->watching) {
        pthread_cond_wait(&b->work, &b->lock);
        return;
    }
    b->watching = true;
    bool sleep = watch(b, deadline);
    b->watching = false;
    if (sleep)
        pthread_cond_wait(&b->work, &b->lock);
}

/* A batch's timeout is a latency promise: Linux lets a thread's timed
 * waits end up to its timer slack late (50 us by default), as much as a
 * small batch takes to run. Batch threads ask for none. */
static void tighten_timers(void)
{
#if defined(__linux__) && defined(PR_SET_TIMERSLACK)
    (void)prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
#endif
}

void *bt_worker_main(void *arg)
{
    ag_batcher *b = arg;
    rt_set_thread_error_mode(AG_ERRORS_RETURN);
    tighten_timers();
    /* A batch's run is the time it keeps its thread from the next one:
     * from its taking off the queue to the lock taken again after it. */
    int64_t last_run = 0;
    pthread_mutex_lock(&b->lock);
    for (;;) {
        int64_t deadline;
        batch *bt = bt_take_batch(b, &deadline);
        if (bt) {
            int64_t taken = bt_now_us();
            /* What is left may be ready, or need a watcher for its timeout. */
            if (b->head)
                bt_wake_workers(b, false);
            pthread_mutex_unlock(&b->lock);
            bt_run_batch(b, bt, taken, last_run);
            pthread_mutex_lock(&b->lock);
            last_run = bt_now_us() - taken;
            bt_count_run(b, last_run);
            continue;
        }
        if (b->closing && !b->head)
            break;
        wait_for_work(b, deadline);
    }
    pthread_mutex_unlock(&b->lock);
    return NULL;
}
