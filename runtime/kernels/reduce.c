/*
 * reduce.c - reductions (sum, mean, max, min, prod, any, all), argmax and
 * softmax.
 *
 * Every kernel views its contiguous input as [outer, red, inner]: `red` is
 * the length of the reduced axis, `outer` the product of the dims before it
 * and `inner` the product of the dims after it (AG_ALL_AXES is
 * [1, numel, 1]). The result is [outer, inner] in row-major order, which is
 * the layout of both the keepdims and the squeezed output shape, so no
 * kernel ever divides an element index to find its coordinates.
 *
 * Numerics chosen here:
 *  - f32 sum, mean and prod accumulate in double and round once at the end;
 *    f64 accumulates in double; bf16 accumulates in f32 and rounds to bf16
 *    once. A contiguous (inner == 1) float reduction uses four interleaved
 *    accumulators, so its rounding differs from a strictly sequential sum
 *    in the last bits, deterministically.
 *  - i32/i64 sum and prod wrap modulo 2^32 / 2^64 (TensorFlow wraps too).
 *    Integer mean truncates toward zero like TF's integer mean; the i32
 *    mean sums in 64 bits so it is exact, the i64 mean's sum wraps as TF's.
 *  - Over an empty axis: sum 0, prod 1, max -inf / min +inf for floats and
 *    the dtype's lowest / highest value for integers, any false and all
 *    true (TF's identities), and float mean NaN (0/0, as TF). An integer mean over an empty axis has no
 *    value, so it is a kernel error.
 *  - reduce_max / reduce_min propagate NaN: any NaN in a slice gives NaN.
 *    (TF's CPU kernels are not consistent about this; NumPy's max is.)
 *  - argmax returns the first index of the maximum; NaN counts as larger
 *    than every number and the first NaN wins, as in NumPy.
 *  - softmax subtracts the slice's maximum before exponentiating, so large
 *    inputs stay finite; bf16 is computed in f32 and rounded once.
 */
#include "../core/op_decls.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ shape rules */

/* The [outer, red, inner] view of a reduction. */
typedef struct layout {
    int64_t outer, red, inner;
} layout;

/* Resolves a possibly negative axis against s's rank, or explains why not. */
static bool resolve_axis(int64_t axis, const ag_shape *s, int *out, rt_err *e)
{
    if (rt_norm_axis(axis, s->rank, out))
        return true;
    if (s->rank == 0)
        rt_err_set(e, "axis %lld is out of range for a rank-0 tensor (a scalar has "
                      "no axes); use AG_ALL_AXES", (long long)axis);
    else
        rt_err_set(e, "axis %lld is out of range for a rank-%d tensor (valid axes "
                      "are %d..%d)", (long long)axis, s->rank, -s->rank, s->rank - 1);
    return false;
}

/* argmax and softmax act along one axis, so AG_ALL_AXES is refused. */
static bool require_one_axis(int64_t axis, rt_err *e)
{
    if (axis != AG_ALL_AXES)
        return true;
    rt_err_set(e, "needs a single axis, not AG_ALL_AXES; flatten the tensor with "
                  "ag_reshape and use axis 0");
    return false;
}

RT_SHAPE_RULE(rt_sh_reduce)
{
    (void)n;
    const ag_shape *s = &in[0]->shape;
    int axis;
    if (a->axis == AG_ALL_AXES) {
        /* Every dim goes (or becomes 1 with keepdims). */
        out->rank = a->keepdims ? s->rank : 0;
        for (int i = 0; i < out->rank; i++)
            out->dims[i] = 1;
        return true;
    }
    if (!resolve_axis(a->axis, s, &axis, e))
        return false;
    *out = *s;
    if (a->keepdims) {
        out->dims[axis] = 1;
        return true;
    }
    for (int i = axis; i + 1 < s->rank; i++)
        out->dims[i] = s->dims[i + 1];
    out->rank = s->rank - 1;
    return true;
}

