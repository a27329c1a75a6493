/*
 * options.c - the schema of the converter's options (converter.md §2) for
 * the text-format reader (support/textproto.h), their defaults, and
 * reading them from a string or a file. The checks that need more than
 * one field are in options_check.c, the printer in options_print.c.
 */
#include "options.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ----------------------------------------------------------------- schema */

#define MEMBER_SIZE(T, f) sizeof(((T *)0)->f)

/* A singular scalar field of struct T, recording its place in T.at. */
#define SCALAR(T, f, type_) \
    {.name = #f, .type = type_, .offset = offsetof(T, f), .loc_offset = offsetof(T, at.f)}
#define STRING(T, f, oneof_)                                                           \
    {.name = #f, .type = TP_STRING, .offset = offsetof(T, f),                          \
     .capacity = MEMBER_SIZE(T, f), .loc_offset = offsetof(T, at.f), .oneof = oneof_}
#define ENUM(T, f, names) \
    {.name = #f, .type = TP_ENUM, .offset = offsetof(T, f), .enums = names, \
     .loc_offset = offsetof(T, at.f)}
#define MESSAGE(T, f, msg) \
    {.name = #f, .type = TP_MESSAGE, .offset = offsetof(T, f), .message = &msg, \
     .loc_offset = offsetof(T, at.f)}
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
    STRING(cv_tpu_function, function_alias, SELECTOR),
    STRING(cv_tpu_function, concrete_function_name, SELECTOR),
    STRING(cv_tpu_function, signature_name, SELECTOR),
    {.name = "jit_compile_functions", .type = TP_BOOL,
     .offset = offsetof(cv_tpu_function, jit_compile_functions),
     .loc_offset = offsetof(cv_tpu_function, at.jit_compile_functions), .oneof = SELECTOR},
    SCALAR(cv_tpu_function, enable_soft_device_placement, TP_BOOL),
};
static const tp_message tpu_function_message = {"TpuFunction", tpu_function_fields, 5};

static const tp_field batch_target_fields[] = {
    STRING(cv_batch_target, function_alias, SELECTOR),
    STRING(cv_batch_target, concrete_function_name, SELECTOR),
    STRING(cv_batch_target, signature_name, SELECTOR),
};
static const tp_message batch_target_message = {"BatchOptions.Experimental",
                                                batch_target_fields, 3};

static const tp_field batch_fields[] = {
    SCALAR(cv_batch_options, num_batch_threads, TP_INT),
    SCALAR(cv_batch_options, max_batch_size, TP_INT),
    SCALAR(cv_batch_options, batch_timeout_micros, TP_INT),
    REPEATED(cv_batch_options, allowed_batch_sizes, TP_INT),
    SCALAR(cv_batch_options, max_enqueued_batches, TP_INT),
    SCALAR(cv_batch_options, disable_large_batch_splitting, TP_BOOL),
    MESSAGE(cv_batch_options, experimental, batch_target_message),
};
static const tp_message batch_message = {"BatchOptions", batch_fields, 7};

static const tp_field bf16_fields[] = {
    ENUM(cv_bf16_options, scope, scopes),
    SCALAR(cv_bf16_options, skip_safety_checks, TP_BOOL),
    REPEATED(cv_bf16_options, filterlist, TP_STRING),
};
static const tp_message bf16_message = {"BFloat16OptimizationOptions", bf16_fields, 3};

static const tp_field sharding_fields[] = {
    SCALAR(cv_sharding_options, num_cores_per_replica, TP_INT),
    REPEATED(cv_sharding_options, device_assignment, TP_INT),
    {.name = "topology", .type = TP_STRING, .offset = offsetof(cv_sharding_options, topology),
     .capacity = MEMBER_SIZE(cv_sharding_options, topology),
     .loc_offset = offsetof(cv_sharding_options, at.topology)},
};
static const tp_message sharding_message = {"XlaShardingOptions", sharding_fields, 3};

static const tp_field options_fields[] = {
    REPEATED(cv_options, tpu_functions, TP_MESSAGE, .message = &tpu_function_message),
    REPEATED(cv_options, batch_options, TP_MESSAGE, .message = &batch_message),
    SCALAR(cv_options, disable_default_optimizations, TP_BOOL),
    ENUM(cv_options, io_shape_optimization, states),
    ENUM(cv_options, bfloat16_optimization, states),
    MESSAGE(cv_options, bfloat16_optimization_options, bf16_message),
    MESSAGE(cv_options, xla_sharding_options, sharding_message),
};
static const tp_message options_message = {"ConverterOptions", options_fields, 7};

/* --------------------------------------------------------------- defaults */

static void batch_defaults(cv_batch_options *b)
{
    b->num_batch_threads = 1;
    b->max_enqueued_batches = 10;
}

void cv_options_init(cv_options *o)
{
    memset(o, 0, sizeof *o);
    /* every element a BatchOptions may fill starts with the defaults,
     * since the reader writes only the fields the text gives */
    for (int i = 0; i < CV_MAX_BATCH_OPTIONS; i++)
        batch_defaults(&o->batch_options[i]);
    o->xla_sharding_options.num_cores_per_replica = 1;
}

/* ---------------------------------------------------------------- reading */

bool cv_options_parse(const char *text, const char *source, cv_options *out, char *err,
                      size_t errlen)
{
    if (!source)
        source = "<string>";
    cv_options_init(out);
    return tp_parse(text, source, &options_message, out, err, errlen) &&
           cv_options_check(out, source, err, errlen);
}


bool cv_options_read_file(const char *path, cv_options *out, char *err, size_t errlen)
{
    char *text = tp_read_file(path, "the converter options", err, errlen);
    if (!text) {
        cv_options_init(out);
        return false;
    }
    bool ok = cv_options_parse(text, path, out, err, errlen);
    free(text);
    return ok;
}

/* ---------------------------------------------------------------- queries */

bool cv_optimization_enabled(const cv_options *o, cv_optimization which)
{
    cv_state s = which == CV_OPT_IO_SHAPE ? o->io_shape_optimization : o->bfloat16_optimization;
    if (s == CV_STATE_DEFAULT)
        return !o->disable_default_optimizations;
    return s == CV_STATE_ENABLED;
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
