// agc --target names the target the pipeline plans and compiles for
// (default: cpu). The reference target fuses nothing and has no
// ahead-of-time form; an unknown target is a usage error listing them.
// RUN: rm -rf %t && mkdir -p %t && echo keep > %t/out.o
//
// RUN: %agc --emit=dot %s | FileCheck --check-prefix=CPU %s
// CPU: subgraph cluster_fused_0
// RUN: %agc --emit=dot --target=reference %s | FileCheck --check-prefix=REF %s
// REF-NOT: subgraph cluster_fused
// RUN: %agc --emit=ir-opt --target reference %s | FileCheck --check-prefix=OPT %s
// OPT: func @chain(%0: f32[16]) -> (f32[16])
//
// RUN: not %agc --emit=obj --target=reference %s -o %t/out.o 2>&1 | FileCheck --check-prefix=NOAOT %s
// NOAOT: agc: error: the target 'reference' has no ahead-of-time form (objects, assembly, LLVM IR); the cpu target has
// RUN: cat %t/out.o | FileCheck --check-prefix=KEEP %s
// KEEP: keep
//
// RUN: not %agc --emit=ir-opt --target=tpu %s 2>&1 | FileCheck --check-prefix=BAD %s
// BAD: unknown target 'tpu' for --target (targets: reference, cpu, tpu-model)
// RUN: not %agc --emit=ir --target=cpu %s 2>&1 | FileCheck --check-prefix=WHICH %s
// WHICH: --target applies to --emit=ir-opt, dot, obj, llvm, asm and tpu
#include <ag.h>

AG_FUNCTION AG_SIGNATURE("f32[16]")
ag_tensor chain(ag_tensor x)
{
    return ag_tanh(ag_add(ag_mul(x, x), x));
}
