/*
 * batch_runners.c - what a batcher runs: a C callback
 * (ag_batcher_new_fn), or an AG_FUNCTION through the function cache, with
 * what a signature fixes (ag_batcher_new).
 */
#include "batch_internal.h"

#include "function.h"
#include "rows.h"
#include "signature.h"

#include <stdlib.h>
#include <string.h>

/* A C callback (ag_batcher_new_fn). */
typedef struct callback_runner {
    ag_batch_fn fn;
    void *state;
} callback_runner;

static bool run_callback(void *state, const ag_tensor *inputs, ag_tensor *outputs)
{
    callback_runner *c = state;
    return c->fn(c->state, inputs, outputs);
}

ag_batcher *ag_batcher_new_fn_at(ag_loc loc, ag_batch_fn fn, void *state, int n_inputs,
                                 int n_outputs, const ag_batch_options *options)
{
    if (!fn) {
        rt_report(loc, "ag_batcher_new_fn: the function is NULL");
        return NULL;
    }
    callback_runner *c = rt_xmalloc(sizeof *c);
    *c = (callback_runner){fn, state};
    bt_runner r = {.run = run_callback, .free_state = free, .state = c, .n_inputs = n_inputs,
                   .n_outputs = n_outputs, .name = "the batch function"};
    return bt_new(loc, &r, options);
}

/* An AG_FUNCTION (ag_batcher_new): a concrete function traced for the
 * signature, or, without one, whatever the function cache finds or
 * traces for each batch's shapes. */
typedef struct function_runner {
    const ag_function_desc *desc;
    ag_concrete_function *cf; /* NULL: ag_function_call_at picks */
    ag_loc loc;               /* ag_batcher_new's: where batches are "called" */
    int tensor_param[BT_MAX_TENSORS]; /* the parameter of each input */
    char name[128];
    /* Without a signature, the row analysis runs on the first batch's
     * trace; a refusal stays (every later batch fails with it). */
    pthread_mutex_t lock;
    enum { ROWS_UNCHECKED, ROWS_OK, ROWS_MIXED } rows;
    char *refusal;
} function_runner;

static void free_function_runner(void *state)
{
    function_runner *f = state;
    pthread_mutex_destroy(&f->lock);
    free(f->refusal);
    free(f);
}

/* ------------------------------------------------------ mixing no rows */

/* Whether d, traced for `spec`, computes each row of its results from
 * that row of its inputs alone (passes/rows.h): batching one that mixes
 * rows would hand callers each other's results, or the padding's. NULL,
 * else the refusal (malloc'd). */
static char *rows_refusal(ag_loc loc, const ag_function_desc *d, const char *spec)
{
    pl_result res;
    const ag_function_desc *desc;
    if (!fn_trace_export(loc, d->name, spec, &res, &desc)) {
        const char *e = ag_last_error();
        return rt_xstrdup(e ? e : "it does not trace");
    }
    /* the batched inputs are the tensors: C scalars are in the graph */
    bool batched[IR_SPEC_MAX_ENTRIES + 1] = {false};
    const ir_graph *g = res.graph->body;
    for (int i = 0; i < g->n_params && i <= IR_SPEC_MAX_ENTRIES; i++)
        batched[i] = g->params[i]->type.shape.rank >= 1;
    char why[768], *refusal = NULL;
    if (!pass_rows_check(res.graph, batched, why, sizeof why)) {
        refusal = rt_xmalloc(1024);
        snprintf(refusal, 1024, "'%s' cannot be batched: %s; a batched function must compute "
                                "each row of its results from that row of its inputs alone",
                 d->name, why);
    }
    pl_result_free(&res);
    return refusal;
}

/* The signature of a batch's inputs, "f32[8,3], i32[8]". */
static void spec_of(const ag_tensor *inputs, int n, char *out, size_t size)
{
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        ir_type t = {.dtype = ag_dtype_of(inputs[i]), .shape = ag_shape_get(inputs[i])};
        char type[96];
        snprintf(out + strlen(out), size - strlen(out), "%s%s", i ? ", " : "",
                 ir_type_str(&t, type, sizeof type));
    }
}

