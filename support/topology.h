/*
 * topology.h - a TPU slice's topology (prefix tt_): TensorFlow's
 * tensorflow.tpu.TopologyProto read from and written to its binary form
 * (protowire.h), and made from a slice's name ("2x2").
 *
 *     message TopologyProto {
 *       repeated int32 mesh_shape = 1;           // [x, y, z, cores per chip]
 *       int32 num_tasks = 2;                      // hosts
 *       int32 num_tpu_devices_per_task = 3;       // cores each host serves
 *       repeated int32 device_coordinates = 4;    // [task][device][x, y, z, core]
 *       TPUHardwareFeature tpu_hardware_feature = 5;  // skipped
 *     }
 *
 * The converter's xla_sharding_options.topology holds one (or a slice's
 * name); ag_tpu_topology_serialize and `agc-convert --print-topology`
 * write one for a named slice, so that nobody encodes bytes by hand.
 */
#ifndef TT_TOPOLOGY_H
#define TT_TOPOLOGY_H

#include "protowire.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
    TT_DIMS = 4,          /* x, y, z, core */
    TT_MAX_CORES = 256,   /* a v5e pod: 16x16 chips of one core */
    TT_CHIPS_PER_HOST = 8 /* a v5e host serves up to 8 chips (2x4) */
};

typedef struct tt_topology {
    int64_t mesh[TT_DIMS];
    int64_t num_tasks, devices_per_task;
    int n_cores;                           /* num_tasks x devices_per_task */
    int64_t coords[TT_MAX_CORES][TT_DIMS]; /* each core's place, task by task */
} tt_topology;

/* The slice "AxB" or "AxBxC" (chips along x, y, z; one core a chip, as
 * v5e), its chips numbered x fastest, then y, then z, the hosts serving
 * TT_CHIPS_PER_HOST chips each when that divides them (else one host).
 * False when name is no such grid or holds more than TT_MAX_CORES chips. */
bool tt_from_name(const char *name, tt_topology *t);

/* Reads a serialized TopologyProto and checks it: the mesh has four
 * positive sizes; num_tasks x num_tpu_devices_per_task cores, as many as
 * the mesh's product (at most TT_MAX_CORES); four coordinates per core,
 * each inside the mesh, no core twice. False with why in err. */
bool tt_decode(const void *data, size_t n, tt_topology *t, char *err, size_t errlen);

/* The serialized TopologyProto of t (packed repeated fields, as
 * protobuf writes them), appended to b. */
void tt_encode(const tt_topology *t, pw_buf *b);

/* Whether p ([x, y, z, core]) lies inside t's mesh. */
bool tt_inside(const tt_topology *t, const int64_t p[TT_DIMS]);

#endif
