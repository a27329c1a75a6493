/*
 * split.c - cutting a function in two where its late parameters enter
 * (TensorFlow's forward/backward split of a function's gradient).
 *
 * The gradient of an AG_FUNCTION call is traced as one graph: the
 * forward, then the backward, which alone reads the late parameters (the
 * results' gradients). Run as one graph it would compute the forward
 * again for every gradient; split, the forward runs at the call and hands
 * the backward only what it reads: the cut, the early values a late node
 * or a late result uses. Values made from nothing (constants, fills) are
 * made again in the backward rather than carried.
 *
 *   early:  (early params) -> (early results..., cut...)
 *   late:   (cut..., late params) -> (late results)
 *
 * Node ids stay those of the whole graph (both halves are copies of it),
 * so a listing of either half reads against the whole.
 */
#include "ir.h"

#include <stdlib.h>
#include <string.h>

typedef struct splitter {
    const ir_function *fn;
    int size;        /* fn->next_id */
    bool *late;      /* by id: depends on a late parameter */
    bool *live;      /* by id: a result depends on it, or it has an effect */
    bool *cut;       /* by id: early, read by a live late node or result */
    ir_node **cuts;  /* the cut in program order (params first) */
    int n_cuts;
    int n_late_params, n_late_results;
    int first_late_id; /* nodes made from it on are late, whatever they read */
} splitter;

/* Made from nothing: the late half makes its own instead of reading one. */
static bool remade(const ir_node *n)
{
    return n->opcode != IR_PARAM && n->n_in == 0 && !n->effect && !n->region[0];
}

static void mark_late(splitter *s)
{
    const ir_graph *g = s->fn->body;
    for (int i = g->n_params - s->n_late_params; i < g->n_params; i++)
        s->late[g->params[i]->id] = true;
    for (const ir_node *n = g->first; n; n = n->next) {
        /* A get is a projection of a loop's or an if's results, not work:
         * one the backward makes of an early loop (its accumulators) is
         * early, so that the cut carries the value, never the tuple. */
        s->late[n->id] = n->id >= s->first_late_id && n->opcode != IR_GET;
        for (int i = 0; i < n->n_in && !s->late[n->id]; i++)
            s->late[n->id] = s->late[n->in[i]->id];
    }
}

/* The gradient's target (sum_j <result_j, dy_j>) is late and dead: only
 * its gradient is a result. What only dead nodes read is not carried. */
static void mark_live(splitter *s)
{
    const ir_graph *g = s->fn->body;
    for (int r = 0; r < g->n_results; r++)
        s->live[g->results[r]->id] = true;
    for (const ir_node *n = g->last; n; n = n->prev)
        if (s->live[n->id] || n->effect)
            for (int i = 0; i < n->n_in; i++)
                s->live[n->in[i]->id] = true;
}

static void add_cut(splitter *s, const ir_node *v)
{
    if (s->late[v->id] || s->cut[v->id] || remade(v))
        return;
    s->cut[v->id] = true;
    s->n_cuts++;
}

/* The cut, in a fixed order: early params, then nodes in program order. */
static void find_cut(splitter *s)
{
    const ir_graph *g = s->fn->body;
    for (const ir_node *n = g->first; n; n = n->next)
        if (s->late[n->id] && (s->live[n->id] || n->effect))
            for (int i = 0; i < n->n_in; i++)
                add_cut(s, n->in[i]);
    for (int r = g->n_results - s->n_late_results; r < g->n_results; r++)
        add_cut(s, g->results[r]);
    s->cuts = calloc((size_t)s->n_cuts + 1, sizeof *s->cuts);
    int k = 0;
    for (int i = 0; i < g->n_params; i++)
        if (s->cut[g->params[i]->id])
            s->cuts[k++] = g->params[i];
    for (const ir_node *n = g->first; n; n = n->next)
        if (s->cut[n->id])
            s->cuts[k++] = (ir_node *)n;
}

/* Every node of a copy by id (top level: regions are closed graphs). */
static ir_node **index_nodes(const ir_function *copy, int size)
{
    ir_node **by_id = calloc((size_t)size, sizeof *by_id);
    const ir_graph *g = copy->body;
    for (int i = 0; i < g->n_params; i++)
        by_id[g->params[i]->id] = g->params[i];
    for (ir_node *n = g->first; n; n = n->next)
        by_id[n->id] = n;
    return by_id;
}

/* Keeps the params not marked in drop, in their order. */
static void keep_params(ir_graph *g, const bool *drop)
{
    int k = 0;
    for (int i = 0; i < g->n_params; i++)
        if (!drop[g->params[i]->id]) {
            g->params[k] = g->params[i];
            g->params[k]->index = k;
            k++;
        }
    g->n_params = k;
}

/* Removes the nodes marked in drop, last first (their users go before
 * them). */
