/*
 * bench_passes.c - what the default pass pipeline does, and how fast.
 *
 *   (a) traced functions (staged C in agc's output form): their node
 *       counts before and after the pipeline, and its time per node;
 *   (b) a generated graph of 10,000 nodes (elementwise chains, constant
 *       subexpressions, duplicates, identities, dead code, loops with
 *       invariant work, conds): the pipeline's time against a goal of
 *       200 ms;
 *   (c) the bf16 pass alone on that graph: its time per node against a
 *       goal of 2 us.
 *
 * Times are medians over repeated runs (CLOCK_MONOTONIC); each run
 * optimizes a fresh copy, so no run sees an already optimized graph.
 */
#define _POSIX_C_SOURCE 199309L

#include "bench_util.h"
#include <ag.h>

#include "ir.h"
#include "pass.h"
#include "trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { RUNS = 15 };

/* ======================================================= traced functions */

/* mlp: three dense layers whose weights are constants (fold), with a
 * bias added as x + 0 * b (simplify) and a repeated activation (cse). */
static void mlp(const ag_tensor *in, ag_tensor *out)
{
    ag_tensor h = in[0];
    for (int layer = 0; layer < 3; layer++) {
        ag_tensor w = ag_mul(ag_fill(AG_F32, AG_SHAPE(16, 16), 0.01 * (layer + 1)), 2);
        ag_tensor b = ag_add(ag_fill(AG_F32, AG_SHAPE(16), 0.5), ag_scalar_f32(-0.0));
        ag_tensor z = ag_add(ag_matmul(h, w), b);
        h = ag_add(ag_relu(z), ag_relu(z));
        h = ag_mul(h, 1);
    }
    out[0] = ag_softmax(h, -1);
}

/* loop: a while whose body recomputes an invariant scale each time. */
struct loop_s {
    ag_tensor i, acc, w;
};
static ag_tensor loop_cond(void *s_)
{
    struct loop_s *s = s_;
    return ag_less(s->i, 10);
}
static void loop_body(void *s_)
{
    struct loop_s *s = s_;
    ag_tensor scale = ag_sigmoid(ag_mul(s->w, ag_reduce_sum(s->w, AG_ALL_AXES, false)));
    s->acc = ag_add(s->acc, scale);
    s->i = ag_add(s->i, 1);
}
static void loop(const ag_tensor *in, ag_tensor *out)
{
    struct loop_s s = {ag_scalar_i32(0), ag_zeros_like(in[0]), in[0]};
    ag_tensor *vars[] = {&s.i, &s.acc};
    static const char *const names[] = {"i", "acc"};
    ag_while_at(AG_HERE, 2, vars, names, loop_cond, loop_body, &s);
    out[0] = s.acc;
}

/* branches: conds on a shape test (folds to a constant) and on data. */
struct br_s {
    ag_tensor x, r;
};
static void br_then(void *s_) { struct br_s *s = s_; s->r = ag_tanh(s->x); }
static void br_else(void *s_) { struct br_s *s = s_; s->r = ag_neg(s->x); }
static void branches(const ag_tensor *in, ag_tensor *out)
{
    struct br_s s = {in[0], {0, 0}};
    ag_tensor *vars[] = {&s.r};
    static const char *const names[] = {"r"};
    ag_if_at(AG_HERE, ag_greater(ag_size(in[0]), 4), 1, vars, names, br_then, br_else, &s);
    ag_tensor first = s.r;
    s.x = first;
    ag_if_at(AG_HERE, ag_greater(ag_reduce_sum(first, AG_ALL_AXES, false), 0), 1, vars, names,
             br_then, br_else, &s);
    out[0] = ag_add(s.r, ag_cast(ag_sub(ag_size(in[0]), ag_size(in[0])), AG_F32));
}

/* power: an unrolled chain of matmuls on a folded identity. */
static void power(const ag_tensor *in, ag_tensor *out)
{
    ag_tensor r = ag_eye(16, AG_F32);
    for (int i = 0; i < 8; i++)
        r = ag_matmul(in[0], ag_transpose(ag_transpose(r, 1, 0), 1, 0));
    out[0] = r;
}

typedef struct traced {
    const char *name;
    void (*body)(const ag_tensor *in, ag_tensor *out);
    ir_type param;
} traced;

/* Traces body into a new function, as the function cache does (without
 * running the pipeline). */
static ir_function *trace(const traced *t)
{
    ir_function *fn = ir_function_new(t->name);
    ir_trace *tr = ir_trace_begin(fn);
    ag_scope_push();
    ag_tensor in[1] = {ir_trace_param(tr, &t->param)}, out[1] = {{0, 0}};
    t->body(in, out);
    ir_trace_set_outputs(tr, 1, out, (ag_loc){__FILE__, __LINE__});
    ag_scope_pop();
    if (!ir_trace_end(tr)) {
        fprintf(stderr, "bench_passes: tracing %s failed: %s\n", t->name, ag_last_error());
        exit(1);
    }
    return fn;
}

