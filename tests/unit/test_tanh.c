/*
 * test_tanh.c - agc's own f32 tanh (runtime/kernels/tanh_f32.h) and the
 * invariant that every executor computes it to the same bits: the eager
 * kernels (f32, and bf16 through f32), the reference executor, and the
 * LLVM backend's code (backend/cpu/lower_math.c), in fused vector loops, as
 * scalars and when LLVM folds it on constants, and the fold pass.
 *
 * The reference for accuracy is tanh() in double rounded to f32: over
 * every finite f32 input rt_tanh_f32 is at most 2 ulp from it (measured
 * exhaustively when the coefficients were fitted); here a sample of about
 * 40 million inputs, denser where the approximation works hardest, keeps
 * that bound checked in about a second.
 */
#include "test_util.h"

#include "cg_util.h"
#include "exec.h"
#include "ir.h"
#include "pass.h"
#include "rt.h"
#include "tanh_f32.h"

#include <float.h>
#include <stdio.h>
#include <stdlib.h>

/* ============================================================ helpers */

static uint32_t bits(float f) { return rt_tanh_f32_bits(f); }
static float from_bits(uint32_t u) { return rt_tanh_f32_from_bits(u); }

/* tanh(x) correctly rounded to f32 (up to the double's own error, far
 * below an f32 ulp). */
static float ref_tanh(float x) { return (float)tanh((double)x); }

/* Distance in ulps between two non-NaN floats: their positions in the
 * ordered sequence of all floats (-0 and +0 one apart). */
static int64_t ordered(float f)
{
    uint32_t u = bits(f);
    return (u & 0x80000000u) ? -(int64_t)(u & 0x7fffffffu) : (int64_t)u;
}

static int64_t ulps(float a, float b)
{
    int64_t d = ordered(a) - ordered(b);
    return d < 0 ? -d : d;
}

/* Checks x: at most max_ulps from the reference; reports the worst. */
typedef struct ulp_stats {
    int64_t worst;
    float worst_x;
    int64_t n, off; /* inputs checked, inputs not correctly rounded */
} ulp_stats;

static void check_one(ulp_stats *s, float x)
{
    int64_t d = ulps(rt_tanh_f32(x), ref_tanh(x));
    s->n++;
    s->off += d != 0;
    if (d > s->worst) {
        s->worst = d;
        s->worst_x = x;
    }
}

/* Every stride-th positive bit pattern in [lo, hi). */
static void check_range(ulp_stats *s, uint32_t lo, uint32_t hi, uint32_t stride)
{
    for (uint64_t b = lo; b < hi; b += stride)
        check_one(s, from_bits((uint32_t)b));
}

static void expect_within(const ulp_stats *s, int64_t max_ulps, int line)
{
    if (s->worst > max_ulps)
        fail_msg("line %d: tanh(%a) = %a is %lld ulp from the correctly rounded %a", line,
                 (double)s->worst_x, (double)rt_tanh_f32(s->worst_x), (long long)s->worst,
                 (double)ref_tanh(s->worst_x));
}

/* Asserts tanh(x) has exactly the bits of want. */
static void expect_bits(float x, float want, int line)
{
    float got = rt_tanh_f32(x);
    if (bits(got) != bits(want))
        fail_msg("line %d: tanh(%a) = %a (0x%08x), expected %a (0x%08x)", line, (double)x,
                 (double)got, bits(got), (double)want, bits(want));
}
#define EXPECT_BITS(x, want) expect_bits((x), (want), __LINE__)

/* The approximation's landmarks (see tanh_f32.h). */
static const uint32_t B_TINY = 0x39800000u; /* 2^-12: x itself below, the formula above */
static const uint32_t B_ONE = 0x41102cb4u;   /* 9.0109: first x whose tanh rounds to 1 */

/* ===================================================== (a) accuracy */

static void test_ulp_bound_sampled(void **state)
{
    (void)state;
    ulp_stats s = {0};
    /* Negative inputs mirror positive ones bit for bit (test_odd_symmetry). */
    check_range(&s, 0x00000000u, 0x39800000u, 97);  /* [0, 2^-12): x itself */
    check_range(&s, 0x39800000u, 0x3f100000u, 4);   /* [2^-12, 0.56): the 2-ulp cases (< 0.26) */
    check_range(&s, 0x3f100000u, 0x3f800000u, 5);   /* [0.56, 1) */
    check_range(&s, 0x3f800000u, 0x41200000u, 11);  /* [1, 10) */
    check_range(&s, 0x41200000u, 0x7f800000u, 101); /* [10, inf): 1 */
    expect_within(&s, 2, __LINE__);
    /* The sample is large, and results off by an ulp or two stay a
     * minority of it (21%: it is densest where they occur; 1.9% over all
     * inputs). */
    assert_true(s.n > 35000000);
    assert_true(s.off * 4 < s.n);
}

