/*
 * exec.h - the reference executor: runs a function's graph with the
 * runtime's kernels. It is the oracle every backend is compared against.
 *
 * Execution is non-strict, as in tf.function: only nodes that reach a
 * result or an effect (print, assert, state update) run, so an unused op
 * that would fail never does. Effects run in program order.
 */
#ifndef IR_EXEC_H
#define IR_EXEC_H

#include "ir.h"

/* What the executor precomputes for a function (which nodes are live). It
 * is immutable afterwards, so several threads may execute it at once. */
typedef struct ir_plan ir_plan;

ir_plan *ir_plan_new(const ir_function *fn);
void ir_plan_free(ir_plan *p);
/* Which nodes the plan runs. */
const struct ir_liveness *ir_plan_liveness(const ir_plan *p);

/* Runs the function on args (one value per parameter). On success stores
 * one new value per result (the caller frees them) and returns true; on an
 * error returns false after reporting it at the failing node's location. */
bool ir_execute(const ir_plan *p, rt_value *const *args, int n_args, rt_value **results);

/*
 * What a target that interprets graphs its own way adds to the reference
 * executor (the TPU-model's simulator): `apply` may compute an op itself
 * (setting *handled; NULL after reporting an error), else the runtime's
 * kernel does; `ran` is told of every node that ran, in execution order,
 * with its value (a loop body's nodes once per trip; cond and while, whose
 * value is NULL, after their regions).
 */
typedef struct ir_exec_hooks {
    rt_value *(*apply)(void *ctx, const ir_node *n, rt_value *const *in, int n_in,
                       bool *handled);
    void (*ran)(void *ctx, const ir_node *n, const rt_value *value);
    void *ctx;
} ir_exec_hooks;

/* ir_execute with hooks (NULL: none). */
bool ir_execute_hooked(const ir_plan *p, const ir_exec_hooks *hooks, rt_value *const *args,
                       int n_args, rt_value **results);

/* Computes the value of one node of fn's top-level graph that depends on
 * no parameter (for variables created while tracing); NULL after
 * reporting an error. */
rt_value *ir_evaluate(const ir_function *fn, const ir_node *node);

#endif
