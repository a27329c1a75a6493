/*
 * sim.c - the TPU-model's simulator: runs a program functionally, with
 * the TPU's numerics, and in time, with one queue per unit.
 *
 * Functionally the graph runs on the reference executor's walk (ir/exec.c,
 * so control flow, non-strict liveness and errors are the reference's),
 * with the matrix unit's numerics for matmul and conv2d (numerics.c:
 * operands rounded to bf16, f32 sums in a fixed order); the VPU's f32
 * arithmetic is the runtime kernels' own.
 *
 * In time, each node that runs is an instruction on its unit (program.h):
 * it starts when its operands are ready and its unit is free, and takes
 * the cycles the compiler gave it, so work on different units overlaps
 * (a transfer with compute, an MXU product with a VPU loop). A compute
 * instruction is staged through VMEM: its first block's load and its last
 * block's store are on the HBM DMA engine, before and after its work, and
 * the blocks between move on that engine during the work; what stays in
 * VMEM (vmem.c) is not moved, and an end with nothing to move is skipped,
 * its latency too. A value made
 * inside a cond or while region waits for everything before the region
 * (control flow is a barrier on the scalar unit). Parameters come over
 * the host link first; results go back last.
 *
 * On a slice (partition.h) each chip program is timed on its own state
 * (a `chip`; chips running the same program time alike, so once). The
 * programs time the nodes run since the last collective as tasks on the
 * call's pool (pool.h), then the collective joins them: it starts when
 * the slowest chip has its value. Split products compute their chips'
 * shares on the same pool (sharded.c). Nothing a task computes depends
 * on another's, so the thread count changes no figure.
 */
#include "program.h"

#include "numerics.h"
#include "partition.h"
#include "pool.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One chip program's timing (on one chip, or on a slice every chip that
 * runs that program: they time alike). */
typedef struct chip {
    const tpu_program *p;        /* its program */
    int program;                 /* its index (partition.h), tags its events */
    int64_t *ready;              /* by node id: the cycle its value is ready */
    int64_t *loop_end;           /* by fusion loop: when its stores are done */
    int64_t unit_free[TPU_N_QUEUES];
    int64_t horizon;             /* the latest cycle anything finished */
    int64_t device_start, device_end; /* the span of the device's own units */
    tpu_profile prof;
    tpu_timeline tl;             /* every instruction issued: the shares, the trace */
} chip;

typedef struct sim {
    const tpu_program *p; /* chip 0's program: the plan, the slice */
    chip *chip;           /* by program */
    int n_chips;
    /* a slice: the nodes run since the last collective, which every
     * program times (a task each on the pool) before the next one */
    const ir_node **pending;
    int n_pending, cap_pending;
    tpu_pool *pool;       /* made on first use */
    bool pool_made;
} sim;

/* ----------------------------------------------------------------- time */

static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

static int64_t ready_of(const chip *S, const ir_node *v)
{
    if (v->opcode == IR_PARAM && v->graph->parent)
        return S->horizon; /* a region's parameter: after what came before */
    return S->ready[v->id];
}

/* A box on unit u's row of the call's timeline. */
static void record(chip *S, tpu_unit u, int64_t start, int64_t cycles, const ir_node *n,
                   const char *what)
{
    tpu_timeline *t = &S->tl;
    if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 64;
        t->ev = rt_xrealloc(t->ev, (size_t)t->cap * sizeof *t->ev);
    }
    t->ev[t->n++] = (tpu_event){.start = start, .cycles = cycles, .unit = u, .what = what,
                                .value = n ? n->id : -1,
                                .line = n && n->loc.file ? n->loc.line : 0,
                                .program = S->program};
}

/* Runs `cycles` on unit u once every dependency is ready; returns the end.
 * n and what name it in the timeline. */