/* Every input around the switch from x itself to the formula, the
 * reduction's boundaries (2|x| = (k + 1/2) ln 2, where k changes) and the
 * point where the result becomes 1 is within 2 ulp. (Monotonicity is not
 * promised: an error of an ulp can make tanh step back.) */
static void check_window(uint32_t center, uint32_t half, int line)
{
    ulp_stats s = {0};
    check_range(&s, center - half, center + half + 1, 1);
    expect_within(&s, 2, line);
}

static void test_switch_points(void **state)
{
    (void)state;
    check_window(B_TINY, 1 << 16, __LINE__);
    check_window(B_ONE, 1 << 16, __LINE__);
    for (int k = 0; k <= 28; k++)
        check_window(bits((float)((k + 0.5) * 0.6931471805599453 / 2)), 1 << 14, __LINE__);
    /* the landmarks are where the header says */
    assert_true(ref_tanh(from_bits(B_ONE)) == 1 && ref_tanh(from_bits(B_ONE - 1)) < 1);
    assert_true(from_bits(B_TINY) == RT_TANH_F32_TINY);
    assert_true(RT_TANH_F32_ROUNDER == 0x1.8p+23f + 127);
}

/* ================================================= (b) special values */

static void test_special_values(void **state)
{
    (void)state;
    /* zeros keep their sign */
    EXPECT_BITS(0.0f, 0.0f);
    EXPECT_BITS(-0.0f, -0.0f);
    /* infinities and everything from 9.0109 on give exactly +-1 */
    EXPECT_BITS(INFINITY, 1.0f);
    EXPECT_BITS(-INFINITY, -1.0f);
    EXPECT_BITS(FLT_MAX, 1.0f);
    EXPECT_BITS(-FLT_MAX, -1.0f);
    EXPECT_BITS(1e30f, 1.0f);
    EXPECT_BITS(20.0f, 1.0f);
    EXPECT_BITS(10.0f, 1.0f);
    EXPECT_BITS(-10.0f, -1.0f);
    EXPECT_BITS(from_bits(B_ONE), 1.0f);
    /* the formula reaches 1 at 0x41102c34, 128 inputs before tanh rounds
     * to 1: one ulp high from there to B_ONE */
    EXPECT_BITS(from_bits(B_ONE - 1), 1.0f);
    EXPECT_BITS(from_bits(0x41102c34u), 1.0f);
    EXPECT_BITS(from_bits(0x41102c33u), nextafterf(1.0f, 0.0f));
    for (uint32_t b = B_ONE; b < 0x7f800000u; b += 9973)
        EXPECT_BITS(from_bits(b), 1.0f);
    /* tiny and subnormal inputs are returned exactly */
    const float tiny[] = {from_bits(1), from_bits(2), from_bits(0x007fffffu), FLT_MIN,
                          1e-20f, 0x1p-13f, 0x1.fffffep-13f};
    for (size_t i = 0; i < sizeof tiny / sizeof tiny[0]; i++) {
        EXPECT_BITS(tiny[i], tiny[i]);
        EXPECT_BITS(-tiny[i], -tiny[i]);
    }
    /* NaN in, the same NaN out: sign and payload kept */
    const uint32_t nans[] = {0x7fc00000u, 0xffc00000u, 0x7fc12345u, 0xffffffffu, 0x7f800001u};
    for (size_t i = 0; i < sizeof nans / sizeof nans[0]; i++) {
        float got = rt_tanh_f32(from_bits(nans[i]));
        if (bits(got) != nans[i])
            fail_msg("tanh(NaN 0x%08x) = 0x%08x", nans[i], bits(got));
    }
    /* below 2^-12, x itself; from there the formula (here one ulp low:
     * the correctly rounded result is still x) */
    EXPECT_BITS(from_bits(B_TINY - 1), from_bits(B_TINY - 1));
    EXPECT_BITS(from_bits(B_TINY + 1), from_bits(B_TINY));
    /* ordinary values: correctly rounded, but for -0.25, 0.1 and 9, each
     * one ulp off (9's tanh, 1 - 3.05e-8, lies just below the midpoint of
     * 1 - 2^-24 and 1; the result is 1) */
    const float xs[] = {0.5f, 0.75f, 1, 2, 3, 5};
    for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++)
        EXPECT_BITS(xs[i], ref_tanh(xs[i]));
    EXPECT_BITS(-0.25f, from_bits(0xbe7acbf6u)); /* correctly rounded: 0xbe7acbf5 */
    EXPECT_BITS(0.1f, from_bits(0x3dcc1ebdu));   /* correctly rounded: 0x3dcc1ebc */
    EXPECT_BITS(9.0f, 1.0f);
}

