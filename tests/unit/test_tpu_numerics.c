/*
 * test_tpu_numerics.c - the TPU-model's MXU arithmetic (backend/tpu/numerics.c).
 *
 * The f32 products are checked bit for bit against a naive implementation
 * of numerics.h's contract written out plainly below (one output element
 * at a time, no blocking, no packing), and for accuracy against f64.
 * Needs only numerics.h, cmocka and libc (no libag).
 *
 * The naive reference must itself be compiled without FMA contraction:
 * -std=c11 (the project's setting) makes that GCC's default, and the
 * pragma below covers clang.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "numerics.h"

#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

static const tpu_precision precisions[3] = {TPU_PRECISION_DEFAULT, TPU_PRECISION_HIGH,
                                            TPU_PRECISION_HIGHEST};

/* ------------------------------------------------------------ helpers */

static uint32_t f32_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static float f32_from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* A deterministic generator, so every failure reproduces. */
static uint32_t next_rand(uint32_t *seed)
{
    *seed = *seed * 1664525u + 1013904223u;
    return *seed;
}

/* Uniform in [-1, 1). */
static float rand_unit(uint32_t *seed)
{
    return (float)(next_rand(seed) >> 8) / 8388608.0f - 1.0f;
}

/* Values spread over 2^-6 .. 2^6 with full f32 mantissas, a few zeros and
 * negative zeros: rounding to bf16 and the f32 sums both matter. */
static void fill_random(float *x, int64_t count, uint32_t seed)
{
    for (int64_t i = 0; i < count; i++) {
        uint32_t r = next_rand(&seed) >> 24;
        if (r == 0)
            x[i] = 0.0f;
        else if (r == 1)
            x[i] = -0.0f;
        else
            x[i] = ldexpf(rand_unit(&seed), (int)(r % 13) - 6);
    }
}

static float *new_floats(int64_t count)
{
    float *p = malloc((size_t)(count > 0 ? count : 1) * sizeof *p);
    assert_non_null(p);
    return p;
}

/* Asserts got and want hold the same bits, element by element. */
static void check_bits(const float *got, const float *want, int64_t count, int line)
{
    for (int64_t i = 0; i < count; i++)
        if (f32_bits(got[i]) != f32_bits(want[i]))
            fail_msg("line %d: element %lld is %a (0x%08x), expected %a (0x%08x)", line,
                     (long long)i, (double)got[i], f32_bits(got[i]), (double)want[i],
                     f32_bits(want[i]));
}
#define CHECK_BITS(got, want, count) check_bits((got), (want), (count), __LINE__)

/* ---------------------------------------------- the contract, written plainly */

/* x's bf16 parts: hi, mid, lo (unused parts are 0). */
static void ref_split(float x, int parts, float out[3])
{
    out[0] = tpu_round_bf16(x);
    out[1] = out[2] = 0.0f;
    if (parts == 2) {
        out[2] = tpu_round_bf16(x - out[0]);
    } else if (parts == 3) {
        float rest = x - out[0];
        out[1] = tpu_round_bf16(rest);
        out[2] = tpu_round_bf16(rest - out[1]);
    }
}

static float ref_keep_finite(float t) { return isfinite(t) ? t : 0.0f; }

/* The per-k term of numerics.h, operation by operation. */
static float ref_term(float a, float b, tpu_precision p)
{
    float x[3], y[3]; /* hi, mid, lo */
    if (p == TPU_PRECISION_DEFAULT) {
        ref_split(a, 1, x);
        ref_split(b, 1, y);
        return x[0] * y[0];
    }
    if (p == TPU_PRECISION_HIGH) {
        ref_split(a, 2, x);
        ref_split(b, 2, y);
        float t = x[0] * y[2];
        t = t + x[2] * y[0];
        t = ref_keep_finite(t);
        return t + x[0] * y[0];
    }
    ref_split(a, 3, x);
    ref_split(b, 3, y);
    float t = x[0] * y[2];
    t = t + x[2] * y[0];
    t = t + x[1] * y[1];
    t = t + x[0] * y[1];
    t = t + x[1] * y[0];
    t = ref_keep_finite(t);
    return t + x[0] * y[0];
}

/* One output element: a[kk * as] and b[kk * bs] for kk in [0, k), summed
 * in chunks of 128 from +0, each chunk added to an accumulator from +0. */
static float ref_dot(const float *a, int64_t as, const float *b, int64_t bs, int64_t k,
                     tpu_precision p)
{
    float acc = 0.0f;
    for (int64_t k0 = 0; k0 < k; k0 += 128) {
        float s = 0.0f;
        for (int64_t kk = k0; kk < k0 + 128 && kk < k; kk++)
            s = s + ref_term(a[kk * as], b[kk * bs], p);
        acc = acc + s;
    }
    return acc;
}

