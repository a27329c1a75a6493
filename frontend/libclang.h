/*
 * libclang.h - the frontend's side that reads libclang's translation
 * unit, inside frontend/ only (fe.h stays free of libclang): parse.c runs
 * libclang and hands the unit to ast.c (agc's tree), clang_diag.c
 * (libclang's errors) and includes.c (the includes agc refused).
 */
#ifndef FE_LIBCLANG_H
#define FE_LIBCLANG_H

#include "fe.h"

#include <clang-c/Index.h>

/* The arena's copy of s ("" for none); disposes s. */
static inline char *fe_clang_str(CXString s)
{
    char *r = fe_strdup(clang_getCString(s) ? clang_getCString(s) : "");
    clang_disposeString(s);
    return r;
}

/* ast.c: appends to u->funcs an fe_func for every AG_FUNCTION defined in
 * `file`, the main file of tu (whose text is src), in file order. */
void fe_ast_build(CXTranslationUnit tu, fe_source *src, CXFile file, fe_unit *u);

/* clang_diag.c: prints libclang's errors in agc's form (main_src is the
 * main file's text, which may not be on disk); true when there were
 * none. */
bool fe_clang_errors(CXTranslationUnit tu, fe_source *main_src, CXFile main_file);

/* includes.c: reports every #include that libclang followed to one of
 * the blocked files (fe_blocked_includes); true if any. */
bool fe_report_blocked(CXTranslationUnit tu, fe_source *main_src, CXFile main_file,
                       const fe_vec *blocked);

#endif
