/* model.c - functions compiled ahead of time (agc --emit=obj,header) for
 * the test of callers' locations (run_aot_callers.sh): a tensor and a C
 * scalar parameter, a narrow integer after them, a struct of three
 * tensors returned through memory, and no parameters at all. */
#include <ag.h>

typedef struct triple {
    ag_tensor lo, mid, hi;
} triple;

AG_FUNCTION AG_SIGNATURE("f32[?], k=3")
ag_tensor scale(ag_tensor x, int k)
{
    return ag_mul(x, k);
}

AG_FUNCTION AG_SIGNATURE("f32[2,2], on=1")
triple spread(ag_tensor x, bool on)
{
    ag_tensor y = on ? ag_add(x, 1) : x;
    return (triple){ag_sub(y, 1), y, ag_add(y, 1)};
}

AG_FUNCTION AG_SIGNATURE("")
ag_tensor seven(void)
{
    return ag_scalar_i32(7);
}
