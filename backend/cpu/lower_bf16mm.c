/*
 * lower_bf16mm.c - native bf16 matrix products c[m,n] = a[m,k] x b[k,n].
 *
 * Both paths multiply bf16 values and accumulate in f32, then round each
 * element of c once to bf16 (cg_round_bf16), as the runtime's kernel
 * does (which widens to f32, calls sgemm and rounds). They differ from it,
 * and from each other, only in the order of the f32 additions:
 *
 *   converting path (every CPU; products up to MATMUL_MAX_WORK, larger
 *   ones call the kernel): operands widened to f32, each c[i,j] summed in
 *   order p = 0 .. k-1, a multiply then an add. A product of two bf16
 *   values is exact in f32 (8 + 8 significant bits), so this is an f32
 *   FMA chain bit for bit, except where a product falls below f32's
 *   normal range.
 *
 *   dot-product path (CPUs with AVX512_BF16, every size): vdpbf16ps
 *   (llvm.x86.avx512bf16.dpbf16ps.512), which adds to each f32 lane the
 *   products of a pair of bf16 values: for p = 0, 2, 4, .. it adds
 *   a[i,p+1]*b[p+1,j], then a[i,p]*b[p,j], each add rounded to nearest
 *   even, with subnormal inputs and results flushed to zero (the
 *   instruction's DAZ/FTZ). An odd k ends with a pair whose second half is 0.
 *
 *   AMX path (code for this host, AVX512_BF16, at least 16 rows): a call
 *   to cg_rt_matmul_bf16_amx (runtime/kernels/bf16mm_amx.c, tdpbf16ps on
 *   16x16 f32 tiles), which decides at run time whether the process may
 *   use AMX; when it may not (or AG_NO_AMX), the dot-product path runs.
 *   The hardware's order within a tile product is its own (docs/
 *   runtime.md); the sums keep the bound below.
 *
 * Reordered f32 sums of k products differ by at most about k * 2^-24 *
 * sum |a[i,p] b[p,j]| (and by flushed subnormals), far below the final
 * rounding to bf16 (2^-9 relative): docs/runtime.md states the tolerance
 * tests use.
 *
 * The dot-product kernel holds a 6x64 block of c in 24 zmm accumulators
 * and, per pair of k, loads 4 vectors of bf16 pairs of b and broadcasts a
 * pair of a per row. b's pairs are interleaved once per call: each block
 * of 64 columns is packed into [pair q][column][2] (b[2q,j], b[2q+1,j])
 * in a scratch value the size of b, so every tile of rows streams it with
 * plain loads (a product with one tile of rows interleaves where it reads
 * instead). It is an outlined loop over columns, run in parallel chunks
 * (multiples of 64 columns: cg_rt_parallel_for aligns chunks to
 * CG_RT_CHUNK_ALIGN) for large products; each chunk packs its own blocks,
 * disjoint parts of the scratch. A constant b (a weight the graph
 * captured) is packed when compiling instead, into a constant of the
 * module that every call reads (packed_for_dot; packed_for_amx for the
 * AMX kernel's layout).
 */
#include "bf16mm_amx.h"
#include "cg_runtime.h"
#include "lower.h"

#include <stdio.h>
#include <stdlib.h>

/* The dot-product kernel's block of c: MR rows x NR vectors of LANES
 * f32, 24 of the 32 zmm registers, beside NR vectors of b. */
enum { MR = 6, NR = 4, LANES = 16, TILE_COLS = NR * LANES };
/* i16 elements of one pair of k in a packed column block: TILE_COLS
 * pairs of bf16 (256 bytes). */
enum { PAIR_ROW = 2 * TILE_COLS };
/* Parallel chunks of columns are whole blocks of TILE_COLS (see dot_function). */
_Static_assert(CG_RT_CHUNK_ALIGN % TILE_COLS == 0, "parallel chunks must hold whole column blocks");
/* Products of at least this many multiply-adds run in parallel chunks. */
enum { BF16MM_PARALLEL_WORK = 1 << 21 };

static LLVMValueRef gep(cg_lower *L, LLVMTypeRef t, LLVMValueRef base, LLVMValueRef i)
{
    return LLVMBuildInBoundsGEP2(L->b, t, base, &i, 1, "");
}

