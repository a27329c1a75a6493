/*
 * function_grad.c - a call of an AG_FUNCTION on a gradient tape, as one op
 * (tf.function's: "you can compute gradients" of a Function like of any
 * core op).
 *
 * At a concrete function's first call on a tape, its gradient graph is
 * traced once: the body, then a tape's gradient of sum_j <result_j, dy_j>
 * with respect to its float tensor parameters and the variables it reads,
 * the dy_j being extra parameters. ir_split cuts that graph where the dys
 * enter: the forward half gives the results and the values the backward
 * reads (a pass keeps only those), the backward half takes them and the
 * dys and gives the gradients. Both are compiled like any graph, for the
 * concrete function's target, and kept with it.
 *
 * A call on a tape then runs the forward half, and the tapes record the
 * call as one op whose gradient runs the backward half. When a tape
 * records while that gradient is computed (a gradient of a gradient), the
 * compiled backward is opaque to it: the gradient is then computed again
 * op by op, from the body run eagerly under a tape of its own, so that
 * the recording tape sees every op. A function the split cannot take
 * (an op without a gradient rule yet) runs its body eagerly on the tape,
 * op by op, as before.
 */
#include "function_internal.h"

#include "trace.h"

#include <stdlib.h>
#include <string.h>

struct fn_grad {
    bool eager;     /* the call runs its body eagerly on tapes */
    bool constant;  /* nothing in it has a gradient: the call runs as usual */
    pl_result forward, backward;
    int n_in;       /* tensor parameters: the forward's parameters */
    int n_out;      /* the function's results */
    int n_saved;    /* the cut: what the forward hands the backward */
    bool *has_dy;   /* per result: a float, so it has a gradient */
    int n_dy;
    int *dx_param;  /* the float tensor parameters (desc's positions) */
    int n_dx;
    rt_variable **vars; /* the variables it reads */
    int n_vars;
};

void fn_grad_free(fn_grad *g)
{
    if (!g)
        return;
    pl_result_free(&g->forward);
    pl_result_free(&g->backward);
    free(g->has_dy);
    free(g->dx_param);
    free(g->vars);
    free(g);
}

static bool is_float(ag_dtype dt) { return dt == AG_F32 || dt == AG_F64 || dt == AG_BF16; }

/* ------------------------------------------------- the gradient graph */

/* Whether the tape can differentiate every node of g as one graph: no op
 * in it, or in its staged ifs and loops, waits for its rule. */
static bool differentiable(const ir_graph *g)
{
    for (const ir_node *n = g->first; n; n = n->next) {
        if (n->opcode < RT_OP_COUNT && rt_ops[n->opcode].grad_kind == RT_GRAD_MISSING)
            return false;
        if (n->region[0] && (!differentiable(n->region[0]) || !differentiable(n->region[1])))
            return false;
    }
    return true;
}

/* The parameters with gradients, and a dy parameter per float result. */
static void plan(const ag_concrete_function *cf, fn_grad *g)
{
    const ag_function_desc *d = cf->entry->desc;
    const ir_graph *body = cf->compiled.graph->body;
    g->n_out = d->n_outputs;
    g->has_dy = calloc((size_t)g->n_out + 1, sizeof *g->has_dy);
    g->dx_param = calloc((size_t)d->n_params + 1, sizeof *g->dx_param);
    for (int j = 0; j < g->n_out; j++)
        g->n_dy += g->has_dy[j] = is_float(body->results[j]->type.dtype);
    for (int i = 0; i < d->n_params; i++) {
        const pl_arg *k = &cf->keys[i];
        g->n_in += k->kind == AG_ARG_TENSOR || k->kind == AG_ARG_TENSOR_ARRAY;
        if (k->kind == AG_ARG_TENSOR && is_float(k->type.dtype))
            g->dx_param[g->n_dx++] = i;
    }
}

/* What one trace of the gradient graph holds. */
typedef struct grad_trace {
    const ag_concrete_function *cf;
    fn_grad *g;
    ag_loc at;
    ag_arg *args;
    ag_tensor *outs, *dys, *results;
    ag_tape tape;
    int first_late; /* the first node id of the backward */
} grad_trace;

