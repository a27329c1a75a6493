/* test_create.c - eye, range and random_uniform. */
#include "test_util.h"

#include "op_decls.h"
#include "random.h"

#include <stdlib.h>

/* ------------------------------------------------------------------- eye */

static void test_eye(void **state)
{
    (void)state;
    ag_tensor f = ag_eye(3, AG_F32);
    CHECK_TYPE(f, AG_F32, AG_SHAPE(3, 3));
    CHECK_VALUES(f, 1, 0, 0, 0, 1, 0, 0, 0, 1);
    ag_tensor i = ag_eye(2, AG_I32);
    CHECK_TYPE(i, AG_I32, AG_SHAPE(2, 2));
    CHECK_VALUES(i, 1, 0, 0, 1);
    CHECK_VALUES(ag_eye(2, AG_I64), 1, 0, 0, 1);
    CHECK_VALUES(ag_eye(2, AG_F64), 1, 0, 0, 1);
    ag_tensor b = ag_eye(2, AG_BOOL);
    CHECK_TYPE(b, AG_BOOL, AG_SHAPE(2, 2));
    assert_memory_equal(ag_data(b), ((const uint8_t[]){1, 0, 0, 1}), 4);
    ag_tensor h = ag_eye(2, AG_BF16);
    assert_memory_equal(ag_data(h), ((const uint16_t[]){0x3F80, 0, 0, 0x3F80}), 8);
    CHECK_TYPE(ag_eye(0, AG_F32), AG_F32, AG_SHAPE(0, 0));
    ag_tensor one = ag_eye(1, AG_F64);
    CHECK_TYPE(one, AG_F64, AG_SHAPE(1, 1));
    CHECK_VALUES(one, 1);
    EXPECT_ERROR(ag_eye(-1, AG_F32), "negative");
    EXPECT_ERROR(ag_eye(2, (ag_dtype)99), "invalid dtype");
    /* Sizes whose n * n would overflow are refused by the rule. */
    rt_attrs huge = {.n = INT64_C(4000000000), .dtype = AG_F32};
    ag_dtype dt;
    ag_shape s;
    rt_err e;
    assert_false(rt_infer(RT_OP_EYE, &huge, NULL, 0, &dt, &s, &e));
    assert_non_null(strstr(e.msg, "size 4000000000 is out of range"));
}

/* ----------------------------------------------------------------- range */

static void test_range_int(void **state)
{
    (void)state;
    ag_tensor r = ag_range(0, 5, 1);
    CHECK_TYPE(r, AG_I32, AG_SHAPE(5));
    CHECK_VALUES(r, 0, 1, 2, 3, 4);
    ag_tensor r3 = ag_range(0, 10, 3);
    CHECK_TYPE(r3, AG_I32, AG_SHAPE(4));
    CHECK_VALUES(r3, 0, 3, 6, 9);
    ag_tensor down = ag_range(ag_scalar_i32(10), 0, -3);
    CHECK_TYPE(down, AG_I32, AG_SHAPE(4));
    CHECK_VALUES(down, 10, 7, 4, 1);
    ag_tensor d64 = ag_range(ag_scalar_i64(-1), ag_scalar_i64(-7), ag_scalar_i64(-2));
    CHECK_TYPE(d64, AG_I64, AG_SHAPE(3));
    CHECK_VALUES(d64, -1, -3, -5);
    /* Empty: limit on the wrong side of start, or equal to it. */
    CHECK_TYPE(ag_range(5, 0, 1), AG_I32, AG_SHAPE(0));
    CHECK_TYPE(ag_range(3, 3, 1), AG_I32, AG_SHAPE(0));
    CHECK_TYPE(ag_range(0, 5, -1), AG_I32, AG_SHAPE(0));
}

/* Ranges spanning the whole integer type: no overflow in the size or in
 * the elements. */
static void test_range_int_extremes(void **state)
{
    (void)state;
    ag_tensor r = ag_range(ag_scalar_i64(INT64_MIN), ag_scalar_i64(INT64_MAX),
                           ag_scalar_i64(INT64_C(1) << 62));
    CHECK_TYPE(r, AG_I64, AG_SHAPE(4));
    assert_true(ag_get_i64(r, 0) == INT64_MIN);
    assert_true(ag_get_i64(r, 1) == INT64_MIN + (INT64_C(1) << 62));
    assert_true(ag_get_i64(r, 2) == 0);
    assert_true(ag_get_i64(r, 3) == INT64_C(1) << 62);
    ag_tensor down = ag_range(ag_scalar_i64(INT64_MAX), ag_scalar_i64(INT64_MIN),
                              ag_scalar_i64(INT64_MIN));
    CHECK_TYPE(down, AG_I64, AG_SHAPE(2));
    assert_true(ag_get_i64(down, 0) == INT64_MAX);
    assert_true(ag_get_i64(down, 1) == -1);
    ag_tensor r32 = ag_range(ag_scalar_i32(INT32_MIN), INT32_MAX, 1 << 30);
    CHECK_TYPE(r32, AG_I32, AG_SHAPE(4));
    CHECK_VALUES(r32, INT32_MIN, -(1 << 30), 0, 1 << 30);
    ag_tensor top = ag_range(ag_scalar_i32(INT32_MAX - 2), INT32_MAX, 1);
    CHECK_VALUES(top, INT32_MAX - 2, INT32_MAX - 1);
}

