/*
 * pipeline.c - trace -> verify -> passes -> target compile, once for
 * every caller (pipeline.h), and the choice of target.
 *
 * A run takes the settings once, at its start (the request's snapshot,
 * else the one in force), and hands that snapshot down: to the passes
 * (pass_options.config) and to the target (tgt_options.config).
 */
#include "pipeline.h"

#include "signature.h"
#include "suggest.h"

#include "tiered.h"
#include "trace.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ------------------------------------------------------------ choosing */

const tgt_target *pl_target_named(ag_loc loc, const char *what, const char *name)
{
    const tgt_target *t = tgt_find(name);
    if (!t) {
        char names[256], hint[160];
        rt_report(loc, "%s%s is not a target; the targets are %s%s", what, name ? name : "(null)",
                  tgt_names(names, sizeof names),
                  sg_did_you_mean(name ? tgt_suggest(name) : NULL, hint, sizeof hint));
    }
    return t;
}

bool ag_set_target_at(ag_loc loc, const char *name)
{
    const tgt_target *t = name ? pl_target_named(loc, "ag_set_target: ", name) : NULL;
    if (name && !t)
        return false;
    rt_config_set(RT_CFG_TARGET, name);
    return true;
}

const char *ag_target(void)
{
    bool strict;
    const rt_config *c = rt_config_get();
    const tgt_target *t = pl_target_of(c, (ag_loc){0}, &strict);
    rt_config_release(c);
    return t ? t->name : NULL;
}

/* AG_EXECUTOR, the older name of AG_TARGET, with its own value names. */
static const tgt_target *executor_alias(ag_loc loc, const char *env, bool *strict)
{
    if (strcmp(env, "jit") == 0 || strcmp(env, "jit-strict") == 0) {
        *strict = env[3] == '-';
        return tgt_find("cpu");
    }
    return pl_target_named(loc, "the environment variable AG_EXECUTOR=", env);
}

/* "the environment variable AG_TARGET=" for the environment's value,
 * "--target=" for agc's flag, "ag_set_target: " for the setter's. */
static const char *target_what(const rt_config *c)
{
    switch (rt_config_source_of(c, RT_CFG_TARGET)) {
    case RT_SRC_FLAG: return "--target=";
    case RT_SRC_SETTER: return "ag_set_target: ";
    default: return "the environment variable AG_TARGET=";
    }
}

/* Where a bad target name is reported: the program's line only when the
 * program set it (ag_set_target); a name from the environment or a flag
 * has nothing to do with the line that happened to trace first. */
static ag_loc target_loc(const rt_config *c, rt_config_id id, ag_loc loc)
{
    return rt_config_source_of(c, id) == RT_SRC_SETTER ? loc : (ag_loc){0};
}

const tgt_target *pl_selected_target(ag_loc loc, bool *strict)
{
    const rt_config *c = rt_config_get();
    const tgt_target *t = pl_target_of(c, loc, strict);
    rt_config_release(c);
    return t;
}

const tgt_target *pl_target_of(const rt_config *c, ag_loc loc, bool *strict)
{
    *strict = false;
    const char *name = rt_config_str(c, RT_CFG_TARGET);
    if (name && *name)
        return pl_target_named(target_loc(c, RT_CFG_TARGET, loc), target_what(c), name);
    name = rt_config_str(c, RT_CFG_EXECUTOR);
    if (name && *name)
        return executor_alias(target_loc(c, RT_CFG_EXECUTOR, loc), name, strict);
    return tgt_find("cpu");
}

/* --------------------------------------------------------------- options */

/* Where messages about r's function point: its definition, or for a
 * given graph the first line it records. */
static ag_loc request_loc(const pl_request *r)
{
    if (r->desc)
        return (ag_loc){r->desc->file, r->desc->line};
    for (const ir_node *n = r->graph ? r->graph->body->first : NULL; n; n = n->next)
        if (n->loc.file)
            return n->loc;
    return (ag_loc){0};
}

static const char *request_name(const pl_request *r)
{
    return r->desc ? r->desc->name : r->graph ? r->graph->name : "?";
}

