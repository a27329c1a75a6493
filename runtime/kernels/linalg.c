/*
 * linalg.c - matmul and conv2d.
 *
 * Float matmul goes to OpenBLAS (sgemm / dgemm) one output matrix at a time,
 * straight on the operands' storage: a contiguous f32 matmul costs one
 * sgemm call and no copies. bf16 is widened to f32, multiplied with sgemm
 * and rounded once per result element. Integers use a plain i-k-j loop in
 * unsigned arithmetic, so overflow wraps like TensorFlow's.
 *
 * conv2d (NHWC input, HWIO filter) lowers float types to im2col + gemm: each
 * output pixel becomes a row of the KH*KW*C input values under its window,
 * in HWIO order, so that [rows, K] x filter[K, O] is the NHWC output. The
 * rows are built in chunks of about CONV_COL_BYTES, small enough to stay in
 * the cache between im2col writing them and gemm reading them.
 * Integers use a direct loop.
 */
#include "../core/op_decls.h"
#include "kernels.h"

#include <cblas.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

static int64_t min64(int64_t x, int64_t y) { return x < y ? x : y; }
static int64_t max64(int64_t x, int64_t y) { return x > y ? x : y; }

/* ============================================================== matmul */

RT_SHAPE_RULE(rt_sh_matmul)
{
    (void)a, (void)n;
    static const char *const names[2] = {"a", "b"};
    const ag_shape *as = &in[0]->shape, *bs = &in[1]->shape;
    char b1[128], b2[128];
    for (int i = 0; i < 2; i++) {
        const ag_shape *s = &in[i]->shape;
        if (s->rank < 2) {
            rt_err_set(e, "operand %s has rank %d (shape %s) but matmul multiplies "
                          "matrices (rank 2) or batches of them (rank >= 3); use "
                          "ag_expand_dims or ag_reshape to make it a matrix",
                       names[i], s->rank, rt_shape_str(s, b1, sizeof b1));
            return false;
        }
    }
    int64_t ka = as->dims[as->rank - 1], kb = bs->dims[bs->rank - 2];
    if (ka >= 0 && kb >= 0 && ka != kb) {
        rt_err_set(e, "inner dims do not match: a is %s and b is %s; a's last dim "
                      "(%lld) must equal b's second-to-last dim (%lld)",
                   rt_shape_str(as, b1, sizeof b1), rt_shape_str(bs, b2, sizeof b2),
                   (long long)ka, (long long)kb);
        return false;
    }
    /* The batch dims (all but the last two) broadcast like NumPy's. */
    ag_shape abatch = *as, bbatch = *bs;
    abatch.rank -= 2;
    bbatch.rank -= 2;
    if (!rt_broadcast_shapes(&abatch, &bbatch, out)) {
        rt_err_set(e, "the batch dims of a %s and b %s cannot be broadcast together",
                   rt_shape_str(as, b1, sizeof b1), rt_shape_str(bs, b2, sizeof b2));
        return false;
    }
    out->dims[out->rank++] = as->dims[as->rank - 2];
    out->dims[out->rank++] = bs->dims[bs->rank - 1];
    return true;
}

/* c[m, n] = a[m, k] x b[k, n], all row-major and contiguous; k, m, n > 0. */
typedef void (*mm_fn)(const void *a, const void *b, void *c, int64_t m, int64_t k,
                      int64_t n);

/* BLAS takes int dims; the kernel checked that k and n fit, and m is split
 * into pieces that do (rows of a and c are independent). */
static void mm_f32(const void *a, const void *b, void *c, int64_t m, int64_t k, int64_t n)
{
    for (int64_t i = 0; i < m; i += INT_MAX) {
        int rows = (int)min64(m - i, INT_MAX);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, (int)n, (int)k,
                    1.0f, (const float *)a + i * k, (int)k, b, (int)n, 0.0f,
                    (float *)c + i * n, (int)n);
    }
}

static void mm_f64(const void *a, const void *b, void *c, int64_t m, int64_t k, int64_t n)
{
    for (int64_t i = 0; i < m; i += INT_MAX) {
        int rows = (int)min64(m - i, INT_MAX);
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, (int)n, (int)k,
                    1.0, (const double *)a + i * k, (int)k, b, (int)n, 0.0,
                    (double *)c + i * n, (int)n);
    }
}

