/*
 * textproto.c - protocol-buffer text format against a schema: a lexer
 * and a recursive-descent reader that writes straight into the caller's
 * struct, checking names, types, enum values, repetition and capacity.
 */
#include "textproto.h"

#include "files.h"
#include "suggest.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum tok_kind { T_EOF, T_IDENT, T_NUMBER, T_STRING, T_PUNCT } tok_kind;

typedef struct token {
    tok_kind kind;
    const char *start;
    size_t len;
    int line, col;
} token;

typedef struct reader {
    const char *p;   /* next character */
    const char *source;
    int line;
    const char *line_start;
    token tok;       /* the current token */
    char *err;
    size_t errlen;
    bool failed;
} reader;

__attribute__((format(printf, 3, 4))) static bool fail_at(reader *R, const token *t,
                                                          const char *fmt, ...)
{
    if (R->failed)
        return false;
    R->failed = true;
    int n = snprintf(R->err, R->errlen, "%s:%d:%d: ", R->source, t->line, t->col);
    va_list ap;
    va_start(ap, fmt);
    if (n >= 0 && (size_t)n < R->errlen)
        vsnprintf(R->err + n, R->errlen - (size_t)n, fmt, ap);
    va_end(ap);
    return false;
}

/* ------------------------------------------------------------------ lexer */

static void skip_space_and_comments(reader *R)
{
    for (;;) {
        if (*R->p == '\n') {
            R->line++;
            R->line_start = ++R->p;
        } else if (isspace((unsigned char)*R->p)) {
            R->p++;
        } else if (*R->p == '#') {
            while (*R->p && *R->p != '\n')
                R->p++;
        } else {
            return;
        }
    }
}

static bool is_ident_char(char c) { return isalnum((unsigned char)c) || c == '_' || c == '.'; }

/* A string literal, '...' or "...", with backslash escapes (checked when
 * the value is decoded). */
static void lex_string(reader *R, token *t)
{
    char quote = *R->p++;
    while (*R->p && *R->p != quote && *R->p != '\n')
        R->p += *R->p == '\\' && R->p[1] ? 2 : 1;
    if (*R->p == quote) {
        R->p++;
        t->kind = T_STRING;
    } else {
        t->kind = T_EOF;
        fail_at(R, t, "unterminated string");
    }
}

static void next(reader *R)
{
    skip_space_and_comments(R);
    token *t = &R->tok;
    t->start = R->p;
    t->line = R->line;
    t->col = (int)(R->p - R->line_start) + 1;
    char c = *R->p;
    if (!c) {
        t->kind = T_EOF;
    } else if (c == '"' || c == '\'') {
        lex_string(R, t);
    } else if (isdigit((unsigned char)c) || c == '-' || c == '+' ||
               (c == '.' && isdigit((unsigned char)R->p[1]))) {
        t->kind = T_NUMBER;
        R->p++;
        while (is_ident_char(*R->p) || ((*R->p == '-' || *R->p == '+') &&
                                        (R->p[-1] == 'e' || R->p[-1] == 'E')))
            R->p++;
    } else if (isalpha((unsigned char)c) || c == '_') {
        t->kind = T_IDENT;
        while (is_ident_char(*R->p))
            R->p++;
    } else {
        t->kind = T_PUNCT;
        R->p++;
    }
    t->len = (size_t)(R->p - t->start);
}

static bool is_punct(const reader *R, char c)
{
    return R->tok.kind == T_PUNCT && *R->tok.start == c;
}

static bool tok_is(const token *t, const char *word)
{
    return t->len == strlen(word) && strncmp(t->start, word, t->len) == 0;
}

/* The current token as text, for messages. */
static const char *tok_text(const token *t, char *buf, size_t n)
{
    if (t->kind == T_EOF)
        return "the end of the input";
    snprintf(buf, n, "'%.*s'", (int)(t->len < 40 ? t->len : 40), t->start);
    return buf;
}

