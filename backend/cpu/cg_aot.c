/*
 * cg_aot.c - ahead-of-time compilation: graphs into an object file.
 *
 * Each function is lowered as for the JIT (lower.c) but in its
 * relocatable form, then given what backend/cpu/aot.h describes: its
 * graph text, a descriptor, and the C function with the user's prototype.
 * The functions' modules are linked into one, optimized for the target,
 * and written as an object file, assembly, or LLVM IR.
 *
 * The C function is written here in LLVM IR, so it follows the C calling
 * convention of the target by hand: how a C compiler passes ag_tensor (a
 * struct of two uint32_t), C scalars, and a struct of tensors. That is
 * done for the two 64-bit targets agc supports, x86-64 (System V) and
 * AArch64 (AAPCS64), which agree on everything used here except how a
 * 16-byte struct is returned.
 *
 * Each function is there twice: NAME with the user's prototype, which
 * reports a mismatched call at the function's definition (it cannot know
 * its caller), and NAME_at, which takes the caller's ag_loc first; the
 * header agc writes makes NAME(...) a macro for NAME_at(AG_HERE, ...), as
 * ag.h does for its ops, so that errors name the caller's line.
 */
#include "cg.h"

#include "cg_target.h"
#include "lower.h"

#include "aot.h"

#include <llvm-c/Linker.h>

#include <stdlib.h>
#include <string.h>

typedef enum abi { ABI_X86_64, ABI_AARCH64 } abi;

/* What building one module needs. */
typedef struct aot {
    LLVMContextRef ctx;
    LLVMModuleRef mod;
    LLVMBuilderRef b;
    abi abi;
    char *triple; /* the target machine's */
    cg_machine machine;
    const pass_caps *caps; /* what each graph is planned for */
    LLVMTypeRef t_i1, t_i32, t_i64, t_f64, t_ptr, t_void;
    char *err;
    size_t errlen;
} aot;

/* ---------------------------------------------------------- constants */

static LLVMValueRef const_global(aot *A, LLVMValueRef init, const char *name)
{
    LLVMValueRef g = LLVMAddGlobal(A->mod, LLVMTypeOf(init), name);
    LLVMSetInitializer(g, init);
    LLVMSetGlobalConstant(g, 1);
    LLVMSetLinkage(g, LLVMPrivateLinkage);
    LLVMSetUnnamedAddress(g, LLVMGlobalUnnamedAddr);
    return g;
}

static LLVMValueRef string(aot *A, const char *s, const char *name)
{
    return const_global(A, LLVMConstStringInContext2(A->ctx, s, strlen(s), 0), name);
}

static LLVMValueRef i64c(aot *A, int64_t v) { return LLVMConstInt(A->t_i64, (unsigned long long)v, 1); }

/* -------------------------------------------------------- descriptor */

/* The parameter names and kinds, as the descriptor points at them. */
static void param_tables(aot *A, const tgt_aot_function *f, LLVMValueRef *names,
                         LLVMValueRef *kinds)
{
    int n = f->n_params ? f->n_params : 1;
    LLVMValueRef *nv = rt_xcalloc((size_t)n, sizeof *nv);
    LLVMValueRef *kv = rt_xcalloc((size_t)n, sizeof *kv);
    for (int i = 0; i < n; i++) {
        nv[i] = i < f->n_params ? string(A, f->params[i].name, "param.name")
                                : LLVMConstNull(A->t_ptr);
        kv[i] = i64c(A, i < f->n_params ? f->params[i].kind : 0);
    }
    *names = const_global(A, LLVMConstArray2(A->t_ptr, nv, (uint64_t)n), "param.names");
    *kinds = const_global(A, LLVMConstArray2(A->t_i64, kv, (uint64_t)n), "param.kinds");
    free(nv);
    free(kv);
}

