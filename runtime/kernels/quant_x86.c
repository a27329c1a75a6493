/*
 * quant_x86.c - quantize, dequantize and requantize over a row on
 * AVX-512 and AVX2
 * (quant_rows.h), bit for bit the scalar rules there. Per-function target
 * attributes, as qgemm_x86.c; the int8 product's path (rt_qgemm_kind)
 * says which may run: avx512-vnni implies AVX512-F/BW/VL, the others but
 * scalar imply AVX2.
 *
 * How they stay exact:
 *   - the division x / scale and the product (double)acc * multiplier are
 *     the same IEEE operations as the scalar ones (one rounding each);
 *   - round half away from zero is t = trunc(v), then t +- 1 where
 *     |v - t| >= 0.5 (v - t is exact), not floor(|v| + 0.5), whose add
 *     rounds (0.49999999999999994 + 0.5 is 1);
 *   - the clamps to +-1000 (quantize) and +-1e4 (requantize) come before
 *     the conversion to int32, as in the scalar rule; the zero point is
 *     clamped to +-100000 before the int32 add, which changes no result
 *     (beyond that the sum is past [-128, 127] either way) and cannot
 *     overflow;
 *   - NaN (quantize: x / scale; requantize: never, rt_requant_check sends
 *     NaN and infinite multipliers to the scalar rule) gives the zero
 *     point, clamped;
 *   - dequantize forms q - zero in int32 only where it cannot overflow
 *     (rt_dequant_vector_ok), converts it to f32 with the scalar rule's
 *     rounding (to nearest even) and multiplies once.
 */
#include "quant_rows.h"

#if defined(__x86_64__)
#include <immintrin.h>

#define T512 __attribute__((target("avx512f,avx512bw,avx512vl")))
#define T256 __attribute__((target("avx2")))

enum { ZERO_LIMIT = 100000 };

/* ------------------------------------------------------------ AVX-512 */

T512 static __m512i zero_512(const int32_t *zero, int64_t step, int64_t j)
{
    __m512i z = step ? _mm512_loadu_si512((const void *)(zero + j)) : _mm512_set1_epi32(zero[0]);
    return _mm512_min_epi32(_mm512_max_epi32(z, _mm512_set1_epi32(-ZERO_LIMIT)),
                            _mm512_set1_epi32(ZERO_LIMIT));
}

T512 static int64_t quantize_512(const float *x, int64_t n, const float *scale, int64_t s_step,
                                 const int32_t *zero, int64_t z_step, int8_t *q)
{
    const __m512 half = _mm512_set1_ps(0.5f), one = _mm512_set1_ps(1.0f),
                 big = _mm512_set1_ps(1000.0f), nil = _mm512_setzero_ps();
    int64_t j = 0;
    for (; j + 16 <= n; j += 16) {
        __m512 s = s_step ? _mm512_loadu_ps(scale + j) : _mm512_set1_ps(scale[0]);
        __m512 v = _mm512_div_ps(_mm512_loadu_ps(x + j), s);
        __m512 t = _mm512_roundscale_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
        __mmask16 away = _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_sub_ps(v, t)), half, _CMP_GE_OQ);
        t = _mm512_mask_add_ps(t, away & _mm512_cmp_ps_mask(v, nil, _CMP_GT_OQ), t, one);
        t = _mm512_mask_sub_ps(t, away & _mm512_cmp_ps_mask(v, nil, _CMP_LT_OQ), t, one);
        t = _mm512_min_ps(_mm512_max_ps(t, _mm512_sub_ps(nil, big)), big);
        __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
        __m512i r = _mm512_maskz_cvttps_epi32((__mmask16)~nan, t);
        r = _mm512_add_epi32(r, zero_512(zero, z_step, j));
        r = _mm512_min_epi32(_mm512_max_epi32(r, _mm512_set1_epi32(-128)), _mm512_set1_epi32(127));
        _mm_storeu_si128((void *)(q + j), _mm512_cvtepi32_epi8(r));
    }
    return j;
}

