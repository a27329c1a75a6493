/*
 * squash.c - a staged while loop.
 *
 * The loop condition contains ag_bool(...), so agc turns the loop into a
 * graph while loop with `x` as its loop-carried value. ag_print runs at
 * every iteration in both builds (a printf in the body would run only once
 * per trace in the staged build).
 */
#include <ag.h>

#include <stdio.h>

AG_FUNCTION ag_tensor squash(ag_tensor x) {             /* the guide's while loop */
    while (ag_bool(ag_greater(ag_reduce_sum(x, AG_ALL_AXES, false), 1))) {
        ag_print(x);
        x = ag_tanh(x);
    }
    return x;
}

/* Copies `values` into a tensor and squashes it; the scope frees every
 * tensor the call makes (one per loop iteration and more). */
static void run(ag_shape shape, const float *values)
{
    ag_scope_push();
    ag_tensor x = ag_from_data(AG_F32, shape, values);
    ag_print("squash(x) with x =", x);
    ag_print("result:", squash(x));
    ag_scope_pop();
}

int main(void)
{
    static const float one_step[1] = {5.0f};
    static const float three_steps[2] = {0.5f, 1.0f};
    static const float no_step[2] = {0.25f, -0.5f};
    run(AG_SCALAR, one_step);
    run(AG_SHAPE(2), three_steps);
    run(AG_SHAPE(2), no_step); /* the sum is already <= 1 */
    ag_shutdown();
    return 0;
}
