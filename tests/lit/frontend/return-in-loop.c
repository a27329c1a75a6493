// return inside a staged loop: the loop's condition also tests <returned>,
// and the code after the loop runs under a staged if on !<returned>.
// RUN: %agc %s -o - | %nochecks | FileCheck %s
// RUN: %agc %s -o %t.c && %cc %t.c
#include <ag.h>

AG_FUNCTION ag_tensor first_root_above(ag_tensor n)
{
    ag_tensor i = ag_scalar_i32(0);
    while (ag_bool(ag_less(i, 100))) {
        if (ag_bool(ag_greater(ag_mul(i, i), n)))
            return i;
        i = ag_add(i, 1);
    }
    return ag_scalar_i32(-1);
}

// CHECK-LABEL: static ag_tensor first_root_above__while_10_cond(void *ag__state)
// CHECK:     ag_tensor ag__and_10 = ag_logical_not(ag__returned);
// CHECK-LABEL: static void first_root_above__if_11_then(void *ag__state)
// CHECK:         ag__retval = i; ag__returned = ag_scalar_bool(true);
// CHECK-LABEL: static void first_root_above__guard_15_then(void *ag__state)
// CHECK:     ag__retval = ag_scalar_i32(-1); ag__returned = ag_scalar_bool(true);
// CHECK-LABEL: static ag_tensor first_root_above__staged(ag_tensor n)
// CHECK:         static const char *const ag__s_while_10_names[] = {"<returned>", "<return value>", "i"};
// CHECK:         ag_if_at((ag_loc){"{{.*}}return-in-loop.c", 15}, ag_logical_not(ag__returned), 2, {{.*}}, first_root_above__guard_15_then, NULL,
// CHECK:     return ag__retval;
