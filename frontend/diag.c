/*
 * diag.c - diagnostics in clang's form:
 *
 *   file:line:col: error: message
 *       5 |     k = k + 1;
 *         |     ^~~~~~~~~
 *         |     fix-it text
 *
 * fe_error() is the one entry point for errors in the user's code (like
 * chibicc's error_tok); errors are counted so one run reports several, and
 * fe_diag_summary() prints "N errors generated." Internal bugs never come
 * here: they go to FE_BUG (util.c).
 */
#include "fe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static FILE *stream; /* NULL: stderr */
static bool use_color;
static const fe_source *main_src;
static int n_errors;

#define C_RESET "\033[0m"
#define C_BOLD "\033[1m"
#define C_ERROR "\033[0;1;31m"
#define C_WARNING "\033[0;1;35m"
#define C_NOTE "\033[0;1;30m"
#define C_CARET "\033[0;1;32m"
#define C_FIXIT "\033[0;32m"

void fe_diag_init(FILE *to, bool color)
{
    stream = to;
    use_color = color;
    main_src = NULL;
    n_errors = 0;
}

void fe_diag_set_main(const fe_source *src)
{
    main_src = src;
}

void fe_diag_done(void)
{
    stream = NULL;
    use_color = false;
    main_src = NULL;
}

static FILE *out(void)
{
    return stream ? stream : stderr;
}

static void color(const char *code)
{
    if (use_color)
        fputs(code, out());
}

static const char *severity_name(fe_severity sev)
{
    switch (sev) {
    case FE_NOTE:
        return "note";
    case FE_WARNING:
        return "warning";
    case FE_ERROR:
        return "error";
    case FE_FATAL:
        return "fatal error";
    }
    FE_BUG("bad severity %d", (int)sev);
}

static const char *severity_color(fe_severity sev)
{
    return sev == FE_NOTE ? C_NOTE : sev == FE_WARNING ? C_WARNING : C_ERROR;
}

/* The displayed column (tabs expanded to 8) of byte `col` of a line. */
static int display_col(const char *line, unsigned len, unsigned col)
{
    int d = 0;
    for (unsigned i = 0; i < col && i < len; i++)
        d = line[i] == '\t' ? (d / 8 + 1) * 8 : d + 1;
    return d + (col > len ? (int)(col - len) : 0);
}

static void print_line(const char *line, unsigned len, int lineno)
{
    fprintf(out(), "%5d | ", lineno);
    int d = 0;
    for (unsigned i = 0; i < len; i++) {
        if (line[i] == '\t') {
            do
                fputc(' ', out());
            while (++d % 8);
        } else {
            fputc(line[i], out());
            d++;
        }
    }
    fputc('\n', out());
}

/* Marks columns [b, e) of the line (display columns) with c, clipped. */
static void mark(char *marks, int width, int b, int e, char c)
{
    for (int i = b; i < e && i < width; i++)
        if (i >= 0 && marks[i] != '^')
            marks[i] = c;
}

static void print_fixits(const fe_source *src, int line, const char *text, unsigned len,
                         const fe_fixit *fixits, int n_fixits);

/* The source line, carets and fix-it line for a location in src. */
static void print_snippet(const fe_source *src, unsigned off, const fe_range *ranges, int n_ranges,
                          const fe_fixit *fixits, int n_fixits)
{
    int line, col;
    fe_source_pos(src, off, &line, &col);
    unsigned len;
    const char *text = fe_source_line_text(src, line, &len);
    unsigned start = src->lines[line - 1], stop = start + len;
    /* the caret may be past the line's text (on its line break) */
    int caret = display_col(text, len, (unsigned)col - 1);
    int width = display_col(text, len, len);
    width = (caret > width ? caret : width) + 2;
    char *marks = calloc((size_t)width + 1, 1);
    memset(marks, ' ', (size_t)width);
    marks[caret] = '^';
    for (int i = 0; i < n_ranges; i++) {
        if (ranges[i].end <= start || ranges[i].begin > stop)
            continue;
        unsigned b = ranges[i].begin < start ? start : ranges[i].begin;
        unsigned e = ranges[i].end > stop ? stop : ranges[i].end;
        mark(marks, width, display_col(text, len, b - start), display_col(text, len, e - start),
             '~');
    }
    int last = width - 1;
    while (last > 0 && marks[last] == ' ')
        last--;
    marks[last + 1] = '\0';
    print_line(text, len, line);
    fputs("      | ", out());
    color(C_CARET);
    fputs(marks, out());
    color(C_RESET);
    fputc('\n', out());
    free(marks);
    print_fixits(src, line, text, len, fixits, n_fixits);
}

