/*
 * test_converter_options.c - the converter's options (converter/options.h):
 * every field read, every error with its place, the defaults and
 * disable_default_optimizations, the printer read back unchanged.
 */
#include "options.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

/* Every message and field of converter.md §2, each away from its default. */
static const char full_text[] =
    "# every field\n"
    "tpu_functions { function_alias: \"tpu_func\" enable_soft_device_placement: true }\n"
    "tpu_functions { concrete_function_name: \"__inference_mlp_7\" }\n"
    "tpu_functions: { signature_name: 'serving_default' }\n"
    "tpu_functions < jit_compile_functions: true >\n"
    "batch_options {\n"
    "  num_batch_threads: 4\n"
    "  max_batch_size: 32\n"
    "  batch_timeout_micros: 5000\n"
    "  allowed_batch_sizes: [8, 16]\n"
    "  allowed_batch_sizes: 32\n"
    "  max_enqueued_batches: 100\n"
    "  disable_large_batch_splitting: true\n"
    "  experimental { signature_name: \"serving_default\" }\n"
    "}\n"
    "batch_options { max_batch_size: 4; experimental { function_alias: \"tpu_func\" } }\n"
    "batch_options { max_batch_size: 2 experimental { concrete_function_name: \"f_1\" } }\n"
    "disable_default_optimizations: true\n"
    "io_shape_optimization: ENABLED\n"
    "bfloat16_optimization: DISABLED\n"
    "bfloat16_optimization_options {\n"
    "  scope: ALL\n"
    "  skip_safety_checks: true\n"
    "  filterlist: \"exp\"\n"
    "  filterlist: [\"softmax\", \"tanh\"]\n"
    "}\n"
    "xla_sharding_options { num_cores_per_replica: 1 device_assignment: [1, 1, 0, 0] "
    "topology: \"2x2\" }\n"
    "external_feature_configs { quantization_options {\n"
    "  quantization_method: METHOD_STATIC_RANGE_INT8\n"
    "  op_set: XLA\n"
    "  tags: \"serve\"\n"
    "  signature_keys: [\"serving_default\", \"classify\"]\n"
    "  representative_datasets { key: \"serving_default\" value { tfrecord_file_path: \"a.tfrecord\" } }\n"
    "  representative_datasets { key: \"classify\" value { tfrecord_file_path: \"b.tfrecord\" } }\n"
    "  min_num_elements_for_weights: -1\n"
    "  enable_per_channel_quantization: true\n"
    "  calibration_options { calibration_method: CALIBRATION_METHOD_HISTOGRAM_PERCENTILE\n"
    "    calibration_parameters { min_percentile: 0.5 max_percentile: 99.5 } }\n"
    "  unreached_branches: FAIL\n"
    "} }\n";

static void parse_ok(const char *text, cv_options *o)
{
    char err[512];
    bool ok = cv_options_parse(text, "opts.txt", o, err, sizeof err);
    if (!ok)
        fail_msg("unexpected error: %s", err);
}

/* The text is refused with exactly this message. */
static void expect_error(const char *text, const char *message)
{
    cv_options *o = malloc(sizeof *o);
    char err[512];
    assert_false(cv_options_parse(text, "opts.txt", o, err, sizeof err));
    assert_string_equal(err, message);
    free(o);
}

/* ----------------------------------------------------------------- fields */

