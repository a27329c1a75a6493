/*
 * conv_grad.c - the two halves of conv2d's gradient, in conv2d's own
 * layout and padding (NHWC input, HWIO filter, TensorFlow's SAME/VALID:
 * linalg.c), as TensorFlow's Conv2DBackpropInput and Conv2DBackpropFilter:
 *
 *   conv2d_backprop_input(dy, w), shape = the input's:
 *     dx[b,ih,iw,c] = sum of dy[b,i,j,o] * w[kh,kw,c,o] over the output
 *     pixels (i, j) whose window reads (ih, iw) at tap (kh, kw);
 *   conv2d_backprop_filter(x, dy), shape = the filter's:
 *     dw[kh,kw,c,o] = sum of x[b,ih,iw,c] * dy[b,i,j,o] over b, i, j.
 *
 * TF passes the input's (filter's) size as an operand; here it is the
 * shape attribute, whose unknown dims the operands complete where they
 * can (the batch from dy, the channels from the other operand).
 *
 * Both kernels walk the output pixels in memory order and, for every tap
 * inside the input, run over contiguous channels: backprop_input takes the
 * dot product of dy's row of output channels with a filter row,
 * backprop_filter adds x[c] times dy's row into a filter row. Floats
 * accumulate in their own type (bf16 in f32, rounded once); integers in
 * unsigned arithmetic that wraps, like conv2d's.
 */
#include "../core/op_decls.h"
#include "kernels.h"

#include <stdlib.h>
#include <string.h>

/* ============================================================== shapes */

static bool rank4(const ag_shape *s, const char *what, rt_err *e)
{
    char b[128];
    if (s->rank == 4)
        return true;
    rt_err_set(e, "%s must have rank 4, got shape %s", what, rt_shape_str(s, b, sizeof b));
    return false;
}

static int64_t known_or(int64_t d, int64_t other) { return d >= 0 ? d : other; }

/* An unknown input height or width, from the output's where only one
 * input size gives it (stride 1); otherwise still unknown. */
static int64_t input_dim(int64_t in, int64_t out, int64_t k, int stride, ag_padding p)
{
    if (in >= 0 || out < 0 || stride != 1)
        return in;
    if (p == AG_SAME)
        return out;
    return k < 0 ? -1 : out + k - 1;
}

/* dy must be the shape conv2d(x, f) gives, in every dim known on both
 * sides. */
static bool dy_matches(const ag_shape *x, const ag_shape *f, const ag_shape *dy,
                       const rt_attrs *a, rt_err *e)
{
    ag_shape y;
    if (!rt_conv2d_out_shape(x, f, a->stride_h, a->stride_w, a->padding, &y, e))
        return false;
    for (int i = 0; i < 4; i++) {
        if (y.dims[i] < 0 || dy->dims[i] < 0 || y.dims[i] == dy->dims[i])
            continue;
        char b1[128], b2[128], b3[128], b4[128];
        rt_err_set(e, "the output gradient has shape %s, but conv2d of an input %s by a "
                      "filter %s gives %s",
                   rt_shape_str(dy, b1, sizeof b1), rt_shape_str(x, b2, sizeof b2),
                   rt_shape_str(f, b3, sizeof b3), rt_shape_str(&y, b4, sizeof b4));
        return false;
    }
    return true;
}

/* Once the operands are concrete, the result must be too. */
static bool result_known(const ag_shape *s, const ag_shape *op0, const ag_shape *op1,
                         const char *what, rt_err *e)
{
    if (rt_shape_known(s) || !rt_shape_known(op0) || !rt_shape_known(op1))
        return true;
    char b[128];
    rt_err_set(e, "the %s shape %s has dims that the operands do not determine; the "
                  "function's signature must give them",
               what, rt_shape_str(s, b, sizeof b));
    return false;
}

/* The shape a gradient op gives, s (which is x or f: the one the op
 * computes), once dy is what conv2d(x, f) gives and s is as known as its
 * operands make it; `what` names s ("input", "filter"). */
static bool settle(const ag_shape *s, const ag_shape *x, const ag_shape *f, const ag_shape *dy,
                   const rt_attrs *a, const char *what, rt_err *e, ag_shape *out)
{
    const ag_shape *operand = s == x ? f : x; /* the op's operand beside dy */
    if (!dy_matches(x, f, dy, a, e) || !result_known(s, dy, operand, what, e))
        return false;
    *out = *s;
    return true;
}