static void ref_matmul(const float *a, const float *b, float *c, int64_t m, int64_t k,
                       int64_t n, tpu_precision p)
{
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++)
            c[i * n + j] = ref_dot(a + i * k, 1, b + j, n, k, p);
}

/* The exact product in f64 and, per element, sum_k |a||b|: the scale the
 * rounding error of a dot product is measured against. */
static void f64_matmul(const float *a, const float *b, double *c, double *scale,
                       int64_t m, int64_t k, int64_t n)
{
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0.0, sa = 0.0;
            for (int64_t kk = 0; kk < k; kk++) {
                double prod = (double)a[i * k + kk] * (double)b[kk * n + j];
                s += prod;
                sa += fabs(prod);
            }
            c[i * n + j] = s;
            scale[i * n + j] = sa;
        }
}

/* max over elements of |got - exact| / sum |a||b|. */
static double max_scaled_error(const float *got, const double *exact,
                               const double *scale, int64_t count)
{
    double worst = 0.0;
    for (int64_t i = 0; i < count; i++) {
        double e = scale[i] > 0.0 ? fabs((double)got[i] - exact[i]) / scale[i]
                                  : fabs((double)got[i] - exact[i]);
        worst = e > worst ? e : worst;
    }
    return worst;
}

/* ================================================================ bf16 */

static void check_bf16(float x, uint16_t want, int line)
{
    uint16_t got = tpu_bf16_bits(x);
    if (got != want)
        fail_msg("line %d: bf16(%a) is 0x%04x, expected 0x%04x", line, (double)x, got,
                 want);
    float r = tpu_round_bf16(x);
    if (f32_bits(r) != (uint32_t)want << 16)
        fail_msg("line %d: round_bf16(%a) is %a, not bf16 0x%04x", line, (double)x,
                 (double)r, want);
}
#define CHECK_BF16(x, want) check_bf16((x), (want), __LINE__)
#define BITS(u) f32_from_bits(u)

static void test_bf16_ties_to_even(void **state)
{
    (void)state;
    CHECK_BF16(1.0f, 0x3F80);
    CHECK_BF16(BITS(0x3F808000), 0x3F80); /* 1 + 2^-8: tie, 0x3F80 is even */
    CHECK_BF16(BITS(0x3F818000), 0x3F82); /* tie between 0x3F81 and 0x3F82 */
    CHECK_BF16(BITS(0x3F808001), 0x3F81); /* just above the tie */
    CHECK_BF16(BITS(0x3F807FFF), 0x3F80); /* just below */
    CHECK_BF16(BITS(0xBF818000), 0xBF82); /* negative ties alike */
    CHECK_BF16(BITS(0x3FFF8000), 0x4000); /* carry into the exponent */
    CHECK_BF16(-3.0f, 0xC040);
    CHECK_BF16(0.1f, 0x3DCD);             /* 0x3DCCCCCD rounds up */
}

static void test_bf16_special_values(void **state)
{
    (void)state;
    CHECK_BF16(0.0f, 0x0000);
    CHECK_BF16(-0.0f, 0x8000);
    CHECK_BF16(INFINITY, 0x7F80);
    CHECK_BF16(-INFINITY, 0xFF80);
    /* overflow: the largest bf16 is 0x7F7F; its halfway point ties to even,
     * which is the exponent carry into inf */
    CHECK_BF16(FLT_MAX, 0x7F80);
    CHECK_BF16(-FLT_MAX, 0xFF80);
    CHECK_BF16(BITS(0x7F7F7FFF), 0x7F7F);
    CHECK_BF16(BITS(0x7F7F8000), 0x7F80);
    /* NaN stays NaN (quiet, sign kept), even with payload only in the
     * dropped bits, which truncation alone would turn into inf */
    CHECK_BF16(BITS(0x7FC00000), 0x7FC0);
    CHECK_BF16(BITS(0x7F800001), 0x7FC0);
    CHECK_BF16(BITS(0xFF800001), 0xFFC0);
    CHECK_BF16(BITS(0x7FFFFFFF), 0x7FFF);
    assert_true(isnan(tpu_round_bf16(NAN)));
    assert_true(isnan(tpu_bf16_to_f32(0x7FC1)));
}

