/*
 * trace.c - the tracer: rt_apply's hook, frames and captures.
 *
 * Staged control flow lives in staged.c; it builds on the frame functions
 * declared in trace_internal.h.
 */
#include "trace_internal.h"

#include "exec.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local ir_trace *current;

ir_trace *ir_trace_current(void) { return current; }
bool ir_trace_active(void) { return current != NULL; }

void ir_trace_fail(void)
{
    if (current)
        current->failed = true;
}

const char *ir_trace_enter_scope(const char *name)
{
    if (!current)
        return NULL;
    ir_function *fn = current->fn;
    const char *previous = fn->scope;
    size_t n = (previous ? strlen(previous) + 1 : 0) + strlen(name) + 1;
    char *s = ir_alloc(fn->arena, n);
    snprintf(s, n, "%s%s%s", previous ? previous : "", previous ? "/" : "", name);
    fn->scope = s;
    return previous;
}

void ir_trace_leave_scope(const char *previous)
{
    if (current)
        current->fn->scope = previous;
}

rt_value *ir_symbolic_value(ir_node *node)
{
    rt_value *v = rt_xcalloc(1, sizeof *v);
    v->kind = RT_SYMBOLIC;
    v->dtype = node->type.dtype;
    v->elem_dtype = node->type.elem_dtype;
    v->shape = node->type.shape;
    v->numel = v->shape.rank >= 0 ? rt_shape_numel(&v->shape) : -1;
    v->sym = node;
    return v;
}

ag_tensor ir_symbolic_handle(ir_node *node)
{
    return rt_handle_new(ir_symbolic_value(node));
}

/* ----------------------------------------------------------------- frames */

void ir_frame_push(ir_trace *t, ir_frame *f, ir_graph *g)
{
    memset(f, 0, sizeof *f);
    f->g = g;
    f->outer = t->cur;
    t->cur = f;
    rt_trace_frame = f;
}

void ir_frame_pop(ir_trace *t, ir_frame *f)
{
    t->cur = f->outer;
    rt_trace_frame = t->cur;
}

void ir_frame_release(ir_frame *f)
{
    free(f->caps);
    f->caps = NULL;
    f->n_caps = f->cap_caps = 0;
}

static ir_node *capture(ir_frame *f, ir_node *n);

/* The node standing for n inside frame f: n itself, or a capture of it. */
ir_node *ir_frame_localize(ir_frame *f, ir_node *n)
{
    if (n->graph == f->g)
        return n;
    for (int i = 0; i < f->n_caps; i++)
        if (f->caps[i].key == n)
            return f->caps[i].param;
    return capture(f, n);
}

static ir_node *capture(ir_frame *f, ir_node *n)
{
    if (!f->outer)
        return NULL; /* not from this trace */
    ir_node *outer = ir_frame_localize(f->outer, n);
    if (!outer)
        return NULL;
    if (f->n_caps == f->cap_caps) {
        f->cap_caps = f->cap_caps ? f->cap_caps * 2 : 8;
        f->caps = rt_xrealloc(f->caps, (size_t)f->cap_caps * sizeof *f->caps);
    }
    ir_node *p = ir_add_param(f->g, &n->type);
    f->caps[f->n_caps++] = (ir_capture){n, outer, p};
    return p;
}

/* The node for value v in the current frame: symbolic values are localized,
 * concrete ones become constants. NULL after reporting at loc. */
ir_node *ir_trace_node_of(ir_trace *t, rt_value *v, ag_loc loc)
{
    if (v->kind == RT_SYMBOLIC) {
        ir_node *n = v->sym;
        ir_node *local = n->graph->fn == t->fn ? ir_frame_localize(t->cur, n) : NULL;
        if (!local) {
            rt_report(loc, "a symbolic tensor from another function's trace was used "
                           "here; return it from that function instead");
            t->failed = true;
        }
        return local;
    }
    if (v->dtype == RT_LIST) {
        rt_report(loc, "a tensor array made outside this function cannot be used in "
                       "its graph; pass it as a parameter");
        t->failed = true;
        return NULL;
    }
    return ir_append_const(t->cur->g, v, loc);
}

/* Like ir_trace_node_of, for a handle; NULL for the zero ("undefined")
 * handle without an error, and after reporting a bad handle. */
