/* blend_main.c - calls blend(), compiled ahead of time into blend.o. */
#include <stdio.h>

#include "blend.h"

int main(void)
{
    const float start[4] = {0, 1, 4, -2};
    const float goal[4] = {1, 1, 1, 1};
    ag_tensor x = ag_from_data(AG_F32, AG_SHAPE(4), start);
    ag_tensor target = ag_from_data(AG_F32, AG_SHAPE(4), goal);
    ag_print("blended:", blend(x, target));
    ag_shutdown();
    return 0;
}
