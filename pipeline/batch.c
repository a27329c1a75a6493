/*
 * batch.c - the batching scheduler (batch.h), after TensorFlow's shared
 * batch scheduler and BatchFunction.
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
#include "batch.h"

#include "function.h"
#include "histogram.h"
#include "lateness.h"
#include "signature.h"
#include "trace.h"
#include "wakeup.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

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

/* ---------------------------------------------------------- live batchers */

/* The batchers not yet freed: ag_batcher_free checks a pointer against it
 * (a stale one is reported, not followed), ag_shutdown frees the rest. */
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static ag_batcher *live;

static void live_add(ag_batcher *b)
{
    pthread_mutex_lock(&live_lock);
    b->next_live = live;
    live = b;
    pthread_mutex_unlock(&live_lock);
}

static bool live_remove(ag_batcher *b)
{
    pthread_mutex_lock(&live_lock);
    ag_batcher **p = &live;
    while (*p && *p != b)
        p = &(*p)->next_live;
    bool found = *p != NULL;
    if (found)
        *p = b->next_live;
    pthread_mutex_unlock(&live_lock);
    return found;
}

static bool is_live(const ag_batcher *b)
{
    pthread_mutex_lock(&live_lock);
    const ag_batcher *p = live;
    while (p && p != b)
        p = p->next_live;
    pthread_mutex_unlock(&live_lock);
    return p != NULL;
}

/* ---------------------------------------------------------------- time */

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Waits on cv until the monotonic time deadline_us; true when the time
 * came (not a signal). */
static bool wait_until(pthread_cond_t *cv, pthread_mutex_t *m, int64_t deadline_us)
{
    struct timespec ts = {.tv_sec = deadline_us / 1000000,
                          .tv_nsec = (long)(deadline_us % 1000000) * 1000};
    return pthread_cond_timedwait(cv, m, &ts) == ETIMEDOUT;
}

/* ---------------------------------------------------------------- queue */

/* Starts a batch at the back of the queue, closing the open one: a request
 * that does not fit ends it, as in TensorFlow. */
static batch *new_batch(ag_batcher *b)
{
    if (b->tail)
        b->tail->open = false;
    batch *bt = rt_xcalloc(1, sizeof *bt);
    bt->open = true;
    bt->opened_us = now_us();
    bt->slot = b->batches_made++ % WAKEUP_SLOTS;
    if (b->tail)
        b->tail->next = bt;
    else
        b->head = bt;
    b->tail = bt;
    b->n_waiting++;
    return bt;
}

static void add_part(ag_batcher *b, batch *bt, request *r, int64_t first, int64_t rows)
{
    if (bt->n_parts == bt->cap) {
        bt->cap = bt->cap ? bt->cap * 2 : 8;
        bt->parts = rt_xrealloc(bt->parts, (size_t)bt->cap * sizeof *bt->parts);
    }
    bt->parts[bt->n_parts++] = (part){r, first, rows, false};
    bt->rows += rows;
    r->parts_left++;
    r->slot = bt->slot;
    if (bt->rows == b->o.max_batch_size)
        bt->open = false; /* full: ready for a worker now */
}

/* The open batch, if the queue ends with one. */
static batch *open_tail(const ag_batcher *b)
{
    return b->tail && b->tail->open ? b->tail : NULL;
}

/* Puts r's rows into the queue (the caller holds the lock); *changed tells
 * whether a batch opened or closed, which workers must hear of. False
 * with a message in r->error when they cannot wait: too many batches
 * would. */
static bool enqueue(ag_batcher *b, request *r, bool *changed)
{
    const int64_t max = b->o.max_batch_size, max_waiting = b->o.max_enqueued_batches;
    batch *open = open_tail(b);
    int64_t room = open ? max - open->rows : 0;
    if (r->rows <= room) {
        add_part(b, open, r, 0, r->rows);
        *changed = !open->open;
        return true;
    }
    bool split = !b->o.disable_large_batch_splitting;
    /* Without splitting a request takes a new batch; with it, it fills the
     * open batch and as many new ones as its other rows need. */
    int64_t used = split ? room : 0;
    int64_t new_batches = (r->rows - used + max - 1) / max;
    if (b->n_waiting + new_batches > max_waiting) {
        snprintf(r->error, sizeof r->error,
                 "the queue is full: %d batches of up to %lld rows are waiting "
                 "(max_enqueued_batches %lld) and these %lld rows need %lld more; "
                 "try again later, or raise max_enqueued_batches",
                 b->n_waiting, (long long)max, (long long)max_waiting, (long long)r->rows,
                 (long long)new_batches);
        b->stats.rejected++;
        return false;
    }
    if (used > 0)
        add_part(b, open, r, 0, used);
    for (int64_t first = used; first < r->rows; first += max)
        add_part(b, new_batch(b), r, first, r->rows - first < max ? r->rows - first : max);
    *changed = true;
    return true;
}

