/*
 * test_quant.c - the i8 dtype and the quantized ops (kernels/quant.c):
 * each op's arithmetic on hand-computed cases (rounding ties, clamps, NaN,
 * per-channel scales, relu folded into requantize's range), their errors,
 * and one static-range layer that gives the same bits eagerly, compiled
 * for the cpu, interpreted (reference) and on the TPU-model; the vector
 * loops of quantize, dequantize and requantize and the fused layer (qmatmul + bias +
 * requantize in one pass, as the cpu target compiles it) on every path,
 * bit for bit the rules.
 */
#include "staged_util.h"

#include "cg_runtime.h"
#include "quant_rows.h"

#include <math.h>
#include <string.h>

#define I8(shape, ...) ag_from_data(AG_I8, shape, ((const int8_t[]){__VA_ARGS__}))

/* ------------------------------------------------------------- the dtype */

static void test_i8_arithmetic_wraps_and_casts_saturate(void **state)
{
    (void)state;
    ag_tensor a = I8(AG_SHAPE(4), 100, -128, 127, -7);
    ag_tensor b = I8(AG_SHAPE(4), 100, -1, 1, 2);
    CHECK_TYPE(ag_add(a, b), AG_I8, AG_SHAPE(4));
    CHECK_VALUES(ag_add(a, b), -56, 127, -128, -5);
    CHECK_VALUES(ag_mul(a, b), 16, -128, 127, -14);
    CHECK_VALUES(ag_div(a, b), 1, -128, 127, -3); /* -128 / -1 wraps */
    CHECK_VALUES(ag_neg(a), -100, -128, -127, 7);
    CHECK_VALUES(ag_add(a, 1), 101, -127, -128, -6);
    EXPECT_ERROR(ag_add(a, 200), "cannot be converted to i8");
    /* floats truncate and saturate, NaN gives 0; integers keep the low byte */
    CHECK_VALUES(ag_cast(F32(AG_SHAPE(5), 2.9f, -2.9f, 1000, -1000, NAN), AG_I8), 2, -2, 127,
                 -128, 0);
    CHECK_VALUES(ag_cast(I32(AG_SHAPE(3), 255, 256, -129), AG_I8), -1, 0, 127);
    CHECK_VALUES(ag_cast(a, AG_I32), 100, -128, 127, -7);
    EXPECT_ERROR(ag_matmul(I8(AG_SHAPE(1, 1), 1), I8(AG_SHAPE(1, 1), 1)),
                 "does not take i8 tensors");
    EXPECT_ERROR(ag_reduce_sum(a, AG_ALL_AXES, false), "use ag_qmatmul or ag_qconv2d");
}

/* ------------------------------------------------------------- quantize */

static void test_quantize_rounds_half_away_and_clamps(void **state)
{
    (void)state;
    ag_tensor x = F32(AG_SHAPE(9), 2.5f, -2.5f, 0.4f, -0.6f, 1000, -1000, NAN, INFINITY, 1.5f);
    ag_tensor q = ag_quantize(x, ag_scalar_f32(1), ag_scalar_i32(0));
    CHECK_TYPE(q, AG_I8, AG_SHAPE(9));
    CHECK_VALUES(q, 3, -3, 0, -1, 127, -128, 0, 127, 2);
    /* x / 0.5 ties at 1.25 -> 2.5 -> 3, then + 10; NaN gives the zero point */
    ag_tensor y = F32(AG_SHAPE(4), 1.25f, -1.25f, NAN, 58.75f);
    CHECK_VALUES(ag_quantize(y, ag_scalar_f32(0.5f), ag_scalar_i32(10)), 13, 7, 10, 127);
}

/* Division, not a multiplication by the reciprocal: 0.65f / 0.1f is
 * 6.4999995 (rounds to 6) where 0.65f * (1 / 0.1f) is 6.5 (rounds to 7). */
static void test_quantize_divides(void **state)
{
    (void)state;
    ag_tensor q = ag_quantize(F32(AG_SHAPE(2), 0.65f, -0.65f), ag_scalar_f32(0.1f),
                              ag_scalar_i32(0));
    CHECK_VALUES(q, 6, -6);
}

/* A per-channel scale [N] applies along the last axis. */
static void test_quantize_per_channel(void **state)
{
    (void)state;
    ag_tensor x = F32(AG_SHAPE(2, 2), 1, 1, -3, 3);
    ag_tensor q = ag_quantize(x, F32(AG_SHAPE(2), 0.5f, 2), ag_scalar_i32(1));
    CHECK_VALUES(q, 3, 2, -5, 3); /* 2+1, round(0.5)=1 +1, -6+1, round(1.5)=2 +1 */
}

/* ----------------------------------------------------------- dequantize */

