// --emit=llvm: a large flat loop that computes much per element (tanh here)
// runs in blocks of 256 elements, and each block first prefetches what the
// loop reads 4 KB ahead, one prefetch per 64-byte line (16 for f32). Such
// a loop is marked agc-hot-loop, and the vector tanh the vectorizer called
// in it is inlined after the O2 pipeline (only the remainder loop's scalar
// call stays). A loop of cheap arithmetic prefetches nothing: the
// hardware's prefetchers keep up with it, except over bf16, whose
// widening and rounding are enough work per line that they fall behind:
// such a loop prefetches (8 lines of each bf16 tensor per block). Small
// loops (emit-llvm-tanh.c) neither prefetch nor inline.
// RUN: %agc --emit=llvm --target-triple x86_64-linux-gnu --cpu x86-64-v3 %s | FileCheck %s
#include <ag.h>

AG_FUNCTION AG_SIGNATURE("f32[1048576], a=0.75, b=-0.125, c=1.5")
ag_tensor chain(ag_tensor x, float a, float b, float c)
{
    return ag_add(ag_mul(ag_tanh(ag_add(ag_mul(x, a), b)), c), x);
}

AG_FUNCTION AG_SIGNATURE("f32[1048576], f32[1048576]")
ag_tensor affine(ag_tensor x, ag_tensor y)
{
    return ag_add(ag_mul(x, 3.0f), y);
}

AG_FUNCTION AG_SIGNATURE("bf16[1048576], bf16[1048576]")
ag_tensor affine_bf16(ag_tensor x, ag_tensor y)
{
    return ag_add(ag_mul(x, 3.0f), y);
}

/* A nest: the bias broadcasts along the rows. The innermost loop, over
   rows of 4096, prefetches x (16 lines per block of 256) but not b, which
   stays in the cache. Rows of 16 run in groups of 16 rows, one flat loop
   of 256 elements over a tile of b repeated 16 times (filled once per
   call of the loop function), and each group prefetches like a block. */
AG_FUNCTION AG_SIGNATURE("f32[4096,4096], f32[4096]")
ag_tensor dense_act(ag_tensor x, ag_tensor b)
{
    return ag_tanh(ag_add(x, b));
}

AG_FUNCTION AG_SIGNATURE("f32[65536,16], f32[16]")
ag_tensor narrow_act(ag_tensor x, ag_tensor b)
{
    return ag_tanh(ag_add(x, b));
}

// CHECK-LABEL: define internal void @loop(
// CHECK-SAME: #[[HOT:[0-9]+]]
// CHECK-COUNT-16: call void @llvm.prefetch.p0(ptr %ahead{{[0-9]*}}, i32 0, i32 3, i32 1)
// CHECK-NOT: llvm.prefetch
// CHECK: vector.body:
// CHECK-NOT: call <8 x float> @agc_tanh_f32_v8
// CHECK: fdiv <8 x float>
// CHECK: store <8 x float>
// CHECK: call float @agc_tanh_f32(

// CHECK-LABEL: define internal void @loop.{{[0-9]+}}(
// CHECK-NOT: llvm.prefetch
// CHECK: fmul <8 x float>
// CHECK: ret void

// CHECK-LABEL: define internal void @loop.{{[0-9]+}}(
// CHECK-SAME: #[[HOT2:[0-9]+]]
// CHECK-COUNT-16: call void @llvm.prefetch.p0(ptr %ahead{{[0-9]*}}, i32 0, i32 3, i32 1)
// CHECK-NOT: llvm.prefetch
// CHECK: ret void

// CHECK-LABEL: define internal void @loop.{{[0-9]+}}(
// CHECK-COUNT-16: call void @llvm.prefetch.p0(ptr %ahead{{[0-9]*}}, i32 0, i32 3, i32 1)
// CHECK-NOT: llvm.prefetch
// CHECK: vector.body:
// CHECK-NOT: call <8 x float> @agc_tanh_f32_v8
// CHECK: fdiv <8 x float>

// CHECK-LABEL: define internal void @loop.{{[0-9]+}}(
// CHECK: %tile = alloca [256 x float], align 64
// CHECK-COUNT-16: call void @llvm.prefetch.p0(ptr %ahead{{[0-9]*}}, i32 0, i32 3, i32 1)
// CHECK-NOT: llvm.prefetch
// CHECK: vector.body:
// CHECK: getelementptr inbounds float, ptr %tile, i64 %index
// CHECK-NOT: call <8 x float> @agc_tanh_f32_v8
// CHECK: fdiv <8 x float>
// CHECK: ret void

// CHECK: attributes #[[HOT]] = { {{.*}}"agc-hot-loop" }
// CHECK: attributes #[[HOT2]] = { {{.*}}"agc-hot-loop" }
