/*
 * fusion.c - elementwise fusion planning (an analysis).
 *
 * requires: a valid function; types as precise as infer makes them.
 * keeps:    everything: the IR is not changed.
 * breaks:   nothing. The plan (pass.h: pass_fusion_plan) is a side table
 *           by node id, valid until the function changes.
 *
 * A producer p fuses into its consumer n, in the same graph, when
 *   - p is elementwise (RT_F_ELEMENTWISE) and n is elementwise or a
 *     reduction (RT_F_REDUCTION, which ends its cluster: nothing fuses
 *     into a later node through it);
 *   - n is p's only user (one node, and not a graph result), so only a
 *     cluster's last value leaves it, and clusters cannot form cycles;
 *   - shapes agree: n's result has p's shape (a unary op keeps its
 *     operand's shape; otherwise both shapes are fully known and equal),
 *     or n is a reduction reading p.
 * Operands from outside a cluster may broadcast freely. Clusters are the
 * connected groups of at least two nodes.
 */
#include "pass_internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct planner {
    int *parent; /* union-find over node ids */
    int *users;  /* by id: distinct user nodes, plus one per result use */
} planner;

static int find(int *parent, int x)
{
    while (parent[x] != x) {
        parent[x] = parent[parent[x]];
        x = parent[x];
    }
    return x;
}

static void unite(int *parent, int a, int b)
{
    a = find(parent, a);
    b = find(parent, b);
    if (a != b)
        parent[a < b ? b : a] = a < b ? a : b;
}

static void count_users(planner *P, const ir_graph *g)
{
    for (const ir_node *n = g->first; n; n = n->next)
        for (int i = 0; i < n->n_in; i++) {
            bool again = false; /* count a user once, even for add(x, x) */
            for (int j = 0; j < i; j++)
                again |= n->in[j] == n->in[i];
            P->users[n->in[i]->id] += !again;
        }
    for (int i = 0; i < g->n_results; i++)
        P->users[g->results[i]->id]++;
}

static bool elementwise(const ir_node *n)
{
    return (pass_flags(n) & RT_F_ELEMENTWISE) && !pass_touches_list(n);
}

static bool shapes_agree(const ir_node *p, const ir_node *n)
{
    if (pass_flags(n) & RT_F_REDUCTION)
        return true;
    if (n->n_in == 1)
        return true;
    if (!pass_type_known(&p->type) || !pass_type_known(&n->type) ||
        p->type.shape.rank != n->type.shape.rank)
        return false;
    for (int i = 0; i < p->type.shape.rank; i++)
        if (p->type.shape.dims[i] != n->type.shape.dims[i])
            return false;
    return true;
}

static void plan_graph(planner *P, const ir_graph *g)
{
    count_users(P, g);
    for (const ir_node *n = g->first; n; n = n->next) {
        if (pass_is_region_op(n)) {
            plan_graph(P, n->region[0]);
            plan_graph(P, n->region[1]);
            continue;
        }
        bool consumer = elementwise(n) || ((pass_flags(n) & RT_F_REDUCTION) && n->n_in == 1);
        for (int i = 0; consumer && i < n->n_in; i++) {
            const ir_node *p = n->in[i];
            if (elementwise(p) && P->users[p->id] == 1 && shapes_agree(p, n))
                unite(P->parent, n->id, p->id);
        }
    }
}

/* Numbers the groups of two or more nodes in program order. */
static void number_graph(pass_fusion_plan *plan, planner *P, const ir_graph *g, int *size,
                         int *number)
{
    for (const ir_node *n = g->first; n; n = n->next) {
        if (pass_is_region_op(n)) {
            number_graph(plan, P, n->region[0], size, number);
            number_graph(plan, P, n->region[1], size, number);
            continue;
        }
        int root = find(P->parent, n->id);
        if (size[root] < 2)
            continue;
        if (number[root] < 0)
            number[root] = plan->n_clusters++;
        plan->cluster[n->id] = number[root];
    }
}

static void count_sizes(planner *P, const ir_graph *g, int *size)
{
    for (const ir_node *n = g->first; n; n = n->next) {
        size[find(P->parent, n->id)]++;
        for (int r = 0; r < 2; r++)
            if (n->region[r])
                count_sizes(P, n->region[r], size);
    }
}

pass_fusion_plan *pass_fusion_plan_new(const ir_function *fn)
{
    int n_ids = fn->next_id > 0 ? fn->next_id : 1;
    pass_fusion_plan *plan = rt_xcalloc(1, sizeof *plan);
    plan->n_ids = n_ids;
    plan->cluster = rt_xmalloc((size_t)n_ids * sizeof *plan->cluster);
    planner P = {rt_xmalloc((size_t)n_ids * sizeof(int)), rt_xcalloc((size_t)n_ids, sizeof(int))};
    int *size = rt_xcalloc((size_t)n_ids, sizeof *size);
    int *number = rt_xmalloc((size_t)n_ids * sizeof *number);
    for (int i = 0; i < n_ids; i++)
        plan->cluster[i] = number[i] = -1, P.parent[i] = i;
    plan_graph(&P, fn->body);
    count_sizes(&P, fn->body, size);
    number_graph(plan, &P, fn->body, size, number);
    free(P.parent);
    free(P.users);
    free(size);
    free(number);
    return plan;
}

void pass_fusion_plan_free(pass_fusion_plan *p)
{
    if (!p)
        return;
    free(p->cluster);
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
    fprintf(out, "// fusion: %d cluster%s\n", p->n_clusters, p->n_clusters == 1 ? "" : "s");
    for (int i = 0, c = -1; i < count; i++) {
        int k = p->cluster[sorted[i]->id];
        if (k != c)
            fprintf(out, "%s// cluster %d:", c >= 0 ? "\n" : "", k);
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
    pass_fusion_plan_free(ctx->fusion);
    ctx->fusion = pass_fusion_plan_new(fn);
    return false;
}