/* ================================================= (c) odd symmetry */

static void test_odd_symmetry(void **state)
{
    (void)state;
    for (uint64_t b = 0; b < 0x80000000u; b += 101) {
        float x = from_bits((uint32_t)b);
        uint32_t pos = bits(rt_tanh_f32(x)), neg = bits(rt_tanh_f32(-x));
        if (x == x && neg != (pos ^ 0x80000000u))
            fail_msg("tanh(-%a) = 0x%08x but tanh(%a) = 0x%08x", (double)x, neg, (double)x,
                     pos);
    }
}

/* The exact bits of the algorithm: an FNV-1a hash of tanh over every
 * 4093rd bit pattern (both signs, every exponent, NaNs included). Any
 * change to an operation, its order or a constant changes it, even one
 * that keeps the ulp bound; after such a change, measure the bound over
 * every input again (see tanh_f32.h) before updating the value. */
static void test_fingerprint(void **state)
{
    (void)state;
    uint64_t h = 1469598103934665603u;
    for (uint64_t b = 0; b <= 0xffffffffu; b += 4093)
        h = (h ^ bits(rt_tanh_f32(from_bits((uint32_t)b)))) * 1099511628211u;
    assert_int_equal(h, 0x943182fa7910e1eau);
}

/* ============================================ (d) every executor, same bits */

enum { BIG = 1 << 22 };

/* BIG inputs: the specials, then every 2048th bit pattern (both signs,
 * all exponents, NaNs included), then a dense run through [-10, 10]. */
static float *make_inputs(void)
{
    float *x = malloc(BIG * sizeof *x);
    assert_non_null(x);
    const float specials[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, FLT_MAX, -FLT_MAX,
                              FLT_MIN, from_bits(1), 0x1p-12f, nextafterf(0x1p-12f, 0), 9.0109f,
                              20, -20, 1e-20f};
    int n = 0;
    for (size_t i = 0; i < sizeof specials / sizeof specials[0]; i++)
        x[n++] = specials[i];
    for (uint64_t b = 0; b <= 0xffffffffu && n < BIG / 2; b += 2048)
        x[n++] = from_bits((uint32_t)b + 7);
    for (int i = 0; n < BIG; i++)
        x[n++] = -10 + 20 * (float)i / (float)(BIG / 2);
    return x;
}

/* A new f32 value of shape s holding x. */
static rt_value *f32_value(const float *x, ag_shape s)
{
    rt_value *v = rt_value_new(AG_F32, &s);
    memcpy(v->data, x, (size_t)v->numel * sizeof *x);
    return v;
}

static ir_function *parse_ir(const char *text)
{
    char err[1024];
    ir_function *fn = ir_parse(text, "test.ir", err, sizeof err);
    if (!fn)
        fail_msg("parse: %s\n%s", err, text);
    return fn;
}

static rt_value *run_compiled(const cg_code *code, rt_value *const *args, int n)
{
    rt_value *res = NULL;
    if (!cg_run(code, args, n, &res))
        fail_msg("compiled run failed: %s", ag_last_error());
    return res;
}

static rt_value *run_reference(const ir_function *fn, rt_value *const *args, int n)
{
    rt_value *res = NULL;
    ir_plan *p = ir_plan_new(fn);
    if (!ir_execute(p, args, n, &res))
        fail_msg("reference run failed: %s", ag_last_error());
    ir_plan_free(p);
    return res;
}

static cg_code *compile(const ir_function *fn)
{
    char err[512];
    cg_code *c = tu_compile(fn, err, sizeof err);
    if (!c)
        fail_msg("cg_compile failed: %s", err);
    return c;
}

