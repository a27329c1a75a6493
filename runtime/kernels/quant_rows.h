/*
 * quant_rows.h - the element rules of quantize, dequantize and requantize
 * (docs/quantization.md, "The arithmetic") and their loops over one row,
 * which quant.c's kernels and the int8 product's fused epilogue
 * (rt_qlayer_requantize) run. The scalar rules below are the definition;
 * quant_x86.c has AVX-512 and AVX2 loops that give their bits
 * (tests/unit/test_quant.c holds them to it on ties, clamps, NaN,
 * infinities and extreme zero points).
 *
 * A row is n elements of the last axis; a parameter (scale, multiplier,
 * zero point) is read at element j * step: step 0 for a scalar, 1 for
 * per-channel values.
 */
#ifndef RT_QUANT_ROWS_H
#define RT_QUANT_ROWS_H

#include "qgemm.h"
#include "rt.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

static inline int8_t rt_clamp_i8(int64_t v, int64_t lo, int64_t hi)
{
    return (int8_t)(v < lo ? lo : v > hi ? hi : v);
}

/*
 * q = clamp(round(x / scale) + zero, -128, 127): the division in f32 (not
 * a multiplication by the reciprocal, whose rounding differs), roundf
 * (halves away from zero), then the add and the clamp on integers. The
 * rounded quotient is first clamped to +-1000 (beyond any int8 once the
 * zero point is added), so infinities convert defined. NaN gives the zero
 * point.
 */
static inline int8_t rt_quantize_one(float x, float scale, int32_t zero)
{
    float r = roundf(x / scale);
    if (isnan(r))
        return rt_clamp_i8(zero, -128, 127);
    r = r < -1000.0f ? -1000.0f : r > 1000.0f ? 1000.0f : r;
    return rt_clamp_i8((int64_t)r + zero, -128, 127);
}

/*
 * q = clamp(zero + round(acc * multiplier), lo, hi) in double: the product
 * of a 31-bit integer and a 24-bit significand, rounded once to double,
 * then rounded (halves away from zero). NaN gives the zero point, clamped.
 */
static inline int8_t rt_requantize_one(int32_t acc, float multiplier, int32_t zero, int64_t lo,
                                       int64_t hi)
{
    double r = round((double)acc * (double)multiplier);
    if (isnan(r))
        return rt_clamp_i8(zero, lo, hi);
    r = r < -1e4 ? -1e4 : r > 1e4 ? 1e4 : r;
    return rt_clamp_i8((int64_t)r + zero, lo, hi);
}

/* One row of quantize: q[j] = quantize(x[j], scale[j * s_step],
 * zero[j * z_step]), on `path`'s instructions (a vector path the process
 * cannot run must not be passed; rt_qgemm_chosen() can). */
void rt_quantize_row(rt_qgemm_kind path, const float *x, int64_t n, const float *scale,
                     int64_t s_step, const int32_t *zero, int64_t z_step, int8_t *q);

/* y = (q - zero) * scale: the difference exact in int64, converted to f32
 * once (exact for i8 values; i32 sums round to nearest even), then one
 * f32 multiplication. */
static inline float rt_dequantize_one(int64_t q, float scale, int32_t zero)
{
    return (float)(q - zero) * scale;
}

/* One row of dequantize of int8 values (q8) or int32 sums (q32; the
 * other NULL). The vector loops run when `vector_ok`, which the caller
 * sets when q - zero cannot leave int32 (rt_dequant_vector_ok). */
typedef struct rt_dequant {
    const int8_t *q8;
    const int32_t *q32;
    const float *scale;
    int64_t s_step;
    const int32_t *zero;
    int64_t z_step;
    bool vector_ok;
} rt_dequant;

/* Whether every q - zero fits int32 for the n_zero zero points: any
 * within +-2^30 for int8 values, only 0 for int32 sums. */
bool rt_dequant_vector_ok(const rt_dequant *d, int64_t n_zero);

/* y[j] for j in [0, n), the row's elements from d's pointers on. */
void rt_dequantize_row(rt_qgemm_kind path, const rt_dequant *d, int64_t n, float *y);

/* One row of requantize of acc[j] + bias[j * b_step] (the add in int32,
 * wrapping as agc's i32 add does; bias NULL: none): q[j] = requantize(...,
 * mult[j * m_step], zero[j * z_step], lo, hi). */
typedef struct rt_requant {
    const int32_t *bias;
    int64_t b_step;
    const float *mult;
    int64_t m_step;
    const int32_t *zero;
    int64_t z_step;
    int32_t lo, hi;
    bool vector_ok; /* every multiplier finite (rt_requant_check): else scalar */
} rt_requant;

/* Sets r->vector_ok from the n_mult multipliers: the vector loops assume
 * finite products (a NaN or infinite multiplier takes the scalar rule). */
void rt_requant_check(rt_requant *r, int64_t n_mult);

void rt_requantize_row(rt_qgemm_kind path, const rt_requant *r, const int32_t *acc, int64_t n,
                       int8_t *q);

/*
 * A static-range layer in one pass (quant.c): q[m,n] = requantize(
 * qmatmul(a, b, a_zero) + bias, ...) with r's parameters (per column or
 * scalar), the sums requantized block by block as the int8 product makes
 * them (rt_qgemm_epilogue), so that they never go to memory. The same
 * bits as the three ops one after the other. a is [m,k], b [k,n], both
 * int8, a_zero in [-128, 127], k <= RT_QGEMM_MAX_K (the caller checks);
 * `path` one the process can run (rt_qgemm_chosen() is). b_packed: b
 * packed ahead (rt_qgemm_pack), read when it fits the product; or NULL.
 */
void rt_qlayer_requantize(rt_qgemm_kind path, int64_t m, int64_t n, int64_t k, const int8_t *a,
                          int32_t a_zero, const int8_t *b, const void *b_packed,
                          const rt_requant *r, int8_t *q);

/* The kernels of qmatmul and qconv2d (quant.c) with their weight in[1]
 * also packed ahead (rt_qgemm_pack; read when it fits, as
 * rt_qgemm_use_packed says; NULL: none): the cpu target's code passes the
 * weights it packed when compiling. The ops' kernels are these with NULL;
 * out has the op's inferred type, as rt_apply_eager makes it. */
bool rt_qmatmul_packed(rt_value *const *in, const void *packed, rt_value *out, rt_err *e);
bool rt_qconv2d_packed(const rt_attrs *a, rt_value *const *in, const void *packed,
                       rt_value *out, rt_err *e);

/* quant_x86.c's vector loops: they do the first whole vectors of the row
 * and return the index where the scalar tail starts (0 for the scalar
 * path, and on a host that is not x86-64). */
int64_t rt_quantize_row_vec(rt_qgemm_kind path, const float *x, int64_t n, const float *scale,
                            int64_t s_step, const int32_t *zero, int64_t z_step, int8_t *q);
int64_t rt_requantize_row_vec(rt_qgemm_kind path, const rt_requant *r, const int32_t *acc,
                              int64_t n, int8_t *q);
int64_t rt_dequantize_row_vec(rt_qgemm_kind path, const rt_dequant *d, int64_t n, float *y);

#endif
