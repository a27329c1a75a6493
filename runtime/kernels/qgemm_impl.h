/*
 * qgemm_impl.h - what qgemm.c (the path choice, the scalar path, b packed
 * ahead) asks of the vector paths (qgemm_x86.c), of the AMX path
 * (qgemm_amx.c) and of the CPU probe (qgemm_probe.c).
 *
 * Every vector path reads a and b in groups of 4 bytes per row of a and
 * per column of b: 4 values of k as int8 (the VNNI and AMX paths) or 2 as
 * int16 (AVX2). a is packed once per product, row after row, rows
 * a_stride = 4 * groups bytes apart; b is packed panel by panel, by the
 * thread that computes the panel's columns or once ahead (rt_qgemm_pack:
 * every panel, one after the other, then the column sums). qgemm_x86.c's
 * header has the layouts.
 */
#ifndef RT_QGEMM_IMPL_H
#define RT_QGEMM_IMPL_H

#include "qgemm.h"

#include <stddef.h>

typedef struct rt_qgemm_isa {
    int per_group;      /* values of k in a group of 4 bytes: 4 or 2 */
    int panel;          /* columns of b in a panel (divides RT_QGEMM_PANEL) */
    int group_multiple; /* groups are padded to a multiple of this (AMX: a tile's 16) */
    int row_multiple;   /* packed a has its rows padded to a multiple of this */
    /* a's rows as the kernel reads them: dst holds m rows of 4 * groups
     * bytes, padded to a multiple of row_multiple rows. */
    void (*pack_a)(const int8_t *a, int64_t m, int64_t k, int64_t groups, uint8_t *dst);
    /* The panel of b's columns [j0, j0 + cols) (cols <= panel) into dst:
     * groups * panel * 4 bytes, zeros past k and past the last column. */
    void (*pack_b)(const int8_t *b, int64_t n, int64_t k, int64_t j0, int64_t cols,
                   int64_t groups, int panel, uint8_t *dst);
    /* sums[j] = the sum of column j of a packed panel (j < panel). */
    void (*colsums)(const uint8_t *panel, int64_t groups, int32_t *sums);
    /* Bytes of scratch a call of columns needs (one packed panel of b). */
    size_t (*scratch_bytes)(int64_t groups);
    /* Columns [begin, end) of c; begin a multiple of RT_QGEMM_PANEL.
     * scratch is NULL when p->b_panels holds b packed ahead. */
    void (*columns)(const rt_qgemm *p, int64_t begin, int64_t end, uint8_t *scratch);
} rt_qgemm_isa;

/* The vector path `kind`'s functions; NULL for the scalar path, and for
 * every kind on a host that is not x86-64 (qgemm.c). */
const rt_qgemm_isa *rt_qgemm_isa_of(rt_qgemm_kind kind);

/* The AVX2 and VNNI paths' (qgemm_x86.c), and the AMX path's
 * (qgemm_amx.c); NULL on other hosts. */
const rt_qgemm_isa *rt_qgemm_x86_isa(rt_qgemm_kind kind);
extern const rt_qgemm_isa *const rt_qgemm_amx_isa;

/* Why the CPU or the OS cannot run the vector path `kind`, or NULL
 * (asked once per process; never faults). */
const char *rt_qgemm_probe(rt_qgemm_kind kind);

/* Why Linux does not let this process use AMX tile data (arch_prctl
 * ARCH_REQ_XCOMP_PERM, asked of the kernel: amx_probe.c), or NULL. */
const char *rt_amx_permission_missing(void);

/* qgemm_x86.c's packing of the VNNI layout, which the AMX path shares:
 * a's rows + 128 (bytes xor 0x80, padded with 0x80), and one panel of b
 * (4 values of k of a column a group). x86-64 only. */
void rt_qgemm_pack_a_bytes(const int8_t *a, int64_t m, int64_t k, int64_t groups, uint8_t *dst);
void rt_qgemm_pack_b_bytes(const int8_t *b, int64_t n, int64_t k, int64_t j0, int64_t cols,
                           int64_t groups, int panel, uint8_t *dst);

#endif
