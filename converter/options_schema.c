/*
 * options_schema.c - the schema of the converter's options (converter.md
 * §2) for the text-format reader (support/textproto.h): one table of rows
 * per message, from which support/options_table.h makes the defaults, the
 * bounds' checks and the canonical text; and what the parsed options mean
 * (which optimizations are on, what a selector names). options.c reads
 * and prints with these tables, options_check.c checks across fields:
 * both use this file, which uses neither.
 */
#include "options.h"

#include "options_table.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

/* ----------------------------------------------------------------- schema */

/* Each message is one table of rows: name, type, default, bounds, doc.
 * The members of the structs are in options.h (BatchOptions': from
 * pipeline/batch_options.def); a row naming no member does not compile. */

#define MEMBER_SIZE(T, f) sizeof(((T *)0)->f)
#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* A singular field of struct T, recording its place in T.at; the rest of
 * the row (default, bounds, doc, ...) as designated initializers. */
#define SCALAR(T, f, type_, ...)                                                         \
    {.name = #f, .type = type_, .offset = offsetof(T, f), .loc_offset = offsetof(T, at.f), \
     __VA_ARGS__}
#define STRING(T, f, ...) SCALAR(T, f, TP_STRING, .capacity = MEMBER_SIZE(T, f), __VA_ARGS__)
/* Bytes that may hold NULs: the array f, its length f_len. */
#define BYTES(T, f, ...)                                                                   \
    SCALAR(T, f, TP_BYTES, .capacity = MEMBER_SIZE(T, f), .count_offset = offsetof(T, f##_len), \
           __VA_ARGS__)
/* A repeated field: the array f, its count n_f, one place per element. */
#define REPEATED(T, f, type_, ...)                                                      \
    {.name = #f, .type = type_, .offset = offsetof(T, f), .repeated = true,            \
     .capacity = MEMBER_SIZE(T, f) / MEMBER_SIZE(T, f[0]),                             \
     .count_offset = offsetof(T, n_##f), .elem_size = MEMBER_SIZE(T, f[0]),            \
     .loc_offset = offsetof(T, at.f), __VA_ARGS__}

static const char *const states[] = {"DEFAULT", "ENABLED", "DISABLED", NULL};
static const char *const scopes[] = {"DEFAULT", "TPU", "ALL", NULL};

/* The oneof of TpuFunction and of BatchOptions.experimental. */
#define SELECTOR "selector"

static const tp_field tpu_function_fields[] = {
    STRING(cv_tpu_function, function_alias, .oneof = SELECTOR,
           .doc = "the function exported under this alias (`AG_ALIAS`)"),
    STRING(cv_tpu_function, concrete_function_name, .oneof = SELECTOR,
           .doc = "the concrete function of this generated name (`__inference_<name>_<n>`)"),
    STRING(cv_tpu_function, signature_name, .oneof = SELECTOR,
           .doc = "the function behind this signature (`serving_default`, ...)"),
    SCALAR(cv_tpu_function, jit_compile_functions, TP_BOOL, .oneof = SELECTOR,
           .doc = "`true`: every function marked `AG_JIT_COMPILE`"),
    SCALAR(cv_tpu_function, enable_soft_device_placement, TP_BOOL,
           .doc = "ops the TPU cannot run (`ag_print`, ...) run on the CPU instead of being "
                  "an error"),
};
const tp_message cv_tpu_function_message = {"TpuFunction", tpu_function_fields,
                                            COUNT(tpu_function_fields)};

static const tp_field batch_target_fields[] = {
    STRING(cv_batch_target, function_alias, .oneof = SELECTOR,
           .doc = "this function: its own concrete function at its inputs, and in front of "
                  "its nodes in every caller that inlined it"),
    STRING(cv_batch_target, concrete_function_name, .oneof = SELECTOR,
           .doc = "the concrete function of this name, at its inputs"),
    STRING(cv_batch_target, signature_name, .oneof = SELECTOR,
           .doc = "the function behind this signature, its CPU and TPU work together"),
};
const tp_message cv_batch_target_message = {"BatchOptions.Experimental", batch_target_fields,
                                            COUNT(batch_target_fields)};

/* BatchOptions: pipeline/batch_options.def's rows, then what to batch.
 * Their bounds are checked after reading (options_check.c), so that a
 * missing max_batch_size is named as such. */
#define BT_ROW_TYPE cv_batch_options
#define BT_ROW_FLAGS TP_BOUNDS_LATER
#define BT_ROW_LOC(f) offsetof(cv_batch_options, at.f)
static const tp_field batch_fields[] = {
#define BT_OPTION BT_FIELD_ROW
#include "batch_options.def"
#undef BT_OPTION
    SCALAR(cv_batch_options, experimental, TP_MESSAGE, .message = &cv_batch_target_message,
           .def_doc = "every TPU function", .doc = "what to batch"),
};
#undef BT_ROW_TYPE
#undef BT_ROW_LOC
#undef BT_ROW_FLAGS
const tp_message cv_batch_message = {"BatchOptions", batch_fields, COUNT(batch_fields)};

static const tp_field bf16_fields[] = {
    SCALAR(cv_bf16_options, scope, TP_ENUM, .enums = scopes, .def_doc = "`DEFAULT` (= `TPU`)",
           .doc = "convert only the TPU functions, or everything"),
    SCALAR(cv_bf16_options, skip_safety_checks, TP_BOOL,
           .doc = "convert a model that already has bf16 ops (refused otherwise)"),
    REPEATED(cv_bf16_options, filterlist, TP_STRING,
             .doc = "ops kept in f32 (their inputs cast to f32, their outputs back to bf16); "
                    "op names of the IR (`docs/ir.md`: `exp`, `softmax`, `matmul`, ...)"),
};
const tp_message cv_bf16_message = {"BFloat16OptimizationOptions", bf16_fields,
                                    COUNT(bf16_fields)};

static const tp_field sharding_fields[] = {
    SCALAR(cv_sharding_options, num_cores_per_replica, TP_INT, .def = 1, .lo = 1,
           .hi = HUGE_VAL, .flags = TP_BOUNDS_LATER,
           .doc = "cores one replica is sharded across, a divisor of the topology's cores; "
                  "above 1, the TPU functions run on those chips, each program partitioned "
                  "over them"),
    REPEATED(cv_sharding_options, device_assignment, TP_INT,
             .doc = "the replica's cores, flattened `[x, y, z, core]` each (4 per core), "
                    "inside the topology's mesh, none twice; none: the topology's order"),
    BYTES(cv_sharding_options, topology,
          .doc = "a serialized `tensorflow.tpu.TopologyProto` as an escaped string "
                 "(`agc-convert --print-topology=2x2` prints one), or a slice's name, `AxB` "
                 "or `AxBxC` (`\"2x2\"`, `\"2x4\"`); required above 1 core"),
};
const tp_message cv_sharding_message = {"XlaShardingOptions", sharding_fields,
                                        COUNT(sharding_fields)};

/* ----------------------------------------------- quantization (quantization.md) */

static const char *const quant_methods[] = {
    "STATIC_RANGE", "DYNAMIC_RANGE", "WEIGHT_ONLY", "METHOD_STATIC_RANGE_INT8",
    "METHOD_DYNAMIC_RANGE_INT8", "METHOD_STATIC_RANGE_WEIGHT_ONLY_INT8", "METHOD_NO_QUANTIZE",
    NULL};
static const char *const op_sets[] = {"XLA", "TF", "UNIFORM_QUANTIZED", "STABLEHLO", NULL};
static const char *const calibration_methods[] = {
    "CALIBRATION_METHOD_MIN_MAX", "CALIBRATION_METHOD_AVERAGE_MIN_MAX",
    "CALIBRATION_METHOD_HISTOGRAM_PERCENTILE", NULL};
static const char *const unreached[] = {"KEEP_FLOAT", "FAIL", NULL};

static const tp_field calibration_parameters_fields[] = {
    SCALAR(cv_calibration_parameters, min_percentile, TP_DOUBLE, .def = 0.001, .lo = 0,
           .hi = 100, .flags = TP_BOUNDS_LATER,
           .doc = "HISTOGRAM_PERCENTILE: the range starts at this percentile of the values "
                  "seen"),
    SCALAR(cv_calibration_parameters, max_percentile, TP_DOUBLE, .def = 99.999, .lo = 0,
           .hi = 100, .flags = TP_BOUNDS_LATER,
           .doc = "HISTOGRAM_PERCENTILE: the range ends at this percentile (above "
                  "min_percentile)"),
};
const tp_message cv_calibration_parameters_message = {
    "CalibrationOptions.CalibrationParameters", calibration_parameters_fields,
    COUNT(calibration_parameters_fields)};

static const tp_field calibration_fields[] = {
    SCALAR(cv_calibration_options, calibration_method, TP_ENUM, .enums = calibration_methods,
           .doc = "how a tensor's range is made of the values the data set gives it: their "
                  "min and max, the mean over samples of each sample's min and max, or "
                  "percentiles of a 2048-bin histogram"),
    SCALAR(cv_calibration_options, calibration_parameters, TP_MESSAGE,
           .message = &cv_calibration_parameters_message,
           .doc = "the histogram's percentiles"),
};
const tp_message cv_calibration_message = {"CalibrationOptions", calibration_fields,
                                           COUNT(calibration_fields)};

static const tp_field dataset_file_fields[] = {
    STRING(cv_dataset_file, tfrecord_file_path,
           .doc = "a TFRecord file of `RepresentativeDataSample`s (relative paths: to the "
                  "working directory)"),
};
const tp_message cv_dataset_file_message = {"RepresentativeDatasetFile", dataset_file_fields,
                                            COUNT(dataset_file_fields)};

static const tp_field dataset_entry_fields[] = {
    STRING(cv_dataset_entry, key, .doc = "the signature the data set is for"),
    SCALAR(cv_dataset_entry, value, TP_MESSAGE, .message = &cv_dataset_file_message,
           .doc = "its file"),
};
const tp_message cv_dataset_entry_message = {"RepresentativeDatasetsEntry",
                                             dataset_entry_fields, COUNT(dataset_entry_fields)};

static const tp_field quantization_fields[] = {
    SCALAR(cv_quantization_options, quantization_method, TP_ENUM, .enums = quant_methods,
           .doc = "static range (activations calibrated on the data set), dynamic range "
                  "(activations' scales made per call) or weights only; TensorFlow's "
                  "`METHOD_*` presets mean the same (`METHOD_NO_QUANTIZE`: none)"),
    SCALAR(cv_quantization_options, op_set, TP_ENUM, .enums = op_sets,
           .doc = "the ops quantized graphs use: agc makes `XLA` only (another value is an "
                  "error)"),
    REPEATED(cv_quantization_options, tags, TP_STRING,
             .doc = "the saved model's tags: accepted and ignored (an agc model has one set "
                    "of graphs)"),
    REPEATED(cv_quantization_options, signature_keys, TP_STRING,
             .def_doc = "`serving_default`", .doc = "the signatures to quantize"),
    REPEATED(cv_quantization_options, representative_datasets, TP_MESSAGE,
             .message = &cv_dataset_entry_message,
             .doc = "a map from signature key to its data set (`{ key: \"serving_default\" "
                    "value { tfrecord_file_path: \"calib.tfrecord\" } }`); static range "
                    "needs one per signature"),
    SCALAR(cv_quantization_options, min_num_elements_for_weights, TP_INT, .lo = -1,
           .hi = HUGE_VAL, .flags = TP_BOUNDS_LATER,
           .def_doc = "0: 1024 for `DYNAMIC_RANGE` and `WEIGHT_ONLY`, none for `STATIC_RANGE`",
           .doc = "weights with fewer elements stay float; -1: every weight is quantized"),
    SCALAR(cv_quantization_options, enable_per_channel_quantization, TP_BOOL,
           .doc = "weights get one scale per output channel (else one per tensor)"),
    SCALAR(cv_quantization_options, calibration_options, TP_MESSAGE,
           .message = &cv_calibration_message, .doc = "how static range calibrates"),
    SCALAR(cv_quantization_options, unreached_branches, TP_ENUM, .enums = unreached,
           .doc = "agc's own: an op in a branch or loop body no sample reached stays float "
                  "with a warning (`KEEP_FLOAT`) or fails the conversion (`FAIL`)"),
};
const tp_message cv_quantization_message = {"QuantizationOptions", quantization_fields,
                                            COUNT(quantization_fields)};

static const tp_field external_fields[] = {
    SCALAR(cv_external_features, quantization_options, TP_MESSAGE,
           .message = &cv_quantization_message,
           .seen_offset = offsetof(cv_external_features, has_quantization_options),
           .def_doc = "none (no quantization)",
           .doc = "post-training quantization (`docs/quantization.md`); given, even empty, "
                  "it quantizes"),
};
const tp_message cv_external_message = {"ExternalFeatureConfigs", external_fields,
                                        COUNT(external_fields)};

static const tp_field options_fields[] = {
    REPEATED(cv_options, tpu_functions, TP_MESSAGE, .message = &cv_tpu_function_message,
             .doc = "the functions to place on the TPU"),
    REPEATED(cv_options, batch_options, TP_MESSAGE, .message = &cv_batch_message,
             .doc = "in-graph batching to add (`docs/batching.md`)"),
    SCALAR(cv_options, disable_default_optimizations, TP_BOOL,
           .doc = "turns off every optimization that is on by default, unless it is "
                  "explicitly `ENABLED`"),
    SCALAR(cv_options, io_shape_optimization, TP_ENUM, .enums = states,
           .def_doc = "`DEFAULT` (on)",
           .doc = "reshape tensors crossing the host link into tile-friendly shapes "
                  "(converter.md §5)"),
    SCALAR(cv_options, bfloat16_optimization, TP_ENUM, .enums = states,
           .def_doc = "`DEFAULT` (on)",
           .doc = "convert float32 to bfloat16 with the bf16 pass (`docs/passes.md`)"),
    SCALAR(cv_options, bfloat16_optimization_options, TP_MESSAGE, .message = &cv_bf16_message,
           .doc = "how the bf16 conversion runs"),
    SCALAR(cv_options, xla_sharding_options, TP_MESSAGE, .message = &cv_sharding_message,
           .doc = "sharding of a replica across cores (parsed and checked; only 1 core runs "
                  "yet)"),
    SCALAR(cv_options, external_feature_configs, TP_MESSAGE, .message = &cv_external_message,
           .doc = "features beyond the TPU: `quantization_options`"),
};
const tp_message cv_options_message = {"ConverterOptions", options_fields,
                                       COUNT(options_fields)};

/* --------------------------------------------------------------- defaults */

void cv_options_init(cv_options *o)
{
    memset(o, 0, sizeof *o);
    ot_defaults(&cv_options_message, o);
}

/* ---------------------------------------------------------------- queries */

bool cv_optimization_enabled(const cv_options *o, cv_optimization which)
{
    cv_state s = which == CV_OPT_IO_SHAPE ? o->io_shape_optimization : o->bfloat16_optimization;
    if (s == CV_STATE_DEFAULT)
        return !o->disable_default_optimizations;
    return s == CV_STATE_ENABLED;
}

cv_quant_method cv_quantization_method(const cv_options *o)
{
    static const cv_quant_method meaning[] = {
        CV_QUANT_STATIC_RANGE, CV_QUANT_DYNAMIC_RANGE, CV_QUANT_WEIGHT_ONLY,
        CV_QUANT_STATIC_RANGE, CV_QUANT_DYNAMIC_RANGE, CV_QUANT_WEIGHT_ONLY, CV_QUANT_NONE};
    const cv_external_features *x = &o->external_feature_configs;
    if (!x->has_quantization_options)
        return CV_QUANT_NONE;
    return meaning[x->quantization_options.quantization_method];
}

const char *cv_quant_method_name(cv_quant_method m)
{
    static const char *const names[] = {"none", "static range", "dynamic range",
                                        "weights only"};
    return names[m];
}

int64_t cv_min_weight_elements(const cv_options *o)
{
    int64_t n = o->external_feature_configs.quantization_options.min_num_elements_for_weights;
    if (n < 0)
        return 0;
    if (n > 0)
        return n;
    return cv_quantization_method(o) == CV_QUANT_STATIC_RANGE ? 0 : 1024;
}

int cv_quantized_signatures(const cv_options *o, const char *names[CV_MAX_SIGNATURE_KEYS])
{
    const cv_quantization_options *q = &o->external_feature_configs.quantization_options;
    if (q->n_signature_keys == 0) {
        names[0] = "serving_default";
        return 1;
    }
    for (int i = 0; i < q->n_signature_keys; i++)
        names[i] = q->signature_keys[i];
    return q->n_signature_keys;
}

const cv_dataset_entry *cv_dataset_of(const cv_options *o, const char *key)
{
    const cv_quantization_options *q = &o->external_feature_configs.quantization_options;
    for (int i = 0; i < q->n_representative_datasets; i++)
        if (strcmp(q->representative_datasets[i].key, key) == 0)
            return &q->representative_datasets[i];
    return NULL;
}

/* The one of three names that is given, if any. */
static cv_selector named(const char *alias, const char *concrete, const char *signature,
                         const char **name)
{
    const char *names[] = {alias, concrete, signature};
    static const cv_selector kinds[] = {CV_SELECT_FUNCTION_ALIAS,
                                        CV_SELECT_CONCRETE_FUNCTION_NAME,
                                        CV_SELECT_SIGNATURE_NAME};
    for (int i = 0; i < 3; i++)
        if (names[i][0]) {
            *name = names[i];
            return kinds[i];
        }
    *name = NULL;
    return CV_SELECT_NONE;
}

cv_selector cv_tpu_function_selector(const cv_tpu_function *f, const char **name)
{
    const char *unused;
    if (!name)
        name = &unused;
    cv_selector s = named(f->function_alias, f->concrete_function_name, f->signature_name, name);
    return s == CV_SELECT_NONE && f->jit_compile_functions ? CV_SELECT_JIT_COMPILE_FUNCTIONS : s;
}

cv_selector cv_batch_target_selector(const cv_batch_target *t, const char **name)
{
    const char *unused;
    return named(t->function_alias, t->concrete_function_name, t->signature_name,
                 name ? name : &unused);
}

const char *cv_selector_field(cv_selector s)
{
    static const char *const fields[] = {"", "function_alias", "concrete_function_name",
                                         "signature_name", "jit_compile_functions"};
    return fields[s];
}
