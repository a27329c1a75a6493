// --emit=llvm: a constant that a runtime call reads without keeping it (a
// layer's weights, when the product runs in the runtime's kernel because
// the batch dim is unknown) is lent in place: a box in the frame borrows
// the literal's data (cg_rt_box_init) instead of a `const` op copying it
// into a new tensor at every call. A constant the function returns is
// still a copy: the caller owns its results.
// RUN: %agc --emit=llvm --target-triple x86_64-linux-gnu --cpu x86-64-v3 %s | FileCheck %s
#include <ag.h>

static const float w[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

AG_FUNCTION AG_SIGNATURE("f32[?,4]")
ag_tensor layer(ag_tensor x)
{
    return ag_matmul(x, ag_from_data(AG_F32, AG_SHAPE(4, 4), w));
}

AG_FUNCTION AG_SIGNATURE("i32[]")
ag_tensor weights(ag_tensor n)
{
    (void)n;
    return ag_from_data(AG_F32, AG_SHAPE(4, 4), w);
}

// CHECK-LABEL: define internal {{.*}} @agc_layer_graph(
// CHECK-NOT: @cg_rt_apply
// CHECK: call void @cg_rt_box_init(ptr nonnull %{{[0-9]+}}, i32 0, i32 2, ptr nonnull @dims, ptr nonnull @literal)
// CHECK: %matmul = call ptr @cg_rt_apply(
// CHECK: ret i32

// CHECK-LABEL: define internal {{.*}} @agc_weights_graph(
// CHECK-NOT: @cg_rt_box_init
// CHECK: %const = call ptr @cg_rt_apply
// CHECK: store ptr %const, ptr %results
