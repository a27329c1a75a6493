/* tensor_array_matrices: tensor arrays whose elements are matrices: written
 * in a staged loop and stacked into a rank-3 tensor, written from the
 * slices of a rank-3 tensor and read back in a second loop (AutoGraph's
 * list conversions with TensorArray elements of rank 2). */
#include "e2e.h"

/* m, m^2, ..., m^n stacked: shape [n, 2, 2]. */
AG_FUNCTION AG_SIGNATURE("f32[2,2], i32[]")
ag_tensor powers(ag_tensor m, ag_tensor n)
{
    ag_tensor_array ta = ag_tensor_array_new(AG_F32, 0, true);
    ag_tensor p = m;
    for (ag_tensor i = ag_scalar_i32(0); ag_bool(ag_less(i, n)); i = ag_add(i, 1)) {
        ta = ag_tensor_array_write(ta, i, p);
        p = ag_matmul(p, m);
    }
    return ag_tensor_array_stack(ta);
}

/* The matrix of stack with the largest trace, read back from an array. */
AG_FUNCTION AG_SIGNATURE("f32[3,2,2]")
ag_tensor largest_trace(ag_tensor stack)
{
    ag_tensor n = ag_cast(ag_gather(ag_shape_of(stack), ag_scalar_i32(0), 0), AG_I32);
    ag_tensor_array ta = ag_tensor_array_new(AG_F32, 0, true);
    for (ag_tensor i = ag_scalar_i32(0); ag_bool(ag_less(i, n)); i = ag_add(i, 1))
        ta = ag_tensor_array_write(ta, i, ag_gather(stack, i, 0));
    ag_tensor eye = ag_eye(2, AG_F32);
    ag_tensor best = ag_tensor_array_read(ta, ag_scalar_i32(0));
    ag_tensor best_trace = ag_reduce_sum(ag_mul(best, eye), AG_ALL_AXES, false);
    for (ag_tensor i = ag_scalar_i32(1); ag_bool(ag_less(i, n)); i = ag_add(i, 1)) {
        ag_tensor m = ag_tensor_array_read(ta, i);
        ag_tensor trace = ag_reduce_sum(ag_mul(m, eye), AG_ALL_AXES, false);
        if (ag_bool(ag_greater(trace, best_trace))) {
            best = m;
            best_trace = trace;
        }
    }
    return best;
}

/* The running sums of the matrices taken when a matrix has a positive
 * trace: the array is written in a staged branch (a branch output too). */
AG_FUNCTION AG_SIGNATURE("f32[3,2,2]")
ag_tensor positive_prefix_sums(ag_tensor stack)
{
    ag_tensor n = ag_cast(ag_gather(ag_shape_of(stack), ag_scalar_i32(0), 0), AG_I32);
    ag_tensor_array out = ag_tensor_array_new(AG_F32, 0, true);
    ag_tensor sum = ag_zeros(AG_F32, AG_SHAPE(2, 2));
    ag_tensor k = ag_scalar_i32(0);
    for (ag_tensor i = ag_scalar_i32(0); ag_bool(ag_less(i, n)); i = ag_add(i, 1)) {
        ag_tensor m = ag_gather(stack, i, 0);
        sum = ag_add(sum, m);
        if (ag_bool(ag_greater(ag_reduce_sum(ag_mul(m, ag_eye(2, AG_F32)), AG_ALL_AXES, false),
                               0))) {
            out = ag_tensor_array_write(out, k, sum);
            k = ag_add(k, 1);
        }
    }
    return ag_tensor_array_stack(out);
}

int main(void)
{
    const float fib[4] = {1, 1, 1, 0};
    ag_tensor m = ag_from_data(AG_F32, AG_SHAPE(2, 2), fib);
    ag_tensor p = powers(m, ag_scalar_i32(3));
    ag_print("powers(m, 3) =", p);
    ag_print("shape:", ag_shape_of(p));
    ag_print("powers(m, 1) =", powers(m, ag_scalar_i32(1)));
    const float data[12] = {1, 2, 3, 4, 9, 0, 0, -1, 2, 2, 2, 2};
    ag_tensor stack = ag_from_data(AG_F32, AG_SHAPE(3, 2, 2), data);
    ag_print("largest_trace(stack) =", largest_trace(stack));
    ag_print("largest_trace(powers(m, 3)) =", largest_trace(p));
    const float signs[12] = {1, 0, 0, 1, -5, 1, 1, 0, 0, 2, 2, 1};
    ag_print("positive_prefix_sums =",
             positive_prefix_sums(ag_from_data(AG_F32, AG_SHAPE(3, 2, 2), signs)));
    ag_shutdown();
    return 0;
}