static int64_t issue(chip *S, tpu_unit u, int64_t deps_ready, int64_t cycles, const ir_node *n,
                     const char *what)
{
    int64_t start = max64(deps_ready, S->unit_free[u]);
    int64_t end = start + cycles;
    if (u != TPU_UNIT_H2D && u != TPU_UNIT_D2H && u != TPU_UNIT_HOST && cycles > 0) {
        S->device_start = S->device_end ? (start < S->device_start ? start : S->device_start)
                                        : start;
        S->device_end = max64(S->device_end, end);
    }
    S->unit_free[u] = end;
    S->prof.busy[u] += cycles;
    if (cycles > 0)
        record(S, u, start, cycles, n, what);
    S->horizon = max64(S->horizon, end);
    return end;
}

/*
 * A staged instruction (compile.c's stage): after HBM's latency its first
 * block comes into VMEM; the unit works while the middle blocks move on
 * the HBM DMA engine; after the work, the last block goes back (latency
 * again). Returns when its results are in HBM.
 */
static int64_t issue_staged(chip *S, const tpu_inst *x, int64_t deps, const ir_node *n,
                            const char *what)
{
    if (!x->blocks)
        return issue(S, x->unit, deps, x->busy, n, what);
    int64_t latency = tpu_spec_staging_latency_cycles(&S->p->spec);
    /* an end with nothing to move (its bytes stay in VMEM) is skipped */
    int64_t loaded = x->no_load ? deps
                                : issue(S, TPU_UNIT_HBM, deps + latency, x->load_first, n,
                                        "vmem.load");
    int64_t done = issue(S, x->unit, loaded, x->busy, n, what);
    if (x->dma_middle)
        issue(S, TPU_UNIT_HBM, done - x->busy, x->dma_middle, n, "vmem.stream");
    if (x->no_store)
        return done;
    return issue(S, TPU_UNIT_HBM, done + latency, x->store_last, n, "vmem.store");
}

static int64_t operands_ready(const chip *S, const ir_node *n)
{
    int64_t t = 0;
    for (int i = 0; i < n->n_in; i++)
        t = max64(t, ready_of(S, n->in[i]));
    return t;
}

/* A fused loop starts when every value it reads from outside is ready. */
static int64_t loop_inputs_ready(const chip *S, const ir_node *head, int loop)
{
    const pass_fusion_plan *f = S->p->fusion;
    int64_t t = 0;
    for (const ir_node *m = head; m; m = m->next) {
        if (f->cluster[m->id] != loop)
            continue;
        for (int i = 0; i < m->n_in; i++)
            if (m->in[i]->id >= f->n_ids || f->cluster[m->in[i]->id] != loop)
                t = max64(t, ready_of(S, m->in[i]));
    }
    return t;
}

static void account(chip *S, const tpu_inst *x)
{
    S->prof.macs += x->macs;
    S->prof.int8_macs += x->int8 ? x->macs : 0;
    S->prof.hbm_bytes += x->hbm_bytes;
    S->prof.hbm_saved += x->vmem_read + x->vmem_written;
}

/* Node n as one chip runs it. */
static void run_node(chip *S, const ir_node *n)
{
    const tpu_inst *x = &S->p->inst[n->id];
    int64_t deps = operands_ready(S, n);
    switch (x->kind) {
    case TPU_MXU:
    case TPU_XLU:
        S->ready[n->id] = issue_staged(S, x, deps, n, rt_op_listed_name(n->opcode));
        account(S, x);
        return;
    case TPU_VPU_LOOP:
        if (x->loop_head) {
            int64_t in = x->loop < 0 ? deps : loop_inputs_ready(S, n, x->loop);
            S->ready[n->id] = issue_staged(S, x, in, n, "vpu.loop");
            if (x->loop >= 0)
                S->loop_end[x->loop] = S->ready[n->id];
            account(S, x);
        } else { /* computed by its loop, which the head issued */
            S->ready[n->id] = S->loop_end[x->loop];
        }
        return;
    case TPU_COND:
    case TPU_WHILE: /* the decision, then whatever the regions did */
        S->ready[n->id] = max64(issue(S, TPU_UNIT_SCALAR, deps, x->busy, n,
                                      ir_opcode_name(n->opcode)),
                                S->horizon);
        return;
    case TPU_TRANSFER:
        S->ready[n->id] = issue(S, x->unit, deps, x->busy, n, rt_op_listed_name(n->opcode));
        S->prof.host_bytes += x->hbm_bytes;
        return;
    case TPU_HOST:
        S->ready[n->id] = issue(S, TPU_UNIT_HOST, deps, x->busy, n, rt_op_listed_name(n->opcode));
        return;
    case TPU_CONST:
        S->ready[n->id] = 0; /* resident in HBM with the program */
        return;
    case TPU_NONE:
        S->ready[n->id] = deps;
        return;
    }
}

