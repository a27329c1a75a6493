/*
 * test_topology.c - xla_sharding_options.topology: TensorFlow's
 * TopologyProto from a slice's name and to and from its wire form
 * (support/topology.c), the public ag_tpu_topology_serialize, the
 * text format's bytes with NULs (support/textproto.c) and every check of
 * the sharding contract the converter's options make (options_check.c).
 */
#include "test_util.h"

#include "options.h"
#include "textproto.h"
#include "topology.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- the proto */

/* The 2x2 slice, encoded by hand from topology.proto's field numbers:
 * mesh_shape [2, 2, 1, 1] packed, num_tasks 1, num_tpu_devices_per_task
 * 4, device_coordinates x fastest, packed. */
static const unsigned char slice_2x2[] = {
    0x0a, 4, 2, 2, 1, 1, /* mesh_shape */
    0x10, 1,             /* num_tasks */
    0x18, 4,             /* num_tpu_devices_per_task */
    0x22, 16, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 1, 1, 0, 0,
};

static void test_2x2_is_the_wire_form(void **state)
{
    (void)state;
    unsigned char buf[64];
    size_t n = ag_tpu_topology_serialize("2x2", buf, sizeof buf);
    assert_int_equal(n, sizeof slice_2x2);
    assert_memory_equal(buf, slice_2x2, n);
    /* the length first, then the bytes; a short buffer gets a prefix */
    assert_int_equal(ag_tpu_topology_serialize("2x2", NULL, 0), n);
    memset(buf, 0xee, sizeof buf);
    assert_int_equal(ag_tpu_topology_serialize("2x2", buf, 3), n);
    assert_int_equal(buf[3], 0xee);
    assert_int_equal(ag_tpu_topology_serialize("2by2", buf, sizeof buf), 0);
    assert_int_equal(ag_tpu_topology_serialize("17x17", buf, sizeof buf), 0); /* 289 chips */
    assert_int_equal(ag_tpu_topology_serialize("2x2x1x1", buf, sizeof buf), 0);
    assert_int_equal(ag_tpu_topology_serialize(NULL, buf, sizeof buf), 0);
}

/* Every named slice decodes to what its name makes. */
static void test_named_slices_decode_back(void **state)
{
    (void)state;
    static const char *const names[] = {"1x1", "2x2", "2x4", "4x4", "2x2x1", "16x16"};
    static const int tasks[] = {1, 1, 1, 2, 1, 32};
    tt_topology *a = malloc(sizeof *a), *b = malloc(sizeof *b);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        assert_true(tt_from_name(names[i], a));
        pw_buf w = {0};
        tt_encode(a, &w);
        char err[256];
        if (!tt_decode(w.data, w.len, b, err, sizeof err))
            fail_msg("%s: %s", names[i], err);
        assert_memory_equal(a, b, sizeof *a);
        assert_int_equal(b->num_tasks, tasks[i]);
        assert_int_equal(b->num_tasks * b->devices_per_task, b->n_cores);
        pw_buf_free(&w);
    }
    assert_int_equal(a->mesh[0], 16);
    assert_int_equal(a->coords[255][1], 15);
    free(a);
    free(b);
}

/* A proto built field by field, each repeated field unpacked (one field
 * per value, as older writers do). */
static void put_unpacked(pw_buf *b, uint32_t field, const int64_t *v, int n)
{
    for (int i = 0; i < n; i++)
        pw_put_varint_field(b, field, (uint64_t)v[i]);
}

static void expect_decode_error(const int64_t mesh[4], int tasks, int per_task,
                                const int64_t *coords, int n_coords, const char *message)
{
    pw_buf b = {0};
    put_unpacked(&b, 1, mesh, 4);
    pw_put_varint_field(&b, 2, (uint64_t)tasks);
    pw_put_varint_field(&b, 3, (uint64_t)per_task);
    put_unpacked(&b, 4, coords, n_coords);
    pw_put_varint_field(&b, 9, 7); /* a field to come: skipped */
    tt_topology *t = malloc(sizeof *t);
    char err[256];
    bool ok = tt_decode(b.data, b.len, t, err, sizeof err);
    if (!message && !ok)
        fail_msg("unexpected error: %s", err);
    if (message) {
        assert_false(ok);
        assert_string_equal(err, message);
    }
    free(t);
    pw_buf_free(&b);
}

