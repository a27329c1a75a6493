/*
 * manifest.h - a saved model's table of contents (prefix sm_), the file
 * saved_model.pbtxt in protobuf text format (docs/saved-model.md):
 *
 *     format_version: 1
 *     producer: "agc 0.1.0"
 *     function {
 *       name: "__inference_mlp_1"  function: "mlp"  signature: "f32[?,784]"
 *       file: "functions/__inference_mlp_1.ir"  bytes: 1234  checksum: 3735928559
 *       target: "cpu"
 *       input { name: "x" type: "f32[?,784]" }
 *       output { name: "output_0" type: "f32[?,10]" }
 *       variable: [0, 1]
 *       quantized { op: "matmul" at: "mlp.c:12" how: "static range int8: ..." }
 *     }
 *     signature { name: "serving_default" function: "__inference_mlp_1" ... }
 *     alias { name: "tpu_func" function: "layer" }
 *     variable { name: "variable_0" type: "f32[784,512]" offset: 8 bytes: ... }
 *     complete: true
 *
 * The records have fixed capacities (a model is a table of contents, not
 * its data); the limits are the SM_MAX_* below and are errors, not
 * truncation.
 */
#ifndef SM_MANIFEST_H
#define SM_MANIFEST_H

#include "batch_options.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define SM_FORMAT_VERSION 1
#define SM_MANIFEST_FILE "saved_model.pbtxt"
#define SM_VARIABLES_FILE "variables.bin"
#define SM_VARIABLES_MAGIC "AGVARS01" /* the first 8 bytes of variables.bin */

enum {
    SM_NAME = 128,
    SM_TEXT = 512,
    SM_MAX_IO = 32,
    SM_MAX_SCOPES = 16,
    SM_MAX_FN_VARIABLES = 256,
    SM_MAX_FUNCTIONS = 64,
    SM_MAX_SIGNATURES = 64,
    SM_MAX_ALIASES = 64,
    SM_MAX_VARIABLES = 1024,
    SM_MAX_CONFIG = 32, /* lines of `config`: at most one per setting */
    SM_MAX_QUANTIZED = 32, /* products a function's quantization record lists */
};

typedef struct sm_io {
    char name[SM_NAME];
    char type[SM_NAME]; /* "f32[?,784]" */
} sm_io;

typedef struct sm_name {
    char name[SM_NAME];
} sm_name;

/* An AG_FUNCTION a function calls (the tracer inlined it), and whether it
 * is marked AG_JIT_COMPILE (the converter's jit_compile_functions selects
 * it inside its callers). */
typedef struct sm_call {
    char name[SM_NAME];
    bool jit_compile;
} sm_call;

/* How the converter asks a function's graphs to be converted to bf16
 * (pass_bf16_options, as text). */
typedef struct sm_bf16 {
    bool enabled;
    int scope; /* 0 DEFAULT (= TPU), 1 TPU, 2 ALL */
    char filterlist[SM_TEXT];
    bool skip_safety_checks;
} sm_bf16;

/* Batching (the converter's BatchOptions): the fields of
 * pipeline/batch_options.def (those of ag_batch_options, with their
 * bounds and defaults), and where the batching op sits: at the function's
 * inputs, or (in_graph) in front of the nodes of the AG_FUNCTION `scope`
 * it inlined (none: of its device scopes), the work around them running
 * on each caller's thread (model/batch_split.c). */
typedef struct sm_batch {
#define BT_OPTION BT_MEMBER
#include "batch_options.def"
#undef BT_OPTION
    bool in_graph;
    char scope[SM_NAME];
} sm_batch;

/* What post-training quantization made of one product of a function (the
 * converter's record, which `agc-model show` prints): the op, the user's
 * line, and how ("static range int8: ...", or why it stayed float). */
typedef struct sm_quantized {
    char op[24];
    char at[SM_NAME];
    char how[200];
} sm_quantized;

