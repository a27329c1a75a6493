/*
 * batch_options.c - ag_batch_options against the BatchOptions table
 * (batch_options.def): the struct's members checked at compile time, its
 * bounds and defaults at ag_batcher_new, the padded size of a batch.
 */
#include "batch.h"

#include <assert.h>
#include <stdio.h>

/* ag.h's public struct is written by hand (it is the API, installed
 * alone); a mirror made from the table must have its size and each
 * member's offset, so that a field added to one and not the other, or
 * given another type, does not compile. */
#define BT_MIRROR(name, kind, api, ...) BT_MIRROR_##kind(name, api)
#define BT_MIRROR_INT(name, api) api name;
#define BT_MIRROR_BOOL(name, api) api name;
#define BT_MIRROR_INTS(name, api) const api *name; int n_##name;
typedef struct mirror {
#define BT_OPTION BT_MIRROR
#include "batch_options.def"
#undef BT_OPTION
} mirror;

static_assert(sizeof(mirror) == sizeof(ag_batch_options),
              "ag_batch_options (ag.h) and batch_options.def differ");
#define BT_SAME_OFFSET(name, ...)                                                   \
    static_assert(offsetof(mirror, name) == offsetof(ag_batch_options, name) &&   \
                      sizeof(((mirror *)0)->name) == sizeof(((ag_batch_options *)0)->name), \
                  "ag_batch_options." #name " is not where batch_options.def puts it");
#define BT_OPTION BT_SAME_OFFSET
#include "batch_options.def"
#undef BT_OPTION

/* ------------------------------------------------------------------ bounds */

/* v within [lo, hi], in words for a C caller: "must be positive", "must
 * not be negative", "must be at most 1024". */
static bool api_bound(const char *name, int64_t v, double lo_, double hi_, unsigned flags,
                      char *err, size_t n)
{
    int64_t lo = (int64_t)lo_, hi = hi_ >= 0x1p63 ? INT64_MAX : (int64_t)hi_;
    bool zero_ok = (flags & BT_ZERO_DEFAULT) != 0;
    if ((zero_ok && v == 0) || (v >= lo && v <= hi))
        return true;
    if (v > hi)
        return snprintf(err, n, "%s must be at most %lld, got %lld", name, (long long)hi,
                        (long long)v), false;
    if (lo == 0 || (lo == 1 && zero_ok))
        return snprintf(err, n, "%s must not be negative, got %lld", name, (long long)v), false;
    if (lo == 1)
        return snprintf(err, n, "%s must be positive, got %lld", name, (long long)v), false;
    return snprintf(err, n, "%s must be at least %lld, got %lld", name, (long long)lo,
                    (long long)v), false;
}

#define BT_CHECK_ROW(name, kind, api, def, lo, hi, flags, doc) BT_CHECK_##kind(name, lo, hi, flags)
#define BT_CHECK_INT(name, lo, hi, flags)                                              \
    if (!api_bound(#name, (int64_t)o->name, lo, hi, flags, err, n))                    \
        return false;
#define BT_CHECK_BOOL(name, lo, hi, flags)
#define BT_CHECK_INTS(name, lo, hi, flags) /* below, with the rule across fields */

/* Positive, strictly increasing sizes, the last max_batch_size. */
static bool check_allowed_sizes(const ag_batch_options *o, char *err, size_t n)
{
    if (o->n_allowed_batch_sizes < 0 || (o->n_allowed_batch_sizes > 0 && !o->allowed_batch_sizes))
        return snprintf(err, n, "n_allowed_batch_sizes is %d but allowed_batch_sizes is %s",
                        o->n_allowed_batch_sizes, o->allowed_batch_sizes ? "given" : "NULL"),
               false;
    for (int i = 0; i < o->n_allowed_batch_sizes; i++) {
        int s = o->allowed_batch_sizes[i];
        if (s <= 0)
            return snprintf(err, n, "allowed_batch_sizes[%d] is %d; sizes must be positive", i,
                            s), false;
        if (i > 0 && s <= o->allowed_batch_sizes[i - 1])
            return snprintf(err, n, "allowed_batch_sizes must be strictly increasing: "
                                    "[%d] = %d follows [%d] = %d", i, s, i - 1,
                            o->allowed_batch_sizes[i - 1]), false;
    }
    int k = o->n_allowed_batch_sizes;
    if (k > 0 && o->allowed_batch_sizes[k - 1] != o->max_batch_size)
        return snprintf(err, n, "the last of allowed_batch_sizes (%d) must equal "
                                "max_batch_size (%d)", o->allowed_batch_sizes[k - 1],
                        o->max_batch_size), false;
    return true;
}

bool bt_options_check(const ag_batch_options *o, char *err, size_t n)
{
#define BT_OPTION BT_CHECK_ROW
#include "batch_options.def"
#undef BT_OPTION
    return check_allowed_sizes(o, err, n);
}

/* --------------------------------------------------------------- defaults */

#define BT_DEFAULT_ROW(name, kind, api, def, lo, hi, flags, doc) BT_DEFAULT_##kind(name, def, flags)
#define BT_DEFAULT_INT(name, def, flags)                                               \
    if (((flags) & BT_ZERO_DEFAULT) && o->name == 0)                                   \
        o->name = def;
#define BT_DEFAULT_BOOL(name, def, flags)
#define BT_DEFAULT_INTS(name, def, flags)

void bt_options_fill_defaults(ag_batch_options *o)
{
#define BT_OPTION BT_DEFAULT_ROW
#include "batch_options.def"
#undef BT_OPTION
}

int64_t bt_padded_size(const ag_batch_options *o, int64_t rows)
{
    for (int i = 0; i < o->n_allowed_batch_sizes; i++)
        if (o->allowed_batch_sizes[i] >= rows)
            return o->allowed_batch_sizes[i];
    return rows;
}
