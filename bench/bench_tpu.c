/*
 * bench_tpu.c - the TPU-model target's figures (docs/tpu-model.md):
 *
 *   (a) a large bf16 matmul: simulated device time against its roofline
 *       (the MXUs at peak, or HBM at full bandwidth, whichever is slower);
 *       goal: within 5%;
 *   (b) the MLP of the examples: MXU utilization, and where the time goes
 *       (host link, padding, VPU work);
 *   (c) the simulator's own speed: wall time of a functional simulation
 *       against the same product computed by the runtime's f32 kernel
 *       (OpenBLAS), so that simulating is never a test suite's bottleneck;
 *   (d) the collectives on a slice's inter-chip links (collective.c): an
 *       all-reduce simulated link by link against the ring formula, from
 *       1 KiB to 1 GiB, along an axis of 2, 4 and 16 (a torus) chips;
 *       goal: within 5%.
 *   (e) an int8 qmatmul 8192^3 (the MXU's int8 passes, int32 sums):
 *       device time against its int8 roofline (goal: within 5%) and
 *       against (a)'s bf16 device time (goal: at most 0.55x), and a
 *       weight's HBM bytes in int8 against f32 (goal: 4x smaller).
 *   (f) a bf16 8192^3 matmul partitioned over a 2x2 slice (partition.c):
 *       device time against one chip's (goal: at most 0.30x), beside the
 *       slice's roofline, collectives included;
 *   (g) the simulator's own speed on 8 chips: wall time of a functional
 *       run of an f32 512^3 product on a 2x4 slice against one chip's
 *       (goal: at most 3x). Every chip runs the same program (the
 *       split is even), so the simulator times it once with its links,
 *       and computes the split product's shares on a pool of threads
 *       (pool.c): the same arithmetic as one chip's, over the CPUs.
 *   (h) the MLP of (b) at batch 64 on one chip with and without VMEM
 *       residency (vmem.c; `vmem { residency: false }`): HBM bytes and
 *       device time before and after (goal: both lower with it).
 *
 * Timing is never part of ctest: run it by hand (cmake --build build
 * --target bench_tpu_run).
 */
#include "bench_util.h"

#include "collective.h"
#include "partition.h"
#include "program.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static ir_function *parse_or_die(const char *text)
{
    char err[512];
    ir_function *fn = ir_parse(text, "bench", err, sizeof err);
    if (!fn) {
        fprintf(stderr, "bench_tpu: %s\n", err);
        exit(1);
    }
    return fn;
}

/* A graph compiled for the v5e as the pipeline would: placed, planned. */
typedef struct compiled {
    ir_function *fn;
    pass_analyses *am;
    tpu_program *p;
} compiled;

/* The same for the spec text over the v5e's defaults. */
static compiled compile_for(const char *text, const char *spec_text)
{
    compiled c = {.fn = parse_or_die(text)};
    c.am = pass_analyses_new(c.fn, &tgt_find("tpu-model")->caps);
    pass_run_with(c.fn, "place", c.am, NULL);
    tpu_spec spec;
    char err[256];
    if (!tpu_spec_parse(spec_text, "bench", &spec, err, sizeof err)) {
        fprintf(stderr, "bench_tpu: %s\n", err);
        exit(1);
    }
    tgt_diag d;
    c.p = tpu_compile(c.fn, c.am, &spec, &d);
    if (!c.p) {
        fprintf(stderr, "bench_tpu: %s\n", d.msg);
        exit(1);
    }
    return c;
}

static compiled compile_text(const char *text) { return compile_for(text, ""); }

static void compiled_free(compiled *c)
{
    tpu_program_free(c->p);
    pass_analyses_free(c->am);
    ir_function_free(c->fn);
}

static rt_value *random_value(ag_dtype dt, ag_shape s, uint32_t seed)
{
    rt_value *v = rt_value_new(dt, &s);
    for (int64_t i = 0; i < v->numel; i++) {
        seed = seed * 1664525u + 1013904223u;
        rt_store_f64(dt, v->data, i, (double)(seed >> 8) / (double)(1u << 24) - 0.5);
    }
    return v;
}

static void goal(const char *what, bool ok)
{
    printf("  goal: %-52s %s\n", what, ok ? "PASS" : "MISS");
}

/* An n x n x n product of dtype dt, as text IR, for the spec text. */
static compiled square_matmul_for(const char *dt, int64_t n, const char *spec)
{
    char text[512];
    long long k = n;
    snprintf(text, sizeof text,
             "func @mm(%%0: %s[%lld,%lld], %%1: %s[%lld,%lld]) -> (%s[%lld,%lld]) {\n"
             "  %%2 = matmul(%%0, %%1) : %s[%lld,%lld]\n  return %%2\n}\n",
             dt, k, k, dt, k, k, dt, k, k, dt, k, k);
    return compile_for(text, spec);
}

