/* test_elementwise.c - binary arithmetic, comparisons, logic, where, unary
 * math and cast (runtime/kernels/elementwise.c). */
#include "test_util.h"

/* ------------------------------------------------------------ helpers */

/* A bf16 tensor from float values (each rounded to bf16). */
static ag_tensor bf16_of(ag_shape s, int n, const float *v)
{
    uint16_t b[64];
    assert_true(n <= 64);
    for (int i = 0; i < n; i++)
        b[i] = ag_f32_to_bf16(v[i]);
    return ag_from_data(AG_BF16, s, b);
}
#define BF16(shape, ...)                                                      \
    bf16_of(shape, (int)(sizeof((const float[]){__VA_ARGS__}) / sizeof(float)), \
            (const float[]){__VA_ARGS__})

/* The raw bits of bf16 element i. */
static uint16_t bf16_bits(ag_tensor t, int64_t i)
{
    assert_int_equal(ag_dtype_of(t), AG_BF16);
    return ((const uint16_t *)ag_data(t))[i];
}

static int64_t numel_of(ag_shape s)
{
    int64_t n = 1;
    for (int i = 0; i < s.rank; i++)
        n *= s.dims[i];
    return n;
}

/* An i32 tensor of shape s holding base, base+1, ... */
static ag_tensor iota_i32(ag_shape s, int32_t base)
{
    int32_t v[512];
    int64_t n = numel_of(s);
    assert_true(n <= 512);
    for (int64_t i = 0; i < n; i++)
        v[i] = base + (int32_t)i;
    return ag_from_data(AG_I32, s, v);
}

/* NumPy broadcasting of several shapes, computed independently of the
 * runtime: right-aligned, dims of 1 stretch. */
static ag_shape ref_broadcast(int n, const ag_shape *s)
{
    ag_shape out = {0, {0}};
    for (int k = 0; k < n; k++)
        if (s[k].rank > out.rank)
            out.rank = s[k].rank;
    for (int d = 0; d < out.rank; d++) {
        out.dims[d] = 1;
        for (int k = 0; k < n; k++) {
            int kd = d - (out.rank - s[k].rank);
            int64_t dim = kd >= 0 ? s[k].dims[kd] : 1;
            if (dim != 1)
                out.dims[d] = dim;
        }
    }
    return out;
}

/* The flat index into an input of shape s of the output element at flat
 * index i of shape out (plain division: this is the reference). */
static int64_t ref_index(ag_shape out, ag_shape s, int64_t i)
{
    int64_t idx = 0, stride = 1;
    for (int d = out.rank - 1; d >= 0; d--) {
        int64_t coord = i % out.dims[d];
        i /= out.dims[d];
        int sd = d - (out.rank - s.rank);
        if (sd >= 0) {
            if (s.dims[sd] != 1)
                idx += coord * stride;
            stride *= s.dims[sd];
        }
    }
    return idx;
}

/* Checks add(x, y) against the reference for these two shapes. */
static void check_add_broadcast(ag_shape xs, ag_shape ys)
{
    ag_tensor x = iota_i32(xs, 0), y = iota_i32(ys, 1000);
    ag_shape both[2] = {xs, ys};
    ag_shape want = ref_broadcast(2, both);
    ag_tensor r = ag_add(x, y);
    CHECK_TYPE(r, AG_I32, want);
    for (int64_t i = 0; i < numel_of(want); i++) {
        int32_t expect =
            (int32_t)ref_index(want, xs, i) + 1000 + (int32_t)ref_index(want, ys, i);
        if (ag_get_i32(r, i) != expect)
            fail_msg("element %lld is %d, expected %d", (long long)i, ag_get_i32(r, i),
                     expect);
    }
}

/* Checks where(c, x, y) against the reference for three shapes. */
static void check_where_broadcast(ag_shape cs, ag_shape xs, ag_shape ys)
{
    uint8_t c[512];
    for (int64_t i = 0; i < numel_of(cs); i++)
        c[i] = (uint8_t)(i % 3 == 1);
    ag_tensor cond = ag_from_data(AG_BOOL, cs, c);
    ag_tensor x = iota_i32(xs, 100), y = iota_i32(ys, -100);
    ag_shape all[3] = {cs, xs, ys};
    ag_shape want = ref_broadcast(3, all);
    ag_tensor r = ag_where(cond, x, y);
    CHECK_TYPE(r, AG_I32, want);
    for (int64_t i = 0; i < numel_of(want); i++) {
        int32_t expect = c[ref_index(want, cs, i)] ? 100 + (int32_t)ref_index(want, xs, i)
                                                   : -100 + (int32_t)ref_index(want, ys, i);
        if (ag_get_i32(r, i) != expect)
            fail_msg("element %lld is %d, expected %d", (long long)i, ag_get_i32(r, i),
                     expect);
    }
}

/* ------------------------------------------------------- broadcasting */

static void test_broadcast_row(void **state)
{
    (void)state;
    ag_tensor x = F32(AG_SHAPE(2, 3), 1, 2, 3, 4, 5, 6);
    ag_tensor y = F32(AG_SHAPE(3), 10, 20, 30);
    ag_tensor r = ag_add(x, y);
    CHECK_TYPE(r, AG_F32, AG_SHAPE(2, 3));
    CHECK_VALUES(r, 11, 22, 33, 14, 25, 36);
    /* The other order, and an op that is not commutative. */
    CHECK_VALUES(ag_sub(y, x), 9, 18, 27, 6, 15, 24);
}

static void test_broadcast_outer(void **state)
{
    (void)state;
    ag_tensor x = F32(AG_SHAPE(2, 1), 1, 2);
    ag_tensor y = F32(AG_SHAPE(1, 3), 10, 20, 30);
    ag_tensor r = ag_mul(x, y);
    CHECK_TYPE(r, AG_F32, AG_SHAPE(2, 3));
    CHECK_VALUES(r, 10, 20, 30, 20, 40, 60);
    CHECK_VALUES(ag_sub(y, x), 9, 19, 29, 8, 18, 28);
}