/*
 * Integer matmul, i-k-j order: the innermost loop walks a row of b and a
 * row of c contiguously, so it vectorizes. Elements are read and written
 * through the unsigned type of the same width (which C allows to alias)
 * so that overflow wraps instead of being undefined.
 */
#define DEFINE_MM_INT(name, U)                                                   \
    static void name(const void *av, const void *bv, void *cv, int64_t m,       \
                     int64_t k, int64_t n)                                       \
    {                                                                            \
        const U *a = av, *b = bv;                                                \
        U *c = cv;                                                               \
        for (int64_t i = 0; i < m; i++) {                                        \
            U *crow = c + i * n;                                                 \
            for (int64_t j = 0; j < n; j++)                                      \
                crow[j] = 0;                                                     \
            for (int64_t p = 0; p < k; p++) {                                    \
                U ap = a[i * k + p];                                             \
                const U *brow = b + p * n;                                       \
                for (int64_t j = 0; j < n; j++)                                  \
                    crow[j] += ap * brow[j];                                     \
            }                                                                    \
        }                                                                        \
    }

DEFINE_MM_INT(mm_i32, uint32_t)
DEFINE_MM_INT(mm_i64, uint64_t)

/* How the output's batch of matrices maps onto the operands' batches. */
typedef struct mm_plan {
    int64_t m, k, n;
    int64_t count;               /* output matrices */
    int rank;                    /* batch rank of the output */
    int64_t dims[AG_MAX_RANK];   /* output batch dims */
    int64_t astep[AG_MAX_RANK];  /* a's matrix stride per batch dim; 0 = broadcast */
    int64_t bstep[AG_MAX_RANK];
    int64_t acount;              /* a's own number of matrices */
} mm_plan;

/* Fills step[] for an operand whose batch dims (all but the last two of s)
 * align at the right with the output's; returns its number of matrices. */
static int64_t batch_steps(const ag_shape *s, const mm_plan *p, int64_t *step)
{
    int brank = s->rank - 2, lead = p->rank - brank;
    int64_t stride = 1;
    for (int d = p->rank - 1; d >= 0; d--) {
        int sd = d - lead;
        int64_t dim = sd >= 0 ? s->dims[sd] : 1;
        step[d] = dim == 1 ? 0 : stride;
        stride *= dim;
    }
    return stride;
}

static void plan_matmul(const rt_value *a, const rt_value *b, const rt_value *out,
                        mm_plan *p)
{
    p->m = a->shape.dims[a->shape.rank - 2];
    p->k = a->shape.dims[a->shape.rank - 1];
    p->n = b->shape.dims[b->shape.rank - 1];
    p->rank = out->shape.rank - 2;
    p->count = 1;
    for (int d = 0; d < p->rank; d++) {
        p->dims[d] = out->shape.dims[d];
        p->count *= p->dims[d];
    }
    p->acount = batch_steps(&a->shape, p, p->astep);
    batch_steps(&b->shape, p, p->bstep);
}

/* True when every output matrix uses the same b and a's matrices are in
 * output order: the whole batch is then one [count*m, k] x [k, n] product. */
static bool batch_folds(const mm_plan *p)
{
    for (int d = 0; d < p->rank; d++)
        if (p->bstep[d] != 0)
            return false;
    return p->acount == p->count;
}

/* Runs mm over every output matrix, walking the batch index like an
 * odometer so that no index is ever divided. esize is the element size. */
static void matmul_batched(const mm_plan *p, const void *a, const void *b, void *c,
                           size_t esize, mm_fn mm)
{
    if (batch_folds(p)) {
        mm(a, b, c, p->count * p->m, p->k, p->n);
        return;
    }
    size_t asize = (size_t)(p->m * p->k) * esize, bsize = (size_t)(p->k * p->n) * esize;
    size_t csize = (size_t)(p->m * p->n) * esize;
    int64_t idx[AG_MAX_RANK] = {0}, aoff = 0, boff = 0;
    for (int64_t t = 0; t < p->count; t++) {
        mm((const char *)a + (size_t)aoff * asize, (const char *)b + (size_t)boff * bsize,
           (char *)c + (size_t)t * csize, p->m, p->k, p->n);
        for (int d = p->rank - 1; d >= 0; d--) {
            idx[d]++;
            aoff += p->astep[d];
            boff += p->bstep[d];
            if (idx[d] < p->dims[d])
                break;
            aoff -= p->astep[d] * p->dims[d];
            boff -= p->bstep[d] * p->dims[d];
            idx[d] = 0;
        }
    }
}

