/*
 * infer.c - shape and dtype inference.
 *
 * requires: a valid function (ir_verify).
 * keeps:    every node, operand, effect and region; only types change, and
 *           only towards more precision (a known dim where one was
 *           unknown), so every type stays true of every value.
 * breaks:   nothing. A conflict (the op's rules reject the operands, or
 *           give a dim that contradicts the node's type) is reported as a
 *           located diagnostic, and then no type changes at all.
 *
 * Each op's type is recomputed with its own rules (rt_infer) from its
 * operands' current types, constants passing their values (so that rules
 * that read values, like range's, see them), and met with the type it
 * had. Through control flow:
 *   - cond: a region parameter is its operand's type met with its own;
 *     the results are the join of what the two branches yield;
 *   - while: a loop variable's type is the least fixpoint of
 *     t = join(t, body(t)) starting from the operand's type, so a dim
 *     that the body keeps stays known and one it changes becomes unknown.
 * New types go into a side table first and are written back at the end,
 * because a loop body is inferred several times with different parameter
 * types and each round must start from the types the nodes had.
 *
 * Nested loops stay linear: each while remembers the start its fixpoint
 * was solved from and the parameter types its regions were last inferred
 * with (loop_memo). An inner loop met again with the same types (the
 * final round after an outer fixpoint, an outer round that changed
 * nothing it sees) is not inferred again, and one whose start an outer
 * round widened resumes from its last fixpoint.
 */
#include "pass_internal.h"

#include <stdlib.h>
#include <string.h>

enum { MAX_LOOP_ROUNDS = 16 };

/*
 * What infer remembers of one while node, so that inferring it again
 * with the same types costs nothing. Without this, a loop nested in the
 * body of another is re-inferred to its fixpoint in every round of the
 * outer fixpoint and in the final round after it: the work doubled with
 * each level of nesting.
 */
typedef struct loop_memo {
    bool solved;   /* `start` led to the fixpoint `fixed` */
    ir_type *start, *fixed;
    bool ran;      /* the regions' types in the side table are for `vars` */
    bool ran_loud; /* ... and that run reported its diagnostics */
    ir_type *vars;
} loop_memo;

typedef struct infer {
    pass_ctx *ctx;
    int n_ids;
    ir_type *t;     /* by id: the inferred type of values */
    ir_type **res;  /* by id: the inferred results of cond/while */
    loop_memo **memo; /* by id: while nodes */
    bool quiet;     /* inside a loop's trial rounds: no diagnostics */
} infer;

static void infer_graph(infer *I, const ir_graph *g);

/* ------------------------------------------------------------ rt ops */

/* A stand-in for operand x: its value for a constant, else symbolic. */
static rt_value operand_value(const infer *I, const ir_node *x)
{
    if (pass_is_const(x))
        return pass_const_view(x);
    const ir_type *t = &I->t[x->id];
    rt_value v = {.kind = RT_SYMBOLIC, .dtype = t->dtype, .elem_dtype = t->elem_dtype,
                  .shape = t->shape, .numel = rt_shape_numel(&t->shape)};
    return v;
}

/* The op's rules on the operands' current types; false after a diagnostic
 * (or when the rules cannot run: an operand of unknown rank). */
static bool rules_type(infer *I, const ir_node *n, ir_type *out)
{
    rt_value vals[8], *ptrs[8];
    rt_value *heap_vals = NULL, **heap_ptrs = NULL;
    rt_value *v = vals;
    rt_value **p = ptrs;
    if (n->n_in > 8) {
        v = heap_vals = rt_xcalloc((size_t)n->n_in, sizeof *v);
        p = heap_ptrs = rt_xcalloc((size_t)n->n_in, sizeof *p);
    }
    bool ranked = true;
    for (int i = 0; i < n->n_in; i++) {
        v[i] = operand_value(I, n->in[i]);
        p[i] = &v[i];
        ranked = ranked && (v[i].dtype == RT_LIST || v[i].shape.rank >= 0);
    }
    rt_err e = {{0}};
    bool ok = ranked;
    memset(out, 0, sizeof *out);
    if (ranked) {
        ok = rt_infer((rt_op)n->opcode, &n->attrs, p, n->n_in, &out->dtype, &out->shape, &e);
        if (!ok && !I->quiet)
            pass_diag(I->ctx, n, "%s", e.msg);
    }
    if (ok && out->dtype == RT_LIST)
        out->elem_dtype = n->opcode == RT_OP_TA_NEW ? n->attrs.dtype
                                                    : I->t[n->in[0]->id].elem_dtype;
    else if (ok)
        out->elem_dtype = out->dtype;
    free(heap_vals);
    free(heap_ptrs);
    return ok;
}

