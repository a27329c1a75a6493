/*
 * dce.c - dead node pruning, with tf.function's non-strict semantics.
 *
 * requires: a valid function.
 * keeps:    every function result, every effectful node (print, assert,
 *           variable reads and writes, regions containing them) in its
 *           order, everything they need, and every parameter of the
 *           function.
 * breaks:   nothing. Dead nodes are unlinked; cond and while lose the
 *           results, loop variables and operands nothing needs.
 *
 * A node is live when a result or an effect needs it, as the reference
 * executor decides what runs; anything else would never run, so removing
 * it changes no result (an unused op that would fail never fails).
 *
 * Inside control flow:
 *   - cond: a result no live get reads is dropped from both regions'
 *     yields; an operand neither region's parameter uses is dropped;
 *   - while: a loop variable is dropped when no live get reads it and
 *     neither the condition nor what the body computes for the variables
 *     still needed uses it (found by iterating to a fixpoint).
 * A region computes all its results when it runs, and a live cond or
 * while needs all its operands, so results and operands are dropped only
 * if nothing that would no longer run may fail (pass_may_fail; an operand
 * that keeps another live user still runs): a division by zero feeding
 * an unused loop variable still stops the program.
 * Tensor arrays are shared, mutable lists (ta_write updates its list in
 * place), so a ta_write - or a cond/while taking a tensor array - is kept
 * whenever a tensor array it takes is live, and tensor-array loop
 * variables, results and operands are never dropped.
 */
#include "pass_internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct dce {
    bool *live;     /* by id, parameters included */
    bool **used;    /* by id: which results of a live cond/while live gets read */
    int **renumber; /* by id: a pruned cond/while's new result numbers */
    int *users;     /* by id: live users in the graph being pruned */
    pass_fail_cache fails;
    bool changed;
} dce;

static void dce_graph(dce *d, ir_graph *g);

/* --------------------------------------------------------------- marking */

static bool is_list(const ir_node *n) { return n->type.dtype == RT_LIST; }

/* May update a tensor array it takes, in place. */
static bool mutates_list(const ir_node *n)
{
    if (n->opcode == RT_OP_TA_WRITE)
        return true;
    if (!pass_is_region_op(n))
        return false;
    for (int i = 0; i < n->n_in; i++)
        if (is_list(n->in[i]))
            return true;
    return false;
}

/* Marks, among dead nodes that may update a live tensor array, those
 * nodes live; true if it marked any. */
static bool mark_list_writers(dce *d, const ir_graph *g)
{
    bool any = false;
    for (const ir_node *n = g->first; n; n = n->next) {
        if (d->live[n->id] || !mutates_list(n))
            continue;
        for (int i = 0; i < n->n_in && !d->live[n->id]; i++)
            if (is_list(n->in[i]) && d->live[n->in[i]->id])
                any = d->live[n->id] = true;
    }
    return any;
}

/* Liveness of g's nodes and parameters, one level deep (a live cond/while
 * needs all its operands): roots are the results (those keep[] selects,
 * all when keep is NULL) and the effects. */
static void mark_graph(dce *d, const ir_graph *g, const bool *keep)
{
    for (int i = 0; i < g->n_params; i++)
        d->live[g->params[i]->id] = g->parent && is_list(g->params[i]);
    for (const ir_node *n = g->first; n; n = n->next)
        d->live[n->id] = n->effect;
    for (int i = 0; i < g->n_results; i++)
        if (!keep || keep[i])
            d->live[g->results[i]->id] = true;
    do {
        for (const ir_node *n = g->last; n; n = n->prev)
            if (d->live[n->id])
                for (int i = 0; i < n->n_in; i++)
                    d->live[n->in[i]->id] = true;
    } while (mark_list_writers(d, g));
}

/* Counts the live users of g's values (after mark_graph). */
static void count_users(dce *d, const ir_graph *g)
{
    for (int i = 0; i < g->n_params; i++)
        d->users[g->params[i]->id] = 0;
    for (const ir_node *n = g->first; n; n = n->next)
        d->users[n->id] = 0;
    for (const ir_node *n = g->first; n; n = n->next)
        for (int i = 0; d->live[n->id] && i < n->n_in; i++)
            d->users[n->in[i]->id]++;
    for (int i = 0; i < g->n_results; i++)
        d->users[g->results[i]->id]++;
}

