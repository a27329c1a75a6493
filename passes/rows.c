/*
 * rows.c - the row analysis (rows.h): which values have the batch in
 * dimension 0, node by node in program order, by a rule per op.
 *
 * A value is BCAST (it does not depend on the batched inputs: constants,
 * variables, what is computed from them alone) or ROW (dimension 0 is the
 * batch's, and row i depends on row i of the batched inputs only). An op
 * whose operands are all BCAST gives BCAST; otherwise its rule (the table
 * below) says whether the result is ROW, or why the op mixes rows: the
 * first such op is the answer. A while loop's variables start as their
 * initial values and rise to ROW when the body makes them so, until
 * nothing changes (at most one step per variable).
 */
#include "rows.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { BCAST, ROW };

typedef enum rule {
    R_SOURCE,      /* one value for the whole batch: a batched operand is wrong */
    R_ELEMENTWISE, /* NumPy broadcasting: batched operands keep dimension 0 */
    R_AXIS,        /* works along its axis, which must not be dimension 0 */
    R_MATMUL,
    R_CONV2D,
    R_RESHAPE,
    R_TRANSPOSE,
    R_CONCAT,
    R_STACK,
    R_SLICE,
    R_GATHER,
    R_EXPAND_DIMS,
    R_SQUEEZE,
    R_SIZE,   /* the batch's size, padding included */
    R_SAME,   /* row i of the operand makes row i of the result */
    R_PRINT,  /* an effect without a result: printing a batch mixes no rows */
    R_ASSERT, /* would check the padding rows and other requests' rows */
    R_ASSIGN, /* would keep the batch's rows in state for later calls */
    R_TA_WRITE,
    R_TA_READ,
    R_TA_STACK,
    R_TA_SIZE,
} rule;

/* One row per op of ops.def (counted below): adding an op fails to build
 * until it says what it does with the rows of a batch. */
