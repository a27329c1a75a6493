/*
 * test_tpu_shard.c - a TPU program partitioned over several chips
 * (backend/tpu/partition.c, sharded.c): numerics on 2, 4 and 8 chips
 * against one chip (M and N splits bit-identical, K within f32 rounding
 * and the same bits every run), the cost model's choice per product and
 * the user's override, the collectives in the listing and in time, HBM
 * per chip (refused on one chip, fits on four), the profile's slice rows
 * and the trace's tracks per chip.
 */
#include "test_util.h"

#include "numerics.h"
#include "partition.h"
#include "program.h"
#include "tpu_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const mlp =
    "func @mlp(%0: f32[64,256], %1: f32[256,512], %2: f32[512], %3: f32[512,128]) "
    "-> (f32[64,128]) {\n"
    "  %4 = matmul(%0, %1) : f32[64,512]\n"
    "  %5 = add(%4, %2) : f32[64,512]\n"
    "  %6 = relu(%5) : f32[64,512]\n"
    "  %7 = matmul(%6, %3) : f32[64,128]\n"
    "  %8 = tanh(%7) : f32[64,128]\n"
    "  return %8\n}\n";

typedef struct mlp_args {
    rt_value *v[4];
} mlp_args;

static mlp_args mlp_inputs(void)
{
    mlp_args a = {{tpu_random_f32(&AG_SHAPE(64, 256), 1), tpu_random_f32(&AG_SHAPE(256, 512), 2),
                   tpu_random_f32(&AG_SHAPE(512), 3), tpu_random_f32(&AG_SHAPE(512, 128), 4)}};
    return a;
}

static void mlp_args_free(mlp_args *a)
{
    for (int i = 0; i < 4; i++)
        rt_value_free(a->v[i]);
}

static rt_value *run(const tpu_program *p, const mlp_args *a, tpu_profile *prof)
{
    rt_value *out = NULL;
    tpu_profile local;
    assert_true(tpu_run(p, a->v, 4, &out, prof ? prof : &local, NULL));
    return out;
}

static const char *const meshes[] = {"chips: 2 mesh { x: 2 }", "chips: 4 mesh { x: 2 y: 2 }",
                                     "chips: 8 mesh { x: 2 y: 4 }"};

/* ----------------------------------------------------------- numerics */

/* M and N splits give one chip's bits on 2, 4 and 8 chips. */
static void test_rows_and_columns_are_one_chips_bits(void **state)
{
    (void)state;
    mlp_args a = mlp_inputs();
    compiled one = compile_v5e(mlp);
    rt_value *want = run(one.p, &a, NULL);
    static const char *const forced[] = {"ROWS", "COLUMNS", "AUTO", "REPLICATED"};
    for (size_t m = 0; m < sizeof meshes / sizeof *meshes; m++)
        for (size_t f = 0; f < sizeof forced / sizeof *forced; f++) {
            char spec[128];
            snprintf(spec, sizeof spec, "%s partition: %s", meshes[m], forced[f]);
            build b = compile_ok(mlp, spec);
            tpu_split first = b.p->slice->node[4].split;
            if (f == 0)
                assert_int_equal(first, TPU_SPLIT_M);
            if (f == 1)
                assert_int_equal(first, TPU_SPLIT_N);
            if (first == TPU_SPLIT_K || b.p->slice->node[7].split == TPU_SPLIT_K)
                continue; /* AUTO chose K: the next test's */
            rt_value *got = run(b.p, &a, NULL);
            if (memcmp(got->data, want->data, (size_t)want->numel * sizeof(float)) != 0)
                fail_msg("%s: not one chip's bits", spec);
            rt_value_free(got);
            build_free(&b);
        }
    rt_value_free(want);
    compiled_free(&one);
    mlp_args_free(&a);
}

/* K splits: partial sums added in chip order, within f32 rounding of one
 * chip and the same bits on every run. At HIGHEST: at DEFAULT, a sum's
 * last bit may round the next product's bf16 operand the other way, an
 * error of bf16's size (the by-hand test below holds one product). */
