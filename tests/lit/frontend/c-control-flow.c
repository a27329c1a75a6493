// Conditions without ag_bool stay C: they run while tracing (a C loop is
// unrolled). Functions without AG_FUNCTION are copied unchanged.
// RUN: %agc %s -o - | %nochecks | FileCheck %s
// RUN: %agc %s -o %t.c && %cc %t.c
#include <ag.h>

static int helper(int k)
{
    while (k > 10)
        k /= 2;
    return k;
}

AG_FUNCTION ag_tensor power(ag_tensor x, int y)
{
    ag_tensor result = ag_ones_like(x);
    for (int i = 0; i < helper(y); i++)
        result = ag_mul(x, result);
    if (y > 100)
        return ag_zeros_like(x);
    return result;
}

// CHECK: static int helper(int k)
// CHECK-NEXT: {
// CHECK-NEXT:     while (k > 10)
// CHECK-NEXT:         k /= 2;
// CHECK-NEXT:     return k;
// CHECK-NEXT: }
// CHECK-NOT: ag_if_at
// CHECK-NOT: ag_while_at
// CHECK-LABEL: static ag_tensor power__staged(ag_tensor x, int y)
// CHECK:     ag_tensor result = ag_ones_like(x);
// CHECK-NEXT:     for (int i = 0; i < helper(y); i++)
// CHECK-NEXT:         result = ag_mul(x, result);
// CHECK-NEXT:     if (y > 100)
// CHECK-NEXT:         return ag_zeros_like(x);
// CHECK-NEXT:     return result;
// CHECK: ag__out[0] = power__staged(ag__args[0].tensor, (int)ag__args[1].i);
