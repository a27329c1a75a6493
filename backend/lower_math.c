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
 * `select`, which picks the same values; the sign is put back with the
 * same integer operations on the bits as in C.
 */
#include "lower.h"

#include "../runtime/kernels/tanh_f32.h"

#include <string.h>

/* An f32 constant. */
static LLVMValueRef fc(cg_lower *L, float v) { return LLVMConstReal(L->t_f32, v); }

/* The f32 overload of an intrinsic (llvm.fabs). */
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

/* The bits of v (an f32) as an i32, and back. */
static LLVMValueRef as_i32(cg_lower *L, LLVMValueRef v)
{
    return LLVMBuildBitCast(L->b, v, L->t_i32, "");
}

static LLVMValueRef as_f32(cg_lower *L, LLVMValueRef v)
{
    return LLVMBuildBitCast(L->b, v, L->t_f32, "");
}

/* c0 + c1*v, as the header writes it: (c[0] + c[1] * v) */
static LLVMValueRef lin(cg_lower *L, LLVMValueRef v, const float *c)
{
    return f_add(L, fc(L, c[0]), f_mul(L, fc(L, c[1]), v));
}

LLVMValueRef cg_emit_tanh_f32(cg_lower *L, LLVMValueRef x)
{
    const float *q = rt_tanh_f32_q;
    LLVMValueRef one = fc(L, 1.0f), two = fc(L, 2.0f);
    LLVMValueRef a = intrinsic(L, "llvm.fabs", &x, 1);
    LLVMValueRef amax = fc(L, RT_TANH_F32_AMAX);
    LLVMValueRef c = LLVMBuildSelect(L->b, LLVMBuildFCmp(L->b, LLVMRealOLT, a, amax, ""), a,
                                     amax, "");

    /* y = 2c = k*ln 2 + r; 2^k from the bits of the rounding sum s */
    LLVMValueRef y = f_add(L, c, c);
    LLVMValueRef rounder = fc(L, RT_TANH_F32_ROUNDER);
    LLVMValueRef s = f_add(L, f_mul(L, c, fc(L, RT_TANH_F32_2LOG2E)), rounder);
    LLVMValueRef k = f_sub(L, s, rounder);
    LLVMValueRef two_k = as_f32(L, LLVMBuildShl(L->b, as_i32(L, s), cg_i32(L, 23), ""));
    LLVMValueRef r = f_sub(L, f_sub(L, y, f_mul(L, k, fc(L, RT_TANH_F32_LN2_HI))),
                          f_mul(L, k, fc(L, RT_TANH_F32_LN2_LO)));

    /* expm1(r) = r + r^2*Q(r), Q by Estrin's scheme; then E = expm1(y) */
    LLVMValueRef r2 = f_mul(L, r, r), r4 = f_mul(L, r2, r2);
    LLVMValueRef qr = f_add(L, f_add(L, lin(L, r, q), f_mul(L, r2, lin(L, r, q + 2))),
                            f_mul(L, r4, lin(L, r, q + 4)));
    LLVMValueRef pr = f_add(L, r, f_mul(L, r2, qr));
    LLVMValueRef em1 = f_add(L, f_sub(L, two_k, one), f_mul(L, two_k, pr));

    /* tanh(a) = E / (E + 2) >= 0: OR in the sign bit of x (x ^ |x|) */
    LLVMValueRef t = LLVMBuildFDiv(L->b, em1, f_add(L, em1, two), "");
    LLVMValueRef sign = LLVMBuildXor(L->b, as_i32(L, x), as_i32(L, a), "");
    LLVMValueRef res = as_f32(L, LLVMBuildOr(L->b, as_i32(L, t), sign, ""));
    /* x itself for tiny |x| and NaN: a < TINY or unordered */
    LLVMValueRef keep = LLVMBuildFCmp(L->b, LLVMRealULT, a, fc(L, RT_TANH_F32_TINY), "");
    return LLVMBuildSelect(L->b, keep, x, res, "tanh");
}
