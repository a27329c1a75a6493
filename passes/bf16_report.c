/*
 * bf16_report.c - what a bf16 conversion cost in accuracy, and where.
 *
 * The f32 function and its converted copy (the bf16 pass keeps the ids of
 * the nodes it converts) run on the reference executor on the same
 * inputs. Every output gets its largest absolute and relative error
 * against f32; every node that both ran gets its relative error, and the
 * node whose error exceeds its operands' the most is named: that is where
 * precision is lost (a long reduction, a subtraction of near values, an
 * exp of a large argument), the op to put in the filterlist.
 */
#include "pass_internal.h"

#include "exec.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct recorder {
    int n_ids;
    double **f32;      /* by id: the f32 run's values (first run of a node) */
    int64_t *numel;
    double *rel;       /* by id: the converted run's worst relative error */
    bool compare;      /* false: recording the f32 run */
} recorder;

static double element(const rt_value *v, int64_t i) { return rt_load_f64(v->dtype, v->data, i); }

static bool numeric(const rt_value *v)
{
    return v && v->kind != RT_SYMBOLIC && v->dtype != RT_LIST && v->dtype != AG_BOOL;
}

/* |a - b| relative to |a|, over every element (NaN where both are NaN: 0). */
static double relative_error(const double *a, const rt_value *b, int64_t n, double *abs_err)
{
    double worst = 0, worst_abs = 0;
    for (int64_t i = 0; i < n; i++) {
        double x = a[i], y = element(b, i);
        if ((isnan(x) && isnan(y)) || x == y)
            continue;
        double d = fabs(x - y);
        double r = d / fmax(fabs(x), 1e-30);
        worst_abs = fmax(worst_abs, isnan(d) ? INFINITY : d);
        worst = fmax(worst, isnan(r) ? INFINITY : r);
    }
    if (abs_err)
        *abs_err = worst_abs;
    return worst;
}

static void ran(void *ctx, const ir_node *n, const rt_value *v)
{
    recorder *R = ctx;
    if (n->id >= R->n_ids || !numeric(v))
        return;
    if (!R->compare) {
        if (R->f32[n->id])
            return; /* a loop body's node: its first trip */
        R->f32[n->id] = rt_xmalloc((size_t)(v->numel ? v->numel : 1) * sizeof(double));
        R->numel[n->id] = v->numel;
        for (int64_t i = 0; i < v->numel; i++)
            R->f32[n->id][i] = element(v, i);
    } else if (R->f32[n->id] && R->numel[n->id] == v->numel && R->rel[n->id] < 0) {
        R->rel[n->id] = relative_error(R->f32[n->id], v, v->numel, NULL);
    }
}

static bool run(const ir_function *fn, recorder *R, rt_value *const *in, int n_in,
                rt_value **out)
{
    ir_plan *plan = ir_plan_new(fn);
    ir_exec_hooks hooks = {.ran = ran, .ctx = R};
    bool ok = ir_execute_hooked(plan, &hooks, in, n_in, out);
    ir_plan_free(plan);
    return ok;
}

/* The node whose error grew most over its operands'. */
static void find_worst(const ir_graph *g, const recorder *R, pass_bf16_report *rep)
{
    for (const ir_node *n = g->first; n; n = n->next) {
        for (int r = 0; r < 2; r++)
            if (n->region[r])
                find_worst(n->region[r], R, rep);
        if (n->id >= R->n_ids || R->rel[n->id] < 0)
            continue;
        double before = 0;
        for (int i = 0; i < n->n_in; i++)
            if (n->in[i]->id < R->n_ids && R->rel[n->in[i]->id] > before)
                before = R->rel[n->in[i]->id];
        double growth = R->rel[n->id] - before;
        if (growth > rep->worst_growth) {
            rep->worst_growth = growth;
            rep->worst = n;
        }
    }
}

static void record_outputs(const ir_function *fn, rt_value **want, rt_value **got,
                           pass_bf16_report *rep)
{
    rep->n_outputs = fn->body->n_results < PASS_BF16_MAX_OUTPUTS ? fn->body->n_results
                                                                 : PASS_BF16_MAX_OUTPUTS;
    for (int i = 0; i < rep->n_outputs; i++) {
        if (!numeric(want[i]) || !numeric(got[i]) || want[i]->numel != got[i]->numel)
            continue;
        double *a = rt_xmalloc((size_t)(want[i]->numel + 1) * sizeof *a);
        for (int64_t k = 0; k < want[i]->numel; k++)
            a[k] = element(want[i], k);
        rep->max_rel[i] = relative_error(a, got[i], want[i]->numel, &rep->max_abs[i]);
        free(a);
    }
}

bool pass_bf16_report_run(const ir_function *f32_fn, const ir_function *bf16_fn,
                          rt_value *const *inputs, int n_inputs, pass_bf16_report *rep)
{
    memset(rep, 0, sizeof *rep);
    int n_ids = f32_fn->next_id > 0 ? f32_fn->next_id : 1;
    recorder R = {.n_ids = n_ids};
    R.f32 = rt_xcalloc((size_t)n_ids, sizeof *R.f32);
    R.numel = rt_xcalloc((size_t)n_ids, sizeof *R.numel);
    R.rel = rt_xmalloc((size_t)n_ids * sizeof *R.rel);
    for (int i = 0; i < n_ids; i++)
        R.rel[i] = -1;
    int n_out = f32_fn->body->n_results;
    rt_value **want = rt_xcalloc((size_t)n_out + 1, sizeof *want);
    rt_value **got = rt_xcalloc((size_t)n_out + 1, sizeof *got);
    bool ok = run(f32_fn, &R, inputs, n_inputs, want);
    R.compare = true;
    ok = ok && run(bf16_fn, &R, inputs, n_inputs, got);
    if (ok) {
        record_outputs(f32_fn, want, got, rep);
        find_worst(bf16_fn->body, &R, rep);
    }
    for (int i = 0; i < n_out; i++) {
        rt_value_free(want[i]);
        rt_value_free(got[i]);
    }
    for (int i = 0; i < n_ids; i++)
        free(R.f32[i]);
    free(R.f32);
    free(R.numel);
    free(R.rel);
    free(want);
    free(got);
    return ok;
}

void pass_bf16_report_print(const pass_bf16_report *rep, FILE *out)
{
    fprintf(out, "// bf16 accuracy against f32 on the sample inputs:\n");
    for (int i = 0; i < rep->n_outputs; i++)
        fprintf(out, "//   output %d: max abs error %.3g, max rel error %.3g\n", i,
                rep->max_abs[i], rep->max_rel[i]);
    const ir_node *w = rep->worst;
    if (!w) {
        fprintf(out, "//   no op lost precision\n");
        return;
    }
    fprintf(out, "//   the error grows most at %%%d (%s", w->id, ir_opcode_name(w->opcode));
    if (w->loc.file)
        fprintf(out, ", %s:%d", w->loc.file, w->loc.line);
    fprintf(out, "): relative error +%.3g over its operands'\n", rep->worst_growth);
}
