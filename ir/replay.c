/*
 * replay.c - a traced region applied again, node by node, into the graph
 * being traced now (the gradients of staged if and while compute their
 * forward values again this way, under a tape of their own).
 *
 * An op is applied through rt_apply, so it becomes a node of the current
 * frame and a tape recording there sees it. A staged if or loop inside
 * the region is replayed through the tracer's own ag_if_at and
 * ag_while_at, with callbacks that replay its regions: it is staged again
 * like one the user wrote, so a tape recording there records it with its
 * gradient (a cond, or a loop with accumulators) and control flow nested
 * in control flow is differentiated too.
 */
#include "trace_internal.h"

#include <stdlib.h>

typedef struct replay {
    rt_value **map; /* by node id: the value replayed for it */
    int size;
    bool skip_unmapped;
} replay;

static bool replay_nodes(replay *r, const ir_graph *g);

static ag_tensor handle_of(const rt_value *v) { return rt_handle_new(rt_value_alias(v, &v->shape)); }

static void set(replay *r, const ir_node *n, rt_value *v)
{
    rt_value_free(r->map[n->id]);
    r->map[n->id] = v;
}

static void set_handle(replay *r, const ir_node *n, ag_tensor h, ag_loc loc)
{
    rt_value *v = rt_handle_get(loc, h);
    set(r, n, v ? rt_value_alias(v, &v->shape) : NULL);
}

/* Maps region g's parameters: params[i] to vals[i]. */
static void bind_params(replay *r, const ir_graph *g, rt_value *const *vals)
{
    for (int i = 0; i < g->n_params; i++)
        set(r, g->params[i], vals[i] ? rt_value_alias(vals[i], &vals[i]->shape) : NULL);
}

/* The gets of tuple node n take its results (res[i]: the handle of
 * result i). */
static void bind_gets(replay *r, const ir_node *n, const ag_tensor *res)
{
    for (const ir_node *g = n->next; g; g = g->next)
        if (g->opcode == IR_GET && g->in[0] == n)
            set_handle(r, g, res[g->index], g->loc);
}

/* ---------------------------------------------------------------- cond */

typedef struct cond_replay {
    replay *r;
    const ir_node *cond;
    rt_value **caps; /* the captures' values */
    ag_tensor *res;
    bool ok;
} cond_replay;

static void replay_branch(cond_replay *c, int b)
{
    const ir_graph *g = c->cond->region[b];
    bind_params(c->r, g, c->caps);
    c->ok = c->ok && replay_nodes(c->r, g);
    for (int i = 0; c->ok && i < g->n_results; i++)
        c->res[i] = handle_of(c->r->map[g->results[i]->id]);
}

static void replay_then(void *s) { replay_branch(s, 0); }
static void replay_else(void *s) { replay_branch(s, 1); }

static bool replay_cond(replay *r, const ir_node *n)
{
    static const char *const name[] = {"result"};
    int k = n->n_results;
    cond_replay c = {r, n, rt_xcalloc((size_t)n->n_in, sizeof(rt_value *)),
                     rt_xcalloc((size_t)k + 1, sizeof(ag_tensor)), true};
    for (int i = 1; i < n->n_in; i++)
        c.caps[i - 1] = r->map[n->in[i]->id];
    ag_tensor **vars = rt_xcalloc((size_t)k + 1, sizeof *vars);
    const char **names = rt_xcalloc((size_t)k + 1, sizeof *names);
    for (int i = 0; i < k; i++) {
        vars[i] = &c.res[i];
        names[i] = name[0];
    }
    ag_if_at(n->loc, handle_of(r->map[n->in[0]->id]), k, vars, names, replay_then, replay_else,
             &c);
    bool ok = c.ok && !ir_trace_current()->failed;
    if (ok)
        bind_gets(r, n, c.res);
    free(c.caps);
    free(c.res);
    free(vars);
    free(names);
    return ok;
}

/* ---------------------------------------------------------------- while */

/* A loop's inputs are its variables, then values its regions read from
 * outside, which its body passes through unchanged: those are read from
 * outside again; only the others are the replayed loop's variables. */
typedef struct while_replay {
    replay *r;
    const ir_node *loop;
    int n;              /* inputs */
    bool *through;      /* input i is passed through */
    rt_value **outside; /* their values */
    ag_tensor *cur;     /* the variables' handles (passed-through: unused) */
    bool ok;
} while_replay;

/* The region's parameters: the variables' current values, the others'
 * outside ones. */
static void bind_loop(while_replay *w, const ir_graph *g)
{
    rt_value **vals = rt_xcalloc((size_t)w->n + 1, sizeof *vals);
    for (int i = 0; i < w->n; i++)
        vals[i] = w->through[i] ? w->outside[i] : rt_handle_get(w->loop->loc, w->cur[i]);
    bind_params(w->r, g, vals);
    free(vals);
}

