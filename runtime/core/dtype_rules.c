/*
 * dtype_rules.c - the dtype rules that ops.def names.
 *
 * agc never promotes between two tensors of different dtypes: as in
 * TensorFlow, `i32 + f32` is an error that asks for an explicit ag_cast.
 * (C numbers are weakly typed and were already converted by the caller.)
 */
#include "op_decls.h"

static const char *dn(ag_dtype dt) { return ag_dtype_name(dt); }

static bool same_dtype(rt_value *const *in, int n, rt_err *e)
{
    for (int i = 1; i < n; i++) {
        if (in[i]->dtype != in[0]->dtype) {
            rt_err_set(e, "operands have different dtypes, %s and %s; agc does not "
                          "promote implicitly, so convert one with ag_cast",
                       dn(in[0]->dtype), dn(in[i]->dtype));
            return false;
        }
    }
    return true;
}

static bool require(bool ok, ag_dtype dt, const char *what, rt_err *e)
{
    if (!ok)
        rt_err_set(e, "expects %s, got a %s tensor", what, dn(dt));
    return ok;
}

/* i8 exists for quantized tensors: its elementwise arithmetic wraps like
 * i32's, but sums, products and ranges of int8 would overflow at once, so
 * the ops that accumulate refuse it and name the ops made for it. */
static bool not_i8(ag_dtype dt, rt_err *e)
{
    if (dt != AG_I8)
        return true;
    rt_err_set(e, "does not take i8 tensors (int8 sums overflow); use ag_qmatmul or "
                  "ag_qconv2d for int8 products, or ag_cast to i32 first");
    return false;
}

RT_DTYPE_RULE(rt_dt_literal)
{
    (void)in, (void)n, (void)e;
    *out = a->literal->dtype;
    return true;
}

RT_DTYPE_RULE(rt_dt_attr)
{
    (void)in, (void)n;
    if ((unsigned)a->dtype >= AG_NUM_DTYPES) {
        rt_err_set(e, "invalid dtype %d", (int)a->dtype);
        return false;
    }
    *out = a->dtype;
    return true;
}

RT_DTYPE_RULE(rt_dt_attr_numeric)
{
    if (!rt_dt_attr(a, in, n, out, e))
        return false;
    return require(rt_is_numeric(*out), *out, "a numeric dtype", e) && not_i8(*out, e);
}

RT_DTYPE_RULE(rt_dt_any)
{
    (void)a, (void)n, (void)e;
    *out = in[0]->dtype;
    return true;
}

RT_DTYPE_RULE(rt_dt_same_any)
{
    (void)a;
    if (!same_dtype(in, n, e))
        return false;
    *out = in[0]->dtype;
    return true;
}

RT_DTYPE_RULE(rt_dt_same_numeric)
{
    (void)a;
    if (!same_dtype(in, n, e) ||
        !require(rt_is_numeric(in[0]->dtype), in[0]->dtype, "numeric tensors", e))
        return false;
    *out = in[0]->dtype;
    return true;
}

RT_DTYPE_RULE(rt_dt_same_numeric_wide)
{
    return rt_dt_same_numeric(a, in, n, out, e) && not_i8(*out, e);
}

RT_DTYPE_RULE(rt_dt_same_float)
{
    (void)a;
    if (!same_dtype(in, n, e) ||
        !require(rt_is_float(in[0]->dtype), in[0]->dtype,
                 "a float tensor (f32, f64 or bf16); use ag_cast for integers", e))
        return false;
    *out = in[0]->dtype;
    return true;
}

/* equal / not_equal also compare booleans. */
RT_DTYPE_RULE(rt_dt_compare_eq)
{
    (void)a;
    if (!same_dtype(in, n, e))
        return false;
    *out = AG_BOOL;
    return true;
}

RT_DTYPE_RULE(rt_dt_compare)
{
    (void)a;
    if (!same_dtype(in, n, e) ||
        !require(rt_is_numeric(in[0]->dtype), in[0]->dtype, "numeric tensors", e))
        return false;
    *out = AG_BOOL;
    return true;
}

RT_DTYPE_RULE(rt_dt_bool)
{
    (void)a;
    for (int i = 0; i < n; i++)
        if (!require(in[i]->dtype == AG_BOOL, in[i]->dtype, "bool tensors", e))
            return false;
    *out = AG_BOOL;
    return true;
}

RT_DTYPE_RULE(rt_dt_where)
{
    (void)a, (void)n;
    if (!require(in[0]->dtype == AG_BOOL, in[0]->dtype, "a bool condition", e) ||
        !same_dtype(in + 1, 2, e))
        return false;
    *out = in[1]->dtype;
    return true;
}

RT_DTYPE_RULE(rt_dt_cast)
{
    (void)n;
    if (!rt_dt_attr(a, in, 1, out, e))
        return false;
    return require(in[0]->dtype != RT_LIST, in[0]->dtype, "a tensor", e);
}

RT_DTYPE_RULE(rt_dt_argmax)
{
    (void)a, (void)n;
    if (!require(rt_is_numeric(in[0]->dtype), in[0]->dtype, "a numeric tensor", e) ||
        !not_i8(in[0]->dtype, e))
        return false;
    *out = AG_I64;
    return true;
}

RT_DTYPE_RULE(rt_dt_gather)
{
    (void)a, (void)n;
    if (!require(rt_is_index(in[1]->dtype), in[1]->dtype, "i32 or i64 indices", e))
        return false;
    *out = in[0]->dtype;
    return true;
}

