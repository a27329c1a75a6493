/*
 * lower_nest.h - a fused elementwise loop while it is being emitted (a
 * nest of loops over its output's dims, or one flat loop), shared by the
 * four files that emit it. They are one unit split for size: the nest
 * (lower_loop.c) runs its innermost loop in blocks that prefetch
 * (lower_prefetch.c) or its short rows in groups (lower_tile.c), either
 * of which emits the nest's levels again, and a large nest out of line
 * (lower_outline.c), which emits the nest inside the loop function.
 * lower_matmul.c includes it for the index arithmetic (elem_ptr, mul,
 * add) only; nothing else does.
 */
#ifndef CG_LOWER_NEST_H
#define CG_LOWER_NEST_H

#include "lower.h"

#include <stdint.h>

static inline LLVMValueRef elem_ptr(cg_lower *L, ag_dtype dt, LLVMValueRef base, LLVMValueRef i)
{
    return LLVMBuildInBoundsGEP2(L->b, cg_mem_type(L, dt), base, &i, 1, "");
}

static inline LLVMValueRef mul(cg_lower *L, LLVMValueRef a, LLVMValueRef b)
{
    return LLVMBuildNSWMul(L->b, a, b, "");
}

static inline LLVMValueRef add(cg_lower *L, LLVMValueRef a, LLVMValueRef b)
{
    return LLVMBuildNSWAdd(L->b, a, b, "");
}

/* ------------------------------------------------------------ leaves */

typedef struct leaf {
    const ir_node *node;
    ag_dtype dt;
    bool scalar;             /* one element, hoisted out of the loop */
    LLVMValueRef value;      /* scalar: the element; tensor: this iteration's */
    LLVMValueRef data;       /* tensor: base pointer */
    LLVMValueRef dims_ptr;   /* tensor with unknown dims: its dims array */
    LLVMValueRef strides[AG_MAX_RANK]; /* per loop dim, in elements */
    bool full;               /* a tensor of the loop's shape: read row by row */
} leaf;

typedef struct nest {
    cg_lower *L;
    cg_cluster *c;
    int rank;                       /* loop nest depth (1 when flat) */
    LLVMValueRef dims[AG_MAX_RANK]; /* loop trip counts */
    int n_leaves;
    leaf *leaves;
    LLVMValueRef *vals; /* per member: its value in the loop body */
    bool prefetch;      /* the innermost loop runs in blocks that prefetch (below) */
    int64_t group;      /* rows run as one flat loop (short rows, below); 0: no */
    LLVMValueRef *tiles; /* per leaf: its row repeated `group` times, or NULL */
    bool *columns;       /* per leaf: its tile repeats each row's one value */
} nest;

/* lower_loop.c: the body, one element of every member, reading leaf i at
 * element offs[i] and storing at out_off; loop d of the nest over [begin,
 * end) of its dim (begin NULL: all of it). */
void cg_nest_body(nest *N, LLVMValueRef out_off, LLVMValueRef *offs);
void cg_nest_level(nest *N, int d, LLVMValueRef begin, LLVMValueRef end, LLVMValueRef out_off,
                   LLVMValueRef *offs);
/*
 * An f32 tanh in a fused loop is a call of agc_tanh_f32's vector version,
 * long (a division and about 30 other operations) and opaque to LLVM's
 * cost model, which then chooses to interleave the loop by 4 or not at
 * all depending on the rest of the body: a bf16 chain (widening loads,
 * a rounding before the store) got 1, and ran 1.3x slower than it does
 * with 4, which lets the independent tanh calls of 4 vectors overlap.
 */
enum { TANH_INTERLEAVE = 4 };
bool cg_nest_calls_tanh(const cg_cluster *c);

/* lower_prefetch.c: whether the nest's innermost loop runs in blocks that
 * prefetch; the prefetches of `count` elements from leaf i's offset at[i];
 * the innermost loop d over [begin, end) in such blocks. Whether a
 * cluster computes much per element. */
bool cg_nest_wants_prefetch(const nest *N);
void cg_nest_prefetch_ahead(nest *N, LLVMValueRef *at, int64_t count);
void cg_nest_blocks(nest *N, int d, LLVMValueRef begin, LLVMValueRef end, LLVMValueRef out_off,
                    LLVMValueRef *offs);
bool cg_has_costly_op(const cg_cluster *c);

/* lower_tile.c: the rows per group of a nest whose short rows run in
 * groups (0: not); their tiles, in the loop function's entry block; rows
 * [begin, end) in groups. */
int64_t cg_nest_group_rows(nest *N);
void cg_nest_make_tiles(nest *N);
void cg_nest_groups(nest *N, LLVMValueRef begin, LLVMValueRef end);

/* lower_outline.c: whether the nest is large enough to run in parallel;
 * the nest out of line, and its call. */
bool cg_nest_parallel(const nest *N);
void cg_nest_outlined(nest *N);

#endif