static void test_decode_checks_the_contract(void **state)
{
    (void)state;
    const int64_t mesh[4] = {2, 1, 1, 1}, coords[8] = {0, 0, 0, 0, 1, 0, 0, 0};
    expect_decode_error(mesh, 1, 2, coords, 8, NULL); /* unpacked reads as packed */
    expect_decode_error(mesh, 1, 3, coords, 8,
                        "num_tasks 1 x num_tpu_devices_per_task 3 cores, but the mesh [2, 1, "
                        "1, 1] holds 2");
    expect_decode_error(mesh, 1, 2, coords, 7,
                        "device_coordinates has 7 values for 2 cores: give 4 per core");
    const int64_t outside[8] = {0, 0, 0, 0, 2, 0, 0, 0};
    expect_decode_error(mesh, 1, 2, outside, 8,
                        "device_coordinates of core 1, [2, 0, 0, 0], outside the mesh");
    const int64_t twice[8] = {1, 0, 0, 0, 1, 0, 0, 0};
    expect_decode_error(mesh, 1, 2, twice, 8,
                        "device_coordinates of core 1, [1, 0, 0, 0], given twice");
    const int64_t flat[4] = {2, 1, 1, 0};
    expect_decode_error(flat, 1, 2, coords, 8, "mesh_shape[3] is 0, not in [1, 256]");
    expect_decode_error(mesh, 1, 2, coords, 8 - 8, /* no coordinates at all */
                        "device_coordinates has 0 values for 2 cores: give 4 per core");
    tt_topology *t = malloc(sizeof *t);
    char err[256];
    assert_false(tt_decode("\x0a\x05\x02", 3, t, err, sizeof err));
    assert_string_equal(err, "not a protocol buffer message: a length runs past the end of the "
                             "message");
    assert_false(tt_decode("\x0a\x02\x02\x02", 4, t, err, sizeof err));
    assert_string_equal(err, "mesh_shape has 2 sizes, not 4 ([x, y, z, cores per chip])");
    free(t);
}

/* ------------------------------------------------------------ the options */

/* The serialized 2x2 slice, escaped as agc-convert --print-topology
 * prints it. */
static char *escaped(const char *slice)
{
    unsigned char buf[4096];
    size_t n = ag_tpu_topology_serialize(slice, buf, sizeof buf);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    tp_print_bytes(f, buf, n);
    fclose(f);
    return text;
}

static bool parse(const char *text, cv_options *o, char *err, size_t errlen)
{
    return cv_options_parse(text, "opts.txt", o, err, errlen);
}

/* Printed, pasted into the options, read back: the same bytes. */
static void test_printed_topology_pastes_back(void **state)
{
    (void)state;
    char *topo = escaped("2x4");
    char text[8192], err[512];
    snprintf(text, sizeof text,
             "xla_sharding_options {\n  topology: %s\n  device_assignment: [1, 3, 0, 0]\n}\n",
             topo);
    cv_options *o = malloc(sizeof *o);
    if (!parse(text, o, err, sizeof err))
        fail_msg("%s", err);
    unsigned char want[4096];
    size_t n = ag_tpu_topology_serialize("2x4", want, sizeof want);
    assert_int_equal(o->xla_sharding_options.topology_len, n);
    assert_memory_equal(o->xla_sharding_options.topology, want, n);
    /* the options' own printer writes the bytes the same way */
    char *printed = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&printed, &len);
    cv_options_print(o, f);
    fclose(f);
    assert_non_null(strstr(printed, topo));
    free(printed);
    free(topo);
    free(o);
}

static void expect_error(const char *text, const char *message)
{
    cv_options *o = malloc(sizeof *o);
    char err[512];
    assert_false(parse(text, o, err, sizeof err));
    assert_string_equal(err, message);
    free(o);
}

