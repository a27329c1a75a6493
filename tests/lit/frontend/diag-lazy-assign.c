// Assignments inside operands that a staged &&, || or ?: evaluates lazily:
// a C variable cannot be assigned there (while tracing every operand runs),
// a tensor can (an output of the operand's staged if) unless it has no
// value before the statement and only one operand assigns it.
// RUN: not %agc %s -o %t.c 2>&1 | FileCheck %s
#include <ag.h>

AG_FUNCTION ag_tensor f(ag_tensor x, ag_tensor c, int n)
{
    int k = 1, hits = 0;
    float scale = 1;
    ag_tensor y = ag_bool(c) ? ag_mul(x, (k = 2)) : x;
    if (ag_bool(c) && (hits = 1))
        y = ag_add(y, 1);
    if (ag_bool(c) || ag_bool(ag_greater(x, (scale = 2))))
        y = ag_add(y, 1);
    // a C first operand decides while tracing: the rest is C too
    if (n > 0 && (hits = 2) && ag_bool(c))
        y = ag_add(y, 1);
    // tensors: fine when they have a value, or both operands assign them
    ag_tensor t = x, u;
    y = ag_bool(c) ? ag_mul(x, (t = ag_add(x, 1))) : (u = x);
    ag_tensor v;
    y = ag_bool(c) ? (v = x) : (v = y);
    ag_tensor w;
    y = ag_bool(c) ? (w = ag_add(x, 1)) : y;
    return ag_add(ag_add(y, ag_add(t, u)), ag_add(ag_add(v, w), k + hits + scale));
}

// CHECK: diag-lazy-assign.c:12:43: error: 'k' is a C 'int' assigned in an operand of a staged '?:', which runs only when its condition selects it; while tracing every operand runs, and a C variable keeps the value it gets then: assign it in a statement of its own, or make it an ag_tensor
// CHECK-NEXT: {{^}}   12 |     ag_tensor y = ag_bool(c) ? ag_mul(x, (k = 2)) : x;
// CHECK-NEXT: {{^}}      |                                           ^
// CHECK-NEXT: diag-lazy-assign.c:12:19: note: the staged '?:' is here
// CHECK: diag-lazy-assign.c:13:24: error: 'hits' is a C 'int' assigned in an operand of a staged '&&', which runs only when the left operand is true;
// CHECK: diag-lazy-assign.c:13:9: note: the staged '&&' is here
// CHECK: diag-lazy-assign.c:15:46: error: 'scale' is a C 'float' assigned in an operand of a staged '||', which runs only when the left operand is false;
// CHECK-NOT: diag-lazy-assign.c:18:
// CHECK: diag-lazy-assign.c:22:55: error: 'u' is assigned only when this operand of a staged '?:' runs (when its condition selects it), and has no value before the statement; initialize it before, or assign it in the other case too
// CHECK: diag-lazy-assign.c:22:9: note: the staged '?:' is here
// CHECK: diag-lazy-assign.c:27:39: note: 'u' is used here
// CHECK-NOT: 'v' is assigned
// CHECK: diag-lazy-assign.c:26:23: error: 'w' is assigned only when this operand
// CHECK: 5 errors generated.
