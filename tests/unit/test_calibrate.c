/*
 * test_calibrate.c - static range calibration (converter/calibrate.c):
 * which tensors it watches, the ranges of each method on a data set whose
 * values are known, and a branch no sample reached; and the plan made of
 * them (converter/quantize.c): the scales' arithmetic, what is quantized
 * and why the rest stays float.
 */
#include "test_util.h"

#include "ir.h"
#include "quantize.h"

#include <math.h>
#include <unistd.h>

/* x [1,2] times diag(1, 2), plus [0.5, -100], relu; then, only when p,
 * a second product inside a staged if. */
static const char model_ir[] =
    "func @f(%0: f32[1,2], %1: bool[]) -> (f32[1,2]) {\n"
    "  %2 = const() {value = [1, 0, 0, 2]} : f32[2,2]\n"
    "  %3 = matmul(%0, %2) : f32[1,2] loc(\"m.c\":10:3)\n"
    "  %4 = const() {value = [0.5, -100]} : f32[2]\n"
    "  %5 = add(%3, %4) : f32[1,2] loc(\"m.c\":11:3)\n"
    "  %6 = relu(%5) : f32[1,2] loc(\"m.c\":12:3)\n"
    "  %7 = cond(%1, %6) : (f32[1,2]) {\n"
    "  ^then(%8: f32[1,2]):\n"
    "    %9 = const() {value = [1, 0, 0, 1]} : f32[2,2]\n"
    "    %10 = matmul(%8, %9) : f32[1,2] loc(\"m.c\":20:5)\n"
    "    yield %10\n"
    "  ^else(%11: f32[1,2]):\n"
    "    yield %11\n"
    "  }\n"
    "  %12 = get(%7) {index = 0} : f32[1,2]\n"
    "  return %12\n"
    "}\n";

static const ag_tensor_spec specs[] = {
    {"x", AG_F32, {2, {1, 2}}},
    {"p", AG_BOOL, {0, {0}}},
};
static const ag_signature_def sig = {"serving_default", 2, 0, specs, NULL};

TU_GROUP_IN_TEMP_DIR("ag-calibrate")

/* Samples x = (k, -k) for k = 1..n, p false. */
static void write_samples(const char *path, int n)
{
    ag_dataset_writer *w = ag_dataset_writer_open(path);
    assert_non_null(w);
    for (int k = 1; k <= n; k++) {
        ag_scope_push();
        float x[2] = {(float)k, (float)-k};
        ag_named_tensor in[2] = {
            {"x", ag_from_data(AG_F32, AG_SHAPE(1, 2), x)},
            {"p", ag_scalar_bool(false)},
        };
        assert_true(ag_dataset_writer_add(w, in, 2));
        ag_scope_pop();
    }
    assert_true(ag_dataset_writer_close(w));
}

static ir_function *parse_model(void)
{
    char err[512];
    ir_function *fn = ir_parse(model_ir, "m.ir", err, sizeof err);
    if (!fn)
        fail_msg("%s", err);
    return fn;
}

/* The node of fn's top level (or its first region's) with this id. */
static const ir_node *node_of(const ir_graph *g, int id)
{
    for (const ir_node *n = g->first; n; n = n->next) {
        if (n->id == id)
            return n;
        for (int r = 0; r < 2; r++)
            if (n->region[r] && node_of(n->region[r], id))
                return node_of(n->region[r], id);
    }
    return NULL;
}

static void test_products_and_chains(void **state)
{
    (void)state;
    ir_function *fn = parse_model();
    const ir_node *mm = node_of(fn->body, 3), *inner = node_of(fn->body, 10);
    assert_true(cv_is_quantizable_product(mm));
    assert_true(cv_is_quantizable_product(inner));
    assert_false(cv_is_quantizable_product(node_of(fn->body, 5)));
    assert_int_equal(cv_chain_end(fn, mm)->id, 6);   /* matmul, bias add, relu */
    assert_int_equal(cv_chain_end(fn, inner)->id, 10); /* read by yield: itself */
    ir_function_free(fn);
}

