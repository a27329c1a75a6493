/*
 * qgemm_impl.h - what qgemm.c (the path choice and the scalar path) asks
 * of the vector paths (qgemm_x86.c) and of the CPU probe (qgemm_probe.c).
 *
 * Every vector path reads a and b in groups of 4 bytes per row of a and
 * per column of b: 4 values of k as int8 (the VNNI paths) or 2 as int16
 * (AVX2). a is packed once per product, row after row, rows a_stride =
 * 4 * groups bytes apart; b is packed panel by panel by the thread that
 * computes the panel's columns (qgemm_x86.c's header has the layouts).
 */
#ifndef RT_QGEMM_IMPL_H
#define RT_QGEMM_IMPL_H

#include "qgemm.h"

#include <stddef.h>

typedef struct rt_qgemm_isa {
    int per_group; /* values of k in a group of 4 bytes: 4 or 2 */
    /* a's rows as the kernel reads them: dst holds m rows of 4 * groups bytes. */
    void (*pack_a)(const int8_t *a, int64_t m, int64_t k, int64_t groups, uint8_t *dst);
    /* Bytes of scratch a call of columns needs (one packed panel of b). */
    size_t (*scratch_bytes)(int64_t groups);
    /* Columns [begin, end) of c; begin a multiple of RT_QGEMM_PANEL. */
    void (*columns)(const rt_qgemm *p, int64_t begin, int64_t end, uint8_t *scratch);
} rt_qgemm_isa;

/* The vector path `kind`'s functions; NULL for the scalar path, and for
 * every kind on a host that is not x86-64. */
const rt_qgemm_isa *rt_qgemm_isa_of(rt_qgemm_kind kind);

/* Why the CPU or the OS cannot run the vector path `kind`, or NULL
 * (asked once per process; never faults). */
const char *rt_qgemm_probe(rt_qgemm_kind kind);

#endif
