/*
 * emit.c - the output file: the user's text verbatim, with each
 * AG_FUNCTION replaced by
 *
 *   <its signature>;                          a prototype (recursion, lifts)
 *   <lifted state structs and functions>      gen.c
 *   static T f__staged(params) { ... }        the body, control flow lowered
 *   static void f__trace(args, out)           runs f__staged on ag_arg values
 *   static const ag_function_desc f__desc     names, kinds, signature, alias
 *   constructor f__register                   ag_function_register(&f__desc)
 *   <its signature> { ag_function_call_at }   the wrapper, same name/linkage
 *   static T f__at(ag_loc, params)            the same, at the location given
 *   #define f(...) f__at(AG_HERE, ...)        the caller's line for later calls
 *
 * and, after f's prototype when one comes before the definition (as C
 * needs for a call written there), f__at declared and the same macro, so
 * that those calls pass their lines too.
 *
 * Calls between AG_FUNCTIONs call the wrappers; the runtime inlines them
 * while tracing.
 */
#include "fe.h"

#include <stdlib.h>
#include <string.h>

static const char *arg_kind(const fe_var *v)
{
    switch (v->tclass) {
    case FE_TY_TENSOR:
        return "AG_ARG_TENSOR";
    case FE_TY_TENSOR_ARRAY:
        return "AG_ARG_TENSOR_ARRAY";
    case FE_TY_VARIABLE:
        return "AG_ARG_VARIABLE";
    case FE_TY_OPTIMIZER:
        return "AG_ARG_OPTIMIZER";
    case FE_TY_FLOAT:
        return "AG_ARG_FLOAT";
    default:
        return "AG_ARG_INT";
    }
}

/* The type of a C scalar parameter as the user spelled it ("bool", not
 * clang's "_Bool"). */
static const char *scalar_type(const fe_unit *u, const fe_var *v)
{
    fe_range r = v->type_range;
    if (r.end <= r.begin || r.end - r.begin > 200)
        return v->type_name;
    fe_buf b = {0};
    for (unsigned i = r.begin; i < r.end; i++) {
        char c = u->src->text[i];
        bool space = c == ' ' || c == '\t' || c == '\n' || c == '\r';
        if (!space)
            fe_buf_putc(&b, c);
        else if (b.len && b.data[b.len - 1] != ' ')
            fe_buf_putc(&b, ' ');
    }
    const char *t = b.data ? fe_strdup(b.data) : v->type_name;
    fe_buf_free(&b);
    return t;
}

/* The value of parameter v as f__staged receives it from ag__args[i]. */
static const char *arg_value(const fe_unit *u, const fe_var *v, int i)
{
    switch (v->tclass) {
    case FE_TY_TENSOR:
        return fe_format("ag__args[%d].tensor", i);
    case FE_TY_TENSOR_ARRAY:
        return fe_format("(ag_tensor_array){ag__args[%d].tensor}", i);
    case FE_TY_VARIABLE:
        return fe_format("ag__args[%d].variable", i);
    case FE_TY_OPTIMIZER:
        return fe_format("ag__args[%d].optimizer", i);
    case FE_TY_FLOAT:
        return fe_format("(%s)ag__args[%d].f", scalar_type(u, v), i);
    default:
        return fe_format("(%s)ag__args[%d].i", scalar_type(u, v), i);
    }
}

/* The ag_arg the wrapper passes for parameter v. */
static const char *arg_init(const fe_var *v)
{
    switch (v->tclass) {
    case FE_TY_TENSOR:
        return fe_format("{.kind = AG_ARG_TENSOR, .tensor = %s}", v->name);
    case FE_TY_TENSOR_ARRAY:
        return fe_format("{.kind = AG_ARG_TENSOR_ARRAY, .tensor = %s.list}", v->name);
    case FE_TY_VARIABLE:
        return fe_format("{.kind = AG_ARG_VARIABLE, .variable = %s}", v->name);
    case FE_TY_OPTIMIZER:
        return fe_format("{.kind = AG_ARG_OPTIMIZER, .optimizer = %s}", v->name);
    case FE_TY_FLOAT:
        return fe_format("{.kind = AG_ARG_FLOAT, .f = %s}", v->name);
    default:
        return fe_format("{.kind = AG_ARG_INT, .i = %s}", v->name);
    }
}