/* ------------------------------------------------------------ the slice */

/* The call's pool, made when first needed: threads for `tasks` tasks. */
static tpu_pool *pool_of(sim *S, int tasks)
{
    if (!S->pool_made) {
        int threads = tpu_pool_threads_for(tasks);
        S->pool = threads > 1 ? tpu_pool_new(threads) : NULL;
        S->pool_made = true;
    }
    return S->pool;
}

/* Task k: program k times the nodes run since the last collective. */
static void time_pending(void *ctx, int k)
{
    sim *S = ctx;
    for (int i = 0; i < S->n_pending; i++)
        run_node(&S->chip[k], S->pending[i]);
}

static void flush(sim *S)
{
    if (S->n_pending && S->n_chips > 1)
        tpu_pool_run(pool_of(S, S->p->slice->chips), S->n_chips, time_pending, S);
    else if (S->n_pending)
        time_pending(S, 0);
    S->n_pending = 0;
}

/* The latest of every program's t[id] / unit_free[u]. */
static int64_t slowest_ready(const sim *S, int id)
{
    int64_t t = 0;
    for (int k = 0; k < S->n_chips; k++)
        t = max64(t, S->chip[k].ready[id]);
    return t;
}

static int64_t slowest_free(const sim *S, tpu_unit u)
{
    int64_t t = 0;
    for (int k = 0; k < S->n_chips; k++)
        t = max64(t, S->chip[k].unit_free[u]);
    return t;
}

/* On several chips, the collective after n (partition.h): it starts when
 * the slowest chip has n's value (a ring needs every chip), its phases one
 * after the other on the links of their axis, on every chip at once; n's
 * value is whole (or summed) when the last is done. */
static void collective(sim *S, const ir_node *n)
{
    const tpu_shard *x = &S->p->slice->node[n->id];
    int64_t t = slowest_ready(S, n->id);
    for (int i = 0; i < x->n_phases; i++) {
        int64_t start = max64(t, slowest_free(S, x->queue[i]));
        for (int k = 0; k < S->n_chips; k++) {
            t = issue(&S->chip[k], x->queue[i], start, x->cycles[i], n, tpu_coll_name(x->kind));
            S->chip[k].prof.coll_cycles[x->kind] += x->cycles[i];
        }
    }
    for (int k = 0; k < S->n_chips; k++) {
        tpu_profile *prof = &S->chip[k].prof;
        S->chip[k].ready[n->id] = t;
        prof->coll_count[x->kind]++;
        prof->coll_bytes[x->kind] += x->bytes;
        prof->coll_formula_seconds += x->formula_seconds;
    }
}

static bool has_collective(const sim *S, const ir_node *n)
{
    return n->id < S->p->slice->n_ids && S->p->slice->node[n->id].collective;
}

/* The ir_exec_hooks `ran` hook: n's value was just computed. On a slice
 * n waits for its turn: the programs time their nodes up to each
 * collective together. */
