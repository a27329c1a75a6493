/*
 * shape.c - shape manipulation: reshape, transpose, concat, stack, slice,
 * gather, expand_dims, squeeze, shape_of, size, one_hot.
 *
 * These ops only move bytes, so every kernel works on the element size,
 * never on per-dtype code: bool and bf16 come for free. Transpose and slice
 * share one engine (strided_copy) that walks the output in row-major order
 * and reads the input through per-dim strides; it first drops size-1 dims
 * and merges dims that are contiguous in the input, so that the common
 * cases become a few long memcpy calls.
 *
 * Shape rules accept unknown dims (-1) and symbolic inputs; they give -1
 * where a dim cannot be known and reject only what is certainly wrong.
 */
#include "../core/op_decls.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { SHAPE_BUF = 192 };

/* ------------------------------------------------------------ helpers */

/* Formats an index vector (a reshape target, a perm, slice begin/size)
 * as "[2,-1]": unlike rt_shape_str, negative entries print as written,
 * since they are the user's own numbers. */
static char *index_str(const ag_shape *s, char *buf, size_t n)
{
    size_t len = (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < s->rank && len < n; i++)
        len += (size_t)snprintf(buf + len, n - len, "%s%lld", i ? "," : "",
                                (long long)s->dims[i]);
    if (len < n)
        snprintf(buf + len, n - len, "]");
    return buf;
}

static bool rank_in_range(int rank, const char *what, rt_err *e)
{
    if (rank < 0 || rank > AG_MAX_RANK) {
        rt_err_set(e, "%s has rank %d, out of range (0..%d)", what, rank, AG_MAX_RANK);
        return false;
    }
    return true;
}

/* The rank a result would have; an error when it exceeds AG_MAX_RANK. */
static bool result_rank_ok(int rank, rt_err *e)
{
    if (rank > AG_MAX_RANK) {
        rt_err_set(e, "the result would have rank %d, more than the maximum %d",
                   rank, AG_MAX_RANK);
        return false;
    }
    return true;
}

/* a * b for non-negative counts; false on int64 overflow. */
static bool mul_count(int64_t a, int64_t b, int64_t *out)
{
    if (b != 0 && a > INT64_MAX / b)
        return false;
    *out = a * b;
    return true;
}

/* Product of dims [from, to) of a concrete shape. */
static int64_t dims_product(const ag_shape *s, int from, int to)
{
    int64_t p = 1;
    for (int i = from; i < to; i++)
        p *= s->dims[i];
    return p;
}

/* Loads index j of an i32 or i64 tensor. */
static inline int64_t index_at(const rt_value *idx, int64_t j)
{
    return idx->dtype == AG_I32 ? ((const int32_t *)idx->data)[j]
                                : ((const int64_t *)idx->data)[j];
}

/* ------------------------------------------------------- strided copy */

/* A walk over the output in row-major order: dims are output dims, and
 * strides[i] is how far (in input elements) one step along dim i moves. */
typedef struct strided {
    int rank;
    int64_t dims[AG_MAX_RANK];
    int64_t strides[AG_MAX_RANK];
} strided;

/* Drops size-1 dims (they never move) and merges neighbours i-1, i whose
 * input positions are contiguous (stride[i-1] == stride[i] * dim[i]), so
 * an identity transpose or a slice of whole rows becomes one long run. */
static void simplify(strided *w)
{
    int r = 0;
    for (int i = 0; i < w->rank; i++) {
        if (w->dims[i] == 1)
            continue;
        if (r > 0 && w->strides[r - 1] == w->strides[i] * w->dims[i]) {
            w->dims[r - 1] *= w->dims[i];
            w->strides[r - 1] = w->strides[i];
            continue;
        }
        w->dims[r] = w->dims[i];
        w->strides[r] = w->strides[i];
        r++;
    }
    w->rank = r;
}

/* Typed strided row copies and a cache-blocked 2-D transpose for each
 * element size; defining them by macro keeps the loops tight without
 * writing four copies by hand. */
