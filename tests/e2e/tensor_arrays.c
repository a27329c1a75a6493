/* tensor_arrays: lists built in loops are tensor arrays (AutoGraph's
 * list conversions: TensorArray). The array's handle is a loop variable. */
#include "e2e.h"

AG_FUNCTION ag_tensor squares(ag_tensor n)
{
    ag_tensor_array ta = ag_tensor_array_new(AG_F32, 0, true);
    ag_tensor i = ag_scalar_i32(0);
    while (ag_bool(ag_less(i, n))) {
        ta = ag_tensor_array_write(ta, i, ag_cast(ag_mul(i, i), AG_F32));
        i = ag_add(i, 1);
    }
    return ag_tensor_array_stack(ta);
}

/* Written in both branches of an if, inside a loop. */
AG_FUNCTION ag_tensor signs(ag_tensor v)
{
    ag_tensor n = ag_cast(ag_size(v), AG_I32);
    ag_tensor_array out = ag_tensor_array_new(AG_I32, 0, true);
    for (ag_tensor i = ag_scalar_i32(0); ag_bool(ag_less(i, n)); i = ag_add(i, 1)) {
        if (ag_bool(ag_less(ag_gather(v, i, 0), 0)))
            out = ag_tensor_array_write(out, i, ag_scalar_i32(-1));
        else
            out = ag_tensor_array_write(out, i, ag_scalar_i32(1));
    }
    return ag_tensor_array_stack(out);
}

/* Rows of a matrix collected in a loop, then stacked. */
AG_FUNCTION ag_tensor running_rows(ag_tensor n)
{
    ag_tensor_array rows = ag_tensor_array_new(AG_I32, 0, true);
    ag_tensor row = ag_zeros(AG_I32, AG_SHAPE(3));
    ag_tensor i = ag_scalar_i32(0);
    while (ag_bool(ag_less(i, n))) {
        row = ag_add(row, i);
        rows = ag_tensor_array_write(rows, i, row);
        i = ag_add(i, 1);
    }
    return ag_tensor_array_stack(rows);
}

/* A tensor array passed in, read in a staged loop. */
AG_FUNCTION ag_tensor sum_array(ag_tensor_array ta, ag_tensor n)
{
    ag_tensor total = ag_scalar_f32(0);
    ag_tensor i = ag_scalar_i32(0);
    while (ag_bool(ag_less(i, n))) {
        total = ag_add(total, ag_tensor_array_read(ta, i));
        i = ag_add(i, 1);
    }
    return total;
}

int main(void)
{
    ag_print("squares(5) =", squares(ag_scalar_i32(5)));
    const int32_t d[4] = {3, -1, 0, -7};
    ag_print("signs([3 -1 0 -7]) =", signs(ag_from_data(AG_I32, AG_SHAPE(4), d)));
    ag_print("running_rows(3) =", running_rows(ag_scalar_i32(3)));
    ag_tensor_array ta = ag_tensor_array_new(AG_F32, 0, true);
    ta = ag_tensor_array_write(ta, 0, ag_scalar_f32(1.5));
    ta = ag_tensor_array_write(ta, 1, ag_scalar_f32(2.5));
    ta = ag_tensor_array_write(ta, 2, ag_scalar_f32(3));
    ag_print("sum_array([1.5 2.5 3], 3) =", sum_array(ta, ag_scalar_i32(3)));
    ag_print("sum_array([1.5 2.5 3], 2) =", sum_array(ta, ag_scalar_i32(2)));
    ag_shutdown();
    return 0;
}
