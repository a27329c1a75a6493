/*
 * batch_options.h - what the BatchOptions table (batch_options.def) is
 * made into (prefix bt_): struct members, schema rows, and the checks and
 * defaults of ag_batch_options.
 *
 * A struct holding BatchOptions (the converter's, the manifest's) takes
 * its members from the table:
 *
 *     typedef struct my_batch {
 *     #define BT_OPTION BT_MEMBER
 *     #include "batch_options.def"
 *     #undef BT_OPTION
 *         ...
 *     } my_batch;
 *
 * and its schema rows the same way (BT_FIELD_ROW with BT_ROW_TYPE and
 * BT_ROW_LOC defined first: the struct, and where a value's place goes).
 */
#ifndef BT_BATCH_OPTIONS_H
#define BT_BATCH_OPTIONS_H

#include "rt.h"
#include "textproto.h"

#include <stddef.h>

/* The most allowed_batch_sizes. */
#define BT_MAX_BATCH_SIZES 32

/* A row flag of ag_batch_options: 0 there means the default. */
#define BT_ZERO_DEFAULT (1u << 8)

/* Struct members: int64_t, an array and its count, bool. */
#define BT_MEMBER(name, kind, ...) BT_MEMBER_##kind(name)
#define BT_MEMBER_INT(name) int64_t name;
#define BT_MEMBER_INTS(name) int64_t name[BT_MAX_BATCH_SIZES]; int n_##name;
#define BT_MEMBER_BOOL(name) bool name;

/* The places a reader records, one per value (members of a struct `at`). */
#define BT_LOC_MEMBER(name, kind, ...) BT_LOC_##kind(name)
#define BT_LOC_INT(name) tp_loc name;
#define BT_LOC_INTS(name) tp_loc name[BT_MAX_BATCH_SIZES];
#define BT_LOC_BOOL(name) tp_loc name;

/* Schema rows of struct BT_ROW_TYPE; BT_ROW_LOC(f) is the offset of
 * where the value's place goes (0: none), BT_ROW_FLAGS the reader's
 * flags (TP_BOUNDS_LATER, or 0). */
#define BT_FIELD_ROW(f_, kind, api, def_, lo_, hi_, flags_, doc_)                       \
    {.name = #f_, .type = BT_TP_##kind, .offset = offsetof(BT_ROW_TYPE, f_),           \
     .def = def_, .lo = lo_, .hi = hi_, .flags = (flags_) | BT_ROW_FLAGS, .doc = doc_, \
     .loc_offset = BT_ROW_LOC(f_), BT_REPEATED_##kind(f_)},
#define BT_TP_INT TP_INT
#define BT_TP_INTS TP_INT
#define BT_TP_BOOL TP_BOOL
#define BT_REPEATED_INT(name) .repeated = false
#define BT_REPEATED_BOOL(name) .repeated = false
#define BT_REPEATED_INTS(name)                                                          \
    .repeated = true, .capacity = BT_MAX_BATCH_SIZES,                                   \
    .count_offset = offsetof(BT_ROW_TYPE, n_##name), .elem_size = sizeof(int64_t)

/* Copies every field between two structs made with BT_MEMBER, or into
 * ag_batch_options (BT_TO_API_ROW: the allowed sizes into an int array
 * bt_allowed of BT_MAX_BATCH_SIZES), in a function whose parameters are
 * bt_src and bt_dst, with BT_OPTION defined as one of these:
 *
 *     #define BT_OPTION BT_COPY_ROW
 *     #include "batch_options.def"
 *     #undef BT_OPTION
 */
#define BT_COPY_ROW(name, kind, ...) BT_COPY_##kind(name)
#define BT_COPY_INT(name) bt_dst->name = bt_src->name;
#define BT_COPY_BOOL(name) bt_dst->name = bt_src->name;
#define BT_COPY_INTS(name)                                                              \
    bt_dst->n_##name = bt_src->n_##name;                                                \
    for (int bt_k = 0; bt_k < bt_src->n_##name; bt_k++)                                 \
        bt_dst->name[bt_k] = bt_src->name[bt_k];
#define BT_TO_API_ROW(name, kind, api, ...) BT_TO_API_##kind(name, api)
#define BT_TO_API_INT(name, api) bt_dst->name = (api)bt_src->name;
#define BT_TO_API_BOOL(name, api) bt_dst->name = bt_src->name;
#define BT_TO_API_INTS(name, api)                                                       \
    for (int bt_k = 0; bt_k < bt_src->n_##name; bt_k++)                                 \
        bt_allowed[bt_k] = (api)bt_src->name[bt_k];                                     \
    bt_dst->name = bt_src->n_##name ? bt_allowed : NULL;                                \
    bt_dst->n_##name = bt_src->n_##name;

/*
 * Checks options as ag_batcher_new does: each field within the table's
 * bounds (a BT_ZERO_DEFAULT field may be 0), allowed_batch_sizes
 * positive, strictly increasing and ending with max_batch_size. False
 * with a message for people in err ("max_batch_size must be positive,
 * got 0"; agc-convert reads BatchOptions with the same bounds).
 */
bool bt_options_check(const ag_batch_options *o, char *err, size_t n);

/* The zero BT_ZERO_DEFAULT fields of o set to their defaults. */
void bt_options_fill_defaults(ag_batch_options *o);

#endif /* BT_BATCH_OPTIONS_H */
