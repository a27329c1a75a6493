/*
 * topology.c - TopologyProto from a slice's name, and to and from its
 * wire form (topology.h).
 */
#include "topology.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ names */

/* "AxB" or "AxBxC" into mesh[0..2]; false for anything else. */
static bool parse_grid(const char *s, int64_t mesh[TT_DIMS])
{
    int dims = 0;
    mesh[0] = mesh[1] = mesh[2] = mesh[3] = 1;
    for (;;) {
        char *end;
        if (*s < '1' || *s > '9' || dims == 3)
            return false;
        long long d = strtoll(s, &end, 10);
        if (d > TT_MAX_CORES)
            return false;
        mesh[dims++] = d;
        if (!*end)
            return dims >= 2;
        if (*end != 'x')
            return false;
        s = end + 1;
    }
}

bool tt_from_name(const char *name, tt_topology *t)
{
    memset(t, 0, sizeof *t);
    if (!parse_grid(name, t->mesh))
        return false;
    int64_t chips = t->mesh[0] * t->mesh[1] * t->mesh[2];
    if (chips > TT_MAX_CORES)
        return false;
    t->num_tasks = chips > TT_CHIPS_PER_HOST && chips % TT_CHIPS_PER_HOST == 0
                       ? chips / TT_CHIPS_PER_HOST
                       : 1;
    t->devices_per_task = chips / t->num_tasks;
    t->n_cores = (int)chips;
    for (int i = 0; i < t->n_cores; i++) {
        t->coords[i][0] = i % t->mesh[0];
        t->coords[i][1] = i / t->mesh[0] % t->mesh[1];
        t->coords[i][2] = i / (t->mesh[0] * t->mesh[1]);
    }
    return true;
}

/* ----------------------------------------------------------------- encode */

void tt_encode(const tt_topology *t, pw_buf *b)
{
    uint64_t mesh[TT_DIMS], coords[TT_MAX_CORES * TT_DIMS];
    for (int d = 0; d < TT_DIMS; d++)
        mesh[d] = (uint64_t)t->mesh[d];
    for (int i = 0; i < t->n_cores; i++)
        for (int d = 0; d < TT_DIMS; d++)
            coords[i * TT_DIMS + d] = (uint64_t)t->coords[i][d];
    pw_put_packed_varints(b, 1, mesh, TT_DIMS);
    pw_put_varint_field(b, 2, (uint64_t)t->num_tasks);
    pw_put_varint_field(b, 3, (uint64_t)t->devices_per_task);
    pw_put_packed_varints(b, 4, coords, (size_t)t->n_cores * TT_DIMS);
}

/* ----------------------------------------------------------------- decode */

bool tt_inside(const tt_topology *t, const int64_t p[TT_DIMS])
{
    for (int d = 0; d < TT_DIMS; d++)
        if (p[d] < 0 || p[d] >= t->mesh[d])
            return false;
    return true;
}

/* The fields as read: the repeated ones as their values, in order. */
typedef struct raw_topology {
    pw_values mesh, coords;
    uint64_t num_tasks, devices_per_task;
} raw_topology;

/* An int32 as the wire holds it (a negative one is ten bytes long). */
static int64_t int32_of(uint64_t v) { return (int32_t)(uint32_t)v; }

/* One field into r; tpu_hardware_feature and fields to come are skipped. */
static bool read_field(const pw_field *f, raw_topology *r, char *err, size_t errlen)
{
    if (f->number == 1 || f->number == 4)
        return pw_append_values(f, PW_VARINT, f->number == 1 ? &r->mesh : &r->coords, err,
                                errlen);
    if (f->number != 2 && f->number != 3)
        return true;
    if (f->wire != PW_VARINT) {
        snprintf(err, errlen, "field %u (%s) is not an integer", (unsigned)f->number,
                 f->number == 2 ? "num_tasks" : "num_tpu_devices_per_task");
        return false;
    }
    *(f->number == 2 ? &r->num_tasks : &r->devices_per_task) = f->value;
    return true;
}

