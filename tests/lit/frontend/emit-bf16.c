// bf16 on the cpu target. A chain of bf16 ops is one vectorized loop: bf16
// loaded as i16 and widened to f32 in registers, each op computed in f32
// and rounded to bf16 (nearest even: add 0x7FFF plus the lowest kept bit,
// keep the top half) where the unfused graph rounds, stored as i16; no op
// calls its kernel. A bf16 matrix product uses vdpbf16ps on CPUs with
// AVX512_BF16 (sapphirerapids, znver4) and widens to f32 elsewhere
// (znver3, x86-64-v3), with f32 sums either way.
// RUN: %agc --emit=llvm --target-triple x86_64-linux-gnu --cpu x86-64-v3 %s | FileCheck --check-prefix=CHAIN %s
// RUN: %agc --emit=asm --target-triple x86_64-linux-gnu --cpu sapphirerapids %s | FileCheck --check-prefix=DOT %s
// RUN: %agc --emit=asm --target-triple x86_64-linux-gnu --cpu znver4 %s | FileCheck --check-prefix=DOT %s
// RUN: %agc --emit=asm --target-triple x86_64-linux-gnu --cpu znver3 %s | FileCheck --check-prefix=CONV %s
// RUN: %agc --emit=asm --target-triple x86_64-linux-gnu --cpu x86-64-v3 %s | FileCheck --check-prefix=CONV %s
#include <ag.h>

AG_FUNCTION AG_SIGNATURE("bf16[4096]")
ag_tensor chain(ag_tensor x)
{
    return ag_tanh(ag_add(ag_mul(x, 2.0f), x));
}

AG_FUNCTION AG_SIGNATURE("bf16[8,36], bf16[36,40]")
ag_tensor product(ag_tensor a, ag_tensor b)
{
    return ag_matmul(a, b);
}

// CHAIN-LABEL: define internal {{.*}}i32 @agc_chain_graph(
// CHAIN-NOT: cg_rt_apply
// CHAIN: call ptr @cg_rt_new(
// CHAIN-NOT: call ptr @cg_rt_new(
// CHAIN: vector.body:
// CHAIN: load <[[N:[0-9]+]] x i16>
// CHAIN: zext <[[N]] x i16> {{.*}} to <[[N]] x i32>
// CHAIN: shl nuw <[[N]] x i32>
// CHAIN: fmul <[[N]] x float>
// CHAIN: add <[[N]] x i32> {{.*}}<i32 32767,
// CHAIN: and <[[N]] x i32> {{.*}}<i32 -65536,
// CHAIN: fadd <[[N]] x float>
// CHAIN: add <[[N]] x i32> {{.*}}<i32 32767,
// CHAIN: call <[[N]] x float> @agc_tanh_f32_v[[N]](
// CHAIN: add <[[N]] x i32> {{.*}}<i32 32767,
// CHAIN: trunc {{.*}}<[[N]] x i32> {{.*}} to <[[N]] x i16>
// CHAIN: store <[[N]] x i16>
// CHAIN-NOT: vector.body:
// CHAIN-NOT: cg_rt_apply
// CHAIN: ret i32 1

// DOT-LABEL: {{^}}agc_product_graph:
// DOT-NOT: cg_rt_apply
// DOT: callq matmul_bf16dot_8x36x40
// DOT-LABEL: {{^}}matmul_bf16dot_8x36x40:
// DOT: vpermt2w
// DOT: vdpbf16ps %zmm
// DOT: vdpbf16ps %zmm
// DOT: .size matmul_bf16dot_8x36x40,

// CONV-LABEL: {{^}}agc_product_graph:
// CONV-NOT: cg_rt_apply
// CONV: callq matmul_bf16_8x36x40
// CONV-LABEL: {{^}}matmul_bf16_8x36x40:
// CONV-NOT: {{vdpbf16ps|vfmadd}}
// CONV: vpmovzxwd
// CONV-NOT: {{vdpbf16ps|vfmadd}}
// CONV: vmulps
// CONV-NOT: {{vdpbf16ps|vfmadd}}
// CONV: vaddps
// CONV-NOT: {{vdpbf16ps|vfmadd}}
// CONV: .size matmul_bf16_8x36x40,