#define DEFINE_STRIDED(T, suffix)                                                   \
    static void row_##suffix(T *restrict dst, const T *restrict src, int64_t n,    \
                             int64_t stride)                                        \
    {                                                                               \
        for (int64_t j = 0; j < n; j++)                                             \
            dst[j] = src[j * stride];                                               \
    }                                                                               \
    /* out[a][b] = src[a + b * stride] for a < rows, b < cols, in tiles so that    \
     * both the reads and the writes stay within a few cache lines. */             \
    static void tile_##suffix(T *restrict dst, const T *restrict src, int64_t rows, \
                              int64_t cols, int64_t stride)                         \
    {                                                                               \
        enum { TILE = 32 };                                                         \
        for (int64_t a0 = 0; a0 < rows; a0 += TILE) {                               \
            int64_t a1 = a0 + TILE < rows ? a0 + TILE : rows;                       \
            for (int64_t b0 = 0; b0 < cols; b0 += TILE) {                           \
                int64_t b1 = b0 + TILE < cols ? b0 + TILE : cols;                   \
                for (int64_t a = a0; a < a1; a++)                                   \
                    for (int64_t b = b0; b < b1; b++)                               \
                        dst[a * cols + b] = src[a + b * stride];                    \
            }                                                                       \
        }                                                                           \
    }
DEFINE_STRIDED(uint8_t, 1)
DEFINE_STRIDED(uint16_t, 2)
DEFINE_STRIDED(uint32_t, 4)
DEFINE_STRIDED(uint64_t, 8)
#undef DEFINE_STRIDED

/* Copies n elements read `stride` elements apart into a contiguous row. */
static void copy_row(char *dst, const char *src, int64_t n, int64_t stride, size_t es)
{
    if (stride == 1) {
        memcpy(dst, src, (size_t)n * es);
        return;
    }
    switch (es) {
    case 1: row_1((uint8_t *)dst, (const uint8_t *)src, n, stride); break;
    case 2: row_2((uint16_t *)dst, (const uint16_t *)src, n, stride); break;
    case 4: row_4((uint32_t *)dst, (const uint32_t *)src, n, stride); break;
    default: row_8((uint64_t *)dst, (const uint64_t *)src, n, stride); break;
    }
}

static void copy_tiled(char *dst, const char *src, int64_t rows, int64_t cols,
                       int64_t stride, size_t es)
{
    switch (es) {
    case 1: tile_1((uint8_t *)dst, (const uint8_t *)src, rows, cols, stride); break;
    case 2: tile_2((uint16_t *)dst, (const uint16_t *)src, rows, cols, stride); break;
    case 4: tile_4((uint32_t *)dst, (const uint32_t *)src, rows, cols, stride); break;
    default: tile_8((uint64_t *)dst, (const uint64_t *)src, rows, cols, stride); break;
    }
}

/* Writes the `numel` (> 0) elements of walk w, read from src, to dst in
 * row-major order. The last dim is copied as a row; an odometer over the
 * other dims keeps the input offset up to date incrementally. */
static void strided_copy(char *dst, const char *src, strided w, int64_t numel, size_t es)
{
    simplify(&w);
    if (w.rank == 0) {
        memcpy(dst, src, es);
        return;
    }
    int last = w.rank - 1;
    int64_t n = w.dims[last], stride = w.strides[last];
    /* A plain 2-D transpose: reading along dim 0 is contiguous, so tile. */
    if (w.rank == 2 && w.strides[0] == 1 && stride != 1) {
        copy_tiled(dst, src, w.dims[0], n, stride, es);
        return;
    }
    int64_t idx[AG_MAX_RANK] = {0};
    int64_t off = 0;
    for (int64_t row = 0, rows = numel / n; row < rows; row++) {
        copy_row(dst, src + off * (int64_t)es, n, stride, es);
        dst += n * (int64_t)es;
        for (int d = last - 1; d >= 0; d--) {
            off += w.strides[d];
            if (++idx[d] < w.dims[d])
                break;
            off -= w.strides[d] * w.dims[d];
            idx[d] = 0;
        }
    }
}

/* ------------------------------------------------------------ reshape */

/* Checks a reshape target: dims >= -1, at most one -1. Sets *unknown to
 * the -1's index (or -1) and *known to the product of the other dims. */
