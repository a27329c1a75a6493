/*
 * conv2d.c - edge detection with ag_conv2d.
 *
 * Images are NHWC ([batch, height, width, channels]) and filters HWIO
 * ([height, width, in channels, out channels]), as in TensorFlow. A 3x3
 * Sobel filter responds where brightness changes from left to right. The
 * stride and the padding are C scalars (an int and an enum), so under agc
 * each combination is its own concrete function.
 */
#include <ag.h>

#include <stdio.h>

AG_FUNCTION ag_tensor detect_edges(ag_tensor image, ag_tensor filter, int stride,
                                   ag_padding padding) {
    ag_tensor y = ag_conv2d(image, filter, stride, stride, padding);
    return ag_squeeze(ag_squeeze(y, 3), 0); /* [1, H, W, 1] -> [H, W] */
}

/* A 6x6 dark image with a bright 3x3 square at rows 1-3, columns 1-3. */
static ag_tensor make_image(void)
{
    float pixels[6][6] = {{0}};
    for (int r = 1; r <= 3; r++)
        for (int c = 1; c <= 3; c++)
            pixels[r][c] = 1.0f;
    return ag_from_data(AG_F32, AG_SHAPE(1, 6, 6, 1), pixels);
}

/* Sobel-x: right column minus left column, the middle row weighted 2. */
static ag_tensor make_filter(void)
{
    static const float sobel_x[3][3] = {{-1, 0, 1}, {-2, 0, 2}, {-1, 0, 1}};
    return ag_from_data(AG_F32, AG_SHAPE(3, 3, 1, 1), sobel_x);
}

int main(void)
{
    ag_tensor image = make_image();
    ag_tensor filter = make_filter();
    ag_print("image:", ag_squeeze(ag_squeeze(image, 3), 0));

    /* SAME pads so that the output has ceil(6 / stride) rows and columns;
     * VALID uses only full 3x3 windows: (6 - 3) / stride + 1. */
    const ag_padding paddings[] = {AG_SAME, AG_VALID};
    const char *names[] = {"SAME", "VALID"};
    for (int p = 0; p < 2; p++) {
        for (int stride = 1; stride <= 2; stride++) {
            ag_scope_push();
            printf("%s padding, stride %d:\n", names[p], stride);
            ag_print(detect_edges(image, filter, stride, paddings[p]));
            ag_scope_pop();
        }
    }
    ag_shutdown();
    return 0;
}
