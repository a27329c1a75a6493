/*
 * check.c - ag_check_gradients: a function's tape gradients against
 * central finite differences in f64 (as tf.test.compute_gradient).
 *
 * The scalar compared is sum(fn(inputs) * w), with fixed weights w in
 * [0.5, 1.5) that differ element to element, so that a gradient wrong at
 * one element cannot cancel another's. Finite differences perturb one
 * element of one float input at a time, by h = 1e-6 * max(1, |x|), and
 * evaluate fn on f64 copies of every input (integer and bool inputs are
 * passed unchanged): truncation and rounding then stay near 1e-10, so
 * what is compared is the gradient's own precision.
 */
#include "../core/rt.h"

#include <math.h>
#include <stdlib.h>

/* The weights: a fixed sequence, the same for every call. */
static ag_tensor weights_like(ag_loc loc, ag_tensor y, ag_dtype dt)
{
    int64_t n = ag_num_elements(y);
    double *w = rt_xmalloc((size_t)(n > 0 ? n : 1) * sizeof *w);
    uint32_t s = 12345u;
    for (int64_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        w[i] = 0.5 + (double)(s >> 8) / (double)(1u << 24);
    }
    ag_tensor t = ag_from_data_at(loc, AG_F64, ag_shape_get(y), w);
    free(w);
    return dt == AG_F64 ? t : ag_cast_at(loc, t, dt);
}

static ag_tensor weighted_sum(ag_loc loc, ag_tensor y)
{
    ag_tensor w = weights_like(loc, y, ag_dtype_of(y));
    return ag_reduce_sum_at(loc, ag_mul_at(loc, AG_OPERAND(y), AG_OPERAND(w)), AG_ALL_AXES,
                            false);
}

static bool is_float(ag_tensor t)
{
    ag_dtype dt = ag_dtype_of(t);
    return dt == AG_F32 || dt == AG_F64 || dt == AG_BF16;
}

/* The tape's gradients of the weighted sum, into grads[] (null: none). */
static bool analytic(ag_loc loc, ag_check_fn fn, void *ctx, int n, const ag_tensor *in,
                     ag_tensor *grads)
{
    ag_tape t = ag_tape_new_at(loc);
    ag_tensor *src = rt_xcalloc((size_t)n, sizeof *src), *got = rt_xcalloc((size_t)n, sizeof *got);
    int n_src = 0;
    for (int i = 0; i < n; i++)
        if (is_float(in[i])) {
            ag_tape_watch_at(loc, t, in[i]);
            src[n_src++] = in[i];
        }
    ag_tensor y = fn(ctx, in);
    bool ok = !ag_is_error(y) &&
              ag_tape_gradients_at(loc, t, weighted_sum(loc, y), n_src, src, got);
    for (int i = 0, k = 0; ok && i < n; i++)
        grads[i] = is_float(in[i]) ? got[k++] : (ag_tensor){0, 0};
    free(src);
    free(got);
    ag_tape_free_at(loc, t);
    return ok;
}

/* The weighted sum at f64 copies of the inputs (x64 already made). */
static bool evaluate(ag_loc loc, ag_check_fn fn, void *ctx, const ag_tensor *x64, double *out)
{
    ag_scope_push();
    ag_tensor y = fn(ctx, x64);
    bool ok = !ag_is_error(y);
    if (ok && ag_dtype_of(y) != AG_F64)
        y = ag_cast_at(loc, y, AG_F64);
    if (ok)
        *out = ag_item_f64_at(loc, weighted_sum(loc, y));
    ag_scope_pop_at(loc);
    return ok;
}

/* A new f64 tensor holding t's values: finite differences write into it. */
static ag_tensor f64_copy(ag_loc loc, ag_tensor t)
{
    ag_tensor c = ag_cast_at(loc, t, AG_F64);
    return ag_is_error(c) ? c : ag_from_data_at(loc, AG_F64, ag_shape_get(c), ag_data_at(loc, c));
}

/* d/dx[j] of the weighted sum by central differences, x64[i] perturbed
 * (its data is this file's own copy: f64_copy). */
static bool numeric(ag_loc loc, ag_check_fn fn, void *ctx, ag_tensor *x64, int i, int64_t j,
                    double *d)
{
    double *data = (double *)ag_data_at(loc, x64[i]);
    double x = data[j], h = 1e-6 * fmax(1.0, fabs(x)), up = 0, down = 0;
    data[j] = x + h;
    bool ok = evaluate(loc, fn, ctx, x64, &up);
    data[j] = x - h;
    ok = ok && evaluate(loc, fn, ctx, x64, &down);
    data[j] = x;
    *d = ok ? (up - down) / (2 * h) : 0.0;
    return ok;
}

/* Compares input i's gradient element by element, keeping the worst. */
static bool compare_input(ag_loc loc, ag_check_fn fn, void *ctx, ag_tensor *x64, int i,
                          ag_tensor g, ag_gradient_check *r)
{
    int64_t n = ag_num_elements(x64[i]);
    for (int64_t j = 0; j < n; j++) {
        double fd;
        if (!numeric(loc, fn, ctx, x64, i, j, &fd))
            return false;
        double a = ag_is_null(g) ? 0.0 : ag_get_f64_at(loc, g, j);
        double err = fabs(a - fd) / (1.0 + fabs(fd));
        if (!(err <= r->max_error)) { /* NaN counts as the worst */
            *r = (ag_gradient_check){err, i, j, a, fd};
            if (isnan(err))
                r->max_error = INFINITY;
        }
    }
    return true;
}

bool ag_check_gradients_at(ag_loc loc, ag_check_fn fn, void *ctx, int n,
                           const ag_tensor *inputs, ag_gradient_check *result)
{
    if (!fn || n < 1 || !inputs || !result) {
        rt_report(loc, "ag_check_gradients: %s", !fn ? "fn is NULL"
                       : n < 1 ? "it needs at least one input" : "inputs or result is NULL");
        return false;
    }
    *result = (ag_gradient_check){0.0, -1, -1, 0.0, 0.0};
    ag_scope_push();
    ag_tensor *grads = rt_xcalloc((size_t)n, sizeof *grads);
    ag_tensor *x64 = rt_xcalloc((size_t)n, sizeof *x64);
    bool ok = analytic(loc, fn, ctx, n, inputs, grads);
    for (int i = 0; ok && i < n; i++)
        x64[i] = is_float(inputs[i]) ? f64_copy(loc, inputs[i]) : inputs[i];
    for (int i = 0; ok && i < n; i++)
        if (is_float(inputs[i]))
            ok = compare_input(loc, fn, ctx, x64, i, grads[i], result);
    free(grads);
    free(x64);
    ag_scope_pop_at(loc);
    return ok;
}