static void test_dequantize(void **state)
{
    (void)state;
    ag_tensor q = I8(AG_SHAPE(3), -128, 0, 127);
    ag_tensor y = ag_dequantize(q, ag_scalar_f32(0.5f), ag_scalar_i32(-1));
    CHECK_TYPE(y, AG_F32, AG_SHAPE(3));
    CHECK_VALUES(y, -63.5, 0.5, 64);
    /* per channel, and i32 sums with their scale */
    ag_tensor q2 = I8(AG_SHAPE(2, 2), 1, 2, 3, 4);
    CHECK_VALUES(ag_dequantize(q2, F32(AG_SHAPE(2), 1, 0.25f), ag_scalar_i32(0)), 1, 0.5, 3, 1);
    ag_tensor acc = I32(AG_SHAPE(2), 1000000, -6);
    CHECK_VALUES(ag_dequantize(acc, ag_scalar_f32(0.5f), ag_scalar_i32(0)), 500000, -3);
}

/* -------------------------------------------------------------- qmatmul */

static void test_qmatmul_subtracts_the_zero_point(void **state)
{
    (void)state;
    ag_tensor a = I8(AG_SHAPE(2, 3), 1, 2, 3, -128, 127, 0);
    ag_tensor b = I8(AG_SHAPE(3, 2), 1, -1, 2, 0, -128, 127);
    ag_tensor c = ag_qmatmul(a, b, ag_scalar_i32(3));
    CHECK_TYPE(c, AG_I32, AG_SHAPE(2, 2));
    /* a - 3 = [[-2,-1,0],[-131,124,-3]] */
    CHECK_VALUES(c, -2 - 2 + 0, 2 + 0 + 0, -131 + 248 + 384, 131 + 0 - 381);
}

/* -------------------------------------------------------------- qconv2d */

/* SAME padding: the padded taps are the zero point, so they add 0. */
static void test_qconv2d_pads_with_the_zero_point(void **state)
{
    (void)state;
    ag_tensor x = I8(AG_SHAPE(1, 2, 2, 1), 5, 6, 7, 8);
    ag_tensor f = I8(AG_SHAPE(3, 3, 1, 1), 1, 1, 1, 1, 1, 1, 1, 1, 1);
    ag_tensor c = ag_qconv2d(x, f, ag_scalar_i32(5), 1, 1, AG_SAME);
    CHECK_TYPE(c, AG_I32, AG_SHAPE(1, 2, 2, 1));
    /* x - 5 = 0 1 2 3: every window covers all four */
    CHECK_VALUES(c, 6, 6, 6, 6);
    /* the same as conv2d on the i32 differences */
    ag_tensor xi = ag_sub(ag_cast(x, AG_I32), 5);
    ag_tensor want = ag_conv2d(xi, ag_cast(f, AG_I32), 1, 1, AG_SAME);
    CHECK_VALUES(ag_sub(c, want), 0, 0, 0, 0);
    ag_tensor v = ag_qconv2d(x, I8(AG_SHAPE(1, 2, 1, 2), 1, 2, -1, 3), ag_scalar_i32(0), 1, 1,
                             AG_VALID);
    CHECK_TYPE(v, AG_I32, AG_SHAPE(1, 2, 1, 2));
    CHECK_VALUES(v, 5 - 6, 10 + 18, 7 - 8, 14 + 24); /* f[0,0,0,:] = 1 2, f[0,1,0,:] = -1 3 */
}

/* ----------------------------------------------------------- requantize */

static void test_requantize_rounds_clamps_and_folds_relu(void **state)
{
    (void)state;
    ag_tensor acc = I32(AG_SHAPE(6), 5, -5, 15, 100000, -100000, -7);
    ag_tensor q = ag_requantize(acc, ag_scalar_f32(0.5f), ag_scalar_i32(1), -128, 127);
    CHECK_TYPE(q, AG_I8, AG_SHAPE(6));
    CHECK_VALUES(q, 4, -2, 9, 127, -128, -3); /* 2.5 -> 3, -2.5 -> -3, 7.5 -> 8 */
    ag_tensor relu = ag_requantize(acc, ag_scalar_f32(0.5f), ag_scalar_i32(1), 1, 127);
    CHECK_VALUES(relu, 4, 1, 9, 127, 1, 1);
    ag_tensor pc = ag_requantize(I32(AG_SHAPE(2, 2), 3, 3, 5, 5), F32(AG_SHAPE(2), 0.5f, 1),
                                 ag_scalar_i32(0), -128, 127);
    CHECK_VALUES(pc, 2, 3, 3, 5);
    ag_tensor nan = ag_requantize(I32(AG_SCALAR, 3), ag_scalar_f32(NAN), ag_scalar_i32(7),
                                  -128, 127);
    CHECK_VALUES(nan, 7);
}

