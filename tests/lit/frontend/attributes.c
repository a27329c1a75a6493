// Statements with attributes or loop pragmas (libclang shows them inside
// an unexposed statement): agc converts the statement inside. A pragma on
// a C loop stays; on a staged loop it is an error, since agc replaces the
// loop by a block (before, the staged condition was reported as a
// misplaced ag_bool()).
// RUN: %agc %s -o %t.c && %cc %t.c
// RUN: %nochecks < %t.c | FileCheck %s
// RUN: not %agc -DSTAGED_PRAGMA %s -o %t.bad.c 2>&1 | FileCheck %s --check-prefix=BAD
#include <ag.h>

AG_FUNCTION ag_tensor f(ag_tensor x, int n)
{
#pragma GCC unroll 2
    for (int k = 0; k < n; k++) {
        if (ag_bool(ag_greater(x, 0)))
            x = ag_neg(x);
    }
    switch (n) {
    case 1:
        x = ag_add(x, 1);
        __attribute__((fallthrough));
    default:
        break;
    }
    return x;
}

#ifdef STAGED_PRAGMA
AG_FUNCTION ag_tensor g(ag_tensor x)
{
#pragma GCC unroll 4
    while (ag_bool(ag_greater(x, 0)))
        x = ag_sub(x, 1);
    return x;
}
#endif

// CHECK: #pragma GCC unroll 2
// CHECK-NEXT: for (int k = 0; k < n; k++) {
// CHECK: ag_if_at((ag_loc){"{{.*}}attributes.c", 15}
// BAD: attributes.c:32:5: error: this staged statement has an attribute or a pragma (such as #pragma unroll), which cannot stay on it: agc replaces the statement by a block; remove it