static LLVMValueRef mul(cg_lower *L, LLVMValueRef a, LLVMValueRef b)
{
    return LLVMBuildNSWMul(L->b, a, b, "");
}

static LLVMValueRef add(cg_lower *L, LLVMValueRef a, LLVMValueRef b)
{
    return LLVMBuildNSWAdd(L->b, a, b, "");
}

static LLVMValueRef new_function(cg_lower *L, const char *name, LLVMTypeRef *params, unsigned n)
{
    LLVMValueRef f = LLVMAddFunction(L->mod, name, LLVMFunctionType(L->t_void, params, n, 0));
    LLVMSetLinkage(f, LLVMInternalLinkage);
    cg_add_attr(L, f, LLVMAttributeFunctionIndex, "noinline", 0);
    cg_add_attr(L, f, LLVMAttributeFunctionIndex, "nounwind", 0);
    return f;
}

/* The module's function `<kind>_<m>x<k>x<n>` (one per product shape, so
 * a chain of products compiles each loop nest once): the existing one
 * (*made false), or a new one with these three parameters (*made true). */
static LLVMValueRef product_function(cg_lower *L, const char *kind, int64_t m, int64_t k,
                                     int64_t n, LLVMTypeRef *params, bool *made)
{
    char name[96];
    snprintf(name, sizeof name, "%s_%lldx%lldx%lld", kind, (long long)m, (long long)k,
             (long long)n);
    LLVMValueRef f = LLVMGetNamedFunction(L->mod, name);
    *made = !f;
    return f ? f : new_function(L, name, params, 3);
}

/* ------------------------------------------------------ converting path */

/* Columns of c summed at once: an f32 row segment that stays in L1. */
enum { CONV_COLS = 256 };

/*
 * i-p-j order over segments of CONV_COLS columns, like the f32 product
 * (lower_loop.c): acc[j] += a[i,p] * b[p,j] for p = 0 .. k-1, in an f32
 * segment on the stack, then rounded into c. Only the j loops vectorize
 * (cg_loop_hints keeps the vectorizer off i and p, which it would
 * otherwise vectorize down b's columns with gathers).
 */
static LLVMValueRef converting_function(cg_lower *L, int64_t m, int64_t k, int64_t n)
{
    LLVMTypeRef params[3] = {L->t_ptr, L->t_ptr, L->t_ptr};
    bool made;
    LLVMValueRef f = product_function(L, "matmul_bf16", m, k, n, params, &made);
    if (!made)
        return f;
    cg_add_attr(L, f, 3, "noalias", 0);
    LLVMBasicBlockRef saved = LLVMGetInsertBlock(L->b);
    LLVMPositionBuilderAtEnd(L->b, LLVMAppendBasicBlockInContext(L->ctx, f, "entry"));
    LLVMValueRef a = LLVMGetParam(f, 0), b = LLVMGetParam(f, 1), c = LLVMGetParam(f, 2);
    int64_t seg = n < CONV_COLS ? n : CONV_COLS;
    LLVMValueRef acc = LLVMBuildAlloca(L->b, LLVMArrayType2(L->t_f32, (uint64_t)seg), "acc");
    int64_t n_segs = (n + seg - 1) / seg;

    cg_loop li, ls, lz, lp, lj, lo;
    cg_loop_begin(L, &li, cg_i64(L, m));
    cg_loop_begin(L, &ls, cg_i64(L, n_segs));
    LLVMValueRef j0 = mul(L, ls.iv, cg_i64(L, seg));
    LLVMValueRef left = LLVMBuildNSWSub(L->b, cg_i64(L, n), j0, "");
    LLVMValueRef full = LLVMBuildICmp(L->b, LLVMIntSGT, left, cg_i64(L, seg), "");
    LLVMValueRef width = LLVMBuildSelect(L->b, full, cg_i64(L, seg), left, "width");
    cg_loop_begin(L, &lz, width);
    LLVMBuildStore(L->b, LLVMConstReal(L->t_f32, 0), gep(L, L->t_f32, acc, lz.iv));
    cg_loop_end(L, &lz);
    cg_loop_begin(L, &lp, cg_i64(L, k));
    LLVMValueRef ap = cg_load_elem(L, AG_BF16, gep(L, L->t_i16, a, add(L, mul(L, li.iv, cg_i64(L, k)), lp.iv)));
    LLVMValueRef brow = add(L, mul(L, lp.iv, cg_i64(L, n)), j0);
    cg_loop_begin(L, &lj, width);
    LLVMValueRef slot = gep(L, L->t_f32, acc, lj.iv);
    LLVMValueRef bv = cg_load_elem(L, AG_BF16, gep(L, L->t_i16, b, add(L, brow, lj.iv)));
    LLVMValueRef sum = LLVMBuildFAdd(L->b, LLVMBuildLoad2(L->b, L->t_f32, slot, ""),
                                     LLVMBuildFMul(L->b, ap, bv, ""), "");
    LLVMBuildStore(L->b, sum, slot);
    cg_loop_end(L, &lj);
    cg_loop_end(L, &lp);
    cg_loop_hints(L, lp.latch, false);
    LLVMValueRef crow = add(L, mul(L, li.iv, cg_i64(L, n)), j0);
    cg_loop_begin(L, &lo, width);
    LLVMValueRef v = cg_round_bf16(L, LLVMBuildLoad2(L->b, L->t_f32, gep(L, L->t_f32, acc, lo.iv), ""));
    cg_store_elem(L, AG_BF16, v, gep(L, L->t_i16, c, add(L, crow, lo.iv)));
    cg_loop_end(L, &lo);
    cg_loop_end(L, &ls);
    cg_loop_hints(L, ls.latch, true);
    cg_loop_end(L, &li);
    cg_loop_hints(L, li.latch, true);
    LLVMBuildRetVoid(L->b);
    LLVMPositionBuilderAtEnd(L->b, saved);
    return f;
}