/* The batch a worker should run now, taken off the queue; NULL when none
 * is ready, with *deadline_us set to when the open one will be. */
static batch *take_batch(ag_batcher *b, int64_t *deadline_us)
{
    batch *bt = b->head;
    *deadline_us = -1;
    if (!bt)
        return NULL;
    if (bt->open && !b->closing) {
        int64_t due = bt->opened_us + b->o.batch_timeout_micros;
        if (now_us() < due) {
            *deadline_us = due;
            return NULL;
        }
    }
    b->head = bt->next;
    if (!b->head)
        b->tail = NULL;
    b->n_waiting--;
    bt->open = false;
    return bt;
}

/* ------------------------------------------------------------ running */

static size_t row_bytes(const rt_value *v)
{
    int64_t n = 1;
    for (int d = 1; d < v->shape.rank; d++)
        n *= v->shape.dims[d];
    return (size_t)n * rt_dtype_size(v->dtype);
}

/* Input i of a batch: its parts' rows in order, then copies of the first
 * row up to `padded` rows (real data, so that padding never feeds the
 * function values it would choke on, as TensorFlow pads). */
static rt_value *gather_input(const batch *bt, int i, int64_t padded)
{
    const rt_value *first = bt->parts[0].req->in[i];
    ag_shape s = first->shape;
    s.dims[0] = padded;
    rt_value *v = rt_value_new(first->dtype, &s);
    size_t rb = row_bytes(first);
    char *dst = v->data;
    for (int p = 0; p < bt->n_parts; p++) {
        const part *pt = &bt->parts[p];
        memcpy(dst, (const char *)pt->req->in[i]->data + (size_t)pt->first * rb,
               (size_t)pt->rows * rb);
        dst += (size_t)pt->rows * rb;
    }
    for (int64_t r = bt->rows; r < padded; r++, dst += rb)
        memcpy(dst, v->data, rb);
    return v;
}

/* Rule 4 of converter.md section 3: every output is batched along
 * dimension 0, with the batch's rows. */
static bool check_outputs(const ag_batcher *b, rt_value **out, int64_t padded, char *err,
                          size_t n)
{
    for (int j = 0; j < b->run.n_outputs; j++) {
        const rt_value *v = out[j];
        if (v->dtype == RT_LIST || v->shape.rank < 1 || v->shape.dims[0] != padded)
            return snprintf(err, n, "%s returned output %d with %s for a batch of %lld rows: "
                                    "a batched output needs dimension 0 equal to the sum of "
                                    "the inputs'", b->run.name, j,
                            v->dtype == RT_LIST      ? "a tensor array"
                            : v->shape.rank < 1      ? "no dimension 0 (a scalar)"
                                                     : "another dimension 0",
                            (long long)padded), false;
    }
    return true;
}

/* Runs the function on a batch's inputs; false with a message in err. The
 * outputs' values stay owned by the worker's scope. */
static bool run_function(ag_batcher *b, batch *bt, int64_t padded, rt_value **out, char *err,
                         size_t n)
{
    ag_tensor in[BT_MAX_TENSORS], res[BT_MAX_TENSORS];
    for (int i = 0; i < b->run.n_inputs; i++)
        in[i] = rt_handle_new(gather_input(bt, i, padded));
    for (int j = 0; j < b->run.n_outputs; j++)
        res[j] = rt_error_tensor();
    ag_clear_error();
    bool ok = b->run.run(b->run.state, in, res);
    for (int j = 0; ok && j < b->run.n_outputs; j++)
        ok = !ag_is_error(res[j]) && (out[j] = rt_handle_get(b->loc, res[j])) != NULL;
    if (!ok) {
        const char *why = ag_last_error();
        snprintf(err, n, "%s failed on a batch of %lld rows: %s", b->run.name,
                 (long long)padded, why ? why : "it gave no tensor and reported no error");
        ag_clear_error();
        return false;
    }
    return check_outputs(b, out, padded, err, n);
}

