/* loop_control_flow: break and continue in staged loops, lowered to flags
 * (AutoGraph's loop_control_flow). */
#include "e2e.h"

/* break: the first i with i * i > n. */
AG_FUNCTION AG_SIGNATURE("i32[]")
ag_tensor first_square_above(ag_tensor n)
{
    ag_tensor i = ag_scalar_i32(0);
    while (ag_bool(ag_less(i, 1000))) {
        if (ag_bool(ag_greater(ag_mul(i, i), n)))
            break;
        i = ag_add(i, 1);
    }
    return i;
}

/* continue: the odd numbers below n. */
AG_FUNCTION AG_SIGNATURE("i32[]")
ag_tensor sum_odd_below(ag_tensor n)
{
    ag_tensor total = ag_scalar_i32(0);
    for (ag_tensor i = ag_scalar_i32(0); ag_bool(ag_less(i, n)); i = ag_add(i, 1)) {
        if (ag_bool(ag_equal(ag_mod(i, 2), 0)))
            continue;
        total = ag_add(total, i);
    }
    return total;
}

/* Both, in one loop. */
AG_FUNCTION AG_SIGNATURE("i32[]")
ag_tensor odd_sum_until(ag_tensor limit)
{
    ag_tensor i = ag_scalar_i32(0), acc = ag_scalar_i32(0);
    while (ag_bool(ag_less(i, 100))) {
        i = ag_add(i, 1);
        if (ag_bool(ag_equal(ag_mod(i, 2), 0)))
            continue;
        if (ag_bool(ag_greater(acc, limit)))
            break;
        acc = ag_add(acc, i);
    }
    return ag_add(ag_mul(acc, 1000), i);
}

/* break in a for loop: the increment does not run after it. */
AG_FUNCTION AG_SIGNATURE("i32[6], i32[]")
ag_tensor find_index(ag_tensor v, ag_tensor target)
{
    ag_tensor i = ag_scalar_i32(0);
    ag_tensor n = ag_cast(ag_size(v), AG_I32);
    for (; ag_bool(ag_less(i, n)); i = ag_add(i, 1)) {
        if (ag_bool(ag_equal(ag_gather(v, i, 0), target)))
            break;
    }
    return i;
}

/* continue in a do/while goes to the condition. */
AG_FUNCTION AG_SIGNATURE("i32[]")
ag_tensor count_multiples_of_3(ag_tensor n)
{
    ag_tensor k = ag_scalar_i32(0), c = ag_scalar_i32(0);
    do {
        k = ag_add(k, 1);
        if (ag_bool(ag_not_equal(ag_mod(k, 3), 0)))
            continue;
        c = ag_add(c, 1);
    } while (ag_bool(ag_less(k, n)));
    return c;
}

int main(void)
{
    ag_print("first_square_above(50) =", first_square_above(ag_scalar_i32(50)));
    ag_print("first_square_above(0) =", first_square_above(ag_scalar_i32(0)));
    ag_print("sum_odd_below(10) =", sum_odd_below(ag_scalar_i32(10)));
    ag_print("sum_odd_below(1) =", sum_odd_below(ag_scalar_i32(1)));
    ag_print("odd_sum_until(20) =", odd_sum_until(ag_scalar_i32(20)));
    ag_print("odd_sum_until(1000) =", odd_sum_until(ag_scalar_i32(1000)));
    const int32_t data[6] = {4, 8, 15, 16, 23, 42};
    ag_tensor v = ag_from_data(AG_I32, AG_SHAPE(6), data);
    ag_print("find_index(16) =", find_index(v, ag_scalar_i32(16)));
    ag_print("find_index(5) =", find_index(v, ag_scalar_i32(5)));
    ag_print("count_multiples_of_3(10) =", count_multiples_of_3(ag_scalar_i32(10)));
    ag_print("count_multiples_of_3(0) =", count_multiples_of_3(ag_scalar_i32(0)));
    ag_shutdown();
    return 0;
}
