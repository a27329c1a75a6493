/* cond_basic: staged if / else if / else (AutoGraph's cond_basic). */
#include "e2e.h"

/* A variable declared without a value and set in both branches. */
AG_FUNCTION AG_SIGNATURE("i32[]")
ag_tensor abs_value(ag_tensor x)
{
    ag_tensor y;
    if (ag_bool(ag_less(x, 0)))
        y = ag_neg(x);
    else
        y = x;
    return y;
}

/* No else: the variable keeps its value. */
AG_FUNCTION AG_SIGNATURE("i32[], i32[]")
ag_tensor clip_high(ag_tensor x, ag_tensor hi)
{
    if (ag_bool(ag_greater(x, hi)))
        x = hi;
    return x;
}

AG_FUNCTION AG_SIGNATURE("f32[]")
ag_tensor sign_class(ag_tensor x)
{
    ag_tensor r;
    if (ag_bool(ag_greater(x, 0)))
        r = ag_scalar_i32(1);
    else if (ag_bool(ag_less(x, 0)))
        r = ag_scalar_i32(-1);
    else
        r = ag_scalar_i32(0);
    return r;
}

/* Two branch outputs; a C int read in a branch. */
AG_FUNCTION AG_SIGNATURE("i32[], scale=2")
ag_tensor two_outputs(ag_tensor x, int scale)
{
    ag_tensor a, b;
    if (ag_bool(ag_greater(x, 0))) {
        a = ag_mul(x, scale);
        b = ag_add(x, 1);
    } else {
        a = ag_neg(x);
        b = ag_sub(x, 1);
    }
    return ag_add(ag_mul(a, 10), b);
}

/* Side effects in the branches: only the branch taken prints. */
AG_FUNCTION AG_SIGNATURE("i32[]")
void report(ag_tensor x)
{
    if (ag_bool(ag_greater_equal(x, 10)))
        ag_print("big", x);
    else
        ag_print("small", x);
}

int main(void)
{
    ag_print("abs_value(-3) =", abs_value(ag_scalar_i32(-3)));
    ag_print("abs_value(4) =", abs_value(ag_scalar_i32(4)));
    ag_print("clip_high(7, 5) =", clip_high(ag_scalar_i32(7), ag_scalar_i32(5)));
    ag_print("clip_high(2, 5) =", clip_high(ag_scalar_i32(2), ag_scalar_i32(5)));
    ag_print("sign_class(2.5) =", sign_class(ag_scalar_f32(2.5)));
    ag_print("sign_class(-2.5) =", sign_class(ag_scalar_f32(-2.5)));
    ag_print("sign_class(0) =", sign_class(ag_scalar_f32(0)));
    ag_print("two_outputs(3, 2) =", two_outputs(ag_scalar_i32(3), 2));
    ag_print("two_outputs(-3, 2) =", two_outputs(ag_scalar_i32(-3), 2));
    report(ag_scalar_i32(12));
    report(ag_scalar_i32(3));
    ag_shutdown();
    return 0;
}
