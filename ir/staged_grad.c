/*
 * staged_grad.c - gradients through a staged if (TensorFlow's cond
 * gradient): the backward of cond(pred, captures...) {then} {else} is
 * cond(pred, captures..., dys...) {then'} {else'}, whose branch b is the
 * gradient of branch b with respect to the captures.
 *
 * A tape recording a traced graph sees a staged if as one op (its regions'
 * values do not exist outside them): ir_tape_record_cond records it with
 * cond_backward as its gradient. When the tape answers, cond_backward
 * builds each new branch by replaying the forward branch's nodes into a
 * fresh region through rt_apply, under a tape of its own that watches the
 * region's parameters, and asks that tape for the gradient of
 * sum_j <result_j, dy_j>. The forward values the branch needs are thus
 * computed again inside the backward branch rather than carried out of
 * the forward cond: nothing is added to the forward, and the passes see
 * both as ordinary graphs. The new cond is recorded on the other tapes in
 * turn, so gradients of gradients go through it too. A tensor array the
 * if captures and returns has its dense gradient (grad_rules_list.c) in
 * both directions: a dy parameter of that type, and a result of it, the
 * branches replaying the array's writes and reads on the tape.
 */
#include "trace_internal.h"

#include <stdlib.h>

static bool cond_backward(void *ctx, ag_loc loc, rt_value *const *in, int n_in,
                          rt_value *const *out, rt_value *const *dy, int n_out,
                          const bool *want, rt_value **dx);

rt_value *ir_tape_input_value(ir_node *n)
{
    ir_trace *t = ir_trace_current();
    const ir_frame *f = t ? t->cur : NULL;
    for (int i = 0; f && i < f->n_caps; i++)
        if (f->caps[i].param == n)
            return ir_symbolic_value(f->caps[i].key);
    return ir_symbolic_value(n);
}

void ir_tape_record_cond(ir_node *cond, rt_value *const *outs, int n_outs, ag_loc loc)
{
    if (!rt_tapes_recording)
        return;
    rt_value **in = rt_xcalloc((size_t)cond->n_in, sizeof *in);
    for (int i = 0; i < cond->n_in; i++)
        in[i] = ir_tape_input_value(cond->in[i]);
    rt_tape_record_custom(loc, "a staged if (its condition is a tensor)", in, cond->n_in,
                          outs, n_outs, cond_backward, cond);
    for (int i = 0; i < cond->n_in; i++)
        rt_value_free(in[i]);
    free(in);
}

/* ------------------------------------------------------------- replaying */

/* The forward branch's nodes applied again, in order, to the values in
 * map (indexed by node id; the region's parameters are set). Effects other
 * than variable reads are not repeated: a backward prints nothing. */
static bool replay(const ir_graph *g, rt_value **map, int map_size)
{
    return ir_replay_region(g, map, map_size, false);
}

/* ------------------------------------------------------ backward branches */

/* What both new branches share. */
typedef struct grad_cond {
    ir_trace *t;
    const ir_node *cond;
    ag_loc loc;
    rt_value *const *dy;
    int n_out;
    const bool *want; /* over cond's inputs: [0] is the predicate */
    int n_want;
} grad_cond;

static ir_type type_of(const rt_value *v)
{
    return (ir_type){.dtype = v->dtype, .elem_dtype = v->elem_dtype, .shape = v->shape};
}

/* sum_j <results_j, dy_j> over the results that have a gradient. */
static rt_value *weighted_results(const grad_cond *c, rt_value *const *res,
                                  rt_value *const *dyp)
{
    ag_tensor *ys = rt_xcalloc((size_t)c->n_out + 1, sizeof *ys);
    ag_tensor *ds = rt_xcalloc((size_t)c->n_out + 1, sizeof *ds);
    for (int j = 0; j < c->n_out; j++)
        if (dyp[j]) {
            ys[j] = rt_handle_new(rt_value_alias(res[j], &res[j]->shape));
            ds[j] = rt_handle_new(rt_value_alias(dyp[j], &dyp[j]->shape));
        }
    ag_tensor total = rt_weighted_sum(c->loc, c->n_out, ys, ds);
    free(ys);
    free(ds);
    rt_value *v = ag_is_null(total) ? NULL : rt_handle_get(c->loc, total);
    return v ? rt_value_alias(v, &v->shape) : NULL;
}

/* Traces branch b's gradient into frame f: parameters [captures...,
 * dys...], results the wanted captures' gradients. */
