/*
 * profile.c - what AG_PROFILE prints of a TPU-model call, and the split of
 * its cycles that adds up.
 *
 * Units work at once (a transfer under a matmul), so their busy shares
 * overlap and sum past 100%. The "share" column counts each cycle of the
 * call once: for the first unit busy then in TPU_SHARE_ORDER (compute
 * before the transfers it hides), or as idle when no unit is busy (the
 * call waits on a latency). Printed in tenths of a percent rounded so
 * that the column sums to exactly 100.0.
 */
#include "program.h"

#include "words.h"

#include <stdlib.h>
#include <string.h>

const char *tpu_unit_name(tpu_unit u)
{
    static const char *const names[] = {"dma.h2d", "dma.d2h", "dma.hbm", "mxu", "vpu", "xlu",
                                        "scalar", "host", "ici.x", "ici.y"};
    return u < TPU_N_QUEUES ? names[u] : "?";
}

typedef struct edge {
    int64_t t;
    int delta; /* +1: a box starts, -1: it ends */
    tpu_unit unit;
} edge;

static int by_time(const void *a, const void *b)
{
    const edge *x = a, *y = b;
    return (x->t > y->t) - (x->t < y->t);
}

/* The unit a cycle goes to when `busy` units work: -1 for none. */
static int owner(const int *busy)
{
    static const tpu_unit order[] = TPU_SHARE_ORDER;
    for (size_t k = 0; k < sizeof order / sizeof order[0]; k++)
        if (busy[order[k]] > 0)
            return (int)order[k];
    return -1;
}

static void charge(tpu_profile *prof, const int *busy, int64_t from, int64_t to, int64_t end)
{
    if (to > end)
        to = end;
    if (to <= from)
        return;
    int u = owner(busy);
    if (u < 0)
        prof->idle += to - from;
    else
        prof->share[u] += to - from;
}

void tpu_profile_shares(const tpu_timeline *t, tpu_profile *prof)
{
    memset(prof->share, 0, sizeof prof->share);
    prof->idle = 0;
    edge *e = rt_xmalloc((size_t)(2 * t->n + 1) * sizeof *e);
    int n = 0; /* the shown program's events (a slice's chips may run several) */
    for (int i = 0; i < t->n; i++) {
        if (t->ev[i].program != t->shown)
            continue;
        e[n++] = (edge){t->ev[i].start, +1, t->ev[i].unit};
        e[n++] = (edge){t->ev[i].start + t->ev[i].cycles, -1, t->ev[i].unit};
    }
    qsort(e, (size_t)n, sizeof *e, by_time);
    int busy[TPU_N_QUEUES] = {0};
    int64_t at = 0;
    for (int i = 0; i < n; i++) {
        charge(prof, busy, at, e[i].t, t->cycles);
        at = at > e[i].t ? at : e[i].t;
        busy[e[i].unit] += e[i].delta;
    }
    charge(prof, busy, at, t->cycles, t->cycles);
    free(e);
}

/* parts[i] / total in tenths of a percent, rounded so that they sum to
 * 1000 (largest remainders get the tenths left over). */
static void tenths(const int64_t *parts, int n, int64_t total, int *out)
{
    int64_t rem[TPU_N_QUEUES + 1];
    int sum = 0;
    for (int i = 0; i < n; i++) {
        out[i] = total > 0 ? (int)(parts[i] * 1000 / total) : 0;
        rem[i] = total > 0 ? parts[i] * 1000 % total : 0;
        sum += out[i];
    }
    while (total > 0 && sum < 1000) {
        int best = 0;
        for (int i = 1; i < n; i++)
            if (rem[i] > rem[best])
                best = i;
        out[best]++;
        rem[best] = -1;
        sum++;
    }
}

void tpu_profile_print(const tpu_profile *prof, const char *name, FILE *out)
{
    fprintf(out, "tpu-model profile of @%s: %.3f us (%lld %s), on the device %.3f us; "
                 "roofline %.3f us\n",
            name ? name : "?", prof->seconds * 1e6, (long long)prof->cycles,
            sw_plural(prof->cycles, "cycle", "cycles"), prof->device_seconds * 1e6,
            prof->roofline_seconds * 1e6);
    int rows = prof->chips > 1 ? TPU_N_QUEUES : TPU_N_UNITS; /* a slice: its links too */
    int64_t parts[TPU_N_QUEUES + 1];
    memcpy(parts, prof->share, sizeof prof->share);
    parts[rows] = prof->idle;
    int share[TPU_N_QUEUES + 1];
    tenths(parts, rows + 1, prof->cycles, share);
    fprintf(out, "  unit     busy cycles   busy  share\n");
    for (int u = 0; u < rows; u++)
        fprintf(out, "  %-8s %11lld %5.1f%% %5.1f%%\n", tpu_unit_name((tpu_unit)u),
                (long long)prof->busy[u],
                prof->cycles ? 100.0 * (double)prof->busy[u] / (double)prof->cycles : 0.0,
                share[u] / 10.0);
    fprintf(out, "  %-27s %5.1f%%\n", "idle (waiting on latency)", share[rows] / 10.0);
    fprintf(out, "  (busy: of the call, units overlap; share: each cycle once, to the first "
                 "busy unit of mxu vpu xlu scalar dma.hbm dma.h2d dma.d2h host%s, or idle: "
                 "100%% in all)\n", rows > TPU_N_UNITS ? " ici.x ici.y" : "");
    fprintf(out, "  mxu utilization %.1f%% of peak (%lld %s", 100 * prof->mxu_utilization,
            (long long)prof->macs, sw_plural(prof->macs, "multiply-add", "multiply-adds"));
    if (prof->int8_macs)
        fprintf(out, ", %lld of them int8 at twice the bf16 rate", (long long)prof->int8_macs);
    fputs(")\n", out);
    fprintf(out, "  host link %lld %s (%lld padding); hbm %lld %s (%lld saved by VMEM "
                 "residency)\n",
            (long long)prof->host_bytes, sw_plural(prof->host_bytes, "byte", "bytes"),
            (long long)prof->host_padding, (long long)prof->hbm_bytes,
            sw_plural(prof->hbm_bytes, "byte", "bytes"), (long long)prof->hbm_saved);
    if (prof->chips > 1)
        tpu_profile_print_slice(prof, out);
}
