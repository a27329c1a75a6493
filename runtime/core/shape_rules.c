/*
 * shape_rules.c - the generic shape rules of ops.def. Op-specific rules
 * live beside their kernels in kernels/.
 *
 * Every rule accepts unknown dims (-1) in its inputs, as tracing with a
 * signature like "f32[?,10]" produces them, and gives -1 where the result
 * cannot be known statically.
 */
#include "op_decls.h"

RT_SHAPE_RULE(rt_sh_literal)
{
    (void)in, (void)n, (void)e;
    *out = a->literal->shape;
    return true;
}

RT_SHAPE_RULE(rt_sh_attr)
{
    (void)in, (void)n;
    if (a->shape.rank < 0 || a->shape.rank > AG_MAX_RANK) {
        rt_err_set(e, "rank %d is out of range (0..%d)", a->shape.rank, AG_MAX_RANK);
        return false;
    }
    for (int i = 0; i < a->shape.rank; i++) {
        if (a->shape.dims[i] < 0) {
            char buf[128];
            rt_err_set(e, "shape %s has a negative dim",
                       rt_shape_str(&a->shape, buf, sizeof buf));
            return false;
        }
    }
    *out = a->shape;
    return true;
}

RT_SHAPE_RULE(rt_sh_same)
{
    (void)a, (void)n, (void)e;
    *out = in[0]->shape;
    return true;
}

RT_SHAPE_RULE(rt_sh_scalar)
{
    (void)a, (void)in, (void)n, (void)e;
    *out = AG_SCALAR;
    return true;
}

/* One broadcast dim; -1 is unknown. False when incompatible. */
static bool broadcast_dim(int64_t x, int64_t y, int64_t *out)
{
    if (x == y || y == 1)
        *out = x;
    else if (x == 1)
        *out = y;
    else if (x < 0 || y < 0)
        *out = x < 0 && y < 0 ? -1 : (x < 0 ? y : x);
    else
        return false;
    return true;
}

/* NumPy broadcasting: shapes align at the right; a dim of 1 stretches. */
bool rt_broadcast_shapes(const ag_shape *x, const ag_shape *y, ag_shape *out)
{
    int rank = x->rank > y->rank ? x->rank : y->rank;
    out->rank = rank;
    for (int i = 0; i < rank; i++) {
        int xi = i - (rank - x->rank), yi = i - (rank - y->rank);
        int64_t xd = xi >= 0 ? x->dims[xi] : 1;
        int64_t yd = yi >= 0 ? y->dims[yi] : 1;
        if (!broadcast_dim(xd, yd, &out->dims[i]))
            return false;
    }
    return true;
}

RT_SHAPE_RULE(rt_sh_broadcast)
{
    (void)a;
    ag_shape acc = in[0]->shape;
    for (int i = 1; i < n; i++) {
        ag_shape next;
        if (!rt_broadcast_shapes(&acc, &in[i]->shape, &next)) {
            char b1[128], b2[128];
            rt_err_set(e, "shapes %s and %s cannot be broadcast together",
                       rt_shape_str(&acc, b1, sizeof b1),
                       rt_shape_str(&in[i]->shape, b2, sizeof b2));
            return false;
        }
        acc = next;
    }
    *out = acc;
    return true;
}
