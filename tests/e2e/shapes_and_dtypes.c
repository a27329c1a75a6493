/* shapes_and_dtypes: one AG_FUNCTION traced for several input signatures
 * (shapes and dtypes), with staged control flow over them. */
#include "e2e.h"

/* Normalizes v so its largest element is at most 1, halving repeatedly. */
AG_FUNCTION ag_tensor normalize(ag_tensor v)
{
    ag_tensor halvings = ag_scalar_i32(0);
    while (ag_bool(ag_greater(ag_reduce_max(v, AG_ALL_AXES, false), 1))) {
        v = ag_div(v, 2);
        halvings = ag_add(halvings, 1);
    }
    ag_print("halvings:", halvings);
    return v;
}

/* Integer square root by counting, for i32 and i64. */
AG_FUNCTION ag_tensor isqrt(ag_tensor n)
{
    ag_tensor r = ag_zeros_like(n);
    while (ag_bool(ag_less_equal(ag_mul(ag_add(r, 1), ag_add(r, 1)), n)))
        r = ag_add(r, 1);
    return r;
}

int main(void)
{
    const float a[2] = {6, 2};
    const double b[2][2] = {{1, 40}, {3, 0.5}};
    ag_print("normalize([6 2]) =", normalize(ag_from_data(AG_F32, AG_SHAPE(2), a)));
    ag_print("normalize([[1 40] [3 0.5]]) =", normalize(ag_from_data(AG_F64, AG_SHAPE(2, 2), b)));
    ag_print("normalize(0.25) =", normalize(ag_scalar_f32(0.25)));
    ag_print("isqrt(50) =", isqrt(ag_scalar_i32(50)));
    ag_print("isqrt(1000000) =", isqrt(ag_scalar_i64(1000000)));
    ag_print("isqrt(0) =", isqrt(ag_scalar_i32(0)));
    ag_shutdown();
    return 0;
}