static void test_bf16_subnormals(void **state)
{
    (void)state;
    CHECK_BF16(BITS(0x00000001), 0x0000); /* smallest f32 subnormal: rounds to 0 */
    CHECK_BF16(BITS(0x80000001), 0x8000); /* ... keeping its sign */
    CHECK_BF16(BITS(0x00008000), 0x0000); /* tie, 0 is even */
    CHECK_BF16(BITS(0x00018000), 0x0002); /* tie, 2 is even */
    CHECK_BF16(BITS(0x00010000), 0x0001); /* the smallest bf16 subnormal, 2^-133 */
    CHECK_BF16(BITS(0x80008001), 0x8001);
    CHECK_BF16(BITS(0x007FFFFF), 0x0080); /* the largest subnormal rounds up to 2^-126 */
    assert_true(tpu_bf16_to_f32(0x0001) == ldexpf(1.0f, -133));
}

/* Every bf16 pattern converts to f32 and back unchanged (NaNs stay NaN). */
static void test_bf16_round_trip_all_patterns(void **state)
{
    (void)state;
    for (uint32_t u = 0; u <= 0xFFFF; u++) {
        float f = tpu_bf16_to_f32((uint16_t)u);
        assert_int_equal(f32_bits(f), u << 16);
        if (isnan(f))
            assert_true(isnan(tpu_round_bf16(f)));
        else
            assert_int_equal(tpu_bf16_bits(f), u);
    }
}

/* Random bit patterns against rounding done with exact f64 distances to
 * the two bf16 neighbours. */
static void test_bf16_matches_nearest_even(void **state)
{
    (void)state;
    uint32_t seed = 7;
    for (int i = 0; i < 200000; i++) {
        uint32_t u = next_rand(&seed);
        float x = f32_from_bits(u);
        if (!isfinite(x))
            continue;
        uint32_t down = u & 0xFFFF0000u; /* toward zero */
        uint32_t up = down + 0x10000u;   /* away from zero (may be inf) */
        double dd = fabs((double)x - (double)f32_from_bits(down));
        double du = fabs((double)f32_from_bits(up) - (double)x);
        if (isinf(f32_from_bits(up))) /* RNE rounds to inf past the halfway point */
            du = fabs(ldexp(1.0, 128) - fabs((double)x));
        uint32_t want = dd < du ? down : du < dd ? up : ((down >> 16) & 1u) ? up : down;
        if (tpu_bf16_bits(x) != (uint16_t)(want >> 16))
            fail_msg("bf16(%a) is 0x%04x, expected 0x%04x", (double)x, tpu_bf16_bits(x),
                     want >> 16);
    }
}

/* ============================================================== matmul */

static void check_matmul_against_ref(int64_t m, int64_t k, int64_t n, uint32_t seed,
                                     tpu_precision p, int line)
{
    float *a = new_floats(m * k), *b = new_floats(k * n);
    float *c = new_floats(m * n), *want = new_floats(m * n);
    fill_random(a, m * k, seed);
    fill_random(b, k * n, seed + 1);
    memset(c, 0xFF, (size_t)(m * n) * sizeof *c); /* NaNs: every element must be written */
    tpu_mxu_matmul_f32(a, b, c, m, k, n, p);
    ref_matmul(a, b, want, m, k, n, p);
    for (int64_t i = 0; i < m * n; i++)
        if (f32_bits(c[i]) != f32_bits(want[i]))
            fail_msg("line %d: %lldx%lldx%lld precision %d: C[%lld][%lld] is %a, "
                     "expected %a",
                     line, (long long)m, (long long)k, (long long)n, (int)p,
                     (long long)(i / n), (long long)(i % n), (double)c[i],
                     (double)want[i]);
    free(a), free(b), free(c), free(want);
}

/* Shapes around every blocking boundary: micro-tiles of 4 x 8, A blocks of
 * up to 64 rows, k chunks of 128 (k not a multiple of 128, k > 256). */
static void test_matmul_bit_exact_all_precisions(void **state)
{
    (void)state;
    static const int64_t shapes[][3] = {
        {1, 1, 1},   {3, 5, 7},    {4, 8, 8},     {5, 128, 9},   {7, 129, 3},
        {4, 300, 17}, {9, 513, 10}, {13, 256, 8},  {33, 257, 70}, {70, 300, 19},
        {2, 384, 1},  {1, 1000, 33}, {65, 130, 9},
    };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int p = 0; p < 3; p++)
            check_matmul_against_ref(shapes[s][0], shapes[s][1], shapes[s][2],
                                     (uint32_t)(100 + s), precisions[p], __LINE__);
}

/* k so long that one A block is a single micro-panel. */
static void test_matmul_bit_exact_long_k(void **state)
{
    (void)state;
    check_matmul_against_ref(9, 20000, 3, 5, TPU_PRECISION_DEFAULT, __LINE__);
    check_matmul_against_ref(5, 9000, 11, 6, TPU_PRECISION_HIGHEST, __LINE__);
}

