/*
 * convnet.c - a small convolutional net (two 3x3 convolutions with relu,
 * global average pooling, a dense layer and softmax) on a batch of 8
 * 32x32 RGB images, to run on the simulated TPU:
 *
 *   agc convnet.c -o convnet.ag.c && cc convnet.ag.c -lag -lm -o convnet
 *   AG_TARGET=tpu-model AG_PROFILE=1 ./convnet
 *   AG_TARGET=tpu-model AG_PROFILE_TRACE=convnet.json ./convnet   # timeline for Perfetto
 *
 * The convolutions run on the TPU's matrix units as im2col products.
 */
#include <ag.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

AG_FUNCTION AG_SIGNATURE("f32[8,32,32,3], f32[3,3,3,16], f32[3,3,16,32], f32[32,10]")
ag_tensor convnet(ag_tensor images, ag_tensor f1, ag_tensor f2, ag_tensor dense)
{
    ag_tensor h = ag_relu(ag_conv2d(images, f1, 1, 1, AG_SAME));
    h = ag_relu(ag_conv2d(h, f2, 2, 2, AG_SAME));
    ag_tensor pooled = ag_reduce_mean(ag_reduce_mean(h, 1, false), 1, false); /* [8,32] */
    return ag_softmax(ag_matmul(pooled, dense), 1);
}

/* A value in [-1, 1) from a linear congruential generator. */
static float uniform(uint32_t *state)
{
    *state = *state * 1664525u + 1013904223u;
    return (float)(*state >> 8) / (float)(1u << 23) - 1.0f;
}

/* Values of shape s in [-scale, scale), from a fixed seed. */
static ag_tensor made(ag_shape s, float scale, int seed)
{
    int64_t n = 1;
    for (int i = 0; i < s.rank; i++)
        n *= s.dims[i];
    uint32_t state = (uint32_t)seed * 2654435761u;
    float *v = malloc((size_t)n * sizeof *v);
    for (int64_t i = 0; i < n; i++)
        v[i] = scale * uniform(&state);
    ag_tensor t = ag_from_data(AG_F32, s, v);
    free(v);
    return t;
}

int main(void)
{
    ag_tensor p = convnet(made(AG_SHAPE(8, 32, 32, 3), 1.0f, 1),
                          made(AG_SHAPE(3, 3, 3, 16), 0.3f, 2),
                          made(AG_SHAPE(3, 3, 16, 32), 0.1f, 3), made(AG_SHAPE(32, 10), 0.5f, 4));
    ag_print("classes:", ag_argmax(p, 1));
    ag_shutdown();
    return 0;
}
