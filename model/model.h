/*
 * model.h - saved models inside agc (prefix sm_): what ag.h's
 * ag_saved_model_* and ag_model_* calls, agc-model and agc-convert share.
 *
 *   save:  trace the signatures' functions (function cache), print their
 *          graphs, gather their variables -> sm_write
 *   load:  manifest -> variables.bin (sizes, checksums) -> each function's
 *          text IR (size, checksum, parse, variables bound, types)
 *   call:  the signature's function compiles once, through the one
 *          pipeline from its graph, for the target its record names
 *
 * A model's directory is written whole into a temporary directory beside
 * it and renamed into place, so a crash never leaves half a model.
 */
#ifndef SM_MODEL_H
#define SM_MODEL_H

#include "batch.h"
#include "manifest.h"
#include "pipeline.h"

#include <pthread.h>

/* One concrete function of a loaded model. */
typedef struct sm_loaded_function {
    sm_function *rec; /* in the model's manifest */
    char *text;       /* its text IR, as read and checked */
    pthread_mutex_t lock;
    bool tried;           /* compiled (or failed to) already */
    const char *scope_names[SM_MAX_SCOPES]; /* rec's device scopes, for requests */
    char target_params[SM_NAME + 32];       /* rec's options for its target, for requests */
    ag_batcher *batcher; /* rec->has_batch: what calls go through */
    pl_result compiled;   /* its graph, analyses and executable (in the
                             graph: the batched middle's) */
    int batch_inputs, batch_outputs; /* of what the batcher runs */
    /* Batched in the graph (rec->batch.in_graph): the host work before the
     * middle (pre.exe NULL: none) and after it, and where the middle's and
     * post's parameters come from (batch_split.c, passes/split.c). */
    pl_result pre, post;
    int n_pre_results;
    pass_split_source *middle_in, *post_in;
    char middle_names[BT_MAX_TENSORS][32]; /* the batcher's names of host values */
} sm_loaded_function;

struct ag_saved_model {
    char *dir;
    sm_manifest *man;
    ag_variable *vars; /* man->n_variables, the model's own */
    sm_loaded_function *fns;
    ag_signature_def *sigs; /* man->n_signatures, with their specs */
    ag_tensor_spec *specs;
    ag_saved_model *next; /* the models loaded, which ag_shutdown frees */
};

/* Writes a model: man's functions' texts are texts[i] (their bytes and
 * checksums are filled in), the variables' values vars[i] (offsets,
 * bytes, checksums filled in). Into "<dir>.tmp-<pid>", then renamed to
 * dir (an existing model there is replaced; anything else there is
 * refused). `extra` files (name, text) go in too (the conversion
 * report). False after reporting at loc; dir is then as it was. */
typedef struct sm_extra_file {
    const char *name;
    const char *text;
} sm_extra_file;
bool sm_write(ag_loc loc, const char *dir, sm_manifest *man, char *const *texts,
              const rt_value *const *vars, const sm_extra_file *extra, int n_extra);

/* "dir/name", malloc'ed (replace.c). */
char *sm_path_join(const char *dir, const char *name);

/* The files besides the graphs and variables that agc writes into a
 * model directory (the converter's). */
#define SM_REPORT_FILE "conversion_report.txt"
#define SM_CONVERTER_OPTIONS_FILE "converter_options.pbtxt"

/* replace.c: putting a written model in place. Whether what is at dir
 * may be replaced (nothing, an empty directory, a model agc wrote with
 * nothing else in it; *exists says whether something is there); false
 * after reporting at loc. */
bool sm_may_replace(ag_loc loc, const char *dir, bool *exists);
/* Swaps the complete model at tmp into dir in one step (dir is the old
 * model or the new one at every instant) and removes the old one; false
 * after reporting at loc, dir then as it was. */
