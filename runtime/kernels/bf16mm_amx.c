/*
 * bf16mm_amx.c - c = a x b in bf16 on AMX tiles (bf16mm_amx.h).
 *
 * Tiles (one configuration, loaded per call of _columns, released at its
 * end so a thread that stops using AMX saves no tile state on context
 * switches):
 *   0..3  c: a 2x2 block of 16x16 f32 (32 rows x 32 columns)
 *   4, 5  a: 16 rows x 32 bf16 of k each (rows i0.., i0+16..)
 *   6, 7  b: 16 pairs of k x 16 columns of bf16 pairs (columns j0.., j0+16..)
 * tdpbf16ps(c, a, b) adds to c[r][j] the products a[r][2q]*b[q][j].lo and
 * a[r][2q+1]*b[q][j].hi for the 16 pairs q of the tiles.
 *
 * Operands as the tiles read them: a row-major with rows padded to a
 * multiple of 16 and k to a multiple of 32 (a itself when it already is,
 * else a zero-padded copy made by _begin); b as panels of 32 columns,
 * panel[q][j][2] = (b[2q][j], b[2q+1][j]), zeros past k and n, the
 * panels of a range of columns packed by the thread that computes them,
 * right before its tiles read them (still in cache). Zero padding adds +0 products: the sums cannot change
 * (they start at +0 and so are never -0), and padded rows and columns of
 * c are never stored.
 *
 * Per block of c, the 16x16 f32 tiles go through a stack buffer and are
 * rounded to bf16 as ag_f32_to_bf16 does (nearest even, NaN kept quiet).
 */
#include "bf16mm_amx.h"

#include <stdlib.h>
#include <string.h>

enum { TILE = 16, KCHUNK = 32, PAIRS_PER_CHUNK = KCHUNK / 2, PANEL = RT_BF16MM_AMX_PANEL };

static int64_t round_up(int64_t x, int64_t to)
{
    return (x + to - 1) / to * to;
}

#if defined(__x86_64__)
#include <immintrin.h>

#define AVX512 "avx512f,avx512bw,avx512vl"
#define AMX "amx-tile,amx-bf16," AVX512

/* The layout ldtilecfg reads (palette 1). */
typedef struct tile_config {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tile_config;
_Static_assert(sizeof(tile_config) == 64, "ldtilecfg reads 64 bytes");

/* Every tile 16 rows of 64 bytes: 16 f32, 32 bf16 or 16 pairs of bf16.
 * A constant in memory, not a local: GCC 12's _tile_loadconfig tells the
 * compiler it reads 8 bytes, so stores to a local would be dropped. */
static const _Alignas(64) tile_config config = {
    .palette = 1,
    .colsb = {64, 64, 64, 64, 64, 64, 64, 64},
    .rows = {TILE, TILE, TILE, TILE, TILE, TILE, TILE, TILE},
};

__attribute__((target(AMX))) static void configure_tiles(void)
{
    _tile_loadconfig(&config);
}

/* Interleaving two rows of 32 bf16 (lo: indexes 0..31, hi: 32..63) into
 * pairs: columns 0..15, then 16..31. */
#define PAIRS_OF(j0)                                                                  \
    j0, 32 + j0, j0 + 1, 33 + j0, j0 + 2, 34 + j0, j0 + 3, 35 + j0, j0 + 4, 36 + j0,     \
        j0 + 5, 37 + j0, j0 + 6, 38 + j0, j0 + 7, 39 + j0, j0 + 8, 40 + j0, j0 + 9,      \
        41 + j0, j0 + 10, 42 + j0, j0 + 11, 43 + j0, j0 + 12, 44 + j0, j0 + 13, 45 + j0, \
        j0 + 14, 46 + j0, j0 + 15, 47 + j0
static const int16_t first_half[32] = {PAIRS_OF(0)}, second_half[32] = {PAIRS_OF(16)};
#undef PAIRS_OF

/* Row r of b at columns j0 .. j0+32 (the mask holds the columns that
 * exist), zeros past k. */
__attribute__((target(AVX512))) static inline __m512i b_row(const rt_bf16mm_amx *p, int64_t r,
                                                            int64_t j0, __mmask32 cols)
{
    if (r >= p->k)
        return _mm512_setzero_si512();
    return _mm512_maskz_loadu_epi16(cols, p->b + r * p->n + j0);
}

/* The panels of columns begin .. end (begin a multiple of PANEL): per
 * pair q, rows 2q and 2q+1 interleaved, each panel's columns 0..15 then
 * 16..31. Pair by pair across the panels, so that b is read along its
 * rows (one panel at a time reads 64 bytes a row, a page every few rows);
 * one function with the loops inside, so the permutations stay in
 * registers. */
__attribute__((target(AVX512))) static void pack_panels(const rt_bf16mm_amx *p, int64_t begin,
                                                        int64_t end)
{
    __m512i first = _mm512_loadu_si512(first_half), second = _mm512_loadu_si512(second_half);
    int64_t panel_elems = p->pairs * 2 * PANEL;
    for (int64_t q = 0; q < p->pairs; q++) {
        for (int64_t j0 = begin; j0 < end; j0 += PANEL) {
            int64_t cols = end - j0 < PANEL ? end - j0 : PANEL;
            __mmask32 mask = cols == PANEL ? ~(__mmask32)0 : ((__mmask32)1 << cols) - 1;
            __m512i lo = b_row(p, 2 * q, j0, mask), hi = b_row(p, 2 * q + 1, j0, mask);
            uint16_t *dst = p->panels + j0 / PANEL * panel_elems + q * 2 * PANEL;
            _mm512_storeu_si512(dst, _mm512_permutex2var_epi16(lo, first, hi));
            _mm512_storeu_si512(dst + 32, _mm512_permutex2var_epi16(lo, second, hi));
        }
    }
}

/* 16 f32 rounded to bf16 into the first `cols` elements of dst. */
__attribute__((target(AVX512))) static void store_bf16_row(const float *src, int cols,
                                                           uint16_t *dst)
{
    __m512 v = _mm512_loadu_ps(src);
    __m512i u = _mm512_castps_si512(v);
    __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    __m512i up = _mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7FFF)));
    __m512i quiet = _mm512_or_si512(u, _mm512_set1_epi32(0x00400000));
    __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    __m512i r = _mm512_srli_epi32(_mm512_mask_blend_epi32(nan, up, quiet), 16);
    __mmask16 m = cols >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << cols) - 1);
    _mm256_mask_storeu_epi16(dst, m, _mm512_cvtepi32_epi16(r));
}

