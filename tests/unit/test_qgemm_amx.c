/*
 * test_qgemm_amx.c - the AMX int8 path's kernel (runtime/kernels/
 * qgemm_amx.inc) on a plain C emulation of the tile instructions, bit for
 * bit against the scalar path, so that its packing, tiling, edges and
 * zero-point correction are tested on CPUs without AMX (test_qgemm runs
 * the real instructions where the CPU has them).
 *
 * The emulation is the instructions' definition: eight tiles of 16 rows
 * of 64 bytes; tileloadd copies 16 rows `stride` bytes apart; tdpbusd
 * adds to each int32 c[r][j] the 64 products of the unsigned bytes of a's
 * row r with the signed bytes of b's column j (4 per group row q), modulo
 * 2^32; tilestored copies 16 rows out. The product runs through
 * rt_qgemm_begin with the AMX kind (its packing of a, rows and groups
 * padded to 16), b packed per panel by the kernel or ahead by
 * rt_qgemm_pack, with and without an epilogue.
 */
#include "test_util.h"

#include "qgemm_impl.h"

#if defined(__x86_64__)

enum { TILE_ROWS = 16, TILE_BYTES = 64 };
static uint8_t tiles[8][TILE_ROWS][TILE_BYTES];
static bool configured; /* between QA_CONFIG and QA_RELEASE */
static int64_t dpbusd_count;

static void emu_load(int t, const void *base, int64_t stride)
{
    assert_true(configured);
    for (int r = 0; r < TILE_ROWS; r++)
        memcpy(tiles[t][r], (const uint8_t *)base + r * stride, TILE_BYTES);
}

static void emu_store(int t, void *base, int64_t stride)
{
    assert_true(configured);
    for (int r = 0; r < TILE_ROWS; r++)
        memcpy((uint8_t *)base + r * stride, tiles[t][r], TILE_BYTES);
}

static void emu_dpbusd(int c, int a, int b)
{
    assert_true(configured);
    for (int r = 0; r < TILE_ROWS; r++)
        for (int j = 0; j < TILE_BYTES / 4; j++) {
            uint32_t acc;
            memcpy(&acc, &tiles[c][r][4 * j], 4);
            for (int q = 0; q < TILE_ROWS; q++)
                for (int t = 0; t < 4; t++)
                    acc += (uint32_t)tiles[a][r][4 * q + t] * (uint32_t)(int8_t)tiles[b][q][4 * j + t];
            memcpy(&tiles[c][r][4 * j], &acc, 4);
        }
    dpbusd_count++;
}

#define QA_FN(name) name##_emu
#define QA_ATTR
#define QA_CONFIG() (configured = true)
#define QA_RELEASE() (configured = false)
#define QA_ZERO(t) memset(tiles[t], 0, sizeof tiles[t])
#define QA_LOAD(t, base, stride) emu_load(t, base, stride)
#define QA_DPBUSD(c, a, b) emu_dpbusd(c, a, b)
#define QA_STORE(t, base, stride) emu_store(t, base, stride)
#include "qgemm_amx.inc"

static uint64_t rng = 0x2545F4914F6CDD1Du;

static int8_t random_i8(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (int8_t)(rng >> 24);
}

/* An epilogue that stores the blocks it is handed, counting elements. */
static int64_t handed;
static void store_block(const rt_qgemm *p, const int32_t *block, int64_t ldb, int64_t i0,
                        int64_t rows, int64_t j0, int64_t cols)
{
    assert_true(rows >= 1 && rows <= 16 && cols >= 1 && cols <= RT_QGEMM_PANEL);
    int32_t *c = p->epilogue_ctx;
    for (int64_t r = 0; r < rows; r++)
        memcpy(c + (i0 + r) * p->n + j0, block + r * ldb, (size_t)cols * sizeof *c);
    handed += rows * cols;
}

/* The emulated AMX product into got: b packed by the kernel (packed
 * NULL) or ahead; through an epilogue or into c. Columns in two ranges
 * when there are more than 64, as threads would run them. */
