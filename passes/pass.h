/*
 * pass.h - optimization passes over the graph IR (prefix pass_).
 *
 * A pass is a function `bool pass_NAME(ir_function *, pass_ctx *)` that
 * rewrites a function in place and returns whether it changed anything.
 * One table in manager.c registers every pass (name, function, one-line
 * summary); the pass manager runs them by name, and pass_run_default lists
 * the default pipeline. Every pass keeps the IR valid (ir_verify), keeps
 * the effect chain's order, and changes no result the reference executor
 * computes (docs/passes.md says what each pass assumes and guarantees).
 *
 * Passes plan for a target: its capabilities (pass_caps: which dtypes
 * its code computes on, which ops it runs and fuses) come with the
 * analysis manager (pass_analyses), which computes liveness and the
 * fusion and memory plans once per version of a function and drops them
 * when a pass changes it. The compile pipeline hands the same manager to
 * the target, so the plans a target follows are the ones the passes made.
 * Plans are side tables indexed by node id (ir.h is left as it is).
 */
#ifndef PASS_H
#define PASS_H

#include "config.h"
#include "ir.h"
#include "liveness.h"

/* ------------------------------------------------------ capabilities */

/* How a target computes floating point. */
typedef enum pass_precision {
    PASS_PRECISION_IEEE, /* as the reference executor: the same bits (NaN payloads aside) */
    PASS_PRECISION_BF16, /* products in bfloat16, sums in f32 (matrix units) */
} pass_precision;

/* What a target can do, as far as passes and the pipeline need to know.
 * Each target (backend/target.h) owns one. */
typedef struct pass_caps {
    const char *target;      /* its name, for messages and ir_node.device */
    unsigned native_dtypes;  /* bit (1u << dtype): its code computes on the dtype directly */
    /* Whether it runs op (an rt_op) on operands of dtype dt, from the
     * target's own op table. NULL: every op, and the target is the host
     * itself (cpu, reference). Non-NULL makes it a device target: the
     * place pass puts the nodes it supports on the device named by
     * `target` (ir_node.device), and the pipeline checks the rest. */
    bool (*supports)(int op, ag_dtype dt);
    /* Whether its loops compute the elementwise op fused with others;
     * NULL: nothing fuses (every node is a loop of its own). */
    bool (*fuses)(int op);
    pass_precision precision;
} pass_caps;

/* Whether caps' code computes on dt directly. */
bool pass_caps_native(const pass_caps *caps, ag_dtype dt);
/* The capabilities of no target in particular: every op, nothing fused.
 * What passes plan for when nobody names a target. */
extern const pass_caps pass_caps_none;

/* ----------------------------------------------------------- options */

/* What the bf16 pass converts (bf16.c). */
typedef enum pass_bf16_scope {
    PASS_BF16_SCOPE_ALL, /* the whole function */
    PASS_BF16_SCOPE_DEVICE, /* only the nodes placed on a device (place.c) */
} pass_bf16_scope;

/* How the bf16 pass treats elementwise ops (rt_ops[op].flags &
 * RT_F_ELEMENTWISE: arithmetic, comparisons, where, casts). */
typedef enum pass_bf16_elementwise {
    /* They compute in f32 between bf16 values: operands widen (exactly),
     * a value rounds once where a converted op or a bf16 result reads it,
     * as XLA and the TPU's vector unit do. */
    PASS_BF16_ELEMENTWISE_F32,
    /* They compute in bf16 like every other op: each result rounds, as
     * the eager bf16 kernels do. */
    PASS_BF16_ELEMENTWISE_BF16,
} pass_bf16_elementwise;

typedef struct pass_bf16_options {
    bool enabled;            /* the default pipeline converts (the pipeline sets it) */
    char filterlist[256];    /* op names kept in f32, separated by commas */
    pass_bf16_scope scope;
    bool io;                 /* the function's f32 parameters and results become bf16 */
    bool skip_safety_checks; /* convert a function that already computes in bf16 */
    pass_bf16_elementwise elementwise; /* the zero value, f32, is the default */
} pass_bf16_options;