/* A 16x16 f32 tile of c at (i0, j0), its rows < m and columns < n. */
static void store_tile(const rt_bf16mm_amx *p, const float *tile, int64_t i0, int64_t j0)
{
    int64_t rows = p->m - i0 < TILE ? p->m - i0 : TILE;
    int cols = (int)(p->n - j0 < TILE ? p->n - j0 : TILE);
    for (int64_t r = 0; r < rows; r++)
        store_bf16_row(tile + r * TILE, cols, p->c + (i0 + r) * p->n + j0);
}

/* The block of c at rows i0 .. i0+32 and the panel's columns j0 .. j0+32,
 * whose second row and column tiles exist when two_rows / two_cols. */
__attribute__((target(AMX))) static void block(const rt_bf16mm_amx *p, const uint16_t *panel,
                                               int64_t i0, int64_t j0, bool two_rows,
                                               bool two_cols)
{
    const uint16_t *a = p->a_tiles + i0 * p->a_stride;
    size_t a_bytes = (size_t)p->a_stride * 2, b_bytes = 2 * PANEL * 2;
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    for (int64_t q = 0; q < p->pairs; q += PAIRS_PER_CHUNK) {
        _tile_loadd(4, a + 2 * q, a_bytes);
        _tile_loadd(6, panel + q * 2 * PANEL, b_bytes);
        if (two_rows)
            _tile_loadd(5, a + TILE * p->a_stride + 2 * q, a_bytes);
        if (two_cols)
            _tile_loadd(7, panel + q * 2 * PANEL + 2 * TILE, b_bytes);
        _tile_dpbf16ps(0, 4, 6);
        if (two_cols)
            _tile_dpbf16ps(1, 4, 7);
        if (two_rows)
            _tile_dpbf16ps(2, 5, 6);
        if (two_rows && two_cols)
            _tile_dpbf16ps(3, 5, 7);
    }
    _Alignas(64) float out[TILE * TILE];
    _tile_stored(0, out, TILE * 4);
    store_tile(p, out, i0, j0);
    if (two_cols) {
        _tile_stored(1, out, TILE * 4);
        store_tile(p, out, i0, j0 + TILE);
    }
    if (two_rows) {
        _tile_stored(2, out, TILE * 4);
        store_tile(p, out, i0 + TILE, j0);
    }
    if (two_rows && two_cols) {
        _tile_stored(3, out, TILE * 4);
        store_tile(p, out, i0 + TILE, j0 + TILE);
    }
}

