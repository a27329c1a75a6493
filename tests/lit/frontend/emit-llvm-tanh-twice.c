// An ahead-of-time object with two functions that use f32 tanh: the math
// helpers are linkonce_odr, so linking the functions' modules keeps one
// copy under its own name, and both loops call its vector version (an
// internal copy would be renamed agc_tanh_f32.1, which no longer matches
// the vector versions its calls name: one element at a time).
// RUN: %agc --emit=llvm --target-triple x86_64-linux-gnu --cpu haswell %s | FileCheck --implicit-check-not=agc_tanh_f32. --implicit-check-not=tanhf %s
// RUN: %agc --emit=obj --target-triple x86_64-linux-gnu --cpu haswell %s -o %t.o
// RUN: llvm-nm %t.o | FileCheck --check-prefix=NM %s
#include <ag.h>

AG_FUNCTION AG_SIGNATURE("f32[1024]")
ag_tensor first(ag_tensor x)
{
    return ag_add(ag_tanh(x), x);
}

AG_FUNCTION AG_SIGNATURE("f32[1024]")
ag_tensor second(ag_tensor x)
{
    return ag_mul(ag_tanh(x), x);
}

// CHECK: define linkonce_odr hidden <8 x float> @agc_tanh_f32_v8(
// CHECK: define internal {{.*}} @agc_first_graph(
// CHECK: vector.body:
// CHECK: call <8 x float> @agc_tanh_f32_v8(
// CHECK: define internal {{.*}} @agc_second_graph(
// CHECK: vector.body:
// CHECK: call <8 x float> @agc_tanh_f32_v8(

// One weak definition of each helper, which another agc object may share.
// NM: W agc_tanh_f32
// NM: W agc_tanh_f32_v16
// NM: W agc_tanh_f32_v4
// NM: W agc_tanh_f32_v8
// NM: T first
// NM: T second
