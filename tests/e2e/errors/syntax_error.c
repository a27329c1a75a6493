/* libclang's own errors are reported the same way, and stop agc. */
#include <ag.h>

AG_FUNCTION ag_tensor f(ag_tensor x)
{
    ag_tensor y = ag_add(x, 1)
    return y;
}
