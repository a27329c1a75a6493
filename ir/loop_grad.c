/*
 * loop_grad.c - gradients through a staged while (TensorFlow's while-loop
 * gradient, with tensor-array accumulators).
 *
 * Forward: when a gradient tape records the graph region a staged loop is
 * traced into, the loop carries two more kinds of variable: a trip count,
 * and for each of the user's tensor variables a tensor array to which every
 * iteration writes the value it starts from. Memory grows with the trip
 * count by one copy of the variables an iteration. A tensor array the
 * loop carries needs no accumulator: all values of one array share its
 * list, which only grows, so the array at the loop's exit holds every
 * element any iteration wrote or read (arrays are written once, as
 * TensorFlow's).
 *
 * Backward: the loop is one op on the tape (all its inputs: the user's
 * variables' initial values and the values its body captures), whose
 * gradient is another staged loop running the same number of iterations in
 * reverse. Iteration k reads the variables iteration k started from, runs
 * the body's nodes again under a tape of its own, and turns the gradient
 * of the iteration's results into the gradient of its starting values;
 * the gradients of captured values (a weight the body reads) are summed
 * over the iterations by the same mechanism, as loop-invariant positions
 * of the loop. A carried array's gradient is its dense tensor [size at
 * the exit, element...] (runtime/autodiff/grad_rules_list.c), one more
 * variable of the backward loop: iteration k's replayed writes give their
 * rows to the values written and clear them, its reads add to theirs.
 * Built with ag_while_at, the backward loop is itself staged code: a tape
 * recording it gives gradients of gradients.
 */
#include "trace_internal.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------- the forward's accumulators */

static bool is_array(ag_tensor h)
{
    const rt_value *v = rt_handle_peek(h);
    return v && v->dtype == RT_LIST;
}

typedef struct acc_loop {
    void *user;
    ag_cond_fn cond;
    ag_body_fn body;
    int n;                  /* the user's variables */
    ag_tensor *const *vars; /* theirs */
    ag_loc loc;
    ag_tensor count;
    ag_tensor *tas; /* .list of each accumulator (none for an array) */
} acc_loop;

static ag_tensor acc_cond(void *s_)
{
    acc_loop *s = s_;
    return s->cond(s->user);
}

static void acc_body(void *s_)
{
    acc_loop *s = s_;
    for (int i = 0; i < s->n; i++) {
        if (is_array(*s->vars[i]))
            continue;
        ag_tensor_array ta = {s->tas[i]};
        s->tas[i] = ag_tensor_array_write_at(s->loc, ta, AG_OPERAND(s->count), *s->vars[i]).list;
    }
    s->body(s->user);
    s->count = ag_add_at(s->loc, AG_OPERAND(s->count), AG_OPERAND(1));
}

/* What the backward needs of a forward loop (in the function's arena). */
typedef struct loop_grad {
    const ir_node *loop;
    int n;           /* the user's variables: positions 0..n-1 */
    int count_pos;   /* the trip count's position */
    int *ta_pos;     /* each variable's accumulator's position; -1: an array */
} loop_grad;

static bool loop_backward(void *ctx, ag_loc loc, rt_value *const *in, int n_in,
                          rt_value *const *out, rt_value *const *dy, int n_out,
                          const bool *want, rt_value **dx);

/* The loop node the variables' handles now come from, or NULL. */
static const ir_node *loop_of(ag_tensor h)
{
    const rt_value *v = rt_handle_peek(h);
    const ir_node *get = v && v->kind == RT_SYMBOLIC ? v->sym : NULL;
    return get && get->opcode == IR_GET && get->in[0]->opcode == IR_WHILE ? get->in[0] : NULL;
}

static int position_of(ag_tensor h)
{
    return ((const ir_node *)rt_handle_peek(h)->sym)->index;
}

/* Records the traced loop on the tapes: inputs all its positions, results
 * the user's variables. */