static void test_range_float(void **state)
{
    (void)state;
    /* ceil((1 - 0) / 0.3) = 4 elements, computed in f32. */
    ag_tensor r = ag_range(0, 1, 0.3);
    CHECK_TYPE(r, AG_F32, AG_SHAPE(4));
    float d = 0.3f;
    CHECK_VALUES(r, 0, (double)(1.0f * d), (double)(2.0f * d), (double)(3.0f * d));
    ag_tensor q = ag_range(ag_scalar_f64(1), ag_scalar_f64(2), ag_scalar_f64(0.25));
    CHECK_TYPE(q, AG_F64, AG_SHAPE(4));
    CHECK_VALUES(q, 1, 1.25, 1.5, 1.75);
    /* Negative delta: ceil(2.5) = 3 elements, start + i * delta. */
    ag_tensor n = ag_range(ag_scalar_f64(1), ag_scalar_f64(0), ag_scalar_f64(-0.4));
    CHECK_TYPE(n, AG_F64, AG_SHAPE(3));
    double step = -0.4;
    CHECK_VALUES(n, 1, 1 + 1 * step, 1 + 2 * step);
    ag_tensor h = ag_range(ag_scalar_bf16(0), ag_scalar_bf16(4), ag_scalar_bf16(1.5));
    CHECK_TYPE(h, AG_BF16, AG_SHAPE(3));
    CHECK_VALUES(h, 0, 1.5, 3);
    CHECK_TYPE(ag_range(1.0, 0.5, 0.1), AG_F32, AG_SHAPE(0));
    CHECK_TYPE(ag_range(ag_scalar_f32(2), 2, 1), AG_F32, AG_SHAPE(0));
}

static void test_range_errors(void **state)
{
    (void)state;
    EXPECT_ERROR(ag_range(0, 5, 0), "delta must not be 0");
    EXPECT_ERROR(ag_range(0.0, 5.0, 0.0), "ag_range: range(start=0, limit=5, delta=0)");
    EXPECT_ERROR(ag_range(I32(AG_SHAPE(1), 0), 5, 1), "start must be a scalar, got a "
                                                      "tensor of shape [1]");
    EXPECT_ERROR(ag_range(0, I32(AG_SHAPE(2), 5, 6), 1), "limit must be a scalar");
    EXPECT_ERROR(ag_range(0, 5, ag_zeros(AG_I32, AG_SHAPE(0))), "delta must be a scalar");
    EXPECT_ERROR(ag_range(ag_scalar_i32(0), ag_scalar_f32(5), ag_scalar_i32(1)),
                 "different dtypes");
    EXPECT_ERROR(ag_range(ag_scalar_i32(0), 2.5, 1), "cannot be converted to i32");
    EXPECT_ERROR(ag_range(ag_scalar_bool(0), ag_scalar_bool(1), ag_scalar_bool(1)),
                 "numeric");
    EXPECT_ERROR(ag_range(ag_scalar_i64(0), ag_scalar_i64(INT64_C(1) << 40), ag_scalar_i64(1)),
                 "would have 1099511627776 elements, more than the limit 2147483648");
    EXPECT_ERROR(ag_range(0.0, (double)INFINITY, 1.0), "more than the limit");
    EXPECT_ERROR(ag_range(0.0, (double)NAN, 1.0), "no defined length");
}

static rt_value sym_scalar(ag_dtype dt)
{
    rt_value v = {.kind = RT_SYMBOLIC, .dtype = dt, .shape = AG_SCALAR, .numel = 1};
    return v;
}

