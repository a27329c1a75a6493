/* loop_dtype_change: a loop variable must keep its dtype and shape across
 * iterations when the loop is staged (AutoGraph raises the same errors).
 * Eagerly the loops just run (loop_dtype_change.eager.expected). */
#include "e2e.h"

AG_FUNCTION ag_tensor to_float(ag_tensor x, ag_tensor n)
{
    ag_tensor i = ag_scalar_i32(0);
    while (ag_bool(ag_less(i, n))) {
        x = ag_cast(ag_add(x, 1), AG_F32);
        i = ag_add(i, 1);
    }
    return x;
}

AG_FUNCTION ag_tensor doubling(ag_tensor x, ag_tensor n)
{
    ag_tensor i = ag_scalar_i32(0);
    while (ag_bool(ag_less(i, n))) {
        ag_tensor parts[2] = {x, x};
        x = ag_concat(0, 2, parts);
        i = ag_add(i, 1);
    }
    return x;
}

/* With a shape invariant the shape may change. */
AG_FUNCTION ag_tensor doubling_relaxed(ag_tensor x, ag_tensor n)
{
    ag_tensor i = ag_scalar_i32(0);
    ag_set_loop_options(&x, AG_SHAPE(-1));
    while (ag_bool(ag_less(i, n))) {
        ag_tensor parts[2] = {x, x};
        x = ag_concat(0, 2, parts);
        i = ag_add(i, 1);
    }
    return x;
}

int main(void)
{
    ag_set_error_mode(AG_ERRORS_RETURN);
    ag_tensor r = to_float(ag_scalar_i32(1), ag_scalar_i32(2));
    if (!ag_is_error(r))
        ag_print("to_float(1, 2) =", r);
    e2e_print_error("to_float");
    const int32_t one[1] = {7};
    r = doubling(ag_from_data(AG_I32, AG_SHAPE(1), one), ag_scalar_i32(2));
    if (!ag_is_error(r))
        ag_print("doubling([7], 2) =", r);
    e2e_print_error("doubling");
    r = doubling_relaxed(ag_from_data(AG_I32, AG_SHAPE(1), one), ag_scalar_i32(2));
    ag_print("doubling_relaxed([7], 2) =", r);
    e2e_print_error("doubling_relaxed");
    ag_shutdown();
    return 0;
}