RT_SHAPE_RULE(rt_sh_argmax)
{
    const ag_shape *s = &in[0]->shape;
    int axis;
    char buf[128];
    if (!require_one_axis(a->axis, e) || !resolve_axis(a->axis, s, &axis, e))
        return false;
    /* Like TF: an empty axis has no maximum, even if the result is empty. */
    if (s->dims[axis] == 0) {
        rt_err_set(e, "axis %d of shape %s is empty, so it has no maximum", axis,
                   rt_shape_str(s, buf, sizeof buf));
        return false;
    }
    rt_attrs squeeze = *a;
    squeeze.keepdims = false;
    return rt_sh_reduce(&squeeze, in, n, out, e);
}

RT_SHAPE_RULE(rt_sh_softmax)
{
    (void)n;
    int axis;
    if (!require_one_axis(a->axis, e) || !resolve_axis(a->axis, &in[0]->shape, &axis, e))
        return false;
    *out = in[0]->shape;
    return true;
}

/* The [outer, red, inner] view of x for an axis the rule already checked. */
static layout layout_of(const rt_value *x, int64_t axis_attr)
{
    layout L = {1, x->numel, 1};
    int axis;
    if (axis_attr == AG_ALL_AXES || !rt_norm_axis(axis_attr, x->shape.rank, &axis))
        return L;
    for (int i = 0; i < axis; i++)
        L.outer *= x->shape.dims[i];
    L.red = x->shape.dims[axis];
    for (int i = axis + 1; i < x->shape.rank; i++)
        L.inner *= x->shape.dims[i];
    return L;
}

/* ------------------------------------------------- scratch accumulators */

/* Per-call scratch for `inner` accumulators of up to 8 bytes each: on the
 * stack when small (the common case must not pay for malloc). */
enum { LOCAL_SCRATCH = 64 };

typedef struct scratch {
    uint64_t local[LOCAL_SCRATCH];
    void *p;
} scratch;

static void *scratch_get(scratch *s, int64_t count)
{
    s->p = count <= LOCAL_SCRATCH ? (void *)s->local
                                  : rt_xmalloc((size_t)count * sizeof(uint64_t));
    return s->p;
}

static void scratch_release(scratch *s)
{
    if (s->p != (void *)s->local)
        free(s->p);
}

/* ------------------------------------------------ element operations */

/* Conversions from an element to its accumulator and back. */
static inline double f32_to_d(float v) { return v; }
static inline float d_to_f32(double v) { return (float)v; }
static inline double d_id(double v) { return v; }
static inline float f_id(float v) { return v; }
static inline float bf_to_f(uint16_t v) { return ag_bf16_to_f32(v); }
static inline uint16_t f_to_bf(float v) { return ag_f32_to_bf16(v); }
static inline uint32_t i32_to_u(int32_t v) { return (uint32_t)v; }
static inline int32_t u_to_i32(uint32_t v) { return (int32_t)v; } /* wraps */
static inline uint64_t i64_to_u(int64_t v) { return (uint64_t)v; }
static inline int64_t u_to_i64(uint64_t v) { return (int64_t)v; } /* wraps */
static inline uint64_t i32_to_u64(int32_t v) { return (uint64_t)(int64_t)v; }
static inline int32_t i32_id(int32_t v) { return v; }
static inline int64_t i64_id(int64_t v) { return v; }

/* Combining steps. Unsigned types make integer overflow wrap, not UB. */
static inline double add_d(double x, double y) { return x + y; }
static inline float add_f(float x, float y) { return x + y; }
static inline uint32_t add_u32(uint32_t x, uint32_t y) { return x + y; }
static inline uint64_t add_u64(uint64_t x, uint64_t y) { return x + y; }
static inline double mul_d(double x, double y) { return x * y; }
static inline float mul_f(float x, float y) { return x * y; }
static inline uint32_t mul_u32(uint32_t x, uint32_t y) { return x * y; }
static inline uint64_t mul_u64(uint64_t x, uint64_t y) { return x * y; }

