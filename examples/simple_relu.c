/*
 * simple_relu.c - a staged `if` on a tensor condition.
 *
 * The condition contains ag_bool(...), so when agc converts this function
 * both branches are traced into a graph conditional. Compiled as plain C
 * (as here), the `if` simply reads the scalar's value.
 */
#include <ag.h>

#include <stdio.h>

/* x must be a scalar: ag_bool needs a single value to decide. */
AG_FUNCTION ag_tensor simple_relu(ag_tensor x) {
    if (ag_bool(ag_greater(x, 0)))
        return x;
    else
        return ag_zeros_like(x);
}

int main(void)
{
    printf("simple_relu on scalars:\n");
    /* The C number 0 in ag_greater takes the dtype of x: f32 or i32. */
    ag_tensor inputs[] = {ag_scalar_f32(3.5f), ag_scalar_f32(-2.0f),
                          ag_scalar_i32(0), ag_scalar_i32(7)};
    for (int i = 0; i < 4; i++)
        ag_print("  x:", inputs[i], "-> simple_relu(x):", simple_relu(inputs[i]));

    /* For whole tensors there is no branch to take: ag_relu is elementwise. */
    printf("ag_relu on a vector:\n");
    static const float values[5] = {-2.0f, -0.5f, 0.0f, 1.5f, 3.0f};
    ag_tensor v = ag_from_data(AG_F32, AG_SHAPE(5), values);
    ag_print("  x:", v, "-> ag_relu(x):", ag_relu(v));

    ag_shutdown();
    return 0;
}