/* Whether the target can compile for the CPU the settings name (AG_CPU,
 * --cpu: AG_CPU=znver3 runs code compiled for an AVX2 CPU on a newer
 * host). False after reporting a name it cannot compile for: asked now,
 * before tracing, because a failed compile would quietly fall back to the
 * reference target. */
static bool check_named_cpu(const pl_request *r, const tgt_target *t)
{
    const char *cpu = rt_config_str(r->config, RT_CFG_CPU);
    if (!cpu || !*cpu || r->stop < PL_COMPILED || !t->check_options)
        return true;
    char err[512];
    if (t->check_options(&r->options, err, sizeof err))
        return true;
    if (rt_config_source_of(r->config, RT_CFG_CPU) == RT_SRC_ENV)
        rt_report(request_loc(r), "AG_CPU=%s: %s", cpu, err);
    else
        rt_report(request_loc(r), "cpu '%s': %s", cpu, err);
    return false;
}

/* --------------------------------------------------------------- tracing */

/* The bf16 pass's options the settings give (ag_set_bf16_options, AG_BF16,
 * agc --bf16). */
pass_bf16_options pl_bf16_from_config(const rt_config *c)
{
    pass_bf16_options b;
    memset(&b, 0, sizeof b);
    const char *list = rt_config_str(c, RT_CFG_BF16_FILTERLIST);
    const char *scope = rt_config_str(c, RT_CFG_BF16_SCOPE);
    const char *elementwise = rt_config_str(c, RT_CFG_BF16_ELEMENTWISE);
    b.enabled = rt_config_on(c, RT_CFG_BF16);
    snprintf(b.filterlist, sizeof b.filterlist, "%s", list ? list : "");
    b.scope = scope && strcmp(scope, "tpu") == 0 ? PASS_BF16_SCOPE_DEVICE : PASS_BF16_SCOPE_ALL;
    b.io = rt_config_on(c, RT_CFG_BF16_IO);
    b.skip_safety_checks = rt_config_on(c, RT_CFG_BF16_SKIP_SAFETY_CHECKS);
    b.elementwise = elementwise && strcmp(elementwise, "bf16") == 0
                        ? PASS_BF16_ELEMENTWISE_BF16
                        : PASS_BF16_ELEMENTWISE_F32;
    return b;
}

/* The bf16 pass's options for r, merged here only: the request's (a saved
 * model's), else the settings'; on when the function (AG_BFLOAT16) or
 * the settings ask. */
static pass_bf16_options bf16_options_for(const pl_request *r)
{
    pass_bf16_options b = r->bf16_options ? *r->bf16_options : pl_bf16_from_config(r->config);
    /* a saved model's own options give way to AG_BF16 and agc --bf16 only,
     * not to the program's ag_set_bf16_options */
    bool process = rt_config_on(r->config, RT_CFG_BF16) &&
                   (!r->bf16_options || rt_config_source_of(r->config, RT_CFG_BF16) != RT_SRC_SETTER);
    b.enabled |= (r->desc && (r->desc->flags & AG_FN_BFLOAT16)) || process;
    return b;
}

/* Whether the bf16 pass will make r's f32 parameters bf16 (options.io). */
static bool bf16_io(const pl_request *r)
{
    return r->bf16_options && r->bf16_options->enabled && r->bf16_options->io;
}

/*
 * The type parameter i is traced with. With the bf16 pass's io option the
 * caller passes bf16 tensors where the function, written for f32, takes
 * f32 ones: they are traced as f32 (so the pass converts the function,
 * instead of refusing one that computes in bf16), and the pass makes the
 * parameters bf16 again. An f32 tensor there is an error: the converted
 * function could not take it. False after reporting.
 */