#define ROW_RULES(Y)                                                                            \
    Y(CONST, R_SOURCE) Y(FILL, R_SOURCE) Y(FILL_LIKE, R_SAME) Y(EYE, R_SOURCE)                  \
    Y(RANGE, R_SOURCE) Y(RANDOM_UNIFORM, R_SOURCE)                                              \
    Y(ADD, R_ELEMENTWISE) Y(SUB, R_ELEMENTWISE) Y(MUL, R_ELEMENTWISE) Y(DIV, R_ELEMENTWISE)     \
    Y(FLOORDIV, R_ELEMENTWISE) Y(MOD, R_ELEMENTWISE) Y(POW, R_ELEMENTWISE)                      \
    Y(MAXIMUM, R_ELEMENTWISE) Y(MINIMUM, R_ELEMENTWISE) Y(EQUAL, R_ELEMENTWISE)                 \
    Y(NOT_EQUAL, R_ELEMENTWISE) Y(LESS, R_ELEMENTWISE) Y(LESS_EQUAL, R_ELEMENTWISE)             \
    Y(GREATER, R_ELEMENTWISE) Y(GREATER_EQUAL, R_ELEMENTWISE) Y(LOGICAL_AND, R_ELEMENTWISE)     \
    Y(LOGICAL_OR, R_ELEMENTWISE) Y(LOGICAL_NOT, R_ELEMENTWISE) Y(WHERE, R_ELEMENTWISE)          \
    Y(NEG, R_ELEMENTWISE) Y(ABS, R_ELEMENTWISE) Y(EXP, R_ELEMENTWISE) Y(LOG, R_ELEMENTWISE)     \
    Y(SQRT, R_ELEMENTWISE) Y(RSQRT, R_ELEMENTWISE) Y(SQUARE, R_ELEMENTWISE)                     \
    Y(TANH, R_ELEMENTWISE) Y(SIGMOID, R_ELEMENTWISE) Y(RELU, R_ELEMENTWISE)                     \
    Y(FLOOR, R_ELEMENTWISE) Y(CEIL, R_ELEMENTWISE) Y(SIGN, R_ELEMENTWISE)                       \
    Y(CAST, R_ELEMENTWISE)                                                                      \
    Y(REDUCE_SUM, R_AXIS) Y(REDUCE_MEAN, R_AXIS) Y(REDUCE_MAX, R_AXIS) Y(REDUCE_MIN, R_AXIS)    \
    Y(REDUCE_PROD, R_AXIS) Y(REDUCE_ANY, R_AXIS) Y(REDUCE_ALL, R_AXIS) Y(ARGMAX, R_AXIS)        \
    Y(SOFTMAX, R_AXIS) Y(MATMUL, R_MATMUL) Y(CONV2D, R_CONV2D) Y(RESHAPE, R_RESHAPE)           \
    Y(CONV2D_BACKPROP_INPUT, R_CONV2D) /* (dy, w): dy's rows make dx's */                       \
    Y(CONV2D_BACKPROP_FILTER, R_SOURCE) /* sums over the batch */                               \
    Y(UNSORTED_SEGMENT_SUM, R_SOURCE)   /* rows may add into one */                             \
    Y(QUANTIZE, R_ELEMENTWISE) Y(DEQUANTIZE, R_ELEMENTWISE) Y(REQUANTIZE, R_ELEMENTWISE)        \
    Y(QMATMUL, R_MATMUL) Y(QCONV2D, R_CONV2D)                                                   \
    Y(TRANSPOSE, R_TRANSPOSE) Y(CONCAT, R_CONCAT) Y(STACK, R_STACK) Y(SLICE, R_SLICE)          \
    Y(GATHER, R_GATHER) Y(EXPAND_DIMS, R_EXPAND_DIMS) Y(SQUEEZE, R_SQUEEZE)                    \
    Y(SHAPE_OF, R_SIZE) Y(SIZE, R_SIZE) Y(ONE_HOT, R_SAME)                                      \
    Y(PRINT, R_PRINT) Y(ASSERT, R_ASSERT) Y(VAR_READ, R_SOURCE) Y(ASSIGN, R_ASSIGN)             \
    Y(ASSIGN_ADD, R_ASSIGN) Y(ASSIGN_SUB, R_ASSIGN) Y(TA_NEW, R_SOURCE)                         \
    Y(TA_WRITE, R_TA_WRITE) Y(TA_READ, R_TA_READ) Y(TA_STACK, R_TA_STACK)                       \
    Y(TA_SIZE, R_TA_SIZE) Y(TO_DEVICE, R_SAME) Y(TO_HOST, R_SAME)

#define ROW(id, r) [RT_OP_##id] = r,
static const rule rules[RT_OP_COUNT] = {ROW_RULES(ROW)};
#undef ROW
#define ONE(id, r) +1
_Static_assert(0 ROW_RULES(ONE) == RT_OP_COUNT,
               "passes/rows.c needs a row for every op of runtime/core/ops.def");
#undef ONE

typedef struct rows {
    uint8_t *kind;   /* by node id */
    uint8_t **tuple; /* by node id: the kinds of a cond's or a while's results */
} rows;

static bool batched(const rows *R, const ir_node *v) { return R->kind[v->id] == ROW; }

/* ------------------------------------------------------------ the rules */

/* A batched operand must keep dimension 0 as the result's; an unbatched
 * one of the result's rank would pair its rows with the batch's by
 * position unless dimension 0 is 1 (broadcast). Only ranks of at least
 * `min_rank` broadcast (a matmul's matrices do not). */
static const char *broadcast(const rows *R, const ir_node *n, int min_rank)
{
    int rank = n->type.shape.rank;
    for (int i = 0; i < n->n_in; i++) {
        const ag_shape *s = &n->in[i]->type.shape;
        if (batched(R, n->in[i]) && s->rank != rank)
            return "broadcasts a batched operand to a higher rank, which moves the batch "
                   "out of dimension 0";
        if (!batched(R, n->in[i]) && s->rank == rank && rank >= min_rank && s->dims[0] != 1)
            return "pairs the rows of the batch with the rows of an unbatched operand by "
                   "position, so a request's result depends on where its rows land in the "
                   "batch";
    }
    return NULL;
}

