/*
 * staged.c - staged control flow: the runtime side of agc's conversion.
 *
 * ag_if_at and ag_while_at run as plain C control flow when nothing is
 * being traced. While tracing, they trace both branches (or the loop's
 * condition and body, once) into regions of a cond or while node, check the
 * rules of dsl.md (branch outputs agree in dtype; loop variables keep their
 * dtype and shape), and leave the tensor variables holding the node's
 * results.
 */
#include "trace_internal.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ eager */

static bool eager_condition(ag_loc loc, ag_tensor c, bool *ok)
{
    rt_value *v = rt_handle_get(loc, c);
    *ok = v != NULL;
    return v && ag_bool_at(loc, c);
}

static void eager_if(ag_loc loc, ag_tensor pred, ag_body_fn then_fn, ag_body_fn else_fn,
                     void *state)
{
    bool ok;
    bool taken = eager_condition(loc, pred, &ok);
    if (!ok)
        return;
    if (taken)
        then_fn(state);
    else if (else_fn)
        else_fn(state);
}

/* Whether handle h is the current value of one of the variables. */
static bool is_current(ag_tensor h, int n_vars, ag_tensor *const *vars)
{
    for (int i = 0; i < n_vars; i++)
        if (vars[i]->id == h.id && vars[i]->gen == h.gen)
            return true;
    return false;
}

/* Each iteration runs in its own scope. A value an iteration made for a
 * variable is kept (moved to the caller's scope) and freed once a later
 * iteration replaced it, so an eager loop holds only its variables' latest
 * values however long it runs. Values the loop did not make (the initial
 * ones, or outer tensors assigned to a variable) are never freed here. */
static void eager_while(ag_loc loc, int n_vars, ag_tensor *const *vars, ag_cond_fn cond,
                        ag_body_fn body, void *state)
{
    size_t n = (size_t)n_vars + 1;
    ag_tensor *kept = rt_xcalloc(n, sizeof *kept);
    bool *made = rt_xcalloc(n, sizeof *made); /* kept[i] was made by the loop */
    for (;;) {
        ag_scope_push();
        bool ok;
        bool go = eager_condition(loc, cond(state), &ok);
        if (go)
            body(state);
        for (int i = 0; i < n_vars; i++) {
            bool moved = rt_handle_keep(*vars[i]);
            bool same = vars[i]->id == kept[i].id && vars[i]->gen == kept[i].gen;
            if (!same && made[i] && !is_current(kept[i], n_vars, vars))
                ag_free_at(loc, kept[i]);
            if (!same) {
                made[i] = moved;
                kept[i] = *vars[i];
            }
        }
        ag_scope_pop_at(loc);
        if (!go || !ok)
            break;
    }
    free(kept);
    free(made);
}

/* ------------------------------------------------------------- helpers */

static const char *type_name(const ir_type *t, char *buf, size_t n)
{
    return ir_type_str(t, buf, n);
}

/* Shapes agree for a loop variable: a -1 dim of `want` admits any dim, and
 * a tensor array whose element shape is unknown admits any element shape. */
static bool shape_admits(const ag_shape *want, const ag_shape *got)
{
    if (want->rank < 0)
        return true;
    if (want->rank != got->rank)
        return false;
    for (int i = 0; i < want->rank; i++)
        if (want->dims[i] >= 0 && want->dims[i] != got->dims[i])
            return false;
    return true;
}

/* Turns a condition into a bool scalar node, as ag_bool reads it. */
static ir_node *condition_node(ir_trace *t, ag_tensor c, ag_loc loc)
{
    rt_value *v = rt_handle_get(loc, c);
    if (!v)
        return NULL;
    char buf[160];
    if (v->dtype == RT_LIST || v->shape.rank < 0 || rt_shape_numel(&v->shape) != 1) {
        rt_report(loc, "a staged condition must be a scalar, got %s; reduce it first "
                       "(ag_reduce_any or ag_reduce_all for bools, ag_reduce_sum or "
                       "ag_reduce_max for numbers)",
                  v->dtype == RT_LIST ? "a tensor array"
                                      : rt_shape_str(&v->shape, buf, sizeof buf));
        return NULL;
    }
    if (v->shape.rank > 0)
        c = ag_reshape_at(loc, c, AG_SCALAR);
    if (v->dtype != AG_BOOL)
        c = ag_cast_at(loc, c, AG_BOOL);
    bool undefined;
    return ir_trace_node_of_handle(t, c, loc, &undefined);
}

