/*
 * options_check.c - the rules on converter options that the schema alone
 * cannot say (docs/converter-options.md, "Errors"), around the bounds
 * the tables give (options_table.h's ot_check): what a TpuFunction
 * selects, the batch sizes, the filterlist's ops, the sharding's topology
 * and devices (and the sharding that does not run yet). Each error
 * points at the value in the text (the `at` places the reader recorded);
 * the first error found is reported.
 */
#include "options.h"

#include "options_table.h"
#include "rt.h"
#include "topology.h"
#include "suggest.h"

#include <errno.h>
#include <sys/stat.h>

#include <limits.h>
#include <stdlib.h>
#include <string.h>

static bool given(tp_loc at) { return at.line != 0; }

/* An integer field within [lo, hi]. */
static bool in_range(const ot_report *C, tp_loc at, const char *field, int64_t v, int64_t lo,
                     int64_t hi)
{
    if (v >= lo && v <= hi)
        return true;
    return ot_fail(C, at, "%s must be in [%lld, %lld], got %lld", field, (long long)lo,
                (long long)hi, (long long)v);
}

/* A name that was given must not be empty. */
static bool not_empty(const ot_report *C, tp_loc at, const char *field, const char *value)
{
    if (!given(at) || value[0])
        return true;
    return ot_fail(C, at, "%s is empty: give the name of a function", field);
}

/* --------------------------------------------------------- TPU functions */

/* Where the selector of f was written. */
static tp_loc selector_at(const cv_tpu_function *f, cv_selector s)
{
    switch (s) {
    case CV_SELECT_FUNCTION_ALIAS: return f->at.function_alias;
    case CV_SELECT_CONCRETE_FUNCTION_NAME: return f->at.concrete_function_name;
    case CV_SELECT_SIGNATURE_NAME: return f->at.signature_name;
    default: return f->at.jit_compile_functions;
    }
}

static bool check_selects_one(const ot_report *C, const cv_tpu_function *f, tp_loc at)
{
    if (!not_empty(C, f->at.function_alias, "function_alias", f->function_alias) ||
        !not_empty(C, f->at.concrete_function_name, "concrete_function_name",
                   f->concrete_function_name) ||
        !not_empty(C, f->at.signature_name, "signature_name", f->signature_name))
        return false;
    if (cv_tpu_function_selector(f, NULL) != CV_SELECT_NONE)
        return true;
    if (given(f->at.jit_compile_functions))
        return ot_fail(C, f->at.jit_compile_functions,
                    "jit_compile_functions: false selects no function; a TpuFunction selects "
                    "the functions marked AG_JIT_COMPILE with jit_compile_functions: true");
    return ot_fail(C, at,
                "a TpuFunction selects no function: give one of function_alias, "
                "concrete_function_name, signature_name or jit_compile_functions: true");
}

/* Two TpuFunctions with the same selector and name select one function
 * twice. (Two selectors naming one function differently need the model:
 * the converter checks that.) */
static bool check_not_repeated(const ot_report *C, const cv_options *o, int i)
{
    const char *name, *other;
    cv_selector s = cv_tpu_function_selector(&o->tpu_functions[i], &name);
    for (int j = 0; j < i; j++) {
        const cv_tpu_function *g = &o->tpu_functions[j];
        if (cv_tpu_function_selector(g, &other) != s || (name && strcmp(name, other) != 0))
            continue;
        tp_loc first = selector_at(g, s);
        if (!name)
            return ot_fail(C, selector_at(&o->tpu_functions[i], s),
                        "jit_compile_functions is given in two TpuFunctions (first at %d:%d)",
                        first.line, first.col);
        return ot_fail(C, selector_at(&o->tpu_functions[i], s),
                    "%s \"%s\" is selected twice (first at %d:%d)", cv_selector_field(s), name,
                    first.line, first.col);
    }
    return true;
}