static void test_broadcast_scalar(void **state)
{
    (void)state;
    ag_tensor x = F64(AG_SHAPE(3), 1, 2, 3);
    ag_tensor s = ag_scalar_f64(10);
    ag_tensor r = ag_sub(x, s);
    CHECK_TYPE(r, AG_F64, AG_SHAPE(3));
    CHECK_VALUES(r, -9, -8, -7);
    CHECK_VALUES(ag_sub(s, x), 9, 8, 7);
    /* A [1] tensor acts as a scalar too. */
    ag_tensor one = F64(AG_SHAPE(1), 100);
    CHECK_VALUES(ag_add(x, one), 101, 102, 103);
    ag_tensor ss = ag_add(ag_scalar_i32(2), ag_scalar_i32(40));
    CHECK_TYPE(ss, AG_I32, AG_SCALAR);
    CHECK_VALUES(ss, 42);
    /* A [1,1] tensor and a scalar broadcast to [1,1]. */
    ag_tensor r11 = ag_add(F32(AG_SHAPE(1, 1), 5), ag_scalar_f32(1));
    CHECK_TYPE(r11, AG_F32, AG_SHAPE(1, 1));
    CHECK_VALUES(r11, 6);
}

static void test_broadcast_rank4(void **state)
{
    (void)state;
    ag_tensor x = iota_i32(AG_SHAPE(2, 3, 2, 4), 0);
    ag_tensor y = I32(AG_SHAPE(4), 1000, 2000, 3000, 4000);
    ag_tensor r = ag_add(x, y);
    CHECK_TYPE(r, AG_I32, AG_SHAPE(2, 3, 2, 4));
    for (int i = 0; i < 48; i++)
        assert_int_equal(ag_get_i32(r, i), i + 1000 * (i % 4 + 1));
    check_add_broadcast(AG_SHAPE(2, 3, 2, 4), AG_SHAPE(4));
    check_add_broadcast(AG_SHAPE(4), AG_SHAPE(2, 3, 2, 4));
    check_add_broadcast(AG_SHAPE(2, 3, 2, 4), AG_SHAPE(3, 1, 1));
}

static void test_broadcast_general(void **state)
{
    (void)state;
    /* Patterns that the walk cannot flatten into one run: each needs the
     * odometer over several outer dims, with strides 0 in between. */
    check_add_broadcast(AG_SHAPE(1, 3, 1), AG_SHAPE(2, 1, 4));
    check_add_broadcast(AG_SHAPE(2, 1, 3, 1), AG_SHAPE(1, 4, 1, 5));
    check_add_broadcast(AG_SHAPE(3, 1), AG_SHAPE(2, 1, 4));
    check_add_broadcast(AG_SHAPE(2, 3, 4), AG_SHAPE(2, 1, 4));
    check_add_broadcast(AG_SHAPE(2, 3, 4), AG_SHAPE(2, 3, 1));
    check_add_broadcast(AG_SHAPE(5, 1, 1, 2), AG_SHAPE(1, 1, 3, 1));
    check_add_broadcast(AG_SHAPE(1, 2, 1, 3, 1), AG_SHAPE(2, 1, 2, 1, 2));
}

static void test_broadcast_size_one_dims(void **state)
{
    (void)state;
    /* Size-1 dims on both sides that do not broadcast anything. */
    ag_tensor x = F32(AG_SHAPE(1, 3, 1), 1, 2, 3);
    ag_tensor y = F32(AG_SHAPE(1, 3, 1), 10, 20, 30);
    ag_tensor r = ag_add(x, y);
    CHECK_TYPE(r, AG_F32, AG_SHAPE(1, 3, 1));
    CHECK_VALUES(r, 11, 22, 33);
    ag_tensor r2 = ag_add(x, F32(AG_SHAPE(3, 1), 10, 20, 30));
    CHECK_TYPE(r2, AG_F32, AG_SHAPE(1, 3, 1));
    CHECK_VALUES(r2, 11, 22, 33);
    check_add_broadcast(AG_SHAPE(1, 1, 1), AG_SHAPE(1));
    check_add_broadcast(AG_SHAPE(1, 3, 1, 2), AG_SHAPE(2, 1, 1, 1));
}

static void test_broadcast_empty(void **state)
{
    (void)state;
    ag_tensor x = ag_zeros(AG_F32, AG_SHAPE(0, 3));
    ag_tensor y = F32(AG_SHAPE(3), 1, 2, 3);
    CHECK_TYPE(ag_add(x, y), AG_F32, AG_SHAPE(0, 3));
    CHECK_TYPE(ag_add(y, x), AG_F32, AG_SHAPE(0, 3));
    CHECK_TYPE(ag_mul(ag_zeros(AG_I32, AG_SHAPE(0)), 2), AG_I32, AG_SHAPE(0));
    CHECK_TYPE(ag_add(ag_zeros(AG_F32, AG_SHAPE(2, 0)), ag_zeros(AG_F32, AG_SHAPE(1, 0))),
               AG_F32, AG_SHAPE(2, 0));
    CHECK_TYPE(ag_less(x, y), AG_BOOL, AG_SHAPE(0, 3));
    /* Nothing is divided, so a zero divisor is no error. */
    CHECK_TYPE(ag_div(ag_zeros(AG_I32, AG_SHAPE(0, 2)), I32(AG_SHAPE(2), 0, 1)), AG_I32,
               AG_SHAPE(0, 2));
    CHECK_TYPE(ag_pow(ag_zeros(AG_I32, AG_SHAPE(0)), -1), AG_I32, AG_SHAPE(0));
    ag_tensor c = ag_zeros(AG_BOOL, AG_SHAPE(0, 1));
    CHECK_TYPE(ag_where(c, y, 0.0f), AG_F32, AG_SHAPE(0, 3));
    CHECK_TYPE(ag_neg(x), AG_F32, AG_SHAPE(0, 3));
    CHECK_TYPE(ag_exp(x), AG_F32, AG_SHAPE(0, 3));
    CHECK_TYPE(ag_cast(x, AG_I64), AG_I64, AG_SHAPE(0, 3));
    CHECK_TYPE(ag_cast(x, AG_F32), AG_F32, AG_SHAPE(0, 3));
    CHECK_TYPE(ag_logical_not(ag_zeros(AG_BOOL, AG_SHAPE(0))), AG_BOOL, AG_SHAPE(0));
}

static void test_broadcast_errors(void **state)
{
    (void)state;
    ag_tensor x = F32(AG_SHAPE(2, 3), 1, 2, 3, 4, 5, 6);
    ag_tensor y = F32(AG_SHAPE(4), 1, 2, 3, 4);
    EXPECT_ERROR(ag_add(x, y), "[2,3] and [4] cannot be broadcast");
    EXPECT_ERROR(ag_add(x, y), "ag_add: ");
    EXPECT_ERROR(ag_equal(x, y), "[2,3] and [4]");
    EXPECT_ERROR(ag_add(ag_zeros(AG_F32, AG_SHAPE(0)), y), "[0] and [4]");
    ag_tensor c = BOOLS(AG_SHAPE(2), 1, 0);
    EXPECT_ERROR(ag_where(c, x, 0.0f), "cannot be broadcast");
    EXPECT_ERROR(ag_add(x, I32(AG_SHAPE(3), 1, 2, 3)), "different dtypes, f32 and i32");
    EXPECT_ERROR(ag_mul(ag_scalar_f64(1), ag_scalar_f32(1)), "different dtypes");
    EXPECT_ERROR(ag_where(c, F32(AG_SHAPE(2), 1, 2), F64(AG_SHAPE(2), 1, 2)),
                 "different dtypes");
    EXPECT_ERROR(ag_add(BOOLS(AG_SHAPE(1), 1), BOOLS(AG_SHAPE(1), 1)), "numeric");
}

