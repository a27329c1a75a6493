// Preprocessor lines inside AG_FUNCTIONs: a complete #if group inside a
// staged body moves with it; the text between a staged exit and the
// statements moved after it (here a #define and an #ifndef group) moves
// with them; a conditional that crosses the boundary of staged control
// flow is an error (found by hand: the output did not compile).
// RUN: %agc %s -o %t.c && %cc %t.c
// RUN: %nochecks < %t.c | FileCheck %s
// RUN: not %agc -DCROSSING %s -o %t.bad.c 2>&1 | FileCheck %s --check-prefix=CROSSING
#include <ag.h>

AG_FUNCTION ag_tensor f(ag_tensor x)
{
    while (ag_bool(ag_greater(x, 0))) {
#ifdef DEBUG
        ag_print(x);
#endif
        x = ag_sub(x, 1);
    }
    if (ag_bool(ag_less(x, -5)))
        return x;
#define TWICE(t) ag_mul(t, 2)
    x = TWICE(x);
#ifndef NO_INCREMENT
    x = ag_add(x, 1);
#endif
    return x;
}

#ifdef CROSSING
AG_FUNCTION ag_tensor g(ag_tensor x)
{
#ifdef SMALL
    if (ag_bool(ag_greater(x, 0))) {
#else
    if (ag_bool(ag_greater(x, 100))) {
#endif
        x = ag_neg(x);
    }
    return x;
}
#endif

// CHECK: static void f__while_13_body(void *ag__state)
// CHECK: #ifdef DEBUG
// CHECK-NEXT: ag_print(x);
// CHECK-NEXT: #endif
// CHECK: static void f__if_19_else(void *ag__state)
// CHECK: #define TWICE(t) ag_mul(t, 2)
// CHECK-NEXT: x = TWICE(x);
// CHECK-NEXT: #ifndef NO_INCREMENT
// CHECK-NEXT: x = ag_add(x, 1);
// CHECK-NEXT: #endif
// CROSSING: preprocessor.c:36:1: error: this preprocessor conditional crosses the boundary of this staged if, which agc moves into another C function; keep each #if ... #endif inside one branch or loop body, or around the whole statement
// CROSSING: preprocessor.c:35:5: note: the staged control flow is here
// CROSSING: 1 error generated.