int fe_num_outputs(const fe_func *fn)
{
    return fn->ret == FE_RET_VOID ? 0 : fn->ret == FE_RET_TENSOR ? 1 : fn->n_ret_fields;
}

/* The user's header without the AG_FUNCTION / AG_SIGNATURE / AG_ALIAS
 * marks, on one line. */
const char *fe_prototype(const fe_unit *u, const fe_func *fn)
{
    const char *t = u->src->text;
    fe_buf b = {0};
    unsigned pos = fn->header.begin;
    while (pos < fn->header.end) {
        bool skipped = false;
        for (int i = 0; i < fn->annots.n && !skipped; i++) {
            const fe_range *r = fn->annots.items[i];
            if (r->begin == pos) {
                pos = fe_skip_space(u->src, r->end);
                skipped = true;
            }
        }
        if (skipped)
            continue;
        unsigned next = fe_skip_literal(u->src, pos);
        if (next != pos && t[pos] == '/') { /* a comment */
            pos = next;
            fe_buf_putc(&b, ' ');
        } else if (t[pos] == '\n' || t[pos] == '\r' || t[pos] == '\t' || t[pos] == ' ') {
            if (b.len && b.data[b.len - 1] != ' ')
                fe_buf_putc(&b, ' ');
            pos++;
        } else {
            fe_buf_putc(&b, t[pos++]);
        }
    }
    while (b.len && b.data[b.len - 1] == ' ')
        b.data[--b.len] = '\0';
    char *r = fe_strdup(b.data ? b.data : "");
    fe_buf_free(&b);
    return r;
}

static void emit_trace(const fe_unit *u, const fe_func *fn, fe_out *o)
{
    fe_out_gen(o, "static void %s__trace(const ag_arg *ag__args, ag_tensor *ag__out)\n{\n",
               fn->name);
    if (!fn->n_params)
        fe_out_gen(o, "    (void)ag__args;\n");
    fe_buf call = {0};
    fe_buf_printf(&call, "%s__staged(", fn->name);
    for (int i = 0; i < fn->n_params; i++)
        fe_buf_printf(&call, "%s%s", i ? ", " : "", arg_value(u, fn->params[i], i));
    fe_buf_putc(&call, ')');
    switch (fn->ret) {
    case FE_RET_VOID:
        fe_out_gen(o, "    (void)ag__out;\n    %s;\n", call.data);
        break;
    case FE_RET_TENSOR:
        fe_out_gen(o, "    ag__out[0] = %s;\n", call.data);
        break;
    case FE_RET_STRUCT:
        fe_out_gen(o, "    %s ag__ret = %s;\n", fn->ret_type, call.data);
        for (int i = 0; i < fn->n_ret_fields; i++)
            fe_out_gen(o, "    ag__out[%d] = ag__ret.%s;\n", i, fn->ret_fields[i]);
        break;
    }
    fe_out_gen(o, "}\n\n");
    fe_buf_free(&call);
}

static void emit_desc(const fe_unit *u, const fe_func *fn, fe_out *o)
{
    const char *n = fn->name;
    if (fn->n_params) {
        fe_buf names = {0}, kinds = {0};
        for (int i = 0; i < fn->n_params; i++) {
            fe_buf_printf(&names, "%s%s", i ? ", " : "", fe_c_string(fn->params[i]->name));
            fe_buf_printf(&kinds, "%s%s", i ? ", " : "", arg_kind(fn->params[i]));
        }
        fe_out_gen(o, "static const char *const %s__param_names[] = {%s};\n", n, names.data);
        fe_out_gen(o, "static const ag_arg_kind %s__param_kinds[] = {%s};\n", n, kinds.data);
        fe_buf_free(&names);
        fe_buf_free(&kinds);
    }
    fe_out_gen(o, "static const ag_function_desc %s__desc = {\n", n);
    fe_out_gen(o, "    .name = %s,\n", fe_c_string(n));
    fe_out_gen(o, "    .file = %s,\n", fe_c_string(u->src->path));
    fe_out_gen(o, "    .line = %d,\n", fn->line);
    fe_out_gen(o, "    .n_params = %d,\n", fn->n_params);
    fe_out_gen(o, "    .param_names = %s,\n",
               fn->n_params ? fe_format("%s__param_names", n) : "NULL");
    fe_out_gen(o, "    .param_kinds = %s,\n",
               fn->n_params ? fe_format("%s__param_kinds", n) : "NULL");
    fe_out_gen(o, "    .signature = %s,\n", fn->signature ? fe_c_string(fn->signature) : "NULL");
    fe_out_gen(o, "    .alias = %s,\n", fn->alias ? fe_c_string(fn->alias) : "NULL");
    fe_out_gen(o, "    .n_outputs = %d,\n", fe_num_outputs(fn));
    fe_out_gen(o, "    .trace = %s__trace,\n", n);
    const char *flags = fn->bfloat16 && fn->jit_compile ? "AG_FN_BFLOAT16 | AG_FN_JIT_COMPILE"
                        : fn->bfloat16                  ? "AG_FN_BFLOAT16"
                        : fn->jit_compile               ? "AG_FN_JIT_COMPILE"
                                                        : "0";
    fe_out_gen(o, "    .flags = %s,\n};\n\n", flags);
    fe_out_gen(o, "__attribute__((constructor)) static void %s__register(void)\n{\n", n);
    fe_out_gen(o, "    ag_function_register(&%s__desc);\n}\n\n", n);
}

