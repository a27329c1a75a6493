// With a goto in the function, liveness cannot follow the order of the
// statements: a tensor assigned in staged control flow is carried when it
// is read anywhere (found by hand: after the jump back to `again`, x was
// the value from before the if).
// RUN: %agc %s -o %t.c && %cc %t.c
// RUN: %nochecks < %t.c | FileCheck %s
#include <ag.h>

AG_FUNCTION ag_tensor f(ag_tensor x)
{
    int rounds = 0;
    ag_tensor y;
again:
    y = ag_add(x, 1);
    if (ag_bool(ag_greater(x, 10)))
        x = ag_div(x, 2);
    if (++rounds < 3)
        goto again;
    return y;
}

// CHECK: ag_tensor *ag__s_if_15_vars[] = {&ag__s_if_15.x};
// CHECK: ag_if_at((ag_loc){"{{.*}}goto.c", 15}, ag_greater(x, 10), 1, ag__s_if_15_vars
