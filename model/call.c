/*
 * call.c - running a loaded model's signatures.
 *
 * A signature's function compiles at its first call, once, from a fresh
 * copy of its graph, through the same pipeline as an AG_FUNCTION's
 * (passes for the target, then the target's compile). The target is the
 * one the function's record names (the converter's placement: tpu-model,
 * with device scopes and bf16 options), else the process's (cpu unless
 * AG_TARGET or ag_set_target says otherwise).
 */
#include "model.h"

#include "batch.h"
#include "signature.h"

#include <stdlib.h>
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
    r->options.io_shapes = f->io_shape_optimization;
    if (f->has_bf16) {
        memset(bf16, 0, sizeof *bf16);
        bf16->enabled = f->bf16.enabled;
        bf16->scope = f->bf16.scope == 2 ? PASS_BF16_SCOPE_ALL : PASS_BF16_SCOPE_TPU;
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

/* A batch of function i's calls: the compiled function on the batched
 * inputs (on a batch thread). */
static bool run_batch(void *state, const ag_tensor *inputs, ag_tensor *outputs)
{
    sm_loaded_function *lf = state;
    int n_in = lf->rec->n_inputs, n_out = lf->rec->n_outputs;
    rt_value **in = rt_xcalloc((size_t)n_in + 1, sizeof *in);
    rt_value **out = rt_xcalloc((size_t)n_out + 1, sizeof *out);
    bool ok = true;
    for (int k = 0; ok && k < n_in; k++)
        ok = (in[k] = rt_handle_get((ag_loc){0}, inputs[k])) != NULL;
    ok = ok && pl_execute(&lf->compiled, in, n_in, out);
    for (int k = 0; k < n_out; k++)
        if (ok)
            outputs[k] = rt_handle_new(out[k]);
        else
            rt_value_free(out[k]);
    free(in);
    free(out);
    return ok;
}

/* The batcher of a function the converter batched (its record's batch
 * options); the model owns it. */
static ag_batcher *new_batcher(ag_loc loc, sm_loaded_function *lf)
{
    const sm_batch *sb = &lf->rec->batch;
    int allowed[32];
    for (int k = 0; k < sb->n_allowed_batch_sizes; k++)
        allowed[k] = (int)sb->allowed_batch_sizes[k];
    ag_batch_options o = {
        .num_batch_threads = (int)sb->num_batch_threads,
        .max_batch_size = (int)sb->max_batch_size,
        .batch_timeout_micros = sb->batch_timeout_micros,
        .allowed_batch_sizes = sb->n_allowed_batch_sizes ? allowed : NULL,
        .n_allowed_batch_sizes = sb->n_allowed_batch_sizes,
        .max_enqueued_batches = (int)sb->max_enqueued_batches,
        .disable_large_batch_splitting = sb->disable_large_batch_splitting};
    bt_runner r = {.run = run_batch, .state = lf, .n_inputs = lf->rec->n_inputs,
                   .n_outputs = lf->rec->n_outputs, .name = lf->rec->name, .owned = true};
    for (int k = 0; k < lf->rec->n_inputs && k < BT_MAX_TENSORS; k++)
        r.input_names[k] = lf->rec->inputs[k].name;
    return bt_new(loc, &r, &o);
}

/* Compiles function i once; false after reporting (and for every later
 * call, which reports again). */
static bool compiled(ag_loc loc, ag_saved_model *m, int i)
{
    sm_loaded_function *lf = &m->fns[i];
    pthread_mutex_lock(&lf->lock);
    bool ok = lf->compiled.exe != NULL;
    if (!ok && !lf->tried) {
        lf->tried = true;
        pl_request r;
        pass_bf16_options bf16;
        char err[1024];
        if (sm_request(m, i, PL_COMPILED, &r, &bf16, err, sizeof err)) {
            ok = pl_run(&r, &lf->compiled);
            if (ok && lf->rec->has_batch && !(lf->batcher = new_batcher(loc, lf))) {
                pl_result_free(&lf->compiled);
                ok = false;
            }
        } else {
            rt_report(loc, "%s", err);
        }
    } else if (!ok) {
        rt_report(loc, "function '%s' of the saved model '%s' could not be compiled (see the "
                       "first error)", lf->rec->name, m->dir);
    }
    pthread_mutex_unlock(&lf->lock);
    return ok;
}

/* ------------------------------------------------------------ signatures */

const ag_signature_def *ag_model_signature_at_index(const ag_saved_model *m, int i)
{
    return m && i >= 0 && i < m->man->n_signatures ? &m->sigs[i] : NULL;
}

static int signature_index(const ag_saved_model *m, const char *name)
{
    for (int i = 0; name && i < m->man->n_signatures; i++)
        if (strcmp(m->sigs[i].name, name) == 0)
            return i;
    return -1;
}

const ag_signature_def *ag_model_signature_at(ag_loc loc, const ag_saved_model *m,
                                              const char *name)
{
    if (!m) {
        rt_report(loc, "ag_model_signature: no model (NULL)");
        return NULL;
    }
    int i = signature_index(m, name);
    if (i >= 0)
        return &m->sigs[i];
    char have[512] = "";
    for (int k = 0; k < m->man->n_signatures; k++)
        snprintf(have + strlen(have), sizeof have - strlen(have), "%s'%s'", k ? ", " : "",
                 m->sigs[k].name);
    rt_report(loc, "the saved model '%s' has no signature '%s'; it has %s", m->dir,
              name ? name : "(null)", have[0] ? have : "none");
    return NULL;
}

/* ------------------------------------------------------------------ call */

/* inputs in the signature's order (values and handles); false after
 * reporting. */
static bool order_inputs(ag_loc loc, const ag_saved_model *m, const ag_signature_def *s,
                         const ag_named_tensor *inputs, int n_inputs, rt_value **in,
                         ag_tensor *handles)
{
    for (int k = 0; k < n_inputs; k++) {
        int at = -1;
        for (int j = 0; j < s->n_inputs && at < 0; j++)
            if (inputs[k].name && strcmp(inputs[k].name, s->inputs[j].name) == 0)
                at = j;
        if (at < 0 || in[at]) {
            rt_report(loc, "signature '%s' of '%s' %s input '%s'", s->name, m->dir,
                      at < 0 ? "has no" : "was given twice the",
                      inputs[k].name ? inputs[k].name : "(null)");
            return false;
        }
        if (!(in[at] = rt_handle_get(loc, inputs[k].tensor)))
            return false;
        handles[at] = inputs[k].tensor;
        const ag_tensor_spec *want = &s->inputs[at];
        if (in[at]->dtype != want->dtype || !ir_spec_shape_matches(&want->shape, &in[at]->shape)) {
            char w[128], g[128];
            rt_report(loc, "signature '%s' input '%s' expects %s, got %s", s->name,
                      want->name, ir_spec_type_str(want->dtype, &want->shape, w, sizeof w),
                      ir_spec_type_str(in[at]->dtype, &in[at]->shape, g, sizeof g));
            return false;
        }
    }
    for (int j = 0; j < s->n_inputs; j++)
        if (!in[j]) {
            rt_report(loc, "signature '%s' of '%s' needs the input '%s', which was not given",
                      s->name, m->dir, s->inputs[j].name);
            return false;
        }
    return true;
}

static void fail_outputs(const ag_signature_def *s, ag_named_tensor *outputs, int n)
{
    for (int k = 0; k < n; k++) {
        outputs[k].name = s && k < s->n_outputs ? s->outputs[k].name : NULL;
        outputs[k].tensor = rt_error_tensor();
    }
}

bool ag_model_call_at(ag_loc loc, ag_saved_model *m, const char *signature,
                      const ag_named_tensor *inputs, int n_inputs, ag_named_tensor *outputs,
                      int n_outputs)
{
    const ag_signature_def *s = ag_model_signature_at(loc, m, signature);
    if (s && n_outputs != s->n_outputs)
        rt_report(loc, "signature '%s' has %d output%s; the call asks for %d", s->name,
                  s->n_outputs, s->n_outputs == 1 ? "" : "s", n_outputs);
    if (!s || n_outputs != s->n_outputs || (n_inputs && !inputs) || n_inputs < 0) {
        fail_outputs(s, outputs, n_outputs > 0 && outputs ? n_outputs : 0);
        return false;
    }
    int fi = sm_function_index(m, m->man->signatures[s - m->sigs].function);
    rt_value **in = rt_xcalloc((size_t)s->n_inputs + 1, sizeof *in);
    rt_value **out = rt_xcalloc((size_t)s->n_outputs + 1, sizeof *out);
    ag_tensor *handles = rt_xcalloc((size_t)s->n_inputs + 1, sizeof *handles);
    ag_tensor *batched = rt_xcalloc((size_t)s->n_outputs + 1, sizeof *batched);
    bool ok = order_inputs(loc, m, s, inputs, n_inputs, in, handles) && compiled(loc, m, fi);
    ag_batcher *b = ok ? m->fns[fi].batcher : NULL;
    if (b)
        ok = ag_batcher_call_at(loc, b, handles, batched);
    else
        ok = ok && pl_execute(&m->fns[fi].compiled, in, s->n_inputs, out);
    for (int k = 0; k < s->n_outputs; k++) {
        outputs[k].name = s->outputs[k].name;
        if (b)
            outputs[k].tensor = ok ? batched[k] : rt_error_tensor();
        else
            outputs[k].tensor = ok ? rt_handle_new(out[k]) : rt_error_tensor();
        if (!ok && !b)
            rt_value_free(out[k]);
    }
    free(in);
    free(out);
    free(handles);
    free(batched);
    return ok;
}
