/*
 * bench_quant.c - int8 on the cpu, in one run:
 *
 *   (a) the int8 product with int32 sums (runtime/kernels/qgemm.h) on the
 *       MLP's shapes (64x784x512, 64x512x512, 64x512x10), every path this
 *       CPU can run, against cblas_sgemm on the same shapes in f32. One
 *       thread each (OpenBLAS set to one thread; the kernel is serial per
 *       call, callers run chunks of columns on threads): the rows compare
 *       the arithmetic, not the thread counts. Each row names its path;
 *       every path's result is checked against the scalar one.
 *
 * Both sides of a row run alternately (so that they see the same load);
 * figures are medians (CLOCK_MONOTONIC). The header names the host CPU
 * and the path rt_qgemm_s8 takes (AG_QGEMM_PATH forces one).
 */
#define _GNU_SOURCE

#include "bench_util.h"
#include "qgemm.h"
#include <ag.h>

#include <cblas.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Uniform bytes from a fixed seed. */
static void fill_i8(int8_t *v, size_t n, uint32_t seed)
{
    uint32_t s = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        v[i] = (int8_t)(s >> 24);
    }
}

/* ====================================================== (a) the kernel */

typedef struct product {
    int64_t m, n, k;
    rt_qgemm_kind kind;
    int8_t *a, *b;
    int32_t *c;
    float *fa, *fb, *fc;
} product;

static void run_qgemm(void *arg)
{
    product *p = arg;
    rt_qgemm_s8_on(p->kind, p->m, p->n, p->k, p->a, 3, p->b, p->c);
}

static void run_sgemm(void *arg)
{
    product *p = arg;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)p->m, (int)p->n, (int)p->k, 1.0f,
                p->fa, (int)p->k, p->fb, (int)p->n, 0.0f, p->fc, (int)p->n);
}

static void product_alloc(product *p, int64_t m, int64_t n, int64_t k)
{
    *p = (product){.m = m, .n = n, .k = k};
    p->a = malloc((size_t)(m * k));
    p->b = malloc((size_t)(k * n));
    p->c = malloc((size_t)(m * n) * sizeof *p->c);
    p->fa = malloc((size_t)(m * k) * sizeof *p->fa);
    p->fb = malloc((size_t)(k * n) * sizeof *p->fb);
    p->fc = malloc((size_t)(m * n) * sizeof *p->fc);
    fill_i8(p->a, (size_t)(m * k), 1);
    fill_i8(p->b, (size_t)(k * n), 2);
    for (int64_t i = 0; i < m * k; i++)
        p->fa[i] = p->a[i];
    for (int64_t i = 0; i < k * n; i++)
        p->fb[i] = p->b[i];
}

static void product_free(product *p)
{
    free(p->a);
    free(p->b);
    free(p->c);
    free(p->fa);
    free(p->fb);
    free(p->fc);
}

/* Whether kind's product is the scalar path's, bit for bit. */
static bool same_as_scalar(product *p)
{
    int32_t *want = malloc((size_t)(p->m * p->n) * sizeof *want);
    rt_qgemm_s8_scalar(p->m, p->n, p->k, p->a, 3, p->b, want);
    run_qgemm(p);
    bool same = memcmp(want, p->c, (size_t)(p->m * p->n) * sizeof *want) == 0;
    free(want);
    return same;
}

static void bench_shape(int64_t m, int64_t k, int64_t n)
{
    product p;
    product_alloc(&p, m, n, k);
    double ops = 2.0 * (double)m * (double)n * (double)k;
    printf("  %lldx%lldx%lld (m x k x n):\n", (long long)m, (long long)k, (long long)n);
    for (int kind = RT_QGEMM_NUM_KINDS - 1; kind >= RT_QGEMM_SCALAR; kind--) {
        const char *why = rt_qgemm_why_not((rt_qgemm_kind)kind);
        if (why) {
            printf("    %-12s skipped: %s\n", rt_qgemm_kind_name((rt_qgemm_kind)kind), why);
            continue;
        }
        p.kind = (rt_qgemm_kind)kind;
        double tq, ts;
        bench_time_pair(run_qgemm, &p, run_sgemm, &p, kind == RT_QGEMM_SCALAR ? 5 : 41, &tq, &ts);
        printf("    %-12s %9.2f us  sgemm %9.2f us  int8/f32 %5.2fx faster  "
               "%6.1f Gop/s int8, %6.1f GFLOP/s f32  %s\n",
               rt_qgemm_kind_name(p.kind), tq * 1e6, ts * 1e6, ts / tq, ops / tq / 1e9,
               ops / ts / 1e9, same_as_scalar(&p) ? "exact" : "WRONG BITS");
    }
    product_free(&p);
}

static void bench_kernel(void)
{
    printf("(a) the int8 product (int32 sums) against cblas_sgemm, one thread each\n");
    openblas_set_num_threads(1);
    bench_shape(64, 784, 512);
    bench_shape(64, 512, 512);
    bench_shape(64, 512, 10);
}

int main(void)
{
    char cpu[256];
    printf("host CPU: %s (%s); rt_qgemm_s8's path: %s\n\n", bench_cpu_model(cpu, sizeof cpu),
           bench_vector_isa(), rt_qgemm_path());
    bench_kernel();
    printf("\n%d bench_goal(s) missed\n", bench_misses);
    ag_shutdown();
    return 0;
}
