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

int64_t rt_shape_numel(const ag_shape *s)
{
    int64_t n = 1;
    for (int i = 0; i < s->rank; i++) {
        if (s->dims[i] < 0)
            return -1;
        n *= s->dims[i];
    }
    return n;
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