static bool check_target(const ag_shape *t, int *unknown, int64_t *known, rt_err *e)
{
    char buf[SHAPE_BUF];
    if (!rank_in_range(t->rank, "the target shape", e))
        return false;
    *unknown = -1;
    *known = 1;
    for (int i = 0; i < t->rank; i++) {
        if (t->dims[i] == -1) {
            if (*unknown >= 0) {
                rt_err_set(e, "target shape %s has more than one -1; only one dim can "
                              "be inferred", index_str(t, buf, sizeof buf));
                return false;
            }
            *unknown = i;
        } else if (t->dims[i] < 0) {
            rt_err_set(e, "target shape %s has the negative dim %lld (only -1, "
                          "meaning 'infer this dim', is allowed)",
                       index_str(t, buf, sizeof buf), (long long)t->dims[i]);
            return false;
        } else if (!mul_count(*known, t->dims[i], known)) {
            rt_err_set(e, "target shape %s has too many elements",
                       index_str(t, buf, sizeof buf));
            return false;
        }
    }
    return true;
}

/* Resolves the target against an input of known element count. */
static bool resolve_target(const ag_shape *from, int64_t count, const ag_shape *t,
                           int unknown, int64_t known, ag_shape *out, rt_err *e)
{
    char b1[SHAPE_BUF], b2[SHAPE_BUF];
    *out = *t;
    if (unknown < 0) {
        if (known == count)
            return true;
        rt_err_set(e, "cannot reshape a tensor of shape %s (%lld elements) into shape "
                      "%s (%lld elements); the element counts must be equal",
                   rt_shape_str(from, b1, sizeof b1), (long long)count,
                   index_str(t, b2, sizeof b2), (long long)known);
        return false;
    }
    if (known == 0) {
        /* Any size would do (or none): TensorFlow refuses this too. */
        rt_err_set(e, "cannot infer the -1 in shape %s for a tensor of shape %s: the "
                      "other dims multiply to 0; give every dim explicitly",
                   index_str(t, b2, sizeof b2), rt_shape_str(from, b1, sizeof b1));
        return false;
    }
    if (count % known != 0) {
        rt_err_set(e, "cannot reshape a tensor of shape %s (%lld elements) into shape "
                      "%s: %lld is not a multiple of %lld, the product of the other dims",
                   rt_shape_str(from, b1, sizeof b1), (long long)count,
                   index_str(t, b2, sizeof b2), (long long)count, (long long)known);
        return false;
    }
    out->dims[unknown] = count / known;
    return true;
}

/* With unknown input dims, the product p of the known ones still divides
 * the element count (when p > 0): a fully known target must be a multiple
 * of p. */
static bool check_partial(const ag_shape *from, const ag_shape *t, int unknown,
                          int64_t known, rt_err *e)
{
    char b1[SHAPE_BUF], b2[SHAPE_BUF];
    int64_t p = 1;
    for (int i = 0; i < from->rank; i++)
        if (from->dims[i] >= 0 && !mul_count(p, from->dims[i], &p))
            return true; /* too large to say anything */
    if (unknown >= 0 || p == 0 || known % p == 0)
        return true;
    rt_err_set(e, "cannot reshape a tensor of shape %s into shape %s: its element "
                  "count is a multiple of %lld, but %lld is not",
               rt_shape_str(from, b1, sizeof b1), index_str(t, b2, sizeof b2),
               (long long)p, (long long)known);
    return false;
}

RT_SHAPE_RULE(rt_sh_reshape)
{
    (void)n;
    const ag_shape *from = &in[0]->shape;
    int unknown;
    int64_t known;
    if (!check_target(&a->shape, &unknown, &known, e))
        return false;
    int64_t count = rt_shape_numel(from);
    if (count >= 0)
        return resolve_target(from, count, &a->shape, unknown, known, out, e);
    if (!check_partial(from, &a->shape, unknown, known, e))
        return false;
    *out = a->shape; /* a -1 stays unknown */
    return true;
}

/* Executors that cannot alias copy instead; also expand_dims and squeeze,
 * which only relabel the same row-major data. */
