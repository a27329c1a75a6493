/*
 * ast.c - libclang's AST of the input file, turned into agc's own tree.
 *
 * For each AG_FUNCTION (a definition in the main file carrying
 * annotate("ag.function")) it builds an fe_func: the statements with their
 * source ranges (byte offsets: the rewriter copies the user's text by
 * offset, so macros stay as written), every variable reference with its
 * mode (read, write), and every condition as an fe_cond tree. A condition
 * is staged when it calls ag_bool_at, which is what ag_bool(t) expands to.
 *
 * libclang gives reliable file positions for the start of every node and
 * for the end of nodes outside macro arguments; the ends of nodes nested in
 * macro arguments are wrong, so the ranges of ag_bool's argument and of
 * staged ?: expressions are found by scanning the text from their start.
 */
#include "libclang.h"

#include <stdlib.h>
#include <string.h>

typedef struct parser {
    CXTranslationUnit tu;
    fe_source *src;
    CXFile file;
    fe_func *fn;
    fe_vec ternaries; /* fe_ternary* found in the function, to dedupe */
    int c_cond;       /* > 0: walking an operand a C ?:, && or || may skip */
    struct bool_memo *memo; /* contains_bool's answers for && and || */
    unsigned memo_cap, memo_n;
} parser;

/* ------------------------------------------------------------ positions */

static bool loc_off(const parser *p, CXSourceLocation loc, unsigned *off)
{
    CXFile f;
    unsigned line, col, o;
    clang_getFileLocation(loc, &f, &line, &col, &o);
    if (!f || !clang_File_isEqual(f, p->file))
        return false;
    *off = o;
    return true;
}

static unsigned start_of(const parser *p, CXCursor c)
{
    unsigned off = 0;
    loc_off(p, clang_getRangeStart(clang_getCursorExtent(c)), &off);
    return off;
}

static fe_range range_of(const parser *p, CXCursor c)
{
    CXSourceRange r = clang_getCursorExtent(c);
    fe_range out = {0, 0};
    loc_off(p, clang_getRangeStart(r), &out.begin);
    loc_off(p, clang_getRangeEnd(r), &out.end);
    if (out.end < out.begin)
        out.end = out.begin;
    return out;
}

/* Whether a location comes from a macro's expansion (its spelling is not
 * where it appears). */
static bool in_macro(CXSourceLocation loc)
{
    CXFile f1, f2;
    unsigned l1, c1, o1, l2, c2, o2;
    clang_getExpansionLocation(loc, &f1, &l1, &c1, &o1);
    clang_getSpellingLocation(loc, &f2, &l2, &c2, &o2);
    return o1 != o2 || !f1 || !f2 || !clang_File_isEqual(f1, f2);
}

static bool cursor_in_macro(CXCursor c)
{
    return in_macro(clang_getRangeStart(clang_getCursorExtent(c)));
}

static int line_of(const parser *p, unsigned off)
{
    return fe_source_line(p->src, off);
}

/* Trims white space (and comments) at both ends of r. */
static fe_range trim(const parser *p, fe_range r)
{
    unsigned b = fe_skip_space(p->src, r.begin);
    unsigned e = fe_skip_space_back(p->src, r.end);
    if (e < b)
        e = b;
    return (fe_range){b, e};
}

/* Strips parentheses around the whole of r. */
static fe_range strip_parens(const parser *p, fe_range r)
{
    for (;;) {
        r = trim(p, r);
        if (r.end - r.begin < 2 || p->src->text[r.begin] != '(')
            return r;
        if (fe_match_paren(p->src, r.begin) != r.end)
            return r;
        r = (fe_range){r.begin + 1, r.end - 1};
    }
}

/* The end of a statement that ends with ';': past the ';' after off. */
static unsigned past_semicolon(const parser *p, unsigned off)
{
    unsigned s = fe_skip_space(p->src, off);
    return s < p->src->len && p->src->text[s] == ';' ? s + 1 : off;
}

static const char *ident_at(const parser *p, unsigned off, unsigned *end)
{
    unsigned e = off;
    while (e < p->src->len && fe_is_ident_char(p->src->text[e]))
        e++;
    *end = e;
    return fe_strndup(p->src->text + off, e - off);
}

/* ------------------------------------------------------------- children */

typedef struct kids {
    CXCursor *c;
    int n, cap;
} kids;

static enum CXChildVisitResult collect_kid(CXCursor c, CXCursor parent, CXClientData d)
{
    (void)parent;
    kids *k = d;
    if (k->n == k->cap) {
        int cap = k->cap ? k->cap * 2 : 8;
        CXCursor *nc = fe_alloc((size_t)cap * sizeof *nc);
        if (k->n)
            memcpy(nc, k->c, (size_t)k->n * sizeof *nc);
        k->c = nc;
        k->cap = cap;
    }
    k->c[k->n++] = c;
    return CXChildVisit_Continue;
}

static kids children(CXCursor c)
{
    kids k = {0};
    clang_visitChildren(c, collect_kid, &k);
    return k;
}

/* Skips implicit casts (exposed as UnexposedExpr) and parentheses. */
static CXCursor strip(CXCursor c)
{
    for (;;) {
        enum CXCursorKind k = clang_getCursorKind(c);
        if (k != CXCursor_UnexposedExpr && k != CXCursor_ParenExpr)
            return c;
        kids ks = children(c);
        if (ks.n != 1)
            return c;
        c = ks.c[0];
    }
}

static const char *callee_name(CXCursor call)
{
    CXCursor f = clang_getCursorReferenced(call);
    if (clang_Cursor_isNull(f))
        return "";
    return fe_clang_str(clang_getCursorSpelling(f));
}

static bool is_ag_bool_call(CXCursor c)
{
    return clang_getCursorKind(c) == CXCursor_CallExpr && strcmp(callee_name(c), "ag_bool_at") == 0;
}

static enum CXChildVisitResult find_bool(CXCursor c, CXCursor parent, CXClientData d)
{
    (void)parent;
    if (is_ag_bool_call(c)) {
        *(bool *)d = true;
        return CXChildVisit_Break;
    }
    return CXChildVisit_Recurse;
}

/* Whether an && or || contains ag_bool, remembered by cursor: build_cond
 * asks it of every operator of a chain `a && b && c ...`, and a chain is a
 * tree as deep as it is long (((a && b) && c) ...), so searching each
 * operator's operands afresh would be quadratic in the chain's length. */
typedef struct bool_memo {
    CXCursor c;
    bool used, found;
} bool_memo;

static bool_memo *memo_slot(const parser *p, CXCursor c)
{
    unsigned i = clang_hashCursor(c) & (p->memo_cap - 1);
    while (p->memo[i].used && !clang_equalCursors(p->memo[i].c, c))
        i = (i + 1) & (p->memo_cap - 1);
    return &p->memo[i];
}

