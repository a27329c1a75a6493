// --emit=llvm: a bf16 product whose right operand is a constant of the graph
// (here folded from range, reshape and cast; in a model, a weight the
// function captured) reads b packed into pairs when compiling: a private
// constant of the module (64 x 96 bf16 -> 2 blocks of 64 columns, 32 pairs of
// 128 elements: 16,384 bytes) and the product's loop that only reads it
// (matmul_bf16dot_packed_*, no packing per call, no scratch allocated). For
// a CPU with AVX512_BF16 but code that may run elsewhere, so no AMX kernel.
// RUN: %agc --emit=llvm --target-triple x86_64-linux-gnu --cpu sapphirerapids %s | FileCheck %s
#include <ag.h>

AG_FUNCTION AG_SIGNATURE("bf16[32,64]")
ag_tensor layer(ag_tensor x)
{
    ag_tensor w = ag_cast(ag_reshape(ag_range(0.0f, 6144.0f, 1.0f), AG_SHAPE(64, 96)), AG_BF16);
    return ag_matmul(x, w);
}

// CHECK: @dot_packed = private constant [16384 x i8] c"\00\00\C0B\80?\C2B
// CHECK-LABEL: define internal {{.*}}i32 @agc_layer_graph(
// CHECK-NOT: %bpack
// CHECK: store ptr @dot_packed
// CHECK: call {{.*}}void @matmul_bf16dot_packed_32x64x96(
// CHECK-NOT: cg_rt_matmul_bf16_amx
// CHECK-LABEL: define internal {{.*}}void @matmul_bf16dot_packed_32x64x96(
// CHECK: @llvm.x86.avx512bf16.dpbf16ps.512
