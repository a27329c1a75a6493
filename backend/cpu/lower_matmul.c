/*
 * lower_matmul.c - native matrix products of small static shapes (bf16
 * ones in lower_bf16mm.c).
 *
 * c[m,n] = a[m,k] x b[k,n] in i-p-j order, like the runtime's integer
 * kernel: c's row is zeroed, then for p = 0 .. k-1 the row of b is
 * multiplied by the broadcast a[i,p] and added to it. Each c[i,j] thus
 * sums its products in order p = 0 .. k-1 with a separate multiply and
 * add (no contraction: the IR has no fast-math flags), and integers wrap.
 *
 * Only the j loop may be vectorized, along the contiguous rows of b and c.
 * For a short row LLVM first unrolls the j loop fully (its trip count is
 * a constant), which leaves the p loop innermost; for AVX-512 CPUs
 * (znver4, sapphirerapids) the loop vectorizer then vectorized p, down the
 * columns of b, with gathers and a horizontal sum per element of c: 100
 * chained 10x10 i32 products took 35 us instead of 6. So the i and
 * p loops are marked not to be loop-vectorized: an unrolled short row is
 * vectorized by the SLP vectorizer instead (a[i,p] broadcast, times the
 * row of b, added to the row of c held in registers), and a long one by
 * the loop vectorizer, which then only sees j. The i loop is not unrolled
 * either: a product small enough to unroll whole (4x8x4) became one block
 * in which the SLP vectorizer gathered across rows too.
 *
 * One internal function per (dtype, m, k, n), kept out of line so that a
 * chain of products compiles the loop nest once.
 */
#include "lower_nest.h"

#include <stdio.h>

static LLVMValueRef matmul_function(cg_lower *L, ag_dtype dt, int64_t m, int64_t k, int64_t n)
{
    char name[96];
    snprintf(name, sizeof name, "matmul_%s_%lldx%lldx%lld", ag_dtype_name(dt), (long long)m,
             (long long)k, (long long)n);
    LLVMValueRef f = LLVMGetNamedFunction(L->mod, name);
    if (f)
        return f;
    LLVMTypeRef params[3] = {L->t_ptr, L->t_ptr, L->t_ptr};
    f = LLVMAddFunction(L->mod, name, LLVMFunctionType(L->t_void, params, 3, 0));
    LLVMSetLinkage(f, LLVMInternalLinkage);
    cg_add_attr(L, f, LLVMAttributeFunctionIndex, "noinline", 0);
    cg_add_attr(L, f, LLVMAttributeFunctionIndex, "nounwind", 0);
    cg_add_attr(L, f, 3, "noalias", 0); /* the output */

    LLVMBasicBlockRef saved = LLVMGetInsertBlock(L->b);
    LLVMPositionBuilderAtEnd(L->b, LLVMAppendBasicBlockInContext(L->ctx, f, "entry"));
    LLVMValueRef a = LLVMGetParam(f, 0), b = LLVMGetParam(f, 1), c = LLVMGetParam(f, 2);
    bool fl = dt == AG_F32 || dt == AG_F64;
    LLVMTypeRef t = cg_reg_type(L, dt);
    LLVMValueRef zero = fl ? LLVMConstReal(t, 0) : LLVMConstInt(t, 0, 0);
    cg_loop li, lj, lp, lj2;
    cg_loop_begin(L, &li, cg_i64(L, m));
    LLVMValueRef crow = mul(L, li.iv, cg_i64(L, n));
    cg_loop_begin(L, &lj, cg_i64(L, n));
    LLVMBuildStore(L->b, zero, elem_ptr(L, dt, c, add(L, crow, lj.iv)));
    cg_loop_end(L, &lj);
    cg_loop_begin(L, &lp, cg_i64(L, k));
    LLVMValueRef ap = LLVMBuildLoad2(L->b, t, elem_ptr(L, dt, a, add(L, mul(L, li.iv, cg_i64(L, k)), lp.iv)), "");
    LLVMValueRef brow = mul(L, lp.iv, cg_i64(L, n));
    cg_loop_begin(L, &lj2, cg_i64(L, n));
    LLVMValueRef cp = elem_ptr(L, dt, c, add(L, crow, lj2.iv));
    LLVMValueRef bv = LLVMBuildLoad2(L->b, t, elem_ptr(L, dt, b, add(L, brow, lj2.iv)), "");
    LLVMValueRef cv = LLVMBuildLoad2(L->b, t, cp, "");
    LLVMValueRef sum = fl ? LLVMBuildFAdd(L->b, cv, LLVMBuildFMul(L->b, ap, bv, ""), "")
                          : LLVMBuildAdd(L->b, cv, LLVMBuildMul(L->b, ap, bv, ""), "");
    LLVMBuildStore(L->b, sum, cp);
    cg_loop_end(L, &lj2);
    cg_loop_end(L, &lp);
    cg_loop_hints(L, lp.latch, false);
    cg_loop_end(L, &li);
    cg_loop_hints(L, li.latch, true);
    LLVMBuildRetVoid(L->b);
    LLVMPositionBuilderAtEnd(L->b, saved);
    return f;
}

bool cg_emit_matmul(cg_lower *L, const ir_node *n)
{
    if (n->type.dtype == AG_BF16)
        return cg_emit_matmul_bf16(L, n);
    const cg_info *ai = cg_info_of(L, n->in[0]), *bi = cg_info_of(L, n->in[1]);
    int64_t m = ai->shape.dims[0], k = ai->shape.dims[1], nn = bi->shape.dims[1];
    int64_t dims[2] = {m, nn};
    cg_alloc_output(L, n, cg_dims_global(L, 2, dims));
    LLVMValueRef f = matmul_function(L, n->type.dtype, m, k, nn);
    LLVMValueRef args[3] = {ai->data, bi->data, cg_info_of(L, n)->data};
    LLVMTypeRef params[3] = {L->t_ptr, L->t_ptr, L->t_ptr};
    LLVMBuildCall2(L->b, LLVMFunctionType(L->t_void, params, 3, 0), f, args, 3, "");
    return true;
}
