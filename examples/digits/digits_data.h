/*
 * digits_data.h - scikit-learn's digits data set, read from its CSV.
 *
 * 1,797 images of handwritten digits, 8x8 pixels of 0..16, with their
 * labels 0..9: the file digits.csv that scripts/get_digits.sh takes out of
 * Debian's python3-sklearn package (one image per line, the 64 pixels row
 * by row, then the label). Plain C, no ag: train_digits.c and serve_digits.c call it.
 */
#ifndef DIGITS_DATA_H
#define DIGITS_DATA_H

#include <stdint.h>

enum { DIGITS_N = 1797, DIGITS_PIXELS = 64, DIGITS_CLASSES = 10 };

/* The examples' split (digits_split): 360 test images, 1,437 to train
 * on, the same in every program and run. */
enum { DIGITS_N_TEST = 360, DIGITS_SPLIT_SEED = 2718 };

/* n images: pixels[i] is image i (0..16 each), labels[i] its digit. */
typedef struct digits {
    int n;
    float pixels[DIGITS_N][DIGITS_PIXELS];
    int64_t labels[DIGITS_N];
} digits;

/* Reads all 1,797 images of path into d: 0, or -1 after saying on stderr
 * what is wrong (the file, its line). */
int digits_load(const char *path, digits *d);

/* A fixed split: the images in the order of a shuffle from seed, the
 * first n_test of them into test, the others into train. */
void digits_split(const digits *all, uint64_t seed, int n_test, digits *train,
                  digits *test);

/* A random order of 0 .. n-1 from *state (updated): a Fisher-Yates
 * shuffle driven by a 64-bit linear congruential generator, the same on
 * every platform. */
void digits_shuffle(int *order, int n, uint64_t *state);

#endif