static void test_ranges_and_unreached_branch(void **state)
{
    (void)state;
    write_samples("calib.tfrecord", 4);
    ir_function *fn = parse_model();
    cv_calibration c;
    char err[512];
    if (!cv_calibrate(fn, &sig, "calib.tfrecord", &c, err, sizeof err))
        fail_msg("%s", err);
    assert_int_equal(c.n_samples, 4);
    /* x = (k, -k): min -4, max 4; each sample's min -k, max k: mean 2.5 */
    const cv_observed *in = cv_observed_of(&c, fn->body->params[0]);
    assert_non_null(in);
    assert_int_equal(in->samples, 4);
    double lo, hi;
    cv_calibration_options o = {.calibration_method = CV_CALIBRATION_MIN_MAX};
    assert_true(cv_observed_range(in, &o, &lo, &hi));
    assert_true(lo == -4 && hi == 4);
    o.calibration_method = CV_CALIBRATION_AVERAGE_MIN_MAX;
    assert_true(cv_observed_range(in, &o, &lo, &hi));
    assert_true(lo == -2.5 && hi == 2.5);
    /* relu(x diag(1,2) + (0.5, -100)) = (k + 0.5, 0) */
    const cv_observed *out = cv_observed_of(&c, node_of(fn->body, 6));
    assert_non_null(out);
    o.calibration_method = CV_CALIBRATION_MIN_MAX;
    assert_true(cv_observed_range(out, &o, &lo, &hi));
    assert_true(lo == 0 && hi == 4.5);
    /* the product in the branch p never took: no sample reached it */
    const cv_observed *branch = cv_observed_of(&c, node_of(fn->body, 10));
    assert_non_null(branch);
    assert_true(branch->in_branch);
    assert_int_equal(branch->samples, 0);
    assert_false(cv_observed_range(branch, &o, &lo, &hi));
    assert_int_equal(branch->node->loc.line, 20);
    cv_calibration_free(&c);
    ir_function_free(fn);
}

/* Percentiles cut the tails: 1000 values 1..1000 and one outlier. */
static void test_histogram_percentile(void **state)
{
    (void)state;
    cv_observed t = {.min = HUGE_VAL, .max = -HUGE_VAL, .last_sample = -1, .bound = 1.0 / 1024};
    t.hist = calloc(CV_HISTOGRAM_BINS, sizeof *t.hist);
    float v[1001];
    for (int i = 0; i < 1000; i++)
        v[i] = (float)(i + 1);
    v[1000] = 100000;
    rt_value val = {.dtype = AG_F32, .numel = 1001, .data = v};
    cv_record_value(&t, 0, &val);
    t.samples = 1;
    cv_calibration_options o = {.calibration_method = CV_CALIBRATION_HISTOGRAM_PERCENTILE,
                                .calibration_parameters = {0.5, 99.5}};
    double lo, hi;
    assert_true(cv_observed_range(&t, &o, &lo, &hi));
    /* bins of 2^17 * 2 / 2048 = 128: 99.5% of 1001 values is under 1024 */
    assert_true(lo >= 1 && lo <= 128);
    assert_true(hi >= 996 && hi <= 1024);
    o.calibration_method = CV_CALIBRATION_MIN_MAX;
    assert_true(cv_observed_range(&t, &o, &lo, &hi));
    assert_true(lo == 1 && hi == 100000);
    free(t.hist);
}

/* A sample the signature does not accept is the reader's located error. */
static void test_bad_data_set_is_named(void **state)
{
    (void)state;
    ag_dataset_writer *w = ag_dataset_writer_open("bad.tfrecord");
    ag_scope_push();
    float x[3] = {1, 2, 3};
    ag_named_tensor in[2] = {
        {"x", ag_from_data(AG_F32, AG_SHAPE(1, 3), x)},
        {"p", ag_scalar_bool(false)},
    };
    assert_true(ag_dataset_writer_add(w, in, 2));
    ag_scope_pop();
    assert_true(ag_dataset_writer_close(w));
    ir_function *fn = parse_model();
    cv_calibration c;
    char err[512];
    assert_false(cv_calibrate(fn, &sig, "bad.tfrecord", &c, err, sizeof err));
    assert_non_null(strstr(err, "bad.tfrecord: record 0"));
    cv_calibration_free(&c);
    ir_function_free(fn);
}


/* ------------------------------------------------------------------ plan */

