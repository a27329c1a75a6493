/*
 * lower_elem.c - the scalar semantics of the elementwise ops, as LLVM
 * instructions: one element of each operand in, one element out.
 *
 * Every formula here must give exactly what runtime/kernels/elementwise.c
 * gives, bit for bit, because a function's result may not depend on the
 * executor. Hence:
 *   - no fast-math flags anywhere, so LLVM neither reassociates nor
 *     contracts a*b+c into an FMA;
 *   - exp, log, pow and f64 tanh call the same libm functions as the
 *     kernels, marked nobuiltin so that LLVM cannot constant-fold them (it
 *     would fold with the host's double-precision functions, which can
 *     differ in the last bit) or rewrite them (pow(x, -1) into 1/x);
 *   - f32 tanh is agc's own, from exact IEEE operations (lower_math.c,
 *     the same steps as runtime/kernels/tanh_f32.h), so that fused loops
 *     using it vectorize;
 *   - floor, ceil, sqrt, fabs and fmod are exact in IEEE arithmetic, so
 *     their intrinsics and `frem` may be folded and vectorized freely;
 *   - integers wrap (no nsw/nuw flags), division truncates, floordiv and
 *     mod floor, and a divisor of -1 is special-cased as in the kernels so
 *     that INT_MIN / -1 never executes;
 *   - float-to-integer casts saturate and send NaN to 0 (fptosi.sat).
 * bool is i1 in registers and a 0/1 byte in memory.
 *
 * bf16 is an i16 in memory and, in registers, the f32 of the same value
 * (the bits shifted up: exact). Like the kernels, an op on bf16 is the f32
 * op on those values, its result rounded to bf16 at once (cg_round_bf16:
 * to nearest even, NaN kept a quiet NaN), so a fused chain rounds after
 * every op exactly where the unfused graph does, and a store only drops
 * the low half, which is zero. Comparisons give bools and `where` selects
 * an operand: neither rounds, as in the kernels.
 */
#include "cg_target.h"
#include "lower.h"

#include <string.h>

/* ----------------------------------------------------------------- types */

LLVMTypeRef cg_reg_type(cg_lower *L, ag_dtype dt)
{
    switch (dt) {
    case AG_F32: return L->t_f32;
    case AG_F64: return L->t_f64;
    case AG_I32: return L->t_i32;
    case AG_I64: return L->t_i64;
    case AG_I8: return L->t_i8;
    case AG_BF16: return L->t_f32;
    default: return L->t_i1;
    }
}

LLVMTypeRef cg_mem_type(cg_lower *L, ag_dtype dt)
{
    if (dt == AG_BF16)
        return L->t_i16;
    return dt == AG_BOOL ? L->t_i8 : cg_reg_type(L, dt);
}

/* The integer constant v of type t, an integer or a vector of them. */
static LLVMValueRef int_of_type(LLVMTypeRef t, unsigned long long v)
{
    if (LLVMGetTypeKind(t) != LLVMVectorTypeKind)
        return LLVMConstInt(t, v, 0);
    unsigned n = LLVMGetVectorSize(t);
    LLVMValueRef one = LLVMConstInt(LLVMGetElementType(t), v, 0), elems[64];
    for (unsigned i = 0; i < n && i < 64; i++)
        elems[i] = one;
    return LLVMConstVector(elems, n);
}

/* bf16 bits (i16, or a vector of them) as the f32 of the same value. */
LLVMValueRef cg_widen_bf16(cg_lower *L, LLVMValueRef bits)
{
    LLVMTypeRef t = LLVMTypeOf(bits);
    bool vec = LLVMGetTypeKind(t) == LLVMVectorTypeKind;
    unsigned n = vec ? LLVMGetVectorSize(t) : 0;
    LLVMTypeRef ti = vec ? LLVMVectorType(L->t_i32, n) : L->t_i32;
    LLVMTypeRef tf = vec ? LLVMVectorType(L->t_f32, n) : L->t_f32;
    LLVMValueRef w = LLVMBuildZExt(L->b, bits, ti, "");
    w = LLVMBuildShl(L->b, w, int_of_type(ti, 16), "");
    return LLVMBuildBitCast(L->b, w, tf, "");
}

/* An f32 already rounded to bf16 (or a vector of them) as its i16 bits. */
LLVMValueRef cg_narrow_bf16(cg_lower *L, LLVMValueRef v)
{
    LLVMTypeRef t = LLVMTypeOf(v);
    bool vec = LLVMGetTypeKind(t) == LLVMVectorTypeKind;
    unsigned n = vec ? LLVMGetVectorSize(t) : 0;
    LLVMTypeRef ti = vec ? LLVMVectorType(L->t_i32, n) : L->t_i32;
    LLVMTypeRef th = vec ? LLVMVectorType(L->t_i16, n) : L->t_i16;
    LLVMValueRef u = LLVMBuildBitCast(L->b, v, ti, "");
    u = LLVMBuildLShr(L->b, u, int_of_type(ti, 16), "");
    return LLVMBuildTrunc(L->b, u, th, "");
}

