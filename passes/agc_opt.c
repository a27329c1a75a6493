/*
 * agc-opt - reads a function in the text IR, verifies it and prints it
 * back (docs/ir.md). Later it runs passes between parsing and printing.
 *
 *   agc-opt [options] [file|-]
 *
 * Exit status: 0 on success, 1 when the input does not parse or verify
 * (the message, "file:line:col: error: ...", goes to stderr), 2 on a bad
 * command line.
 */
#include "ir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct options {
    const char *input; /* NULL or "-": stdin */
    bool verify_only;
    bool no_verify;
} options;

static void usage(FILE *out)
{
    fputs("usage: agc-opt [options] [file|-]\n"
          "Reads a function in agc's text IR (stdin if no file or '-'), verifies\n"
          "it and prints it.\n"
          "\n"
          "options:\n"
          "  --verify-only  print nothing when the function is valid\n"
          "  --no-verify    skip the verifier (parse and print only)\n"
          "  --help         show this help\n"
          "  --version      show the version\n",
          out);
}

/* 0 to go on, else the exit status + 1 (so that 0 means "continue"). */
static int parse_args(int argc, char **argv, options *o)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 1;
        } else if (strcmp(a, "--version") == 0) {
            printf("agc-opt (agc) %s\n", AG_VERSION);
            return 1;
        } else if (strcmp(a, "--verify-only") == 0) {
            o->verify_only = true;
        } else if (strcmp(a, "--no-verify") == 0) {
            o->no_verify = true;
        } else if (a[0] == '-' && a[1] != '\0') {
            fprintf(stderr, "agc-opt: unknown option '%s'\n", a);
            usage(stderr);
            return 3;
        } else if (o->input) {
            fprintf(stderr, "agc-opt: more than one input file ('%s' and '%s')\n", o->input, a);
            usage(stderr);
            return 3;
        } else {
            o->input = a;
        }
    }
    if (o->verify_only && o->no_verify) {
        fputs("agc-opt: --verify-only and --no-verify exclude each other\n", stderr);
        return 3;
    }
    return 0;
}

/* The whole stream as a NUL-terminated string; NULL (reported) on error. */
static char *read_all(FILE *f, const char *name)
{
    size_t len = 0, cap = 4096;
    char *buf = rt_xmalloc(cap);
    size_t got;
    while ((got = fread(buf + len, 1, cap - len - 1, f)) > 0) {
        len += got;
        if (cap - len - 1 == 0)
            buf = rt_xrealloc(buf, cap *= 2);
    }
    if (ferror(f)) {
        fprintf(stderr, "agc-opt: cannot read %s\n", name);
        free(buf);
        return NULL;
    }
    if (memchr(buf, '\0', len)) {
        fprintf(stderr, "%s: error: the input contains a NUL byte\n", name);
        free(buf);
        return NULL;
    }
    buf[len] = '\0';
    return buf;
}

static char *read_input(const char *path, const char **name)
{
    if (!path || strcmp(path, "-") == 0) {
        *name = "<stdin>";
        return read_all(stdin, *name);
    }
    *name = path;
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "agc-opt: cannot open '%s'\n", path);
        return NULL;
    }
    char *text = read_all(f, path);
    fclose(f);
    return text;
}

/* After a parse error "name:line:col: error: ...", shows that source line
 * and a caret under the column. */
static void show_caret(const char *text, const char *name, const char *err)
{
    size_t n = strlen(name);
    if (strncmp(err, name, n) != 0 || err[n] != ':')
        return;
    char *end;
    long line = strtol(err + n + 1, &end, 10);
    long col = *end == ':' ? strtol(end + 1, &end, 10) : 0;
    if (line < 1 || col < 1)
        return;
    const char *s = text;
    for (long i = 1; i < line; i++) {
        s = strchr(s, '\n');
        if (!s)
            return;
        s++;
    }
    int len = (int)strcspn(s, "\n");
    fprintf(stderr, "%.*s\n", len, s);
    for (long i = 1; i < col && i <= len; i++)
        fputc(s[i - 1] == '\t' ? '\t' : ' ', stderr);
    fputs("^\n", stderr);
}

int main(int argc, char **argv)
{
    options o = {0};
    int stop = parse_args(argc, argv, &o);
    if (stop)
        return stop - 1;
    const char *name;
    char *text = read_input(o.input, &name);
    if (!text)
        return 1;
    char err[1024];
    ir_function *fn = ir_parse(text, name, err, sizeof err);
    if (!fn) {
        fprintf(stderr, "%s\n", err);
        show_caret(text, name, err);
        free(text);
        return 1;
    }
    free(text);
    int status = 0;
    if (!o.no_verify && !ir_verify(fn, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        status = 1;
    } else if (!o.verify_only) {
        ir_print(fn, stdout);
    }
    ir_function_free(fn);
    if (fflush(stdout) != 0)
        status = 1;
    return status;
}
