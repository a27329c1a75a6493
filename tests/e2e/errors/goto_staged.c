/* goto out of and into staged control flow. */
#include <ag.h>

AG_FUNCTION ag_tensor f(ag_tensor x)
{
    if (ag_bool(ag_greater(x, 0))) {
        x = ag_neg(x);
        goto done;
    }
    x = ag_add(x, 1);
done:
    return x;
}
