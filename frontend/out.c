/*
 * out.c - the output writer.
 *
 * Output is built from pieces written in any order (lifted functions are
 * generated while the code that calls them is), so absolute line numbers
 * of the output are unknown while writing. The writer therefore tracks
 * only which file the current line maps to:
 *   - user text (fe_out_user, fe_out_at) gets `#line N "input.c"` whenever
 *     the mapping would otherwise be wrong, and is padded to its column;
 *   - a generated line following other text gets a marker line, which
 *     fe_out_finish replaces by `#line <its own line + 1> "output.ag.c"`.
 * So compiler errors, debuggers and AG_HERE point into the user's file for
 * the user's code, and compiler errors and debuggers into the generated
 * file for agc's glue. There AG_HERE names no file: the first line
 * defines AG_GENERATED_FILE, the file's own name, which ag.h compares
 * with __FILE__, so no node of a user's graph and no message says
 * `loc("staged.c":113)`.
 */
#include "fe.h"

#include <stdlib.h>
#include <string.h>

enum { OUT_MAP_UNKNOWN, OUT_MAP_USER, OUT_MAP_GEN };

#define MARKER "#line \001\n"

void fe_out_init(fe_out *o, const fe_source *src)
{
    memset(o, 0, sizeof *o);
    o->src = src;
    o->map = OUT_MAP_UNKNOWN;
    o->bol = true;
}

static void put_path(fe_buf *b, const char *path)
{
    fe_buf_putc(b, '"');
    for (const char *p = path; *p; p++) {
        if (*p == '"' || *p == '\\')
            fe_buf_putc(b, '\\');
        fe_buf_putc(b, *p);
    }
    fe_buf_putc(b, '"');
}

static void gen_chars(fe_out *o, const char *s, size_t n)
{
    if (n && o->buf.len == 0)
        o->map = OUT_MAP_GEN; /* line 1 of the output needs no #line */
    for (size_t i = 0; i < n; i++) {
        if (o->bol && o->map != OUT_MAP_GEN) {
            fe_buf_puts(&o->buf, MARKER);
            o->map = OUT_MAP_GEN;
        }
        fe_buf_putc(&o->buf, s[i]);
        o->bol = s[i] == '\n';
    }
}

void fe_out_gen(fe_out *o, const char *fmt, ...)
{
    if (!o->bol) { /* generated lines start on a line of their own */
        fe_buf_putc(&o->buf, '\n');
        o->bol = true;
        if (o->map == OUT_MAP_USER)
            o->user_line++;
    }
    fe_buf b = {0};
    va_list ap;
    va_start(ap, fmt);
    fe_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    gen_chars(o, b.data ? b.data : "", b.len);
    fe_buf_free(&b);
}

/* Starts a line mapped to the user's line `line`. */
static void map_user(fe_out *o, int line)
{
    if (o->map == OUT_MAP_USER && o->user_line == line)
        return;
    if (o->map == OUT_MAP_USER && line > o->user_line && line - o->user_line <= 3) {
        while (o->user_line < line) { /* a few newlines read better than a #line */
            fe_buf_putc(&o->buf, '\n');
            o->user_line++;
        }
        o->bol = true;
        return;
    }
    if (!o->bol)
        fe_buf_putc(&o->buf, '\n');
    fe_buf_printf(&o->buf, "#line %d ", line);
    put_path(&o->buf, o->src->path);
    fe_buf_putc(&o->buf, '\n');
    o->map = OUT_MAP_USER;
    o->user_line = line;
    o->bol = true;
}

void fe_out_user(fe_out *o, fe_range r)
{
    if (r.end <= r.begin)
        return;
    const fe_source *s = o->src;
    int line = fe_source_line(s, r.begin);
    if (!(o->map == OUT_MAP_USER && o->user_line == line))
        map_user(o, line);
    if (o->bol) { /* keep the user's indentation */
        unsigned i = s->lines[line - 1];
        while (i < r.begin && (s->text[i] == ' ' || s->text[i] == '\t'))
            i++;
        if (i == r.begin)
            fe_buf_add(&o->buf, s->text + s->lines[line - 1], r.begin - s->lines[line - 1]);
        else
            fe_buf_puts(&o->buf, "    "); /* it followed other code on its line */
    }
    fe_buf_add(&o->buf, s->text + r.begin, r.end - r.begin);
    for (unsigned i = r.begin; i < r.end; i++)
        o->user_line += fe_is_line_end(s, i);
    o->bol = fe_is_line_end(s, r.end - 1);
}

