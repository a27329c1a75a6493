/* array_gradients: gradients through tensor arrays. A list built in a C
 * loop (straight-line code when staged) differentiates inside the
 * AG_FUNCTION, forward and backward one graph. A tensor array that a
 * staged while loop carries differentiates too, its gradient a variable
 * of the backward loop, and eagerly op by op: both print the same
 * (array_gradients.expected, array_gradients.eager.expected). */
#include "e2e.h"

/* d/dx sum(x + x^2 + x^3) = 1 + 2x + 3x^2 */
AG_FUNCTION ag_tensor powers_grad(ag_tensor x)
{
    ag_tape t = ag_tape_new();
    ag_tape_watch(t, x);
    ag_tensor_array ta = ag_tensor_array_new(AG_F64, 0, true);
    ag_tensor p = x;
    for (int i = 0; i < 3; i++) {
        ta = ag_tensor_array_write(ta, i, p);
        p = ag_mul(p, x);
    }
    ag_tensor last = ag_tensor_array_read(ta, 2);
    ag_tensor s = ag_add(ag_reduce_sum(ag_tensor_array_stack(ta), AG_ALL_AXES, false),
                         ag_reduce_sum(last, AG_ALL_AXES, false));
    ag_tensor g = ag_tape_gradient(t, s, x);
    ag_tape_free(t);
    return g;
}

/* the same powers, n of them, from a staged loop */
AG_FUNCTION ag_tensor loop_powers_grad(ag_tensor x, ag_tensor n)
{
    ag_tape t = ag_tape_new();
    ag_tape_watch(t, x);
    ag_tensor_array ta = ag_tensor_array_new(AG_F64, 0, true);
    ag_tensor p = x;
    ag_tensor i = ag_scalar_i32(0);
    while (ag_bool(ag_less(i, n))) {
        ta = ag_tensor_array_write(ta, i, p);
        p = ag_mul(p, x);
        i = ag_add(i, 1);
    }
    ag_tensor s = ag_reduce_sum(ag_tensor_array_stack(ta), AG_ALL_AXES, false);
    ag_tensor g = ag_tape_gradient(t, s, x);
    ag_tape_free(t);
    return g;
}

int main(void)
{
    ag_set_error_mode(AG_ERRORS_RETURN);
    ag_tensor x = ag_from_data(AG_F64, AG_SHAPE(2), ((const double[]){0.5, -1}));
    ag_print("powers_grad:", powers_grad(x)); /* 1 + 2x + 6x^2 */
    ag_tensor g = loop_powers_grad(x, ag_scalar_i32(3));
    if (!ag_is_error(g))
        ag_print("loop_powers_grad:", g);
    e2e_print_error("loop_powers_grad");
    ag_shutdown();
    return 0;
}
