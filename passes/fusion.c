/*
 * fusion.c - loop fusion planning (an analysis).
 *
 * requires: a valid function; types as precise as infer makes them.
 * keeps:    everything: the IR is not changed.
 * breaks:   nothing. The plan (pass.h: pass_fusion_plan) is a side table
 *           by node id, valid until the function changes.
 *
 * The plan says which elementwise nodes the backend computes together in
 * one loop nest (lower_plan.c follows it: one cluster, one loop). Nodes
 * are visited in program order, one graph at a time, keeping a set of
 * open clusters. An elementwise node that can be a loop statement
 * (pass_fusible) joins the open clusters of its operands that have its
 * shape, merging them, or else starts a cluster. A cluster closes when a
 * node outside it reads one of its values, or when a value is a graph
 * result: the loop must then run before that reader, so nothing later
 * may join. A cluster can so compute several values that leave it (each
 * read outside is stored; the others live only in registers), and it is
 * run at its last member, after every value from outside it reads.
 *
 * Shapes are compared without running anything. A fully known shape is
 * its dims; otherwise a value carries a shape key, the id of the node
 * whose run-time shape it provably has: an elementwise node whose
 * operands are all that shape or a single element has their key, a
 * cond's region parameter has its operand's. Two values with equal rank
 * and key have the same shape at run time.
 *
 * A member that checks at run time - its operands' shapes may not
 * broadcast, or it may fail on data (integer division by zero) - forms a
 * cluster alone, so that its error comes before anything after it runs.
 */
#include "pass_internal.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------ what fuses */

bool pass_caps_native(const pass_caps *caps, ag_dtype dt)
{
    return (unsigned)dt < 32 && (caps->native_dtypes >> dt & 1u);
}

bool pass_fusible(const pass_caps *caps, const ir_node *n)
{
    if (n->opcode >= RT_OP_COUNT || !(rt_ops[n->opcode].flags & RT_F_ELEMENTWISE) ||
        !caps->fuses || !caps->fuses(n->opcode) || pass_touches_list(n))
        return false;
    for (int i = 0; i < n->n_in; i++)
        if (!pass_caps_native(caps, n->in[i]->type.dtype))
            return false;
    if (!pass_caps_native(caps, n->type.dtype))
        return false;
    /* the op must be defined on the dtype it computes in: its operands',
     * or where(cond, a, b)'s branches' */
    ag_dtype dt = n->in[n->opcode == RT_OP_WHERE ? 1 : 0]->type.dtype;
    return rt_domain_has(rt_ops[n->opcode].domain, dt);
}

/* ---------------------------------------------------------- shapes */

/* One element (rank 0 included), known statically. */
static bool shape_unit(const ag_shape *s)
{
    if (!rt_shape_known(s))
        return false;
    for (int i = 0; i < s->rank; i++)
        if (s->dims[i] != 1)
            return false;
    return true;
}

bool pass_fusion_same_shape(const pass_fusion_plan *p, const ir_node *a, const ir_node *b)
{
    const ag_shape *x = &a->type.shape, *y = &b->type.shape;
    bool kx = rt_shape_known(x), ky = rt_shape_known(y);
    if (x->rank != y->rank || kx != ky)
        return false;
    if (!kx)
        return p->shape_key[a->id] == p->shape_key[b->id];
    return memcmp(x->dims, y->dims, (size_t)x->rank * sizeof *x->dims) == 0;
}

/*
 * The shape key of elementwise node n, and whether its operands' shapes
 * must be checked at run time (they may not broadcast). Operands that are
 * one element broadcast anywhere; if the others all have one shape, n has
 * it. Fully known shapes passed the shape rule when n was made.
 */
static int elementwise_key(const pass_fusion_plan *p, const ir_node *n, bool *checked)
{
    const ir_node *full = NULL;
    bool all_known = rt_shape_known(&n->type.shape), one_shape = true;
    for (int i = 0; i < n->n_in; i++) {
        const ir_node *x = n->in[i];
        all_known = all_known && rt_shape_known(&x->type.shape);
        if (shape_unit(&x->type.shape))
            continue;
        if (!full)
            full = x;
        else if (!pass_fusion_same_shape(p, full, x))
            one_shape = false;
    }
    *checked = false;
    if (all_known)
        return n->id;
    if (full && one_shape && full->type.shape.rank == n->type.shape.rank)
        return p->shape_key[full->id];
    *checked = true;
    return n->id;
}

/* --------------------------------------------------------- planning */

typedef struct planner {
    pass_fusion_plan *plan;
    const pass_caps *caps;
    const ir_liveness *live;
    int *parent;  /* by cluster: union-find of merged clusters */
    bool *closed; /* by cluster root */
    int cap;      /* of parent[], closed[] and plan->cluster_size[] */
} planner;