static void test_contracting_sums_in_chip_order(void **state)
{
    (void)state;
    mlp_args a = mlp_inputs();
    build one = compile_ok(mlp, "precision: HIGHEST");
    rt_value *want = run(one.p, &a, NULL);
    for (size_t m = 0; m < sizeof meshes / sizeof *meshes; m++) {
        char spec[128];
        snprintf(spec, sizeof spec, "%s partition: CONTRACTING precision: HIGHEST", meshes[m]);
        build b = compile_ok(mlp, spec);
        assert_int_equal(b.p->slice->node[4].split, TPU_SPLIT_K);
        assert_int_equal(b.p->slice->node[7].split, TPU_SPLIT_K);
        rt_value *got = run(b.p, &a, NULL), *again = run(b.p, &a, NULL);
        assert_memory_equal(got->data, again->data, (size_t)got->numel * sizeof(float));
        /* the second product's sums add 512 terms whose sizes add up to
         * about 600: f32 rounds such a sum, in another order, by ~1e-5 */
        const float *g = got->data, *w = want->data;
        for (int64_t i = 0; i < got->numel; i++)
            if (fabsf(g[i] - w[i]) > 1e-4f)
                fail_msg("%s: element %lld is %g, one chip's %g", spec, (long long)i, g[i], w[i]);
        rt_value_free(got);
        rt_value_free(again);
        build_free(&b);
    }
    rt_value_free(want);
    build_free(&one);
    mlp_args_free(&a);
}

/* The K split's sum by hand: chip c's share of k in the MXU's order,
 * then the chips' partial sums in chip order. */
static void test_contracting_order_by_hand(void **state)
{
    (void)state;
    const char *text = "func @f(%0: f32[8,512], %1: f32[512,128]) -> (f32[8,128]) {\n"
                       "  %2 = matmul(%0, %1) : f32[8,128]\n"
                       "  return %2\n}\n";
    build b = compile_ok(text, "chips: 4 mesh { x: 2 y: 2 } partition: CONTRACTING");
    rt_value *args[2] = {tpu_random_f32(&AG_SHAPE(8, 512), 5), tpu_random_f32(&AG_SHAPE(512, 128), 6)};
    rt_value *out = NULL;
    tpu_profile prof;
    assert_true(tpu_run(b.p, args, 2, &out, &prof, NULL));
    const float *x = args[0]->data, *w = args[1]->data;
    float want[8 * 128] = {0}, part[8 * 128], share[8 * 128];
    for (int c = 0; c < 4; c++) {
        for (int i = 0; i < 8; i++) /* chip c's columns of x */
            memcpy(share + i * 128, x + i * 512 + c * 128, 128 * sizeof(float));
        tpu_mxu_matmul_f32(share, w + c * 128 * 128, part, 8, 128, 128, TPU_PRECISION_DEFAULT);
        for (int i = 0; i < 8 * 128; i++)
            want[i] = c ? want[i] + part[i] : part[i];
    }
    assert_memory_equal(out->data, want, sizeof want);
    rt_value_free(out);
    rt_value_free(args[0]);
    rt_value_free(args[1]);
    build_free(&b);
}

/* ------------------------------------------------------ the cost model */

/* A short product splits by columns (a chip then loads a quarter of the
 * weight tiles); a tall one by rows (no collective, the same tiles). */
static void test_cost_model_chooses_per_product(void **state)
{
    (void)state;
    build b = compile_ok(mlp, "chips: 4 mesh { x: 2 y: 2 }");
    assert_int_equal(b.p->slice->node[4].split, TPU_SPLIT_N);
    build_free(&b);
    const char *tall = "func @f(%0: f32[8192,256], %1: f32[256,128]) -> (f32[8192,128]) {\n"
                       "  %2 = matmul(%0, %1) : f32[8192,128]\n"
                       "  return %2\n}\n";
    b = compile_ok(tall, "chips: 4 mesh { x: 2 y: 2 }");
    assert_int_equal(b.p->slice->node[2].split, TPU_SPLIT_M);
    assert_int_equal(b.p->slice->node[0].layout, TPU_ROWS); /* x comes by rows */
    assert_int_equal(b.p->slice->node[1].layout, TPU_WHOLE);
    assert_false(b.p->slice->node[2].collective); /* the result goes home by rows */
    build_free(&b);
}

/* A dimension the chips do not divide, and too short for 8 rows or
 * columns a chip (an uneven split's unit, test_tpu_chips.c), is not split
 * that way. */
static void test_uneven_dimension_is_not_split(void **state)
{
    (void)state;
    const char *odd = "func @f(%0: f32[6,256], %1: f32[256,10]) -> (f32[6,10]) {\n"
                      "  %2 = matmul(%0, %1) : f32[6,10]\n"
                      "  return %2\n}\n";
    build b = compile_ok(odd, "chips: 4 mesh { x: 2 y: 2 } partition: ROWS");
    assert_int_equal(b.p->slice->node[2].split, TPU_SPLIT_NONE);
    build_free(&b);
    b = compile_ok(odd, "chips: 4 mesh { x: 2 y: 2 } partition: CONTRACTING");
    assert_int_equal(b.p->slice->node[2].split, TPU_SPLIT_K); /* only k divides */
    build_free(&b);
    /* left to the cost model it stays whole: its 2 weight tiles fill the
     * 4 MXUs of one chip already, and a K split adds an all-reduce */
    b = compile_ok(odd, "chips: 4 mesh { x: 2 y: 2 }");
    assert_int_equal(b.p->slice->node[2].split, TPU_SPLIT_NONE);
    build_free(&b);
}

