/*
 * aot.c - running functions that agc compiled ahead of time.
 *
 * The C function agc put in the object packs its arguments and calls
 * ag_aot_call, which
 *   1. loads the function once: parses its graph text and fills the node
 *      table the native code reads (aot.h says why it needs nodes);
 *   2. checks the arguments against the signature the function was
 *      compiled for (dtypes and dims of tensors, values of C scalars) and
 *      reports a mismatch naming the parameter: at the caller's line when
 *      the call came through ag_aot_call_at (the header's macro), which
 *      also names the definition, else at the definition;
 *   3. runs the native code and hands its results out as tensors.
 *
 * This file and what it uses (the runtime's core and kernels, the IR and
 * its parser, backend/cpu/cg_runtime.c) make libag_rt, the runtime library
 * of ahead-of-time programs: no LLVM, no libclang, no tracer.
 */
#include "aot.h"

#include "signature.h"
#include "ir.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* What loading a function made: the parsed graph and signature. */
typedef struct aot_loaded {
    ir_function *graph;
    ir_spec signature;
    struct ag_aot_function *fn;
    struct aot_loaded *next; /* every loaded function, for ag_shutdown */
} aot_loaded;

static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;
static aot_loaded *loaded_list;

static ag_loc definition(const struct ag_aot_function *f)
{
    return (ag_loc){f->file, (int)f->line};
}

/* ---------------------------------------------------------------- loading */

static void unload_all(void)
{
    pthread_mutex_lock(&load_lock);
    for (aot_loaded *l = loaded_list, *next; l; l = next) {
        next = l->next;
        memset(l->fn->nodes, 0, (size_t)l->fn->n_nodes * sizeof *l->fn->nodes);
        atomic_store((_Atomic(void *) *)&l->fn->loaded, NULL);
        ir_function_free(l->graph);
        free(l);
    }
    loaded_list = NULL;
    pthread_mutex_unlock(&load_lock);
}

static bool fill_table(struct ag_aot_function *f, const ir_graph *g)
{
    for (int i = 0; i < g->n_params; i++)
        if (g->params[i]->id >= f->n_nodes)
            return false;
    for (int i = 0; i < g->n_params; i++)
        f->nodes[g->params[i]->id] = g->params[i];
    for (const ir_node *n = g->first; n; n = n->next) {
        if (n->id < 0 || n->id >= f->n_nodes)
            return false;
        f->nodes[n->id] = n;
        for (int r = 0; r < 2; r++)
            if (n->region[r] && !fill_table(f, n->region[r]))
                return false;
    }
    return true;
}

/* Parses the graph and the signature; NULL after reporting. */
static aot_loaded *load(struct ag_aot_function *f)
{
    char err[512];
    if (f->abi != AG_AOT_ABI_VERSION) {
        rt_report(definition(f), "'%s' was compiled ahead of time for runtime ABI %lld, but "
                                 "this libag_rt has ABI %d: compile it again with this agc",
                  f->name, (long long)f->abi, AG_AOT_ABI_VERSION);
        return NULL;
    }
    aot_loaded *l = rt_xcalloc(1, sizeof *l);
    l->fn = f;
    l->graph = ir_parse(f->graph, f->file, err, sizeof err);
    bool ok = l->graph != NULL;
    if (ok && !(ok = fill_table(f, l->graph->body)))
        snprintf(err, sizeof err, "its node numbers do not match the compiled code");
    ok = ok && ir_spec_parse(f->signature, &l->signature, err, sizeof err);
    if (!ok) {
        rt_report(definition(f), "internal error: the graph compiled ahead of time for '%s' "
                                 "cannot be loaded: %s", f->name, err);
        ir_function_free(l->graph);
        free(l);
        return NULL;
    }
    return l;
}

static aot_loaded *loaded(struct ag_aot_function *f)
{
    aot_loaded *l = atomic_load((_Atomic(void *) *)&f->loaded);
    if (l)
        return l;
    pthread_mutex_lock(&load_lock);
    l = f->loaded;
    if (!l && (l = load(f))) {
        if (!loaded_list)
            rt_at_shutdown(unload_all);
        l->next = loaded_list;
        loaded_list = l;
        atomic_store((_Atomic(void *) *)&f->loaded, l);
    }
    pthread_mutex_unlock(&load_lock);
    return l;
}

/* -------------------------------------------------------------- checking */

/* Where a call's errors go: the caller's line when known. `from` says
 * where the function is defined, when that is not the line reported. */
typedef struct call_site {
    ag_loc loc;
    char from[320];
} call_site;

static call_site site_of(const struct ag_aot_function *f, ag_loc caller)
{
    call_site s = {.loc = definition(f)};
    if (caller.file) {
        s.loc = caller;
        snprintf(s.from, sizeof s.from, " (defined at %s:%lld)", f->file, (long long)f->line);
    }
    return s;
}

