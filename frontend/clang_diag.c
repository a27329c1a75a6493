/*
 * clang_diag.c - libclang's own diagnostics (the input is not C, a header
 * is missing), printed in agc's form through diag.c: the location, its
 * ranges and fix-its in whichever file they are, and the notes clang
 * attaches; with one note of agc's where an ag_tensor was used as a C
 * condition.
 */
#include "libclang.h"

#include <string.h>

static fe_range range_in(const fe_source *src, CXSourceRange r, CXFile file)
{
    CXFile f1, f2;
    unsigned l, c, b, e;
    clang_getFileLocation(clang_getRangeStart(r), &f1, &l, &c, &b);
    clang_getFileLocation(clang_getRangeEnd(r), &f2, &l, &c, &e);
    if (!f1 || !f2 || !clang_File_isEqual(f1, file) || !clang_File_isEqual(f2, file) || e < b ||
        e > src->len)
        return (fe_range){0, 0};
    return (fe_range){b, e};
}

static fe_severity severity_of(enum CXDiagnosticSeverity s)
{
    return s == CXDiagnostic_Fatal     ? FE_FATAL
           : s == CXDiagnostic_Error   ? FE_ERROR
           : s == CXDiagnostic_Warning ? FE_WARNING
                                       : FE_NOTE;
}

/* Prints one libclang diagnostic (and its notes) in agc's form. The main
 * file is main_src (its text may not be on disk); others are read. */
static void print_clang_diag(CXDiagnostic d, fe_source *main_src, CXFile main_file)
{
    CXFile file;
    unsigned line, col, off;
    clang_getFileLocation(clang_getDiagnosticLocation(d), &file, &line, &col, &off);
    const char *msg = fe_clang_str(clang_getDiagnosticSpelling(d));
    fe_source *src = NULL;
    if (file && main_file && clang_File_isEqual(file, main_file))
        src = main_src;
    else if (file)
        src = fe_source_load(fe_clang_str(clang_getFileName(file)));
    if (src && off > src->len)
        src = NULL; /* the file changed since libclang read it */
    fe_range ranges[8];
    fe_fixit fixits[8];
    int nr = 0, nf = 0;
    if (src) {
        unsigned n = clang_getDiagnosticNumRanges(d);
        for (unsigned i = 0; i < n && nr < 8; i++) {
            fe_range r = range_in(src, clang_getDiagnosticRange(d, i), file);
            if (r.end > r.begin)
                ranges[nr++] = r;
        }
        n = clang_getDiagnosticNumFixIts(d);
        for (unsigned i = 0; i < n && nf < 8; i++) {
            CXSourceRange fr;
            const char *text = fe_clang_str(clang_getDiagnosticFixIt(d, i, &fr));
            fe_range r = range_in(src, fr, file);
            fixits[nf++] = (fe_fixit){r, text};
        }
    }
    fe_diag_at(severity_of(clang_getDiagnosticSeverity(d)), src, off, ranges, nr, fixits, nf, msg);
    if (src && nr > 0 && strstr(msg, "'ag_tensor'") &&
        (strstr(msg, "requires expression of scalar type") ||
         strstr(msg, "arithmetic or pointer type is required"))) {
        fe_range r = ranges[0];
        fe_fixit fix = {r, fe_format("ag_bool(%.*s)", (int)(r.end - r.begin), src->text + r.begin)};
        fe_diag_at(FE_NOTE, src, r.begin, &r, 1, &fix, 1,
                   "an ag_tensor is not a C condition: write ag_bool(t) to test its value; "
                   "agc stages the condition");
    }
    CXDiagnosticSet kids_set = clang_getChildDiagnostics(d);
    unsigned nk = clang_getNumDiagnosticsInSet(kids_set);
    for (unsigned i = 0; i < nk; i++) {
        CXDiagnostic k = clang_getDiagnosticInSet(kids_set, i);
        print_clang_diag(k, main_src, main_file);
        clang_disposeDiagnostic(k);
    }
}

bool fe_clang_errors(CXTranslationUnit tu, fe_source *main_src, CXFile main_file)
{
    bool ok = true;
    unsigned n = clang_getNumDiagnostics(tu);
    for (unsigned i = 0; i < n; i++) {
        CXDiagnostic d = clang_getDiagnostic(tu, i);
        if (clang_getDiagnosticSeverity(d) >= CXDiagnostic_Error) {
            print_clang_diag(d, main_src, main_file);
            ok = false;
        }
        clang_disposeDiagnostic(d);
    }
    return ok;
}