/* NaN-propagating max/min: once x is NaN it stays NaN (y > NaN is false),
 * and a NaN y wins. Written as two selects so the compiler can use
 * branch-free max/compare instructions. */
static inline float max_f(float x, float y)
{
    float m = y > x ? y : x;
    return y != y ? y : m;
}
static inline float min_f(float x, float y)
{
    float m = y < x ? y : x;
    return y != y ? y : m;
}
static inline double max_d(double x, double y)
{
    double m = y > x ? y : x;
    return y != y ? y : m;
}
static inline double min_d(double x, double y)
{
    double m = y < x ? y : x;
    return y != y ? y : m;
}
/* Bools are stored as 0 or 1 (ag_from_data and every kernel normalize
 * them), so any is a bitwise or and all a bitwise and. */
static inline uint8_t or_u8(uint8_t x, uint8_t y) { return x | y; }
static inline uint8_t and_u8(uint8_t x, uint8_t y) { return x & y; }
static inline uint8_t u8_id(uint8_t v) { return v; }
static inline int32_t max_i32(int32_t x, int32_t y) { return y > x ? y : x; }
static inline int32_t min_i32(int32_t x, int32_t y) { return y < x ? y : x; }
static inline int64_t max_i64(int64_t x, int64_t y) { return y > x ? y : x; }
static inline int64_t min_i64(int64_t x, int64_t y) { return y < x ? y : x; }

/* Finishing a mean: the accumulated sum divided by the count. The integer
 * forms truncate toward zero (C division); count > 0 is checked first. */
static inline float mean_f32(double s, int64_t c) { return (float)(s / (double)c); }
static inline double mean_f64(double s, int64_t c) { return s / (double)c; }
static inline uint16_t mean_bf16(float s, int64_t c) { return ag_f32_to_bf16(s / (float)c); }
static inline int32_t mean_i32(uint64_t s, int64_t c) { return (int32_t)((int64_t)s / c); }
static inline int64_t mean_i64(uint64_t s, int64_t c) { return (int64_t)s / c; }

/* ------------------------------------------------------- reducer loops */

typedef void (*reducer_fn)(const void *x, void *y, layout L, void *scratch);

/*
 * DEFINE_REDUCER(name, T, ACC, INIT, LOAD, STEP, FINISH) defines a reducer
 * for elements of type T accumulated as ACC, starting from INIT. LOAD turns
 * an element into an ACC, STEP(acc, v) folds one in, and FINISH(acc, count)
 * produces the result element.
 *
 * A contiguous slice (inner == 1) folds into four interleaved accumulators
 * to break the dependency chain; otherwise a row of `inner` accumulators is
 * updated one input row at a time, reading memory in order.
 */
#define DEFINE_REDUCER(name, T, ACC, INIT, LOAD, STEP, FINISH)                   \
    static void name(const void *xv, void *yv, layout L, void *sv)              \
    {                                                                            \
        const T *x = xv;                                                         \
        T *y = yv;                                                               \
        ACC *acc = sv;                                                           \
        for (int64_t o = 0; o < L.outer; o++, x += L.red * L.inner, y += L.inner) { \
            if (L.inner == 1) {                                                  \
                ACC a0 = INIT, a1 = INIT, a2 = INIT, a3 = INIT;                  \
                int64_t r = 0;                                                   \
                for (; r + 4 <= L.red; r += 4) {                                 \
                    a0 = STEP(a0, LOAD(x[r]));                                   \
                    a1 = STEP(a1, LOAD(x[r + 1]));                               \
                    a2 = STEP(a2, LOAD(x[r + 2]));                               \
                    a3 = STEP(a3, LOAD(x[r + 3]));                               \
                }                                                                \
                for (; r < L.red; r++)                                           \
                    a0 = STEP(a0, LOAD(x[r]));                                   \
                y[0] = FINISH(STEP(STEP(a0, a1), STEP(a2, a3)), L.red);          \
                continue;                                                        \
            }                                                                    \
            for (int64_t j = 0; j < L.inner; j++)                                \
                acc[j] = INIT;                                                   \
            for (int64_t r = 0; r < L.red; r++) {                                \
                const T *row = x + r * L.inner;                                  \
                for (int64_t j = 0; j < L.inner; j++)                            \
                    acc[j] = STEP(acc[j], LOAD(row[j]));                         \
            }                                                                    \
            for (int64_t j = 0; j < L.inner; j++)                                \
                y[j] = FINISH(acc[j], L.red);                                    \
        }                                                                        \
    }

