/* shape.c - shape utilities shared by every layer. */
#include "rt.h"

#include <stdio.h>

bool ag_shape_equal(ag_shape a, ag_shape b)
{
    if (a.rank != b.rank)
        return false;
    for (int i = 0; i < a.rank; i++)
        if (a.dims[i] != b.dims[i])
            return false;
    return true;
}

/* Element counts are computed here and nowhere else, so this is where a
 * count that does not fit int64_t is caught: a dim of 0 makes it 0, and
 * otherwise each product is checked before it is taken. */
int64_t rt_shape_numel(const ag_shape *s)
{
    if (!rt_shape_known(s))
        return -1;
    for (int i = 0; i < s->rank; i++)
        if (s->dims[i] == 0)
            return 0;
    int64_t n = 1;
    for (int i = 0; i < s->rank; i++) {
        if (n > INT64_MAX / s->dims[i])
            return -1;
        n *= s->dims[i];
    }
    return n;
}

/* The product of the known non-zero dims and the element size must stay
 * within RT_MAX_TENSOR_BYTES. Zero dims are skipped on purpose: a tensor
 * of shape [0, 2^40, 2^40] holds nothing, but its strides and the counts
 * kernels derive from its other dims would still overflow. Unknown dims
 * are skipped too: the check runs again when they become known. */
bool rt_shape_size_ok(const ag_shape *s, ag_dtype dt, rt_err *e)
{
    int64_t es = dt < AG_NUM_DTYPES ? (int64_t)rt_dtype_size(dt) : 1;
    int64_t bytes = es;
    double approx = (double)es; /* for the message: the true size overflows */
    bool over = false;
    for (int i = 0; i < s->rank; i++) {
        int64_t d = s->dims[i];
        if (d <= 0)
            continue;
        approx *= (double)d;
        if (over || bytes > RT_MAX_TENSOR_BYTES / d)
            over = true;
        else
            bytes *= d;
    }
    if (!over)
        return true;
    char buf[192];
    rt_err_set(e, "shape %s is too large: its non-zero dims give %.4g elements, %.4g "
                  "bytes of %s, more than the %lld bytes a tensor may hold",
               rt_shape_str(s, buf, sizeof buf), approx / (double)es, approx,
               dt < AG_NUM_DTYPES ? ag_dtype_name(dt) : "elements",
               (long long)RT_MAX_TENSOR_BYTES);
    return false;
}

bool rt_shape_known(const ag_shape *s)
{
    if (s->rank < 0)
        return false;
    for (int i = 0; i < s->rank; i++)
        if (s->dims[i] < 0)
            return false;
    return true;
}

char *rt_shape_str(const ag_shape *s, char *buf, size_t n)
{
    size_t len = 0;
    if (s->rank < 0) {
        snprintf(buf, n, "[*]"); /* unknown rank, as the IR text form writes it */
        return buf;
    }
    len += (size_t)snprintf(buf + len, n - len, "[");
    for (int i = 0; i < s->rank && len < n; i++) {
        const char *sep = i ? "," : "";
        if (s->dims[i] < 0)
            len += (size_t)snprintf(buf + len, n - len, "%s?", sep);
        else
            len += (size_t)snprintf(buf + len, n - len, "%s%lld", sep,
                                    (long long)s->dims[i]);
    }
    if (len < n)
        snprintf(buf + len, n - len, "]");
    return buf;
}

bool rt_norm_axis(int64_t axis, int rank, int *out)
{
    if (axis < -rank || axis >= rank)
        return false;
    *out = (int)(axis < 0 ? axis + rank : axis);
    return true;
}

void rt_strides(const ag_shape *s, int64_t *strides)
{
    int64_t st = 1;
    for (int i = s->rank - 1; i >= 0; i--) {
        strides[i] = st;
        st *= s->dims[i] > 0 ? s->dims[i] : 1;
    }
}
