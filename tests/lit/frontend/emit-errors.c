// What agc reports when it cannot build ahead of time or show a stage, and
// that a failed run writes nothing.
// RUN: rm -rf %t && mkdir -p %t && echo keep > %t/out.o
//
// RUN: not %agc --emit=ir --function nosig %s 2>&1 | FileCheck --check-prefix=NOSIG %s
// NOSIG: emit-errors.c:24: error: 'nosig' has no AG_SIGNATURE: give one that fixes every parameter, or pass --signature "f32[2,3], n=4"
//
// A shape error while tracing points at the user's line:
// RUN: not %agc --emit=obj --function bad_shapes %s -o %t/out.o 2>&1 | FileCheck --check-prefix=SHAPES %s
// SHAPES: emit-errors.c:29: error: ag_matmul: inner dims do not match
// RUN: cat %t/out.o | FileCheck --check-prefix=KEEP %s
// KEEP: keep
//
// RUN: not %agc --emit=ir --function scalar %s 2>&1 | FileCheck --check-prefix=SCALAR %s
// SCALAR: error: the signature "f32[2]" gives no value for parameter 'n' of 'scalar': add name=VALUE for each C scalar
// RUN: not %agc --emit=obj --function with_var %s -o %t/out.o 2>&1 | FileCheck --check-prefix=VAR %s
// VAR: error: parameter 'v' of 'with_var': an ag_variable lives in the process that made it
// RUN: not %agc --emit=ir --function nope %s 2>&1 | FileCheck --check-prefix=NOPE %s
// NOPE: agc: error: {{.*}}emit-errors.c has no AG_FUNCTION named 'nope'
// RUN: not %agc --emit=ir --function nosig --signature "f32[2" %s 2>&1 | FileCheck --check-prefix=BADSIG %s
// BADSIG: error: bad signature "f32[2" for 'nosig'
#include <ag.h>

AG_FUNCTION ag_tensor nosig(ag_tensor x) { return x; }

AG_FUNCTION AG_SIGNATURE("f32[2,3]")
ag_tensor bad_shapes(ag_tensor x)
{
    return ag_matmul(x, x);
}

AG_FUNCTION AG_SIGNATURE("f32[2]")
ag_tensor scalar(ag_tensor x, int n) { return ag_mul(x, n); }

AG_FUNCTION AG_SIGNATURE("f32[2]")
ag_tensor with_var(ag_tensor x, ag_variable v)
{
    (void)v;
    return x;
}

// Bad usage exits with 2:
// RUN: %agc --emit=bogus %s > %t/usage 2>&1; echo "exit=$?" >> %t/usage
// RUN: FileCheck --check-prefix=USAGE %s < %t/usage
// USAGE: agc: error: unknown --emit kind in 'bogus' (kinds: c, obj, header, ir, ir-opt, llvm, asm, dot, tpu)
// USAGE: exit=2
// RUN: %agc --emit=ir,llvm %s > %t/two 2>&1; echo "exit=$?" >> %t/two
// RUN: FileCheck --check-prefix=TWO %s < %t/two
// TWO: agc: error: --emit: one of obj, llvm, asm, ir, ir-opt, dot, tpu at a time
// TWO: exit=2
// RUN: %agc --emit=ir --signature "f32[2]" %s > %t/sig 2>&1; echo "exit=$?" >> %t/sig
// RUN: FileCheck --check-prefix=SIGFN %s < %t/sig
// SIGFN: agc: error: --signature applies to one function: name it with --function
// RUN: %agc --emit=obj,header %s -o - > %t/hdr 2>&1; echo "exit=$?" >> %t/hdr
// RUN: FileCheck --check-prefix=HDR %s < %t/hdr
// HDR: --emit=obj,header needs -o FILE.o
// RUN: %agc --emit=c --cpu haswell %s -o - > %t/cpu 2>&1; echo "exit=$?" >> %t/cpu
// RUN: FileCheck --check-prefix=CPU %s < %t/cpu
// CPU: --target-triple and --cpu apply to --emit=obj, llvm and asm
// RUN: not %agc --emit=obj --function scalar --signature "f32[2], n=1" --target-triple riscv64-linux-gnu %s -o %t/out.o 2>&1 | FileCheck --check-prefix=TRIPLE %s
// TRIPLE: agc: error: ahead-of-time objects can be made for x86_64 and aarch64 targets; 'riscv64-unknown-linux-gnu' is neither
// RUN: cat %t/out.o | FileCheck --check-prefix=KEEP %s