/* --------------------------------------------------------------- errors */

static void test_errors(void **state)
{
    (void)state;
    ag_tensor x = F32(AG_SHAPE(2), 1, 2), s = ag_scalar_f32(1), z = ag_scalar_i32(0);
    ag_tensor a = I8(AG_SHAPE(1, 2), 1, 2), b = I8(AG_SHAPE(2, 1), 1, 2);
    EXPECT_ERROR(ag_quantize(ag_cast(x, AG_F64), s, z), "expects an f32 tensor to quantize");
    EXPECT_ERROR(ag_quantize(x, z, z), "expects an f32 scale, got a i32 tensor");
    EXPECT_ERROR(ag_quantize(x, s, s), "an i32 zero point");
    EXPECT_ERROR(ag_quantize(x, F32(AG_SHAPE(3), 1, 2, 3), z), "scale's shape [3]");
    EXPECT_ERROR(ag_dequantize(x, s, z), "quantized values (i8 or i32)");
    EXPECT_ERROR(ag_qmatmul(ag_cast(a, AG_I32), b, z), "expects i8 activations");
    EXPECT_ERROR(ag_qmatmul(a, a, z), "inner dims do not match");
    EXPECT_ERROR(ag_qmatmul(a, b, I32(AG_SHAPE(1), 0)), "the zero point must be a scalar");
    EXPECT_ERROR(ag_qmatmul(a, b, ag_scalar_i32(128)), "outside int8's range");
    ag_tensor wide = ag_zeros(AG_I8, AG_SHAPE(1, 70000)), tall = ag_zeros(AG_I8, AG_SHAPE(70000, 1));
    EXPECT_ERROR(ag_qmatmul(wide, tall, z), "70000 products per result");
    EXPECT_ERROR(ag_requantize(ag_cast(a, AG_I32), s, z, 5, 4), "-128 <= lo <= hi <= 127");
    EXPECT_ERROR(ag_requantize(ag_cast(a, AG_I32), s, z, -129, 4), "-128 <= lo <= hi <= 127");
    EXPECT_ERROR(ag_requantize(a, s, z, -128, 127), "i32 sums");
    EXPECT_ERROR(ag_qconv2d(I8(AG_SHAPE(1, 1, 1, 1), 0), I8(AG_SHAPE(1, 1, 1, 1), 1),
                            ag_scalar_i32(-200), 1, 1, AG_VALID), "outside int8's range");
}

/* ------------------------------------------------ the same bits anywhere */

/*
 * One static-range layer and a quantized conv, by the design's formulas:
 * xq = quantize(x, 0.5, -3); acc = qmatmul(xq, W, -3) + bias;
 * yq = requantize(acc, 0.5 * 0.25 / 0.75, 2, [2, 127]) (relu folded);
 * y = dequantize(yq, 0.75, 2); and qconv2d of xq seen as an image.
 */
static const int8_t W[6 * 3] = {1, -2, 3, 127, -128, 0, 5, 6, -7, -1, 2, 3, 64, -64, 9, 0, 1, -1};
static const int8_t FILT[2 * 2 * 1 * 2] = {1, -1, 2, 3, -4, 5, 6, 7};

static void srq__trace(const ag_arg *a, ag_tensor *o)
{
    ag_tensor x = a[0].tensor;
    ag_tensor xq = ag_quantize(x, ag_scalar_f32(0.5f), ag_scalar_i32(-3));
    ag_tensor w = ag_from_data(AG_I8, AG_SHAPE(6, 3), W);
    ag_tensor bias = I32(AG_SHAPE(3), 7, -300, 2);
    ag_tensor acc = ag_add(ag_qmatmul(xq, w, ag_scalar_i32(-3)), bias);
    ag_tensor yq = ag_requantize(acc, F32(AG_SHAPE(3), 0.5f * 0.25f / 0.75f, 0.2f, 1.5f),
                                 ag_scalar_i32(2), 2, 127);
    ag_tensor img = ag_reshape(xq, AG_SHAPE(1, 4, 6, 1));
    ag_tensor f = ag_from_data(AG_I8, AG_SHAPE(2, 2, 1, 2), FILT);
    o[0] = acc;
    o[1] = yq;
    o[2] = ag_dequantize(yq, ag_scalar_f32(0.75f), ag_scalar_i32(2));
    o[3] = ag_qconv2d(img, f, ag_scalar_i32(-3), 2, 1, AG_SAME);
    o[4] = ag_add(xq, xq); /* i8 elementwise on the device too */
}
AG_TEST_DESC(srq_eager, 1, N_X, K_T, NULL, 5, srq__trace);
AG_TEST_DESC(srq_cpu, 1, N_X, K_T, NULL, 5, srq__trace);
AG_TEST_DESC(srq_reference, 1, N_X, K_T, NULL, 5, srq__trace);
AG_TEST_DESC(srq_tpu, 1, N_X, K_T, NULL, 5, srq__trace);

