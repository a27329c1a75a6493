/* numeric_loops: classic algorithms as staged loops (gcd, Newton's square
 * root, binary search, Fibonacci). */
#include "e2e.h"

AG_FUNCTION AG_SIGNATURE("i32[], i32[]")
ag_tensor gcd(ag_tensor a, ag_tensor b)
{
    while (ag_bool(ag_not_equal(b, 0))) {
        ag_tensor t = ag_mod(a, b);
        a = b;
        b = t;
    }
    return a;
}

/* Newton's iteration for sqrt(x), until two iterates agree closely. */
AG_FUNCTION AG_SIGNATURE("f64[]")
ag_tensor newton_sqrt(ag_tensor x)
{
    ag_tensor guess = ag_div(ag_add(x, 1), 2);
    ag_tensor prev = ag_zeros_like(x);
    while (ag_bool(ag_greater(ag_abs(ag_sub(guess, prev)), 1e-6))) {
        prev = guess;
        guess = ag_mul(ag_add(guess, ag_div(x, guess)), 0.5);
    }
    return guess;
}

/* The index of target in the sorted v, or -1. */
AG_FUNCTION AG_SIGNATURE("i32[7], i32[]")
ag_tensor binary_search(ag_tensor v, ag_tensor target)
{
    ag_tensor lo = ag_scalar_i32(0);
    ag_tensor hi = ag_sub(ag_cast(ag_size(v), AG_I32), 1);
    ag_tensor found = ag_scalar_i32(-1);
    while (ag_bool(ag_less_equal(lo, hi))) {
        ag_tensor mid = ag_floordiv(ag_add(lo, hi), 2);
        ag_tensor x = ag_gather(v, mid, 0);
        if (ag_bool(ag_equal(x, target))) {
            found = mid;
            break;
        } else if (ag_bool(ag_less(x, target))) {
            lo = ag_add(mid, 1);
        } else {
            hi = ag_sub(mid, 1);
        }
    }
    return found;
}

/* fib(n) with two carried values. */
AG_FUNCTION AG_SIGNATURE("i32[]")
ag_tensor fib(ag_tensor n)
{
    ag_tensor a = ag_scalar_i64(0), b = ag_scalar_i64(1);
    for (ag_tensor i = ag_scalar_i32(0); ag_bool(ag_less(i, n)); i = ag_add(i, 1)) {
        ag_tensor next = ag_add(a, b);
        a = b;
        b = next;
    }
    return a;
}

int main(void)
{
    ag_print("gcd(48, 18) =", gcd(ag_scalar_i32(48), ag_scalar_i32(18)));
    ag_print("gcd(17, 5) =", gcd(ag_scalar_i32(17), ag_scalar_i32(5)));
    ag_print("gcd(9, 0) =", gcd(ag_scalar_i32(9), ag_scalar_i32(0)));
    ag_print("newton_sqrt(16) =", newton_sqrt(ag_scalar_f64(16)));
    ag_print("newton_sqrt(2) =", newton_sqrt(ag_scalar_f64(2)));
    const int32_t sorted[7] = {2, 3, 5, 7, 11, 13, 17};
    ag_tensor v = ag_from_data(AG_I32, AG_SHAPE(7), sorted);
    ag_print("binary_search(v, 11) =", binary_search(v, ag_scalar_i32(11)));
    ag_print("binary_search(v, 2) =", binary_search(v, ag_scalar_i32(2)));
    ag_print("binary_search(v, 17) =", binary_search(v, ag_scalar_i32(17)));
    ag_print("binary_search(v, 4) =", binary_search(v, ag_scalar_i32(4)));
    ag_print("fib(0) =", fib(ag_scalar_i32(0)));
    ag_print("fib(10) =", fib(ag_scalar_i32(10)));
    ag_print("fib(90) =", fib(ag_scalar_i32(90)));
    ag_shutdown();
    return 0;
}