/*
 * f32 v rounded to bf16, as an f32: ag_f32_to_bf16 (runtime/core/dtype.c)
 * step for step, without branches so that loops vectorize. A NaN keeps
 * its top half with the quiet bit set; any other value gets 0x7FFF plus
 * its lowest kept bit added, which rounds to nearest, ties to even, and
 * carries the largest finite values to infinity as IEEE rounding does.
 */
LLVMValueRef cg_round_bf16(cg_lower *L, LLVMValueRef v)
{
    LLVMTypeRef t = LLVMTypeOf(v);
    bool vec = LLVMGetTypeKind(t) == LLVMVectorTypeKind;
    LLVMTypeRef ti = vec ? LLVMVectorType(L->t_i32, LLVMGetVectorSize(t)) : L->t_i32;
    LLVMValueRef u = LLVMBuildBitCast(L->b, v, ti, "");
    LLVMValueRef keep = int_of_type(ti, 0xFFFF0000u);
    LLVMValueRef lsb = LLVMBuildAnd(L->b, LLVMBuildLShr(L->b, u, int_of_type(ti, 16), ""),
                                    int_of_type(ti, 1), "");
    LLVMValueRef up = LLVMBuildAdd(L->b, u, LLVMBuildAdd(L->b, lsb, int_of_type(ti, 0x7FFF), ""), "");
    LLVMValueRef quiet = LLVMBuildOr(L->b, u, int_of_type(ti, 0x00400000u), "");
    LLVMValueRef nan = LLVMBuildFCmp(L->b, LLVMRealUNO, v, v, "");
    LLVMValueRef r = LLVMBuildAnd(L->b, LLVMBuildSelect(L->b, nan, quiet, up, ""), keep, "");
    return LLVMBuildBitCast(L->b, r, t, "bf16");
}

LLVMValueRef cg_load_elem(cg_lower *L, ag_dtype dt, LLVMValueRef ptr)
{
    LLVMValueRef v = LLVMBuildLoad2(L->b, cg_mem_type(L, dt), ptr, "");
    if (dt == AG_BOOL)
        v = LLVMBuildICmp(L->b, LLVMIntNE, v, LLVMConstInt(L->t_i8, 0, 0), "");
    if (dt == AG_BF16)
        v = cg_widen_bf16(L, v);
    return v;
}

void cg_store_elem(cg_lower *L, ag_dtype dt, LLVMValueRef v, LLVMValueRef ptr)
{
    if (dt == AG_BOOL)
        v = LLVMBuildZExt(L->b, v, L->t_i8, "");
    if (dt == AG_BF16)
        v = cg_narrow_bf16(L, v);
    LLVMBuildStore(L->b, v, ptr);
}

LLVMValueRef cg_const_elem(cg_lower *L, ag_dtype dt, const void *data, int64_t i)
{
    switch (dt) {
    case AG_F32: return LLVMConstReal(L->t_f32, ((const float *)data)[i]);
    case AG_F64: return LLVMConstReal(L->t_f64, ((const double *)data)[i]);
    case AG_I32:
        return LLVMConstInt(L->t_i32, (unsigned long long)(int64_t)((const int32_t *)data)[i], 1);
    case AG_I64: return LLVMConstInt(L->t_i64, (unsigned long long)((const int64_t *)data)[i], 1);
    case AG_I8:
        return LLVMConstInt(L->t_i8, (unsigned long long)(int64_t)((const int8_t *)data)[i], 1);
    case AG_BF16: { /* through the bits, so that a NaN stays the same NaN */
        uint32_t bits = (uint32_t)((const uint16_t *)data)[i] << 16;
        return LLVMConstBitCast(LLVMConstInt(L->t_i32, bits, 0), L->t_f32);
    }
    default: return LLVMConstInt(L->t_i1, ((const uint8_t *)data)[i] != 0, 0);
    }
}

/*
 * LLVM folds float arithmetic on constants with APFloat, which is exact
 * but makes a different NaN than the hardware for invalid operations
 * (0/0, inf-inf: APFloat gives +NaN, x86 the "default NaN" -NaN, which
 * even prints differently). So float constants reach the arithmetic
 * through an empty inline asm that LLVM cannot see through: the value
 * stays a loop-invariant register, but nothing is folded.
 */
