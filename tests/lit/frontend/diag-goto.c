// goto into or out of staged control flow.
// RUN: not %agc %s -o %t.c 2>&1 | FileCheck %s
#include <ag.h>

AG_FUNCTION ag_tensor f(ag_tensor x)
{
    if (ag_bool(ag_greater(x, 0))) {
        x = ag_neg(x);
        goto out;
    }
    goto in;
    while (ag_bool(ag_less(x, 10))) {
in:
        x = ag_add(x, 1);
    }
out:
    return x;
}

// CHECK: diag-goto.c:9:9: error: 'goto out' jumps out of staged control flow; agc cannot stage it
// CHECK: diag-goto.c:16:1: note: label 'out' is here
// CHECK: diag-goto.c:7:5: note: the staged if is here
// CHECK: diag-goto.c:11:5: error: 'goto in' jumps into staged control flow; agc cannot stage it
// CHECK: diag-goto.c:13:1: note: label 'in' is here
// CHECK: diag-goto.c:12:5: note: the staged while is here
// CHECK: 2 errors generated.
