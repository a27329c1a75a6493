// libclang's own errors print in the same form and stop agc (exit 1, no
// output).
// RUN: rm -f %t.c
// RUN: not %agc %s -o %t.c 2>&1 | FileCheck %s
// RUN: test ! -e %t.c
// RUN: not %agc -DMISSING_HEADER %s -o %t.c 2>&1 | FileCheck %s --check-prefix=HEADER
#include <ag.h>
#ifdef MISSING_HEADER
#include "no_such_header.h"
#endif

AG_FUNCTION ag_tensor f(ag_tensor x)
{
    ag_tensor y = ag_add(x, 1)
    return y;
}

// CHECK: diag-clang.c:14:31: error: expected ';' at end of declaration
// CHECK-NEXT: {{^}}   14 |     ag_tensor y = ag_add(x, 1)
// CHECK-NEXT: {{^}}      |                               ^
// CHECK-NEXT: {{^}}      |                               ;
// CHECK-NEXT: 1 error generated.
// HEADER: diag-clang.c:9:10: fatal error: 'no_such_header.h' file not found
// HEADER-NEXT: {{^}}    9 | #include "no_such_header.h"
// HEADER-NEXT: {{^}}      |          ^~~~~~~~~~~~~~~~~~