bool sm_put_in_place(ag_loc loc, const char *tmp, const char *dir, bool exists);
/* Removes the leftovers of saves to dir whose process is gone
 * ("<dir>.tmp-<pid>", "<dir>.old-<pid>"), and this process's own. */
void sm_remove_leftovers(const char *dir);
void sm_remove_tree(const char *path);
/* Tests only: called at each step of putting a model in place ("before
 * the swap", "after the swap", ...), where a test kills its process. */
extern void (*sm_write_crash_point)(const char *where);

/* A fresh copy of function i's graph, its variables bound to the model's;
 * NULL with a message in err. */
ir_function *sm_function_graph(const ag_saved_model *m, int i, char *err, size_t errlen);

/* The values of the model's variables, in order (owned by the model). */
const rt_value *sm_variable_value(const ag_saved_model *m, int i);

/* A pipeline request for function i of m (request.c), from a fresh graph: its
 * target (the record's, else the process's), device scopes, soft
 * placement and bf16 options; `bf16` receives the bf16 options the
 * request points at. False with a message in err. */
bool sm_request(ag_saved_model *m, int i, pl_stage stop, pl_request *r,
                pass_bf16_options *bf16, char *err, size_t errlen);

/* Frees what function lf compiled and its batcher (first: its threads run
 * the compiled code); it may compile again (load.c, which frees models). */
void sm_loaded_function_release(sm_loaded_function *lf);

/* Function i's graph cut for batching in the graph (its record's batch is
 * in_graph; batch_split.c): s gets pass_split's parts at the record's
 * batch scope, else its device scopes, checked to read and hand back only
 * batched values, and r the function's request (sm_request's: target,
 * device scopes, options; no graph). False with a message in err. */
bool sm_batch_split(ag_saved_model *m, int i, pass_split *s, pl_request *r,
                    pass_bf16_options *bf16, char *err, size_t errlen);

/* Whether a node at the top of part, other than a constant, was traced in
 * one of the scopes. */
bool sm_part_in_scopes(const ir_function *part, const char *const *scopes, int n_scopes);

/* converter.md's shape rules for a middle batched in the graph: every
 * parameter and result has dimension 0 of the batch (`?`); false with a
 * message at the offending value's line, starting with `what`. */
bool sm_check_batched(const ir_function *middle, const char *what, char *err, size_t errlen);

/* Replaces fn's variable reads by constants of their values (for an
 * object file, which has no variables); false with a message in err when
 * fn assigns one. The _if form freezes only the variables `which` says
 * (the model's constants, at load). */
typedef bool (*sm_freeze_fn)(const rt_variable *v, void *ctx);
bool sm_freeze_variables(ir_function *fn, char *err, size_t errlen);
bool sm_freeze_variables_if(ir_function *fn, sm_freeze_fn which, void *ctx, char *err,
                            size_t errlen);

/* Constants of at least this many elements are saved in variables.bin,
 * as variables marked constant, instead of in the text IR. */
#define SM_CONSTANT_MIN_ELEMENTS 16
/* Replaces each such constant of fn by a read of the variable make(value)
 * returns (NULL: leave it). */
typedef rt_variable *(*sm_thaw_fn)(const rt_value *value, void *ctx);
void sm_thaw_constants(ir_function *fn, sm_thaw_fn make, void *ctx);

/* rewrite.c: function i's graph replaced by g (rewritten from its own:
 * g's variables are the model's, or constants). g's large constants
 * become new model variables marked constant, the record's variables
 * g's, its text g printed. False with a message in err. */
bool sm_replace_function_graph(ag_saved_model *m, int i, ir_function *g, char *err,
                               size_t errlen);
/* Drops the variables no function reads, renumbering the records'. */
void sm_drop_unread_variables(ag_saved_model *m);
/* g in the text IR, as a saved model holds it (malloc'ed). */
char *sm_graph_text(const ir_function *g);

/* The function record's index for a concrete function name; -1 if none. */
int sm_function_index(const ag_saved_model *m, const char *name);


#endif