/* ==================================================== the generated graph */

typedef struct gen {
    ir_function *fn;
    ir_graph *g;
    uint64_t seed;
    ir_node **pool; /* f32[64] values to draw operands from */
    int n_pool;
    int n_params;   /* parameters made, for counting nodes by their ids */
} gen;

static unsigned next_rand(gen *G)
{
    G->seed = G->seed * 6364136223846793005u + 1442695040888963407u;
    return (unsigned)(G->seed >> 33);
}

static ir_node *pick(gen *G)
{
    /* Mostly recent values, so chains form; sometimes older ones. */
    int span = next_rand(G) % 4 ? 8 : G->n_pool;
    int k = G->n_pool - 1 - (int)(next_rand(G) % (unsigned)(span < G->n_pool ? span : G->n_pool));
    return G->pool[k];
}

/* Appends op on in[] to graph g, typed by the op's rules. */
static ir_node *emit(ir_graph *g, int op, const rt_attrs *a, int n, ir_node *const *in)
{
    rt_value vals[4], *ptrs[4];
    for (int i = 0; i < n; i++) {
        vals[i] = (rt_value){.kind = RT_SYMBOLIC, .dtype = in[i]->type.dtype,
                             .shape = in[i]->type.shape, .numel = rt_shape_numel(&in[i]->type.shape)};
        ptrs[i] = &vals[i];
    }
    static const rt_attrs none;
    ir_type t = {0};
    rt_err e;
    if (!rt_infer((rt_op)op, a ? a : &none, ptrs, n, &t.dtype, &t.shape, &e)) {
        fprintf(stderr, "bench_passes: generating %s: %s\n", rt_ops[op].name, e.msg);
        exit(1);
    }
    t.elem_dtype = t.dtype;
    return ir_append(g, op, a, n, in, &t, (ag_loc){"gen.c", 1});
}

static ir_node *scalar(ir_graph *g, ag_dtype dt, double v)
{
    rt_value *x = rt_value_scalar(dt, v);
    ir_node *c = ir_append_const(g, x, (ag_loc){"gen.c", 1});
    rt_value_free(x);
    return c;
}

static void push(gen *G, ir_node *n)
{
    G->pool[G->n_pool++] = n;
}

static ir_node *binary(ir_graph *g, int op, ir_node *a, ir_node *b)
{
    ir_node *in[2] = {a, b};
    return emit(g, op, NULL, 2, in);
}

static ir_node *unary(ir_graph *g, int op, ir_node *a) { return emit(g, op, NULL, 1, &a); }

/* while (i < 10) { acc += tanh(w * c) }, with w invariant. */
static ir_node *gen_loop(gen *G, ir_node *acc0, ir_node *w0)
{
    ir_function *fn = G->fn;
    ir_type ti = {.dtype = AG_I32, .elem_dtype = AG_I32, .shape = AG_SCALAR};
    ir_graph *cond = ir_graph_new(fn), *body = ir_graph_new(fn);
    ir_node *ci = ir_add_param(cond, &ti);
    ir_add_param(cond, &acc0->type);
    ir_add_param(cond, &w0->type);
    ir_node *lt = binary(cond, RT_OP_LESS, ci, scalar(cond, AG_I32, 10));
    ir_set_results(cond, 1, &lt);
    ir_node *bi = ir_add_param(body, &ti), *bacc = ir_add_param(body, &acc0->type);
    ir_node *bw = ir_add_param(body, &w0->type);
    ir_node *t = unary(body, RT_OP_TANH, binary(body, RT_OP_MUL, bw, scalar(body, AG_F32, 0.5)));
    ir_node *yields[3] = {binary(body, RT_OP_ADD, bi, scalar(body, AG_I32, 1)),
                          binary(body, RT_OP_ADD, bacc, t), bw};
    ir_set_results(body, 3, yields);
    ir_node *in[3] = {scalar(G->g, AG_I32, 0), acc0, w0};
    ir_type res[3] = {ti, acc0->type, w0->type};
    ir_node *w = ir_append_region_op(G->g, IR_WHILE, 3, in, cond, body, 3, res,
                                     (ag_loc){"gen.c", 2});
    G->n_params += 6;
    return ir_append_get(G->g, w, 1, (ag_loc){"gen.c", 2});
}

