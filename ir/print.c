/*
 * print.c - the text form of a function (docs/ir.md has the grammar).
 *
 * The printer is the reference for the format: parse.c accepts exactly what
 * it writes, and print -> parse -> print gives the same bytes. Everything is
 * printed in a fixed order (program order, attributes in RT_A_* bit order)
 * and numbers in a form that reads back exactly, so printing is
 * deterministic and lossless.
 */
#include "ir.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

enum { INDENT_STEP = 2 };

static void print_graph_body(const ir_graph *g, int indent, FILE *out);

/* ------------------------------------------------------------- atoms */

/* A string in double quotes: \" \\ \n \t \r by name, other control bytes
 * as three-digit octal (unambiguous, unlike C's greedy \x); bytes >= 0x80
 * are written raw so UTF-8 text stays readable. */
static void print_string(const char *s, FILE *out)
{
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        switch (*p) {
        case '"': fputs("\\\"", out); break;
        case '\\': fputs("\\\\", out); break;
        case '\n': fputs("\\n", out); break;
        case '\t': fputs("\\t", out); break;
        case '\r': fputs("\\r", out); break;
        default:
            if (*p < 0x20 || *p == 0x7f)
                fprintf(out, "\\%03o", *p);
            else
                fputc(*p, out);
        }
    }
    fputc('"', out);
}

/* A name after '@' is bare when it is a plain identifier, else quoted. */
static bool is_bare_name(const char *s)
{
    if (!s || !*s)
        return false;
    for (const char *p = s; *p; p++) {
        char c = *p;
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
                  (p != s && c >= '0' && c <= '9');
        if (!ok)
            return false;
    }
    return true;
}

/* ir_type_str, except that a tensor of unknown rank (ta_read of a tensor
 * array whose element shape is unknown gives one) prints as `f32[*]`. */
static void print_type(const ir_type *t, FILE *out)
{
    char buf[256];
    if (t->dtype != RT_LIST && t->shape.rank < 0)
        fprintf(out, "%s[*]", ag_dtype_name(t->dtype));
    else
        fputs(ir_type_str(t, buf, sizeof buf), out);
}

/* nan, inf and -inf by name (printf's spelling varies); others with
 * `digits` significant digits, enough to read back the same value. */
static void print_double(double v, int digits, FILE *out)
{
    if (isnan(v))
        fputs("nan", out);
    else if (isinf(v))
        fputs(v > 0 ? "inf" : "-inf", out);
    else
        fprintf(out, "%.*g", digits, v);
}

static void print_int_list(const ag_shape *s, FILE *out)
{
    fputc('[', out);
    for (int i = 0; i < s->rank; i++)
        fprintf(out, "%s%" PRId64, i ? "," : "", s->dims[i]);
    fputc(']', out);
}

/* ---------------------------------------------------------- literals */

static void print_element(const rt_value *v, int64_t i, FILE *out)
{
    switch (v->dtype) {
    case AG_F32: print_double(((const float *)v->data)[i], 9, out); break;
    case AG_BF16: print_double(rt_load_f64(AG_BF16, v->data, i), 9, out); break;
    case AG_F64: print_double(((const double *)v->data)[i], 17, out); break;
    case AG_I32: fprintf(out, "%" PRId32, ((const int32_t *)v->data)[i]); break;
    case AG_I64: fprintf(out, "%" PRId64, ((const int64_t *)v->data)[i]); break;
    case AG_BOOL: fputc(((const uint8_t *)v->data)[i] ? '1' : '0', out); break;
    case AG_I8: fprintf(out, "%d", ((const int8_t *)v->data)[i]); break;
    default: fputc('?', out); break;
    }
}

/* The elements flat, in row-major order; the node's type has the shape. */
static void print_literal(const rt_value *v, FILE *out)
{
    fputc('[', out);
    int64_t n = v ? rt_shape_numel(&v->shape) : 0;
    for (int64_t i = 0; v && v->data && i < n; i++) {
        if (i)
            fputc(',', out);
        print_element(v, i, out);
    }
    fputc(']', out);
}

/* ---------------------------------------------------------- attributes */

static int var_index(const ir_function *fn, const void *ref)
{
    for (int i = 0; i < fn->n_vars; i++)
        if (fn->vars[i] == ref)
            return i;
    return -1;
}

