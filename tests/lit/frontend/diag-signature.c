// AG_FUNCTION parameters must be tensors or C scalars; results tensors,
// void or structs of tensors; staged control flow cannot come from a macro.
// RUN: not %agc %s -o %t.c 2>&1 | FileCheck %s
#include <ag.h>

#define STAGED_IF(c, s) if (ag_bool(c)) s

AG_FUNCTION int *f(ag_tensor x, const char *name)
{
    (void)x;
    (void)name;
    return 0;
}

AG_FUNCTION ag_tensor g(ag_tensor x)
{
    STAGED_IF(ag_greater(x, 0), x = ag_neg(x));
    return x;
}

// CHECK: diag-signature.c:8:1: error: AG_FUNCTION 'f' returns 'int *'; it must return ag_tensor, void, or a struct whose fields are all ag_tensor
// CHECK: diag-signature.c:8:33: error: parameter 'name' of AG_FUNCTION 'f' has type 'const char *'; parameters must be ag_tensor, ag_tensor_array, ag_variable or C scalars
// CHECK-NEXT: {{^}}    8 | AG_FUNCTION int *f(ag_tensor x, const char *name)
// CHECK-NEXT: {{^}}      |                                 ^~~~~~~~~~~~~~~~
// CHECK: diag-signature.c:17:5: error: staged control flow inside a macro expansion cannot be converted; expand the macro by hand
// CHECK: 3 errors generated.
