/*
 * ag.h - the public API of libag, the agc runtime.
 *
 * This is the only header a user includes. Compiled with any C compiler and
 * linked with -lag, code written against it runs eagerly: every op executes
 * at once. Passed through agc, the same code is traced into graphs.
 *
 * Most entry points are macros that capture the caller's __FILE__/__LINE__,
 * so that errors (and, while tracing, graph nodes) point at the user's own
 * source line. Each macro `ag_NAME(...)` forwards to a function
 * `ag_NAME_at(AG_HERE, ...)` that generated code may also call directly.
 *
 * The contract is docs/dsl.md, the DSL reference; docs/runtime.md explains the
 * semantics chosen where dsl.md is silent.
 */
#ifndef AG_H
#define AG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define AG_VERSION_MAJOR 0
#define AG_VERSION_MINOR 1
#define AG_VERSION_PATCH 0
#define AG_VERSION "0.1.0"

/* ---------------------------------------------------------------- types */

#define AG_MAX_RANK 8

typedef enum ag_dtype {
    AG_F32,
    AG_F64,
    AG_BF16,
    AG_I32,
    AG_I64,
    AG_BOOL,
    AG_I8, /* int8: quantized tensors (docs/quantization.md) */
    AG_NUM_DTYPES
} ag_dtype;

/* A shape. A dim of -1 means unknown (signatures and static shapes only). */
typedef struct ag_shape {
    int rank;
    int64_t dims[AG_MAX_RANK];
} ag_shape;

/*
 * A tensor handle, passed by value. It is a struct so that `if (t)` is a
 * compile error. `gen` detects use after ag_free. The all-zero handle is
 * "no tensor"; ag_is_error() is true for it and for failed results.
 */
typedef struct ag_tensor {
    uint32_t id;
    uint32_t gen;
} ag_tensor;

/* Values accumulated in a loop (TensorFlow's TensorArray). */
typedef struct ag_tensor_array {
    ag_tensor list;
} ag_tensor_array;

/* Mutable tensor state, shared by identity. */
typedef struct ag_variable_s *ag_variable;

/* A source location: the user's file and line. */
typedef struct ag_loc {
    const char *file;
    int line;
} ag_loc;

/* The caller's line, which every public macro passes to its _at form.
 * agc's own library and tools define AG_INSIDE_AGC (cmake/layers.cmake,
 * tools/CMakeLists.txt): a call they make on a user's behalf passes the
 * user's location, or none, to the _at form; AG_HERE there would put
 * agc's own source file into the user's messages and graphs, so it does
 * not compile. */
#ifdef AG_INSIDE_AGC
#define AG_HERE AG_HERE_names_agc_s_own_file__pass_the_user_s_location
#elif defined(AG_GENERATED_FILE)
/* In the file agc generates (its first line defines AG_GENERATED_FILE as
 * its own name), the lines agc wrote have no place in the user's messages
 * and graphs: there AG_HERE names no file. The user's lines keep theirs,
 * which #line directives give. */
#define AG_HERE \
    ((ag_loc){__builtin_strcmp(__FILE__, AG_GENERATED_FILE) ? __FILE__ : (const char *)0, \
              __LINE__})
#else
#define AG_HERE ((ag_loc){__FILE__, __LINE__})
#endif

/* ------------------------------------------------------- helper macros */

#define AG__CAT_(a, b) a##b
#define AG__CAT(a, b) AG__CAT_(a, b)
#define AG__NARGS(...) AG__NARGS_(__VA_ARGS__, 16, 15, 14, 13, 12, 11, 10, \
                                  9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define AG__NARGS_(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13, \
                   _14, _15, _16, N, ...) N
#define AG__MAP(f, ...) AG__CAT(AG__MAP_, AG__NARGS(__VA_ARGS__))(f, __VA_ARGS__)
#define AG__MAP_1(f, x) f(x)
#define AG__MAP_2(f, x, ...) f(x), AG__MAP_1(f, __VA_ARGS__)
#define AG__MAP_3(f, x, ...) f(x), AG__MAP_2(f, __VA_ARGS__)
#define AG__MAP_4(f, x, ...) f(x), AG__MAP_3(f, __VA_ARGS__)
#define AG__MAP_5(f, x, ...) f(x), AG__MAP_4(f, __VA_ARGS__)
#define AG__MAP_6(f, x, ...) f(x), AG__MAP_5(f, __VA_ARGS__)
#define AG__MAP_7(f, x, ...) f(x), AG__MAP_6(f, __VA_ARGS__)
#define AG__MAP_8(f, x, ...) f(x), AG__MAP_7(f, __VA_ARGS__)
#define AG__MAP_9(f, x, ...) f(x), AG__MAP_8(f, __VA_ARGS__)
#define AG__MAP_10(f, x, ...) f(x), AG__MAP_9(f, __VA_ARGS__)
#define AG__MAP_11(f, x, ...) f(x), AG__MAP_10(f, __VA_ARGS__)
#define AG__MAP_12(f, x, ...) f(x), AG__MAP_11(f, __VA_ARGS__)
#define AG__MAP_13(f, x, ...) f(x), AG__MAP_12(f, __VA_ARGS__)
#define AG__MAP_14(f, x, ...) f(x), AG__MAP_13(f, __VA_ARGS__)
#define AG__MAP_15(f, x, ...) f(x), AG__MAP_14(f, __VA_ARGS__)
#define AG__MAP_16(f, x, ...) f(x), AG__MAP_15(f, __VA_ARGS__)

/* AG_SHAPE(2, 3) is the shape [2, 3]; AG_SCALAR the rank-0 shape. */
#define AG_SHAPE(...) ((ag_shape){AG__NARGS(__VA_ARGS__), {__VA_ARGS__}})
#define AG_SCALAR ((ag_shape){0, {0}})
/* Index vectors (ag_slice's begin and size) are written the same way. */
#define AG_INDEX(...) AG_SHAPE(__VA_ARGS__)

/* ---------------------------------------------------------- annotations */

/* Under clang (and so under agc, which parses with libclang) the marks are
 * annotate attributes; other compilers see nothing, so eager builds stay
 * warning-free everywhere. */
#if defined(__clang__)
#define AG_FUNCTION __attribute__((annotate("ag.function")))
#define AG_SIGNATURE(spec) __attribute__((annotate("ag.signature=" spec)))
#define AG_ALIAS(name) __attribute__((annotate("ag.alias=" name)))
#define AG_BFLOAT16 __attribute__((annotate("ag.bfloat16")))
#define AG_JIT_COMPILE __attribute__((annotate("ag.jit_compile")))
#else
#define AG_FUNCTION
#define AG_SIGNATURE(spec)
#define AG_ALIAS(name)
#define AG_BFLOAT16
#define AG_JIT_COMPILE
#endif

#if defined(__GNUC__) || defined(__clang__)
#define AG_WARN_UNUSED_RESULT __attribute__((warn_unused_result))
#else
#define AG_WARN_UNUSED_RESULT
#endif

/* ------------------------------------------------------ weak operands */

/*
 * Binary ops accept a tensor or a plain C number for either operand. A C
 * number is weakly typed: it takes the dtype of the tensor operand (when
 * both are numbers, an integer becomes i32 and a floating number f32).
 */
typedef enum ag_operand_kind {
    AG_OPERAND_TENSOR,
    AG_OPERAND_INT,
    AG_OPERAND_FLOAT,
    AG_OPERAND_BOOL
} ag_operand_kind;

typedef struct ag_operand {
    ag_operand_kind kind;
    ag_tensor tensor;
    int64_t i;
    double f;
} ag_operand;

static inline ag_operand ag__tensor_operand(ag_tensor t)
{
    ag_operand o = {AG_OPERAND_TENSOR, t, 0, 0.0};
    return o;
}
static inline ag_operand ag__int_operand(long long v)
{
    ag_operand o = {AG_OPERAND_INT, {0, 0}, (int64_t)v, (double)v};
    return o;
}
static inline ag_operand ag__float_operand(double v)
{
    ag_operand o = {AG_OPERAND_FLOAT, {0, 0}, (int64_t)v, v};
    return o;
}
static inline ag_operand ag__bool_operand(_Bool v)
{
    ag_operand o = {AG_OPERAND_BOOL, {0, 0}, v, v};
    return o;
}