static void run_srq(const ag_function_desc *d, const char *target, ag_tensor x, ag_tensor *o)
{
    assert_true(ag_set_target(target));
    ag_arg a[1] = {targ(x)};
    ag_function_call_at(AG_HERE, d, a, o);
    ag_set_target(NULL);
    for (int i = 0; i < 5; i++)
        if (ag_is_error(o[i]))
            fail_msg("%s: %s", target, ag_last_error());
}

static void expect_same_bits(ag_tensor want, ag_tensor got, const char *what)
{
    assert_int_equal(ag_dtype_of(want), ag_dtype_of(got));
    assert_true(ag_shape_equal(ag_shape_get(want), ag_shape_get(got)));
    size_t bytes = (size_t)ag_num_elements(want) * (ag_dtype_of(want) == AG_I8 ? 1 : 4);
    if (memcmp(ag_data(want), ag_data(got), bytes) != 0)
        fail_msg("%s differs from the eager result", what);
}

static void test_same_bits_on_every_target(void **state)
{
    (void)state;
    float xs[24];
    for (int i = 0; i < 24; i++) /* ties (x / 0.5 = k + 0.5), clamps, both signs */
        xs[i] = (float)((i * 37) % 29 - 14) * 0.75f + (i % 3 ? 0.25f : 0) + (i == 5 ? 900 : 0);
    ag_tensor x = ag_from_data(AG_F32, AG_SHAPE(4, 6), xs);
    ag_tensor eager[5], cpu[5], ref[5], tpu[5];
    ag_run_functions_eagerly(true);
    run_srq(&srq_eager__desc, "cpu", x, eager);
    ag_run_functions_eagerly(false);
    run_srq(&srq_cpu__desc, "cpu", x, cpu);
    run_srq(&srq_reference__desc, "reference", x, ref);
    ag_set_soft_device_placement(true);
    run_srq(&srq_tpu__desc, "tpu-model", x, tpu);
    ag_set_soft_device_placement(false);
    static const char *const names[5] = {"acc", "yq", "y", "qconv2d", "xq + xq"};
    for (int i = 0; i < 5; i++) {
        char what[64];
        snprintf(what, sizeof what, "cpu %s", names[i]);
        expect_same_bits(eager[i], cpu[i], what);
        snprintf(what, sizeof what, "reference %s", names[i]);
        expect_same_bits(eager[i], ref[i], what);
        snprintf(what, sizeof what, "tpu-model %s", names[i]);
        expect_same_bits(eager[i], tpu[i], what);
    }
    /* and the eager values are the formulas' (first row, by hand) */
    int32_t xq0[6];
    for (int k = 0; k < 6; k++) {
        int32_t r = (int32_t)roundf(xs[k] / 0.5f) - 3;
        xq0[k] = r < -128 ? -128 : r > 127 ? 127 : r;
    }
    int32_t acc0 = 7;
    for (int k = 0; k < 6; k++)
        acc0 += (xq0[k] + 3) * W[k * 3];
    assert_int_equal((int32_t)ag_get_f64(eager[0], 0), acc0);
    double yq0 = 2 + round((double)acc0 * (double)(0.5f * 0.25f / 0.75f));
    yq0 = yq0 < 2 ? 2 : yq0 > 127 ? 127 : yq0;
    assert_int_equal((int)ag_get_f64(eager[1], 0), (int)yq0);
}

/* ---------------------------------------------- the vector loops, exact */

/* The rows of quantize and requantize (kernels/quant_rows.h) on every
 * path this CPU runs, element for element the scalar rules: ties of the
 * division and of the product, the clamps, NaN and infinities, NaN and
 * infinite multipliers, a bias whose int32 add wraps, and zero points far
 * outside int8 (the vector loops clamp them before their int32 add). */
static uint32_t seed = 2654435761u;

static uint32_t next_u32(void)
{
    seed = seed * 1664525u + 1013904223u;
    return seed ^ seed >> 16;
}

static const int32_t ZEROS[] = {0, -128, 127, 3, -7, 128, -129, 99999, -100001, 100000,
                                INT32_MAX, INT32_MIN, 1000, -1130};

static float tricky_x(int64_t i, float scale)
{
    int32_t k = (int32_t)(next_u32() % 601) - 300;
    switch (i % 9) {
    case 0: return ((float)k + 0.5f) * scale; /* a tie when the division is exact */
    case 1: return (i & 16) ? NAN : -NAN;
    case 2: return (i & 16) ? INFINITY : -INFINITY;
    case 3: return (float)k * 1e4f;           /* past the clamp of +-1000 */
    case 4: return nextafterf(((float)k + 0.5f) * scale, 0); /* just short of a tie */
    case 5: return (float)k * 0.001f;
    default: return (float)k * scale * 0.37f;
    }
}