/* Marks the request failed with err (the first failure of its parts wins). */
static void fail_request(request *r, const char *err)
{
    if (!r->failed)
        snprintf(r->error, sizeof r->error, "%s", err);
    r->failed = true;
}

/* Makes r's outputs when its first part comes back, or checks that a later
 * part (from another batch) agrees with them. Under the lock. */
static void prepare_outputs(const ag_batcher *b, request *r, rt_value **out)
{
    for (int j = 0; j < b->run.n_outputs && !r->failed; j++) {
        ag_shape s = out[j]->shape;
        s.dims[0] = r->rows;
        if (!r->out[j]) {
            r->out[j] = rt_value_new(out[j]->dtype, &s);
        } else if (r->out[j]->dtype != out[j]->dtype || !ag_shape_equal(r->out[j]->shape, s)) {
            fail_request(r, "the batches this request was split across gave outputs of "
                            "different types");
        }
    }
}

/* Copies each part's rows of every output into its request. */
static void copy_outputs(const ag_batcher *b, const batch *bt, rt_value **out)
{
    int64_t at = 0;
    for (int p = 0; p < bt->n_parts; p++) {
        const part *pt = &bt->parts[p];
        for (int j = 0; j < b->run.n_outputs && pt->copy; j++) {
            size_t rb = row_bytes(out[j]);
            memcpy((char *)pt->req->out[j]->data + (size_t)pt->first * rb,
                   (const char *)out[j]->data + (size_t)at * rb, (size_t)pt->rows * rb);
        }
        at += pt->rows;
    }
}

/* Counts r, answered at `now` by a batch started at `started` on a
 * thread whose batch before it ran `prev_run` us: late when it took
 * longer than its batch's timeout and those two batches' run
 * (ag_batch_stats.late). */
static void count_answered(ag_batcher *b, const request *r, int64_t now, int64_t started,
                           int64_t prev_run)
{
    int64_t latency = now - r->arrived_us;
    hist_add(&b->latency, latency);
    hist_add(&b->wait, started - r->arrived_us);
    b->stats.late += latency > b->o.batch_timeout_micros + prev_run + (now - started);
}

/* Counts a batch that kept its thread `run` us (under the lock). */
static void count_run(ag_batcher *b, int64_t run)
{
    b->stats.run_micros += run;
    hist_add(&b->run_time, run);
}

/* Hands a batch's results (out, or the error err) back to its requests
 * and wakes those that are complete: the callers waiting on the batch's
 * word, and any whose last rows came back before these (several workers)
 * on theirs. prev_run is how long the thread's batch before this one ran. */
static void deliver(ag_batcher *b, batch *bt, int64_t padded, rt_value **out,
                    const char *err, int64_t started_us, int64_t prev_run)
{
    unsigned *others = NULL;
    int n_others = 0;
    /* A request all of whose rows are in this batch is touched by no other
     * thread until it is answered: only split requests need the lock here
     * (the batch threads take it again just below, and the callers). */
    bool split = false;
    for (int p = 0; p < bt->n_parts; p++)
        split |= bt->parts[p].rows != bt->parts[p].req->rows;
    if (split)
        pthread_mutex_lock(&b->lock);
    for (int p = 0; p < bt->n_parts; p++) {
        part *pt = &bt->parts[p];
        if (err)
            fail_request(pt->req, err);
        else
            prepare_outputs(b, pt->req, out);
        pt->copy = !pt->req->failed;
    }
    if (split)
        pthread_mutex_unlock(&b->lock);
    /* Parts write disjoint rows of outputs made above, which live until
     * their callers wake; the lock taken next publishes the rows. */
    if (!err)
        copy_outputs(b, bt, out);
    pthread_mutex_lock(&b->lock);
    b->stats.batches++;
    b->stats.rows += bt->rows;
    b->stats.padding_rows += padded - bt->rows;
    b->stats.failed_batches += err != NULL;
    int64_t now = now_us();
    for (int p = 0; p < bt->n_parts; p++) {
        request *r = bt->parts[p].req;
        if (r->parts_left == 1) {
            count_answered(b, r, now, started_us, prev_run);
            if (r->slot != bt->slot) {
                if (!others)
                    others = rt_xmalloc((size_t)bt->n_parts * sizeof *others);
                others[n_others++] = r->slot;
            }
        }
        /* the last write to r: once it reads 0, its caller may return */
        atomic_fetch_sub(&r->parts_left, 1);
    }
    pthread_mutex_unlock(&b->lock);
    wakeup_notify(b->answered, bt->slot);
    for (int i = 0; i < n_others; i++)
        wakeup_notify(b->answered, others[i]);
    free(others);
}