/* cond(sum(x) > 0) { tanh(x) } else { neg(x) } */
static ir_node *gen_cond(gen *G, ir_node *x)
{
    ir_function *fn = G->fn;
    rt_attrs all = {.axis = AG_ALL_AXES};
    ir_node *sum = emit(G->g, RT_OP_REDUCE_SUM, &all, 1, &x);
    ir_node *pred = binary(G->g, RT_OP_GREATER, sum, scalar(G->g, AG_F32, 0));
    ir_graph *a = ir_graph_new(fn), *b = ir_graph_new(fn);
    ir_node *pa = ir_add_param(a, &x->type), *pb = ir_add_param(b, &x->type);
    ir_node *ya = unary(a, RT_OP_TANH, pa), *yb = unary(b, RT_OP_NEG, pb);
    ir_set_results(a, 1, &ya);
    ir_set_results(b, 1, &yb);
    ir_node *in[2] = {pred, x};
    ir_node *c = ir_append_region_op(G->g, IR_COND, 2, in, a, b, 1, &x->type,
                                     (ag_loc){"gen.c", 3});
    G->n_params += 2;
    return ir_append_get(G->g, c, 0, (ag_loc){"gen.c", 3});
}

/* One step of the generator: a few nodes of one kind. */
static void gen_step(gen *G)
{
    static const int binops[] = {RT_OP_ADD, RT_OP_SUB, RT_OP_MUL, RT_OP_MAXIMUM};
    static const int unops[] = {RT_OP_TANH, RT_OP_EXP, RT_OP_NEG, RT_OP_ABS, RT_OP_SIGMOID};
    ir_graph *g = G->g;
    unsigned r = next_rand(G) % 100;
    if (r < 30) {
        push(G, binary(g, binops[next_rand(G) % 4], pick(G), pick(G)));
    } else if (r < 50) {
        push(G, unary(g, unops[next_rand(G) % 5], pick(G)));
    } else if (r < 60) { /* a constant subexpression, then a broadcast op */
        ir_node *k = binary(g, RT_OP_MUL, scalar(g, AG_F32, 1.5), scalar(g, AG_F32, 2));
        push(G, binary(g, RT_OP_ADD, pick(G), k));
    } else if (r < 68) { /* a duplicate of x * y */
        ir_node *x = pick(G), *y = pick(G);
        binary(g, RT_OP_MUL, x, y);
        push(G, binary(g, RT_OP_MUL, y, x));
    } else if (r < 76) { /* identities: (x + -0.0) * 1 */
        ir_node *x = binary(g, RT_OP_ADD, pick(G), scalar(g, AG_F32, -0.0));
        push(G, binary(g, RT_OP_MUL, x, scalar(g, AG_F32, 1)));
    } else if (r < 84) { /* dead code */
        unary(g, RT_OP_SQRT, binary(g, RT_OP_DIV, pick(G), pick(G)));
    } else if (r < 90) { /* a reduction broadcast back */
        rt_attrs all = {.axis = AG_ALL_AXES};
        ir_node *x = pick(G);
        push(G, binary(g, RT_OP_SUB, x, emit(g, RT_OP_REDUCE_MEAN, &all, 1, &x)));
    } else if (r < 95) {
        push(G, gen_loop(G, pick(G), pick(G)));
    } else {
        push(G, gen_cond(G, pick(G)));
    }
}

static ir_function *generate(int n_nodes, uint64_t seed)
{
    gen G = {.fn = ir_function_new("generated"), .seed = seed};
    G.g = G.fn->body;
    G.pool = malloc((size_t)(n_nodes + 8) * sizeof *G.pool);
    ir_type t = {.dtype = AG_F32, .elem_dtype = AG_F32, .shape = AG_SHAPE(64)};
    for (int i = 0; i < 4; i++)
        push(&G, ir_add_param(G.g, &t));
    G.n_params = 4;
    while (G.fn->next_id - G.n_params < n_nodes) /* ids count nodes and parameters */
        gen_step(&G);
    enum { N_RESULTS = 64 }; /* spread out, so that most of the graph is live */
    ir_node *results[N_RESULTS];
    for (int i = 0; i < N_RESULTS; i++)
        results[i] = G.pool[G.n_pool - 1 - i * (G.n_pool / (N_RESULTS + 1))];
    ir_set_results(G.g, N_RESULTS, results);
    free(G.pool);
    char err[1024];
    if (!ir_verify(G.fn, err, sizeof err)) {
        fprintf(stderr, "bench_passes: the generated graph is invalid: %s\n", err);
        exit(1);
    }
    return G.fn;
}

/* ================================================================== main */

typedef ir_function *(*maker)(const void *arg);

static ir_function *make_traced(const void *arg) { return trace(arg); }
static ir_function *make_generated(const void *arg) { return generate(*(const int *)arg, 42); }