static void test_weight_scales(void **state)
{
    (void)state;
    /* [K=2, N=3]: channels are the last axis */
    const float w[6] = {0.5f, -2.0f, 0, -1.0f, 1.0f, 0};
    float s[3];
    int8_t q[6];
    cv_quantize_weight(w, 6, 3, false, s, q);
    assert_true(s[0] == 2.0f / 127);
    assert_int_equal(q[0], 32); /* 0.5 * 63.5 = 31.75 */
    assert_int_equal(q[1], -127);
    assert_int_equal(q[3], -64); /* -63.5: half away from zero */
    cv_quantize_weight(w, 6, 3, true, s, q);
    assert_true(s[0] == 1.0f / 127 && s[1] == 2.0f / 127 && s[2] == 1);
    assert_int_equal(q[0], 64);  /* 63.5 rounds away */
    assert_int_equal(q[3], -127);
    assert_int_equal(q[4], 64);
    assert_int_equal(q[5], 0);
}

static void test_activation_params(void **state)
{
    (void)state;
    float s;
    int32_t z;
    cv_activation_params(-1, 3, &s, &z);
    assert_true(s == (float)(4.0 / 255));
    assert_int_equal(z, -64); /* -128 + 63.75 */
    cv_activation_params(2, 5, &s, &z); /* widened to [0, 5] */
    assert_true(s == (float)(5.0 / 255));
    assert_int_equal(z, -128);
    cv_activation_params(-6, -1, &s, &z); /* widened to [-6, 0] */
    assert_int_equal(z, 127);
    cv_activation_params(0, 0, &s, &z); /* zero width */
    assert_true(s == 1);
    assert_int_equal(z, -128);
}

static void plan_options(cv_options *o, const char *text)
{
    char err[512];
    if (!cv_options_parse(text, "opts", o, err, sizeof err))
        fail_msg("%s", err);
}

static void test_plan_static_range(void **state)
{
    (void)state;
    write_samples("plan.tfrecord", 3);
    ir_function *fn = parse_model();
    cv_calibration c;
    char err[512];
    if (!cv_calibrate(fn, &sig, "plan.tfrecord", &c, err, sizeof err))
        fail_msg("%s", err);
    cv_options *o = malloc(sizeof *o);
    plan_options(o, "external_feature_configs { quantization_options { representative_datasets "
                    "{ key: \"serving_default\" value { tfrecord_file_path: \"plan.tfrecord\" "
                    "} } } }");
    cv_qplan p;
    if (!cv_quant_plan(fn, o, &c, &p, err, sizeof err))
        fail_msg("%s", err);
    assert_int_equal(p.method, CV_QUANT_STATIC_RANGE);
    assert_int_equal(p.n, 2);
    const cv_qop *q = &p.ops[0];
    assert_int_equal(q->keep, CV_KEEP_QUANTIZED);
    assert_int_equal(q->bias->id, 5);
    assert_true(q->relu);
    assert_int_equal(q->n_scales, 1);
    assert_true(q->w_scales[0] == 2.0f / 127);
    assert_int_equal(q->wq[3], 127);
    /* x in [-3, 3]; relu's output in [0, 3.5] */
    assert_true(q->in_scale == (float)(6.0 / 255));
    assert_int_equal(q->in_zero, -1); /* -128 + 127.5 = -0.5 rounds away from zero */
    assert_true(q->out_scale == (float)(3.5 / 255));
    assert_int_equal(q->out_zero, -128);
    assert_int_equal(p.ops[1].keep, CV_KEEP_UNREACHED);
    assert_null(p.ops[1].wq);
    cv_qplan_free(&p);

    /* unreached_branches: FAIL names the product's line */
    o->external_feature_configs.quantization_options.unreached_branches = CV_UNREACHED_FAIL;
    assert_false(cv_quant_plan(fn, o, &c, &p, err, sizeof err));
    assert_string_equal(err, "m.c:20: static range quantization: this matmul is in a branch or "
                             "loop body that no sample reached, so it has no range; make the "
                             "representative data set reach it, or give unreached_branches: "
                             "KEEP_FLOAT to keep it float");
    cv_qplan_free(&p);
    free(o);
    cv_calibration_free(&c);
    ir_function_free(fn);
}

/* Dynamic range keeps weights under 1024 elements float by default; -1
 * quantizes every one, per channel when asked. */
