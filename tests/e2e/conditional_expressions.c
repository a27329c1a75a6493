/* conditional_expressions: a ?: whose condition is staged becomes a staged
 * if assigning a temporary (AutoGraph's if_exp). */
#include "e2e.h"

AG_FUNCTION ag_tensor max_of(ag_tensor a, ag_tensor b)
{
    return ag_bool(ag_greater(a, b)) ? a : b;
}

/* Only the branch taken is computed. */
AG_FUNCTION ag_tensor abs_diff(ag_tensor a, ag_tensor b)
{
    ag_tensor d = ag_bool(ag_greater(a, b)) ? ag_sub(a, b) : ag_sub(b, a);
    return d;
}

/* Nested ?: */
AG_FUNCTION ag_tensor clamp10(ag_tensor x)
{
    return ag_bool(ag_less(x, 0)) ? ag_zeros_like(x)
           : ag_bool(ag_greater(x, 10)) ? ag_mul(ag_ones_like(x), 10)
                                        : x;
}

/* A ?: inside a macro's argument. */
AG_FUNCTION ag_tensor plus_max(ag_tensor a, ag_tensor b)
{
    return ag_add(ag_bool(ag_greater(a, b)) ? a : b, 1);
}

/* A ?: in a loop body. */
AG_FUNCTION ag_tensor zigzag(ag_tensor n)
{
    ag_tensor i = ag_scalar_i32(0), acc = ag_scalar_i32(0);
    while (ag_bool(ag_less(i, n))) {
        acc = ag_add(acc, ag_bool(ag_equal(ag_mod(i, 2), 0)) ? i : ag_neg(i));
        i = ag_add(i, 1);
    }
    return acc;
}

/* A C condition in a ?: stays C. */
AG_FUNCTION ag_tensor pick(ag_tensor a, ag_tensor b, int first)
{
    return first ? a : b;
}

int main(void)
{
    ag_print("max_of(3, 7) =", max_of(ag_scalar_i32(3), ag_scalar_i32(7)));
    ag_print("max_of(9, 2) =", max_of(ag_scalar_i32(9), ag_scalar_i32(2)));
    ag_print("abs_diff(3, 7) =", abs_diff(ag_scalar_i32(3), ag_scalar_i32(7)));
    ag_print("abs_diff(9, 2) =", abs_diff(ag_scalar_i32(9), ag_scalar_i32(2)));
    ag_print("clamp10(-5) =", clamp10(ag_scalar_f32(-5)));
    ag_print("clamp10(5) =", clamp10(ag_scalar_f32(5)));
    ag_print("clamp10(50) =", clamp10(ag_scalar_f32(50)));
    ag_print("plus_max(3, 7) =", plus_max(ag_scalar_i32(3), ag_scalar_i32(7)));
    ag_print("zigzag(5) =", zigzag(ag_scalar_i32(5)));
    ag_print("pick(1, 2, 1) =", pick(ag_scalar_i32(1), ag_scalar_i32(2), 1));
    ag_print("pick(1, 2, 0) =", pick(ag_scalar_i32(1), ag_scalar_i32(2), 0));
    ag_shutdown();
    return 0;
}
