/*
 * freeze.c - a saved function's variables as constants, for ahead-of-time
 * compilation (agc-model aot), as tfcompile freezes a graph: an object
 * file has no process whose variables it could read, so each variable
 * read becomes a constant holding the value the model saved. A function
 * that assigns a variable cannot be frozen.
 */
#include "model.h"

#include <string.h>

static bool is_assign(int op)
{
    return op == RT_OP_ASSIGN || op == RT_OP_ASSIGN_ADD || op == RT_OP_ASSIGN_SUB;
}

/* A copy of v in fn's arena. */
static rt_value *arena_copy(ir_function *fn, const rt_value *v)
{
    rt_value *c = ir_alloc(fn->arena, sizeof *c);
    *c = *v;
    c->storage = NULL;
    c->list = NULL;
    size_t bytes = rt_value_bytes(v);
    c->data = ir_alloc(fn->arena, bytes ? bytes : 1);
    if (bytes)
        memcpy(c->data, v->data, bytes);
    return c;
}

static bool freeze_graph(ir_function *fn, ir_graph *g, char *err, size_t errlen)
{
    for (ir_node *n = g->first; n; n = n->next) {
        for (int r = 0; r < 2; r++)
            if (n->region[r] && !freeze_graph(fn, n->region[r], err, errlen))
                return false;
        if (is_assign(n->opcode)) {
            snprintf(err, errlen, "%s:%d: the function assigns a variable; only functions "
                                  "that read their variables can be compiled ahead of time",
                     n->loc.file ? n->loc.file : "?", n->loc.line);
            return false;
        }
        if (n->opcode != RT_OP_VAR_READ)
            continue;
        const rt_variable *v = n->attrs.ref;
        n->opcode = RT_OP_CONST;
        memset(&n->attrs, 0, sizeof n->attrs);
        n->attrs.literal = arena_copy(fn, v->value);
    }
    return true;
}

/* Each node's effect flag and control edge, again: reads are gone. */
static void rechain(ir_graph *g)
{
    ir_node *last = NULL;
    for (ir_node *n = g->first; n; n = n->next) {
        for (int r = 0; r < 2; r++)
            if (n->region[r])
                rechain(n->region[r]);
        if (n->opcode < RT_OP_COUNT)
            n->effect = (rt_ops[n->opcode].flags & RT_F_EFFECT) != 0;
        else if (n->opcode == IR_COND || n->opcode == IR_WHILE)
            n->effect = ir_graph_has_effects(n->region[0]) || ir_graph_has_effects(n->region[1]);
        n->ctrl = n->effect ? last : NULL;
        if (n->effect)
            last = n;
    }
    g->last_effect = last;
}

bool sm_freeze_variables(ir_function *fn, char *err, size_t errlen)
{
    if (!fn->n_vars)
        return true;
    if (!freeze_graph(fn, fn->body, err, errlen))
        return false;
    rechain(fn->body);
    fn->n_vars = 0;
    return true;
}
