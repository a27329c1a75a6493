/* blend.c - compiled ahead of time by agc_compile_aot. */
#include <ag.h>
#include "smooth.h" /* from the target's include directories */

AG_FUNCTION AG_SIGNATURE("f32[?], f32[?]")
ag_tensor blend(ag_tensor x, ag_tensor target)
{
    return ag_add(ag_mul(x, 0.25f), ag_mul(target, 0.75f));
}
