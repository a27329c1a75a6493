/*
 * verify.c - the structural invariants of a function.
 *
 * What holds after the tracer, the parser and every pass:
 *   - value ids are unique and below fn->next_id;
 *   - every operand is defined earlier in the same graph (or is one of its
 *     parameters): regions see only their own parameters and nodes;
 *   - every op has the arity of the op table, and its type agrees with the
 *     op's dtype and shape rules run on symbolic stand-ins of its operands
 *     (unknown dims, -1, agree with anything);
 *   - cond and while regions take and yield what the node says;
 *   - get picks an existing result of a cond or while, with its type;
 *   - each graph's effectful nodes form one chain of control edges in
 *     program order, and only they have control edges.
 * The first violation is reported at the offending node's source location.
 */
#include "ir.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A node (or parameter) and its position in a pre-order walk. */
typedef struct def {
    const ir_node *node;
    int pos;
} def;

typedef struct verifier {
    const ir_function *fn;
    char *err;
    size_t errlen;
    def *defs; /* sorted by node address, for position lookups */
    int n_defs, cap_defs;
} verifier;

/* ================================================================ errors */

/* The location to blame for n: its own, else its enclosing cond/while's. */
static const ir_node *located(const ir_node *n)
{
    while (n && !n->loc.file)
        n = n->graph ? n->graph->parent : NULL;
    return n;
}

static bool fail(verifier *v, const ir_node *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Writes "file:line[:col]: error: %id (op): message" and returns false. */
static bool fail(verifier *v, const ir_node *n, const char *fmt, ...)
{
    if (!v->err || !v->errlen)
        return false;
    const ir_node *at = located(n);
    int k;
    if (at && at->col > 0)
        k = snprintf(v->err, v->errlen, "%s:%d:%d: error: ", at->loc.file, at->loc.line, at->col);
    else if (at)
        k = snprintf(v->err, v->errlen, "%s:%d: error: ", at->loc.file, at->loc.line);
    else
        k = snprintf(v->err, v->errlen, "@%s: error: ", v->fn->name ? v->fn->name : "");
    if (n && k >= 0 && (size_t)k < v->errlen)
        k += snprintf(v->err + k, v->errlen - (size_t)k, "%%%d (%s): ", n->id,
                      ir_opcode_name(n->opcode));
    if (k >= 0 && (size_t)k < v->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(v->err + k, v->errlen - (size_t)k, fmt, ap);
        va_end(ap);
    }
    return false;
}

static const char *tstr(const ir_type *t, char *buf, size_t n) { return ir_type_str(t, buf, n); }

/* ================================================== positions and ids */

static void add_def(verifier *v, const ir_node *n)
{
    if (v->n_defs == v->cap_defs) {
        v->cap_defs = v->cap_defs ? 2 * v->cap_defs : 64;
        v->defs = rt_xrealloc(v->defs, (size_t)v->cap_defs * sizeof *v->defs);
    }
    v->defs[v->n_defs].node = n;
    v->defs[v->n_defs].pos = v->n_defs;
    v->n_defs++;
}

/* Params first, then nodes, each followed by its regions. */
static void collect(verifier *v, const ir_graph *g)
{
    for (int i = 0; i < g->n_params; i++)
        add_def(v, g->params[i]);
    for (const ir_node *n = g->first; n; n = n->next) {
        add_def(v, n);
        for (int r = 0; r < 2; r++)
            if (n->region[r])
                collect(v, n->region[r]);
    }
}

static int by_address(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)((const def *)a)->node, y = (uintptr_t)((const def *)b)->node;
    return (x > y) - (x < y);
}

static int by_id(const void *a, const void *b)
{
    const def *x = a, *y = b;
    if (x->node->id != y->node->id)
        return (x->node->id > y->node->id) - (x->node->id < y->node->id);
    return (x->pos > y->pos) - (x->pos < y->pos);
}

