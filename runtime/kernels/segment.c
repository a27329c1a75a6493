/*
 * segment.c - unsorted_segment_sum, gather's transpose (and its gradient).
 *
 * unsorted_segment_sum(data, indices) with attributes axis and n adds each
 * slice of data along the indices' dims into row indices[j] of axis `axis`
 * of a result with n rows there: data is laid out as gather's result,
 * [outer..., indices' shape..., inner...], and the result is
 * [outer..., n, inner...]. Repeated indices accumulate; rows no index
 * names are zero. With axis 0 and a rank-1 index it is TensorFlow's
 * tf.math.unsorted_segment_sum; gather(params, indices, axis)'s gradient
 * is unsorted_segment_sum(dy, indices, axis, params' size on the axis).
 * An index outside [0, n) is an error, as in gather.
 */
#include "../core/op_decls.h"

#include <stdlib.h>
#include <string.h>

/* The result's axis of a segment sum of data by an index of rank irank. */
static bool segment_axis(const rt_attrs *a, int data_rank, int irank, int *axis, rt_err *e)
{
    int rank = data_rank - irank + 1;
    if (rank < 1) {
        rt_err_set(e, "the data (rank %d) must have the indices' dims (rank %d) and the "
                      "others around them", data_rank, irank);
        return false;
    }
    if (!rt_norm_axis(a->axis, rank, axis)) {
        rt_err_set(e, "axis %lld is out of range for a result of rank %d (valid: %d..%d)",
                   (long long)a->axis, rank, -rank, rank - 1);
        return false;
    }
    return true;
}

RT_SHAPE_RULE(rt_sh_unsorted_segment_sum)
{
    (void)n;
    const ag_shape *d = &in[0]->shape, *is = &in[1]->shape;
    int axis;
    if (!segment_axis(a, d->rank, is->rank, &axis, e))
        return false;
    if (a->n < 0) {
        rt_err_set(e, "the number of segments must be at least 0, got %lld", (long long)a->n);
        return false;
    }
    for (int k = 0; k < is->rank; k++) {
        int64_t dd = d->dims[axis + k], id = is->dims[k];
        if (dd >= 0 && id >= 0 && dd != id) {
            char b1[128], b2[128];
            rt_err_set(e, "the data %s does not have the indices' shape %s at dims %d..%d",
                       rt_shape_str(d, b1, sizeof b1), rt_shape_str(is, b2, sizeof b2), axis,
                       axis + is->rank - 1);
            return false;
        }
    }
    out->rank = 0;
    for (int k = 0; k < axis; k++)
        out->dims[out->rank++] = d->dims[k];
    out->dims[out->rank++] = a->n;
    for (int k = axis + is->rank; k < d->rank; k++)
        out->dims[out->rank++] = d->dims[k];
    return true;
}

static int64_t index_at(const rt_value *idx, int64_t j)
{
    return idx->dtype == AG_I32 ? ((const int32_t *)idx->data)[j]
                                : ((const int64_t *)idx->data)[j];
}

static bool check_indices(const rt_value *idx, int64_t rows, rt_err *e)
{
    for (int64_t j = 0; j < idx->numel; j++) {
        int64_t v = index_at(idx, j);
        if (v >= 0 && v < rows)
            continue;
        rt_err_set(e, "index %lld (at position %lld of the indices) is out of range for "
                      "%lld segments; valid indices are 0..%lld",
                   (long long)v, (long long)j, (long long)rows, (long long)(rows - 1));
        return false;
    }
    return true;
}

/* The layout both sides share: outer slices, in each `count` data rows
 * (one per index) going to `rows` result rows, each `inner` elements. */
typedef struct segments {
    int64_t outer, count, rows, inner;
    const rt_value *idx;
} segments;

/* out (zeroed) [outer, rows, inner] += data [outer, count, inner] by row. */
#define DEFINE_SEGMENT_SUM(name, T, Acc)                                           \
    static void name(const segments *s, const T *data, Acc *out)                \
    {                                                                           \
        for (int64_t o = 0; o < s->outer; o++, out += s->rows * s->inner)       \
            for (int64_t j = 0; j < s->count; j++, data += s->inner) {          \
                Acc *row = out + index_at(s->idx, j) * s->inner;                \
                for (int64_t k = 0; k < s->inner; k++)                          \
                    row[k] += LOAD_##T(data[k]);                                \
            }                                                                   \
    }

#define LOAD_float(v) (v)
#define LOAD_double(v) (v)
#define LOAD_uint32_t(v) (v)
#define LOAD_uint64_t(v) (v)
#define LOAD_uint16_t(v) ag_bf16_to_f32(v)
DEFINE_SEGMENT_SUM(sum_f32, float, float)
DEFINE_SEGMENT_SUM(sum_f64, double, double)
DEFINE_SEGMENT_SUM(sum_u32, uint32_t, uint32_t)
DEFINE_SEGMENT_SUM(sum_u64, uint64_t, uint64_t)
DEFINE_SEGMENT_SUM(sum_bf16, uint16_t, float)
#undef DEFINE_SEGMENT_SUM

/* bf16 sums in f32, rounded once. */
static void segment_sum_bf16(const segments *s, const uint16_t *data, rt_value *out)
{
    float *acc = rt_xcalloc((size_t)out->numel, sizeof *acc);
    sum_bf16(s, data, acc);
    uint16_t *r = out->data;
    for (int64_t i = 0; i < out->numel; i++)
        r[i] = ag_f32_to_bf16(acc[i]);
    free(acc);
}

static int64_t dims_product(const ag_shape *s, int from, int to)
{
    int64_t p = 1;
    for (int i = from; i < to; i++)
        p *= s->dims[i];
    return p;
}

RT_KERNEL(rt_k_unsorted_segment_sum)
{
    (void)n;
    const rt_value *data = in[0], *idx = in[1];
    int axis;
    segment_axis(a, data->shape.rank, idx->shape.rank, &axis, e);
    segments s = {dims_product(&out->shape, 0, axis), idx->numel, a->n,
                  dims_product(&out->shape, axis + 1, out->shape.rank), idx};
    if (!check_indices(idx, a->n, e))
        return false;
    if (out->numel == 0)
        return true;
    if (out->dtype == AG_BF16) {
        segment_sum_bf16(&s, data->data, out);
        return true;
    }
    memset(out->data, 0, (size_t)out->numel * rt_dtype_size(out->dtype));
    switch (out->dtype) {
    case AG_F32: sum_f32(&s, data->data, out->data); return true;
    case AG_F64: sum_f64(&s, data->data, out->data); return true;
    case AG_I32: sum_u32(&s, data->data, out->data); return true;
    case AG_I64: sum_u64(&s, data->data, out->data); return true;
    default: rt_err_set(e, "has no kernel for %s", ag_dtype_name(out->dtype)); return false;
    }
}
