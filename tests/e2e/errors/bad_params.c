/* AG_FUNCTION signatures agc rejects: a struct result with a field that is
 * not an ag_tensor, a parameter without a name, a variadic function. */
#include <ag.h>

typedef struct result {
    ag_tensor value;
    int count;
} result;

AG_FUNCTION result f(ag_tensor x)
{
    return (result){x, 1};
}

AG_FUNCTION ag_tensor g(ag_tensor x, int)
{
    return x;
}

AG_FUNCTION ag_tensor h(ag_tensor x, ...)
{
    return x;
}
