/* branch_type_mismatch: a staged if whose branches give a variable
 * different dtypes fails while tracing, naming the variable (AutoGraph
 * raises the same); eagerly only the branch taken runs
 * (branch_type_mismatch.eager.expected). */
#include "e2e.h"

AG_FUNCTION ag_tensor half_or_same(ag_tensor x)
{
    ag_tensor y = x;
    if (ag_bool(ag_greater(x, 10)))
        y = ag_div(ag_cast(x, AG_F32), 2);
    return y;
}

int main(void)
{
    ag_set_error_mode(AG_ERRORS_RETURN);
    ag_tensor r = half_or_same(ag_scalar_i32(20));
    if (!ag_is_error(r))
        ag_print("half_or_same(20) =", r);
    e2e_print_error("half_or_same(20)");
    ag_shutdown();
    return 0;
}