/* ---------------------------------------------- the listing and the time */

static char *listing(const tpu_program *p)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    tpu_program_print(p, f);
    fclose(f);
    return text;
}

static void test_listing_names_splits_and_collectives(void **state)
{
    (void)state;
    build b = compile_ok(mlp, "chips: 4 mesh { x: 2 y: 2 } partition: COLUMNS");
    char *text = listing(b.p);
    assert_non_null(strstr(text, "; slice 2x2 (4 chips over ICI)"));
    assert_non_null(strstr(text, "; products split: 0 M (rows), 2 N (columns), 0 K "
                                 "(contracting), 0 none"));
    /* a chip's share: the first product's weights by columns */
    assert_non_null(strstr(text, "dma.h2d     %1 f32[256,128]"));
    assert_non_null(strstr(text, "split N (columns)"));
    /* the second product needs its left operand whole: gathered after its loop */
    assert_non_null(strstr(text, "ici.all-gather %6 f32[64,512]: columns of 4 chips -> whole"));
    /* the loop makes its shares, 8 vregs of %5 and of %6, into a buffer
     * of the whole %6 that the gather fills */
    assert_int_equal(b.p->inst[5].tiles, 16);
    assert_int_equal(b.p->inst[6].padded_bytes, 64 * 512 * 4);
    free(text);
    build_free(&b);
    b = compile_ok(mlp, "chips: 4 mesh { x: 2 y: 2 } partition: CONTRACTING");
    text = listing(b.p);
    assert_non_null(strstr(text, "ici.all-reduce %4 f32[64,512]: partial sums of 4 chips, "
                                 "added in chip order -> whole  131072 B  y "));
    free(text);
    build_free(&b);
}

/* Collectives run on the links' queues for the cycles collective.c
 * gives, and the call waits for them. */
static void test_collectives_in_time(void **state)
{
    (void)state;
    mlp_args a = mlp_inputs();
    build b = compile_ok(mlp, "chips: 4 mesh { x: 2 y: 2 } partition: CONTRACTING");
    tpu_profile prof;
    rt_value *out = run(b.p, &a, &prof);
    const tpu_shard *r4 = &b.p->slice->node[4], *r7 = &b.p->slice->node[7];
    assert_int_equal(r4->n_phases, 4);
    int64_t links = 0;
    for (int i = 0; i < 4; i++)
        links += r4->cycles[i] + r7->cycles[i];
    assert_true(prof.busy[TPU_UNIT_ICI_X] + prof.busy[TPU_UNIT_ICI_Y] == links);
    assert_int_equal(prof.coll_count[TPU_ALL_REDUCE], 2);
    assert_int_equal(prof.coll_bytes[TPU_ALL_REDUCE], r4->bytes + r7->bytes);
    /* the simulated phases are the mesh's all-reduce */
    double mesh = tpu_coll_mesh_seconds(&b.p->spec, TPU_ALL_REDUCE, r4->bytes, 2, 2);
    assert_true(fabs((double)(r4->cycles[0] + r4->cycles[1] + r4->cycles[2] + r4->cycles[3]) /
                         b.p->spec.clock_hz - mesh) < 4 / b.p->spec.clock_hz);
    assert_true(prof.share[TPU_UNIT_ICI_X] + prof.share[TPU_UNIT_ICI_Y] > 0); /* waited */
    assert_int_equal(prof.macs, 64 * 256 * 512 + 64 * 512 * 128); /* the slice's, once */
    rt_value_free(out);
    build_free(&b);
    mlp_args_free(&a);
}

/* ------------------------------------------------------------- HBM */

static const char *const big =
    "func @big(%0: f32[64,2048], %1: f32[2048,2048]) -> (f32[64,2048]) {\n"
    "  %2 = matmul(%0, %1) : f32[64,2048]\n"
    "  return %2\n}\n";

/* 16 MiB of weights: refused by a chip of 12 MiB, naming them; split by
 * columns (or k) they fit four such chips, with one chip's results. */