static void test_weak_numbers(void **state)
{
    (void)state;
    ag_tensor x = F32(AG_SHAPE(3), 1, 2, 4);
    CHECK_VALUES(ag_add(x, 1), 2, 3, 5);
    CHECK_VALUES(ag_mul(2.5, x), 2.5, 5, 10);
    CHECK_VALUES(ag_sub(1, x), 0, -1, -3);
    CHECK_VALUES(ag_div(1, x), 1, 0.5, 0.25);
    CHECK_VALUES(ag_div(x, 2), 0.5, 1, 2);
    ag_tensor i = I64(AG_SHAPE(2), 7, -7);
    ag_tensor q = ag_floordiv(i, 2);
    CHECK_TYPE(q, AG_I64, AG_SHAPE(2));
    CHECK_VALUES(q, 3, -4);
    CHECK_VALUES(ag_floordiv(20, i), 2, -3);
    CHECK_VALUES(ag_greater(x, 1.5), 0, 1, 1);
    CHECK_VALUES(ag_pow(2, I32(AG_SHAPE(3), 0, 1, 10)), 1, 2, 1024);
    ag_tensor h = BF16(AG_SHAPE(2), 1, 2);
    ag_tensor hs = ag_add(h, 0.5);
    CHECK_TYPE(hs, AG_BF16, AG_SHAPE(2));
    CHECK_VALUES(hs, 1.5, 2.5);
}

/* --------------------------------------------------- integer arithmetic */

static void test_int_division_negatives(void **state)
{
    (void)state;
    ag_tensor x = I32(AG_SHAPE(4), 7, -7, 7, -7);
    ag_tensor y = I32(AG_SHAPE(4), 2, 2, -2, -2);
    /* div truncates toward zero (C), floordiv and mod floor (Python, TF). */
    CHECK_VALUES(ag_div(x, y), 3, -3, -3, 3);
    CHECK_VALUES(ag_floordiv(x, y), 3, -4, -4, 3);
    CHECK_VALUES(ag_mod(x, y), 1, 1, -1, -1);
    /* Exact quotients need no adjustment. */
    ag_tensor e = I32(AG_SHAPE(3), -6, 6, 0);
    CHECK_VALUES(ag_floordiv(e, -3), 2, -2, 0);
    CHECK_VALUES(ag_mod(e, -3), 0, 0, 0);
    ag_tensor x64 = I64(AG_SHAPE(4), 7, -7, 7, -7);
    ag_tensor y64 = I64(AG_SHAPE(4), 2, 2, -2, -2);
    CHECK_VALUES(ag_div(x64, y64), 3, -3, -3, 3);
    CHECK_VALUES(ag_floordiv(x64, y64), 3, -4, -4, 3);
    CHECK_VALUES(ag_mod(x64, y64), 1, 1, -1, -1);
    /* floordiv(x, y) * y + mod(x, y) == x over a range of values. */
    ag_tensor a = iota_i32(AG_SHAPE(21), -10);
    ag_tensor b = I32(AG_SHAPE(3, 1), 3, -4, 1);
    ag_tensor back = ag_add(ag_mul(ag_floordiv(a, b), b), ag_mod(a, b));
    CHECK_TYPE(back, AG_I32, AG_SHAPE(3, 21));
    for (int i = 0; i < 63; i++)
        assert_int_equal(ag_get_i32(back, i), i % 21 - 10);
}

static void test_int_division_by_zero(void **state)
{
    (void)state;
    ag_tensor x = I32(AG_SHAPE(3), 1, 2, 3);
    ag_tensor z = I32(AG_SHAPE(3), 1, 0, 1);
    EXPECT_ERROR(ag_div(x, z), "ag_div: integer division by zero");
    EXPECT_ERROR(ag_floordiv(x, z), "ag_floordiv: integer division by zero");
    EXPECT_ERROR(ag_mod(x, z), "ag_mod: integer division by zero");
    EXPECT_ERROR(ag_div(x, 0), "integer division by zero");
    EXPECT_ERROR(ag_mod(I64(AG_SHAPE(1), 5), I64(AG_SHAPE(2, 1), 3, 0)),
                 "integer division by zero");
    /* A zero dividend is fine. */
    CHECK_VALUES(ag_div(0, x), 0, 0, 0);
}

static void test_int_min_over_minus_one(void **state)
{
    (void)state;
    ag_tensor x = I32(AG_SHAPE(2), INT32_MIN, 5);
    ag_tensor q = ag_div(x, -1);
    assert_int_equal(ag_get_i32(q, 0), INT32_MIN);
    assert_int_equal(ag_get_i32(q, 1), -5);
    assert_int_equal(ag_get_i32(ag_floordiv(x, -1), 0), INT32_MIN);
    CHECK_VALUES(ag_mod(x, -1), 0, 0);
    ag_tensor x64 = I64(AG_SHAPE(1), INT64_MIN);
    assert_true(ag_get_i64(ag_div(x64, -1), 0) == INT64_MIN);
    assert_true(ag_get_i64(ag_floordiv(x64, -1), 0) == INT64_MIN);
    assert_true(ag_get_i64(ag_mod(x64, -1), 0) == 0);
    /* Other divisors of INT_MIN are ordinary. */
    assert_int_equal(ag_get_i32(ag_floordiv(x, 2), 0), INT32_MIN / 2);
    assert_int_equal(ag_get_i32(ag_mod(x, 3), 0), 1); /* -2147483648 = 3 * -715827883 + 1 */
}

