/*
 * cg_target.h - LLVM target machines and the optimization pipeline
 * (cg_target.c), for the JIT and for ahead-of-time compilation.
 */
#ifndef CG_TARGET_H
#define CG_TARGET_H

#include "cg.h"

#include <llvm-c/TargetMachine.h>

/* The architectures agc knows something specific about. */
typedef enum cg_arch { CG_ARCH_OTHER, CG_ARCH_X86, CG_ARCH_X86_64, CG_ARCH_AARCH64 } cg_arch;

/* The architecture of a target triple (NULL: the host's). */
cg_arch cg_arch_of(const char *triple);

/* Registers every target LLVM was built with (once per process). */
void cg_target_init(void);

/* A target machine for m (empty fields: the host triple, CPU and
 * features). pic: position-independent code for object files; otherwise
 * the JIT's code model. NULL with a message in err. */
LLVMTargetMachineRef cg_target_machine(const cg_machine *m, bool pic, char *err, size_t errlen);

/* Marks every function defined in mod with tm's CPU and features
 * ("target-cpu", "target-features"), as clang does. The JIT needs it: its
 * code generator's target machine is the host's, and reads these to
 * compile each function for the CPU it was optimized for (AG_CPU=znver3
 * code on an AVX-512 host really is AVX2 code). */
void cg_mark_functions(LLVMModuleRef mod, LLVMTargetMachineRef tm);

/* Marks, as string attributes on functions, for cg_optimize: a loop that
 * runs long enough for inlining to pay (CG_HOT_LOOP), and a vector
 * function to inline into such loops once the vectorizer has called it
 * (CG_VECTOR_BODY). */
#define CG_HOT_LOOP "agc-hot-loop"
#define CG_VECTOR_BODY "agc-vector-body"
void cg_mark(LLVMValueRef f, const char *mark);

/* Verifies mod, sets its triple and data layout from tm, and runs LLVM's
 * O2 pipeline with the vectorizers on; then inlines the CG_VECTOR_BODY
 * functions that hot loops call. */
bool cg_optimize(LLVMModuleRef mod, LLVMTargetMachineRef tm, char *err, size_t errlen);

#endif /* CG_TARGET_H */
