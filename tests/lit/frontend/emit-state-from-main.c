// A function that reads state main sets up (a variable in a global), traced
// at build time: the error is the runtime's, at the user's line, and a note
// says that agc traced the function without running the program, and what
// to do. Nothing is written.
// RUN: rm -rf %t.d && mkdir -p %t.d
// RUN: not %agc --emit=ir %s -o %t.d/out.ir 2>&1 | FileCheck %s
// RUN: not test -e %t.d/out.ir
// RUN: not %agc --emit=obj --function scaled %s -o %t.d/out.o 2>&1 | FileCheck --check-prefix=OBJ %s
// CHECK: emit-state-from-main.c:[[@LINE+11]]: error: ag_variable_read: not a live variable (freed, or never created)
// CHECK-NEXT: agc: note: agc traced 'scaled' at build time, without running the program, so what main sets up before calling it (variables, tensors or optimizers in globals) does not exist yet; pass that state to 'scaled' as parameters, or leave out --emit=ir and let the staged C trace it at its first call, after main has set it up
// OBJ: error: ag_variable_read: not a live variable
// OBJ: note: agc traced 'scaled' at build time, {{.*}} leave out --emit=obj
#include <ag.h>

static ag_variable weights;

AG_FUNCTION AG_SIGNATURE("f32[2]")
ag_tensor scaled(ag_tensor x)
{
    return ag_mul(x, ag_variable_read(weights));
}

int main(void)
{
    weights = ag_variable_new(ag_from_data(AG_F32, AG_SHAPE(2), ((const float[]){1, 2})));
    ag_print(scaled(ag_from_data(AG_F32, AG_SHAPE(2), ((const float[]){3, 4}))));
    return 0;
}
