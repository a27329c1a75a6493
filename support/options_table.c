/*
 * options_table.c - defaults, bounds, canonical text and reference tables
 * of option messages, read off their tp_field rows (options_table.h).
 */
#include "options_table.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>

static void *slot_of(void *v, size_t offset) { return (char *)v + offset; }
static const void *cslot_of(const void *v, size_t offset) { return (const char *)v + offset; }

/* The length of a TP_BYTES value (never repeated), from its slot: the
 * length's place is the struct's, as the slot's is. */
static int bytes_len(const tp_field *f, const void *slot)
{
    return *(const int *)((const char *)slot - f->offset + f->count_offset);
}

/* --------------------------------------------------------------- defaults */

static void set_default(const tp_field *f, void *slot)
{
    switch (f->type) {
    case TP_INT: *(int64_t *)slot = (int64_t)f->def; break;
    case TP_DOUBLE: *(double *)slot = f->def; break;
    case TP_BOOL: *(bool *)slot = f->def != 0; break;
    case TP_ENUM: *(int *)slot = (int)f->def; break;
    case TP_STRING: snprintf(slot, f->capacity, "%s", f->def_text ? f->def_text : ""); break;
    case TP_MESSAGE: ot_defaults(f->message, slot); break;
    case TP_BYTES: /* always empty: a default of bytes would be a string's */
        memset(slot, 0, f->capacity);
        *(int *)((char *)slot - f->offset + f->count_offset) = 0;
        break;
    }
}

void ot_defaults(const tp_message *m, void *v)
{
    for (int i = 0; i < m->n_fields; i++) {
        const tp_field *f = &m->fields[i];
        if (!f->repeated) {
            set_default(f, slot_of(v, f->offset));
            continue;
        }
        *(int *)slot_of(v, f->count_offset) = 0;
        for (size_t k = 0; f->type == TP_MESSAGE && k < f->capacity; k++)
            ot_defaults(f->message, slot_of(v, f->offset + k * f->elem_size));
    }
}

/* ----------------------------------------------------------------- checks */

bool ot_fail(const ot_report *C, tp_loc at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tp_verror_at(C->source, at, C->err, C->errlen, fmt, ap);
    va_end(ap);
    return false;
}

/* A bound as an integer (HUGE_VAL and 9.2e18 are INT64_MAX). */
static int64_t int_bound(double b)
{
    return b >= 0x1p63 ? INT64_MAX : b <= -0x1p63 ? INT64_MIN : (int64_t)b;
}

/* Where element k of f (0 for a singular field) was written, else `at`. */
static tp_loc place(const tp_field *f, const void *v, size_t k, tp_loc at)
{
    if (!f->loc_offset)
        return at;
    tp_loc here = ((const tp_loc *)cslot_of(v, f->loc_offset))[k];
    return here.line ? here : at;
}

static bool int_in_range(const ot_report *C, const tp_field *f, const char *name, int64_t x,
                         tp_loc at)
{
    int64_t lo = int_bound(f->lo), hi = int_bound(f->hi);
    if (x >= lo && (isinf(f->hi) || x <= hi))
        return true;
    if (isinf(f->hi))
        return ot_fail(C, at, "%s must be at least %lld, got %lld", name, (long long)lo,
                    (long long)x);
    return ot_fail(C, at, "%s must be in [%lld, %lld], got %lld", name, (long long)lo,
                (long long)hi, (long long)x);
}

/* Number k of field f (of its array, when repeated) within its bounds. */
static bool in_range(const ot_report *C, const tp_field *f, const void *v, size_t k, tp_loc at)
{
    const void *slot = cslot_of(v, f->offset);
    char name[128];
    if (f->repeated)
        snprintf(name, sizeof name, "%s[%zu]", f->name, k);
    else
        snprintf(name, sizeof name, "%s", f->name);
    at = place(f, v, k, at);
    if (f->type == TP_INT)
        return int_in_range(C, f, name, ((const int64_t *)slot)[k], at);
    double x = ((const double *)slot)[k];
    if (x >= f->lo && x <= f->hi)
        return true;
    if (isinf(f->hi))
        return ot_fail(C, at, "%s must be at least %g, got %g", name, f->lo, x);
    return ot_fail(C, at, "%s must be in [%g, %g], got %g", name, f->lo, f->hi, x);
}

static bool bounded(const tp_field *f)
{
    return tp_bounded(f);
}

static bool differs(const tp_field *f, const void *slot);

