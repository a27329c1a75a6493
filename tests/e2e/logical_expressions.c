/* logical_expressions: &&, || and ! between staged conditions stay lazy:
 * the right operand runs only when it decides (AutoGraph's and_/or_/not_). */
#include "e2e.h"

AG_FUNCTION ag_tensor in_range(ag_tensor x, ag_tensor lo, ag_tensor hi)
{
    ag_tensor r = ag_scalar_i32(0);
    if (ag_bool(ag_greater_equal(x, lo)) && ag_bool(ag_less(x, hi)))
        r = ag_scalar_i32(1);
    return r;
}

AG_FUNCTION ag_tensor outside(ag_tensor x, ag_tensor lo, ag_tensor hi)
{
    ag_tensor r = ag_scalar_i32(0);
    if (ag_bool(ag_less(x, lo)) || !ag_bool(ag_less(x, hi)))
        r = ag_scalar_i32(1);
    return r;
}

/* The right operand would index out of range: it must not run. */
AG_FUNCTION ag_tensor safe_lookup(ag_tensor v, ag_tensor i)
{
    ag_tensor n = ag_cast(ag_size(v), AG_I32);
    if (ag_bool(ag_less(i, n)) && ag_bool(ag_greater(ag_gather(v, i, 0), 10)))
        return ag_scalar_i32(1);
    return ag_scalar_i32(0);
}

/* A C condition decided while tracing, and a staged one. */
AG_FUNCTION ag_tensor gated(ag_tensor x, int enabled)
{
    ag_tensor r = x;
    if (enabled && ag_bool(ag_greater(x, 0)))
        r = ag_mul(x, 100);
    return r;
}

/* ! of a tensor that is not bool: non-zero is true. */
AG_FUNCTION ag_tensor is_zero(ag_tensor x)
{
    ag_tensor r = ag_scalar_i32(0);
    if (!ag_bool(x))
        r = ag_scalar_i32(1);
    return r;
}

/* && in a loop condition. */
AG_FUNCTION ag_tensor count_up(ag_tensor a, ag_tensor b)
{
    ag_tensor i = ag_scalar_i32(0);
    while (ag_bool(ag_less(i, a)) && ag_bool(ag_less(i, b)))
        i = ag_add(i, 1);
    return i;
}

/* Three operands: (a || b) && c. */
AG_FUNCTION ag_tensor either_and(ag_tensor a, ag_tensor b, ag_tensor c)
{
    ag_tensor r = ag_scalar_i32(0);
    if ((ag_bool(a) || ag_bool(b)) && ag_bool(c))
        r = ag_scalar_i32(1);
    return r;
}

int main(void)
{
    ag_print("in_range(5, 0, 10) =", in_range(ag_scalar_i32(5), ag_scalar_i32(0), ag_scalar_i32(10)));
    ag_print("in_range(10, 0, 10) =", in_range(ag_scalar_i32(10), ag_scalar_i32(0), ag_scalar_i32(10)));
    ag_print("in_range(-1, 0, 10) =", in_range(ag_scalar_i32(-1), ag_scalar_i32(0), ag_scalar_i32(10)));
    ag_print("outside(5, 0, 10) =", outside(ag_scalar_i32(5), ag_scalar_i32(0), ag_scalar_i32(10)));
    ag_print("outside(10, 0, 10) =", outside(ag_scalar_i32(10), ag_scalar_i32(0), ag_scalar_i32(10)));
    ag_print("outside(-1, 0, 10) =", outside(ag_scalar_i32(-1), ag_scalar_i32(0), ag_scalar_i32(10)));
    const int32_t data[3] = {5, 20, 7};
    ag_tensor v = ag_from_data(AG_I32, AG_SHAPE(3), data);
    ag_print("safe_lookup(v, 1) =", safe_lookup(v, ag_scalar_i32(1)));
    ag_print("safe_lookup(v, 2) =", safe_lookup(v, ag_scalar_i32(2)));
    ag_print("safe_lookup(v, 7) =", safe_lookup(v, ag_scalar_i32(7)));
    ag_print("gated(3, 1) =", gated(ag_scalar_i32(3), 1));
    ag_print("gated(3, 0) =", gated(ag_scalar_i32(3), 0));
    ag_print("gated(-3, 1) =", gated(ag_scalar_i32(-3), 1));
    ag_print("is_zero(0) =", is_zero(ag_scalar_i32(0)));
    ag_print("is_zero(5) =", is_zero(ag_scalar_i32(5)));
    ag_print("count_up(3, 5) =", count_up(ag_scalar_i32(3), ag_scalar_i32(5)));
    ag_print("count_up(7, 2) =", count_up(ag_scalar_i32(7), ag_scalar_i32(2)));
    ag_tensor t = ag_scalar_bool(true), f = ag_scalar_bool(false);
    ag_print("either_and(f, t, t) =", either_and(f, t, t));
    ag_print("either_and(t, f, f) =", either_and(t, f, f));
    ag_print("either_and(f, f, t) =", either_and(f, f, t));
    ag_shutdown();
    return 0;
}
