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
#include "suggest.h"

#include <stdlib.h>
#include <string.h>

/* A batch of calls: what the batcher runs (the function, or its middle
 * when batched in the graph) on the batched inputs (on a batch thread). */
static bool run_batch(void *state, const ag_tensor *inputs, ag_tensor *outputs)
{
    sm_loaded_function *lf = state;
    int n_in = lf->batch_inputs, n_out = lf->batch_outputs;
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
    int allowed[BT_MAX_BATCH_SIZES];
    ag_batch_options o;
    sm_batch_options(&lf->rec->batch, &o, allowed);
    bt_runner r = {.run = run_batch, .state = lf, .n_inputs = lf->batch_inputs,
                   .n_outputs = lf->batch_outputs, .name = lf->rec->name, .owned = true};
    for (int k = 0; k < lf->batch_inputs && k < BT_MAX_TENSORS; k++) {
        if (!lf->middle_in) {
            r.input_names[k] = lf->rec->inputs[k].name;
        } else if (lf->middle_in[k].from == PASS_FROM_INPUT) {
            r.input_names[k] = lf->rec->inputs[lf->middle_in[k].index].name;
        } else {
            /* the batcher keeps the names: they live with lf */
            snprintf(lf->middle_names[k], sizeof lf->middle_names[k], "host value %d",
                     lf->middle_in[k].index);
            r.input_names[k] = lf->middle_names[k];
        }
    }
    return bt_new(loc, &r, &o);
}

/* A part of a function batched in the graph, from the function's request
 * `whole`: where the converter placed its nodes (the record's target and
 * device scopes) when some of them are on the device, else on the host's
 * cpu target, whatever target the process selected. The middle of the
 * default cut is device nodes only: the device's whole (no scopes). */
static bool compile_part(ir_function *part, const pl_request *whole, bool device_whole,
                         pl_result *out)
{
    pl_request r = *whole;
    r.graph = part;
    if (device_whole) {
        r.device_scopes = NULL;
        r.n_device_scopes = 0;
    } else if (!r.n_device_scopes ||
               !sm_part_in_scopes(part, r.device_scopes, r.n_device_scopes)) {
        r = (pl_request){.graph = part, .stop = PL_COMPILED, .target = tgt_find("cpu")};
    }
    return pl_run(&r, out);
}

/* Function i batched in the graph: its three parts compiled, the middle
 * for the record's target (into lf->compiled); false after reporting. */
