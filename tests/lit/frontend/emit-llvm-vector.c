// --emit=llvm: fused loops are vectorized for the target's vector width.
// RUN: %agc --emit=llvm --target-triple x86_64-linux-gnu --cpu x86-64 %s | FileCheck --check-prefix=SSE %s
// RUN: %agc --emit=llvm --target-triple x86_64-linux-gnu --cpu haswell %s | FileCheck --check-prefix=AVX %s
// RUN: %agc --emit=llvm --target-triple aarch64-linux-gnu %s | FileCheck --check-prefix=NEON %s
// RUN: %agc --emit=llvm --target-triple x86_64-linux-gnu --cpu skylake-avx512 %s | FileCheck --check-prefix=I64 %s
#include <ag.h>

AG_FUNCTION AG_SIGNATURE("f32[?], i64[?]")
ag_tensor scale(ag_tensor x, ag_tensor n)
{
    ag_tensor y = ag_sub(ag_mul(x, 0.5f), 1.0f);
    ag_tensor m = ag_add(ag_mul(n, 3), 1);
    return ag_add(y, ag_cast(ag_reduce_sum(m, AG_ALL_AXES, false), AG_F32));
}

// SSE: target triple = "x86_64-unknown-linux-gnu"
// SSE: fmul <4 x float>
// SSE: fadd <4 x float>
// AVX: fmul <8 x float>
// NEON: target triple = "aarch64-unknown-linux-gnu"
// NEON: fmul <4 x float>
// I64: mul <{{[0-9]+}} x i64>