static bool expect_punct(reader *R, char c, const char *why)
{
    char buf[64];
    if (!is_punct(R, c))
        return fail_at(R, &R->tok, "expected '%c' %s, found %s", c, why,
                       tok_text(&R->tok, buf, sizeof buf));
    next(R);
    return true;
}

/* ----------------------------------------------------------------- values */

static const char *type_name(tp_type t)
{
    static const char *const names[] = {"an integer", "a number", "true or false",
                                        "a string",   "a name",   "a message",
                                        "a string of bytes"};
    return names[t];
}

static bool wrong_type(reader *R, const tp_field *f, const tp_message *m)
{
    char buf[64];
    return fail_at(R, &R->tok, "field '%s' of %s expects %s, found %s", f->name, m->name,
                   type_name(f->type), tok_text(&R->tok, buf, sizeof buf));
}

static bool read_int(reader *R, const tp_field *f, const tp_message *m, int64_t *out)
{
    char buf[64];
    if (R->tok.kind != T_NUMBER || R->tok.len >= sizeof buf)
        return wrong_type(R, f, m);
    memcpy(buf, R->tok.start, R->tok.len);
    buf[R->tok.len] = '\0';
    char *end;
    errno = 0;
    long long v = strtoll(buf, &end, 0);
    if (*end || end == buf)
        return wrong_type(R, f, m);
    if (errno == ERANGE)
        return fail_at(R, &R->tok, "%s is out of range for field '%s' of %s", buf, f->name,
                       m->name);
    *out = v;
    return true;
}

static bool read_double(reader *R, const tp_field *f, const tp_message *m, double *out)
{
    char buf[64];
    bool word = R->tok.kind == T_IDENT && (tok_is(&R->tok, "inf") || tok_is(&R->tok, "nan"));
    if ((R->tok.kind != T_NUMBER && !word) || R->tok.len >= sizeof buf)
        return wrong_type(R, f, m);
    memcpy(buf, R->tok.start, R->tok.len);
    buf[R->tok.len] = '\0';
    size_t n = strlen(buf);
    if (n > 1 && (buf[n - 1] == 'f' || buf[n - 1] == 'F') && !word)
        buf[n - 1] = '\0'; /* 1.5f, as protobuf writes floats */
    char *end;
    double v = strtod(buf, &end);
    if (*end || end == buf)
        return wrong_type(R, f, m);
    *out = v;
    return true;
}

static bool read_bool(reader *R, const tp_field *f, const tp_message *m, bool *out)
{
    const token *t = &R->tok;
    if (tok_is(t, "true") || tok_is(t, "True") || tok_is(t, "t") || tok_is(t, "1"))
        *out = true;
    else if (tok_is(t, "false") || tok_is(t, "False") || tok_is(t, "f") || tok_is(t, "0"))
        *out = false;
    else
        return wrong_type(R, f, m);
    return true;
}

static int digit_value(char c, int base)
{
    int v = isdigit((unsigned char)c) ? c - '0'
            : isxdigit((unsigned char)c) ? tolower((unsigned char)c) - 'a' + 10
                                         : base;
    return v < base ? v : -1;
}

/* The byte an escape stands for, as protobuf's text format defines them
 * (the manifest's printer writes octal ones): \n \t \r \a \b \f \v \\ \'
 * \" \?, one to three octal digits, \x and one or two hex digits. s[*i]
 * is the character after the backslash, at most `end`; *i moves to the
 * escape's last character. -1 for an unknown escape. */
static int escaped_byte(const char *s, size_t end, size_t *i)
{
    static const char named[] = "n\nt\tr\ra\ab\bf\fv\v\\\\''\"\"??";
    char e = s[*i];
    for (const char *p = named; *p; p += 2)
        if (*p == e)
            return (unsigned char)p[1];
    int base = e == 'x' ? 16 : digit_value(e, 8) >= 0 ? 8 : 0;
    if (!base)
        return -1;
    size_t first = base == 16 ? *i + 1 : *i, max = base == 16 ? 2 : 3;
    int value = 0;
    size_t k = first;
    for (; k < end && k < first + max && digit_value(s[k], base) >= 0; k++)
        value = value * base + digit_value(s[k], base);
    if (k == first || value > 255)
        return -1;
    *i = k - 1;
    return value;
}