/* --------------------------------------------------- dot-product path */

typedef struct dot {
    cg_lower *L;
    int64_t m, k, n;
    LLVMValueRef a, b, c;
    LLVMValueRef scratch; /* packed b: pack_elems(k) i16 per column block, or NULL
                           * (packs_b): pairs of b interleaved where used */
    bool prepacked;       /* scratch came packed (a constant b): read it only */
    LLVMValueRef packed;  /* the current column block's part of scratch */
    LLVMValueRef acc;     /* [MR*NR x <16 x float>] on the stack */
    LLVMTypeRef v16f, v16i16, v16i32, v32bf;
} dot;

/* Whether b is packed: its pairs serve every tile of MR rows, so with
 * more than one tile they are interleaved once instead of per tile. */
static bool packs_b(int64_t m)
{
    return m > MR;
}

/* i16 elements of one packed column block: PAIR_ROW per pair of k. */
static int64_t pack_elems(int64_t k)
{
    return (k + 1) / 2 * PAIR_ROW;
}

static LLVMValueRef lane_mask(dot *D, int lanes)
{
    LLVMValueRef bits[LANES];
    for (int i = 0; i < LANES; i++)
        bits[i] = LLVMConstInt(D->L->t_i1, i < lanes, 0);
    return LLVMConstVector(bits, LANES);
}

/* 16 bf16 of b (or of c) at element offset off; `lanes` < 16: the rest
 * are 0 and not read. */
static LLVMValueRef load_row16(dot *D, LLVMValueRef base, LLVMValueRef off, int lanes)
{
    cg_lower *L = D->L;
    LLVMValueRef p = gep(L, L->t_i16, base, off);
    if (lanes == LANES) {
        LLVMValueRef v = LLVMBuildLoad2(L->b, D->v16i16, p, "");
        LLVMSetAlignment(v, 2);
        return v;
    }
    LLVMTypeRef over[2] = {D->v16i16, L->t_ptr};
    LLVMValueRef args[4] = {p, cg_i32(L, 2), lane_mask(D, lanes), LLVMConstNull(D->v16i16)};
    return cg_call_intrinsic(L, "llvm.masked.load", over, 2, args, 4);
}

static void store_row16(dot *D, LLVMValueRef v, LLVMValueRef base, LLVMValueRef off, int lanes)
{
    cg_lower *L = D->L;
    LLVMValueRef p = gep(L, L->t_i16, base, off);
    if (lanes == LANES) {
        LLVMSetAlignment(LLVMBuildStore(L->b, v, p), 2);
        return;
    }
    LLVMTypeRef over[2] = {D->v16i16, L->t_ptr};
    LLVMValueRef args[4] = {v, p, cg_i32(L, 2), lane_mask(D, lanes)};
    cg_call_intrinsic(L, "llvm.masked.store", over, 2, args, 4);
}

