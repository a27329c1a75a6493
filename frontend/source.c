/*
 * source.c - source files in memory: positions (line, column) of byte
 * offsets, and the few lexical scans the rewriter needs on C text.
 */
#include "fe.h"

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
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        fe_buf_add(&b, chunk, n);
    bool bad = ferror(f);
    fclose(f);
    if (bad) {
        fe_buf_free(&b);
        return NULL;
    }
    char *text = fe_strndup(b.data ? b.data : "", b.len);
    *len = (unsigned)b.len;
    fe_buf_free(&b);
    return text;
}

static void index_lines(fe_source *s)
{
    int n = 1;
    for (unsigned i = 0; i < s->len; i++)
        n += s->text[i] == '\n';
    s->lines = fe_alloc((size_t)n * sizeof *s->lines);
    s->n_lines = 0;
    s->lines[s->n_lines++] = 0;
    for (unsigned i = 0; i < s->len; i++)
        if (s->text[i] == '\n')
            s->lines[s->n_lines++] = i + 1;
}

fe_source *fe_source_load(const char *path)
{
    for (int i = 0; i < loaded.n; i++) {
        fe_source *s = loaded.items[i];
        if (strcmp(s->path, path) == 0)
            return s;
    }
    unsigned len;
    char *text = read_all(path, &len);
    if (!text)
        return NULL;
    fe_source *s = fe_alloc(sizeof *s);
    s->path = fe_strdup(path);
    s->text = text;
    s->len = len;
    index_lines(s);
    fe_vec_push(&loaded, s);
    return s;
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
        while (off < n && t[off] != '\n')
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
        while (off < n && t[off] != q && t[off] != '\n')
            off += t[off] == '\\' ? 2 : 1;
        return off < n ? off + 1 : n;
    }
    return off;
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
