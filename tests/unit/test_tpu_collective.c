/*
 * test_tpu_collective.c - the slice in the TPU-model's device spec (its
 * mesh and inter-chip links, spec.c) and the collectives' cost on those
 * links (collective.c): rings along the mesh's axes, step by step,
 * against the ring formula.
 */
#include "test_util.h"

#include "collective.h"
#include "spec.h"

#include <math.h>
#include <string.h>

/* ------------------------------------------------------------------ spec */

static void test_slice_defaults_and_fields(void **state)
{
    (void)state;
    tpu_spec d, s;
    char err[512];
    tpu_spec_default(&d);
    assert_int_equal(d.chips, 1);
    assert_int_equal(d.mesh.x, 1);
    assert_int_equal(d.mesh.y, 1);
    assert_int_equal(d.ici.links_per_chip, 4);
    assert_true(d.ici.bandwidth == 45e9);
    assert_true(d.ici.latency_ns == 1000);
    assert_int_equal(d.ici.wraparound_chips, 16);
    /* the documented spec file says the same */
    if (!tpu_spec_load(TEST_TPU_SPEC, &s, err, sizeof err))
        fail_msg("%s", err);
    assert_memory_equal(&s.mesh, &d.mesh, sizeof d.mesh);
    assert_memory_equal(&s.ici, &d.ici, sizeof d.ici);
    assert_true(tpu_spec_parse("ici { bandwidth: 5e10 latency_ns: 700 wraparound_chips: 8 }",
                               "spec.txt", &s, err, sizeof err));
    assert_true(s.ici.bandwidth == 5e10);
    assert_int_equal(s.ici.wraparound_chips, 8);
}

static void expect_spec_error(const char *text, const char *message)
{
    tpu_spec s;
    char err[512];
    assert_false(tpu_spec_parse(text, "spec.txt", &s, err, sizeof err));
    assert_string_equal(err, message);
}

/* Every field of the slice does something or is refused. */
static void test_slice_errors(void **state)
{
    (void)state;
    expect_spec_error("mesh { x: 2 y: 2 }", "spec.txt: mesh 2x2 holds 4 chips, but chips is 1");
    expect_spec_error("mesh { x: 2 y: 2 }\nici { links_per_chip: 2 }",
                      "spec.txt: ici.links_per_chip 2 is too few for the mesh 2x2: a chip links "
                      "to 2 neighbours along each axis longer than one chip");
    expect_spec_error("ici { capacity_bytes: 1 }",
                      "spec.txt:1:7: unknown field 'capacity_bytes' in IciSpec");
    expect_spec_error("ici { wraparound_chips: 2 }",
                      "spec.txt:1:25: field 'wraparound_chips' of IciSpec must be in [3, 256], "
                      "got 2");
    expect_spec_error("mesh { z: 1 }", "spec.txt:1:8: unknown field 'z' in MeshSpec; did you mean 'x'?");
}

/* ----------------------------------------------------------- collectives */

static double rel_diff(double a, double b) { return fabs(a - b) / b; }

/* From 1 KiB to 1 GiB, every collective on lines and on the torus of 16,
 * within 5% of (n - 1) / n x bytes / bandwidth + (n - 1) step latencies:
 * the rings' routes load every link once a step. */
static void test_rings_meet_the_formula(void **state)
{
    (void)state;
    tpu_spec s;
    tpu_spec_default(&s);
    static const int sizes[] = {2, 3, 4, 8, 15, 16};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        for (int64_t bytes = 1 << 10; bytes <= (int64_t)1 << 30; bytes <<= 2)
            for (int k = TPU_ALL_GATHER; k <= TPU_ALL_REDUCE; k++) {
                double sim = tpu_coll_axis_seconds(&s, k, bytes, sizes[i]);
                double ring = tpu_coll_ring_formula(&s, k, bytes, sizes[i]);
                if (rel_diff(sim, ring) > 0.05)
                    fail_msg("%s of %lld bytes on %d chips: %g s simulated, %g s by the ring "
                             "formula",
                             tpu_coll_name(k), (long long)bytes, sizes[i], sim, ring);
            }
}

/* The figures by hand: 1 MiB all-gathered on a torus of 16 (two rings of
 * 32 KiB chunks, 15 steps of one hop) and on a line of 4 (one folded
 * ring of 256 KiB chunks, 3 steps of two hops); all-reduce twice that. */
static void test_rings_by_hand(void **state)
{
    (void)state;
    tpu_spec s;
    tpu_spec_default(&s);
    double torus = 15 * (32768 / 45e9 + 1e-6), line = 3 * (262144 / 45e9 + 2e-6);
    assert_true(rel_diff(tpu_coll_axis_seconds(&s, TPU_ALL_GATHER, 1 << 20, 16), torus) < 1e-12);
    assert_true(rel_diff(tpu_coll_axis_seconds(&s, TPU_REDUCE_SCATTER, 1 << 20, 4), line) <
                1e-12);
    assert_true(rel_diff(tpu_coll_axis_seconds(&s, TPU_ALL_REDUCE, 1 << 20, 4), 2 * line) <
                1e-12);
    assert_true(tpu_coll_axis_seconds(&s, TPU_ALL_REDUCE, 1 << 20, 1) == 0);
    tpu_ring g = tpu_coll_ring(&s, 16);
    assert_true(g.torus);
    assert_int_equal(g.rings, 2);
    g = tpu_coll_ring(&s, 8);
    assert_false(g.torus);
    assert_int_equal(g.hops_per_step, 2);
    /* a shorter wraparound makes the axis of 8 a torus */
    s.ici.wraparound_chips = 8;
    assert_true(tpu_coll_ring(&s, 8).torus);
}

/* Over a mesh, axis after axis: a 2x2 all-reduce is a reduce-scatter
 * along y on the whole and along x on half, then the all-gathers back. */
static void test_mesh_is_axis_after_axis(void **state)
{
    (void)state;
    tpu_spec s;
    tpu_spec_default(&s);
    int64_t b = 1 << 24;
    double rs = tpu_coll_axis_seconds(&s, TPU_REDUCE_SCATTER, b, 2) +
                tpu_coll_axis_seconds(&s, TPU_REDUCE_SCATTER, b / 2, 2);
    assert_true(rel_diff(tpu_coll_mesh_seconds(&s, TPU_ALL_REDUCE, b, 2, 2), 2 * rs) < 1e-12);
    assert_true(tpu_coll_mesh_seconds(&s, TPU_ALL_GATHER, b, 1, 1) == 0);
    assert_true(rel_diff(tpu_coll_mesh_seconds(&s, TPU_ALL_GATHER, b, 4, 1),
                         tpu_coll_axis_seconds(&s, TPU_ALL_GATHER, b, 4)) < 1e-12);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slice_defaults_and_fields),
        cmocka_unit_test(test_slice_errors),
        cmocka_unit_test(test_rings_meet_the_formula),
        cmocka_unit_test(test_rings_by_hand),
        cmocka_unit_test(test_mesh_is_axis_after_axis),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
