// A staged for: the init runs before the loop (its declarations become
// outer variables), the increment at the end of the body, and also after
// a continue, which is a flag local to the body.
// RUN: %agc %s -o - | %nochecks | FileCheck %s
// RUN: %agc %s -o %t.c && %cc %t.c
#include <ag.h>

AG_FUNCTION ag_tensor sum_odd(ag_tensor n)
{
    ag_tensor total = ag_scalar_i32(0);
    for (ag_tensor i = ag_scalar_i32(0); ag_bool(ag_less(i, n)); i = ag_add(i, 1)) {
        if (ag_bool(ag_equal(ag_mod(i, 2), 0)))
            continue;
        total = ag_add(total, i);
    }
    return total;
}

// The continue sets the flag; since the then branch always continues, the
// rest of the body moves into the else branch (AutoGraph's restructuring).
// CHECK-LABEL: static void sum_odd__if_12_then(void *ag__state)
// CHECK:     ag_tensor ag__continue_11 = ag__s->ag__continue_11;
// CHECK: #line 13
// CHECK-NEXT:             ag__continue_11 = ag_scalar_bool(true);
// CHECK-LABEL: static void sum_odd__if_12_else(void *ag__state)
// CHECK:         total = ag_add(total, i);
// CHECK-LABEL: static void sum_odd__for_11_body(void *ag__state)
// CHECK:     ag_tensor ag__continue_11 = ag_scalar_bool(false);
// CHECK:         ag_if_at((ag_loc){"{{.*}}for.c", 12}, ag_equal(ag_mod(i, 2), 0), 2,
// The increment runs whether or not the body continued.
// CHECK: #line 11
// CHECK-NEXT:     i = ag_add(i, 1);
// CHECK:     ag__s->i = i;
// CHECK:     (void)ag__continue_11;
// CHECK-LABEL: static ag_tensor sum_odd__staged(ag_tensor n)
// CHECK: #line 11
// CHECK-NEXT:     ag_tensor i = ag_scalar_i32(0);
// CHECK:         struct sum_odd__for_11 ag__s_for_11 = {.n = n, .total = total, .i = i};
// CHECK:         ag_while_at((ag_loc){"{{.*}}for.c", 11}, 2,
