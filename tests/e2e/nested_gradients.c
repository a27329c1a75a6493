/* nested_gradients: gradients through staged control flow nested in staged
 * control flow, inside the AG_FUNCTION (one graph) and through a call on an
 * eager tape (the call is one op). The eager build runs C loops and ifs and
 * must print the same gradients: a loop inside a loop whose inner trip
 * count depends on the outer counter, an if inside a loop, a loop inside
 * an if. */
#include "e2e.h"

/* y -> tanh(1.1 y), i + 1 times at outer step i, n outer steps; then an if
 * on the sum picks y^2 or -y. */
AG_FUNCTION ag_tensor nested(ag_tensor x, ag_tensor n)
{
    ag_tensor y = x;
    ag_tensor i = ag_scalar_i32(0);
    while (ag_bool(ag_less(i, n))) {
        ag_tensor j = ag_scalar_i32(0);
        while (ag_bool(ag_less(j, ag_add(i, 1)))) {
            y = ag_tanh(ag_mul(y, 1.1));
            j = ag_add(j, 1);
        }
        if (ag_bool(ag_greater(ag_reduce_sum(y, AG_ALL_AXES, false), 0.5)))
            y = ag_mul(y, 0.9);
        i = ag_add(i, 1);
    }
    if (ag_bool(ag_greater(ag_reduce_sum(y, AG_ALL_AXES, false), 0))) {
        ag_tensor k = ag_scalar_i32(0);
        while (ag_bool(ag_less(k, 2))) {
            y = ag_mul(y, y);
            k = ag_add(k, 1);
        }
    } else {
        y = ag_neg(y);
    }
    return y;
}

/* the gradient inside the function: forward and backward one graph */
AG_FUNCTION ag_tensor nested_grad(ag_tensor x, ag_tensor n)
{
    ag_tape t = ag_tape_new();
    ag_tape_watch(t, x);
    ag_tensor y = nested(x, n);
    ag_tensor g = ag_tape_gradient(t, ag_reduce_sum(y, AG_ALL_AXES, false), x);
    ag_tape_free(t);
    return g;
}

int main(void)
{
    ag_tensor n = ag_scalar_i32(3);
    ag_tensor xs[2] = {ag_from_data(AG_F64, AG_SHAPE(3), ((const double[]){0.3, 0.5, 0.2})),
                       ag_from_data(AG_F64, AG_SHAPE(3), ((const double[]){-0.3, -0.5, 0.2}))};
    for (int k = 0; k < 2; k++) {
        ag_print("inside:", nested_grad(xs[k], n));
        /* an eager tape over the call */
        ag_tape t = ag_tape_new();
        ag_tape_watch(t, xs[k]);
        ag_tensor y = nested(xs[k], n);
        ag_print("call on a tape:", ag_tape_gradient(t, ag_reduce_sum(y, AG_ALL_AXES, false), xs[k]));
        ag_tape_free(t);
    }
    ag_shutdown();
    return 0;
}
