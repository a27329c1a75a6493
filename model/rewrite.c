/*
 * rewrite.c - a loaded model changed in memory before it is written again
 * (the converter's quantization, model.h): a function's graph replaced by
 * a rewritten one, whose large constants (int8 weights) become variables
 * marked constant, as saving makes them; and the variables no function
 * reads any more (the float weights the int8 ones replaced) dropped, so
 * that the written model holds only what it runs.
 */
#include "model.h"
#include "signature.h"

#include <stdlib.h>
#include <string.h>

/* A large constant of the new graph: a new model variable marked
 * constant, holding a copy of the literal. */
static rt_variable *new_constant(const rt_value *literal, void *ctx)
{
    ag_saved_model *m = ctx;
    sm_manifest *man = m->man;
    if (man->n_variables == SM_MAX_VARIABLES)
        return NULL; /* stays in the text */
    ag_loc nowhere = {0};
    ag_tensor init = ag_from_data_at(nowhere, literal->dtype, literal->shape, literal->data);
    ag_variable v = ag_variable_new_at(nowhere, init);
    ag_free_at(nowhere, init);
    int i = man->n_variables++;
    m->vars = rt_xrealloc(m->vars, (size_t)(i + 1) * sizeof *m->vars);
    m->vars[i] = v;
    sm_variable *rec = &man->variables[i];
    memset(rec, 0, sizeof *rec);
    snprintf(rec->name, sizeof rec->name, "quantized_%d", i);
    ir_spec_type_str(literal->dtype, &literal->shape, rec->type, sizeof rec->type);
    rec->constant = true;
    return v;
}

static int model_index(const ag_saved_model *m, const rt_variable *v)
{
    for (int k = 0; k < m->man->n_variables; k++)
        if (m->vars[k] == v)
            return k;
    return -1;
}

char *sm_graph_text(const ir_function *g)
{
    char *text = NULL;
    size_t n = 0;
    FILE *mem = open_memstream(&text, &n);
    ir_print(g, mem);
    fclose(mem);
    return text;
}

bool sm_replace_function_graph(ag_saved_model *m, int i, ir_function *g, char *err,
                               size_t errlen)
{
    sm_function *f = &m->man->functions[i];
    sm_thaw_constants(g, new_constant, m);
    if (g->n_vars > SM_MAX_FN_VARIABLES) {
        snprintf(err, errlen, "'%s' would read %d variables; a saved function may read %d",
                 f->function, g->n_vars, SM_MAX_FN_VARIABLES);
        return false;
    }
    for (int j = 0; j < g->n_vars; j++) {
        int k = model_index(m, g->vars[j]);
        if (k < 0) {
            snprintf(err, errlen, "'%s' reads a variable the model does not have", f->function);
            return false;
        }
        f->variables[j] = k;
    }
    f->n_variables = g->n_vars;
    free(m->fns[i].text);
    m->fns[i].text = sm_graph_text(g);
    return true;
}

void sm_drop_unread_variables(ag_saved_model *m)
{
    sm_manifest *man = m->man;
    int *to = rt_xcalloc((size_t)man->n_variables + 1, sizeof *to);
    for (int i = 0; i < man->n_functions; i++)
        for (int j = 0; j < man->functions[i].n_variables; j++)
            to[man->functions[i].variables[j]] = 1;
    int kept = 0;
    for (int k = 0; k < man->n_variables; k++) {
        if (!to[k]) {
            ag_variable_free_at((ag_loc){0}, m->vars[k]);
            continue;
        }
        man->variables[kept] = man->variables[k];
        m->vars[kept] = m->vars[k];
        to[k] = kept++;
    }
    man->n_variables = kept;
    for (int i = 0; i < man->n_functions; i++)
        for (int j = 0; j < man->functions[i].n_variables; j++)
            man->functions[i].variables[j] = to[man->functions[i].variables[j]];
    free(to);
}