/* The position of n in the walk, or -1 if n is not part of the function. */
static int position(const verifier *v, const ir_node *n)
{
    def key = {n, 0};
    const def *d = bsearch(&key, v->defs, (size_t)v->n_defs, sizeof *v->defs, by_address);
    return d ? d->pos : -1;
}

/* Ids unique and below next_id (so builders never reuse one). Sorts defs by
 * id; the caller re-sorts by address. */
static bool check_ids(verifier *v)
{
    qsort(v->defs, (size_t)v->n_defs, sizeof *v->defs, by_id);
    for (int i = 0; i < v->n_defs; i++) {
        const ir_node *n = v->defs[i].node;
        if (n->id < 0 || n->id >= v->fn->next_id)
            return fail(v, n, "id %d is outside [0, next_id = %d)", n->id, v->fn->next_id);
        if (i && v->defs[i - 1].node->id == n->id)
            return fail(v, n, "id %%%d is used twice", n->id);
    }
    return true;
}

/* ================================================================ types */

static bool valid_type(const ir_type *t)
{
    if ((unsigned)t->dtype > RT_LIST)
        return false;
    if (t->dtype == RT_LIST && (unsigned)t->elem_dtype >= AG_NUM_DTYPES)
        return false;
    if (t->shape.rank < -1 || t->shape.rank > AG_MAX_RANK)
        return false;
    for (int i = 0; i < t->shape.rank; i++)
        if (t->shape.dims[i] < -1)
            return false;
    return true;
}

/* Same dtype, and shapes that may be equal: an unknown dim or an unknown
 * rank (-1) agrees with anything. */
static bool compatible(const ir_type *a, const ir_type *b)
{
    if (a->dtype != b->dtype)
        return false;
    if (a->dtype == RT_LIST && a->elem_dtype != b->elem_dtype)
        return false;
    if (a->shape.rank < 0 || b->shape.rank < 0)
        return true;
    if (a->shape.rank != b->shape.rank)
        return false;
    for (int i = 0; i < a->shape.rank; i++)
        if (a->shape.dims[i] >= 0 && b->shape.dims[i] >= 0 && a->shape.dims[i] != b->shape.dims[i])
            return false;
    return true;
}

/* A bool scalar, or a bool of unknown rank (which may be one). */
static bool is_bool_scalar(const ir_type *t)
{
    return t->dtype == AG_BOOL && t->shape.rank <= 0;
}

static bool is_region_op(const ir_node *n)
{
    return n->opcode == IR_COND || n->opcode == IR_WHILE;
}

/* =============================================================== values */

/* val is usable in graph g at position `before`; a cond or while (a tuple)
 * only where tuple_ok (get's operand). */
static bool check_use(verifier *v, const ir_node *user, const ir_graph *g, const ir_node *val,
                      int before, bool tuple_ok, const char *what)
{
    if (!val)
        return fail(v, user, "%s is missing (NULL)", what);
    int pos = position(v, val);
    if (pos < 0)
        return fail(v, user, "%s (%%%d) is not a node of this function", what, val->id);
    if (val->graph != g)
        return fail(v, user, "%s (%%%d) is defined outside this graph; regions see only "
                             "their own parameters and nodes", what, val->id);
    if (pos >= before)
        return fail(v, user, "%s (%%%d) is used before its definition", what, val->id);
    if (is_region_op(val) && !tuple_ok)
        return fail(v, user, "%s (%%%d) is a %s with a tuple of results; pick one with get",
                    what, val->id, ir_opcode_name(val->opcode));
    return true;
}

/* The values g yields (`where` is "by ^then", say) or returns: n of them,
 * each defined in g. */
static bool check_results(verifier *v, const ir_node *owner, const ir_graph *g, int n,
                          const char *verb, const char *where)
{
    if (g->n_results != n)
        return fail(v, owner, "%d value%s %s%s, expected %d", g->n_results,
                    g->n_results == 1 ? " is" : "s are", verb, where, n);
    for (int i = 0; i < n; i++) {
        char what[64];
        snprintf(what, sizeof what, "value %d %s%s", i, verb, where);
        if (!check_use(v, owner, g, g->results[i], INT32_MAX, false, what))
            return false;
    }
    return true;
}

