/*
 * tensor.c - making tensors, reading their values, ag_bool, ag_shutdown.
 *
 * Creation goes through the op table too (const, fill, eye, range,
 * random_uniform), so that inside a trace it becomes graph nodes.
 */
#include "../core/rt.h"

#include <math.h>
#include <string.h>

static bool valid_dtype(ag_loc loc, const char *fn, ag_dtype dt)
{
    if ((unsigned)dt < AG_NUM_DTYPES)
        return true;
    rt_report(loc, "%s: invalid dtype %d", fn, (int)dt);
    return false;
}

/* A shape a concrete tensor of dtype dt can have: known dims, and a size
 * that fits (ag_from_data makes its value before any op rule sees it). */
static bool valid_shape(ag_loc loc, const char *fn, const ag_shape *s, ag_dtype dt)
{
    char buf[160];
    rt_err e;
    if (s->rank < 0 || s->rank > AG_MAX_RANK) {
        rt_report(loc, "%s: rank %d is out of range (0..%d)", fn, s->rank, AG_MAX_RANK);
        return false;
    }
    for (int i = 0; i < s->rank; i++) {
        if (s->dims[i] < 0) {
            rt_report(loc, "%s: shape %s has a negative dim; concrete tensors need "
                           "known dims", fn, rt_shape_str(s, buf, sizeof buf));
            return false;
        }
    }
    if (!rt_shape_size_ok(s, dt, &e)) {
        rt_report(loc, "%s: %s", fn, e.msg);
        return false;
    }
    return true;
}

/* Wraps a freshly made literal as a const op, so traces record it. */
static ag_tensor from_literal(ag_loc loc, rt_value *lit)
{
    rt_attrs a = {.literal = lit};
    rt_value *v = rt_apply(loc, RT_OP_CONST, &a, NULL, 0);
    rt_value_free(lit);
    return v ? rt_handle_new(v) : rt_error_tensor();
}

ag_tensor ag_scalar_at(ag_loc loc, ag_dtype dt, double v)
{
    if (!valid_dtype(loc, "ag_scalar", dt))
        return rt_error_tensor();
    return from_literal(loc, rt_value_scalar(dt, v));
}

ag_tensor ag_scalar_i64_at(ag_loc loc, int64_t v)
{
    rt_value *lit = rt_value_new(AG_I64, &AG_SCALAR);
    *(int64_t *)lit->data = v;
    return from_literal(loc, lit);
}

ag_tensor ag_from_data_at(ag_loc loc, ag_dtype dt, ag_shape s, const void *data)
{
    if (!valid_dtype(loc, "ag_from_data", dt) || !valid_shape(loc, "ag_from_data", &s, dt))
        return rt_error_tensor();
    rt_err e;
    rt_value *lit = rt_value_try_new(dt, &s, &e);
    if (!lit) {
        rt_report(loc, "ag_from_data: %s", e.msg);
        return rt_error_tensor();
    }
    size_t bytes = rt_value_bytes(lit);
    if (!data && bytes > 0) {
        rt_value_free(lit);
        rt_report(loc, "ag_from_data: data is NULL");
        return rt_error_tensor();
    }
    if (bytes > 0)
        memcpy(lit->data, data, bytes);
    if (dt == AG_BOOL) /* normalize any non-zero byte to 1 */
        for (int64_t i = 0; i < lit->numel; i++)
            ((uint8_t *)lit->data)[i] = ((uint8_t *)lit->data)[i] != 0;
    return from_literal(loc, lit);
}

ag_tensor ag_fill_at(ag_loc loc, ag_dtype dt, ag_shape s, double v)
{
    if (!valid_dtype(loc, "ag_fill", dt) || !valid_shape(loc, "ag_fill", &s, dt))
        return rt_error_tensor();
    rt_attrs a = {.dtype = dt, .shape = s, .value = v};
    return rt_call(loc, RT_OP_FILL, &a, NULL, 0);
}

ag_tensor ag_fill_like_at(ag_loc loc, ag_tensor t, double v)
{
    rt_attrs a = {.value = v};
    return rt_call(loc, RT_OP_FILL_LIKE, &a, &t, 1);
}

ag_tensor ag_eye_at(ag_loc loc, int64_t n, ag_dtype dt)
{
    if (!valid_dtype(loc, "ag_eye", dt))
        return rt_error_tensor();
    if (n < 0) {
        rt_report(loc, "ag_eye: size %lld is negative", (long long)n);
        return rt_error_tensor();
    }
    rt_attrs a = {.n = n, .dtype = dt};
    return rt_call(loc, RT_OP_EYE, &a, NULL, 0);
}

ag_tensor ag_range_at(ag_loc loc, ag_operand start, ag_operand limit, ag_operand delta)
{
    ag_operand ops[3] = {start, limit, delta};
    bool any_tensor = false, any_float = false;
    for (int i = 0; i < 3; i++) {
        any_tensor |= ops[i].kind == AG_OPERAND_TENSOR;
        any_float |= ops[i].kind == AG_OPERAND_FLOAT;
    }
    /* Only C numbers: one float among them makes the range f32. */
    if (!any_tensor && any_float)
        for (int i = 0; i < 3; i++)
            ops[i].kind = AG_OPERAND_FLOAT;
    return rt_call_operands(loc, RT_OP_RANGE, NULL, ops, 3);
}

