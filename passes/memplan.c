/*
 * memplan.c - memory planning (an analysis).
 *
 * requires: a valid function; types as precise as infer makes them.
 * keeps:    everything: the IR is not changed.
 * breaks:   nothing. The plan (pass.h: pass_memory_plan) is a side table
 *           by node id, valid until the function changes.
 *
 * Buffers are assigned in program order, one graph at a time:
 *   - a value's buffer lives from its node to the last use of the value or
 *     of any alias of it (reshape, expand_dims and squeeze share their
 *     operand's buffer); a graph's results live to its end, and a value
 *     nothing uses dies where it is made;
 *   - an elementwise op whose operand's buffer dies at it, with the same
 *     byte size and element size, writes in place over it (each element
 *     is read before the same element is written);
 *   - otherwise a dead buffer of exactly the same byte size is reused, or
 *     a new one is added.
 * Constants, parameters and gets own no buffer (the graph, the caller or
 * a region holds them); values of unknown size are left to run time. A
 * cond or while's regions are planned on their own; while one runs, its
 * peak adds to what is live around the node.
 *
 * Loops of the fusion plan run whole at their last member: there their
 * stored values (those read outside the loop, or results) get buffers, and
 * every value the loop reads is used. Values only read inside their loop
 * live in registers and own no buffer. A loop that stores one value may
 * write it in place over a value it reads that dies there and has its
 * byte size: each element is read before the same element is written.
 */
#include "pass_internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct mplanner {
    pass_memory_plan *plan;
    const pass_fusion_plan *fusion;
    bool *stored;        /* by id of a loop member: read outside its loop */
    int *runs_at;        /* by loop: the position of its last member */
    int *n_stored;       /* by loop: its stored values */
    const ir_node **members; /* every loop's members in program order, loop */
    int *start;              /* by loop: where its members begin in members[] */
    const ir_node **root; /* by id: the node owning the value's buffer, or NULL */
    int *last;            /* by id of an owner: the position of its last use */
    int *owner;           /* by buffer: the node holding it now */
    int cap_buffers;
} mplanner;

/* Free buffers of one graph, searched by byte size. */
typedef struct pool {
    int *ids;
    int n, cap;
} pool;

static bool owns_buffer(const ir_node *n)
{
    return n->opcode < RT_OP_COUNT && n->opcode != RT_OP_CONST &&
           !(rt_ops[n->opcode].flags & RT_F_ALIAS) && n->type.dtype != RT_LIST;
}

static int new_buffer(mplanner *M, int64_t bytes)
{
    pass_memory_plan *p = M->plan;
    if (p->n_buffers == M->cap_buffers) {
        M->cap_buffers = M->cap_buffers ? 2 * M->cap_buffers : 16;
        p->buffer_bytes = rt_xrealloc(p->buffer_bytes, (size_t)M->cap_buffers * sizeof(int64_t));
        M->owner = rt_xrealloc(M->owner, (size_t)M->cap_buffers * sizeof(int));
    }
    p->buffer_bytes[p->n_buffers] = bytes;
    p->arena_bytes += bytes;
    return p->n_buffers++;
}

static int pool_take(pool *f, const pass_memory_plan *p, int64_t bytes)
{
    for (int i = f->n - 1; i >= 0; i--) {
        int b = f->ids[i];
        if (p->buffer_bytes[b] == bytes) {
            f->ids[i] = f->ids[--f->n];
            return b;
        }
    }
    return -1;
}

static void pool_put(pool *f, int b)
{
    if (f->n == f->cap) {
        f->cap = f->cap ? 2 * f->cap : 16;
        f->ids = rt_xrealloc(f->ids, (size_t)f->cap * sizeof *f->ids);
    }
    f->ids[f->n++] = b;
}

/* ------------------------------------------------------------- liveness */

static int loop_of(const mplanner *M, const ir_node *n)
{
    return n->id < M->fusion->n_ids ? M->fusion->cluster[n->id] : -1;
}

/* Where n runs: its own position, or its loop's. */
static int run_pos(const mplanner *M, const ir_node *n, int pos)
{
    int c = loop_of(M, n);
    return c < 0 ? pos : M->runs_at[c];
}

