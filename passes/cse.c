/*
 * cse.c - common subexpression elimination.
 *
 * requires: a valid function.
 * keeps:    every effect and its order; every result's value.
 * breaks:   nothing. A node equal to an earlier one of its graph is
 *           unlinked and its uses take the earlier one.
 *
 * Two nodes are equal when they have the same opcode, dtype, attributes
 * (the fields of the op's RT_A_* mask; doubles compared bit for bit),
 * operands (after earlier merges) and, for get, index; constants compare
 * by dtype, shape and bytes (so -0.0 and +0.0 stay apart). Operands of a
 * commutative op match in either order when its result is not a float
 * (integer arithmetic, comparisons, logic), and for floats only with
 * fast_math: add(a, b) and add(b, a) differ when both are NaNs of
 * different signs, and maximum(a, b) and maximum(b, a) when they are -0.0
 * and +0.0.
 *
 * Never merged: effectful nodes (print, assert, variables, regions with
 * effects), random ops, cond and while, parameters, and tensor-array ops
 * (their lists are shared, mutable state); nor a node that may fail
 * (pass_may_fail) into an equal one before an effect, which would move
 * the failure before that effect. Each graph has its own table:
 * a region sees only its own parameters and nodes, so it cannot share a
 * value with its parent, and scoping is structural.
 */
#include "pass_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct table {
    ir_node **slots;
    int *epoch; /* by slot: effects seen in the graph before that node */
    size_t mask;
} table;

typedef struct cse {
    pass_map fwd;
    bool fast_math;
    bool changed;
} cse;

static bool mergeable(const ir_node *n)
{
    if (n->opcode == IR_GET)
        return true;
    unsigned fl = pass_flags(n);
    return n->opcode < RT_OP_COUNT && (fl & RT_F_PURE) && !(fl & RT_F_RANDOM) && !n->effect &&
           !pass_touches_list(n);
}

/* Whether n's operands may match in either order. Float results are
 * excluded without fast_math: when both operands are NaN, IEEE 754 leaves
 * which one (sign and payload) propagates to the machine, and x86 picks
 * the first; and maximum/minimum pick the second of -0.0 and +0.0. */
static bool commutative(const cse *c, const ir_node *n)
{
    if (n->opcode >= RT_OP_COUNT || n->n_in != 2 || !(rt_ops[n->opcode].flags & RT_F_COMMUTATIVE))
        return false;
    return c->fast_math || !rt_is_float(n->type.dtype);
}

/* ---------------------------------------------------------------- hashing */

static uint64_t mix(uint64_t h, uint64_t x)
{
    h ^= x + 0x9e3779b97f4a7c15u + (h << 6) + (h >> 2);
    return h;
}

static uint64_t hash_bytes(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3u;
    return h;
}

static uint64_t hash_shape(uint64_t h, const ag_shape *s)
{
    h = mix(h, (uint64_t)s->rank);
    for (int i = 0; i < s->rank; i++)
        h = mix(h, (uint64_t)s->dims[i]);
    return h;
}

static uint64_t hash_double(uint64_t h, double d) { return hash_bytes(h, &d, sizeof d); }

static uint64_t hash_attrs(uint64_t h, const ir_node *n)
{
    const rt_attrs *a = &n->attrs;
    unsigned m = n->opcode < RT_OP_COUNT ? rt_ops[n->opcode].attrs : 0;
    if (m & RT_A_AXIS) h = mix(h, (uint64_t)a->axis);
    if (m & RT_A_KEEPDIMS) h = mix(h, a->keepdims);
    if (m & RT_A_DTYPE) h = mix(h, (uint64_t)a->dtype);
    if (m & RT_A_SHAPE) h = hash_shape(h, &a->shape);
    if (m & RT_A_BEGIN) h = hash_shape(h, &a->begin);
    if (m & RT_A_SIZE) h = hash_shape(h, &a->size);
    if (m & RT_A_PERM) h = hash_shape(h, &a->perm);
    if (m & RT_A_STRIDES) h = mix(mix(h, (uint64_t)a->stride_h), (uint64_t)a->stride_w);
    if (m & RT_A_PADDING) h = mix(h, (uint64_t)a->padding);
    if (m & RT_A_VALUE) h = hash_double(h, a->value);
    if (m & RT_A_RANGE) h = hash_double(hash_double(h, a->lo), a->hi);
    if (m & RT_A_SEED) h = mix(h, a->seed);
    if (m & RT_A_N) h = mix(h, (uint64_t)a->n);
    if (m & RT_A_TEXT) h = hash_bytes(h, a->text ? a->text : "", a->text ? strlen(a->text) : 0);
    if (m & RT_A_DYNAMIC) h = mix(h, a->dynamic);
    if (m & RT_A_LITERAL) {
        rt_value v = pass_const_view(n);
        h = hash_shape(mix(h, (uint64_t)v.dtype), &v.shape);
        h = hash_bytes(h, v.data, rt_value_bytes(&v));
    }
    return h;
}

static uint64_t hash_node(const cse *c, const ir_node *n)
{
    uint64_t h = mix(mix(0, (uint64_t)n->opcode), (uint64_t)n->type.dtype);
    h = mix(h, (uint64_t)n->index);
    if (commutative(c, n)) /* order-free: a sum of the operands' hashes */
        h = mix(h, mix(0, (uint64_t)n->in[0]->id) + mix(0, (uint64_t)n->in[1]->id));
    else
        for (int i = 0; i < n->n_in; i++)
            h = mix(h, (uint64_t)n->in[i]->id);
    return hash_attrs(h, n);
}