static const char *along_axis(const ir_node *n)
{
    int axis;
    bool all = n->attrs.axis == AG_ALL_AXES;
    if (!all && rt_norm_axis(n->attrs.axis, n->in[0]->type.shape.rank, &axis) && axis != 0)
        return NULL;
    if (n->opcode == RT_OP_SOFTMAX)
        return all ? "normalizes over every dimension, across the rows of the batch"
                   : "normalizes along dimension 0, across the rows of the batch";
    return all ? "reduces over every dimension, across the rows of the batch"
               : "reduces along dimension 0, across the rows of the batch";
}

static const char *matmul(const rows *R, const ir_node *n)
{
    if (batched(R, n->in[1]) && n->in[1]->type.shape.rank == 2)
        return "contracts over dimension 0 of its batched operand b (as x^T x does): each "
               "row of the result sums over every row of the batch";
    return broadcast(R, n, 3);
}

static int64_t rest_numel(const ag_shape *s)
{
    int64_t n = 1;
    for (int d = 1; d < s->rank; d++) {
        if (s->dims[d] < 0)
            return -1;
        n *= s->dims[d];
    }
    return n;
}

/* Row i stays row i when dimension 0 stays and the rest holds as much. */
static const char *reshape(const ir_node *n)
{
    const ag_shape *from = &n->in[0]->type.shape, *to = &n->type.shape;
    if (to->rank >= 1 && from->dims[0] == to->dims[0] && rest_numel(from) >= 0 &&
        rest_numel(from) == rest_numel(to))
        return NULL;
    return "moves elements across dimension 0: each row of the result is not one row of "
           "the batch";
}

static const char *concat(const rows *R, const ir_node *n, int rank)
{
    int axis;
    if (!rt_norm_axis(n->attrs.axis, rank, &axis) || axis == 0)
        return n->opcode == RT_OP_STACK
                   ? "stacks along a new dimension 0, which moves the batch to dimension 1"
                   : "joins along dimension 0: the batch's rows with other rows";
    for (int i = 0; i < n->n_in; i++)
        if (!batched(R, n->in[i]))
            return "joins the batch with an unbatched operand, row by position";
    return NULL;
}

static const char *slice(const ir_node *n)
{
    const ag_shape *b = &n->attrs.begin, *s = &n->attrs.size;
    int64_t n0 = n->in[0]->type.shape.dims[0];
    if (b->rank >= 1 && b->dims[0] == 0 && (s->dims[0] == -1 || (n0 >= 0 && s->dims[0] == n0)))
        return NULL;
    return "takes some of the rows of dimension 0: which ones depends on where a request's "
           "rows land in the batch";
}

static const char *gather(const rows *R, const ir_node *n)
{
    int axis;
    bool from = batched(R, n->in[0]), with = batched(R, n->in[1]);
    if (!rt_norm_axis(n->attrs.axis, n->in[0]->type.shape.rank, &axis))
        return "gathers along an axis it does not have";
    if (from && with)
        return "gathers from the batch's rows with batched indices: a row's result can "
               "come from another row";
    if (from && axis == 0)
        return "gathers along dimension 0: a row's result comes from other rows of the batch";
    if (with && axis != 0)
        return "puts its batched indices after dimension 0 of its result";
    return NULL;
}

static const char *squeeze(const ir_node *n)
{
    int axis;
    if (n->attrs.axis == AG_ALL_AXES)
        return "squeezes every dimension of size 1, dimension 0 with them when a batch has "
               "one row";
    if (rt_norm_axis(n->attrs.axis, n->in[0]->type.shape.rank, &axis) && axis == 0)
        return "removes dimension 0, the batch's";
    return NULL;
}

static const char *expand_dims(const ir_node *n)
{
    int axis;
    if (rt_norm_axis(n->attrs.axis, n->in[0]->type.shape.rank + 1, &axis) && axis == 0)
        return "inserts a new dimension 0, which moves the batch to dimension 1";
    return NULL;
}

