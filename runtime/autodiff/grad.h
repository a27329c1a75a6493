/*
 * grad.h - what a gradient rule (ops.def's gradient column) is given, and
 * the helpers rules build their ops with (grad_build.c).
 *
 * A rule computes its operands' gradients from its result's with ops,
 * through rt_apply: eagerly they run, while tracing they become nodes, and
 * a tape that watches them records them (gradients of gradients). Every
 * value a helper makes is kept in the argument's list and freed after the
 * rule, except those the rule stores in dx; a helper given NULL (an
 * earlier op failed, already reported) gives NULL, so a rule is written
 * straight through and checked once at the end.
 */
#ifndef RT_AUTODIFF_GRAD_H
#define RT_AUTODIFF_GRAD_H

#include "../core/rt.h"

typedef struct rt_grad_args {
    ag_loc loc;            /* the forward op's: the user's line */
    const rt_attrs *attrs; /* the forward op's */
    rt_value *const *in;   /* its operands */
    int n;
    rt_value *out;         /* its result */
    rt_value *dy;          /* the gradient of its result */
    rt_value **dx;         /* n slots: the operands' gradients (NULL: none) */
    const bool *want;      /* n: whether operand i's gradient is wanted (a
                              source depends on it); rules may skip others */
    rt_value **made;       /* what the helpers made */
    int n_made, cap_made;
    bool failed;
} rt_grad_args;

rt_value *gb_op(rt_grad_args *g, rt_op op, const rt_attrs *a, rt_value *const *in, int n);
rt_value *gb_unary(rt_grad_args *g, rt_op op, rt_value *x);
rt_value *gb_binary(rt_grad_args *g, rt_op op, rt_value *x, rt_value *y);
rt_value *gb_where(rt_grad_args *g, rt_value *c, rt_value *x, rt_value *y);
/* A scalar of x's dtype holding v. */
rt_value *gb_scalar_like(rt_grad_args *g, const rt_value *x, double v);
/* A tensor of x's shape and dtype filled with v. */
rt_value *gb_fill_like(rt_grad_args *g, rt_value *x, double v);
rt_value *gb_fill(rt_grad_args *g, ag_dtype dt, const ag_shape *s, double v);
rt_value *gb_reduce(rt_grad_args *g, rt_op op, rt_value *x, int64_t axis, bool keepdims);
rt_value *gb_reshape(rt_grad_args *g, rt_value *x, const ag_shape *s);
rt_value *gb_transpose(rt_grad_args *g, rt_value *x, const ag_shape *perm);
rt_value *gb_cast(rt_grad_args *g, rt_value *x, ag_dtype dt);
/* x (of a broadcast result's shape) summed back to shape s, the operand's. */
rt_value *gb_unbroadcast(rt_grad_args *g, rt_value *x, const ag_shape *s);
/* The gradient of a reduction's result (dy) brought back to its operand's
 * shape: the reduced axes restored as 1s, then broadcast. */
rt_value *gb_unreduce(rt_grad_args *g, rt_value *dy, rt_value *x, int64_t axis,
                      bool keepdims);
/* dy with the reduced axes restored as 1s (not broadcast). */
rt_value *gb_keepdims(rt_grad_args *g, rt_value *dy, const rt_value *x, int64_t axis,
                      bool keepdims);
/* How many elements of x a reduction combined into each of z's, as a
 * scalar of z's dtype (computed in the graph when a shape is known only
 * at run time). */
rt_value *gb_reduced_count_value(rt_grad_args *g, rt_value *x, rt_value *z);

/* Sets dx[i] = v, unbroadcast to operand i's shape. */
void gb_set(rt_grad_args *g, int i, rt_value *v);

#endif
