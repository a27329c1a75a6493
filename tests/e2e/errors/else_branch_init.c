/* A variable set in the else branch only, used after the if. */
#include <ag.h>

AG_FUNCTION ag_tensor f(ag_tensor x)
{
    ag_tensor y;
    if (ag_bool(ag_greater(x, 0))) {
        x = ag_neg(x);
    } else {
        y = ag_mul(x, 2);
    }
    return ag_add(x, y);
}
