/*
 * test_tpu_chips.c - a slice's chips simulated on threads, and uneven
 * splits (backend/tpu/pool.c, partition.c, sharded.c, sim.c): the pool
 * runs every task once; shares of a dimension the chips do not divide
 * differ by a unit; on 3 and 6 chips M and N uneven splits give one
 * chip's bits and K ones the chip-order sum; chips with different shares
 * run different programs, each timed, a collective starting when the
 * slowest reaches it; and results, profile and trace are the same bytes
 * with one thread and with several.
 */
#include "test_util.h"

#include "numerics.h"
#include "partition.h"
#include "pool.h"
#include "program.h"
#include "tpu_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Dimensions 3 and 6 chips do not divide: 64 rows, 520 and 200 of k,
 * 200 and 136 columns. */
static const char *const mlp =
    "func @mlp(%0: f32[64,520], %1: f32[520,200], %2: f32[200], %3: f32[200,136]) "
    "-> (f32[64,136]) {\n"
    "  %4 = matmul(%0, %1) : f32[64,200]\n"
    "  %5 = add(%4, %2) : f32[64,200]\n"
    "  %6 = relu(%5) : f32[64,200]\n"
    "  %7 = matmul(%6, %3) : f32[64,136]\n"
    "  %8 = tanh(%7) : f32[64,136]\n"
    "  return %8\n}\n";

static const char *const meshes[] = {"chips: 3 mesh { x: 3 }", "chips: 6 mesh { x: 3 y: 2 }"};

typedef struct args {
    rt_value *v[4];
} args;

static args mlp_inputs(void)
{
    args a = {{tpu_random_f32(&AG_SHAPE(64, 520), 1), tpu_random_f32(&AG_SHAPE(520, 200), 2),
               tpu_random_f32(&AG_SHAPE(200), 3), tpu_random_f32(&AG_SHAPE(200, 136), 4)}};
    return a;
}

static void args_free(args *a)
{
    for (int i = 0; i < 4; i++)
        rt_value_free(a->v[i]);
}

static rt_value *run(const tpu_program *p, const args *a, tpu_profile *prof, tpu_timeline *tl)
{
    rt_value *out = NULL;
    tpu_profile local;
    assert_true(tpu_run(p, a->v, 4, &out, prof ? prof : &local, tl));
    return out;
}

/* ----------------------------------------------------------- the pool */

typedef struct counts {
    int hits[1000];
} counts;

static void count_task(void *ctx, int i) { ((counts *)ctx)->hits[i]++; }

static void test_pool_runs_every_task_once(void **state)
{
    (void)state;
    static const int threads[] = {1, 2, 4};
    for (size_t t = 0; t < sizeof threads / sizeof *threads; t++) {
        tpu_pool *pool = tpu_pool_new(threads[t]);
        for (int round = 0; round < 3; round++) { /* a pool runs many times */
            counts c = {{0}};
            tpu_pool_run(pool, 1000, count_task, &c);
            for (int i = 0; i < 1000; i++)
                assert_int_equal(c.hits[i], 1);
        }
        tpu_pool_free(pool);
    }
    tpu_pool_set_threads(5);
    assert_int_equal(tpu_pool_threads_for(3), 3); /* at most the tasks */
    assert_int_equal(tpu_pool_threads_for(100), 5);
    tpu_pool_set_threads(0);
    assert_int_equal(tpu_pool_threads_for(1), 1);
    assert_true(tpu_pool_threads_for(100) >= 1);
}

/* ---------------------------------------------------------- the shares */

static void share(int64_t d, int chips, int c, int64_t from, int64_t to)
{
    int64_t f, t;
    tpu_slice_share(d, chips, c, &f, &t);
    if (f != from || t != to)
        fail_msg("%lld over %d chips, chip %d: [%lld, %lld), not [%lld, %lld)", (long long)d,
                 chips, c, (long long)f, (long long)t, (long long)from, (long long)to);
}

/* Even when the chips divide; else units of TPU_SHARE_UNIT, the last
 * chip's share ending the dimension. */