static void test_every_field_parses(void **state)
{
    (void)state;
    cv_options *o = malloc(sizeof *o);
    parse_ok(full_text, o);
    assert_int_equal(o->n_tpu_functions, 4);
    assert_string_equal(o->tpu_functions[0].function_alias, "tpu_func");
    assert_true(o->tpu_functions[0].enable_soft_device_placement);
    assert_string_equal(o->tpu_functions[1].concrete_function_name, "__inference_mlp_7");
    assert_false(o->tpu_functions[1].enable_soft_device_placement);
    assert_string_equal(o->tpu_functions[2].signature_name, "serving_default");
    assert_true(o->tpu_functions[3].jit_compile_functions);

    assert_int_equal(o->n_batch_options, 3);
    const cv_batch_options *b = &o->batch_options[0];
    assert_int_equal(b->num_batch_threads, 4);
    assert_int_equal(b->max_batch_size, 32);
    assert_int_equal(b->batch_timeout_micros, 5000);
    assert_int_equal(b->n_allowed_batch_sizes, 3);
    assert_int_equal(b->allowed_batch_sizes[0], 8);
    assert_int_equal(b->allowed_batch_sizes[2], 32);
    assert_int_equal(b->max_enqueued_batches, 100);
    assert_true(b->disable_large_batch_splitting);
    assert_string_equal(b->experimental.signature_name, "serving_default");
    assert_string_equal(o->batch_options[1].experimental.function_alias, "tpu_func");
    assert_string_equal(o->batch_options[2].experimental.concrete_function_name, "f_1");
    /* fields not given keep their defaults, element by element */
    assert_int_equal(o->batch_options[1].num_batch_threads, 1);
    assert_int_equal(o->batch_options[1].max_enqueued_batches, 10);
    assert_int_equal(o->batch_options[1].batch_timeout_micros, 0);

    assert_true(o->disable_default_optimizations);
    assert_int_equal(o->io_shape_optimization, CV_STATE_ENABLED);
    assert_int_equal(o->bfloat16_optimization, CV_STATE_DISABLED);
    const cv_bf16_options *f = &o->bfloat16_optimization_options;
    assert_int_equal(f->scope, CV_SCOPE_ALL);
    assert_true(f->skip_safety_checks);
    assert_int_equal(f->n_filterlist, 3);
    assert_string_equal(f->filterlist[0], "exp");
    assert_string_equal(f->filterlist[2], "tanh");
    const cv_sharding_options *x = &o->xla_sharding_options;
    assert_int_equal(x->num_cores_per_replica, 1);
    assert_int_equal(x->n_device_assignment, 4);
    assert_int_equal(x->device_assignment[0], 1);
    assert_int_equal(x->device_assignment[1], 1);
    assert_int_equal(x->device_assignment[2], 0);
    assert_string_equal(x->topology, "2x2");
    const cv_external_features *e = &o->external_feature_configs;
    assert_true(e->has_quantization_options);
    const cv_quantization_options *q = &e->quantization_options;
    assert_int_equal(q->quantization_method, CV_QS_METHOD_STATIC_RANGE_INT8);
    assert_int_equal(cv_quantization_method(o), CV_QUANT_STATIC_RANGE);
    assert_int_equal(q->n_tags, 1);
    assert_int_equal(q->n_signature_keys, 2);
    assert_string_equal(q->signature_keys[1], "classify");
    assert_int_equal(q->n_representative_datasets, 2);
    assert_string_equal(cv_dataset_of(o, "classify")->value.tfrecord_file_path, "b.tfrecord");
    assert_null(cv_dataset_of(o, "other"));
    assert_int_equal(cv_min_weight_elements(o), 0);
    assert_true(q->enable_per_channel_quantization);
    assert_int_equal(q->calibration_options.calibration_method,
                     CV_CALIBRATION_HISTOGRAM_PERCENTILE);
    assert_true(q->calibration_options.calibration_parameters.min_percentile == 0.5);
    assert_true(q->calibration_options.calibration_parameters.max_percentile == 99.5);
    assert_int_equal(q->unreached_branches, CV_UNREACHED_FAIL);
    free(o);
}

/* The places recorded for later errors: a value's first token. */
static void test_places_are_recorded(void **state)
{
    (void)state;
    cv_options *o = malloc(sizeof *o);
    parse_ok(full_text, o);
    assert_int_equal(o->at.tpu_functions[1].line, 3);
    assert_int_equal(o->at.tpu_functions[1].col, 15); /* its '{' */
    assert_int_equal(o->tpu_functions[0].at.function_alias.line, 2);
    assert_int_equal(o->tpu_functions[0].at.function_alias.col, 33);
    assert_int_equal(o->batch_options[0].at.allowed_batch_sizes[1].line, 10);
    assert_int_equal(o->batch_options[0].at.allowed_batch_sizes[1].col, 28);
    assert_int_equal(o->batch_options[0].at.allowed_batch_sizes[2].line, 11);
    assert_int_equal(o->bfloat16_optimization_options.at.filterlist[2].col, 27);
    assert_int_equal(o->at.io_shape_optimization.line, 19);
    assert_int_equal(o->at.bfloat16_optimization_options.col, 31);
    assert_int_equal(o->batch_options[1].at.num_batch_threads.line, 0); /* not given */
    free(o);
}

static void test_defaults(void **state)
{
    (void)state;
    cv_options o;
    parse_ok("# nothing but a comment\n", &o);
    assert_int_equal(o.n_tpu_functions, 0);
    assert_int_equal(o.n_batch_options, 0);
    assert_false(o.disable_default_optimizations);
    assert_int_equal(o.io_shape_optimization, CV_STATE_DEFAULT);
    assert_int_equal(o.bfloat16_optimization, CV_STATE_DEFAULT);
    assert_int_equal(o.bfloat16_optimization_options.scope, CV_SCOPE_DEFAULT);
    assert_int_equal(o.xla_sharding_options.num_cores_per_replica, 1);
    assert_true(cv_optimization_enabled(&o, CV_OPT_IO_SHAPE));
    assert_true(cv_optimization_enabled(&o, CV_OPT_BFLOAT16));
}

/* disable_default_optimizations turns off what is DEFAULT, never what is
 * ENABLED; DISABLED is off either way. */