/* Runs bt, taken off the queue at `started`, and answers its callers:
 * joins the rows, runs the function, hands rows back, wakes the callers
 * and frees the batch. */
static void run_batch(ag_batcher *b, batch *bt, int64_t started, int64_t prev_run)
{
    int64_t padded = bt_padded_size(&b->o, bt->rows);
    rt_value *out[BT_MAX_TENSORS];
    char err[1024];
    ag_scope_push();
    bool ok = run_function(b, bt, padded, out, err, sizeof err);
    deliver(b, bt, padded, out, ok ? NULL : err, started, prev_run);
    ag_scope_pop();
    free(bt->parts);
    free(bt);
}

/* News for the workers (the caller holds the lock): a batch opened or
 * closed, or the batcher is closing. True when a worker must be signalled
 * to see it: none spins on `news` (wait_for_work). A caller may signal
 * after releasing the lock. */
static bool announce(ag_batcher *b)
{
    atomic_fetch_add_explicit(&b->news, 1, memory_order_release);
    return !b->spinning;
}

/* announce, and signal one worker (or all) under the lock. */
static void wake_workers(ag_batcher *b, bool all)
{
    bool signal = announce(b);
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
    int64_t now = now_us();
    int64_t wake = deadline - late_margin(&b->timer);
    if (deadline >= 0 && now < wake) {
        if (wait_until(&b->work, &b->lock, wake))
            late_add(&b->timer, now_us() - wake);
        return false;
    }
    uint64_t seen = atomic_load_explicit(&b->news, memory_order_acquire);
    int64_t until = deadline >= 0 ? deadline : now + IDLE_SPIN_US;
    b->spinning = true;
    pthread_mutex_unlock(&b->lock);
    while (atomic_load_explicit(&b->news, memory_order_acquire) == seen && now_us() < until)
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

static void *worker_main(void *arg)
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
        batch *bt = take_batch(b, &deadline);
        if (bt) {
            int64_t taken = now_us();
            /* What is left may be ready, or need a watcher for its timeout. */
            if (b->head)
                wake_workers(b, false);
            pthread_mutex_unlock(&b->lock);
            run_batch(b, bt, taken, last_run);
            pthread_mutex_lock(&b->lock);
            last_run = now_us() - taken;
            count_run(b, last_run);
            continue;
        }
        if (b->closing && !b->head)
            break;
        wait_for_work(b, deadline);
    }
    pthread_mutex_unlock(&b->lock);
    return NULL;
}

/* ---------------------------------------------------------------- calls */

static const char *input_name(const ag_batcher *b, int i, char *buf, size_t n)
{
    if (b->run.input_names[i])
        snprintf(buf, n, "'%s'", b->run.input_names[i]);
    else
        snprintf(buf, n, "%d", i);
    return buf;
}

static const char *type_str(ag_dtype dt, const ag_shape *s, char *buf, size_t n)
{
    return ir_spec_type_str(dt, s, buf, n);
}

/* Rules 1 and 3 of converter.md section 3, and what the signature fixes:
 * the inputs of one request, on their own. */
