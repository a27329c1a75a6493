/*
 * spec.c - the device spec: defaults, the schema of its text format, and
 * the spec in force (AG_DEVICE_SPEC).
 */
#include "spec.h"

#include "numerics.h"
#include "textproto.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

void tpu_spec_default(tpu_spec *s)
{
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "v5e");
    s->mxu = (tpu_mxu_spec){.count = 4, .rows = 128, .cols = 128};
    /* 197 TFLOP/s bf16 = 4 MXUs x 128 x 128 multiply-adds x 2 flops x clock */
    s->clock_hz = 197e12 / (4.0 * 128 * 128 * 2);
    s->chips = 1;
    s->vpu = (tpu_vpu_spec){.sublanes = 8, .lanes = 128, .transcendental_cycles = 4};
    s->hbm = (tpu_memory_spec){.capacity_bytes = 16LL << 30, .bandwidth = 819e9,
                               .latency_ns = 500};
    s->vmem = (tpu_memory_spec){.capacity_bytes = 128LL << 20, .bandwidth = 8e12,
                                .latency_ns = 0, .block_bytes = 256 << 10};
    s->host_link = (tpu_memory_spec){.bandwidth = 32e9, .latency_ns = 2000};
    s->ici = (tpu_memory_spec){.bandwidth = 400e9, .latency_ns = 1000};
    s->precision = TPU_PRECISION_DEFAULT;
}

/* ----------------------------------------------------------------- schema */

#define FIELD(T, f, type_, lo_, hi_) \
    {.name = #f, .type = type_, .offset = offsetof(T, f), .lo = lo_, .hi = hi_}

static const tp_field mxu_fields[] = {
    FIELD(tpu_mxu_spec, count, TP_INT, 1, 64),
    FIELD(tpu_mxu_spec, rows, TP_INT, 8, 4096),
    FIELD(tpu_mxu_spec, cols, TP_INT, 8, 4096),
};
static const tp_message mxu_message = {"MxuSpec", mxu_fields, 3};

static const tp_field vpu_fields[] = {
    FIELD(tpu_vpu_spec, sublanes, TP_INT, 1, 1024),
    FIELD(tpu_vpu_spec, lanes, TP_INT, 1, 4096),
    FIELD(tpu_vpu_spec, transcendental_cycles, TP_INT, 1, 1000),
};
static const tp_message vpu_message = {"VpuSpec", vpu_fields, 3};

static const tp_field memory_fields[] = {
    FIELD(tpu_memory_spec, capacity_bytes, TP_INT, 1, 9.2e18),
    FIELD(tpu_memory_spec, bandwidth, TP_DOUBLE, 1, 1e18),
    FIELD(tpu_memory_spec, latency_ns, TP_DOUBLE, 0, 1e12),
};
static const tp_message memory_message = {"MemorySpec", memory_fields, 3};

static const tp_field vmem_fields[] = {
    FIELD(tpu_memory_spec, capacity_bytes, TP_INT, 4096, 9.2e18),
    FIELD(tpu_memory_spec, bandwidth, TP_DOUBLE, 1, 1e18),
    FIELD(tpu_memory_spec, latency_ns, TP_DOUBLE, 0, 1e12),
    FIELD(tpu_memory_spec, block_bytes, TP_INT, 1024, 9.2e18),
};
static const tp_message vmem_message = {"VmemSpec", vmem_fields, 4};

static const char *const precisions[] = {"DEFAULT", "HIGH", "HIGHEST", NULL};

#define SUB(f, msg) \
    {.name = #f, .type = TP_MESSAGE, .offset = offsetof(tpu_spec, f), .message = &msg}

static const tp_field spec_fields[] = {
    {.name = "name", .type = TP_STRING, .offset = offsetof(tpu_spec, name),
     .capacity = sizeof((tpu_spec *)0)->name},
    FIELD(tpu_spec, clock_hz, TP_DOUBLE, 1e6, 1e12),
    FIELD(tpu_spec, chips, TP_INT, 1, 1),
    SUB(mxu, mxu_message),
    SUB(vpu, vpu_message),
    SUB(hbm, memory_message),
    SUB(vmem, vmem_message),
    SUB(host_link, memory_message),
    SUB(ici, memory_message),
    {.name = "precision", .type = TP_ENUM, .offset = offsetof(tpu_spec, precision),
     .enums = precisions},
};
static const tp_message spec_message = {"DeviceSpec", spec_fields,
                                        sizeof spec_fields / sizeof spec_fields[0]};

/* What no single field's range can say: the fields that must agree. */
static bool check_spec(const tpu_spec *s, const char *source, char *err, size_t errlen)
{
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

int64_t tpu_spec_hbm_latency_cycles(const tpu_spec *s)
{
    return (int64_t)ceil(s->hbm.latency_ns * 1e-9 * s->clock_hz);
}

static void print_memory(FILE *out, const char *name, const tpu_memory_spec *m, bool capacity)
{
    fprintf(out, "%s {\n", name);
    if (capacity)
        fprintf(out, "  capacity_bytes: %lld\n", (long long)m->capacity_bytes);
    fprintf(out, "  bandwidth: %.17g\n  latency_ns: %.17g\n", m->bandwidth, m->latency_ns);
    if (m->block_bytes)
        fprintf(out, "  block_bytes: %lld\n", (long long)m->block_bytes);
    fputs("}\n", out);
}

void tpu_spec_print(const tpu_spec *s, FILE *out)
{
    fputs("name: ", out);
    tp_print_string(out, s->name); /* a name may hold a quote */
    fprintf(out, "\nclock_hz: %.17g\nchips: %lld\n", s->clock_hz, (long long)s->chips);
    fprintf(out, "mxu {\n  count: %lld\n  rows: %lld\n  cols: %lld\n}\n", (long long)s->mxu.count,
            (long long)s->mxu.rows, (long long)s->mxu.cols);
    fprintf(out, "vpu {\n  sublanes: %lld\n  lanes: %lld\n  transcendental_cycles: %lld\n}\n",
            (long long)s->vpu.sublanes, (long long)s->vpu.lanes,
            (long long)s->vpu.transcendental_cycles);
    print_memory(out, "hbm", &s->hbm, true);
    print_memory(out, "vmem", &s->vmem, true);
    print_memory(out, "host_link", &s->host_link, false);
    print_memory(out, "ici", &s->ici, false);
    fprintf(out, "precision: %s\n", precisions[s->precision]);
}