static bool param_type(const pl_request *r, int i, ir_type *type)
{
    *type = r->args[i].type;
    if (!bf16_io(r) || r->args[i].kind != AG_ARG_TENSOR)
        return true;
    if (type->dtype == AG_BF16) {
        type->dtype = AG_F32;
    } else if (type->dtype == AG_F32) {
        char got[200];
        rt_report(request_loc(r), "'%s' is converted to bf16 with bf16 inputs and outputs (the "
                                  "io option), so its parameter '%s' takes a bf16 tensor, not "
                                  "%s: cast it (ag_cast(x, AG_BF16)) or turn io off",
                  request_name(r), r->desc->param_names[i],
                  ir_spec_type_str(type->dtype, &type->shape, got, sizeof got));
        return false;
    }
    return true;
}

bool pl_trace_args(ir_trace *t, const pl_request *r, ag_arg *args)
{
    const ag_function_desc *d = r->desc;
    const pl_arg *keys = r->args;
    for (int i = 0; i < d->n_params; i++) {
        memset(&args[i], 0, sizeof args[i]);
        args[i].kind = keys[i].kind;
        ir_type type;
        if (!param_type(r, i, &type))
            return false;
        switch (keys[i].kind) {
        case AG_ARG_TENSOR:
        case AG_ARG_TENSOR_ARRAY: args[i].tensor = ir_trace_param(t, &type); break;
        case AG_ARG_VARIABLE: args[i].variable = keys[i].var; break;
        case AG_ARG_OPTIMIZER: args[i].optimizer = keys[i].opt; break;
        case AG_ARG_INT: args[i].i = keys[i].i; break;
        case AG_ARG_FLOAT: args[i].f = keys[i].f; break;
        }
    }
    return true;
}

static bool verify(const pl_request *r, const ir_function *fn, const char *when)
{
    char err[768];
    if (ir_verify(fn, err, sizeof err))
        return true;
    if (r->graph)
        rt_report(request_loc(r), "the graph %s for '%s' is invalid: %s", when,
                  request_name(r), err);
    else
        rt_report(request_loc(r), "internal error: the graph %s for '%s' is invalid: %s", when,
                  request_name(r), err);
    return false;
}

/* The graph of d for args, traced and verified; NULL after reporting. */
static ir_function *trace(const pl_request *r)
{
    const ag_function_desc *d = r->desc;
    ag_loc at = {d->file, d->line};
    size_t np = (size_t)(d->n_params ? d->n_params : 1);
    ag_arg *args = rt_xcalloc(np, sizeof *args);
    ag_tensor *outs = rt_xcalloc((size_t)d->n_outputs + 1, sizeof *outs);
    ir_function *fn = ir_function_new(d->name);
    uint64_t errors = rt_error_count();
    ir_trace *t = ir_trace_begin(fn);
    ir_trace_set_first(t, r->first_trace);
    ag_scope_push();
    bool ok = pl_trace_args(t, r, args);
    if (ok) {
        d->trace(args, outs);
        ir_trace_set_outputs(t, d->n_outputs, outs, at);
    }
    ag_scope_pop_at(at);
    ok = ir_trace_end(t) && ok && rt_error_count() == errors && verify(r, fn, "traced");
    free(args);
    free(outs);
    if (!ok) {
        ir_function_free(fn);
        return NULL;
    }
    return fn;
}

/* ------------------------------------------------------------ compiling */

/* Every live op is one the target runs (caps.supports); else an error at
 * the op's line. */
/* "'ag_print' isn't compilable for the TPU; <hint>": the op as the user
 * wrote it, and the dtype when the op is supported on others. */
static void report_unsupported(const tgt_target *t, const ir_node *n)
{
    char device[128], dtype[32] = "";
    if (t->device)
        snprintf(device, sizeof device, "%s", t->device);
    else
        snprintf(device, sizeof device, "the target '%s'", t->name);
    if (t->caps.supports(n->opcode, AG_F32))
        snprintf(dtype, sizeof dtype, " on %s", ag_dtype_name(n->type.dtype));
    rt_report(n->loc, "'%s'%s isn't compilable for %s%s%s", rt_op_public_name(n->opcode), dtype,
              device, t->unsupported_hint ? "; " : "",
              t->unsupported_hint ? t->unsupported_hint : "");
}

