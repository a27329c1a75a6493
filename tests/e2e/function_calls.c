/* function_calls: AG_FUNCTIONs calling AG_FUNCTIONs (inlined while
 * tracing): in a staged condition, in a staged loop's body, three levels
 * deep, with early returns in the callee, and with C scalar arguments
 * that differ between call sites. */
#include "e2e.h"

AG_FUNCTION ag_tensor is_even(ag_tensor x)
{
    return ag_equal(ag_mod(x, 2), 0);
}

/* Calls is_even in a staged condition; returns from both sides. */
AG_FUNCTION ag_tensor collatz_step(ag_tensor x)
{
    if (ag_bool(is_even(x)))
        return ag_floordiv(x, 2);
    return ag_add(ag_mul(x, 3), 1);
}

/* Three levels: collatz_len -> collatz_step -> is_even. */
AG_FUNCTION ag_tensor collatz_len(ag_tensor x)
{
    ag_tensor n = ag_scalar_i32(0);
    while (ag_bool(ag_not_equal(x, 1))) {
        x = collatz_step(x);
        n = ag_add(n, 1);
    }
    return n;
}

/* p is a C scalar: the C loop is unrolled p times. */
AG_FUNCTION ag_tensor nth_power(ag_tensor x, int p)
{
    ag_tensor r = ag_ones_like(x);
    for (int k = 0; k < p; k++)
        r = ag_mul(r, x);
    return r;
}

/* Two call sites with different C arguments, inside a staged loop. */
AG_FUNCTION ag_tensor power_sums(ag_tensor n)
{
    ag_tensor s2 = ag_scalar_i32(0), s3 = ag_scalar_i32(0);
    for (ag_tensor i = ag_scalar_i32(1); ag_bool(ag_less_equal(i, n)); i = ag_add(i, 1)) {
        s2 = ag_add(s2, nth_power(i, 2));
        s3 = ag_add(s3, nth_power(i, 3));
    }
    return ag_add(ag_mul(s3, 1000), s2);
}

/* A callee whose result decides a loop's condition. */
AG_FUNCTION ag_tensor evens_before_odd(ag_tensor v)
{
    ag_tensor n = ag_cast(ag_size(v), AG_I32);
    ag_tensor i = ag_scalar_i32(0);
    while (ag_bool(ag_less(i, n)) && ag_bool(is_even(ag_gather(v, i, 0))))
        i = ag_add(i, 1);
    return i;
}

int main(void)
{
    ag_print("collatz_len(6) =", collatz_len(ag_scalar_i32(6)));
    ag_print("collatz_len(1) =", collatz_len(ag_scalar_i32(1)));
    ag_print("collatz_len(27) =", collatz_len(ag_scalar_i32(27)));
    ag_print("power_sums(4) =", power_sums(ag_scalar_i32(4)));
    ag_print("power_sums(0) =", power_sums(ag_scalar_i32(0)));
    ag_print("nth_power(3, 4) =", nth_power(ag_scalar_i32(3), 4));
    const int32_t a[5] = {2, 8, 4, 7, 6}, b[2] = {0, 2};
    ag_print("evens_before_odd([2 8 4 7 6]) =",
             evens_before_odd(ag_from_data(AG_I32, AG_SHAPE(5), a)));
    ag_print("evens_before_odd([0 2]) =", evens_before_odd(ag_from_data(AG_I32, AG_SHAPE(2), b)));
    ag_shutdown();
    return 0;
}