/* The conversion that AG_OPERAND applies to an operand of x's type. */
#define AG__OPERAND_FN(x) _Generic((x),        \
    ag_tensor: ag__tensor_operand,             \
    _Bool: ag__bool_operand,                   \
    char: ag__int_operand,                     \
    signed char: ag__int_operand,              \
    unsigned char: ag__int_operand,            \
    short: ag__int_operand,                    \
    unsigned short: ag__int_operand,           \
    int: ag__int_operand,                      \
    unsigned: ag__int_operand,                 \
    long: ag__int_operand,                     \
    unsigned long: ag__int_operand,            \
    long long: ag__int_operand,                \
    unsigned long long: ag__int_operand,       \
    float: ag__float_operand,                  \
    double: ag__float_operand)

/*
 * AG_OPERAND(x) must expand x once: the ops nest (a polynomial in Horner
 * form is ag_add(ag_mul(ag_add(ag_mul(...)))), and a macro that copies its
 * operand doubles the text at every level, 2^depth in all. Standard C11
 * has no way to name an expression's type and use its value with one copy
 * of it, so:
 *   - clang: overloaded functions (its `overloadable` extension of C)
 *     choose the conversion by the operand's type, as _Generic would;
 *   - gcc: a statement expression keeps the value in a variable of the
 *     operand's type (__auto_type), and _Generic looks at the variable;
 *   - any other C11 compiler: _Generic on a copy of the operand (not
 *     evaluated), then the call on the operand: exponential, but standard.
 * Every path gives the same conversion for every type.
 */
#if defined(__clang__) && !defined(__cplusplus)
#define AG__OVERLOAD static inline __attribute__((overloadable))
AG__OVERLOAD ag_operand ag__operand(ag_tensor v) { return ag__tensor_operand(v); }
AG__OVERLOAD ag_operand ag__operand(_Bool v) { return ag__bool_operand(v); }
AG__OVERLOAD ag_operand ag__operand(char v) { return ag__int_operand(v); }
AG__OVERLOAD ag_operand ag__operand(signed char v) { return ag__int_operand(v); }
AG__OVERLOAD ag_operand ag__operand(unsigned char v) { return ag__int_operand(v); }
AG__OVERLOAD ag_operand ag__operand(short v) { return ag__int_operand(v); }
AG__OVERLOAD ag_operand ag__operand(unsigned short v) { return ag__int_operand(v); }
AG__OVERLOAD ag_operand ag__operand(int v) { return ag__int_operand(v); }
AG__OVERLOAD ag_operand ag__operand(unsigned v) { return ag__int_operand((long long)v); }
AG__OVERLOAD ag_operand ag__operand(long v) { return ag__int_operand(v); }
AG__OVERLOAD ag_operand ag__operand(unsigned long v) { return ag__int_operand((long long)v); }
AG__OVERLOAD ag_operand ag__operand(long long v) { return ag__int_operand(v); }
AG__OVERLOAD ag_operand ag__operand(unsigned long long v)
{
    return ag__int_operand((long long)v);
}
AG__OVERLOAD ag_operand ag__operand(float v) { return ag__float_operand(v); }
AG__OVERLOAD ag_operand ag__operand(double v) { return ag__float_operand(v); }
#define AG_OPERAND(x) ag__operand(x)
#elif defined(__GNUC__) && !defined(__cplusplus)
/* the variable's name is unique (__COUNTER__), so that nested operands
 * never shadow each other (-Wshadow) */
#define AG_OPERAND(x) AG__OPERAND_ONCE(x, AG__CAT(ag__operand_, __COUNTER__))
#define AG__OPERAND_ONCE(x, v) \
    __extension__({ __auto_type v = (x); AG__OPERAND_FN(v)(v); })
#else
#define AG_OPERAND(x) AG__OPERAND_FN(x)(x)
#endif

/* ------------------------------------------------------- making tensors */

ag_tensor ag_scalar_at(ag_loc loc, ag_dtype dt, double v);
ag_tensor ag_scalar_i64_at(ag_loc loc, int64_t v); /* exact for all int64 */
ag_tensor ag_from_data_at(ag_loc loc, ag_dtype dt, ag_shape s, const void *data);
ag_tensor ag_fill_at(ag_loc loc, ag_dtype dt, ag_shape s, double v);
ag_tensor ag_fill_like_at(ag_loc loc, ag_tensor t, double v);
ag_tensor ag_eye_at(ag_loc loc, int64_t n, ag_dtype dt);
ag_tensor ag_range_at(ag_loc loc, ag_operand start, ag_operand limit, ag_operand delta);
ag_tensor ag_random_uniform_at(ag_loc loc, ag_shape s, double lo, double hi,
                               ag_dtype dt, uint64_t seed);

#define ag_scalar_f32(v) ag_scalar_at(AG_HERE, AG_F32, (double)(v))
#define ag_scalar_f64(v) ag_scalar_at(AG_HERE, AG_F64, (double)(v))
#define ag_scalar_bf16(v) ag_scalar_at(AG_HERE, AG_BF16, (double)(v))
#define ag_scalar_i32(v) ag_scalar_at(AG_HERE, AG_I32, (double)(int32_t)(v))
#define ag_scalar_i64(v) ag_scalar_i64_at(AG_HERE, (int64_t)(v))
#define ag_scalar_bool(v) ag_scalar_at(AG_HERE, AG_BOOL, (v) ? 1.0 : 0.0)
#define ag_scalar(dt, v) ag_scalar_at(AG_HERE, (dt), (double)(v))
#define ag_from_data(dt, s, data) ag_from_data_at(AG_HERE, (dt), (s), (data))
#define ag_zeros(dt, s) ag_fill_at(AG_HERE, (dt), (s), 0.0)
#define ag_ones(dt, s) ag_fill_at(AG_HERE, (dt), (s), 1.0)
#define ag_fill(dt, s, v) ag_fill_at(AG_HERE, (dt), (s), (double)(v))
#define ag_zeros_like(t) ag_fill_like_at(AG_HERE, (t), 0.0)
#define ag_ones_like(t) ag_fill_like_at(AG_HERE, (t), 1.0)
#define ag_eye(n, dt) ag_eye_at(AG_HERE, (n), (dt))
#define ag_range(start, limit, delta) \
    ag_range_at(AG_HERE, AG_OPERAND(start), AG_OPERAND(limit), AG_OPERAND(delta))
#define ag_random_uniform(s, lo, hi, dt, seed) \
    ag_random_uniform_at(AG_HERE, (s), (lo), (hi), (dt), (seed))

/* ------------------------------------------------------------------ ops */

/* Binary elementwise ops, broadcasting like NumPy. (These lists are the
 * op table's API_BINARY and API_UNARY rows; the library's build checks
 * that they agree.) */
#define AG__BINARY_OPS(X)                                                 \
    X(add) X(sub) X(mul) X(div) X(floordiv) X(mod) X(pow) X(maximum)      \
    X(minimum) X(equal) X(not_equal) X(less) X(less_equal) X(greater)     \
    X(greater_equal) X(logical_and) X(logical_or)

/* Unary ops: elementwise, then shape_of and size (declared here, with
 * their macros under shape manipulation). */
#define AG__UNARY_OPS(X)                                                  \
    X(neg) X(abs) X(exp) X(log) X(sqrt) X(rsqrt) X(square) X(tanh)        \
    X(sigmoid) X(relu) X(floor) X(ceil) X(sign) X(logical_not)            \
    X(shape_of) X(size)

#define AG__DECLARE_BINARY(name) \
    ag_tensor ag_##name##_at(ag_loc loc, ag_operand a, ag_operand b);
#define AG__DECLARE_UNARY(name) ag_tensor ag_##name##_at(ag_loc loc, ag_tensor x);
AG__BINARY_OPS(AG__DECLARE_BINARY)
AG__UNARY_OPS(AG__DECLARE_UNARY)
#undef AG__DECLARE_BINARY
#undef AG__DECLARE_UNARY

#define ag_add(a, b) ag_add_at(AG_HERE, AG_OPERAND(a), AG_OPERAND(b))
#define ag_sub(a, b) ag_sub_at(AG_HERE, AG_OPERAND(a), AG_OPERAND(b))
#define ag_mul(a, b) ag_mul_at(AG_HERE, AG_OPERAND(a), AG_OPERAND(b))
#define ag_div(a, b) ag_div_at(AG_HERE, AG_OPERAND(a), AG_OPERAND(b))
#define ag_floordiv(a, b) ag_floordiv_at(AG_HERE, AG_OPERAND(a), AG_OPERAND(b))
#define ag_mod(a, b) ag_mod_at(AG_HERE, AG_OPERAND(a), AG_OPERAND(b))
#define ag_pow(a, b) ag_pow_at(AG_HERE, AG_OPERAND(a), AG_OPERAND(b))
#define ag_maximum(a, b) ag_maximum_at(AG_HERE, AG_OPERAND(a), AG_OPERAND(b))
#define ag_minimum(a, b) ag_minimum_at(AG_HERE, AG_OPERAND(a), AG_OPERAND(b))
#define ag_equal(a, b) ag_equal_at(AG_HERE, AG_OPERAND(a), AG_OPERAND(b))
#define ag_not_equal(a, b) ag_not_equal_at(AG_HERE, AG_OPERAND(a), AG_OPERAND(b))
#define ag_less(a, b) ag_less_at(AG_HERE, AG_OPERAND(a), AG_OPERAND(b))
#define ag_less_equal(a, b) ag_less_equal_at(AG_HERE, AG_OPERAND(a), AG_OPERAND(b))
#define ag_greater(a, b) ag_greater_at(AG_HERE, AG_OPERAND(a), AG_OPERAND(b))
#define ag_greater_equal(a, b) \
    ag_greater_equal_at(AG_HERE, AG_OPERAND(a), AG_OPERAND(b))
