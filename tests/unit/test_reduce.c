/* test_reduce.c - reductions, argmax and softmax (kernels/reduce.c). */
#include "test_util.h"

#include "op_decls.h"

#include <float.h>

/* A bf16 tensor from float values (each rounded to bf16). */
static ag_tensor bf16_tensor(ag_shape s, int n, const float *vals)
{
    uint16_t buf[64];
    assert_true(n <= 64);
    for (int i = 0; i < n; i++)
        buf[i] = ag_f32_to_bf16(vals[i]);
    return ag_from_data(AG_BF16, s, buf);
}
#define BF16(shape, ...)                                                        \
    bf16_tensor(shape, (int)(sizeof((const float[]){__VA_ARGS__}) / sizeof(float)), \
                (const float[]){__VA_ARGS__})

/* Infers op on one symbolic input of type dt/s; returns the shape. */
static bool infer1(rt_op op, int64_t axis, bool keep, ag_dtype dt, ag_shape s,
                   ag_shape *out, rt_err *e)
{
    rt_value v = {.kind = RT_SYMBOLIC, .dtype = dt, .shape = s};
    rt_value *in[1] = {&v};
    rt_attrs a = {.axis = axis, .keepdims = keep};
    ag_dtype odt;
    return rt_infer(op, &a, in, 1, &odt, out, e);
}

/* ------------------------------------------------------------- sums */

static void test_sum_each_axis(void **state)
{
    (void)state;
    ag_tensor x = F32(AG_SHAPE(2, 3), 1, 2, 3, 4, 5, 6);
    ag_tensor r = ag_reduce_sum(x, 0, false);
    CHECK_TYPE(r, AG_F32, AG_SHAPE(3));
    CHECK_VALUES(r, 5, 7, 9);
    r = ag_reduce_sum(x, 1, false);
    CHECK_TYPE(r, AG_F32, AG_SHAPE(2));
    CHECK_VALUES(r, 6, 15);
    r = ag_reduce_sum(x, -1, false);
    CHECK_TYPE(r, AG_F32, AG_SHAPE(2));
    CHECK_VALUES(r, 6, 15);
    r = ag_reduce_sum(x, -2, true);
    CHECK_TYPE(r, AG_F32, AG_SHAPE(1, 3));
    CHECK_VALUES(r, 5, 7, 9);
    r = ag_reduce_sum(x, 1, true);
    CHECK_TYPE(r, AG_F32, AG_SHAPE(2, 1));
    CHECK_VALUES(r, 6, 15);
    r = ag_reduce_sum(x, AG_ALL_AXES, false);
    CHECK_TYPE(r, AG_F32, AG_SCALAR);
    CHECK_VALUES(r, 21);
    r = ag_reduce_sum(x, AG_ALL_AXES, true);
    CHECK_TYPE(r, AG_F32, AG_SHAPE(1, 1));
    CHECK_VALUES(r, 21);
}

static void test_sum_middle_axis_rank3(void **state)
{
    (void)state;
    int32_t data[24];
    for (int i = 0; i < 24; i++)
        data[i] = i;
    ag_tensor x = ag_from_data(AG_I32, AG_SHAPE(2, 3, 4), data);
    ag_tensor r = ag_reduce_sum(x, 1, false);
    CHECK_TYPE(r, AG_I32, AG_SHAPE(2, 4));
    CHECK_VALUES(r, 12, 15, 18, 21, 48, 51, 54, 57);
    r = ag_reduce_sum(x, 0, true);
    CHECK_TYPE(r, AG_I32, AG_SHAPE(1, 3, 4));
    CHECK_VALUES(r, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32, 34);
    r = ag_reduce_sum(x, -1, false);
    CHECK_TYPE(r, AG_I32, AG_SHAPE(2, 3));
    CHECK_VALUES(r, 6, 22, 38, 54, 70, 86);
}