RT_KERNEL(rt_k_reshape)
{
    (void)a, (void)n, (void)e;
    size_t bytes = rt_value_bytes(out);
    if (bytes > 0)
        memcpy(out->data, in[0]->data, bytes);
    return true;
}

/* ---------------------------------------------------------- transpose */

static bool check_perm(const ag_shape *perm, int rank, rt_err *e)
{
    char buf[SHAPE_BUF];
    bool seen[AG_MAX_RANK] = {false};
    if (perm->rank != rank) {
        rt_err_set(e, "perm %s has %d entr%s but the tensor has rank %d; give one "
                      "entry per axis", index_str(perm, buf, sizeof buf), perm->rank,
                   perm->rank == 1 ? "y" : "ies", rank);
        return false;
    }
    for (int i = 0; i < rank; i++) {
        int64_t p = perm->dims[i];
        if (p < 0 || p >= rank || seen[p]) {
            rt_err_set(e, "perm %s is not a permutation of 0..%d (entry %d is %lld)",
                       index_str(perm, buf, sizeof buf), rank - 1, i, (long long)p);
            return false;
        }
        seen[p] = true;
    }
    return true;
}

RT_SHAPE_RULE(rt_sh_transpose)
{
    (void)n;
    const ag_shape *s = &in[0]->shape;
    if (!check_perm(&a->perm, s->rank, e))
        return false;
    out->rank = s->rank;
    for (int i = 0; i < s->rank; i++)
        out->dims[i] = s->dims[a->perm.dims[i]];
    return true;
}

RT_KERNEL(rt_k_transpose)
{
    (void)n, (void)e;
    if (out->numel == 0)
        return true;
    int64_t st[AG_MAX_RANK];
    rt_strides(&in[0]->shape, st);
    strided w = {.rank = out->shape.rank};
    for (int i = 0; i < w.rank; i++) {
        w.dims[i] = out->shape.dims[i];
        w.strides[i] = st[a->perm.dims[i]];
    }
    strided_copy(out->data, in[0]->data, w, out->numel, rt_dtype_size(out->dtype));
    return true;
}

/* ----------------------------------------------------- concat / stack */

/* Dims agree unless both are known and differ. */
static bool dims_compatible(int64_t x, int64_t y)
{
    return x < 0 || y < 0 || x == y;
}

/* The known one of two compatible dims (or -1). */
static int64_t dims_merge(int64_t x, int64_t y)
{
    return x >= 0 ? x : y;
}

/* The first input whose rank differs from in[0]'s, or -1. */
static int rank_mismatch(rt_value *const *in, int n)
{
    for (int i = 1; i < n; i++)
        if (in[i]->shape.rank != in[0]->shape.rank)
            return i;
    return -1;
}

RT_SHAPE_RULE(rt_sh_concat)
{
    char b1[SHAPE_BUF], b2[SHAPE_BUF];
    const ag_shape *s0 = &in[0]->shape;
    int axis, bad = rank_mismatch(in, n);
    if (bad >= 0) {
        rt_err_set(e, "input %d has shape %s (rank %d) but input 0 has shape %s "
                      "(rank %d); all inputs must have the same rank", bad,
                   rt_shape_str(&in[bad]->shape, b1, sizeof b1), in[bad]->shape.rank,
                   rt_shape_str(s0, b2, sizeof b2), s0->rank);
        return false;
    }
    if (s0->rank == 0) {
        rt_err_set(e, "cannot concatenate scalars; use ag_stack to make a vector of them");
        return false;
    }
    if (!rt_norm_axis(a->axis, s0->rank, &axis)) {
        rt_err_set(e, "axis %lld is out of range for inputs of rank %d (valid: %d..%d)",
                   (long long)a->axis, s0->rank, -s0->rank, s0->rank - 1);
        return false;
    }
    *out = *s0;
    for (int i = 1; i < n; i++) {
        const ag_shape *si = &in[i]->shape;
        for (int d = 0; d < s0->rank; d++) {
            if (d == axis)
                continue;
            if (!dims_compatible(out->dims[d], si->dims[d])) {
                rt_err_set(e, "input %d has shape %s but input 0 has shape %s: dim %d "
                              "differs (%lld vs %lld); all dims except the concat axis "
                              "%d must match", i, rt_shape_str(si, b1, sizeof b1),
                           rt_shape_str(s0, b2, sizeof b2), d, (long long)si->dims[d],
                           (long long)out->dims[d], axis);
                return false;
            }
            out->dims[d] = dims_merge(out->dims[d], si->dims[d]);
        }
        if (out->dims[axis] < 0 || si->dims[axis] < 0) {
            out->dims[axis] = -1;
        } else if (si->dims[axis] > RT_MAX_TENSOR_BYTES - out->dims[axis]) {
            /* Before the sum overflows: rt_infer's size check comes later. */
            rt_err_set(e, "the concat axis %d would have more than %lld elements", axis,
                       (long long)RT_MAX_TENSOR_BYTES);
            return false;
        } else {
            out->dims[axis] += si->dims[axis];
        }
    }
    return true;
}

