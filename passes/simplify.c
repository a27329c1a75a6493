/*
 * simplify.c - algebraic simplification.
 *
 * requires: a valid function.
 * keeps:    every result bit for bit (NaN, infinities and the sign of zero
 *           included) unless options.fast_math is set; every effect.
 * breaks:   nothing. A rewritten node either becomes one of its operands
 *           (its uses move there and it is unlinked) or is changed in
 *           place to a cheaper op of the same type.
 *
 * Rewrites (c is a constant, every element the value named):
 *   x + c, c + x -> x   c = 0 for integers, c = -0.0 for floats
 *                       (+0.0 is not an identity: -0.0 + 0.0 = +0.0)
 *   x - c        -> x   c = 0 for integers, c = +0.0 for floats
 *   x * c, c * x -> x   c = 1
 *   x / c        -> x   c = 1
 *   x * c        -> 0   c = 0, integers only (0 * inf is NaN, 0 * -1 is -0.0)
 *   x - x        -> 0   integers only (inf - inf is NaN)
 *   neg(neg(x)), logical_not(logical_not(x)), cast(x) to x's dtype -> x
 *   transpose(transpose(x, p), q) -> transpose(x, p[q[i]]), or x when that
 *                       is the identity; transpose(x, identity) -> x
 *   reshape(r) where r is a reshape, expand_dims or squeeze of x -> reshape(x)
 *                       when x's shape is known (so r cannot fail);
 *                       reshape(x) to x's own known shape -> x
 *   fill_like(x, v) -> fill (which fold can fold) when x's shape is known
 *                       and x cannot fail
 *   matmul(x, c), matmul(c, x) -> x   c an integer identity matrix (an eye
 *                       node or a constant holding one), x integer with the
 *                       dim c multiplies against known and equal to c's
 *                       size (floats are left: inf * 0 is NaN, and the
 *                       x * 0 terms turn -0.0 into +0.0)
 * "0" is fill_like(x, 0), which still computes x.
 * With fast_math, also: x + 0.0, x - (-0.0) -> x; x * 0.0 -> 0; x - x -> 0.
 *
 * A rewrite to an operand x happens only when the result has x's type
 * and the constant cannot broadcast x to a larger shape: each of its dims
 * is 1 or equals x's (known) dim. Shape rules may leave an unknown dim
 * unknown, so equal types alone would not prove equal shapes.
 *
 * No rewrite drops a dependency on something that may fail at run time
 * (pass_may_fail_deep): x * 0 where x divides by zero must still fail.
 */
#include "pass_internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct simplifier {
    pass_map fwd;
    pass_fail_cache fails;
    bool fast_math;
    bool changed;
} simplifier;

/* ------------------------------------------------------------- predicates */

/* c broadcast against x gives x's shape: every dim of c (aligned from
 * the right) is 1 or equals x's known dim, and c has no more dims. */
static bool broadcasts_into(const ir_type *c, const ir_type *x)
{
    if (c->shape.rank < 0 || x->shape.rank < 0 || c->shape.rank > x->shape.rank)
        return false;
    int off = x->shape.rank - c->shape.rank;
    for (int i = 0; i < c->shape.rank; i++) {
        int64_t cd = c->shape.dims[i], xd = x->shape.dims[off + i];
        if (cd != 1 && (cd < 0 || cd != xd))
            return false;
    }
    return true;
}

/* `x op c` may become x: c is a constant that keeps x's shape, and the
 * node has x's type. */
static bool keeps_operand(const ir_node *n, const ir_node *x, const ir_node *c)
{
    return pass_is_const(c) && broadcasts_into(&c->type, &x->type) &&
           ir_type_equal(&n->type, &x->type);
}

/* c is the identity zero of x + c (negative: -0.0 for floats) or of
 * x - c (+0.0): every integer 0 is; with fast_math every float zero. */
static bool is_zero(const simplifier *s, const ir_node *c, bool negative)
{
    if (rt_is_int(c->type.dtype) || s->fast_math)
        return pass_const_all(c, 0, false);
    return pass_const_all(c, negative ? -0.0 : 0.0, true);
}

/* ---------------------------------------------------------------- rewrites */

static void forward(simplifier *s, ir_node *n, ir_node *to)
{
    pass_map_set(&s->fwd, n, to);
    ir_remove(n);
    s->changed = true;
}

