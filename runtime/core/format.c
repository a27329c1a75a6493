/*
 * format.c - formatting concrete tensors like tf.print.
 *
 * Scalars print bare ("5"), tensors as nested brackets on one line
 * ("[[1 2] [3 4]]"), an empty tensor as "[]". A dim longer than
 * 2 * SUMMARIZE shows only its first and last SUMMARIZE entries with "..."
 * between them, as tf.print does with its default summarize=3, so printing
 * a large tensor stays short. Floats use printf's %g (6 significant
 * digits), bools print as 1 and 0 (tf.print's spelling).
 */
#include "rt.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { SUMMARIZE = 3 };

/* A growable string: the output size depends on the values, so fixed
 * buffers would either overflow or truncate. */
typedef struct strbuf {
    char *buf;
    size_t len, cap;
} strbuf;

static void sb_append(strbuf *sb, const char *s, size_t n)
{
    if (sb->len + n + 1 > sb->cap) {
        size_t cap = sb->cap ? sb->cap : 64;
        while (sb->len + n + 1 > cap)
            cap *= 2;
        sb->buf = rt_xrealloc(sb->buf, cap);
        sb->cap = cap;
    }
    memcpy(sb->buf + sb->len, s, n);
    sb->len += n;
    sb->buf[sb->len] = '\0';
}

static void sb_puts(strbuf *sb, const char *s) { sb_append(sb, s, strlen(s)); }

/* nan and inf are spelled out explicitly: printf may print a negative NaN
 * as "-nan", and the spelling of infinities is not fixed by C. */
static void format_float(strbuf *sb, double x)
{
    char tmp[32];
    if (isnan(x))
        sb_puts(sb, "nan");
    else if (isinf(x))
        sb_puts(sb, x > 0 ? "inf" : "-inf");
    else {
        int len = snprintf(tmp, sizeof tmp, "%g", x);
        sb_append(sb, tmp, (size_t)len);
    }
}

static void format_int(strbuf *sb, int64_t x)
{
    char tmp[32];
    int len = snprintf(tmp, sizeof tmp, "%" PRId64, x);
    sb_append(sb, tmp, (size_t)len);
}

static void format_element(strbuf *sb, ag_dtype dt, const void *data, int64_t i)
{
    switch (dt) {
    case AG_F32: format_float(sb, ((const float *)data)[i]); break;
    case AG_F64: format_float(sb, ((const double *)data)[i]); break;
    case AG_BF16: format_float(sb, ag_bf16_to_f32(((const uint16_t *)data)[i])); break;
    case AG_I32: format_int(sb, ((const int32_t *)data)[i]); break;
    case AG_I64: format_int(sb, ((const int64_t *)data)[i]); break;
    case AG_BOOL: sb_puts(sb, ((const uint8_t *)data)[i] ? "1" : "0"); break;
    case AG_I8: format_int(sb, ((const int8_t *)data)[i]); break;
    default: sb_puts(sb, "?"); break;
    }
}

/* Formats the sub-tensor starting at flat element `offset` whose first
 * axis is `dim`. */
static void format_dims(strbuf *sb, const rt_value *v, const int64_t *strides, int dim,
                        int64_t offset)
{
    if (dim == v->shape.rank) {
        format_element(sb, v->dtype, v->data, offset);
        return;
    }
    int64_t n = v->shape.dims[dim];
    bool summarize = n > 2 * SUMMARIZE;
    sb_puts(sb, "[");
    for (int64_t i = 0; i < n; i++) {
        if (i > 0)
            sb_puts(sb, " ");
        if (summarize && i == SUMMARIZE) {
            sb_puts(sb, "...");
            i = n - SUMMARIZE - 1; /* the loop's i++ lands on the last three */
            continue;
        }
        format_dims(sb, v, strides, dim + 1, offset + i * strides[dim]);
    }
    sb_puts(sb, "]");
}

char *rt_format_value(const rt_value *v)
{
    strbuf sb = {0};
    if (v->dtype == RT_LIST)
        sb_puts(&sb, "<tensor array>");
    else if (v->kind != RT_CONCRETE || (!v->data && v->numel > 0))
        sb_puts(&sb, "<symbolic tensor>");
    else if (v->numel == 0)
        sb_puts(&sb, "[]");
    else {
        int64_t strides[AG_MAX_RANK];
        rt_strides(&v->shape, strides);
        format_dims(&sb, v, strides, 0, 0);
    }
    return sb.buf;
}