/* The nodes that run at n: its loop's members when n is the loop's last
 * (none for its other members), else n alone (in *one). */
static const ir_node *const *run_of(const mplanner *M, const ir_node *n, const ir_node **one,
                                    int *count)
{
    int c = loop_of(M, n);
    if (c < 0) {
        *one = n;
        *count = 1;
        return one;
    }
    int first = M->start[c], end = M->start[c + 1];
    *count = M->members[end - 1] == n ? end - first : 0;
    return M->members + first;
}

/* Fills members[] and start[]: loops are numbered in program order. */
static void collect_members(mplanner *M, const ir_graph *g, int *fill)
{
    for (const ir_node *n = g->first; n; n = n->next) {
        for (int r = 0; r < 2; r++)
            if (n->region[r])
                collect_members(M, n->region[r], fill);
        int c = loop_of(M, n);
        if (c >= 0)
            M->members[M->start[c] + fill[c]++] = n;
    }
}

/* Which loop members are read outside their loop, where each loop runs,
 * and how many values it stores. */
static void scan_loops(mplanner *M, const ir_graph *g)
{
    int pos = 0;
    for (const ir_node *n = g->first; n; n = n->next, pos++) {
        int c = loop_of(M, n);
        if (c >= 0)
            M->runs_at[c] = pos;
        for (int i = 0; i < n->n_in; i++) {
            int k = loop_of(M, n->in[i]);
            if (k >= 0 && k != c)
                M->stored[n->in[i]->id] = true;
        }
    }
    for (int i = 0; i < g->n_results; i++)
        if (loop_of(M, g->results[i]) >= 0)
            M->stored[g->results[i]->id] = true;
    for (const ir_node *n = g->first; n; n = n->next)
        if (loop_of(M, n) >= 0 && M->stored[n->id])
            M->n_stored[loop_of(M, n)]++;
}

/* Owners (and aliases' owners) and the position of each owner's last use. */
static void liveness(mplanner *M, const ir_graph *g)
{
    int pos = 0;
    for (int i = 0; i < g->n_params; i++)
        M->root[g->params[i]->id] = NULL;
    scan_loops(M, g);
    for (const ir_node *n = g->first; n; n = n->next, pos++) {
        int at = run_pos(M, n, pos);
        for (int i = 0; i < n->n_in; i++) {
            const ir_node *r = M->root[n->in[i]->id];
            if (r && M->last[r->id] < at)
                M->last[r->id] = at;
        }
        M->last[n->id] = -1;
        if (loop_of(M, n) >= 0 && !M->stored[n->id])
            M->root[n->id] = NULL; /* in registers only */
        else if (owns_buffer(n) && pass_type_bytes(&n->type) >= 0)
            M->root[n->id] = n;
        else if (n->opcode < RT_OP_COUNT && (rt_ops[n->opcode].flags & RT_F_ALIAS))
            M->root[n->id] = M->root[n->in[0]->id];
        else
            M->root[n->id] = NULL;
    }
    for (int i = 0; i < g->n_results; i++) {
        const ir_node *r = M->root[g->results[i]->id];
        if (r)
            M->last[r->id] = pos; /* past the last node */
    }
}

/* ----------------------------------------------------------- assignment */

static int64_t plan_graph(mplanner *M, const ir_graph *g);

/* A value that the run storing n (n's loop, when it stores only n, or an
 * elementwise n alone) reads, whose buffer dies there and fits n exactly. */
static const ir_node *in_place_candidate(const mplanner *M, const ir_node *const *run, int count,
                                         const ir_node *n, int pos, int64_t bytes)
{
    int c = loop_of(M, n);
    if (c < 0 ? !(rt_ops[n->opcode].flags & RT_F_ELEMENTWISE) : M->n_stored[c] != 1)
        return NULL;
    for (int j = 0; j < count; j++) {
        const ir_node *m = run[j];
        for (int i = 0; i < m->n_in; i++) {
            const ir_node *r = M->root[m->in[i]->id];
            if (r && M->last[r->id] == pos && pass_type_bytes(&r->type) == bytes &&
                rt_dtype_size(r->type.dtype) == rt_dtype_size(n->type.dtype))
                return r;
        }
    }
    return NULL;
}