/* How passes run. The manager reads a process-wide copy (pass_set_options)
 * at the start of every run, so agc-opt and tests set it once; the
 * pipeline gives each run its own (pass_run_with). */
typedef struct pass_options {
    /* The run's settings (AG_PASSES, AG_DUMP_IR, AG_BF16: passes, dump_ir,
     * bf16), the compile's snapshot; NULL: the settings in force when the
     * run starts. The run holds no reference: the caller keeps it alive. */
    const rt_config *config;
    const pass_caps *caps; /* pass_run_default's target (NULL: pass_caps_none) */
    bool verify_each;      /* ir_verify after every pass (default: debug builds) */
    bool print_after_all;  /* print the IR after every pass */
    char print_after[256]; /* comma-separated pass names to print after */
    bool fast_math;        /* simplify, cse may ignore NaN, inf, signed zeros */
    bool strict;           /* a pass's diagnostic fails the run (agc-opt) */
    FILE *trace;           /* where printing goes; NULL is stderr */
    pass_bf16_options bf16;
    bool soft_placement;   /* place: ops the device lacks run on the host */
    /* place: when n_device_scopes > 0, only nodes traced in these inlined
     * AG_FUNCTIONs (ir_node.scope, or inside it) go to the device; the
     * rest run on the host, through transfers (the converter's TPU
     * functions). The strings outlive the run. */
    const char *const *device_scopes;
    int n_device_scopes;
} pass_options;

/* The defaults: verify_each when NDEBUG is not defined, all else off. */
void pass_options_init(pass_options *o);
/* Sets the options later runs use (NULL: the defaults). */
void pass_set_options(const pass_options *o);
void pass_get_options(pass_options *o);

/* ------------------------------------------------------------ passes */

typedef struct pass_fusion_plan pass_fusion_plan;
typedef struct pass_memory_plan pass_memory_plan;

/* ----------------------------------------------------------- analyses */

/*
 * The analysis manager of one function (analysis.c): each analysis is
 * computed on first request and kept until the function changes. The pass
 * manager invalidates it after every pass that changed the function; code
 * that edits a function outside a pass run must invalidate it too.
 */
typedef struct pass_analyses pass_analyses;

typedef enum pass_analysis {
    PASS_ANALYSIS_LIVENESS,
    PASS_ANALYSIS_FUSION,
    PASS_ANALYSIS_MEMORY,
    PASS_N_ANALYSES
} pass_analysis;

/* caps must outlive the manager (NULL: pass_caps_none). */
pass_analyses *pass_analyses_new(const ir_function *fn, const pass_caps *caps);
void pass_analyses_free(pass_analyses *am);
const ir_function *pass_analyses_function(const pass_analyses *am);
const pass_caps *pass_analyses_caps(const pass_analyses *am);
const ir_liveness *pass_analyses_liveness(pass_analyses *am);
const pass_fusion_plan *pass_analyses_fusion(pass_analyses *am);
const pass_memory_plan *pass_analyses_memory(pass_analyses *am);
/* Forgets every result: the function changed. */
void pass_analyses_invalidate(pass_analyses *am);
/* How many times `a` was computed since the manager was made (tests
 * check that nothing is computed twice for one version). */
int pass_analyses_runs(const pass_analyses *am, pass_analysis a);

/* What a running pass sees besides the function. */
typedef struct pass_ctx {
    pass_options opt;
    bool failed;   /* a diagnostic was reported (err holds the first) */
    char err[1024];
    pass_analyses *am; /* the function's analyses, for its current version */
} pass_ctx;

typedef bool (*pass_fn)(ir_function *fn, pass_ctx *ctx);

