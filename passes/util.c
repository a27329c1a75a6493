/* util.c - helpers the passes share (pass_internal.h). */
#include "pass_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ======================================================== forwarding maps */

void pass_map_init(pass_map *m, const ir_function *fn)
{
    m->n = fn->next_id > 0 ? fn->next_id : 1;
    m->v = rt_xcalloc((size_t)m->n, sizeof *m->v);
}

void pass_map_free(pass_map *m)
{
    free(m->v);
    m->v = NULL;
    m->n = 0;
}

void pass_map_set(pass_map *m, const ir_node *key, ir_node *val)
{
    if (key->id >= m->n) {
        int n = m->n;
        while (n <= key->id)
            n *= 2;
        m->v = rt_xrealloc(m->v, (size_t)n * sizeof *m->v);
        memset(m->v + m->n, 0, (size_t)(n - m->n) * sizeof *m->v);
        m->n = n;
    }
    m->v[key->id] = val;
}

ir_node *pass_map_get(const pass_map *m, const ir_node *key)
{
    return key->id < m->n ? m->v[key->id] : NULL;
}

ir_node *pass_resolve(const pass_map *m, ir_node *n)
{
    ir_node *next;
    while (n && (next = pass_map_get(m, n)) != NULL)
        n = next;
    return n;
}

void pass_remap_inputs(const pass_map *m, ir_node *n)
{
    for (int i = 0; i < n->n_in; i++)
        n->in[i] = pass_resolve(m, n->in[i]);
}

void pass_remap_results(const pass_map *m, ir_graph *g)
{
    for (int i = 0; i < g->n_results; i++)
        g->results[i] = pass_resolve(m, g->results[i]);
}

/* ========================================================== graph surgery */

void pass_insert_before(ir_graph *g, ir_node *n, ir_node *before)
{
    n->graph = g;
    n->next = before;
    n->prev = before ? before->prev : g->last;
    if (n->prev)
        n->prev->next = n;
    else
        g->first = n;
    if (before)
        before->prev = n;
    else
        g->last = n;
}

ir_node *pass_new_node(ir_graph *g, ir_node *before, int opcode, const rt_attrs *a, int n_in,
                       ir_node *const *in, const ir_type *type, const ir_node *like)
{
    ag_loc loc = like ? like->loc : (ag_loc){0};
    ir_node *n = ir_append(g, opcode, a, n_in, in, type, loc);
    ir_remove(n);
    pass_insert_before(g, n, before);
    if (like) {
        n->col = like->col;
        n->device = like->device;
        n->scope = like->scope;
    }
    return n;
}

ir_node *pass_new_const(ir_graph *g, ir_node *before, const rt_value *v, const ir_node *like)
{
    rt_attrs a = {.literal = v};
    ir_type t = {.dtype = v->dtype, .elem_dtype = v->dtype, .shape = v->shape};
    return pass_new_node(g, before, RT_OP_CONST, &a, 0, NULL, &t, like);
}

ir_node *pass_copy_const(ir_graph *g, ir_node *before, const ir_node *c)
{
    rt_value v = pass_const_view(c);
    ir_node *copy = pass_new_const(g, before, &v, c);
    copy->type = c->type;
    return copy;
}

void pass_set_inputs(ir_node *n, int n_in, ir_node *const *in)
{
    ir_node **arr = ir_alloc(n->graph->fn->arena, (size_t)(n_in ? n_in : 1) * sizeof *arr);
    if (n_in)
        memcpy(arr, in, (size_t)n_in * sizeof *in);
    n->in = arr;
    n->n_in = n_in;
}

static void fix_graph_effects(ir_graph *g)
{
    ir_node *last = NULL;
    for (ir_node *n = g->first; n; n = n->next) {
        if (pass_is_region_op(n)) {
            fix_graph_effects(n->region[0]);
            fix_graph_effects(n->region[1]);
            n->effect = ir_graph_has_effects(n->region[0]) ||
                        ir_graph_has_effects(n->region[1]);
        }
        n->ctrl = n->effect ? last : NULL;
        if (n->effect)
            last = n;
    }
    g->last_effect = last;
}

