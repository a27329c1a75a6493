// --emit=tpu prints the TPU program the tpu-model target compiles: host
// transfers with their padding, MXU products in weight tiles, fused VPU
// loops, XLU ops, each with its cost and the user's line.
// RUN: %agc --emit=tpu %s | FileCheck %s
// RUN: %agc --emit=tpu --target=tpu-model %s | FileCheck %s
// RUN: rm -rf %t && mkdir -p %t
// RUN: printf 'mxu { rows: 64 cols: 64 }\nprecision: HIGHEST\n' > %t/small.txt
// RUN: %agc --emit=tpu --device-spec %t/small.txt %s | FileCheck --check-prefix=SMALL %s
// RUN: printf 'hbm { capacity_bytes: 2097152 }\nvmem { residency: false }\n' > %t/hbm.txt
// RUN: not %agc --emit=tpu --device-spec=%t/hbm.txt %s 2>&1 | FileCheck --check-prefix=HBM %s
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

// Each instruction reads its operands from HBM (%n@ADDR) or from VMEM
// (%n@vmem[ADDR]) and stages what it moves through VMEM in blocks. The
// products' and the loop's values stay in VMEM for the instruction that
// reads them next (-> vmem[ADDR]); the softmax, the result, goes to HBM.
// %5 lives in the loop's vregs only.
// CHECK: ; @mlp on tpu-model (v5e: 4 MXUs of 128x128 at 1.50 GHz): 2 mxu, 1 vpu loops, 1 xlu
// CHECK-NEXT: ; hbm: 2.0 MiB of 16.0 GiB at the peak
// CHECK-NEXT: ; vmem: 3 values kept between instructions, 256.0 KiB at the peak
// CHECK-NEXT: dma.h2d     %0 f32[64,784] -> hbm[0x0] 229376 B (28672 padding)
// CHECK-NEXT: dma.h2d     %1 f32[784,512] -> hbm[0x38000] 1605632 B (0 padding)
// CHECK-NEXT: dma.h2d     %2 f32[512] -> hbm[0x1c0000] 16384 B (14336 padding)
// CHECK-NEXT: dma.h2d     %3 f32[512,10] -> hbm[0x1c4000]
// CHECK-NEXT: mxu.matmul  %4 = matmul(%0@0x0, %1@0x38000) f32[64,512] -> vmem[0x0]  28 tiles x 1 pass  3122 cycles  vmem 7 x 256.0 KiB  4356 cycles in all  hbm saved 131072 B   ; emit-tpu.c:20
// CHECK-NEXT: vpu.loop    %5 add, %6 relu (%4@vmem[0x0], %2@0x1c0000) f32[64,512] -> %6@vmem[0x20000]  64 vregs  64 cycles  vmem 1 x 16.0 KiB  {{[0-9]+}} cycles in all  hbm saved 262144 B   ; emit-tpu.c:20
// CHECK-NEXT: mxu.matmul  %7 = matmul(%6@vmem[0x20000], %3@0x1c4000) f32[64,10] -> vmem[0x0]  4 tiles x 1 pass
// CHECK-NEXT: xlu.softmax %8 = softmax(%7@vmem[0x0]) f32[64,10] -> hbm[0x0]
// CHECK-NEXT: dma.d2h     %8 f32[64,10] <- hbm[0x0] 32768 B (30208 padding)

// Without residency every value goes through HBM; a value's buffer is
// reused once it is dead (%6 takes %0's place, %8 %6's).
// RUN: printf 'vmem { residency: false }\n' > %t/off.txt
// RUN: %agc --emit=tpu --device-spec=%t/off.txt %s | FileCheck --check-prefix=OFF %s
// OFF: ; @mlp on tpu-model (v5e: 4 MXUs of 128x128 at 1.50 GHz): 2 mxu, 1 vpu loops, 1 xlu
// OFF-NEXT: ; hbm: 2.1 MiB of 16.0 GiB at the peak
// OFF-NEXT: dma.h2d     %0 f32[64,784] -> hbm[0x0] 229376 B (28672 padding)
// OFF-NEXT: dma.h2d     %1 f32[784,512] -> hbm[0x38000] 1605632 B (0 padding)
// OFF-NEXT: dma.h2d     %2 f32[512] -> hbm[0x1c0000] 16384 B (14336 padding)
// OFF-NEXT: dma.h2d     %3 f32[512,10] -> hbm[0x1c4000]
// OFF-NEXT: mxu.matmul  %4 = matmul(%0@0x0, %1@0x38000) f32[64,512] -> hbm[0x204000]  28 tiles x 1 pass  3122 cycles  vmem 8 x 240.0 KiB  5113 cycles in all   ; emit-tpu.c:20
// OFF-NEXT: vpu.loop    %5 add, %6 relu (%4@0x204000, %2@0x1c0000) f32[64,512] -> %6@0x0  64 vregs  64 cycles  vmem 2 x 136.0 KiB  {{[0-9]+}} cycles in all   ; emit-tpu.c:20
// OFF-NEXT: mxu.matmul  %7 = matmul(%6@0x0, %3@0x1c4000) f32[64,10] -> hbm[0x20000]  4 tiles x 1 pass
// OFF-NEXT: xlu.softmax %8 = softmax(%7@0x20000) f32[64,10] -> hbm[0x0]
// OFF-NEXT: dma.d2h     %8 f32[64,10] <- hbm[0x0] 32768 B (30208 padding)

// SMALL: (v5e: 4 MXUs of 64x64
// SMALL: mxu.matmul  %4 = matmul(%0@0x0, %1@0x38000) f32[64,512] -> {{.*}}  104 tiles x 6 passes

// The peak is at the first product, where every weight is live (without
// residency, which would keep %4 out of HBM).
// HBM: emit-tpu.c:20: error: the program needs 2.1 MiB of HBM at its peak, and the device has 2.0 MiB; live there: %1 (parameter f32[784,512], 1.5 MiB), %3 (parameter f32[512,10], 256.0 KiB), %0 (parameter f32[64,784], 224.0 KiB), %4 (matmul f32[64,512], 128.0 KiB) and 1 more

// BAD: bad.txt:1:7: unknown field 'rowz' in MxuSpec
// CPU: --emit=tpu prints the program of --target=tpu-model; the target 'cpu' has none
// WHERE: --device-spec applies to --emit=ir-opt, dot and tpu