static bool check_field(const ot_report *C, const tp_field *f, const tp_message *m,
                        const void *v, tp_loc at, unsigned what)
{
    if ((what & OT_CHECK_REQUIRED) && (f->flags & TP_REQUIRED) && !f->repeated &&
        !place(f, v, 0, (tp_loc){0}).line && !differs(f, cslot_of(v, f->offset)))
        return ot_fail(C, at, "%s needs %s (%s)", m->name, f->name, f->doc ? f->doc : "required");
    if (!bounded(f))
        return true;
    if (!f->repeated)
        return !(what & OT_CHECK_SINGULAR) || in_range(C, f, v, 0, at);
    int n = *(const int *)cslot_of(v, f->count_offset);
    for (int k = 0; (what & OT_CHECK_ELEMENTS) && k < n; k++)
        if (!in_range(C, f, v, (size_t)k, at))
            return false;
    return true;
}

bool ot_check(const tp_message *m, const void *v, tp_loc at, unsigned what, const char *source,
              char *err, size_t errlen)
{
    ot_report C = {source ? source : "<options>", err, errlen};
    for (int i = 0; i < m->n_fields; i++)
        if (!check_field(&C, &m->fields[i], m, v, at, what))
            return false;
    return true;
}

/* ---------------------------------------------------------------- printing */

/* Whether a singular scalar differs from its default. */
static bool differs(const tp_field *f, const void *slot)
{
    switch (f->type) {
    case TP_INT: return *(const int64_t *)slot != (int64_t)f->def;
    case TP_DOUBLE: return *(const double *)slot != f->def;
    case TP_BOOL: return *(const bool *)slot != (f->def != 0);
    case TP_ENUM: return *(const int *)slot != (int)f->def;
    case TP_STRING: return strcmp(slot, f->def_text ? f->def_text : "") != 0;
    case TP_BYTES: return bytes_len(f, slot) != 0;
    default: return false;
    }
}

static void print_value(const tp_field *f, const void *slot, FILE *out)
{
    switch (f->type) {
    case TP_INT: fprintf(out, "%lld", (long long)*(const int64_t *)slot); break;
    case TP_DOUBLE: fprintf(out, "%.17g", *(const double *)slot); break;
    case TP_BOOL: fputs(*(const bool *)slot ? "true" : "false", out); break;
    case TP_ENUM: fputs(f->enums[*(const int *)slot], out); break;
    case TP_STRING: tp_print_string(out, slot); break;
    case TP_BYTES: tp_print_bytes(out, slot, (size_t)bytes_len(f, slot)); break;
    default: break;
    }
}

static int count_of(const tp_field *f, const void *v)
{
    return *(const int *)cslot_of(v, f->count_offset);
}

static const void *element(const tp_field *f, const void *v, int k)
{
    return cslot_of(v, f->offset + (size_t)k * f->elem_size);
}

/* Whether ot_print writes anything of field f of v. */
static bool field_prints(const tp_field *f, const void *v);

static bool message_prints(const tp_message *m, const void *v)
{
    for (int i = 0; i < m->n_fields; i++)
        if (field_prints(&m->fields[i], v))
            return true;
    return false;
}

static bool field_prints(const tp_field *f, const void *v)
{
    const void *slot = cslot_of(v, f->offset);
    if (f->repeated)
        return count_of(f, v) > 0;
    /* a message whose presence means something (seen_offset) prints even
     * when every field in it is at its default, so that it reads back */
    if (f->type == TP_MESSAGE)
        return (f->seen_offset && *(const bool *)cslot_of(v, f->seen_offset)) ||
               message_prints(f->message, slot);
    return (f->flags & TP_REQUIRED) || differs(f, slot);
}

static void print_fields(const tp_message *m, const void *v, int depth, FILE *out);

static void print_one(const tp_field *f, const void *slot, int depth, FILE *out)
{
    fprintf(out, "%*s%s", 2 * depth, "", f->name);
    if (f->type == TP_MESSAGE) {
        fputs(" {\n", out);
        print_fields(f->message, slot, depth + 1, out);
        fprintf(out, "%*s}\n", 2 * depth, "");
        return;
    }
    fputs(": ", out);
    print_value(f, slot, out);
    fputc('\n', out);
}

static void print_fields(const tp_message *m, const void *v, int depth, FILE *out)
{
    for (int i = 0; i < m->n_fields; i++) {
        const tp_field *f = &m->fields[i];
        if (!field_prints(f, v))
            continue;
        if (!f->repeated) {
            print_one(f, cslot_of(v, f->offset), depth, out);
            continue;
        }
        for (int k = 0; k < count_of(f, v); k++)
            print_one(f, element(f, v, k), depth, out);
    }
}