/* The captures of several frames, unique by the captured node, in order. */
int ir_union_captures(ir_frame *const *frames, int nf, ir_capture **out)
{
    int n = 0, cap = 0;
    ir_capture *u = NULL;
    for (int f = 0; f < nf; f++) {
        for (int i = 0; i < frames[f]->n_caps; i++) {
            ir_capture c = frames[f]->caps[i];
            bool seen = false;
            for (int j = 0; j < n && !seen; j++)
                seen = u[j].key == c.key;
            if (seen)
                continue;
            if (n == cap) {
                cap = cap ? cap * 2 : 8;
                u = rt_xrealloc(u, (size_t)cap * sizeof *u);
            }
            u[n++] = c;
        }
    }
    *out = u;
    return n;
}

/* Gives region f the parameters [its first n_fixed, then the union's
 * captures in union order], adding unused ones it lacks. */
void ir_align_params(ir_frame *f, int n_fixed, const ir_capture *u, int nu)
{
    ir_graph *g = f->g;
    ir_node **params = ir_alloc(g->fn->arena, (size_t)(n_fixed + nu + 1) * sizeof *params);
    if (n_fixed)
        memcpy(params, g->params, (size_t)n_fixed * sizeof *params);
    for (int j = 0; j < nu; j++) {
        ir_node *p = NULL;
        for (int i = 0; i < f->n_caps && !p; i++)
            if (f->caps[i].key == u[j].key)
                p = f->caps[i].param;
        if (!p)
            p = ir_add_param(g, &u[j].key->type);
        p->index = n_fixed + j;
        params[n_fixed + j] = p;
    }
    g->params = params;
    g->n_params = n_fixed + nu;
}

/* ------------------------------------------------------------- staged if */

typedef struct branch {
    ir_frame f;
    ir_node **outs;
    bool *undef;
} branch;

static bool trace_branch(ir_trace *t, branch *b, ag_body_fn fn, void *state, int n_vars,
                         ag_tensor *const *vars, const ag_tensor *saved, ag_loc loc)
{
    bool ok = true;
    ir_frame_push(t, &b->f, ir_graph_new(t->fn));
    if (fn)
        fn(state);
    for (int i = 0; i < n_vars; i++) {
        b->outs[i] = ir_trace_node_of_handle(t, *vars[i], loc, &b->undef[i]);
        ok &= b->outs[i] != NULL || b->undef[i];
    }
    ir_frame_pop(t, &b->f);
    for (int i = 0; i < n_vars; i++)
        *vars[i] = saved[i];
    return ok && !t->failed;
}

/* The type of variable i after the if, or false after reporting. */
static bool merge_branch_types(ag_loc loc, const char *name, const ir_type *a,
                               const ir_type *b, ir_type *out)
{
    char b1[160], b2[160];
    if (a->dtype != b->dtype || (a->dtype == RT_LIST && a->elem_dtype != b->elem_dtype)) {
        rt_report(loc, "'%s' is %s in the then branch but %s in the else branch; both "
                       "branches must give it the same dtype", name,
                  type_name(a, b1, sizeof b1), type_name(b, b2, sizeof b2));
        return false;
    }
    *out = *a;
    if (a->shape.rank != b->shape.rank) {
        if (a->dtype == RT_LIST) {
            out->shape.rank = -1;
            return true;
        }
        rt_report(loc, "'%s' is %s in the then branch but %s in the else branch; both "
                       "branches must give it the same rank", name,
                  type_name(a, b1, sizeof b1), type_name(b, b2, sizeof b2));
        return false;
    }
    for (int d = 0; d < a->shape.rank; d++)
        if (a->shape.dims[d] != b->shape.dims[d])
            out->shape.dims[d] = -1;
    return true;
}

