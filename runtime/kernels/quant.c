/*
 * quant.c - the quantized ops: quantize, dequantize, qmatmul, qconv2d and
 * requantize (docs/quantization.md, "The arithmetic"), their shape rules
 * and their eager kernels. Every target calls these kernels (the cpu from
 * its generated code, the TPU-model and the reference interpreter
 * directly), so the integer results are the same bits everywhere.
 *
 * Scales and zero points are operands that broadcast against the first
 * operand without growing it: a scalar applies to every element, a [N]
 * one along the last axis (per channel). The products' zero points are
 * scalars in [-128, 127]: |a - zero| <= 255 is what keeps qgemm's int32
 * sums exact (kernels/qgemm.h).
 */
#include "../core/op_decls.h"
#include "kernels.h"
#include "qgemm.h"
#include "quant_rows.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int64_t min64(int64_t x, int64_t y) { return x < y ? x : y; }

/* =============================================================== shapes */

/* Whether p broadcasts into x without changing x's shape (unknown dims,
 * -1, are taken to fit; the kernel sees concrete ones). */
static bool fits_into(const ag_shape *p, const ag_shape *x)
{
    if (p->rank > x->rank)
        return false;
    for (int i = 0; i < p->rank; i++) {
        int64_t pd = p->dims[p->rank - 1 - i], xd = x->dims[x->rank - 1 - i];
        if (pd != 1 && pd >= 0 && xd >= 0 && pd != xd)
            return false;
    }
    return true;
}

/* quantize, dequantize, requantize: the result has operand 0's shape. */
RT_SHAPE_RULE(rt_sh_quant_params)
{
    (void)a, (void)n;
    static const char *const names[3] = {"", "scale", "zero point"};
    char b1[128], b2[128];
    for (int i = 1; i < 3; i++) {
        if (!fits_into(&in[i]->shape, &in[0]->shape)) {
            rt_err_set(e, "the %s's shape %s does not broadcast into the operand's %s; give "
                          "a scalar, or one value per channel (the last axis)",
                       names[i], rt_shape_str(&in[i]->shape, b1, sizeof b1),
                       rt_shape_str(&in[0]->shape, b2, sizeof b2));
            return false;
        }
    }
    *out = in[0]->shape;
    return true;
}

/* requantize's range must lie in int8's and be a range. */
RT_SHAPE_RULE(rt_sh_requantize)
{
    double lo = a->lo, hi = a->hi;
    if (!(lo >= -128 && hi <= 127 && lo <= hi && lo == floor(lo) && hi == floor(hi))) {
        rt_err_set(e, "the range [%g, %g] must be whole numbers with -128 <= lo <= hi <= 127",
                   lo, hi);
        return false;
    }
    return rt_sh_quant_params(a, in, n, out, e);
}

static bool scalar_zero_point(const rt_value *zp, rt_err *e)
{
    char b[128];
    if (zp->shape.rank == 0)
        return true;
    rt_err_set(e, "the zero point must be a scalar, got shape %s",
               rt_shape_str(&zp->shape, b, sizeof b));
    return false;
}

/* k <= RT_QGEMM_MAX_K keeps the int32 sums exact. */
static bool k_fits(int64_t k, rt_err *e)
{
    if (k <= RT_QGEMM_MAX_K)
        return true;
    rt_err_set(e, "sums %lld products per result, more than the %d whose int32 sum "
                  "cannot overflow; split the contraction",
               (long long)k, (int)RT_QGEMM_MAX_K);
    return false;
}

RT_SHAPE_RULE(rt_sh_qmatmul)
{
    (void)a, (void)n;
    const ag_shape *as = &in[0]->shape, *bs = &in[1]->shape;
    char b1[128], b2[128];
    if (as->rank != 2 || bs->rank != 2) {
        rt_err_set(e, "multiplies matrices: a is %s and b is %s (both must have rank 2)",
                   rt_shape_str(as, b1, sizeof b1), rt_shape_str(bs, b2, sizeof b2));
        return false;
    }
    int64_t ka = as->dims[1], kb = bs->dims[0];
    if (ka >= 0 && kb >= 0 && ka != kb) {
        rt_err_set(e, "inner dims do not match: a is %s and b is %s",
                   rt_shape_str(as, b1, sizeof b1), rt_shape_str(bs, b2, sizeof b2));
        return false;
    }
    if (!scalar_zero_point(in[2], e) || !k_fits(ka >= 0 ? ka : kb, e))
        return false;
    *out = (ag_shape){.rank = 2, .dims = {as->dims[0], bs->dims[1]}};
    return true;
}