static bool check_tpu_functions(const ot_report *C, const cv_options *o)
{
    for (int i = 0; i < o->n_tpu_functions; i++)
        if (!check_selects_one(C, &o->tpu_functions[i], o->at.tpu_functions[i]) ||
            !check_not_repeated(C, o, i))
            return false;
    return true;
}

/* --------------------------------------------------------------- batches */

/* Strictly increasing, each in [1, max_batch_size], the last equal to it. */
static bool check_allowed_sizes(const ot_report *C, const cv_batch_options *b)
{
    int n = b->n_allowed_batch_sizes;
    for (int k = 0; k < n; k++) {
        int64_t v = b->allowed_batch_sizes[k];
        tp_loc at = b->at.allowed_batch_sizes[k];
        if (!in_range(C, at, "an allowed batch size", v, 1, b->max_batch_size))
            return false;
        if (k > 0 && v <= b->allowed_batch_sizes[k - 1])
            return ot_fail(C, at, "allowed_batch_sizes must be strictly increasing: %lld follows %lld",
                        (long long)v, (long long)b->allowed_batch_sizes[k - 1]);
    }
    if (n > 0 && b->allowed_batch_sizes[n - 1] != b->max_batch_size)
        return ot_fail(C, b->at.allowed_batch_sizes[n - 1],
                    "the last of allowed_batch_sizes (%lld) must equal max_batch_size (%lld)",
                    (long long)b->allowed_batch_sizes[n - 1], (long long)b->max_batch_size);
    return true;
}

/* The table's checks on one message (options_table.h). */
static bool table_check(const ot_report *C, const tp_message *m, const void *v, tp_loc at,
                        unsigned what)
{
    return ot_check(m, v, at, what, C->source, C->err, C->errlen);
}

/* max_batch_size given, the fields within the table's bounds (one set
 * with ag_batcher_new's and the saved model's: pipeline/batch_options.def),
 * then the allowed sizes against max_batch_size, then the names. */
static bool check_batch(const ot_report *C, const cv_batch_options *b, tp_loc at)
{
    const cv_batch_target *t = &b->experimental;
    return table_check(C, &cv_batch_message, b, at, OT_CHECK_REQUIRED | OT_CHECK_SINGULAR) &&
           check_allowed_sizes(C, b) &&
           table_check(C, &cv_batch_message, b, at, OT_CHECK_ELEMENTS) &&
           not_empty(C, t->at.function_alias, "function_alias", t->function_alias) &&
           not_empty(C, t->at.concrete_function_name, "concrete_function_name",
                     t->concrete_function_name) &&
           not_empty(C, t->at.signature_name, "signature_name", t->signature_name);
}

/* Two BatchOptions for the same functions would batch them twice. */
static bool check_batch_targets_differ(const ot_report *C, const cv_options *o, int i)
{
    const char *name, *other;
    cv_selector s = cv_batch_target_selector(&o->batch_options[i].experimental, &name);
    for (int j = 0; j < i; j++) {
        if (cv_batch_target_selector(&o->batch_options[j].experimental, &other) != s ||
            (name && strcmp(name, other) != 0))
            continue;
        tp_loc first = o->at.batch_options[j];
        if (!name)
            return ot_fail(C, o->at.batch_options[i],
                        "two BatchOptions batch every TPU function (first at %d:%d): give "
                        "experimental { ... } to say what each one batches",
                        first.line, first.col);
        return ot_fail(C, o->at.batch_options[i],
                    "two BatchOptions batch %s \"%s\" (first at %d:%d)", cv_selector_field(s),
                    name, first.line, first.col);
    }
    return true;
}

static bool check_batches(const ot_report *C, const cv_options *o)
{
    for (int i = 0; i < o->n_batch_options; i++)
        if (!check_batch(C, &o->batch_options[i], o->at.batch_options[i]) ||
            !check_batch_targets_differ(C, o, i))
            return false;
    return true;
}

/* ------------------------------------------------------------------ bf16 */