/* =========================================================== runtime ops */

static bool takes_list(int op, int i)
{
    return i == 0 && (op == RT_OP_TA_WRITE || op == RT_OP_TA_READ || op == RT_OP_TA_STACK ||
                      op == RT_OP_TA_SIZE);
}

static bool check_arity(verifier *v, const ir_node *n)
{
    int arity = rt_ops[n->opcode].arity;
    if (arity >= 0 && n->n_in != arity)
        return fail(v, n, "takes %d operand%s, got %d", arity, arity == 1 ? "" : "s", n->n_in);
    if (arity < 0 && n->n_in < 1 && n->opcode != RT_OP_PRINT)
        return fail(v, n, "needs at least one operand");
    for (int i = 0; i < n->n_in; i++) {
        bool list = n->in[i]->type.dtype == RT_LIST;
        if (list != takes_list(n->opcode, i))
            return fail(v, n, "operand %d (%%%d) must be %s", i, n->in[i]->id,
                        list ? "a tensor, not a tensor array" : "a tensor array");
    }
    return true;
}

static bool check_attrs(verifier *v, const ir_node *n)
{
    unsigned mask = rt_ops[n->opcode].attrs;
    const rt_value *lit = n->attrs.literal;
    if ((mask & RT_A_LITERAL) &&
        (!lit || lit->dtype >= AG_NUM_DTYPES || (rt_shape_numel(&lit->shape) != 0 && !lit->data)))
        return fail(v, n, "has no valid literal value");
    if (mask & RT_A_REF) {
        for (int i = 0; i < v->fn->n_vars; i++)
            if (v->fn->vars[i] == n->attrs.ref && v->fn->vars[i]->value)
                return true;
        return fail(v, n, "refers to a variable that is not among the function's vars");
    }
    rt_err e;
    /* else the print fails only when it runs, perhaps after hours */
    if (n->opcode == RT_OP_PRINT && !rt_print_template_ok(n->attrs.text, n->n_in, &e))
        return fail(v, n, "%s", e.msg);
    return true;
}

static ir_type var_type(const rt_variable *var)
{
    const rt_value *val = var->value;
    return (ir_type){.dtype = val->dtype, .elem_dtype = val->elem_dtype, .shape = val->shape};
}

/* var_read gives the variable's type; assign* take and give it. */
static bool check_var_node(verifier *v, const ir_node *n)
{
    char b1[256], b2[256];
    ir_type want = var_type(n->attrs.ref);
    if (n->n_in && !compatible(&n->in[0]->type, &want))
        return fail(v, n, "the value has type %s but the variable has type %s",
                    tstr(&n->in[0]->type, b1, sizeof b1), tstr(&want, b2, sizeof b2));
    if (!compatible(&n->type, &want))
        return fail(v, n, "has type %s but its variable has type %s",
                    tstr(&n->type, b1, sizeof b1), tstr(&want, b2, sizeof b2));
    return true;
}

/* The element dtype of a tensor array an op makes (rt_infer gives only
 * RT_LIST). */
static ag_dtype list_elem_dtype(const ir_node *n)
{
    if (n->opcode == RT_OP_TA_NEW)
        return n->attrs.dtype;
    return n->n_in ? n->in[0]->type.elem_dtype : n->type.elem_dtype;
}