static void amx_product(int64_t m, int64_t n, int64_t k, const int8_t *a, int32_t z,
                        const int8_t *b, const void *packed, bool epilogue, int32_t *got)
{
    rt_qgemm p;
    assert_true(rt_qgemm_begin(&p, RT_QGEMM_AMX, m, n, k, a, z, b, got));
    assert_int_equal(p.kind, RT_QGEMM_AMX);
    assert_int_equal(p.a_stride % 64, 0); /* groups padded to a tile's 16 */
    if (packed)
        assert_true(rt_qgemm_use_packed(&p, packed));
    if (epilogue) {
        p.epilogue = store_block;
        p.epilogue_ctx = got;
    }
    uint8_t *scratch = packed ? NULL : malloc(rt_qgemm_amx_isa->scratch_bytes(p.a_stride / 4));
    int64_t split = n > 64 ? 64 : n;
    columns_emu(&p, split, n, scratch);
    columns_emu(&p, 0, split, scratch);
    assert_false(configured);
    free(scratch);
    rt_qgemm_end(&p);
}

static void check_shape(int64_t m, int64_t n, int64_t k, int32_t z)
{
    int8_t *a = malloc((size_t)(m * k)), *b = malloc((size_t)(k * n));
    int32_t *want = malloc((size_t)(m * n) * 4), *got = malloc((size_t)(m * n) * 4);
    for (int64_t e = 0; e < m * k; e++)
        a[e] = random_i8();
    for (int64_t e = 0; e < k * n; e++)
        b[e] = random_i8();
    rt_qgemm_s8_scalar(m, n, k, a, z, b, want);
    size_t bytes = rt_qgemm_packed_bytes(RT_QGEMM_AMX, k, n);
    void *packed = aligned_alloc(64, (bytes + 63) / 64 * 64);
    rt_qgemm_pack(RT_QGEMM_AMX, b, k, n, packed);
    for (int way = 0; way < 4; way++) {
        memset(got, 0x5A, (size_t)(m * n) * 4);
        handed = 0;
        amx_product(m, n, k, a, z, b, way & 1 ? packed : NULL, way & 2, got);
        if (way & 2)
            assert_int_equal(handed, m * n);
        for (int64_t e = 0; e < m * n; e++)
            if (got[e] != want[e])
                fail_msg("amx (emulated%s%s) %lldx%lldx%lld z=%d: c[%lld,%lld] = %d, scalar %d",
                         way & 1 ? ", b packed ahead" : "", way & 2 ? ", epilogue" : "",
                         (long long)m, (long long)n, (long long)k, z, (long long)(e / n),
                         (long long)(e % n), got[e], want[e]);
    }
    free(packed);
    free(a);
    free(b);
    free(want);
    free(got);
}

/* m, n and k on and off the tiles' 16 rows, 64 columns of a panel (16 of
 * a tile) and 64 values of k (16 groups of 4); every zero point kind. */
static void test_emulated_amx_matches_scalar(void **state)
{
    (void)state;
    static const int64_t shapes[][3] = {
        {1, 1, 1},    {16, 64, 64},  {17, 65, 65}, {15, 63, 63}, {3, 130, 5},  {33, 16, 128},
        {40, 200, 131}, {1, 17, 257}, {64, 10, 512}, {20, 129, 4}, {2, 1, 70},  {31, 96, 191},
    };
    static const int32_t zeros[] = {0, -128, 127, 5, -3, 77};
    dpbusd_count = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        check_shape(shapes[s][0], shapes[s][1], shapes[s][2], zeros[s % 6]);
    assert_true(dpbusd_count > 0);
}

/* The extreme sums at k = RT_QGEMM_MAX_K (see test_qgemm.c) on a few
 * rows and columns: (a - z) b = -255 * -128 in every product. */
static void test_emulated_amx_extremes(void **state)
{
    (void)state;
    int64_t m = 2, n = 3, k = RT_QGEMM_MAX_K;
    int8_t *a = malloc((size_t)(m * k)), *b = malloc((size_t)(k * n));
    int32_t want[6], got[6];
    memset(a, 0x80, (size_t)(m * k));
    memset(b, 0x80, (size_t)(k * n));
    rt_qgemm_s8_scalar(m, n, k, a, 127, b, want);
    amx_product(m, n, k, a, 127, b, NULL, false, got);
    assert_memory_equal(got, want, sizeof want);
    assert_int_equal(want[0], 255 * 128 * (int64_t)k);
    free(a);
    free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_emulated_amx_matches_scalar),
        TU_TEST(test_emulated_amx_extremes),
    };
    TU_RUN(tests);
}
#else
int main(void)
{
    printf("the AMX path exists only on x86-64\n");
    return 0;
}
#endif
