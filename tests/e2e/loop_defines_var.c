/* loop_defines_var: a variable first assigned inside a staged loop and
 * read after it is a loop variable undefined on entry: its type comes
 * from the body (AutoGraph's undefined loop variables). */
#include "e2e.h"

AG_FUNCTION AG_SIGNATURE("i32[]")
ag_tensor last_square(ag_tensor n)
{
    ag_tensor last;
    ag_tensor i = ag_scalar_i32(1);
    while (ag_bool(ag_less_equal(i, n))) {
        last = ag_mul(i, i);
        i = ag_add(i, 1);
    }
    return last;
}

/* Assigned in both branches of an if inside the loop. */
AG_FUNCTION AG_SIGNATURE("i32[]")
ag_tensor last_parity(ag_tensor n)
{
    ag_tensor parity;
    ag_tensor i = ag_scalar_i32(0);
    do {
        if (ag_bool(ag_equal(ag_mod(i, 2), 0)))
            parity = ag_scalar_i32(0);
        else
            parity = ag_scalar_i32(1);
        i = ag_add(i, 1);
    } while (ag_bool(ag_less(i, n)));
    return parity;
}

int main(void)
{
    ag_print("last_square(4) =", last_square(ag_scalar_i32(4)));
    ag_print("last_square(1) =", last_square(ag_scalar_i32(1)));
    ag_print("last_parity(4) =", last_parity(ag_scalar_i32(4)));
    ag_print("last_parity(5) =", last_parity(ag_scalar_i32(5)));
    ag_shutdown();
    return 0;
}
