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
#include "quantize.h"

#include "files.h"
#include "rows.h"

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
        if (!all && !cv_on_device(f))
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
        if (!cv_on_device(f) || !f->n_variables)
            continue;
        ir_function *g = sm_function_graph(m, i, err, sizeof err);
        f->freeze_variables = g && sm_freeze_variables(g, err, sizeof err);
        ir_function_free(g);
    }
}

/* xla_sharding_options: the TPU functions run on the replica's slice. */
static bool apply_sharding(ag_saved_model *m, const cv_options *o, const char *source,
                           cv_report *r, char *err, size_t errlen)
{
    if (!cv_sharding_spec(o, source, r->slice, sizeof r->slice, err, errlen))
        return false;
    for (int i = 0; i < m->man->n_functions; i++) {
        sm_function *f = &m->man->functions[i];
        if (cv_on_device(f))
            snprintf(f->device_spec, sizeof f->device_spec, "%s", r->slice);
    }
    return true;
}

static void apply_io_shapes(ag_saved_model *m)
{
    for (int i = 0; i < m->man->n_functions; i++) {
        sm_function *f = &m->man->functions[i];
        f->io_shape_optimization = cv_on_device(f);
    }
}

/* ------------------------------------------------------------- batching */

typedef struct batcher_ctx {
    ag_saved_model *m;
    const cv_options *o;
    const char *source;
    int k; /* the batch_options entry */
    cv_report *r; /* takes a note when a cut does not exist */
    char *err;
    size_t errlen;
} batcher_ctx;

#define batch_fail(B, ...) \
    cv_error((B)->err, (B)->errlen, (B)->source, (B)->o->at.batch_options[(B)->k], __VA_ARGS__)

/* converter.md's shape rules that the types decide: every batched input
 * and output has a dimension 0, unknown (`?`), which the batch fills. */
static bool batchable(batcher_ctx *B, const sm_function *f)
{
    for (int k = 0; k < f->n_inputs + f->n_outputs; k++) {
        const sm_io *io = k < f->n_inputs ? &f->inputs[k] : &f->outputs[k - f->n_inputs];
        bool input = k < f->n_inputs;
        char what[SM_NAME + 64];
        snprintf(what, sizeof what, "%s '%s' of '%s'", input ? "input" : "output", io->name,
                 f->name);
        if (strstr(io->type, "[]"))
            return batch_fail(B, "batching: %s is a scalar (%s); batched tensors need a "
                                 "dimension 0 to join requests along", what, io->type);
        if (!strstr(io->type, "[?"))
            return batch_fail(B, "batching: %s is %s; a batched function's signature has '?' "
                                 "in dimension 0 of every input and output", what, io->type);
    }
    return true;
}

/* Whether what a batch of f runs (f's graph g, or the middle of its cut)
 * computes each row from that row alone (passes/rows.h): batching a
 * function that mixes rows would hand requests each other's results. */
static bool rows_ok(batcher_ctx *B, const sm_function *f, const ir_function *g)
{
    char why[768];
    if (pass_rows_check(g, NULL, why, sizeof why))
        return true;
    return batch_fail(B, "batching: '%s' cannot be batched: %s; a batched function must "
                         "compute each row of its results from that row of its inputs alone",
                      f->function, why);
}

/* The row analysis of function i batched at its inputs: its whole graph. */
static bool rows_ok_whole(batcher_ctx *B, int i)
{
    ir_function *g = sm_function_graph(B->m, i, B->err, B->errlen);
    if (!g)
        return false;
    bool ok = rows_ok(B, &B->m->man->functions[i], g);
    ir_function_free(g);
    return ok;
}

/* Whether function i can be batched in the graph, in front of the nodes
 * its batch record names (its batch scope, else its device scopes;
 * model/batch_split.c): the cut exists and the shape rules hold for what
 * the batched nodes read and hand back (*cut). When not, the report says
 * why. False when the cut exists but mixes rows. */
static bool batchable_in_graph(batcher_ctx *B, int i, bool *cut)
{
    pass_split s;
    pl_request r;
    pass_bf16_options bf16;
    char err[1024];
    *cut = sm_batch_split(B->m, i, &s, &r, &bf16, err, sizeof err);
    if (*cut) {
        bool ok = rows_ok(B, &B->m->man->functions[i], s.middle);
        pass_split_free(&s);
        return ok;
    }
    cv_report *rep = B->r;
    if (rep->n_batch_notes < CV_MAX_BATCH_NOTES)
        snprintf(rep->batch_note[rep->n_batch_notes], sizeof rep->batch_note[0],
                 "'%s' is batched at its inputs: %s", B->m->man->functions[i].name, err);
    rep->n_batch_notes++;
    return true;
}

