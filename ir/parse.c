/*
 * parse.c - reads the text form of print.c back into a function.
 *
 * A hand-written lexer and a recursive-descent parser, one function per
 * grammar rule (docs/ir.md has the grammar; each rule is quoted above the
 * function that parses it). The function is rebuilt with the builders of
 * ir.h, keeping the textual value ids.
 *
 * The parser must survive any input (it is fuzzed), so every error goes
 * through fail(), which formats "name:line:col: error: message" and
 * longjmps back to ir_parse. That is safe because everything the parser
 * allocates lives in the function's arena (its state included) or is owned
 * by the function (fn->vars), and ir_parse frees the function on failure.
 *
 * Limits that keep later stages (shape rules, printing) free of overflow:
 * dims at most INT32_MAX with a product of at most 2^62, integer list
 * attributes within +-INT32_MAX, n within int32, and regions nested at most
 * MAX_DEPTH deep.
 */
#include "ir.h"
#include "suggest.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_DEPTH = 64, MAX_NUMBER_LEN = 63 };
#define MAX_ELEMENTS ((int64_t)1 << 62)

/* ================================================================ lexer */

typedef enum tk_kind {
    TK_EOF,
    TK_VALUE,  /* %12 */
    TK_SYM,    /* @name or @"name" */
    TK_LABEL,  /* ^then */
    TK_IDENT,  /* op names, dtypes, keywords */
    TK_NUMBER, /* -12, 1.5, 1e-05, -inf */
    TK_STRING, /* "text" */
    TK_ARROW,  /* -> */
    TK_PUNCT   /* one of ( ) { } [ ] < > , : = ? * */
} tk_kind;

typedef struct token {
    tk_kind kind;
    const char *s; /* the raw text */
    int len;
    int line, col;
    int id;          /* TK_VALUE */
    bool is_int;     /* TK_NUMBER without '.', exponent or inf */
    const char *str; /* TK_STRING, TK_SYM, TK_LABEL: the decoded text */
} token;

/* The elements of a constant, kept as tokens until the node's type is known. */
typedef struct lit_vec {
    token *items;
    int n, cap;
} lit_vec;

/* Value ids to nodes; node NULL while a definition is being parsed. */
typedef struct id_entry {
    int id; /* -1: empty slot */
    int line;
    ir_node *node;
} id_entry;

typedef struct id_map {
    id_entry *slots;
    int cap, count;
} id_map;

typedef struct parser {
    const char *name; /* for messages */
    const char *pos, *line_start;
    int line;
    token tok; /* the current token */
    ir_function *fn;
    ir_arena *arena;
    id_map ids;
    int max_id;
    int depth;
    bool text_locs; /* each node located at its line of the text */
    char *err;
    size_t errlen;
    jmp_buf jmp;
} parser;

static _Noreturn void fail_at(parser *p, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static _Noreturn void fail_at(parser *p, int line, int col, const char *fmt, ...)
{
    if (p->err && p->errlen) {
        int k = snprintf(p->err, p->errlen, "%s:%d:%d: error: ", p->name, line, col);
        if (k >= 0 && (size_t)k < p->errlen) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(p->err + k, p->errlen - (size_t)k, fmt, ap);
            va_end(ap);
        }
    }
    longjmp(p->jmp, 1);
}

#define fail(p, ...) fail_at((p), (p)->tok.line, (p)->tok.col, __VA_ARGS__)
#define fail_tok(p, t, ...) fail_at((p), (t)->line, (t)->col, __VA_ARGS__)

