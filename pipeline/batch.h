/*
 * batch.h - in-graph batching (prefix bt_): the scheduler behind
 * ag_batcher (ag.h), TensorFlow's BatchFunction in C.
 *
 * Callers on many threads hand in requests (some rows along dimension 0 of
 * every input); the scheduler queues them in batches of at most
 * max_batch_size rows, and num_batch_threads workers each take a batch,
 * concatenate its rows, pad them to an allowed size, run the batch once
 * (a runner: a C callback, or an AG_FUNCTION through the function cache)
 * and slice every output back to the requests. docs/batching.md is the
 * user's side; converter.md section 3 the contract.
 *
 * The public entry points are defined in batch.c (ag_batcher_close,
 * ag_batcher_free, ag_batcher_stats), batch_runners.c (ag_batcher_new_at,
 * ag_batcher_new_fn_at) and batch_call.c (ag_batcher_call_at); the
 * scheduler's design and insides are in batch_internal.h. This header
 * gives the pieces the saved model and the tests use on their own; the
 * options' table is batch_options.def (batch_options.h).
 */
#ifndef BT_BATCH_H
#define BT_BATCH_H

#include "batch_options.h"
#include "rt.h"

/* The most inputs and outputs a batched function may have (as many as a
 * signature may describe). */
#define BT_MAX_TENSORS 64

/* The number of rows a batch of `rows` runs with: the first allowed size
 * that holds them, or `rows` when no sizes are given (o must be valid). */
int64_t bt_padded_size(const ag_batch_options *o, int64_t rows);

/* How a batch runs: run() gets the batched inputs (dimension 0: the
 * padded size) and stores n_outputs tensors, in a scope the worker pops
 * afterwards; false after reporting an error (the worker's thread is in
 * AG_ERRORS_RETURN mode). free_state() (may be NULL) runs when the
 * batcher is freed. */
typedef struct bt_runner {
    bool (*run)(void *state, const ag_tensor *inputs, ag_tensor *outputs);
    void (*free_state)(void *state);
    void *state;
    int n_inputs, n_outputs;
    const char *name;                         /* for messages: "'f'" or "the callback" */
    /* Freed by its owner (a loaded saved model), which ag_shutdown frees
     * in its own turn; ag_shutdown's batching hook leaves it alone. */
    bool owned;
    const char *input_names[BT_MAX_TENSORS];  /* NULL entries: "input i" */
    /* The types a signature fixes (has_types): shape dim 0 is -1, other
     * dims -1 where the signature has `?`. */
    bool has_types;
    ag_dtype dtype[BT_MAX_TENSORS];
    ag_shape shape[BT_MAX_TENSORS];
} bt_runner;

/* A batcher running r (copied; on failure its state is freed). NULL after
 * reporting bad options at loc. */
ag_batcher *bt_new(ag_loc loc, const bt_runner *r, const ag_batch_options *o);

#endif