/* FINISH forms that ignore the count. */
#define F_F32(s, c) d_to_f32(s)
#define F_F64(s, c) (s)
#define F_BF16(s, c) f_to_bf(s)
#define F_I32(s, c) u_to_i32(s)
#define F_I64(s, c) u_to_i64(s)
#define F_SAME(s, c) (s)

DEFINE_REDUCER(sum_f32, float, double, 0.0, f32_to_d, add_d, F_F32)
DEFINE_REDUCER(sum_f64, double, double, 0.0, d_id, add_d, F_F64)
DEFINE_REDUCER(sum_bf16, uint16_t, float, 0.0f, bf_to_f, add_f, F_BF16)
DEFINE_REDUCER(sum_i32, int32_t, uint32_t, 0u, i32_to_u, add_u32, F_I32)
DEFINE_REDUCER(sum_i64, int64_t, uint64_t, 0u, i64_to_u, add_u64, F_I64)

DEFINE_REDUCER(prod_f32, float, double, 1.0, f32_to_d, mul_d, F_F32)
DEFINE_REDUCER(prod_f64, double, double, 1.0, d_id, mul_d, F_F64)
DEFINE_REDUCER(prod_bf16, uint16_t, float, 1.0f, bf_to_f, mul_f, F_BF16)
DEFINE_REDUCER(prod_i32, int32_t, uint32_t, 1u, i32_to_u, mul_u32, F_I32)
DEFINE_REDUCER(prod_i64, int64_t, uint64_t, 1u, i64_to_u, mul_u64, F_I64)

DEFINE_REDUCER(mean_f32_r, float, double, 0.0, f32_to_d, add_d, mean_f32)
DEFINE_REDUCER(mean_f64_r, double, double, 0.0, d_id, add_d, mean_f64)
DEFINE_REDUCER(mean_bf16_r, uint16_t, float, 0.0f, bf_to_f, add_f, mean_bf16)
DEFINE_REDUCER(mean_i32_r, int32_t, uint64_t, 0u, i32_to_u64, add_u64, mean_i32)
DEFINE_REDUCER(mean_i64_r, int64_t, uint64_t, 0u, i64_to_u, add_u64, mean_i64)

DEFINE_REDUCER(max_f32_r, float, float, -INFINITY, f_id, max_f, F_SAME)
DEFINE_REDUCER(max_f64_r, double, double, -INFINITY, d_id, max_d, F_SAME)
DEFINE_REDUCER(max_bf16_r, uint16_t, float, -INFINITY, bf_to_f, max_f, F_BF16)
DEFINE_REDUCER(max_i32_r, int32_t, int32_t, INT32_MIN, i32_id, max_i32, F_SAME)
DEFINE_REDUCER(max_i64_r, int64_t, int64_t, INT64_MIN, i64_id, max_i64, F_SAME)

DEFINE_REDUCER(min_f32_r, float, float, INFINITY, f_id, min_f, F_SAME)
DEFINE_REDUCER(min_f64_r, double, double, INFINITY, d_id, min_d, F_SAME)
DEFINE_REDUCER(min_bf16_r, uint16_t, float, INFINITY, bf_to_f, min_f, F_BF16)
DEFINE_REDUCER(min_i32_r, int32_t, int32_t, INT32_MAX, i32_id, min_i32, F_SAME)
DEFINE_REDUCER(min_i64_r, int64_t, int64_t, INT64_MAX, i64_id, min_i64, F_SAME)

