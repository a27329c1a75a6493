/*
 * fold.c - constant folding.
 *
 * requires: a valid function.
 * keeps:    the value of every result and the order of every effect that
 *           runs; the effect chain (rebuilt when a region is inlined).
 * breaks:   nothing. Replaced nodes are unlinked; constants it makes are
 *           new nodes placed where the replaced node was.
 *
 * What folds:
 *   - a pure, non-random op whose operands are all constants, evaluated
 *     with the op's own rules and kernel (pass_eval_op: bit for bit what
 *     the runtime computes) when the result holds at most
 *     PASS_MAX_CONST_BYTES; an op that fails (integer division by zero,
 *     an index out of range) stays, to fail at run time if it runs;
 *   - shape_of and size of a value whose static shape is fully known, and
 *     which cannot fail or keeps another live user (pass_can_drop);
 *   - cond with a constant predicate: the taken region is inlined in its
 *     place (parameters become the operands, the gets its yields), its
 *     effects joining the graph's chain where the cond was;
 *   - while whose condition is false at entry (computable from constant
 *     operands, and free of effects): it disappears and its gets become
 *     its operands;
 *     both only when every operand left unused cannot fail or keeps
 *     another live user (pass_can_drop): it would no longer run;
 *   - constants passed into a region (any cond operand, a while operand
 *     the body passes through unchanged) are copied into the region, so
 *     that folding continues inside; dce drops the unused parameters.
 * Tensor-array ops are never evaluated (their lists are shared state).
 */
#include "pass_internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct folder {
    pass_ctx *ctx;
    ir_function *fn;
    pass_map fwd;      /* replaced node -> replacement */
    ir_node ***gone;   /* by id: a removed cond/while -> what its gets become */
    int n_gone;
    rt_value **vals;   /* by id: values while a loop condition is evaluated */
    int n_vals;
    pass_liveness live; /* at the start: what runs, and its users */
    bool changed, effects_dirty;
} folder;

static void fold_graph(folder *f, ir_graph *g);

/* ------------------------------------------------------ single values */

static bool foldable_op(const ir_node *n)
{
    unsigned fl = pass_flags(n);
    return n->opcode < RT_OP_COUNT && n->opcode != RT_OP_CONST && (fl & RT_F_PURE) &&
           !(fl & RT_F_RANDOM) && !n->effect && !pass_touches_list(n);
}

static void replace_by_value(folder *f, ir_node *n, const rt_value *v)
{
    ir_node *c = pass_new_const(n->graph, n, v, n);
    pass_map_set(&f->fwd, n, c);
    ir_remove(n);
    f->changed = true;
}

/* shape_of and size of a statically known shape. */
static bool fold_shape_query(folder *f, ir_node *n)
{
    if (n->opcode != RT_OP_SHAPE_OF && n->opcode != RT_OP_SIZE)
        return false;
    const ir_type *t = &n->in[0]->type;
    if (!pass_type_known(t) || !pass_can_drop(&f->live, n->in[0], true))
        return false; /* (the operand must still run: it may fail) */
    ag_shape s = n->opcode == RT_OP_SHAPE_OF ? AG_SHAPE(t->shape.rank) : AG_SCALAR;
    rt_value *v = rt_value_new(AG_I64, &s);
    if (n->opcode == RT_OP_SHAPE_OF)
        memcpy(v->data, t->shape.dims, (size_t)t->shape.rank * sizeof(int64_t));
    else
        *(int64_t *)v->data = rt_shape_numel(&t->shape);
    replace_by_value(f, n, v);
    rt_value_free(v);
    return true;
}

static void fold_value(folder *f, ir_node *n)
{
    if (!foldable_op(n) || fold_shape_query(f, n))
        return;
    rt_value vals[8], *ptrs[8];
    if (n->n_in > 8)
        return; /* no op with more constant operands is worth the bother */
    for (int i = 0; i < n->n_in; i++) {
        if (!pass_is_const(n->in[i]))
            return;
        vals[i] = pass_const_view(n->in[i]);
        ptrs[i] = &vals[i];
    }
    rt_err e;
    rt_value *v = pass_eval_op(n->opcode, &n->attrs, ptrs, n->n_in, PASS_MAX_CONST_BYTES, &e);
    if (!v)
        return;
    replace_by_value(f, n, v);
    rt_value_free(v);
}

/* ------------------------------------------- constants into regions */

