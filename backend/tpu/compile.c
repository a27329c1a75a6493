/*
 * compile.c - a graph into a TPU program: static shapes checked, and every
 * node that runs given its unit and its cost from the device spec. HBM
 * buffers are hbm.c's.
 *
 * Costs, in cycles of the spec's clock:
 *   - mxu: weight-stationary tiles of rows x cols; each tile streams the
 *     T (padded) rows of the left operand through the array in
 *     2*rows + cols + T - 2 cycles (the systolic fill, stream and drain,
 *     as in SCALE-Sim); tiles spread over the spec's MXUs, once per bf16
 *     pass of the precision; int8 products (qmatmul, qconv2d) make one
 *     pass with tiles TPU_MXU_INT8_DEPTH times as deep in k: twice the
 *     bf16 rate;
 *   - vpu: a fused loop costs, per vreg of each member's result, one
 *     cycle (transcendental_cycles for the op table's DIVIDE and
 *     TRANSCENDENTAL cost classes: division, roots, exp, log, tanh, pow);
 *   - xlu: one cycle per vreg read and per vreg written;
 *   - VMEM staging, for the three above: the operands come from HBM into
 *     VMEM and the results go back, in blocks of at most the spec's
 *     vmem.block_bytes, double-buffered on the HBM DMA engine: the first
 *     block's load (HBM's and VMEM's latency, then its bytes at the
 *     slower of their bandwidths) precedes the work, the
 *     last block's store follows it, and the blocks between move while
 *     the unit works, so the unit is busy for the larger of its work and
 *     their DMA;
 *   - VMEM residency (vmem.c): a value kept in VMEM is neither stored
 *     by the instruction that makes it nor loaded by those that read it;
 *     the program is costed once with everything through HBM, vmem.c
 *     chooses what stays, and it is costed again without those bytes
 *     (an end of the staging with nothing left to move neither runs nor
 *     waits HBM's latency);
 *   - scalar: a fixed decision cost per cond / while;
 *   - host link (dma): latency plus padded bytes over its bandwidth.
 */
#include "program.h"

#include "numerics.h"
#include "partition.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { SCALAR_DECISION_CYCLES = 16 };
/* An op placed on the host: a dispatch, then its bytes at host memory
 * speed (a model figure: the host is not the device being modelled). */
static const double HOST_OP_SECONDS = 1e-6, HOST_BYTES_PER_SECOND = 10e9;

static int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }
static int64_t div_up(int64_t x, int64_t m) { return (x + m - 1) / m; }

static int64_t elements(const ir_type *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->shape.rank; i++)
        n *= t->shape.dims[i];
    return n;
}

/* vregs a value fills: its padded bytes over one vreg's. */
static int64_t vregs(const tpu_spec *s, const ir_type *t)
{
    /* The VPU computes on i8 unpacked to 32-bit lanes: an i8 op costs
     * what the same op on i32 does (its loads and stores stay packed). */
    ir_type wide = *t;
    if (wide.dtype == AG_I8)
        wide.dtype = AG_I32;
    int64_t b = tpu_padded_bytes(&wide);
    int64_t per = s->vpu.sublanes * s->vpu.lanes * 4;
    return b <= 0 ? 1 : div_up(b, per);
}

static int64_t hbm_cycles(const tpu_spec *s, int64_t bytes)
{
    return (int64_t)ceil((double)bytes / tpu_spec_staging_bandwidth(s) * s->clock_hz);
}

static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

typedef struct compiler {
    tpu_program *p;
    const tpu_spec *spec;
    const ir_liveness *live;
    tgt_diag *diag;
    ir_device device; /* this target's, which the place pass put nodes on */
    bool failed;
} compiler;

static bool fail(compiler *C, const ir_node *at, const char *fmt, const char *a, const char *b)
{
    if (C->failed)
        return false;
    C->failed = true;
    if (at)
        C->diag->loc = at->loc;
    snprintf(C->diag->msg, sizeof C->diag->msg, fmt, a, b);
    return false;
}