static void print_ref(const ir_function *fn, const void *ref, FILE *out)
{
    int i = var_index(fn, ref);
    if (i >= 0)
        fprintf(out, "@v%d", i);
    else
        fputs("@<unregistered>", out); /* a builder bug; will not parse */
}

static void print_key_list(const char *key, const ag_shape *s, FILE *out)
{
    fprintf(out, "%s = ", key);
    print_int_list(s, out);
}

static void print_key_double(const char *key, double v, FILE *out)
{
    fprintf(out, "%s = ", key);
    print_double(v, 17, out);
}

/* One attribute `key = value` for the RT_A_* bit `bit`. */
static void print_attr(const ir_node *n, unsigned bit, FILE *out)
{
    const rt_attrs *a = &n->attrs;
    switch (bit) {
    case RT_A_AXIS:
        if (a->axis == AG_ALL_AXES)
            fputs("axis = all", out);
        else
            fprintf(out, "axis = %" PRId64, a->axis);
        break;
    case RT_A_KEEPDIMS: fprintf(out, "keepdims = %s", a->keepdims ? "true" : "false"); break;
    case RT_A_DTYPE: fprintf(out, "dtype = %s", ag_dtype_name(a->dtype)); break;
    case RT_A_SHAPE: print_key_list("shape", &a->shape, out); break;
    case RT_A_BEGIN: print_key_list("begin", &a->begin, out); break;
    case RT_A_SIZE: print_key_list("size", &a->size, out); break;
    case RT_A_PERM: print_key_list("perm", &a->perm, out); break;
    case RT_A_STRIDES: fprintf(out, "strides = [%d,%d]", a->stride_h, a->stride_w); break;
    case RT_A_PADDING: fprintf(out, "padding = %s", a->padding == AG_SAME ? "SAME" : "VALID"); break;
    case RT_A_VALUE: print_key_double("value", a->value, out); break;
    case RT_A_RANGE:
        print_key_double("lo", a->lo, out);
        fputs(", ", out);
        print_key_double("hi", a->hi, out);
        break;
    case RT_A_SEED: fprintf(out, "seed = %" PRIu64, a->seed); break;
    case RT_A_N: fprintf(out, "n = %" PRId64, a->n); break;
    case RT_A_TEXT:
        fputs("text = ", out);
        print_string(a->text, out);
        break;
    case RT_A_REF:
        fputs("ref = ", out);
        print_ref(n->graph->fn, a->ref, out);
        break;
    case RT_A_LITERAL:
        fputs("value = ", out);
        print_literal(a->literal, out);
        break;
    case RT_A_DYNAMIC: fprintf(out, "dynamic = %s", a->dynamic ? "true" : "false"); break;
    }
}

/* ` {k = v, ...}` with the op's attributes in bit order; nothing when the
 * op has none. get prints its index the same way. */
static void print_attrs(const ir_node *n, FILE *out)
{
    if (n->opcode == IR_GET) {
        fprintf(out, " {index = %d}", n->index);
        return;
    }
    unsigned mask = n->opcode >= 0 && n->opcode < RT_OP_COUNT ? rt_ops[n->opcode].attrs : 0;
    if (!mask)
        return;
    const char *sep = " {";
    for (unsigned bit = 1; bit && bit <= mask; bit <<= 1) {
        if (!(mask & bit))
            continue;
        fputs(sep, out);
        print_attr(n, bit, out);
        sep = ", ";
    }
    fputc('}', out);
}

/* -------------------------------------------------------------- nodes */

static void print_values(ir_node *const *v, int n, FILE *out)
{
    for (int i = 0; i < n; i++)
        fprintf(out, "%s%%%d", i ? ", " : "", v[i] ? v[i]->id : -1);
}

static void print_params(const ir_graph *g, FILE *out)
{
    fputc('(', out);
    for (int i = 0; i < g->n_params; i++) {
        fprintf(out, "%s%%%d: ", i ? ", " : "", g->params[i]->id);
        print_type(&g->params[i]->type, out);
    }
    fputc(')', out);
}

static void print_result_types(const ir_type *t, int n, FILE *out)
{
    fputc('(', out);
    for (int i = 0; i < n; i++) {
        if (i)
            fputs(", ", out);
        print_type(&t[i], out);
    }
    fputc(')', out);
}