ir_node *ir_trace_node_of_handle(ir_trace *t, ag_tensor h, ag_loc loc, bool *undefined)
{
    *undefined = h.id == 0 && h.gen == 0;
    if (*undefined)
        return NULL;
    rt_value *v = rt_handle_get(loc, h);
    if (!v) {
        t->failed = true;
        return NULL;
    }
    return ir_trace_node_of(t, v, loc);
}

/* ------------------------------------------------------------------- hook */

static rt_value *record(ag_loc loc, rt_op op, const rt_attrs *a, rt_value *const *in,
                        int n, ag_dtype dt, const ag_shape *shape)
{
    ir_trace *t = current;
    ir_node *stack_nodes[8];
    ir_node **nodes = n <= 8 ? stack_nodes : rt_xmalloc((size_t)n * sizeof *nodes);
    rt_value *out = NULL;
    bool ok = true;
    for (int i = 0; i < n && ok; i++)
        ok = (nodes[i] = ir_trace_node_of(t, in[i], loc)) != NULL;
    if (ok) {
        ir_type type = {.dtype = dt, .shape = *shape};
        if (dt == RT_LIST)
            type.elem_dtype = op == RT_OP_TA_NEW ? a->dtype : in[0]->elem_dtype;
        out = ir_symbolic_value(ir_append(t->cur->g, op, a, n, nodes, &type, loc));
    }
    if (nodes != stack_nodes)
        free(nodes);
    return out;
}

/* ----------------------------------------- variables made while tracing */

static bool depends_on_param(const ir_node *n, bool *seen)
{
    if (seen[n->id])
        return false;
    seen[n->id] = true;
    if (n->opcode == IR_PARAM)
        return true;
    for (int i = 0; i < n->n_in; i++)
        if (depends_on_param(n->in[i], seen))
            return true;
    return false;
}

static rt_value *concretize(ag_loc loc, const rt_value *v)
{
    ir_trace *t = current;
    const ir_node *n = v->sym;
    if (!t->first_trace) {
        rt_report(loc, "ag_variable_new: '%s' only supports singleton variables created "
                       "on the first call: a variable may be created inside it only on "
                       "its first trace, and this call traces it again (a new input "
                       "signature, or a new optimizer) and would create another one. "
                       "Create the variable outside the function and pass it in; for an "
                       "optimizer's slot variables, give each optimizer its own "
                       "AG_FUNCTION (one concrete function per optimizer)", t->fn->name);
        t->failed = true;
        return NULL;
    }
    bool *seen = rt_xcalloc((size_t)t->fn->next_id + 1, sizeof *seen);
    bool depends = n->graph != t->fn->body || depends_on_param(n, seen);
    free(seen);
    if (depends) {
        rt_report(loc, "ag_variable_new: the initial value of a variable created inside "
                       "'%s' must not depend on its parameters or on staged control "
                       "flow; compute it from constants", t->fn->name);
        t->failed = true;
        return NULL;
    }
    rt_value *out = ir_evaluate(t->fn, n);
    if (!out)
        t->failed = true;
    return out;
}

void ir_trace_set_first(ir_trace *t, bool first) { t->first_trace = first; }

/* ---------------------------------------------------------- begin and end */

static void record_invariant(ag_loc loc, const ag_tensor *var, const char *text,
                             ag_shape invariant);
static bool unmatched_invariants(ir_trace *t);

ir_trace *ir_trace_begin(ir_function *fn)
{
    ir_trace *t = rt_xcalloc(1, sizeof *t);
    t->fn = fn;
    rt_loop_options_hook = record_invariant;
    ir_frame_push(t, &t->top, fn->body);
    t->saved_hook = rt_trace_hook;
    t->saved_concretize = rt_trace_concretize;
    t->saved = current;
    rt_trace_hook = record;
    rt_trace_concretize = concretize;
    rt_error_latch(true);
    current = t;
    return t;
}

bool ir_trace_end(ir_trace *t)
{
    bool ok = !t->failed && !unmatched_invariants(t);
    t->fn->scope = NULL; /* nodes added by passes later are the function's own */
    rt_trace_hook = t->saved_hook;
    rt_trace_concretize = t->saved_concretize;
    rt_error_latch(false);
    current = t->saved;
    rt_trace_frame = current ? current->cur : NULL;
    ir_frame_release(&t->top);
    free(t->invariants);
    free(t);
    return ok;
}

