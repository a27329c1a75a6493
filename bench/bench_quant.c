/*
 * bench_quant.c - int8 on the cpu, in one run:
 *
 *   (a) the int8 product with int32 sums (runtime/kernels/qgemm.h) on the
 *       MLP's shapes (64x784x512, 64x512x512, 64x512x10), every path this
 *       CPU can run, against cblas_sgemm on the same shapes in f32. One
 *       thread each (OpenBLAS set to one thread; the kernel is serial per
 *       call, callers run chunks of columns on threads): the rows compare
 *       the arithmetic, not the thread counts. Each row names its path;
 *       every path's result is checked against the scalar one;
 *   (b) the MLP 784-512-512-10 at batch 64, both compiled on the cpu
 *       target, alternately: int8 static-range arithmetic (quantize the
 *       input, qmatmul + int32 bias, requantize with relu folded into its
 *       range, the logits dequantized, softmax; scales calibrated on the
 *       input itself) against f32 (matmul + bias + relu, softmax). Goal:
 *       >= 2.5x faster on a VNNI path, >= 1.5x on AVX2; the row names the
 *       path, the largest difference of the softmax and the argmax
 *       agreement. The products run on the cpu target's threads, as the
 *       f32 ones on OpenBLAS's (set back to its default).
 *
 * Both sides of a row run alternately (so that they see the same load);
 * figures are medians (CLOCK_MONOTONIC). (b) runs ROUNDS rounds of
 * alternating calls and prints the median round and the range of the
 * rounds' ratios, so that a burst of load on the shared machine shows
 * as a wide range instead of a wrong figure. The header names the host
 * CPU and the path rt_qgemm_s8 takes (AG_QGEMM_PATH forces one).
 *
 * Where the int8 MLP's time went (perf record of `bench_quant mlp`, one
 * thread, AVX-512 VNNI), before the cpu target fused the layers: of the
 * int8 call, ~2/3 requantize (a double product and a libm round() per
 * element), ~1/8 quantize (roundf() per element), ~1/6 the products
 * (kernel and packing), the rest the int32 tensors between the ops; the
 * call took as long as the f32 one. Hence the vector loops of quantize
 * and requantize (runtime/kernels/quant_x86.c) and the layer in one call
 * whose product requantizes its sums in its epilogue
 * (backend/cpu/lower_qlayer.c, docs/quantization.md "int8 layers on the
 * CPU"). After them the products, and the packing of the weights (then
 * parameters, packed at every call: about a third of the products'
 * time), were most of the int8 time; now the weights are constants,
 * packed once when the function is compiled.
 */
#define _GNU_SOURCE

#include "bench_mlp.h"
#include "bench_util.h"
#include "qgemm.h"
#include <ag.h>

#include <cblas.h>
#include <math.h>
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
    openblas_set_num_threads(openblas_get_num_procs());
}

/* ======================================================= (b) the MLP */

/* The f32 MLP is bench_mlp.h's. */
/* The static-range quantization of the MLP (docs/quantization.md): the
 * scales and zero points calibrated on the input, constants of the graph. */
typedef struct srq {
    float s_x, s_w[3], s_h[2]; /* scales: input, weights, hidden activations */
    int32_t z_x, z_h[2];       /* zero points (the hidden ones: relu's 0 is -128) */
} srq;
static srq Q;

static ag_tensor f32_scalar(float v) { return ag_from_data(AG_F32, AG_SCALAR, &v); }
static ag_tensor i32_scalar(int32_t v) { return ag_from_data(AG_I32, AG_SCALAR, &v); }

/* One quantized layer: int8 in, int32 sums plus the int32 bias. */
static ag_tensor qlayer(ag_tensor xq, ag_tensor wq, ag_tensor bias, int32_t z_in)
{
    return ag_add(ag_qmatmul(xq, wq, i32_scalar(z_in)), bias);
}