/* The gradients of the traced body: results [outs..., dxs..., dvars...].
 * False after an error, or with g->constant when nothing has one. */
static bool trace_gradients(grad_trace *gt)
{
    fn_grad *g = gt->g;
    ag_tensor target = rt_weighted_sum(gt->at, g->n_out, gt->outs, gt->dys);
    g->vars = rt_tape_variables_read(gt->tape, &g->n_vars);
    if (ag_is_null(target) || g->n_dx + g->n_vars == 0) {
        g->constant = true;
        return false;
    }
    ag_tensor *src = calloc((size_t)g->n_dx + 1, sizeof *src);
    for (int k = 0; k < g->n_dx; k++)
        src[k] = gt->args[g->dx_param[k]].tensor;
    ag_tensor *res = gt->results = calloc((size_t)(g->n_out + g->n_dx + g->n_vars), sizeof *res);
    memcpy(res, gt->outs, (size_t)g->n_out * sizeof *res);
    bool ok = (!g->n_dx || ag_tape_gradients_at(gt->at, gt->tape, target, g->n_dx, src,
                                                res + g->n_out)) &&
              (!g->n_vars ||
               ag_tape_gradients_variables_at(gt->at, gt->tape, target, g->n_vars,
                                              (const ag_variable *)g->vars, res + g->n_out + g->n_dx));
    free(src);
    return ok;
}

/* Traces the body and its gradient into fn (between ir_trace_begin and
 * ir_trace_end): false when it has no gradient graph (g->eager or
 * g->constant say why) or an error was reported. */
static bool trace_body(grad_trace *gt, ir_trace *t, ir_function *fn)
{
    const ag_function_desc *d = gt->cf->entry->desc;
    fn_grad *g = gt->g;
    pl_request r = {.desc = d, .args = gt->cf->keys};
    if (!pl_trace_args(t, &r, gt->args))
        return false;
    const ir_graph *body = gt->cf->compiled.graph->body;
    for (int j = 0; j < g->n_out; j++)
        if (g->has_dy[j])
            gt->dys[j] = ir_trace_param(t, &body->results[j]->type);
    gt->tape = ag_tape_new_persistent_at(gt->at);
    ag_tape_set_unconnected_at(gt->at, gt->tape, AG_UNCONNECTED_ZERO);
    for (int k = 0; k < g->n_dx; k++)
        ag_tape_watch_at(gt->at, gt->tape, gt->args[g->dx_param[k]].tensor);
    d->trace(gt->args, gt->outs);
    gt->first_late = fn->next_id;
    if (!differentiable(fn->body)) {
        g->eager = true;
        return false;
    }
    return trace_gradients(gt) && ir_trace_set_outputs(t, g->n_out + g->n_dx + g->n_vars, gt->results, gt->at);
}

/* The whole gradient graph of cf: NULL when there is none (g says why)
 * or after reporting an error. */
static ir_function *trace_grad_graph(const ag_concrete_function *cf, fn_grad *g,
                                     int *first_late)
{
    const ag_function_desc *d = cf->entry->desc;
    size_t np = (size_t)d->n_params + 1, no = (size_t)d->n_outputs + 1;
    grad_trace gt = {cf, g, {d->file, d->line}, calloc(np, sizeof(ag_arg)),
                     calloc(no, sizeof(ag_tensor)), calloc(no, sizeof(ag_tensor)), NULL, NULL, 0};
    ir_function *fn = ir_function_new(d->name);
    uint64_t errors = rt_error_count();
    ir_trace *t = ir_trace_begin(fn);
    ag_scope_push();
    bool ok = trace_body(&gt, t, fn);
    if (gt.tape)
        ag_tape_free_at(gt.at, gt.tape);
    ag_scope_pop_at(gt.at);
    ok = ir_trace_end(t) && ok && rt_error_count() == errors;
    *first_late = gt.first_late;
    free(gt.args);
    free(gt.outs);
    free(gt.dys);
    free(gt.results);
    if (!ok) {
        ir_function_free(fn);
        return NULL;
    }
    return fn;
}

