/* nested_loop_exits: nested staged loops where the inner loop breaks and
 * the outer one continues, the outer one breaks after an inner loop that
 * continues, and three levels deep; each break and continue applies to its
 * own loop (AutoGraph's loop_control_flow, nested). */
#include "e2e.h"

/* For each i <= n that is not a multiple of 3 (continue in the outer
 * loop), count the j <= n with i * j <= limit (break in the inner loop). */
AG_FUNCTION AG_SIGNATURE("i32[], i32[]")
ag_tensor count_pairs(ag_tensor n, ag_tensor limit)
{
    ag_tensor count = ag_scalar_i32(0);
    ag_tensor i = ag_scalar_i32(0);
    while (ag_bool(ag_less(i, n))) {
        i = ag_add(i, 1);
        if (ag_bool(ag_equal(ag_mod(i, 3), 0)))
            continue;
        ag_tensor j = ag_scalar_i32(0);
        while (ag_bool(ag_less(j, n))) {
            j = ag_add(j, 1);
            if (ag_bool(ag_greater(ag_mul(i, j), limit)))
                break;
            count = ag_add(count, 1);
        }
    }
    return count;
}

/* The first row whose odd entries sum to at least target: continue in the
 * inner loop skips the even entries, break in the outer loop ends the
 * search. */
AG_FUNCTION AG_SIGNATURE("i32[3,3], i32[]")
ag_tensor first_row(ag_tensor m, ag_tensor target)
{
    ag_tensor zero = ag_scalar_i32(0), one = ag_scalar_i32(1);
    ag_tensor rows = ag_cast(ag_gather(ag_shape_of(m), zero, 0), AG_I32);
    ag_tensor cols = ag_cast(ag_gather(ag_shape_of(m), one, 0), AG_I32);
    ag_tensor found = ag_scalar_i32(-1);
    ag_tensor r = ag_scalar_i32(0);
    while (ag_bool(ag_less(r, rows))) {
        ag_tensor row = ag_gather(m, r, 0);
        ag_tensor sum = ag_scalar_i32(0);
        for (ag_tensor c = ag_scalar_i32(0); ag_bool(ag_less(c, cols)); c = ag_add(c, 1)) {
            ag_tensor v = ag_gather(row, c, 0);
            if (ag_bool(ag_equal(ag_mod(v, 2), 0)))
                continue;
            sum = ag_add(sum, v);
        }
        if (ag_bool(ag_greater_equal(sum, target))) {
            found = r;
            break;
        }
        r = ag_add(r, 1);
    }
    return found;
}

/* Triples a <= b <= c <= n with a + b != 5 (continue in the middle loop)
 * and a + b + c <= 7 (break in the innermost loop). */
AG_FUNCTION AG_SIGNATURE("i32[]")
ag_tensor triples(ag_tensor n)
{
    ag_tensor total = ag_scalar_i32(0);
    for (ag_tensor a = ag_scalar_i32(1); ag_bool(ag_less_equal(a, n)); a = ag_add(a, 1)) {
        for (ag_tensor b = a; ag_bool(ag_less_equal(b, n)); b = ag_add(b, 1)) {
            if (ag_bool(ag_equal(ag_add(a, b), 5)))
                continue;
            for (ag_tensor c = b; ag_bool(ag_less_equal(c, n)); c = ag_add(c, 1)) {
                if (ag_bool(ag_greater(ag_add(ag_add(a, b), c), 7)))
                    break;
                total = ag_add(total, 1);
            }
        }
    }
    return total;
}

int main(void)
{
    ag_print("count_pairs(5, 6) =", count_pairs(ag_scalar_i32(5), ag_scalar_i32(6)));
    ag_print("count_pairs(4, 100) =", count_pairs(ag_scalar_i32(4), ag_scalar_i32(100)));
    ag_print("count_pairs(0, 5) =", count_pairs(ag_scalar_i32(0), ag_scalar_i32(5)));
    const int32_t data[9] = {2, 4, 1, 3, 5, 8, 7, 2, 9};
    ag_tensor m = ag_from_data(AG_I32, AG_SHAPE(3, 3), data);
    ag_print("first_row(m, 8) =", first_row(m, ag_scalar_i32(8)));
    ag_print("first_row(m, 20) =", first_row(m, ag_scalar_i32(20)));
    ag_print("first_row(m, 1) =", first_row(m, ag_scalar_i32(1)));
    ag_print("triples(4) =", triples(ag_scalar_i32(4)));
    ag_print("triples(2) =", triples(ag_scalar_i32(2)));
    ag_shutdown();
    return 0;
}