/* Whether a live cond/while may stop using x: x keeps another live user,
 * or cannot fail (else the program would stop failing); counts the use
 * gone. */
static bool droppable(dce *d, const ir_node *x)
{
    if (d->users[x->id] >= 2) {
        d->users[x->id]--;
        return true;
    }
    return !pass_may_fail_deep(&d->fails, x);
}

/* Records which results of each live cond/while a live get reads. */
static void collect_used(dce *d, const ir_graph *g)
{
    for (const ir_node *n = g->first; n; n = n->next) {
        if (pass_is_region_op(n) && d->live[n->id])
            d->used[n->id] = rt_xcalloc((size_t)(n->n_results + 1), sizeof(bool));
    }
    for (const ir_node *n = g->first; n; n = n->next)
        if (n->opcode == IR_GET && d->live[n->id])
            d->used[n->in[0]->id][n->index] = true;
}

/* ------------------------------------------------------------ compaction */

/* Keeps the entries of a node array that keep[] selects; returns the new
 * count. */
static int compact_nodes(ir_node **v, int n, const bool *keep)
{
    int k = 0;
    for (int i = 0; i < n; i++)
        if (keep[i])
            v[k++] = v[i];
    return k;
}

static int compact_types(ir_type *v, int n, const bool *keep)
{
    int k = 0;
    for (int i = 0; i < n; i++)
        if (keep[i])
            v[k++] = v[i];
    return k;
}

static void compact_params(ir_graph *g, const bool *keep)
{
    g->n_params = compact_nodes(g->params, g->n_params, keep);
    for (int i = 0; i < g->n_params; i++)
        g->params[i]->index = i;
}

/* Records how n's results are renumbered once compacted; the gets follow
 * in one sweep (renumber_gets). */
static void plan_renumbering(dce *d, const ir_node *n, const bool *keep)
{
    int *index = rt_xcalloc((size_t)(n->n_results + 1), sizeof *index);
    for (int i = 0, k = 0; i < n->n_results; i++)
        index[i] = keep[i] ? k++ : -1;
    d->renumber[n->id] = index;
}

static void renumber_gets(dce *d, const ir_graph *g)
{
    for (ir_node *m = g->first; m; m = m->next)
        if (m->opcode == IR_GET && d->live[m->id] && d->renumber[m->in[0]->id])
            m->index = d->renumber[m->in[0]->id][m->index];
    for (const ir_node *m = g->first; m; m = m->next) {
        free(d->renumber[m->id]);
        d->renumber[m->id] = NULL;
    }
}

static bool all_kept(const bool *keep, int n)
{
    for (int i = 0; i < n; i++)
        if (!keep[i])
            return false;
    return true;
}

/* Whether keeping only the results keep[] selects would drop from g a node
 * the whole region would run that may fail: the region's results are all
 * computed when it runs, so the program would stop failing. */
static bool drops_failing(dce *d, const ir_graph *g, const bool *keep)
{
    int n = 0, k = 0;
    for (const ir_node *m = g->first; m; m = m->next)
        n++;
    const ir_node **dead = rt_xmalloc((size_t)(n + 1) * sizeof *dead);
    mark_graph(d, g, keep);
    for (const ir_node *m = g->first; m; m = m->next)
        if (!d->live[m->id])
            dead[k++] = m;
    mark_graph(d, g, NULL);
    bool fails = false;
    for (int i = 0; i < k && !fails; i++)
        fails = d->live[dead[i]->id] && pass_may_fail(dead[i]);
    free(dead);
    return fails;
}

/* ------------------------------------------------------------------ cond */

static void prune_cond_results(dce *d, ir_node *n)
{
    bool *keep = rt_xcalloc((size_t)(n->n_results + 1), sizeof *keep);
    for (int k = 0; k < n->n_results; k++)
        keep[k] = d->used[n->id][k] || n->results[k].dtype == RT_LIST;
    if (!all_kept(keep, n->n_results) && !drops_failing(d, n->region[0], keep) &&
        !drops_failing(d, n->region[1], keep)) {
        plan_renumbering(d, n, keep);
        for (int r = 0; r < 2; r++)
            n->region[r]->n_results =
                compact_nodes(n->region[r]->results, n->region[r]->n_results, keep);
        n->n_results = compact_types(n->results, n->n_results, keep);
        d->changed = true;
    }
    free(keep);
}

