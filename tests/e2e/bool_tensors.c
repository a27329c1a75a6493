/* bool_tensors: boolean tensors as loop variables and as conditions. */
#include "e2e.h"

/* Toggles a flag n times. */
AG_FUNCTION AG_SIGNATURE("i32[]")
ag_tensor toggle(ag_tensor n)
{
    ag_tensor on = ag_scalar_bool(false);
    ag_tensor i = ag_scalar_i32(0);
    while (ag_bool(ag_less(i, n))) {
        on = ag_logical_not(on);
        i = ag_add(i, 1);
    }
    return on;
}

/* All elements positive, by a loop with an early exit. */
AG_FUNCTION AG_SIGNATURE("f32[3]")
ag_tensor all_positive(ag_tensor v)
{
    ag_tensor n = ag_cast(ag_size(v), AG_I32);
    ag_tensor ok = ag_scalar_bool(true);
    ag_tensor i = ag_scalar_i32(0);
    while (ag_bool(ok) && ag_bool(ag_less(i, n))) {
        ok = ag_greater(ag_gather(v, i, 0), 0);
        i = ag_add(i, 1);
    }
    return ok;
}

int main(void)
{
    ag_print("toggle(3) =", toggle(ag_scalar_i32(3)));
    ag_print("toggle(4) =", toggle(ag_scalar_i32(4)));
    const float a[3] = {1, 2, 3}, b[3] = {1, -2, 3};
    ag_print("all_positive([1 2 3]) =", all_positive(ag_from_data(AG_F32, AG_SHAPE(3), a)));
    ag_print("all_positive([1 -2 3]) =", all_positive(ag_from_data(AG_F32, AG_SHAPE(3), b)));
    ag_shutdown();
    return 0;
}