static int root(planner *P, int c)
{
    while (P->parent[c] != c) {
        P->parent[c] = P->parent[P->parent[c]];
        c = P->parent[c];
    }
    return c;
}

static int new_cluster(planner *P)
{
    pass_fusion_plan *p = P->plan;
    if (p->n_clusters == P->cap) {
        P->cap = P->cap ? 2 * P->cap : 16;
        P->parent = rt_xrealloc(P->parent, (size_t)P->cap * sizeof *P->parent);
        P->closed = rt_xrealloc(P->closed, (size_t)P->cap * sizeof *P->closed);
        p->cluster_size = rt_xrealloc(p->cluster_size, (size_t)P->cap * sizeof(int));
    }
    int c = p->n_clusters++;
    P->parent[c] = c;
    P->closed[c] = false;
    p->cluster_size[c] = 0;
    return c;
}

/* The open cluster of member x, or -1. */
static int cluster_of(planner *P, const ir_node *x)
{
    int c = P->plan->cluster[x->id];
    return c < 0 ? -1 : root(P, c);
}

/* Puts member n into the open cluster of its operands that has its
 * shape (merging several), or a new one; a checked node goes alone. */
static void join(planner *P, const ir_node *n)
{
    pass_fusion_plan *p = P->plan;
    int target = -1;
    for (int i = 0; !p->checked[n->id] && i < n->n_in; i++) {
        const ir_node *x = n->in[i];
        int c = cluster_of(P, x);
        if (c < 0 || P->closed[c] || p->checked[x->id] || !pass_fusion_same_shape(p, x, n) ||
            x->device != n->device) /* a loop runs on one device */
            continue;
        if (target < 0) {
            target = c;
        } else if (c != target) {
            P->parent[c] = target;
            p->cluster_size[target] += p->cluster_size[c];
        }
    }
    if (target < 0) {
        target = new_cluster(P);
        P->closed[target] = p->checked[n->id];
    }
    p->cluster[n->id] = target;
    p->cluster_size[target]++;
}

/* Closes the clusters whose values `user` reads from outside them. */
static void close_read(planner *P, const ir_node *user)
{
    int own = cluster_of(P, user);
    for (int i = 0; i < user->n_in; i++) {
        int c = cluster_of(P, user->in[i]);
        if (c >= 0 && c != own)
            P->closed[c] = true;
    }
}

static bool can_join(const planner *P, const ir_node *n)
{
    if (!pass_fusible(P->caps, n) || n->type.shape.rank < 1)
        return false; /* rank 0: a scalar in a register, no loop */
    for (int i = 0; i < n->n_in; i++)
        if (n->in[i]->type.shape.rank < 0)
            return false;
    return true;
}

static void plan_graph(planner *P, const ir_graph *g);

/* A cond's region parameters have its operands' shapes. */
static void key_params(pass_fusion_plan *p, const ir_graph *g)
{
    for (int i = 0; i < g->n_params; i++) {
        const ir_node *par = g->params[i];
        bool from_cond = g->parent && g->parent->opcode == IR_COND;
        p->shape_key[par->id] = from_cond ? p->shape_key[g->parent->in[i + 1]->id] : par->id;
    }
}

static void plan_node(planner *P, const ir_node *n)
{
    pass_fusion_plan *p = P->plan;
    p->shape_key[n->id] = n->id;
    if (pass_is_region_op(n)) {
        plan_graph(P, n->region[0]);
        plan_graph(P, n->region[1]);
        return;
    }
    if (!can_join(P, n))
        return;
    bool checked;
    p->shape_key[n->id] = elementwise_key(p, n, &checked);
    p->checked[n->id] = checked || pass_fails_on_data(n);
    join(P, n);
}

static void plan_graph(planner *P, const ir_graph *g)
{
    key_params(P->plan, g);
    for (const ir_node *n = g->first; n; n = n->next) {
        if (!P->live->live[n->id])
            continue; /* never runs: the backend emits nothing for it */
        plan_node(P, n);
        close_read(P, n);
    }
    for (int i = 0; i < g->n_results; i++) {
        int c = cluster_of(P, g->results[i]);
        if (c >= 0)
            P->closed[c] = true;
    }
}

/* Numbers the clusters left after merging 0.. in program order of their
 * first member. */
static void renumber_graph(planner *P, const ir_graph *g, int *number, int *size, int *next)
{
    pass_fusion_plan *p = P->plan;
    for (const ir_node *n = g->first; n; n = n->next) {
        for (int r = 0; r < 2; r++)
            if (n->region[r])
                renumber_graph(P, n->region[r], number, size, next);
        int c = cluster_of(P, n);
        if (c < 0)
            continue;
        if (number[c] < 0) {
            number[c] = (*next)++;
            size[number[c]] = p->cluster_size[c];
        }
        p->cluster[n->id] = number[c];
    }
}