static void test_sum_long_row_and_double_accumulation(void **state)
{
    (void)state;
    float data[1001];
    for (int i = 0; i < 1001; i++)
        data[i] = (float)i;
    ag_tensor r = ag_reduce_sum(ag_from_data(AG_F32, AG_SHAPE(1001), data), 0, false);
    CHECK_VALUES(r, 500500);
    /* In f32, 2^24 + 1 rounds back to 2^24; accumulating in double keeps
     * all four ones and rounds once (2^24 + 4 is representable). */
    ag_tensor big = F32(AG_SHAPE(5), 16777216.0f, 1, 1, 1, 1);
    CHECK_VALUES(ag_reduce_sum(big, 0, false), 16777220.0);
    ag_tensor big_col = F32(AG_SHAPE(5, 1), 16777216.0f, 1, 1, 1, 1);
    CHECK_VALUES(ag_reduce_sum(big_col, 0, false), 16777220.0);
    ag_tensor d = F64(AG_SHAPE(2, 2), 0.5, 0.25, 1e300, 1e300);
    CHECK_VALUES(ag_reduce_sum(d, 1, false), 0.75, 2e300);
}

static void test_rank0_and_size1(void **state)
{
    (void)state;
    ag_tensor s = ag_scalar_f32(3.5);
    ag_tensor r = ag_reduce_sum(s, AG_ALL_AXES, false);
    CHECK_TYPE(r, AG_F32, AG_SCALAR);
    CHECK_VALUES(r, 3.5);
    r = ag_reduce_max(s, AG_ALL_AXES, true);
    CHECK_TYPE(r, AG_F32, AG_SCALAR);
    CHECK_VALUES(r, 3.5);
    CHECK_VALUES(ag_reduce_mean(ag_scalar_i32(-7), AG_ALL_AXES, false), -7);
    EXPECT_ERROR(ag_reduce_sum(s, 0, false), "out of range for a rank-0 tensor");
    EXPECT_ERROR(ag_reduce_sum(s, -1, false), "use AG_ALL_AXES");

    ag_tensor row = F32(AG_SHAPE(1, 3), 1, 2, 3);
    r = ag_reduce_prod(row, 0, false);
    CHECK_TYPE(r, AG_F32, AG_SHAPE(3));
    CHECK_VALUES(r, 1, 2, 3);
    r = ag_reduce_prod(row, 1, false);
    CHECK_TYPE(r, AG_F32, AG_SHAPE(1));
    CHECK_VALUES(r, 6);
    ag_tensor col = I64(AG_SHAPE(3, 1, 1), 4, 5, 6);
    r = ag_reduce_min(col, 1, false);
    CHECK_TYPE(r, AG_I64, AG_SHAPE(3, 1));
    CHECK_VALUES(r, 4, 5, 6);
}

static void test_axis_errors(void **state)
{
    (void)state;
    ag_tensor x = F32(AG_SHAPE(2, 3), 1, 2, 3, 4, 5, 6);
    EXPECT_ERROR(ag_reduce_sum(x, 2, false), "axis 2 is out of range for a rank-2 tensor");
    EXPECT_ERROR(ag_reduce_mean(x, -3, true), "axis -3 is out of range");
    EXPECT_ERROR(ag_reduce_max(x, 5, false), "valid axes are -2..1");
    EXPECT_ERROR(ag_reduce_sum(x, 2, false), "ag_reduce_sum: ");
    EXPECT_ERROR(ag_reduce_prod(BOOLS(AG_SHAPE(2), 1, 0), 0, false), "numeric");
}

/* ------------------------------------------------------------ empty */

