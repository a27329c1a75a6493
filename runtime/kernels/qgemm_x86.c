/*
 * qgemm_x86.c - the vector paths of the int8 product (qgemm.h): AVX-512
 * VNNI, AVX-VNNI and AVX2, each the kernel of qgemm_tile.inc with its
 * own instructions. Per-function target attributes: nothing else of agc
 * needs ISA flags, and qgemm_probe.c decides what may run.
 *
 * VNNI (vpdpbusd, 512 or 256 bits): each int32 lane adds the four
 * products of 4 unsigned bytes of one operand with 4 signed bytes of the
 * other, without saturation (vpdpbusd, not vpdpbusds). a is made unsigned
 * as a + 128 (its bytes xor 0x80), so the sums are sum (a + 128) b, and
 *
 *     sum (a - z) b  =  sum (a + 128) b  -  (128 + z) colsum(b)
 *
 * the correction being the sums' starting value. Everything is int32
 * arithmetic modulo 2^32, so the result is exact whenever the true sum
 * fits (qgemm.h), whatever the partial sums do on the way.
 *
 * AVX2: vpmaddubsw would be the VNNI shape, but it saturates int16 when
 * a pair of products passes 32767 (255 * 127 * 2 can). Instead a and b
 * are sign-extended to int16 when packed, and vpmaddwd adds two int16
 * products into an int32 lane exactly (|a b| <= 2^14); the sums are
 * sum a b, corrected by -z colsum(b) the same way. Twice the bytes of
 * the VNNI layout per value, the price of exactness.
 *
 * Layouts: a row-major, k padded to whole groups (a_stride bytes a row);
 * each group 4 int8 (VNNI: a xor 0x80, padded with 0x80) or 2 int16
 * (AVX2: a, padded with 0). b in panels of QG_PANEL columns: for each
 * group g, the panel's columns in order, each 4 bytes: b[4g..4g+3][j]
 * (VNNI) or b[2g][j], b[2g+1][j] as int16 (AVX2), zeros past k and past
 * the last column. The padding of b is zero, so a's padding adds nothing.
 */
#include "qgemm_impl.h"

#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>

/* One group of a panel elementwise (the panels' edges): zeros, then the
 * values of b that are there. */
static void pack_b_edge(const int8_t *b, int64_t n, int64_t k, int64_t j0, int64_t cols,
                        int64_t g, int per_group, int panel, uint8_t *dst)
{
    uint8_t *out = dst + g * panel * 4;
    memset(out, 0, (size_t)panel * 4);
    for (int q = 0; q < per_group && g * per_group + q < k; q++) {
        const int8_t *row = b + (g * per_group + q) * n + j0;
        for (int j = 0; j < cols; j++) {
            if (per_group == 4)
                out[j * 4 + q] = (uint8_t)row[j];
            else {
                int16_t w = row[j];
                memcpy(out + j * 4 + 2 * q, &w, 2);
            }
        }
    }
}

/* VNNI panels: 4 rows of 16 columns interleaved bytewise, then pairwise
 * (SSE2, every x86-64 has it). */
void rt_qgemm_pack_b_bytes(const int8_t *b, int64_t n, int64_t k, int64_t j0, int64_t cols,
                         int64_t groups, int panel, uint8_t *dst)
{
    for (int64_t g = 0; g < groups; g++) {
        if (cols < panel || 4 * g + 3 >= k) {
            pack_b_edge(b, n, k, j0, cols, g, 4, panel, dst);
            continue;
        }
        const int8_t *r = b + 4 * g * n + j0;
        for (int j = 0; j < panel; j += 16) {
            __m128i r0 = _mm_loadu_si128((const void *)(r + j)),
                    r1 = _mm_loadu_si128((const void *)(r + n + j)),
                    r2 = _mm_loadu_si128((const void *)(r + 2 * n + j)),
                    r3 = _mm_loadu_si128((const void *)(r + 3 * n + j));
            __m128i lo01 = _mm_unpacklo_epi8(r0, r1), hi01 = _mm_unpackhi_epi8(r0, r1),
                    lo23 = _mm_unpacklo_epi8(r2, r3), hi23 = _mm_unpackhi_epi8(r2, r3);
            __m128i *out = (__m128i *)(void *)(dst + (g * panel + j) * 4);
            _mm_storeu_si128(out, _mm_unpacklo_epi16(lo01, lo23));
            _mm_storeu_si128(out + 1, _mm_unpackhi_epi16(lo01, lo23));
            _mm_storeu_si128(out + 2, _mm_unpacklo_epi16(hi01, hi23));
            _mm_storeu_si128(out + 3, _mm_unpackhi_epi16(hi01, hi23));
        }
    }
}

/* AVX2 panels: 2 rows of 8 columns sign-extended to int16, interleaved. */
__attribute__((target("avx2"))) static void pack_b_pairs(const int8_t *b, int64_t n, int64_t k,
                                                         int64_t j0, int64_t cols, int64_t groups,
                                                         int panel, uint8_t *dst)
{
    for (int64_t g = 0; g < groups; g++) {
        if (cols < panel || 2 * g + 1 >= k) {
            pack_b_edge(b, n, k, j0, cols, g, 2, panel, dst);
            continue;
        }
        const int8_t *r = b + 2 * g * n + j0;
        for (int j = 0; j < panel; j += 8) {
            __m128i r0 = _mm_cvtepi8_epi16(_mm_loadl_epi64((const void *)(r + j))),
                    r1 = _mm_cvtepi8_epi16(_mm_loadl_epi64((const void *)(r + n + j)));
            __m128i *out = (__m128i *)(void *)(dst + (g * panel + j) * 4);
            _mm_storeu_si128(out, _mm_unpacklo_epi16(r0, r1));
            _mm_storeu_si128(out + 1, _mm_unpackhi_epi16(r0, r1));
        }
    }
}

