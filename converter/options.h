/*
 * options.h - the converter's options (prefix cv_): the messages of
 * converter.md §2 as C structs, read from protocol-buffer text format,
 * checked, and printed back.
 *
 *     tpu_functions { function_alias: "tpu_func" }
 *     batch_options { max_batch_size: 32  allowed_batch_sizes: [8, 16, 32] }
 *     bfloat16_optimization_options { scope: ALL  filterlist: "exp" }
 *
 * Every field of every message has a member of the same name; a repeated
 * field is an array with its count in n_<field>. Each struct also keeps,
 * in `at`, where each field's value was written in the text (line 0: not
 * given), so that errors found later (by the converter, against the model)
 * can point at the options too. docs/converter-options.md is the user's
 * reference: every field, its default, and every error.
 */
#ifndef CV_OPTIONS_H
#define CV_OPTIONS_H

#include "batch_options.h"
#include "textproto.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The capacities of the fixed arrays; more is a located error. */
enum {
    CV_MAX_TPU_FUNCTIONS = 64,
    CV_MAX_BATCH_OPTIONS = 16,
    CV_MAX_BATCH_SIZES = BT_MAX_BATCH_SIZES, /* allowed_batch_sizes */
    CV_MAX_FILTERLIST = 64,
    CV_MAX_CORES = 256,       /* device_assignment: [x, y, z, core] of each */
    CV_NAME_BYTES = 256,      /* function, alias, signature names */
    CV_TOPOLOGY_BYTES = 4096, /* a serialized TopologyProto of 256 cores */
    CV_OP_NAME_BYTES = 64,    /* filterlist entries */
    CV_MAX_SIGNATURE_KEYS = 16, /* quantization_options.signature_keys */
    CV_MAX_DATASETS = 16,     /* quantization_options.representative_datasets */
    CV_MAX_TAGS = 16,         /* quantization_options.tags */
    CV_PATH_BYTES = 1024,     /* tfrecord_file_path */
};

/* ConverterOptions.State: DEFAULT is on unless disable_default_optimizations. */
typedef enum cv_state { CV_STATE_DEFAULT, CV_STATE_ENABLED, CV_STATE_DISABLED } cv_state;

/* BFloat16OptimizationOptions.Scope: DEFAULT means TPU. */
typedef enum cv_bf16_scope { CV_SCOPE_DEFAULT, CV_SCOPE_TPU, CV_SCOPE_ALL } cv_bf16_scope;

/* How a TpuFunction (or a batch's `experimental`) names what it selects. */
typedef enum cv_selector {
    CV_SELECT_NONE,
    CV_SELECT_FUNCTION_ALIAS,
    CV_SELECT_CONCRETE_FUNCTION_NAME,
    CV_SELECT_SIGNATURE_NAME,
    CV_SELECT_JIT_COMPILE_FUNCTIONS, /* TpuFunction only */
} cv_selector;

/* TpuFunction: one selector (a oneof), and soft placement. */
typedef struct cv_tpu_function {
    char function_alias[CV_NAME_BYTES];
    char concrete_function_name[CV_NAME_BYTES];
    char signature_name[CV_NAME_BYTES];
    bool jit_compile_functions; /* every function marked AG_JIT_COMPILE */
    bool enable_soft_device_placement; /* ops the TPU cannot run go to the CPU */
    struct {
        tp_loc function_alias, concrete_function_name, signature_name, jit_compile_functions,
            enable_soft_device_placement;
    } at;
} cv_tpu_function;

/* BatchOptions.experimental: what to batch (none: every TPU function). */
typedef struct cv_batch_target {
    char function_alias[CV_NAME_BYTES];
    char concrete_function_name[CV_NAME_BYTES];
    char signature_name[CV_NAME_BYTES];
    struct {
        tp_loc function_alias, concrete_function_name, signature_name;
    } at;
} cv_batch_target;

/* BatchOptions: the fields of pipeline/batch_options.def (those of
 * ag_batch_options, with its bounds and defaults), and what to batch. */
typedef struct cv_batch_options {
#define BT_OPTION BT_MEMBER
#include "batch_options.def"
#undef BT_OPTION
    cv_batch_target experimental;
    struct {
#define BT_OPTION BT_LOC_MEMBER
#include "batch_options.def"
#undef BT_OPTION
        tp_loc experimental;
    } at;
} cv_batch_options;

/* BFloat16OptimizationOptions. */
typedef struct cv_bf16_options {
    cv_bf16_scope scope;
    bool skip_safety_checks; /* convert a model that already has bf16 ops */
    char filterlist[CV_MAX_FILTERLIST][CV_OP_NAME_BYTES]; /* ops kept in f32 */
    int n_filterlist;
    struct {
        tp_loc scope, skip_safety_checks, filterlist[CV_MAX_FILTERLIST];
    } at;
} cv_bf16_options;