/* bf16 buffer -> new f32 buffer. */
static float *widen_bf16(const uint16_t *src, int64_t count)
{
    float *dst = rt_xmalloc((size_t)max64(count, 1) * sizeof *dst);
    for (int64_t i = 0; i < count; i++)
        dst[i] = ag_bf16_to_f32(src[i]);
    return dst;
}

static void round_to_bf16(const float *src, uint16_t *dst, int64_t count)
{
    for (int64_t i = 0; i < count; i++)
        dst[i] = ag_f32_to_bf16(src[i]);
}

/* bf16: widen both operands once, run the f32 batch, round each result. */
static void matmul_bf16(const mm_plan *p, const rt_value *a, const rt_value *b,
                        rt_value *out)
{
    float *fa = widen_bf16(a->data, a->numel), *fb = widen_bf16(b->data, b->numel);
    float *fc = rt_xmalloc((size_t)out->numel * sizeof *fc);
    matmul_batched(p, fa, fb, fc, sizeof(float), mm_f32);
    round_to_bf16(fc, out->data, out->numel);
    free(fa);
    free(fb);
    free(fc);
}

RT_KERNEL(rt_k_matmul)
{
    (void)a, (void)n;
    mm_plan p;
    plan_matmul(in[0], in[1], out, &p);
    if (out->numel == 0)
        return true; /* m, n or a batch dim is 0: nothing to compute */
    if (p.k == 0) {  /* sums of nothing; BLAS is not called with k = 0 */
        memset(out->data, 0, rt_value_bytes(out));
        return true;
    }
    if (rt_is_float(out->dtype) && (p.k > INT_MAX || p.n > INT_MAX)) {
        rt_err_set(e, "a dim of %lld or %lld is too large for BLAS (at most %d)",
                   (long long)p.k, (long long)p.n, INT_MAX);
        return false;
    }
    if (rt_is_float(out->dtype) && !rt_blas_memory_check(e))
        return false;
    switch (out->dtype) {
    case AG_F32: matmul_batched(&p, in[0]->data, in[1]->data, out->data, 4, mm_f32); break;
    case AG_F64: matmul_batched(&p, in[0]->data, in[1]->data, out->data, 8, mm_f64); break;
    case AG_I32: matmul_batched(&p, in[0]->data, in[1]->data, out->data, 4, mm_i32); break;
    case AG_I64: matmul_batched(&p, in[0]->data, in[1]->data, out->data, 8, mm_i64); break;
    case AG_BF16: matmul_bf16(&p, in[0], in[1], out); break;
    default:
        rt_err_set(e, "has no kernel for %s", ag_dtype_name(out->dtype));
        return false;
    }
    return true;
}

/* ============================================================== conv2d */

/* The im2col buffer of one conv2d call holds about CONV_COL_BYTES of rows:
 * few enough that gemm reads them back from the cache, and a buffer malloc
 * reuses (one of tens of MiB is a fresh mmap, page-faulted in on every
 * call). Each gemm still gets CONV_MIN_ROWS rows at least, so that a
 * filter with many taps is not repacked for every handful of rows. (A
 * 3x3x32 -> 64 conv over [8,64,64,32] ran at 26 GFLOP/s with 64 MiB
 * chunks, 108 with 4 MiB.) */
enum { CONV_COL_BYTES = 4 << 20, CONV_MIN_ROWS = 256 };

/* One spatial output dim (TF's rule), or -1 when an input dim is unknown.
 * VALID needs in >= k, which the caller checked. */
static int64_t conv_out_dim(int64_t in, int64_t k, int64_t stride, ag_padding p)
{
    if (in < 0 || (p == AG_VALID && k < 0))
        return -1;
    if (p == AG_SAME)
        return (in + stride - 1) / stride;
    return (in - k + stride) / stride;
}

/* TF's SAME split: half the padding before, the odd one after. */
static int64_t conv_pad_before(int64_t in, int64_t k, int64_t stride, int64_t out,
                               ag_padding p)
{
    if (p != AG_SAME)
        return 0;
    int64_t total = (out - 1) * stride + k - in;
    return total > 0 ? total / 2 : 0;
}

/* Everything that is certainly wrong with a conv2d, given possibly unknown
 * dims. x is NHWC, f is HWIO. */
