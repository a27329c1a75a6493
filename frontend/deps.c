/*
 * deps.c - the Make dependency file of -MD / -MMD, like cc's:
 *
 *   target: input.c header1.h \
 *     header2.h
 *
 * listing the input and every header it includes (as libclang saw them),
 * with -MP a phony target per header so that deleting a header does not
 * break the build.
 *
 * Its default name is the output's with ".d" appended (out.ag.c.d), not
 * cc's rule (the last suffix replaced): `cc -MMD -c out.ag.c -o out.ag.o`
 * writes out.ag.d, and would overwrite agc's file, which alone says
 * that the staged C depends on the headers. And it never replaces a file
 * the run reads or writes: the input, a header it includes, the output.
 */
#include "fe.h"

#include "files.h"

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

/* -MF, or the output's name (the input's with -o -) and ".d". */
const char *fe_deps_file(const fe_options *opt)
{
    if (opt->mf)
        return opt->mf;
    const char *base = strcmp(opt->output, "-") == 0 ? opt->input : opt->output;
    return fe_format("%s.d", base);
}

/* Whether the dependency file is `path`, by identity (sf_same_file). */
static bool deps_file_is(const fe_options *opt, const char *path)
{
    return path && strcmp(path, "-") != 0 && sf_same_file(fe_deps_file(opt), path);
}

bool fe_deps_file_apart(const fe_options *opt, const char *const *outs, int n_outs,
                        const fe_vec *read)
{
    for (int i = 0; i < n_outs; i++)
        if (deps_file_is(opt, outs[i])) {
            fe_diag_plain(FE_ERROR, "the dependency file '%s' is the output file '%s'",
                          fe_deps_file(opt), outs[i]);
            return false;
        }
    for (int i = 0; read && i < read->n; i++)
        if (deps_file_is(opt, read->items[i])) {
            fe_diag_plain(FE_ERROR, "the dependency file '%s' is '%s', which the input "
                          "includes; -MF must name a file of its own",
                          fe_deps_file(opt), (const char *)read->items[i]);
            return false;
        }
    return true;
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