/* Nodes inside while regions (what runs on every iteration). */
static int loop_nodes(const ir_graph *g, bool in_loop)
{
    int n = 0;
    for (const ir_node *m = g->first; m; m = m->next) {
        n += in_loop;
        for (int r = 0; r < 2; r++)
            if (m->region[r])
                n += loop_nodes(m->region[r], in_loop || m->opcode == IR_WHILE);
    }
    return n;
}

typedef struct counts {
    int before, after, loop_before, loop_after;
} counts;

/* Runs the pipeline RUNS times on fresh copies; the median time in ms,
 * and the node counts before and after. */
static double time_pipeline(maker make, const void *arg, counts *c)
{
    double t[RUNS];
    for (int r = 0; r < RUNS; r++) {
        ir_function *fn = make(arg);
        c->before = ir_function_num_nodes(fn);
        c->loop_before = loop_nodes(fn->body, false);
        double t0 = bench_now_ms();
        bool ok = pass_run_default(fn);
        t[r] = bench_now_ms() - t0;
        c->after = ir_function_num_nodes(fn);
        c->loop_after = loop_nodes(fn->body, false);
        char err[1024];
        if (!ok || !ir_verify(fn, err, sizeof err)) {
            fprintf(stderr, "bench_passes: the pipeline failed: %s\n", ok ? err : pass_last_error());
            exit(1);
        }
        ir_function_free(fn);
    }
    return bench_median(t, RUNS);
}

/* The bf16 pass alone (pass_run_spec "bf16") on fresh copies of the
 * generated graph: the median time in ms; the node counts before and after. */
static double time_bf16(int n_nodes, counts *c)
{
    double t[RUNS];
    for (int r = 0; r < RUNS; r++) {
        ir_function *fn = generate(n_nodes, 42);
        c->before = ir_function_num_nodes(fn);
        double t0 = bench_now_ms();
        bool ok = pass_run_spec(fn, "bf16");
        t[r] = bench_now_ms() - t0;
        c->after = ir_function_num_nodes(fn);
        char err[1024];
        if (!ok || !ir_verify(fn, err, sizeof err)) {
            fprintf(stderr, "bench_passes: the bf16 pass failed: %s\n", ok ? err : pass_last_error());
            exit(1);
        }
        ir_function_free(fn);
    }
    return bench_median(t, RUNS);
}

int main(void)
{
    static const traced fns[] = {
        {"mlp", mlp, {.dtype = AG_F32, .elem_dtype = AG_F32, .shape = {2, {4, 16}}}},
        {"loop", loop, {.dtype = AG_F32, .elem_dtype = AG_F32, .shape = {1, {32}}}},
        {"branches", branches, {.dtype = AG_F32, .elem_dtype = AG_F32, .shape = {1, {8}}}},
        {"power", power, {.dtype = AG_F32, .elem_dtype = AG_F32, .shape = {2, {16, 16}}}},
    };
    pass_options o;
    pass_options_init(&o);
    o.verify_each = false; /* time the passes, not the verifier */
    pass_set_options(&o);
#ifdef __SANITIZE_ADDRESS__
    puts("(built with AddressSanitizer: the times measure the instrumentation)");
#endif
    puts("(a) the default pipeline on traced functions (median of 15 runs)");
    printf("  %-10s %7s %7s %14s %10s %10s\n", "function", "before", "after", "in loops",
           "time", "per node");
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
        counts c;
        double ms = time_pipeline(make_traced, &fns[i], &c);
        printf("  %-10s %7d %7d %7d -> %3d %7.3f ms %7.2f us\n", fns[i].name, c.before,
               c.after, c.loop_before, c.loop_after, ms, ms * 1e3 / c.before);
    }
    int n = 10000;
    counts c;
    double ms = time_pipeline(make_generated, &n, &c);
    puts("(b) a generated graph (elementwise chains, constants, duplicates, identities,");
    puts("    dead code, loops with invariant work, conds)");
    printf("  %d nodes -> %d nodes (in loops: %d -> %d) in %.1f ms, %.2f us per node\n",
           c.before, c.after, c.loop_before, c.loop_after, ms, ms * 1e3 / c.before);
    printf("  goal: under 200 ms for 10,000 nodes: %s\n", ms < 200 ? "PASS" : "MISS");
    double bms = time_bf16(n, &c);
    double per_node = bms * 1e3 / c.before;
    puts("(c) the bf16 pass alone on the same graph (median of 15 runs)");
    printf("  %d nodes -> %d nodes (casts added) in %.2f ms, %.3f us per node\n", c.before,
           c.after, bms, per_node);
    printf("  goal: at most 2 us per node: %s\n", per_node <= 2 ? "PASS" : "MISS");
    ag_shutdown();
    return 0;
}