DEFINE_REDUCER(any_bool, uint8_t, uint8_t, 0, u8_id, or_u8, F_SAME)
DEFINE_REDUCER(all_bool, uint8_t, uint8_t, 1, u8_id, and_u8, F_SAME)

/* One reducer per dtype, indexed by ag_dtype. The numeric rules refuse
 * bool; any and all take bool alone. */
static const reducer_fn sum_fns[AG_NUM_DTYPES] = {
    [AG_F32] = sum_f32, [AG_F64] = sum_f64, [AG_BF16] = sum_bf16,
    [AG_I32] = sum_i32, [AG_I64] = sum_i64};
static const reducer_fn prod_fns[AG_NUM_DTYPES] = {
    [AG_F32] = prod_f32, [AG_F64] = prod_f64, [AG_BF16] = prod_bf16,
    [AG_I32] = prod_i32, [AG_I64] = prod_i64};
static const reducer_fn mean_fns[AG_NUM_DTYPES] = {
    [AG_F32] = mean_f32_r, [AG_F64] = mean_f64_r, [AG_BF16] = mean_bf16_r,
    [AG_I32] = mean_i32_r, [AG_I64] = mean_i64_r};
static const reducer_fn max_fns[AG_NUM_DTYPES] = {
    [AG_F32] = max_f32_r, [AG_F64] = max_f64_r, [AG_BF16] = max_bf16_r,
    [AG_I32] = max_i32_r, [AG_I64] = max_i64_r};
static const reducer_fn min_fns[AG_NUM_DTYPES] = {
    [AG_F32] = min_f32_r, [AG_F64] = min_f64_r, [AG_BF16] = min_bf16_r,
    [AG_I32] = min_i32_r, [AG_I64] = min_i64_r};
static const reducer_fn any_fns[AG_NUM_DTYPES] = {[AG_BOOL] = any_bool};
static const reducer_fn all_fns[AG_NUM_DTYPES] = {[AG_BOOL] = all_bool};

/* Runs the reducer for x's dtype from table over the axis in a. */
static bool run_reducer(const reducer_fn *table, const rt_attrs *a, const rt_value *x,
                        rt_value *out, rt_err *e)
{
    reducer_fn fn = table[x->dtype];
    if (!fn) {
        rt_err_set(e, "has no kernel for %s", ag_dtype_name(x->dtype));
        return false;
    }
    if (out->numel == 0)
        return true;
    layout L = layout_of(x, a->axis);
    scratch s;
    fn(x->data, out->data, L, scratch_get(&s, L.inner));
    scratch_release(&s);
    return true;
}

RT_KERNEL(rt_k_reduce_sum)
{
    (void)n;
    return run_reducer(sum_fns, a, in[0], out, e);
}

RT_KERNEL(rt_k_reduce_prod)
{
    (void)n;
    return run_reducer(prod_fns, a, in[0], out, e);
}

RT_KERNEL(rt_k_reduce_max)
{
    (void)n;
    return run_reducer(max_fns, a, in[0], out, e);
}

RT_KERNEL(rt_k_reduce_min)
{
    (void)n;
    return run_reducer(min_fns, a, in[0], out, e);
}

RT_KERNEL(rt_k_reduce_any)
{
    (void)n;
    return run_reducer(any_fns, a, in[0], out, e);
}

RT_KERNEL(rt_k_reduce_all)
{
    (void)n;
    return run_reducer(all_fns, a, in[0], out, e);
}

