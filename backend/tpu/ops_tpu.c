/*
 * ops_tpu.c - the tpu-model's op table: for every op of ops.def, the unit
 * of the device that runs it, or TPU_OP_HOST when the device has no such
 * op (host work: printing, assertions, variables, random numbers, tensor
 * arrays), which soft placement runs on the host and otherwise is an error
 * at the user's line.
 *
 * Every op has a row: adding one to ops.def fails the build here until
 * the device says what it does with it (the count below), and a row left
 * zero cannot happen quietly either (TPU_OP_UNLISTED, which test_tpu
 * checks no op has). The support (pass_caps.supports), the fusion
 * (pass_caps.fuses) and the compiler's choice of unit (compile.c) read it.
 */
#include "program.h"

#define TPU_OPS(Y)                                                                              \
    Y(CONST, TPU_OP_CONST) Y(FILL, TPU_OP_XLU) Y(FILL_LIKE, TPU_OP_XLU) Y(EYE, TPU_OP_XLU)      \
    Y(RANGE, TPU_OP_XLU) Y(RANDOM_UNIFORM, TPU_OP_HOST)                                         \
    /* the vector unit's fused loops: every elementwise op */                                   \
    Y(ADD, TPU_OP_VPU) Y(SUB, TPU_OP_VPU) Y(MUL, TPU_OP_VPU) Y(DIV, TPU_OP_VPU)                 \
    Y(FLOORDIV, TPU_OP_VPU) Y(MOD, TPU_OP_VPU) Y(POW, TPU_OP_VPU) Y(MAXIMUM, TPU_OP_VPU)        \
    Y(MINIMUM, TPU_OP_VPU) Y(EQUAL, TPU_OP_VPU) Y(NOT_EQUAL, TPU_OP_VPU) Y(LESS, TPU_OP_VPU)    \
    Y(LESS_EQUAL, TPU_OP_VPU) Y(GREATER, TPU_OP_VPU) Y(GREATER_EQUAL, TPU_OP_VPU)               \
    Y(LOGICAL_AND, TPU_OP_VPU) Y(LOGICAL_OR, TPU_OP_VPU) Y(LOGICAL_NOT, TPU_OP_VPU)             \
    Y(WHERE, TPU_OP_VPU) Y(NEG, TPU_OP_VPU) Y(ABS, TPU_OP_VPU) Y(EXP, TPU_OP_VPU)               \
    Y(LOG, TPU_OP_VPU) Y(SQRT, TPU_OP_VPU) Y(RSQRT, TPU_OP_VPU) Y(SQUARE, TPU_OP_VPU)           \
    Y(TANH, TPU_OP_VPU) Y(SIGMOID, TPU_OP_VPU) Y(RELU, TPU_OP_VPU) Y(FLOOR, TPU_OP_VPU)         \
    Y(CEIL, TPU_OP_VPU) Y(SIGN, TPU_OP_VPU) Y(CAST, TPU_OP_VPU)                                 \
    /* the cross-lane unit: reductions, softmax, data movement */                               \
    Y(REDUCE_SUM, TPU_OP_XLU) Y(REDUCE_MEAN, TPU_OP_XLU) Y(REDUCE_MAX, TPU_OP_XLU)              \
    Y(REDUCE_MIN, TPU_OP_XLU) Y(REDUCE_PROD, TPU_OP_XLU) Y(REDUCE_ANY, TPU_OP_XLU)              \
    Y(REDUCE_ALL, TPU_OP_XLU) Y(ARGMAX, TPU_OP_XLU) Y(SOFTMAX, TPU_OP_XLU)                      \
    Y(MATMUL, TPU_OP_MXU) Y(CONV2D, TPU_OP_MXU)                                                 \
    /* conv2d's gradients: the model has no MXU form of them yet (soft placement) */            \
    Y(CONV2D_BACKPROP_INPUT, TPU_OP_HOST) Y(CONV2D_BACKPROP_FILTER, TPU_OP_HOST)                \
    /* quantized ops: the int8 products on the MXU's int8 passes (twice the bf16 rate); the  \
     * scaling ops are vector work outside fused loops (not elementwise: their operands      \
     * broadcast into the first), costed as passes over their operands, computed by the      \
     * runtime's kernels (kernels/quant.c), so their bits are the other targets' */           \
    Y(QMATMUL, TPU_OP_MXU) Y(QCONV2D, TPU_OP_MXU)                                               \
    Y(QUANTIZE, TPU_OP_XLU) Y(DEQUANTIZE, TPU_OP_XLU) Y(REQUANTIZE, TPU_OP_XLU)                 \
    Y(RESHAPE, TPU_OP_VIEW) Y(TRANSPOSE, TPU_OP_XLU) Y(CONCAT, TPU_OP_XLU) Y(STACK, TPU_OP_XLU) \
    Y(SLICE, TPU_OP_XLU) Y(GATHER, TPU_OP_XLU) Y(UNSORTED_SEGMENT_SUM, TPU_OP_XLU)              \
    Y(EXPAND_DIMS, TPU_OP_VIEW)                                                                 \
    Y(SQUEEZE, TPU_OP_VIEW) Y(SHAPE_OF, TPU_OP_XLU) Y(SIZE, TPU_OP_XLU) Y(ONE_HOT, TPU_OP_XLU)  \
    /* host work */                                                                             \
    Y(PRINT, TPU_OP_HOST) Y(ASSERT, TPU_OP_HOST) Y(VAR_READ, TPU_OP_HOST)                       \
    Y(ASSIGN, TPU_OP_HOST) Y(ASSIGN_ADD, TPU_OP_HOST) Y(ASSIGN_SUB, TPU_OP_HOST)                \
    Y(TA_NEW, TPU_OP_HOST) Y(TA_WRITE, TPU_OP_HOST) Y(TA_READ, TPU_OP_HOST)                     \
    Y(TA_STACK, TPU_OP_HOST) Y(TA_SIZE, TPU_OP_HOST)                                            \
    Y(TO_DEVICE, TPU_OP_LINK) Y(TO_HOST, TPU_OP_LINK)

#define ROW(id, unit) [RT_OP_##id] = unit,
const tpu_op_unit tpu_ops[RT_OP_COUNT] = {TPU_OPS(ROW)};
#undef ROW

/* One row per op of ops.def: with designated rows, a missing op would be
 * a silent zero, so the rows are counted (a repeated row is a compiler
 * warning: -Woverride-init in -Wextra). */
#define ONE(id, unit) +1
_Static_assert(0 TPU_OPS(ONE) == RT_OP_COUNT,
               "backend/tpu/ops_tpu.c needs a row for every op of runtime/core/ops.def");
#undef ONE
