/*
 * convert.h - the inference converter (prefix cv_): a saved model in, a
 * saved model prepared for serving on the TPU-model out (docs/converter.md).
 *
 *   select   which functions go to the TPU (select.c): by alias, concrete
 *            name, signature or jit_compile mark; the duplicate-selection
 *            and indirect-call errors
 *   place    each function's record: target tpu-model, the inlined
 *            functions placed (device scopes), soft placement
 *   convert  bf16 (the pass's options, through the records), I/O shapes
 *   check    every function compiles for its placement, now, so that an
 *            op the TPU cannot run is an error at the user's C line
 *   cost     the TPU-model's cost model, node by node, split by function
 *            (report.c), with and without the optimizations
 *   write    the output model, with the report and the options in it,
 *            never at, in or above the input (cv_check_output_dir)
 */
#ifndef CV_CONVERT_H
#define CV_CONVERT_H

#include "model.h"
#include "options.h"

/* What the report needs of one TPU function. */
typedef struct cv_tpu_cost {
    char name[SM_NAME]; /* its alias, else its function's name */
    double seconds;     /* per call, its nodes' costs */
} cv_tpu_cost;

/* A TPU function run on several chips (xla_sharding_options): its call's
 * time, of it the time waiting on the links between chips, and how each
 * product was split. */
enum { CV_MAX_SHARDED = 16 };
typedef struct cv_sharded {
    char name[SM_NAME];
    int chips;
    double seconds, link_seconds;
    char splits[1024];
} cv_sharded;

enum { CV_MAX_BATCH_NOTES = 8 };

/* How close a converted function's results are to the original's on a
 * data set (agreement.c). */
typedef struct cv_agreement {
    int64_t samples;
    double max_abs;                  /* over every f32 value compared */
    double sum_sq_diff, sum_sq_want; /* for the relative RMS */
    bool classified;                 /* an output was f32 [rows, classes > 1] */
    int64_t rows, agree;             /* of such outputs: rows, and rows whose argmax agree */
} cv_agreement;

/* The quantization part of the report: a line per product of the
 * quantized functions (the first CV_MAX_QOPS; n_more counts the rest). */
enum { CV_MAX_QOPS = 64 };
typedef struct cv_qreport_op {
    char function[SM_NAME];
    sm_quantized what;   /* the op, its line, how (the function's record) */
    bool quantized;
    bool measured;       /* its error against float on the data set: */
    cv_agreement error;
} cv_qreport_op;

typedef struct cv_qreport {
    bool on;
    char method[32];
    int n_ops, n_more;
    cv_qreport_op ops[CV_MAX_QOPS];
    int quantized, kept_float, other_ops;
    int64_t bytes_before, bytes_after;  /* the model's variables (weights) */
    double call_float, call_int8;       /* simulated time per call, all functions */
    int n_measured;                     /* functions whose outputs were compared: */
    cv_agreement outputs;
} cv_qreport;

typedef struct cv_report {
    int batch;                  /* unknown dims were costed at this size */
    double cpu_seconds;         /* nodes placed on the host, in every function */
    int n_tpu;
    cv_tpu_cost tpu[SM_MAX_FUNCTIONS * SM_MAX_SCOPES];
    double call_before, call_after; /* simulated time per call of the signatures */
    int64_t link_before, link_after; /* host link bytes per call */
    int bf16_ops;               /* ops computing in bf16 after the pass */
    int bf16_by_op[RT_OP_COUNT]; /* of them, by op (the report names them) */
    bool bf16, io_shapes;       /* the optimizations that ran */
    int n_batched;              /* functions whose calls are batched */
    int n_batched_in_graph;     /* of them, in front of their TPU nodes */
    /* Functions the options batched in the graph whose cut does not exist,
     * batched at their inputs instead: why, for the report (the first
     * CV_MAX_BATCH_NOTES; n_batch_notes counts them all). */
    int n_batch_notes;
    char batch_note[CV_MAX_BATCH_NOTES][1280];
    char device[64];            /* the device spec's name */
    cv_qreport quant;           /* quantization_options (quant.on) */
    char slice[SM_NAME];        /* the TPU functions' chips and mesh ("": one chip) */
    int n_sharded;
    cv_sharded sharded[CV_MAX_SHARDED];
} cv_report;

/* A selection: function fn of the model, whole (scope NULL) or only the
 * inlined function `scope` in it. */
typedef struct cv_choice {
    int fn;
    const char *scope;
    bool soft;
    char by[2 * CV_NAME_BYTES]; /* how the options chose it, for messages */
} cv_choice;

/* The device target the converter places TPU functions on: the target
 * registry's name for it (backend/target.h), and the only place the
 * converter spells it. */
#define CV_DEVICE_TARGET "tpu-model"

/* Whether f's record places it on CV_DEVICE_TARGET. */
bool cv_on_device(const sm_function *f);

/* The simulated time per call of all of m's functions, as their records
 * place them, with unknown dimensions at `batch` (report.c). False after
 * reporting. */
bool cv_cost_call(ag_saved_model *m, int batch, double *seconds);

/* shard.c: the device spec fields (`chips: 4 mesh { x: 2 y: 2 }`) of the
 * slice xla_sharding_options gives a replica, into spec ("": one chip).
 * False with "source:line:col: ..." in err for what the TPU-model
 * cannot run (chips of several cores, a replica that is no rectangle). */
bool cv_sharding_spec(const cv_options *o, const char *source, char *spec, size_t n, char *err,
                      size_t errlen);

/* A message about the options in err: "source:line:col: " when `at` is a
 * place in them (line 0: none), then the formatted text. False, for
 * returning. */
bool cv_error(char *err, size_t errlen, const char *source, tp_loc at, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Whether o converts anything: tpu_functions, batch_options or bf16 of
 * every function. False with a message saying what to add (empty.c). */
bool cv_check_converts(const ag_saved_model *m, const cv_options *o, const char *source,
                       char *err, size_t errlen);

/* Applies o's tpu_functions to m's records (target, device scopes, soft
 * placement). False with the message in err ("source:line:col: ..." when
 * it is about one option). */
bool cv_select(ag_saved_model *m, const cv_options *o, const char *source, char *err,
               size_t errlen);

/* Costs m as its records now say, into r (report.c). False after
 * reporting a function that does not compile for its placement. */
bool cv_cost(ag_saved_model *m, const cv_options *o, cv_report *r);

/* The report in converter.md §6's form, and what each optimization did. */
void cv_report_print(const cv_report *r, FILE *out);

/* Whether out may take the converted model of the model at in: not the
 * input itself, nor inside it, nor a directory holding it, compared by
 * identity (device and inode after resolving links), so no spelling of
 * the input gets past. False with a message naming both. */
bool cv_check_output_dir(const char *in, const char *out, char *err, size_t errlen);

/* The whole conversion: options already read; writes out_dir, prints
 * the report to `print` and stores it in *report (each may be NULL).
 * False after reporting. */
bool cv_convert(ag_saved_model *m, const cv_options *o, const char *source,
                const char *out_dir, FILE *print, cv_report *report);

#endif