/* The bytes of string literal t appended to out[*len..]; a NUL byte only
 * when `bytes` (strings are C strings). A NUL always follows. */
static bool unescape(reader *R, const token *t, bool bytes, char *out, size_t cap, size_t *len)
{
    for (size_t i = 1; i + 1 < t->len; i++) {
        int c = (unsigned char)t->start[i];
        if (c == '\\') {
            size_t at = ++i;
            c = escaped_byte(t->start, t->len - 1, &i);
            if (c < 0 || (c == 0 && !bytes))
                return fail_at(R, t, "unknown escape '\\%c' in a string%s", t->start[at],
                               isdigit((unsigned char)t->start[at]) || t->start[at] == 'x'
                                   ? " (or a NUL byte)"
                                   : "");
        }
        if (*len + 1 >= cap)
            return fail_at(R, t, "%s longer than %zu bytes", bytes ? "bytes" : "string",
                           cap - 1);
        out[(*len)++] = (char)c;
    }
    out[*len] = '\0';
    return true;
}

/* One or more adjacent string literals, concatenated; a TP_BYTES
 * field's length goes to its count_offset in base. */
static bool read_string(reader *R, const tp_field *f, const tp_message *m, char *out,
                        void *base)
{
    if (R->tok.kind != T_STRING)
        return wrong_type(R, f, m);
    size_t len = 0;
    size_t capacity = f->repeated ? f->elem_size : f->capacity;
    bool bytes = f->type == TP_BYTES;
    for (;;) {
        if (!unescape(R, &R->tok, bytes, out, capacity, &len))
            return false;
        if (bytes)
            *(int *)((char *)base + f->count_offset) = (int)len;
        const char *save = R->p;
        int save_line = R->line;
        const char *save_ls = R->line_start;
        token save_tok = R->tok;
        next(R);
        if (R->tok.kind != T_STRING) { /* put the token back */
            R->p = save;
            R->line = save_line;
            R->line_start = save_ls;
            R->tok = save_tok;
            return true;
        }
    }
}

static int count_of(const char *const *names)
{
    int n = 0;
    while (names[n])
        n++;
    return n;
}

static bool read_enum(reader *R, const tp_field *f, const tp_message *m, int *out)
{
    char buf[64], list[512];
    if (R->tok.kind == T_IDENT)
        for (int i = 0; f->enums[i]; i++)
            if (tok_is(&R->tok, f->enums[i])) {
                *out = i;
                return true;
            }
    size_t used = 0;
    list[0] = '\0';
    for (int i = 0; f->enums[i] && used < sizeof list; i++)
        used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "",
                                 f->enums[i]);
    char typed[64], hint[160];
    snprintf(typed, sizeof typed, "%.*s", (int)R->tok.len, R->tok.start);
    const char *near =
        R->tok.kind == T_IDENT ? sg_suggest(typed, f->enums, count_of(f->enums)) : NULL;
    return fail_at(R, &R->tok, "bad value %s for field '%s' of %s (one of %s)%s",
                   tok_text(&R->tok, buf, sizeof buf), f->name, m->name, list,
                   sg_did_you_mean(near, hint, sizeof hint));
}

static bool read_message(reader *R, const tp_message *m, void *out, char closing);

bool tp_bounded(const tp_field *f)
{
    return (f->type == TP_INT || f->type == TP_DOUBLE) && (f->lo != 0 || f->hi != 0);
}

/* The value just read is in f's range, if it has one. */
static bool in_range(reader *R, const tp_field *f, const tp_message *m, double v)
{
    if ((f->flags & TP_BOUNDS_LATER) || !tp_bounded(f) || (v >= f->lo && v <= f->hi))
        return true;
    return fail_at(R, &R->tok, "field '%s' of %s must be in [%g, %g], got %g", f->name, m->name,
                   f->lo, f->hi, v);
}

/* One value of field f into dst (a scalar consumes its token); base is
 * the message's struct. */