static void test_disable_default_optimizations(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        bool io, bf16;
    } cases[] = {
        {"", true, true},
        {"disable_default_optimizations: false", true, true},
        {"disable_default_optimizations: true", false, false},
        {"disable_default_optimizations: true io_shape_optimization: ENABLED", true, false},
        {"disable_default_optimizations: true bfloat16_optimization: ENABLED", false, true},
        {"disable_default_optimizations: true bfloat16_optimization: DEFAULT", false, false},
        {"io_shape_optimization: DISABLED", false, true},
        {"bfloat16_optimization: DISABLED io_shape_optimization: ENABLED", true, false},
        {"disable_default_optimizations: true io_shape_optimization: DISABLED "
         "bfloat16_optimization: ENABLED",
         false, true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cv_options o;
        parse_ok(cases[i].text, &o);
        if (cv_optimization_enabled(&o, CV_OPT_IO_SHAPE) != cases[i].io ||
            cv_optimization_enabled(&o, CV_OPT_BFLOAT16) != cases[i].bf16)
            fail_msg("wrong effective state for: %s", cases[i].text);
    }
}

static void test_selectors(void **state)
{
    (void)state;
    cv_options *o = malloc(sizeof *o);
    parse_ok(full_text, o);
    const char *name;
    assert_int_equal(cv_tpu_function_selector(&o->tpu_functions[0], &name),
                     CV_SELECT_FUNCTION_ALIAS);
    assert_string_equal(name, "tpu_func");
    assert_int_equal(cv_tpu_function_selector(&o->tpu_functions[1], &name),
                     CV_SELECT_CONCRETE_FUNCTION_NAME);
    assert_int_equal(cv_tpu_function_selector(&o->tpu_functions[2], &name),
                     CV_SELECT_SIGNATURE_NAME);
    assert_int_equal(cv_tpu_function_selector(&o->tpu_functions[3], &name),
                     CV_SELECT_JIT_COMPILE_FUNCTIONS);
    assert_null(name);
    assert_string_equal(cv_selector_field(CV_SELECT_JIT_COMPILE_FUNCTIONS),
                        "jit_compile_functions");
    assert_int_equal(cv_batch_target_selector(&o->batch_options[1].experimental, &name),
                     CV_SELECT_FUNCTION_ALIAS);
    cv_options_init(o);
    assert_int_equal(cv_batch_target_selector(&o->batch_options[0].experimental, &name),
                     CV_SELECT_NONE);
    free(o);
}

/* ----------------------------------------------------------------- errors */

static void test_syntax_and_schema_errors(void **state)
{
    (void)state;
    expect_error("tpu_functions { function_alias: \"f\" }\ntpu_function { }",
                 "opts.txt:2:1: unknown field 'tpu_function' in ConverterOptions; did you mean "
                 "'tpu_functions'?");
    expect_error("tpu_functions {\n  function_alais: \"f\"\n}",
                 "opts.txt:2:3: unknown field 'function_alais' in TpuFunction; did you mean "
                 "'function_alias'?");
    expect_error("batch_options { max_batch_size: 8 experimental { alias: \"f\" } }",
                 "opts.txt:1:50: unknown field 'alias' in BatchOptions.Experimental");
    expect_error("batch_options { max_batch_size: \"8\" }",
                 "opts.txt:1:33: field 'max_batch_size' of BatchOptions expects an integer, "
                 "found '\"8\"'");
    expect_error("tpu_functions: 3",
                 "opts.txt:1:16: field 'tpu_functions' of ConverterOptions expects a message, "
                 "found '3'");
    expect_error("disable_default_optimizations: yes",
                 "opts.txt:1:32: field 'disable_default_optimizations' of ConverterOptions "
                 "expects true or false, found 'yes'");
    expect_error("tpu_functions { function_alias: tpu_func }",
                 "opts.txt:1:33: field 'function_alias' of TpuFunction expects a string, "
                 "found 'tpu_func'");
    expect_error("bfloat16_optimization_options { filterlist: [\"exp\", 3] }",
                 "opts.txt:1:53: field 'filterlist' of BFloat16OptimizationOptions expects a "
                 "string, found '3'");
    expect_error("xla_sharding_options { device_assignment: [0, 1.5] }",
                 "opts.txt:1:47: field 'device_assignment' of XlaShardingOptions expects an "
                 "integer, found '1.5'");
    expect_error("bfloat16_optimization: ON",
                 "opts.txt:1:24: bad value 'ON' for field 'bfloat16_optimization' of "
                 "ConverterOptions (one of DEFAULT, ENABLED, DISABLED)");
    expect_error("bfloat16_optimization_options {\n  scope: CPU\n}",
                 "opts.txt:2:10: bad value 'CPU' for field 'scope' of "
                 "BFloat16OptimizationOptions (one of DEFAULT, TPU, ALL); did you mean 'TPU'?");
    expect_error("io_shape_optimization: ENABLED\nio_shape_optimization: DISABLED",
                 "opts.txt:2:1: field 'io_shape_optimization' of ConverterOptions is given "
                 "twice");
    expect_error("batch_options { max_batch_size: 8\n  max_batch_size: 8 }",
                 "opts.txt:2:3: field 'max_batch_size' of BatchOptions is given twice");
    expect_error("tpu_functions { function_alias: \"f\"",
                 "opts.txt:1:36: expected '}' to close TpuFunction");
    expect_error("tpu_functions { signature_name: \"s }",
                 "opts.txt:1:33: unterminated string");
}

