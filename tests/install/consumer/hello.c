/* A program built against an installed libag, as a user would. */
#include <ag.h>

int main(void)
{
    ag_tensor x = ag_from_data(AG_F32, AG_SHAPE(2, 2), ((float[]){1, 2, 3, 4}));
    ag_tensor y = ag_relu(ag_sub(ag_matmul(x, x), 10));
    ag_print("y =", y);
    ag_shutdown();
    return 0;
}