static bool grad_branch(const grad_cond *c, int b, ir_frame *f)
{
    const ir_node *cond = c->cond;
    const ir_graph *fwd = cond->region[b];
    int n_caps = cond->n_in - 1, size = c->t->fn->next_id;
    rt_value **map = rt_xcalloc((size_t)size, sizeof *map);
    rt_value **dyp = rt_xcalloc((size_t)c->n_out + 1, sizeof *dyp);
    ag_tensor *src = rt_xcalloc((size_t)c->n_want + 1, sizeof *src);
    ag_tensor *grads = rt_xcalloc((size_t)c->n_want + 1, sizeof *grads);
    ir_frame_push(c->t, f, ir_graph_new(c->t->fn));
    ag_scope_push();
    ag_tape tape = ag_tape_new_at(c->loc);
    ag_tape_set_unconnected_at(c->loc, tape, AG_UNCONNECTED_ZERO);
    for (int i = 0, k = 0; i < n_caps; i++) {
        map[fwd->params[i]->id] = ir_symbolic_value(ir_add_param(f->g, &cond->in[i + 1]->type));
        if (c->want[i + 1]) {
            src[k] = rt_handle_new(rt_value_alias(map[fwd->params[i]->id], &cond->in[i + 1]->type.shape));
            if (cond->in[i + 1]->type.dtype == RT_LIST)
                rt_tape_watch_array(c->loc, tape, src[k++]);
            else
                ag_tape_watch_at(c->loc, tape, src[k++]);
        }
    }
    for (int j = 0; j < c->n_out; j++) {
        ir_type ty = c->dy[j] ? type_of(c->dy[j]) : (ir_type){0};
        dyp[j] = c->dy[j] ? ir_symbolic_value(ir_add_param(f->g, &ty)) : NULL;
    }
    bool ok = replay(fwd, map, size);
    rt_value **res = rt_xcalloc((size_t)c->n_out + 1, sizeof *res);
    for (int j = 0; ok && j < c->n_out; j++)
        ok = (res[j] = map[fwd->results[j]->id]) != NULL || !dyp[j];
    rt_value *target = ok ? weighted_results(c, res, dyp) : NULL;
    ok = target && ag_tape_gradients_at(c->loc, tape, rt_handle_new(target), c->n_want, src, grads);
    ir_node **nodes = rt_xcalloc((size_t)c->n_want + 1, sizeof *nodes);
    for (int k = 0; ok && k < c->n_want; k++) {
        rt_value *g = rt_handle_get(c->loc, grads[k]);
        ok = g && (nodes[k] = ir_trace_node_of(c->t, g, c->loc)) != NULL;
    }
    if (ok)
        ir_set_results(f->g, c->n_want, nodes);
    ag_tape_free_at(c->loc, tape);
    ag_scope_pop_at(c->loc);
    ir_frame_pop(c->t, f);
    for (int i = 0; i < size; i++)
        rt_value_free(map[i]);
    for (int j = 0; j < c->n_out; j++)
        rt_value_free(dyp[j]);
    free(map);
    free(dyp);
    free(res);
    free(src);
    free(grads);
    free(nodes);
    return ok;
}

/* The type of the backward cond's result k when it is a captured array's
 * gradient, a dense tensor: its branches', a dim unknown where they
 * differ (the array's size is known only when the graph runs). */
static ir_type result_type(ir_frame *fr, int k)
{
    ir_type a = fr[0].g->results[k]->type;
    const ir_type *b = &fr[1].g->results[k]->type;
    if (a.shape.rank != b->shape.rank)
        a.shape.rank = -1;
    for (int d = 0; d < a.shape.rank; d++)
        if (a.shape.dims[d] != b->shape.dims[d])
            a.shape.dims[d] = -1;
    return a;
}

/* Appends the backward cond to the current graph; dx get its results. */
static void build_grad_cond(grad_cond *c, ir_frame *fr, rt_value **dx)
{
    ir_trace *t = c->t;
    const ir_node *cond = c->cond;
    ir_frame *frames[2] = {&fr[0], &fr[1]};
    ir_capture *u;
    int nu = ir_union_captures(frames, 2, &u);
    int n_dy = 0, n = 0;
    for (int j = 0; j < c->n_out; j++)
        n_dy += c->dy[j] != NULL;
    ir_node **ins = rt_xcalloc((size_t)(cond->n_in + n_dy + nu), sizeof *ins);
    for (int i = 0; i < cond->n_in; i++)
        ins[n++] = cond->in[i];
    for (int j = 0; j < c->n_out; j++)
        if (c->dy[j])
            ins[n++] = ir_trace_node_of(t, c->dy[j], c->loc);
    for (int j = 0; j < nu; j++)
        ins[n++] = u[j].outer;
    for (int b = 0; b < 2; b++)
        ir_align_params(frames[b], cond->n_in - 1 + n_dy, u, nu);
    ir_type *types = rt_xcalloc((size_t)c->n_want + 1, sizeof *types);
    for (int i = 1, k = 0; i < cond->n_in; i++)
        if (c->want[i]) {
            types[k] = cond->in[i]->type.dtype == RT_LIST ? result_type(fr, k)
                                                          : cond->in[i]->type;
            k++;
        }
    ir_node *node = ir_append_region_op(t->cur->g, IR_COND, n, ins, fr[0].g, fr[1].g,
                                        c->n_want, types, c->loc);
    rt_value **outs = rt_xcalloc((size_t)c->n_want + 1, sizeof *outs);
    for (int i = 1, k = 0; i < cond->n_in; i++) {
        if (!c->want[i])
            continue;
        dx[i] = ir_symbolic_value(ir_append_get(t->cur->g, node, k, c->loc));
        outs[k++] = dx[i];
    }
    ir_tape_record_cond(node, outs, c->n_want, c->loc);
    free(outs);
    free(u);
    free(ins);
    free(types);
}

static bool cond_backward(void *ctx, ag_loc loc, rt_value *const *in, int n_in,
                          rt_value *const *out, rt_value *const *dy, int n_out,
                          const bool *want, rt_value **dx)
{
    (void)in, (void)out;
    ir_trace *t = ir_trace_current();
    grad_cond c = {t, ctx, loc, dy, n_out, want, 0};
    for (int i = 1; i < n_in; i++)
        c.n_want += want[i];
    if (!c.n_want)
        return true;
    if (!t) {
        rt_report(loc, "ag_tape_gradient: the gradient of a staged if is asked for after "
                       "the function that made it was traced; ask for it inside that "
                       "function");
        return false;
    }
    ir_frame fr[2] = {{0}, {0}};
    bool ok = grad_branch(&c, 0, &fr[0]) && grad_branch(&c, 1, &fr[1]);
    if (ok)
        build_grad_cond(&c, fr, dx);
    ir_frame_release(&fr[0]);
    ir_frame_release(&fr[1]);
    return ok;
}
