/*
 * reference.c - the reference target: graphs run by the interpreter of
 * ir/exec.c, op by op with the runtime's kernels. It compiles nothing, so
 * it is ready at once; it is the oracle the other targets are tested
 * against, and where the cpu target falls back for what it cannot compile.
 */
#include "exec.h"
#include "target.h"

#include <stdlib.h>

struct tgt_exe {
    ir_plan *plan;
};

static tgt_exe *reference_compile(const ir_function *fn, pass_analyses *am, const tgt_options *o,
                                  tgt_diag *d)
{
    (void)am, (void)o, (void)d;
    tgt_exe *x = rt_xcalloc(1, sizeof *x);
    x->plan = ir_plan_new(fn);
    return x;
}

static bool reference_run(const tgt_exe *x, rt_value *const *args, int n_args,
                          rt_value **results)
{
    return ir_execute(x->plan, args, n_args, results);
}

static void reference_free(tgt_exe *x)
{
    if (!x)
        return;
    ir_plan_free(x->plan);
    free(x);
}

/* An interpreter: a dispatch per node that runs, and every value through
 * memory at a modest rate. */
static tgt_cost reference_cost(const ir_function *fn, pass_analyses *am)
{
    tgt_cost c = tgt_count_cost(fn, am);
    c.seconds = c.ops * 1e-6 + c.flops / 2e9 + c.bytes / 8e9;
    return c;
}

const tgt_target tgt_reference = {
    .name = "reference",
    .summary = "the interpreter (ir/exec.c): op by op with the runtime's kernels, no compile",
    .caps = {.target = "reference", .native_dtypes = 0, .supports = NULL, .fuses = NULL,
             .precision = PASS_PRECISION_IEEE},
    .compile = reference_compile,
    .run = reference_run,
    .free = reference_free,
    .cost = reference_cost,
};
