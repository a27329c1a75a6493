/* A staged loop that may return, and no return after it. */
#include <ag.h>

AG_FUNCTION ag_tensor f(ag_tensor x)
{
    while (ag_bool(ag_greater(x, 0))) {
        if (ag_bool(ag_greater(x, 100)))
            return x;
        x = ag_sub(x, 1);
    }
    x = ag_neg(x);
}