static bool read_fields(const void *data, size_t n, raw_topology *r, char *err, size_t errlen)
{
    pw_reader rd = pw_reader_of(data, n);
    pw_field f;
    int got;
    while ((got = pw_next(&rd, &f, err, errlen)) == 1)
        if (!read_field(&f, r, err, errlen))
            return false;
    return got == 0;
}

static bool check_mesh(const raw_topology *r, tt_topology *t, char *err, size_t errlen)
{
    if (r->mesh.n != TT_DIMS) {
        snprintf(err, errlen, "mesh_shape has %zu sizes, not 4 ([x, y, z, cores per chip])",
                 r->mesh.n);
        return false;
    }
    int64_t cores = 1;
    for (int d = 0; d < TT_DIMS; d++) {
        t->mesh[d] = int32_of(r->mesh.v[d]);
        if (t->mesh[d] < 1 || t->mesh[d] > TT_MAX_CORES) {
            snprintf(err, errlen, "mesh_shape[%d] is %lld, not in [1, %d]", d,
                     (long long)t->mesh[d], TT_MAX_CORES);
            return false;
        }
        cores *= t->mesh[d];
    }
    if (cores <= TT_MAX_CORES)
        return true;
    snprintf(err, errlen, "the mesh holds %lld cores, more than %d", (long long)cores,
             TT_MAX_CORES);
    return false;
}

static bool check_cores(const raw_topology *r, tt_topology *t, char *err, size_t errlen)
{
    t->num_tasks = int32_of(r->num_tasks);
    t->devices_per_task = int32_of(r->devices_per_task);
    int64_t mesh = t->mesh[0] * t->mesh[1] * t->mesh[2] * t->mesh[3];
    if (t->num_tasks < 1 || t->devices_per_task < 1 ||
        t->num_tasks * t->devices_per_task != mesh) {
        snprintf(err, errlen,
                 "num_tasks %lld x num_tpu_devices_per_task %lld cores, but the mesh "
                 "[%lld, %lld, %lld, %lld] holds %lld",
                 (long long)t->num_tasks, (long long)t->devices_per_task,
                 (long long)t->mesh[0], (long long)t->mesh[1], (long long)t->mesh[2],
                 (long long)t->mesh[3], (long long)mesh);
        return false;
    }
    t->n_cores = (int)mesh;
    if (r->coords.n == (size_t)mesh * TT_DIMS)
        return true;
    snprintf(err, errlen, "device_coordinates has %zu values for %lld cores: give 4 per core",
             r->coords.n, (long long)mesh);
    return false;
}

/* Each core's coordinates inside the mesh, none twice. */
static bool check_coords(const raw_topology *r, tt_topology *t, char *err, size_t errlen)
{
    for (int i = 0; i < t->n_cores; i++) {
        int64_t *p = t->coords[i];
        for (int d = 0; d < TT_DIMS; d++)
            p[d] = int32_of(r->coords.v[i * TT_DIMS + d]);
        const char *why = !tt_inside(t, p) ? "outside the mesh" : NULL;
        for (int j = 0; j < i && !why; j++)
            if (memcmp(t->coords[j], p, sizeof t->coords[j]) == 0)
                why = "given twice";
        if (why) {
            snprintf(err, errlen, "device_coordinates of core %d, [%lld, %lld, %lld, %lld], %s",
                     i, (long long)p[0], (long long)p[1], (long long)p[2], (long long)p[3], why);
            return false;
        }
    }
    return true;
}

bool tt_decode(const void *data, size_t n, tt_topology *t, char *err, size_t errlen)
{
    raw_topology r = {0};
    memset(t, 0, sizeof *t);
    bool ok = read_fields(data, n, &r, err, errlen) && check_mesh(&r, t, err, errlen) &&
              check_cores(&r, t, err, errlen) && check_coords(&r, t, err, errlen);
    free(r.mesh.v);
    free(r.coords.v);
    return ok;
}
