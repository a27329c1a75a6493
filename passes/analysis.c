/*
 * analysis.c - the analysis manager: liveness, the fusion plan and the
 * memory plan of one function, each computed on first request and kept
 * until the function changes. The fusion plan reuses the liveness, the
 * memory plan the fusion plan, so each is computed once per version.
 */
#include "pass_internal.h"

#include <stdlib.h>

struct pass_analyses {
    const ir_function *fn;
    const pass_caps *caps;
    bool have_liveness;
    ir_liveness liveness;
    pass_fusion_plan *fusion;
    pass_memory_plan *memory;
    int runs[PASS_N_ANALYSES];
};

static bool never(int op) { (void)op; return false; }

const pass_caps pass_caps_none = {.target = "none", .native_dtypes = 0, .fuses = never};

pass_analyses *pass_analyses_new(const ir_function *fn, const pass_caps *caps)
{
    pass_analyses *am = rt_xcalloc(1, sizeof *am);
    am->fn = fn;
    am->caps = caps ? caps : &pass_caps_none;
    return am;
}

void pass_analyses_invalidate(pass_analyses *am)
{
    if (am->have_liveness)
        ir_liveness_free(&am->liveness);
    am->have_liveness = false;
    pass_fusion_plan_free(am->fusion);
    pass_memory_plan_free(am->memory);
    am->fusion = NULL;
    am->memory = NULL;
}

void pass_analyses_free(pass_analyses *am)
{
    if (!am)
        return;
    pass_analyses_invalidate(am);
    free(am);
}

const ir_function *pass_analyses_function(const pass_analyses *am) { return am->fn; }

const pass_caps *pass_analyses_caps(const pass_analyses *am) { return am->caps; }

const ir_liveness *pass_analyses_liveness(pass_analyses *am)
{
    if (!am->have_liveness) {
        ir_liveness_init(&am->liveness, am->fn);
        am->have_liveness = true;
        am->runs[PASS_ANALYSIS_LIVENESS]++;
    }
    return &am->liveness;
}

const pass_fusion_plan *pass_analyses_fusion(pass_analyses *am)
{
    if (!am->fusion) {
        am->fusion = pass_fusion_plan_build(am->fn, am->caps, pass_analyses_liveness(am));
        am->runs[PASS_ANALYSIS_FUSION]++;
    }
    return am->fusion;
}

const pass_memory_plan *pass_analyses_memory(pass_analyses *am)
{
    if (!am->memory) {
        am->memory = pass_memory_plan_new_fused(am->fn, pass_analyses_fusion(am));
        am->runs[PASS_ANALYSIS_MEMORY]++;
    }
    return am->memory;
}

int pass_analyses_runs(const pass_analyses *am, pass_analysis a)
{
    return a >= 0 && a < PASS_N_ANALYSES ? am->runs[a] : 0;
}