/* A zero of `type` appended to a branch's region. */
static ir_node *zero_in(ir_graph *g, const ir_type *type, ag_loc loc)
{
    rt_attrs a = {.dtype = type->dtype, .shape = type->shape};
    for (int d = 0; d < a.shape.rank; d++)
        if (a.shape.dims[d] < 0)
            a.shape.dims[d] = 0;
    ir_type ty = *type;
    ty.shape = a.shape;
    return ir_append(g, RT_OP_FILL, &a, 0, NULL, &ty, loc);
}

/* agc's own variables (named "<return value>" and the like) may stay
 * undefined in a branch that did not return: a flag guards every use, so
 * a zero of the other branch's type stands in for it. */
static void fill_internal(ag_loc loc, int n_vars, const char *const *names, branch *br)
{
    for (int i = 0; i < n_vars; i++) {
        if (names[i][0] != '<' || br[0].undef[i] == br[1].undef[i])
            continue;
        int u = br[0].undef[i] ? 0 : 1;
        br[u].outs[i] = zero_in(br[u].f.g, &br[1 - u].outs[i]->type, loc);
        br[u].undef[i] = false;
    }
}

/* Which variables the if defines; false after reporting one that only a
 * single branch initializes. */
static bool defined_outputs(ag_loc loc, int n_vars, const char *const *names,
                            const branch *br, bool *defined)
{
    for (int i = 0; i < n_vars; i++) {
        defined[i] = !br[0].undef[i] && !br[1].undef[i];
        if (br[0].undef[i] != br[1].undef[i]) {
            rt_report(loc, "'%s' must also be initialized in the %s branch", names[i],
                      br[0].undef[i] ? "then" : "else");
            return false;
        }
    }
    return true;
}

static ir_node *build_cond(ir_trace *t, ag_loc loc, ir_node *pred, int n_vars,
                       ag_tensor *const *vars, branch *br, const bool *defined,
                       const ir_type *types)
{
    ir_frame *frames[2] = {&br[0].f, &br[1].f};
    ir_capture *u;
    int nu = ir_union_captures(frames, 2, &u);
    ir_node **ins = rt_xmalloc((size_t)(nu + 1) * sizeof *ins);
    ir_node **res = rt_xmalloc((size_t)(n_vars + 1) * sizeof *res);
    ir_type *rtypes = rt_xmalloc((size_t)(n_vars + 1) * sizeof *rtypes);
    ins[0] = pred;
    for (int j = 0; j < nu; j++)
        ins[j + 1] = u[j].outer;
    int k = 0;
    for (int i = 0; i < n_vars; i++)
        if (defined[i])
            rtypes[k++] = types[i];
    for (int b = 0; b < 2; b++) {
        ir_align_params(frames[b], 0, u, nu);
        int r = 0;
        for (int i = 0; i < n_vars; i++)
            if (defined[i])
                res[r++] = br[b].outs[i];
        ir_set_results(frames[b]->g, k, res);
    }
    ir_node *node = ir_append_region_op(t->cur->g, IR_COND, nu + 1, ins, frames[0]->g,
                                        frames[1]->g, k, rtypes, loc);
    for (int i = 0, j = 0; i < n_vars; i++)
        if (defined[i])
            *vars[i] = ir_symbolic_handle(ir_append_get(t->cur->g, node, j++, loc));
    free(u);
    free(ins);
    free(res);
    free(rtypes);
    return node;
}

/* Records the cond on the gradient tapes (staged_grad.c), its results
 * those of the variables it defines. */
static void record_cond(ir_node *cond, int n_vars, ag_tensor *const *vars, const bool *defined,
                        ag_loc loc)
{
    if (!rt_tapes_recording)
        return;
    rt_value **outs = rt_xcalloc((size_t)n_vars + 1, sizeof *outs);
    int n = 0;
    for (int i = 0; i < n_vars; i++)
        if (defined[i])
            outs[n++] = rt_handle_peek(*vars[i]);
    ir_tape_record_cond(cond, outs, n, loc);
    free(outs);
}

/* A gradient tape recording this graph cannot see inside a staged loop
 * yet: it notes its results so that a gradient reaching them is an error. */
static void tape_sees_opaque(ag_loc loc, const char *what, int n_vars, ag_tensor *const *vars)
{
    if (!rt_tapes_recording)
        return;
    rt_value **outs = rt_xcalloc((size_t)n_vars + 1, sizeof *outs);
    int n = 0;
    for (int i = 0; i < n_vars; i++) /* tensor arrays too: they carry gradients */
        if ((outs[n] = rt_handle_peek(*vars[i])))
            n++;
    rt_tape_record_custom(loc, what, NULL, 0, outs, n, NULL, NULL);
    free(outs);
}