static void test_shares_differ_by_a_unit(void **state)
{
    (void)state;
    assert_int_equal(TPU_SHARE_UNIT, 8);
    share(64, 4, 1, 16, 32); /* even */
    share(6, 3, 2, 4, 6);    /* even, below a unit */
    share(64, 3, 0, 0, 16);  /* 8 units: 2, 3, 3 */
    share(64, 3, 1, 16, 40);
    share(64, 3, 2, 40, 64);
    share(130, 3, 0, 0, 40); /* 17 units: 5, 6, 6, the last one short */
    share(130, 3, 2, 88, 130);
    assert_true(tpu_slice_can_split(64, 3));
    assert_true(tpu_slice_can_split(24, 3));
    assert_false(tpu_slice_can_split(6, 4));  /* one unit for four chips */
    assert_false(tpu_slice_can_split(10, 4)); /* two */
    assert_false(tpu_slice_can_split(0, 2));
    for (int chips = 2; chips <= 16; chips++)
        for (int64_t d = 1; d <= 300; d++) {
            if (!tpu_slice_can_split(d, chips))
                continue;
            int64_t lo = d, hi = 0, end = 0;
            for (int c = 0; c < chips; c++) {
                int64_t f, t;
                tpu_slice_share(d, chips, c, &f, &t);
                assert_int_equal(f, end); /* contiguous, in chip order */
                end = t;
                lo = t - f < lo ? t - f : lo;
                hi = t - f > hi ? t - f : hi;
            }
            assert_int_equal(end, d);
            assert_true(lo >= 1 && hi - lo <= TPU_SHARE_UNIT);
        }
}

/* ----------------------------------------------------------- numerics */

/* Uneven M and N splits on 3 and 6 chips give one chip's bits, and the
 * chips run more than one program. */
static void test_uneven_rows_and_columns_are_one_chips_bits(void **state)
{
    (void)state;
    args a = mlp_inputs();
    compiled one = compile_v5e(mlp);
    rt_value *want = run(one.p, &a, NULL, NULL);
    static const char *const forced[] = {"ROWS", "COLUMNS"};
    static const tpu_split split[] = {TPU_SPLIT_M, TPU_SPLIT_N};
    for (size_t m = 0; m < sizeof meshes / sizeof *meshes; m++)
        for (int f = 0; f < 2; f++) {
            char spec[128];
            snprintf(spec, sizeof spec, "%s partition: %s", meshes[m], forced[f]);
            build b = compile_ok(mlp, spec);
            assert_int_equal(b.p->slice->node[4].split, split[f]);
            assert_int_equal(b.p->slice->node[7].split, split[f]);
            assert_true(b.p->slice->n_programs > 1);
            rt_value *got = run(b.p, &a, NULL, NULL);
            if (memcmp(got->data, want->data, (size_t)want->numel * sizeof(float)) != 0)
                fail_msg("%s: not one chip's bits", spec);
            rt_value_free(got);
            build_free(&b);
        }
    rt_value_free(want);
    compiled_free(&one);
    args_free(&a);
}

/* An uneven K split: each chip's share of k in the MXU's order, the
 * partial sums added in chip order, by hand. */
static void test_uneven_contracting_order_by_hand(void **state)
{
    (void)state;
    const char *text = "func @f(%0: f32[8,520], %1: f32[520,128]) -> (f32[8,128]) {\n"
                       "  %2 = matmul(%0, %1) : f32[8,128]\n"
                       "  return %2\n}\n";
    for (size_t m = 0; m < sizeof meshes / sizeof *meshes; m++) {
        char spec[128];
        snprintf(spec, sizeof spec, "%s partition: CONTRACTING", meshes[m]);
        build b = compile_ok(text, spec);
        assert_int_equal(b.p->slice->node[2].split, TPU_SPLIT_K);
        rt_value *in[2] = {tpu_random_f32(&AG_SHAPE(8, 520), 5), tpu_random_f32(&AG_SHAPE(520, 128), 6)};
        rt_value *out = NULL;
        tpu_profile prof;
        assert_true(tpu_run(b.p, in, 2, &out, &prof, NULL));
        const float *x = in[0]->data, *w = in[1]->data;
        static float want[8 * 128], part[8 * 128], cols[8 * 520];
        int chips = b.p->slice->chips;
        for (int c = 0; c < chips; c++) {
            int64_t k0, k1;
            tpu_slice_share(520, chips, c, &k0, &k1);
            for (int i = 0; i < 8; i++) /* chip c's columns of x */
                memcpy(cols + i * (k1 - k0), x + i * 520 + k0, (size_t)(k1 - k0) * sizeof(float));
            tpu_mxu_matmul_f32(cols, w + k0 * 128, part, 8, k1 - k0, 128, TPU_PRECISION_DEFAULT);
            for (int i = 0; i < 8 * 128; i++)
                want[i] = c ? want[i] + part[i] : part[i];
        }
        assert_memory_equal(out->data, want, sizeof want);
        rt_value_free(out);
        rt_value_free(in[0]);
        rt_value_free(in[1]);
        build_free(&b);
    }
}

