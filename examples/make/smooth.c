/*
 * smooth.c - exponential smoothing towards a target, until converged.
 *
 * The loop's condition is a tensor (ag_bool), so agc stages it: the whole
 * loop becomes one graph loop, traced once.
 */
#include <ag.h>

#include <stdio.h>

#include "smooth.h"

/* Moves x towards target by SMOOTH_RATE of the gap until every element is
 * within SMOOTH_TOLERANCE; returns the final x. */
AG_FUNCTION ag_tensor smooth(ag_tensor x, ag_tensor target)
{
    ag_tensor steps = ag_scalar_i32(0);
    while (ag_bool(ag_greater(ag_reduce_max(ag_abs(ag_sub(target, x)), AG_ALL_AXES, false),
                              SMOOTH_TOLERANCE))) {
        x = ag_add(x, ag_mul(ag_sub(target, x), SMOOTH_RATE));
        steps = ag_add(steps, 1);
    }
    ag_print("steps:", steps);
    return x;
}

int main(void)
{
    const float start[3] = {0, 1, 4};
    const float goal[3] = {1, 1, 1};
    ag_tensor x = ag_from_data(AG_F32, AG_SHAPE(3), start);
    ag_tensor target = ag_from_data(AG_F32, AG_SHAPE(3), goal);
    ag_print("smoothed:", smooth(x, target));
    ag_shutdown();
    return 0;
}
