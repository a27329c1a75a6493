// --emit=llvm: a chain of elementwise ops becomes one loop. The whole
// chain (mul, add, mul, add) is computed in one vectorized loop body that
// reads x and writes the one output buffer: no intermediate tensor is
// allocated and no op goes through the runtime's generic kernels.
// RUN: %agc --emit=llvm --target-triple x86_64-linux-gnu --cpu x86-64 %s | FileCheck %s
#include <ag.h>

AG_FUNCTION AG_SIGNATURE("f32[4096], a=2, b=1")
ag_tensor chain(ag_tensor x, float a, float b)
{
    return ag_add(ag_mul(ag_add(ag_mul(x, a), b), x), 3.0f);
}

// The C function, with the user's prototype, calls the runtime:
// CHECK-LABEL: define i64 @chain(i64 %x, float %a, float %b)
// CHECK: call {{.*}}@ag_aot_call(ptr {{.*}}@agc_aot_chain
//
// CHECK-LABEL: define internal {{.*}}i32 @agc_chain_graph(
// CHECK-NOT: cg_rt_apply
// CHECK: call ptr @cg_rt_new(
// CHECK-NOT: call ptr @cg_rt_new(
// CHECK: vector.body:
// CHECK: fmul <4 x float>
// CHECK: fadd <4 x float>
// CHECK: fmul <4 x float>
// CHECK: fadd <4 x float>
// CHECK: store <4 x float>
// CHECK-NOT: vector.body:
// CHECK-NOT: cg_rt_apply
// CHECK: ret i32 1