/* Compiles one half for cf's target; false after reporting. */
static bool compile_half(const ag_concrete_function *cf, ir_function *half, pl_result *out)
{
    pl_request r = {.desc = cf->entry->desc, .graph = half, .stop = PL_COMPILED,
                    .target = cf->compiled.target};
    return pl_run(&r, out);
}

static bool build(const ag_concrete_function *cf, fn_grad *g)
{
    plan(cf, g);
    if (!g->n_dy) {
        g->constant = true;
        return true;
    }
    int first_late = 0, n_cut = 0;
    ir_function *whole = trace_grad_graph(cf, g, &first_late);
    if (!whole)
        return g->eager || g->constant;
    ir_function *fwd = NULL, *bwd = NULL;
    char err[512];
    bool ok = ir_split(whole, g->n_dy, g->n_dx + g->n_vars, first_late, &fwd, &bwd, &n_cut,
                       err, sizeof err);
    ir_function_free(whole);
    if (!ok) {
        rt_report((ag_loc){cf->entry->desc->file, cf->entry->desc->line},
                  "internal error: the gradient graph of '%s' cannot be split: %s",
                  cf->entry->desc->name, err);
        return false;
    }
    g->n_saved = n_cut;
    ok = compile_half(cf, fwd, &g->forward);
    if (ok)
        ok = compile_half(cf, bwd, &g->backward);
    else
        ir_function_free(bwd);
    return ok;
}

/* cf's gradient halves, made at its first call on a tape (under the
 * entry's lock, so that concurrent first calls make them once); NULL
 * after reporting an error. */
static fn_grad *grad_of(ag_concrete_function *cf)
{
    fn_entry *e = cf->entry;
    pthread_mutex_lock(&e->lock);
    if (!cf->grad) {
        fn_grad *g = calloc(1, sizeof *g);
        if (build(cf, g))
            cf->grad = g;
        else
            fn_grad_free(g);
    }
    fn_grad *g = cf->grad;
    pthread_mutex_unlock(&e->lock);
    return g;
}

/* ------------------------------------------------------------ one call */

/* What a call's tape entries keep: the values its backward reads. */
typedef struct grad_call {
    rt_tape_ctx base;
    ag_concrete_function *cf;
    rt_value **saved; /* the forward's cut */
    rt_value **args;  /* the tensor arguments, for a gradient op by op */
} grad_call;

static void call_release(rt_tape_ctx *ctx)
{
    grad_call *c = (grad_call *)ctx;
    const fn_grad *g = c->cf->grad;
    for (int i = 0; i < g->n_saved; i++)
        rt_value_free(c->saved[i]);
    for (int i = 0; i < g->n_in; i++)
        rt_value_free(c->args[i]);
    free(c->saved);
    free(c->args);
    fn_concrete_unref(c->cf);
    free(c);
}

static bool call_backward(void *ctx, ag_loc loc, rt_value *const *in, int n_in,
                          rt_value *const *out, rt_value *const *dy, int n_out,
                          const bool *want, rt_value **dx);

/* The tensor arguments' values, in parameter order. */
static rt_value **tensor_args(const ag_concrete_function *cf, ag_loc loc, const ag_arg *args)
{
    const ag_function_desc *d = cf->entry->desc;
    rt_value **in = calloc((size_t)cf->grad->n_in + 1, sizeof *in);
    for (int i = 0, k = 0; i < d->n_params; i++)
        if (d->param_kinds[i] == AG_ARG_TENSOR || d->param_kinds[i] == AG_ARG_TENSOR_ARRAY)
            if (!(in[k++] = rt_handle_get(loc, args[i].tensor))) {
                free(in);
                return NULL;
            }
    return in;
}

/* Records the call on the tapes: operands the float tensor arguments and
 * a read of each variable, results the function's. */
