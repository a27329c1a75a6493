/* for_variants: staged for loops with parts omitted, several variables in
 * the init, a comma increment, and an increment that must still run after
 * continue but not after break. */
#include "e2e.h"

/* Two counters moving towards each other. */
AG_FUNCTION AG_SIGNATURE("i32[]")
ag_tensor meet(ag_tensor n)
{
    ag_tensor steps = ag_scalar_i32(0);
    ag_tensor i, j;
    for (i = ag_scalar_i32(0), j = n; ag_bool(ag_less(i, j)); i = ag_add(i, 1), j = ag_sub(j, 1))
        steps = ag_add(steps, 1);
    return ag_add(ag_mul(steps, 100), ag_sub(j, i));
}

/* No init, no increment: the body advances the counter. */
AG_FUNCTION AG_SIGNATURE("i32[]")
ag_tensor bare(ag_tensor x)
{
    for (; ag_bool(ag_greater(x, 1));)
        x = ag_floordiv(x, 3);
    return x;
}

/* continue skips to the increment; break skips it. */
AG_FUNCTION AG_SIGNATURE("i32[]")
ag_tensor skip_and_stop(ag_tensor n)
{
    ag_tensor sum = ag_scalar_i32(0);
    ag_tensor i = ag_scalar_i32(0);
    for (; ag_bool(ag_less(i, n)); i = ag_add(i, 1)) {
        if (ag_bool(ag_equal(ag_mod(i, 3), 0)))
            continue;
        if (ag_bool(ag_greater(sum, 20)))
            break;
        sum = ag_add(sum, i);
    }
    return ag_add(ag_mul(sum, 100), i);
}

int main(void)
{
    ag_print("meet(10) =", meet(ag_scalar_i32(10)));
    ag_print("meet(7) =", meet(ag_scalar_i32(7)));
    ag_print("bare(100) =", bare(ag_scalar_i32(100)));
    ag_print("skip_and_stop(100) =", skip_and_stop(ag_scalar_i32(100)));
    ag_print("skip_and_stop(5) =", skip_and_stop(ag_scalar_i32(5)));
    ag_shutdown();
    return 0;
}