RT_SHAPE_RULE(rt_sh_stack)
{
    char b1[SHAPE_BUF], b2[SHAPE_BUF];
    const ag_shape *s0 = &in[0]->shape;
    int rank = s0->rank, axis;
    if (!result_rank_ok(rank + 1, e))
        return false;
    if (!rt_norm_axis(a->axis, rank + 1, &axis)) {
        rt_err_set(e, "axis %lld is out of range for stacking inputs of rank %d "
                      "(valid: %d..%d)", (long long)a->axis, rank, -rank - 1, rank);
        return false;
    }
    ag_shape elem = *s0;
    for (int i = 1; i < n; i++) {
        const ag_shape *si = &in[i]->shape;
        bool ok = si->rank == rank;
        for (int d = 0; ok && d < rank; d++)
            ok = dims_compatible(elem.dims[d], si->dims[d]);
        if (!ok) {
            rt_err_set(e, "input %d has shape %s but input 0 has shape %s; stacked "
                          "inputs must all have the same shape", i,
                       rt_shape_str(si, b1, sizeof b1), rt_shape_str(s0, b2, sizeof b2));
            return false;
        }
        for (int d = 0; d < rank; d++)
            elem.dims[d] = dims_merge(elem.dims[d], si->dims[d]);
    }
    out->rank = rank + 1;
    for (int d = 0, src = 0; d <= rank; d++)
        out->dims[d] = d == axis ? n : elem.dims[src++];
    return true;
}

/* For each of `outer` rounds, appends in[i]'s next chunk[i] bytes for
 * every input i: concat and stack are both this interleaving. */
static void interleave(char *dst, rt_value *const *in, int n, int64_t outer,
                       const int64_t *chunk)
{
    for (int64_t o = 0; o < outer; o++) {
        for (int i = 0; i < n; i++) {
            if (chunk[i] == 0)
                continue;
            memcpy(dst, (const char *)in[i]->data + o * chunk[i], (size_t)chunk[i]);
            dst += chunk[i];
        }
    }
}

/* Calls interleave with the chunk sizes in a temporary array. */
static void join(rt_value *out, rt_value *const *in, int n, int64_t outer,
                 int64_t inner_bytes, int axis, bool per_input_axis)
{
    int64_t stack_chunk[16];
    int64_t *chunk = n <= 16 ? stack_chunk : rt_xmalloc((size_t)n * sizeof *chunk);
    for (int i = 0; i < n; i++)
        chunk[i] = inner_bytes * (per_input_axis ? in[i]->shape.dims[axis] : 1);
    interleave(out->data, in, n, outer, chunk);
    if (chunk != stack_chunk)
        free(chunk);
}

RT_KERNEL(rt_k_concat)
{
    (void)e;
    int axis;
    rt_norm_axis(a->axis, out->shape.rank, &axis);
    if (out->numel == 0)
        return true;
    int64_t es = (int64_t)rt_dtype_size(out->dtype);
    int64_t outer = dims_product(&out->shape, 0, axis);
    int64_t inner = dims_product(&out->shape, axis + 1, out->shape.rank) * es;
    join(out, in, n, outer, inner, axis, true);
    return true;
}

