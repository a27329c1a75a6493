/* A staged return in the else branch only, and no return after the if. */
#include <ag.h>

AG_FUNCTION ag_tensor f(ag_tensor x)
{
    if (ag_bool(ag_greater(x, 0)))
        x = ag_neg(x);
    else
        return x;
}
