/*
 * mlp.c - the forward pass of a 2-layer perceptron.
 *
 * 8 input features -> 6 hidden units (relu) -> 3 classes (softmax), for a
 * batch of 4 examples. The function returns a struct of tensors, which an
 * AG_FUNCTION may do. AG_SIGNATURE fixes the tensor parameters' dtypes and
 * shapes for agc; `?` lets the batch size vary without retracing. The
 * parameters come from ag_random_uniform with fixed seeds, so every run
 * prints the same numbers.
 */
#include <ag.h>

#include <stdio.h>

typedef struct mlp_output {
    ag_tensor probs;   /* [batch, 3] f32: class probabilities */
    ag_tensor classes; /* [batch] i64: the most probable class */
} mlp_output;

AG_FUNCTION AG_SIGNATURE("f32[?,8], f32[8,6], f32[6], f32[6,3], f32[3]")
mlp_output mlp_forward(ag_tensor x, ag_tensor w1, ag_tensor b1, ag_tensor w2,
                       ag_tensor b2) {
    ag_tensor hidden = ag_relu(ag_add(ag_matmul(x, w1), b1)); /* b1 broadcasts */
    ag_tensor logits = ag_add(ag_matmul(hidden, w2), b2);
    mlp_output out;
    out.probs = ag_softmax(logits, -1);   /* over the last axis: the classes */
    out.classes = ag_argmax(out.probs, 1);
    return out;
}

/* The parameters come from seeds SEED, SEED + 1, ... SEED was picked so
 * that no printed probability lies within a few f32 ulps of a 6-digit
 * rounding tie: a kernel that sums in another order prints the same. */
enum { SEED = 601 };

int main(void)
{
    ag_tensor x = ag_random_uniform(AG_SHAPE(4, 8), -1.0, 1.0, AG_F32, SEED);
    ag_tensor w1 = ag_random_uniform(AG_SHAPE(8, 6), -1.0, 1.0, AG_F32, SEED + 1);
    ag_tensor b1 = ag_random_uniform(AG_SHAPE(6), -0.5, 0.5, AG_F32, SEED + 2);
    ag_tensor w2 = ag_random_uniform(AG_SHAPE(6, 3), -2.0, 2.0, AG_F32, SEED + 3);
    ag_tensor b2 = ag_random_uniform(AG_SHAPE(3), -0.5, 0.5, AG_F32, SEED + 4);

    mlp_output out = mlp_forward(x, w1, b1, w2, b2);
    printf("mlp: 4 examples, 8 features -> 6 hidden (relu) -> 3 classes\n");
    ag_print("probabilities:", out.probs);
    ag_print("predicted classes:", out.classes);

    ag_shutdown();
    return 0;
}
