/*
 * elementwise.c - elementwise kernels: binary arithmetic, comparisons,
 * logic, where, unary math and cast.
 *
 * The file has four layers:
 *   1. element functions: the scalar semantics of each op for each dtype
 *      (one small inline function, generated per C type by a macro so that
 *      the integer rules, say, are written once for i32, i64 and i8). This is
 *      the only part written per op;
 *   2. typed runs: tight loops that apply an element function to a
 *      contiguous run of the output;
 *   3. the broadcasting walk: one function that splits the output into
 *      maximal contiguous runs, with per-input strides (0 on broadcast
 *      dims), and calls a run for each. Every binary op and where use it;
 *   4. the kernels, generated from ops.def for every row marked EW(D) or
 *      EW_CMP(D): the bf16 element function (through f32), a run per dtype
 *      of the domain D, the table of runs by dtype, and the kernel. where
 *      and cast (EW_OWN) are written out.
 *
 * Dtype conventions: bf16 is stored as uint16_t, computed in f32, and each
 * result is rounded back with ag_f32_to_bf16; bool is uint8_t 0/1 (every
 * producer normalizes it, so & and | are exact logic on it).
 *
 * Integer semantics follow TensorFlow: add/sub/mul/neg/abs/square/pow wrap
 * modulo 2^n (computed in unsigned arithmetic, so no undefined behaviour);
 * division by zero is an error; INT_MIN / -1 wraps to INT_MIN (mod gives 0).
 */
#include "../core/op_decls.h"
#include "tanh_f32.h"

#include <math.h>
#include <string.h>

/* =================================================== element functions */

static inline float bf(uint16_t x) { return ag_bf16_to_f32(x); }

/*
 * Integer arithmetic for a signed type T whose unsigned twin is U.
 *  - add/sub/mul wrap: computed in U, converted back (two's complement).
 *  - div truncates toward zero like C's `/`. This is agc's choice (it is
 *    tf.truncatediv; TF's `/` would give floats); ag_floordiv is the
 *    flooring division.
 *  - floordiv and mod floor like TF's floordiv/floormod and Python:
 *    -7 // 2 == -4, -7 mod 2 == 1, 7 mod -2 == -1.
 *  - A divisor of -1 is special-cased because INT_MIN / -1 overflows (and
 *    traps on x86); the quotient wraps to INT_MIN and the remainder is 0.
 *  - A zero divisor or a negative exponent never reaches these functions:
 *    the kernels reject them first (see check_divisor, check_exponent).
 */
#define DEFINE_INT_ARITH(S, T, U)                                             \
    static inline T add_##S(T a, T b) { return (T)((U)a + (U)b); }            \
    static inline T sub_##S(T a, T b) { return (T)((U)a - (U)b); }            \
    static inline T mul_##S(T a, T b) { return (T)((U)a * (U)b); }            \
    static inline T div_##S(T a, T b) { return b == -1 ? sub_##S(0, a) : a / b; } \
    static inline T floordiv_##S(T a, T b)                                    \
    {                                                                         \
        if (b == -1)                                                          \
            return sub_##S(0, a);                                             \
        T q = a / b;                                                          \
        /* C truncates; step down when the exact quotient was negative     \
         * and not whole. */                                                  \
        return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;                \
    }                                                                         \
    static inline T mod_##S(T a, T b)                                         \
    {                                                                         \
        if (b == -1)                                                          \
            return 0;                                                         \
        T r = a % b;                                                          \
        /* The floored remainder takes the divisor's sign. */                 \
        return (r != 0 && (r < 0) != (b < 0)) ? r + b : r;                    \
    }                                                                         \
    static inline T pow_##S(T a, T b) { return (T)(U)rt_wrapping_pow((U)a, (uint64_t)b); } \
    static inline T maximum_##S(T a, T b) { return a > b ? a : b; }           \
    static inline T minimum_##S(T a, T b) { return a < b ? a : b; }           \
    static inline T neg_##S(T x) { return sub_##S(0, x); }                    \
    static inline T abs_##S(T x) { return x < 0 ? neg_##S(x) : x; }           \
    static inline T square_##S(T x) { return mul_##S(x, x); }                 \
    static inline T sign_##S(T x) { return (T)((x > 0) - (x < 0)); }          \
    static inline T relu_##S(T x) { return x > 0 ? x : 0; }

DEFINE_INT_ARITH(i32, int32_t, uint32_t)
DEFINE_INT_ARITH(i64, int64_t, uint64_t)
DEFINE_INT_ARITH(i8, int8_t, uint8_t)

