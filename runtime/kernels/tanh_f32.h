/*
 * tanh_f32.h - agc's own single-precision tanh, rt_tanh_f32.
 *
 * Why not tanhf: a function's result may not depend on the executor, so
 * the eager kernels, the reference executor and the code the LLVM backend
 * generates must compute the same bits. glibc's tanhf is a scalar call the
 * generated loops cannot vectorize (1 GB/s on a fused loop that otherwise
 * runs at memory speed). This algorithm uses only operations that IEEE 754
 * defines exactly (+ - * / rounded to nearest, compares, selects, fabs,
 * copysign, integer operations on the bits), in a fixed order and with no
 * FMA, so any correct compiler, vectorized or not, gives the same bits.
 * backend/lower_math.c (cg_emit_tanh_f32) emits the same sequence as LLVM
 * IR, from the constants below.
 *
 * The algorithm, on a = |x| (the sign is put back by copysign, so the
 * function is odd bit for bit and tanh(-0) = -0):
 *   - a < 0.75: the odd polynomial a + a*z*P(z), z = a*a, P of degree 5.
 *     For a tiny (subnormal included) the correction rounds away and the
 *     result is a itself.
 *   - a >= 0.75: tanh(a) = 1 - 2e/(1 + e) with e = exp(-2a) in (0, 0.23],
 *     so nothing overflows. y = 2a is clamped to 20 first: from a = 9.011
 *     tanh(a) rounds to 1, and the formula gives exactly 1 there.
 *     exp(-y) = 2^k * exp(r) with k = round(-y / ln 2) and
 *     r = -y - k*ln 2 in about [-0.35, 0.35] (Cody-Waite: ln 2 split into
 *     LN2_HI, with few enough bits that k*LN2_HI and -y - k*LN2_HI are
 *     exact, and the rest LN2_LO); exp(r) = 1 + (r + r*r*Q(r)), Q of
 *     degree 4; 2^k is built from the bits of the rounding sum.
 *   - both branches are computed and one is selected, so that loops
 *     vectorize; NaN is returned as it came (same payload).
 *
 * The coefficients are this project's own weighted minimax fits (Remez
 * exchange on a dense grid, 40-digit arithmetic with mpmath), rounded to
 * f32:
 *   P minimizes the relative error of a + a*z*P(z) against tanh(a) on
 *     (0, 0.75] (minimax error 1.6e-9);
 *   Q minimizes the relative error of 1 + r + r*r*Q(r) against exp(r) on
 *     [-0.35, 0.35] (3.3e-9).
 * Measured over every finite f32 input against tanh() in double rounded
 * to f32: at most 1 ulp from the correctly rounded result (2,824,007 of
 * the 2^31 - 2^23 positive finite inputs are 1 ulp off, the rest exact);
 * the largest error against the exact value is 1.28 ulp, at x = 0.78854.
 *
 * The selects are written as bit masks because GCC turns a ?: on floats
 * into a branch (it even folds the clamped path to a constant), and a loop
 * with branches does not vectorize; the masks select the same values.
 * C compilers must not contract a*b + c into an FMA here: GCC does not in
 * ISO C mode (-std=c11, as the project builds), clang obeys the pragma.
 */
#ifndef RT_TANH_F32_H
#define RT_TANH_F32_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* |x| below this: the polynomial; at or above: the exp formula. */
#define RT_TANH_F32_SMALL 0.75f
/* 2|x| is clamped to this before exp (NaN and inf too: their lanes are
 * discarded, but stay harmless). */
#define RT_TANH_F32_YMAX 20.0f
/* 1/ln 2, and ln 2 = LN2_HI + LN2_LO with LN2_HI of 15 significant bits:
 * |k| <= 29 here, so k*LN2_HI is exact. */
#define RT_TANH_F32_LOG2E 0x1.715476p+0f
#define RT_TANH_F32_LN2_HI 0x1.62e4p-1f
#define RT_TANH_F32_LN2_LO 0x1.7f7d1cp-20f
/* 1.5 * 2^23: adding it rounds a float of magnitude < 2^22 to an integer,
 * which then sits in the low mantissa bits of the sum. */
#define RT_TANH_F32_ROUNDER 0x1.8p+23f

enum { RT_TANH_F32_NP = 6, RT_TANH_F32_NQ = 5 };
/* tanh(a) ~ a + a*z*P(z), z = a^2: P's coefficients, lowest degree first. */
static const float rt_tanh_f32_p[RT_TANH_F32_NP] = {
    -0x1.55554ap-2f, 0x1.110db8p-3f, -0x1.b97d3cp-5f,
    0x1.5f785ap-6f,  -0x1.f5d36ep-8f, 0x1.c753cap-10f,
};
/* exp(r) ~ 1 + (r + r*r*Q(r)): Q's coefficients, lowest degree first. */
static const float rt_tanh_f32_q[RT_TANH_F32_NQ] = {
    0x1.fffffcp-2f, 0x1.55548ap-3f, 0x1.555916p-5f, 0x1.123fb4p-7f, 0x1.6a1a8ep-10f,
};

static inline uint32_t rt_tanh_f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float rt_tanh_f32_from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* c ? a : b, without a branch (see the top of the file). */
static inline float rt_tanh_f32_pick(bool c, float a, float b)
{
    uint32_t m = 0u - (uint32_t)c;
    return rt_tanh_f32_from_bits((rt_tanh_f32_bits(a) & m) | (rt_tanh_f32_bits(b) & ~m));
}

static inline float rt_tanh_f32(float x)
{
#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif
    const float *p = rt_tanh_f32_p, *q = rt_tanh_f32_q;
    float a = fabsf(x);

    /* small |x|: a + a*z*P(z), Horner from the top */
    float z = a * a;
    float pz = ((((p[5] * z + p[4]) * z + p[3]) * z + p[2]) * z + p[1]) * z + p[0];
    float small = a + a * (z * pz);

    /* e = exp(-y), y = min(2a, YMAX) */
    float y = 2 * a;
    y = rt_tanh_f32_pick(y < RT_TANH_F32_YMAX, y, RT_TANH_F32_YMAX);
    float t = -y;
    float s = t * RT_TANH_F32_LOG2E + RT_TANH_F32_ROUNDER; /* k in the low bits */
    float k = s - RT_TANH_F32_ROUNDER;
    /* 2^k: the bits of s are those of ROUNDER plus k, whose exponent
     * field (<< 23) wraps away, leaving (k + 127) << 23 */
    float two_k = rt_tanh_f32_from_bits((rt_tanh_f32_bits(s) + 127u) << 23);
    float r = (t - k * RT_TANH_F32_LN2_HI) - k * RT_TANH_F32_LN2_LO;
    float qr = (((q[4] * r + q[3]) * r + q[2]) * r + q[1]) * r + q[0];
    float e = (1 + (r + (r * r) * qr)) * two_k;
    float big = 1 - (2 * e) / (1 + e);

    float res = copysignf(rt_tanh_f32_pick(a < RT_TANH_F32_SMALL, small, big), x);
    return rt_tanh_f32_pick(x != x, x, res);
}

#endif /* RT_TANH_F32_H */
