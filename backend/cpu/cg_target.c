/*
 * cg_target.c - LLVM targets and the optimization pipeline, shared by the
 * JIT (the host) and ahead-of-time compilation (any target LLVM knows).
 */
#include "cg_target.h"

#include <llvm-c/Analysis.h>
#include <llvm-c/Core.h>
#include <llvm-c/Error.h>
#include <llvm-c/Target.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include <pthread.h>
#include <stdio.h>
#include <string.h>

static pthread_once_t targets_once = PTHREAD_ONCE_INIT;

static void init_targets(void)
{
    LLVMInitializeAllTargetInfos();
    LLVMInitializeAllTargets();
    LLVMInitializeAllTargetMCs();
    LLVMInitializeAllAsmPrinters();
    LLVMInitializeAllAsmParsers();
}

cg_arch cg_arch_of(const char *triple)
{
    char *host = triple ? NULL : LLVMGetDefaultTargetTriple();
    const char *t = triple ? triple : host;
    cg_arch arch = CG_ARCH_OTHER;
    if (strncmp(t, "x86_64", 6) == 0)
        arch = CG_ARCH_X86_64;
    else if (t[0] == 'i' && t[1] && strncmp(t + 2, "86", 2) == 0)
        arch = CG_ARCH_X86;
    else if (strncmp(t, "aarch64", 7) == 0 || strncmp(t, "arm64", 5) == 0)
        arch = CG_ARCH_AARCH64;
    LLVMDisposeMessage(host);
    return arch;
}

void cg_target_init(void) { pthread_once(&targets_once, init_targets); }

LLVMTargetMachineRef cg_target_machine(const tgt_options *t, bool pic, char *err, size_t errlen)
{
    cg_target_init();
    bool host = !t || !t->triple || !*t->triple;
    char *triple = host ? LLVMGetDefaultTargetTriple() : LLVMNormalizeTargetTriple(t->triple);
    /* The host's CPU and features by default; "generic" for another
     * target unless --cpu names one. */
    char *cpu = t && t->cpu && *t->cpu ? LLVMCreateMessage(t->cpu)
                : host               ? LLVMGetHostCPUName()
                                     : LLVMCreateMessage("generic");
    bool host_cpu = host && !(t && t->cpu && *t->cpu);
    char *features = host_cpu ? LLVMGetHostCPUFeatures() : LLVMCreateMessage("");
    LLVMTargetRef target;
    char *msg = NULL;
    LLVMTargetMachineRef tm = NULL;
    if (LLVMGetTargetFromTriple(triple, &target, &msg)) {
        snprintf(err, errlen, "LLVM has no target for '%s': %s", triple, msg ? msg : "");
    } else {
        tm = LLVMCreateTargetMachine(target, triple, cpu, features, LLVMCodeGenLevelDefault,
                                     pic ? LLVMRelocPIC : LLVMRelocDefault,
                                     pic ? LLVMCodeModelDefault : LLVMCodeModelJITDefault);
        if (!tm)
            snprintf(err, errlen, "LLVM cannot make a target machine for '%s' (cpu '%s')",
                     triple, cpu);
    }
    LLVMDisposeMessage(msg);
    LLVMDisposeMessage(triple);
    LLVMDisposeMessage(cpu);
    LLVMDisposeMessage(features);
    return tm;
}

bool cg_optimize(LLVMModuleRef mod, LLVMTargetMachineRef tm, char *err, size_t errlen)
{
    char *msg = NULL;
    if (LLVMVerifyModule(mod, LLVMReturnStatusAction, &msg)) {
        snprintf(err, errlen, "internal error: invalid LLVM IR was generated: %.300s", msg);
        LLVMDisposeMessage(msg);
        return false;
    }
    LLVMDisposeMessage(msg);
    char *triple = LLVMGetTargetMachineTriple(tm);
    LLVMSetTarget(mod, triple);
    LLVMDisposeMessage(triple);
    LLVMTargetDataRef layout = LLVMCreateTargetDataLayout(tm);
    LLVMSetModuleDataLayout(mod, layout);
    LLVMDisposeTargetData(layout);
    LLVMPassBuilderOptionsRef opts = LLVMCreatePassBuilderOptions();
    LLVMPassBuilderOptionsSetLoopVectorization(opts, 1);
    LLVMPassBuilderOptionsSetSLPVectorization(opts, 1);
    LLVMPassBuilderOptionsSetLoopUnrolling(opts, 1);
    LLVMPassBuilderOptionsSetLoopInterleaving(opts, 1);
    LLVMErrorRef e = LLVMRunPasses(mod, "default<O2>", tm, opts);
    LLVMDisposePassBuilderOptions(opts);
    if (!e)
        return true;
    char *m = LLVMGetErrorMessage(e);
    snprintf(err, errlen, "optimizing: %s", m);
    LLVMDisposeErrorMessage(m);
    return false;
}
