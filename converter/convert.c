/*
 * convert.c - the conversion, in the converter's order (converter.md §2):
 * place the selected functions on the TPU, convert to bfloat16, optimize
 * I/O shapes, check and cost every function, write the output model with
 * its report, print the report.
 *
 * The functions' graphs are written unchanged: what the conversion
 * decides lives in each function's record (its target, device scopes,
 * soft placement, bf16 options, I/O shapes), and every program that loads
 * the model applies it through the same compile pipeline. So a converted
 * model stays readable, and converting it again starts from the user's
 * graphs, not from a lowered form.
 */
#include "convert.h"

#include <stdlib.h>
#include <string.h>

/* The filterlist as the bf16 pass takes it: names separated by commas. */
static void join_filterlist(const cv_bf16_options *b, char *out, size_t n)
{
    out[0] = '\0';
    for (int i = 0; i < b->n_filterlist; i++)
        snprintf(out + strlen(out), n - strlen(out), "%s%s", i ? "," : "", b->filterlist[i]);
}

/* bf16: scope TPU converts what runs on the TPU in TPU functions; ALL
 * converts every function. */
static void apply_bf16(ag_saved_model *m, const cv_options *o)
{
    const cv_bf16_options *b = &o->bfloat16_optimization_options;
    bool all = b->scope == CV_SCOPE_ALL;
    for (int i = 0; i < m->man->n_functions; i++) {
        sm_function *f = &m->man->functions[i];
        bool tpu = strcmp(f->target, "tpu-model") == 0;
        if (!all && !tpu)
            continue;
        f->has_bf16 = true;
        f->bf16.enabled = true;
        f->bf16.scope = all ? 2 : 1;
        f->bf16.skip_safety_checks = b->skip_safety_checks;
        join_filterlist(b, f->bf16.filterlist, sizeof f->bf16.filterlist);
    }
}

/* A TPU function's variables are its weights: one that only reads them
 * reads constants of the saved values, which live in HBM with the program
 * instead of crossing the host link at every call. */
static void freeze_tpu_variables(ag_saved_model *m)
{
    char err[256];
    for (int i = 0; i < m->man->n_functions; i++) {
        sm_function *f = &m->man->functions[i];
        if (strcmp(f->target, "tpu-model") != 0 || !f->n_variables)
            continue;
        ir_function *g = sm_function_graph(m, i, err, sizeof err);
        f->freeze_variables = g && sm_freeze_variables(g, err, sizeof err);
        ir_function_free(g);
    }
}

static void apply_io_shapes(ag_saved_model *m)
{
    for (int i = 0; i < m->man->n_functions; i++) {
        sm_function *f = &m->man->functions[i];
        f->io_shape_optimization = strcmp(f->target, "tpu-model") == 0;
    }
}

static char *text_of(void (*print)(const void *, FILE *), const void *what)
{
    char *text = NULL;
    size_t n = 0;
    FILE *mem = open_memstream(&text, &n);
    print(what, mem);
    fclose(mem);
    return text;
}

static void print_options(const void *o, FILE *out) { cv_options_print(o, out); }
static void print_report(const void *r, FILE *out) { cv_report_print(r, out); }

static bool write_model(ag_saved_model *m, const cv_options *o, const cv_report *r,
                        const char *out_dir)
{
    int n = m->man->n_functions;
    char **texts = rt_xcalloc((size_t)n + 1, sizeof *texts);
    for (int i = 0; i < n; i++)
        texts[i] = m->fns[i].text;
    const rt_value **vars = rt_xcalloc((size_t)m->man->n_variables + 1, sizeof *vars);
    for (int i = 0; i < m->man->n_variables; i++)
        vars[i] = sm_variable_value(m, i);
    char *options = text_of(print_options, o), *report = text_of(print_report, r);
    sm_extra_file extra[] = {{"conversion_report.txt", report},
                             {"converter_options.pbtxt", options}};
    bool ok = sm_write((ag_loc){0}, out_dir, m->man, texts, vars, extra, 2);
    free(options);
    free(report);
    free(vars);
    free(texts);
    return ok;
}

bool cv_convert(ag_saved_model *m, const cv_options *o, const char *source,
                const char *out_dir, FILE *print, cv_report *report)
{
    char err[1024];
    if (!cv_select(m, o, source, err, sizeof err)) {
        rt_report((ag_loc){0}, "%s", err);
        return false;
    }
    freeze_tpu_variables(m);
    cv_report *r = rt_xcalloc(1, sizeof *r);
    r->bf16 = cv_optimization_enabled(o, CV_OPT_BFLOAT16);
    r->io_shapes = cv_optimization_enabled(o, CV_OPT_IO_SHAPE);
    if (r->bf16)
        apply_bf16(m, o);
    if (r->io_shapes)
        apply_io_shapes(m);
    bool ok = cv_cost(m, o, r) && write_model(m, o, r, out_dir);
    if (ok && print)
        cv_report_print(r, print);
    if (ok && report)
        *report = *r;
    free(r);
    return ok;
}