void fe_out_eol(fe_out *o)
{
    if (o->bol)
        return;
    fe_buf_putc(&o->buf, '\n');
    o->bol = true;
    if (o->map == OUT_MAP_USER)
        o->user_line++;
}

void fe_out_gap(fe_out *o, fe_range r)
{
    const char *t = o->src->text;
    unsigned b = r.begin, e = r.end;
    while (b < e && (t[b] == ' ' || t[b] == '\t'))
        b++;
    if (b + 1 < e && t[b] == '\r' && t[b + 1] == '\n')
        b += 2; /* the rest of the line before the gap is blank */
    else if (b < e && (t[b] == '\n' || t[b] == '\r'))
        b++;
    else if (b == e)
        return;
    else
        b = r.begin;
    while (e > b && (t[e - 1] == ' ' || t[e - 1] == '\t'))
        e--; /* the next statement's indentation: it is padded itself */
    fe_out_user(o, (fe_range){b, e});
}

void fe_out_inline(fe_out *o, const char *text)
{
    size_t n = strlen(text);
    if (!n)
        return;
    fe_buf_add(&o->buf, text, n);
    o->bol = text[n - 1] == '\n';
}

void fe_out_at(fe_out *o, int user_line, const char *fmt, ...)
{
    if (!o->bol) {
        fe_buf_putc(&o->buf, '\n');
        o->bol = true;
        if (o->map == OUT_MAP_USER)
            o->user_line++;
    }
    map_user(o, user_line);
    va_list ap;
    va_start(ap, fmt);
    fe_buf_vprintf(&o->buf, fmt, ap);
    va_end(ap);
    fe_buf_putc(&o->buf, '\n');
    o->user_line++;
    o->bol = true;
}

void fe_out_append(fe_out *o, const fe_out *from)
{
    if (!from->buf.len)
        return;
    if (!o->bol)
        fe_buf_putc(&o->buf, '\n');
    fe_buf_add(&o->buf, from->buf.data, from->buf.len);
    o->map = from->map;
    o->user_line = from->user_line;
    o->bol = from->bol;
}

/* Past the end of the line starting at p (\n, \r\n or a lone \r: the
 * user's text may have any of them, and cc counts each as a line). */
static const char *line_end(const char *p, const char *end)
{
    while (p < end && *p != '\n' && *p != '\r')
        p++;
    if (p < end && *p == '\r' && p + 1 < end && p[1] == '\n')
        p++;
    return p < end ? p + 1 : end;
}

char *fe_out_finish(fe_out *o, const char *out_name, size_t *len)
{
    fe_buf r = {0};
    /* the file's own name, for ag.h's AG_HERE: a call agc wrote names no
     * file, so no location of the user's program points into this one */
    fe_buf_printf(&r, "#define AG_GENERATED_FILE ");
    put_path(&r, out_name);
    fe_buf_putc(&r, '\n');
    int line = 2;
    const char *p = o->buf.data ? o->buf.data : "";
    const char *end = p + o->buf.len;
    size_t mlen = strlen(MARKER);
    while (p < end) {
        if ((size_t)(end - p) >= mlen && memcmp(p, MARKER, mlen) == 0) {
            fe_buf_printf(&r, "#line %d ", line + 1);
            put_path(&r, out_name);
            fe_buf_putc(&r, '\n');
            p += mlen;
        } else {
            const char *stop = line_end(p, end);
            fe_buf_add(&r, p, (size_t)(stop - p));
            p = stop;
        }
        line++;
    }
    if (r.len && r.data[r.len - 1] != '\n')
        fe_buf_putc(&r, '\n');
    fe_buf_free(&o->buf);
    *len = r.len;
    if (!r.data)
        r.data = calloc(1, 1);
    return r.data;
}