/* Without a signature: the first batch's trace is analysed (after the
 * call, so that the function cache's trace is the function's first). */
static bool rows_checked(function_runner *f, const ag_tensor *inputs, int n)
{
    pthread_mutex_lock(&f->lock);
    if (f->rows == ROWS_UNCHECKED) {
        char spec[BT_MAX_TENSORS * 48];
        spec_of(inputs, n, spec, sizeof spec);
        f->refusal = rows_refusal(f->loc, f->desc, spec);
        f->rows = f->refusal ? ROWS_MIXED : ROWS_OK;
    }
    bool ok = f->rows == ROWS_OK;
    if (!ok)
        rt_report(f->loc, "ag_batcher_new: %s", f->refusal);
    pthread_mutex_unlock(&f->lock);
    return ok;
}

static bool run_ag_function(void *state, const ag_tensor *inputs, ag_tensor *outputs)
{
    function_runner *f = state;
    ag_arg args[IR_SPEC_MAX_ENTRIES + 1];
    memset(args, 0, sizeof args);
    for (int i = 0; i < f->desc->n_params; i++)
        args[i].kind = f->desc->param_kinds[i];
    /* C scalars are in the concrete function already: only with cf. */
    for (int i = 0, k = 0; i < f->desc->n_params; i++)
        if (f->desc->param_kinds[i] == AG_ARG_TENSOR)
            args[i].tensor = inputs[k++];
    if (f->cf)
        return fn_concrete_call(f->loc, f->cf, args, outputs);
    int n = 0;
    for (int i = 0; i < f->desc->n_params; i++)
        n += f->desc->param_kinds[i] == AG_ARG_TENSOR;
    return ag_function_call_at(f->loc, f->desc, args, outputs) && rows_checked(f, inputs, n);
}

/* Which parameters can be batched: tensors, and C scalars when a signature
 * gives their values. False with a message in err. */
static bool check_params(const ag_function_desc *d, bool have_signature, char *err, size_t n)
{
    if (d->n_params > IR_SPEC_MAX_ENTRIES)
        return snprintf(err, n, "'%s' has %d parameters; a batched function may have %d",
                        d->name, d->n_params, IR_SPEC_MAX_ENTRIES), false;
    for (int i = 0; i < d->n_params; i++) {
        ag_arg_kind k = d->param_kinds[i];
        const char *pname = d->param_names ? d->param_names[i] : "?";
        if (k == AG_ARG_TENSOR_ARRAY || k == AG_ARG_VARIABLE || k == AG_ARG_OPTIMIZER)
            return snprintf(err, n, "parameter '%s' of '%s' is %s; batched functions take "
                                    "tensors (and C scalars a signature gives)", pname, d->name,
                            k == AG_ARG_VARIABLE    ? "a variable"
                            : k == AG_ARG_OPTIMIZER ? "an optimizer"
                                                    : "a tensor array"), false;
        if ((k == AG_ARG_INT || k == AG_ARG_FLOAT) && !have_signature)
            return snprintf(err, n, "parameter '%s' of '%s' is a C scalar: give its value in "
                                    "the signature (\"..., %s=VALUE\")", pname, d->name, pname),
                   false;
    }
    return true;
}

/* The batched inputs of the signature: every tensor entry has a dimension
 * 0, unknown (`?`), or fixed to the one size every batch is padded to. */
