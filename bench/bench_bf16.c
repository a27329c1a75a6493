/*
 * bench_bf16.c - bf16 on the cpu target against f32, in one run:
 *
 *   (a) tanh(x*a + b)*c + x on 16M elements, bf16 against f32 (half the
 *       bytes to read and write): the f32 function converted by the bf16
 *       pass with bf16 inputs and outputs (AG_BFLOAT16, io), whose chain
 *       loads bf16, computes in f32 and rounds once on the store: goal
 *       >= 1.6x faster; for context, the chain written on bf16 tensors,
 *       which rounds after every op to give eager bf16 code's bits, and
 *       the chain without tanh. Both bf16 chains have one tensor operand,
 *       bf16, so they run by table lookup (docs/runtime.md): the loop is
 *       computed for the 65,536 bf16 values, and each element gathered
 *       from that table, instead of tanh's arithmetic (about 32 vector
 *       operations and a vdivps per 16 lanes) per element. The same two
 *       loops on 512K elements in the cache (too few to look up) show the
 *       arithmetic alone;
 *   (b) an MLP forward pass (batch 64, 784-512-512-10, relu, softmax) with
 *       bf16 inputs and weights against f32: goal no slower, and >= 1.3x
 *       faster on a host with AVX512_BF16 (its vdpbf16ps products, or
 *       AMX tiles where the process may use them). The row names the path
 *       that ran; with AMX, the dot-product path (AG_NO_AMX=1) runs too.
 *       On such a host the bf16 MLP also runs compiled for an AVX2 CPU
 *       (AG_CPU=znver3: the converting path and the runtime's kernel),
 *       and the core's vdpbf16ps and f32 FMA rates are measured (the
 *       dot-product path's ceiling against f32), for context; and with
 *       AMX, the MLP with its weights captured as constants of the graph,
 *       whose tiles' layout of b is packed once, when compiled.
 *
 * The bf16 pass's own time per node is row (c) of bench_passes.
 * Both sides of a row run alternately (so that they see the same load);
 * figures are medians (CLOCK_MONOTONIC). The header names the host CPU.
 */
#define _GNU_SOURCE

#include "bench_mlp.h"
#include "bench_util.h"
#include "bf16mm_amx.h"
#include "config.h"
#include <ag.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif
#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- timing */

static bool host_has_bf16(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512bf16");
}

static ag_arg targ(ag_tensor t)
{
    ag_arg a = {.kind = AG_ARG_TENSOR, .tensor = t};
    return a;
}