/* The parameter list of fn's prototype, after its '(' ("ag_tensor x)"),
 * and whether it declares none ("void)", ")"). */
static const char *params_of(const char *proto, const fe_func *fn, bool *none)
{
    size_t n = strlen(fn->name);
    const char *p = proto;
    for (; (p = strstr(p, fn->name)); p += n) {
        bool starts = p == proto || !fe_is_ident_char(p[-1]);
        const char *q = p + n;
        while (*q == ' ')
            q++;
        if (starts && *q == '(') {
            q++;
            while (*q == ' ')
                q++;
            *none = *q == ')' || (strncmp(q, "void", 4) == 0 && q[4 + strspn(q + 4, " ")] == ')');
            return q;
        }
    }
    return NULL;
}

/* The body of a wrapper: fn's arguments to ag_function_call_at at `loc`. */
static void emit_call_body(const fe_func *fn, fe_out *o, const char *loc)
{
    fe_out_gen(o, "{\n");
    if (fn->n_params) {
        fe_out_gen(o, "    ag_arg ag__args[%d] = {\n", fn->n_params);
        for (int i = 0; i < fn->n_params; i++)
            fe_out_gen(o, "        %s,\n", arg_init(fn->params[i]));
        fe_out_gen(o, "    };\n");
    }
    int nout = fe_num_outputs(fn);
    if (nout)
        fe_out_gen(o, "    ag_tensor ag__out[%d];\n", nout);
    fe_out_gen(o, "    ag_function_call_at(%s, &%s__desc, %s, %s);\n", loc, fn->name,
               fn->n_params ? "ag__args" : "NULL", nout ? "ag__out" : "NULL");
    if (fn->ret == FE_RET_TENSOR) {
        fe_out_gen(o, "    return ag__out[0];\n");
    } else if (fn->ret == FE_RET_STRUCT) {
        fe_out_gen(o, "    %s ag__ret;\n", fn->ret_type);
        for (int i = 0; i < fn->n_ret_fields; i++)
            fe_out_gen(o, "    ag__ret.%s = ag__out[%d];\n", fn->ret_fields[i], i);
        fe_out_gen(o, "    return ag__ret;\n");
    }
    fe_out_gen(o, "}\n");
}

/* Whether the token whose last character is at `last` makes a `name(`
 * after it something other than a call: a member (`.`, `->`), or a
 * declaration (an identifier that is no keyword: a type). */
static bool ends_non_call(const fe_source *src, unsigned last)
{
    static const char *const kws[] = {"return", "else", "do", "case", "sizeof", NULL};
    char c = src->text[last];
    if (c == '.' || (c == '>' && last > 0 && src->text[last - 1] == '-'))
        return true;
    if (!fe_is_ident_char(c))
        return false;
    unsigned b = last;
    while (b > 0 && fe_is_ident_char(src->text[b - 1]))
        b--;
    for (int k = 0; kws[k]; k++)
        if (strlen(kws[k]) == last + 1 - b && memcmp(src->text + b, kws[k], last + 1 - b) == 0)
            return false;
    return true;
}

/* A walk over the identifiers of src in [off, to), past comments and
 * literals: [begin, end) is the identifier found, last the last character
 * of the token before it, depth the braces open around it. */
typedef struct ident_scan {
    const fe_source *src;
    unsigned off, to, last, begin, end;
    int depth;
} ident_scan;