static void test_plan_dynamic_range_threshold(void **state)
{
    (void)state;
    ir_function *fn = parse_model();
    cv_options *o = malloc(sizeof *o);
    char err[512];
    cv_qplan p;
    plan_options(o, "external_feature_configs { quantization_options { quantization_method: "
                    "DYNAMIC_RANGE } }");
    assert_true(cv_quant_plan(fn, o, NULL, &p, err, sizeof err));
    assert_int_equal(p.n, 2);
    assert_int_equal(p.ops[0].keep, CV_KEEP_SMALL);
    assert_int_equal(p.ops[1].keep, CV_KEEP_SMALL);
    assert_true(p.n_other_ops > 0);
    cv_qplan_free(&p);
    plan_options(o, "external_feature_configs { quantization_options { quantization_method: "
                    "DYNAMIC_RANGE min_num_elements_for_weights: -1 "
                    "enable_per_channel_quantization: true } }");
    assert_true(cv_quant_plan(fn, o, NULL, &p, err, sizeof err));
    assert_int_equal(p.ops[0].keep, CV_KEEP_QUANTIZED);
    assert_int_equal(p.ops[1].keep, CV_KEEP_QUANTIZED); /* no calibration: no branch rule */
    assert_int_equal(p.ops[0].n_scales, 2);
    assert_true(p.ops[0].w_scales[0] == 1.0f / 127);
    cv_qplan_free(&p);
    free(o);
    ir_function_free(fn);
}

/* ------------------------------------------------------------- agreement */

/* A product against itself, and against one whose weight's second column
 * is -9 instead of 2. */
static void test_agreement(void **state)
{
    (void)state;
    static const char a_ir[] =
        "func @f(%0: f32[1,2], %1: bool[]) -> (f32[1,2]) {\n"
        "  %2 = const() {value = [1, 0, 0, 2]} : f32[2,2]\n"
        "  %3 = matmul(%0, %2) : f32[1,2]\n"
        "  return %3\n"
        "}\n";
    static const char b_ir[] =
        "func @f(%0: f32[1,2], %1: bool[]) -> (f32[1,2]) {\n"
        "  %2 = const() {value = [1, 0, 0, -9]} : f32[2,2]\n"
        "  %3 = matmul(%0, %2) : f32[1,2]\n"
        "  return %3\n"
        "}\n";
    char err[512];
    ir_function *a = ir_parse(a_ir, "a.ir", err, sizeof err);
    ir_function *b = ir_parse(b_ir, "b.ir", err, sizeof err);
    assert_non_null(a);
    if (!b)
        fail_msg("%s", err);
    write_samples("agree.tfrecord", 2);
    cv_agreement g;
    if (!cv_agreement_measure(a, a, &sig, "agree.tfrecord", &g, NULL, 0, err, sizeof err))
        fail_msg("%s", err);
    assert_true(g.max_abs == 0 && cv_agreement_relative_rms(&g) == 0);
    assert_true(g.classified && g.rows == 2 && g.agree == 2);
    /* x = (k, -k), k = 1, 2: a gives (k, -2k), argmax 0; b (k, 9k), argmax 1 */
    if (!cv_agreement_measure(a, b, &sig, "agree.tfrecord", &g, NULL, 0, err, sizeof err))
        fail_msg("%s", err);
    assert_true(g.max_abs == 22); /* 9k - -2k at k = 2 */
    assert_true(fabs(cv_agreement_relative_rms(&g) - sqrt((121.0 + 484) / 25)) < 1e-12);
    assert_int_equal(g.samples, 2);
    assert_int_equal(g.rows, 2);
    assert_int_equal(g.agree, 0);
    ir_function_free(a);
    ir_function_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_products_and_chains),
        cmocka_unit_test(test_ranges_and_unreached_branch),
        cmocka_unit_test(test_histogram_percentile),
        cmocka_unit_test(test_bad_data_set_is_named),
        cmocka_unit_test(test_weight_scales),
        cmocka_unit_test(test_activation_params),
        cmocka_unit_test(test_plan_static_range),
        cmocka_unit_test(test_plan_dynamic_range_threshold),
        cmocka_unit_test(test_agreement),
    };
    return cmocka_run_group_tests(tests, setup_group, teardown_group);
}
