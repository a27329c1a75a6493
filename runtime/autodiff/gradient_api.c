/*
 * gradient_api.c - the public gradient calls: of tensors and of variables,
 * one source or many (ag.h, "gradient tapes").
 */
#include "tape.h"

#include <stdlib.h>

/* A tensor source: its id, if it has one (else it is unconnected). */
static bool tensor_source(ag_loc loc, ag_tensor x, uint64_t *id, rt_grad_source *src)
{
    rt_value *v = rt_handle_get(loc, x);
    if (!v)
        return false;
    *id = rt_tape_peek_id(v);
    *src = (rt_grad_source){.ids = id, .n_ids = *id != 0, .like = v};
    return true;
}

bool ag_tape_gradients_at(ag_loc loc, ag_tape t, ag_tensor target, int n,
                          const ag_tensor *sources, ag_tensor *grads)
{
    if (n < 0 || (n > 0 && (!sources || !grads))) {
        rt_report(loc, "ag_tape_gradients: %s", n < 0 ? "n is negative"
                                                      : "sources or grads is NULL");
        return false;
    }
    uint64_t *ids = rt_xcalloc((size_t)n + 1, sizeof *ids);
    rt_grad_source *src = rt_xcalloc((size_t)n + 1, sizeof *src);
    bool ok = true;
    for (int i = 0; i < n && ok; i++)
        ok = tensor_source(loc, sources[i], &ids[i], &src[i]);
    ok = ok && rt_tape_gradients(loc, t, target, n, src, grads);
    free(ids);
    free(src);
    return ok;
}

ag_tensor rt_weighted_sum(ag_loc at, int n, const ag_tensor *ys, const ag_tensor *dys)
{
    ag_tensor total = {0, 0};
    for (int j = 0; j < n; j++) {
        if (ag_is_null(dys[j]))
            continue;
        ag_tensor y = ys[j];
        const rt_value *v = rt_handle_peek(y);
        if (v && v->dtype == RT_LIST) /* an array: its dense gradient's shape */
            y = ag_tensor_array_stack_at(at, (ag_tensor_array){y});
        ag_tensor s = ag_reduce_sum_at(at, ag_mul_at(at, AG_OPERAND(y), AG_OPERAND(dys[j])),
                                       AG_ALL_AXES, false);
        total = ag_is_null(total) ? s : ag_add_at(at, AG_OPERAND(total), AG_OPERAND(s));
    }
    return total;
}

ag_tensor ag_tape_gradient_at(ag_loc loc, ag_tape t, ag_tensor target, ag_tensor source)
{
    ag_tensor g = rt_error_tensor();
    ag_tape_gradients_at(loc, t, target, 1, &source, &g);
    return g;
}

/* The ids of v's reads on tape t, in a new array (*n of them). */
static uint64_t *reads_of(const rt_tape *t, const rt_variable *v, int *n)
{
    uint64_t *ids = rt_xcalloc((size_t)t->n_reads + 1, sizeof *ids);
    *n = 0;
    for (int i = 0; i < t->n_reads; i++)
        if (t->reads[i].var == v)
            ids[(*n)++] = t->reads[i].id;
    return ids;
}

static bool is_variable(ag_loc loc, ag_variable v)
{
    if (v && v->magic == RT_VARIABLE_MAGIC)
        return true;
    rt_report(loc, "ag_tape_gradient_variable: not a live variable (freed, or never "
                   "created)");
    return false;
}

bool ag_tape_gradients_variables_at(ag_loc loc, ag_tape t, ag_tensor target, int n,
                                    const ag_variable *vars, ag_tensor *grads)
{
    if (n < 0 || (n > 0 && (!vars || !grads))) {
        rt_report(loc, "ag_tape_gradients_variables: %s",
                  n < 0 ? "n is negative" : "vars or grads is NULL");
        return false;
    }
    rt_tape *tape = rt_tape_live(loc, "ag_tape_gradient_variable", t);
    rt_grad_source *src = rt_xcalloc((size_t)n + 1, sizeof *src);
    bool ok = tape != NULL;
    for (int i = 0; i < n && ok; i++) {
        ok = is_variable(loc, vars[i]);
        int n_ids = 0;
        if (ok)
            src[i].ids = reads_of(tape, vars[i], &n_ids);
        src[i].n_ids = n_ids;
        src[i].like = ok ? vars[i]->value : NULL;
    }
    ok = ok && rt_tape_gradients(loc, t, target, n, src, grads);
    for (int i = 0; i < n; i++)
        free((void *)src[i].ids);
    free(src);
    return ok;
}

ag_tensor ag_tape_gradient_variable_at(ag_loc loc, ag_tape t, ag_tensor target,
                                       ag_variable v)
{
    ag_tensor g = rt_error_tensor();
    ag_tape_gradients_variables_at(loc, t, target, 1, &v, &g);
    return g;
}

bool ag_is_null(ag_tensor t) { return t.id == 0 && t.gen == 0; }