static void ran(void *ctx, const ir_node *n, const rt_value *value)
{
    (void)value;
    sim *S = ctx;
    if (!S->p->slice) {
        run_node(&S->chip[0], n);
        return;
    }
    if (S->n_pending == S->cap_pending) {
        S->cap_pending = S->cap_pending ? 2 * S->cap_pending : 64;
        S->pending = rt_xrealloc(S->pending, (size_t)S->cap_pending * sizeof *S->pending);
    }
    S->pending[S->n_pending++] = n;
    if (has_collective(S, n)) {
        flush(S);
        collective(S, n);
    }
}

/* ------------------------------------------------------------- numerics */

/* A tensor's elements as f32 (bf16 widened), in a new buffer. */
static float *as_f32(const rt_value *v)
{
    float *out = rt_xmalloc((size_t)(v->numel ? v->numel : 1) * sizeof *out);
    for (int64_t i = 0; i < v->numel; i++)
        out[i] = v->dtype == AG_BF16 ? tpu_bf16_to_f32(((const uint16_t *)v->data)[i])
                                     : ((const float *)v->data)[i];
    return out;
}

/* Stores f32 results into v (rounded to bf16 when v is bf16). */
static void store_f32(rt_value *v, const float *src)
{
    for (int64_t i = 0; i < v->numel; i++) {
        if (v->dtype == AG_BF16)
            ((uint16_t *)v->data)[i] = tpu_bf16_bits(src[i]);
        else
            ((float *)v->data)[i] = src[i];
    }
}

/* Offset of batch index `b` of the output in an operand whose batch dims
 * broadcast to the output's (NumPy rules). */
static int64_t batch_offset(const ag_shape *out, const ag_shape *op, int64_t b, int64_t matrix)
{
    int out_batch = out->rank - 2, op_batch = op->rank - 2;
    int64_t off = 0, stride = matrix;
    for (int d = out_batch - 1, e = op_batch - 1; d >= 0; d--, e--) {
        int64_t idx = b % out->dims[d];
        b /= out->dims[d];
        if (e < 0)
            continue;
        if (op->dims[e] != 1)
            off += idx * stride;
        stride *= op->dims[e];
    }
    return off;
}

static void matmul_f32(const tpu_program *p, rt_value *const *in, rt_value *out)
{
    const ag_shape *as = &in[0]->shape, *bs = &in[1]->shape, *os = &out->shape;
    int64_t m = as->dims[as->rank - 2], k = as->dims[as->rank - 1], n = bs->dims[bs->rank - 1];
    float *a = as_f32(in[0]), *b = as_f32(in[1]);
    float *c = rt_xmalloc((size_t)(out->numel ? out->numel : 1) * sizeof *c);
    int64_t batches = m > 0 && n > 0 ? out->numel / (m * n) : 0;
    for (int64_t i = 0; i < batches; i++)
        tpu_mxu_matmul_f32(a + batch_offset(os, as, i, m * k), b + batch_offset(os, bs, i, k * n),
                           c + i * m * n, m, k, n, (tpu_precision)p->spec.precision);
    store_f32(out, c);
    free(a);
    free(b);
    free(c);
}

static void matmul_i32(rt_value *const *in, rt_value *out)
{
    const ag_shape *as = &in[0]->shape, *bs = &in[1]->shape, *os = &out->shape;
    int64_t m = as->dims[as->rank - 2], k = as->dims[as->rank - 1], n = bs->dims[bs->rank - 1];
    int64_t batches = m > 0 && n > 0 ? out->numel / (m * n) : 0;
    const int32_t *a = in[0]->data, *b = in[1]->data;
    for (int64_t i = 0; i < batches; i++)
        tpu_mxu_matmul_i32(a + batch_offset(os, as, i, m * k), b + batch_offset(os, bs, i, k * n),
                           (int32_t *)out->data + i * m * n, m, k, n);
}

