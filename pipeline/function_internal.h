/*
 * function_internal.h - the function cache's records, shared by
 * function.c (the cache, calls) and function_grad.c (a call on a
 * gradient tape).
 */
#ifndef FN_FUNCTION_INTERNAL_H
#define FN_FUNCTION_INTERNAL_H

#include "function.h"
#include "profile.h"

#include <pthread.h>

/* The identity of one argument in the cache. */
typedef pl_arg arg_key;

typedef struct fn_entry fn_entry;

struct ag_concrete_function {
    fn_entry *entry;
    arg_key *keys;
    pl_result compiled; /* the graph, its analyses, the target's executable */
    unsigned long serial; /* trace order, for ag_function_print_signatures */
    int refs;             /* under entry->lock: the cache's, calls', users' */
    int user_refs;        /* of refs, ag_get_concrete_function's */
    bool cached;          /* in entry->concretes; else in entry->retired */
    struct fn_grad *grad; /* under entry->lock: made at the first call on a tape */
    ag_concrete_function *next;
};

struct fn_entry {
    const ag_function_desc *desc;
    pthread_mutex_t lock;
    bool has_signature;
    ir_spec signature;
    ag_concrete_function *concretes; /* the cache, most recently used first */
    int n_cached;
    ag_concrete_function *retired; /* evicted, still running or held by a user */
    unsigned long serial;          /* traces made, for the next one's serial */
    int trace_count;
    unsigned history; /* bit i: whether the i-th latest call traced */
    int calls;
    bool warned;
    fn_profile profile; /* AG_PROFILE's figures, kept always (atomics) */
    fn_entry *next;
};

/* Another reference to cf (a call's, a tape's), and dropping one. */
void fn_concrete_ref(ag_concrete_function *cf);
void fn_concrete_unref(ag_concrete_function *cf);

/* ---------------------------------------------- calls on a gradient tape */

/* The forward and backward halves of cf's gradient (function_grad.c),
 * made at its first call on a tape; freed with cf. */
typedef struct fn_grad fn_grad;
void fn_grad_free(fn_grad *g);

/*
 * Runs cf on args as one op of the tapes recording now: the forward half
 * of its gradient graph runs, and the tapes record the call with the
 * backward half as its gradient. *handled is false (and nothing ran) when
 * the call cannot be one op (then its body runs eagerly, op by op); the
 * result is false after reporting an error.
 */
bool fn_grad_call(ag_concrete_function *cf, ag_loc loc, const ag_arg *args,
                  ag_tensor *outputs, bool *handled);

#endif