/* XlaShardingOptions: parsed and checked; only one core per replica runs. */
typedef struct cv_sharding_options {
    int64_t num_cores_per_replica; /* default 1; more is "not supported yet" */
    /* the replica's cores, flattened [x, y, z, core] each; none: the
     * topology's order */
    int64_t device_assignment[4 * CV_MAX_CORES];
    int n_device_assignment;
    /* a serialized tensorflow.tpu.TopologyProto (support/topology.h), or
     * a slice's name ("2x2", "2x2x1"); topology_len 0: not given */
    char topology[CV_TOPOLOGY_BYTES];
    int topology_len;
    struct {
        tp_loc num_cores_per_replica, device_assignment[4 * CV_MAX_CORES], topology;
    } at;
} cv_sharding_options;

/* QuantizationOptions.quantization_method as written: the converter
 * guide's names, then TensorFlow's newer presets (cv_quantization_method
 * says what each means). */
typedef enum cv_quant_spelling {
    CV_QS_STATIC_RANGE,
    CV_QS_DYNAMIC_RANGE,
    CV_QS_WEIGHT_ONLY,
    CV_QS_METHOD_STATIC_RANGE_INT8,
    CV_QS_METHOD_DYNAMIC_RANGE_INT8,
    CV_QS_METHOD_STATIC_RANGE_WEIGHT_ONLY_INT8,
    CV_QS_METHOD_NO_QUANTIZE,
} cv_quant_spelling;

/* What a quantization_method means. */
typedef enum cv_quant_method {
    CV_QUANT_NONE, /* no quantization_options, or METHOD_NO_QUANTIZE */
    CV_QUANT_STATIC_RANGE,
    CV_QUANT_DYNAMIC_RANGE,
    CV_QUANT_WEIGHT_ONLY,
} cv_quant_method;

/* QuantizationOptions.op_set: only XLA is made (the others: an error). */
typedef enum cv_op_set { CV_OP_SET_XLA, CV_OP_SET_TF, CV_OP_SET_UNIFORM_QUANTIZED,
                         CV_OP_SET_STABLEHLO } cv_op_set;

/* CalibrationOptions.calibration_method. */
typedef enum cv_calibration_method {
    CV_CALIBRATION_MIN_MAX,
    CV_CALIBRATION_AVERAGE_MIN_MAX,
    CV_CALIBRATION_HISTOGRAM_PERCENTILE,
} cv_calibration_method;

/* What an op whose tensors no calibration sample reached does (agc's
 * own field): stays float with a warning, or fails the conversion. */
typedef enum cv_unreached { CV_UNREACHED_KEEP_FLOAT, CV_UNREACHED_FAIL } cv_unreached;

/* CalibrationOptions.CalibrationParameters: the histogram's percentiles. */
typedef struct cv_calibration_parameters {
    double min_percentile, max_percentile;
    struct {
        tp_loc min_percentile, max_percentile;
    } at;
} cv_calibration_parameters;

typedef struct cv_calibration_options {
    cv_calibration_method calibration_method;
    cv_calibration_parameters calibration_parameters;
    struct {
        tp_loc calibration_method, calibration_parameters;
    } at;
} cv_calibration_options;

/* RepresentativeDatasetFile, the value of representative_datasets. */
typedef struct cv_dataset_file {
    char tfrecord_file_path[CV_PATH_BYTES];
    struct {
        tp_loc tfrecord_file_path;
    } at;
} cv_dataset_file;

/* One entry of the map representative_datasets: signature key -> file. */
typedef struct cv_dataset_entry {
    char key[CV_NAME_BYTES];
    cv_dataset_file value;
    struct {
        tp_loc key, value;
    } at;
} cv_dataset_entry;

/* QuantizationOptions (quantization.md, "Options"). */
typedef struct cv_quantization_options {
    cv_quant_spelling quantization_method;
    cv_op_set op_set;
    char tags[CV_MAX_TAGS][CV_NAME_BYTES]; /* accepted and ignored */
    int n_tags;
    char signature_keys[CV_MAX_SIGNATURE_KEYS][CV_NAME_BYTES]; /* none: serving_default */
    int n_signature_keys;
    cv_dataset_entry representative_datasets[CV_MAX_DATASETS];
    int n_representative_datasets;
    int64_t min_num_elements_for_weights; /* 0: the method's default; -1: none */
    bool enable_per_channel_quantization;
    cv_calibration_options calibration_options;
    cv_unreached unreached_branches;
    struct {
        tp_loc quantization_method, op_set, tags[CV_MAX_TAGS],
            signature_keys[CV_MAX_SIGNATURE_KEYS], representative_datasets[CV_MAX_DATASETS],
            min_num_elements_for_weights, enable_per_channel_quantization, calibration_options,
            unreached_branches;
    } at;
} cv_quantization_options;

