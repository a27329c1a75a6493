/*
 * save.c - ag_saved_model_save: from a running program's AG_FUNCTIONs to
 * a saved model.
 *
 * Each signature's function is traced for its spec (the graph as traced,
 * before any pass: the loader's pipeline optimizes it for wherever it will
 * run). The AG_FUNCTIONs it calls are inlined in its graph; their names
 * stay on the nodes (ir_node.scope), so the model records them as the
 * function's calls, and the converter can place them on the TPU.
 */
#include "model.h"

#include "function.h"
#include "signature.h"

#include <stdlib.h>
#include <string.h>

typedef struct saver {
    ag_loc loc;
    sm_manifest *man;
    char **texts;                   /* per function */
    const rt_variable **var_objs;   /* per model variable: whose value */
    ir_function **graphs;           /* per function, until written */
    rt_variable *constants;         /* stand-ins for the constants saved as variables */
    int n_constants;
} saver;

static bool copy_name(ag_loc loc, char *dst, size_t cap, const char *src, const char *what)
{
    if (strlen(src) >= cap) {
        rt_report(loc, "%s '%.40s...' is longer than a saved model allows (%zu bytes)", what,
                  src, cap - 1);
        return false;
    }
    snprintf(dst, cap, "%s", src);
    return true;
}

static void type_text(const ir_type *t, char *buf, size_t n)
{
    ir_spec_type_str(t->dtype, &t->shape, buf, n);
}

/* ------------------------------------------------------------- variables */

static int variable_index(saver *S, const rt_variable *v)
{
    sm_manifest *man = S->man;
    for (int i = 0; i < man->n_variables; i++)
        if (S->var_objs[i] == v)
            return i;
    if (man->n_variables == SM_MAX_VARIABLES) {
        rt_report(S->loc, "the model has more than %d variables", SM_MAX_VARIABLES);
        return -1;
    }
    int i = man->n_variables++;
    sm_variable *rec = &man->variables[i];
    S->var_objs[i] = v;
    snprintf(rec->name, sizeof rec->name, "variable_%d", i);
    ir_type t = {.dtype = v->value->dtype, .shape = v->value->shape};
    type_text(&t, rec->type, sizeof rec->type);
    if (v->created_at.file)
        snprintf(rec->created_at, sizeof rec->created_at, "%s:%d", v->created_at.file,
                 v->created_at.line);
    return i;
}

/* A large constant of a graph: a variable record marked constant, whose
 * value is the literal (thawing, freeze.c). */
static rt_variable *constant_variable(const rt_value *literal, void *ctx)
{
    saver *S = ctx;
    sm_manifest *man = S->man;
    if (man->n_variables == SM_MAX_VARIABLES || S->n_constants == SM_MAX_VARIABLES)
        return NULL; /* stays in the text */
    rt_variable *v = &S->constants[S->n_constants++];
    *v = (rt_variable){.magic = RT_VARIABLE_MAGIC, .value = (rt_value *)literal};
    int i = man->n_variables++;
    sm_variable *rec = &man->variables[i];
    S->var_objs[i] = v;
    snprintf(rec->name, sizeof rec->name, "constant_%d", S->n_constants - 1);
    ir_type t = {.dtype = literal->dtype, .shape = literal->shape};
    type_text(&t, rec->type, sizeof rec->type);
    rec->constant = true;
    return v;
}

static bool record_variables(saver *S, sm_function *f, const ir_function *g)
{
    if (g->n_vars > SM_MAX_FN_VARIABLES) {
        rt_report(S->loc, "'%s' uses %d variables; a saved function may use %d", f->function,
                  g->n_vars, SM_MAX_FN_VARIABLES);
        return false;
    }
    for (int j = 0; j < g->n_vars; j++) {
        int i = variable_index(S, g->vars[j]);
        if (i < 0)
            return false;
        f->variables[f->n_variables++] = i;
    }
    return true;
}

/* ----------------------------------------------------------- calls, aliases */

static void add_call(sm_function *f, const char *scope)
{
    /* each name of the path "a/b/c" is a function f calls */
    char name[SM_NAME];
    for (const char *p = scope; *p;) {
        size_t n = strcspn(p, "/");
        snprintf(name, sizeof name, "%.*s", (int)n, p);
        bool seen = false;
        for (int i = 0; i < f->n_calls && !seen; i++)
            seen = strcmp(f->calls[i].name, name) == 0;
        if (!seen && f->n_calls < SM_MAX_SCOPES) {
            sm_call *c = &f->calls[f->n_calls++];
            snprintf(c->name, SM_NAME, "%s", name);
            const ag_function_desc *d = fn_desc_named(name);
            c->jit_compile = d && (d->flags & AG_FN_JIT_COMPILE);
        }
        p += n + (p[n] == '/');
    }
}

