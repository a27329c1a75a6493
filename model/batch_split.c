/*
 * batch_split.c - batching inside a graph, as converter.md puts the
 * batching op: in front of the TPU computation. A function the converter
 * placed on the TPU only in part (the AG_FUNCTIONs its body inlined, its
 * device scopes) and batched `in_graph` is cut in three (passes/split.c):
 * the host work before the scopes' nodes and after them runs on each
 * caller's thread, on the host's cpu target; the scopes' nodes, the
 * middle, run on batches of many callers' rows on the device. An
 * AG_FUNCTION named in batch_options' experimental is cut out of its
 * callers the same way (the batch record's scope): then each part runs
 * where the converter placed its nodes.
 *
 * converter.md's shape rules then apply to the middle: every value it
 * reads from the host and every value it hands back must have dimension
 * 0 of the batch, unknown (`?`) in the graph. A weight computed by host
 * work (a variable the converter did not freeze) has no such dimension
 * and cannot be batched: that is an error at conversion, at its line.
 */
#include "model.h"

#include <stdio.h>
#include <string.h>

/* "batching the device nodes of 'serve' (hidden_layers, classifier)" or
 * "batching the nodes of 'layer' in 'serve'" */
static void describe(const sm_function *f, char *out, size_t n)
{
    if (f->batch.scope[0]) {
        snprintf(out, n, "batching the nodes of '%s' in '%s'", f->batch.scope, f->function);
        return;
    }
    int k = snprintf(out, n, "batching the device nodes of '%s' (", f->function);
    for (int i = 0; i < f->n_device_scopes && k > 0 && (size_t)k < n; i++)
        k += snprintf(out + k, n - (size_t)k, "%s%s", i ? ", " : "", f->device_scopes[i].name);
    if (k > 0 && (size_t)k < n)
        snprintf(out + k, n - (size_t)k, ")");
}

/* Whether t has a dimension 0 that batches join along: `?`. */
static bool batched_type(const ir_type *t) { return t->dtype != RT_LIST && t->shape.rank >= 1 && t->shape.dims[0] < 0; }

static bool unbatched(const ir_node *v, const char *what, const char *role, char *err,
                      size_t errlen)
{
    char type[96];
    ir_type_str(&v->type, type, sizeof type);
    int k = v->loc.file ? snprintf(err, errlen, "%s:%d: ", v->loc.file, v->loc.line) : 0;
    if (k < 0 || (size_t)k >= errlen)
        k = 0;
    snprintf(err + k, errlen - (size_t)k,
             "%s: they %s %s, which has %s; every value the batched nodes read from the host "
             "and hand back to it needs dimension 0 of the batch ('?'); freeze the variables "
             "they read, or batch the whole function (name it in batch_options' experimental)",
             what, role, type,
             v->type.shape.rank < 1 ? "no dimension 0" : "a fixed dimension 0");
    return false;
}

bool sm_check_batched(const ir_function *middle, const char *what, char *err, size_t errlen)
{
    const ir_graph *g = middle->body;
    for (int i = 0; i < g->n_params; i++)
        if (!batched_type(&g->params[i]->type))
            return unbatched(g->params[i], what, "read", err, errlen);
    for (int i = 0; i < g->n_results; i++)
        if (!batched_type(&g->results[i]->type))
            return unbatched(g->results[i], what, "hand back", err, errlen);
    return true;
}

bool sm_part_in_scopes(const ir_function *part, const char *const *scopes, int n_scopes)
{
    /* constants are copied into every part that might read them */
    for (const ir_node *n = part->body->first; n; n = n->next)
        for (int k = 0; k < n_scopes && n->opcode != RT_OP_CONST; k++)
            if (ir_scope_within(n->scope, scopes[k]))
                return true;
    return false;
}

bool sm_batch_split(ag_saved_model *m, int i, pass_split *s, pl_request *r,
                    pass_bf16_options *bf16, char *err, size_t errlen)
{
    const sm_function *f = &m->man->functions[i];
    memset(s, 0, sizeof *s);
    if (!sm_request(m, i, PL_COMPILED, r, bf16, err, errlen))
        return false;
    char what[SM_NAME * 4];
    describe(f, what, sizeof what);
    const char *named[1] = {f->batch.scope};
    bool one = f->batch.scope[0] != '\0';
    bool ok = pass_split_scopes(r->graph, one ? named : r->device_scopes,
                                one ? 1 : r->n_device_scopes, what, s, err, errlen) &&
              sm_check_batched(s->middle, what, err, errlen);
    ir_function_free(r->graph);
    r->graph = NULL;
    if (!ok)
        pass_split_free(s);
    return ok;
}