RT_KERNEL(rt_k_stack)
{
    (void)e;
    int axis;
    rt_norm_axis(a->axis, out->shape.rank, &axis);
    if (out->numel == 0)
        return true;
    int64_t es = (int64_t)rt_dtype_size(out->dtype);
    int64_t outer = dims_product(&out->shape, 0, axis);
    int64_t inner = dims_product(&out->shape, axis + 1, out->shape.rank) * es;
    join(out, in, n, outer, inner, axis, false);
    return true;
}

/* -------------------------------------------------------------- slice */

/* The slice along one axis: checks begin/size against dim (which may be
 * unknown) and gives the result dim. */
static bool slice_axis(int axis, int64_t dim, int64_t begin, int64_t size, int64_t *out,
                       rt_err *e)
{
    if (begin < 0 || size < -1) {
        rt_err_set(e, "axis %d: begin %lld and size %lld are invalid (begin must be "
                      ">= 0, size >= 0 or -1 for 'to the end')", axis,
                   (long long)begin, (long long)size);
        return false;
    }
    if (dim < 0) {
        *out = size; /* -1 stays unknown */
        return true;
    }
    if (size == -1 ? begin > dim : size > dim || begin > dim - size) {
        if (size == -1)
            rt_err_set(e, "axis %d: begin %lld is past the end of the dim %lld", axis,
                       (long long)begin, (long long)dim);
        else
            rt_err_set(e, "axis %d: begin %lld + size %lld exceeds the dim %lld", axis,
                       (long long)begin, (long long)size, (long long)dim);
        return false;
    }
    *out = size == -1 ? dim - begin : size;
    return true;
}

RT_SHAPE_RULE(rt_sh_slice)
{
    (void)n;
    char b1[SHAPE_BUF], b2[SHAPE_BUF], b3[SHAPE_BUF];
    const ag_shape *s = &in[0]->shape;
    if (a->begin.rank != s->rank || a->size.rank != s->rank) {
        rt_err_set(e, "begin %s and size %s must each have one entry per axis of the "
                      "input, whose shape is %s", index_str(&a->begin, b1, sizeof b1),
                   index_str(&a->size, b2, sizeof b2), rt_shape_str(s, b3, sizeof b3));
        return false;
    }
    out->rank = s->rank;
    for (int i = 0; i < s->rank; i++)
        if (!slice_axis(i, s->dims[i], a->begin.dims[i], a->size.dims[i], &out->dims[i],
                        e))
            return false;
    return true;
}

RT_KERNEL(rt_k_slice)
{
    (void)n, (void)e;
    if (out->numel == 0)
        return true;
    size_t es = rt_dtype_size(out->dtype);
    int64_t st[AG_MAX_RANK], off = 0;
    rt_strides(&in[0]->shape, st);
    strided w = {.rank = out->shape.rank};
    for (int i = 0; i < w.rank; i++) {
        w.dims[i] = out->shape.dims[i];
        w.strides[i] = st[i];
        off += a->begin.dims[i] * st[i];
    }
    strided_copy(out->data, (const char *)in[0]->data + off * (int64_t)es, w, out->numel,
                 es);
    return true;
}

/* ------------------------------------------------------------- gather */

RT_SHAPE_RULE(rt_sh_gather)
{
    (void)n;
    const ag_shape *s = &in[0]->shape, *is = &in[1]->shape;
    int axis;
    if (s->rank == 0) {
        rt_err_set(e, "cannot gather from a scalar; the tensor needs rank >= 1");
        return false;
    }
    if (!rt_norm_axis(a->axis, s->rank, &axis)) {
        rt_err_set(e, "axis %lld is out of range for a tensor of rank %d (valid: %d..%d)",
                   (long long)a->axis, s->rank, -s->rank, s->rank - 1);
        return false;
    }
    if (!result_rank_ok(s->rank - 1 + is->rank, e))
        return false;
    out->rank = 0;
    for (int d = 0; d < axis; d++)
        out->dims[out->rank++] = s->dims[d];
    for (int d = 0; d < is->rank; d++)
        out->dims[out->rank++] = is->dims[d];
    for (int d = axis + 1; d < s->rank; d++)
        out->dims[out->rank++] = s->dims[d];
    return true;
}