/* The first element where two f32 arrays differ in their bits. */
static void expect_same_bits(const float *got, const float *want, const float *x, int64_t n,
                             const char *what)
{
    if (memcmp(got, want, (size_t)n * sizeof *got) == 0)
        return;
    for (int64_t i = 0; i < n; i++)
        if (bits(got[i]) != bits(want[i]))
            fail_msg("%s: element %lld (x = %a): 0x%08x, expected 0x%08x", what, (long long)i,
                     (double)x[i], bits(got[i]), bits(want[i]));
}

/* tanh over BIG inputs: compiled (a vectorized loop), the reference
 * executor and eager ag_tanh all give rt_tanh_f32's bits. */
static void test_executors_agree(void **state)
{
    (void)state;
    float *x = make_inputs(), *want = malloc(BIG * sizeof *want);
    assert_non_null(want);
    for (int64_t i = 0; i < BIG; i++)
        want[i] = rt_tanh_f32(x[i]);

    ir_function *fn = parse_ir("func @t(%0: f32[?]) -> (f32[?]) {\n"
                               "  %1 = tanh(%0) : f32[?]\n  return %1\n}\n");
    cg_code *code = compile(fn);
    char *ir = cg_module_text(code);
    assert_null(strstr(ir, "tanhf"));       /* no libm call ... */
    assert_non_null(strstr(ir, " x float>")); /* ... and a vector loop */
    free(ir);

    rt_value *arg = f32_value(x, AG_SHAPE(BIG));
    rt_value *jit = run_compiled(code, &arg, 1);
    expect_same_bits(jit->data, want, x, BIG, "compiled");
    rt_value *ref = run_reference(fn, &arg, 1);
    expect_same_bits(ref->data, want, x, BIG, "reference executor");
    ag_tensor e = ag_tanh(ag_from_data(AG_F32, AG_SHAPE(BIG), x));
    expect_same_bits(ag_data(e), want, x, BIG, "eager");

    rt_value_free(jit);
    rt_value_free(ref);
    rt_value_free(arg);
    tu_code_free(code);
    ir_function_free(fn);
    free(x);
    free(want);
}

/* The benchmark's fused chain tanh(x*a + b)*c + x: compiled as one loop,
 * the same bits as the eager ops. */
static void test_fused_chain_agrees(void **state)
{
    (void)state;
    enum { M = 100003 }; /* not a multiple of any vector width */
    ir_function *fn = parse_ir(
        "func @chain(%0: f32[?], %1: f32[], %2: f32[], %3: f32[]) -> (f32[?]) {\n"
        "  %4 = mul(%0, %1) : f32[?]\n"
        "  %5 = add(%4, %2) : f32[?]\n"
        "  %6 = tanh(%5) : f32[?]\n"
        "  %7 = mul(%6, %3) : f32[?]\n"
        "  %8 = add(%7, %0) : f32[?]\n"
        "  return %8\n}\n");
    cg_code *code = compile(fn);
    float *x = malloc(M * sizeof *x);
    assert_non_null(x);
    for (int i = 0; i < M; i++)
        x[i] = (float)(i % 2001) / 1000.0f - 1.0f + (float)i * 1e-4f;
    ag_tensor xt = ag_from_data(AG_F32, AG_SHAPE(M), x);
    ag_tensor a = ag_scalar_f32(0.75f), b = ag_scalar_f32(-0.125f), c = ag_scalar_f32(1.5f);
    rt_value *args[4] = {rt_handle_get(AG_HERE, xt), rt_handle_get(AG_HERE, a),
                         rt_handle_get(AG_HERE, b), rt_handle_get(AG_HERE, c)};
    rt_value *jit = run_compiled(code, args, 4);
    ag_tensor e = ag_add(ag_mul(ag_tanh(ag_add(ag_mul(xt, a), b)), c), xt);
    expect_same_bits(jit->data, ag_data(e), x, M, "fused chain");
    rt_value_free(jit);
    tu_code_free(code);
    ir_function_free(fn);
    free(x);
}

/* Values for the scalar and constant checks: specials, landmarks and
 * ordinary values (%.9g prints an f32 so that it reads back exactly). */
static const float SCALARS[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, FLT_MAX, FLT_MIN,
                                0x1p-149f, -0x1p-140f, 1e-5f, 0x1p-12f, -0x1.000002p-12f, 0.3f, -0.6f, 0.75f,
                                0x1.7ffffep-1f, 0.8f, 1.0f, -2.5f, 4.0f, 9.0109f, 9.02f,
                                -12.0f, 1e10f};

