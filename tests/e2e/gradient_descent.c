/* gradient_descent: a training-style loop: a variable updated in a staged
 * loop until the gradient is small, with the step count carried. */
#include "e2e.h"

/* Minimizes (w - target)^2 with learning rate 0.25; returns the steps. */
AG_FUNCTION ag_tensor fit(ag_variable w, ag_tensor target)
{
    ag_tensor steps = ag_scalar_i32(0);
    ag_tensor grad = ag_mul(ag_sub(ag_variable_read(w), target), 2);
    while (ag_bool(ag_greater(ag_abs(grad), 0.001))) {
        ag_assign_sub(w, ag_mul(grad, 0.25));
        grad = ag_mul(ag_sub(ag_variable_read(w), target), 2);
        steps = ag_add(steps, 1);
    }
    return steps;
}

int main(void)
{
    ag_variable w = ag_variable_new(ag_scalar_f64(0));
    ag_print("steps:", fit(w, ag_scalar_f64(3)));
    ag_print("w:", ag_variable_read(w));
    ag_print("steps again:", fit(w, ag_scalar_f64(3)));
    ag_variable_free(w);
    ag_shutdown();
    return 0;
}