static void test_empty_reductions(void **state)
{
    (void)state;
    ag_tensor f = ag_zeros(AG_F32, AG_SHAPE(0, 3));
    ag_tensor r = ag_reduce_sum(f, 0, false);
    CHECK_TYPE(r, AG_F32, AG_SHAPE(3));
    CHECK_VALUES(r, 0, 0, 0);
    CHECK_VALUES(ag_reduce_prod(f, 0, false), 1, 1, 1);
    CHECK_VALUES(ag_reduce_mean(f, 0, false), NAN, NAN, NAN);
    CHECK_VALUES(ag_reduce_max(f, 0, false), -INFINITY, -INFINITY, -INFINITY);
    CHECK_VALUES(ag_reduce_min(f, 0, false), INFINITY, INFINITY, INFINITY);
    r = ag_reduce_sum(f, 1, false); /* nothing to produce */
    CHECK_TYPE(r, AG_F32, AG_SHAPE(0));
    r = ag_reduce_sum(f, 1, true);
    CHECK_TYPE(r, AG_F32, AG_SHAPE(0, 1));
    r = ag_reduce_sum(f, AG_ALL_AXES, false);
    CHECK_TYPE(r, AG_F32, AG_SCALAR);
    CHECK_VALUES(r, 0);
    CHECK_VALUES(ag_reduce_mean(f, AG_ALL_AXES, false), NAN);

    ag_tensor i = ag_zeros(AG_I32, AG_SHAPE(2, 0));
    CHECK_VALUES(ag_reduce_sum(i, 1, false), 0, 0);
    CHECK_VALUES(ag_reduce_prod(i, 1, false), 1, 1);
    CHECK_VALUES(ag_reduce_max(i, 1, false), INT32_MIN, INT32_MIN);
    CHECK_VALUES(ag_reduce_min(i, 1, false), INT32_MAX, INT32_MAX);
    EXPECT_ERROR(ag_reduce_mean(i, 1, false), "mean of an empty axis");
    EXPECT_ERROR(ag_reduce_mean(i, AG_ALL_AXES, false), "mean of an empty axis");
    CHECK_TYPE(ag_reduce_mean(i, 0, false), AG_I32, AG_SHAPE(0));

    ag_tensor l = ag_zeros(AG_I64, AG_SHAPE(0));
    r = ag_reduce_max(l, 0, false);
    assert_true(ag_get_i64(r, 0) == INT64_MIN);
    r = ag_reduce_min(l, 0, false);
    assert_true(ag_get_i64(r, 0) == INT64_MAX);

    ag_tensor b = ag_zeros(AG_BF16, AG_SHAPE(0));
    CHECK_VALUES(ag_reduce_max(b, 0, false), -INFINITY);
    CHECK_VALUES(ag_reduce_mean(b, 0, false), NAN);
    CHECK_VALUES(ag_reduce_prod(ag_zeros(AG_F64, AG_SHAPE(0)), 0, false), 1);
}

/* ---------------------------------------------------------- any, all */

static void test_any_all_axes(void **state)
{
    (void)state;
    ag_tensor b = BOOLS(AG_SHAPE(2, 3), 0, 0, 0, 1, 0, 1);
    ag_tensor r = ag_reduce_any(b, AG_ALL_AXES, false);
    CHECK_TYPE(r, AG_BOOL, AG_SCALAR);
    CHECK_VALUES(r, 1);
    CHECK_VALUES(ag_reduce_all(b, AG_ALL_AXES, false), 0);
    CHECK_TYPE(ag_reduce_all(b, AG_ALL_AXES, true), AG_BOOL, AG_SHAPE(1, 1));
    r = ag_reduce_any(b, 1, false); /* inner == 1: the interleaved path */
    CHECK_TYPE(r, AG_BOOL, AG_SHAPE(2));
    CHECK_VALUES(r, 0, 1);
    CHECK_VALUES(ag_reduce_all(b, -1, false), 0, 0);
    r = ag_reduce_any(b, 0, true); /* inner > 1: a row of accumulators */
    CHECK_TYPE(r, AG_BOOL, AG_SHAPE(1, 3));
    CHECK_VALUES(r, 1, 0, 1);
    CHECK_VALUES(ag_reduce_all(BOOLS(AG_SHAPE(2, 2), 1, 0, 1, 1), 0, false), 1, 0);
    /* long rows: every position of the four accumulators decides */
    for (int at = 0; at < 11; at++) {
        uint8_t one[11] = {0}, all_but[11];
        memset(all_but, 1, sizeof all_but);
        one[at] = 1;
        all_but[at] = 0;
        CHECK_VALUES(ag_reduce_any(ag_from_data(AG_BOOL, AG_SHAPE(11), one), 0, false), 1);
        CHECK_VALUES(ag_reduce_all(ag_from_data(AG_BOOL, AG_SHAPE(11), all_but), 0, false), 0);
    }
    /* a scalar, and non-0/1 bytes given to ag_from_data (normalized) */
    CHECK_VALUES(ag_reduce_all(ag_scalar_bool(true), AG_ALL_AXES, false), 1);
    CHECK_VALUES(ag_reduce_any(BOOLS(AG_SHAPE(2), 2, 0), 0, false), 1);
    CHECK_VALUES(ag_reduce_all(BOOLS(AG_SHAPE(2), 2, 4), 0, false), 1);
}

