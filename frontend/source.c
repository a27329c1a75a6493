/*
 * source.c - source files in memory: positions (line, column) of byte
 * offsets, and the few lexical scans the rewriter needs on C text.
 */
#include "fe.h"

#include <errno.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static fe_vec loaded; /* fe_source* */

static char *read_all(const char *path, unsigned *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fe_buf b = {0};
    char chunk[65536];
    size_t n;
    /* bounded: the path may name a device or a FIFO (/dev/zero) */
    while (b.len <= FE_MAX_FILE_SIZE && (n = fread(chunk, 1, sizeof chunk, f)) > 0)
        fe_buf_add(&b, chunk, n);
    bool bad = ferror(f), big = b.len > FE_MAX_FILE_SIZE;
    int err = errno;
    fclose(f);
    if (bad || big) {
        fe_buf_free(&b);
        errno = big ? EFBIG : err;
        return NULL;
    }
    char *text = fe_strndup(b.data ? b.data : "", b.len);
    *len = (unsigned)b.len;
    fe_buf_free(&b);
    return text;
}

bool fe_is_ident_char(char c)
{
    return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

bool fe_is_line_end(const fe_source *s, unsigned i)
{
    if (i >= s->len)
        return false;
    if (s->text[i] == '\n')
        return true;
    return s->text[i] == '\r' && (i + 1 >= s->len || s->text[i + 1] != '\n');
}

/* Lines end with \n, \r\n or a lone \r, as for clang and cc: the line
 * numbers of diagnostics and #line directives must agree with theirs. */
static void index_lines(fe_source *s)
{
    int n = 1;
    for (unsigned i = 0; i < s->len; i++)
        n += fe_is_line_end(s, i);
    s->lines = fe_alloc((size_t)n * sizeof *s->lines);
    s->n_lines = 0;
    s->lines[s->n_lines++] = 0;
    for (unsigned i = 0; i < s->len; i++)
        if (fe_is_line_end(s, i))
            s->lines[s->n_lines++] = i + 1;
}

static fe_source *find_loaded(const char *path)
{
    for (int i = 0; i < loaded.n; i++) {
        fe_source *s = loaded.items[i];
        if (strcmp(s->path, path) == 0)
            return s;
    }
    return NULL;
}

static fe_source *add(const char *path, char *text, unsigned len)
{
    fe_source *s = fe_alloc(sizeof *s);
    s->path = fe_strdup(path);
    s->text = text;
    s->len = len;
    index_lines(s);
    fe_vec_push(&loaded, s);
    return s;
}

fe_source *fe_source_load(const char *path)
{
    fe_source *s = find_loaded(path);
    if (s)
        return s;
    unsigned len;
    char *text = read_all(path, &len);
    return text ? add(path, text, len) : NULL;
}

fe_source *fe_source_add(const char *path, const char *text, size_t len)
{
    return add(path, fe_strndup(text, len), (unsigned)len);
}

void fe_source_forget_all(void)
{
    loaded = (fe_vec){0};
}

int fe_source_line(const fe_source *s, unsigned off)
{
    int lo = 0, hi = s->n_lines - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (s->lines[mid] <= off)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo + 1;
}

void fe_source_pos(const fe_source *s, unsigned off, int *line, int *col)
{
    int l = fe_source_line(s, off);
    *line = l;
    *col = (int)(off - s->lines[l - 1]) + 1;
}

const char *fe_source_line_text(const fe_source *s, int line, unsigned *len)
{
    if (line < 1 || line > s->n_lines) {
        *len = 0;
        return "";
    }
    unsigned b = s->lines[line - 1], e = b;
    while (e < s->len && s->text[e] != '\n' && s->text[e] != '\r')
        e++;
    *len = e - b;
    return s->text + b;
}

/* ------------------------------------------------------- lexical scans */

/* Past a comment, string or character literal starting at off (or off
 * itself when none starts there). */
unsigned fe_skip_literal(const fe_source *s, unsigned off)
{
    const char *t = s->text;
    unsigned n = s->len;
    if (off + 1 < n && t[off] == '/' && t[off + 1] == '/') {
        while (off < n && t[off] != '\n' && t[off] != '\r')
            off++;
        return off;
    }
    if (off + 1 < n && t[off] == '/' && t[off + 1] == '*') {
        off += 2;
        while (off + 1 < n && !(t[off] == '*' && t[off + 1] == '/'))
            off++;
        return off + 2 <= n ? off + 2 : n;
    }
    if (off < n && (t[off] == '"' || t[off] == '\'')) {
        char q = t[off++];
        while (off < n && t[off] != q && t[off] != '\n' && t[off] != '\r')
            off += t[off] == '\\' ? 2 : 1;
        return off < n ? off + 1 : n;
    }
    return off;
}

/* The character of code at or after *off, with *off moved past the
 * comments and literals before it (and left on the character); -1 at the
 * end of the text. The scans that count brackets read the text through it. */
int fe_next_code(const fe_source *s, unsigned *off)
{
    while (*off < s->len) {
        unsigned next = fe_skip_literal(s, *off);
        if (next == *off)
            return (unsigned char)s->text[*off];
        *off = next;
    }
    return -1;
}

int fe_bracket(int c)
{
    return (c == '(' || c == '[' || c == '{') - (c == ')' || c == ']' || c == '}');
}

unsigned fe_skip_space(const fe_source *s, unsigned off)
{
    while (off < s->len) {
        unsigned next = fe_skip_literal(s, off);
        if (next != off && s->text[off] == '/') {
            off = next;
            continue;
        }
        char c = s->text[off];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r' && c != '\f' && c != '\v')
            break;
        off++;
    }
    return off;
}

/* Backward over white space (not comments: they are rare just before an
 * operator, and scanning comments backwards is ambiguous). */
unsigned fe_skip_space_back(const fe_source *s, unsigned off)
{
    while (off > 0) {
        char c = s->text[off - 1];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r' && c != '\f' && c != '\v')
            break;
        off--;
    }
    return off;
}

unsigned fe_match_paren(const fe_source *s, unsigned open)
{
    int depth = 0;
    unsigned off = open;
    while (off < s->len) {
        unsigned next = fe_skip_literal(s, off);
        if (next != off) {
            off = next;
            continue;
        }
        char c = s->text[off++];
        if (c == '(' || c == '[' || c == '{')
            depth++;
        else if ((c == ')' || c == ']' || c == '}') && --depth == 0)
            return off;
    }
    return s->len;
}

/* ------------------------------------------------ preprocessor groups */

/* The directive's name after a '#' at off ("if", "endif"...), or "",
 * into name[16]. */
static void directive_at(const fe_source *s, unsigned off, char name[16])
{
    unsigned i = off + 1, n = 0;
    while (i < s->len && (s->text[i] == ' ' || s->text[i] == '\t'))
        i++;
    while (i < s->len && n + 1 < 16) {
        char c = s->text[i];
        if (!((c >= 'a' && c <= 'z') || c == '_'))
            break;
        name[n++] = c;
        i++;
    }
    name[n] = '\0';
}

unsigned fe_unbalanced_directive(const fe_source *s, fe_range r)
{
    int depth = 0;
    unsigned first_open = r.end;
    bool line_start = r.begin == 0 || fe_is_line_end(s, r.begin - 1);
    for (unsigned off = r.begin; off < r.end && off < s->len;) {
        unsigned next = fe_skip_literal(s, off);
        if (next != off) {
            line_start = line_start && s->text[off] == '/' && s->text[off + 1] == '*';
            off = next;
            continue;
        }
        char c = s->text[off];
        if (c == '#' && line_start) {
            char d[16];
            directive_at(s, off, d);
            bool opens = strcmp(d, "if") == 0 || strcmp(d, "ifdef") == 0 ||
                         strcmp(d, "ifndef") == 0;
            bool middle = strcmp(d, "else") == 0 || strncmp(d, "elif", 4) == 0;
            if (opens && depth++ == 0)
                first_open = off;
            else if ((middle && depth == 0) || (strcmp(d, "endif") == 0 && depth-- == 0))
                return off;
        }
        if (fe_is_line_end(s, off))
            line_start = true;
        else if (c != ' ' && c != '\t')
            line_start = false;
        off++;
    }
    return depth ? first_open : r.end;
}
