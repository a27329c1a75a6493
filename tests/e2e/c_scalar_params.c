/* c_scalar_params: C scalar parameters (an enum, a double, a bool, a long,
 * a char) are trace-time constants, like Python arguments to tf.function:
 * each new combination of values traces a new concrete function, in which
 * the C code they select (a switch, a C operand of &&, an unrolled loop) is
 * fixed. The trace counts are printed; eagerly nothing is traced
 * (c_scalar_params.eager.expected). */
#include "e2e.h"

typedef enum op { OP_ADD, OP_MUL, OP_POW } op;

AG_FUNCTION ag_tensor apply(ag_tensor x, op kind, double factor, bool clip)
{
    ag_tensor r;
    switch (kind) {
    case OP_ADD:
        r = ag_add(x, factor);
        break;
    case OP_MUL:
        r = ag_mul(x, factor);
        break;
    default:
        r = ag_pow(x, factor);
        break;
    }
    if (clip && ag_bool(ag_greater(r, 100)))
        r = ag_scalar_f32(100);
    return r;
}

AG_FUNCTION ag_tensor repeat_step(ag_tensor x, long times, char sign)
{
    for (long k = 0; k < times; k++)
        x = sign == '-' ? ag_sub(x, 1) : ag_add(x, 1);
    return x;
}

int main(void)
{
    ag_print("apply(3, add, 2) =", apply(ag_scalar_f32(3), OP_ADD, 2, false));
    ag_print("apply(3, mul, 2) =", apply(ag_scalar_f32(3), OP_MUL, 2, false));
    ag_print("apply(3, pow, 2) =", apply(ag_scalar_f32(3), OP_POW, 2, false));
    ag_print("apply(30, mul, 4, clip) =", apply(ag_scalar_f32(30), OP_MUL, 4, true));
    ag_print("apply(30, mul, 4) =", apply(ag_scalar_f32(30), OP_MUL, 4, false));
    ag_print("apply(7, add, 2) =", apply(ag_scalar_f32(7), OP_ADD, 2, false));
    ag_print("repeat_step(10, 3, +) =", repeat_step(ag_scalar_i32(10), 3, '+'));
    ag_print("repeat_step(10, 3, -) =", repeat_step(ag_scalar_i32(10), 3, '-'));
    ag_print("repeat_step(0, 3, +) =", repeat_step(ag_scalar_i32(0), 3, '+'));
    printf("traces: apply %d, repeat_step %d\n", ag_function_trace_count("apply"),
           ag_function_trace_count("repeat_step"));
    ag_shutdown();
    return 0;
}