static void infer_rt(infer *I, const ir_node *n)
{
    ir_type *t = &I->t[n->id];
    *t = n->type;
    if (n->opcode == RT_OP_CONST || (rt_ops[n->opcode].attrs & RT_A_REF))
        return; /* a literal's type, or the variable's */
    ir_type want, met;
    if (!rules_type(I, n, &want))
        return;
    if (pass_type_meet(&n->type, &want, &met)) {
        *t = met;
        return;
    }
    if (!I->quiet) {
        char b1[256], b2[256];
        pass_diag(I->ctx, n, "has type %s but the op's rules now give %s",
                  ir_type_str(&n->type, b1, sizeof b1), ir_type_str(&want, b2, sizeof b2));
    }
}

/* ------------------------------------------------------ control flow */

/* Meets a declared type with an inferred one; the declared one wins a
 * conflict (the verifier guarantees they are compatible). */
static ir_type refine(const ir_type *declared, const ir_type *inferred)
{
    ir_type out;
    return pass_type_meet(declared, inferred, &out) ? out : *declared;
}

static ir_type *results_of(infer *I, const ir_node *n)
{
    free(I->res[n->id]);
    I->res[n->id] = rt_xcalloc((size_t)(n->n_results ? n->n_results : 1), sizeof(ir_type));
    return I->res[n->id];
}

static void infer_cond(infer *I, const ir_node *n)
{
    for (int r = 0; r < 2; r++) {
        const ir_graph *g = n->region[r];
        for (int i = 0; i < g->n_params; i++)
            I->t[g->params[i]->id] = refine(&g->params[i]->type, &I->t[n->in[i + 1]->id]);
        infer_graph(I, g);
    }
    ir_type *res = results_of(I, n);
    const ir_graph *a = n->region[0], *b = n->region[1];
    for (int k = 0; k < n->n_results; k++) {
        ir_type j;
        pass_type_join(&I->t[a->results[k]->id], &I->t[b->results[k]->id], &j);
        res[k] = refine(&n->results[k], &j);
    }
}

static loop_memo *memo_of(infer *I, const ir_node *n)
{
    loop_memo *m = I->memo[n->id];
    if (!m) {
        size_t k = (size_t)(n->n_in ? n->n_in : 1);
        m = I->memo[n->id] = rt_xcalloc(1, sizeof *m);
        m->start = rt_xcalloc(k, sizeof *m->start);
        m->fixed = rt_xcalloc(k, sizeof *m->fixed);
        m->vars = rt_xcalloc(k, sizeof *m->vars);
    }
    return m;
}

static void memo_free(loop_memo *m)
{
    if (!m)
        return;
    free(m->start);
    free(m->fixed);
    free(m->vars);
    free(m);
}

static bool types_equal(const ir_type *a, const ir_type *b, int n)
{
    for (int i = 0; i < n; i++)
        if (!ir_type_equal(&a[i], &b[i]))
            return false;
    return true;
}

/* Binds the loop variables' candidate types to both regions' parameters
 * and infers them. Regions have no implicit captures, so their types
 * depend on the parameters' types alone: a run with the same types as
 * the last one (which reported its diagnostics if this one must) would
 * give the same types again, and is skipped. */
static void run_loop_regions(infer *I, const ir_node *n, const ir_type *vars)
{
    loop_memo *m = memo_of(I, n);
    if (m->ran && (I->quiet || m->ran_loud) && types_equal(m->vars, vars, n->n_in))
        return;
    for (int r = 0; r < 2; r++) {
        const ir_graph *g = n->region[r];
        for (int i = 0; i < g->n_params; i++)
            I->t[g->params[i]->id] = vars[i];
        infer_graph(I, g);
    }
    m->ran = true;
    m->ran_loud = !I->quiet;
    memcpy(m->vars, vars, (size_t)n->n_in * sizeof *vars);
}

/* One step of the fixpoint: vars := join(vars, body(vars)) met with the
 * declared parameter types; true if something changed. */
static bool loop_step(infer *I, const ir_node *n, ir_type *vars)
{
    const ir_graph *body = n->region[1];
    bool changed = false;
    run_loop_regions(I, n, vars);
    for (int i = 0; i < n->n_in; i++) {
        ir_type j;
        pass_type_join(&vars[i], &I->t[body->results[i]->id], &j);
        j = refine(&body->params[i]->type, &j);
        changed |= !ir_type_equal(&j, &vars[i]);
        vars[i] = j;
    }
    return changed;
}

/* Where the fixpoint iteration for `start` may begin. A start covering
 * the last one (an enclosing loop widened it) may begin from the last
 * fixpoint joined with it: that lies below the new least fixpoint, so
 * the iteration still reaches it, and an enclosing fixpoint costs each
 * inner loop a round per widening instead of a whole fixpoint per round. */
