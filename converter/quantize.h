/*
 * quantize.h - post-training quantization in the converter (prefix cv_;
 * docs/quantization.md, /work/shared/design/quantization.md).
 *
 *   calibrate.c  the float function run on every sample of the
 *                signature's representative data set by the reference
 *                executor, the ranges of the tensors quantized ops read
 *                and write recorded (min-max, average min-max, histogram
 *                percentile), the tensors no sample reached named
 *   agreement.c  a converted function's outputs against the original's on
 *                a data set: max abs and relative RMS error, argmax
 *                agreement of a classification
 *   quantize.c   the plan: for every product of the function, whether it
 *                is quantized and how (its weight in int8 with its
 *                scales, its activations' scales and zero points), or
 *                why it stays float; the arithmetic of the scales
 *
 * The tensors are those of the products (matmul and conv2d of an f32
 * activation by a weight: a constant or a variable) and of their chains:
 * the product, then an add of a bias (a weight of one value or one per
 * output channel) and a relu, each the only reader of the one before it.
 */
#ifndef CV_QUANTIZE_H
#define CV_QUANTIZE_H

#include "convert.h"
#include "model.h"
#include "options.h"
#include "pass.h"

/* The fixed histogram of HISTOGRAM_PERCENTILE: this many bins of equal
 * width over [-bound, bound), bound a power of two that doubles (two
 * bins merging into one) when a value falls outside. */
enum { CV_HISTOGRAM_BINS = 2048 };

/* What calibration saw of one tensor (a node of the calibrated graph). */
typedef struct cv_observed {
    const ir_node *node;
    bool in_branch;      /* inside a staged if's branch or a loop's body */
    int64_t samples;     /* the samples in which it was computed */
    double min, max;     /* over every value of every sample */
    double sum_min, sum_max; /* each sample's min and max, summed */
    double sample_min, sample_max; /* of the current sample */
    int64_t last_sample; /* the sample sample_min and _max are of; -1 none */
    double bound;        /* the histogram covers [-bound, bound) */
    int64_t *hist;       /* CV_HISTOGRAM_BINS counts, malloc'ed */
    int64_t n_values;
} cv_observed;

typedef struct cv_calibration {
    int n;
    cv_observed *t;
    int64_t n_samples;
} cv_calibration;

/* Whether n is a product the rewrite can quantize: an f32 matmul of
 * matrices or conv2d (NHWC by HWIO) whose second operand is a weight (a
 * constant or a variable's read). */
bool cv_is_quantizable_product(const ir_node *n);
/* The last node of product p's chain: p, then its only reader if it is
 * an add of a weight (the bias), then that one's only reader if it is a
 * relu. Readers are counted in fn, regions included. */
const ir_node *cv_chain_end(const ir_function *fn, const ir_node *p);

/*
 * Runs fn (the float graph of signature sig's function, parameters in
 * the signature's inputs' order) on every sample of the data set at
 * path (sm_dataset_read: checked against sig, located errors naming the
 * file and record; fewer than 200 samples warn), and records into *c the
 * ranges of every quantizable product's activation and chain end. False
 * with the message in err (a sample the function fails on names it).
 */
bool cv_calibrate(const ir_function *fn, const ag_signature_def *sig, const char *path,
                  cv_calibration *c, char *err, size_t errlen);
void cv_calibration_free(cv_calibration *c);

/* Adds the values v of sample `sample` to t (f32; NaN and infinities
 * have no range and are left out). */
void cv_record_value(cv_observed *t, int64_t sample, const rt_value *v);

/* A tensor's range under opt's method: min-max, the mean of each
 * sample's min and max, or the histogram's percentiles (kept within
 * min-max); false for a tensor no sample reached. */
bool cv_observed_range(const cv_observed *t, const cv_calibration_options *opt, double *lo,
                       double *hi);
/* The observation of node n, or NULL if n is not one calibration makes. */
const cv_observed *cv_observed_of(const cv_calibration *c, const ir_node *n);

/* ------------------------------------------------------------- agreement.c */

/* (cv_agreement is in convert.h: the report keeps one.) */

/* A node of the original function and the one standing for it in the
 * converted function (a quantized chain's end, or product; for static
 * range its int8, dequantized for the comparison), compared on every
 * sample into a. */
typedef struct cv_probe {
    int want_id, got_id;
    float scale;   /* > 0: got is int8, compared as (got - zero) x scale */
    int32_t zero;
    cv_agreement a;
} cv_probe;

/* Runs both functions (the same parameters and results) on every sample
 * of the data set at path (read against sig) and compares their f32
 * outputs into *a, and the probes' nodes into each probe's a. False with
 * the message in err. */
