/*
 * grad_rules_list.c - the gradients of the tensor-array ops (ops.def's
 * GRAD rows for ta_write, ta_read and ta_stack).
 *
 * The gradient of a tensor array is a dense tensor [size, element...]:
 * row i is the gradient of element i. Every value of one array shares its
 * list (as TensorFlow's eager tensor arrays do), so when the backward runs
 * the list has its final size, and every gradient of the array's values
 * has that one shape and adds like any other:
 *
 *   y = ta_stack(ta)          dta = dy
 *   y = ta_read(ta, i)        dta = onehot(i) (x) dy          (row i is dy)
 *   ta' = ta_write(ta, i, v)  dv = dta'[i];  dta = dta' with row i zeroed
 *                             (the element written over had no effect on ta')
 *
 * The one-hot rows are computed with ops from the list's size (ta_size),
 * so the rules work eagerly and in a traced graph alike, and a staged
 * loop or condition that carries an array carries this tensor in its
 * backward (ir/loop_grad.c, ir/staged_grad.c), where these rules run on
 * the replayed body. A call of an AG_FUNCTION that returns an array is
 * refused by the backward (backward.c): its gradient graph does not
 * carry these tensors yet.
 */
#include "grad.h"
#include "../core/op_decls.h"

#define X0 (g->in[0])
#define X1 (g->in[1])
#define DY (g->dy)
#define WANT(i) (g->want[i])

/* [size, 1, ..., 1] (extra 1s), of dtype dt: whether each row of list ta
 * is row i (equal, or unequal when `other`). */
static rt_value *row_mask(rt_grad_args *g, rt_value *ta, rt_value *i, int extra, ag_dtype dt,
                          bool other)
{
    rt_value *size = gb_unary(g, RT_OP_TA_SIZE, ta);
    rt_value *range_in[3] = {gb_scalar_like(g, size, 0), size, gb_scalar_like(g, size, 1)};
    rt_value *rows = gb_op(g, RT_OP_RANGE, NULL, range_in, 3);
    rt_value *index = i && size ? gb_cast(g, i, size->dtype) : NULL;
    rt_value *m = gb_binary(g, other ? RT_OP_NOT_EQUAL : RT_OP_EQUAL, rows, index);
    m = gb_cast(g, m, dt);
    for (int k = 0; k < extra; k++) {
        rt_attrs a = {.axis = 1 + k};
        rt_value *in[1] = {m};
        m = gb_op(g, RT_OP_EXPAND_DIMS, &a, in, 1);
    }
    return m;
}

RT_GRAD_RULE(rt_g_ta_stack)
{
    if (WANT(0))
        g->dx[0] = DY; /* not gb_set: a list's shape is its element's */
    return !g->failed;
}

RT_GRAD_RULE(rt_g_ta_read)
{
    if (!WANT(0))
        return !g->failed;
    rt_value *m = row_mask(g, X0, X1, DY->shape.rank, DY->dtype, false);
    rt_attrs a = {.axis = 0};
    rt_value *in[1] = {DY};
    g->dx[0] = gb_binary(g, RT_OP_MUL, m, gb_op(g, RT_OP_EXPAND_DIMS, &a, in, 1));
    return !g->failed;
}

RT_GRAD_RULE(rt_g_ta_write)
{
    if (WANT(2)) {
        rt_attrs a = {.axis = 0};
        rt_value *in[2] = {DY, X1};
        gb_set(g, 2, gb_op(g, RT_OP_GATHER, &a, in, 2));
    }
    if (WANT(0)) {
        rt_value *keep = row_mask(g, X0, X1, DY->shape.rank - 1, DY->dtype, true);
        g->dx[0] = gb_binary(g, RT_OP_MUL, DY, keep);
    }
    return !g->failed;
}
