/*
 * lower_math.c - transcendental functions built from exact IEEE
 * operations, as LLVM instructions, where agc computes them itself
 * instead of calling libm.
 *
 * The tanh here is runtime/kernels/tanh_f32.h's rt_tanh_f32 (read the
 * algorithm there), operation for operation, from the same constants: the
 * same roundings in the same order give the same bits as the eager kernel.
 * No fast-math flags and no FMA intrinsics: LLVM then only makes exact
 * rewrites. Where the C code selects with bit masks (for GCC's sake), the
 * IR uses `select`, which picks the same values; the sign is put back with
 * the same integer operations on the bits as in C.
 *
 * The operations are emitted once per module, as functions: a scalar
 * agc_tanh_f32 and vector versions of 4, 8 and 16 lanes (the same
 * operations on every lane). Each use is a call of the scalar function
 * that names the vector ones ("vector-function-abi-variant"), so LLVM's
 * loop vectorizer calls the version of its width. Inlining the operations
 * at every use would cost compile time in proportion to the number of
 * tanh nodes (a function with 32 of them took four times as long to
 * compile); the calls keep it constant.
 * In the hot loops (lower_outline.c marks them CG_HOT_LOOP) the vector
 * versions are inlined after all, once the vectorizer has placed their
 * calls: cg_optimize inlines the CG_VECTOR_BODY functions there after the
 * O2 pipeline, so only code generation sees the extra operations. In the
 * loop of tanh(x*a + b)*c + x the calls cost 11 spills and reloads per
 * vector and kept the four interleaved tanh from overlapping: 16M f32 on
 * 2 threads took 4.4 ms with the calls and 3.9 ms inlined. Everywhere
 * (a function of 197 nodes with 32 small tanh loops), the inlined copies
 * doubled its compile time.
 */
#include "cg_target.h"
#include "lower.h"

#include "tanh_f32.h"

#include <stdio.h>
#include <string.h>

#define TANH_NAME "agc_tanh_f32"

/* The vector widths defined besides the scalar function. */
static const unsigned tanh_lanes[] = {4, 8, 16};
enum { N_WIDTHS = sizeof tanh_lanes / sizeof tanh_lanes[0] };

/* What the emitters work on: f32 (lanes == 1) or <lanes x f32>, and the
 * i32 type of the same shape for the bit operations. */
typedef struct lanes {
    cg_lower *L;
    unsigned n;
    LLVMTypeRef tf, ti;
} lanes;

static LLVMValueRef splat(const lanes *V, LLVMValueRef c)
{
    if (V->n == 1)
        return c;
    LLVMValueRef e[16];
    for (unsigned i = 0; i < V->n; i++)
        e[i] = c;
    return LLVMConstVector(e, V->n);
}

static LLVMValueRef fc(const lanes *V, float v) { return splat(V, LLVMConstReal(V->L->t_f32, v)); }
static LLVMValueRef ic(const lanes *V, int v) { return splat(V, cg_i32(V->L, v)); }

static LLVMValueRef f_add(const lanes *V, LLVMValueRef a, LLVMValueRef b)
{
    return LLVMBuildFAdd(V->L->b, a, b, "");
}

static LLVMValueRef f_sub(const lanes *V, LLVMValueRef a, LLVMValueRef b)
{
    return LLVMBuildFSub(V->L->b, a, b, "");
}

static LLVMValueRef f_mul(const lanes *V, LLVMValueRef a, LLVMValueRef b)
{
    return LLVMBuildFMul(V->L->b, a, b, "");
}

/* The bits of v as i32 lanes, and back. */
static LLVMValueRef as_int(const lanes *V, LLVMValueRef v)
{
    return LLVMBuildBitCast(V->L->b, v, V->ti, "");
}

static LLVMValueRef as_float(const lanes *V, LLVMValueRef v)
{
    return LLVMBuildBitCast(V->L->b, v, V->tf, "");
}

/* c0 + c1*v, as the header writes it: (c[0] + c[1] * v) */
static LLVMValueRef lin(const lanes *V, LLVMValueRef v, const float *c)
{
    return f_add(V, fc(V, c[0]), f_mul(V, fc(V, c[1]), v));
}

/* rt_tanh_f32 of every lane of x. */
static LLVMValueRef tanh_ops(const lanes *V, LLVMValueRef x)
{
    LLVMBuilderRef b = V->L->b;
    const float *q = rt_tanh_f32_q;
    LLVMValueRef one = fc(V, 1.0f), two = fc(V, 2.0f);
    LLVMTypeRef tf = V->tf;
    LLVMValueRef a = cg_call_intrinsic(V->L, "llvm.fabs", &tf, 1, &x, 1);
    LLVMValueRef amax = fc(V, RT_TANH_F32_AMAX);
    LLVMValueRef c = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOLT, a, amax, ""), a, amax, "");

    /* y = 2c = k*ln 2 + r; 2^k from the bits of the rounding sum s */
    LLVMValueRef y = f_add(V, c, c);
    LLVMValueRef rounder = fc(V, RT_TANH_F32_ROUNDER);
    LLVMValueRef s = f_add(V, f_mul(V, c, fc(V, RT_TANH_F32_2LOG2E)), rounder);
    LLVMValueRef k = f_sub(V, s, rounder);
    LLVMValueRef two_k = as_float(V, LLVMBuildShl(b, as_int(V, s), ic(V, 23), ""));
    LLVMValueRef r = f_sub(V, y, f_mul(V, k, fc(V, RT_TANH_F32_LN2)));

    /* expm1(r) = r + r^2*Q(r), Q by Estrin's scheme; then E = expm1(y) */
    LLVMValueRef r2 = f_mul(V, r, r), r4 = f_mul(V, r2, r2);
    LLVMValueRef qr = f_add(V, f_add(V, lin(V, r, q), f_mul(V, r2, lin(V, r, q + 2))),
                            f_mul(V, r4, lin(V, r, q + 4)));
    LLVMValueRef pr = f_add(V, r, f_mul(V, r2, qr));
    LLVMValueRef em1 = f_add(V, f_sub(V, two_k, one), f_mul(V, two_k, pr));

    /* tanh(a) = E / (E + 2) >= 0: OR in the sign bit of x (x ^ |x|) */
    LLVMValueRef t = LLVMBuildFDiv(b, em1, f_add(V, em1, two), "");
    LLVMValueRef sign = LLVMBuildXor(b, as_int(V, x), as_int(V, a), "");
    LLVMValueRef res = as_float(V, LLVMBuildOr(b, as_int(V, t), sign, ""));
    /* x itself for tiny |x| and NaN: a < TINY or unordered */
    LLVMValueRef keep = LLVMBuildFCmp(b, LLVMRealULT, a, fc(V, RT_TANH_F32_TINY), "");
    return LLVMBuildSelect(b, keep, x, res, "tanh");
}

