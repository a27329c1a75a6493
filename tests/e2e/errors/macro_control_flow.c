/* Staged control flow written by a macro, and a staged condition hidden in
 * a macro: agc rewrites the source text, so it cannot convert them. */
#include <ag.h>

#define CLAMP_POSITIVE(v) if (ag_bool(ag_less(v, 0))) v = ag_zeros_like(v)
#define IS_BIG(v) ag_bool(ag_greater(v, 100))

AG_FUNCTION ag_tensor f(ag_tensor x)
{
    CLAMP_POSITIVE(x);
    if (IS_BIG(x))
        x = ag_div(x, 2);
    return x;
}
