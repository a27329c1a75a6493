/* calls_and_state: AG_FUNCTIONs calling each other (the callee is inlined
 * while tracing), C scalar parameters (one trace per value) and variables
 * updated inside staged loops. */
#include "e2e.h"

AG_FUNCTION ag_tensor square(ag_tensor x)
{
    return ag_mul(x, x);
}

/* Calls another AG_FUNCTION in a staged loop. */
AG_FUNCTION ag_tensor sum_squares_to(ag_tensor n)
{
    ag_tensor i = ag_scalar_i32(1), acc = ag_scalar_i32(0);
    while (ag_bool(ag_less_equal(i, n))) {
        acc = ag_add(acc, square(i));
        i = ag_add(i, 1);
    }
    return acc;
}

/* A C double parameter: a trace-time constant. */
AG_FUNCTION ag_tensor scaled(ag_tensor x, double factor)
{
    return ag_mul(x, factor);
}

/* A variable updated in a staged loop: updates keep program order. */
AG_FUNCTION void accumulate(ag_variable total, ag_tensor n)
{
    ag_tensor i = ag_scalar_i32(0);
    while (ag_bool(ag_less(i, n))) {
        ag_assign_add(total, i);
        i = ag_add(i, 1);
    }
}

/* A variable read in a staged condition. */
AG_FUNCTION ag_tensor over_budget(ag_variable spent, ag_tensor limit)
{
    ag_tensor r = ag_scalar_i32(0);
    if (ag_bool(ag_greater(ag_variable_read(spent), limit)))
        r = ag_scalar_i32(1);
    return r;
}

typedef enum mode { MODE_ADD = 1, MODE_MUL = 2 } mode;

/* An enum parameter chooses the graph. */
AG_FUNCTION ag_tensor combine(ag_tensor a, ag_tensor b, mode m)
{
    if (m == MODE_ADD)
        return ag_add(a, b);
    return ag_mul(a, b);
}

int main(void)
{
    ag_print("sum_squares_to(4) =", sum_squares_to(ag_scalar_i32(4)));
    ag_print("scaled(3, 0.5) =", scaled(ag_scalar_f32(3), 0.5));
    ag_print("scaled(3, 4) =", scaled(ag_scalar_f32(3), 4));
    ag_variable total = ag_variable_new(ag_scalar_i32(0));
    accumulate(total, ag_scalar_i32(4));
    ag_print("after accumulate(4):", ag_variable_read(total));
    accumulate(total, ag_scalar_i32(2));
    ag_print("after accumulate(2):", ag_variable_read(total));
    ag_print("over_budget(total, 5) =", over_budget(total, ag_scalar_i32(5)));
    ag_print("over_budget(total, 10) =", over_budget(total, ag_scalar_i32(10)));
    ag_variable_free(total);
    ag_print("combine(3, 4, add) =", combine(ag_scalar_i32(3), ag_scalar_i32(4), MODE_ADD));
    ag_print("combine(3, 4, mul) =", combine(ag_scalar_i32(3), ag_scalar_i32(4), MODE_MUL));
    ag_shutdown();
    return 0;
}
