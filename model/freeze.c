/*
 * freeze.c - variables as constants, and large constants as variables.
 *
 * Freezing: an object file has no process whose variables it could read
 * (agc-model aot), and a TPU function's weights belong in HBM with its
 * program (agc-convert), so each read of a frozen variable becomes a
 * constant holding its value, as tfcompile freezes a graph. A function
 * that assigns a frozen variable cannot be frozen.
 *
 * Thawing is the other way, for saving: a large constant becomes a read
 * of a model variable marked constant, so that its data goes to
 * variables.bin, in binary with a checksum, instead of into the text IR;
 * loading freezes it back.
 */
#include "model.h"

#include <stdlib.h>
#include <string.h>

static bool is_assign(int op)
{
    return op == RT_OP_ASSIGN || op == RT_OP_ASSIGN_ADD || op == RT_OP_ASSIGN_SUB;
}

typedef struct freezer {
    ir_function *fn;
    sm_freeze_fn which; /* NULL: every variable */
    void *ctx;
    char *err;
    size_t errlen;
} freezer;

static bool frozen(const freezer *F, const rt_variable *v)
{
    return !F->which || F->which(v, F->ctx);
}

static bool freeze_graph(freezer *F, ir_graph *g)
{
    for (ir_node *n = g->first; n; n = n->next) {
        for (int r = 0; r < 2; r++)
            if (n->region[r] && !freeze_graph(F, n->region[r]))
                return false;
        if (is_assign(n->opcode) && frozen(F, n->attrs.ref)) {
            snprintf(F->err, F->errlen, "%s:%d: the function assigns a variable; only "
                     "functions that read their variables can be compiled ahead of time or "
                     "read them as constants", n->loc.file ? n->loc.file : "?", n->loc.line);
            return false;
        }
        if (n->opcode != RT_OP_VAR_READ || !frozen(F, n->attrs.ref))
            continue;
        const rt_variable *v = n->attrs.ref;
        n->opcode = RT_OP_CONST;
        memset(&n->attrs, 0, sizeof n->attrs);
        n->attrs.literal = ir_arena_value(F->fn, v->value);
    }
    return true;
}

/* The variables still read, in order. */
static void keep_unfrozen(freezer *F)
{
    ir_function *fn = F->fn;
    int kept = 0;
    for (int i = 0; i < fn->n_vars; i++)
        if (!frozen(F, fn->vars[i]))
            fn->vars[kept++] = fn->vars[i];
    fn->n_vars = kept;
}

bool sm_freeze_variables_if(ir_function *fn, sm_freeze_fn which, void *ctx, char *err,
                            size_t errlen)
{
    if (!fn->n_vars)
        return true;
    freezer F = {fn, which, ctx, err, errlen};
    if (!freeze_graph(&F, fn->body))
        return false;
    ir_rechain_effects(fn);
    keep_unfrozen(&F);
    return true;
}

bool sm_freeze_variables(ir_function *fn, char *err, size_t errlen)
{
    return sm_freeze_variables_if(fn, NULL, NULL, err, errlen);
}

/* ------------------------------------------------------------- thawing */

static void thaw_graph(ir_function *fn, ir_graph *g, sm_thaw_fn make, void *ctx)
{
    for (ir_node *n = g->first; n; n = n->next) {
        for (int r = 0; r < 2; r++)
            if (n->region[r])
                thaw_graph(fn, n->region[r], make, ctx);
        if (n->opcode != RT_OP_CONST || !n->attrs.literal ||
            n->attrs.literal->numel < SM_CONSTANT_MIN_ELEMENTS)
            continue;
        rt_variable *v = make(n->attrs.literal, ctx);
        if (!v)
            continue;
        n->opcode = RT_OP_VAR_READ;
        memset(&n->attrs, 0, sizeof n->attrs);
        n->attrs.ref = v;
        ir_function_var_index(fn, v);
    }
}

void sm_thaw_constants(ir_function *fn, sm_thaw_fn make, void *ctx)
{
    thaw_graph(fn, fn->body, make, ctx);
    ir_rechain_effects(fn);
}
