// Code an #include brings into an AG_FUNCTION's body cannot be rewritten
// (agc rewrites the input's text): a located error at the #include (found
// by hand; it gave a nonsense error at 1:1).
// RUN: mkdir -p %t.dir && echo 'if (ag_bool(ag_greater(x, 0))) x = ag_neg(x);' > %t.dir/body.h
// RUN: not %agc -I %t.dir %s -o %t.c 2>&1 | FileCheck %s
#include <ag.h>

AG_FUNCTION ag_tensor f(ag_tensor x)
{
#include "body.h"
    return x;
}

// CHECK: diag-include-in-body.c:10:10: error: the body of AG_FUNCTION 'f' includes code from '{{.*}}body.h'; agc converts only what is written in the input file: write that code here, or call a function
// CHECK: 1 error generated.
