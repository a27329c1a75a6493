/* bf16_models: an MLP (batch 16, 64-32-10, relu, softmax) and a conv2d
 * layer (3x3, relu) staged, against the same ops run eagerly in f32. The
 * e2e.bf16_models.bf16 run converts the staged functions to bf16
 * (AG_BF16=1): their normwise error against f32, max |f32 - staged| /
 * max |f32|, must stay below 2e-2, the bound docs/passes.md states (bf16
 * keeps 8 significant bits, a relative step of 2^-8 = 0.0039, and the
 * products sum 64 terms in f32). Every other run computes in f32 and is
 * exact. */
#include "e2e.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

static ag_tensor mlp_f32(ag_tensor x, ag_tensor w1, ag_tensor b1, ag_tensor w2, ag_tensor b2)
{
    ag_tensor h = ag_relu(ag_add(ag_matmul(x, w1), b1));
    return ag_softmax(ag_add(ag_matmul(h, w2), b2), 1);
}

AG_FUNCTION AG_SIGNATURE("f32[16,64], f32[64,32], f32[32], f32[32,10], f32[10]")
ag_tensor mlp(ag_tensor x, ag_tensor w1, ag_tensor b1, ag_tensor w2, ag_tensor b2)
{
    ag_tensor h = ag_relu(ag_add(ag_matmul(x, w1), b1));
    return ag_softmax(ag_add(ag_matmul(h, w2), b2), 1);
}

static ag_tensor conv_f32(ag_tensor x, ag_tensor f)
{
    return ag_relu(ag_conv2d(x, f, 1, 1, AG_SAME));
}

AG_FUNCTION AG_SIGNATURE("f32[2,8,8,3], f32[3,3,3,4]")
ag_tensor conv(ag_tensor x, ag_tensor f)
{
    return ag_relu(ag_conv2d(x, f, 1, 1, AG_SAME));
}

/* Values of shape s uniform in [-scale, scale), from a fixed seed. */
static ag_tensor made(ag_shape s, float scale, uint32_t seed)
{
    int64_t n = 1;
    for (int i = 0; i < s.rank; i++)
        n *= s.dims[i];
    uint32_t state = seed * 2654435761u + 1;
    float *v = malloc((size_t)n * sizeof *v);
    for (int64_t i = 0; i < n; i++) {
        state = state * 1664525u + 1013904223u;
        v[i] = scale * ((float)(state >> 8) / (float)(1u << 23) - 1.0f);
    }
    ag_tensor t = ag_from_data(AG_F32, s, v);
    free(v);
    return t;
}

/* Prints whether got is within the bound of want, and a few of its values
 * at the precision the bound leaves. */
static void report(const char *what, ag_tensor want, ag_tensor got)
{
    double err = 0, scale = 0;
    for (int64_t i = 0; i < ag_num_elements(want); i++) {
        double w = ag_get_f64(want, i), g = ag_get_f64(got, i);
        err = fmax(err, fabs(w - g));
        scale = fmax(scale, fabs(w));
    }
    printf("%s: %lld values, normwise error below 2e-2: %s\n", what,
           (long long)ag_num_elements(want), err <= 2e-2 * scale ? "yes" : "no");
    printf("%s: first values %.2f %.2f %.2f\n", what, ag_get_f64(got, 0), ag_get_f64(got, 1),
           ag_get_f64(got, 2));
}

int main(void)
{
    ag_tensor x = made(AG_SHAPE(16, 64), 1.0f, 1), w1 = made(AG_SHAPE(64, 32), 0.25f, 2);
    ag_tensor b1 = made(AG_SHAPE(32), 0.1f, 3), w2 = made(AG_SHAPE(32, 10), 0.5f, 4);
    ag_tensor b2 = made(AG_SHAPE(10), 0.1f, 5);
    report("mlp", mlp_f32(x, w1, b1, w2, b2), mlp(x, w1, b1, w2, b2));
    ag_tensor images = made(AG_SHAPE(2, 8, 8, 3), 1.0f, 6);
    ag_tensor filter = made(AG_SHAPE(3, 3, 3, 4), 0.3f, 7);
    report("conv2d", conv_f32(images, filter), conv(images, filter));
    ag_shutdown();
    return 0;
}