static bool next_ident(ident_scan *s)
{
    const fe_source *src = s->src;
    if (s->end > s->begin) {
        s->last = s->end - 1;
        s->off = s->end;
    }
    while (s->off < s->to) {
        unsigned next = fe_skip_literal(src, s->off);
        char c = src->text[s->off];
        if (next == s->off && fe_is_ident_char(c)) {
            s->begin = s->end = s->off;
            while (s->end < src->len && fe_is_ident_char(src->text[s->end]))
                s->end++;
            return true;
        }
        if (next == s->off)
            s->depth += (c == '{') - (c == '}');
        if (next != s->off || !strchr(" \t\r\n\f\v", c))
            s->last = next != s->off ? next - 1 : s->off;
        s->off = next != s->off ? next : s->off + 1;
    }
    return false;
}

/* Whether the identifier s found is `name` followed by '(' (at *open). */
static bool at_name_paren(const ident_scan *s, const char *name, unsigned *open)
{
    size_t n = strlen(name);
    *open = fe_skip_space(s->src, s->end);
    return s->end - s->begin == n && memcmp(s->src->text + s->begin, name, n) == 0 &&
           *open < s->src->len && s->src->text[*open] == '(';
}

/* Whether every `name(` in src in [from, to) (what a function-like macro
 * would expand) is a call. */
static bool only_calls_between(const fe_source *src, const char *name, unsigned from,
                               unsigned to)
{
    ident_scan s = {.src = src, .off = from, .to = to, .last = from > 0 ? from - 1 : 0};
    unsigned open;
    while (next_ident(&s))
        if (at_name_paren(&s, name, &open) && ends_non_call(src, s.last))
            return false;
    return true;
}

static bool only_calls_after(const fe_source *src, const char *name, unsigned from)
{
    return only_calls_between(src, name, from, src->len);
}

/* Just past the `;` of the first prototype of `name` at file scope before
 * `to` (`T name(...);`, a type's identifier before the name), or 0. */
static unsigned prototype_end(const fe_source *src, const char *name, unsigned to)
{
    ident_scan s = {.src = src, .to = to};
    unsigned open;
    while (next_ident(&s)) {
        if (s.depth != 0 || !at_name_paren(&s, name, &open) || open >= to ||
            !fe_is_ident_char(src->text[s.last]) || !ends_non_call(src, s.last))
            continue;
        unsigned semi = fe_skip_space(src, fe_match_paren(src, open));
        if (semi < to && src->text[semi] == ';')
            return semi + 1;
    }
    return 0;
}

/* The wrapper, with the user's prototype, calls at the definition's
 * location; f__at at the location it is given, and the macro after it
 * makes a call `f(x)` written later in the file pass its own line
 * (AG_HERE, #line-mapped to the user's file), as ag.h's ops and agc's
 * headers do, so an argument that does not match the signature is
 * reported where the call is. The macro is left out when a later use of
 * the name is not a call (a redeclaration, a struct member), and under
 * AGC_NO_CALLER_LINES. */
static void emit_caller_macro(const fe_func *fn, fe_out *o)
{
    fe_out_gen(o, "#ifndef AGC_NO_CALLER_LINES\n");
    if (fn->n_params)
        fe_out_gen(o, "#define %s(...) %s__at(AG_HERE, __VA_ARGS__)\n", fn->name, fn->name);
    else
        fe_out_gen(o, "#define %s() %s__at(AG_HERE)\n", fn->name, fn->name);
    fe_out_gen(o, "#endif\n");
}

/* The declaration of f__at: its return type and name, then `open` and
 * the parameters (after the location). */
static void emit_at_head(const fe_unit *u, const fe_func *fn, fe_out *o, const char *end)
{
    bool none = false;
    const char *params = params_of(fe_prototype(u, fn), fn, &none);
    fe_out_gen(o, "__attribute__((unused)) static %s %s__at(ag_loc ag__loc%s%s%s\n",
               fn->ret_type, fn->name, none ? ")" : ", ", none ? "" : params, end);
}

static bool has_caller_macro(const fe_unit *u, const fe_func *fn)
{
    bool none;
    return params_of(fe_prototype(u, fn), fn, &none) &&
           only_calls_after(u->src, fn->name, fn->range.end);
}

