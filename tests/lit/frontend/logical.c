// &&, || and ! between staged conditions stay lazy: the right operand is
// evaluated in a staged if; a C operand decides while tracing.
// RUN: %agc %s -o - | %nochecks | FileCheck %s
// RUN: %agc %s -o %t.c && %cc %t.c
#include <ag.h>

AG_FUNCTION ag_tensor f(ag_tensor x, ag_tensor lo, int enabled)
{
    ag_tensor r = x;
    if (ag_bool(ag_greater(x, lo)) && ag_bool(ag_less(x, 10)))
        r = ag_neg(x);
    if (ag_bool(ag_less(x, lo)) || !ag_bool(x))
        r = ag_mul(r, 2);
    if (enabled && ag_bool(ag_greater(x, 0)))
        r = ag_add(r, 1);
    return r;
}

// CHECK-LABEL: static void f__and_10_then(void *ag__state)
// CHECK:     ag__and_10 = ag_less(x, 10);
// CHECK-LABEL: static void f__or_12_then(void *ag__state)
// ! of a tensor that may not be bool: non-zero is true.
// CHECK:     ag__or_12 = ag_logical_not(ag_not_equal(x, 0));
// CHECK-LABEL: static ag_tensor f__staged(ag_tensor x, ag_tensor lo, int enabled)
// CHECK:         ag_tensor ag__and_10 = ag_greater(x, lo);
// CHECK:         ag_if_at((ag_loc){"{{.*}}logical.c", 10}, ag__and_10, 1, {{.*}}, f__and_10_then, NULL,
// CHECK:         ag_if_at((ag_loc){"{{.*}}logical.c", 10}, ag__and_10, 1, {{.*}}, f__if_10_then, NULL,
// CHECK:         ag_tensor ag__or_12 = ag_less(x, lo);
// CHECK:         ag_if_at((ag_loc){"{{.*}}logical.c", 12}, ag_logical_not(ag__or_12), 1, {{.*}}, f__or_12_then, NULL,
// The C operand is a C if while tracing.
// CHECK:         ag_tensor ag__and_14;
// CHECK-NEXT: #line 14
// CHECK-NEXT:         if (enabled) {
// CHECK-NEXT: #line
// CHECK-NEXT:             ag__and_14 = ag_greater(x, 0);
// CHECK-NEXT:         } else {
// CHECK-NEXT:             ag__and_14 = ag_scalar_bool(false);
// CHECK-NEXT:         }
