/*
 * qgemm_probe.c - which vector paths of the int8 product this process may
 * run (qgemm_impl.h: rt_qgemm_probe).
 *
 * Asked once per process (pthread_once), in the order that can never
 * fault, as amx_probe.c does: CPUID for the instructions, then (OSXSAVE
 * set) XGETBV for the register state the OS saves. AVX2 and AVX-VNNI need
 * the ymm state, AVX-512 VNNI the zmm and opmask state too. AMX int8
 * needs AMX-TILE and AMX-INT8, the tile state in XCR0, and Linux's
 * permission for the tile data (amx_probe.c asks it, as for bf16): only
 * then can a tile instruction run without SIGILL.
 */
#include "qgemm_impl.h"

#include <pthread.h>

static pthread_once_t probe_once = PTHREAD_ONCE_INIT;
static const char *missing[RT_QGEMM_NUM_KINDS]; /* NULL: the path runs */

#if defined(__x86_64__)
#include <cpuid.h>

/* CPUID.1 ECX: 27 OSXSAVE, 28 AVX. CPUID.(7,0) EBX: 5 AVX2, 16 AVX512F,
 * 30 AVX512BW, 31 AVX512VL; ECX: 11 AVX512_VNNI. CPUID.(7,1) EAX: 4
 * AVX-VNNI. XCR0: 1, 2 (xmm, ymm); 5, 6, 7 (opmask, zmm halves, zmm16-31). */
static const unsigned ECX1_AVX = 1u << 27 | 1u << 28, EBX7_AVX2 = 1u << 5,
                      EBX7_AVX512 = 1u << 16 | 1u << 30 | 1u << 31, ECX7_VNNI = 1u << 11,
                      EAX71_AVX_VNNI = 1u << 4;
static const unsigned XCR0_YMM = 0x6u, XCR0_ZMM = 0xE6u;
/* CPUID.(7,0) EDX: 24 AMX-TILE, 25 AMX-INT8. XCR0: 17, 18 (tile
 * configuration, tile data). */
static const unsigned EDX7_AMX_INT8 = 1u << 24 | 1u << 25, XCR0_TILES = 3u << 17;

static unsigned xcr0(void)
{
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return lo;
}

static const char *avx2_missing(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || (c & ECX1_AVX) != ECX1_AVX)
        return "the CPU has no AVX, or the OS does not enable XSAVE";
    if ((xcr0() & XCR0_YMM) != XCR0_YMM)
        return "the OS does not enable the AVX register state (XCR0)";
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(b & EBX7_AVX2))
        return "the CPU has no AVX2";
    return NULL;
}

static const char *avx_vnni_missing(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 1, &a, &b, &c, &d) || !(a & EAX71_AVX_VNNI))
        return "the CPU has no AVX-VNNI";
    return NULL;
}

static const char *avx512_vnni_missing(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || (b & EBX7_AVX512) != EBX7_AVX512)
        return "the CPU has no AVX512-F/BW/VL";
    if (!(c & ECX7_VNNI))
        return "the CPU has AVX-512 but not AVX512_VNNI";
    if ((xcr0() & XCR0_ZMM) != XCR0_ZMM)
        return "the OS does not enable the AVX-512 register state (XCR0)";
    return NULL;
}

/* The packing is SSE2 (every x86-64); the tiles need the rest. */
static const char *amx_missing(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || (d & EDX7_AMX_INT8) != EDX7_AMX_INT8)
        return "the CPU has no AMX-TILE/AMX-INT8";
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & 1u << 27))
        return "the OS does not enable XSAVE (no tile state)";
    if ((xcr0() & XCR0_TILES) != XCR0_TILES)
        return "the OS does not enable the tile register state (XCR0)";
    return rt_amx_permission_missing();
}

static void probe(void)
{
    const char *avx2 = avx2_missing();
    missing[RT_QGEMM_AVX2] = avx2;
    missing[RT_QGEMM_AVX_VNNI] = avx2 ? avx2 : avx_vnni_missing();
    missing[RT_QGEMM_AVX512_VNNI] = avx2 ? avx2 : avx512_vnni_missing();
    missing[RT_QGEMM_AMX] = amx_missing();
}
#else
static void probe(void)
{
    for (int kind = RT_QGEMM_SCALAR + 1; kind < RT_QGEMM_NUM_KINDS; kind++)
        missing[kind] = "the vector paths exist only on x86-64";
}
#endif

const char *rt_qgemm_probe(rt_qgemm_kind kind)
{
    pthread_once(&probe_once, probe);
    return kind > RT_QGEMM_SCALAR && kind < RT_QGEMM_NUM_KINDS ? missing[kind] : NULL;
}
