/*
 * driver.c - agc's command line and its pipeline.
 *
 *   agc [options] input.c -o output.ag.c
 *
 * Exit status: 0 on success, 1 on errors in the user's code (or when the
 * output cannot be written), 2 on bad usage. The output is written to a
 * temporary file and renamed, so a failed run never leaves a partial file
 * and never touches an existing one.
 */
#include "fe.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char usage[] =
    "usage: agc [options] input.c -o output.ag.c\n"
    "\n"
    "Converts the AG_FUNCTIONs of a C file into staged C (AutoGraph for C).\n"
    "\n"
    "options:\n"
    "  -o FILE                 write the output to FILE ('-' for stdout)\n"
    "  -p BUILD_DIR            take the input's flags (-I, -D, -std=...) from\n"
    "                          BUILD_DIR/compile_commands.json; other flags add to them\n"
    "  -I DIR, -isystem DIR    add an include directory (also -iquote, -idirafter)\n"
    "  -D NAME[=VALUE], -U NAME\n"
    "                          define or undefine a macro\n"
    "  -std=STD                the C standard (default gnu11)\n"
    "  -include FILE           include FILE first\n"
    "  -MD, -MMD               write a Make dependency file (-MMD: without system headers)\n"
    "  -MF FILE                the dependency file (default: the output with .d)\n"
    "  -MT TARGET              the target of the dependency rule (default: the output)\n"
    "  -MP                     add a phony target for each header\n"
    "  -fcolor-diagnostics, -fno-color-diagnostics\n"
    "                          force colors in diagnostics on or off\n"
    "  -- ARGS                 pass the remaining arguments to libclang\n"
    "  --version               print the version\n"
    "  --help                  print this help\n";

FE_PRINTF(1, 2) static int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "agc: error: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\nusage: agc [options] input.c -o output.ag.c (see agc --help)\n");
    va_end(ap);
    return 2;
}

static bool default_color(void)
{
    const char *term = getenv("TERM");
    return isatty(2) && term && strcmp(term, "dumb") != 0;
}

/* Flags taking a value, glued (-Idir) or separate (-I dir). */
static const char *const value_flags[] = {"-I",      "-D",         "-U",       "-isystem",
                                          "-iquote", "-idirafter", "-include", NULL};

/* Parses argv; returns 0 when done, 1 when --help/--version printed,
 * 2 on bad usage. */
static int parse_args(int argc, char **argv, fe_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->color = default_color();
    opt->clang_args = fe_alloc((size_t)(2 * argc + 1) * sizeof *opt->clang_args);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            while (++i < argc)
                opt->clang_args[opt->n_clang_args++] = argv[i];
            break;
        }
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(usage, stdout);
            return 1;
        }
        if (strcmp(a, "--version") == 0) {
            printf("agc %s (AutoGraph for C), built with libclang 19\n", AGC_VERSION_STRING);
            return 1;
        }
        if (strcmp(a, "-o") == 0 || strcmp(a, "-MF") == 0 || strcmp(a, "-MT") == 0 ||
            strcmp(a, "-p") == 0) {
            if (i + 1 >= argc)
                return usage_error("missing argument to '%s'", a);
            const char **dst = a[1] == 'o'   ? &opt->output
                               : a[1] == 'p' ? &opt->compdb_dir
                               : a[2] == 'F' ? &opt->mf
                                             : &opt->mt;
            *dst = argv[++i];
            continue;
        }
        if (strncmp(a, "-p=", 3) == 0) {
            opt->compdb_dir = a + 3;
            continue;
        }
        if (strncmp(a, "-o", 2) == 0) {
            opt->output = a + 2;
            continue;
        }
        if (strcmp(a, "-MD") == 0 || strcmp(a, "-MMD") == 0) {
            opt->md = true;
            opt->mmd = a[2] == 'M';
            continue;
        }
        if (strcmp(a, "-MP") == 0) {
            opt->mp = true;
            continue;
        }
        if (strcmp(a, "-fcolor-diagnostics") == 0 || strcmp(a, "-fno-color-diagnostics") == 0) {
            opt->color = a[2] == 'c';
            continue;
        }
        if (strncmp(a, "-std=", 5) == 0) {
            opt->clang_args[opt->n_clang_args++] = a;
            continue;
        }
        bool matched = false;
        for (int k = 0; value_flags[k] && !matched; k++) {
            size_t n = strlen(value_flags[k]);
            if (strncmp(a, value_flags[k], n) != 0)
                continue;
            matched = true;
            opt->clang_args[opt->n_clang_args++] = a;
            if (a[n] == '\0') {
                if (i + 1 >= argc)
                    return usage_error("missing argument to '%s'", a);
                opt->clang_args[opt->n_clang_args++] = argv[++i];
            }
        }
        if (matched)
            continue;
        if (a[0] == '-' && a[1] != '\0')
            return usage_error("unknown option '%s'", a);
        if (opt->input)
            return usage_error("more than one input file ('%s')", a);
        opt->input = a;
    }
    if (!opt->input)
        return usage_error("no input file");
    if (!opt->output)
        return usage_error("no output file: use -o FILE (or -o - for stdout)");
    if (opt->compdb_dir && !*opt->compdb_dir)
        return usage_error("-p needs a build directory");
    return 0;
}

bool fe_write_file(const char *path, const char *data, size_t len)
{
    if (strcmp(path, "-") == 0) {
        bool ok = fwrite(data, 1, len, stdout) == len && fflush(stdout) == 0;
        if (!ok)
            fe_diag_plain(FE_ERROR, "cannot write to stdout: %s", strerror(errno));
        return ok;
    }
    char *tmp = fe_format("%s.tmpXXXXXX", path);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        fe_diag_plain(FE_ERROR, "cannot create '%s': %s", tmp, strerror(errno));
        return false;
    }
    mode_t mask = umask(0);
    umask(mask);
    fchmod(fd, 0666 & ~mask);
    FILE *f = fdopen(fd, "wb");
    bool ok = f && fwrite(data, 1, len, f) == len;
    ok = (f ? fclose(f) == 0 : (close(fd), false)) && ok;
    if (ok && rename(tmp, path) != 0) {
        fe_diag_plain(FE_ERROR, "cannot write '%s': %s", path, strerror(errno));
        ok = false;
    } else if (!ok) {
        fe_diag_plain(FE_ERROR, "cannot write '%s': %s", tmp, strerror(errno));
    }
    if (!ok)
        unlink(tmp);
    return ok;
}

/* Converts, then writes the output and the dependency file. */
static int run(const fe_options *opt)
{
    fe_result res;
    if (fe_convert(opt, &res) != 0)
        return 1;
    bool ok = fe_write_file(opt->output, res.output, res.output_len) &&
              (!res.deps || fe_write_file(fe_deps_file(opt), res.deps, res.deps_len));
    fe_result_free(&res);
    return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
    fe_options opt;
    int status = parse_args(argc, argv, &opt);
    if (status == 0)
        status = run(&opt);
    else if (status == 1)
        status = 0;
    fe_arena_free();
    return status;
}
