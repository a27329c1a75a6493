/* loop_assignments: tensors assigned in staged loops in the patterns the
 * loop state must follow: a swap through a temporary (Fibonacci on i64),
 * variables assigned only on some iterations, a scratch variable written
 * and read inside the body only, a variable assigned twice per iteration,
 * and an inner loop's result used by the outer loop. */
#include "e2e.h"

AG_FUNCTION AG_SIGNATURE("i32[]")
ag_tensor fib(ag_tensor n)
{
    ag_tensor a = ag_scalar_i64(0), b = ag_scalar_i64(1);
    ag_tensor i = ag_scalar_i32(0);
    while (ag_bool(ag_less(i, n))) {
        ag_tensor t = ag_add(a, b);
        a = b;
        b = t;
        i = ag_add(i, 1);
    }
    return a;
}

/* The last negative element and its index, assigned only when found. */
AG_FUNCTION AG_SIGNATURE("i32[?]")
ag_tensor last_negative(ag_tensor v)
{
    ag_tensor n = ag_cast(ag_size(v), AG_I32);
    ag_tensor last = ag_scalar_i32(0);
    ag_tensor where = ag_scalar_i32(-1);
    for (ag_tensor i = ag_scalar_i32(0); ag_bool(ag_less(i, n)); i = ag_add(i, 1)) {
        ag_tensor e = ag_gather(v, i, 0);
        if (ag_bool(ag_less(e, 0))) {
            last = e;
            where = i;
        }
    }
    return ag_add(ag_mul(where, 100), last);
}

/* The sum of the decimal digits: `digit` is scratch, x is assigned twice. */
AG_FUNCTION AG_SIGNATURE("i32[]")
ag_tensor digit_sum(ag_tensor x)
{
    ag_tensor s = ag_scalar_i32(0);
    ag_tensor digit = ag_scalar_i32(0);
    while (ag_bool(ag_greater(x, 0))) {
        digit = ag_mod(x, 10);
        x = ag_sub(x, digit);
        x = ag_floordiv(x, 10);
        s = ag_add(s, digit);
    }
    return s;
}

/* 1 + (1 + 2) + ... + (1 + ... + n), the inner sums by an inner loop. */
AG_FUNCTION AG_SIGNATURE("i32[]")
ag_tensor triangle_sum(ag_tensor n)
{
    ag_tensor total = ag_scalar_i32(0);
    ag_tensor row = ag_scalar_i32(1);
    while (ag_bool(ag_less_equal(row, n))) {
        ag_tensor inner = ag_scalar_i32(0);
        ag_tensor k = ag_scalar_i32(1);
        while (ag_bool(ag_less_equal(k, row))) {
            inner = ag_add(inner, k);
            k = ag_add(k, 1);
        }
        total = ag_add(total, inner);
        row = ag_add(row, 1);
    }
    return total;
}

int main(void)
{
    ag_print("fib(10) =", fib(ag_scalar_i32(10)));
    ag_print("fib(50) =", fib(ag_scalar_i32(50)));
    ag_print("fib(0) =", fib(ag_scalar_i32(0)));
    const int32_t a[5] = {3, -4, 5, -6, 7}, b[2] = {1, 2};
    ag_print("last_negative([3 -4 5 -6 7]) =", last_negative(ag_from_data(AG_I32, AG_SHAPE(5), a)));
    ag_print("last_negative([1 2]) =", last_negative(ag_from_data(AG_I32, AG_SHAPE(2), b)));
    ag_print("digit_sum(9875) =", digit_sum(ag_scalar_i32(9875)));
    ag_print("digit_sum(0) =", digit_sum(ag_scalar_i32(0)));
    ag_print("triangle_sum(4) =", triangle_sum(ag_scalar_i32(4)));
    ag_print("triangle_sum(5) =", triangle_sum(ag_scalar_i32(5)));
    ag_shutdown();
    return 0;
}
