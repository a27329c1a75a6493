/*
 * quantize_apply.c - the plans carried out (quantize.h): each planned
 * function's graph rewritten into int8 ops (passes/quantize.c) and put in
 * the model in place of the float one, its record saying per product
 * what was quantized and how (`agc-model show` prints it), and the
 * report's quantization part: per product its error against the float
 * function on the data set, the outputs' agreement, the weights' bytes
 * before and after.
 */
#include "quantize.h"

#include "pass.h"
#include "rt.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static pass_qmethod pass_method(cv_quant_method m)
{
    return m == CV_QUANT_STATIC_RANGE    ? PASS_Q_STATIC_RANGE
           : m == CV_QUANT_DYNAMIC_RANGE ? PASS_Q_DYNAMIC_RANGE
                                         : PASS_Q_WEIGHT_ONLY;
}

/* ------------------------------------------------------------ the record */

/* "per tensor (scale 0.0021)" or "per channel (512 scales in [a, b])". */
static void scales_text(const cv_qop *q, char *buf, size_t n)
{
    if (q->n_scales == 1) {
        snprintf(buf, n, "per tensor (scale %.3g)", q->w_scales[0]);
        return;
    }
    float lo = q->w_scales[0], hi = q->w_scales[0];
    for (int64_t c = 1; c < q->n_scales; c++) {
        lo = fminf(lo, q->w_scales[c]);
        hi = fmaxf(hi, q->w_scales[c]);
    }
    snprintf(buf, n, "per channel (%lld scales in [%.3g, %.3g])", (long long)q->n_scales, lo,
             hi);
}

static void how_quantized(cv_quant_method m, const cv_qop *q, char *out, size_t out_len)
{
    char w[96], how[512];
    size_t n = sizeof how;
    scales_text(q, w, sizeof w);
    if (m == CV_QUANT_STATIC_RANGE)
        snprintf(how, n, "static range int8: weights %s; input scale %.3g zero point %d; "
                 "output scale %.3g zero point %d%s%s", w, q->in_scale, q->in_zero,
                 q->out_scale, q->out_zero, q->bias ? "; bias int32" : "",
                 q->relu ? "; relu folded" : "");
    else if (m == CV_QUANT_DYNAMIC_RANGE)
        snprintf(how, n, "dynamic range int8: weights %s; input scales at each call, %s", w,
                 q->product->in[0]->type.shape.rank == 2 ? "one per row" : "one per tensor");
    else
        snprintf(how, n, "weights only int8: weights %s, dequantized at use; float arithmetic",
                 w);
    snprintf(out, out_len, "%.*s", (int)out_len - 1, how);
}

static void describe(cv_quant_method m, const cv_qop *q, sm_quantized *r)
{
    const ir_node *p = q->product;
    memset(r, 0, sizeof *r);
    snprintf(r->op, sizeof r->op, "%s", rt_op_listed_name(p->opcode));
    snprintf(r->at, sizeof r->at, "%s:%d", p->loc.file ? p->loc.file : "<unknown>",
             p->loc.line);
    if (q->keep == CV_KEEP_QUANTIZED)
        how_quantized(m, q, r->how, sizeof r->how);
    else if (q->keep == CV_KEEP_SMALL)
        snprintf(r->how, sizeof r->how, "stays float: too small (%lld weight elements, fewer "
                 "than min_num_elements_for_weights)", (long long)q->weight_elements);
    else
        snprintf(r->how, sizeof r->how, "stays float: %s", cv_keep_reason(q->keep));
}

/* ------------------------------------------------------------ the report */

static void report_op(cv_qreport *rep, const char *function, const sm_quantized *what,
                      bool quantized, const cv_probe *probe)
{
    rep->quantized += quantized;
    rep->kept_float += !quantized;
    if (rep->n_ops == CV_MAX_QOPS) {
        rep->n_more++;
        return;
    }
    cv_qreport_op *o = &rep->ops[rep->n_ops++];
    snprintf(o->function, sizeof o->function, "%s", function);
    o->what = *what;
    o->quantized = quantized;
    o->measured = probe != NULL;
    if (probe)
        o->error = probe->a;
}

static void add_agreement(cv_agreement *to, const cv_agreement *a)
{
    to->samples += a->samples;
    to->max_abs = fmax(to->max_abs, a->max_abs);
    to->sum_sq_diff += a->sum_sq_diff;
    to->sum_sq_want += a->sum_sq_want;
    to->classified |= a->classified;
    to->rows += a->rows;
    to->agree += a->agree;
}