/* Every index must lie in [0, dim): TensorFlow's CPU kernel rejects the
 * others (negative ones included) instead of wrapping or clamping. */
static bool check_indices(const rt_value *idx, int axis, int64_t dim, rt_err *e)
{
    for (int64_t j = 0; j < idx->numel; j++) {
        int64_t v = index_at(idx, j);
        if (v >= 0 && v < dim)
            continue;
        if (dim == 0)
            rt_err_set(e, "index %lld (at position %lld of the indices) is out of range: "
                          "axis %d has size 0, so no index is valid", (long long)v,
                       (long long)j, axis);
        else
            rt_err_set(e, "index %lld (at position %lld of the indices) is out of range "
                          "for axis %d of size %lld; valid indices are 0..%lld",
                       (long long)v, (long long)j, axis, (long long)dim,
                       (long long)(dim - 1));
        return false;
    }
    return true;
}

/* Gathers single elements (inner size 1), the common 1-D lookup. */
#define DEFINE_GATHER1(T, suffix)                                                   \
    static void gather1_##suffix(T *restrict dst, const T *restrict src,            \
                                 const rt_value *idx, int64_t outer, int64_t dim)   \
    {                                                                               \
        for (int64_t o = 0; o < outer; o++, src += dim)                             \
            for (int64_t j = 0; j < idx->numel; j++)                                \
                *dst++ = src[index_at(idx, j)];                                     \
    }
DEFINE_GATHER1(uint8_t, 1)
DEFINE_GATHER1(uint16_t, 2)
DEFINE_GATHER1(uint32_t, 4)
DEFINE_GATHER1(uint64_t, 8)
#undef DEFINE_GATHER1

static void gather_elems(void *dst, const void *src, const rt_value *idx, int64_t outer,
                         int64_t dim, size_t es)
{
    switch (es) {
    case 1: gather1_1(dst, src, idx, outer, dim); break;
    case 2: gather1_2(dst, src, idx, outer, dim); break;
    case 4: gather1_4(dst, src, idx, outer, dim); break;
    default: gather1_8(dst, src, idx, outer, dim); break;
    }
}

/* Gathers rows of `inner` bytes. */
static void gather_rows(char *dst, const char *src, const rt_value *idx, int64_t outer,
                        int64_t dim, int64_t inner)
{
    for (int64_t o = 0; o < outer; o++, src += dim * inner) {
        for (int64_t j = 0; j < idx->numel; j++) {
            memcpy(dst, src + index_at(idx, j) * inner, (size_t)inner);
            dst += inner;
        }
    }
}

RT_KERNEL(rt_k_gather)
{
    (void)n;
    const rt_value *t = in[0], *idx = in[1];
    int axis;
    rt_norm_axis(a->axis, t->shape.rank, &axis);
    int64_t dim = t->shape.dims[axis];
    if (!check_indices(idx, axis, dim, e))
        return false;
    if (out->numel == 0)
        return true;
    size_t es = rt_dtype_size(t->dtype);
    int64_t outer = dims_product(&t->shape, 0, axis);
    int64_t inner = dims_product(&t->shape, axis + 1, t->shape.rank);
    if (inner == 1)
        gather_elems(out->data, t->data, idx, outer, dim, es);
    else
        gather_rows(out->data, t->data, idx, outer, dim, inner * (int64_t)es);
    return true;
}

/* ------------------------------------------------ expand_dims, squeeze */

RT_SHAPE_RULE(rt_sh_expand_dims)
{
    (void)n;
    const ag_shape *s = &in[0]->shape;
    int axis;
    if (!result_rank_ok(s->rank + 1, e))
        return false;
    if (!rt_norm_axis(a->axis, s->rank + 1, &axis)) {
        rt_err_set(e, "axis %lld is out of range for a tensor of rank %d (valid: %d..%d)",
                   (long long)a->axis, s->rank, -s->rank - 1, s->rank);
        return false;
    }
    out->rank = s->rank + 1;
    for (int d = 0, src = 0; d < out->rank; d++)
        out->dims[d] = d == axis ? 1 : s->dims[src++];
    return true;
}

