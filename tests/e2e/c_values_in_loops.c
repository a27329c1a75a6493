/* c_values_in_loops: C values (ints, doubles, arrays, pointers, structs)
 * read inside staged control flow are copied into the state, read-only;
 * they are trace-time constants. */
#include "e2e.h"

typedef struct config {
    int step;
    double scale;
} config;

AG_FUNCTION ag_tensor walk(ag_tensor n, int step, double scale)
{
    const int32_t offsets[3] = {100, 200, 300};
    const int32_t *second = &offsets[1];
    config c = {step, scale};
    ag_tensor i = ag_scalar_i32(0), acc = ag_scalar_f32(0);
    while (ag_bool(ag_less(i, n))) {
        acc = ag_add(acc, ag_mul(ag_cast(i, AG_F32), c.scale));
        i = ag_add(i, c.step);
    }
    if (ag_bool(ag_greater(acc, 10)))
        acc = ag_add(acc, offsets[0] + *second);
    return acc;
}

int main(void)
{
    ag_print("walk(5, 1, 1.0) =", walk(ag_scalar_i32(5), 1, 1.0));
    ag_print("walk(10, 3, 0.5) =", walk(ag_scalar_i32(10), 3, 0.5));
    ag_print("walk(0, 1, 2.0) =", walk(ag_scalar_i32(0), 1, 2.0));
    ag_shutdown();
    return 0;
}