/* struct ag_aot_function (aot.h): every field 8 bytes, in its order. */
static LLVMValueRef descriptor(aot *A, const tgt_aot_function *f, const char *graph_text,
                               LLVMValueRef entry, LLVMValueRef table, int n_nodes)
{
    LLVMValueRef names, kinds;
    param_tables(A, f, &names, &kinds);
    LLVMValueRef fields[] = {
        i64c(A, AG_AOT_ABI_VERSION),
        string(A, f->name, "name"),
        string(A, f->file, "file"),
        i64c(A, f->line),
        string(A, f->signature, "signature"),
        string(A, graph_text, "graph"),
        i64c(A, f->n_params),
        names,
        kinds,
        i64c(A, f->n_outputs),
        entry,
        table,
        i64c(A, n_nodes),
        LLVMConstNull(A->t_ptr),
    };
    unsigned n = (unsigned)(sizeof fields / sizeof *fields);
    LLVMValueRef init = LLVMConstStructInContext(A->ctx, fields, n, 0);
    char name[160];
    snprintf(name, sizeof name, "agc_aot_%s", f->name);
    LLVMValueRef g = LLVMAddGlobal(A->mod, LLVMTypeOf(init), name);
    LLVMSetInitializer(g, init);
    LLVMSetLinkage(g, LLVMInternalLinkage); /* written by the runtime: not constant */
    LLVMSetAlignment(g, 8);
    return g;
}

/* ----------------------------------------------------- the C function */

static void add_attr(aot *A, LLVMValueRef fn, unsigned index, const char *name)
{
    unsigned kind = LLVMGetEnumAttributeKindForName(name, strlen(name));
    LLVMAddAttributeAtIndex(fn, index, LLVMCreateEnumAttribute(A->ctx, kind, 0));
}

static LLVMTypeRef scalar_type(aot *A, const tgt_aot_param *p)
{
    if (p->kind == AG_ARG_FLOAT)
        return p->bits == 32 ? LLVMFloatTypeInContext(A->ctx) : A->t_f64;
    return LLVMIntTypeInContext(A->ctx, (unsigned)p->bits);
}

/* How the C function returns its tensors: nothing, one i64 (one tensor,
 * or a struct of one), a pair in registers, or through memory (sret). */
typedef enum ret_kind { RET_VOID, RET_ONE, RET_PAIR, RET_MEMORY } ret_kind;

static ret_kind return_kind(const tgt_aot_function *f)
{
    return f->n_outputs == 0 ? RET_VOID
           : f->n_outputs == 1 ? RET_ONE
           : f->n_outputs == 2 ? RET_PAIR
                               : RET_MEMORY;
}

/* x86-64 returns a 16-byte struct in rax:rdx ({i64, i64}); AArch64 in
 * x0:x1 ([2 x i64]). */
static LLVMTypeRef pair_type(aot *A)
{
    if (A->abi == ABI_X86_64)
        return LLVMStructTypeInContext(A->ctx, (LLVMTypeRef[]){A->t_i64, A->t_i64}, 2, 0);
    return LLVMArrayType2(A->t_i64, 2);
}

/* Where the user's parameters begin: after the sret pointer, and after
 * the caller's ag_loc in the NAME_at form. */
static int first_user_param(ret_kind rk, bool with_loc)
{
    return (rk == RET_MEMORY) + (with_loc ? 2 : 0);
}

/* ag_loc ({const char *, int}, 16 bytes) by value is two INTEGER
 * eightbytes on x86-64 and two general registers on AArch64: a pointer
 * and an i64 whose low 32 bits are the line. It comes first (after sret,
 * which AArch64 passes in x8 anyway), so it is always in registers. */
static void loc_params(aot *A, LLVMTypeRef *pt, int *k)
{
    pt[(*k)++] = A->t_ptr;
    pt[(*k)++] = A->t_i64;
}

static LLVMValueRef declare_c_function(aot *A, const tgt_aot_function *f, ret_kind rk,
                                       bool with_loc)
{
    int first = first_user_param(rk, with_loc);
    int n = f->n_params + first;
    LLVMTypeRef *pt = rt_xcalloc((size_t)n + 1, sizeof *pt);
    int k = 0;
    if (rk == RET_MEMORY)
        pt[k++] = A->t_ptr;
    if (with_loc)
        loc_params(A, pt, &k);
    for (int i = 0; i < f->n_params; i++) {
        const tgt_aot_param *p = &f->params[i];
        bool scalar = p->kind == AG_ARG_INT || p->kind == AG_ARG_FLOAT;
        pt[k++] = scalar ? scalar_type(A, p) : A->t_i64; /* ag_tensor: 8 bytes, INTEGER */
    }
    LLVMTypeRef ret = rk == RET_VOID || rk == RET_MEMORY ? A->t_void
                      : rk == RET_ONE                   ? A->t_i64
                                                        : pair_type(A);
    char name[200];
    snprintf(name, sizeof name, "%s%s", f->name, with_loc ? "_at" : "");
    LLVMValueRef fn = LLVMAddFunction(A->mod, name, LLVMFunctionType(ret, pt, (unsigned)n, 0));
    free(pt);
    add_attr(A, fn, LLVMAttributeFunctionIndex, "nounwind");
    if (rk == RET_MEMORY) {
        unsigned kind = LLVMGetEnumAttributeKindForName("sret", 4);
        LLVMTypeRef st = LLVMArrayType2(A->t_i64, (uint64_t)f->n_outputs);
        LLVMAddAttributeAtIndex(fn, 1, LLVMCreateTypeAttribute(A->ctx, kind, st));
    }
    /* narrow integers are extended by the caller (both ABIs) */
    for (int i = 0; i < f->n_params; i++) {
        const tgt_aot_param *p = &f->params[i];
        if (p->kind == AG_ARG_INT && p->bits < 32)
            add_attr(A, fn, (unsigned)(i + 1 + first),
                     p->is_signed && p->bits > 1 ? "signext" : "zeroext");
    }
    return fn;
}

