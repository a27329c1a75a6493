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
 */
#include "test_util.h"

#include "cg_util.h"
#include "ir.h"
#include "rt.h"

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

/* c = a x b compiled for the host; 0 differences from dot_order. Returns
 * how many elements serial_order gets wrong. */
static int check_shape(int m, int k, int n)
{
    char text[512];
    snprintf(text, sizeof text,
             "func @f(%%0: bf16[%d,%d], %%1: bf16[%d,%d]) -> (bf16[%d,%d]) {\n"
             "  %%2 = matmul(%%0, %%1) : bf16[%d,%d]\n  return %%2\n}\n",
             m, k, k, n, m, n, m, n);
    char err[512];
    ir_function *fn = ir_parse(text, "test.ir", err, sizeof err);
    if (!fn)
        fail_msg("parse: %s", err);
    cg_code *code = tu_compile(fn, err, sizeof err);
    if (!code)
        fail_msg("bf16 matmul %dx%dx%d: %s", m, k, n, err);
    char *ir = cg_module_text(code);
    assert_non_null(strstr(ir, "dpbf16ps"));
    free(ir);
    uint16_t *a, *b;
    rt_value *args[2] = {bf16_value(m, k, 17u + (uint32_t)k, &a),
                         bf16_value(k, n, 29u + (uint32_t)n, &b)};
    rt_value *res[1] = {NULL};
    assert_true(cg_run(code, args, 2, res));
    const uint16_t *c = res[0]->data;
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
    rt_value_free(res[0]);
    rt_value_free(args[0]);
    rt_value_free(args[1]);
    tu_code_free(code);
    ir_function_free(fn);
    return wrong_serial;
}

static void skip_without_bf16_dot(void)
{
    tgt_options host = {0};
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_small_shapes_follow_the_documented_order),
        TU_TEST(test_parallel_products_follow_the_documented_order),
    };
    TU_RUN(tests);
}
