/* A tensor used directly as a C condition. */
#include <ag.h>

AG_FUNCTION ag_tensor f(ag_tensor x)
{
    if (ag_greater(x, 0))
        return x;
    return ag_neg(x);
}