/* --------------------------------------------------------------- costs */

/* Ops that take the vector unit several cycles a vreg: divisions and
 * roots, and transcendental functions (the op table's cost classes). */
static bool transcendental(int op)
{
    if (op < 0 || op >= RT_OP_COUNT)
        return false;
    rt_cost c = rt_ops[op].cost;
    return c == RT_COST_DIVIDE || c == RT_COST_TRANSCENDENTAL;
}

static int bf16_passes(const tpu_spec *s, ag_dtype operands)
{
    if (operands != AG_F32)
        return 1; /* bf16 operands are exact in one pass; integers (i8: the int8 pass) too */
    static const int passes[] = {1, 3, 6};
    return passes[s->precision];
}

/* A product of batch x [m,k] x [k,n] on the MXUs (int8 operands: the
 * deeper int8 tiles). */
static void cost_product(compiler *C, tpu_inst *x, int64_t batch, int64_t m, int64_t k,
                         int64_t n, ag_dtype operands, int64_t bytes)
{
    const tpu_spec *s = C->spec;
    x->kind = TPU_MXU;
    x->unit = TPU_UNIT_MXU;
    x->int8 = operands == AG_I8;
    x->passes = bf16_passes(s, operands);
    int64_t depth = s->mxu.rows * (x->int8 ? TPU_MXU_INT8_DEPTH : 1);
    x->tiles = batch * div_up(k, depth) * div_up(n, s->mxu.cols);
    int64_t per_tile = 2 * s->mxu.rows + s->mxu.cols + round_up(m, 8) - 2;
    int64_t compute = div_up(x->tiles * x->passes, s->mxu.count) * per_tile;
    x->macs = batch * m * k * n;
    x->flops = 2 * x->macs;
    x->work = compute;
    x->hbm_bytes = bytes;
}

/* Padded bytes of n's operands. */
static int64_t in_bytes(const ir_node *n)
{
    int64_t b = 0;
    for (int i = 0; i < n->n_in; i++)
        b += tpu_padded_bytes(&n->in[i]->type);
    return b;
}

/* Whether v's bytes stay in VMEM (vmem.c chose its buffer). */
static bool in_vmem(const compiler *C, const ir_node *v)
{
    return C->p->inst[tpu_buffer_of(v)->id].vmem;
}

/* Padded bytes of v as x loads it from HBM: none when it is in VMEM
 * (counted in x->vmem_read instead). */
static int64_t load_bytes(const compiler *C, tpu_inst *x, const ir_node *v)
{
    int64_t b = tpu_padded_bytes(&v->type);
    if (!in_vmem(C, v))
        return b;
    x->vmem_read += b;
    return 0;
}

/* What n loads from HBM, and what it stores there. */
static int64_t hbm_in(const compiler *C, tpu_inst *x, const ir_node *n)
{
    int64_t b = 0;
    for (int i = 0; i < n->n_in; i++)
        b += load_bytes(C, x, n->in[i]);
    return b;
}

static int64_t hbm_out(tpu_inst *x, const ir_node *n)
{
    int64_t b = tpu_padded_bytes(&n->type);
    if (!x->vmem)
        return b;
    x->vmem_written += b;
    return 0;
}

static int64_t io_bytes(const ir_node *n) { return in_bytes(n) + tpu_padded_bytes(&n->type); }

/*
 * Stages x through VMEM: `in` bytes loaded from HBM and `out` stored, in
 * blocks of at most vmem.block_bytes (each carrying its share of both).
 * The first block's load and the last one's store frame the work; the
 * other blocks move on the HBM DMA engine under it. x->cycles is then the
 * whole instruction run alone: both HBM latencies, the first load, the
 * unit's busy time and the last store.
 */