static void memo_put(parser *p, CXCursor c, bool found)
{
    if (2 * (p->memo_n + 1) > p->memo_cap) {
        bool_memo *old = p->memo;
        unsigned old_cap = p->memo_cap;
        p->memo_cap = old_cap ? 2 * old_cap : 64;
        p->memo = fe_alloc(p->memo_cap * sizeof *p->memo); /* the arena frees the old */
        for (unsigned i = 0; i < old_cap; i++)
            if (old[i].used)
                *memo_slot(p, old[i].c) = old[i];
    }
    bool_memo *m = memo_slot(p, c);
    p->memo_n += !m->used;
    *m = (bool_memo){c, true, found};
}

static bool is_logical(CXCursor c)
{
    if (clang_getCursorKind(c) != CXCursor_BinaryOperator)
        return false;
    enum CXBinaryOperatorKind op = clang_getCursorBinaryOperatorKind(c);
    return op == CXBinaryOperator_LAnd || op == CXBinaryOperator_LOr;
}

static bool contains_bool(parser *p, CXCursor c)
{
    if (is_ag_bool_call(c))
        return true;
    if (!is_logical(c)) {
        bool found = false;
        clang_visitChildren(c, find_bool, &found);
        return found;
    }
    if (p->memo_cap && memo_slot(p, c)->used)
        return memo_slot(p, c)->found;
    kids ks = children(c);
    bool found = false;
    for (int i = 0; i < ks.n && !found; i++)
        found = contains_bool(p, strip(ks.c[i]));
    memo_put(p, c, found);
    return found;
}

/* ---------------------------------------------------------------- types */

static bool canonical_is(CXType t, const char *spelling)
{
    CXType u = clang_getUnqualifiedType(clang_getCanonicalType(t));
    char *s = fe_clang_str(clang_getTypeSpelling(u));
    return strcmp(s, spelling) == 0;
}

/* The width and signedness of a C scalar type (for the C calling
 * convention of functions compiled ahead of time). */
static void scalar_width(CXType t, fe_var *v)
{
    CXType c = clang_getCanonicalType(t);
    if (v->tclass != FE_TY_INT && v->tclass != FE_TY_FLOAT)
        return;
    long long size = clang_Type_getSizeOf(c);
    v->bits = c.kind == CXType_Bool ? 1 : size > 0 ? (int)(size * 8) : 0;
    enum CXTypeKind k = c.kind;
    if (k == CXType_Enum)
        k = clang_getEnumDeclIntegerType(clang_getTypeDeclaration(c)).kind;
    v->is_signed = k == CXType_Char_S || k == CXType_SChar || k == CXType_Short ||
                   k == CXType_Int || k == CXType_Long || k == CXType_LongLong;
}

static fe_tclass classify(CXType t)
{
    CXType c = clang_getCanonicalType(t);
    if (canonical_is(t, "struct ag_tensor"))
        return FE_TY_TENSOR;
    if (canonical_is(t, "struct ag_tensor_array"))
        return FE_TY_TENSOR_ARRAY;
    switch (c.kind) {
    case CXType_Bool:
    case CXType_Char_U:
    case CXType_UChar:
    case CXType_UShort:
    case CXType_UInt:
    case CXType_ULong:
    case CXType_ULongLong:
    case CXType_Char_S:
    case CXType_SChar:
    case CXType_Short:
    case CXType_Int:
    case CXType_Long:
    case CXType_LongLong:
    case CXType_Enum:
        return FE_TY_INT;
    case CXType_Float:
    case CXType_Double:
    case CXType_LongDouble:
        return FE_TY_FLOAT;
    case CXType_Pointer:
        return canonical_is(clang_getPointeeType(c), "struct ag_variable_s")    ? FE_TY_VARIABLE
               : canonical_is(clang_getPointeeType(c), "struct ag_optimizer_s") ? FE_TY_OPTIMIZER
                                                                                : FE_TY_POINTER;
    case CXType_ConstantArray:
    case CXType_IncompleteArray:
    case CXType_VariableArray:
        return FE_TY_ARRAY;
    case CXType_Record:
        return FE_TY_STRUCT;
    default:
        return FE_TY_OTHER;
    }
}

static bool is_array_or_function(CXType t)
{
    CXType c = clang_getCanonicalType(t);
    return c.kind == CXType_ConstantArray || c.kind == CXType_IncompleteArray ||
           c.kind == CXType_VariableArray || c.kind == CXType_FunctionProto ||
           c.kind == CXType_FunctionNoProto;
}

/* "T name" for a declarator: spells pointers to arrays and functions. */
static const char *declare(CXType t, const char *name)
{
    switch (t.kind) {
    case CXType_Pointer: {
        CXType pt = clang_getPointeeType(t);
        const char *q = clang_isConstQualifiedType(t) ? "const " : "";
        const char *d =
            is_array_or_function(pt) && (pt.kind != CXType_Typedef && pt.kind != CXType_Elaborated)
                ? fe_format("(*%s%s)", q, name)
                : fe_format("*%s%s", q, name);
        return declare(pt, d);
    }
    case CXType_ConstantArray:
        return declare(clang_getArrayElementType(t),
                       fe_format("%s[%lld]", name, clang_getArraySize(t)));
    case CXType_IncompleteArray:
        return declare(clang_getArrayElementType(t), fe_format("%s[]", name));
    case CXType_FunctionProto: {
        fe_buf b = {0};
        int n = clang_getNumArgTypes(t);
        for (int i = 0; i < n; i++) {
            fe_buf_printf(&b, "%s%s", i ? ", " : "",
                          fe_clang_str(clang_getTypeSpelling(clang_getArgType(t, (unsigned)i))));
        }
        if (clang_isFunctionTypeVariadic(t))
            fe_buf_puts(&b, n ? ", ..." : "...");
        const char *params = fe_strdup(b.data ? b.data : "void");
        fe_buf_free(&b);
        return declare(clang_getResultType(t), fe_format("%s(%s)", name, params));
    }
    default:
        return fe_format("%s %s", fe_clang_str(clang_getTypeSpelling(t)), name);
    }
}

/* The field (and local) that holds a copy: arrays decay to pointers, top
 * level qualifiers go. */
static const char *field_decl(CXType t, const char *name)
{
    if (t.kind == CXType_ConstantArray || t.kind == CXType_IncompleteArray ||
        t.kind == CXType_VariableArray) {
        CXType elem = clang_getArrayElementType(t);
        bool paren = elem.kind == CXType_ConstantArray || elem.kind == CXType_IncompleteArray;
        return declare(elem, paren ? fe_format("(*%s)", name) : fe_format("*%s", name));
    }
    return declare(clang_getUnqualifiedType(t), name);
}

