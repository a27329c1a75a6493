/*
 * test_bf16mm.c - the cpu target's vdpbf16ps matrix product
 * (backend/cpu/lower_bf16mm.c) bit for bit against a scalar model of the
 * order its header and docs/runtime.md state: for each c[i,j], pairs
 * p, p+1 for p = 0, 2, 4, ..: a[i,p+1]*b[p+1,j] added, then a[i,p]*b[p,j],
 * each add rounded to f32, an odd k's last pair with a second half of 0,
 * and the sum rounded once to bf16.
 *
 * The shapes are awkward for the kernel's blocks (6 rows x 64 columns):
 * rows and columns left over, n below one vector, odd k, one tile (b read
 * in place) and many (b packed first), and products large enough to run
 * in parallel chunks of columns. The inputs' exponents spread over
 * 2^-6 .. 2^6 with both signs, so the f32 sums cancel and round: a model
 * in another order disagrees somewhere (checked, so the test can fail).
 * Values stay far from f32's subnormals, where the instruction flushes.
 *
 * Skipped on a host without AVX512_BF16 (the kernel cannot run there);
 * test_backend.c checks both paths against the reference everywhere.
 * These products run with AG_NO_AMX=1: on an AMX host the compiled code
 * would otherwise take the AMX kernel.
 *
 * The AMX kernel (runtime/kernels/bf16mm_amx.c, through the compiled code
 * and directly) does not follow one f32 order that a scalar model can
 * replay (docs/runtime.md): its tests hold each c[i,j] to the bound any
 * order of f32 additions keeps, |F - S| <= (k + 1) * 2^-24 * sum |a b|
 * around the exact sum S, then one rounding to bf16. For most elements
 * that interval rounds to a single bf16 value, so a wrong bit fails
 * (the tests check that such elements are the majority). Skipped,
 * with the reason printed, where the process cannot use AMX.
 */
#include "test_util.h"

#include "bf16mm_amx.h"
#include "cg_runtime.h"
#include "cg_util.h"
#include "ir.h"
#include "rt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* A bf16 in sign x (1 + mant/128) x 2^(-6 .. 6), from a fixed sequence. */
static uint16_t next_bf16(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    uint32_t r = *s >> 8;
    uint32_t sign = r & 1, mant = (r >> 1) & 127, exp = 127 - 6 + (r >> 8) % 13;
    return (uint16_t)(sign << 15 | exp << 7 | mant);
}

