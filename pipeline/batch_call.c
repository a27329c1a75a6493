/*
 * batch_call.c - a caller's side: its inputs checked on their own and
 * against earlier requests, queued, and its rows waited for
 * (ag_batcher_call).
 */
#include "batch_internal.h"

#include "signature.h"
#include "trace.h"

#include <stdio.h>

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
    r->arrived_us = bt_now_us();
    if (!bt_enqueue(b, r, &changed))
        return false; /* counted as rejected */
    b->stats.requests++;
    /* A batch opened (a worker takes it, or watches its timeout) or closed
     * (a worker takes it); rows joining an open batch change neither. */
    *signal = changed && bt_announce(b);
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
