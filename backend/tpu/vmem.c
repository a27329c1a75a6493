/*
 * vmem.c - VMEM residency: the values that stay in VMEM from the
 * instruction that makes them to the ones that read them, instead of
 * going back to HBM and coming in again.
 *
 * compile.c costs every instruction first as if all its operands came
 * from HBM and its results went back; then this file decides what stays,
 * and compile.c costs again without moving those bytes. A value stays
 * when all of these hold:
 *   - a staged compute instruction of the function's top level makes it
 *     (mxu, xlu, a fused loop that stores it), not a parameter, a
 *     constant, a transfer or a host op;
 *   - every instruction that reads it (directly or through reshapes, which
 *     share its buffer) is a staged compute instruction of the top level:
 *     none is a cond or while or a node of their regions, a transfer to
 *     the host or a host op; and it is not a result of the function;
 *   - its readers follow soon: the last one is at most
 *     vmem.residency_window instructions after it (instructions counted
 *     in program order, a fused loop as one);
 *   - it fits: it is live from its instruction to its last reader's, and
 *     is placed first fit, in address order, among the values kept and
 *     live at its birth (each aligned to 4 KiB), within the VMEM that
 *     staging leaves (the capacity less four blocks: two in, two out). A
 *     value that does not fit spills: it goes to HBM, as without residency.
 * Values are placed in the order they are made (a linear scan), so an
 * earlier value has VMEM before a later one.
 *
 * Regions are handled conservatively: nothing made inside a cond or while
 * region stays, nor anything read there (a loop's body runs many times
 * and a branch may not run at all), so their values go through HBM.
 */
#include "program.h"

#include <stdlib.h>
#include <string.h>

enum { VMEM_ALIGN = 4096, STAGING_BLOCKS = 4 };

typedef struct kept {
    const ir_node *n;
    int64_t birth, death; /* top-level positions, both inclusive */
    int64_t size, addr;
} kept;

typedef struct residency {
    tpu_program *p;
    const ir_liveness *live;
    int64_t *pos;      /* by node id: its instruction's top-level position */
    int64_t *loop_pos; /* by fusion loop: its instruction's position, or 0 */
    int64_t *last;     /* by buffer's node id: its last reader's position, or 0 */
    bool *pinned;      /* by buffer's node id: it must be in HBM */
} residency;

/* ------------------------------------------------------------ positions */

/* Whether x is an instruction of its own (a fused loop's members are one,
 * its head). */
static bool instruction(const tpu_inst *x)
{
    if (x->kind == TPU_NONE || x->kind == TPU_CONST)
        return false;
    return x->kind != TPU_VPU_LOOP || x->loop_head;
}

static void number(residency *R)
{
    int64_t at = 0;
    for (const ir_node *n = R->p->fn->body->first; n; n = n->next) {
        const tpu_inst *x = &R->p->inst[n->id];
        if (ir_is_live(R->live, n) && instruction(x))
            at++;
        R->pos[n->id] = at;
        if (x->kind == TPU_VPU_LOOP && x->loop >= 0) {
            if (!R->loop_pos[x->loop])
                R->loop_pos[x->loop] = at; /* the head comes first */
            R->pos[n->id] = R->loop_pos[x->loop];
        }
    }
}

/* --------------------------------------------------------------- readers */

/* Whether x reads its operands through VMEM staging, so that one already
 * in VMEM need not be loaded. */
static bool staged_reader(const tpu_inst *x)
{
    if (x->kind == TPU_VPU_LOOP)
        return x->loop >= 0;
    return (x->kind == TPU_MXU || x->kind == TPU_XLU) && x->blocks > 0;
}

/* Everything read inside a region (and what it returns) stays in HBM. */
static void pin_region(residency *R, const ir_graph *g)
{
    for (const ir_node *n = g->first; n; n = n->next) {
        for (int i = 0; i < n->n_in; i++)
            R->pinned[tpu_buffer_of(n->in[i])->id] = true;
        for (int r = 0; r < 2; r++)
            if (n->region[r])
                pin_region(R, n->region[r]);
    }
    for (int i = 0; i < g->n_results; i++)
        R->pinned[tpu_buffer_of(g->results[i])->id] = true;
}

static bool same_loop(const tpu_program *p, const ir_node *a, const ir_node *b)
{
    int la = p->inst[a->id].kind == TPU_VPU_LOOP ? p->inst[a->id].loop : -1;
    return la >= 0 && p->inst[b->id].kind == TPU_VPU_LOOP && p->inst[b->id].loop == la;
}

/* n's reads: a staged instruction's extend its operands' lives; any other
 * reader pins them in HBM. A view reads nothing: its readers read its
 * input's buffer. */
static void note_reads(residency *R, const ir_node *n)
{
    const tpu_inst *x = &R->p->inst[n->id];
    if (tpu_buffer_of(n) != n)
        return;
    for (int i = 0; i < n->n_in; i++) {
        const ir_node *b = tpu_buffer_of(n->in[i]);
        if (same_loop(R->p, n, n->in[i]))
            continue; /* in the loop's vregs */
        if (!staged_reader(x))
            R->pinned[b->id] = true;
        else if (R->last[b->id] < R->pos[n->id])
            R->last[b->id] = R->pos[n->id];
    }
    for (int r = 0; r < 2; r++)
        if (n->region[r])
            pin_region(R, n->region[r]);
}

