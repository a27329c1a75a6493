/* A C int changed inside a staged loop: its value is fixed while tracing. */
#include <ag.h>

AG_FUNCTION ag_tensor count(ag_tensor n)
{
    int steps = 0;
    ag_tensor i = ag_scalar_i32(0);
    while (ag_bool(ag_less(i, n))) {
        steps = steps + 1;
        i = ag_add(i, 1);
    }
    return ag_scalar_i32(steps);
}
