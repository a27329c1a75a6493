// A variable initialized in only one branch of a staged if and used after.
// RUN: not %agc %s -o %t.c 2>&1 | FileCheck %s --match-full-lines --strict-whitespace
#include <ag.h>

AG_FUNCTION ag_tensor f(ag_tensor x)
{
    ag_tensor y;
    if (ag_bool(ag_greater(x, 0)))
        y = ag_mul(x, 2);
    return y;
}

// But initialized before, or in both branches, or unused after: fine.
AG_FUNCTION ag_tensor g(ag_tensor x)
{
    ag_tensor y = x, z, w;
    if (ag_bool(ag_greater(x, 0)))
        y = ag_mul(x, 2);
    if (ag_bool(ag_greater(x, 1)))
        z = x;
    else
        z = y;
    if (ag_bool(ag_greater(x, 2)))
        w = z;
    return ag_add(y, z);
}

// CHECK:{{.*}}diag-one-branch.c:8:5: error: 'y' must also be initialized in the else branch
// CHECK-NEXT:    8 |     if (ag_bool(ag_greater(x, 0)))
// CHECK-NEXT:      |     ^~
// CHECK-NEXT:{{.*}}diag-one-branch.c:9:9: note: 'y' is assigned here, in the then branch
// CHECK-NEXT:    9 |         y = ag_mul(x, 2);
// CHECK-NEXT:      |         ^
// CHECK-NEXT:{{.*}}diag-one-branch.c:10:12: note: 'y' is used here, after the if
// CHECK-NEXT:   10 |     return y;
// CHECK-NEXT:      |            ^
// CHECK-NEXT:{{.*}}diag-one-branch.c:9:26: note: assign 'y' in the else branch too (else y = ...;)
// CHECK-NEXT:    9 |         y = ag_mul(x, 2);
// CHECK-NEXT:      |                          ^
// CHECK-NEXT:1 error generated.