/* The inline-asm constraint of a floating-point register of the target
 * (triple NULL: the host), or "" when agc knows none. */
const char *cg_fp_constraint(const char *triple)
{
    switch (cg_arch_of(triple)) {
    case CG_ARCH_X86:
    case CG_ARCH_X86_64: return "=x,0";
    case CG_ARCH_AARCH64: return "=w,0";
    default: return "";
    }
}

LLVMValueRef cg_opaque_if_const(cg_lower *L, LLVMValueRef v)
{
    const char *constraints = L->fp_constraint;
    LLVMTypeRef t = LLVMTypeOf(v);
    if (!LLVMIsConstant(v) || (t != L->t_f32 && t != L->t_f64) || !constraints[0])
        return v;
    LLVMTypeRef ft = LLVMFunctionType(t, &t, 1, 0);
    LLVMValueRef asm_ = LLVMGetInlineAsm(ft, "", 0, constraints, strlen(constraints), 0, 0,
                                         LLVMInlineAsmDialectATT, 0);
    LLVMValueRef call = LLVMBuildCall2(L->b, ft, asm_, &v, 1, "");
    static const char *const attrs[] = {"nounwind", "willreturn", "memory"};
    for (int i = 0; i < 3; i++)
        cg_add_call_attr(L, call, attrs[i], 0);
    return call;
}

/* ------------------------------------------------------------ support */

static ag_dtype operand_dtype(const ir_node *n)
{
    /* where(cond, a, b) computes in its branches' dtype */
    return n->in[n->opcode == RT_OP_WHERE ? 1 : 0]->type.dtype;
}

bool cg_checks_negative(const ir_node *n)
{
    return (rt_ops[n->opcode].flags & RT_F_INT_EXPONENT) != 0;
}

LLVMValueRef cg_emit_elem_bad(cg_lower *L, const ir_node *n, LLVMValueRef v)
{
    LLVMValueRef zero = LLVMConstInt(LLVMTypeOf(v), 0, 0);
    if (cg_checks_negative(n))
        return LLVMBuildICmp(L->b, LLVMIntSLT, v, zero, "neg_exp");
    return LLVMBuildICmp(L->b, LLVMIntEQ, v, zero, "div_zero");
}

/* ------------------------------------------------------------- callees */

LLVMValueRef cg_call_intrinsic(cg_lower *L, const char *name, LLVMTypeRef *over,
                                   size_t n_over, LLVMValueRef *args, unsigned n_args)
{
    unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
    LLVMValueRef f = LLVMGetIntrinsicDeclaration(L->mod, id, over, n_over);
    LLVMTypeRef ft = LLVMIntrinsicGetType(L->ctx, id, over, n_over);
    return LLVMBuildCall2(L->b, ft, f, args, n_args, "");
}

static LLVMValueRef unary_intrinsic(cg_lower *L, const char *name, LLVMValueRef x)
{
    LLVMTypeRef t = LLVMTypeOf(x);
    return cg_call_intrinsic(L, name, &t, 1, &x, 1);
}

/* A call to libm's `base` (suffix f for f32): the kernels' own function. */
static LLVMValueRef call_libm(cg_lower *L, const char *base, LLVMValueRef *args, unsigned n)
{
    LLVMTypeRef t = LLVMTypeOf(args[0]);
    char name[32];
    snprintf(name, sizeof name, "%s%s", base, t == L->t_f32 ? "f" : "");
    LLVMTypeRef params[2] = {t, t};
    LLVMTypeRef ft = LLVMFunctionType(t, params, n, 0);
    LLVMValueRef f = LLVMGetNamedFunction(L->mod, name);
    if (!f) {
        f = LLVMAddFunction(L->mod, name, ft);
        static const char *const attrs[] = {"nounwind", "willreturn", "memory"};
        for (int i = 0; i < 3; i++) /* memory(none): errno is never read */
            cg_add_attr(L, f, LLVMAttributeFunctionIndex, attrs[i], 0);
    }
    LLVMValueRef call = LLVMBuildCall2(L->b, ft, f, args, n, "");
    cg_add_call_attr(L, call, "nobuiltin", 0);
    return call;
}

/* ------------------------------------------------------------- floats */

static LLVMValueRef fconst(LLVMValueRef like, double v)
{
    return LLVMConstReal(LLVMTypeOf(like), v);
}

static LLVMValueRef is_nan(cg_lower *L, LLVMValueRef x)
{
    return LLVMBuildFCmp(L->b, LLVMRealUNO, x, x, "");
}