/* The chunk rule is visible: with 2^24 first, each later +1 of its chunk
 * is lost to rounding, but the second chunk's 128 ones are summed apart
 * and survive. A single sequential sum would give 2^24. */
static void test_matmul_chunks_of_128(void **state)
{
    (void)state;
    float a[256], b[256], c = 0.0f;
    for (int i = 0; i < 256; i++)
        a[i] = 1.0f, b[i] = 1.0f;
    b[0] = 16777216.0f;
    for (int p = 0; p < 3; p++) {
        tpu_mxu_matmul_f32(a, b, &c, 1, 256, 1, precisions[p]);
        assert_true(c == 16777216.0f + 128.0f);
    }
    /* within one chunk the order is k's: 2^24 then ones, all lost */
    tpu_mxu_matmul_f32(a, b, &c, 1, 128, 1, TPU_PRECISION_DEFAULT);
    assert_true(c == 16777216.0f);
}

static void test_matmul_k0_and_empty(void **state)
{
    (void)state;
    float a[1] = {1}, b[1] = {1}, c[6];
    for (int i = 0; i < 6; i++)
        c[i] = NAN;
    tpu_mxu_matmul_f32(a, b, c, 2, 0, 3, TPU_PRECISION_HIGH);
    for (int i = 0; i < 6; i++)
        assert_int_equal(f32_bits(c[i]), 0); /* +0 */
    tpu_mxu_matmul_f32(a, b, c, 0, 4, 3, TPU_PRECISION_DEFAULT); /* nothing to do */
    tpu_mxu_matmul_f32(a, b, c, 3, 4, 0, TPU_PRECISION_DEFAULT);
}

/* Non-finite values: HIGH and HIGHEST give DEFAULT's inf, not the NaN the
 * inf - inf of their low parts would make; NaN propagates. */
static void test_matmul_non_finite(void **state)
{
    (void)state;
    const float b[2] = {1.5f, 2.0f};
    const float b2[2] = {1.00390625f * 1.5f, 2.0f}; /* b.lo != 0 */
    const float rows[][2] = {
        {INFINITY, 1.0f}, {-INFINITY, 1.0f}, {3.4e38f, 0.0f}, {NAN, 1.0f}, {0.0f, 1.0f},
    };
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        float want, got;
        tpu_mxu_matmul_f32(rows[r], b, &want, 1, 2, 1, TPU_PRECISION_DEFAULT);
        for (int p = 1; p < 3; p++) {
            tpu_mxu_matmul_f32(rows[r], b, &got, 1, 2, 1, precisions[p]);
            assert_true(f32_bits(got) == f32_bits(want) || (isnan(got) && isnan(want)));
            float ref = ref_dot(rows[r], 1, b2, 1, 2, precisions[p]);
            tpu_mxu_matmul_f32(rows[r], b2, &got, 1, 2, 1, precisions[p]);
            assert_true(f32_bits(got) == f32_bits(ref) || (isnan(got) && isnan(ref)));
        }
    }
    float got;
    tpu_mxu_matmul_f32(rows[0], b2, &got, 1, 2, 1, TPU_PRECISION_HIGHEST);
    assert_true(isinf(got) && got > 0);
    tpu_mxu_matmul_f32(rows[2], b2, &got, 1, 2, 1, TPU_PRECISION_HIGH);
    assert_true(isinf(got) && got > 0); /* 3.4e38 rounds to bf16 inf */
}

/* Error against f64, per element scaled by sum |a||b|: DEFAULT is bf16
 * accurate, HIGH close to f32, HIGHEST at f32 accumulation error. */
static void test_matmul_precision_accuracy(void **state)
{
    (void)state;
    const int64_t m = 24, k = 300, n = 40;
    float *a = new_floats(m * k), *b = new_floats(k * n), *c = new_floats(m * n);
    double *exact = malloc((size_t)(m * n) * sizeof *exact);
    double *scale = malloc((size_t)(m * n) * sizeof *scale);
    assert_non_null(exact);
    assert_non_null(scale);
    uint32_t seed = 42;
    for (int64_t i = 0; i < m * k; i++)
        a[i] = rand_unit(&seed);
    for (int64_t i = 0; i < k * n; i++)
        b[i] = rand_unit(&seed);
    f64_matmul(a, b, exact, scale, m, k, n);
    double err[3];
    for (int p = 0; p < 3; p++) {
        tpu_mxu_matmul_f32(a, b, c, m, k, n, precisions[p]);
        err[p] = max_scaled_error(c, exact, scale, m * n);
    }
    print_message("scaled max error: DEFAULT %.3g HIGH %.3g HIGHEST %.3g\n", err[0],
                  err[1], err[2]);
    assert_true(err[0] < 1e-2);
    assert_true(err[1] < 1e-5);
    assert_true(err[2] < 1e-6);
    assert_true(err[1] < err[0] / 100);
    assert_true(err[2] < err[1]);
    free(a), free(b), free(c), free(exact), free(scale);
}

