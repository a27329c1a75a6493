/* bool_conditions: conditions on tensors that are not comparisons: an
 * integer and a float tested by ag_bool (true when non-zero), bool
 * variables made by ag_logical_* and tested alone or with ||, and a bool
 * tensor carried by a loop and tested with &&. */
#include "e2e.h"

/* The loop runs while x is non-zero. */
AG_FUNCTION AG_SIGNATURE("i32[]")
ag_tensor popcount(ag_tensor x)
{
    ag_tensor bits = ag_scalar_i32(0);
    while (ag_bool(x)) {
        bits = ag_add(bits, ag_mod(x, 2));
        x = ag_floordiv(x, 2);
    }
    return bits;
}

/* A code made of the tests x passes; negative when floor(x) is zero. */
AG_FUNCTION AG_SIGNATURE("f32[]")
ag_tensor describe(ag_tensor x)
{
    ag_tensor positive = ag_greater(x, 0);
    ag_tensor small = ag_less(ag_abs(x), 1);
    ag_tensor code = ag_scalar_i32(0);
    if (ag_bool(x))
        code = ag_add(code, 1);
    if (ag_bool(ag_logical_and(positive, small)))
        code = ag_add(code, 10);
    if (ag_bool(positive) || ag_bool(small))
        code = ag_add(code, 100);
    if (!ag_bool(ag_logical_or(positive, small)))
        code = ag_add(code, 1000);
    return ag_bool(ag_floor(x)) ? code : ag_neg(code);
}

/* The index of the first element equal to the one before it, or -1. */
AG_FUNCTION AG_SIGNATURE("i32[?]")
ag_tensor first_repeat(ag_tensor v)
{
    ag_tensor n = ag_cast(ag_size(v), AG_I32);
    ag_tensor found = ag_scalar_bool(false);
    ag_tensor i = ag_scalar_i32(1);
    while (!ag_bool(found) && ag_bool(ag_less(i, n))) {
        found = ag_equal(ag_gather(v, i, 0), ag_gather(v, ag_sub(i, 1), 0));
        i = ag_add(i, 1);
    }
    return ag_bool(found) ? ag_sub(i, 1) : ag_scalar_i32(-1);
}

int main(void)
{
    ag_print("popcount(13) =", popcount(ag_scalar_i32(13)));
    ag_print("popcount(0) =", popcount(ag_scalar_i32(0)));
    ag_print("popcount(255) =", popcount(ag_scalar_i32(255)));
    ag_print("describe(0.5) =", describe(ag_scalar_f32(0.5f)));
    ag_print("describe(0) =", describe(ag_scalar_f32(0)));
    ag_print("describe(-3) =", describe(ag_scalar_f32(-3)));
    ag_print("describe(2.5) =", describe(ag_scalar_f32(2.5f)));
    const int32_t a[4] = {1, 3, 3, 5}, b[3] = {1, 2, 3};
    ag_print("first_repeat([1 3 3 5]) =", first_repeat(ag_from_data(AG_I32, AG_SHAPE(4), a)));
    ag_print("first_repeat([1 2 3]) =", first_repeat(ag_from_data(AG_I32, AG_SHAPE(3), b)));
    ag_shutdown();
    return 0;
}