/* The whole MLP split by k on 3 and 6 chips: within f32 rounding of one
 * chip (at HIGHEST: see test_tpu_shard.c) and the same bits every run. */
static void test_uneven_contracting_within_rounding(void **state)
{
    (void)state;
    args a = mlp_inputs();
    build one = compile_ok(mlp, "precision: HIGHEST");
    rt_value *want = run(one.p, &a, NULL, NULL);
    for (size_t m = 0; m < sizeof meshes / sizeof *meshes; m++) {
        char spec[128];
        snprintf(spec, sizeof spec, "%s partition: CONTRACTING precision: HIGHEST", meshes[m]);
        build b = compile_ok(mlp, spec);
        assert_int_equal(b.p->slice->node[4].split, TPU_SPLIT_K);
        rt_value *got = run(b.p, &a, NULL, NULL), *again = run(b.p, &a, NULL, NULL);
        assert_memory_equal(got->data, again->data, (size_t)got->numel * sizeof(float));
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
    args_free(&a);
}

/* A conv2d's 20 images over 3 chips: 8, 8 and 4, one chip's bits. */
static void test_uneven_images_are_one_chips_bits(void **state)
{
    (void)state;
    const char *text = "func @c(%0: f32[20,6,6,3], %1: f32[3,3,3,16]) -> (f32[20,6,6,16]) {\n"
                       "  %2 = conv2d(%0, %1) {strides = [1,1], padding = SAME} : "
                       "f32[20,6,6,16]\n"
                       "  return %2\n}\n";
    compiled one = compile_v5e(text);
    build b = compile_ok(text, "chips: 3 mesh { x: 3 } partition: ROWS");
    assert_int_equal(b.p->slice->node[2].split, TPU_SPLIT_M);
    assert_int_equal(b.p->slice->n_programs, 2);
    rt_value *in[2] = {tpu_random_f32(&AG_SHAPE(20, 6, 6, 3), 9), tpu_random_f32(&AG_SHAPE(3, 3, 3, 16), 10)};
    rt_value *want = NULL, *got = NULL;
    tpu_profile prof;
    assert_true(tpu_run(one.p, in, 2, &want, &prof, NULL));
    assert_true(tpu_run(b.p, in, 2, &got, &prof, NULL));
    assert_memory_equal(got->data, want->data, (size_t)want->numel * sizeof(float));
    rt_value_free(want);
    rt_value_free(got);
    rt_value_free(in[0]);
    rt_value_free(in[1]);
    build_free(&b);
    compiled_free(&one);
}

/* ------------------------------------------------ programs and timing */

static char *listing(const tpu_program *p)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    tpu_program_print(p, f);
    fclose(f);
    return text;
}

static char *profile_text(const tpu_profile *prof)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    tpu_profile_print(prof, "mlp", f);
    fclose(f);
    return text;
}

/* 64 rows over 3 chips: 16, 24 and 24. Chip 0 runs one program, chips 1
 * and 2 another; each is timed, chip 0's product is shorter, and the
 * profile's units are the slowest chip's. */
