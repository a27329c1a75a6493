/*
 * target_tpu.c - the `tpu-model` target: graphs compiled into programs
 * for a simulated TPU (compile.c) and run by its simulator (sim.c), with
 * the TPU's numerics and a cycle model; docs/tpu-model.md.
 *
 * What runs on it: 32-bit and bf16 tensors, and i64 (which a TPU emulates
 * with pairs of 32-bit words: indices, shapes); no f64, as on a v5e;
 * and every op but host work: printing, assertions, variables, random
 * numbers, tensor arrays. Those are errors at the user's line, unless
 * soft device placement runs them on the host (passes/place.c).
 */
#include "partition.h"
#include "program.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* One program per static shape of the parameters: a function traced with
 * '?' dims is compiled at each call with new shapes, as XLA does. */
typedef struct specialized {
    ag_shape *shapes;     /* of each top-level parameter */
    ir_function *graph;   /* the function with those shapes inferred */
    pass_analyses *am;
    tpu_program *program;
    struct specialized *next;
} specialized;

extern const tgt_target tgt_tpu_model;

struct tgt_exe {
    tpu_program *program; /* static shapes: compiled once; else NULL */
    const ir_function *generic;
    tpu_spec spec;
    pthread_mutex_t lock;
    specialized *by_shape;
};

static bool device_dtype(ag_dtype dt)
{
    return dt == AG_F32 || dt == AG_BF16 || dt == AG_I32 || dt == AG_I64 || dt == AG_BOOL ||
           dt == AG_I8;
}

/* The device's own op table (ops_tpu.c): every op but host work. */
static bool tpu_supports(int op, ag_dtype dt)
{
    return op >= 0 && op < RT_OP_COUNT && tpu_ops[op] > TPU_OP_HOST && device_dtype(dt);
}

/* The vector unit's ops fuse into its loops. */
static bool tpu_fuses(int op)
{
    return op >= 0 && op < RT_OP_COUNT && tpu_ops[op] == TPU_OP_VPU;
}

static bool params_static(const ir_function *fn)
{
    const ir_graph *body = fn->body;
    for (int i = 0; i < body->n_params; i++)
        if (tpu_padded_bytes(&body->params[i]->type) < 0)
            return false;
    return true;
}

static tgt_exe *tpu_target_compile(const ir_function *fn, pass_analyses *am,
                                   const tgt_options *o, tgt_diag *d)
{
    tpu_spec spec;
    const rt_config *c = o && o->config ? rt_config_ref(o->config) : rt_config_get();
    bool resolved = tpu_spec_resolve(rt_config_str(c, RT_CFG_DEVICE_SPEC), &spec, d->msg,
                                     sizeof d->msg);
    rt_config_release(c);
    if (resolved && o && o->params && *o->params)
        resolved = tpu_spec_overlay(o->params, "the function's device spec", &spec, d->msg,
                                    sizeof d->msg);
    if (!resolved)
        return NULL;
    tpu_program *p = NULL;
    if (params_static(fn) && !(p = tpu_compile(fn, am, &spec, d)))
        return NULL;
    tgt_exe *x = rt_xcalloc(1, sizeof *x);
    x->program = p;
    x->generic = fn;
    x->spec = spec;
    pthread_mutex_init(&x->lock, NULL);
    return x;
}

/* ------------------------------------------------- shapes known at the call */

static bool same_shapes(const specialized *s, int n, rt_value *const *args)
{
    for (int i = 0; i < n; i++)
        if (!ag_shape_equal(s->shapes[i], args[i]->shape))
            return false;
    return true;
}

static void specialized_free(specialized *s)
{
    tpu_program_free(s->program);
    pass_analyses_free(s->am);
    if (s->graph)
        ir_function_free(s->graph);
    free(s->shapes);
    free(s);
}

/* A copy of the generic function whose parameters have the arguments'
 * shapes, every other shape inferred from them. */
static ir_function *with_shapes(const ir_function *generic, int n, rt_value *const *args,
                                tgt_diag *d)
{
    ir_function *g = ir_copy(generic, d->msg, sizeof d->msg);
    if (!g)
        return NULL;
    for (int i = 0; i < n && i < g->body->n_params; i++)
        g->body->params[i]->type.shape = args[i]->shape;
    bool inferred = pass_run_spec(g, "infer");
    if (!inferred)
        snprintf(d->msg, sizeof d->msg, "internal error: the shapes of '%s' cannot be inferred "
                 "for the call: %s", generic->name ? generic->name : "?", pass_last_error());
    if (!inferred || !ir_verify(g, d->msg, sizeof d->msg)) {
        ir_function_free(g);
        return NULL;
    }
    return g;
}

