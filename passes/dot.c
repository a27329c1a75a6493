/*
 * dot.c - draws a function's graph in Graphviz's dot language, for
 * `agc --emit=dot` and `agc-opt --emit-dot` (docs/passes.md, "Drawing a
 * graph").
 *
 * The text IR is exact but hard to read as a graph; a drawing shows at a
 * glance what feeds what, which ops fuse into one loop, and what runs
 * inside a cond or while. The drawing is for people: it changes nothing
 * and does not read back.
 *
 * Layout of the output, deterministic (program order throughout):
 *   - one dot node per IR node `n<id>` (parameters, ops, constants, gets,
 *     cond/while), labelled "%id op [detail]", its type, and the user's
 *     "file:line" (the file's basename); one node per graph for its
 *     results, `ret` at the top and `n<id>_<region>_yield` in a region;
 *   - the fusion plan's clusters as `subgraph cluster_fused_<k>` boxes
 *     holding their members; a cond or while as `subgraph cluster_n<id>`
 *     holding its op node and one box per region (`cluster_n<id>_then`,
 *     labelled "cond then", ...), with the region's parameters and yield;
 *   - edges after all nodes (a node first named in an edge would be drawn
 *     outside its box): operands to users, dashed effect-chain edges,
 *     a cond/while's operands to its regions' parameters (regions have no
 *     implicit captures, so these are the captured outer values), and
 *     each region's yield to its op node, which feeds the op's gets;
 *   - colours by device: nodes placed on a device (tpu) green, transfers
 *     between host and device (to_device, to_host) red, host effects
 *     yellow, the rest (host) white.
 */
#include "pass_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum {
    INDENT_STEP = 2,
    MAX_TEXT_BYTES = 40 /* longer print/assert texts are cut, with "..." */
};

typedef struct dot_writer {
    const ir_function *fn;
    FILE *out;
    const pass_fusion_plan *plan;
    bool *cluster_done; /* by fusion cluster: its box is written */
} dot_writer;

static void put_graph_nodes(dot_writer *w, const ir_graph *g, int depth);
static void put_graph_edges(const dot_writer *w, const ir_graph *g);

/* ------------------------------------------------------------ text */

static void indent(const dot_writer *w, int depth)
{
    fprintf(w->out, "%*s", depth * INDENT_STEP, "");
}

/* The length of the well-formed UTF-8 sequence at p, or 0. */
static int utf8_length(const unsigned char *p)
{
    int n = 0;
    if (*p >= 0xc2 && *p <= 0xdf)
        n = 2;
    else if (*p >= 0xe0 && *p <= 0xef)
        n = 3;
    else if (*p >= 0xf0 && *p <= 0xf4)
        n = 4;
    for (int i = 1; i < n; i++) /* stops at the NUL: it is no continuation */
        if ((p[i] & 0xc0) != 0x80)
            return 0;
    return n;
}

/* How put_text shows a string: as it is (a name), or as the text IR
 * writes it (a print's text, whose quotes and backslashes are escaped so
 * that the label reads unambiguously). */
typedef enum text_form { TEXT_NAME, TEXT_QUOTED } text_form;

/* One character of put_text: `n` bytes at p (0: a byte that is not UTF-8).
 * What the label shows as `\n` is written `\\n`: dot reads `\\` as one
 * backslash, while `\n` alone would break the line. */
static void put_char(FILE *out, const unsigned char *p, int n, text_form form)
{
    if (*p == '"' || *p == '\\')
        fprintf(out, "%s\\%c", form == TEXT_QUOTED ? "\\\\" : "", *p);
    else if (*p == '\n')
        fputs("\\\\n", out);
    else if (*p == '\t')
        fputs("\\\\t", out);
    else if (*p == '\r')
        fputs("\\\\r", out);
    else if (*p < 0x20 || *p == 0x7f)
        fprintf(out, "\\\\%03o", *p);
    else if (n == 0)
        fprintf(out, "\\\\x%02x", *p);
    else
        fwrite(p, 1, (size_t)n, out);
}

/*
 * Writes up to `max` bytes of s inside a double-quoted dot string, such
 * that the label shows it on one line: control bytes as `\n`, `\t`, `\r`
 * or `\ooo` (as the text IR writes them) and bytes that are not UTF-8 as
 * `\xHH`. A cut text ends with "..."; it is never cut inside a UTF-8
 * sequence.
 */
