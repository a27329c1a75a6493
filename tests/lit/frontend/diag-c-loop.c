// break, continue and return under a staged condition cannot leave a loop
// that is not staged.
// RUN: not %agc %s -o %t.c 2>&1 | FileCheck %s
#include <ag.h>

AG_FUNCTION ag_tensor f(ag_tensor x)
{
    for (int k = 0; k < 3; k++) {
        if (ag_bool(ag_greater(x, 10)))
            break;
        if (ag_bool(ag_greater(x, 5)))
            continue;
        if (ag_bool(ag_less(x, 0)))
            return x;
        x = ag_mul(x, 2);
    }
    while (ag_bool(ag_greater(x, 0))) {
        for (int k = 0; k < 3; k++)
            if (k == 2)
                return x;
        x = ag_sub(x, 1);
    }
    return x;
}

// CHECK: diag-c-loop.c:10:13: error: 'break' under a staged condition cannot leave a loop that is not staged
// CHECK: diag-c-loop.c:9:9: note: the staged condition is here
// CHECK: diag-c-loop.c:8:5: note: this loop is not staged: its condition does not use ag_bool()
// CHECK-NEXT: {{^}}    8 |     for (int k = 0; k < 3; k++) {
// CHECK-NEXT: {{^}}      |     ^~~
// CHECK: diag-c-loop.c:12:13: error: 'continue' under a staged condition cannot leave a loop that is not staged
// CHECK: diag-c-loop.c:14:13: error: 'return' under a staged condition cannot leave a loop that is not staged
// CHECK: diag-c-loop.c:20:17: error: 'return' under a staged condition cannot leave a loop that is not staged
// CHECK: diag-c-loop.c:17:5: note: the staged condition is here
// CHECK: diag-c-loop.c:18:9: note: this loop is not staged
// CHECK: 4 errors generated.