static void note_all_reads(residency *R)
{
    const ir_graph *body = R->p->fn->body;
    for (const ir_node *n = body->first; n; n = n->next)
        if (ir_is_live(R->live, n))
            note_reads(R, n);
    for (int i = 0; i < body->n_results; i++)
        R->pinned[tpu_buffer_of(body->results[i])->id] = true;
}

/* ------------------------------------------------------------ candidates */

static bool candidate(const residency *R, const ir_node *n)
{
    const tpu_inst *x = &R->p->inst[n->id];
    if (!ir_is_live(R->live, n) || R->pinned[n->id] || x->padded_bytes <= 0)
        return false;
    if (x->kind == TPU_VPU_LOOP)
        return x->loop >= 0 && x->stored;
    return (x->kind == TPU_MXU || x->kind == TPU_XLU) && x->blocks > 0;
}

/* The candidates whose readers all come within the window, with their
 * lives; returns how many. */
static int collect(const residency *R, kept *v)
{
    int k = 0;
    int64_t window = R->p->spec.vmem.residency_window;
    for (const ir_node *n = R->p->fn->body->first; n; n = n->next) {
        if (!candidate(R, n))
            continue;
        int64_t birth = R->pos[n->id];
        int64_t death = R->last[n->id] > birth ? R->last[n->id] : birth;
        if (death - birth > window)
            continue;
        int64_t size = R->p->inst[n->id].padded_bytes;
        v[k++] = (kept){.n = n, .birth = birth, .death = death, .addr = -1,
                        .size = (size + VMEM_ALIGN - 1) / VMEM_ALIGN * VMEM_ALIGN};
    }
    return k;
}

/* --------------------------------------------------------------- placing */

static int by_birth(const void *a, const void *b)
{
    const kept *x = a, *y = b;
    if (x->birth != y->birth)
        return x->birth < y->birth ? -1 : 1;
    return (x->n->id > y->n->id) - (x->n->id < y->n->id);
}

/* The lowest address from which `size` bytes are free among `live`
 * (placed values, sorted by address). */
static int64_t lowest_gap(kept *const *live, int n_live, int64_t size)
{
    int64_t at = 0;
    for (int i = 0; i < n_live && live[i]->addr - at < size; i++)
        if (live[i]->addr + live[i]->size > at)
            at = live[i]->addr + live[i]->size;
    return at;
}

/* Places v (sorted by birth) within `room` bytes, first fit; a value that
 * does not fit keeps addr -1 and takes no room. Returns the peak. */
static int64_t place(kept *v, int n, int64_t room)
{
    kept **live = rt_xcalloc((size_t)n + 1, sizeof *live);
    int n_live = 0;
    int64_t peak = 0;
    for (int i = 0; i < n; i++) {
        int still = 0; /* those dead before this birth leave */
        for (int j = 0; j < n_live; j++)
            if (live[j]->death >= v[i].birth)
                live[still++] = live[j];
        n_live = still;
        int64_t at = lowest_gap(live, n_live, v[i].size);
        if (at + v[i].size > room)
            continue; /* it spills to HBM */
        v[i].addr = at;
        int j = n_live++;
        for (; j > 0 && live[j - 1]->addr > at; j--)
            live[j] = live[j - 1];
        live[j] = &v[i];
        peak = at + v[i].size > peak ? at + v[i].size : peak;
    }
    free(live);
    return peak;
}

/* ----------------------------------------------------------------- entry */

int tpu_keep_in_vmem(tpu_program *p, const ir_liveness *live)
{
    const tpu_memory_spec *vm = &p->spec.vmem;
    p->vmem_bytes = 0;
    p->n_vmem = 0;
    if (!vm->residency)
        return 0;
    size_t n = (size_t)p->n_ids;
    residency R = {.p = p, .live = live, .pos = rt_xcalloc(n, sizeof *R.pos),
                   .loop_pos = rt_xcalloc(n, sizeof *R.loop_pos),
                   .last = rt_xcalloc(n, sizeof *R.last), .pinned = rt_xcalloc(n, sizeof *R.pinned)};
    number(&R);
    note_all_reads(&R);
    kept *v = rt_xcalloc(n, sizeof *v);
    int k = collect(&R, v);
    qsort(v, (size_t)k, sizeof *v, by_birth);
    p->vmem_bytes = place(v, k, vm->capacity_bytes - STAGING_BLOCKS * vm->block_bytes);
    for (int i = 0; i < k; i++) {
        if (v[i].addr < 0)
            continue;
        p->inst[v[i].n->id].vmem = true;
        p->inst[v[i].n->id].vmem_addr = v[i].addr;
        p->n_vmem++;
    }
    free(v);
    free(R.pos);
    free(R.loop_pos);
    free(R.last);
    free(R.pinned);
    return p->n_vmem;
}