static void put_text(FILE *out, const char *s, size_t max, text_form form)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    size_t used = 0;
    while (*p) {
        int n = *p >= 0x80 ? utf8_length(p) : 1;
        size_t len = n ? (size_t)n : 1;
        if (used + len > max) {
            fputs("...", out);
            return;
        }
        put_char(out, p, n, form);
        used += len;
        p += len;
    }
}

/* "f32[2,?]", or "f32[*]" for a tensor of unknown rank (as ir_print). */
static void put_type(FILE *out, const ir_type *t)
{
    char buf[256];
    if (t->dtype != RT_LIST && t->shape.rank < 0)
        fprintf(out, "%s[*]", ag_dtype_name(t->dtype));
    else
        fputs(ir_type_str(t, buf, sizeof buf), out);
}

/* A cond/while's result types, "(i32[], f32[4])"; else the node's type. */
static void put_node_type(FILE *out, const ir_node *n)
{
    if (!pass_is_region_op(n)) {
        put_type(out, &n->type);
        return;
    }
    fputc('(', out);
    for (int i = 0; i < n->n_results; i++) {
        if (i)
            fputs(", ", out);
        put_type(out, &n->results[i]);
    }
    fputc(')', out);
}

/* "\nfile.c:12", the basename of the user's file, when the node has one. */
static void put_loc(FILE *out, const ir_node *n)
{
    if (!n->loc.file || !*n->loc.file)
        return;
    const char *base = strrchr(n->loc.file, '/');
    base = base && base[1] ? base + 1 : n->loc.file;
    fputs("\\n", out);
    put_text(out, base, SIZE_MAX, TEXT_NAME);
    fprintf(out, ":%d", n->loc.line);
}

/* ---------------------------------------------------------- labels */

/* A scalar constant's value (larger constants show only their type). */
static void put_scalar(FILE *out, const rt_value *v)
{
    if (!v || !v->data || rt_shape_numel(&v->shape) != 1)
        return;
    if (v->dtype == AG_F32 || v->dtype == AG_F64 || v->dtype == AG_BF16) {
        double d = rt_load_f64(v->dtype, v->data, 0);
        if (isnan(d))
            fputs(" nan", out);
        else
            fprintf(out, " %.6g", d);
    } else {
        fprintf(out, " %" PRId64, rt_load_i64(v->dtype, v->data, 0));
    }
}

static int var_index(const ir_function *fn, const void *ref)
{
    for (int i = 0; i < fn->n_vars; i++)
        if (fn->vars[i] == ref)
            return i;
    return -1;
}

/* What tells this node from others of its op: a get's or parameter's
 * index, a scalar constant's value, a print's text, a variable. */
static void put_detail(const dot_writer *w, const ir_node *n)
{
    if (n->opcode == IR_GET || n->opcode == IR_PARAM) {
        fprintf(w->out, " #%d", n->index);
        return;
    }
    unsigned mask = n->opcode >= 0 && n->opcode < RT_OP_COUNT ? rt_ops[n->opcode].attrs : 0;
    if (mask & RT_A_LITERAL)
        put_scalar(w->out, n->attrs.literal);
    if (mask & RT_A_TEXT) {
        fputs(" \\\"", w->out);
        put_text(w->out, n->attrs.text, MAX_TEXT_BYTES, TEXT_QUOTED);
        fputs("\\\"", w->out);
    }
    if (mask & RT_A_REF) {
        int v = var_index(w->fn, n->attrs.ref);
        if (v >= 0)
            fprintf(w->out, " @v%d", v);
        else
            fputs(" @<unregistered>", w->out); /* a builder bug, as ir_print */
    }
}

/* How a node looks: parameters and constants stand apart from ops,
 * effects are filled, a cond/while is bold. */
static const char *node_style(const ir_node *n)
{
    if (n->opcode == IR_PARAM)
        return "shape=invhouse";
    if (pass_is_const(n))
        return "shape=ellipse";
    if (pass_is_region_op(n))
        return "style=\"rounded,bold\"";
    if (n->effect)
        return "style=\"rounded,filled\", fillcolor=\"#fff2cc\"";
    if (n->opcode == RT_OP_TO_DEVICE || n->opcode == RT_OP_TO_HOST)
        return "style=\"rounded,filled\", fillcolor=\"#f8cecc\""; /* the host link */
    if (n->device != IR_HOST)
        return "style=\"rounded,filled\", fillcolor=\"#d5e8d4\""; /* on the device */
    return NULL;
}