/* Rows 2q and 2q+1 of b (2q+1 absent: zeros) at column col, interleaved
 * into 16 pairs: element 2j is b[2q,col+j], element 2j+1 is b[2q+1,col+j]. */
static LLVMValueRef b_pairs(dot *D, LLVMValueRef q, bool second, LLVMValueRef col, int lanes)
{
    cg_lower *L = D->L;
    LLVMValueRef row = mul(L, mul(L, q, cg_i64(L, 2)), cg_i64(L, D->n));
    LLVMValueRef lo = load_row16(D, D->b, add(L, row, col), lanes);
    LLVMValueRef hi = second ? load_row16(D, D->b, add(L, add(L, row, cg_i64(L, D->n)), col),
                                          lanes)
                             : LLVMConstNull(D->v16i16);
    LLVMValueRef idx[2 * LANES];
    for (int j = 0; j < LANES; j++) {
        idx[2 * j] = LLVMConstInt(L->t_i32, (unsigned)j, 0);
        idx[2 * j + 1] = LLVMConstInt(L->t_i32, (unsigned)(LANES + j), 0);
    }
    LLVMValueRef v = LLVMBuildShuffleVector(L->b, lo, hi, LLVMConstVector(idx, 2 * LANES), "");
    return LLVMBuildBitCast(L->b, v, D->v32bf, "bpair");
}

/* Where the pairs of vector v of pair q sit in the packed block (64-byte
 * aligned: scratch is, and blocks and pair rows are multiples of 64). */
static LLVMValueRef packed_at(dot *D, LLVMValueRef q, int v)
{
    cg_lower *L = D->L;
    return gep(L, L->t_i16, D->packed,
               add(L, mul(L, q, cg_i64(L, PAIR_ROW)), cg_i64(L, v * 2 * LANES)));
}

/* Pair q of the packed block: b_pairs of each of its nv vectors. */
static void pack_pair(dot *D, LLVMValueRef q, bool second, LLVMValueRef col0, int nv,
                      int last_lanes)
{
    cg_lower *L = D->L;
    for (int v = 0; v < nv; v++) {
        LLVMValueRef bv = b_pairs(D, q, second, add(L, col0, cg_i64(L, v * LANES)),
                                  v == nv - 1 ? last_lanes : LANES);
        LLVMSetAlignment(LLVMBuildStore(L->b, bv, packed_at(D, q, v)), 64);
    }
}

/* D->packed: the part of scratch for the column block at col0 (a
 * multiple of TILE_COLS). */
static void find_block(dot *D, LLVMValueRef col0)
{
    cg_lower *L = D->L;
    LLVMValueRef block = LLVMBuildUDiv(L->b, col0, cg_i64(L, TILE_COLS), "block");
    D->packed = gep(L, L->t_i16, D->scratch, mul(L, block, cg_i64(L, pack_elems(D->k))));
}

/* The column block at col0 into its place in scratch: pair rows q = 0 ..
 * (k+1)/2 - 1, the last one of an odd k with zeros for its second half.
 * Lanes past the columns hold zeros. */
static void pack_block(dot *D, LLVMValueRef col0, int nv, int last_lanes)
{
    cg_lower *L = D->L;
    find_block(D, col0);
    cg_loop lq;
    cg_loop_begin(L, &lq, cg_i64(L, D->k / 2));
    pack_pair(D, lq.iv, true, col0, nv, last_lanes);
    cg_loop_end(L, &lq);
    if (D->k % 2)
        pack_pair(D, cg_i64(L, D->k / 2), false, col0, nv, last_lanes);
}

/* Vector v of pair q of b at col0: from the packed block, or interleaved
 * from b's rows. */
static LLVMValueRef b_vector(dot *D, LLVMValueRef q, bool second, LLVMValueRef col0, int v,
                             int lanes)
{
    cg_lower *L = D->L;
    if (!D->scratch)
        return b_pairs(D, q, second, add(L, col0, cg_i64(L, v * LANES)), lanes);
    LLVMValueRef bv = LLVMBuildLoad2(L->b, D->v32bf, packed_at(D, q, v), "bpair");
    LLVMSetAlignment(bv, 64);
    return bv;
}