/* The int8 weights, which the traced function captures as constants. */
static int8_t *Wq[3];
static const int W_SHAPE[3][2] = {{MLP_IN, MLP_H}, {MLP_H, MLP_H}, {MLP_H, MLP_OUT}};

static ag_tensor weight(int layer)
{
    return ag_from_data(AG_I8, AG_SHAPE(W_SHAPE[layer][0], W_SHAPE[layer][1]), Wq[layer]);
}

/*   AG_FUNCTION ag_tensor mlp_int8(ag_tensor x, ag_tensor w1, ag_tensor b1, ...) {
 *       xq = quantize(x); h1 = requantize(qmatmul(xq, W1) + b1) with relu folded
 *       into its range; h2 likewise; the logits dequantized; softmax
 *   }
 * W1..W3 are constants (the parameters w1..w3 are not read: the
 * alternation calls both functions alike).                             */
static void mlp_int8_trace(const ag_arg *a, ag_tensor *o)
{
    ag_tensor xq = ag_quantize(a[0].tensor, f32_scalar(Q.s_x), i32_scalar(Q.z_x));
    ag_tensor h1 = ag_requantize(qlayer(xq, weight(0), a[2].tensor, Q.z_x),
                                 f32_scalar(Q.s_x * Q.s_w[0] / Q.s_h[0]), i32_scalar(Q.z_h[0]),
                                 Q.z_h[0], 127);
    ag_tensor h2 = ag_requantize(qlayer(h1, weight(1), a[4].tensor, Q.z_h[0]),
                                 f32_scalar(Q.s_h[0] * Q.s_w[1] / Q.s_h[1]),
                                 i32_scalar(Q.z_h[1]), Q.z_h[1], 127);
    ag_tensor logits = ag_dequantize(qlayer(h2, weight(2), a[6].tensor, Q.z_h[1]),
                                     f32_scalar(Q.s_h[1] * Q.s_w[2]), i32_scalar(0));
    o[0] = ag_softmax(logits, -1);
}
DESC(mlp_int8, 7, N_MLP, K_T7, 1, mlp_int8_trace);

/* A called function and its tensor arguments. */
typedef struct call {
    const ag_function_desc *fn;
    ag_tensor args[7];
    float *keep; /* the result, when not NULL */
} call;

static void run_call(void *arg)
{
    call *c = arg;
    ag_arg a[7];
    for (int i = 0; i < 7; i++)
        a[i] = (ag_arg){.kind = AG_ARG_TENSOR, .tensor = c->args[i]};
    ag_tensor o[1];
    ag_function_call_at(AG_HERE, c->fn, a, o);
    if (c->keep)
        memcpy(c->keep, ag_data(o[0]), MLP_B * MLP_OUT * sizeof(float));
    ag_free(o[0]);
}

/* Uniform in [-scale, scale), from a fixed seed. */
static void fill_uniform(float *v, size_t n, uint32_t seed, float scale)
{
    uint32_t s = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        v[i] = ((float)(s >> 8) / (float)(1u << 24) * 2 - 1) * scale;
    }
}

static float max_abs(const float *v, size_t n)
{
    float m = 0;
    for (size_t i = 0; i < n; i++)
        m = fmaxf(m, fabsf(v[i]));
    return m;
}

/* relu(x w + b) in f32 ([rows, n]), for calibration. */
static void dense_relu(const float *x, const float *w, const float *b, float *y, int rows, int k,
                       int n)
{
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, n, k, 1.0f, x, k, w, n, 0.0f, y,
                n);
    for (int i = 0; i < rows * n; i++)
        y[i] = fmaxf(y[i] + b[i % n], 0.0f);
}

/* Symmetric int8 weights (scale absmax / 127) into *q (malloc'ed: the
 * traced function reads them) and as a tensor, and the int32 bias at
 * scale s_in * s_w. */
