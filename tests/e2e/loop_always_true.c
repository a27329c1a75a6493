/* loop_always_true: staged loops whose condition is always true, left only
 * by break or return, and a do/while whose condition is false at once (the
 * body runs exactly once). */
#include "e2e.h"

AG_FUNCTION AG_SIGNATURE("i32[], i32[]")
ag_tensor first_power_above(ag_tensor base, ag_tensor limit)
{
    ag_tensor p = ag_ones_like(base);
    while (ag_bool(ag_scalar_bool(true))) {
        p = ag_mul(p, base);
        if (ag_bool(ag_greater(p, limit)))
            break;
    }
    return p;
}

/* The integer square root, returned from inside the loop. */
AG_FUNCTION AG_SIGNATURE("i32[]")
ag_tensor isqrt(ag_tensor n)
{
    ag_tensor r = ag_scalar_i32(0);
    while (ag_bool(ag_scalar_bool(true))) {
        ag_tensor next = ag_add(r, 1);
        if (ag_bool(ag_greater(ag_mul(next, next), n)))
            return r;
        r = next;
    }
    return ag_scalar_i32(-1);
}

AG_FUNCTION AG_SIGNATURE("i32[]")
ag_tensor once(ag_tensor x)
{
    do {
        x = ag_mul(x, 10);
    } while (ag_bool(ag_scalar_bool(false)));
    return x;
}

int main(void)
{
    ag_print("first_power_above(3, 100) =", first_power_above(ag_scalar_i32(3), ag_scalar_i32(100)));
    ag_print("first_power_above(2, 1) =", first_power_above(ag_scalar_i32(2), ag_scalar_i32(1)));
    ag_print("isqrt(17) =", isqrt(ag_scalar_i32(17)));
    ag_print("isqrt(0) =", isqrt(ag_scalar_i32(0)));
    ag_print("isqrt(100) =", isqrt(ag_scalar_i32(100)));
    ag_print("once(4) =", once(ag_scalar_i32(4)));
    ag_shutdown();
    return 0;
}