static void traced_if(ir_trace *t, ag_loc loc, ag_tensor pred, int n_vars,
                      ag_tensor *const *vars, const char *const *names, ag_body_fn then_fn,
                      ag_body_fn else_fn, void *state)
{
    size_t nv = (size_t)(n_vars ? n_vars : 1);
    ag_tensor *saved = rt_xmalloc(nv * sizeof *saved);
    branch br[2];
    bool *defined = rt_xcalloc(nv, sizeof *defined);
    ir_type *types = rt_xcalloc(nv, sizeof *types);
    for (int b = 0; b < 2; b++) {
        br[b].outs = rt_xcalloc(nv, sizeof *br[b].outs);
        br[b].undef = rt_xcalloc(nv, sizeof *br[b].undef);
        memset(&br[b].f, 0, sizeof br[b].f);
    }
    for (int i = 0; i < n_vars; i++)
        saved[i] = *vars[i];
    ir_node *p = condition_node(t, pred, loc);
    bool ok = p && trace_branch(t, &br[0], then_fn, state, n_vars, vars, saved, loc) &&
              trace_branch(t, &br[1], else_fn, state, n_vars, vars, saved, loc);
    if (ok)
        fill_internal(loc, n_vars, names, br);
    ok = ok && defined_outputs(loc, n_vars, names, br, defined);
    for (int i = 0; ok && i < n_vars; i++)
        if (defined[i])
            ok = merge_branch_types(loc, names[i], &br[0].outs[i]->type,
                                    &br[1].outs[i]->type, &types[i]);
    if (ok) {
        ir_node *cond = build_cond(t, loc, p, n_vars, vars, br, defined, types);
        record_cond(cond, n_vars, vars, defined, loc);
    } else {
        t->failed = true;
    }
    for (int b = 0; b < 2; b++) {
        ir_frame_release(&br[b].f);
        free(br[b].outs);
        free(br[b].undef);
    }
    free(saved);
    free(defined);
    free(types);
}

void ag_if_at(ag_loc loc, ag_tensor pred, int n_vars, ag_tensor *const *vars,
              const char *const *names, ag_body_fn then_fn, ag_body_fn else_fn, void *state)
{
    ir_trace *t = ir_trace_current();
    if (!t)
        eager_if(loc, pred, then_fn, else_fn, state);
    else
        traced_if(t, loc, pred, n_vars, vars, names, then_fn, else_fn, state);
}

/* ---------------------------------------------------------- staged while */

/* The loop's variables while it is traced. Index n_vars is an internal
 * flag, present when some variable is undefined on entry: it records
 * whether the body ran, so that using such a variable after a loop that
 * never iterated fails at run time instead of reading garbage. */
typedef struct ir_loop {
    ag_loc loc;
    int n_vars, n; /* user variables; all (with the flag) */
    ag_tensor *const *vars;
    const char *const *names;
    ir_node **init;
    bool *undef;
    ir_type *ptype; /* the parameter (loop-carried) types */
    ir_type *before; /* types on entry, for messages */
    ir_node **outs;
    ir_node *cond_out;
    ir_frame fc, fb;
    bool has_flag;
    /* agc's variables ("<return value>") undefined on entry that the body
     * does not set either in this trace (the return that sets it is under
     * a C condition that is false): they are no loop variables, and stay
     * undefined; vars and names then point at own copies without them. */
    ag_tensor **kept_vars;
    const char **kept_names;
    ag_tensor **dropped;
    int n_dropped;
    /* ag_set_loop_options at the top of the body (ir_loop_take_option):
     * the frame the body is traced into, the shapes set, and whether one
     * differs from the parameter type the body was traced with (it is
     * traced again with the relaxed types). */
    ir_frame *body_frame;
    ag_shape *relax;
    bool *relaxed;
    bool again;
    struct ir_loop *outer;
} loop;

/* Traces the body once in a throwaway region to learn the types of
 * variables that are undefined (or tensor arrays of unknown element
 * shape) on entry. */