/* a's rows for the VNNI paths: bytes + 128 (xor 0x80), 16 at a time,
 * padded with 0x80. */
void rt_qgemm_pack_a_bytes(const int8_t *a, int64_t m, int64_t k, int64_t groups, uint8_t *dst)
{
    int64_t stride = 4 * groups;
    const __m128i flip = _mm_set1_epi8((char)0x80);
    for (int64_t i = 0; i < m; i++) {
        const int8_t *src = a + i * k;
        uint8_t *row = dst + i * stride;
        int64_t p = 0;
        for (; p + 16 <= k; p += 16)
            _mm_storeu_si128((void *)(row + p),
                             _mm_xor_si128(_mm_loadu_si128((const void *)(src + p)), flip));
        for (; p < k; p++)
            row[p] = (uint8_t)src[p] ^ 0x80u;
        memset(row + k, 0x80, (size_t)(stride - k));
    }
}

/* a's rows for AVX2: int16, 8 at a time, padded with 0. */
__attribute__((target("avx2"))) static void pack_a_pairs(const int8_t *a, int64_t m, int64_t k,
                                                         int64_t groups, uint8_t *dst)
{
    int64_t stride = 4 * groups;
    for (int64_t i = 0; i < m; i++) {
        const int8_t *src = a + i * k;
        int16_t *row = (int16_t *)(void *)(dst + i * stride);
        int64_t p = 0;
        for (; p + 8 <= k; p += 8)
            _mm_storeu_si128((void *)(row + p),
                             _mm_cvtepi8_epi16(_mm_loadl_epi64((const void *)(src + p))));
        for (; p < 2 * groups; p++)
            row[p] = p < k ? src[p] : 0;
    }
}

#define QG_FN(name) name##_avx512_vnni
#define QG_TARGET "avx512f,avx512bw,avx512vl,avx512vnni"
#define QG_VEC __m512i
#define QG_LANES 16
#define QG_NR 4
#define QG_MR 6
#define QG_LOAD(p) _mm512_loadu_si512((const void *)(p))
#define QG_STORE(p, v) _mm512_storeu_si512((void *)(p), v)
#define QG_SET1(x) _mm512_set1_epi32(x)
#define QG_ZERO() _mm512_setzero_si512()
#define QG_MULLO(a, b) _mm512_mullo_epi32(a, b)
#define QG_MAC(acc, x, b) _mm512_dpbusd_epi32(acc, x, b)
#define QG_ONES 0x01010101
#define QG_PACK_B rt_qgemm_pack_b_bytes
#define QG_SHIFT 128
#include "qgemm_tile.inc"
#undef QG_FN
#undef QG_TARGET
#undef QG_VEC
#undef QG_LANES
#undef QG_NR
#undef QG_MR
#undef QG_LOAD
#undef QG_STORE
#undef QG_SET1
#undef QG_ZERO
#undef QG_MULLO
#undef QG_MAC

/* The two 256-bit paths share all but their multiply-add. */
#define QG_VEC __m256i
#define QG_LANES 8
#define QG_NR 2
#define QG_LOAD(p) _mm256_loadu_si256((const void *)(p))
#define QG_STORE(p, v) _mm256_storeu_si256((void *)(p), v)
#define QG_SET1(x) _mm256_set1_epi32(x)
#define QG_ZERO() _mm256_setzero_si256()
#define QG_MULLO(a, b) _mm256_mullo_epi32(a, b)

#define QG_FN(name) name##_avx_vnni
#define QG_TARGET "avx2,avxvnni"
#define QG_MR 6
#define QG_MAC(acc, x, b) _mm256_dpbusd_avx_epi32(acc, x, b)
#include "qgemm_tile.inc"
#undef QG_FN
#undef QG_TARGET
#undef QG_MR
#undef QG_MAC
#undef QG_ONES
#undef QG_PACK_B
#undef QG_SHIFT

#define QG_FN(name) name##_avx2
#define QG_TARGET "avx2"
#define QG_MR 6
#define QG_MAC(acc, x, b) _mm256_add_epi32(acc, _mm256_madd_epi16(x, b))
#define QG_ONES 0x00010001
#define QG_PACK_B pack_b_pairs
#define QG_SHIFT 0
#include "qgemm_tile.inc"

static const rt_qgemm_isa isas[RT_QGEMM_NUM_KINDS] = {
    [RT_QGEMM_AVX2] = {2, 16, 1, 1, pack_a_pairs, pack_b_pairs, colsums_avx2, scratch_bytes_avx2,
                       columns_avx2},
    [RT_QGEMM_AVX_VNNI] = {4, 16, 1, 1, rt_qgemm_pack_a_bytes, rt_qgemm_pack_b_bytes,
                           colsums_avx_vnni, scratch_bytes_avx_vnni, columns_avx_vnni},
    [RT_QGEMM_AVX512_VNNI] = {4, 64, 1, 1, rt_qgemm_pack_a_bytes, rt_qgemm_pack_b_bytes,
                              colsums_avx512_vnni, scratch_bytes_avx512_vnni,
                              columns_avx512_vnni},
};

const rt_qgemm_isa *rt_qgemm_x86_isa(rt_qgemm_kind kind)
{
    return kind > RT_QGEMM_SCALAR && kind < RT_QGEMM_AMX ? &isas[kind] : NULL;
}
#else
const rt_qgemm_isa *rt_qgemm_x86_isa(rt_qgemm_kind kind)
{
    (void)kind;
    return NULL;
}
#endif
