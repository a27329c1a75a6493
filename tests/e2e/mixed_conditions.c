/* mixed_conditions: loop conditions that combine C tests (trace-time
 * constants: C scalar parameters) with tensor tests. The C part is decided
 * while tracing and selects which tensor tests the graph has; &&, || and
 * ?: stay lazy on both kinds of operands. */
#include "e2e.h"

/* With limit_steps the loop also stops after max steps. */
AG_FUNCTION ag_tensor halve(ag_tensor x, int limit_steps, int max)
{
    ag_tensor steps = ag_scalar_i32(0);
    while ((!limit_steps || ag_bool(ag_less(steps, max))) && ag_bool(ag_greater(x, 1))) {
        x = ag_floordiv(x, 2);
        steps = ag_add(steps, 1);
    }
    return ag_add(ag_mul(steps, 1000), x);
}

/* A C flag picks which of two staged tests the loop has. */
AG_FUNCTION ag_tensor search(ag_tensor v, ag_tensor target, bool from_end)
{
    ag_tensor n = ag_cast(ag_size(v), AG_I32);
    ag_tensor i = from_end ? ag_sub(n, 1) : ag_scalar_i32(0);
    while (from_end ? ag_bool(ag_greater_equal(i, 0)) : ag_bool(ag_less(i, n))) {
        if (ag_bool(ag_equal(ag_gather(v, i, 0), target)))
            break;
        i = from_end ? ag_sub(i, 1) : ag_add(i, 1);
    }
    return i;
}

/* A tensor test first, then a C test guarding a second tensor test. */
AG_FUNCTION ag_tensor clip_count(ag_tensor x, int both_sides)
{
    ag_tensor c = ag_scalar_i32(0);
    while (ag_bool(ag_greater(x, 10)) || (both_sides && ag_bool(ag_less(x, -10)))) {
        x = ag_div(x, 2);
        c = ag_add(c, 1);
    }
    return c;
}

int main(void)
{
    ag_print("halve(100, 0, 0) =", halve(ag_scalar_i32(100), 0, 0));
    ag_print("halve(100, 1, 2) =", halve(ag_scalar_i32(100), 1, 2));
    ag_print("halve(1, 1, 5) =", halve(ag_scalar_i32(1), 1, 5));
    const int32_t data[4] = {5, 7, 5, 9};
    ag_tensor v = ag_from_data(AG_I32, AG_SHAPE(4), data);
    ag_print("search(v, 5, false) =", search(v, ag_scalar_i32(5), false));
    ag_print("search(v, 5, true) =", search(v, ag_scalar_i32(5), true));
    ag_print("search(v, 4, false) =", search(v, ag_scalar_i32(4), false));
    ag_print("search(v, 4, true) =", search(v, ag_scalar_i32(4), true));
    ag_print("clip_count(80, 1) =", clip_count(ag_scalar_f32(80), 1));
    ag_print("clip_count(-80, 1) =", clip_count(ag_scalar_f32(-80), 1));
    ag_print("clip_count(-80, 0) =", clip_count(ag_scalar_f32(-80), 0));
    ag_shutdown();
    return 0;
}
