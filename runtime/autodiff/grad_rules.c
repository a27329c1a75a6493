/*
 * grad_rules.c - the gradient of every differentiable op (ops.def's
 * GRAD(name) rows): rt_g_<name> sets the operands' gradients (g->dx) from
 * the result's (g->dy), as TensorFlow's registered gradients do.
 *
 * x, y are the operands, z the result. Gradients of broadcast operands are
 * summed back to the operand's shape (gb_set). The formulas follow
 * TensorFlow's where it chose a value at a kink: relu, abs and max pick
 * the side TF picks.
 */
#include "grad.h"
#include "../core/op_decls.h"

#define X0 (g->in[0])
#define X1 (g->in[1])
#define Z (g->out)
#define DY (g->dy)
/* Whether operand i's gradient is needed: costly ones are skipped. */
#define WANT(i) (g->want[i])

/* ------------------------------------------------------ binary arithmetic */

RT_GRAD_RULE(rt_g_add)
{
    gb_set(g, 0, DY);
    gb_set(g, 1, DY);
    return !g->failed;
}

RT_GRAD_RULE(rt_g_sub)
{
    gb_set(g, 0, DY);
    gb_set(g, 1, gb_unary(g, RT_OP_NEG, DY));
    return !g->failed;
}

RT_GRAD_RULE(rt_g_mul)
{
    if (WANT(0))
        gb_set(g, 0, gb_binary(g, RT_OP_MUL, DY, X1));
    if (WANT(1))
        gb_set(g, 1, gb_binary(g, RT_OP_MUL, DY, X0));
    return !g->failed;
}

/* d(x/y) = dy/y, -dy*z/y */
RT_GRAD_RULE(rt_g_div)
{
    if (WANT(0))
        gb_set(g, 0, gb_binary(g, RT_OP_DIV, DY, X1));
    if (WANT(1)) {
        rt_value *t = gb_binary(g, RT_OP_MUL, DY, Z);
        gb_set(g, 1, gb_unary(g, RT_OP_NEG, gb_binary(g, RT_OP_DIV, t, X1)));
    }
    return !g->failed;
}

/* x mod y = x - floor(x/y)*y: dy, -dy*floor(x/y) (TF's FloorMod). */
RT_GRAD_RULE(rt_g_mod)
{
    gb_set(g, 0, DY);
    rt_value *q = gb_binary(g, RT_OP_FLOORDIV, X0, X1);
    gb_set(g, 1, gb_unary(g, RT_OP_NEG, gb_binary(g, RT_OP_MUL, DY, q)));
    return !g->failed;
}

/* d(x^y) = dy*y*x^(y-1), dy*z*log(x) where x > 0 (else 0, as TF). */
RT_GRAD_RULE(rt_g_pow)
{
    rt_value *ym1 = gb_binary(g, RT_OP_SUB, X1, gb_scalar_like(g, X1, 1.0));
    rt_value *t = gb_binary(g, RT_OP_MUL, X1, gb_binary(g, RT_OP_POW, X0, ym1));
    gb_set(g, 0, gb_binary(g, RT_OP_MUL, DY, t));
    rt_value *zero = gb_scalar_like(g, X0, 0.0);
    rt_value *pos = gb_binary(g, RT_OP_GREATER, X0, zero);
    rt_value *safe = gb_where(g, pos, X0, gb_scalar_like(g, X0, 1.0));
    rt_value *logx = gb_where(g, pos, gb_unary(g, RT_OP_LOG, safe), zero);
    gb_set(g, 1, gb_binary(g, RT_OP_MUL, gb_binary(g, RT_OP_MUL, DY, Z), logx));
    return !g->failed;
}

/* The gradient goes to the operand chosen: x where mask, else y. */
static bool select_grad(rt_grad_args *g, rt_op cmp)
{
    rt_value *mask = gb_binary(g, cmp, X0, X1);
    rt_value *zero = gb_scalar_like(g, DY, 0.0);
    gb_set(g, 0, gb_where(g, mask, DY, zero));
    gb_set(g, 1, gb_where(g, mask, zero, DY));
    return !g->failed;
}

