/*
 * bench_first_call.c - issue 12's first-call latency: an AG_FUNCTION that
 * unrolls n steps of
 *
 *     x = ag_softmax(ag_add(ag_transpose(x, 1, 0), (float)i), 0)
 *
 * on an 8x8 f32 (about 3n nodes; n = 1,600 unless argv[1] says), called
 * for the first time
 *
 *   - on the reference executor (ag_set_target("reference")): no compile;
 *   - on the cpu target with ag_set_jit_policy(AG_JIT_ASYNC): the call
 *     runs on the reference executor while LLVM compiles in the
 *     background (goal: at most 3x the reference's first call);
 *
 * then the background compile's time (ag_jit_wait), and the steady-state
 * call time of the compiled code against the reference executor's (JIT
 * speed). Each side traces its own copy of the function, so that the
 * first call of each really is one. Every result is checked against the
 * reference's, bit for bit.
 */
#define _GNU_SOURCE

#include "bench_util.h"
#include <ag.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { SIDE = 8, DEFAULT_STEPS = 1600, RUNS = 31 };

/*   AG_FUNCTION ag_tensor chain(ag_tensor x, int n) {
 *       for (int i = 0; i < n; i++)
 *           x = ag_softmax(ag_add(ag_transpose(x, 1, 0), (float)i), 0);
 *       return x;
 *   }                            (a C loop: unrolled while tracing) */
static void chain_trace(const ag_arg *a, ag_tensor *o)
{
    ag_tensor x = a[0].tensor;
    for (int i = 0; i < (int)a[1].i; i++)
        x = ag_softmax(ag_add(ag_transpose(x, 1, 0), (float)i), 0);
    o[0] = x;
}

static const ag_arg_kind KINDS[] = {AG_ARG_TENSOR, AG_ARG_INT};
static const char *const NAMES[] = {"x", "n"};
#define CHAIN(fname)                                                                      \
    static const ag_function_desc fname = {#fname, __FILE__, __LINE__, 2, NAMES, KINDS,   \
                                           NULL, NULL, 1, chain_trace, 0}
CHAIN(chain_reference);
CHAIN(chain_async);

static ag_tensor call(const ag_function_desc *d, ag_tensor x, int n)
{
    ag_arg a[2] = {{.kind = AG_ARG_TENSOR, .tensor = x}, {.kind = AG_ARG_INT, .i = n}};
    ag_tensor o[1];
    ag_function_call_at(AG_HERE, d, a, o);
    return o[0];
}

static double time_call(const ag_function_desc *d, ag_tensor x, int n, ag_tensor *out)
{
    double t0 = bench_now_s();
    *out = call(d, x, n);
    return bench_now_s() - t0;
}

static double steady(const ag_function_desc *d, ag_tensor x, int n)
{
    double t[RUNS];
    for (int i = 0; i < RUNS; i++) {
        ag_tensor y;
        t[i] = time_call(d, x, n, &y);
        ag_free(y);
    }
    return bench_median(t, RUNS);
}

static bool same_bits(ag_tensor a, ag_tensor b)
{
    return memcmp(ag_data(a), ag_data(b), SIDE * SIDE * sizeof(float)) == 0;
}

static void print_ms(const char *what, double s) { printf("  %-52s %10.3f ms\n", what, s * 1e3); }

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : DEFAULT_STEPS;
    float data[SIDE * SIDE];
    for (int i = 0; i < SIDE * SIDE; i++)
        data[i] = (float)((i * 37) % 17) / 8.0f;
    ag_tensor x = ag_from_data(AG_F32, AG_SHAPE(SIDE, SIDE), data);

    printf("first call of a %d-step softmax chain on f32[8,8] (about %d nodes)\n", n, 3 * n);
    ag_tensor ref, first, later;
    ag_set_target("reference");
    double t_ref = time_call(&chain_reference, x, n, &ref);
    print_ms("reference executor, first call", t_ref);

    ag_set_target("cpu");
    ag_set_jit_policy(AG_JIT_ASYNC);
    double t_async = time_call(&chain_async, x, n, &first);
    print_ms("cpu, AG_JIT=async, first call", t_async);
    double t0 = bench_now_s();
    ag_jit_wait();
    print_ms("compiled code ready (from the first call, ag_jit_wait)", bench_now_s() - t0 + t_async);
    printf("  ratio async first call / reference first call: %.2fx (goal <= 3x: %s)\n",
           t_async / t_ref, t_async <= 3 * t_ref ? "PASS" : "MISS");

    double s_ref = steady(&chain_reference, x, n);
    double s_jit = steady(&chain_async, x, n);
    print_ms("steady state, reference executor (median)", s_ref);
    print_ms("steady state, cpu compiled code (median)", s_jit);
    printf("  ratio reference / compiled: %.2fx faster once compiled\n", s_ref / s_jit);

    time_call(&chain_async, x, n, &later);
    bool same = same_bits(ref, first) && same_bits(ref, later);
    printf("  results identical (reference, async first call, compiled call): %s\n",
           same ? "yes" : "NO");
    ag_shutdown();
    return same && t_async <= 3 * t_ref ? 0 : 1;
}