ag_tensor ag_random_uniform_at(ag_loc loc, ag_shape s, double lo, double hi,
                               ag_dtype dt, uint64_t seed)
{
    if (!valid_dtype(loc, "ag_random_uniform", dt) ||
        !valid_shape(loc, "ag_random_uniform", &s, dt))
        return rt_error_tensor();
    if (!(lo < hi)) {
        rt_report(loc, "ag_random_uniform: the range [%g, %g) is empty", lo, hi);
        return rt_error_tensor();
    }
    rt_attrs a = {.shape = s, .lo = lo, .hi = hi, .dtype = dt, .seed = seed};
    return rt_call(loc, RT_OP_RANDOM_UNIFORM, &a, NULL, 0);
}

/* ------------------------------------------------------ reading values */

static const ag_loc nowhere = {NULL, 0};

ag_dtype ag_dtype_of(ag_tensor t)
{
    rt_value *v = rt_handle_get(nowhere, t);
    return v ? v->dtype : AG_F32;
}

ag_shape ag_shape_get(ag_tensor t)
{
    rt_value *v = rt_handle_get(nowhere, t);
    ag_shape none = {.rank = -1};
    return v ? v->shape : none;
}

int ag_rank(ag_tensor t)
{
    rt_value *v = rt_handle_get(nowhere, t);
    return v ? v->shape.rank : -1;
}

int64_t ag_num_elements(ag_tensor t)
{
    rt_value *v = rt_handle_get(nowhere, t);
    return v ? v->numel : 0;
}

/* The concrete value behind t, or NULL after reporting why not. */
static rt_value *concrete(ag_loc loc, const char *fn, ag_tensor t)
{
    rt_value *v = rt_handle_get(loc, t);
    if (!v)
        return NULL;
    if (v->kind == RT_SYMBOLIC) {
        rt_report(loc, "%s: the tensor is symbolic (this code is being traced into a "
                       "graph), so it has no value yet; use ag_print to see it at run "
                       "time", fn);
        return NULL;
    }
    if (v->dtype == RT_LIST) {
        rt_report(loc, "%s: a tensor array has no data; use ag_tensor_array_stack", fn);
        return NULL;
    }
    return v;
}

const void *ag_data_at(ag_loc loc, ag_tensor t)
{
    rt_value *v = concrete(loc, "ag_data", t);
    return v ? v->data : NULL;
}

static rt_value *element(ag_loc loc, const char *fn, ag_tensor t, int64_t i)
{
    rt_value *v = concrete(loc, fn, t);
    if (v && (i < 0 || i >= v->numel)) {
        rt_report(loc, "%s: index %lld is out of range for a tensor of %lld elements",
                  fn, (long long)i, (long long)v->numel);
        return NULL;
    }
    return v;
}

float ag_get_f32_at(ag_loc loc, ag_tensor t, int64_t i)
{
    rt_value *v = element(loc, "ag_get_f32", t, i);
    return v ? (float)rt_load_f64(v->dtype, v->data, i) : NAN;
}

double ag_get_f64_at(ag_loc loc, ag_tensor t, int64_t i)
{
    rt_value *v = element(loc, "ag_get_f64", t, i);
    return v ? rt_load_f64(v->dtype, v->data, i) : NAN;
}

int32_t ag_get_i32_at(ag_loc loc, ag_tensor t, int64_t i)
{
    rt_value *v = element(loc, "ag_get_i32", t, i);
    return v ? (int32_t)rt_load_i64(v->dtype, v->data, i) : 0;
}

int64_t ag_get_i64_at(ag_loc loc, ag_tensor t, int64_t i)
{
    rt_value *v = element(loc, "ag_get_i64", t, i);
    return v ? rt_load_i64(v->dtype, v->data, i) : 0;
}

static rt_value *single(ag_loc loc, const char *fn, ag_tensor t)
{
    char buf[160];
    rt_value *v = concrete(loc, fn, t);
    if (v && v->numel != 1) {
        rt_report(loc, "%s: needs a scalar, got a tensor of shape %s; reduce it first "
                       "(ag_reduce_any or ag_reduce_all for bools, ag_reduce_sum for "
                       "numbers)",
                  fn, rt_shape_str(&v->shape, buf, sizeof buf));
        return NULL;
    }
    return v;
}

double ag_item_f64_at(ag_loc loc, ag_tensor t)
{
    rt_value *v = single(loc, "ag_item_f64", t);
    return v ? rt_load_f64(v->dtype, v->data, 0) : NAN;
}

/* ag_bool on a symbolic tensor means control flow that agc did not stage:
 * there is no value to branch on while tracing. */
bool ag_bool_at(ag_loc loc, ag_tensor t)
{
    rt_value *v = rt_handle_get(loc, t);
    if (v && v->kind == RT_SYMBOLIC) {
        rt_report(loc, "ag_bool: this condition depends on a tensor while the function "
                       "is being traced, but it was not staged; make the enclosing "
                       "function an AG_FUNCTION converted by agc, or compute the "
                       "condition outside the traced code");
        return false;
    }
    v = single(loc, "ag_bool", t);
    return v && rt_load_f64(v->dtype, v->data, 0) != 0.0;
}

void ag_shutdown(void)
{
    rt_run_shutdown_hooks();
    rt_state_shutdown();
    rt_handles_shutdown();
}