/* a[row, 2q] and a[row, 2q+1] (absent: 0) broadcast to every lane's pair. */
static LLVMValueRef a_pair(dot *D, LLVMValueRef row, LLVMValueRef q, bool second)
{
    cg_lower *L = D->L;
    LLVMValueRef p = mul(L, q, cg_i64(L, 2));
    LLVMValueRef ptr = gep(L, L->t_i16, D->a, add(L, mul(L, row, cg_i64(L, D->k)), p));
    LLVMValueRef pair;
    if (second) {
        pair = LLVMBuildLoad2(L->b, L->t_i32, ptr, "");
        LLVMSetAlignment(pair, 2);
    } else {
        pair = LLVMBuildZExt(L->b, LLVMBuildLoad2(L->b, L->t_i16, ptr, ""), L->t_i32, "");
    }
    LLVMValueRef one = LLVMBuildInsertElement(L->b, LLVMGetUndef(D->v16i32), pair,
                                              cg_i32(L, 0), "");
    LLVMValueRef splat = LLVMBuildShuffleVector(L->b, one, LLVMGetUndef(D->v16i32),
                                                LLVMConstNull(D->v16i32), "");
    return LLVMBuildBitCast(L->b, splat, D->v32bf, "apair");
}

static LLVMValueRef acc_slot(dot *D, int r, int v)
{
    return gep(D->L, D->v16f, D->acc, cg_i64(D->L, r * NR + v));
}

/* One step of k: pair q (second: whether it has its second half; not for
 * the last pair of an odd k). */
static void dot_step(dot *D, LLVMValueRef row0, LLVMValueRef col0, int rows, int nv,
                     int last_lanes, LLVMValueRef q, bool second)
{
    cg_lower *L = D->L;
    LLVMValueRef bv[NR];
    for (int v = 0; v < nv; v++)
        bv[v] = b_vector(D, q, second, col0, v, v == nv - 1 ? last_lanes : LANES);
    for (int r = 0; r < rows; r++) {
        LLVMValueRef av = a_pair(D, add(L, row0, cg_i64(L, r)), q, second);
        for (int v = 0; v < nv; v++) {
            LLVMValueRef slot = acc_slot(D, r, v);
            LLVMValueRef args[3] = {LLVMBuildLoad2(L->b, D->v16f, slot, ""), av, bv[v]};
            LLVMValueRef s = cg_call_intrinsic(L, "llvm.x86.avx512bf16.dpbf16ps.512", NULL, 0,
                                               args, 3);
            LLVMBuildStore(L->b, s, slot);
        }
    }
}

/* c[row0 .. row0+rows, col0 .. col0 + 16*nv) (the last vector holding
 * last_lanes columns), all of k. */
static void dot_tile(dot *D, LLVMValueRef row0, LLVMValueRef col0, int rows, int nv,
                     int last_lanes)
{
    cg_lower *L = D->L;
    for (int r = 0; r < rows; r++)
        for (int v = 0; v < nv; v++)
            LLVMBuildStore(L->b, LLVMConstNull(D->v16f), acc_slot(D, r, v));
    cg_loop lq;
    cg_loop_begin(L, &lq, cg_i64(L, D->k / 2));
    dot_step(D, row0, col0, rows, nv, last_lanes, lq.iv, true);
    cg_loop_end(L, &lq);
    if (D->k % 2)
        dot_step(D, row0, col0, rows, nv, last_lanes, cg_i64(L, D->k / 2), false);
    for (int r = 0; r < rows; r++) {
        for (int v = 0; v < nv; v++) {
            LLVMValueRef s = LLVMBuildLoad2(L->b, D->v16f, acc_slot(D, r, v), "");
            LLVMValueRef bits = cg_narrow_bf16(L, cg_round_bf16(L, s));
            LLVMValueRef off = add(L, mul(L, add(L, row0, cg_i64(L, r)), cg_i64(L, D->n)),
                                   add(L, col0, cg_i64(L, v * LANES)));
            store_row16(D, bits, D->c, off, v == nv - 1 ? last_lanes : LANES);
        }
    }
}

/* Every row of the column block at col0 (nv vectors, the last one holding
 * last_lanes columns): its b packed (when packs_b), then tiles of MR rows,
 * then the rows left over. */
