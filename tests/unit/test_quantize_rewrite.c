/*
 * test_quantize_rewrite.c - the int8 rewrite (passes/quantize.c) of the
 * converter's plans (converter/quantize.c), on a two-layer perceptron:
 * the ops each method leaves (static range: one quantize at the input,
 * the first layer's int8 handed to the second, relu folded into
 * requantize, one dequantize at the output; dynamic range: scales per
 * row at each call; weights only: float products of dequantized
 * weights), results close to float, and the per-product errors the
 * report prints (converter/agreement.c's probes).
 */
#include "test_util.h"

#include "exec.h"
#include "ir.h"
#include "pass.h"
#include "quantize.h"

#include <math.h>
#include <unistd.h>

/* relu(x w1 + b1) w2 + b2: x [2,4], w1 [4,3], w2 [3,2]. */
static const char mlp_ir[] =
    "func @f(%0: f32[2,4]) -> (f32[2,2]) {\n"
    "  %1 = const() {value = [0.5, -0.25, 0.75, 1, 0.5, -1, -0.5, 0.25, 0.125, 0.3, -0.7, "
    "0.9]} : f32[4,3]\n"
    "  %2 = matmul(%0, %1) : f32[2,3] loc(\"mlp.c\":10:3)\n"
    "  %3 = const() {value = [0.1, -0.2, 0.3]} : f32[3]\n"
    "  %4 = add(%2, %3) : f32[2,3] loc(\"mlp.c\":11:3)\n"
    "  %5 = relu(%4) : f32[2,3] loc(\"mlp.c\":12:3)\n"
    "  %6 = const() {value = [1, -1, 0.5, 0.25, -0.75, 2]} : f32[3,2]\n"
    "  %7 = matmul(%5, %6) : f32[2,2] loc(\"mlp.c\":13:3)\n"
    "  %8 = const() {value = [0.05, -0.05]} : f32[2]\n"
    "  %9 = add(%7, %8) : f32[2,2] loc(\"mlp.c\":14:3)\n"
    "  return %9\n"
    "}\n";

static const ag_tensor_spec specs[] = {{"x", AG_F32, {2, {2, 4}}}};
static const ag_signature_def sig = {"serving_default", 1, 0, specs, NULL};

TU_GROUP_IN_TEMP_DIR("ag-quantize-rewrite")

/* Sample k: x[i][j] = sin(k + 3i + j) (in [-1, 1]). */
static float sample_value(int k, int i, int j) { return (float)sin(k + 3 * i + j); }

static void write_samples(const char *path, int n)
{
    ag_dataset_writer *w = ag_dataset_writer_open(path);
    assert_non_null(w);
    for (int k = 0; k < n; k++) {
        ag_scope_push();
        float x[8];
        for (int i = 0; i < 8; i++)
            x[i] = sample_value(k, i / 4, i % 4);
        ag_named_tensor in[1] = {{"x", ag_from_data(AG_F32, AG_SHAPE(2, 4), x)}};
        assert_true(ag_dataset_writer_add(w, in, 1));
        ag_scope_pop();
    }
    assert_true(ag_dataset_writer_close(w));
}

static ir_function *parse_mlp(void)
{
    char err[512];
    ir_function *fn = ir_parse(mlp_ir, "mlp.ir", err, sizeof err);
    if (!fn)
        fail_msg("%s", err);
    return fn;
}

static int count_ops(const ir_function *fn, int op)
{
    int k = 0;
    for (const ir_node *n = fn->body->first; n; n = n->next)
        k += n->opcode == op;
    return k;
}

/* fn planned under `options` (calibrated on 200 samples for static range)
 * and rewritten; the products in p (their replaced ids filled). */
static void quantize(ir_function *fn, const char *options, pass_qproduct p[2])
{
    char err[512];
    cv_options *o = malloc(sizeof *o);
    if (!cv_options_parse(options, "opts", o, err, sizeof err))
        fail_msg("%s", err);
    cv_calibration c = {0};
    bool srq = cv_quantization_method(o) == CV_QUANT_STATIC_RANGE;
    write_samples("calib.tfrecord", 200);
    if (srq && !cv_calibrate(fn, &sig, "calib.tfrecord", &c, err, sizeof err))
        fail_msg("%s", err);
    cv_qplan plan;
    if (!cv_quant_plan(fn, o, srq ? &c : NULL, &plan, err, sizeof err))
        fail_msg("%s", err);
    assert_int_equal(plan.n, 2);
    for (int i = 0; i < 2; i++) {
        const cv_qop *q = &plan.ops[i];
        assert_int_equal(q->keep, CV_KEEP_QUANTIZED);
        p[i] = cv_qop_product(q);
    }
    pass_qmethod m = srq ? PASS_Q_STATIC_RANGE
                   : cv_quantization_method(o) == CV_QUANT_DYNAMIC_RANGE ? PASS_Q_DYNAMIC_RANGE
                                                                        : PASS_Q_WEIGHT_ONLY;
    if (!pass_quantize_products(fn, m, p, 2, err, sizeof err) || !ir_verify(fn, err, sizeof err))
        fail_msg("%s", err);
    cv_qplan_free(&plan);
    cv_calibration_free(&c);
    free(o);
}

/* The largest |quantized - float| over the samples, relative to the
 * float output's largest magnitude. */
static double relative_error(const ir_function *want, const ir_function *got)
{
    cv_agreement a;
    char err[512];
    if (!cv_agreement_measure(want, got, &sig, "calib.tfrecord", &a, NULL, 0, err, sizeof err))
        fail_msg("%s", err);
    return cv_agreement_relative_rms(&a);
}

