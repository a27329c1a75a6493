/* loop_scoping: which variables a staged loop carries (AutoGraph's
 * loop_scoping): only tensors assigned in the body and read after it or
 * by a later iteration. */
#include "e2e.h"

/* A temporary declared in the body stays local to each iteration. */
AG_FUNCTION AG_SIGNATURE("i32[]")
ag_tensor sum_of_squares(ag_tensor n)
{
    ag_tensor total = ag_scalar_i32(0);
    for (ag_tensor i = ag_scalar_i32(1); ag_bool(ag_less_equal(i, n)); i = ag_add(i, 1)) {
        ag_tensor sq = ag_mul(i, i);
        total = ag_add(total, sq);
    }
    return total;
}

/* `cube` is declared outside but set before each use and dead after the
 * loop: not a loop variable, so a loop that never runs is fine. */
AG_FUNCTION AG_SIGNATURE("i32[]")
ag_tensor sum_of_cubes(ag_tensor n)
{
    ag_tensor total = ag_scalar_i32(0), cube;
    ag_tensor i = ag_scalar_i32(0);
    while (ag_bool(ag_less(i, n))) {
        i = ag_add(i, 1);
        cube = ag_mul(ag_mul(i, i), i);
        total = ag_add(total, cube);
    }
    return total;
}

/* An inner block shadows the loop variable. */
AG_FUNCTION AG_SIGNATURE("i32[]")
ag_tensor shadowed(ag_tensor n)
{
    ag_tensor i = ag_scalar_i32(0), acc = ag_scalar_i32(0);
    while (ag_bool(ag_less(i, n))) {
        {
            ag_tensor i = ag_scalar_i32(100);
            acc = ag_add(acc, i);
        }
        i = ag_add(i, 1);
    }
    return ag_add(acc, i);
}

/* A C constant local to the body. */
AG_FUNCTION AG_SIGNATURE("f32[2]")
ag_tensor weighted(ag_tensor x)
{
    ag_tensor acc = ag_zeros_like(x);
    while (ag_bool(ag_less(ag_reduce_sum(acc, AG_ALL_AXES, false), 20))) {
        int w = 2;
        acc = ag_add(acc, ag_mul(x, w));
    }
    return acc;
}

/* A C array read inside a staged loop. */
AG_FUNCTION AG_SIGNATURE("i32[]")
ag_tensor table_sum(ag_tensor n)
{
    const int32_t table[4] = {10, 20, 30, 40};
    ag_tensor t = ag_from_data(AG_I32, AG_SHAPE(4), table);
    ag_tensor acc = ag_scalar_i32(0), i = ag_scalar_i32(0);
    while (ag_bool(ag_less(i, n))) {
        acc = ag_add(acc, ag_gather(t, i, 0));
        i = ag_add(i, 1);
    }
    return acc;
}

int main(void)
{
    ag_print("sum_of_squares(4) =", sum_of_squares(ag_scalar_i32(4)));
    ag_print("sum_of_cubes(3) =", sum_of_cubes(ag_scalar_i32(3)));
    ag_print("sum_of_cubes(0) =", sum_of_cubes(ag_scalar_i32(0)));
    ag_print("shadowed(3) =", shadowed(ag_scalar_i32(3)));
    const float d[2] = {1, 2};
    ag_print("weighted([1 2]) =", weighted(ag_from_data(AG_F32, AG_SHAPE(2), d)));
    ag_print("table_sum(3) =", table_sum(ag_scalar_i32(3)));
    ag_shutdown();
    return 0;
}