__attribute__((target(AMX))) static void release_tiles(void)
{
    _tile_release();
}

void rt_bf16mm_amx_columns(const rt_bf16mm_amx *p, int64_t begin, int64_t end)
{
    if (!p->packed)
        pack_panels(p, begin, end);
    configure_tiles();
    for (int64_t j0 = begin; j0 < end; j0 += PANEL) {
        int cols = (int)(end - j0 < PANEL ? end - j0 : PANEL);
        const uint16_t *panel = p->panels + j0 / PANEL * p->pairs * 2 * PANEL;
        for (int64_t i0 = 0; i0 < p->m; i0 += 2 * TILE)
            block(p, panel, i0, j0, p->m - i0 > TILE, cols > TILE);
    }
    release_tiles();
}

/* The panels of every column, as each call's pack_panels lays them out. */
void rt_bf16mm_amx_pack(const uint16_t *b, int64_t k, int64_t n, uint16_t *dst)
{
    rt_bf16mm_amx p = {.b = b, .k = k, .n = n, .pairs = round_up(k, KCHUNK) / 2, .panels = dst};
    pack_panels(&p, 0, n);
}
#else
void rt_bf16mm_amx_columns(const rt_bf16mm_amx *p, int64_t begin, int64_t end)
{
    (void)p, (void)begin, (void)end; /* _begin never succeeds here */
}

void rt_bf16mm_amx_pack(const uint16_t *b, int64_t k, int64_t n, uint16_t *dst)
{
    (void)b, (void)k, (void)n, (void)dst; /* nothing here calls the kernel */
}
#endif

/* a's rows padded with zeros to a_stride columns, its row count to a
 * multiple of TILE. */
static void copy_a(rt_bf16mm_amx *p, uint16_t *dst, int64_t rows)
{
    memset(dst, 0, (size_t)(rows * p->a_stride) * sizeof *dst);
    for (int64_t i = 0; i < p->m; i++)
        memcpy(dst + i * p->a_stride, p->a + i * p->k, (size_t)p->k * sizeof *dst);
}

size_t rt_bf16mm_amx_packed_elems(int64_t k, int64_t n)
{
    return (size_t)(round_up(n, PANEL) * round_up(k, KCHUNK));
}


/* p for c = a x b, with scratch for a's copy when the tiles need one, and
 * for b's panels unless `packed` holds them. */
static bool begin(rt_bf16mm_amx *p, const uint16_t *a, const uint16_t *b,
                  const uint16_t *packed, uint16_t *c, int64_t m, int64_t k, int64_t n)
{
    if (m <= 0 || k <= 0 || n <= 0 || !rt_bf16mm_amx_usable())
        return false; /* an empty product is the other paths' (nothing to gain) */
    *p = (rt_bf16mm_amx){.a = a, .b = b, .c = c, .m = m, .k = k, .n = n, .packed = packed != NULL};
    int64_t k_pad = round_up(k, KCHUNK), rows = round_up(m, TILE);
    bool copies_a = k_pad != k || rows != m;
    p->pairs = k_pad / 2;
    size_t panel_elems = packed ? 0 : rt_bf16mm_amx_packed_elems(k, n);
    size_t a_elems = copies_a ? (size_t)(rows * k_pad) : 0;
    if (panel_elems + a_elems > 0) {
        p->scratch = aligned_alloc(64, round_up((int64_t)((panel_elems + a_elems) * 2), 64));
        if (!p->scratch)
            return false;
    }
    p->panels = packed ? (uint16_t *)packed : p->scratch;
    p->a_tiles = a, p->a_stride = k;
    if (copies_a) {
        uint16_t *copy = (uint16_t *)p->scratch + panel_elems;
        p->a_stride = k_pad;
        copy_a(p, copy, rows);
        p->a_tiles = copy;
    }
    return true;
}

bool rt_bf16mm_amx_begin(rt_bf16mm_amx *p, const uint16_t *a, const uint16_t *b, uint16_t *c,
                         int64_t m, int64_t k, int64_t n)
{
    return begin(p, a, b, NULL, c, m, k, n);
}

bool rt_bf16mm_amx_begin_packed(rt_bf16mm_amx *p, const uint16_t *a, const uint16_t *packed,
                                uint16_t *c, int64_t m, int64_t k, int64_t n)
{
    return begin(p, a, NULL, packed, c, m, k, n);
}

void rt_bf16mm_amx_end(rt_bf16mm_amx *p)
{
    free(p->scratch);
    p->scratch = NULL;
}
