/*
 * precheck.c - what agc rejects in the input's text before libclang sees
 * it, because libclang would not come back from it.
 */
#include "fe.h"

#include <string.h>

/* Whether the identifier ending at `end` is sizeof or an alignof. */
static bool after_type_trait(const fe_source *s, unsigned end)
{
    static const char *const traits[] = {"sizeof", "_Alignof", "alignof", "__alignof",
                                         "__alignof__", NULL};
    unsigned b = end;
    while (b > 0 && fe_is_ident_char(s->text[b - 1]))
        b--;
    for (int i = 0; traits[i]; i++)
        if (strlen(traits[i]) == end - b && memcmp(s->text + b, traits[i], end - b) == 0)
            return true;
    return false;
}

/* clang 17 to 19 never finish parsing a '::' token right after a '(', or
 * after sizeof or alignof, in C (llvm-project issue 195367; fuzzing found
 * it). '::' is not C outside C23 attributes, so agc reports it before
 * libclang sees it: after '(', ',' (where a macro argument may put it
 * after a '('), sizeof and alignof, outside comments, literals and
 * [[...]]. True when there was one. */
bool fe_colon_colon(const fe_source *s)
{
    unsigned prev = 0; /* the last significant character, or 0 */
    unsigned prev_end = 0; /* just past it */
    int attr = 0;      /* [[ ]] depth */
    for (unsigned off = 0; off < s->len;) {
        unsigned next = fe_skip_literal(s, off);
        if (next != off) {
            prev = s->text[off] == '/' ? prev : '"';
            off = next;
            continue;
        }
        char c = s->text[off];
        if (c == '\\' && off + 1 < s->len && fe_is_line_end(s, off + 1)) {
            off += 2; /* a line splice is not a character */
            continue;
        }
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
            off++;
            continue;
        }
        if (c == '[' && off + 1 < s->len && s->text[off + 1] == '[')
            attr++;
        else if (c == ']' && off + 1 < s->len && s->text[off + 1] == ']' && attr > 0)
            attr--;
        if (c == ':' && off + 1 < s->len && s->text[off + 1] == ':' && !attr &&
            (prev == '(' || prev == ',' ||
             (fe_is_ident_char((char)prev) && after_type_trait(s, prev_end)))) {
            fe_error(fe_range_at(off, 2), "'::' is not C; remove it");
            return true;
        }
        prev = (unsigned char)c;
        prev_end = ++off;
    }
    return false;
}

/* The deepest nesting of (), [] and {} together that agc reads. clang
 * stops at the same depth (its -fbracket-depth, 256 by default), but
 * only after expanding the macros inside: 5,000 nested ag_ op macros took
 * it minutes and, on libclang's 8 MiB stack, crashed it. The input's text
 * is nested no deeper than what clang reads after expansion, so agc
 * refuses nothing that clang would accept, except in groups the
 * preprocessor skips. docs/dsl.md lists it among the limits. */
#define MAX_NESTING 256

/* Reports the bracket that opens a level deeper than MAX_NESTING in the
 * input's text (outside comments and literals); true when there was one. */
bool fe_too_deep(const fe_source *s)
{
    int depth = 0, c;
    for (unsigned off = 0; (c = fe_next_code(s, &off)) >= 0; off++) {
        int step = fe_bracket(c);
        if (step > 0) {
            if (++depth > MAX_NESTING) {
                fe_error(fe_range_at(off, 1),
                         "parentheses, brackets and braces nest deeper than %d levels here, "
                         "more than agc (and clang) read; split the expression with variables",
                         MAX_NESTING);
                return true;
            }
        } else if (step < 0 && depth > 0) {
            depth--;
        }
    }
    return false;
}
