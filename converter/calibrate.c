/*
 * calibrate.c - static range quantization's calibration (quantize.h):
 * the float function runs on every sample of the representative data set
 * under the reference executor, whose `ran` hook shows every node's
 * value as it is computed; the nodes the rewrite will quantize keep
 * their ranges. A node inside a branch or a loop body that no sample
 * reached is never shown: its observation has no samples, and the
 * rewrite leaves it float (or fails) naming its C line.
 */
#include "quantize.h"

#include "dataset.h"
#include "exec.h"
#include "rt.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------- what is seen */

static bool is_weight(const ir_node *n)
{
    return n->opcode == RT_OP_CONST || n->opcode == RT_OP_VAR_READ;
}

/* The int8 products take a matrix by a matrix, or NHWC by HWIO. */
static bool int8_shapes(const ir_node *n)
{
    int rank = n->opcode == RT_OP_MATMUL ? 2 : 4;
    return n->in[0]->type.shape.rank == rank && n->in[1]->type.shape.rank == rank;
}

bool cv_is_quantizable_product(const ir_node *n)
{
    return (n->opcode == RT_OP_MATMUL || n->opcode == RT_OP_CONV2D) && n->n_in == 2 &&
           n->type.dtype == AG_F32 && is_weight(n->in[1]) && !is_weight(n->in[0]) &&
           int8_shapes(n);
}

/* A bias the int32 form can take: one value, or one per output channel. */
static bool channel_bias(const ir_node *p, const ir_node *b)
{
    int64_t numel = rt_shape_numel(&b->type.shape);
    const ag_shape *s = &p->type.shape;
    return numel == 1 || (s->rank > 0 && numel == s->dims[s->rank - 1] &&
                          b->type.shape.rank >= 1 &&
                          b->type.shape.dims[b->type.shape.rank - 1] == numel);
}

/* How many inputs of g's nodes (and its regions', and its results) are v. */
static int readers_in(const ir_graph *g, const ir_node *v)
{
    int count = 0;
    for (const ir_node *n = g->first; n; n = n->next) {
        for (int i = 0; i < n->n_in; i++)
            count += n->in[i] == v;
        for (int r = 0; r < 2; r++)
            if (n->region[r])
                count += readers_in(n->region[r], v);
    }
    for (int i = 0; i < g->n_results; i++)
        count += g->results[i] == v;
    return count;
}

/* The only node reading v, or NULL (none, several, or a graph's result). */
static const ir_node *only_reader(const ir_function *fn, const ir_node *v)
{
    if (readers_in(fn->body, v) != 1)
        return NULL;
    for (const ir_node *n = v->next; n; n = n->next)
        for (int i = 0; i < n->n_in; i++)
            if (n->in[i] == v)
                return n;
    return NULL;
}

const ir_node *cv_chain_end(const ir_function *fn, const ir_node *p)
{
    const ir_node *end = p, *r = only_reader(fn, p);
    if (r && r->opcode == RT_OP_ADD && r->type.dtype == AG_F32 &&
        is_weight(r->in[r->in[0] == p ? 1 : 0]) && channel_bias(p, r->in[r->in[0] == p ? 1 : 0]) &&
        ag_shape_equal(r->type.shape, p->type.shape)) {
        end = r;
        r = only_reader(fn, r);
    }
    if (r && r->opcode == RT_OP_RELU)
        end = r;
    return end;
}

/* ------------------------------------------------------- the observations */

static void observe(cv_calibration *c, const ir_node *n)
{
    for (int i = 0; i < c->n; i++)
        if (c->t[i].node == n)
            return;
    cv_observed *t = &c->t[c->n++];
    memset(t, 0, sizeof *t);
    t->node = n;
    t->in_branch = n->graph->parent != NULL;
    t->min = HUGE_VAL;
    t->max = -HUGE_VAL;
    t->last_sample = -1;
    t->bound = 1.0 / 1024;
    t->hist = rt_xcalloc(CV_HISTOGRAM_BINS, sizeof *t->hist);
}

static void gather(cv_calibration *c, const ir_function *fn, const ir_graph *g)
{
    for (const ir_node *n = g->first; n; n = n->next) {
        if (cv_is_quantizable_product(n)) {
            observe(c, n->in[0]);
            observe(c, cv_chain_end(fn, n));
        }
        for (int r = 0; r < 2; r++)
            if (n->region[r])
                gather(c, fn, n->region[r]);
    }
}

static int count_nodes(const ir_graph *g)
{
    int k = 0;
    for (const ir_node *n = g->first; n; n = n->next) {
        k++;
        for (int r = 0; r < 2; r++)
            if (n->region[r])
                k += count_nodes(n->region[r]);
    }
    return k;
}

const cv_observed *cv_observed_of(const cv_calibration *c, const ir_node *n)
{
    for (int i = 0; i < c->n; i++)
        if (c->t[i].node == n)
            return &c->t[i];
    return NULL;
}

/* ---------------------------------------------------------- the histogram */

/* Doubles the histogram's bound: the old bins, pairwise merged, become
 * the middle half of the new ones (exact: the edges stay edges). */
static void widen(cv_observed *t)
{
    int64_t merged[CV_HISTOGRAM_BINS] = {0};
    for (int k = 0; k < CV_HISTOGRAM_BINS; k++)
        merged[CV_HISTOGRAM_BINS / 4 + k / 2] += t->hist[k];
    memcpy(t->hist, merged, sizeof merged);
    t->bound *= 2;
}