static void test_oneof_errors(void **state)
{
    (void)state;
    expect_error("tpu_functions {\n  function_alias: \"f\"\n  signature_name: \"s\"\n}",
                 "opts.txt:3:3: field 'signature_name' of TpuFunction is given along with "
                 "'function_alias': both are in oneof 'selector', give only one");
    expect_error("tpu_functions { concrete_function_name: \"f_1\" jit_compile_functions: true }",
                 "opts.txt:1:47: field 'jit_compile_functions' of TpuFunction is given along "
                 "with 'concrete_function_name': both are in oneof 'selector', give only one");
    expect_error("batch_options { max_batch_size: 8 experimental { function_alias: \"a\" "
                 "signature_name: \"s\" } }",
                 "opts.txt:1:70: field 'signature_name' of BatchOptions.Experimental is given "
                 "along with 'function_alias': both are in oneof 'selector', give only one");
}

static void test_tpu_function_errors(void **state)
{
    (void)state;
    expect_error("tpu_functions { function_alias: \"f\" }\ntpu_functions { }",
                 "opts.txt:2:15: a TpuFunction selects no function: give one of "
                 "function_alias, concrete_function_name, signature_name or "
                 "jit_compile_functions: true");
    expect_error("tpu_functions { enable_soft_device_placement: true }",
                 "opts.txt:1:15: a TpuFunction selects no function: give one of "
                 "function_alias, concrete_function_name, signature_name or "
                 "jit_compile_functions: true");
    expect_error("tpu_functions { jit_compile_functions: false }",
                 "opts.txt:1:40: jit_compile_functions: false selects no function; a "
                 "TpuFunction selects the functions marked AG_JIT_COMPILE with "
                 "jit_compile_functions: true");
    expect_error("tpu_functions { function_alias: \"\" }",
                 "opts.txt:1:33: function_alias is empty: give the name of a function");
    expect_error("tpu_functions { function_alias: \"f\" }\n"
                 "tpu_functions { signature_name: \"f\" }\n"
                 "tpu_functions { function_alias: \"f\" }",
                 "opts.txt:3:33: function_alias \"f\" is selected twice (first at 1:33)");
    expect_error("tpu_functions { jit_compile_functions: true }\n"
                 "tpu_functions { jit_compile_functions: true }",
                 "opts.txt:2:40: jit_compile_functions is given in two TpuFunctions (first at "
                 "1:40)");
}

static void test_batch_errors(void **state)
{
    (void)state;
    expect_error("batch_options { num_batch_threads: 2 }",
                 "opts.txt:1:15: BatchOptions needs max_batch_size (the most rows in a batch)");
    expect_error("batch_options { max_batch_size: 0 }",
                 "opts.txt:1:33: max_batch_size must be in [1, 2147483647], got 0");
    expect_error("batch_options { max_batch_size: 8 num_batch_threads: 0 }",
                 "opts.txt:1:54: num_batch_threads must be in [1, 1024], got 0");
    expect_error("batch_options { max_batch_size: 8 batch_timeout_micros: -1 }",
                 "opts.txt:1:57: batch_timeout_micros must be in [0, 9223372036854775807], "
                 "got -1");
    expect_error("batch_options { max_batch_size: 8 max_enqueued_batches: 0 }",
                 "opts.txt:1:57: max_enqueued_batches must be in [1, 2147483647], got 0");
    expect_error("batch_options {\n  max_batch_size: 32\n  allowed_batch_sizes: [8, 16, 16, 32]\n}",
                 "opts.txt:3:32: allowed_batch_sizes must be strictly increasing: 16 follows 16");
    expect_error("batch_options {\n  max_batch_size: 32\n  allowed_batch_sizes: [16, 8, 32]\n}",
                 "opts.txt:3:29: allowed_batch_sizes must be strictly increasing: 8 follows 16");
    expect_error("batch_options {\n  max_batch_size: 32\n  allowed_batch_sizes: [8, 16]\n}",
                 "opts.txt:3:28: the last of allowed_batch_sizes (16) must equal "
                 "max_batch_size (32)");
    expect_error("batch_options { max_batch_size: 8 allowed_batch_sizes: [0, 8] }",
                 "opts.txt:1:57: an allowed batch size must be in [1, 8], got 0");
    expect_error("batch_options { max_batch_size: 8 allowed_batch_sizes: [4, 16] }",
                 "opts.txt:1:60: an allowed batch size must be in [1, 8], got 16");
    expect_error("batch_options { max_batch_size: 8 experimental { signature_name: \"\" } }",
                 "opts.txt:1:66: signature_name is empty: give the name of a function");
    expect_error("batch_options { max_batch_size: 8 }\nbatch_options { max_batch_size: 4 }",
                 "opts.txt:2:15: two BatchOptions batch every TPU function (first at 1:15): "
                 "give experimental { ... } to say what each one batches");
    expect_error("batch_options { max_batch_size: 8 experimental { function_alias: \"a\" } }\n"
                 "batch_options { max_batch_size: 4 experimental { function_alias: \"a\" } }",
                 "opts.txt:2:15: two BatchOptions batch function_alias \"a\" (first at 1:15)");
}

