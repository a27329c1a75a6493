/*
 * report.c - the conversion report: what the model costs on the TPU-model
 * and where, in the form of the Cloud TPU Inference Converter's report
 * (converter.md §6), and what each optimization changed.
 *
 * Every function is compiled for the TPU-model as the converter placed
 * it - a function with no TPU part too, entirely on the host - so that
 * one cost model prices every node: the TPU's units for device nodes, its
 * host model for the rest. The target reports each node's cost
 * (tgt_target.node_costs); a node belongs to the TPU function whose scope
 * holds it, or to the CPU. Unknown dimensions (a batch of `?` rows) are
 * priced at one batch size, stated in the report.
 */
#include "convert.h"
#include "quantize.h"

#include "words.h"

#include <stdlib.h>
#include <string.h>

/* A device scope no node has: the whole function stays on the host. */
static const char *const host_only[] = {""};

typedef struct tally {
    cv_report *r;
    const sm_manifest *man;
    const sm_function *f;
    bool whole; /* the function itself is on the TPU */
} tally;

/* The name the report gives a TPU function: its alias, if it has one. */
static const char *display_name(const sm_manifest *man, const char *function)
{
    for (int i = 0; i < man->n_aliases; i++)
        if (strcmp(man->aliases[i].function, function) == 0)
            return man->aliases[i].name;
    return function;
}

static void charge_tpu(cv_report *r, const char *name, double s)
{
    for (int i = 0; i < r->n_tpu; i++)
        if (strcmp(r->tpu[i].name, name) == 0) {
            r->tpu[i].seconds += s;
            return;
        }
    if (r->n_tpu == (int)(sizeof r->tpu / sizeof r->tpu[0]))
        return;
    snprintf(r->tpu[r->n_tpu].name, sizeof r->tpu[0].name, "%s", name);
    r->tpu[r->n_tpu++].seconds = s;
}

static bool on_device(const ir_node *n)
{
    return n->device != IR_HOST || n->opcode == RT_OP_TO_HOST ||
           n->opcode == RT_OP_TO_DEVICE;
}

static void visit(void *ctx, const ir_node *n, double seconds)
{
    tally *T = ctx;
    if (T->whole && (!n || on_device(n))) {
        charge_tpu(T->r, display_name(T->man, T->f->function), seconds);
        return;
    }
    for (int k = 0; n && on_device(n) && k < T->f->n_device_scopes; k++)
        if (ir_scope_within(n->scope, T->f->device_scopes[k].name)) {
            charge_tpu(T->r, display_name(T->man, T->f->device_scopes[k].name), seconds);
            return;
        }
    T->r->cpu_seconds += seconds;
}

/* Ops that compute in bf16 (casts, constants and transfers are not ops
 * converted), counted by op in by_op; returns how many. */
static int count_bf16(const ir_graph *g, int *by_op)
{
    int n = 0;
    for (const ir_node *x = g->first; x; x = x->next) {
        bool op = x->opcode < RT_OP_COUNT && x->type.dtype == AG_BF16 &&
                  x->opcode != RT_OP_CAST && x->opcode != RT_OP_CONST &&
                  x->opcode != RT_OP_TO_DEVICE && x->opcode != RT_OP_TO_HOST;
        if (op)
            by_op[x->opcode]++;
        n += op;
        for (int r = 0; r < 2; r++)
            if (x->region[r])
                n += count_bf16(x->region[r], by_op);
    }
    return n;
}

/* Function i's graph with every unknown parameter dim `batch`, and the
 * shapes inferred from there. */
static bool static_shapes(ir_function *g, int batch)
{
    for (int p = 0; p < g->body->n_params; p++) {
        ag_shape *s = &g->body->params[p]->type.shape;
        for (int d = 0; d < s->rank; d++)
            if (s->dims[d] < 0)
                s->dims[d] = batch;
    }
    return pass_run_spec(g, "infer");
}