static bool discover_types(ir_trace *t, loop *L, ag_body_fn body, void *state)
{
    ir_frame fd;
    ir_graph *scratch = ir_graph_new(t->fn);
    ag_tensor *saved = rt_xmalloc((size_t)L->n_vars * sizeof *saved);
    bool ok = true;
    ir_frame_push(t, &fd, scratch);
    for (int i = 0; i < L->n_vars; i++) {
        saved[i] = *L->vars[i];
        if (!L->undef[i])
            *L->vars[i] = ir_symbolic_handle(ir_add_param(scratch, &L->ptype[i]));
    }
    L->body_frame = &fd;
    body(state);
    L->body_frame = NULL;
    for (int i = 0; i < L->n_vars && ok; i++) {
        bool undefined;
        ir_node *n = ir_trace_node_of_handle(t, *L->vars[i], L->loc, &undefined);
        if (undefined && L->names[i][0] == '<') {
            L->dropped[L->n_dropped++] = L->vars[i]; /* a flag guards every use */
            continue;
        }
        if (undefined)
            rt_report(L->loc, "'%s' is not initialized before the loop nor by its body",
                      L->names[i]);
        ok = n != NULL;
        if (ok && (L->undef[i] || (L->ptype[i].dtype == RT_LIST && L->ptype[i].shape.rank < 0)))
            L->ptype[i] = n->type;
    }
    ir_frame_pop(t, &fd);
    ir_frame_release(&fd);
    for (int i = 0; i < L->n_vars; i++)
        *L->vars[i] = saved[i];
    free(saved);
    return ok && !t->failed;
}

static bool is_dropped(const loop *L, ag_tensor *const var)
{
    for (int k = 0; k < L->n_dropped; k++)
        if (L->dropped[k] == var)
            return true;
    return false;
}

/* Removes the dropped variables from the loop's (discover_types). */
static void remove_dropped(loop *L)
{
    if (!L->n_dropped)
        return;
    L->kept_vars = rt_xmalloc((size_t)L->n_vars * sizeof *L->kept_vars);
    L->kept_names = rt_xmalloc((size_t)L->n_vars * sizeof *L->kept_names);
    int k = 0;
    for (int i = 0; i < L->n_vars; i++) {
        if (is_dropped(L, L->vars[i]))
            continue;
        L->kept_vars[k] = L->vars[i];
        L->kept_names[k] = L->names[i];
        L->init[k] = L->init[i];
        L->undef[k] = L->undef[i];
        L->ptype[k] = L->ptype[i];
        L->before[k] = L->before[i];
        k++;
    }
    L->vars = (ag_tensor *const *)L->kept_vars;
    L->names = L->kept_names;
    L->n_vars = L->n = k;
}

/* A dropped variable the body set after all (a trace that differs from
 * the first): its value would escape the loop's region. */
static bool dropped_still_undefined(const loop *L)
{
    for (int k = 0; k < L->n_dropped; k++) {
        ag_tensor h = *L->dropped[k];
        if (h.id != 0 || h.gen != 0) {
            rt_report(L->loc, "the loop body set an internal variable in one trace and "
                              "not in another: its C conditions must not change between "
                              "traces");
            *L->dropped[k] = (ag_tensor){0, 0};
            return false;
        }
    }
    return true;
}

/* A zero initial value for a variable undefined on entry. */
static ir_node *placeholder(ir_trace *t, const ir_type *type, ag_loc loc)
{
    return zero_in(t->cur->g, type, loc);
}

static ir_node *bool_const(ir_trace *t, bool v, ag_loc loc)
{
    rt_value *c = rt_value_scalar(AG_BOOL, v);
    ir_node *n = ir_append_const(t->cur->g, c, loc);
    rt_value_free(c);
    return n;
}

static bool same_shape(const ag_shape *a, const ag_shape *b)
{
    if (a->rank != b->rank)
        return false;
    for (int d = 0; d < a->rank; d++)
        if (a->dims[d] != b->dims[d])
            return false;
    return true;
}

/* ag_set_loop_options at the top of the body of the loop being traced
 * (before any statement that traced an op: TensorFlow's rule for
 * set_loop_options): applies to that loop if it carries the variable.
 * False when it is not such a call; the invariant then waits for the next
 * loop. */
