/* nested_break_continue: break and continue deep inside else-if chains
 * and nested loops; each applies to its own loop. */
#include "e2e.h"

/* Primes below n by trial division: the inner loop breaks at the first
 * divisor. */
AG_FUNCTION AG_SIGNATURE("i32[]")
ag_tensor count_primes(ag_tensor n)
{
    ag_tensor count = ag_scalar_i32(0);
    for (ag_tensor k = ag_scalar_i32(2); ag_bool(ag_less(k, n)); k = ag_add(k, 1)) {
        ag_tensor prime = ag_scalar_bool(true);
        for (ag_tensor d = ag_scalar_i32(2); ag_bool(ag_less_equal(ag_mul(d, d), k));
             d = ag_add(d, 1)) {
            if (ag_bool(ag_equal(ag_mod(k, d), 0))) {
                prime = ag_scalar_bool(false);
                break;
            }
        }
        if (!ag_bool(prime))
            continue;
        count = ag_add(count, 1);
    }
    return count;
}

/* A classifier loop: continue in one arm, break in another. */
AG_FUNCTION AG_SIGNATURE("i32[?]")
ag_tensor scan(ag_tensor v)
{
    ag_tensor n = ag_cast(ag_size(v), AG_I32);
    ag_tensor score = ag_scalar_i32(0);
    ag_tensor i = ag_scalar_i32(-1);
    while (ag_bool(ag_less(ag_add(i, 1), n))) {
        i = ag_add(i, 1);
        ag_tensor x = ag_gather(v, i, 0);
        if (ag_bool(ag_equal(x, 0))) {
            continue;
        } else if (ag_bool(ag_less(x, 0))) {
            score = ag_sub(score, 100);
            break;
        } else if (ag_bool(ag_greater(x, 5))) {
            score = ag_add(score, 10);
        } else {
            score = ag_add(score, 1);
        }
        score = ag_mul(score, 2);
    }
    return ag_add(ag_mul(score, 100), i);
}

int main(void)
{
    ag_print("count_primes(30) =", count_primes(ag_scalar_i32(30)));
    ag_print("count_primes(3) =", count_primes(ag_scalar_i32(3)));
    const int32_t a[5] = {3, 0, 7, -1, 4};
    ag_print("scan([3 0 7 -1 4]) =", scan(ag_from_data(AG_I32, AG_SHAPE(5), a)));
    const int32_t b[3] = {0, 2, 0};
    ag_print("scan([0 2 0]) =", scan(ag_from_data(AG_I32, AG_SHAPE(3), b)));
    ag_shutdown();
    return 0;
}