static void test_bf16_and_sharding_errors(void **state)
{
    (void)state;
    expect_error("bfloat16_optimization_options { filterlist: [\"exp\", \"expp\"] }",
                 "opts.txt:1:53: unknown op \"expp\" in filterlist (op names are those of the "
                 "IR: docs/ir.md)");
    expect_error("bfloat16_optimization_options { filterlist: \"exp\" filterlist: \"exp\" }",
                 "opts.txt:1:63: op \"exp\" is in filterlist twice");
    expect_error("xla_sharding_options {\n  num_cores_per_replica: 3\n  topology: \"2x2\"\n}",
                 "opts.txt:2:26: num_cores_per_replica 3 does not divide the 4 cores of the "
                 "topology");
    expect_error("xla_sharding_options { num_cores_per_replica: 0 }",
                 "opts.txt:1:47: num_cores_per_replica must be at least 1, got 0");
    expect_error("xla_sharding_options { topology: \"2by2\" }",
                 "opts.txt:1:34: bad topology \"2by2\": a slice's name is the chips' grid, AxB "
                 "or AxBxC, of at most 256 chips, like \"2x2\"");
    expect_error("xla_sharding_options { topology: \"2x2\" device_assignment: [0, 2, 0, 0] }",
                 "opts.txt:1:60: device [0, 2, 0, 0] of device_assignment is outside the "
                 "topology's mesh [2, 2, 1, 1]");
    expect_error("xla_sharding_options { num_cores_per_replica: 2 topology: \"2x2\"\n"
                 "  device_assignment: [1, 0, 0, 0, 1, 0, 0, 0] }",
                 "opts.txt:2:35: device [1, 0, 0, 0] is in device_assignment twice (first at "
                 "2:23)");
    expect_error("xla_sharding_options { device_assignment: [0, 1] }",
                 "opts.txt:1:44: device_assignment has 2 values for num_cores_per_replica 1: "
                 "give 4 per core, [x, y, z, core]");
}

static void test_capacity_is_an_error(void **state)
{
    (void)state;
    size_t cap = (CV_MAX_BATCH_SIZES + 2) * 8 + 64;
    char *text = malloc(cap);
    size_t n = (size_t)snprintf(text, cap, "batch_options { max_batch_size: 99 allowed_batch_sizes: [");
    for (int i = 0; i <= CV_MAX_BATCH_SIZES; i++)
        n += (size_t)snprintf(text + n, cap - n, "%d,", i + 1);
    snprintf(text + n, cap - n, "] }");
    cv_options o;
    char err[512];
    assert_false(cv_options_parse(text, "opts.txt", &o, err, sizeof err));
    assert_non_null(strstr(err, "field 'allowed_batch_sizes' of BatchOptions is repeated more "
                                "than 32 times"));
    free(text);
}

/* --------------------------------------------------------------- files */

/* The fuzzer's seed (tests/fuzz) has every message and stays valid. */
static void test_fuzz_seed_is_valid(void **state)
{
    (void)state;
    cv_options *o = malloc(sizeof *o);
    char err[512];
    if (!cv_options_read_file(TEST_CONVERTER_OPTIONS_SEED, o, err, sizeof err))
        fail_msg("%s", err);
    assert_int_equal(o->n_tpu_functions, 4);
    assert_int_equal(o->n_batch_options, 2);
    assert_string_equal(o->batch_options[1].experimental.function_alias, "tpu_func");
    assert_int_equal(o->bfloat16_optimization_options.n_filterlist, 3);
    assert_string_equal(o->xla_sharding_options.topology, "2x2x1");
    assert_int_equal(cv_quantization_method(o), CV_QUANT_STATIC_RANGE);
    assert_int_equal(o->external_feature_configs.quantization_options.n_representative_datasets,
                     1);
    free(o);
}

static void test_missing_file_is_named(void **state)
{
    (void)state;
    cv_options o;
    char err[512];
    assert_false(cv_options_read_file("/nonexistent/options.txtpb", &o, err, sizeof err));
    assert_string_equal(err, "cannot read the converter options '/nonexistent/options.txtpb': "
                             "No such file or directory");
}

