/*
 * options_table.h - what an option message's table gives besides its
 * reading (prefix ot_): its defaults, its bounds, its canonical text and
 * its reference table.
 *
 * An option message is one table of tp_field rows (textproto.h), written
 * once in a .def file per message as X-macro rows (name, type, default,
 * bounds, doc); the struct, the schema, and through this module the
 * defaults, the range checks, the printer and the reference tables of
 * docs/ are all made from it:
 *
 *     ot_defaults(&m, &v);            every field at its default
 *     tp_parse(text, src, &m, &v...)  the fields the text gives
 *     ot_check(&m, &v, at, ...)       required fields, then bounds
 *     ot_print(&m, &v, out)           the fields that differ, one a line
 *     ot_markdown(&m, out)            | field | type | default | meaning |
 */
#ifndef OT_OPTIONS_TABLE_H
#define OT_OPTIONS_TABLE_H

#include "textproto.h"

/* Sets every field of v (message m) to its default: numbers, bools and
 * enums to def, strings to def_text, repeated fields to no element, and
 * nested messages field by field (every element a repeated message may
 * fill, since the reader writes only the fields the text gives). */
void ot_defaults(const tp_message *m, void *v);

/* Where checks after parsing report: the text's name and the caller's
 * buffer. The checks across fields of a message's owner use it too. */
typedef struct ot_report {
    const char *source;
    char *err;
    size_t errlen;
} ot_report;

/* "source:line:col: message" into r->err, or "source: message" when at
 * has no place (a value set in code rather than read). Always false. */
__attribute__((format(printf, 3, 4))) bool ot_fail(const ot_report *r, tp_loc at,
                                                   const char *fmt, ...);

/* Which checks ot_check makes, so that a caller's rules across fields
 * can run between them. */
enum {
    OT_CHECK_REQUIRED = 1u << 0, /* TP_REQUIRED fields were given */
    OT_CHECK_SINGULAR = 1u << 1, /* the bounds of singular numbers */
    OT_CHECK_ELEMENTS = 1u << 2, /* the bounds of each element of repeated numbers */
    OT_CHECK_ALL = 7u,
};

/*
 * The checks `what` on v, message m (its own fields; nested messages are
 * the caller's to check in their turn), `at` being where its text began.
 * Errors name the place of the value when the row records it
 * (loc_offset), else the message's: "source:line:col: max_batch_size must
 * be in [1, 2147483647], got 0"; "BatchOptions needs max_batch_size (the
 * most rows in a batch)". A required field counts as given when its place
 * was recorded, or its value differs from the default. False with the
 * first error in err.
 */
bool ot_check(const tp_message *m, const void *v, tp_loc at, unsigned what, const char *source,
              char *err, size_t errlen);

/*
 * The canonical text of v: the fields that differ from their defaults (and
 * the required ones), in the table's order, one a line, repeated numbers
 * and strings one element a line as protobuf's printer writes them, nested
 * messages as "name {" ... "}" indented by two spaces (a singular one only
 * when something in it prints). tp_parse reads it back to the same values.
 */
void ot_print(const tp_message *m, const void *v, FILE *out);
/* Every field on one line, "a: 1 b: [2, 3] c: \"x\"" (strings and lists
 * only when not empty), for records that are tables rather than prose
 * (the saved model's manifest). */
void ot_print_inline(const tp_message *m, const void *v, FILE *out);

/* m's reference table in markdown: | field | type | default | meaning |,
 * one row per field (docs/converter-options.md is checked against it). */
void ot_markdown(const tp_message *m, FILE *out);

#endif /* OT_OPTIONS_TABLE_H */
