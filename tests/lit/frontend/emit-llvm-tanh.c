// --emit=llvm: f32 tanh is agc's own arithmetic (backend/cpu/lower_math.c, the
// same steps as runtime/kernels/tanh_f32.h), not a call to libm's tanhf.
// The module defines it once (linkonce_odr: one copy however many functions
// the object holds), as a scalar function and vector versions of
// 4, 8 and 16 lanes; each use calls the scalar one, naming the vector ones
// (vector-function-abi-variant), so the fused loop is vectorized for the
// target's width and calls the version of that width.
// RUN: %agc --emit=llvm --target-triple x86_64-linux-gnu --cpu x86-64 %s | FileCheck --check-prefix=SSE --implicit-check-not=tanhf --implicit-check-not=llvm.fma --implicit-check-not=llvm.prefetch %s
// RUN: %agc --emit=llvm --target-triple x86_64-linux-gnu --cpu haswell %s | FileCheck --check-prefix=AVX --implicit-check-not=tanhf --implicit-check-not=llvm.fma --implicit-check-not=llvm.prefetch %s
// RUN: %agc --emit=llvm --target-triple aarch64-linux-gnu %s | FileCheck --check-prefix=NEON --implicit-check-not=tanhf --implicit-check-not=llvm.fma --implicit-check-not=llvm.prefetch %s
#include <ag.h>

AG_FUNCTION AG_SIGNATURE("f32[1024], a=0.75, b=-0.125, c=1.5")
ag_tensor chain(ag_tensor x, float a, float b, float c)
{
    return ag_add(ag_mul(ag_tanh(ag_add(ag_mul(x, a), b)), c), x);
}

// The vector version: |v| clamped, expm1(2|v|) built from 2^k (a shift of
// the rounding sum's bits) and a polynomial, the division, the sign bit
// ORed back in, and the select of v itself for tiny |v| and NaN.
// SSE: @llvm.compiler.used = appending global [3 x ptr]
// SSE: define linkonce_odr hidden <4 x float> @agc_tanh_f32_v4(<4 x float> %0) #[[ATTR:[0-9]+]] {
// SSE: @llvm.fabs.v4f32(
// SSE: select <4 x i1>
// SSE: shl <4 x i32>
// SSE: fdiv <4 x float>
// SSE: xor <4 x i32>
// SSE: or <4 x i32>
// SSE: fcmp ult <4 x float>
// SSE: select <4 x i1>
// SSE: ret <4 x float>
// One vector loop computes the whole chain: x*a + b, tanh, then *c + x;
// the remainder loop calls the scalar version.
// SSE: vector.body:
// SSE: fmul <4 x float>
// SSE: fadd <4 x float>
// SSE: call <4 x float> @agc_tanh_f32_v4(<4 x float>
// SSE: fmul <4 x float>
// SSE: store <4 x float>
// SSE: tail call float @agc_tanh_f32(float %{{[0-9]+}}) #[[CALL:[0-9]+]]
// SSE: attributes #[[ATTR]] = { {{.*}}memory(none) "agc-vector-body" }
// SSE: attributes #[[CALL]] = { memory(none) "vector-function-abi-variant"="_ZGV_LLVM_N4v_agc_tanh_f32(agc_tanh_f32_v4),_ZGV_LLVM_N8v_agc_tanh_f32(agc_tanh_f32_v8),_ZGV_LLVM_N16v_agc_tanh_f32(agc_tanh_f32_v16)" }
// AVX: define linkonce_odr hidden <8 x float> @agc_tanh_f32_v8(<8 x float> %0)
// AVX: shl <8 x i32>
// AVX: fdiv <8 x float>
// AVX: or <8 x i32>
// The loop asks LLVM to interleave it by 4 (lower_loop.c, calls_tanh), so
// that the tanh calls of four vectors overlap.
// AVX: vector.body:
// AVX-COUNT-4: call <8 x float> @agc_tanh_f32_v8(<8 x float>
// AVX: store <8 x float>
// NEON: target triple = "aarch64-unknown-linux-gnu"
// NEON: define linkonce_odr hidden <4 x float> @agc_tanh_f32_v4(<4 x float> %0)
// NEON: fdiv <4 x float>
// NEON: vector.body:
// NEON: call <4 x float> @agc_tanh_f32_v4(<4 x float>
// NEON: store <4 x float>
