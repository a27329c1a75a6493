/*
 * bench_eager.c - eager-mode speed, each figure against a baseline measured
 * in the same run.
 *
 *   (a) dispatch overhead: the cost of one eager op on a 10x10 f32 tensor,
 *       against plain C doing the same arithmetic on a malloc'ed buffer;
 *   (b) large f32 matmul: ag_matmul against calling cblas_sgemm directly.
 *
 * Every figure is a median over repeated runs (CLOCK_MONOTONIC), so that a
 * few runs disturbed by other processes do not move it. See README.md.
 */
#define _POSIX_C_SOURCE 199309L

#include "bench_util.h"
#include <ag.h>
#include <cblas.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ------------------------------------------------------------- timing */

static const char *verdict(double value, double goal)
{
    return value <= goal ? "PASS" : "MISS";
}

/* Fills x with reproducible values in [-1, 1) (a 64-bit LCG). */
static void fill_pseudo_random(float *x, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 6364136223846793005u + 1442695040888963407u;
        x[i] = (float)((double)(seed >> 40) / (double)(1u << 24) * 2.0 - 1.0);
    }
}

/* ------------------------------------------------ (a) dispatch overhead */

enum { SMALL = 10, OPS_PER_RUN = 1000, DISPATCH_RUNS = 50 };

typedef ag_tensor (*eager_op_fn)(ag_tensor a, ag_tensor b);
typedef void (*plain_op_fn)(const float *a, const float *b, float *out);

static ag_tensor eager_add(ag_tensor a, ag_tensor b) { return ag_add(a, b); }
static ag_tensor eager_mul_number(ag_tensor a, ag_tensor b) { (void)b; return ag_mul(a, 2.5); }
static ag_tensor eager_matmul(ag_tensor a, ag_tensor b) { return ag_matmul(a, b); }

static void plain_add(const float *a, const float *b, float *out)
{
    for (int i = 0; i < SMALL * SMALL; i++)
        out[i] = a[i] + b[i];
}

static void plain_mul_number(const float *a, const float *b, float *out)
{
    (void)b;
    for (int i = 0; i < SMALL * SMALL; i++)
        out[i] = a[i] * 2.5f;
}

static void plain_matmul(const float *a, const float *b, float *out)
{
    for (int i = 0; i < SMALL; i++)
        for (int j = 0; j < SMALL; j++) {
            float acc = 0;
            for (int k = 0; k < SMALL; k++)
                acc += a[i * SMALL + k] * b[k * SMALL + j];
            out[i * SMALL + j] = acc;
        }
}

/* Median ns per eager op: each run makes OPS_PER_RUN results inside a
 * scope and frees them with ag_scope_pop, which is timed too (freeing is
 * part of an eager op's cost). Returns -1 if the op fails. */
static double time_eager(eager_op_fn op, ag_tensor a, ag_tensor b)
{
    double per_op[DISPATCH_RUNS];
    ag_scope_push();
    bool failed = ag_is_error(op(a, b)); /* a probe, and a warm-up */
    ag_scope_pop();
    if (failed)
        return -1;
    for (int r = 0; r < DISPATCH_RUNS; r++) {
        double t0 = bench_now_ns();
        ag_scope_push();
        for (int i = 0; i < OPS_PER_RUN; i++)
            op(a, b);
        ag_scope_pop();
        per_op[r] = (bench_now_ns() - t0) / OPS_PER_RUN;
    }
    return bench_median(per_op, DISPATCH_RUNS);
}

/* The baseline: the same arithmetic in plain C, each result in its own
 * malloc'ed buffer, all freed at the end of the run (as a scope does). */
static double time_plain(plain_op_fn op, const float *a, const float *b)
{
    static float *outs[OPS_PER_RUN];
    double per_op[DISPATCH_RUNS];
    volatile float sink = 0;
    for (int r = 0; r < DISPATCH_RUNS; r++) {
        double t0 = bench_now_ns();
        for (int i = 0; i < OPS_PER_RUN; i++) {
            outs[i] = malloc(SMALL * SMALL * sizeof(float));
            op(a, b, outs[i]);
        }
        for (int i = 0; i < OPS_PER_RUN; i++) {
            sink += outs[i][i % (SMALL * SMALL)]; /* keeps the work observable */
            free(outs[i]);
        }
        per_op[r] = (bench_now_ns() - t0) / OPS_PER_RUN;
    }
    return bench_median(per_op, DISPATCH_RUNS);
}

static void report_dispatch(const char *what, double eager_ns, double plain_ns,
                            double goal_ns)
{
    printf("  %-24s", what);
    if (eager_ns < 0) {
        printf(" %10s %12.1f  failed: %s\n", "-", plain_ns,
               ag_last_error() ? ag_last_error() : "?");
        return;
    }
    printf(" %10.1f %12.1f", eager_ns, plain_ns);
    if (goal_ns > 0)
        printf("   <= %.0f ns   %s\n", goal_ns, verdict(eager_ns, goal_ns));
    else
        printf("   (context)\n");
}

