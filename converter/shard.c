/*
 * shard.c - xla_sharding_options carried out (convert.h): the replica's
 * chips (num_cores_per_replica, at the places device_assignment gives, or
 * the topology's first ones) become the TPU functions' slice, the device
 * spec fields `chips` and `mesh` that the TPU-model's partitioner
 * (backend/tpu/partition.c) splits each program over. The options were
 * checked whole when they were read (options_check.c); what is left here
 * is what the TPU-model can run: chips of one core, a replica that fills
 * a rectangle of the mesh in one plane.
 */
#include "convert.h"

#include "topology.h"

#include <stdlib.h>
#include <string.h>

static bool topology_of(const cv_sharding_options *x, tt_topology *t)
{
    char why[256];
    if (x->topology[0] >= '1' && x->topology[0] <= '9' &&
        strlen(x->topology) == (size_t)x->topology_len)
        return tt_from_name(x->topology, t);
    return tt_decode(x->topology, (size_t)x->topology_len, t, why, sizeof why);
}

/* The box [lo, hi] of the replica's places (device_assignment, else the
 * topology's first n cores). */
static void replica_box(const cv_sharding_options *x, const tt_topology *t, int64_t lo[TT_DIMS],
                        int64_t hi[TT_DIMS])
{
    int n = (int)x->num_cores_per_replica;
    for (int d = 0; d < TT_DIMS; d++) {
        lo[d] = INT64_MAX;
        hi[d] = INT64_MIN;
    }
    for (int i = 0; i < n; i++) {
        const int64_t *p = x->n_device_assignment ? &x->device_assignment[TT_DIMS * i]
                                                  : t->coords[i];
        for (int d = 0; d < TT_DIMS; d++) {
            lo[d] = p[d] < lo[d] ? p[d] : lo[d];
            hi[d] = p[d] > hi[d] ? p[d] : hi[d];
        }
    }
}

bool cv_sharding_spec(const cv_options *o, const char *source, char *spec, size_t n, char *err,
                      size_t errlen)
{
    const cv_sharding_options *x = &o->xla_sharding_options;
    spec[0] = '\0';
    if (x->num_cores_per_replica <= 1)
        return true;
    tt_topology *t = malloc(sizeof *t);
    int64_t lo[TT_DIMS], hi[TT_DIMS];
    bool ok = topology_of(x, t);
    if (ok)
        replica_box(x, t, lo, hi);
    free(t);
    if (!ok)
        return cv_error(err, errlen, source, x->at.topology, "bad topology");
    int64_t bx = hi[0] - lo[0] + 1, by = hi[1] - lo[1] + 1;
    if (hi[2] != lo[2] || hi[3] != lo[3])
        return cv_error(err, errlen, source, x->at.num_cores_per_replica,
                        "xla_sharding_options: the TPU-model's chips have one core each, in "
                        "one plane: give a replica's cores with the same z and core (0)");
    if (bx * by != x->num_cores_per_replica)
        return cv_error(err, errlen, source, x->at.num_cores_per_replica,
                        "xla_sharding_options: the replica's %lld cores must fill a rectangle "
                        "of the mesh; they span %lld x %lld chips",
                        (long long)x->num_cores_per_replica, (long long)bx, (long long)by);
    snprintf(spec, n, "chips: %lld mesh { x: %lld y: %lld }",
             (long long)x->num_cores_per_replica, (long long)bx, (long long)by);
    return true;
}
