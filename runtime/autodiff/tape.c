/*
 * tape.c - gradient tapes: making them, watching values, recording ops.
 *
 * Like tf.GradientTape: a tape records from its creation until it is
 * freed, on the thread that made it; variables read meanwhile are watched
 * automatically, other tensors by ag_tape_watch. rt_apply gives each op to
 * rt_tape_record, which keeps it on every live tape that tracks one of its
 * operands and that was made in the same graph region (eagerly, or in the
 * same traced function or branch). Because every op goes through rt_apply,
 * a tape inside an AG_FUNCTION records the traced ops, and its gradient
 * becomes nodes of the same graph (backward.c).
 */
#include "tape.h"

#include <stdlib.h>
#include <string.h>

_Thread_local int rt_tapes_recording;
static _Thread_local rt_tape *live; /* innermost first */
static _Atomic uint64_t last_id;

rt_tape *rt_tape_top(void) { return live; }

/* A traced value is its graph node: every handle of one node is the same
 * value to a tape (the tracer makes a new rt_value for each use of a
 * node, the graph's inputs and outputs included). Node ids have the top
 * bit set; the counter never reaches it. */
uint64_t rt_tape_peek_id(const rt_value *v)
{
    if (v->tape_id)
        return v->tape_id;
    return v->kind == RT_SYMBOLIC && v->sym ? (uint64_t)(uintptr_t)v->sym | (1ull << 63) : 0;
}

uint64_t rt_tape_id_of(rt_value *v)
{
    if (!v->tape_id)
        v->tape_id = v->kind == RT_SYMBOLIC && v->sym
                         ? (uint64_t)(uintptr_t)v->sym | (1ull << 63)
                         : atomic_fetch_add(&last_id, 1) + 1;
    return v->tape_id;
}

rt_value *rt_tape_keep(const rt_value *v)
{
    if (v->kind != RT_CONCRETE || v->storage || v->numel <= 0 || v->dtype == RT_LIST)
        return rt_value_alias(v, &v->shape);
    rt_value *copy = rt_value_new(v->dtype, &v->shape);
    memcpy(copy->data, v->data, rt_value_bytes(v));
    return copy;
}

rt_value *rt_tape_alias(const rt_value *v)
{
    rt_value *a = rt_tape_keep(v);
    a->tape_id = v->tape_id;
    return a;
}

/* ---------------------------------------------------------- making tapes */

static rt_tape *tape_new(bool persistent)
{
    rt_tape *t = rt_xcalloc(1, sizeof *t);
    t->magic = RT_TAPE_MAGIC;
    t->persistent = persistent;
    t->frame = rt_trace_frame;
    t->below = live;
    live = t;
    rt_tapes_recording++;
    return t;
}

ag_tape ag_tape_new_at(ag_loc loc)
{
    (void)loc;
    return tape_new(false);
}

ag_tape ag_tape_new_persistent_at(ag_loc loc)
{
    (void)loc;
    return tape_new(true);
}

/* t if it is a live tape of this thread; otherwise reports and gives NULL. */
rt_tape *rt_tape_live(ag_loc loc, const char *fn, ag_tape t)
{
    for (rt_tape *x = live; x; x = x->below)
        if (x == t && x->magic == RT_TAPE_MAGIC)
            return x;
    rt_report(loc, "%s: not a live gradient tape of this thread (freed, never made, "
                   "or made on another thread)", fn);
    return NULL;
}

static void entry_free(tape_entry *e)
{
    for (int i = 0; i < e->n_in; i++)
        rt_value_free(e->in[i]);
    for (int i = 0; i < e->n_out; i++)
        rt_value_free(e->out[i]);
    free(e->in);
    free(e->out);
    free(e->in_id);
    free(e->out_id);
    if (e->owned)
        rt_tape_ctx_unref(e->owned);
}

/* Forgets what t recorded (a non-persistent tape after its gradient). */
static void tape_clear(rt_tape *t)
{
    for (int i = 0; i < t->n_entries; i++)
        entry_free(&t->entries[i]);
    free(t->entries);
    free(t->reads);
    id_map_free(&t->tracked);
    t->entries = NULL;
    t->reads = NULL;
    t->n_entries = t->cap_entries = t->n_reads = t->cap_reads = 0;
}

static void unlink_tape(rt_tape *t)
{
    for (rt_tape **p = &live; *p; p = &(*p)->below) {
        if (*p == t) {
            *p = t->below;
            if (!t->paused && !t->used)
                rt_tapes_recording--;
            return;
        }
    }
}