/* ------------------------------------------------------------ variables */

static fe_var *find_var(const parser *p, unsigned decl_off, const char *name)
{
    for (int i = 0; i < p->fn->vars.n; i++) {
        fe_var *v = p->fn->vars.items[i];
        if (!v->synthetic && v->decl_off == decl_off && strcmp(v->name, name) == 0)
            return v;
    }
    return NULL;
}

static unsigned expr_end(const parser *p, unsigned off);

/* The fe_var of a local variable or parameter; NULL for globals. */
static fe_var *var_of(parser *p, CXCursor decl)
{
    enum CXCursorKind k = clang_getCursorKind(decl);
    if (k != CXCursor_VarDecl && k != CXCursor_ParmDecl)
        return NULL;
    CXCursor owner = clang_getCursorSemanticParent(decl);
    if (clang_getCursorKind(owner) != CXCursor_FunctionDecl)
        return NULL;
    unsigned off;
    if (!loc_off(p, clang_getCursorLocation(decl), &off))
        return NULL;
    const char *name = fe_clang_str(clang_getCursorSpelling(decl));
    fe_var *v = find_var(p, off, name);
    if (v)
        return v;
    v = fe_alloc(sizeof *v);
    v->name = name;
    v->display = name;
    v->decl_off = off;
    v->decl_range = range_of(p, decl);
    if (strncmp(name, "ag__", 4) == 0)
        fe_error(fe_range_at(off, (unsigned)strlen(name)),
                 "'%s': names beginning with 'ag__' are reserved for the code agc generates; "
                 "rename it",
                 name);
    v->type_range = trim(p, (fe_range){v->decl_range.begin, off});
    CXType t = clang_getCursorType(decl);
    v->tclass = classify(t);
    v->type_name = fe_clang_str(clang_getTypeSpelling(t));
    scalar_width(t, v);
    v->field_decl = field_decl(t, name);
    v->local_decl = v->tclass == FE_TY_ARRAY ? v->field_decl : declare(t, name);
    v->is_param = k == CXCursor_ParmDecl;
    CXCursor init = k == CXCursor_VarDecl ? clang_Cursor_getVarDeclInitializer(decl)
                                          : clang_getNullCursor();
    v->has_init = !clang_Cursor_isNull(init);
    if (v->has_init) { /* to the ',' or ';' that ends it: a macro's end is not reliable */
        unsigned b = start_of(p, init);
        v->init_range = trim(p, (fe_range){b, expr_end(p, b)});
    }
    fe_vec_push(&p->fn->vars, v);
    return v;
}

/* ---------------------------------------------------------- expressions */

static void walk(parser *p, CXCursor c, int mode, fe_expr *e);
static fe_cond *build_cond(parser *p, CXCursor c, fe_range r);

static fe_expr *new_expr(fe_range r)
{
    fe_expr *e = fe_alloc(sizeof *e);
    e->range = r;
    return e;
}

static void walk_kids(parser *p, CXCursor c, int mode, fe_expr *e)
{
    kids ks = children(c);
    for (int i = 0; i < ks.n; i++)
        walk(p, ks.c[i], mode, e);
}

static void add_ref(parser *p, CXCursor c, int mode, fe_expr *e)
{
    fe_var *v = var_of(p, clang_getCursorReferenced(c));
    if (!v)
        return;
    unsigned off;
    if (!loc_off(p, clang_getCursorLocation(c), &off))
        return;
    fe_range at = {off, off + (unsigned)strlen(v->name)};
    if (at.end > p->src->len || memcmp(p->src->text + off, v->name, strlen(v->name)) != 0)
        at.end = off + 1; /* a use inside a macro's body: point at the macro */
    fe_refs_add(&e->refs, v, at, mode);
}

/* Modes for the base of an assigned member or element: writing `p.a`
 * writes p; writing `p->a` or `ptr[i]` only reads the pointer. */
static int base_mode(CXCursor base, int mode)
{
    if (!(mode & FE_WRITE))
        return FE_READ;
    CXCursor b = strip(base);
    CXType t = clang_getCanonicalType(clang_getCursorType(b));
    if (t.kind == CXType_Pointer)
        return FE_READ;
    return FE_READ | FE_WRITE;
}

/* Scans a ?: whose condition starts at s0: finds its '?', its ':' and its
 * end (a ',', ';', ')' ... at depth 0, or an outer ':'). */
static bool scan_ternary(const parser *p, unsigned s0, unsigned *q, unsigned *colon, unsigned *end)
{
    const fe_source *s = p->src;
    int depth = 0, nested = 0, c;
    *q = *colon = 0;
    unsigned off = s0;
    for (; (c = fe_next_code(s, &off)) >= 0; off++) {
        int step = fe_bracket(c);
        if (step > 0) {
            depth++;
        } else if (step < 0) {
            if (depth-- == 0)
                break;
        } else if (depth == 0 && (c == ',' || c == ';')) {
            break;
        } else if (depth == 0 && c == '?') {
            if (!*q)
                *q = off;
            else
                nested++;
        } else if (depth == 0 && c == ':') {
            if (nested > 0)
                nested--;
            else if (*q && !*colon)
                *colon = off;
            else
                break;
        }
    }
    *end = off;
    return *q && *colon && *colon > *q + 1;
}

static void staged_ternary(parser *p, CXCursor c, fe_expr *e)
{
    unsigned s0 = start_of(p, c);
    for (int i = 0; i < p->ternaries.n; i++) {
        fe_ternary *t = p->ternaries.items[i];
        if (t->range.begin == s0) { /* seen again through _Generic's copy */
            fe_refs r = {0};
            fe_cond_refs(t->cond, &r);
            fe_refs_merge(&e->refs, &r);
            fe_refs_merge(&e->refs, &t->then_e->refs);
            fe_refs_merge(&e->refs, &t->else_e->refs);
            return;
        }
    }
    unsigned q, colon, end;
    kids ks = children(c);
    if (ks.n != 3 || !scan_ternary(p, s0, &q, &colon, &end)) {
        fe_error((fe_range){s0, s0 + 1}, "cannot find the parts of this '?:'; write it as "
                                         "an if statement");
        return;
    }
    fe_ternary *t = fe_alloc(sizeof *t);
    t->range = trim(p, (fe_range){s0, end});
    t->line = line_of(p, s0);
    fe_vec_push(&p->ternaries, t);
    if (classify(clang_getCursorType(c)) != FE_TY_TENSOR) {
        fe_error(t->range, "a '?:' with a staged condition must give an ag_tensor, not '%s'",
                 fe_clang_str(clang_getTypeSpelling(clang_getCursorType(c))));
    }
    t->cond = build_cond(p, ks.c[0], (fe_range){s0, q});
    t->then_e = new_expr(trim(p, (fe_range){q + 1, colon}));
    walk(p, ks.c[1], FE_READ, t->then_e);
    t->else_e = new_expr(trim(p, (fe_range){colon + 1, end}));
    walk(p, ks.c[2], FE_READ, t->else_e);
    fe_vec_push(&e->terns, t);
    fe_refs r = {0};
    fe_cond_refs(t->cond, &r);
    fe_refs_merge(&e->refs, &r);
    fe_refs_merge(&e->refs, &t->then_e->refs);
    fe_refs_merge(&e->refs, &t->else_e->refs);
}