static void test_file_errors_name_the_file(void **state)
{
    (void)state;
    char path[] = "/tmp/agc-cvopts-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char text[] = "tpu_functions { function_alias: \"f\" }\n"
                        "xla_sharding_options { num_cores_per_replica: 3 topology: \"2x2\" }\n";
    assert_int_equal(write(fd, text, sizeof text - 1), (ssize_t)(sizeof text - 1));
    close(fd);
    cv_options o;
    char err[512], want[600];
    assert_false(cv_options_read_file(path, &o, err, sizeof err));
    snprintf(want, sizeof want,
             "%s:2:47: num_cores_per_replica 3 does not divide the 4 cores of the topology",
             path);
    assert_string_equal(err, want);
    unlink(path);
}

/* ---------------------------------------------------------- quantization */

#define QO(body) "external_feature_configs { quantization_options { " body " } }"

/* The methods' spellings, the defaults that depend on the method. */
static void test_quantization_methods(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        cv_quant_method method;
        int64_t min_elements;
    } cases[] = {
        {"", CV_QUANT_NONE, 1024},
        {QO("quantization_method: DYNAMIC_RANGE"), CV_QUANT_DYNAMIC_RANGE, 1024},
        {QO("quantization_method: METHOD_DYNAMIC_RANGE_INT8"), CV_QUANT_DYNAMIC_RANGE, 1024},
        {QO("quantization_method: WEIGHT_ONLY min_num_elements_for_weights: 10"),
         CV_QUANT_WEIGHT_ONLY, 10},
        {QO("quantization_method: METHOD_STATIC_RANGE_WEIGHT_ONLY_INT8"), CV_QUANT_WEIGHT_ONLY,
         1024},
        {QO("quantization_method: DYNAMIC_RANGE min_num_elements_for_weights: -1"),
         CV_QUANT_DYNAMIC_RANGE, 0},
        {QO("quantization_method: METHOD_NO_QUANTIZE"), CV_QUANT_NONE, 1024},
        {QO("representative_datasets { key: \"serving_default\" value { tfrecord_file_path: "
            "\"c\" } }"),
         CV_QUANT_STATIC_RANGE, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cv_options *o = malloc(sizeof *o);
        parse_ok(cases[i].text, o);
        if (cv_quantization_method(o) != cases[i].method ||
            cv_min_weight_elements(o) != cases[i].min_elements)
            fail_msg("wrong method or weight threshold for: %s", cases[i].text);
        const char *names[CV_MAX_SIGNATURE_KEYS];
        assert_int_equal(cv_quantized_signatures(o, names), 1);
        assert_string_equal(names[0], "serving_default");
        free(o);
    }
}

/* An empty quantization_options means static range: it prints, so that
 * the canonical text reads back to the same options. */
static void test_empty_quantization_options_print(void **state)
{
    (void)state;
    cv_options *o = malloc(sizeof *o);
    char err[512];
    /* static range without a data set is an error: make it dynamic */
    parse_ok(QO("quantization_method: DYNAMIC_RANGE"), o);
    o->external_feature_configs.quantization_options.quantization_method = CV_QS_STATIC_RANGE;
    o->external_feature_configs.quantization_options.n_signature_keys = 0;
    FILE *f;
    char *text = NULL;
    size_t len = 0;
    f = open_memstream(&text, &len);
    cv_options_print(o, f);
    fclose(f);
    assert_string_equal(text, "external_feature_configs {\n  quantization_options {\n  }\n}\n");
    assert_false(cv_options_parse(text, "p", o, err, sizeof err)); /* static: needs data */
    free(text);
    free(o);
}

static void test_quantization_errors(void **state)
{
    (void)state;
    expect_error(QO("quantization_method: STATIC"),
                 "opts.txt:1:72: bad value 'STATIC' for field 'quantization_method' of "
                 "QuantizationOptions (one of STATIC_RANGE, DYNAMIC_RANGE, WEIGHT_ONLY, "
                 "METHOD_STATIC_RANGE_INT8, METHOD_DYNAMIC_RANGE_INT8, "
                 "METHOD_STATIC_RANGE_WEIGHT_ONLY_INT8, METHOD_NO_QUANTIZE)");
    expect_error(QO("quantization_method: DYNAMIC_RANGES"),
                 "opts.txt:1:72: bad value 'DYNAMIC_RANGES' for field 'quantization_method' of "
                 "QuantizationOptions (one of STATIC_RANGE, DYNAMIC_RANGE, WEIGHT_ONLY, "
                 "METHOD_STATIC_RANGE_INT8, METHOD_DYNAMIC_RANGE_INT8, "
                 "METHOD_STATIC_RANGE_WEIGHT_ONLY_INT8, METHOD_NO_QUANTIZE); did you mean "
                 "'DYNAMIC_RANGE'?");
    expect_error(QO("quantization_method: DYNAMIC_RANGE op_set: TF"),
                 "opts.txt:1:94: op_set TF: agc quantizes to the XLA op set only; give "
                 "op_set: XLA (or leave op_set out)");
    expect_error(QO("quantizaton_method: DYNAMIC_RANGE"),
                 "opts.txt:1:51: unknown field 'quantizaton_method' in QuantizationOptions; "
                 "did you mean 'quantization_method'?");
    expect_error("external_feature_configs {\n  quantization_options {\n"
                 "    quantization_method: STATIC_RANGE\n  }\n}",
                 "opts.txt:3:26: static range quantization of signature \"serving_default\" "
                 "needs a representative data set: give representative_datasets { key: "
                 "\"serving_default\" value { tfrecord_file_path: \"...\" } }, or "
                 "quantization_method: DYNAMIC_RANGE or WEIGHT_ONLY");
    expect_error("external_feature_configs {\n  quantization_options { }\n}",
                 "opts.txt:2:24: static range quantization of signature \"serving_default\" "
                 "needs a representative data set: give representative_datasets { key: "
                 "\"serving_default\" value { tfrecord_file_path: \"...\" } }, or "
                 "quantization_method: DYNAMIC_RANGE or WEIGHT_ONLY");
    expect_error(QO("signature_keys: \"a\" representative_datasets { key: \"a\" value { "
                    "tfrecord_file_path: \"x\" } } signature_keys: \"b\""),
                 "opts.txt:1:49: static range quantization of signature \"b\" needs a "
                 "representative data set: give representative_datasets { key: \"b\" value { "
                 "tfrecord_file_path: \"...\" } }, or quantization_method: DYNAMIC_RANGE or "
                 "WEIGHT_ONLY");
    expect_error(QO("quantization_method: DYNAMIC_RANGE representative_datasets { key: "
                    "\"serving_defualt\" value { tfrecord_file_path: \"x\" } }"),
                 "opts.txt:1:117: representative data set for \"serving_defualt\", a "
                 "signature that is not quantized (signature_keys: serving_default); did you "
                 "mean 'serving_default'?");
    expect_error(QO("quantization_method: DYNAMIC_RANGE representative_datasets { value { "
                    "tfrecord_file_path: \"x\" } }"),
                 "opts.txt:1:110: a representative data set needs key: the signature it is for");
    expect_error(QO("representative_datasets { key: \"serving_default\" value { "
                    "tfrecord_file_path: \"x\" } } representative_datasets { key: "
                    "\"serving_default\" value { tfrecord_file_path: \"y\" } }"),
                 "opts.txt:1:167: signature \"serving_default\" has two representative data sets");
    expect_error(QO("representative_datasets { key: \"serving_default\" }"),
                 "opts.txt:1:82: the representative data set of \"serving_default\" needs tfrecord_file_path");
    expect_error(QO("quantization_method: WEIGHT_ONLY signature_keys: [\"a\", \"\"]"),
                 "opts.txt:1:106: signature_keys is empty: give the name of a signature");
    expect_error(QO("quantization_method: WEIGHT_ONLY signature_keys: [\"a\", \"a\"]"),
                 "opts.txt:1:106: signature_keys \"a\" is given twice (first at 1:101)");
    expect_error(QO("quantization_method: WEIGHT_ONLY min_num_elements_for_weights: -2"),
                 "opts.txt:1:114: min_num_elements_for_weights must be at least -1, got -2");
    expect_error(QO("quantization_method: DYNAMIC_RANGE calibration_options { "
                    "calibration_parameters { max_percentile: 100.5 } }"),
                 "opts.txt:1:149: max_percentile must be in [0, 100], got 100.5");
    expect_error(QO("quantization_method: DYNAMIC_RANGE calibration_options { "
                    "calibration_parameters { min_percentile: -1 } }"),
                 "opts.txt:1:149: min_percentile must be in [0, 100], got -1");
    expect_error(QO("quantization_method: DYNAMIC_RANGE calibration_options { "
                    "calibration_parameters { min_percentile: 60 max_percentile: 40 } }"),
                 "opts.txt:1:168: max_percentile (40) must be above min_percentile (60)");
    expect_error(QO("quantization_method: DYNAMIC_RANGE calibration_options { "
                    "calibration_method: CALIBRATION_METHOD_MINMAX }"),
                 "opts.txt:1:128: bad value 'CALIBRATION_METHOD_MINMAX' for field 'calibration_method' of "
                 "CalibrationOptions (one of CALIBRATION_METHOD_MIN_MAX, "
                 "CALIBRATION_METHOD_AVERAGE_MIN_MAX, CALIBRATION_METHOD_HISTOGRAM_PERCENTILE); "
                 "did you mean 'CALIBRATION_METHOD_MIN_MAX'?");
    expect_error(QO("quantization_method: DYNAMIC_RANGE unreached_branches: WARN"),
                 "opts.txt:1:106: bad value 'WARN' for field 'unreached_branches' of QuantizationOptions "
                 "(one of KEEP_FLOAT, FAIL)");
}

/* A data set's file is checked when the conversion starts, at its path's
 * place in the options. */
static void test_dataset_files_are_checked(void **state)
{
    (void)state;
    cv_options *o = malloc(sizeof *o);
    char err[512];
    parse_ok(QO("representative_datasets { key: \"serving_default\" value {\n"
                "tfrecord_file_path: \"/nonexistent/calib.tfrecord\" } }"),
             o);
    assert_false(cv_check_dataset_files(o, "opts.txt", err, sizeof err));
    assert_string_equal(err, "opts.txt:2:21: cannot read the representative data set "
                             "'/nonexistent/calib.tfrecord' of signature \"serving_default\": "
                             "No such file or directory");
    parse_ok(QO("representative_datasets { key: \"serving_default\" value {\n"
                "tfrecord_file_path: \"/tmp\" } }"),
             o);
    assert_false(cv_check_dataset_files(o, "opts.txt", err, sizeof err));
    assert_string_equal(err, "opts.txt:2:21: the representative data set '/tmp' of signature "
                             "\"serving_default\" is not a regular file");
    parse_ok(QO("representative_datasets { key: \"serving_default\" value {\n"
                "tfrecord_file_path: \"" TEST_CONVERTER_OPTIONS_SEED "\" } }"),
             o);
    if (!cv_check_dataset_files(o, "opts.txt", err, sizeof err))
        fail_msg("%s", err);
    free(o);
}

/* ----------------------------------------------------------- printing */

static char *print_to_string(const cv_options *o)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cv_options_print(o, f);
    fclose(f);
    return text;
}

