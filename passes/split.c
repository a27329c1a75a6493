/*
 * split.c - a function cut in three at the nodes traced in given scopes:
 * the host work before them, the scopes' own nodes, and the host work
 * after them, each a function of its own. It is how a saved model batches
 * inside a graph (model/call.c): the middle part (the inlined TPU
 * functions) runs on batches of many callers' rows, while each caller
 * runs the host work around it on its own thread, as TensorFlow's
 * BatchFunction op sits in front of the TPU computation.
 *
 * Which part a top-level node belongs to:
 *   - a node traced in one of the scopes: the middle;
 *   - any other node that reads a value of the middle or of the part
 *     after it: after;
 *   - the rest: before.
 * Constants belong to every part that reads them (each gets a copy), so
 * that a literal never becomes a parameter of the middle. A node of the
 * middle that reads host work done after the middle cannot be cut
 * there: that is an error naming both lines. The cut is at the top level;
 * a cond or while goes where its own node goes, with its regions.
 *
 * Each part is made from a copy of the function: the values it reads
 * from the others become its parameters (their uses replaced), it
 * returns what the later parts read, and the nodes of the other parts
 * are unlinked. pass_split_source says where each parameter of the middle
 * and of the last part comes from: the function's inputs, or a result
 * of an earlier part.
 */
#include "pass_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum part { PART_PRE, PART_MIDDLE, PART_POST, PART_CONST };

/* The function's top-level nodes in program order, with their parts, and
 * which parts read each value (bit 1 << part). */
typedef struct cut {
    const ir_function *fn;
    const char *const *scopes;
    int n_scopes;
    int n;
    const ir_node **nodes;
    enum part *part;
    unsigned *read_by; /* by node id; parameters too */
    int *pos;          /* by node id: 1 + the index in nodes, 0 for others */
    int count[4];
} cut;

static bool split_error(char *err, size_t errlen, const ir_node *at, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (at && at->loc.file)
        snprintf(err, errlen, "%s:%d: %s", at->loc.file, at->loc.line, msg);
    else
        snprintf(err, errlen, "%s", msg);
    return false;
}

static bool in_scopes(const ir_node *n, const char *const *scopes, int n_scopes)
{
    for (int i = 0; i < n_scopes; i++)
        if (ir_scope_within(n->scope, scopes[i]))
            return true;
    return false;
}

/* The part of a node: where its value lives (a constant's is wherever it
 * is read; a parameter's is the function's inputs). */
static int part_of(const cut *c, const ir_node *v)
{
    int i = v->opcode == IR_PARAM ? 0 : c->pos[v->id];
    return i ? (int)c->part[i - 1] : -1;
}

static const char *op_name(const ir_node *n)
{
    return n->opcode < RT_OP_COUNT ? rt_ops[n->opcode].name : ir_opcode_name(n->opcode);
}

/* Assigns every top-level node its part; false (with err) when the
 * middle reads host work that reads the middle. */
static bool classify(cut *c, const char *const *scopes, int n_scopes, const char *what,
                     char *err, size_t errlen)
{
    int i = 0;
    for (const ir_node *n = c->fn->body->first; n; n = n->next, i++) {
        c->nodes[i] = n;
        c->pos[n->id] = i + 1;
        enum part p;
        if (pass_is_const(n))
            p = PART_CONST;
        else if (n->opcode == IR_GET)
            p = (enum part)part_of(c, n->in[0]);
        else if (in_scopes(n, scopes, n_scopes))
            p = PART_MIDDLE;
        else
            p = PART_PRE;
        for (int k = 0; k < n->n_in && p != PART_CONST && n->opcode != IR_GET; k++) {
            int q = part_of(c, n->in[k]);
            if (p == PART_MIDDLE && q == PART_POST)
                return split_error(err, errlen, n,
                                   "%s: '%s' here reads the result of '%s' at line %d, host "
                                   "work done after %s's own nodes; batch the whole function "
                                   "instead (name it in batch_options' experimental)",
                                   what, op_name(n), op_name(n->in[k]), n->in[k]->loc.line, what);
            if (p == PART_PRE && (q == PART_MIDDLE || q == PART_POST))
                p = PART_POST;
        }
        c->part[i] = p;
        c->count[p]++;
    }
    return true;
}

/* read_by[v] |= the parts of the nodes (and results, for the last part)
 * that read v. */