/* ExternalFeatureConfigs: the converter's features beyond the TPU. */
typedef struct cv_external_features {
    cv_quantization_options quantization_options;
    bool has_quantization_options; /* given (even empty: static range) */
    struct {
        tp_loc quantization_options;
    } at;
} cv_external_features;

/* ConverterOptions. */
typedef struct cv_options {
    cv_tpu_function tpu_functions[CV_MAX_TPU_FUNCTIONS];
    int n_tpu_functions;
    cv_batch_options batch_options[CV_MAX_BATCH_OPTIONS];
    int n_batch_options;
    bool disable_default_optimizations;
    cv_state io_shape_optimization;
    cv_state bfloat16_optimization;
    cv_bf16_options bfloat16_optimization_options;
    cv_sharding_options xla_sharding_options;
    cv_external_features external_feature_configs;
    struct {
        tp_loc tpu_functions[CV_MAX_TPU_FUNCTIONS], batch_options[CV_MAX_BATCH_OPTIONS],
            disable_default_optimizations, io_shape_optimization, bfloat16_optimization,
            bfloat16_optimization_options, xla_sharding_options, external_feature_configs;
    } at;
} cv_options;

/* The schemas (support/textproto.h) of ConverterOptions and its
 * messages: every field's name, type, default, bounds and doc, from which
 * the defaults, the bounds' checks, the canonical text
 * (support/options_table.h) and docs/converter-options.md's tables
 * (checked by tests/unit/test_options_table.c) are made. */
extern const tp_message cv_options_message, cv_tpu_function_message, cv_batch_message,
    cv_batch_target_message, cv_bf16_message, cv_sharding_message, cv_external_message,
    cv_quantization_message, cv_dataset_entry_message, cv_dataset_file_message,
    cv_calibration_message, cv_calibration_parameters_message;

/* The optimizations a State field turns on or off. */
typedef enum cv_optimization { CV_OPT_IO_SHAPE, CV_OPT_BFLOAT16 } cv_optimization;

/* The defaults: no TPU function, no batching, both optimizations DEFAULT. */
void cv_options_init(cv_options *o);

/*
 * Reads options from text (named `source` in messages: "<string>" for a
 * command-line string), fills the defaults, and checks them (the rules of
 * docs/converter-options.md). False with "source:line:col: message" in
 * err. The structs own no memory: there is nothing to free.
 */
bool cv_options_parse(const char *text, const char *source, cv_options *out, char *err,
                      size_t errlen);
/* cv_options_parse on a file's text; a file that cannot be read is an
 * error naming it. */
bool cv_options_read_file(const char *path, cv_options *out, char *err, size_t errlen);

/* The checks cv_options_parse makes after reading (for options built in
 * code, source may be NULL); false with the first error in err. */
bool cv_options_check(const cv_options *o, const char *source, char *err, size_t errlen);

/* The canonical text form: the fields that differ from their defaults, in
 * the schema's order. cv_options_parse reads it back to the same values. */
void cv_options_print(const cv_options *o, FILE *out);

/* Whether an optimization runs: ENABLED runs, DISABLED does not, DEFAULT
 * runs unless disable_default_optimizations. */
bool cv_optimization_enabled(const cv_options *o, cv_optimization which);

/* What the options' quantization_method means (CV_QUANT_NONE without
 * quantization_options). */
cv_quant_method cv_quantization_method(const cv_options *o);
/* The quantization method's name in messages and the report. */
const char *cv_quant_method_name(cv_quant_method m);
/* The weights smaller than this stay float: min_num_elements_for_weights,
 * or its default for the method (1024 for dynamic range and weights
 * only, 0 for static range); -1 gives 0. */
int64_t cv_min_weight_elements(const cv_options *o);
/* The signatures to quantize: signature_keys, or "serving_default". */
int cv_quantized_signatures(const cv_options *o, const char *names[CV_MAX_SIGNATURE_KEYS]);
/* The data set of signature `key` (NULL: none given), and where. */
const cv_dataset_entry *cv_dataset_of(const cv_options *o, const char *key);
/* Each representative data set's file can be read (the conversion checks
 * it before it starts, not the reader: options stay text). False with
 * "source:line:col: ..." at the path. */
bool cv_check_dataset_files(const cv_options *o, const char *source, char *err,
                            size_t errlen);

/* What a TpuFunction selects, and the name it gives (NULL for
 * jit_compile_functions and NONE). */
cv_selector cv_tpu_function_selector(const cv_tpu_function *f, const char **name);
/* What a BatchOptions' experimental selects (NONE: every TPU function). */
cv_selector cv_batch_target_selector(const cv_batch_target *t, const char **name);
/* The selector's field name: "function_alias", ... ("" for NONE). */
const char *cv_selector_field(cv_selector s);

#endif /* CV_OPTIONS_H */
