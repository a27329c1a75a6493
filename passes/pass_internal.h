/*
 * pass_internal.h - what the passes share: forwarding maps, graph surgery,
 * type lattice operations, constants and op properties (util.c).
 *
 * Uses of a value are only ever in its own graph (regions have no implicit
 * captures), so replacing a value means rewriting the operands of later
 * nodes of that graph and the graph's results. The passes do that in one
 * forward sweep with a forwarding map: when a node is replaced, map it to
 * its replacement; every later node first rewrites its operands through
 * the map, and the graph's results are rewritten at the end.
 */
#ifndef PASS_INTERNAL_H
#define PASS_INTERNAL_H

#include "liveness.h"
#include "pass.h"

/* The most bytes a constant made by a pass may hold (fold, LICM). */
#define PASS_MAX_CONST_BYTES ((size_t)1 << 20)

/* ------------------------------------------------------ forwarding maps */

/* Node id -> node, growing as passes make new nodes. */
typedef struct pass_map {
    int n;
    ir_node **v;
} pass_map;

void pass_map_init(pass_map *m, const ir_function *fn);
void pass_map_free(pass_map *m);
void pass_map_set(pass_map *m, const ir_node *key, ir_node *val);
ir_node *pass_map_get(const pass_map *m, const ir_node *key);
/* The node standing for n now (following chains of replacements). */
ir_node *pass_resolve(const pass_map *m, ir_node *n);
/* Rewrites n's operands / g's results through the map. */
void pass_remap_inputs(const pass_map *m, ir_node *n);
void pass_remap_results(const pass_map *m, ir_graph *g);

/* ------------------------------------------------------- graph surgery */

/* Links the unlinked node n into g before `before` (at the end if NULL). */
void pass_insert_before(ir_graph *g, ir_node *n, ir_node *before);
/* A new pure node in g before `before`, with the source location and
 * device of `like`. */
ir_node *pass_new_node(ir_graph *g, ir_node *before, int opcode, const rt_attrs *a, int n_in,
                       ir_node *const *in, const ir_type *type, const ir_node *like);
ir_node *pass_new_const(ir_graph *g, ir_node *before, const rt_value *v, const ir_node *like);
/* Copies a constant node into g (before `before`). */
ir_node *pass_copy_const(ir_graph *g, ir_node *before, const ir_node *c);
/* Replaces n's operand list (in the function's arena). */
void pass_set_inputs(ir_node *n, int n_in, ir_node *const *in);
/* Recomputes the effect flags of cond/while (a region may have gained or
 * lost effects) and rebuilds every graph's chain of control edges in
 * program order. */
void pass_fix_effects(ir_function *fn);
/* Whether node or result of g uses v (a node or parameter of g). */
bool pass_graph_uses(const ir_graph *g, const ir_node *v);
/* Replaces the uses of `from` by `to` in g's nodes and, when `results`,
 * in g's results. */
void pass_replace_uses(ir_graph *g, const ir_node *from, ir_node *to, bool results);

/* ---------------------------------------------------------------- types */

/* The most precise type that both describe; false if they conflict. */
bool pass_type_meet(const ir_type *a, const ir_type *b, ir_type *out);
/* The most precise type that covers both. */
void pass_type_join(const ir_type *a, const ir_type *b, ir_type *out);
/* Dtype and every dim known (a tensor, not a list). */
bool pass_type_known(const ir_type *t);
/* The byte size of a fully known tensor type, or -1. */
int64_t pass_type_bytes(const ir_type *t);

/* ------------------------------------------------------------ constants */

bool pass_is_const(const ir_node *n);
/* A concrete value viewing a constant's literal (no copy, nothing to free). */
rt_value pass_const_view(const ir_node *c);
/* Every element of constant c equals v; `sign` also compares the sign bit
 * (so that -0.0 and +0.0 differ). */
bool pass_const_all(const ir_node *c, double v, bool sign);

/*
 * Computes op on concrete inputs exactly as rt_apply_eager does - the
 * op's dtype and shape rules, then its kernel (or an alias) - but returns
 * NULL with the reason in e instead of reporting: in AG_ERRORS_EXIT mode a
 * report would end the process, for an op that non-strict execution might
 * never run. Results over max_bytes are refused.
 */
rt_value *pass_eval_op(int op, const rt_attrs *a, rt_value *const *in, int n,
                       size_t max_bytes, rt_err *e);

/* ---------------------------------------------------------- op properties */

bool pass_is_region_op(const ir_node *n);
/* The op-table flags of n (0 for param, cond, while and get). */
unsigned pass_flags(const ir_node *n);
/* Whether n takes or makes a tensor array. Tensor arrays are shared,
 * mutable lists in the runtime (ta_write updates its list in place), so
 * passes never merge, move or evaluate such nodes. */
bool pass_touches_list(const ir_node *n);

/*
 * Whether n may fail at run time (or, for a while, not end), given its
 * operands' static types. Rewrites must not make such a node dead where
 * it was live: the program would stop failing. A node cannot fail when it
 * is a parameter, constant or get, a cond whose regions hold nothing that
 * may fail, or an op whose operands' shapes are all known (the rules,
 * which passed when the node was made, then pass at run time too) and
 * whose kernel has no data-dependent error (integer div, floordiv, mod and
 * pow, gather, unsorted_segment_sum, range, random_uniform, assert, tensor arrays, and
 * max/min/mean/argmax of an empty tensor have one).
 */
bool pass_may_fail(const ir_node *n);

/* pass_may_fail of n or of anything n depends on; memoized by id. */
typedef struct pass_fail_cache {
    signed char *v; /* by id: 0 unknown, 1 cannot fail, 2 may fail */
    int n;
} pass_fail_cache;

bool pass_may_fail_deep(pass_fail_cache *c, const ir_node *n);
void pass_fail_cache_free(pass_fail_cache *c);

/*
 * Which nodes run, as the reference executor decides (a result or an
 * effect needs them; a live cond/while needs all its operands, and its
 * regions their results and effects), and how many live users each value
 * has (one per live node using it, one per result of a graph that runs).
 * A rewrite that stops using x may do so when x cannot fail, or when x
 * keeps another live user: pass_can_drop decides.
 */
typedef struct pass_liveness {
    ir_liveness run; /* what runs and its users (ir/liveness.h); users drop as
                      * pass_can_drop commits */
    pass_fail_cache fails;
} pass_liveness;

void pass_liveness_init(pass_liveness *l, const ir_function *fn);
void pass_liveness_free(pass_liveness *l);
/* Whether a live use of x may go; with `commit`, counts it gone. */
bool pass_can_drop(pass_liveness *l, const ir_node *x, bool commit);

/* ---------------------------------------------------------------- infer */

/* How many graphs (the function's body and regions) infer has walked on
 * this thread: tests check that nested loops cost work linear in their
 * depth, not exponential. */
int64_t pass_infer_region_visits(void);

/* ---------------------------------------------------------- diagnostics */

/* Records "file:line:col: error: %id (op): message" (the verifier's form)
 * in ctx->err if it is the first, and marks ctx failed. */
void pass_diag(pass_ctx *ctx, const ir_node *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif /* PASS_INTERNAL_H */
