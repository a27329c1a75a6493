/*
 * tanh_f32.h - agc's own single-precision tanh, rt_tanh_f32.
 *
 * Why not tanhf: a function's result may not depend on the executor, so
 * the eager kernels, the reference executor and the code the LLVM backend
 * generates must compute the same bits. glibc's tanhf is a scalar call the
 * generated loops cannot vectorize (1 GB/s on a fused loop that otherwise
 * runs at memory speed). This algorithm uses only operations that IEEE 754
 * defines exactly (+ - * / rounded to nearest, compares, selects, fabs,
 * integer operations on the bits), in a fixed order and with no FMA, so
 * any correct compiler, vectorized or not, gives the same bits.
 * backend/cpu/lower_math.c (cg_emit_tanh_f32) emits the same sequence as LLVM
 * IR, from the constants below.
 *
 * The algorithm, one formula for every input, on a = |x| (the sign bit of
 * x is put back at the end, so the function is odd bit for bit and
 * tanh(-0) = -0):
 *   tanh(a) = E / (E + 2), E = expm1(2a) = e^(2a) - 1.
 *   - a is clamped to 10 first: from a = 9.011 tanh(a) rounds to 1, the
 *     formula gives exactly 1 there, and nothing overflows (inf, and NaN,
 *     whose lane is discarded, become 10 too).
 *   - e^y = 2^k * e^r, y = 2a, k = round(y / ln 2) in [0, 29] and
 *     r = y - k*LN2 in about [-0.35, 0.35]. k is rounded by adding
 *     ROUNDER; the bits of the sum hold k + 127 in their low bits, so
 *     shifting them left by 23 gives the bits of 2^k.
 *     LN2 is ln 2 rounded to f32, 0x1.62e43p-1, which needs no second
 *     part (Cody-Waite's LN2_LO): its last three bits are zero, so k*LN2
 *     is exact for k <= 7 and y - k*LN2 is exact too (Sterbenz), and it
 *     is unusually close to ln 2 (1.9e-9 above), so r is off from
 *     y - k ln 2 by k * 1.9e-9: at most 0.04 ulp of tanh (k = 1, where
 *     tanh'/tanh is largest). From k = 8 (a > 2.6), where k*LN2 may
 *     round (by 2^-22 at most), E's relative error grows by about 1e-7,
 *     which tanh = 1 - 2/(E + 2) scales down by 2/(E + 2) < 0.02: under
 *     0.05 ulp. Splitting ln 2 cost a multiply and a subtraction of the
 *     33 vector operations, and the fused loop 6-8% of its time.
 *   - expm1(r) = r + r*r*Q(r), Q of degree 5, evaluated by Estrin's
 *     scheme (shorter dependency chains than Horner's rule: the loop is
 *     limited by latency as much as by the number of operations), and
 *     E = (2^k - 1) + 2^k * expm1(r), which holds expm1's relative
 *     accuracy (2^k - 1 is exact).
 *   - Below |x| = 2^-12 tanh(x) rounds to x, and x is returned; NaN is
 *     returned as it came (same payload); one compare selects both.
 * One division, no second branch: this file's previous algorithm (a
 * polynomial for small |x| plus a formula with exp for the rest, both
 * computed and one selected; max 1 ulp) took 78 instructions per 8
 * elements in the fused AVX2 loop of tanh(x*a + b)*c + x, this one 56
 * (13 of them reloads of constants), with a shorter dependency chain:
 * about 1.4x faster. The price is the second ulp (see below).
 *
 * Q is this project's own weighted minimax fit (Remez exchange on a dense
 * grid, 40-digit arithmetic with mpmath), rounded to f32: it minimizes the
 * relative error of r + r*r*Q(r) against expm1(r) on [-0.3467, 0.3467]
 * (2.7e-10; relative, because for small a the error of E passes to tanh
 * unreduced).
 * Measured over every f32 input against tanh() in double rounded to f32:
 * at most 2 ulp from the correctly rounded result (2 ulp for 1,238,154 of
 * the 2^32 - 2^24 non-NaN inputs, 1 ulp for 80,113,126 (1.9%), the rest
 * exact); the largest error against the exact value is 2.46 ulp, at
 * x = 0.12560. GCC 12 and clang 19, scalar and vectorized, give the same
 * bits for every input. The 2-ulp cases all lie in 2^-11.6 < |x| < 0.2554, where
 * tanh is about E/2 and E's own rounding, E + 2's and the quotient's add
 * up; above, E's error is scaled down by 2/(E + 2), and at most 1 ulp.
 *
 * The selects are written as bit masks because GCC turns a ?: on floats
 * into a branch, and a loop with branches does not vectorize; the masks
 * select the same values.
 * C compilers must not contract a*b + c into an FMA here: GCC does not in
 * ISO C mode (-std=c11, as the project builds), clang obeys the pragma.
 */
