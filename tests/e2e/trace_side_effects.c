/* trace_side_effects: C side effects (printf) in an AG_FUNCTION run while
 * tracing only, once per new signature; ag_print runs at every call
 * (dsl.md, "Side effects"). Eagerly both run at every call
 * (trace_side_effects.eager.expected). */
#include "e2e.h"

AG_FUNCTION ag_tensor noisy_double(ag_tensor x)
{
    printf("tracing noisy_double\n");
    ag_print("running noisy_double on", x);
    return ag_mul(x, 2);
}

AG_FUNCTION ag_tensor noisy_loop(ag_tensor n)
{
    ag_tensor i = ag_scalar_i32(0);
    while (ag_bool(ag_less(i, n))) {
        printf("tracing the loop body\n");
        i = ag_add(i, 1);
    }
    return i;
}

int main(void)
{
    ag_print(noisy_double(ag_scalar_i32(1)));
    ag_print(noisy_double(ag_scalar_i32(2)));
    ag_print(noisy_double(ag_scalar_f32(3)));
    ag_print(noisy_loop(ag_scalar_i32(3)));
    ag_print(noisy_loop(ag_scalar_i32(2)));
    ag_shutdown();
    return 0;
}
