// --emit=tpu prints the TPU program the tpu-model target compiles: host
// transfers with their padding, MXU products in weight tiles, fused VPU
// loops, XLU ops, each with its cost and the user's line.
// RUN: %agc --emit=tpu %s | FileCheck %s
// RUN: %agc --emit=tpu --target=tpu-model %s | FileCheck %s
// RUN: rm -rf %t && mkdir -p %t
// RUN: printf 'mxu { rows: 64 cols: 64 }\nprecision: HIGHEST\n' > %t/small.txt
// RUN: %agc --emit=tpu --device-spec %t/small.txt %s | FileCheck --check-prefix=SMALL %s
// RUN: printf 'mxu { rowz: 64 }\n' > %t/bad.txt
// RUN: not %agc --emit=tpu --device-spec=%t/bad.txt %s 2>&1 | FileCheck --check-prefix=BAD %s
// RUN: not %agc --emit=tpu --target=cpu %s 2>&1 | FileCheck --check-prefix=CPU %s
// RUN: not %agc --emit=ir --device-spec=%t/small.txt %s 2>&1 | FileCheck --check-prefix=WHERE %s
#include <ag.h>

AG_FUNCTION AG_SIGNATURE("f32[64,784], f32[784,512], f32[512], f32[512,10]")
ag_tensor mlp(ag_tensor x, ag_tensor w1, ag_tensor b1, ag_tensor w2)
{
    ag_tensor h = ag_relu(ag_add(ag_matmul(x, w1), b1));
    return ag_softmax(ag_matmul(h, w2), 1);
}

// CHECK: ; @mlp on tpu-model (v5e: 4 MXUs of 128x128 at 1.50 GHz): 2 mxu, 1 vpu loops, 1 xlu
// CHECK: dma.h2d     %0 f32[64,784] -> hbm[0x0] 229376 B (28672 padding)
// CHECK: dma.h2d     %2 f32[512] -> hbm[{{.*}}] 16384 B (14336 padding)
// CHECK: mxu.matmul  %4 = matmul(%0, %1) f32[64,512] -> hbm[{{.*}}]  28 tiles x 1 pass  {{[0-9]+}} cycles   ; emit-tpu.c:18
// CHECK: vpu.loop    %5 add, %6 relu f32[64,512] {{.*}}  64 vregs  {{[0-9]+}} cycles   ; emit-tpu.c:18
// CHECK: mxu.matmul  %7 = matmul(%6, %3) f32[64,10] {{.*}}  4 tiles x 1 pass
// CHECK: xlu.softmax %8 = softmax(%7) f32[64,10]
// CHECK: dma.d2h     %8 f32[64,10] <- hbm[{{.*}}] 32768 B (30208 padding)

// SMALL: (v5e: 4 MXUs of 64x64
// SMALL: mxu.matmul  %4 = matmul(%0, %1) f32[64,512] -> hbm[{{.*}}]  104 tiles x 6 passes

// BAD: bad.txt:1:7: unknown field 'rowz' in MxuSpec
// CPU: --emit=tpu prints the program of --target=tpu-model; the target 'cpu' has none
// WHERE: --device-spec applies to --emit=ir-opt, dot and tpu
