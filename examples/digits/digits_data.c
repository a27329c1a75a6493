/*
 * digits_data.c - reading digits.csv, and the split (digits_data.h).
 */
#include "digits_data.h"

#include <stdio.h>
#include <stdlib.h>

/* One line's 64 pixels and its label into d's image i: 0, or -1 when the
 * line is not 65 integers in range. */
static int parse_line(const char *line, digits *d, int i)
{
    const char *p = line;
    for (int k = 0; k <= DIGITS_PIXELS; k++) {
        char *end;
        long v = strtol(p, &end, 10);
        int last = k == DIGITS_PIXELS;
        if (end == p || v < 0 || v > (last ? DIGITS_CLASSES - 1 : 16))
            return -1;
        if (*end != (last ? '\n' : ',') && !(last && *end == '\0'))
            return -1;
        if (last)
            d->labels[i] = v;
        else
            d->pixels[i][k] = (float)v;
        p = end + 1;
    }
    return 0;
}

int digits_load(const char *path, digits *d)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        perror(path);
        fprintf(stderr, "(bash scripts/get_digits.sh DIR writes DIR/digits.csv)\n");
        return -1;
    }
    char line[512];
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        if (n == DIGITS_N || parse_line(line, d, n) != 0) {
            fprintf(stderr, "%s:%d: not an image of digits.csv (64 pixels 0..16, "
                            "then a label 0..9)\n", path, n + 1);
            fclose(f);
            return -1;
        }
        n++;
    }
    fclose(f);
    if (n != DIGITS_N) {
        fprintf(stderr, "%s: %d images, not %d\n", path, n, DIGITS_N);
        return -1;
    }
    d->n = n;
    return 0;
}

static uint64_t next(uint64_t *state)
{
    /* Knuth's MMIX constants; the high bits are the random ones */
    *state = *state * 6364136223846793005u + 1442695040888963407u;
    return *state >> 33;
}

void digits_shuffle(int *order, int n, uint64_t *state)
{
    for (int i = 0; i < n; i++)
        order[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)(next(state) % (uint64_t)(i + 1));
        int t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
}

static void copy_image(const digits *from, int i, digits *to)
{
    for (int k = 0; k < DIGITS_PIXELS; k++)
        to->pixels[to->n][k] = from->pixels[i][k];
    to->labels[to->n++] = from->labels[i];
}

void digits_split(const digits *all, uint64_t seed, int n_test, digits *train,
                  digits *test)
{
    static int order[DIGITS_N];
    uint64_t state = seed;
    digits_shuffle(order, all->n, &state);
    train->n = test->n = 0;
    for (int i = 0; i < all->n; i++)
        copy_image(all, order[i], i < n_test ? test : train);
}