static float widen(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* c[i,j] in the documented order of the dot-product path. volatile keeps
 * every add a separate f32 rounding (no contraction, no reassociation). */
static float dot_order(const uint16_t *a, const uint16_t *b, int k, int n, int i, int j)
{
    volatile float acc = 0.0f;
    for (int p = 0; p < k; p += 2) {
        float second = p + 1 < k ? widen(a[i * k + p + 1]) * widen(b[(p + 1) * n + j]) : 0.0f;
        acc = acc + second;
        acc = acc + widen(a[i * k + p]) * widen(b[p * n + j]);
    }
    return acc;
}

/* The same sum in order p = 0 .. k-1: what the kernel must not compute. */
static float serial_order(const uint16_t *a, const uint16_t *b, int k, int n, int i, int j)
{
    volatile float acc = 0.0f;
    for (int p = 0; p < k; p++)
        acc = acc + widen(a[i * k + p]) * widen(b[p * n + j]);
    return acc;
}

static rt_value *bf16_value(int rows, int cols, uint32_t seed, uint16_t **bits)
{
    rt_value *v = rt_value_new(AG_BF16, &AG_SHAPE(rows, cols));
    uint16_t *d = v->data;
    for (int i = 0; i < rows * cols; i++)
        d[i] = next_bf16(&seed);
    *bits = d;
    return v;
}

/* AG_NO_AMX as the program started (`had_no_amx`: it was set), put back
 * after each test that changes it, so that a run with AG_NO_AMX=1 keeps
 * the AMX tests skipped. */
static char initial_no_amx[64];
static bool had_no_amx;

static void restore_no_amx(void)
{
    if (had_no_amx)
        setenv("AG_NO_AMX", initial_no_amx, 1);
    else
        unsetenv("AG_NO_AMX");
    rt_config_reload_env();
}

/* c = a x b for the CPU o names (NULL: the host), parsed and compiled. */
static cg_code *compile_product(int m, int k, int n, const char *cpu, ir_function **fn)
{
    char text[512];
    snprintf(text, sizeof text,
             "func @f(%%0: bf16[%d,%d], %%1: bf16[%d,%d]) -> (bf16[%d,%d]) {\n"
             "  %%2 = matmul(%%0, %%1) : bf16[%d,%d]\n  return %%2\n}\n",
             m, k, k, n, m, n, m, n);
    char err[512];
    *fn = ir_parse(text, "test.ir", err, sizeof err);
    if (!*fn)
        fail_msg("parse: %s", err);
    cg_code *code = tu_compile_for(*fn, cpu, err, sizeof err);
    if (!code)
        fail_msg("bf16 matmul %dx%dx%d: %s", m, k, n, err);
    return code;
}

/* Runs code on a and b; the result value (the caller frees it). */
static rt_value *run_product(cg_code *code, rt_value *a, rt_value *b)
{
    rt_value *args[2] = {a, b}, *res[1] = {NULL};
    assert_true(cg_run(code, args, 2, res));
    return res[0];
}

/* c = a x b compiled for the host, run on the dot-product path
 * (AG_NO_AMX=1); 0 differences from dot_order. Returns how many elements
 * serial_order gets wrong. */
/* c = a x b compiled for the host, whose code must name `calls`, and
 * its operands (fixed seeds per shape). */
typedef struct product {
    ir_function *fn;
    cg_code *code;
    uint16_t *a, *b;
    rt_value *av, *bv;
} product;

static product product_new(int m, int k, int n, const char *calls)
{
    product P;
    P.code = compile_product(m, k, n, NULL, &P.fn);
    assert_true(module_has(P.code, calls));
    P.av = bf16_value(m, k, 17u + (uint32_t)k, &P.a);
    P.bv = bf16_value(k, n, 29u + (uint32_t)n, &P.b);
    return P;
}

static void product_free(product *P)
{
    rt_value_free(P->av);
    rt_value_free(P->bv);
    tu_code_free(P->code);
    ir_function_free(P->fn);
}

static int check_shape(int m, int k, int n)
{
    product P = product_new(m, k, n, "dpbf16ps");
    const uint16_t *a = P.a, *b = P.b;
    setenv("AG_NO_AMX", "1", 1);
    rt_config_reload_env();
    rt_value *res = run_product(P.code, P.av, P.bv);
    restore_no_amx();
    const uint16_t *c = res->data;
    int wrong_serial = 0;
    for (int i = 0; i < m; i++) {
        for (int j = 0; j < n; j++) {
            uint16_t want = ag_f32_to_bf16(dot_order(a, b, k, n, i, j));
            if (c[i * n + j] != want)
                fail_msg("%dx%dx%d: c[%d,%d] = 0x%04x, the documented order gives 0x%04x", m,
                         k, n, i, j, c[i * n + j], want);
            wrong_serial += ag_f32_to_bf16(serial_order(a, b, k, n, i, j)) != want;
        }
    }
    rt_value_free(res);
    product_free(&P);
    return wrong_serial;
}

static void skip_without_bf16_dot(void)
{
    cg_machine host = {0};
    if (!cg_has_bf16_dot(&host))
        skip();
}

/* One tile of rows (b interleaved where read) and several (b packed). */
static void test_small_shapes_follow_the_documented_order(void **state)
{
    (void)state;
    skip_without_bf16_dot();
    static const int shapes[][3] = {
        {1, 1, 1},   {1, 2, 16},  {6, 7, 5},    /* one tile, odd k, n < 16 */
        {7, 5, 3},   {13, 33, 130},             /* rows left over, a 2-column block */
        {12, 64, 64}, {20, 9, 63}, {9, 40, 80}, /* whole tiles, n < 64, 64 + 16 */
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        check_shape(shapes[i][0], shapes[i][1], shapes[i][2]);
}

/* Products that run in parallel chunks of 64 columns, each chunk packing
 * its own blocks of b: the MLP's first layer, and a shape whose last
 * chunk is the 8-column tail. The inputs tell the orders apart. */
static void test_parallel_products_follow_the_documented_order(void **state)
{
    (void)state;
    skip_without_bf16_dot();
    assert_true(check_shape(64, 784, 512) > 0);
    assert_true(check_shape(70, 301, 200) > 0);
}

/* ------------------------------------------------------------- AMX */

static void skip_without_amx(void)
{
    const char *why = rt_bf16mm_amx_why_not();
    if (why) {
        printf("[  SKIPPED ] AMX not tested: %s\n", why);
        skip();
    }
}

/* Elements checked, and those whose interval rounds to one bf16 value. */
typedef struct tally {
    int total, decisive;
} tally;

/* c[i,j] must be the bf16 rounding of an f32 within (k + 1) * 2^-24 *
 * sum |a b| of the exact sum S (long double holds these sums exactly). */
static void check_bound(const uint16_t *a, const uint16_t *b, const uint16_t *c, int m, int k,
                        int n, tally *t)
{
    for (int i = 0; i < m; i++) {
        for (int j = 0; j < n; j++) {
            long double sum = 0, mag = 0;
            for (int p = 0; p < k; p++) {
                long double prod = (long double)widen(a[i * k + p]) * widen(b[p * n + j]);
                sum += prod;
                mag += fabsl(prod);
            }
            long double err = (long double)(k + 1) * 0x1p-24L * mag;
            uint16_t lo = ag_f32_to_bf16(nextafterf((float)(sum - err), -INFINITY));
            uint16_t hi = ag_f32_to_bf16(nextafterf((float)(sum + err), INFINITY));
            float got = widen(c[i * n + j]);
            if (!(widen(lo) <= got && got <= widen(hi)))
                fail_msg("%dx%dx%d: c[%d,%d] = %g, outside [%g, %g] around the exact %Lg", m, k,
                         n, i, j, (double)got, (double)widen(lo), (double)widen(hi), sum);
            t->total++;
            t->decisive += lo == hi;
        }
    }
}

/* The kernel called directly, its columns in two calls (panels 0 and 1,
 * then the rest) as parallel chunks would. */
static void amx_direct(const uint16_t *a, const uint16_t *b, uint16_t *c, int m, int k, int n)
{
    rt_bf16mm_amx p;
    assert_true(rt_bf16mm_amx_begin(&p, a, b, c, m, k, n));
    int64_t split = n > 2 * RT_BF16MM_AMX_PANEL ? 2 * RT_BF16MM_AMX_PANEL : n;
    rt_bf16mm_amx_columns(&p, 0, split);
    rt_bf16mm_amx_columns(&p, split, n);
    rt_bf16mm_amx_end(&p);
}

/* The same with b packed first (rt_bf16mm_amx_pack), as compiled code
 * passes a constant weight. */
static void amx_packed(const uint16_t *a, const uint16_t *b, uint16_t *c, int m, int k, int n)
{
    uint16_t *packed = malloc(rt_bf16mm_amx_packed_elems(k, n) * sizeof *packed);
    rt_bf16mm_amx_pack(b, k, n, packed);
    rt_bf16mm_amx p;
    assert_true(rt_bf16mm_amx_begin_packed(&p, a, packed, c, m, k, n));
    int64_t split = n > 2 * RT_BF16MM_AMX_PANEL ? 2 * RT_BF16MM_AMX_PANEL : n;
    rt_bf16mm_amx_columns(&p, 0, split);
    rt_bf16mm_amx_columns(&p, split, n);
    rt_bf16mm_amx_end(&p);
    free(packed);
}

/* Shapes around the tiles (16 rows, 16 and 32 columns, 32 of k): below
 * one tile, one more than a tile, odd k, k < 32, a used in place (rows a
 * multiple of 16, k of 32), columns split over calls. */
static void test_amx_kernel_awkward_shapes_within_the_bound(void **state)
{
    (void)state;
    skip_without_amx();
    static const int shapes[][3] = {
        {1, 1, 1},    {5, 7, 3},    {16, 32, 16},  {17, 33, 17}, {31, 63, 33},
        {32, 64, 32}, {16, 31, 40}, {33, 1, 65},   {48, 96, 100}, {40, 257, 130},
    };
    tally t = {0};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int m = shapes[s][0], k = shapes[s][1], n = shapes[s][2];
        uint16_t *a, *b;
        rt_value *av = bf16_value(m, k, 41u + (uint32_t)k, &a);
        rt_value *bv = bf16_value(k, n, 53u + (uint32_t)n, &b);
        uint16_t *c = calloc((size_t)(m * n), sizeof *c);
        uint16_t *cp = calloc((size_t)(m * n), sizeof *cp);
        amx_direct(a, b, c, m, k, n);
        check_bound(a, b, c, m, k, n, &t);
        amx_packed(a, b, cp, m, k, n); /* b packed once: the same bits */
        assert_memory_equal(c, cp, (size_t)(m * n) * sizeof *c);
        free(c);
        free(cp);
        rt_value_free(av);
        rt_value_free(bv);
    }
    printf("AMX kernel: %d of %d elements had a single allowed bf16 value\n", t.decisive,
           t.total);
    assert_true(t.decisive > t.total / 2);
}

/* Compiled code for the host calls the kernel (in parallel chunks for
 * the MLP's first layer): the module names it, the results are the
 * kernel's bit for bit and within the bound. */
static void check_compiled_amx(int m, int k, int n)
{
    product P = product_new(m, k, n, "cg_rt_matmul_bf16_amx");
    const uint16_t *a = P.a, *b = P.b;
    rt_value *res = run_product(P.code, P.av, P.bv);
    uint16_t *direct = calloc((size_t)(m * n), sizeof *direct);
    amx_direct(a, b, direct, m, k, n);
    assert_memory_equal(res->data, direct, (size_t)(m * n) * sizeof *direct);
    tally t = {0};
    check_bound(a, b, res->data, m, k, n, &t);
    int other = 0;
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++)
            other += direct[i * n + j] != ag_f32_to_bf16(dot_order(a, b, k, n, i, j));
    printf("AMX %dx%dx%d: %d of %d elements single-valued; %d differ from vdpbf16ps's order\n",
           m, k, n, t.decisive, t.total, other);
    assert_true(t.decisive > t.total / 2);
    free(direct);
    rt_value_free(res);
    product_free(&P);
}