bool ir_loop_take_option(ir_trace *t, const ir_invariant *inv)
{
    loop *L = t->loop;
    if (!L || !L->body_frame || t->cur != L->body_frame || t->cur->g->first)
        return false;
    for (int i = 0; i < L->n_vars; i++) {
        if (!ir_invariant_is_for(inv, L->vars[i], L->names[i]))
            continue;
        L->relax[i] = inv->shape;
        L->relaxed[i] = true;
        L->again |= !same_shape(&L->ptype[i].shape, &inv->shape);
        return true;
    }
    return false;
}

/* An invariant must have the variable's rank (only dims may be -1): the
 * loop's parameter would not match its initial value. */
static bool invariant_fits(const loop *L, int i, const ag_shape *inv)
{
    const ag_shape *have = &L->ptype[i].shape;
    if (have->rank < 0 || have->rank == inv->rank)
        return true;
    char b1[160], b2[160];
    rt_report(L->loc, "ag_set_loop_options: '%s' has shape %s before the loop, but the "
                      "invariant %s has another rank; only dims may be -1",
              L->names[i], rt_shape_str(have, b1, sizeof b1), rt_shape_str(inv, b2, sizeof b2));
    return false;
}

/* The loop-carried types with the shapes set in the body. */
static bool apply_relaxed(loop *L)
{
    bool ok = true;
    for (int i = 0; i < L->n_vars && ok; i++) {
        if (!L->relaxed[i])
            continue;
        ok = invariant_fits(L, i, &L->relax[i]);
        if (ok)
            L->ptype[i].shape = L->relax[i];
    }
    memset(L->relaxed, 0, (size_t)L->n_vars * sizeof *L->relaxed); /* set again by each trace */
    L->again = false;
    return ok;
}

static bool loop_entry(ir_trace *t, loop *L, ag_body_fn body, void *state)
{
    bool need_discovery = false;
    for (int i = 0; i < L->n_vars; i++) {
        L->init[i] = ir_trace_node_of_handle(t, *L->vars[i], L->loc, &L->undef[i]);
        if (!L->init[i] && !L->undef[i])
            return false;
        if (!L->undef[i]) {
            L->ptype[i] = L->before[i] = L->init[i]->type;
            ag_shape inv;
            if (ir_trace_take_invariant(t, L->vars[i], L->names[i], &inv)) {
                if (!invariant_fits(L, i, &inv))
                    return false;
                L->ptype[i].shape = inv;
            }
        }
        need_discovery |= L->undef[i] ||
                          (L->ptype[i].dtype == RT_LIST && L->ptype[i].shape.rank < 0);
        L->has_flag |= L->undef[i];
    }
    if (need_discovery && !discover_types(t, L, body, state))
        return false;
    if (!apply_relaxed(L))
        return false;
    remove_dropped(L);
    L->has_flag = false;
    for (int i = 0; i < L->n_vars; i++)
        L->has_flag |= L->undef[i];
    for (int i = 0; i < L->n_vars; i++) {
        if (L->undef[i])
            L->init[i] = placeholder(t, &L->ptype[i], L->loc);
        if (L->undef[i])
            L->before[i] = L->ptype[i];
    }
    if (L->has_flag) {
        L->init[L->n_vars] = bool_const(t, false, L->loc);
        L->ptype[L->n_vars] = L->before[L->n_vars] = L->init[L->n_vars]->type;
        L->n = L->n_vars + 1;
    }
    return true;
}

/* Pushes a region frame whose parameters are the loop variables, and
 * points the user's variables at them. */
static void enter_region(ir_trace *t, loop *L, ir_frame *f, ir_node **params)
{
    ir_frame_push(t, f, ir_graph_new(t->fn));
    for (int i = 0; i < L->n; i++) {
        params[i] = ir_add_param(f->g, &L->ptype[i]);
        if (i < L->n_vars)
            *L->vars[i] = ir_symbolic_handle(params[i]);
    }
}

