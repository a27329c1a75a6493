/* lazy_assignments: tensors assigned inside operands that a staged
 * condition evaluates lazily (the right operand of && and ||, the branches
 * of ?:) are outputs of the staged if agc makes of the operand: they keep
 * their old value when the operand does not run. */
#include "e2e.h"

/* In a branch of a ?: that gives the statement's value. */
AG_FUNCTION ag_tensor in_ternary(ag_tensor x, ag_tensor c)
{
    ag_tensor t = ag_scalar(AG_F32, -1);
    ag_tensor y = ag_bool(c) ? ag_mul(x, (t = ag_add(x, 1))) : x;
    return ag_add(ag_mul(y, 100), t);
}

/* In the right operand of && (runs when the left one is true) and of ||
 * (runs when it is false); the value is read in the if's branch. */
AG_FUNCTION ag_tensor in_and_or(ag_tensor x, ag_tensor a)
{
    ag_tensor seen = ag_scalar(AG_F32, 0);
    ag_tensor r = ag_scalar(AG_F32, 0);
    if (ag_bool(a) && ag_bool(ag_greater((seen = ag_add(x, 10)), 12)))
        r = ag_add(r, seen);
    if (ag_bool(a) || ag_bool(ag_less((seen = ag_sub(seen, 1)), 0)))
        r = ag_add(r, 1000);
    return ag_add(ag_mul(r, 100), seen);
}

/* In a staged loop: the ?: runs in each iteration, the assigned tensor is
 * read by the next one. */
AG_FUNCTION ag_tensor in_loop(ag_tensor x)
{
    ag_tensor last = ag_scalar(AG_F32, 0);
    ag_tensor i = ag_scalar_i32(0);
    while (ag_bool(ag_less(i, 5))) {
        x = ag_bool(ag_greater(x, 3)) ? ag_sub(x, (last = ag_scalar(AG_F32, 2))) : ag_add(x, last);
        i = ag_add(i, 1);
    }
    return ag_add(ag_mul(x, 10), last);
}

int main(void)
{
    for (int k = 0; k < 2; k++) {
        ag_tensor c = ag_scalar_bool(k == 1);
        for (float v = 1; v < 4; v += 1) {
            ag_tensor x = ag_scalar(AG_F32, v);
            printf("in_ternary(%g, %d) = %g\n", v, k, ag_item_f64(in_ternary(x, c)));
            printf("in_and_or(%g, %d) = %g\n", v, k, ag_item_f64(in_and_or(x, c)));
        }
    }
    for (float v = 0; v < 8; v += 3)
        printf("in_loop(%g) = %g\n", v, ag_item_f64(in_loop(ag_scalar(AG_F32, v))));
    return 0;
}