RT_SHAPE_RULE(rt_sh_qconv2d)
{
    (void)n;
    const ag_shape *f = &in[1]->shape;
    if (!rt_conv2d_out_shape(&in[0]->shape, f, a->stride_h, a->stride_w, a->padding, out, e) ||
        !scalar_zero_point(in[2], e))
        return false;
    bool known = f->dims[0] >= 0 && f->dims[1] >= 0 && f->dims[2] >= 0;
    return !known || k_fits(f->dims[0] * f->dims[1] * f->dims[2], e);
}

/* ====================================================== broadcast params */

/*
 * Where element i of x finds its scale (or zero point) p: p's strides
 * against x's dims (0 where p broadcasts). A scalar and a per-channel [N]
 * are the common cases and get their own index; any other shape unravels i.
 */
typedef struct param {
    const rt_value *v;
    int64_t period; /* > 0: p[i % period]; 0: general */
    int rank;
    int64_t dims[AG_MAX_RANK], strides[AG_MAX_RANK];
} param;

static void param_init(param *p, const rt_value *v, const ag_shape *x)
{
    memset(p, 0, sizeof *p);
    p->v = v;
    int64_t last = x->rank ? x->dims[x->rank - 1] : 1;
    if (v->numel == 1)
        p->period = 1;
    else if (v->numel == last && v->shape.dims[v->shape.rank - 1] == last)
        p->period = last;
    p->rank = x->rank;
    int64_t stride = 1;
    for (int d = x->rank - 1; d >= 0; d--) {
        int vd = d - (x->rank - v->shape.rank);
        p->dims[d] = x->dims[d];
        p->strides[d] = vd >= 0 && v->shape.dims[vd] != 1 ? stride : 0;
        if (vd >= 0)
            stride *= v->shape.dims[vd];
    }
}

static int64_t param_index(const param *p, int64_t i)
{
    if (p->period)
        return i % p->period;
    int64_t at = 0;
    for (int d = p->rank - 1; d >= 0; d--) {
        at += i % p->dims[d] * p->strides[d];
        i /= p->dims[d];
    }
    return at;
}

static float scale_at(const param *p, int64_t i)
{
    return ((const float *)p->v->data)[param_index(p, i)];
}

static int32_t zero_at(const param *p, int64_t i)
{
    return ((const int32_t *)p->v->data)[param_index(p, i)];
}

/* ============================================================ elements */


/* ================================================================ rows */

void rt_quantize_row(rt_qgemm_kind path, const float *x, int64_t n, const float *scale,
                     int64_t s_step, const int32_t *zero, int64_t z_step, int8_t *q)
{
    for (int64_t j = rt_quantize_row_vec(path, x, n, scale, s_step, zero, z_step, q); j < n; j++)
        q[j] = rt_quantize_one(x[j], scale[j * s_step], zero[j * z_step]);
}

bool rt_dequant_vector_ok(const rt_dequant *d, int64_t n_zero)
{
    for (int64_t i = 0; i < n_zero; i++)
        if (d->q32 ? d->zero[i] != 0 : d->zero[i] < -(1 << 30) || d->zero[i] > (1 << 30))
            return false;
    return true;
}

void rt_dequantize_row(rt_qgemm_kind path, const rt_dequant *d, int64_t n, float *y)
{
    for (int64_t j = rt_dequantize_row_vec(path, d, n, y); j < n; j++)
        y[j] = rt_dequantize_one(d->q8 ? d->q8[j] : d->q32[j], d->scale[j * d->s_step],
                                 d->zero[j * d->z_step]);
}

void rt_requant_check(rt_requant *r, int64_t n_mult)
{
    r->vector_ok = true;
    for (int64_t i = 0; i < n_mult; i++)
        r->vector_ok &= isfinite(r->mult[i]) != 0;
}

void rt_requantize_row(rt_qgemm_kind path, const rt_requant *r, const int32_t *acc, int64_t n,
                       int8_t *q)
{
    for (int64_t j = rt_requantize_row_vec(path, r, acc, n, q); j < n; j++) {
        int32_t a = acc[j];
        if (r->bias)
            a = (int32_t)((uint32_t)a + (uint32_t)r->bias[j * r->b_step]);
        q[j] = rt_requantize_one(a, r->mult[j * r->m_step], r->zero[j * r->z_step], r->lo, r->hi);
    }
}

/* ============================================================= kernels */

/*
 * The kernels walk x by rows of its last axis. When every parameter is a
 * scalar or a per-channel vector (the quantizer's only shapes), element j
 * of a row reads parameter element j * step (step 0 for a scalar), with no
 * index arithmetic per element; any other broadcast unravels each index.
 */
typedef struct walk {
    int64_t rows, cols;
    int64_t step[2]; /* per parameter: 0 (scalar) or 1 (per channel) */
    bool rowwise;
} walk;