static compiled square_matmul(const char *dt, int64_t n) { return square_matmul_for(dt, n, ""); }

/* (a): the bf16 product's device time in *device_seconds */
static bool large_matmul(int64_t n, double *device_seconds)
{
    compiled c = square_matmul("bf16", n);
    tpu_profile prof;
    tpu_time(c.p, &prof);
    double ratio = prof.device_seconds / prof.roofline_seconds;
    printf("(a) bf16 matmul %lld^3 on the simulated v5e\n", (long long)n);
    printf("  device time %10.3f ms  roofline %10.3f ms  (%.3fx); with host transfers %.3f ms\n",
           prof.device_seconds * 1e3, prof.roofline_seconds * 1e3, ratio, prof.seconds * 1e3);
    printf("  mxu utilization %.1f%% of the call, %.1f%% of the device time\n",
           100 * prof.mxu_utilization, 100 * prof.mxu_utilization * prof.seconds /
                                           prof.device_seconds);
    goal("device time <= 1.05x roofline", ratio <= 1.05);
    *device_seconds = prof.device_seconds;
    compiled_free(&c);
    return ratio <= 1.05;
}

static const char *const mlp =
    "func @mlp(%0: f32[64,784], %1: f32[784,512], %2: f32[512], %3: f32[512,512], "
    "%4: f32[512], %5: f32[512,10], %6: f32[10]) -> (f32[64,10]) {\n"
    "  %7 = matmul(%0, %1) : f32[64,512]\n"
    "  %8 = add(%7, %2) : f32[64,512]\n"
    "  %9 = relu(%8) : f32[64,512]\n"
    "  %10 = matmul(%9, %3) : f32[64,512]\n"
    "  %11 = add(%10, %4) : f32[64,512]\n"
    "  %12 = relu(%11) : f32[64,512]\n"
    "  %13 = matmul(%12, %5) : f32[64,10]\n"
    "  %14 = add(%13, %6) : f32[64,10]\n"
    "  %15 = softmax(%14) {axis = 1} : f32[64,10]\n"
    "  return %15\n}\n";

/* (b) */
static bool mlp_profile(void)
{
    compiled c = compile_text(mlp);
    static const ag_shape shapes[7] = {{2, {64, 784}}, {2, {784, 512}}, {1, {512}},
                                       {2, {512, 512}}, {1, {512}},     {2, {512, 10}},
                                       {1, {10}}};
    rt_value *in[7], *out = NULL;
    for (int i = 0; i < 7; i++)
        in[i] = random_value(AG_F32, shapes[i], (uint32_t)i + 1);
    tpu_profile prof;
    double t0 = bench_now_s();
    bool ok = tpu_run(c.p, in, 7, &out, &prof, NULL);
    double wall = bench_now_s() - t0;
    printf("\n(b) MLP forward, batch 64, 784-512-512-10 f32, on the simulated v5e\n");
    if (!ok) {
        printf("  failed: %s\n", ag_last_error());
    } else {
        tpu_profile_print(&prof, "mlp", stdout);
        double host = (double)(prof.busy[TPU_UNIT_H2D] + prof.busy[TPU_UNIT_D2H]);
        printf("  the host link is busy %.0f%% of the call (%.0f%% of its bytes are padding); "
               "the mxu %.1f%% of the device time\n",
               100 * host / (double)prof.cycles,
               100.0 * (double)prof.host_padding / (double)prof.host_bytes,
               100 * prof.mxu_utilization * prof.seconds / prof.device_seconds);
        printf("  simulated in %.2f ms of wall time: %.2f simulated GFLOP per host second\n",
               wall * 1e3, 2.0 * (double)prof.macs / wall * 1e-9);
        goal("simulating the MLP at batch 64 < 50 ms", wall < 0.05);
    }
    rt_value_free(out);
    for (int i = 0; i < 7; i++)
        rt_value_free(in[i]);
    compiled_free(&c);
    return ok && wall < 0.05;
}