static void mark_reads(cut *c)
{
    for (int i = 0; i < c->n; i++) {
        const ir_node *n = c->nodes[i];
        if (c->part[i] == PART_CONST)
            continue;
        for (int k = 0; k < n->n_in; k++)
            c->read_by[n->in[k]->id] |= 1u << c->part[i];
    }
    const ir_graph *g = c->fn->body;
    for (int r = 0; r < g->n_results; r++)
        c->read_by[g->results[r]->id] |= 1u << PART_POST;
}

/* ------------------------------------------------------------ the parts */

/* The values part `into` reads from elsewhere, in program order
 * (parameters first): its parameters. */
static int crossing_in(const cut *c, enum part into, const ir_node **out)
{
    int k = 0;
    const ir_graph *g = c->fn->body;
    for (int i = 0; i < g->n_params; i++)
        if (c->read_by[g->params[i]->id] & (1u << into))
            out[k++] = g->params[i];
    for (int i = 0; i < c->n; i++)
        if (c->part[i] != PART_CONST && c->part[i] != into &&
            (c->read_by[c->nodes[i]->id] & (1u << into)))
            out[k++] = c->nodes[i];
    return k;
}

/* The values of part `from` that later parts read: its results. */
static int crossing_out(const cut *c, enum part from, const ir_node **out)
{
    int k = 0;
    unsigned later = from == PART_PRE ? (1u << PART_MIDDLE) | (1u << PART_POST) : 1u << PART_POST;
    for (int i = 0; i < c->n; i++)
        if (c->part[i] == from && (c->read_by[c->nodes[i]->id] & later))
            out[k++] = c->nodes[i];
    return k;
}

/* The node of `copy` at v's place in c's function (mine: copy's
 * top-level nodes in order). */
static ir_node *twin(const cut *c, ir_function *copy, ir_node *const *mine, const ir_node *v)
{
    if (v->opcode == IR_PARAM)
        return copy->body->params[v->index];
    return mine[c->pos[v->id] - 1];
}

/* The user's names for part p, as listings, profiles and errors show
 * it: the middle is the functions the scopes name ("layer", "layer,
 * head"), the others the function around them ("serve before layer",
 * "serve after layer"). A scope is a call path ("outer/layer"): its last
 * call is the function the user named. */
static void part_name(const cut *c, enum part p, char *name, size_t len)
{
    char called[200] = "";
    size_t used = 0;
    for (int k = 0; k < c->n_scopes && used < sizeof called; k++) {
        const char *last = strrchr(c->scopes[k], '/');
        used += (size_t)snprintf(called + used, sizeof called - used, "%s%s", k ? ", " : "",
                                 last ? last + 1 : c->scopes[k]);
    }
    const char *fn = c->fn->name ? c->fn->name : "the function";
    if (p == PART_MIDDLE)
        snprintf(name, len, "%s", called);
    else
        snprintf(name, len, "%s %s %s", fn, p == PART_PRE ? "before" : "after", called);
}

/* Part p as a function: a copy of c's function whose parameters are ins
 * (NULL: keep the function's own), whose results are outs, without the
 * other parts' nodes. */
static ir_function *make_part(const cut *c, enum part p,
                              const ir_node **ins, int n_ins, const ir_node **outs, int n_outs,
                              char *err, size_t errlen)
{
    ir_function *f = ir_copy(c->fn, err, errlen);
    if (!f)
        return NULL;
    ir_graph *g = f->body;
    ir_node **mine = rt_xcalloc((size_t)c->n + 1, sizeof *mine);
    ir_node *m = g->first;
    for (int i = 0; i < c->n; i++, m = m->next)
        mine[i] = m;
    ir_node **results = rt_xcalloc((size_t)n_outs + 1, sizeof *results);
    for (int r = 0; r < n_outs; r++)
        results[r] = twin(c, f, mine, outs[r]);
    if (ins) {
        ir_node **params = ir_alloc(f->arena, (size_t)(n_ins + 1) * sizeof *params);
        for (int k = 0; k < n_ins; k++) {
            ir_node *from = twin(c, f, mine, ins[k]);
            params[k] = ir_add_param(g, &from->type);
            params[k]->loc = from->loc; /* errors about it point at the value's line */
            pass_replace_uses(g, from, params[k], false);
            for (int r = 0; r < n_outs; r++)
                if (results[r] == from)
                    results[r] = params[k];
        }
        for (int k = 0; k < n_ins; k++)
            params[k]->index = k;
        g->params = params;
        g->n_params = n_ins;
    }
    ir_set_results(g, n_outs, results);
    for (int i = c->n - 1; i >= 0; i--)
        if (c->part[i] != p && c->part[i] != PART_CONST)
            ir_remove(mine[i]);
    pass_fix_effects(f);
    char name[256];
    part_name(c, p, name, sizeof name);
    f->name = ir_strdup(f->arena, name);
    free(mine);
    free(results);
    if (!ir_verify(f, err, errlen)) {
        ir_function_free(f);
        return NULL;
    }
    return f;
}

