/*
 * blend.c - the filter of smooth.c, compiled ahead of time.
 *
 * Its AG_SIGNATURE fixes the dtype and rank of both parameters, so
 * `agc --emit=obj,header` traces it at build time and compiles it into
 * blend.o, with blend.h declaring it. blend_main.c calls it like any C
 * function, and the program links libag_rt only: no LLVM, no libclang,
 * no tracing at run time.
 */
#include <ag.h>

#include "smooth.h"

AG_FUNCTION AG_SIGNATURE("f32[?], f32[?]")
ag_tensor blend(ag_tensor x, ag_tensor target)
{
    while (ag_bool(ag_greater(ag_reduce_max(ag_abs(ag_sub(target, x)), AG_ALL_AXES, false),
                              SMOOTH_TOLERANCE)))
        x = ag_add(x, ag_mul(ag_sub(target, x), SMOOTH_RATE));
    return x;
}