/* round((double)acc * m) clamped to +-1e4, as int32, for 8 lanes. */
T512 static __m256i round_product_512(__m256i acc, __m256 m)
{
    const __m512d half = _mm512_set1_pd(0.5), one = _mm512_set1_pd(1.0),
                  big = _mm512_set1_pd(1e4), nil = _mm512_setzero_pd();
    __m512d v = _mm512_mul_pd(_mm512_cvtepi32_pd(acc), _mm512_cvtps_pd(m));
    __m512d t = _mm512_roundscale_pd(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    __mmask8 away = _mm512_cmp_pd_mask(_mm512_abs_pd(_mm512_sub_pd(v, t)), half, _CMP_GE_OQ);
    t = _mm512_mask_add_pd(t, away & _mm512_cmp_pd_mask(v, nil, _CMP_GT_OQ), t, one);
    t = _mm512_mask_sub_pd(t, away & _mm512_cmp_pd_mask(v, nil, _CMP_LT_OQ), t, one);
    t = _mm512_min_pd(_mm512_max_pd(t, _mm512_sub_pd(nil, big)), big);
    return _mm512_cvttpd_epi32(t);
}

T512 static int64_t requantize_512(const rt_requant *r, const int32_t *acc, int64_t n, int8_t *q)
{
    const __m512i lo = _mm512_set1_epi32(r->lo), hi = _mm512_set1_epi32(r->hi);
    int64_t j = 0;
    for (; j + 16 <= n; j += 16) {
        __m512i a = _mm512_loadu_si512((const void *)(acc + j));
        if (r->bias)
            a = _mm512_add_epi32(a, r->b_step ? _mm512_loadu_si512((const void *)(r->bias + j))
                                              : _mm512_set1_epi32(r->bias[0]));
        __m512 m = r->m_step ? _mm512_loadu_ps(r->mult + j) : _mm512_set1_ps(r->mult[0]);
        __m512i mi = _mm512_castps_si512(m);
        __m256i low = round_product_512(_mm512_castsi512_si256(a),
                                        _mm256_castsi256_ps(_mm512_castsi512_si256(mi)));
        __m256i high = round_product_512(_mm512_extracti64x4_epi64(a, 1),
                                         _mm256_castsi256_ps(_mm512_extracti64x4_epi64(mi, 1)));
        __m512i v = _mm512_inserti64x4(_mm512_castsi256_si512(low), high, 1);
        v = _mm512_add_epi32(v, zero_512(r->zero, r->z_step, j));
        v = _mm512_min_epi32(_mm512_max_epi32(v, lo), hi);
        _mm_storeu_si128((void *)(q + j), _mm512_cvtepi32_epi8(v));
    }
    return j;
}

/* 16 values of the row from j on, as int32. */
T512 static __m512i load_q_512(const rt_dequant *d, int64_t j)
{
    if (d->q8)
        return _mm512_cvtepi8_epi32(_mm_loadu_si128((const void *)(d->q8 + j)));
    return _mm512_loadu_si512((const void *)(d->q32 + j));
}

T512 static int64_t dequantize_512(const rt_dequant *d, int64_t n, float *y)
{
    int64_t j = 0;
    for (; j + 16 <= n; j += 16) {
        __m512i z = d->z_step ? _mm512_loadu_si512((const void *)(d->zero + j))
                              : _mm512_set1_epi32(d->zero[0]);
        __m512 s = d->s_step ? _mm512_loadu_ps(d->scale + j) : _mm512_set1_ps(d->scale[0]);
        __m512 v = _mm512_cvtepi32_ps(_mm512_sub_epi32(load_q_512(d, j), z));
        _mm512_storeu_ps(y + j, _mm512_mul_ps(v, s));
    }
    return j;
}

/* --------------------------------------------------------------- AVX2 */

T256 static __m256i load_q_256(const rt_dequant *d, int64_t j)
{
    if (d->q8)
        return _mm256_cvtepi8_epi32(_mm_loadl_epi64((const void *)(d->q8 + j)));
    return _mm256_loadu_si256((const void *)(d->q32 + j));
}

T256 static int64_t dequantize_256(const rt_dequant *d, int64_t n, float *y)
{
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
        __m256i z = d->z_step ? _mm256_loadu_si256((const void *)(d->zero + j))
                              : _mm256_set1_epi32(d->zero[0]);
        __m256 s = d->s_step ? _mm256_loadu_ps(d->scale + j) : _mm256_set1_ps(d->scale[0]);
        __m256 v = _mm256_cvtepi32_ps(_mm256_sub_epi32(load_q_256(d, j), z));
        _mm256_storeu_ps(y + j, _mm256_mul_ps(v, s));
    }
    return j;
}

T256 static __m256i zero_256(const int32_t *zero, int64_t step, int64_t j)
{
    __m256i z = step ? _mm256_loadu_si256((const void *)(zero + j)) : _mm256_set1_epi32(zero[0]);
    return _mm256_min_epi32(_mm256_max_epi32(z, _mm256_set1_epi32(-ZERO_LIMIT)),
                            _mm256_set1_epi32(ZERO_LIMIT));
}

/* 8 int32 lanes, each within int8's range, as 8 bytes at q. */
T256 static void store_8(int8_t *q, __m256i v)
{
    __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    _mm_storel_epi64((void *)q, _mm_packs_epi16(w, w));
}

T256 static int64_t quantize_256(const float *x, int64_t n, const float *scale, int64_t s_step,
                                 const int32_t *zero, int64_t z_step, int8_t *q)
{
    const __m256 half = _mm256_set1_ps(0.5f), one = _mm256_set1_ps(1.0f),
                 big = _mm256_set1_ps(1000.0f), sign = _mm256_set1_ps(-0.0f);
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
        __m256 s = s_step ? _mm256_loadu_ps(scale + j) : _mm256_set1_ps(scale[0]);
        __m256 v = _mm256_div_ps(_mm256_loadu_ps(x + j), s);
        __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
        __m256 away = _mm256_cmp_ps(_mm256_andnot_ps(sign, _mm256_sub_ps(v, t)), half, _CMP_GE_OQ);
        t = _mm256_add_ps(t, _mm256_and_ps(away, _mm256_or_ps(_mm256_and_ps(v, sign), one)));
        t = _mm256_min_ps(_mm256_max_ps(t, _mm256_xor_ps(big, sign)), big);
        __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
        __m256i r = _mm256_andnot_si256(nan, _mm256_cvttps_epi32(t));
        r = _mm256_add_epi32(r, zero_256(zero, z_step, j));
        r = _mm256_min_epi32(_mm256_max_epi32(r, _mm256_set1_epi32(-128)), _mm256_set1_epi32(127));
        store_8(q + j, r);
    }
    return j;
}