/* Defines `name`, tanh of n lanes: internal and pure; the scalar one is
 * never inlined, the vector ones only in hot loops (see above). */
static LLVMValueRef define_tanh(cg_lower *L, const char *name, unsigned n)
{
    lanes V = {L, n, n == 1 ? L->t_f32 : LLVMVectorType(L->t_f32, n),
               n == 1 ? L->t_i32 : LLVMVectorType(L->t_i32, n)};
    LLVMTypeRef ft = LLVMFunctionType(V.tf, &V.tf, 1, 0);
    LLVMValueRef f = LLVMAddFunction(L->mod, name, ft);
    LLVMSetLinkage(f, LLVMInternalLinkage);
    static const char *const attrs[] = {"nounwind", "willreturn", "memory", "noinline"};
    for (int i = 0; i < (n == 1 ? 4 : 3); i++) /* memory(none): reads and writes nothing */
        cg_add_attr(L, f, LLVMAttributeFunctionIndex, attrs[i], 0);
    if (n > 1)
        cg_mark(f, CG_VECTOR_BODY);
    LLVMBuilderRef outer = L->b;
    L->b = LLVMCreateBuilderInContext(L->ctx);
    LLVMPositionBuilderAtEnd(L->b, LLVMAppendBasicBlockInContext(L->ctx, f, "entry"));
    LLVMBuildRet(L->b, tanh_ops(&V, LLVMGetParam(f, 0)));
    LLVMDisposeBuilder(L->b);
    L->b = outer;
    return f;
}

/* Keeps the vector versions alive until the vectorizer has used them
 * (nothing calls them before): @llvm.compiler.used. */
static void keep_alive(cg_lower *L, LLVMValueRef *fns, unsigned n)
{
    LLVMTypeRef t = LLVMArrayType2(L->t_ptr, n);
    LLVMValueRef g = LLVMAddGlobal(L->mod, t, "llvm.compiler.used");
    LLVMSetLinkage(g, LLVMAppendingLinkage);
    LLVMSetSection(g, "llvm.metadata");
    LLVMSetInitializer(g, LLVMConstArray2(L->t_ptr, fns, n));
}

/* The scalar function, defining the family on first use. */
static LLVMValueRef tanh_function(cg_lower *L)
{
    LLVMValueRef f = LLVMGetNamedFunction(L->mod, TANH_NAME);
    if (f)
        return f;
    f = define_tanh(L, TANH_NAME, 1);
    LLVMValueRef vec[N_WIDTHS];
    for (int i = 0; i < N_WIDTHS; i++) {
        char name[64];
        snprintf(name, sizeof name, TANH_NAME "_v%u", tanh_lanes[i]);
        vec[i] = define_tanh(L, name, tanh_lanes[i]);
    }
    keep_alive(L, vec, N_WIDTHS);
    return f;
}

void cg_share_math_helpers(LLVMModuleRef mod)
{
    for (int i = -1; i < N_WIDTHS; i++) {
        char name[64];
        if (i < 0)
            snprintf(name, sizeof name, TANH_NAME);
        else
            snprintf(name, sizeof name, TANH_NAME "_v%u", tanh_lanes[i]);
        LLVMValueRef f = LLVMGetNamedFunction(mod, name);
        if (f) {
            LLVMSetLinkage(f, LLVMLinkOnceODRLinkage);
            LLVMSetVisibility(f, LLVMHiddenVisibility);
        }
    }
}

/* The vector versions in the vector function ABI's mangling (unmasked,
 * one vector argument), as tanh_lanes lists them. */
#define TANH_VARIANT(n) "_ZGV_LLVM_N" #n "v_" TANH_NAME "(" TANH_NAME "_v" #n ")"
static const char tanh_variants[] = TANH_VARIANT(4) "," TANH_VARIANT(8) "," TANH_VARIANT(16);

LLVMValueRef cg_emit_tanh_f32(cg_lower *L, LLVMValueRef x)
{
    LLVMValueRef f = tanh_function(L);
    LLVMTypeRef ft = LLVMFunctionType(L->t_f32, &L->t_f32, 1, 0);
    LLVMValueRef call = LLVMBuildCall2(L->b, ft, f, &x, 1, "tanh");
    static const char key[] = "vector-function-abi-variant";
    LLVMAddCallSiteAttribute(call, LLVMAttributeFunctionIndex,
                             LLVMCreateStringAttribute(L->ctx, key, sizeof key - 1, tanh_variants,
                                                       sizeof tanh_variants - 1));
    cg_add_call_attr(L, call, "memory", 0);
    return call;
}
