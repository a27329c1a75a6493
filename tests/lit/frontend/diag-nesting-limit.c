// Parentheses, brackets and braces nest at most 256 levels deep (the
// function's braces count): 5,000 nested calls of an ag_ op macro are an
// error at the bracket that goes deeper, reported before libclang sees
// them. libclang used to crash on them (and clang with it), or, on a
// large enough stack, expand the macros for minutes before its own
// bracket limit. 255 calls inside the function's braces are read.
// RUN: awk -f %S/Inputs/nested-calls.awk -v n=5000 > %t.deep.c
// RUN: not timeout 60 %agc %t.deep.c -o %t.out.c 2>&1 | FileCheck %s
// RUN: awk -f %S/Inputs/nested-calls.awk -v n=255 > %t.limit.c
// RUN: not %agc %t.limit.c -o %t.out.c 2>&1 | FileCheck %s --check-prefix=LIMIT
// CHECK: .deep.c:4:1803: error: parentheses, brackets and braces nest deeper than 256 levels here, more than agc (and clang) read; split the expression with variables
// CHECK: 1 error generated.
// LIMIT-NOT: nest deeper than 256
// LIMIT: bracket nesting level exceeded maximum of 256
