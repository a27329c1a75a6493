// An AG_FUNCTION that calls itself on every trace of its body: tracing
// inlines the call, and a staged condition cannot end that (both branches
// are traced). A C condition can: those recursions are fine.
// RUN: not %agc %s -o %t.c 2>&1 | FileCheck %s
#include <ag.h>

AG_FUNCTION ag_tensor fact(ag_tensor n)
{
    if (ag_bool(ag_less_equal(n, 1)))
        return ag_scalar_f32(1);
    return ag_mul(n, fact(ag_sub(n, 1)));
}

AG_FUNCTION ag_tensor halve(ag_tensor x)
{
    if (ag_bool(ag_greater(x, 1)))
        x = halve(ag_div(x, 2));
    return x;
}

// Fine: C ends these while tracing.
AG_FUNCTION ag_tensor power(ag_tensor x, int k)
{
    if (k == 0)
        return ag_ones_like(x);
    return ag_mul(x, power(x, k - 1));
}

AG_FUNCTION ag_tensor power2(ag_tensor x, int k)
{
    return k > 0 ? ag_mul(x, power2(x, k - 1)) : ag_ones_like(x);
}

AG_FUNCTION ag_tensor countdown(ag_tensor x, int k)
{
    while (k > 0)
        return countdown(ag_add(x, 1), k - 1);
    return x;
}

// CHECK: diag-recursion.c:11:22: error: 'fact' calls itself on every trace of its body, so tracing it never ends: the tracer runs both branches of a staged condition; end the recursion on a C condition (such as a C scalar parameter that decreases), or write a staged loop
// CHECK-NEXT: {{^}}   11 |     return ag_mul(n, fact(ag_sub(n, 1)));
// CHECK-NEXT: {{^}}      |                      ^~~~
// CHECK-NEXT: diag-recursion.c:9:5: note: this staged if does not end it: it decides when the graph runs, not while it is traced
// CHECK: diag-recursion.c:17:13: error: 'halve' calls itself on every trace of its body
// CHECK: diag-recursion.c:16:5: note: this staged if does not end it
// CHECK-NOT: error
// CHECK: 2 errors generated.
