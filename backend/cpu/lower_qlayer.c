/*
 * lower_qlayer.c - static-range int8 layers as one runtime call.
 *
 * The quantizer writes a layer as three ops (docs/quantization.md):
 *
 *     acc = add(qmatmul(a, w, z_a), bias)    i32 [m, n]
 *     q   = requantize(acc, mult, z_q)        i8  [m, n]
 *
 * Run one by one, the int32 sums go to memory twice (qmatmul's result,
 * the add's) and back, in two tensors of 4 bytes an element allocated at
 * every call; for the MLP 784-512-512-10 at batch 64 that was most of the
 * int8 time, not the products. When the add and the qmatmul have no
 * other use, the plan gives the three nodes to one call, cg_rt_qlayer
 * (cg_qlayer.c), whose product requantizes its sums block by block as it
 * makes them (rt_qlayer_requantize). The add and the qmatmul become
 * CG_K_ABSORBED: no code, no memory; their operands live until the
 * requantize. The bits are the three ops' (the call runs them one by one
 * when its operands are not the shapes it fuses).
 */
#include "lower.h"

#include <stdlib.h>

/* Uses of every node by live nodes and as results, in g and its regions. */
static void count_uses(const cg_lower *L, const ir_graph *g, int *uses)
{
    for (const ir_node *n = g->first; n; n = n->next) {
        if (!L->info[n->id].live)
            continue;
        for (int i = 0; i < n->n_in; i++)
            uses[n->in[i]->id]++;
        for (int r = 0; r < 2; r++)
            if (n->region[r])
                count_uses(L, n->region[r], uses);
    }
    for (int i = 0; i < g->n_results; i++)
        uses[g->results[i]->id]++;
}

/* Whether node x is used once, in rq's graph, and is no other loop's
 * member: the fusion plan's loop holding it holds nothing else. */
static bool only_for(const cg_lower *L, const ir_node *x, const ir_node *rq, const int *uses)
{
    if (x->graph != rq->graph || uses[x->id] != 1 || !L->info[x->id].live)
        return false;
    int c = x->id < L->fusion->n_ids ? L->fusion->cluster[x->id] : -1;
    return c < 0 || L->fusion->cluster_size[c] == 1;
}

/* The add's qmatmul operand (the first one, if both are), or NULL. */
static const ir_node *product_of(const ir_node *add)
{
    for (int i = 0; i < 2; i++)
        if (add->in[i]->opcode == RT_OP_QMATMUL)
            return add->in[i];
    return NULL;
}

static void plan_graph(cg_lower *L, const ir_graph *g, const int *uses)
{
    for (const ir_node *n = g->first; n; n = n->next) {
        for (int r = 0; r < 2; r++)
            if (n->region[r])
                plan_graph(L, n->region[r], uses);
        if (n->opcode != RT_OP_REQUANTIZE || !L->info[n->id].live)
            continue;
        const ir_node *add = n->in[0];
        if (add->opcode != RT_OP_ADD || add->type.dtype != AG_I32 || !only_for(L, add, n, uses))
            continue;
        const ir_node *mm = product_of(add);
        if (!mm || !only_for(L, mm, n, uses))
            continue;
        L->info[n->id].qlayer = true;
        L->info[add->id].into = n;
        L->info[mm->id].into = n;
    }
}

void cg_plan_qlayers(cg_lower *L)
{
    int *uses = rt_xcalloc((size_t)(L->n_ids ? L->n_ids : 1), sizeof *uses);
    count_uses(L, L->fn->body, uses);
    plan_graph(L, L->fn->body, uses);
    free(uses);
}

void cg_qlayer_operands(const ir_node *rq, const ir_node *ops[CG_QLAYER_OPERANDS])
{
    const ir_node *add = rq->in[0], *mm = product_of(add);
    ops[0] = mm->in[0];
    ops[1] = mm->in[1];
    ops[2] = mm->in[2];
    ops[3] = add->in[0] == mm ? add->in[1] : add->in[0];
    ops[4] = rq->in[1];
    ops[5] = rq->in[2];
}
