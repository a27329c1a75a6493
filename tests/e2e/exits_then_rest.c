/* exits_then_rest: an if whose branches exit in different ways (a nested
 * staged break or return in one, a continue or break ending the other),
 * followed by more statements. agc moves those statements into the branch
 * that does not always exit and guards them by the flags the branch may
 * set; the text between the statements moves with them. Each function
 * runs on inputs that take every path. */
#include "e2e.h"

/* The then branch may break (nested), the else branch ends in continue:
 * the rest goes into the then branch, after the inner if. */
AG_FUNCTION ag_tensor nested_break_else_continue(ag_tensor x, ag_tensor n)
{
    ag_tensor i = ag_scalar_i32(0);
    while (ag_bool(ag_less(i, n))) {
        i = ag_add(i, 1);
        if (ag_bool(ag_greater(x, 5))) {
            if (ag_bool(ag_greater(x, 100)))
                break;
            x = ag_add(x, 1);
        } else {
            x = ag_add(x, 2);
            continue;
        }
        /* doubled when neither exit was taken */
        x = ag_mul(x, 2);
    }
    return x;
}

/* The mirror image: the then branch ends in continue, the else branch may
 * continue (nested); two statements follow, with a macro between them. */
AG_FUNCTION ag_tensor continue_else_nested_continue(ag_tensor x, ag_tensor n)
{
    ag_tensor i = ag_scalar_i32(0);
    while (ag_bool(ag_less(i, n))) {
        i = ag_add(i, 1);
        if (ag_bool(ag_greater(x, 40))) {
            x = ag_sub(x, 30);
            continue;
        } else {
            if (ag_bool(ag_equal(ag_mod(x, 3), 0)))
                continue;
            x = ag_add(x, 1);
        }
        x = ag_mul(x, 2);
#define THREE 3
        x = ag_add(x, THREE);
    }
    return x;
}

/* A C condition (k, a trace-time constant) whose then branch always
 * breaks: the rest goes into the else branch, which may break itself
 * under a staged condition, so the rest must be guarded there too. */
AG_FUNCTION ag_tensor c_if_staged_break(ag_tensor x, ag_tensor n, int k)
{
    ag_tensor i = ag_scalar_i32(0);
    while (ag_bool(ag_less(i, n))) {
        i = ag_add(i, 1);
        if (k > 1) {
            x = ag_add(x, 1);
            break;
        } else {
            if (ag_bool(ag_greater(x, 50)))
                break;
            x = ag_add(x, 1);
        }
        x = ag_mul(x, 2);
    }
    return x;
}

/* A nested staged return in the then branch, a break ending the else
 * branch, in a do/while. */
AG_FUNCTION ag_tensor nested_return_else_break(ag_tensor x, ag_tensor n)
{
    ag_tensor i = ag_scalar_i32(0);
    do {
        i = ag_add(i, 1);
        if (ag_bool(ag_greater(x, 0))) {
            if (ag_bool(ag_greater(x, 60)))
                return ag_neg(x);
            x = ag_add(x, 4);
        } else {
            x = ag_sub(x, 1);
            break;
        }
        x = ag_mul(x, 2);
    } while (ag_bool(ag_less(i, n)));
    return x;
}

/* Exits two levels down in both branches, in a for loop whose increment
 * runs after the moved statements. */
AG_FUNCTION ag_tensor deep_exits_for(ag_tensor x, ag_tensor n)
{
    for (ag_tensor i = ag_scalar_i32(0); ag_bool(ag_less(i, n)); i = ag_add(i, 1)) {
        if (ag_bool(ag_greater(x, 20))) {
            if (ag_bool(ag_less(x, 90))) {
                if (ag_bool(ag_equal(ag_mod(x, 2), 0)))
                    break;
            }
            x = ag_add(x, 5);
        } else {
            if (ag_bool(ag_less(x, 3)))
                x = ag_add(x, 7);
            else
                continue;
            x = ag_add(x, 1);
            continue;
        }
        x = ag_sub(x, 1);
    }
    return x;
}

/* A return under a C condition: the trace with k > 1 has no return in
 * the loop, so agc's <return value> stays undefined through it (the
 * runtime leaves it out of the loop's variables). */
AG_FUNCTION ag_tensor c_if_return(ag_tensor x, ag_tensor n, int k)
{
    ag_tensor i = ag_scalar_i32(0);
    while (ag_bool(ag_less(i, n))) {
        i = ag_add(i, 1);
        if (k > 1) {
            x = ag_add(x, 1);
        } else {
            return ag_sub(x, 1);
        }
        x = ag_mul(x, 2);
    }
    return x;
}

static void show(const char *what, float x0, ag_tensor r)
{
    printf("%s(%g) = %g\n", what, x0, ag_item_f64(r));
}

int main(void)
{
    static const float inputs[] = {-3, 1, 6, 7, 45, 101};
    ag_tensor n = ag_scalar_i32(6);
    for (size_t k = 0; k < sizeof inputs / sizeof *inputs; k++) {
        float v = inputs[k];
        ag_tensor x = ag_scalar(AG_F32, v);
        show("nested_break_else_continue", v, nested_break_else_continue(x, n));
        show("continue_else_nested_continue", v, continue_else_nested_continue(x, n));
        show("c_if_staged_break k=1", v, c_if_staged_break(x, n, 1));
        show("c_if_staged_break k=2", v, c_if_staged_break(x, n, 2));
        show("nested_return_else_break", v, nested_return_else_break(x, n));
        show("deep_exits_for", v, deep_exits_for(x, n));
        show("c_if_return k=0", v, c_if_return(x, n, 0));
        show("c_if_return k=2", v, c_if_return(x, n, 2));
    }
    return 0;
}
