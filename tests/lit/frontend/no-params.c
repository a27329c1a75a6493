// A function without parameters; static linkage is kept by the wrapper.
// RUN: %agc %s -o - | %nochecks | FileCheck %s
// RUN: %agc %s -o %t.c && %cc %t.c
#include <ag.h>

static AG_FUNCTION ag_tensor three(void)
{
    return ag_scalar_i32(3);
}

int main(void)
{
    ag_print(three());
    return 0;
}

// CHECK: static ag_tensor three(void);
// CHECK-LABEL: static ag_tensor three__staged(void)
// CHECK-LABEL: static void three__trace(const ag_arg *ag__args, ag_tensor *ag__out)
// CHECK-NEXT: {
// CHECK-NEXT:     (void)ag__args;
// CHECK-NEXT:     ag__out[0] = three__staged();
// CHECK:     .n_params = 0,
// CHECK-NEXT:     .param_names = NULL,
// CHECK-NEXT:     .param_kinds = NULL,
// CHECK: static ag_tensor three(void)
// CHECK:     ag_function_call_at((ag_loc){"{{.*}}no-params.c", 6}, &three__desc, NULL, ag__out);
// CHECK: int main(void)
// CHECK-NEXT: {
// CHECK-NEXT:     ag_print(three());