static bool compile_in_graph(ag_loc loc, ag_saved_model *m, int i)
{
    sm_loaded_function *lf = &m->fns[i];
    pass_split s;
    pl_request r;
    pass_bf16_options bf16;
    char err[1024];
    if (!sm_batch_split(m, i, &s, &r, &bf16, err, sizeof err)) {
        rt_report(loc, "%s", err);
        return false;
    }
    lf->n_pre_results = s.pre ? s.pre->body->n_results : 0;
    lf->batch_inputs = s.middle->body->n_params;
    lf->batch_outputs = s.middle->body->n_results;
    lf->middle_in = s.middle_in;
    lf->post_in = s.post_in;
    /* pl_run takes over each part's graph, whether it succeeds or not */
    bool device_whole = !lf->rec->batch.scope[0];
    bool ok = compile_part(s.middle, &r, device_whole, &lf->compiled);
    ok = (s.pre ? compile_part(s.pre, &r, false, &lf->pre) : true) && ok;
    ok = compile_part(s.post, &r, false, &lf->post) && ok;
    return ok;
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
        lf->batch_inputs = lf->rec->n_inputs;
        lf->batch_outputs = lf->rec->n_outputs;
        if (lf->rec->has_batch && lf->rec->batch.in_graph) {
            ok = compile_in_graph(loc, m, i);
        } else if (sm_request(m, i, PL_COMPILED, &r, &bf16, err, sizeof err)) {
            ok = pl_run(&r, &lf->compiled);
        } else {
            rt_report(loc, "%s", err);
        }
        if (ok && lf->rec->has_batch && !(lf->batcher = new_batcher(loc, lf)))
            ok = false;
        if (!ok)
            sm_loaded_function_release(lf);
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
    char have[512] = "", hint[160];
    sg_best b;
    sg_begin(&b, name ? name : "");
    for (int k = 0; k < m->man->n_signatures; k++) {
        snprintf(have + strlen(have), sizeof have - strlen(have), "%s'%s'", k ? ", " : "",
                 m->sigs[k].name);
        sg_consider(&b, m->sigs[k].name);
    }
    rt_report(loc, "the saved model '%s' has no signature '%s'; it has %s%s", m->dir,
              name ? name : "(null)", have[0] ? have : "none",
              sg_did_you_mean(b.name, hint, sizeof hint));
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

/* A value routed to a part's parameter: one of the call's inputs, or a
 * result of an earlier part (as a handle). */
static rt_value *routed(ag_loc loc, pass_split_source src, rt_value **in, const ag_tensor *pre,
                        const ag_tensor *middle)
{
    if (src.from == PASS_FROM_INPUT)
        return in[src.index];
    return rt_handle_get(loc, src.from == PASS_FROM_PRE ? pre[src.index] : middle[src.index]);
}

/* A call of function lf batched in the graph: the host work before its
 * middle on this thread, the middle through the batcher with other
 * callers' rows, the host work after it; `out` receives the function's
 * results. False after reporting. */
static bool call_in_graph(ag_loc loc, sm_loaded_function *lf, rt_value **in,
                          const ag_tensor *in_handles, int n_in, rt_value **out)
{
    int n_pre = lf->n_pre_results, n_mid_in = lf->batch_inputs, n_mid = lf->batch_outputs;
    int n_post = lf->post.graph->body->n_params;
    rt_value **pre = rt_xcalloc((size_t)n_pre + 1, sizeof *pre);
    rt_value **post_in = rt_xcalloc((size_t)n_post + 1, sizeof *post_in);
    ag_tensor *pre_h = rt_xcalloc((size_t)n_pre + 1, sizeof *pre_h);
    ag_tensor *mid_in = rt_xcalloc((size_t)n_mid_in + 1, sizeof *mid_in);
    ag_tensor *mid_out = rt_xcalloc((size_t)n_mid + 1, sizeof *mid_out);
    bool ran_pre = !lf->pre.exe || pl_execute(&lf->pre, in, n_in, pre);
    bool ok = ran_pre;
    for (int k = 0; ok && k < n_pre; k++)
        pre_h[k] = rt_handle_new(pre[k]);
    for (int k = 0; ok && k < n_mid_in; k++) {
        pass_split_source src = lf->middle_in[k];
        mid_in[k] = src.from == PASS_FROM_INPUT ? in_handles[src.index] : pre_h[src.index];
    }
    bool batched = ok && ag_batcher_call_at(loc, lf->batcher, mid_in, mid_out);
    ok = batched;
    for (int k = 0; ok && k < n_post; k++)
        ok = (post_in[k] = routed(loc, lf->post_in[k], in, pre_h, mid_out)) != NULL;
    ok = ok && pl_execute(&lf->post, post_in, n_post, out);
    for (int k = 0; ran_pre && k < n_pre; k++)
        ag_free_at(loc, pre_h[k]);
    for (int k = 0; batched && k < n_mid; k++)
        ag_free_at(loc, mid_out[k]);
    free(pre);
    free(post_in);
    free(pre_h);
    free(mid_in);
    free(mid_out);
    return ok;
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
    sm_loaded_function *lf = &m->fns[fi];
    /* batched at the function's inputs: the batcher hands back handles */
    ag_batcher *b = ok && !lf->middle_in ? lf->batcher : NULL;
    if (b)
        ok = ag_batcher_call_at(loc, b, handles, batched);
    else if (ok && lf->middle_in)
        ok = call_in_graph(loc, lf, in, handles, s->n_inputs, out);
    else
        ok = ok && pl_execute(&lf->compiled, in, s->n_inputs, out);
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
