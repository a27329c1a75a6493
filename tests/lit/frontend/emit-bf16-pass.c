// agc --bf16 on f32 code: the bf16 pass keeps elementwise ops in f32, so
// the chain between two bf16 matrix products is one loop that loads the
// product's bf16 values, widens them, computes mul, add and tanh in f32
// without rounding, and rounds once, right before it stores the bf16
// operand of the next product (docs/passes.md, "bf16"). A chain written
// on bf16 tensors rounds after every op instead (emit-bf16.c).
// RUN: %agc --emit=llvm --bf16 --target-triple x86_64-linux-gnu --cpu x86-64-v3 %s | FileCheck %s
#include <ag.h>

AG_FUNCTION AG_SIGNATURE("f32[64,64], f32[64,64]")
ag_tensor layers(ag_tensor x, ag_tensor w)
{
    ag_tensor h = ag_tanh(ag_add(ag_mul(ag_matmul(x, w), 0.5f), 1.0f));
    return ag_matmul(h, w);
}

// The loop is interleaved by 4 (fused loops that call tanh ask LLVM for
// it): four vectors of each step, one rounding per stored vector.
// CHECK-LABEL: define internal {{.*}}i32 @agc_layers_graph(
// CHECK: call fastcc void @matmul_bf16_64x64x64(
// CHECK: load <[[N:[0-9]+]] x i16>
// CHECK-COUNT-3: load <[[N]] x i16>
// CHECK-NOT: 32767
// CHECK-COUNT-4: fmul <[[N]] x float>
// CHECK-NOT: 32767
// CHECK-COUNT-4: fadd <[[N]] x float>
// CHECK-NOT: 32767
// CHECK-COUNT-4: call <[[N]] x float> @agc_tanh_f32_v[[N]](
// CHECK-NOT: 32767
// CHECK-COUNT-4: add <[[N]] x i32> {{.*}}<i32 32767,{{.*}}{{$}}
// CHECK-NOT: 32767
// CHECK-COUNT-4: store <[[N]] x i16>
// CHECK-NOT: 32767
// CHECK: !llvm.loop
// CHECK-NOT: 32767
// CHECK: call fastcc void @matmul_bf16_64x64x64(
