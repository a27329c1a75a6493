/*
 * dispatch.c - applying an op: check, infer, then run or record.
 *
 * Every public op funnels into rt_apply, so eager execution, tracing and
 * (later) the reference executor share one set of dtype and shape rules
 * and report errors the same way.
 */
#include "rt.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

_Thread_local rt_trace_hook_fn rt_trace_hook;
_Thread_local const void *rt_trace_frame;
rt_loop_options_fn _Atomic rt_loop_options_hook;

void ag_set_loop_options_at(ag_loc loc, const ag_tensor *var, const char *var_text,
                            ag_shape invariant)
{
    if (!var) {
        rt_report(loc, "ag_set_loop_options: the variable pointer is NULL");
        return;
    }
    if (invariant.rank < 0 || invariant.rank > AG_MAX_RANK) {
        rt_report(loc, "ag_set_loop_options: rank %d is out of range", invariant.rank);
        return;
    }
    rt_loop_options_fn hook = rt_loop_options_hook;
    if (hook)
        hook(loc, var, var_text ? var_text : "", invariant);
}
_Thread_local rt_concretize_fn rt_trace_concretize;

bool rt_infer(rt_op op, const rt_attrs *a, rt_value *const *in, int n,
              ag_dtype *dt, ag_shape *shape, rt_err *e)
{
    const rt_op_info *info = &rt_ops[op];
    if (info->arity >= 0 && n != info->arity) {
        rt_err_set(e, "takes %d operand%s, got %d", info->arity,
                   info->arity == 1 ? "" : "s", n);
        return false;
    }
    if (info->arity < 0 && n < 1 && op != RT_OP_PRINT) {
        rt_err_set(e, "needs at least one operand");
        return false;
    }
    /* Checked here, once for every op, rather than in each shape rule:
     * broadcasting, reshape, concat, one_hot, eye, fill... can all make a
     * shape whose size overflows, and no kernel could then size its data. */
    return info->dtype_rule(a, in, n, dt, e) && info->shape_rule(a, in, n, shape, e) &&
           rt_shape_size_ok(shape, *dt, e);
}

static bool any_symbolic(rt_value *const *in, int n)
{
    for (int i = 0; i < n; i++)
        if (in[i]->kind == RT_SYMBOLIC)
            return true;
    return false;
}

/* rt_infer, reporting a failure at loc under the op's user-facing name. */
static bool infer_or_report(ag_loc loc, rt_op op, const rt_attrs *a, rt_value *const *in,
                            int n, ag_dtype *dt, ag_shape *shape)
{
    rt_err e;
    if (rt_infer(op, a, in, n, dt, shape, &e))
        return true;
    rt_report(loc, "%s: %s", rt_op_public_name(op), e.msg);
    return false;
}

static const rt_attrs no_attrs;

rt_value *rt_apply_eager(ag_loc loc, rt_op op, const rt_attrs *a, rt_value *const *in,
                         int n)
{
    const rt_op_info *info = &rt_ops[op];
    ag_dtype dt;
    ag_shape shape;
    rt_err e;
    if (!a)
        a = &no_attrs;
    if (!infer_or_report(loc, op, a, in, n, &dt, &shape))
        return NULL;
    if (any_symbolic(in, n)) {
        rt_report(loc, "%s: a symbolic tensor was used outside the function "
                       "trace that made it", rt_op_public_name(op));
        return NULL;
    }
    if (info->flags & RT_F_ALIAS)
        return rt_value_alias(in[0], &shape);
    rt_value *out = rt_value_try_new(dt, &shape, &e);
    if (!out) {
        rt_report(loc, "%s: %s", rt_op_public_name(op), e.msg);
        return NULL;
    }
    if (!info->kernel(a, in, n, out, &e)) {
        rt_value_free(out);
        rt_report(loc, "%s: %s", rt_op_public_name(op), e.msg);
        return NULL;
    }
    return out;
}

static rt_value *apply_or_trace(ag_loc loc, rt_op op, const rt_attrs *a,
                                rt_value *const *in, int n)
{
    if (!rt_trace_hook)
        return rt_apply_eager(loc, op, a, in, n);
    ag_dtype dt;
    ag_shape shape;
    if (!infer_or_report(loc, op, a, in, n, &dt, &shape))
        return NULL;
    return rt_trace_hook(loc, op, a, in, n, dt, &shape);
}

rt_value *rt_apply(ag_loc loc, rt_op op, const rt_attrs *a, rt_value *const *in, int n)
{
    if (!a)
        a = &no_attrs;
    rt_value *out = apply_or_trace(loc, op, a, in, n);
    /* Tapes see the public ops, eager or traced, never the executors'
     * (they call rt_apply_eager): a graph a tape records is one op. */
    if (out && rt_tapes_recording)
        rt_tape_record(loc, op, a, in, n, out);
    return out;
}

/* Resolves handles to values; false (already reported) if one is bad. */
static bool resolve(ag_loc loc, const ag_tensor *ts, int n, rt_value **out)
{
    for (int i = 0; i < n; i++) {
        out[i] = rt_handle_get(loc, ts[i]);
        if (!out[i])
            return false;
        if (out[i]->dtype == RT_LIST) {
            rt_report(loc, "a tensor array was passed where a tensor is expected");
            return false;
        }
    }
    return true;
}