static ag_tensor replay_loop_cond(void *s)
{
    while_replay *w = s;
    const ir_graph *g = w->loop->region[0];
    bind_loop(w, g);
    w->ok = w->ok && replay_nodes(w->r, g);
    return w->ok ? handle_of(w->r->map[g->results[0]->id]) : rt_error_tensor();
}

static void replay_loop_body(void *s)
{
    while_replay *w = s;
    const ir_graph *g = w->loop->region[1];
    bind_loop(w, g);
    w->ok = w->ok && replay_nodes(w->r, g);
    for (int i = 0; w->ok && i < w->n; i++)
        if (!w->through[i])
            w->cur[i] = handle_of(w->r->map[g->results[i]->id]);
}

static bool replay_while(replay *r, const ir_node *n)
{
    static const char *const name = "loop variable";
    const ir_graph *body = n->region[1];
    while_replay w = {r, n, n->n_in, rt_xcalloc((size_t)n->n_in + 1, sizeof(bool)),
                      rt_xcalloc((size_t)n->n_in + 1, sizeof(rt_value *)),
                      rt_xcalloc((size_t)n->n_in + 1, sizeof(ag_tensor)), true};
    ag_tensor **vars = rt_xcalloc((size_t)n->n_in + 1, sizeof *vars);
    const char **names = rt_xcalloc((size_t)n->n_in + 1, sizeof *names);
    int nv = 0;
    for (int i = 0; i < n->n_in; i++) {
        w.through[i] = body->results[i] == body->params[i];
        w.outside[i] = r->map[n->in[i]->id];
        if (w.through[i])
            continue;
        w.cur[i] = handle_of(w.outside[i]);
        vars[nv] = &w.cur[i];
        names[nv++] = name;
    }
    ag_while_at(n->loc, nv, vars, names, replay_loop_cond, replay_loop_body, &w);
    bool ok = w.ok && !ir_trace_current()->failed;
    for (int i = 0; ok && i < n->n_in; i++)
        if (w.through[i])
            w.cur[i] = handle_of(w.outside[i]);
    if (ok)
        bind_gets(r, n, w.cur);
    free(w.through);
    free(w.outside);
    free(w.cur);
    free(vars);
    free(names);
    return ok;
}

/* ------------------------------------------------------------- nodes */

/* Whether every input of n has a value; when not, and unmapped inputs
 * are not skipped silently, reports. */
static bool inputs_mapped(const replay *r, const ir_node *n)
{
    bool ok = n->id < r->size;
    for (int i = 0; ok && i < n->n_in; i++)
        ok = n->in[i]->id < r->size && r->map[n->in[i]->id] != NULL;
    if (!ok && !r->skip_unmapped)
        rt_report(n->loc, "ag_tape_gradient: inside a staged if or loop, %s uses the "
                          "result of an assignment or a print, which its gradient cannot "
                          "compute again",
                  n->opcode < RT_OP_COUNT ? rt_ops[n->opcode].name : "a staged if or loop");
    return ok;
}

static bool replay_op(replay *r, const ir_node *n)
{
    rt_value *stack[8], **ins = n->n_in <= 8 ? stack : rt_xcalloc((size_t)n->n_in, sizeof *ins);
    for (int i = 0; i < n->n_in; i++)
        ins[i] = r->map[n->in[i]->id];
    rt_value *v = rt_apply(n->loc, (rt_op)n->opcode, &n->attrs, ins, n->n_in);
    if (ins != stack)
        free(ins);
    set(r, n, v);
    return v != NULL;
}

static bool replay_nodes(replay *r, const ir_graph *g)
{
    for (const ir_node *n = g->first; n; n = n->next) {
        bool effect = n->opcode < RT_OP_COUNT && (rt_ops[n->opcode].flags & RT_F_EFFECT) &&
                      n->opcode != RT_OP_VAR_READ;
        if (effect || n->opcode == IR_GET) /* gets: set with their tuple */
            continue;
        if (!inputs_mapped(r, n)) {
            if (r->skip_unmapped)
                continue;
            return false;
        }
        bool ok = n->opcode == IR_COND    ? replay_cond(r, n)
                  : n->opcode == IR_WHILE ? replay_while(r, n)
                                          : replay_op(r, n);
        if (!ok)
            return false;
    }
    return true;
}

bool ir_replay_region(const ir_graph *g, rt_value **map, int map_size, bool skip_unmapped)
{
    replay r = {map, map_size, skip_unmapped};
    return replay_nodes(&r, g);
}