void pass_fix_effects(ir_function *fn) { fix_graph_effects(fn->body); }

bool pass_graph_uses(const ir_graph *g, const ir_node *v)
{
    for (const ir_node *n = g->first; n; n = n->next)
        for (int i = 0; i < n->n_in; i++)
            if (n->in[i] == v)
                return true;
    for (int i = 0; i < g->n_results; i++)
        if (g->results[i] == v)
            return true;
    return false;
}

void pass_replace_uses(ir_graph *g, const ir_node *from, ir_node *to, bool results)
{
    for (ir_node *n = g->first; n; n = n->next)
        for (int i = 0; i < n->n_in; i++)
            if (n->in[i] == from)
                n->in[i] = to;
    for (int i = 0; results && i < g->n_results; i++)
        if (g->results[i] == from)
            g->results[i] = to;
}

/* ================================================================== types */

bool pass_type_meet(const ir_type *a, const ir_type *b, ir_type *out)
{
    if (a->dtype != b->dtype || (a->dtype == RT_LIST && a->elem_dtype != b->elem_dtype))
        return false;
    if (a->shape.rank < 0 || b->shape.rank < 0) {
        *out = a->shape.rank < 0 ? *b : *a;
        return true;
    }
    if (a->shape.rank != b->shape.rank)
        return false;
    *out = *a;
    for (int i = 0; i < a->shape.rank; i++) {
        int64_t x = a->shape.dims[i], y = b->shape.dims[i];
        if (x >= 0 && y >= 0 && x != y)
            return false;
        out->shape.dims[i] = x >= 0 ? x : y;
    }
    return true;
}

void pass_type_join(const ir_type *a, const ir_type *b, ir_type *out)
{
    *out = *a;
    if (a->shape.rank < 0 || b->shape.rank < 0 || a->shape.rank != b->shape.rank) {
        memset(&out->shape, 0, sizeof out->shape);
        out->shape.rank = -1;
        return;
    }
    for (int i = 0; i < a->shape.rank; i++)
        if (a->shape.dims[i] != b->shape.dims[i])
            out->shape.dims[i] = -1;
}

bool pass_type_known(const ir_type *t)
{
    return t->dtype != RT_LIST && t->shape.rank >= 0 && rt_shape_known(&t->shape);
}

int64_t pass_type_bytes(const ir_type *t)
{
    if (!pass_type_known(t))
        return -1;
    int64_t numel = rt_shape_numel(&t->shape);
    size_t size = rt_dtype_size(t->dtype);
    if (numel < 0 || (size && numel > INT64_MAX / (int64_t)size))
        return -1;
    return numel * (int64_t)size;
}

/* ============================================================== constants */

bool pass_is_const(const ir_node *n) { return n->opcode == RT_OP_CONST && n->attrs.literal; }

rt_value pass_const_view(const ir_node *c)
{
    const rt_value *lit = c->attrs.literal;
    rt_value v = {.kind = RT_CONCRETE, .dtype = lit->dtype, .elem_dtype = lit->dtype,
                  .shape = lit->shape, .numel = rt_shape_numel(&lit->shape),
                  .data = lit->data};
    return v;
}

bool pass_const_all(const ir_node *c, double v, bool sign)
{
    rt_value x = pass_const_view(c);
    for (int64_t i = 0; i < x.numel; i++) {
        if (rt_is_int(x.dtype) || x.dtype == AG_BOOL) {
            if (rt_load_i64(x.dtype, x.data, i) != (int64_t)v)
                return false;
            continue;
        }
        double e = rt_load_f64(x.dtype, x.data, i);
        if (e != v || (sign && signbit(e) != signbit(v)))
            return false;
    }
    return true;
}