static void test_uneven_chips_run_their_own_programs(void **state)
{
    (void)state;
    args a = mlp_inputs();
    build b = compile_ok(mlp, "chips: 3 mesh { x: 3 } partition: ROWS");
    const tpu_slice *s = b.p->slice;
    assert_int_equal(s->n_programs, 2);
    assert_int_equal(s->program_of[0], 0);
    assert_int_equal(s->program_of[1], 1);
    assert_int_equal(s->program_of[2], 1);
    assert_int_equal(b.p->programs[0]->fn->body->params[0]->type.shape.dims[0], 16);
    assert_int_equal(b.p->programs[1]->fn->body->params[0]->type.shape.dims[0], 24);
    char *text = listing(b.p);
    assert_non_null(strstr(text, "; slice 3x1 (3 chips over ICI): shares differ by up to 8 rows "
                                 "or columns, so the chips run 2 programs; this is chip 0's"));
    assert_non_null(strstr(text, "dma.h2d     %0 f32[16,520]"));
    free(text);
    tpu_profile prof;
    rt_value *out = run(b.p, &a, &prof, NULL);
    assert_int_equal(prof.programs, 2);
    assert_int_equal(prof.slowest, 1);
    assert_true(prof.chip[0].mxu < prof.chip[1].mxu);
    assert_true(prof.chip[0].hbm_bytes < prof.chip[1].hbm_bytes);
    assert_true(prof.chip[1].mxu == prof.chip[2].mxu);
    assert_true(prof.chip[0].cycles < prof.chip[1].cycles);
    assert_int_equal(prof.cycles, prof.chip[1].cycles);
    assert_int_equal(prof.busy[TPU_UNIT_MXU], prof.chip[1].mxu);
    /* the slice's multiply-adds: every chip's rows once */
    assert_int_equal(prof.macs, 64 * 520 * 200 + 64 * 200 * 136);
    text = profile_text(&prof);
    assert_non_null(strstr(text, "  slice 3x1: 3 chips, running 2 programs on shares that differ "
                                 "by a unit; the units above are chip 1's, the slowest"));
    assert_non_null(strstr(text, "hbm bytes  cycles\n"));
    free(text);
    rt_value_free(out);
    build_free(&b);
    args_free(&a);
}

/* The end of value v's own work on program k (not its collective). */
static int64_t made_at(const tpu_timeline *t, int k, int v0, int v1)
{
    int64_t end = 0;
    for (int i = 0; i < t->n; i++) {
        const tpu_event *e = &t->ev[i];
        if (e->program == k && e->value >= v0 && e->value <= v1 && e->unit < TPU_N_UNITS &&
            e->start + e->cycles > end)
            end = e->start + e->cycles;
    }
    return end;
}

/* 64 rows over 3 chips (16, 24, 24), whose softmax needs them whole:
 * the all-gather of %5 starts on every chip when the slowest has made
 * its share. */
static void test_collective_waits_for_the_slowest_chip(void **state)
{
    (void)state;
    const char *text =
        "func @mlp(%0: f32[64,520], %1: f32[520,200], %2: f32[200], %3: f32[200,136]) "
        "-> (f32[64,200]) {\n"
        "  %4 = matmul(%0, %1) : f32[64,200]\n"
        "  %5 = add(%4, %2) : f32[64,200]\n"
        "  %6 = softmax(%5) {axis = -1} : f32[64,200]\n"
        "  return %6\n}\n";
    args a = mlp_inputs();
    build b = compile_ok(text, "chips: 3 mesh { x: 3 } partition: ROWS");
    assert_int_equal(b.p->slice->n_programs, 2);
    assert_true(b.p->slice->node[5].collective);
    tpu_profile prof;
    tpu_timeline tl = {0};
    rt_value *out = run(b.p, &a, &prof, &tl);
    assert_non_null(tl.program_of);
    int64_t first = INT64_MAX, latest = 0, fastest = INT64_MAX;
    for (int k = 0; k < 3; k++) {
        int64_t made = made_at(&tl, b.p->slice->program_of[k], 4, 5);
        latest = made > latest ? made : latest;
        fastest = made < fastest ? made : fastest;
    }
    int gathers = 0;
    for (int i = 0; i < tl.n; i++) {
        const tpu_event *e = &tl.ev[i];
        if (e->value != 5 || e->unit != TPU_UNIT_ICI_X)
            continue;
        gathers++;
        first = e->start < first ? e->start : first;
        assert_int_equal(e->start, first); /* at once on every chip */
    }
    assert_int_equal(gathers, 2); /* one a program */
    assert_true(fastest < latest); /* the chips differ */
    assert_int_equal(first, latest); /* the links were free: it starts at the slowest */
    rt_value_free(out);
    tpu_timeline_free(&tl);
    build_free(&b);
    args_free(&a);
}

