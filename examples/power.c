/*
 * power.c - a C loop over an int parameter is unrolled while tracing.
 *
 * `y` is a C scalar, so it is a trace-time constant: under agc each new
 * value of y traces a new concrete function whose graph holds y matmuls.
 * The loop condition has no ag_bool, so it is plain C and is not staged.
 */
#include <ag.h>

#include <stdio.h>

AG_FUNCTION ag_tensor power(ag_tensor x, int y) {      /* y: trace-time constant */
    ag_tensor result = ag_eye(10, AG_I32);
    for (int i = 0; i < y; i++)                        /* unrolled while tracing */
        result = ag_matmul(x, result);
    return result;
}

/* x = I + N with N the shift matrix (ones just above the diagonal), so
 * x^y holds binomial coefficients: (x^y)[i][i+k] = C(y, k). */
static ag_tensor make_input(void)
{
    int32_t data[10][10] = {{0}};
    for (int i = 0; i < 10; i++) {
        data[i][i] = 1;
        if (i + 1 < 10)
            data[i][i + 1] = 1;
    }
    return ag_from_data(AG_I32, AG_SHAPE(10, 10), data);
}

int main(void)
{
    ag_tensor x = make_input();
    const int exponents[] = {0, 1, 2, 3, 5};
    for (int k = 0; k < 5; k++) {
        /* Every tensor made inside the scope is freed by ag_scope_pop. */
        ag_scope_push();
        ag_tensor r = power(x, exponents[k]);
        printf("power(x, %d):\n", exponents[k]);
        ag_print("  sum of all elements:", ag_reduce_sum(r, AG_ALL_AXES, false));
        ag_print("  top-left 4x4 corner:", ag_slice(r, AG_INDEX(0, 0), AG_INDEX(4, 4)));
        ag_tensor row = ag_squeeze(ag_slice(r, AG_INDEX(0, 0), AG_INDEX(1, 6)), 0);
        ag_print("  first row, first 6:", row);
        ag_scope_pop();
    }
    ag_shutdown();
    return 0;
}
