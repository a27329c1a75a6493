/* blend_main.c - calls blend() from the library agc_compile_aot made. */
#include "blend.h"

int main(void)
{
    ag_tensor x = ag_from_data(AG_F32, AG_SHAPE(2), ((float[]){0, 4}));
    ag_tensor t = ag_from_data(AG_F32, AG_SHAPE(2), ((float[]){4, 0}));
    ag_print("blend:", blend(x, t));
    ag_shutdown();
    return 0;
}
