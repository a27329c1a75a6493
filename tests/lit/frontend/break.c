// break in a staged loop: a <break> flag, false when the loop starts, set
// by the break, and tested (lazily) before the loop's condition.
// RUN: %agc %s -o - | %nochecks | FileCheck %s
// RUN: %agc %s -o %t.c && %cc %t.c
#include <ag.h>

AG_FUNCTION ag_tensor first_square_above(ag_tensor n)
{
    ag_tensor i = ag_scalar_i32(0);
    while (ag_bool(ag_less(i, 1000))) {
        if (ag_bool(ag_greater(ag_mul(i, i), n)))
            break;
        i = ag_add(i, 1);
    }
    return i;
}

// The condition: !<break> && (i < 1000), the right side in a staged if.
// CHECK-LABEL: static void first_square_above__and_10_then(void *ag__state)
// CHECK:     ag__and_10 = ag_less(i, 1000);
// CHECK-LABEL: static ag_tensor first_square_above__while_10_cond(void *ag__state)
// CHECK:     ag_tensor ag__break_10 = ag__s->ag__break_10;
// CHECK:     ag_tensor ag__and_10 = ag_logical_not(ag__break_10);
// CHECK:             ag_if_at((ag_loc){"{{.*}}break.c", 10}, ag__and_10, 1, {{.*}}, first_square_above__and_10_then, NULL,
// CHECK:     return ag__and_10;
// The break sets the flag; the rest of the body goes to the else branch.
// CHECK-LABEL: static void first_square_above__if_11_then(void *ag__state)
// CHECK:             ag__break_10 = ag_scalar_bool(true);
// CHECK-LABEL: static void first_square_above__if_11_else(void *ag__state)
// CHECK:         i = ag_add(i, 1);
// CHECK-LABEL: static ag_tensor first_square_above__staged(ag_tensor n)
// CHECK:         struct first_square_above__while_10 ag__s_while_10 = {{{.*}}.ag__break_10 = ag_scalar_bool(false){{.*}}};
// CHECK-NEXT:         ag_tensor *ag__s_while_10_vars[] = {&ag__s_while_10.i, &ag__s_while_10.ag__break_10};
// CHECK-NEXT:         static const char *const ag__s_while_10_names[] = {"i", "<break>"};