static void conv2d_f32(const tpu_program *p, const ir_node *node, rt_value *const *in,
                       rt_value *out)
{
    const int64_t *x = in[0]->shape.dims, *f = in[1]->shape.dims;
    float *a = as_f32(in[0]), *w = as_f32(in[1]);
    float *c = rt_xmalloc((size_t)(out->numel ? out->numel : 1) * sizeof *c);
    tpu_mxu_conv2d_f32(a, w, c, x[0], x[1], x[2], x[3], f[0], f[1], f[3], node->attrs.stride_h,
                       node->attrs.stride_w, node->attrs.padding == AG_SAME,
                       (tpu_precision)p->spec.precision);
    store_f32(out, c);
    free(a);
    free(w);
    free(c);
}

/* The int8 products (qmatmul, qconv2d) with the MXU's int8 numerics. */
static rt_value *int8_product(const ir_node *n, rt_value *const *in)
{
    rt_value *out = rt_value_new(AG_I32, &n->type.shape);
    int32_t zero = *(const int32_t *)in[2]->data;
    const int64_t *x = in[0]->shape.dims, *f = in[1]->shape.dims;
    if (n->opcode == RT_OP_QMATMUL)
        tpu_mxu_qmatmul_s8(in[0]->data, zero, in[1]->data, out->data, x[0], x[1], f[1]);
    else
        tpu_mxu_qconv2d_s8(in[0]->data, zero, in[1]->data, out->data, x[0], x[1], x[2], x[3],
                           f[0], f[1], f[3], n->attrs.stride_h, n->attrs.stride_w,
                           n->attrs.padding == AG_SAME);
    return out;
}

/* The ir_exec_hooks `apply` hook: the MXU's ops with its numerics. */
static rt_value *apply(void *ctx, const ir_node *n, rt_value *const *in, int n_in, bool *handled)
{
    sim *S = ctx;
    const tpu_slice *slice = S->p->slice;
    rt_value *split = slice && n->id < slice->n_ids && slice->node[n->id].split != TPU_SPLIT_NONE
                          ? tpu_sharded_product(slice, &S->p->spec, n, in,
                                                pool_of(S, slice->chips))
                          : NULL;
    if (split) { /* chip by chip */
        *handled = true;
        return split;
    }
    if (n->opcode == RT_OP_QMATMUL || n->opcode == RT_OP_QCONV2D) {
        *handled = true;
        return int8_product(n, in);
    }
    bool product = n->opcode == RT_OP_MATMUL || n->opcode == RT_OP_CONV2D;
    ag_dtype dt = n->type.dtype;
    bool floats = dt == AG_F32 || dt == AG_BF16;
    if (!product || (!floats && !(dt == AG_I32 && n->opcode == RT_OP_MATMUL)))
        return NULL; /* the runtime's kernel, as the VPU and XLU compute */
    *handled = true;
    rt_value *out = rt_value_new(dt, &n->type.shape);
    if (n->opcode == RT_OP_CONV2D)
        conv2d_f32(S->p, n, in, out);
    else if (floats)
        matmul_f32(S->p, in, out);
    else
        matmul_i32(in, out);
    (void)n_in;
    return out;
}

/* -------------------------------------------------------------- running */

static void finish_profile(chip *S)
{
    const tpu_spec *s = &S->p->spec;
    tpu_profile *prof = &S->prof;
    prof->cycles = 0;
    for (int u = 0; u < TPU_N_QUEUES; u++)
        prof->cycles = max64(prof->cycles, S->unit_free[u]);
    prof->seconds = (double)prof->cycles / s->clock_hz;
    prof->device_seconds = (double)(S->device_end - S->device_start) / s->clock_hz;
    /* int8 multiply-adds count at their rate: as bf16 ones, halved */
    double macs = (double)(prof->macs - prof->int8_macs) +
                  (double)prof->int8_macs / TPU_MXU_INT8_DEPTH;
    double peak_macs = tpu_spec_macs_per_cycle(s) * (double)prof->cycles;
    prof->mxu_utilization = peak_macs > 0 ? macs / peak_macs : 0;
    double compute = macs / (tpu_spec_macs_per_cycle(s) * s->clock_hz);
    double memory = (double)prof->hbm_bytes / tpu_spec_staging_bandwidth(s);
    prof->roofline_seconds = compute > memory ? compute : memory;
    /* a slice: its links at the ring formula bound the call too */
    if (prof->coll_formula_seconds > prof->roofline_seconds)
        prof->roofline_seconds = prof->coll_formula_seconds;
    prof->chips = (int)s->chips;
    prof->mesh_x = (int)s->mesh.x;
    prof->mesh_y = (int)s->mesh.y;
}

