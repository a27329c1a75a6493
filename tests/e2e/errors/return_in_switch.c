/* return under a staged condition inside a C switch, and continue from a
 * switch inside a staged loop. */
#include <ag.h>

AG_FUNCTION ag_tensor f(ag_tensor x, int mode)
{
    switch (mode) {
    case 0:
        if (ag_bool(ag_greater(x, 0)))
            return x;
        break;
    default:
        break;
    }
    while (ag_bool(ag_less(x, 10))) {
        switch (mode) {
        case 1:
            x = ag_add(x, 2);
            continue;
        default:
            x = ag_add(x, 1);
        }
    }
    return x;
}