/* Runs the op's rules on symbolic stand-ins of the operands. */
static bool infer(verifier *v, const ir_node *n, ir_type *out)
{
    rt_value *vals = rt_xcalloc((size_t)(n->n_in ? n->n_in : 1), sizeof *vals);
    rt_value **ins = rt_xcalloc((size_t)(n->n_in ? n->n_in : 1), sizeof *ins);
    for (int i = 0; i < n->n_in; i++) {
        const ir_type *t = &n->in[i]->type;
        vals[i] = (rt_value){.kind = RT_SYMBOLIC, .dtype = t->dtype, .elem_dtype = t->elem_dtype,
                             .shape = t->shape, .numel = rt_shape_numel(&t->shape)};
        ins[i] = &vals[i];
    }
    rt_err e = {{0}};
    memset(out, 0, sizeof *out);
    bool ok = rt_infer((rt_op)n->opcode, &n->attrs, ins, n->n_in, &out->dtype, &out->shape, &e);
    free(vals);
    free(ins);
    if (!ok)
        return fail(v, n, "%s", e.msg);
    out->elem_dtype = out->dtype == RT_LIST ? list_elem_dtype(n) : out->dtype;
    return true;
}

static bool check_rt_node(verifier *v, const ir_node *n)
{
    char b1[256], b2[256];
    if (!check_arity(v, n) || !check_attrs(v, n))
        return false;
    if (rt_ops[n->opcode].attrs & RT_A_REF)
        return check_var_node(v, n);
    for (int i = 0; i < n->n_in; i++)
        if (n->in[i]->type.dtype != RT_LIST && n->in[i]->type.shape.rank < 0)
            return true; /* the rules need ranks; nothing to check */
    ir_type want;
    if (!infer(v, n, &want))
        return false;
    if (!compatible(&n->type, &want))
        return fail(v, n, "has type %s but the op's rules give %s", tstr(&n->type, b1, sizeof b1),
                    tstr(&want, b2, sizeof b2));
    return true;
}

/* ============================================================ structure */

static bool check_graph(verifier *v, const ir_graph *g, const ir_node *parent);

/* Region r of n takes params typed like `types` (compatible). */
static bool check_region_params(verifier *v, const ir_node *n, const ir_graph *r,
                                const char *label, ir_node *const *types, int count)
{
    char b1[256], b2[256];
    if (r->n_params != count)
        return fail(v, n, "region ^%s takes %d parameter%s, expected %d", label, r->n_params,
                    r->n_params == 1 ? "" : "s", count);
    for (int i = 0; i < count; i++)
        if (!compatible(&r->params[i]->type, &types[i]->type))
            return fail(v, n, "region ^%s parameter %d has type %s but the operand has type %s",
                        label, i, tstr(&r->params[i]->type, b1, sizeof b1),
                        tstr(&types[i]->type, b2, sizeof b2));
    return true;
}

/* Region r yields values compatible with `types`. */
static bool check_region_yield(verifier *v, const ir_node *n, const ir_graph *r,
                               const char *label, const ir_type *types, int count)
{
    char b1[256], b2[256], where[32];
    snprintf(where, sizeof where, " by ^%s", label);
    if (!check_results(v, n, r, count, "yielded", where))
        return false;
    for (int i = 0; i < count; i++)
        if (!compatible(&r->results[i]->type, &types[i]))
            return fail(v, n, "region ^%s yields %s as value %d, expected %s", label,
                        tstr(&r->results[i]->type, b1, sizeof b1), i,
                        tstr(&types[i], b2, sizeof b2));
    return true;
}

/* cond(pred, x...) {^then(x...) ^else(x...)}, both yielding the results. */
static bool check_cond(verifier *v, const ir_node *n)
{
    char buf[256];
    if (n->n_in < 1 || !is_bool_scalar(&n->in[0]->type))
        return fail(v, n, "the first operand must be a bool scalar predicate, got %s",
                    n->n_in ? tstr(&n->in[0]->type, buf, sizeof buf) : "none");
    static const char *const labels[2] = {"then", "else"};
    for (int r = 0; r < 2; r++)
        if (!check_region_params(v, n, n->region[r], labels[r], n->in + 1, n->n_in - 1) ||
            !check_region_yield(v, n, n->region[r], labels[r], n->results, n->n_results))
            return false;
    return true;
}

