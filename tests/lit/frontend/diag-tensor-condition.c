// A tensor used directly as a C condition: clang's error, and a note with
// the fix.
// RUN: not %agc %s -o %t.c 2>&1 | FileCheck %s
#include <ag.h>

AG_FUNCTION ag_tensor f(ag_tensor x)
{
    while (x)
        x = ag_sub(x, 1);
    return x;
}

// CHECK: diag-tensor-condition.c:8:5: error: statement requires expression of scalar type ('ag_tensor' (aka 'struct ag_tensor') invalid)
// CHECK-NEXT: {{^}}    8 |     while (x)
// CHECK-NEXT: {{^}}      |     ^      ~
// CHECK-NEXT: diag-tensor-condition.c:8:12: note: an ag_tensor is not a C condition: write ag_bool(t) to test its value; agc stages the condition
// CHECK-NEXT: {{^}}    8 |     while (x)
// CHECK-NEXT: {{^}}      |            ^
// CHECK-NEXT: {{^}}      |            ag_bool(x)
// CHECK-NEXT: 1 error generated.
