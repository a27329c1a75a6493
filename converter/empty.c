/*
 * empty.c - options that convert nothing are an error (converter.md §2):
 * with no tpu_functions, no batch_options and no bf16 conversion of
 * every function (scope ALL), a conversion would only copy the model and
 * print a report of 0% on the TPU. The message says what to add, with a
 * name the model has.
 */
#include "convert.h"

#include <string.h>

static bool converts_something(const cv_options *o)
{
    return o->n_tpu_functions > 0 || o->n_batch_options > 0 ||
           cv_quantization_method(o) != CV_QUANT_NONE ||
           (cv_optimization_enabled(o, CV_OPT_BFLOAT16) &&
            o->bfloat16_optimization_options.scope == CV_SCOPE_ALL);
}

/* "function_alias: \"tpu_func\"" (the first alias), else the first
 * signature's name, else the first function's: a selector the model has. */
static void example_selector(const sm_manifest *man, char *out, size_t n)
{
    if (man->n_aliases)
        snprintf(out, n, "function_alias: \"%s\"", man->aliases[0].name);
    else if (man->n_signatures)
        snprintf(out, n, "signature_name: \"%s\"", man->signatures[0].name);
    else if (man->n_functions)
        snprintf(out, n, "concrete_function_name: \"%s\"", man->functions[0].name);
    else
        snprintf(out, n, "function_alias: \"NAME\"");
}

/* ", the model's aliases: a, b" when it has any. */
static void list_aliases(const sm_manifest *man, char *out, size_t n)
{
    out[0] = '\0';
    for (int i = 0; i < man->n_aliases; i++) {
        size_t used = strlen(out);
        snprintf(out + used, n - used, "%s%s", i ? ", " : " (the model's aliases: ",
                 man->aliases[i].name);
    }
    if (man->n_aliases)
        snprintf(out + strlen(out), n - strlen(out), ")");
}

bool cv_check_converts(const ag_saved_model *m, const cv_options *o, const char *source,
                       char *err, size_t errlen)
{
    if (converts_something(o))
        return true;
    char example[2 * SM_NAME], aliases[512];
    example_selector(m->man, example, sizeof example);
    list_aliases(m->man, aliases, sizeof aliases);
    return cv_error(err, errlen, NULL, (tp_loc){0},
                    "%s: the converter options convert nothing (no tpu_functions, no "
                    "batch_options): add the function to place on the TPU, e.g. "
                    "'tpu_functions { %s }'%s", source ? source : "options", example, aliases);
}
