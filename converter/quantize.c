/*
 * quantize.c - the quantization plan (quantize.h): for every product of a
 * function (matmul or conv2d of an f32 activation by a weight), its
 * weight in int8 with its scales and, for static range, its activations'
 * scales and zero points from the calibrated ranges; or why it stays
 * float. The arithmetic is quantization.md's: symmetric weights in
 * [-127, 127], asymmetric activations in [-128, 127] with a zero point.
 */
#include "quantize.h"

#include "convert.h"
#include "rt.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ arithmetic */

static int8_t to_int8(double x, double scale, int lo, int hi)
{
    double r = round(x / scale); /* half away from zero */
    return (int8_t)(r < lo ? lo : r > hi ? hi : r);
}

void cv_quantize_weight(const float *w, int64_t numel, int64_t n_channels, bool per_channel,
                        float *scales, int8_t *q)
{
    int64_t n_scales = per_channel ? n_channels : 1;
    for (int64_t c = 0; c < n_scales; c++)
        scales[c] = 0;
    for (int64_t i = 0; i < numel; i++) {
        float *s = &scales[per_channel ? i % n_channels : 0];
        *s = fmaxf(*s, fabsf(w[i]));
    }
    for (int64_t c = 0; c < n_scales; c++)
        scales[c] = scales[c] > 0 ? scales[c] / 127 : 1;
    for (int64_t i = 0; i < numel; i++)
        q[i] = to_int8(w[i], scales[per_channel ? i % n_channels : 0], -127, 127);
}

void cv_activation_params(double lo, double hi, float *scale, int32_t *zero_point)
{
    lo = fmin(lo, 0);
    hi = fmax(hi, 0);
    double s = (hi - lo) / 255;
    if (!(s > 0))
        s = 1;
    double z = round(-128 - lo / s);
    *scale = (float)s;
    *zero_point = (int32_t)(z < -128 ? -128 : z > 127 ? 127 : z);
}

/* ------------------------------------------------------------------ plan */

const char *cv_keep_reason(cv_keep k)
{
    static const char *const why[] = {"quantized", "too small",
                                      "unreached branch (no sample computed it)"};
    return why[k];
}

/* The value of a weight node: a constant's literal or a variable's. */
static const rt_value *weight_value(const ir_node *n)
{
    if (n->opcode == RT_OP_CONST)
        return n->attrs.literal;
    const rt_variable *v = n->attrs.ref;
    return v ? v->value : NULL;
}

/* The observations of the product's input and chain end, if any sample
 * computed both. */
static bool reached(const cv_calibration *c, const cv_qop *q)
{
    const cv_observed *in = cv_observed_of(c, q->product->in[0]);
    const cv_observed *out = cv_observed_of(c, q->end);
    return in && out && in->samples > 0 && out->samples > 0;
}

static void activation_params(const cv_options *o, const cv_calibration *c, cv_qop *q)
{
    const cv_calibration_options *opt =
        &o->external_feature_configs.quantization_options.calibration_options;
    double lo, hi;
    cv_observed_range(cv_observed_of(c, q->product->in[0]), opt, &lo, &hi);
    cv_activation_params(lo, hi, &q->in_scale, &q->in_zero);
    cv_observed_range(cv_observed_of(c, q->end), opt, &lo, &hi);
    cv_activation_params(lo, hi, &q->out_scale, &q->out_zero);
}

static void quantize_weight(const cv_options *o, cv_qop *q)
{
    const rt_value *w = weight_value(q->product->in[1]);
    bool per_channel =
        o->external_feature_configs.quantization_options.enable_per_channel_quantization;
    int64_t channels = w->shape.rank ? w->shape.dims[w->shape.rank - 1] : 1;
    q->n_scales = per_channel ? channels : 1;
    q->w_scales = rt_xcalloc((size_t)q->n_scales, sizeof *q->w_scales);
    q->wq = rt_xcalloc((size_t)w->numel + 1, sizeof *q->wq);
    cv_quantize_weight(w->data, w->numel, channels, per_channel, q->w_scales, q->wq);
}

/* The unreached product's message: warned, or the plan's error. */
static bool unreached(const cv_options *o, const cv_qop *q, char *err, size_t errlen)
{
    const ir_node *n = q->product;
    const char *file = n->loc.file ? n->loc.file : "<unknown>";
    const char *what = n->graph->parent ? "in a branch or loop body that no sample reached"
                                        : "never computed on the data set";
    if (o->external_feature_configs.quantization_options.unreached_branches == CV_UNREACHED_FAIL) {
        snprintf(err, errlen,
                 "%s:%d: static range quantization: this %s is %s, so it has no range; make "
                 "the representative data set reach it, or give unreached_branches: "
                 "KEEP_FLOAT to keep it float",
                 file, n->loc.line, ir_opcode_name(n->opcode), what);
        return false;
    }
    rt_warn(n->loc, "static range quantization: this %s is %s; it stays float",
            ir_opcode_name(n->opcode), what);
    return true;
}