/* Where the expression starting at off ends: at a ',' or ';' outside
 * brackets, or at a closing bracket it did not open. */
static unsigned expr_end(const parser *p, unsigned off)
{
    const fe_source *s = p->src;
    int depth = 0, c;
    for (; (c = fe_next_code(s, &off)) >= 0; off++) {
        int step = fe_bracket(c);
        if (step > 0)
            depth++;
        else if (step < 0 && depth-- == 0)
            break;
        else if (depth == 0 && (c == ',' || c == ';'))
            break;
    }
    return off;
}

/* `v = rhs`: the text its right side spans (the comma operator binds
 * looser than `=`, so the right side ends at a ',' at its level). */
static void record_assign(parser *p, CXCursor lhs, CXCursor rhs, fe_expr *e)
{
    CXCursor l = strip(lhs);
    if (clang_getCursorKind(l) != CXCursor_DeclRefExpr)
        return;
    fe_var *v = var_of(p, clang_getCursorReferenced(l));
    unsigned at;
    if (!v || !loc_off(p, clang_getCursorLocation(l), &at))
        return;
    fe_assign *a = fe_alloc(sizeof *a);
    a->var = v;
    a->lhs_at = at;
    a->rhs.begin = start_of(p, rhs);
    a->rhs.end = expr_end(p, a->rhs.begin);
    fe_vec_push(&e->assigns, a);
}

static void misplaced_bool(parser *p, CXCursor c)
{
    unsigned off = start_of(p, c);
    unsigned end;
    ident_at(p, off, &end);
    fe_error((fe_range){off, end},
             "ag_bool() can only be a condition (of if, while, for, do/while or ?:), or be "
             "combined into one with !, && and ||");
}

/* A call of the function being parsed to itself (analyze.c checks that
 * a C condition can end the recursion while tracing). */
static void note_self_call(parser *p, CXCursor call)
{
    if (strcmp(callee_name(call), p->fn->name) != 0)
        return;
    fe_self_call *sc = fe_alloc(sizeof *sc);
    unsigned off = start_of(p, call), end;
    ident_at(p, off, &end);
    sc->at = (fe_range){off, end > off ? end : off + 1};
    sc->conditional = p->c_cond > 0;
    fe_vec_push(&p->fn->self_calls, sc);
}

/* Walks the operands of a C ?:, && or ||: all but the first may not run. */
static void walk_c_conditional(parser *p, CXCursor c, int mode, fe_expr *e)
{
    kids ks = children(c);
    for (int i = 0; i < ks.n; i++) {
        p->c_cond += i > 0;
        walk(p, ks.c[i], mode, e);
        p->c_cond -= i > 0;
    }
}

static void walk(parser *p, CXCursor c, int mode, fe_expr *e)
{
    kids ks;
    switch (clang_getCursorKind(c)) {
    case CXCursor_DeclRefExpr:
        add_ref(p, c, mode, e);
        return;
    case CXCursor_BinaryOperator:
        ks = children(c);
        if (ks.n == 2 && clang_getCursorBinaryOperatorKind(c) == CXBinaryOperator_Assign) {
            walk(p, ks.c[0], FE_WRITE, e);
            walk(p, ks.c[1], FE_READ, e);
            record_assign(p, ks.c[0], ks.c[1], e);
            return;
        }
        if (clang_getCursorBinaryOperatorKind(c) == CXBinaryOperator_LAnd ||
            clang_getCursorBinaryOperatorKind(c) == CXBinaryOperator_LOr) {
            walk_c_conditional(p, c, FE_READ, e);
            return;
        }
        walk_kids(p, c, FE_READ, e);
        return;
    case CXCursor_CompoundAssignOperator:
        ks = children(c);
        for (int i = 0; i < ks.n; i++)
            walk(p, ks.c[i], i == 0 ? FE_READ | FE_WRITE : FE_READ, e);
        return;
    case CXCursor_UnaryOperator:
        switch (clang_getCursorUnaryOperatorKind(c)) {
        case CXUnaryOperator_PostInc:
        case CXUnaryOperator_PostDec:
        case CXUnaryOperator_PreInc:
        case CXUnaryOperator_PreDec:
            walk_kids(p, c, FE_READ | FE_WRITE, e);
            return;
        default:
            walk_kids(p, c, FE_READ, e);
            return;
        }
    case CXCursor_MemberRefExpr:
        ks = children(c);
        for (int i = 0; i < ks.n; i++)
            walk(p, ks.c[i], base_mode(ks.c[i], mode), e);
        return;
    case CXCursor_ArraySubscriptExpr:
        ks = children(c);
        for (int i = 0; i < ks.n; i++)
            walk(p, ks.c[i], i == 0 ? base_mode(ks.c[i], mode) : FE_READ, e);
        return;
    case CXCursor_ParenExpr:
    case CXCursor_UnexposedExpr:
        walk_kids(p, c, mode, e);
        return;
    case CXCursor_AddrLabelExpr: {
        fe_range *r = fe_alloc(sizeof *r);
        *r = fe_range_at(start_of(p, c), 2);
        fe_vec_push(&p->fn->computed_gotos, r);
        return;
    }
    case CXCursor_CallExpr:
        if (is_ag_bool_call(c))
            misplaced_bool(p, c);
        note_self_call(p, c);
        walk_kids(p, c, FE_READ, e);
        return;
    case CXCursor_ConditionalOperator:
        ks = children(c);
        if (ks.n == 3 && contains_bool(p, ks.c[0])) {
            staged_ternary(p, c, e);
            return;
        }
        walk_c_conditional(p, c, FE_READ, e);
        return;
    default:
        walk_kids(p, c, FE_READ, e);
        return;
    }
}