static const char *tensor_array(const rows *R, const ir_node *n)
{
    if (n->opcode == RT_OP_TA_STACK)
        return "stacks batched elements along a new dimension 0, which moves the batch to "
               "dimension 1";
    if (batched(R, n->in[1]))
        return "indexes a tensor array with a batched value";
    return NULL;
}

/* Why op n mixes rows, or NULL; at least one operand is batched. */
static const char *mixes(const rows *R, const ir_node *n)
{
    switch (rules[n->opcode]) {
    case R_SOURCE: return "takes a batched operand where it needs one value for every row";
    case R_ELEMENTWISE: return broadcast(R, n, 0);
    case R_AXIS: return along_axis(n);
    case R_MATMUL: return matmul(R, n);
    case R_CONV2D:
        return batched(R, n->in[1]) ? "convolves with a batched filter" : NULL;
    case R_RESHAPE: return reshape(n);
    case R_TRANSPOSE:
        return n->attrs.perm.rank >= 1 && n->attrs.perm.dims[0] == 0
                   ? NULL
                   : "moves dimension 0, the batch's, to another place";
    case R_CONCAT: return concat(R, n, n->type.shape.rank);
    case R_STACK: return concat(R, n, n->type.shape.rank);
    case R_SLICE: return slice(n);
    case R_GATHER: return gather(R, n);
    case R_EXPAND_DIMS: return expand_dims(n);
    case R_SQUEEZE: return squeeze(n);
    case R_SIZE: return "depends on the number of rows in the batch, padding rows included";
    case R_ASSERT:
        return "checks every row of the batch: the padding rows and other requests' rows "
               "too";
    case R_ASSIGN:
        return "writes a variable from a batch: other requests' rows and the padding rows "
               "reach later calls";
    case R_TA_READ:
    case R_TA_STACK:
    case R_TA_WRITE: return tensor_array(R, n);
    case R_SAME:
    case R_PRINT:
    case R_TA_SIZE: return NULL;
    }
    return "has no rule for the rows of a batch";
}

/* The kind of n's result when it mixes no rows. */
static int result_kind(int opcode)
{
    rule r = rules[opcode];
    return r == R_PRINT || r == R_TA_SIZE || r == R_ASSERT || r == R_ASSIGN ? BCAST : ROW;
}

/* ------------------------------------------------------------- the walk */

/* "FILE:LINE: 'ag_OP' WHY" into err; false. */
static bool refuse(const ir_node *n, const char *why, char *err, size_t errlen)
{
    char name[64];
    switch (n->opcode) {
    case RT_OP_VAR_READ: snprintf(name, sizeof name, "ag_variable_read"); break;
    case RT_OP_TA_NEW: snprintf(name, sizeof name, "ag_tensor_array_new"); break;
    case RT_OP_TA_WRITE: snprintf(name, sizeof name, "ag_tensor_array_write"); break;
    case RT_OP_TA_READ: snprintf(name, sizeof name, "ag_tensor_array_read"); break;
    case RT_OP_TA_STACK: snprintf(name, sizeof name, "ag_tensor_array_stack"); break;
    case IR_COND: snprintf(name, sizeof name, "if"); break;
    default: snprintf(name, sizeof name, "ag_%s", ir_opcode_name(n->opcode));
    }
    int k = n->loc.file ? snprintf(err, errlen, "%s:%d: ", n->loc.file, n->loc.line) : 0;
    if (k < 0 || (size_t)k >= errlen)
        k = 0;
    snprintf(err + k, errlen - (size_t)k, "'%s' %s", name, why);
    return false;
}

typedef struct walk {
    rows *R;
    char *err;
    size_t errlen;
} walk;

static bool graph(walk *W, const ir_graph *g);

static void set_params(walk *W, const ir_graph *g, const uint8_t *kinds)
{
    for (int i = 0; i < g->n_params; i++)
        W->R->kind[g->params[i]->id] = kinds[i];
}

static uint8_t *tuple_of(walk *W, const ir_node *n)
{
    if (!W->R->tuple[n->id])
        W->R->tuple[n->id] = calloc((size_t)(n->n_results + n->n_in) + 1, 1);
    return W->R->tuple[n->id];
}

