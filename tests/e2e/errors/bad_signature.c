/* AG_FUNCTION parameters and results must be tensors or C scalars. */
#include <ag.h>

AG_FUNCTION int *f(ag_tensor x, const char *name)
{
    (void)x;
    (void)name;
    return 0;
}