static void record_calls(sm_function *f, const ir_graph *g)
{
    for (const ir_node *n = g->first; n; n = n->next) {
        if (n->scope)
            add_call(f, n->scope);
        for (int r = 0; r < 2; r++)
            if (n->region[r])
                record_calls(f, n->region[r]);
    }
}

static bool add_alias(saver *S, const char *alias, const char *function)
{
    sm_manifest *man = S->man;
    for (int i = 0; i < man->n_aliases; i++) {
        if (strcmp(man->aliases[i].name, alias) != 0)
            continue;
        if (strcmp(man->aliases[i].function, function) == 0)
            return true;
        rt_report(S->loc, "the alias '%s' names two functions, '%s' and '%s': an alias must "
                          "name one", alias, man->aliases[i].function, function);
        return false;
    }
    if (man->n_aliases == SM_MAX_ALIASES) {
        rt_report(S->loc, "the model has more than %d aliases", SM_MAX_ALIASES);
        return false;
    }
    sm_alias *a = &man->aliases[man->n_aliases++];
    return copy_name(S->loc, a->name, sizeof a->name, alias, "the alias") &&
           copy_name(S->loc, a->function, sizeof a->function, function, "the function name");
}

/* The AG_ALIAS of f's function and of every function it calls. */
static bool record_aliases(saver *S, const ag_function_desc *d, const sm_function *f)
{
    if (d->alias && !add_alias(S, d->alias, d->name))
        return false;
    for (int i = 0; i < f->n_calls; i++) {
        const ag_function_desc *c = fn_desc_named(f->calls[i].name);
        if (c && c->alias && !add_alias(S, c->alias, c->name))
            return false;
    }
    return true;
}

/* ------------------------------------------------------------- functions */

static bool io_names(saver *S, const ag_export_signature *e, const ag_function_desc *d,
                     sm_function *f, const ir_graph *body)
{
    int t = 0;
    for (int p = 0; p < d->n_params; p++) {
        if (d->param_kinds[p] == AG_ARG_TENSOR_ARRAY) {
            rt_report(S->loc, "'%s' has a tensor array parameter '%s': a saved model's "
                              "inputs are tensors", d->name, d->param_names[p]);
            return false;
        }
        if (d->param_kinds[p] != AG_ARG_TENSOR)
            continue; /* C scalars are part of the concrete function */
        const char *name = e->input_names ? e->input_names[t] : d->param_names[p];
        sm_io *io = &f->inputs[t];
        if (!name || !copy_name(S->loc, io->name, sizeof io->name, name, "the input name"))
            return false;
        type_text(&body->params[t]->type, io->type, sizeof io->type);
        t++;
    }
    f->n_inputs = t;
    if (body->n_results > SM_MAX_IO || t > SM_MAX_IO) {
        rt_report(S->loc, "'%s' has more than %d inputs or outputs", d->name, SM_MAX_IO);
        return false;
    }
    for (int i = 0; i < body->n_results; i++) {
        sm_io *io = &f->outputs[i];
        if (e->output_names) {
            if (!copy_name(S->loc, io->name, sizeof io->name, e->output_names[i],
                           "the output name"))
                return false;
        } else {
            snprintf(io->name, sizeof io->name, "output_%d", i);
        }
        type_text(&body->results[i]->type, io->type, sizeof io->type);
    }
    f->n_outputs = body->n_results;
    return true;
}

static bool distinct_names(saver *S, const sm_io *io, int n, const char *what)
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++)
            if (strcmp(io[i].name, io[j].name) == 0) {
                rt_report(S->loc, "two %ss are named '%s'", what, io[i].name);
                return false;
            }
    return true;
}

