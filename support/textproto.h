/*
 * textproto.h - protocol-buffer text format, read against a schema
 * (prefix tp_).
 *
 * The TPU-model's device spec and the converter's options are written in
 * protobuf text format:
 *
 *     # comments run to the end of the line
 *     clock_hz: 1.5e9
 *     hbm { capacity_bytes: 17179869184  bandwidth: 819e9 }
 *     precision: HIGHEST
 *     tpu_functions { function_alias: "tpu_func" }
 *     allowed_batch_sizes: [8, 16, 32]
 *
 * A schema (tp_message) lists a message's fields: name, type, whether
 * repeated, and where the value goes in a C struct (an offset). tp_parse
 * reads text into such a struct, checking everything a schema says; every
 * error names the source, line and column ("spec.txt:3:9: unknown field
 * 'clok_hz' in DeviceSpec"). Messages nest; a repeated field (of
 * messages, numbers or strings) fills an array the struct holds, up to a
 * fixed capacity. Fields may form a oneof (at most one of them given), and
 * a field may record where its value was written, so that the caller's
 * own checks after parsing can point at the text too.
 */
#ifndef TP_TEXTPROTO_H
#define TP_TEXTPROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>

typedef enum tp_type {
    TP_INT,     /* int64_t */
    TP_DOUBLE,  /* double (an integer literal is accepted) */
    TP_BOOL,    /* bool: true, false, 1, 0 */
    TP_STRING,  /* char[capacity]: "quoted", with C escapes */
    TP_ENUM,    /* int: the index of the identifier in `enums` */
    TP_MESSAGE, /* a struct described by `message` */
    TP_BYTES,   /* char[capacity] and its length, an int at count_offset:
                   "quoted" with C escapes, NUL bytes (\000, \x00) too;
                   a NUL follows the bytes, so text reads as a C string */
} tp_type;

typedef struct tp_message tp_message;

/* A place in the text; line 0: not given. */
typedef struct tp_loc {
    int line, col;
} tp_loc;

typedef struct tp_field {
    const char *name;
    tp_type type;
    size_t offset;   /* of the value (or of the array, when repeated) */
    size_t capacity; /* TP_STRING, TP_BYTES: bytes, the closing NUL
                        included; repeated: most elements (a repeated
                        string's bytes are its elem_size) */
    bool repeated;
    size_t count_offset;      /* repeated: where the int count goes;
                                 TP_BYTES: where the int length goes */
    size_t elem_size;         /* repeated: bytes per element */
    const char *const *enums; /* TP_ENUM: the names, NULL-terminated */
    const tp_message *message; /* TP_MESSAGE */
    size_t seen_offset;       /* nonzero: a bool set when the field is given */
    double lo, hi;            /* TP_INT, TP_DOUBLE: the allowed range [lo, hi],
                                 of any width, one value (1, 1) included;
                                 both 0: none (tp_bounded); hi HUGE_VAL: no
                                 upper bound */
    /* nonzero: a tp_loc set to the value's first token (for a message, its
     * '{'); repeated: an array of `capacity` tp_loc, one per element */
    size_t loc_offset;
    /* non-NULL: the name of a oneof; of the fields sharing it, at most one
     * may be given */
    const char *oneof;
    /* What support/options_table.h makes of a row: the default (a number,
     * a bool as 0 or 1, an enum's index; def_text for a string), whether
     * the field must be given (TP_REQUIRED), and the one-line doc that
     * the reference tables show (def_doc, if set, for the default). */
    double def;
    const char *def_text;
    const char *def_doc;
    const char *doc;
    unsigned flags;
} tp_field;

enum {
    TP_REQUIRED = 1u << 0, /* no default: the text must give it (ot_check) */
    /* The bounds (lo, hi) are checked by ot_check after the whole text is
     * read, not by the reader: the caller's rules across fields can then
     * come first, and the errors name the field alone. */
    TP_BOUNDS_LATER = 1u << 1,
};

struct tp_message {
    const char *name; /* for messages: "DeviceSpec" */
    const tp_field *fields;
    int n_fields;
};

/*
 * Reads `text` (named `source` in messages) into *out as message m. Only
 * fields present in the text are written; the caller fills defaults
 * first. A singular field given twice, or two fields of one oneof, is an
 * error, as in protobuf's parser. False with "source:line:col: message"
 * in err.
 */
bool tp_parse(const char *text, const char *source, const tp_message *m, void *out, char *err,
              size_t errlen);

/* Whether f has a range to check (TP_INT, TP_DOUBLE; lo, hi not both 0). */
bool tp_bounded(const tp_field *f);

/* A message about the text at `at` into err: "source:line:col: ...", or
 * "source: ..." when at has no line (a value set in code, not read). For
 * the checks callers make after parsing. */
__attribute__((format(printf, 5, 0))) void tp_verror_at(const char *source, tp_loc at, char *err,
                                                        size_t errlen, const char *fmt, va_list ap);

/* Writes s as a quoted string that tp_parse reads back unchanged: \" \\
 * \n \t \r by name, other control bytes and bytes from 0x7f up as
 * three-digit octal, so that the text stays 7-bit. */
void tp_print_string(FILE *out, const char *s);
/* The same for n bytes that may hold NULs (a TP_BYTES value): a NUL is
 * \000, so that the text pastes into an options file unchanged. */
void tp_print_bytes(FILE *out, const void *data, size_t n);

/* A text file of at most 1 MiB (what `what` names: "the device spec"),
 * malloc'ed and NUL-terminated; NULL with "cannot read the device spec
 * 'PATH': ..." (or why it is not such text) in err. Read by
 * sf_read_regular: a FIFO or a device is refused without blocking. */
char *tp_read_file(const char *path, const char *what, char *err, size_t errlen);

#endif /* TP_TEXTPROTO_H */