static void transfer_in(chip *S)
{
    const tpu_program *p = S->p;
    const ir_graph *body = p->fn->body;
    for (int i = 0; i < body->n_params; i++) {
        if (!p->params[i].cycles)
            continue; /* read on the host only: nothing crosses */
        S->ready[body->params[i]->id] =
            issue(S, TPU_UNIT_H2D, 0, p->params[i].cycles, body->params[i], "dma.h2d");
        S->prof.host_bytes += p->params[i].bytes;
        S->prof.host_padding += p->params[i].padded_bytes;
    }
}

static void transfer_out(chip *S)
{
    const tpu_program *p = S->p;
    const ir_graph *body = p->fn->body;
    for (int i = 0; i < body->n_results; i++) {
        if (!p->results[i].cycles)
            continue; /* made on the host */
        issue(S, TPU_UNIT_D2H, ready_of(S, body->results[i]), p->results[i].cycles,
              body->results[i], "dma.d2h");
        S->prof.host_bytes += p->results[i].bytes;
        S->prof.host_padding += p->results[i].padded_bytes;
    }
}

void tpu_timeline_free(tpu_timeline *t)
{
    free(t->ev);
    free(t->program_of);
    memset(t, 0, sizeof *t);
}

static void chip_init(chip *S, const tpu_program *p, int program)
{
    memset(S, 0, sizeof *S);
    S->p = p;
    S->program = program;
    S->ready = rt_xcalloc((size_t)p->n_ids, sizeof *S->ready);
    S->loop_end = rt_xcalloc((size_t)p->n_ids, sizeof *S->loop_end);
    S->tl.clock_hz = p->spec.clock_hz;
    S->tl.chips = (int)p->spec.chips;
    snprintf(S->tl.function, sizeof S->tl.function, "%s", p->fn->name ? p->fn->name : "?");
    snprintf(S->tl.device, sizeof S->tl.device, "%s", p->spec.name);
    transfer_in(S);
}

static void sim_init(sim *S, const tpu_program *p)
{
    memset(S, 0, sizeof *S);
    S->p = p;
    S->n_chips = p->n_programs > 1 ? p->n_programs : 1;
    S->chip = rt_xcalloc((size_t)S->n_chips, sizeof *S->chip);
    for (int k = 0; k < S->n_chips; k++)
        chip_init(&S->chip[k], p->n_programs ? p->programs[k] : p, k);
}

/* The chip that finished last (the lowest such), whose figures the
 * profile's units and shares are. */
static int slowest_chip(const sim *S)
{
    const tpu_slice *s = S->p->slice;
    int slowest = 0;
    for (int c = 1; s && c < s->chips; c++)
        if (S->chip[s->program_of[c]].prof.cycles > S->chip[s->program_of[slowest]].prof.cycles)
            slowest = c;
    return slowest;
}

/* Every chip's row, from its program's profile. */
static void chip_rows(const sim *S, tpu_profile *out)
{
    const tpu_slice *s = S->p->slice;
    for (int c = 0; s && c < s->chips && c < TPU_MAX_CHIPS; c++) {
        const tpu_profile *q = &S->chip[s->program_of[c]].prof;
        out->chip[c] = (tpu_chip_figures){q->busy[TPU_UNIT_MXU], q->busy[TPU_UNIT_VPU],
                                          q->busy[TPU_UNIT_XLU], q->busy[TPU_UNIT_HBM],
                                          q->busy[TPU_UNIT_ICI_X], q->busy[TPU_UNIT_ICI_Y],
                                          q->hbm_bytes, q->cycles};
    }
}