static specialized *specialize(tgt_exe *x, int n, rt_value *const *args, tgt_diag *d)
{
    specialized *s = rt_xcalloc(1, sizeof *s);
    s->shapes = rt_xcalloc((size_t)n + 1, sizeof *s->shapes);
    for (int i = 0; i < n; i++)
        s->shapes[i] = args[i]->shape;
    s->graph = with_shapes(x->generic, n, args, d);
    if (s->graph) {
        s->am = pass_analyses_new(s->graph, &tgt_tpu_model.caps);
        s->program = tpu_compile(s->graph, s->am, &x->spec, d);
    }
    if (!s->program) {
        specialized_free(s);
        return NULL;
    }
    return s;
}

/* The program for these arguments' shapes, compiled on first use;
 * NULL after reporting why it cannot be. */
static const tpu_program *program_for(tgt_exe *x, int n, rt_value *const *args)
{
    if (x->program)
        return x->program;
    pthread_mutex_lock(&x->lock);
    specialized *s = x->by_shape;
    while (s && !same_shapes(s, n, args))
        s = s->next;
    tgt_diag d;
    memset(&d, 0, sizeof d);
    if (!s && (s = specialize(x, n, args, &d))) {
        s->next = x->by_shape;
        x->by_shape = s;
    }
    pthread_mutex_unlock(&x->lock);
    if (!s)
        rt_report(d.loc, "%s", d.msg);
    return s ? s->program : NULL;
}

/* The settings profile (AG_PROFILE=1 prints every call's simulated
 * profile on stderr) and profile_trace are the run's, not the compile's:
 * read from the settings in force at each call. */
static bool profiling(const rt_config *c) { return rt_config_on(c, RT_CFG_PROFILE); }

/* ---------------------------------------------------------- profiles */

/* This thread's last call on the TPU, for ag_last_profile. */
static _Thread_local struct {
    bool have;
    tpu_profile prof;
    char name[64];
} last;

bool ag_last_profile(ag_profile *out)
{
    if (!last.have)
        return false;
    const tpu_profile *p = &last.prof;
    memset(out, 0, sizeof *out);
    snprintf(out->function, sizeof out->function, "%s", last.name);
    out->target = TPU_TARGET;
    out->seconds = p->seconds;
    out->device_seconds = p->device_seconds;
    out->roofline_seconds = p->roofline_seconds;
    out->cycles = p->cycles;
    out->n_units = TPU_N_UNITS;
    for (int u = 0; u < TPU_N_UNITS && u < AG_PROFILE_MAX_UNITS; u++) {
        out->unit_names[u] = tpu_unit_name((tpu_unit)u);
        out->unit_busy_cycles[u] = p->busy[u];
    }
    out->mxu_utilization = p->mxu_utilization;
    out->host_bytes = p->host_bytes;
    out->host_padding_bytes = p->host_padding;
    out->hbm_bytes = p->hbm_bytes;
    return true;
}

/* AG_PROFILE_TRACE=FILE: every call's timeline goes there, in the Chrome
 * trace format, and the last calls' picture beside it (trace.c). */
static const char *trace_path(const rt_config *c)
{
    const char *path = rt_config_str(c, RT_CFG_PROFILE_TRACE);
    return path && *path ? path : NULL;
}

static bool tpu_target_run(const tgt_exe *x, rt_value *const *args, int n_args,
                           rt_value **results)
{
    const tpu_program *p = program_for((tgt_exe *)x, n_args, args);
    tpu_profile prof;
    const rt_config *c = rt_config_get();
    const char *trace = trace_path(c);
    tpu_timeline timeline = {0};
    bool ok = p && tpu_run(p, args, n_args, results, &prof, trace ? &timeline : NULL);
    if (ok && trace)
        tpu_trace_add(trace, &timeline);
    tpu_timeline_free(&timeline);
    if (ok) {
        last.have = true;
        last.prof = prof;
        snprintf(last.name, sizeof last.name, "%s", p->fn->name ? p->fn->name : "");
    }
    if (ok && profiling(c)) {
        fflush(stdout);
        tpu_profile_print(&prof, p->fn->name, stderr);
    }
    rt_config_release(c);
    return ok;
}