static void warm_start(const loop_memo *m, const ir_node *n, const ir_type *start,
                       ir_type *vars)
{
    const ir_graph *body = n->region[1];
    bool covers = m->solved;
    for (int i = 0; covers && i < n->n_in; i++) {
        ir_type j;
        pass_type_join(&start[i], &m->start[i], &j);
        covers = ir_type_equal(&j, &start[i]);
    }
    for (int i = 0; i < n->n_in; i++) {
        vars[i] = start[i];
        if (covers) {
            pass_type_join(&start[i], &m->fixed[i], &vars[i]);
            vars[i] = refine(&body->params[i]->type, &vars[i]);
        }
    }
}

/* The loop variables' types: the least fixpoint from `start`, found by
 * quiet trial rounds (or remembered); the declared types if it is not
 * found within MAX_LOOP_ROUNDS. */
static void solve_loop(infer *I, const ir_node *n, const ir_type *start, ir_type *vars)
{
    loop_memo *m = memo_of(I, n);
    size_t size = (size_t)n->n_in * sizeof *vars;
    if (m->solved && types_equal(m->start, start, n->n_in)) {
        memcpy(vars, m->fixed, size);
        return;
    }
    warm_start(m, n, start, vars);
    bool quiet = I->quiet, stable = false;
    I->quiet = true;
    for (int round = 0; round < MAX_LOOP_ROUNDS && !stable; round++)
        stable = !loop_step(I, n, vars);
    I->quiet = quiet;
    if (!stable) /* give up refining: the declared types hold */
        for (int i = 0; i < n->n_in; i++)
            vars[i] = n->region[1]->params[i]->type;
    m->solved = true;
    memcpy(m->start, start, size);
    memcpy(m->fixed, vars, size);
}

static void infer_while(infer *I, const ir_node *n)
{
    const ir_graph *body = n->region[1];
    size_t k = (size_t)(n->n_in ? n->n_in : 1);
    ir_type *start = rt_xcalloc(k, sizeof *start);
    ir_type *vars = rt_xcalloc(k, sizeof *vars);
    for (int i = 0; i < n->n_in; i++)
        start[i] = refine(&body->params[i]->type, &I->t[n->in[i]->id]);
    solve_loop(I, n, start, vars);
    run_loop_regions(I, n, vars); /* the final round, with diagnostics */
    ir_type *res = results_of(I, n);
    for (int i = 0; i < n->n_results; i++)
        res[i] = refine(&n->results[i], &vars[i]);
    free(start);
    free(vars);
}

static _Thread_local int64_t region_visits;

int64_t pass_infer_region_visits(void) { return region_visits; }

static void infer_graph(infer *I, const ir_graph *g)
{
    region_visits++;
    for (const ir_node *n = g->first; n; n = n->next) {
        switch (n->opcode) {
        case IR_COND: infer_cond(I, n); break;
        case IR_WHILE: infer_while(I, n); break;
        case IR_GET: I->t[n->id] = I->res[n->in[0]->id][n->index]; break;
        default: infer_rt(I, n); break;
        }
    }
}

/* ------------------------------------------------------------ commit */

static bool commit_type(ir_type *dst, const ir_type *src)
{
    if (ir_type_equal(dst, src)) /* (elem_dtype matters for lists only) */
        return false;
    *dst = *src;
    return true;
}

static bool commit_graph(infer *I, ir_graph *g)
{
    bool changed = false;
    for (int i = 0; g->parent && i < g->n_params; i++)
        changed |= commit_type(&g->params[i]->type, &I->t[g->params[i]->id]);
    for (ir_node *n = g->first; n; n = n->next) {
        if (!pass_is_region_op(n)) {
            changed |= commit_type(&n->type, &I->t[n->id]);
            continue;
        }
        for (int k = 0; k < n->n_results; k++)
            changed |= commit_type(&n->results[k], &I->res[n->id][k]);
        changed |= commit_graph(I, n->region[0]);
        changed |= commit_graph(I, n->region[1]);
    }
    return changed;
}

bool pass_infer(ir_function *fn, pass_ctx *ctx)
{
    infer I = {.ctx = ctx, .n_ids = fn->next_id > 0 ? fn->next_id : 1};
    I.t = rt_xcalloc((size_t)I.n_ids, sizeof *I.t);
    I.res = rt_xcalloc((size_t)I.n_ids, sizeof *I.res);
    I.memo = rt_xcalloc((size_t)I.n_ids, sizeof *I.memo);
    for (int i = 0; i < fn->body->n_params; i++)
        I.t[fn->body->params[i]->id] = fn->body->params[i]->type;
    infer_graph(&I, fn->body);
    /* After a conflict, refined operand types could make the rules reject
     * a node the verifier accepts now: keep every type as it was. */
    bool changed = !ctx->failed && commit_graph(&I, fn->body);
    for (int i = 0; i < I.n_ids; i++) {
        free(I.res[i]);
        memo_free(I.memo[i]);
    }
    free(I.res);
    free(I.memo);
    free(I.t);
    return changed;
}
