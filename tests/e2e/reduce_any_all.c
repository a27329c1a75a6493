/* reduce_any_all: ag_reduce_any and ag_reduce_all, as the message for a
 * non-scalar condition suggests: bool tensors reduced over every axis to
 * drive a loop and a branch, over one axis with and without keepdims, and
 * over an empty axis (any: false, all: true). */
#include "e2e.h"

/* Halves x until no element exceeds 1; counts the rounds. */
AG_FUNCTION AG_SIGNATURE("f32[4]")
ag_tensor halvings(ag_tensor x)
{
    ag_tensor rounds = ag_scalar_i32(0);
    while (ag_bool(ag_reduce_any(ag_greater(x, 1), AG_ALL_AXES, false))) {
        x = ag_div(x, 2);
        rounds = ag_add(rounds, 1);
    }
    return rounds;
}

/* 1 when every element is positive, else -1. */
AG_FUNCTION AG_SIGNATURE("i32[2,3]")
ag_tensor all_positive(ag_tensor m)
{
    if (ag_bool(ag_reduce_all(ag_greater(m, 0), AG_ALL_AXES, false)))
        return ag_scalar_i32(1);
    return ag_scalar_i32(-1);
}

/* Per row and per column, as i32 so the outputs print as numbers. */
AG_FUNCTION AG_SIGNATURE("bool[2,3]")
ag_tensor rows_any(ag_tensor b)
{
    return ag_cast(ag_reduce_any(b, 1, false), AG_I32);
}

AG_FUNCTION AG_SIGNATURE("bool[2,3]")
ag_tensor cols_all(ag_tensor b)
{
    return ag_cast(ag_reduce_all(b, 0, true), AG_I32);
}

/* Over an empty axis: [any, all] of a [2,0] tensor along axis 1. */
AG_FUNCTION AG_SIGNATURE("bool[2,0]")
ag_tensor empty_rows(ag_tensor b)
{
    ag_tensor parts[2] = {ag_cast(ag_reduce_any(b, 1, false), AG_I32),
                          ag_cast(ag_reduce_all(b, -1, false), AG_I32)};
    return ag_stack(0, 2, parts);
}

int main(void)
{
    const float big[4] = {3, 0.5f, 9, 1};
    const int32_t pos[6] = {1, 2, 3, 4, 5, 6}, mixed[6] = {1, 2, 3, 4, 0, 6};
    const uint8_t bits[6] = {0, 0, 0, 1, 0, 1};
    ag_print("halvings([3 0.5 9 1]) =", halvings(ag_from_data(AG_F32, AG_SHAPE(4), big)));
    ag_print("all_positive(pos) =", all_positive(ag_from_data(AG_I32, AG_SHAPE(2, 3), pos)));
    ag_print("all_positive(mixed) =",
             all_positive(ag_from_data(AG_I32, AG_SHAPE(2, 3), mixed)));
    ag_tensor b = ag_from_data(AG_BOOL, AG_SHAPE(2, 3), bits);
    ag_print("rows_any =", rows_any(b));
    ag_print("cols_all =", cols_all(b));
    ag_print("empty_rows =", empty_rows(ag_zeros(AG_BOOL, AG_SHAPE(2, 0))));
    ag_shutdown();
    return 0;
}
