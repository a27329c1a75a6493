/* print_order: ag_print inside staged loops and branches prints at every
 * run, in program order; printf runs while tracing only, so the program
 * uses it outside the AG_FUNCTIONs. */
#include "e2e.h"

AG_FUNCTION AG_SIGNATURE("i32[]")
void countdown(ag_tensor n)
{
    ag_print("start", n);
    while (ag_bool(ag_greater(n, 0))) {
        if (ag_bool(ag_equal(ag_mod(n, 2), 0)))
            ag_print("even", n);
        else
            ag_print("odd", n);
        n = ag_sub(n, 1);
    }
    ag_print("liftoff");
}

AG_FUNCTION AG_SIGNATURE("i32[]")
ag_tensor table(ag_tensor rows)
{
    ag_tensor r = ag_scalar_i32(1);
    while (ag_bool(ag_less_equal(r, rows))) {
        ag_tensor c = ag_scalar_i32(1);
        while (ag_bool(ag_less_equal(c, r))) {
            ag_print(r, "x", c, "=", ag_mul(r, c));
            c = ag_add(c, 1);
        }
        r = ag_add(r, 1);
    }
    return r;
}

int main(void)
{
    countdown(ag_scalar_i32(3));
    printf("--\n");
    countdown(ag_scalar_i32(0));
    printf("--\n");
    ag_print("rows done at", table(ag_scalar_i32(3)));
    ag_shutdown();
    return 0;
}
