/*
 * agreement.c - how close a converted function's outputs are to the
 * original's on a representative data set (quantize.h): the largest
 * absolute difference, the relative RMS error (the difference's RMS over
 * the original's), and, for an output that looks like a classification
 * (f32 [batch, classes], more than one class), how often the argmax of
 * each row agrees; the same for pairs of inner nodes (probes: a
 * quantized product against the float one it replaced). Both functions
 * run under the reference executor.
 */
#include "quantize.h"

#include "dataset.h"
#include "exec.h"
#include "rt.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A classification's output: f32 [rows, classes], classes > 1. */
static bool classification(const rt_value *v)
{
    return v->dtype == AG_F32 && v->shape.rank == 2 && v->shape.dims[1] > 1;
}

static int64_t argmax_row(const float *x, int64_t n)
{
    int64_t best = 0;
    for (int64_t j = 1; j < n; j++)
        if (x[j] > x[best])
            best = j;
    return best;
}

/* Adds one output's comparison (same dtype and shape, f32) to a. */
static void compare(cv_agreement *a, const rt_value *want, const rt_value *got)
{
    const float *w = want->data, *g = got->data;
    for (int64_t i = 0; i < want->numel; i++) {
        double d = (double)g[i] - (double)w[i];
        a->max_abs = fmax(a->max_abs, fabs(d));
        a->sum_sq_diff += d * d;
        a->sum_sq_want += (double)w[i] * w[i];
    }
    if (!classification(want))
        return;
    int64_t rows = want->shape.dims[0], classes = want->shape.dims[1];
    a->classified = true;
    for (int64_t r = 0; r < rows; r++) {
        a->rows++;
        a->agree += argmax_row(w + r * classes, classes) == argmax_row(g + r * classes, classes);
    }
}

static bool comparable(const rt_value *a, const rt_value *b)
{
    return a && b && a->dtype == AG_F32 && b->dtype == AG_F32 && a->numel == b->numel &&
           a->data && b->data;
}

/* The probes of one sample: the original's values kept (copies) until the
 * converted function's run compares them. */
typedef struct prober {
    cv_probe *probes;
    int n;
    rt_value **want; /* by probe */
    bool converted;  /* the run is the converted function's */
} prober;

static rt_value *copy_of(const rt_value *v)
{
    rt_value *c = rt_value_new(v->dtype, &v->shape);
    memcpy(c->data, v->data, (size_t)v->numel * rt_dtype_size(v->dtype));
    return c;
}

/* A probe's values: an int8 one dequantized first. */
static void compare_probe(cv_probe *p, const rt_value *want, const rt_value *got)
{
    if (!want || !got || !got->data || want->numel != got->numel)
        return;
    if (p->scale <= 0 || got->dtype != AG_I8) {
        if (comparable(want, got))
            compare(&p->a, want, got);
        return;
    }
    rt_value *f = rt_value_new(AG_F32, &got->shape);
    const int8_t *q = got->data;
    for (int64_t i = 0; i < got->numel; i++)
        ((float *)f->data)[i] = (float)(q[i] - p->zero) * p->scale;
    if (comparable(want, f))
        compare(&p->a, want, f);
    rt_value_free(f);
}

static void ran(void *ctx, const ir_node *n, const rt_value *value)
{
    prober *P = ctx;
    for (int k = 0; k < P->n; k++) {
        cv_probe *p = &P->probes[k];
        if (!P->converted && n->id == p->want_id && value && value->data && !P->want[k])
            P->want[k] = copy_of(value);
        else if (P->converted && n->id == p->got_id)
            compare_probe(p, P->want[k], value);
    }
}

/* Runs plan on the sample; results in res (n_res of them). */
static bool run(const ir_plan *plan, const sm_sample *s, prober *P, rt_value **res)
{
    rt_value **args = rt_xcalloc((size_t)s->n_inputs + 1, sizeof *args);
    for (int i = 0; i < s->n_inputs; i++)
        args[i] = rt_handle_peek(s->tensors[i]);
    ir_exec_hooks hooks = {.ran = ran, .ctx = P};
    bool ok = ir_execute_hooked(plan, P->n ? &hooks : NULL, args, s->n_inputs, res);
    free(args);
    return ok;
}

static bool compare_sample(const ir_plan *pw, const ir_plan *pg, int n_res, const sm_sample *s,
                           cv_agreement *a, prober *P)
{
    rt_value **want = rt_xcalloc((size_t)n_res + 1, sizeof *want);
    rt_value **got = rt_xcalloc((size_t)n_res + 1, sizeof *got);
    P->converted = false;
    bool ok_w = run(pw, s, P, want);
    P->converted = true;
    bool ok_g = ok_w && run(pg, s, P, got);
    for (int k = 0; k < P->n; k++) {
        if (P->want[k])
            rt_value_free(P->want[k]);
        P->want[k] = NULL;
    }
    for (int i = 0; ok_g && i < n_res; i++)
        if (comparable(want[i], got[i]))
            compare(a, want[i], got[i]);
    for (int i = 0; i < n_res; i++) {
        if (ok_w)
            rt_value_free(want[i]);
        if (ok_g)
            rt_value_free(got[i]);
    }
    free(want);
    free(got);
    return ok_g;
}

bool cv_agreement_measure(const ir_function *original, const ir_function *converted,
                          const ag_signature_def *sig, const char *path, cv_agreement *a,
                          cv_probe *probes, int n_probes, char *err, size_t errlen)
{
    memset(a, 0, sizeof *a);
    prober P = {probes, n_probes, rt_xcalloc((size_t)n_probes + 1, sizeof *P.want), false};
    for (int k = 0; k < n_probes; k++)
        memset(&probes[k].a, 0, sizeof probes[k].a);
    sm_dataset ds;
    if (!sm_dataset_read(path, sig, &ds, err, errlen))
        return false;
    ir_plan *pw = ir_plan_new(original), *pg = ir_plan_new(converted);
    int n_res = original->body->n_results;
    bool ok = converted->body->n_results == n_res;
    if (!ok)
        snprintf(err, errlen, "the converted function has %d results, the original %d",
                 converted->body->n_results, n_res);
    for (int64_t i = 0; ok && i < ds.n_samples; i++) {
        ok = compare_sample(pw, pg, n_res, &ds.samples[i], a, &P);
        if (!ok)
            snprintf(err, errlen, "%s: sample %lld: %s", path, (long long)i,
                     ag_last_error() ? ag_last_error() : "a function failed on it");
    }
    a->samples = ds.n_samples;
    for (int k = 0; k < n_probes; k++)
        probes[k].a.samples = ds.n_samples;
    free(P.want);
    ir_plan_free(pw);
    ir_plan_free(pg);
    sm_dataset_free(&ds);
    return ok;
}

double cv_agreement_relative_rms(const cv_agreement *a)
{
    if (a->sum_sq_want > 0)
        return sqrt(a->sum_sq_diff / a->sum_sq_want);
    return a->sum_sq_diff > 0 ? HUGE_VAL : 0;
}