static bool check_carried(const loop *L, int i, const ir_type *after)
{
    char b1[160], b2[160];
    const ir_type *want = &L->ptype[i];
    const char *name = L->names[i];
    if (after->dtype != want->dtype ||
        (want->dtype == RT_LIST && after->elem_dtype != want->elem_dtype)) {
        rt_report(L->loc, "'%s' has dtype %s before the loop, but dtype %s after one "
                          "iteration", name,
                  ag_dtype_name(want->dtype == RT_LIST ? want->elem_dtype : want->dtype),
                  ag_dtype_name(after->dtype == RT_LIST ? after->elem_dtype : after->dtype));
        return false;
    }
    if (!shape_admits(&want->shape, &after->shape)) {
        rt_report(L->loc, "'%s' has shape %s before the loop, but shape %s after one "
                          "iteration; if the shape may change, declare it with "
                          "ag_set_loop_options at the top of the loop body", name,
                  rt_shape_str(&L->before[i].shape, b1, sizeof b1),
                  rt_shape_str(&after->shape, b2, sizeof b2));
        return false;
    }
    return true;
}

/* How tracing a loop's regions ended: AGAIN when the body relaxed a
 * variable's shape at its top, so both regions must be traced again with
 * the relaxed parameter types. */
typedef enum { REGIONS_FAILED, REGIONS_OK, REGIONS_AGAIN } regions_result;

static regions_result trace_loop_regions(ir_trace *t, loop *L, ag_cond_fn cond,
                                         ag_body_fn body, void *state)
{
    ir_node **params = rt_xmalloc((size_t)L->n * sizeof *params);
    bool ok;
    enter_region(t, L, &L->fc, params);
    ag_tensor c = cond(state);
    L->cond_out = t->failed ? NULL : condition_node(t, c, L->loc);
    ir_frame_pop(t, &L->fc);
    ok = L->cond_out != NULL;
    if (ok) {
        enter_region(t, L, &L->fb, params);
        L->body_frame = &L->fb;
        body(state);
        L->body_frame = NULL;
        if (L->again) {
            ir_frame_pop(t, &L->fb);
            free(params);
            return t->failed ? REGIONS_FAILED : REGIONS_AGAIN;
        }
        for (int i = 0; i < L->n_vars && ok; i++) {
            bool undefined;
            L->outs[i] = ir_trace_node_of_handle(t, *L->vars[i], L->loc, &undefined);
            if (undefined)
                rt_report(L->loc, "'%s' is undefined after the loop body", L->names[i]);
            ok = L->outs[i] && check_carried(L, i, &L->outs[i]->type);
        }
        if (ok && L->has_flag)
            L->outs[L->n_vars] = bool_const(t, true, L->loc);
        ok = dropped_still_undefined(L) && ok;
        ir_frame_pop(t, &L->fb);
    }
    free(params);
    return ok && !t->failed ? REGIONS_OK : REGIONS_FAILED;
}

/* Traces the regions, a second time when the body relaxed a shape (the
 * second trace sets the same shapes, so it does not ask again). */
static bool trace_loop(ir_trace *t, loop *L, ag_cond_fn cond, ag_body_fn body, void *state)
{
    regions_result r = trace_loop_regions(t, L, cond, body, state);
    if (r != REGIONS_AGAIN)
        return r == REGIONS_OK;
    ir_frame_release(&L->fc);
    ir_frame_release(&L->fb);
    memset(&L->fc, 0, sizeof L->fc);
    memset(&L->fb, 0, sizeof L->fb);
    if (!apply_relaxed(L))
        return false;
    r = trace_loop_regions(t, L, cond, body, state);
    if (r == REGIONS_AGAIN) {
        rt_report(L->loc, "ag_set_loop_options at the top of the loop body set a "
                          "different shape in a second trace of the body: its C "
                          "conditions must not change between traces");
        return false;
    }
    return r == REGIONS_OK;
}

/* After a loop that initializes variables, fails at run time if it never
 * iterated (their values would be the placeholders). */
static void assert_iterated(ir_trace *t, const loop *L, ir_node *flag)
{
    ag_tensor h = ir_symbolic_handle(flag);
    for (int i = 0; i < L->n_vars; i++) {
        if (!L->undef[i] || L->names[i][0] == '<') /* agc's flags guard these */
            continue;
        char msg[256];
        snprintf(msg, sizeof msg, "loop must iterate at least once to initialize '%s'",
                 L->names[i]);
        ag_assert_at(L->loc, h, msg);
    }
    (void)t;
}