/* The expression of cursor c with range r, walked. */
static fe_expr *expr_of(parser *p, CXCursor c, fe_range r)
{
    fe_expr *e = new_expr(r);
    walk(p, c, FE_READ, e);
    CXCursor s = strip(c);
    if (clang_getCursorKind(s) == CXCursor_BinaryOperator &&
        clang_getCursorBinaryOperatorKind(s) == CXBinaryOperator_Assign) {
        kids ks = children(s);
        CXCursor lhs = ks.n == 2 ? strip(ks.c[0]) : s;
        if (ks.n == 2 && clang_getCursorKind(lhs) == CXCursor_DeclRefExpr) {
            e->assign_to = var_of(p, clang_getCursorReferenced(lhs));
            fe_expr rhs = {0};
            walk(p, ks.c[1], FE_READ, &rhs);
            e->rhs_reads_target = e->assign_to && fe_refs_mode(&rhs.refs, e->assign_to);
        }
    }
    return e;
}

/* ----------------------------------------------------------- conditions */

/*
 * The public ops that give a bool tensor, ag_<name>_at, from the op table:
 * the comparisons (EW_CMP) and the logic on bool (EW(BOOL)). Only the
 * table's text is read (its elementwise column, see ops.def); agc links
 * nothing of the runtime.
 */
#define BOOL_RESULT(form, domain, name) BOOL_RESULT_##form(domain, name)
#define BOOL_RESULT_CMP(domain, name) "ag_" #name "_at",
#define BOOL_RESULT_SAME(domain, name) BOOL_RESULT_SAME_##domain(name)
#define BOOL_RESULT_SAME_BOOL(name) "ag_" #name "_at",
#define BOOL_RESULT_SAME_NUM(name)
#define BOOL_RESULT_SAME_FLOAT(name)
#define BOOL_RESULT_SAME_ANY(name)
#define BOOL_RESULT_OWN(domain, name)
#define BOOL_RESULT_NONE(domain, name)
#define X(id, name, arity, attrs, flags, cost, elem, dtype_fn, shape_fn, kernel, api, grad) \
    BOOL_RESULT(elem, name)
static const char *const bool_ops[] = {
#include "../runtime/core/ops.def"
    NULL};
#undef X

static bool gives_bool(CXCursor c)
{
    c = strip(c);
    if (clang_getCursorKind(c) != CXCursor_CallExpr)
        return false;
    const char *name = callee_name(c);
    for (int i = 0; bool_ops[i]; i++)
        if (strcmp(name, bool_ops[i]) == 0)
            return true;
    return false;
}

static fe_cond *new_cond(const parser *p, fe_cond_kind k, fe_range r)
{
    fe_cond *c = fe_alloc(sizeof *c);
    c->kind = k;
    c->range = r;
    c->line = line_of(p, r.begin);
    return c;
}

/* ag_bool(e) or ag_bool_at(loc, e): finds e in the text. */
static fe_cond *bool_leaf(parser *p, CXCursor call, fe_range r)
{
    unsigned id_end;
    const char *name = ident_at(p, r.begin, &id_end);
    fe_cond *c = new_cond(p, FE_COND_BOOL, r);
    c->staged = true;
    bool direct = strcmp(name, "ag_bool_at") == 0;
    unsigned open = fe_skip_space(p->src, id_end);
    if ((strcmp(name, "ag_bool") != 0 && !direct) || open >= p->src->len ||
        p->src->text[open] != '(') {
        fe_error((fe_range){r.begin, id_end},
                 "a staged condition must call ag_bool() itself, not through the macro '%s'", name);
        c->e = new_expr(r);
        return c;
    }
    unsigned close = fe_match_paren(p->src, open);
    unsigned arg = open + 1;
    if (direct) { /* skip the location argument */
        kids ks = children(call);
        arg = ks.n == 3 ? start_of(p, ks.c[2]) : arg;
    }
    c->range.end = close;
    kids ks = children(call);
    c->e = new_expr(trim(p, (fe_range){arg, close - 1}));
    if (ks.n == 3) {
        walk(p, ks.c[2], FE_READ, c->e);
        c->is_bool = gives_bool(ks.c[2]);
    }
    return c;
}

/* The offset of the operator token just before the right operand. */
static unsigned operator_before(const parser *p, unsigned right)
{
    unsigned e = fe_skip_space_back(p->src, right);
    return e >= 2 ? e - 2 : 0;
}

static fe_cond *build_cond(parser *p, CXCursor c, fe_range r)
{
    r = strip_parens(p, r);
    c = strip(c);
    if (!contains_bool(p, c)) {
        fe_cond *leaf = new_cond(p, FE_COND_C, r);
        leaf->e = expr_of(p, c, r);
        return leaf;
    }
    kids ks = children(c);
    switch (clang_getCursorKind(c)) {
    case CXCursor_CallExpr:
        if (is_ag_bool_call(c))
            return bool_leaf(p, c, r);
        break;
    case CXCursor_UnaryOperator:
        if (clang_getCursorUnaryOperatorKind(c) == CXUnaryOperator_LNot && ks.n == 1) {
            fe_cond *n = new_cond(p, FE_COND_NOT, r);
            n->staged = true;
            n->a = build_cond(p, ks.c[0], (fe_range){r.begin + 1, r.end});
            return n;
        }
        break;
    case CXCursor_BinaryOperator: {
        enum CXBinaryOperatorKind op = clang_getCursorBinaryOperatorKind(c);
        if ((op == CXBinaryOperator_LAnd || op == CXBinaryOperator_LOr) && ks.n == 2) {
            fe_cond *n = new_cond(p, op == CXBinaryOperator_LAnd ? FE_COND_AND : FE_COND_OR, r);
            n->staged = true;
            unsigned right = start_of(p, ks.c[1]);
            n->a = build_cond(p, ks.c[0], (fe_range){r.begin, operator_before(p, right)});
            p->c_cond += n->a->kind == FE_COND_C; /* decided while tracing */
            n->b = build_cond(p, ks.c[1], (fe_range){right, r.end});
            p->c_cond -= n->a->kind == FE_COND_C;
            return n;
        }
        break;
    }
    case CXCursor_ConditionalOperator: {
        unsigned q, colon, end;
        if (ks.n == 3 && scan_ternary(p, r.begin, &q, &colon, &end)) {
            fe_cond *n = new_cond(p, FE_COND_SELECT, r);
            n->staged = true;
            n->a = build_cond(p, ks.c[0], (fe_range){r.begin, q});
            p->c_cond += n->a->kind == FE_COND_C;
            n->b = build_cond(p, ks.c[1], (fe_range){q + 1, colon});
            n->c = build_cond(p, ks.c[2], (fe_range){colon + 1, r.end});
            p->c_cond -= n->a->kind == FE_COND_C;
            return n;
        }
        break;
    }
    default:
        break;
    }
    fe_error(r, "ag_bool() must be the whole condition, or be combined with !, && and ||; "
                "compute other tests on tensors with ops (ag_equal, ag_logical_and...)");
    fe_cond *leaf = new_cond(p, FE_COND_C, r);
    leaf->e = new_expr(r);
    return leaf;
}

