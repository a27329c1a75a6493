/*
 * liveness.h - which nodes of a function run (prefix ir_liveness).
 *
 * Execution is non-strict, as in tf.function: a node runs when a result
 * of its graph or an effect (print, assert, state update) needs it; a
 * live cond/while runs its regions whole, so their results and effects
 * are needed in turn. The reference executor, the passes and every
 * target decide what runs with this one analysis.
 */
#ifndef IR_LIVENESS_H
#define IR_LIVENESS_H

#include "ir.h"

typedef struct ir_liveness {
    int n;      /* size of the tables: fn->next_id when computed */
    bool *live; /* by node id */
    int *users; /* by node id: live nodes using it (a node using it twice
                 * counts once), plus one per result of a graph that runs */
} ir_liveness;

void ir_liveness_init(ir_liveness *l, const ir_function *fn);
/* Only what computing `root` (a node of fn's top-level graph) needs;
 * users are not counted. */
void ir_liveness_init_for(ir_liveness *l, const ir_function *fn, const ir_node *root);
void ir_liveness_free(ir_liveness *l);

/* Whether n runs (false for nodes made after the analysis). */
static inline bool ir_is_live(const ir_liveness *l, const ir_node *n)
{
    return n->id < l->n && l->live[n->id];
}

#endif