static bool used_by_nodes(const ir_graph *g, const ir_node *v)
{
    for (const ir_node *n = g->first; n; n = n->next)
        for (int i = 0; i < n->n_in; i++)
            if (n->in[i] == v)
                return true;
    return false;
}

/* Replaces parameter p of region g by a copy of constant c, in g's nodes
 * and in its results except result `keep` (-1: none kept). */
static void param_to_const(folder *f, ir_graph *g, ir_node *p, const ir_node *c, int keep)
{
    bool in_results = false;
    for (int i = 0; i < g->n_results; i++)
        in_results |= i != keep && g->results[i] == p;
    if (!in_results && !used_by_nodes(g, p))
        return;
    ir_node *copy = pass_copy_const(g, g->first, c);
    pass_replace_uses(g, p, copy, false);
    for (int i = 0; i < g->n_results; i++)
        if (i != keep && g->results[i] == p)
            g->results[i] = copy;
    f->changed = true;
}

static void propagate_consts(folder *f, ir_node *n)
{
    if (n->opcode == IR_COND) {
        for (int i = 1; i < n->n_in; i++)
            for (int r = 0; r < 2 && pass_is_const(n->in[i]); r++)
                param_to_const(f, n->region[r], n->region[r]->params[i - 1], n->in[i], -1);
        return;
    }
    ir_graph *body = n->region[1];
    for (int i = 0; i < n->n_in; i++) {
        if (!pass_is_const(n->in[i]) || body->results[i] != body->params[i])
            continue;
        param_to_const(f, n->region[0], n->region[0]->params[i], n->in[i], -1);
        param_to_const(f, body, body->params[i], n->in[i], i);
    }
}

/* ---------------------------------------------------------------- cond */

static bool truthy(const ir_node *c)
{
    rt_value v = pass_const_view(c);
    return v.numel > 0 && rt_load_f64(v.dtype, v.data, 0) != 0;
}

/* Moves the taken region's nodes before n and drops n; returns the first
 * moved node, so that the sweep folds them again with their new operands. */
static ir_node *inline_cond(folder *f, ir_node *n)
{
    ir_graph *g = n->graph, *r = n->region[truthy(n->in[0]) ? 0 : 1];
    for (int i = 0; i < r->n_params; i++)
        pass_map_set(&f->fwd, r->params[i], n->in[i + 1]);
    ir_node *first = r->first, *next = r->first ? r->first : n->next;
    for (ir_node *m = first, *m_next; m; m = m_next) {
        m_next = m->next;
        m->prev = m->next = NULL;
        pass_insert_before(g, m, n);
        if (!m->loc.file) { /* errors were located at the cond: still are */
            m->loc = n->loc;
            m->col = n->col;
        }
    }
    r->first = r->last = NULL;
    f->gone[n->id] = r->results;
    ir_remove(n);
    f->changed = f->effects_dirty = true;
    return next;
}

/* ---------------------------------------------------------------- while */

/* The value of a cond-region node or parameter, from the folder's table. */
static rt_value *value_of(const folder *f, const ir_node *m) { return f->vals[m->id]; }

static rt_value *eval_node(const folder *f, const ir_node *m)
{
    if (pass_is_const(m)) {
        rt_value *v = rt_xmalloc(sizeof *v);
        *v = pass_const_view(m);
        return v;
    }
    if (!foldable_op(m) || m->n_in > 8)
        return NULL;
    rt_value *in[8];
    for (int i = 0; i < m->n_in; i++)
        if (!(in[i] = value_of(f, m->in[i])))
            return NULL;
    rt_err e;
    return pass_eval_op(m->opcode, &m->attrs, in, m->n_in, PASS_MAX_CONST_BYTES, &e);
}

/* Makes the value table cover every id (folding adds nodes). */
static void grow_vals(folder *f)
{
    int n = f->fn->next_id;
    if (n <= f->n_vals)
        return;
    f->vals = rt_xrealloc(f->vals, (size_t)n * sizeof *f->vals);
    memset(f->vals + f->n_vals, 0, (size_t)(n - f->n_vals) * sizeof *f->vals);
    f->n_vals = n;
}

/* Whether the loop condition, evaluated on the operands, is certainly
 * false: its region has no effects and everything it needs folds. */
