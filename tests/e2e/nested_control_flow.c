/* nested_control_flow: staged loops and ifs nested in each other, and in
 * C loops that are unrolled (AutoGraph's nested_control_flow). */
#include "e2e.h"

/* The sum over i < n of 0 + 1 + ... + (i - 1). */
AG_FUNCTION ag_tensor triangle_sums(ag_tensor n)
{
    ag_tensor total = ag_scalar_i32(0);
    ag_tensor i = ag_scalar_i32(0);
    while (ag_bool(ag_less(i, n))) {
        ag_tensor j = ag_scalar_i32(0);
        while (ag_bool(ag_less(j, i))) {
            total = ag_add(total, j);
            j = ag_add(j, 1);
        }
        i = ag_add(i, 1);
    }
    return total;
}

/* An if in a loop in an if. */
AG_FUNCTION ag_tensor collatz_steps(ag_tensor n)
{
    ag_tensor steps = ag_scalar_i32(0);
    if (ag_bool(ag_greater(n, 0))) {
        while (ag_bool(ag_not_equal(n, 1))) {
            if (ag_bool(ag_equal(ag_mod(n, 2), 0)))
                n = ag_floordiv(n, 2);
            else
                n = ag_add(ag_mul(n, 3), 1);
            steps = ag_add(steps, 1);
        }
    } else {
        steps = ag_scalar_i32(-1);
    }
    return steps;
}

/* break leaves the inner loop only. */
AG_FUNCTION ag_tensor count_pairs(ag_tensor n)
{
    ag_tensor count = ag_scalar_i32(0);
    for (ag_tensor i = ag_scalar_i32(0); ag_bool(ag_less(i, n)); i = ag_add(i, 1)) {
        for (ag_tensor j = ag_scalar_i32(0); ag_bool(ag_less(j, n)); j = ag_add(j, 1)) {
            if (ag_bool(ag_greater(j, i)))
                break;
            count = ag_add(count, 1);
        }
    }
    return count;
}

/* A staged loop inside a C loop: one graph loop per round. */
AG_FUNCTION ag_tensor repeated_halving(ag_tensor x, int rounds)
{
    for (int r = 0; r < rounds; r++) {
        while (ag_bool(ag_greater(x, 1)))
            x = ag_floordiv(x, 2);
        x = ag_mul(x, 10);
    }
    return x;
}

/* A staged if inside a C if: the C condition is decided while tracing. */
AG_FUNCTION ag_tensor choose(ag_tensor x, int mode)
{
    ag_tensor r = x;
    if (mode == 1) {
        if (ag_bool(ag_greater(x, 0)))
            r = ag_mul(x, 2);
    } else {
        if (ag_bool(ag_greater(x, 0)))
            r = ag_neg(x);
        else
            r = ag_scalar_i32(0);
    }
    return r;
}

int main(void)
{
    ag_print("triangle_sums(5) =", triangle_sums(ag_scalar_i32(5)));
    ag_print("collatz_steps(6) =", collatz_steps(ag_scalar_i32(6)));
    ag_print("collatz_steps(27) =", collatz_steps(ag_scalar_i32(27)));
    ag_print("collatz_steps(1) =", collatz_steps(ag_scalar_i32(1)));
    ag_print("collatz_steps(0) =", collatz_steps(ag_scalar_i32(0)));
    ag_print("count_pairs(4) =", count_pairs(ag_scalar_i32(4)));
    ag_print("repeated_halving(100, 2) =", repeated_halving(ag_scalar_i32(100), 2));
    ag_print("repeated_halving(100, 0) =", repeated_halving(ag_scalar_i32(100), 0));
    ag_print("choose(5, 1) =", choose(ag_scalar_i32(5), 1));
    ag_print("choose(5, 2) =", choose(ag_scalar_i32(5), 2));
    ag_print("choose(-5, 2) =", choose(ag_scalar_i32(-5), 2));
    ag_shutdown();
    return 0;
}