void ag_tape_free_at(ag_loc loc, ag_tape t)
{
    if (!t)
        return;
    rt_tape *x = rt_tape_live(loc, "ag_tape_free", t);
    if (!x)
        return;
    unlink_tape(x);
    tape_clear(x);
    x->magic = 0;
    free(x);
}

/* Stops t recording for good (a non-persistent tape that has answered) or
 * for a while (computing its own gradients). */
void rt_tape_pause(rt_tape *t, bool paused)
{
    if (t->paused == paused || t->used)
        return;
    t->paused = paused;
    rt_tapes_recording += paused ? -1 : 1;
}

void rt_tape_retire(rt_tape *t)
{
    rt_tape_pause(t, true);
    t->used = true;
    tape_clear(t);
}

void ag_tape_set_unconnected_at(ag_loc loc, ag_tape t, ag_unconnected u)
{
    rt_tape *x = rt_tape_live(loc, "ag_tape_set_unconnected", t);
    if (x)
        x->zero_unconnected = u == AG_UNCONNECTED_ZERO;
}

void ag_tape_watch_at(ag_loc loc, ag_tape t, ag_tensor x)
{
    rt_tape *tape = rt_tape_live(loc, "ag_tape_watch", t);
    rt_value *v = tape ? rt_handle_get(loc, x) : NULL;
    if (!v)
        return;
    if (v->dtype == RT_LIST) {
        rt_report(loc, "ag_tape_watch: a tensor array cannot be watched; watch the "
                       "tensors written into it");
        return;
    }
    id_map_put(&tape->tracked, rt_tape_id_of(v), NULL);
}

void rt_tape_watch_array(ag_loc loc, ag_tape t, ag_tensor x)
{
    rt_tape *tape = rt_tape_live(loc, "ag_tape_watch", t);
    rt_value *v = tape ? rt_handle_get(loc, x) : NULL;
    if (!v)
        return;
    tape->array_sources = true;
    id_map_put(&tape->tracked, rt_tape_id_of(v), NULL);
}

/* ------------------------------------------------------------- recording */

/* Whether t records an op on these operands now. */
static bool follows(const rt_tape *t, rt_value *const *in, int n)
{
    if (t->paused || t->used || t->frame != rt_trace_frame)
        return false;
    for (int i = 0; i < n; i++)
        if (rt_tape_peek_id(in[i]) && id_map_has(&t->tracked, rt_tape_peek_id(in[i])))
            return true;
    return false;
}

static tape_entry *new_entry(rt_tape *t, ag_loc loc, int n_in, int n_out)
{
    if (t->n_entries == t->cap_entries) {
        t->cap_entries = t->cap_entries ? 2 * t->cap_entries : 16;
        t->entries = rt_xrealloc(t->entries, (size_t)t->cap_entries * sizeof *t->entries);
    }
    tape_entry *e = &t->entries[t->n_entries++];
    memset(e, 0, sizeof *e);
    e->loc = loc;
    e->n_in = n_in;
    e->n_out = n_out;
    e->in = rt_xcalloc((size_t)n_in + 1, sizeof *e->in);
    e->in_id = rt_xcalloc((size_t)n_in + 1, sizeof *e->in_id);
    e->out = rt_xcalloc((size_t)n_out, sizeof *e->out);
    e->out_id = rt_xcalloc((size_t)n_out, sizeof *e->out_id);
    return e;
}

static void keep_operands(rt_tape *t, tape_entry *e, rt_value *const *in, rt_value *const *out)
{
    for (int i = 0; i < e->n_in; i++) {
        e->in[i] = rt_tape_alias(in[i]);
        uint64_t id = rt_tape_peek_id(in[i]);
        if (id && id_map_has(&t->tracked, id))
            e->in_id[i] = id;
    }
    for (int i = 0; i < e->n_out; i++) {
        e->out_id[i] = rt_tape_id_of(out[i]);
        e->out[i] = rt_tape_alias(out[i]);
        id_map_put(&t->tracked, e->out_id[i], NULL);
    }
}

static void record_read(rt_tape *t, ag_loc loc, const rt_attrs *a, rt_value *out)
{
    if (t->paused || t->used || t->frame != rt_trace_frame)
        return;
    if (t->n_reads == t->cap_reads) {
        t->cap_reads = t->cap_reads ? 2 * t->cap_reads : 8;
        t->reads = rt_xrealloc(t->reads, (size_t)t->cap_reads * sizeof *t->reads);
    }
    uint64_t id = rt_tape_id_of(out);
    t->reads[t->n_reads++] = (tape_read){a->ref, id, loc};
    id_map_put(&t->tracked, id, NULL);
}