static void stage(compiler *C, tpu_inst *x, int64_t in, int64_t out)
{
    const tpu_spec *s = C->spec;
    int64_t total = in + out;
    x->hbm_bytes = total;
    x->no_load = in == 0 && x->vmem_read > 0; /* every operand is in VMEM */
    x->no_store = out == 0 && x->vmem_written > 0;
    if (total == 0 && x->no_load && x->no_store) { /* nothing moves */
        x->busy = x->cycles = x->work;
        return;
    }
    x->blocks = total > 0 ? div_up(total, s->vmem.block_bytes) : 1;
    x->block_bytes = div_up(total, x->blocks);
    x->load_first = hbm_cycles(s, div_up(in, x->blocks));
    x->store_last = hbm_cycles(s, div_up(out, x->blocks));
    x->dma_middle = max64(0, hbm_cycles(s, total) - x->load_first - x->store_last);
    x->busy = max64(x->work, x->dma_middle);
    x->cycles = (2 - x->no_load - x->no_store) * tpu_spec_staging_latency_cycles(s) +
                x->load_first + x->busy + x->store_last;
}

static void cost_matmul(compiler *C, const ir_node *n, tpu_inst *x)
{
    const ag_shape *a = &n->in[0]->type.shape, *b = &n->in[1]->type.shape;
    int64_t m = a->rank >= 2 ? a->dims[a->rank - 2] : 1, k = a->dims[a->rank - 1];
    int64_t nn = b->rank >= 2 ? b->dims[b->rank - 1] : 1;
    const ag_shape *o = &n->type.shape;
    int64_t batch = 1;
    for (int i = 0; i + 2 < o->rank; i++)
        batch *= o->dims[i];
    cost_product(C, x, batch, m, k, nn, n->in[0]->type.dtype, io_bytes(n));
    stage(C, x, hbm_in(C, x, n), hbm_out(x, n));
}

/* conv2d as the MXU runs it: an im2col product, M = N*OH*OW output
 * pixels, K = KH*KW*Cin, N = Cout. */
static void cost_conv2d(compiler *C, const ir_node *n, tpu_inst *x)
{
    const ag_shape *f = &n->in[1]->type.shape, *o = &n->type.shape;
    int64_t m = o->dims[0] * o->dims[1] * o->dims[2];
    int64_t k = f->dims[0] * f->dims[1] * f->dims[2];
    cost_product(C, x, 1, m, k, f->dims[3], n->in[0]->type.dtype, io_bytes(n));
    stage(C, x, hbm_in(C, x, n), hbm_out(x, n));
}

static void cost_xlu(compiler *C, const ir_node *n, tpu_inst *x)
{
    const tpu_spec *s = C->spec;
    int64_t work = vregs(s, &n->type);
    for (int i = 0; i < n->n_in; i++)
        work += vregs(s, &n->in[i]->type);
    if (n->opcode == RT_OP_SOFTMAX) /* exp and the division per element */
        work += 2 * s->vpu.transcendental_cycles * vregs(s, &n->type);
    x->kind = TPU_XLU;
    x->unit = TPU_UNIT_XLU;
    x->flops = n->n_in ? elements(&n->in[0]->type) : elements(&n->type);
    x->work = work;
    stage(C, x, hbm_in(C, x, n), hbm_out(x, n));
}

/* An elementwise node outside any loop (a rank-0 value): one vreg op. */
static void cost_scalar_vector_op(compiler *C, const ir_node *n, tpu_inst *x)
{
    x->kind = TPU_VPU_LOOP;
    x->unit = TPU_UNIT_VPU;
    x->loop = -1;
    x->loop_head = true;
    x->flops = 1;
    x->work = transcendental(n->opcode) ? C->spec->vpu.transcendental_cycles : 1;
    x->busy = x->cycles = x->work; /* its operands are scalars, in registers */
}

/* ---------------------------------------------------------- fused loops */

/* Whether v is produced inside loop `c`. */
static bool in_loop(const tpu_program *p, const ir_node *v, int c)
{
    return v->id < p->fusion->n_ids && p->fusion->cluster[v->id] == c;
}

