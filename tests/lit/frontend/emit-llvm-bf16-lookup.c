// --emit=llvm: a large loop whose only tensor operand is bf16 (its other
// operands scalars) and whose body is costly computes a function of 65,536
// possible inputs. It runs through cg_rt_parallel_lookup, which builds the
// table of the loop's own results for every bf16 value (the same @loop, its
// operand and result slots pointed at the runtime's arrays) and then looks
// each element up. The call names the loop, the slots of the operand and
// the result, the result's element size, and, when every scalar is a
// constant of the code, the code's own zeroed memory where the first call
// leaves the table for the next ones (scalars passed in: null, a table per
// call). A loop over two tensors, or a small one, runs as it is.
// RUN: %agc --emit=llvm --target-triple x86_64-linux-gnu --cpu x86-64-v3 %s | FileCheck %s
#include <ag.h>

AG_FUNCTION AG_SIGNATURE("bf16[1048576], a=0.75")
ag_tensor act(ag_tensor x, float a)
{
    return ag_add(ag_tanh(ag_mul(x, a)), x);
}

AG_FUNCTION AG_SIGNATURE("bf16[1048576], bf16[]")
ag_tensor scaled(ag_tensor x, ag_tensor s)
{
    return ag_tanh(ag_mul(x, s));
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

// CHECK: @lookup_cache = internal global [131200 x i8] zeroinitializer, align 64

// CHECK-LABEL: define internal {{.*}} @agc_act_graph(
// CHECK: call void @cg_rt_parallel_lookup(ptr nonnull @loop, ptr nonnull %loop_ctx, i64 1048576, i64 16384, i32 0, i32 [[OUT:[0-9]+]], i32 2, ptr nonnull @lookup_cache)
// CHECK-LABEL: define internal void @loop(
// CHECK: load <8 x i16>

// CHECK-LABEL: define internal {{.*}} @agc_scaled_graph(
// CHECK: call void @cg_rt_parallel_lookup(ptr nonnull @loop.{{[0-9]+}}, ptr nonnull %loop_ctx, i64 1048576, i64 16384, i32 0, i32 {{[0-9]+}}, i32 2, ptr null)

// CHECK-LABEL: define internal {{.*}} @agc_two_graph(
// CHECK-NOT: cg_rt_parallel_lookup
// CHECK: call void @cg_rt_parallel_for(

// CHECK-LABEL: define internal {{.*}} @agc_small_graph(
// CHECK-NOT: cg_rt_parallel_lookup
// CHECK: ret i32