static void tpu_target_free(tgt_exe *x)
{
    if (!x)
        return;
    tpu_program_free(x->program);
    for (specialized *s = x->by_shape, *next; s; s = next) {
        next = s->next;
        specialized_free(s);
    }
    pthread_mutex_destroy(&x->lock);
    free(x);
}

/* The simulated time of one call, control flow taken once (tpu_time). */
static tgt_cost tpu_target_cost(const ir_function *fn, pass_analyses *am)
{
    tgt_cost c = tgt_count_cost(fn, am);
    tpu_spec spec;
    char err[256];
    tgt_diag d;
    /* the hook has no options: the device spec in force */
    const rt_config *cfg = rt_config_get();
    bool resolved = tpu_spec_resolve(rt_config_str(cfg, RT_CFG_DEVICE_SPEC), &spec, err,
                                     sizeof err);
    rt_config_release(cfg);
    tpu_program *p = resolved ? tpu_compile(fn, am, &spec, &d) : NULL;
    if (!p)
        return c; /* seconds 0: not compilable for the device */
    tpu_profile prof;
    tpu_time(p, &prof);
    c.seconds = prof.seconds;
    tpu_program_free(p);
    return c;
}

static void visit_graph(const tpu_program *p, const ir_graph *g, tgt_node_cost_fn visit,
                        void *ctx)
{
    double hz = p->spec.clock_hz;
    for (const ir_node *n = g->first; n; n = n->next) {
        if (n->id < p->n_ids && p->inst[n->id].cycles > 0)
            visit(ctx, n, (double)p->inst[n->id].cycles / hz);
        for (int r = 0; r < 2; r++)
            if (n->region[r])
                visit_graph(p, n->region[r], visit, ctx);
    }
}

/* Each instruction's cycles on its unit; the call's time from tpu_time. */
static bool tpu_target_node_costs(const tgt_exe *x, tgt_node_cost_fn visit, void *ctx,
                                  tgt_call_estimate *whole)
{
    const tpu_program *p = x->program;
    if (!p)
        return false;
    visit_graph(p, p->fn->body, visit, ctx);
    const ir_graph *body = p->fn->body;
    for (int i = 0; i < body->n_params; i++)
        visit(ctx, NULL, (double)p->params[i].cycles / p->spec.clock_hz);
    for (int i = 0; i < body->n_results; i++)
        visit(ctx, NULL, (double)p->results[i].cycles / p->spec.clock_hz);
    tpu_profile prof;
    tpu_time(p, &prof);
    whole->seconds = prof.seconds;
    whole->host_bytes = prof.host_bytes;
    whole->chips = p->slice ? p->slice->chips : 1;
    whole->link_seconds = (double)(prof.share[TPU_UNIT_ICI_X] + prof.share[TPU_UNIT_ICI_Y]) /
                          p->spec.clock_hz;
    if (p->slice)
        tpu_slice_splits(p, whole->splits, sizeof whole->splits);
    return true;
}

static void tpu_target_print(const tgt_exe *x, FILE *out)
{
    if (x->program)
        tpu_program_print(x->program, out);
    else
        fprintf(out, "; @%s on tpu-model: compiled at each call for its parameters' shapes "
                     "(the signature has '?' dims)\n", x->generic->name ? x->generic->name : "?");
}

const tgt_target tgt_tpu_model = {
    .name = TPU_TARGET,
    .summary = "a simulated TPU (v5e by default): bf16 matrix units, HBM, host link, "
               "cycle model",
    .device = "the TPU",
    .unsupported_hint = "enable soft device placement to run it on the CPU",
    .falls_back = false,
    .caps = {.target = TPU_TARGET,
             .native_dtypes = 1u << AG_F32 | 1u << AG_BF16 | 1u << AG_I32 | 1u << AG_BOOL |
                              1u << AG_I8,
             .supports = tpu_supports,
             .fuses = tpu_fuses,
             .precision = PASS_PRECISION_BF16},
    .compile = tpu_target_compile,
    .run = tpu_target_run,
    .free = tpu_target_free,
    .cost = tpu_target_cost,
    .node_costs = tpu_target_node_costs,
    .print = tpu_target_print,
};