static void dot_columns(dot *D, LLVMValueRef col0, int nv, int last_lanes)
{
    cg_lower *L = D->L;
    if (D->scratch && D->prepacked)
        find_block(D, col0);
    else if (D->scratch)
        pack_block(D, col0, nv, last_lanes);
    cg_loop lr;
    cg_loop_begin(L, &lr, cg_i64(L, D->m / MR));
    dot_tile(D, mul(L, lr.iv, cg_i64(L, MR)), col0, MR, nv, last_lanes);
    cg_loop_end(L, &lr);
    if (D->m % MR)
        dot_tile(D, cg_i64(L, D->m / MR * MR), col0, (int)(D->m % MR), nv, last_lanes);
}

/*
 * loop(ctx, begin, end) over columns [begin, end) of c, ctx = {a, b, c,
 * scratch}: begin is a multiple of 64 (a chunk of cg_rt_parallel_for, or
 * 0), end a multiple of 64 or n. Whole blocks of 64 columns first, then
 * the block n % 64 wide when end is n. Each block has its own part of
 * scratch, so parallel chunks pack and read disjoint memory.
 */
static LLVMValueRef dot_function(cg_lower *L, int64_t m, int64_t k, int64_t n, bool prepacked)
{
    LLVMTypeRef params[3] = {L->t_ptr, L->t_i64, L->t_i64};
    bool made;
    LLVMValueRef f = product_function(L, prepacked ? "matmul_bf16dot_packed" : "matmul_bf16dot",
                                      m, k, n, params, &made);
    if (!made)
        return f;
    LLVMBasicBlockRef saved = LLVMGetInsertBlock(L->b);
    LLVMPositionBuilderAtEnd(L->b, LLVMAppendBasicBlockInContext(L->ctx, f, "entry"));
    dot D = {.L = L, .m = m, .k = k, .n = n};
    D.v16f = LLVMVectorType(L->t_f32, LANES);
    D.v16i16 = LLVMVectorType(L->t_i16, LANES);
    D.v16i32 = LLVMVectorType(L->t_i32, LANES);
    D.v32bf = LLVMVectorType(LLVMBFloatTypeInContext(L->ctx), 2 * LANES);
    D.acc = LLVMBuildAlloca(L->b, LLVMArrayType2(D.v16f, MR * NR), "acc");
    LLVMValueRef ctx = LLVMGetParam(f, 0);
    LLVMValueRef ptrs[4];
    for (int i = 0; i < 4; i++)
        ptrs[i] = LLVMBuildLoad2(L->b, L->t_ptr, gep(L, L->t_ptr, ctx, cg_i64(L, i)), "");
    D.a = ptrs[0], D.b = ptrs[1], D.c = ptrs[2];
    D.scratch = packs_b(m) ? ptrs[3] : NULL;
    D.prepacked = prepacked;
    LLVMValueRef begin = LLVMGetParam(f, 1), end = LLVMGetParam(f, 2);

    LLVMValueRef blocks = LLVMBuildSDiv(L->b, LLVMBuildNSWSub(L->b, end, begin, ""),
                                        cg_i64(L, TILE_COLS), "blocks");
    cg_loop lb;
    cg_loop_begin(L, &lb, blocks);
    dot_columns(&D, add(L, begin, mul(L, lb.iv, cg_i64(L, TILE_COLS))), NR, LANES);
    cg_loop_end(L, &lb);
    int64_t rest = n % TILE_COLS;
    if (rest) {
        LLVMBasicBlockRef tail = cg_new_block(L, "tail"), done = cg_new_block(L, "done");
        LLVMBuildCondBr(L->b, LLVMBuildICmp(L->b, LLVMIntEQ, end, cg_i64(L, n), ""), tail, done);
        LLVMPositionBuilderAtEnd(L->b, tail);
        int nv = (int)((rest + LANES - 1) / LANES), last = (int)(rest - (nv - 1) * LANES);
        dot_columns(&D, cg_i64(L, n - rest), nv, last);
        LLVMBuildBr(L->b, done);
        LLVMPositionBuilderAtEnd(L->b, done);
    }
    LLVMBuildRetVoid(L->b);
    LLVMPositionBuilderAtEnd(L->b, saved);
    return f;
}