static void bench_dispatch(void)
{
    float a_data[SMALL * SMALL], b_data[SMALL * SMALL];
    fill_pseudo_random(a_data, SMALL * SMALL, 1);
    fill_pseudo_random(b_data, SMALL * SMALL, 2);
    ag_tensor a = ag_from_data(AG_F32, AG_SHAPE(SMALL, SMALL), a_data);
    ag_tensor b = ag_from_data(AG_F32, AG_SHAPE(SMALL, SMALL), b_data);

    printf("(a) eager dispatch overhead, 10x10 f32: ns per op, median of %d runs "
           "of %d ops (scope pop included)\n", DISPATCH_RUNS, OPS_PER_RUN);
    printf("  %-24s %10s %12s   %-11s  %s\n", "op", "eager", "plain C", "goal", "result");
    report_dispatch("ag_add(a, b)", time_eager(eager_add, a, b),
                    time_plain(plain_add, a_data, b_data), 1000);
    report_dispatch("ag_mul(a, 2.5)", time_eager(eager_mul_number, a, b),
                    time_plain(plain_mul_number, a_data, b_data), 0);
    report_dispatch("ag_matmul(a, b)", time_eager(eager_matmul, a, b),
                    time_plain(plain_matmul, a_data, b_data), 0);
    ag_free(a);
    ag_free(b);
}

/* ----------------------------------------------------- (b) large matmul */

enum { BIG = 1024, MATMUL_RUNS = 7 };

static double gflops(double ns)
{
    return 2.0 * BIG * BIG * BIG / ns;
}

/* The largest |x - y| over n elements. */
static double max_abs_diff(const float *x, const float *y, size_t n)
{
    double worst = 0;
    for (size_t i = 0; i < n; i++)
        worst = fmax(worst, fabs((double)x[i] - (double)y[i]));
    return worst;
}

/* One ag_matmul, timed with the scope that frees its result; compares the
 * result with `reference` when given. Returns ns, or -1 on failure. */
static double run_ag_matmul(ag_tensor a, ag_tensor b, const float *reference,
                            double *max_diff)
{
    double t0 = bench_now_ns();
    ag_scope_push();
    ag_tensor c = ag_matmul(a, b);
    bool failed = ag_is_error(c);
    if (!failed && reference)
        *max_diff = max_abs_diff(ag_data(c), reference, (size_t)BIG * BIG);
    ag_scope_pop();
    return failed ? -1 : bench_now_ns() - t0;
}

static double run_cblas(const float *a, const float *b, float *c)
{
    double t0 = bench_now_ns();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, BIG, BIG, BIG, 1.0f, a,
                BIG, b, BIG, 0.0f, c, BIG);
    return bench_now_ns() - t0;
}

static void report_matmul(double ag_ns, double blas_ns, double max_diff)
{
    printf("  %-24s %10.2f ms %8.1f GFLOP/s\n", "cblas_sgemm (baseline)", blas_ns / 1e6,
           gflops(blas_ns));
    if (ag_ns < 0) {
        printf("  %-24s failed: %s\n", "ag_matmul", ag_last_error() ? ag_last_error() : "?");
        return;
    }
    double ratio = ag_ns / blas_ns;
    printf("  %-24s %10.2f ms %8.1f GFLOP/s\n", "ag_matmul", ag_ns / 1e6, gflops(ag_ns));
    printf("  %-24s %10.3fx   goal <= 1.10x   %s\n", "ratio ag / cblas", ratio,
           verdict(ratio, 1.10));
    printf("  %-24s %10.3g\n", "max |ag - cblas|", max_diff);
}

static void bench_matmul(void)
{
    size_t n = (size_t)BIG * BIG;
    float *a_data = malloc(n * sizeof(float));
    float *b_data = malloc(n * sizeof(float));
    float *c_data = malloc(n * sizeof(float));
    if (!a_data || !b_data || !c_data) {
        fprintf(stderr, "bench_eager: out of memory\n");
        exit(1);
    }
    fill_pseudo_random(a_data, n, 3);
    fill_pseudo_random(b_data, n, 4);
    ag_tensor a = ag_from_data(AG_F32, AG_SHAPE(BIG, BIG), a_data);
    ag_tensor b = ag_from_data(AG_F32, AG_SHAPE(BIG, BIG), b_data);

    printf("\n(b) eager f32 matmul %dx%dx%d, median of %d runs each "
           "(interleaved; ag includes allocating and freeing its result)\n",
           BIG, BIG, BIG, MATMUL_RUNS);
    run_cblas(a_data, b_data, c_data); /* warm-up: threads, caches, pages */
    double max_diff = 0;
    bool ok = run_ag_matmul(a, b, c_data, &max_diff) >= 0;
    double ag_ns[MATMUL_RUNS], blas_ns[MATMUL_RUNS];
    for (int r = 0; r < MATMUL_RUNS; r++) {
        blas_ns[r] = run_cblas(a_data, b_data, c_data);
        ag_ns[r] = ok ? run_ag_matmul(a, b, NULL, NULL) : -1;
    }
    report_matmul(ok ? bench_median(ag_ns, MATMUL_RUNS) : -1, bench_median(blas_ns, MATMUL_RUNS),
                  max_diff);
    ag_free(a);
    ag_free(b);
    free(a_data);
    free(b_data);
    free(c_data);
}

int main(void)
{
#if defined(__SANITIZE_ADDRESS__)
    printf("note: built with AddressSanitizer; these figures mean nothing\n");
#endif
    /* A failing op returns an error tensor instead of exiting, so that one
     * missing kernel does not hide the other figures. */
    ag_set_error_mode(AG_ERRORS_RETURN);
    bench_dispatch();
    bench_matmul();
    ag_shutdown();
    return 0;
}