/* ----------------------------------------------------------- statements */

static fe_stmt *build_stmt(parser *p, CXCursor c, fe_stmt *parent);

static fe_stmt *new_stmt(parser *p, fe_stmt_kind k, CXCursor c, fe_stmt *parent)
{
    fe_stmt *s = fe_alloc(sizeof *s);
    s->kind = k;
    s->range = range_of(p, c);
    s->line = line_of(p, s->range.begin);
    s->parent = parent;
    return s;
}

static void extend_to(fe_stmt *s, const fe_stmt *kid)
{
    if (kid && kid->range.end > s->range.end)
        s->range.end = kid->range.end;
}

/* Rejects staged statements spelled by a macro: agc rewrites text. */
static fe_cond *cond_of(parser *p, CXCursor c)
{
    return build_cond(p, c, range_of(p, c));
}

static void build_block(parser *p, fe_stmt *s, CXCursor c)
{
    kids ks = children(c);
    s->kids = fe_alloc((size_t)(ks.n + 1) * sizeof *s->kids);
    for (int i = 0; i < ks.n; i++)
        s->kids[s->n_kids++] = build_stmt(p, ks.c[i], s);
}

static void build_if(parser *p, fe_stmt *s, CXCursor c)
{
    kids ks = children(c);
    if (ks.n < 2)
        FE_BUG("if with %d children", ks.n);
    s->cond = cond_of(p, ks.c[0]);
    s->staged = s->cond->staged;
    s->then_s = build_stmt(p, ks.c[1], s);
    extend_to(s, s->then_s);
    if (ks.n > 2) {
        s->else_s = build_stmt(p, ks.c[2], s);
        extend_to(s, s->else_s);
    }
}

static void build_for(parser *p, fe_stmt *s, CXCursor c)
{
    unsigned open = fe_skip_space(p->src, s->range.begin + 3);
    unsigned close = fe_match_paren(p->src, open);
    unsigned semi[2] = {close, close};
    int n_semi = 0, depth = 0, ch;
    for (unsigned off = open + 1; n_semi < 2 && (ch = fe_next_code(p->src, &off)) >= 0 &&
                                  off < close - 1;
         off++) {
        depth += fe_bracket(ch);
        if (depth == 0 && ch == ';')
            semi[n_semi++] = off;
    }
    kids ks = children(c);
    for (int i = 0; i + 1 < ks.n; i++) {
        unsigned b = start_of(p, ks.c[i]);
        if (b < semi[0])
            s->init = build_stmt(p, ks.c[i], s);
        else if (b < semi[1])
            s->cond = cond_of(p, ks.c[i]);
        else
            s->inc = expr_of(p, ks.c[i], range_of(p, ks.c[i]));
    }
    if (ks.n < 1)
        FE_BUG("for without a body");
    s->body = build_stmt(p, ks.c[ks.n - 1], s);
    s->staged = s->cond && s->cond->staged;
    extend_to(s, s->body);
}

static void build_decl(parser *p, fe_stmt *s, CXCursor c)
{
    kids ks = children(c);
    s->decls = fe_alloc((size_t)(ks.n + 1) * sizeof *s->decls);
    s->inits = fe_alloc((size_t)(ks.n + 1) * sizeof *s->inits);
    for (int i = 0; i < ks.n; i++) {
        if (clang_getCursorKind(ks.c[i]) != CXCursor_VarDecl)
            continue;
        fe_var *v = var_of(p, ks.c[i]);
        if (!v)
            continue;
        CXCursor init = clang_Cursor_getVarDeclInitializer(ks.c[i]);
        s->decls[s->n_decls] = v;
        if (!clang_Cursor_isNull(init))
            s->inits[s->n_decls] = expr_of(p, init, range_of(p, init));
        s->n_decls++;
    }
}

static const char *label_name(CXCursor c)
{
    return fe_clang_str(clang_getCursorSpelling(c));
}

/* A statement with attributes or a loop pragma (`#pragma unroll`, which
 * clang attaches to the loop): libclang shows an unexposed statement
 * around it. agc works on the statement; the pragma, outside its range,
 * is copied with the text before it, so it cannot stay on a staged loop,
 * which agc replaces by a block. NULL when c is not one. */
static fe_stmt *attributed_stmt(parser *p, CXCursor c, fe_stmt *parent)
{
    kids ks = children(c);
    CXCursor inner = clang_getNullCursor();
    int n = 0;
    for (int i = 0; i < ks.n; i++) {
        enum CXCursorKind k = clang_getCursorKind(ks.c[i]);
        if (clang_isStatement(k) || clang_isExpression(k)) {
            inner = ks.c[i];
            n++;
        }
    }
    if (n != 1)
        return NULL;
    fe_stmt *s = build_stmt(p, inner, parent);
    if (s->staged)
        fe_error(fe_range_at(s->range.begin, 1),
                 "this staged statement has an attribute or a pragma (such as #pragma unroll), "
                 "which cannot stay on it: agc replaces the statement by a block; remove it");
    return s;
}

