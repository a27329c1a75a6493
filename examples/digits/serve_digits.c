/*
 * serve_digits.c - the trained digits model, served: a representative
 * data set made from its training images, and its accuracy on the test
 * images, for the model as saved or as agc-convert quantized it.
 *
 *   ./train_digits data/digits.csv digits_model
 *   ./serve_digits dataset data/digits.csv calib.tfrecord
 *   agc-convert --input_model_dir=digits_model --converter_options=srq.pbtxt \
 *       --output_model_dir=digits_int8
 *   ./serve_digits accuracy data/digits.csv digits_model     # float
 *   ./serve_digits accuracy data/digits.csv digits_int8      # int8
 *
 * with srq.pbtxt (docs/quantization.md):
 *
 *   external_feature_configs { quantization_options {
 *     representative_datasets { key: "serving_default"
 *                               value { tfrecord_file_path: "calib.tfrecord" } } } }
 *
 * The split is train_digits.c's (the same seed), so the data set holds
 * only training images and the accuracy is measured on images neither
 * the training nor the calibration saw. Plain C: no AG_FUNCTION here, the
 * model brings its functions.
 */
#include <ag.h>

#include "digits_data.h"

#include <stdio.h>
#include <string.h>

static digits all, train, test;

/* One sample per training image: the input "pixels", f32 [1, 64]. */
static int write_dataset(const char *path)
{
    ag_dataset_writer *w = ag_dataset_writer_open(path);
    if (!w)
        return 1;
    for (int i = 0; i < train.n; i++) {
        ag_scope_push();
        ag_named_tensor in = {"pixels", ag_from_data(AG_F32, AG_SHAPE(1, DIGITS_PIXELS),
                                                     train.pixels[i])};
        bool ok = ag_dataset_writer_add(w, &in, 1);
        ag_scope_pop();
        if (!ok)
            return 1;
    }
    if (!ag_dataset_writer_close(w))
        return 1;
    printf("wrote %s: %d samples of the training images\n", path, train.n);
    return 0;
}

/* The model's serving_default on every test image at once. */
static int accuracy(const char *dir)
{
    ag_saved_model *m = ag_saved_model_load(dir);
    if (!m)
        return 1;
    ag_named_tensor in = {"pixels", ag_from_data(AG_F32, AG_SHAPE(test.n, DIGITS_PIXELS),
                                                 test.pixels)};
    ag_named_tensor out[2];
    if (!ag_model_call(m, "serving_default", &in, 1, out, 2))
        return 1;
    int right = 0;
    for (int i = 0; i < test.n; i++)
        right += ag_get_i64(out[0].tensor, i) == test.labels[i];
    printf("test accuracy %.2f%% (%d images) of %s\n", 100.0 * right / test.n, test.n, dir);
    ag_saved_model_free(m);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 4 || (strcmp(argv[1], "dataset") != 0 && strcmp(argv[1], "accuracy") != 0)) {
        fprintf(stderr, "usage: serve_digits dataset DIGITS_CSV OUT.tfrecord\n"
                        "       serve_digits accuracy DIGITS_CSV MODEL_DIR\n");
        return 2;
    }
    if (digits_load(argv[2], &all) != 0)
        return 1;
    digits_split(&all, DIGITS_SPLIT_SEED, DIGITS_N_TEST, &train, &test);
    ag_set_error_mode(AG_ERRORS_RETURN);
    int status = argv[1][0] == 'd' ? write_dataset(argv[3]) : accuracy(argv[3]);
    if (status)
        fprintf(stderr, "serve_digits: %s\n", ag_last_error());
    ag_shutdown();
    return status;
}