static void record_call(const ag_concrete_function *cf, ag_loc loc, grad_call *c,
                        rt_value *const *in, rt_value *const *res)
{
    const fn_grad *g = cf->grad;
    rt_value **ops = calloc((size_t)(g->n_dx + g->n_vars) + 1, sizeof *ops);
    const ag_function_desc *d = cf->entry->desc;
    for (int k = 0, t = 0, i = 0; i < d->n_params; i++) {
        bool tensor = d->param_kinds[i] == AG_ARG_TENSOR || d->param_kinds[i] == AG_ARG_TENSOR_ARRAY;
        if (k < g->n_dx && g->dx_param[k] == i)
            ops[k++] = in[t];
        t += tensor;
    }
    for (int v = 0; v < g->n_vars; v++)
        ops[g->n_dx + v] = rt_apply(loc, RT_OP_VAR_READ, &(rt_attrs){.ref = g->vars[v]}, NULL, 0);
    rt_tape_record_owned(loc, d->name, ops, g->n_dx + g->n_vars, res, g->n_out, call_backward,
                         &c->base);
    for (int v = 0; v < g->n_vars; v++)
        rt_value_free(ops[g->n_dx + v]);
    free(ops);
}

static bool run_forward(ag_concrete_function *cf, ag_loc loc, const ag_arg *args,
                        ag_tensor *outputs)
{
    const fn_grad *g = cf->grad;
    rt_value **in = tensor_args(cf, loc, args);
    rt_value **res = calloc((size_t)(g->n_out + g->n_saved) + 1, sizeof *res);
    bool ok = in && pl_execute(&g->forward, in, g->n_in, res);
    if (ok) {
        grad_call *c = calloc(1, sizeof *c);
        c->base = (rt_tape_ctx){1, call_release};
        fn_concrete_ref(cf);
        c->cf = cf;
        c->saved = calloc((size_t)g->n_saved + 1, sizeof *c->saved);
        memcpy(c->saved, res + g->n_out, (size_t)g->n_saved * sizeof *res);
        c->args = calloc((size_t)g->n_in + 1, sizeof *c->args);
        for (int i = 0; i < g->n_in; i++)
            c->args[i] = rt_tape_alias(in[i]);
        record_call(cf, loc, c, in, res);
        rt_tape_ctx_unref(&c->base);
    }
    for (int j = 0; j < g->n_out; j++)
        outputs[j] = ok ? rt_handle_new(res[j]) : rt_error_tensor();
    free(in);
    free(res);
    return ok;
}

bool fn_grad_call(ag_concrete_function *cf, ag_loc loc, const ag_arg *args,
                  ag_tensor *outputs, bool *handled)
{
    fn_grad *g = grad_of(cf);
    *handled = !g || !g->eager;
    if (!g) {
        for (int j = 0; j < cf->entry->desc->n_outputs; j++)
            outputs[j] = rt_error_tensor();
        return false;
    }
    if (g->eager)
        return true;
    if (g->constant)
        return fn_concrete_call(loc, cf, args, outputs);
    return run_forward(cf, loc, args, outputs);
}

/* ------------------------------------------------------------ backward */

/* The backward's parameters: the cut, then a gradient per float result
 * (zeros where none reached it). */
static rt_value **backward_params(const grad_call *c, rt_value *const *out,
                                  rt_value *const *dy, rt_value **zeros)
{
    const fn_grad *g = c->cf->grad;
    rt_value **p = calloc((size_t)(g->n_saved + g->n_dy) + 1, sizeof *p);
    memcpy(p, c->saved, (size_t)g->n_saved * sizeof *p);
    for (int j = 0, k = g->n_saved; j < g->n_out; j++) {
        if (!g->has_dy[j])
            continue;
        if (!dy[j])
            zeros[j] = rt_value_zeros(out[j]->dtype, &out[j]->shape);
        p[k++] = dy[j] ? dy[j] : zeros[j];
    }
    return p;
}

static bool compiled_backward(const grad_call *c, rt_value *const *out, rt_value *const *dy,
                              const bool *want, rt_value **dx)
{
    const fn_grad *g = c->cf->grad;
    rt_value **zeros = calloc((size_t)g->n_out + 1, sizeof *zeros);
    rt_value **p = backward_params(c, out, dy, zeros);
    int n = g->n_dx + g->n_vars;
    rt_value **res = calloc((size_t)n + 1, sizeof *res);
    bool ok = pl_execute(&g->backward, p, g->n_saved + g->n_dy, res);
    for (int i = 0; i < n; i++) {
        if (ok && want[i])
            dx[i] = res[i];
        else
            rt_value_free(res[i]);
    }
    for (int j = 0; j < g->n_out; j++)
        rt_value_free(zeros[j]);
    free(zeros);
    free(p);
    free(res);
    return ok;
}

