/* break and return under a staged condition inside a C loop. */
#include <ag.h>

AG_FUNCTION ag_tensor f(ag_tensor x)
{
    for (int k = 0; k < 3; k++) {
        if (ag_bool(ag_greater(x, 10)))
            break;
        x = ag_mul(x, 2);
    }
    for (int k = 0; k < 3; k++) {
        if (ag_bool(ag_less(x, 0)))
            return x;
    }
    return x;
}