/* The packed copy of b for node n (packs_b): a bf16 value of
 * [column blocks, pair rows, PAIR_ROW], so that an allocation that fails
 * is reported at n like the output's and takes the function's error
 * path. Returns the value; *data its data. */
static LLVMValueRef new_scratch(cg_lower *L, const ir_node *n, int64_t k, int64_t nn,
                                LLVMValueRef *data)
{
    int64_t dims[3] = {(nn + TILE_COLS - 1) / TILE_COLS, (k + 1) / 2, PAIR_ROW};
    LLVMValueRef args[4] = {cg_node_ref(L, n), cg_i32(L, AG_BF16), cg_i32(L, 3),
                            cg_dims_global(L, 3, dims)};
    LLVMValueRef box = cg_call(L, &L->h.try_new, args, 4, "bpack");
    LLVMBasicBlockRef ok = cg_new_block(L, "ok");
    LLVMBuildCondBr(L->b, LLVMBuildIsNull(L->b, box, ""), L->fail_bb, ok);
    LLVMPositionBuilderAtEnd(L->b, ok);
    *data = cg_call(L, &L->h.data, &box, 1, "");
    return box;
}

/* The literal of a constant bf16 b (a weight the graph captured), or NULL. */
static const rt_value *constant_b(const ir_node *b)
{
    const rt_value *lit = b->opcode == RT_OP_CONST ? b->attrs.literal : NULL;
    return lit && lit->dtype == AG_BF16 ? lit : NULL;
}

/* What pack_block writes, for a constant b packed when compiling: per
 * block of TILE_COLS columns, pack_elems(k) i16; in it, per pair row q,
 * the pairs (b[2q, j], b[2q+1, j]) of its columns; zeros past k and n. */
static LLVMValueRef packed_for_dot(cg_lower *L, const uint16_t *b, int64_t k, int64_t n)
{
    int64_t blocks = (n + TILE_COLS - 1) / TILE_COLS;
    size_t elems = (size_t)(blocks * pack_elems(k));
    uint16_t *packed = rt_xcalloc(elems, sizeof *packed);
    for (int64_t blk = 0; blk < blocks; blk++)
        for (int64_t q = 0; q < (k + 1) / 2; q++)
            for (int64_t c = 0; c < TILE_COLS && blk * TILE_COLS + c < n; c++) {
                int64_t j = blk * TILE_COLS + c, r = 2 * q;
                uint16_t *at = packed + blk * pack_elems(k) + q * PAIR_ROW + 2 * c;
                at[0] = b[r * n + j];
                at[1] = r + 1 < k ? b[(r + 1) * n + j] : 0;
            }
    LLVMValueRef g = cg_const_bytes(L, packed, elems * sizeof *packed, "dot_packed");
    free(packed);
    return g;
}

/* `pack_constant`: a constant b is packed when compiling (code that never
 * calls the AMX kernel), instead of by every call. */
static void call_dot(cg_lower *L, const ir_node *node, int64_t m, int64_t k, int64_t n,
                     LLVMValueRef *abc, bool pack_constant)
{
    const rt_value *lit = pack_constant && packs_b(m) ? constant_b(node->in[1]) : NULL;
    LLVMValueRef f = dot_function(L, m, k, n, lit != NULL);
    LLVMValueRef ctx = cg_entry_alloca(L, LLVMArrayType2(L->t_ptr, 4), 8, "mm_ctx");
    LLVMValueRef scratch = NULL, ptrs[4] = {abc[0], abc[1], abc[2], LLVMConstNull(L->t_ptr)};
    if (lit)
        ptrs[3] = packed_for_dot(L, lit->data, k, n);
    else if (packs_b(m))
        scratch = new_scratch(L, node, k, n, &ptrs[3]);
    for (int i = 0; i < 4; i++)
        LLVMBuildStore(L->b, ptrs[i], gep(L, L->t_ptr, ctx, cg_i64(L, i)));
    if ((double)m * (double)k * (double)n >= BF16MM_PARALLEL_WORK && n >= 2 * TILE_COLS) {
        LLVMValueRef args[4] = {f, ctx, cg_i64(L, n), cg_i64(L, TILE_COLS)};
        cg_call(L, &L->h.parallel_for, args, 4, "");
    } else {
        LLVMTypeRef params[3] = {L->t_ptr, L->t_i64, L->t_i64};
        LLVMValueRef args[3] = {ctx, cg_i64(L, 0), cg_i64(L, n)};
        LLVMBuildCall2(L->b, LLVMFunctionType(L->t_void, params, 3, 0), f, args, 3, "");
    }
    if (scratch)
        cg_call(L, &L->h.free_, &scratch, 1, "");
}