RT_SHAPE_RULE(rt_sh_conv2d_backprop_input)
{
    (void)n;
    const ag_shape *dy = &in[0]->shape, *f = &in[1]->shape;
    if (!rank4(dy, "the output gradient", e) || !rank4(f, "the filter", e) ||
        !rank4(&a->shape, "the input shape", e))
        return false;
    ag_shape x = a->shape;
    x.dims[0] = known_or(x.dims[0], dy->dims[0]);
    x.dims[3] = known_or(x.dims[3], f->dims[2]);
    x.dims[1] = input_dim(x.dims[1], dy->dims[1], f->dims[0], a->stride_h, a->padding);
    x.dims[2] = input_dim(x.dims[2], dy->dims[2], f->dims[1], a->stride_w, a->padding);
    return settle(&x, &x, f, dy, a, "input", e, out);
}

RT_SHAPE_RULE(rt_sh_conv2d_backprop_filter)
{
    (void)n;
    const ag_shape *x = &in[0]->shape, *dy = &in[1]->shape;
    if (!rank4(x, "the input", e) || !rank4(dy, "the output gradient", e) ||
        !rank4(&a->shape, "the filter shape", e))
        return false;
    ag_shape f = a->shape;
    f.dims[2] = known_or(f.dims[2], x->dims[3]);
    f.dims[3] = known_or(f.dims[3], dy->dims[3]);
    return settle(&f, x, &f, dy, a, "filter", e, out);
}

/* ============================================================= kernels */

/* The input pixel (ih, iw) tap (kh, kw) of output pixel (i, j) reads, or
 * false where the tap hangs over the padding. */
static bool tap(const rt_conv2d_geom *g, int64_t i, int64_t j, int64_t kh, int64_t kw,
                int64_t *ih, int64_t *iw)
{
    *ih = i * g->sh - g->pad_top + kh;
    *iw = j * g->sw - g->pad_left + kw;
    return *ih >= 0 && *ih < g->h && *iw >= 0 && *iw < g->w;
}

/* dx (zeroed) += the taps of output pixel (b, i, j), whose gradient row is dyp. */
#define DEFINE_BACKPROP_INPUT(name, T)                                                \
    static void name(const rt_conv2d_geom *g, const T *dy, const T *w, T *dx)      \
    {                                                                              \
        for (int64_t b = 0; b < g->n; b++)                                         \
            for (int64_t i = 0; i < g->oh; i++)                                    \
                for (int64_t j = 0; j < g->ow; j++, dy += g->o)                    \
                    for (int64_t kh = 0; kh < g->kh; kh++)                         \
                        for (int64_t kw = 0; kw < g->kw; kw++) {                   \
                            int64_t ih, iw;                                        \
                            if (!tap(g, i, j, kh, kw, &ih, &iw))                   \
                                continue;                                          \
                            T *dxp = dx + ((b * g->h + ih) * g->w + iw) * g->c;    \
                            const T *wp = w + (kh * g->kw + kw) * g->c * g->o;     \
                            for (int64_t c = 0; c < g->c; c++, wp += g->o) {       \
                                T s = 0;                                           \
                                for (int64_t o = 0; o < g->o; o++)                 \
                                    s += dy[o] * wp[o];                            \
                                dxp[c] += s;                                       \
                            }                                                      \
                        }                                                          \
    }

/* dw (zeroed) += x's window of output pixel (b, i, j) times its gradient row. */
#define DEFINE_BACKPROP_FILTER(name, T)                                               \
    static void name(const rt_conv2d_geom *g, const T *x, const T *dy, T *dw)      \
    {                                                                              \
        for (int64_t b = 0; b < g->n; b++)                                         \
            for (int64_t i = 0; i < g->oh; i++)                                    \
                for (int64_t j = 0; j < g->ow; j++, dy += g->o)                    \
                    for (int64_t kh = 0; kh < g->kh; kh++)                         \
                        for (int64_t kw = 0; kw < g->kw; kw++) {                   \
                            int64_t ih, iw;                                        \
                            if (!tap(g, i, j, kh, kw, &ih, &iw))                   \
                                continue;                                          \
                            const T *xp = x + ((b * g->h + ih) * g->w + iw) * g->c; \
                            T *dwp = dw + (kh * g->kw + kw) * g->c * g->o;         \
                            for (int64_t c = 0; c < g->c; c++, dwp += g->o) {      \
                                T xc = xp[c];                                      \
                                for (int64_t o = 0; o < g->o; o++)                 \
                                    dwp[o] += xc * dy[o];                          \
                            }                                                      \
                        }                                                          \
    }

