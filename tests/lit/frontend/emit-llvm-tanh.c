// --emit=llvm: f32 tanh is agc's own arithmetic (backend/lower_math.c, the
// same steps as runtime/kernels/tanh_f32.h), not a call to libm's tanhf, so
// a fused loop using it is vectorized for the target's vector width.
// RUN: %agc --emit=llvm --target-triple x86_64-linux-gnu --cpu x86-64 %s | FileCheck --check-prefix=SSE --implicit-check-not=tanhf --implicit-check-not=llvm.fma %s
// RUN: %agc --emit=llvm --target-triple x86_64-linux-gnu --cpu haswell %s | FileCheck --check-prefix=AVX --implicit-check-not=tanhf --implicit-check-not=llvm.fma %s
// RUN: %agc --emit=llvm --target-triple aarch64-linux-gnu %s | FileCheck --check-prefix=NEON --implicit-check-not=tanhf --implicit-check-not=llvm.fma %s
#include <ag.h>

AG_FUNCTION AG_SIGNATURE("f32[1024], a=0.75, b=-0.125, c=1.5")
ag_tensor chain(ag_tensor x, float a, float b, float c)
{
    return ag_add(ag_mul(ag_tanh(ag_add(ag_mul(x, a), b)), c), x);
}

// One vector loop computes the whole chain: x*a + b, tanh (|v| clamped,
// expm1(2|v|) built from 2^k (a shift of the rounding sum's bits) and a
// polynomial, the division, the sign bit ORed back in, the select of v
// itself for tiny |v| and NaN), then *c + x, and stores the result.
// SSE: vector.body:
// SSE: fmul <4 x float>
// SSE: fadd <4 x float>
// SSE: @llvm.fabs.v4f32(
// SSE: select <4 x i1>
// SSE: shl <4 x i32>
// SSE: fdiv <4 x float>
// SSE: xor <4 x i32>
// SSE: or <4 x i32>
// SSE: fcmp ult <4 x float>
// SSE: select <4 x i1>
// SSE: store <4 x float>
// AVX: vector.body:
// AVX: @llvm.fabs.v8f32(
// AVX: shl <8 x i32>
// AVX: fdiv <8 x float>
// AVX: or <8 x i32>
// AVX: store <8 x float>
// NEON: target triple = "aarch64-unknown-linux-gnu"
// NEON: vector.body:
// NEON: @llvm.fabs.v4f32(
// NEON: fdiv <4 x float>
// NEON: store <4 x float>