/* n12 [label="%12 add\nf32[4,8]\nf.c:7"]; */
static void put_node(const dot_writer *w, const ir_node *n, int depth)
{
    FILE *out = w->out;
    indent(w, depth);
    fprintf(out, "n%d [label=\"%%%d %s", n->id, n->id, ir_opcode_name(n->opcode));
    put_detail(w, n);
    fputs("\\n", out);
    put_node_type(out, n);
    put_loc(out, n);
    if (n->device != IR_HOST)
        fprintf(out, "\\n%s", ir_device_name(n->device));
    fputc('"', out);
    const char *style = node_style(n);
    if (style)
        fprintf(out, ", %s", style);
    fputs("];\n", out);
}

/* ------------------------------------------------ results and regions */

/* "then"/"else" for a cond's regions, "cond"/"body" for a while's. */
static const char *region_name(const ir_graph *g)
{
    static const char *const names[2][2] = {{"then", "else"}, {"cond", "body"}};
    const ir_node *p = g->parent;
    return names[p->opcode == IR_WHILE][g == p->region[1]];
}

/* The dot node of g's results: `ret`, or `n5_then_yield` in a region. */
static void put_results_id(FILE *out, const ir_graph *g)
{
    if (g->parent)
        fprintf(out, "n%d_%s_yield", g->parent->id, region_name(g));
    else
        fputs("ret", out);
}

static void put_results_node(const dot_writer *w, const ir_graph *g, int depth)
{
    indent(w, depth);
    put_results_id(w->out, g);
    fprintf(w->out, " [label=\"%s\", shape=house];\n", g->parent ? "yield" : "return");
}

static void put_region(dot_writer *w, const ir_graph *r, int depth)
{
    const ir_node *op = r->parent;
    indent(w, depth);
    fprintf(w->out, "subgraph cluster_n%d_%s {\n", op->id, region_name(r));
    indent(w, depth + 1);
    fprintf(w->out, "label=\"%s %s\";\n", ir_opcode_name(op->opcode), region_name(r));
    indent(w, depth + 1);
    fputs("style=dashed;\n", w->out);
    put_graph_nodes(w, r, depth + 1);
    indent(w, depth);
    fputs("}\n", w->out);
}

/* A box around a cond/while: its regions' boxes, then its own node (the
 * results, which its gets read). */
static void put_region_op(dot_writer *w, const ir_node *n, int depth)
{
    indent(w, depth);
    fprintf(w->out, "subgraph cluster_n%d {\n", n->id);
    indent(w, depth + 1);
    fprintf(w->out, "label=\"%%%d %s\";\n", n->id, ir_opcode_name(n->opcode));
    for (int r = 0; r < 2; r++)
        if (n->region[r])
            put_region(w, n->region[r], depth + 1);
    put_node(w, n, depth + 1);
    indent(w, depth);
    fputs("}\n", w->out);
}

/* ------------------------------------------------------------- fusion */

/* n's fusion cluster when it holds two or more nodes (a loop of one is
 * drawn as its node), else -1. */
static int cluster_of(const dot_writer *w, const ir_node *n)
{
    const pass_fusion_plan *p = w->plan;
    int c = n->id >= 0 && n->id < p->n_ids ? p->cluster[n->id] : -1;
    return c >= 0 && p->cluster_size[c] > 1 ? c : -1;
}

/* Fusion clusters never cross graphs, so g holds all of cluster c. */
static void put_fused(dot_writer *w, const ir_graph *g, int c, int depth)
{
    indent(w, depth);
    fprintf(w->out, "subgraph cluster_fused_%d {\n", c);
    indent(w, depth + 1);
    fprintf(w->out, "label=\"fused loop %d (%d ops)\";\n", c, w->plan->cluster_size[c]);
    indent(w, depth + 1);
    fputs("style=\"rounded,filled\"; color=\"#6c8ebf\"; fillcolor=\"#dae8fc\";\n", w->out);
    for (const ir_node *n = g->first; n; n = n->next)
        if (cluster_of(w, n) == c)
            put_node(w, n, depth + 1);
    indent(w, depth);
    fputs("}\n", w->out);
    w->cluster_done[c] = true;
}

/* -------------------------------------------------------------- nodes */

/* g's parameters, its nodes in program order (a fusion cluster as a whole
 * where its first member is), then its results node. */
static void put_graph_nodes(dot_writer *w, const ir_graph *g, int depth)
{
    for (int i = 0; i < g->n_params; i++)
        put_node(w, g->params[i], depth);
    for (const ir_node *n = g->first; n; n = n->next) {
        int c = cluster_of(w, n);
        if (pass_is_region_op(n))
            put_region_op(w, n, depth);
        else if (c < 0 || c >= w->plan->n_clusters)
            put_node(w, n, depth);
        else if (!w->cluster_done[c])
            put_fused(w, g, c, depth);
    }
    put_results_node(w, g, depth);
}