/* Every filterlist entry names an op of the op table, once. */
static bool check_filterlist(const ot_report *C, const cv_bf16_options *b)
{
    for (int i = 0; i < b->n_filterlist; i++) {
        rt_op op;
        const char *name = b->filterlist[i];
        if (!rt_op_from_name(name, &op))
            return ot_fail(C, b->at.filterlist[i],
                        "unknown op \"%s\" in filterlist (op names are those of the IR: "
                        "docs/ir.md)",
                        name);
        for (int j = 0; j < i; j++)
            if (strcmp(b->filterlist[j], name) == 0)
                return ot_fail(C, b->at.filterlist[i], "op \"%s\" is in filterlist twice", name);
    }
    return true;
}

/* -------------------------------------------------------------- sharding */

/* A slice's name starts with a digit; a serialized TopologyProto never
 * does (its first byte is the tag of one of fields 1 to 5). */
static bool is_slice_name(const cv_sharding_options *x)
{
    return x->topology[0] >= '1' && x->topology[0] <= '9';
}

/* The topology the options give: a slice's name or a serialized
 * TopologyProto (support/topology.h); none given, the one chip of 1x1. */
static bool read_topology(const ot_report *C, const cv_sharding_options *x, tt_topology *t)
{
    char why[256];
    if (!x->topology_len)
        return tt_from_name("1x1", t);
    if (is_slice_name(x) && strlen(x->topology) == (size_t)x->topology_len &&
        tt_from_name(x->topology, t))
        return true;
    if (is_slice_name(x))
        return ot_fail(C, x->at.topology,
                       "bad topology \"%s\": a slice's name is the chips' grid, AxB or AxBxC, "
                       "of at most %d chips, like \"2x2\"",
                       x->topology, TT_MAX_CORES);
    if (tt_decode(x->topology, (size_t)x->topology_len, t, why, sizeof why))
        return true;
    return ot_fail(C, x->at.topology,
                   "bad topology: not a serialized TopologyProto (%s); give a slice's name "
                   "like \"2x2\", or the bytes agc-convert --print-topology=2x2 prints",
                   why);
}

/* The cores of one replica: a topology when more than one, and a
 * divisor of the cores it holds. */
static bool check_cores(const ot_report *C, const cv_sharding_options *x, const tt_topology *t)
{
    int64_t n = x->num_cores_per_replica;
    if (n > 1 && !x->topology_len)
        return ot_fail(C, x->at.num_cores_per_replica,
                       "num_cores_per_replica %lld needs a topology: give topology: \"2x2\" "
                       "(a slice's name) or a serialized TopologyProto",
                       (long long)n);
    if (t->n_cores % n == 0)
        return true;
    return ot_fail(C, x->at.num_cores_per_replica,
                   "num_cores_per_replica %lld does not divide the %d %s of the topology", (long long)n,
                   t->n_cores, t->n_cores == 1 ? "core" : "cores");
}

/* The place device_assignment[4 i..4 i + 4) gives, as text. */
static const char *place_text(const int64_t *p, char *buf, size_t n)
{
    snprintf(buf, n, "[%lld, %lld, %lld, %lld]", (long long)p[0], (long long)p[1],
             (long long)p[2], (long long)p[3]);
    return buf;
}

/* Core i of device_assignment: inside the mesh, not given before. */
static bool check_device(const ot_report *C, const cv_sharding_options *x, const tt_topology *t,
                         int i)
{
    char buf[96];
    const int64_t *p = &x->device_assignment[TT_DIMS * i];
    tp_loc at = x->at.device_assignment[TT_DIMS * i];
    if (!tt_inside(t, p))
        return ot_fail(C, at,
                       "device %s of device_assignment is outside the topology's mesh "
                       "[%lld, %lld, %lld, %lld]",
                       place_text(p, buf, sizeof buf), (long long)t->mesh[0],
                       (long long)t->mesh[1], (long long)t->mesh[2], (long long)t->mesh[3]);
    for (int j = 0; j < i; j++)
        if (memcmp(&x->device_assignment[TT_DIMS * j], p, TT_DIMS * sizeof *p) == 0)
            return ot_fail(C, at, "device %s is in device_assignment twice (first at %d:%d)",
                           place_text(p, buf, sizeof buf),
                           x->at.device_assignment[TT_DIMS * j].line,
                           x->at.device_assignment[TT_DIMS * j].col);
    return true;
}

