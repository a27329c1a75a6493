/* early_return: return statements inside staged control flow
 * (AutoGraph's early_return): a <return value> and a <returned> flag. */
#include "e2e.h"

AG_FUNCTION AG_SIGNATURE("f32[]")
ag_tensor relu(ag_tensor x)
{
    if (ag_bool(ag_greater(x, 0)))
        return x;
    else
        return ag_zeros_like(x);
}

/* A return in one branch, and one after the if. */
AG_FUNCTION AG_SIGNATURE("f32[]")
ag_tensor clamp_negative(ag_tensor x)
{
    if (ag_bool(ag_less(x, 0)))
        return ag_scalar_f32(-1);
    x = ag_mul(x, 2);
    return x;
}

/* Several returns along an else-if chain. */
AG_FUNCTION AG_SIGNATURE("i32[]")
ag_tensor grade(ag_tensor score)
{
    if (ag_bool(ag_greater_equal(score, 90)))
        return ag_scalar_i32(4);
    else if (ag_bool(ag_greater_equal(score, 80)))
        return ag_scalar_i32(3);
    else if (ag_bool(ag_greater_equal(score, 70)))
        return ag_scalar_i32(2);
    return ag_scalar_i32(0);
}

/* A void function returning early. */
AG_FUNCTION AG_SIGNATURE("i32[]")
void maybe_print(ag_tensor x)
{
    if (ag_bool(ag_less(x, 0)))
        return;
    ag_print("positive:", x);
}

/* A struct of tensors returned from both branches. */
typedef struct minmax {
    ag_tensor lo, hi;
} minmax;

AG_FUNCTION AG_SIGNATURE("i32[], i32[]")
minmax ordered(ag_tensor a, ag_tensor b)
{
    if (ag_bool(ag_less_equal(a, b)))
        return (minmax){a, b};
    return (minmax){b, a};
}

int main(void)
{
    ag_print("relu(-2) =", relu(ag_scalar_f32(-2)));
    ag_print("relu(3) =", relu(ag_scalar_f32(3)));
    ag_print("clamp_negative(-3) =", clamp_negative(ag_scalar_f32(-3)));
    ag_print("clamp_negative(4) =", clamp_negative(ag_scalar_f32(4)));
    ag_print("grade(95) =", grade(ag_scalar_i32(95)));
    ag_print("grade(85) =", grade(ag_scalar_i32(85)));
    ag_print("grade(75) =", grade(ag_scalar_i32(75)));
    ag_print("grade(10) =", grade(ag_scalar_i32(10)));
    maybe_print(ag_scalar_i32(-1));
    maybe_print(ag_scalar_i32(5));
    minmax m = ordered(ag_scalar_i32(3), ag_scalar_i32(1));
    ag_print("ordered(3, 1) =", m.lo, m.hi);
    m = ordered(ag_scalar_i32(2), ag_scalar_i32(9));
    ag_print("ordered(2, 9) =", m.lo, m.hi);
    ag_shutdown();
    return 0;
}