bool pass_infer(ir_function *fn, pass_ctx *ctx);
bool pass_bf16(ir_function *fn, pass_ctx *ctx);
bool pass_place(ir_function *fn, pass_ctx *ctx);
/* Whether options o put n within the device's scopes (always, with none). */
bool pass_in_device_scope(const pass_options *o, const ir_node *n);

/* ----------------------------------------------------- split.c: cutting */

/* fn cut in three at the nodes traced in given scopes (split.c): the host
 * work before them (`pre`: fn's parameters, NULL when there is none), the
 * scopes' nodes (`middle`) and the host work after them (`post`: fn's
 * results). middle_in and post_in say where each parameter of the middle
 * and of post comes from. */
typedef enum pass_split_from { PASS_FROM_INPUT, PASS_FROM_PRE, PASS_FROM_MIDDLE } pass_split_from;
typedef struct pass_split_source {
    pass_split_from from;
    int index; /* fn's parameter, or the earlier part's result */
} pass_split_source;
typedef struct pass_split {
    ir_function *pre, *middle, *post;
    pass_split_source *middle_in, *post_in;
} pass_split;
/* false with a message (located at the user's line, starting with
 * `what`) when the scopes' nodes read host work that reads them, or fn's
 * body has none of them. */
bool pass_split_scopes(const ir_function *fn, const char *const *scopes, int n_scopes,
                       const char *what, pass_split *out, char *err, size_t errlen);
void pass_split_free(pass_split *s);
bool pass_fold(ir_function *fn, pass_ctx *ctx);
bool pass_simplify(ir_function *fn, pass_ctx *ctx);
bool pass_matpow(ir_function *fn, pass_ctx *ctx);
bool pass_cse(ir_function *fn, pass_ctx *ctx);
bool pass_licm(ir_function *fn, pass_ctx *ctx);
bool pass_dce(ir_function *fn, pass_ctx *ctx);
bool pass_fusion(ir_function *fn, pass_ctx *ctx);
bool pass_memplan(ir_function *fn, pass_ctx *ctx);

/* One row of the registration table. */
typedef struct pass_info {
    const char *name;
    pass_fn run;
    const char *summary;
} pass_info;

/* The table, in pipeline order, and lookups into it. */
int pass_count(void);
const pass_info *pass_at(int i);
const pass_info *pass_find(const char *name);
/* Prints "name  summary" for every pass. */
void pass_list(FILE *out);

/* ------------------------------------------------------------ running */

/*
 * The default pipeline: infer; bf16 when options.bf16.enabled (the
 * pipeline merges it; a run without the pipeline's options also takes
 * the setting bf16, AG_BF16); then fold, simplify, matpow, cse, licm,
 * infer, dce repeated until nothing changes (at most PASS_MAX_ROUNDS times); then,
 * for a device target (caps.supports), placement; then the fusion and memory
 * planning analyses. Called on every traced function.
 * Returns false only when a pass broke the IR (verify_each) or, with
 * options.strict, reported a diagnostic; pass_last_error() says why.
 *
 * Honors pass_set_pipeline_override, the setting passes (AG_PASSES) and
 * the setting dump_ir (AG_DUMP_IR): "1" prints the function before and
 * after the pipeline on stderr, any other non-empty value other than "0"
 * names a directory that receives <function>.<n>.before.ir and
 * <function>.<n>.after.ir. Each dump starts with the run's settings that
 * are not defaults, as "// config: name = value (source)" comments.
 */
enum { PASS_MAX_ROUNDS = 8 };
bool pass_run_default(ir_function *fn);

/* What the compile pipeline runs: `spec` (NULL: the default pipeline,
 * honoring the override and AG_DUMP_IR like pass_run_default) with am as
 * the function's analysis manager (NULL: one of the run's own), which then
 * holds the final plans, and opt as the options of this run (NULL: the
 * process-wide ones). */
bool pass_run_with(ir_function *fn, const char *spec, pass_analyses *am, const pass_options *opt);

