/* exec.c - the reference executor. */
#include "exec.h"

#include "liveness.h"

#include <stdlib.h>
#include <string.h>

struct ir_plan {
    const ir_function *fn;
    ir_liveness liveness; /* what runs */
};

ir_plan *ir_plan_new(const ir_function *fn)
{
    ir_plan *p = rt_xcalloc(1, sizeof *p);
    p->fn = fn;
    ir_liveness_init(&p->liveness, fn);
    return p;
}

const ir_liveness *ir_plan_liveness(const ir_plan *p) { return &p->liveness; }

void ir_plan_free(ir_plan *p)
{
    if (!p)
        return;
    ir_liveness_free(&p->liveness);
    free(p);
}

/* --------------------------------------------------------------- execution */

typedef struct exec {
    const ir_plan *plan;
    const ir_exec_hooks *hooks; /* NULL: the runtime's kernels, nothing observed */
    rt_value **vals;   /* by node id: the value of each node */
    rt_value ***tuples; /* by node id: the results of cond and while */
} exec;

static bool run_graph(exec *x, const ir_graph *g, rt_value *const *args, rt_value **results);

static void free_tuple(rt_value **t, int n)
{
    if (!t)
        return;
    for (int i = 0; i < n; i++)
        rt_value_free(t[i]);
    free(t);
}

/* Releases the values a graph's nodes computed (not its params). */
static void release_graph(exec *x, const ir_graph *g)
{
    for (const ir_node *n = g->first; n; n = n->next) {
        rt_value_free(x->vals[n->id]);
        x->vals[n->id] = NULL;
        free_tuple(x->tuples[n->id], n->n_results);
        x->tuples[n->id] = NULL;
    }
}

static rt_value **inputs_of(exec *x, const ir_node *n, int from)
{
    rt_value **in = rt_xmalloc((size_t)(n->n_in + 1) * sizeof *in);
    for (int i = from; i < n->n_in; i++)
        in[i - from] = x->vals[n->in[i]->id];
    return in;
}

static bool run_cond(exec *x, const ir_node *n)
{
    rt_value *pred = x->vals[n->in[0]->id];
    const ir_graph *taken = rt_load_f64(pred->dtype, pred->data, 0) != 0 ? n->region[0]
                                                                          : n->region[1];
    rt_value **args = inputs_of(x, n, 1);
    rt_value **res = rt_xcalloc((size_t)(n->n_results + 1), sizeof *res);
    bool ok = run_graph(x, taken, args, res);
    free(args);
    x->tuples[n->id] = res;
    return ok;
}

/* Copies (aliases) of values, so loop state is owned independently of the
 * graph values it came from. */
static rt_value **alias_all(rt_value *const *vals, int n)
{
    rt_value **out = rt_xcalloc((size_t)(n + 1), sizeof *out);
    for (int i = 0; i < n; i++)
        out[i] = rt_value_alias(vals[i], &vals[i]->shape);
    return out;
}

static bool run_while(exec *x, const ir_node *n)
{
    rt_value **in = inputs_of(x, n, 0);
    rt_value **state = alias_all(in, n->n_in);
    free(in);
    for (;;) {
        rt_value *c = NULL;
        if (!run_graph(x, n->region[0], state, &c)) {
            free_tuple(state, n->n_in);
            return false;
        }
        bool go = rt_load_f64(c->dtype, c->data, 0) != 0;
        rt_value_free(c);
        if (!go)
            break;
        rt_value **next = rt_xcalloc((size_t)(n->n_in + 1), sizeof *next);
        bool ok = run_graph(x, n->region[1], state, next);
        free_tuple(state, n->n_in);
        state = next;
        if (!ok) {
            free_tuple(state, n->n_in);
            return false;
        }
    }
    x->tuples[n->id] = state;
    return true;
}

static bool run_node(exec *x, const ir_node *n)
{
    switch (n->opcode) {
    case IR_COND:
        return run_cond(x, n);
    case IR_WHILE:
        return run_while(x, n);
    case IR_GET: {
        rt_value *v = x->tuples[n->in[0]->id][n->index];
        x->vals[n->id] = rt_value_alias(v, &v->shape);
        return true;
    }
    default: {
        rt_value **in = inputs_of(x, n, 0);
        bool handled = false;
        if (x->hooks && x->hooks->apply)
            x->vals[n->id] = x->hooks->apply(x->hooks->ctx, n, in, n->n_in, &handled);
        if (!handled)
            x->vals[n->id] = rt_apply_eager(n->loc, (rt_op)n->opcode, &n->attrs, in, n->n_in);
        free(in);
        return x->vals[n->id] != NULL;
    }
    }
}

/* Runs n, then tells the observer (cond and while after their regions). */
static bool run_observed(exec *x, const ir_node *n)
{
    bool ok = run_node(x, n);
    if (ok && x->hooks && x->hooks->ran)
        x->hooks->ran(x->hooks->ctx, n, x->vals[n->id]);
    return ok;
}

static bool run_graph(exec *x, const ir_graph *g, rt_value *const *args, rt_value **results)
{
    bool ok = true;
    for (int i = 0; i < g->n_params; i++)
        x->vals[g->params[i]->id] = args[i];
    for (const ir_node *n = g->first; n && ok; n = n->next)
        if (x->plan->liveness.live[n->id])
            ok = run_observed(x, n);
    for (int i = 0; i < g->n_results && ok; i++) {
        rt_value *v = x->vals[g->results[i]->id];
        results[i] = rt_value_alias(v, &v->shape);
    }
    release_graph(x, g);
    for (int i = 0; i < g->n_params; i++)
        x->vals[g->params[i]->id] = NULL;
    return ok;
}

rt_value *ir_evaluate(const ir_function *fn, const ir_node *node)
{
    ir_plan p = {.fn = fn};
    ir_liveness_init_for(&p.liveness, fn, node);
    size_t n = (size_t)p.liveness.n;
    exec x = {.plan = &p};
    x.vals = rt_xcalloc(n, sizeof *x.vals);
    x.tuples = rt_xcalloc(n, sizeof *x.tuples);
    bool ok = true;
    const ir_node *last = node;
    for (const ir_node *m = fn->body->first; m && ok; m = m->next) {
        if (p.liveness.live[m->id])
            ok = run_node(&x, m);
        if (m == last)
            break;
    }
    rt_value *v = ok ? x.vals[node->id] : NULL;
    rt_value *out = v ? rt_value_alias(v, &v->shape) : NULL;
    release_graph(&x, fn->body);
    free(x.vals);
    free(x.tuples);
    ir_liveness_free(&p.liveness);
    return out;
}

bool ir_execute(const ir_plan *p, rt_value *const *args, int n_args, rt_value **results)
{
    return ir_execute_hooked(p, NULL, args, n_args, results);
}

bool ir_execute_hooked(const ir_plan *p, const ir_exec_hooks *hooks, rt_value *const *args,
                       int n_args, rt_value **results)
{
    const ir_graph *body = p->fn->body;
    if (n_args != body->n_params) {
        rt_report((ag_loc){0}, "internal: %d arguments for %d parameters", n_args,
                  body->n_params);
        return false;
    }
    exec x = {.plan = p, .hooks = hooks};
    size_t n = (size_t)p->liveness.n;
    x.vals = rt_xcalloc(n, sizeof *x.vals);
    x.tuples = rt_xcalloc(n, sizeof *x.tuples);
    bool ok = run_graph(&x, body, args, results);
    free(x.vals);
    free(x.tuples);
    return ok;
}