static bool false_at_entry(folder *f, const ir_node *n)
{
    const ir_graph *c = n->region[0];
    bool any_const = false;
    for (int i = 0; i < n->n_in; i++)
        any_const |= pass_is_const(n->in[i]);
    if (!any_const || ir_graph_has_effects(c))
        return false; /* (a condition false without any constant operand is rare) */
    grow_vals(f);
    for (int i = 0; i < c->n_params; i++) {
        if (pass_is_const(n->in[i])) {
            f->vals[c->params[i]->id] = rt_xmalloc(sizeof(rt_value));
            *f->vals[c->params[i]->id] = pass_const_view(n->in[i]);
        }
    }
    for (const ir_node *m = c->first; m; m = m->next)
        f->vals[m->id] = eval_node(f, m);
    const rt_value *go = value_of(f, c->results[0]);
    bool is_false = go && go->numel == 1 && rt_load_f64(go->dtype, go->data, 0) == 0;
    for (int i = 0; i < c->n_params; i++) {
        rt_value_free(f->vals[c->params[i]->id]);
        f->vals[c->params[i]->id] = NULL;
    }
    for (const ir_node *m = c->first; m; m = m->next) {
        rt_value_free(f->vals[m->id]);
        f->vals[m->id] = NULL;
    }
    return is_false;
}

/* ---------------------------------------------------------------- sweep */

/* Whether operand i of cond n goes unused once the taken region r is
 * inlined (no parameter it feeds is used there). */
static bool unused_after_inlining(const ir_node *n, const ir_graph *r, const ir_node *x)
{
    for (int i = 1; i < n->n_in; i++)
        if (n->in[i] == x && pass_graph_uses(r, r->params[i - 1]))
            return false;
    return true;
}

/* A live cond or while needs all its operands; replacing it may leave
 * some unused, and those must then be unable to fail or keep another live
 * user (they would no longer run, and the program would stop failing).
 * For a while, every operand counts as left unused. */
static bool operands_droppable(folder *f, const ir_node *n)
{
    const ir_graph *r = n->opcode == IR_COND ? n->region[truthy(n->in[0]) ? 0 : 1] : NULL;
    for (int commit = 0; commit < 2; commit++) {
        for (int i = n->opcode == IR_COND; i < n->n_in; i++) {
            bool first = true;
            for (int j = 0; j < i; j++)
                first &= n->in[j] != n->in[i];
            if (first && (!r || unused_after_inlining(n, r, n->in[i])) &&
                !pass_can_drop(&f->live, n->in[i], commit))
                return false;
        }
    }
    return true;
}

/* Folds a cond or while; returns the node the sweep goes on with. */
static ir_node *fold_region_op(folder *f, ir_node *n)
{
    propagate_consts(f, n);
    fold_graph(f, n->region[0]);
    fold_graph(f, n->region[1]);
    if (n->opcode == IR_COND && pass_is_const(n->in[0]) && operands_droppable(f, n))
        return inline_cond(f, n);
    ir_node *next = n->next;
    if (n->opcode == IR_WHILE && false_at_entry(f, n) && operands_droppable(f, n)) {
        f->gone[n->id] = n->in;
        ir_remove(n);
        f->changed = f->effects_dirty = true;
    }
    return next;
}

/* A get of a removed cond/while becomes what that result now is. */
static bool fold_get(folder *f, ir_node *n)
{
    const ir_node *t = n->in[0];
    if (t->id >= f->n_gone || !f->gone[t->id])
        return false;
    pass_map_set(&f->fwd, n, pass_resolve(&f->fwd, f->gone[t->id][n->index]));
    ir_remove(n);
    return true;
}

static void fold_graph(folder *f, ir_graph *g)
{
    for (ir_node *n = g->first, *next; n; n = next) {
        next = n->next;
        pass_remap_inputs(&f->fwd, n);
        if (n->opcode == IR_GET)
            fold_get(f, n);
        else if (pass_is_region_op(n))
            next = fold_region_op(f, n);
        else
            fold_value(f, n);
    }
    pass_remap_results(&f->fwd, g);
}

bool pass_fold(ir_function *fn, pass_ctx *ctx)
{
    folder f = {.ctx = ctx, .fn = fn, .n_gone = fn->next_id > 0 ? fn->next_id : 1};
    pass_map_init(&f.fwd, fn);
    pass_liveness_init(&f.live, fn);
    f.gone = rt_xcalloc((size_t)f.n_gone, sizeof *f.gone);
    fold_graph(&f, fn->body);
    if (f.effects_dirty)
        pass_fix_effects(fn);
    pass_map_free(&f.fwd);
    free(f.gone);
    free(f.vals);
    pass_liveness_free(&f.live);
    return f.changed;
}
