/*
 * parse.c - libclang's parse of the input: the checks before it
 * (precheck.c), its arguments (args.c), the input's text and the files it
 * must not read given as unsaved files (includes.c), then its errors
 * (clang_diag.c, includes.c), agc's tree of every AG_FUNCTION (ast.c) and
 * the files the input included (for -MD).
 */
#include "libclang.h"

#include <errno.h>
#include <string.h>

typedef struct deps_walk {
    fe_vec *deps;
    CXTranslationUnit tu;
    bool skip_system;
} deps_walk;

static void visit_inclusion(CXFile f, CXSourceLocation *stack, unsigned depth, CXClientData d)
{
    (void)stack;
    if (depth == 0)
        return;
    deps_walk *w = d;
    fe_vec *deps = w->deps;
    if (w->skip_system && clang_Location_isInSystemHeader(clang_getLocation(w->tu, f, 1, 1)))
        return;
    char *name = fe_clang_str(clang_getFileName(f));
    for (int i = 0; i < deps->n; i++)
        if (strcmp(deps->items[i], name) == 0)
            return;
    fe_vec_push(deps, name);
}

fe_unit *fe_parse(const fe_options *opt, fe_vec *deps)
{
    fe_source *src = opt->contents ? fe_source_add(opt->input, opt->contents, opt->contents_len)
                                   : fe_source_load(opt->input);
    if (!src) {
        fe_diag_plain(FE_ERROR, "cannot read '%s': %s", opt->input,
                      errno == EFBIG ? "it is larger than 256 MiB" : strerror(errno));
        return NULL;
    }
    fe_diag_set_main(src);
    if (fe_colon_colon(src) || fe_too_deep(src))
        return NULL;
    int argc;
    const char **argv = fe_clang_args(opt, &argc);
    if (!argv)
        return NULL;
    /* The text agc rewrites is the text libclang parses, even when the
     * file changes on disk meanwhile: libclang gets it as an unsaved file;
     * and the included files it must not read as empty ones. */
    fe_vec blocked = {0};
    fe_blocked_includes(src, argv, argc, &blocked);
    struct CXUnsavedFile *unsaved = fe_alloc((size_t)(blocked.n + 1) * sizeof *unsaved);
    unsaved[0] = (struct CXUnsavedFile){opt->input, src->text, src->len};
    for (int i = 0; i < blocked.n; i++)
        unsaved[i + 1] =
            (struct CXUnsavedFile){((fe_blocked_file *)blocked.items[i])->path, "", 0};
    /* libclang keeps the groups the preprocessor skipped (where an #embed
     * of a blocked file is no error) only in a detailed record */
    unsigned flags = CXTranslationUnit_None;
    for (int i = 0; i < blocked.n; i++)
        if (((fe_blocked_file *)blocked.items[i])->embeds.n)
            flags = CXTranslationUnit_DetailedPreprocessingRecord;
    fe_step("parse %s with libclang: %s", opt->input, fe_join_args(argv, argc));
    CXIndex index = clang_createIndex(0, 0);
    CXTranslationUnit tu = NULL;
    enum CXErrorCode err =
        clang_parseTranslationUnit2(index, opt->input, argv, argc, unsaved,
                                    (unsigned)blocked.n + 1, flags, &tu);
    if (err != CXError_Success || !tu) {
        fe_diag_plain(FE_ERROR, "libclang could not parse '%s' (error %d)", opt->input, (int)err);
        clang_disposeIndex(index);
        return NULL;
    }
    fe_unit *u = NULL;
    CXFile file = clang_getFile(tu, opt->input);
    bool included_blocked = fe_report_blocked(tu, src, file, &blocked);
    if (fe_clang_errors(tu, src, file) && !included_blocked) {
        u = fe_alloc(sizeof *u);
        u->src = src;
        fe_ast_build(tu, src, file, u);
        deps_walk dw = {deps, tu, opt->mmd};
        clang_getInclusions(tu, visit_inclusion, &dw);
    }
    clang_disposeTranslationUnit(tu);
    clang_disposeIndex(index);
    return u;
}

