/* for_c_init: staged for loops (tensor conditions) whose init is C code:
 * a tensor made from a C parameter, assignments to variables declared
 * before, several declarators, and a C int set by the init that the staged
 * loop only reads. */
#include "e2e.h"

/* The start comes from a C parameter. */
AG_FUNCTION ag_tensor sum_from(ag_tensor n, int start)
{
    ag_tensor total = ag_scalar_i32(0);
    for (ag_tensor i = ag_scalar_i32(start * 2); ag_bool(ag_less(i, n)); i = ag_add(i, 1))
        total = ag_add(total, i);
    return total;
}

/* The init assigns two tensors declared without a value. */
AG_FUNCTION ag_tensor powers_below(ag_tensor limit)
{
    ag_tensor p, count;
    for (p = ag_scalar_i32(1), count = ag_scalar_i32(0); ag_bool(ag_less(p, limit));
         p = ag_mul(p, 2))
        count = ag_add(count, 1);
    return ag_add(ag_mul(count, 1000), p);
}

/* Two tensors declared in the init; the step is never assigned again. */
AG_FUNCTION ag_tensor stride_sum(ag_tensor n)
{
    ag_tensor total = ag_scalar_i32(0);
    for (ag_tensor i = ag_scalar_i32(0), step = ag_scalar_i32(3); ag_bool(ag_less(i, n));
         i = ag_add(i, step))
        total = ag_add(total, i);
    return total;
}

/* A C int set by the init and read (a constant) by the staged body; the
 * loop has no increment. */
AG_FUNCTION ag_tensor stepped(ag_tensor n, int stride)
{
    ag_tensor total = ag_scalar_i32(0);
    int k;
    for (k = stride * 2; ag_bool(ag_less(total, n));)
        total = ag_add(total, k);
    return total;
}

int main(void)
{
    ag_print("sum_from(10, 3) =", sum_from(ag_scalar_i32(10), 3));
    ag_print("sum_from(10, 5) =", sum_from(ag_scalar_i32(10), 5));
    ag_print("sum_from(5, 0) =", sum_from(ag_scalar_i32(5), 0));
    ag_print("powers_below(100) =", powers_below(ag_scalar_i32(100)));
    ag_print("powers_below(1) =", powers_below(ag_scalar_i32(1)));
    ag_print("stride_sum(10) =", stride_sum(ag_scalar_i32(10)));
    ag_print("stride_sum(1) =", stride_sum(ag_scalar_i32(1)));
    ag_print("stepped(10, 2) =", stepped(ag_scalar_i32(10), 2));
    ag_print("stepped(0, 1) =", stepped(ag_scalar_i32(0), 1));
    ag_shutdown();
    return 0;
}
