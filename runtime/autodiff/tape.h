/*
 * tape.h - the gradient tape's internals, shared by tape.c (recording),
 * backward.c (computing gradients) and grad_build.c.
 *
 * A tape records the ops applied to the values it tracks: the tensors it
 * was told to watch, the values of variables read while it records, and
 * every result of a recorded op. Values are known by their tape_id (a
 * number no other value ever has), so a recorded value may be freed by
 * its handle without confusing the tape: the tape keeps its own alias of
 * each operand and result (the same data, or the same graph node while
 * tracing) for the gradient rules to read.
 */
#ifndef RT_AUTODIFF_TAPE_H
#define RT_AUTODIFF_TAPE_H

#include "../core/rt.h"

/* A map from tape ids to pointers (open addressing; ids are never 0). */
typedef struct id_map {
    uint64_t *keys;
    void **vals;
    size_t cap, count;
} id_map;

void id_map_put(id_map *m, uint64_t key, void *val);
void *id_map_get(const id_map *m, uint64_t key);
bool id_map_has(const id_map *m, uint64_t key);
void id_map_free(id_map *m);

/* One recorded op, or with op == RT_OP_COUNT a custom one: its own
 * backward, or none (a construct the tape cannot see inside); `what`
 * names it. */
typedef struct tape_entry {
    rt_op op;
    rt_attrs attrs;
    ag_loc loc;
    const char *what;
    rt_tape_backward_fn backward;
    void *ctx;
    rt_tape_ctx *owned; /* a reference to ctx, when the entry keeps it alive */
    int n_in, n_out;
    rt_value **in, **out; /* the tape's own aliases */
    uint64_t *in_id;      /* 0: an operand the tape does not track */
    uint64_t *out_id;
} tape_entry;

/* A variable read while recording: its value at the read is a source. */
typedef struct tape_read {
    const rt_variable *var;
    uint64_t id;
    ag_loc loc;
} tape_read;

typedef struct ag_tape_s {
    uint32_t magic;
    bool persistent;
    bool used;            /* a non-persistent tape has given its gradients */
    bool paused;          /* computing its own gradients: not recording */
    bool zero_unconnected;
    bool array_sources;   /* tensor arrays may be sources (rt_tape_watch_array) */
    const void *frame;    /* rt_trace_frame when made */
    id_map tracked;       /* ids this tape follows */
    tape_entry *entries;
    int n_entries, cap_entries;
    tape_read *reads;
    int n_reads, cap_reads;
    struct ag_tape_s *below; /* the thread's stack of live tapes */
} rt_tape;

#define RT_TAPE_MAGIC 0x7A9E7A9Eu

/* v's tape id, given on first use (a value keeps its first id). */
uint64_t rt_tape_id_of(rt_value *v);
/* v's tape id if it has one (a traced value always has: its node's), or 0. */
uint64_t rt_tape_peek_id(const rt_value *v);
/* A value the tape can keep: an alias of v, or a copy of a value without
 * storage of its own (a C number's scalar lives on its caller's stack). */
rt_value *rt_tape_keep(const rt_value *v);
/* rt_tape_keep, the same value to the tapes (its id kept): a gradient
 * that is another value unchanged (dy passed through an add). */
rt_value *rt_tape_alias(const rt_value *v);

/* The live tapes of this thread, innermost first. */
rt_tape *rt_tape_top(void);
/* t if it is a live tape of this thread; otherwise reports at loc (fn:
 * the public call) and gives NULL. */
rt_tape *rt_tape_live(ag_loc loc, const char *fn, ag_tape t);
/* Stops or resumes t's recording (while it computes its own gradients). */
void rt_tape_pause(rt_tape *t, bool paused);
/* A non-persistent tape after its gradients: records and answers no more. */
void rt_tape_retire(rt_tape *t);

/* A source of a gradient: the ids its value had on the tape (a variable
 * has one a read; none: it was never tracked, so it is unconnected), and
 * a value of its dtype and shape. */
typedef struct rt_grad_source {
    const uint64_t *ids;
    int n_ids;
    rt_value *like;
} rt_grad_source;

/* The gradients of target with respect to each source, as handles in
 * out[]; false after reporting (out[] then holds error tensors). */
bool rt_tape_gradients(ag_loc loc, ag_tape tape, ag_tensor target, int n,
                       const rt_grad_source *src, ag_tensor *out);

#endif
