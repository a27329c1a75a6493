// --emit=asm: small matrix products stream rows (a[i,p] broadcast, times a
// row of b, added to a row of c) and never gather down b's columns, on
// AVX-512 (znver4, sapphirerapids), AVX2 (znver3) and SSE4.2 (x86-64-v2)
// CPUs alike. Float products multiply and add separately, in order p = 0..k-1
// for each element (no FMA), so that they round like the reference.
// RUN: %agc --emit=asm --target-triple x86_64-linux-gnu --cpu znver4 %s | FileCheck --check-prefixes=CHECK,AVX %s
// RUN: %agc --emit=asm --target-triple x86_64-linux-gnu --cpu sapphirerapids %s | FileCheck --check-prefixes=CHECK,AVX %s
// RUN: %agc --emit=asm --target-triple x86_64-linux-gnu --cpu znver3 %s | FileCheck --check-prefixes=CHECK,AVX %s
// RUN: %agc --emit=asm --target-triple x86_64-linux-gnu --cpu x86-64-v2 %s | FileCheck --check-prefixes=CHECK,SSE %s
#include <ag.h>

AG_FUNCTION AG_SIGNATURE("i32[10,10], y=5")
ag_tensor power(ag_tensor x, int y)
{
    ag_tensor result = ag_eye(10, AG_I32);
    for (int i = 0; i < y; i++)
        result = ag_matmul(x, result);
    return result;
}

AG_FUNCTION AG_SIGNATURE("f32[10,10], y=5")
ag_tensor fpower(ag_tensor x, int y)
{
    ag_tensor result = ag_eye(10, AG_F32);
    for (int i = 0; i < y; i++)
        result = ag_matmul(x, result);
    return result;
}

// A product small enough to unroll whole, which the SLP vectorizer used to
// gather down columns on AVX-512 CPUs.
AG_FUNCTION AG_SIGNATURE("i32[4,8], i32[8,4]")
ag_tensor small(ag_tensor a, ag_tensor b)
{
    return ag_matmul(a, b);
}

// CHECK-LABEL: {{^}}matmul_i32_10x10x10:
// CHECK-NOT: gather
// AVX: vpbroadcastd
// CHECK-NOT: gather
// AVX: vpmulld
// SSE: pmulld
// CHECK-NOT: gather
// CHECK: .size matmul_i32_10x10x10,

// CHECK-LABEL: {{^}}matmul_f32_10x10x10:
// CHECK-NOT: {{gather|vfmadd|vfnmadd}}
// AVX: vbroadcastss
// CHECK-NOT: {{gather|vfmadd|vfnmadd}}
// AVX: vmulps
// SSE: mulps
// CHECK-NOT: {{gather|vfmadd|vfnmadd}}
// AVX: vaddps
// SSE: addps
// CHECK-NOT: {{gather|vfmadd|vfnmadd}}
// CHECK: .size matmul_f32_10x10x10,

// CHECK-LABEL: {{^}}matmul_i32_4x8x4:
// CHECK-NOT: gather
// AVX: vpmulld
// SSE: pmulld
// CHECK-NOT: gather
// CHECK: .size matmul_i32_4x8x4,
