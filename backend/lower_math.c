/*
 * lower_math.c - transcendental functions built from exact IEEE
 * operations, as LLVM instructions, where agc computes them itself
 * instead of calling libm.
 *
 * cg_emit_tanh_f32 is runtime/kernels/tanh_f32.h's rt_tanh_f32 (read the
 * algorithm there), operation for operation, from the same constants: the
 * same roundings in the same order give the same bits as the eager kernel,
 * and, being arithmetic without calls, it is widened by LLVM's loop
 * vectorizer (the IR built here is scalar f32). No fast-math flags and no
 * FMA intrinsics: LLVM then only makes exact rewrites.
 * Where the C code selects with bit masks (for GCC's sake), the IR uses
 * `select`, which picks the same values.
 */
#include "lower.h"

#include "../runtime/kernels/tanh_f32.h"

#include <string.h>

/* An f32 constant. */
static LLVMValueRef fc(cg_lower *L, float v) { return LLVMConstReal(L->t_f32, v); }

/* The f32 overload of an intrinsic (llvm.fabs, llvm.copysign). */
static LLVMValueRef intrinsic(cg_lower *L, const char *name, LLVMValueRef *args, unsigned n)
{
    return cg_call_intrinsic(L, name, &L->t_f32, 1, args, n);
}

static LLVMValueRef f_add(cg_lower *L, LLVMValueRef a, LLVMValueRef b)
{
    return LLVMBuildFAdd(L->b, a, b, "");
}

static LLVMValueRef f_sub(cg_lower *L, LLVMValueRef a, LLVMValueRef b)
{
    return LLVMBuildFSub(L->b, a, b, "");
}

static LLVMValueRef f_mul(cg_lower *L, LLVMValueRef a, LLVMValueRef b)
{
    return LLVMBuildFMul(L->b, a, b, "");
}

/* c[n-1]*v^(n-1) + ... + c[0] by Horner's rule, from the top, as the
 * header writes it: (c[n-1]*v + c[n-2])*v + ... */
static LLVMValueRef horner(cg_lower *L, LLVMValueRef v, const float *c, int n)
{
    LLVMValueRef acc = fc(L, c[n - 1]);
    for (int i = n - 2; i >= 0; i--)
        acc = f_add(L, f_mul(L, acc, v), fc(L, c[i]));
    return acc;
}

LLVMValueRef cg_emit_tanh_f32(cg_lower *L, LLVMValueRef x)
{
    LLVMValueRef one = fc(L, 1.0f), two = fc(L, 2.0f);
    LLVMValueRef a = intrinsic(L, "llvm.fabs", &x, 1);

    /* small |x|: a + a*(z*P(z)) */
    LLVMValueRef z = f_mul(L, a, a);
    LLVMValueRef pz = horner(L, z, rt_tanh_f32_p, RT_TANH_F32_NP);
    LLVMValueRef small = f_add(L, a, f_mul(L, a, f_mul(L, z, pz)));

    /* e = exp(-y), y = min(2a, YMAX) */
    LLVMValueRef ymax = fc(L, RT_TANH_F32_YMAX);
    LLVMValueRef y = f_mul(L, two, a);
    y = LLVMBuildSelect(L->b, LLVMBuildFCmp(L->b, LLVMRealOLT, y, ymax, ""), y, ymax, "");
    LLVMValueRef t = LLVMBuildFNeg(L->b, y, "");
    LLVMValueRef rounder = fc(L, RT_TANH_F32_ROUNDER);
    LLVMValueRef s = f_add(L, f_mul(L, t, fc(L, RT_TANH_F32_LOG2E)), rounder);
    LLVMValueRef k = f_sub(L, s, rounder);
    LLVMValueRef sbits = LLVMBuildBitCast(L->b, s, L->t_i32, "");
    LLVMValueRef kbits = LLVMBuildShl(L->b, LLVMBuildAdd(L->b, sbits, cg_i32(L, 127), ""),
                                      cg_i32(L, 23), "");
    LLVMValueRef two_k = LLVMBuildBitCast(L->b, kbits, L->t_f32, "");
    LLVMValueRef r = f_sub(L, f_sub(L, t, f_mul(L, k, fc(L, RT_TANH_F32_LN2_HI))),
                          f_mul(L, k, fc(L, RT_TANH_F32_LN2_LO)));
    LLVMValueRef qr = horner(L, r, rt_tanh_f32_q, RT_TANH_F32_NQ);
    LLVMValueRef er = f_add(L, one, f_add(L, r, f_mul(L, f_mul(L, r, r), qr)));
    LLVMValueRef e = f_mul(L, er, two_k);
    LLVMValueRef big = f_sub(L, one, LLVMBuildFDiv(L->b, f_mul(L, two, e), f_add(L, one, e), ""));

    LLVMValueRef is_small = LLVMBuildFCmp(L->b, LLVMRealOLT, a, fc(L, RT_TANH_F32_SMALL), "");
    LLVMValueRef cs[2] = {LLVMBuildSelect(L->b, is_small, small, big, ""), x};
    LLVMValueRef res = intrinsic(L, "llvm.copysign", cs, 2);
    LLVMValueRef nan = LLVMBuildFCmp(L->b, LLVMRealUNO, x, x, "");
    return LLVMBuildSelect(L->b, nan, x, res, "tanh");
}