/* A parameter as the int64_t slot ag_aot_call reads. */
static LLVMValueRef scalar_bits(aot *A, const tgt_aot_param *p, LLVMValueRef v)
{
    if (p->kind == AG_ARG_FLOAT) {
        if (p->bits == 32)
            v = LLVMBuildFPExt(A->b, v, A->t_f64, "");
        return LLVMBuildBitCast(A->b, v, A->t_i64, "");
    }
    if (p->bits == 64)
        return v;
    return p->is_signed && p->bits > 1 ? LLVMBuildSExt(A->b, v, A->t_i64, "")
                                       : LLVMBuildZExt(A->b, v, A->t_i64, "");
}

static LLVMValueRef slot(aot *A, LLVMValueRef array, int n, int i)
{
    LLVMValueRef idx[2] = {i64c(A, 0), i64c(A, i)};
    return LLVMBuildInBoundsGEP2(A->b, LLVMArrayType2(A->t_i64, (uint64_t)n), array, idx, 2, "");
}

static void emit_return(aot *A, const tgt_aot_function *f, ret_kind rk, LLVMValueRef fn,
                        LLVMValueRef outs, int n_out)
{
    if (rk == RET_VOID) {
        LLVMBuildRetVoid(A->b);
    } else if (rk == RET_ONE) {
        LLVMBuildRet(A->b, LLVMBuildLoad2(A->b, A->t_i64, slot(A, outs, n_out, 0), "out"));
    } else if (rk == RET_PAIR) {
        LLVMValueRef r = LLVMGetUndef(pair_type(A));
        for (int i = 0; i < 2; i++)
            r = LLVMBuildInsertValue(
                A->b, r, LLVMBuildLoad2(A->b, A->t_i64, slot(A, outs, n_out, i), "out"),
                (unsigned)i, "");
        LLVMBuildRet(A->b, r);
    } else {
        LLVMBuildMemCpy(A->b, LLVMGetParam(fn, 0), 4, outs, 8,
                        i64c(A, 8 * (int64_t)f->n_outputs));
        LLVMBuildRetVoid(A->b);
    }
}

/* Calls the runtime: ag_aot_call(desc, tensors, scalars, outs), or
 * ag_aot_call_at(loc, desc, ...) with the caller's location forwarded as
 * it came (loc_params: the same registers, so the line's upper bits do
 * not matter). */
static void call_runtime(aot *A, LLVMValueRef fn, ret_kind rk, bool with_loc,
                         LLVMValueRef ptrs[4])
{
    const char *name = with_loc ? "ag_aot_call_at" : "ag_aot_call";
    LLVMTypeRef pt[6];
    LLVMValueRef args[6];
    int k = 0;
    if (with_loc) {
        int at = rk == RET_MEMORY;
        loc_params(A, pt, &k);
        args[0] = LLVMGetParam(fn, (unsigned)at);
        args[1] = LLVMGetParam(fn, (unsigned)at + 1);
    }
    for (int i = 0; i < 4; i++) {
        pt[k] = A->t_ptr;
        args[k++] = ptrs[i];
    }
    LLVMTypeRef call_t = LLVMFunctionType(A->t_i1, pt, (unsigned)k, 0);
    LLVMValueRef callee = LLVMGetNamedFunction(A->mod, name);
    if (!callee) {
        callee = LLVMAddFunction(A->mod, name, call_t);
        add_attr(A, callee, LLVMAttributeReturnIndex, "zeroext");
    }
    LLVMBuildCall2(A->b, call_t, callee, args, (unsigned)k, "");
}

