// A variable assigned by every branch of an else-if chain but the last
// else (here missing) has no value when no condition holds: rejected at
// compile time, as when the if is nested in a then branch. An assignment
// in an earlier branch of the chain does not reach the later ifs.
// RUN: not %agc %s -o %t.c 2>&1 | FileCheck %s
#include <ag.h>

AG_FUNCTION ag_tensor chain(ag_tensor a, ag_tensor b)
{
    ag_tensor y;
    if (ag_bool(ag_greater(a, 0)))
        y = ag_add(a, 1);
    else if (ag_bool(ag_greater(b, 0)))
        y = ag_add(b, 2);
    else if (ag_bool(ag_less(b, -5)))
        y = ag_add(b, 3);
    return y;
}

// The same with braces, and a chain that is complete: fine.
AG_FUNCTION ag_tensor nested(ag_tensor a, ag_tensor b)
{
    ag_tensor y, z;
    if (ag_bool(ag_greater(a, 0))) {
        y = ag_add(a, 1);
    } else {
        if (ag_bool(ag_greater(b, 0)))
            y = ag_add(b, 2);
    }
    if (ag_bool(ag_greater(a, 0)))
        z = a;
    else if (ag_bool(ag_greater(b, 0)))
        z = b;
    else
        z = ag_neg(b);
    return ag_add(y, z);
}

// CHECK: diag-else-if.c:15:10: error: 'y' must also be initialized in the else branch
// CHECK-NEXT: {{^}}   15 |     else if (ag_bool(ag_less(b, -5)))
// CHECK-NEXT: {{^}}      |          ^~
// CHECK: diag-else-if.c:16:9: note: 'y' is assigned here, in the then branch
// CHECK: diag-else-if.c:17:12: note: 'y' is used here, after the if
// CHECK: diag-else-if.c:27:9: error: 'y' must also be initialized in the else branch
// CHECK: diag-else-if.c:28:13: note: 'y' is assigned here, in the then branch
// CHECK-NOT: 'z'
// CHECK: 2 errors generated.
