/*
 * protowire.c - the protobuf binary wire format (protowire.h).
 *
 * Reading never trusts a length: every varint stops at ten bytes and at
 * the end of the message, and every length is checked against what is
 * left of the message before it is used.
 */
#include "protowire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

pw_reader pw_reader_of(const void *data, size_t n)
{
    const unsigned char *p = data;
    return (pw_reader){.p = p, .end = p + n};
}

/* A varint at *p, before end: advances *p; false if cut short or longer
 * than ten bytes. */
static bool get_varint(const unsigned char **p, const unsigned char *end, uint64_t *v)
{
    *v = 0;
    for (int shift = 0; shift < 70 && *p < end; shift += 7) {
        unsigned char b = *(*p)++;
        *v |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80))
            return true;
    }
    return false;
}

/* n little-endian bytes at *p, before end (n = 4 or 8). */
static bool get_fixed(const unsigned char **p, const unsigned char *end, int n, uint64_t *v)
{
    if (end - *p < n)
        return false;
    *v = 0;
    for (int i = n - 1; i >= 0; i--)
        *v = *v << 8 | (*p)[i];
    *p += n;
    return true;
}

static int malformed(char *err, size_t errlen, const char *why)
{
    snprintf(err, errlen, "not a protocol buffer message: %s", why);
    return -1;
}

/* The value of f, whose tag was just read, from r. */
static int read_value(pw_reader *r, pw_field *f, char *err, size_t errlen)
{
    switch (f->wire) {
    case PW_VARINT:
        return get_varint(&r->p, r->end, &f->value)
                   ? 1 : malformed(err, errlen, "a varint is cut short or too long");
    case PW_I64:
    case PW_I32:
        return get_fixed(&r->p, r->end, f->wire == PW_I64 ? 8 : 4, &f->value)
                   ? 1 : malformed(err, errlen, "a fixed-size value is cut short");
    case PW_LEN: {
        uint64_t n;
        if (!get_varint(&r->p, r->end, &n) || n > (uint64_t)(r->end - r->p))
            return malformed(err, errlen, "a length runs past the end of the message");
        f->data = r->p;
        f->len = (size_t)n;
        r->p += n;
        return 1;
    }
    }
    return malformed(err, errlen, "a group or an unknown wire type");
}

int pw_next(pw_reader *r, pw_field *f, char *err, size_t errlen)
{
    if (r->p >= r->end)
        return 0;
    uint64_t tag;
    if (!get_varint(&r->p, r->end, &tag))
        return malformed(err, errlen, "a tag is cut short or too long");
    if (tag >> 3 == 0 || tag >> 3 > 0x1FFFFFFF)
        return malformed(err, errlen, "a field number out of range");
    *f = (pw_field){.number = (uint32_t)(tag >> 3), .wire = (pw_wire)(tag & 7)};
    return read_value(r, f, err, errlen);
}

static void push_value(pw_values *out, uint64_t v)
{
    if (out->n == out->cap) {
        out->cap = out->cap ? 2 * out->cap : 16;
        out->v = realloc(out->v, out->cap * sizeof *out->v);
    }
    out->v[out->n++] = v;
}

/* The values packed in data[0..n). */
static bool unpack(const unsigned char *p, const unsigned char *end, pw_wire wire,
                   pw_values *out)
{
    while (p < end) {
        uint64_t v;
        bool ok = wire == PW_VARINT ? get_varint(&p, end, &v)
                                    : get_fixed(&p, end, wire == PW_I64 ? 8 : 4, &v);
        if (!ok)
            return false;
        push_value(out, v);
    }
    return true;
}

bool pw_append_values(const pw_field *f, pw_wire wire, pw_values *out, char *err,
                      size_t errlen)
{
    if (f->wire == wire) {
        push_value(out, f->value);
        return true;
    }
    if (f->wire == PW_LEN && unpack(f->data, f->data + f->len, wire, out))
        return true;
    snprintf(err, errlen, "field %u: %s", (unsigned)f->number,
             f->wire == PW_LEN ? "a packed run of values is cut short"
                               : "its wire type is not the field's type");
    return false;
}

/* ---------------------------------------------------------------- writing */

void pw_put_raw(pw_buf *b, const void *data, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->len + n)
            cap *= 2;
        b->data = realloc(b->data, cap);
        b->cap = cap;
    }
    if (n)
        memcpy(b->data + b->len, data, n);
    b->len += n;
}

void pw_put_varint(pw_buf *b, uint64_t v)
{
    unsigned char tmp[10];
    int n = 0;
    do {
        tmp[n++] = (unsigned char)((v & 0x7F) | (v > 0x7F ? 0x80 : 0));
        v >>= 7;
    } while (v);
    pw_put_raw(b, tmp, (size_t)n);
}

void pw_put_tag(pw_buf *b, uint32_t number, pw_wire wire)
{
    pw_put_varint(b, (uint64_t)number << 3 | (uint64_t)wire);
}

void pw_put_varint_field(pw_buf *b, uint32_t number, uint64_t v)
{
    pw_put_tag(b, number, PW_VARINT);
    pw_put_varint(b, v);
}

static void put_fixed(pw_buf *b, uint64_t bits, int n)
{
    unsigned char tmp[8];
    for (int i = 0; i < n; i++)
        tmp[i] = (unsigned char)(bits >> 8 * i);
    pw_put_raw(b, tmp, (size_t)n);
}

void pw_put_fixed32_field(pw_buf *b, uint32_t number, uint32_t bits)
{
    pw_put_tag(b, number, PW_I32);
    put_fixed(b, bits, 4);
}

void pw_put_fixed64_field(pw_buf *b, uint32_t number, uint64_t bits)
{
    pw_put_tag(b, number, PW_I64);
    put_fixed(b, bits, 8);
}

void pw_put_bytes_field(pw_buf *b, uint32_t number, const void *data, size_t n)
{
    pw_put_tag(b, number, PW_LEN);
    pw_put_varint(b, n);
    pw_put_raw(b, data, n);
}

void pw_put_packed_varints(pw_buf *b, uint32_t number, const uint64_t *v, size_t n)
{
    pw_buf run = {0};
    for (size_t i = 0; i < n; i++)
        pw_put_varint(&run, v[i]);
    pw_put_bytes_field(b, number, run.data, run.len);
    pw_buf_free(&run);
}

void pw_buf_free(pw_buf *b)
{
    free(b->data);
    *b = (pw_buf){0};
}
