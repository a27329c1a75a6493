// --cpu names a CPU LLVM knows for the triple; any other name is a clear
// error, never an LLVM abort. A CPU without 64-bit mode compiles for
// x86-64 with its other features (LLVM used to abort on both).
// RUN: not %agc --emit=asm --target-triple x86_64-linux-gnu --cpu no-such-cpu %s 2>&1 | FileCheck --check-prefix=UNKNOWN %s
// RUN: not %agc --emit=obj --target-triple aarch64-linux-gnu --cpu znver4 %s -o %t.o 2>&1 | FileCheck --check-prefix=WRONG %s
// RUN: not %agc --emit=asm --target-triple x86_64-linux-gnu --cpu help %s 2>&1 | FileCheck --check-prefix=HELP %s
// RUN: %agc --emit=asm --target-triple x86_64-linux-gnu --cpu pentium4 %s | FileCheck --check-prefix=OLD %s
#include <ag.h>

AG_FUNCTION AG_SIGNATURE("f32[16]")
ag_tensor twice(ag_tensor x)
{
    return ag_add(x, x);
}

// UNKNOWN-NOT: not a recognized processor
// UNKNOWN: error: LLVM knows no CPU named 'no-such-cpu' for x86_64-unknown-linux-gnu; the name 'help' lists those it knows
// WRONG: error: LLVM knows no CPU named 'znver4' for aarch64-unknown-linux-gnu
// HELP: Available CPUs for this target:
// HELP: znver4
// HELP: error: the CPUs LLVM knows for x86_64-unknown-linux-gnu are listed above
// OLD: {{^}}twice:
