/*
 * histogram.h - a log-linear histogram of non-negative integers (prefix
 * hist_), for latencies in microseconds: values below HIST_SUB are counted
 * exactly, larger ones in HIST_SUB buckets per power of two, so a
 * percentile read back is at most 1/HIST_SUB (0.8%) above the true one and
 * never below it: fine enough to check a 1 ms timeout to within 8 us.
 * Fixed size (45 KB), no allocation: adding is O(1) and can be done under
 * a lock on every request.
 */
#ifndef AG_HISTOGRAM_H
#define AG_HISTOGRAM_H

#include <stdint.h>

enum { HIST_SUB = 128, HIST_POWERS = 44 };

typedef struct hist {
    int64_t count;
    int64_t bucket[HIST_POWERS * HIST_SUB];
} hist;

void hist_add(hist *h, int64_t value);
/* The smallest bucket bound at or above the q-quantile (0 <= q <= 1) of
 * the values added; 0 when there are none. */
int64_t hist_quantile(const hist *h, double q);

#endif