/* Compiles function i as placed and adds its costs to r. */
static bool cost_function(ag_saved_model *m, int i, cv_report *r, tgt_call_estimate *whole)
{
    sm_function *f = &m->man->functions[i];
    pl_request req;
    pass_bf16_options bf16;
    char err[1024] = "";
    if (!sm_request(m, i, PL_COMPILED, &req, &bf16, err, sizeof err) ||
        !static_shapes(req.graph, r->batch)) {
        if (req.graph)
            ir_function_free(req.graph);
        rt_report((ag_loc){0}, "%s", err[0] ? err : pass_last_error());
        return false;
    }
    bool on_tpu = cv_on_device(f);
    req.target = tgt_find(CV_DEVICE_TARGET);
    req.strict = true;
    if (!on_tpu) {
        req.device_scopes = host_only;
        req.n_device_scopes = 1;
    }
    pl_result res;
    if (!pl_run(&req, &res))
        return false;
    tally T = {.r = r, .man = m->man, .f = f, .whole = on_tpu && !f->n_device_scopes};
    bool ok = res.target->node_costs && res.target->node_costs(res.exe, visit, &T, whole);
    if (!ok)
        rt_report((ag_loc){0}, "'%s' has no static shapes to cost at batch %d", f->name,
                  r->batch);
    r->bf16_ops += count_bf16(res.graph->body, r->bf16_by_op);
    if (ok && whole->chips > 1 && r->n_sharded < CV_MAX_SHARDED) {
        cv_sharded *s = &r->sharded[r->n_sharded++];
        snprintf(s->name, sizeof s->name, "%s", display_name(m->man, f->function));
        s->chips = whole->chips;
        s->seconds = whole->seconds;
        s->link_seconds = whole->link_seconds;
        snprintf(s->splits, sizeof s->splits, "%s", whole->splits);
    }
    pl_result_free(&res);
    return ok;
}

static bool cost_all(ag_saved_model *m, cv_report *r, double *seconds, int64_t *link)
{
    *seconds = 0;
    *link = 0;
    r->bf16_ops = 0;
    r->n_sharded = 0;
    memset(r->bf16_by_op, 0, sizeof r->bf16_by_op);
    for (int i = 0; i < m->man->n_functions; i++) {
        tgt_call_estimate whole = {0};
        if (!cost_function(m, i, r, &whole))
            return false;
        *seconds += whole.seconds;
        *link += whole.host_bytes;
    }
    return true;
}

bool cv_cost_call(ag_saved_model *m, int batch, double *seconds)
{
    cv_report *scratch = rt_xcalloc(1, sizeof *scratch);
    scratch->batch = batch;
    int64_t link;
    bool ok = cost_all(m, scratch, seconds, &link);
    free(scratch);
    return ok;
}

/* The records as they were before the optimizations: bf16 off, no I/O
 * shapes. Saved and given back. */
typedef struct saved_flags {
    bool has_bf16, bf16, io;
} saved_flags;

bool cv_cost(ag_saved_model *m, const cv_options *o, cv_report *r)
{
    int n = m->man->n_functions;
    saved_flags *keep = rt_xcalloc((size_t)n + 1, sizeof *keep);
    r->batch = o->n_batch_options ? (int)o->batch_options[0].max_batch_size : 1;
    for (int i = 0; i < n; i++) {
        sm_function *f = &m->man->functions[i];
        keep[i] = (saved_flags){f->has_bf16, f->bf16.enabled, f->io_shape_optimization};
        f->has_bf16 = f->bf16.enabled = f->io_shape_optimization = false;
    }
    cv_report before = {.batch = r->batch};
    bool ok = cost_all(m, &before, &r->call_before, &r->link_before);
    for (int i = 0; i < n; i++) {
        sm_function *f = &m->man->functions[i];
        f->has_bf16 = keep[i].has_bf16;
        f->bf16.enabled = keep[i].bf16;
        f->io_shape_optimization = keep[i].io;
    }
    free(keep);
    /* the report's split is of the converted model */
    return ok && cost_all(m, r, &r->call_after, &r->link_after);
}

/* ---------------------------------------------------------------- print */

static int64_t ns(double seconds) { return (int64_t)(seconds * 1e9 + 0.5); }

static double percent(int64_t part, int64_t total)
{
    return total > 0 ? 100.0 * (double)part / (double)total : 0;
}

/* "bfloat16:   3 ops compute in bf16: matmul (2), add (1)", the ops by
 * name in the op table's order. */
