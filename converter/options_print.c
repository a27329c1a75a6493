/*
 * options_print.c - converter options in canonical text format: the
 * fields that differ from their defaults, in the schema's order, one a
 * line (repeated scalars too, as protobuf's printer writes them), nested
 * messages indented by two spaces. The converted model records its
 * options this way, and cv_options_parse reads them back unchanged.
 */
#include "options.h"

typedef struct printer {
    FILE *out;
    int depth;
} printer;

static void indent(const printer *P)
{
    fprintf(P->out, "%*s", 2 * P->depth, "");
}

static void print_int(const printer *P, const char *field, int64_t v)
{
    indent(P);
    fprintf(P->out, "%s: %lld\n", field, (long long)v);
}

static void print_true(const printer *P, const char *field, bool v)
{
    if (!v)
        return;
    indent(P);
    fprintf(P->out, "%s: true\n", field);
}

static void print_string(const printer *P, const char *field, const char *s)
{
    if (!s[0])
        return;
    indent(P);
    fprintf(P->out, "%s: ", field);
    tp_print_string(P->out, s);
    fputc('\n', P->out);
}

static void print_enum(const printer *P, const char *field, int v, const char *const *names)
{
    if (v == 0) /* DEFAULT */
        return;
    indent(P);
    fprintf(P->out, "%s: %s\n", field, names[v]);
}

static void open_message(printer *P, const char *field)
{
    indent(P);
    fprintf(P->out, "%s {\n", field);
    P->depth++;
}

static void close_message(printer *P)
{
    P->depth--;
    indent(P);
    fputs("}\n", P->out);
}

/* ---------------------------------------------------------------- messages */

static void print_tpu_function(printer *P, const cv_tpu_function *f)
{
    open_message(P, "tpu_functions");
    print_string(P, "function_alias", f->function_alias);
    print_string(P, "concrete_function_name", f->concrete_function_name);
    print_string(P, "signature_name", f->signature_name);
    print_true(P, "jit_compile_functions", f->jit_compile_functions);
    print_true(P, "enable_soft_device_placement", f->enable_soft_device_placement);
    close_message(P);
}

static void print_batch_target(printer *P, const cv_batch_target *t)
{
    if (cv_batch_target_selector(t, NULL) == CV_SELECT_NONE)
        return;
    open_message(P, "experimental");
    print_string(P, "function_alias", t->function_alias);
    print_string(P, "concrete_function_name", t->concrete_function_name);
    print_string(P, "signature_name", t->signature_name);
    close_message(P);
}

static void print_batch(printer *P, const cv_batch_options *b)
{
    open_message(P, "batch_options");
    if (b->num_batch_threads != 1)
        print_int(P, "num_batch_threads", b->num_batch_threads);
    print_int(P, "max_batch_size", b->max_batch_size);
    if (b->batch_timeout_micros != 0)
        print_int(P, "batch_timeout_micros", b->batch_timeout_micros);
    for (int i = 0; i < b->n_allowed_batch_sizes; i++)
        print_int(P, "allowed_batch_sizes", b->allowed_batch_sizes[i]);
    if (b->max_enqueued_batches != 10)
        print_int(P, "max_enqueued_batches", b->max_enqueued_batches);
    print_true(P, "disable_large_batch_splitting", b->disable_large_batch_splitting);
    print_batch_target(P, &b->experimental);
    close_message(P);
}

static void print_bf16(printer *P, const cv_bf16_options *b)
{
    static const char *const scopes[] = {"DEFAULT", "TPU", "ALL"};
    if (b->scope == CV_SCOPE_DEFAULT && !b->skip_safety_checks && b->n_filterlist == 0)
        return;
    open_message(P, "bfloat16_optimization_options");
    print_enum(P, "scope", (int)b->scope, scopes);
    print_true(P, "skip_safety_checks", b->skip_safety_checks);
    for (int i = 0; i < b->n_filterlist; i++)
        print_string(P, "filterlist", b->filterlist[i]);
    close_message(P);
}

static void print_sharding(printer *P, const cv_sharding_options *x)
{
    if (x->num_cores_per_replica == 1 && x->n_device_assignment == 0 && !x->topology[0])
        return;
    open_message(P, "xla_sharding_options");
    if (x->num_cores_per_replica != 1)
        print_int(P, "num_cores_per_replica", x->num_cores_per_replica);
    for (int i = 0; i < x->n_device_assignment; i++)
        print_int(P, "device_assignment", x->device_assignment[i]);
    print_string(P, "topology", x->topology);
    close_message(P);
}

void cv_options_print(const cv_options *o, FILE *out)
{
    static const char *const states[] = {"DEFAULT", "ENABLED", "DISABLED"};
    printer P = {out, 0};
    for (int i = 0; i < o->n_tpu_functions; i++)
        print_tpu_function(&P, &o->tpu_functions[i]);
    for (int i = 0; i < o->n_batch_options; i++)
        print_batch(&P, &o->batch_options[i]);
    print_true(&P, "disable_default_optimizations", o->disable_default_optimizations);
    print_enum(&P, "io_shape_optimization", (int)o->io_shape_optimization, states);
    print_enum(&P, "bfloat16_optimization", (int)o->bfloat16_optimization, states);
    print_bf16(&P, &o->bfloat16_optimization_options);
    print_sharding(&P, &o->xla_sharding_options);
}
