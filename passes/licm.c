/*
 * licm.c - loop-invariant code motion out of while loops.
 *
 * requires: a valid function.
 * keeps:    every result and effect; the regions' parameter lists stay
 *           parallel (both regions gain the same new parameters).
 * breaks:   nothing. Hoisted nodes move to the loop's graph, just before
 *           the while, and reach the loop as new loop variables that the
 *           body passes through unchanged.
 *
 * A loop variable is invariant when the body yields its parameter
 * unchanged: every iteration sees the while's operand. A node of the
 * condition or the body is hoisted when it is pure, not random, touches
 * no tensor array, and each operand is an invariant parameter, a constant
 * (copied out with it) or an already hoisted node. Loops are visited
 * innermost first, so a value can rise through several loops.
 *
 * The body may run zero times, so a node hoisted out of it runs where it
 * might not have: only nodes that cannot fail (pass_may_fail: operands of
 * fully known shapes, and no data-dependent error in the kernel, such as
 * integer division by zero) are hoisted from the body. The condition runs
 * at least once, so anything pure is hoisted from it.
 */
#include "pass_internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct licm {
    pass_map out;   /* region node or parameter -> its value outside the loop */
    pass_map moved; /* hoisted node -> itself (a set) */
    pass_map param; /* hoisted node -> the loop variable replacing it */
    bool changed;
} licm;

/* ------------------------------------------------------------- hoistable */

static bool movable(const ir_node *n, bool from_cond)
{
    unsigned fl = pass_flags(n);
    if (n->opcode >= RT_OP_COUNT || n->opcode == RT_OP_CONST || !(fl & RT_F_PURE) ||
        (fl & RT_F_RANDOM) || n->effect || pass_touches_list(n))
        return false;
    return from_cond || !pass_may_fail(n);
}

/* ----------------------------------------------------------------- moving */

/* Whether operand x has a value outside the loop. */
static bool invariant(const licm *L, const ir_node *x)
{
    return pass_map_get(&L->out, x) || pass_is_const(x);
}

/* The outside value of invariant operand x, copying a constant out on
 * first use. */
static ir_node *outside(licm *L, ir_node *x, ir_node *w)
{
    ir_node *o = pass_map_get(&L->out, x);
    if (!o) {
        o = pass_copy_const(w->graph, w, x);
        pass_map_set(&L->out, x, o);
    }
    return o;
}

/* A copy of n before w, on the outside values of its operands; NULL if
 * an operand varies. */
static ir_node *hoist_copy(licm *L, ir_node *n, ir_node *w)
{
    for (int i = 0; i < n->n_in; i++)
        if (!invariant(L, n->in[i]))
            return NULL;
    ir_node *stack[8], **in = n->n_in <= 8 ? stack : rt_xmalloc((size_t)n->n_in * sizeof *in);
    for (int i = 0; i < n->n_in; i++)
        in[i] = outside(L, n->in[i], w);
    ir_node *copy = pass_new_node(w->graph, w, n->opcode, &n->attrs, n->n_in, in, &n->type, n);
    if (in != stack)
        free(in);
    return copy;
}

/* Adds a loop variable that enters as `value` and that the body passes
 * through; returns its parameter in region r. */
static ir_node *add_invariant_var(ir_node *w, ir_node *value, int r)
{
    ir_graph *cond = w->region[0], *body = w->region[1];
    ir_node **in = ir_alloc(w->graph->fn->arena, (size_t)(w->n_in + 1) * sizeof *in);
    memcpy(in, w->in, (size_t)w->n_in * sizeof *in);
    in[w->n_in] = value;
    pass_set_inputs(w, w->n_in + 1, in);
    ir_type *res = ir_alloc(w->graph->fn->arena, (size_t)(w->n_results + 1) * sizeof *res);
    memcpy(res, w->results, (size_t)w->n_results * sizeof *res);
    res[w->n_results++] = value->type;
    w->results = res;
    ir_node *pc = ir_add_param(cond, &value->type);
    ir_node *pb = ir_add_param(body, &value->type);
    ir_node **yields = ir_alloc(w->graph->fn->arena, (size_t)(body->n_results + 1) * sizeof *yields);
    memcpy(yields, body->results, (size_t)body->n_results * sizeof *yields);
    yields[body->n_results] = pb;
    ir_set_results(body, body->n_results + 1, yields);
    return r == 0 ? pc : pb;
}

/* The parameter of region r standing for hoisted node n (made on first
 * use); `param` maps hoisted nodes to it. */
static ir_node *param_for(licm *L, ir_node *w, int r, ir_node *n)
{
    ir_node *p = pass_map_get(&L->param, n);
    if (!p) {
        p = add_invariant_var(w, pass_map_get(&L->out, n), r);
        pass_map_set(&L->param, n, p);
    }
    return p;
}

/* Hoists what it can from region r of while w. */
static void hoist_region(licm *L, ir_node *w, int r)
{
    ir_graph *g = w->region[r], *body = w->region[1];
    for (int i = 0; i < w->n_in; i++)
        if (body->results[i] == body->params[i] && w->in[i]->type.dtype != RT_LIST)
            pass_map_set(&L->out, g->params[i], w->in[i]);
    bool any = false;
    for (ir_node *n = g->first; n; n = n->next) {
        ir_node *copy = movable(n, r == 0) ? hoist_copy(L, n, w) : NULL;
        if (copy) {
            pass_map_set(&L->out, n, copy);
            pass_map_set(&L->moved, n, n);
            any = true;
        }
    }
    if (!any)
        return;
    /* Nodes that stay, and the results, read hoisted values through new
     * loop variables; then the hoisted nodes go. */
    for (ir_node *n = g->first; n; n = n->next)
        for (int i = 0; i < n->n_in && !pass_map_get(&L->moved, n); i++)
            if (pass_map_get(&L->moved, n->in[i]))
                n->in[i] = param_for(L, w, r, n->in[i]);
    for (int i = 0; i < g->n_results; i++) {
        if (!pass_map_get(&L->moved, g->results[i]))
            continue;
        /* param_for may give the body a new results array: store into
         * the array there is after the call, not the one before */
        ir_node *p = param_for(L, w, r, g->results[i]);
        g->results[i] = p;
    }
    for (ir_node *n = g->first, *next; n; n = next) {
        next = n->next;
        if (pass_map_get(&L->moved, n))
            ir_remove(n);
    }
    L->changed = true;
}

static void licm_graph(licm *L, ir_graph *g)
{
    for (ir_node *n = g->first; n; n = n->next) {
        if (!pass_is_region_op(n))
            continue;
        licm_graph(L, n->region[0]);
        licm_graph(L, n->region[1]);
        if (n->opcode == IR_WHILE) {
            hoist_region(L, n, 0);
            hoist_region(L, n, 1);
        }
    }
}

bool pass_licm(ir_function *fn, pass_ctx *ctx)
{
    (void)ctx;
    licm L = {.changed = false};
    pass_map_init(&L.out, fn);
    pass_map_init(&L.moved, fn);
    pass_map_init(&L.param, fn);
    licm_graph(&L, fn->body);
    pass_map_free(&L.out);
    pass_map_free(&L.moved);
    pass_map_free(&L.param);
    return L.changed;
}
