// Valid C that agc cannot convert, each rejected with a located error
// (found by fuzzing and by hand; before, agc wrote output that did not
// compile): a K&R parameter list, names agc reserves, computed gotos in a
// function with staged control flow, and a staged ?: that reads what its
// own statement declares or assigns before it (agc computes the ?: first).
// RUN: not %agc %s -o %t.c 2>&1 | FileCheck %s
// RUN: test ! -e %t.c
#include <ag.h>

AG_FUNCTION ag_tensor knr(x) ag_tensor x;
{
    return x;
}
// CHECK: diag-unconvertible.c:10:1: error: AG_FUNCTION 'knr' has an old-style (K&R) parameter list; declare its parameters with their types inside the parentheses

AG_FUNCTION ag_tensor reserved(ag_tensor ag__state)
{
    ag_tensor ag__s = ag__state;
    return ag__s;
}
// CHECK: diag-unconvertible.c:16:42: error: 'ag__state': names beginning with 'ag__' are reserved for the code agc generates; rename it
// CHECK: diag-unconvertible.c:18:15: error: 'ag__s': names beginning with 'ag__' are reserved for the code agc generates; rename it

AG_FUNCTION ag_tensor computed(ag_tensor x)
{
    void *next = &&done;
    while (ag_bool(ag_greater(x, 0)))
        x = ag_sub(x, 1);
    goto *next;
done:
    return x;
}
// CHECK: diag-unconvertible.c:26:18: error: a computed goto ('goto *' or '&&label') cannot be used in an AG_FUNCTION with staged control flow: agc moves staged code into other C functions
// CHECK: diag-unconvertible.c:29:5: error: a computed goto

AG_FUNCTION ag_tensor order(ag_tensor x)
{
    ag_tensor y = ag_neg(x), z = ag_bool(ag_greater(x, 0)) ? y : x;
    ag_tensor w = ag_bool(ag_less(x, 0)) ? w : x;
    z = ag_neg(z), y = ag_bool(ag_less(x, 1)) ? z : y;
    y = ag_bool(ag_less(y, 2)) ? y : z; /* fine: y is assigned after */
    return ag_add(ag_add(y, z), w);
}
// CHECK: diag-unconvertible.c:38:62: error: this '?:' has a staged condition, so agc computes it before its statement, but it reads 'y', which the statement declares before it; split the statement
// CHECK: diag-unconvertible.c:38:34: note: the '?:' is here
// CHECK: diag-unconvertible.c:39:44: error: this '?:' {{.*}} reads 'w', which the statement declares before it
// CHECK: diag-unconvertible.c:40:49: error: this '?:' {{.*}} reads 'z', which the statement assigns before it
// CHECK-NOT: error
// CHECK: 8 errors generated.