/* (a OP b || isnan(a)) ? a : b: maximum and minimum propagate NaN. */
static LLVMValueRef nan_select(cg_lower *L, LLVMRealPredicate op, LLVMValueRef a,
                               LLVMValueRef b)
{
    LLVMValueRef c = LLVMBuildOr(L->b, LLVMBuildFCmp(L->b, op, a, b, ""), is_nan(L, a), "");
    return LLVMBuildSelect(L->b, c, a, b, "");
}

/* fmod, then moved into the divisor's sign when not zero (floormod). */
static LLVMValueRef float_mod(cg_lower *L, LLVMValueRef a, LLVMValueRef b)
{
    LLVMValueRef r = LLVMBuildFRem(L->b, a, b, "");
    LLVMValueRef zero = fconst(r, 0);
    LLVMValueRef nz = LLVMBuildFCmp(L->b, LLVMRealUNE, r, zero, "");
    LLVMValueRef rneg = LLVMBuildFCmp(L->b, LLVMRealOLT, r, zero, "");
    LLVMValueRef bneg = LLVMBuildFCmp(L->b, LLVMRealOLT, b, zero, "");
    LLVMValueRef adjust = LLVMBuildAnd(L->b, nz, LLVMBuildXor(L->b, rneg, bneg, ""), "");
    return LLVMBuildSelect(L->b, adjust, LLVMBuildFAdd(L->b, r, b, ""), r, "");
}

static LLVMValueRef float_sign(cg_lower *L, LLVMValueRef x)
{
    LLVMValueRef zero = fconst(x, 0);
    LLVMValueRef gt = LLVMBuildZExt(L->b, LLVMBuildFCmp(L->b, LLVMRealOGT, x, zero, ""),
                                    L->t_i32, "");
    LLVMValueRef lt = LLVMBuildZExt(L->b, LLVMBuildFCmp(L->b, LLVMRealOLT, x, zero, ""),
                                    L->t_i32, "");
    LLVMValueRef s = LLVMBuildSIToFP(L->b, LLVMBuildSub(L->b, gt, lt, ""), LLVMTypeOf(x), "");
    return LLVMBuildSelect(L->b, is_nan(L, x), x, s, "");
}

/* x >= 0 ? 1 / (1 + exp(-x)) : exp(x) / (1 + exp(x)), as real branches so
 * that each element calls exp once, like the kernel. */
static LLVMValueRef float_sigmoid(cg_lower *L, LLVMValueRef x)
{
    LLVMBasicBlockRef pos = cg_new_block(L, "sigmoid_pos");
    LLVMBasicBlockRef neg = cg_new_block(L, "sigmoid_neg");
    LLVMBasicBlockRef join = cg_new_block(L, "sigmoid_join");
    LLVMValueRef one = fconst(x, 1);
    LLVMBuildCondBr(L->b, LLVMBuildFCmp(L->b, LLVMRealOGE, x, fconst(x, 0), ""), pos, neg);

    LLVMPositionBuilderAtEnd(L->b, pos);
    LLVMValueRef minus = LLVMBuildFNeg(L->b, x, "");
    LLVMValueRef e = call_libm(L, "exp", &minus, 1);
    LLVMValueRef rp = LLVMBuildFDiv(L->b, one, LLVMBuildFAdd(L->b, one, e, ""), "");
    LLVMBuildBr(L->b, join);

    LLVMPositionBuilderAtEnd(L->b, neg);
    LLVMValueRef z = call_libm(L, "exp", &x, 1);
    LLVMValueRef rn = LLVMBuildFDiv(L->b, z, LLVMBuildFAdd(L->b, one, z, ""), "");
    LLVMBuildBr(L->b, join);

    LLVMPositionBuilderAtEnd(L->b, join);
    LLVMValueRef phi = LLVMBuildPhi(L->b, LLVMTypeOf(x), "sigmoid");
    LLVMValueRef vals[2] = {rp, rn};
    LLVMBasicBlockRef from[2] = {pos, neg};
    LLVMAddIncoming(phi, vals, from, 2);
    return phi;
}