static void test_weights_too_big_for_one_chip_fit_four(void **state)
{
    (void)state;
    build one = compile_for(big, "hbm { capacity_bytes: 12582912 }");
    assert_null(one.p);
    assert_non_null(strstr(one.d.msg, "the device has 12.0 MiB; live there: %1 (parameter "
                                      "f32[2048,2048], 16.0 MiB)"));
    build_free(&one);
    build four = compile_ok(big, "hbm { capacity_bytes: 12582912 } chips: 4 "
                                 "mesh { x: 2 y: 2 }");
    tpu_split s = four.p->slice->node[2].split;
    assert_true(s == TPU_SPLIT_N || s == TPU_SPLIT_K);
    assert_true(four.p->hbm_bytes <= 12582912);
    build ref = compile_ok(big, "");
    rt_value *args[2] = {tpu_random_f32(&AG_SHAPE(64, 2048), 7),
                         tpu_random_f32(&AG_SHAPE(2048, 2048), 8)};
    rt_value *want = NULL, *got = NULL;
    tpu_profile prof;
    assert_true(tpu_run(ref.p, args, 2, &want, &prof, NULL));
    assert_true(tpu_run(four.p, args, 2, &got, &prof, NULL));
    const float *g = got->data, *w = want->data;
    for (int64_t i = 0; i < got->numel; i++)
        assert_true(fabsf(g[i] - w[i]) <= 1e-5f * (1 + fabsf(w[i])));
    /* rows keep the weights whole on every chip: forced, they do not fit */
    build rows = compile_for(big, "hbm { capacity_bytes: 12582912 } chips: 4 "
                                  "mesh { x: 2 y: 2 } partition: ROWS");
    assert_null(rows.p);
    assert_non_null(strstr(rows.d.msg, "%1 (parameter f32[2048,2048], 16.0 MiB)"));
    build_free(&rows);
    rt_value_free(want);
    rt_value_free(got);
    rt_value_free(args[0]);
    rt_value_free(args[1]);
    build_free(&ref);
    build_free(&four);
}

/* --------------------------------------------------- profile and trace */

static void test_profile_and_trace_per_chip(void **state)
{
    (void)state;
    mlp_args a = mlp_inputs();
    build b = compile_ok(mlp, "chips: 4 mesh { x: 2 y: 2 }");
    tpu_profile prof;
    tpu_timeline tl = {0};
    rt_value *out = NULL;
    assert_true(tpu_run(b.p, a.v, 4, &out, &prof, &tl));
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    tpu_profile_print(&prof, "mlp", f);
    fclose(f);
    assert_non_null(strstr(text, "  ici.x "));
    assert_non_null(strstr(text, "  slice 2x2: 4 chips, each running the same program"));
    assert_non_null(strstr(text, "\n     3  (1,1) "));
    assert_non_null(strstr(text, "  waiting on links "));
    free(text);
    char path[] = "/tmp/agc_shard_traceXXXXXX.json";
    int fd = mkstemps(path, 5);
    assert_true(fd >= 0);
    close(fd);
    tpu_trace_add(path, &tl);
    FILE *in = fopen(path, "r");
    char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, in);
    buf[n] = '\0';
    fclose(in);
    assert_non_null(strstr(buf, "\"args\": {\"name\": \"chip 3\"}"));
    assert_non_null(strstr(buf, "\"pid\": 4, \"tid\": 10, \"args\": {\"name\": \"ici.y\"}"));
    char svg[4096 + 8];
    tpu_trace_picture_path(path, svg, sizeof svg);
    unlink(svg);
    unlink(path);
    rt_value_free(out);
    build_free(&b);
    mlp_args_free(&a);
}

static void test_spec_slice_fields(void **state)
{
    (void)state;
    tpu_spec s;
    char err[256];
    assert_true(tpu_spec_parse("chips: 8 mesh { x: 2 y: 4 } partition: CONTRACTING", "spec", &s,
                               err, sizeof err));
    assert_int_equal(s.chips, 8);
    assert_int_equal(s.partition, TPU_PARTITION_CONTRACTING);
    assert_false(tpu_spec_parse("partition: DIAGONAL", "spec", &s, err, sizeof err));
    assert_non_null(strstr(err, "DIAGONAL"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows_and_columns_are_one_chips_bits),
        cmocka_unit_test(test_contracting_sums_in_chip_order),
        cmocka_unit_test(test_contracting_order_by_hand),
        cmocka_unit_test(test_cost_model_chooses_per_product),
        cmocka_unit_test(test_uneven_dimension_is_not_split),
        cmocka_unit_test(test_listing_names_splits_and_collectives),
        cmocka_unit_test(test_collectives_in_time),
        cmocka_unit_test(test_weights_too_big_for_one_chip_fit_four),
        cmocka_unit_test(test_profile_and_trace_per_chip),
        cmocka_unit_test(test_spec_slice_fields),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