static void test_compiled_products_use_amx(void **state)
{
    (void)state;
    skip_without_bf16_dot();
    skip_without_amx();
    check_compiled_amx(64, 784, 512);
    check_compiled_amx(70, 301, 200);
    check_compiled_amx(16, 32, 10);
}

/* c = a x b with b a constant of the graph (a weight it captured),
 * compiled for the CPU cpu names (NULL: the host); *b its bits. */
static cg_code *compile_constant_product(int m, int k, int n, const char *cpu,
                                         ir_function **fn, const uint16_t **b)
{
    size_t len = 256 + (size_t)k * (size_t)n * 8;
    char *text = malloc(len);
    int at = snprintf(text, len,
                      "func @f(%%0: bf16[%d,%d]) -> (bf16[%d,%d]) {\n  %%1 = const() {value = [",
                      m, k, m, n);
    for (int i = 0; i < k * n; i++) /* multiples of 1/8 in [-1, 1]: exact in bf16 */
        at += snprintf(text + at, len - (size_t)at, "%s%g", i ? ", " : "",
                       (double)((i * 7 + i / n * 3) % 17 - 8) / 8);
    snprintf(text + at, len - (size_t)at,
             "]} : bf16[%d,%d]\n  %%2 = matmul(%%0, %%1) : bf16[%d,%d]\n  return %%2\n}\n", k,
             n, m, n);
    char err[512];
    *fn = ir_parse(text, "test.ir", err, sizeof err);
    free(text);
    if (!*fn)
        fail_msg("parse: %s", err);
    cg_code *code = tu_compile_for(*fn, cpu, err, sizeof err);
    if (!code)
        fail_msg("%s", err);
    *b = NULL;
    for (const ir_node *x = (*fn)->body->first; x && !*b; x = x->next)
        if (x->opcode == RT_OP_CONST)
            *b = x->attrs.literal->data;
    assert_non_null(*b);
    return code;
}