#ifndef RT_TANH_F32_H
#define RT_TANH_F32_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* |x| is clamped to this (NaN and inf too: their lanes are discarded, but
 * stay harmless). */
#define RT_TANH_F32_AMAX 10.0f
/* 2/ln 2 (twice f32 1/ln 2, exactly: a * 2LOG2E is (2a) * LOG2E), and
 * ln 2 rounded to f32, with 20 significant bits (see above). */
#define RT_TANH_F32_2LOG2E 0x1.715476p+1f
#define RT_TANH_F32_LN2 0x1.62e43p-1f
/* Below this |x| (and for NaN) the result is x itself: tanh(x) = x - x^3/3
 * + ... rounds to x there, which the formula does not always give (E + 2
 * rounds away bits of E). */
#define RT_TANH_F32_TINY 0x1p-12f
/* 1.5 * 2^23 + 127: adding it rounds a float of magnitude < 2^22 to an
 * integer k, and the low bits of the sum are k + 127, 2^k's exponent
 * field. */
#define RT_TANH_F32_ROUNDER 0x1.8000fep+23f

enum { RT_TANH_F32_NQ = 6 };
/* expm1(r) ~ r + r*r*Q(r): Q's coefficients, lowest degree first. */
static const float rt_tanh_f32_q[RT_TANH_F32_NQ] = {
    0x1p-1f, 0x1.555556p-3f, 0x1.55549ep-5f, 0x1.11101ep-7f, 0x1.6d837ep-10f, 0x1.a2a376p-13f,
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
    const float *q = rt_tanh_f32_q;
    float a = fabsf(x);
    float c = rt_tanh_f32_pick(a < RT_TANH_F32_AMAX, a, RT_TANH_F32_AMAX);

    /* y = 2c = k*ln 2 + r; 2^k from the bits of the rounding sum s */
    float y = c + c;
    float s = c * RT_TANH_F32_2LOG2E + RT_TANH_F32_ROUNDER;
    float k = s - RT_TANH_F32_ROUNDER;
    float two_k = rt_tanh_f32_from_bits(rt_tanh_f32_bits(s) << 23);
    float r = y - k * RT_TANH_F32_LN2;

    /* expm1(r) = r + r^2*Q(r), Q by Estrin's scheme; then E = expm1(y) */
    float r2 = r * r, r4 = r2 * r2;
    float qr = ((q[0] + q[1] * r) + r2 * (q[2] + q[3] * r)) + r4 * (q[4] + q[5] * r);
    float em1 = (two_k - 1) + two_k * (r + r2 * qr);

    /* tanh(a) = E / (E + 2) >= 0: OR in the sign bit of x (x ^ |x|) */
    float t = em1 / (em1 + 2);
    float res = rt_tanh_f32_from_bits(rt_tanh_f32_bits(t) | (rt_tanh_f32_bits(x) ^ rt_tanh_f32_bits(a)));
    /* x itself for tiny |x| and NaN (!(a >= TINY): one compare for both) */
    return rt_tanh_f32_pick(!(a >= RT_TANH_F32_TINY), x, res);
}

#endif /* RT_TANH_F32_H */
