/* A staged loop with a break: its flag starts as a constant that agc's
 * generated code makes (tests/lit/tools/locations.ir). */
#include <ag.h>

AG_FUNCTION ag_tensor first_above(ag_tensor x, ag_tensor lim)
{
    ag_tensor i = ag_scalar_i32(0);
    while (ag_bool(ag_less(i, 10))) {
        if (ag_bool(ag_greater(ag_mul(i, i), lim)))
            break;
        i = ag_add(i, 1);
    }
    return ag_add(x, ag_cast(i, AG_F32));
}