/* Whether v, of loop `c`, is read outside it (or is a result). */
static bool loop_value_stored(const tpu_program *p, const ir_node *v, int c)
{
    const ir_graph *g = v->graph;
    for (int i = 0; i < g->n_results; i++)
        if (g->results[i] == v)
            return true;
    for (const ir_node *u = v->next; u; u = u->next)
        for (int i = 0; i < u->n_in; i++)
            if (u->in[i]->id == v->id && !in_loop(p, u, c)) /* by id: a chip's share of v too */
                return true;
    return false;
}

/* The loop's cost goes on its first member (its head); the others cost
 * nothing. What it loads and stores is staged once, on the head. */
static void cost_loops_of(compiler *C, const ir_graph *g)
{
    tpu_program *p = C->p;
    const tpu_spec *s = C->spec;
    int64_t *loads = rt_xcalloc((size_t)p->n_ids, sizeof *loads);
    for (const ir_node *n = g->first; n; n = n->next) {
        int c = n->id < p->fusion->n_ids ? p->fusion->cluster[n->id] : -1;
        if (c < 0 || n->device != C->device)
            continue; /* host loops are the host's */
        tpu_inst *x = &p->inst[n->id];
        x->kind = TPU_VPU_LOOP;
        x->unit = TPU_UNIT_VPU;
        x->loop = c;
        tpu_inst *head = NULL;
        for (const ir_node *m = g->first; m && !head; m = m->next)
            if (in_loop(p, m, c))
                head = &p->inst[m->id];
        head->loop_head = true;
        int64_t op_cycles = transcendental(n->opcode) ? s->vpu.transcendental_cycles : 1;
        head->tiles += vregs(s, &n->type);
        head->flops += elements(&n->type);
        head->work += vregs(s, &n->type) * op_cycles;
        int64_t *in = &loads[head - p->inst];
        for (int i = 0; i < n->n_in; i++)
            if (!in_loop(p, n->in[i], c))
                *in += load_bytes(C, head, n->in[i]);
        x->stored = loop_value_stored(p, n, c);
        if (x->stored && x->vmem)
            head->vmem_written += tpu_padded_bytes(&n->type); /* it stays in VMEM */
        else if (x->stored)
            head->hbm_bytes += tpu_padded_bytes(&n->type); /* the stores, for now */
    }
    for (const ir_node *n = g->first; n; n = n->next) {
        tpu_inst *x = &p->inst[n->id];
        if (x->kind == TPU_VPU_LOOP && x->loop_head && x->loop >= 0)
            stage(C, x, loads[n->id], x->hbm_bytes);
    }
    free(loads);
}

/* ----------------------------------------------------------- the nodes */

static void compile_graph(compiler *C, const ir_graph *g);

/* Bytes of a value as stored (no tiles), 0 when not static. */
static int64_t raw_bytes(const ir_type *t)
{
    return tpu_shape_static(t) ? elements(t) * (int64_t)rt_dtype_size(t->dtype) : 0;
}

/* to_device / to_host: the value over the host link, padding included. */
static int64_t link_bytes(const tpu_spec *s, const ir_type *t, int64_t *relayout_cycles);
static int64_t link_cycles(const tpu_spec *s, int64_t bytes);

static void cost_transfer(compiler *C, const ir_node *n, tpu_inst *x)
{
    const tpu_spec *s = C->spec;
    x->kind = TPU_TRANSFER;
    x->unit = n->opcode == RT_OP_TO_DEVICE ? TPU_UNIT_H2D : TPU_UNIT_D2H;
    int64_t relayout, bytes = link_bytes(s, &n->type, &relayout);
    x->hbm_bytes = bytes > 0 ? bytes : 0;
    x->busy = x->cycles = link_cycles(s, x->hbm_bytes) + relayout;
    if (n->opcode == RT_OP_TO_DEVICE)
        x->padded_bytes = tpu_padded_bytes(&n->type);
}

