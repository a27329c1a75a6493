/* trace_internal.h - the tracer's state, shared by trace.c and staged.c. */
#ifndef IR_TRACE_INTERNAL_H
#define IR_TRACE_INTERNAL_H

#include "trace.h"

/* A value of an enclosing graph used inside a region: `key` is the node the
 * user's code referred to, `outer` its stand-in in the enclosing frame
 * (the region op's input), `param` the region's parameter. */
typedef struct ir_capture {
    ir_node *key, *outer, *param;
} ir_capture;

/* The graph being traced into, and its captures. */
typedef struct ir_frame {
    ir_graph *g;
    struct ir_frame *outer;
    ir_capture *caps;
    int n_caps, cap_caps;
} ir_frame;

/* One ag_set_loop_options call: the variable is known by its address or
 * by its name in `text` (the argument as written, "&x"); the staged code
 * agc writes copies loop variables into a state struct, so the loop's own
 * addresses differ from the user's but its names are the user's. */
typedef struct ir_invariant {
    const ag_tensor *var;
    const char *text;
    ag_shape shape;
    ag_loc loc;
} ir_invariant;

struct ir_loop;

struct ir_trace {
    ir_function *fn;
    ir_frame top;
    ir_frame *cur;
    bool failed;
    bool first_trace; /* variables may be created only on the first */
    rt_trace_hook_fn saved_hook;
    rt_concretize_fn saved_concretize;
    ir_trace *saved;
    ir_invariant *invariants; /* from ag_set_loop_options, for later loops */
    int n_invariants, cap_invariants;
    struct ir_loop *loop; /* the innermost staged loop being traced, if any */
};

ir_trace *ir_trace_current(void);
void ir_frame_push(ir_trace *t, ir_frame *f, ir_graph *g);
void ir_frame_pop(ir_trace *t, ir_frame *f);
void ir_frame_release(ir_frame *f);
ir_node *ir_frame_localize(ir_frame *f, ir_node *n);
ir_node *ir_trace_node_of(ir_trace *t, rt_value *v, ag_loc loc);
ir_node *ir_trace_node_of_handle(ir_trace *t, ag_tensor h, ag_loc loc, bool *undefined);
ag_tensor ir_symbolic_handle(ir_node *node);
bool ir_invariant_is_for(const ir_invariant *inv, ag_tensor *const var, const char *name);
bool ir_trace_take_invariant(ir_trace *t, ag_tensor *const var, const char *name,
                             ag_shape *out);
bool ir_loop_take_option(ir_trace *t, const ir_invariant *inv);
/* The captures of several frames, unique by the captured node, in order
 * (a new array in *out; returns their number). */
int ir_union_captures(ir_frame *const *frames, int nf, ir_capture **out);
/* Gives region f the parameters [its first n_fixed, then the union's
 * captures in union order], adding unused ones it lacks. */
void ir_align_params(ir_frame *f, int n_fixed, const ir_capture *u, int nu);

/* staged_grad.c: a staged if just built (cond, its results in outs) is
 * recorded on the gradient tapes of this region with its gradient: a
 * cond on the same predicate whose branches are the gradients of the
 * branches. */
void ir_tape_record_cond(ir_node *cond, rt_value *const *outs, int n_outs, ag_loc loc);
/* The value the tapes know for input n of a staged if or loop appended to
 * the current frame: a capture's outer value (what the ops recorded
 * before were given), else n's. */
rt_value *ir_tape_input_value(ir_node *n);
/* Applies region g's nodes again, in order, through rt_apply (so into the
 * graph being traced, and onto the tapes), to the values in map (indexed
 * by node id; g's parameters set): map gets each node's new value. Effects
 * other than variable reads are not repeated. skip_unmapped: a node with
 * an input not in map is left out, silently. False after reporting. */
bool ir_replay_region(const ir_graph *g, rt_value **map, int map_size, bool skip_unmapped);

/* loop_grad.c: a staged loop traced while a gradient tape records gets
 * accumulators (each iteration's variables, its trip count) and is
 * recorded on the tapes with its gradient, a loop running backward. */
void ir_while_on_tape(ir_trace *t, ag_loc loc, int n_vars, ag_tensor *const *vars,
                      const char *const *names, ag_cond_fn cond, ag_body_fn body,
                      void *state);
/* staged.c: traces a staged loop into the current graph; tell_tapes: a
 * tape recording it is told it cannot see inside (an error if a gradient
 * reaches its results). */
void ir_traced_while(ir_trace *t, ag_loc loc, int n_vars, ag_tensor *const *vars,
                     const char *const *names, ag_cond_fn cond, ag_body_fn body, void *state,
                     bool tell_tapes);

#endif