static bool simplify_fill_like(simplifier *s, ir_node *n);

/* Turns n into "zeros like x" in place (n has x's type). */
static void make_zeros_like(simplifier *s, ir_node *n, ir_node *x)
{
    ir_node *in[1] = {x};
    memset(&n->attrs, 0, sizeof n->attrs);
    n->opcode = RT_OP_FILL_LIKE;
    n->attrs.value = 0.0;
    pass_set_inputs(n, 1, in);
    s->changed = true;
    simplify_fill_like(s, n);
}

/* x + c, c + x. */
static bool simplify_add(simplifier *s, ir_node *n)
{
    for (int k = 0; k < 2; k++) {
        ir_node *x = n->in[k], *c = n->in[1 - k];
        if (keeps_operand(n, x, c) && is_zero(s, c, true)) {
            forward(s, n, x);
            return true;
        }
    }
    return false;
}

static bool simplify_sub(simplifier *s, ir_node *n)
{
    ir_node *x = n->in[0], *c = n->in[1];
    if (keeps_operand(n, x, c) && is_zero(s, c, false)) {
        forward(s, n, x);
        return true;
    }
    bool exact = rt_is_int(n->type.dtype) || s->fast_math;
    if (x == c && exact && ir_type_equal(&n->type, &x->type)) {
        make_zeros_like(s, n, x);
        return true;
    }
    return false;
}

static bool simplify_mul(simplifier *s, ir_node *n)
{
    bool zero_ok = rt_is_int(n->type.dtype) || s->fast_math;
    for (int k = 0; k < 2; k++) {
        ir_node *x = n->in[k], *c = n->in[1 - k];
        if (!keeps_operand(n, x, c))
            continue;
        if (pass_const_all(c, 1, false)) {
            forward(s, n, x);
            return true;
        }
        if (zero_ok && pass_const_all(c, 0, false)) {
            make_zeros_like(s, n, x);
            return true;
        }
    }
    return false;
}

static bool simplify_div(simplifier *s, ir_node *n)
{
    if (keeps_operand(n, n->in[0], n->in[1]) && pass_const_all(n->in[1], 1, false)) {
        forward(s, n, n->in[0]);
        return true;
    }
    return false;
}

/* f(f(x)) -> x for an involution f. */
static bool simplify_involution(simplifier *s, ir_node *n)
{
    ir_node *inner = n->in[0];
    if (inner->opcode != n->opcode || !ir_type_equal(&inner->in[0]->type, &n->type))
        return false;
    forward(s, n, inner->in[0]);
    return true;
}

static bool simplify_cast(simplifier *s, ir_node *n)
{
    ir_node *x = n->in[0];
    if (x->type.dtype != n->attrs.dtype || !ir_type_equal(&x->type, &n->type))
        return false;
    forward(s, n, x);
    return true;
}

static bool is_identity_perm(const ag_shape *p)
{
    for (int i = 0; i < p->rank; i++)
        if (p->dims[i] != i)
            return false;
    return true;
}

/* transpose(transpose(x, p), q)[i] reads x's axis p[q[i]]. */
static bool simplify_transpose(simplifier *s, ir_node *n)
{
    ir_node *inner = n->in[0];
    if (inner->opcode == RT_OP_TRANSPOSE) {
        ag_shape q = n->attrs.perm;
        for (int i = 0; i < q.rank; i++)
            q.dims[i] = inner->attrs.perm.dims[n->attrs.perm.dims[i]];
        n->attrs.perm = q;
        n->in[0] = inner->in[0];
        s->changed = true;
    }
    if (is_identity_perm(&n->attrs.perm) && ir_type_equal(&n->in[0]->type, &n->type)) {
        forward(s, n, n->in[0]);
        return true;
    }
    return inner->opcode == RT_OP_TRANSPOSE;
}

static bool simplify_reshape(simplifier *s, ir_node *n)
{
    ir_node *inner = n->in[0];
    bool relabel = inner->opcode == RT_OP_RESHAPE || inner->opcode == RT_OP_EXPAND_DIMS ||
                   inner->opcode == RT_OP_SQUEEZE;
    if (relabel && pass_type_known(&inner->in[0]->type)) {
        n->in[0] = inner->in[0];
        s->changed = true;
    }
    if (pass_type_known(&n->type) && ir_type_equal(&n->in[0]->type, &n->type)) {
        forward(s, n, n->in[0]);
        return true;
    }
    return relabel;
}

