/* A staged loop's condition that assigns, and a staged ?: in the header of
 * a C loop. */
#include <ag.h>

AG_FUNCTION ag_tensor f(ag_tensor x, int n)
{
    while (ag_bool(ag_less(x = ag_add(x, 1), 10)))
        x = ag_mul(x, 2);
    for (int k = 0; k < n; k++, x = ag_bool(ag_greater(x, 50)) ? ag_sub(x, 50) : x)
        x = ag_add(x, k);
    return x;
}