static void build_while(ir_trace *t, loop *L)
{
    ir_frame *frames[2] = {&L->fc, &L->fb};
    ir_capture *u;
    int nu = ir_union_captures(frames, 2, &u);
    int total = L->n + nu;
    ir_node **ins = rt_xmalloc((size_t)total * sizeof *ins);
    ir_node **res = rt_xmalloc((size_t)total * sizeof *res);
    ir_type *types = rt_xmalloc((size_t)total * sizeof *types);
    for (int b = 0; b < 2; b++)
        ir_align_params(frames[b], L->n, u, nu);
    for (int i = 0; i < L->n; i++) {
        ins[i] = L->init[i];
        res[i] = L->outs[i];
        types[i] = L->ptype[i];
    }
    for (int j = 0; j < nu; j++) {
        ins[L->n + j] = u[j].outer;
        res[L->n + j] = L->fb.g->params[L->n + j]; /* invariant: passed through */
        types[L->n + j] = u[j].key->type;
    }
    ir_set_results(L->fc.g, 1, &L->cond_out);
    ir_set_results(L->fb.g, total, res);
    ir_node *node = ir_append_region_op(t->cur->g, IR_WHILE, total, ins, L->fc.g, L->fb.g,
                                        total, types, L->loc);
    for (int i = 0; i < L->n_vars; i++)
        *L->vars[i] = ir_symbolic_handle(ir_append_get(t->cur->g, node, i, L->loc));
    if (L->has_flag)
        assert_iterated(t, L, ir_append_get(t->cur->g, node, L->n_vars, L->loc));
    free(u);
    free(ins);
    free(res);
    free(types);
}

void ir_traced_while(ir_trace *t, ag_loc loc, int n_vars, ag_tensor *const *vars,
                     const char *const *names, ag_cond_fn cond, ag_body_fn body, void *state,
                     bool tell_tapes)
{
    size_t cap = (size_t)n_vars + 1;
    loop L = {.loc = loc, .n_vars = n_vars, .n = n_vars, .vars = vars, .names = names};
    ag_tensor *saved = rt_xmalloc(cap * sizeof *saved);
    L.init = rt_xcalloc(cap, sizeof *L.init);
    L.undef = rt_xcalloc(cap, sizeof *L.undef);
    L.ptype = rt_xcalloc(cap, sizeof *L.ptype);
    L.before = rt_xcalloc(cap, sizeof *L.before);
    L.outs = rt_xcalloc(cap, sizeof *L.outs);
    L.dropped = rt_xcalloc(cap, sizeof *L.dropped);
    L.relax = rt_xcalloc(cap, sizeof *L.relax);
    L.relaxed = rt_xcalloc(cap, sizeof *L.relaxed);
    L.outer = t->loop;
    t->loop = &L;
    for (int i = 0; i < n_vars; i++)
        saved[i] = *vars[i];
    bool ok = loop_entry(t, &L, body, state) && trace_loop(t, &L, cond, body, state);
    t->loop = L.outer;
    if (ok) {
        build_while(t, &L);
        if (tell_tapes)
            tape_sees_opaque(loc, "a staged loop (its condition is a tensor)", n_vars, vars);
    } else {
        t->failed = true;
        for (int i = 0; i < n_vars; i++)
            *vars[i] = saved[i];
    }
    ir_frame_release(&L.fc);
    ir_frame_release(&L.fb);
    free(saved);
    free(L.init);
    free(L.undef);
    free(L.ptype);
    free(L.before);
    free(L.outs);
    free(L.dropped);
    free(L.relax);
    free(L.relaxed);
    free(L.kept_vars);
    free(L.kept_names);
}

void ag_while_at(ag_loc loc, int n_vars, ag_tensor *const *vars, const char *const *names,
                 ag_cond_fn cond, ag_body_fn body, void *state)
{
    ir_trace *t = ir_trace_current();
    if (!t)
        eager_while(loc, n_vars, vars, cond, body, state);
    else if (rt_tape_recording_here()) /* the loop needs its accumulators */
        ir_while_on_tape(t, loc, n_vars, vars, names, cond, body, state);
    else
        ir_traced_while(t, loc, n_vars, vars, names, cond, body, state, false);
}
