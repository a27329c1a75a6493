/*
 * grad_build.c - the ops gradient rules are written with (grad.h).
 */
#include "grad.h"

#include <string.h>

static rt_value *made(rt_grad_args *g, rt_value *v)
{
    if (!v) {
        g->failed = true;
        return NULL;
    }
    if (g->n_made == g->cap_made) {
        g->cap_made = g->cap_made ? 2 * g->cap_made : 16;
        g->made = rt_xrealloc(g->made, (size_t)g->cap_made * sizeof *g->made);
    }
    g->made[g->n_made++] = v;
    return v;
}

rt_value *gb_op(rt_grad_args *g, rt_op op, const rt_attrs *a, rt_value *const *in, int n)
{
    for (int i = 0; i < n; i++)
        if (!in[i]) {
            g->failed = true;
            return NULL;
        }
    return made(g, rt_apply(g->loc, op, a, in, n));
}

rt_value *gb_unary(rt_grad_args *g, rt_op op, rt_value *x)
{
    return gb_op(g, op, NULL, &x, 1);
}

rt_value *gb_binary(rt_grad_args *g, rt_op op, rt_value *x, rt_value *y)
{
    rt_value *in[2] = {x, y};
    return gb_op(g, op, NULL, in, 2);
}

rt_value *gb_where(rt_grad_args *g, rt_value *c, rt_value *x, rt_value *y)
{
    rt_value *in[3] = {c, x, y};
    return gb_op(g, RT_OP_WHERE, NULL, in, 3);
}

rt_value *gb_scalar_like(rt_grad_args *g, const rt_value *x, double v)
{
    return made(g, rt_value_scalar(x->dtype, v));
}

/* A fill of x's shape made from the shape itself when it is static, so
 * that a gradient graph does not read x only for its shape (the forward
 * need not hand it to the backward: ir/split.c). */
rt_value *gb_fill_like(rt_grad_args *g, rt_value *x, double v)
{
    if (x && x->dtype != RT_LIST && rt_shape_known(&x->shape))
        return gb_fill(g, x->dtype, &x->shape, v);
    rt_attrs a = {.value = v};
    return gb_op(g, RT_OP_FILL_LIKE, &a, &x, 1);
}

rt_value *gb_fill(rt_grad_args *g, ag_dtype dt, const ag_shape *s, double v)
{
    rt_attrs a = {.dtype = dt, .shape = *s, .value = v};
    return gb_op(g, RT_OP_FILL, &a, NULL, 0);
}

rt_value *gb_reduce(rt_grad_args *g, rt_op op, rt_value *x, int64_t axis, bool keepdims)
{
    rt_attrs a = {.axis = axis, .keepdims = keepdims};
    return gb_op(g, op, &a, &x, 1);
}

rt_value *gb_reshape(rt_grad_args *g, rt_value *x, const ag_shape *s)
{
    if (x && ag_shape_equal(x->shape, *s))
        return x;
    rt_attrs a = {.shape = *s};
    return gb_op(g, RT_OP_RESHAPE, &a, &x, 1);
}

rt_value *gb_transpose(rt_grad_args *g, rt_value *x, const ag_shape *perm)
{
    rt_attrs a = {.perm = *perm};
    return gb_op(g, RT_OP_TRANSPOSE, &a, &x, 1);
}

rt_value *gb_cast(rt_grad_args *g, rt_value *x, ag_dtype dt)
{
    if (x && x->dtype == dt)
        return x;
    rt_attrs a = {.dtype = dt};
    return gb_op(g, RT_OP_CAST, &a, &x, 1);
}

rt_value *gb_unbroadcast(rt_grad_args *g, rt_value *x, const ag_shape *s)
{
    if (!x || ag_shape_equal(x->shape, *s))
        return x;
    /* Leading axes the operand lacks are summed away; axes where it has 1
     * are summed keeping the 1. */
    while (x && x->shape.rank > s->rank)
        x = gb_reduce(g, RT_OP_REDUCE_SUM, x, 0, false);
    for (int ax = 0; x && ax < s->rank; ax++)
        if (s->dims[ax] == 1 && x->shape.dims[ax] != 1)
            x = gb_reduce(g, RT_OP_REDUCE_SUM, x, ax, true);
    return x;
}

rt_value *gb_keepdims(rt_grad_args *g, rt_value *dy, const rt_value *x, int64_t axis,
                      bool keepdims)
{
    if (!dy || keepdims)
        return dy;
    ag_shape kept = x->shape;
    int ax;
    if (axis == AG_ALL_AXES) {
        for (int i = 0; i < kept.rank; i++)
            kept.dims[i] = 1;
    } else if (rt_norm_axis(axis, kept.rank, &ax)) {
        kept.dims[ax] = 1;
    }
    return gb_reshape(g, dy, &kept);
}

rt_value *gb_unreduce(rt_grad_args *g, rt_value *dy, rt_value *x, int64_t axis,
                      bool keepdims)
{
    rt_value *kept = gb_keepdims(g, dy, x, axis, keepdims);
    /* zeros like x (x's shape may be known only when the graph runs) plus
     * kept, broadcast: kept at x's shape */
    rt_value *zeros = kept ? gb_cast(g, gb_fill_like(g, x, 0.0), kept->dtype) : NULL;
    return gb_binary(g, RT_OP_ADD, zeros, kept);
}

rt_value *gb_reduced_count_value(rt_grad_args *g, rt_value *x, rt_value *z)
{
    if (rt_shape_known(&x->shape) && rt_shape_known(&z->shape))
        return gb_scalar_like(g, z, (double)(z->numel > 0 ? x->numel / z->numel : 1));
    rt_value *nx = gb_cast(g, gb_unary(g, RT_OP_SIZE, x), z->dtype);
    rt_value *nz = gb_cast(g, gb_unary(g, RT_OP_SIZE, z), z->dtype);
    return gb_binary(g, RT_OP_MAXIMUM, gb_binary(g, RT_OP_DIV, nx, nz),
                     gb_scalar_like(g, z, 1.0));
}

void gb_set(rt_grad_args *g, int i, rt_value *v)
{
    g->dx[i] = gb_unbroadcast(g, v, &g->in[i]->shape);
}
