/*
 * kernels.h - kernels that code outside their family calls directly
 * (benchmarks, and later the compiled backends), bypassing rt_apply.
 */
#ifndef RT_KERNELS_H
#define RT_KERNELS_H

#include "../core/rt.h"

/* The geometry of one conv2d: input x is NHWC [n, h, w, c], the filter HWIO
 * [kh, kw, c, o], the output NHWC [n, oh, ow, o]. Input row ih of output row
 * i is i * sh - pad_top + kh (likewise for columns); rows outside the input
 * read as zero. */
typedef struct rt_conv2d_geom {
    int64_t n, h, w, c;
    int64_t kh, kw, o;
    int64_t sh, sw;
    int64_t oh, ow;
    int64_t pad_top, pad_left;
} rt_conv2d_geom;

/* The shape of conv2d's result for input x (NHWC) and filter f (HWIO),
 * either possibly with unknown dims (-1, which stay unknown where they
 * matter); false with a message in e if the conv2d is certainly invalid.
 * The shape rule of conv2d, and of its gradients (conv_grad.c). */
bool rt_conv2d_out_shape(const ag_shape *x, const ag_shape *f, int stride_h, int stride_w,
                         ag_padding padding, ag_shape *out, rt_err *e);

/* Checks a conv2d of concrete shapes and fills g (TensorFlow's SAME/VALID
 * output sizes and padding split); false with a message in e if invalid. */
bool rt_conv2d_geometry(const ag_shape *x, const ag_shape *filter, int stride_h,
                        int stride_w, ag_padding padding, rt_conv2d_geom *g, rt_err *e);

/* The f32 conv2d kernel: out[n*oh*ow*o] from x and filter laid out as g says.
 * Uses im2col + sgemm with a bounded column buffer (about 4 MiB, at least
 * 256 rows), which stays in cache between building and multiplying. */
void rt_conv2d_f32(const rt_conv2d_geom *g, const float *x, const float *filter,
                   float *out);

/* Whether OpenBLAS can take the work buffers of a product (blas_memory.c):
 * false, with the reason in e, where an address-space limit leaves no room
 * for them (OpenBLAS would retry forever). */
bool rt_blas_memory_check(rt_err *e);

#endif