static bool conv_check(const ag_shape *x, const ag_shape *f, int sh, int sw,
                       ag_padding pad, rt_err *e)
{
    char b1[128], b2[128];
    if (pad != AG_VALID && pad != AG_SAME) {
        rt_err_set(e, "invalid padding %d; use AG_SAME or AG_VALID", (int)pad);
        return false;
    }
    if (sh < 1 || sw < 1) {
        rt_err_set(e, "strides must be at least 1, got %d and %d", sh, sw);
        return false;
    }
    if (x->rank != 4 || f->rank != 4) {
        bool bad_x = x->rank != 4;
        rt_err_set(e, "%s must have rank 4 (%s), got shape %s",
                   bad_x ? "the input" : "the filter",
                   bad_x ? "NHWC: batch, height, width, channels"
                         : "HWIO: height, width, in channels, out channels",
                   rt_shape_str(bad_x ? x : f, b1, sizeof b1));
        return false;
    }
    rt_shape_str(x, b1, sizeof b1);
    rt_shape_str(f, b2, sizeof b2);
    if (x->dims[3] >= 0 && f->dims[2] >= 0 && x->dims[3] != f->dims[2]) {
        rt_err_set(e, "the input has %lld channels (shape %s, NHWC) but the filter "
                      "expects %lld (shape %s, HWIO)",
                   (long long)x->dims[3], b1, (long long)f->dims[2], b2);
        return false;
    }
    for (int i = 0; i < 4; i++) {
        if (f->dims[i] == 0) { /* TF refuses empty filters too */
            rt_err_set(e, "the filter must not have zero elements (shape %s)", b2);
            return false;
        }
    }
    if (pad == AG_VALID && ((x->dims[1] >= 0 && f->dims[0] > x->dims[1]) ||
                            (x->dims[2] >= 0 && f->dims[1] > x->dims[2]))) {
        rt_err_set(e, "with AG_VALID padding the %lldx%lld filter window must fit in "
                      "the %lldx%lld input (input %s, filter %s); use AG_SAME or a "
                      "smaller filter",
                   (long long)f->dims[0], (long long)f->dims[1], (long long)x->dims[1],
                   (long long)x->dims[2], b1, b2);
        return false;
    }
    return true;
}

bool rt_conv2d_out_shape(const ag_shape *x, const ag_shape *f, int stride_h, int stride_w,
                         ag_padding padding, ag_shape *out, rt_err *e)
{
    if (!conv_check(x, f, stride_h, stride_w, padding, e))
        return false;
    out->rank = 4;
    out->dims[0] = x->dims[0];
    out->dims[1] = conv_out_dim(x->dims[1], f->dims[0], stride_h, padding);
    out->dims[2] = conv_out_dim(x->dims[2], f->dims[1], stride_w, padding);
    out->dims[3] = f->dims[3];
    return true;
}

RT_SHAPE_RULE(rt_sh_conv2d)
{
    (void)n;
    return rt_conv2d_out_shape(&in[0]->shape, &in[1]->shape, a->stride_h, a->stride_w,
                               a->padding, out, e);
}

bool rt_conv2d_geometry(const ag_shape *x, const ag_shape *f, int stride_h,
                        int stride_w, ag_padding padding, rt_conv2d_geom *g, rt_err *e)
{
    if (!conv_check(x, f, stride_h, stride_w, padding, e))
        return false;
    if (!rt_shape_known(x) || !rt_shape_known(f)) {
        rt_err_set(e, "needs concrete shapes");
        return false;
    }
    g->n = x->dims[0], g->h = x->dims[1], g->w = x->dims[2], g->c = x->dims[3];
    g->kh = f->dims[0], g->kw = f->dims[1], g->o = f->dims[3];
    g->sh = stride_h, g->sw = stride_w;
    g->oh = conv_out_dim(g->h, g->kh, g->sh, padding);
    g->ow = conv_out_dim(g->w, g->kw, g->sw, padding);
    g->pad_top = conv_pad_before(g->h, g->kh, g->sh, g->oh, padding);
    g->pad_left = conv_pad_before(g->w, g->kw, g->sw, g->ow, padding);
    return true;
}

/* Copies count input elements into the im2col buffer, converting them to
 * the compute type. */
typedef void (*copy_fn)(void *dst, const void *src, int64_t count);

static void copy_f32(void *dst, const void *src, int64_t count)
{
    memcpy(dst, src, (size_t)count * sizeof(float));
}