static void print_bf16(const cv_report *r, FILE *out)
{
    if (!r->bf16) {
        fprintf(out, "bfloat16:   off\n");
        return;
    }
    fprintf(out, "bfloat16:   %d %s in bf16", r->bf16_ops,
            sw_plural(r->bf16_ops, "op computes", "ops compute"));
    const char *sep = ": ";
    for (int op = 0; op < RT_OP_COUNT; op++)
        if (r->bf16_by_op[op]) {
            fprintf(out, "%s%s (%d)", sep, rt_ops[op].name, r->bf16_by_op[op]);
            sep = ", ";
        }
    fputc('\n', out);
}

static void print_io_shapes(const cv_report *r, FILE *out)
{
    if (!r->io_shapes) {
        fprintf(out, "I/O shapes: off\n");
        return;
    }
    fprintf(out, "I/O shapes: %lld %s over the host link per call, %lld before (%lld saved)\n",
            (long long)r->link_after, sw_plural(r->link_after, "byte", "bytes"),
            (long long)r->link_before, (long long)(r->link_before - r->link_after));
}

static void print_batching(const cv_report *r, FILE *out)
{
    int in_graph = r->n_batched_in_graph, at_inputs = r->n_batched - in_graph;
    if (!r->n_batched) {
        fprintf(out, "batching:   none\n");
        return;
    }
    fputs("batching:   ", out);
    if (in_graph)
        fprintf(out, "%d %s batched in the graph, in front of the TPU nodes%s", in_graph,
                sw_plural(in_graph, "function", "functions"), at_inputs ? "; " : "");
    if (at_inputs)
        fprintf(out, "%d batched at %s inputs", at_inputs, sw_plural(at_inputs, "its", "their"));
    fputs(" (agc-model show lists the options)\n", out);
    for (int i = 0; i < r->n_batch_notes && i < CV_MAX_BATCH_NOTES; i++)
        fprintf(out, "            %s\n", r->batch_note[i]);
    if (r->n_batch_notes > CV_MAX_BATCH_NOTES)
        fprintf(out, "            and %d more batched at their inputs\n",
                r->n_batch_notes - CV_MAX_BATCH_NOTES);
}

/* Before and after; a line of its own when the optimizations cost time
 * (padding to bf16 tiles, casts around a filterlist, a batch's wait). */
static void print_times(const cv_report *r, FILE *out)
{
    fprintf(out, "Simulated time per call: %.2f us before the optimizations, %.2f us after "
                 "(%.2fx)\n", r->call_before * 1e6, r->call_after * 1e6,
            r->call_after > 0 ? r->call_before / r->call_after : 0);
    if (ns(r->call_after) > ns(r->call_before))
        fprintf(out, "warning: the optimizations made a call slower: %.2f us after, %.2f us "
                     "before (turn them off one at a time to find which: "
                     "bfloat16_optimization, io_shape_optimization)\n",
                r->call_after * 1e6, r->call_before * 1e6);
}

static void print_error(const cv_agreement *a, FILE *out)
{
    fprintf(out, "max abs error %.4g, relative RMS %.3g%%", a->max_abs,
            100 * cv_agreement_relative_rms(a));
}

static void print_quantized_ops(const cv_qreport *q, FILE *out)
{
    for (int i = 0; i < q->n_ops; i++) {
        const cv_qreport_op *o = &q->ops[i];
        fprintf(out, "  %s %s (%s): %s\n", o->what.op, o->what.at, o->function, o->what.how);
        if (o->measured) {
            fputs("      on the data set: ", out);
            print_error(&o->error, out);
            fputc('\n', out);
        }
    }
    if (q->n_more)
        fprintf(out, "  and %d more\n", q->n_more);
}

