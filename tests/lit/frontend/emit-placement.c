// Placement on the TPU-model: every op the device runs is placed on it
// (device("tpu-model")); an op it lacks is an error at its line, unless soft
// device placement runs it on the host, with explicit to_host/to_device
// transfers in the graph, in the TPU program and in the picture.
// RUN: not %agc --emit=ir-opt --target=tpu-model %s 2>&1 | FileCheck --check-prefix=HARD %s
// RUN: %agc --emit=ir-opt --target=tpu-model --soft-device-placement %s | FileCheck %s
// RUN: %agc --emit=tpu --soft-device-placement %s | FileCheck --check-prefix=TPU %s
// RUN: %agc --emit=dot --target=tpu-model --soft-device-placement %s | FileCheck --check-prefix=DOT %s
#include <ag.h>

AG_FUNCTION AG_SIGNATURE("f32[4]")
ag_tensor noisy(ag_tensor x)
{
    ag_tensor y = ag_tanh(ag_mul(x, 2.0f));
    ag_print("y =", y);
    return ag_add(y, 1.0f);
}

// HARD: emit-placement.c:15: error: 'ag_print' isn't compilable for the TPU; enable soft device placement to run it on the CPU

// CHECK: %[[Y:[0-9]+]] = tanh(%{{[0-9]+}}) : f32[4] loc("{{.*}}emit-placement.c":14) device("tpu-model")
// CHECK: %[[H:[0-9]+]] = to_host(%[[Y]]) : f32[4] loc("{{.*}}emit-placement.c":15)
// CHECK-NEXT: print(%[[H]]) {text = "y = {}"} : bool[] loc("{{.*}}emit-placement.c":15)
// CHECK: add(%[[Y]], %{{[0-9]+}}) : f32[4] loc("{{.*}}emit-placement.c":16) device("tpu-model")

// TPU: vpu.loop    %{{[0-9]+}} mul, %[[T:[0-9]+]] tanh (%0@0x0, %{{[0-9]+}}@0x{{[0-9a-f]+}}) f32[4] -> %[[T]]@[[AT:0x[0-9a-f]+]]
// TPU: dma.to_host %{{[0-9]+}} = to_host(%[[T]]@[[AT]]) f32[4]  4096 B
// TPU: host.print  %{{[0-9]+}} = print(%{{[0-9]+}})

// DOT: to_host{{.*}}fillcolor="#f8cecc"
// DOT: print{{.*}}fillcolor="#fff2cc"