RT_DTYPE_RULE(rt_dt_segment_sum)
{
    (void)a, (void)n;
    if (!require(rt_is_numeric(in[0]->dtype), in[0]->dtype, "numeric data", e) ||
        !not_i8(in[0]->dtype, e) ||
        !require(rt_is_index(in[1]->dtype), in[1]->dtype, "i32 or i64 indices", e))
        return false;
    *out = in[0]->dtype;
    return true;
}

/* The quantized ops (kernels/quant.c): exact dtypes, no promotion. The
 * operands are named as docs/dsl.md names them. */
static bool quant_operands(rt_value *const *in, const ag_dtype *want, const char *const *what,
                           ag_dtype first_also, rt_err *e)
{
    for (int i = 0; i < 3; i++) {
        if (in[i]->dtype != want[i] && !(i == 0 && in[0]->dtype == first_also)) {
            rt_err_set(e, "expects %s, got a %s tensor", what[i], dn(in[i]->dtype));
            return false;
        }
    }
    return true;
}

RT_DTYPE_RULE(rt_dt_quantize)
{
    (void)a, (void)n;
    static const ag_dtype want[3] = {AG_F32, AG_F32, AG_I32};
    static const char *const what[3] = {"an f32 tensor to quantize", "an f32 scale",
                                        "an i32 zero point"};
    *out = AG_I8;
    return quant_operands(in, want, what, AG_NUM_DTYPES, e);
}

/* dequantize takes i8 values, or i32 sums (qmatmul's) with their scale. */
RT_DTYPE_RULE(rt_dt_dequantize)
{
    (void)a, (void)n;
    static const ag_dtype want[3] = {AG_I8, AG_F32, AG_I32};
    static const char *const what[3] = {"quantized values (i8 or i32)", "an f32 scale",
                                        "an i32 zero point"};
    *out = AG_F32;
    return quant_operands(in, want, what, AG_I32, e);
}

RT_DTYPE_RULE(rt_dt_qproduct)
{
    (void)a, (void)n;
    static const ag_dtype want[3] = {AG_I8, AG_I8, AG_I32};
    static const char *const what[3] = {"i8 activations (ag_quantize makes them)",
                                        "i8 weights", "an i32 zero point"};
    *out = AG_I32;
    return quant_operands(in, want, what, AG_NUM_DTYPES, e);
}

RT_DTYPE_RULE(rt_dt_requantize)
{
    (void)a, (void)n;
    static const ag_dtype want[3] = {AG_I32, AG_F32, AG_I32};
    static const char *const what[3] = {"i32 sums (qmatmul's or qconv2d's)",
                                        "an f32 multiplier", "an i32 zero point"};
    *out = AG_I8;
    return quant_operands(in, want, what, AG_NUM_DTYPES, e);
}

RT_DTYPE_RULE(rt_dt_i64)
{
    (void)a, (void)in, (void)n, (void)e;
    *out = AG_I64;
    return true;
}

RT_DTYPE_RULE(rt_dt_i32)
{
    (void)a, (void)in, (void)n, (void)e;
    *out = AG_I32;
    return true;
}

RT_DTYPE_RULE(rt_dt_one_hot)
{
    (void)a, (void)n;
    if (!require(rt_is_index(in[0]->dtype), in[0]->dtype, "i32 or i64 indices", e))
        return false;
    *out = AG_F32;
    return true;
}

/* print and assert produce a bool "token" that orders them in graphs. */
RT_DTYPE_RULE(rt_dt_token)
{
    (void)a, (void)in, (void)n, (void)e;
    *out = AG_BOOL;
    return true;
}

RT_DTYPE_RULE(rt_dt_assert)
{
    (void)a, (void)n;
    if (!require(in[0]->dtype == AG_BOOL, in[0]->dtype, "a bool condition", e))
        return false;
    *out = AG_BOOL;
    return true;
}

RT_DTYPE_RULE(rt_dt_variable)
{
    (void)in, (void)n, (void)e;
    *out = ((const rt_variable *)a->ref)->value->dtype;
    return true;
}

RT_DTYPE_RULE(rt_dt_assign)
{
    (void)n;
    ag_dtype want = ((const rt_variable *)a->ref)->value->dtype;
    if (in[0]->dtype != want) {
        rt_err_set(e, "the variable holds %s but the value is %s; convert it with "
                      "ag_cast", dn(want), dn(in[0]->dtype));
        return false;
    }
    *out = want;
    return true;
}

RT_DTYPE_RULE(rt_dt_list)
{
    (void)in, (void)n;
    if ((unsigned)a->dtype >= AG_NUM_DTYPES) {
        rt_err_set(e, "invalid element dtype %d", (int)a->dtype);
        return false;
    }
    *out = RT_LIST;
    return true;
}

/* ta_write(list, index, value) */
RT_DTYPE_RULE(rt_dt_ta_write)
{
    (void)a, (void)n;
    if (!require(in[0]->dtype == RT_LIST, in[0]->dtype, "a tensor array", e) ||
        !require(rt_is_index(in[1]->dtype), in[1]->dtype, "an integer index", e))
        return false;
    if (in[2]->dtype != in[0]->elem_dtype) {
        rt_err_set(e, "the tensor array holds %s but the value written is %s; "
                      "convert it with ag_cast", dn(in[0]->elem_dtype), dn(in[2]->dtype));
        return false;
    }
    *out = RT_LIST;
    return true;
}

RT_DTYPE_RULE(rt_dt_ta_elem)
{
    (void)a;
    if (!require(in[0]->dtype == RT_LIST, in[0]->dtype, "a tensor array", e))
        return false;
    if (n > 1 && !require(rt_is_index(in[1]->dtype), in[1]->dtype, "an integer index", e))
        return false;
    *out = in[0]->elem_dtype;
    return true;
}
