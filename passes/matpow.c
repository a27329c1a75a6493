/*
 * matpow.c - integer matrix-power chains by repeated squaring.
 *
 * requires: a valid function.
 * keeps:    every result bit for bit; every effect (only pure integer
 *           matmuls of known shapes, which cannot fail, are replaced).
 * breaks:   nothing. New nodes go right before the chain's last node, after
 *           both of the chain's operands, and take its source location.
 *
 * Rewrites (x an n x n integer matrix, r0 a matrix, k products):
 *   matmul(x, matmul(x, ... matmul(x, r0)))  -> matmul(x^k, r0)
 *   matmul(matmul(... matmul(r0, x) ..., x), x) -> matmul(r0, x^k)
 *   either chain with r0 == x                -> x^(k+1)
 * where x^k is computed by repeated squaring: floor(log2 k) squarings and
 * popcount(k) - 1 more products instead of k - 1.
 *
 * Why this keeps every bit: i32 and i64 matmul wrap (the kernels compute in
 * unsigned arithmetic), i.e. they compute in the ring of integers modulo
 * 2^32 or 2^64, where matrix multiplication is exactly associative, and the
 * powers of one matrix commute with each other. Float matmul rounds each
 * product and sum, so a different grouping gives different bits (and
 * inf/NaN may appear or vanish): floats are never rewritten.
 *
 * A chain is maximal: every node but the last has exactly one use (the
 * next node; so it is not a graph result), every node has the same factor
 * x on the same side, the same dtype (i32 or i64), fully known rank-2
 * shapes and the same device. Each graph (each cond/while region) is
 * handled on its own, so chains never cross a region boundary. A chain is
 * rewritten only when it saves multiply-adds (n^3 per square product,
 * n*n*m per product with an n x m operand): a long chain applied to a thin
 * r0 (n x 1, say) can be cheaper than squaring n x n matrices.
 */
#include "pass_internal.h"

#include <stdlib.h>
#include <string.h>

/* The state for one graph: use counts and "already handled" marks by id. */
typedef struct chains {
    ir_graph *g;
    int n_ids;
    int *uses;
    bool *done;
    bool changed;
} chains;

/* A chain found by walking back from its last node. */
typedef struct chain {
    ir_node *last;  /* the chain's result */
    ir_node *x;     /* the repeated factor */
    ir_node *r0;    /* the operand the first product starts from */
    bool left;      /* x on the left: x * (x * (... * r0)) */
    int64_t k;      /* the number of products */
} chain;

/* ------------------------------------------------------------- predicates */

static bool known_matrix(const ir_type *t)
{
    return rt_is_int(t->dtype) && t->shape.rank == 2 && pass_type_known(t);
}

/* An integer matmul of known 2-D operands and result: a candidate link. */
static bool int_matmul(const ir_node *n)
{
    return n->opcode == RT_OP_MATMUL && n->n_in == 2 && known_matrix(&n->type) &&
           known_matrix(&n->in[0]->type) && known_matrix(&n->in[1]->type);
}

static bool square(const ir_type *t) { return t->shape.dims[0] == t->shape.dims[1]; }

/* p continues the chain that `next` extends: the same factor x on the
 * same side, used only by `next`, on the same device. */
static bool is_link(const chains *c, const ir_node *p, const ir_node *next, const ir_node *x,
                    bool left)
{
    return p->id < c->n_ids && !c->done[p->id] && c->uses[p->id] == 1 && int_matmul(p) &&
           p->in[left ? 0 : 1] == x && p->device == next->device;
}

/* Walks back from `last` with x on the given side; k = 1 for a lone node. */
static chain walk(const chains *c, ir_node *last, bool left)
{
    chain ch = {.last = last, .x = last->in[left ? 0 : 1], .left = left, .k = 1};
    ir_node *cur = last;
    for (;;) {
        ir_node *p = cur->in[left ? 1 : 0];
        if (!is_link(c, p, cur, ch.x, left))
            break;
        cur = p;
        ch.k++;
    }
    ch.r0 = cur->in[left ? 1 : 0];
    return ch;
}

/* ------------------------------------------------------------------ costs */

static int popcount64(uint64_t v)
{
    int n = 0;
    for (; v; v &= v - 1)
        n++;
    return n;
}

static int floor_log2(uint64_t v)
{
    int n = -1;
    for (; v; v >>= 1)
        n++;
    return n;
}

/* The number of products repeated squaring needs for x^e (e >= 1). */
static int64_t power_products(int64_t e)
{
    return floor_log2((uint64_t)e) + popcount64((uint64_t)e) - 1;
}

/* Multiply-adds saved by rewriting ch (<= 0: keep the chain). Doubles,
 * because n^3 times a count may not fit in an int64_t. */
