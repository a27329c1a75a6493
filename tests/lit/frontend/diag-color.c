// -fcolor-diagnostics forces colors; -fno-color-diagnostics (last wins)
// removes them.
// RUN: not %agc -fcolor-diagnostics %s -o %t.c 2>&1 | FileCheck %s
// RUN: not %agc -fcolor-diagnostics -fno-color-diagnostics %s -o %t.c 2>&1 | FileCheck %s --check-prefix=PLAIN
#include <ag.h>

AG_FUNCTION ag_tensor f(ag_tensor x)
{
    bool b = ag_bool(x);
    return b ? x : ag_neg(x);
}

// CHECK: {{.\[1m}}{{.*}}diag-color.c:9:14: {{.\[0;1;31m}}error: {{.\[0m}}
// PLAIN: diag-color.c:9:14: error: ag_bool() can only be a condition
// PLAIN-NOT: {{.\[}}
