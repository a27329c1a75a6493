/*
 * spec.c - the device spec: one table of rows per message (name, type,
 * default, bounds, doc) from which its defaults and canonical text are
 * made (support/options_table.h), the checks across fields, and the spec
 * in force (AG_DEVICE_SPEC).
 */
#include "spec.h"

#include "numerics.h"
#include "options_table.h"
#include "textproto.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* ----------------------------------------------------------------- schema */

/* One table of rows per message: name, type, default (the public figures
 * of a Cloud TPU v5e chip), bounds, doc. */
#define FIELD(T, f, type_, def_, lo_, hi_, doc_) \
    {.name = #f, .type = type_, .offset = offsetof(T, f), .def = def_, .lo = lo_, .hi = hi_, \
     .doc = doc_}
#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

static const tp_field mxu_fields[] = {
    FIELD(tpu_mxu_spec, count, TP_INT, 4, 1, 64, "matrix units per core"),
    FIELD(tpu_mxu_spec, rows, TP_INT, 128, 8, 4096, "systolic array rows (the weight tile's K)"),
    FIELD(tpu_mxu_spec, cols, TP_INT, 128, 8, 4096, "and columns (the weight tile's N)"),
};
static const tp_message mxu_message = {"MxuSpec", mxu_fields, COUNT(mxu_fields)};

static const tp_field vpu_fields[] = {
    FIELD(tpu_vpu_spec, sublanes, TP_INT, 8, 1, 1024, "a vreg is sublanes x lanes 32-bit values"),
    FIELD(tpu_vpu_spec, lanes, TP_INT, 128, 1, 4096, "lanes of a vreg"),
    FIELD(tpu_vpu_spec, transcendental_cycles, TP_INT, 4, 1, 1000,
          "cycles of exp, log, tanh, sigmoid, division, sqrt per vreg"),
};
static const tp_message vpu_message = {"VpuSpec", vpu_fields, COUNT(vpu_fields)};

/* A memory's rows, with the defaults of one memory (hbm, host_link and
 * ici share the message MemorySpec, each with its own figures). */
#define MEMORY_FIELDS(cap_, cap_lo_, bw_, lat_)                                          \
    FIELD(tpu_memory_spec, capacity_bytes, TP_INT, cap_, cap_lo_, 9.2e18, "bytes"),       \
    FIELD(tpu_memory_spec, bandwidth, TP_DOUBLE, bw_, 1, 1e18, "bytes per second"),       \
    FIELD(tpu_memory_spec, latency_ns, TP_DOUBLE, lat_, 0, 1e12, "per transfer")

static const tp_field hbm_fields[] = {MEMORY_FIELDS(16LL << 30, 1, 819e9, 500)};
static const tp_message hbm_message = {"MemorySpec", hbm_fields, COUNT(hbm_fields)};

static const tp_field vmem_fields[] = {
    MEMORY_FIELDS(128LL << 20, 4096, 8e12, 0),
    FIELD(tpu_memory_spec, block_bytes, TP_INT, 256 << 10, 1024, 9.2e18,
          "the block an instruction stages its operands and results in; at most a quarter "
          "of the capacity"),
    FIELD(tpu_memory_spec, residency, TP_BOOL, 1, 0, 0,
          "values stay in VMEM between instructions when they fit and their readers follow"),
    FIELD(tpu_memory_spec, residency_window, TP_INT, 16, 1, 1e6,
          "instructions after a value within which its last reader must come, for it to "
          "stay in VMEM"),
};
static const tp_message vmem_message = {"VmemSpec", vmem_fields, COUNT(vmem_fields)};

static const tp_field host_link_fields[] = {MEMORY_FIELDS(0, 1, 32e9, 2000)};
static const tp_message host_link_message = {"MemorySpec", host_link_fields,
                                             COUNT(host_link_fields)};

/* v5e: 4 links a chip, 1,600 Gbit/s in all (~45 GB/s a link one way,
 * 400 GB/s a chip both ways), about 1 us a hop; only a pod's 16-chip
 * axes wrap. */
static const tp_field ici_fields[] = {
    FIELD(tpu_ici_spec, links_per_chip, TP_INT, 4, 2, 6,
          "links to neighbouring chips, 2 per axis longer than 1 chip"),
    FIELD(tpu_ici_spec, bandwidth, TP_DOUBLE, 45e9, 1, 1e18, "bytes per second, one link one way"),
    FIELD(tpu_ici_spec, latency_ns, TP_DOUBLE, 1000, 0, 1e12, "per hop"),
    FIELD(tpu_ici_spec, wraparound_chips, TP_INT, 16, 3, 256,
          "an axis of this many chips is a torus, a shorter one a line"),
};
static const tp_message ici_message = {"IciSpec", ici_fields, COUNT(ici_fields)};

static const tp_field mesh_fields[] = {
    FIELD(tpu_mesh_spec, x, TP_INT, 1, 1, 256, "chips along x"),
    FIELD(tpu_mesh_spec, y, TP_INT, 1, 1, 256, "chips along y"),
};
static const tp_message mesh_message = {"MeshSpec", mesh_fields, COUNT(mesh_fields)};

static const char *const precisions[] = {"DEFAULT", "HIGH", "HIGHEST", NULL};
static const char *const partitions[] = {"AUTO", "ROWS", "COLUMNS", "CONTRACTING", "REPLICATED",
                                         NULL};

#define SUB(f, msg, doc_) \
    {.name = #f, .type = TP_MESSAGE, .offset = offsetof(tpu_spec, f), .message = &msg, \
     .doc = doc_}

