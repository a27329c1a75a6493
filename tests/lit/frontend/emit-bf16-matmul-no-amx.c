// Ahead-of-time code never calls the AMX kernel, even for a CPU with AMX:
// the object may run on another machine or in a process without Linux's
// tile permission, so a bf16 product of at least 16 rows takes the
// vdpbf16ps path (lower_bf16mm.c; the JIT's code for this host calls
// cg_rt_matmul_bf16_amx first, which test_bf16mm.c checks).
// RUN: %agc --emit=llvm --target-triple x86_64-linux-gnu --cpu sapphirerapids %s | FileCheck %s
#include <ag.h>

AG_FUNCTION AG_SIGNATURE("bf16[64,64], bf16[64,64]")
ag_tensor product(ag_tensor a, ag_tensor b)
{
    return ag_matmul(a, b);
}

// CHECK-LABEL: define internal {{.*}}i32 @agc_product_graph(
// CHECK-NOT: cg_rt_matmul_bf16_amx
// CHECK: call {{.*}}@matmul_bf16dot_64x64x64(
// CHECK-NOT: cg_rt_matmul_bf16_amx
