/*
 * qgemm.c - int8 products with int32 sums (qgemm.h): the scalar path, and
 * the choice of path. The vector paths come in their own files.
 */
#include "qgemm.h"

#include <string.h>

void rt_qgemm_s8_scalar(int64_t m, int64_t n, int64_t k, const int8_t *a, int32_t a_zero,
                        const int8_t *b, int32_t *c)
{
    memset(c, 0, (size_t)(m * n) * sizeof *c);
    for (int64_t i = 0; i < m; i++)
        for (int64_t p = 0; p < k; p++) {
            int32_t x = (int32_t)a[i * k + p] - a_zero;
            const int8_t *brow = b + p * n;
            int32_t *crow = c + i * n;
            for (int64_t j = 0; j < n; j++)
                crow[j] += x * (int32_t)brow[j];
        }
}

void rt_qgemm_s8(int64_t m, int64_t n, int64_t k, const int8_t *a, int32_t a_zero,
                 const int8_t *b, int32_t *c)
{
    rt_qgemm_s8_scalar(m, n, k, a, a_zero, b, c);
}

const char *rt_qgemm_path(void)
{
    return "scalar";
}
