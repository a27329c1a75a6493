/*
 * listing.c - a TPU program as text, for people (agc --emit=tpu):
 *
 *   ; @mlp on tpu-model (v5e: 4 MXUs of 128x128 at 1.50 GHz): 3 mxu, 2 vpu loops, 1 xlu
 *   ; hbm: 1.2 MiB of 16.0 GiB at the peak (buffers reused once dead)
 *   dma.h2d     %0 f32[64,784] -> hbm[0x0] 262144 B (61440 padding)   8.6 us
 *   mxu.matmul  %3 = matmul(%0@0x0, %1@0x38000) f32[64,512] -> hbm[0x...]  28 tiles x 1 pass
 *               3609 cycles  vmem 8 x 224.0 KiB  5100 cycles in all   ; mlp.c:12
 *   vpu.loop    %4 add, %5 relu (%3@0x..., %2@0x...) f32[64,512] -> %5@0x...  ...
 *   scalar.while %9 {  ... region programs, indented ...  }
 *   dma.d2h     %12 f32[64,10] ...
 *
 * (an instruction is one line; `%n@ADDR` is value %n read from HBM at ADDR,
 * `%n@vmem[ADDR]` one kept in VMEM, and `-> vmem[ADDR]` a result kept there).
 * docs/tpu-model.md describes every field.
 */
#include "program.h"

#include "partition.h"

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
    else if (x->vmem)
        fprintf(out, " -> vmem[0x%llx]", (unsigned long long)x->vmem_addr);
}

/* %n, and @ADDR when the value is in HBM, @vmem[ADDR] when it stays in
 * VMEM (vmem.c; a view's is its input's). */
static void put_value(const tpu_program *p, const ir_node *v, FILE *out)
{
    const tpu_inst *in = &p->inst[tpu_buffer_of(v)->id];
    fprintf(out, "%%%d", v->id);
    if (p->inst[v->id].hbm_addr >= 0)
        fprintf(out, "@0x%llx", (unsigned long long)p->inst[v->id].hbm_addr);
    else if (in->vmem)
        fprintf(out, "@vmem[0x%llx]", (unsigned long long)in->vmem_addr);
}

static void put_operands(const tpu_program *p, const ir_node *n, FILE *out)
{
    fputc('(', out);
    for (int i = 0; i < n->n_in; i++) {
        fputs(i ? ", " : "", out);
        put_value(p, n->in[i], out);
    }
    fputc(')', out);
}

/* The unit's work, then how the instruction is staged through VMEM and
 * what it all takes. */
static void put_cycles(FILE *out, const tpu_inst *x)
{
    if (!x->blocks)
        fprintf(out, "  %lld cycles", (long long)x->cycles);
    else
        fprintf(out, "  %lld cycles  vmem %lld x %.1f KiB  %lld cycles in all",
                (long long)x->work, (long long)x->blocks, (double)x->block_bytes / 1024,
                (long long)x->cycles);
    if (x->vmem_read + x->vmem_written > 0) /* what residency spared HBM */
        fprintf(out, "  hbm saved %lld B", (long long)(x->vmem_read + x->vmem_written));
}

static bool loop_member(const tpu_program *p, const ir_node *m, int loop)
{
    return m->id < p->fusion->n_ids && p->fusion->cluster[m->id] == loop;
}

/* Whether operand i of loop member m was read by the loop before: by an
 * earlier member, or as an earlier operand of m. */
static bool read_before(const tpu_program *p, const ir_node *head, const ir_node *m, int i,
                        int loop)
{
    const ir_node *v = m->in[i];
    for (int j = 0; j < i; j++)
        if (m->in[j] == v)
            return true;
    for (const ir_node *e = head; e != m; e = e->next)
        for (int j = 0; loop_member(p, e, loop) && j < e->n_in; j++)
            if (e->in[j] == v)
                return true;
    return false;
}

/* What a fused loop reads from HBM: its members' operands made outside
 * it, each once. */
static void put_loop_inputs(const tpu_program *p, const ir_node *head, int loop, FILE *out)
{
    int shown = 0;
    fputs(" (", out);
    for (const ir_node *m = head; m; m = m->next) {
        for (int i = 0; loop_member(p, m, loop) && i < m->n_in; i++) {
            if (loop_member(p, m->in[i], loop) || read_before(p, head, m, i, loop))
                continue;
            fputs(shown++ ? ", " : "", out);
            put_value(p, m->in[i], out);
        }
    }
    fputc(')', out);
}

/* And what it stores: the members read outside it. */
static void put_loop_outputs(const tpu_program *p, const ir_node *head, int loop, FILE *out)
{
    int shown = 0;
    for (const ir_node *m = head; m; m = m->next)
        if (loop_member(p, m, loop) && (p->inst[m->id].hbm_addr >= 0 || p->inst[m->id].vmem)) {
            fputs(shown++ ? ", " : " -> ", out);
            put_value(p, m, out);
        }
}

