/*
 * args.c - the compiler's arguments for the input: those of its command
 * in the compilation database (-p), then the command line's, then what
 * agc adds (-std=gnu11 unless one was given, the directories of ag.h,
 * and for libclang clang's resource directory). libclang parses with
 * them; the C compiler that builds the staged C ahead of time
 * (build.c) gets the same but the resource directory.
 */
#include "fe.h"

#include <string.h>

#ifndef AGC_CLANG_RESOURCE_DIR
#define AGC_CLANG_RESOURCE_DIR ""
#endif

/* libclang's arguments: the compilation database's flags (-p), then the
 * command line's, then what agc adds. NULL after an error. */
static const char **compiler_argv(const fe_options *opt, int *argc, bool for_libclang)
{
    fe_vec db = {0};
    if (opt->compdb_dir && !fe_compdb_flags(opt->compdb_dir, opt->input, &db))
        return NULL;
    const char **argv = fe_alloc((size_t)(db.n + opt->n_clang_args + 8) * sizeof *argv);
    int n = 0;
    bool has_std = false;
    for (int i = 0; i < db.n; i++) {
        argv[n++] = db.items[i];
        has_std |= strncmp(db.items[i], "-std=", 5) == 0;
    }
    for (int i = 0; i < opt->n_clang_args; i++) {
        argv[n++] = opt->clang_args[i];
        has_std |= strncmp(opt->clang_args[i], "-std=", 5) == 0;
    }
    if (!has_std)
        argv[n++] = "-std=gnu11";
    const char *dirs[2];
    int n_dirs = fe_ag_include_dirs(dirs);
    for (int i = 0; i < n_dirs; i++) {
        argv[n++] = "-isystem";
        argv[n++] = dirs[i];
    }
    if (for_libclang && *AGC_CLANG_RESOURCE_DIR) {
        argv[n++] = "-resource-dir";
        argv[n++] = AGC_CLANG_RESOURCE_DIR;
    }
    *argc = n;
    return argv;
}

const char **fe_clang_args(const fe_options *opt, int *argc)
{
    return compiler_argv(opt, argc, true);
}

const char **fe_cc_flags(const fe_options *opt, int *argc)
{
    return compiler_argv(opt, argc, false);
}
