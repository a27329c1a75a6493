/* A variable set in only one branch of a staged if, used after it. */
#include <ag.h>

AG_FUNCTION ag_tensor f(ag_tensor x)
{
    ag_tensor y;
    if (ag_bool(ag_greater(x, 0)))
        y = ag_mul(x, 2);
    return y;
}