/* (c) */
static bool simulator_speed(int64_t n)
{
    compiled c = square_matmul("f32", n);
    ag_shape s = {2, {n, n}};
    rt_value *in[2] = {random_value(AG_F32, s, 1), random_value(AG_F32, s, 2)};
    double sim[5], blas[5];
    for (int r = 0; r < 5; r++) {
        rt_value *out = NULL;
        double t0 = bench_now_s();
        tpu_run(c.p, in, 2, &out, NULL, NULL);
        sim[r] = bench_now_s() - t0;
        rt_value_free(out);
        t0 = bench_now_s();
        out = rt_apply_eager((ag_loc){0}, RT_OP_MATMUL, &(rt_attrs){0}, in, 2);
        blas[r] = bench_now_s() - t0;
        rt_value_free(out);
    }
    double ms = bench_median(sim, 5) * 1e3, ref = bench_median(blas, 5) * 1e3;
    printf("\n(c) the simulator's speed: an f32 %lld^3 matmul, bf16 numerics\n", (long long)n);
    printf("  simulated (functional)  %8.2f ms\n  runtime kernel (BLAS)   %8.2f ms  "
           "(simulating costs %.1fx)\n",
           ms, ref, ms / ref);
    goal("simulating <= 20x the CPU's own f32 kernel", ms <= 20 * ref);
    for (int i = 0; i < 2; i++)
        rt_value_free(in[i]);
    compiled_free(&c);
    return ms <= 20 * ref;
}

/* (d) */
static bool collectives(void)
{
    tpu_spec s;
    tpu_spec_default(&s);
    static const int chips[] = {2, 4, 16};
    double worst = 0;
    printf("\n(d) all-reduce on the inter-chip links, simulated vs the ring formula (ms)\n");
    printf("  %10s %22s %22s %22s\n", "bytes", "2 chips (line)", "4 chips (line)",
           "16 chips (torus)");
    for (int64_t bytes = 1 << 10; bytes <= (int64_t)1 << 30; bytes <<= 4) {
        printf("  %10lld", (long long)bytes);
        for (int i = 0; i < 3; i++) {
            double sim = tpu_coll_axis_seconds(&s, TPU_ALL_REDUCE, bytes, chips[i]);
            double ring = tpu_coll_ring_formula(&s, TPU_ALL_REDUCE, bytes, chips[i]);
            worst = fmax(worst, fabs(sim - ring) / ring);
            printf(" %10.4f / %9.4f", sim * 1e3, ring * 1e3);
        }
        printf("\n");
    }
    printf("  largest difference %.2f%%\n", 100 * worst);
    goal("all-reduce within 5% of the ring formula", worst <= 0.05);
    return worst <= 0.05;
}

static bool int8_matmul(int64_t n, double bf16_device_seconds)
{
    char text[512];
    long long k = n;
    snprintf(text, sizeof text,
             "func @q(%%0: i8[%lld,%lld], %%1: i8[%lld,%lld], %%2: i32[]) -> (i32[%lld,%lld]) {\n"
             "  %%3 = qmatmul(%%0, %%1, %%2) : i32[%lld,%lld]\n  return %%3\n}\n",
             k, k, k, k, k, k, k, k);
    compiled c = compile_text(text);
    tpu_profile prof;
    tpu_time(c.p, &prof);
    double ratio = prof.device_seconds / prof.roofline_seconds;
    double vs_bf16 = prof.device_seconds / bf16_device_seconds;
    ir_type w8 = {.dtype = AG_I8, .shape = {2, {n, n}}}, w32 = {.dtype = AG_F32, .shape = {2, {n, n}}};
    double bytes8 = (double)tpu_padded_bytes(&w8), bytes32 = (double)tpu_padded_bytes(&w32);
    printf("\n(e) int8 qmatmul %lld^3 on the simulated v5e (int8 MXU passes, int32 sums)\n",
           (long long)n);
    printf("  device time %10.3f ms  int8 roofline %10.3f ms  (%.3fx); with host transfers "
           "%.3f ms\n", prof.device_seconds * 1e3, prof.roofline_seconds * 1e3, ratio,
           prof.seconds * 1e3);
    printf("  against the bf16 product's device time: %.3fx\n", vs_bf16);
    printf("  a weight's HBM bytes: %.1f MiB int8, %.1f MiB f32 (%.2fx smaller)\n",
           bytes8 / (1 << 20), bytes32 / (1 << 20), bytes32 / bytes8);
    goal("device time <= 1.05x the int8 roofline", ratio <= 1.05);
    goal("device time <= 0.55x the bf16 product's", vs_bf16 <= 0.55);
    goal("weights' HBM bytes 4x smaller than f32", bytes32 / bytes8 >= 4);
    compiled_free(&c);
    return ratio <= 1.05 && vs_bf16 <= 0.55 && bytes32 / bytes8 >= 4;
}