static bool check_supported(const ir_graph *g, const tgt_target *t, const ir_liveness *live,
                            const pass_options *o)
{
    const pass_caps *caps = &t->caps;
    for (const ir_node *n = g->first; n; n = n->next) {
        if (!ir_is_live(live, n))
            continue;
        for (int r = 0; r < 2; r++)
            if (n->region[r] && !check_supported(n->region[r], t, live, o))
                return false;
        if (n->opcode >= RT_OP_COUNT || caps->supports(n->opcode, n->type.dtype) ||
            !pass_in_device_scope(o, n))
            continue;
        report_unsupported(t, n);
        return false;
    }
    return true;
}

/* The reference target's executable (the interpreter's): for what the
 * target cannot compile, and for the calls until out->tier's compile is
 * ready. */
static bool compile_reference(const pl_request *r, pl_result *out)
{
    tgt_diag diag;
    memset(&diag, 0, sizeof diag);
    out->target = tgt_find("reference");
    out->exe = out->target->compile(out->graph, out->am, &r->options, &diag);
    return out->exe != NULL;
}

static bool compile_now(const pl_request *r, pl_result *out)
{
    const tgt_target *t = out->target;
    tgt_diag diag;
    memset(&diag, 0, sizeof diag);
    out->exe = t->compile(out->graph, out->am, &r->options, &diag);
    if (out->exe)
        return true;
    if (r->strict || !t->falls_back) {
        if (diag.loc.file)
            rt_report(diag.loc, "%s", diag.msg);
        else
            rt_report(request_loc(r), "'%s' could not be compiled for the target '%s': %s",
                      request_name(r), t->name, diag.msg);
        return false;
    }
    return compile_reference(r, out); /* what the target cannot compile */
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void add_time(atomic_llong *to, int64_t since)
{
    if (to)
        atomic_fetch_add(to, now_ns() - since);
}

/* Whether the target's compile may run in the background while the
 * reference executor runs the calls: only where a failed compile would
 * fall back to it anyway (not strict, a target that falls back), so the
 * calls see the same results and errors either way. */
static bool compile_in_background(const pl_request *r, const pl_result *out)
{
    const tgt_target *t = out->target;
    return r->may_tier && !r->strict && t->falls_back &&
           pl_tier_wanted(r->config, ir_function_num_nodes(out->graph));
}

static bool compile(const pl_request *r, pl_result *out)
{
    /* without a background thread, the compile runs now */
    if (compile_in_background(r, out) &&
        (out->tier = pl_tier_submit(out->graph, out->am, out->target, &r->options, r->timing)))
        return compile_reference(r, out);
    int64_t t0 = now_ns();
    bool ok = compile_now(r, out);
    add_time(r->timing ? &r->timing->compile_ns : NULL, t0);
    return ok;
}

void ag_set_soft_device_placement(bool on)
{
    rt_config_set(RT_CFG_SOFT_DEVICE_PLACEMENT, on ? "1" : "0");
}

/* Soft device placement: the saved model's function records it, else the
 * settings (ag_set_soft_device_placement, AG_SOFT_DEVICE_PLACEMENT, agc
 * --soft-device-placement) say. */
static bool soft_placement(const pl_request *r)
{
    return r->soft_placement || rt_config_on(r->config, RT_CFG_SOFT_DEVICE_PLACEMENT);
}

/* The default pipeline, converting to bf16 when the function asks
 * (AG_BFLOAT16) or the process does (AG_BF16, pass options), and placing
 * nodes for a device target (passes/place.c): without soft placement
 * every op that runs must then be the device's (else an error at its
 * line); with it the rest runs on the host, through explicit transfers. */
static bool run_passes(const pl_request *r, pl_result *out)
{
    pass_options o;
    pass_get_options(&o);
    o.config = r->config;
    o.bf16 = *r->bf16_options; /* merged once by pl_run */
    o.soft_placement = soft_placement(r);
    o.device_scopes = r->device_scopes;
    o.n_device_scopes = r->n_device_scopes;
    const tgt_target *t = out->target;
    if (!pass_run_with(out->graph, NULL, out->am, &o))
        return false;
    return !t->caps.supports || o.soft_placement ||
           check_supported(out->graph->body, t, pass_analyses_liveness(out->am), &o);
}

static void progress(const pl_request *r, const char *fmt, const char *name)
{
    if (!r->progress)
        return;
    char stage[160];
    snprintf(stage, sizeof stage, fmt, name);
    r->progress(r->progress_ctx, stage);
}

static bool run(pl_request *req, pl_result *out);

bool pl_run(const pl_request *r, pl_result *out)
{
    memset(out, 0, sizeof *out);
    pl_request req = *r;
    /* the settings, once: every stage below reads this snapshot */
    req.config = r->config ? rt_config_ref(r->config) : rt_config_get();
    bool ok = run(&req, out);
    rt_config_release(req.config);
    return ok;
}

static bool run(pl_request *rq, pl_result *out)
{
    const pl_request *r = rq;
    bool strict = r->strict;
    out->target = r->target;
    if (!out->target && !(out->target = pl_target_of(r->config, request_loc(r), &strict))) {
        if (r->graph)
            ir_function_free(r->graph);
        return false;
    }
    pl_request req = *r;
    req.strict = strict;
    req.options.config = r->config;
    /* read once: the trace (bf16_io) and the passes must agree */
    pass_bf16_options bf16 = bf16_options_for(r);
    req.bf16_options = &bf16;
    bool ok = check_named_cpu(&req, out->target);
    int64_t t0 = now_ns();
    if (r->graph) {
        out->graph = r->graph; /* ours now, freed with the result */
        progress(r, "verify%s", "");
        ok = ok && verify(r, out->graph, "given");
    } else {
        progress(r, "trace and verify%s", "");
        ok = ok && (out->graph = trace(&req)) != NULL;
    }
    if (ok && req.stop >= PL_OPTIMIZED) {
        /* the analyses are planned for the target that will compile */
        progress(r, "passes, planned for the target '%s'", out->target->name);
        out->am = pass_analyses_new(out->graph, &out->target->caps);
        ok = run_passes(&req, out);
#ifndef NDEBUG
        ok = ok && verify(r, out->graph, "optimized");
#endif
    }
    add_time(req.timing ? &req.timing->trace_ns : NULL, t0);
    if (ok && req.stop >= PL_COMPILED) {
        progress(r, "compile for the target '%s'", out->target->name);
        ok = compile(&req, out);
    }
    if (!ok)
        pl_result_free(out);
    return ok;
}

bool pl_execute(const pl_result *c, rt_value *const *args, int n_args, rt_value **results)
{
    const tgt_target *t = c->target;
    const tgt_exe *x = c->exe;
    if (c->tier)
        pl_tier_ready(c->tier, &t, &x); /* else the reference executable, meanwhile */
    return t->run(x, args, n_args, results);
}

bool pl_compiling(const pl_result *c) { return c->tier && pl_tier_pending(c->tier); }

void pl_result_free(pl_result *c)
{
    if (c->exe)
        c->target->free(c->exe); /* before the graph it refers to */
    /* a compile still running keeps the graph and analyses it reads, and
     * frees them when it ends */
    bool kept = c->tier && pl_tier_release(c->tier, c->graph, c->am);
    if (!kept) {
        pass_analyses_free(c->am);
        if (c->graph)
            ir_function_free(c->graph);
    }
    memset(c, 0, sizeof *c);
}

bool pl_print_compiled(const pl_result *c, FILE *out)
{
    if (!c->exe || !c->target->print)
        return false;
    c->target->print(c->exe, out);
    return true;
}

bool pl_emit(const tgt_target *t, const tgt_aot_function *fns, int n, const tgt_options *o,
             tgt_emit_kind kind, char **out, size_t *len, char *err, size_t errlen)
{
    if (!t->emit) {
        snprintf(err, errlen, "the target '%s' has no ahead-of-time form (objects, assembly, "
                              "LLVM IR); the cpu target has", t->name);
        return false;
    }
    return t->emit(fns, n, o, kind, out, len, err, errlen);
}