/* The places differ between two texts of the same options; the values
 * must not. */
static void forget_places(cv_options *o)
{
    memset(&o->at, 0, sizeof o->at);
    for (int i = 0; i < CV_MAX_TPU_FUNCTIONS; i++)
        memset(&o->tpu_functions[i].at, 0, sizeof o->tpu_functions[i].at);
    for (int i = 0; i < CV_MAX_BATCH_OPTIONS; i++) {
        memset(&o->batch_options[i].at, 0, sizeof o->batch_options[i].at);
        memset(&o->batch_options[i].experimental.at, 0,
               sizeof o->batch_options[i].experimental.at);
    }
    memset(&o->bfloat16_optimization_options.at, 0, sizeof o->bfloat16_optimization_options.at);
    memset(&o->xla_sharding_options.at, 0, sizeof o->xla_sharding_options.at);
    cv_external_features *e = &o->external_feature_configs;
    cv_quantization_options *q = &e->quantization_options;
    memset(&e->at, 0, sizeof e->at);
    memset(&q->at, 0, sizeof q->at);
    memset(&q->calibration_options.at, 0, sizeof q->calibration_options.at);
    memset(&q->calibration_options.calibration_parameters.at, 0,
           sizeof q->calibration_options.calibration_parameters.at);
    for (int i = 0; i < CV_MAX_DATASETS; i++) {
        memset(&q->representative_datasets[i].at, 0, sizeof q->representative_datasets[i].at);
        memset(&q->representative_datasets[i].value.at, 0,
               sizeof q->representative_datasets[i].value.at);
    }
}