static bool is_region_op(const ir_node *n)
{
    return n->opcode == IR_COND || n->opcode == IR_WHILE;
}

/* ` loc("file":line[:col]) device("tpu-model") scope("f/g")`, each only when set. */
static void print_loc_device(const ir_node *n, FILE *out)
{
    if (n->loc.file) {
        fputs(" loc(", out);
        print_string(n->loc.file, out);
        fprintf(out, ":%d", n->loc.line);
        if (n->col > 0)
            fprintf(out, ":%d", n->col);
        fputc(')', out);
    }
    if (n->device != IR_HOST) {
        const char *name = ir_device_name(n->device);
        fputs(" device(", out);
        print_string(name ? name : "?", out);
        fputc(')', out);
    }
    if (n->scope) {
        fputs(" scope(", out);
        print_string(n->scope, out);
        fputc(')', out);
    }
}

/*   ^label(params):
 *     nodes
 *     yield values                                                     */
static void print_region(const ir_graph *r, const char *label, int indent, FILE *out)
{
    fprintf(out, "%*s^%s", indent, "", label);
    print_params(r, out);
    fputs(":\n", out);
    print_graph_body(r, indent + INDENT_STEP, out);
    fprintf(out, "%*syield", indent + INDENT_STEP, "");
    if (r->n_results)
        fputc(' ', out);
    print_values(r->results, r->n_results, out);
    fputc('\n', out);
}

static void print_regions(const ir_node *n, int indent, FILE *out)
{
    static const char *const labels[2][2] = {{"then", "else"}, {"cond", "body"}};
    const char *const *l = labels[n->opcode == IR_WHILE];
    fputs(" {\n", out);
    for (int r = 0; r < 2; r++)
        if (n->region[r])
            print_region(n->region[r], l[r], indent, out);
    fprintf(out, "%*s}", indent, "");
}

/* %id = op(inputs) {attrs} [after %c] : type [loc(...)] [device(...)] [regions] */
static void print_node(const ir_node *n, int indent, FILE *out)
{
    fprintf(out, "%*s%%%d = %s(", indent, "", n->id, ir_opcode_name(n->opcode));
    print_values(n->in, n->n_in, out);
    fputc(')', out);
    print_attrs(n, out);
    if (n->ctrl)
        fprintf(out, " after %%%d", n->ctrl->id);
    fputs(" : ", out);
    if (is_region_op(n))
        print_result_types(n->results, n->n_results, out);
    else
        print_type(&n->type, out);
    print_loc_device(n, out);
    if (is_region_op(n))
        print_regions(n, indent, out);
    fputc('\n', out);
}

static void print_graph_body(const ir_graph *g, int indent, FILE *out)
{
    for (const ir_node *n = g->first; n; n = n->next)
        print_node(n, indent, out);
}

/* ----------------------------------------------------------- function */

static void print_vars(const ir_function *fn, FILE *out)
{
    if (!fn->n_vars)
        return;
    fputs(" vars(", out);
    for (int i = 0; i < fn->n_vars; i++) {
        const rt_value *v = fn->vars[i]->value;
        ir_type t = {.dtype = v->dtype, .elem_dtype = v->elem_dtype, .shape = v->shape};
        fprintf(out, "%s@v%d: ", i ? ", " : "", i);
        print_type(&t, out);
    }
    fputc(')', out);
}

/* func @name(params) -> (result types) [vars(...)] { nodes  return values } */
void ir_print(const ir_function *fn, FILE *out)
{
    const ir_graph *g = fn->body;
    fputs("func @", out);
    if (is_bare_name(fn->name))
        fputs(fn->name, out);
    else
        print_string(fn->name, out);
    print_params(g, out);
    fputs(" -> (", out);
    for (int i = 0; i < g->n_results; i++) {
        if (i)
            fputs(", ", out);
        if (g->results[i])
            print_type(&g->results[i]->type, out);
    }
    fputc(')', out);
    print_vars(fn, out);
    fputs(" {\n", out);
    print_graph_body(g, INDENT_STEP, out);
    fprintf(out, "%*sreturn", INDENT_STEP, "");
    if (g->n_results)
        fputc(' ', out);
    print_values(g->results, g->n_results, out);
    fputs("\n}\n", out);
}