/* Fills q for product n; false only for an unreached product that fails. */
static bool plan_op(const ir_function *fn, const cv_options *o, const cv_calibration *c,
                    const ir_node *n, cv_qop *q, char *err, size_t errlen)
{
    memset(q, 0, sizeof *q);
    q->product = n;
    q->end = cv_chain_end(fn, n);
    q->relu = q->end->opcode == RT_OP_RELU;
    const ir_node *before_relu = q->relu ? q->end->in[0] : q->end;
    q->bias = before_relu != n ? before_relu : NULL;
    q->weight_elements = weight_value(n->in[1]) ? weight_value(n->in[1])->numel : 0;
    if (q->weight_elements == 0 || q->weight_elements < cv_min_weight_elements(o)) {
        q->keep = CV_KEEP_SMALL;
        return true;
    }
    if (c && !reached(c, q)) {
        q->keep = CV_KEEP_UNREACHED;
        return unreached(o, q, err, errlen);
    }
    quantize_weight(o, q);
    if (c)
        activation_params(o, c, q);
    return true;
}

static bool plan_graph(const ir_function *fn, const ir_graph *g, const cv_options *o,
                       const cv_calibration *c, cv_qplan *p, char *err, size_t errlen)
{
    for (const ir_node *n = g->first; n; n = n->next) {
        if (cv_is_quantizable_product(n)) {
            p->ops = rt_xrealloc(p->ops, (size_t)(p->n + 1) * sizeof *p->ops);
            if (!plan_op(fn, o, c, n, &p->ops[p->n++], err, errlen))
                return false;
        } else if (n->opcode < RT_OP_COUNT && n->opcode != RT_OP_CONST) {
            p->n_other_ops++;
        }
        for (int r = 0; r < 2; r++)
            if (n->region[r] && !plan_graph(fn, n->region[r], o, c, p, err, errlen))
                return false;
    }
    return true;
}

bool cv_quant_plan(const ir_function *fn, const cv_options *o, const cv_calibration *c,
                   cv_qplan *p, char *err, size_t errlen)
{
    memset(p, 0, sizeof *p);
    p->method = cv_quantization_method(o);
    return plan_graph(fn, fn->body, o, c, p, err, errlen);
}

void cv_qplan_free(cv_qplan *p)
{
    for (int i = 0; i < p->n; i++) {
        free(p->ops[i].w_scales);
        free(p->ops[i].wq);
    }
    free(p->ops);
    memset(p, 0, sizeof *p);
}

pass_qproduct cv_qop_product(const cv_qop *q)
{
    return (pass_qproduct){.product = (ir_node *)q->product, .bias = (ir_node *)q->bias,
                           .end = (ir_node *)q->end, .relu = q->relu, .n_scales = q->n_scales,
                           .w_scales = q->w_scales, .wq = q->wq, .in_scale = q->in_scale,
                           .out_scale = q->out_scale, .in_zero = q->in_zero,
                           .out_zero = q->out_zero};
}

/* ----------------------------------------------------------- the model */

/* Signature sig_index's function calibrated (static range) and planned
 * into a new entry of q (none when another signature planned it). */
static bool plan_signature(ag_saved_model *m, const cv_options *o, int sig_index,
                           cv_quantization *q, char *err, size_t errlen)
{
    const ag_signature_def *sig = &m->sigs[sig_index];
    int fi = sm_function_index(m, m->man->signatures[sig_index].function);
    for (int k = 0; k < q->n; k++)
        if (q->f[k].fn == fi)
            return true;
    ir_function *fn = sm_function_graph(m, fi, err, errlen);
    if (!fn)
        return false;
    cv_qfunction *f = &q->f[q->n++];
    const cv_dataset_entry *d = cv_dataset_of(o, sig->name);
    *f = (cv_qfunction){.fn = fi, .signature = sig->name, .graph = fn,
                        .dataset = d ? d->value.tfrecord_file_path : NULL};
    bool calibrate = q->method == CV_QUANT_STATIC_RANGE;
    if (calibrate && !cv_calibrate(fn, sig, f->dataset, &f->calibration, err, errlen))
        return false;
    return cv_quant_plan(fn, o, calibrate ? &f->calibration : NULL, &f->plan, err, errlen);
}

bool cv_quantize_plans(ag_saved_model *m, const cv_options *o, const char *source,
                       cv_quantization *q, char *err, size_t errlen)
{
    const cv_quantization_options *qo = &o->external_feature_configs.quantization_options;
    const char *names[CV_MAX_SIGNATURE_KEYS];
    int n = cv_quantized_signatures(o, names);
    memset(q, 0, sizeof *q);
    q->method = cv_quantization_method(o);
    if (q->method == CV_QUANT_NONE)
        return true;
    if (!cv_check_dataset_files(o, source, err, errlen))
        return false;
    for (int k = 0; k < n; k++) {
        sm_signature *sig = sm_find_signature(m->man, names[k]);
        char have[512], hint[300];
        if (!sig) {
            sm_names_for(m->man, SM_SIGNATURES, names[k], have, sizeof have, hint, sizeof hint);
            tp_loc at = qo->n_signature_keys ? qo->at.signature_keys[k]
                                             : o->external_feature_configs.at.quantization_options;
            return cv_error(err, errlen, source, at,
                            "quantization: the model has no signature '%s'; it has %s%s",
                            names[k], have, hint);
        }
        if (!plan_signature(m, o, (int)(sig - m->man->signatures), q, err, errlen))
            return false;
    }
    return true;
}

void cv_quantization_free(cv_quantization *q)
{
    for (int k = 0; k < q->n; k++) {
        cv_qplan_free(&q->f[k].plan);
        cv_calibration_free(&q->f[k].calibration);
        if (q->f[k].graph)
            ir_function_free(q->f[k].graph);
    }
    memset(q, 0, sizeof *q);
}
