/*
 * lower_prefetch.c - the prefetch rule of fused loops: which loops run
 * their innermost loop in blocks that prefetch the operands they stream
 * (those that compute much per element, or touch bf16), and the blocks.
 */
#include "lower_nest.h"

#include <stdlib.h>

/*
 * Software prefetch, for large loops that compute much per element (tanh,
 * exp, log, pow, sigmoid: the op table's RT_COST_TRANSCENDENTAL class).
 * The hardware's prefetchers keep a loop that only moves data at memory
 * speed, but in a loop that spends 30 or more vector operations per
 * element the loads come too slowly to them, and
 * the time became compute plus memory instead of the larger of the two.
 * So such a loop runs in blocks of PREFETCH_BLOCK elements, and each block
 * first prefetches every tensor it reads PREFETCH_AHEAD bytes ahead, one
 * prefetch per cache line. tanh(x*a + b)*c + x on 16M f32, 2 threads of a
 * Sapphire Rapids Xeon (hand-written C, the median of 21 runs): 5.5 ms
 * without, 3.5 ms with (compute alone: 3.2 ms); blocks of 64 elements
 * gave 3.7 ms and of 1,024 4.5 ms; AVX2 code 7.3 -> 4.9 ms, x86-64-v2 11.7
 * -> 8.9 ms. On a loop without tanh it cost 3%, so other loops go without.
 */
enum { PREFETCH_BLOCK = 256, PREFETCH_AHEAD = 4096, CACHE_LINE = 64 };

/* The op table's cost class: a polynomial or a library call an element. */
static bool costly(const ir_node *m)
{
    return m->opcode < RT_OP_COUNT && rt_ops[m->opcode].cost == RT_COST_TRANSCENDENTAL;
}

bool cg_has_costly_op(const cg_cluster *c)
{
    for (int i = 0; i < c->n_members; i++)
        if (costly(c->members[i]))
            return true;
    return false;
}

/* bf16 values are widened on every load and rounded on every store (about
 * 11 vector operations per 16 lanes), and a cache line holds 32 of them:
 * enough work per line that the hardware's prefetchers fall behind too.
 * (x*a + b)*c + x on 16M bf16 elements, converted by the bf16 pass: 2.5 -
 * 2.8 ms without prefetching, 1.8 - 2.0 ms with; the f32 loop, 4.1 - 4.5
 * ms either way. */
static bool touches_bf16(const nest *N)
{
    for (int i = 0; i < N->n_leaves; i++)
        if (N->leaves[i].dt == AG_BF16)
            return true;
    for (int i = 0; i < N->c->n_members; i++)
        if (N->c->members[i]->type.dtype == AG_BF16)
            return true;
    return false;
}

/*
 * In a nest (operands broadcast: a bias added to every row) the innermost
 * loop prefetches, when its rows are long, the operands that have the
 * loop's shape; broadcast ones are small and stay in the cache. Their rows
 * follow each other in memory, so 4 KB ahead of an element is 4 KB ahead
 * in the loop too. tanh(x + b), x [4096, 4096] f32 and b [4096]: 5.1 ms
 * without, 4.2 - 4.4 ms with, within 5% of tanh(x + 0.5), which is flat.
 */
bool cg_nest_wants_prefetch(const nest *N)
{
    bool reads_rows = false;
    for (int i = 0; i < N->n_leaves; i++)
        reads_rows |= N->leaves[i].full;
    const cg_shape *s = &N->c->shape;
    bool long_rows = N->rank == 1 || !s->known || s->dims[s->rank - 1] >= PREFETCH_BLOCK ||
                     N->group;
    if (!reads_rows || !long_rows || !cg_nest_parallel(N))
        return false; /* small loops read from the cache */
    return cg_has_costly_op(N->c) || touches_bf16(N);
}

/* Prefetches the lines that elements [at[i], at[i] + count) of every
 * operand of the loop's shape (at[i]: leaf i's element offset) will have
 * PREFETCH_AHEAD bytes later. Prefetches never fault, so addresses past
 * the end are harmless (the GEP is not inbounds). */
void cg_nest_prefetch_ahead(nest *N, LLVMValueRef *at, int64_t count)
{
    cg_lower *L = N->L;
    LLVMValueRef args[4] = {NULL, cg_i32(L, 0), cg_i32(L, 3), cg_i32(L, 1)};
    for (int i = 0; i < N->n_leaves; i++) {
        const leaf *l = &N->leaves[i];
        if (!l->full)
            continue;
        int64_t size = (int64_t)rt_dtype_size(l->dt);
        LLVMValueRef byte = add(L, mul(L, at[i], cg_i64(L, size)), cg_i64(L, PREFETCH_AHEAD));
        for (int64_t k = 0; k < count * size; k += CACHE_LINE) {
            LLVMValueRef off = add(L, byte, cg_i64(L, k));
            args[0] = LLVMBuildGEP2(L->b, L->t_i8, l->data, &off, 1, "ahead");
            cg_call_intrinsic(L, "llvm.prefetch", &L->t_ptr, 1, args, 4);
        }
    }
}

/* The innermost loop d over [begin, end) in blocks that prefetch. */
void cg_nest_blocks(nest *N, int d, LLVMValueRef begin, LLVMValueRef end,
                        LLVMValueRef out_off, LLVMValueRef *offs)
{
    cg_lower *L = N->L;
    LLVMValueRef block = cg_i64(L, PREFETCH_BLOCK);
    LLVMValueRef n = LLVMBuildNSWSub(L->b, end, begin, "");
    LLVMValueRef blocks = LLVMBuildSDiv(L->b, add(L, n, cg_i64(L, PREFETCH_BLOCK - 1)), block, "");
    cg_loop ob;
    cg_loop_begin(L, &ob, blocks);
    LLVMValueRef from = add(L, begin, mul(L, ob.iv, block));
    LLVMValueRef rest = LLVMBuildNSWSub(L->b, end, from, "");
    LLVMValueRef full = LLVMBuildICmp(L->b, LLVMIntSGT, rest, block, "");
    LLVMValueRef to = add(L, from, LLVMBuildSelect(L->b, full, block, rest, ""));
    LLVMValueRef *at = rt_xcalloc((size_t)N->n_leaves + 1, sizeof *at);
    for (int i = 0; i < N->n_leaves; i++) {
        if (!N->leaves[i].full)
            continue;
        LLVMValueRef step = mul(L, from, N->leaves[i].strides[d]);
        at[i] = offs ? add(L, offs[i], step) : step;
    }
    cg_nest_prefetch_ahead(N, at, PREFETCH_BLOCK);
    free(at);
    N->prefetch = false; /* the block's own loop is a plain loop d */
    cg_nest_level(N, d, from, to, out_off, offs);
    N->prefetch = true;
    cg_loop_end(L, &ob);
}