#define ag_logical_and(a, b) ag_logical_and_at(AG_HERE, AG_OPERAND(a), AG_OPERAND(b))
#define ag_logical_or(a, b) ag_logical_or_at(AG_HERE, AG_OPERAND(a), AG_OPERAND(b))

#define ag_neg(x) ag_neg_at(AG_HERE, (x))
#define ag_abs(x) ag_abs_at(AG_HERE, (x))
#define ag_exp(x) ag_exp_at(AG_HERE, (x))
#define ag_log(x) ag_log_at(AG_HERE, (x))
#define ag_sqrt(x) ag_sqrt_at(AG_HERE, (x))
#define ag_rsqrt(x) ag_rsqrt_at(AG_HERE, (x))
#define ag_square(x) ag_square_at(AG_HERE, (x))
#define ag_tanh(x) ag_tanh_at(AG_HERE, (x))
#define ag_sigmoid(x) ag_sigmoid_at(AG_HERE, (x))
#define ag_relu(x) ag_relu_at(AG_HERE, (x))
#define ag_floor(x) ag_floor_at(AG_HERE, (x))
#define ag_ceil(x) ag_ceil_at(AG_HERE, (x))
#define ag_sign(x) ag_sign_at(AG_HERE, (x))
#define ag_logical_not(x) ag_logical_not_at(AG_HERE, (x))

/* where(cond, a, b): a where cond is true, else b; all three broadcast. */
ag_tensor ag_where_at(ag_loc loc, ag_tensor cond, ag_operand a, ag_operand b);
#define ag_where(c, a, b) ag_where_at(AG_HERE, (c), AG_OPERAND(a), AG_OPERAND(b))

ag_tensor ag_cast_at(ag_loc loc, ag_tensor t, ag_dtype dt);
#define ag_cast(t, dt) ag_cast_at(AG_HERE, (t), (dt))

/* Reductions over one axis (negative counts from the end) or all of them. */
#define AG_ALL_AXES INT32_MIN
ag_tensor ag_reduce_sum_at(ag_loc loc, ag_tensor t, int axis, bool keepdims);
ag_tensor ag_reduce_mean_at(ag_loc loc, ag_tensor t, int axis, bool keepdims);
ag_tensor ag_reduce_max_at(ag_loc loc, ag_tensor t, int axis, bool keepdims);
ag_tensor ag_reduce_min_at(ag_loc loc, ag_tensor t, int axis, bool keepdims);
ag_tensor ag_reduce_prod_at(ag_loc loc, ag_tensor t, int axis, bool keepdims);
/* Of a bool tensor: whether any / every element is true (over an empty
 * axis: false / true). They turn a bool tensor into a condition. */
ag_tensor ag_reduce_any_at(ag_loc loc, ag_tensor t, int axis, bool keepdims);
ag_tensor ag_reduce_all_at(ag_loc loc, ag_tensor t, int axis, bool keepdims);
ag_tensor ag_argmax_at(ag_loc loc, ag_tensor t, int axis); /* gives i64 */
#define ag_reduce_sum(t, axis, keep) ag_reduce_sum_at(AG_HERE, (t), (axis), (keep))
#define ag_reduce_mean(t, axis, keep) ag_reduce_mean_at(AG_HERE, (t), (axis), (keep))
#define ag_reduce_max(t, axis, keep) ag_reduce_max_at(AG_HERE, (t), (axis), (keep))
#define ag_reduce_min(t, axis, keep) ag_reduce_min_at(AG_HERE, (t), (axis), (keep))
#define ag_reduce_prod(t, axis, keep) ag_reduce_prod_at(AG_HERE, (t), (axis), (keep))
#define ag_reduce_any(t, axis, keep) ag_reduce_any_at(AG_HERE, (t), (axis), (keep))
#define ag_reduce_all(t, axis, keep) ag_reduce_all_at(AG_HERE, (t), (axis), (keep))
#define ag_argmax(t, axis) ag_argmax_at(AG_HERE, (t), (axis))

/* Linear algebra and neural-network ops. */
typedef enum ag_padding { AG_VALID = 0, AG_SAME = 1 } ag_padding;
ag_tensor ag_matmul_at(ag_loc loc, ag_tensor a, ag_tensor b);
ag_tensor ag_conv2d_at(ag_loc loc, ag_tensor x, ag_tensor filter, int stride_h,
                       int stride_w, ag_padding padding);
ag_tensor ag_softmax_at(ag_loc loc, ag_tensor t, int axis);
#define ag_matmul(a, b) ag_matmul_at(AG_HERE, (a), (b))
#define ag_conv2d(x, f, sh, sw, pad) ag_conv2d_at(AG_HERE, (x), (f), (sh), (sw), (pad))
#define ag_softmax(t, axis) ag_softmax_at(AG_HERE, (t), (axis))

/*
 * Quantized ops (docs/quantization.md). Scales are f32 tensors and zero
 * points i32 tensors; they broadcast against the first operand (a scalar,
 * or one value per channel along the last axis).
 *   ag_quantize:   f32 x -> i8, clamp(round(x / scale) + zero_point)
 *   ag_dequantize: i8 (or i32 sums) q -> f32, (q - zero_point) * scale
 *   ag_qmatmul:    i8 [M,K] x i8 [K,N] -> i32 [M,N], sum (a - a_zero) * b
 *   ag_qconv2d:    conv2d's geometry on i8 NHWC x and HWIO f -> i32
 *   ag_requantize: i32 sums -> i8, clamp(zero_point + round(acc *
 *                  multiplier), lo, hi); lo = zero_point folds a relu
 * Rounding is half away from zero; the integer results are the same bits
 * on every target.
 */
ag_tensor ag_quantize_at(ag_loc loc, ag_tensor x, ag_tensor scale, ag_tensor zero_point);
ag_tensor ag_dequantize_at(ag_loc loc, ag_tensor q, ag_tensor scale, ag_tensor zero_point);
ag_tensor ag_qmatmul_at(ag_loc loc, ag_tensor a, ag_tensor b, ag_tensor a_zero_point);
ag_tensor ag_qconv2d_at(ag_loc loc, ag_tensor x, ag_tensor filter, ag_tensor x_zero_point,
                        int stride_h, int stride_w, ag_padding padding);
ag_tensor ag_requantize_at(ag_loc loc, ag_tensor acc, ag_tensor multiplier,
                           ag_tensor zero_point, int lo, int hi);
#define ag_quantize(x, s, z) ag_quantize_at(AG_HERE, (x), (s), (z))
#define ag_dequantize(q, s, z) ag_dequantize_at(AG_HERE, (q), (s), (z))
#define ag_qmatmul(a, b, z) ag_qmatmul_at(AG_HERE, (a), (b), (z))
#define ag_qconv2d(x, f, z, sh, sw, pad) ag_qconv2d_at(AG_HERE, (x), (f), (z), (sh), (sw), (pad))
#define ag_requantize(acc, m, z, lo, hi) ag_requantize_at(AG_HERE, (acc), (m), (z), (lo), (hi))