static const tp_field spec_fields[] = {
    {.name = "name", .type = TP_STRING, .offset = offsetof(tpu_spec, name),
     .capacity = sizeof((tpu_spec *)0)->name, .def_text = "v5e", .doc = "the chip's name"},
    /* 197 TFLOP/s bf16 = 4 MXUs x 128 x 128 multiply-adds x 2 flops x clock */
    FIELD(tpu_spec, clock_hz, TP_DOUBLE, 197e12 / (4.0 * 128 * 128 * 2), 1e6, 1e12,
          "cycles per second"),
    FIELD(tpu_spec, chips, TP_INT, 1, 1, 256, "chips in the slice, mesh.x x mesh.y"),
    SUB(mesh, mesh_message, "the chips' grid"),
    SUB(mxu, mxu_message, "the matrix units"),
    SUB(vpu, vpu_message, "the vector unit"),
    SUB(hbm, hbm_message, "device memory, each chip's own"),
    SUB(vmem, vmem_message, "on-chip scratch the MXU and VPU read"),
    SUB(host_link, host_link_message, "host <-> device (capacity unused)"),
    SUB(ici, ici_message, "chip <-> chip"),
    {.name = "precision", .type = TP_ENUM, .offset = offsetof(tpu_spec, precision),
     .enums = precisions, .def = TPU_PRECISION_DEFAULT, .doc = "of f32 matrix products"},
    {.name = "partition", .type = TP_ENUM, .offset = offsetof(tpu_spec, partition),
     .enums = partitions, .def = TPU_PARTITION_AUTO,
     .doc = "how products split over the chips: the cost model's choice, or one forced"},
    FIELD(tpu_spec, io_shapes, TP_BOOL, 0, 0, 0,
          "tensors cross the host link as rows of 128 lanes when that pads less"),
};
static const tp_message spec_message = {"DeviceSpec", spec_fields, COUNT(spec_fields)};

void tpu_spec_default(tpu_spec *s)
{
    memset(s, 0, sizeof *s);
    ot_defaults(&spec_message, s);
}

/* The slice: its mesh holds its chips, and every axis longer than one
 * chip has its two links a chip. */
static bool check_slice(const tpu_spec *s, const char *source, char *err, size_t errlen)
{
    int64_t axes = (s->mesh.x > 1) + (s->mesh.y > 1);
    if (2 * axes > s->ici.links_per_chip) {
        snprintf(err, errlen,
                 "%s: ici.links_per_chip %lld is too few for the mesh %lldx%lld: a chip links "
                 "to 2 neighbours along each axis longer than one chip",
                 source, (long long)s->ici.links_per_chip, (long long)s->mesh.x,
                 (long long)s->mesh.y);
        return false;
    }
    if (s->mesh.x * s->mesh.y == s->chips)
        return true;
    snprintf(err, errlen, "%s: mesh %lldx%lld holds %lld chips, but chips is %lld", source,
             (long long)s->mesh.x, (long long)s->mesh.y, (long long)(s->mesh.x * s->mesh.y),
             (long long)s->chips);
    return false;
}

/* What no single field's range can say: the fields that must agree. */
static bool check_spec(const tpu_spec *s, const char *source, char *err, size_t errlen)
{
    if (!check_slice(s, source, err, errlen))
        return false;
    if (s->vmem.block_bytes * 4 > s->vmem.capacity_bytes) {
        snprintf(err, errlen,
                 "%s: vmem.block_bytes (%lld) must be at most a quarter of vmem.capacity_bytes "
                 "(%lld): an instruction keeps two blocks in and two out in VMEM at once",
                 source, (long long)s->vmem.block_bytes, (long long)s->vmem.capacity_bytes);
        return false;
    }
    return true;
}

bool tpu_spec_parse(const char *text, const char *source, tpu_spec *s, char *err,
                    size_t errlen)
{
    tpu_spec_default(s);
    return tp_parse(text, source, &spec_message, s, err, errlen) &&
           check_spec(s, source, err, errlen);
}

bool tpu_spec_overlay(const char *text, const char *source, tpu_spec *s, char *err,
                      size_t errlen)
{
    return tp_parse(text, source, &spec_message, s, err, errlen) &&
           check_spec(s, source, err, errlen);
}

bool tpu_spec_load(const char *path, tpu_spec *s, char *err, size_t errlen)
{
    char *text = tp_read_file(path, "the device spec", err, errlen);
    bool ok = text && tpu_spec_parse(text, path, s, err, errlen);
    free(text);
    return ok;
}

/* --------------------------------------------------------- the spec in force */

bool tpu_spec_resolve(const char *path, tpu_spec *s, char *err, size_t errlen)
{
    if (!path || !*path) {
        tpu_spec_default(s);
        return true;
    }
    return tpu_spec_load(path, s, err, errlen);
}

double tpu_spec_macs_per_cycle(const tpu_spec *s)
{
    return (double)s->mxu.count * (double)s->mxu.rows * (double)s->mxu.cols * (double)s->chips;
}

/* Staging moves HBM <-> VMEM: it waits both memories' latencies and
 * runs at the slower one's bandwidth (so vmem's figures count only when
 * they are the bound: VMEM slower than HBM, or slow to answer). */
int64_t tpu_spec_staging_latency_cycles(const tpu_spec *s)
{
    return (int64_t)ceil((s->hbm.latency_ns + s->vmem.latency_ns) * 1e-9 * s->clock_hz);
}

double tpu_spec_staging_bandwidth(const tpu_spec *s)
{
    return fmin(s->hbm.bandwidth, s->vmem.bandwidth);
}

/* The spec's canonical text: the fields that differ from v5e's. */
void tpu_spec_print(const tpu_spec *s, FILE *out)
{
    ot_print(&spec_message, s, out);
}
