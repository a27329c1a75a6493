/*
 * grad_rules_nn.c - the gradients of conv2d and gather (ops.def's GRAD
 * rows), and of the ops those gradients are made of, as TensorFlow
 * registers them:
 *
 *   conv2d(x, w)                 dx = conv2d_backprop_input(dy, w)
 *                                dw = conv2d_backprop_filter(x, dy)
 *   gather(p, i, axis)           dp = unsorted_segment_sum(dy, i, axis,
 *                                     p's size on the axis)
 *
 * The new ops are linear in each operand, so their own gradients are the
 * other members of the family: each of conv2d, backprop_input and
 * backprop_filter is a pairing <dy, conv2d(x, w)> read with a different
 * pair of its three arguments as operands, and a segment sum's transpose
 * is the gather. That closes the family under differentiation, which
 * nested tapes (gradients of gradients) need. Indices have no gradient.
 */
#include "grad.h"
#include "../core/op_decls.h"

#define X0 (g->in[0])
#define X1 (g->in[1])
#define DY (g->dy)
#define WANT(i) (g->want[i])

/* ---------------------------------------------------------------- conv2d */

/* The forward's strides and padding, with shape s (the result's). */
static rt_attrs conv_attrs(const rt_grad_args *g, const ag_shape *s)
{
    rt_attrs a = {.stride_h = g->attrs->stride_h, .stride_w = g->attrs->stride_w,
                  .padding = g->attrs->padding};
    if (s)
        a.shape = *s;
    return a;
}

/* One of the three ops of the family on operands p, q. */
static rt_value *conv_op(rt_grad_args *g, rt_op op, rt_value *p, rt_value *q,
                         const ag_shape *s)
{
    rt_attrs a = conv_attrs(g, s);
    rt_value *in[2] = {p, q};
    return gb_op(g, op, &a, in, 2);
}

/* y = conv2d(x, w) */
RT_GRAD_RULE(rt_g_conv2d)
{
    if (WANT(0))
        g->dx[0] = conv_op(g, RT_OP_CONV2D_BACKPROP_INPUT, DY, X1, &X0->shape);
    if (WANT(1))
        g->dx[1] = conv_op(g, RT_OP_CONV2D_BACKPROP_FILTER, X0, DY, &X1->shape);
    return !g->failed;
}

/* x' = conv2d_backprop_input(d, w): d's gradient is conv2d(dy, w), w's
 * backprop_filter(dy, d) (dy has x's shape). */
RT_GRAD_RULE(rt_g_conv2d_backprop_input)
{
    if (WANT(0))
        g->dx[0] = conv_op(g, RT_OP_CONV2D, DY, X1, NULL);
    if (WANT(1))
        g->dx[1] = conv_op(g, RT_OP_CONV2D_BACKPROP_FILTER, DY, X0, &X1->shape);
    return !g->failed;
}

/* w' = conv2d_backprop_filter(x, d): x's gradient is backprop_input(d, dy),
 * d's conv2d(x, dy) (dy has the filter's shape). */
RT_GRAD_RULE(rt_g_conv2d_backprop_filter)
{
    if (WANT(0))
        g->dx[0] = conv_op(g, RT_OP_CONV2D_BACKPROP_INPUT, X1, DY, &X0->shape);
    if (WANT(1))
        g->dx[1] = conv_op(g, RT_OP_CONV2D, X0, DY, NULL);
    return !g->failed;
}

/* ---------------------------------------------------------------- gather */

/* z = gather(p, i, axis): each gathered slice's gradient goes back to row
 * i[j] of p, summed where an index repeats. */
RT_GRAD_RULE(rt_g_gather)
{
    int axis;
    if (!WANT(0) || !rt_norm_axis(g->attrs->axis, X0->shape.rank, &axis))
        return !g->failed;
    int64_t rows = X0->shape.dims[axis];
    if (rows < 0) {
        rt_report(g->loc, "ag_tape_gradient: the gradient of ag_gather needs the size of "
                          "axis %d of the gathered tensor, which is known only when the "
                          "graph runs; give it in the signature", axis);
        return false;
    }
    rt_attrs a = {.axis = axis, .n = rows};
    rt_value *in[2] = {DY, X1};
    g->dx[0] = gb_op(g, RT_OP_UNSORTED_SEGMENT_SUM, &a, in, 2);
    return !g->failed;
}

/* z = unsorted_segment_sum(d, i): each slice of d was added into row i[j],
 * so its gradient is that row of dy: a gather. */
RT_GRAD_RULE(rt_g_unsorted_segment_sum)
{
    if (!WANT(0))
        return !g->failed;
    rt_attrs a = {.axis = g->attrs->axis};
    rt_value *in[2] = {DY, X1};
    g->dx[0] = gb_op(g, RT_OP_GATHER, &a, in, 2);
    return !g->failed;
}
