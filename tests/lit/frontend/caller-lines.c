// A call of an AG_FUNCTION written after its definition passes its own
// line: the wrapper calls at the definition's location, f__at at the one
// it is given, and a macro after it makes later calls pass AG_HERE (tests/e2e/
// signature_unknown_dims.c runs it: a mismatch is reported at the
// caller's line). The macro is left out when a later `name(` is not a
// call: a member, a declaration.
// RUN: %agc %s -o %t.c && %cc %t.c
// RUN: FileCheck %s < %t.c
// RUN: %agc -DMEMBER %s -o %t.member.c && %cc %t.member.c
// RUN: %nochecks < %t.member.c | FileCheck %s --check-prefix=NOCALLCHECK
// RUN: %agc -DDECL %s -o %t.decl.c && %cc %t.decl.c
// RUN: %nochecks < %t.decl.c | FileCheck %s --check-prefix=NOCALLCHECK
#include <ag.h>

AG_FUNCTION ag_tensor twice(ag_tensor x)
{
    return ag_add(x, x);
}

AG_FUNCTION void nothing(void)
{
}

#if defined(MEMBER)
struct ops {
    ag_tensor (*twice)(ag_tensor);
    void (*nothing)(void);
};
ag_tensor by_member(struct ops *o, ag_tensor x)
{
    o->nothing();
    return o->twice(x);
}
#elif defined(DECL)
ag_tensor twice(ag_tensor x);
void nothing(void);
#endif

ag_tensor caller(ag_tensor x)
{
    nothing();
    return twice(x);
}

// CHECK: {{^}}ag_tensor twice(ag_tensor x){{$}}
// CHECK: ag_function_call_at((ag_loc){"{{.*}}caller-lines.c", 15}, &twice__desc, ag__args, ag__out);
// CHECK: __attribute__((unused)) static ag_tensor twice__at(ag_loc ag__loc, ag_tensor x)
// CHECK: ag_function_call_at(ag__loc, &twice__desc, ag__args, ag__out);
// CHECK: #ifndef AGC_NO_CALLER_LINES
// CHECK-NEXT: #define twice(...) twice__at(AG_HERE, __VA_ARGS__)
// CHECK-NEXT: #endif
// CHECK: ag_function_call_at((ag_loc){"{{.*}}caller-lines.c", 20}, &nothing__desc, NULL, NULL);
// CHECK: __attribute__((unused)) static void nothing__at(ag_loc ag__loc)
// CHECK: ag_function_call_at(ag__loc, &nothing__desc, NULL, NULL);
// CHECK: #define nothing() nothing__at(AG_HERE)
// NOCALLCHECK-NOT: #define twice
// NOCALLCHECK-NOT: #define nothing