static const ir_spec_entry *fixed_value(const aot_loaded *l, const char *name)
{
    for (int i = 0; i < l->signature.n; i++)
        if (l->signature.entries[i].is_scalar_value &&
            strcmp(l->signature.entries[i].name, name) == 0)
            return &l->signature.entries[i];
    return NULL;
}

/* A C scalar must have the value the function was compiled for. */
static bool check_scalar(const aot_loaded *l, const call_site *at, int i, int64_t bits)
{
    const struct ag_aot_function *f = l->fn;
    const ir_spec_entry *want = fixed_value(l, f->param_names[i]);
    char got[64], fixed[64];
    bool ok;
    if (f->param_kinds[i] == AG_ARG_FLOAT) {
        double x;
        memcpy(&x, &bits, sizeof x);
        /* a float parameter holds the signature's value rounded to float */
        ok = want && (x == want->f || (float)x == (float)want->f);
        snprintf(got, sizeof got, "%g", x);
        snprintf(fixed, sizeof fixed, "%g", want ? want->f : 0.0);
    } else {
        ok = want && bits == want->i;
        snprintf(got, sizeof got, "%lld", (long long)bits);
        snprintf(fixed, sizeof fixed, "%lld", want ? (long long)want->i : 0LL);
    }
    if (!ok)
        rt_report(at->loc, "'%s'%s was compiled ahead of time with %s=%s "
                           "(AG_SIGNATURE(\"%s\")), but this call passes %s=%s; compile "
                           "it for that value too, or build this call with agc's staged C",
                  f->name, at->from, f->param_names[i], fixed, f->signature, f->param_names[i],
                  got);
    return ok;
}

/* A tensor must have the dtype and the known dims it was compiled for. */
static bool check_tensor(const aot_loaded *l, const call_site *at, int i, const ir_node *param,
                         const rt_value *v)
{
    if (ir_value_has_type(&param->type, v))
        return true;
    const struct ag_aot_function *f = l->fn;
    char want[160], got[160];
    ir_type vt = {.dtype = v->dtype, .elem_dtype = v->elem_dtype, .shape = v->shape};
    rt_report(at->loc, "'%s'%s was compiled ahead of time for %s %s (AG_SIGNATURE(\"%s\")), "
                       "but this call passes %s %s; pass a tensor of that type, or build "
                       "this call with agc's staged C",
              f->name, at->from, f->param_names[i], ir_type_str(&param->type, want, sizeof want),
              f->signature, f->param_names[i], ir_type_str(&vt, got, sizeof got));
    return false;
}

/* The arguments as the native code takes them; false after reporting. */
static bool gather(const aot_loaded *l, const call_site *at, const ag_tensor *tensors,
                   const int64_t *scalars, rt_value **in)
{
    const struct ag_aot_function *f = l->fn;
    const ir_graph *body = l->graph->body;
    int t = 0;
    for (int i = 0; i < f->n_params; i++) {
        int64_t kind = f->param_kinds[i];
        if (kind == AG_ARG_INT || kind == AG_ARG_FLOAT) {
            if (!check_scalar(l, at, i, scalars[i]))
                return false;
            continue;
        }
        if (t >= body->n_params) {
            rt_report(definition(f), "internal error: '%s' has more tensor parameters than "
                                     "its compiled graph", f->name);
            return false;
        }
        rt_value *v = rt_handle_get(at->loc, tensors[i]); /* a freed tensor: the caller's */
        if (!v || !check_tensor(l, at, i, body->params[t], v))
            return false;
        in[t++] = v;
    }
    if (t != body->n_params) {
        rt_report(definition(f), "internal error: '%s' has fewer tensor parameters than its "
                                 "compiled graph", f->name);
        return false;
    }
    return true;
}

/* ------------------------------------------------------------------ call */

/* Errors in loading the object are its own, reported at the definition;
 * errors in the arguments are the caller's. */
bool ag_aot_call_at(ag_loc caller, ag_aot_function *f, const ag_tensor *tensors,
                    const int64_t *scalars, ag_tensor *outputs)
{
    aot_loaded *l = loaded(f);
    const ir_graph *body = l ? l->graph->body : NULL;
    size_t n_in = (size_t)(body && body->n_params ? body->n_params : 1);
    rt_value **in = rt_xcalloc(n_in, sizeof *in);
    rt_value **out = rt_xcalloc((size_t)f->n_outputs + 1, sizeof *out);
    call_site at = site_of(f, caller);
    bool ok = l && gather(l, &at, tensors, scalars, in) && f->entry(in, out) != 0;
    for (int i = 0; i < f->n_outputs; i++)
        outputs[i] = ok ? rt_handle_new(out[i]) : rt_error_tensor();
    free(in);
    free(out);
    return ok;
}

/* The C function with the user's prototype cannot know its caller. */
bool ag_aot_call(ag_aot_function *f, const ag_tensor *tensors, const int64_t *scalars,
                 ag_tensor *outputs)
{
    return ag_aot_call_at((ag_loc){0}, f, tensors, scalars, outputs);
}