ag_tensor ir_trace_param(ir_trace *t, const ir_type *type)
{
    return ir_symbolic_handle(ir_add_param(t->fn->body, type));
}

bool ir_trace_set_outputs(ir_trace *t, int n, const ag_tensor *outs, ag_loc loc)
{
    ir_node **nodes = rt_xcalloc((size_t)(n ? n : 1), sizeof *nodes);
    bool ok = true;
    /* After a reported failure the outputs are usually undefined too;
     * saying so again would only bury the first, real error. */
    for (int i = 0; i < n && ok && !t->failed; i++) {
        bool undefined;
        nodes[i] = ir_trace_node_of_handle(t, outs[i], loc, &undefined);
        if (undefined)
            rt_report(loc, "the function returns an undefined tensor (output %d)", i);
        ok = nodes[i] != NULL;
    }
    ok = ok && !t->failed;
    if (ok)
        ir_set_results(t->fn->body, n, nodes);
    free(nodes);
    if (!ok)
        t->failed = true;
    return ok;
}

/* ------------------------------------------------------ loop options */

/* ag_set_loop_options while tracing (the runtime checked its arguments):
 * at the top of a loop body it applies to that loop; else the invariant
 * waits for the next staged loop that carries the variable. */
static void record_invariant(ag_loc loc, const ag_tensor *var, const char *text,
                             ag_shape invariant)
{
    ir_trace *t = current;
    if (!t)
        return; /* eager loops check nothing */
    ir_invariant inv = {var, text, invariant, loc};
    if (ir_loop_take_option(t, &inv))
        return;
    if (t->n_invariants == t->cap_invariants) {
        t->cap_invariants = t->cap_invariants ? t->cap_invariants * 2 : 4;
        t->invariants = rt_xrealloc(t->invariants,
                                    (size_t)t->cap_invariants * sizeof *t->invariants);
    }
    t->invariants[t->n_invariants++] = inv;
}

/* The identifier `text` names after '&' (and spaces or parentheses), or
 * NULL with *len 0 when it names no plain variable ("&s.x", "p"). */
static const char *named_variable(const char *text, size_t *len)
{
    *len = 0;
    while (*text == ' ' || *text == '(')
        text++;
    if (*text++ != '&')
        return NULL;
    while (*text == ' ' || *text == '(')
        text++;
    const char *name = text;
    while (*text == '_' || isalnum((unsigned char)*text))
        text++;
    *len = (size_t)(text - name);
    while (*text == ' ' || *text == ')')
        text++;
    if (*text || !*len || isdigit((unsigned char)*name))
        *len = 0;
    return *len ? name : NULL;
}

/* Whether the invariant is for the loop variable at address var, named
 * name: the same address (state passed by hand), or the same name (agc's
 * staged code, whose loops carry copies of the user's variables). */
bool ir_invariant_is_for(const ir_invariant *inv, ag_tensor *const var, const char *name)
{
    if (inv->var == var)
        return true;
    size_t len;
    const char *own = named_variable(inv->text, &len);
    return own && strlen(name) == len && memcmp(own, name, len) == 0;
}

/* Takes the pending shape invariant set for the loop variable var, if any. */
bool ir_trace_take_invariant(ir_trace *t, ag_tensor *const var, const char *name,
                             ag_shape *out)
{
    for (int i = 0; i < t->n_invariants; i++) {
        if (ir_invariant_is_for(&t->invariants[i], var, name)) {
            *out = t->invariants[i].shape;
            memmove(&t->invariants[i], &t->invariants[i + 1],
                    (size_t)(t->n_invariants - i - 1) * sizeof *t->invariants);
            t->n_invariants--;
            return true;
        }
    }
    return false;
}

/* An invariant no staged loop took would be ignored silently: the loop
 * after it is not staged, or does not carry the variable. Reported, unless
 * the trace failed already (its loops may not have been reached). */
static bool unmatched_invariants(ir_trace *t)
{
    if (t->failed || !t->n_invariants)
        return false;
    const ir_invariant *inv = &t->invariants[0];
    rt_report(inv->loc, "ag_set_loop_options(%s, ...): no staged loop after it carries "
                        "this variable; call it at the top of the loop's body, or before "
                        "a loop that assigns the variable",
              inv->text);
    t->failed = true;
    return true;
}