/*
 * Runs a pipeline written as text: pass names separated by commas;
 * "default" is the default pipeline, "none" (or "") nothing, and
 * "fixpoint(a,b,...)" repeats its list until no pass in it changes
 * anything (at most PASS_MAX_ROUNDS times). False after an unknown name,
 * a malformed spec, or a failed pass; pass_last_error() says why.
 */
bool pass_run_spec(ir_function *fn, const char *spec);
/* Checks a spec without running it; false with a message in err. */
bool pass_check_spec(const char *spec, char *err, size_t errlen);

/* Makes pass_run_default run `spec` instead (NULL: the default again).
 * For tests that compare pipelines; the text is copied. */
void pass_set_pipeline_override(const char *spec);

/* The message of this thread's last failed run ("" if none). */
const char *pass_last_error(void);

/* ----------------------------------------------------------- analyses */

/*
 * Fusion planning: which elementwise nodes the backend computes together
 * in one loop nest (fusion.c says how clusters form). Every node that can
 * be a loop statement belongs to exactly one cluster, alone or fused;
 * the backend emits one loop per cluster, at its last member. A cluster
 * may compute several values that are read outside it.
 */
struct pass_fusion_plan {
    int n_ids;         /* size of the tables by id: fn->next_id when planned */
    int *cluster;      /* by node id: its cluster, or -1 */
    int *shape_key;    /* by node id: values of equal rank and key have the
                        * same shape at run time (for unknown dims) */
    bool *checked;     /* by node id: checks its operands' shapes or its data
                        * at run time; alone in its cluster */
    int n_clusters;    /* numbered 0.. in program order of their first node */
    int *cluster_size; /* by cluster: its number of members */
};
pass_fusion_plan *pass_fusion_plan_new(const ir_function *fn, const pass_caps *caps);
/* The same with fn's liveness already computed. */
pass_fusion_plan *pass_fusion_plan_build(const ir_function *fn, const pass_caps *caps,
                                         const ir_liveness *live);
void pass_fusion_plan_free(pass_fusion_plan *p);
/* Whether a and b have the same shape at run time, as far as the plan
 * can tell statically. */
bool pass_fusion_same_shape(const pass_fusion_plan *p, const ir_node *a, const ir_node *b);
/* Whether n can be a statement of one of caps' loop nests: an
 * elementwise op the target fuses, on dtypes native to it that the op
 * defines. */
bool pass_fusible(const pass_caps *caps, const ir_node *n);
/* Whether n may fail on some element: an op with RT_F_INT_DIVISOR
 * (integer div, floordiv, mod: by zero) or RT_F_INT_EXPONENT (integer
 * pow: a negative exponent) on integer operands. */
bool pass_fails_on_data(const ir_node *n);
/* "// loop 0: %3 mul, %4 add, %5 tanh" lines. */
void pass_fusion_plan_print(const pass_fusion_plan *p, const ir_function *fn, FILE *out);

/*
 * Memory planning: one buffer per computed tensor of known size, in
 * program order, a fusion loop's stored values where the loop runs (values
 * only read inside their loop own none); a buffer whose last use has
 * passed is reused by a later value of the same byte size, and an
 * elementwise op (or a loop storing one value) whose input dies at it
 * writes in place over that input. Constants, parameters, aliases
 * (reshape, expand_dims, squeeze share their input's buffer) and get
 * (a region's result) own no buffer. Each region is planned on its own.
 * The backend puts the buffers of small values in the generated
 * function's frame.
 */