static void test_any_all_empty_and_errors(void **state)
{
    (void)state;
    /* TF's identities: nothing is true (any), nothing is false (all) */
    ag_tensor e = ag_zeros(AG_BOOL, AG_SHAPE(2, 0));
    CHECK_VALUES(ag_reduce_any(e, 1, false), 0, 0);
    CHECK_VALUES(ag_reduce_all(e, 1, false), 1, 1);
    CHECK_VALUES(ag_reduce_any(e, AG_ALL_AXES, false), 0);
    CHECK_VALUES(ag_reduce_all(e, AG_ALL_AXES, false), 1);
    CHECK_TYPE(ag_reduce_all(e, 0, false), AG_BOOL, AG_SHAPE(0));
    ag_tensor x = F32(AG_SHAPE(2), 1, 0);
    EXPECT_ERROR(ag_reduce_any(x, 0, false),
                 "ag_reduce_any: expects bool tensors, got a f32 tensor");
    EXPECT_ERROR(ag_reduce_all(I32(AG_SHAPE(1), 1), 0, false), "ag_reduce_all: expects bool");
    EXPECT_ERROR(ag_reduce_any(BOOLS(AG_SHAPE(2), 1, 0), 1, false),
                 "axis 1 is out of range for a rank-1 tensor");
    /* the rule, on unknown dims */
    ag_shape out;
    rt_err err;
    assert_true(infer1(RT_OP_REDUCE_ANY, 0, false, AG_BOOL, AG_SHAPE(-1, 3), &out, &err));
    assert_true(ag_shape_equal(out, AG_SHAPE(3)));
    assert_true(infer1(RT_OP_REDUCE_ALL, 1, true, AG_BOOL, AG_SHAPE(-1, 3), &out, &err));
    assert_true(ag_shape_equal(out, AG_SHAPE(-1, 1)));
    /* and the message that points to them */
    ag_clear_error();
    assert_false(ag_bool(BOOLS(AG_SHAPE(2), 1, 0)));
    assert_non_null(strstr(ag_last_error(), "ag_reduce_any or ag_reduce_all"));
}

/* ------------------------------------------------------------ integers */

static void test_int_wrap_and_mean(void **state)
{
    (void)state;
    CHECK_VALUES(ag_reduce_sum(I32(AG_SHAPE(2), INT32_MAX, 1), 0, false), INT32_MIN);
    CHECK_VALUES(ag_reduce_prod(I32(AG_SHAPE(2), 65536, 65536), 0, false), 0);
    CHECK_VALUES(ag_reduce_prod(I32(AG_SHAPE(2, 1), 65536, 65537), 0, false), 65536);
    ag_tensor r = ag_reduce_sum(I64(AG_SHAPE(2), INT64_MAX, 1), 0, false);
    assert_true(ag_get_i64(r, 0) == INT64_MIN);
    r = ag_reduce_prod(I64(AG_SHAPE(3), INT64_MIN, -1, 1), 0, false);
    assert_true(ag_get_i64(r, 0) == INT64_MIN);
    /* Integer mean truncates toward zero. */
    CHECK_VALUES(ag_reduce_mean(I32(AG_SHAPE(2, 2), -7, 0, 7, 0), 1, false), -3, 3);
    CHECK_VALUES(ag_reduce_mean(I64(AG_SHAPE(3), 1, 1, 2), 0, false), 1);
    /* The i32 mean sums in 64 bits, so it does not overflow. */
    CHECK_VALUES(ag_reduce_mean(I32(AG_SHAPE(2), INT32_MAX, INT32_MAX), 0, false),
                 INT32_MAX);
    CHECK_VALUES(ag_reduce_max(I32(AG_SHAPE(2, 2), -5, 3, 2, -9), 0, false), 2, 3);
    CHECK_VALUES(ag_reduce_min(I32(AG_SHAPE(2, 2), -5, 3, 2, -9), 1, false), -5, -9);
}

/* ------------------------------------------------------------ floats */

