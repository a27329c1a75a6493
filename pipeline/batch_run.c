/*
 * batch_run.c - running a batch: its rows joined and padded, the
 * function run once, its outputs checked and sliced back to the requests,
 * their callers woken.
 */
#include "batch_internal.h"

#include <stdlib.h>
#include <string.h>

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
void bt_count_run(ag_batcher *b, int64_t run)
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
    int64_t now = bt_now_us();
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
void bt_run_batch(ag_batcher *b, batch *bt, int64_t started, int64_t prev_run)
{
    int64_t padded = bt_padded_size(&b->o, bt->rows);
    rt_value *out[BT_MAX_TENSORS];
    char err[1024];
    ag_scope_push();
    bool ok = run_function(b, bt, padded, out, err, sizeof err);
    deliver(b, bt, padded, out, ok ? NULL : err, started, prev_run);
    ag_scope_pop_at((ag_loc){0});
    free(bt->parts);
    free(bt);
}
