/* assert_staged: ag_assert inside staged control flow fails the call at
 * run time only on the path that runs it: in an else branch, in a loop
 * inside a then branch, and in an AG_FUNCTION called from a staged loop
 * (AutoGraph's assert_statements). The failing calls are made with
 * AG_ERRORS_RETURN; later calls work again. */
#include "e2e.h"

AG_FUNCTION ag_tensor safe_div(ag_tensor a, ag_tensor b)
{
    ag_tensor r;
    if (ag_bool(ag_not_equal(b, 0))) {
        r = ag_floordiv(a, b);
    } else {
        ag_assert(ag_equal(a, 0), "only 0 / 0 may divide by zero");
        r = ag_scalar_i32(0);
    }
    return r;
}

/* With check, every element must be positive. */
AG_FUNCTION ag_tensor checked_sum(ag_tensor v, ag_tensor check)
{
    ag_tensor n = ag_cast(ag_size(v), AG_I32);
    ag_tensor total = ag_scalar_i32(0);
    if (ag_bool(check)) {
        for (ag_tensor i = ag_scalar_i32(0); ag_bool(ag_less(i, n)); i = ag_add(i, 1)) {
            ag_tensor e = ag_gather(v, i, 0);
            ag_assert(ag_greater(e, 0), "every element must be positive");
            total = ag_add(total, e);
        }
    } else {
        total = ag_reduce_sum(v, AG_ALL_AXES, false);
    }
    return total;
}

AG_FUNCTION ag_tensor checked_sqrt(ag_tensor x)
{
    ag_assert(ag_greater_equal(x, 0), "checked_sqrt needs x >= 0");
    return ag_sqrt(x);
}

AG_FUNCTION ag_tensor sqrt_sum(ag_tensor v)
{
    ag_tensor n = ag_cast(ag_size(v), AG_I32);
    ag_tensor s = ag_scalar_f32(0);
    ag_tensor i = ag_scalar_i32(0);
    while (ag_bool(ag_less(i, n))) {
        s = ag_add(s, checked_sqrt(ag_gather(v, i, 0)));
        i = ag_add(i, 1);
    }
    return s;
}

int main(void)
{
    ag_set_error_mode(AG_ERRORS_RETURN);
    ag_print("safe_div(7, 2) =", safe_div(ag_scalar_i32(7), ag_scalar_i32(2)));
    ag_print("safe_div(0, 0) =", safe_div(ag_scalar_i32(0), ag_scalar_i32(0)));
    e2e_print_error("after safe_div(0, 0)");
    (void)safe_div(ag_scalar_i32(5), ag_scalar_i32(0));
    e2e_print_error("safe_div(5, 0)");
    ag_print("safe_div(-9, 4) =", safe_div(ag_scalar_i32(-9), ag_scalar_i32(4)));

    const int32_t good[3] = {1, 2, 3}, bad[3] = {1, -2, 3};
    ag_tensor g = ag_from_data(AG_I32, AG_SHAPE(3), good);
    ag_tensor b = ag_from_data(AG_I32, AG_SHAPE(3), bad);
    ag_print("checked_sum(good, true) =", checked_sum(g, ag_scalar_bool(true)));
    ag_print("checked_sum(bad, false) =", checked_sum(b, ag_scalar_bool(false)));
    e2e_print_error("after checked_sum(bad, false)");
    (void)checked_sum(b, ag_scalar_bool(true));
    e2e_print_error("checked_sum(bad, true)");

    const float squares[3] = {4, 9, 16}, mixed[2] = {4, -1}, ones[2] = {1, 1};
    ag_print("sqrt_sum([4 9 16]) =", sqrt_sum(ag_from_data(AG_F32, AG_SHAPE(3), squares)));
    (void)sqrt_sum(ag_from_data(AG_F32, AG_SHAPE(2), mixed));
    e2e_print_error("sqrt_sum([4 -1])");
    ag_print("sqrt_sum([1 1]) =", sqrt_sum(ag_from_data(AG_F32, AG_SHAPE(2), ones)));
    e2e_print_error("after sqrt_sum([1 1])");
    ag_shutdown();
    return 0;
}
