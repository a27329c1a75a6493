// --signature (and AG_SIGNATURE) must describe the function: every entry
// names a parameter, once, with a value of its type; the header of a
// function compiled for --signature says what it was compiled for.
// RUN: rm -rf %t && mkdir -p %t
// RUN: not %agc --emit=ir --function scale --signature "f32[2], kk=3, k=1, s=1" %s 2>&1 | FileCheck --check-prefix=NAME %s
// NAME: emit-signature.c:[[@LINE+21]]: error: the signature "f32[2], kk=3, k=1, s=1" gives a value for 'kk', which is not a C scalar parameter of 'scale' (its C scalar parameters: k, s)
// RUN: not %agc --emit=ir --function scale --signature "f32[2], x=1, k=1, s=1" %s 2>&1 | FileCheck --check-prefix=TENSOR %s
// TENSOR: error: the signature "f32[2], x=1, k=1, s=1" gives a value for 'x', which is not a C scalar parameter of 'scale' (its C scalar parameters: k, s; give a tensor parameter's type as dtype[dims], in order)
// RUN: not %agc --emit=ir --function scale --signature "f32[2], f32[3], k=1, s=1" %s 2>&1 | FileCheck --check-prefix=EXTRA %s
// EXTRA: error: the signature "f32[2], f32[3], k=1, s=1" describes 2 tensors, but 'scale' has 1 tensor parameter
// RUN: not %agc --emit=ir --function scale --signature "f32[2], k=2.5, s=1" %s 2>&1 | FileCheck --check-prefix=INT %s
// INT: error: the signature "f32[2], k=2.5, s=1" gives 'k' a value that is not an integer, but 'k' is an integer parameter of 'scale'
// RUN: not %agc --emit=ir --function scale --signature "f32[2], k=1, k=2, s=1" %s 2>&1 | FileCheck --check-prefix=TWICE %s
// TWICE: error: the signature "f32[2], k=1, k=2, s=1" gives 'k' twice
// RUN: not %agc --emit=ir --function none --signature "f32[2], n=1" %s 2>&1 | FileCheck --check-prefix=NONE %s
// NONE: error: the signature "f32[2], n=1" gives a value for 'n', which is not a C scalar parameter of 'none' (it has none)
// A float parameter takes any number, an integer one C's integer literals:
// RUN: %agc --emit=ir --function scale --signature "f32[2], k=0x10, s=2" %s | FileCheck --check-prefix=OK %s
// OK: const() {value = [16]}
//
// RUN: %agc --emit=obj,header --function scale --signature "f32[2], k=3, s=1.5" %s -o %t/scale.o
// RUN: FileCheck --check-prefix=HEADER %s < %t/scale.h
// HEADER: compiled for AG_SIGNATURE("f32[2], k=3, s=1.5")
// HEADER-NOT: (null)
#include <ag.h>

AG_FUNCTION ag_tensor scale(ag_tensor x, int k, float s)
{
    return ag_mul(ag_mul(x, k), s);
}

AG_FUNCTION ag_tensor none(ag_tensor x) { return x; }