static void test_mean_max_min_float(void **state)
{
    (void)state;
    ag_tensor x = F32(AG_SHAPE(2, 3), 1, -2, 3, 4, 5, -6);
    CHECK_VALUES(ag_reduce_mean(x, 0, false), 2.5, 1.5, -1.5);
    CHECK_VALUES(ag_reduce_mean(x, 1, false), (float)(2.0 / 3.0), 1);
    CHECK_VALUES(ag_reduce_max(x, 0, false), 4, 5, 3);
    CHECK_VALUES(ag_reduce_max(x, 1, false), 3, 5);
    CHECK_VALUES(ag_reduce_min(x, -1, false), -2, -6);
    CHECK_VALUES(ag_reduce_min(x, AG_ALL_AXES, false), -6);
    ag_tensor d = F64(AG_SHAPE(4), 1, 2, 3, 5);
    CHECK_VALUES(ag_reduce_mean(d, 0, false), 2.75);
    CHECK_VALUES(ag_reduce_prod(d, 0, false), 30);
}

static void test_max_min_propagate_nan(void **state)
{
    (void)state;
    ag_tensor x = F32(AG_SHAPE(3), 1, NAN, 3);
    CHECK_VALUES(ag_reduce_max(x, 0, false), NAN);
    CHECK_VALUES(ag_reduce_min(x, 0, false), NAN);
    ag_tensor last = F32(AG_SHAPE(6), 1, 2, 3, 4, 5, NAN);
    CHECK_VALUES(ag_reduce_max(last, 0, false), NAN);
    ag_tensor cols = F64(AG_SHAPE(2, 2), 1, 2, NAN, 0);
    CHECK_VALUES(ag_reduce_max(cols, 0, false), NAN, 2);
    CHECK_VALUES(ag_reduce_min(cols, 0, false), NAN, 0);
    CHECK_VALUES(ag_reduce_max(F32(AG_SHAPE(2), -INFINITY, -1), 0, false), -1);
}

static void test_bf16_reductions(void **state)
{
    (void)state;
    /* bf16 has 8 significant bits: 256 + 1 rounds to 256, so summing in
     * bf16 would give 256; accumulating in f32 gives 258 (representable). */
    ag_tensor x = BF16(AG_SHAPE(3), 256, 1, 1);
    ag_tensor r = ag_reduce_sum(x, 0, false);
    CHECK_TYPE(r, AG_BF16, AG_SCALAR);
    CHECK_VALUES(r, 258);
    ag_tensor y = BF16(AG_SHAPE(2, 2), 1.5, -2, 0.25, 4);
    CHECK_VALUES(ag_reduce_sum(y, 0, false), 1.75, 2);
    CHECK_VALUES(ag_reduce_mean(y, 1, false), -0.25, 2.125);
    CHECK_VALUES(ag_reduce_max(y, 0, false), 1.5, 4);
    CHECK_VALUES(ag_reduce_min(y, AG_ALL_AXES, true), -2);
    CHECK_VALUES(ag_reduce_prod(y, 1, false), -3, 1);
    CHECK_VALUES(ag_reduce_max(BF16(AG_SHAPE(2), NAN, 1), 0, false), NAN);
}

static void test_reduce_rule_unknown_dims(void **state)
{
    (void)state;
    ag_shape out;
    rt_err e;
    assert_true(infer1(RT_OP_REDUCE_SUM, 1, false, AG_F32, AG_SHAPE(-1, 3, -1), &out, &e));
    assert_true(ag_shape_equal(out, AG_SHAPE(-1, -1)));
    assert_true(infer1(RT_OP_REDUCE_MAX, -1, true, AG_F32, AG_SHAPE(-1, 3), &out, &e));
    assert_true(ag_shape_equal(out, AG_SHAPE(-1, 1)));
    assert_true(infer1(RT_OP_REDUCE_MEAN, AG_ALL_AXES, false, AG_I32, AG_SHAPE(-1), &out, &e));
    assert_true(ag_shape_equal(out, AG_SCALAR));
    assert_true(infer1(RT_OP_ARGMAX, 0, false, AG_F32, AG_SHAPE(-1, 4), &out, &e));
    assert_true(ag_shape_equal(out, AG_SHAPE(4)));
    assert_true(infer1(RT_OP_SOFTMAX, 1, false, AG_F32, AG_SHAPE(-1, -1), &out, &e));
    assert_true(ag_shape_equal(out, AG_SHAPE(-1, -1)));
    assert_false(infer1(RT_OP_REDUCE_SUM, 3, false, AG_F32, AG_SHAPE(-1, 3), &out, &e));
    assert_non_null(strstr(e.msg, "axis 3 is out of range for a rank-2 tensor"));
}

/* ------------------------------------------------------------ argmax */