/* Squeezing every size-1 dim needs to know which dims are 1: an unknown
 * dim could be either, and the result's rank would be unknown. */
static bool squeeze_all(const ag_shape *s, ag_shape *out, rt_err *e)
{
    char buf[SHAPE_BUF];
    out->rank = 0;
    for (int d = 0; d < s->rank; d++) {
        if (s->dims[d] < 0) {
            rt_err_set(e, "cannot squeeze every size-1 dim of shape %s: dim %d is "
                          "unknown, so the result's rank is unknown; pass the axis to "
                          "squeeze instead of AG_ALL_AXES",
                       rt_shape_str(s, buf, sizeof buf), d);
            return false;
        }
        if (s->dims[d] != 1)
            out->dims[out->rank++] = s->dims[d];
    }
    return true;
}

RT_SHAPE_RULE(rt_sh_squeeze)
{
    (void)n;
    char buf[SHAPE_BUF];
    const ag_shape *s = &in[0]->shape;
    int axis;
    if (a->axis == AG_ALL_AXES)
        return squeeze_all(s, out, e);
    if (!rt_norm_axis(a->axis, s->rank, &axis)) {
        if (s->rank == 0)
            rt_err_set(e, "cannot squeeze axis %lld of a scalar: it has no axes",
                       (long long)a->axis);
        else
            rt_err_set(e, "axis %lld is out of range for a tensor of rank %d "
                          "(valid: %d..%d)", (long long)a->axis, s->rank, -s->rank,
                       s->rank - 1);
        return false;
    }
    /* An unknown dim is accepted: run time checks it against the value. */
    if (s->dims[axis] >= 0 && s->dims[axis] != 1) {
        rt_err_set(e, "cannot squeeze axis %d of shape %s: its size is %lld, not 1", axis,
                   rt_shape_str(s, buf, sizeof buf), (long long)s->dims[axis]);
        return false;
    }
    out->rank = 0;
    for (int d = 0; d < s->rank; d++)
        if (d != axis)
            out->dims[out->rank++] = s->dims[d];
    return true;
}

/* --------------------------------------------------- shape_of and size */

RT_SHAPE_RULE(rt_sh_shape_of)
{
    (void)a, (void)n;
    if (!rank_in_range(in[0]->shape.rank, "the input", e))
        return false;
    out->rank = 1;
    out->dims[0] = in[0]->shape.rank;
    return true;
}

RT_KERNEL(rt_k_shape_of)
{
    (void)a, (void)n, (void)e;
    int64_t *dst = out->data;
    for (int d = 0; d < in[0]->shape.rank; d++)
        dst[d] = in[0]->shape.dims[d];
    return true;
}

RT_KERNEL(rt_k_size)
{
    (void)a, (void)n, (void)e;
    *(int64_t *)out->data = in[0]->numel;
    return true;
}

/* ------------------------------------------------------------ one_hot */

RT_SHAPE_RULE(rt_sh_one_hot)
{
    (void)n;
    const ag_shape *s = &in[0]->shape;
    if (a->n < 0) {
        rt_err_set(e, "depth %lld is negative", (long long)a->n);
        return false;
    }
    if (!result_rank_ok(s->rank + 1, e))
        return false;
    *out = *s;
    out->dims[out->rank++] = a->n;
    return true;
}

/* Indices outside [0, depth), negative ones included, give an all-zero
 * row, as tf.one_hot does. */
RT_KERNEL(rt_k_one_hot)
{
    (void)n, (void)e;
    const rt_value *idx = in[0];
    int64_t depth = a->n;
    float *dst = out->data;
    if (out->numel == 0)
        return true;
    memset(dst, 0, rt_value_bytes(out)); /* all-zero bits are 0.0f */
    for (int64_t j = 0; j < idx->numel; j++) {
        int64_t v = index_at(idx, j);
        if (v >= 0 && v < depth)
            dst[j * depth + v] = 1.0f;
    }
    return true;
}
