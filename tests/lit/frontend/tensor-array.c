// A tensor array assigned in a staged loop is carried through its list
// handle (&state.ta.list); an uninitialized one starts "undefined".
// RUN: %agc %s -o - | %nochecks | FileCheck %s
// RUN: %agc %s -o %t.c && %cc %t.c
#include <ag.h>

AG_FUNCTION ag_tensor squares(ag_tensor n)
{
    ag_tensor_array ta = ag_tensor_array_new(AG_F32, 0, true);
    ag_tensor_array unused;
    ag_tensor i = ag_scalar_i32(0);
    while (ag_bool(ag_less(i, n))) {
        ta = ag_tensor_array_write(ta, i, ag_cast(ag_mul(i, i), AG_F32));
        i = ag_add(i, 1);
    }
    (void)unused;
    return ag_tensor_array_stack(ta);
}

// CHECK-LABEL: struct squares__while_12 {
// CHECK-NEXT:     ag_tensor n;
// CHECK-NEXT:     ag_tensor_array ta;
// CHECK-NEXT:     ag_tensor i;
// CHECK-NEXT: };
// CHECK-LABEL: static void squares__while_12_body(void *ag__state)
// CHECK:     ag_tensor_array ta = ag__s->ta;
// CHECK:     ag__s->ta = ta;
// CHECK-LABEL: static ag_tensor squares__staged(ag_tensor n)
// CHECK:     ag_tensor_array unused = {{[{][{]}}0, 0{{[}][}]}};
// CHECK:         ag_tensor *ag__s_while_12_vars[] = {&ag__s_while_12.ta.list, &ag__s_while_12.i};
// CHECK-NEXT:         static const char *const ag__s_while_12_names[] = {"ta", "i"};
// CHECK:         ta = ag__s_while_12.ta;
