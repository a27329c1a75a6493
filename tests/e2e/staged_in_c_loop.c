/* staged_in_c_loop: staged ifs inside C loops over ints: the C loop is
 * unrolled while tracing, each round adding its own graph conditional. */
#include "e2e.h"

/* Clamps each of the first k elements' running sum at a ceiling. */
AG_FUNCTION ag_tensor clamped_prefix(ag_tensor v, int k, ag_tensor ceiling)
{
    ag_tensor acc = ag_scalar_i32(0);
    for (int j = 0; j < k; j++) {
        acc = ag_add(acc, ag_gather(v, ag_scalar_i32(j), 0));
        if (ag_bool(ag_greater(acc, ceiling)))
            acc = ceiling;
    }
    return acc;
}

/* A C while whose condition reads a C counter, with a staged if inside. */
AG_FUNCTION ag_tensor halve_twice_if_big(ag_tensor x)
{
    int rounds = 0;
    while (rounds < 2) {
        if (ag_bool(ag_greater(x, 100)))
            x = ag_floordiv(x, 2);
        rounds++;
    }
    return x;
}

int main(void)
{
    const int32_t d[4] = {5, 9, 3, 20};
    ag_tensor v = ag_from_data(AG_I32, AG_SHAPE(4), d);
    ag_print("clamped_prefix(v, 4, 12) =", clamped_prefix(v, 4, ag_scalar_i32(12)));
    ag_print("clamped_prefix(v, 2, 100) =", clamped_prefix(v, 2, ag_scalar_i32(100)));
    ag_print("halve_twice_if_big(1000) =", halve_twice_if_big(ag_scalar_i32(1000)));
    ag_print("halve_twice_if_big(150) =", halve_twice_if_big(ag_scalar_i32(150)));
    ag_print("halve_twice_if_big(50) =", halve_twice_if_big(ag_scalar_i32(50)));
    ag_shutdown();
    return 0;
}