static LLVMValueRef float_op(cg_lower *L, rt_op op, LLVMValueRef *a)
{
    LLVMValueRef x = a[0], y = a[1];
    switch (op) {
    case RT_OP_ADD: return LLVMBuildFAdd(L->b, x, y, "");
    case RT_OP_SUB: return LLVMBuildFSub(L->b, x, y, "");
    case RT_OP_MUL: return LLVMBuildFMul(L->b, x, y, "");
    case RT_OP_DIV: return LLVMBuildFDiv(L->b, x, y, "");
    case RT_OP_FLOORDIV: return unary_intrinsic(L, "llvm.floor", LLVMBuildFDiv(L->b, x, y, ""));
    case RT_OP_MOD: return float_mod(L, x, y);
    case RT_OP_POW: return call_libm(L, "pow", a, 2);
    case RT_OP_MAXIMUM: return nan_select(L, LLVMRealOGT, x, y);
    case RT_OP_MINIMUM: return nan_select(L, LLVMRealOLT, x, y);
    case RT_OP_EQUAL: return LLVMBuildFCmp(L->b, LLVMRealOEQ, x, y, "");
    case RT_OP_NOT_EQUAL: return LLVMBuildFCmp(L->b, LLVMRealUNE, x, y, "");
    case RT_OP_LESS: return LLVMBuildFCmp(L->b, LLVMRealOLT, x, y, "");
    case RT_OP_LESS_EQUAL: return LLVMBuildFCmp(L->b, LLVMRealOLE, x, y, "");
    case RT_OP_GREATER: return LLVMBuildFCmp(L->b, LLVMRealOGT, x, y, "");
    case RT_OP_GREATER_EQUAL: return LLVMBuildFCmp(L->b, LLVMRealOGE, x, y, "");
    case RT_OP_NEG: return LLVMBuildFNeg(L->b, x, "");
    case RT_OP_ABS: return unary_intrinsic(L, "llvm.fabs", x);
    case RT_OP_SQUARE: return LLVMBuildFMul(L->b, x, x, "");
    case RT_OP_SIGN: return float_sign(L, x);
    case RT_OP_RELU: {
        LLVMValueRef keep = LLVMBuildOr(
            L->b, LLVMBuildFCmp(L->b, LLVMRealOGT, x, fconst(x, 0), ""), is_nan(L, x), "");
        return LLVMBuildSelect(L->b, keep, x, fconst(x, 0), "");
    }
    case RT_OP_EXP: return call_libm(L, "exp", a, 1);
    case RT_OP_LOG: return call_libm(L, "log", a, 1);
    case RT_OP_TANH:
        return LLVMTypeOf(x) == L->t_f32 ? cg_emit_tanh_f32(L, x) : call_libm(L, "tanh", a, 1);
    case RT_OP_SQRT: return unary_intrinsic(L, "llvm.sqrt", x);
    case RT_OP_RSQRT: return LLVMBuildFDiv(L->b, fconst(x, 1), unary_intrinsic(L, "llvm.sqrt", x), "");
    case RT_OP_FLOOR: return unary_intrinsic(L, "llvm.floor", x);
    case RT_OP_CEIL: return unary_intrinsic(L, "llvm.ceil", x);
    case RT_OP_SIGMOID: return float_sigmoid(L, x);
    default: return NULL;
    }
}

/* ------------------------------------------------------------ integers */

static LLVMValueRef iconst(LLVMValueRef like, int64_t v)
{
    return LLVMConstInt(LLVMTypeOf(like), (unsigned long long)v, 1);
}

static LLVMValueRef icmp(cg_lower *L, LLVMIntPredicate p, LLVMValueRef x, LLVMValueRef y)
{
    return LLVMBuildICmp(L->b, p, x, y, "");
}

/* A divisor that never traps: 0 and -1 become 1 (the callers handle -1
 * themselves, and 0 was rejected before). */
static LLVMValueRef safe_divisor(cg_lower *L, LLVMValueRef b)
{
    LLVMValueRef bad = LLVMBuildOr(L->b, icmp(L, LLVMIntEQ, b, iconst(b, 0)),
                                   icmp(L, LLVMIntEQ, b, iconst(b, -1)), "");
    return LLVMBuildSelect(L->b, bad, iconst(b, 1), b, "");
}

static LLVMValueRef int_div(cg_lower *L, rt_op op, LLVMValueRef a, LLVMValueRef b)
{
    LLVMValueRef zero = iconst(a, 0), d = safe_divisor(L, b);
    LLVMValueRef minus_one = icmp(L, LLVMIntEQ, b, iconst(b, -1));
    LLVMValueRef q = LLVMBuildSDiv(L->b, a, d, ""), r = LLVMBuildSRem(L->b, a, d, "");
    LLVMValueRef rnz = icmp(L, LLVMIntNE, r, zero);
    LLVMValueRef bneg = icmp(L, LLVMIntSLT, b, zero);
    switch (op) {
    case RT_OP_DIV:
        return LLVMBuildSelect(L->b, minus_one, LLVMBuildSub(L->b, zero, a, ""), q, "");
    case RT_OP_FLOORDIV: {
        /* C truncates; step down when the exact quotient is negative and
         * not whole */
        LLVMValueRef aneg = icmp(L, LLVMIntSLT, a, zero);
        LLVMValueRef down = LLVMBuildAnd(L->b, rnz, LLVMBuildXor(L->b, aneg, bneg, ""), "");
        LLVMValueRef f = LLVMBuildSelect(L->b, down, LLVMBuildSub(L->b, q, iconst(q, 1), ""),
                                         q, "");
        return LLVMBuildSelect(L->b, minus_one, LLVMBuildSub(L->b, zero, a, ""), f, "");
    }
    default: { /* mod: the floored remainder takes the divisor's sign */
        LLVMValueRef rneg = icmp(L, LLVMIntSLT, r, zero);
        LLVMValueRef fix = LLVMBuildAnd(L->b, rnz, LLVMBuildXor(L->b, rneg, bneg, ""), "");
        LLVMValueRef m = LLVMBuildSelect(L->b, fix, LLVMBuildAdd(L->b, r, b, ""), r, "");
        return LLVMBuildSelect(L->b, minus_one, zero, m, "");
    }
    }
}

