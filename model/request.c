/*
 * request.c - the pipeline request of a loaded model's function i
 * (sm_request): its target, device scopes, soft placement and bf16
 * options as its record says (the converter's placement), and a fresh
 * copy of its graph with the saved constants frozen. call.c compiles the
 * whole function with it, batch_split.c cuts it for batching first.
 */
#include "model.h"

#include <stdio.h>
#include <string.h>

/* Whether v is one of m's variables that hold a graph's constant. */
static bool is_constant(const rt_variable *v, void *ctx)
{
    const ag_saved_model *m = ctx;
    for (int k = 0; k < m->man->n_variables; k++)
        if (m->vars[k] == v)
            return m->man->variables[k].constant;
    return false;
}

/* The options the function's target takes for it (tgt_options.params):
 * the device spec fields the converter recorded, io_shape_optimization
 * among them, in the device spec's text form. */
static const char *target_params(const sm_function *f, char *buf, size_t len)
{
    snprintf(buf, len, "%s%s%s", f->device_spec,
             f->device_spec[0] && f->io_shape_optimization ? " " : "",
             f->io_shape_optimization ? "io_shapes: true" : "");
    return buf;
}

bool sm_request(ag_saved_model *m, int i, pl_stage stop, pl_request *r,
                pass_bf16_options *bf16, char *err, size_t errlen)
{
    const sm_function *f = &m->man->functions[i];
    memset(r, 0, sizeof *r);
    r->stop = stop;
    if (f->target[0] && !(r->target = tgt_find(f->target))) {
        char names[256];
        snprintf(err, errlen, "%s/%s: function '%s' runs on the target '%s', which this agc "
                              "does not have (it has: %s)", m->dir, SM_MANIFEST_FILE, f->name,
                 f->target, tgt_names(names, sizeof names));
        return false;
    }
    r->strict = r->target != NULL; /* a placement the converter chose is not optional */
    r->soft_placement = f->soft_device_placement;
    for (int k = 0; k < f->n_device_scopes; k++)
        m->fns[i].scope_names[k] = f->device_scopes[k].name;
    r->device_scopes = m->fns[i].scope_names;
    r->n_device_scopes = f->n_device_scopes;
    r->options.params = target_params(f, m->fns[i].target_params, sizeof m->fns[i].target_params);
    if (f->has_bf16) {
        memset(bf16, 0, sizeof *bf16);
        bf16->enabled = f->bf16.enabled;
        bf16->scope = f->bf16.scope == 2 ? PASS_BF16_SCOPE_ALL : PASS_BF16_SCOPE_DEVICE;
        snprintf(bf16->filterlist, sizeof bf16->filterlist, "%s", f->bf16.filterlist);
        bf16->skip_safety_checks = f->bf16.skip_safety_checks;
        r->bf16_options = bf16;
    }
    if (!(r->graph = sm_function_graph(m, i, err, errlen)))
        return false;
    /* the constants saved in binary are constants again; with
     * freeze_variables, so are the variables */
    bool ok = f->freeze_variables ? sm_freeze_variables(r->graph, err, errlen)
                                  : sm_freeze_variables_if(r->graph, is_constant, m, err,
                                                           errlen);
    if (!ok) {
        ir_function_free(r->graph);
        r->graph = NULL;
        return false;
    }
    return true;
}
