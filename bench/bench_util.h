/*
 * bench_util.h - what every benchmark of bench/ measures with: a monotonic
 * clock and the median of repeated runs.
 */
#ifndef BENCH_UTIL_H
#define BENCH_UTIL_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline double bench_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline double bench_now_ms(void) { return bench_now_s() * 1e3; }
static inline double bench_now_ns(void) { return bench_now_s() * 1e9; }

static inline int bench_compare_doubles(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

/* Sorts v in place and returns its median. */
static inline double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, bench_compare_doubles);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The widest vector ISA of the host ("AVX-512", "AVX2", "AVX", "SSE"),
 * which every benchmark prints beside the CPU's name. */
static inline const char *bench_vector_isa(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") ? "AVX-512"
           : __builtin_cpu_supports("avx2")  ? "AVX2"
           : __builtin_cpu_supports("avx")   ? "AVX"
                                             : "SSE";
}

/* The CPU's model name ("Intel(R) Xeon(R) ..."), from /proc/cpuinfo where
 * there is one, into buf; "unknown CPU" elsewhere. */
static inline const char *bench_cpu_model(char *buf, size_t n)
{
    snprintf(buf, n, "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return buf;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) != 0 || !colon)
            continue;
        colon += 1 + (colon[1] == ' ');
        colon[strcspn(colon, "\n")] = 0;
        snprintf(buf, n, "%s", colon);
        break;
    }
    fclose(f);
    return buf;
}

/* Medians of `runs` (at most 64) calls each of a(arg_a) and b(arg_b),
 * alternately, so that both see the same load, after one warm-up call
 * each (which traces and compiles). */
static inline void bench_time_pair(void (*a)(void *), void *arg_a, void (*b)(void *),
                                   void *arg_b, int runs, double *ta, double *tb)
{
    double sa[64], sb[64];
    if (runs > 64)
        runs = 64;
    a(arg_a);
    b(arg_b);
    for (int i = 0; i < runs; i++) {
        double t0 = bench_now_s();
        a(arg_a);
        double t1 = bench_now_s();
        b(arg_b);
        sa[i] = t1 - t0;
        sb[i] = bench_now_s() - t1;
    }
    *ta = bench_median(sa, runs);
    *tb = bench_median(sb, runs);
}

/* "  what   12.34 ms" (or us below a millisecond). */
static inline void bench_print_time(const char *what, double s)
{
    if (s < 1e-3)
        printf("  %-44s %10.2f us\n", what, s * 1e6);
    else
        printf("  %-44s %10.2f ms\n", what, s * 1e3);
}

/* Goals: each printed PASS or MISS, the misses counted for the exit
 * status. */
static int bench_misses;

static inline void bench_goal(const char *what, bool met)
{
    printf("  goal: %-50s %s\n", what, met ? "PASS" : "MISS");
    bench_misses += !met;
}

#endif /* BENCH_UTIL_H */