bool rt_tape_recording_here(void)
{
    for (rt_tape *t = live; t; t = t->below)
        if (!t->paused && !t->used && t->frame == rt_trace_frame)
            return true;
    return false;
}

void rt_tape_record(ag_loc loc, rt_op op, const rt_attrs *a, rt_value *const *in, int n,
                    rt_value *out)
{
    for (rt_tape *t = live; t; t = t->below) {
        if (op == RT_OP_VAR_READ) {
            record_read(t, loc, a, out);
            continue;
        }
        /* An op without a gradient ends every path through it: its result
         * is not followed, so what depends only on it is unconnected. A
         * tensor array written with a tracked value is followed, and its
         * reads and stack carry the gradient back (grad_rules_list.c). */
        if (rt_ops[op].grad_kind == RT_GRAD_NONE || !follows(t, in, n))
            continue;
        tape_entry *e = new_entry(t, loc, n, 1);
        e->op = op;
        e->attrs = *a;
        keep_operands(t, e, in, &out);
    }
}

static void record_custom(ag_loc loc, const char *what, rt_value *const *in, int n_in,
                          rt_value *const *out, int n_out, rt_tape_backward_fn backward,
                          void *ctx, rt_tape_ctx *owned)
{
    for (rt_tape *t = live; t; t = t->below) {
        if (t->paused || t->used || t->frame != rt_trace_frame)
            continue;
        tape_entry *e = new_entry(t, loc, n_in, n_out);
        e->op = RT_OP_COUNT;
        e->what = what;
        e->backward = backward;
        e->ctx = ctx;
        if ((e->owned = owned))
            atomic_fetch_add(&owned->refs, 1);
        keep_operands(t, e, in, out);
    }
}

void rt_tape_record_custom(ag_loc loc, const char *what, rt_value *const *in, int n_in,
                           rt_value *const *out, int n_out, rt_tape_backward_fn backward,
                           void *ctx)
{
    record_custom(loc, what, in, n_in, out, n_out, backward, ctx, NULL);
}

void rt_tape_record_owned(ag_loc loc, const char *what, rt_value *const *in, int n_in,
                          rt_value *const *out, int n_out, rt_tape_backward_fn backward,
                          rt_tape_ctx *ctx)
{
    record_custom(loc, what, in, n_in, out, n_out, backward, ctx, ctx);
}

void rt_tape_ctx_unref(rt_tape_ctx *ctx)
{
    if (atomic_fetch_sub(&ctx->refs, 1) == 1)
        ctx->release(ctx);
}

rt_variable **rt_tape_variables_read(ag_tape tape, int *n)
{
    const rt_tape *t = (const rt_tape *)tape;
    rt_variable **vars = NULL;
    *n = 0;
    for (int i = 0; i < t->n_reads; i++) {
        int k = 0;
        while (k < *n && vars[k] != t->reads[i].var)
            k++;
        if (k < *n)
            continue;
        vars = rt_xrealloc(vars, (size_t)(*n + 1) * sizeof *vars);
        vars[(*n)++] = (rt_variable *)t->reads[i].var;
    }
    return vars;
}

/* ------------------------------------------------------------ id maps */

static size_t slot_of(const id_map *m, uint64_t key)
{
    size_t i = (size_t)(key * 0x9E3779B97F4A7C15ull) & (m->cap - 1);
    while (m->keys[i] && m->keys[i] != key)
        i = (i + 1) & (m->cap - 1);
    return i;
}

static void grow(id_map *m)
{
    id_map old = *m;
    m->cap = old.cap ? 2 * old.cap : 64;
    m->keys = rt_xcalloc(m->cap, sizeof *m->keys);
    m->vals = rt_xcalloc(m->cap, sizeof *m->vals);
    m->count = 0;
    for (size_t i = 0; i < old.cap; i++)
        if (old.keys[i])
            id_map_put(m, old.keys[i], old.vals[i]);
    free(old.keys);
    free(old.vals);
}

void id_map_put(id_map *m, uint64_t key, void *val)
{
    if (2 * (m->count + 1) > m->cap)
        grow(m);
    size_t i = slot_of(m, key);
    if (!m->keys[i]) {
        m->keys[i] = key;
        m->count++;
    }
    m->vals[i] = val;
}

void *id_map_get(const id_map *m, uint64_t key)
{
    if (!m->cap)
        return NULL;
    size_t i = slot_of(m, key);
    return m->keys[i] ? m->vals[i] : NULL;
}

bool id_map_has(const id_map *m, uint64_t key)
{
    return m->cap && m->keys[slot_of(m, key)] == key;
}

void id_map_free(id_map *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}
