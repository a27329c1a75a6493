/*
 * listing.c - a TPU program as text, for people (agc --emit=tpu):
 *
 *   ; @mlp on tpu-model (v5e: 4 MXUs of 128x128 at 1.50 GHz): 3 mxu, 2 vpu loops, 1 xlu
 *   ; hbm: 1.2 MiB of 16.0 GiB
 *   dma.h2d     %0 f32[64,784] -> hbm[0x0] 262144 B (61440 padding)   8.6 us
 *   mxu.matmul  %3 = matmul(%0, %1) f32[64,512] -> hbm[0x...] 28 tiles x 1 pass  4096 cycles   ; mlp.c:12
 *   vpu.loop    %4 add, %5 relu f32[64,512] -> hbm[0x...] 32 vregs  64 cycles   ; mlp.c:13
 *   scalar.while %9 {  ... region programs, indented ...  }
 *   dma.d2h     %12 f32[64,10] ...
 *
 * docs/tpu-model.md describes every field.
 */
#include "program.h"

#include <string.h>

static void indent(FILE *out, int depth)
{
    for (int i = 0; i < depth; i++)
        fputs("  ", out);
}

static void put_location(FILE *out, const ir_node *n)
{
    if (n->loc.file) {
        const char *base = strrchr(n->loc.file, '/');
        fprintf(out, "   ; %s:%d", base ? base + 1 : n->loc.file, n->loc.line);
    }
    fputc('\n', out);
}

static void put_place(FILE *out, const tpu_inst *x)
{
    if (x->hbm_addr >= 0)
        fprintf(out, " -> hbm[0x%llx]", (unsigned long long)x->hbm_addr);
}

static void put_operands(FILE *out, const ir_node *n)
{
    fputc('(', out);
    for (int i = 0; i < n->n_in; i++)
        fprintf(out, "%s%%%d", i ? ", " : "", n->in[i]->id);
    fputc(')', out);
}

static void put_loop(const tpu_program *p, const ir_node *head, const tpu_inst *x, FILE *out)
{
    char t[128];
    fputs("vpu.loop    ", out);
    int shown = 0;
    for (const ir_node *m = head; m; m = m->next) {
        bool member = x->loop < 0 ? m == head
                                  : m->id < p->fusion->n_ids && p->fusion->cluster[m->id] == x->loop;
        if (member)
            fprintf(out, "%s%%%d %s", shown++ ? ", " : "", m->id, rt_ops[m->opcode].name);
        if (x->loop < 0)
            break;
    }
    fprintf(out, " %s", ir_type_str(&head->type, t, sizeof t));
    put_place(out, x);
    fprintf(out, "  %lld vregs  %lld cycles", (long long)x->tiles, (long long)x->cycles);
}

static void print_graph(const tpu_program *p, const ir_graph *g, int depth, FILE *out);

static void put_region_op(const tpu_program *p, const ir_node *n, const tpu_inst *x, int depth,
                          FILE *out)
{
    fprintf(out, "scalar.%s %%%d", n->opcode == IR_COND ? "cond" : "while", n->id);
    put_operands(out, n);
    fprintf(out, "  %lld cycles per decision", (long long)x->cycles);
    put_location(out, n);
    static const char *const names[2][2] = {{"then", "else"}, {"cond", "body"}};
    for (int r = 0; r < 2; r++) {
        indent(out, depth + 1);
        fprintf(out, "%s {\n", names[n->opcode == IR_WHILE][r]);
        print_graph(p, n->region[r], depth + 2, out);
        indent(out, depth + 1);
        fputs("}\n", out);
    }
}