RT_KERNEL(rt_k_reduce_mean)
{
    (void)n;
    const rt_value *x = in[0];
    /* A float mean of nothing is 0/0 = NaN; an integer one has no value. */
    if (rt_is_int(x->dtype) && out->numel > 0 && layout_of(x, a->axis).red == 0) {
        char buf[128];
        rt_err_set(e, "mean of an empty axis: the %s tensor of shape %s has no "
                      "elements to average; an integer mean of nothing has no value "
                      "(cast to a float dtype to get NaN)",
                   ag_dtype_name(x->dtype), rt_shape_str(&x->shape, buf, sizeof buf));
        return false;
    }
    return run_reducer(mean_fns, a, x, out, e);
}

/* -------------------------------------------------------------- argmax */

/* "v beats the best so far": strictly greater keeps the first maximum; a
 * NaN beats any number but not an earlier NaN. */
static inline bool beats_f(float v, float best) { return v > best || (v != v && best == best); }
static inline bool beats_d(double v, double best) { return v > best || (v != v && best == best); }
static inline bool beats_i32(int32_t v, int32_t best) { return v > best; }
static inline bool beats_i64(int64_t v, int64_t best) { return v > best; }

typedef void (*argmax_fn)(const void *x, int64_t *y, layout L, void *scratch);

/*
 * DEFINE_ARGMAX(name, T, V, LOAD, BEATS): elements of type T compared as V.
 * The first element of each slice starts as the best (red >= 1 is checked
 * by the rule); with inner > 1 a row of best values sits in scratch.
 */
#define DEFINE_ARGMAX(name, T, V, LOAD, BEATS)                                   \
    static void name(const void *xv, int64_t *y, layout L, void *sv)            \
    {                                                                            \
        const T *x = xv;                                                         \
        V *best = sv;                                                            \
        for (int64_t o = 0; o < L.outer; o++, x += L.red * L.inner, y += L.inner) { \
            if (L.inner == 1) {                                                  \
                V b = LOAD(x[0]);                                                \
                int64_t bi = 0;                                                  \
                for (int64_t r = 1; r < L.red; r++) {                            \
                    V v = LOAD(x[r]);                                            \
                    if (BEATS(v, b)) {                                           \
                        b = v;                                                   \
                        bi = r;                                                  \
                    }                                                            \
                }                                                                \
                y[0] = bi;                                                       \
                continue;                                                        \
            }                                                                    \
            for (int64_t j = 0; j < L.inner; j++) {                              \
                best[j] = LOAD(x[j]);                                            \
                y[j] = 0;                                                        \
            }                                                                    \
            for (int64_t r = 1; r < L.red; r++) {                                \
                const T *row = x + r * L.inner;                                  \
                for (int64_t j = 0; j < L.inner; j++) {                          \
                    V v = LOAD(row[j]);                                          \
                    if (BEATS(v, best[j])) {                                     \
                        best[j] = v;                                             \
                        y[j] = r;                                                \
                    }                                                            \
                }                                                                \
            }                                                                    \
        }                                                                        \
    }

DEFINE_ARGMAX(argmax_f32, float, float, f_id, beats_f)
DEFINE_ARGMAX(argmax_f64, double, double, d_id, beats_d)
DEFINE_ARGMAX(argmax_bf16, uint16_t, float, bf_to_f, beats_f)
DEFINE_ARGMAX(argmax_i32, int32_t, int32_t, i32_id, beats_i32)
DEFINE_ARGMAX(argmax_i64, int64_t, int64_t, i64_id, beats_i64)

static const argmax_fn argmax_fns[AG_NUM_DTYPES] = {
    [AG_F32] = argmax_f32, [AG_F64] = argmax_f64, [AG_BF16] = argmax_bf16,
    [AG_I32] = argmax_i32, [AG_I64] = argmax_i64};