RT_GRAD_RULE(rt_g_maximum) { return select_grad(g, RT_OP_GREATER_EQUAL); }
RT_GRAD_RULE(rt_g_minimum) { return select_grad(g, RT_OP_LESS_EQUAL); }

/* where(c, x, y): the condition has no gradient. */
RT_GRAD_RULE(rt_g_where)
{
    rt_value *zero = gb_scalar_like(g, DY, 0.0);
    g->dx[1] = gb_unbroadcast(g, gb_where(g, X0, DY, zero), &g->in[1]->shape);
    g->dx[2] = gb_unbroadcast(g, gb_where(g, X0, zero, DY), &g->in[2]->shape);
    return !g->failed;
}

/* ---------------------------------------------------------------- unary */

static rt_value *times(rt_grad_args *g, rt_value *a, double k)
{
    return gb_binary(g, RT_OP_MUL, a, gb_scalar_like(g, a, k));
}

RT_GRAD_RULE(rt_g_neg)
{
    gb_set(g, 0, gb_unary(g, RT_OP_NEG, DY));
    return !g->failed;
}

RT_GRAD_RULE(rt_g_abs)
{
    gb_set(g, 0, gb_binary(g, RT_OP_MUL, DY, gb_unary(g, RT_OP_SIGN, X0)));
    return !g->failed;
}

RT_GRAD_RULE(rt_g_exp)
{
    gb_set(g, 0, gb_binary(g, RT_OP_MUL, DY, Z));
    return !g->failed;
}

RT_GRAD_RULE(rt_g_log)
{
    gb_set(g, 0, gb_binary(g, RT_OP_DIV, DY, X0));
    return !g->failed;
}

/* d sqrt(x) = dy / (2 z) */
RT_GRAD_RULE(rt_g_sqrt)
{
    gb_set(g, 0, gb_binary(g, RT_OP_DIV, times(g, DY, 0.5), Z));
    return !g->failed;
}

/* d x^-1/2 = -dy z^3 / 2 */
RT_GRAD_RULE(rt_g_rsqrt)
{
    rt_value *z3 = gb_binary(g, RT_OP_MUL, gb_unary(g, RT_OP_SQUARE, Z), Z);
    gb_set(g, 0, gb_binary(g, RT_OP_MUL, times(g, DY, -0.5), z3));
    return !g->failed;
}

RT_GRAD_RULE(rt_g_square)
{
    gb_set(g, 0, gb_binary(g, RT_OP_MUL, times(g, DY, 2.0), X0));
    return !g->failed;
}

/* d tanh = dy (1 - z^2) */
RT_GRAD_RULE(rt_g_tanh)
{
    rt_value *one = gb_scalar_like(g, Z, 1.0);
    rt_value *t = gb_binary(g, RT_OP_SUB, one, gb_unary(g, RT_OP_SQUARE, Z));
    gb_set(g, 0, gb_binary(g, RT_OP_MUL, DY, t));
    return !g->failed;
}

/* d sigmoid = dy z (1 - z) */
RT_GRAD_RULE(rt_g_sigmoid)
{
    rt_value *one = gb_scalar_like(g, Z, 1.0);
    rt_value *t = gb_binary(g, RT_OP_MUL, Z, gb_binary(g, RT_OP_SUB, one, Z));
    gb_set(g, 0, gb_binary(g, RT_OP_MUL, DY, t));
    return !g->failed;
}

/* relu passes the gradient where its result is positive (TF: z > 0). */
RT_GRAD_RULE(rt_g_relu)
{
    rt_value *zero = gb_scalar_like(g, Z, 0.0);
    rt_value *pos = gb_binary(g, RT_OP_GREATER, Z, zero);
    gb_set(g, 0, gb_where(g, pos, DY, gb_scalar_like(g, DY, 0.0)));
    return !g->failed;
}

/* Between float dtypes the gradient is cast back; to or from integers or
 * bool there is none (the value is not a differentiable function). */