static void quantize_layer(const float *w, const float *b, int k, int n, float s_in, float *s_w,
                           int8_t **q, ag_tensor *wq, ag_tensor *bq)
{
    *s_w = max_abs(w, (size_t)k * n) / 127;
    *q = malloc((size_t)k * n);
    int32_t *bi = malloc((size_t)n * sizeof *bi);
    for (int i = 0; i < k * n; i++)
        (*q)[i] = (int8_t)lrintf(fminf(fmaxf(w[i] / *s_w, -127), 127));
    for (int j = 0; j < n; j++)
        bi[j] = (int32_t)lrintf(b[j] / (s_in * *s_w));
    *wq = ag_keep(ag_from_data(AG_I8, AG_SHAPE(k, n), *q));
    *bq = ag_keep(ag_from_data(AG_I32, AG_SHAPE(n), bi));
    free(bi);
}

/* Calibrates Q on x and quantizes the weights into c's arguments. */
static void calibrate(float **p, call *c)
{
    float *h1 = malloc((size_t)MLP_B * MLP_H * sizeof *h1), *h2 = malloc((size_t)MLP_B * MLP_H * sizeof *h2);
    dense_relu(p[0], p[1], p[2], h1, MLP_B, MLP_IN, MLP_H);
    dense_relu(h1, p[3], p[4], h2, MLP_B, MLP_H, MLP_H);
    float ax = max_abs(p[0], (size_t)MLP_B * MLP_IN);
    Q.s_x = 2 * ax / 255; /* the input's range [-ax, ax] */
    Q.z_x = 0;
    Q.s_h[0] = max_abs(h1, (size_t)MLP_B * MLP_H) / 255; /* [0, max]: zero point -128 */
    Q.s_h[1] = max_abs(h2, (size_t)MLP_B * MLP_H) / 255;
    Q.z_h[0] = Q.z_h[1] = -128;
    c->args[0] = ag_keep(ag_from_data(AG_F32, AG_SHAPE(MLP_B, MLP_IN), p[0]));
    quantize_layer(p[1], p[2], MLP_IN, MLP_H, Q.s_x, &Q.s_w[0], &Wq[0], &c->args[1], &c->args[2]);
    quantize_layer(p[3], p[4], MLP_H, MLP_H, Q.s_h[0], &Q.s_w[1], &Wq[1], &c->args[3],
                   &c->args[4]);
    quantize_layer(p[5], p[6], MLP_H, MLP_OUT, Q.s_h[1], &Q.s_w[2], &Wq[2], &c->args[5],
                   &c->args[6]);
    free(h1);
    free(h2);
}

static int argmax_agreement(const float *a, const float *b)
{
    int same = 0;
    for (int i = 0; i < MLP_B; i++) {
        int ia = 0, ib = 0;
        for (int j = 1; j < MLP_OUT; j++) {
            ia = a[i * MLP_OUT + j] > a[i * MLP_OUT + ia] ? j : ia;
            ib = b[i * MLP_OUT + j] > b[i * MLP_OUT + ib] ? j : ib;
        }
        same += ia == ib;
    }
    return same;
}

enum { ROUNDS = 7 }; /* odd: the median is one round's */

/* ROUNDS rounds of 61 alternating calls of each: the round whose ratio
 * is the median gives the times; lo and hi are the extreme ratios. */
static void time_rounds(call *f32, call *i8, double *t32, double *t8, double *lo, double *hi)
{
    double a[ROUNDS], b[ROUNDS], ratio[ROUNDS], sorted[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        bench_time_pair(run_call, f32, run_call, i8, 61, &a[r], &b[r]);
        ratio[r] = sorted[r] = a[r] / b[r];
    }
    double mid = bench_median(sorted, ROUNDS); /* one of the ratios: ROUNDS is odd */
    int at = 0;
    *lo = *hi = ratio[0];
    for (int r = 0; r < ROUNDS; r++) {
        *lo = fmin(*lo, ratio[r]);
        *hi = fmax(*hi, ratio[r]);
        at = ratio[r] == mid ? r : at;
    }
    *t32 = a[at];
    *t8 = b[at];
}

