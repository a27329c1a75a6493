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
 * target cannot compile is an error; `bf16` converts the graph to bf16
 * (agc --bf16) as AG_BFLOAT16 does. Nothing is cached. False after
 * reporting an error at loc.
 */
/* progress: as pl_request's (agc -v), may be NULL. */
bool fn_compile_spec(ag_loc loc, const char *name, const char *spec, pl_stage stop,
                     const tgt_target *target, const tgt_options *options, bool bf16,
                     void (*progress)(void *ctx, const char *stage), void *progress_ctx,
                     pl_result *out);

#endif
