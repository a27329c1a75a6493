/*
 * random.h - the counter-based generator behind ag_random_uniform.
 *
 * Element i (flat row-major index) of a random tensor is a pure function of
 * (seed, i): no hidden state, so the same seed gives the same values in any
 * call, in any order, on any thread, and a compiled graph can reproduce an
 * eager result bit for bit. A consequence worth knowing: the first k
 * elements do not depend on the shape, so shapes [2,3] and [6] hold the
 * same six numbers.
 *
 * The exact definition (a backend must reproduce it; all arithmetic on
 * uint64_t is modulo 2^64):
 *
 *   mix(z):   z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
 *             z = (z ^ (z >> 27)) * 0x94D049BB133111EB
 *             return z ^ (z >> 31)
 *   rt_random_bits(seed, i) = mix(mix(seed ^ 0x6A09E667F3BCC909)
 *                                 + i * 0x9E3779B97F4A7C15)
 *   rt_random_unit24(b) = (float)(b >> 40) * 2^-24     in [0, 1), exact
 *   rt_random_unit53(b) = (double)(b >> 11) * 2^-53    in [0, 1), exact
 *
 * (mix is the well-known SplitMix64 finalizer; the seed is hashed once into
 * a key and the counter advances by the golden-ratio increment, so streams
 * of different seeds are unrelated.)
 *
 * Element values, with b = rt_random_bits(seed, i), in IEEE double
 * arithmetic where not said otherwise, every operation rounded separately
 * (no fused multiply-add):
 *
 *   f64:  r = lo + (hi - lo) * rt_random_unit53(b);
 *         if r >= hi: r = nextafter(hi, -inf)
 *   f32:  r = (float)(lo + (hi - lo) * (double)rt_random_unit24(b));
 *         if (double)r >= hi: r = nextafterf(r, -inf)
 *   bf16: r = bf16(float)(lo + (hi - lo) * (double)rt_random_unit24(b)),
 *         rounded to f32 and then to bf16 (nearest even);
 *         if f32(r) >= hi: r = the next bf16 value below r
 *   i32, i64: the integers of [lo, hi) that the dtype holds are
 *         first = max(ceil(lo), MIN), last = min(ceil(hi), MAX + 1) - 1
 *         (MIN, MAX: the dtype's limits; the - 1 exact, in integers;
 *         an error when last < first), m = last - first (exact, in
 *         uint64_t: the count minus 1, which cannot overflow);
 *         off = (uint64_t)floor(rt_random_unit53(b) * ((double)m + 1.0)),
 *         clamped to m; r = first + off (in uint64_t, then as signed).
 *         So ints are uniform on [ceil(lo), hi) (exactly uniform up to
 *         2^53 values; beyond that the low bits of off are coarse).
 *
 * The clamps keep a float result below hi when rounding would reach it.
 * With lo and hi representable in the dtype, every value lies in [lo, hi).
 */
#ifndef RT_RANDOM_H
#define RT_RANDOM_H

#include <stdint.h>

uint64_t rt_random_bits(uint64_t seed, uint64_t i);
float rt_random_unit24(uint64_t bits);
double rt_random_unit53(uint64_t bits);

#endif