static void test_int_wrapping(void **state)
{
    (void)state;
    ag_tensor x = I32(AG_SHAPE(3), INT32_MAX, INT32_MIN, 65536);
    ag_tensor s = ag_add(x, 1);
    assert_int_equal(ag_get_i32(s, 0), INT32_MIN);
    assert_int_equal(ag_get_i32(s, 1), INT32_MIN + 1);
    assert_int_equal(ag_get_i32(ag_sub(x, 1), 1), INT32_MAX);
    ag_tensor m = ag_mul(x, x);
    assert_int_equal(ag_get_i32(m, 0), 1);
    assert_int_equal(ag_get_i32(m, 1), 0);
    assert_int_equal(ag_get_i32(m, 2), 0);
    ag_tensor y = I64(AG_SHAPE(2), INT64_MAX, INT64_MIN);
    assert_true(ag_get_i64(ag_add(y, 1), 0) == INT64_MIN);
    assert_true(ag_get_i64(ag_sub(y, 1), 1) == INT64_MAX);
    assert_true(ag_get_i64(ag_mul(y, 2), 0) == -2);
    assert_true(ag_get_i64(ag_neg(y), 1) == INT64_MIN);
    assert_true(ag_get_i64(ag_abs(y), 1) == INT64_MIN);
}

static void test_int_pow(void **state)
{
    (void)state;
    ag_tensor b = I32(AG_SHAPE(6), 2, -3, 0, 5, -1, 2);
    ag_tensor e = I32(AG_SHAPE(6), 10, 3, 0, 1, 7, 31);
    ag_tensor p = ag_pow(b, e);
    CHECK_TYPE(p, AG_I32, AG_SHAPE(6));
    CHECK_VALUES(p, 1024, -27, 1, 5, -1, INT32_MIN);
    /* Wrapping: 3^40 modulo 2^64, as two's complement. */
    uint64_t want = 1;
    for (int i = 0; i < 40; i++)
        want *= 3;
    ag_tensor p64 = ag_pow(I64(AG_SHAPE(1), 3), I64(AG_SHAPE(1), 40));
    assert_true(ag_get_i64(p64, 0) == (int64_t)want);
    assert_true(ag_get_i64(ag_pow(I64(AG_SHAPE(1), -2), I64(AG_SHAPE(1), 63)), 0) ==
                INT64_MIN);
    EXPECT_ERROR(ag_pow(b, I32(AG_SHAPE(6), 1, 1, 1, -1, 1, 1)),
                 "ag_pow: integers to negative integer powers are not allowed");
    EXPECT_ERROR(ag_pow(I64(AG_SHAPE(1), 1), I64(AG_SHAPE(1), -2)),
                 "negative integer powers");
    /* Floats use pow(). */
    ag_tensor f = ag_pow(F32(AG_SHAPE(3), 2, 4, -8), F32(AG_SHAPE(3), -1, 0.5, 1.0f / 3));
    CHECK_VALUES(f, 0.5, 2, NAN);
    CHECK_VALUES(ag_pow(F64(AG_SHAPE(2), 0, 10), -1.0), INFINITY, 0.1);
}

/* ----------------------------------------------------- float arithmetic */

static void test_float_division(void **state)
{
    (void)state;
    ag_tensor x = F32(AG_SHAPE(4), 1, -1, 0, 7.5);
    ag_tensor z = ag_div(x, 0.0f);
    CHECK_VALUES(z, INFINITY, -INFINITY, NAN, INFINITY);
    ag_tensor f = F64(AG_SHAPE(4), 7.5, -7.5, 7.5, -7.5);
    ag_tensor g = F64(AG_SHAPE(4), 2, 2, -2, -2);
    CHECK_VALUES(ag_div(f, g), 3.75, -3.75, -3.75, 3.75);
    CHECK_VALUES(ag_floordiv(f, g), 3, -4, -4, 3);
    /* floormod: the result has the divisor's sign. */
    CHECK_VALUES(ag_mod(f, g), 1.5, 0.5, -0.5, -1.5);
    CHECK_VALUES(ag_mod(F32(AG_SHAPE(3), 6, -6, 1), F32(AG_SHAPE(3), 3, 3, 0)), 0, 0, NAN);
    CHECK_VALUES(ag_floordiv(F32(AG_SHAPE(2), 1, -1), 0.0f), INFINITY, -INFINITY);
    ag_tensor h = ag_mod(BF16(AG_SHAPE(2), -7, 7), BF16(AG_SHAPE(2), 2, -2));
    CHECK_TYPE(h, AG_BF16, AG_SHAPE(2));
    CHECK_VALUES(h, 1, -1);
}

static void test_maximum_minimum(void **state)
{
    (void)state;
    ag_tensor x = F32(AG_SHAPE(4), 1, NAN, 3, -INFINITY);
    ag_tensor y = F32(AG_SHAPE(4), NAN, 2, 1, -5);
    CHECK_VALUES(ag_maximum(x, y), NAN, NAN, 3, -5);
    CHECK_VALUES(ag_minimum(x, y), NAN, NAN, 1, -INFINITY);
    CHECK_VALUES(ag_maximum(F64(AG_SHAPE(2), NAN, 1), 0.0), NAN, 1);
    CHECK_VALUES(ag_minimum(0.0, F64(AG_SHAPE(2), NAN, 1)), NAN, 0);
    CHECK_VALUES(ag_maximum(BF16(AG_SHAPE(2), NAN, 1), BF16(AG_SHAPE(2), 1, 2)), NAN, 2);
    ag_tensor i = I32(AG_SHAPE(3), INT32_MIN, 0, 5);
    CHECK_VALUES(ag_maximum(i, -1), -1, 0, 5);
    CHECK_VALUES(ag_minimum(i, -1), INT32_MIN, -1, -1);
    ag_tensor m = ag_maximum(I64(AG_SHAPE(2), 3, -3), I64(AG_SHAPE(2, 1), 0, 4));
    CHECK_VALUES(m, 3, 0, 4, 4);
}

static void test_bf16_arithmetic(void **state)
{
    (void)state;
    /* 1 + 2^-8 is a tie between 1 and 1 + 2^-7: the even one, 1, wins. */
    ag_tensor one = BF16(AG_SHAPE(2), 1, 1);
    ag_tensor r = ag_add(one, BF16(AG_SHAPE(2), 0.00390625f, 0.01171875f));
    CHECK_TYPE(r, AG_BF16, AG_SHAPE(2));
    assert_int_equal(bf16_bits(r, 0), 0x3F80);
    /* 1 + 3 * 2^-8 is a tie too, and rounds up to the even 1 + 2^-6. */
    assert_int_equal(bf16_bits(r, 1), 0x3F82);
    /* Each result is rounded: (1 + 2^-8) + 2^-8 computed step by step. */
    ag_tensor tiny = ag_scalar_bf16(0.00390625);
    ag_tensor step = ag_add(ag_add(ag_scalar_bf16(1), tiny), tiny);
    assert_int_equal(bf16_bits(step, 0), 0x3F80);
    CHECK_VALUES(ag_mul(BF16(AG_SHAPE(2), 3, -0.5), 2), 6, -1);
    CHECK_VALUES(ag_div(BF16(AG_SHAPE(1), 1), 3), 0.333984375);
    CHECK_VALUES(ag_add(BF16(AG_SHAPE(1), 256), 1), 256); /* 257 needs 9 bits: a tie */
    CHECK_VALUES(ag_floordiv(BF16(AG_SHAPE(2), 7, -7), 2), 3, -4);
    CHECK_VALUES(ag_pow(BF16(AG_SHAPE(1), 2), 8), 256);
}

