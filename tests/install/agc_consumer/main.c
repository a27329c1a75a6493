/* main.c - calls the staged smooth() and says how often it traced. */
#include <stdio.h>

#include "smooth.h"

int main(void)
{
    ag_tensor x = ag_from_data(AG_F32, AG_SHAPE(2), ((float[]){4, 4}));
    ag_print("smooth:", smooth(x));
    printf("traces: %d\n", ag_function_trace_count("smooth"));
    ag_shutdown();
    return 0;
}
