/*
 * collective.h - what a collective costs on a slice's inter-chip links
 * (prefix tpu_coll): all-gather, reduce-scatter and all-reduce as rings
 * along the mesh's axes (docs/tpu-model.md, "The slice and its links").
 *
 * An axis of n chips is a torus when it has spec->ici.wraparound_chips
 * chips (16 on v5e: only a full pod's axes wrap), a line otherwise. On a
 * torus the data goes round two rings, one each way, each link carrying
 * both; on a line the ring is folded (0, 2, 4, ... out, ... 5, 3, 1
 * back), so that every link carries it once each way and no step waits
 * for the far end. Either way a step moves one chunk per chip over its
 * own links: n - 1 steps for an all-gather or a reduce-scatter, twice
 * that for an all-reduce (a reduce-scatter, then an all-gather).
 */
#ifndef TPU_COLLECTIVE_H
#define TPU_COLLECTIVE_H

#include "spec.h"

typedef enum tpu_collective {
    TPU_ALL_GATHER,     /* each chip's 1/n of `bytes` to every chip */
    TPU_REDUCE_SCATTER, /* `bytes` on every chip summed, 1/n of the sum left on each */
    TPU_ALL_REDUCE,     /* `bytes` on every chip summed, the sum on each */
} tpu_collective;

/* The ring along one axis of n chips, as the links carry it. */
typedef struct tpu_ring {
    int n;
    bool torus;       /* the axis wraps: two rings, one each way */
    int rings;        /* 2 on a torus, 1 on a line (and on 2 chips) */
    int hops_per_step; /* the longest route a step's chunk takes */
} tpu_ring;

tpu_ring tpu_coll_ring(const tpu_spec *s, int n);

/* Simulated seconds of a collective of `bytes` (the full tensor on one
 * chip) along one axis of n chips: each step's chunks (ceil(bytes / n /
 * rings)) routed over the axis's directed links, the step lasting its
 * busiest link's bytes over the link's bandwidth plus its longest
 * route's hops at the hop latency. 0 for n = 1. */
double tpu_coll_axis_seconds(const tpu_spec *s, tpu_collective kind, int64_t bytes, int n);

/* The same over every axis of an nx x ny mesh in turn (a reduce-scatter
 * along x then y, an all-gather along y then x, each on what is left of
 * the tensor). */
double tpu_coll_mesh_seconds(const tpu_spec *s, tpu_collective kind, int64_t bytes, int nx,
                             int ny);

/* The ring formula the simulation is held to (bench_tpu, the tests):
 * (n - 1) / n x bytes / (rings x link bandwidth) + (n - 1) steps x
 * hops_per_step x hop latency, for an all-gather or a reduce-scatter;
 * twice that for an all-reduce. */
double tpu_coll_ring_formula(const tpu_spec *s, tpu_collective kind, int64_t bytes, int n);

/* "all-gather", "reduce-scatter", "all-reduce". */
const char *tpu_coll_name(tpu_collective kind);

#endif
