/*
 * quantize.h - post-training quantization in the converter (prefix cv_;
 * docs/quantization.md, /work/shared/design/quantization.md).
 *
 *   calibrate.c  the float function run on every sample of the
 *                signature's representative data set by the reference
 *                executor, the ranges of the tensors quantized ops read
 *                and write recorded (min-max, average min-max, histogram
 *                percentile), the tensors no sample reached named
 *
 * The tensors are those of the products (matmul and conv2d of an f32
 * activation by a weight: a constant or a variable) and of their chains:
 * the product, then an add of a bias (a weight too) and a relu, each the
 * only reader of the one before it.
 */
#ifndef CV_QUANTIZE_H
#define CV_QUANTIZE_H

#include "model.h"
#include "options.h"

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

/* Whether n is a product the rewrite can quantize: an f32 matmul or
 * conv2d whose second operand is a weight (a constant or a variable's
 * read). */
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

#endif
