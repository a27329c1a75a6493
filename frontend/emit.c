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
 *
 * Calls between AG_FUNCTIONs call the wrappers; the runtime inlines them
 * while tracing.
 */
#include "fe.h"

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

static void emit_wrapper(const fe_unit *u, const fe_func *fn, fe_out *o)
{
    fe_out_at(o, fn->line, "%s", fe_prototype(u, fn));
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
    fe_out_gen(o, "    ag_function_call_at((ag_loc){%s, %d}, &%s__desc, %s, %s);\n",
               fe_c_string(u->src->path), fn->line, fn->name, fn->n_params ? "ag__args" : "NULL",
               nout ? "ag__out" : "NULL");
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

static void emit_function(const fe_unit *u, fe_func *fn, fe_out *o)
{
    if (!fn->body)
        return; /* parse.c reported why it has none: there is no output */
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

void fe_emit_unit(const fe_unit *u, fe_out *o)
{
    fe_out_gen(o, "/* Generated by agc %s from %s; edit %s, not this file. */\n",
               AGC_VERSION_STRING, u->src->path, u->src->path);
    unsigned pos = 0;
    for (int i = 0; i < u->funcs.n; i++) {
        fe_func *fn = u->funcs.items[i];
        fe_out_gap(o, (fe_range){pos, fn->range.begin});
        emit_function(u, fn, o);
        pos = fn->range.end;
    }
    fe_out_gap(o, (fe_range){pos, u->src->len});
}