/* While tracing, the length depends on values nobody knows yet. */
static void test_range_symbolic(void **state)
{
    (void)state;
    rt_value s = sym_scalar(AG_I32), l = sym_scalar(AG_I32), d = sym_scalar(AG_I32);
    rt_value v = {.kind = RT_SYMBOLIC, .dtype = AG_I32, .shape = AG_SHAPE(2), .numel = 2};
    ag_dtype dt;
    ag_shape shape;
    rt_err e;
    assert_true(rt_infer(RT_OP_RANGE, NULL, (rt_value *[]){&s, &l, &d}, 3, &dt, &shape, &e));
    assert_int_equal(dt, AG_I32);
    assert_true(ag_shape_equal(shape, AG_SHAPE(-1)));
    /* A concrete start among symbolic others still gives -1. */
    rt_value *start = rt_value_scalar(AG_I32, 0);
    assert_true(rt_infer(RT_OP_RANGE, NULL, (rt_value *[]){start, &l, &d}, 3, &dt, &shape,
                         &e));
    assert_true(ag_shape_equal(shape, AG_SHAPE(-1)));
    rt_value_free(start);
    assert_false(rt_infer(RT_OP_RANGE, NULL, (rt_value *[]){&s, &v, &d}, 3, &dt, &shape, &e));
    assert_non_null(strstr(e.msg, "limit must be a scalar"));
}

/* -------------------------------------------------------- random_uniform */

/* The generator must stay bit-exact: these values come from the formula
 * in random.h, evaluated independently (in Python). */
static void test_random_bits_golden(void **state)
{
    (void)state;
    assert_true(rt_random_bits(0, 0) == UINT64_C(0x8359fff62713a185));
    assert_true(rt_random_bits(42, 1) == UINT64_C(0x8ca10b1dbe91ee23));
    assert_true(rt_random_bits(UINT64_MAX, 12345) == UINT64_C(0x6a8105af41e2dac2));
    assert_true(rt_random_unit53(UINT64_MAX) == 1.0 - 0x1p-53);
    assert_true(rt_random_unit24(UINT64_MAX) == 1.0f - 0x1p-24f);
    assert_true(rt_random_unit53(0) == 0.0 && rt_random_unit24(0) == 0.0f);
}

static void test_random_values_golden(void **state)
{
    (void)state;
    ag_tensor d = ag_random_uniform(AG_SHAPE(3), -2, 3, AG_F64, 7);
    CHECK_TYPE(d, AG_F64, AG_SHAPE(3));
    CHECK_VALUES(d, 0.3140439450770294, 2.169120671646848, 1.2728486893579953);
    ag_tensor f = ag_random_uniform(AG_SHAPE(3), -2, 3, AG_F32, 7);
    CHECK_TYPE(f, AG_F32, AG_SHAPE(3));
    CHECK_VALUES(f, 0.31404393911361694, 2.1691205501556396, 1.27284836769104);
    ag_tensor i = ag_random_uniform(AG_SHAPE(3), -3, 10, AG_I32, 7);
    CHECK_TYPE(i, AG_I32, AG_SHAPE(3));
    CHECK_VALUES(i, 3, 7, 5);
}

static void test_random_deterministic(void **state)
{
    (void)state;
    enum { N = 1000 };
    ag_tensor a = ag_random_uniform(AG_SHAPE(N), 0, 1, AG_F32, 123);
    ag_tensor b = ag_random_uniform(AG_SHAPE(N), 0, 1, AG_F32, 123);
    ag_tensor c = ag_random_uniform(AG_SHAPE(N), 0, 1, AG_F32, 124);
    assert_memory_equal(ag_data(a), ag_data(b), N * sizeof(float));
    int same = 0;
    for (int k = 0; k < N; k++)
        same += ag_get_f32(a, k) == ag_get_f32(c, k);
    assert_true(same < 5);
    /* Element i depends on (seed, i) only, not on the shape. */
    ag_tensor m = ag_random_uniform(AG_SHAPE(2, 3), -1, 1, AG_F64, 9);
    ag_tensor v = ag_random_uniform(AG_SHAPE(6), -1, 1, AG_F64, 9);
    assert_memory_equal(ag_data(m), ag_data(v), 6 * sizeof(double));
    CHECK_TYPE(ag_random_uniform(AG_SHAPE(0, 3), 0, 1, AG_BF16, 1), AG_BF16,
               AG_SHAPE(0, 3));
    CHECK_TYPE(ag_random_uniform(AG_SCALAR, 0, 1, AG_I64, 1), AG_I64, AG_SCALAR);
}

static void test_random_bounds_float(void **state)
{
    (void)state;
    enum { N = 10000 };
    ag_tensor f = ag_random_uniform(AG_SHAPE(N), -1, 1, AG_F32, 5);
    ag_tensor d = ag_random_uniform(AG_SHAPE(N), 5, 6, AG_F64, 5);
    double fmin = 9, fmax = -9;
    for (int k = 0; k < N; k++) {
        double x = ag_get_f32(f, k), y = ag_get_f64(d, k);
        assert_true(x >= -1 && x < 1);
        assert_true(y >= 5 && y < 6);
        fmin = x < fmin ? x : fmin;
        fmax = x > fmax ? x : fmax;
    }
    assert_true(fmin < -0.99 && fmax > 0.99);
    /* bf16 has 8 significant bits: about 1 in 256 draws in [1, 2) rounds up
     * to 2, and is clamped to the largest bf16 below 2. */
    ag_tensor h = ag_random_uniform(AG_SHAPE(N), 1, 2, AG_BF16, 5);
    int top = 0;
    for (int k = 0; k < N; k++) {
        double x = ag_get_f64(h, k);
        assert_true(x >= 1 && x < 2);
        top += x == 1.9921875;
    }
    assert_true(top > 20);
}