static LLVMValueRef int_pow(cg_lower *L, LLVMValueRef a, LLVMValueRef b)
{
    /* The low 32 bits of a power depend only on the low 32 bits of the
     * base, so i32 computes in 64 bits and keeps the low half. */
    bool wide = LLVMTypeOf(a) == L->t_i64;
    LLVMValueRef args[2] = {wide ? a : LLVMBuildSExt(L->b, a, L->t_i64, ""),
                            wide ? b : LLVMBuildSExt(L->b, b, L->t_i64, "")};
    LLVMValueRef p = cg_call(L, &L->h.ipow, args, 2, "");
    return wide ? p : LLVMBuildTrunc(L->b, p, LLVMTypeOf(a), "");
}

static LLVMValueRef int_op(cg_lower *L, rt_op op, LLVMValueRef *a, bool is_bool)
{
    LLVMValueRef x = a[0], y = a[1];
    LLVMIntPredicate lt = is_bool ? LLVMIntULT : LLVMIntSLT, le = is_bool ? LLVMIntULE : LLVMIntSLE;
    LLVMIntPredicate gt = is_bool ? LLVMIntUGT : LLVMIntSGT, ge = is_bool ? LLVMIntUGE : LLVMIntSGE;
    switch (op) {
    case RT_OP_ADD: return LLVMBuildAdd(L->b, x, y, "");
    case RT_OP_SUB: return LLVMBuildSub(L->b, x, y, "");
    case RT_OP_MUL: return LLVMBuildMul(L->b, x, y, "");
    case RT_OP_DIV: case RT_OP_FLOORDIV: case RT_OP_MOD: return int_div(L, op, x, y);
    case RT_OP_POW: return int_pow(L, x, y);
    case RT_OP_MAXIMUM: return LLVMBuildSelect(L->b, icmp(L, gt, x, y), x, y, "");
    case RT_OP_MINIMUM: return LLVMBuildSelect(L->b, icmp(L, lt, x, y), x, y, "");
    case RT_OP_EQUAL: return icmp(L, LLVMIntEQ, x, y);
    case RT_OP_NOT_EQUAL: return icmp(L, LLVMIntNE, x, y);
    case RT_OP_LESS: return icmp(L, lt, x, y);
    case RT_OP_LESS_EQUAL: return icmp(L, le, x, y);
    case RT_OP_GREATER: return icmp(L, gt, x, y);
    case RT_OP_GREATER_EQUAL: return icmp(L, ge, x, y);
    case RT_OP_LOGICAL_AND: return LLVMBuildAnd(L->b, x, y, "");
    case RT_OP_LOGICAL_OR: return LLVMBuildOr(L->b, x, y, "");
    case RT_OP_LOGICAL_NOT: return LLVMBuildXor(L->b, x, iconst(x, 1), "");
    case RT_OP_NEG: return LLVMBuildSub(L->b, iconst(x, 0), x, "");
    case RT_OP_ABS:
        return LLVMBuildSelect(L->b, icmp(L, LLVMIntSLT, x, iconst(x, 0)),
                               LLVMBuildSub(L->b, iconst(x, 0), x, ""), x, "");
    case RT_OP_SQUARE: return LLVMBuildMul(L->b, x, x, "");
    case RT_OP_SIGN: {
        LLVMValueRef p = LLVMBuildZExt(L->b, icmp(L, LLVMIntSGT, x, iconst(x, 0)), LLVMTypeOf(x), "");
        LLVMValueRef m = LLVMBuildZExt(L->b, icmp(L, LLVMIntSLT, x, iconst(x, 0)), LLVMTypeOf(x), "");
        return LLVMBuildSub(L->b, p, m, "");
    }
    case RT_OP_RELU:
        return LLVMBuildSelect(L->b, icmp(L, LLVMIntSGT, x, iconst(x, 0)), x, iconst(x, 0), "");
    default: return NULL;
    }
}

