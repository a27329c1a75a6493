/*
 * bf16mm_amx.h - bf16 matrix products c[m,n] = a[m,k] x b[k,n] on Intel
 * AMX tiles (tdpbf16ps), for the cpu target's compiled code
 * (backend/cpu/cg_runtime.c runs it in parallel chunks of columns).
 *
 * Each c[i,j] is the f32 sum of the products a[i,p]*b[p,j] in the order
 * tdpbf16ps gives (docs/runtime.md, "bf16 on the cpu target"; checked by
 * tests/unit/test_bf16mm.c), rounded once to bf16 like ag_f32_to_bf16.
 *
 * Use: rt_bf16mm_amx_begin (false: run another path), then
 * rt_bf16mm_amx_columns over column ranges, from any threads, then
 * rt_bf16mm_amx_end. Every x86-64 build compiles it (per-function target
 * attributes, so nothing else needs AMX flags); other hosts get a stub
 * that is never usable.
 */
#ifndef RT_BF16MM_AMX_H
#define RT_BF16MM_AMX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Column ranges passed to rt_bf16mm_amx_columns start on a multiple of
 * this (one panel of packed b); they may end anywhere. */
enum { RT_BF16MM_AMX_PANEL = 32 };

/* Whether this process may run AMX bf16 tiles: the CPU has AMX-TILE,
 * AMX-BF16, AVX512-F/BW/VL, the OS enables their register state (XCR0)
 * and Linux granted the tile data permission (arch_prctl, asked once per
 * process), and AG_NO_AMX is not set to a value other than "0" (read at
 * each call, so a program can compare the paths). Never faults. */
bool rt_bf16mm_amx_usable(void);

/* Why rt_bf16mm_amx_usable() is false (a sentence, for skips and
 * benchmarks), or NULL when it is true. */
const char *rt_bf16mm_amx_why_not(void);

/* One product in progress: the operands, and scratch holding a as the
 * tiles read it and b in panels of bf16 pairs. */
typedef struct rt_bf16mm_amx {
    const uint16_t *a, *b;
    uint16_t *c;
    int64_t m, k, n;
    const uint16_t *a_tiles; /* a, or a copy padded to 16-row and 32-column multiples */
    int64_t a_stride;        /* elements between rows of a_tiles */
    int64_t pairs;           /* pairs of k, padded to a multiple of 16 */
    uint16_t *panels;        /* b, RT_BF16MM_AMX_PANEL columns a panel */
    bool packed;             /* panels came packed (_begin_packed): _columns reads them */
    void *scratch;           /* what _end frees */
} rt_bf16mm_amx;

/* b in the panels' layout, for a b that many products read (a constant
 * weight, which the backend packs when it compiles code that calls the
 * kernel): the elements it takes, and the packing (dst holds that many;
 * zeros pad k to a multiple of 32 and n to one of RT_BF16MM_AMX_PANEL).
 * The packing needs AVX-512, as the kernel does. */
size_t rt_bf16mm_amx_packed_elems(int64_t k, int64_t n);
void rt_bf16mm_amx_pack(const uint16_t *b, int64_t k, int64_t n, uint16_t *dst);

/* Prepares c = a x b (bf16 bits, row-major, c not overlapping a or b).
 * False, with nothing to free, when AMX is not usable, the scratch memory
 * is not there or a dimension is 0: the caller takes another path. */
bool rt_bf16mm_amx_begin(rt_bf16mm_amx *p, const uint16_t *a, const uint16_t *b, uint16_t *c,
                         int64_t m, int64_t k, int64_t n);

/* The same with b already packed (rt_bf16mm_amx_pack): no packing per call. */
bool rt_bf16mm_amx_begin_packed(rt_bf16mm_amx *p, const uint16_t *a, const uint16_t *packed,
                                uint16_t *c, int64_t m, int64_t k, int64_t n);

/* Computes columns [begin, end) of c, every row; begin is a multiple of
 * RT_BF16MM_AMX_PANEL. Calls on disjoint ranges may run at once. */
void rt_bf16mm_amx_columns(const rt_bf16mm_amx *p, int64_t begin, int64_t end);

void rt_bf16mm_amx_end(rt_bf16mm_amx *p);

#endif /* RT_BF16MM_AMX_H */
