/*
 * histogram.c - the log-linear histogram (histogram.h).
 *
 * Bucket of v: v itself below HIST_SUB; above, with p the index of v's
 * highest set bit (p >= SUB_BITS), the next SUB_BITS bits of v pick one of
 * HIST_SUB equal slices of [2^p, 2^(p+1)). Each slice is 2^(p-SUB_BITS)
 * wide, 1/HIST_SUB of its lower bound: the quantile, read as the slice's
 * upper bound, overstates by at most that.
 */
#include "histogram.h"

enum { SUB_BITS = 7 }; /* HIST_SUB = 1 << SUB_BITS */
_Static_assert(HIST_SUB == 1 << SUB_BITS, "HIST_SUB must be 2^SUB_BITS");

static int top_bit(uint64_t v)
{
    return 63 - __builtin_clzll(v);
}

static int index_of(int64_t value)
{
    if (value < HIST_SUB)
        return value < 0 ? 0 : (int)value;
    int p = top_bit((uint64_t)value);
    int sub = (int)((uint64_t)value >> (p - SUB_BITS)) & (HIST_SUB - 1);
    int i = (p - SUB_BITS + 1) * HIST_SUB + sub;
    return i < HIST_POWERS * HIST_SUB ? i : HIST_POWERS * HIST_SUB - 1;
}

/* The largest value bucket i holds. */
static int64_t upper_bound(int i)
{
    if (i < HIST_SUB)
        return i;
    int p = i / HIST_SUB + SUB_BITS - 1, sub = i % HIST_SUB;
    int64_t width = (int64_t)1 << (p - SUB_BITS);
    return ((int64_t)1 << p) + (sub + 1) * width - 1;
}

void hist_add(hist *h, int64_t value)
{
    h->bucket[index_of(value)]++;
    h->count++;
}

int64_t hist_quantile(const hist *h, double q)
{
    if (h->count == 0)
        return 0;
    /* the rank of the q-quantile, 1-based: at least 1, at most count */
    int64_t rank = (int64_t)(q * (double)h->count + 0.999999);
    if (rank < 1)
        rank = 1;
    if (rank > h->count)
        rank = h->count;
    int64_t seen = 0;
    for (int i = 0; i < HIST_POWERS * HIST_SUB; i++) {
        seen += h->bucket[i];
        if (seen >= rank)
            return upper_bound(i);
    }
    return upper_bound(HIST_POWERS * HIST_SUB - 1);
}
