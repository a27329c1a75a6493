/* signature_unknown_dims: with an AG_SIGNATURE whose dims are '?', one
 * trace serves every shape the signature matches; without one, each new
 * shape is a new trace (counts from ag_function_trace_count). A call that
 * does not match the signature fails at the caller's line, naming the
 * parameter, the expected and the actual type. Eagerly nothing is traced and nothing is checked
 * (signature_unknown_dims.eager.expected). */
#include "e2e.h"

AG_FUNCTION AG_SIGNATURE("f32[?], i32[]")
ag_tensor scaled_sum(ag_tensor v, ag_tensor k)
{
    ag_tensor total = ag_scalar_f32(0);
    ag_tensor n = ag_cast(ag_size(v), AG_I32);
    for (ag_tensor i = ag_scalar_i32(0); ag_bool(ag_less(i, n)); i = ag_add(i, 1))
        total = ag_add(total, ag_gather(v, i, 0));
    return ag_mul(total, ag_cast(k, AG_F32));
}

AG_FUNCTION ag_tensor plain_sum(ag_tensor v)
{
    ag_tensor total = ag_scalar_f32(0);
    ag_tensor n = ag_cast(ag_size(v), AG_I32);
    ag_tensor i = ag_scalar_i32(0);
    while (ag_bool(ag_less(i, n))) {
        total = ag_add(total, ag_gather(v, i, 0));
        i = ag_add(i, 1);
    }
    return total;
}

/* The largest row sum of a matrix with two columns and any number of rows. */
AG_FUNCTION AG_SIGNATURE("f32[?,2]")
ag_tensor max_row_sum(ag_tensor m)
{
    ag_tensor sums = ag_reduce_sum(m, 1, false);
    ag_tensor rows = ag_cast(ag_size(sums), AG_I32);
    ag_tensor best = ag_gather(sums, ag_scalar_i32(0), 0);
    for (ag_tensor i = ag_scalar_i32(1); ag_bool(ag_less(i, rows)); i = ag_add(i, 1))
        if (ag_bool(ag_greater(ag_gather(sums, i, 0), best)))
            best = ag_gather(sums, i, 0);
    return best;
}

/* [1 2 ... n] */
static ag_tensor iota(int n)
{
    float d[8];
    for (int i = 0; i < n; i++)
        d[i] = (float)(i + 1);
    return ag_from_data(AG_F32, AG_SHAPE(n), d);
}

int main(void)
{
    ag_set_error_mode(AG_ERRORS_RETURN);
    const int sizes[4] = {3, 1, 5, 3};
    for (int s = 0; s < 4; s++) {
        ag_tensor v = iota(sizes[s]);
        ag_print("scaled_sum", v, "2 =", scaled_sum(v, ag_scalar_i32(2)));
        ag_print("plain_sum", v, "=", plain_sum(v));
    }
    printf("traces: scaled_sum %d, plain_sum %d\n", ag_function_trace_count("scaled_sum"),
           ag_function_trace_count("plain_sum"));

    const float a[4] = {1, 2, 5, -1}, b[6] = {1, 1, 0, 9, 2, 2};
    ag_tensor m = ag_from_data(AG_F32, AG_SHAPE(2, 2), a);
    ag_print("max_row_sum", m, "=", max_row_sum(m));
    m = ag_from_data(AG_F32, AG_SHAPE(3, 2), b);
    ag_print("max_row_sum", m, "=", max_row_sum(m));
    m = ag_from_data(AG_F32, AG_SHAPE(2, 3), b);
    ag_tensor r = max_row_sum(m);
    if (!ag_is_error(r))
        ag_print("max_row_sum", m, "=", r);
    e2e_print_error("max_row_sum(f32[2,3])");
    r = scaled_sum(iota(2), ag_scalar_f32(2));
    if (!ag_is_error(r))
        ag_print("scaled_sum([1 2], 2.0) =", r);
    e2e_print_error("scaled_sum([1 2], 2.0)");
    printf("traces: max_row_sum %d, scaled_sum %d\n", ag_function_trace_count("max_row_sum"),
           ag_function_trace_count("scaled_sum"));
    ag_shutdown();
    return 0;
}