static ag_tensor wrap(rt_value *v)
{
    return v ? rt_handle_new(v) : rt_error_tensor();
}

ag_tensor rt_call(ag_loc loc, rt_op op, const rt_attrs *a, const ag_tensor *in, int n)
{
    rt_value *stack_vals[8];
    rt_value **vals = n <= 8 ? stack_vals : rt_xmalloc((size_t)n * sizeof *vals);
    ag_tensor out = rt_error_tensor();
    if (resolve(loc, in, n, vals))
        out = wrap(rt_apply(loc, op, a, vals, n));
    if (vals != stack_vals)
        free(vals);
    return out;
}

/* ------------------------------------------------------- weak operands */

/* Makes slot i of out a scalar of dtype dt holding the C number o. */
static rt_value *weak_scalar(rt_operand_values *out, int i, const ag_operand *o, ag_dtype dt)
{
    rt_value *v = &out->scalar[i];
    memset(v, 0, sizeof *v);
    v->kind = RT_CONCRETE;
    v->dtype = dt;
    v->shape = AG_SCALAR;
    v->numel = 1;
    v->data = &out->data[i];
    if (rt_is_int(dt) && o->kind != AG_OPERAND_FLOAT)
        rt_store_i64(dt, v->data, 0, o->i);
    else
        rt_store_f64(dt, v->data, 0, o->f);
    return v;
}

static ag_dtype default_dtype(const ag_operand *o)
{
    switch (o->kind) {
    case AG_OPERAND_FLOAT: return AG_F32;
    case AG_OPERAND_BOOL: return AG_BOOL;
    default: return AG_I32;
    }
}

/* A C number converts to dt only if it is representable there exactly
 * (TensorFlow refuses `int_tensor + 2.5` the same way). */
static bool weak_fits(const ag_operand *o, ag_dtype dt)
{
    switch (dt) {
    case AG_I32: return o->kind != AG_OPERAND_FLOAT ? o->i >= INT32_MIN && o->i <= INT32_MAX
                                                    : false;
    case AG_I64: return o->kind != AG_OPERAND_FLOAT;
    case AG_I8: return o->kind != AG_OPERAND_FLOAT && o->i >= INT8_MIN && o->i <= INT8_MAX;
    case AG_BOOL: return o->kind == AG_OPERAND_BOOL || (o->kind == AG_OPERAND_INT &&
                                                         (o->i == 0 || o->i == 1));
    default: return true; /* any C number converts to a float dtype */
    }
}

static void describe_operand(const ag_operand *o, char *buf, size_t n)
{
    if (o->kind == AG_OPERAND_FLOAT)
        snprintf(buf, n, "%g", o->f);
    else
        snprintf(buf, n, "%lld", (long long)o->i);
}

/* The dtype the C numbers take: the first tensor operand's. */
static bool tensor_operands(ag_loc loc, const char *opname, const ag_operand *ops, int n,
                            rt_operand_values *out, ag_dtype *dt)
{
    *dt = AG_NUM_DTYPES;
    for (int i = 0; i < n; i++) {
        out->v[i] = NULL;
        if (ops[i].kind != AG_OPERAND_TENSOR)
            continue;
        out->v[i] = rt_handle_get(loc, ops[i].tensor);
        if (!out->v[i])
            return false;
        if (out->v[i]->dtype == RT_LIST) {
            rt_report(loc, "%s: a tensor array was passed where a tensor is expected",
                      opname);
            return false;
        }
        if (*dt == AG_NUM_DTYPES)
            *dt = out->v[i]->dtype;
    }
    return true;
}

bool rt_operands_to_values(ag_loc loc, const char *opname, const ag_operand *ops, int n,
                           rt_operand_values *out)
{
    ag_dtype dt;
    if (n > RT_MAX_OPERANDS || !tensor_operands(loc, opname, ops, n, out, &dt))
        return false;
    for (int i = 0; i < n; i++) {
        if (out->v[i])
            continue;
        ag_dtype want = dt != AG_NUM_DTYPES ? dt : default_dtype(&ops[i]);
        if (!weak_fits(&ops[i], want)) {
            char num[64];
            describe_operand(&ops[i], num, sizeof num);
            rt_report(loc, "%s: the C number %s cannot be converted to %s without "
                           "changing its value; cast the tensor or write the "
                           "number as %s", opname, num, ag_dtype_name(want),
                      ag_dtype_name(want));
            return false;
        }
        out->v[i] = weak_scalar(out, i, &ops[i], want);
    }
    return true;
}

ag_tensor rt_call_operands(ag_loc loc, rt_op op, const rt_attrs *a,
                           const ag_operand *ops, int n)
{
    rt_operand_values vals;
    char opname[64];
    snprintf(opname, sizeof opname, "%s", rt_op_public_name(op));
    if (!rt_operands_to_values(loc, opname, ops, n, &vals))
        return rt_error_tensor();
    return wrap(rt_apply(loc, op, a, vals.v, n));
}

ag_tensor rt_call_binary(ag_loc loc, rt_op op, ag_operand a, ag_operand b)
{
    ag_operand ops[2] = {a, b};
    return rt_call_operands(loc, op, NULL, ops, 2);
}