/* Gives n, of the run run[0..count), a buffer; returns the bytes newly
 * live. */
static int64_t assign(mplanner *M, pool *free_bufs, const ir_node *const *run, int count,
                      const ir_node *n, int pos)
{
    pass_memory_plan *p = M->plan;
    int64_t bytes = pass_type_bytes(&n->type);
    p->n_values++;
    p->naive_bytes += bytes;
    const ir_node *victim = in_place_candidate(M, run, count, n, pos, bytes);
    if (victim) {
        p->buffer[n->id] = p->buffer[victim->id];
        p->in_place[n->id] = true;
        p->reused[n->id] = victim->id;
        p->n_in_place++;
        M->last[victim->id] = -2; /* handed over: not freed again */
        M->owner[p->buffer[n->id]] = n->id;
        return 0;
    }
    int b = pool_take(free_bufs, p, bytes);
    if (b >= 0)
        p->reused[n->id] = M->owner[b];
    else
        b = new_buffer(M, bytes);
    p->buffer[n->id] = b;
    M->owner[b] = n->id;
    return bytes;
}

/* Frees the buffers that die at pos: operands' owners whose last use it
 * is, and n's own if nothing uses it. Returns the bytes freed. */
static int64_t release_operands(mplanner *M, pool *free_bufs, const ir_node *n, int pos)
{
    int64_t freed = 0;
    for (int i = 0; i < n->n_in; i++) {
        const ir_node *r = M->root[n->in[i]->id];
        if (r && M->last[r->id] == pos) {
            M->last[r->id] = -2;
            pool_put(free_bufs, M->plan->buffer[r->id]);
            freed += pass_type_bytes(&r->type);
        }
    }
    if (M->root[n->id] == n && M->last[n->id] == -1) {
        pool_put(free_bufs, M->plan->buffer[n->id]);
        freed += pass_type_bytes(&n->type);
    }
    return freed;
}

/* Gives the values of a run their buffers, then frees what dies there;
 * returns the bytes newly live and, in *freed, those freed. */
static int64_t plan_run(mplanner *M, pool *free_bufs, const ir_node *const *run, int count,
                        int pos, int64_t *freed)
{
    int64_t added = 0;
    for (int j = 0; j < count; j++) {
        const ir_node *m = run[j];
        if (M->root[m->id] == m)
            added += assign(M, free_bufs, run, count, m, pos);
        else if (owns_buffer(m) && (loop_of(M, m) < 0 || M->stored[m->id]))
            M->plan->n_dynamic++;
    }
    *freed = 0;
    for (int j = 0; j < count; j++)
        *freed += release_operands(M, free_bufs, run[j], pos);
    return added;
}

/* Plans g's values; returns the most bytes live at once inside g. */
static int64_t plan_graph(mplanner *M, const ir_graph *g)
{
    liveness(M, g);
    pool free_bufs = {0};
    int64_t live = 0, peak = 0;
    int pos = 0;
    for (const ir_node *n = g->first; n; n = n->next, pos++) {
        if (pass_is_region_op(n)) {
            int64_t a = plan_graph(M, n->region[0]), b = plan_graph(M, n->region[1]);
            peak = live + (a > b ? a : b) > peak ? live + (a > b ? a : b) : peak;
        }
        const ir_node *one;
        int count;
        const ir_node *const *run = run_of(M, n, &one, &count); /* a loop runs at its last member */
        int64_t freed;
        live += plan_run(M, &free_bufs, run, count, pos, &freed);
        peak = live > peak ? live : peak;
        live -= freed;
    }
    free(free_bufs.ids);
    return peak;
}

pass_memory_plan *pass_memory_plan_new(const ir_function *fn, const pass_caps *caps)
{
    pass_fusion_plan *fusion = pass_fusion_plan_new(fn, caps);
    pass_memory_plan *p = pass_memory_plan_new_fused(fn, fusion);
    pass_fusion_plan_free(fusion);
    return p;
}