static void test_static_range(void **state)
{
    (void)state;
    ir_function *f32 = parse_mlp(), *fn = parse_mlp();
    pass_qproduct p[2];
    quantize(fn, "external_feature_configs { quantization_options { representative_datasets "
                 "{ key: \"serving_default\" value { tfrecord_file_path: \"calib.tfrecord\" "
                 "} } } }", p);
    assert_int_equal(count_ops(fn, RT_OP_QUANTIZE), 1);   /* the input only */
    assert_int_equal(count_ops(fn, RT_OP_QMATMUL), 2);
    assert_int_equal(count_ops(fn, RT_OP_REQUANTIZE), 2);
    assert_int_equal(count_ops(fn, RT_OP_DEQUANTIZE), 1); /* the output only */
    assert_int_equal(count_ops(fn, RT_OP_RELU), 0);       /* folded */
    assert_int_equal(count_ops(fn, RT_OP_MATMUL), 0);
    /* relu folds into the first requantize's clamp: lo is its zero point */
    for (const ir_node *n = fn->body->first; n; n = n->next)
        if (n->opcode == RT_OP_REQUANTIZE && n->loc.line == 12)
            assert_true(n->attrs.lo == p[0].out_zero && n->attrs.hi == 127);
    double e = relative_error(f32, fn);
    assert_true(e > 0 && e < 0.03);
    ir_function_free(f32);
    ir_function_free(fn);
}

static void test_dynamic_range(void **state)
{
    (void)state;
    ir_function *f32 = parse_mlp(), *fn = parse_mlp();
    pass_qproduct p[2];
    quantize(fn, "external_feature_configs { quantization_options { quantization_method: "
                 "DYNAMIC_RANGE min_num_elements_for_weights: -1 "
                 "enable_per_channel_quantization: true } }", p);
    assert_int_equal(count_ops(fn, RT_OP_QMATMUL), 2);
    assert_int_equal(count_ops(fn, RT_OP_QUANTIZE), 2);
    assert_int_equal(count_ops(fn, RT_OP_RELU), 1); /* the float chain stays */
    assert_int_equal(count_ops(fn, RT_OP_MATMUL), 0);
    /* a scale per row: reduce_max over axis 1, kept */
    for (const ir_node *n = fn->body->first; n; n = n->next)
        if (n->opcode == RT_OP_REDUCE_MAX)
            assert_true(n->attrs.axis == 1 && n->type.shape.rank == 2 &&
                        n->type.shape.dims[1] == 1);
    double e = relative_error(f32, fn);
    assert_true(e > 0 && e < 0.03);
    ir_function_free(f32);
    ir_function_free(fn);
}

static void test_weights_only(void **state)
{
    (void)state;
    ir_function *f32 = parse_mlp(), *fn = parse_mlp();
    pass_qproduct p[2];
    quantize(fn, "external_feature_configs { quantization_options { quantization_method: "
                 "WEIGHT_ONLY min_num_elements_for_weights: -1 } }", p);
    assert_int_equal(count_ops(fn, RT_OP_QMATMUL), 0);
    assert_int_equal(count_ops(fn, RT_OP_MATMUL), 2);
    assert_int_equal(count_ops(fn, RT_OP_DEQUANTIZE), 2);
    for (const ir_node *n = fn->body->first; n; n = n->next)
        if (n->opcode == RT_OP_MATMUL)
            assert_int_equal(n->in[1]->opcode, RT_OP_DEQUANTIZE);
    double e = relative_error(f32, fn);
    assert_true(e > 0 && e < 0.03);
    ir_function_free(f32);
    ir_function_free(fn);
}

/* The report's per-product errors: each quantized chain's end against the
 * float node it replaced; the first layer's error is its own, the
 * second's carries the first's too. */
static void test_probes(void **state)
{
    (void)state;
    ir_function *f32 = parse_mlp(), *fn = parse_mlp();
    pass_qproduct p[2];
    quantize(fn, "external_feature_configs { quantization_options { representative_datasets "
                 "{ key: \"serving_default\" value { tfrecord_file_path: \"calib.tfrecord\" "
                 "} } } }", p);
    cv_probe probes[2] = {
        {.want_id = 5, .got_id = p[0].replaced_id, .scale = p[0].out_scale, .zero = p[0].out_zero},
        {.want_id = 9, .got_id = p[1].replaced_id, .scale = p[1].out_scale, .zero = p[1].out_zero},
    };
    cv_agreement a;
    char err[512];
    if (!cv_agreement_measure(f32, fn, &sig, "calib.tfrecord", &a, probes, 2, err, sizeof err))
        fail_msg("%s", err);
    for (int k = 0; k < 2; k++) {
        assert_int_equal(probes[k].a.samples, 200);
        assert_true(probes[k].a.max_abs > 0);
        /* within a few steps of the output's scale */
        assert_true(probes[k].a.max_abs < 4 * (k ? p[1].out_scale : p[0].out_scale) + 0.05);
    }
    /* the second layer's output is the function's (dequantized alike) */
    assert_true(fabs(probes[1].a.max_abs - a.max_abs) < 1e-6);
    ir_function_free(f32);
    ir_function_free(fn);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_static_range),
        cmocka_unit_test(test_dynamic_range),
        cmocka_unit_test(test_weights_only),
        cmocka_unit_test(test_probes),
    };
    int failed = cmocka_run_group_tests(tests, setup_group, teardown_group);
    ag_shutdown();
    return failed;
}
