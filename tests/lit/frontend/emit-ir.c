// --emit=ir shows the graph traced at build time, --emit=ir-opt the same
// graph after the passes. C scalars are trace-time constants: n=3 unrolls
// the C loop three times. Every node keeps the user's source line.
// RUN: %agc --emit=ir %s | FileCheck --check-prefix=IR %s
// RUN: %agc --emit=ir-opt %s -o %t.ir && FileCheck --check-prefix=OPT %s < %t.ir
// RUN: %agc --emit=ir --signature "f64[2,?], n=1" %s | FileCheck --check-prefix=SIG %s
#include <ag.h>

AG_FUNCTION AG_SIGNATURE("f32[2,3], n=3")
ag_tensor grow(ag_tensor x, int n)
{
    ag_tensor zero = ag_mul(x, 0.0f);
    for (int i = 0; i < n; i++)
        x = ag_add(x, ag_add(zero, 1.0f));
    return x;
}

// IR: func @grow(%0: f32[2,3]) -> (f32[2,3]) {
// IR: mul(%0, %{{[0-9]+}}) : f32[2,3] loc("{{.*}}emit-ir.c":12)
// IR-COUNT-6: = add(%{{[0-9]+}}, %{{[0-9]+}}) : f32[2,3] loc("{{.*}}emit-ir.c":14)
// IR-NOT: = add(
// IR: return

// The passes share the three `zero + 1` (CSE), so four adds are left
// (x * 0 stays: it is NaN where x is infinite):
// OPT: func @grow(%0: f32[2,3]) -> (f32[2,3]) {
// OPT: = mul(
// OPT-COUNT-4: = add(
// OPT-NOT: = add(
// OPT: return

// --signature replaces AG_SIGNATURE:
// SIG: func @grow(%0: f64[2,?]) -> (f64[2,?]) {
// SIG-COUNT-2: = add(
// SIG-NOT: = add(