static void print_node(const tpu_program *p, const ir_node *n, int depth, FILE *out)
{
    const tpu_inst *x = &p->inst[n->id];
    char t[128];
    if (x->kind == TPU_NONE || (x->kind == TPU_VPU_LOOP && !x->loop_head))
        return;
    indent(out, depth);
    switch (x->kind) {
    case TPU_CONST:
        fprintf(out, "hbm.const   %%%d %s", n->id, ir_type_str(&n->type, t, sizeof t));
        put_place(out, x);
        break;
    case TPU_MXU:
        fprintf(out, "mxu.%-7s %%%d = %s", rt_ops[n->opcode].name, n->id, rt_ops[n->opcode].name);
        put_operands(out, n);
        fprintf(out, " %s", ir_type_str(&n->type, t, sizeof t));
        put_place(out, x);
        fprintf(out, "  %lld tiles x %d pass%s  %lld cycles", (long long)x->tiles, x->passes,
                x->passes > 1 ? "es" : "", (long long)x->cycles);
        break;
    case TPU_VPU_LOOP: put_loop(p, n, x, out); break;
    case TPU_XLU:
        fprintf(out, "xlu.%-7s %%%d = %s", rt_ops[n->opcode].name, n->id, rt_ops[n->opcode].name);
        put_operands(out, n);
        fprintf(out, " %s", ir_type_str(&n->type, t, sizeof t));
        put_place(out, x);
        fprintf(out, "  %lld cycles", (long long)x->cycles);
        break;
    case TPU_TRANSFER:
        fprintf(out, "dma.%-7s %%%d = %s(%%%d) %s", rt_ops[n->opcode].name, n->id,
                rt_ops[n->opcode].name, n->in[0]->id, ir_type_str(&n->type, t, sizeof t));
        put_place(out, x);
        fprintf(out, "  %lld B  %lld cycles", (long long)x->hbm_bytes, (long long)x->cycles);
        break;
    case TPU_HOST:
        fprintf(out, "host.%-6s %%%d = %s", rt_ops[n->opcode].name, n->id, rt_ops[n->opcode].name);
        put_operands(out, n);
        fprintf(out, "  %lld cycles", (long long)x->cycles);
        break;
    case TPU_COND:
    case TPU_WHILE: put_region_op(p, n, x, depth, out); return;
    case TPU_NONE: return;
    }
    put_location(out, n);
}

static void print_graph(const tpu_program *p, const ir_graph *g, int depth, FILE *out)
{
    for (const ir_node *n = g->first; n; n = n->next)
        print_node(p, n, depth, out); /* nodes that never run are TPU_NONE */
}

static void put_transfer(FILE *out, const char *what, const ir_node *v, const tpu_transfer *x,
                         const tpu_inst *place, double clock_hz)
{
    char t[128];
    fprintf(out, "%s     %%%d %s", what, v->id, ir_type_str(&v->type, t, sizeof t));
    if (place->hbm_addr >= 0)
        fprintf(out, " %s hbm[0x%llx]", strcmp(what, "dma.h2d") == 0 ? "->" : "<-",
                (unsigned long long)place->hbm_addr);
    fprintf(out, " %lld B (%lld padding)  %.2f us\n", (long long)x->bytes,
            (long long)x->padded_bytes, (double)x->cycles / clock_hz * 1e6);
}

void tpu_program_print(const tpu_program *p, FILE *out)
{
    const tpu_spec *s = &p->spec;
    const ir_graph *body = p->fn->body;
    fprintf(out, "; @%s on tpu-model (%s: %lld MXUs of %lldx%lld at %.2f GHz): %d mxu, "
                 "%d vpu loops, %d xlu\n",
            p->fn->name ? p->fn->name : "?", s->name, (long long)s->mxu.count,
            (long long)s->mxu.rows, (long long)s->mxu.cols, s->clock_hz / 1e9, p->n_mxu,
            p->n_loops, p->n_xlu);
    fprintf(out, "; hbm: %.1f MiB of %.1f GiB\n", (double)p->hbm_bytes / (1 << 20),
            (double)s->hbm.capacity_bytes / (1 << 30));
    /* what only the host reads, or the host made, does not cross */
    for (int i = 0; i < body->n_params; i++)
        if (p->params[i].cycles)
            put_transfer(out, "dma.h2d", body->params[i], &p->params[i],
                         &p->inst[body->params[i]->id], s->clock_hz);
    print_graph(p, body, 0, out);
    for (int i = 0; i < body->n_results; i++)
        if (p->results[i].cycles)
            put_transfer(out, "dma.d2h", body->results[i], &p->results[i],
                         &p->inst[body->results[i]->id], s->clock_hz);
}