/* while(x...) {^cond(x...) yielding a bool scalar; ^body(x...) yielding x...} */
static bool check_while(verifier *v, const ir_node *n)
{
    static const ir_type pred = {.dtype = AG_BOOL, .elem_dtype = AG_BOOL};
    const ir_graph *body = n->region[1];
    if (n->n_results != n->n_in)
        return fail(v, n, "has %d results for %d loop variables", n->n_results, n->n_in);
    if (!check_region_params(v, n, n->region[0], "cond", n->in, n->n_in) ||
        !check_region_params(v, n, body, "body", n->in, n->n_in) ||
        !check_region_yield(v, n, n->region[0], "cond", &pred, 1))
        return false;
    ir_type *params = rt_xcalloc((size_t)(n->n_in ? n->n_in : 1), sizeof *params);
    for (int i = 0; i < n->n_in; i++)
        params[i] = body->params[i]->type;
    bool ok = check_region_yield(v, n, body, "body", params, n->n_in) &&
              check_region_yield(v, n, body, "body", n->results, n->n_results);
    free(params);
    return ok;
}

static bool check_get(verifier *v, const ir_node *n)
{
    char b1[256], b2[256];
    if (n->n_in != 1 || !is_region_op(n->in[0]))
        return fail(v, n, "takes one operand, a cond or while");
    const ir_node *t = n->in[0];
    if (n->index < 0 || n->index >= t->n_results)
        return fail(v, n, "index %d is out of range: %%%d has %d result%s", n->index, t->id,
                    t->n_results, t->n_results == 1 ? "" : "s");
    if (!ir_type_equal(&n->type, &t->results[n->index]))
        return fail(v, n, "has type %s but result %d of %%%d has type %s",
                    tstr(&n->type, b1, sizeof b1), n->index, t->id,
                    tstr(&t->results[n->index], b2, sizeof b2));
    return true;
}

/* Types are well formed before any rule sees them. */
static bool check_types(verifier *v, const ir_node *n)
{
    if (!is_region_op(n))
        return valid_type(&n->type) ? true : fail(v, n, "has a malformed type");
    if (n->n_results < 0 || (n->n_results && !n->results))
        return fail(v, n, "has a malformed result list");
    for (int i = 0; i < n->n_results; i++)
        if (!valid_type(&n->results[i]))
            return fail(v, n, "result %d has a malformed type", i);
    return true;
}

/* Regions exactly on cond and while, owned by them and this function. */
static bool check_regions(verifier *v, const ir_node *n)
{
    for (int r = 0; r < 2; r++) {
        const ir_graph *g = n->region[r];
        if (!is_region_op(n) && g)
            return fail(v, n, "has a region but is not a cond or while");
        if (is_region_op(n) && (!g || g->parent != n || g->fn != v->fn))
            return fail(v, n, "region %d is missing or not owned by this node", r);
    }
    return true;
}

static bool expected_effect(const ir_node *n)
{
    if (n->opcode < RT_OP_COUNT)
        return (rt_ops[n->opcode].flags & RT_F_EFFECT) != 0;
    if (is_region_op(n))
        return ir_graph_has_effects(n->region[0]) || ir_graph_has_effects(n->region[1]);
    return false;
}

/* The node's effect flag, and its control edge to the graph's previous
 * effectful node (*last). */
static bool check_effect(verifier *v, const ir_node *n, const ir_node **last)
{
    if (n->effect != expected_effect(n))
        return fail(v, n, "is marked %s but %s", n->effect ? "effectful" : "pure",
                    n->effect ? "has no side effect" : "has side effects");
    if (!n->effect) {
        if (n->ctrl)
            return fail(v, n, "has no side effect but a control edge (after %%%d)", n->ctrl->id);
        return true;
    }
    if (n->ctrl != *last) {
        if (!*last)
            return fail(v, n, "is the first effect of its graph but has 'after %%%d'",
                        n->ctrl->id);
        if (!n->ctrl)
            return fail(v, n, "has side effects but no control edge: it must come "
                              "'after %%%d', the previous effect of its graph", (*last)->id);
        return fail(v, n, "must come after %%%d, the previous effect of its graph, not "
                          "after %%%d", (*last)->id, n->ctrl->id);
    }
    *last = n;
    return true;
}