/* ---------------------------------------------------------- comparisons */

static void test_comparisons(void **state)
{
    (void)state;
    ag_tensor x = F32(AG_SHAPE(4), 1, 2, 3, NAN);
    ag_tensor y = F32(AG_SHAPE(4), 2, 2, 2, NAN);
    ag_tensor r = ag_equal(x, y);
    CHECK_TYPE(r, AG_BOOL, AG_SHAPE(4));
    CHECK_VALUES(r, 0, 1, 0, 0);
    CHECK_VALUES(ag_not_equal(x, y), 1, 0, 1, 1);
    CHECK_VALUES(ag_less(x, y), 1, 0, 0, 0);
    CHECK_VALUES(ag_less_equal(x, y), 1, 1, 0, 0);
    CHECK_VALUES(ag_greater(x, y), 0, 0, 1, 0);
    CHECK_VALUES(ag_greater_equal(x, y), 0, 1, 1, 0);
    ag_tensor i = I32(AG_SHAPE(3), -1, 0, 1);
    CHECK_VALUES(ag_equal(i, 0), 0, 1, 0);
    CHECK_VALUES(ag_not_equal(i, 0), 1, 0, 1);
    CHECK_VALUES(ag_less(i, 0), 1, 0, 0);
    CHECK_VALUES(ag_less_equal(i, 0), 1, 1, 0);
    CHECK_VALUES(ag_greater(0, i), 1, 0, 0);
    CHECK_VALUES(ag_greater_equal(i, 0), 0, 1, 1);
    ag_tensor l = I64(AG_SHAPE(2), INT64_MAX, INT64_MAX - 1);
    CHECK_VALUES(ag_less(l, I64(AG_SHAPE(1), INT64_MAX)), 0, 1);
    ag_tensor d = F64(AG_SHAPE(2, 1), 1, 2);
    ag_tensor c = ag_greater(d, F64(AG_SHAPE(3), 0, 1, 2));
    CHECK_TYPE(c, AG_BOOL, AG_SHAPE(2, 3));
    CHECK_VALUES(c, 1, 0, 0, 1, 1, 0);
    ag_tensor h = BF16(AG_SHAPE(3), 1, 2, NAN);
    CHECK_VALUES(ag_less(h, BF16(AG_SHAPE(1), 2)), 1, 0, 0);
    CHECK_VALUES(ag_equal(h, h), 1, 1, 0);
    /* equal and not_equal also take bools; ordering them does not. */
    ag_tensor b = BOOLS(AG_SHAPE(4), 0, 0, 1, 1);
    ag_tensor b2 = BOOLS(AG_SHAPE(4), 0, 1, 0, 1);
    CHECK_VALUES(ag_equal(b, b2), 1, 0, 0, 1);
    CHECK_VALUES(ag_not_equal(b, b2), 0, 1, 1, 0);
    CHECK_VALUES(ag_equal(b, true), 0, 0, 1, 1);
    EXPECT_ERROR(ag_less(b, b2), "ag_less: expects numeric tensors, got a bool tensor");
    EXPECT_ERROR(ag_equal(x, i), "different dtypes");
}

/* ---------------------------------------------------------------- logic */

static void test_logical(void **state)
{
    (void)state;
    ag_tensor a = BOOLS(AG_SHAPE(4), 0, 0, 1, 1);
    ag_tensor b = BOOLS(AG_SHAPE(4), 0, 1, 0, 1);
    ag_tensor r = ag_logical_and(a, b);
    CHECK_TYPE(r, AG_BOOL, AG_SHAPE(4));
    CHECK_VALUES(r, 0, 0, 0, 1);
    CHECK_VALUES(ag_logical_or(a, b), 0, 1, 1, 1);
    CHECK_VALUES(ag_logical_not(a), 1, 1, 0, 0);
    CHECK_VALUES(ag_logical_and(a, true), 0, 0, 1, 1);
    CHECK_VALUES(ag_logical_or(false, b), 0, 1, 0, 1);
    ag_tensor col = BOOLS(AG_SHAPE(2, 1), 1, 0);
    ag_tensor row = BOOLS(AG_SHAPE(3), 1, 0, 1);
    CHECK_VALUES(ag_logical_and(col, row), 1, 0, 1, 0, 0, 0);
    CHECK_VALUES(ag_logical_or(col, row), 1, 1, 1, 1, 0, 1);
    ag_tensor f = F32(AG_SHAPE(4), 0, 1, 0, 1);
    EXPECT_ERROR(ag_logical_and(a, f), "expects bool tensors, got a f32 tensor");
    EXPECT_ERROR(ag_logical_or(I32(AG_SHAPE(1), 1), a), "bool tensors");
    EXPECT_ERROR(ag_logical_not(f), "ag_logical_not: expects bool tensors");
}

/* ---------------------------------------------------------------- where */

static void test_where(void **state)
{
    (void)state;
    ag_tensor c = BOOLS(AG_SHAPE(3), 1, 0, 1);
    ag_tensor x = F32(AG_SHAPE(3), 1, 2, 3);
    ag_tensor y = F32(AG_SHAPE(3), -1, -2, -3);
    ag_tensor r = ag_where(c, x, y);
    CHECK_TYPE(r, AG_F32, AG_SHAPE(3));
    CHECK_VALUES(r, 1, -2, 3);
    /* cond [2,1], a [1,3], b scalar. */
    ag_tensor c2 = BOOLS(AG_SHAPE(2, 1), 1, 0);
    ag_tensor r2 = ag_where(c2, I32(AG_SHAPE(1, 3), 1, 2, 3), 0);
    CHECK_TYPE(r2, AG_I32, AG_SHAPE(2, 3));
    CHECK_VALUES(r2, 1, 2, 3, 0, 0, 0);
    /* A scalar condition picks a whole branch. */
    CHECK_VALUES(ag_where(ag_scalar_bool(false), x, y), -1, -2, -3);
    /* Every dtype. */
    CHECK_VALUES(ag_where(c, F64(AG_SHAPE(1), 1.5), -1.5), 1.5, -1.5, 1.5);
    CHECK_VALUES(ag_where(c, BF16(AG_SHAPE(3), 1, 2, 3), 0.5), 1, 0.5, 3);
    assert_true(ag_get_i64(ag_where(c, INT64_MAX, I64(AG_SHAPE(1), -1)), 0) == INT64_MAX);
    CHECK_VALUES(ag_where(c, false, true), 0, 1, 0);
    /* Against the reference, including a condition that is broadcast. */
    check_where_broadcast(AG_SHAPE(2, 3), AG_SHAPE(2, 3), AG_SHAPE(2, 3));
    check_where_broadcast(AG_SHAPE(2, 1, 4), AG_SHAPE(3, 1), AG_SHAPE(4));
    check_where_broadcast(AG_SHAPE(3, 1), AG_SHAPE(1, 4), AG_SHAPE(3, 4));
    check_where_broadcast(AG_SHAPE(1), AG_SHAPE(2, 2, 2), AG_SHAPE(2, 1, 2));
    check_where_broadcast(AG_SHAPE(5), AG_SHAPE(2, 1), AG_SHAPE(1));
    EXPECT_ERROR(ag_where(F32(AG_SHAPE(3), 1, 0, 1), x, y),
                 "ag_where: expects a bool condition, got a f32 tensor");
    EXPECT_ERROR(ag_where(c, x, I32(AG_SHAPE(3), 1, 2, 3)), "different dtypes");
}

