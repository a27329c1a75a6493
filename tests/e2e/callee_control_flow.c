/* callee_control_flow: AG_FUNCTIONs with staged control flow called from
 * inside the staged control flow of another (inlined while tracing). */
#include "e2e.h"

AG_FUNCTION AG_SIGNATURE("i32[]")
ag_tensor steps_to_one(ag_tensor n)
{
    ag_tensor steps = ag_scalar_i32(0);
    while (ag_bool(ag_greater(n, 1))) {
        n = ag_bool(ag_equal(ag_mod(n, 2), 0)) ? ag_floordiv(n, 2) : ag_add(ag_mul(n, 3), 1);
        steps = ag_add(steps, 1);
    }
    return steps;
}

/* The start below limit with the longest Collatz sequence. */
AG_FUNCTION AG_SIGNATURE("i32[]")
ag_tensor longest_start(ag_tensor limit)
{
    ag_tensor best = ag_scalar_i32(1), best_steps = ag_scalar_i32(0);
    for (ag_tensor k = ag_scalar_i32(1); ag_bool(ag_less(k, limit)); k = ag_add(k, 1)) {
        ag_tensor s = steps_to_one(k);
        if (ag_bool(ag_greater(s, best_steps))) {
            best = k;
            best_steps = s;
        }
    }
    return ag_add(ag_mul(best, 1000), best_steps);
}

int main(void)
{
    ag_print("steps_to_one(6) =", steps_to_one(ag_scalar_i32(6)));
    ag_print("longest_start(10) =", longest_start(ag_scalar_i32(10)));
    ag_print("longest_start(30) =", longest_start(ag_scalar_i32(30)));
    ag_shutdown();
    return 0;
}
