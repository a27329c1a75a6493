/* main.c - calls the functions of model.c through the header agc wrote:
 * right calls print their results, wrong ones print the error, which
 * names this file's line (and the definition in model.c), or, built
 * with -DAGC_NO_CALLER_LINES, the definition only. */
#include <stdio.h>

#include <ag.h>

typedef struct triple {
    ag_tensor lo, mid, hi;
} triple;

#include "model.h"

static void report(const char *what, ag_tensor t)
{
    if (ag_is_error(t))
        printf("%s: %s\n", what, ag_last_error());
    else
        ag_print(what, t);
}

int main(void)
{
    ag_set_error_mode(AG_ERRORS_RETURN);
    ag_tensor v = ag_from_data(AG_F32, AG_SHAPE(3), ((float[]){1, 2, 3}));
    ag_tensor m = ag_from_data(AG_F32, AG_SHAPE(2, 2), ((float[]){1, 2, 3, 4}));
    report("scale", scale(v, 3));
    triple t = spread(m, true);
    report("spread.hi", t.hi);
    report("seven", seven());

    report("wrong dims", scale(m, 3));
    report("wrong value", scale(v, 4));
    report("wrong dtype", spread(ag_cast(m, AG_F64), true).lo);
    report("wrong bool", spread(m, false).mid);
    ag_tensor freed = ag_ones(AG_F32, AG_SHAPE(3));
    ag_free(freed);
    report("freed", scale(freed, 3));
    ag_shutdown();
    return 0;
}
