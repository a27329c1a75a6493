/* loop_options_variable: ag_set_loop_options names a variable, not the
 * tensor it holds (issue 17, item 14), and may stand at the top of the
 * loop body, where it applies to that loop, as TensorFlow's
 * set_loop_options does. */
#include "e2e.h"

/* h starts as a copy of x; only h grows. Keyed by the tensor, the
 * invariant went to x (which holds the same tensor) and h failed. */
AG_FUNCTION AG_SIGNATURE("f32[2], i32[]") ag_tensor copy_grows(ag_tensor x, ag_tensor times)
{
    ag_tensor h = x;
    ag_set_loop_options(&h, AG_SHAPE(-1));
    for (ag_tensor i = ag_scalar_i32(0); ag_bool(ag_less(i, times)); i = ag_add(i, 1)) {
        x = ag_add(x, 1.0f);
        h = ag_concat(0, 2, ((ag_tensor[]){h, x}));
    }
    return ag_concat(0, 2, ((ag_tensor[]){x, h}));
}

/* The invariant at the top of the body it relaxes. */
AG_FUNCTION AG_SIGNATURE("f32[3], i32[]") ag_tensor doubling(ag_tensor x, ag_tensor times)
{
    ag_tensor i = ag_scalar_i32(0);
    while (ag_bool(ag_less(i, times))) {
        ag_set_loop_options(&x, AG_SHAPE(-1));
        x = ag_concat(0, 2, ((ag_tensor[]){x, x}));
        i = ag_add(i, 1);
    }
    return x;
}

/* Nested loops, each with its own invariant at the top of its body: the
 * rows of a table grow in the inner loop, the table in the outer. */
AG_FUNCTION AG_SIGNATURE("i32[]") ag_tensor triangle(ag_tensor n)
{
    ag_tensor all = ag_zeros(AG_I32, AG_SHAPE(0));
    for (ag_tensor i = ag_scalar_i32(1); ag_bool(ag_less_equal(i, n)); i = ag_add(i, 1)) {
        ag_set_loop_options(&all, AG_SHAPE(-1));
        ag_tensor row = ag_zeros(AG_I32, AG_SHAPE(0));
        for (ag_tensor j = ag_scalar_i32(0); ag_bool(ag_less(j, i)); j = ag_add(j, 1)) {
            ag_set_loop_options(&row, AG_SHAPE(-1));
            row = ag_concat(0, 2, ((ag_tensor[]){row, ag_reshape(i, AG_SHAPE(1))}));
        }
        all = ag_concat(0, 2, ((ag_tensor[]){all, row}));
    }
    return all;
}

int main(void)
{
    const float a[2] = {1, 2}, b[3] = {1, 2, 3};
    ag_print("copy_grows =", copy_grows(ag_from_data(AG_F32, AG_SHAPE(2), a), ag_scalar_i32(2)));
    e2e_print_error("copy_grows");
    ag_tensor d = doubling(ag_from_data(AG_F32, AG_SHAPE(3), b), ag_scalar_i32(2));
    ag_print("doubling =", d, "shape", ag_shape_of(d));
    e2e_print_error("doubling");
    ag_print("triangle(3) =", triangle(ag_scalar_i32(3)));
    e2e_print_error("triangle");
    ag_shutdown();
    return 0;
}