/* The record's copy of BatchOptions: every row of
 * pipeline/batch_options.def. */
static void record_batch_options(const cv_batch_options *bt_src, sm_batch *bt_dst)
{
#define BT_OPTION BT_COPY_ROW
#include "batch_options.def"
#undef BT_OPTION
}

/* Batches function i: in the graph when asked, in front of the nodes of
 * the AG_FUNCTION `scope` it inlined (NULL: of its device scopes), when
 * the cut exists; else at its inputs: nodes inside a loop or a branch,
 * or reading work that reads them, or a weight the host computes, are
 * batched with the work around them. */
static bool batch_function(batcher_ctx *B, int i, bool in_graph, const char *scope)
{
    sm_function *f = &B->m->man->functions[i];
    const cv_batch_options *b = &B->o->batch_options[B->k];
    if (f->has_batch)
        return batch_fail(B, "batching: '%s' is batched by two batch_options", f->name);
    /* the record first: the cut reads its scope */
    f->batch = (sm_batch){.in_graph = in_graph};
    record_batch_options(b, &f->batch);
    snprintf(f->batch.scope, sizeof f->batch.scope, "%s", in_graph && scope ? scope : "");
    bool cut = false;
    if (in_graph && !batchable_in_graph(B, i, &cut))
        return false;
    if (in_graph && !cut) {
        f->batch.in_graph = false;
        f->batch.scope[0] = '\0';
    }
    if (!f->batch.in_graph && !(batchable(B, f) && rows_ok_whole(B, i)))
        return false;
    f->has_batch = true;
    return true;
}

/* What an entry batches: its `experimental` target, else every TPU
 * function. A concrete function placed whole, or named, is batched at its
 * inputs; TPU functions a caller inlined (its device scopes), or the
 * function an `experimental` alias names, in front of their nodes in the
 * caller's graph; a signature's function at its inputs. */
static bool apply_batch_options(batcher_ctx *B)
{
    const char *name = NULL;
    cv_selector kind = cv_batch_target_selector(&B->o->batch_options[B->k].experimental, &name);
    sm_manifest *man = B->m->man;
    const char *function = name;
    if (kind == CV_SELECT_SIGNATURE_NAME) {
        sm_signature *s = sm_find_signature(man, name);
        char have[512], hint[300];
        if (!s)
            sm_names_for(man, SM_SIGNATURES, name, have, sizeof have, hint, sizeof hint);
        if (!s)
            return batch_fail(B, "batching: the model has no signature '%s'; it has %s%s", name,
                              have, hint);
        function = s->function;
    } else if (kind == CV_SELECT_FUNCTION_ALIAS) {
        function = NULL;
        for (int i = 0; i < man->n_aliases && !function; i++)
            if (strcmp(man->aliases[i].name, name) == 0)
                function = man->aliases[i].function;
        char have[512], hint[300];
        if (!function)
            sm_names_for(man, SM_ALIASES, name, have, sizeof have, hint, sizeof hint);
        if (!function)
            return batch_fail(B, "batching: the model has no function alias '%s' (aliases: "
                                 "%s)%s", name, have, hint);
    }
    int hits = 0;
    for (int i = 0; i < man->n_functions; i++) {
        sm_function *f = &man->functions[i];
        bool calls = false;
        for (int c = 0; c < f->n_calls && function; c++)
            calls |= strcmp(f->calls[c].name, function) == 0;
        bool chosen = kind == CV_SELECT_NONE ? cv_on_device(f)
                      : kind == CV_SELECT_FUNCTION_ALIAS
                          ? strcmp(f->function, function) == 0 || calls
                          : strcmp(f->name, function) == 0;
        bool inlined = kind == CV_SELECT_FUNCTION_ALIAS && strcmp(f->function, function) != 0;
        bool in_graph = (kind == CV_SELECT_NONE && f->n_device_scopes > 0) || inlined;
        if (chosen && (++hits, !batch_function(B, i, in_graph, inlined ? function : NULL)))
            return false;
    }
    if (!hits && kind == CV_SELECT_NONE)
        return batch_fail(B, "batching: no TPU function to batch; select one in tpu_functions, "
                             "or name what to batch in experimental");
    if (!hits)
        return batch_fail(B, "batching: '%s' is no function of the model", name);
    return true;
}

