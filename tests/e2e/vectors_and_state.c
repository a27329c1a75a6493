/* vectors_and_state: loops over vector and matrix values, variables
 * assigned in staged branches, and a ?: inside a loop condition. */
#include "e2e.h"

/* Power iteration steps on a 2x2 matrix: the vector is carried. */
AG_FUNCTION ag_tensor iterate(ag_tensor m, ag_tensor v, ag_tensor steps)
{
    ag_tensor k = ag_scalar_i32(0);
    while (ag_bool(ag_less(k, steps))) {
        v = ag_matmul(m, v);
        k = ag_add(k, 1);
    }
    return v;
}

/* A variable updated in the branch taken only. */
AG_FUNCTION void deposit(ag_variable balance, ag_tensor amount)
{
    if (ag_bool(ag_greater(amount, 0)))
        ag_assign_add(balance, amount);
    else
        ag_print("rejected", amount);
}

/* The bound of the loop is chosen by a staged ?: in its condition. */
AG_FUNCTION ag_tensor count_to_bound(ag_tensor small, ag_tensor n)
{
    ag_tensor i = ag_scalar_i32(0);
    while (ag_bool(ag_less(i, ag_bool(small) ? ag_minimum(n, 3) : n)))
        i = ag_add(i, 1);
    return i;
}

int main(void)
{
    const float m[4] = {1, 1, 1, 0};
    const float v0[2] = {1, 0};
    ag_tensor v = ag_from_data(AG_F32, AG_SHAPE(2, 1), v0);
    ag_print("iterate(fib matrix, [1 0], 6) =",
             ag_reshape(iterate(ag_from_data(AG_F32, AG_SHAPE(2, 2), m), v, ag_scalar_i32(6)),
                        AG_SHAPE(2)));
    ag_variable balance = ag_variable_new(ag_scalar_i32(10));
    deposit(balance, ag_scalar_i32(5));
    deposit(balance, ag_scalar_i32(-3));
    deposit(balance, ag_scalar_i32(7));
    ag_print("balance:", ag_variable_read(balance));
    ag_variable_free(balance);
    ag_print("count_to_bound(true, 10) =",
             count_to_bound(ag_scalar_bool(true), ag_scalar_i32(10)));
    ag_print("count_to_bound(false, 10) =",
             count_to_bound(ag_scalar_bool(false), ag_scalar_i32(10)));
    ag_shutdown();
    return 0;
}