/* A constant b: the compiled code holds it packed (amx_packed) and gives
 * the kernel's bits. */
static void check_constant_weight(int m, int k, int n)
{
    ir_function *fn;
    const uint16_t *b;
    cg_code *code = compile_constant_product(m, k, n, NULL, &fn, &b);
    assert_true(module_has(code, "amx_packed"));
    uint16_t *a;
    rt_value *av = bf16_value(m, k, 71u + (uint32_t)k, &a);
    rt_value *args[1] = {av}, *res[1] = {NULL};
    assert_true(cg_run(code, args, 1, res));
    uint16_t *direct = calloc((size_t)(m * n), sizeof *direct);
    amx_direct(a, b, direct, m, k, n);
    assert_memory_equal(res[0]->data, direct, (size_t)(m * n) * sizeof *direct);
    free(direct);
    rt_value_free(res[0]);
    rt_value_free(av);
    tu_code_free(code);
    ir_function_free(fn);
}

static void test_constant_weights_are_packed_once(void **state)
{
    (void)state;
    skip_without_bf16_dot();
    skip_without_amx();
    check_constant_weight(20, 45, 70);
    check_constant_weight(64, 256, 96);
}

/* On the dot-product path (code that never calls the AMX kernel: for a
 * named CPU, or fewer rows than a tile), a constant b is packed when
 * compiling too (dot_packed), and gives the bits of the same product with
 * b passed in, which packs b per call. */
