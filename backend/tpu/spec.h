/*
 * spec.h - the TPU-model's device spec (prefix tpu_spec): every figure
 * the compiler and the simulator use, read from a text file in protobuf
 * text format (docs/tpu-model.md lists the fields). The defaults are the
 * public figures of a Cloud TPU v5e chip.
 */
#ifndef TPU_SPEC_H
#define TPU_SPEC_H

#include "rt.h"

#include <stdio.h>

typedef struct tpu_mxu_spec {
    int64_t count;  /* matrix units per core */
    int64_t rows;   /* systolic array rows (the weight tile's K) */
    int64_t cols;   /* and columns (the weight tile's N) */
} tpu_mxu_spec;

typedef struct tpu_vpu_spec {
    int64_t sublanes;             /* a vreg is sublanes x lanes 32-bit values */
    int64_t lanes;
    int64_t transcendental_cycles; /* exp, log, tanh, sigmoid, division, sqrt per vreg */
} tpu_vpu_spec;

typedef struct tpu_memory_spec {
    int64_t capacity_bytes;
    double bandwidth;  /* bytes per second */
    double latency_ns; /* per transfer */
    int64_t block_bytes; /* vmem only: the block an instruction stages its operands and
                          * results in (compile.c); at most a quarter of the capacity,
                          * as two blocks in and two out are resident at once */
    bool residency;      /* vmem only: values stay in VMEM between instructions
                          * when they fit and their readers follow (vmem.c) */
    int64_t residency_window; /* vmem only: how many instructions after a value's
                               * its last reader may come, for it to stay */
} tpu_memory_spec;

/* The chips of a slice, a grid (v5e: 2D, up to a pod's 16x16). */
typedef struct tpu_mesh_spec {
    int64_t x, y;
} tpu_mesh_spec;

/* The inter-chip links (ICI): each chip's links to its neighbours along
 * the mesh's axes; an axis of wraparound_chips chips is a torus (its ends
 * linked), a shorter one a line. backend/tpu/collective.c costs the
 * collectives over them. */
typedef struct tpu_ici_spec {
    int64_t links_per_chip;
    double bandwidth;         /* bytes per second, one link, one way */
    double latency_ns;        /* per hop, chip to neighbouring chip */
    int64_t wraparound_chips; /* an axis of this many chips wraps */
} tpu_ici_spec;

typedef struct tpu_spec {
    char name[64];
    double clock_hz;
    int64_t chips;       /* in the slice: mesh.x x mesh.y; more than one partitions
                          * a program over them (partition.h) */
    tpu_mesh_spec mesh;
    tpu_mxu_spec mxu;
    tpu_vpu_spec vpu;
    tpu_memory_spec hbm;       /* device memory, each chip's own */
    tpu_memory_spec vmem;      /* on-chip scratch the MXU and VPU read */
    tpu_memory_spec host_link; /* host <-> device (capacity unused) */
    tpu_ici_spec ici;          /* chip <-> chip */
    int precision;             /* tpu_precision: DEFAULT, HIGH, HIGHEST */
    int partition;             /* tpu_partition: how products split over the chips */
    /* tensors cross the host link as rows of 128 lanes when that pads
     * less (the converter's io_shape_optimization sets it per function) */
    bool io_shapes;
} tpu_spec;

/* The spec's `partition`: the cost model's choice per product, or one
 * split forced on every product whose dimension splits (partition.h). */
typedef enum tpu_partition {
    TPU_PARTITION_AUTO,
    TPU_PARTITION_ROWS,        /* M */
    TPU_PARTITION_COLUMNS,     /* N */
    TPU_PARTITION_CONTRACTING, /* K */
    TPU_PARTITION_REPLICATED,  /* none: every chip computes the whole */
} tpu_partition;

/* The v5e defaults. */
void tpu_spec_default(tpu_spec *s);
/* Reads text over the defaults; false with "source:line:col: ..." in err. */
bool tpu_spec_parse(const char *text, const char *source, tpu_spec *s, char *err,
                    size_t errlen);
/* Reads the file at path over the defaults; false with a message naming
 * the file in err. */
bool tpu_spec_load(const char *path, tpu_spec *s, char *err, size_t errlen);
/* Parses text's fields over s (the others kept), then checks s whole. */
bool tpu_spec_overlay(const char *text, const char *source, tpu_spec *s, char *err,
                      size_t errlen);
/* The spec to compile for: the file at `path` (the setting device_spec:
 * agc --device-spec, AG_DEVICE_SPEC), else the defaults. False with a
 * message naming the file in err. */
bool tpu_spec_resolve(const char *path, tpu_spec *s, char *err, size_t errlen);
/* Writes s as a spec file that tpu_spec_parse reads back: the fields
 * that differ from the defaults. */
void tpu_spec_print(const tpu_spec *s, FILE *out);
/* Peak MXU rate, in multiply-adds per cycle, of the whole chip. */
double tpu_spec_macs_per_cycle(const tpu_spec *s);
/* What every staged load and store (HBM <-> VMEM) waits, in whole
 * cycles: HBM's latency and VMEM's. */
int64_t tpu_spec_staging_latency_cycles(const tpu_spec *s);
/* The bytes per second staging moves: the slower of HBM and VMEM. */
double tpu_spec_staging_bandwidth(const tpu_spec *s);

#endif