/* ---------------------------------------------------------------- cast */

/*
 * f64 d rounded once to bf16 (as an f32), as rt_f64_to_bf16 does: when
 * the f32 nearest d is inexact and lies exactly on a bf16 tie, it moves one
 * f32 ulp toward d (its bits one up when |d| is larger, one down when
 * smaller: never from 0 or infinity, whose low bits are 0), so that the
 * tie breaks the way d's exact value does.
 */
static LLVMValueRef f64_to_bf16(cg_lower *L, LLVMValueRef d)
{
    LLVMValueRef f = LLVMBuildFPTrunc(L->b, d, L->t_f32, "");
    LLVMValueRef bits = LLVMBuildBitCast(L->b, f, L->t_i32, "");
    LLVMValueRef back = LLVMBuildFPExt(L->b, f, L->t_f64, "");
    LLVMValueRef inexact = LLVMBuildFCmp(L->b, LLVMRealONE, back, d, "");
    LLVMValueRef low = LLVMBuildAnd(L->b, bits, LLVMConstInt(L->t_i32, 0xFFFF, 0), "");
    LLVMValueRef tie = LLVMBuildICmp(L->b, LLVMIntEQ, low, LLVMConstInt(L->t_i32, 0x8000, 0), "");
    LLVMValueRef larger = LLVMBuildFCmp(L->b, LLVMRealOGT, unary_intrinsic(L, "llvm.fabs", d),
                                        unary_intrinsic(L, "llvm.fabs", back), "");
    LLVMValueRef step = LLVMBuildSelect(L->b, larger, LLVMConstInt(L->t_i32, 1, 0),
                                        LLVMConstInt(L->t_i32, (unsigned long long)-1, 1), "");
    LLVMValueRef nudge = LLVMBuildAnd(L->b, inexact, tie, "");
    bits = LLVMBuildSelect(L->b, nudge, LLVMBuildAdd(L->b, bits, step, ""), bits, "");
    return cg_round_bf16(L, LLVMBuildBitCast(L->b, bits, L->t_f32, ""));
}

/*
 * i64 v rounded once to bf16, as the kernel's i64_to_bf16: the magnitude
 * shifted down to 24 bits with every dropped bit OR-ed into bit 0 (a sticky
 * bit that marks a value above a tie without moving it past one), which
 * converts to f32 exactly, then scaled back by a power of two (exact) and
 * rounded.
 */
static LLVMValueRef i64_to_bf16(cg_lower *L, LLVMValueRef v)
{
    LLVMTypeRef t = L->t_i64;
    LLVMValueRef zero = LLVMConstInt(t, 0, 0), one = LLVMConstInt(t, 1, 0);
    LLVMValueRef neg = LLVMBuildICmp(L->b, LLVMIntSLT, v, zero, "");
    LLVMValueRef mag = LLVMBuildSelect(L->b, neg, LLVMBuildSub(L->b, zero, v, ""), v, "");
    LLVMValueRef args[2] = {mag, LLVMConstInt(L->t_i1, 0, 0)};
    LLVMValueRef lz = cg_call_intrinsic(L, "llvm.ctlz", &t, 1, args, 2);
    LLVMValueRef over = LLVMBuildSub(L->b, LLVMConstInt(t, 64 - 24, 0), lz, "");
    LLVMValueRef pos = LLVMBuildICmp(L->b, LLVMIntSGT, over, zero, "");
    LLVMValueRef shift = LLVMBuildSelect(L->b, pos, over, zero, "shift");
    LLVMValueRef dropped = LLVMBuildAnd(
        L->b, mag, LLVMBuildSub(L->b, LLVMBuildShl(L->b, one, shift, ""), one, ""), "");
    LLVMValueRef sticky = LLVMBuildZExt(
        L->b, LLVMBuildICmp(L->b, LLVMIntNE, dropped, zero, ""), t, "");
    LLVMValueRef kept = LLVMBuildOr(L->b, LLVMBuildLShr(L->b, mag, shift, ""), sticky, "");
    LLVMValueRef f = LLVMBuildUIToFP(L->b, kept, L->t_f32, "");
    LLVMValueRef exp = LLVMBuildShl(
        L->b, LLVMBuildAdd(L->b, LLVMBuildTrunc(L->b, shift, L->t_i32, ""),
                           LLVMConstInt(L->t_i32, 127, 0), ""),
        LLVMConstInt(L->t_i32, 23, 0), "");
    f = LLVMBuildFMul(L->b, f, LLVMBuildBitCast(L->b, exp, L->t_f32, "pow2"), "");
    f = LLVMBuildSelect(L->b, neg, LLVMBuildFNeg(L->b, f, ""), f, "");
    return cg_round_bf16(L, f);
}