/* For operands that are exactly bf16 the extra passes add only zeros:
 * HIGH and HIGHEST equal DEFAULT bit for bit, and with small integers
 * (every partial sum exact in f32) all equal the exact product. */
static void test_matmul_bf16_inputs_exact(void **state)
{
    (void)state;
    const int64_t m = 11, k = 300, n = 13;
    float *a = new_floats(m * k), *b = new_floats(k * n);
    float *c0 = new_floats(m * n), *c = new_floats(m * n);
    double *exact = malloc((size_t)(m * n) * sizeof *exact);
    double *scale = malloc((size_t)(m * n) * sizeof *scale);
    assert_non_null(exact);
    assert_non_null(scale);
    fill_random(a, m * k, 3);
    fill_random(b, k * n, 4);
    for (int64_t i = 0; i < m * k; i++)
        a[i] = tpu_round_bf16(a[i]);
    for (int64_t i = 0; i < k * n; i++)
        b[i] = tpu_round_bf16(b[i]);
    tpu_mxu_matmul_f32(a, b, c0, m, k, n, TPU_PRECISION_DEFAULT);
    for (int p = 1; p < 3; p++) {
        tpu_mxu_matmul_f32(a, b, c, m, k, n, precisions[p]);
        CHECK_BITS(c, c0, m * n);
    }
    uint32_t seed = 9;
    for (int64_t i = 0; i < m * k; i++)
        a[i] = (float)((int)(next_rand(&seed) >> 24) % 17 - 8);
    for (int64_t i = 0; i < k * n; i++)
        b[i] = (float)((int)(next_rand(&seed) >> 24) % 255 - 127);
    f64_matmul(a, b, exact, scale, m, k, n);
    for (int p = 0; p < 3; p++) {
        tpu_mxu_matmul_f32(a, b, c, m, k, n, precisions[p]);
        for (int64_t i = 0; i < m * n; i++)
            assert_true((double)c[i] == exact[i]);
    }
    free(a), free(b), free(c0), free(c), free(exact), free(scale);
}

/* The same inputs give the same bits on every call. */
static void test_matmul_deterministic(void **state)
{
    (void)state;
    const int64_t m = 37, k = 270, n = 29;
    float *a = new_floats(m * k), *b = new_floats(k * n);
    float *c1 = new_floats(m * n), *c2 = new_floats(m * n);
    fill_random(a, m * k, 11);
    fill_random(b, k * n, 12);
    for (int p = 0; p < 3; p++) {
        tpu_mxu_matmul_f32(a, b, c1, m, k, n, precisions[p]);
        tpu_mxu_matmul_f32(a, b, c2, m, k, n, precisions[p]);
        CHECK_BITS(c2, c1, m * n);
    }
    free(a), free(b), free(c1), free(c2);
}

/* ============================================================ batched */

static void check_batched(int64_t batch, int64_t m, int64_t k, int64_t n,
                          int64_t b_stride, tpu_precision p, int line)
{
    int64_t b_count = b_stride == 0 ? k * n : (batch - 1) * b_stride + k * n;
    float *a = new_floats(batch * m * k), *b = new_floats(b_count);
    float *c = new_floats(batch * m * n), *want = new_floats(m * n);
    fill_random(a, batch * m * k, (uint32_t)line);
    fill_random(b, b_count, (uint32_t)line + 1);
    tpu_mxu_matmul_batched_f32(a, b, c, batch, m, k, n, b_stride, p);
    for (int64_t bi = 0; bi < batch; bi++) {
        ref_matmul(a + bi * m * k, b + bi * b_stride, want, m, k, n, p);
        check_bits(c + bi * m * n, want, m * n, line);
    }
    free(a), free(b), free(c), free(want);
}

static void test_matmul_batched(void **state)
{
    (void)state;
    for (int p = 0; p < 3; p++) {
        check_batched(3, 5, 130, 9, 130 * 9, precisions[p], __LINE__); /* one B each */
        check_batched(4, 6, 40, 11, 0, precisions[p], __LINE__);       /* shared B */
    }
    check_batched(3, 2, 7, 5, 7 * 5 + 3, TPU_PRECISION_DEFAULT, __LINE__); /* gaps */
    check_batched(1, 3, 4, 5, 0, TPU_PRECISION_HIGH, __LINE__);
    check_batched(0, 3, 4, 5, 0, TPU_PRECISION_HIGH, __LINE__); /* empty batch */
}

