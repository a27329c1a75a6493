/* smooth.c - staged by agc_stage_sources: the staged loop halves x until
 * its sum is at most SMOOTH_LIMIT, then scales it by SMOOTH_SCALE (a
 * compile definition of the target). */
#include "smooth.h"
#include "steps.h"

AG_FUNCTION ag_tensor smooth(ag_tensor x)
{
    while (ag_bool(ag_greater(ag_reduce_sum(x, AG_ALL_AXES, false), SMOOTH_LIMIT)))
        x = ag_mul(x, 0.5f);
    return ag_mul(x, SMOOTH_SCALE);
}