/* The call's arguments again, the tensors as the tape's values (in: the
 * float ones, which the tapes know by their ids). */
static ag_arg *args_again(const grad_call *c, rt_value *const *in)
{
    const ag_function_desc *d = c->cf->entry->desc;
    const fn_grad *g = c->cf->grad;
    ag_arg *a = calloc((size_t)d->n_params + 1, sizeof *a);
    for (int i = 0, k = 0, t = 0; i < d->n_params; i++) {
        const pl_arg *key = &c->cf->keys[i];
        a[i] = (ag_arg){.kind = key->kind, .variable = key->var, .optimizer = key->opt,
                        .i = key->i, .f = key->f};
        if (key->kind != AG_ARG_TENSOR && key->kind != AG_ARG_TENSOR_ARRAY)
            continue;
        bool watched = k < g->n_dx && g->dx_param[k] == i;
        a[i].tensor = rt_handle_new(rt_tape_alias(watched ? in[k++] : c->args[t]));
        t++;
    }
    return a;
}

/* The gradient op by op, for a tape that records it (a gradient of a
 * gradient): the body runs eagerly under a tape of its own. */
static bool eager_backward(const grad_call *c, ag_loc loc, rt_value *const *in,
                           rt_value *const *dy, const bool *want, rt_value **dx)
{
    const ag_function_desc *d = c->cf->entry->desc;
    const fn_grad *g = c->cf->grad;
    ag_scope_push();
    ag_tape tape = ag_tape_new_persistent_at(loc);
    ag_tape_set_unconnected_at(loc, tape, AG_UNCONNECTED_ZERO);
    ag_arg *a = args_again(c, in);
    for (int k = 0; k < g->n_dx; k++)
        ag_tape_watch_at(loc, tape, a[g->dx_param[k]].tensor);
    ag_tensor *outs = calloc((size_t)g->n_out + 1, sizeof *outs);
    ag_tensor *dys = calloc((size_t)g->n_out + 1, sizeof *dys);
    d->trace(a, outs);
    for (int j = 0; j < g->n_out; j++)
        if (g->has_dy[j])
            dys[j] = dy[j] ? rt_handle_new(rt_tape_alias(dy[j]))
                           : ag_fill_like_at(loc, outs[j], 0.0);
    ag_tensor target = rt_weighted_sum(loc, g->n_out, outs, dys);
    ag_tensor *grads = calloc((size_t)(g->n_dx + g->n_vars) + 1, sizeof *grads);
    ag_tensor *src = calloc((size_t)g->n_dx + 1, sizeof *src);
    for (int k = 0; k < g->n_dx; k++)
        src[k] = a[g->dx_param[k]].tensor;
    bool ok = (!g->n_dx || ag_tape_gradients_at(loc, tape, target, g->n_dx, src, grads)) &&
              (!g->n_vars || ag_tape_gradients_variables_at(loc, tape, target, g->n_vars,
                                                            (const ag_variable *)g->vars,
                                                            grads + g->n_dx));
    for (int i = 0; ok && i < g->n_dx + g->n_vars; i++) {
        rt_value *v = want[i] ? rt_handle_get(loc, grads[i]) : NULL;
        dx[i] = v ? rt_tape_alias(v) : NULL;
    }
    ag_tape_free_at(loc, tape);
    ag_scope_pop_at(loc);
    free(a);
    free(outs);
    free(dys);
    free(grads);
    free(src);
    return ok;
}

static bool call_backward(void *ctx, ag_loc loc, rt_value *const *in, int n_in,
                          rt_value *const *out, rt_value *const *dy, int n_out,
                          const bool *want, rt_value **dx)
{
    (void)n_in, (void)n_out;
    const grad_call *c = ctx;
    if (rt_tape_recording_here())
        return eager_backward(c, loc, in, dy, want, dx);
    return compiled_backward(c, out, dy, want, dx);
}
