// --emit=llvm: a static-range layer, requantize(qmatmul + bias), compiles
// to one call of cg_rt_qlayer (backend/cpu/lower_qlayer.c), which
// requantizes the int32 sums as the product makes them: no qmatmul, add
// or requantize of their own, no int32 tensor. When the sums are used
// elsewhere too, the three ops stay as they are.
// RUN: %agc --emit=llvm --target-triple x86_64-linux-gnu --cpu x86-64-v3 %s | FileCheck %s
#include <ag.h>

static const signed char w[8 * 4] = {1, -2, 3, 4, 5, -6, 7, 8, 9, 10, -11, 12, 13, 14, 15, 16,
                                     1, 2, 3, -4, 5, 6, 7, 8, -9, 10, 11, 12, 13, 14, 15, -16};
static const int bias[4] = {100, -200, 300, -400};

static ag_tensor sums(ag_tensor x)
{
    ag_tensor xq = ag_quantize(x, ag_scalar_f32(0.5f), ag_scalar_i32(-3));
    ag_tensor wq = ag_from_data(AG_I8, AG_SHAPE(8, 4), w);
    return ag_add(ag_qmatmul(xq, wq, ag_scalar_i32(-3)), ag_from_data(AG_I32, AG_SHAPE(4), bias));
}

AG_FUNCTION AG_SIGNATURE("f32[2,8]")
ag_tensor layer(ag_tensor x)
{
    return ag_requantize(sums(x), ag_scalar_f32(0.01f), ag_scalar_i32(-128), -128, 127);
}

AG_FUNCTION AG_SIGNATURE("f32[2,8]")
ag_tensor layer_and_sums(ag_tensor x)
{
    ag_tensor acc = sums(x);
    ag_tensor q = ag_requantize(acc, ag_scalar_f32(0.01f), ag_scalar_i32(-128), -128, 127);
    return ag_add(ag_cast(q, AG_I32), acc);
}

// CHECK-LABEL: define internal {{.*}} @agc_layer_graph(
// CHECK: %quantize = call ptr @cg_rt_apply
// CHECK-NOT: %qmatmul
// CHECK: %qlayer = call ptr @cg_rt_qlayer(
// CHECK-NOT: %requantize
// CHECK: declare ptr @cg_rt_qlayer(ptr, ptr)

// CHECK-LABEL: define internal {{.*}} @agc_layer_and_sums_graph(
// CHECK-NOT: @cg_rt_qlayer
// CHECK: %qmatmul = call ptr @cg_rt_apply
// CHECK: %requantize = call ptr @cg_rt_apply