static fe_stmt *build_stmt(parser *p, CXCursor c, fe_stmt *parent)
{
    enum CXCursorKind k = clang_getCursorKind(c);
    kids ks;
    fe_stmt *s;
    bool control = k == CXCursor_IfStmt || k == CXCursor_WhileStmt || k == CXCursor_DoStmt ||
                   k == CXCursor_ForStmt;
    if (control && cursor_in_macro(c) && contains_bool(p, c)) {
        s = new_stmt(p, FE_OTHER, c, parent);
        fe_error((fe_range){s->range.begin, s->range.begin + 1},
                 "staged control flow inside a macro expansion cannot be converted; expand "
                 "the macro by hand");
        s->expr = new_expr(s->range);
        return s;
    }
    switch (k) {
    case CXCursor_CompoundStmt:
        s = new_stmt(p, FE_BLOCK, c, parent);
        build_block(p, s, c);
        return s;
    case CXCursor_IfStmt:
        s = new_stmt(p, FE_IF, c, parent);
        build_if(p, s, c);
        return s;
    case CXCursor_WhileStmt:
        s = new_stmt(p, FE_WHILE, c, parent);
        ks = children(c);
        s->cond = cond_of(p, ks.c[0]);
        s->staged = s->cond->staged;
        s->body = build_stmt(p, ks.c[ks.n - 1], s);
        extend_to(s, s->body);
        return s;
    case CXCursor_DoStmt:
        s = new_stmt(p, FE_DO, c, parent);
        ks = children(c);
        s->body = build_stmt(p, ks.c[0], s);
        s->cond = cond_of(p, ks.c[ks.n - 1]);
        s->staged = s->cond->staged;
        s->range.end = past_semicolon(p, s->range.end);
        return s;
    case CXCursor_ForStmt:
        s = new_stmt(p, FE_FOR, c, parent);
        build_for(p, s, c);
        return s;
    case CXCursor_SwitchStmt:
        s = new_stmt(p, FE_SWITCH, c, parent);
        ks = children(c);
        s->cond = cond_of(p, ks.c[0]);
        if (s->cond->staged)
            fe_error(s->cond->range, "a switch cannot be staged; use if / else if on tensors");
        s->body = build_stmt(p, ks.c[ks.n - 1], s);
        extend_to(s, s->body);
        return s;
    case CXCursor_CaseStmt:
    case CXCursor_DefaultStmt:
    case CXCursor_LabelStmt:
        s = new_stmt(p, k == CXCursor_LabelStmt ? FE_LABEL : FE_CASE, c, parent);
        ks = children(c);
        if (k == CXCursor_LabelStmt)
            s->label = label_name(c);
        s->kids = fe_alloc(sizeof *s->kids);
        if (ks.n > 0) {
            s->kids[0] = build_stmt(p, ks.c[ks.n - 1], s);
            s->n_kids = 1;
            extend_to(s, s->kids[0]);
        }
        return s;
    case CXCursor_BreakStmt:
    case CXCursor_ContinueStmt:
        s = new_stmt(p, k == CXCursor_BreakStmt ? FE_BREAK : FE_CONTINUE, c, parent);
        s->range.end = past_semicolon(p, s->range.end);
        return s;
    case CXCursor_ReturnStmt:
        s = new_stmt(p, FE_RETURN, c, parent);
        ks = children(c);
        if (ks.n > 0)
            s->expr = expr_of(p, ks.c[0], range_of(p, ks.c[0]));
        s->range.end = past_semicolon(p, s->range.end);
        return s;
    case CXCursor_IndirectGotoStmt: {
        s = new_stmt(p, FE_OTHER, c, parent);
        s->expr = new_expr(s->range);
        walk_kids(p, c, FE_READ, s->expr);
        s->range.end = past_semicolon(p, s->range.end);
        fe_range *r = fe_alloc(sizeof *r);
        *r = fe_range_at(s->range.begin, 4);
        fe_vec_push(&p->fn->computed_gotos, r);
        p->fn->has_goto = true;
        return s;
    }
    case CXCursor_GotoStmt:
        p->fn->has_goto = true;
        s = new_stmt(p, FE_GOTO, c, parent);
        ks = children(c);
        if (ks.n > 0)
            s->label = label_name(ks.c[0]);
        s->range.end = past_semicolon(p, s->range.end);
        return s;
    case CXCursor_DeclStmt:
        s = new_stmt(p, FE_DECL, c, parent);
        build_decl(p, s, c);
        return s;
    case CXCursor_NullStmt:
        return new_stmt(p, FE_NULL, c, parent);
    case CXCursor_UnexposedStmt:
        s = attributed_stmt(p, c, parent);
        if (s)
            return s;
        /* fall through */
    default:
        if (clang_isExpression(k)) {
            s = new_stmt(p, FE_EXPR, c, parent);
            s->expr = expr_of(p, c, s->range);
            s->range.end = past_semicolon(p, s->range.end);
            return s;
        }
        s = new_stmt(p, FE_OTHER, c, parent);
        s->expr = new_expr(s->range);
        walk_kids(p, c, FE_READ | FE_WRITE, s->expr);
        s->range.end = past_semicolon(p, s->range.end);
        return s;
    }
}

/* ------------------------------------------------------------ functions */

static bool is_param_type(fe_tclass t)
{
    return t == FE_TY_TENSOR || t == FE_TY_TENSOR_ARRAY || t == FE_TY_VARIABLE ||
           t == FE_TY_OPTIMIZER || t == FE_TY_INT || t == FE_TY_FLOAT;
}

typedef struct field_walk {
    parser *p;
    fe_vec names;
    bool all_tensors;
} field_walk;

static enum CXVisitorResult visit_field(CXCursor c, CXClientData d)
{
    field_walk *w = d;
    fe_vec_push(&w->names, fe_clang_str(clang_getCursorSpelling(c)));
    if (classify(clang_getCursorType(c)) != FE_TY_TENSOR)
        w->all_tensors = false;
    return CXVisit_Continue;
}

static void function_return(parser *p, fe_func *fn, CXCursor c)
{
    CXType rt = clang_getCursorResultType(c);
    fn->ret_type = fe_clang_str(clang_getTypeSpelling(rt));
    CXType canon = clang_getCanonicalType(rt);
    if (canon.kind == CXType_Void) {
        fn->ret = FE_RET_VOID;
        return;
    }
    if (classify(rt) == FE_TY_TENSOR) {
        fn->ret = FE_RET_TENSOR;
        return;
    }
    if (canon.kind == CXType_Record) {
        field_walk w = {p, {0}, true};
        clang_Type_visitFields(canon, visit_field, &w);
        if (w.all_tensors && w.names.n > 0) {
            fn->ret = FE_RET_STRUCT;
            fn->ret_fields = (const char **)w.names.items;
            fn->n_ret_fields = w.names.n;
            return;
        }
    }
    fe_error((fe_range){fn->header.begin, fn->header.begin + 1},
             "AG_FUNCTION '%s' returns '%s'; it must return ag_tensor, void, or a struct "
             "whose fields are all ag_tensor",
             fn->name, fn->ret_type);
}

static void function_attrs(parser *p, fe_func *fn, CXCursor c)
{
    kids ks = children(c);
    for (int i = 0; i < ks.n; i++) {
        if (clang_getCursorKind(ks.c[i]) != CXCursor_AnnotateAttr)
            continue;
        const char *a = fe_clang_str(clang_getCursorSpelling(ks.c[i]));
        if (strncmp(a, "ag.signature=", 13) == 0)
            fn->signature = a + 13;
        else if (strncmp(a, "ag.alias=", 9) == 0)
            fn->alias = a + 9;
        else if (strcmp(a, "ag.bfloat16") == 0)
            fn->bfloat16 = true;
        else if (strcmp(a, "ag.jit_compile") == 0)
            fn->jit_compile = true;
        else if (strcmp(a, "ag.function") != 0)
            continue;
        fe_range *r = fe_alloc(sizeof *r);
        *r = range_of(p, ks.c[i]);
        if (r->end > r->begin && r->begin >= fn->header.begin && r->end <= fn->header.end) {
            fe_vec_push(&fn->annots, r);
            if (strncmp(a, "ag.signature=", 13) == 0)
                fn->signature_range = *r;
        }
    }
}