/* ---------------------------------------------------------------- unary */

static void test_unary_numeric(void **state)
{
    (void)state;
    ag_tensor x = F32(AG_SHAPE(6), -2.5, 0, 3, NAN, INFINITY, -INFINITY);
    CHECK_VALUES(ag_neg(x), 2.5, 0, -3, NAN, -INFINITY, INFINITY);
    CHECK_VALUES(ag_abs(x), 2.5, 0, 3, NAN, INFINITY, INFINITY);
    CHECK_VALUES(ag_square(x), 6.25, 0, 9, NAN, INFINITY, INFINITY);
    CHECK_VALUES(ag_sign(x), -1, 0, 1, NAN, 1, -1);
    CHECK_VALUES(ag_relu(x), 0, 0, 3, NAN, INFINITY, 0);
    ag_tensor i = I32(AG_SHAPE(4), -7, 0, 5, INT32_MIN);
    ag_tensor n = ag_neg(i);
    CHECK_TYPE(n, AG_I32, AG_SHAPE(4));
    CHECK_VALUES(n, 7, 0, -5, INT32_MIN);
    CHECK_VALUES(ag_abs(i), 7, 0, 5, INT32_MIN);
    CHECK_VALUES(ag_square(I32(AG_SHAPE(2), -7, 65536)), 49, 0);
    CHECK_VALUES(ag_sign(i), -1, 0, 1, -1);
    CHECK_VALUES(ag_relu(i), 0, 0, 5, 0);
    ag_tensor l = I64(AG_SHAPE(3), -3, 0, INT64_MAX);
    CHECK_VALUES(ag_sign(l), -1, 0, 1);
    assert_true(ag_get_i64(ag_relu(l), 2) == INT64_MAX);
    CHECK_VALUES(ag_square(l), 9, 0, 1);
    ag_tensor d = F64(AG_SHAPE(3), -0.5, 2, NAN);
    CHECK_VALUES(ag_square(d), 0.25, 4, NAN);
    CHECK_VALUES(ag_sign(d), -1, 1, NAN);
    ag_tensor h = ag_neg(BF16(AG_SHAPE(2), 1.5, -2));
    CHECK_TYPE(h, AG_BF16, AG_SHAPE(2));
    CHECK_VALUES(h, -1.5, 2);
    /* The square of 1 + 2^-7 needs 15 bits; bf16 keeps 8. */
    CHECK_VALUES(ag_square(BF16(AG_SHAPE(1), 1.0078125f)), 1.015625);
    /* Rank 0 keeps its shape. */
    ag_tensor s = ag_abs(ag_scalar_i64(-4));
    CHECK_TYPE(s, AG_I64, AG_SCALAR);
    CHECK_VALUES(s, 4);
}

static void test_unary_float(void **state)
{
    (void)state;
    ag_tensor x = F32(AG_SHAPE(5), 0, 1, -1, INFINITY, NAN);
    CHECK_CLOSE(ag_exp(x), 1e-6, 1, 2.718281828, 0.367879441, INFINITY, NAN);
    CHECK_CLOSE(ag_tanh(x), 1e-6, 0, 0.761594156, -0.761594156, 1, NAN);
    CHECK_CLOSE(ag_sigmoid(x), 1e-6, 0.5, 0.731058579, 0.268941421, 1, NAN);
    ag_tensor p = F64(AG_SHAPE(5), 4, 1, 0, -1, INFINITY);
    CHECK_VALUES(ag_sqrt(p), 2, 1, 0, NAN, INFINITY);
    CHECK_VALUES(ag_rsqrt(p), 0.5, 1, INFINITY, NAN, 0);
    CHECK_CLOSE(ag_log(p), 1e-12, 1.386294361119891, 0, -INFINITY, NAN, INFINITY);
    ag_tensor f = F32(AG_SHAPE(6), -2.5, -0.5, 0.5, 2, NAN, -INFINITY);
    CHECK_VALUES(ag_floor(f), -3, -1, 0, 2, NAN, -INFINITY);
    CHECK_VALUES(ag_ceil(f), -2, 0, 1, 2, NAN, -INFINITY);
    /* sigmoid must not overflow: exp(1000) would be inf, inf/inf NaN. */
    ag_tensor big = F64(AG_SHAPE(4), 1000, -1000, 800, -INFINITY);
    CHECK_VALUES(ag_sigmoid(big), 1, 0, 1, 0);
    /* exp(-100) is an f32 subnormal (spacing 1.4e-45). */
    CHECK_CLOSE(ag_sigmoid(F32(AG_SHAPE(2), 100, -100)), 2e-45, 1, 3.72007598e-44);
    ag_tensor h = BF16(AG_SHAPE(3), 0, 1, 4);
    ag_tensor e = ag_exp(h);
    CHECK_TYPE(e, AG_BF16, AG_SHAPE(3));
    CHECK_VALUES(e, 1, 2.71875, 54.5); /* exp rounded to 8 significant bits */
    CHECK_VALUES(ag_sqrt(h), 0, 1, 2);
    CHECK_VALUES(ag_rsqrt(h), INFINITY, 1, 0.5);
    CHECK_VALUES(ag_log(BF16(AG_SHAPE(1), 1)), 0);
    CHECK_VALUES(ag_tanh(BF16(AG_SHAPE(1), 0)), 0);
    CHECK_VALUES(ag_sigmoid(BF16(AG_SHAPE(1), 0)), 0.5);
    CHECK_VALUES(ag_floor(BF16(AG_SHAPE(1), -1.5)), -2);
    CHECK_VALUES(ag_ceil(BF16(AG_SHAPE(1), -1.5)), -1);
    CHECK_CLOSE(ag_exp(F64(AG_SHAPE(1), 1)), 1e-15, 2.718281828459045);
    CHECK_CLOSE(ag_tanh(F64(AG_SHAPE(1), 20)), 1e-15, 1);
}

