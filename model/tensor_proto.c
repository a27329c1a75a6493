/*
 * tensor_proto.c - tensorflow.TensorProto to and from agc tensors
 * (dataset.h).
 *
 * A TensorProto holds its values either as tensor_content (the raw
 * little-endian bytes, what TensorFlow writes for arrays) or in the
 * repeated field of its dtype (float_val, int_val, ...; packed or not).
 * TensorFlow's rule for the second: no values is zeros, fewer values than
 * the shape holds are filled out with the last one (a single value fills
 * the tensor), more is an error. Fields of other dtypes are ignored, as
 * TensorFlow does; unknown fields are skipped.
 */
#include "dataset.h"

#include "rt.h"
#include "signature.h"

#include <stdlib.h>
#include <string.h>

/* The DataTypes agc reads: TensorFlow's enum value and name, the agc
 * dtype (-1: none yet), the element's bytes, the *_val field and its wire
 * type. int_val holds int8 and uint8 too; half_val holds bfloat16's bits. */
static const struct tf_dtype {
    int tf;
    const char *name;
    int dtype;
    int bytes;
    uint32_t val_field;
    pw_wire val_wire;
} tf_dtypes[] = {
    {1, "DT_FLOAT", AG_F32, 4, 5, PW_I32},     {2, "DT_DOUBLE", AG_F64, 8, 6, PW_I64},
    {3, "DT_INT32", AG_I32, 4, 7, PW_VARINT},  {4, "DT_UINT8", -1, 1, 7, PW_VARINT},
    {6, "DT_INT8", AG_I8, 1, 7, PW_VARINT},      {9, "DT_INT64", AG_I64, 8, 10, PW_VARINT},
    {10, "DT_BOOL", AG_BOOL, 1, 11, PW_VARINT}, {14, "DT_BFLOAT16", AG_BF16, 2, 13, PW_VARINT},
};

static const struct tf_dtype *tf_dtype_of(int tf)
{
    for (size_t i = 0; i < sizeof tf_dtypes / sizeof tf_dtypes[0]; i++)
        if (tf_dtypes[i].tf == tf)
            return &tf_dtypes[i];
    return NULL;
}

const char *sm_tf_dtype_name(int tf)
{
    const struct tf_dtype *d = tf_dtype_of(tf);
    return d ? d->name : NULL;
}

/* What the first pass over a TensorProto finds. */
typedef struct proto {
    int tf_dtype;
    ag_shape shape;
    bool unknown_rank;
    const unsigned char *content;
    size_t content_len;
    bool has_content;
    pw_values vals; /* the second pass: the dtype's *_val values */
} proto;

static bool fail(char *err, size_t errlen, const char *why)
{
    snprintf(err, errlen, "%s", why);
    return false;
}

/* A TensorShapeProto.Dim's size into s. */
static bool read_dim(const pw_field *f, ag_shape *s, char *err, size_t errlen)
{
    if (f->wire != PW_LEN)
        return fail(err, errlen, "tensor_shape.dim is not a message");
    if (s->rank == AG_MAX_RANK)
        return fail(err, errlen, "its shape has more than 8 dimensions");
    pw_reader r = pw_reader_of(f->data, f->len);
    pw_field d;
    int got;
    int64_t size = 0;
    while ((got = pw_next(&r, &d, err, errlen)) > 0)
        if (d.number == SM_DIM_SIZE && d.wire == PW_VARINT)
            size = (int64_t)d.value;
    s->dims[s->rank++] = size;
    return got == 0;
}

static bool read_shape(const pw_field *f, proto *p, char *err, size_t errlen)
{
    if (f->wire != PW_LEN)
        return fail(err, errlen, "tensor_shape is not a message");
    pw_reader r = pw_reader_of(f->data, f->len);
    pw_field d;
    int got;
    p->shape.rank = 0;
    while ((got = pw_next(&r, &d, err, errlen)) > 0) {
        if (d.number == SM_SHAPE_DIM && !read_dim(&d, &p->shape, err, errlen))
            return false;
        if (d.number == SM_SHAPE_UNKNOWN_RANK && d.wire == PW_VARINT)
            p->unknown_rank = d.value != 0;
    }
    return got == 0;
}

/* One field of the first pass: dtype, shape, tensor_content. */
static bool first_field(const pw_field *f, proto *p, char *err, size_t errlen)
{
    if (f->number == SM_TP_DTYPE && f->wire == PW_VARINT)
        p->tf_dtype = (int)f->value;
    else if (f->number == SM_TP_SHAPE)
        return read_shape(f, p, err, errlen);
    else if (f->number == SM_TP_CONTENT && f->wire == PW_LEN)
        p->content = f->data, p->content_len = f->len, p->has_content = true;
    return true;
}

/* Both passes over the message: the second gathers the *_val values of
 * the dtype the first found (the fields may come in any order). */
static bool read_proto(const void *data, size_t n, proto *p, char *err, size_t errlen)
{
    pw_reader r = pw_reader_of(data, n);
    pw_field f;
    int got;
    while ((got = pw_next(&r, &f, err, errlen)) > 0)
        if (!first_field(&f, p, err, errlen))
            return false;
    const struct tf_dtype *d = tf_dtype_of(p->tf_dtype);
    if (got < 0)
        return false;
    if (!d) {
        snprintf(err, errlen, p->tf_dtype ? "its dtype, DataType %d, is not one agc reads"
                                          : "it has no dtype", p->tf_dtype);
        return false;
    }
    r = pw_reader_of(data, n);
    while (pw_next(&r, &f, err, errlen) > 0)
        if (f.number == d->val_field && !pw_append_values(&f, d->val_wire, &p->vals, err, errlen))
            return false;
    return true;
}