static walk walk_of(const rt_value *x, const param *p0, const param *p1)
{
    int64_t cols = x->shape.rank ? x->shape.dims[x->shape.rank - 1] : 1;
    walk w = {.cols = cols, .rows = cols ? x->numel / cols : 0,
              .rowwise = p0->period && p1->period && cols > 0};
    w.step[0] = p0->period > 1;
    w.step[1] = p1->period > 1;
    return w;
}

RT_KERNEL(rt_k_quantize)
{
    (void)a, (void)n, (void)e;
    param s, z;
    param_init(&s, in[1], &in[0]->shape);
    param_init(&z, in[2], &in[0]->shape);
    const float *x = in[0]->data, *sv = in[1]->data;
    const int32_t *zv = in[2]->data;
    int8_t *q = out->data;
    walk w = walk_of(in[0], &s, &z);
    if (!w.rowwise) {
        for (int64_t i = 0; i < out->numel; i++)
            q[i] = rt_quantize_one(x[i], scale_at(&s, i), zero_at(&z, i));
        return true;
    }
    rt_qgemm_kind path = rt_qgemm_chosen();
    for (int64_t r = 0; r < w.rows; r++)
        rt_quantize_row(path, x + r * w.cols, w.cols, sv, w.step[0], zv, w.step[1],
                        q + r * w.cols);
    return true;
}

RT_KERNEL(rt_k_dequantize)
{
    (void)a, (void)n, (void)e;
    param s, z;
    param_init(&s, in[1], &in[0]->shape);
    param_init(&z, in[2], &in[0]->shape);
    const float *sv = in[1]->data;
    const int32_t *zv = in[2]->data;
    float *y = out->data;
    bool narrow = in[0]->dtype == AG_I8;
    const int8_t *q8 = in[0]->data;
    const int32_t *q32 = in[0]->data;
    walk w = walk_of(in[0], &s, &z);
    if (!w.rowwise) {
        for (int64_t i = 0; i < out->numel; i++)
            y[i] = rt_dequantize_one(narrow ? q8[i] : q32[i], scale_at(&s, i), zero_at(&z, i));
        return true;
    }
    rt_dequant d = {.q8 = narrow ? q8 : NULL, .q32 = narrow ? NULL : q32, .scale = sv,
                    .s_step = w.step[0], .zero = zv, .z_step = w.step[1]};
    d.vector_ok = rt_dequant_vector_ok(&d, in[2]->numel);
    rt_qgemm_kind path = rt_qgemm_chosen();
    for (int64_t r = 0; r < w.rows; r++) {
        rt_dequant row = d;
        row.q8 = narrow ? q8 + r * w.cols : NULL;
        row.q32 = narrow ? NULL : q32 + r * w.cols;
        rt_dequantize_row(path, &row, w.cols, y + r * w.cols);
    }
    return true;
}

RT_KERNEL(rt_k_requantize)
{
    (void)n, (void)e;
    param m, z;
    param_init(&m, in[1], &in[0]->shape);
    param_init(&z, in[2], &in[0]->shape);
    const int32_t *acc = in[0]->data, *zv = in[2]->data;
    const float *mv = in[1]->data;
    int8_t *q = out->data;
    int64_t lo = (int64_t)a->lo, hi = (int64_t)a->hi;
    walk w = walk_of(in[0], &m, &z);
    if (!w.rowwise) {
        for (int64_t i = 0; i < out->numel; i++)
            q[i] = rt_requantize_one(acc[i], scale_at(&m, i), zero_at(&z, i), lo, hi);
        return true;
    }
    rt_requant rq = {.mult = mv, .m_step = w.step[0], .zero = zv, .z_step = w.step[1],
                     .lo = (int32_t)lo, .hi = (int32_t)hi};
    rt_requant_check(&rq, in[1]->numel);
    rt_qgemm_kind path = rt_qgemm_chosen();
    for (int64_t r = 0; r < w.rows; r++)
        rt_requantize_row(path, &rq, acc + r * w.cols, w.cols, q + r * w.cols);
    return true;
}

/* A product's zero point: one value in int8's range. */
static bool product_zero(const rt_value *zp, int32_t *out, rt_err *e)
{
    int32_t z = *(const int32_t *)zp->data;
    if (z < -128 || z > 127) {
        rt_err_set(e, "the zero point %d is outside int8's range [-128, 127]", (int)z);
        return false;
    }
    *out = z;
    return true;
}

bool rt_qmatmul_packed(rt_value *const *in, const void *packed, rt_value *out, rt_err *e)
{
    int32_t zero;
    int64_t m = in[0]->shape.dims[0], k = in[0]->shape.dims[1], nn = in[1]->shape.dims[1];
    if (!product_zero(in[2], &zero, e) || !k_fits(k, e))
        return false;
    rt_qgemm_s8_packed(rt_qgemm_chosen(), m, nn, k, in[0]->data, zero, in[1]->data, packed,
                       out->data);
    return true;
}