/* Both branches see the operands after the predicate; a result is ROW
 * when either branch makes it so. */
static bool cond(walk *W, const ir_node *n)
{
    if (batched(W->R, n->in[0]))
        return refuse(n, "branches on a batched value", W->err, W->errlen);
    uint8_t *in = calloc((size_t)n->n_in + 1, 1), *out = tuple_of(W, n);
    for (int i = 1; i < n->n_in; i++)
        in[i - 1] = W->R->kind[n->in[i]->id];
    bool ok = true;
    for (int r = 0; r < 2 && ok; r++) {
        set_params(W, n->region[r], in);
        ok = graph(W, n->region[r]);
        for (int i = 0; ok && i < n->n_results; i++)
            out[i] |= W->R->kind[n->region[r]->results[i]->id];
    }
    free(in);
    return ok;
}

/* The loop variables rise from their initial kinds to a fixed point. */
static bool loop(walk *W, const ir_node *n)
{
    uint8_t *vars = tuple_of(W, n);
    for (int i = 0; i < n->n_in; i++)
        vars[i] = W->R->kind[n->in[i]->id];
    for (bool changed = true; changed;) {
        changed = false;
        for (int r = 0; r < 2; r++) {
            set_params(W, n->region[r], vars);
            if (!graph(W, n->region[r]))
                return false;
        }
        const ir_graph *body = n->region[1];
        for (int i = 0; i < body->n_results && i < n->n_in; i++)
            if (W->R->kind[body->results[i]->id] > vars[i]) {
                vars[i] = ROW;
                changed = true;
            }
    }
    return true;
}

static bool op(walk *W, const ir_node *n)
{
    bool any = false;
    for (int i = 0; i < n->n_in; i++)
        any |= batched(W->R, n->in[i]);
    W->R->kind[n->id] = BCAST;
    if (!any)
        return true;
    const char *why = mixes(W->R, n);
    if (why)
        return refuse(n, why, W->err, W->errlen);
    W->R->kind[n->id] = (uint8_t)result_kind(n->opcode);
    return true;
}

static bool node(walk *W, const ir_node *n)
{
    switch (n->opcode) {
    case IR_COND: return cond(W, n);
    case IR_WHILE: return loop(W, n);
    case IR_GET:
        W->R->kind[n->id] = W->R->tuple[n->in[0]->id][n->index];
        return true;
    default: return op(W, n);
    }
}

static bool graph(walk *W, const ir_graph *g)
{
    for (const ir_node *n = g->first; n; n = n->next)
        if (!node(W, n))
            return false;
    return true;
}

/* Every result needs the batch's rows to hand back. */
static bool results(walk *W, const ir_graph *g)
{
    for (int i = 0; i < g->n_results; i++) {
        const ir_node *v = g->results[i];
        if (batched(W->R, v))
            continue;
        int k = v->loc.file ? snprintf(W->err, W->errlen, "%s:%d: ", v->loc.file,
                                       v->loc.line) : 0;
        if (k < 0 || (size_t)k >= W->errlen)
            k = 0;
        snprintf(W->err + k, W->errlen - (size_t)k, "result %d does not depend on the batched "
                 "inputs row by row: it has no rows of the batch to hand back", i + 1);
        return false;
    }
    return true;
}

bool pass_rows_check(const ir_function *fn, const bool *batched_params, char *err,
                     size_t errlen)
{
    rows R = {calloc((size_t)fn->next_id + 1, 1),
              calloc((size_t)fn->next_id + 1, sizeof *R.tuple)};
    walk W = {&R, err, errlen};
    const ir_graph *g = fn->body;
    for (int i = 0; i < g->n_params; i++)
        R.kind[g->params[i]->id] = !batched_params || batched_params[i] ? ROW : BCAST;
    bool ok = graph(&W, g) && results(&W, g);
    for (int i = 0; i < fn->next_id; i++)
        free(R.tuple[i]);
    free(R.tuple);
    free(R.kind);
    return ok;
}
