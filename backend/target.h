/*
 * target.h - the target interface (prefix tgt_): one place a graph can
 * run, as the compile pipeline sees it.
 *
 * A target says what it can do (its capabilities, pass_caps: native
 * dtypes, the ops it runs and the ops it fuses, its precision), compiles
 * an optimized graph with the analyses the passes computed for it into an
 * executable of its own, runs that executable, frees it, and estimates
 * what a call costs. It may also compile several graphs ahead of time
 * into one module (an object file, assembly, LLVM IR).
 *
 * The pipeline (pipeline/pipeline.h) and the function cache only ever
 * call these hooks; nothing above this layer names a target's insides.
 * The registry (target.c) lists the built-in targets - `reference` (the
 * interpreter of ir/exec.c, backend/reference/), `cpu` (LLVM,
 * backend/cpu/) and `tpu-model` (a simulated TPU, backend/tpu/) - and
 * takes more at run time (tgt_register), which is how tests add one
 * (tests/unit/test_targets.c, and tests/unit/test_device_target.c a
 * device) and how a target in a plug-in would. Each target is a folder
 * with its own map (its CMakeLists.txt); docs/architecture.md walks
 * through adding one.
 *
 * Per-op facts a target needs are its own: a table indexed by op with a
 * counted row for every op of ops.def (backend/cpu/ops_cpu.c,
 * backend/tpu/ops_tpu.c), which its caps.supports and caps.fuses read.
 * The shared op table has no target column; what it gives every target is
 * an op's cost class (rt_ops[op].cost). A device target (caps.supports
 * set) gets the nodes it supports placed on the device named by its name
 * (ir_node.device).
 */
#ifndef TGT_TARGET_H
#define TGT_TARGET_H

#include "pass.h"

/* How to compile. Both parts are the target's to read; the layers above
 * hand them down without looking inside (as ggml's backends take their
 * own params):
 *   config  the compile's settings (runtime/core/config.h), which the
 *           pipeline hands down; a target reads its own rows there (the
 *           cpu its CPU, triple, features and cache directory, the
 *           tpu-model its device spec and profiling). NULL: the settings
 *           in force when the target's entry is called directly (tests,
 *           tools).
 *   params  options of this one compile in the target's own text form,
 *           over what the settings give; NULL or "": none. A saved
 *           model's function carries them (sm_function.device_spec): for
 *           the tpu-model, fields of its device spec ("chips: 4 mesh { x:
 *           2 y: 2 } io_shapes: true", the converter's sharding and
 *           io_shape_optimization). */
typedef struct tgt_options {
    const rt_config *config;
    const char *params;
} tgt_options;

/* tgt_target.node_costs calls this for each node with what one call of
 * it costs (n NULL: the function's own inputs and outputs crossing to
 * and from the device). */
typedef void (*tgt_node_cost_fn)(void *ctx, const ir_node *n, double seconds);

/* What tgt_target.node_costs says about a whole call. */
typedef struct tgt_call_estimate {
    double seconds;     /* the modelled time (units overlap: not the nodes' sum) */
    int64_t host_bytes; /* over the host link, padding included */
    /* Work split over several chips: the chips, the time the call waits
     * on the links between them (of seconds), and how each product was
     * split ("matmul at mlp.c:12 split N (columns); ..."), for reports. */
    int chips;
    double link_seconds;
    char splits[1024];
} tgt_call_estimate;

/* A target's compiled form of one graph; only its target looks inside. */
typedef struct tgt_exe tgt_exe;

/* Why a compile failed: a message, and where in the user's source when
 * it is about one node (loc.file NULL: about the whole function). */
typedef struct tgt_diag {
    ag_loc loc;
    char msg[1024];
} tgt_diag;

/* What one call is estimated to cost (tgt_target.cost). Counts come from
 * static shapes (an unknown dim counts as 1); time from the target's own
 * model of itself. */
typedef struct tgt_cost {
    double flops;   /* arithmetic operations */
    double bytes;   /* bytes moved to and from memory */
    int ops;        /* graph nodes that run */
    double seconds; /* the estimate */
} tgt_cost;

/* ------------------------------------------------ ahead of time (emit) */

/* A parameter of the C function: a tensor (or tensor array), or a C
 * scalar of `bits` bits (1 for bool; 32 or 64 for floating point). */