static void test_argmax_basic_and_ties(void **state)
{
    (void)state;
    ag_tensor x = F32(AG_SHAPE(2, 3), 1, 3, 3, 5, 2, 5);
    ag_tensor r = ag_argmax(x, 1);
    CHECK_TYPE(r, AG_I64, AG_SHAPE(2));
    CHECK_VALUES(r, 1, 0);
    r = ag_argmax(x, -1);
    CHECK_VALUES(r, 1, 0);
    r = ag_argmax(x, 0);
    CHECK_TYPE(r, AG_I64, AG_SHAPE(3));
    CHECK_VALUES(r, 1, 0, 1);
    ag_tensor ties = F32(AG_SHAPE(2, 2), 7, 7, 7, 7);
    CHECK_VALUES(ag_argmax(ties, 0), 0, 0);
    CHECK_VALUES(ag_argmax(ties, 1), 0, 0);
    CHECK_VALUES(ag_argmax(I32(AG_SHAPE(1, 3), -5, -5, -1), 1), 2);
    CHECK_VALUES(ag_argmax(I64(AG_SHAPE(3, 1), INT64_MIN, INT64_MIN, INT64_MIN), 0), 0);
    CHECK_VALUES(ag_argmax(F64(AG_SHAPE(3), -1, -INFINITY, -0.5), 0), 2);
    CHECK_VALUES(ag_argmax(BF16(AG_SHAPE(4), 1, 4, 2, 4), 0), 1);
    r = ag_argmax(F32(AG_SHAPE(3, 1, 2), 1, 9, 8, 2, 8, 3), 0);
    CHECK_TYPE(r, AG_I64, AG_SHAPE(1, 2));
    CHECK_VALUES(r, 1, 0);
}

static void test_argmax_nan(void **state)
{
    (void)state;
    CHECK_VALUES(ag_argmax(F32(AG_SHAPE(4), 1, NAN, 5, NAN), 0), 1);
    CHECK_VALUES(ag_argmax(F32(AG_SHAPE(3), NAN, 5, 1), 0), 0);
    ag_tensor cols = F64(AG_SHAPE(3, 2), 1, NAN, NAN, 2, 3, NAN);
    CHECK_VALUES(ag_argmax(cols, 0), 1, 0);
    CHECK_VALUES(ag_argmax(BF16(AG_SHAPE(3), 1, 2, NAN), 0), 2);
}

static void test_argmax_errors_and_empty(void **state)
{
    (void)state;
    ag_tensor x = F32(AG_SHAPE(2, 3), 1, 2, 3, 4, 5, 6);
    EXPECT_ERROR(ag_argmax(x, AG_ALL_AXES), "AG_ALL_AXES");
    EXPECT_ERROR(ag_argmax(x, 2), "axis 2 is out of range for a rank-2 tensor");
    EXPECT_ERROR(ag_argmax(ag_scalar_f32(1), 0), "rank-0");
    EXPECT_ERROR(ag_argmax(ag_zeros(AG_F32, AG_SHAPE(2, 0)), 1), "axis 1 of shape [2,0] is empty");
    EXPECT_ERROR(ag_argmax(ag_zeros(AG_I32, AG_SHAPE(0, 3)), 0), "is empty");
    EXPECT_ERROR(ag_argmax(BOOLS(AG_SHAPE(2), 0, 1), 0), "numeric");
    ag_tensor r = ag_argmax(ag_zeros(AG_F32, AG_SHAPE(0, 3)), 1);
    CHECK_TYPE(r, AG_I64, AG_SHAPE(0));
}

/* ------------------------------------------------------------ softmax */

static void test_softmax_rows(void **state)
{
    (void)state;
    ag_tensor x = F32(AG_SHAPE(2, 3), 1, 2, 3, 0, 0, 0);
    ag_tensor r = ag_softmax(x, 1);
    CHECK_TYPE(r, AG_F32, AG_SHAPE(2, 3));
    CHECK_CLOSE(r, 1e-6, 0.09003057, 0.24472847, 0.66524096, 1 / 3.0, 1 / 3.0, 1 / 3.0);
    r = ag_softmax(x, -1);
    CHECK_CLOSE(r, 1e-6, 0.09003057, 0.24472847, 0.66524096, 1 / 3.0, 1 / 3.0, 1 / 3.0);
    for (int row = 0; row < 2; row++) {
        double s = 0;
        for (int j = 0; j < 3; j++)
            s += ag_get_f32(r, row * 3 + j);
        assert_float_equal(s, 1.0, 1e-6);
    }
    /* Along axis 0 each column is normalized. */
    r = ag_softmax(x, 0);
    CHECK_CLOSE(r, 1e-6, 0.73105858, 0.88079708, 0.95257413, 0.26894142, 0.11920292,
                0.04742587);
}

