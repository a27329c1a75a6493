/*
 * test_qgemm.c - the int8 product's paths (runtime/kernels/qgemm.h) bit
 * for bit against the scalar one, and the scalar one against sums in
 * int64 where they fit int32.
 *
 * Shapes with ragged edges for every kernel (6 or 4 rows x 64 or 16
 * columns, k in groups of 4 or 2): m, n, k not multiples of those, k = 1,
 * n = 1, whole panels; random values over all of int8 and zero points
 * over [-128, 127]; and k = RT_QGEMM_MAX_K with the extreme values
 * (-128 - 127) * -128 and (127 + 128) * -128 in every product, whose sums
 * sit right at the int32 bound. Each vector path this CPU cannot run is
 * skipped with the reason printed; each one run is printed too. Every
 * product is also run with b packed ahead (rt_qgemm_pack, as the cpu
 * target packs constant weights when compiling): the same bits.
 */
#include "test_util.h"

#include "cg_runtime.h"
#include "config.h"
#include "qgemm.h"

static uint64_t rng = 0x9E3779B97F4A7C15u;

static int8_t random_i8(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (int8_t)(rng >> 24);
}

/* The definition, in int64: the oracle of the scalar path. */
static int64_t exact_sum(const int8_t *a, int32_t z, const int8_t *b, int64_t n, int64_t k,
                         int64_t i, int64_t j)
{
    int64_t s = 0;
    for (int64_t p = 0; p < k; p++)
        s += ((int64_t)a[i * k + p] - z) * b[p * n + j];
    return s;
}

/* The product with b packed ahead for kind: read (a vector path), and
 * the scalar bits `want`. */
static void check_packed(rt_qgemm_kind kind, int64_t m, int64_t n, int64_t k, const int8_t *a,
                         int32_t z, const int8_t *b, const int32_t *want)
{
    size_t bytes = rt_qgemm_packed_bytes(kind, k, n);
    if (!bytes)
        return assert_int_equal(kind, RT_QGEMM_SCALAR);
    void *packed = aligned_alloc(64, (bytes + 63) / 64 * 64);
    int32_t *got = malloc((size_t)(m * n) * sizeof *got);
    assert_non_null(packed);
    assert_non_null(got);
    rt_qgemm_pack(kind, b, k, n, packed);
    rt_qgemm p;
    assert_true(rt_qgemm_begin(&p, kind, m, n, k, a, z, b, got));
    assert_true(rt_qgemm_use_packed(&p, packed));
    rt_qgemm_end(&p);
    memset(got, 0x5A, (size_t)(m * n) * sizeof *got);
    rt_qgemm_s8_packed(kind, m, n, k, a, z, b, packed, got);
    for (int64_t e = 0; e < m * n; e++)
        if (got[e] != want[e])
            fail_msg("%s packed %lldx%lldx%lld z=%d: c[%lld,%lld] = %d, scalar %d",
                     rt_qgemm_kind_name(kind), (long long)m, (long long)n, (long long)k, z,
                     (long long)(e / n), (long long)(e % n), got[e], want[e]);
    free(packed);
    free(got);
}

/* kind's product of a and b equals the scalar one, which equals the
 * definition (every element when the shape is small, a sample else);
 * with `packed`, so does the product reading b packed ahead. */
static void check_product(rt_qgemm_kind kind, int64_t m, int64_t n, int64_t k, const int8_t *a,
                          int32_t z, const int8_t *b, bool packed)
{
    int32_t *want = malloc((size_t)(m * n) * sizeof *want);
    int32_t *got = malloc((size_t)(m * n) * sizeof *got);
    assert_non_null(want);
    assert_non_null(got);
    rt_qgemm_s8_scalar(m, n, k, a, z, b, want);
    memset(got, 0x5A, (size_t)(m * n) * sizeof *got);
    rt_qgemm_s8_on(kind, m, n, k, a, z, b, got);
    if (packed)
        check_packed(kind, m, n, k, a, z, b, want);
    int64_t step = m * n * k > 4000000 ? 7 : 1;
    for (int64_t e = 0; e < m * n; e += step)
        if (want[e] != exact_sum(a, z, b, n, k, e / n, e % n))
            fail_msg("scalar %lldx%lldx%lld z=%d: c[%lld] = %d, the sum is %lld", (long long)m,
                     (long long)n, (long long)k, z, (long long)e, want[e],
                     (long long)exact_sum(a, z, b, n, k, e / n, e % n));
    for (int64_t e = 0; e < m * n; e++)
        if (got[e] != want[e])
            fail_msg("%s %lldx%lldx%lld z=%d: c[%lld,%lld] = %d, scalar %d",
                     rt_qgemm_kind_name(kind), (long long)m, (long long)n, (long long)k, z,
                     (long long)(e / n), (long long)(e % n), got[e], want[e]);
    free(want);
    free(got);
}