/* v of dtype from, converted to bf16 as the kernels' casts do. */
static LLVMValueRef to_bf16(cg_lower *L, LLVMValueRef v, ag_dtype from)
{
    switch (from) {
    case AG_F32: return cg_round_bf16(L, v);
    case AG_F64: return f64_to_bf16(L, v);
    case AG_I32: return f64_to_bf16(L, LLVMBuildSIToFP(L->b, v, L->t_f64, "")); /* exact */
    case AG_I64: return i64_to_bf16(L, v);
    case AG_I8: return LLVMBuildSIToFP(L->b, v, L->t_f32, ""); /* exact in bf16 */
    default: return LLVMBuildUIToFP(L->b, v, L->t_f32, ""); /* bool: 0 or 1, exact */
    }
}

static LLVMValueRef cast(cg_lower *L, LLVMValueRef v, ag_dtype from, ag_dtype to)
{
    if (from == to)
        return v;
    if (to == AG_BF16)
        return to_bf16(L, v, from);
    if (from == AG_BF16) /* its register holds the f32 of the same value */
        from = AG_F32;
    LLVMTypeRef tt = cg_reg_type(L, to);
    bool ffloat = from == AG_F32 || from == AG_F64, tfloat = to == AG_F32 || to == AG_F64;
    if (from == to)
        return v;
    if (to == AG_BOOL) /* v != 0, so NaN is true */
        return ffloat ? LLVMBuildFCmp(L->b, LLVMRealUNE, v, fconst(v, 0), "")
                      : icmp(L, LLVMIntNE, v, iconst(v, 0));
    if (from == AG_BOOL)
        return tfloat ? LLVMBuildUIToFP(L->b, v, tt, "") : LLVMBuildZExt(L->b, v, tt, "");
    if (ffloat && tfloat)
        return to == AG_F64 ? LLVMBuildFPExt(L->b, v, tt, "") : LLVMBuildFPTrunc(L->b, v, tt, "");
    if (ffloat) { /* truncate toward zero, saturate, NaN to 0 */
        LLVMTypeRef over[2] = {tt, LLVMTypeOf(v)};
        return cg_call_intrinsic(L, "llvm.fptosi.sat", over, 2, &v, 1);
    }
    if (tfloat)
        return LLVMBuildSIToFP(L->b, v, tt, "");
    /* between i8, i32 and i64: sign-extend, or keep the low bits */
    bool widen = rt_dtype_size(to) > rt_dtype_size(from);
    return widen ? LLVMBuildSExt(L->b, v, tt, "") : LLVMBuildTrunc(L->b, v, tt, "");
}

/* ------------------------------------------------------------- entry */

/*
 * An op the switches above do not handle (one added to ops.def without its
 * case here) fails the compilation with a message naming it: the cpu
 * target then runs the graph in the reference interpreter, or reports the
 * error under AG_EXECUTOR=jit-strict. The builder carries on with an undef
 * value of the right type, which the failed module never runs.
 */
static LLVMValueRef no_lowering(cg_lower *L, const ir_node *n, ag_dtype dt)
{
    cg_fail(L, "the cpu target cannot compile elementwise op '%s' on %s (%%%d): "
               "backend/cpu/lower_elem.c has no case for it",
            rt_ops[n->opcode].name, ag_dtype_name(dt), n->id);
    return LLVMGetUndef(cg_reg_type(L, n->type.dtype));
}

LLVMValueRef cg_emit_elem(cg_lower *L, const ir_node *n, LLVMValueRef *args)
{
    rt_op op = (rt_op)n->opcode;
    ag_dtype dt = operand_dtype(n);
    LLVMValueRef r;
    if (op == RT_OP_WHERE)
        r = LLVMBuildSelect(L->b, args[0], args[1], args[2], "");
    else if (op == RT_OP_CAST)
        r = cast(L, args[0], dt, n->type.dtype);
    else if (dt == AG_F32 || dt == AG_F64)
        r = float_op(L, op, args);
    else if (dt == AG_BF16) {
        r = float_op(L, op, args); /* on the f32 registers, then rounded */
        if (r && n->type.dtype == AG_BF16)
            r = cg_round_bf16(L, r);
    }
    else
        r = int_op(L, op, args, dt == AG_BOOL);
    if (!r)
        return no_lowering(L, n, dt);
    return cg_opaque_if_const(L, r); /* a float made from integer constants */
}
