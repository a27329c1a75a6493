/*
 * batch_queue.c - the queue of batches (under the batcher's lock): a
 * request's rows into the open batch and new ones, and the batch a worker
 * takes.
 */
#include "batch_internal.h"

#include <stdio.h>

/* Starts a batch at the back of the queue, closing the open one: a request
 * that does not fit ends it, as in TensorFlow. */
static batch *new_batch(ag_batcher *b)
{
    if (b->tail)
        b->tail->open = false;
    batch *bt = rt_xcalloc(1, sizeof *bt);
    bt->open = true;
    bt->opened_us = bt_now_us();
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
bool bt_enqueue(ag_batcher *b, request *r, bool *changed)
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
batch *bt_take_batch(ag_batcher *b, int64_t *deadline_us)
{
    batch *bt = b->head;
    *deadline_us = -1;
    if (!bt)
        return NULL;
    if (bt->open && !b->closing) {
        int64_t due = bt->opened_us + b->o.batch_timeout_micros;
        if (bt_now_us() < due) {
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