typedef struct tgt_aot_param {
    const char *name;
    ag_arg_kind kind;
    int bits;
    bool is_signed;
} tgt_aot_param;

/* One function to compile ahead of time: its optimized graph and the C
 * prototype the object gives it. */
typedef struct tgt_aot_function {
    const char *name;      /* the C function the object defines */
    const char *file;      /* where the user defined it */
    int line;
    const char *signature; /* what it is compiled for */
    const ir_function *graph;
    int n_params;
    const tgt_aot_param *params;
    int n_outputs;
    bool returns_struct; /* the outputs are the fields of a struct */
} tgt_aot_function;

typedef enum tgt_emit_kind { TGT_EMIT_OBJECT, TGT_EMIT_ASM, TGT_EMIT_LLVM } tgt_emit_kind;

/* ------------------------------------------------------------ a target */

typedef struct tgt_target {
    const char *name;    /* what AG_TARGET, agc --target and ag_set_target take */
    const char *summary; /* one line, for listings */
    const char *device;  /* how messages name it: "the TPU" (NULL: "the target 'NAME'") */
    /* When compile fails: a hint for unsupported ops, and whether the
     * graph may then run on the reference target instead (as the cpu
     * target's does); else the failure is the user's error. */
    const char *unsupported_hint;
    bool falls_back;
    pass_caps caps;      /* what the passes plan for; caps.target is the name */

    /* Compiles fn, which the pipeline has verified and optimized; am holds
     * the analyses of fn as it is (computed on demand, once). fn and am
     * outlive the executable. NULL with the reason in *d when fn is
     * beyond the target. */
    tgt_exe *(*compile)(const ir_function *fn, pass_analyses *am, const tgt_options *o,
                        tgt_diag *d);
    /* ir_execute's contract: one value per parameter; on success one new
     * value per result and true; false after reporting the error at the
     * failing node's location. Reentrant. */
    bool (*run)(const tgt_exe *x, rt_value *const *args, int n_args, rt_value **results);
    void (*free)(tgt_exe *x);
    /* What one call of fn is estimated to cost on this target. */
    tgt_cost (*cost)(const ir_function *fn, pass_analyses *am);
    /* Optional: what one call of x costs, node by node, from the target's
     * model of itself (a loop's body counted once): visit(ctx, node,
     * seconds) for each node that costs anything, and the whole call in
     * *whole. False when x cannot say (a shape known only at the call).
     * The converter's report splits a model's cost by function with it. */
    bool (*node_costs)(const tgt_exe *x, tgt_node_cost_fn visit, void *ctx,
                       tgt_call_estimate *whole);
    /* Optional: writes the compiled form for people (agc --emit=tpu). */
    void (*print)(const tgt_exe *x, FILE *out);
    /* Optional: whether the target can compile for o (its CPU, say);
     * false with the reason in err. The pipeline asks before tracing when
     * the environment chose the options (AG_CPU), so that a bad name is
     * an error rather than a quiet fallback to the reference target. */
    bool (*check_options)(const tgt_options *o, char *err, size_t errlen);

    /* Optional (NULL: the target has no ahead-of-time form). Compiles fns
     * into one module and returns it in *out (malloc'ed, *len bytes);
     * false with a message in err. */
    bool (*emit)(const tgt_aot_function *fns, int n, const tgt_options *o, tgt_emit_kind kind,
                 char **out, size_t *len, char *err, size_t errlen);
} tgt_target;

/* ------------------------------------------------------------ registry */

/* The targets, built-in first; NULL past the end. */
const tgt_target *tgt_at(int i);
/* The target named `name`, or NULL. */
const tgt_target *tgt_find(const char *name);
/* Adds a target (it must outlive the process's use of it); false if its
 * name is taken or the registry is full. */
bool tgt_register(const tgt_target *t);
/* "reference, cpu", for messages that list the choices. */
const char *tgt_names(char *buf, size_t n);
/* The target's name closest to a mistyped one (support/suggest.h), or
 * NULL when none is close: the "did you mean" of an unknown target. */
const char *tgt_suggest(const char *name);

/* The cost counts of fn's live nodes (flops, bytes of values computed and
 * read, nodes), with seconds left 0: the part of an estimate every target
 * shares. */
tgt_cost tgt_count_cost(const ir_function *fn, pass_analyses *am);

#endif /* TGT_TARGET_H */