RT_KERNEL(rt_k_argmax)
{
    (void)n;
    const rt_value *x = in[0];
    argmax_fn fn = argmax_fns[x->dtype];
    if (!fn) {
        rt_err_set(e, "has no kernel for %s", ag_dtype_name(x->dtype));
        return false;
    }
    if (out->numel == 0)
        return true;
    layout L = layout_of(x, a->axis);
    if (L.red == 0) { /* the rule refuses this; never read x[0] regardless */
        rt_err_set(e, "the reduced axis is empty, so it has no maximum");
        return false;
    }
    scratch s;
    fn(x->data, out->data, L, scratch_get(&s, L.inner));
    scratch_release(&s);
    return true;
}

/* ------------------------------------------------------------- softmax */

/*
 * softmax over the red axis of each [red, inner] block, one input row at a
 * time: the max of each column, then exp(x - max) and its column sums (in
 * double), then a scale by 1/sum. x and y may be the same buffer (bf16
 * computes in place in an f32 copy). mx and sum are scratch rows of inner.
 */
#define DEFINE_SOFTMAX(name, T, EXP, MAX)                                              \
    static void name(const T *x, T *y, layout L, T *mx, double *sum)                   \
    {                                                                                  \
        int64_t block = L.red * L.inner;                                               \
        for (int64_t o = 0; o < L.outer; o++, x += block, y += block) {                \
            for (int64_t j = 0; j < L.inner; j++) {                                    \
                mx[j] = -INFINITY;                                                     \
                sum[j] = 0.0;                                                          \
            }                                                                          \
            for (int64_t r = 0; r < L.red; r++)                                        \
                for (int64_t j = 0; j < L.inner; j++)                                  \
                    mx[j] = MAX(mx[j], x[r * L.inner + j]);                            \
            for (int64_t r = 0; r < L.red; r++) {                                      \
                for (int64_t j = 0; j < L.inner; j++) {                                \
                    T ev = EXP(x[r * L.inner + j] - mx[j]);                            \
                    y[r * L.inner + j] = ev;                                           \
                    sum[j] += ev;                                                      \
                }                                                                      \
            }                                                                          \
            for (int64_t j = 0; j < L.inner; j++)                                      \
                sum[j] = 1.0 / sum[j];                                                 \
            for (int64_t r = 0; r < L.red; r++)                                        \
                for (int64_t j = 0; j < L.inner; j++)                                  \
                    y[r * L.inner + j] = (T)(y[r * L.inner + j] * sum[j]);             \
        }                                                                              \
    }

DEFINE_SOFTMAX(softmax_f32, float, expf, max_f)
DEFINE_SOFTMAX(softmax_f64, double, exp, max_d)

/* bf16: widen to an f32 copy, run the f32 softmax in place, round once. */
static void softmax_bf16(const uint16_t *x, uint16_t *y, int64_t numel, layout L,
                         float *mx, double *sum)
{
    float *tmp = rt_xmalloc((size_t)numel * sizeof *tmp);
    for (int64_t i = 0; i < numel; i++)
        tmp[i] = ag_bf16_to_f32(x[i]);
    softmax_f32(tmp, tmp, L, mx, sum);
    for (int64_t i = 0; i < numel; i++)
        y[i] = ag_f32_to_bf16(tmp[i]);
    free(tmp);
}

RT_KERNEL(rt_k_softmax)
{
    (void)n;
    const rt_value *x = in[0];
    if (out->numel == 0)
        return true;
    layout L = layout_of(x, a->axis);
    scratch s_max, s_sum;
    void *mx = scratch_get(&s_max, L.inner);
    double *sum = scratch_get(&s_sum, L.inner);
    bool ok = true;
    switch (x->dtype) {
    case AG_F32: softmax_f32(x->data, out->data, L, mx, sum); break;
    case AG_F64: softmax_f64(x->data, out->data, L, mx, sum); break;
    case AG_BF16: softmax_bf16(x->data, out->data, x->numel, L, mx, sum); break;
    default:
        rt_err_set(e, "has no kernel for %s", ag_dtype_name(x->dtype));
        ok = false;
    }
    scratch_release(&s_max);
    scratch_release(&s_sum);
    return ok;
}
