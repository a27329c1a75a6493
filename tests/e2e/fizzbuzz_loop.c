/* fizzbuzz_loop: the guide's fizzbuzz, a staged for loop around an
 * else-if chain of staged ifs with side effects (ag_print) in each branch. */
#include "e2e.h"

AG_FUNCTION AG_SIGNATURE("i32[]")
void fizzbuzz(ag_tensor n)
{
    for (ag_tensor i = ag_scalar_i32(1); ag_bool(ag_less_equal(i, n)); i = ag_add(i, 1)) {
        if (ag_bool(ag_equal(ag_mod(i, 15), 0)))
            ag_print("fizzbuzz");
        else if (ag_bool(ag_equal(ag_mod(i, 3), 0)))
            ag_print("fizz");
        else if (ag_bool(ag_equal(ag_mod(i, 5), 0)))
            ag_print("buzz");
        else
            ag_print(i);
    }
}

int main(void)
{
    fizzbuzz(ag_scalar_i32(16));
    printf("--\n");
    fizzbuzz(ag_scalar_i32(0));
    printf("--\n");
    fizzbuzz(ag_scalar_i32(3));
    ag_shutdown();
    return 0;
}