static void cost_host(compiler *C, const ir_node *n, tpu_inst *x)
{
    int64_t bytes = raw_bytes(&n->type);
    for (int i = 0; i < n->n_in; i++)
        bytes += raw_bytes(&n->in[i]->type);
    double seconds = HOST_OP_SECONDS + (double)bytes / HOST_BYTES_PER_SECOND;
    x->kind = TPU_HOST;
    x->unit = TPU_UNIT_HOST;
    x->busy = x->cycles = (int64_t)ceil(seconds * C->spec->clock_hz);
}

static void compile_node(compiler *C, const ir_node *n)
{
    tpu_inst *x = &C->p->inst[n->id];
    x->hbm_addr = -1;
    x->loop = -1;
    if (n->opcode == RT_OP_TO_DEVICE || n->opcode == RT_OP_TO_HOST) {
        cost_transfer(C, n, x);
        return;
    }
    if (n->device != IR_HOST && n->device != C->device) {
        fail(C, n, "'%s' is placed on the device '%s': the tpu-model runs only its own nodes "
                   "and the host's", ir_opcode_name(n->opcode), ir_device_name(n->device));
        return;
    }
    if (n->device != C->device && n->opcode < RT_OP_COUNT) {
        cost_host(C, n, x); /* shapes may be dynamic there */
        return;
    }
    if (n->opcode == IR_COND || n->opcode == IR_WHILE) {
        x->kind = n->opcode == IR_COND ? TPU_COND : TPU_WHILE;
        x->unit = TPU_UNIT_SCALAR;
        x->busy = x->cycles = SCALAR_DECISION_CYCLES;
        compile_graph(C, n->region[0]);
        compile_graph(C, n->region[1]);
        return;
    }
    if (n->opcode == IR_GET) { /* a region's value, which the regions store into its buffer */
        x->padded_bytes = tpu_shape_static(&n->type) ? tpu_padded_bytes(&n->type) : 0;
        return;
    }
    if (!tpu_shape_static(&n->type)) {
        char t[160];
        ir_type_str(&n->type, t, sizeof t);
        fail(C, n, "'%s' has shape %s here: the TPU-model compiles for static shapes, and this "
                   "one is not known before the call (it depends on data or on a '?' of the "
                   "signature)", rt_ops[n->opcode].name, t);
        return;
    }
    x->padded_bytes = tpu_padded_bytes(&n->type);
    switch (tpu_ops[n->opcode]) { /* the unit, from the device's op table */
    case TPU_OP_CONST: x->kind = TPU_CONST; return;
    case TPU_OP_MXU:
        if (n->opcode == RT_OP_MATMUL || n->opcode == RT_OP_QMATMUL)
            cost_matmul(C, n, x);
        else
            cost_conv2d(C, n, x);
        return;
    case TPU_OP_VIEW: return; /* no work */
    case TPU_OP_VPU:
        if (n->id >= C->p->fusion->n_ids || C->p->fusion->cluster[n->id] < 0)
            cost_scalar_vector_op(C, n, x); /* loops are costed per graph */
        return;
    default: cost_xlu(C, n, x); return;
    }
}

static void compile_graph(compiler *C, const ir_graph *g)
{
    for (int i = 0; i < g->n_params; i++) {
        const ir_node *par = g->params[i];
        tpu_inst *x = &C->p->inst[par->id];
        x->hbm_addr = -1;
        x->loop = -1;
        if (par->type.dtype == RT_LIST)
            continue; /* a tensor array: the host's (soft placement) */
        if (!tpu_shape_static(&par->type)) {
            char t[160];
            ir_type_str(&par->type, t, sizeof t);
            fail(C, g->parent ? g->parent : g->first,
                 g->parent ? "a loop variable has shape %s here: it changes between iterations, "
                             "and the TPU-model compiles for static shapes%s"
                           : "a parameter has shape %s: the TPU-model compiles for static shapes; "
                             "give the function an AG_SIGNATURE without '?'%s",
                 t, "");
            return;
        }
        x->padded_bytes = tpu_padded_bytes(&par->type);
    }
    for (const ir_node *n = g->first; n && !C->failed; n = n->next)
        if (ir_is_live(C->live, n))
            compile_node(C, n);
    if (!C->failed)
        cost_loops_of(C, g);
}

