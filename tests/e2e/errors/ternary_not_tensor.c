/* A ?: with a staged condition that gives a C value. */
#include <ag.h>

AG_FUNCTION ag_tensor f(ag_tensor x)
{
    int k = ag_bool(ag_greater(x, 0)) ? 2 : 3;
    return ag_mul(x, k);
}