/* Every program's events in one timeline, tagged with their program. */
static void merge_timelines(sim *S, int shown, tpu_timeline *out)
{
    *out = S->chip[0].tl;
    memset(&S->chip[0].tl, 0, sizeof S->chip[0].tl);
    out->shown = shown;
    out->cycles = S->chip[shown].prof.cycles;
    if (S->n_chips == 1)
        return;
    const tpu_slice *s = S->p->slice;
    out->program_of = rt_xmalloc((size_t)s->chips * sizeof *out->program_of);
    memcpy(out->program_of, s->program_of, (size_t)s->chips * sizeof *out->program_of);
    for (int k = 1; k < S->n_chips; k++) {
        tpu_timeline *t = &S->chip[k].tl;
        out->ev = rt_xrealloc(out->ev, (size_t)(out->n + t->n + 1) * sizeof *out->ev);
        memcpy(out->ev + out->n, t->ev, (size_t)t->n * sizeof *t->ev);
        out->n += t->n;
        out->cap = out->n;
    }
}

/* The profile into prof (if not NULL), the timeline into timeline (if
 * not NULL: the caller's to free), the rest freed. */
static void sim_finish(sim *S, tpu_profile *prof, tpu_timeline *timeline)
{
    for (int k = 0; k < S->n_chips; k++) {
        chip *C = &S->chip[k];
        finish_profile(C);
        C->tl.cycles = C->prof.cycles;
        tpu_profile_shares(&C->tl, &C->prof);
    }
    int slowest = slowest_chip(S);
    int shown = S->p->slice ? S->p->slice->program_of[slowest] : 0;
    if (prof) {
        *prof = S->chip[shown].prof;
        prof->programs = S->n_chips;
        prof->slowest = slowest;
        chip_rows(S, prof);
    }
    if (timeline)
        merge_timelines(S, shown, timeline);
    for (int k = 0; k < S->n_chips; k++) {
        tpu_timeline_free(&S->chip[k].tl);
        free(S->chip[k].ready);
        free(S->chip[k].loop_end);
    }
    free(S->chip);
    free(S->pending);
    tpu_pool_free(S->pool);
}

static void transfers_out(sim *S)
{
    for (int k = 0; k < S->n_chips; k++)
        transfer_out(&S->chip[k]);
}

bool tpu_run(const tpu_program *p, rt_value *const *args, int n_args, rt_value **results,
             tpu_profile *prof, tpu_timeline *timeline)
{
    sim S;
    sim_init(&S, p);
    ir_exec_hooks hooks = {.apply = apply, .ran = ran, .ctx = &S};
    bool ok = ir_execute_hooked(p->plan, &hooks, args, n_args, results);
    flush(&S);
    if (ok)
        transfers_out(&S);
    sim_finish(&S, prof, timeline);
    return ok;
}

/* Every node of g that runs, in order; a region once (a cond's first
 * region, one trip of a loop). */
static void time_graph(sim *S, const ir_graph *g)
{
    const ir_liveness *live = ir_plan_liveness(S->p->plan);
    for (const ir_node *n = g->first; n; n = n->next) {
        if (!ir_is_live(live, n))
            continue;
        if (n->region[0])
            time_graph(S, n->region[0]);
        if (n->opcode == IR_WHILE)
            time_graph(S, n->region[1]);
        ran(S, n, NULL);
    }
}

void tpu_time(const tpu_program *p, tpu_profile *prof)
{
    sim S;
    sim_init(&S, p);
    time_graph(&S, p->fn->body);
    flush(&S);
    transfers_out(&S);
    sim_finish(&S, prof, NULL);
}
