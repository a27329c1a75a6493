/* assertion: ag_assert in straight-line code and inside staged control
 * flow checks its condition at every call (AutoGraph's assert_statements). */
#include "e2e.h"

AG_FUNCTION ag_tensor safe_sqrt(ag_tensor x)
{
    ag_assert(ag_greater_equal(x, 0), "x must be non-negative");
    return ag_sqrt(x);
}

/* The assertion inside a loop runs at each iteration. */
AG_FUNCTION ag_tensor checked_count(ag_tensor n)
{
    ag_tensor i = ag_scalar_i32(0);
    while (ag_bool(ag_less(i, n))) {
        ag_assert(ag_less(i, 5), "i must stay below 5");
        i = ag_add(i, 1);
    }
    return i;
}

/* The assertion in a branch runs only when the branch is taken. */
AG_FUNCTION ag_tensor checked_branch(ag_tensor x)
{
    ag_tensor r = x;
    if (ag_bool(ag_less(x, 0))) {
        ag_assert(ag_greater(x, -10), "x must be above -10 when negative");
        r = ag_neg(x);
    }
    return r;
}

int main(void)
{
    ag_set_error_mode(AG_ERRORS_RETURN);
    ag_print("safe_sqrt(16) =", safe_sqrt(ag_scalar_f32(16)));
    e2e_print_error("after safe_sqrt(16)");
    (void)safe_sqrt(ag_scalar_f32(-4));
    e2e_print_error("safe_sqrt(-4)");
    ag_print("checked_count(3) =", checked_count(ag_scalar_i32(3)));
    e2e_print_error("after checked_count(3)");
    (void)checked_count(ag_scalar_i32(8));
    e2e_print_error("checked_count(8)");
    ag_print("checked_branch(4) =", checked_branch(ag_scalar_i32(4)));
    ag_print("checked_branch(-4) =", checked_branch(ag_scalar_i32(-4)));
    e2e_print_error("after checked_branch(-4)");
    (void)checked_branch(ag_scalar_i32(-40));
    e2e_print_error("checked_branch(-40)");
    ag_shutdown();
    return 0;
}