/* The fix-its on the caret's line, each at its column, on one line. */
static void print_fixits(const fe_source *src, int line, const char *text, unsigned len,
                         const fe_fixit *fixits, int n_fixits)
{
    unsigned start = src->lines[line - 1], stop = start + len;
    fe_buf b = {0};
    int width = 0;
    for (int i = 0; i < n_fixits; i++) {
        const fe_fixit *f = &fixits[i];
        if (f->range.begin < start || f->range.begin > stop || strchr(f->text, '\n'))
            continue;
        int c = display_col(text, len, f->range.begin - start);
        while (width < c) {
            fe_buf_putc(&b, ' ');
            width++;
        }
        fe_buf_puts(&b, f->text);
        width += (int)strlen(f->text);
    }
    if (b.len) {
        fputs("      | ", out());
        color(C_FIXIT);
        fputs(b.data, out());
        color(C_RESET);
        fputc('\n', out());
    }
    fe_buf_free(&b);
}

void fe_diag_at(fe_severity sev, const fe_source *src, unsigned off, const fe_range *ranges,
                int n_ranges, const fe_fixit *fixits, int n_fixits, const char *msg)
{
    if (sev >= FE_ERROR)
        n_errors++;
    color(C_BOLD);
    if (src) {
        int line, col;
        fe_source_pos(src, off, &line, &col);
        fprintf(out(), "%s:%d:%d: ", src->path, line, col);
    } else {
        fputs("agc: ", out());
    }
    color(severity_color(sev));
    fprintf(out(), "%s: ", severity_name(sev));
    color(C_RESET);
    color(C_BOLD);
    fputs(msg, out());
    color(C_RESET);
    fputc('\n', out());
    if (src)
        print_snippet(src, off, ranges, n_ranges, fixits, n_fixits);
}

static void report(fe_severity sev, fe_range at, const fe_fixit *fix, const char *fmt, va_list ap)
{
    if (!main_src)
        FE_BUG("diagnostic before fe_diag_set_main");
    fe_buf msg = {0};
    fe_buf_vprintf(&msg, fmt, ap);
    fe_range r = at;
    bool has_range = r.end > r.begin + 1;
    fe_diag_at(sev, main_src, at.begin, has_range ? &r : NULL, has_range, fix, fix != NULL,
               msg.data);
    fe_buf_free(&msg);
}

void fe_error(fe_range at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report(FE_ERROR, at, NULL, fmt, ap);
    va_end(ap);
}

void fe_error_fix(fe_range at, fe_fixit fix, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report(FE_ERROR, at, &fix, fmt, ap);
    va_end(ap);
}

void fe_note(fe_range at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report(FE_NOTE, at, NULL, fmt, ap);
    va_end(ap);
}

void fe_note_fix(fe_range at, fe_fixit fix, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report(FE_NOTE, at, &fix, fmt, ap);
    va_end(ap);
}

void fe_diag_plain(fe_severity sev, const char *fmt, ...)
{
    fe_buf msg = {0};
    va_list ap;
    va_start(ap, fmt);
    fe_buf_vprintf(&msg, fmt, ap);
    va_end(ap);
    fe_diag_at(sev, NULL, 0, NULL, 0, NULL, 0, msg.data);
    fe_buf_free(&msg);
}

int fe_diag_errors(void)
{
    return n_errors;
}

void fe_diag_summary(void)
{
    if (n_errors)
        fprintf(out(), "%d error%s generated.\n", n_errors, n_errors == 1 ? "" : "s");
}