/* The op as users know it (runtime/core/ops.c). */
static const char *listed(const ir_node *n) { return rt_op_listed_name(n->opcode); }

static void put_loop(const tpu_program *p, const ir_node *head, const tpu_inst *x, FILE *out)
{
    char t[128];
    fputs("vpu.loop    ", out);
    if (x->loop < 0) { /* one op on scalars */
        fprintf(out, "%%%d %s", head->id, listed(head));
        put_operands(p, head, out);
        fprintf(out, " %s", ir_type_str(&head->type, t, sizeof t));
        put_place(out, x);
        put_cycles(out, x);
        return;
    }
    int shown = 0;
    for (const ir_node *m = head; m; m = m->next)
        if (loop_member(p, m, x->loop))
            fprintf(out, "%s%%%d %s", shown++ ? ", " : "", m->id, listed(m));
    put_loop_inputs(p, head, x->loop, out);
    fprintf(out, " %s", ir_type_str(&head->type, t, sizeof t));
    put_loop_outputs(p, head, x->loop, out);
    fprintf(out, "  %lld vregs", (long long)x->tiles);
    put_cycles(out, x);
}

static void print_graph(const tpu_program *p, const ir_graph *g, int depth, FILE *out);

static void put_region_op(const tpu_program *p, const ir_node *n, const tpu_inst *x, int depth,
                          FILE *out)
{
    fprintf(out, "scalar.%s %%%d", n->opcode == IR_COND ? "cond" : "while", n->id);
    put_operands(p, n, out);
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
    if (x->kind == TPU_NONE || (x->kind == TPU_VPU_LOOP && !x->loop_head)) {
        if (p->slice) /* a loop member's gather, after its loop */
            tpu_slice_print_node(p, n, depth, out);
        return;
    }
    indent(out, depth);
    switch (x->kind) {
    case TPU_CONST:
        fprintf(out, "hbm.const   %%%d %s", n->id, ir_type_str(&n->type, t, sizeof t));
        put_place(out, x);
        break;
    case TPU_MXU:
        fprintf(out, "mxu.%-7s %%%d = %s", listed(n), n->id, listed(n));
        put_operands(p, n, out);
        fprintf(out, " %s", ir_type_str(&n->type, t, sizeof t));
        put_place(out, x);
        fprintf(out, "  %lld tiles x %d %spass%s", (long long)x->tiles, x->passes,
                x->int8 ? "int8 " : "", x->passes > 1 ? "es" : "");
        put_cycles(out, x);
        if (p->slice)
            fprintf(out, "  split %s", tpu_split_name(p->slice->node[n->id].split));
        break;
    case TPU_VPU_LOOP: put_loop(p, n, x, out); break;
    case TPU_XLU:
        fprintf(out, "xlu.%-7s %%%d = %s", listed(n), n->id, listed(n));
        put_operands(p, n, out);
        fprintf(out, " %s", ir_type_str(&n->type, t, sizeof t));
        put_place(out, x);
        put_cycles(out, x);
        break;
    case TPU_TRANSFER:
        fprintf(out, "dma.%-7s %%%d = %s", listed(n), n->id, listed(n));
        put_operands(p, n, out);
        fprintf(out, " %s", ir_type_str(&n->type, t, sizeof t));
        put_place(out, x);
        fprintf(out, "  %lld B  %lld cycles", (long long)x->hbm_bytes, (long long)x->cycles);
        break;
    case TPU_HOST:
        fprintf(out, "host.%-6s %%%d = %s", listed(n), n->id, listed(n));
        put_operands(p, n, out);
        fprintf(out, "  %lld cycles", (long long)x->cycles);
        break;
    case TPU_COND:
    case TPU_WHILE: put_region_op(p, n, x, depth, out); return;
    case TPU_NONE: return;
    }
    put_location(out, n);
    if (p->slice)
        tpu_slice_print_node(p, n, depth, out);
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
    bool mib = p->hbm_bytes >= 1 << 20;
    fprintf(out, "; hbm: %.1f %s of %.1f GiB at the peak (a buffer is reused once its value "
                 "is dead)\n",
            (double)p->hbm_bytes / (mib ? 1 << 20 : 1 << 10), mib ? "MiB" : "KiB",
            (double)s->hbm.capacity_bytes / (1 << 30));
    if (p->n_vmem)
        fprintf(out, "; vmem: %d %s kept between instructions, %.1f KiB at the peak\n",
                p->n_vmem, p->n_vmem == 1 ? "value" : "values", (double)p->vmem_bytes / 1024);
    if (p->slice)
        tpu_slice_print_header(p, out);
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
