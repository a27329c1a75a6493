// A staged return in one branch only, with no return after the if.
// RUN: not %agc %s -o %t.c 2>&1 | FileCheck %s
#include <ag.h>

AG_FUNCTION ag_tensor f(ag_tensor x)
{
    if (ag_bool(ag_greater(x, 0)))
        return x;
}

AG_FUNCTION ag_tensor g(ag_tensor x)
{
    if (ag_bool(ag_greater(x, 0)))
        x = ag_neg(x);
    else
        return x;
}

AG_FUNCTION ag_tensor h(ag_tensor x)
{
    while (ag_bool(ag_greater(x, 0))) {
        if (ag_bool(ag_greater(x, 10)))
            return x;
        x = ag_sub(x, 1);
    }
}

// CHECK: diag-missing-return.c:7:5: error: the else branch must also have a return statement
// CHECK: diag-missing-return.c:8:18: note: add an else branch that returns, or a return after the if
// CHECK-NEXT: {{^}}    8 |         return x;
// CHECK-NEXT: {{^}}      |                  ^
// CHECK-NOT: /* value */
// CHECK: diag-missing-return.c:9:1: note: 'f' can reach its end without returning a value
// CHECK: diag-missing-return.c:13:5: error: the then branch must also have a return statement
// CHECK: diag-missing-return.c:21:5: error: this staged while may return, so the code after it must also end with a return statement
// CHECK: 3 errors generated.
