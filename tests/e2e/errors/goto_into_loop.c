/* goto into a staged loop. */
#include <ag.h>

AG_FUNCTION ag_tensor f(ag_tensor x)
{
    goto inside;
    while (ag_bool(ag_less(x, 10))) {
inside:
        x = ag_add(x, 1);
    }
    return x;
}