static void copy_f64(void *dst, const void *src, int64_t count)
{
    memcpy(dst, src, (size_t)count * sizeof(double));
}

static void copy_bf16_to_f32(void *dst, const void *src, int64_t count)
{
    float *d = dst;
    const uint16_t *s = src;
    for (int64_t i = 0; i < count; i++)
        d[i] = ag_bf16_to_f32(s[i]);
}

/* How im2col reads the input and writes the column buffer. */
typedef struct col_io {
    const void *x;
    size_t xsize; /* input element size */
    size_t csize; /* column (compute) element size */
    copy_fn copy;
} col_io;

/* Writes one im2col row: the window of output pixel (b, i, j), with zeros
 * where it hangs over the padding. Within a window row the in-bounds
 * columns are adjacent in NHWC memory, so each is one copy. */
static void im2col_row(const rt_conv2d_geom *g, const col_io *io, int64_t b, int64_t i,
                       int64_t j, char *dst)
{
    int64_t run = g->kw * g->c; /* elements per window row */
    int64_t iw0 = j * g->sw - g->pad_left;
    int64_t kw_lo = max64(0, -iw0), kw_hi = min64(g->kw, g->w - iw0);
    for (int64_t kh = 0; kh < g->kh; kh++, dst += (size_t)run * io->csize) {
        int64_t ih = i * g->sh - g->pad_top + kh;
        if (ih < 0 || ih >= g->h || kw_hi <= kw_lo) {
            memset(dst, 0, (size_t)run * io->csize);
            continue;
        }
        int64_t first = ((b * g->h + ih) * g->w + iw0 + kw_lo) * g->c;
        memset(dst, 0, (size_t)(kw_lo * g->c) * io->csize);
        io->copy(dst + (size_t)(kw_lo * g->c) * io->csize,
                 (const char *)io->x + (size_t)first * io->xsize, (kw_hi - kw_lo) * g->c);
        memset(dst + (size_t)(kw_hi * g->c) * io->csize, 0,
               (size_t)((g->kw - kw_hi) * g->c) * io->csize);
    }
}

/* Writes im2col rows [row0, row0 + rows) (row = flattened (b, i, j)). */
static void im2col(const rt_conv2d_geom *g, const col_io *io, int64_t row0, int64_t rows,
                   void *col)
{
    int64_t per_image = g->oh * g->ow;
    int64_t b = row0 / per_image, i = row0 % per_image / g->ow, j = row0 % g->ow;
    size_t row_bytes = (size_t)(g->kh * g->kw * g->c) * io->csize;
    for (int64_t r = 0; r < rows; r++) {
        im2col_row(g, io, b, i, j, (char *)col + (size_t)r * row_bytes);
        if (++j == g->ow) {
            j = 0;
            if (++i == g->oh) {
                i = 0;
                b++;
            }
        }
    }
}

/* conv2d as im2col + gemm in chunks of output pixels. filter and out are
 * in the compute type (io->csize); a 1x1 stride-1 conv needs no im2col at
 * all when the input already is in the compute type. */
static void conv2d_gemm(const rt_conv2d_geom *g, const col_io *io, const void *filter,
                        void *out, mm_fn mm)
{
    int64_t total = g->n * g->oh * g->ow, k = g->kh * g->kw * g->c;
    if (total == 0 || g->o == 0)
        return;
    if (g->kh == 1 && g->kw == 1 && g->sh == 1 && g->sw == 1 && io->xsize == io->csize) {
        mm(io->x, filter, out, total, k, g->o);
        return;
    }
    int64_t chunk =
        min64(total, max64(CONV_MIN_ROWS, CONV_COL_BYTES / (k * (int64_t)io->csize)));
    void *col = rt_xmalloc((size_t)(chunk * k) * io->csize);
    for (int64_t r0 = 0; r0 < total; r0 += chunk) {
        int64_t rows = min64(chunk, total - r0);
        im2col(g, io, r0, rows, col);
        mm(col, filter, (char *)out + (size_t)(r0 * g->o) * io->csize, rows, k, g->o);
    }
    free(col);
}

void rt_conv2d_f32(const rt_conv2d_geom *g, const float *x, const float *filter,
                   float *out)
{
    col_io io = {x, sizeof(float), sizeof(float), copy_f32};
    conv2d_gemm(g, &io, filter, out, mm_f32);
}

