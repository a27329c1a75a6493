/* A switch on a staged condition. */
#include <ag.h>

AG_FUNCTION ag_tensor f(ag_tensor x)
{
    switch (ag_bool(ag_greater(x, 0))) {
    case 1:
        x = ag_neg(x);
        break;
    default:
        break;
    }
    return x;
}