static bool export_signature(saver *S, const ag_export_signature *e)
{
    sm_manifest *man = S->man;
    if (!e->name || !*e->name || !e->function) {
        rt_report(S->loc, "ag_saved_model_save: a signature needs a name and a function");
        return false;
    }
    if (sm_find_signature(man, e->name)) {
        rt_report(S->loc, "ag_saved_model_save: two signatures are named '%s'", e->name);
        return false;
    }
    pl_result traced;
    const ag_function_desc *d = NULL;
    if (!fn_trace_export(S->loc, e->function, e->spec, &traced, &d))
        return false;
    int i = man->n_functions++;
    sm_function *f = &man->functions[i];
    S->graphs[i] = traced.graph;
    traced.graph = NULL;
    pl_result_free(&traced);
    snprintf(f->name, sizeof f->name, "__inference_%s_%d", d->name, i + 1);
    snprintf(f->function, sizeof f->function, "%s", d->name);
    if (!copy_name(S->loc, f->signature, sizeof f->signature, e->spec ? e->spec : d->signature,
                   "the signature"))
        return false;
    f->jit_compile = (d->flags & AG_FN_JIT_COMPILE) != 0;
    record_calls(f, S->graphs[i]->body);
    sm_thaw_constants(S->graphs[i], constant_variable, S);
    if (!io_names(S, e, d, f, S->graphs[i]->body) ||
        !distinct_names(S, f->inputs, f->n_inputs, "input") ||
        !distinct_names(S, f->outputs, f->n_outputs, "output") ||
        !record_variables(S, f, S->graphs[i]) || !record_aliases(S, d, f))
        return false;
    sm_signature *s = &man->signatures[man->n_signatures++];
    snprintf(s->name, sizeof s->name, "%s", e->name);
    memcpy(s->function, f->name, sizeof s->function);
    memcpy(s->inputs, f->inputs, sizeof s->inputs);
    memcpy(s->outputs, f->outputs, sizeof s->outputs);
    s->n_inputs = f->n_inputs;
    s->n_outputs = f->n_outputs;
    return true;
}

static bool check_options(ag_loc loc, const char *dir, const ag_save_options *o)
{
    if (!dir || !o || o->n_signatures <= 0 || !o->signatures) {
        rt_report(loc, "ag_saved_model_save: give a directory and at least one signature");
        return false;
    }
    if (o->n_signatures > SM_MAX_SIGNATURES || o->n_aliases < 0 ||
        o->n_aliases > SM_MAX_ALIASES) {
        rt_report(loc, "ag_saved_model_save: at most %d signatures and %d aliases",
                  SM_MAX_SIGNATURES, SM_MAX_ALIASES);
        return false;
    }
    return true;
}

/* The settings in force, which the traces below use: the manifest's
 * `config` lines. */
static void record_config(sm_manifest *man)
{
    const rt_config *c = rt_config_get();
    char *text = rt_config_changed_text(c);
    rt_config_release(c);
    for (char *line = text; *line && man->n_config < SM_MAX_CONFIG;) {
        size_t n = strcspn(line, "\n");
        snprintf(man->config[man->n_config++], SM_TEXT, "%.*s", (int)n, line);
        line += n + (line[n] == '\n');
    }
    free(text);
}

bool ag_saved_model_save_at(ag_loc loc, const char *dir, const ag_save_options *o)
{
    if (!check_options(loc, dir, o))
        return false;
    saver S = {.loc = loc, .man = rt_xcalloc(1, sizeof *S.man)};
    S.texts = rt_xcalloc((size_t)o->n_signatures, sizeof *S.texts);
    S.graphs = rt_xcalloc((size_t)o->n_signatures, sizeof *S.graphs);
    S.var_objs = rt_xcalloc(SM_MAX_VARIABLES, sizeof *S.var_objs);
    S.constants = rt_xcalloc(SM_MAX_VARIABLES, sizeof *S.constants);
    bool ok = true;
    record_config(S.man);
    for (int i = 0; ok && i < o->n_signatures; i++)
        ok = export_signature(&S, &o->signatures[i]);
    for (int i = 0; ok && i < o->n_aliases; i++)
        ok = fn_desc_named(o->aliases[i].function)
                 ? add_alias(&S, o->aliases[i].alias, fn_desc_named(o->aliases[i].function)->name)
                 : (rt_report(loc, "the alias '%s' names '%s', which is no AG_FUNCTION known",
                              o->aliases[i].alias, o->aliases[i].function),
                    false);
    for (int i = 0; ok && i < S.man->n_functions; i++)
        S.texts[i] = sm_graph_text(S.graphs[i]);
    if (ok) {
        const rt_value **values = rt_xcalloc((size_t)S.man->n_variables + 1, sizeof *values);
        for (int i = 0; i < S.man->n_variables; i++)
            values[i] = S.var_objs[i]->value;
        ok = sm_write(loc, dir, S.man, S.texts, values, NULL, 0);
        free(values);
    }
    for (int i = 0; i < o->n_signatures; i++) {
        free(S.texts[i]);
        if (S.graphs[i])
            ir_function_free(S.graphs[i]);
    }
    free(S.texts);
    free(S.graphs);
    free(S.var_objs);
    free(S.constants);
    free(S.man);
    return ok;
}