static void record_loop(ir_trace *t, acc_loop *s, ag_loc loc)
{
    const ir_node *w = loop_of(*s->vars[0]);
    if (!w)
        return;
    loop_grad *g = ir_alloc(t->fn->arena, sizeof *g);
    g->loop = w;
    g->n = s->n;
    g->count_pos = position_of(s->count);
    g->ta_pos = ir_alloc(t->fn->arena, (size_t)s->n * sizeof *g->ta_pos);
    rt_value **in = rt_xcalloc((size_t)w->n_in, sizeof *in);
    rt_value **outs = rt_xcalloc((size_t)s->n, sizeof *outs);
    bool ok = true;
    for (int i = 0; i < s->n; i++) {
        g->ta_pos[i] = is_array(*s->vars[i]) ? -1 : position_of(s->tas[i]);
        outs[i] = rt_handle_peek(*s->vars[i]);
        ok &= position_of(*s->vars[i]) == i; /* the user's come first */
    }
    for (int p = 0; p < w->n_in; p++)
        in[p] = ir_tape_input_value(w->in[p]);
    if (ok)
        rt_tape_record_custom(loc, "a staged loop (its condition is a tensor)", in, w->n_in,
                              outs, s->n, loop_backward, g);
    else
        rt_tape_record_custom(loc, "a staged loop (its condition is a tensor)", NULL, 0,
                              outs, s->n, NULL, NULL);
    for (int p = 0; p < w->n_in; p++)
        rt_value_free(in[p]);
    free(in);
    free(outs);
}

/* Whether every variable is a tensor array or has a tensor value the
 * accumulators can hold. */
static bool accumulable(int n_vars, ag_tensor *const *vars)
{
    for (int i = 0; i < n_vars; i++) {
        const rt_value *v = rt_handle_peek(*vars[i]);
        if (!v || (v->dtype != RT_LIST && v->shape.rank < 0))
            return false;
    }
    return n_vars > 0;
}

void ir_while_on_tape(ir_trace *t, ag_loc loc, int n_vars, ag_tensor *const *vars,
                      const char *const *names, ag_cond_fn cond, ag_body_fn body,
                      void *state)
{
    if (!accumulable(n_vars, vars)) {
        ir_traced_while(t, loc, n_vars, vars, names, cond, body, state, true);
        return;
    }
    acc_loop s = {.user = state, .cond = cond, .body = body, .n = n_vars, .vars = vars,
                  .loc = loc};
    s.count = ag_scalar_at(loc, AG_I32, 0);
    s.tas = rt_xcalloc((size_t)n_vars, sizeof *s.tas);
    int total = n_vars + 1;
    ag_tensor **all = rt_xcalloc((size_t)(2 * n_vars + 1), sizeof *all);
    const char **all_names = rt_xcalloc((size_t)(2 * n_vars + 1), sizeof *all_names);
    for (int i = 0; i < n_vars; i++) {
        all[i] = vars[i];
        all_names[i] = names[i];
        if (is_array(*vars[i]))
            continue;
        const rt_value *v = rt_handle_peek(*vars[i]);
        s.tas[i] = ag_tensor_array_new_at(loc, v->dtype, 0, true).list;
        all[total] = &s.tas[i];
        all_names[total++] = "<gradient accumulator>";
    }
    all[n_vars] = &s.count;
    all_names[n_vars] = "<gradient trip count>";
    bool failed_before = t->failed;
    ir_traced_while(t, loc, total, (ag_tensor *const *)all, all_names, acc_cond, acc_body, &s,
                    false);
    if (!failed_before && !t->failed)
        record_loop(t, &s, loc);
    free(s.tas);
    free(all);
    free(all_names);
}

/* ------------------------------------------------------ the backward loop */