static bool simplify_fill_like(simplifier *s, ir_node *n)
{
    if (!pass_type_known(&n->in[0]->type) || pass_may_fail_deep(&s->fails, n->in[0]))
        return false;
    n->opcode = RT_OP_FILL;
    n->attrs.dtype = n->type.dtype;
    n->attrs.shape = n->type.shape;
    pass_set_inputs(n, 0, NULL);
    s->changed = true;
    return true;
}

/* c is an m x m integer identity matrix of known size: an eye node, or a
 * constant with ones on the diagonal and zeros elsewhere. */
static bool is_int_identity(const ir_node *c)
{
    const ag_shape *sh = &c->type.shape;
    if (!rt_is_int(c->type.dtype) || sh->rank != 2 || sh->dims[0] < 0 ||
        sh->dims[0] != sh->dims[1])
        return false;
    if (c->opcode == RT_OP_EYE)
        return c->attrs.n == sh->dims[0];
    if (!pass_is_const(c))
        return false;
    rt_value v = pass_const_view(c);
    if (v.shape.rank != 2 || v.shape.dims[0] != sh->dims[0] || v.shape.dims[1] != sh->dims[1])
        return false;
    int64_t m = sh->dims[0];
    for (int64_t i = 0; i < v.numel; i++)
        if (rt_load_i64(v.dtype, v.data, i) != (i / m == i % m))
            return false;
    return true;
}

/* matmul(x, I) and matmul(I, x): in wrapping integer arithmetic each
 * element is one product by 1 plus products by 0, so exactly x. The
 * identity has no batch dims, so the result's shape is x's when the dim
 * it meets (x's last for x * I, x's second-to-last for I * x) is known
 * and equals its size. */
static bool simplify_matmul(simplifier *s, ir_node *n)
{
    for (int k = 0; k < 2; k++) {
        ir_node *x = n->in[k], *c = n->in[1 - k];
        const ag_shape *xs = &x->type.shape;
        if (!rt_is_int(x->type.dtype) || xs->rank < 2 || !is_int_identity(c) ||
            !ir_type_equal(&n->type, &x->type))
            continue;
        int64_t meets = xs->dims[k == 0 ? xs->rank - 1 : xs->rank - 2];
        if (meets < 0 || meets != c->type.shape.dims[0])
            continue;
        forward(s, n, x);
        return true;
    }
    return false;
}

static void simplify_node(simplifier *s, ir_node *n)
{
    switch (n->opcode) {
    case RT_OP_ADD: simplify_add(s, n); break;
    case RT_OP_SUB: simplify_sub(s, n); break;
    case RT_OP_MUL: simplify_mul(s, n); break;
    case RT_OP_DIV: simplify_div(s, n); break;
    case RT_OP_NEG:
    case RT_OP_LOGICAL_NOT: simplify_involution(s, n); break;
    case RT_OP_CAST: simplify_cast(s, n); break;
    case RT_OP_TRANSPOSE: simplify_transpose(s, n); break;
    case RT_OP_RESHAPE: simplify_reshape(s, n); break;
    case RT_OP_FILL_LIKE: simplify_fill_like(s, n); break;
    case RT_OP_MATMUL: simplify_matmul(s, n); break;
    default: break;
    }
}

static void simplify_graph(simplifier *s, ir_graph *g)
{
    for (ir_node *n = g->first, *next; n; n = next) {
        next = n->next;
        pass_remap_inputs(&s->fwd, n);
        if (pass_is_region_op(n)) {
            simplify_graph(s, n->region[0]);
            simplify_graph(s, n->region[1]);
        } else {
            simplify_node(s, n);
        }
    }
    pass_remap_results(&s->fwd, g);
}

bool pass_simplify(ir_function *fn, pass_ctx *ctx)
{
    simplifier s = {.fast_math = ctx->opt.fast_math};
    pass_map_init(&s.fwd, fn);
    simplify_graph(&s, fn->body);
    pass_map_free(&s.fwd);
    pass_fail_cache_free(&s.fails);
    return s.changed;
}