/* Shape manipulation. */
ag_tensor ag_reshape_at(ag_loc loc, ag_tensor t, ag_shape s);
ag_tensor ag_transpose_at(ag_loc loc, ag_tensor t, int n, const int *perm);
ag_tensor ag_concat_at(ag_loc loc, int axis, int n, const ag_tensor *ts);
ag_tensor ag_stack_at(ag_loc loc, int axis, int n, const ag_tensor *ts);
ag_tensor ag_slice_at(ag_loc loc, ag_tensor t, ag_shape begin, ag_shape size);
ag_tensor ag_gather_at(ag_loc loc, ag_tensor t, ag_tensor indices, int axis);
ag_tensor ag_expand_dims_at(ag_loc loc, ag_tensor t, int axis);
ag_tensor ag_squeeze_at(ag_loc loc, ag_tensor t, int axis);
ag_tensor ag_one_hot_at(ag_loc loc, ag_tensor indices, int64_t depth);
#define ag_reshape(t, s) ag_reshape_at(AG_HERE, (t), (s))
/* ag_transpose(t, 1, 0): the permutation is listed after the tensor;
 * ag_transpose(t) reverses the axes, TensorFlow's default. (The tensor is
 * part of __VA_ARGS__, so an empty permutation is counted as 0 entries
 * and the array is never empty; ag_transpose_at reads only n of them.)
 * ag_transpose_at with n == 0 means that default, too. */
#define ag_transpose(...)                                                    \
    ag_transpose_at(AG_HERE, (AG__FIRST(__VA_ARGS__, 0)),                    \
                    AG__NARGS(__VA_ARGS__) - 1,                              \
                    (const int[]){AG__REST(__VA_ARGS__, 0)})
#define AG__FIRST(x, ...) x
#define AG__REST(x, ...) __VA_ARGS__
#define ag_concat(axis, n, ts) ag_concat_at(AG_HERE, (axis), (n), (ts))
#define ag_stack(axis, n, ts) ag_stack_at(AG_HERE, (axis), (n), (ts))
/* size -1 takes everything from begin to the end of that axis. */
#define ag_slice(t, begin, size) ag_slice_at(AG_HERE, (t), (begin), (size))
#define ag_gather(t, idx, axis) ag_gather_at(AG_HERE, (t), (idx), (axis))
#define ag_expand_dims(t, axis) ag_expand_dims_at(AG_HERE, (t), (axis))
/* axis AG_ALL_AXES removes every dim of size 1. */
#define ag_squeeze(t, axis) ag_squeeze_at(AG_HERE, (t), (axis))
#define ag_shape_of(t) ag_shape_of_at(AG_HERE, (t))
#define ag_size(t) ag_size_at(AG_HERE, (t))
#define ag_one_hot(idx, depth) ag_one_hot_at(AG_HERE, (idx), (depth))

/* ------------------------------------------------------ reading values */

ag_dtype ag_dtype_of(ag_tensor t);
ag_shape ag_shape_get(ag_tensor t);
int ag_rank(ag_tensor t);
int64_t ag_num_elements(ag_tensor t);
const void *ag_data_at(ag_loc loc, ag_tensor t);
float ag_get_f32_at(ag_loc loc, ag_tensor t, int64_t i);
double ag_get_f64_at(ag_loc loc, ag_tensor t, int64_t i);
int32_t ag_get_i32_at(ag_loc loc, ag_tensor t, int64_t i);
int64_t ag_get_i64_at(ag_loc loc, ag_tensor t, int64_t i);
double ag_item_f64_at(ag_loc loc, ag_tensor t);
#define ag_data(t) ag_data_at(AG_HERE, (t))
#define ag_get_f32(t, i) ag_get_f32_at(AG_HERE, (t), (i))
#define ag_get_f64(t, i) ag_get_f64_at(AG_HERE, (t), (i))
#define ag_get_i32(t, i) ag_get_i32_at(AG_HERE, (t), (i))
#define ag_get_i64(t, i) ag_get_i64_at(AG_HERE, (t), (i))
#define ag_item_f64(t) ag_item_f64_at(AG_HERE, (t))

const char *ag_dtype_name(ag_dtype dt); /* "f32", "i32", ... */
bool ag_shape_equal(ag_shape a, ag_shape b);

/* bfloat16 conversions: round to nearest even, NaN stays a quiet NaN. */
uint16_t ag_f32_to_bf16(float f);
float ag_bf16_to_f32(uint16_t b);

/* ----------------------------------------------------- control flow */

/* t: a scalar; true when non-zero. Conditions containing ag_bool are
 * staged by agc. */
bool ag_bool_at(ag_loc loc, ag_tensor t);
#define ag_bool(t) ag_bool_at(AG_HERE, (t))

/* ----------------------------------------------------- side effects */

/* One argument of ag_print: a string (text != NULL) or a tensor. */
typedef struct ag_print_arg {
    const char *text;
    ag_tensor tensor;
} ag_print_arg;

static inline ag_print_arg ag__print_text(const char *s)
{
    ag_print_arg a = {s ? s : "(null)", {0, 0}};
    return a;
}
static inline ag_print_arg ag__print_tensor(ag_tensor t)
{
    ag_print_arg a = {NULL, t};
    return a;
}
#define AG__PRINT_ARG_FN(x) _Generic((x), \
    ag_tensor: ag__print_tensor,          \
    char *: ag__print_text,               \
    const char *: ag__print_text)
/* Each argument expanded once, as AG_OPERAND does (and for its reasons). */
#if defined(__clang__) && !defined(__cplusplus)
AG__OVERLOAD ag_print_arg ag__print_arg(ag_tensor v) { return ag__print_tensor(v); }
AG__OVERLOAD ag_print_arg ag__print_arg(const char *v) { return ag__print_text(v); }
#define AG__PRINT_ARG(x) ag__print_arg(x)
#elif defined(__GNUC__) && !defined(__cplusplus)
#define AG__PRINT_ARG(x) AG__PRINT_ARG_ONCE(x, AG__CAT(ag__print_arg_, __COUNTER__))
#define AG__PRINT_ARG_ONCE(x, v) \
    __extension__({ __auto_type v = (x); AG__PRINT_ARG_FN(v)(v); })
#else
#define AG__PRINT_ARG(x) AG__PRINT_ARG_FN(x)(x)
#endif

void ag_print_at(ag_loc loc, int n, const ag_print_arg *args);
/* ag_print("x =", x): strings and tensors, space-separated, then newline. */
#define ag_print(...) ag_print_at(AG_HERE, AG__NARGS(__VA_ARGS__), \
    (const ag_print_arg[]){AG__MAP(AG__PRINT_ARG, __VA_ARGS__)})
void ag_set_print_stream(FILE *out); /* NULL means stdout */

void ag_assert_at(ag_loc loc, ag_tensor cond, const char *message);
#define ag_assert(cond, message) ag_assert_at(AG_HERE, (cond), (message))

/* ----------------------------------------- variables and tensor arrays */

ag_variable ag_variable_new_at(ag_loc loc, ag_tensor init);
ag_tensor ag_variable_read_at(ag_loc loc, ag_variable v);
void ag_assign_at(ag_loc loc, ag_variable v, ag_tensor value);
void ag_assign_add_at(ag_loc loc, ag_variable v, ag_tensor value);
void ag_assign_sub_at(ag_loc loc, ag_variable v, ag_tensor value);
void ag_variable_free_at(ag_loc loc, ag_variable v);
#define ag_variable_free(v) ag_variable_free_at(AG_HERE, (v))
#define ag_variable_new(init) ag_variable_new_at(AG_HERE, (init))
#define ag_variable_read(v) ag_variable_read_at(AG_HERE, (v))
#define ag_assign(v, value) ag_assign_at(AG_HERE, (v), (value))
#define ag_assign_add(v, value) ag_assign_add_at(AG_HERE, (v), (value))
#define ag_assign_sub(v, value) ag_assign_sub_at(AG_HERE, (v), (value))

ag_tensor_array ag_tensor_array_new_at(ag_loc loc, ag_dtype dt, int64_t size,
                                       bool dynamic_size);
AG_WARN_UNUSED_RESULT ag_tensor_array ag_tensor_array_write_at(
    ag_loc loc, ag_tensor_array ta, ag_operand index, ag_tensor value);
ag_tensor ag_tensor_array_read_at(ag_loc loc, ag_tensor_array ta, ag_operand index);
ag_tensor ag_tensor_array_stack_at(ag_loc loc, ag_tensor_array ta);
ag_tensor ag_tensor_array_size_at(ag_loc loc, ag_tensor_array ta);
#define ag_tensor_array_new(dt, size, dyn) \
    ag_tensor_array_new_at(AG_HERE, (dt), (size), (dyn))
#define ag_tensor_array_write(ta, idx, value) \
    ag_tensor_array_write_at(AG_HERE, (ta), AG_OPERAND(idx), (value))
#define ag_tensor_array_read(ta, idx) \
    ag_tensor_array_read_at(AG_HERE, (ta), AG_OPERAND(idx))
#define ag_tensor_array_stack(ta) ag_tensor_array_stack_at(AG_HERE, (ta))
#define ag_tensor_array_size(ta) ag_tensor_array_size_at(AG_HERE, (ta))

