/*
 * ops.c - the public op entry points. Each builds the op's attributes and
 * hands the operands to the dispatcher; all checking happens there.
 */
#include "../core/rt.h"

/* The functions of the table's API_BINARY and API_UNARY rows (ops.def);
 * the other ops' follow, each with its own signature. */
#define DEFINE_API_BINARY(id, name)                                      \
    ag_tensor ag_##name##_at(ag_loc loc, ag_operand a, ag_operand b)     \
    {                                                                    \
        return rt_call_binary(loc, RT_OP_##id, a, b);                    \
    }
#define DEFINE_API_UNARY(id, name)                                       \
    ag_tensor ag_##name##_at(ag_loc loc, ag_tensor x)                    \
    {                                                                    \
        return rt_call(loc, RT_OP_##id, NULL, &x, 1);                    \
    }
#define DEFINE_API_OWN(id, name)
#define DEFINE_API_OTHER(id, name)

#define X(id, name, arity, attrs, flags, cost, elem, dtype_fn, shape_fn, kernel, api, grad) \
    DEFINE_##api(id, name)
#include "../core/ops.def"
#undef X

/*
 * ag.h declares those functions from lists of its own, AG__BINARY_OPS and
 * AG__UNARY_OPS, as it cannot include the table (see ops.def). The lists
 * must be exactly the table's rows of each form: every name listed has a
 * row of that form (api_binary_<name> or api_unary_<name> below exists),
 * and the counts agree.
 */
#define BINARY_ROW_API_BINARY(name) api_binary_##name,
#define BINARY_ROW_API_UNARY(name)
#define BINARY_ROW_API_OWN(name)
#define BINARY_ROW_API_OTHER(name)
#define X(id, name, arity, attrs, flags, cost, elem, dtype_fn, shape_fn, kernel, api, grad) \
    BINARY_ROW_##api(name)
enum api_binary_rows {
#include "../core/ops.def"
    API_BINARY_ROWS
};
#undef X

#define UNARY_ROW_API_BINARY(name)
#define UNARY_ROW_API_UNARY(name) api_unary_##name,
#define UNARY_ROW_API_OWN(name)
#define UNARY_ROW_API_OTHER(name)
#define X(id, name, arity, attrs, flags, cost, elem, dtype_fn, shape_fn, kernel, api, grad) \
    UNARY_ROW_##api(name)
enum api_unary_rows {
#include "../core/ops.def"
    API_UNARY_ROWS
};
#undef X

#define PLUS_ONE(name) +1
#define LISTED_BINARY(name)                                              \
    _Static_assert(api_binary_##name >= 0, "ag.h's AG__BINARY_OPS lists " #name);
#define LISTED_UNARY(name)                                               \
    _Static_assert(api_unary_##name >= 0, "ag.h's AG__UNARY_OPS lists " #name);
AG__BINARY_OPS(LISTED_BINARY)
AG__UNARY_OPS(LISTED_UNARY)
_Static_assert(0 AG__BINARY_OPS(PLUS_ONE) == API_BINARY_ROWS,
               "ops.def has an API_BINARY row missing from ag.h's AG__BINARY_OPS");
_Static_assert(0 AG__UNARY_OPS(PLUS_ONE) == API_UNARY_ROWS,
               "ops.def has an API_UNARY row missing from ag.h's AG__UNARY_OPS");

/* where's cond is a tensor; a and b may be C numbers of b's or a's dtype. */
ag_tensor ag_where_at(ag_loc loc, ag_tensor cond, ag_operand a, ag_operand b)
{
    ag_operand ops[3] = {{AG_OPERAND_TENSOR, cond, 0, 0}, a, b};
    rt_value *c = rt_handle_get(loc, cond);
    if (!c)
        return rt_error_tensor();
    /* Weak operands take their dtype from the other branch, not cond. */
    rt_operand_values branches;
    if (!rt_operands_to_values(loc, "ag_where", ops + 1, 2, &branches))
        return rt_error_tensor();
    rt_value *vals[3] = {c, branches.v[0], branches.v[1]};
    rt_value *r = rt_apply(loc, RT_OP_WHERE, NULL, vals, 3);
    return r ? rt_handle_new(r) : rt_error_tensor();
}

ag_tensor ag_cast_at(ag_loc loc, ag_tensor t, ag_dtype dt)
{
    rt_attrs a = {.dtype = dt};
    return rt_call(loc, RT_OP_CAST, &a, &t, 1);
}

static ag_tensor reduce(ag_loc loc, rt_op op, ag_tensor t, int axis, bool keepdims)
{
    rt_attrs a = {.axis = axis, .keepdims = keepdims};
    return rt_call(loc, op, &a, &t, 1);
}

ag_tensor ag_reduce_sum_at(ag_loc loc, ag_tensor t, int axis, bool keep)
{
    return reduce(loc, RT_OP_REDUCE_SUM, t, axis, keep);
}
ag_tensor ag_reduce_mean_at(ag_loc loc, ag_tensor t, int axis, bool keep)
{
    return reduce(loc, RT_OP_REDUCE_MEAN, t, axis, keep);
}
ag_tensor ag_reduce_max_at(ag_loc loc, ag_tensor t, int axis, bool keep)
{
    return reduce(loc, RT_OP_REDUCE_MAX, t, axis, keep);
}
ag_tensor ag_reduce_min_at(ag_loc loc, ag_tensor t, int axis, bool keep)
{
    return reduce(loc, RT_OP_REDUCE_MIN, t, axis, keep);
}
ag_tensor ag_reduce_prod_at(ag_loc loc, ag_tensor t, int axis, bool keep)
{
    return reduce(loc, RT_OP_REDUCE_PROD, t, axis, keep);
}
ag_tensor ag_reduce_any_at(ag_loc loc, ag_tensor t, int axis, bool keep)
{
    return reduce(loc, RT_OP_REDUCE_ANY, t, axis, keep);
}
ag_tensor ag_reduce_all_at(ag_loc loc, ag_tensor t, int axis, bool keep)
{
    return reduce(loc, RT_OP_REDUCE_ALL, t, axis, keep);
}
ag_tensor ag_argmax_at(ag_loc loc, ag_tensor t, int axis)
{
    return reduce(loc, RT_OP_ARGMAX, t, axis, false);
}
ag_tensor ag_softmax_at(ag_loc loc, ag_tensor t, int axis)
{
    return reduce(loc, RT_OP_SOFTMAX, t, axis, false);
}

ag_tensor ag_matmul_at(ag_loc loc, ag_tensor a, ag_tensor b)
{
    ag_tensor in[2] = {a, b};
    return rt_call(loc, RT_OP_MATMUL, NULL, in, 2);
}

ag_tensor ag_conv2d_at(ag_loc loc, ag_tensor x, ag_tensor filter, int stride_h,
                       int stride_w, ag_padding padding)
{
    rt_attrs a = {.stride_h = stride_h, .stride_w = stride_w, .padding = padding};
    ag_tensor in[2] = {x, filter};
    return rt_call(loc, RT_OP_CONV2D, &a, in, 2);
}

static ag_tensor call3(ag_loc loc, rt_op op, const rt_attrs *a, ag_tensor x, ag_tensor y,
                       ag_tensor z)
{
    ag_tensor in[3] = {x, y, z};
    return rt_call(loc, op, a, in, 3);
}

ag_tensor ag_quantize_at(ag_loc loc, ag_tensor x, ag_tensor scale, ag_tensor zero_point)
{
    return call3(loc, RT_OP_QUANTIZE, NULL, x, scale, zero_point);
}

ag_tensor ag_dequantize_at(ag_loc loc, ag_tensor q, ag_tensor scale, ag_tensor zero_point)
{
    return call3(loc, RT_OP_DEQUANTIZE, NULL, q, scale, zero_point);
}

ag_tensor ag_qmatmul_at(ag_loc loc, ag_tensor a, ag_tensor b, ag_tensor a_zero_point)
{
    return call3(loc, RT_OP_QMATMUL, NULL, a, b, a_zero_point);
}

ag_tensor ag_qconv2d_at(ag_loc loc, ag_tensor x, ag_tensor filter, ag_tensor x_zero_point,
                        int stride_h, int stride_w, ag_padding padding)
{
    rt_attrs a = {.stride_h = stride_h, .stride_w = stride_w, .padding = padding};
    return call3(loc, RT_OP_QCONV2D, &a, x, filter, x_zero_point);
}

ag_tensor ag_requantize_at(ag_loc loc, ag_tensor acc, ag_tensor multiplier,
                           ag_tensor zero_point, int lo, int hi)
{
    rt_attrs a = {.lo = lo, .hi = hi};
    return call3(loc, RT_OP_REQUANTIZE, &a, acc, multiplier, zero_point);
}

ag_tensor ag_reshape_at(ag_loc loc, ag_tensor t, ag_shape s)
{
    rt_attrs a = {.shape = s};
    return rt_call(loc, RT_OP_RESHAPE, &a, &t, 1);
}

/* The default permutation, the axes of t reversed. It is resolved here,
 * against t's rank, so that a trace records an ordinary permutation and
 * the eager kernel, the IR and every target see the same one. False
 * after reporting (an error tensor in AG_ERRORS_RETURN mode stays quiet). */
static bool reversed_axes(ag_loc loc, ag_tensor t, ag_shape *perm)
{
    rt_value *v = rt_handle_get(loc, t);
    if (!v)
        return false;
    if (v->dtype == RT_LIST)
        return true; /* rt_call reports the tensor array */
    if (v->shape.rank < 0) {
        rt_report(loc, "ag_transpose: the tensor's rank is unknown while tracing, so "
                       "the default permutation (the axes reversed) is too; list the "
                       "permutation");
        return false;
    }
    perm->rank = v->shape.rank;
    for (int i = 0; i < perm->rank; i++)
        perm->dims[i] = perm->rank - 1 - i;
    return true;
}

ag_tensor ag_transpose_at(ag_loc loc, ag_tensor t, int n, const int *perm)
{
    rt_attrs a = {.perm = {.rank = n}};
    if (n < 0 || n > AG_MAX_RANK) {
        rt_report(loc, "ag_transpose: a permutation of %d axes is out of range", n);
        return rt_error_tensor();
    }
    if (n == 0 && !reversed_axes(loc, t, &a.perm))
        return rt_error_tensor();
    for (int i = 0; i < n; i++)
        a.perm.dims[i] = perm[i];
    return rt_call(loc, RT_OP_TRANSPOSE, &a, &t, 1);
}

static ag_tensor join(ag_loc loc, rt_op op, int axis, int n, const ag_tensor *ts)
{
    rt_attrs a = {.axis = axis};
    if (n < 1 || !ts) {
        rt_report(loc, "ag_%s: needs at least one tensor (got n = %d%s)", rt_ops[op].name,
                  n, ts ? "" : " and a NULL array");
        return rt_error_tensor();
    }
    return rt_call(loc, op, &a, ts, n);
}

ag_tensor ag_concat_at(ag_loc loc, int axis, int n, const ag_tensor *ts)
{
    return join(loc, RT_OP_CONCAT, axis, n, ts);
}

ag_tensor ag_stack_at(ag_loc loc, int axis, int n, const ag_tensor *ts)
{
    return join(loc, RT_OP_STACK, axis, n, ts);
}

ag_tensor ag_slice_at(ag_loc loc, ag_tensor t, ag_shape begin, ag_shape size)
{
    rt_attrs a = {.begin = begin, .size = size};
    return rt_call(loc, RT_OP_SLICE, &a, &t, 1);
}

ag_tensor ag_gather_at(ag_loc loc, ag_tensor t, ag_tensor indices, int axis)
{
    rt_attrs a = {.axis = axis};
    ag_tensor in[2] = {t, indices};
    return rt_call(loc, RT_OP_GATHER, &a, in, 2);
}

ag_tensor ag_expand_dims_at(ag_loc loc, ag_tensor t, int axis)
{
    rt_attrs a = {.axis = axis};
    return rt_call(loc, RT_OP_EXPAND_DIMS, &a, &t, 1);
}

ag_tensor ag_squeeze_at(ag_loc loc, ag_tensor t, int axis)
{
    rt_attrs a = {.axis = axis};
    return rt_call(loc, RT_OP_SQUEEZE, &a, &t, 1);
}

ag_tensor ag_one_hot_at(ag_loc loc, ag_tensor indices, int64_t depth)
{
    rt_attrs a = {.n = depth};
    return rt_call(loc, RT_OP_ONE_HOT, &a, &indices, 1);
}