/* ---------------------------------------------------------- AMX path */

/* Rows a tile of the AMX kernel holds: fewer would leave most of every
 * tile product unused, where the dot-product kernel's 6-row blocks fit. */
enum { AMX_MIN_ROWS = 16 };

/* Whether the product may call the AMX kernel: code for this host (the
 * kernel checks at run time that the process can use AMX) with enough rows. */
static bool uses_amx(const cg_lower *L, int64_t m)
{
    return L->host_amx && m >= AMX_MIN_ROWS;
}

/*
 * A constant b (a weight the graph captured) is packed into the AMX
 * kernel's panels once, when the code is compiled: a constant of the
 * module beside b, which each call reads instead of packing b again.
 * Packing took a quarter of the time of the bf16 MLP's products
 * (64x784x512 and 64x512x512) when every call did it.
 */
static LLVMValueRef packed_for_amx(cg_lower *L, const ir_node *b, int64_t k, int64_t n)
{
    const rt_value *lit = constant_b(b);
    if (!lit)
        return LLVMConstNull(L->t_ptr);
    size_t elems = rt_bf16mm_amx_packed_elems(k, n);
    uint16_t *packed = rt_xmalloc(elems * sizeof *packed);
    rt_bf16mm_amx_pack(lit->data, k, n, packed);
    LLVMValueRef g = cg_const_bytes(L, packed, elems * sizeof *packed, "amx_packed");
    free(packed);
    return g;
}

/* cg_rt_matmul_bf16_amx, and the dot-product path when it returns 0 (AMX
 * not usable in this process, AG_NO_AMX, or no scratch memory). */
static void call_amx_or_dot(cg_lower *L, const ir_node *node, int64_t m, int64_t k, int64_t n,
                            LLVMValueRef *abc)
{
    LLVMValueRef args[8] = {abc[0],       abc[1],       packed_for_amx(L, node->in[1], k, n),
                            abc[2],       cg_i64(L, m), cg_i64(L, k),
                            cg_i64(L, n), cg_i64(L, BF16MM_PARALLEL_WORK)};
    LLVMValueRef done_amx = cg_call(L, &L->h.matmul_bf16_amx, args, 8, "amx");
    LLVMBasicBlockRef no_amx = cg_new_block(L, "no_amx"), done = cg_new_block(L, "mm_done");
    LLVMBuildCondBr(L->b, LLVMBuildICmp(L->b, LLVMIntNE, done_amx, cg_i32(L, 0), ""), done, no_amx);
    LLVMPositionBuilderAtEnd(L->b, no_amx);
    call_dot(L, node, m, k, n, abc, false); /* rare: one packed copy of b is enough */
    LLVMBuildBr(L->b, done);
    LLVMPositionBuilderAtEnd(L->b, done);
}

bool cg_emit_matmul_bf16(cg_lower *L, const ir_node *n)
{
    const cg_info *ai = cg_info_of(L, n->in[0]), *bi = cg_info_of(L, n->in[1]);
    int64_t m = ai->shape.dims[0], k = ai->shape.dims[1], nn = bi->shape.dims[1];
    int64_t dims[2] = {m, nn};
    cg_alloc_output(L, n, cg_dims_global(L, 2, dims));
    LLVMValueRef abc[3] = {ai->data, bi->data, cg_info_of(L, n)->data};
    if (m == 0 || nn == 0)
        return true;
    if (L->bf16_dot) {
        if (uses_amx(L, m))
            call_amx_or_dot(L, n, m, k, nn, abc);
        else
            call_dot(L, n, m, k, nn, abc, true);
        return true;
    }
    LLVMValueRef f = converting_function(L, m, k, nn);
    LLVMTypeRef params[3] = {L->t_ptr, L->t_ptr, L->t_ptr};
    LLVMBuildCall2(L->b, LLVMFunctionType(L->t_void, params, 3, 0), f, abc, 3, "");
    return true;
}
