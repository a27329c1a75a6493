/*
 * export_mlp.c - a classifier exported as a saved model (docs/saved-model.md).
 *
 *   agc export_mlp.c -o export_mlp.ag.c && cc export_mlp.ag.c -lag -o export_mlp
 *   ./export_mlp mlp_model batch.txt     # runs it once on a batch (written to
 *                                        # batch.txt), then saves mlp_model/
 *   agc-model show mlp_model             # signatures, functions, aliases, variables
 *   agc-model run mlp_model --signature serving_default --input pixels=batch.txt
 *
 * `serve` scales the pixels (host work) and calls two AG_FUNCTIONs with
 * aliases, `hidden_layers` ("tpu_func_1") and `classifier` ("tpu_func_2"):
 * the functions agc-convert can place on the TPU (docs/converter.md). The
 * weights are variables, saved with the model; they are made from a
 * formula so that the example needs no data files.
 *
 * Saving traces the functions, so it needs the staged build (agc): built
 * eagerly, the program runs but has no AG_FUNCTIONs to save, and says so.
 */
#include <ag.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static ag_variable w1, b1, w2, b2, w3, b3;

AG_FUNCTION AG_ALIAS("tpu_func_1")
ag_tensor hidden_layers(ag_tensor x)
{
    ag_tensor h = ag_relu(ag_add(ag_matmul(x, ag_variable_read(w1)), ag_variable_read(b1)));
    return ag_relu(ag_add(ag_matmul(h, ag_variable_read(w2)), ag_variable_read(b2)));
}

AG_FUNCTION AG_ALIAS("tpu_func_2")
ag_tensor classifier(ag_tensor h)
{
    return ag_softmax(ag_add(ag_matmul(h, ag_variable_read(w3)), ag_variable_read(b3)), 1);
}

typedef struct prediction {
    ag_tensor classes, probabilities;
} prediction;

AG_FUNCTION AG_SIGNATURE("f32[?,784]")
prediction serve(ag_tensor pixels)
{
    ag_tensor p = classifier(hidden_layers(ag_div(pixels, 255.0f)));
    return (prediction){ag_argmax(p, 1), p};
}

/* A value in [-1, 1) from a linear congruential generator. */
static float uniform(uint32_t *state)
{
    *state = *state * 1664525u + 1013904223u;
    return (float)(*state >> 8) / (float)(1u << 23) - 1.0f;
}

/* A rows x cols (or, rows = 0, a vector of cols) tensor in [lo, hi). */
static ag_tensor made(int64_t rows, int64_t cols, float lo, float hi, int seed)
{
    uint32_t state = (uint32_t)seed * 2654435761u;
    int64_t n = (rows ? rows : 1) * cols;
    float *v = malloc((size_t)n * sizeof *v);
    for (int64_t i = 0; i < n; i++)
        v[i] = lo + (hi - lo) * (uniform(&state) + 1.0f) / 2.0f;
    ag_tensor t = rows ? ag_from_data(AG_F32, AG_SHAPE(rows, cols), v)
                       : ag_from_data(AG_F32, AG_SHAPE(cols), v);
    free(v);
    return t;
}

/* The batch as text, the form agc-model run reads. */
static void write_batch(const char *path, ag_tensor t)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        exit(1);
    }
    for (int64_t i = 0; i < ag_num_elements(t); i++)
        fprintf(f, "%.9g%c", ag_get_f64(t, i), i % 784 == 783 ? '\n' : ' ');
    fclose(f);
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "mlp_model";
    w1 = ag_variable_new(made(784, 512, -0.08f, 0.08f, 2));
    b1 = ag_variable_new(made(0, 512, -0.1f, 0.1f, 3));
    w2 = ag_variable_new(made(512, 512, -0.08f, 0.08f, 4));
    b2 = ag_variable_new(made(0, 512, -0.1f, 0.1f, 5));
    w3 = ag_variable_new(made(512, 10, -0.4f, 0.4f, 6));
    b3 = ag_variable_new(made(0, 10, -0.1f, 0.1f, 7));

    ag_tensor batch = made(4, 784, 0, 255, 1);
    if (argc > 2)
        write_batch(argv[2], batch);
    prediction p = serve(batch);
    ag_print("classes:", p.classes);
    ag_print("probabilities, row 0:", ag_slice(p.probabilities, AG_INDEX(0, 0), AG_INDEX(1, 10)));

    static const char *const outputs[] = {"classes", "probabilities"};
    ag_export_signature sig = {.name = "serving_default", .function = "serve",
                               .output_names = outputs};
    ag_save_options options = {.signatures = &sig, .n_signatures = 1};
    ag_set_error_mode(AG_ERRORS_RETURN);
    if (!ag_saved_model_save(dir, &options)) {
        fprintf(stderr, "export_mlp: %s\n", ag_last_error());
        return 1;
    }
    printf("saved %s\n", dir);
    ag_shutdown();
    return 0;
}