static bool check_inputs(const ag_batcher *b, request *r, char *err, size_t n)
{
    char name[80], want[120], got[120];
    for (int i = 0; i < b->run.n_inputs; i++) {
        const rt_value *v = r->in[i];
        input_name(b, i, name, sizeof name);
        if (v->kind != RT_CONCRETE || v->dtype == RT_LIST)
            return snprintf(err, n, "input %s is a %s; batched inputs are tensors", name,
                            v->dtype == RT_LIST ? "tensor array" : "symbolic tensor"), false;
        if (v->shape.rank < 1)
            return snprintf(err, n, "input %s is a scalar; a batched input needs a dimension "
                                    "0 to batch along", name), false;
        if (b->run.has_types && (v->dtype != b->run.dtype[i] ||
                                 !ir_spec_shape_matches(&b->run.shape[i], &v->shape)))
            return snprintf(err, n, "input %s is %s but the batcher's signature gives %s", name,
                            type_str(v->dtype, &v->shape, got, sizeof got),
                            type_str(b->run.dtype[i], &b->run.shape[i], want, sizeof want)),
                   false;
        if (v->shape.dims[0] != r->in[0]->shape.dims[0]) {
            char first[80];
            return snprintf(err, n, "the inputs of one call must have the same dimension 0: "
                                    "input %s has %lld rows, input %s has %lld", name,
                            (long long)v->shape.dims[0], input_name(b, 0, first, sizeof first),
                            (long long)r->in[0]->shape.dims[0]), false;
        }
    }
    r->rows = r->in[0]->shape.dims[0];
    if (r->rows == 0)
        return snprintf(err, n, "the inputs have no rows (dimension 0 is 0)"), false;
    if (r->rows > b->o.max_batch_size && b->o.disable_large_batch_splitting)
        return snprintf(err, n, "%lld rows are more than max_batch_size (%d) and "
                                "disable_large_batch_splitting is set",
                        (long long)r->rows, b->o.max_batch_size), false;
    int64_t most = (int64_t)b->o.max_batch_size * b->o.max_enqueued_batches;
    if (r->rows > most)
        return snprintf(err, n, "%lld rows can never be queued: at most %lld can wait "
                                "(max_enqueued_batches %d x max_batch_size %d)",
                        (long long)r->rows, (long long)most, b->o.max_enqueued_batches,
                        b->o.max_batch_size), false;
    return true;
}

/* Rule 2: the dimensions other than 0 match across requests, those of the
 * first accepted request (under the lock: it sets them). Requests of other
 * shapes are an error at their call, not a batch failing for everyone. */
static bool check_across(ag_batcher *b, request *r, char *err, size_t n)
{
    char name[80], want[120], got[120];
    for (int i = 0; b->typed && i < b->run.n_inputs; i++) {
        ag_shape s = r->in[i]->shape;
        s.dims[0] = -1;
        if (r->in[i]->dtype == b->dtype[i] && ag_shape_equal(s, b->shape[i]))
            continue;
        return snprintf(err, n, "input %s is %s but this batcher's requests are %s: the "
                                "dtype and the dimensions other than 0 of a batched input "
                                "must match across requests", input_name(b, i, name, sizeof name),
                        type_str(r->in[i]->dtype, &r->in[i]->shape, got, sizeof got),
                        type_str(b->dtype[i], &b->shape[i], want, sizeof want)), false;
    }
    for (int i = 0; !b->typed && i < b->run.n_inputs; i++) {
        b->dtype[i] = r->in[i]->dtype;
        b->shape[i] = r->in[i]->shape;
        b->shape[i].dims[0] = -1;
    }
    b->typed = true;
    return true;
}

/* Resolves the input handles; false with the message in err. */
static bool resolve_inputs(ag_loc loc, const ag_batcher *b, const ag_tensor *inputs, request *r)
{
    for (int i = 0; i < b->run.n_inputs; i++)
        if (!(r->in[i] = rt_handle_get(loc, inputs[i])))
            return false;
    return true;
}

/* Queues r (under the lock); false with the message in r->error. *signal
 * says whether to signal a worker once the lock is released. */