static void for_each_path(void (*check)(rt_qgemm_kind))
{
    for (int kind = RT_QGEMM_SCALAR; kind < RT_QGEMM_NUM_KINDS; kind++) {
        if (rt_qgemm_why_not((rt_qgemm_kind)kind)) {
            printf("[  SKIPPED ] path %s: %s\n", rt_qgemm_kind_name((rt_qgemm_kind)kind),
                   rt_qgemm_why_not((rt_qgemm_kind)kind));
            continue;
        }
        check((rt_qgemm_kind)kind);
    }
}

enum { ROW = 83 }; /* whole vectors of 16 and of 8, and a tail */

static void check_quantize_rows(rt_qgemm_kind path)
{
    float x[ROW], scale[ROW];
    int32_t zero[ROW];
    int8_t got[ROW];
    for (int round = 0; round < 64; round++) {
        int64_t s_step = round & 1, z_step = round >> 1 & 1;
        for (int64_t j = 0; j < ROW; j++) {
            scale[j] = (round & 4) ? 0.1f : (float)(next_u32() % 1000 + 1) * 0.0037f;
            scale[j] = (round % 23 == 5 && j == 0) ? 0.0f : scale[j]; /* x / 0: inf or NaN */
            zero[j] = ZEROS[(uint32_t)(j + round) % (sizeof ZEROS / sizeof *ZEROS)];
        }
        for (int64_t j = 0; j < ROW; j++)
            x[j] = tricky_x(j + round, scale[j * s_step]);
        rt_quantize_row(path, x, ROW, scale, s_step, zero, z_step, got);
        for (int64_t j = 0; j < ROW; j++) {
            int8_t want = rt_quantize_one(x[j], scale[j * s_step], zero[j * z_step]);
            if (got[j] != want)
                fail_msg("%s quantize(%.9g, %.9g, %d) = %d, the rule gives %d",
                         rt_qgemm_kind_name(path), (double)x[j], (double)scale[j * s_step],
                         zero[j * z_step], got[j], want);
        }
    }
}

static void test_quantize_rows_exact_on_every_path(void **state)
{
    (void)state;
    for_each_path(check_quantize_rows);
}

static int32_t tricky_acc(int64_t i)
{
    switch (i % 6) {
    case 0: return (int32_t)(next_u32() % 2001) - 1000; /* ties with multiplier 0.5 */
    case 1: return (int32_t)next_u32();                 /* all of int32 */
    case 2: return (i & 8) ? INT32_MAX : INT32_MIN;
    default: return (int32_t)(next_u32() % 200001) - 100000;
    }
}

static float tricky_mult(int round, int64_t j)
{
    static const float m[] = {0.5f, 0.25f, 1.0f, 0.0013f, 3e-7f, -0.5f, 1e5f, 0.3333333f};
    if (round == 7 && j == 3)
        return NAN;
    if (round == 9 && j == 5)
        return INFINITY; /* 0 * inf is NaN */
    return m[(uint32_t)(j + round) % (sizeof m / sizeof *m)];
}

static void check_requantize_rows(rt_qgemm_kind path)
{
    int32_t acc[ROW], bias[ROW], zero[ROW];
    float mult[ROW];
    int8_t got[ROW];
    static const int32_t ranges[][2] = {{-128, 127}, {-3, 127}, {-128, -128}, {-5, 3}};
    for (int round = 0; round < 64; round++) {
        rt_requant r = {.bias = (round & 8) ? NULL : bias, .b_step = round & 1, .mult = mult,
                        .m_step = round >> 1 & 1, .zero = zero, .z_step = round >> 2 & 1,
                        .lo = ranges[round % 4][0], .hi = ranges[round % 4][1]};
        for (int64_t j = 0; j < ROW; j++) {
            acc[j] = tricky_acc(j + round);
            bias[j] = j % 7 == 0 ? INT32_MAX : (int32_t)(next_u32() % 2001) - 1000;
            mult[j] = tricky_mult(round, j);
            zero[j] = ZEROS[(uint32_t)(j * 3 + round) % (sizeof ZEROS / sizeof *ZEROS)];
        }
        rt_requant_check(&r, r.m_step ? ROW : 1);
        rt_requantize_row(path, &r, acc, ROW, got);
        for (int64_t j = 0; j < ROW; j++) {
            int32_t a = acc[j];
            if (r.bias)
                a = (int32_t)((uint32_t)a + (uint32_t)bias[j * r.b_step]);
            int8_t want = rt_requantize_one(a, mult[j * r.m_step], zero[j * r.z_step], r.lo, r.hi);
            if (got[j] != want)
                fail_msg("%s requantize(%d, %.9g, %d, [%d, %d]) = %d, the rule gives %d",
                         rt_qgemm_kind_name(path), a, (double)mult[j * r.m_step],
                         zero[j * r.z_step], r.lo, r.hi, got[j], want);
        }
    }
}

