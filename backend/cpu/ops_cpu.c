/*
 * ops_cpu.c - the cpu target's op table: for every op of ops.def, how the
 * generated code computes it. Elementwise ops run in fused loops
 * (lower_elem.c emits each: CG_OP_LOOP, what pass_caps.fuses reads);
 * constants and products have lowerings of their own (lower_plan.c,
 * lower_loop.c, lower_bf16mm.c); every other op calls its eager kernel
 * from the generated code. The cpu runs every op, so it has no supports
 * table (pass_caps.supports NULL: it is the host).
 *
 * Every op has a row: adding one to ops.def fails the build here until
 * the table says what the cpu does with it (the count below; a repeated
 * row is a warning, -Woverride-init in -Wextra).
 */
#include "cg.h"

#define CPU_OPS(Y)                                                                            \
    Y(CONST, CG_OP_OWN) Y(FILL, CG_OP_KERNEL) Y(FILL_LIKE, CG_OP_KERNEL) Y(EYE, CG_OP_KERNEL) \
    Y(RANGE, CG_OP_KERNEL) Y(RANDOM_UNIFORM, CG_OP_KERNEL)                                    \
    Y(ADD, CG_OP_LOOP) Y(SUB, CG_OP_LOOP) Y(MUL, CG_OP_LOOP) Y(DIV, CG_OP_LOOP)               \
    Y(FLOORDIV, CG_OP_LOOP) Y(MOD, CG_OP_LOOP) Y(POW, CG_OP_LOOP) Y(MAXIMUM, CG_OP_LOOP)      \
    Y(MINIMUM, CG_OP_LOOP) Y(EQUAL, CG_OP_LOOP) Y(NOT_EQUAL, CG_OP_LOOP) Y(LESS, CG_OP_LOOP)  \
    Y(LESS_EQUAL, CG_OP_LOOP) Y(GREATER, CG_OP_LOOP) Y(GREATER_EQUAL, CG_OP_LOOP)             \
    Y(LOGICAL_AND, CG_OP_LOOP) Y(LOGICAL_OR, CG_OP_LOOP) Y(LOGICAL_NOT, CG_OP_LOOP)           \
    Y(WHERE, CG_OP_LOOP) Y(NEG, CG_OP_LOOP) Y(ABS, CG_OP_LOOP) Y(EXP, CG_OP_LOOP)             \
    Y(LOG, CG_OP_LOOP) Y(SQRT, CG_OP_LOOP) Y(RSQRT, CG_OP_LOOP) Y(SQUARE, CG_OP_LOOP)         \
    Y(TANH, CG_OP_LOOP) Y(SIGMOID, CG_OP_LOOP) Y(RELU, CG_OP_LOOP) Y(FLOOR, CG_OP_LOOP)       \
    Y(CEIL, CG_OP_LOOP) Y(SIGN, CG_OP_LOOP) Y(CAST, CG_OP_LOOP)                               \
    Y(REDUCE_SUM, CG_OP_KERNEL) Y(REDUCE_MEAN, CG_OP_KERNEL) Y(REDUCE_MAX, CG_OP_KERNEL)      \
    Y(REDUCE_MIN, CG_OP_KERNEL) Y(REDUCE_PROD, CG_OP_KERNEL) Y(REDUCE_ANY, CG_OP_KERNEL)      \
    Y(REDUCE_ALL, CG_OP_KERNEL) Y(ARGMAX, CG_OP_KERNEL) Y(SOFTMAX, CG_OP_KERNEL)              \
    Y(MATMUL, CG_OP_OWN) Y(CONV2D, CG_OP_KERNEL)                                              \
    Y(CONV2D_BACKPROP_INPUT, CG_OP_KERNEL) Y(CONV2D_BACKPROP_FILTER, CG_OP_KERNEL)            \
    Y(QUANTIZE, CG_OP_KERNEL) Y(DEQUANTIZE, CG_OP_KERNEL) Y(QMATMUL, CG_OP_KERNEL)            \
    Y(QCONV2D, CG_OP_KERNEL) Y(REQUANTIZE, CG_OP_KERNEL)                                      \
    Y(RESHAPE, CG_OP_KERNEL) Y(TRANSPOSE, CG_OP_KERNEL) Y(CONCAT, CG_OP_KERNEL)               \
    Y(STACK, CG_OP_KERNEL) Y(SLICE, CG_OP_KERNEL) Y(GATHER, CG_OP_KERNEL)                     \
    Y(UNSORTED_SEGMENT_SUM, CG_OP_KERNEL)                                                     \
    Y(EXPAND_DIMS, CG_OP_KERNEL) Y(SQUEEZE, CG_OP_KERNEL) Y(SHAPE_OF, CG_OP_KERNEL)           \
    Y(SIZE, CG_OP_KERNEL) Y(ONE_HOT, CG_OP_KERNEL)                                            \
    Y(PRINT, CG_OP_KERNEL) Y(ASSERT, CG_OP_KERNEL) Y(VAR_READ, CG_OP_KERNEL)                  \
    Y(ASSIGN, CG_OP_KERNEL) Y(ASSIGN_ADD, CG_OP_KERNEL) Y(ASSIGN_SUB, CG_OP_KERNEL)           \
    Y(TA_NEW, CG_OP_KERNEL) Y(TA_WRITE, CG_OP_KERNEL) Y(TA_READ, CG_OP_KERNEL)                \
    Y(TA_STACK, CG_OP_KERNEL) Y(TA_SIZE, CG_OP_KERNEL)                                        \
    Y(TO_DEVICE, CG_OP_KERNEL) Y(TO_HOST, CG_OP_KERNEL)

#define ROW(id, how) [RT_OP_##id] = how,
const cg_op_use cg_ops[RT_OP_COUNT] = {CPU_OPS(ROW)};
#undef ROW

#define ONE(id, how) +1
_Static_assert(0 CPU_OPS(ONE) == RT_OP_COUNT,
               "backend/cpu/ops_cpu.c needs a row for every op of runtime/core/ops.def");
#undef ONE
