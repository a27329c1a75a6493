/*
 * mlp.c - an MLP forward pass (784-512-512-10, batch 64) to run on the
 * simulated TPU:
 *
 *   agc mlp.c -o mlp.ag.c && cc mlp.ag.c -lag -lm -o mlp
 *   AG_TARGET=tpu-model AG_PROFILE=1 ./mlp      # the TPU's results and profile
 *   ./mlp                                       # the same on the CPU
 *   agc --emit=tpu mlp.c                        # the TPU program
 *
 * The weights are made from a formula so that the program needs no data
 * files. The TPU rounds the products' operands to bf16, so its
 * probabilities differ from the CPU's in the third digit; what this
 * prints (rounded) is the same on both.
 */
#include <ag.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

AG_FUNCTION AG_SIGNATURE("f32[64,784], f32[784,512], f32[512], f32[512,512], f32[512], "
                         "f32[512,10], f32[10]")
ag_tensor mlp(ag_tensor x, ag_tensor w1, ag_tensor b1, ag_tensor w2, ag_tensor b2,
              ag_tensor w3, ag_tensor b3)
{
    ag_tensor h1 = ag_relu(ag_add(ag_matmul(x, w1), b1));
    ag_tensor h2 = ag_relu(ag_add(ag_matmul(h1, w2), b2));
    return ag_softmax(ag_add(ag_matmul(h2, w3), b3), 1);
}

/* A value in [-1, 1) from a linear congruential generator. */
static float uniform(uint32_t *state)
{
    *state = *state * 1664525u + 1013904223u;
    return (float)(*state >> 8) / (float)(1u << 23) - 1.0f;
}

/* rows x cols values in [-scale, scale), from a fixed seed. */
static ag_tensor made(int64_t rows, int64_t cols, float scale, int seed)
{
    uint32_t state = (uint32_t)seed * 2654435761u;
    float *v = malloc((size_t)(rows * cols) * sizeof *v);
    for (int64_t i = 0; i < rows * cols; i++)
        v[i] = scale * uniform(&state);
    ag_tensor t = rows == 1 ? ag_from_data(AG_F32, AG_SHAPE(cols), v)
                            : ag_from_data(AG_F32, AG_SHAPE(rows, cols), v);
    free(v);
    return t;
}

int main(void)
{
    ag_tensor x = made(64, 784, 1.0f, 1);
    ag_tensor p = mlp(x, made(784, 512, 0.08f, 2), made(1, 512, 0.1f, 3),
                      made(512, 512, 0.08f, 4), made(1, 512, 0.1f, 5), made(512, 10, 0.4f, 6),
                      made(1, 10, 0.1f, 7));
    ag_tensor classes = ag_argmax(p, 1);
    ag_tensor best = ag_reduce_max(p, 1, false);
    ag_print("classes of the first 8 rows:", ag_slice(classes, AG_INDEX(0), AG_INDEX(8)));
    printf("largest probability, row 0: %.2f\n", ag_get_f64(best, 0));
    ag_shutdown();
    return 0;
}
