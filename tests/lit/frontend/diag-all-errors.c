// One run reports every error it finds: those agc's analysis finds (a
// variable set in one branch only) and those it finds while generating
// the staged code (a C scalar carried out of a loop, a preprocessor
// conditional across a staged construct), in one function and in several;
// and with --emit, every function that fails to trace.
// RUN: not %agc %s -o %t.c 2>&1 | FileCheck %s
// RUN: not %agc --emit=ir -DTRACE %s 2>&1 | FileCheck %s --check-prefix=TRACE
#include <ag.h>

#ifndef TRACE
AG_FUNCTION ag_tensor f(ag_tensor x)
{
    ag_tensor y;
    int steps = 0;
    if (ag_bool(ag_greater(x, 0)))
        y = x;
    while (ag_bool(ag_greater(x, 1))) {
        x = ag_sub(x, 1);
        steps++;
    }
    return ag_add(y, steps);
}

AG_FUNCTION ag_tensor g(ag_tensor x)
{
    float scale = 1;
    if (ag_bool(ag_greater(x, 0))) {
#ifdef NEVER
        scale = 2;
    }
#else
        scale = 3;
    }
#endif
    return ag_mul(x, scale);
}
#else
AG_FUNCTION AG_SIGNATURE("f32[2,3]")
ag_tensor a(ag_tensor x) { return ag_matmul(x, x); }
AG_FUNCTION AG_SIGNATURE("f32[4,3]")
ag_tensor b(ag_tensor x) { return ag_matmul(x, x); }
#endif

// CHECK: diag-all-errors.c:15:5: error: 'y' must also be initialized in the else branch
// CHECK: diag-all-errors.c:19:9: error: 'steps' is a C 'int' assigned inside staged control flow
// CHECK: diag-all-errors.c:{{[0-9]+}}:1: error: this preprocessor conditional crosses the boundary of this staged if
// CHECK: diag-all-errors.c:{{[0-9]+}}:{{[0-9]+}}: error: 'scale' is a C 'float' assigned inside staged control flow
// CHECK: 4 errors generated.
// TRACE: diag-all-errors.c:39: error: ag_matmul: inner dims do not match
// TRACE: diag-all-errors.c:41: error: ag_matmul: inner dims do not match