/* ================================================================ int32 */

static void test_matmul_i32_wraps(void **state)
{
    (void)state;
    const int32_t a[2][2] = {{INT32_MAX, 2}, {INT32_MIN, 0}};
    const int32_t b[2][2] = {{2, -1}, {1, 5}};
    int32_t c[2][2];
    tpu_mxu_matmul_i32(&a[0][0], &b[0][0], &c[0][0], 2, 2, 2);
    assert_int_equal(c[0][0], 0);                 /* 2^32 - 2 + 2 */
    assert_int_equal(c[0][1], -INT32_MAX + 10);   /* -(2^31 - 1) + 10 */
    assert_int_equal(c[1][0], 0);                 /* -2^32 */
    assert_int_equal(c[1][1], INT32_MIN);         /* -(-2^31) wraps to -2^31 */

    enum { M = 7, K = 33, N = 9 };
    int32_t x[M * K], y[K * N], z[M * N];
    uint32_t seed = 5;
    for (int i = 0; i < M * K; i++)
        x[i] = (int32_t)next_rand(&seed);
    for (int i = 0; i < K * N; i++)
        y[i] = (int32_t)next_rand(&seed);
    tpu_mxu_matmul_i32(x, y, z, M, K, N);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            uint64_t s = 0; /* modulo 2^64, so modulo 2^32 too */
            for (int kk = 0; kk < K; kk++)
                s += (uint64_t)(int64_t)x[i * K + kk] * (uint64_t)(int64_t)y[kk * N + j];
            assert_int_equal((uint32_t)z[i * N + j], (uint32_t)s);
        }
}

/* =============================================================== conv2d */

typedef struct conv_case {
    int64_t n, h, w, cin, kh, kw, cout, sh, sw;
    bool same;
} conv_case;

/* A conv_case's output dims and SAME padding before (TF's rule). */
typedef struct conv_dims {
    int64_t oh, ow, pad_top, pad_left, k;
} conv_dims;

static conv_dims conv_dims_of(const conv_case *cc)
{
    conv_dims d = {0, 0, 0, 0, cc->kh * cc->kw * cc->cin};
    tpu_conv2d_out_dims(cc->h, cc->w, cc->kh, cc->kw, cc->sh, cc->sw, cc->same, &d.oh,
                        &d.ow);
    if (cc->same) {
        int64_t th = (d.oh - 1) * cc->sh + cc->kh - cc->h;
        int64_t tw = (d.ow - 1) * cc->sw + cc->kw - cc->w;
        d.pad_top = th > 0 ? th / 2 : 0;
        d.pad_left = tw > 0 ? tw / 2 : 0;
    }
    return d;
}

/* The input value under im2col index kk (over (kh, kw, cin)) of output
 * pixel (b, y, x): 0 in the padding. */
static float conv_tap(const conv_case *cc, const conv_dims *d, const float *in, int64_t b,
                      int64_t y, int64_t x, int64_t kk)
{
    int64_t dy = kk / (cc->kw * cc->cin), dx = kk / cc->cin % cc->kw, ci = kk % cc->cin;
    int64_t iy = y * cc->sh - d->pad_top + dy, ix = x * cc->sw - d->pad_left + dx;
    if (iy < 0 || iy >= cc->h || ix < 0 || ix >= cc->w)
        return 0.0f;
    return in[((b * cc->h + iy) * cc->w + ix) * cc->cin + ci];
}

/* Direct convolution in numerics.h's order: for each output, k runs over
 * (kh, kw, cin) with chunks of 128 counted over all taps, padding taps
 * included as zero operands. */
static void ref_conv2d(const conv_case *cc, const float *in, const float *f, float *out,
                       tpu_precision p)
{
    conv_dims d = conv_dims_of(cc);
    float *out_px = out;
    for (int64_t b = 0; b < cc->n; b++)
        for (int64_t y = 0; y < d.oh; y++)
            for (int64_t x = 0; x < d.ow; x++, out_px += cc->cout)
                for (int64_t o = 0; o < cc->cout; o++) {
                    float acc = 0.0f;
                    for (int64_t k0 = 0; k0 < d.k; k0 += 128) {
                        float s = 0.0f;
                        for (int64_t kk = k0; kk < k0 + 128 && kk < d.k; kk++) {
                            float v = conv_tap(cc, &d, in, b, y, x, kk);
                            s = s + ref_term(v, f[kk * cc->cout + o], p);
                        }
                        acc = acc + s;
                    }
                    out_px[o] = acc;
                }
}