RT_KERNEL(rt_k_qmatmul)
{
    (void)a, (void)n;
    return rt_qmatmul_packed(in, NULL, out, e);
}

/* ----------------------------------------------- the fused layer */

typedef struct qlayer {
    const rt_requant *r;
    int8_t *q;
} qlayer;

static void requantize_block(const rt_qgemm *p, const int32_t *block, int64_t ldb, int64_t i0,
                             int64_t rows, int64_t j0, int64_t cols)
{
    const qlayer *l = p->epilogue_ctx;
    rt_requant r = *l->r; /* the parameters from column j0 on */
    r.bias = r.bias ? r.bias + j0 * r.b_step : NULL;
    r.mult += j0 * r.m_step;
    r.zero += j0 * r.z_step;
    for (int64_t i = 0; i < rows; i++)
        rt_requantize_row(p->kind, &r, block + i * ldb, cols, l->q + (i0 + i) * p->n + j0);
}

void rt_qlayer_requantize(rt_qgemm_kind path, int64_t m, int64_t n, int64_t k, const int8_t *a,
                          int32_t a_zero, const int8_t *b, const void *b_packed,
                          const rt_requant *r, int8_t *q)
{
    qlayer l = {.r = r, .q = q};
    rt_qgemm p;
    if (!rt_qgemm_begin(&p, path, m, n, k, a, a_zero, b, NULL))
        rt_qgemm_begin(&p, RT_QGEMM_SCALAR, m, n, k, a, a_zero, b, NULL);
    rt_qgemm_use_packed(&p, b_packed);
    p.epilogue = requantize_block;
    p.epilogue_ctx = &l;
    rt_qgemm_run(&p);
    rt_qgemm_end(&p);
}

/* ------------------------------------------------------------- qconv2d */

/* The im2col row of output pixel (b, i, j): the window's int8 values,
 * the zero point where it hangs over the padding (so padding adds 0). */
static void window_row(const rt_conv2d_geom *g, const int8_t *x, int8_t zero, int64_t b,
                       int64_t i, int64_t j, int8_t *dst)
{
    for (int64_t kh = 0; kh < g->kh; kh++) {
        int64_t ih = i * g->sh - g->pad_top + kh;
        for (int64_t kw = 0; kw < g->kw; kw++, dst += g->c) {
            int64_t iw = j * g->sw - g->pad_left + kw;
            if (ih < 0 || ih >= g->h || iw < 0 || iw >= g->w)
                memset(dst, (unsigned char)zero, (size_t)g->c);
            else
                memcpy(dst, x + ((b * g->h + ih) * g->w + iw) * g->c, (size_t)g->c);
        }
    }
}

/* Output pixels [row0, row0 + rows) as im2col rows into col. */
static void qim2col(const rt_conv2d_geom *g, const int8_t *x, int8_t zero, int64_t row0,
                    int64_t rows, int8_t *col)
{
    int64_t k = g->kh * g->kw * g->c, per_image = g->oh * g->ow;
    for (int64_t r = 0; r < rows; r++) {
        int64_t p = row0 + r;
        window_row(g, x, zero, p / per_image, p % per_image / g->ow, p % g->ow, col + r * k);
    }
}

/* About 4 MiB of im2col rows at a time, at least 64 rows. */
enum { QCONV_COL_BYTES = 4 << 20, QCONV_MIN_ROWS = 64 };

bool rt_qconv2d_packed(const rt_attrs *a, rt_value *const *in, const void *packed,
                       rt_value *out, rt_err *e)
{
    rt_conv2d_geom g;
    int32_t zero;
    if (!rt_conv2d_geometry(&in[0]->shape, &in[1]->shape, a->stride_h, a->stride_w,
                            a->padding, &g, e) ||
        !product_zero(in[2], &zero, e))
        return false;
    int64_t total = g.n * g.oh * g.ow, k = g.kh * g.kw * g.c;
    if (!k_fits(k, e))
        return false;
    if (total == 0 || g.o == 0)
        return true;
    int64_t chunk = min64(total, k ? QCONV_COL_BYTES / k + QCONV_MIN_ROWS : total);
    int8_t *col = rt_xmalloc((size_t)(chunk * k) + 1);
    int32_t *c = out->data;
    for (int64_t r0 = 0; r0 < total; r0 += chunk) {
        int64_t rows = min64(chunk, total - r0);
        qim2col(&g, in[0]->data, (int8_t)zero, r0, rows, col);
        rt_qgemm_s8_packed(rt_qgemm_chosen(), rows, g.o, k, col, zero, in[1]->data, packed,
                           c + r0 * g.o);
    }
    free(col);
    return true;
}

RT_KERNEL(rt_k_qconv2d)
{
    (void)n;
    return rt_qconv2d_packed(a, in, NULL, out, e);
}