static bool is_ident_start(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_ident_char(char c) { return is_ident_start(c) || is_digit(c); }

/* Skips blanks and `//` comments, counting lines. */
static void skip_space(parser *p)
{
    for (;;) {
        char c = *p->pos;
        if (c == '\n') {
            p->pos++;
            p->line++;
            p->line_start = p->pos;
        } else if (c == ' ' || c == '\t' || c == '\r') {
            p->pos++;
        } else if (c == '/' && p->pos[1] == '/') {
            while (*p->pos && *p->pos != '\n')
                p->pos++;
        } else {
            return;
        }
    }
}

/* Fails at byte `at` of the current line (inside a string). */
#define fail_here(p, at, ...) fail_at((p), (p)->line, (int)((at) - (p)->line_start) + 1, __VA_ARGS__)

/* Up to three octal digits at *s, as in C. */
static int octal_escape(parser *p, const char **s)
{
    const char *start = *s - 1;
    int v = 0;
    for (int k = 0; k < 3 && **s >= '0' && **s <= '7'; k++)
        v = v * 8 + (*(*s)++ - '0');
    if (v > 255)
        fail_here(p, start, "octal escape \\%o is out of range (at most \\377)", (unsigned)v);
    return v;
}

static int hex_digit(char c)
{
    if (is_digit(c))
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* One escape after the backslash at *s (C's, with \x taking exactly two
 * hex digits); advances *s past it. */
static int decode_escape(parser *p, const char **s)
{
    const char *start = *s - 1;
    char c = *(*s)++;
    switch (c) {
    case 'n': return '\n';
    case 't': return '\t';
    case 'r': return '\r';
    case 'a': return '\a';
    case 'b': return '\b';
    case 'f': return '\f';
    case 'v': return '\v';
    case '\\': case '"': case '\'': case '?': return c;
    case 'x': {
        int hi = hex_digit((*s)[0]), lo = hi < 0 ? -1 : hex_digit((*s)[1]);
        if (lo < 0)
            fail_here(p, start, "\\x needs exactly two hex digits");
        *s += 2;
        return hi * 16 + lo;
    }
    default:
        if (c >= '0' && c <= '7') {
            (*s)--;
            return octal_escape(p, s);
        }
        fail_here(p, start, "unknown escape sequence '\\%c' in a string",
                  c > 0x20 && c < 0x7f ? c : '?');
    }
}

/* "..." with C escapes, decoded into the arena. */
static void lex_string(parser *p, token *t)
{
    const char *s = p->pos + 1;
    const char *end = s;
    while (*end && *end != '"' && *end != '\n')
        end += *end == '\\' && end[1] ? 2 : 1;
    char *out = ir_alloc(p->arena, (size_t)(end - s) + 1);
    size_t n = 0;
    while (*s != '"') {
        unsigned char c = (unsigned char)*s;
        if (c == '\0' || c == '\n')
            fail(p, "unterminated string");
        if (c < 0x20 || c == 0x7f)
            fail_here(p, s, "control character 0x%02x in a string; write it as an escape", c);
        const char *at = s++;
        int v = c == '\\' ? decode_escape(p, &s) : c;
        if (v == 0)
            fail_here(p, at, "a string cannot contain a NUL byte");
        out[n++] = (char)v;
    }
    out[n] = '\0';
    t->str = out;
    p->pos = s + 1;
}

/* -?digits(.digits*)?([eE][+-]?digits)? or -inf */
static void lex_number(parser *p, token *t)
{
    const char *s = p->pos;
    t->is_int = true;
    if (*s == '-')
        s++;
    if (strncmp(s, "inf", 3) == 0) {
        s += 3;
        t->is_int = false;
    } else {
        while (is_digit(*s))
            s++;
        if (*s == '.') {
            t->is_int = false;
            for (s++; is_digit(*s);)
                s++;
        }
        if (*s == 'e' || *s == 'E') {
            t->is_int = false;
            s++;
            if (*s == '+' || *s == '-')
                s++;
            if (!is_digit(*s))
                fail(p, "malformed number: the exponent has no digits");
            while (is_digit(*s))
                s++;
        }
    }
    if (is_ident_char(*s) || *s == '.')
        fail(p, "malformed number");
    if (s - p->pos > MAX_NUMBER_LEN)
        fail(p, "number is too long (at most %d characters)", MAX_NUMBER_LEN);
    p->pos = s;
}

/* %N: a value id, 0 .. INT_MAX-1 so that next_id cannot overflow. */
static void lex_value(parser *p, token *t)
{
    const char *s = p->pos + 1;
    if (!is_digit(*s))
        fail(p, "expected digits after '%%' in a value name");
    int64_t v = 0;
    for (; is_digit(*s); s++) {
        v = v * 10 + (*s - '0');
        if (v >= INT_MAX)
            fail(p, "value id is too large (at most %d)", INT_MAX - 1);
    }
    if (is_ident_start(*s))
        fail(p, "malformed value name");
    t->id = (int)v;
    p->pos = s;
}

/* An identifier at p->pos (after a sigil already skipped) into t->str. */
static void lex_name(parser *p, token *t, const char *what)
{
    const char *s = p->pos;
    if (!is_ident_start(*s))
        fail(p, "expected a name after '%s'", what);
    while (is_ident_char(*s))
        s++;
    size_t n = (size_t)(s - p->pos);
    char *out = ir_alloc(p->arena, n + 1);
    memcpy(out, p->pos, n);
    t->str = out;
    p->pos = s;
}

/* Reads the next token into p->tok. */
static void next(parser *p)
{
    skip_space(p);
    token *t = &p->tok;
    memset(t, 0, sizeof *t);
    t->s = p->pos;
    t->line = p->line;
    t->col = (int)(p->pos - p->line_start) + 1;
    char c = *p->pos;
    if (c == '\0') {
        t->kind = TK_EOF;
    } else if (c == '%') {
        t->kind = TK_VALUE;
        lex_value(p, t);
    } else if (c == '@' || c == '^') {
        t->kind = c == '@' ? TK_SYM : TK_LABEL;
        p->pos++;
        if (c == '@' && *p->pos == '"')
            lex_string(p, t);
        else
            lex_name(p, t, c == '@' ? "@" : "^");
    } else if (c == '"') {
        t->kind = TK_STRING;
        lex_string(p, t);
    } else if (c == '-' && p->pos[1] == '>') {
        t->kind = TK_ARROW;
        p->pos += 2;
    } else if (is_digit(c) || (c == '-' && (is_digit(p->pos[1]) || p->pos[1] == 'i'))) {
        t->kind = TK_NUMBER;
        lex_number(p, t);
    } else if (is_ident_start(c)) {
        t->kind = TK_IDENT;
        while (is_ident_char(*p->pos))
            p->pos++;
    } else if (strchr("(){}[]<>,:=?*", c)) {
        t->kind = TK_PUNCT;
        p->pos++;
    } else if (c >= 0x20 && c < 0x7f) {
        fail(p, "unexpected character '%c'", c);
    } else {
        fail(p, "unexpected byte 0x%02x", (unsigned char)c);
    }
    t->len = (int)(p->pos - t->s);
}

/* ====================================================== token helpers */

static bool tok_is(const token *t, tk_kind kind, const char *text)
{
    return t->kind == kind && (int)strlen(text) == t->len && memcmp(t->s, text, (size_t)t->len) == 0;
}

static bool at_punct(parser *p, char c)
{
    return p->tok.kind == TK_PUNCT && p->tok.s[0] == c;
}

static bool at_ident(parser *p, const char *word) { return tok_is(&p->tok, TK_IDENT, word); }

/* A short description of the current token for messages. */
static const char *tok_desc(parser *p, char *buf, size_t n)
{
    if (p->tok.kind == TK_EOF)
        return "end of input";
    int len = p->tok.len > 24 ? 24 : p->tok.len;
    snprintf(buf, n, "'%.*s%s'", len, p->tok.s, p->tok.len > len ? "..." : "");
    return buf;
}

static void expect_punct(parser *p, char c)
{
    char buf[40];
    if (!at_punct(p, c))
        fail(p, "expected '%c', got %s", c, tok_desc(p, buf, sizeof buf));
    next(p);
}

static void expect_ident(parser *p, const char *word)
{
    char buf[40];
    if (!at_ident(p, word))
        fail(p, "expected '%s', got %s", word, tok_desc(p, buf, sizeof buf));
    next(p);
}

/* Copies the token's text NUL-terminated; false if it does not fit. */
static bool tok_text(const token *t, char *buf, size_t n)
{
    if ((size_t)t->len >= n)
        return false;
    memcpy(buf, t->s, (size_t)t->len);
    buf[t->len] = '\0';
    return true;
}

/* An integer token in [lo, hi]; `what` names it in the message. */
static int64_t tok_int(parser *p, const token *t, int64_t lo, int64_t hi, const char *what)
{
    char buf[MAX_NUMBER_LEN + 1];
    if (t->kind != TK_NUMBER || !t->is_int || !tok_text(t, buf, sizeof buf))
        fail_tok(p, t, "%s must be an integer", what);
    errno = 0;
    long long v = strtoll(buf, NULL, 10);
    if (errno == ERANGE || v < lo || v > hi)
        fail_tok(p, t, "%s %s is out of range [%lld, %lld]", what, buf, (long long)lo,
                 (long long)hi);
    return v;
}

static int64_t parse_int(parser *p, int64_t lo, int64_t hi, const char *what)
{
    int64_t v = tok_int(p, &p->tok, lo, hi, what);
    next(p);
    return v;
}

/* A decimal integer in [0, UINT64_MAX]. */
static uint64_t parse_u64(parser *p, const char *what)
{
    char buf[MAX_NUMBER_LEN + 1];
    if (p->tok.kind != TK_NUMBER || !p->tok.is_int || p->tok.s[0] == '-' ||
        !tok_text(&p->tok, buf, sizeof buf))
        fail(p, "%s must be a non-negative integer", what);
    errno = 0;
    unsigned long long v = strtoull(buf, NULL, 10);
    if (errno == ERANGE)
        fail(p, "%s %s is out of range (at most %llu)", what, buf, (unsigned long long)UINT64_MAX);
    next(p);
    return v;
}

static bool is_float_word(const token *t)
{
    return tok_is(t, TK_IDENT, "nan") || tok_is(t, TK_IDENT, "inf");
}

/* A number token or nan/inf/-inf as text in buf; fails otherwise. */
static void float_text(parser *p, const token *t, char *buf, size_t n, const char *what)
{
    if ((t->kind != TK_NUMBER && !is_float_word(t)) || !tok_text(t, buf, n))
        fail_tok(p, t, "%s must be a number (or nan, inf, -inf)", what);
}

static double tok_double(parser *p, const token *t, const char *what)
{
    char buf[MAX_NUMBER_LEN + 1];
    float_text(p, t, buf, sizeof buf, what);
    errno = 0;
    double v = strtod(buf, NULL);
    if (errno == ERANGE && isinf(v))
        fail_tok(p, t, "%s %s is out of range for f64", what, buf);
    return v; /* denormals also set ERANGE; they are exact and kept */
}

static float tok_float(parser *p, const token *t, const char *what)
{
    char buf[MAX_NUMBER_LEN + 1];
    float_text(p, t, buf, sizeof buf, what);
    errno = 0;
    float v = strtof(buf, NULL);
    if (errno == ERANGE && isinf(v))
        fail_tok(p, t, "%s %s is out of range for f32", what, buf);
    return v;
}

static double parse_double(parser *p, const char *what)
{
    double v = tok_double(p, &p->tok, what);
    next(p);
    return v;
}

/* ================================================== growable arrays */

/* Makes room for one more element in an arena array of `size`-byte
 * elements; the old block is abandoned to the arena. */
static void *grow(parser *p, void *items, int n, int *cap, size_t size)
{
    if (n < *cap)
        return items;
    int new_cap = *cap ? *cap * 2 : 8;
    void *bigger = ir_alloc(p->arena, (size_t)new_cap * size);
    if (n)
        memcpy(bigger, items, (size_t)n * size);
    *cap = new_cap;
    return bigger;
}

/* ============================================================ value ids */

static id_entry *map_slot(const id_map *m, int id)
{
    unsigned mask = (unsigned)m->cap - 1;
    for (unsigned h = ((unsigned)id * 2654435761u) & mask;; h = (h + 1) & mask)
        if (m->slots[h].id == id || m->slots[h].id < 0)
            return &m->slots[h];
}

static void map_rehash(parser *p)
{
    id_map old = p->ids;
    p->ids.cap = old.cap ? old.cap * 2 : 64;
    p->ids.slots = ir_alloc(p->arena, (size_t)p->ids.cap * sizeof *p->ids.slots);
    for (int i = 0; i < p->ids.cap; i++)
        p->ids.slots[i].id = -1;
    for (int i = 0; i < old.cap; i++)
        if (old.slots[i].id >= 0)
            *map_slot(&p->ids, old.slots[i].id) = old.slots[i];
}

/* Claims the id of the value token t for a definition in progress. */
static void map_reserve(parser *p, const token *t)
{
    if (2 * (p->ids.count + 1) > p->ids.cap)
        map_rehash(p);
    id_entry *e = map_slot(&p->ids, t->id);
    if (e->id >= 0)
        fail_tok(p, t, "%%%d is defined twice (first at line %d)", t->id, e->line);
    e->id = t->id;
    e->line = t->line;
    p->ids.count++;
    if (t->id > p->max_id)
        p->max_id = t->id;
}

static void map_define(parser *p, int id, ir_node *n)
{
    map_slot(&p->ids, id)->node = n;
    n->id = id;
}

/* The node a value token names, which must be visible in graph g. */
static ir_node *lookup(parser *p, ir_graph *g, const token *t)
{
    id_entry *e = p->ids.cap ? map_slot(&p->ids, t->id) : NULL;
    if (!e || e->id < 0)
        fail_tok(p, t, "use of undefined value %%%d", t->id);
    if (!e->node)
        fail_tok(p, t, "%%%d is used inside its own definition", t->id);
    if (e->node->graph != g)
        fail_tok(p, t, "%%%d is defined outside this region; regions have no implicit "
                       "captures, so pass it in as an operand of the cond or while", t->id);
    return e->node;
}

static ir_node *parse_use(parser *p, ir_graph *g)
{
    char buf[40];
    if (p->tok.kind != TK_VALUE)
        fail(p, "expected a value (%%N), got %s", tok_desc(p, buf, sizeof buf));
    ir_node *n = lookup(p, g, &p->tok);
    next(p);
    return n;
}

/* ================================================================ types */

/* Rejects shapes whose element count could overflow later arithmetic. */
static void check_numel(parser *p, const token *t, const ag_shape *s)
{
    int64_t n = 1;
    for (int i = 0; i < s->rank; i++) {
        if (s->dims[i] <= 0)
            continue;
        if (n > MAX_ELEMENTS / s->dims[i])
            fail_tok(p, t, "shape has too many elements (at most 2^62)");
        n *= s->dims[i];
    }
}

/* dims = "[" [dim ("," dim)*] "]"   dim = integer | "?"
 * or, where unranked is allowed, "[" "*" "]" (rank -1). */
static void parse_dims(parser *p, ag_shape *s, bool unranked)
{
    token start = p->tok;
    expect_punct(p, '[');
    s->rank = 0;
    if (unranked && at_punct(p, '*')) {
        next(p);
        expect_punct(p, ']');
        s->rank = -1;
        return;
    }
    while (!at_punct(p, ']')) {
        if (s->rank)
            expect_punct(p, ',');
        if (s->rank == AG_MAX_RANK)
            fail(p, "rank is too large (at most %d)", AG_MAX_RANK);
        if (at_punct(p, '?')) {
            s->dims[s->rank++] = -1;
            next(p);
        } else {
            s->dims[s->rank++] = parse_int(p, 0, INT32_MAX, "dim");
        }
    }
    next(p);
    check_numel(p, &start, s);
}

static ag_dtype parse_dtype(parser *p)
{
    char buf[16], desc[40];
    ag_dtype dt;
    if (p->tok.kind != TK_IDENT || !tok_text(&p->tok, buf, sizeof buf) ||
        !rt_dtype_from_name(buf, &dt)) {
        char hint[64];
        const char *near = p->tok.kind == TK_IDENT && tok_text(&p->tok, buf, sizeof buf)
                               ? rt_dtype_suggest(buf)
                               : NULL;
        fail(p, "expected a dtype (f32, f64, bf16, i32, i64, bool), got %s%s",
             tok_desc(p, desc, sizeof desc), sg_did_you_mean(near, hint, sizeof hint));
    }
    next(p);
    return dt;
}

/* type = dtype (dims | "[" "*" "]") | "list" "<" dtype ">" [dims]
 * where [*] is a tensor of unknown rank. */
static void parse_type(parser *p, ir_type *t)
{
    memset(t, 0, sizeof *t);
    if (at_ident(p, "list")) {
        next(p);
        expect_punct(p, '<');
        t->dtype = RT_LIST;
        t->elem_dtype = parse_dtype(p);
        expect_punct(p, '>');
        t->shape.rank = -1;
        if (at_punct(p, '['))
            parse_dims(p, &t->shape, false);
        return;
    }
    t->dtype = parse_dtype(p);
    t->elem_dtype = t->dtype;
    parse_dims(p, &t->shape, true);
}

/* types = "(" [type ("," type)*] ")"; returns the count. */
static int parse_type_list(parser *p, ir_type **out)
{
    int n = 0, cap = 0;
    ir_type *items = NULL;
    expect_punct(p, '(');
    while (!at_punct(p, ')')) {
        if (n)
            expect_punct(p, ',');
        items = grow(p, items, n, &cap, sizeof *items);
        parse_type(p, &items[n++]);
    }
    next(p);
    *out = items;
    return n;
}

/* ============================================================ attributes */

/* What the attribute list of one node holds before the node exists. */
typedef struct attr_set {
    rt_attrs a;
    unsigned seen; /* RT_A_* bits given */
    bool lo, hi;   /* the two halves of RT_A_RANGE */
    bool has_index;
    int index; /* get */
    lit_vec lit;
} attr_set;

static const struct {
    const char *key;
    unsigned bit;
} attr_keys[] = {
    {"axis", RT_A_AXIS},       {"keepdims", RT_A_KEEPDIMS}, {"dtype", RT_A_DTYPE},
    {"shape", RT_A_SHAPE},     {"begin", RT_A_BEGIN},       {"size", RT_A_SIZE},
    {"perm", RT_A_PERM},       {"strides", RT_A_STRIDES},   {"padding", RT_A_PADDING},
    {"value", RT_A_VALUE},     {"lo", RT_A_RANGE},          {"hi", RT_A_RANGE},
    {"seed", RT_A_SEED},       {"n", RT_A_N},               {"text", RT_A_TEXT},
    {"ref", RT_A_REF},         {"dynamic", RT_A_DYNAMIC},
};

static bool parse_bool(parser *p, const char *what)
{
    bool v = at_ident(p, "true");
    if (!v && !at_ident(p, "false"))
        fail(p, "%s must be true or false", what);
    next(p);
    return v;
}

/* "[" [int ("," int)*] "]" with entries within +-INT32_MAX. */
static void parse_int_list(parser *p, ag_shape *s, const char *what)
{
    expect_punct(p, '[');
    s->rank = 0;
    while (!at_punct(p, ']')) {
        if (s->rank)
            expect_punct(p, ',');
        if (s->rank == AG_MAX_RANK)
            fail(p, "%s has too many entries (at most %d)", what, AG_MAX_RANK);
        s->dims[s->rank++] = parse_int(p, -INT32_MAX, INT32_MAX, what);
    }
    next(p);
}

static void parse_strides(parser *p, rt_attrs *a)
{
    expect_punct(p, '[');
    a->stride_h = (int)parse_int(p, INT32_MIN, INT32_MAX, "stride");
    expect_punct(p, ',');
    a->stride_w = (int)parse_int(p, INT32_MIN, INT32_MAX, "stride");
    expect_punct(p, ']');
}

static void parse_padding(parser *p, rt_attrs *a)
{
    if (at_ident(p, "SAME"))
        a->padding = AG_SAME;
    else if (at_ident(p, "VALID"))
        a->padding = AG_VALID;
    else
        fail(p, "padding must be SAME or VALID");
    next(p);
}

/* @vN, a variable declared in the function header. */
static void parse_ref(parser *p, rt_attrs *a)
{
    const char *s = p->tok.kind == TK_SYM ? p->tok.str : "";
    char *end;
    if (s[0] != 'v' || !is_digit(s[1]))
        fail(p, "ref must name a variable of the header, like @v0");
    errno = 0;
    long i = strtol(s + 1, &end, 10);
    if (*end || errno || i >= p->fn->n_vars)
        fail(p, "@%s is not declared in the function's vars(...)", s);
    a->ref = p->fn->vars[i];
    next(p);
}

/* value = "[" [element ("," element)*] "]", converted once the type is known. */
static void parse_literal_tokens(parser *p, lit_vec *lit)
{
    expect_punct(p, '[');
    while (!at_punct(p, ']')) {
        if (lit->n)
            expect_punct(p, ',');
        if (p->tok.kind != TK_NUMBER && !is_float_word(&p->tok))
            fail(p, "expected a number in the constant's value");
        lit->items = grow(p, lit->items, lit->n, &lit->cap, sizeof *lit->items);
        lit->items[lit->n++] = p->tok;
        next(p);
    }
    next(p);
}

static void parse_axis(parser *p, rt_attrs *a)
{
    if (at_ident(p, "all")) {
        a->axis = AG_ALL_AXES;
        next(p);
    } else {
        a->axis = parse_int(p, INT32_MIN, INT32_MAX, "axis");
    }
}

/* The value of one attribute whose key (with bit `bit`) was just read. */
static void parse_attr_value(parser *p, attr_set *s, unsigned bit, const token *key)
{
    rt_attrs *a = &s->a;
    switch (bit) {
    case RT_A_AXIS: parse_axis(p, a); break;
    case RT_A_KEEPDIMS: a->keepdims = parse_bool(p, "keepdims"); break;
    case RT_A_DTYPE: a->dtype = parse_dtype(p); break;
    case RT_A_SHAPE:
        parse_int_list(p, &a->shape, "shape");
        check_numel(p, key, &a->shape);
        break;
    case RT_A_BEGIN: parse_int_list(p, &a->begin, "begin"); break;
    case RT_A_SIZE: parse_int_list(p, &a->size, "size"); break;
    case RT_A_PERM: parse_int_list(p, &a->perm, "perm"); break;
    case RT_A_STRIDES: parse_strides(p, a); break;
    case RT_A_PADDING: parse_padding(p, a); break;
    case RT_A_VALUE: a->value = parse_double(p, "value"); break;
    case RT_A_RANGE:
        if (key->s[0] == 'l')
            a->lo = parse_double(p, "lo");
        else
            a->hi = parse_double(p, "hi");
        break;
    case RT_A_SEED:
        a->seed = parse_u64(p, "seed");
        break;
    case RT_A_N: a->n = parse_int(p, INT32_MIN, INT32_MAX, "n"); break;
    case RT_A_TEXT:
        if (p->tok.kind != TK_STRING)
            fail(p, "text must be a quoted string");
        a->text = p->tok.str;
        next(p);
        break;
    case RT_A_REF: parse_ref(p, a); break;
    case RT_A_LITERAL: parse_literal_tokens(p, &s->lit); break;
    case RT_A_DYNAMIC: a->dynamic = parse_bool(p, "dynamic"); break;
    }
}

/* The RT_A_* bit of key for an op with attribute mask `mask`, or 0. */
static unsigned key_bit(const token *key, unsigned mask)
{
    if (tok_is(key, TK_IDENT, "value"))
        return mask & RT_A_LITERAL ? RT_A_LITERAL : RT_A_VALUE;
    for (size_t i = 0; i < sizeof attr_keys / sizeof attr_keys[0]; i++)
        if (tok_is(key, TK_IDENT, attr_keys[i].key))
            return attr_keys[i].bit;
    return 0;
}

/* Marks the attribute seen; a second `lo` or `hi` counts as a repeat. */
static bool mark_seen(attr_set *s, unsigned bit, const token *key)
{
    if (bit == RT_A_RANGE) {
        bool *half = key->s[0] == 'l' ? &s->lo : &s->hi;
        if (*half)
            return false;
        *half = true;
        if (s->lo && s->hi)
            s->seen |= bit;
        return true;
    }
    if (s->seen & bit)
        return false;
    s->seen |= bit;
    return true;
}

/* get's only attribute: index = N */
static void parse_index_attr(parser *p, attr_set *s, const token *key)
{
    if (!tok_is(key, TK_IDENT, "index"))
        fail_tok(p, key, "'%.*s' is not an attribute of get (it has only 'index')",
                 key->len, key->s);
    if (s->has_index)
        fail_tok(p, key, "attribute 'index' is given twice");
    s->has_index = true;
    s->index = (int)parse_int(p, 0, INT32_MAX, "index");
}

/* key "=" value, checked against the op's attribute mask. */
static void parse_attr(parser *p, int opcode, attr_set *s)
{
    token key = p->tok;
    if (key.kind != TK_IDENT)
        fail(p, "expected an attribute name");
    next(p);
    expect_punct(p, '=');
    if (opcode == IR_GET) {
        parse_index_attr(p, s, &key);
        return;
    }
    unsigned mask = opcode < RT_OP_COUNT ? rt_ops[opcode].attrs : 0;
    unsigned bit = key_bit(&key, mask);
    if (!(bit & mask))
        fail_tok(p, &key, "'%.*s' is not an attribute of %s", key.len, key.s,
                 ir_opcode_name(opcode));
    if (!mark_seen(s, bit, &key))
        fail_tok(p, &key, "attribute '%.*s' is given twice", key.len, key.s);
    parse_attr_value(p, s, bit, &key);
}

/* attrs = "{" [attr ("," attr)*] "}" */
static void parse_attrs(parser *p, int opcode, attr_set *s)
{
    expect_punct(p, '{');
    int n = 0;
    while (!at_punct(p, '}')) {
        if (n++)
            expect_punct(p, ',');
        parse_attr(p, opcode, s);
    }
    next(p);
}

static const char *attr_name(unsigned bit)
{
    if (bit == RT_A_LITERAL)
        return "value";
    if (bit == RT_A_RANGE)
        return "lo' and 'hi";
    for (size_t i = 0; i < sizeof attr_keys / sizeof attr_keys[0]; i++)
        if (attr_keys[i].bit == bit)
            return attr_keys[i].key;
    return "?";
}

/* Every attribute of the op must be given: the text form has no defaults. */
static void check_attrs_complete(parser *p, int opcode, const attr_set *s, const token *op)
{
    if (opcode == IR_GET) {
        if (!s->has_index)
            fail_tok(p, op, "get needs its attribute {index = N}");
        return;
    }
    unsigned missing = (opcode < RT_OP_COUNT ? rt_ops[opcode].attrs : 0) & ~s->seen;
    for (unsigned bit = 1; bit; bit <<= 1)
        if (missing & bit)
            fail_tok(p, op, "%s needs attribute '%s'", ir_opcode_name(opcode), attr_name(bit));
}

/* ============================================================= literals */

/* Stores literal element i of dtype dt from token t. */
static void store_element(parser *p, const token *t, ag_dtype dt, void *data, int64_t i)
{
    switch (dt) {
    case AG_F32: ((float *)data)[i] = tok_float(p, t, "f32 element"); break;
    case AG_BF16: ((uint16_t *)data)[i] = ag_f32_to_bf16(tok_float(p, t, "bf16 element")); break;
    case AG_F64: ((double *)data)[i] = tok_double(p, t, "f64 element"); break;
    case AG_I32: ((int32_t *)data)[i] = (int32_t)tok_int(p, t, INT32_MIN, INT32_MAX, "i32 element"); break;
    case AG_I64: ((int64_t *)data)[i] = tok_int(p, t, INT64_MIN, INT64_MAX, "i64 element"); break;
    case AG_BOOL: ((uint8_t *)data)[i] = (uint8_t)tok_int(p, t, 0, 1, "bool element"); break;
    case AG_I8: ((int8_t *)data)[i] = (int8_t)tok_int(p, t, INT8_MIN, INT8_MAX, "i8 element"); break;
    default: fail_tok(p, t, "a constant cannot have dtype %s", ag_dtype_name(dt));
    }
}

/* The constant's value, of the node's type (which must be fully known). */
static rt_value *build_literal(parser *p, const lit_vec *lit, const ir_type *t, const token *at)
{
    char buf[256];
    if (t->dtype == RT_LIST || !rt_shape_known(&t->shape))
        fail_tok(p, at, "a const needs a tensor type with known dims, not %s",
                 ir_type_str(t, buf, sizeof buf));
    int64_t numel = rt_shape_numel(&t->shape);
    if (numel != lit->n)
        fail_tok(p, at, "const has %d value%s but type %s has %lld element%s", lit->n,
                 lit->n == 1 ? "" : "s", ir_type_str(t, buf, sizeof buf), (long long)numel,
                 numel == 1 ? "" : "s");
    rt_value *v = ir_alloc(p->arena, sizeof *v);
    v->kind = RT_CONCRETE;
    v->dtype = t->dtype;
    v->elem_dtype = t->dtype;
    v->shape = t->shape;
    v->numel = numel;
    v->data = ir_alloc(p->arena, numel ? (size_t)numel * rt_dtype_size(t->dtype) : 1);
    for (int64_t i = 0; i < numel; i++)
        store_element(p, &lit->items[i], t->dtype, v->data, i);
    return v;
}

/* ================================================================ nodes */

static token parse_nodes(parser *p, ir_graph *g, const char *terminator);

/* values = [value ("," value)*], all visible in g. */
static int parse_uses(parser *p, ir_graph *g, ir_node ***out)
{
    int n = 0, cap = 0;
    ir_node **items = NULL;
    if (p->tok.kind == TK_VALUE) {
        for (;;) {
            items = grow(p, items, n, &cap, sizeof *items);
            items[n++] = parse_use(p, g);
            if (!at_punct(p, ','))
                break;
            next(p);
        }
    }
    *out = items;
    return n;
}

/* params = "(" [%N ":" type ("," %N ":" type)*] ")" */
static void parse_params(parser *p, ir_graph *g)
{
    char buf[40];
    expect_punct(p, '(');
    while (!at_punct(p, ')')) {
        if (g->n_params)
            expect_punct(p, ',');
        if (p->tok.kind != TK_VALUE)
            fail(p, "expected a parameter (%%N: type), got %s", tok_desc(p, buf, sizeof buf));
        token name = p->tok;
        map_reserve(p, &name);
        next(p);
        expect_punct(p, ':');
        ir_type t;
        parse_type(p, &t);
        map_define(p, name.id, ir_add_param(g, &t));
    }
    next(p);
}

/* region = label params ":" node* "yield" values */
static ir_graph *parse_region(parser *p, const char *label)
{
    if (p->tok.kind != TK_LABEL || strcmp(p->tok.str, label) != 0)
        fail(p, "expected region '^%s'", label);
    next(p);
    ir_graph *r = ir_graph_new(p->fn);
    parse_params(p, r);
    expect_punct(p, ':');
    parse_nodes(p, r, "yield");
    ir_node **values;
    int n = parse_uses(p, r, &values);
    ir_set_results(r, n, values);
    return r;
}

/* regions = "{" region region "}" (^then ^else for cond, ^cond ^body for while) */
static void parse_regions(parser *p, int opcode, ir_graph **r)
{
    if (++p->depth > MAX_DEPTH)
        fail(p, "regions are nested too deeply (at most %d levels)", MAX_DEPTH);
    expect_punct(p, '{');
    r[0] = parse_region(p, opcode == IR_COND ? "then" : "cond");
    r[1] = parse_region(p, opcode == IR_COND ? "else" : "body");
    expect_punct(p, '}');
    p->depth--;
}

/* loc = "loc" "(" string ":" int [":" int] ")" */
static void parse_loc(parser *p, ag_loc *loc, int *col)
{
    next(p);
    expect_punct(p, '(');
    if (p->tok.kind != TK_STRING)
        fail(p, "expected a file name in quotes");
    loc->file = p->tok.str;
    next(p);
    expect_punct(p, ':');
    loc->line = (int)parse_int(p, INT32_MIN, INT32_MAX, "line");
    if (at_punct(p, ':')) {
        next(p);
        *col = (int)parse_int(p, 0, INT32_MAX, "column");
    }
    expect_punct(p, ')');
}

/* device = "device" "(" string ")": the name of the target that runs the
 * node. Two older spellings stay readable: "cpu", the host, and "tpu",
 * the tpu-model (graphs saved before devices were named by target). */
static ir_device parse_device(parser *p)
{
    next(p);
    expect_punct(p, '(');
    if (p->tok.kind != TK_STRING || !*p->tok.str)
        fail(p, "expected the device's target name in quotes, like device(\"tpu-model\")");
    const char *name = p->tok.str;
    if (strcmp(name, "cpu") == 0)
        name = "";
    else if (strcmp(name, "tpu") == 0)
        name = "tpu-model";
    ir_device d = ir_device_named(name);
    if (d < 0)
        fail(p, "too many device names in one process (at most %d)", IR_MAX_DEVICES - 1);
    next(p);
    expect_punct(p, ')');
    return d;
}

/* scope = "scope" "(" string ")": the inlined AG_FUNCTIONs, "f/g" */
static const char *parse_scope(parser *p)
{
    next(p);
    expect_punct(p, '(');
    if (p->tok.kind != TK_STRING || !*p->tok.str)
        fail(p, "expected the scope's function names in quotes, like scope(\"f/g\")");
    const char *s = p->tok.str;
    next(p);
    expect_punct(p, ')');
    return s;
}

/* Everything a node line says, gathered before the node is built. */
typedef struct node_text {
    token id, op;
    int opcode;
    int n_in;
    ir_node **in;
    attr_set attrs;
    ir_node *after;
    token after_tok;
    ir_type type;     /* ordinary nodes */
    int n_results;    /* cond/while */
    ir_type *results;
    ag_loc loc;
    int col;
    ir_device device;
    const char *scope;
    ir_graph *region[2];
} node_text;

static bool is_region_op(int opcode) { return opcode == IR_COND || opcode == IR_WHILE; }

static int parse_opcode(parser *p)
{
    char buf[64];
    int opcode;
    if (p->tok.kind != TK_IDENT)
        fail(p, "expected an op name after '='");
    if (!tok_text(&p->tok, buf, sizeof buf) || !ir_opcode_from_name(buf, &opcode))
        fail(p, "unknown op '%.*s'", p->tok.len > 40 ? 40 : p->tok.len, p->tok.s);
    if (opcode == IR_PARAM)
        fail(p, "'param' is not an op; declare parameters in the function or region header");
    next(p);
    return opcode;
}

/* The result part: `: type`, or `: (types)` for cond and while. */
static void parse_result(parser *p, node_text *nt)
{
    expect_punct(p, ':');
    if (is_region_op(nt->opcode)) {
        if (!at_punct(p, '('))
            fail(p, "%s has a tuple of result types: write ': (type, ...)'",
                 ir_opcode_name(nt->opcode));
        nt->n_results = parse_type_list(p, &nt->results);
    } else {
        parse_type(p, &nt->type);
    }
}

/* `after %N`: an earlier effectful node of the same graph. */
static void parse_after(parser *p, ir_graph *g, node_text *nt)
{
    next(p);
    nt->after_tok = p->tok;
    nt->after = parse_use(p, g);
    if (!nt->after->effect)
        fail_tok(p, &nt->after_tok, "'after %%%d' must name an effectful node, but %%%d is "
                 "%s, which has no side effect", nt->after->id, nt->after->id,
                 ir_opcode_name(nt->after->opcode));
}

/* node = %N "=" op "(" values ")" [attrs] ["after" value] ":" result
 *        [loc] [device] [scope] [regions] */
static void parse_node_text(parser *p, ir_graph *g, node_text *nt)
{
    nt->id = p->tok;
    map_reserve(p, &nt->id);
    next(p);
    expect_punct(p, '=');
    nt->op = p->tok;
    nt->opcode = parse_opcode(p);
    expect_punct(p, '(');
    nt->n_in = parse_uses(p, g, &nt->in);
    expect_punct(p, ')');
    if (at_punct(p, '{'))
        parse_attrs(p, nt->opcode, &nt->attrs);
    check_attrs_complete(p, nt->opcode, &nt->attrs, &nt->op);
    if (at_ident(p, "after"))
        parse_after(p, g, nt);
    parse_result(p, nt);
    if (at_ident(p, "loc"))
        parse_loc(p, &nt->loc, &nt->col);
    if (p->text_locs) {
        nt->loc = (ag_loc){p->name, nt->id.line};
        nt->col = nt->id.col;
    }
    if (at_ident(p, "device"))
        nt->device = parse_device(p);
    if (at_ident(p, "scope"))
        nt->scope = parse_scope(p);
    if (is_region_op(nt->opcode))
        parse_regions(p, nt->opcode, nt->region);
}

/* get's operand must be a cond or while with that many results. */
static ir_node *build_get(parser *p, ir_graph *g, const node_text *nt)
{
    if (nt->n_in != 1 || !is_region_op(nt->in[0]->opcode))
        fail_tok(p, &nt->op, "get takes one operand, a cond or while");
    if (nt->attrs.index >= nt->in[0]->n_results)
        fail_tok(p, &nt->op, "get index %d is out of range: %%%d has %d result%s",
                 nt->attrs.index, nt->in[0]->id, nt->in[0]->n_results,
                 nt->in[0]->n_results == 1 ? "" : "s");
    ir_node *n = ir_append_get(g, nt->in[0], nt->attrs.index, nt->loc);
    n->type = nt->type; /* as written; the verifier compares */
    return n;
}

static ir_node *build_node(parser *p, ir_graph *g, const node_text *nt)
{
    if (is_region_op(nt->opcode))
        return ir_append_region_op(g, nt->opcode, nt->n_in, nt->in, nt->region[0],
                                   nt->region[1], nt->n_results, nt->results, nt->loc);
    if (nt->opcode == IR_GET)
        return build_get(p, g, nt);
    ir_node *n = ir_append(g, nt->opcode, &nt->attrs.a, nt->n_in, nt->in, &nt->type, nt->loc);
    if (rt_ops[nt->opcode].attrs & RT_A_LITERAL)
        n->attrs.literal = build_literal(p, &nt->attrs.lit, &nt->type, &nt->op);
    return n;
}

static void parse_node(parser *p, ir_graph *g)
{
    node_text nt = {0};
    parse_node_text(p, g, &nt);
    ir_node *n = build_node(p, g, &nt);
    n->ctrl = nt.after; /* as written, replacing the builder's chaining */
    n->col = nt.col;
    n->device = nt.device;
    n->scope = nt.scope;
    map_define(p, nt.id.id, n);
}

/* node* terminator; returns the terminator's token. */
static token parse_nodes(parser *p, ir_graph *g, const char *terminator)
{
    char buf[40];
    while (!at_ident(p, terminator)) {
        if (p->tok.kind != TK_VALUE)
            fail(p, "expected a node (%%N = op(...)) or '%s', got %s", terminator,
                 tok_desc(p, buf, sizeof buf));
        parse_node(p, g);
    }
    token t = p->tok;
    next(p);
    return t;
}

/* ============================================================= function */

/* vars = "vars" "(" @vN ":" type ("," @vN ":" type)* ")", N counting from 0.
 * Each becomes a placeholder variable whose value is symbolic (no data);
 * its magic is left 0 so the runtime never mistakes it for a live one. */
static void parse_vars(parser *p)
{
    next(p);
    expect_punct(p, '(');
    do {
        if (p->fn->n_vars)
            expect_punct(p, ',');
        char want[24];
        snprintf(want, sizeof want, "v%d", p->fn->n_vars);
        if (p->tok.kind != TK_SYM || strcmp(p->tok.str, want) != 0)
            fail(p, "expected variable @%s (variables are numbered in order)", want);
        next(p);
        expect_punct(p, ':');
        ir_type t;
        parse_type(p, &t);
        if (t.dtype == RT_LIST)
            fail(p, "a variable cannot hold a tensor array");
        rt_variable *var = ir_alloc(p->arena, sizeof *var);
        var->value = ir_alloc(p->arena, sizeof *var->value);
        var->value->kind = RT_SYMBOLIC;
        var->value->dtype = var->value->elem_dtype = t.dtype;
        var->value->shape = t.shape;
        var->value->numel = rt_shape_numel(&t.shape);
        ir_function_var_index(p->fn, var);
    } while (!at_punct(p, ')'));
    next(p);
}

/* The returned values must have the types the header declares. */
static void check_returns(parser *p, const token *at, const ir_type *want, int n_want)
{
    const ir_graph *g = p->fn->body;
    char b1[256], b2[256];
    if (g->n_results != n_want)
        fail_tok(p, at, "the function declares %d result%s but returns %d value%s", n_want,
                 n_want == 1 ? "" : "s", g->n_results, g->n_results == 1 ? "" : "s");
    for (int i = 0; i < n_want; i++) {
        const ir_node *v = g->results[i];
        if (is_region_op(v->opcode))
            fail_tok(p, at, "%%%d is a %s with a tuple of results; return one of them with get",
                     v->id, ir_opcode_name(v->opcode));
        if (!ir_type_equal(&v->type, &want[i]))
            fail_tok(p, at, "result %d: %%%d has type %s but the header declares %s", i, v->id,
                     ir_type_str(&v->type, b1, sizeof b1), ir_type_str(&want[i], b2, sizeof b2));
    }
}

/* function = "func" sym params "->" types [vars] "{" node* "return" values "}" */
static void parse_function(parser *p)
{
    char buf[40];
    next(p);
    expect_ident(p, "func");
    if (p->tok.kind != TK_SYM)
        fail(p, "expected the function name (@name)");
    p->fn->name = p->tok.str;
    next(p);
    parse_params(p, p->fn->body);
    if (p->tok.kind != TK_ARROW)
        fail(p, "expected '->' and the result types");
    next(p);
    ir_type *want;
    int n_want = parse_type_list(p, &want);
    if (at_ident(p, "vars"))
        parse_vars(p);
    expect_punct(p, '{');
    ir_graph *g = p->fn->body;
    token ret = parse_nodes(p, g, "return");
    ir_node **values;
    int n = parse_uses(p, g, &values);
    ir_set_results(g, n, values);
    check_returns(p, &ret, want, n_want);
    expect_punct(p, '}');
    if (p->tok.kind != TK_EOF)
        fail(p, "unexpected %s after the end of the function", tok_desc(p, buf, sizeof buf));
}

/*
 * Ids are kept as written, so that printed IR matches its source, except
 * that analyses keep tables by id: an id far beyond the number of values
 * (more than 16 per value, plus 4096) is given the next free id instead,
 * in order of definition, so that no table grows with it.
 */
static int max_kept_id(int n_values) { return 16 * n_values + 4096; }

static void renumber_graph(ir_graph *g, int limit, int *next);

static void renumber_value(ir_node *n, int limit, int *next)
{
    if (n->id > limit)
        n->id = (*next)++;
    for (int r = 0; r < 2; r++)
        if (n->region[r])
            renumber_graph(n->region[r], limit, next);
}

static void renumber_graph(ir_graph *g, int limit, int *next)
{
    for (int i = 0; i < g->n_params; i++)
        renumber_value(g->params[i], limit, next);
    for (ir_node *n = g->first; n; n = n->next)
        renumber_value(n, limit, next);
}

static int max_id_upto(const ir_graph *g, int limit)
{
    int m = -1;
    for (int i = 0; i < g->n_params; i++)
        m = g->params[i]->id <= limit && g->params[i]->id > m ? g->params[i]->id : m;
    for (const ir_node *n = g->first; n; n = n->next) {
        m = n->id <= limit && n->id > m ? n->id : m;
        for (int r = 0; r < 2; r++)
            if (n->region[r]) {
                int k = max_id_upto(n->region[r], limit);
                m = k > m ? k : m;
            }
    }
    return m;
}

static void compact_ids(ir_function *fn, int n_values)
{
    int limit = max_kept_id(n_values);
    int next = max_id_upto(fn->body, limit) + 1;
    renumber_graph(fn->body, limit, &next);
    fn->next_id = next;
}

static ir_function *parse(const char *text, const char *name, bool text_locs, char *err,
                          size_t errlen)
{
    if (err && errlen)
        err[0] = '\0';
    ir_function *fn = ir_function_new("");
    /* The state lives in the arena: after longjmp, only fn and p (both
     * unchanged since setjmp) are read. */
    parser *p = ir_alloc(fn->arena, sizeof *p);
    p->name = ir_strdup(fn->arena, name ? name : "<input>"); /* nodes' locs may name it */
    p->text_locs = text_locs;
    p->pos = p->line_start = text ? text : "";
    p->line = 1;
    p->fn = fn;
    p->arena = fn->arena;
    p->max_id = -1;
    p->err = err;
    p->errlen = errlen;
    if (setjmp(p->jmp)) {
        ir_function_free(fn);
        return NULL;
    }
    parse_function(p);
    compact_ids(fn, p->ids.count);
    return fn;
}

ir_function *ir_parse(const char *text, const char *name, char *err, size_t errlen)
{
    return parse(text, name, false, err, errlen);
}

ir_function *ir_parse_text_locs(const char *text, const char *name, char *err, size_t errlen)
{
    return parse(text, name, true, err, errlen);
}

ir_function *ir_copy(const ir_function *fn, char *err, size_t errlen)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    ir_print(fn, f);
    fclose(f);
    ir_function *copy = ir_parse(text, fn->name, err, errlen);
    free(text);
    if (copy) /* the text names variables; the copy reads fn's own */
        ir_function_rebind_vars(copy, fn->vars);
    return copy;
}
