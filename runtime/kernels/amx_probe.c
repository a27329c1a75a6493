/*
 * amx_probe.c - whether this process may run AMX bf16 tiles
 * (rt_bf16mm_amx_usable, bf16mm_amx.h).
 *
 * Asked once per process (pthread_once), in the order that can never
 * fault: CPUID for the instructions, then (OSXSAVE set) XGETBV for the
 * register state the OS enables, then Linux's per-process permission for
 * the 8 KB of tile data (arch_prctl ARCH_REQ_XCOMP_PERM, kernels >= 5.16;
 * without it the first tile instruction would raise SIGILL). The kernel
 * also uses AVX-512 F/BW/VL (packing, rounding), so those are asked too.
 * The permission's request is the int8 AMX path's too (qgemm_probe.c).
 */
#include "bf16mm_amx.h"
#include "qgemm_impl.h"

#include "config.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static pthread_once_t probe_once = PTHREAD_ONCE_INIT;
static const char *missing; /* NULL: usable; else why not */

#if defined(__x86_64__)
#include <cpuid.h>
#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

enum { ARCH_GET_XCOMP_PERM = 0x1022, ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18 };

/* CPUID.(7,0): EBX bits 16 AVX512F, 30 AVX512BW, 31 AVX512VL; EDX bits 22
 * AMX-BF16, 24 AMX-TILE. CPUID.1: ECX bit 27 OSXSAVE. */
static const unsigned EBX_AVX512 = 1u << 16 | 1u << 30 | 1u << 31, EDX_AMX = 1u << 22 | 1u << 24,
                      ECX_OSXSAVE = 1u << 27;
/* XCR0: SSE, AVX, opmask, the upper zmm halves, zmm16-31 (bits 1, 2, 5,
 * 6, 7), tile configuration and tile data (17, 18). */
static const uint64_t XCR0_NEEDED = 0x6u | 0xE0u | 3ull << 17;

static uint64_t xcr0(void)
{
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (uint64_t)hi << 32 | lo;
}

static const char *cpu_missing(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || (d & EDX_AMX) != EDX_AMX)
        return "the CPU has no AMX-BF16/AMX-TILE";
    if ((b & EBX_AVX512) != EBX_AVX512)
        return "the CPU has AMX but not AVX512-F/BW/VL";
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & ECX_OSXSAVE))
        return "the OS does not enable XSAVE (no tile state)";
    if ((xcr0() & XCR0_NEEDED) != XCR0_NEEDED)
        return "the OS does not enable the AVX-512 and tile register state (XCR0)";
    return NULL;
}

/* Linux grants tile data per process; the permission stays granted
 * (asking again is harmless: the int8 path's probe asks it too). */
const char *rt_amx_permission_missing(void)
{
    if (syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) != 0)
        return errno == EINVAL ? "Linux does not grant AMX tile data (kernel before 5.16)"
                               : "Linux refused AMX tile data to this process (arch_prctl)";
    unsigned long granted = 0;
    if (syscall(SYS_arch_prctl, ARCH_GET_XCOMP_PERM, &granted) != 0 ||
        !(granted & 1ul << XFEATURE_XTILEDATA))
        return "Linux did not grant AMX tile data to this process (arch_prctl)";
    return NULL;
}

static void probe(void)
{
    missing = cpu_missing();
    if (!missing)
        missing = rt_amx_permission_missing();
}
#else
static void probe(void)
{
    missing = "AMX exists only on x86-64";
}

const char *rt_amx_permission_missing(void)
{
    return "AMX exists only on x86-64";
}
#endif

/* AG_NO_AMX set, and not "0": asked at every call, as the settings in
 * force now (the kernel runs from compiled code, which has no compile's
 * snapshot at hand). */
static bool switched_off(void)
{
    const rt_config *c = rt_config_get();
    bool off = rt_config_on(c, RT_CFG_NO_AMX);
    rt_config_release(c);
    return off;
}

const char *rt_bf16mm_amx_why_not(void)
{
    pthread_once(&probe_once, probe);
    if (missing)
        return missing;
    return switched_off() ? "AG_NO_AMX is set" : NULL;
}

bool rt_bf16mm_amx_usable(void)
{
    return rt_bf16mm_amx_why_not() == NULL;
}