/*
 * Float arithmetic for type T; F is the libm suffix (`f` for float, empty
 * for double), so floor##F is floorf or floor.
 *  - div is IEEE division: x/0 is +-inf, 0/0 is NaN.
 *  - floordiv is floor(x / y) and mod is TF's floormod: fmod adjusted so
 *    that a non-zero result has the divisor's sign.
 *  - maximum/minimum propagate NaN (TF does; fmax would drop it).
 *  - relu is max(x, 0) with the same NaN propagation; sign(NaN) is NaN.
 *  - sigmoid uses exp(-|x|) only, so it never overflows.
 */
#define DEFINE_FLOAT_ARITH(S, T, F)                                           \
    static inline T add_##S(T a, T b) { return a + b; }                       \
    static inline T sub_##S(T a, T b) { return a - b; }                       \
    static inline T mul_##S(T a, T b) { return a * b; }                       \
    static inline T div_##S(T a, T b) { return a / b; }                       \
    static inline T floordiv_##S(T a, T b) { return floor##F(a / b); }        \
    static inline T mod_##S(T a, T b)                                         \
    {                                                                         \
        T r = fmod##F(a, b);                                                  \
        return (r != 0 && (r < 0) != (b < 0)) ? r + b : r;                    \
    }                                                                         \
    static inline T pow_##S(T a, T b) { return pow##F(a, b); }                \
    static inline T maximum_##S(T a, T b) { return (a > b || isnan(a)) ? a : b; } \
    static inline T minimum_##S(T a, T b) { return (a < b || isnan(a)) ? a : b; } \
    static inline T neg_##S(T x) { return -x; }                               \
    static inline T abs_##S(T x) { return fabs##F(x); }                       \
    static inline T square_##S(T x) { return x * x; }                         \
    static inline T sign_##S(T x) { return isnan(x) ? x : (T)((x > 0) - (x < 0)); } \
    static inline T relu_##S(T x) { return (x > 0 || isnan(x)) ? x : 0; }     \
    static inline T exp_##S(T x) { return exp##F(x); }                        \
    static inline T log_##S(T x) { return log##F(x); }                        \
    static inline T sqrt_##S(T x) { return sqrt##F(x); }                      \
    static inline T rsqrt_##S(T x) { return 1 / sqrt##F(x); }                 \
    static inline T floor_##S(T x) { return floor##F(x); }                    \
    static inline T ceil_##S(T x) { return ceil##F(x); }                      \
    static inline T sigmoid_##S(T x)                                          \
    {                                                                         \
        if (x >= 0)                                                           \
            return 1 / (1 + exp##F(-x));                                      \
        T z = exp##F(x); /* x < 0 or NaN: z cannot overflow */                \
        return z / (1 + z);                                                   \
    }

DEFINE_FLOAT_ARITH(f32, float, f)
DEFINE_FLOAT_ARITH(f64, double, /* no suffix */)

/* tanh: f32 (and bf16, through it) uses agc's own vectorizable tanh, which
 * the LLVM backend emits operation for operation (tanh_f32.h); f64 uses
 * libm's, which the backend calls too. */
static inline float tanh_f32(float x) { return rt_tanh_f32(x); }
static inline double tanh_f64(double x) { return tanh(x); }

/* bf16 has no element functions of its own: each is the f32 one on widened
 * operands, the result rounded back once (a comparison's is not), made with
 * the kernels below. */

/* Comparisons give uint8_t 0/1. Floats compare by IEEE rules (NaN is
 * unequal to everything, itself included). */
#define DEFINE_COMPARE(S, T)                                                  \
    static inline uint8_t equal_##S(T a, T b) { return a == b; }              \
    static inline uint8_t not_equal_##S(T a, T b) { return a != b; }          \
    static inline uint8_t less_##S(T a, T b) { return a < b; }                \
    static inline uint8_t less_equal_##S(T a, T b) { return a <= b; }         \
    static inline uint8_t greater_##S(T a, T b) { return a > b; }             \
    static inline uint8_t greater_equal_##S(T a, T b) { return a >= b; }

DEFINE_COMPARE(f32, float)
DEFINE_COMPARE(f64, double)
DEFINE_COMPARE(i32, int32_t)
DEFINE_COMPARE(i64, int64_t)
DEFINE_COMPARE(i8, int8_t)
DEFINE_COMPARE(bool, uint8_t)

static inline uint8_t logical_and_bool(uint8_t a, uint8_t b) { return a & b; }
static inline uint8_t logical_or_bool(uint8_t a, uint8_t b) { return a | b; }
static inline uint8_t logical_not_bool(uint8_t x) { return x ^ 1; }

/* ========================================================== typed runs */

/*
 * A run computes n consecutive outputs. in[k] points at input k's first
 * element for the run; step[k] is true when input k advances with the
 * output and false when it is broadcast (one element repeated).
 */
typedef void (*run_fn)(void *out, const void *const *in, const bool *step, int64_t n);
/* A unary run maps n contiguous inputs to n contiguous outputs. */
typedef void (*unary_fn)(void *out, const void *in, int64_t n);

/* The binary run: one tight loop per broadcasting pattern, so that the
 * hot loops carry no index arithmetic and can vectorize. */
#define DEFINE_BINARY_RUN(fn, TI, TO, ELEM)                                   \
    static void fn(void *out, const void *const *in, const bool *step, int64_t n) \
    {                                                                         \
        TO *restrict o = out;                                                 \
        const TI *x = in[0], *y = in[1];                                      \
        if (step[0] && step[1]) {                                             \
            for (int64_t i = 0; i < n; i++)                                   \
                o[i] = ELEM(x[i], y[i]);                                      \
        } else if (step[0]) {                                                 \
            const TI b = y[0];                                                \
            for (int64_t i = 0; i < n; i++)                                   \
                o[i] = ELEM(x[i], b);                                         \
        } else if (step[1]) {                                                 \
            const TI a = x[0];                                                \
            for (int64_t i = 0; i < n; i++)                                   \
                o[i] = ELEM(a, y[i]);                                         \
        } else {                                                              \
            const TO v = ELEM(x[0], y[0]);                                    \
            for (int64_t i = 0; i < n; i++)                                   \
                o[i] = v;                                                     \
        }                                                                     \
    }

#define DEFINE_UNARY_RUN(fn, TI, TO, ELEM)                                    \
    static void fn(void *out, const void *in, int64_t n)                      \
    {                                                                         \
        TO *restrict o = out;                                                 \
        const TI *x = in;                                                     \
        for (int64_t i = 0; i < n; i++)                                       \
            o[i] = ELEM(x[i]);                                                \
    }

/* where(cond, a, b) only selects, so one run per element type. The
 * all-contiguous case gets its own loop; the others multiply by 0 or 1. */
#define DEFINE_WHERE_RUN(fn, T)                                               \
    static void fn(void *out, const void *const *in, const bool *step, int64_t n) \
    {                                                                         \
        T *restrict o = out;                                                  \
        const uint8_t *c = in[0];                                             \
        const T *x = in[1], *y = in[2];                                       \
        if (step[0] && step[1] && step[2]) {                                  \
            for (int64_t i = 0; i < n; i++)                                   \
                o[i] = c[i] ? x[i] : y[i];                                    \
            return;                                                           \
        }                                                                     \
        int64_t cs = step[0], xs = step[1], ys = step[2];                     \
        for (int64_t i = 0; i < n; i++)                                       \
            o[i] = c[i * cs] ? x[i * xs] : y[i * ys];                         \
    }

DEFINE_WHERE_RUN(where_run_f32, float)
DEFINE_WHERE_RUN(where_run_f64, double)
DEFINE_WHERE_RUN(where_run_bf16, uint16_t)
DEFINE_WHERE_RUN(where_run_i32, int32_t)
DEFINE_WHERE_RUN(where_run_i64, int64_t)
DEFINE_WHERE_RUN(where_run_bool, uint8_t)
DEFINE_WHERE_RUN(where_run_i8, int8_t)

static const run_fn where_runs[AG_NUM_DTYPES] = {
    [AG_F32] = where_run_f32, [AG_F64] = where_run_f64, [AG_BF16] = where_run_bf16,
    [AG_I32] = where_run_i32, [AG_I64] = where_run_i64, [AG_BOOL] = where_run_bool,
    [AG_I8] = where_run_i8};

/* ================================================= the broadcasting walk */

enum { MAX_INPUTS = 3 };

/*
 * The output seen as a (smaller) grid: output dims of size 1 are dropped,
 * and neighbouring dims are merged wherever every input steps through them
 * as through one dim. Strides are in elements, 0 where an input is
 * broadcast. The innermost dim is then the longest run in which each input
 * either advances by 1 or stays put.
 */
typedef struct grid {
    int rank;
    int64_t dims[AG_MAX_RANK];
    int64_t strides[MAX_INPUTS][AG_MAX_RANK];
} grid;

/* Input v's stride along output dim d of out (rank out_rank): 0 where v is
 * missing that dim or has size 1 there (it is broadcast). */
static int64_t broadcast_stride(const rt_value *v, const int64_t *v_strides, int out_rank,
                                int d)
{
    int vd = d - (out_rank - v->shape.rank);
    return vd >= 0 && v->shape.dims[vd] != 1 ? v_strides[vd] : 0;
}

static void grid_build(grid *g, const ag_shape *out, rt_value *const *in, int n_in)
{
    int64_t in_strides[MAX_INPUTS][AG_MAX_RANK];
    for (int k = 0; k < n_in; k++)
        rt_strides(&in[k]->shape, in_strides[k]);
    g->rank = 0;
    for (int d = 0; d < out->rank; d++) {
        if (out->dims[d] == 1)
            continue;
        int64_t s[MAX_INPUTS];
        bool mergeable = g->rank > 0;
        for (int k = 0; k < n_in; k++) {
            s[k] = broadcast_stride(in[k], in_strides[k], out->rank, d);
            /* The previous dim and this one are one dim for input k when
             * stepping the previous one skips exactly this one's extent. */
            if (mergeable && g->strides[k][g->rank - 1] != s[k] * out->dims[d])
                mergeable = false;
        }
        int r = mergeable ? g->rank - 1 : g->rank++;
        g->dims[r] = mergeable ? g->dims[r] * out->dims[d] : out->dims[d];
        for (int k = 0; k < n_in; k++)
            g->strides[k][r] = s[k];
    }
    if (g->rank == 0) { /* a single element */
        g->rank = 1;
        g->dims[0] = 1;
        for (int k = 0; k < n_in; k++)
            g->strides[k][0] = 0;
    }
}

/*
 * Computes every element of out from in[0..n_in) with run `run`.
 *
 * Fast path: when each input either has out's shape (then, since
 * broadcasting never shrinks a dim, it also has out's layout) or is a
 * single element, the whole output is one run. Otherwise the output grid
 * is walked run by run with an odometer over the outer dims that keeps
 * each input's offset up to date by adding and subtracting strides.
 */
static void broadcast_walk(rt_value *out, rt_value *const *in, int n_in, run_fn run)
{
    const int64_t total = out->numel;
    const void *ptr[MAX_INPUTS];
    bool step[MAX_INPUTS];
    bool one_run = true;
    if (total == 0)
        return;
    for (int k = 0; k < n_in; k++) {
        ptr[k] = in[k]->data;
        step[k] = in[k]->numel == total;
        one_run = one_run && (step[k] || in[k]->numel == 1);
    }
    if (one_run) {
        run(out->data, ptr, step, total);
        return;
    }

    grid g;
    grid_build(&g, &out->shape, in, n_in);
    const int inner_dim = g.rank - 1;
    const int64_t inner = g.dims[inner_dim];
    size_t esize[MAX_INPUTS];
    int64_t offset[MAX_INPUTS] = {0};
    int64_t index[AG_MAX_RANK] = {0};
    for (int k = 0; k < n_in; k++) {
        esize[k] = rt_dtype_size(in[k]->dtype);
        step[k] = g.strides[k][inner_dim] != 0; /* 1 or 0 on the innermost dim */
    }
    const size_t out_run_bytes = (size_t)inner * rt_dtype_size(out->dtype);
    char *o = out->data;
    for (int64_t done = 0; done < total; done += inner, o += out_run_bytes) {
        for (int k = 0; k < n_in; k++)
            ptr[k] = (const char *)in[k]->data + (size_t)offset[k] * esize[k];
        run(o, ptr, step, inner);
        /* Advance the odometer over the outer dims, innermost first. */
        for (int d = inner_dim - 1; d >= 0; d--) {
            if (++index[d] < g.dims[d]) {
                for (int k = 0; k < n_in; k++)
                    offset[k] += g.strides[k][d];
                break;
            }
            index[d] = 0;
            for (int k = 0; k < n_in; k++)
                offset[k] -= g.strides[k][d] * (g.dims[d] - 1);
        }
    }
}

/* ============================================================= kernels */

static bool undefined_for(ag_dtype dt, rt_err *e)
{
    rt_err_set(e, "is not defined for %s tensors", ag_dtype_name(dt));
    return false;
}

static bool binary(const run_fn *runs, rt_value *const *in, rt_value *out, rt_err *e)
{
    run_fn run = runs[in[0]->dtype];
    if (!run)
        return undefined_for(in[0]->dtype, e);
    broadcast_walk(out, in, 2, run);
    return true;
}

static bool unary(const unary_fn *runs, rt_value *const *in, rt_value *out, rt_err *e)
{
    unary_fn run = runs[in[0]->dtype];
    if (!run)
        return undefined_for(in[0]->dtype, e);
    run(out->data, in[0]->data, out->numel);
    return true;
}

/* Whether an integer tensor holds a value in [lo, hi]. */
static bool int_any_in(const rt_value *v, int64_t lo, int64_t hi)
{
    if (v->dtype == AG_I8) {
        const int8_t *x = v->data;
        for (int64_t i = 0; i < v->numel; i++)
            if (x[i] >= lo && x[i] <= hi)
                return true;
    } else if (v->dtype == AG_I32) {
        const int32_t *x = v->data;
        for (int64_t i = 0; i < v->numel; i++)
            if (x[i] >= lo && x[i] <= hi)
                return true;
    } else if (v->dtype == AG_I64) {
        const int64_t *x = v->data;
        for (int64_t i = 0; i < v->numel; i++)
            if (x[i] >= lo && x[i] <= hi)
                return true;
    }
    return false;
}

/*
 * Integer division by zero is an error, as in TensorFlow. Checking the
 * divisor tensor up front keeps the division loops free of error paths;
 * it is exact because, when the output is not empty, broadcasting uses
 * every element of every input.
 */
static bool check_divisor(rt_value *const *in, const rt_value *out, rt_err *e)
{
    if (!rt_is_int(in[1]->dtype) || out->numel == 0 || !int_any_in(in[1], 0, 0))
        return true;
    rt_err_set(e, "integer division by zero (the divisor, a %s tensor, contains 0); "
                  "mask the zeros with ag_where, or cast to a float dtype for IEEE "
                  "division", ag_dtype_name(in[1]->dtype));
    return false;
}

/* TensorFlow's rule for integer pow: no negative exponents (the result
 * would not be an integer), whatever the base. */
static bool check_exponent(rt_value *const *in, const rt_value *out, rt_err *e)
{
    if (!rt_is_int(in[1]->dtype) || out->numel == 0 || !int_any_in(in[1], INT64_MIN, -1))
        return true;
    rt_err_set(e, "integers to negative integer powers are not allowed (the exponent, "
                  "a %s tensor, contains a negative value); cast to a float dtype first",
               ag_dtype_name(in[1]->dtype));
    return false;
}

/* The checks a row's flags ask for. flags is a constant in each kernel,
 * so only the checks it names are compiled in. */
static inline bool check_data(unsigned flags, rt_value *const *in, const rt_value *out,
                              rt_err *e)
{
    if ((flags & RT_F_INT_DIVISOR) && !check_divisor(in, out, e))
        return false;
    if ((flags & RT_F_INT_EXPONENT) && !check_exponent(in, out, e))
        return false;
    return true;
}

/* where(cond, a, b): the run is chosen by the branches' dtype. */
RT_KERNEL(rt_k_where)
{
    (void)a, (void)n;
    run_fn run = where_runs[in[1]->dtype];
    if (!run)
        return undefined_for(in[1]->dtype, e);
    broadcast_walk(out, in, 3, run);
    return true;
}

/* ================================================= generated kernels */

/*
 * For every row of ops.def marked EW(D) or EW_CMP(D), with form SAME or
 * CMP (the result has the operands' dtype, or is bool) and arity 1 or 2:
 *   - <name>_bf16, the f32 element function on widened operands, its
 *     result rounded back once (a comparison's is not), when D has bf16;
 *   - <name>_run_<dtype> for each dtype of D, over <name>_<dtype>;
 *   - <name>_runs, those runs by dtype (NULL elsewhere: the dtype rule
 *     keeps other dtypes out);
 *   - the row's kernel: its data checks, then the runs.
 */

/* F(suffix, C type, dtype, ...) for each dtype of a domain. */
#define DTYPES_FLOAT(F, ...)                                                  \
    F(f32, float, AG_F32, __VA_ARGS__)                                        \
    F(f64, double, AG_F64, __VA_ARGS__)                                       \
    F(bf16, uint16_t, AG_BF16, __VA_ARGS__)
#define DTYPES_INT(F, ...)                                                    \
    F(i32, int32_t, AG_I32, __VA_ARGS__)                                      \
    F(i64, int64_t, AG_I64, __VA_ARGS__)                                      \
    F(i8, int8_t, AG_I8, __VA_ARGS__)
#define DTYPES_BOOL(F, ...) F(bool, uint8_t, AG_BOOL, __VA_ARGS__)
#define DTYPES_NUM(F, ...) DTYPES_FLOAT(F, __VA_ARGS__) DTYPES_INT(F, __VA_ARGS__)
#define DTYPES_ANY(F, ...) DTYPES_NUM(F, __VA_ARGS__) DTYPES_BOOL(F, __VA_ARGS__)

/* bf16 element functions, by form and arity. */
#define BF16_SAME_1(op)                                                       \
    static inline uint16_t op##_bf16(uint16_t x) { return ag_f32_to_bf16(op##_f32(bf(x))); }
#define BF16_SAME_2(op)                                                       \
    static inline uint16_t op##_bf16(uint16_t a, uint16_t b)                  \
    {                                                                         \
        return ag_f32_to_bf16(op##_f32(bf(a), bf(b)));                        \
    }
#define BF16_CMP_1(op) \
    static inline uint8_t op##_bf16(uint16_t x) { return op##_f32(bf(x)); }
#define BF16_CMP_2(op) \
    static inline uint8_t op##_bf16(uint16_t a, uint16_t b) { return op##_f32(bf(a), bf(b)); }
/* ... for the domains that hold bf16. */
#define BF16_NUM(form, arity, op) BF16_##form##_##arity(op)
#define BF16_FLOAT(form, arity, op) BF16_##form##_##arity(op)
#define BF16_ANY(form, arity, op) BF16_##form##_##arity(op)
#define BF16_BOOL(form, arity, op)

/* The result's C type for operands of type T. */
#define RESULT_SAME(T) T
#define RESULT_CMP(T) uint8_t

/* By arity: the run's shape, the type of a table of runs, the driver. */
#define RUN_1 DEFINE_UNARY_RUN
#define RUN_2 DEFINE_BINARY_RUN
#define RUNS_TYPE_1 unary_fn
#define RUNS_TYPE_2 run_fn
#define APPLY_1 unary
#define APPLY_2 binary

#define DEFINE_RUN(S, T, DT, form, arity, op)                                 \
    RUN_##arity(op##_run_##S, T, RESULT_##form(T), op##_##S)
#define RUN_ENTRY(S, T, DT, form, arity, op) [DT] = op##_run_##S,

#define GENERATE_KERNEL(form, domain, op, arity, flags, kernel)               \
    BF16_##domain(form, arity, op)                                            \
    DTYPES_##domain(DEFINE_RUN, form, arity, op)                              \
    static const RUNS_TYPE_##arity op##_runs[AG_NUM_DTYPES] = {               \
        DTYPES_##domain(RUN_ENTRY, form, arity, op)};                         \
    RT_KERNEL(kernel)                                                         \
    {                                                                         \
        (void)a, (void)n;                                                     \
        return check_data(flags, in, out, e) && APPLY_##arity(op##_runs, in, out, e); \
    }

#define GENERATE_SAME(...) GENERATE_KERNEL(SAME, __VA_ARGS__)
#define GENERATE_CMP(...) GENERATE_KERNEL(CMP, __VA_ARGS__)
#define GENERATE_OWN(...)  /* where above, cast below */
#define GENERATE_NONE(...) /* not elementwise */
/* elem is two arguments, the form and the domain (see ops.def). */
#define GENERATE(form, domain, op, arity, flags, kernel)                      \
    GENERATE_##form(domain, op, arity, flags, kernel)

#define X(id, name, arity, attrs, flags, cost, elem, dtype_fn, shape_fn, kernel, api, grad) \
    GENERATE(elem, name, arity, (flags), kernel)
#include "../core/ops.def"
#undef X

/* ================================================================ cast */

/* Float to integer truncates toward zero (like C and tf.cast) and
 * saturates out-of-range values; NaN gives 0. The bounds are powers of
 * two, exact in double, and the comparisons happen before the C
 * conversion, which would be undefined out of range. */
static inline int32_t sat_i32(double v)
{
    if (isnan(v))
        return 0;
    if (v >= 2147483648.0)
        return INT32_MAX;
    if (v < -2147483648.0)
        return INT32_MIN;
    return (int32_t)v;
}

static inline int64_t sat_i64(double v)
{
    if (isnan(v))
        return 0;
    if (v >= 9223372036854775808.0)
        return INT64_MAX;
    if (v < -9223372036854775808.0)
        return INT64_MIN;
    return (int64_t)v;
}

/* i64 to i32 keeps the low 32 bits, like a two's-complement narrowing
 * (tf.cast does the same). */
static inline int32_t wrap_i32(int64_t v) { return (int32_t)(uint32_t)(uint64_t)v; }

/* To i8: floats saturate to [-128, 127] after truncation (NaN gives 0) as
 * they do to i32; wider integers keep the low 8 bits. */
static inline int8_t sat_i8(double v)
{
    if (isnan(v))
        return 0;
    return (int8_t)(v < INT8_MIN ? INT8_MIN : v > INT8_MAX ? INT8_MAX : v);
}

static inline int8_t wrap_i8(int64_t v) { return (int8_t)(uint8_t)(uint64_t)v; }

/* f64 to bf16 is rt_f64_to_bf16 (core/dtype.c): rounded once. */

/*
 * i64 to bf16, rounded once. The magnitude is shifted down to 24 bits (so
 * it converts to f32 exactly) while OR-ing every dropped bit into bit 0: a
 * "sticky" bit far below bf16's rounding position that marks a value as
 * above a tie without moving it past one.
 */
static uint16_t i64_to_bf16(int64_t v)
{
    uint64_t mag = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    int shift = 0;
    while (mag >= (UINT64_C(1) << 24)) {
        mag = (mag >> 1) | (mag & 1);
        shift++;
    }
    float f = ldexpf((float)mag, shift);
    return ag_f32_to_bf16(v < 0 ? -f : f);
}

/* One loop per (source, destination) pair; `v` is the source element. */
#define DEFINE_CAST(S, ST, D, DT, EXPR)                                       \
    static void cast_##S##_##D(void *out, const void *in, int64_t n)          \
    {                                                                         \
        DT *restrict o = out;                                                 \
        const ST *x = in;                                                     \
        for (int64_t i = 0; i < n; i++) {                                     \
            const ST v = x[i];                                                \
            o[i] = EXPR;                                                      \
        }                                                                     \
    }

/* To bool is v != 0 (so NaN is true); from bool is 0 or 1. */
DEFINE_CAST(f32, float, f64, double, (double)v)
DEFINE_CAST(f32, float, bf16, uint16_t, ag_f32_to_bf16(v))
DEFINE_CAST(f32, float, i32, int32_t, sat_i32(v))
DEFINE_CAST(f32, float, i64, int64_t, sat_i64(v))
DEFINE_CAST(f32, float, bool, uint8_t, v != 0)

DEFINE_CAST(f64, double, f32, float, (float)v)
DEFINE_CAST(f64, double, bf16, uint16_t, rt_f64_to_bf16(v))
DEFINE_CAST(f64, double, i32, int32_t, sat_i32(v))
DEFINE_CAST(f64, double, i64, int64_t, sat_i64(v))
DEFINE_CAST(f64, double, bool, uint8_t, v != 0)

DEFINE_CAST(bf16, uint16_t, f32, float, bf(v))
DEFINE_CAST(bf16, uint16_t, f64, double, bf(v))
DEFINE_CAST(bf16, uint16_t, i32, int32_t, sat_i32(bf(v)))
DEFINE_CAST(bf16, uint16_t, i64, int64_t, sat_i64(bf(v)))
DEFINE_CAST(bf16, uint16_t, bool, uint8_t, bf(v) != 0)

DEFINE_CAST(i32, int32_t, f32, float, (float)v)
DEFINE_CAST(i32, int32_t, f64, double, (double)v)
DEFINE_CAST(i32, int32_t, bf16, uint16_t, rt_f64_to_bf16(v)) /* i32 is exact in f64 */
DEFINE_CAST(i32, int32_t, i64, int64_t, v)
DEFINE_CAST(i32, int32_t, bool, uint8_t, v != 0)

DEFINE_CAST(i64, int64_t, f32, float, (float)v)
DEFINE_CAST(i64, int64_t, f64, double, (double)v)
DEFINE_CAST(i64, int64_t, bf16, uint16_t, i64_to_bf16(v))
DEFINE_CAST(i64, int64_t, i32, int32_t, wrap_i32(v))
DEFINE_CAST(i64, int64_t, bool, uint8_t, v != 0)

DEFINE_CAST(bool, uint8_t, f32, float, (float)v)
DEFINE_CAST(bool, uint8_t, f64, double, (double)v)
DEFINE_CAST(bool, uint8_t, bf16, uint16_t, ag_f32_to_bf16((float)v))
DEFINE_CAST(bool, uint8_t, i32, int32_t, v)
DEFINE_CAST(bool, uint8_t, i64, int64_t, v)

DEFINE_CAST(f32, float, i8, int8_t, sat_i8(v))
DEFINE_CAST(f64, double, i8, int8_t, sat_i8(v))
DEFINE_CAST(bf16, uint16_t, i8, int8_t, sat_i8(bf(v)))
DEFINE_CAST(i32, int32_t, i8, int8_t, wrap_i8(v))
DEFINE_CAST(i64, int64_t, i8, int8_t, wrap_i8(v))
DEFINE_CAST(bool, uint8_t, i8, int8_t, (int8_t)v)
DEFINE_CAST(i8, int8_t, f32, float, (float)v)
DEFINE_CAST(i8, int8_t, f64, double, (double)v)
DEFINE_CAST(i8, int8_t, bf16, uint16_t, ag_f32_to_bf16((float)v)) /* exact */
DEFINE_CAST(i8, int8_t, i32, int32_t, v)
DEFINE_CAST(i8, int8_t, i64, int64_t, v)
DEFINE_CAST(i8, int8_t, bool, uint8_t, v != 0)

/* cast_runs[source][destination]; the diagonal is a plain copy. */
static const unary_fn cast_runs[AG_NUM_DTYPES][AG_NUM_DTYPES] = {
    [AG_F32] = {
        [AG_F64] = cast_f32_f64, [AG_BF16] = cast_f32_bf16, [AG_I32] = cast_f32_i32,
        [AG_I64] = cast_f32_i64, [AG_BOOL] = cast_f32_bool,
        [AG_I8] = cast_f32_i8},
    [AG_F64] = {
        [AG_F32] = cast_f64_f32, [AG_BF16] = cast_f64_bf16, [AG_I32] = cast_f64_i32,
        [AG_I64] = cast_f64_i64, [AG_BOOL] = cast_f64_bool,
        [AG_I8] = cast_f64_i8},
    [AG_BF16] = {
        [AG_F32] = cast_bf16_f32, [AG_F64] = cast_bf16_f64, [AG_I32] = cast_bf16_i32,
        [AG_I64] = cast_bf16_i64, [AG_BOOL] = cast_bf16_bool,
        [AG_I8] = cast_bf16_i8},
    [AG_I32] = {
        [AG_F32] = cast_i32_f32, [AG_F64] = cast_i32_f64, [AG_BF16] = cast_i32_bf16,
        [AG_I64] = cast_i32_i64, [AG_BOOL] = cast_i32_bool,
        [AG_I8] = cast_i32_i8},
    [AG_I64] = {
        [AG_F32] = cast_i64_f32, [AG_F64] = cast_i64_f64, [AG_BF16] = cast_i64_bf16,
        [AG_I32] = cast_i64_i32, [AG_BOOL] = cast_i64_bool,
        [AG_I8] = cast_i64_i8},
    [AG_BOOL] = {
        [AG_F32] = cast_bool_f32, [AG_F64] = cast_bool_f64, [AG_BF16] = cast_bool_bf16,
        [AG_I32] = cast_bool_i32, [AG_I64] = cast_bool_i64,
        [AG_I8] = cast_bool_i8},
    [AG_I8] = {
        [AG_F32] = cast_i8_f32, [AG_F64] = cast_i8_f64, [AG_BF16] = cast_i8_bf16,
        [AG_I32] = cast_i8_i32, [AG_I64] = cast_i8_i64, [AG_BOOL] = cast_i8_bool},
};

RT_KERNEL(rt_k_cast)
{
    (void)a, (void)n;
    ag_dtype from = in[0]->dtype, to = out->dtype;
    if (from == to) {
        memcpy(out->data, in[0]->data, rt_value_bytes(out));
        return true;
    }
    unary_fn run = (unsigned)from < AG_NUM_DTYPES ? cast_runs[from][to] : NULL;
    if (!run) {
        rt_err_set(e, "cannot convert %s to %s", ag_dtype_name(from), ag_dtype_name(to));
        return false;
    }
    run(out->data, in[0]->data, out->numel);
    return true;
}