/* Drops operands whose parameter neither region uses; true if any. */
static bool prune_cond_operands(dce *d, ir_node *n)
{
    int n_params = n->region[0]->n_params;
    bool *keep = rt_xcalloc((size_t)(n_params + 1), sizeof *keep);
    for (int i = 0; i < n_params; i++)
        keep[i] = is_list(n->in[i + 1]) || pass_graph_uses(n->region[0], n->region[0]->params[i]) ||
                  pass_graph_uses(n->region[1], n->region[1]->params[i]) ||
                  !droppable(d, n->in[i + 1]);
    bool pruned = !all_kept(keep, n_params);
    if (pruned) {
        compact_params(n->region[0], keep);
        compact_params(n->region[1], keep);
        n->n_in = 1 + compact_nodes(n->in + 1, n->n_in - 1, keep);
        d->changed = true;
    }
    free(keep);
    return pruned;
}

/* ----------------------------------------------------------------- while */

/* Adds to needed[] the loop variables the condition, the body's effects and
 * the body's yields of needed variables use; true if it added any. */
static bool grow_needed(dce *d, const ir_node *n, bool *needed)
{
    bool grew = false;
    mark_graph(d, n->region[0], NULL);
    mark_graph(d, n->region[1], needed);
    for (int i = 0; i < n->n_in; i++) {
        bool uses = d->live[n->region[0]->params[i]->id] || d->live[n->region[1]->params[i]->id];
        if (uses && !needed[i])
            grew = needed[i] = true;
    }
    return grew;
}

/* Drops the loop variables nothing needs; true if any. */
static bool prune_while_vars(dce *d, ir_node *n)
{
    bool *needed = rt_xcalloc((size_t)(n->n_in + 1), sizeof *needed);
    for (int i = 0; i < n->n_in; i++)
        needed[i] = d->used[n->id][i] || is_list(n->in[i]) || !droppable(d, n->in[i]);
    while (grow_needed(d, n, needed))
        ;
    bool pruned = !all_kept(needed, n->n_in) && !drops_failing(d, n->region[1], needed);
    if (pruned) {
        plan_renumbering(d, n, needed);
        ir_graph *body = n->region[1];
        body->n_results = compact_nodes(body->results, body->n_results, needed);
        compact_params(n->region[0], needed);
        compact_params(body, needed);
        n->n_results = compact_types(n->results, n->n_results, needed);
        n->n_in = compact_nodes(n->in, n->n_in, needed);
        d->changed = true;
    }
    free(needed);
    return pruned;
}

/* ----------------------------------------------------------------- sweep */

/* Prunes a live cond/while and its regions; true if it dropped operands
 * (which may leave their producers dead). */
static bool prune_region_op(dce *d, ir_node *n)
{
    bool dropped = false;
    if (n->opcode == IR_WHILE)
        dropped = prune_while_vars(d, n);
    else
        prune_cond_results(d, n);
    dce_graph(d, n->region[0]);
    dce_graph(d, n->region[1]);
    if (n->opcode == IR_COND)
        dropped |= prune_cond_operands(d, n);
    return dropped;
}

static void dce_graph(dce *d, ir_graph *g)
{
    mark_graph(d, g, NULL);
    count_users(d, g);
    collect_used(d, g);
    bool dropped = false;
    for (ir_node *n = g->first; n; n = n->next)
        if (pass_is_region_op(n) && d->live[n->id])
            dropped |= prune_region_op(d, n);
    renumber_gets(d, g);
    if (dropped) /* results are kept, so used[] stays right */
        mark_graph(d, g, NULL);
    for (ir_node *n = g->first, *next; n; n = next) {
        next = n->next;
        free(d->used[n->id]);
        d->used[n->id] = NULL;
        if (!d->live[n->id]) {
            ir_remove(n);
            d->changed = true;
        }
    }
}

bool pass_dce(ir_function *fn, pass_ctx *ctx)
{
    (void)ctx;
    size_t n_ids = (size_t)(fn->next_id > 0 ? fn->next_id : 1);
    dce d = {.live = rt_xcalloc(n_ids, sizeof(bool)), .used = rt_xcalloc(n_ids, sizeof(bool *)),
             .renumber = rt_xcalloc(n_ids, sizeof(int *)), .users = rt_xcalloc(n_ids, sizeof(int))};
    dce_graph(&d, fn->body);
    free(d.live);
    free(d.used);
    free(d.renumber);
    free(d.users);
    pass_fail_cache_free(&d.fails);
    return d.changed;
}