static void function_params(parser *p, fe_func *fn, CXCursor c)
{
    kids ks = children(c);
    fn->params = fe_alloc((size_t)(ks.n + 1) * sizeof *fn->params);
    for (int i = 0; i < ks.n; i++) {
        if (clang_getCursorKind(ks.c[i]) != CXCursor_ParmDecl)
            continue;
        fe_var *v = var_of(p, ks.c[i]);
        fe_range r = range_of(p, ks.c[i]);
        if (!v || !*v->name) {
            fe_error(r, "every parameter of an AG_FUNCTION needs a name");
            continue;
        }
        if (!is_param_type(v->tclass))
            fe_error(r,
                     "parameter '%s' of AG_FUNCTION '%s' has type '%s'; parameters must be "
                     "ag_tensor, ag_tensor_array, ag_variable or C scalars (integers, "
                     "enums, bool, float, double)",
                     v->name, fn->name, v->type_name);
        if (fn->n_params == 0)
            fn->params_text.begin = r.begin;
        fn->params_text.end = r.end;
        fn->params[fn->n_params++] = v;
    }
    /* libclang gives a K&R definition a prototype: look at where the
     * parameters are declared, after the parameter list's ')' */
    unsigned name_at, close = p->src->len;
    if (loc_off(p, clang_getCursorLocation(c), &name_at)) {
        ident_at(p, name_at, &name_at);
        unsigned open = fe_skip_space(p->src, name_at);
        if (open < p->src->len && p->src->text[open] == '(')
            close = fe_match_paren(p->src, open);
    }
    CXType t = clang_getCursorType(c);
    if (fn->n_params > 0 && fn->params[0]->decl_off >= close)
        fe_error((fe_range){fn->header.begin, fn->header.begin + 1},
                 "AG_FUNCTION '%s' has an old-style (K&R) parameter list; declare its "
                 "parameters with their types inside the parentheses",
                 fn->name);
    if (clang_isFunctionTypeVariadic(t))
        fe_error((fe_range){fn->header.begin, fn->header.begin + 1},
                 "AG_FUNCTION '%s' cannot be variadic", fn->name);
}

static bool is_ag_function(CXCursor c)
{
    kids ks = children(c);
    for (int i = 0; i < ks.n; i++)
        if (clang_getCursorKind(ks.c[i]) == CXCursor_AnnotateAttr &&
            strcmp(fe_clang_str(clang_getCursorSpelling(ks.c[i])), "ag.function") == 0)
            return true;
    return false;
}

/* Code from another file in a function's body (an #include there): agc
 * rewrites the input's text, so it cannot convert it. */
typedef struct foreign_walk {
    const parser *p;
    CXFile file; /* the first other file found */
} foreign_walk;

static enum CXChildVisitResult find_foreign(CXCursor c, CXCursor parent, CXClientData d)
{
    (void)parent;
    foreign_walk *w = d;
    CXFile f;
    unsigned line, col, off;
    clang_getExpansionLocation(clang_getCursorLocation(c), &f, &line, &col, &off);
    if (f && !clang_File_isEqual(f, w->p->file)) {
        w->file = f;
        return CXChildVisit_Break;
    }
    return CXChildVisit_Recurse;
}

typedef struct site_walk {
    CXFile file;
    CXSourceLocation at; /* the #include in the main file that brings it */
    bool found;
} site_walk;

static void find_site(CXFile f, CXSourceLocation *stack, unsigned depth, CXClientData d)
{
    site_walk *w = d;
    if (!w->found && depth > 0 && clang_File_isEqual(f, w->file)) {
        w->at = stack[depth - 1];
        w->found = true;
    }
}

static bool foreign_code(parser *p, fe_func *fn, CXCursor body)
{
    foreign_walk w = {p, NULL};
    clang_visitChildren(body, find_foreign, &w);
    if (!w.file)
        return false;
    site_walk sw = {w.file, clang_getNullLocation(), false};
    clang_getInclusions(p->tu, find_site, &sw);
    unsigned off = fn->header.end;
    if (sw.found)
        loc_off(p, sw.at, &off);
    fe_error(fe_range_at(off, 1),
             "the body of AG_FUNCTION '%s' includes code from '%s'; agc converts only what "
             "is written in the input file: write that code here, or call a function",
             fn->name, fe_clang_str(clang_getFileName(w.file)));
    return true;
}

static fe_func *build_function(parser *p, CXCursor c)
{
    fe_func *fn = fe_alloc(sizeof *fn);
    p->fn = fn;
    p->ternaries = (fe_vec){0};
    fn->name = fe_clang_str(clang_getCursorSpelling(c));
    fn->range = range_of(p, c);
    fn->line = line_of(p, fn->range.begin);
    kids ks = children(c);
    CXCursor body = clang_getNullCursor();
    for (int i = 0; i < ks.n; i++)
        if (clang_getCursorKind(ks.c[i]) == CXCursor_CompoundStmt)
            body = ks.c[i];
    if (clang_Cursor_isNull(body))
        FE_BUG("definition of %s without a body", fn->name);
    fn->header = (fe_range){fn->range.begin, start_of(p, body)};
    if (in_macro(clang_getCursorLocation(c))) {
        fe_error((fe_range){fn->range.begin, fn->range.begin + 1},
                 "AG_FUNCTION '%s' is defined by a macro; agc converts only functions "
                 "written out in the source",
                 fn->name);
        return fn;
    }
    function_attrs(p, fn, c);
    function_return(p, fn, c);
    function_params(p, fn, c);
    if (!foreign_code(p, fn, body))
        fn->body = build_stmt(p, body, NULL);
    return fn;
}

/* ------------------------------------------------------------ the unit */

typedef struct unit_walk {
    parser *p;
    fe_unit *u;
} unit_walk;

static enum CXChildVisitResult visit_top(CXCursor c, CXCursor parent, CXClientData d)
{
    (void)parent;
    unit_walk *w = d;
    if (clang_getCursorKind(c) != CXCursor_FunctionDecl || !clang_isCursorDefinition(c))
        return CXChildVisit_Continue;
    unsigned off;
    if (!loc_off(w->p, clang_getCursorLocation(c), &off) || !is_ag_function(c))
        return CXChildVisit_Continue;
    fe_vec_push(&w->u->funcs, build_function(w->p, c));
    return CXChildVisit_Continue;
}

void fe_ast_build(CXTranslationUnit tu, fe_source *src, CXFile file, fe_unit *u)
{
    parser p = {tu, src, file, NULL, {0}, 0, NULL, 0, 0};
    unit_walk w = {&p, u};
    clang_visitChildren(clang_getTranslationUnitCursor(tu), visit_top, &w);
}