/* Where each of ins comes from: the function's inputs, or the results
 * pre_outs (of the part before) or mid_outs (of the middle). */
static pass_split_source *sources(const ir_node **ins, int n_ins, const ir_node **pre_outs,
                                  int n_pre, const ir_node **mid_outs, int n_mid)
{
    pass_split_source *s = rt_xcalloc((size_t)n_ins + 1, sizeof *s);
    for (int k = 0; k < n_ins; k++) {
        if (ins[k]->opcode == IR_PARAM) {
            s[k] = (pass_split_source){PASS_FROM_INPUT, ins[k]->index};
            continue;
        }
        for (int j = 0; j < n_pre; j++)
            if (pre_outs[j] == ins[k])
                s[k] = (pass_split_source){PASS_FROM_PRE, j};
        for (int j = 0; j < n_mid; j++)
            if (mid_outs[j] == ins[k])
                s[k] = (pass_split_source){PASS_FROM_MIDDLE, j};
    }
    return s;
}

static bool build(cut *c, pass_split *out, char *err, size_t errlen)
{
    size_t cap = (size_t)c->n + (size_t)c->fn->body->n_params + 1;
    const ir_node **pre_outs = rt_xcalloc(cap, sizeof *pre_outs);
    const ir_node **mid_ins = rt_xcalloc(cap, sizeof *mid_ins);
    const ir_node **mid_outs = rt_xcalloc(cap, sizeof *mid_outs);
    const ir_node **post_ins = rt_xcalloc(cap, sizeof *post_ins);
    int n_pre = crossing_out(c, PART_PRE, pre_outs);
    int n_mid_in = crossing_in(c, PART_MIDDLE, mid_ins);
    int n_mid = crossing_out(c, PART_MIDDLE, mid_outs);
    int n_post_in = crossing_in(c, PART_POST, post_ins);
    const ir_graph *g = c->fn->body;
    bool ok = true;
    if (c->count[PART_PRE])
        ok = (out->pre = make_part(c, PART_PRE, NULL, 0, pre_outs, n_pre, err, errlen));
    ok = ok && (out->middle = make_part(c, PART_MIDDLE, mid_ins, n_mid_in, mid_outs,
                                        n_mid, err, errlen));
    ok = ok && (out->post = make_part(c, PART_POST, post_ins, n_post_in,
                                      (const ir_node **)g->results, g->n_results, err, errlen));
    if (ok) {
        out->middle_in = sources(mid_ins, n_mid_in, pre_outs, n_pre, NULL, 0);
        out->post_in = sources(post_ins, n_post_in, pre_outs, n_pre, mid_outs, n_mid);
    }
    free(pre_outs);
    free(mid_ins);
    free(mid_outs);
    free(post_ins);
    return ok;
}

bool pass_split_scopes(const ir_function *fn, const char *const *scopes, int n_scopes,
                       const char *what, pass_split *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    cut c = {.fn = fn, .scopes = scopes, .n_scopes = n_scopes};
    for (const ir_node *n = fn->body->first; n; n = n->next)
        c.n++;
    c.nodes = rt_xcalloc((size_t)c.n + 1, sizeof *c.nodes);
    c.part = rt_xcalloc((size_t)c.n + 1, sizeof *c.part);
    c.read_by = rt_xcalloc((size_t)fn->next_id + 1, sizeof *c.read_by);
    c.pos = rt_xcalloc((size_t)fn->next_id + 1, sizeof *c.pos);
    bool ok = classify(&c, scopes, n_scopes, what, err, errlen);
    if (ok && !c.count[PART_MIDDLE])
        ok = split_error(err, errlen, NULL,
                         "%s: no node of the function's own body was traced in it (a call "
                         "inside a loop or a branch is not cut out); batch the whole function "
                         "instead (name it in batch_options' experimental)",
                         what);
    if (ok) {
        mark_reads(&c);
        ok = build(&c, out, err, errlen);
    }
    free(c.nodes);
    free(c.part);
    free(c.read_by);
    free(c.pos);
    if (!ok)
        pass_split_free(out);
    return ok;
}

void pass_split_free(pass_split *s)
{
    if (s->pre)
        ir_function_free(s->pre);
    if (s->middle)
        ir_function_free(s->middle);
    if (s->post)
        ir_function_free(s->post);
    free(s->middle_in);
    free(s->post_in);
    memset(s, 0, sizeof *s);
}