/* ----------------------------------------------------- gradient tapes */

/*
 * Reverse-mode gradients, as tf.GradientTape. A tape records, from
 * ag_tape_new until ag_tape_free, the ops of this thread that use a value
 * it follows: variables read meanwhile (automatically), tensors given to
 * ag_tape_watch, and every result of an op it recorded. Inside an
 * AG_FUNCTION the recorded ops are graph nodes, and the gradient's ops
 * join the same graph. A tape gives gradients once, unless made
 * persistent. The target may have any shape: its gradient is that of its
 * sum. A source the target does not depend on through differentiable ops
 * is "unconnected": its gradient is the null tensor (ag_is_null), or zeros
 * after ag_tape_set_unconnected(t, AG_UNCONNECTED_ZERO). Gradients are of
 * float tensors only. Another live tape records a tape's gradient
 * computation, which gives gradients of gradients.
 */
typedef struct ag_tape_s *ag_tape;
typedef enum ag_unconnected {
    AG_UNCONNECTED_NONE, /* the null tensor (tf: UnconnectedGradients.NONE) */
    AG_UNCONNECTED_ZERO  /* zeros of the source's shape (tf: ZERO) */
} ag_unconnected;

ag_tape ag_tape_new_at(ag_loc loc);
ag_tape ag_tape_new_persistent_at(ag_loc loc);
void ag_tape_watch_at(ag_loc loc, ag_tape t, ag_tensor x);
void ag_tape_set_unconnected_at(ag_loc loc, ag_tape t, ag_unconnected u);
ag_tensor ag_tape_gradient_at(ag_loc loc, ag_tape t, ag_tensor target, ag_tensor source);
ag_tensor ag_tape_gradient_variable_at(ag_loc loc, ag_tape t, ag_tensor target,
                                       ag_variable v);
/* Every source's gradient at once (what a non-persistent tape needs for
 * several sources): grads[i] for sources[i] (or vars[i]). False after
 * reporting an error. */
bool ag_tape_gradients_at(ag_loc loc, ag_tape t, ag_tensor target, int n,
                          const ag_tensor *sources, ag_tensor *grads);
bool ag_tape_gradients_variables_at(ag_loc loc, ag_tape t, ag_tensor target, int n,
                                    const ag_variable *vars, ag_tensor *grads);
void ag_tape_free_at(ag_loc loc, ag_tape t);
/* Whether t is the null tensor (an unconnected gradient), not an error. */
bool ag_is_null(ag_tensor t);

#define ag_tape_new() ag_tape_new_at(AG_HERE)
#define ag_tape_new_persistent() ag_tape_new_persistent_at(AG_HERE)
#define ag_tape_watch(t, x) ag_tape_watch_at(AG_HERE, (t), (x))
#define ag_tape_set_unconnected(t, u) ag_tape_set_unconnected_at(AG_HERE, (t), (u))
#define ag_tape_gradient(t, target, source) \
    ag_tape_gradient_at(AG_HERE, (t), (target), (source))
#define ag_tape_gradient_variable(t, target, v) \
    ag_tape_gradient_variable_at(AG_HERE, (t), (target), (v))
#define ag_tape_gradients(t, target, n, sources, grads) \
    ag_tape_gradients_at(AG_HERE, (t), (target), (n), (sources), (grads))
#define ag_tape_gradients_variables(t, target, n, vars, grads) \
    ag_tape_gradients_variables_at(AG_HERE, (t), (target), (n), (vars), (grads))
#define ag_tape_free(t) ag_tape_free_at(AG_HERE, (t))

/*
 * Checks a function's gradients as tf.test.compute_gradient does: the
 * tape's gradient of sum(fn(inputs) * w) (w: fixed weights in [0.5, 1.5))
 * with respect to every float input, against central finite differences
 * evaluated in f64 (fn is called with f64 copies of the float inputs, so
 * it must accept them: write its constants as C numbers). result gets
 * the largest error |analytic - numeric| / (1 + |numeric|) and where it
 * is. False after reporting an error (fn failed, bad arguments).
 */
typedef ag_tensor (*ag_check_fn)(void *ctx, const ag_tensor *inputs);
typedef struct ag_gradient_check {
    double max_error;      /* the largest error; 0 when every one is exact */
    int input;             /* where it is: the input, */
    int64_t element;       /* its element, */
    double analytic, numeric; /* and the two values compared there */
} ag_gradient_check;
bool ag_check_gradients_at(ag_loc loc, ag_check_fn fn, void *ctx, int n,
                           const ag_tensor *inputs, ag_gradient_check *result);
#define ag_check_gradients(fn, ctx, n, inputs, result) \
    ag_check_gradients_at(AG_HERE, (fn), (ctx), (n), (inputs), (result))

/* ----------------------------------------------------------- optimizers */

/*
 * Keras's optimizers (docs/dsl.md "Optimizers"): apply updates variables
 * from gradients with ops, so the update runs eagerly or is traced into
 * the graph of an AG_FUNCTION (a training step). Slot variables (SGD's
 * momentum, Adam's moments, the step count) are made on the first apply,
 * one set per variable; ag_optimizer_free frees them. An ag_optimizer may
 * be a parameter of an AG_FUNCTION: it is part of the trace key by
 * identity, as a Python object passed to tf.function is.
 */
typedef struct ag_optimizer_s *ag_optimizer;

/* Keras's defaults (tf.keras.optimizers.SGD, Adam, AdamW). */
#define AG_SGD_LEARNING_RATE 0.01
#define AG_ADAM_LEARNING_RATE 0.001
#define AG_ADAM_BETA_1 0.9
#define AG_ADAM_BETA_2 0.999
#define AG_ADAM_EPSILON 1e-7
#define AG_ADAMW_WEIGHT_DECAY 0.004

ag_optimizer ag_optimizer_sgd_at(ag_loc loc, double learning_rate, double momentum,
                                 bool nesterov);
ag_optimizer ag_optimizer_adam_at(ag_loc loc, double learning_rate, double beta_1,
                                  double beta_2, double epsilon);
ag_optimizer ag_optimizer_adamw_at(ag_loc loc, double learning_rate, double beta_1,
                                   double beta_2, double epsilon, double weight_decay);
/* grads[i] updates vars[i]; a null gradient ({0}: unconnected) leaves its
 * variable alone (warned once per optimizer, as Keras warns for None). */
void ag_optimizer_apply_at(ag_loc loc, ag_optimizer o, int n, const ag_tensor *grads,
                           const ag_variable *vars);
void ag_optimizer_free_at(ag_loc loc, ag_optimizer o);
#define ag_optimizer_sgd(lr, momentum, nesterov) \
    ag_optimizer_sgd_at(AG_HERE, (lr), (momentum), (nesterov))
#define ag_optimizer_adam(lr, beta_1, beta_2, epsilon) \
    ag_optimizer_adam_at(AG_HERE, (lr), (beta_1), (beta_2), (epsilon))
#define ag_optimizer_adamw(lr, beta_1, beta_2, epsilon, weight_decay) \
    ag_optimizer_adamw_at(AG_HERE, (lr), (beta_1), (beta_2), (epsilon), (weight_decay))
/* The same with Keras's defaults for everything but the learning rate. */
#define ag_optimizer_adam_default(lr) \
    ag_optimizer_adam_at(AG_HERE, (lr), AG_ADAM_BETA_1, AG_ADAM_BETA_2, AG_ADAM_EPSILON)
#define ag_optimizer_adamw_default(lr)                                          \
    ag_optimizer_adamw_at(AG_HERE, (lr), AG_ADAM_BETA_1, AG_ADAM_BETA_2, AG_ADAM_EPSILON, \
                          AG_ADAMW_WEIGHT_DECAY)
#define ag_optimizer_apply(o, n, grads, vars) \
    ag_optimizer_apply_at(AG_HERE, (o), (n), (grads), (vars))
#define ag_optimizer_free(o) ag_optimizer_free_at(AG_HERE, (o))

/* ------------------------------------------- staged control flow (agc) */

/*
 * The entry points agc's generated code calls for control flow whose
 * condition is a tensor. `vars` point at the tensor (or tensor array .list)
 * variables the construct may change; `names` name them for messages.
 * Eagerly they run the C callbacks as ordinary control flow; while tracing
 * they trace each branch, or the loop condition and body once, into graph
 * regions. A variable that is still the zero handle is "undefined".
 */
typedef ag_tensor (*ag_cond_fn)(void *state);
typedef void (*ag_body_fn)(void *state);