/* The same convolution exactly in f64, with sum |a||b| per output. */
static void f64_conv2d(const conv_case *cc, const float *in, const float *f, double *out,
                       double *scale)
{
    conv_dims d = conv_dims_of(cc);
    int64_t at = 0;
    for (int64_t b = 0; b < cc->n; b++)
        for (int64_t y = 0; y < d.oh; y++)
            for (int64_t x = 0; x < d.ow; x++)
                for (int64_t o = 0; o < cc->cout; o++, at++) {
                    double sum = 0.0, abs_sum = 0.0;
                    for (int64_t kk = 0; kk < d.k; kk++) {
                        double prod = (double)conv_tap(cc, &d, in, b, y, x, kk) *
                                      (double)f[kk * cc->cout + o];
                        sum += prod;
                        abs_sum += fabs(prod);
                    }
                    out[at] = sum;
                    scale[at] = abs_sum;
                }
}

static void test_conv2d_out_dims(void **state)
{
    (void)state;
    int64_t oh, ow;
    tpu_conv2d_out_dims(5, 6, 3, 3, 1, 1, true, &oh, &ow); /* SAME: ceil(in / s) */
    assert_int_equal(oh, 5);
    assert_int_equal(ow, 6);
    tpu_conv2d_out_dims(5, 6, 3, 3, 2, 2, true, &oh, &ow);
    assert_int_equal(oh, 3);
    assert_int_equal(ow, 3);
    tpu_conv2d_out_dims(3, 3, 5, 5, 2, 1, true, &oh, &ow); /* filter larger than input */
    assert_int_equal(oh, 2);
    assert_int_equal(ow, 3);
    tpu_conv2d_out_dims(5, 6, 3, 3, 1, 1, false, &oh, &ow); /* VALID: (in - k) / s + 1 */
    assert_int_equal(oh, 3);
    assert_int_equal(ow, 4);
    tpu_conv2d_out_dims(5, 6, 3, 3, 2, 2, false, &oh, &ow);
    assert_int_equal(oh, 2);
    assert_int_equal(ow, 2);
    tpu_conv2d_out_dims(2, 3, 3, 3, 1, 1, false, &oh, &ow); /* window does not fit */
    assert_int_equal(oh, 0);
    assert_int_equal(ow, 1);
}

/* SAME's odd padding goes to the bottom / right: a 4x4 input, 3x3 filter,
 * stride 2 needs one row and column of padding, all after, so the top-left
 * tap of output (0, 0) reads input (0, 0). */
