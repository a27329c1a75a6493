// A staged while: a condition function returning the tensor inside
// ag_bool, a body function, and ag_while_at over the loop variables.
// RUN: %agc %s -o - | %nochecks | FileCheck %s
// RUN: %agc %s -o %t.c && %cc %t.c
#include <ag.h>

AG_FUNCTION ag_tensor sum_below(ag_tensor n)
{
    ag_tensor i = ag_scalar_i32(0), total = ag_scalar_i32(0);
    while (ag_bool(ag_less(i, n))) {
        total = ag_add(total, i);
        i = ag_add(i, 1);
    }
    return total;
}

// CHECK-LABEL: struct sum_below__while_10 {
// CHECK-NEXT:     ag_tensor n;
// CHECK-NEXT:     ag_tensor i;
// CHECK-NEXT:     ag_tensor total;
// CHECK-NEXT: };
// CHECK-LABEL: static ag_tensor sum_below__while_10_cond(void *ag__state)
// CHECK-NEXT: {
// CHECK-NEXT:     struct sum_below__while_10 *ag__s = ag__state;
// CHECK-NEXT:     ag_tensor n = ag__s->n;
// CHECK-NEXT:     ag_tensor i = ag__s->i;
// CHECK-NEXT: #line 10 "{{.*}}while.c"
// CHECK-NEXT:     return ag_less(i, n);
// CHECK-LABEL: static void sum_below__while_10_body(void *ag__state)
// CHECK:         total = ag_add(total, i);
// CHECK-NEXT:         i = ag_add(i, 1);
// CHECK:     ag__s->i = i;
// CHECK-NEXT:     ag__s->total = total;
// CHECK-NEXT: }
// CHECK-LABEL: static ag_tensor sum_below__staged(ag_tensor n)
// CHECK:         ag_tensor *ag__s_while_10_vars[] = {&ag__s_while_10.i, &ag__s_while_10.total};
// CHECK-NEXT:         static const char *const ag__s_while_10_names[] = {"i", "total"};
// CHECK-NEXT: #line 10
// CHECK-NEXT:         ag_while_at((ag_loc){"{{.*}}while.c", 10}, 2, ag__s_while_10_vars, ag__s_while_10_names, sum_below__while_10_cond, sum_below__while_10_body, &ag__s_while_10);
// CHECK-NEXT: #line
// CHECK-NEXT:         i = ag__s_while_10.i;
// CHECK-NEXT:         total = ag__s_while_10.total;