/* ----------------------------------------------------------- transfers */

/*
 * I/O shape optimization (the converter's, docs/converter.md §5): a tensor
 * whose last two dims pad badly in (8,128) tiles - [64, 10] moves 13x its
 * bytes - crosses the link as rows of 128 lanes, [ceil(n / 128), 128],
 * when that pads less. The host's reshape is free (the data is
 * contiguous); the device relays the tiles out with the XLU, one vreg a
 * cycle, which the transfer's cycles include.
 */
static int64_t link_bytes(const tpu_spec *s, const ir_type *t, int64_t *relayout_cycles)
{
    int64_t padded = tpu_padded_bytes(t), n = elements(t);
    *relayout_cycles = 0;
    if (!s->io_shapes || padded < 0 || n <= 0)
        return padded;
    ir_type rows = {.dtype = t->dtype, .shape = {.rank = 2, .dims = {(n + 127) / 128, 128}}};
    int64_t flat = tpu_padded_bytes(&rows);
    if (flat >= padded)
        return padded;
    int64_t vreg_bytes = (int64_t)s->vpu.sublanes * s->vpu.lanes * 4;
    *relayout_cycles = (padded + vreg_bytes - 1) / vreg_bytes;
    return flat;
}

static int64_t link_cycles(const tpu_spec *s, int64_t bytes)
{
    double seconds = s->host_link.latency_ns * 1e-9 + (double)bytes / s->host_link.bandwidth;
    return (int64_t)ceil(seconds * s->clock_hz);
}

static tpu_transfer transfer(const tpu_spec *s, const ir_type *t)
{
    int64_t relayout;
    tpu_transfer x = {.bytes = link_bytes(s, t, &relayout)};
    int64_t raw = elements(t) * (int64_t)rt_dtype_size(t->dtype);
    x.padded_bytes = x.bytes - raw;
    x.cycles = link_cycles(s, x.bytes) + relayout;
    return x;
}

/* A parameter crosses to the device only if a device op reads it; one
 * that only host ops read (soft placement, the converter's device scopes)
 * stays on the host. */
static bool read_on_device(const ir_graph *body, const ir_node *param, ir_device device)
{
    for (const ir_node *n = body->first; n; n = n->next)
        for (int i = 0; n->device == device && i < n->n_in; i++)
            if (n->in[i]->id == param->id) /* by id: a chip's share of it too */
                return true;
    return false;
}

/* A result crosses back only if the device made it. */
static bool made_on_device(const ir_node *v, ir_device device)
{
    return v->opcode != IR_PARAM && v->device == device;
}

/* The costs again, now that some values stay in VMEM (vmem.c). */
static void recost(compiler *C)
{
    tpu_program *p = C->p;
    for (int i = 0; i < p->n_ids; i++) {
        tpu_inst *x = &p->inst[i];
        *x = (tpu_inst){.vmem = x->vmem, .vmem_addr = x->vmem_addr};
    }
    compile_graph(C, p->fn->body);
}

/* A program for fn_chip (fn, or on a slice one chip's copy of it) until
 * its HBM is placed; NULL with the reason in *diag. */