typedef struct back_loop {
    const loop_grad *g;
    ag_loc loc;
    int n_pos;         /* the forward loop's positions */
    bool *is_float;    /* which carry a gradient (an array's: its dense tensor) */
    bool *is_acc;      /* the accumulators' positions (not the body's) */
    ag_tensor step;    /* counts down from the trip count */
    ag_tensor *dys;    /* the gradient of each float position */
    ag_tensor *tas;    /* the accumulators (the user's positions) */
    ag_tensor *outer;  /* each position's value entering the forward loop */
} back_loop;

static ag_tensor back_cond(void *s_)
{
    back_loop *s = s_;
    return ag_greater_at(s->loc, AG_OPERAND(s->step), AG_OPERAND(0));
}

/* The value position p started iteration `step` from: a variable's from
 * its accumulator, anything else (a captured value, an array, which is
 * one list throughout) from outside. */
static rt_value *start_value(back_loop *s, int p)
{
    ag_tensor v = s->outer[p];
    if (p < s->g->n && s->g->ta_pos[p] >= 0) {
        ag_tensor_array ta = {s->tas[p]};
        v = ag_tensor_array_read_at(s->loc, ta, AG_OPERAND(s->step));
    }
    rt_value *x = rt_handle_get(s->loc, v);
    return x ? rt_value_alias(x, &x->shape) : NULL;
}

/* One backward iteration: the body's nodes again, under a tape, and the
 * gradient of sum_p <result_p, dy_p> with respect to its parameters. */
static void back_body(void *s_)
{
    back_loop *s = s_;
    const ir_graph *body = s->g->loop->region[1];
    int size = body->fn->next_id;
    s->step = ag_sub_at(s->loc, AG_OPERAND(s->step), AG_OPERAND(1));
    rt_value **map = rt_xcalloc((size_t)size, sizeof *map);
    ag_tensor *src = rt_xcalloc((size_t)s->n_pos, sizeof *src);
    ag_tensor *grads = rt_xcalloc((size_t)s->n_pos, sizeof *grads);
    int *which = rt_xcalloc((size_t)s->n_pos, sizeof *which);
    ag_tape tape = ag_tape_new_at(s->loc);
    ag_tape_set_unconnected_at(s->loc, tape, AG_UNCONNECTED_ZERO);
    int n_src = 0;
    bool ok = true;
    for (int p = 0; p < s->n_pos && ok; p++) {
        if (s->is_acc[p])
            continue;
        ok = (map[body->params[p]->id] = start_value(s, p)) != NULL;
        if (ok && s->is_float[p]) {
            rt_value *x = map[body->params[p]->id];
            src[n_src] = rt_handle_new(rt_value_alias(x, &x->shape));
            if (x->dtype == RT_LIST)
                rt_tape_watch_array(s->loc, tape, src[n_src]);
            else
                ag_tape_watch_at(s->loc, tape, src[n_src]);
            which[n_src++] = p;
        }
    }
    ok = ok && ir_replay_region(body, map, size, true);
    ag_tensor *ys = rt_xcalloc((size_t)s->n_pos + 1, sizeof *ys);
    ag_tensor *ds = rt_xcalloc((size_t)s->n_pos + 1, sizeof *ds);
    for (int p = 0; ok && p < s->n_pos; p++) {
        if (!s->is_float[p])
            continue;
        rt_value *r = map[body->results[p]->id];
        if (!r) {
            rt_report(s->loc, "ag_tape_gradient: a staged loop's variable is the result of "
                              "an assignment or a print, which its gradient cannot compute "
                              "again");
            ok = false;
            break;
        }
        ys[p] = rt_handle_new(rt_value_alias(r, &r->shape));
        ds[p] = s->dys[p];
    }
    ag_tensor total = ok ? rt_weighted_sum(s->loc, s->n_pos, ys, ds) : (ag_tensor){0, 0};
    free(ys);
    free(ds);
    ok = ok && !ag_is_null(total) && ag_tape_gradients_at(s->loc, tape, total, n_src, src, grads);
    for (int k = 0; ok && k < n_src; k++)
        s->dys[which[k]] = grads[k];
    ag_tape_free_at(s->loc, tape);
    for (int i = 0; i < size; i++)
        rt_value_free(map[i]);
    free(map);
    free(src);
    free(grads);
    free(which);
    if (!ok)
        ir_trace_fail();
}

