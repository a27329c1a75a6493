/* returns_at_depth: returns at several depths of staged control flow in
 * one function: in an if in a loop in an if, in an if in a loop in a loop,
 * in loops of an else-if chain, and after all of them (AutoGraph's
 * early_return, nested); a void function returning from a do/while. */
#include "e2e.h"

AG_FUNCTION AG_SIGNATURE("i32[]")
ag_tensor classify(ag_tensor x)
{
    if (ag_bool(ag_less(x, 0))) {
        ag_tensor k = ag_scalar_i32(0);
        while (ag_bool(ag_less(k, 10))) {
            if (ag_bool(ag_equal(ag_add(x, k), 0)))
                return ag_mul(k, 100);
            k = ag_add(k, 1);
        }
        return ag_scalar_i32(-1);
    }
    ag_tensor i = ag_scalar_i32(1);
    while (ag_bool(ag_less(i, 4))) {
        ag_tensor j = ag_scalar_i32(1);
        while (ag_bool(ag_less(j, 4))) {
            if (ag_bool(ag_equal(ag_mul(i, j), x)))
                return ag_add(ag_mul(i, 10), j);
            j = ag_add(j, 1);
        }
        i = ag_add(i, 1);
    }
    return x;
}

/* mode 0: the sum; 1: the first element above 10; 2: the last negative
 * one; 0 when there is none. */
AG_FUNCTION AG_SIGNATURE("i32[?], i32[]")
ag_tensor pick(ag_tensor v, ag_tensor mode)
{
    ag_tensor n = ag_cast(ag_size(v), AG_I32);
    if (ag_bool(ag_equal(mode, 0))) {
        return ag_reduce_sum(v, AG_ALL_AXES, false);
    } else if (ag_bool(ag_equal(mode, 1))) {
        for (ag_tensor i = ag_scalar_i32(0); ag_bool(ag_less(i, n)); i = ag_add(i, 1))
            if (ag_bool(ag_greater(ag_gather(v, i, 0), 10)))
                return ag_gather(v, i, 0);
    } else {
        for (ag_tensor i = ag_sub(n, 1); ag_bool(ag_greater_equal(i, 0)); i = ag_sub(i, 1))
            if (ag_bool(ag_less(ag_gather(v, i, 0), 0)))
                return ag_gather(v, i, 0);
    }
    return ag_scalar_i32(0);
}

/* Counts down to zero, or gives up below -5. */
AG_FUNCTION AG_SIGNATURE("i32[]")
void countdown(ag_tensor n)
{
    do {
        if (ag_bool(ag_equal(n, 0))) {
            ag_print("liftoff");
            return;
        }
        ag_print(n);
        n = ag_sub(n, 1);
    } while (ag_bool(ag_greater(n, -5)));
    ag_print("ran out");
}

int main(void)
{
    ag_print("classify(-3) =", classify(ag_scalar_i32(-3)));
    ag_print("classify(-20) =", classify(ag_scalar_i32(-20)));
    ag_print("classify(6) =", classify(ag_scalar_i32(6)));
    ag_print("classify(5) =", classify(ag_scalar_i32(5)));
    ag_print("classify(0) =", classify(ag_scalar_i32(0)));
    const int32_t a[5] = {4, 12, -3, 15, -8}, b[2] = {1, 2};
    ag_tensor v = ag_from_data(AG_I32, AG_SHAPE(5), a), w = ag_from_data(AG_I32, AG_SHAPE(2), b);
    for (int mode = 0; mode < 3; mode++) {
        ag_print("pick(v, mode) =", pick(v, ag_scalar_i32(mode)));
        ag_print("pick(w, mode) =", pick(w, ag_scalar_i32(mode)));
    }
    countdown(ag_scalar_i32(3));
    countdown(ag_scalar_i32(-7));
    ag_shutdown();
    return 0;
}