static void test_unary_float_only(void **state)
{
    (void)state;
    ag_tensor i = I32(AG_SHAPE(2), 1, 4);
    EXPECT_ERROR(ag_exp(i), "ag_exp: expects a float tensor");
    EXPECT_ERROR(ag_log(i), "got a i32 tensor");
    EXPECT_ERROR(ag_sqrt(i), "float tensor");
    EXPECT_ERROR(ag_rsqrt(i), "float tensor");
    EXPECT_ERROR(ag_tanh(i), "float tensor");
    EXPECT_ERROR(ag_sigmoid(I64(AG_SHAPE(1), 1)), "float tensor");
    EXPECT_ERROR(ag_floor(i), "float tensor");
    EXPECT_ERROR(ag_ceil(i), "float tensor");
    EXPECT_ERROR(ag_neg(BOOLS(AG_SHAPE(1), 1)), "numeric");
    EXPECT_ERROR(ag_relu(BOOLS(AG_SHAPE(1), 1)), "numeric");
}

/* ----------------------------------------------------------------- cast */

static void test_cast_float_to_int(void **state)
{
    (void)state;
    ag_tensor x = F32(AG_SHAPE(7), 1e10f, -1e10f, NAN, -2.7f, 2.7f, INFINITY, -0.5f);
    ag_tensor r = ag_cast(x, AG_I32);
    CHECK_TYPE(r, AG_I32, AG_SHAPE(7));
    assert_int_equal(ag_get_i32(r, 0), INT32_MAX);
    assert_int_equal(ag_get_i32(r, 1), INT32_MIN);
    CHECK_VALUES(r, INT32_MAX, INT32_MIN, 0, -2, 2, INT32_MAX, 0);
    ag_tensor r64 = ag_cast(x, AG_I64);
    assert_true(ag_get_i64(r64, 0) == 10000000000LL);
    assert_true(ag_get_i64(r64, 2) == 0);
    assert_true(ag_get_i64(r64, 3) == -2);
    assert_true(ag_get_i64(r64, 5) == INT64_MAX);
    ag_tensor d = F64(AG_SHAPE(5), 1e300, -1e300, 2147483647.9, -2147483648.9, NAN);
    CHECK_VALUES(ag_cast(d, AG_I32), INT32_MAX, INT32_MIN, INT32_MAX, INT32_MIN, 0);
    ag_tensor d64 = ag_cast(d, AG_I64);
    assert_true(ag_get_i64(d64, 0) == INT64_MAX);
    assert_true(ag_get_i64(d64, 1) == INT64_MIN);
    assert_true(ag_get_i64(d64, 2) == 2147483647);
    assert_true(ag_get_i64(d64, 4) == 0);
    /* -2^63 converts exactly; 2^63 is just out of range. */
    ag_tensor edge = ag_cast(F64(AG_SHAPE(2), -0x1p63, 0x1p63), AG_I64);
    assert_true(ag_get_i64(edge, 0) == INT64_MIN);
    assert_true(ag_get_i64(edge, 1) == INT64_MAX);
    CHECK_VALUES(ag_cast(BF16(AG_SHAPE(3), -3.5, 1e10f, NAN), AG_I32), -3, INT32_MAX, 0);
    CHECK_VALUES(ag_cast(BF16(AG_SHAPE(2), -3.5, 1e30f), AG_I64), -3, 0x1p63);
}

static void test_cast_int_to_float(void **state)
{
    (void)state;
    ag_tensor i = I32(AG_SHAPE(3), -5, 16777217, INT32_MAX);
    ag_tensor f = ag_cast(i, AG_F32);
    CHECK_TYPE(f, AG_F32, AG_SHAPE(3));
    CHECK_VALUES(f, -5, 16777216, 2147483648.0);
    CHECK_VALUES(ag_cast(i, AG_F64), -5, 16777217, INT32_MAX);
    ag_tensor l = I64(AG_SHAPE(2), INT64_MIN, 9007199254740993LL);
    CHECK_VALUES(ag_cast(l, AG_F64), -9223372036854775808.0, 9007199254740992.0);
    CHECK_VALUES(ag_cast(l, AG_F32), -9223372036854775808.0, 9007199254740992.0);
    /* To bf16 (spacing 2 from 256, 4 from 512): 257 and 259 are ties and go
     * to the even neighbour; 771 is nearer 772. */
    ag_tensor h = ag_cast(I32(AG_SHAPE(4), 257, 259, 771, -259), AG_BF16);
    CHECK_TYPE(h, AG_BF16, AG_SHAPE(4));
    CHECK_VALUES(h, 256, 260, 772, -260);
    /* 2^32 + 2^24 + 1 is just above a bf16 tie; rounding it to f32 first
     * would land on the tie and round down to even. */
    ag_tensor h64 = ag_cast(I64(AG_SHAPE(3), 4311744513LL, 4311744512LL, -4311744513LL),
                            AG_BF16);
    CHECK_VALUES(h64, 4328521728.0, 4294967296.0, -4328521728.0);
    CHECK_VALUES(ag_cast(I64(AG_SHAPE(2), INT64_MAX, INT64_MIN), AG_BF16),
                 9223372036854775808.0, -9223372036854775808.0);
}