static void drop_nodes(ir_graph *g, const bool *drop)
{
    for (ir_node *n = g->last, *prev; n; n = prev) {
        prev = n->prev;
        if (drop[n->id])
            ir_remove(n);
    }
}

static void build_early(const splitter *s, ir_function *f)
{
    ir_graph *g = f->body;
    ir_node **by_id = index_nodes(f, s->size);
    int n_early = g->n_results - s->n_late_results;
    ir_node **res = calloc((size_t)(n_early + s->n_cuts) + 1, sizeof *res);
    for (int r = 0; r < n_early; r++)
        res[r] = g->results[r];
    for (int c = 0; c < s->n_cuts; c++)
        res[n_early + c] = by_id[s->cuts[c]->id];
    ir_set_results(g, n_early + s->n_cuts, res);
    drop_nodes(g, s->late);
    keep_params(g, s->late);
    ir_rechain_effects(f);
    free(res);
    free(by_id);
}

/* The nodes the late half drops: every early one except those made again
 * there. g already has the cut's new parameters, whose ids are past the
 * whole graph's (s->size): they and the late nodes stay. */
static bool *early_dropped(const splitter *s, ir_graph *g)
{
    int n_ids = g->fn->next_id;
    bool *drop = calloc((size_t)n_ids + 1, sizeof *drop);
    bool *used = calloc((size_t)n_ids + 1, sizeof *used);
    for (ir_node *n = g->first; n; n = n->next)
        for (int i = 0; i < n->n_in && s->late[n->id] && s->live[n->id]; i++)
            used[n->in[i]->id] = true;
    for (int r = g->n_results - s->n_late_results; r < g->n_results; r++)
        used[g->results[r]->id] = true;
    for (int i = 0; i < g->n_params; i++) {
        int id = g->params[i]->id;
        drop[id] = id < s->size && !s->late[id];
    }
    for (ir_node *n = g->first; n; n = n->next)
        drop[n->id] = s->late[n->id] ? !s->live[n->id] && !n->effect
                                     : !(remade(n) && used[n->id]);
    free(used);
    return drop;
}

static void build_late(const splitter *s, ir_function *f)
{
    /* late nodes that read cut values read the new parameters instead */
    ir_graph *g = f->body;
    ir_node **by_id = index_nodes(f, s->size);
    ir_node **param_of = calloc((size_t)s->size, sizeof *param_of);
    int n_old = g->n_params;
    for (int c = 0; c < s->n_cuts; c++)
        param_of[s->cuts[c]->id] = ir_add_param(g, &by_id[s->cuts[c]->id]->type);
    for (ir_node *n = g->first; n; n = n->next)
        for (int i = 0; i < n->n_in && s->late[n->id]; i++)
            if (param_of[n->in[i]->id])
                n->in[i] = param_of[n->in[i]->id];
    int first_late = g->n_results - s->n_late_results;
    ir_node **res = calloc((size_t)s->n_late_results + 1, sizeof *res);
    for (int r = 0; r < s->n_late_results; r++) {
        ir_node *v = g->results[first_late + r];
        res[r] = param_of[v->id] ? param_of[v->id] : v;
    }
    ir_set_results(g, s->n_late_results, res);
    bool *drop = early_dropped(s, g);
    drop_nodes(g, drop);
    /* [cut..., late params]: the new params were appended after the old */
    ir_node **params = calloc((size_t)g->n_params + 1, sizeof *params);
    int k = 0;
    for (int i = n_old; i < g->n_params; i++)
        params[k++] = g->params[i];
    for (int i = 0; i < n_old; i++)
        if (!drop[g->params[i]->id])
            params[k++] = g->params[i];
    for (int i = 0; i < k; i++) {
        g->params[i] = params[i];
        g->params[i]->index = i;
    }
    g->n_params = k;
    ir_rechain_effects(f);
    free(params);
    free(drop);
    free(res);
    free(param_of);
    free(by_id);
}

bool ir_split(const ir_function *fn, int n_late_params, int n_late_results, int first_late_id,
              ir_function **early, ir_function **late, int *n_cut, char *err, size_t errlen)
{
    splitter s = {.fn = fn, .size = fn->next_id, .n_late_params = n_late_params,
                  .n_late_results = n_late_results, .first_late_id = first_late_id};
    s.late = calloc((size_t)s.size + 1, sizeof *s.late);
    s.cut = calloc((size_t)s.size + 1, sizeof *s.cut);
    s.live = calloc((size_t)s.size + 1, sizeof *s.live);
    mark_late(&s);
    mark_live(&s);
    find_cut(&s);
    *early = ir_copy(fn, err, errlen);
    *late = *early ? ir_copy(fn, err, errlen) : NULL;
    if (*late) {
        build_early(&s, *early);
        build_late(&s, *late);
        *n_cut = s.n_cuts;
    } else {
        ir_function_free(*early);
        *early = NULL;
    }
    free(s.late);
    free(s.cut);
    free(s.live);
    free(s.cuts);
    return *late != NULL;
}