static tpu_program *compile_costs(const ir_function *fn_chip, pass_analyses *am,
                                  const tpu_spec *spec, tpu_slice *slice, tgt_diag *diag)
{
    tpu_program *p = rt_xcalloc(1, sizeof *p);
    p->fn = fn_chip;
    p->spec = *spec;
    p->slice = slice;
    p->fusion = pass_analyses_fusion(am);
    p->n_ids = fn_chip->next_id > 0 ? fn_chip->next_id : 1;
    p->inst = rt_xcalloc((size_t)p->n_ids, sizeof *p->inst);
    compiler C = {.p = p, .spec = &p->spec, .live = pass_analyses_liveness(am), .diag = diag,
                  .device = ir_device_named(TPU_TARGET)};
    compile_graph(&C, p->fn->body);
    /* residency on one chip; a slice's values stay in HBM (its collectives
     * read and write them there) */
    if (!C.failed && !slice && tpu_keep_in_vmem(p, C.live) > 0)
        recost(&C);
    if (C.failed) {
        p->slice = NULL; /* the caller's */
        tpu_program_free(p);
        return NULL;
    }
    return p;
}

/* p's transfers, its HBM and its counts, once its costs are final. */
static bool place(tpu_program *p, pass_analyses *am, tgt_diag *diag)
{
    ir_device device = ir_device_named(TPU_TARGET);
    const ir_graph *body = p->fn->body;
    p->params = rt_xcalloc((size_t)body->n_params + 1, sizeof *p->params);
    p->results = rt_xcalloc((size_t)body->n_results + 1, sizeof *p->results);
    for (int i = 0; i < body->n_params; i++)
        if (read_on_device(body, body->params[i], device))
            p->params[i] = transfer(&p->spec, &body->params[i]->type);
    for (int i = 0; i < body->n_results; i++)
        if (made_on_device(body->results[i], device))
            p->results[i] = transfer(&p->spec, &body->results[i]->type);
    if (!tpu_allocate_hbm(p, pass_analyses_liveness(am), diag))
        return false;
    for (int i = 0; i < p->n_ids; i++) {
        p->n_mxu += p->inst[i].kind == TPU_MXU;
        p->n_xlu += p->inst[i].kind == TPU_XLU;
        p->n_loops += p->inst[i].kind == TPU_VPU_LOOP && p->inst[i].loop_head;
    }
    return true;
}

/* A slice's programs, one per distinct set of shares (partition.h):
 * p (chip 0's) and the others, which share p's slice. */
static bool compile_programs(tpu_program *p, pass_analyses *am, tgt_diag *diag)
{
    tpu_slice *s = p->slice;
    p->programs = rt_xcalloc((size_t)s->n_programs, sizeof *p->programs);
    p->n_programs = s->n_programs;
    p->programs[0] = p;
    for (int k = 1; k < s->n_programs; k++)
        if (!(p->programs[k] = compile_costs(s->chip_fn[k], am, &p->spec, s, diag)))
            return false;
    tpu_slice_count(p);
    for (int k = 0; k < s->n_programs; k++)
        if (!place(p->programs[k], am, diag))
            return false;
    return true;
}

tpu_program *tpu_compile(const ir_function *fn, pass_analyses *am, const tpu_spec *spec,
                         tgt_diag *diag)
{
    /* several chips: the programs the chips run, each on its share */
    tpu_slice *slice = NULL;
    if (spec->chips > 1 && !(slice = tpu_slice_new(fn, am, spec, diag)))
        return NULL;
    tpu_program *p = compile_costs(slice ? slice->chip_fn[0] : fn, am, spec, slice, diag);
    if (!p) {
        tpu_slice_free(slice);
        return NULL;
    }
    bool ok = slice ? compile_programs(p, am, diag) : place(p, am, diag);
    if (!ok) {
        tpu_program_free(p);
        return NULL;
    }
    p->plan = ir_plan_new(fn);
    return p;
}

/* p and, when it is a slice's first, the slice and its other programs. */
void tpu_program_free(tpu_program *p)
{
    if (!p)
        return;
    for (int k = 1; k < p->n_programs; k++)
        if (p->programs[k]) {
            p->programs[k]->slice = NULL; /* p's */
            tpu_program_free(p->programs[k]);
        }
    free(p->programs);
    ir_plan_free(p->plan);
    tpu_slice_free(p->slice);
    free(p->inst);
    free(p->params);
    free(p->results);
    free(p);
}
