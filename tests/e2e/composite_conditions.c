/* composite_conditions: staged conditions built from !, &&, || and ?:,
 * nested, and mixed with C conditions. */
#include "e2e.h"

/* !(a && b) || c */
AG_FUNCTION ag_tensor nand_or(ag_tensor a, ag_tensor b, ag_tensor c)
{
    ag_tensor r = ag_scalar_i32(0);
    if (!(ag_bool(a) && ag_bool(b)) || ag_bool(c))
        r = ag_scalar_i32(1);
    return r;
}

/* A ?: deciding which test to make. */
AG_FUNCTION ag_tensor pick_test(ag_tensor x, ag_tensor use_upper)
{
    ag_tensor r = ag_scalar_i32(0);
    if (ag_bool(use_upper) ? ag_bool(ag_greater(x, 10)) : ag_bool(ag_less(x, 0)))
        r = ag_scalar_i32(1);
    return r;
}

/* C and staged parts in one condition, in a loop. */
AG_FUNCTION ag_tensor count_matches(ag_tensor v, int want_even)
{
    ag_tensor n = ag_cast(ag_size(v), AG_I32);
    ag_tensor count = ag_scalar_i32(0);
    for (ag_tensor i = ag_scalar_i32(0); ag_bool(ag_less(i, n)); i = ag_add(i, 1)) {
        ag_tensor x = ag_gather(v, i, 0);
        if ((want_even && ag_bool(ag_equal(ag_mod(x, 2), 0))) ||
            (!want_even && ag_bool(ag_not_equal(ag_mod(x, 2), 0))))
            count = ag_add(count, 1);
    }
    return count;
}

int main(void)
{
    ag_tensor t = ag_scalar_bool(true), f = ag_scalar_bool(false);
    ag_print("nand_or(t, t, f) =", nand_or(t, t, f));
    ag_print("nand_or(t, t, t) =", nand_or(t, t, t));
    ag_print("nand_or(t, f, f) =", nand_or(t, f, f));
    ag_print("pick_test(20, t) =", pick_test(ag_scalar_i32(20), t));
    ag_print("pick_test(20, f) =", pick_test(ag_scalar_i32(20), f));
    ag_print("pick_test(-5, f) =", pick_test(ag_scalar_i32(-5), f));
    ag_print("pick_test(-5, t) =", pick_test(ag_scalar_i32(-5), t));
    const int32_t d[5] = {1, 2, 4, 7, 10};
    ag_tensor v = ag_from_data(AG_I32, AG_SHAPE(5), d);
    ag_print("count_matches(v, even) =", count_matches(v, 1));
    ag_print("count_matches(v, odd) =", count_matches(v, 0));
    ag_shutdown();
    return 0;
}