/* The IR of a function returning tanh of the constant x. */
static ir_function *const_tanh(float x)
{
    char text[256], num[64];
    if (isnan(x))
        snprintf(num, sizeof num, "nan");
    else if (isinf(x))
        snprintf(num, sizeof num, "%sinf", x < 0 ? "-" : "");
    else
        snprintf(num, sizeof num, "%.9g", (double)x);
    snprintf(text, sizeof text,
             "func @c() -> (f32[]) {\n  %%0 = const() {value = [%s]} : f32[]\n"
             "  %%1 = tanh(%%0) : f32[]\n  return %%1\n}\n", num);
    return parse_ir(text);
}

/* Whether fn still has a tanh node. */
static bool has_tanh(const ir_function *fn)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    ir_print(fn, f);
    fclose(f);
    bool has = strstr(text, "tanh(") != NULL;
    free(text);
    return has;
}

/* A rank-0 tanh is a native scalar in the compiled code; on a constant,
 * LLVM folds the whole computation at compile time, and the fold pass
 * evaluates it with the kernel: all must give rt_tanh_f32's bits. */
static void test_scalars_and_constants_agree(void **state)
{
    (void)state;
    ir_function *fn = parse_ir("func @s(%0: f32[]) -> (f32[]) {\n"
                               "  %1 = tanh(%0) : f32[]\n  return %1\n}\n");
    cg_code *code = compile(fn);
    for (size_t i = 0; i < sizeof SCALARS / sizeof SCALARS[0]; i++) {
        float x = SCALARS[i], want = rt_tanh_f32(x);
        rt_value *arg = f32_value(&x, AG_SCALAR);
        rt_value *got = run_compiled(code, &arg, 1);
        expect_same_bits(got->data, &want, &x, 1, "compiled scalar");
        rt_value_free(got);
        rt_value_free(arg);

        ir_function *cf = const_tanh(x);
        cg_code *cc = compile(cf);
        got = run_compiled(cc, NULL, 0);
        expect_same_bits(got->data, &want, &x, 1, "compiled constant");
        rt_value_free(got);
        tu_code_free(cc);

        if (!pass_run_spec(cf, "fold,dce"))
            fail_msg("fold: %s", pass_last_error());
        assert_false(has_tanh(cf));
        got = run_reference(cf, NULL, 0);
        expect_same_bits(got->data, &want, &x, 1, "folded constant");
        rt_value_free(got);
        ir_function_free(cf);
    }
    tu_code_free(code);
    ir_function_free(fn);
}

/* bf16 computes in f32 and rounds once: every bf16 input; f64 stays
 * libm's tanh. */
static void test_bf16_and_f64_kernels(void **state)
{
    (void)state;
    enum { NB = 1 << 16 };
    uint16_t *in = malloc(NB * sizeof *in);
    assert_non_null(in);
    for (int i = 0; i < NB; i++)
        in[i] = (uint16_t)i;
    ag_tensor t = ag_tanh(ag_from_data(AG_BF16, AG_SHAPE(NB), in));
    const uint16_t *out = ag_data(t);
    for (int i = 0; i < NB; i++) {
        float x = ag_bf16_to_f32(in[i]);
        uint16_t want = ag_f32_to_bf16(rt_tanh_f32(x));
        if (out[i] != want)
            fail_msg("bf16 tanh(%a) = 0x%04x, expected 0x%04x", (double)x, out[i], want);
    }
    free(in);

    const double d[] = {0.0, -0.0, 0.3, -0.8, 2.0, 19.0, 1e-300, INFINITY};
    ag_tensor td = ag_tanh(ag_from_data(AG_F64, AG_SHAPE(8), d));
    for (int i = 0; i < 8; i++) {
        double got = ag_get_f64(td, i), want = tanh(d[i]);
        assert_memory_equal(&got, &want, sizeof got);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_ulp_bound_sampled),
        TU_TEST(test_switch_points),
        TU_TEST(test_special_values),
        TU_TEST(test_odd_symmetry),
        TU_TEST(test_fingerprint),
        TU_TEST(test_executors_agree),
        TU_TEST(test_fused_chain_agrees),
        TU_TEST(test_scalars_and_constants_agree),
        TU_TEST(test_bf16_and_f64_kernels),
    };
    TU_RUN(tests);
}