/* All four cores of a 2x2, named or serialized: every check passes. */
static void test_a_whole_slice_passes_the_checks(void **state)
{
    (void)state;
    char *topo = escaped("2x2");
    char text[4096], err[512];
    snprintf(text, sizeof text,
             "xla_sharding_options { num_cores_per_replica: 4 topology: %s\n"
             "  device_assignment: [0, 0, 0, 0,  1, 0, 0, 0,  0, 1, 0, 0,  1, 1, 0, 0] }",
             topo);
    cv_options *o = malloc(sizeof *o);
    if (!parse(text, o, err, sizeof err))
        fail_msg("%s", err);
    assert_int_equal(o->xla_sharding_options.num_cores_per_replica, 4);
    assert_int_equal(o->xla_sharding_options.n_device_assignment, 16);
    if (!parse("xla_sharding_options { num_cores_per_replica: 4 topology: \"2x2\" }", o, err,
               sizeof err))
        fail_msg("%s", err);
    free(o);
    free(topo);
}

static void test_sharding_errors_are_located(void **state)
{
    (void)state;
    expect_error("xla_sharding_options { num_cores_per_replica: 2 }",
                 "opts.txt:1:47: num_cores_per_replica 2 needs a topology: give topology: "
                 "\"2x2\" (a slice's name) or a serialized TopologyProto");
    expect_error("xla_sharding_options { num_cores_per_replica: 3 topology: \"2x2\" }",
                 "opts.txt:1:47: num_cores_per_replica 3 does not divide the 4 cores of the "
                 "topology");
    expect_error("xla_sharding_options { num_cores_per_replica: 2 topology: \"2x2\"\n"
                 "  device_assignment: [0, 0, 0, 0] }",
                 "opts.txt:2:23: device_assignment has 4 values for num_cores_per_replica 2: "
                 "give 4 per core, [x, y, z, core]");
    expect_error("xla_sharding_options { device_assignment: [0, 0, 0, 1] }",
                 "opts.txt:1:44: device [0, 0, 0, 1] of device_assignment is outside the "
                 "topology's mesh [1, 1, 1, 1]");
    expect_error("xla_sharding_options { topology: \"17x17\" }",
                 "opts.txt:1:34: bad topology \"17x17\": a slice's name is the chips' grid, AxB "
                 "or AxBxC, of at most 256 chips, like \"2x2\"");
    /* the mesh of 2x2 with one core missing, pasted as bytes */
    expect_error("xla_sharding_options {\n  topology: \"\\n\\004\\002\\002\\001\\001\\020\\001"
                 "\\030\\003\" }",
                 "opts.txt:2:13: bad topology: not a serialized TopologyProto (num_tasks 1 x "
                 "num_tpu_devices_per_task 3 cores, but the mesh [2, 2, 1, 1] holds 4); give a "
                 "slice's name like \"2x2\", or the bytes agc-convert --print-topology=2x2 "
                 "prints");
}

/* A bytes field keeps NULs, written octal or hex; a string still refuses
 * them (a C string would end there). */
static void test_bytes_hold_nuls(void **state)
{
    (void)state;
    cv_options *o = malloc(sizeof *o);
    char err[512];
    assert_false(parse("xla_sharding_options { topology: \"\\000\\x00\" }", o, err, sizeof err));
    assert_string_equal(err, "opts.txt:1:34: bad topology: not a serialized TopologyProto (not a "
                             "protocol buffer message: a field number out of range); give a slice's name "
                             "like \"2x2\", or the bytes agc-convert --print-topology=2x2 "
                             "prints");
    expect_error("tpu_functions { function_alias: \"a\\000b\" }",
                 "opts.txt:1:33: unknown escape '\\0' in a string (or a NUL byte)");
    free(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_2x2_is_the_wire_form),
        cmocka_unit_test(test_named_slices_decode_back),
        cmocka_unit_test(test_decode_checks_the_contract),
        cmocka_unit_test(test_printed_topology_pastes_back),
        cmocka_unit_test(test_a_whole_slice_passes_the_checks),
        cmocka_unit_test(test_sharding_errors_are_located),
        cmocka_unit_test(test_bytes_hold_nuls),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