/* The C function (NAME, or NAME_at with the caller's location): packs
 * its arguments for the runtime, returns the outputs the C way. */
static void c_function(aot *A, const tgt_aot_function *f, LLVMValueRef desc, bool with_loc)
{
    ret_kind rk = return_kind(f);
    LLVMValueRef fn = declare_c_function(A, f, rk, with_loc);
    int first = first_user_param(rk, with_loc);
    LLVMPositionBuilderAtEnd(A->b, LLVMAppendBasicBlockInContext(A->ctx, fn, "entry"));
    int n = f->n_params ? f->n_params : 1, n_out = f->n_outputs ? f->n_outputs : 1;
    LLVMValueRef tensors = LLVMBuildAlloca(A->b, LLVMArrayType2(A->t_i64, (uint64_t)n), "tensors");
    LLVMValueRef scalars = LLVMBuildAlloca(A->b, LLVMArrayType2(A->t_i64, (uint64_t)n), "scalars");
    LLVMValueRef outs = LLVMBuildAlloca(A->b, LLVMArrayType2(A->t_i64, (uint64_t)n_out), "outs");
    if (with_loc) {
        LLVMSetValueName2(LLVMGetParam(fn, (unsigned)(first - 2)), "file", 4);
        LLVMSetValueName2(LLVMGetParam(fn, (unsigned)(first - 1)), "line", 4);
    }
    for (int i = 0; i < f->n_params; i++) {
        const tgt_aot_param *p = &f->params[i];
        LLVMValueRef v = LLVMGetParam(fn, (unsigned)(i + first));
        LLVMSetValueName2(v, p->name, strlen(p->name));
        bool scalar = p->kind == AG_ARG_INT || p->kind == AG_ARG_FLOAT;
        LLVMBuildStore(A->b, scalar ? scalar_bits(A, p, v) : v,
                       slot(A, scalar ? scalars : tensors, n, i));
    }
    call_runtime(A, fn, rk, with_loc, (LLVMValueRef[4]){desc, tensors, scalars, outs});
    emit_return(A, f, rk, fn, outs, n_out);
}

/* ------------------------------------------------------------ modules */

/* The graph's text form, which the object carries, and the graph parsed
 * back from it: the code is generated from what the runtime will parse,
 * so that node numbers agree by construction. NULL after an error. */
static ir_function *graph_as_loaded(aot *A, const tgt_aot_function *f, char **text)
{
    size_t len;
    FILE *out = open_memstream(text, &len);
    ir_print(f->graph, out);
    fclose(out);
    char err[512];
    ir_function *g = ir_parse(*text, f->file, err, sizeof err);
    if (!g)
        snprintf(A->err, A->errlen, "internal error: the graph of '%s' does not parse back: %s",
                 f->name, err);
    return g;
}

/* One function's module: its code, node table, descriptor, C function. */
static LLVMModuleRef function_module(aot *A, const tgt_aot_function *f)
{
    char entry[160], table[160];
    snprintf(entry, sizeof entry, "agc_%s_graph", f->name);
    snprintf(table, sizeof table, "agc_%s_nodes", f->name);
    char err[512], *text = NULL;
    ir_function *g = graph_as_loaded(A, f, &text);
    pass_analyses *am = g ? pass_analyses_new(g, A->caps) : NULL;
    LLVMModuleRef mod =
        g ? cg_lower_function_aot(g, am, A->ctx, entry, table, A->triple, &A->machine, err,
                                   sizeof err)
          : NULL;
    if (g && !mod)
        snprintf(A->err, A->errlen, "'%s' cannot be compiled: %s", f->name, err);
    if (mod) {
        A->mod = mod;
        cg_share_math_helpers(mod);
        LLVMValueRef code = LLVMGetNamedFunction(mod, entry);
        LLVMSetLinkage(code, LLVMInternalLinkage);
        LLVMValueRef nodes = LLVMGetNamedGlobal(mod, table);
        int n_nodes = (int)LLVMGetArrayLength2(LLVMGlobalGetValueType(nodes));
        LLVMValueRef desc = descriptor(A, f, text, code, nodes, n_nodes);
        c_function(A, f, desc, false);
        c_function(A, f, desc, true);
    }
    pass_analyses_free(am);
    if (g)
        ir_function_free(g);
    free(text);
    return mod;
}

