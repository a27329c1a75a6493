// An if without else passes NULL for else_fn; a variable only read in the
// branch is copied into the state read-only (not in vars); a variable only
// assigned in the branch and dead after it is not carried.
// RUN: %agc %s -o - | %nochecks | FileCheck %s
// RUN: %agc %s -o %t.c && %cc %t.c
#include <ag.h>

AG_FUNCTION ag_tensor clip(ag_tensor x, ag_tensor hi)
{
    ag_tensor unused;
    if (ag_bool(ag_greater(x, hi))) {
        unused = ag_mul(hi, 2);
        x = hi;
    }
    return x;
}

// CHECK-LABEL: struct clip__if_11 {
// CHECK-NEXT:     ag_tensor x;
// CHECK-NEXT:     ag_tensor hi;
// CHECK-NEXT:     ag_tensor unused;
// CHECK-NEXT: };
// CHECK-LABEL: static void clip__if_11_then(void *ag__state)
// CHECK:     ag__s->x = x;
// CHECK-NEXT:     (void)unused;
// CHECK-NEXT: }
// CHECK-NOT: clip__if_11_else(
// CHECK:         ag_tensor *ag__s_if_11_vars[] = {&ag__s_if_11.x};
// CHECK:         ag_if_at((ag_loc){"{{.*}}if-no-else.c", 11}, ag_greater(x, hi), 1, ag__s_if_11_vars, ag__s_if_11_names, clip__if_11_then, NULL, &ag__s_if_11);
