// return inside staged control flow: <return value> and <returned>, and
// the statements after an if that returns in one branch move into the
// other branch.
// RUN: %agc %s -o - | %nochecks | FileCheck %s
// RUN: %agc %s -o %t.c && %cc %t.c
#include <ag.h>

AG_FUNCTION ag_tensor clamp_negative(ag_tensor x)
{
    if (ag_bool(ag_less(x, 0)))
        return ag_zeros_like(x);
    x = ag_mul(x, 2);
    return x;
}

AG_FUNCTION void maybe_print(ag_tensor x)
{
    if (ag_bool(ag_less(x, 0)))
        return;
    ag_print(x);
}

// CHECK-LABEL: static void clamp_negative__if_10_then(void *ag__state)
// CHECK: #line 11
// CHECK-NEXT:         ag__retval = ag_zeros_like(x); ag__returned = ag_scalar_bool(true);
// CHECK-LABEL: static void clamp_negative__if_10_else(void *ag__state)
// CHECK: #line 12
// CHECK-NEXT:     x = ag_mul(x, 2);
// CHECK-NEXT:     ag__retval = x; ag__returned = ag_scalar_bool(true);
// CHECK-LABEL: static ag_tensor clamp_negative__staged(ag_tensor x)
// CHECK-NEXT: {
// CHECK-NEXT:     ag_tensor ag__returned = ag_scalar_bool(false);
// CHECK-NEXT:     ag_tensor ag__retval = {0, 0};
// CHECK:         static const char *const ag__s_if_10_names[] = {"<returned>", "<return value>"};
// CHECK:     (void)ag__returned;
// CHECK-NEXT:     return ag__retval;
// CHECK-NEXT: }
// A void function has only the flag.
// CHECK-LABEL: static void maybe_print__if_18_then(void *ag__state)
// CHECK:         ag__returned = ag_scalar_bool(true);
// CHECK-LABEL: static void maybe_print__if_18_else(void *ag__state)
// CHECK:     ag_print(x);
// CHECK-LABEL: static void maybe_print__staged(ag_tensor x)
// CHECK-NEXT: {
// CHECK-NEXT:     ag_tensor ag__returned = ag_scalar_bool(false);
// CHECK-NOT: ag__retval
// CHECK:     (void)ag__returned;
// CHECK-NEXT: }
