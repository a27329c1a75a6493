/* shape_invariants: loop variables whose shape changes from one iteration
 * to the next, declared with ag_set_loop_options before the loop
 * (tf.autograph.experimental.set_loop_options(shape_invariants=...)): a
 * vector that grows from empty, a matrix that gains rows, a vector that
 * shrinks. */
#include "e2e.h"

/* The binary digits of x, least significant first. */
AG_FUNCTION AG_SIGNATURE("i32[]") ag_tensor binary_digits(ag_tensor x)
{
    ag_tensor digits = ag_zeros(AG_I32, AG_SHAPE(0));
    ag_set_loop_options(&digits, AG_SHAPE(-1));
    while (ag_bool(ag_greater(x, 0))) {
        ag_tensor parts[2] = {digits, ag_reshape(ag_mod(x, 2), AG_SHAPE(1))};
        digits = ag_concat(0, 2, parts);
        x = ag_floordiv(x, 2);
    }
    return digits;
}

/* The rows [i, i * i] for i < n. */
AG_FUNCTION AG_SIGNATURE("i32[]") ag_tensor squares_table(ag_tensor n)
{
    ag_tensor m = ag_zeros(AG_I32, AG_SHAPE(0, 2));
    ag_set_loop_options(&m, AG_SHAPE(-1, 2));
    for (ag_tensor i = ag_scalar_i32(0); ag_bool(ag_less(i, n)); i = ag_add(i, 1)) {
        ag_tensor pair[2] = {i, ag_mul(i, i)};
        ag_tensor parts[2] = {m, ag_reshape(ag_stack(0, 2, pair), AG_SHAPE(1, 2))};
        m = ag_concat(0, 2, parts);
    }
    return m;
}

/* Drops the first element while it is below 5 and more than one is left. */
AG_FUNCTION AG_SIGNATURE("i32[?]") ag_tensor drop_small_front(ag_tensor v)
{
    ag_tensor one = ag_scalar_i64(1);
    ag_set_loop_options(&v, AG_SHAPE(-1));
    while (ag_bool(ag_greater(ag_size(v), 1)) &&
           ag_bool(ag_less(ag_gather(v, ag_scalar_i32(0), 0), 5)))
        v = ag_gather(v, ag_range(one, ag_size(v), one), 0);
    return v;
}

int main(void)
{
    ag_print("binary_digits(6) =", binary_digits(ag_scalar_i32(6)));
    ag_print("binary_digits(1) =", binary_digits(ag_scalar_i32(1)));
    ag_print("binary_digits(0) =", binary_digits(ag_scalar_i32(0)));
    ag_tensor t = squares_table(ag_scalar_i32(3));
    ag_print("squares_table(3) =", t, "shape", ag_shape_of(t));
    ag_print("squares_table(1) =", squares_table(ag_scalar_i32(1)));
    const int32_t a[4] = {1, 3, 7, 2}, b[2] = {1, 2};
    ag_print("drop_small_front([1 3 7 2]) =", drop_small_front(ag_from_data(AG_I32, AG_SHAPE(4), a)));
    ag_print("drop_small_front([1 2]) =", drop_small_front(ag_from_data(AG_I32, AG_SHAPE(2), b)));
    ag_shutdown();
    return 0;
}
