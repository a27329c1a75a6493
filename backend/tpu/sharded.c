/*
 * sharded.c - a split product's numerics, chip by chip (partition.h's
 * tpu_sharded_product): each chip computes its share with the MXU's
 * numerics (numerics.h) on the operands it holds, and the shares are put
 * together as the collectives would.
 *
 *   M  chip c computes rows [m c / chips, m (c + 1) / chips) (a conv2d's
 *      images): each element's sum is the one chip's, so the result is
 *      bit-identical to one chip's
 *   N  chip c computes its columns of the weights: bit-identical too
 *   K  chip c sums its share of k in the MXU's order (128 at a time from
 *      its first k); the all-reduce then adds the chips' partial sums in
 *      chip order, ((p0 + p1) + p2) + ..., in f32: the same bits on every
 *      run, within f32 rounding of one chip's sums
 *
 * The chips' shares are tasks on the call's pool (pool.h): each writes
 * only its own rows or columns of the result (K: its own partial sums,
 * which the chip-order sum, by blocks of rows, then adds), so the bits
 * are the same whatever the threads. Shares may be uneven (partition.h's
 * tpu_slice_share): an M or N share of fewer rows or columns sums each
 * element as one chip does.
 */
#include "partition.h"

#include "numerics.h"
#include "pool.h"

#include <stdlib.h>
#include <string.h>

static float *widened(const rt_value *v)
{
    float *out = rt_xmalloc((size_t)(v->numel ? v->numel : 1) * sizeof *out);
    for (int64_t i = 0; i < v->numel; i++)
        out[i] = v->dtype == AG_BF16 ? tpu_bf16_to_f32(((const uint16_t *)v->data)[i])
                                     : ((const float *)v->data)[i];
    return out;
}

static rt_value *narrowed(const ir_node *n, const float *c)
{
    rt_value *out = rt_value_new(n->type.dtype, &n->type.shape);
    for (int64_t i = 0; i < out->numel; i++) {
        if (out->dtype == AG_BF16)
            ((uint16_t *)out->data)[i] = tpu_bf16_bits(c[i]);
        else
            ((float *)out->data)[i] = c[i];
    }
    return out;
}

/* Elements of an r x c matrix, for an allocation (at least one). */
static size_t cells(int64_t r, int64_t c) { return r > 0 && c > 0 ? (size_t)(r * c) : 1; }

/* cols [from, to) of the r x w matrix x, packed. */
static float *columns(const float *x, int64_t r, int64_t w, int64_t from, int64_t to)
{
    float *out = rt_xmalloc(cells(r, to - from) * sizeof *out);
    for (int64_t i = 0; i < r; i++)
        memcpy(out + i * (to - from), x + i * w + from, (size_t)(to - from) * sizeof *out);
    return out;
}

typedef struct product {
    const float *a, *b;
    float *c;
    int64_t m, k, n;
    tpu_precision prec;
    int chips;
    float **part; /* K: chip c's partial sums */
    int blocks;   /* K: the chip-order sum's tasks, by rows */
} product;

/* Chip c's rows. */
static void chip_m(void *ctx, int ch)
{
    const product *P = ctx;
    int64_t r0, r1;
    tpu_slice_share(P->m, P->chips, ch, &r0, &r1);
    tpu_mxu_matmul_f32(P->a + r0 * P->k, P->b, P->c + r0 * P->n, r1 - r0, P->k, P->n, P->prec);
}

/* Chip c's columns, then its part of the all-gather. */
static void chip_n(void *ctx, int ch)
{
    const product *P = ctx;
    int64_t c0, c1;
    tpu_slice_share(P->n, P->chips, ch, &c0, &c1);
    float *b = columns(P->b, P->k, P->n, c0, c1);
    float *part = rt_xmalloc(cells(P->m, c1 - c0) * sizeof *part);
    tpu_mxu_matmul_f32(P->a, b, part, P->m, P->k, c1 - c0, P->prec);
    for (int64_t i = 0; i < P->m; i++)
        memcpy(P->c + i * P->n + c0, part + i * (c1 - c0), (size_t)(c1 - c0) * sizeof *part);
    free(part);
    free(b);
}

