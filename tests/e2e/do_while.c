/* do_while: the body of a staged do/while runs once before the first
 * test; break and continue in it. */
#include "e2e.h"

/* The number of decimal digits of n (1 for 0). */
AG_FUNCTION AG_SIGNATURE("i32[]")
ag_tensor digits(ag_tensor n)
{
    ag_tensor count = ag_scalar_i32(0);
    do {
        n = ag_floordiv(n, 10);
        count = ag_add(count, 1);
    } while (ag_bool(ag_greater(n, 0)));
    return count;
}

/* The sum of the digits, stopping at the first 0 digit. */
AG_FUNCTION AG_SIGNATURE("i32[]")
ag_tensor digit_sum_until_zero(ag_tensor n)
{
    ag_tensor sum = ag_scalar_i32(0);
    do {
        ag_tensor d = ag_mod(n, 10);
        n = ag_floordiv(n, 10);
        if (ag_bool(ag_equal(d, 0)))
            break;
        sum = ag_add(sum, d);
    } while (ag_bool(ag_greater(n, 0)));
    return sum;
}

/* Odd digits only, with continue. */
AG_FUNCTION AG_SIGNATURE("i32[]")
ag_tensor odd_digit_sum(ag_tensor n)
{
    ag_tensor sum = ag_scalar_i32(0);
    do {
        ag_tensor d = ag_mod(n, 10);
        n = ag_floordiv(n, 10);
        if (ag_bool(ag_equal(ag_mod(d, 2), 0)))
            continue;
        sum = ag_add(sum, d);
    } while (ag_bool(ag_greater(n, 0)));
    return sum;
}

int main(void)
{
    ag_print("digits(0) =", digits(ag_scalar_i32(0)));
    ag_print("digits(7) =", digits(ag_scalar_i32(7)));
    ag_print("digits(12345) =", digits(ag_scalar_i32(12345)));
    ag_print("digit_sum_until_zero(12345) =", digit_sum_until_zero(ag_scalar_i32(12345)));
    ag_print("digit_sum_until_zero(7105) =", digit_sum_until_zero(ag_scalar_i32(7105)));
    ag_print("digit_sum_until_zero(50) =", digit_sum_until_zero(ag_scalar_i32(50)));
    ag_print("odd_digit_sum(123456789) =", odd_digit_sum(ag_scalar_i32(123456789)));
    ag_print("odd_digit_sum(2468) =", odd_digit_sum(ag_scalar_i32(2468)));
    ag_shutdown();
    return 0;
}
