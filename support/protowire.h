/*
 * protowire.h - the protocol buffers binary wire format, read and written
 * (protowire.c, prefix pw_), without a schema: the caller knows its
 * messages' field numbers.
 *
 * A message is a sequence of fields, each a tag (field number << 3 | wire
 * type, a varint) and a value: a varint (int32, int64, uint*, bool,
 * enum), 8 little-endian bytes (double, fixed64), a length-delimited
 * run (bytes, string, a nested message, a packed repeated field) or 4
 * little-endian bytes (float, fixed32). A repeated scalar may come packed
 * (one length-delimited run of values) or one field per value; readers
 * take both, as protobuf's parsers do. Unknown fields are skipped.
 */
#ifndef PW_PROTOWIRE_H
#define PW_PROTOWIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum pw_wire {
    PW_VARINT = 0,
    PW_I64 = 1,
    PW_LEN = 2,
    PW_I32 = 5, /* 3 and 4, the deprecated groups, are refused */
} pw_wire;

/* One field as read: its number, wire type and value (for PW_LEN, the
 * bytes in the message being read). */
typedef struct pw_field {
    uint32_t number;
    pw_wire wire;
    uint64_t value; /* PW_VARINT, PW_I64, PW_I32 (the bits) */
    const unsigned char *data;
    size_t len; /* PW_LEN */
} pw_field;

/* A message being read: its bytes in [p, end). */
typedef struct pw_reader {
    const unsigned char *p, *end;
} pw_reader;

pw_reader pw_reader_of(const void *data, size_t n);
/* The next field: 1 with it in *f, 0 at the end of the message, -1 when
 * the bytes are not a message (why in err: a varint or a value cut
 * short, a group, field number 0). */
int pw_next(pw_reader *r, pw_field *f, char *err, size_t errlen);

/* The values of a repeated scalar field, packed or not: f is one field of
 * the message; each value of wire type `wire` it holds (a packed run
 * holds several) is appended to *out as a uint64 (the varint, or the
 * fixed bits). False with why in err when f's wire type is neither
 * `wire` nor a packed run of it, or the run is malformed. */
typedef struct pw_values {
    uint64_t *v;
    size_t n, cap;
} pw_values;
bool pw_append_values(const pw_field *f, pw_wire wire, pw_values *out, char *err,
                      size_t errlen);

/* ---------------------------------------------------------------- writing */

/* A message being written, grown as needed. */
typedef struct pw_buf {
    unsigned char *data;
    size_t len, cap;
} pw_buf;

void pw_put_varint_field(pw_buf *b, uint32_t number, uint64_t v);
void pw_put_fixed32_field(pw_buf *b, uint32_t number, uint32_t bits);
void pw_put_fixed64_field(pw_buf *b, uint32_t number, uint64_t bits);
/* A length-delimited field: bytes, a string or a nested message's bytes. */
void pw_put_bytes_field(pw_buf *b, uint32_t number, const void *data, size_t n);
/* A packed repeated field of varints (int32, int64, bool, enum). */
void pw_put_packed_varints(pw_buf *b, uint32_t number, const uint64_t *v, size_t n);
/* The raw pieces, for what the helpers above do not cover. */
void pw_put_varint(pw_buf *b, uint64_t v);
void pw_put_tag(pw_buf *b, uint32_t number, pw_wire wire);
void pw_put_raw(pw_buf *b, const void *data, size_t n);
void pw_buf_free(pw_buf *b);

#endif