rt_value *pass_eval_op(int op, const rt_attrs *a, rt_value *const *in, int n,
                       size_t max_bytes, rt_err *e)
{
    static const rt_attrs no_attrs;
    const rt_op_info *info = &rt_ops[op];
    ag_dtype dt;
    ag_shape shape;
    if (!a)
        a = &no_attrs;
    if (!rt_infer((rt_op)op, a, in, n, &dt, &shape, e))
        return NULL;
    ir_type t = {.dtype = dt, .shape = shape};
    int64_t bytes = pass_type_bytes(&t);
    if (bytes < 0 || (size_t)bytes > max_bytes) {
        rt_err_set(e, "the result is too large to fold (%lld bytes)", (long long)bytes);
        return NULL;
    }
    if (info->flags & RT_F_ALIAS)
        return rt_value_alias(in[0], &shape);
    rt_value *out = rt_value_new(dt, &shape);
    if (!info->kernel(a, in, n, out, e)) {
        rt_value_free(out);
        return NULL;
    }
    return out;
}

/* ========================================================== op properties */

bool pass_is_region_op(const ir_node *n) { return n->opcode == IR_COND || n->opcode == IR_WHILE; }

unsigned pass_flags(const ir_node *n)
{
    return n->opcode >= 0 && n->opcode < RT_OP_COUNT ? rt_ops[n->opcode].flags : 0;
}

bool pass_touches_list(const ir_node *n)
{
    if (!pass_is_region_op(n) && n->type.dtype == RT_LIST)
        return true;
    for (int i = 0; i < n->n_in; i++)
        if (n->in[i]->type.dtype == RT_LIST)
            return true;
    for (int i = 0; pass_is_region_op(n) && i < n->n_results; i++)
        if (n->results[i].dtype == RT_LIST)
            return true;
    return false;
}

/* ========================================================== failing ops */

bool pass_fails_on_data(const ir_node *n)
{
    return n->opcode < RT_OP_COUNT && (rt_ops[n->opcode].flags & RT_F_FAILS_ON_DATA) &&
           rt_is_int(n->in[1]->type.dtype);
}

static bool has_empty_operand(const ir_node *n)
{
    for (int i = 0; i < n->n_in; i++)
        if (rt_shape_numel(&n->in[i]->type.shape) == 0)
            return true;
    return false;
}

/* The kernel may fail on some values of these (statically fine) types. */
static bool kernel_may_fail(const ir_node *n)
{
    if (pass_fails_on_data(n))
        return true;
    switch (n->opcode) {
    case RT_OP_GATHER:
    case RT_OP_UNSORTED_SEGMENT_SUM:
    case RT_OP_RANGE:
    case RT_OP_RANDOM_UNIFORM:
    case RT_OP_ASSERT: return true;
    case RT_OP_REDUCE_MAX:
    case RT_OP_REDUCE_MIN:
    case RT_OP_REDUCE_MEAN:
    case RT_OP_ARGMAX: return has_empty_operand(n);
    default: return false;
    }
}

static bool region_may_fail(const ir_graph *g)
{
    for (const ir_node *n = g->first; n; n = n->next)
        if (pass_may_fail(n))
            return true;
    return false;
}

bool pass_may_fail(const ir_node *n)
{
    if (n->opcode == IR_PARAM || n->opcode == IR_GET || n->opcode == RT_OP_CONST)
        return false;
    if (n->opcode == IR_WHILE || pass_touches_list(n))
        return true; /* (a loop may not end) */
    if (n->opcode == IR_COND)
        return region_may_fail(n->region[0]) || region_may_fail(n->region[1]);
    for (int i = 0; i < n->n_in; i++)
        if (!pass_type_known(&n->in[i]->type))
            return true;
    return kernel_may_fail(n);
}