static void bench_mlp(void)
{
    printf("\n(b) MLP forward, batch %d, %d-%d-%d-%d, both compiled (cpu target): int8 "
           "(static range: quantize, qmatmul + int32 bias, requantize with relu folded, "
           "dequantized logits) against f32 (matmul + bias + relu)\n",
           MLP_B, MLP_IN, MLP_H, MLP_H, MLP_OUT);
    static const int sizes[7] = {MLP_B * MLP_IN, MLP_IN * MLP_H, MLP_H, MLP_H * MLP_H,
                                 MLP_H, MLP_H * MLP_OUT, MLP_OUT};
    static const float scales[7] = {1.0f, 0.0625f, 0.1f, 0.075f, 0.1f, 0.075f, 0.1f};
    static const ag_shape shapes[7] = {AG_SHAPE(MLP_B, MLP_IN), AG_SHAPE(MLP_IN, MLP_H),
                                       AG_SHAPE(MLP_H),         AG_SHAPE(MLP_H, MLP_H),
                                       AG_SHAPE(MLP_H),         AG_SHAPE(MLP_H, MLP_OUT),
                                       AG_SHAPE(MLP_OUT)};
    float *p[7];
    static float out32[MLP_B * MLP_OUT], out8[MLP_B * MLP_OUT];
    call f32 = {.fn = &mlp_desc, .keep = out32}, i8 = {.fn = &mlp_int8_desc, .keep = out8};
    for (int i = 0; i < 7; i++) {
        p[i] = malloc((size_t)sizes[i] * sizeof(float));
        fill_uniform(p[i], (size_t)sizes[i], 1000u * (uint32_t)i + 1, scales[i]);
        f32.args[i] = ag_keep(ag_from_data(AG_F32, shapes[i], p[i]));
    }
    calibrate(p, &i8);
    double t32, t8, lo, hi;
    time_rounds(&f32, &i8, &t32, &t8, &lo, &hi);
    double diff = 0;
    for (int i = 0; i < MLP_B * MLP_OUT; i++)
        diff = fmax(diff, fabs((double)out32[i] - out8[i]));
    const char *path = rt_qgemm_path();
    bench_print_time("f32 compiled (sgemm)", t32);
    char what[64];
    snprintf(what, sizeof what, "int8 compiled (qgemm path %s)", path);
    /* (the weights are constants: packed once, when compiling) */
    bench_print_time(what, t8);
    printf("  int8 vs f32: %.2fx faster (the %d rounds: %.2fx to %.2fx); max |f32 - int8| of "
           "the softmax %.4f, argmax agrees on %d of %d rows\n", t32 / t8, ROUNDS, lo, hi, diff,
           argmax_agreement(out32, out8), MLP_B);
    bool vnni = strstr(path, "vnni") != NULL;
    if (vnni)
        bench_goal("int8 >= 2.5x faster than f32 (a VNNI path)", t32 / t8 >= 2.5);
    else
        bench_goal("int8 >= 1.5x faster than f32 (AVX2 or scalar)", t32 / t8 >= 1.5);
    for (int i = 0; i < 7; i++) {
        free(p[i]);
        ag_free(f32.args[i]);
        ag_free(i8.args[i]);
    }
    for (int l = 0; l < 3; l++)
        free(Wq[l]);
}

/* `bench_quant mlp` runs (b) alone (for perf record on the MLP). */
int main(int argc, char **argv)
{
    char cpu[256];
    printf("host CPU: %s (%s); rt_qgemm_s8's path: %s\n\n", bench_cpu_model(cpu, sizeof cpu),
           bench_vector_isa(), rt_qgemm_path());
    if (!(argc > 1 && strcmp(argv[1], "mlp") == 0))
        bench_kernel();
    bench_mlp();
    printf("\n%d bench_goal(s) missed\n", bench_misses);
    ag_shutdown();
    return 0;
}