static bool pick_abi(aot *A, LLVMTargetMachineRef tm)
{
    A->triple = LLVMGetTargetMachineTriple(tm);
    cg_arch arch = cg_arch_of(A->triple);
    A->abi = arch == CG_ARCH_AARCH64 ? ABI_AARCH64 : ABI_X86_64;
    if (arch == CG_ARCH_X86_64 || arch == CG_ARCH_AARCH64)
        return true;
    snprintf(A->err, A->errlen, "ahead-of-time objects can be made for x86_64 and aarch64 "
                                "targets; '%s' is neither", A->triple);
    return false;
}

static void init_types(aot *A)
{
    A->t_i1 = LLVMInt1TypeInContext(A->ctx);
    A->t_i32 = LLVMInt32TypeInContext(A->ctx);
    A->t_i64 = LLVMInt64TypeInContext(A->ctx);
    A->t_f64 = LLVMDoubleTypeInContext(A->ctx);
    A->t_ptr = LLVMPointerTypeInContext(A->ctx, 0);
    A->t_void = LLVMVoidTypeInContext(A->ctx);
}

/* Every function's module linked into one; NULL after an error. */
static LLVMModuleRef build(aot *A, const tgt_aot_function *fns, int n, const char *name)
{
    LLVMModuleRef all = LLVMModuleCreateWithNameInContext(name, A->ctx);
    for (int i = 0; i < n; i++) {
        LLVMModuleRef m = function_module(A, &fns[i]);
        if (!m || LLVMLinkModules2(all, m)) { /* linking consumes m */
            if (m)
                snprintf(A->err, A->errlen, "internal error: linking '%s' failed", fns[i].name);
            LLVMDisposeModule(all);
            return NULL;
        }
    }
    return all;
}

static bool emit(aot *A, LLVMModuleRef mod, LLVMTargetMachineRef tm, tgt_emit_kind kind, char **out,
                 size_t *len)
{
    if (kind == TGT_EMIT_LLVM) {
        char *text = LLVMPrintModuleToString(mod);
        *len = strlen(text);
        *out = rt_xmalloc(*len + 1);
        memcpy(*out, text, *len + 1);
        LLVMDisposeMessage(text);
        return true;
    }
    LLVMMemoryBufferRef buf;
    char *msg = NULL;
    LLVMCodeGenFileType ft = kind == TGT_EMIT_ASM ? LLVMAssemblyFile : LLVMObjectFile;
    if (LLVMTargetMachineEmitToMemoryBuffer(tm, mod, ft, &msg, &buf)) {
        snprintf(A->err, A->errlen, "LLVM cannot write the %s: %s",
                 kind == TGT_EMIT_ASM ? "assembly" : "object file", msg ? msg : "");
        LLVMDisposeMessage(msg);
        return false;
    }
    *len = LLVMGetBufferSize(buf);
    *out = rt_xmalloc(*len + 1);
    memcpy(*out, LLVMGetBufferStart(buf), *len);
    (*out)[*len] = '\0';
    LLVMDisposeMemoryBuffer(buf);
    return true;
}

bool cg_aot_compile(const tgt_aot_function *fns, int n, const tgt_options *target,
                    const pass_caps *caps, tgt_emit_kind kind, char **out, size_t *len,
                    char *err, size_t errlen)
{
    aot A = {.ctx = LLVMContextCreate(), .err = err, .errlen = errlen,
             .machine = cg_machine_of(target),
             .caps = caps};
    init_types(&A);
    A.b = LLVMCreateBuilderInContext(A.ctx);
    *out = NULL;
    *len = 0;
    LLVMTargetMachineRef tm = cg_target_machine(&A.machine, true, err, errlen);
    LLVMModuleRef mod = NULL;
    bool ok = tm && pick_abi(&A, tm) && (mod = build(&A, fns, n, fns[0].file)) &&
              cg_optimize(mod, tm, err, errlen) && emit(&A, mod, tm, kind, out, len);
    if (mod)
        LLVMDisposeModule(mod);
    if (tm)
        LLVMDisposeTargetMachine(tm);
    LLVMDisposeMessage(A.triple);
    LLVMDisposeBuilder(A.b);
    LLVMContextDispose(A.ctx);
    return ok;
}