void ag_if_at(ag_loc loc, ag_tensor pred, int n_vars, ag_tensor *const *vars,
              const char *const *names, ag_body_fn then_fn, ag_body_fn else_fn,
              void *state);
void ag_while_at(ag_loc loc, int n_vars, ag_tensor *const *vars,
                 const char *const *names, ag_cond_fn cond, ag_body_fn body,
                 void *state);

/* Relaxes the shape that a staged loop checks for the variable *var:
 * `invariant` may have -1 dims
 * (tf.autograph.experimental.set_loop_options(shape_invariants)). At the
 * top of a loop body it applies to that loop, elsewhere to the next staged
 * loop that carries the variable; the variable is known by its address or
 * its name (var_text is the argument as written, "&x"), never by the
 * tensor it holds. */
void ag_set_loop_options_at(ag_loc loc, const ag_tensor *var, const char *var_text,
                            ag_shape invariant);
#define ag_set_loop_options(var, invariant) \
    ag_set_loop_options_at(AG_HERE, (var), #var, (invariant))

/* --------------------------------------------- functions and concrete graphs */

/* One argument of a call to an AG_FUNCTION, as generated code passes it. */
typedef enum ag_arg_kind {
    AG_ARG_TENSOR,
    AG_ARG_TENSOR_ARRAY,
    AG_ARG_VARIABLE,
    AG_ARG_INT,   /* int, long, bool, enums: trace-time constants */
    AG_ARG_FLOAT, /* float, double: trace-time constants */
    AG_ARG_OPTIMIZER /* ag_optimizer: keyed by identity, as variables are */
} ag_arg_kind;

typedef struct ag_arg {
    ag_arg_kind kind;
    ag_tensor tensor; /* AG_ARG_TENSOR; AG_ARG_TENSOR_ARRAY: its .list */
    ag_variable variable;
    ag_optimizer optimizer; /* AG_ARG_OPTIMIZER */
    int64_t i;
    double f;
} ag_arg;

/* What agc generates for each AG_FUNCTION. `trace` runs the staged body on
 * args and stores its n_outputs results. */
typedef struct ag_function_desc {
    const char *name;
    const char *file;
    int line;
    int n_params;
    const char *const *param_names;
    const ag_arg_kind *param_kinds;
    const char *signature; /* AG_SIGNATURE text, or NULL */
    const char *alias;     /* AG_ALIAS text, or NULL */
    int n_outputs;
    void (*trace)(const ag_arg *args, ag_tensor *outputs);
    unsigned flags; /* AG_FN_*: what the annotations ask */
} ag_function_desc;

/* ag_function_desc.flags */
enum {
    AG_FN_BFLOAT16 = 1u << 0, /* AG_BFLOAT16: traced graphs are converted to bf16 */
    AG_FN_JIT_COMPILE = 1u << 1, /* AG_JIT_COMPILE: saved models mark it; agc-convert's
                                    jit_compile_functions selects it */
};

typedef struct ag_concrete_function ag_concrete_function;

/* Calls an AG_FUNCTION: finds or traces the concrete function for these
 * arguments and runs its graph. Returns false (outputs are error tensors)
 * after reporting an error. */
bool ag_function_call_at(ag_loc loc, const ag_function_desc *fn, const ag_arg *args,
                         ag_tensor *outputs);
/* Makes a function known by name before its first call (agc emits this). */
void ag_function_register(const ag_function_desc *fn);

int ag_function_trace_count(const char *name);
void ag_function_print_signatures(const char *name, FILE *out);
/* Traces (without running) the concrete function for spec, e.g.
 * "i32[10,10], y=100"; NULL after reporting an error. */
ag_concrete_function *ag_get_concrete_function_at(ag_loc loc, const char *name,
                                                  const char *spec);
#define ag_get_concrete_function(name, spec) \
    ag_get_concrete_function_at(AG_HERE, (name), (spec))
void ag_concrete_print_graph(const ag_concrete_function *cf, FILE *out);
int ag_concrete_num_nodes(const ag_concrete_function *cf);
/* Gives back what ag_get_concrete_function returned: the function stays
 * valid until then (or ag_shutdown), even if the cache evicts it. */
void ag_concrete_release_at(ag_loc loc, ag_concrete_function *cf);
#define ag_concrete_release(cf) ag_concrete_release_at(AG_HERE, (cf))
void ag_run_functions_eagerly(bool on); /* also: AG_RUN_FUNCTIONS_EAGERLY=1 */

/* The cache keeps at most this many concrete functions per AG_FUNCTION,
 * evicting the least recently used (a later call with its signature
 * traces again). n > 0 sets the bound, 0 removes it, a negative n goes
 * back to the environment's AG_MAX_CONCRETE_FUNCTIONS (default 64).
 * Lowering it evicts at once. */
void ag_set_max_concrete_functions(int n);
int ag_max_concrete_functions(void); /* the bound in effect; 0: none */
/* Concrete functions alive for the AG_FUNCTION `name`: those cached, and
 * those evicted but still running or held (ag_get_concrete_function).
 * NULL: for every function, 0 after ag_shutdown. */
int ag_function_concrete_count(const char *name);

/* The target that compiles and runs concrete functions traced from now
 * on: "cpu" (LLVM, the default) or "reference" (the interpreter), or any
 * target registered later. NULL goes back to the environment's choice
 * (AG_TARGET, or its older name AG_EXECUTOR). An unknown name is reported
 * with the list of targets and changes nothing (false). */
bool ag_set_target_at(ag_loc loc, const char *name);
#define ag_set_target(name) ag_set_target_at(AG_HERE, (name))
/* The name of the target new concrete functions get (NULL after
 * reporting a bad AG_TARGET). */
const char *ag_target(void);
/* The persistent compilation cache of the cpu target: compiled code is
 * stored in directory `dir` and loaded by later processes (or later
 * compiles) of the same optimized graph for the same CPU, agc and LLVM,
 * instead of compiling again. Entries are verified on load; a bad one is
 * ignored with a warning and replaced. NULL goes back to the
 * environment's AG_CACHE_DIR (unset: no cache); "" turns the cache off.
 * Takes effect for compiles from now on. */
void ag_set_cache_dir(const char *dir);
/* The cache directory in effect, or NULL when there is no cache (the
 * string is the calling thread's, valid until its next call). */
const char *ag_cache_dir(void);
/* Tiered execution: when a call's new signature compiles for a target
 * that may fall back to the reference executor (cpu), the compile can run
 * on a background thread while the reference executor runs the calls;
 * later calls switch to the compiled code once it is ready (the results
 * are the same). AG_JIT_SYNC waits for the compile at the first call,
 * AG_JIT_ASYNC never does, AG_JIT_AUTO (the default) compiles graphs of
 * 1,000 nodes or more in the background. AG_JIT_FROM_ENV goes back to
 * the environment's AG_JIT (auto, sync or async). Strict compiles
 * (AG_EXECUTOR=jit-strict) are always synchronous. */
typedef enum ag_jit_policy {
    AG_JIT_FROM_ENV = -1,
    AG_JIT_AUTO = 0,
    AG_JIT_SYNC = 1,
    AG_JIT_ASYNC = 2
} ag_jit_policy;
void ag_set_jit_policy(ag_jit_policy policy);
ag_jit_policy ag_get_jit_policy(void); /* the policy in force (never FROM_ENV) */
/* Waits until every background compile queued so far has ended. */
void ag_jit_wait(void);
/* Soft device placement, for device targets (tpu-model): ops the device
 * does not run (printing, assertions, variables, ...) run on the host,
 * with explicit transfers, instead of being errors. Overrides the
 * environment's AG_SOFT_DEVICE_PLACEMENT=1 for traces from now on. */
void ag_set_soft_device_placement(bool on);

/* What the last call on this thread cost on a target that models its
 * device (tpu-model): simulated time, busy cycles per unit, MXU
 * utilization, bytes moved. AG_PROFILE=1 prints the same per call. */
enum { AG_PROFILE_MAX_UNITS = 8 };
typedef struct ag_profile {
    char function[64];
    const char *target;
    double seconds;          /* the call, host transfers included */
    double device_seconds;   /* the device's own span */
    double roofline_seconds; /* max(flops / peak, HBM bytes / bandwidth) */
    int64_t cycles;
    int n_units;
    const char *unit_names[AG_PROFILE_MAX_UNITS];
    int64_t unit_busy_cycles[AG_PROFILE_MAX_UNITS];
    double mxu_utilization;  /* useful multiply-adds / peak over the call */
    int64_t host_bytes, host_padding_bytes, hbm_bytes;
} ag_profile;
/* False when no call on this thread has run on such a target yet. */
bool ag_last_profile(ag_profile *out);

/* The serialized tensorflow.tpu.TopologyProto of a TPU slice named by
 * its grid of chips, "AxB" or "AxBxC" ("1x1", "2x2", "2x4", "4x4", ...,
 * at most 256 chips, one core each as v5e), for the converter's
 * xla_sharding_options.topology (docs/converter-options.md;
 * `agc-convert --print-topology=2x2` prints it escaped). Returns its
 * length and writes at most cap bytes of it to out (out may be NULL when
 * cap is 0, to learn the length first); 0 when slice is no such grid. */
size_t ag_tpu_topology_serialize(const char *slice, void *out, size_t cap);

/* -------------------------------------------------------------------- bf16 */

/*
 * The bf16 conversion pass (docs/passes.md) from C. Its options for the
 * functions traced from now on (concrete functions already made keep
 * theirs): `enabled` converts every function, as AG_BF16=1 does (either
 * turns it on); `filterlist` names the ops kept in f32 (op names as in
 * the IR, "tanh,softmax", separated by commas; NULL or "" for none);
 * `scope` is "all" (NULL) or "tpu" (only nodes placed on the tpu-model);
 * `io` makes the function's own f32 parameters and results bf16 too (its
 * callers then pass bf16 tensors there); `skip_safety_checks` converts a
 * function that already computes in bf16; `elementwise` is "f32" (NULL:
 * elementwise ops compute in f32 between bf16 values, rounding once where
 * a bf16 value is needed) or "bf16" (each op's result rounds, as eager
 * bf16 code does). NULL restores the defaults. An unknown op, scope or
 * elementwise is reported and changes nothing (false).
 */
typedef struct ag_bf16_options {
    bool enabled;
    const char *filterlist;
    const char *scope;
    bool io;
    bool skip_safety_checks;
    const char *elementwise;
} ag_bf16_options;
bool ag_set_bf16_options_at(ag_loc loc, const ag_bf16_options *options);
#define ag_set_bf16_options(options) ag_set_bf16_options_at(AG_HERE, (options))

/* What converting a function to bf16 costs in accuracy on some inputs,
 * against its f32 graph: per output, the largest absolute and relative
 * error, and the op where the relative error grows most over its
 * operands' (the first candidate for the filterlist). */
enum { AG_BF16_REPORT_MAX_OUTPUTS = 16 };
typedef struct ag_bf16_report {
    int n_outputs;
    double max_abs[AG_BF16_REPORT_MAX_OUTPUTS]; /* largest |f32 - bf16| */
    double max_rel[AG_BF16_REPORT_MAX_OUTPUTS]; /* largest |f32 - bf16| / |f32| */
    char worst_op[32];     /* that op's name ("matmul"); "" when no op lost precision */
    char worst_file[256];  /* its source file and line ("", 0: unknown) */
    int worst_line;
    double worst_growth;   /* its relative error minus its operands' */
} ag_bf16_report;
/* Traces the AG_FUNCTION `name` (or AG_ALIAS; called or registered
 * before) for `inputs`, one tensor per parameter (every parameter must be
 * a tensor), converts a copy with the current bf16 options, runs both on
 * the reference executor and fills *out. False after reporting an error. */
bool ag_bf16_report_at(ag_loc loc, const char *name, const ag_tensor *inputs, int n_inputs,
                       ag_bf16_report *out);
#define ag_bf16_report(name, inputs, n_inputs, out) \
    ag_bf16_report_at(AG_HERE, (name), (inputs), (n_inputs), (out))

/* ---------------------------------------------------------------- batching */

/*
 * In-graph batching (TensorFlow's BatchFunction): calls from many threads
 * are queued, joined along dimension 0 of every input into batches, run
 * once per batch on batch threads, and each caller gets exactly its own
 * rows of every output back. docs/batching.md gives each option's
 * meaning, the shape rules and measurements. A zero field takes the
 * default noted.
 */
typedef struct ag_batch_options {
    int num_batch_threads;          /* threads running batches (0: 1) */
    int max_batch_size;             /* most rows in a batch (required, > 0) */
    int64_t batch_timeout_micros;   /* how long a batch waits for rows after
                                       its first request (0: no wait) */
    const int *allowed_batch_sizes; /* sizes a batch is padded up to: strictly
                                       increasing, the last max_batch_size */
    int n_allowed_batch_sizes;      /* 0: batches run at their own size */
    int max_enqueued_batches;       /* batches that may wait to run (0: 10); a
                                       request needing more fails at once */
    bool disable_large_batch_splitting; /* a request of more than
                                           max_batch_size rows is an error
                                           instead of split across batches */
} ag_batch_options;

typedef struct ag_batcher ag_batcher;

/* A batcher of the AG_FUNCTION `function` (its name or AG_ALIAS; called or
 * ag_function_register'ed before). Its inputs are the function's tensor
 * parameters in order, its outputs the function's results. `signature`
 * ("f32[?,4], i32[?]", `?` in dimension 0 of every tensor) is traced and
 * compiled once, now, on the selected target; NULL takes the function's
 * AG_SIGNATURE, or with none lets the function cache trace one concrete
 * function per batch size. NULL after reporting an error. */
ag_batcher *ag_batcher_new_at(ag_loc loc, const char *function, const char *signature,
                              const ag_batch_options *options);
#define ag_batcher_new(function, signature, options) \
    ag_batcher_new_at(AG_HERE, (function), (signature), (options))

/* What a batcher can run instead of an AG_FUNCTION: called on a batch
 * thread with n_inputs batched tensors, it stores n_outputs tensors whose
 * dimension 0 is that of the inputs, or returns false after reporting an
 * error (batch threads run in AG_ERRORS_RETURN mode). Tensors it makes
 * are freed after the batch. */
typedef bool (*ag_batch_fn)(void *state, const ag_tensor *inputs, ag_tensor *outputs);
ag_batcher *ag_batcher_new_fn_at(ag_loc loc, ag_batch_fn fn, void *state, int n_inputs,
                                 int n_outputs, const ag_batch_options *options);
#define ag_batcher_new_fn(fn, state, n_inputs, n_outputs, options) \
    ag_batcher_new_fn_at(AG_HERE, (fn), (state), (n_inputs), (n_outputs), (options))

/* Runs one request, from any thread: every input has the same number of
 * rows (dimension 0); blocks until its batch (or batches) ran and stores
 * its rows of every output, fresh tensors in the caller's scope. False,
 * with error tensors, after reporting an error (a full queue fails at once). */
bool ag_batcher_call_at(ag_loc loc, ag_batcher *b, const ag_tensor *inputs,
                        ag_tensor *outputs);
#define ag_batcher_call(b, inputs, outputs) \
    ag_batcher_call_at(AG_HERE, (b), (inputs), (outputs))

/* Stops taking requests (later calls fail with an error), runs the queued
 * ones at once and returns when every caller has its answer. */
void ag_batcher_close(ag_batcher *b);
/* ag_batcher_close, then stops the batch threads and frees b. No call may
 * start once it has begun (close first if other threads may still call).
 * ag_shutdown frees the batchers still alive. */
void ag_batcher_free(ag_batcher *b);

/* What a batcher has done so far. */
typedef struct ag_batch_stats {
    int64_t requests;     /* accepted */
    int64_t rejected;     /* failed at once: max_enqueued_batches were waiting */
    int64_t refused;      /* failed at the call for another reason (shapes, size, closed) */
    int64_t batches;      /* runs of the function */
    int64_t rows;         /* rows of requests in them */
    int64_t padding_rows; /* rows added to reach an allowed batch size */
    int64_t failed_batches;
    int64_t run_micros;   /* time the batches kept their threads (joining rows,
                             the function, handing rows back, waking the
                             callers, freeing the batch), summed */
    int waiting_batches;  /* now in the queue, not yet taken by a batch thread */
    /* A request's latency inside the batcher, from its arrival to its last
     * rows handed back (queueing, its batch's timeout and run), at the
     * median and the 99th percentile of the requests answered so far;
     * read from a histogram, at most 1/128 above the true figure. What a
     * caller sees adds the time its thread takes to get a CPU back. */
    int64_t latency_p50_micros, latency_p99_micros;
    /* Where that latency goes, at the same quantiles: a request's wait,
     * from its arrival to the start of the batch that answered it (the
     * batches ahead of it, and its batch's timeout), and a batch's run
     * (the time it kept its thread, as in run_micros). */
    int64_t wait_p50_micros, wait_p99_micros;
    int64_t run_p50_micros, run_p99_micros;
    /* Answered requests whose latency was more than batch_timeout_micros
     * plus two batches' run: their own batch's and the one its thread ran
     * before it (what a request that arrives while a batch runs waits
     * for). A scheduler that keeps up makes this a small part of
     * `requests`; requests split across batches, and load the threads
     * cannot keep up with (requests queued several batches deep) are
     * late by nature. */
    int64_t late;
} ag_batch_stats;
ag_batch_stats ag_batcher_stats(ag_batcher *b);

/* ------------------------------------------------ ahead-of-time functions */

/* ------------------------------------------------------------ saved models */

/*
 * A saved model (docs/saved-model.md) is a directory holding concrete
 * functions in the text IR, named signatures with named inputs and
 * outputs, function aliases and the variables' values; any program linked
 * with libag, and the agc-model and agc-convert tools, load and run it
 * without the C source.
 */
typedef struct ag_export_signature {
    const char *name;     /* "serving_default" */
    const char *function; /* an AG_FUNCTION's name or AG_ALIAS */
    const char *spec;     /* its input signature, "f32[?,784], n=3" (every
                             parameter); NULL: the function's AG_SIGNATURE */
    const char *const *input_names;  /* one per tensor parameter; NULL: the
                                        parameters' names */
    const char *const *output_names; /* one per output; NULL: output_0, ... */
} ag_export_signature;

typedef struct ag_function_alias {
    const char *alias;    /* "tpu_func" */
    const char *function; /* an AG_FUNCTION's name */
} ag_function_alias;

typedef struct ag_save_options {
    const ag_export_signature *signatures; /* at least one */
    int n_signatures;
    const ag_function_alias *aliases; /* besides the functions' AG_ALIAS */
    int n_aliases;
} ag_save_options;

/* Traces each signature's function (a function's first trace may make its
 * variables) and writes the model to `dir` atomically: into a new
 * directory beside it, renamed into place when complete, replacing an
 * older model there. False after reporting an error; `dir` is then as it
 * was. */
bool ag_saved_model_save_at(ag_loc loc, const char *dir, const ag_save_options *options);
#define ag_saved_model_save(dir, options) ag_saved_model_save_at(AG_HERE, (dir), (options))

typedef struct ag_saved_model ag_saved_model;

/* Reads and checks a model (every file's size and checksum); its
 * functions compile at their first call, for the target each names. NULL
 * after reporting what is wrong, naming the file. */
ag_saved_model *ag_saved_model_load_at(ag_loc loc, const char *dir);
#define ag_saved_model_load(dir) ag_saved_model_load_at(AG_HERE, (dir))
/* Frees the model, its compiled functions and its variables (ag_shutdown
 * frees the models still loaded). */
void ag_saved_model_free(ag_saved_model *m);

/* One input or output of a signature. */
typedef struct ag_tensor_spec {
    const char *name;
    ag_dtype dtype;
    ag_shape shape; /* -1: any size */
} ag_tensor_spec;

typedef struct ag_signature_def {
    const char *name;
    int n_inputs, n_outputs;
    const ag_tensor_spec *inputs, *outputs;
} ag_signature_def;

/* The model's signatures, in order; NULL past the end. */
const ag_signature_def *ag_model_signature_at_index(const ag_saved_model *m, int i);
/* The signature `name`; NULL after reporting that the model has none by
 * that name (listing those it has). */
const ag_signature_def *ag_model_signature_at(ag_loc loc, const ag_saved_model *m,
                                              const char *name);
#define ag_model_signature(m, name) ag_model_signature_at(AG_HERE, (m), (name))

typedef struct ag_named_tensor {
    const char *name;
    ag_tensor tensor;
} ag_named_tensor;

/* Calls the signature with every input by name (in any order). Fills
 * outputs[0..n_outputs) in the signature's order, names included; the
 * tensors are fresh, in the caller's scope. n_outputs must be the
 * signature's. False (outputs are error tensors) after reporting an
 * error: an unknown or missing input, a dtype or shape mismatch, a
 * failure while running. */
bool ag_model_call_at(ag_loc loc, ag_saved_model *m, const char *signature,
                      const ag_named_tensor *inputs, int n_inputs, ag_named_tensor *outputs,
                      int n_outputs);
#define ag_model_call(m, signature, inputs, n_inputs, outputs, n_outputs) \
    ag_model_call_at(AG_HERE, (m), (signature), (inputs), (n_inputs), (outputs), (n_outputs))

/*
 * A representative data set (docs/quantization.md) calibrates a model's
 * quantization: samples of a signature's inputs, in TensorFlow's format (a
 * TFRecord file of RepresentativeDataSample records, each input a
 * TensorProto with its tensor_content), so TensorFlow's tools read what
 * agc writes and agc reads what they write. A writer adds one sample at a
 * time: every input by name, concrete tensors of any dtype. The file is
 * written beside `path` and renamed into place at the close, which warns
 * when it holds fewer samples than the converter guide recommends (200).
 */
typedef struct ag_dataset_writer ag_dataset_writer;
/* NULL after reporting when the file cannot be made. */
ag_dataset_writer *ag_dataset_writer_open_at(ag_loc loc, const char *path);
#define ag_dataset_writer_open(path) ag_dataset_writer_open_at(AG_HERE, (path))
/* False after reporting: an input without a name, named twice, or not a
 * tensor; a write error. After a failed add the data set is not kept. */
bool ag_dataset_writer_add_at(ag_loc loc, ag_dataset_writer *w, const ag_named_tensor *inputs,
                              int n_inputs);
#define ag_dataset_writer_add(w, inputs, n_inputs) \
    ag_dataset_writer_add_at(AG_HERE, (w), (inputs), (n_inputs))
/* Puts the file in place and frees w; false (path then as it was) after
 * a failed add or reporting a write error. */
bool ag_dataset_writer_close_at(ag_loc loc, ag_dataset_writer *w);
#define ag_dataset_writer_close(w) ag_dataset_writer_close_at(AG_HERE, (w))
/* The whole data set at once: sample s's input i is
 * tensors[s * n_inputs + i], named names[i]. False after reporting. */
bool ag_representative_dataset_save_at(ag_loc loc, const char *path, int n_samples,
                                       int n_inputs, const char *const *names,
                                       const ag_tensor *tensors);
#define ag_representative_dataset_save(path, n_samples, n_inputs, names, tensors) \
    ag_representative_dataset_save_at(AG_HERE, (path), (n_samples), (n_inputs), (names), \
                                      (tensors))

/* `agc --emit=obj` compiles AG_FUNCTIONs into an object file whose C
 * functions have the user's prototypes (docs/agc.md). They call this:
 * tensors[i] holds tensor parameter i, scalars[i] C scalar parameter i
 * (integers as int64_t, floating point as the bits of a double). Programs
 * do not call it themselves. */
typedef struct ag_aot_function ag_aot_function;
bool ag_aot_call(ag_aot_function *fn, const ag_tensor *tensors, const int64_t *scalars,
                 ag_tensor *outputs);
/* The same, from the C function NAME_at(loc, ...) that the generated
 * header's macro NAME(...) calls with AG_HERE: a call that does not match
 * what was compiled is reported at loc, the caller's line. */
bool ag_aot_call_at(ag_loc loc, ag_aot_function *fn, const ag_tensor *tensors,
                    const int64_t *scalars, ag_tensor *outputs);

/* ---------------------------------------------------------------- memory */

/* Freeing twice, or popping a scope never pushed, is an error reported at
 * the caller's line (recorded for ag_last_error in AG_ERRORS_RETURN mode).
 * Freeing an error tensor, the zero handle or a NULL variable does nothing. */
void ag_scope_push(void);
void ag_scope_pop_at(ag_loc loc);
ag_tensor ag_keep(ag_tensor t); /* moves t to the enclosing scope; returns t */
void ag_free_at(ag_loc loc, ag_tensor t);
#define ag_scope_pop() ag_scope_pop_at(AG_HERE)
#define ag_free(t) ag_free_at(AG_HERE, (t))
void ag_shutdown(void);
int64_t ag_live_tensors(void); /* handles not yet freed, for leak checks */

/* ---------------------------------------------------------------- errors */

typedef enum ag_error_mode {
    AG_ERRORS_EXIT,  /* print "file:line: error: message", exit(1) */
    AG_ERRORS_RETURN /* the failing call returns an error tensor */
} ag_error_mode;

void ag_set_error_mode(ag_error_mode mode);
ag_error_mode ag_get_error_mode(void);
bool ag_is_error(ag_tensor t);
const char *ag_last_error(void); /* NULL when none since start/clear */
void ag_clear_error(void);

#ifdef __cplusplus
}
#endif

#endif /* AG_H */