static void renumber(planner *P, const ir_function *fn)
{
    pass_fusion_plan *p = P->plan;
    int *number = rt_xmalloc((size_t)(p->n_clusters + 1) * sizeof *number);
    int *size = rt_xcalloc((size_t)(p->n_clusters + 1), sizeof *size);
    for (int i = 0; i < p->n_clusters; i++)
        number[i] = -1;
    int next = 0;
    renumber_graph(P, fn->body, number, size, &next);
    free(number);
    free(p->cluster_size);
    p->cluster_size = size;
    p->n_clusters = next;
}

pass_fusion_plan *pass_fusion_plan_build(const ir_function *fn, const pass_caps *caps,
                                         const ir_liveness *live)
{
    int n_ids = fn->next_id > 0 ? fn->next_id : 1;
    pass_fusion_plan *p = rt_xcalloc(1, sizeof *p);
    p->n_ids = n_ids;
    p->cluster = rt_xmalloc((size_t)n_ids * sizeof *p->cluster);
    p->shape_key = rt_xmalloc((size_t)n_ids * sizeof *p->shape_key);
    p->checked = rt_xcalloc((size_t)n_ids, sizeof *p->checked);
    for (int i = 0; i < n_ids; i++)
        p->cluster[i] = -1, p->shape_key[i] = i;
    planner P = {.plan = p, .caps = caps, .live = live};
    plan_graph(&P, fn->body);
    renumber(&P, fn);
    free(P.parent);
    free(P.closed);
    return p;
}

pass_fusion_plan *pass_fusion_plan_new(const ir_function *fn, const pass_caps *caps)
{
    ir_liveness live;
    ir_liveness_init(&live, fn);
    pass_fusion_plan *p = pass_fusion_plan_build(fn, caps, &live);
    ir_liveness_free(&live);
    return p;
}

void pass_fusion_plan_free(pass_fusion_plan *p)
{
    if (!p)
        return;
    free(p->cluster);
    free(p->cluster_size);
    free(p->shape_key);
    free(p->checked);
    free(p);
}

/* ------------------------------------------------------------- printing */

static void collect_members(const pass_fusion_plan *p, const ir_graph *g, const ir_node **by,
                            int *count, int n_max)
{
    for (const ir_node *n = g->first; n; n = n->next) {
        if (n->id < p->n_ids && p->cluster[n->id] >= 0 && *count < n_max)
            by[(*count)++] = n;
        for (int r = 0; r < 2; r++)
            if (n->region[r])
                collect_members(p, n->region[r], by, count, n_max);
    }
}

void pass_fusion_plan_print(const pass_fusion_plan *p, const ir_function *fn, FILE *out)
{
    int n_max = ir_function_num_nodes(fn);
    const ir_node **members = rt_xcalloc((size_t)(n_max + 1), sizeof *members);
    const ir_node **sorted = rt_xcalloc((size_t)(n_max + 1), sizeof *sorted);
    int *start = rt_xcalloc((size_t)(p->n_clusters + 1), sizeof *start);
    int count = 0;
    collect_members(p, fn->body, members, &count, n_max);
    /* Counting sort by cluster, keeping program order within each. */
    for (int i = 0; i < count; i++)
        start[p->cluster[members[i]->id] + 1]++;
    for (int c = 0; c < p->n_clusters; c++)
        start[c + 1] += start[c];
    for (int i = 0; i < count; i++)
        sorted[start[p->cluster[members[i]->id]]++] = members[i];
    int fused = 0;
    for (int c = 0; c < p->n_clusters; c++)
        fused += p->cluster_size[c] > 1;
    fprintf(out, "// fusion: %d loop%s, %d fused\n", p->n_clusters, p->n_clusters == 1 ? "" : "s",
            fused);
    for (int i = 0, c = -1; i < count; i++) {
        int k = p->cluster[sorted[i]->id];
        if (k != c)
            fprintf(out, "%s// loop %d%s:", c >= 0 ? "\n" : "", k,
                    p->checked[sorted[i]->id] ? " (checked)" : "");
        fprintf(out, "%s %%%d %s", k == c ? "," : "", sorted[i]->id,
                ir_opcode_name(sorted[i]->opcode));
        c = k;
    }
    if (count)
        fputc('\n', out);
    free(start);
    free(sorted);
    free(members);
}

bool pass_fusion(ir_function *fn, pass_ctx *ctx)
{
    pass_analyses_fusion(ctx->am); /* computed once per version of fn */
    return false;
}