static void test_softmax_stable_and_special(void **state)
{
    (void)state;
    ag_tensor r = ag_softmax(F32(AG_SHAPE(2), 1000, 1001), 0);
    CHECK_CLOSE(r, 1e-6, 0.26894142, 0.73105858);
    r = ag_softmax(F64(AG_SHAPE(1, 2), -1000, -1001), 1);
    CHECK_CLOSE(r, 1e-12, 0.7310585786300049, 0.2689414213699951);
    r = ag_softmax(F32(AG_SHAPE(3), -INFINITY, 0, -INFINITY), 0);
    CHECK_VALUES(r, 0, 1, 0);
    r = ag_softmax(F32(AG_SHAPE(2), NAN, 0), 0);
    CHECK_VALUES(r, NAN, NAN);
    r = ag_softmax(F32(AG_SHAPE(2, 1), 5, 7), 1); /* one element per slice */
    CHECK_VALUES(r, 1, 1);
}

static void test_softmax_dtypes_and_errors(void **state)
{
    (void)state;
    /* 1000 and 1004 are exact in bf16 (1001 is not: the spacing is 4). */
    ag_tensor r = ag_softmax(BF16(AG_SHAPE(2), 1000, 1004), 0);
    CHECK_TYPE(r, AG_BF16, AG_SHAPE(2));
    CHECK_VALUES(r, ag_bf16_to_f32(ag_f32_to_bf16(0.01798621f)),
                 ag_bf16_to_f32(ag_f32_to_bf16(0.98201379f)));
    r = ag_softmax(F64(AG_SHAPE(2, 2), 0, 0, 0, 0), 0);
    CHECK_VALUES(r, 0.5, 0.5, 0.5, 0.5);
    r = ag_softmax(ag_zeros(AG_F32, AG_SHAPE(0, 3)), 1);
    CHECK_TYPE(r, AG_F32, AG_SHAPE(0, 3));
    r = ag_softmax(ag_zeros(AG_F32, AG_SHAPE(3, 0)), 1);
    CHECK_TYPE(r, AG_F32, AG_SHAPE(3, 0));
    EXPECT_ERROR(ag_softmax(I32(AG_SHAPE(2), 1, 2), 0), "float tensor");
    EXPECT_ERROR(ag_softmax(F32(AG_SHAPE(2), 1, 2), AG_ALL_AXES), "AG_ALL_AXES");
    EXPECT_ERROR(ag_softmax(F32(AG_SHAPE(2), 1, 2), 1), "axis 1 is out of range");
    EXPECT_ERROR(ag_softmax(F32(AG_SHAPE(2), 1, 2), -2), "axis -2 is out of range");
    EXPECT_ERROR(ag_softmax(ag_scalar_f32(1), 0), "rank-0");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_sum_each_axis),
        TU_TEST(test_sum_middle_axis_rank3),
        TU_TEST(test_sum_long_row_and_double_accumulation),
        TU_TEST(test_rank0_and_size1),
        TU_TEST(test_axis_errors),
        TU_TEST(test_empty_reductions),
        TU_TEST(test_any_all_axes),
        TU_TEST(test_any_all_empty_and_errors),
        TU_TEST(test_int_wrap_and_mean),
        TU_TEST(test_mean_max_min_float),
        TU_TEST(test_max_min_propagate_nan),
        TU_TEST(test_bf16_reductions),
        TU_TEST(test_reduce_rule_unknown_dims),
        TU_TEST(test_argmax_basic_and_ties),
        TU_TEST(test_argmax_nan),
        TU_TEST(test_argmax_errors_and_empty),
        TU_TEST(test_softmax_rows),
        TU_TEST(test_softmax_stable_and_special),
        TU_TEST(test_softmax_dtypes_and_errors),
    };
    TU_RUN(tests);
}
