/*
 * collective.c - collectives on the inter-chip links, step by step
 * (collective.h): each step's chunks are routed over the directed links
 * of the axis, and the step lasts as long as its busiest link and its
 * longest route take.
 */
#include "collective.h"

#include <stdlib.h>

const char *tpu_coll_name(tpu_collective kind)
{
    static const char *const names[] = {"all-gather", "reduce-scatter", "all-reduce"};
    return names[kind];
}

/* The chip after position k of the folded ring on a line of n chips:
 * the even chips outward, the odd ones back. */
static int folded_next(int k, int n)
{
    if (k % 2 == 0)
        return k + 2 < n ? k + 2 : (k + 1 < n ? k + 1 : k - 1);
    return k >= 3 ? k - 2 : 0;
}

/* The successor of chip k on ring r (0: forward, 1: backward). */
static int ring_next(const tpu_ring *g, int r, int k)
{
    if (g->torus)
        return r == 0 ? (k + 1) % g->n : (k + g->n - 1) % g->n;
    return folded_next(k, g->n);
}

tpu_ring tpu_coll_ring(const tpu_spec *s, int n)
{
    tpu_ring g = {.n = n, .torus = n > 2 && n == s->ici.wraparound_chips, .rings = 1,
                  .hops_per_step = 1};
    if (g.torus)
        g.rings = 2;
    else if (n > 2)
        g.hops_per_step = 2;
    return g;
}

/* Adds `bytes` to every directed link from chip a to chip b (load[2 i]:
 * i -> i + 1, load[2 i + 1]: i + 1 -> i, mod n on a torus); the hops. */
static int route(const tpu_ring *g, int a, int b, int dir, int64_t bytes, int64_t *load)
{
    int hops = 0;
    while (a != b) {
        int step = g->torus ? (dir == 0 ? 1 : -1) : (b > a ? 1 : -1);
        int next = (a + step + g->n) % g->n;
        int link = step > 0 ? 2 * a : 2 * next + 1;
        load[link] += bytes;
        a = next;
        hops++;
    }
    return hops;
}

/* One step of the rings: every chip sends its chunk to its successor. */
static double step_seconds(const tpu_spec *s, const tpu_ring *g, int64_t chunk, int64_t *load)
{
    int longest = 0;
    for (int i = 0; i < 2 * g->n; i++)
        load[i] = 0;
    for (int r = 0; r < g->rings; r++)
        for (int k = 0; k < g->n; k++) {
            int hops = route(g, k, ring_next(g, r, k), r, chunk, load);
            longest = hops > longest ? hops : longest;
        }
    int64_t busiest = 0;
    for (int i = 0; i < 2 * g->n; i++)
        busiest = load[i] > busiest ? load[i] : busiest;
    return (double)busiest / s->ici.bandwidth + longest * s->ici.latency_ns * 1e-9;
}

double tpu_coll_axis_seconds(const tpu_spec *s, tpu_collective kind, int64_t bytes, int n)
{
    if (n <= 1 || bytes <= 0)
        return 0;
    tpu_ring g = tpu_coll_ring(s, n);
    int64_t per = (int64_t)g.n * g.rings;
    int64_t chunk = (bytes + per - 1) / per;
    int64_t *load = malloc(sizeof *load * 2 * (size_t)n);
    /* every step moves the same chunks over the same links */
    double t = (n - 1) * step_seconds(s, &g, chunk, load);
    free(load);
    return kind == TPU_ALL_REDUCE ? 2 * t : t;
}

double tpu_coll_mesh_seconds(const tpu_spec *s, tpu_collective kind, int64_t bytes, int nx,
                             int ny)
{
    if (kind == TPU_ALL_REDUCE)
        return tpu_coll_mesh_seconds(s, TPU_REDUCE_SCATTER, bytes, nx, ny) +
               tpu_coll_mesh_seconds(s, TPU_ALL_GATHER, bytes, nx, ny);
    /* reduce-scatter: y on the whole, then x on its 1/ny; all-gather:
     * x up to 1/ny of the whole, then y up to the whole */
    int64_t part = (bytes + ny - 1) / ny;
    return tpu_coll_axis_seconds(s, kind, bytes, ny) + tpu_coll_axis_seconds(s, kind, part, nx);
}

double tpu_coll_ring_formula(const tpu_spec *s, tpu_collective kind, int64_t bytes, int n)
{
    if (n <= 1 || bytes <= 0)
        return 0;
    tpu_ring g = tpu_coll_ring(s, n);
    double t = (double)(n - 1) / n * (double)bytes / (g.rings * s->ici.bandwidth) +
               (n - 1) * g.hops_per_step * s->ici.latency_ns * 1e-9;
    return kind == TPU_ALL_REDUCE ? 2 * t : t;
}
