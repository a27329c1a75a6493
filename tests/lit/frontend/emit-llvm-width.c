// --emit=llvm: on x86 CPUs with AVX-512 fused loops vectorize for 512-bit
// registers (16 f32 lanes), Intel's as well as AMD's, except the Skylake
// server cores, which keep LLVM's 256 bits (backend/cpu/cg_target.c has
// the measurements); AVX2 CPUs use their 256 bits.
// RUN: %agc --emit=llvm --target-triple x86_64-linux-gnu --cpu sapphirerapids %s | FileCheck --check-prefix=W512 %s
// RUN: %agc --emit=llvm --target-triple x86_64-linux-gnu --cpu znver4 %s | FileCheck --check-prefix=W512 %s
// RUN: %agc --emit=llvm --target-triple x86_64-linux-gnu --cpu skylake-avx512 %s | FileCheck --check-prefix=W256 %s
// RUN: %agc --emit=llvm --target-triple x86_64-linux-gnu --cpu znver3 %s | FileCheck --check-prefix=W256 %s
#include <ag.h>

AG_FUNCTION AG_SIGNATURE("f32[4096], a=0.75, b=-0.125, c=1.5")
ag_tensor chain(ag_tensor x, float a, float b, float c)
{
    return ag_add(ag_mul(ag_tanh(ag_add(ag_mul(x, a), b)), c), x);
}

// W512: vector.body:
// W512: call <16 x float> @agc_tanh_f32_v16(<16 x float>
// W512: store <16 x float>
// W256: vector.body:
// W256: call <8 x float> @agc_tanh_f32_v8(<8 x float>
// W256: store <8 x float>