/* The report's quantization part (docs/quantization.md, "The report"). */
static void print_quantization(const cv_qreport *q, FILE *out)
{
    if (!q->on)
        return;
    fprintf(out, "\nQuantization\n================================\n");
    fprintf(out, "method:     %s\n", q->method);
    fprintf(out, "products:   %d quantized, %d kept float; %d other %s float (not products)\n",
            q->quantized, q->kept_float, q->other_ops, sw_plural(q->other_ops, "op stays", "ops stay"));
    print_quantized_ops(q, out);
    fprintf(out, "weights:    %lld bytes before, %lld after (%.2fx smaller)\n",
            (long long)q->bytes_before, (long long)q->bytes_after,
            q->bytes_after > 0 ? (double)q->bytes_before / (double)q->bytes_after : 0);
    fprintf(out, "time:       %.2f us per call in float, %.2f us quantized (%.2fx)\n",
            q->call_float * 1e6, q->call_int8 * 1e6,
            q->call_int8 > 0 ? q->call_float / q->call_int8 : 0);
    if (!q->n_measured) {
        fprintf(out, "outputs:    not measured (no representative data set given)\n");
        return;
    }
    const cv_agreement *a = &q->outputs;
    fprintf(out, "outputs:    on %lld %s: ", (long long)a->samples,
            sw_plural(a->samples, "sample", "samples"));
    print_error(a, out);
    if (a->classified)
        fprintf(out, "; argmax agrees with float on %lld of %lld rows (%.2f%%)", (long long)a->agree,
                (long long)a->rows, a->rows ? 100.0 * (double)a->agree / (double)a->rows : 0);
    fputc('\n', out);
}

/* The slice's part: each sharded function's compute and communication,
 * and its products' splits. */
static void print_sharding(const cv_report *r, FILE *out)
{
    if (!r->slice[0])
        return;
    fprintf(out, "Sharding (xla_sharding_options)\n================================\n"
                 "slice:      %s\n", r->slice);
    for (int i = 0; i < r->n_sharded; i++) {
        const cv_sharded *s = &r->sharded[i];
        double link = s->link_seconds, compute = s->seconds - link;
        fprintf(out, "%s on %d chips: %.2f us per call: compute and host transfers %.2f us "
                     "(%.1f%%), communication between chips %.2f us (%.1f%%)\n", s->name, s->chips, s->seconds * 1e6,
                compute * 1e6, s->seconds > 0 ? 100 * compute / s->seconds : 0, link * 1e6,
                s->seconds > 0 ? 100 * link / s->seconds : 0);
        if (s->splits[0])
            fprintf(out, "  %s\n", s->splits);
    }
    fputs("(the listing, agc --emit=tpu, and the profile, AG_PROFILE, show the collectives)\n\n",
          out);
}

void cv_report_print(const cv_report *r, FILE *out)
{
    int64_t cpu = ns(r->cpu_seconds), tpu = 0;
    for (int i = 0; i < r->n_tpu; i++)
        tpu += ns(r->tpu[i].seconds);
    int64_t total = cpu + tpu;
    fprintf(out, "-------- Conversion Report --------\n");
    fprintf(out, "TPU cost of the model: %5.2f%% (%lld/%lld)\n", percent(tpu, total),
            (long long)tpu, (long long)total);
    fprintf(out, "CPU cost of the model: %5.2f%% (%lld/%lld)\n\n", percent(cpu, total),
            (long long)cpu, (long long)total);
    fprintf(out, "Cost breakdown\n================================\n%%         Cost    Name\n"
                 "--------------------------------\n");
    fprintf(out, "%-9.2f %-7lld [CPU cost]\n", percent(cpu, total), (long long)cpu);
    for (int i = 0; i < r->n_tpu; i++)
        fprintf(out, "%-9.2f %-7lld %s\n", percent(ns(r->tpu[i].seconds), total),
                (long long)ns(r->tpu[i].seconds), r->tpu[i].name);
    fprintf(out, "--------------------------------\n\n");
    if (!r->n_tpu)
        fprintf(out, "No function is on the TPU: to place one, add tpu_functions { "
                     "function_alias: \"NAME\" } to the options.\n\n");
    fprintf(out, "Costs are simulated nanoseconds per call on the TPU-model (host work on its "
                 "host model),\nwith unknown dimensions at %d.\n", r->batch);
    fputc('\n', out);
    print_sharding(r, out);
    fprintf(out, "Optimizations\n================================\n");
    print_bf16(r, out);
    print_io_shapes(r, out);
    print_batching(r, out);
    print_times(r, out);
    print_quantization(&r->quant, out);
}
