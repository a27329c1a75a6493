/* ag_bool() outside a condition, and inside an unsupported expression. */
#include <ag.h>

AG_FUNCTION ag_tensor f(ag_tensor x)
{
    bool positive = ag_bool(ag_greater(x, 0));
    if (ag_bool(x) == true)
        x = ag_neg(x);
    return positive ? x : ag_neg(x);
}