static void check_random(rt_qgemm_kind kind, int64_t m, int64_t n, int64_t k, int32_t z,
                         bool packed)
{
    int8_t *a = malloc((size_t)(m * k)), *b = malloc((size_t)(k * n));
    assert_non_null(a);
    assert_non_null(b);
    for (int64_t e = 0; e < m * k; e++)
        a[e] = random_i8();
    for (int64_t e = 0; e < k * n; e++)
        b[e] = random_i8();
    check_product(kind, m, n, k, a, z, b, packed);
    free(a);
    free(b);
}

/* Every product (a - z) * b the same extreme value: k of them sum to
 * +-32640 * 65793 = +-2147483520, the edge of int32. */
static void check_extreme(rt_qgemm_kind kind, int64_t m, int64_t n, int8_t av, int32_t z)
{
    int64_t k = RT_QGEMM_MAX_K;
    int8_t *a = malloc((size_t)(m * k)), *b = malloc((size_t)(k * n));
    assert_non_null(a);
    assert_non_null(b);
    memset(a, (uint8_t)av, (size_t)(m * k));
    memset(b, 0x80, (size_t)(k * n)); /* -128 */
    check_product(kind, m, n, k, a, z, b, true);
    free(a);
    free(b);
}

static void check_path(rt_qgemm_kind kind)
{
    const char *why = rt_qgemm_why_not(kind);
    if (why) {
        printf("[  SKIPPED ] qgemm path %s not tested: %s\n", rt_qgemm_kind_name(kind), why);
        skip();
    }
    printf("[ RUN PATH ] qgemm path %s\n", rt_qgemm_kind_name(kind));
    static const int64_t shapes[][3] = {
        {1, 1, 1},   {1, 1, 5},    {6, 64, 4},   {7, 13, 5},   {5, 1, 1023}, {13, 67, 33},
        {17, 130, 3}, {4, 16, 2},  {3, 17, 1},   {12, 128, 64}, {64, 10, 512}, {9, 200, 131},
        {2, 63, 7},  {11, 65, 6},  {64, 96, 785},
    };
    static const int32_t zeros[] = {0, -128, 127, 5, -3};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        check_random(kind, shapes[s][0], shapes[s][1], shapes[s][2], zeros[s % 5], true);
    check_extreme(kind, 3, 70, -128, 127);  /* (-255) * (-128): the top */
    check_extreme(kind, 2, 17, 127, -128);  /* 255 * (-128): the bottom */
    check_extreme(kind, 1, 1, -128, -128);  /* 0 */
}

static void test_scalar(void **state)
{
    (void)state;
    check_path(RT_QGEMM_SCALAR);
}

static void test_avx2(void **state)
{
    (void)state;
    check_path(RT_QGEMM_AVX2);
}

static void test_avx_vnni(void **state)
{
    (void)state;
    check_path(RT_QGEMM_AVX_VNNI);
}

static void test_avx512_vnni(void **state)
{
    (void)state;
    check_path(RT_QGEMM_AVX512_VNNI);
}

/* The real tiles; test_qgemm_amx runs the same kernel on emulated ones. */
static void test_amx(void **state)
{
    (void)state;
    check_path(RT_QGEMM_AMX);
}

/* A block packed for another path, k or n is not read: the product packs
 * b itself (and a block for this one is). */
static void test_packed_must_fit(void **state)
{
    (void)state;
    rt_qgemm_kind kind = rt_qgemm_chosen();
    if (kind == RT_QGEMM_SCALAR) {
        printf("[  SKIPPED ] no vector path here: nothing is packed\n");
        skip();
    }
    int64_t m = 5, n = 70, k = 33;
    int8_t a[5 * 33] = {1}, b[33 * 71] = {2}; /* room for the n + 1 columns */
    int32_t c[5 * 70];
    void *packed = aligned_alloc(64, (rt_qgemm_packed_bytes(kind, k, n + 1) + 63) / 64 * 64);
    rt_qgemm p;
    rt_qgemm_pack(kind, b, k, n + 1, packed); /* another n */
    assert_true(rt_qgemm_begin(&p, kind, m, n, k, a, 0, b, c));
    assert_false(rt_qgemm_use_packed(&p, packed));
    assert_false(rt_qgemm_use_packed(&p, NULL));
    assert_null(p.b_panels);
    rt_qgemm_end(&p);
    rt_qgemm_pack(kind, b, k, n, packed);
    assert_true(rt_qgemm_begin(&p, RT_QGEMM_SCALAR, m, n, k, a, 0, b, c)); /* another path */
    assert_false(rt_qgemm_use_packed(&p, packed));
    rt_qgemm_end(&p);
    assert_true(rt_qgemm_begin(&p, kind, m, n, k, a, 0, b, c));
    assert_true(rt_qgemm_use_packed(&p, packed));
    rt_qgemm_end(&p);
    free(packed);
}

