/*
 * qgemm_amx.c - the AMX int8 path of the int8 product (qgemm.h): the
 * kernel of qgemm_amx.inc on the real tiles (tdpbusd), with the VNNI
 * paths' packing (qgemm_x86.c). qgemm_probe.c decides whether it may run
 * (CPUID AMX-TILE and AMX-INT8, XCR0's tile state, Linux's permission);
 * tests/unit/test_qgemm_amx.c runs the same kernel on an emulation of the
 * tiles, so the path is tested on CPUs without AMX too.
 *
 * The tile configuration is loaded per call of columns and released at
 * its end, as the bf16 AMX kernel does (bf16mm_amx.c): a thread that
 * stops using AMX saves no tile state on context switches.
 */
#include "qgemm_impl.h"

#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>

/* The layout ldtilecfg reads (palette 1): tiles 0..5 of 16 rows x 64
 * bytes. A constant in memory (see bf16mm_amx.c: GCC 12's
 * _tile_loadconfig would let stores to a local be dropped). */
typedef struct tile_config {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tile_config;
_Static_assert(sizeof(tile_config) == 64, "ldtilecfg reads 64 bytes");

static const _Alignas(64) tile_config config = {
    .palette = 1,
    .colsb = {64, 64, 64, 64, 64, 64},
    .rows = {16, 16, 16, 16, 16, 16},
};

#define QA_FN(name) name##_amx
#define QA_ATTR __attribute__((target("amx-tile,amx-int8")))
#define QA_CONFIG() _tile_loadconfig(&config)
#define QA_RELEASE() _tile_release()
#define QA_ZERO(t) _tile_zero(t)
#define QA_LOAD(t, base, stride) _tile_loadd(t, base, stride)
#define QA_DPBUSD(c, a, b) _tile_dpbusd(c, a, b)
#define QA_STORE(t, base, stride) _tile_stored(t, base, stride)
#include "qgemm_amx.inc"

/* a + 128 as the VNNI paths pack it, and the rows up to a whole tile
 * (never stored: any bytes would do; 0x80 adds the least). */
static void pack_a_amx(const int8_t *a, int64_t m, int64_t k, int64_t groups, uint8_t *dst)
{
    rt_qgemm_pack_a_bytes(a, m, k, groups, dst);
    int64_t rows = (m + QA_ROWS - 1) / QA_ROWS * QA_ROWS;
    memset(dst + m * 4 * groups, 0x80, (size_t)((rows - m) * 4 * groups));
}

static size_t scratch_bytes_amx(int64_t groups)
{
    return (size_t)(groups * QA_ROW_BYTES);
}

static const rt_qgemm_isa amx = {4, QA_PANEL, QA_GROUPS, QA_ROWS, pack_a_amx,
                                 rt_qgemm_pack_b_bytes, colsums_amx, scratch_bytes_amx,
                                 columns_amx};
const rt_qgemm_isa *const rt_qgemm_amx_isa = &amx;
#else
const rt_qgemm_isa *const rt_qgemm_amx_isa = NULL;
#endif