static void conv2d_f64(const rt_conv2d_geom *g, const double *x, const double *filter,
                       double *out)
{
    col_io io = {x, sizeof(double), sizeof(double), copy_f64};
    conv2d_gemm(g, &io, filter, out, mm_f64);
}

/* bf16: im2col widens to f32, sgemm into an f32 result, rounded once. */
static void conv2d_bf16(const rt_conv2d_geom *g, const uint16_t *x, const uint16_t *filter,
                        uint16_t *out, int64_t out_numel)
{
    col_io io = {x, sizeof(uint16_t), sizeof(float), copy_bf16_to_f32};
    float *ff = widen_bf16(filter, g->kh * g->kw * g->c * g->o);
    float *fo = rt_xmalloc((size_t)max64(out_numel, 1) * sizeof *fo);
    conv2d_gemm(g, &io, ff, fo, mm_f32);
    round_to_bf16(fo, out, out_numel);
    free(ff);
    free(fo);
}

/*
 * Integer conv2d, directly: each output pixel's row of O accumulators gets
 * x[c] * filter[kh, kw, c, :] for every in-bounds tap; the innermost loop
 * runs over contiguous output channels. Unsigned arithmetic wraps.
 */
#define DEFINE_CONV_INT(name, U)                                                 \
    static void name(const rt_conv2d_geom *g, const void *xv, const void *fv,   \
                     void *ov)                                                   \
    {                                                                            \
        const U *x = xv, *f = fv;                                                \
        U *acc = ov;                                                             \
        for (int64_t b = 0; b < g->n; b++)                                       \
            for (int64_t i = 0; i < g->oh; i++)                                  \
                for (int64_t j = 0; j < g->ow; j++, acc += g->o) {               \
                    for (int64_t o = 0; o < g->o; o++)                           \
                        acc[o] = 0;                                              \
                    for (int64_t kh = 0; kh < g->kh; kh++) {                     \
                        int64_t ih = i * g->sh - g->pad_top + kh;                \
                        if (ih < 0 || ih >= g->h)                                \
                            continue;                                            \
                        for (int64_t kw = 0; kw < g->kw; kw++) {                 \
                            int64_t iw = j * g->sw - g->pad_left + kw;           \
                            if (iw < 0 || iw >= g->w)                            \
                                continue;                                        \
                            const U *xp = x + ((b * g->h + ih) * g->w + iw) * g->c; \
                            const U *fp = f + (kh * g->kw + kw) * g->c * g->o;   \
                            for (int64_t c = 0; c < g->c; c++) {                 \
                                U xv_c = xp[c];                                  \
                                const U *frow = fp + c * g->o;                   \
                                for (int64_t o = 0; o < g->o; o++)               \
                                    acc[o] += xv_c * frow[o];                    \
                            }                                                    \
                        }                                                        \
                    }                                                            \
                }                                                                \
    }

DEFINE_CONV_INT(conv2d_i32, uint32_t)
DEFINE_CONV_INT(conv2d_i64, uint64_t)

RT_KERNEL(rt_k_conv2d)
{
    (void)n;
    rt_conv2d_geom g;
    if (!rt_conv2d_geometry(&in[0]->shape, &in[1]->shape, a->stride_h, a->stride_w,
                            a->padding, &g, e))
        return false;
    if (out->numel == 0)
        return true;
    int64_t k = g.kh * g.kw * g.c;
    if (rt_is_float(out->dtype) && (k > INT_MAX || g.o > INT_MAX)) {
        rt_err_set(e, "a filter of %lld taps by %lld outputs is too large for BLAS",
                   (long long)k, (long long)g.o);
        return false;
    }
    if (rt_is_float(out->dtype) && !rt_blas_memory_check(e))
        return false;
    const void *x = in[0]->data, *f = in[1]->data;
    switch (out->dtype) {
    case AG_F32: rt_conv2d_f32(&g, x, f, out->data); break;
    case AG_F64: conv2d_f64(&g, x, f, out->data); break;
    case AG_BF16: conv2d_bf16(&g, x, f, out->data, out->numel); break;
    case AG_I32: conv2d_i32(&g, x, f, out->data); break;
    case AG_I64: conv2d_i64(&g, x, f, out->data); break;
    default:
        rt_err_set(e, "has no kernel for %s", ag_dtype_name(out->dtype));
        return false;
    }
    return true;
}