RT_GRAD_RULE(rt_g_cast)
{
    if (rt_is_float(X0->dtype) && rt_is_float(Z->dtype))
        g->dx[0] = gb_cast(g, DY, X0->dtype);
    return !g->failed;
}

/* ----------------------------------------------------------- reductions */

#define AXIS (g->attrs->axis)
#define KEEP (g->attrs->keepdims)

RT_GRAD_RULE(rt_g_reduce_sum)
{
    g->dx[0] = gb_unreduce(g, DY, X0, AXIS, KEEP);
    return !g->failed;
}

RT_GRAD_RULE(rt_g_reduce_mean)
{
    rt_value *count = gb_reduced_count_value(g, X0, Z);
    g->dx[0] = gb_unreduce(g, gb_binary(g, RT_OP_DIV, DY, count), X0, AXIS, KEEP);
    return !g->failed;
}

/* The gradient is shared equally by the elements equal to the extreme. */
static bool extreme_grad(rt_grad_args *g)
{
    rt_value *z = gb_keepdims(g, Z, X0, AXIS, KEEP);
    rt_value *hit = gb_cast(g, gb_binary(g, RT_OP_EQUAL, X0, z), X0->dtype);
    rt_value *ties = gb_reduce(g, RT_OP_REDUCE_SUM, hit, AXIS, true);
    rt_value *share = gb_binary(g, RT_OP_DIV, gb_keepdims(g, DY, X0, AXIS, KEEP), ties);
    g->dx[0] = gb_binary(g, RT_OP_MUL, hit, share);
    return !g->failed;
}

RT_GRAD_RULE(rt_g_reduce_max) { return extreme_grad(g); }
RT_GRAD_RULE(rt_g_reduce_min) { return extreme_grad(g); }

/*
 * d prod = dy * (product of the other elements). Without dividing by x,
 * which zeros forbid: where x != 0 it is z / x; at the only zero of a
 * slice it is the product of the slice's non-zero elements; with two or
 * more zeros every element's is 0.
 */
RT_GRAD_RULE(rt_g_reduce_prod)
{
    rt_value *zero = gb_scalar_like(g, X0, 0.0), *one = gb_scalar_like(g, X0, 1.0);
    rt_value *is0 = gb_binary(g, RT_OP_EQUAL, X0, zero);
    rt_value *safe = gb_where(g, is0, one, X0);
    rt_value *nz_prod = gb_reduce(g, RT_OP_REDUCE_PROD, safe, AXIS, true);
    rt_value *zeros = gb_reduce(g, RT_OP_REDUCE_SUM, gb_cast(g, is0, X0->dtype), AXIS, true);
    rt_value *lone = gb_binary(g, RT_OP_EQUAL, zeros, one);
    rt_value *at_zero = gb_where(g, lone, nz_prod, zero);
    rt_value *z = gb_keepdims(g, Z, X0, AXIS, KEEP);
    rt_value *others = gb_where(g, is0, at_zero, gb_binary(g, RT_OP_DIV, z, safe));
    g->dx[0] = gb_binary(g, RT_OP_MUL, others, gb_keepdims(g, DY, X0, AXIS, KEEP));
    return !g->failed;
}

/* d softmax = z * (dy - sum(dy * z)) along the axis. */
RT_GRAD_RULE(rt_g_softmax)
{
    rt_value *s = gb_reduce(g, RT_OP_REDUCE_SUM, gb_binary(g, RT_OP_MUL, DY, Z), AXIS, true);
    g->dx[0] = gb_binary(g, RT_OP_MUL, Z, gb_binary(g, RT_OP_SUB, DY, s));
    return !g->failed;
}

/* ------------------------------------------------------------- products */

/* x with its last two axes swapped. */
static rt_value *swap_last(rt_grad_args *g, rt_value *x)
{
    if (!x)
        return NULL;
    ag_shape perm = {.rank = x->shape.rank};
    for (int i = 0; i < perm.rank; i++)
        perm.dims[i] = i;
    perm.dims[perm.rank - 2] = perm.rank - 1;
    perm.dims[perm.rank - 1] = perm.rank - 2;
    return gb_transpose(g, x, &perm);
}