static bool queue(ag_batcher *b, request *r, bool *signal)
{
    if (b->closing || !check_across(b, r, r->error, sizeof r->error)) {
        if (b->closing)
            snprintf(r->error, sizeof r->error, "the batcher is closed (ag_batcher_close or "
                                                "ag_batcher_free); it takes no more requests");
        b->stats.refused++;
        return false;
    }
    bool changed = false;
    r->arrived_us = now_us();
    if (!enqueue(b, r, &changed))
        return false; /* counted as rejected */
    b->stats.requests++;
    /* A batch opened (a worker takes it, or watches its timeout) or closed
     * (a worker takes it); rows joining an open batch change neither. */
    *signal = changed && announce(b);
    atomic_fetch_add(&b->callers, 1);
    return true;
}

/* A caller with its answer leaves. Only the last one takes the lock, so
 * that ag_batcher_close, which waits under it for none to be left, cannot
 * free b while it still touches b; the others leave without it, not
 * queueing for the lock the batch threads need just when a batch's
 * callers all wake. */
static void leave(ag_batcher *b)
{
    int n = atomic_load(&b->callers);
    while (n > 1)
        if (atomic_compare_exchange_weak(&b->callers, &n, n - 1))
            return;
    pthread_mutex_lock(&b->lock);
    if (atomic_fetch_sub(&b->callers, 1) == 1 && b->closing)
        pthread_cond_broadcast(&b->idle);
    pthread_mutex_unlock(&b->lock);
}

/* Checks r, queues it and waits for its rows; false with the message in
 * r->error. */
static bool call(ag_batcher *b, request *r)
{
    if (!check_inputs(b, r, r->error, sizeof r->error)) {
        pthread_mutex_lock(&b->lock);
        b->stats.refused++;
        pthread_mutex_unlock(&b->lock);
        return false;
    }
    bool signal = false;
    pthread_mutex_lock(&b->lock);
    bool queued = queue(b, r, &signal);
    pthread_mutex_unlock(&b->lock);
    if (!queued)
        return false;
    if (signal) /* outside the lock, which the woken worker takes first */
        pthread_cond_signal(&b->work);
    for (;;) {
        uint32_t seen = wakeup_read(b->answered, r->slot);
        if (atomic_load(&r->parts_left) == 0)
            break;
        wakeup_wait(b->answered, r->slot, seen);
    }
    leave(b);
    return !r->failed;
}

bool ag_batcher_call_at(ag_loc loc, ag_batcher *b, const ag_tensor *inputs, ag_tensor *outputs)
{
    if (!b) {
        rt_report(loc, "ag_batcher_call: the batcher is NULL (did ag_batcher_new fail?)");
        return false;
    }
    /* b may be freed as soon as this call has its answer: read it before. */
    int n_out = b->run.n_outputs;
    request r = {0};
    bool ok = false, reported = false;
    if (ir_trace_active())
        snprintf(r.error, sizeof r.error, "a batcher cannot be called while a function is "
                                          "traced");
    else if (!resolve_inputs(loc, b, inputs, &r))
        reported = true; /* rt_handle_get said why */
    else
        ok = call(b, &r);
    for (int j = 0; j < n_out; j++) {
        if (ok) {
            outputs[j] = rt_handle_new(r.out[j]);
        } else {
            rt_value_free(r.out[j]);
            outputs[j] = rt_error_tensor();
        }
    }
    if (!ok && !reported)
        rt_report(loc, "ag_batcher_call: %s", r.error);
    return ok;
}

/* ------------------------------------------------------------- lifetime */

static void batch_shutdown(void);

