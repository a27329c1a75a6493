/* loop_basic: staged while and for loops, and a C for loop unrolled while
 * tracing (AutoGraph's loop_basic). */
#include "e2e.h"

/* 0 + 1 + ... + n-1 */
AG_FUNCTION ag_tensor sum_below(ag_tensor n)
{
    ag_tensor i = ag_scalar_i32(0);
    ag_tensor total = ag_scalar_i32(0);
    while (ag_bool(ag_less(i, n))) {
        total = ag_add(total, i);
        i = ag_add(i, 1);
    }
    return total;
}

/* A for loop without an init whose variable (a parameter) is used after. */
AG_FUNCTION ag_tensor count_doublings(ag_tensor x, ag_tensor limit)
{
    ag_tensor steps = ag_scalar_i32(0);
    for (; ag_bool(ag_less(x, limit)); x = ag_mul(x, 2))
        steps = ag_add(steps, 1);
    return ag_add(ag_mul(steps, 1000), x);
}

/* A C loop over an int: unrolled into the graph. */
AG_FUNCTION ag_tensor power_sum(ag_tensor x, int n)
{
    ag_tensor acc = ag_zeros_like(x);
    ag_tensor p = ag_ones_like(x);
    for (int k = 0; k < n; k++) {
        acc = ag_add(acc, p);
        p = ag_mul(p, x);
    }
    return acc;
}

/* A vector loop variable and a reduction in the condition. */
AG_FUNCTION ag_tensor halve_until_small(ag_tensor v)
{
    while (ag_bool(ag_greater(ag_reduce_max(v, AG_ALL_AXES, false), 1)))
        v = ag_div(v, 2);
    return v;
}

int main(void)
{
    ag_print("sum_below(0) =", sum_below(ag_scalar_i32(0)));
    ag_print("sum_below(5) =", sum_below(ag_scalar_i32(5)));
    ag_print("sum_below(10) =", sum_below(ag_scalar_i32(10)));
    ag_print("count_doublings(1, 100) =", count_doublings(ag_scalar_i32(1), ag_scalar_i32(100)));
    ag_print("count_doublings(200, 100) =",
             count_doublings(ag_scalar_i32(200), ag_scalar_i32(100)));
    ag_print("power_sum(2, 4) =", power_sum(ag_scalar_i32(2), 4));
    ag_print("power_sum(3, 0) =", power_sum(ag_scalar_i32(3), 0));
    const float d[2] = {8, 3};
    ag_print("halve_until_small([8 3]) =", halve_until_small(ag_from_data(AG_F32, AG_SHAPE(2), d)));
    ag_shutdown();
    return 0;
}