struct pass_memory_plan {
    int n_ids;
    int *buffer;     /* by node id: its buffer, or -1 */
    bool *in_place;  /* by node id: written over a dying input's buffer */
    int *reused;     /* by node id: the node whose dead buffer it took, or -1 */
    int n_buffers;
    int64_t *buffer_bytes;
    int n_values;        /* values given a buffer */
    int n_in_place;
    int n_dynamic;       /* values of unknown size, left to run time */
    int64_t naive_bytes; /* one buffer per value */
    int64_t arena_bytes; /* the sum of the planned buffers */
    int64_t peak_bytes;  /* the most bytes live at once */
};
pass_memory_plan *pass_memory_plan_new(const ir_function *fn, const pass_caps *caps);
/* The same for loops already planned (fusion must be fn's current plan). */
pass_memory_plan *pass_memory_plan_new_fused(const ir_function *fn, const pass_fusion_plan *fusion);
void pass_memory_plan_free(pass_memory_plan *p);
void pass_memory_plan_print(const pass_memory_plan *p, const ir_function *fn, FILE *out);

/* ------------------------------------------------------- bf16 accuracy */

/* What a bf16 conversion cost on some inputs (bf16_report.c). */
enum { PASS_BF16_MAX_OUTPUTS = 16 };
typedef struct pass_bf16_report {
    int n_outputs;
    double max_abs[PASS_BF16_MAX_OUTPUTS]; /* by output: largest |f32 - bf16| */
    double max_rel[PASS_BF16_MAX_OUTPUTS]; /* and relative to |f32| */
    const ir_node *worst;                  /* where the error grows most (in bf16_fn) */
    double worst_growth;                   /* its relative error minus its operands' */
} pass_bf16_report;

/* Runs f32_fn and bf16_fn (its converted copy: converted nodes keep their
 * ids) on the reference executor with the same inputs and compares them.
 * False after reporting an error one of them raised. */
bool pass_bf16_report_run(const ir_function *f32_fn, const ir_function *bf16_fn,
                          rt_value *const *inputs, int n_inputs, pass_bf16_report *rep);
/* "// output 0: max abs error ..." lines. */
void pass_bf16_report_print(const pass_bf16_report *rep, FILE *out);

/* ------------------------------------------------------- int8 rewrite */

/* Post-training quantization's methods (docs/quantization.md). */
typedef enum pass_qmethod {
    PASS_Q_STATIC_RANGE,
    PASS_Q_DYNAMIC_RANGE,
    PASS_Q_WEIGHT_ONLY,
} pass_qmethod;

/* One product to quantize, as the converter planned it: a matmul [M,K] x
 * [K,N] or conv2d (HWIO) of an f32 activation by a weight, and its chain
 * (the add of its bias, a weight of 1 or N values; a relu), each the only
 * reader of the one before. */
typedef struct pass_qproduct {
    ir_node *product, *bias, *end; /* bias: NULL if none; end: the chain's last */
    bool relu;                     /* end is a relu */
    int64_t n_scales;              /* the weight's: 1, or its last dimension */
    const float *w_scales;
    const int8_t *wq;              /* the int8 weight, in the weight's shape */
    float in_scale, out_scale;     /* static range: the activations' */
    int32_t in_zero, out_zero;
    /* out: the node now computing end: static range's requantize (int8,
     * at out_scale and out_zero), else the product's replacement */
    int replaced_id;
} pass_qproduct;

/*
 * Rewrites fn's products p[0..n) (in graph order) into the int8 ops of
 * `method` (quantize.c), removes what they replaced, and drops from
 * fn->vars the variables no longer read (weights now int8 constants).
 * False with "file:line: ..." in err if an op refused its operands (fn
 * is then half rewritten: discard it).
 */
bool pass_quantize_products(ir_function *fn, pass_qmethod method, pass_qproduct *p, int n,
                            char *err, size_t errlen);

/* ------------------------------------------------------------ drawing */

/* Writes fn as a Graphviz dot graph (dot.c): one box per node with its
 * type and source line, the clusters of fusion plan `plan` and cond/while
 * regions as nested boxes, dashed effect edges. For people to read;
 * agc-opt --emit-dot, agc --emit=dot. */
void pass_print_dot(const ir_function *fn, const pass_fusion_plan *plan, FILE *out);

#endif /* PASS_H */