void ot_print(const tp_message *m, const void *v, FILE *out)
{
    print_fields(m, v, 0, out);
}

/* One field of ot_print_inline, preceded by a space unless first. */
static void inline_field(const tp_field *f, const void *v, bool *first, FILE *out)
{
    const void *slot = cslot_of(v, f->offset);
    if (f->repeated ? count_of(f, v) == 0
                    : (f->type == TP_STRING && !*(const char *)slot) ||
                          (f->type == TP_BYTES && !bytes_len(f, slot)))
        return;
    fprintf(out, "%s%s", *first ? "" : " ", f->name);
    *first = false;
    if (f->type == TP_MESSAGE && !f->repeated) {
        fputs(" { ", out);
        ot_print_inline(f->message, slot, out);
        fputs(" }", out);
        return;
    }
    fputs(f->repeated ? ": [" : ": ", out);
    for (int k = 0; k < (f->repeated ? count_of(f, v) : 1); k++) {
        fputs(k ? ", " : "", out);
        print_value(f, f->repeated ? element(f, v, k) : slot, out);
    }
    fputs(f->repeated ? "]" : "", out);
}

void ot_print_inline(const tp_message *m, const void *v, FILE *out)
{
    bool first = true;
    for (int i = 0; i < m->n_fields; i++)
        inline_field(&m->fields[i], v, &first, out);
}

/* --------------------------------------------------------------- markdown */

static void markdown_bounds(const tp_field *f, FILE *out)
{
    if (!bounded(f))
        return;
    if (f->type == TP_INT && isinf(f->hi))
        fprintf(out, ", >= %lld", (long long)int_bound(f->lo));
    else if (f->type == TP_INT)
        fprintf(out, ", %lld to %lld", (long long)int_bound(f->lo), (long long)int_bound(f->hi));
    else if (isinf(f->hi))
        fprintf(out, ", >= %g", f->lo);
    else
        fprintf(out, ", %g to %g", f->lo, f->hi);
}

static void markdown_type(const tp_field *f, FILE *out)
{
    static const char *const names[] = {"integer", "number", "bool", "string"};
    if (f->repeated)
        fputs("repeated ", out);
    if (f->type == TP_ENUM) {
        for (int k = 0; f->enums[k]; k++)
            fprintf(out, "%s`%s`", k == 0 ? "" : f->enums[k + 1] ? ", " : " or ", f->enums[k]);
    } else if (f->type == TP_MESSAGE) {
        fprintf(out, "`%s`", f->message->name);
    } else if (f->type == TP_BYTES) {
        fprintf(out, "bytes (at most %zu)", f->capacity - 1);
    } else {
        fputs(names[f->type], out);
    }
    markdown_bounds(f, out);
    if (f->repeated && f->type == TP_STRING)
        fprintf(out, " (at most %zu, %zu bytes each)", f->capacity, f->elem_size - 1);
    else if (f->repeated)
        fprintf(out, " (at most %zu)", f->capacity);
}

static void markdown_default(const tp_field *f, FILE *out)
{
    if (f->def_doc)
        fputs(f->def_doc, out);
    else if (f->flags & TP_REQUIRED)
        fputs("required", out);
    else if (f->repeated || f->type == TP_BYTES ||
             (f->type == TP_STRING && !(f->def_text && *f->def_text)))
        fputs("none", out);
    else if (f->type == TP_MESSAGE)
        fputs("see below", out);
    else if (f->type == TP_STRING)
        fprintf(out, "`\"%s\"`", f->def_text);
    else if (f->type == TP_ENUM)
        fprintf(out, "`%s`", f->enums[(int)f->def]);
    else if (f->type == TP_BOOL)
        fputs(f->def != 0 ? "`true`" : "`false`", out);
    else if (f->type == TP_INT)
        fprintf(out, "%lld", (long long)f->def);
    else
        fprintf(out, "%g", f->def);
}

void ot_markdown(const tp_message *m, FILE *out)
{
    fputs("| field | type | default | meaning |\n|---|---|---|---|\n", out);
    for (int i = 0; i < m->n_fields; i++) {
        const tp_field *f = &m->fields[i];
        fprintf(out, "| `%s` | ", f->name);
        markdown_type(f, out);
        fputs(" | ", out);
        markdown_default(f, out);
        fprintf(out, " | %s |\n", f->doc ? f->doc : "");
    }
}
