// --emit=llvm: a large loop whose only tensor operand is bf16 (its other
// operands scalars) and whose body is costly computes a function of 65,536
// possible inputs. It runs through cg_rt_parallel_lookup, which builds the
// table of the loop's own results for every bf16 value (the same @loop, its
// operand and result slots pointed at the runtime's arrays) and then looks
// each element up. The call names the loop, the slots of the operand and
// the result, and the result's element size. A loop over two tensors, or a
// small one, runs as it is.
// RUN: %agc --emit=llvm --target-triple x86_64-linux-gnu --cpu x86-64-v3 %s | FileCheck %s
#include <ag.h>

AG_FUNCTION AG_SIGNATURE("bf16[1048576], a=0.75")
ag_tensor act(ag_tensor x, float a)
{
    return ag_add(ag_tanh(ag_mul(x, a)), x);
}

AG_FUNCTION AG_SIGNATURE("bf16[1048576], bf16[1048576]")
ag_tensor two(ag_tensor x, ag_tensor y)
{
    return ag_tanh(ag_add(x, y));
}

AG_FUNCTION AG_SIGNATURE("bf16[1024]")
ag_tensor small(ag_tensor x)
{
    return ag_tanh(x);
}

// CHECK-LABEL: define internal {{.*}} @agc_act_graph(
// CHECK: call void @cg_rt_parallel_lookup(ptr nonnull @loop, ptr nonnull %loop_ctx, i64 1048576, i64 16384, i32 0, i32 [[OUT:[0-9]+]], i32 2)
// CHECK-LABEL: define internal void @loop(
// CHECK: load <8 x i16>

// CHECK-LABEL: define internal {{.*}} @agc_two_graph(
// CHECK-NOT: cg_rt_parallel_lookup
// CHECK: call void @cg_rt_parallel_for(

// CHECK-LABEL: define internal {{.*}} @agc_small_graph(
// CHECK-NOT: cg_rt_parallel_lookup
// CHECK: ret i32