/* A tensor of dtype dt (f32 or bf16) from n f32 values. */
static ag_tensor tensor_of(ag_dtype dt, ag_shape s, const float *v, size_t n)
{
    if (dt == AG_F32)
        return ag_from_data(AG_F32, s, v);
    uint16_t *b = malloc(n * sizeof *b);
    for (size_t i = 0; i < n; i++)
        b[i] = ag_f32_to_bf16(v[i]);
    ag_tensor t = ag_from_data(AG_BF16, s, b);
    free(b);
    return t;
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

/* A called function and its tensor arguments. */
typedef struct call {
    const ag_function_desc *fn;
    int n;
    ag_tensor args[8];
    float *keep; /* the first result as f32, when not NULL (numel floats) */
    size_t numel;
} call;

static void run_call(void *arg)
{
    call *c = arg;
    ag_arg a[8];
    for (int i = 0; i < c->n; i++)
        a[i] = targ(c->args[i]);
    ag_tensor o[1];
    ag_function_call_at(AG_HERE, c->fn, a, o);
    if (c->keep) {
        ag_tensor f = ag_cast(o[0], AG_F32);
        memcpy(c->keep, ag_data(f), c->numel * sizeof(float));
        ag_free(f);
    }
    ag_free(o[0]);
}

/* ========================================================= (a) tanh chain */

enum { CHAIN_N = 16 << 20 };

static const ag_arg_kind K_TTTT[] = {AG_ARG_TENSOR, AG_ARG_TENSOR, AG_ARG_TENSOR,
                                     AG_ARG_TENSOR};
static const char *const N_XABC[] = {"x", "a", "b", "c"};

/*   AG_FUNCTION ag_tensor chain(ag_tensor x, ag_tensor a, ag_tensor b, ag_tensor c) {
 *       return ag_add(ag_mul(ag_tanh(ag_add(ag_mul(x, a), b)), c), x);
 *   }                                                                  */
static void chain_trace(const ag_arg *a, ag_tensor *o)
{
    ag_tensor x = a[0].tensor;
    o[0] = ag_add(ag_mul(ag_tanh(ag_add(ag_mul(x, a[1].tensor), a[2].tensor)), a[3].tensor), x);
}
DESC(chain, 4, N_XABC, K_TTTT, 1, chain_trace);
/* The same f32 function with AG_BFLOAT16: the bf16 pass converts it. */
static const ag_function_desc chain_pass_desc = {
    "chain_pass", __FILE__, __LINE__, 4, N_XABC, K_TTTT, NULL, NULL, 1, chain_trace,
    AG_FN_BFLOAT16};

/* The chain without tanh, (x*a + b)*c + x: so few operations per byte
 * that memory bounds it, for context (how much the bytes alone give). */
static void affine_trace(const ag_arg *a, ag_tensor *o)
{
    ag_tensor x = a[0].tensor;
    o[0] = ag_add(ag_mul(ag_add(ag_mul(x, a[1].tensor), a[2].tensor), a[3].tensor), x);
}
DESC(affine, 4, N_XABC, K_TTTT, 1, affine_trace);
static const ag_function_desc affine_pass_desc = {
    "affine_pass", __FILE__, __LINE__, 4, N_XABC, K_TTTT, NULL, NULL, 1, affine_trace,
    AG_FN_BFLOAT16};

/* The same loops on CACHE_N elements, which the two cores' caches hold
 * (2 MB of f32 in and out per core): their time is the arithmetic alone. */
enum { CACHE_N = 1 << 19 };

static void chain_args(call *c, const ag_function_desc *fn, ag_dtype dt, const float *x,
                       int64_t n)
{
    static const float abc[3] = {0.5f, 0.25f, 2.0f};
    c->fn = fn;
    c->n = 4;
    c->args[0] = ag_keep(tensor_of(dt, AG_SHAPE(n), x, (size_t)n));
    for (int i = 0; i < 3; i++)
        c->args[1 + i] = ag_keep(tensor_of(dt, AG_SCALAR, &abc[i], 1));
}

static void bench_chain(void)
{
    printf("(a) tanh(x*a + b)*c + x on %d elements (%d MB f32, %d MB bf16 in)\n", CHAIN_N,
           CHAIN_N * 4 >> 20, CHAIN_N * 2 >> 20);
    float *x = malloc((size_t)CHAIN_N * sizeof *x);
    fill_uniform(x, CHAIN_N, 7, 3.0f);
    call f32 = {0}, pass = {0}, user = {0}, aff32 = {0}, affpass = {0}, c32 = {0}, cpass = {0};
    chain_args(&f32, &chain_desc, AG_F32, x, CHAIN_N);
    chain_args(&pass, &chain_pass_desc, AG_BF16, x, CHAIN_N);
    chain_args(&user, &chain_desc, AG_BF16, x, CHAIN_N);
    chain_args(&aff32, &affine_desc, AG_F32, x, CHAIN_N);
    chain_args(&affpass, &affine_pass_desc, AG_BF16, x, CHAIN_N);
    chain_args(&c32, &chain_desc, AG_F32, x, CACHE_N);
    chain_args(&cpass, &chain_pass_desc, AG_BF16, x, CACHE_N);
    free(x);
    /* io: the converted functions take and give bf16 tensors; the
     * options are read when they are traced, at their first call */
    ag_bf16_options io = {.io = true};
    ag_set_bf16_options(&io);
    run_call(&pass);
    run_call(&affpass);
    run_call(&cpass);
    ag_set_bf16_options(NULL);
    double t32, tpass, t32b, tuser, ta32, tapass;
    bench_time_pair(run_call, &f32, run_call, &pass, 21, &t32, &tpass);
    bench_time_pair(run_call, &f32, run_call, &user, 11, &t32b, &tuser);
    bench_time_pair(run_call, &aff32, run_call, &affpass, 11, &ta32, &tapass);
    bench_print_time("f32 compiled", t32);
    bench_print_time("bf16 pass: f32 ops, bf16 loads and stores", tpass);
    printf("  bf16 pass vs f32: %.2fx faster\n", t32 / tpass);
    bench_goal("bf16 >= 1.6x faster than f32", t32 / tpass >= 1.6);
    bench_print_time("(context) bf16 tensors, rounded per op", tuser);
    printf("  (context) user bf16 vs f32: %.2fx (eager bf16's bits: a rounding per op)\n",
           t32b / tuser);
    /* the same loop without tanh: what halving the bytes gives a loop
     * that computes (it is cheap, so it is not looked up) */
    bench_print_time("(context) without tanh: f32", ta32);
    bench_print_time("(context) without tanh: bf16 pass", tapass);
    printf("  (context) without tanh, bf16 pass vs f32: %.2fx; with tanh the f32 loop takes "
           "%.2fx the time of the one without\n", ta32 / tapass, t32 / ta32);
    /* the same loops on data in the cache, too short to be looked up: the
     * arithmetic alone, which halving the bytes does not shrink (the bf16
     * loop adds its widening and rounding to it) */
    double tc32, tcpass;
    bench_time_pair(run_call, &c32, run_call, &cpass, 63, &tc32, &tcpass);
    bench_print_time("(context) 512K in the cache: f32", tc32);
    bench_print_time("(context) 512K in the cache: bf16 pass", tcpass);
    printf("  (context) in the cache, where only the arithmetic (and a call's overhead) counts: "
           "bf16 pass / f32 %.2f\n", tcpass / tc32);
}

/* ================================================================ (b) MLP */

/* The MLP of bench_mlp.h, traced while AG_CPU names an AVX2 CPU. */
DESC(mlp_avx2, 7, N_MLP, K_T7, 1, mlp_trace);

/* The same with the weights captured (globals read while tracing):
 * constants of the graph, as in a model that serves, whose products on
 * AMX read b packed once, when the code was compiled. */
static ag_tensor mlp_weights[6];
static void mlp_const_trace(const ag_arg *a, ag_tensor *o)
{
    const ag_tensor *w = mlp_weights;
    ag_tensor h1 = ag_relu(ag_add(ag_matmul(a[0].tensor, w[0]), w[1]));
    ag_tensor h2 = ag_relu(ag_add(ag_matmul(h1, w[2]), w[3]));
    o[0] = ag_softmax(ag_add(ag_matmul(h2, w[4]), w[5]), -1);
}
DESC(mlp_const, 1, N_MLP, K_T7, 1, mlp_const_trace);

static void mlp_args(call *c, const ag_function_desc *fn, ag_dtype dt, float **params,
                     float *keep)
{
    static const ag_shape shapes[7] = {AG_SHAPE(MLP_B, MLP_IN), AG_SHAPE(MLP_IN, MLP_H),
                                       AG_SHAPE(MLP_H),         AG_SHAPE(MLP_H, MLP_H),
                                       AG_SHAPE(MLP_H),         AG_SHAPE(MLP_H, MLP_OUT),
                                       AG_SHAPE(MLP_OUT)};
    c->fn = fn;
    c->n = 7;
    c->keep = keep;
    c->numel = MLP_B * MLP_OUT;
    for (int i = 0; i < 7; i++) {
        size_t n = 1;
        for (int d = 0; d < shapes[i].rank; d++)
            n *= (size_t)shapes[i].dims[d];
        c->args[i] = ag_keep(tensor_of(dt, shapes[i], params[i], n));
    }
}

#if defined(__x86_64__)
/* Multiply-adds per ns of one core's vdpbf16ps (32 a vector) and of its
 * f32 FMA (16 a vector), each over 12 independent accumulators held in
 * registers: the ceiling of the dot-product path against f32's, whatever
 * the kernel. */
enum { RATE_ITERS = 2000000 };
#define RATE_ACCS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#define RATE_DECL(i) __m512 acc##i = _mm512_set1_ps((float)(i));
#define RATE_KEEP(i) __asm__ volatile("" : "+v"(acc##i));
#define RATE_SUM(i) +_mm512_reduce_add_ps(acc##i)
/* The sums, so that the loops are not dropped. */
static volatile float rate_sink;

__attribute__((target("avx512f,avx512bf16"))) static double dpbf16_rate(void)
{
    RATE_ACCS(RATE_DECL)
    __m512bh a = (__m512bh)_mm512_set1_epi32(0x3f803f80);
    __m512bh b = (__m512bh)_mm512_set1_epi32(0x3a803a80);
    double t0 = bench_now_s();
    for (int it = 0; it < RATE_ITERS; it++) {
#define RATE_DP(i) acc##i = _mm512_dpbf16_ps(acc##i, a, b);
        RATE_ACCS(RATE_DP)
        RATE_ACCS(RATE_KEEP)
    }
    double t = bench_now_s() - t0;
    rate_sink = 0 RATE_ACCS(RATE_SUM);
    return (double)RATE_ITERS * 12 * 32 / t / 1e9;
}

__attribute__((target("avx512f,fma"))) static double fma_rate(void)
{
    RATE_ACCS(RATE_DECL)
    __m512 x = _mm512_set1_ps(0.999f), y = _mm512_set1_ps(0.001f);
    double t0 = bench_now_s();
    for (int it = 0; it < RATE_ITERS; it++) {
#define RATE_FMA(i) acc##i = _mm512_fmadd_ps(acc##i, x, y);
        RATE_ACCS(RATE_FMA)
        RATE_ACCS(RATE_KEEP)
    }
    double t = bench_now_s() - t0;
    rate_sink = 0 RATE_ACCS(RATE_SUM);
    return (double)RATE_ITERS * 12 * 16 / t / 1e9;
}

/* The best of 9 runs of each, alternately (the machine may be shared). */
static void print_instruction_rates(void)
{
    double dp = 0, fma = 0;
    for (int i = 0; i < 9; i++) {
        dp = fmax(dp, dpbf16_rate());
        fma = fmax(fma, fma_rate());
    }
    printf("  (context) one core's peak multiply-adds/ns: vdpbf16ps %.1f, f32 FMA %.1f "
           "(the dot-product path's peak is %.2fx f32's)\n", dp, fma, dp / fma);
}
#else
static void print_instruction_rates(void) {}
#endif

/* A call with AG_NO_AMX=1, so that its products take the dot-product
 * path (the switch is read at each product). */
static void run_call_no_amx(void *arg)
{
    setenv("AG_NO_AMX", "1", 1);
    rt_config_reload_env();
    run_call(arg);
    unsetenv("AG_NO_AMX");
    rt_config_reload_env();
}

/* On an AMX host: the same bf16 MLP on the dot-product path, against f32. */
static void print_dot_path(call *f32, call *bf16, double flops)
{
    double t32, tdot;
    bench_time_pair(run_call, f32, run_call_no_amx, bf16, 21, &t32, &tdot);
    bench_print_time("bf16 compiled, AG_NO_AMX=1 (vdpbf16ps)", tdot);
    printf("  (context) dot-product path vs f32: %.2fx faster; %.1f GFLOP/s\n", t32 / tdot,
           flops / tdot / 1e9);
}

/* On an AMX host: the bf16 MLP with its weights constants of the graph
 * (packed for the tiles when compiled) against weights passed in. */
static void print_constant_weights(call *bf16, double flops)
{
    static float with_args[MLP_B * MLP_OUT], with_consts[MLP_B * MLP_OUT];
    call c = {.fn = &mlp_const_desc, .n = 1, .args = {bf16->args[0]}, .keep = with_consts,
              .numel = MLP_B * MLP_OUT};
    for (int i = 0; i < 6; i++)
        mlp_weights[i] = bf16->args[1 + i];
    bf16->keep = with_args;
    run_call(bf16);
    run_call(&c);
    bf16->keep = c.keep = NULL;
    bool same = memcmp(with_args, with_consts, sizeof with_args) == 0;
    double targs, tconst;
    bench_time_pair(run_call, bf16, run_call, &c, 61, &targs, &tconst);
    bench_print_time("bf16 compiled, weights constants of the graph", tconst);
    printf("  (context) weights as constants vs passed in: %.2fx faster (AMX panels of b "
           "packed once, when compiled); %.1f GFLOP/s; same bits: %s\n", targs / tconst,
           flops / tconst / 1e9, same ? "yes" : "NO");
}

static void bench_mlp(void)
{
    printf("\n(b) MLP forward, batch %d, %d-%d-%d-%d: matmul + bias + relu (x2), "
           "matmul + bias + softmax\n", MLP_B, MLP_IN, MLP_H, MLP_H, MLP_OUT);
    static const size_t sizes[7] = {MLP_B * MLP_IN, MLP_IN * MLP_H, MLP_H, MLP_H * MLP_H,
                                    MLP_H, MLP_H * MLP_OUT, MLP_OUT};
    static const float scales[7] = {1.0f, 0.0625f, 0.1f, 0.075f, 0.1f, 0.075f, 0.1f};
    float *params[7];
    for (int i = 0; i < 7; i++) {
        params[i] = malloc(sizes[i] * sizeof(float));
        fill_uniform(params[i], sizes[i], 1000u * (uint32_t)i + 1, scales[i]);
    }
    static float out32[MLP_B * MLP_OUT], out16[MLP_B * MLP_OUT];
    call f32 = {0}, bf16 = {0};
    mlp_args(&f32, &mlp_desc, AG_F32, params, out32);
    mlp_args(&bf16, &mlp_desc, AG_BF16, params, out16);
    double t32, t16;
    bench_time_pair(run_call, &f32, run_call, &bf16, 61, &t32, &t16);
    f32.keep = bf16.keep = NULL;
    double diff = 0;
    for (int i = 0; i < MLP_B * MLP_OUT; i++)
        diff = fmax(diff, fabs((double)out32[i] - out16[i]));
    double flops = 2.0 * MLP_B * ((double)MLP_IN * MLP_H + (double)MLP_H * MLP_H +
                                  (double)MLP_H * MLP_OUT);
    bool dot = host_has_bf16(), amx = dot && rt_bf16mm_amx_usable();
    bench_print_time("f32 compiled (sgemm)", t32);
    bench_print_time(amx   ? "bf16 compiled (AMX tiles)"
                     : dot ? "bf16 compiled (vdpbf16ps)"
                           : "bf16 compiled (converting)",
                     t16);
    printf("  bf16 vs f32: %.2fx faster; %.1f GFLOP/s f32, %.1f bf16; "
           "max |f32 - bf16| of the softmax %.4f\n",
           t32 / t16, flops / t32 / 1e9, flops / t16 / 1e9, diff);
    bench_goal("bf16 no slower than f32", t16 <= t32);
    if (dot && !amx)
        printf("  (context) no AMX: %s\n", rt_bf16mm_amx_why_not());
    if (amx) {
        print_dot_path(&f32, &bf16, flops);
        print_constant_weights(&bf16, flops);
    }
    if (dot) {
        bench_goal("bf16 >= 1.3x faster than f32 (AVX512_BF16 host)", t32 / t16 >= 1.3);
        setenv("AG_CPU", "znver3", 1); /* read when mlp_avx2 is traced */
        rt_config_reload_env();
        call avx2 = {0};
        mlp_args(&avx2, &mlp_avx2_desc, AG_BF16, params, NULL);
        double t2, t16b;
        bench_time_pair(run_call, &avx2, run_call, &bf16, 21, &t2, &t16b);
        unsetenv("AG_CPU");
        rt_config_reload_env();
        bench_print_time("bf16 compiled for znver3 (no AVX512_BF16)", t2);
        printf("  (context) converting path / %s path: %.2fx\n", amx ? "AMX" : "dot-product",
               t2 / t16b);
        print_instruction_rates();
    }
    for (int i = 0; i < 7; i++)
        free(params[i]);
}

int main(void)
{
    char *cpu = LLVMGetHostCPUName();
    printf("host CPU: %s (LLVM's name; the JIT compiles for it), AVX512_BF16: %s\n\n", cpu,
           host_has_bf16() ? "yes" : "no");
    LLVMDisposeMessage(cpu);
    bench_chain();
    bench_mlp();
    printf("\n%d bench_goal(s) missed\n", bench_misses);
    ag_shutdown();
    return 0;
}