static void test_random_uniformity(void **state)
{
    (void)state;
    enum { N = 10000 };
    const ag_dtype dts[3] = {AG_F32, AG_F64, AG_BF16};
    for (int t = 0; t < 3; t++) {
        ag_tensor x = ag_random_uniform(AG_SHAPE(N), 0, 1, dts[t], 2024);
        double sum = 0;
        int below_quarter = 0;
        for (int k = 0; k < N; k++) {
            double v = ag_get_f64(x, k);
            sum += v;
            below_quarter += v < 0.25;
        }
        assert_true(fabs(sum / N - 0.5) < 0.02);
        assert_true(abs(below_quarter - N / 4) < 300);
    }
}

static void test_random_int(void **state)
{
    (void)state;
    enum { N = 10000 };
    ag_tensor x = ag_random_uniform(AG_SHAPE(N), -3, 4, AG_I32, 77);
    CHECK_TYPE(x, AG_I32, AG_SHAPE(N));
    int hits[7] = {0};
    for (int k = 0; k < N; k++) {
        int32_t v = ag_get_i32(x, k);
        assert_true(v >= -3 && v < 4);
        hits[v + 3]++;
    }
    for (int k = 0; k < 7; k++) /* each value about N / 7 = 1428 times */
        assert_true(hits[k] > 1200 && hits[k] < 1650);
    /* Non-integer bounds: the integers of [0.5, 3) are 1 and 2. */
    ag_tensor y = ag_random_uniform(AG_SHAPE(200), 0.5, 3, AG_I64, 3);
    int ones = 0;
    for (int k = 0; k < 200; k++) {
        int64_t v = ag_get_i64(y, k);
        assert_true(v == 1 || v == 2);
        ones += v == 1;
    }
    assert_true(ones > 50 && ones < 150);
    /* Unbounded ranges cover the dtype's whole range. */
    ag_tensor z = ag_random_uniform(AG_SHAPE(100), -INFINITY, INFINITY, AG_I64, 3);
    int neg = 0;
    for (int k = 0; k < 100; k++)
        neg += ag_get_i64(z, k) < 0;
    assert_true(neg > 20 && neg < 80);
    ag_tensor w = ag_random_uniform(AG_SHAPE(100), -1e12, 1e12, AG_I32, 3);
    for (int k = 0; k < 100; k++)
        assert_true(ag_get_i64(w, k) >= INT32_MIN);
}

static void test_random_errors(void **state)
{
    (void)state;
    EXPECT_ERROR(ag_random_uniform(AG_SHAPE(2), 0.2, 0.8, AG_I32, 1),
                 "ag_random_uniform: no i32 value lies in [0.2, 0.8)");
    EXPECT_ERROR(ag_random_uniform(AG_SHAPE(2), 0, INFINITY, AG_F32, 1), "not finite");
    EXPECT_ERROR(ag_random_uniform(AG_SHAPE(2), 0, 1e39, AG_F32, 1), "beyond what f32");
    EXPECT_ERROR(ag_random_uniform(AG_SHAPE(2), 0, 1, AG_BOOL, 1), "numeric dtype");
    EXPECT_ERROR(ag_random_uniform(AG_SHAPE(2), 1, 1, AG_F32, 1), "is empty");
    EXPECT_ERROR(ag_random_uniform(AG_SHAPE(-1), 0, 1, AG_F32, 1), "negative dim");
    /* The kernel itself refuses NaN bounds, which a graph could carry. */
    rt_value *out = rt_value_new(AG_I32, &AG_SHAPE(2));
    rt_attrs nan_lo = {.shape = AG_SHAPE(2), .lo = NAN, .hi = 1, .dtype = AG_I32};
    rt_err e;
    assert_false(rt_k_random_uniform(&nan_lo, NULL, 0, out, &e));
    assert_non_null(strstr(e.msg, "is empty"));
    rt_value_free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_eye),
        TU_TEST(test_range_int),
        TU_TEST(test_range_int_extremes),
        TU_TEST(test_range_float),
        TU_TEST(test_range_errors),
        TU_TEST(test_range_symbolic),
        TU_TEST(test_random_bits_golden),
        TU_TEST(test_random_values_golden),
        TU_TEST(test_random_deterministic),
        TU_TEST(test_random_bounds_float),
        TU_TEST(test_random_uniformity),
        TU_TEST(test_random_int),
        TU_TEST(test_random_errors),
    };
    TU_RUN(tests);
}
