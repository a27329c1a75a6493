/* A C pointer and a C struct changed inside staged control flow and used
 * after it: like C scalars, their values are fixed while tracing. */
#include <ag.h>

struct counter {
    int n;
};

AG_FUNCTION ag_tensor f(ag_tensor x, int k)
{
    const char *label = "small";
    struct counter c = {0};
    if (ag_bool(ag_greater(x, k))) {
        label = "large";
        c = (struct counter){1};
    }
    ag_print(label, x);
    return ag_add(x, c.n);
}
