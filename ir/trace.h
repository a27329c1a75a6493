/*
 * trace.h - recording ag_* calls into a graph (tf.function's tracing).
 *
 * While a trace is active on a thread, rt_apply hands every op to the
 * tracer, which appends a node and returns a symbolic value. Staged control
 * flow (ag_if_at, ag_while_at) traces its regions through frames: a region
 * sees only its own parameters, so a value from an enclosing graph used
 * inside it becomes an explicit input (a capture).
 */
#ifndef IR_TRACE_H
#define IR_TRACE_H

#include "ir.h"

typedef struct ir_trace ir_trace;

/* Starts tracing into fn on this thread (nesting is not allowed: a call to
 * another AG_FUNCTION while tracing is inlined by the caller instead). */
ir_trace *ir_trace_begin(ir_function *fn);
/* Stops tracing; true if nothing failed. Frees the trace. */
bool ir_trace_end(ir_trace *t);
bool ir_trace_active(void);
/* Marks the trace failed (an error was reported while tracing). */
void ir_trace_fail(void);

/* The inlined call of the AG_FUNCTION `name` starts: nodes traced until
 * the matching ir_trace_leave_scope get the scope "<outer>/name". Returns
 * the scope to give back to ir_trace_leave_scope. */
const char *ir_trace_enter_scope(const char *name);
void ir_trace_leave_scope(const char *previous);

/* Whether this is the function's first trace (variables may then be
 * created inside it, as in tf.function). */
void ir_trace_set_first(ir_trace *t, bool first);

/* A new function parameter of that type, as a symbolic tensor handle. */
ag_tensor ir_trace_param(ir_trace *t, const ir_type *type);
/* Sets the function's results; false after reporting an undefined one. */
bool ir_trace_set_outputs(ir_trace *t, int n, const ag_tensor *outs, ag_loc loc);

/* The symbolic value of a node (a new rt_value the caller owns). */
rt_value *ir_symbolic_value(ir_node *node);

#endif