static void test_requantize_rows_exact_on_every_path(void **state)
{
    (void)state;
    for_each_path(check_requantize_rows);
}

/* dequantize's rows, of int8 values and of int32 sums (above 2^24 too,
 * where the conversion rounds): the vector loops run where q - zero
 * cannot leave int32, the scalar rule elsewhere, with the same bits. */
static void check_dequantize_rows(rt_qgemm_kind path)
{
    int8_t q8[ROW];
    int32_t q32[ROW], zero[ROW];
    float scale[ROW], got[ROW];
    static const int32_t zeros[] = {0, 0, 5, -128, 1 << 30, -(1 << 30), (1 << 30) + 1, INT32_MIN};
    for (int round = 0; round < 64; round++) {
        bool narrow = round & 1;
        rt_dequant d = {.q8 = narrow ? q8 : NULL, .q32 = narrow ? NULL : q32, .scale = scale,
                        .s_step = round >> 1 & 1, .zero = zero, .z_step = round >> 2 & 1};
        for (int64_t j = 0; j < ROW; j++) {
            q8[j] = (int8_t)next_u32();
            q32[j] = j % 5 == 0 ? (j & 1 ? INT32_MAX : INT32_MIN) : (int32_t)next_u32();
            scale[j] = round == 9 && j == 2 ? NAN : round == 11 && j == 0 ? INFINITY
                                                                           : tricky_mult(round, j);
            zero[j] = zeros[(uint32_t)(round >> 3) % 8];
        }
        d.vector_ok = rt_dequant_vector_ok(&d, d.z_step ? ROW : 1);
        rt_dequantize_row(path, &d, ROW, got);
        for (int64_t j = 0; j < ROW; j++) {
            float want = rt_dequantize_one(narrow ? q8[j] : q32[j], scale[j * d.s_step],
                                           zero[j * d.z_step]);
            if (memcmp(&got[j], &want, sizeof want) != 0)
                fail_msg("%s dequantize(%lld, %.9g, %d) = %.9g, the rule gives %.9g",
                         rt_qgemm_kind_name(path), (long long)(narrow ? q8[j] : q32[j]),
                         (double)scale[j * d.s_step], zero[j * d.z_step], (double)got[j],
                         (double)want);
        }
    }
}

static void test_dequantize_rows_exact_on_every_path(void **state)
{
    (void)state;
    for_each_path(check_dequantize_rows);
}

/* ------------------------------------ the fused layer, kernel and code */

/* rt_qlayer_requantize on `path` gives the three ops' bits: the scalar
 * product, the add (wrapping), the scalar rule. */
static void check_qlayer_shape(rt_qgemm_kind path, int64_t m, int64_t n, int64_t k, int32_t z)
{
    int8_t *a = malloc((size_t)(m * k)), *b = malloc((size_t)(k * n));
    int8_t *got = malloc((size_t)(m * n));
    int32_t *acc = malloc((size_t)(m * n) * 4), *bias = malloc((size_t)n * 4);
    int32_t zq = -9;
    float *mult = malloc((size_t)n * 4);
    for (int64_t e = 0; e < m * k; e++)
        a[e] = (int8_t)next_u32();
    for (int64_t e = 0; e < k * n; e++)
        b[e] = (int8_t)next_u32();
    for (int64_t j = 0; j < n; j++) {
        bias[j] = (int32_t)(next_u32() % 20001) - 10000;
        mult[j] = (float)(next_u32() % 1000 + 1) * 1e-5f;
    }
    rt_requant r = {.bias = bias, .b_step = 1, .mult = mult, .m_step = n % 2, .zero = &zq,
                    .lo = zq, .hi = 127};
    rt_requant_check(&r, n);
    rt_qlayer_requantize(path, m, n, k, a, z, b, NULL, &r, got);
    rt_qgemm_s8_scalar(m, n, k, a, z, b, acc);
    for (int64_t e = 0; e < m * n; e++) {
        int64_t j = e % n;
        int8_t want = rt_requantize_one((int32_t)((uint32_t)acc[e] + (uint32_t)bias[j]),
                                        mult[j * r.m_step], zq, r.lo, r.hi);
        if (got[e] != want)
            fail_msg("%s layer %lldx%lldx%lld: q[%lld, %lld] = %d, the three ops give %d",
                     rt_qgemm_kind_name(path), (long long)m, (long long)n, (long long)k,
                     (long long)(e / n), (long long)j, got[e], want);
    }
    free(a), free(b), free(got), free(acc), free(bias), free(mult);
}

