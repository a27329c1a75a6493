/* branch_shapes: the branches of a staged if may give a variable different
 * sizes of the same rank (after the if its shape has unknown dims, as
 * after tf.cond), but not different ranks: that fails while tracing, even
 * when the call takes the branch that would work, naming the variable;
 * eagerly only the branch taken runs (branch_shapes.eager.expected). */
#include "e2e.h"

AG_FUNCTION ag_tensor pad_or_trim(ag_tensor v, ag_tensor want_long)
{
    ag_tensor r;
    if (ag_bool(want_long)) {
        ag_tensor parts[2] = {v, ag_zeros_like(v)};
        r = ag_concat(0, 2, parts);
    } else {
        ag_tensor one = ag_scalar_i64(1);
        r = ag_gather(v, ag_range(ag_scalar_i64(0), one, one), 0);
    }
    return ag_add(r, 1);
}

AG_FUNCTION ag_tensor as_matrix(ag_tensor v, ag_tensor square)
{
    ag_tensor r = v;
    if (ag_bool(square))
        r = ag_reshape(v, AG_SHAPE(2, 2));
    return r;
}

int main(void)
{
    ag_set_error_mode(AG_ERRORS_RETURN);
    const int32_t data[4] = {1, 2, 3, 4};
    ag_tensor v3 = ag_from_data(AG_I32, AG_SHAPE(3), data);
    ag_tensor r = pad_or_trim(v3, ag_scalar_bool(true));
    ag_print("pad_or_trim([1 2 3], true) =", r, "shape", ag_shape_of(r));
    r = pad_or_trim(v3, ag_scalar_bool(false));
    ag_print("pad_or_trim([1 2 3], false) =", r, "shape", ag_shape_of(r));
    ag_tensor v4 = ag_from_data(AG_I32, AG_SHAPE(4), data);
    r = as_matrix(v4, ag_scalar_bool(true));
    if (!ag_is_error(r))
        ag_print("as_matrix([1 2 3 4], true) =", r);
    e2e_print_error("as_matrix([1 2 3 4], true)");
    ag_shutdown();
    return 0;
}