static signed char *fail_slot(pass_fail_cache *c, const ir_node *n)
{
    if (n->id >= c->n) {
        int size = c->n ? c->n : 64;
        while (size <= n->id)
            size *= 2;
        c->v = rt_xrealloc(c->v, (size_t)size);
        memset(c->v + c->n, 0, (size_t)(size - c->n));
        c->n = size;
    }
    return &c->v[n->id];
}

/* Depth first over operands with an explicit stack (chains of thousands of
 * nodes would overflow the C stack); a get stands for its cond/while. */
bool pass_may_fail_deep(pass_fail_cache *c, const ir_node *n)
{
    int cap = 64, top = 0;
    const ir_node **stack = rt_xmalloc((size_t)cap * sizeof *stack);
    stack[top++] = n;
    while (top > 0) {
        const ir_node *m = stack[top - 1];
        signed char *slot = fail_slot(c, m);
        if (*slot) {
            top--;
            continue;
        }
        if (pass_may_fail(m) || (m->opcode == IR_GET && pass_may_fail(m->in[0]))) {
            *slot = 2;
            top--;
            continue;
        }
        bool pending = false, fails = false;
        for (int i = 0; i < m->n_in && !fails; i++) {
            signed char s = *fail_slot(c, m->in[i]);
            fails = s == 2;
            if (s == 0 && m->opcode != IR_GET) {
                if (top == cap)
                    stack = rt_xrealloc(stack, (size_t)(cap *= 2) * sizeof *stack);
                stack[top++] = m->in[i];
                pending = true;
            }
        }
        if (fails || !pending) {
            *fail_slot(c, m) = fails ? 2 : 1;
            top--;
        }
    }
    free(stack);
    return *fail_slot(c, n) == 2;
}

void pass_fail_cache_free(pass_fail_cache *c)
{
    free(c->v);
    c->v = NULL;
    c->n = 0;
}

/* ============================================================== liveness */

void pass_liveness_init(pass_liveness *l, const ir_function *fn)
{
    memset(l, 0, sizeof *l);
    ir_liveness_init(&l->run, fn);
}

void pass_liveness_free(pass_liveness *l)
{
    ir_liveness_free(&l->run);
    pass_fail_cache_free(&l->fails);
    memset(l, 0, sizeof *l);
}

bool pass_can_drop(pass_liveness *l, const ir_node *x, bool commit)
{
    ir_liveness *r = &l->run;
    if (x->id < r->n && r->users[x->id] >= 2) {
        r->users[x->id] -= commit;
        return true;
    }
    if (x->id < r->n && !r->live[x->id])
        return true; /* it did not run before either */
    return !pass_may_fail_deep(&l->fails, x);
}

/* ============================================================ diagnostics */

/* The node to blame: n, else its enclosing cond/while with a location. */
static const ir_node *located(const ir_node *n)
{
    while (n && !n->loc.file)
        n = n->graph ? n->graph->parent : NULL;
    return n;
}

void pass_diag(pass_ctx *ctx, const ir_node *at, const char *fmt, ...)
{
    bool first = !ctx->failed;
    ctx->failed = true;
    if (!first)
        return;
    const ir_node *l = located(at);
    char *s = ctx->err;
    size_t cap = sizeof ctx->err;
    int k;
    if (l && l->col > 0)
        k = snprintf(s, cap, "%s:%d:%d: error: ", l->loc.file, l->loc.line, l->col);
    else if (l)
        k = snprintf(s, cap, "%s:%d: error: ", l->loc.file, l->loc.line);
    else
        k = snprintf(s, cap, "@%s: error: ", at && at->graph && at->graph->fn->name
                                                 ? at->graph->fn->name : "");
    if (at && k >= 0 && (size_t)k < cap)
        k += snprintf(s + k, cap - (size_t)k, "%%%d (%s): ", at->id, ir_opcode_name(at->opcode));
    if (k >= 0 && (size_t)k < cap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(s + k, cap - (size_t)k, fmt, ap);
        va_end(ap);
    }
}