static void count_value(cv_observed *t, double v)
{
    while (v < -t->bound || v >= t->bound)
        widen(t);
    int k = (int)floor((v + t->bound) / (2 * t->bound) * CV_HISTOGRAM_BINS);
    t->hist[k < CV_HISTOGRAM_BINS ? k : CV_HISTOGRAM_BINS - 1]++;
    t->n_values++;
}

/* The edge below which `percent` of the values lie (lower edge of the
 * bin holding that rank for the minimum, upper for the maximum). */
static double percentile(const cv_observed *t, double percent, bool upper)
{
    double width = 2 * t->bound / CV_HISTOGRAM_BINS, rank = percent / 100 * (double)t->n_values;
    int64_t seen = 0;
    for (int k = 0; k < CV_HISTOGRAM_BINS; k++) {
        seen += t->hist[k];
        if ((double)seen >= rank && t->hist[k])
            return -t->bound + (k + (upper ? 1 : 0)) * width;
    }
    return t->bound;
}

/* ------------------------------------------------------------ one sample */

typedef struct watch {
    cv_calibration *c;
    int64_t sample;
} watch;

void cv_record_value(cv_observed *t, int64_t sample, const rt_value *v)
{
    if (t->last_sample != sample) {
        if (t->last_sample >= 0) {
            t->sum_min += t->sample_min;
            t->sum_max += t->sample_max;
        }
        t->last_sample = sample;
        t->samples++;
        t->sample_min = HUGE_VAL;
        t->sample_max = -HUGE_VAL;
    }
    const float *x = v->data;
    for (int64_t i = 0; i < v->numel; i++) {
        double d = x[i];
        if (!isfinite(d)) /* NaN has no range; an infinity would widen forever */
            continue;
        t->sample_min = fmin(t->sample_min, d);
        t->sample_max = fmax(t->sample_max, d);
        count_value(t, d);
    }
    t->min = fmin(t->min, t->sample_min);
    t->max = fmax(t->max, t->sample_max);
}

static void ran(void *ctx, const ir_node *n, const rt_value *value)
{
    watch *w = ctx;
    for (int i = 0; i < w->c->n; i++)
        if (w->c->t[i].node == n && value && value->dtype == AG_F32 && value->data)
            cv_record_value(&w->c->t[i], w->sample, value);
}

static bool run_sample(const ir_plan *plan, const ir_function *fn, const sm_sample *s,
                       watch *w, const char *path, char *err, size_t errlen)
{
    int n_args = s->n_inputs, n_res = fn->body->n_results;
    rt_value **args = rt_xcalloc((size_t)n_args + 1, sizeof *args);
    rt_value **res = rt_xcalloc((size_t)n_res + 1, sizeof *res);
    for (int i = 0; i < n_args; i++)
        args[i] = rt_handle_peek(s->tensors[i]);
    /* the executor shows the nodes it runs; the parameters it is given */
    for (int i = 0; i < n_args && i < fn->body->n_params; i++)
        ran(w, fn->body->params[i], args[i]);
    ir_exec_hooks hooks = {.ran = ran, .ctx = w};
    bool ok = ir_execute_hooked(plan, &hooks, args, n_args, res);
    if (!ok)
        snprintf(err, errlen, "%s: sample %lld: the float function failed on it: %s", path,
                 (long long)w->sample, ag_last_error() ? ag_last_error() : "an error");
    for (int i = 0; ok && i < n_res; i++)
        rt_value_free(res[i]);
    free(res);
    free(args);
    return ok;
}

/* Closes each observation's last sample. */
static void finish(cv_calibration *c)
{
    for (int i = 0; i < c->n; i++) {
        cv_observed *t = &c->t[i];
        if (t->last_sample >= 0) {
            t->sum_min += t->sample_min;
            t->sum_max += t->sample_max;
        }
    }
}

bool cv_calibrate(const ir_function *fn, const ag_signature_def *sig, const char *path,
                  cv_calibration *c, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    c->t = rt_xcalloc((size_t)count_nodes(fn->body) * 2 + 1, sizeof *c->t);
    gather(c, fn, fn->body);
    sm_dataset ds;
    if (!sm_dataset_read(path, sig, &ds, err, errlen))
        return false;
    ir_plan *plan = ir_plan_new(fn);
    bool ok = true;
    watch w = {c, 0};
    for (int64_t i = 0; ok && i < ds.n_samples; i++) {
        w.sample = i;
        ok = run_sample(plan, fn, &ds.samples[i], &w, path, err, errlen);
    }
    c->n_samples = ds.n_samples;
    finish(c);
    ir_plan_free(plan);
    sm_dataset_free(&ds);
    return ok;
}

void cv_calibration_free(cv_calibration *c)
{
    for (int i = 0; i < c->n; i++)
        free(c->t[i].hist);
    free(c->t);
    memset(c, 0, sizeof *c);
}

/* ---------------------------------------------------------------- ranges */

bool cv_observed_range(const cv_observed *t, const cv_calibration_options *opt, double *lo,
                       double *hi)
{
    if (t->samples == 0)
        return false;
    const cv_calibration_parameters *p = &opt->calibration_parameters;
    switch (opt->calibration_method) {
    case CV_CALIBRATION_AVERAGE_MIN_MAX:
        *lo = t->sum_min / (double)t->samples;
        *hi = t->sum_max / (double)t->samples;
        break;
    case CV_CALIBRATION_HISTOGRAM_PERCENTILE:
        *lo = fmax(t->min, percentile(t, p->min_percentile, false));
        *hi = fmin(t->max, percentile(t, p->max_percentile, true));
        break;
    default:
        *lo = t->min;
        *hi = t->max;
        break;
    }
    return true;
}
