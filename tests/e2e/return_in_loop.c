/* return_in_loop: a return inside a staged loop, and inside an if inside a
 * loop: the <return value> is undefined until the return runs. */
#include "e2e.h"

/* A return inside a loop. */
AG_FUNCTION ag_tensor first_root_above(ag_tensor n)
{
    ag_tensor i = ag_scalar_i32(0);
    while (ag_bool(ag_less(i, 100))) {
        if (ag_bool(ag_greater(ag_mul(i, i), n)))
            return i;
        i = ag_add(i, 1);
    }
    return ag_scalar_i32(-1);
}

/* The loop may not run at all: the return after it gives the value. */
AG_FUNCTION ag_tensor first_multiple(ag_tensor start, ag_tensor stop, ag_tensor k)
{
    for (ag_tensor i = start; ag_bool(ag_less(i, stop)); i = ag_add(i, 1)) {
        if (ag_bool(ag_equal(ag_mod(i, k), 0)))
            return i;
    }
    return ag_scalar_i32(-1);
}

/* A return in a loop nested in a loop. */
AG_FUNCTION ag_tensor find_pair(ag_tensor target)
{
    for (ag_tensor a = ag_scalar_i32(1); ag_bool(ag_less(a, 10)); a = ag_add(a, 1)) {
        for (ag_tensor b = a; ag_bool(ag_less(b, 10)); b = ag_add(b, 1)) {
            if (ag_bool(ag_equal(ag_mul(a, b), target)))
                return ag_add(ag_mul(a, 10), b);
        }
    }
    return ag_scalar_i32(0);
}

/* A staged return inside a C if: the statements after the C if run under
 * a staged if on !<returned>. */
AG_FUNCTION ag_tensor checked_scale(ag_tensor x, int strict)
{
    if (strict) {
        if (ag_bool(ag_less(x, 0)))
            return ag_scalar_i32(0);
        x = ag_add(x, 1);
    }
    return ag_mul(x, 10);
}

int main(void)
{
    ag_print("first_root_above(50) =", first_root_above(ag_scalar_i32(50)));
    ag_print("first_root_above(100000) =", first_root_above(ag_scalar_i32(100000)));
    ag_print("first_root_above(-5) =", first_root_above(ag_scalar_i32(-5)));
    ag_print("first_multiple(10, 20, 7) =",
             first_multiple(ag_scalar_i32(10), ag_scalar_i32(20), ag_scalar_i32(7)));
    ag_print("first_multiple(10, 13, 7) =",
             first_multiple(ag_scalar_i32(10), ag_scalar_i32(13), ag_scalar_i32(7)));
    ag_print("first_multiple(5, 5, 7) =",
             first_multiple(ag_scalar_i32(5), ag_scalar_i32(5), ag_scalar_i32(7)));
    ag_print("find_pair(24) =", find_pair(ag_scalar_i32(24)));
    ag_print("find_pair(97) =", find_pair(ag_scalar_i32(97)));
    ag_print("checked_scale(-2, 1) =", checked_scale(ag_scalar_i32(-2), 1));
    ag_print("checked_scale(2, 1) =", checked_scale(ag_scalar_i32(2), 1));
    ag_print("checked_scale(-2, 0) =", checked_scale(ag_scalar_i32(-2), 0));
    ag_shutdown();
    return 0;
}