/* A product in chunks of columns, as a caller running threads does:
 * every split gives the whole product's bits. */
static void test_columns_in_chunks(void **state)
{
    (void)state;
    rt_qgemm_kind kind = rt_qgemm_chosen();
    int64_t m = 19, n = 300, k = 77;
    int8_t *a = malloc((size_t)(m * k)), *b = malloc((size_t)(k * n));
    int32_t *want = malloc((size_t)(m * n) * 4), *got = malloc((size_t)(m * n) * 4);
    for (int64_t e = 0; e < m * k; e++)
        a[e] = random_i8();
    for (int64_t e = 0; e < k * n; e++)
        b[e] = random_i8();
    rt_qgemm_s8_scalar(m, n, k, a, -7, b, want);
    rt_qgemm p;
    assert_true(rt_qgemm_begin(&p, kind, m, n, k, a, -7, b, got));
    rt_qgemm_columns(&p, 128, n);
    rt_qgemm_columns(&p, 64, 128);
    rt_qgemm_columns(&p, 0, 64);
    rt_qgemm_end(&p);
    assert_memory_equal(got, want, (size_t)(m * n) * 4);
    free(a);
    free(b);
    free(want);
    free(got);
}

/* The cpu target's thread pool, counting the products handed to it. */
static int parallel_calls;
static void counting_parallel_for(rt_qgemm_body body, void *ctx, int64_t n, int64_t grain)
{
    parallel_calls++;
    cg_rt_parallel_for(body, ctx, n, grain);
}

/* Large products run in column chunks on the cpu target's threads
 * (through rt_qgemm_parallel_hook) with the serial bits; small ones stay
 * on the calling thread. */
static void test_large_products_run_in_parallel(void **state)
{
    (void)state;
    rt_qgemm_parallel_fn saved = rt_qgemm_parallel_hook;
    rt_qgemm_parallel_hook = counting_parallel_for;
    parallel_calls = 0;
    printf("[  THREADS ] the cpu target's pool: %d threads\n", cg_rt_num_threads());
    check_random(rt_qgemm_chosen(), 64, 330, 784, 9, false); /* 16.6M multiply-adds */
    assert_int_equal(parallel_calls, 1);
    check_random(rt_qgemm_chosen(), 64, 10, 512, 9, false); /* 0.3M */
    check_random(rt_qgemm_chosen(), 512, 64, 512, 9, false); /* one panel of columns */
    assert_int_equal(parallel_calls, 1);
    rt_qgemm_parallel_hook = saved;
}

/* AG_QGEMM_PATH forces a path (through the setter layer here); a name
 * the CPU cannot run, or no path's name, gives the scalar path. */
static void test_path_can_be_forced(void **state)
{
    (void)state;
    rt_config_set(RT_CFG_QGEMM_PATH, NULL);
    rt_qgemm_kind fastest = rt_qgemm_chosen();
    assert_null(rt_qgemm_why_not(fastest));
    for (int kind = fastest + 1; kind < RT_QGEMM_NUM_KINDS; kind++)
        assert_non_null(rt_qgemm_why_not((rt_qgemm_kind)kind));
    printf("[     PATH ] qgemm fastest path here: %s\n", rt_qgemm_path());
    for (int kind = RT_QGEMM_SCALAR; kind < RT_QGEMM_NUM_KINDS; kind++) {
        rt_config_set(RT_CFG_QGEMM_PATH, rt_qgemm_kind_name((rt_qgemm_kind)kind));
        rt_qgemm_kind want = rt_qgemm_why_not((rt_qgemm_kind)kind) ? RT_QGEMM_SCALAR
                                                                 : (rt_qgemm_kind)kind;
        assert_int_equal(rt_qgemm_chosen(), want);
    }
    rt_config_set(RT_CFG_QGEMM_PATH, "avx9000");
    assert_string_equal(rt_qgemm_path(), "scalar");
    rt_config_set(RT_CFG_QGEMM_PATH, NULL);
    assert_int_equal(rt_qgemm_chosen(), fastest);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_scalar),          TU_TEST(test_avx2),
        TU_TEST(test_avx_vnni),        TU_TEST(test_avx512_vnni),
        TU_TEST(test_amx),             TU_TEST(test_packed_must_fit),
        TU_TEST(test_columns_in_chunks), TU_TEST(test_large_products_run_in_parallel),
        TU_TEST(test_path_can_be_forced),
    };
    TU_RUN(tests);
}