bool cv_agreement_measure(const ir_function *original, const ir_function *converted,
                          const ag_signature_def *sig, const char *path, cv_agreement *a,
                          cv_probe *probes, int n_probes, char *err, size_t errlen);
/* sqrt(sum (converted - original)^2 / sum original^2); 0 when both are 0. */
double cv_agreement_relative_rms(const cv_agreement *a);

/* -------------------------------------------------------------- quantize.c */

/* Symmetric int8 of the weight w (its last axis the output channels:
 * matmul's [K, N], conv2d's HWIO): scale absmax / 127 per tensor (one
 * scale) or per channel (n_channels scales; an all-zero channel gets
 * scale 1), q = round(w / scale) (half away from zero) in [-127, 127]. */
void cv_quantize_weight(const float *w, int64_t numel, int64_t n_channels, bool per_channel,
                        float *scales, int8_t *q);

/* Asymmetric int8 of an activation whose range is [lo, hi]: the range
 * widened to include 0, scale (hi - lo) / 255 (1 for a zero-width
 * range), zero point -128 - lo / scale rounded and clamped to
 * [-128, 127]. */
void cv_activation_params(double lo, double hi, float *scale, int32_t *zero_point);

/* Why a product stays float (CV_KEEP_QUANTIZED: it does not). */
typedef enum cv_keep {
    CV_KEEP_QUANTIZED,
    CV_KEEP_SMALL,     /* its weight has fewer elements than the threshold */
    CV_KEEP_UNREACHED, /* static range: no sample computed it */
} cv_keep;

/* One product of the function and what quantization makes of it. */
typedef struct cv_qop {
    const ir_node *product, *bias, *end; /* bias: the add, or NULL */
    bool relu;                           /* end is a relu */
    cv_keep keep;
    int64_t weight_elements;
    int64_t n_scales;   /* the weight's: 1 or its channels */
    float *w_scales;    /* malloc'ed */
    int8_t *wq;         /* the int8 weight, malloc'ed */
    float in_scale, out_scale; /* static range: the activations' */
    int32_t in_zero, out_zero;
} cv_qop;

typedef struct cv_qplan {
    cv_quant_method method;
    int n;
    cv_qop *ops;
    int n_other_ops; /* ops that are not quantizable products: stay float */
} cv_qplan;

/* The plan for fn under o's quantization options, with c the static
 * range calibration (NULL otherwise). A product no sample reached stays
 * float with a warning naming its C line, or, with unreached_branches:
 * FAIL, the plan fails with that message in err. */
bool cv_quant_plan(const ir_function *fn, const cv_options *o, const cv_calibration *c,
                   cv_qplan *p, char *err, size_t errlen);
void cv_qplan_free(cv_qplan *p);
/* A quantized product of a plan as the rewrite takes it (passes/pass.h). */
pass_qproduct cv_qop_product(const cv_qop *q);
/* Why a product stays float, for the report and `agc-model show`. */
const char *cv_keep_reason(cv_keep k);

/* One quantized signature's function: its float graph, planned (the
 * plan's nodes are this graph's), with its calibration. */
typedef struct cv_qfunction {
    int fn;                 /* the model's function */
    const char *signature;  /* the first signature naming it */
    const char *dataset;    /* the signature's data set's path; NULL: none */
    ir_function *graph;
    cv_calibration calibration;
    cv_qplan plan;
} cv_qfunction;

typedef struct cv_quantization {
    cv_quant_method method;
    int n;
    cv_qfunction f[CV_MAX_SIGNATURE_KEYS];
} cv_quantization;

/*
 * The plans of every signature o quantizes (signature_keys): each one the
 * model has (else an error at its key, with the names it has and a close
 * one suggested), its data set's file readable, its function calibrated
 * (static range) and planned, once per function. False with
 * "source:line:col: ..." (or the data set's or the plan's message) in err.
 */
bool cv_quantize_plans(ag_saved_model *m, const cv_options *o, const char *source,
                       cv_quantization *q, char *err, size_t errlen);
void cv_quantization_free(cv_quantization *q);

/* --------------------------------------------------------- quantize_apply.c */

/*
 * Rewrites every planned function of m into int8 ops (passes/quantize.c),
 * its record listing what was made of each product (sm_quantized), and
 * fills rep: a line per product, with its error against float on the
 * function's data set when it has one, the outputs' agreement, the
 * weights' bytes before and after (the variables no function reads any
 * more are dropped). False with a message in err.
 */
bool cv_quantize_apply(ag_saved_model *m, cv_quantization *q, cv_qreport *rep, char *err,
                       size_t errlen);

#endif