static int parallel_calls;
static void counting_parallel_for(rt_qgemm_body body, void *ctx, int64_t n, int64_t grain)
{
    parallel_calls++;
    cg_rt_parallel_for(body, ctx, n, grain);
}

static void check_qlayer(rt_qgemm_kind path)
{
    static const int64_t shapes[][3] = {{1, 1, 1},  {6, 64, 4},   {7, 13, 5},   {13, 67, 33},
                                        {5, 130, 9}, {64, 10, 512}, {64, 200, 300}};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        check_qlayer_shape(path, shapes[s][0], shapes[s][1], shapes[s][2],
                           ZEROS[s % 5]); /* 0, -128, 127, 3, -7 */
    /* large enough for the threads: blocks come from two columns ranges */
    rt_qgemm_parallel_fn saved = rt_qgemm_parallel_hook;
    rt_qgemm_parallel_hook = counting_parallel_for;
    parallel_calls = 0;
    check_qlayer_shape(path, 64, 330, 784, 5);
    assert_int_equal(parallel_calls, 1);
    rt_qgemm_parallel_hook = saved;
}

static void test_fused_layer_exact_on_every_path(void **state)
{
    (void)state;
    for_each_path(check_qlayer);
}

/*
 * Compiled for the cpu, requantize(add(qmatmul, bias)) is one call
 * (backend/cpu/lower_qlayer.c): the same bits as the reference
 * interpreter's three ops, with the bias on either side of the add, per
 * channel or scalar parameters, and a relu folded in; and the three ops
 * one by one when the bias covers the whole result, or when a zero point
 * is out of range (the qmatmul's error).
 */
static void qfused__trace(const ag_arg *a, ag_tensor *o)
{
    static int8_t w1[24 * 40], w2[40 * 9];
    static int32_t b1[40];
    for (int i = 0; i < 24 * 40; i++)
        w1[i] = (int8_t)(i * 37 % 255 - 127);
    for (int i = 0; i < 40 * 9; i++)
        w2[i] = (int8_t)(i * 91 % 251 - 125);
    for (int i = 0; i < 40; i++)
        b1[i] = i * 523 % 4001 - 2000;
    float m1[40];
    for (int i = 0; i < 40; i++)
        m1[i] = 0.0004f + (float)i * 0.00011f;
    ag_tensor xq = ag_quantize(a[0].tensor, ag_scalar_f32(0.05f), ag_scalar_i32(3));
    ag_tensor acc1 = ag_add(ag_from_data(AG_I32, AG_SHAPE(40), b1),
                            ag_qmatmul(xq, ag_from_data(AG_I8, AG_SHAPE(24, 40), w1),
                                       a[1].tensor));
    ag_tensor h = ag_requantize(acc1, ag_from_data(AG_F32, AG_SHAPE(40), m1), ag_scalar_i32(-4),
                                -4, 127);
    ag_tensor acc2 = ag_add(ag_qmatmul(h, ag_from_data(AG_I8, AG_SHAPE(40, 9), w2),
                                       ag_scalar_i32(-4)),
                            ag_scalar_i32(77));
    o[0] = h;
    o[1] = ag_requantize(acc2, ag_scalar_f32(0.0021f), ag_scalar_i32(1), -128, 127);
    /* a bias of the whole result: not per channel, the ops one by one */
    ag_tensor acc3 = ag_add(ag_qmatmul(h, ag_from_data(AG_I8, AG_SHAPE(40, 9), w2),
                                       ag_scalar_i32(-4)),
                            ag_cast(ag_reshape(ag_range(0, 45, 1), AG_SHAPE(5, 9)), AG_I32));
    o[2] = ag_requantize(acc3, ag_scalar_f32(0.003f), ag_scalar_i32(0), -128, 127);
}
static const char *const N_XZ[] = {"x", "z"};
AG_TEST_DESC(qfused_cpu, 2, N_XZ, K_TT, NULL, 3, qfused__trace);
AG_TEST_DESC(qfused_reference, 2, N_XZ, K_TT, NULL, 3, qfused__trace);

static bool run_qfused(const ag_function_desc *d, const char *target, ag_tensor x, int32_t z,
                       ag_tensor *o)
{
    assert_true(ag_set_target(target));
    ag_arg a[2] = {targ(x), targ(ag_scalar_i32(z))};
    bool ok = ag_function_call_at(AG_HERE, d, a, o);
    ag_set_target(NULL);
    return ok;
}