/* One concrete function: a traced graph in the text IR. */
typedef struct sm_function {
    char name[SM_NAME];        /* __inference_<function>_<n> */
    char function[SM_NAME];    /* the AG_FUNCTION it was traced from */
    char signature[SM_TEXT];   /* what it was traced for */
    char file[2 * SM_NAME];    /* its text IR, relative to the model */
    int64_t bytes, checksum;   /* of that file: size, CRC-32 */
    bool jit_compile;          /* AG_JIT_COMPILE */
    char target[SM_NAME];      /* where it runs: "cpu", "tpu-model", ... */
    bool soft_device_placement;
    /* tpu-model: tile-friendly host transfers (its device spec's
     * io_shapes, which requests add to device_spec) */
    bool io_shape_optimization;
    /* device spec fields over the configured spec's (the converter's
     * sharding: "chips: 4 mesh { x: 2 y: 2 }"); "": none */
    char device_spec[SM_NAME];
    /* its variables are read as constants of the saved values (a function
     * that only reads them, placed on a device: the weights live there) */
    bool freeze_variables;
    /* placed on the device: only the nodes of these inlined functions
     * (none: all of it, when target is a device) */
    sm_name device_scopes[SM_MAX_SCOPES];
    int n_device_scopes;
    sm_call calls[SM_MAX_SCOPES]; /* the AG_FUNCTIONs it calls (inlined) */
    int n_calls;
    sm_bf16 bf16;
    bool has_bf16;
    sm_batch batch; /* calls are batched (has_batch) */
    bool has_batch;
    sm_io inputs[SM_MAX_IO];
    int n_inputs;
    sm_io outputs[SM_MAX_IO];
    int n_outputs;
    int64_t variables[SM_MAX_FN_VARIABLES]; /* @vN is the model's variables[N] */
    int n_variables;
    sm_quantized quantized[SM_MAX_QUANTIZED]; /* its products, when quantized */
    int n_quantized;
} sm_function;

/* A named entry point: a concrete function with named inputs, outputs. */
typedef struct sm_signature {
    char name[SM_NAME];
    char function[SM_NAME]; /* the concrete function's name */
    sm_io inputs[SM_MAX_IO];
    int n_inputs;
    sm_io outputs[SM_MAX_IO];
    int n_outputs;
} sm_signature;

typedef struct sm_alias {
    char name[SM_NAME];
    char function[SM_NAME]; /* an AG_FUNCTION's name */
} sm_alias;

/* A variable's value, in variables.bin at `offset`. */
typedef struct sm_variable {
    char name[SM_NAME];
    char type[SM_NAME];
    char created_at[2 * SM_NAME]; /* "file.c:12", where the program made it */
    bool constant; /* a constant of a graph, kept here in binary (read-only) */
    int64_t offset, bytes, checksum;
} sm_variable;

typedef struct sm_manifest {
    int64_t format_version;
    char producer[SM_NAME];
    /* The settings the functions were traced with that are not defaults,
     * "name = value (source)" each (runtime/core/config.h): what made
     * the model, for people; loading ignores them. */
    char config[SM_MAX_CONFIG][SM_TEXT];
    int n_config;
    sm_function functions[SM_MAX_FUNCTIONS];
    int n_functions;
    sm_signature signatures[SM_MAX_SIGNATURES];
    int n_signatures;
    sm_alias aliases[SM_MAX_ALIASES];
    int n_aliases;
    sm_variable variables[SM_MAX_VARIABLES];
    int n_variables;
    int64_t variables_bytes; /* the size of variables.bin */
    bool complete;           /* the last line: a manifest cut short lacks it */
} sm_manifest;

/* Reads the manifest's text (named `source` in messages); checks the
 * format version. False with "source:line:col: message" in err. */
bool sm_manifest_parse(const char *text, const char *source, sm_manifest *m, char *err,
                       size_t errlen);
/* The message for a manifest cut short (it lacks its last line). */
void sm_manifest_truncated(const char *source, char *err, size_t errlen);
/* Writes m in the form sm_manifest_parse reads. */
void sm_manifest_print(const sm_manifest *m, FILE *out);

/* The batcher's options of a record, b's allowed sizes copied into
 * `allowed` (BT_MAX_BATCH_SIZES ints, which must outlive *o). */
void sm_batch_options(const sm_batch *b, ag_batch_options *o, int *allowed);

/* The function, signature or alias named `name`; NULL if none is. */
sm_function *sm_find_function(sm_manifest *m, const char *name);
sm_signature *sm_find_signature(sm_manifest *m, const char *name);

/* For a message about a name the model does not have: what it has
 * ("'a', 'b'", or "none") in buf, and "; did you mean 'a'?" for the one
 * close to `typed` in hint, or "" (support/suggest.h). */
typedef enum sm_name_kind { SM_SIGNATURES, SM_ALIASES, SM_FUNCTIONS } sm_name_kind;
void sm_names_for(const sm_manifest *m, sm_name_kind kind, const char *typed, char *buf,
                  size_t n, char *hint, size_t hint_n);

#endif
