/* liveness.c - which nodes run, in one backward sweep per graph. */
#include "liveness.h"

#include <stdlib.h>
#include <string.h>

/* Marks g's roots and then, backwards, what live nodes use; a live
 * cond/while's regions are marked in turn. Operands always come earlier
 * in their graph, so one backward sweep sees every user before its uses. */
static void live_graph(ir_liveness *l, const ir_graph *g);

/* From g's last node back: what its live nodes use is live. */
static void sweep(ir_liveness *l, const ir_graph *g)
{
    for (const ir_node *n = g->last; n; n = n->prev) {
        if (!l->live[n->id])
            continue;
        for (int i = 0; i < n->n_in; i++)
            l->live[n->in[i]->id] = true;
        for (int r = 0; r < 2; r++)
            if (n->region[r])
                live_graph(l, n->region[r]);
    }
}

static void live_graph(ir_liveness *l, const ir_graph *g)
{
    for (int i = 0; i < g->n_results; i++)
        l->live[g->results[i]->id] = true;
    for (const ir_node *n = g->first; n; n = n->next)
        l->live[n->id] |= n->effect;
    sweep(l, g);
}

static void count_graph_users(ir_liveness *l, const ir_graph *g)
{
    for (const ir_node *n = g->first; n; n = n->next) {
        if (!l->live[n->id])
            continue;
        for (int i = 0; i < n->n_in; i++) {
            bool again = false;
            for (int j = 0; j < i; j++)
                again |= n->in[j] == n->in[i];
            l->users[n->in[i]->id] += !again;
        }
        for (int r = 0; r < 2; r++)
            if (n->region[r])
                count_graph_users(l, n->region[r]);
    }
    for (int i = 0; i < g->n_results; i++)
        l->users[g->results[i]->id]++;
}

void ir_liveness_init(ir_liveness *l, const ir_function *fn)
{
    memset(l, 0, sizeof *l);
    l->n = fn->next_id > 0 ? fn->next_id : 1;
    l->live = rt_xcalloc((size_t)l->n, sizeof *l->live);
    l->users = rt_xcalloc((size_t)l->n, sizeof *l->users);
    live_graph(l, fn->body);
    count_graph_users(l, fn->body);
}

void ir_liveness_init_for(ir_liveness *l, const ir_function *fn, const ir_node *root)
{
    memset(l, 0, sizeof *l);
    l->n = fn->next_id > 0 ? fn->next_id : 1;
    l->live = rt_xcalloc((size_t)l->n, sizeof *l->live);
    l->users = rt_xcalloc((size_t)l->n, sizeof *l->users);
    l->live[root->id] = true;
    sweep(l, root->graph);
}

void ir_liveness_free(ir_liveness *l)
{
    free(l->live);
    free(l->users);
    memset(l, 0, sizeof *l);
}
