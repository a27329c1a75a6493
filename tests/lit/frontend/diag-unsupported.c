// Staged constructs agc does not support: a staged ?: in a C loop's header,
// an assignment in a staged loop's condition, continue from a switch in a
// staged loop, a staged switch.
// RUN: not %agc %s -o %t.c 2>&1 | FileCheck %s
#include <ag.h>

AG_FUNCTION ag_tensor f(ag_tensor x, int n)
{
    for (int k = 0; k < n; k += ag_bool(x) ? 1 : 2)
        x = ag_add(x, 1);
    while (ag_bool(ag_less(x = ag_add(x, 1), 10)))
        x = ag_mul(x, 2);
    while (ag_bool(ag_less(x, 100))) {
        switch (n) {
        case 1:
            continue;
        default:
            break;
        }
        x = ag_add(x, 1);
    }
    switch (ag_bool(x)) {
    default:
        break;
    }
    return x;
}

// CHECK: diag-unsupported.c:9:33: error: a '?:' with a staged condition must give an ag_tensor, not 'int'
// CHECK: diag-unsupported.c:22:13: error: a switch cannot be staged; use if / else if on tensors
// CHECK: diag-unsupported.c:16:13: error: 'continue' inside a switch cannot leave a staged loop; use if / else if
// CHECK: diag-unsupported.c:14:9: note: inside this switch, which agc cannot stage
// CHECK: diag-unsupported.c:9:5: error: a '?:' with a staged condition in the header of a C loop is not supported
// CHECK: diag-unsupported.c:11:28: error: the condition of a staged loop cannot assign 'x'; assign it in the loop body
// CHECK: 5 errors generated.