/* Where calls written before fn's definition start passing their own
 * lines: just after fn's prototype (C needs one before such a call),
 * when every `name(` from there to the definition is a call; 0: nowhere
 * (the prototype is in a header, or none comes first). */
static unsigned early_callers_from(const fe_unit *u, const fe_func *fn)
{
    if (!fn->body || !has_caller_macro(u, fn))
        return 0;
    unsigned at = prototype_end(u->src, fn->name, fn->range.begin);
    if (!at || !only_calls_between(u->src, fn->name, at, fn->range.begin))
        return 0;
    for (int i = 0; i < u->funcs.n; i++) {
        const fe_func *other = u->funcs.items[i];
        if (other->range.begin < at && at <= other->range.end)
            return 0;
    }
    return at;
}

/* After fn's prototype: f__at declared, and the macro (emit_function
 * takes it back before the definition, whose wrapper defines it again). */
static void emit_early_callers(const fe_unit *u, const fe_func *fn, fe_out *o)
{
    fe_out_gen(o, "\n");
    emit_at_head(u, fn, o, ";");
    emit_caller_macro(fn, o);
}

static void emit_wrapper(const fe_unit *u, const fe_func *fn, fe_out *o)
{
    const char *proto = fe_prototype(u, fn);
    fe_out_at(o, fn->line, "%s", proto);
    emit_call_body(fn, o, fe_format("(ag_loc){%s, %d}", fe_c_string(u->src->path), fn->line));
    if (!has_caller_macro(u, fn))
        return;
    /* every call may go through f__at: a static f is then never called */
    if (strncmp(proto, "static ", 7) == 0 || strstr(proto, " static "))
        fe_out_gen(o, "__attribute__((unused)) %s;\n", proto);
    emit_at_head(u, fn, o, "");
    emit_call_body(fn, o, "ag__loc");
    emit_caller_macro(fn, o);
}

/* early_callers: a macro for calls before the definition is defined
 * (emit_early_callers); the definition's prototype must not expand it. */
static void emit_function(const fe_unit *u, fe_func *fn, bool early_callers, fe_out *o)
{
    if (!fn->body)
        return; /* parse.c reported why it has none: there is no output */
    if (early_callers)
        fe_out_gen(o, "#undef %s\n", fn->name);
    fe_out_at(o, fn->line, "%s;", fe_prototype(u, fn));
    fe_out_gen(o, "\n");
    fe_out lifted, body;
    fe_out_init(&lifted, u->src);
    fe_out_init(&body, u->src);
    fe_gen_function(fn, u->src, &lifted, &body);
    fe_out_append(o, &lifted);
    fe_out_append(o, &body);
    fe_buf_free(&lifted.buf);
    fe_buf_free(&body.buf);
    emit_trace(u, fn, o);
    emit_desc(u, fn, o);
    emit_wrapper(u, fn, o);
}

/* The user's text in [from, to), with the early callers' declarations of
 * function i after its prototype, at early[i] (0: none), in the text's
 * order. */
static void emit_gap_with_early_callers(const fe_unit *u, const unsigned *early, unsigned from,
                                        unsigned to, fe_out *o)
{
    for (;;) {
        int next = -1;
        for (int i = 0; i < u->funcs.n; i++)
            if (early[i] > from && early[i] <= to && (next < 0 || early[i] < early[next]))
                next = i;
        if (next < 0)
            break;
        fe_out_gap(o, (fe_range){from, early[next]});
        emit_early_callers(u, u->funcs.items[next], o);
        from = early[next];
    }
    fe_out_gap(o, (fe_range){from, to});
}

void fe_emit_unit(const fe_unit *u, fe_out *o)
{
    fe_out_gen(o, "/* Generated by agc %s from %s; edit %s, not this file. */\n",
               AGC_VERSION_STRING, u->src->path, u->src->path);
    unsigned *early = calloc((size_t)u->funcs.n + 1, sizeof *early);
    for (int i = 0; i < u->funcs.n; i++)
        early[i] = early_callers_from(u, u->funcs.items[i]);
    unsigned pos = 0;
    for (int i = 0; i < u->funcs.n; i++) {
        fe_func *fn = u->funcs.items[i];
        emit_gap_with_early_callers(u, early, pos, fn->range.begin, o);
        emit_function(u, fn, early[i] != 0, o);
        pos = fn->range.end;
    }
    fe_out_gap(o, (fe_range){pos, u->src->len});
    free(early);
}