static bool check_devices(const ot_report *C, const cv_sharding_options *x, const tt_topology *t)
{
    int n = x->n_device_assignment;
    if (n == 0)
        return true;
    if (n != TT_DIMS * x->num_cores_per_replica)
        return ot_fail(C, x->at.device_assignment[0],
                       "device_assignment has %d %s for num_cores_per_replica %lld: give 4 per "
                       "core, [x, y, z, core]",
                       n, n == 1 ? "value" : "values", (long long)x->num_cores_per_replica);
    for (int i = 0; i < n / TT_DIMS; i++)
        if (!check_device(C, x, t, i))
            return false;
    return true;
}

/* The contract of xla_sharding_options (docs/converter-options.md); what
 * the TPU-model makes of them is the conversion's (shard.c). */
static bool check_sharding(const ot_report *C, const cv_sharding_options *x, tp_loc at)
{
    tt_topology *t = malloc(sizeof *t);
    bool ok = table_check(C, &cv_sharding_message, x, at, OT_CHECK_ALL) &&
              read_topology(C, x, t) && check_cores(C, x, t) && check_devices(C, x, t);
    free(t);
    return ok;
}

/* ---------------------------------------------------------- quantization */

/* Each of a repeated string field's names is not empty and given once. */
static bool check_names(const ot_report *C, const char *field, const char (*names)[CV_NAME_BYTES],
                        const tp_loc *at, int n)
{
    for (int i = 0; i < n; i++) {
        if (!names[i][0])
            return ot_fail(C, at[i], "%s is empty: give the name of a signature", field);
        for (int j = 0; j < i; j++)
            if (strcmp(names[j], names[i]) == 0)
                return ot_fail(C, at[i], "%s \"%s\" is given twice (first at %d:%d)", field,
                               names[i], at[j].line, at[j].col);
    }
    return true;
}

/* A data set's key is one of the signatures quantized (a typo is named
 * with the key it most likely meant), once, and its path is not empty. */
static bool check_dataset(const ot_report *C, const cv_options *o, int i)
{
    const cv_quantization_options *q = &o->external_feature_configs.quantization_options;
    const cv_dataset_entry *d = &q->representative_datasets[i];
    const char *names[CV_MAX_SIGNATURE_KEYS];
    int n = cv_quantized_signatures(o, names);
    if (!d->key[0])
        return ot_fail(C, d->at.key.line ? d->at.key : q->at.representative_datasets[i],
                       "a representative data set needs key: the signature it is for");
    bool known = false;
    for (int k = 0; k < n; k++)
        known |= strcmp(names[k], d->key) == 0;
    char hint[CV_NAME_BYTES + 32];
    if (!known)
        return ot_fail(C, d->at.key,
                       "representative data set for \"%s\", a signature that is not "
                       "quantized (signature_keys: %s%s)%s",
                       d->key, names[0], n > 1 ? ", ..." : "",
                       sg_did_you_mean(sg_suggest(d->key, names, n), hint, sizeof hint));
    for (int j = 0; j < i; j++)
        if (strcmp(q->representative_datasets[j].key, d->key) == 0)
            return ot_fail(C, d->at.key, "signature \"%s\" has two representative data sets",
                           d->key);
    if (!d->value.tfrecord_file_path[0])
        return ot_fail(C, d->value.at.tfrecord_file_path.line ? d->value.at.tfrecord_file_path
                                                              : d->at.key,
                       "the representative data set of \"%s\" needs tfrecord_file_path",
                       d->key);
    return true;
}

/* Static range calibrates every signature it quantizes: each needs a
 * data set. */
