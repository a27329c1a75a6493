// The fix-its agc suggests compile when applied: a C scalar that must
// become a tensor keeps its initial value (ag_scalar_i32(0), not 0, which
// cannot initialize an ag_tensor); no fix-it where only the user knows what
// to write (a missing else branch), nor for a type shared with other
// declarators, nor for pointers and structs.
// RUN: not %agc %s -o %t.c > %t.out 2>&1
// RUN: FileCheck %s < %t.out
// Apply them: each fix-it line, with its note's declaration, compiles.
// RUN: awk '/note: declare .* as an ag_tensor/ { n = 4 } n && !--n && /^ +[|] +ag_tensor/ { sub(/^ *[|] */, ""); print "    " $0 ";" }' %t.out > %t.fixed
// RUN: test -s %t.fixed
// RUN: (echo '#include <ag.h>'; echo 'void f(void) {'; cat %t.fixed; echo '}') > %t.fixed.c
// RUN: %cc -Wno-unused-variable %t.fixed.c
#include <ag.h>
#include <stdbool.h>

AG_FUNCTION ag_tensor f(ag_tensor x)
{
    int steps = 0;
    float scale = 1.5f;
    double total = 2;
    bool seen = false;
    long long big = 1LL << 40;
    unsigned count;
    int a = 1, b = 2;
    ag_tensor y;
    while (ag_bool(ag_greater(x, 1))) {
        x = ag_sub(x, 1);
        steps++;
        scale *= 2;
        total += 1;
        seen = true;
        big++;
        count = 1;
        a = b;
    }
    if (ag_bool(ag_greater(x, 0)))
        y = x;
    return ag_add(ag_add(x, steps + scale + total + seen + big + count + a), y);
}

// CHECK: error: 'y' must also be initialized in the else branch
// CHECK: note: assign 'y' in the else branch too (else y = ...;)
// CHECK-NOT: {{^}}      | {{ +}}else
// CHECK: note: declare 'steps' as an ag_tensor
// CHECK-NEXT: {{^}}   18 |     int steps = 0;
// CHECK-NEXT: {{^}}      |     ^~~
// CHECK-NEXT: {{^}}      |     ag_tensor steps = ag_scalar_i32(0)
// CHECK: note: declare 'scale' as an ag_tensor
// CHECK: {{^}}      |     ag_tensor scale = ag_scalar_f32(1.5f)
// CHECK: {{^}}      |     ag_tensor total = ag_scalar_f64(2)
// CHECK: {{^}}      |     ag_tensor seen = ag_scalar_bool(false)
// CHECK: {{^}}      |     ag_tensor big = ag_scalar_i64(1LL << 40)
// CHECK: {{^}}      |     ag_tensor count{{$}}
// CHECK: note: declare 'a' as an ag_tensor
// CHECK-NEXT: {{^}}   24 |     int a = 1, b = 2;
// CHECK-NEXT: {{^}}      |     ^~~
// CHECK-NOT: {{^}}      | {{.*}}ag_tensor
// CHECK: 8 errors generated.