/* (f) */
static bool sliced_matmul(int64_t n, double one_chip_seconds)
{
    compiled c = square_matmul_for("bf16", n, "chips: 4 mesh { x: 2 y: 2 }");
    tpu_profile prof;
    tpu_time(c.p, &prof);
    double ratio = prof.device_seconds / one_chip_seconds;
    printf("\n(f) bf16 matmul %lld^3 on a 2x2 slice, split %s\n", (long long)n,
           tpu_split_name(c.p->slice->node[2].split));
    printf("  device time %10.3f ms  one chip %10.3f ms  (%.3fx); slice roofline %10.3f ms "
           "(collectives %.3f ms)\n", prof.device_seconds * 1e3, one_chip_seconds * 1e3, ratio,
           prof.roofline_seconds * 1e3, prof.coll_formula_seconds * 1e3);
    goal("2x2 device time <= 0.30x one chip's", ratio <= 0.30);
    compiled_free(&c);
    return ratio <= 0.30;
}

static double run_wall(const compiled *c, rt_value *const *in)
{
    double t[3];
    for (int r = 0; r < 3; r++) {
        rt_value *out = NULL;
        double t0 = bench_now_s();
        tpu_run(c->p, in, 2, &out, NULL, NULL);
        t[r] = bench_now_s() - t0;
        rt_value_free(out);
    }
    return bench_median(t, 3);
}

/* (g) */
static bool slice_simulator_speed(int64_t n)
{
    compiled one = square_matmul("f32", n);
    compiled eight = square_matmul_for("f32", n, "chips: 8 mesh { x: 2 y: 4 }");
    ag_shape s = {2, {n, n}};
    rt_value *in[2] = {random_value(AG_F32, s, 1), random_value(AG_F32, s, 2)};
    double a = run_wall(&one, in), b = run_wall(&eight, in);
    printf("\n(g) the simulator's speed on 8 chips: an f32 %lld^3 matmul, split %s\n",
           (long long)n, tpu_split_name(eight.p->slice->node[2].split));
    printf("  one chip %8.2f ms  2x4 slice %8.2f ms  (%.2fx)\n", a * 1e3, b * 1e3, b / a);
    goal("simulating 8 chips <= 3x one chip's wall time", b <= 3 * a);
    for (int i = 0; i < 2; i++)
        rt_value_free(in[i]);
    compiled_free(&one);
    compiled_free(&eight);
    return b <= 3 * a;
}

/* (h) */
static void mlp_time(bool residency, tpu_profile *prof, int64_t *hbm_peak)
{
    compiled c = compile_for(mlp, residency ? "" : "vmem { residency: false }");
    tpu_time(c.p, prof);
    *hbm_peak = c.p->hbm_bytes;
    compiled_free(&c);
}

static bool mlp_residency(void)
{
    tpu_profile off, on;
    int64_t peak_off, peak_on;
    mlp_time(false, &off, &peak_off);
    mlp_time(true, &on, &peak_on);
    printf("\n(h) MLP forward, batch 64, 784-512-512-10 f32, one chip: VMEM residency\n");
    printf("  %-16s %14s %14s %12s\n", "", "hbm bytes", "device us", "hbm peak");
    printf("  %-16s %14lld %14.3f %12lld\n", "without", (long long)off.hbm_bytes,
           off.device_seconds * 1e6, (long long)peak_off);
    printf("  %-16s %14lld %14.3f %12lld\n", "with", (long long)on.hbm_bytes,
           on.device_seconds * 1e6, (long long)peak_on);
    printf("  saved by residency: %lld hbm bytes (%.1f%%), device time %.3fx\n",
           (long long)on.hbm_saved, 100.0 * (double)on.hbm_saved / (double)off.hbm_bytes,
           on.device_seconds / off.device_seconds);
    bool ok = on.hbm_bytes < off.hbm_bytes && on.device_seconds < off.device_seconds;
    goal("fewer HBM bytes and less device time with residency", ok);
    return ok;
}

int main(void)
{
    printf("bench_tpu: the tpu-model target (v5e defaults)\n\n");
    double bf16_seconds = 0;
    int missed = !large_matmul(8192, &bf16_seconds);
    missed += !mlp_profile();
    missed += !simulator_speed(512);
    missed += !collectives();
    missed += !int8_matmul(8192, bf16_seconds);
    missed += !sliced_matmul(8192, bf16_seconds);
    missed += !slice_simulator_speed(512);
    missed += !mlp_residency();
    printf("\n%d goal(s) missed\n", missed);
    ag_shutdown();
    return 0;
}