static void test_fused_layer_compiled(void **state)
{
    (void)state;
    float xs[5 * 24];
    for (int i = 0; i < 5 * 24; i++)
        xs[i] = tricky_x(i, 0.05f);
    ag_tensor x = ag_from_data(AG_F32, AG_SHAPE(5, 24), xs);
    ag_tensor cpu[3], ref[3];
    for (int z = -128; z <= 127; z += 85) {
        if (!run_qfused(&qfused_cpu__desc, "cpu", x, z, cpu) ||
            !run_qfused(&qfused_reference__desc, "reference", x, z, ref))
            fail_msg("z = %d: %s", z, ag_last_error());
        static const char *const what[3] = {"the first layer", "the second layer",
                                            "the unfused layer"};
        for (int i = 0; i < 3; i++)
            expect_same_bits(ref[i], cpu[i], what[i]);
    }
    assert_false(run_qfused(&qfused_cpu__desc, "cpu", x, 200, cpu));
    assert_non_null(strstr(ag_last_error(), "the zero point 200 is outside int8's range"));
}

/* ------------------------------------------------------ saved models */

/* A layer whose int8 weights are a variable, and whose int8 table of 64
 * constants goes to variables.bin: both come back from a saved model. */
static ag_variable qw;
static void qsaved__trace(const ag_arg *a, ag_tensor *o)
{
    int8_t t[64];
    for (int i = 0; i < 64; i++)
        t[i] = (int8_t)(i * 9 - 100);
    ag_tensor xq = ag_quantize(a[0].tensor, ag_scalar_f32(0.25f), ag_scalar_i32(1));
    ag_tensor acc = ag_qmatmul(xq, ag_variable_read(qw), ag_scalar_i32(1));
    ag_tensor table = ag_reshape(ag_from_data(AG_I8, AG_SHAPE(64), t), AG_SHAPE(16, 4));
    o[0] = ag_qmatmul(table, ag_cast(acc, AG_I8), ag_scalar_i32(0));
}
static const ag_function_desc qsaved__desc = {
    .name = "qsaved", .file = __FILE__, .line = __LINE__, .n_params = 1, .param_names = N_X,
    .param_kinds = K_T, .signature = "f32[4,4]", .n_outputs = 1, .trace = qsaved__trace};

static void test_saved_model_keeps_i8(void **state)
{
    (void)state;
    ag_tensor x = F32(AG_SHAPE(4, 4), 1, -2, 3.5f, 0.125f, 9, -31, 0, 2, 1, 1, 1, 1, -5, 6, 7, 8);
    qw = ag_variable_new(I8(AG_SHAPE(4, 4), 1, -2, 3, -4, 127, -128, 0, 9, 8, 7, 6, 5, -1, -1,
                            2, 2));
    char dir[64];
    assert_true(tu_temp_dir(dir, sizeof dir, "ag-quant"));
    char model[96];
    snprintf(model, sizeof model, "%s/model", dir);
    ag_export_signature sig = {.name = "serving_default", .function = "qsaved"};
    ag_save_options o = {.signatures = &sig, .n_signatures = 1};
    if (!ag_saved_model_save(model, &o))
        fail_msg("save: %s", ag_last_error());
    ag_saved_model *m = ag_saved_model_load(model);
    assert_non_null(m);
    ag_named_tensor in = {"x", x}, out[1];
    assert_true(ag_model_call(m, "serving_default", &in, 1, out, 1));
    ag_arg a = {.kind = AG_ARG_TENSOR, .tensor = x};
    ag_tensor want[1];
    assert_true(ag_function_call_at(AG_HERE, &qsaved__desc, &a, want));
    expect_same_bits(want[0], out[0].tensor, "the saved model's result");
    ag_saved_model_free(m);
    tu_remove_dir(dir);
}

int main(void)
{
    ag_function_register(&qsaved__desc);
    const struct CMUnitTest tests[] = {
        TU_TEST(test_i8_arithmetic_wraps_and_casts_saturate),
        TU_TEST(test_quantize_rounds_half_away_and_clamps),
        TU_TEST(test_quantize_divides),
        TU_TEST(test_quantize_per_channel),
        TU_TEST(test_dequantize),
        TU_TEST(test_qmatmul_subtracts_the_zero_point),
        TU_TEST(test_qconv2d_pads_with_the_zero_point),
        TU_TEST(test_requantize_rounds_clamps_and_folds_relu),
        TU_TEST(test_errors),
        TU_TEST(test_same_bits_on_every_target),
        TU_TEST(test_saved_model_keeps_i8),
        TU_TEST(test_quantize_rows_exact_on_every_path),
        TU_TEST(test_requantize_rows_exact_on_every_path),
        TU_TEST(test_dequantize_rows_exact_on_every_path),
        TU_TEST(test_fused_layer_exact_on_every_path),
        TU_TEST(test_fused_layer_compiled),
    };
    TU_RUN(tests);
}