static bool check_node_kind(verifier *v, const ir_node *n)
{
    if (n->opcode < RT_OP_COUNT)
        return check_rt_node(v, n);
    switch (n->opcode) {
    case IR_COND: return check_cond(v, n);
    case IR_WHILE: return check_while(v, n);
    case IR_GET: return check_get(v, n);
    default: return fail(v, n, "is not an op a graph can hold");
    }
}

static bool check_node(verifier *v, const ir_graph *g, const ir_node *n, const ir_node **last)
{
    if (n->opcode < 0 || n->opcode >= IR_OPCODE_COUNT || n->opcode == IR_PARAM)
        return fail(v, n, "has invalid opcode %d", n->opcode);
    if (n->graph != g || (n->next && n->next->prev != n))
        return fail(v, n, "is not linked into its graph properly");
    if (n->device != IR_HOST && !ir_device_name(n->device))
        return fail(v, n, "has invalid device %d", (int)n->device);
    if (n->n_in < 0 || (n->n_in && !n->in))
        return fail(v, n, "has a malformed operand list");
    int pos = position(v, n);
    for (int i = 0; i < n->n_in; i++) {
        char what[32];
        snprintf(what, sizeof what, "operand %d", i);
        if (!check_use(v, n, g, n->in[i], pos, n->opcode == IR_GET, what))
            return false;
    }
    if (!check_types(v, n) || !check_regions(v, n))
        return false;
    for (int r = 0; r < 2; r++)
        if (n->region[r] && !check_graph(v, n->region[r], n))
            return false;
    return check_effect(v, n, last) && check_node_kind(v, n);
}

static bool check_params(verifier *v, const ir_graph *g)
{
    for (int i = 0; i < g->n_params; i++) {
        const ir_node *p = g->params[i];
        if (!p || p->opcode != IR_PARAM || p->graph != g || p->index != i)
            return fail(v, g->parent, "parameter %d is malformed", i);
        if (!valid_type(&p->type))
            return fail(v, p, "has a malformed type");
    }
    return true;
}

static bool check_graph(verifier *v, const ir_graph *g, const ir_node *parent)
{
    if (g->fn != v->fn || g->parent != parent)
        return fail(v, parent, "a graph is not owned by its node");
    if (!check_params(v, g))
        return false;
    const ir_node *last = NULL;
    for (const ir_node *n = g->first; n; n = n->next)
        if (!check_node(v, g, n, &last))
            return false;
    return true;
}

/* The function's results: values of the top graph. */
static bool check_returns(verifier *v)
{
    const ir_graph *g = v->fn->body;
    if (g->n_results < 0 || (g->n_results && !g->results))
        return fail(v, NULL, "the function has a malformed result list");
    return check_results(v, NULL, g, g->n_results, "returned", "");
}

bool ir_verify(const ir_function *fn, char *err, size_t errlen)
{
    verifier v = {.fn = fn, .err = err, .errlen = errlen};
    if (err && errlen)
        err[0] = '\0';
    if (!fn->body)
        return fail(&v, NULL, "the function has no body");
    /* Never NULL, even when empty: qsort and bsearch need a real array. */
    v.cap_defs = 64;
    v.defs = rt_xmalloc((size_t)v.cap_defs * sizeof *v.defs);
    collect(&v, fn->body);
    bool ok = check_ids(&v);
    qsort(v.defs, (size_t)v.n_defs, sizeof *v.defs, by_address);
    ok = ok && check_graph(&v, fn->body, NULL) && check_returns(&v);
    free(v.defs);
    return ok;
}