static bool signature_types(const char *text, const ag_batch_options *o, bt_runner *r,
                            char *err, size_t n)
{
    ir_spec spec;
    char why[256];
    if (!ir_spec_parse(text, &spec, why, sizeof why))
        return snprintf(err, n, "bad signature \"%s\": %s", text, why), false;
    int k = 0;
    for (int e = 0; e < spec.n; e++) {
        const ir_spec_entry *s = &spec.entries[e];
        if (s->is_scalar_value || k >= r->n_inputs)
            continue;
        /* a fixed dimension 0 is the one size every batch is padded to, or wrong */
        bool fixed_ok = o->n_allowed_batch_sizes == 1 &&
                        s->shape.dims[0] == o->allowed_batch_sizes[0];
        const char *name = r->input_names[k] ? r->input_names[k] : "?";
        if (s->shape.rank < 1 || (s->shape.dims[0] >= 0 && !fixed_ok))
            return snprintf(err, n, "the signature \"%s\" gives %s input '%s' %s: a batched "
                                    "input needs `?` in dimension 0", text, r->name, name,
                            s->shape.rank < 1 ? "no dimension 0" : "a fixed dimension 0"),
                   false;
        r->dtype[k] = s->dtype;
        r->shape[k] = s->shape;
        r->shape[k].dims[0] = -1;
        k++;
    }
    r->has_types = true;
    return true;
}

/* The runner of the AG_FUNCTION d with the signature sig (or none); false
 * with a message in err (f is then the caller's to free). */
static bool function_runner_for(ag_loc loc, const ag_function_desc *d, const char *sig,
                                const ag_batch_options *o, function_runner *f, bt_runner *r,
                                char *err, size_t n)
{
    if (!check_params(d, sig != NULL, err, n))
        return false;
    f->desc = d;
    f->loc = loc;
    snprintf(f->name, sizeof f->name, "'%s'", d->name);
    *r = (bt_runner){.run = run_ag_function, .free_state = free_function_runner, .state = f,
                     .n_outputs = d->n_outputs, .name = f->name};
    for (int i = 0; i < d->n_params; i++) {
        if (d->param_kinds[i] != AG_ARG_TENSOR)
            continue;
        f->tensor_param[r->n_inputs] = i;
        r->input_names[r->n_inputs++] = d->param_names ? d->param_names[i] : NULL;
    }
    if (r->n_inputs == 0)
        return snprintf(err, n, "'%s' has no tensor parameter to batch", d->name), false;
    return !sig || signature_types(sig, o, r, err, n);
}

/* Options ag_batcher_new can use; false with a message in err. */
static bool options_ok(const ag_batch_options *o, char *err, size_t n)
{
    if (!o)
        return snprintf(err, n, "the options are NULL"), false;
    return bt_options_check(o, err, n);
}

ag_batcher *ag_batcher_new_at(ag_loc loc, const char *function, const char *signature,
                              const ag_batch_options *options)
{
    const ag_function_desc *d = function ? fn_desc_named(function) : NULL;
    char err[512];
    if (!d) {
        rt_report(loc, "ag_batcher_new: no AG_FUNCTION named '%s' is known (call it, or "
                       "ag_function_register it, first)", function ? function : "(null)");
        return NULL;
    }
    if (!options_ok(options, err, sizeof err)) {
        rt_report(loc, "ag_batcher_new: %s", err);
        return NULL;
    }
    function_runner *f = rt_xcalloc(1, sizeof *f);
    pthread_mutex_init(&f->lock, NULL);
    bt_runner r;
    const char *sig = signature ? signature : d->signature;
    if (!function_runner_for(loc, d, sig, options, f, &r, err, sizeof err)) {
        free_function_runner(f);
        rt_report(loc, "ag_batcher_new: %s", err);
        return NULL;
    }
    /* Traced and compiled now, so that the errors of tracing are reported
     * here and no batch waits for a compile; then the row analysis of the
     * same trace (not the first: the function's variables exist). */
    if (sig && !(f->cf = ag_get_concrete_function_at(loc, d->name, sig))) {
        free_function_runner(f);
        return NULL;
    }
    char *refusal = sig ? rows_refusal(loc, d, sig) : NULL;
    if (refusal) {
        rt_report(loc, "ag_batcher_new: %s", refusal);
        free(refusal);
        ag_concrete_release_at(loc, f->cf);
        free_function_runner(f);
        return NULL;
    }
    return bt_new(loc, &r, options);
}