/* ---------------------------------------------------------------- values */

/* The shape's element count, checked: false when a dimension is unknown
 * or the tensor is too large. */
static bool count_elements(const proto *p, int bytes, int64_t *numel, char *err, size_t errlen)
{
    if (p->unknown_rank)
        return fail(err, errlen, "its shape has an unknown rank");
    *numel = 1;
    for (int i = 0; i < p->shape.rank; i++) {
        int64_t d = p->shape.dims[i];
        if (d < 0)
            return fail(err, errlen, "its shape has an unknown dimension");
        if (d && *numel > SM_TENSOR_PROTO_MAX_BYTES / bytes / d)
            return fail(err, errlen, "it is larger than 2 GiB");
        *numel *= d;
    }
    return true;
}

/* Value v of a *_val field as an element of d, at out. */
static void put_value(const struct tf_dtype *d, uint64_t v, unsigned char *out)
{
    uint32_t u32 = (uint32_t)v;
    uint16_t u16 = (uint16_t)v;
    unsigned char b = d->dtype == AG_BOOL ? v != 0 : (unsigned char)v;
    if (d->bytes == 8)
        memcpy(out, &v, 8);
    else if (d->bytes == 4)
        memcpy(out, &u32, 4);
    else if (d->bytes == 2)
        memcpy(out, &u16, 2);
    else
        *out = b;
}

/* The elements, from tensor_content or the *_val values, malloc'ed. */
static unsigned char *elements(const proto *p, const struct tf_dtype *d, int64_t numel,
                               char *err, size_t errlen)
{
    size_t bytes = (size_t)numel * (size_t)d->bytes;
    if (p->has_content && p->content_len != bytes) {
        snprintf(err, errlen, "its tensor_content holds %zu bytes where its shape needs %zu",
                 p->content_len, bytes);
        return NULL;
    }
    if (!p->has_content && p->vals.n > (size_t)numel) {
        snprintf(err, errlen, "it has %zu values where its shape holds %lld", p->vals.n,
                 (long long)numel);
        return NULL;
    }
    unsigned char *out = calloc(bytes ? bytes : 1, 1);
    if (p->has_content)
        memcpy(out, p->content, bytes);
    for (int64_t i = 0; !p->has_content && p->vals.n && i < numel; i++)
        put_value(d, p->vals.v[(size_t)i < p->vals.n ? (size_t)i : p->vals.n - 1],
                  out + i * d->bytes);
    for (int64_t i = 0; d->dtype == AG_BOOL && i < numel; i++)
        out[i] = out[i] != 0; /* agc's bools are 0 or 1 */
    return out;
}

static ag_tensor from_proto(const proto *p, char *err, size_t errlen)
{
    ag_tensor none = {0, 0};
    const struct tf_dtype *d = tf_dtype_of(p->tf_dtype);
    int64_t numel;
    if (d->dtype < 0) {
        snprintf(err, errlen, "its dtype %s has no agc dtype yet", d->name);
        return none;
    }
    if (!count_elements(p, d->bytes, &numel, err, errlen))
        return none;
    unsigned char *data = elements(p, d, numel, err, errlen);
    if (!data)
        return none;
    ag_tensor t = ag_from_data_at((ag_loc){0}, (ag_dtype)d->dtype, p->shape, data);
    free(data);
    return t;
}

ag_tensor sm_tensor_proto_decode(const void *data, size_t n, char *err, size_t errlen)
{
    proto p = {0};
    ag_tensor t = {0, 0};
    if (read_proto(data, n, &p, err, errlen))
        t = from_proto(&p, err, errlen);
    free(p.vals.v);
    return t;
}

/* -------------------------------------------------------------- encoding */

static int tf_enum_of(ag_dtype dt)
{
    for (size_t i = 0; i < sizeof tf_dtypes / sizeof tf_dtypes[0]; i++)
        if (tf_dtypes[i].dtype == (int)dt)
            return tf_dtypes[i].tf;
    return 0;
}

void sm_tensor_proto_encode(pw_buf *b, ag_tensor t)
{
    ag_shape s = ag_shape_get(t);
    pw_buf shape = {0}, dim = {0};
    for (int i = 0; i < s.rank; i++) {
        dim.len = 0;
        pw_put_varint_field(&dim, SM_DIM_SIZE, (uint64_t)s.dims[i]);
        pw_put_bytes_field(&shape, SM_SHAPE_DIM, dim.data, dim.len);
    }
    ag_dtype dt = ag_dtype_of(t);
    pw_put_varint_field(b, SM_TP_DTYPE, (uint64_t)tf_enum_of(dt));
    pw_put_bytes_field(b, SM_TP_SHAPE, shape.data, shape.len);
    /* agc's values are little-endian in memory, as tensor_content is. */
    size_t bytes = (size_t)ag_num_elements(t) * rt_dtype_size(dt);
    pw_put_bytes_field(b, SM_TP_CONTENT, ag_data_at((ag_loc){0}, t), bytes);
    pw_buf_free(&shape);
    pw_buf_free(&dim);
}
