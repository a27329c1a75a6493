// An AG_SIGNATURE that does not parse, or does not describe the function's
// parameters (tensors in order, C scalars by name), is an error when agc
// converts, at the signature's string, with the function cache's parser
// and its messages; an unknown dtype close to one gets a did-you-mean.
// These used to be found only at the program's first call.
// RUN: not %agc %s -o %t.c 2>&1 | FileCheck %s
#include <ag.h>

AG_FUNCTION AG_SIGNATURE("f33[2,3]") ag_tensor dtype(ag_tensor x)
{
    return x;
}

AG_FUNCTION AG_SIGNATURE("f32[2], f32[3]") ag_tensor count(ag_tensor x)
{
    return x;
}

AG_FUNCTION AG_SIGNATURE("f32[2,x]") ag_tensor dims(ag_tensor x)
{
    return x;
}

AG_FUNCTION AG_SIGNATURE("f32[2], n=2.5, m=1")
ag_tensor values(ag_tensor x, int n)
{
    (void)n;
    return x;
}

AG_FUNCTION AG_SIGNATURE("tensor[2]") ag_tensor far(ag_tensor x)
{
    return x;
}

AG_FUNCTION AG_SIGNATURE("f32[?], n=3") ag_tensor good(ag_tensor x, int n)
{
    (void)n;
    return x;
}

// CHECK: diag-bad-signature.c:9:26: error: AG_SIGNATURE("f33[2,3]") of 'dtype': unknown dtype 'f33' (expected f32, f64, bf16, i32, i64 or bool); did you mean 'f32'?
// CHECK-NEXT: {{^}}    9 | AG_FUNCTION AG_SIGNATURE("f33[2,3]") ag_tensor dtype(ag_tensor x)
// CHECK-NEXT: {{^}}      |                          ^~~~~~~~~~
// CHECK: diag-bad-signature.c:14:26: error: AG_SIGNATURE("f32[2], f32[3]") of 'count' describes 2 tensors, but 'count' has 1 tensor parameter
// CHECK: diag-bad-signature.c:19:26: error: AG_SIGNATURE("f32[2,x]") of 'dims': expected a dim (an integer or '?') at 'x]'
// CHECK: diag-bad-signature.c:24:26: error: AG_SIGNATURE("f32[2], n=2.5, m=1") of 'values' gives 'n' a value that is not an integer, but 'n' is an integer parameter
// CHECK: diag-bad-signature.c:24:26: error: AG_SIGNATURE("f32[2], n=2.5, m=1") of 'values' gives a value for 'm', which is not a C scalar parameter of 'values'
// CHECK: diag-bad-signature.c:31:26: error: AG_SIGNATURE("tensor[2]") of 'far': unknown dtype 'tensor' (expected f32, f64, bf16, i32, i64 or bool){{$}}
// CHECK-NOT: good
// CHECK: 6 errors generated.