/* Starts the workers; false with a message in err. */
static bool start_threads(ag_batcher *b, char *err, size_t n)
{
    b->threads = rt_xcalloc((size_t)b->o.num_batch_threads, sizeof *b->threads);
    for (; b->n_threads < b->o.num_batch_threads; b->n_threads++) {
        int rc = pthread_create(&b->threads[b->n_threads], NULL, worker_main, b);
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
    wake_workers(b, true);
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
    live_add(b);
    rt_at_shutdown(batch_shutdown);
    return b;
}

void ag_batcher_close(ag_batcher *b)
{
    if (!b)
        return;
    if (!is_live(b)) {
        rt_report((ag_loc){0}, "ag_batcher_close: not a live batcher (freed, or never made)");
        return;
    }
    pthread_mutex_lock(&b->lock);
    b->closing = true;
    wake_workers(b, true); /* the open batch need not wait any more */
    while (atomic_load(&b->callers) > 0)
        pthread_cond_wait(&b->idle, &b->lock);
    pthread_mutex_unlock(&b->lock);
}

void ag_batcher_free(ag_batcher *b)
{
    if (!b)
        return;
    if (!is_live(b)) {
        rt_report((ag_loc){0}, "ag_batcher_free: not a live batcher (freed, or never made)");
        return;
    }
    ag_batcher_close(b);
    stop_threads(b);
    if (live_remove(b))
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
    for (;;) {
        pthread_mutex_lock(&live_lock);
        ag_batcher *b = live;
        while (b && b->run.owned)
            b = b->next_live;
        pthread_mutex_unlock(&live_lock);
        if (!b)
            break;
        ag_batcher_free(b);
    }
}

/* -------------------------------------------------------------- runners */

/* A C callback (ag_batcher_new_fn). */
typedef struct callback_runner {
    ag_batch_fn fn;
    void *state;
} callback_runner;

static bool run_callback(void *state, const ag_tensor *inputs, ag_tensor *outputs)
{
    callback_runner *c = state;
    return c->fn(c->state, inputs, outputs);
}

ag_batcher *ag_batcher_new_fn_at(ag_loc loc, ag_batch_fn fn, void *state, int n_inputs,
                                 int n_outputs, const ag_batch_options *options)
{
    if (!fn) {
        rt_report(loc, "ag_batcher_new_fn: the function is NULL");
        return NULL;
    }
    callback_runner *c = rt_xmalloc(sizeof *c);
    *c = (callback_runner){fn, state};
    bt_runner r = {.run = run_callback, .free_state = free, .state = c, .n_inputs = n_inputs,
                   .n_outputs = n_outputs, .name = "the batch function"};
    return bt_new(loc, &r, options);
}

/* An AG_FUNCTION (ag_batcher_new): a concrete function traced for the
 * signature, or, without one, whatever the function cache finds or
 * traces for each batch's shapes. */
typedef struct function_runner {
    const ag_function_desc *desc;
    ag_concrete_function *cf; /* NULL: ag_function_call_at picks */
    ag_loc loc;               /* ag_batcher_new's: where batches are "called" */
    int tensor_param[BT_MAX_TENSORS]; /* the parameter of each input */
    char name[128];
} function_runner;

static bool run_ag_function(void *state, const ag_tensor *inputs, ag_tensor *outputs)
{
    function_runner *f = state;
    ag_arg args[IR_SPEC_MAX_ENTRIES + 1];
    memset(args, 0, sizeof args);
    for (int i = 0; i < f->desc->n_params; i++)
        args[i].kind = f->desc->param_kinds[i];
    /* C scalars are in the concrete function already: only with cf. */
    for (int i = 0, k = 0; i < f->desc->n_params; i++)
        if (f->desc->param_kinds[i] == AG_ARG_TENSOR)
            args[i].tensor = inputs[k++];
    if (f->cf)
        return fn_concrete_call(f->loc, f->cf, args, outputs);
    return ag_function_call_at(f->loc, f->desc, args, outputs);
}

/* Which parameters can be batched: tensors, and C scalars when a signature
 * gives their values. False with a message in err. */
static bool check_params(const ag_function_desc *d, bool have_signature, char *err, size_t n)
{
    if (d->n_params > IR_SPEC_MAX_ENTRIES)
        return snprintf(err, n, "'%s' has %d parameters; a batched function may have %d",
                        d->name, d->n_params, IR_SPEC_MAX_ENTRIES), false;
    for (int i = 0; i < d->n_params; i++) {
        ag_arg_kind k = d->param_kinds[i];
        const char *pname = d->param_names ? d->param_names[i] : "?";
        if (k == AG_ARG_TENSOR_ARRAY || k == AG_ARG_VARIABLE)
            return snprintf(err, n, "parameter '%s' of '%s' is %s; batched functions take "
                                    "tensors (and C scalars a signature gives)", pname, d->name,
                            k == AG_ARG_VARIABLE ? "a variable" : "a tensor array"), false;
        if ((k == AG_ARG_INT || k == AG_ARG_FLOAT) && !have_signature)
            return snprintf(err, n, "parameter '%s' of '%s' is a C scalar: give its value in "
                                    "the signature (\"..., %s=VALUE\")", pname, d->name, pname),
                   false;
    }
    return true;
}

/* The batched inputs of the signature: every tensor entry has a dimension
 * 0, unknown (`?`), or fixed to the one size every batch is padded to. */
static bool signature_types(const char *text, const ag_batch_options *o, bt_runner *r,
                            char *err, size_t n)
{
    ir_spec spec;
    char why[256];
    if (!ir_spec_parse(text, &spec, why, sizeof why))
        return snprintf(err, n, "bad signature \"%s\": %s", text, why), false;
    int k = 0;
    for (int e = 0; e < spec.n; e++) {
        const ir_spec_entry *s = &spec.entries[e];
        if (s->is_scalar_value || k >= r->n_inputs)
            continue;
        /* a fixed dimension 0 is the one size every batch is padded to, or wrong */
        bool fixed_ok = o->n_allowed_batch_sizes == 1 &&
                        s->shape.dims[0] == o->allowed_batch_sizes[0];
        const char *name = r->input_names[k] ? r->input_names[k] : "?";
        if (s->shape.rank < 1 || (s->shape.dims[0] >= 0 && !fixed_ok))
            return snprintf(err, n, "the signature \"%s\" gives %s input '%s' %s: a batched "
                                    "input needs `?` in dimension 0", text, r->name, name,
                            s->shape.rank < 1 ? "no dimension 0" : "a fixed dimension 0"),
                   false;
        r->dtype[k] = s->dtype;
        r->shape[k] = s->shape;
        r->shape[k].dims[0] = -1;
        k++;
    }
    r->has_types = true;
    return true;
}

/* The runner of the AG_FUNCTION d with the signature sig (or none); false
 * with a message in err (f is then the caller's to free). */
static bool function_runner_for(ag_loc loc, const ag_function_desc *d, const char *sig,
                                const ag_batch_options *o, function_runner *f, bt_runner *r,
                                char *err, size_t n)
{
    if (!check_params(d, sig != NULL, err, n))
        return false;
    f->desc = d;
    f->loc = loc;
    snprintf(f->name, sizeof f->name, "'%s'", d->name);
    *r = (bt_runner){.run = run_ag_function, .free_state = free, .state = f,
                     .n_outputs = d->n_outputs, .name = f->name};
    for (int i = 0; i < d->n_params; i++) {
        if (d->param_kinds[i] != AG_ARG_TENSOR)
            continue;
        f->tensor_param[r->n_inputs] = i;
        r->input_names[r->n_inputs++] = d->param_names ? d->param_names[i] : NULL;
    }
    if (r->n_inputs == 0)
        return snprintf(err, n, "'%s' has no tensor parameter to batch", d->name), false;
    return !sig || signature_types(sig, o, r, err, n);
}

/* Options ag_batcher_new can use; false with a message in err. */
static bool options_ok(const ag_batch_options *o, char *err, size_t n)
{
    if (!o)
        return snprintf(err, n, "the options are NULL"), false;
    return bt_options_check(o, err, n);
}

ag_batcher *ag_batcher_new_at(ag_loc loc, const char *function, const char *signature,
                              const ag_batch_options *options)
{
    const ag_function_desc *d = function ? fn_desc_named(function) : NULL;
    char err[512];
    if (!d) {
        rt_report(loc, "ag_batcher_new: no AG_FUNCTION named '%s' is known (call it, or "
                       "ag_function_register it, first)", function ? function : "(null)");
        return NULL;
    }
    if (!options_ok(options, err, sizeof err)) {
        rt_report(loc, "ag_batcher_new: %s", err);
        return NULL;
    }
    function_runner *f = rt_xcalloc(1, sizeof *f);
    bt_runner r;
    const char *sig = signature ? signature : d->signature;
    if (!function_runner_for(loc, d, sig, options, f, &r, err, sizeof err)) {
        free(f);
        rt_report(loc, "ag_batcher_new: %s", err);
        return NULL;
    }
    /* Traced and compiled now, so that the errors of tracing are reported
     * here and no batch waits for a compile. */
    if (sig && !(f->cf = ag_get_concrete_function_at(loc, d->name, sig))) {
        free(f);
        return NULL;
    }
    return bt_new(loc, &r, options);
}
