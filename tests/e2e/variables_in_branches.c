/* variables_in_branches: ag_variable updates inside staged branches and
 * loops keep program order: a read after an assignment sees it, a branch
 * not taken updates nothing, and the state persists between calls. */
#include "e2e.h"

/* Keeps the largest and smallest values seen. */
AG_FUNCTION void record(ag_variable hi, ag_variable lo, ag_tensor x)
{
    if (ag_bool(ag_greater(x, ag_variable_read(hi))))
        ag_assign(hi, x);
    else if (ag_bool(ag_less(x, ag_variable_read(lo))))
        ag_assign(lo, x);
}

/* Takes `take` from the pool while enough is left: the condition reads
 * what the body assigned. */
AG_FUNCTION ag_tensor drain(ag_variable pool, ag_tensor take)
{
    ag_tensor taken = ag_scalar_i32(0);
    while (ag_bool(ag_greater_equal(ag_variable_read(pool), take))) {
        ag_assign_sub(pool, take);
        taken = ag_add(taken, 1);
    }
    return ag_add(ag_mul(taken, 100), ag_variable_read(pool));
}

int main(void)
{
    ag_variable hi = ag_variable_new(ag_scalar_i32(0));
    ag_variable lo = ag_variable_new(ag_scalar_i32(0));
    const int32_t xs[5] = {5, -3, 2, 9, -3};
    for (int i = 0; i < 5; i++) {
        record(hi, lo, ag_scalar_i32(xs[i]));
        ag_print("after", ag_scalar_i32(xs[i]), ": hi", ag_variable_read(hi), "lo",
                 ag_variable_read(lo));
    }
    ag_variable pool = ag_variable_new(ag_scalar_i32(23));
    ag_print("drain(pool, 5) =", drain(pool, ag_scalar_i32(5)));
    ag_print("drain(pool, 5) =", drain(pool, ag_scalar_i32(5)));
    ag_print("drain(pool, 1) =", drain(pool, ag_scalar_i32(1)));
    ag_print("pool =", ag_variable_read(pool));
    ag_variable_free(hi);
    ag_variable_free(lo);
    ag_variable_free(pool);
    ag_shutdown();
    return 0;
}
