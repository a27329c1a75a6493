/*
 * slice.c - the serialized topology of a named TPU slice, for C users
 * (ag_tpu_topology_serialize, ag.h): what the converter's
 * xla_sharding_options.topology takes, so that nobody encodes a
 * TopologyProto by hand.
 */
#include "ag.h"
#include "topology.h"

#include <stdlib.h>
#include <string.h>

size_t ag_tpu_topology_serialize(const char *slice, void *out, size_t cap)
{
    tt_topology *t = malloc(sizeof *t);
    size_t n = 0;
    if (slice && tt_from_name(slice, t)) {
        pw_buf b = {0};
        tt_encode(t, &b);
        n = b.len;
        if (out && cap)
            memcpy(out, b.data, n < cap ? n : cap);
        pw_buf_free(&b);
    }
    free(t);
    return n;
}