static bool apply_batching(ag_saved_model *m, const cv_options *o, const char *source,
                           cv_report *r, char *err, size_t errlen)
{
    for (int k = 0; k < o->n_batch_options; k++) {
        batcher_ctx B = {m, o, source ? source : "<options>", k, r, err, errlen};
        if (!apply_batch_options(&B))
            return false;
    }
    return true;
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
    sm_extra_file extra[] = {{SM_REPORT_FILE, report}, {SM_CONVERTER_OPTIONS_FILE, options}};
    bool ok = sm_write((ag_loc){0}, out_dir, m->man, texts, vars, extra, 2);
    free(options);
    free(report);
    free(vars);
    free(texts);
    return ok;
}

bool cv_check_output_dir(const char *in, const char *out, char *err, size_t errlen)
{
    sf_place p = sf_place_of(out, in);
    if (p == SF_SAME)
        return cv_error(err, errlen, NULL, (tp_loc){0}, "the output model must not replace the "
                        "input model: '%s' is the input '%s'", out, in);
    if (p == SF_INSIDE)
        return cv_error(err, errlen, NULL, (tp_loc){0}, "the output model must not be inside "
                        "the input model: '%s' is in the input '%s'", out, in);
    if (sf_place_of(in, out) == SF_INSIDE)
        return cv_error(err, errlen, NULL, (tp_loc){0}, "the output model must not replace a "
                        "directory that holds the input model: the input '%s' is in '%s'",
                        in, out);
    return true;
}

/* Quantization, after the placement: the float model costed, the planned
 * functions rewritten into int8 ops, the int8 model costed. Before bf16
 * and batching, which then see the graphs that will run. */
static bool quantize(ag_saved_model *m, const cv_options *o, cv_quantization *q, cv_report *r,
                     char *err, size_t errlen)
{
    if (q->method == CV_QUANT_NONE)
        return true;
    r->batch = o->n_batch_options ? (int)o->batch_options[0].max_batch_size : 1;
    if (!cv_cost_call(m, r->batch, &r->quant.call_float) ||
        !cv_quantize_apply(m, q, &r->quant, err, errlen))
        return false;
    return cv_cost_call(m, r->batch, &r->quant.call_int8);
}

static bool convert(ag_saved_model *m, const cv_options *o, const char *source,
                    const char *out_dir, cv_quantization *q, cv_report *r)
{
    char err[1024] = "";
    bool ok = cv_check_output_dir(m->dir, out_dir, err, sizeof err) &&
              cv_quantize_plans(m, o, source, q, err, sizeof err) &&
              cv_check_converts(m, o, source, err, sizeof err) &&
              cv_select(m, o, source, err, sizeof err);
    if (ok) {
        freeze_tpu_variables(m);
        ok = apply_sharding(m, o, source, r, err, sizeof err) &&
             quantize(m, o, q, r, err, sizeof err);
    }
    r->bf16 = cv_optimization_enabled(o, CV_OPT_BFLOAT16);
    r->io_shapes = cv_optimization_enabled(o, CV_OPT_IO_SHAPE);
    if (ok && r->bf16)
        apply_bf16(m, o);
    if (ok && r->io_shapes)
        apply_io_shapes(m);
    ok = ok && apply_batching(m, o, source, r, err, sizeof err);
    if (!ok) {
        if (err[0])
            rt_report((ag_loc){0}, "%s", err);
        return false;
    }
    for (int i = 0; i < m->man->n_functions; i++) {
        const sm_function *f = &m->man->functions[i];
        r->n_batched += f->has_batch;
        r->n_batched_in_graph += f->has_batch && f->batch.in_graph;
    }
    return cv_cost(m, o, r) && write_model(m, o, r, out_dir);
}

bool cv_convert(ag_saved_model *m, const cv_options *o, const char *source,
                const char *out_dir, FILE *print, cv_report *report)
{
    cv_report *r = rt_xcalloc(1, sizeof *r);
    cv_quantization *q = rt_xcalloc(1, sizeof *q);
    bool ok = convert(m, o, source, out_dir, q, r);
    if (ok && print)
        cv_report_print(r, print);
    if (ok && report)
        *report = *r;
    cv_quantization_free(q);
    free(q);
    free(r);
    return ok;
}
