// User text keeps its lines through #line directives; generated lines
// point into the output file. Comments between statements are kept.
// RUN: %agc %s -o %t.c && FileCheck %s --input-file %t.c
// RUN: %cc %t.c
#include <ag.h>

AG_FUNCTION ag_tensor f(ag_tensor x)
{
    // a comment the user wrote
    while (ag_bool(ag_greater(x, 1))) {
        x = ag_floordiv(x, 2);
    }
    return x;
}

// CHECK: #line 1 "{{.*}}line-directives.c"
// CHECK: static void f__while_10_body(void *ag__state)
// CHECK-NEXT: {
// CHECK-NEXT:     struct f__while_10 *ag__s = ag__state;
// CHECK-NEXT:     ag_tensor x = ag__s->x;
// CHECK-NEXT: #line 10 "{{.*}}line-directives.c"
// CHECK-NEXT:     {
// CHECK-NEXT:         x = ag_floordiv(x, 2);
// CHECK-NEXT:     }
// CHECK-NEXT: #line {{[0-9]+}} "{{.*}}line-directives.c.tmp.c"
// CHECK-NEXT:     ag__s->x = x;
// CHECK: static ag_tensor f__staged(ag_tensor x)
// CHECK-NEXT: {
// CHECK-NEXT: #line 9 "{{.*}}line-directives.c"
// CHECK-NEXT:     // a comment the user wrote