/* --------------------------------------------------------------- equality */

static bool same_shape(const ag_shape *a, const ag_shape *b)
{
    if (a->rank != b->rank)
        return false;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i])
            return false;
    return true;
}

static bool same_double(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

static bool same_text(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "") == 0;
}

static bool same_literal(const ir_node *x, const ir_node *y)
{
    rt_value a = pass_const_view(x), b = pass_const_view(y);
    return a.dtype == b.dtype && same_shape(&a.shape, &b.shape) &&
           memcmp(a.data, b.data, rt_value_bytes(&a)) == 0;
}

static bool same_attrs(const ir_node *x, const ir_node *y)
{
    const rt_attrs *a = &x->attrs, *b = &y->attrs;
    unsigned m = x->opcode < RT_OP_COUNT ? rt_ops[x->opcode].attrs : 0;
    return (!(m & RT_A_AXIS) || a->axis == b->axis) &&
           (!(m & RT_A_KEEPDIMS) || a->keepdims == b->keepdims) &&
           (!(m & RT_A_DTYPE) || a->dtype == b->dtype) &&
           (!(m & RT_A_SHAPE) || same_shape(&a->shape, &b->shape)) &&
           (!(m & RT_A_BEGIN) || same_shape(&a->begin, &b->begin)) &&
           (!(m & RT_A_SIZE) || same_shape(&a->size, &b->size)) &&
           (!(m & RT_A_PERM) || same_shape(&a->perm, &b->perm)) &&
           (!(m & RT_A_STRIDES) || (a->stride_h == b->stride_h && a->stride_w == b->stride_w)) &&
           (!(m & RT_A_PADDING) || a->padding == b->padding) &&
           (!(m & RT_A_VALUE) || same_double(a->value, b->value)) &&
           (!(m & RT_A_RANGE) || (same_double(a->lo, b->lo) && same_double(a->hi, b->hi))) &&
           (!(m & RT_A_SEED) || a->seed == b->seed) &&
           (!(m & RT_A_N) || a->n == b->n) &&
           (!(m & RT_A_TEXT) || same_text(a->text, b->text)) &&
           (!(m & RT_A_REF) || a->ref == b->ref) &&
           (!(m & RT_A_DYNAMIC) || a->dynamic == b->dynamic) &&
           (!(m & RT_A_LITERAL) || same_literal(x, y));
}

static bool same_operands(const cse *c, const ir_node *x, const ir_node *y)
{
    if (x->n_in != y->n_in)
        return false;
    if (commutative(c, x) && x->in[0] == y->in[1] && x->in[1] == y->in[0])
        return true;
    for (int i = 0; i < x->n_in; i++)
        if (x->in[i] != y->in[i])
            return false;
    return true;
}

static bool same_node(const cse *c, const ir_node *x, const ir_node *y)
{
    return x->opcode == y->opcode && x->type.dtype == y->type.dtype && x->index == y->index &&
           same_operands(c, x, y) && same_attrs(x, y);
}

/* ------------------------------------------------------------------ table */

static void table_init(table *t, const ir_graph *g)
{
    size_t n = 0, cap = 16;
    for (const ir_node *m = g->first; m; m = m->next)
        n++;
    while (cap < 2 * n)
        cap *= 2;
    t->slots = rt_xcalloc(cap, sizeof *t->slots);
    t->epoch = rt_xcalloc(cap, sizeof *t->epoch);
    t->mask = cap - 1;
}

/*
 * The earlier node equal to n, or NULL after recording n. A node that may
 * fail is not merged into one from before an effect: the earlier one may
 * be dead, and running it instead would fail before that effect (a print
 * would no longer appear); n then replaces it as the one to merge into.
 */
static ir_node *table_find_or_add(const cse *c, table *t, ir_node *n, int epoch)
{
    size_t i = (size_t)hash_node(c, n) & t->mask;
    for (; t->slots[i]; i = (i + 1) & t->mask)
        if (same_node(c, t->slots[i], n))
            break;
    if (t->slots[i] && (t->epoch[i] == epoch || !pass_may_fail(n)))
        return t->slots[i];
    t->slots[i] = n;
    t->epoch[i] = epoch;
    return NULL;
}

/* ------------------------------------------------------------------ sweep */

static void cse_graph(cse *c, ir_graph *g)
{
    table t;
    table_init(&t, g);
    int epoch = 0;
    for (ir_node *n = g->first, *next; n; n = next) {
        next = n->next;
        pass_remap_inputs(&c->fwd, n);
        epoch += n->effect;
        if (pass_is_region_op(n)) {
            cse_graph(c, n->region[0]);
            cse_graph(c, n->region[1]);
            continue;
        }
        ir_node *earlier = mergeable(n) ? table_find_or_add(c, &t, n, epoch) : NULL;
        if (earlier) {
            pass_map_set(&c->fwd, n, earlier);
            ir_remove(n);
            c->changed = true;
        }
    }
    pass_remap_results(&c->fwd, g);
    free(t.slots);
    free(t.epoch);
}

bool pass_cse(ir_function *fn, pass_ctx *ctx)
{
    cse c = {.fast_math = ctx->opt.fast_math};
    pass_map_init(&c.fwd, fn);
    cse_graph(&c, fn->body);
    pass_map_free(&c.fwd);
    return c.changed;
}