static double saving(const chain *ch)
{
    double n = (double)ch->x->type.shape.dims[0];
    double cube = n * n * n;
    if (ch->r0 == ch->x)
        return (double)ch->k * cube - (double)power_products(ch->k + 1) * cube;
    /* r0 is n x m (left chain) or m x n (right chain). */
    double m = (double)ch->r0->type.shape.dims[ch->left ? 1 : 0];
    double chain_cost = (double)ch->k * n * n * m;
    return chain_cost - ((double)power_products(ch->k) * cube + n * n * m);
}

/* ------------------------------------------------------------- rewriting */

static ir_node *product(chains *c, ir_node *a, ir_node *b, const ir_type *t, const chain *ch)
{
    ir_node *in[2] = {a, b};
    rt_attrs none;
    memset(&none, 0, sizeof none);
    return pass_new_node(c->g, ch->last, RT_OP_MATMUL, &none, 2, in, t, ch->last);
}

/* x^e by repeated squaring, before the chain's last node. The powers of x
 * commute, so the order in which they are multiplied does not matter. */
static ir_node *power(chains *c, const chain *ch, int64_t e)
{
    const ir_type *t = &ch->x->type;
    ir_node *acc = NULL, *sq = ch->x;
    for (;;) {
        if (e & 1)
            acc = acc ? product(c, acc, sq, t, ch) : sq;
        e >>= 1;
        if (!e)
            return acc;
        sq = product(c, sq, sq, t, ch);
    }
}

static void rewrite(chains *c, const chain *ch)
{
    ir_node *to;
    if (ch->r0 == ch->x) {
        to = power(c, ch, ch->k + 1);
    } else {
        ir_node *xk = power(c, ch, ch->k);
        to = ch->left ? product(c, xk, ch->r0, &ch->last->type, ch)
                      : product(c, ch->r0, xk, &ch->last->type, ch);
    }
    pass_replace_uses(c->g, ch->last, to, true);
    /* The members' only uses were each other (and the last's are gone). */
    ir_node *cur = ch->last;
    for (int64_t i = 0; i < ch->k; i++) {
        ir_node *prev = cur->in[ch->left ? 1 : 0];
        ir_remove(cur);
        cur = prev;
    }
    c->changed = true;
}

/* Marks ch's members handled, so no shorter chain inside it is tried. */
static void mark(chains *c, const chain *ch)
{
    ir_node *cur = ch->last;
    for (int64_t i = 0; i < ch->k; i++) {
        c->done[cur->id] = true;
        cur = cur->in[ch->left ? 1 : 0];
    }
}

/* Tries the chain ending at n in both directions; the better one wins.
 * The members of a chain not worth rewriting are marked too: a member's
 * own chain would be a part of it (its factor x has other uses, so it
 * cannot start a chain the other way), and walking it again from each
 * member would cost time quadratic in its length. */
static void try_chain(chains *c, ir_node *n)
{
    if (c->done[n->id] || !int_matmul(n))
        return;
    chain ch[2];
    double gain[2] = {0, 0};
    for (int side = 0; side < 2; side++) {
        ch[side] = walk(c, n, side == 0);
        if (ch[side].k >= 2 && square(&ch[side].x->type))
            gain[side] = saving(&ch[side]);
    }
    mark(c, &ch[0]);
    mark(c, &ch[1]);
    int best = gain[1] > gain[0] ? 1 : 0;
    if (gain[best] > 0)
        rewrite(c, &ch[best]);
}

static void count_uses(chains *c)
{
    for (ir_node *n = c->g->first; n; n = n->next)
        for (int i = 0; i < n->n_in; i++)
            c->uses[n->in[i]->id]++;
    for (int i = 0; i < c->g->n_results; i++)
        c->uses[c->g->results[i]->id]++;
}

static bool matpow_graph(ir_graph *g)
{
    bool changed = false;
    int n_nodes = 0;
    for (ir_node *n = g->first; n; n = n->next) {
        if (pass_is_region_op(n)) {
            changed |= matpow_graph(n->region[0]);
            changed |= matpow_graph(n->region[1]);
        }
        n_nodes++;
    }
    chains c = {.g = g, .n_ids = g->fn->next_id};
    c.uses = rt_xcalloc((size_t)c.n_ids + 1, sizeof *c.uses);
    c.done = rt_xcalloc((size_t)c.n_ids + 1, sizeof *c.done);
    count_uses(&c);
    /* Chains end last in program order: walk a snapshot backwards, so each
     * is seen from its end first (rewriting adds and removes nodes). */
    ir_node **order = rt_xcalloc((size_t)n_nodes + 1, sizeof *order);
    int k = 0;
    for (ir_node *n = g->first; n; n = n->next)
        order[k++] = n;
    for (int i = n_nodes - 1; i >= 0; i--)
        try_chain(&c, order[i]);
    free(order);
    free(c.uses);
    free(c.done);
    return changed || c.changed;
}

bool pass_matpow(ir_function *fn, pass_ctx *ctx)
{
    (void)ctx;
    return matpow_graph(fn->body);
}