static bool read_value(reader *R, const tp_field *f, const tp_message *m, void *dst, void *base)
{
    bool ok;
    switch (f->type) {
    case TP_INT: ok = read_int(R, f, m, dst) && in_range(R, f, m, (double)*(int64_t *)dst); break;
    case TP_DOUBLE: ok = read_double(R, f, m, dst) && in_range(R, f, m, *(double *)dst); break;
    case TP_BOOL: ok = read_bool(R, f, m, dst); break;
    case TP_STRING:
    case TP_BYTES: ok = read_string(R, f, m, dst, base); break;
    case TP_ENUM: ok = read_enum(R, f, m, dst); break;
    case TP_MESSAGE: {
        if (!is_punct(R, '{') && !is_punct(R, '<'))
            return wrong_type(R, f, m);
        char open = *R->tok.start;
        next(R);
        return read_message(R, f->message, dst, open == '<' ? '>' : '}');
    }
    default: ok = false;
    }
    if (ok)
        next(R);
    return ok;
}

/* Records where the value of f (element `index` if repeated) starts. */
static void note_loc(const reader *R, const tp_field *f, void *base, size_t index)
{
    if (!f->loc_offset)
        return;
    tp_loc *loc = (tp_loc *)((char *)base + f->loc_offset) + (f->repeated ? index : 0);
    *loc = (tp_loc){R->tok.line, R->tok.col};
}

/* Where the next element of repeated field f goes; NULL after an error. */
static void *next_element(reader *R, const tp_field *f, const tp_message *m, void *base)
{
    int *count = (int *)((char *)base + f->count_offset);
    if (*count < 0 || (size_t)*count >= f->capacity) {
        fail_at(R, &R->tok, "field '%s' of %s is repeated more than %zu times", f->name,
                m->name, f->capacity);
        return NULL;
    }
    note_loc(R, f, base, (size_t)*count);
    return (char *)base + f->offset + (size_t)(*count)++ * f->elem_size;
}

static bool read_field_values(reader *R, const tp_field *f, const tp_message *m, void *base)
{
    bool list = f->repeated && is_punct(R, '[');
    if (list)
        next(R);
    for (;;) {
        if (list && is_punct(R, ']'))
            break;
        void *dst;
        if (f->repeated) {
            dst = next_element(R, f, m, base);
        } else {
            note_loc(R, f, base, 0);
            dst = (char *)base + f->offset;
        }
        if (!dst || !read_value(R, f, m, dst, base))
            return false;
        if (!list)
            return true;
        if (is_punct(R, ','))
            next(R);
        else if (!is_punct(R, ']'))
            return expect_punct(R, ']', "to close the list");
    }
    next(R);
    return true;
}

static const tp_field *find_field(const tp_message *m, const token *t)
{
    for (int i = 0; i < m->n_fields; i++)
        if (tok_is(t, m->fields[i].name))
            return &m->fields[i];
    return NULL;
}

/* The field of f's oneof already given, if any. */
static const tp_field *oneof_rival(const tp_message *m, const tp_field *f, const bool *given)
{
    if (!f->oneof)
        return NULL;
    for (int i = 0; i < m->n_fields; i++) {
        const tp_field *g = &m->fields[i];
        if (g != f && given[i] && g->oneof && strcmp(g->oneof, f->oneof) == 0)
            return g;
    }
    return NULL;
}

/* An unknown field's error, with the field of m it most likely meant. */
static bool unknown_field(reader *R, const tp_message *m, const token *name)
{
    char typed[128], hint[160];
    snprintf(typed, sizeof typed, "%.*s", (int)name->len, name->start);
    sg_best b;
    sg_begin(&b, typed);
    for (int i = 0; i < m->n_fields; i++)
        sg_consider(&b, m->fields[i].name);
    return fail_at(R, name, "unknown field '%s' in %s%s", typed, m->name,
                   sg_did_you_mean(b.name, hint, sizeof hint));
}

