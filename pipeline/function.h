/*
 * function.h - AG_FUNCTIONs at run time (prefix fn_): the function cache,
 * concrete functions per input signature.
 */
#ifndef FN_FUNCTION_H
#define FN_FUNCTION_H

#include "pipeline.h"
#include "signature.h"

/*
 * Runs the compile pipeline at build time (agc --emit) on the AG_FUNCTION
 * `name` for a signature "f32[2,?], n=3" that gives every parameter, up
 * to `stop`, for `target` (NULL: the selected one) strictly: a graph the
 * target cannot compile is an error; `flags` (NULL: none) gives the
 * request's progress (agc -v). The settings are those in force (agc's
 * flags are their flag layer: --bf16, --soft-device-placement).
 * Nothing is cached. False after
 * reporting an error at loc.
 */
/* progress: as pl_request's (agc -v), may be NULL. */
bool fn_compile_spec(ag_loc loc, const char *name, const char *spec, pl_stage stop,
                     const tgt_target *target, const tgt_options *options,
                     const pl_request *flags, pl_result *out);

/*
 * Traces the AG_FUNCTION `name` (or alias) for export in a saved model:
 * *out holds the graph as traced and verified, before any pass. `spec`
 * gives every parameter ("f32[?,784]"); NULL takes the AG_SIGNATURE.
 * The function's first trace may make its variables, as a call's would.
 * *desc is the function's. False after reporting an error at loc.
 */
bool fn_trace_export(ag_loc loc, const char *name, const char *spec, pl_result *out,
                     const ag_function_desc **desc);

/* The AG_FUNCTION whose name (or AG_ALIAS) is `name`, among those called
 * or registered so far; NULL when none is. */
const ag_function_desc *fn_desc_named(const char *name);

/*
 * Runs the concrete function cf (made by ag_get_concrete_function) on
 * args, as a call of its function would once the cache has found cf:
 * outputs are fresh tensors in the caller's innermost scope. Each tensor
 * argument must match cf's type for it (a `?` dim matches any size).
 * False after reporting an error at loc (outputs are error tensors).
 */
bool fn_concrete_call(ag_loc loc, ag_concrete_function *cf, const ag_arg *args,
                      ag_tensor *outputs);

#endif
