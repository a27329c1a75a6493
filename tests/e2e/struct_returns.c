/* struct_returns: structs of tensors returned from inside a staged loop,
 * from nested staged branches, with three fields, and used by another
 * AG_FUNCTION inside its staged loop. */
#include "e2e.h"

typedef struct stats {
    ag_tensor count, sum, max;
} stats;

/* Statistics of v up to its first zero: the return inside the loop gives
 * the struct early. */
AG_FUNCTION AG_SIGNATURE("i32[?]")
stats prefix_stats(ag_tensor v)
{
    ag_tensor n = ag_cast(ag_size(v), AG_I32);
    ag_tensor sum = ag_scalar_i32(0), max = ag_scalar_i32(-1000);
    for (ag_tensor i = ag_scalar_i32(0); ag_bool(ag_less(i, n)); i = ag_add(i, 1)) {
        ag_tensor e = ag_gather(v, i, 0);
        if (ag_bool(ag_equal(e, 0)))
            return (stats){i, sum, max};
        sum = ag_add(sum, e);
        max = ag_maximum(max, e);
    }
    return (stats){n, sum, max};
}

typedef struct interval {
    ag_tensor lo, hi;
} interval;

/* Nested branches, each returning a struct. */
AG_FUNCTION AG_SIGNATURE("i32[], i32[]")
interval around(ag_tensor x, ag_tensor width)
{
    if (ag_bool(ag_greater(width, 0))) {
        if (ag_bool(ag_greater(x, 100)))
            return (interval){ag_sub(x, width), x};
        return (interval){ag_sub(x, width), ag_add(x, width)};
    }
    return (interval){x, x};
}

/* The struct result of around, used in a staged loop. */
AG_FUNCTION AG_SIGNATURE("i32[?], i32[]")
ag_tensor widest(ag_tensor xs, ag_tensor width)
{
    ag_tensor n = ag_cast(ag_size(xs), AG_I32);
    ag_tensor best = ag_scalar_i32(0);
    ag_tensor i = ag_scalar_i32(0);
    while (ag_bool(ag_less(i, n))) {
        interval iv = around(ag_gather(xs, i, 0), width);
        best = ag_maximum(best, ag_sub(iv.hi, iv.lo));
        i = ag_add(i, 1);
    }
    return best;
}

int main(void)
{
    const int32_t a[4] = {4, 9, 0, 7}, b[2] = {3, 1};
    stats s = prefix_stats(ag_from_data(AG_I32, AG_SHAPE(4), a));
    ag_print("prefix_stats([4 9 0 7]) =", s.count, s.sum, s.max);
    s = prefix_stats(ag_from_data(AG_I32, AG_SHAPE(2), b));
    ag_print("prefix_stats([3 1]) =", s.count, s.sum, s.max);
    interval iv = around(ag_scalar_i32(150), ag_scalar_i32(10));
    ag_print("around(150, 10) =", iv.lo, iv.hi);
    iv = around(ag_scalar_i32(50), ag_scalar_i32(10));
    ag_print("around(50, 10) =", iv.lo, iv.hi);
    iv = around(ag_scalar_i32(50), ag_scalar_i32(-1));
    ag_print("around(50, -1) =", iv.lo, iv.hi);
    const int32_t xs[3] = {50, 150, 20}, one[1] = {200};
    ag_print("widest([50 150 20], 10) =",
             widest(ag_from_data(AG_I32, AG_SHAPE(3), xs), ag_scalar_i32(10)));
    ag_print("widest([200], 5) =", widest(ag_from_data(AG_I32, AG_SHAPE(1), one), ag_scalar_i32(5)));
    ag_shutdown();
    return 0;
}