static void check_constant_weight_dot(int m, int k, int n, const char *cpu)
{
    ir_function *fn, *fn_arg;
    const uint16_t *b;
    cg_code *code = compile_constant_product(m, k, n, cpu, &fn, &b);
    assert_true(module_has(code, "dot_packed"));
    assert_false(module_has(code, "cg_rt_matmul_bf16_amx"));
    cg_code *with_arg = compile_product(m, k, n, cpu, &fn_arg);
    uint16_t *a;
    rt_value *av = bf16_value(m, k, 83u + (uint32_t)k, &a);
    ag_shape bs = AG_SHAPE(k, n);
    rt_value *bv = rt_value_new(AG_BF16, &bs);
    memcpy(bv->data, b, (size_t)(k * n) * sizeof *b);
    rt_value *args[1] = {av}, *res[1] = {NULL};
    assert_true(cg_run(code, args, 1, res));
    rt_value *want = run_product(with_arg, av, bv);
    assert_memory_equal(res[0]->data, want->data, (size_t)(m * n) * sizeof(uint16_t));
    rt_value_free(want);
    rt_value_free(res[0]);
    rt_value_free(av);
    rt_value_free(bv);
    tu_code_free(with_arg);
    tu_code_free(code);
    ir_function_free(fn_arg);
    ir_function_free(fn);
}

static void test_constant_weights_packed_for_the_dot_path(void **state)
{
    (void)state;
    skip_without_bf16_dot();
    const char *spr = "sapphirerapids";
    check_constant_weight_dot(10, 45, 70, NULL); /* this host, too few rows for AMX */
    check_constant_weight_dot(64, 257, 130, spr);
    check_constant_weight_dot(7, 64, 64, spr);
}

/* AG_NO_AMX turns the kernel off (read at each product), "0" does not. */
static void test_ag_no_amx_switches_amx_off(void **state)
{
    (void)state;
    skip_without_amx();
    uint16_t a[1] = {0x3f80}, b[1] = {0x4000}, c[1] = {0};
    rt_bf16mm_amx p;
    setenv("AG_NO_AMX", "1", 1);
    rt_config_reload_env();
    assert_false(rt_bf16mm_amx_usable());
    assert_string_equal(rt_bf16mm_amx_why_not(), "AG_NO_AMX is set");
    assert_false(rt_bf16mm_amx_begin(&p, a, b, c, 1, 1, 1));
    assert_int_equal(cg_rt_matmul_bf16_amx(a, b, NULL, c, 1, 1, 1, 1), 0);
    assert_int_equal(c[0], 0);
    setenv("AG_NO_AMX", "0", 1);
    rt_config_reload_env();
    assert_true(rt_bf16mm_amx_usable());
    restore_no_amx(); /* unset or "0": skip_without_amx passed */
    assert_int_equal(cg_rt_matmul_bf16_amx(a, b, NULL, c, 1, 1, 1, 1), 1);
    assert_int_equal(c[0], 0x4000); /* 1 x 2 */
}

/* Only code for this host may call the kernel: not code for a CPU that
 * AG_CPU or agc --cpu names (it may run elsewhere), nor small products. */
static void test_amx_only_in_code_for_this_host(void **state)
{
    (void)state;
    skip_without_bf16_dot();
    const char *spr = "sapphirerapids";
    ir_function *fn;
    cg_code *code = compile_product(64, 64, 64, spr, &fn);
    assert_true(module_has(code, "dpbf16ps"));
    assert_false(module_has(code, "cg_rt_matmul_bf16_amx"));
    tu_code_free(code);
    ir_function_free(fn);
    code = compile_product(64, 64, 64, NULL, &fn);
    assert_true(module_has(code, "cg_rt_matmul_bf16_amx"));
    tu_code_free(code);
    ir_function_free(fn);
    code = compile_product(15, 64, 64, NULL, &fn); /* fewer rows than a tile */
    assert_false(module_has(code, "cg_rt_matmul_bf16_amx"));
    tu_code_free(code);
    ir_function_free(fn);
}

int main(void)
{
    const char *no_amx = getenv("AG_NO_AMX");
    had_no_amx = no_amx != NULL;
    snprintf(initial_no_amx, sizeof initial_no_amx, "%s", no_amx ? no_amx : "");
    const struct CMUnitTest tests[] = {
        TU_TEST(test_small_shapes_follow_the_documented_order),
        TU_TEST(test_parallel_products_follow_the_documented_order),
        TU_TEST(test_amx_kernel_awkward_shapes_within_the_bound),
        TU_TEST(test_compiled_products_use_amx),
        TU_TEST(test_constant_weights_are_packed_once),
        TU_TEST(test_constant_weights_packed_for_the_dot_path),
        TU_TEST(test_ag_no_amx_switches_amx_off),
        TU_TEST(test_amx_only_in_code_for_this_host),
    };
    TU_RUN(tests);
}
