/*
 * manifest.c - the saved model's table of contents: its schema for the
 * protobuf text format reader (support/textproto.h), its printer, and
 * lookups. (Its files' checksums are rt_crc32, runtime/core/checksum.c.)
 */
#include "manifest.h"

#include "options_table.h"
#include "suggest.h"
#include "textproto.h"

#include <stddef.h>
#include <string.h>

/* ----------------------------------------------------------------- schema */

#define STR(T, f) \
    {.name = #f, .type = TP_STRING, .offset = offsetof(T, f), .capacity = sizeof(((T *)0)->f)}
#define INT(T, f, lo_, hi_) \
    {.name = #f, .type = TP_INT, .offset = offsetof(T, f), .lo = lo_, .hi = hi_}
#define BOOL(T, f) {.name = #f, .type = TP_BOOL, .offset = offsetof(T, f)}
#define MSGS(T, field, arr, count, msg)                                                   \
    {.name = field, .type = TP_MESSAGE, .offset = offsetof(T, arr), .repeated = true,    \
     .capacity = sizeof(((T *)0)->arr) / sizeof(((T *)0)->arr[0]),                        \
     .count_offset = offsetof(T, count), .elem_size = sizeof(((T *)0)->arr[0]),           \
     .message = &msg}
#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

static const tp_field io_fields[] = {STR(sm_io, name), STR(sm_io, type)};
static const tp_message io_message = {"Tensor", io_fields, COUNT(io_fields)};

static const tp_field name_fields[] = {STR(sm_name, name)};
static const tp_message name_message = {"Name", name_fields, COUNT(name_fields)};

static const tp_field call_fields[] = {STR(sm_call, name), BOOL(sm_call, jit_compile)};
static const tp_message call_message = {"Call", call_fields, COUNT(call_fields)};

static const tp_field quantized_fields[] = {STR(sm_quantized, op), STR(sm_quantized, at),
                                            STR(sm_quantized, how)};
static const tp_message quantized_message = {"Quantized", quantized_fields,
                                             COUNT(quantized_fields)};

static const char *const bf16_scopes[] = {"DEFAULT", "TPU", "ALL", NULL};
static const tp_field bf16_fields[] = {
    BOOL(sm_bf16, enabled),
    {.name = "scope", .type = TP_ENUM, .offset = offsetof(sm_bf16, scope), .enums = bf16_scopes},
    STR(sm_bf16, filterlist),
    BOOL(sm_bf16, skip_safety_checks),
};
static const tp_message bf16_message = {"BFloat16", bf16_fields, COUNT(bf16_fields)};

/* pipeline/batch_options.def's rows (bounds checked as the text is
 * read), then where the batching sits. */
#define BT_ROW_TYPE sm_batch
#define BT_ROW_FLAGS 0
#define BT_ROW_LOC(f) 0
static const tp_field batch_fields[] = {
#define BT_OPTION BT_FIELD_ROW
#include "batch_options.def"
#undef BT_OPTION
    BOOL(sm_batch, in_graph),
    STR(sm_batch, scope),
};
#undef BT_ROW_TYPE
#undef BT_ROW_LOC
#undef BT_ROW_FLAGS
static const tp_message batch_message = {"Batching", batch_fields, COUNT(batch_fields)};

static const tp_field function_fields[] = {
    STR(sm_function, name),
    STR(sm_function, function),
    STR(sm_function, signature),
    STR(sm_function, file),
    INT(sm_function, bytes, 0, 9.2e18),
    INT(sm_function, checksum, 0, 4294967295.0),
    BOOL(sm_function, jit_compile),
    STR(sm_function, target),
    BOOL(sm_function, soft_device_placement),
    BOOL(sm_function, io_shape_optimization),
    STR(sm_function, device_spec),
    BOOL(sm_function, freeze_variables),
    MSGS(sm_function, "device_scope", device_scopes, n_device_scopes, name_message),
    MSGS(sm_function, "call", calls, n_calls, call_message),
    {.name = "bfloat16", .type = TP_MESSAGE, .offset = offsetof(sm_function, bf16),
     .message = &bf16_message, .seen_offset = offsetof(sm_function, has_bf16)},
    {.name = "batch", .type = TP_MESSAGE, .offset = offsetof(sm_function, batch),
     .message = &batch_message, .seen_offset = offsetof(sm_function, has_batch)},
    MSGS(sm_function, "input", inputs, n_inputs, io_message),
    MSGS(sm_function, "output", outputs, n_outputs, io_message),
    {.name = "variable", .type = TP_INT, .offset = offsetof(sm_function, variables),
     .repeated = true, .capacity = SM_MAX_FN_VARIABLES,
     .count_offset = offsetof(sm_function, n_variables), .elem_size = sizeof(int64_t),
     .lo = 0, .hi = SM_MAX_VARIABLES - 1},
    MSGS(sm_function, "quantized", quantized, n_quantized, quantized_message),
};
static const tp_message function_message = {"Function", function_fields,
                                            COUNT(function_fields)};

static const tp_field signature_fields[] = {
    STR(sm_signature, name),
    STR(sm_signature, function),
    MSGS(sm_signature, "input", inputs, n_inputs, io_message),
    MSGS(sm_signature, "output", outputs, n_outputs, io_message),
};
static const tp_message signature_message = {"Signature", signature_fields,
                                             COUNT(signature_fields)};

static const tp_field alias_fields[] = {STR(sm_alias, name), STR(sm_alias, function)};
static const tp_message alias_message = {"Alias", alias_fields, COUNT(alias_fields)};

static const tp_field variable_fields[] = {
    STR(sm_variable, name),
    STR(sm_variable, type),
    STR(sm_variable, created_at),
    BOOL(sm_variable, constant),
    INT(sm_variable, offset, 0, 9.2e18),
    INT(sm_variable, bytes, 0, 9.2e18),
    INT(sm_variable, checksum, 0, 4294967295.0),
};
static const tp_message variable_message = {"Variable", variable_fields,
                                            COUNT(variable_fields)};

static const tp_field manifest_fields[] = {
    INT(sm_manifest, format_version, 1, 1e9),
    STR(sm_manifest, producer),
    {.name = "config", .type = TP_STRING, .offset = offsetof(sm_manifest, config),
     .capacity = SM_MAX_CONFIG, .repeated = true,
     .count_offset = offsetof(sm_manifest, n_config), .elem_size = SM_TEXT},
    MSGS(sm_manifest, "function", functions, n_functions, function_message),
    MSGS(sm_manifest, "signature", signatures, n_signatures, signature_message),
    MSGS(sm_manifest, "alias", aliases, n_aliases, alias_message),
    MSGS(sm_manifest, "variable", variables, n_variables, variable_message),
    INT(sm_manifest, variables_bytes, 0, 9.2e18),
    BOOL(sm_manifest, complete),
};
static const tp_message manifest_message = {"SavedModel", manifest_fields,
                                            COUNT(manifest_fields)};

void sm_manifest_truncated(const char *source, char *err, size_t errlen)
{
    snprintf(err, errlen, "%s: the file is truncated (it does not end with 'complete: true'); "
                          "save the model again", source);
}

bool sm_manifest_parse(const char *text, const char *source, sm_manifest *m, char *err,
                       size_t errlen)
{
    memset(m, 0, sizeof *m);
    ot_defaults(&manifest_message, m);
    if (!tp_parse(text, source, &manifest_message, m, err, errlen))
        return false;
    if (m->format_version != SM_FORMAT_VERSION) {
        snprintf(err, errlen, "%s: format version %lld is not the one this agc reads (%d)%s",
                 source, (long long)m->format_version, SM_FORMAT_VERSION,
                 m->format_version > SM_FORMAT_VERSION ? ": save it with this agc, or use "
                                                         "the agc that wrote it"
                 : m->format_version == 0 ? ": the file has no format_version line"
                                          : "");
        return false;
    }
    if (!m->complete) {
        sm_manifest_truncated(source, err, errlen);
        return false;
    }
    return true;
}

/* ---------------------------------------------------------------- printer */

static void put_string(FILE *out, const char *key, const char *s)
{
    fprintf(out, "%s: ", key);
    tp_print_string(out, s);
}

static void put_ios(FILE *out, const char *key, const sm_io *io, int n, const char *indent)
{
    for (int i = 0; i < n; i++) {
        fprintf(out, "%s%s { ", indent, key);
        put_string(out, "name", io[i].name);
        fputc(' ', out);
        put_string(out, "type", io[i].type);
        fputs(" }\n", out);
    }
}

static void put_names(FILE *out, const char *key, const sm_name *names, int n)
{
    for (int i = 0; i < n; i++) {
        fprintf(out, "  %s { ", key);
        put_string(out, "name", names[i].name);
        fputs(" }\n", out);
    }
}

static void put_function(FILE *out, const sm_function *f)
{
    fputs("function {\n  ", out);
    put_string(out, "name", f->name);
    fputs("\n  ", out);
    put_string(out, "function", f->function);
    fputs("\n  ", out);
    put_string(out, "signature", f->signature);
    fputs("\n  ", out);
    put_string(out, "file", f->file);
    fprintf(out, "\n  bytes: %lld\n  checksum: %lld\n", (long long)f->bytes,
            (long long)f->checksum);
    if (f->jit_compile)
        fputs("  jit_compile: true\n", out);
    fputs("  ", out);
    put_string(out, "target", f->target);
    fputc('\n', out);
    if (f->soft_device_placement)
        fputs("  soft_device_placement: true\n", out);
    if (f->io_shape_optimization)
        fputs("  io_shape_optimization: true\n", out);
    if (f->device_spec[0]) {
        fputs("  ", out);
        put_string(out, "device_spec", f->device_spec);
        fputc('\n', out);
    }
    if (f->freeze_variables)
        fputs("  freeze_variables: true\n", out);
    put_names(out, "device_scope", f->device_scopes, f->n_device_scopes);
    for (int i = 0; i < f->n_calls; i++) {
        fputs("  call { ", out);
        put_string(out, "name", f->calls[i].name);
        fputs(f->calls[i].jit_compile ? " jit_compile: true }\n" : " }\n", out);
    }
    if (f->has_bf16) {
        fprintf(out, "  bfloat16 { enabled: %s scope: %s ", f->bf16.enabled ? "true" : "false",
                bf16_scopes[f->bf16.scope]);
        put_string(out, "filterlist", f->bf16.filterlist);
        fprintf(out, " skip_safety_checks: %s }\n",
                f->bf16.skip_safety_checks ? "true" : "false");
    }
    if (f->has_batch) {
        fputs("  batch { ", out);
        ot_print_inline(&batch_message, &f->batch, out);
        fputs(" }\n", out);
    }
    put_ios(out, "input", f->inputs, f->n_inputs, "  ");
    put_ios(out, "output", f->outputs, f->n_outputs, "  ");
    if (f->n_variables) {
        fputs("  variable: [", out);
        for (int i = 0; i < f->n_variables; i++)
            fprintf(out, "%s%lld", i ? ", " : "", (long long)f->variables[i]);
        fputs("]\n", out);
    }
    for (int i = 0; i < f->n_quantized; i++) {
        fputs("  quantized { ", out);
        ot_print_inline(&quantized_message, &f->quantized[i], out);
        fputs(" }\n", out);
    }
    fputs("}\n", out);
}

static void put_signature(FILE *out, const sm_signature *s)
{
    fputs("signature {\n  ", out);
    put_string(out, "name", s->name);
    fputs("\n  ", out);
    put_string(out, "function", s->function);
    fputc('\n', out);
    put_ios(out, "input", s->inputs, s->n_inputs, "  ");
    put_ios(out, "output", s->outputs, s->n_outputs, "  ");
    fputs("}\n", out);
}

static void put_variable(FILE *out, const sm_variable *v)
{
    fputs("variable { ", out);
    put_string(out, "name", v->name);
    fputc(' ', out);
    put_string(out, "type", v->type);
    fputc(' ', out);
    put_string(out, "created_at", v->created_at);
    if (v->constant)
        fputs(" constant: true", out);
    fprintf(out, " offset: %lld bytes: %lld checksum: %lld }\n", (long long)v->offset,
            (long long)v->bytes, (long long)v->checksum);
}

void sm_manifest_print(const sm_manifest *m, FILE *out)
{
    fputs("# An agc saved model (docs/saved-model.md). Written by agc; edit at your own "
          "risk:\n# the files' sizes and checksums are checked when it is loaded.\n", out);
    fprintf(out, "format_version: %lld\n", (long long)m->format_version);
    put_string(out, "producer", m->producer);
    fputc('\n', out);
    for (int i = 0; i < m->n_config; i++) {
        put_string(out, "config", m->config[i]);
        fputc('\n', out);
    }
    for (int i = 0; i < m->n_functions; i++)
        put_function(out, &m->functions[i]);
    for (int i = 0; i < m->n_signatures; i++)
        put_signature(out, &m->signatures[i]);
    for (int i = 0; i < m->n_aliases; i++) {
        fputs("alias { ", out);
        put_string(out, "name", m->aliases[i].name);
        fputc(' ', out);
        put_string(out, "function", m->aliases[i].function);
        fputs(" }\n", out);
    }
    for (int i = 0; i < m->n_variables; i++)
        put_variable(out, &m->variables[i]);
    fprintf(out, "variables_bytes: %lld\ncomplete: true\n", (long long)m->variables_bytes);
}

void sm_batch_options(const sm_batch *bt_src, ag_batch_options *bt_dst, int *bt_allowed)
{
    memset(bt_dst, 0, sizeof *bt_dst);
#define BT_OPTION BT_TO_API_ROW
#include "batch_options.def"
#undef BT_OPTION
}

/* ----------------------------------------------------------------- lookup */

sm_function *sm_find_function(sm_manifest *m, const char *name)
{
    for (int i = 0; i < m->n_functions; i++)
        if (strcmp(m->functions[i].name, name) == 0)
            return &m->functions[i];
    return NULL;
}

sm_signature *sm_find_signature(sm_manifest *m, const char *name)
{
    for (int i = 0; i < m->n_signatures; i++)
        if (strcmp(m->signatures[i].name, name) == 0)
            return &m->signatures[i];
    return NULL;
}

static const char *name_at(const sm_manifest *m, sm_name_kind kind, int i)
{
    return kind == SM_SIGNATURES ? m->signatures[i].name
           : kind == SM_ALIASES  ? m->aliases[i].name
                                 : m->functions[i].name;
}

void sm_names_for(const sm_manifest *m, sm_name_kind kind, const char *typed, char *buf,
                  size_t n, char *hint, size_t hint_n)
{
    int count = kind == SM_SIGNATURES ? m->n_signatures
                : kind == SM_ALIASES  ? m->n_aliases
                                      : m->n_functions;
    sg_best b;
    sg_begin(&b, typed ? typed : "");
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < count && used < n; i++) {
        const char *name = name_at(m, kind, i);
        used += (size_t)snprintf(buf + used, n - used, "%s'%s'", i ? ", " : "", name);
        sg_consider(&b, name);
    }
    if (!count)
        snprintf(buf, n, "none");
    if (sg_did_you_mean(b.name, hint, hint_n) != hint)
        hint[0] = '\0';
}