DEFINE_BACKPROP_INPUT(input_f32, float)
DEFINE_BACKPROP_INPUT(input_f64, double)
DEFINE_BACKPROP_INPUT(input_u32, uint32_t)
DEFINE_BACKPROP_INPUT(input_u64, uint64_t)
DEFINE_BACKPROP_FILTER(filter_f32, float)
DEFINE_BACKPROP_FILTER(filter_f64, double)
DEFINE_BACKPROP_FILTER(filter_u32, uint32_t)
DEFINE_BACKPROP_FILTER(filter_u64, uint64_t)
#undef DEFINE_BACKPROP_INPUT
#undef DEFINE_BACKPROP_FILTER

/* One of the two products on operands p, q into r (all of g's layout). */
typedef void (*f32_fn)(const rt_conv2d_geom *g, const float *p, const float *q, float *r);

static float *widen(const rt_value *v)
{
    float *d = rt_xmalloc((size_t)(v->numel > 0 ? v->numel : 1) * sizeof *d);
    const uint16_t *s = v->data;
    for (int64_t i = 0; i < v->numel; i++)
        d[i] = ag_bf16_to_f32(s[i]);
    return d;
}

/* bf16: both operands widened to f32, the product in f32, rounded once. */
static void run_bf16(f32_fn fn, const rt_conv2d_geom *g, const rt_value *p,
                     const rt_value *q, rt_value *out)
{
    float *fp = widen(p), *fq = widen(q);
    float *fr = rt_xcalloc((size_t)out->numel, sizeof *fr);
    fn(g, fp, fq, fr);
    uint16_t *r = out->data;
    for (int64_t i = 0; i < out->numel; i++)
        r[i] = ag_f32_to_bf16(fr[i]);
    free(fp);
    free(fq);
    free(fr);
}

/* The kernels of one of the two ops, per dtype. */
typedef struct grad_kernels {
    f32_fn f32;
    void (*f64)(const rt_conv2d_geom *, const double *, const double *, double *);
    void (*u32)(const rt_conv2d_geom *, const uint32_t *, const uint32_t *, uint32_t *);
    void (*u64)(const rt_conv2d_geom *, const uint64_t *, const uint64_t *, uint64_t *);
} grad_kernels;

static const grad_kernels input_kernels = {input_f32, input_f64, input_u32, input_u64};
static const grad_kernels filter_kernels = {filter_f32, filter_f64, filter_u32, filter_u64};

static bool run(const grad_kernels *k, const rt_conv2d_geom *g, const rt_value *p,
                const rt_value *q, rt_value *out, rt_err *e)
{
    if (out->numel == 0)
        return true;
    if (out->dtype == AG_BF16) {
        run_bf16(k->f32, g, p, q, out);
        return true;
    }
    memset(out->data, 0, (size_t)out->numel * rt_dtype_size(out->dtype));
    switch (out->dtype) {
    case AG_F32: k->f32(g, p->data, q->data, out->data); return true;
    case AG_F64: k->f64(g, p->data, q->data, out->data); return true;
    case AG_I32: k->u32(g, p->data, q->data, out->data); return true;
    case AG_I64: k->u64(g, p->data, q->data, out->data); return true;
    default: rt_err_set(e, "has no kernel for %s", ag_dtype_name(out->dtype)); return false;
    }
}

RT_KERNEL(rt_k_conv2d_backprop_input)
{
    (void)n;
    rt_conv2d_geom g;
    if (!rt_conv2d_geometry(&out->shape, &in[1]->shape, a->stride_h, a->stride_w,
                            a->padding, &g, e))
        return false;
    return run(&input_kernels, &g, in[0], in[1], out, e);
}

RT_KERNEL(rt_k_conv2d_backprop_filter)
{
    (void)n;
    rt_conv2d_geom g;
    if (!rt_conv2d_geometry(&in[0]->shape, &out->shape, a->stride_h, a->stride_w,
                            a->padding, &g, e))
        return false;
    return run(&filter_kernels, &g, in[0], in[1], out, e);
}
