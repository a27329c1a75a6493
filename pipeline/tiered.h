/*
 * tiered.h - tiered execution (prefix pl_tier_): a concrete function's
 * first calls run on the reference executor while its target's code
 * compiles on a background thread; later calls run that code once it is
 * ready. Only pipeline.c uses it: a pl_result holds the compile it
 * waits for (pl_result.tier).
 */
#ifndef PL_TIERED_H
#define PL_TIERED_H

#include "pipeline.h"

typedef struct pl_tier pl_tier;

/* Whether c's policy (the setting jit: ag_set_jit_policy, else AG_JIT,
 * else auto) compiles a graph of n_nodes nodes in the background. */
bool pl_tier_wanted(const rt_config *c, int n_nodes);

/*
 * Queues the compile of graph (with its analyses am) for target t with
 * options o on the background thread. graph and am stay the caller's
 * (pl_result's) until pl_tier_release; the compile's time is added to
 * *timing (NULL: not kept), which must outlive the compile (pl_tier_stop
 * waits for it).
 */
pl_tier *pl_tier_submit(const ir_function *graph, pass_analyses *am, const tgt_target *t,
                        const tgt_options *o, pl_timing *timing);

/* Once the compile succeeded: its target and executable (true). False
 * while it is queued or running, and for good after it failed or was
 * cancelled. Lock-free: every call asks. */
bool pl_tier_ready(const pl_tier *tier, const tgt_target **t, const tgt_exe **x);

/* Whether the compile is still queued or running. */
bool pl_tier_pending(const pl_tier *tier);

/*
 * Drops the tier of a result being freed: a queued compile is cancelled;
 * a finished one's executable freed. A compile that is running cannot be
 * stopped inside LLVM: it takes graph and am (returns true: the caller
 * must not free them) and frees them with its code when it ends, so that
 * evicting a concrete function never waits for a compile.
 */
bool pl_tier_release(pl_tier *tier, ir_function *graph, pass_analyses *am);

/* Stops the background thread (ag_shutdown, and at exit): cancels the
 * compiles still queued, waits for the one running and joins the thread.
 * The next pl_tier_submit starts it again. */
void pl_tier_stop(void);

#endif