static bool read_field(reader *R, const tp_message *m, void *base, bool *given)
{
    char buf[64];
    token name = R->tok;
    if (name.kind != T_IDENT)
        return fail_at(R, &name, "expected a field name, found %s",
                       tok_text(&name, buf, sizeof buf));
    const tp_field *f = find_field(m, &name);
    if (!f)
        return unknown_field(R, m, &name);
    int index = (int)(f - m->fields);
    if (given[index] && !f->repeated)
        return fail_at(R, &name, "field '%s' of %s is given twice", f->name, m->name);
    const tp_field *rival = oneof_rival(m, f, given);
    if (rival)
        return fail_at(R, &name,
                       "field '%s' of %s is given along with '%s': both are in oneof '%s', "
                       "give only one",
                       f->name, m->name, rival->name, f->oneof);
    given[index] = true;
    if (f->seen_offset)
        *(bool *)((char *)base + f->seen_offset) = true;
    next(R);
    if (f->type == TP_MESSAGE && (is_punct(R, '{') || is_punct(R, '<'))) {
        /* the ':' is optional before a message */
    } else if (!expect_punct(R, ':', "after the field name")) {
        return false;
    }
    if (!read_field_values(R, f, m, base))
        return false;
    if (is_punct(R, ',') || is_punct(R, ';'))
        next(R);
    return true;
}

/* Fields up to `closing` ('}', '>', or '\0' for the end of the input). */
static bool read_message(reader *R, const tp_message *m, void *out, char closing)
{
    bool *given = calloc((size_t)m->n_fields + 1, sizeof *given);
    bool ok = true;
    while (ok && !R->failed) {
        if (closing == '\0' ? R->tok.kind == T_EOF : is_punct(R, closing))
            break;
        if (R->tok.kind == T_EOF) {
            ok = fail_at(R, &R->tok, "expected '%c' to close %s", closing, m->name);
            break;
        }
        ok = read_field(R, m, out, given);
    }
    free(given);
    if (ok && !R->failed && closing)
        next(R);
    return ok && !R->failed;
}

void tp_verror_at(const char *source, tp_loc at, char *err, size_t errlen, const char *fmt,
                  va_list ap)
{
    int n = at.line ? snprintf(err, errlen, "%s:%d:%d: ", source, at.line, at.col)
                    : snprintf(err, errlen, "%s: ", source);
    if (n >= 0 && (size_t)n < errlen)
        vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
}

bool tp_parse(const char *text, const char *source, const tp_message *m, void *out, char *err,
              size_t errlen)
{
    reader R = {.p = text, .source = source ? source : "<text>", .line = 1,
                .line_start = text, .err = err, .errlen = errlen};
    if (errlen)
        err[0] = '\0';
    next(&R);
    return read_message(&R, m, out, '\0');
}

/* ----------------------------------------------------------------- files */

/* Options and specs are a few lines: over 1 MiB, or holding a NUL byte,
 * a file is not one. */
char *tp_read_file(const char *path, const char *what, char *err, size_t errlen)
{
    size_t len;
    char *text = sf_read_regular(path, what, 1 << 20, &len, err, errlen);
    if (text && memchr(text, '\0', len)) {
        snprintf(err, errlen, "%s '%s' is not text (it holds a NUL byte)", what, path);
        free(text);
        return NULL;
    }
    return text;
}

/* --------------------------------------------------------------- printing */

void tp_print_string(FILE *out, const char *s) { tp_print_bytes(out, s, strlen(s)); }

void tp_print_bytes(FILE *out, const void *data, size_t n)
{
    fputc('"', out);
    const unsigned char *s = data;
    for (const unsigned char *p = s; p < s + n; p++) {
        switch (*p) {
        case '"': fputs("\\\"", out); break;
        case '\\': fputs("\\\\", out); break;
        case '\n': fputs("\\n", out); break;
        case '\t': fputs("\\t", out); break;
        case '\r': fputs("\\r", out); break;
        default:
            if (*p < 0x20 || *p >= 0x7f)
                fprintf(out, "\\%03o", *p);
            else
                fputc(*p, out);
        }
    }
    fputc('"', out);
}