static bool check_static_needs_data(const ot_report *C, const cv_options *o)
{
    const cv_quantization_options *q = &o->external_feature_configs.quantization_options;
    const char *names[CV_MAX_SIGNATURE_KEYS];
    int n = cv_quantized_signatures(o, names);
    if (cv_quantization_method(o) != CV_QUANT_STATIC_RANGE)
        return true;
    tp_loc at = q->at.quantization_method.line ? q->at.quantization_method
                                               : o->external_feature_configs.at.quantization_options;
    for (int k = 0; k < n; k++)
        if (!cv_dataset_of(o, names[k]))
            return ot_fail(C, at,
                           "static range quantization of signature \"%s\" needs a "
                           "representative data set: give representative_datasets { key: "
                           "\"%s\" value { tfrecord_file_path: \"...\" } }, or "
                           "quantization_method: DYNAMIC_RANGE or WEIGHT_ONLY",
                           names[k], names[k]);
    return true;
}

/* The percentiles in [0, 100] (the table's bounds), min below max. */
static bool check_calibration(const ot_report *C, const cv_calibration_options *c)
{
    const cv_calibration_parameters *p = &c->calibration_parameters;
    if (!table_check(C, &cv_calibration_parameters_message, p, c->at.calibration_parameters,
                     OT_CHECK_ALL))
        return false;
    if (p->min_percentile < p->max_percentile)
        return true;
    return ot_fail(C, p->at.max_percentile.line ? p->at.max_percentile : p->at.min_percentile,
                   "max_percentile (%g) must be above min_percentile (%g)", p->max_percentile,
                   p->min_percentile);
}

static bool check_quantization(const ot_report *C, const cv_options *o)
{
    const cv_external_features *x = &o->external_feature_configs;
    const cv_quantization_options *q = &x->quantization_options;
    if (!x->has_quantization_options)
        return true;
    if (!table_check(C, &cv_quantization_message, q, x->at.quantization_options, OT_CHECK_ALL))
        return false;
    if (q->op_set != CV_OP_SET_XLA)
        return ot_fail(C, q->at.op_set,
                       "op_set %s: agc quantizes to the XLA op set only; give op_set: XLA (or "
                       "leave op_set out)",
                       cv_quantization_message.fields[1].enums[q->op_set]);
    if (!check_names(C, "signature_keys", q->signature_keys, q->at.signature_keys,
                     q->n_signature_keys))
        return false;
    for (int i = 0; i < q->n_representative_datasets; i++)
        if (!check_dataset(C, o, i))
            return false;
    return check_static_needs_data(C, o) && check_calibration(C, &q->calibration_options);
}

/* A data set's file exists and is a regular file (the reader says what
 * is wrong inside it). */
static bool check_dataset_file(const ot_report *C, const cv_dataset_entry *d)
{
    const char *path = d->value.tfrecord_file_path;
    struct stat st;
    if (stat(path, &st) != 0)
        return ot_fail(C, d->value.at.tfrecord_file_path,
                       "cannot read the representative data set '%s' of signature \"%s\": %s",
                       path, d->key, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return ot_fail(C, d->value.at.tfrecord_file_path,
                       "the representative data set '%s' of signature \"%s\" is not a "
                       "regular file",
                       path, d->key);
    return true;
}

bool cv_check_dataset_files(const cv_options *o, const char *source, char *err, size_t errlen)
{
    ot_report C = {source ? source : "<options>", err, errlen};
    const cv_quantization_options *q = &o->external_feature_configs.quantization_options;
    if (cv_quantization_method(o) == CV_QUANT_NONE)
        return true;
    for (int i = 0; i < q->n_representative_datasets; i++)
        if (!check_dataset_file(&C, &q->representative_datasets[i]))
            return false;
    return true;
}

bool cv_options_check(const cv_options *o, const char *source, char *err, size_t errlen)
{
    ot_report C = {source ? source : "<options>", err, errlen};
    if (errlen)
        err[0] = '\0';
    return check_tpu_functions(&C, o) && check_batches(&C, o) &&
           check_filterlist(&C, &o->bfloat16_optimization_options) &&
           check_sharding(&C, &o->xla_sharding_options, o->at.xla_sharding_options) &&
           check_quantization(&C, o);
}
