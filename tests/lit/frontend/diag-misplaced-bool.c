// ag_bool() must be a condition, or combined into one with !, && and ||.
// RUN: not %agc %s -o %t.c 2>&1 | FileCheck %s
#include <ag.h>

AG_FUNCTION ag_tensor f(ag_tensor x)
{
    bool positive = ag_bool(ag_greater(x, 0));
    if (ag_bool(x) == true)
        x = ag_neg(x);
    ag_tensor y = positive ? x : ag_neg(x);
    int k = ag_bool(x) ? 1 : 2;
    return ag_add(y, k);
}

// CHECK: diag-misplaced-bool.c:7:21: error: ag_bool() can only be a condition (of if, while, for, do/while or ?:), or be combined into one with !, && and ||
// CHECK: diag-misplaced-bool.c:8:9: error: ag_bool() must be the whole condition, or be combined with !, && and ||
// CHECK-NEXT: {{^}}    8 |     if (ag_bool(x) == true)
// CHECK-NEXT: {{^}}      |         ^~~~~~~~~~~~~~~~~~
// CHECK: diag-misplaced-bool.c:11:13: error: a '?:' with a staged condition must give an ag_tensor, not 'int'
// CHECK: 3 errors generated.
