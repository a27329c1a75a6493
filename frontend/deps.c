/*
 * deps.c - the Make dependency file of -MD / -MMD, like cc's:
 *
 *   target: input.c header1.h \
 *     header2.h
 *
 * listing the input and every header it includes (as libclang saw them),
 * with -MP a phony target per header so that deleting a header does not
 * break the build.
 */
#include "fe.h"

#include <string.h>

/* Escapes a path for a Make rule: spaces, '#' and '$'. */
static void put_path(fe_buf *b, const char *path)
{
    for (const char *p = path; *p; p++) {
        if (*p == ' ' || *p == '#' || *p == '\\')
            fe_buf_putc(b, '\\');
        if (*p == '$')
            fe_buf_putc(b, '$');
        fe_buf_putc(b, *p);
    }
}

/* -MF, or cc's default: the output with its last suffix replaced by .d. */
const char *fe_deps_file(const fe_options *opt)
{
    if (opt->mf)
        return opt->mf;
    const char *base = strcmp(opt->output, "-") == 0 ? opt->input : opt->output;
    const char *slash = strrchr(base, '/');
    const char *dot = strrchr(base, '.');
    size_t n = dot && (!slash || dot > slash) ? (size_t)(dot - base) : strlen(base);
    return fe_format("%.*s.d", (int)n, base);
}

char *fe_deps_text(const fe_options *opt, const fe_vec *deps, size_t *len)
{
    const char *target = opt->mt ? opt->mt : opt->output;
    fe_buf b = {0};
    if (opt->mt)
        fe_buf_puts(&b, target); /* -MT is taken as written, like cc */
    else
        put_path(&b, target);
    fe_buf_puts(&b, ":");
    int col = (int)b.len + 1;
    fe_buf_putc(&b, ' ');
    put_path(&b, opt->input);
    col += (int)strlen(opt->input);
    for (int i = 0; i < deps->n; i++) {
        const char *d = deps->items[i];
        if (col + (int)strlen(d) > 78) {
            fe_buf_puts(&b, " \\\n ");
            col = 1;
        }
        fe_buf_putc(&b, ' ');
        put_path(&b, d);
        col += (int)strlen(d) + 1;
    }
    fe_buf_putc(&b, '\n');
    for (int i = 0; opt->mp && i < deps->n; i++) {
        fe_buf_putc(&b, '\n');
        put_path(&b, deps->items[i]);
        fe_buf_puts(&b, ":\n");
    }
    *len = b.len;
    return b.data;
}