/* round((double)acc * m) clamped to +-1e4, as int32, for 4 lanes. */
T256 static __m128i round_product_256(__m128i acc, __m128 m)
{
    const __m256d half = _mm256_set1_pd(0.5), one = _mm256_set1_pd(1.0),
                  big = _mm256_set1_pd(1e4), sign = _mm256_set1_pd(-0.0);
    __m256d v = _mm256_mul_pd(_mm256_cvtepi32_pd(acc), _mm256_cvtps_pd(m));
    __m256d t = _mm256_round_pd(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    __m256d away = _mm256_cmp_pd(_mm256_andnot_pd(sign, _mm256_sub_pd(v, t)), half, _CMP_GE_OQ);
    t = _mm256_add_pd(t, _mm256_and_pd(away, _mm256_or_pd(_mm256_and_pd(v, sign), one)));
    t = _mm256_min_pd(_mm256_max_pd(t, _mm256_xor_pd(big, sign)), big);
    return _mm256_cvttpd_epi32(t);
}

T256 static int64_t requantize_256(const rt_requant *r, const int32_t *acc, int64_t n, int8_t *q)
{
    const __m256i lo = _mm256_set1_epi32(r->lo), hi = _mm256_set1_epi32(r->hi);
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
        __m256i a = _mm256_loadu_si256((const void *)(acc + j));
        if (r->bias)
            a = _mm256_add_epi32(a, r->b_step ? _mm256_loadu_si256((const void *)(r->bias + j))
                                              : _mm256_set1_epi32(r->bias[0]));
        __m256 m = r->m_step ? _mm256_loadu_ps(r->mult + j) : _mm256_set1_ps(r->mult[0]);
        __m128i low = round_product_256(_mm256_castsi256_si128(a), _mm256_castps256_ps128(m));
        __m128i high = round_product_256(_mm256_extracti128_si256(a, 1),
                                         _mm256_extractf128_ps(m, 1));
        __m256i v = _mm256_add_epi32(_mm256_set_m128i(high, low), zero_256(r->zero, r->z_step, j));
        store_8(q + j, _mm256_min_epi32(_mm256_max_epi32(v, lo), hi));
    }
    return j;
}

int64_t rt_quantize_row_vec(rt_qgemm_kind path, const float *x, int64_t n, const float *scale,
                            int64_t s_step, const int32_t *zero, int64_t z_step, int8_t *q)
{
    if (path == RT_QGEMM_AVX512_VNNI)
        return quantize_512(x, n, scale, s_step, zero, z_step, q);
    if (path == RT_QGEMM_AVX2 || path == RT_QGEMM_AVX_VNNI)
        return quantize_256(x, n, scale, s_step, zero, z_step, q);
    return 0;
}

int64_t rt_dequantize_row_vec(rt_qgemm_kind path, const rt_dequant *d, int64_t n, float *y)
{
    if (!d->vector_ok)
        return 0;
    if (path == RT_QGEMM_AVX512_VNNI)
        return dequantize_512(d, n, y);
    if (path == RT_QGEMM_AVX2 || path == RT_QGEMM_AVX_VNNI)
        return dequantize_256(d, n, y);
    return 0;
}

int64_t rt_requantize_row_vec(rt_qgemm_kind path, const rt_requant *r, const int32_t *acc,
                              int64_t n, int8_t *q)
{
    if (!r->vector_ok)
        return 0;
    if (path == RT_QGEMM_AVX512_VNNI)
        return requantize_512(r, acc, n, q);
    if (path == RT_QGEMM_AVX2 || path == RT_QGEMM_AVX_VNNI)
        return requantize_256(r, acc, n, q);
    return 0;
}
#else
int64_t rt_quantize_row_vec(rt_qgemm_kind path, const float *x, int64_t n, const float *scale,
                            int64_t s_step, const int32_t *zero, int64_t z_step, int8_t *q)
{
    (void)path, (void)x, (void)n, (void)scale, (void)s_step, (void)zero, (void)z_step, (void)q;
    return 0;
}

int64_t rt_requantize_row_vec(rt_qgemm_kind path, const rt_requant *r, const int32_t *acc,
                              int64_t n, int8_t *q)
{
    (void)path, (void)r, (void)acc, (void)n, (void)q;
    return 0;
}

int64_t rt_dequantize_row_vec(rt_qgemm_kind path, const rt_dequant *d, int64_t n, float *y)
{
    (void)path, (void)d, (void)n, (void)y;
    return 0;
}
#endif