/* Chip c's partial sums over its share of k. */
static void chip_k(void *ctx, int ch)
{
    const product *P = ctx;
    int64_t k0, k1;
    tpu_slice_share(P->k, P->chips, ch, &k0, &k1);
    float *a = columns(P->a, P->m, P->k, k0, k1);
    tpu_mxu_matmul_f32(a, P->b + k0 * P->n, P->part[ch], P->m, k1 - k0, P->n, P->prec);
    free(a);
}

/* The all-reduce on block i of the rows: each element's partial sums
 * added in chip order, ((p0 + p1) + p2) + ... */
static void reduce_rows(void *ctx, int i)
{
    const product *P = ctx;
    int64_t from = P->m * i / P->blocks * P->n, to = P->m * (i + 1) / P->blocks * P->n;
    for (int64_t e = from; e < to; e++) {
        float sum = P->part[0][e];
        for (int ch = 1; ch < P->chips; ch++)
            sum += P->part[ch][e];
        P->c[e] = sum;
    }
}

static void split_k(product *P, tpu_pool *pool)
{
    P->part = rt_xmalloc((size_t)P->chips * sizeof *P->part);
    for (int ch = 0; ch < P->chips; ch++)
        P->part[ch] = rt_xmalloc(cells(P->m, P->n) * sizeof **P->part);
    tpu_pool_run(pool, P->chips, chip_k, P);
    P->blocks = P->m < P->chips ? (int)(P->m > 0 ? P->m : 1) : P->chips;
    tpu_pool_run(pool, P->blocks, reduce_rows, P);
    for (int ch = 0; ch < P->chips; ch++)
        free(P->part[ch]);
    free(P->part);
}

typedef struct images {
    const tpu_slice *s;
    const tpu_spec *spec;
    const ir_node *n;
    const float *x, *w;
    float *c;
} images;

/* Chip c's images of a conv2d (M). */
static void chip_images(void *ctx, int ch)
{
    const images *I = ctx;
    const ir_node *n = I->n;
    const int64_t *xd = n->in[0]->type.shape.dims, *fd = n->in[1]->type.shape.dims;
    const int64_t *od = n->type.shape.dims;
    int64_t image = xd[1] * xd[2] * xd[3], out = od[1] * od[2] * od[3];
    int64_t b0, b1;
    tpu_slice_share(xd[0], I->s->chips, ch, &b0, &b1);
    tpu_mxu_conv2d_f32(I->x + b0 * image, I->w, I->c + b0 * out, b1 - b0, xd[1], xd[2], xd[3],
                       fd[0], fd[1], fd[3], n->attrs.stride_h, n->attrs.stride_w,
                       n->attrs.padding == AG_SAME, (tpu_precision)I->spec->precision);
}

rt_value *tpu_sharded_product(const tpu_slice *s, const tpu_spec *spec, const ir_node *n,
                              rt_value *const *in, tpu_pool *pool)
{
    if (n->id >= s->n_ids || s->node[n->id].split == TPU_SPLIT_NONE)
        return NULL;
    float *a = widened(in[0]), *b = widened(in[1]);
    const ag_shape *o = &n->type.shape;
    int64_t cells = 1;
    for (int i = 0; i < o->rank; i++)
        cells *= o->dims[i];
    float *c = rt_xcalloc((size_t)(cells ? cells : 1), sizeof *c);
    if (n->opcode == RT_OP_CONV2D) {
        images I = {s, spec, n, a, b, c};
        tpu_pool_run(pool, s->chips, chip_images, &I);
    } else {
        product P = {a, b, c, in[0]->shape.dims[0], in[0]->shape.dims[1], in[1]->shape.dims[1],
                     (tpu_precision)spec->precision, s->chips, NULL, 0};
        tpu_split k = s->node[n->id].split;
        if (k == TPU_SPLIT_M)
            tpu_pool_run(pool, s->chips, chip_m, &P);
        else if (k == TPU_SPLIT_N)
            tpu_pool_run(pool, s->chips, chip_n, &P);
        else
            split_k(&P, pool);
    }
    rt_value *out = narrowed(n, c);
    free(a);
    free(b);
    free(c);
    return out;
}
