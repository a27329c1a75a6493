/*
 * lower_counted.c - counted loops i = 0 .. n-1 in LLVM IR, and the loop
 * metadata that steers LLVM's vectorizer and unroller on them.
 */
#include "lower.h"

#include <llvm-c/DebugInfo.h>

#include <string.h>

/* ------------------------------------------------------------- loops */

void cg_loop_begin(cg_lower *L, cg_loop *lp, LLVMValueRef n)
{
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(L->b);
    lp->header = cg_new_block(L, "loop");
    lp->exit = cg_new_block(L, "loop_exit");
    lp->n = n;
    LLVMValueRef any = LLVMBuildICmp(L->b, LLVMIntSGT, n, cg_i64(L, 0), "");
    LLVMBuildCondBr(L->b, any, lp->header, lp->exit);
    LLVMPositionBuilderAtEnd(L->b, lp->header);
    lp->iv = LLVMBuildPhi(L->b, L->t_i64, "i");
    LLVMValueRef zero = cg_i64(L, 0);
    LLVMAddIncoming(lp->iv, &zero, &pre, 1);
}

void cg_loop_end(cg_lower *L, cg_loop *lp)
{
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(L->b);
    LLVMValueRef next = LLVMBuildNSWAdd(L->b, lp->iv, cg_i64(L, 1), "");
    LLVMValueRef more = LLVMBuildICmp(L->b, LLVMIntSLT, next, lp->n, "");
    lp->latch = LLVMBuildCondBr(L->b, more, lp->header, lp->exit);
    LLVMAddIncoming(lp->iv, &next, &latch, 1);
    LLVMPositionBuilderAtEnd(L->b, lp->exit);
}

/* A loop hint, !{!"name", i1 false}. */
static LLVMMetadataRef hint_off(cg_lower *L, const char *name)
{
    LLVMMetadataRef ops[2] = {LLVMMDStringInContext2(L->ctx, name, strlen(name)),
                              LLVMValueAsMetadata(LLVMConstInt(L->t_i1, 0, 0))};
    return LLVMMDNodeInContext2(L->ctx, ops, 2);
}

/* Keeps LLVM's loop vectorizer off the loop whose back edge is latch
 * (llvm.loop.vectorize.enable = false) and, with no_unroll, its unroller
 * too (llvm.loop.unroll.disable). The loop ID must name itself, so it is
 * built around a temporary node that then takes its place. */
void cg_loop_hints(cg_lower *L, LLVMValueRef latch, bool no_unroll)
{
    LLVMContextRef ctx = L->ctx;
    LLVMMetadataRef self = LLVMTemporaryMDNode(ctx, NULL, 0);
    LLVMMetadataRef ops[3] = {self, hint_off(L, "llvm.loop.vectorize.enable"),
                              LLVMMDNodeInContext2(ctx, NULL, 0)};
    if (no_unroll) {
        LLVMMetadataRef name = LLVMMDStringInContext2(ctx, "llvm.loop.unroll.disable", 24);
        ops[2] = LLVMMDNodeInContext2(ctx, &name, 1);
    }
    LLVMMetadataRef id = LLVMMDNodeInContext2(ctx, ops, no_unroll ? 3 : 2);
    LLVMMetadataReplaceAllUsesWith(self, id);
    LLVMSetMetadata(latch, LLVMGetMDKindIDInContext(ctx, "llvm.loop", 9),
                    LLVMMetadataAsValue(ctx, id));
}

/* Asks LLVM's loop vectorizer to interleave the loop whose back edge is
 * latch `count` times (llvm.loop.interleave.count); its vector width stays
 * its own choice. */
void cg_loop_interleave(cg_lower *L, LLVMValueRef latch, int count)
{
    LLVMContextRef ctx = L->ctx;
    LLVMMetadataRef self = LLVMTemporaryMDNode(ctx, NULL, 0);
    LLVMMetadataRef hint[2] = {
        LLVMMDStringInContext2(ctx, "llvm.loop.interleave.count", 26),
        LLVMValueAsMetadata(LLVMConstInt(L->t_i32, (unsigned long long)count, 0))};
    LLVMMetadataRef ops[2] = {self, LLVMMDNodeInContext2(ctx, hint, 2)};
    LLVMMetadataRef id = LLVMMDNodeInContext2(ctx, ops, 2);
    LLVMMetadataReplaceAllUsesWith(self, id);
    LLVMSetMetadata(latch, LLVMGetMDKindIDInContext(ctx, "llvm.loop", 9),
                    LLVMMetadataAsValue(ctx, id));
}
