/* quantized_layer: a dense layer quantized by hand with static ranges
 * (docs/quantization.md): the input quantized with its scale and zero
 * point, an int8 product with int32 sums, the int32 bias added, the sums
 * requantized with the relu folded into the clamp, and the result
 * dequantized; beside it the same layer in f32. The int8 path prints the
 * same bits however it runs (eager, staged, interpreted, on the TPU-model);
 * the float layer's error is printed as a bound. */
#include "e2e.h"

/* Weights [4,3] as int8 with one scale per output channel (absmax/127),
 * the bias as int32 with scale s_x * s_w. */
static const int8_t WQ[12] = {127, -64, 10, -127, 127, -20, 32, 0, 127, 0, 50, -127};
static const float S_W[3] = {0.01f, 0.02f, 0.005f};
static const int32_t BIAS[3] = {40, -100, 7};

#define S_X 0.05f  /* the input's range [-6.4, 6.35]: (max - min) / 255 */
#define Z_X 0
#define S_Y 0.08f  /* the output's range [0, 20.4] */
#define Z_Y -128   /* relu: the output's range starts at 0 */

AG_FUNCTION AG_SIGNATURE("f32[2,4]")
ag_tensor layer_q(ag_tensor x)
{
    ag_tensor zx = ag_scalar_i32(Z_X), zy = ag_scalar_i32(Z_Y);
    ag_tensor xq = ag_quantize(x, ag_scalar_f32(S_X), zx);
    ag_tensor wq = ag_from_data(AG_I8, AG_SHAPE(4, 3), WQ);
    ag_tensor acc = ag_add(ag_qmatmul(xq, wq, zx), ag_from_data(AG_I32, AG_SHAPE(3), BIAS));
    float m[3];
    for (int j = 0; j < 3; j++)
        m[j] = S_X * S_W[j] / S_Y;
    ag_tensor yq = ag_requantize(acc, ag_from_data(AG_F32, AG_SHAPE(3), m), zy, Z_Y, 127);
    ag_print("acc =", acc);
    ag_print("yq =", yq);
    return ag_dequantize(yq, ag_scalar_f32(S_Y), zy);
}

AG_FUNCTION AG_SIGNATURE("f32[2,4]")
ag_tensor layer_f32(ag_tensor x)
{
    ag_tensor w = ag_mul(ag_cast(ag_from_data(AG_I8, AG_SHAPE(4, 3), WQ), AG_F32),
                         ag_from_data(AG_F32, AG_SHAPE(3), S_W));
    ag_tensor b = ag_mul(ag_cast(ag_from_data(AG_I32, AG_SHAPE(3), BIAS), AG_F32),
                         ag_mul(ag_from_data(AG_F32, AG_SHAPE(3), S_W), S_X));
    return ag_relu(ag_add(ag_matmul(x, w), b));
}

int main(void)
{
    const float x[8] = {1.0f, -0.5f, 2.25f, 0.125f, -3.0f, 6.35f, 0.025f, -0.075f};
    ag_tensor in = ag_from_data(AG_F32, AG_SHAPE(2, 4), x);
    ag_tensor q = layer_q(in), f = layer_f32(in);
    ag_print("int8 =", q);
    /* the float layer's digits vary with the target (bf16 on the TPU-model),
     * so it prints how far the int8 layer is from it */
    ag_tensor err = ag_reduce_max(ag_abs(ag_sub(q, f)), AG_ALL_AXES, false);
    ag_print("max |int8 - f32| < 0.1:", ag_less(err, 0.1));
    ag_shutdown();
    return 0;
}
