/* recursion: an AG_FUNCTION that calls itself is traced into itself, so
 * only a C condition can end the recursion while tracing (power: k is a C
 * scalar that decreases). A recursion that only staged conditions end
 * (is_even and is_odd calling each other: agc cannot see it in one
 * function) is an error at trace time naming the function, where it used
 * to overflow the stack. The eager build computes both
 * (recursion.eager.expected). */
#include "e2e.h"

AG_FUNCTION ag_tensor power(ag_tensor x, int k)
{
    if (k == 0)
        return ag_ones_like(x);
    return ag_mul(x, power(x, k - 1));
}

AG_FUNCTION ag_tensor is_odd(ag_tensor n);

AG_FUNCTION ag_tensor is_even(ag_tensor n)
{
    if (ag_bool(ag_less_equal(n, 0)))
        return ag_scalar_bool(true);
    return is_odd(ag_sub(n, 1));
}

AG_FUNCTION ag_tensor is_odd(ag_tensor n)
{
    if (ag_bool(ag_less_equal(n, 0)))
        return ag_scalar_bool(false);
    return is_even(ag_sub(n, 1));
}

int main(void)
{
    ag_set_error_mode(AG_ERRORS_RETURN);
    ag_print(power(ag_scalar_f32(3), 4));
    ag_tensor r = is_even(ag_scalar_i32(4));
    if (ag_is_error(r))
        e2e_print_error("is_even(4)");
    else
        ag_print(r);
    return 0;
}
