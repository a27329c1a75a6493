/*
 * fizzbuzz.c - a staged for loop with a staged else-if chain inside.
 *
 * The loop variable `i` is a tensor and the condition uses ag_bool, so agc
 * makes the loop a graph while loop carrying `i`; each `if` in the body
 * becomes a graph conditional. ag_print prints at every iteration.
 */
#include <ag.h>

#include <stdio.h>

AG_FUNCTION void fizzbuzz(ag_tensor n) {
    for (ag_tensor i = ag_scalar_i32(1); ag_bool(ag_less_equal(i, n)); i = ag_add(i, 1)) {
        if (ag_bool(ag_equal(ag_mod(i, 15), 0)))      ag_print("fizzbuzz");
        else if (ag_bool(ag_equal(ag_mod(i, 3), 0)))  ag_print("fizz");
        else if (ag_bool(ag_equal(ag_mod(i, 5), 0)))  ag_print("buzz");
        else                                           ag_print(i);
    }
}

int main(void)
{
    const int limits[] = {5, 20};
    for (int k = 0; k < 2; k++) {
        printf("fizzbuzz(%d):\n", limits[k]);
        /* The loop makes a few tensors per iteration; the scope frees them. */
        ag_scope_push();
        fizzbuzz(ag_scalar_i32(limits[k]));
        ag_scope_pop();
    }
    ag_shutdown();
    return 0;
}