/* Whether position p (value v, the gradient d of its result) carries a
 * gradient backward: a float tensor does, zeros when none reached it; an
 * array of floats does when one reached it (else its writes and reads
 * contribute nothing, and its dense zeros would cost a stack). */
static bool carries_gradient(const rt_value *v, const rt_value *d)
{
    if (v->dtype == RT_LIST)
        return d && rt_is_float(v->elem_dtype);
    return rt_is_float(v->dtype);
}

static bool loop_backward(void *ctx, ag_loc loc, rt_value *const *in, int n_in,
                          rt_value *const *out, rt_value *const *dy, int n_out,
                          const bool *want, rt_value **dx)
{
    (void)out;
    const loop_grad *g = ctx;
    ir_trace *t = ir_trace_current();
    if (!t) {
        rt_report(loc, "ag_tape_gradient: the gradient of a staged loop is asked for after "
                       "the function that made it was traced; ask for it inside that "
                       "function");
        return false;
    }
    back_loop s = {.g = g, .loc = loc, .n_pos = n_in};
    s.is_float = rt_xcalloc((size_t)n_in, sizeof *s.is_float);
    s.dys = rt_xcalloc((size_t)n_in, sizeof *s.dys);
    s.tas = rt_xcalloc((size_t)g->n + 1, sizeof *s.tas);
    s.outer = rt_xcalloc((size_t)n_in, sizeof *s.outer);
    ag_tensor **vars = rt_xcalloc((size_t)n_in + 1, sizeof *vars);
    const char **names = rt_xcalloc((size_t)n_in + 1, sizeof *names);
    int nv = 0;
    s.is_acc = rt_xcalloc((size_t)n_in, sizeof *s.is_acc);
    s.is_acc[g->count_pos] = true;
    for (int i = 0; i < g->n; i++)
        if (g->ta_pos[i] >= 0)
            s.is_acc[g->ta_pos[i]] = true;
    for (int p = 0; p < n_in; p++) {
        s.outer[p] = rt_handle_new(rt_value_alias(in[p], &in[p]->shape));
        rt_value *d = p < n_out && dy[p] ? dy[p] : NULL;
        s.is_float[p] = carries_gradient(in[p], d) && !s.is_acc[p];
        if (!s.is_float[p])
            continue;
        s.dys[p] = d ? rt_handle_new(rt_value_alias(d, &d->shape))
                     : ag_fill_like_at(loc, s.outer[p], 0.0);
        vars[nv] = &s.dys[p];
        names[nv++] = "<gradient>";
    }
    const ir_node *w = g->loop;
    s.step = ir_symbolic_handle(ir_append_get(t->cur->g, (ir_node *)w, g->count_pos, loc));
    for (int i = 0; i < g->n; i++)
        if (g->ta_pos[i] >= 0)
            s.tas[i] = ir_symbolic_handle(ir_append_get(t->cur->g, (ir_node *)w, g->ta_pos[i],
                                                        loc));
    vars[nv] = &s.step;
    names[nv++] = "<gradient step>";
    bool failed_before = t->failed;
    ag_while_at(loc, nv, vars, names, back_cond, back_body, &s);
    bool ok = !failed_before && !t->failed;
    for (int p = 0; ok && p < n_in; p++) {
        if (!want[p] || !s.is_float[p])
            continue;
        rt_value *v = rt_handle_get(loc, s.dys[p]);
        dx[p] = v ? rt_value_alias(v, &v->shape) : NULL;
    }
    free(s.is_float);
    free(s.is_acc);
    free(s.dys);
    free(s.tas);
    free(s.outer);
    free(vars);
    free(names);
    return ok;
}