/* z = x y: dx = dy y^T, dy = x^T dy (batch axes summed back by gb_set). */
RT_GRAD_RULE(rt_g_matmul)
{
    if (WANT(0))
        gb_set(g, 0, gb_binary(g, RT_OP_MATMUL, DY, swap_last(g, X1)));
    if (WANT(1))
        gb_set(g, 1, gb_binary(g, RT_OP_MATMUL, swap_last(g, X0), DY));
    return !g->failed;
}

/* --------------------------------------------------------- moving data */

/* Ops that only give the data another shape: the gradient takes it back. */
RT_GRAD_RULE(rt_g_reshape)
{
    g->dx[0] = gb_reshape(g, DY, &X0->shape);
    return !g->failed;
}

RT_GRAD_RULE(rt_g_expand_dims) { return rt_g_reshape(g); }
RT_GRAD_RULE(rt_g_squeeze) { return rt_g_reshape(g); }
RT_GRAD_RULE(rt_g_to_device) { return rt_g_reshape(g); }
RT_GRAD_RULE(rt_g_to_host) { return rt_g_reshape(g); }

RT_GRAD_RULE(rt_g_transpose)
{
    const ag_shape *perm = &g->attrs->perm;
    ag_shape inverse = {.rank = perm->rank};
    for (int i = 0; i < perm->rank; i++)
        inverse.dims[perm->dims[i]] = i;
    g->dx[0] = gb_transpose(g, DY, &inverse);
    return !g->failed;
}

/* The part of dy that operand i of a concat (or stack) filled. */
static rt_value *piece(rt_grad_args *g, int axis, int64_t at, int64_t len)
{
    rt_attrs a = {.begin = {.rank = DY->shape.rank}, .size = DY->shape};
    a.begin.dims[axis] = at;
    a.size.dims[axis] = len;
    return gb_op(g, RT_OP_SLICE, &a, &DY, 1);
}

RT_GRAD_RULE(rt_g_concat)
{
    int axis;
    if (!rt_norm_axis(AXIS, DY->shape.rank, &axis))
        return false;
    int64_t at = 0;
    for (int i = 0; i < g->n; i++) {
        int64_t len = g->in[i]->shape.dims[axis];
        g->dx[i] = piece(g, axis, at, len);
        at += len;
    }
    return !g->failed;
}

RT_GRAD_RULE(rt_g_stack)
{
    int axis;
    if (!rt_norm_axis(AXIS, DY->shape.rank, &axis))
        return false;
    for (int i = 0; i < g->n; i++)
        g->dx[i] = gb_reshape(g, piece(g, axis, i, 1), &g->in[i]->shape);
    return !g->failed;
}

/* A slice's gradient is dy with zeros around it, axis by axis. */
static rt_value *pad_axis(rt_grad_args *g, rt_value *x, int axis, int64_t before,
                          int64_t after)
{
    rt_value *parts[3];
    int n = 0;
    ag_shape s = x->shape;
    if (before > 0) {
        s.dims[axis] = before;
        parts[n++] = gb_fill(g, x->dtype, &s, 0.0);
    }
    parts[n++] = x;
    if (after > 0) {
        s.dims[axis] = after;
        parts[n++] = gb_fill(g, x->dtype, &s, 0.0);
    }
    if (n == 1)
        return x;
    rt_attrs a = {.axis = axis};
    return gb_op(g, RT_OP_CONCAT, &a, parts, n);
}

RT_GRAD_RULE(rt_g_slice)
{
    const rt_attrs *a = g->attrs;
    rt_value *d = DY;
    for (int ax = 0; d && ax < X0->shape.rank; ax++) {
        int64_t begin = a->begin.dims[ax], len = Z->shape.dims[ax];
        d = pad_axis(g, d, ax, begin, X0->shape.dims[ax] - begin - len);
    }
    g->dx[0] = d;
    return !g->failed;
}
