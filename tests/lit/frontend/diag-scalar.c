// C scalars assigned inside staged control flow and used after it cannot
// change at run time: agc asks for a tensor. Locals of the body are fine.
// RUN: not %agc %s -o %t.c 2>&1 | FileCheck %s
#include <ag.h>

AG_FUNCTION ag_tensor f(ag_tensor x, float scale)
{
    int steps = 0;
    const float *p = 0;
    while (ag_bool(ag_greater(x, 1))) {
        int local = 2;
        x = ag_floordiv(x, local);
        steps++;
    }
    if (ag_bool(ag_less(x, 0)))
        scale = 2;
    if (ag_bool(ag_less(x, 5)))
        p = &scale;
    return ag_add(ag_mul(x, scale), steps + (p != 0));
}

// CHECK: diag-scalar.c:13:9: error: 'steps' is a C 'int' assigned inside staged control flow and used after it; a C variable keeps the one value it has while tracing: make it an ag_tensor
// CHECK-NEXT: {{^}}   13 |         steps++;
// CHECK-NEXT: {{^}}      |         ^~~~~
// CHECK: diag-scalar.c:10:5: note: the staged control flow is here
// CHECK: diag-scalar.c:8:5: note: declare 'steps' as an ag_tensor
// CHECK-NEXT: {{^}}    8 |     int steps = 0;
// CHECK-NEXT: {{^}}      |     ^~~
// CHECK-NEXT: {{^}}      |     ag_tensor steps = ag_scalar_i32(0)
// CHECK: diag-scalar.c:16:9: error: 'scale' is a C 'float' assigned inside staged control flow
// CHECK-NOT: declare 'scale'
// CHECK: diag-scalar.c:18:9: error: 'p' is a C 'const float *' assigned inside staged control flow
// CHECK: 3 errors generated.