pass_memory_plan *pass_memory_plan_new_fused(const ir_function *fn, const pass_fusion_plan *fusion)
{
    int n_ids = fn->next_id > 0 ? fn->next_id : 1;
    pass_memory_plan *p = rt_xcalloc(1, sizeof *p);
    p->n_ids = n_ids;
    p->buffer = rt_xmalloc((size_t)n_ids * sizeof *p->buffer);
    p->reused = rt_xmalloc((size_t)n_ids * sizeof *p->reused);
    p->in_place = rt_xcalloc((size_t)n_ids, sizeof *p->in_place);
    for (int i = 0; i < n_ids; i++)
        p->buffer[i] = p->reused[i] = -1;
    mplanner M = {.plan = p, .fusion = fusion};
    M.root = rt_xcalloc((size_t)n_ids, sizeof *M.root);
    M.last = rt_xcalloc((size_t)n_ids, sizeof *M.last);
    M.stored = rt_xcalloc((size_t)n_ids, sizeof *M.stored);
    size_t n_loops = (size_t)fusion->n_clusters + 1;
    M.runs_at = rt_xcalloc(n_loops, sizeof *M.runs_at);
    M.n_stored = rt_xcalloc(n_loops, sizeof *M.n_stored);
    M.start = rt_xcalloc(n_loops, sizeof *M.start);
    for (int c = 0; c < fusion->n_clusters; c++)
        M.start[c + 1] = M.start[c] + fusion->cluster_size[c];
    M.members = rt_xcalloc((size_t)M.start[fusion->n_clusters] + 1, sizeof *M.members);
    int *fill = rt_xcalloc(n_loops, sizeof *fill);
    collect_members(&M, fn->body, fill);
    free(fill);
    p->peak_bytes = plan_graph(&M, fn->body);
    free(M.root);
    free(M.last);
    free(M.owner);
    free(M.stored);
    free(M.runs_at);
    free(M.n_stored);
    free(M.start);
    free(M.members);
    return p;
}

void pass_memory_plan_free(pass_memory_plan *p)
{
    if (!p)
        return;
    free(p->buffer);
    free(p->reused);
    free(p->in_place);
    free(p->buffer_bytes);
    free(p);
}

/* ------------------------------------------------------------- printing */

static void print_values(const pass_memory_plan *p, const ir_graph *g, FILE *out)
{
    for (const ir_node *n = g->first; n; n = n->next) {
        for (int r = 0; r < 2; r++)
            if (n->region[r])
                print_values(p, n->region[r], out);
        int b = n->id < p->n_ids ? p->buffer[n->id] : -1;
        if (b < 0)
            continue;
        fprintf(out, "// %%%d %s: buffer %d, %lld byte%s", n->id, ir_opcode_name(n->opcode), b,
                (long long)p->buffer_bytes[b], p->buffer_bytes[b] == 1 ? "" : "s");
        if (p->in_place[n->id])
            fprintf(out, ", in place over %%%d", p->reused[n->id]);
        else if (p->reused[n->id] >= 0)
            fprintf(out, ", reusing %%%d's", p->reused[n->id]);
        fputc('\n', out);
    }
}

void pass_memory_plan_print(const pass_memory_plan *p, const ir_function *fn, FILE *out)
{
    fprintf(out, "// memory plan: %d value%s in %d buffer%s, %d in place, %d of unknown size\n",
            p->n_values, p->n_values == 1 ? "" : "s", p->n_buffers, p->n_buffers == 1 ? "" : "s",
            p->n_in_place, p->n_dynamic);
    fprintf(out, "// bytes: peak %lld, arena %lld, without reuse %lld\n",
            (long long)p->peak_bytes, (long long)p->arena_bytes, (long long)p->naive_bytes);
    print_values(p, fn->body, out);
}

bool pass_memplan(ir_function *fn, pass_ctx *ctx)
{
    pass_analyses_memory(ctx->am); /* computed once per version of fn */
    return false;
}