static void test_conv2d_same_pads_bottom_right(void **state)
{
    (void)state;
    float in[16], f[9] = {0}, out[4];
    for (int i = 0; i < 16; i++)
        in[i] = (float)(i + 1);
    f[0] = 1.0f; /* picks the window's top-left value */
    tpu_mxu_conv2d_f32(in, f, out, 1, 4, 4, 1, 3, 3, 1, 2, 2, true, TPU_PRECISION_DEFAULT);
    assert_true(out[0] == 1.0f && out[1] == 3.0f && out[2] == 9.0f && out[3] == 11.0f);
    f[0] = 0.0f;
    f[8] = 1.0f; /* bottom-right: lands in the padding for the last row / column */
    tpu_mxu_conv2d_f32(in, f, out, 1, 4, 4, 1, 3, 3, 1, 2, 2, true, TPU_PRECISION_DEFAULT);
    assert_true(out[0] == 11.0f && out[1] == 0.0f && out[2] == 0.0f && out[3] == 0.0f);
    /* a 3x3 input, stride 1: one before and one after */
    float in9[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, out9[9];
    f[8] = 0.0f;
    f[0] = 1.0f;
    tpu_mxu_conv2d_f32(in9, f, out9, 1, 3, 3, 1, 3, 3, 1, 1, 1, true,
                       TPU_PRECISION_DEFAULT);
    assert_true(out9[0] == 0.0f && out9[4] == 1.0f && out9[8] == 5.0f);
}

static void check_conv(const conv_case *cc, int index)
{
    conv_dims d = conv_dims_of(cc);
    int64_t in_count = cc->n * cc->h * cc->w * cc->cin;
    int64_t out_count = cc->n * d.oh * d.ow * cc->cout;
    float *in = new_floats(in_count), *f = new_floats(d.k * cc->cout);
    float *out = new_floats(out_count), *want = new_floats(out_count);
    fill_random(in, in_count, (uint32_t)(200 + index));
    fill_random(f, d.k * cc->cout, (uint32_t)(300 + index));
    for (int p = 0; p < 3; p++) {
        memset(out, 0xFF, (size_t)out_count * sizeof *out);
        tpu_mxu_conv2d_f32(in, f, out, cc->n, cc->h, cc->w, cc->cin, cc->kh, cc->kw,
                           cc->cout, cc->sh, cc->sw, cc->same, precisions[p]);
        ref_conv2d(cc, in, f, want, precisions[p]);
        for (int64_t i = 0; i < out_count; i++)
            if (f32_bits(out[i]) != f32_bits(want[i]))
                fail_msg("conv case %d, precision %d: out[%lld] is %a, expected %a", index,
                         p, (long long)i, (double)out[i], (double)want[i]);
    }
    free(in), free(f), free(out), free(want);
}

/* Bit for bit against the direct loop: SAME and VALID, strides 1 and 2,
 * K = 3*3*20 = 180 > 128 (two chunks), more than 64 output pixels (several
 * A blocks) and cout across micro-tile columns. */
static void test_conv2d_bit_exact(void **state)
{
    (void)state;
    static const conv_case cases[] = {
        {2, 7, 6, 20, 3, 3, 5, 1, 1, true},   {2, 7, 6, 20, 3, 3, 5, 1, 1, false},
        {2, 7, 6, 20, 3, 3, 5, 2, 2, true},   {2, 7, 6, 20, 3, 3, 5, 2, 2, false},
        {1, 9, 8, 3, 2, 4, 9, 2, 1, true},    {1, 9, 8, 3, 2, 4, 9, 1, 2, false},
        {2, 12, 12, 16, 3, 3, 20, 1, 1, true}, {1, 3, 3, 30, 5, 5, 4, 1, 1, true},
        {1, 5, 5, 140, 1, 1, 3, 1, 1, false}, {1, 6, 5, 2, 1, 1, 3, 2, 2, true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_conv(&cases[i], (int)i);
}

/* Against an f64 direct convolution: DEFAULT within bf16 error, HIGHEST
 * within f32 accumulation error. */
static void test_conv2d_accuracy(void **state)
{
    (void)state;
    const conv_case cc = {2, 8, 8, 24, 3, 3, 6, 2, 1, true};
    conv_dims d = conv_dims_of(&cc);
    int64_t in_count = cc.n * cc.h * cc.w * cc.cin;
    int64_t out_count = cc.n * d.oh * d.ow * cc.cout;
    float *in = new_floats(in_count), *f = new_floats(d.k * cc.cout);
    float *out = new_floats(out_count);
    double *exact = malloc((size_t)out_count * sizeof *exact);
    double *scale = malloc((size_t)out_count * sizeof *scale);
    assert_non_null(exact);
    assert_non_null(scale);
    uint32_t seed = 77;
    for (int64_t i = 0; i < in_count; i++)
        in[i] = rand_unit(&seed);
    for (int64_t i = 0; i < d.k * cc.cout; i++)
        f[i] = rand_unit(&seed);
    f64_conv2d(&cc, in, f, exact, scale);
    double err[3];
    for (int p = 0; p < 3; p++) {
        tpu_mxu_conv2d_f32(in, f, out, cc.n, cc.h, cc.w, cc.cin, cc.kh, cc.kw, cc.cout,
                           cc.sh, cc.sw, cc.same, precisions[p]);
        err[p] = max_scaled_error(out, exact, scale, out_count);
    }
    print_message("scaled max error: DEFAULT %.3g HIGH %.3g HIGHEST %.3g\n", err[0],
                  err[1], err[2]);
    assert_true(err[0] < 1e-2);
    assert_true(err[1] < 1e-5);
    assert_true(err[2] < 1e-6);
    assert_true(err[2] < err[1] && err[1] < err[0] / 100);
    free(in), free(f), free(out), free(exact), free(scale);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bf16_ties_to_even),
        cmocka_unit_test(test_bf16_special_values),
        cmocka_unit_test(test_bf16_subnormals),
        cmocka_unit_test(test_bf16_round_trip_all_patterns),
        cmocka_unit_test(test_bf16_matches_nearest_even),
        cmocka_unit_test(test_matmul_bit_exact_all_precisions),
        cmocka_unit_test(test_matmul_bit_exact_long_k),
        cmocka_unit_test(test_matmul_chunks_of_128),
        cmocka_unit_test(test_matmul_k0_and_empty),
        cmocka_unit_test(test_matmul_non_finite),
        cmocka_unit_test(test_matmul_precision_accuracy),
        cmocka_unit_test(test_matmul_bf16_inputs_exact),
        cmocka_unit_test(test_matmul_deterministic),
        cmocka_unit_test(test_matmul_batched),
        cmocka_unit_test(test_matmul_i32_wraps),
        cmocka_unit_test(test_conv2d_out_dims),
        cmocka_unit_test(test_conv2d_same_pads_bottom_right),
        cmocka_unit_test(test_conv2d_bit_exact),
        cmocka_unit_test(test_conv2d_accuracy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
