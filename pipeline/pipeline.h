/*
 * pipeline.h - the one compile pipeline (prefix pl_):
 *
 *     trace -> verify -> passes -> target compile
 *
 * Every graph agc makes goes through pl_run: the function cache's at a
 * new signature (JIT), and agc's at build time (--emit), which stops it
 * early: `ir` after tracing, `ir-opt` and `dot` after the passes, and
 * `obj`, `asm` and `llvm` give the optimized graphs to the target's
 * ahead-of-time form (pl_emit). Nothing here names a target's insides:
 * targets are reached through backend/target.h only.
 */
#ifndef PL_PIPELINE_H
#define PL_PIPELINE_H

#include "target.h"

#include <stdatomic.h>

/* Where a run stops: after the stage named. */
typedef enum pl_stage { PL_TRACED, PL_OPTIMIZED, PL_COMPILED } pl_stage;

/* One argument of a trace, as the function cache keys concrete
 * functions by it: a tensor's type, a C scalar's value, a variable. */
typedef struct pl_arg {
    ag_arg_kind kind;
    ir_type type; /* tensors and tensor arrays */
    int64_t i;
    double f;
    ag_variable var;
    ag_optimizer opt; /* AG_ARG_OPTIMIZER; its serial (identity) is in i */
} pl_arg;

/* Where a function's compile time goes, summed over its traces
 * (AG_PROFILE prints it): added to by the pipeline, and by the background
 * thread for a compile that runs there. */
typedef struct pl_timing {
    atomic_llong trace_ns;   /* trace, verify and the passes */
    atomic_llong compile_ns; /* the target's compile */
    atomic_int background;   /* compiles run in the background */
} pl_timing;

typedef struct pl_request {
    const ag_function_desc *desc;
    const pl_arg *args;     /* one per parameter of desc */
    /* Instead of tracing desc (then NULL): this graph, which pl_run takes
     * over (a saved model's function, read from its text IR). */
    ir_function *graph;
    bool first_trace;       /* the function's first (variables may be made) */
    pl_stage stop;
    /* The settings the run uses (runtime/core/config.h); NULL: pl_run
     * takes the snapshot in force when it starts. Either way the run
     * holds its own reference and hands it down (pass_options.config,
     * tgt_options.config). */
    const rt_config *config;
    const tgt_target *target; /* NULL: pl_selected_target() */
    bool strict;            /* a failed compile is an error, not a fallback */
    /* Ops a device lacks run on the host: the saved model's function
     * records it (besides the setting soft_device_placement). */
    bool soft_placement;
    /* Not NULL: the bf16 pass runs with these options (the converter's
     * scope and filterlist) instead of the process's. */
    const pass_bf16_options *bf16_options;
    /* For a device target: only nodes traced in these AG_FUNCTIONs go to
     * the device (pass_options.device_scopes); none: every node it runs. */
    const char *const *device_scopes;
    int n_device_scopes;
    tgt_options options;
    /* The caller runs results whose target's code still compiles (the
     * function cache): the jit policy may then compile in the background
     * (tiered.h). Never when strict. */
    bool may_tier;
    pl_timing *timing; /* not NULL: the run's times are added there */
    /* Not NULL: called as each stage starts ("trace", "passes for the
     * target 'cpu'"...), for agc -v. */
    void (*progress)(void *ctx, const char *stage);
    void *progress_ctx;
} pl_request;

/* What a run made. The graph and its analyses belong to the result; so
 * does the executable, which the target that made it runs. */
typedef struct pl_result {
    ir_function *graph;
    pass_analyses *am;
    const tgt_target *target; /* the request's, or reference after a fallback */
    tgt_exe *exe;             /* PL_COMPILED only */
    /* Not NULL: target's code compiling in the background (tiered.h);
     * until it is ready (or if it fails) exe is the reference target's. */
    struct pl_tier *tier;
} pl_result;

/*
 * Runs the pipeline up to r->stop. A target that cannot compile the
 * graph leaves it to the reference target, unless r->strict. False after
 * reporting an error (at the user's line where there is one); *out is
 * then empty.
 */
bool pl_run(const pl_request *r, pl_result *out);
struct ir_trace;
/* The arguments r->desc is traced with: a parameter of trace t for each
 * tensor, r->args' values for the rest. False after reporting. */
bool pl_trace_args(struct ir_trace *t, const pl_request *r, ag_arg *args);
/* Runs a compiled result, with ir_execute's contract (ir/exec.h): its
 * background compile's code once ready, else its executable. */
bool pl_execute(const pl_result *c, rt_value *const *args, int n_args, rt_value **results);
/* Whether the result's background compile is still queued or running. */
bool pl_compiling(const pl_result *c);
void pl_result_free(pl_result *c);
/* Writes a compiled result's program for people (the target's print
 * hook); false when its target has none. */
bool pl_print_compiled(const pl_result *c, FILE *out);

/* Compiles optimized graphs ahead of time with t's emit hook into one
 * module (*out, malloc'ed); false with a message in err. */
bool pl_emit(const tgt_target *t, const tgt_aot_function *fns, int n, const tgt_options *o,
             tgt_emit_kind kind, char **out, size_t *len, char *err, size_t errlen);

/*
 * The target c chooses: its setting target (agc --target, ag_set_target,
 * AG_TARGET), else executor (AG_EXECUTOR, the older name: jit is cpu,
 * jit-strict is cpu with *strict set), else cpu. NULL after reporting an
 * unknown name, at loc, with the list of targets.
 */
const tgt_target *pl_target_of(const rt_config *c, ag_loc loc, bool *strict);
/* pl_target_of the settings in force now. */
const tgt_target *pl_selected_target(ag_loc loc, bool *strict);

/* The bf16 pass's options c's settings give (ag_set_bf16_options, AG_BF16,
 * agc --bf16). */
pass_bf16_options pl_bf16_from_config(const rt_config *c);

/* Looks a target up for a user's choice; NULL after reporting an unknown
 * name at loc ("--target=NAME", "AG_TARGET=NAME": `what`), listing the
 * targets. */
const tgt_target *pl_target_named(ag_loc loc, const char *what, const char *name);

#endif