/* ------------------------------------------------------------ threads */

static char *read_all(const char *path)
{
    FILE *in = fopen(path, "r");
    assert_non_null(in);
    char *text = NULL;
    size_t len = 0, n;
    char buf[4096];
    FILE *out = open_memstream(&text, &len);
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        fwrite(buf, 1, n, out);
    fclose(in);
    fclose(out);
    return text;
}

typedef struct outcome {
    rt_value *out;
    char *profile, *trace;
    tpu_profile timed; /* tpu_time's */
} outcome;

static outcome run_with_threads(const tpu_program *p, const args *a, int threads)
{
    tpu_pool_set_threads(threads);
    outcome o = {0};
    tpu_profile prof;
    tpu_timeline tl = {0};
    o.out = run(p, a, &prof, &tl);
    o.profile = profile_text(&prof);
    char path[] = "/tmp/agc_chips_traceXXXXXX.json";
    int fd = mkstemps(path, 5);
    assert_true(fd >= 0);
    close(fd);
    tpu_trace_add(path, &tl);
    o.trace = read_all(path);
    char svg[4096 + 8];
    tpu_trace_picture_path(path, svg, sizeof svg);
    unlink(svg);
    unlink(path);
    tpu_time(p, &o.timed);
    tpu_pool_set_threads(0);
    return o;
}

static void outcome_free(outcome *o)
{
    rt_value_free(o->out);
    free(o->profile);
    free(o->trace);
}

/* Results, profile and trace are the same bytes with one thread and with
 * several, on uneven and even slices and every split. */
static void test_threads_do_not_change_anything(void **state)
{
    (void)state;
    args a = mlp_inputs();
    static const char *const specs[] = {
        "chips: 6 mesh { x: 3 y: 2 } partition: CONTRACTING",
        "chips: 3 mesh { x: 3 } partition: COLUMNS",
        "chips: 6 mesh { x: 3 y: 2 } partition: ROWS",
        "chips: 6 mesh { x: 3 y: 2 }",
        "chips: 8 mesh { x: 2 y: 4 } partition: CONTRACTING",
    };
    for (size_t i = 0; i < sizeof specs / sizeof *specs; i++) {
        build b = compile_ok(mlp, specs[i]);
        outcome one = run_with_threads(b.p, &a, 1), many = run_with_threads(b.p, &a, 4);
        if (memcmp(one.out->data, many.out->data, (size_t)one.out->numel * sizeof(float)) != 0)
            fail_msg("%s: the results differ with 4 threads", specs[i]);
        assert_string_equal(one.profile, many.profile);
        assert_string_equal(one.trace, many.trace);
        assert_int_equal(one.timed.cycles, many.timed.cycles);
        for (int c = 0; c < b.p->slice->chips; c++)
            assert_int_equal(one.timed.chip[c].cycles, many.timed.chip[c].cycles);
        outcome_free(&one);
        outcome_free(&many);
        build_free(&b);
    }
    args_free(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pool_runs_every_task_once),
        cmocka_unit_test(test_shares_differ_by_a_unit),
        cmocka_unit_test(test_uneven_rows_and_columns_are_one_chips_bits),
        cmocka_unit_test(test_uneven_contracting_order_by_hand),
        cmocka_unit_test(test_uneven_contracting_within_rounding),
        cmocka_unit_test(test_uneven_images_are_one_chips_bits),
        cmocka_unit_test(test_uneven_chips_run_their_own_programs),
        cmocka_unit_test(test_collective_waits_for_the_slowest_chip),
        cmocka_unit_test(test_threads_do_not_change_anything),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
