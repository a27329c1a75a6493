/*
 * place.c - device placement for a device target (one whose capabilities
 * say which ops it supports, as the tpu-model's do).
 *
 * Every node the device supports is placed on it: its ir_node.device is
 * the device named by the target's caps (device("tpu-model") in the text
 * form). With soft device placement (options.soft_placement), the others
 * stay on the host (IR_HOST), and every value that crosses between the two
 * goes through an explicit transfer node: to_host before a host op reads
 * a device value, to_device before a device op reads a host value, each
 * made once per value and side. Without it, the pass places only what the
 * device supports and the pipeline reports the rest as errors at the
 * user's line.
 *
 * Tensor arrays are host objects: they are never transferred, and the ops
 * on them (the device has none) read them where they are.
 * The function's own parameters and results are the host's to hand over:
 * the target moves them in and out (its program starts and ends with those
 * transfers), so they need no node. A cond or while sits on the device's
 * scalar unit; its regions' parameters live where it does.
 *
 * The converter places only some functions on the device: with
 * options.device_scopes, a node goes there only if it was traced in one of
 * them (ir_node.scope); every other node is the host's, with transfers.
 */
#include "pass_internal.h"

#include <stdlib.h>

/* Whether n was traced in one of the scopes chosen for the device (any
 * node, when none are). */
bool pass_in_device_scope(const pass_options *o, const ir_node *n)
{
    if (!o->n_device_scopes)
        return true;
    for (int i = 0; i < o->n_device_scopes; i++)
        if (ir_scope_within(n->scope, o->device_scopes[i]))
            return true;
    return false;
}

static bool on_device(const pass_caps *caps, const pass_options *o, const ir_node *n)
{
    if (n->opcode == IR_PARAM)
        return n->graph->parent != NULL; /* a region's parameter: where its op is */
    if (!pass_in_device_scope(o, n))
        return false;
    if (n->opcode == IR_COND || n->opcode == IR_WHILE || n->opcode == IR_GET)
        return true; /* the scalar unit */
    return n->opcode < RT_OP_COUNT && caps->supports(n->opcode, n->type.dtype);
}

typedef struct placer {
    const pass_caps *caps;
    ir_device device; /* the target's, by its name */
    const pass_options *opt;
    pass_map to_device; /* host value -> its to_device node */
    pass_map to_host;   /* device value -> its to_host node */
    bool changed;
} placer;

static bool is_device(const ir_node *n) { return n->device != IR_HOST; }

/* The side a value is read on: a top-level parameter is on both. */
static bool available(const ir_node *v, bool device)
{
    if (v->opcode == IR_PARAM && !v->graph->parent)
        return true;
    if (v->type.dtype == RT_LIST)
        return true; /* a tensor array is a host object the device never holds */
    return is_device(v) == device;
}

static ir_node *transfer(placer *P, ir_graph *g, ir_node *user, ir_node *v, bool to_device)
{
    pass_map *m = to_device ? &P->to_device : &P->to_host;
    ir_node *t = pass_map_get(m, v);
    if (!t) {
        t = pass_new_node(g, user, to_device ? RT_OP_TO_DEVICE : RT_OP_TO_HOST, &(rt_attrs){0},
                          1, &v, &v->type, user ? user : v);
        t->device = to_device ? P->device : IR_HOST;
        pass_map_set(m, v, t);
    }
    return t;
}

/* n reads its operands on its own side. */
static void connect(placer *P, ir_graph *g, ir_node *n)
{
    bool device = is_device(n);
    for (int i = 0; i < n->n_in; i++) {
        if (available(n->in[i], device))
            continue;
        ir_node **in = rt_xmalloc((size_t)n->n_in * sizeof *in);
        for (int j = 0; j < n->n_in; j++)
            in[j] = available(n->in[j], device) ? n->in[j]
                                                 : transfer(P, g, n, n->in[j], device);
        pass_set_inputs(n, n->n_in, in);
        free(in);
        P->changed = true;
        return;
    }
}

static void place_graph(placer *P, ir_graph *g, bool soft)
{
    for (int i = 0; i < g->n_params; i++)
        g->params[i]->device = g->parent ? P->device : IR_HOST;
    for (ir_node *n = g->first; n; n = n->next) {
        if (n->opcode == RT_OP_TO_DEVICE || n->opcode == RT_OP_TO_HOST)
            continue; /* placed when made */
        ir_device d = on_device(P->caps, P->opt, n) ? P->device : IR_HOST;
        P->changed |= n->device != d;
        n->device = d;
        for (int r = 0; r < 2; r++)
            if (n->region[r])
                place_graph(P, n->region[r], soft);
        if (soft)
            connect(P, g, n);
    }
    /* a region yields device values: its op is on the device */
    for (int i = 0; soft && g->parent && i < g->n_results; i++)
        if (!available(g->results[i], true)) {
            g->results[i] = transfer(P, g, NULL, g->results[i], true);
            P->changed = true;
        }
}

bool pass_place(ir_function *fn, pass_ctx *ctx)
{
    const pass_caps *caps = pass_analyses_caps(ctx->am);
    if (!caps->supports)
        return false; /* the host's own target: nothing to place */
    placer P = {.caps = caps, .opt = &ctx->opt, .device = ir_device_named(caps->target)};
    if (P.device <= IR_HOST)
        return false; /* no name for it (ir.h): everything stays on the host */
    pass_map_init(&P.to_device, fn);
    pass_map_init(&P.to_host, fn);
    /* nodes out of the device's scopes are the host's by choice: they
     * are connected as soft placement connects the device's misfits */
    place_graph(&P, fn->body, ctx->opt.soft_placement || ctx->opt.n_device_scopes > 0);
    pass_map_free(&P.to_device);
    pass_map_free(&P.to_host);
    return P.changed;
}