static void test_print_then_parse_is_the_same(void **state)
{
    (void)state;
    cv_options *a = malloc(sizeof *a), *b = malloc(sizeof *b);
    parse_ok(full_text, a);
    char *text = print_to_string(a);
    parse_ok(text, b);
    forget_places(a);
    forget_places(b);
    assert_memory_equal(a, b, sizeof *a);
    char *again = print_to_string(b);
    assert_string_equal(text, again);
    free(text);
    free(again);
    free(a);
    free(b);
}

static void test_print_is_canonical(void **state)
{
    (void)state;
    cv_options o;
    parse_ok("bfloat16_optimization : DEFAULT  # the default: not printed\n"
             "batch_options <max_batch_size: 16, allowed_batch_sizes: [4,16]; "
             "num_batch_threads: 1>\n"
             "tpu_functions{function_alias:'say \"hi\"\\n'}\n"
             "xla_sharding_options { num_cores_per_replica: 1 }\n",
             &o);
    char *text = print_to_string(&o);
    assert_string_equal(text, "tpu_functions {\n"
                              "  function_alias: \"say \\\"hi\\\"\\n\"\n"
                              "}\n"
                              "batch_options {\n"
                              "  max_batch_size: 16\n"
                              "  allowed_batch_sizes: 4\n"
                              "  allowed_batch_sizes: 16\n"
                              "}\n");
    free(text);
    cv_options_init(&o);
    text = print_to_string(&o);
    assert_string_equal(text, ""); /* the defaults print as nothing */
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_field_parses),
        cmocka_unit_test(test_places_are_recorded),
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_disable_default_optimizations),
        cmocka_unit_test(test_selectors),
        cmocka_unit_test(test_syntax_and_schema_errors),
        cmocka_unit_test(test_oneof_errors),
        cmocka_unit_test(test_tpu_function_errors),
        cmocka_unit_test(test_batch_errors),
        cmocka_unit_test(test_bf16_and_sharding_errors),
        cmocka_unit_test(test_capacity_is_an_error),
        cmocka_unit_test(test_fuzz_seed_is_valid),
        cmocka_unit_test(test_missing_file_is_named),
        cmocka_unit_test(test_file_errors_name_the_file),
        cmocka_unit_test(test_print_then_parse_is_the_same),
        cmocka_unit_test(test_print_is_canonical),
        cmocka_unit_test(test_quantization_methods),
        cmocka_unit_test(test_empty_quantization_options_print),
        cmocka_unit_test(test_quantization_errors),
        cmocka_unit_test(test_dataset_files_are_checked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
