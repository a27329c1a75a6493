/* array_loop_gradients: gradients through tensor arrays that staged
 * control flow carries. An RNN writes each step's output to an array and
 * the loss is over the stacked array; a staged if writes the array's
 * last row in one of two ways; nested staged loops fill one array. When
 * staged, each array's gradient (a dense tensor, row i for element i) is
 * carried by the backward loop or cond; eagerly the tape sees every op.
 * Both print the same. */
#include "e2e.h"

/* d/dw of sum(stack(h_1..h_n)^2), h_k = tanh(h_{k-1} w) */
AG_FUNCTION ag_tensor rnn_grad(ag_tensor x, ag_tensor w, ag_tensor n)
{
    ag_tape t = ag_tape_new();
    ag_tape_watch(t, w);
    ag_tensor_array ta = ag_tensor_array_new(AG_F64, 0, true);
    ag_tensor h = x;
    ag_tensor i = ag_scalar_i32(0);
    while (ag_bool(ag_less(i, n))) {
        h = ag_tanh(ag_matmul(h, w));
        ta = ag_tensor_array_write(ta, i, h);
        i = ag_add(i, 1);
    }
    ag_tensor s = ag_reduce_sum(ag_square(ag_tensor_array_stack(ta)), AG_ALL_AXES, false);
    ag_tensor g = ag_tape_gradient(t, s, w);
    ag_tape_free(t);
    return g;
}

/* d/dx of sum(stack([x^2, 3x or e^x])): 2x + 3 or 2x + e^x */
AG_FUNCTION ag_tensor branch_grad(ag_tensor x, ag_tensor flag)
{
    ag_tape t = ag_tape_new();
    ag_tape_watch(t, x);
    ag_tensor_array ta = ag_tensor_array_new(AG_F64, 2, false);
    ta = ag_tensor_array_write(ta, 0, ag_mul(x, x));
    if (ag_bool(ag_greater(flag, 0)))
        ta = ag_tensor_array_write(ta, 1, ag_mul(x, 3.0));
    else
        ta = ag_tensor_array_write(ta, 1, ag_exp(x));
    ag_tensor s = ag_reduce_sum(ag_tensor_array_stack(ta), AG_ALL_AXES, false);
    ag_tensor g = ag_tape_gradient(t, s, x);
    ag_tape_free(t);
    return g;
}

/* ta[i*m + j] = x^(i+1) * (j+1) for i < n, j < m; d/dx of the sum:
 * sum_i (i+1) x^i * sum_j (j+1) */
AG_FUNCTION ag_tensor nested_grad(ag_tensor x, ag_tensor n, ag_tensor m)
{
    ag_tape t = ag_tape_new();
    ag_tape_watch(t, x);
    ag_tensor_array ta = ag_tensor_array_new(AG_F64, 0, true);
    ag_tensor p = x;
    ag_tensor i = ag_scalar_i32(0);
    while (ag_bool(ag_less(i, n))) {
        ag_tensor j = ag_scalar_i32(0);
        while (ag_bool(ag_less(j, m))) {
            ag_tensor k = ag_add(ag_mul(i, m), j);
            ta = ag_tensor_array_write(ta, k, ag_mul(p, ag_cast(ag_add(j, 1), AG_F64)));
            j = ag_add(j, 1);
        }
        p = ag_mul(p, x);
        i = ag_add(i, 1);
    }
    ag_tensor s = ag_reduce_sum(ag_tensor_array_stack(ta), AG_ALL_AXES, false);
    ag_tensor g = ag_tape_gradient(t, s, x);
    ag_tape_free(t);
    return g;
}

int main(void)
{
    ag_set_error_mode(AG_ERRORS_RETURN);
    ag_tensor x = ag_from_data(AG_F64, AG_SHAPE(1, 2), ((const double[]){0.5, -0.25}));
    ag_tensor w = ag_from_data(AG_F64, AG_SHAPE(2, 2), ((const double[]){0.75, -0.5, 0.25, 1}));
    ag_print("rnn_grad n=1:", rnn_grad(x, w, ag_scalar_i32(1)));
    ag_print("rnn_grad n=3:", rnn_grad(x, w, ag_scalar_i32(3)));
    ag_tensor v = ag_from_data(AG_F64, AG_SHAPE(2), ((const double[]){0.5, -1}));
    ag_print("branch_grad then:", branch_grad(v, ag_scalar_i32(1)));
    ag_print("branch_grad else:", branch_grad(v, ag_scalar_i32(-1)));
    ag_print("nested_grad 2x3:", nested_grad(v, ag_scalar_i32(2), ag_scalar_i32(3)));
    e2e_print_error("array_loop_gradients");
    ag_shutdown();
    return 0;
}