static void test_cast_between_floats(void **state)
{
    (void)state;
    ag_tensor x = F32(AG_SHAPE(4), 1.00390625f, 1.01171875f, 1.0040f, NAN);
    ag_tensor h = ag_cast(x, AG_BF16);
    CHECK_TYPE(h, AG_BF16, AG_SHAPE(4));
    assert_int_equal(bf16_bits(h, 0), 0x3F80); /* a tie: to even, down */
    assert_int_equal(bf16_bits(h, 1), 0x3F82); /* a tie: to even, up */
    assert_int_equal(bf16_bits(h, 2), 0x3F81); /* above the tie: up */
    CHECK_VALUES(h, 1, 1.015625, 1.0078125, NAN);
    ag_tensor back = ag_cast(h, AG_F32);
    CHECK_TYPE(back, AG_F32, AG_SHAPE(4));
    CHECK_VALUES(back, 1, 1.015625, 1.0078125, NAN);
    CHECK_VALUES(ag_cast(h, AG_F64), 1, 1.015625, 1.0078125, NAN);
    /* f64 -> bf16 rounds once: 1 + 2^-8 + 2^-30 is above the tie, though
     * its nearest f32 is the tie itself. */
    ag_tensor d = F64(AG_SHAPE(4), 1.00390625 + 0x1p-30, 1.00390625 - 0x1p-30, 1.00390625,
                      1e300);
    ag_tensor dh = ag_cast(d, AG_BF16);
    assert_int_equal(bf16_bits(dh, 0), 0x3F81);
    assert_int_equal(bf16_bits(dh, 1), 0x3F80);
    assert_int_equal(bf16_bits(dh, 2), 0x3F80);
    assert_int_equal(bf16_bits(dh, 3), 0x7F80); /* overflow: inf */
    ag_tensor f = ag_cast(F64(AG_SHAPE(3), 0.1, 1e300, -1e300), AG_F32);
    CHECK_VALUES(f, (double)0.1f, INFINITY, -INFINITY);
    CHECK_VALUES(ag_cast(F32(AG_SHAPE(2), 0.1f, NAN), AG_F64), (double)0.1f, NAN);
}

static void test_cast_bool(void **state)
{
    (void)state;
    ag_tensor x = F32(AG_SHAPE(5), 0, -0.0f, 0.5, NAN, -INFINITY);
    ag_tensor b = ag_cast(x, AG_BOOL);
    CHECK_TYPE(b, AG_BOOL, AG_SHAPE(5));
    CHECK_VALUES(b, 0, 0, 1, 1, 1);
    CHECK_VALUES(ag_cast(F64(AG_SHAPE(2), 0, NAN), AG_BOOL), 0, 1);
    CHECK_VALUES(ag_cast(BF16(AG_SHAPE(3), 0, -0.0f, 2), AG_BOOL), 0, 0, 1);
    CHECK_VALUES(ag_cast(I32(AG_SHAPE(3), 0, -1, 2), AG_BOOL), 0, 1, 1);
    CHECK_VALUES(ag_cast(I64(AG_SHAPE(2), 0, INT64_MIN), AG_BOOL), 0, 1);
    ag_tensor t = BOOLS(AG_SHAPE(2), 1, 0);
    CHECK_VALUES(ag_cast(t, AG_F32), 1, 0);
    CHECK_VALUES(ag_cast(t, AG_F64), 1, 0);
    CHECK_VALUES(ag_cast(t, AG_I32), 1, 0);
    CHECK_VALUES(ag_cast(t, AG_I64), 1, 0);
    ag_tensor th = ag_cast(t, AG_BF16);
    assert_int_equal(bf16_bits(th, 0), 0x3F80);
    assert_int_equal(bf16_bits(th, 1), 0x0000);
    /* The result of a comparison casts back to numbers. */
    CHECK_VALUES(ag_cast(ag_less(I32(AG_SHAPE(2), 1, 3), 2), AG_I32), 1, 0);
}

static void test_cast_between_ints(void **state)
{
    (void)state;
    ag_tensor l = I64(AG_SHAPE(4), 5, -5, 4294967297LL, INT64_MIN);
    ag_tensor r = ag_cast(l, AG_I32);
    CHECK_TYPE(r, AG_I32, AG_SHAPE(4));
    CHECK_VALUES(r, 5, -5, 1, 0); /* keeps the low 32 bits */
    ag_tensor w = ag_cast(I32(AG_SHAPE(2), INT32_MIN, -1), AG_I64);
    CHECK_TYPE(w, AG_I64, AG_SHAPE(2));
    CHECK_VALUES(w, INT32_MIN, -1);
    /* Same dtype: a copy. */
    ag_tensor same = ag_cast(l, AG_I64);
    CHECK_TYPE(same, AG_I64, AG_SHAPE(4));
    assert_true(ag_get_i64(same, 3) == INT64_MIN);
    ag_tensor hs = ag_cast(BF16(AG_SHAPE(1), 1.5), AG_BF16);
    CHECK_VALUES(hs, 1.5);
    /* Rank 0. */
    ag_tensor s = ag_cast(ag_scalar_f32(3.9f), AG_I64);
    CHECK_TYPE(s, AG_I64, AG_SCALAR);
    CHECK_VALUES(s, 3);
    EXPECT_ERROR(ag_cast(l, (ag_dtype)42), "invalid dtype");
}

/* A larger tensor, so the contiguous and scalar loops run long. */
static void test_long_runs(void **state)
{
    (void)state;
    float v[300];
    for (int i = 0; i < 300; i++)
        v[i] = (float)i;
    ag_tensor x = ag_from_data(AG_F32, AG_SHAPE(300), v);
    ag_tensor y = ag_add(ag_mul(x, 2), x);
    ag_tensor t = ag_from_data(AG_F32, AG_SHAPE(3, 100), v);
    ag_tensor col = F32(AG_SHAPE(3, 1), 1000, 2000, 3000);
    ag_tensor u = ag_add(t, col);
    for (int i = 0; i < 300; i++) {
        assert_float_equal(ag_get_f32(y, i), 3.0f * (float)i, 0);
        assert_float_equal(ag_get_f32(u, i), (float)i + 1000.0f * (float)(i / 100 + 1), 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_broadcast_row),
        TU_TEST(test_broadcast_outer),
        TU_TEST(test_broadcast_scalar),
        TU_TEST(test_broadcast_rank4),
        TU_TEST(test_broadcast_general),
        TU_TEST(test_broadcast_size_one_dims),
        TU_TEST(test_broadcast_empty),
        TU_TEST(test_broadcast_errors),
        TU_TEST(test_weak_numbers),
        TU_TEST(test_int_division_negatives),
        TU_TEST(test_int_division_by_zero),
        TU_TEST(test_int_min_over_minus_one),
        TU_TEST(test_int_wrapping),
        TU_TEST(test_int_pow),
        TU_TEST(test_float_division),
        TU_TEST(test_maximum_minimum),
        TU_TEST(test_bf16_arithmetic),
        TU_TEST(test_comparisons),
        TU_TEST(test_logical),
        TU_TEST(test_where),
        TU_TEST(test_unary_numeric),
        TU_TEST(test_unary_float),
        TU_TEST(test_unary_float_only),
        TU_TEST(test_cast_float_to_int),
        TU_TEST(test_cast_int_to_float),
        TU_TEST(test_cast_between_floats),
        TU_TEST(test_cast_bool),
        TU_TEST(test_cast_between_ints),
        TU_TEST(test_long_runs),
    };
    TU_RUN(tests);
}
