/*
 * qgemm.h - int8 matrix products with int32 sums, the arithmetic of every
 * quantized product (docs/quantization.md):
 *
 *     c[i,j] = sum_p (a[i,p] - a_zero) * b[p,j]        (int32)
 *
 * a is an int8 activation with its zero point, b an int8 weight
 * (symmetric, zero point 0). The sums are exact: |a - a_zero| <= 255 and
 * |b| <= 128, so k up to 65793 cannot overflow int32 (callers check
 * RT_QGEMM_MAX_K). Every path (scalar, AVX2, AVX-512 VNNI, AVX-VNNI, AMX)
 * gives the same bits; tests/unit/test_qgemm.c holds them to the scalar
 * one. Row-major, dense: a is [m,k], b is [k,n], c is [m,n].
 */
#ifndef RT_QGEMM_H
#define RT_QGEMM_H

#include <stdint.h>

/* The largest k whose sums cannot overflow: 255 * 128 * k < 2^31. */
enum { RT_QGEMM_MAX_K = 65793 };

/* The product on the fastest path this CPU has (chosen once per
 * process, as the bf16 products choose theirs). */
void rt_qgemm_s8(int64_t m, int64_t n, int64_t k, const int8_t *a, int32_t a_zero,
                 const int8_t *b, int32_t *c);

/* The plain C product every other path must equal, bit for bit. */
void rt_qgemm_s8_scalar(int64_t m, int64_t n, int64_t k, const int8_t *a, int32_t a_zero,
                        const int8_t *b, int32_t *c);

/* The name of the path rt_qgemm_s8 runs ("scalar", "avx2", "avx512-vnni",
 * "avx-vnni", "amx-int8"), for benchmarks and listings. */
const char *rt_qgemm_path(void);

#endif