static int64_t variable_bytes(const ag_saved_model *m)
{
    int64_t bytes = 0;
    for (int k = 0; k < m->man->n_variables; k++) {
        const rt_value *v = sm_variable_value(m, k);
        bytes += v->numel * (int64_t)rt_dtype_size(v->dtype);
    }
    return bytes;
}

/* ---------------------------------------------------------- the rewrite */

typedef struct applied {
    pass_qproduct *p; /* the quantized products, in plan order */
    cv_probe *probes; /* the same, for the agreement */
    int n;
} applied;

static void collect(const cv_qfunction *f, applied *A)
{
    A->p = rt_xcalloc((size_t)f->plan.n + 1, sizeof *A->p);
    A->probes = rt_xcalloc((size_t)f->plan.n + 1, sizeof *A->probes);
    for (int i = 0; i < f->plan.n; i++) {
        const cv_qop *q = &f->plan.ops[i];
        if (q->keep != CV_KEEP_QUANTIZED)
            continue;
        A->p[A->n] = cv_qop_product(q);
        bool srq = f->plan.method == CV_QUANT_STATIC_RANGE;
        A->probes[A->n] = (cv_probe){.want_id = srq ? q->end->id : q->product->id,
                                     .scale = srq ? q->out_scale : 0, .zero = q->out_zero};
        A->n++;
    }
}

/* The agreement of the rewritten graph with float on f's data set. */
static bool measure(ag_saved_model *m, const cv_qfunction *f, const ir_function *original,
                    applied *A, cv_qreport *rep, char *err, size_t errlen)
{
    for (int k = 0; k < A->n; k++)
        A->probes[k].got_id = A->p[k].replaced_id;
    sm_signature *s = sm_find_signature(m->man, f->signature);
    const ag_signature_def *sig = &m->sigs[s - m->man->signatures];
    cv_agreement a;
    if (!cv_agreement_measure(original, f->graph, sig, f->dataset, &a, A->probes, A->n, err,
                              errlen))
        return false;
    add_agreement(&rep->outputs, &a);
    rep->n_measured++;
    return true;
}

/* The record and the report's lines of f's products. */
static void record(ag_saved_model *m, const cv_qfunction *f, const applied *A, cv_qreport *rep)
{
    sm_function *rec = &m->man->functions[f->fn];
    rec->n_quantized = 0;
    for (int i = 0, k = 0; i < f->plan.n; i++) {
        const cv_qop *q = &f->plan.ops[i];
        sm_quantized what;
        describe(f->plan.method, q, &what);
        if (rec->n_quantized < SM_MAX_QUANTIZED)
            rec->quantized[rec->n_quantized++] = what;
        bool quantized = q->keep == CV_KEEP_QUANTIZED;
        report_op(rep, rec->function, &what, quantized,
                  quantized && f->dataset ? &A->probes[k] : NULL);
        k += quantized;
    }
    rep->other_ops += f->plan.n_other_ops;
}

static bool apply_function(ag_saved_model *m, cv_qfunction *f, cv_qreport *rep, char *err,
                           size_t errlen)
{
    ir_function *original = f->dataset ? sm_function_graph(m, f->fn, err, errlen) : NULL;
    if (f->dataset && !original)
        return false;
    applied A = {0};
    collect(f, &A);
    bool ok = pass_quantize_products(f->graph, pass_method(f->plan.method), A.p, A.n, err,
                                     errlen) &&
              ir_verify(f->graph, err, errlen) &&
              (!original || measure(m, f, original, &A, rep, err, errlen));
    if (ok)
        record(m, f, &A, rep);
    ok = ok && sm_replace_function_graph(m, f->fn, f->graph, err, errlen);
    free(A.p);
    free(A.probes);
    if (original)
        ir_function_free(original);
    return ok;
}

bool cv_quantize_apply(ag_saved_model *m, cv_quantization *q, cv_qreport *rep, char *err,
                       size_t errlen)
{
    rep->on = true;
    snprintf(rep->method, sizeof rep->method, "%s", cv_quant_method_name(q->method));
    rep->bytes_before = variable_bytes(m);
    for (int k = 0; k < q->n; k++)
        if (!apply_function(m, &q->f[k], rep, err, errlen))
            return false;
    sm_drop_unread_variables(m);
    rep->bytes_after = variable_bytes(m);
    return true;
}
