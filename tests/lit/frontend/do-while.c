// A staged do/while: the body runs once before ag_while_at, by a direct
// call of the lifted body.
// RUN: %agc %s -o - | %nochecks | FileCheck %s
// RUN: %agc %s -o %t.c && %cc %t.c
#include <ag.h>

AG_FUNCTION ag_tensor halve(ag_tensor x)
{
    do {
        x = ag_floordiv(x, 2);
    } while (ag_bool(ag_greater(x, 10)));
    return x;
}

// CHECK-LABEL: static ag_tensor halve__do_9_cond(void *ag__state)
// CHECK: #line 11
// CHECK-NEXT:     return ag_greater(x, 10);
// CHECK-LABEL: static void halve__do_9_body(void *ag__state)
// CHECK:         x = ag_floordiv(x, 2);
// CHECK-LABEL: static ag_tensor halve__staged(ag_tensor x)
// CHECK:         struct halve__do_9 ag__s_do_9 = {.x = x};
// CHECK: #line 9
// CHECK-NEXT:         halve__do_9_body(&ag__s_do_9);
// CHECK-NEXT: #line 9
// CHECK-NEXT:         ag_while_at((ag_loc){"{{.*}}do-while.c", 9}, 1, ag__s_do_9_vars, ag__s_do_9_names, halve__do_9_cond, halve__do_9_body, &ag__s_do_9);
// CHECK:         x = ag__s_do_9.x;