/* -------------------------------------------------------------- edges */

/* "  n3 -> n7" (an edge's attributes follow). */
static void put_edge_start(const dot_writer *w, const ir_node *from)
{
    indent(w, 1);
    fprintf(w->out, "n%d -> ", from->id);
}

/* How many of n's operands have an edge to n itself: a cond's other
 * operands, and all of a while's, go to the regions' parameters instead
 * (put_captures). */
static int direct_operands(const ir_node *n)
{
    if (n->opcode == IR_WHILE)
        return 0;
    if (n->opcode == IR_COND)
        return n->n_in > 0 ? 1 : 0; /* the predicate */
    return n->n_in;
}

/* Operands to n; a cond's predicate is labelled. */
static void put_operand_edges(const dot_writer *w, const ir_node *n)
{
    int n_direct = direct_operands(n);
    for (int i = 0; i < n_direct; i++) {
        if (!n->in[i])
            continue;
        put_edge_start(w, n->in[i]);
        fprintf(w->out, "n%d%s;\n", n->id, n->opcode == IR_COND ? " [label=\"pred\"]" : "");
    }
}

/* Each outer value a region receives, to the region's parameter. */
static void put_captures(const dot_writer *w, const ir_node *n, const ir_graph *r)
{
    int first = n->opcode == IR_COND; /* a cond's predicate is not passed */
    for (int i = 0; i < r->n_params && first + i < n->n_in; i++) {
        if (!n->in[first + i])
            continue;
        put_edge_start(w, n->in[first + i]);
        fprintf(w->out, "n%d [color=\"#3b6fb6\"];\n", r->params[i]->id);
    }
}

/* The values g yields or returns, to its results node, numbered when
 * there are several. */
static void put_result_edges(const dot_writer *w, const ir_graph *g)
{
    for (int i = 0; i < g->n_results; i++) {
        if (!g->results[i])
            continue;
        put_edge_start(w, g->results[i]);
        put_results_id(w->out, g);
        if (g->n_results > 1)
            fprintf(w->out, " [label=\"%d\"]", i);
        fputs(";\n", w->out);
    }
}

/* A cond/while: captures into each region, the region's own edges, and
 * its yield to the op's node ("go on?" for a while's condition). */
static void put_region_edges(const dot_writer *w, const ir_node *n)
{
    for (int r = 0; r < 2; r++) {
        const ir_graph *g = n->region[r];
        if (!g)
            continue;
        put_captures(w, n, g);
        put_graph_edges(w, g);
        indent(w, 1);
        put_results_id(w->out, g);
        const char *what = n->opcode == IR_WHILE ? (r == 0 ? "go on?" : "next") : region_name(g);
        fprintf(w->out, " -> n%d [label=\"%s\", style=dotted];\n", n->id, what);
    }
}

/* Edges of g's nodes in program order, regions where their op is, then
 * the results'. */
static void put_graph_edges(const dot_writer *w, const ir_graph *g)
{
    for (const ir_node *n = g->first; n; n = n->next) {
        put_operand_edges(w, n);
        if (n->ctrl) {
            put_edge_start(w, n->ctrl);
            fprintf(w->out, "n%d [style=dashed, color=\"#888888\"];\n", n->id);
        }
        if (pass_is_region_op(n))
            put_region_edges(w, n);
    }
    put_result_edges(w, g);
}

/* ----------------------------------------------------------- function */

static void put_header(const dot_writer *w)
{
    FILE *out = w->out;
    fputs("digraph \"", out);
    put_text(out, w->fn->name, SIZE_MAX, TEXT_NAME);
    fputs("\" {\n", out);
    indent(w, 1);
    fputs("graph [fontname=\"Helvetica\", fontsize=10];\n", out);
    indent(w, 1);
    fputs("node [shape=box, style=rounded, fontname=\"Helvetica\", fontsize=10];\n", out);
    indent(w, 1);
    fputs("edge [fontname=\"Helvetica\", fontsize=9];\n", out);
}

void pass_print_dot(const ir_function *fn, const pass_fusion_plan *plan, FILE *out)
{
    dot_writer w = {fn, out, plan, NULL};
    w.cluster_done = rt_xcalloc((size_t)w.plan->n_clusters + 1, sizeof *w.cluster_done);
    put_header(&w);
    put_graph_nodes(&w, fn->body, 1);
    put_graph_edges(&w, fn->body);
    fputs("}\n", out);
    free(w.cluster_done);
}
